/* SPDX-License-Identifier: MIT */
/* A node: one LNet instance (process id, page size, NIs, portals) with its own loop thread. */
#ifndef ULNET_NODE_H
#define ULNET_NODE_H

#include <stdbool.h>
#include <stdint.h>
#include "event.h"
#include "log.h"
#include "tunable.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ulnet_node_opts {
	uint32_t pid;        /* 0 = ULNET_PID_LUSTRE */
	uint32_t page_size;  /* 0 = sysconf(_SC_PAGESIZE); else a power of two in [4096, 2 MiB] */
	/* Seconds a GET waits for its REPLY, and an ACK-requested PUT for its ACK, before it ends with
	 * a REPLY/ACK event of status -ETIMEDOUT and its MD is unlinked (LNet's transaction timeout).
	 * 0 = ULNET_TXN_TIMEOUT_DEFAULT; at most ULNET_TXN_TIMEOUT_MAX. */
	uint32_t transaction_timeout;
	/* Peers the node keeps state for (credits, queue, counters), 0 = ULNET_MAX_PEERS_DEFAULT. A peer
	 * idle for 60 s is forgotten; when the table is full the longest idle one makes room, and if
	 * every one is busy a send to a new peer fails with -ENOBUFS. */
	uint32_t max_peers;
	/* Microseconds the loop keeps polling its sockets without sleeping after it last found work
	 * (and a thread blocked in ulnet_ping polls for its reply), as kernel sockets' busy_poll and
	 * UCX do: lower latency for a core spent spinning. 0 = off (default); at most
	 * ULNET_BUSY_POLL_US_MAX. */
	uint32_t busy_poll_us;
	/* Loop threads: each owns the NIs given to it (lo and the node's timers and event handlers on
	 * loop 0, the other NIs round robin from loop 1) with their sockets, peers and completions.
	 * 0 = the environment variable ULNET_LOOPS if set (a way to run whole test suites with several
	 * loops), else 1; at most ULNET_LOOPS_MAX. */
	uint32_t loops;
	/* Largest payload of one ulnet_put/ulnet_get toward a ulnet peer that announced large payloads
	 * (ULNET_PING_FEAT_ULNET_LARGE, learnt by ulnet_ping), moved as a rendezvous of messages of at
	 * most LNET_MTU each (docs/large.md). 0 = ULNET_LARGE_MAX_DEFAULT; ULNET_MTU turns it off (the
	 * node neither announces nor accepts them); at most ULNET_LARGE_MAX_MAX. */
	uint32_t large_max;
};
#define ULNET_LARGE_MAX_DEFAULT (64u << 20)
#define ULNET_LARGE_MAX_MAX (1u << 30)
#define ULNET_LOOPS_MAX 64
#define ULNET_BUSY_POLL_US_MAX 1000000
#define ULNET_MAX_PEERS_DEFAULT 16384
#define ULNET_TXN_TIMEOUT_DEFAULT 50
#define ULNET_TXN_TIMEOUT_MAX 86400

/* NI configuration, as lnetctl's "net" entries carry it. */
struct ulnet_ni_conf {
	const char *net;               /* "tcp", "tcp1", "o2ib", "lo" */
	const char *nid;               /* "127.0.0.2@tcp"; or NULL and @interfaces */
	const char *const *interfaces; /* NULL-terminated interface names (address taken from the first) */
	const struct ulnet_kv *tunables;     /* peer_timeout, peer_credits, peer_buffer_credits, credits,
					      * peer_queue_msgs, peer_queue_bytes */
	size_t n_tunables;
	const struct ulnet_kv *lnd_tunables; /* LND specific (tcp: accept_port, timeout, ...) */
	size_t n_lnd_tunables;
};

/* Create a node with the lo NI (0@lo) and the ping service running. -EINVAL bad options. */
ULNET_EXPORT int ulnet_node_open(const struct ulnet_node_opts *opts, ulnet_node **out);
/* Stop the loop, shut every NI down (pending messages complete with -ESHUTDOWN), free. Blocking;
 * never call it from an event handler. */
ULNET_EXPORT void ulnet_node_close(ulnet_node *node);
/* Add an NI. 0; -EINVAL bad conf (logged with the key); -EEXIST net already has an NI;
 * -EPROTONOSUPPORT LND not built; or the LND's startup error. */
ULNET_EXPORT int ulnet_ni_add(ulnet_node *node, const struct ulnet_ni_conf *conf);
/* Remove the NI on @net (e.g. "tcp1") from a running node: its connections close, what it was sending
 * or receiving completes with -ESHUTDOWN, its peers are forgotten and the ping reply no longer names
 * it. The loop threads stop for the time it takes (milliseconds); other NIs' traffic waits, none is
 * lost. 0; -EINVAL bad net; -ENOENT no NI on it (0@lo cannot go); -EBUSY a route goes through it, the
 * node routes, or another ulnet_ni_del runs (logged, naming what to change); -EDEADLK called from an
 * event handler. Blocking; never call it from an event handler. */
ULNET_EXPORT int ulnet_ni_del(ulnet_node *node, const char *net);
/* The local NID a message to @dest leaves from now (its NI's, or @dest itself when it is local). 0;
 * -EHOSTUNREACH no NI and no route reaches it. One NI per net: there is no other choice to make. */
ULNET_EXPORT int ulnet_source_nid(ulnet_node *node, const struct ulnet_nid *dest, struct ulnet_nid *out);
ULNET_EXPORT uint32_t ulnet_node_pid(const ulnet_node *node);
ULNET_EXPORT uint32_t ulnet_node_page_size(const ulnet_node *node);
/* Loop threads of the node (node option loops, or ULNET_LOOPS). */
ULNET_EXPORT uint32_t ulnet_node_loops(const ulnet_node *node);
/* The transaction timeout (node option transaction_timeout) at run time, for the GETs and
 * ACK-requested PUTs sent after the call. 0; -EINVAL outside [1, ULNET_TXN_TIMEOUT_MAX] (logged). */
ULNET_EXPORT int ulnet_transaction_timeout_set(ulnet_node *node, uint32_t seconds);
/* The options the node runs with, defaults filled in (none is 0 except busy_poll_us when off). */
ULNET_EXPORT void ulnet_node_opts_get(const ulnet_node *node, struct ulnet_node_opts *out);
/* The first non-lo NID (or 0@lo when there is none). */
ULNET_EXPORT void ulnet_node_primary_nid(ulnet_node *node, struct ulnet_nid *out);

/* Payloads above ULNET_MTU (1 MiB), up to the node option large_max, go only to a peer that takes
 * them: a ulnet node whose ping reply carries ULNET_PING_FEAT_ULNET_LARGE. The node learns it by
 * itself: toward a peer not known yet, the op waits while the core pings the peer once (no thread
 * waits; other large ops toward it wait behind that ping); a reply with the bit starts them, one
 * without it (a kernel node, an older ulnet, large payloads off there) ends each in its SEND event
 * with -EMSGSIZE and one log line, nothing but the ping sent. Toward a peer already known not to
 * take them the call returns -EMSGSIZE; within a second after a failed ping of it, that ping's
 * error. On the wire every message stays within LNET_MTU (docs/large.md); the application sees one
 * SEND and one ACK/REPLY, the target one PUT/GET event, as for one message. A failure ends in one
 * event with the error on each side (the initiator's in its SEND event).
 * ulnet_large_peer: 1 if @nid is known to take them (its last ping reply said so), else 0. */
#define ULNET_PING_FEAT_ULNET_LARGE (1u << 30)
ULNET_EXPORT int ulnet_large_peer(ulnet_node *node, const struct ulnet_nid *nid);

/* Send @md (its whole length) to @target's @portal. 0: a SEND event follows, and an ACK as well if
 * @ack and the target MD allows; they may come in either order. A send that fails (no NI reaches
 * @target: -EHOSTUNREACH; the peer's queue is full: -ENOBUFS; the connection failed...) ends in a
 * SEND event with that status and no ACK; an ACK that never comes ends in an ACK event with
 * -ETIMEDOUT (transaction_timeout). -EINVAL, -ENOENT stale @md, -EMSGSIZE over ULNET_MTU toward a
 * peer known not to take large payloads (see above), or over large_max; -ENOBUFS too many large ops
 * in progress (or waiting for the ping of their peer) with the peer: refused before anything was
 * sent; no event follows these. */
ULNET_EXPORT int ulnet_put(ulnet_node *node, struct ulnet_handle md, enum ulnet_ack_req ack,
			   const struct ulnet_process_id *target, uint32_t portal, uint64_t match_bits,
			   uint32_t offset, uint64_t hdr_data);
/* Fetch into @md from @target's @portal. 0: SEND then REPLY events; a failed send ends in the SEND
 * event with its error (no REPLY follows); a REPLY that never comes ends in a REPLY event with
 * -ETIMEDOUT that unlinks @md. Errors returned as for ulnet_put. */
ULNET_EXPORT int ulnet_get(ulnet_node *node, struct ulnet_handle md, const struct ulnet_process_id *target,
			   uint32_t portal, uint64_t match_bits, uint32_t offset);

/* Ping (lnet-wire.md §2.4). */
#define ULNET_PING_MAX_NIDS 64
struct ulnet_ping_entry {
	struct ulnet_nid nid;
	uint32_t status; /* ULNET_NI_STATUS_UP / DOWN */
};
#define ULNET_NI_STATUS_UP 0x15aac0deu
#define ULNET_NI_STATUS_DOWN 0xdeadfaceu
struct ulnet_ping_result {
	uint32_t pid;
	uint32_t features;
	uint32_t n_nids;     /* entries in nids[] (0@lo first) */
	struct ulnet_ping_entry nids[ULNET_PING_MAX_NIDS];
	uint64_t rtt_ns;
};
/* Blocking ping; never call from an event handler. 0; -ETIMEDOUT; -EPROTO bad reply (logged);
 * -EHOSTUNREACH. */
ULNET_EXPORT int ulnet_ping(ulnet_node *node, const struct ulnet_process_id *target, int timeout_ms,
			    struct ulnet_ping_result *out);

/* The library's clock (CLOCK_MONOTONIC, ns): what ping times and timeouts are measured with. */
ULNET_EXPORT uint64_t ulnet_clock_ns(void);

/* Counters, as lnetctl stats show. */
#define ULNET_LOCK_HIST_BUCKETS 16
struct ulnet_stats {
	uint32_t msgs_alloc, msgs_max;
	uint64_t errors;
	uint64_t send_count, recv_count, route_count, drop_count;
	uint64_t send_length, recv_length, route_length, drop_length;
	uint64_t tx_queue_full;  /* sends refused: the peer's queue was at peer_queue_msgs/_bytes */
	uint64_t tx_timeouts;    /* GET/PUT+ACK transactions that ended in -ETIMEDOUT */
	/* Events not delivered: the process was out of memory growing an event queue or the handler
	 * queue (each drop is also logged). Anything but 0 means the application missed events. */
	uint64_t events_dropped;
	/* Message descriptors (messages, ACKs, LND tx and NOOP descriptors) handed out, and how many of
	 * them needed the heap: in steady state the free lists serve them and the second stops growing. */
	uint64_t desc_gets, desc_heap_allocs;
	/* How long the node lock (what every loop and API thread shares: MDs, MEs, matching) was held,
	 * each time it was let go: bucket 0 counts holds under 1 us, bucket i (1..14) holds of
	 * [2^(i-1), 2^i) us, the last 16384 us and more. */
	uint64_t lock_hold_hist[ULNET_LOCK_HIST_BUCKETS];
	uint64_t lock_hold_max_ns;
	uint64_t lock_hold_total_ns; /* every hold summed: with send_count + recv_count, the hold per message */
	uint64_t lock_sleeps;        /* futex waits of threads that found it taken past their poll */
	/* Futex waits for a loop's ownership: an API thread entering a loop during its turn, or the
	 * loop's thread coming back from epoll_wait while one is inside. (A loop's own hold is its
	 * busy time, so it is not a contention figure.) */
	uint64_t owner_sleeps;
	uint32_t loops;          /* loop threads of the node (node option loops) */
	/* Socket watchers (connections, listeners, completion channels) each loop polls, [0..loops):
	 * where the NIs' connections live. */
	uint32_t loop_watchers[ULNET_LOOPS_MAX];
};
ULNET_EXPORT void ulnet_stats_get(ulnet_node *node, struct ulnet_stats *out);

struct ulnet_ni_info {
	struct ulnet_nid nid;
	char net[16];
	char lnd[8];
	uint32_t status;
	int peer_credits, credits, peer_buffer_credits, peer_timeout;
	int tx_credits, min_tx_credits; /* available now / lowest seen */
	uint64_t send_count, recv_count, drop_count;
	const struct ulnet_tunable *lnd_tunables; /* the LND's table (static); values: ulnet_ni_lnd_tunable_get */
	size_t n_lnd_tunables;
	char interfaces[64];            /* interface name(s), "" when none */
};
/* Fill @out for the NI number @idx (0 = lo). -ENOENT past the last. */
ULNET_EXPORT int ulnet_ni_info_get(ulnet_node *node, unsigned idx, struct ulnet_ni_info *out);
/* The value of lnd_tunables[@k] of NI @idx. -ENOENT past the last NI or key. */
ULNET_EXPORT int ulnet_ni_lnd_tunable_get(ulnet_node *node, unsigned idx, size_t k, long *out);

/* @len bytes aligned to @align (a power of two up to 2 MiB) for bulk MDs of @node: memory its
 * fabric moves fastest when an NI has such (o2ib over the shm provider: memfd-backed, so a peer's
 * RDMA into it is a memcpy rather than process_vm_writev), else heap memory. Contents undefined.
 * NULL with errno set on failure. Free with ulnet_mem_free (any thread; the node may be gone). */
ULNET_EXPORT void *ulnet_mem_alloc(ulnet_node *node, size_t align, size_t len);
ULNET_EXPORT void ulnet_mem_free(void *p, size_t len);

struct ulnet_peer_info {
	struct ulnet_nid nid;
	char state[16];                 /* "up", "down", "connecting" */
	int max_tx_credits, tx_credits, min_tx_credits, tx_queued;
	uint64_t send_count, recv_count;
	bool ping_known;                /* a ping reply from the peer was decoded; then: */
	uint32_t ping_features;         /* what it announced (ULNET_PING_FEAT_*, e.g. MULTI_RAIL) */
	/* Forwarding (routing enabled): router buffers the peer may still fill (LNet's "rtr credits",
	 * peer_buffer_credits, negative while its messages wait) and the lowest seen; what was
	 * forwarded from it, and dropped (ulnet_fwd_drop reasons, summed). */
	int rtr_credits, min_rtr_credits;
	uint64_t fwd_msgs, fwd_bytes, fwd_drops;
	bool is_static;                 /* added by ulnet_peer_add: kept while idle */
};
ULNET_EXPORT int ulnet_peer_info_get(ulnet_node *node, unsigned idx, struct ulnet_peer_info *out);

/* Static peers (lnetctl peer add --non_mr): @nid, on a local net, is kept in the peer table while
 * idle, so peer show and export list it. 0; -EINVAL a NID of this node; -EHOSTUNREACH no local NI
 * on its net; -EEXIST already static; -ENOBUFS peer table full (logged). */
ULNET_EXPORT int ulnet_peer_add(ulnet_node *node, const struct ulnet_nid *nid);
/* Forget peer @nid (static or not): at once if no message names it, else once they complete.
 * 0; -ENOENT no such peer. */
ULNET_EXPORT int ulnet_peer_del(ulnet_node *node, const struct ulnet_nid *nid);

/* What a peer's connection allows, as its LND negotiated it. */
struct ulnet_peer_limits {
	uint32_t max_frags;    /* fragments in one RDMA descriptor / message */
	uint32_t queue_depth;  /* messages in flight (the peer's credits) */
	uint32_t lnet_mtu;     /* largest LNet payload one message may carry (LNET_MTU, 1 MiB) */
	/* the LND's own message size on the wire, as negotiated (o2ib: ibcp_max_msg_size, 4096; larger
	 * payloads go by RDMA); 0: the LND has none (tcp, lo) */
	uint32_t lnd_msg_size;
	uint32_t conns;        /* connections up to the peer now (o2ib: conns_per_peer, ours or its own) */
	uint32_t conns_used;   /* of those, how many have both sent and received a message (NOOPs aside) */
};
/* The limits of peer @nid. 0; -EHOSTUNREACH no NI reaches it; -EOPNOTSUPP its LND cannot say;
 * -ENOENT the LND has no state for it (not connected yet). */
ULNET_EXPORT int ulnet_peer_limits_get(ulnet_node *node, const struct ulnet_nid *nid, struct ulnet_peer_limits *out);

ULNET_EXPORT const char *ulnet_strerror(int err);
ULNET_EXPORT const char *ulnet_version(void);

#ifdef __cplusplus
}
#endif
#endif
