/* SPDX-License-Identifier: MIT */
/* Core objects shared by the files of src/core. Never installed.
 *
 * Locking: one mutex per node (node->lock) guards every object below except event queues, which
 * have their own leaf lock. API calls take it; the loop threads hold it while they run io callbacks
 * (which may drop it around one socket call: ulnet__io_unlock) and ticks. User handlers run on loop 0
 * without it (see docs/progress.md). */
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

/* A timer on the node's heap (timer.c). @fn runs on the loop thread with the node lock held, once
 * per arming; it may re-arm. */
struct ulnet_node;

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
	bool ping_known;             /* a ping reply from this NID was decoded: */
	uint32_t ping_features;      /* its pi_features */
	/* Life cycle (peer.c): messages naming this peer; at 0 it waits on node->idle_peers (oldest
	 * first) and is freed after ULNET_PEER_IDLE_S, or earlier when the table is full. */
	unsigned refs;
	uint64_t idle_since;         /* node clock */
	struct ulnet_list idle_link;
	int buf_credits;             /* forwarding: router buffers this peer may still hold */
};

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
	uint32_t status;
	bool started;
	uint64_t send_count, recv_count, drop_count;
	long *lnd_tun;               /* values of ops->lnd_tunables, owned */
	void *priv;
};

struct ulnet_msg {
	struct ulnet_msg_lnd_view v; /* first: what the LND sees */
	struct ulnet_list link;      /* credit queues */
	struct ulnet_node *node;
	struct ulnet_ni *ni;
	struct ulnet_peer *peer;     /* tx peer (NULL on lo) */
	struct ulnet_libmd *md;      /* NULL when dropped */
	void *rx_priv;               /* LND context of the received message this answers */
	struct ulnet_list done_link; /* node->done_q once finalized */
	int status;                  /* as given to ulnet__finalize */
	bool is_tx;
	bool finalized;              /* queued for completion (set once; the message lives until then) */
	bool peer_credit, ni_credit; /* held */
	bool ack_wanted;             /* rx PUT: send an ACK after the data is in */
	bool txn;                    /* tx GET / ACK-requested PUT counted in md->txn_pending */
	bool has_event;
	bool rdma_reply;             /* REPLY handed to lnd_recv by ulnet__parse_rdma */
	uint8_t fwd;                 /* forward.c: 0, or the stage of a message being forwarded */
	struct ulnet_peer *fwd_from; /* forward.c: the peer charged for the router buffer */
	struct ulnet_event ev;       /* prepared at match/send time, delivered at finalize */
	unsigned iov_cap;            /* entries of iov_store (the descriptor's size class) */
	struct iovec iov_store[];    /* v.iov points here */
};

/* desc_cache.c: free lists of message descriptors */
#define ULNET_DESC_CLASSES 4
struct ulnet_desc_cache {
	void *free[ULNET_DESC_CLASSES];
	unsigned nfree[ULNET_DESC_CLASSES];
};
void ulnet__desc_cache_free(struct ulnet_node *node);

/* One loop thread of a node (loop.c): its epoll set, its wake-up and the watchers bound to it. Loop 0
 * also runs the timers (LND ticks, transaction timeouts) and the user handlers; every loop runs the
 * node's submissions and completion phase (under the node lock, whoever gets there first). */
struct ulnet_loop {
	struct ulnet_node *node;
	unsigned idx;
	int epfd, wakefd;
	pthread_t thread;
	/* set under the lock just before the loop sleeps in epoll_wait, cleared when it returns: only a
	 * sleeping loop needs the eventfd write (ulnet__loop_wake_if_sleeping) */
	atomic_bool sleeping;
	atomic_bool poked;           /* work for a busy-polling loop (busy_poll_us) */
	/* an API call is doing this waiting loop's work (leader/follower, loop_borrow); the loop,
	 * woken meanwhile, parks (loop_park, on park_seq) before its turn (borrow_waiting). in_wait: the loop
	 * dropped the lock to wait for io (sleeping or busy polling). Under the lock. */
	bool in_wait, borrowed, borrow_waiting;
	bool spinning;               /* in_wait busy polling, not asleep: a waiter may lead (loop.c) */
	/* The thread parks on park_seq (loop_park): while borrowed, and after a receive-side lead
	 * until linger_until (ulnet__now_ns; 0: not lingering), so the next lead finds it parked and
	 * neither wakes it nor pokes it (lazy hand-back). unpark: work for it, leave the park now. */
	atomic_bool parked, unpark;
	uint64_t linger_until;
	_Atomic uint32_t park_seq;   /* moves (and a futex wake) to end a park: loop_park */
	struct epoll_event *cur_evs; /* batch being dispatched (io_stop clears stale entries) */
	int cur_nevs;
	struct ulnet_io *kicked, **kicked_tail; /* ulnet__io_kick, FIFO */
	/* Sends API calls made off the loop threads to remote NIDs whose peer this loop owns
	 * (ulnet__nid_loop): this loop posts them, and the peer's connections poll here too, so the
	 * loop that posts a send also writes it (move.c) */
	struct ulnet_list submit_q;
	uint64_t turns;              /* batches dispatched (ulnet__io_quiesced) */
	unsigned n_watchers;         /* registered watchers (stats loop_watchers) */
	struct ulnet_io *hooks;      /* registered watchers with a poll/arm hook (struct ulnet_io) */
	/* the watcher with a spin hook that input last came to: a busy-polling loop's spins read its
	 * socket (loop_wait) */
	struct ulnet_io *spin_hot;
};

struct ulnet_pending_cb {
	ulnet_event_handler handler;
	struct ulnet_event ev;
};

struct ulnet_node {
	struct ulnet_futex_lock lock;
	uint64_t lock_hold_total_ticks; /* every hold, summed (stats: lock_hold_total_ns) */
	uint64_t lock_t0;            /* when ulnet__lock took it, ulnet__lock_ticks (0: not measured) */
	uint64_t lock_hold_max_ticks; /* the longest hold (stats lock_hold_max_ns) */
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
	struct ulnet_list peers[ULNET_PEER_BUCKETS];
	unsigned n_peers, max_peers; /* max_peers: node option, bounds the table */
	bool peers_full_logged;
	struct ulnet_list idle_peers; /* peers with refs 0, oldest first */
	struct ulnet_timer peer_sweep;
	struct ulnet_stats stats;
	/* ping service */
	struct ulnet_handle ping_me;
	uint32_t ping_seq;
	/* loops (loop.c): loops[0..n_loops), node option loops */
	struct ulnet_loop loops[ULNET_LOOPS_MAX];
	unsigned n_loops;
	unsigned n_started;          /* loop threads running */
	bool stopping;
	/* busy polling (node option busy_poll_us): a loop spins on epoll_wait(0) for this long after
	 * it last found work; API calls that leave it work set its @poked instead of writing the eventfd */
	uint64_t busy_poll_ns;
	struct ulnet_timer **timers; /* min-heap on deadline (timer.c) */
	unsigned n_timers, cap_timers;
	uint64_t (*clock)(void *arg); /* NULL: CLOCK_MONOTONIC; tests inject their own */
	void *clock_arg;
	uint64_t txn_timeout_ns;     /* transaction timeout (node option transaction_timeout) */
	/* Finalized messages waiting for the loop's completion phase (msg.c). Completing one may
	 * launch others (credits) and they may finalize at once: they join the tail, never the stack. */
	struct ulnet_list done_q;
	unsigned n_done;
	/* Loops (bit i: loops[i]) an API call queued a submission on (loop->submit_q): its
	 * ulnet__unlock wakes them. */
	uint64_t submit_wake;
	/* Of those, the loops that a send the caller blocks on next went to (ulnet__get_waited_for):
	 * that call's ulnet__unlock may borrow them (loop_borrow). */
	uint64_t submit_borrow;
	bool completing;             /* inside the completion phase (ulnet__node_completing) */
	struct ulnet_pending_cb *cbs;
	size_t n_cbs, cap_cbs;
	struct ulnet_pending_cb *cbs_spare; /* the other half of the double buffer (run_callbacks) */
	size_t cap_spare;
	struct ulnet_desc_cache descs;
	/* forwarding (forward.c) */
	bool forwarding;
	unsigned fwd_bufs_free;
	struct ulnet_list fwd_waitq; /* received messages waiting for a buffer or a peer buffer credit */
	struct ulnet_mem_ranges mem_ranges; /* live ulnet_mem_alloc allocations made for this node (mem.c) */
};

/* The node lock, timed: the hold-time histogram and the longest hold in the stats (stats show -v).
 * Two reads of a cheap clock a hold (util/clock.h: the TSC where it runs at a constant rate, else
 * CLOCK_MONOTONIC), converted at release with a rate measured once per process. */
/* A hold starts (the lock just taken): ulnet__lock_hold_end times it. */
static inline void ulnet__lock_hold_begin(struct ulnet_node *node)
{
	node->lock_t0 = ulnet__lock_ticks();
}

static inline void ulnet__lock(struct ulnet_node *node)
{
	unsigned sleeps = ulnet__futex_lock(&node->lock);

	ulnet__lock_hold_begin(node);
	node->stats.lock_sleeps += sleeps;
}

/* The lock if it is free (true), timed as ulnet__lock's; a holder means work going on: no wait. */
static inline bool ulnet__trylock(struct ulnet_node *node)
{
	if (!ulnet__futex_trylock(&node->lock))
		return false;
	ulnet__lock_hold_begin(node);
	return true;
}

/* Account the current hold (the unlock follows). */
static inline void ulnet__lock_hold_end(struct ulnet_node *node)
{
	if (node->lock_t0) {
		uint64_t d = ulnet__lock_ticks() - node->lock_t0, step = ulnet__lock_ticks_per_us;
		unsigned b = 0;

		if ((int64_t)d < 0)
			d = 0; /* a clock that went back (the thread moved to a core whose TSC lags): no hold */
		/* bucket b >= 1 holds [2^(b-1), 2^b) us: most holds are under 1 us, one comparison */
		while (d >= step && b < ULNET_LOCK_HIST_BUCKETS - 1) {
			step <<= 1;
			b++;
		}
		node->stats.lock_hold_hist[b]++;
		node->lock_hold_total_ticks += d;
		if (d > node->lock_hold_max_ticks)
			node->lock_hold_max_ticks = d;
		node->lock_t0 = 0;
	}
}

static inline void ulnet__lock_release(struct ulnet_node *node)
{
	ulnet__lock_hold_end(node);
	ulnet__futex_unlock(&node->lock);
}

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

/* msg.c */
struct ulnet_msg *ulnet__msg_alloc(struct ulnet_node *node, unsigned niov);
void ulnet__msg_free(struct ulnet_msg *msg);
/* The completion phase: complete at most @budget finalized messages in FIFO order (credits back,
 * queued sends launched, MD released, event delivered). Returns true if more are waiting. Lock held. */
#define ULNET_COMPLETION_BUDGET 512u
/* Completions waiting beyond which ulnet__node_backlogged() asks LNDs to stop reading (lnd.h). */
#define ULNET_COMPLETION_BACKLOG (4u * ULNET_COMPLETION_BUDGET)
bool ulnet__completions_run(struct ulnet_node *node, unsigned budget);

/* move.c */
/* Post the sends API calls submitted to @loop (its thread, lock held). */
void ulnet__submitted_run(struct ulnet_loop *loop);
/* Wait until the loop posted every send submitted so far (tests that script an LND). Not locked. */
void ulnet__node_sync(struct ulnet_node *node);
/* Node teardown: fail what was submitted and never posted with -ESHUTDOWN. */
void ulnet__submitted_fail(struct ulnet_node *node);
int ulnet__send(struct ulnet_node *node, struct ulnet_msg *msg, const struct ulnet_process_id *target,
		void *rx_priv);

/* peer.c: credits */
struct ulnet_peer *ulnet__peer_find(struct ulnet_node *node, struct ulnet_ni *ni, const struct ulnet_nid *nid,
				    bool create);
/* Fail every message waiting for a peer credit with -ESHUTDOWN (node teardown). */
void ulnet__peers_fail_queues(struct ulnet_node *node);
void ulnet__peers_free(struct ulnet_node *node);
/* Remember what a ping reply from @nid announced, on every peer entry of that NID. Locked. */
void ulnet__peer_note_ping(struct ulnet_node *node, const struct ulnet_nid *nid, uint32_t features);
/* A message names @lp (ulnet__send) / no longer does (message freed). */
void ulnet__peer_get(struct ulnet_peer *lp);
void ulnet__peer_put(struct ulnet_node *node, struct ulnet_peer *lp);
/* 0: credits taken, send now; 1: queued; -ENOBUFS: the peer's queue is full (nothing taken). */
int ulnet__credits_take(struct ulnet_msg *msg);
/* Return the credits @msg holds and launch the messages they unblock. */
void ulnet__credits_return(struct ulnet_msg *msg);
void ulnet__post_send(struct ulnet_msg *msg);

/* ni.c */
struct ulnet_ni *ulnet__ni_for_dest(struct ulnet_node *node, const struct ulnet_nid *dest, bool *local);
bool ulnet__nid_is_local(struct ulnet_node *node, const struct ulnet_nid *nid);
void ulnet_node_primary_nid_locked(struct ulnet_node *node, struct ulnet_nid *out);
int ulnet__ni_create(struct ulnet_node *node, const struct ulnet_ni_conf *conf, struct ulnet_ni **out);
void ulnet__ni_destroy(struct ulnet_ni *ni);

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
void ulnet__loop_free(struct ulnet_node *node);
/* Wake @loop only if it sleeps (otherwise it sees the new work before it sleeps): lock held, or the
 * work was queued under the lock before. */
void ulnet__loop_wake_if_sleeping(struct ulnet_loop *loop);
/* Leader/follower on the receive side (busy polling): wait for an event on @eq until @end (ulnet__now_ns)
 * by doing the work of loop @idx, busy polling, in its place; -EAGAIN if that loop is neither busy
 * polling nor parked after a lead right now (or we are on a loop thread). Else as
 * ulnet_eq_wait(eq, 0, ev) at the end. */
int ulnet__loop_lead(struct ulnet_node *node, unsigned idx, ulnet_eq *eq, uint64_t end, struct ulnet_event *ev);
/* ulnet_get for a caller that blocks on the REPLY next (ulnet_ping): its send may borrow the loop
 * (leader/follower, loop_borrow) instead of waking it */
int ulnet__get_waited_for(ulnet_node *node, struct ulnet_handle mdh, const struct ulnet_process_id *target,
			  uint32_t portal, uint64_t match_bits, uint32_t offset);
/* True on one of @node's loop threads. */
bool ulnet__on_loop(const struct ulnet_node *node);
void ulnet__unlock(struct ulnet_node *node);
void ulnet__queue_cb(struct ulnet_node *node, ulnet_event_handler h, const struct ulnet_event *ev);

/* clock.c: the node's clock (ulnet__now_ns unless a test injects its own) */
uint64_t ulnet__node_now(const struct ulnet_node *node);
/* The same at clock-tick resolution (a few ms; never ahead of ulnet__node_now), a fifth of the cost:
 * for what counts in seconds on a per-message path (a peer's idle clock). */
uint64_t ulnet__node_now_coarse(const struct ulnet_node *node);
void ulnet__node_set_clock(struct ulnet_node *node, uint64_t (*clock)(void *arg), void *arg);

/* timer.c */
/* Run every timer due at @now; returns how many ran. */
unsigned ulnet__timers_run(struct ulnet_node *node, uint64_t now);
/* Milliseconds until the next deadline, at most @max_ms. */
int ulnet__timers_next_ms(const struct ulnet_node *node, uint64_t now, int max_ms);

/* md.c: transaction timeout */
void ulnet__md_txn_start(struct ulnet_node *node, struct ulnet_libmd *md, const struct ulnet_event *send_ev);
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

/* forward.c */
/* @hdr is for another node and forwarding is on: receive it into a router buffer (now or later). */
int ulnet__forward_parse(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from,
			 void *rx_priv);
/* ulnet__finalize of a message being forwarded. */
void ulnet__forward_finalize(struct ulnet_msg *msg, int status);
void ulnet__forward_free(struct ulnet_node *node);

/* ping.c */
int ulnet__ping_service_refresh(struct ulnet_node *node);

#endif
