/* SPDX-License-Identifier: MIT */
/* The o2ib rendezvous (lnet-wire.md §3.1): payloads above 3976 bytes move by RDMA WRITE.
 *   PUT (or a REPLY that did not come from a GET_REQ): PUT_REQ -> the sink answers PUT_ACK with its
 *   descriptor (or PUT_NAK) -> the source writes, then PUT_DONE.
 *   GET with a sink above 3976 bytes: GET_REQ carries the sink descriptor -> the source writes the
 *   REPLY's bytes, then GET_DONE.
 * Each side registers the whole MD as one region (the region's bytes are the fragments
 * concatenated) once, in the MD's registration slot, until the core says the MD is unlinked; a
 * descriptor we advertise therefore has one fragment, and a WRITE takes one SGE per remote
 * fragment. An MD without a slot for this NI is registered per transfer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "o2ib.h"

#define NS_PER_S 1000000000ull

uint64_t o2ib_next_cookie(struct o2ib_net *net) { return ++net->cookies; }

/* Register the first @nob bytes of @iov as one region. 0 or -errno (logged by the caller). */
int o2ib_mem_reg(struct o2ib_net *net, const struct iovec *iov, unsigned niov, uint32_t nob, unsigned access,
		 struct fab_mr *out)
{
	struct iovec *r = calloc(niov ? niov : 1, sizeof(*r));
	unsigned n = 0;
	uint32_t left = nob;
	int rc;

	if (!r)
		return -ENOMEM;
	for (unsigned i = 0; i < niov && left; i++) {
		size_t len = iov[i].iov_len < left ? iov[i].iov_len : left;

		if (!len)
			continue;
		r[n].iov_base = iov[i].iov_base;
		r[n++].iov_len = len;
		left -= (uint32_t)len;
	}
	rc = left || !n ? -EINVAL : net->fab->reg_mr(net->dev, r, n, access, out);
	free(r);
	return rc;
}

#define ACCESS_ALL (FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_REMOTE_READ)

/* Where @iov (a slice of the MD's memory) starts in the MD's concatenated fragments. 0 or -ENOENT. */
static int md_offset(const struct ulnet_lnd_md *md, const struct iovec *iov, unsigned niov, uint64_t *off)
{
	const char *base = NULL;
	uint64_t acc = 0;

	for (unsigned i = 0; i < niov && !base; i++)
		if (iov[i].iov_len)
			base = iov[i].iov_base;
	for (unsigned k = 0; base && k < md->nfrags; k++) {
		const char *f = md->frags[k].iov_base;

		if (base >= f && base < f + md->frags[k].iov_len) {
			*off = acc + (uint64_t)(base - f);
			return 0;
		}
		acc += md->frags[k].iov_len;
	}
	return -ENOENT;
}

/* The registration behind @nob bytes of @msg's memory from @iov: the MD's own, made once with every
 * right and kept in its slot until lnd_md_unlinked (*@per_msg false), or, when the MD has no slot
 * for this NI, one made for this transfer only (*@per_msg true: the tx deregisters it). */
static int mem_get(struct o2ib_net *net, struct ulnet_msg *msg, const struct iovec *iov, unsigned niov, uint32_t nob,
		   unsigned access, struct fab_mr *out, bool *per_msg)
{
	struct ulnet_lnd_md md;
	uint64_t off;

	if (ulnet__msg_md(msg, &md) == 0 && md.lnd_reg && md.length && !md_offset(&md, iov, niov, &off) &&
	    off + nob <= md.length) {
		struct fab_mr *r = *md.lnd_reg;

		if (!r && (r = malloc(sizeof(*r))) && o2ib_mem_reg(net, md.frags, md.nfrags, md.length, ACCESS_ALL, r)) {
			free(r);
			r = NULL;
		}
		if (r) {
			*md.lnd_reg = r;
			*out = *r;
			out->addr = r->addr + off;
			out->length = nob;
			*per_msg = false;
			return 0;
		}
	}
	*per_msg = true;
	return o2ib_mem_reg(net, iov, niov, nob, access, out);
}

void o2ib_md_unlinked(struct ulnet_ni *ni, const struct ulnet_lnd_md *md, void *reg)
{
	struct o2ib_net *net = ulnet__ni_priv(ni);

	(void)md;
	if (net->dev)
		net->fab->dereg_mr(net->dev, reg);
	free(reg);
}

static void reg_failed(struct o2ib_peer *peer, uint32_t nob, int rc)
{
	char ns[ULNET_NID_STRLEN];

	ULNET_LOG(O2IB, ERR, "%s: cannot register %u bytes for RDMA: %s (device limits max_mr, max_mr_size)",
		  o2ib_nid_str(&peer->nid, ns, sizeof(ns)), nob, strerror(-rc));
}

/* lnd_send of a payload too big for IMMEDIATE (PUT, REPLY) or of a GET whose sink is. */
int o2ib_send_rdma(struct o2ib_net *net, struct o2ib_peer *peer, struct ulnet_msg *msg)
{
	const struct ulnet_msg_lnd_view *v = ulnet__msg_view(msg);
	bool get = v->hdr.type == ULNET_MSG_GET;
	struct o2ib_tx *tx = o2ib_tx_new(get ? O2IB_MSG_GET_REQ : O2IB_MSG_PUT_REQ);
	int rc;

	if (!tx)
		return -ENOMEM;
	tx->cookie = o2ib_next_cookie(net);
	if (get) {
		bool per_msg;

		rc = mem_get(net, msg, v->rdma_iov, v->rdma_niov, v->rdma_len,
			     FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE, &tx->mr, &per_msg);
		if (rc) {
			reg_failed(peer, v->rdma_len, rc);
			free(tx);
			return rc;
		}
		tx->mr_ok = per_msg;
		tx->lntmsg2 = ulnet__create_reply_msg(net->ni, msg);
		if (!tx->lntmsg2) {
			if (per_msg)
				net->fab->dereg_mr(net->dev, &tx->mr);
			free(tx);
			return -ENOMEM;
		}
		tx->msg.u.get.hdr = v->hdr;
		tx->msg.u.get.cookie = tx->cookie;
		tx->msg.u.get.rd.key = tx->mr.rkey;
		tx->msg.u.get.rd.nfrags = 1;
		tx->msg.u.get.rd.frags[0].nob = v->rdma_len;
		tx->msg.u.get.rd.frags[0].addr = tx->mr.addr;
	} else {
		tx->msg.u.putreq.hdr = v->hdr;
		tx->msg.u.putreq.cookie = tx->cookie;
	}
	tx->lntmsg = msg;
	tx->waiting = true; /* for PUT_ACK/PUT_NAK, or GET_DONE */
	o2ib_peer_queue(peer, tx);
	return 0;
}

/* Queue a completion (PUT_NAK, PUT_DONE, GET_DONE) or PUT_ACK on @conn: no credit needed. */
static void queue_nocred(struct o2ib_conn *conn, struct o2ib_tx *tx)
{
	o2ib_conn_queue(conn, tx);
	o2ib_conn_check_sends(conn);
}

static struct o2ib_tx *completion_tx(uint8_t type, uint64_t cookie, int32_t status)
{
	struct o2ib_tx *tx = o2ib_tx_new(type);

	if (tx) {
		tx->msg.u.completion.cookie = cookie;
		tx->msg.u.completion.status = status;
	}
	return tx;
}

/* The source side of a transfer: register @nob bytes of @iov, write them into @rd, then send @done
 * (PUT_DONE or GET_DONE) carrying @cookie; @msg is finalized when that completes. */
static int write_and_done(struct o2ib_conn *conn, uint8_t done, uint64_t cookie, const struct o2ib_rdma_desc *rd,
			  struct ulnet_msg *msg, const struct iovec *iov, unsigned niov, uint32_t nob)
{
	struct o2ib_net *net = conn->net;
	uint64_t room = 0;
	struct o2ib_tx *tx;
	int rc;

	for (uint32_t i = 0; i < rd->nfrags; i++)
		room += rd->frags[i].nob;
	tx = completion_tx(done, cookie, (int32_t)nob);
	if (!tx)
		return -ENOMEM;
	tx->lntmsg = msg;
	if (room < nob) {
		ULNET_LOG(O2IB, ERR, "%s: the peer's sink holds %llu bytes, %u to write: Dst buffer exhausted",
			  o2ib_nid_str(&conn->peer->nid, (char[ULNET_NID_STRLEN]){ 0 }, ULNET_NID_STRLEN),
			  (unsigned long long)room, nob);
		tx->msg.u.completion.status = -EPROTO;
		tx->status = -EPROTO;
	} else if (nob) {
		bool per_msg;

		rc = mem_get(net, msg, iov, niov, nob, FAB_ACCESS_LOCAL_WRITE, &tx->mr, &per_msg);
		if (rc) {
			reg_failed(conn->peer, nob, rc);
			tx->msg.u.completion.status = rc;
			tx->status = rc;
		} else {
			tx->mr_ok = per_msg;
			tx->rdma_nob = nob;
			tx->rd = *rd;
		}
	}
	queue_nocred(conn, tx);
	return 0;
}

/* lnd_recv of a PUT_REQ (sink side) or GET_REQ (source side). */
int o2ib_recv_rdma(struct o2ib_net *net, struct o2ib_rx *rx, struct ulnet_msg *msg, const struct iovec *iov,
		   unsigned niov, uint32_t mlen)
{
	struct o2ib_conn *conn = rx->conn;
	const struct o2ib_msg *m = &rx->msg;
	struct o2ib_tx *tx;
	bool per_msg = true;
	int rc = 0;

	if (conn->state != O2IB_CONN_ESTABLISHED) {
		if (msg)
			ulnet__finalize(msg, -ECONNABORTED);
		o2ib_rx_repost(rx, true);
		return 0;
	}
	if (m->type == O2IB_MSG_GET_REQ) {
		if (!msg) { /* no match: GET_DONE(-ENODATA) */
			tx = completion_tx(O2IB_MSG_GET_DONE, m->u.get.cookie, -ENODATA);
			if (tx)
				queue_nocred(conn, tx);
		} else if ((rc = write_and_done(conn, O2IB_MSG_GET_DONE, m->u.get.cookie, &m->u.get.rd, msg, iov, niov,
						mlen))) {
			ulnet__finalize(msg, rc);
		}
		o2ib_rx_repost(rx, true);
		return 0;
	}
	/* PUT_REQ */
	if (!msg || !mlen) {
		tx = completion_tx(O2IB_MSG_PUT_NAK, m->u.putreq.cookie, msg ? 0 : -ENODATA);
		if (msg)
			ulnet__finalize(msg, 0);
		if (tx)
			queue_nocred(conn, tx);
		o2ib_rx_repost(rx, true);
		return 0;
	}
	tx = o2ib_tx_new(O2IB_MSG_PUT_ACK);
	if (!tx || (rc = mem_get(net, msg, iov, niov, mlen, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE,
				 &tx->mr, &per_msg))) {
		if (rc)
			reg_failed(conn->peer, mlen, rc);
		free(tx);
		tx = completion_tx(O2IB_MSG_PUT_NAK, m->u.putreq.cookie, rc ? rc : -ENOMEM);
		ulnet__finalize(msg, rc ? rc : -ENOMEM);
		if (tx)
			queue_nocred(conn, tx);
		o2ib_rx_repost(rx, true);
		return 0;
	}
	tx->mr_ok = per_msg;
	tx->cookie = o2ib_next_cookie(net);
	tx->lntmsg = msg;
	tx->waiting = true; /* for PUT_DONE */
	tx->msg.u.putack.src_cookie = m->u.putreq.cookie;
	tx->msg.u.putack.dst_cookie = tx->cookie;
	tx->msg.u.putack.rd.key = tx->mr.rkey;
	tx->msg.u.putack.rd.nfrags = 1;
	tx->msg.u.putack.rd.frags[0].nob = mlen;
	tx->msg.u.putack.rd.frags[0].addr = tx->mr.addr;
	queue_nocred(conn, tx);
	o2ib_rx_repost(rx, false); /* the credit comes back with the PUT_DONE's buffer */
	return 0;
}

static struct o2ib_tx *waiting_tx(struct o2ib_conn *conn, uint64_t cookie, uint8_t want)
{
	struct ulnet_list *p;

	for (p = conn->waitq.next; p != &conn->waitq; p = p->next) {
		struct o2ib_tx *tx = ulnet_container_of(p, struct o2ib_tx, link);

		if (tx->cookie == cookie && tx->msg.type == want)
			return tx;
	}
	return NULL;
}

/* The answer has come: @tx leaves the waitq; it is done now unless its SEND completion is still due. */
static void answered(struct o2ib_conn *conn, struct o2ib_tx *tx, int status)
{
	ulnet_list_del(&tx->link);
	tx->waiting = false;
	tx->status = status;
	if (tx->slot < 0)
		o2ib_tx_done(conn->net, tx, status);
}

/* PUT_ACK, PUT_NAK, PUT_DONE, GET_DONE: match the cookie; an unknown one closes the connection. */
void o2ib_rx_answer(struct o2ib_conn *conn, struct o2ib_rx *rx)
{
	const struct o2ib_msg *m = &rx->msg;
	uint8_t want = m->type == O2IB_MSG_PUT_DONE ? O2IB_MSG_PUT_ACK
		     : m->type == O2IB_MSG_GET_DONE ? O2IB_MSG_GET_REQ : O2IB_MSG_PUT_REQ;
	uint64_t cookie = m->type == O2IB_MSG_PUT_ACK ? m->u.putack.src_cookie : m->u.completion.cookie;
	struct o2ib_tx *tx = waiting_tx(conn, cookie, want);
	char why[160];

	if (!tx) {
		snprintf(why, sizeof(why), "%s names cookie %#llx, which no message of ours waits for",
			 o2ib_msg_type_name(m->type), (unsigned long long)cookie);
		o2ib_conn_close(conn, -EPROTO, why);
		return;
	}
	switch (m->type) {
	case O2IB_MSG_PUT_ACK: {
		const struct ulnet_msg_lnd_view *v = ulnet__msg_view(tx->lntmsg);
		struct ulnet_msg *msg = tx->lntmsg;

		tx->lntmsg = NULL; /* handed to the PUT_DONE */
		answered(conn, tx, 0);
		if (write_and_done(conn, O2IB_MSG_PUT_DONE, m->u.putack.dst_cookie, &m->u.putack.rd, msg, v->iov,
				   v->niov, v->hdr.payload_length))
			ulnet__finalize(msg, -ENOMEM);
		o2ib_rx_repost(rx, false);
		conn->reserved_credits++;
		break;
	}
	case O2IB_MSG_PUT_NAK:
		answered(conn, tx, m->u.completion.status < 0 ? m->u.completion.status : 0);
		o2ib_rx_repost(rx, false);
		conn->reserved_credits++;
		break;
	case O2IB_MSG_PUT_DONE:
		answered(conn, tx, m->u.completion.status < 0 ? m->u.completion.status : 0);
		o2ib_rx_repost(rx, true);
		break;
	default: /* GET_DONE */
		if (m->u.completion.status >= 0 && tx->lntmsg2)
			ulnet__set_reply_len(tx->lntmsg2, (uint32_t)m->u.completion.status);
		answered(conn, tx, m->u.completion.status < 0 ? m->u.completion.status : 0);
		o2ib_rx_repost(rx, false);
		conn->reserved_credits++;
		break;
	}
}
