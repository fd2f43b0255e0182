/* SPDX-License-Identifier: MIT */
/* The o2ib LND over the fabric layer: the state its I/O files share, and what each of them offers
 * the others (one section per file below): o2ib_lnd.c (ops table, tunables, peers, txs),
 * o2ib_rdma.c (the rendezvous, registrations, bounce buffers), o2ib_conn.c (a connection's life),
 * o2ib_cm.c (the handshake), o2ib_tx.c (sending) and o2ib_cb.c (completions). The pure parts have
 * their own headers: o2ib_wire.h, o2ib_plan.h, o2ib_conn_policy.h, o2ib_credits.h.
 * Everything runs as the owner of the NI's loop (lnd.h), one thread at a time, so nothing here locks.
 * Facts: lnet-wire.md §2.5 (messages), §4.1 (credits), §4.3 (connections), §4.4 (timeouts). */
#ifndef ULNET_O2IB_H
#define ULNET_O2IB_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include "fabric.h"
#include "lnd.h"
#include "iov.h"
#include "list.h"
#include "o2ib_conn_policy.h"
#include "o2ib_credits.h"
#include "o2ib_plan.h"
#include "o2ib_wire.h"

ULNET_LOG_SUBSYS_DECLARE(O2IB);

#define O2IB_PEER_BUCKETS 64u
#define O2IB_REAP_NS 100000000ull /* look at zombies this often while there are some */
#define O2IB_RECONNECT_LOOK_NS 100000000ull /* a peer with queued messages after its conn closed */

struct o2ib_tun {
	int provider;          /* enum o2ib_provider */
	int port;
	int peer_credits;      /* 0: the NI's peer_credits */
	int peer_credits_hiw;  /* 0: half the queue depth */
	int concurrent_sends;  /* 0: the queue depth */
	int map_on_demand;
	int timeout;           /* s */
	int keepalive;         /* s, 0 off */
	int max_frags;         /* RDMA fragments per transfer proposed and accepted */
	int reg_cache_entries; /* source registrations kept (0: one per transfer) */
	int reg_cache_mb;      /* and their bytes, MiB */
	int max_peers;         /* peers remembered at once (idle ones are forgotten first) */
	int use_privileged_port;
	int conns_per_peer;    /* connections opened to a peer that has none (1..O2IB_CONNS_PER_PEER_MAX) */
};

/* A cached source registration, local access only: a whole ulnet_mem_alloc allocation, pointed to by
 * the allocation's registration slot (dropped when the memory is freed), or an MD's memory, pointed
 * to by the MD's slot (dropped when the MD is unlinked). Least recently used first on net->reg_lru;
 * never evicted while a transfer uses it; evicted to keep the cache within its bounds. */
struct o2ib_cached_mr {
	struct ulnet_list lru;
	struct fab_mr mr;
	void **slot;
	uint64_t bytes;
	uint32_t users;
};

/* A bounce buffer (lnet-wire.md §3.6): LNET_MTU bytes, registered for local access once; a sink that
 * uses one registers it again, with remote write, for that transfer only. */
#define O2IB_BOUNCE_SIZE (1u << 20)
#define O2IB_BOUNCE_POOL 8u        /* kept for reuse; more in flight are made and freed per transfer */
struct o2ib_bounce {
	struct ulnet_list link;
	uint8_t *buf;
	struct fab_mr mr;          /* local access */
	bool pooled;               /* goes back to net->bounces when released */
};

struct o2ib_net {
	struct ulnet_ni *ni;
	struct o2ib_tun tun;
	const struct fab_provider_ops *fab;
	struct fab_dev *dev;
	struct fab_cm_id *listener;
	struct ulnet_io io;
	struct o2ib_local me;  /* nid4, incarnation, negotiation tunables */
	struct sockaddr_in addr;
	struct ulnet_list peers[O2IB_PEER_BUCKETS];
	uint32_t npeers;
	/* the one o2ib_peer_find found last: a peer is freed only by peer_forget, which clears it */
	struct o2ib_peer *last_peer;
	struct ulnet_list pending; /* accepted conns waiting for ESTABLISHED (not yet their peer's conn) */
	struct ulnet_list zombies; /* closed conns waiting for their id to go and their rxs to come back */
	bool shutting_down;
	bool in_progress, progress_again; /* o2ib_progress running / asked to go round again */
	struct ulnet_list checks;   /* conns whose send check waits for the end of the completion batch */
	uint64_t round_ns;          /* ulnet__now_coarse_ns at the start of o2ib_progress's round (o2ib_now) */
	struct ulnet_timer pending_timer; /* the earliest pending conn's accept deadline */
	struct ulnet_timer reap_timer;    /* armed while zombies wait */
	uint64_t cookies;
	struct ulnet_list reg_lru; /* struct o2ib_cached_mr, least recently used first */
	uint32_t reg_entries;
	uint64_t reg_bytes;
	struct ulnet_list bounces; /* free pooled bounce buffers */
	uint32_t nbounces;         /* pooled ones (free or in use) */
};

struct o2ib_conn;

/* A peer: its connections, its queued messages while none is up, and the active side's negotiation
 * state. It may have several connections (conns_per_peer, ours or its own): messages go round robin
 * over the established ones (o2ib_peer_conn_pick), each one receives, and an answer (PUT_ACK, the
 * DONEs) goes on the connection of the message it answers. */
struct o2ib_peer {
	struct ulnet_list link;
	struct o2ib_net *net;
	struct ulnet_nid nid;
	uint64_t nid4;
	/* its live conns (o2ib_conn.peer_link): connecting, being accepted, established; not closing.
	 * o2ib_conn_set_state keeps it and the two counts below */
	struct ulnet_list conns;
	uint32_t nup;               /* ESTABLISHED ones */
	uint32_t connecting;        /* ACTIVE_CONNECT ones */
	struct ulnet_list txq;      /* struct o2ib_tx waiting for a connection */
	struct o2ib_active act;     /* the active side across attempts */
	uint16_t last_version;      /* 0 = never connected */
	uint64_t last_stamp;        /* the peer's incarnation as last seen */
	uint32_t races;             /* CONN_RACE rejects we sent it */
	uint32_t accepting;         /* its passive conns waiting for ESTABLISHED: no active connect meanwhile */
	uint32_t nconns;            /* conns naming it (any state, zombies too): it stays while > 0 */
	uint64_t busy_ns;           /* last time it had a conn or a queued message (idle since then) */
	uint64_t retry_at_ns;       /* RETRY_LATER: reconnect after this */
	struct ulnet_timer timer;   /* its next deadline (o2ib_lnd.c: peer_timer_fire) */
	struct ulnet_peer_limits limits; /* negotiated, for lnd_query_peer */
	bool have_limits;
	struct ulnet_peer_rdma_stats stats;
};

/* INIT: allocated, not yet connecting nor accepted (a calloc'd conn). */
enum o2ib_conn_state { O2IB_CONN_INIT = 0, O2IB_CONN_ACTIVE_CONNECT, O2IB_CONN_PASSIVE_WAIT, O2IB_CONN_ESTABLISHED,
		       O2IB_CONN_CLOSING };

/* The source side of one transfer as o2ib_plan_source planned it: the WRITEs as they are posted. */
struct o2ib_xfer {
	struct fab_send_wr *wrs;
	struct fab_sge *sges;
	uint32_t nwrs, next;        /* WRs; the first not yet posted */
	uint32_t room;              /* window: send-queue slots one window may use, its SEND included */
	struct fab_send_wr wr1;     /* wrs and sges of a one-WR, one-SGE transfer (the usual) point here */
	struct fab_sge sge1;
};

/* One queued or posted message. A tx that expects an answer (PUT_REQ, PUT_ACK, GET_REQ) sits on
 * its conn's waitq from its post until the answer comes, and is freed once both the answer and its
 * SEND completion are in. */
struct o2ib_tx {
	struct ulnet_list link;     /* a send queue, or conn->waitq */
	struct ulnet_msg *lntmsg;   /* finalized when the tx is done (NULL: NOOP, or handed on) */
	struct ulnet_msg *lntmsg2;  /* GET_REQ: the initiator's REPLY */
	uint64_t deadline_ns;       /* ulnet__now_coarse_ns + timeout (s): a tick early at most */
	uint64_t cookie;            /* the answer names it */
	bool waiting;               /* on waitq */
	int slot;                   /* send slot holding it, or -1 */
	int status;                 /* what the lntmsgs get when done */
	struct fab_mr mr;           /* the message's memory (its MD's registration, or one for this tx) */
	bool mr_ok;                 /* mr is this tx's own: deregister when done */
	struct o2ib_xfer *xfer;     /* source side: the planned WRITEs, posted in windows before the SEND */
	struct o2ib_bounce *bounce; /* the transfer goes through this bounce buffer */
	struct o2ib_cached_mr *cmr; /* the cached registration mr comes from (in use while set) */
	bool mr_va;                 /* mr holds a whole allocation from mr_va_base: bytes at their addresses */
	uintptr_t mr_va_base;
	struct iovec *sink_iov;     /* a bounced sink: where the bytes go when the peer says it is done */
	unsigned sink_niov;
	uint32_t sink_nob;
	bool advertise;             /* GET_REQ: describe the sink once the connection (its max_frags) is known */
	struct o2ib_msg msg;        /* packed when posted: credits, version and stamps are the conn's then */
	uint8_t payload[O2IB_IMMEDIATE_MAX_PAYLOAD]; /* msg.u.immediate.payload points here */
	struct o2ib_xfer xfer_room; /* xfer points here when set (filled then: not cleared by o2ib_tx_new) */
};

/* A receive buffer: one 4096-byte slot of the conn's receive area. */
struct o2ib_rx {
	struct o2ib_conn *conn;
	uint32_t idx;
	bool held;                  /* handed to the core, waiting for lnd_recv */
	struct o2ib_msg msg;
};

struct o2ib_conn {
	struct ulnet_list link;     /* net->pending while PASSIVE_WAIT, net->zombies once closed */
	struct o2ib_net *net;
	struct o2ib_peer *peer;     /* NULL while a passive conn has not been matched to a peer */
	struct ulnet_list peer_link; /* peer->conns while not INIT nor CLOSING (on_peer) */
	bool on_peer;
	struct o2ib_active act;     /* ACTIVE_CONNECT: what its CONNREQ proposed (the CONNACK is checked on it) */
	uint64_t tx_msgs, rx_msgs;  /* messages other than NOOPs posted and received on it */
	uint32_t max_msg_size;      /* the peer's ibcp_max_msg_size (4096 at most) */
	struct fab_cm_id *id;
	struct fab_qp *qp;
	enum o2ib_conn_state state;
	int close_status;
	uint16_t version, queue_depth, max_frags;
	uint64_t peer_stamp;
	/* credits (lnet-wire.md §4.1) */
	int credits, outstanding_credits, reserved_credits, nsends_posted, noops_posted;
	/* the NOOP high-water mark and the sends posted at once: computed once, by o2ib_conn_established, as
	 * nothing they come from changes after it (queue_depth is negotiated before ESTABLISHED, and a
	 * renegotiation is a new conn; nslots is sized with the QP; lnd tunables are read at NI start) */
	int hiw, max_sends;
	struct ulnet_list txq;      /* credit queue (IMMEDIATE) */
	struct ulnet_list txq_nocred;
	struct ulnet_list waitq;    /* txs waiting for the peer's answer */
	uint32_t nrx, nslots, rx_held, sq_size, sq_used;
	uint32_t xfers_stalled;     /* slotted transfers whose next window waits for send-queue room */
	uint32_t *slot_wrs;         /* send-queue WRs a slot's completion frees (its WRITEs + the SEND) */
	struct fab_send_wr *wrs;    /* one transfer's chain being built (O2IB_RD_FRAGS_CAP + 1) */
	struct fab_sge *sges;
	uint8_t *rx_area, *tx_area;
	struct fab_mr rx_mr, tx_mr;
	bool rx_mr_ok, tx_mr_ok;
	struct o2ib_rx *rxs;
	struct o2ib_tx **slots;     /* posted tx per send slot, NULL = free */
	/* every slot below it is taken (post_tx looks from there): post_tx raises it past the slots it
	 * finds taken and the one its post_window takes (the only taking of a slot), handle_wc lowers it
	 * to a slot it frees, o2ib_conn_destroy_id empties them all and sets 0 */
	uint32_t slot_low;
	uint64_t last_send_ns;      /* ulnet__now_coarse_ns: the keepalive counts in seconds */
	uint64_t accept_deadline_ns; /* PASSIVE_WAIT: the peer must complete the handshake by then */
	struct ulnet_list check_link; /* net->checks while check_due */
	bool check_due;             /* a send check waits (o2ib_conn_check_sends inside o2ib_progress) */
	bool destroyed;             /* id destroyed: no completion follows */
	/* a stall fault rule (o2ib_fault.c): nothing posted, received messages kept unread; timeouts run */
	bool stalled;
	uint64_t stall_end_ns;      /* ulnet__now_ns; 0: until rule @stall_id is deleted */
	uint64_t stall_id;
	uint64_t fault_seen;        /* the newest stall rule that judged this conn */
	uint32_t *stall_rx;         /* receives that completed meanwhile: ring index, length (2 x nrx) */
	uint32_t n_stall_rx;
};

/* wr_id of a SEND: O2IB_WR_TX | its send slot; of a receive: its ring index */
#define O2IB_WR_TX (1ull << 32)
#define O2IB_WR_RDMA (1ull << 33) /* an unsignalled WRITE of a slot's transfer (seen only on errors) */

static inline const struct fab_provider_ops *o2ib_fab(const struct o2ib_conn *c) { return c->net->fab; }

/* The coarse clock for deadlines and keepalives (which count in seconds): inside o2ib_progress, the
 * time its round started (a round handles at most 16 completions), read once instead of at every
 * send check, post and queueing; outside, read now. */
static inline uint64_t o2ib_now(const struct o2ib_net *net)
{
	return net->in_progress ? net->round_ns : ulnet__now_coarse_ns();
}

/* o2ib_lnd.c: the ops table, tunables, peers and txs */
/* The peer of @nid; with @create, a new one if unknown. NULL: unknown, or (@create) no memory or the
 * table is at max_peers with no idle peer to forget (logged). */
struct o2ib_peer *o2ib_peer_find(struct o2ib_net *net, const struct ulnet_nid *nid, bool create);
struct o2ib_tx *o2ib_tx_new(struct o2ib_net *net, uint8_t type);
/* A tx that was never posted nor finished (o2ib_tx_done frees the others). */
void o2ib_tx_free(struct o2ib_net *net, struct o2ib_tx *tx);
void o2ib_tx_done(struct o2ib_net *net, struct o2ib_tx *tx, int status);
const char *o2ib_nid_str(const struct ulnet_nid *nid, char *buf, size_t len);
/* @nid's IPv4 socket address at @port, through the core's one conversion (ulnet__nid_sockaddr).
 * 0; -EAFNOSUPPORT for a NID that is not IPv4 (o2ib addresses are). */
int o2ib_nid_sockaddr(const struct ulnet_nid *nid, uint16_t port, struct sockaddr_in *out);
/* Tests only (NULL otherwise): an NI starting while this is set uses wrap(the provider ops it chose),
 * so a test can decorate the provider, e.g. record what post_send is given. The provider's table is
 * const and chosen inside the NI's startup; this seam is read there, once per NI, never on the data
 * path. Set and read atomically. */
extern const struct fab_provider_ops *(*o2ib_test_fab_wrap)(const struct fab_provider_ops *chosen);

/* o2ib_rdma.c: the rendezvous (PUT_REQ/PUT_ACK/PUT_NAK/PUT_DONE, GET_REQ/GET_DONE), the source side's
 * WRITEs, registrations and bounce buffers */
int o2ib_mem_reg(struct o2ib_net *net, const struct iovec *iov, unsigned niov, uint32_t nob, unsigned access,
		 struct fab_mr *out);
int o2ib_send_rdma(struct o2ib_net *net, struct o2ib_peer *peer, struct ulnet_msg *msg);
int o2ib_recv_rdma(struct o2ib_net *net, struct o2ib_rx *rx, struct ulnet_msg *msg, const struct iovec *iov,
		   unsigned niov, uint32_t mlen);
void o2ib_rx_answer(struct o2ib_conn *conn, struct o2ib_rx *rx);
uint64_t o2ib_next_cookie(struct o2ib_net *net);
void o2ib_md_unlinked(struct ulnet_ni *ni, const struct ulnet_lnd_md *md, void *reg);
void o2ib_mem_freed(struct ulnet_ni *ni, void *reg);
/* Free what @x allocated (its WR and SGE arrays beyond one of each); @x itself is a tx's xfer_room. */
void o2ib_xfer_free(struct o2ib_xfer *x);
/* The next window of @x (WRs from x->next, wr_id @wr_id, chained, the last one's next NULL): the count
 * (0: only the SEND is left), *@final when the SEND goes with it. o2ib_xfer_posted() advances. */
uint32_t o2ib_xfer_window(struct o2ib_xfer *x, uint64_t wr_id, struct fab_send_wr **first, struct fab_send_wr **last,
			  bool *final);
void o2ib_xfer_posted(struct o2ib_xfer *x, uint32_t n);
/* Free what a tx holds for its transfer (xfer, bounce, sink copy list). */
void o2ib_tx_release(struct o2ib_net *net, struct o2ib_tx *tx);
/* GET_REQ queued on @conn: describe its sink with the conn's max_frags. 0, or the tx is done (failed). */
int o2ib_tx_advertise(struct o2ib_conn *conn, struct o2ib_tx *tx);
void o2ib_bounce_pool_free(struct o2ib_net *net);
/* Drop every cached registration (shutdown; the core's slots are emptied). */
void o2ib_reg_cache_free(struct o2ib_net *net);

/* o2ib_conn.c: a connection's life (allocation, QP and rings, close, zombies) */
/* A new conn of @peer (counted in peer->nconns), no id nor QP yet; NULL: no memory. */
struct o2ib_conn *o2ib_conn_alloc(struct o2ib_net *net, struct o2ib_peer *peer);
/* The QP, its receive ring (posted) and send slots; *@depth may be lowered to what the device holds. */
int o2ib_conn_setup_qp(struct o2ib_conn *conn, uint16_t *depth);
/* Free a conn whose id is gone (or never was) and whose receives are all back. */
void o2ib_conn_free(struct o2ib_conn *conn);
/* Destroy the id and QP: no completion follows, so the posted txs are completed here. */
void o2ib_conn_destroy_id(struct o2ib_conn *conn);
/* Fail the queues, disconnect, and leave the conn on net->zombies. @why: logged as an error. */
void o2ib_conn_close(struct o2ib_conn *conn, int status, const char *why);
/* Connecting to @peer failed: fail its queued messages and tell the core. */
void o2ib_peer_failed(struct o2ib_peer *peer, int status);
/* One attempt of several failed: o2ib_peer_failed once none is up nor under way. */
void o2ib_peer_attempt_failed(struct o2ib_peer *peer, int status);
/* The next established conn of @peer, round robin (as o2iblnd picks among ibp_conns), or NULL. */
struct o2ib_conn *o2ib_peer_conn_pick(struct o2ib_peer *peer);
/* The first established conn of @peer (no rotation), or NULL. */
struct o2ib_conn *o2ib_peer_conn_up(const struct o2ib_peer *peer);
/* Close every established conn of @peer (@stale_only: those o2ib_conn_stale says are stale against
 * @keep, which stays). Returns how many. */
uint32_t o2ib_peer_close_conns(struct o2ib_peer *peer, const struct o2ib_conn *keep, bool stale_only, int status);
/* The peer's NID, or "(unknown peer)". */
const char *o2ib_conn_peer_str(const struct o2ib_conn *conn, char *buf, size_t len);
/* "ESTABLISHED", ... */
const char *o2ib_conn_state_name(enum o2ib_conn_state s);
/* Every state change goes through here (logged at DEBUG). */
void o2ib_conn_set_state(struct o2ib_conn *conn, enum o2ib_conn_state next);
void o2ib_reap_zombies(struct o2ib_net *net);
/* Close the accepted connections whose peer did not complete the handshake within the timeout (a
 * peer that died between its CONNREQ and its RTU would hold a QP and block its reconnects for good). */
/* Close the pending conns past their accept deadline; the earliest deadline left, or UINT64_MAX. */
uint64_t o2ib_pending_tick(struct o2ib_net *net, uint64_t now_ns);

/* o2ib_cm.c: the handshake (lnet-wire.md §4.3) */
int o2ib_connect(struct o2ib_peer *peer);
/* The handshake is complete (ESTABLISHED, or a first receive on a passive conn): the conn takes the
 * peer's queue and starts sending. */
void o2ib_conn_established(struct o2ib_conn *conn);
void o2ib_cm_event(struct o2ib_net *net, const struct fab_cm_event *ev);

/* o2ib_tx.c: sending (lnet-wire.md §4.1) */
void o2ib_peer_queue(struct o2ib_peer *peer, struct o2ib_tx *tx);
void o2ib_conn_queue(struct o2ib_conn *conn, struct o2ib_tx *tx);
/* Post what the queues and credits allow. Inside o2ib_progress the check waits for the end of the
 * completion batch (o2ib_tx.c, Deferred send checks); outside it runs now. */
void o2ib_conn_check_sends(struct o2ib_conn *conn);
/* Run the send checks that wait (o2ib_progress, after each batch). */
void o2ib_run_checks(struct o2ib_net *net);
void o2ib_conn_tick(struct o2ib_conn *conn, uint64_t now_ns);
/* The earliest deadline o2ib_conn_tick looks at (a queued or awaited message, a posted send, the
 * keepalive), or UINT64_MAX. */
uint64_t o2ib_conn_next_deadline(const struct o2ib_conn *conn);
/* Arm @peer's timer for @deadline if that is earlier than where it is. */
void o2ib_peer_timer_by(struct o2ib_peer *peer, uint64_t deadline);

/* o2ib_fault.c: the LND-level fault rules (docs/faults.md) */
/* A CONNREQ we would accept from @nid4: a reject rule that acts turns @d into its reject. */
void o2ib_fault_reject(struct o2ib_net *net, uint64_t nid4, struct o2ib_passive_decision *d);
/* A stall rule's look at an ESTABLISHED conn: stall it, or (stalled) let it go when its rule is gone
 * or its latency is over at @now_ns. */
void o2ib_conn_fault_look(struct o2ib_conn *conn, uint64_t now_ns);
/* A stalled conn's receive completion: kept, handled when the stall ends. */
void o2ib_conn_stall_rx(struct o2ib_conn *conn, uint32_t idx, uint32_t len);
/* lnd_fault_changed: every peer's established conn looked at. */
void o2ib_fault_changed(struct ulnet_ni *ni);

/* o2ib_cb.c: completions */
/* A received message of @len bytes in @rx: checked and handed on. */
void o2ib_handle_rx(struct o2ib_conn *conn, struct o2ib_rx *rx, uint32_t len);
/* Post receive buffer @i of the ring. */
int o2ib_post_rx(struct o2ib_conn *conn, uint32_t i);
void o2ib_rx_repost(struct o2ib_rx *rx, bool credit);
/* @provider: call the provider's progress first (the device fd was readable); false: the loop hook's
 * poll found completions or events (the provider's poll did the rest). */
void o2ib_progress(struct o2ib_net *net, bool provider);

#endif
