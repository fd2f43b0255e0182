/* SPDX-License-Identifier: MIT */
/* lnet_selftest on a ulnet node (docs/selftest.md): the services every node serves (framework RPCs on
 * portal 51, brw and ping on 50, bulk on 52), one-shot tests, and an lst console: a named session,
 * groups of nodes, batches of tests, run and stop with one result per client node.
 *
 * Threading: every call may block on RPCs to other nodes (never call one from an event handler) and
 * calls may come from several threads at once. The console keeps its session under one lock that is
 * never held across an RPC or a sleep: a command copies what it needs, talks to the nodes, then
 * commits; a command that finds the session ended or changed meanwhile fails with -ESTALE.
 * Every call that can fail returns 0 or a negative errno with one line in @why (naming the node when a
 * node refused). A node's refusal keeps its errno, except EINVAL, which becomes -ENOEXEC (the node
 * cannot run it): -EINVAL always means the caller's own arguments were bad. */
#ifndef ULNET_SELFTEST_H
#define ULNET_SELFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "node.h"
#include "writer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ulnet_selftest ulnet_selftest;

/* Options of a node's selftest services (config file section `selftest:`); 0/false = the default. */
struct ulnet_selftest_opts {
	/* How long an RPC this node serves may wait for its bulk, its reply or bulk memory before it is
	 * aborted (rpcs_expired + 1), in ms. 0 = ULNET_SELFTEST_SERVER_TIMEOUT_DEFAULT_MS, as
	 * lnet_selftest; within [ULNET_SELFTEST_SERVER_TIMEOUT_MIN_MS, ..._MAX_MS]. */
	uint32_t server_rpc_timeout_ms;
	/* Answer STAT requests with lnet_selftest's counters only, without ulnet's extension: a ulnet
	 * console then sees this node as it sees a kernel node (interoperability tests). */
	bool kernel_stats;
};
#define ULNET_SELFTEST_SERVER_TIMEOUT_DEFAULT_MS 64000u
#define ULNET_SELFTEST_SERVER_TIMEOUT_MIN_MS 100u
#define ULNET_SELFTEST_SERVER_TIMEOUT_MAX_MS 3600000u

/* Start the services on @node with @opts (NULL: defaults). 0, -EINVAL (an option out of range, with
 * one log line), -ENOMEM, or the first ME/MD error. */
ULNET_EXPORT int ulnet_selftest_start(ulnet_node *node, const struct ulnet_selftest_opts *opts,
				      ulnet_selftest **out);
/* End the console's session on its nodes (1 s per node), abort running tests, free. NULL: no-op. */
ULNET_EXPORT void ulnet_selftest_stop(ulnet_selftest *st);
/* Test hook (server side): corrupt the next @count brw transfers this node serves at byte @at. */
ULNET_EXPORT void ulnet_selftest_inject(ulnet_selftest *st, uint32_t count, uint32_t at);

#define ULNET_SELFTEST_NAME_MAX 31u     /* session, group and batch names: 1..31 of A-Z a-z 0-9 _ - . */
#define ULNET_SELFTEST_MAX_CONCUR 1024u

/* The engine's counters, as a STAT reply carries them, and the session this node is in. */
struct ulnet_selftest_stats {
	uint32_t errors, rpcs_sent, rpcs_rcvd, rpcs_dropped, rpcs_expired;
	uint64_t bulk_get, bulk_put;
	uint32_t brw_errors, ping_errors;
	uint32_t server_rpcs, server_waiting; /* under way; waiting for bulk memory */
	uint64_t server_bulk_bytes;           /* bulk memory server RPCs hold now */
	bool session_active;
	struct ulnet_nid session_console;
	char session_name[ULNET_SELFTEST_NAME_MAX + 2];
};
ULNET_EXPORT void ulnet_selftest_stats_get(ulnet_selftest *st, struct ulnet_selftest_stats *out);

enum ulnet_selftest_kind { ULNET_SELFTEST_BRW = 1, ULNET_SELFTEST_PING = 2 };
/* DISCARD (LU-20342): like NONE, and the receiver of the data may skip the copy (nothing reads it). */
enum ulnet_selftest_check { ULNET_SELFTEST_CHECK_NONE = 1, ULNET_SELFTEST_CHECK_SIMPLE = 2,
			    ULNET_SELFTEST_CHECK_FULL = 3, ULNET_SELFTEST_CHECK_DISCARD = 4 };
/* "none", "simple", "full", "discard": 0 or -EINVAL. */
ULNET_EXPORT int ulnet_selftest_check_parse(const char *s, enum ulnet_selftest_check *out);
ULNET_EXPORT const char *ulnet_selftest_check_name(enum ulnet_selftest_check c);

/* One test as a client runs it. */
struct ulnet_selftest_test {
	enum ulnet_selftest_kind kind;
	bool write;                     /* brw: write (client to server) or read */
	uint32_t size, offset;          /* brw: bytes per RPC (1..ULNET_MTU; up to large_max between ulnet nodes
					 * that take it, docs/large.md), offset in the client's buffer */
	enum ulnet_selftest_check check;
	uint32_t concurrency;           /* RPCs in flight, 1..ULNET_SELFTEST_MAX_CONCUR */
	uint32_t rpc_timeout_ms;        /* per RPC; 0: the default (one-shot 10 s, batches lnet_selftest's 64 s) */
};

/* What one client node did in one test (or in all its tests of a batch), and where the figures come
 * from: measured by a ulnet client, or derived from a kernel node's lnet_selftest counters. */
struct ulnet_selftest_result {
	enum ulnet_selftest_kind kind;
	bool write;
	char from[ULNET_NID_STRLEN];    /* the client */
	char to[160];                   /* the server NID, or "group NAME ..." */
	uint32_t size, offset, concurrency;
	enum ulnet_selftest_check check;
	bool remote;                    /* the client is another node */
	bool latency_na, bytes_na;      /* no latency samples / no counter gives the payload bytes */
	const char *source;             /* static text: where the numbers come from */
	double seconds;
	uint64_t rpcs_ok, rpcs_failed, bytes;
	uint64_t lat_p50_us, lat_p99_us, lat_max_us;
	uint64_t timeout, mismatch, refused, peer_gone;
	uint64_t unclassified;          /* errors a kernel node counted without saying which */
	int64_t mismatch_offset;        /* transfer position of the first bad byte; -1 unknown */
	char first_error[160];          /* first failure in words, "" when none */
};
/* Write @r as one mapping (the keys the ulnet-selftest console reads); @progress marks a partial one. */
ULNET_EXPORT void ulnet_selftest_result_write(const struct ulnet_selftest_result *r, bool progress,
					      struct ulnet_writer *w);
/* true when @r saw no timeout, mismatch, refusal, lost node or unclassified error. */
ULNET_EXPORT bool ulnet_selftest_result_ok(const struct ulnet_selftest_result *r);

/* ---- one-shot tests ---- */

struct ulnet_selftest_run {
	struct ulnet_selftest_test t;
	struct ulnet_process_id to;     /* the server; pid 0 = ULNET_PID_LUSTRE */
	struct ulnet_nid from;          /* the client: ANY or one of this node's NIDs = this node; another
					 * node is driven over the framework RPCs as a one-test batch */
	uint32_t duration_ms;           /* run time; 0 = until @count RPCs */
	uint64_t count;                 /* total RPCs (0 = unlimited, then duration_ms must be set) */
	/* Test hook, local client only: corrupt the source data of the first @corrupt_count write RPCs at
	 * transfer position @corrupt_at. */
	uint32_t corrupt_count, corrupt_at;
	/* Called at least once a second with the figures so far (@so_far NULL when there are none yet);
	 * nonzero stops the test, which then reports what it did. */
	int (*progress)(void *arg, const struct ulnet_selftest_result *so_far);
	void *progress_arg;
};
/* 0 when the test ran (its errors are in @out); -EINVAL bad parameters; -EADDRNOTAVAIL no NID to be a
 * console with; a node's refusal; -ESHUTDOWN stopping. */
ULNET_EXPORT int ulnet_selftest_run(ulnet_selftest *st, const struct ulnet_selftest_run *p,
				    struct ulnet_selftest_result *out, char *why, size_t whylen);

/* What this node did as a selftest client since its engine started, cumulative, for monitoring (the
 * metrics endpoint): every RPC of every test it ran as a client (its one-shot runs and the batch
 * tests a console started on it), counted as it completes, and its one-shot runs. Exact, cheap (one
 * lock taken for a copy), and never reset. */
struct ulnet_selftest_client_stats {
	unsigned tests_running;         /* client tests not done (one-shot and batch) */
	unsigned runs_active;           /* ulnet_selftest_run calls under way, local or driving another node */
	uint64_t runs_finished;         /* ulnet_selftest_run calls that returned 0 (errors or not) */
	/* client RPCs by result, as classified when each completes (a timeout to a peer later found gone
	 * stays a timeout here; the run's result calls it peer_gone); cancelled ones are not counted */
	uint64_t rpcs_ok, rpcs_timeout, rpcs_mismatch, rpcs_refused, rpcs_peer_gone;
	uint64_t bytes_read, bytes_written; /* brw payload of the successful RPCs */
	bool have_last;                 /* a one-shot run finished: */
	struct ulnet_selftest_result last; /* its result, as ulnet_selftest_run returned it */
	uint64_t last_end_unix_ms;      /* when it ended (CLOCK_REALTIME) */
};
ULNET_EXPORT void ulnet_selftest_client_stats_get(ulnet_selftest *st, struct ulnet_selftest_client_stats *out);

/* ---- the lst console: one session at a time ---- */

struct ulnet_selftest_session_info {
	char name[ULNET_SELFTEST_NAME_MAX + 2];
	struct ulnet_nid console;       /* this node's NID the session id carries */
	uint32_t rpc_timeout_s;
	unsigned nodes, groups, batches;
};
/* new_session: -EBUSY a session is open; -EADDRNOTAVAIL this node has no NID other than lo. */
ULNET_EXPORT int ulnet_selftest_session_new(ulnet_selftest *st, const char *name, uint32_t rpc_timeout_s, bool force,
					    struct ulnet_selftest_session_info *info, char *why, size_t whylen);
/* end_session: remove the session from every node (stopping its batches); @unreachable counts the
 * nodes that did not answer, each also passed to @warn (may be NULL). -ENOENT no session. */
ULNET_EXPORT int ulnet_selftest_session_end(ulnet_selftest *st, struct ulnet_selftest_session_info *info,
					    unsigned *unreachable, void (*warn)(void *arg, const char *line), void *arg,
					    char *why, size_t whylen);
ULNET_EXPORT int ulnet_selftest_session_show(ulnet_selftest *st, struct ulnet_selftest_session_info *info, char *why,
					     size_t whylen);

/* add_group: every node joins the session now, all at once (a node that refuses fails the group; the
 * nodes that joined stay in the session). Nodes that do not answer stay in the group as down, and @why
 * says so on success, unless no node of the group answered. -EEXIST, -ENOSPC (64 groups, 256 nodes). */
ULNET_EXPORT int ulnet_selftest_group_add(ulnet_selftest *st, const char *name, const struct ulnet_nid *nids, unsigned n,
					  char *why, size_t whylen);
struct ulnet_selftest_group_info {
	char name[ULNET_SELFTEST_NAME_MAX + 2];
	unsigned nodes;
};
ULNET_EXPORT int ulnet_selftest_group_list(ulnet_selftest *st, void (*fn)(void *arg, const struct ulnet_selftest_group_info *g),
					   void *arg, char *why, size_t whylen);
enum ulnet_selftest_node_state { ULNET_SELFTEST_NODE_ACTIVE, ULNET_SELFTEST_NODE_BUSY, ULNET_SELFTEST_NODE_UNKNOWN,
				 ULNET_SELFTEST_NODE_DOWN };
ULNET_EXPORT const char *ulnet_selftest_node_state_name(enum ulnet_selftest_node_state s);
/* Each node of group @name and its state now (asked over the network). -ENOENT no such group. */
ULNET_EXPORT int ulnet_selftest_group_nodes(ulnet_selftest *st, const char *name,
					    void (*fn)(void *arg, const struct ulnet_nid *nid, enum ulnet_selftest_node_state s),
					    void *arg, char *why, size_t whylen);
/* lst stat: per node of group @name, LNet traffic over @delay_ms and its selftest counters. */
struct ulnet_selftest_node_stat {
	struct ulnet_nid nid;
	bool answered;                  /* else @why says why not */
	char why[160];
	double rx_bytes_s, tx_bytes_s, rx_msgs_s, tx_msgs_s; /* into / out of the node */
	uint32_t brw_errors, ping_errors, rpcs_expired;
	bool has_tests;                 /* a ulnet node with client tests: then */
	uint64_t rpcs_ok, bytes;
	uint32_t timeout, mismatch, refused, peer_gone, active;
	uint32_t lat_p50_us, lat_p99_us, lat_max_us;
};
/* 0; -EREMOTEIO when a node did not answer or counted selftest errors (*@bad of them). */
ULNET_EXPORT int ulnet_selftest_group_stat(ulnet_selftest *st, const char *name, uint32_t delay_ms,
					   void (*fn)(void *arg, const struct ulnet_selftest_node_stat *s), void *arg,
					   unsigned *bad, char *why, size_t whylen);

ULNET_EXPORT int ulnet_selftest_batch_add(ulnet_selftest *st, const char *name, char *why, size_t whylen);
struct ulnet_selftest_batch_info {
	char name[ULNET_SELFTEST_NAME_MAX + 2];
	unsigned tests;
	bool running;
};
ULNET_EXPORT int ulnet_selftest_batch_list(ulnet_selftest *st, void (*fn)(void *arg, const struct ulnet_selftest_batch_info *b),
					   void *arg, char *why, size_t whylen);
/* add_test: @from's nodes are the clients, @to's the servers; --distribute @dist:@span: client i aims
 * at @span servers from ((i / @dist) * @span) mod n. @loop: RPCs per unit, -1 until stopped.
 * *@index: the test's number in its batch (1-based). */
#define ULNET_SELFTEST_SPAN_ALL 341u /* span "all": every server of the group (the span is clamped to it) */
struct ulnet_selftest_batch_test {
	const char *batch, *from, *to;
	struct ulnet_selftest_test t;
	int32_t loop;
	unsigned dist, span;
};
ULNET_EXPORT int ulnet_selftest_test_add(ulnet_selftest *st, const struct ulnet_selftest_batch_test *bt, unsigned *index,
					 char *why, size_t whylen);
/* run: start the batch on its client nodes; *@clients = how many. */
ULNET_EXPORT int ulnet_selftest_batch_run(ulnet_selftest *st, const char *name, unsigned *clients, char *why,
					  size_t whylen);
/* stop (@force aborts RPCs in flight), wait for the clients, then @fn once per client node. 0; or
 * -EREMOTEIO when a result has errors. */
ULNET_EXPORT int ulnet_selftest_batch_stop(ulnet_selftest *st, const char *name, bool force,
					   void (*fn)(void *arg, const struct ulnet_selftest_result *r), void *arg,
					   char *why, size_t whylen);

/* ---- lst administration (sst_lst_admin.c, sst_lst_query.c) ---- */

/* The nodes a command names: group @group, or the @n NIDs @nids (when @group is NULL). */
struct ulnet_selftest_nodes {
	const char *group;
	const struct ulnet_nid *nids;
	unsigned n;
};
/* lst ping: each node's state now (a DEBUG to each, at once; NIDs need not be in the session).
 * @detail: the session a busy node is in, or why a node is down. @timeout_s: per node (0: the
 * session's). *@down: nodes that did not answer. -ENOENT no session or no such group. */
ULNET_EXPORT int ulnet_selftest_ping(ulnet_selftest *st, const struct ulnet_selftest_nodes *who, uint32_t timeout_s,
				     void (*fn)(void *arg, const struct ulnet_nid *nid, enum ulnet_selftest_node_state s,
						const char *detail),
				     void *arg, unsigned *down, char *why, size_t whylen);
/* del_group: -EBUSY while a test of a batch uses the group. Its nodes in no other group leave the
 * session (*@left of them; a node that does not answer is forgotten all the same). */
ULNET_EXPORT int ulnet_selftest_group_del(ulnet_selftest *st, const char *name, unsigned *left, char *why,
					  size_t whylen);
/* update_group, refused (-EBUSY) while a test uses the group:
 * REFRESH: the nodes that are not active are asked to join again; *@changed = how many did.
 * CLEAN: the nodes whose state now is in @states (bit 1 << ulnet_selftest_node_state) leave the group.
 * REMOVE: the @n NIDs leave the group (-ENOENT if one is not in it); those in no other group leave
 * the session. */
enum ulnet_selftest_update { ULNET_SELFTEST_UPDATE_REFRESH = 1, ULNET_SELFTEST_UPDATE_CLEAN,
			     ULNET_SELFTEST_UPDATE_REMOVE };
ULNET_EXPORT int ulnet_selftest_group_update(ulnet_selftest *st, const char *name, enum ulnet_selftest_update op,
					     unsigned states, const struct ulnet_nid *nids, unsigned n, unsigned *changed,
					     char *why, size_t whylen);
/* show_error: each node's RPC error counters (a STAT to each). */
struct ulnet_selftest_node_errors {
	struct ulnet_nid nid;
	bool answered;                  /* else @why says why not */
	char why[160];
	uint32_t brw_errors, ping_errors;               /* the node's selftest (session) counters */
	uint32_t rpc_errors, rpcs_dropped, rpcs_expired; /* its RPC counters */
	bool has_tests;                 /* a ulnet node with client tests: their classified errors */
	uint32_t timeout, mismatch, refused, peer_gone;
};
/* @fn for every node that has errors or did not answer (@session_only: only the session counters, and
 * the classified errors of a ulnet node's tests, count). *@nerr = how many; 0 or -EREMOTEIO when > 0. */
ULNET_EXPORT int ulnet_selftest_errors(ulnet_selftest *st, const struct ulnet_selftest_nodes *who, bool session_only,
				       void (*fn)(void *arg, const struct ulnet_selftest_node_errors *e), void *arg,
				       unsigned *nerr, char *why, size_t whylen);
/* query: the state of each client node of batch @name (@server: its server nodes; @test: only the
 * nodes of that test, 1-based, 0 all): "running", "idle", "unknown" (not in this session or batch),
 * "down" (no answer). */
struct ulnet_selftest_query {
	unsigned running, idle, unknown, down;
};
ULNET_EXPORT int ulnet_selftest_batch_query(ulnet_selftest *st, const char *name, unsigned test, bool server,
					    uint32_t timeout_s,
					    void (*fn)(void *arg, const struct ulnet_nid *nid, const char *state),
					    void *arg, struct ulnet_selftest_query *q, char *why, size_t whylen);
/* list_batch NAME: batch @name and its tests (@test: only that one, 1-based; 0 all). */
struct ulnet_selftest_test_info {
	unsigned index;                 /* 1-based */
	struct ulnet_selftest_test t;
	int32_t loop;
	unsigned dist, span;            /* span as used: at most the server group's size */
	char from[ULNET_SELFTEST_NAME_MAX + 2], to[ULNET_SELFTEST_NAME_MAX + 2];
	unsigned nclients, nservers;
};
ULNET_EXPORT int ulnet_selftest_batch_tests(ulnet_selftest *st, const char *name, unsigned test,
					    struct ulnet_selftest_batch_info *b,
					    void (*fn)(void *arg, const struct ulnet_selftest_test_info *t), void *arg,
					    char *why, size_t whylen);
/* The nodes of test @test (1-based) of batch @name, clients (or @server: servers), in group order. */
ULNET_EXPORT int ulnet_selftest_test_nodes(ulnet_selftest *st, const char *name, unsigned test, bool server,
					   void (*fn)(void *arg, const struct ulnet_nid *nid), void *arg, char *why,
					   size_t whylen);
/* lst stat of any nodes (group_stat is this for a group); @timeout_s per node, 0: the session's. */
ULNET_EXPORT int ulnet_selftest_nodes_stat(ulnet_selftest *st, const struct ulnet_selftest_nodes *who,
					   uint32_t delay_ms, uint32_t timeout_s,
					   void (*fn)(void *arg, const struct ulnet_selftest_node_stat *s), void *arg,
					   unsigned *bad, char *why, size_t whylen);
/* run with a time limit: the clients run @seconds (BATCH RUN's argument; 0 until stopped). */
ULNET_EXPORT int ulnet_selftest_batch_run_for(ulnet_selftest *st, const char *name, uint32_t seconds,
					      unsigned *clients, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif
