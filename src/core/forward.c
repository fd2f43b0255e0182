/* SPDX-License-Identifier: MIT */
/* Forwarding a received message to its next hop (routing enabled): the payload goes into a router
 * buffer (router_buffers.c) charged to the sending peer's peer_buffer_credits; without a buffer or a
 * credit the message waits (delayed receive) after the LND was offered lnd_eager_recv to release its
 * receive resources. Stage 1 is the receive, stage 2 the send on, with the header unchanged (the
 * source stays the originator): to the destination on a local net, or to the next gateway. The
 * buffer and the credit come back when the send completes, and the oldest waiting message that can
 * go is received then. A router never takes more than LNET_MTU and never reassembles.
 *
 * Ownership: the buffers, the wait queue and the counters of nets and of the node are the node's
 * (node lock); the receiving peer and its credit are the receiving NI's loop's, the send the sending
 * NI's loop's. A message whose two NIs live on different loops is handed to the sending loop for
 * stage 2 and back for the release. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

enum { FWD_WAIT = 1, FWD_RX, FWD_TX };

void ulnet__node_set_forwarding(struct ulnet_node *node, bool on, unsigned buffers)
{
	struct ulnet_routing_conf c;

	ulnet_routing_get(node, &c);
	c.enable = on;
	if (buffers) /* 0: as they are */
		c.tiny = c.small = c.large = buffers;
	ulnet_routing_set(node, &c);
}

/* Count a message dropped for @why on its way in on @ni (from @lp when known). */
static void count_drop(struct ulnet_ni *ni, struct ulnet_peer *lp, enum ulnet_fwd_drop why, uint32_t len)
{
	struct ulnet_node *node = ni->node;

	ni->loop->stats.drop_count++;
	ni->loop->stats.drop_length += len;
	if (lp)
		lp->fwd_drops++; /* the receiving loop's peer: the caller owns that loop */
	ulnet__lock(node);
	node->fwd.drops[why]++;
	ni->fwd_in.drops[why]++;
	ulnet__lock_release(node);
}

/* Drop a message before it was taken in: the LND lets go of it. */
static void drop_now(struct ulnet_ni *ni, struct ulnet_peer *lp, void *rx_priv, const struct ulnet_hdr *hdr,
		     enum ulnet_fwd_drop why)
{
	char src[ULNET_NID_STRLEN], dst[ULNET_NID_STRLEN];

	ULNET_LOG(CORE, WARN, "forward: dropping a message from %s for %s: %s%s",
		  ulnet_nid_format(&hdr->src_nid, src, sizeof(src)), ulnet_nid_format(&hdr->dest_nid, dst, sizeof(dst)),
		  ulnet_fwd_drop_name(why),
		  why == ULNET_FWD_DROP_DISABLED ? " (routing is not enabled here: set routing 1)"
		  : why == ULNET_FWD_DROP_NO_ROUTE ? " (no local NI on its net and no route up to it)"
		  : why == ULNET_FWD_DROP_LOOP ? " (its next hop is the peer it came from)" : "");
	count_drop(ni, lp, why, hdr->payload_length);
	ni->ops->lnd_recv(ni, rx_priv, NULL, NULL, 0, 0, hdr->payload_length);
}

/* A buffer is free and @msg's sender may hold one more. Node lock held; the owner of the receiving
 * loop (the sender's credit is its). */
static bool can_receive(const struct ulnet_msg *msg)
{
	return msg->fwd_from->buf_credits > 0 && ulnet__rtr_available(msg->node, msg->rtr_pool);
}

/* Take a buffer and a credit (node lock held, dropped here), then let the LND deliver the payload into
 * the buffer. The owner of the receiving loop. */
static void fwd_receive(struct ulnet_msg *msg)
{
	struct ulnet_node *node = msg->node;
	struct ulnet_peer *lp = msg->fwd_from;
	uint32_t len = msg->v.hdr.payload_length;
	unsigned cls = msg->rtr_pool;
	bool fresh;
	struct ulnet_rtr_buf *buf = ulnet__rtr_take(node, cls, msg->ni, &fresh);
	int rc;

	ulnet__lock_release(node);
	if (fresh && !(buf = ulnet__rtr_alloc(msg->ni, cls))) {
		ulnet__lock(node);
		ulnet__rtr_put(node, cls, NULL);
		ulnet__lock_release(node);
		ULNET_LOG(CORE, ERR, "forward: no memory for a %u-byte router buffer; dropping", len);
		count_drop(msg->ni, lp, ULNET_FWD_DROP_NO_MEMORY, len);
		msg->ni->ops->lnd_recv(msg->ni, msg->rx_priv, NULL, NULL, 0, 0, len);
		ulnet__peer_put(msg->ni->loop, lp);
		ulnet__msg_free(msg);
		return;
	}
	if (--lp->buf_credits < lp->min_buf_credits)
		lp->min_buf_credits = lp->buf_credits;
	msg->fwd = FWD_RX;
	msg->rtr_buf = buf;
	msg->iov_store[0].iov_base = buf ? buf->mem : NULL;
	msg->iov_store[0].iov_len = len;
	msg->v.niov = len ? 1 : 0;
	rc = msg->ni->ops->lnd_recv(msg->ni, msg->rx_priv, msg, msg->v.iov, msg->v.niov, len, len);
	if (rc < 0)
		ulnet__finalize(msg, rc);
}

static void fwd_launch_waiting(struct ulnet_loop *loop, void *arg);

/* Run @fn for @msg on @to: now if the caller owns it, else handed over. */
static void fwd_on(struct ulnet_node *node, struct ulnet_loop *to, void (*fn)(struct ulnet_loop *, void *), void *arg)
{
	if (ulnet__owned(node) == to || ulnet__holds_all_loops())
		fn(to, arg);
	else if (ulnet__loop_call(to, fn, arg))
		ULNET_LOG(CORE, ERR, "forward: no memory to hand work to loop %u; a message waits for the next release",
			  to->idx);
}

/* A buffer or a credit came back: receive the oldest waiting message that can go now and that this
 * loop owns; if the first that can go is another loop's, that loop is told to look. */
static void fwd_launch_waiting(struct ulnet_loop *loop, void *arg)
{
	struct ulnet_node *node = loop->node;
	struct ulnet_loop *other = NULL;

	(void)arg;
	ulnet__lock(node);
	for (struct ulnet_list *p = node->fwd_waitq.next; p != &node->fwd_waitq; p = p->next) {
		struct ulnet_msg *m = ulnet_container_of(p, struct ulnet_msg, link);

		if (m->loop != loop) {
			if (!other && ulnet__rtr_available(node, m->rtr_pool))
				other = m->loop; /* its peer's credit is that loop's to read */
			continue;
		}
		if (can_receive(m)) {
			ulnet_list_del(&m->link);
			node->fwd_waiting--;
			fwd_receive(m); /* drops the node lock */
			return;
		}
	}
	ulnet__lock_release(node);
	if (other)
		fwd_on(node, other, fwd_launch_waiting, NULL);
}

int ulnet__forward_parse(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from,
			 void *rx_priv)
{
	struct ulnet_node *node = ni->node;
	struct ulnet_peer *lp = ulnet__peer_find(ni, from, true);
	struct ulnet_route *route;
	struct ulnet_msg *msg;
	struct ulnet_nid hop;
	struct ulnet_ni *out;
	bool local = false, wait;
	char s[ULNET_NID_STRLEN];

	if (!atomic_load_explicit(&node->forwarding, memory_order_relaxed)) {
		drop_now(ni, lp, rx_priv, hdr, ULNET_FWD_DROP_DISABLED);
		return 0;
	}
	if (hdr->payload_length > ULNET_MTU || ((hdr->type == ULNET_MSG_ACK || hdr->type == ULNET_MSG_GET) &&
						 hdr->payload_length)) {
		ULNET_LOG(CORE, ERR, "%s: message from %s to forward: payload_length %u (type %u, LNET_MTU %u); closing",
			  ni->ops->lnd_name, ulnet_nid_format(&hdr->src_nid, s, sizeof(s)), hdr->payload_length,
			  hdr->type, ULNET_MTU);
		count_drop(ni, lp, ULNET_FWD_DROP_TOO_BIG, hdr->payload_length);
		return -EPROTO;
	}
	out = ulnet__next_hop(node, &hdr->dest_nid, &local, &route, &hop);
	if (!out || local) {
		drop_now(ni, lp, rx_priv, hdr, ULNET_FWD_DROP_NO_ROUTE);
		return 0;
	}
	if (out == ni && ulnet__nid_equal(&hop, from)) {
		drop_now(ni, lp, rx_priv, hdr, ULNET_FWD_DROP_LOOP);
		return 0;
	}
	msg = lp ? ulnet__msg_alloc(node, 1) : NULL;
	if (!msg) {
		drop_now(ni, lp, rx_priv, hdr, ULNET_FWD_DROP_NO_MEMORY);
		return 0;
	}
	msg->ni = ni;
	msg->rx_priv = rx_priv;
	msg->v.hdr = *hdr;
	msg->fwd_from = lp;
	msg->rtr_pool = (uint8_t)ulnet__rtr_class(hdr->payload_length);
	ulnet__peer_get(lp); /* until the buffer comes back (fwd_release) */
	lp->recv_count++;
	lp->down = false;
	ulnet__lock(node);
	if (can_receive(msg)) {
		fwd_receive(msg);
		return 0;
	}
	if (!ulnet__rtr_available(node, msg->rtr_pool))
		node->rtr.pool[msg->rtr_pool].waits++;
	ulnet__lock_release(node);
	/* delayed receive: offer the LND to let go of its receive resources while the message waits */
	msg->fwd = FWD_WAIT;
	if (ni->ops->lnd_eager_recv) {
		void *np = NULL;

		if (ni->ops->lnd_eager_recv(ni, rx_priv, msg, &np) == 0)
			msg->rx_priv = np;
	}
	ulnet__lock(node);
	ulnet_list_add_tail(&msg->link, &node->fwd_waitq);
	node->fwd_waiting++;
	/* a buffer may have come back meanwhile, with nothing waiting then to take it */
	wait = !can_receive(msg);
	ulnet__lock_release(node);
	if (!wait)
		fwd_launch_waiting(ni->loop, NULL);
	return 0;
}

/* The buffer and the credit come back, on the receiving loop (the credit's owner). */
static void fwd_release(struct ulnet_loop *loop, void *arg)
{
	struct ulnet_msg *msg = arg;
	struct ulnet_node *node = msg->node;
	struct ulnet_peer *lp = msg->fwd_from;

	msg->loop = loop;
	if (msg->status == 0) {
		lp->fwd_msgs++;
		lp->fwd_bytes += msg->v.hdr.payload_length;
	} else {
		lp->fwd_drops++;
	}
	if (msg->fwd != FWD_WAIT) {
		ulnet__lock(node);
		ulnet__rtr_put(node, msg->rtr_pool, msg->rtr_buf);
		ulnet__lock_release(node);
		lp->buf_credits++;
	}
	ulnet__peer_put(loop, lp);
	ulnet__msg_free(msg);
	fwd_launch_waiting(loop, NULL);
}

/* Stage 2 on the sending loop: the next hop, its peer and credits, the LND. */
static void fwd_send_on(struct ulnet_loop *loop, void *arg)
{
	struct ulnet_msg *msg = arg;
	struct ulnet_route *route;
	struct ulnet_nid hop;
	bool local = false;
	struct ulnet_ni *out = ulnet__next_hop(loop->node, &msg->v.target.nid, &local, &route, &hop);

	msg->loop = loop;
	if (out && !local && out->loop != loop) { /* the routes changed since it was handed here */
		fwd_on(loop->node, out->loop, fwd_send_on, msg);
		return;
	}
	msg->peer = out && !local ? ulnet__peer_find(out, &hop, true) : NULL;
	if (msg->peer)
		msg->ni = out;
	if (!msg->peer) {
		ulnet__finalize(msg, -EHOSTUNREACH);
		return;
	}
	if (route)
		ulnet__route_used(loop->node, route, msg->v.hdr.payload_length);
	ulnet__peer_get(msg->peer);
	msg->v.target.nid = hop; /* the LND sends to the next hop; the header names the destination */
	msg->v.rdma_iov = msg->v.iov;
	msg->v.rdma_niov = msg->v.niov;
	msg->v.rdma_len = msg->v.hdr.payload_length;
	ulnet__post_send(msg);
}

void ulnet__forward_finalize(struct ulnet_msg *msg, int status)
{
	struct ulnet_node *node = msg->node;
	struct ulnet_ni *in = msg->fwd_from->ni;
	uint32_t len = msg->v.hdr.payload_length;
	bool local = false;

	if (msg->fwd == FWD_RX && status == 0) {
		/* payload in: send it on from the loop of the NI that reaches the destination (the NI
		 * list and the routes are stable under our loop's lock) */
		struct ulnet_route *route;
		struct ulnet_ni *out = ulnet__next_hop(node, &msg->v.hdr.dest_nid, &local, &route, NULL);

		if (out && !local) {
			msg->fwd = FWD_TX;
			msg->is_tx = true;
			msg->rx_priv = NULL;
			msg->v.target.nid = msg->v.hdr.dest_nid;
			msg->v.target.pid = msg->v.hdr.dest_pid;
			fwd_on(node, out->loop, fwd_send_on, msg);
			return;
		}
		status = -EHOSTUNREACH;
	}
	if (msg->fwd == FWD_TX) {
		if (msg->ni_credit || msg->peer_credit)
			ulnet__credits_return(msg);
		if (msg->peer) { /* the sending loop's peer: let go of it here */
			ulnet__peer_put(msg->loop, msg->peer);
			msg->peer = NULL;
		}
	}
	msg->status = status;
	ulnet__lock(node);
	if (status == 0) {
		node->fwd.msgs++;
		node->fwd.bytes += len;
		in->fwd_in.msgs++;
		in->fwd_in.bytes += len;
		msg->ni->fwd_out.msgs++;
		msg->ni->fwd_out.bytes += len;
	} else {
		enum ulnet_fwd_drop why = status == -EHOSTUNREACH ? ULNET_FWD_DROP_NO_ROUTE : ULNET_FWD_DROP_SEND_FAILED;

		node->fwd.drops[why]++;
		in->fwd_in.drops[why]++;
	}
	ulnet__lock_release(node);
	if (status == 0) {
		struct ulnet_stats *st = ulnet__stats(node);

		st->route_count++;
		st->route_length += len;
	} else {
		ulnet__stats(node)->errors++;
	}
	fwd_on(node, in->loop, fwd_release, msg);
}

void ulnet__forward_free(struct ulnet_node *node)
{
	if (node->fwd_waitq.next) {
		while (!ulnet_list_empty(&node->fwd_waitq)) {
			struct ulnet_msg *m = ulnet_list_first(&node->fwd_waitq, struct ulnet_msg, link);

			ulnet_list_del(&m->link);
			ulnet__cur_loop = m->loop;
			ulnet__peer_put(m->loop, m->fwd_from);
			ulnet__msg_free(m);
			ulnet__cur_loop = NULL;
		}
	}
	ulnet__rtr_free_all(node);
}
