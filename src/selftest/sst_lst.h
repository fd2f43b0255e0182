/* SPDX-License-Identifier: MIT */
/* The lst console's state and what its two users share (sst_lst.c: the named session, groups and
 * batches; sst_api.c: one-shot tests, which run as a one-test batch of a private session).
 *
 * Locking: struct lst_session's lock guards its fields only. It is never held across an RPC or a
 * sleep: commands copy what they need (nodes, the session id), release it, talk to the nodes, then
 * take it again to commit, checking @gen to see that the session was not ended or replaced meanwhile. */
#ifndef ULNET_SST_LST_H
#define ULNET_SST_LST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <ulnet/selftest.h>

#include "selftest.h"
#include "sst_node_health.h"

#define LST_MAX_GROUPS 64
#define LST_MAX_NODES 256   /* per group, and joined nodes per session */
#define LST_MAX_BATCHES 64
#define LST_MAX_TESTS 16    /* per batch */
#define LST_PING_MS 8000    /* keep-alive DEBUG to every node, as lst's console pinger does */
#define LST_PINGER_TICK_MS 500 /* how often the pinger looks for down nodes due a probe */
#define LST_LNET_RPC_TIMEOUT_MS 64000 /* lnet_selftest's client RPC timeout when a test sets none */

struct lst_group {
	char name[ULNET_SST_NAME_SIZE + 1];
	unsigned n;
	struct ulnet_process_id nodes[LST_MAX_NODES];
};

struct lst_joined {                 /* a node in the session */
	struct ulnet_process_id id;
	uint32_t feats;                 /* what it announced at join (ULNET_SST_NODE_*; 0: kernel) */
};

struct lst_test {
	struct ulnet_sst_con_test t;
	int from, to;                   /* group indexes (a group a test uses is never deleted; del_group renumbers the rest) */
	unsigned dist, span;
};

struct lst_base {                   /* a node's counters when its batch started */
	struct ulnet_process_id id;
	bool ok;
	struct ulnet_sst_con_stat s;
};

struct lst_batch {
	char name[ULNET_SST_NAME_SIZE + 1];
	uint64_t bid;
	unsigned ntests;
	struct lst_test tests[LST_MAX_TESTS];
	bool running;
	uint64_t run_ms;
	unsigned nbase;
	struct lst_base base[LST_MAX_NODES];
};

struct lst_session {
	pthread_mutex_t lock;
	bool active;
	uint64_t gen;                   /* bumped when a session starts or ends */
	struct ulnet_sst_con con;
	bool force;
	unsigned ngroups, nbatches, njoined;
	struct lst_group *groups[LST_MAX_GROUPS];
	struct lst_batch *batches[LST_MAX_BATCHES];
	struct lst_joined joined[LST_MAX_NODES];
	uint64_t next_bid;
	struct lst_health health;       /* nodes known down (its own lock; con.health points here) */
	/* the pinger thread */
	pthread_t pinger;
	bool pinger_started, pinger_quit;
	pthread_cond_t pinger_cv;
};

struct ulnet_selftest {
	ulnet_node *node;
	struct ulnet_sst *sst;
	struct lst_session lst;
	/* one-shot runs (ulnet_selftest_run) for ulnet_selftest_client_stats_get, under runs_lock: held
	 * only to copy, never across a run */
	pthread_mutex_t runs_lock;
	unsigned runs_active;
	uint64_t runs_finished;
	bool have_last;
	struct ulnet_selftest_result last;
	uint64_t last_end_unix_ms;
};

uint64_t lst_mono_ms(void);
/* A session id for a console on this node: its first non-lo NID and the wall clock. false: no NID. */
bool lst_con_init(struct ulnet_sst *sst, const char *name, uint32_t rpc_timeout_ms, struct ulnet_sst_con *con);
/* What a test's servers are told: lst tells every one and fails on a refusal; a one-shot run tells a
 * server that joined but carries on without it (a busy server still serves), or skips it. */
enum lst_servers { LST_SERVERS_REQUIRED, LST_SERVERS_BEST_EFFORT, LST_SERVERS_SKIP };
/* Send @t of batch @bid to the servers @dst (buffers for the units that may aim at each) and then to
 * the clients @src with lst's --distribute mapping. @src_feats[i]: what client i announced at join. */
int lst_test_fanout(struct ulnet_sst_con *con, uint64_t bid, const struct lst_test *t,
		    const struct ulnet_process_id *src, const uint32_t *src_feats, unsigned nsrc,
		    const struct ulnet_process_id *dst, unsigned ndst, enum lst_servers servers, char *why, size_t cap);
/* A client node's result from its stats at the start (@c0) and now (@c1): the extended stats of a
 * ulnet node, or the counter deltas of an lnet_selftest node (payload from the servers' bulk counters
 * when @srv_bytes_ok). Fills the counters and the source fields of @o. */
void lst_derive_result(const struct ulnet_sst_con_stat *c0, const struct ulnet_sst_con_stat *c1, uint32_t service,
		       bool srv_bytes_ok, uint64_t srv_bytes, double wall_s, struct ulnet_selftest_result *o);
uint64_t lst_bulk_bytes(const struct ulnet_sst_con_stat *s);
/* The labels of a result: kind, direction, size, offset, check, concurrency of @t. */
void lst_result_label(const struct ulnet_sst_con_test *t, struct ulnet_selftest_result *o);

/* One framework RPC to each of a list of nodes (lst_fanout). */
enum node_op { NODE_LEAVE, NODE_PING, NODE_STAT, NODE_RUN, NODE_STOP, NODE_DRAIN };

struct node_fan {
	struct ulnet_sst_con *c;
	const struct ulnet_process_id *ids;
	enum node_op op;
	bool ext;                       /* NODE_STAT */
	int *rc;
	char (*line)[256];
	struct ulnet_sst_con_stat *st;  /* NODE_STAT */
	const int *skip;                /* non-zero: that node already failed; its rc is copied */
	uint64_t bid;                   /* NODE_STAT (ext), NODE_RUN, NODE_STOP, NODE_DRAIN */
	bool force;                     /* NODE_STOP */
	uint64_t until_ms;              /* NODE_DRAIN: stop asking whether the batch is still active */
	uint32_t run_s;                 /* NODE_RUN: seconds the clients run (BATCH RUN's bar_arg; 0 until stopped) */
};

void lst_node_one(void *arg, unsigned i);

/* fn(arg, i) for every i < n, on up to 32 threads at once. No lock may be held. */
void lst_fanout(unsigned n, void (*fn)(void *arg, unsigned i), void *arg);
/* 0 with an open session, else -ENOENT and the line. With the lock held. */
int lst_need_session(const struct lst_session *ls, char *why, size_t cap);
/* After the lock was dropped for RPCs: 0 if still the session of generation @gen, else -ESTALE. */
int lst_same_session(const struct lst_session *ls, uint64_t gen, char *why, size_t cap);
int lst_group_find(const struct lst_session *ls, const char *name);
int lst_batch_find(const struct lst_session *ls, const char *name);
struct lst_batch *lst_batch_by_bid(const struct lst_session *ls, uint64_t bid);
bool lst_name_ok(const char *s);
int lst_bad_name(const char *s, char *why, size_t cap);
int lst_joined_index(const struct lst_session *ls, const struct ulnet_process_id *id);
/* A node that did not answer (down, or no lnet_selftest there), as against one that answered no. */
bool lst_unreachable(int rc);
/* A copy of group @name's nodes and the session, for RPCs outside the lock. */
int lst_group_snapshot(struct lst_session *ls, const char *name, struct lst_group *g, struct ulnet_sst_con *c,
		       char *why, size_t whylen);
/* The nodes a command names (ulnet_selftest_nodes): a group's, or NIDs; @joined: each NID must be in
 * the session. Fills @g (name "" for NIDs) and the session in @c. */
int lst_nodes_snapshot(struct lst_session *ls, const struct ulnet_selftest_nodes *who, bool joined,
		       struct lst_group *g, struct ulnet_sst_con *c, char *why, size_t whylen);
/* The state a DEBUG answer (lst_node_one NODE_PING) means. */
enum ulnet_selftest_node_state lst_ping_state(int rc);

void lst_session_init(struct lst_session *ls);
/* End the session on its nodes (@timeout_ms per node), stop the pinger, free. */
void lst_session_fini(struct lst_session *ls, uint32_t timeout_ms);

#endif
