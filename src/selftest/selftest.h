/* SPDX-License-Identifier: MIT */
/* The selftest engine of a node (docs/selftest.md): the lnet_selftest-compatible services (framework
 * RPCs on portal 51, brw and ping on portal 50, bulk and replies on portal 52) and the test client
 * that runs brw/ping RPC loops and measures them. Internal to libulnet; the public API over it is
 * include/ulnet/selftest.h (sst_api.c, sst_lst.c).
 *
 * Threading: the engine owns one thread that waits on its EQ and runs every state machine, with the
 * engine lock held. ulnet__sst_run() blocks its caller (never the node's loop thread, never an event
 * handler) until the test ends. */
#ifndef ULNET_SST_SELFTEST_H
#define ULNET_SST_SELFTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <ulnet/selftest.h>
#include <ulnet/ulnet.h>

#include "sst.h"

struct ulnet_sst;
struct ulnet_sst_result;

/* Start the services on @node (@opts: include/ulnet/selftest.h, NULL = defaults). 0, -EINVAL (an
 * option out of range, one log line), -ENOMEM, or the first ME/MD error. */
int ulnet__sst_start(ulnet_node *node, const struct ulnet_selftest_opts *opts, struct ulnet_sst **out);
/* Stop: abort running tests, unlink every MD, join the thread, free. Blocking. NULL is a no-op. */
void ulnet__sst_stop(struct ulnet_sst *sst);

enum ulnet_sst_test_kind { ULNET_SST_TEST_BRW = 1, ULNET_SST_TEST_PING = 2 };

struct ulnet_sst_params {
	enum ulnet_sst_test_kind kind;
	struct ulnet_process_id dest;  /* server; pid 0 = ULNET_PID_LUSTRE */
	enum ulnet_sst_brw_op rw;      /* brw */
	uint32_t size;                 /* brw: bytes per RPC, 1..ulnet__sst_size_max() */
	uint32_t offset;               /* brw: byte offset of the data in the client's buffer */
	enum ulnet_sst_check check;
	uint32_t concurrency;          /* RPCs in flight, 1..ULNET_SST_MAX_CONCUR */
	uint32_t duration_ms;          /* run time; 0 = until @count RPCs */
	uint64_t count;                /* total RPCs (0 = unlimited, then duration_ms must be set) */
	uint32_t timeout_ms;           /* per RPC; 0 = 10000 */
	/* Test hook: corrupt the source data of the first @corrupt_count write RPCs at transfer
	 * position @corrupt_at (clamped to the size). */
	uint32_t corrupt_count, corrupt_at;
	/* Called about once a second from the ulnet__sst_run caller's thread; nonzero return stops. */
	int (*progress)(void *arg, const struct ulnet_sst_result *so_far);
	void *progress_arg;
};

struct ulnet_sst_result {
	uint64_t rpcs_ok, rpcs_failed;
	uint64_t bytes;                /* payload moved by successful RPCs */
	double seconds;
	uint64_t lat_p50_us, lat_p99_us, lat_max_us;
	uint64_t timeout, mismatch, refused, peer_gone;
	bool mismatch_offset_known;
	uint64_t first_mismatch_offset; /* transfer position of the first bad byte seen */
	char first_error[160];          /* first failure, in words ("" when none) */
};

/* Check @p, a brw of at most @size_max bytes; 0, or -EINVAL with a reason in @why (static string). */
int ulnet__sst_params_check(const struct ulnet_sst_params *p, uint32_t page_size, uint32_t size_max,
			    const char **why);
/* The largest brw @node moves, as client or server: LNET_MTU, or its node option large_max (docs/large.md). */
uint32_t ulnet__sst_size_max(ulnet_node *node);
/* What @node announces in its make-session and debug replies (ULNET_SST_NODE_*, sst.h). */
uint32_t ulnet__sst_node_feats(ulnet_node *node);
/* Run one test as its client and fill @res. 0 when the test ran (errors are in @res), -EINVAL bad
 * parameters (reason in @why), -ENOMEM, -ESHUTDOWN engine stopping. Blocking. */
int ulnet__sst_run(struct ulnet_sst *sst, const struct ulnet_sst_params *p, struct ulnet_sst_result *res,
		   const char **why);
/* Test hook (server side): corrupt the next @count brw transfers this node serves (read: the data it
 * sends; write: the data it received, before checking) at transfer position @at. */
void ulnet__sst_inject(struct ulnet_sst *sst, uint32_t count, uint32_t at);

/* Counters as a STAT reply carries them. */
struct ulnet_sst_stats {
	struct ulnet_sst_rpc_counters rpc;
	uint32_t brw_errors, ping_errors;
	bool session_active;
	struct ulnet_sst_sid sid;
	uint32_t server_rpcs, server_waiting; /* under way; waiting for bulk memory */
	uint64_t server_bulk_bytes;           /* bulk memory server RPCs hold now */
	char session_name[ULNET_SST_NAME_SIZE + 1];
	/* this node as a client: tests not done; RPCs by result (ok, timeout, mismatch, refused,
	 * peer_gone); brw bytes of the successful ones, read and write */
	unsigned client_tests_running;
	uint64_t client_results[5];
	uint64_t client_bytes[2];
};
void ulnet__sst_stats(struct ulnet_sst *sst, struct ulnet_sst_stats *out);

/* ---- console side (an lst console on this node driving other nodes; sst_console.c) ---- */

/* Destinations one client test request may carry: one page of packed ids, as the kernel console
 * lays them out (341 per 4 KiB page); beyond that the two layouts differ. */
#define ULNET_SST_MAX_IDS 341u

/* Send framework request @req (type, sid and body set; its reply and bulk ids are filled here) to
 * @peer (pid 0 = ULNET_PID_LUSTRE) on portal 51 and wait for the reply, at most @timeout_ms. @ids
 * (@nids, for a client TEST request) are served to the peer's GET on the bulk id. Blocking; never
 * call it from the engine thread. 0 with @rep decoded (and the raw body in @raw_body when non-NULL);
 * -ETIMEDOUT no reply, -EHOSTUNREACH/-ECONNREFUSED... the request could not be delivered, -EPROTO a
 * reply that does not decode or has the wrong type, -EINVAL bad @req, -ESHUTDOWN engine stopping. */
int ulnet__sst_fw_call(struct ulnet_sst *sst, const struct ulnet_process_id *peer, struct ulnet_sst_msg *req,
		       const struct ulnet_sst_id *ids, unsigned nids, uint32_t timeout_ms, struct ulnet_sst_msg *rep,
		       uint8_t raw_body[ULNET_SST_BODY_SIZE]);
/* The nid4 a console on this node puts in its session id: its first NI that is not lo; 0 if none. */
uint64_t ulnet__sst_console_nid4(struct ulnet_sst *sst);
/* Is @nid one of this node's NIDs? */
bool ulnet__sst_is_local(struct ulnet_sst *sst, const struct ulnet_nid *nid);

/* A console session: what every framework request of it carries. */
struct ulnet_sst_con {
	struct ulnet_sst *sst;
	struct ulnet_sst_sid sid;
	char name[ULNET_SST_NAME_SIZE + 1];
	uint32_t feats;                 /* ULNET_SST_FEAT_BULK_LEN */
	uint32_t rpc_timeout_ms;        /* per framework RPC */
	/* lst sessions: nodes known down fail at once (sst_node_health.h); NULL: every RPC is sent */
	struct lst_health *health;
	uint64_t health_gen;
	bool probe;                     /* the pinger's probe: sent even to a node known down */
};
/* A test as the console adds it to a batch. */
struct ulnet_sst_con_test {
	uint32_t service;               /* ULNET_SST_SVC_BRW or _PING */
	enum ulnet_sst_brw_op rw;
	uint32_t size, offset;          /* brw: bytes; client offset */
	enum ulnet_sst_check check;
	uint32_t concurrency;
	int32_t loop;                   /* client: RPCs per unit, -1 until stopped; server: buffers wanted */
	uint32_t rpc_timeout_ms;        /* client RPC timeout, for ulnet clients (0: lnet_selftest's 64 s) */
};
/* What a STAT query of one node gives. @ext: the node is ulnet and answered the extended stat. */
struct ulnet_sst_con_stat {
	bool ext;
	struct ulnet_sst_stat_ext x;    /* when ext */
	struct ulnet_sst_stat_reply plain; /* when !ext */
};

/* Each returns 0 or -errno with one line in @why (naming the node). A node's refusal keeps its errno,
 * except EINVAL, which becomes -ENOEXEC (the node cannot run it): -EINVAL always means the console's
 * own arguments were bad.
 * join: *node_feats (may be NULL) = the ulnet features the node announced (ULNET_SST_NODE_*), 0 for a
 * kernel node. */
int ulnet__sst_con_join(struct ulnet_sst_con *c, const struct ulnet_process_id *node, bool force,
			uint32_t *node_feats, char *why, size_t cap);
int ulnet__sst_con_leave(struct ulnet_sst_con *c, const struct ulnet_process_id *node, char *why, size_t cap);
/* DEBUG: 0 = the node is in this session; -EBUSY another session (its name in @why), -ESRCH none. */
int ulnet__sst_con_ping(struct ulnet_sst_con *c, const struct ulnet_process_id *node, char *why, size_t cap);
/* DEBUG, only to learn *node_feats (as join's) without making a session: a ulnet node marks every DEBUG
 * reply, a kernel node answers its session state (ESRCH without one) with the reserved words zero.
 * 0 when the node answered, whatever its status; else -errno with the line in @why. */
int ulnet__sst_con_features(struct ulnet_sst_con *c, const struct ulnet_process_id *node, uint32_t *node_feats,
			    char *why, size_t cap);
/* TEST. @node_feats: what the node announced at join. Client entries of a brw test: a node without
 * ULNET_SST_NODE_ANY_OFFSET (a kernel node) is never sent an offset it cannot survive
 * (ulnet__sst_kernel_offset_check); callers check before sending anything, this is the last guard
 * (-EINVAL). */
int ulnet__sst_con_test_add(struct ulnet_sst_con *c, const struct ulnet_process_id *node, uint64_t bid,
			    const struct ulnet_sst_con_test *t, bool is_client, uint32_t node_feats,
			    const struct ulnet_process_id *dests, unsigned ndest, char *why, size_t cap);
/* BATCH RUN/STOP/QUERY; *active (may be NULL) = the reply's active count. */
int ulnet__sst_con_batch(struct ulnet_sst_con *c, const struct ulnet_process_id *node, uint64_t bid,
			 enum ulnet_sst_batch_opc opc, uint32_t arg, uint32_t *active, char *why, size_t cap);
/* BATCH QUERY of the node's test @testidx of batch @bid (its own numbering, 1-based; 0 the whole batch):
 * *active = its client tests still running. */
int ulnet__sst_con_query(struct ulnet_sst_con *c, const struct ulnet_process_id *node, uint64_t bid, uint32_t testidx,
			 uint32_t *active, char *why, size_t cap);
/* STAT. @ext: ask for the extended reply (client test results of batch @bid, 0 = all), which only a
 * ulnet node gives (out->ext); otherwise, and from kernel nodes, the plain counters. */
int ulnet__sst_con_stat(struct ulnet_sst_con *c, const struct ulnet_process_id *node, bool ext, uint64_t bid,
			struct ulnet_sst_con_stat *out, char *why, size_t cap);

#endif
