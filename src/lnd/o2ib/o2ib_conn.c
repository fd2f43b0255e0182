/* SPDX-License-Identifier: MIT */
/* o2ib connections over the fabric: allocation, the QP with its receive ring and send slots, close,
 * and the zombies. A closed conn waits on net->zombies until its id is destroyed and the core has
 * given back every receive it holds; only then is it freed, so no completion or lnd_recv ever meets
 * freed memory. The handshake is in o2ib_cm.c, sending in o2ib_tx.c, completions in o2ib_cb.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "o2ib.h"

#define SQ_RDMA_ROOM 258u    /* send-queue WRs beyond the SEND slots: one transfer's WRITEs */

const char *o2ib_conn_peer_str(const struct o2ib_conn *conn, char *buf, size_t len)
{
	return conn->peer ? o2ib_nid_str(&conn->peer->nid, buf, len) : "(unknown peer)";
}

const char *o2ib_conn_state_name(enum o2ib_conn_state s)
{
	switch (s) {
	case O2IB_CONN_INIT: return "INIT";
	case O2IB_CONN_ACTIVE_CONNECT: return "ACTIVE_CONNECT";
	case O2IB_CONN_PASSIVE_WAIT: return "PASSIVE_WAIT";
	case O2IB_CONN_ESTABLISHED: return "ESTABLISHED";
	case O2IB_CONN_CLOSING: return "CLOSING";
	}
	return "?";
}

void o2ib_conn_set_state(struct o2ib_conn *conn, enum o2ib_conn_state next)
{
	char ns[ULNET_NID_STRLEN];

	struct o2ib_peer *peer = conn->peer;

	ULNET_LOG(O2IB, DEBUG, "%s: %s -> %s", o2ib_conn_peer_str(conn, ns, sizeof(ns)),
		  o2ib_conn_state_name(conn->state), o2ib_conn_state_name(next));
	if (peer) {
		peer->connecting -= conn->state == O2IB_CONN_ACTIVE_CONNECT;
		peer->nup -= conn->state == O2IB_CONN_ESTABLISHED;
		peer->connecting += next == O2IB_CONN_ACTIVE_CONNECT;
		peer->nup += next == O2IB_CONN_ESTABLISHED;
		if (next == O2IB_CONN_CLOSING && conn->on_peer) {
			ulnet_list_del(&conn->peer_link);
			conn->on_peer = false;
		} else if (next != O2IB_CONN_CLOSING && next != O2IB_CONN_INIT && !conn->on_peer) {
			ulnet_list_add_tail(&conn->peer_link, &peer->conns);
			conn->on_peer = true;
		}
	}
	conn->state = next;
}

struct o2ib_conn *o2ib_peer_conn_up(const struct o2ib_peer *peer)
{
	for (const struct ulnet_list *p = peer->conns.next; p != &peer->conns; p = p->next) {
		struct o2ib_conn *c = ulnet_container_of(p, struct o2ib_conn, peer_link);

		if (c->state == O2IB_CONN_ESTABLISHED)
			return c;
	}
	return NULL;
}

struct o2ib_conn *o2ib_peer_conn_pick(struct o2ib_peer *peer)
{
	struct o2ib_conn *c;

	if (!peer->nup)
		return NULL;
	c = o2ib_peer_conn_up(peer);
	if (c && peer->nup > 1) { /* the next pick starts after it */
		ulnet_list_del(&c->peer_link);
		ulnet_list_add_tail(&c->peer_link, &peer->conns);
	}
	return c;
}

uint32_t o2ib_peer_close_conns(struct o2ib_peer *peer, const struct o2ib_conn *keep, bool stale_only, int status)
{
	uint32_t n = 0;
	bool again = true;

	while (again) { /* a close takes the conn off the list: look again from the start */
		again = false;
		for (struct ulnet_list *p = peer->conns.next; p != &peer->conns; p = p->next) {
			struct o2ib_conn *c = ulnet_container_of(p, struct o2ib_conn, peer_link);

			if (c == keep || c->state != O2IB_CONN_ESTABLISHED ||
			    (stale_only && !o2ib_conn_stale(c->peer_stamp, c->version, keep->peer_stamp, keep->version)))
				continue;
			o2ib_conn_close(c, status, NULL);
			n++;
			again = true;
			break;
		}
	}
	return n;
}

struct o2ib_conn *o2ib_conn_alloc(struct o2ib_net *net, struct o2ib_peer *peer)
{
	struct o2ib_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	conn->net = net;
	conn->peer = peer;
	peer->nconns++;
	ulnet_list_init(&conn->txq);
	ulnet_list_init(&conn->txq_nocred);
	ulnet_list_init(&conn->waitq);
	ulnet_list_init(&conn->link);
	ulnet_list_init(&conn->check_link);
	ulnet_list_init(&conn->peer_link);
	conn->last_send_ns = ulnet__now_coarse_ns();
	return conn;
}

/* Receive ring (2 x depth + 2), SEND slots and send queue for @depth, within @max_wr. */
static void conn_size_for(struct o2ib_conn *conn, uint16_t depth, uint32_t max_wr)
{
	conn->nrx = 2u * depth + 2u;
	/* SENDs in flight are bounded by the slots; the rest of the send queue takes WRITEs */
	conn->nslots = conn->nrx;
	if (conn->nslots > max_wr / 2)
		conn->nslots = max_wr / 2 ? max_wr / 2 : 1;
	conn->sq_size = conn->nslots + SQ_RDMA_ROOM < max_wr ? conn->nslots + SQ_RDMA_ROOM : max_wr;
}

/* The QP, the receive ring (2 x depth + 2 buffers of 4096 bytes) and the send slots, all posted.
 * *@depth is what the peer's credits may reach: every credit needs its receive buffer, so when the
 * device cannot hold the ring (max_qp_wr, or QP creation failing) the depth is lowered until it
 * can, down to 1, as o2iblnd does (lnet-wire.md §3.4), and the caller advertises the lower depth. */
int o2ib_conn_setup_qp(struct o2ib_conn *conn, uint16_t *depth)
{
	const struct fab_provider_ops *f = o2ib_fab(conn);
	uint32_t max_wr = f->dev_limits(conn->net->dev)->max_qp_wr;
	uint16_t asked = *depth;
	struct fab_qp_attr attr;
	struct iovec r;
	int rc;

	while (*depth > 1 && 2u * *depth + 2u > max_wr)
		(*depth)--;
	conn_size_for(conn, *depth, max_wr);
	if (conn->nrx > max_wr) /* max_qp_wr under 4: the ring cannot hold even one credit's buffers */
		conn->nrx = max_wr;
	conn->rx_area = aligned_alloc(4096, (size_t)conn->nrx * O2IB_MSG_SIZE);
	conn->tx_area = aligned_alloc(4096, (size_t)conn->nslots * O2IB_MSG_SIZE);
	conn->rxs = calloc(conn->nrx, sizeof(*conn->rxs));
	conn->slots = calloc(conn->nslots, sizeof(*conn->slots));
	conn->slot_wrs = calloc(conn->nslots, sizeof(*conn->slot_wrs));
	conn->wrs = calloc(1, sizeof(*conn->wrs));   /* the SEND; WRITEs live in each tx's o2ib_xfer */
	conn->sges = calloc(1, sizeof(*conn->sges));
	if (!conn->rx_area || !conn->tx_area || !conn->rxs || !conn->slots || !conn->slot_wrs || !conn->wrs ||
	    !conn->sges)
		return -ENOMEM;
	r.iov_base = conn->rx_area;
	r.iov_len = (size_t)conn->nrx * O2IB_MSG_SIZE;
	if ((rc = f->reg_mr(conn->net->dev, &r, 1, FAB_ACCESS_LOCAL_WRITE, &conn->rx_mr)))
		return rc;
	conn->rx_mr_ok = true;
	r.iov_base = conn->tx_area;
	r.iov_len = (size_t)conn->nslots * O2IB_MSG_SIZE;
	if ((rc = f->reg_mr(conn->net->dev, &r, 1, FAB_ACCESS_LOCAL_WRITE, &conn->tx_mr)))
		return rc;
	conn->tx_mr_ok = true;
	/* the buffers above fit every smaller depth: only the QP is tried again */
	for (;;) {
		attr = (struct fab_qp_attr){.max_send_wr = conn->sq_size, .max_recv_wr = conn->nrx};
		rc = f->create_qp(conn->id, &attr, conn, &conn->qp);
		if (!rc || (rc != -ENOMEM && rc != -EINVAL) || *depth <= 1)
			break;
		(*depth)--;
		conn_size_for(conn, *depth, max_wr);
	}
	if (rc)
		return rc;
	if (*depth != asked) {
		char line[128];

		ULNET_LOG(O2IB, WARN, "%s: queue depth %u lowered to %u: the device's QP holds %u receive WRs "
			  "(device: max_qp_wr %u; lnd tunable peer_credits)",
			  o2ib_nid_str(&conn->peer->nid, line, sizeof(line)), asked, *depth, conn->nrx, max_wr);
	}
	f->qp_query(conn->qp, &attr); /* a device may have made a smaller send queue */
	conn->sq_size = attr.max_send_wr;
	if (conn->nslots > conn->sq_size)
		conn->nslots = conn->sq_size;
	for (uint32_t i = 0; i < conn->nrx; i++) {
		conn->rxs[i].conn = conn;
		conn->rxs[i].idx = i;
		if ((rc = o2ib_post_rx(conn, i)))
			return rc;
	}
	return 0;
}

/* Free a conn whose id is gone (or never was) and whose receives are all back. */
void o2ib_conn_free(struct o2ib_conn *conn)
{
	const struct fab_provider_ops *f = o2ib_fab(conn);

	if (conn->peer)
		conn->peer->nconns--;
	if (conn->on_peer) /* (a conn is freed in INIT or CLOSING: never on the list; kept safe all the same) */
		ulnet_list_del(&conn->peer_link);
	if (conn->check_due)
		ulnet_list_del(&conn->check_link);
	if (conn->rx_mr_ok)
		f->dereg_mr(conn->net->dev, &conn->rx_mr);
	if (conn->tx_mr_ok)
		f->dereg_mr(conn->net->dev, &conn->tx_mr);
	free(conn->rx_area);
	free(conn->tx_area);
	free(conn->rxs);
	free(conn->slots);
	free(conn->slot_wrs);
	free(conn->wrs);
	free(conn->sges);
	free(conn->stall_rx);
	free(conn);
}

static void fail_list(struct o2ib_net *net, struct ulnet_list *q, int status)
{
	while (!ulnet_list_empty(q)) {
		struct o2ib_tx *tx = ulnet_container_of(q->next, struct o2ib_tx, link);

		ulnet_list_del(&tx->link);
		o2ib_tx_done(net, tx, status);
	}
}

/* Destroy the id and QP: no completion follows, so the posted txs are completed here. */
void o2ib_conn_destroy_id(struct o2ib_conn *conn)
{
	if (conn->destroyed)
		return;
	conn->destroyed = true;
	o2ib_fab(conn)->destroy_id(conn->id);
	conn->id = NULL;
	conn->qp = NULL;
	for (uint32_t s = 0; conn->slots && s < conn->nslots; s++) {
		struct o2ib_tx *tx = conn->slots[s];

		conn->slots[s] = NULL;
		if (tx && tx->slot == (int)s && !tx->waiting)
			o2ib_tx_done(conn->net, tx, conn->close_status ? conn->close_status : -ECONNABORTED);
	}
	conn->slot_low = 0; /* (the conn is closing: nothing posts again; kept true all the same) */
}

uint64_t o2ib_pending_tick(struct o2ib_net *net, uint64_t now_ns)
{
	struct ulnet_list *p = net->pending.next, *next;
	uint64_t earliest = UINT64_MAX;
	char why[96];

	for (; p != &net->pending; p = next) {
		struct o2ib_conn *conn = ulnet_container_of(p, struct o2ib_conn, link);

		next = p->next;
		if (conn->state != O2IB_CONN_PASSIVE_WAIT)
			continue;
		if (now_ns < conn->accept_deadline_ns) {
			if (conn->accept_deadline_ns < earliest)
				earliest = conn->accept_deadline_ns;
			continue;
		}
		snprintf(why, sizeof(why), "the peer did not complete the connection within %d s (lnd tunable timeout)",
			 net->tun.timeout);
		o2ib_conn_close(conn, -ETIMEDOUT, why);
	}
	return earliest;
}

void o2ib_reap_zombies(struct o2ib_net *net)
{
	struct ulnet_list *p = net->zombies.next, *next;

	for (; p != &net->zombies; p = next) {
		struct o2ib_conn *conn = ulnet_container_of(p, struct o2ib_conn, link);

		next = p->next;
		if (net->shutting_down)
			o2ib_conn_destroy_id(conn);
		if (!conn->destroyed || (conn->rx_held && !net->shutting_down))
			continue;
		ulnet_list_del(&conn->link);
		o2ib_conn_free(conn);
	}
}

void o2ib_peer_attempt_failed(struct o2ib_peer *peer, int status)
{
	if (!peer->nup && !peer->connecting)
		o2ib_peer_failed(peer, status);
}

void o2ib_peer_failed(struct o2ib_peer *peer, int status)
{
	peer->act.attempts = 0; /* the next message starts afresh */
	fail_list(peer->net, &peer->txq, status);
	if (!peer->net->shutting_down)
		ulnet__peer_down(peer->net->ni, &peer->nid, status);
}

void o2ib_conn_close(struct o2ib_conn *conn, int status, const char *why)
{
	char ns[ULNET_NID_STRLEN];
	bool was_up = conn->state == O2IB_CONN_ESTABLISHED;

	if (conn->state == O2IB_CONN_CLOSING)
		return;
	if (conn->state == O2IB_CONN_PASSIVE_WAIT) {
		ulnet_list_del(&conn->link);
		conn->peer->accepting--;
	}
	if (why)
		ULNET_LOG(O2IB, ERR, "%s: closing the connection (%s): %s", o2ib_conn_peer_str(conn, ns, sizeof(ns)),
			  strerror(-status), why);
	o2ib_conn_set_state(conn, O2IB_CONN_CLOSING);
	conn->close_status = status;
	fail_list(conn->net, &conn->txq, status);
	fail_list(conn->net, &conn->txq_nocred, status);
	while (!ulnet_list_empty(&conn->waitq)) { /* one still in a slot is done when the slot is */
		struct o2ib_tx *tx = ulnet_container_of(conn->waitq.next, struct o2ib_tx, link);

		ulnet_list_del(&tx->link);
		tx->waiting = false;
		tx->status = status;
		if (tx->slot < 0)
			o2ib_tx_done(conn->net, tx, status);
	}
	if (!was_up)
		o2ib_conn_destroy_id(conn); /* never connected: no DISCONNECTED event to wait for */
	else if (!conn->destroyed)
		o2ib_fab(conn)->disconnect(conn->id);
	ulnet_list_add_tail(&conn->link, &conn->net->zombies);
	ulnet__timer_arm_by(ulnet__ni_node(conn->net->ni), &conn->net->reap_timer, ulnet__now_ns() + O2IB_REAP_NS);
	/* the peer is down when its last established conn goes (others carry its traffic meanwhile) */
	if (conn->peer && was_up && !conn->peer->nup && status && !conn->net->shutting_down)
		ulnet__peer_down(conn->net->ni, &conn->peer->nid, status);
	/* messages wait for this peer (an attempt that failed, a passive conn that never came up): its
	 * timer looks again soon, to reconnect when its backoff allows or to fail them; not at once, so
	 * attempts that fail at once do not follow each other without pause */
	if (conn->peer && !conn->net->shutting_down && !ulnet_list_empty(&conn->peer->txq))
		o2ib_peer_timer_by(conn->peer, ulnet__now_ns() + O2IB_RECONNECT_LOOK_NS);
}
