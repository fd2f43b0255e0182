/* SPDX-License-Identifier: MIT */
/* o2ib completions: the receive ring (post, repost), received messages checked and handed on, work
 * completions, and o2ib_progress, the loop over CM events and completions. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "o2ib.h"

int o2ib_post_rx(struct o2ib_conn *conn, uint32_t i)
{
	struct fab_sge sge = { (uint64_t)(uintptr_t)(conn->rx_area + (size_t)i * O2IB_MSG_SIZE), O2IB_MSG_SIZE,
			       conn->rx_mr.lkey };
	struct fab_recv_wr wr = { NULL, i, &sge, 1 };
	const struct fab_recv_wr *bad;

	return o2ib_fab(conn)->post_recv(conn->qp, &wr, &bad);
}

void o2ib_rx_repost(struct o2ib_rx *rx, bool credit)
{
	struct o2ib_conn *conn = rx->conn;
	int rc;

	if (conn->state == O2IB_CONN_CLOSING || conn->destroyed)
		return;
	if ((rc = o2ib_post_rx(conn, rx->idx))) {
		o2ib_conn_close(conn, rc, "cannot repost a receive");
		return;
	}
	if (credit)
		conn->outstanding_credits++;
	o2ib_conn_check_sends(conn);
}

static void bad_msg(struct o2ib_conn *conn, const char *fmt, uint64_t got, uint64_t want)
{
	char why[192];

	snprintf(why, sizeof(why), fmt, (unsigned long long)got, (unsigned long long)want);
	o2ib_conn_close(conn, -EPROTO, why);
}

void o2ib_handle_rx(struct o2ib_conn *conn, struct o2ib_rx *rx, uint32_t len)
{
	struct o2ib_net *net = conn->net;
	struct o2ib_msg *m = &rx->msg;
	struct o2ib_wire_err err;
	char why[192];
	int rc;

	rc = o2ib_msg_unpack(conn->rx_area + (size_t)rx->idx * O2IB_MSG_SIZE, len, O2IB_MAX_RDMA_FRAGS, m, &err);
	if (rc) {
		o2ib_wire_err_format(&err, why, sizeof(why));
		o2ib_conn_close(conn, -EPROTO, why);
		return;
	}
	if (m->srcnid != conn->peer->nid4)
		return bad_msg(conn, "kib_msg srcnid %#llx is not the peer's %#llx", m->srcnid, conn->peer->nid4);
	if (m->dstnid != net->me.nid)
		return bad_msg(conn, "kib_msg dstnid %#llx is not my NID %#llx", m->dstnid, net->me.nid);
	if (m->srcstamp != conn->peer_stamp)
		return bad_msg(conn, "kib_msg srcstamp %llu is not the peer's incarnation %llu", m->srcstamp,
			       conn->peer_stamp);
	if (m->dststamp != net->me.stamp)
		return bad_msg(conn, "kib_msg dststamp %llu is not my incarnation %llu", m->dststamp, net->me.stamp);
	if (m->version != conn->version)
		return bad_msg(conn, "kib_msg version %#llx, the connection's is %#llx", m->version, conn->version);
	if (conn->credits + m->credits > conn->queue_depth)
		return bad_msg(conn, "kib_msg returns credits up to %llu, beyond the queue depth %llu",
			       (uint64_t)conn->credits + m->credits, conn->queue_depth);
	conn->credits += m->credits;
	conn->rx_msgs += m->type != O2IB_MSG_NOOP;
	switch (m->type) {
	case O2IB_MSG_NOOP:
		o2ib_rx_repost(rx, o2ib_credit_needed(conn->version, O2IB_MSG_NOOP)); /* a V1 NOOP spent a credit */
		break;
	case O2IB_MSG_IMMEDIATE:
		if (m->u.immediate.hdr.payload_length != m->u.immediate.payload_len)
			return bad_msg(conn, "IMMEDIATE carries %llu payload bytes, its LNet header says %llu",
				       m->u.immediate.payload_len, m->u.immediate.hdr.payload_length);
		rx->held = true;
		conn->rx_held++;
		rc = ulnet__parse(net->ni, &m->u.immediate.hdr, &conn->peer->nid, rx);
		if (rc < 0) {
			rx->held = false;
			conn->rx_held--;
			o2ib_conn_close(conn, rc, "the core refused an IMMEDIATE's LNet header");
		}
		break;
	case O2IB_MSG_PUT_REQ:
	case O2IB_MSG_GET_REQ:
		rx->held = true;
		conn->rx_held++;
		rc = m->type == O2IB_MSG_PUT_REQ ? ulnet__parse(net->ni, &m->u.putreq.hdr, &conn->peer->nid, rx)
						 : ulnet__parse_rdma(net->ni, &m->u.get.hdr, &conn->peer->nid, rx);
		if (rc < 0) {
			rx->held = false;
			conn->rx_held--;
			snprintf(why, sizeof(why), "the core refused a %s's LNet header", o2ib_msg_type_name(m->type));
			o2ib_conn_close(conn, rc, why);
		}
		break;
	case O2IB_MSG_PUT_ACK:
	case O2IB_MSG_PUT_NAK:
	case O2IB_MSG_PUT_DONE:
	case O2IB_MSG_GET_DONE:
		o2ib_rx_answer(conn, rx);
		break;
	default:
		snprintf(why, sizeof(why), "kib_msg type %s (%#x) has no place after the handshake",
			 o2ib_msg_type_name(m->type), m->type);
		o2ib_conn_close(conn, -EPROTO, why);
		return;
	}
	o2ib_conn_check_sends(conn);
}

static void handle_wc(struct o2ib_net *net, const struct fab_wc *wc)
{
	struct o2ib_conn *conn = wc->qp_context;
	char why[128];

	if (!conn || conn->destroyed)
		return;
	if (wc->wr_id & O2IB_WR_TX) {
		uint32_t s = (uint32_t)(wc->wr_id & 0xffffffffu);
		struct o2ib_tx *tx = s < conn->nslots ? conn->slots[s] : NULL;

		if (!tx)
			return;
		if ((wc->wr_id & O2IB_WR_RDMA) && wc->status == FAB_WC_SUCCESS) {
			/* a window's last WRITE: the window's slots are free, the next one may go */
			conn->sq_used -= conn->slot_wrs[s];
			conn->slot_wrs[s] = 0;
			conn->xfers_stalled++;
			if (conn->state == O2IB_CONN_ESTABLISHED)
				o2ib_conn_check_sends(conn);
			return;
		}
		if (wc->wr_id & O2IB_WR_RDMA) { /* a WRITE failed: the rest of its transfer is flushed */
			if (conn->state != O2IB_CONN_CLOSING) {
				snprintf(why, sizeof(why), "RDMA WRITE completion %s", fab_wc_status_str(wc->status));
				o2ib_conn_close(conn, -EIO, why);
			}
			return;
		}
		conn->slots[s] = NULL;
		if (s < conn->slot_low)
			conn->slot_low = s;
		conn->sq_used -= conn->slot_wrs[s];
		conn->nsends_posted--;
		conn->noops_posted -= tx->msg.type == O2IB_MSG_NOOP;
		tx->slot = -1;
		if (wc->status != FAB_WC_SUCCESS) {
			if (tx->waiting) {
				ulnet_list_del(&tx->link);
				tx->waiting = false;
			}
			o2ib_tx_done(net, tx, -EIO);
		} else if (!tx->waiting) {
			o2ib_tx_done(net, tx, tx->status);
		}
		if (wc->status != FAB_WC_SUCCESS && conn->state != O2IB_CONN_CLOSING) {
			snprintf(why, sizeof(why), "send completion %s", fab_wc_status_str(wc->status));
			o2ib_conn_close(conn, -EIO, why);
		}
		o2ib_conn_check_sends(conn);
		return;
	}
	if (wc->wr_id >= conn->nrx)
		return;
	if (wc->status != FAB_WC_SUCCESS) {
		if (conn->state != O2IB_CONN_CLOSING) {
			snprintf(why, sizeof(why), "receive completion %s", fab_wc_status_str(wc->status));
			o2ib_conn_close(conn, -EIO, why);
		}
		return;
	}
	if (conn->state == O2IB_CONN_PASSIVE_WAIT)
		o2ib_conn_established(conn); /* a receive proves the connection up, whichever came first */
	if (conn->state != O2IB_CONN_ESTABLISHED)
		return; /* CLOSING drops */
	if (conn->stalled) {
		o2ib_conn_stall_rx(conn, (uint32_t)wc->wr_id, wc->byte_len); /* a stall fault rule: unread for now */
		return;
	}
	o2ib_handle_rx(conn, &conn->rxs[wc->wr_id], wc->byte_len);
}

/* Run the provider once, then handle what it produced and what handling it produces (completions
 * of sends posted meanwhile), until nothing is left. Data that arrives meanwhile keeps the device's
 * fd readable: the loop comes back for it, so the provider's progress (an epoll_wait of the shm
 * provider) runs once a call, not once more per round. A call nested in one under way only asks the
 * running one to go round again. */
void o2ib_progress(struct o2ib_net *net, bool provider)
{
	const struct fab_provider_ops *f = net->fab;
	struct fab_cm_event ev;
	struct fab_wc wc[16];
	int n, rc;

	if (net->in_progress) {
		net->progress_again = true;
		return;
	}
	net->in_progress = true;
	if (provider && (rc = f->progress(net->dev)))
		ULNET_LOG(O2IB, ERR, "%s provider: progress failed: %s", f->name, strerror(-rc));
	do {
		net->progress_again = false;
		/* o2ib_now's time from here on: nothing reads it before (the provider's progress never
		 * calls back into the LND, fabric.h), so this one read serves the first round too */
		net->round_ns = ulnet__now_coarse_ns();
		while (f->get_event(net->dev, &ev) == 0) {
			o2ib_cm_event(net, &ev);
			net->progress_again = true;
		}
		o2ib_run_checks(net);
		while ((n = f->poll_cq(net->dev, wc, 16)) > 0) {
			for (int i = 0; i < n; i++)
				handle_wc(net, &wc[i]);
			o2ib_run_checks(net);
			net->progress_again = true;
		}
	} while (net->progress_again && !net->shutting_down);
	o2ib_run_checks(net); /* (none left, unless shutting down cut the loop short) */
	net->in_progress = false;
	o2ib_reap_zombies(net);
}
