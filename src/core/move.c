/* SPDX-License-Identifier: MIT */
/* The data path: ulnet_put/ulnet_get build messages and hand them to the NI that reaches the target;
 * ulnet__parse takes headers from LNDs, validates them against local state, matches them to MDs and
 * starts the receive. Mirrors LNet's lib-move.c in behaviour, not in code. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "large_wire.h"

/* Where a send goes: the NI, and for a routed destination the route and its gateway. */
struct send_path {
	struct ulnet_ni *ni;
	bool local;
	struct ulnet_route *route; /* NULL: the NI's net is the destination's */
	struct ulnet_nid hop;      /* the gateway, or the destination itself */
};

/* The path to @nid (the caller owns a loop or holds the node lock: the NI list is stable). A routed
 * choice ranks gateways by the credits of the caller's own loop, so it holds for a send from that
 * loop only: a send handed to another loop chooses again there (ulnet__send_owned). */
static struct ulnet_ni *path_to(struct ulnet_node *node, const struct ulnet_nid *nid, struct send_path *p)
{
	struct ulnet_ni *ni = ulnet__next_hop(node, nid, &p->local, &p->route, &p->hop);
	char s[ULNET_NID_STRLEN];

	if (!ni) {
		char net[32];

		ULNET_LOG(CORE, ERR, "no NI reaches %s (no local NI on %s and no route to it is up: route show -v)",
			  ulnet_nid_format(nid, s, sizeof(s)), ulnet_net_format(ulnet_nid_net(nid), net, sizeof(net)));
	}
	p->ni = ni;
	return ni;
}

/* Send @msg along @p, chosen by this loop, which owns @p->ni. */
static int send_here(struct ulnet_loop *loop, struct ulnet_msg *msg, const struct send_path *p)
{
	struct ulnet_process_id *target = &msg->v.target;
	struct ulnet_ni *ni = p->ni;
	bool local = p->local;

	msg->loop = loop;
	msg->ni = ni;
	msg->is_tx = true;
	msg->v.hdr.dest_nid = target->nid;
	msg->v.hdr.dest_pid = target->pid;
	msg->v.hdr.src_nid = local ? target->nid : ni->nid;
	msg->v.hdr.src_pid = loop->node->pid;
	if (!local) {
		msg->peer = ulnet__peer_find(ni, &p->hop, true);
		if (!msg->peer)
			return -ENOBUFS; /* out of memory, or the peer table is full of busy peers (logged) */
		ulnet__peer_get(msg->peer);
		if (p->route) { /* the LND sends to the gateway; the header names the destination */
			ulnet__route_used(loop->node, p->route, msg->v.hdr.payload_length);
			target->nid = p->hop;
			target->pid = ULNET_PID_LUSTRE;
		}
	}
	ulnet__post_send(msg);
	return 0;
}

int ulnet__send(struct ulnet_node *node, struct ulnet_msg *msg, const struct ulnet_process_id *target,
		void *rx_priv)
{
	struct send_path p;
	struct ulnet_ni *ni = path_to(node, &target->nid, &p);
	struct ulnet_loop *own = ulnet__owned(node);

	if (!ni)
		return -EHOSTUNREACH;
	msg->v.target = *target;
	if (ni->loop == own) {
		msg->rx_priv = rx_priv;
		return send_here(own, msg, &p);
	}
	msg->rx_priv = NULL; /* another NI's: the received message's context is not its LND's */
	ulnet__loop_mail(ni->loop, msg);
	return 0;
}

void ulnet__send_owned(struct ulnet_loop *loop, struct ulnet_msg *msg)
{
	struct send_path p;
	struct ulnet_ni *ni = path_to(loop->node, &msg->v.target.nid, &p);
	int rc = -EHOSTUNREACH;

	msg->loop = loop;
	if (ni && ni->loop != loop) {
		ulnet__loop_mail(ni->loop, msg); /* the NIs changed since it was handed here */
		return;
	}
	if (ni)
		rc = send_here(loop, msg, &p);
	if (rc)
		ulnet__finalize(msg, rc); /* the SEND event says why; no REPLY/ACK follows (msg.c) */
}

static void prepare_initiator_event(struct ulnet_node *node, struct ulnet_msg *msg, struct ulnet_libmd *md,
				    const struct ulnet_process_id *target, uint32_t portal, uint64_t bits,
				    uint32_t offset, uint64_t hdr_data, int type)
{
	struct ulnet_event *ev = &msg->ev;

	msg->md = md;
	msg->has_event = true;
	ev->type = ULNET_EVENT_SEND;
	ev->target = *target;
	ulnet_node_primary_nid_locked(node, &ev->initiator.nid);
	ev->initiator.pid = node->pid;
	ev->sender = ev->initiator.nid;
	ev->pt_index = portal;
	ev->match_bits = bits;
	ev->rlength = ev->mlength = md->total;
	ev->offset = offset;
	ev->hdr_data = hdr_data;
	ev->msg_type = type;
	ulnet__md_event_init(md, ev);
}

#define START_LARGE 1

static int start_op(ulnet_node *node, struct ulnet_handle mdh, const struct ulnet_process_id *target,
		    uint32_t portal, struct ulnet_libmd **mdp, struct ulnet_msg **msgp)
{
	struct ulnet_libmd *md;

	if (!node || !target || portal >= ULNET_MAX_PORTALS)
		return -EINVAL;
	md = ulnet__handle_lookup(node, mdh.cookie, ULNET_OBJ_MD);
	if (!md || !ulnet__md_active(md))
		return -ENOENT;
	if (md->total > ULNET_MTU)
		return START_LARGE; /* large.c, after the node lock */
	/* a message of all of an MD with no empty fragment looks at the MD's own array (md_whole) */
	*msgp = ulnet__msg_alloc(node, md->frags_whole ? 0 : md->nfrags);
	if (!*msgp)
		return -ENOMEM;
	*mdp = md;
	return 0;
}

/* All of @md as @msg's fragments: the MD's own array when no fragment is empty (the MD outlives the
 * message: it holds a reference), so a 256-page Put copies no fragment list; else the non-empty
 * ones copied into the message. */
static const struct iovec *md_whole(struct ulnet_msg *msg, const struct ulnet_libmd *md, unsigned *n)
{
	if (md->frags_whole) {
		*n = md->nfrags;
		return md->frags;
	}
	*n = ulnet__md_slice(md, 0, md->total, msg->iov_store);
	return msg->iov_store;
}

/* The header is filled: take the MD, prepare the SEND event; the caller sends after the node lock
 * (launch). From here every failure ends in exactly one event carrying the error, as in LNet
 * (LNetPut/LNetGet return 0 once the message exists): a target no NI reaches gets a SEND event with
 * -EHOSTUNREACH, not a silent return code that a caller waiting for events would never see. Node
 * lock held. */
static void prepare_op(struct ulnet_node *node, struct ulnet_msg *msg, struct ulnet_libmd *md,
		       const struct ulnet_process_id *target, uint64_t hdr_data, uint64_t now, bool timed, uint64_t lat0)
{
	const struct ulnet_hdr *h = &msg->v.hdr;
	bool put = h->type == ULNET_MSG_PUT;

	ulnet__md_use(md);
	prepare_initiator_event(node, msg, md, target, put ? h->msg.put.ptl_index : h->msg.get.ptl_index,
				put ? h->msg.put.match_bits : h->msg.get.match_bits,
				put ? h->msg.put.offset : h->msg.get.src_offset, hdr_data, (int)h->type);
	/* a GET waits for its REPLY, an ACK-requested PUT for its ACK: start the transaction timeout
	 * before sending (on lo the answer arrives inside ulnet__send) */
	if (!put || h->msg.put.ack_wmd.wh_interface_cookie != ULNET_WIRE_COOKIE_NONE) {
		msg->txn = true;
		ulnet__md_txn_start(node, md, &msg->ev, now);
		md->txn_sent = lat0;
		md->txn_timed = timed;
	}
	msg->lat = !timed ? ULNET_LAT_NONE : put ? ULNET_LAT_PUT : ULNET_LAT_GET;
	msg->t0 = lat0;
	msg->v.target = *target;
}

/* Send what prepare_op prepared, the node lock released: to a remote NID through the mailbox of the
 * loop that owns the NI (it posts it and writes its connections, so an application thread never runs
 * the LND); on lo, here as loop 0's owner, so the call's events are in before it returns, as LNet's
 * are; from a handler on the NI's own loop's thread, here too, as that loop's owner (its turn is
 * over; the send goes out now, not after a hand-off to itself). */
static void launch(struct ulnet_node *node, struct ulnet_msg *msg, struct ulnet_loop *to, bool local)
{
	struct ulnet_loop *own = ulnet__owned(node);

	if (own == to) {
		ulnet__send_owned(own, msg);
	} else if (!own && (local || ulnet__handlers_of(node) == to)) {
		ulnet__loop_enter(to);
		ulnet__send_owned(to, msg);
		ulnet__loop_exit(to);
	} else {
		ulnet__loop_mail(to, msg);
	}
}

/* The loop that will send to @target: its NI's (loop 0 when none reaches it: the send fails there,
 * with its event); *@local: a NID of this node (lo). Node lock held. */
static struct ulnet_loop *loop_for(struct ulnet_node *node, const struct ulnet_process_id *target, bool *local)
{
	struct ulnet_ni *ni = ulnet__ni_for_dest(node, &target->nid, local);

	return ni ? ni->loop : &node->loops[0];
}

int ulnet_put(ulnet_node *node, struct ulnet_handle mdh, enum ulnet_ack_req ack,
	      const struct ulnet_process_id *target, uint32_t portal, uint64_t match_bits, uint32_t offset,
	      uint64_t hdr_data)
{
	struct ulnet_loop *to = NULL;
	uint64_t now, lat0;
	bool local = false, timed;
	struct ulnet_libmd *md;
	struct ulnet_msg *msg;
	struct ulnet_hdr *h;
	int rc;

	if (!node)
		return -EINVAL;
	/* the clocks, read before the node lock: the transaction timeout's (an ACK is awaited) and
	 * the latency's */
	now = ack == ULNET_ACK_REQ ? ulnet__node_now(node) : 0;
	timed = !atomic_load_explicit(&node->lat_off, memory_order_relaxed);
	lat0 = timed ? ulnet__lat_now(node) : 0;
	ulnet__lock(node);
	rc = start_op(node, mdh, target, portal, &md, &msg);
	if (rc)
		goto out;
	h = &msg->v.hdr;
	h->type = ULNET_MSG_PUT;
	h->payload_length = md->total;
	if (ack == ULNET_ACK_REQ) {
		h->msg.put.ack_wmd.wh_interface_cookie = node->iface_cookie;
		h->msg.put.ack_wmd.wh_object_cookie = md->cookie;
	} else {
		h->msg.put.ack_wmd.wh_interface_cookie = ULNET_WIRE_COOKIE_NONE;
		h->msg.put.ack_wmd.wh_object_cookie = ULNET_WIRE_COOKIE_NONE;
	}
	h->msg.put.match_bits = match_bits;
	h->msg.put.hdr_data = hdr_data;
	h->msg.put.ptl_index = portal;
	h->msg.put.offset = offset;
	msg->v.iov = md_whole(msg, md, &msg->v.niov);
	msg->v.rdma_iov = msg->v.iov;
	msg->v.rdma_niov = msg->v.niov;
	msg->v.rdma_len = md->total;
	prepare_op(node, msg, md, target, hdr_data, now, timed, lat0);
	to = loop_for(node, target, &local);
out:
	ulnet__lock_release(node);
	if (rc == 0)
		launch(node, msg, to, local);
	else if (rc == START_LARGE)
		rc = ulnet__large_start(node, mdh, ULNET_LARGE_OP_PUT, ack == ULNET_ACK_REQ, target, portal,
					match_bits, offset, hdr_data);
	return rc;
}

int ulnet_get(ulnet_node *node, struct ulnet_handle mdh, const struct ulnet_process_id *target, uint32_t portal,
	      uint64_t match_bits, uint32_t offset)
{
	struct ulnet_loop *to = NULL;
	uint64_t now, lat0;
	bool local = false, timed;
	struct ulnet_libmd *md;
	struct ulnet_msg *msg;
	struct ulnet_hdr *h;
	int rc;

	if (!node)
		return -EINVAL;
	now = ulnet__node_now(node);
	timed = !atomic_load_explicit(&node->lat_off, memory_order_relaxed);
	lat0 = timed ? ulnet__lat_now(node) : 0;
	ulnet__lock(node);
	rc = start_op(node, mdh, target, portal, &md, &msg);
	if (rc)
		goto out;
	h = &msg->v.hdr;
	h->type = ULNET_MSG_GET;
	h->payload_length = 0;
	h->msg.get.return_wmd.wh_interface_cookie = node->iface_cookie;
	h->msg.get.return_wmd.wh_object_cookie = md->cookie;
	h->msg.get.match_bits = match_bits;
	h->msg.get.ptl_index = portal;
	h->msg.get.src_offset = offset;
	h->msg.get.sink_length = md->total;
	msg->v.niov = 0;
	/* the sink, for an LND that lets the target write it directly (lnd.h) */
	msg->v.rdma_iov = md_whole(msg, md, &msg->v.rdma_niov);
	msg->v.rdma_len = md->total;
	prepare_op(node, msg, md, target, 0, now, timed, lat0);
	to = loop_for(node, target, &local);
out:
	ulnet__lock_release(node);
	if (rc == 0)
		launch(node, msg, to, local);
	else if (rc == START_LARGE)
		rc = ulnet__large_start(node, mdh, ULNET_LARGE_OP_GET, false, target, portal, match_bits,
					offset, 0);
	return rc;
}

/* ---- receive side ---- */

static void drop(struct ulnet_ni *ni, void *rx_priv, const struct ulnet_hdr *hdr, enum ulnet_drop why)
{
	struct ulnet_stats *st = &ni->loop->stats;

	st->drop_count++;
	st->drop_length += hdr->payload_length;
	ni->drop_count++;
	ni->drops[why]++;
	ni->ops->lnd_recv(ni, rx_priv, NULL, NULL, 0, 0, hdr->payload_length);
}

static void rx_event_init(struct ulnet_msg *msg, const struct ulnet_hdr *hdr, const struct ulnet_nid *from,
			  enum ulnet_event_kind type)
{
	struct ulnet_event *ev = &msg->ev;

	msg->has_event = true;
	ev->type = type;
	ev->target.nid = hdr->dest_nid;
	ev->target.pid = hdr->dest_pid;
	ev->initiator.nid = hdr->src_nid;
	ev->initiator.pid = hdr->src_pid;
	ev->sender = *from;
	ev->msg_type = (int)hdr->type;
	ulnet__md_event_init(msg->md, ev);
}

/* Start the LND receive of @mlen bytes at @offset of the message's MD. */
static void start_recv(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, uint32_t offset, uint32_t mlen)
{
	int rc;

	msg->v.niov = msg->md ? ulnet__md_slice(msg->md, offset, mlen, msg->iov_store) : 0;
	rc = ni->ops->lnd_recv(ni, rx_priv, msg, msg->v.iov, msg->v.niov, mlen, msg->v.hdr.payload_length);
	if (rc < 0)
		ulnet__finalize(msg, rc);
}

static struct ulnet_msg *rx_msg_new(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, struct ulnet_libmd *md,
				    void *rx_priv)
{
	struct ulnet_msg *msg = ulnet__msg_alloc(ni->node, md ? md->nfrags : 0);

	if (!msg)
		return NULL;
	msg->ni = ni;
	msg->md = md;
	msg->rx_priv = rx_priv;
	msg->v.hdr = *hdr;
	return msg;
}

/* Match a PUT or GET to an MD and build the message that carries its event; on no match (or no
 * memory) the payload is dropped and NULL returned. */
static struct ulnet_msg *match_rx(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from,
				  void *rx_priv, struct ulnet_match *m, enum ulnet_event_kind kind)
{
	struct ulnet_node *node = ni->node;
	enum ulnet_match_rc rc = ULNET_MATCH_NONE;
	struct ulnet_msg *msg;

	if (m->portal < ULNET_MAX_PORTALS) {
		ulnet__lock(node);
		rc = ulnet__match_md(node, m);
		ulnet__lock_release(node);
	}
	if (rc != ULNET_MATCH_OK) {
		char src[ULNET_NID_STRLEN];

		ULNET_LOG(CORE, DEBUG, "%s from %s portal %u match bits 0x%llx length %u: no match; dropping",
			  kind == ULNET_EVENT_PUT ? "PUT" : "GET", ulnet_nid_format(&hdr->src_nid, src, sizeof(src)),
			  m->portal, (unsigned long long)m->match_bits, m->rlength);
		drop(ni, rx_priv, hdr, ULNET_DROP_NO_MATCH);
		return NULL;
	}
	msg = rx_msg_new(ni, hdr, m->md, rx_priv);
	if (!msg) {
		ulnet__lock(node);
		ulnet__md_release(node, m->md);
		ulnet__unlock(node);
		drop(ni, rx_priv, hdr, ULNET_DROP_NO_MEMORY);
		return NULL;
	}
	rx_event_init(msg, hdr, from, kind);
	msg->ev.pt_index = m->portal;
	msg->ev.match_bits = m->match_bits;
	msg->ev.rlength = m->rlength;
	msg->ev.mlength = m->mlength;
	msg->ev.offset = m->offset;
	return msg;
}

static int parse_put(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from, void *rx_priv)
{
	struct ulnet_match m = {
		.portal = hdr->msg.put.ptl_index,
		.initiator = { .nid = hdr->src_nid, .pid = hdr->src_pid },
		.match_bits = hdr->msg.put.match_bits,
		.rlength = hdr->payload_length,
		.roffset = hdr->msg.put.offset,
		.op = ULNET_MD_OP_PUT,
	};
	struct ulnet_msg *msg = match_rx(ni, hdr, from, rx_priv, &m, ULNET_EVENT_PUT);

	if (!msg)
		return 0;
	msg->ev.hdr_data = hdr->msg.put.hdr_data;
	msg->ack_wanted = hdr->msg.put.ack_wmd.wh_interface_cookie != ULNET_WIRE_COOKIE_NONE &&
			  !(m.md->umd.options & ULNET_MD_ACK_DISABLE);
	start_recv(ni, rx_priv, msg, m.offset, m.mlength);
	return 0;
}

static int parse_get(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from, void *rx_priv,
		     bool rdma_req)
{
	struct ulnet_match m = {
		.portal = hdr->msg.get.ptl_index,
		.initiator = { .nid = hdr->src_nid, .pid = hdr->src_pid },
		.match_bits = hdr->msg.get.match_bits,
		.rlength = hdr->msg.get.sink_length,
		.roffset = hdr->msg.get.src_offset,
		.op = ULNET_MD_OP_GET,
	};
	struct ulnet_process_id to = { .nid = hdr->src_nid, .pid = hdr->src_pid };
	struct ulnet_msg *reply = match_rx(ni, hdr, from, rx_priv, &m, ULNET_EVENT_GET);
	int rc;

	if (!reply)
		return 0;
	if (rdma_req) {
		/* rendezvous: the LND moves the data itself and finalizes the REPLY (lnd.h) */
		ni->loop->stats.recv_count++;
		memset(&reply->v.hdr, 0, sizeof(reply->v.hdr));
		reply->v.hdr.type = ULNET_MSG_REPLY;
		reply->v.hdr.payload_length = m.mlength;
		reply->v.hdr.msg.reply.dst_wmd = hdr->msg.get.return_wmd;
		reply->v.hdr.src_nid = ni->nid;
		reply->v.hdr.src_pid = ni->node->pid;
		reply->v.hdr.dest_nid = to.nid;
		reply->v.hdr.dest_pid = to.pid;
		reply->v.target = to;
		reply->is_tx = true;
		reply->rdma_reply = true;
		start_recv(ni, rx_priv, reply, m.offset, m.mlength);
		return 0;
	}
	/* the GET carries no payload: tell the LND it is consumed, then answer on the same NI */
	ni->ops->lnd_recv(ni, rx_priv, NULL, NULL, 0, 0, 0);
	ni->loop->stats.recv_count++;
	memset(&reply->v.hdr, 0, sizeof(reply->v.hdr));
	reply->v.hdr.type = ULNET_MSG_REPLY;
	reply->v.hdr.payload_length = m.mlength;
	reply->v.hdr.msg.reply.dst_wmd = hdr->msg.get.return_wmd;
	reply->v.niov = ulnet__md_slice(m.md, m.offset, m.mlength, reply->iov_store);
	reply->v.rdma_iov = reply->v.iov;
	reply->v.rdma_niov = reply->v.niov;
	reply->v.rdma_len = m.mlength;
	rc = ulnet__send(ni->node, reply, &to, rx_priv);
	if (rc < 0)
		ulnet__finalize(reply, rc);
	return 0;
}

/* ACK and REPLY name their MD by the wire handle we sent; anything stale is dropped. Node lock held. */
static struct ulnet_libmd *wmd_lookup(struct ulnet_node *node, const struct ulnet_wire_handle *wh)
{
	struct ulnet_libmd *md;

	if (wh->wh_interface_cookie != node->iface_cookie)
		return NULL;
	md = ulnet__handle_lookup(node, wh->wh_object_cookie, ULNET_OBJ_MD);
	return md && ulnet__md_active(md) ? md : NULL;
}

/* @lp: the peer entry of the header's source, if any (the latency goes to @from's: the hop). */
static int parse_reply_or_ack(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from,
			      void *rx_priv, struct ulnet_peer *lp)
{
	struct ulnet_node *node = ni->node;
	bool is_ack = hdr->type == ULNET_MSG_ACK;
	struct ulnet_libmd *md;
	struct ulnet_msg *msg;
	uint32_t mlen = hdr->payload_length, md_len = 0;
	uint64_t sent = 0;
	bool too_long = false, timed = false;
	char src[ULNET_NID_STRLEN];

	ulnet__lock(node);
	md = wmd_lookup(node, is_ack ? &hdr->msg.ack.dst_wmd : &hdr->msg.reply.dst_wmd);
	if (md && !is_ack && mlen > md->total && !(md->umd.options & ULNET_MD_TRUNCATE)) {
		too_long = true; /* dropped below */
		md_len = md->total;
		md = NULL;
	}
	if (md) {
		ulnet__md_txn_end(node, md); /* answered: no timeout for this transaction */
		ulnet__md_use(md);
		sent = md->txn_sent;
		timed = md->txn_timed;
	}
	ulnet__lock_release(node);
	/* the source NID is formatted inside the log calls only: every REPLY and ACK comes through here */
	if (too_long) {
		ULNET_LOG(CORE, WARN, "REPLY from %s: length %u > MD length %u (no TRUNCATE); dropping",
			  ulnet_nid_format(&hdr->src_nid, src, sizeof(src)), mlen, md_len);
		drop(ni, rx_priv, hdr, ULNET_DROP_TOO_LONG);
		return 0;
	}
	if (!md) {
		ULNET_LOG(CORE, DEBUG, "%s from %s for an MD no longer active; dropping", is_ack ? "ACK" : "REPLY",
			  ulnet_nid_format(&hdr->src_nid, src, sizeof(src)));
		drop(ni, rx_priv, hdr, ULNET_DROP_STALE);
		return 0;
	}
	if (!is_ack && mlen > md->total)
		mlen = md->total; /* TRUNCATE */
	msg = rx_msg_new(ni, hdr, md, rx_priv);
	if (!msg) {
		ulnet__lock(node);
		ulnet__md_release(node, md);
		ulnet__unlock(node);
		drop(ni, rx_priv, hdr, ULNET_DROP_NO_MEMORY);
		return 0;
	}
	if (timed) {
		msg->lat = is_ack ? ULNET_LAT_ACK : ULNET_LAT_GET;
		msg->t0 = sent;
		if (ni != node->lo_ni && !ulnet__nid_equal(from, &hdr->src_nid))
			lp = ulnet__peer_find(ni, from, false); /* routed: the gateway, where the GET or PUT went */
		if (lp) {
			msg->rx_peer = lp;
			ulnet__peer_get(lp);
		}
	}
	rx_event_init(msg, hdr, from, is_ack ? ULNET_EVENT_ACK : ULNET_EVENT_REPLY);
	msg->ev.rlength = hdr->payload_length;
	msg->ev.mlength = is_ack ? hdr->msg.ack.mlength : mlen;
	if (is_ack) {
		msg->ev.match_bits = hdr->msg.ack.match_bits;
		msg->ev.rlength = hdr->msg.ack.mlength;
	}
	start_recv(ni, rx_priv, msg, 0, is_ack ? 0 : mlen);
	return 0;
}

static int parse(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from, void *rx_priv,
		 bool rdma_req)
{
	struct ulnet_node *node = ni->node;
	char dst[ULNET_NID_STRLEN], src[ULNET_NID_STRLEN], mine[ULNET_NID_STRLEN];
	struct ulnet_peer *lp = NULL;
	bool for_me = ni == node->lo_ni ? ulnet__nid_is_local(node, &hdr->dest_nid)
					: ulnet__nid_equal(&hdr->dest_nid, &ni->nid);

	if (ulnet_nid_is_any(&hdr->src_nid)) {
		ULNET_LOG(CORE, ERR, "%s: message from %s with source NID ANY; closing", ni->ops->lnd_name,
			  ulnet_nid_format(from, src, sizeof(src)));
		return -EPROTO;
	}
	if (!for_me) {
		/* as lnet_parse: what should have gone straight to its destination (same net, or another
		 * NI of ours) and a rendezvous GET (its sink is not ours to expose) are protocol errors;
		 * anything else is the router's (forward.c: forwarded, or dropped while routing is off) */
		const char *why = ni == node->lo_ni ? "on lo"
				  : ulnet_nid_net(&hdr->dest_nid) == ni->net ? "for another node on the same net"
				  : ulnet__nid_is_local(node, &hdr->dest_nid) ? "for another NI of this node"
				  : rdma_req ? "a rendezvous GET to forward" : NULL;

		if (!why)
			return ulnet__forward_parse(ni, hdr, from, rx_priv);
		ULNET_LOG(CORE, ERR, "%s: message from %s for %s arrived on NI %s (%s); closing", ni->ops->lnd_name,
			  ulnet_nid_format(&hdr->src_nid, src, sizeof(src)),
			  ulnet_nid_format(&hdr->dest_nid, dst, sizeof(dst)),
			  ulnet_nid_format(&ni->nid, mine, sizeof(mine)), why);
		return -EPROTO;
	}
	if ((hdr->type == ULNET_MSG_PUT || hdr->type == ULNET_MSG_REPLY) && hdr->payload_length > ULNET_MTU) {
		ULNET_LOG(CORE, ERR, "%s: message from %s: payload_length %u > LNET_MTU %u; closing",
			  ni->ops->lnd_name, ulnet_nid_format(&hdr->src_nid, src, sizeof(src)), hdr->payload_length,
			  ULNET_MTU);
		return -EPROTO;
	}
	if ((hdr->type == ULNET_MSG_ACK || hdr->type == ULNET_MSG_GET) && hdr->payload_length != 0) {
		ULNET_LOG(CORE, ERR, "%s: %s from %s with payload_length %u (must be 0); closing",
			  ni->ops->lnd_name, hdr->type == ULNET_MSG_ACK ? "ACK" : "GET",
			  ulnet_nid_format(&hdr->src_nid, src, sizeof(src)), hdr->payload_length);
		return -EPROTO;
	}
	if (rdma_req && hdr->type != ULNET_MSG_GET) {
		ULNET_LOG(CORE, ERR, "%s: rendezvous request from %s is not a GET (type %u); closing",
			  ni->ops->lnd_name, ulnet_nid_format(&hdr->src_nid, src, sizeof(src)), hdr->type);
		return -EPROTO;
	}
	if (ni != node->lo_ni) {
		lp = ulnet__peer_find(ni, &hdr->src_nid, false);
		if (lp) {
			lp->recv_count++;
			lp->down = false;
		}
	}
	ni->recv_count++;
	if (ulnet__fault_screen_pass(node, &hdr->src_nid, &hdr->dest_nid, &ni->nid, false) && ulnet__fault_recv(ni, hdr)) {
		drop(ni, rx_priv, hdr, ULNET_DROP_FAULT); /* a drop rule (fault.c): as if it never came */
		return 0;
	}
	switch (hdr->type) {
	case ULNET_MSG_PUT:
		return parse_put(ni, hdr, from, rx_priv);
	case ULNET_MSG_GET:
		return parse_get(ni, hdr, from, rx_priv, rdma_req);
	case ULNET_MSG_ACK:
	case ULNET_MSG_REPLY:
		return parse_reply_or_ack(ni, hdr, from, rx_priv, lp);
	default:
		ULNET_LOG(CORE, ERR, "%s: message from %s of unknown type %u; closing", ni->ops->lnd_name,
			  ulnet_nid_format(&hdr->src_nid, src, sizeof(src)), hdr->type);
		return -EPROTO;
	}
}

int ulnet__parse(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from, void *rx_priv)
{
	return parse(ni, hdr, from, rx_priv, false);
}

int ulnet__parse_rdma(struct ulnet_ni *ni, const struct ulnet_hdr *hdr, const struct ulnet_nid *from,
		      void *rx_priv)
{
	return parse(ni, hdr, from, rx_priv, true);
}
