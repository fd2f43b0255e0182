/* SPDX-License-Identifier: MIT */
/* o2ib sending (lnet-wire.md §4.1): the two send queues, posting on send slots (RDMA WRITEs in
 * windows, then the message), deferred send checks, and the timeouts and keepalives of what is
 * queued or posted. Whether the message at the head of a queue may go is o2ib_credits' decision. */
#include <errno.h>
#include <stdio.h>
#include "o2ib.h"

#define NS_PER_S 1000000000ull

static bool keepalive_due(const struct o2ib_conn *conn, uint64_t now)
{
	return conn->net->tun.keepalive &&
	       now >= conn->last_send_ns + (uint64_t)conn->net->tun.keepalive * NS_PER_S;
}

/* The counters o2ib_credits decides on, as they are now. */
static struct o2ib_credit_state credit_state(const struct o2ib_conn *conn, uint64_t now)
{
	return (struct o2ib_credit_state){
		.version = conn->version,
		.queue_depth = conn->queue_depth,
		.credits = conn->credits,
		.outstanding_credits = conn->outstanding_credits,
		.reserved_credits = conn->reserved_credits,
		.nsends_posted = conn->nsends_posted,
		.max_sends = conn->max_sends,
		.noops_posted = conn->noops_posted,
		.hiw = conn->hiw,
		.keepalive_due = keepalive_due(conn, now),
		.credit_queued = !ulnet_list_empty(&conn->txq),
		.nocred_queued = !ulnet_list_empty(&conn->txq_nocred),
	};
}

void o2ib_conn_queue(struct o2ib_conn *conn, struct o2ib_tx *tx)
{
	bool nocred = !o2ib_credit_needed(conn->version, tx->msg.type);

	if (tx->advertise && o2ib_tx_advertise(conn, tx))
		return; /* no description for its sink: the tx is done with that error */
	if (!tx->deadline_ns)
		tx->deadline_ns = o2ib_now(conn->net) + (uint64_t)conn->net->tun.timeout * NS_PER_S;
	ulnet_list_add_tail(&tx->link, nocred ? &conn->txq_nocred : &conn->txq);
}

/* Post what @tx has next on send slot @s: the next window of its RDMA WRITEs (o2ib_xfer_window) and,
 * with the last one, the message itself. The slot is the tx's from its first window to its SEND's
 * completion; each window is posted only when the send queue has room for all of it, and the next one
 * waits for its completion (its last WRITE is signalled). 0, 1 (no room: nothing posted), or -errno. */
static int post_window(struct o2ib_conn *conn, struct o2ib_tx *tx, uint32_t s, int credit)
{
	struct o2ib_net *net = conn->net;
	struct fab_send_wr *first = NULL, *last = NULL, *wr = conn->wrs;
	struct fab_sge *sge = conn->sges;
	const struct fab_send_wr *bad;
	bool final = true;
	uint32_t nw = 0;
	uint8_t *buf;
	int n, rc;

	if (tx->xfer)
		nw = o2ib_xfer_window(tx->xfer, O2IB_WR_TX | O2IB_WR_RDMA | s, &first, &last, &final);
	if (nw + final > conn->sq_size - conn->sq_used) {
		conn->peer->stats.window_waits += nw > 0;
		return nw + final > conn->sq_size ? -EMSGSIZE : 1;
	}
	if (final) {
		buf = conn->tx_area + (size_t)s * O2IB_MSG_SIZE;
		tx->msg.version = conn->version;
		tx->msg.credits = (uint8_t)conn->outstanding_credits;
		tx->msg.srcnid = net->me.nid;
		tx->msg.srcstamp = net->me.stamp;
		tx->msg.dstnid = conn->peer->nid4;
		tx->msg.dststamp = conn->peer_stamp;
		n = o2ib_msg_pack(&tx->msg, false, buf, O2IB_MSG_SIZE);
		if (n < 0)
			return n;
		*sge = (struct fab_sge){ (uint64_t)(uintptr_t)buf, (uint32_t)n, conn->tx_mr.lkey };
		*wr = (struct fab_send_wr){ .wr_id = O2IB_WR_TX | s, .opcode = FAB_WR_SEND, .signaled = true, .sg_list = sge,
					    .num_sge = 1 };
		if (last)
			last->next = wr;
		else
			first = wr;
	}
	if ((rc = o2ib_fab(conn)->post_send(conn->qp, first, &bad))) {
		conn->peer->stats.post_rejects++;
		return rc; /* (a provider error, not a full queue: the room was checked) */
	}
	if (tx->xfer)
		o2ib_xfer_posted(tx->xfer, nw);
	if (tx->slot < 0) {
		conn->slots[s] = tx;
		tx->slot = (int)s;
		conn->nsends_posted++;
		if (tx->waiting)
			ulnet_list_add_tail(&tx->link, &conn->waitq);
	}
	conn->slot_wrs[s] = nw + final;
	conn->sq_used += nw + final;
	if (final) {
		conn->credits -= credit;
		conn->outstanding_credits = 0;
		conn->noops_posted += tx->msg.type == O2IB_MSG_NOOP;
		conn->tx_msgs += tx->msg.type != O2IB_MSG_NOOP;
		conn->last_send_ns = o2ib_now(net);
	}
	return 0;
}

/* Post @tx on a free send slot. 0, 1 (no slot or no send-queue room free), or -errno. */
static int post_tx(struct o2ib_conn *conn, struct o2ib_tx *tx, int credit)
{
	uint32_t s;
	int rc;

	for (s = conn->slot_low; s < conn->nslots && conn->slots[s]; s++)
		;
	conn->slot_low = s;
	if (s == conn->nslots)
		return 1;
	rc = post_window(conn, tx, s, credit);
	if (rc == 0)
		conn->slot_low = s + 1;
	return rc;
}

/* Post the next windows of slotted transfers that wait for send-queue room. 0, or -errno. */
static int post_stalled(struct o2ib_conn *conn)
{
	for (uint32_t s = 0; s < conn->nslots && conn->xfers_stalled; s++) {
		struct o2ib_tx *tx = conn->slots[s];
		int rc;

		if (!tx || !tx->xfer || conn->slot_wrs[s])
			continue;
		rc = post_window(conn, tx, s, 0);
		if (rc)
			return rc < 0 ? rc : 0;
		conn->xfers_stalled--;
	}
	return 0;
}

static void check_sends_now(struct o2ib_conn *conn)
{
	uint64_t now = o2ib_now(conn->net); /* keepalives count in seconds: a tick's resolution does */
	int rc;

	if (conn->state != O2IB_CONN_ESTABLISHED || conn->stalled) /* stalled: a fault rule, nothing goes */
		return;
	if ((rc = post_stalled(conn))) {
		o2ib_conn_close(conn, rc, "cannot post an RDMA window");
		return;
	}
	{
		struct o2ib_credit_state cs = credit_state(conn, now);

		if (o2ib_credit_need_noop(&cs)) {
			struct o2ib_tx *noop = o2ib_tx_new(conn->net, O2IB_MSG_NOOP);

			if (noop)
				o2ib_conn_queue(conn, noop);
		}
	}
	for (;;) {
		/* answers first; each queue holds what o2ib_credit_needed put there */
		struct ulnet_list *q = !ulnet_list_empty(&conn->txq_nocred) ? &conn->txq_nocred
				     : !ulnet_list_empty(&conn->txq) ? &conn->txq : NULL;
		struct o2ib_credit_state cs;
		struct o2ib_tx *tx;
		enum o2ib_credit_verdict v;

		if (!q)
			break;
		tx = ulnet_container_of(q->next, struct o2ib_tx, link);
		cs = credit_state(conn, now);
		v = o2ib_credit_decide(&cs, tx->msg.type);
		if (v == O2IB_CREDIT_DROP_NOOP) {
			ulnet_list_del(&tx->link);
			o2ib_tx_done(conn->net, tx, 0);
			continue;
		}
		if (v != O2IB_CREDIT_POST && v != O2IB_CREDIT_POST_NOCRED)
			break;
		ulnet_list_del(&tx->link);
		rc = post_tx(conn, tx, v == O2IB_CREDIT_POST);
		if (rc == 1) {
			ulnet_list_add_head(&tx->link, q);
			break;
		}
		if (rc == 0 && o2ib_credit_reserves(tx->msg.type))
			conn->reserved_credits--;
		if (rc < 0) {
			tx->waiting = false;
			o2ib_tx_done(conn->net, tx, rc);
			o2ib_conn_close(conn, rc, "cannot post a send");
			return;
		}
	}
}

/* Deferred send checks. Handling a completion or event may make a send possible (each answer,
 * repost, queued message and send completion: about ten per RPC), and most checks would find nothing
 * new to post. So inside o2ib_progress a check only marks the conn; o2ib_run_checks() does one check
 * per marked conn after each batch (the CM events, then each poll of up to 16 completions), before the
 * next poll, and o2ib_progress drains the marks before it returns, so no queued message waits for a
 * later call (a check that queues or completes more, nested, marks again and runs in the same drain).
 * Ordering: each queue posts in FIFO order, and the no-credit queue goes before the credit queue at
 * each check. Within one batch, sends that several of its completions make possible go out together
 * after it, so a no-credit message (PUT_ACK, PUT_DONE, GET_DONE, PUT_NAK) queued by a later completion
 * of the batch may be posted before a credit message queued by an earlier one, just as when both wait
 * on a full set of slots. Nothing orders messages across the two queues (lnet-wire.md §4.1; the
 * kernel's o2iblnd keeps the same two queues). NOOP decisions see the batch's credits together. */
void o2ib_conn_check_sends(struct o2ib_conn *conn)
{
	if (conn->net->in_progress) {
		if (!conn->check_due && conn->state == O2IB_CONN_ESTABLISHED) {
			conn->check_due = true;
			ulnet_list_add_tail(&conn->check_link, &conn->net->checks);
		}
		return;
	}
	check_sends_now(conn);
}

void o2ib_run_checks(struct o2ib_net *net)
{
	while (!ulnet_list_empty(&net->checks)) {
		struct o2ib_conn *conn = ulnet_container_of(net->checks.next, struct o2ib_conn, check_link);

		ulnet_list_del(&conn->check_link);
		conn->check_due = false;
		check_sends_now(conn);
	}
}

void o2ib_peer_queue(struct o2ib_peer *peer, struct o2ib_tx *tx)
{
	tx->deadline_ns = o2ib_now(peer->net) + (uint64_t)peer->net->tun.timeout * NS_PER_S;
	struct o2ib_conn *conn = o2ib_peer_conn_pick(peer);

	if (conn) {
		o2ib_conn_queue(conn, tx);
		o2ib_conn_check_sends(conn);
		return;
	}
	ulnet_list_add_tail(&tx->link, &peer->txq);
	o2ib_peer_timer_by(peer, tx->deadline_ns);
	/* a conn on its way up (ours, or the peer's: kernel ibp_accepting) takes the queue */
	if (!peer->connecting && !peer->accepting) {
		if (ulnet__now_ns() >= peer->retry_at_ns)
			o2ib_connect(peer); /* a failure fails peer->txq, this tx included */
		else
			o2ib_peer_timer_by(peer, peer->retry_at_ns); /* backing off: connect when it ends */
	}
}

void o2ib_conn_tick(struct o2ib_conn *conn, uint64_t now_ns)
{
	struct ulnet_list *qs[] = { &conn->txq, &conn->txq_nocred };
	char why[96];

	if (conn->state != O2IB_CONN_ESTABLISHED)
		return;
	if (conn->stalled && conn->stall_end_ns && now_ns >= conn->stall_end_ns)
		o2ib_conn_fault_look(conn, now_ns); /* its latency is over */
	if (conn->state != O2IB_CONN_ESTABLISHED)
		return;
	for (unsigned i = 0; i < 2; i++)
		if (!ulnet_list_empty(qs[i]) &&
		    ulnet_container_of(qs[i]->next, struct o2ib_tx, link)->deadline_ns <= now_ns) {
			snprintf(why, sizeof(why), "a message waited %d s for credits (lnd tunable timeout)",
				 conn->net->tun.timeout);
			o2ib_conn_close(conn, -ETIMEDOUT, why);
			return;
		}
	if (!ulnet_list_empty(&conn->waitq) &&
	    ulnet_container_of(conn->waitq.next, struct o2ib_tx, link)->deadline_ns <= now_ns) {
		snprintf(why, sizeof(why), "no answer to a %s within %d s (lnd tunable timeout)",
			 o2ib_msg_type_name(ulnet_container_of(conn->waitq.next, struct o2ib_tx, link)->msg.type),
			 conn->net->tun.timeout);
		o2ib_conn_close(conn, -ETIMEDOUT, why);
		return;
	}
	for (uint32_t s = 0; s < conn->nslots; s++)
		if (conn->slots[s] && conn->slots[s]->deadline_ns <= now_ns) {
			snprintf(why, sizeof(why), "a send did not complete within %d s (lnd tunable timeout)",
				 conn->net->tun.timeout);
			o2ib_conn_close(conn, -ETIMEDOUT, why);
			return;
		}
	if (keepalive_due(conn, now_ns))
		o2ib_conn_check_sends(conn);
}

uint64_t o2ib_conn_next_deadline(const struct o2ib_conn *conn)
{
	const struct ulnet_list *qs[] = { &conn->txq, &conn->txq_nocred, &conn->waitq };
	uint64_t next = UINT64_MAX;

	if (conn->state != O2IB_CONN_ESTABLISHED)
		return next;
	for (unsigned i = 0; i < 3; i++) { /* each queue is oldest first */
		uint64_t d = ulnet_list_empty(qs[i]) ? UINT64_MAX
						    : ulnet_container_of(qs[i]->next, struct o2ib_tx, link)->deadline_ns;

		if (d < next)
			next = d;
	}
	/* a queue depth of slots, looked at once per timer expiry, not per tick */
	for (uint32_t s = 0; s < conn->nslots; s++)
		if (conn->slots[s] && conn->slots[s]->deadline_ns < next)
			next = conn->slots[s]->deadline_ns;
	if (conn->net->tun.keepalive) {
		uint64_t ka = conn->last_send_ns + (uint64_t)conn->net->tun.keepalive * NS_PER_S;

		if (ka < next)
			next = ka;
	}
	if (conn->stalled && conn->stall_end_ns && conn->stall_end_ns < next)
		next = conn->stall_end_ns;
	return next;
}
