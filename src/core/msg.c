/* SPDX-License-Identifier: MIT */
/* Message allocation and completion. Every message is finalized exactly once; finalizing only queues
 * it on node->done_q. The loop's completion phase (ulnet__completions_run) then returns its credits,
 * launches what they unblock, releases its MD and delivers the event prepared for it. So no LND call
 * ever nests inside another message's completion, and the stack depth is the same for one message
 * or a hundred thousand. */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static size_t msg_size(unsigned niov)
{
	return sizeof(struct ulnet_msg) + (size_t)(niov ? niov : 1) * sizeof(struct iovec);
}

struct ulnet_msg *ulnet__msg_alloc(struct ulnet_node *node, unsigned niov)
{
	/* iov_store is written by whoever fills it (a slice of the MD): only the header is cleared */
	struct ulnet_msg *msg = ulnet__desc_get_hdr(node, msg_size(niov), sizeof(*msg));

	if (!msg)
		return NULL;
	msg->iov_cap = niov ? niov : 1;
	msg->node = node;
	msg->v.iov = msg->iov_store;
	ulnet_list_init(&msg->link);
	ulnet_list_init(&msg->done_link);
	node->stats.msgs_alloc++;
	if (node->stats.msgs_alloc > node->stats.msgs_max)
		node->stats.msgs_max = node->stats.msgs_alloc;
	return msg;
}

void ulnet__msg_free(struct ulnet_msg *msg)
{
	if (msg->peer)
		ulnet__peer_put(msg->node, msg->peer);
	msg->node->stats.msgs_alloc--;
	ulnet__desc_put(msg->node, msg, msg_size(msg->iov_cap));
}

const struct ulnet_msg_lnd_view *ulnet__msg_view(const struct ulnet_msg *msg)
{
	return &msg->v;
}

/* An ACK goes back to the PUT's initiator once the data is in place. */
static void send_ack(struct ulnet_msg *put)
{
	struct ulnet_node *node = put->node;
	struct ulnet_msg *ack = ulnet__msg_alloc(node, 0);
	struct ulnet_process_id to = { .nid = put->v.hdr.src_nid, .pid = put->v.hdr.src_pid };
	int rc;

	if (!ack) {
		ULNET_LOG(CORE, ERR, "no memory for an ACK; the initiator will not see it");
		return;
	}
	ack->v.hdr.type = ULNET_MSG_ACK;
	ack->v.hdr.msg.ack.dst_wmd = put->v.hdr.msg.put.ack_wmd;
	ack->v.hdr.msg.ack.match_bits = put->v.hdr.msg.put.match_bits;
	ack->v.hdr.msg.ack.mlength = put->ev.mlength;
	rc = ulnet__send(node, ack, &to, put->rx_priv);
	if (rc < 0)
		ulnet__msg_free(ack);
}

void ulnet__finalize(struct ulnet_msg *msg, int status)
{
	struct ulnet_node *node = msg->node;

	if (msg->fwd) { /* forwarded: received, then sent on (forward.c) */
		ulnet__forward_finalize(msg, status);
		return;
	}
	/* The message stays allocated until the completion phase, so a second finalize before then is
	 * caught here; one after it would be a use after free in the caller (contract: exactly once). */
	if (msg->finalized) {
		ULNET_LOG(CORE, ERR, "message finalized twice (status %d); ignoring", status);
		return;
	}
	msg->finalized = true;
	msg->status = status;
	ulnet_list_add_tail(&msg->done_link, &node->done_q);
	node->n_done++;
	/* no wake here: an API call drains at its end (ulnet__unlock), the loop in its own phase */
}

/* Complete one finalized message. Whatever it launches finalizes onto done_q, not into this frame. */
static void msg_complete(struct ulnet_msg *msg)
{
	struct ulnet_node *node = msg->node;
	struct ulnet_ni *ni = msg->ni;
	uint32_t len = msg->v.hdr.payload_length;
	int status = msg->status;

	if (msg->is_tx) {
		ulnet__credits_return(msg);
		if (status == 0) {
			node->stats.send_count++;
			node->stats.send_length += len;
			if (ni)
				ni->send_count++;
			if (msg->peer)
				msg->peer->send_count++;
		} else {
			node->stats.errors++;
		}
	} else {
		if (status == 0) {
			node->stats.recv_count++;
			node->stats.recv_length += len;
		} else {
			node->stats.errors++;
		}
		if (status == 0 && msg->ack_wanted)
			send_ack(msg);
	}
	if (msg->txn && status != 0)
		ulnet__md_txn_end(node, msg->md); /* not sent: no REPLY/ACK to wait for (the SEND event says why) */
	if (msg->md) {
		struct ulnet_md umd = msg->md->umd;
		/* an MD that goes now leaves us its EQ reference: the EQ lives until the event is in it */
		bool freed = ulnet__md_release_keep_eq(node, msg->md);

		msg->ev.unlinked = freed;
		msg->ev.status = status;
		if (msg->has_event && freed)
			ulnet__event_deliver_unref(node, &umd, &msg->ev);
		else if (msg->has_event)
			ulnet__event_deliver(node, &umd, &msg->ev);
		else if (freed && umd.eq)
			ulnet__eq_ref(umd.eq, -1);
	}
	ulnet__msg_free(msg);
}

bool ulnet__completions_run(struct ulnet_node *node, unsigned budget)
{
	bool was = node->completing;

	node->completing = true;
	ulnet__eq_defer_begin();
	while (budget-- > 0 && !ulnet_list_empty(&node->done_q)) {
		struct ulnet_msg *msg = ulnet_list_first(&node->done_q, struct ulnet_msg, done_link);

		ulnet_list_del(&msg->done_link);
		node->n_done--;
		msg_complete(msg);
	}
	ulnet__eq_defer_end();
	node->completing = was;
	return !ulnet_list_empty(&node->done_q);
}

bool ulnet__node_completing(const struct ulnet_node *node)
{
	return node->completing;
}

bool ulnet__node_backlogged(const struct ulnet_node *node)
{
	return node->n_done >= ULNET_COMPLETION_BACKLOG;
}
