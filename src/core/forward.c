/* SPDX-License-Identifier: MIT */
/* Forwarding a received message to its next hop, the router's data path in miniature: the payload
 * goes into a router buffer charged to the sending peer's peer_buffer_credits; without a buffer or a
 * credit the message waits (delayed receive) after the LND was offered lnd_eager_recv to release its
 * receive resources. Stage 1 is the receive, stage 2 the send on; the buffer and the credit come back
 * when the send completes, and the oldest waiting message that can go is received then.
 *
 * Ownership: the buffers and the wait queue are the node's (node lock); the receiving peer and its
 * credit are the receiving NI's loop's, the send the sending NI's loop's. A message whose two NIs live
 * on different loops is handed to the sending loop for stage 2 and back for the release. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

enum { FWD_WAIT = 1, FWD_RX, FWD_TX };

void ulnet__node_set_forwarding(struct ulnet_node *node, bool on, unsigned buffers)
{
	ulnet__lock(node);
	if (!node->fwd_waitq.next)
		ulnet_list_init(&node->fwd_waitq);
	node->fwd_bufs_free = buffers;
	ulnet__lock_release(node);
	atomic_store(&node->forwarding, on); /* parse reads it with no lock */
}

/* A buffer is free and @msg's sender may hold one more. Node lock held; the owner of the receiving
 * loop (the sender's credit is its). */
static bool can_receive(const struct ulnet_msg *msg)
{
	return msg->node->fwd_bufs_free > 0 && msg->fwd_from->buf_credits > 0;
}

/* Take a buffer and a credit (node lock held, dropped here), then let the LND deliver the payload into
 * the buffer. The owner of the receiving loop. */
static void fwd_receive(struct ulnet_msg *msg)
{
	uint32_t len = msg->v.hdr.payload_length;
	void *buf = malloc(len ? len : 1);
	int rc;

	if (!buf) {
		ulnet__lock_release(msg->node);
		ULNET_LOG(CORE, ERR, "forward: no memory for a %u-byte router buffer; dropping", len);
		msg->ni->ops->lnd_recv(msg->ni, msg->rx_priv, NULL, NULL, 0, 0, len);
		ulnet__msg_free(msg);
		return;
	}
	msg->node->fwd_bufs_free--;
	ulnet__lock_release(msg->node);
	msg->fwd_from->buf_credits--;
	msg->fwd = FWD_RX;
	msg->iov_store[0].iov_base = buf;
	msg->iov_store[0].iov_len = len;
	msg->v.niov = 1;
	rc = msg->ni->ops->lnd_recv(msg->ni, msg->rx_priv, msg, msg->v.iov, 1, len, len);
	if (rc < 0)
		ulnet__finalize(msg, rc);
}

/* A buffer or a credit came back: receive the oldest waiting message that can go now and that this
 * loop owns (a buffer freed elsewhere lets another loop's message go at its next release). */
static void fwd_launch_waiting(struct ulnet_loop *loop)
{
	struct ulnet_node *node = loop->node;
	struct ulnet_list *p;

	ulnet__lock(node);
	for (p = node->fwd_waitq.next; p != &node->fwd_waitq; p = p->next) {
		struct ulnet_msg *m = ulnet_container_of(p, struct ulnet_msg, link);

		if (m->loop == loop && can_receive(m)) {
			ulnet_list_del(&m->link);
			fwd_receive(m); /* drops the node lock */
			return;
		}
	}
	ulnet__lock_release(node);
}

int ulnet__forward_parse(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from,
			 void *rx_priv)
{
	struct ulnet_node *node = ni->node;
	struct ulnet_peer *lp = ulnet__peer_find(ni, from, true);
	struct ulnet_msg *msg = lp ? ulnet__msg_alloc(node, 1) : NULL;
	bool local = false;
	char s[ULNET_NID_STRLEN];

	if (hdr->payload_length > ULNET_MTU || ((hdr->type == ULNET_MSG_ACK || hdr->type == ULNET_MSG_GET) &&
						 hdr->payload_length)) {
		ULNET_LOG(CORE, ERR, "%s: message from %s to forward: payload_length %u (type %u, LNET_MTU %u); closing",
			  ni->ops->lnd_name, ulnet_nid_format(&hdr->src_nid, s, sizeof(s)), hdr->payload_length,
			  hdr->type, ULNET_MTU);
		if (msg)
			ulnet__msg_free(msg);
		return -EPROTO;
	}
	if (!msg || !ulnet__ni_for_dest(node, &hdr->dest_nid, &local) || local) {
		char dst[ULNET_NID_STRLEN];

		ULNET_LOG(CORE, DEBUG, "forward: %s for %s; dropping", !msg ? "no memory" : "no route",
			  ulnet_nid_format(&hdr->dest_nid, dst, sizeof(dst)));
		if (msg)
			ulnet__msg_free(msg);
		ni->loop->stats.drop_count++;
		ni->loop->stats.drop_length += hdr->payload_length;
		ni->ops->lnd_recv(ni, rx_priv, NULL, NULL, 0, 0, hdr->payload_length);
		return 0;
	}
	msg->ni = ni;
	msg->rx_priv = rx_priv;
	msg->v.hdr = *hdr;
	msg->fwd_from = lp;
	ulnet__peer_get(lp); /* until the buffer comes back (fwd_release) */
	lp->recv_count++;
	lp->down = false;
	ulnet__lock(node);
	if (can_receive(msg)) {
		fwd_receive(msg);
		return 0;
	}
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
	ulnet__lock_release(node);
	return 0;
}

/* The buffer and the credit come back, on the receiving loop (the credit's owner). */
static void fwd_release(struct ulnet_loop *loop, void *arg)
{
	struct ulnet_msg *msg = arg;
	struct ulnet_node *node = msg->node;

	msg->loop = loop;
	if (msg->fwd != FWD_WAIT) {
		free(msg->iov_store[0].iov_base);
		ulnet__lock(node);
		node->fwd_bufs_free++;
		ulnet__lock_release(node);
		msg->fwd_from->buf_credits++;
	}
	ulnet__peer_put(loop, msg->fwd_from);
	ulnet__msg_free(msg);
	fwd_launch_waiting(loop);
}

/* Run @fn for @msg on @to: now if the caller owns it, else handed over. */
static void fwd_on(struct ulnet_msg *msg, struct ulnet_loop *to, void (*fn)(struct ulnet_loop *, void *))
{
	if (ulnet__owned(msg->node) == to) {
		fn(to, msg);
	} else if (ulnet__loop_call(to, fn, msg)) {
		ULNET_LOG(CORE, ERR, "forward: no memory to hand a message to loop %u; it is lost", to->idx);
	}
}

/* Stage 2 on the sending loop: the peer, its credits, the LND. */
static void fwd_send_on(struct ulnet_loop *loop, void *arg)
{
	struct ulnet_msg *msg = arg;
	bool local = false;
	struct ulnet_ni *out = ulnet__ni_for_dest(loop->node, &msg->v.target.nid, &local);

	msg->loop = loop;
	msg->ni = out;
	msg->peer = out && out->loop == loop && !local ? ulnet__peer_find(out, &msg->v.target.nid, true) : NULL;
	if (!msg->peer) {
		ulnet__finalize(msg, -EHOSTUNREACH);
		return;
	}
	ulnet__peer_get(msg->peer);
	msg->v.rdma_iov = msg->v.iov;
	msg->v.rdma_niov = msg->v.niov;
	msg->v.rdma_len = msg->v.hdr.payload_length;
	ulnet__post_send(msg);
}

void ulnet__forward_finalize(struct ulnet_msg *msg, int status)
{
	struct ulnet_node *node = msg->node;
	struct ulnet_loop *in = msg->fwd_from->ni->loop;
	struct ulnet_process_id to = { .nid = msg->v.hdr.dest_nid, .pid = msg->v.hdr.dest_pid };
	bool local = false;

	if (msg->fwd == FWD_RX && status == 0) {
		/* payload in: send it on unchanged (the source stays the originator), from the loop of
		 * the NI that reaches the destination (the NI list is stable under our loop's lock) */
		struct ulnet_ni *out = ulnet__ni_for_dest(node, &to.nid, &local);

		msg->fwd = FWD_TX;
		msg->is_tx = true;
		msg->rx_priv = NULL;
		msg->v.target = to;
		if (out && !local) {
			fwd_on(msg, out->loop, fwd_send_on);
			return;
		}
		status = -EHOSTUNREACH;
	}
	if (msg->fwd == FWD_TX) {
		struct ulnet_stats *st = ulnet__stats(node);

		if (msg->ni_credit || msg->peer_credit)
			ulnet__credits_return(msg);
		if (msg->peer) { /* the sending loop's peer: let go of it here */
			ulnet__peer_put(msg->loop, msg->peer);
			msg->peer = NULL;
		}
		if (status == 0) {
			st->route_count++;
			st->route_length += msg->v.hdr.payload_length;
		}
	}
	if (status)
		ulnet__stats(node)->errors++;
	fwd_on(msg, in, fwd_release);
}

void ulnet__forward_free(struct ulnet_node *node)
{
	if (!node->fwd_waitq.next)
		return;
	while (!ulnet_list_empty(&node->fwd_waitq)) {
		struct ulnet_msg *m = ulnet_list_first(&node->fwd_waitq, struct ulnet_msg, link);

		ulnet_list_del(&m->link);
		ulnet__cur_loop = m->loop;
		ulnet__peer_put(m->loop, m->fwd_from);
		ulnet__msg_free(m);
		ulnet__cur_loop = NULL;
	}
}
