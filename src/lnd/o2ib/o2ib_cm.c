/* SPDX-License-Identifier: MIT */
/* o2ib connection management (lnet-wire.md §4.3): the active connect, the CM events, the passive
 * accept and the rejects. What to propose, accept or retry is decided by o2ib_conn_policy; this file
 * carries those decisions out over the fabric's CM. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "o2ib.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull

static int connect_attempt(struct o2ib_peer *peer)
{
	struct o2ib_net *net = peer->net;
	const struct fab_provider_ops *f = net->fab;
	struct o2ib_conn *conn = o2ib_conn_alloc(net, peer);
	struct sockaddr_in dst;
	struct o2ib_msg m;
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	int timeout_ms = net->tun.timeout * 1000 / 4 > 5000 ? net->tun.timeout * 1000 / 4 : 5000;
	int rc, n;

	if (!conn)
		return -ENOMEM;
	if ((rc = o2ib_nid_sockaddr(&peer->nid, ntohs(net->addr.sin_port), &dst)) ||
	    (rc = f->create_id(net->dev, conn, &conn->id))) {
		o2ib_conn_free(conn);
		return rc;
	}
	/* a depth the device could not hold is remembered for the peer and is what CONNREQ offers */
	if ((rc = f->bind_src(conn->id, net->tun.use_privileged_port)) ||
	    (rc = o2ib_conn_setup_qp(conn, &peer->act.queue_depth)))
		goto fail;
	conn->act = peer->act; /* its CONNACK is checked against what this CONNREQ proposed */
	o2ib_active_connreq(&net->me, &conn->act, &m);
	n = o2ib_msg_pack(&m, false, pd, sizeof(pd));
	if (n < 0) {
		rc = n;
		goto fail;
	}
	if ((rc = f->connect(conn->id, &dst, pd, (size_t)n, timeout_ms)))
		goto fail;
	o2ib_conn_set_state(conn, O2IB_CONN_ACTIVE_CONNECT); /* on peer->conns from here */
	return 0;
fail:
	o2ib_conn_destroy_id(conn);
	o2ib_conn_free(conn);
	return rc;
}

int o2ib_connect(struct o2ib_peer *peer)
{
	struct o2ib_net *net = peer->net;
	uint32_t want = o2ib_conns_to_open((uint32_t)net->tun.conns_per_peer, peer->nup, peer->connecting,
					   peer->accepting), opened = 0;
	char ns[ULNET_NID_STRLEN];
	int rc = 0;

	if (!want)
		return 0; /* a connection is up or on its way */
	if (!peer->act.attempts) /* else a retry scheduled after a reject: keep what it renegotiated */
		o2ib_active_init(&net->me, peer->nid4, peer->last_version, peer->last_stamp, &peer->act);
	while (opened < want && !(rc = connect_attempt(peer)))
		opened++;
	if (rc && !opened) {
		ULNET_LOG(O2IB, ERR, "%s: cannot start a connection: %s", o2ib_nid_str(&peer->nid, ns, sizeof(ns)),
			  strerror(-rc));
		o2ib_peer_attempt_failed(peer, rc);
	} else if (rc) {
		ULNET_LOG(O2IB, WARN, "%s: started %u of %u connections: %s (lnd tunable conns_per_peer %d)",
			  o2ib_nid_str(&peer->nid, ns, sizeof(ns)), opened, want, strerror(-rc), net->tun.conns_per_peer);
		rc = 0;
	}
	return rc;
}

void o2ib_conn_established(struct o2ib_conn *conn)
{
	struct o2ib_peer *peer = conn->peer;

	if (conn->state == O2IB_CONN_PASSIVE_WAIT) {
		ulnet_list_del(&conn->link);
		peer->accepting--;
	}
	o2ib_conn_set_state(conn, O2IB_CONN_ESTABLISHED);
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
	peer->limits.lnet_mtu = ULNET_MTU; /* larger payloads cannot be sent; above 3976 bytes they go by RDMA */
	peer->limits.lnd_msg_size = conn->max_msg_size; /* ibcp_max_msg_size, as negotiated */
	peer->have_limits = true;
	/* every conn of the peer stays and is used (conns_per_peer, or both sides' ends of a race); only
	 * those made with an earlier incarnation or version of the peer go */
	{
		uint32_t n = o2ib_peer_close_conns(peer, conn, true, -ESTALE);

		if (n) {
			char ns[ULNET_NID_STRLEN];

			ULNET_LOG(O2IB, INFO, "%s: closed %u connection(s) to an earlier incarnation: the peer came "
				  "back with incarnation %llu version 0x%x", o2ib_nid_str(&peer->nid, ns, sizeof(ns)), n,
				  (unsigned long long)conn->peer_stamp, conn->version);
		}
	}
	while (!ulnet_list_empty(&peer->txq)) {
		struct o2ib_tx *tx = ulnet_container_of(peer->txq.next, struct o2ib_tx, link);

		ulnet_list_del(&tx->link);
		o2ib_conn_queue(conn, tx);
	}
	o2ib_conn_fault_look(conn, ulnet__now_ns()); /* a stall rule that fits stops it from here on */
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
		const struct o2ib_conn *up = o2ib_peer_conn_up(peer);

		pv.known = up != NULL;
		pv.stamp = up ? up->peer_stamp : 0;
		pv.version = up ? up->version : 0;
		pv.connecting = peer->connecting > 0;
		pv.races = peer->races;
		pv.conns = peer->nup + peer->accepting;
	}
	o2ib_passive_decide(ev->private_data, ev->private_data_len, &net->me, &pv, &d);
	if (d.accept)
		o2ib_fault_reject(net, d.peer_nid, &d); /* a reject fault rule acts on what we would accept */
	if (d.close_stale && peer && peer->nup) {
		uint32_t closed = o2ib_peer_close_conns(peer, NULL, false, -ESTALE);

		ULNET_LOG(O2IB, WARN, "%s: closed its %u connection(s): the peer reconnected with a new "
			  "incarnation or version", o2ib_nid_str(&peer->nid, line, sizeof(line)), closed);
	}
	if (!d.accept) {
		o2ib_passive_describe(&d, line, sizeof(line));
		if (d.rej.why == O2IB_REJECT_CONN_RACE) {
			if (peer) /* (a fault rule's CONN_RACE may name a peer we do not know) */
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
	conn = peer ? o2ib_conn_alloc(net, peer) : NULL;
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
	conn->max_msg_size = d.asked.max_msg_size;
	ack.version = d.version;
	ack.type = O2IB_MSG_CONNACK;
	ack.srcnid = net->me.nid;
	ack.srcstamp = net->me.stamp;
	ack.dstnid = d.peer_nid;
	ack.dststamp = d.peer_stamp;
	ack.u.connparams = d.cp;
	rc = o2ib_conn_setup_qp(conn, &conn->queue_depth);
	/* CONNACK echoes the depth the QP could hold (never more than asked: the peer checks that) */
	ack.u.connparams.queue_depth = conn->queue_depth;
	if (rc || (n = o2ib_msg_pack(&ack, false, pd, sizeof(pd))) < 0 ||
	    (rc = f->accept(ev->id, pd, (size_t)n))) {
		ULNET_LOG(O2IB, ERR, "%s: cannot accept a connection: %s (device limits max_qp, max_mr)",
			  o2ib_nid_str(&peer->nid, line, sizeof(line)), strerror(rc ? -rc : EINVAL));
		conn->id = NULL; /* the reject below destroys it */
		conn->destroyed = true;
		o2ib_conn_free(conn);
		reject_no_resources(net, ev->id, d.version);
		return;
	}
	o2ib_conn_set_state(conn, O2IB_CONN_PASSIVE_WAIT); /* on peer->conns from here */
	conn->accept_deadline_ns = ulnet__now_ns() + (uint64_t)net->tun.timeout * NS_PER_S;
	peer->accepting++;
	ulnet_list_add_tail(&conn->link, &net->pending); /* becomes the peer's conn at ESTABLISHED */
	ulnet__timer_arm_by(ulnet__ni_node(net->ni), &net->pending_timer, conn->accept_deadline_ns);
}

static void on_rejected(struct o2ib_conn *conn, const struct fab_cm_event *ev)
{
	struct o2ib_peer *peer = conn->peer;
	struct o2ib_reject_action act;
	char line[384];

	/* the retry builds on what this attempt proposed (another one may have renegotiated meanwhile) */
	peer->act.version = conn->act.version;
	peer->act.queue_depth = conn->act.queue_depth;
	peer->act.max_frags = conn->act.max_frags;
	peer->act.peer_stamp = conn->act.peer_stamp;
	o2ib_active_on_reject(ev->private_data, ev->private_data_len, &peer->act, &act);
	o2ib_reject_describe(&act, &peer->act, line, sizeof(line));
	if (act.retry == O2IB_GIVE_UP)
		ULNET_LOG(O2IB, ERR, "%s", line);
	else
		ULNET_LOG(O2IB, INFO, "%s", line);
	o2ib_conn_close(conn, act.err ? act.err : -ECONNREFUSED, NULL);
	o2ib_conn_destroy_id(conn);
	if (peer->nup)
		return; /* a connection of the peer is up (its own won the race, or another of ours): it serves */
	if (act.retry == O2IB_RETRY_NOW) {
		peer->stats.renegotiations += act.why == O2IB_REJECT_RDMA_FRAGS || act.why == O2IB_REJECT_MSG_QUEUE_SIZE;
		if (connect_attempt(peer))
			o2ib_peer_attempt_failed(peer, -ECONNREFUSED);
	} else if (act.retry == O2IB_RETRY_LATER) {
		peer->retry_at_ns = ulnet__now_ns() + (uint64_t)act.delay_ms * NS_PER_MS;
		o2ib_peer_timer_by(peer, peer->retry_at_ns);
	} else {
		o2ib_peer_attempt_failed(peer, act.err);
	}
}

void o2ib_cm_event(struct o2ib_net *net, const struct fab_cm_event *ev)
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
			o2ib_conn_established(conn);
		} else if (conn->state == O2IB_CONN_ACTIVE_CONNECT) {
			rc = o2ib_active_on_connack(ev->private_data, ev->private_data_len, &net->me, &conn->act, &res);
			if (rc) {
				snprintf(why, sizeof(why), "bad CONNACK: %s", res.reason ? res.reason : "?");
				o2ib_conn_close(conn, rc, why);
				o2ib_peer_attempt_failed(conn->peer, rc);
				break;
			}
			conn->max_msg_size = res.max_msg_size;
			conn->version = res.version;
			conn->queue_depth = res.queue_depth;
			conn->max_frags = res.max_frags;
			conn->peer_stamp = res.peer_stamp;
			o2ib_conn_established(conn);
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
			o2ib_conn_destroy_id(conn);
			o2ib_peer_attempt_failed(peer, rc);
		}
		break;
	case FAB_CM_DISCONNECTED:
		if (conn->state != O2IB_CONN_CLOSING) { /* a peer leaving is no error (kernel: D_NET) */
			ULNET_LOG(O2IB, INFO, "%s: the peer disconnected", o2ib_conn_peer_str(conn, ns, sizeof(ns)));
			o2ib_conn_close(conn, -ECONNRESET, NULL);
		}
		o2ib_conn_destroy_id(conn);
		break;
	default:
		break;
	}
}
