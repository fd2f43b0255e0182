/* SPDX-License-Identifier: MIT */
/* Message allocation and completion. Every message is finalized exactly once, by the owner of its
 * loop; finalizing only queues it on that loop's done queue. The loop's completion phase (ulnet__completions_run) then returns its credits,
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
	struct ulnet_loop *own = ulnet__owned(node);
	/* a thread that owns no loop holds the node lock (ulnet_put, ulnet_get) */
	struct ulnet_msg *msg = own ? ulnet__desc_get_hdr(node, msg_size(niov), sizeof(*msg))
				    : ulnet__node_desc_get(node, msg_size(niov), sizeof(*msg));
	uint32_t live, peak;

	if (!msg)
		return NULL;
	msg->node_desc = !own;
	msg->iov_cap = niov ? niov : 1;
	msg->node = node;
	msg->loop = ulnet__owned(node);
	msg->v.iov = msg->iov_store;
	ulnet_list_init(&msg->link);
	ulnet_list_init(&msg->done_link);
	live = atomic_fetch_add_explicit(&node->msgs_live, 1, memory_order_relaxed) + 1;
	peak = atomic_load_explicit(&node->msgs_peak, memory_order_relaxed);
	while (live > peak && !atomic_compare_exchange_weak_explicit(&node->msgs_peak, &peak, live, memory_order_relaxed,
								      memory_order_relaxed))
		;
	return msg;
}

/* Free @msg; @locked: the caller holds the node lock (what a message from the node's descriptors
 * needs to go back there). */
static void msg_free(struct ulnet_msg *msg, bool locked)
{
	struct ulnet_node *node = msg->node;

	if (msg->peer)
		ulnet__peer_put(msg->loop, msg->peer);
	if (msg->rx_peer)
		ulnet__peer_put(msg->loop, msg->rx_peer);
	if (msg->fault_buf) {
		free(msg->fault_buf);
		msg->fault_buf = NULL;
	}
	atomic_fetch_sub_explicit(&node->msgs_live, 1, memory_order_relaxed);
	if (!msg->node_desc) {
		ulnet__desc_put(node, msg, msg_size(msg->iov_cap));
	} else if (locked) {
		ulnet__node_desc_put(node, msg, msg_size(msg->iov_cap));
	} else {
		ulnet__lock(node);
		ulnet__node_desc_put(node, msg, msg_size(msg->iov_cap));
		ulnet__lock_release(node);
	}
}

void ulnet__msg_free(struct ulnet_msg *msg)
{
	msg_free(msg, msg->node_desc && !ulnet__owned(msg->node)); /* off the loops: the node lock is held */
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
	struct ulnet_loop *loop = msg->loop ? msg->loop : ulnet__owned(msg->node);

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
	msg->loop = loop;
	ulnet_list_add_tail(&msg->done_link, &loop->done.q);
	loop->done.n++;
	/* no wake here: the loop runs its completion phase in this turn, an API thread that entered it
	 * when it leaves (ulnet__loop_exit) */
}

/* Complete one finalized message. Whatever it launches finalizes onto the done queue, not into this frame. */
static void msg_complete(struct ulnet_loop *loop, struct ulnet_msg *msg)
{
	struct ulnet_node *node = msg->node;
	struct ulnet_stats *st = &loop->stats;
	struct ulnet_ni *ni = msg->ni;
	uint32_t len = msg->v.hdr.payload_length;
	int status = msg->status;

	/* a tx PUT's egress; a received REPLY's or ACK's round trip (a tx GET only carries its start) */
	if (msg->lat && status == 0 && (!msg->is_tx || msg->lat == ULNET_LAT_PUT))
		ulnet__lat_note(loop, msg);
	if (msg->is_tx) {
		ulnet__credits_return(msg);
		if (status == 0) {
			st->send_count++;
			st->send_length += len;
			if (ni)
				ni->send_count++;
			if (msg->peer)
				msg->peer->send_count++;
		} else {
			st->errors++;
		}
	} else {
		if (status == 0) {
			st->recv_count++;
			st->recv_length += len;
		} else {
			st->errors++;
		}
		if (status == 0 && msg->ack_wanted)
			send_ack(msg);
	}
	if (msg->md) {
		struct ulnet_md umd;
		bool freed;

		/* the MD is the node's: its threshold, its life and its event under the node lock (the
		 * event too: the MD holds the EQ, and another thread may free the MD once we let go) */
		ulnet__lock(node);
		if (msg->txn && status != 0)
			ulnet__md_txn_end(node, msg->md); /* not sent: no REPLY/ACK to wait for (the SEND event says why) */
		umd = msg->md->umd;
		/* an MD that goes now leaves us its EQ reference: the EQ lives until the event is in it */
		freed = ulnet__md_release_keep_eq(node, msg->md);
		msg->ev.unlinked = freed;
		msg->ev.status = status;
		if (msg->has_event && freed)
			ulnet__event_deliver_unref(node, &umd, &msg->ev);
		else if (msg->has_event)
			ulnet__event_deliver(node, &umd, &msg->ev);
		else if (freed && umd.eq)
			ulnet__eq_ref(umd.eq, -1);
		if (msg->node_desc) { /* an API thread's message: back to the node's lists, same hold */
			msg_free(msg, true);
			msg = NULL;
		}
		ulnet__unlock(node);
	}
	if (msg)
		msg_free(msg, false);
}

bool ulnet__completions_run(struct ulnet_loop *loop, unsigned budget)
{
	bool was = loop->done.running;

	loop->done.running = true;
	loop->done.now_valid = false; /* the phase's clock is read once, by its first latency */
	ulnet__eq_defer_begin();
	while (budget-- > 0 && !ulnet_list_empty(&loop->done.q)) {
		struct ulnet_msg *msg = ulnet_list_first(&loop->done.q, struct ulnet_msg, done_link);

		ulnet_list_del(&msg->done_link);
		loop->done.n--;
		msg_complete(loop, msg);
	}
	ulnet__eq_defer_end();
	loop->done.running = was;
	return !ulnet_list_empty(&loop->done.q);
}

bool ulnet__node_completing(const struct ulnet_node *node)
{
	struct ulnet_loop *own = ulnet__owned(node);

	return own && own->done.running;
}

bool ulnet__node_backlogged(const struct ulnet_node *node)
{
	struct ulnet_loop *own = ulnet__owned(node);

	return own && own->done.n >= ULNET_COMPLETION_BACKLOG;
}
