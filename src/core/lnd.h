/* SPDX-License-Identifier: MIT */
/* The LND SDK: the ops table an LND implements and what an LND may call in the core. Never installed.
 *
 * Threading: every op, io callback and tick runs on the node's loop thread or an API caller's thread,
 * always with the node lock held. An LND therefore needs no locks of its own, must never block, and
 * must never call back into the public API.
 *
 * Completions are deferred: ulnet__finalize() only queues the message. The loop's completion phase
 * (after io callbacks and ticks, a bounded number per turn) returns its credits, launches the
 * messages those credits unblock (lnd_send), releases the MD and delivers the event. So lnd_send is
 * never called from inside ulnet__finalize, and an LND may finalize from anywhere (its own lnd_send,
 * lnd_recv, an io callback, lnd_shutdown) without guarding against re-entry through the core. What an
 * LND finalizes inside an API call (lnd_send on the caller's thread) is completed when that call
 * ends; an LND never finalizes from a thread of its own.
 * ulnet__parse() may still call lnd_recv() and, for a GET, lnd_send() (the REPLY) before it returns. */
#ifndef ULNET_LND_H
#define ULNET_LND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "ulnet/node.h"
#include "hdr.h"
#include "log.h"

struct ulnet_ni;
struct ulnet_msg;

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
	/* Optional: called about every 100 ms from the loop for timeouts, keepalives, reconnects. */
	void (*lnd_tick)(struct ulnet_ni *ni, uint64_t now_ns);
	/* Optional: "key: value\n" lines of the LND tunables for net show / export. */
	void (*lnd_tunables_show)(struct ulnet_ni *ni, char *buf, size_t len);
};

/* What an LND reads from its message. Everything else in struct ulnet_msg is the core's. */
struct ulnet_msg_lnd_view {
	struct ulnet_hdr hdr;
	struct ulnet_process_id target; /* next hop process */
	const struct iovec *iov;
	unsigned niov;
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

/* NI accessors. */
void *ulnet__ni_priv(struct ulnet_ni *ni);
struct ulnet_node *ulnet__ni_node(struct ulnet_ni *ni);
const struct ulnet_nid *ulnet__ni_nid(const struct ulnet_ni *ni);
void ulnet__ni_set_nid(struct ulnet_ni *ni, const struct ulnet_nid *nid);
const struct ulnet_ni_conf *ulnet__ni_conf(const struct ulnet_ni *ni);
uint32_t ulnet__ni_peer_timeout(const struct ulnet_ni *ni);
uint32_t ulnet__node_page_size(const struct ulnet_node *node);
uint64_t ulnet__now_ns(void); /* CLOCK_MONOTONIC */
/* True while many finalized messages wait for the completion phase. An LND reading a socket stops
 * reading (and lets the loop turn) while this holds: each message parsed may allocate a reply or an
 * event, so reading on would let a peer that sends faster than we complete grow our memory. */
bool ulnet__node_backlogged(const struct ulnet_node *node);
/* True while lnd_send is called from the completion phase (credits came back). Many sends may follow
 * at once: a socket LND may queue and write them together (one writev) on its next io turn. */
bool ulnet__node_completing(const struct ulnet_node *node);

/* Io watchers on the node's epoll loop. The callback runs on the loop thread with the node lock held.
 * ulnet__io_start may be called again to change @events; ulnet__io_stop is idempotent and must be
 * called before closing the fd. */
struct ulnet_io;
typedef void (*ulnet_io_cb)(struct ulnet_io *io, uint32_t revents);
struct ulnet_io {
	int fd;
	uint32_t events; /* EPOLLIN | EPOLLOUT ... currently registered, 0 = not registered */
	ulnet_io_cb cb;
	void *data;
};
int ulnet__io_start(struct ulnet_node *node, struct ulnet_io *io, uint32_t events);
void ulnet__io_stop(struct ulnet_node *node, struct ulnet_io *io);

/* Numeric tunable helper: parses @value as an integer in [min, max]; logs "<subsys>: <key> <value>:
 * <reason> (allowed min..max)" on failure. 0 or -EINVAL. */
int ulnet__kv_int(const char *subsys, const struct ulnet_kv *kv, long min, long max, long *out);

#endif
