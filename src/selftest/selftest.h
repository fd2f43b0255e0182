/* SPDX-License-Identifier: MIT */
/* The selftest engine of a node (docs/selftest.md): the lnet_selftest-compatible services (framework
 * RPCs on portal 51, brw and ping on portal 50, bulk and replies on portal 52) and the test client
 * that runs brw/ping RPC loops and measures them. Internal to libulnet; ulnetd drives it.
 *
 * Threading: the engine owns one thread that waits on its EQ and runs every state machine, with the
 * engine lock held. ulnet__sst_run() blocks its caller (never the node's loop thread, never an event
 * handler) until the test ends. */
#ifndef ULNET_SELFTEST_H
#define ULNET_SELFTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <ulnet/ulnet.h>

#include "sst.h"

struct ulnet_sst;
struct ulnet_sst_result;

/* Start the services on @node. 0, -ENOMEM, or the first ME/MD error. */
int ulnet__sst_start(ulnet_node *node, struct ulnet_sst **out);
/* Stop: abort running tests, unlink every MD, join the thread, free. Blocking. NULL is a no-op. */
void ulnet__sst_stop(struct ulnet_sst *sst);

enum ulnet_sst_test_kind { ULNET_SST_TEST_BRW = 1, ULNET_SST_TEST_PING = 2 };

struct ulnet_sst_params {
	enum ulnet_sst_test_kind kind;
	struct ulnet_process_id dest;  /* server; pid 0 = ULNET_PID_LUSTRE */
	enum ulnet_sst_brw_op rw;      /* brw */
	uint32_t size;                 /* brw: bytes per RPC, 1..ULNET_MTU */
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

/* Check @p; 0, or -EINVAL with a reason in @why (static string). */
int ulnet__sst_params_check(const struct ulnet_sst_params *p, uint32_t page_size, const char **why);
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
	char session_name[ULNET_SST_NAME_SIZE + 1];
};
void ulnet__sst_stats(struct ulnet_sst *sst, struct ulnet_sst_stats *out);

#endif
