/* SPDX-License-Identifier: MIT */
/* o2ib connections over the fabric: the CM handshake (CONNREQ/CONNACK/kib_rej through
 * o2ib_conn_policy), the receive ring, credits and posting (lnet-wire.md §4.1, §4.3), and the
 * completion and event loop. A closed conn waits on net->zombies until its id is destroyed and the
 * core has given back every receive it holds; only then is it freed, so no completion or lnd_recv
 * ever meets freed memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "o2ib.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define WR_TX (1ull << 32)   /* wr_id: TX | send slot, or the receive index */
#define WR_RDMA (1ull << 33) /* an unsignalled WRITE of a slot's transfer (seen only on errors) */
#define SQ_RDMA_ROOM 258u    /* send-queue WRs beyond the SEND slots: one transfer's WRITEs */

static const struct fab_provider_ops *fab_of(const struct o2ib_conn *c) { return c->net->fab; }

static const char *peer_str(const struct o2ib_conn *conn, char *buf, size_t len)
{
	return conn->peer ? o2ib_nid_str(&conn->peer->nid, buf, len) : "(unknown peer)";
}

/* ---- setup ---- */

static struct o2ib_conn *conn_alloc(struct o2ib_net *net, struct o2ib_peer *peer)
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
	conn->last_send_ns = ulnet__now_coarse_ns();
	return conn;
}

static int post_rx(struct o2ib_conn *conn, uint32_t i)
{
	struct fab_sge sge = { (uint64_t)(uintptr_t)(conn->rx_area + (size_t)i * O2IB_MSG_SIZE), O2IB_MSG_SIZE,
			       conn->rx_mr.lkey };
	struct fab_recv_wr wr = { NULL, i, &sge, 1 };
	const struct fab_recv_wr *bad;

	return fab_of(conn)->post_recv(conn->qp, &wr, &bad);
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
static int conn_setup_qp(struct o2ib_conn *conn, uint16_t *depth)
{
	const struct fab_provider_ops *f = fab_of(conn);
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
		if ((rc = post_rx(conn, i)))
			return rc;
	}
	return 0;
}

/* Free a conn whose id is gone (or never was) and whose receives are all back. */
static void conn_free(struct o2ib_conn *conn)
{
	const struct fab_provider_ops *f = fab_of(conn);

	if (conn->peer)
		conn->peer->nconns--;
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
static void conn_destroy_id(struct o2ib_conn *conn)
{
	if (conn->destroyed)
		return;
	conn->destroyed = true;
	fab_of(conn)->destroy_id(conn->id);
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

void o2ib_pending_tick(struct o2ib_net *net, uint64_t now_ns)
{
	struct ulnet_list *p = net->pending.next, *next;
	char why[96];

	for (; p != &net->pending; p = next) {
		struct o2ib_conn *conn = ulnet_container_of(p, struct o2ib_conn, link);

		next = p->next;
		if (conn->state != O2IB_CONN_PASSIVE_WAIT || now_ns < conn->accept_deadline_ns)
			continue;
		snprintf(why, sizeof(why), "the peer did not complete the connection within %d s (lnd tunable timeout)",
			 net->tun.timeout);
		o2ib_conn_close(conn, -ETIMEDOUT, why);
	}
}

void o2ib_reap_zombies(struct o2ib_net *net)
{
	struct ulnet_list *p = net->zombies.next, *next;

	for (; p != &net->zombies; p = next) {
		struct o2ib_conn *conn = ulnet_container_of(p, struct o2ib_conn, link);

		next = p->next;
		if (net->shutting_down)
			conn_destroy_id(conn);
		if (!conn->destroyed || (conn->rx_held && !net->shutting_down))
			continue;
		ulnet_list_del(&conn->link);
		conn_free(conn);
	}
}

static void peer_failed(struct o2ib_peer *peer, int status)
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
		ULNET_LOG(O2IB, ERR, "%s: closing the connection (%s): %s", peer_str(conn, ns, sizeof(ns)),
			  strerror(-status), why);
	conn->state = O2IB_CONN_CLOSING;
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
		conn_destroy_id(conn); /* never connected: no DISCONNECTED event to wait for */
	else if (!conn->destroyed)
		fab_of(conn)->disconnect(conn->id);
	ulnet_list_add_tail(&conn->link, &conn->net->zombies);
	if (conn->peer && conn->peer->conn == conn) {
		conn->peer->conn = NULL;
		if (status && was_up && !conn->net->shutting_down)
			ulnet__peer_down(conn->net->ni, &conn->peer->nid, status);
	}
}

/* ---- active side ---- */

static int connect_attempt(struct o2ib_peer *peer)
{
	struct o2ib_net *net = peer->net;
	const struct fab_provider_ops *f = net->fab;
	struct o2ib_conn *conn = conn_alloc(net, peer);
	struct sockaddr_in dst;
	struct o2ib_msg m;
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	int timeout_ms = net->tun.timeout * 1000 / 4 > 5000 ? net->tun.timeout * 1000 / 4 : 5000;
	int rc, n;

	if (!conn)
		return -ENOMEM;
	if ((rc = o2ib_nid_sockaddr(&peer->nid, ntohs(net->addr.sin_port), &dst)) ||
	    (rc = f->create_id(net->dev, conn, &conn->id))) {
		conn_free(conn);
		return rc;
	}
	/* a depth the device could not hold is remembered for the peer and is what CONNREQ offers */
	if ((rc = f->bind_src(conn->id, net->tun.use_privileged_port)) ||
	    (rc = conn_setup_qp(conn, &peer->act.queue_depth)))
		goto fail;
	o2ib_active_connreq(&net->me, &peer->act, &m);
	n = o2ib_msg_pack(&m, false, pd, sizeof(pd));
	if (n < 0) {
		rc = n;
		goto fail;
	}
	if ((rc = f->connect(conn->id, &dst, pd, (size_t)n, timeout_ms)))
		goto fail;
	conn->state = O2IB_CONN_ACTIVE_CONNECT;
	peer->conn = conn;
	return 0;
fail:
	conn_destroy_id(conn);
	conn_free(conn);
	return rc;
}

int o2ib_connect(struct o2ib_peer *peer)
{
	char ns[ULNET_NID_STRLEN];
	int rc;

	if (!peer->act.attempts) /* else a retry scheduled after a reject: keep what it renegotiated */
		o2ib_active_init(&peer->net->me, peer->nid4, peer->last_version, peer->last_stamp, &peer->act);
	rc = connect_attempt(peer);
	if (rc) {
		ULNET_LOG(O2IB, ERR, "%s: cannot start a connection: %s", o2ib_nid_str(&peer->nid, ns, sizeof(ns)),
			  strerror(-rc));
		peer_failed(peer, rc);
	}
	return rc;
}

/* ---- credits and posting (lnet-wire.md §4.1) ---- */

static bool v2(const struct o2ib_conn *conn) { return conn->version != O2IB_MSG_VERSION_1; }

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
		nw = o2ib_xfer_window(tx->xfer, WR_TX | WR_RDMA | s, &first, &last, &final);
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
		*wr = (struct fab_send_wr){ .wr_id = WR_TX | s, .opcode = FAB_WR_SEND, .signaled = true, .sg_list = sge,
					    .num_sge = 1 };
		if (last)
			last->next = wr;
		else
			first = wr;
	}
	if ((rc = fab_of(conn)->post_send(conn->qp, first, &bad))) {
		conn->peer->stats.post_rejects++;
		return rc; /* (a provider error, not a full queue: the room was checked) */
	}
	{
		void (*observe)(const struct o2ib_conn *, const struct o2ib_tx *, const struct fab_send_wr *) =
			__atomic_load_n(&o2ib_post_observer, __ATOMIC_ACQUIRE);

		if (observe)
			observe(conn, tx, first);
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

	if (conn->state != O2IB_CONN_ESTABLISHED)
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

/* Deferred send checks. Handling one completion or event used to check the conn's sends at once,
 * about ten times per RPC (each answer, repost, queued message and send completion), most finding
 * nothing new to post. Inside o2ib_progress a check only marks the conn; run_checks() does one check
 * per marked conn after each batch (the CM events, then each poll of up to 16 completions), before
 * the next poll, and o2ib_progress drains the marks before it returns, so no queued message waits for
 * a later call (a check that queues or completes more, nested, marks again and runs in the same
 * drain).
 * Ordering: each queue still posts in FIFO order, and the no-credit queue still goes before the
 * credit queue at each check, as before. What changes is within one batch: sends that several of its
 * completions make possible go out together after it, so a no-credit message (PUT_ACK, PUT_DONE,
 * GET_DONE, PUT_NAK) queued by a later completion of the batch may be posted before a credit message
 * queued by an earlier one, just as when both wait on a full set of slots. Nothing orders messages
 * across the two queues (lnet-wire.md §4.1; the kernel's o2iblnd keeps the same two queues). NOOP
 * decisions see the batch's credits together (never more NOOPs than before). */
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

static void run_checks(struct o2ib_net *net)
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
	if (peer->conn && peer->conn->state == O2IB_CONN_ESTABLISHED) {
		o2ib_conn_queue(peer->conn, tx);
		o2ib_conn_check_sends(peer->conn);
		return;
	}
	ulnet_list_add_tail(&tx->link, &peer->txq);
	/* a passive conn on its way up takes the queue (kernel: ibp_accepting) */
	if (!peer->conn && !peer->accepting && ulnet__now_ns() >= peer->retry_at_ns)
		o2ib_connect(peer); /* a failure fails peer->txq, this tx included */
}

void o2ib_rx_repost(struct o2ib_rx *rx, bool credit)
{
	struct o2ib_conn *conn = rx->conn;
	int rc;

	if (conn->state == O2IB_CONN_CLOSING || conn->destroyed)
		return;
	if ((rc = post_rx(conn, rx->idx))) {
		o2ib_conn_close(conn, rc, "cannot repost a receive");
		return;
	}
	if (credit)
		conn->outstanding_credits++;
	o2ib_conn_check_sends(conn);
}

void o2ib_conn_tick(struct o2ib_conn *conn, uint64_t now_ns)
{
	struct ulnet_list *qs[] = { &conn->txq, &conn->txq_nocred };
	char why[96];

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

static void conn_established(struct o2ib_conn *conn);

/* ---- receive ---- */

static void bad_msg(struct o2ib_conn *conn, const char *fmt, uint64_t got, uint64_t want)
{
	char why[192];

	snprintf(why, sizeof(why), fmt, (unsigned long long)got, (unsigned long long)want);
	o2ib_conn_close(conn, -EPROTO, why);
}

static void handle_rx(struct o2ib_conn *conn, struct o2ib_rx *rx, uint32_t len)
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
	switch (m->type) {
	case O2IB_MSG_NOOP:
		o2ib_rx_repost(rx, !v2(conn));
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
	if (wc->wr_id & WR_TX) {
		uint32_t s = (uint32_t)(wc->wr_id & 0xffffffffu);
		struct o2ib_tx *tx = s < conn->nslots ? conn->slots[s] : NULL;

		if (!tx)
			return;
		if ((wc->wr_id & WR_RDMA) && wc->status == FAB_WC_SUCCESS) {
			/* a window's last WRITE: the window's slots are free, the next one may go */
			conn->sq_used -= conn->slot_wrs[s];
			conn->slot_wrs[s] = 0;
			conn->xfers_stalled++;
			if (conn->state == O2IB_CONN_ESTABLISHED)
				o2ib_conn_check_sends(conn);
			return;
		}
		if (wc->wr_id & WR_RDMA) { /* a WRITE failed: the rest of its transfer is flushed */
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
		conn_established(conn); /* a receive proves the connection up, whichever came first */
	if (conn->state != O2IB_CONN_ESTABLISHED)
		return; /* CLOSING drops */
	handle_rx(conn, &conn->rxs[wc->wr_id], wc->byte_len);
}

/* ---- CM events ---- */

static void conn_established(struct o2ib_conn *conn)
{
	struct o2ib_peer *peer = conn->peer;

	if (conn->state == O2IB_CONN_PASSIVE_WAIT) {
		ulnet_list_del(&conn->link);
		peer->accepting--;
	}
	conn->state = O2IB_CONN_ESTABLISHED;
	conn->credits = conn->reserved_credits = conn->queue_depth;
	/* (depth, slots and tunables stay as they are now: not per check) */
	conn->hiw = o2ib_credit_hiw(conn->queue_depth, conn->net->tun.peer_credits_hiw);
	conn->max_sends = o2ib_credit_max_sends(conn->net->tun.concurrent_sends, conn->queue_depth, conn->nslots);
	peer->last_version = conn->version;
	peer->last_stamp = conn->peer_stamp;
	peer->races = 0;
	peer->act.attempts = 0;
	peer->limits.max_frags = conn->max_frags;
	peer->limits.queue_depth = conn->queue_depth;
	peer->limits.max_msg_size = 1u << 20; /* LNET_MTU: larger payloads travel by RDMA */
	peer->have_limits = true;
	if (peer->conn && peer->conn != conn)
		o2ib_conn_close(peer->conn, 0, NULL); /* lost a race, or a stale one: keep the newest */
	peer->conn = conn;
	while (!ulnet_list_empty(&peer->txq)) {
		struct o2ib_tx *tx = ulnet_container_of(peer->txq.next, struct o2ib_tx, link);

		ulnet_list_del(&tx->link);
		o2ib_conn_queue(conn, tx);
	}
	o2ib_conn_check_sends(conn);
}

/* We cannot take the connection (memory, QPs, registrations): tell the requester so. */
static void reject_no_resources(struct o2ib_net *net, struct fab_cm_id *id, uint16_t version)
{
	struct o2ib_rej rej = { .magic = O2IB_MSG_MAGIC, .version = version, .why = O2IB_REJECT_NO_RESOURCES,
				.incarnation = net->me.stamp, .has_cp = true,
				.cp = { net->me.tun.peer_credits, net->me.tun.max_frags, O2IB_MSG_SIZE } };
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	int n = o2ib_rej_pack(&rej, pd, sizeof(pd));

	net->fab->reject(id, pd, n > 0 ? (size_t)n : 0);
	net->fab->destroy_id(id);
}

static void on_connect_request(struct o2ib_net *net, const struct fab_cm_event *ev)
{
	const struct fab_provider_ops *f = net->fab;
	struct o2ib_msg req, ack = { 0 };
	struct o2ib_wire_err err;
	struct o2ib_peer_view pv = { 0 };
	struct o2ib_passive_decision d;
	struct o2ib_peer *peer = NULL;
	struct o2ib_conn *conn;
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	char line[384];
	int n, rc;

	if (!o2ib_msg_unpack(ev->private_data, ev->private_data_len, O2IB_MAX_RDMA_FRAGS, &req, &err) &&
	    req.type == O2IB_MSG_CONNREQ) {
		struct ulnet_nid nid;

		ulnet_nid_from_nid4(req.srcnid, &nid);
		peer = o2ib_peer_find(net, &nid, false);
	}
	if (peer) {
		pv.known = peer->conn && peer->conn->state == O2IB_CONN_ESTABLISHED;
		pv.stamp = pv.known ? peer->conn->peer_stamp : 0;
		pv.version = pv.known ? peer->conn->version : 0;
		pv.connecting = peer->conn && peer->conn->state == O2IB_CONN_ACTIVE_CONNECT;
		pv.races = peer->races;
	}
	o2ib_passive_decide(ev->private_data, ev->private_data_len, &net->me, &pv, &d);
	if (d.close_stale && peer && peer->conn)
		o2ib_conn_close(peer->conn, -ESTALE, "the peer reconnected with a new incarnation");
	if (!d.accept) {
		o2ib_passive_describe(&d, line, sizeof(line));
		if (d.rej.why == O2IB_REJECT_CONN_RACE) {
			peer->races++;
			ULNET_LOG(O2IB, INFO, "%s", line);
		} else {
			ULNET_LOG(O2IB, WARN, "%s", line);
		}
		n = o2ib_rej_pack(&d.rej, pd, sizeof(pd));
		f->reject(ev->id, pd, n > 0 ? (size_t)n : 0);
		f->destroy_id(ev->id);
		return;
	}
	{
		struct ulnet_nid nid;

		ulnet_nid_from_nid4(d.peer_nid, &nid);
		peer = o2ib_peer_find(net, &nid, true);
	}
	conn = peer ? conn_alloc(net, peer) : NULL;
	if (!conn) {
		reject_no_resources(net, ev->id, d.version);
		return;
	}
	conn->id = ev->id;
	f->set_context(ev->id, conn);
	conn->version = d.version;
	conn->queue_depth = d.cp.queue_depth;
	conn->max_frags = d.cp.max_frags;
	conn->peer_stamp = d.peer_stamp;
	ack.version = d.version;
	ack.type = O2IB_MSG_CONNACK;
	ack.srcnid = net->me.nid;
	ack.srcstamp = net->me.stamp;
	ack.dstnid = d.peer_nid;
	ack.dststamp = d.peer_stamp;
	ack.u.connparams = d.cp;
	rc = conn_setup_qp(conn, &conn->queue_depth);
	/* CONNACK echoes the depth the QP could hold (never more than asked: the peer checks that) */
	ack.u.connparams.queue_depth = conn->queue_depth;
	if (rc || (n = o2ib_msg_pack(&ack, false, pd, sizeof(pd))) < 0 ||
	    (rc = f->accept(ev->id, pd, (size_t)n))) {
		ULNET_LOG(O2IB, ERR, "%s: cannot accept a connection: %s (device limits max_qp, max_mr)",
			  o2ib_nid_str(&peer->nid, line, sizeof(line)), strerror(rc ? -rc : EINVAL));
		conn->id = NULL; /* the reject below destroys it */
		conn->destroyed = true;
		conn_free(conn);
		reject_no_resources(net, ev->id, d.version);
		return;
	}
	conn->state = O2IB_CONN_PASSIVE_WAIT;
	conn->accept_deadline_ns = ulnet__now_ns() + (uint64_t)net->tun.timeout * NS_PER_S;
	peer->accepting++;
	ulnet_list_add_tail(&conn->link, &net->pending); /* becomes the peer's conn at ESTABLISHED */
}

static void on_rejected(struct o2ib_conn *conn, const struct fab_cm_event *ev)
{
	struct o2ib_peer *peer = conn->peer;
	struct o2ib_reject_action act;
	char line[384];

	o2ib_active_on_reject(ev->private_data, ev->private_data_len, &peer->act, &act);
	o2ib_reject_describe(&act, &peer->act, line, sizeof(line));
	if (act.retry == O2IB_GIVE_UP)
		ULNET_LOG(O2IB, ERR, "%s", line);
	else
		ULNET_LOG(O2IB, INFO, "%s", line);
	o2ib_conn_close(conn, act.err ? act.err : -ECONNREFUSED, NULL);
	conn_destroy_id(conn);
	if (peer->conn)
		return; /* the peer's own connection won the race */
	if (act.retry == O2IB_RETRY_NOW) {
		peer->stats.renegotiations += act.why == O2IB_REJECT_RDMA_FRAGS || act.why == O2IB_REJECT_MSG_QUEUE_SIZE;
		if (connect_attempt(peer))
			peer_failed(peer, -ECONNREFUSED);
	} else if (act.retry == O2IB_RETRY_LATER) {
		peer->retry_at_ns = ulnet__now_ns() + (uint64_t)act.delay_ms * NS_PER_MS;
	} else {
		peer_failed(peer, act.err);
	}
}

static void on_event(struct o2ib_net *net, const struct fab_cm_event *ev)
{
	struct o2ib_conn *conn = ev->context;
	struct o2ib_conn_result res;
	char ns[ULNET_NID_STRLEN], why[192];
	int rc;

	if (ev->type == FAB_CM_CONNECT_REQUEST) {
		on_connect_request(net, ev);
		return;
	}
	if (!conn)
		return;
	switch (ev->type) {
	case FAB_CM_ESTABLISHED:
		if (conn->state == O2IB_CONN_PASSIVE_WAIT) {
			conn_established(conn);
		} else if (conn->state == O2IB_CONN_ACTIVE_CONNECT) {
			rc = o2ib_active_on_connack(ev->private_data, ev->private_data_len, &net->me, &conn->peer->act,
						    &res);
			if (rc) {
				snprintf(why, sizeof(why), "bad CONNACK: %s", res.reason ? res.reason : "?");
				o2ib_conn_close(conn, rc, why);
				peer_failed(conn->peer, rc);
				break;
			}
			conn->version = res.version;
			conn->queue_depth = res.queue_depth;
			conn->max_frags = res.max_frags;
			conn->peer_stamp = res.peer_stamp;
			conn_established(conn);
		}
		break;
	case FAB_CM_REJECTED:
		if (conn->state == O2IB_CONN_ACTIVE_CONNECT)
			on_rejected(conn, ev);
		break;
	case FAB_CM_UNREACHABLE:
	case FAB_CM_TIMED_OUT:
		if (conn->state == O2IB_CONN_PASSIVE_WAIT) { /* (verbs: the REP went unanswered) */
			snprintf(why, sizeof(why), "the handshake failed before it completed (%s)",
				 fab_cm_event_str(ev->type));
			o2ib_conn_close(conn, ev->type == FAB_CM_TIMED_OUT ? -ETIMEDOUT : -ECONNABORTED, why);
		} else if (conn->state == O2IB_CONN_ACTIVE_CONNECT) {
			struct o2ib_peer *peer = conn->peer;

			rc = ev->type == FAB_CM_TIMED_OUT ? -ETIMEDOUT : (ev->status ? ev->status : -ECONNREFUSED);
			ULNET_LOG(O2IB, ERR, "%s: cannot connect: %s (%s)", o2ib_nid_str(&peer->nid, ns, sizeof(ns)),
				  fab_cm_event_str(ev->type), strerror(-rc));
			o2ib_conn_close(conn, rc, NULL);
			conn_destroy_id(conn);
			peer_failed(peer, rc);
		}
		break;
	case FAB_CM_DISCONNECTED:
		if (conn->state != O2IB_CONN_CLOSING) { /* a peer leaving is no error (kernel: D_NET) */
			ULNET_LOG(O2IB, INFO, "%s: the peer disconnected", peer_str(conn, ns, sizeof(ns)));
			o2ib_conn_close(conn, -ECONNRESET, NULL);
		}
		conn_destroy_id(conn);
		break;
	default:
		break;
	}
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
			on_event(net, &ev);
			net->progress_again = true;
		}
		run_checks(net);
		while ((n = f->poll_cq(net->dev, wc, 16)) > 0) {
			for (int i = 0; i < n; i++)
				handle_wc(net, &wc[i]);
			run_checks(net);
			net->progress_again = true;
		}
	} while (net->progress_again && !net->shutting_down);
	run_checks(net); /* (none left, unless shutting down cut the loop short) */
	net->in_progress = false;
	o2ib_reap_zombies(net);
}
