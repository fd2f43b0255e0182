/* SPDX-License-Identifier: MIT */
/* The selftest engine (selftest.h, docs/selftest.md): request buffers for every service, the brw and
 * ping servers, the framework server (sessions, tests, batches, stats, and the ulnet extended stats),
 * the test client that runs RPC loops for ulnet__sst_run() and for batches a console starts, and the
 * console side's framework RPCs (ulnet__sst_fw_call, used by sst_console.c).
 *
 * Events run as MD handlers on the node's loop thread, under sst->lock (no EQ to poll, no extra
 * wake-up per event); the engine thread only ticks (timeouts, sessions) every 10 ms. An MD's
 * user_ptr is never a pointer: it encodes (engine instance << SST_INST_SHIFT | rpc id << 2 | slot);
 * the instance is looked up in a process-wide table and the RPC in the engine's hash, so an event
 * for an RPC that is gone is ignored instead of dereferenced. An RPC is freed once each of its MDs has delivered its
 * final event (unlinked = 1), so no buffer is freed while LNet may still touch it.
 *
 * Private to src/selftest; what its files share. Files:
 *   sst_rpc.c          the RPC table, bulk buffers, MD posting helpers, request buffers
 *   sst_client.c       the test client: RPC loops, error classification, latency samples
 *   sst_server.c       the brw and ping servers, and the intake of every request
 *   sst_framework.c    the framework server: session, tests, batches, stats
 *   sst_console_rpc.c  the console side: framework RPCs this node sends (ulnet__sst_fw_call)
 *   sst_engine.c       the engine thread, event dispatch, start/stop, inject and stats
 *   sst_run.c          ulnet__sst_run and its parameter check */
#ifndef ULNET_SST_INTERNAL_H
#define ULNET_SST_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "futex_cond.h"
#include "list.h"
#include "clock.h"
#include "log.h"
#include "selftest.h"

ULNET_LOG_SUBSYS_DECLARE(SST);

enum { SLOT_REQ = 0, SLOT_RPY = 1, SLOT_BULK = 2, NSLOTS = 3 };
enum sst_role { ROLE_REQBUF = 1, ROLE_CLIENT, ROLE_SERVER, ROLE_CONSOLE };
/* CANCELLED: stopped by the user or a peer known to be gone; not counted as a failure. */
enum sst_err { ERR_NONE = 0, ERR_TIMEOUT, ERR_MISMATCH, ERR_REFUSED, ERR_PEER_GONE, ERR_CANCELLED };

#define SST_HASH 4096
#define SST_RPC_CACHE 64 /* freed RPCs kept for reuse: one is 1 KiB, past malloc's per-thread cache */
#define SST_INST_SHIFT 56  /* user_ptr bits above: the engine instance (1..SST_MAX_INST) */
#define SST_MAX_INST 255   /* selftest engines in one process */
#define SST_SESSION_TIMEOUT 100
#define SST_MAX_LAT_SAMPLES (4u << 20)
#define SST_EXT_MAGIC ULNET_SST_EXT_MAGIC
/* Server RPCs: at most one per posted request buffer (a buffer is reposted when its RPC is freed, as
 * lnet_selftest does), their brw bulk memory node-wide at most SST_SERVER_BULK_MAX (requests beyond
 * wait, holding only their buffer), and each ends within the node's server RPC timeout
 * (ulnet_selftest_opts.server_rpc_timeout_ms). */
#define SST_SERVER_BULK_MAX (32u << 20)
#define SST_SVC_SLOTS (ULNET_SST_SVC_MAX + 1)
_Static_assert(SST_SVC_SLOTS <= 32, "reqbuf_owed_mask has a bit per service");

struct sst_test;

struct sst_rpc {
	struct sst_rpc *hnext;
	struct sst_rpc *anext, *aprev;   /* client RPCs: active list (timeouts) */
	uint64_t id;
	enum sst_role role;
	uint32_t service;
	struct sst_test *test;
	struct ulnet_process_id peer;
	struct ulnet_handle mdh[NSLOTS];
	unsigned live;                    /* MDs whose final event is still due */
	int status[NSLOTS];
	uint32_t mlen[NSLOTS];
	bool aborting;
	enum sst_err err;
	int remote_status;
	int local_rc;                     /* a local failure before anything was sent */
	bool bad_known;
	uint64_t bad_pos;
	uint64_t start_ns, deadline_ns;
	/* bulk */
	uint8_t *buf;
	size_t buf_cap;                   /* bytes allocated at buf (ulnet_mem_free) */
	bool buf_shared;                  /* buf is one of the engine's shared buffers (not ours to free) */
	uint32_t off, len, page;          /* the bulk: @len bytes at buf + @off, in pages of @page bytes */
	/* server */
	struct ulnet_sst_msg out;         /* reply being built */
	bool has_bulk;
	bool ext_stat;                    /* reply body is @ext (ulnet extension) */
	struct ulnet_sst_stat_ext ext;
	/* console */
	bool done;                        /* every MD final */
	bool detached;                    /* console: the caller gave up (timeout); the engine frees it */
	/* server */
	struct ulnet_list slink;          /* on sst->srv_rpcs, or sst->srv_waiting */
	bool holds_reqbuf;                /* took a request buffer: repost one when freed */
	bool waiting;                     /* on srv_waiting */
	uint32_t srv_bulk;                /* bytes counted in sst->srv_bulk_bytes */
	/* Not cleared for a new RPC (sst__rpc_new), as each is written whole before it is read: the
	 * messages by ulnet__sst_msg_pack or a receive of ULNET_SST_MSG_SIZE bytes (a reply: read up to
	 * its length), the decoded request by ulnet__sst_msg_unpack. Half the descriptor: a 1 MiB brw
	 * RPC's copy evicts it from the cache, and clearing it cost 8 cache-line fills per RPC. */
	uint8_t req[ULNET_SST_MSG_SIZE], rpy[ULNET_SST_MSG_SIZE];
	struct ulnet_sst_msg in;          /* server: decoded request */
};

struct sst_stats {
	uint64_t ok, failed, bytes;
	uint64_t errs[6];
	uint32_t *lat;
	size_t nlat, caplat;
	uint64_t lat_max;
	bool bad_known;
	uint64_t bad_pos;
	char first_error[160];
};

struct sst_test {
	struct sst_test *next;
	struct ulnet_sst_params p;
	uint32_t service;                 /* BRW or PING */
	uint32_t feats;
	struct ulnet_process_id *dests;
	unsigned ndest, dnext;
	uint64_t started, finished, limit; /* limit 0 = unlimited */
	uint64_t end_ns;
	uint32_t inflight;
	bool stopping, done, dest_gone, framework;
	bool abort;                       /* stopping with force: in-flight RPCs are aborted too */
	uint32_t corrupt_left;
	uint32_t ping_seq;
	struct sst_stats st;
	struct ulnet_futex_cond cv;       /* done, or the engine stopping (under sst->lock) */
	uint64_t batch_id;                /* framework tests */
	bool is_client;
	uint64_t run_start_ns, run_end_ns; /* framework tests: last RUN, and when it ended */
	bool zombie;                      /* framework test of an ended session: freed once idle */
	struct ulnet_list run_link;       /* on sst->running while not done */
	uint64_t client_mem;              /* framework client test: bytes counted in sst->fw_client_mem */
};

struct ulnet_sst {
	ulnet_node *node;
	unsigned inst;                    /* its slot in the engine table (sst_engine.c), 1-based */
	pthread_t thread;
	/* a futex lock, as engines_lock (the event handler takes both per event: as glibc's mutexes they
	 * cost ~240 instructions more per ping round trip), so its waits are futex conditions */
	struct ulnet_futex_lock lock;
	_Atomic uint32_t handlers; /* event handlers between the table lookup and their end (sst_engine.c) */
	struct ulnet_futex_cond tick_cv;  /* the engine thread's sleep; broadcast to stop */
	bool stopping, thread_started;
	bool tick_idle;                   /* the engine thread sleeps 1 s: nothing had a deadline */
	uint32_t page;
	uint64_t next_id;
	uint64_t next_bits;               /* match bits for reply/bulk buffers */
	struct sst_rpc *hash[SST_HASH];
	uint8_t *discard;                 /* the shared sink of unchecked brw (sst_rpc.c) */
	size_t discard_cap;
	uint8_t *unfilled;                /* the shared source of unchecked brw (sst_rpc.c) */
	size_t unfilled_cap;
	struct sst_rpc *rpc_cache;        /* freed RPCs for sst__rpc_new (linked by hnext) */
	unsigned n_rpc_cache;
	struct sst_rpc *active;           /* client RPCs */
	struct sst_test *tests;
	struct ulnet_list running;        /* tests not done: all the tick looks at */
	unsigned zombies;                 /* tests waiting to be reaped */
	unsigned ses_ntests;              /* framework tests of the current session */
	uint64_t fw_client_mem;           /* worst-case memory of the session's client tests */
	uint32_t inject_left, inject_at;
	struct ulnet_sst_rpc_counters cnt;
	/* framework */
	bool have_session;
	struct ulnet_sst_sid sid;
	char ses_name[ULNET_SST_NAME_SIZE + 1];
	uint32_t ses_feats;
	uint64_t ses_started_ns, ses_last_ns;
	uint32_t brw_errors, ping_errors;
	struct ulnet_futex_cond con_cv;   /* console RPCs: broadcast when one completes */
	/* server RPC bounds */
	struct ulnet_list srv_rpcs;       /* server RPCs under way */
	struct ulnet_list srv_waiting;    /* brw requests waiting for bulk memory, oldest first */
	uint64_t srv_bulk_bytes, srv_bulk_max;
	uint32_t srv_timeout_ms;
	/* request buffers to repost (their RPC ended), and their mirror, bit s: reqbuf_owed[s] > 0 (every
	 * event looks: the mask spares it a walk of all 13, ~200 instructions per ping round trip);
	 * changed only together, by sst__reqbuf_owe and sst__reqbuf_repaid */
	unsigned reqbuf_owed[SST_SVC_SLOTS];
	uint32_t reqbuf_owed_mask;
	bool reqbuf_warned;               /* a repost failed; logged once until one succeeds */
	unsigned srv_nrpcs, srv_nwaiting;
	bool kernel_stats;                /* answer stats as lnet_selftest (no extension) */
	/* every client RPC of every test since the engine started, by result (ERR_CANCELLED: not counted),
	 * and brw payload bytes of the successful ones by brw op (0 read, 1 write): the metrics endpoint's */
	uint64_t cl_results[ERR_CANCELLED];
	uint64_t cl_bytes[2];
};

/* Service @s owes one more request buffer (its RPC ended) / one fewer (reposted). */
static inline void sst__reqbuf_owe(struct ulnet_sst *sst, uint32_t s)
{
	sst->reqbuf_owed[s]++;
	sst->reqbuf_owed_mask |= 1u << s;
}

static inline void sst__reqbuf_repaid(struct ulnet_sst *sst, uint32_t s)
{
	if (--sst->reqbuf_owed[s] == 0)
		sst->reqbuf_owed_mask &= ~(1u << s);
}

static inline int sst__cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- sst_rpc.c ---- */
/* sst_engine.c: the MD handler of every selftest MD (runs on the node's loop thread) */
void sst__event_handler(const struct ulnet_event *ev);
struct sst_rpc *sst__rpc_new(struct ulnet_sst *sst, enum sst_role role);
struct sst_rpc *sst__rpc_find(struct ulnet_sst *sst, uint64_t id);
void sst__rpc_free(struct ulnet_sst *sst, struct sst_rpc *r);
/* Free the RPCs kept for reuse (engine teardown). */
void sst__rpc_cache_drain(struct ulnet_sst *sst);
void sst__rpc_abort(struct ulnet_sst *sst, struct sst_rpc *r);
/* Whose bytes a bulk buffer holds: its RPC's own, or nobody's (unchecked brw: the engine's shared
 * sink or source, see sst_rpc.c). */
enum sst_buf { SST_BUF_OWN, SST_BUF_SHARED_SINK, SST_BUF_SHARED_SOURCE };
int sst__rpc_alloc_bulk(struct ulnet_sst *sst, struct sst_rpc *r, uint32_t off, uint32_t len, enum sst_buf use);
void sst__discard_free(struct ulnet_sst *sst);
int sst__bulk_check(const struct sst_rpc *r, bool swab, enum ulnet_sst_check check, uint64_t *bad);
void sst__bulk_corrupt(struct sst_rpc *r, uint32_t at);
int sst__post_passive(struct ulnet_sst *sst, struct sst_rpc *r, int slot, uint64_t bits, uint32_t options);
int sst__post_active(struct ulnet_sst *sst, struct sst_rpc *r, int slot, bool get, void *start, uint32_t length,
		     uint32_t portal, uint64_t bits);
int sst__post_reqbuf(struct ulnet_sst *sst, uint32_t service);

/* ---- sst_client.c ---- */
bool sst__test_may_start(const struct sst_test *t, uint64_t now);
/* @t runs (again): the tick watches it until it is done. */
void sst__test_running(struct ulnet_sst *sst, struct sst_test *t);
/* Something now has a deadline (an RPC, a running test): an engine thread in its idle sleep ticks
 * again every 10 ms from now on. Lock held. */
void sst__tick_due(struct ulnet_sst *sst);
void sst__test_free(struct sst_test *t);
void sst__test_maybe_done(struct ulnet_sst *sst, struct sst_test *t);
void sst__client_launch(struct ulnet_sst *sst, struct sst_test *t);
void sst__client_event(struct ulnet_sst *sst, struct sst_rpc *r, int slot, const struct ulnet_event *ev);

/* ---- sst_server.c ---- */
void sst__server_send_reply(struct ulnet_sst *sst, struct sst_rpc *r);
void sst__server_event(struct ulnet_sst *sst, struct sst_rpc *r, int slot, const struct ulnet_event *ev);
/* A request arrived in @buf: true when a server RPC took it over (the buffer is reposted when that
 * RPC is freed), false when it was dropped (repost now). */
bool sst__server_request(struct ulnet_sst *sst, struct sst_rpc *buf, const struct ulnet_event *ev);
/* Engine loop: start waiting brw requests that fit, repost owed request buffers. */
void sst__server_kick(struct ulnet_sst *sst);
/* Tick: expire server RPCs past their deadline. */
void sst__server_expire(struct ulnet_sst *sst, uint64_t now);

/* ---- sst_framework.c ---- */
struct ulnet_sst_sid sst__cur_sid(const struct ulnet_sst *sst);
void sst__session_end(struct ulnet_sst *sst);
void sst__tests_reap(struct ulnet_sst *sst);
void sst__fw_handle(struct ulnet_sst *sst, struct sst_rpc *r);
void sst__fw_test_add_ids(struct ulnet_sst *sst, struct sst_rpc *r);

/* ---- sst_console_rpc.c ---- */
void sst__console_event(struct ulnet_sst *sst, struct sst_rpc *r, int slot, const struct ulnet_event *ev);

#endif
