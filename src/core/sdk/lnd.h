/* SPDX-License-Identifier: MIT */
/* The LND SDK: the ops table an LND implements and what an LND may call in the core. Never installed.
 *
 * Threading: every NI lives on one loop of the node (its home), and every op, io callback and timer
 * of that NI runs as that loop's owner: on the loop's thread, or on an API thread that entered the
 * loop (ulnet__loop_enter in the core: lnd_startup, lnd_shutdown, the query ops, lnd_md_unlinked).
 * One thread at a time, and no lock of the core's is held that another loop needs. An LND therefore
 * needs no locks of its own as long as its state is per NI, must never block, and must never call
 * back into the public API. Watchers and timers an LND starts belong to the loop it runs on.
 *
 * Completions are deferred: ulnet__finalize() only queues the message. The loop's completion phase
 * (after io callbacks and timers, a bounded number per turn) returns its credits, launches the
 * messages those credits unblock (lnd_send), releases the MD and delivers the event. So lnd_send is
 * never called from inside ulnet__finalize, and an LND may finalize from anywhere (its own lnd_send,
 * lnd_recv, an io callback, lnd_shutdown) without guarding against re-entry through the core. What an
 * LND finalizes on an API thread that entered its loop is completed when that thread leaves the loop;
 * an LND never finalizes from a thread of its own.
 * ulnet__parse() may still call lnd_recv() and, for a GET, lnd_send() (the REPLY) before it returns. */
#ifndef ULNET_LND_H
#define ULNET_LND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include "ulnet/node.h"
#include "ulnet/rdma.h"
#include "ulnet/tunable.h"
#include "hdr.h"
#include "clock.h"
#include "log.h"

struct ulnet_ni;
struct ulnet_msg;

/* ---- The LND contract beyond send and receive (RDMA LNDs, routers) ----
 *
 * Rendezvous receive. An LND whose peers move large payloads by RDMA hands a GET that arrived as an
 * RDMA request (o2iblnd's GET_REQ carrying the initiator's sink descriptor) to ulnet__parse_rdma
 * instead of ulnet__parse. On a match the core builds no REPLY header and sends nothing: it calls
 * lnd_recv once with the REPLY message (msg != NULL, ulnet__msg_is_reply() true), @iov the matched
 * MD's source fragments and @mlen the reply length. The LND moves the data itself (RDMA write, then
 * GET_DONE) and calls ulnet__finalize(reply, status). No match: lnd_recv(msg NULL) as for any drop,
 * and the LND answers GET_DONE(-ENODATA).
 *
 * Out-of-band REPLY (the initiator's side). When an LND sends a GET as an RDMA request, it calls
 * ulnet__create_reply_msg(ni, get) before the GET can complete; that message carries the initiator's
 * REPLY event. When GET_DONE arrives, ulnet__set_reply_len(reply, nob) records how many bytes landed
 * (the event's mlength and rlength) and ulnet__finalize(reply, status) delivers the event. A REPLY
 * message that is never finalized is a leak; finalize it with an error when the GET fails.
 *
 * Fragments at send time. ulnet__msg_view(msg)->rdma_iov describes the memory the peer may access:
 * a PUT's (or REPLY's) source fragments, and a GET's sink fragments (the whole MD; payload_length of
 * a GET stays 0 and iov is empty). An LND that ships payloads inline ignores it.
 *
 * The MD's memory for registration. ulnet__msg_md(msg, &m) gives the fragment list of the message's
 * MD with its form (contiguous, iovec, or kiov whose fragments never cross a node page), and a slot
 * (*m.lnd_reg) the LND may fill with its registration. The core calls lnd_md_unlinked(ni, md memory,
 * reg) exactly once when an MD whose slot is set is freed (unlinked, or exhausted, with no message
 * left on it), as the owner of the NI's loop, before the event that reports it unlinked reaches the
 * application, so no registration outlives the user's memory; and for every slot an NI holds just
 * before its lnd_shutdown. A filled slot belongs to the NI that claimed it first (another NI gets
 * m.lnd_reg NULL and must register per message).
 *
 * Delayed and eager receive. The core may not be able to receive a message at once (the router's
 * case: no buffer, or the sending peer used up its peer_buffer_credits). It then keeps the message
 * and calls lnd_eager_recv(ni, rx_priv, msg, &new_priv) if the LND has it: the LND takes the payload
 * out of its receive resources (copies it, returns the rx credit, reposts the buffer) and returns a
 * new rx_priv that lnd_recv will be given later. Without lnd_eager_recv, the message keeps its
 * receive resources until lnd_recv is called (the LND must then stop reading that connection).
 * Either way lnd_recv is called exactly once, when a buffer and a credit are free.
 *
 * Forwarding. With routing enabled (ulnet_routing_set), a message for a node on another net is
 * received into a router buffer, charged to its sender's peer_buffer_credits, then sent on to the
 * next hop with its header unchanged; the buffer and credit come back when that send completes.
 * The LND sends every message to v.target, its next hop: the destination itself, or the gateway of a
 * route (the header's dest_nid then differs: o2ib sends such a GET IMMEDIATE, as o2iblnd does).
 *
 * Peers. lnd_query_peer reports a peer's negotiated limits (ulnet_peer_limits_get for tools and the
 * planner); -ENOENT when the LND has no state for it. ulnet__peer_down(ni, nid, status) tells the
 * core that a peer is gone: every message still waiting for a credit to it is finalized with
 * @status (messages the LND owns are the LND's to fail), and peer show says "down" until the
 * peer sends anything again. */
enum ulnet_frag_form { ULNET_FRAG_CONTIG, ULNET_FRAG_IOVEC, ULNET_FRAG_KIOV };
struct ulnet_lnd_md {
	enum ulnet_frag_form form;
	const struct iovec *frags; /* normalised; KIOV: each within one node page */
	unsigned nfrags;
	uint32_t length;           /* bytes */
	uint32_t page_size;        /* the node's page size (KIOV) */
	void **lnd_reg;            /* the MD's registration slot (*lnd_reg NULL until filled); NULL: another NI's */
};

/* Memory from ulnet_mem_alloc has a lifetime the core knows, so an LND may register a whole allocation
 * once and use that for every transfer inside it, whatever MDs come and go over it (a buffer reused
 * with a new MD per transfer, as selftest and Lustre do). ulnet__mem_slot(ni, iov, niov, nob, &m):
 * the allocation holding the first @nob bytes of @iov, and its registration slot (*m.lnd_reg NULL
 * until filled); -ENOENT (not one live allocation of this node: register per MD or per message),
 * -EBUSY (another NI's registration fills the slot). As the NI's loop's owner. The core calls
 * lnd_mem_freed(ni, reg) exactly once for a filled slot: in ulnet_mem_free before the memory goes,
 * or just before the NI's lnd_shutdown. A transfer still using the memory then is the user's bug;
 * the LND may keep the registration until that transfer is done. */
struct ulnet_lnd_mem {
	uintptr_t base;
	size_t len;
	void **lnd_reg;
};
int ulnet__mem_slot(struct ulnet_ni *ni, const struct iovec *iov, unsigned niov, uint64_t nob,
		    struct ulnet_lnd_mem *out);

struct ulnet_lnd_ops {
	uint32_t lnd_type;   /* wire LND number (ULNET_LND_SOCK, ...) */
	const char *lnd_name; /* "tcp", "o2ib", "lo" */
	size_t lnd_ni_size;  /* private bytes the core allocates per NI (ulnet__ni_priv) */
	/* Bring the NI up: parse lnd tunables (ulnet__ni_conf), open sockets, set the NID if the
	 * configuration gave only interfaces (ulnet__ni_set_nid). 0 or -errno; on error nothing is left
	 * to undo. An unknown lnd tunable is -EINVAL with a log line naming it. */
	int (*lnd_startup)(struct ulnet_ni *ni);
	/* Close everything, finalize every message the LND owns with -ESHUTDOWN, free private state. */
	void (*lnd_shutdown)(struct ulnet_ni *ni);
	/* Transmit @msg: header msg->hdr, payload msg->iov[0..niov) (msg->hdr.payload_length bytes).
	 * @rx_priv: NULL, except for a REPLY/ACK the core builds while handling a received message, where it
	 * is that message's rx_priv. 0: the LND owns @msg and calls ulnet__finalize(msg, rc) exactly once,
	 * later or before returning. <0: nothing happened; the caller still owns @msg. Never blocks.
	 * Called from API calls, ulnet__parse (REPLY/ACK) and the completion phase; never nested in a
	 * ulnet__finalize of this LND. */
	int (*lnd_send)(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg);
	/* Called exactly once for every message ulnet__parse() accepted from this LND, possibly before
	 * ulnet__parse returns. Deliver the first @mlen payload bytes into @iov[0..niov) and discard the
	 * rest up to @rlen. @msg == NULL means drop: discard all @rlen bytes. When the payload is in, call
	 * ulnet__finalize(msg, 0) (or with an error); for msg == NULL nothing is finalized.
	 * 0, or <0 if the receive cannot even start (the core finalizes @msg with that error). */
	int (*lnd_recv)(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, const struct iovec *iov,
			unsigned niov, uint32_t mlen, uint32_t rlen);
	/* The keys of `lnd tunables` (may be empty). The core parses the configuration against this table
	 * before lnd_startup (an unknown key or a bad value fails ulnet_ni_add with a log line naming it),
	 * the LND reads the values with ulnet__ni_lnd_tunable, and tools print them from the table. */
	const struct ulnet_tunable *lnd_tunables;
	size_t lnd_n_tunables;
	/* Optional (see the contract above): release a delayed message's receive resources. 0 and
	 * *new_priv set, or <0: keep them (the message still waits). */
	int (*lnd_eager_recv)(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, void **new_priv);
	/* Optional: the MD whose slot holds @reg is being freed; drop the registration now. */
	void (*lnd_md_unlinked)(struct ulnet_ni *ni, const struct ulnet_lnd_md *md, void *reg);
	/* Optional: the ulnet_mem_alloc memory whose slot holds @reg is being freed (ulnet__mem_slot). */
	void (*lnd_mem_freed)(struct ulnet_ni *ni, void *reg);
	/* Optional: the negotiated limits of peer @nid. 0, -ENOENT (no state for it). */
	int (*lnd_query_peer)(struct ulnet_ni *ni, const struct ulnet_nid *nid, struct ulnet_peer_limits *out);
	/* Optional: the RDMA data-path counters of peer @nid. 0, -ENOENT (no state for it). */
	int (*lnd_peer_rdma_stats)(struct ulnet_ni *ni, const struct ulnet_nid *nid, struct ulnet_peer_rdma_stats *out);
	/* Optional (an LND over an RDMA fabric): its provider and device limits in force. Called with the
	 * node's lock held, never nested in another LND call. */
	void (*lnd_fabric_info)(struct ulnet_ni *ni, struct ulnet_ni_fabric *out);
	/* Optional: @len bytes aligned to @align that this LND moves fastest (ulnet_mem_alloc), or NULL
	 * (then heap memory is used). *@free_fn frees it; it must not need the NI, which may be gone by
	 * then. Called as the owner of the NI's loop (ulnet_mem_alloc enters it; router buffers are
	 * made on it). */
	void *(*lnd_mem_alloc)(struct ulnet_ni *ni, size_t align, size_t len, void (**free_fn)(void *p, size_t len));
	/* Optional: a stall fault rule was added or deleted (fault_lnd.h): judge the live connections
	 * again (ulnet__fault_lnd with each one's @seen) and let go of those whose rule is gone
	 * (ulnet__fault_lnd_alive). As the owner of the NI's loop. */
	void (*lnd_fault_changed)(struct ulnet_ni *ni);
};

/* Timers: a deadline on the node's clock and the function the loop that armed it calls, as its owner,
 * once it has passed (after the io callbacks of that turn). Intrusive: arming allocates nothing except when
 * the node's heap grows. A timer is unarmed when its function runs; the function may arm it again or
 * free its object. Cancel a timer before freeing the memory it lives in (cancel is idempotent). An LND
 * arms one per object that has deadlines (a connection, a peer), at the earliest of them, and looks
 * again when it fires: no periodic walk over every object. */
struct ulnet_timer_heap;
struct ulnet_timer {
	uint64_t deadline;           /* node clock, ns */
	unsigned idx;                /* heap position + 1; 0 = not armed */
	struct ulnet_timer_heap *heap; /* core: the heap it is armed on */
	void (*fn)(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now);
};
/* Arm (or move) @t to @deadline, a ulnet__node_now reading. -ENOMEM only when the heap cannot grow
 * (logged). */
int ulnet__timer_arm(struct ulnet_node *node, struct ulnet_timer *t, uint64_t deadline);
/* The same with @deadline a ulnet__now_ns reading (the clock LNDs stamp their state with), and only if
 * that is earlier than where @t is armed now (an unarmed @t is armed): cheap enough for every event
 * that may bring a deadline closer. */
int ulnet__timer_arm_by(struct ulnet_node *node, struct ulnet_timer *t, uint64_t deadline);
void ulnet__timer_cancel(struct ulnet_node *node, struct ulnet_timer *t);
/* Where an object's timer goes next: the earliest of its @n candidate deadlines that is after @now
 * (one already past was acted on when the timer fired), and never later than @look (its next look). */
static inline uint64_t ulnet__deadline_next(uint64_t now, uint64_t look, const uint64_t *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (c[i] > now && c[i] < look)
			look = c[i];
	return look;
}

/* Make an LND that is not built into the library (a test's LND) available by its name; call it
 * before any node opens (no lock). 0, -EINVAL for an incomplete ops table, -EEXIST when the type is
 * taken. Not exported from libulnet.so: this SDK is not a stable ABI, and an LND is built into the
 * library (a directory under src/lnd/ that adds itself to src/lnd/meson.build's lnd_builtin). */
int ulnet__lnd_register(const struct ulnet_lnd_ops *ops);
/* The built-in LNDs, NULL-terminated (generated: lnd_builtin.c). */
extern const struct ulnet_lnd_ops *const ulnet__lnd_builtin[];

/* What an LND reads from its message. Everything else in struct ulnet_msg is the core's. */
struct ulnet_msg_lnd_view {
	struct ulnet_hdr hdr;
	struct ulnet_process_id target; /* next hop process */
	const struct iovec *iov;
	unsigned niov;
	const struct iovec *rdma_iov; /* PUT/REPLY: source fragments; GET: sink fragments (whole MD) */
	unsigned rdma_niov;
	uint32_t rdma_len;            /* bytes in rdma_iov */
};
const struct ulnet_msg_lnd_view *ulnet__msg_view(const struct ulnet_msg *msg);
/* Complete @msg once with @status (0 or -errno). Only queues it for the loop's completion phase:
 * never calls back into the LND, never frees @msg before returning. After this call the LND must not
 * touch @msg again (it is freed in the completion phase). Callable from any LND context. */
void ulnet__finalize(struct ulnet_msg *msg, int status);

/* Hand a received header to the core. @from: the NID the message came from (last hop).
 * 0: accepted or dropped; lnd_recv is (or was, before this returns) called exactly once.
 * <0 (-EPROTO): the message is bad (logged); lnd_recv is NOT called; the LND closes the connection. */
int ulnet__parse(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from, void *rx_priv);

/* Rendezvous receive of a GET (see the contract above). Same return values as ulnet__parse. */
int ulnet__parse_rdma(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from,
		      void *rx_priv);
/* true for the REPLY message lnd_recv gets after ulnet__parse_rdma. */
bool ulnet__msg_is_reply(const struct ulnet_msg *msg);
/* The initiator's REPLY message for @get (a GET this LND is sending). NULL: no memory, or @get has no
 * MD; the LND then fails the GET. */
struct ulnet_msg *ulnet__create_reply_msg(struct ulnet_ni *ni, struct ulnet_msg *get);
/* Bytes that arrived for @reply (capped at the MD length). */
void ulnet__set_reply_len(struct ulnet_msg *reply, uint32_t len);
/* The memory of @msg's MD. 0, or -ENOENT (no MD: an ACK, a drop). */
int ulnet__msg_md(struct ulnet_msg *msg, struct ulnet_lnd_md *out);
/* Peer @nid on @ni is gone: fail what waits for a credit to it with @status (<0). */
void ulnet__peer_down(struct ulnet_ni *ni, const struct ulnet_nid *nid, int status);
/* Routing on or off with @buffers in each router buffer pool (the contract tests' shortcut). */
void ulnet__node_set_forwarding(struct ulnet_node *node, bool on, unsigned buffers);

/* NI accessors. */
void *ulnet__ni_priv(struct ulnet_ni *ni);
struct ulnet_node *ulnet__ni_node(struct ulnet_ni *ni);
const struct ulnet_nid *ulnet__ni_nid(const struct ulnet_ni *ni);
void ulnet__ni_set_nid(struct ulnet_ni *ni, const struct ulnet_nid *nid);
const struct ulnet_ni_conf *ulnet__ni_conf(const struct ulnet_ni *ni);
uint32_t ulnet__ni_peer_timeout(const struct ulnet_ni *ni);
uint32_t ulnet__ni_peer_credits(const struct ulnet_ni *ni);
uint32_t ulnet__node_page_size(const struct ulnet_node *node);
/* @nid (an IPv4 or IPv6 NID) as a socket address with @port. 0, or -EAFNOSUPPORT for other NIDs. */
int ulnet__nid_sockaddr(const struct ulnet_nid *nid, uint16_t port, struct sockaddr_storage *ss, socklen_t *len);
/* A well-mixed hash of @nid for an LND's peer table (take it modulo the bucket count). */
uint32_t ulnet__nid_hash(const struct ulnet_nid *nid);
/* True while many finalized messages wait for the completion phase. An LND reading a socket stops
 * reading (and lets the loop turn) while this holds: each message parsed may allocate a reply or an
 * event, so reading on would let a peer that sends faster than we complete grow our memory. */
bool ulnet__node_backlogged(const struct ulnet_node *node);
/* True while lnd_send is called from the completion phase (credits came back). Many sends may follow
 * at once: a socket LND may queue and write them together (one writev) on its next io turn. */
bool ulnet__node_completing(const struct ulnet_node *node);

/* Descriptors an LND allocates per message (tx, NOOP) from its loop's free lists, zeroed; give the
 * same @size back. Counted in the node's desc_gets / desc_heap_allocs. _hdr zeroes only
 * the first @hdr bytes, for a descriptor whose tail (a fragment array) the caller writes whole:
 * clearing 4 KiB of fragment room per 1 MiB kiov MD showed in the copying node's profile. */
void *ulnet__desc_get(struct ulnet_node *node, size_t size);
void *ulnet__desc_get_hdr(struct ulnet_node *node, size_t size, size_t hdr);
void ulnet__desc_put(struct ulnet_node *node, void *p, size_t size);

/* Io watchers on the epoll set of the loop the LND runs on (its NI's). The callback runs as that
 * loop's owner.
 * ulnet__io_start may be called again to change @events; ulnet__io_stop is idempotent and must be
 * called before closing the fd. */
struct ulnet_io;
typedef void (*ulnet_io_cb)(struct ulnet_io *io, uint32_t revents);
struct ulnet_io {
	int fd;
	uint32_t events; /* EPOLLIN | EPOLLOUT ... currently registered, 0 = not registered */
	ulnet_io_cb cb;
	void *data;
	struct ulnet_io *kick_next; /* core: on its loop's kicked list */
	uint32_t kick_events;       /* core: the events the kicks asked for */
	bool kicked;
	unsigned loop;              /* core: the loop that runs the callback (the one that started it) */
	uint64_t stop_turn;         /* core: its loop's turn when it was last stopped */
	/* Optional loop hook (set both or neither, before ulnet__io_start), for a source that can be
	 * looked at in user space (a provider's completion queue and shared-memory rings). As the owner.
	 * poll: does the source have work for the callback? Called by a busy-polling loop at every turn
	 * and on every spin (never by a loop that does not busy poll); never a system call; true: the
	 * callback runs with ULNET_IO_POLLED in the next turn. arm: the loop is about to sleep in epoll_wait: make the fd readable for anything that
	 * comes from now on (doorbells, an eventfd level); true: something came meanwhile (the callback
	 * runs with ULNET_IO_POLLED, the loop does not sleep). */
	bool (*poll)(struct ulnet_io *io);
	bool (*arm)(struct ulnet_io *io);
	struct ulnet_io *hook_next; /* core: its loop's hooked watchers */
	/* Optional spin hook, for a socket: a busy-polling loop's spins call it on the watcher input last
	 * came to (epoll_wait, every 4th spin, watches the others) instead of epoll_wait, so that one
	 * system call finds input and reads it, as the loop's owner (a lead's too), with one non-blocking
	 * socket call. > 0: input came, the callback runs with ULNET_IO_POLLED in the next
	 * turn; 0: it looked, nothing came; < 0: it cannot look now (mid-message): that spin calls
	 * epoll_wait. */
	int (*spin)(struct ulnet_io *io);
};
/* In the callback's revents: the watcher's poll, arm or spin hook found work (not an epoll event). */
#define ULNET_IO_POLLED (1u << 26)
int ulnet__io_start(struct ulnet_node *node, struct ulnet_io *io, uint32_t events);
void ulnet__io_stop(struct ulnet_node *node, struct ulnet_io *io);
/* The LND holds input it read ahead of the socket (epoll will not report it): call @io's callback
 * with EPOLLIN in the loop's next turn, which does not sleep meanwhile. As the owner. */
void ulnet__io_kick(struct ulnet_node *node, struct ulnet_io *io);
/* The same with @events (EPOLLOUT: the LND queued output that the callback writes). An LND queues
 * output from anywhere but writes it only from its io callback, so no socket call runs inside a core
 * call. As the owner. */
void ulnet__io_kick_events(struct ulnet_node *node, struct ulnet_io *io, uint32_t events);
/* After ulnet__io_stop on an API thread that entered @io's loop, the loop's thread may still hold an
 * event for @io that it fetched before the stop: free the memory of a stopped watcher only once this
 * is true (its loop has since dispatched every batch it fetched before the stop). */
bool ulnet__io_quiesced(struct ulnet_node *node, const struct ulnet_io *io);

/* The value of lnd_tunables[@k] for @ni: configured, or the table's default. */
long ulnet__ni_lnd_tunable(const struct ulnet_ni *ni, size_t k);
/* Every lnd tunable of @ni whose table row has a store (ULNET_TUNABLE_AT) into the LND's struct @tun. */
void ulnet__ni_lnd_tunables_load(const struct ulnet_ni *ni, void *tun);

#endif
