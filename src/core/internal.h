/* SPDX-License-Identifier: MIT */
/* Core objects shared by the files of src/core. Never installed.
 *
 * Ownership (docs/progress.md): every NI lives on one loop, and that loop owns the NI's LND state,
 * its peers and credits, the messages it sends and receives, their completion and the timers its
 * LND arms; whoever holds the loop's owner lock runs them (struct ulnet_loop). The node lock guards
 * what every loop shares: MDs, MEs, matching, handles, the NI list. Event queues, mailboxes and the
 * handler queue have leaf locks of their own. Lock order: one loop's owner lock (or every loop's,
 * in index order), then the node lock, then a leaf. User handlers run on loop 0 with no lock. */
#ifndef ULNET_INTERNAL_H
#define ULNET_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include "ulnet/ulnet.h"
#include "futex_lock.h"
#include "hdr.h"
#include "fault_rule.h"
#include "list.h"
#include "lnd.h"
#include "log.h"

ULNET_LOG_SUBSYS_DECLARE(CORE);
#include "mem_ranges.h"

#define ULNET_HANDLE_BUCKETS 1024
#define ULNET_PEER_BUCKETS 256
#define ULNET_MATCH_BUCKETS 4096 /* power of two */
/* A peer's credit queue: 4096 messages (about 2 MiB of message state) or 64 MiB of payload. A peer
 * that asks for more (GETs it never reads the replies of) gets -ENOBUFS, not our memory. */
#define ULNET_PEER_QUEUE_MSGS_DEFAULT 4096u
#define ULNET_PEER_QUEUE_BYTES_DEFAULT (64ull << 20)
/* A core peer nothing refers to is forgotten after this long, as LND peers are (tcp: 60 s): a GET
 * with a spoofed source NID must not leave a peer forever. */
#define ULNET_PEER_IDLE_S 60

enum ulnet_obj_kind { ULNET_OBJ_MD = 1, ULNET_OBJ_ME = 2 };

/* A hot thread-local of the library: read without a __tls_get_addr call (initial-exec model). */
#define ULNET_TLS_IE __attribute__((tls_model("initial-exec")))

struct ulnet_node;
struct ulnet_loop;
struct ulnet_fault_loop;
struct ulnet_fault_state;

/* A live MD. Its fragments are normalised to an iovec array whatever the user's form was; a kiov's
 * pages that continue one another are one fragment (md.c: kiov_runs). */
struct ulnet_libmd {
	uint64_t cookie;
	struct ulnet_list hash_link;
	struct ulnet_me *me;         /* NULL for a bound MD */
	struct ulnet_md umd;         /* as the user gave it */
	struct iovec *frags;
	unsigned nfrags;
	bool frags_whole;            /* no fragment is empty: frags is what a slice of all of it gives */
	enum ulnet_frag_form frag_form; /* what LNDs see: KIOV only while every fragment is in one page */
	uint32_t total;              /* bytes */
	uint32_t offset;             /* local offset (without MANAGE_REMOTE) */
	int threshold;
	int refcount;                /* messages using it */
	bool zombie;                 /* unlink requested */
	void *free_on_unlink;        /* internal buffers (ping) */
	/* Transaction timeout (md.c): GETs / ACK-requested PUTs sent from this MD whose REPLY / ACK
	 * has not come; when the timer fires they end with -ETIMEDOUT and the MD is unlinked. */
	unsigned txn_pending;
	struct ulnet_timer txn_timer;
	struct ulnet_event txn_ev;   /* the last such SEND's event, the template of the timeout event */
	uint64_t txn_sent;           /* ulnet__lat_now when the last of them was sent: its REPLY/ACK's
				      * round trip starts there (exact while one is pending, the usual MD) */
	bool txn_timed;              /* ... and it was sent with the latencies on (txn_sent is a reading) */
	void *lnd_reg;               /* an LND's registration of this memory (lnd_contract.c) */
	struct ulnet_ni *lnd_reg_ni; /* the NI whose LND filled lnd_reg */
	struct iovec frag_store[];   /* frags points here (md.c: one descriptor) */
};

struct ulnet_me {
	uint64_t cookie;
	struct ulnet_list hash_link;
	struct ulnet_list ptl_link;  /* the portal's list, in order (teardown) */
	struct ulnet_list match_link; /* its match-table chain (ignore_bits 0) or the portal's wildcards */
	int64_t seq;                 /* position in the portal: lower matches first (match.c) */
	uint32_t portal;
	struct ulnet_process_id match_id;
	uint64_t match_bits, ignore_bits;
	enum ulnet_unlink unlink;
	struct ulnet_libmd *md;
};

struct ulnet_peer {
	struct ulnet_list hash_link;
	struct ulnet_nid nid;
	struct ulnet_ni *ni;
	int max_tx_credits, tx_credits, min_tx_credits;
	struct ulnet_list txq;       /* messages waiting for a peer credit */
	unsigned txq_msgs;           /* ... how many, and their payload bytes: bounded by the NI's */
	uint64_t txq_bytes;          /*     peer_queue_msgs / peer_queue_bytes (peer.c) */
	uint64_t txq_refused;        /* refused since the queue last filled (for the "drained" line) */
	uint64_t send_count, recv_count;
	bool down;                   /* the LND said so (ulnet__peer_down); up again once it sends us
				      * anything (peer show's state) */
	int min_buf_credits;         /* forwarding: the lowest buf_credits seen */
	uint64_t fwd_msgs, fwd_bytes, fwd_drops; /* forwarded from this peer, dropped */
	bool ping_known;             /* a ping reply from this NID was decoded: */
	uint32_t ping_features;      /* its pi_features */
	/* Life cycle (peer.c): messages naming this peer; at 0 it waits on node->idle_peers (oldest
	 * first) and is freed after ULNET_PEER_IDLE_S, or earlier when the table is full. */
	unsigned refs;
	uint64_t idle_since;         /* node clock */
	struct ulnet_list idle_link;
	int buf_credits;             /* forwarding: router buffers this peer may still hold */
	/* metrics (metrics.c), the loop's like the rest */
	uint64_t tx_queue_full, down_count;
	struct ulnet_latency lat;
	bool pinned;                 /* a static peer (ulnet_peer_add): one ref of its own, never swept */
};

/* A route (route.c). Its fields but the atomics are set at ulnet_route_add and never change; the
 * checker and the senders update the atomics with no lock. */
enum ulnet_route_down {
	ULNET_ROUTE_OK, ULNET_ROUTE_NO_ANSWER, ULNET_ROUTE_GW_NOT_ROUTING, ULNET_ROUTE_GW_NET_DOWN,
	ULNET_ROUTE_GW_DOWN,
};
struct ulnet_route {
	uint32_t net;                /* the remote net */
	struct ulnet_nid gw;
	struct ulnet_ni *ni;         /* the local NI on the gateway's net */
	int hops;
	uint32_t priority, health_sensitivity;
	_Atomic uint8_t down;        /* enum ulnet_route_down: ULNET_ROUTE_OK while up */
	atomic_bool multi_hop;       /* the gateway's last ping reply had no NI on the net */
	_Atomic uint64_t checked_ns; /* node clock of the gateway's last answer; 0: none yet */
	_Atomic uint64_t seq;        /* route_seq when last used (round robin: least recent first) */
	_Atomic uint64_t send_count, send_length;
};
/* route_rank.c: pure policy, no I/O. What ranks a route against another for one message. */
struct ulnet_route_rank {
	bool up;
	uint32_t priority;
	int hops;                    /* ULNET_ROUTE_HOPS_UNDEF ranks as 1 */
	int credits;                 /* the gateway peer's send credits; INT_MIN: not known here */
	uint64_t seq;
};
/* True when @a is a better choice than @b: up, then lower priority, then fewer hops, then more
 * credits (when both are known), then the least recently used. */
bool ulnet__route_better(const struct ulnet_route_rank *a, const struct ulnet_route_rank *b);
/* What a gateway's ping reply says of a route to @net through it: ULNET_ROUTE_OK, or why it is
 * down. @features the reply's pi_features; @nids/@status its NIs (n of them); @sensitivity the %
 * of its NIs on @net that must be up. *@multi_hop: it has no NI on @net (the route is judged by the
 * gateway's answer alone). */
enum ulnet_route_down ulnet__route_judge(uint32_t net, uint32_t features, const struct ulnet_nid *nids,
					 const uint32_t *status, unsigned n, uint32_t sensitivity, bool *multi_hop);

struct ulnet_ni {
	struct ulnet_list link;
	struct ulnet_node *node;
	const struct ulnet_lnd_ops *ops;
	struct ulnet_nid nid;
	uint32_t net;
	struct ulnet_ni_conf conf;   /* deep copy, owned */
	void *conf_arena;
	int peer_credits, credits, peer_buffer_credits, peer_timeout;
	int tx_credits, min_tx_credits;
	unsigned peer_queue_msgs;    /* per-peer credit queue bounds (a flooding peer's cost is capped) */
	uint64_t peer_queue_bytes;
	struct ulnet_list txq;       /* messages waiting for an NI credit */
	struct ulnet_loop *loop;     /* its home: the loop that owns its LND state, peers and credits */
	uint32_t status;
	bool started;
	uint64_t send_count, recv_count, drop_count;
	/* metrics (metrics.c), its loop's: drop_count by reason, refused sends, latencies */
	uint64_t drops[ULNET_DROP_REASONS], tx_queue_full;
	struct ulnet_latency lat;
	struct ulnet_fwd_counters fwd_in, fwd_out; /* forwarding, under the node lock */
	long *lnd_tun;               /* values of ops->lnd_tunables, owned */
	void *priv;
};

/* router_buffers.c: router buffers by size class, in bytes whatever the page size. Node lock. */
enum { ULNET_RTR_TINY, ULNET_RTR_SMALL, ULNET_RTR_LARGE, ULNET_RTR_POOLS };
struct ulnet_rtr_buf {
	struct ulnet_rtr_buf *next;  /* on a free list */
	void *mem;
	void (*free_fn)(void *p, size_t len); /* an LND's memory (lnd_mem_alloc), or NULL: the heap's */
};
struct ulnet_rtr_pool {
	uint32_t size;
	uint32_t allocated, in_use, max_in_use;
	uint64_t waits;
	/* buffers kept for reuse: of an LND's memory (what an o2ib peer over shm writes into by a
	 * memcpy) and of the heap's */
	struct ulnet_rtr_buf *free_lnd, *free_heap;
	uint32_t nfree;
};
struct ulnet_rtr_pools {
	struct ulnet_rtr_pool pool[ULNET_RTR_POOLS];
	uint64_t memory, memory_max_seen; /* bytes allocated now / at most */
};

struct ulnet_msg {
	struct ulnet_msg_lnd_view v; /* first: what the LND sees */
	struct ulnet_list link;      /* credit queues */
	struct ulnet_node *node;
	struct ulnet_loop *loop;     /* the owner: its NI's loop (NULL until a loop takes it) */
	struct ulnet_ni *ni;
	struct ulnet_peer *peer;     /* tx peer (NULL on lo) */
	struct ulnet_libmd *md;      /* NULL when dropped */
	void *rx_priv;               /* LND context of the received message this answers */
	struct ulnet_list done_link; /* its loop's done queue once finalized */
	int status;                  /* as given to ulnet__finalize */
	bool is_tx;
	bool finalized;              /* queued for completion (set once; the message lives until then) */
	bool peer_credit, ni_credit; /* held */
	bool ack_wanted;             /* rx PUT: send an ACK after the data is in */
	bool txn;                    /* tx GET / ACK-requested PUT counted in md->txn_pending */
	bool has_event;
	bool rdma_reply;             /* REPLY handed to lnd_recv by ulnet__parse_rdma */
	bool node_desc;              /* from the node's descriptor cache (made by a thread owning no loop) */
	bool fault_seen;             /* fault.c: the rules saw it (a held one is not judged twice) */
	void *fault_buf;             /* fault.c: its own copy of the payload (corrupt, duplicate) */
	uint8_t fwd;                 /* forward.c: 0, or the stage of a message being forwarded */
	uint8_t rtr_pool;            /* forward.c: the pool of its router buffer */
	uint8_t lat;                 /* enum ulnet_lat_kind: the histogram its completion feeds (metrics.c) */
	uint64_t t0;                 /* ... from this ulnet__lat_now (its PUT or GET's ulnet_put/_get) */
	struct ulnet_peer *rx_peer;  /* a received REPLY/ACK: the peer it came from (a reference), or NULL */
	struct ulnet_rtr_buf *rtr_buf; /* forward.c: the buffer (NULL: tiny) */
	struct ulnet_peer *fwd_from; /* forward.c: the peer charged for the router buffer */
	struct ulnet_event ev;       /* prepared at match/send time, delivered at finalize */
	unsigned iov_cap;            /* entries of iov_store (the descriptor's size class) */
	struct iovec iov_store[];    /* v.iov points here */
};

/* desc_cache.c: free lists of message descriptors. One per loop (its owner's) and one for the
 * node (under the node lock): ulnet__desc_get picks the one the calling thread may use. */
#define ULNET_DESC_CLASSES 4
struct ulnet_desc_cache {
	void *free[ULNET_DESC_CLASSES];
	unsigned nfree[ULNET_DESC_CLASSES];
};
void ulnet__desc_cache_free(struct ulnet_desc_cache *dc);
/* The node's cache, whatever loop the caller owns: what lives under the node lock (MDs, MEs) and
 * messages made by threads that own no loop go back where they came from, or the API side would
 * drain its cache into the loops'. Node lock held. */
void *ulnet__node_desc_get(struct ulnet_node *node, size_t size, size_t hdr);
void ulnet__node_desc_put(struct ulnet_node *node, void *p, size_t size);

/* A futex lock that times its holds (stats show -v: the hold-time histogram, the longest and total
 * hold, the futex waits). The node lock and every loop's ownership lock are one each. */
struct ulnet_lock {
	struct ulnet_futex_lock f;
	uint64_t t0;                 /* when the hold began, ulnet__lock_ticks (0: not measured) */
	uint64_t hold_total_ticks, hold_max_ticks, sleeps;
	uint64_t hist[ULNET_LOCK_HIST_BUCKETS];
};

static inline void ulnet__tlock_take(struct ulnet_lock *l)
{
	l->sleeps += ulnet__futex_lock(&l->f);
	l->t0 = ulnet__lock_ticks();
}

static inline bool ulnet__tlock_try(struct ulnet_lock *l)
{
	if (!ulnet__futex_trylock(&l->f))
		return false;
	l->t0 = ulnet__lock_ticks();
	return true;
}

static inline void ulnet__tlock_drop(struct ulnet_lock *l)
{
	if (l->t0) {
		uint64_t d = ulnet__lock_ticks() - l->t0, step = ulnet__lock_ticks_per_us;
		unsigned b = 0;

		if ((int64_t)d < 0)
			d = 0; /* a clock that went back (the thread moved to a core whose TSC lags): no hold */
		/* bucket b >= 1 holds [2^(b-1), 2^b) us: most holds are under 1 us, one comparison */
		while (d >= step && b < ULNET_LOCK_HIST_BUCKETS - 1) {
			step <<= 1;
			b++;
		}
		l->hist[b]++;
		l->hold_total_ticks += d;
		if (d > l->hold_max_ticks)
			l->hold_max_ticks = d;
		l->t0 = 0;
	}
	ulnet__futex_unlock(&l->f);
}

/* A min-heap of timers on the node's clock (timer.c): one per loop, run by its owner, and the node's
 * (MD transaction timeouts), run by loop 0 under the node lock. */
struct ulnet_timer_heap {
	struct ulnet_timer **v;
	unsigned n, cap;
};

/* The mailbox of a loop: how any other thread hands it work. A leaf lock; the loop drains it at
 * every turn. @sleeping says the loop is about to sleep, or sleeps, in epoll_wait: the producer that
 * finds it set (after queueing) clears it and writes the loop's eventfd, so a burst of hand-offs costs
 * one write. */
struct ulnet_mailbox {
	struct ulnet_futex_lock lock;
	struct ulnet_list sends;     /* messages to send from this loop (msg->link) */
	struct ulnet_list calls;     /* struct ulnet_call: work on state this loop owns */
	atomic_bool sleeping;
	atomic_bool poked;           /* work for a busy-polling loop: it ends its spin */
};

/* Work for the loop that owns some state, handed over from another thread (ulnet__loop_call). */
struct ulnet_call {
	struct ulnet_list link;
	void (*fn)(struct ulnet_loop *loop, void *arg);
	void *arg;
};

/* The watchers of a loop (epoll set) and the state of its dispatch. */
struct ulnet_io_set {
	int epfd, wakefd;
	struct epoll_event *cur_evs; /* batch being dispatched (io_stop clears stale entries) */
	int cur_nevs;
	struct ulnet_io *kicked, **kicked_tail; /* ulnet__io_kick, FIFO */
	uint64_t turns;              /* batches dispatched by the loop's thread (ulnet__io_quiesced) */
	unsigned n_watchers;         /* registered watchers (stats loop_watchers) */
	struct ulnet_io *hooks;      /* registered watchers with a poll/arm hook (struct ulnet_io) */
	struct ulnet_io *spin_hot;   /* the watcher input last came to: a busy-polling loop's spins read it */
};

/* Core peers of the NIs a loop owns (peer.c): a hash on NID, idle ones oldest first. */
struct ulnet_peer_table {
	struct ulnet_list hash[ULNET_PEER_BUCKETS];
	struct ulnet_list idle;      /* refs 0, oldest first: forgotten after ULNET_PEER_IDLE_S */
	unsigned n;                  /* bounded by the node option max_peers */
	bool full_logged;
	struct ulnet_timer sweep;
};

/* Finalized messages waiting for a loop's completion phase (msg.c). Completing one may launch
 * others (credits) and they may finalize at once: they join the tail, never the stack. */
struct ulnet_done_queue {
	struct ulnet_list q;
	unsigned n;                  /* ULNET_COMPLETION_BACKLOG: LNDs stop reading (ulnet__node_backlogged) */
	bool running;                /* inside the completion phase (ulnet__node_completing) */
	bool now_valid;              /* @now was read in this phase: one clock read for all its latencies */
	uint64_t now;
};

/* One loop of a node (loop.c): a thread and the state it owns. The NIs homed here (their LND state,
 * connections, peers and credits), the timers they arm, the messages finalized here and their
 * descriptors belong to whoever holds @owner: the loop's thread, or an API thread that entered the
 * loop (ulnet__loop_enter). Other threads reach it only through @mbox. */
struct ulnet_loop {
	struct ulnet_node *node;
	unsigned idx;                /* loops[idx]: 0 also runs lo, the node's timers, the handlers */
	pthread_t thread;
	struct ulnet_lock owner;     /* whoever holds it runs everything below but mbox */
	bool entered;                /* the holder is an API thread, not the loop's (ulnet__io_quiesced) */
	atomic_bool led;             /* a caller leads it (ulnet__lead_begin): its thread yields meanwhile */
	struct ulnet_mailbox mbox;   /* how other threads hand it work */
	struct ulnet_io_set io;      /* its epoll set and the watchers of its NIs */
	struct ulnet_timer_heap timers; /* what its LNDs and peer table arm */
	struct ulnet_peer_table peers; /* the core peers of its NIs */
	struct ulnet_done_queue done; /* its finalized messages */
	struct ulnet_desc_cache descs; /* descriptors without a lock */
	struct ulnet_stats stats;    /* its share of the node's counters (ulnet_stats_get sums) */
	struct ulnet_fault_loop *fault; /* fault.c: messages its rules hold (NULL until one does) */
	unsigned fault_reordering;      /* ... of which held for reorder: each send must see the rules */
};

struct ulnet_pending_cb {
	ulnet_event_handler handler;
	struct ulnet_event ev;
};

struct ulnet_node {
	/* The node lock: handles, portals, MEs, MDs and matching, the NI list (also under every loop's
	 * owner lock: a loop reads it with its own), ulnet_mem_alloc ranges, forwarding and the node's
	 * timer heap. Short holds, never across an LND call or an application callback. */
	struct ulnet_lock lock;
	uint32_t pid;
	uint32_t page_size;
	uint64_t iface_cookie;       /* wire MD handle interface cookie: our incarnation */
	uint64_t next_cookie;
	struct ulnet_list handles[ULNET_HANDLE_BUCKETS];
	struct ulnet_list portals[ULNET_MAX_PORTALS];
	/* match.c: MEs without ignore bits hashed on (portal, match bits); the others per portal */
	struct ulnet_list match_hash[ULNET_MATCH_BUCKETS];
	struct ulnet_list portal_wild[ULNET_MAX_PORTALS];
	int64_t me_head_seq, me_tail_seq;
	struct ulnet_list nis;
	struct ulnet_ni *lo_ni;
	unsigned n_nis_homed;        /* NIs given a loop so far (ni.c: round robin from loop 0) */
	unsigned max_peers;          /* node option: bounds each loop's peer table */
	struct ulnet_stats stats;    /* counted under the node lock (ulnet__stats) */
	_Atomic uint32_t msgs_live;  /* message descriptors allocated now, any thread */
	_Atomic uint32_t msgs_peak;  /* ... the most at once */
	_Atomic uint64_t events_lost; /* stats events_dropped: out of memory queueing one, any thread */
	/* ping service */
	struct ulnet_handle ping_me;
	uint32_t ping_seq;
	/* loops (loop.c): loops[0..n_loops), node option loops */
	struct ulnet_loop loops[ULNET_LOOPS_MAX];
	unsigned n_loops;
	unsigned n_started;          /* loop threads running */
	atomic_bool stopping;
	atomic_bool pausing;         /* the loop threads leave their loops to be joined (ulnet__loops_pause) */
	/* busy polling (node option busy_poll_us): a loop spins on epoll_wait(0) for this long after
	 * it last found work; a hand-off to it sets its mbox.poked instead of writing the eventfd */
	uint64_t busy_poll_ns;
	struct ulnet_timer_heap timers; /* MD transaction timeouts, under the node lock, run by loop 0 */
	_Atomic uint64_t timers_next; /* the earliest of them (node clock; UINT64_MAX: none): loop 0 reads it unlocked */
	uint64_t (*clock)(void *arg); /* NULL: CLOCK_MONOTONIC; tests inject their own */
	void *clock_arg;
	_Atomic uint64_t txn_timeout_ns; /* transaction timeout (node option transaction_timeout; set at run
				      * time by ulnet_transaction_timeout_set) */
	uint64_t lat_mult;           /* lock ticks to ns, 32.32 fixed point (ulnet__lat_ns) */
	_Atomic bool lat_off;        /* ulnet_metrics_latency_set(false): no latency clock, no samples */
	/* Application handlers queued by any loop, run in order by loop 0's thread without a lock. */
	struct ulnet_futex_lock cb_lock;
	struct ulnet_pending_cb *cbs;
	size_t n_cbs, cap_cbs;
	struct ulnet_pending_cb *cbs_spare; /* the other half of the double buffer (run_callbacks) */
	size_t cap_spare;
	struct ulnet_desc_cache descs; /* for threads that own no loop, under the node lock */
	/* forwarding (forward.c), under the node lock */
	atomic_bool forwarding;      /* routing enabled (read with no lock by parse) */
	struct ulnet_rtr_pools rtr;  /* router buffers (router_buffers.c) */
	struct ulnet_list fwd_waitq; /* received messages waiting for a buffer or a peer buffer credit */
	uint32_t fwd_waiting;        /* ... how many */
	struct ulnet_fwd_counters fwd; /* every NI's (ulnet_routing_info_get) */
	/* routes (route.c): changed under every loop's owner lock and the node lock, as the NI list */
	struct ulnet_route **routes;
	unsigned n_routes;
	_Atomic uint64_t route_seq;  /* round robin among equal routes */
	struct ulnet_routing_conf routing; /* settings, under the node lock */
	struct ulnet_rtr_checker *checker; /* router_checker.c: NULL until a route exists */
	/* fault rules (fault.c), under the node lock; the data path reads only the screen, with no lock */
	struct ulnet_fault_state *faults; /* the rules as added (each loop copies them: fault.c) */
	unsigned n_faults, cap_faults;
	uint64_t fault_next_id;
	_Atomic uint32_t fault_screen;      /* enum ulnet_fault_screen_field (fault_rule.h) */
	_Atomic uint64_t fault_screen_bits; /* ... and its NIDs' bits */
	_Atomic uint64_t fault_gen;  /* bumped at every change: a loop whose copy is older takes a new one */
	struct ulnet_mem_ranges mem_ranges; /* live ulnet_mem_alloc allocations made for this node (mem.c) */
	struct ulnet_large *large;   /* large.c: payloads above LNET_MTU, its ops under the node lock */
};

/* The loop the calling thread owns now (its loop thread, or an API thread inside ulnet__loop_enter);
 * NULL on any other thread and while a loop thread runs application handlers. */
extern _Thread_local struct ulnet_loop *ulnet__cur_loop ULNET_TLS_IE;
static inline struct ulnet_loop *ulnet__owned(const struct ulnet_node *node)
{
	struct ulnet_loop *l = ulnet__cur_loop;

	return l && l->node == node ? l : NULL;
}

/* The node lock. */
static inline void ulnet__lock(struct ulnet_node *node)
{
	ulnet__tlock_take(&node->lock);
}

static inline bool ulnet__trylock(struct ulnet_node *node)
{
	return ulnet__tlock_try(&node->lock);
}

static inline void ulnet__lock_release(struct ulnet_node *node)
{
	ulnet__tlock_drop(&node->lock);
}

/* Release the node lock, then make the LND calls the MDs freed under it owe (lnd_md_unlinked,
 * lnd_contract.c), and deliver the final events queued behind them, in order: as the owner of the
 * registering NI's loop (entered if this thread owns none), or handed to that loop. Every release
 * of the node lock after an MD may have been freed goes through here. */
void ulnet__unlock(struct ulnet_node *node);

/* The counters the caller may update: its loop's share, or the node's under the node lock. */
static inline struct ulnet_stats *ulnet__stats(struct ulnet_node *node)
{
	struct ulnet_loop *l = ulnet__owned(node);

	return l ? &l->stats : &node->stats;
}

/* metrics.c: the latency clock. The lock ticks (the TSC where it runs at a constant rate): one
 * instruction rather than a clock_gettime call; or the node's clock when a test injected one (in ns:
 * its samples land in known buckets). */
static inline uint64_t ulnet__lat_now(const struct ulnet_node *node)
{
	return node->clock ? node->clock(node->clock_arg) : ulnet__lock_ticks();
}
/* A difference of ulnet__lat_now readings in ns; 0 for a clock that went back (the two readings were
 * on cores whose TSCs differ). One multiplication, no division. */
static inline uint64_t ulnet__lat_ns(const struct ulnet_node *node, uint64_t from, uint64_t to)
{
	uint64_t d = to - from;

	if ((int64_t)d < 0)
		return 0;
	if (node->clock)
		return d;
#ifdef __SIZEOF_INT128__
	return (uint64_t)(((unsigned __int128)d * node->lat_mult) >> 32);
#else
	return ulnet__lock_ticks_ns(d);
#endif
}
/* metrics.c: the bucket of a latency of @ns: b holds [2^(b-1), 2^b) us, 0 under 1 us. */
static inline unsigned ulnet__hist_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = us ? 64u - (unsigned)__builtin_clzll(us) : 0;

	return b < ULNET_HIST_BUCKETS ? b : ULNET_HIST_BUCKETS - 1;
}
/* A sample of @ns in bucket @b into @h (the loop that owns @h). */
static inline void ulnet__hist_put(struct ulnet_hist *h, unsigned b, uint64_t ns)
{
	h->bucket[b]++;
	h->count++;
	h->sum_ns += ns;
}
static inline void ulnet__hist_add(struct ulnet_hist *h, uint64_t ns)
{
	ulnet__hist_put(h, ulnet__hist_bucket(ns), ns);
}
/* Which latency a message's completion measures (struct ulnet_msg lat). A tx GET carries its start
 * only to hand it to an out-of-band REPLY (lnd_contract.c). */
enum ulnet_lat_kind { ULNET_LAT_NONE, ULNET_LAT_PUT, ULNET_LAT_GET, ULNET_LAT_ACK };
/* The completion of @msg (status 0, @msg->lat set): its latency into its NI's and peer's histograms. */
void ulnet__lat_note(struct ulnet_loop *loop, struct ulnet_msg *msg);

/* handles (md.c) */
/* Rules the configuration file reader (config_file.c) shares with the core, each written once: 0 or
 * -EINVAL with the reason in @why. */
int ulnet__page_size_check(uint32_t ps, char *why, size_t whylen);
/* A boolean word: 1/true/yes/on or 0/false/no/off, any case (tunables and the config file). */
int ulnet__bool_parse(const char *s, bool *out);
/* Parse NID @s of an NI on @net (named @net_name in the message). */
int ulnet__ni_nid_parse(const char *s, uint32_t net, const char *net_name, struct ulnet_nid *out, char *why,
			size_t whylen);
uint64_t ulnet__cookie_new(struct ulnet_node *node, enum ulnet_obj_kind kind);
void *ulnet__handle_lookup(struct ulnet_node *node, uint64_t cookie, enum ulnet_obj_kind kind);

/* md.c: matching and MD life cycle */
struct ulnet_match {
	uint32_t portal;
	struct ulnet_process_id initiator;
	uint64_t match_bits;
	uint32_t rlength;
	uint32_t roffset;
	uint32_t op;                 /* ULNET_MD_OP_PUT or ULNET_MD_OP_GET */
	/* out */
	struct ulnet_libmd *md;
	uint32_t offset, mlength;
};
enum ulnet_match_rc { ULNET_MATCH_NONE, ULNET_MATCH_OK, ULNET_MATCH_DROP };
/* match.c: LNet's matching, in portal order, through a hash on unique match bits */
enum ulnet_match_rc ulnet__match_md(struct ulnet_node *node, struct ulnet_match *m);
void ulnet__match_init(struct ulnet_node *node);
/* Put @me on its portal (before or after every ME there) / take it off. */
void ulnet__me_hook(struct ulnet_node *node, struct ulnet_me *me, enum ulnet_ins_pos pos);
void ulnet__me_unhook(struct ulnet_me *me);
int ulnet__md_create(struct ulnet_node *node, const struct ulnet_md *umd, struct ulnet_libmd **out);
/* One operation uses @md: take a reference and consume the threshold. */
void ulnet__md_use(struct ulnet_libmd *md);
bool ulnet__md_active(const struct ulnet_libmd *md);
/* Drop a reference; frees the MD when it is finished. Returns true if it was unlinked now. */
bool ulnet__md_release(struct ulnet_node *node, struct ulnet_libmd *md);
/* The same, but an MD freed here passes its EQ reference to the caller, who delivers the last event
 * with ulnet__event_deliver_unref (or drops the reference): no reference taken just to be dropped. */
bool ulnet__md_release_keep_eq(struct ulnet_node *node, struct ulnet_libmd *md);
void ulnet__md_unlink_locked(struct ulnet_node *node, struct ulnet_libmd *md);
/* Fill @out with the iovecs covering [offset, offset+len) of @md; returns the count. */
unsigned ulnet__md_slice(const struct ulnet_libmd *md, uint32_t offset, uint32_t len, struct iovec *out);
void ulnet__md_event_init(struct ulnet_libmd *md, struct ulnet_event *ev);
int ulnet__me_unlink_locked(struct ulnet_node *node, struct ulnet_me *me);
int ulnet__me_attach_locked(struct ulnet_node *node, uint32_t portal, const struct ulnet_process_id *match_id,
			    uint64_t match_bits, uint64_t ignore_bits, enum ulnet_unlink unlink,
			    enum ulnet_ins_pos pos, struct ulnet_me **out);
int ulnet__md_attach_locked(struct ulnet_node *node, struct ulnet_me *me, const struct ulnet_md *umd,
			    enum ulnet_unlink unlink, struct ulnet_libmd **out);
void ulnet__md_free_all(struct ulnet_node *node);

/* eq.c */
/* ulnet_eq_wait, polling for up to @spin_ns before it sleeps (busy_poll_us). */
int ulnet__eq_wait_busy(ulnet_eq *eq, uint64_t spin_ns, int timeout_ms, struct ulnet_event *ev);
bool ulnet__eq_push(ulnet_eq *eq, const struct ulnet_event *ev);
/* Between these (a completion phase, nested or not), a push that would wake a waiter leaves the
 * signal to the outermost _end: one wake-up per queue per phase. */
void ulnet__eq_defer_begin(void);
void ulnet__eq_defer_end(void);
/* A waiter on @eq is not woken for a successful SEND that leaves its MD linked: it waits for what
 * follows (ulnet_ping waits for the REPLY; the SEND stays queued, in order). */
void ulnet__eq_quiet_send(ulnet_eq *eq);
void ulnet__eq_ref(ulnet_eq *eq, int delta);
/* Free @eq once no MD refers to it any more (now, if none does). */
void ulnet__eq_release(ulnet_eq *eq);
/* Deliver @ev to the MD's eq now and queue its handler for the loop thread. */
void ulnet__event_deliver(struct ulnet_node *node, const struct ulnet_md *umd, const struct ulnet_event *ev);
/* The same, for a caller that took an EQ reference to keep the queue alive until now: the push and
 * the reference drop are one step for any thread waiting on the queue. */
void ulnet__event_deliver_unref(struct ulnet_node *node, const struct ulnet_md *umd, const struct ulnet_event *ev);
/* The same, now, whatever this thread owes (the end of ulnet__unlock's queue). */
void ulnet__event_push_unref(struct ulnet_node *node, const struct ulnet_md *umd, const struct ulnet_event *ev);
/* lnd_contract.c: an LND release is owed by this thread (ulnet__unlock makes it); a final event is
 * then queued behind it (ulnet__event_deliver_after) so it never reaches the application first. */
bool ulnet__owed_pending(void);
void ulnet__event_deliver_after(struct ulnet_node *node, const struct ulnet_md *umd, const struct ulnet_event *ev);

/* msg.c */
struct ulnet_msg *ulnet__msg_alloc(struct ulnet_node *node, unsigned niov);
void ulnet__msg_free(struct ulnet_msg *msg);
/* The completion phase: complete at most @budget finalized messages in FIFO order (credits back,
 * queued sends launched, MD released, event delivered). Returns true if more are waiting. Lock held. */
#define ULNET_COMPLETION_BUDGET 512u
/* Completions waiting beyond which ulnet__node_backlogged() asks LNDs to stop reading (lnd.h). */
#define ULNET_COMPLETION_BACKLOG (4u * ULNET_COMPLETION_BUDGET)
bool ulnet__completions_run(struct ulnet_loop *loop, unsigned budget);

/* move.c */
/* Send @msg to @target from the loop of the NI that reaches it: now, if the caller owns that loop,
 * else through its mailbox. 0, or <0 (nothing sent; the caller still owns @msg): no NI, no peer. */
int ulnet__send(struct ulnet_node *node, struct ulnet_msg *msg, const struct ulnet_process_id *target,
		void *rx_priv);
/* The owner's half of ulnet__send: @msg->v.target is set. Finalizes @msg on failure. */
void ulnet__send_owned(struct ulnet_loop *loop, struct ulnet_msg *msg);
/* Wait until every loop drained its mailbox (tests that script an LND). No lock held. */
void ulnet__node_sync(struct ulnet_node *node);

/* peer.c: credits */
/* @ni's peer @nid (its loop's table; the caller owns that loop). */
struct ulnet_peer *ulnet__peer_find(struct ulnet_ni *ni, const struct ulnet_nid *nid, bool create);
void ulnet__peer_table_init(struct ulnet_peer_table *t);
/* Fail every message waiting for a peer credit with -ESHUTDOWN (node teardown). Owner. */
void ulnet__peers_fail_queues(struct ulnet_loop *loop);
void ulnet__peers_free(struct ulnet_loop *loop);
void ulnet__peers_fail_queues_ni(struct ulnet_loop *loop, const struct ulnet_ni *ni);
unsigned ulnet__peers_forget_ni(struct ulnet_loop *loop, const struct ulnet_ni *ni);
/* Remember what a ping reply from @nid announced, on every peer entry of that NID. No lock held. */
void ulnet__peer_note_ping(struct ulnet_node *node, const struct ulnet_nid *nid, uint32_t features);
/* A message names @lp (ulnet__send) / no longer does (message freed). Owner. */
void ulnet__peer_get(struct ulnet_peer *lp);
void ulnet__peer_put(struct ulnet_loop *loop, struct ulnet_peer *lp);
/* 0: credits taken, send now; 1: queued; -ENOBUFS: the peer's queue is full (nothing taken). */
int ulnet__credits_take(struct ulnet_msg *msg);
/* Return the credits @msg holds and launch the messages they unblock. */
void ulnet__credits_return(struct ulnet_msg *msg);
void ulnet__post_send(struct ulnet_msg *msg);
/* Hand @msg, its credits taken, to its LND now (finalized on failure or shutdown). */
void ulnet__lnd_send(struct ulnet_msg *msg);

/* ni.c */
struct ulnet_ni *ulnet__ni_for_dest(struct ulnet_node *node, const struct ulnet_nid *dest, bool *local);
bool ulnet__nid_is_local(struct ulnet_node *node, const struct ulnet_nid *nid);
void ulnet_node_primary_nid_locked(struct ulnet_node *node, struct ulnet_nid *out);
int ulnet__ni_create(struct ulnet_node *node, const struct ulnet_ni_conf *conf, struct ulnet_ni **out);
void ulnet__ni_destroy(struct ulnet_ni *ni);
/* @ni's LND goes (node close, ulnet_ni_del): the MDs and memory it registered are released, it shuts
 * down (what it holds fails with -ESHUTDOWN), and so do the messages waiting for an NI credit.
 * Every loop owned, @ni stopped (started false); leaves ulnet__cur_loop on @ni's loop. */
void ulnet__ni_lnd_stop(struct ulnet_node *node, struct ulnet_ni *ni);
/* NI number @idx of the NI list (0 = lo), or NULL. Node lock held. */
struct ulnet_ni *ulnet__ni_at(struct ulnet_node *node, unsigned idx);

/* tunable.c */
enum {
	ULNET__NI_TUN_PEER_TIMEOUT,
	ULNET__NI_TUN_PEER_CREDITS,
	ULNET__NI_TUN_PEER_BUFFER_CREDITS,
	ULNET__NI_TUN_CREDITS,
	ULNET__NI_TUN_PEER_QUEUE_MSGS,
	ULNET__NI_TUN_PEER_QUEUE_BYTES,
	ULNET__NI_TUN_COUNT
};
extern const struct ulnet_tunable ulnet__ni_tunable_table[ULNET__NI_TUN_COUNT];
/* Set @values[0..n) to the defaults of @table, then parse @kvs into them. 0, or -EINVAL after one log
 * line "<subsys>: <key> '<value>': <reason>" (or naming the unknown key and the known ones). */
int ulnet__tunables_apply(const char *subsys, const struct ulnet_tunable *table, size_t n,
			  const struct ulnet_kv *kvs, size_t nkv, long *values);

/* lnd_registry.c */
const struct ulnet_lnd_ops *ulnet__lnd_find(const char *name);
extern const struct ulnet_lnd_ops ulnet__lolnd_ops;

/* loop.c */
int ulnet__loop_init(struct ulnet_node *node);
int ulnet__loop_start(struct ulnet_node *node);
void ulnet__loop_stop(struct ulnet_node *node);
int ulnet__loops_pause(struct ulnet_node *node);
void ulnet__loops_resume(struct ulnet_node *node);
void ulnet__loop_free(struct ulnet_node *node);
/* An API thread (owning no loop) takes @loop's ownership / gives it back: exit runs the completion
 * phase for what it finalized meanwhile and wakes the loop's thread if work is left for it. */
void ulnet__loop_enter(struct ulnet_loop *loop);
void ulnet__loop_exit(struct ulnet_loop *loop);
/* Every loop, in index order (the NI list changes; node teardown). The caller then acts as the owner
 * of @as (NULL: none) until ulnet__loops_exit. */
void ulnet__loops_enter(struct ulnet_node *node, struct ulnet_loop *as);
void ulnet__loops_exit(struct ulnet_node *node);
bool ulnet__holds_all_loops(void);
/* The loop whose thread the caller is, while it runs application handlers (NULL otherwise). */
struct ulnet_loop *ulnet__handlers_of(const struct ulnet_node *node);
/* Node teardown, the threads stopped: run what the mailboxes hold. */
void ulnet__loops_drain(struct ulnet_node *node);
/* Lead (ulnet_ping): a thread about to spin for one event on @eq, whose answer comes
 * in on @loop, takes the loop's place instead of spinning beside it (three spinners on two cores):
 * begin takes ownership (after a turn under way; false: the caller owns a loop already, or the
 * loops are not running), and makes the loop's thread yield until it ends; wait runs the loop's
 * turns (not its handlers) until an event is on @eq (1), or @end (ulnet__now_ns: 0); end hands the
 * loop back. */
bool ulnet__lead_begin(struct ulnet_loop *loop);
int ulnet__lead_wait(struct ulnet_loop *loop, ulnet_eq *eq, uint64_t end, struct ulnet_event *ev);
void ulnet__lead_end(struct ulnet_loop *loop);
/* Hand @msg (v.target set) to @loop to send (ulnet__send_owned there). */
void ulnet__loop_mail(struct ulnet_loop *loop, struct ulnet_msg *msg);
/* Run @fn(loop, arg) on @loop's owner. -ENOMEM (logged by the caller) if it cannot be queued. */
int ulnet__loop_call(struct ulnet_loop *loop, void (*fn)(struct ulnet_loop *loop, void *arg), void *arg);
/* The loop that owns @ni's state (loop 0 for lo). */
static inline struct ulnet_loop *ulnet__ni_loop(const struct ulnet_ni *ni)
{
	return ni->loop;
}
void ulnet__queue_cb(struct ulnet_node *node, ulnet_event_handler h, const struct ulnet_event *ev);

/* clock.c: the node's clock (ulnet__now_ns unless a test injects its own) */
uint64_t ulnet__node_now(const struct ulnet_node *node);
/* The same at clock-tick resolution (a few ms; never ahead of ulnet__node_now), a fifth of the cost:
 * for what counts in seconds on a per-message path (a peer's idle clock). */
uint64_t ulnet__node_now_coarse(const struct ulnet_node *node);
void ulnet__node_set_clock(struct ulnet_node *node, uint64_t (*clock)(void *arg), void *arg);

/* timer.c */
/* Run every timer of @h due at @now; returns how many ran. */
unsigned ulnet__timers_run(struct ulnet_node *node, struct ulnet_timer_heap *h, uint64_t now);
/* The earliest deadline of @h (UINT64_MAX: none). */
uint64_t ulnet__timers_first(const struct ulnet_timer_heap *h);
/* Arm @t on the node's heap (MD transaction timeouts): node lock held. */
int ulnet__node_timer_arm(struct ulnet_node *node, struct ulnet_timer *t, uint64_t deadline);
void ulnet__node_timer_cancel(struct ulnet_node *node, struct ulnet_timer *t);
/* Run the node's timers due at @now (loop 0, every turn; cheap when none is due). No lock held. */
void ulnet__node_timers_run(struct ulnet_node *node, uint64_t now);

/* md.c: transaction timeout */
/* @now: the node clock, read by the caller before it took the node lock. */
void ulnet__md_txn_start(struct ulnet_node *node, struct ulnet_libmd *md, const struct ulnet_event *send_ev,
			 uint64_t now);
void ulnet__md_txn_end(struct ulnet_node *node, struct ulnet_libmd *md);
/* lnd_contract.c */
/* The MD is being freed: tell the LND that registered it. */
void ulnet__md_lnd_release(struct ulnet_libmd *md);
/* @ni is shutting down: release every registration its LND holds, while the LND can still do so. */
void ulnet__md_lnd_release_ni(struct ulnet_node *node, struct ulnet_ni *ni);
/* mem.c: drop every allocation registration @ni holds (before its lnd_shutdown); the node is
 * closing: its allocations become plain memory (called without the node lock). */
void ulnet__mem_lnd_release_ni(struct ulnet_node *node, struct ulnet_ni *ni);
void ulnet__mem_node_closed(struct ulnet_node *node);

/* route.c */
/* The NI that reaches @dest: its own for a local NID (*@local), the NI on its net, or the NI of the
 * best route that is up (*@route, else NULL); @hop (may be NULL) the NID to send to. The caller owns
 * a loop or holds the node lock. NULL: nothing reaches it. */
struct ulnet_ni *ulnet__next_hop(struct ulnet_node *node, const struct ulnet_nid *dest, bool *local,
				 struct ulnet_route **route, struct ulnet_nid *hop);
/* @msg goes out through @route now: it is the most recently used. */
void ulnet__route_used(struct ulnet_node *node, struct ulnet_route *route, uint32_t bytes);
void ulnet__routes_free(struct ulnet_node *node);
/* router_checker.c: start the checker (a route exists); stop it before the node closes. */
int ulnet__checker_start(struct ulnet_node *node);
void ulnet__checker_stop(struct ulnet_node *node);
/* Wake the checker: its settings or the routes changed. */
void ulnet__checker_kick(struct ulnet_node *node);
/* router_buffers.c, node lock held */
void ulnet__rtr_init(struct ulnet_node *node);
/* The pool for a payload of @len bytes. */
unsigned ulnet__rtr_class(uint32_t len);
/* A buffer of pool @cls may be taken now (under its count and the memory cap). */
bool ulnet__rtr_available(struct ulnet_node *node, unsigned cls);
/* Take one for a message arriving on @ni: a kept buffer (of @ni's LND memory if it has some), or
 * room reserved for a new one (*@fresh: make it with ulnet__rtr_alloc, node lock released; on
 * failure give the room back with ulnet__rtr_put(NULL)). NULL and !*@fresh for tiny messages. */
struct ulnet_rtr_buf *ulnet__rtr_take(struct ulnet_node *node, unsigned cls, struct ulnet_ni *ni, bool *fresh);
/* A new buffer of pool @cls, of @ni's LND memory if it has some. The owner of @ni's loop. */
struct ulnet_rtr_buf *ulnet__rtr_alloc(struct ulnet_ni *ni, unsigned cls);
void ulnet__rtr_put(struct ulnet_node *node, unsigned cls, struct ulnet_rtr_buf *buf);
void ulnet__rtr_free_all(struct ulnet_node *node);
/* The counts or the cap went down: free kept buffers beyond them (in-use ones go as they come back). */
void ulnet__rtr_trim(struct ulnet_node *node);

/* forward.c */
/* @hdr is for another node and forwarding is on: receive it into a router buffer (now or later). */
int ulnet__forward_parse(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from,
			 void *rx_priv);
/* ulnet__finalize of a message being forwarded. */
void ulnet__forward_finalize(struct ulnet_msg *msg, int status);
void ulnet__forward_free(struct ulnet_node *node);

/* fault.c: fault rules. The data path asks them only about a message the screen lets through
 * (fault_rule.h): one atomic load with no rule, about a dozen instructions with rules that cannot fit
 * the message. false: the rules need not see a message from @src to @dst on the NI @local (@always:
 * unless a rule exists). */
static inline bool ulnet__fault_screen_pass(struct ulnet_node *node, const struct ulnet_nid *src,
					    const struct ulnet_nid *dst, const struct ulnet_nid *local, bool always)
{
	uint32_t f = atomic_load_explicit(&node->fault_screen, memory_order_relaxed);
	const struct ulnet_nid *n;

	if (__builtin_expect(f == ULNET_FAULT_SCREEN_OFF, 1))
		return false;
	if (f == ULNET_FAULT_SCREEN_ALL || always)
		return true;
	n = f == ULNET_FAULT_SCREEN_DST ? dst : f == ULNET_FAULT_SCREEN_LOCAL ? local : src;
	return (atomic_load_explicit(&node->fault_screen_bits, memory_order_relaxed) >> ulnet__fault_nid_bit(n)) & 1;
}
/* @msg, its credits taken, is about to go to its LND: act on it by the rules; true if the rules took
 * it (sent, held, dropped or finalized: the caller does nothing more). The loop's owner. */
bool ulnet__fault_send(struct ulnet_msg *msg);
/* A received message for this node: true if a drop rule drops it. */
bool ulnet__fault_recv(struct ulnet_ni *ni, const struct ulnet_hdr *hdr);
/* Node teardown: fail what @loop's rules hold (-ESHUTDOWN). Owner. */
void ulnet__fault_loop_flush(struct ulnet_loop *loop);
void ulnet__fault_loop_flush_ni(struct ulnet_loop *loop, const struct ulnet_ni *ni);
void ulnet__faults_free(struct ulnet_node *node);
/* fault_lnd.c: LND-level rules (hello, reject, stall). A stall rule came or went: each NI's LND looks
 * at its connections again (lnd_fault_changed, entering the NI's loop). Owning no loop. */
void ulnet__fault_lnd_changed(struct ulnet_node *node);
/* The LND-level rules' counters to 0 (node lock). */
void ulnet__fault_lnd_reset(struct ulnet_node *node);

/* ping.c */
int ulnet__ping_service_refresh(struct ulnet_node *node);

/* large.c: payloads above LNET_MTU between ulnet peers (docs/large.md) */
struct ulnet_large;
int ulnet__large_init(struct ulnet_node *node, uint32_t max);
uint32_t ulnet__large_max(const struct ulnet_node *node);
bool ulnet__large_on(const struct ulnet_node *node);
/* the announce and DONE services on portal 0; node lock held */
int ulnet__large_service_start(struct ulnet_node *node);
/* node teardown, node lock held */
void ulnet__large_free(struct ulnet_node *node);
/* a ping reply from @nid announced @features */
void ulnet__large_note_ping(struct ulnet_node *node, const struct ulnet_nid *nid, uint32_t features);
/* ulnet_put/ulnet_get of an MD above LNET_MTU (no lock held): 0 and events follow, or refused */
int ulnet__large_start(struct ulnet_node *node, struct ulnet_handle mdh, unsigned kind, bool ack,
		       const struct ulnet_process_id *target, uint32_t portal, uint64_t bits, uint32_t offset,
		       uint64_t hdr_data);

#endif
