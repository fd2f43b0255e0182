/* SPDX-License-Identifier: MIT */
/* The selftest test client (sst_internal.h): RPC loops for ulnet__sst_run() and for the batches a
 * console starts, with error classification and latency samples. */
#include "sst_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static enum sst_err classify_status(int status)
{
	switch (status) {
	case -ETIMEDOUT:
		return ERR_TIMEOUT;
	case -ECONNREFUSED: case -ECONNRESET: case -ECONNABORTED: case -EHOSTUNREACH: case -ENETUNREACH:
	case -EHOSTDOWN: case -ESHUTDOWN: case -ENOTCONN: case -EPIPE: case -EIO: case -ENETDOWN:
		return ERR_PEER_GONE;
	default:
		return ERR_REFUSED;
	}
}

static const char *err_name(enum sst_err e)
{
	static const char *const n[] = { "ok", "timeout", "mismatch", "refused", "peer_gone", "cancelled" };
	return n[e];
}

static void test_record_error(struct sst_test *t, enum sst_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void test_record_error(struct sst_test *t, enum sst_err e, const char *fmt, ...)
{
	va_list ap;

	t->st.failed++;
	t->st.errs[e]++;
	if (!t->st.first_error[0]) {
		va_start(ap, fmt);
		vsnprintf(t->st.first_error, sizeof(t->st.first_error), fmt, ap);
		va_end(ap);
	}
}

static void test_record_latency(struct sst_test *t, uint64_t us)
{
	struct sst_stats *s = &t->st;

	if (us > s->lat_max)
		s->lat_max = us;
	if (s->nlat == s->caplat) {
		size_t cap = s->caplat ? s->caplat * 2 : 4096;
		uint32_t *n;
		if (cap > SST_MAX_LAT_SAMPLES)
			return;
		n = realloc(s->lat, cap * sizeof(*n));
		if (!n)
			return;
		s->lat = n;
		s->caplat = cap;
	}
	s->lat[s->nlat++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

bool sst__test_may_start(const struct sst_test *t, uint64_t now)
{
	if (t->stopping || t->dest_gone)
		return false;
	if (t->limit && t->started >= t->limit)
		return false;
	if (t->end_ns && now >= t->end_ns)
		return false;
	return true;
}

void sst__test_running(struct ulnet_sst *sst, struct sst_test *t)
{
	t->done = false;
	ulnet_list_del(&t->run_link);
	ulnet_list_add_tail(&t->run_link, &sst->running);
	sst__tick_due(sst);
}

void sst__test_free(struct sst_test *t)
{
	ulnet_list_del(&t->run_link);
	if (t->dests != &t->p.dest)
		free(t->dests);
	free(t->st.lat);
	free(t);
}

void sst__test_maybe_done(struct ulnet_sst *sst, struct sst_test *t)
{
	if (t->inflight == 0 && !sst__test_may_start(t, ulnet__now_ns()) && !t->done) {
		ulnet_list_del(&t->run_link);
		t->done = true;
		t->run_end_ns = ulnet__now_ns();
		ulnet__futex_cond_broadcast(&t->cv);
	}
	(void)sst;
}

/* All MDs of a client RPC are final: account for it and start the next one. */
static void client_complete(struct ulnet_sst *sst, struct sst_rpc *r)
{
	struct sst_test *t = r->test;
	struct ulnet_sst_msg rep;
	struct ulnet_wire_err werr = { 0 };
	enum sst_err e = r->err;
	char peer[ULNET_NID_STRLEN] = "";
	uint64_t now = ulnet__now_ns(); /* the RPC's end, and the clock for what starts next */

	/* the request never reached the server: whatever the code, the peer is not there */
	if (e == ERR_NONE && r->status[SLOT_REQ])
		e = classify_status(r->status[SLOT_REQ]) == ERR_REFUSED ? ERR_REFUSED : ERR_PEER_GONE;
	if (e == ERR_NONE && r->status[SLOT_RPY])
		e = classify_status(r->status[SLOT_RPY]);
	if (e == ERR_NONE && ulnet__sst_msg_unpack(r->rpy, r->mlen[SLOT_RPY], &rep, &werr)) {
		e = ERR_REFUSED;
		r->remote_status = EPROTO;
	}
	if (e == ERR_NONE) {
		uint32_t want = (uint32_t)ulnet__sst_service_request(t->service) + 1;
		uint32_t status = t->service == ULNET_SST_SVC_BRW ? rep.body.brw_reply.status : rep.body.ping_reply.status;
		if (rep.type != want) {
			e = ERR_REFUSED;
			r->remote_status = EBADMSG;
		} else if (status == EBADMSG && t->service == ULNET_SST_SVC_BRW) {
			e = ERR_MISMATCH;
			r->remote_status = (int)status;
			if (rep.reserved0 == SST_EXT_MAGIC) {
				r->bad_known = true;
				r->bad_pos = rep.reserved1;
			}
		} else if (status) {
			e = ERR_REFUSED;
			r->remote_status = (int)status;
		} else if (t->service == ULNET_SST_SVC_PING &&
			   (rep.body.ping_reply.magic != ULNET_SST_PING_MAGIC ||
			    rep.body.ping_reply.seq != ulnet_get_ho32(r->req + 36, false))) {
			e = ERR_REFUSED;
			r->remote_status = EBADMSG;
		}
		if (e == ERR_NONE && t->service == ULNET_SST_SVC_BRW) {
			if (r->status[SLOT_BULK])
				e = classify_status(r->status[SLOT_BULK]);
			else if (t->p.rw == ULNET_SST_BRW_READ &&
				 sst__bulk_check(r, rep.swab, t->p.check, &r->bad_pos)) {
				e = ERR_MISMATCH;
				r->bad_known = true;
			}
		}
	}
	if (e == ERR_PEER_GONE || (e == ERR_TIMEOUT && t->dest_gone)) {
		e = ERR_PEER_GONE;
		t->dest_gone = true;
	}
	if (e != ERR_NONE && e != ERR_CANCELLED) /* for the error line; formatting costs every RPC otherwise */
		ulnet_nid_format(&r->peer.nid, peer, sizeof(peer));
	if (e == ERR_CANCELLED) {
		/* not counted: the user stopped the test, or the peer is already known to be gone */
	} else if (e == ERR_NONE) {
		t->st.ok++;
		t->st.bytes += t->service == ULNET_SST_SVC_BRW ? t->p.size : 0;
		test_record_latency(t, (now - r->start_ns) / 1000);
	} else if (e == ERR_MISMATCH) {
		if (r->bad_known && !t->st.bad_known) {
			t->st.bad_known = true;
			t->st.bad_pos = r->bad_pos;
		}
		if (r->bad_known)
			test_record_error(t, e, "data mismatch %s %s at byte %llu of the transfer",
					  t->p.rw == ULNET_SST_BRW_READ ? "from" : "reported by", peer,
					  (unsigned long long)r->bad_pos);
		else
			test_record_error(t, e, "data mismatch reported by %s", peer);
	} else if (r->local_rc) {
		test_record_error(t, e, "cannot start an RPC to %s: %s", peer, ulnet_strerror(r->local_rc));
	} else if (e == ERR_REFUSED && r->remote_status) {
		test_record_error(t, e, "%s refused the RPC: status %d (%s)", peer, r->remote_status,
				  ulnet_strerror(-r->remote_status));
	} else {
		int st = r->status[SLOT_REQ] ? r->status[SLOT_REQ] : r->status[SLOT_RPY] ? r->status[SLOT_RPY]
			 : r->status[SLOT_BULK];
		test_record_error(t, e, "%s: %s%s%s", peer, err_name(e), st && e != ERR_TIMEOUT ? ", " : "",
				  st && e != ERR_TIMEOUT ? ulnet_strerror(st) : "");
	}
	if (e != ERR_NONE && e != ERR_CANCELLED && t->framework) {
		if (t->service == ULNET_SST_SVC_BRW)
			sst->brw_errors++;
		else
			sst->ping_errors++;
	}
	if (e != ERR_NONE && e != ERR_CANCELLED)
		sst->cnt.errors++;
	if (e != ERR_CANCELLED)
		sst->cl_results[e]++;
	if (e == ERR_NONE && t->service == ULNET_SST_SVC_BRW)
		sst->cl_bytes[t->p.rw == ULNET_SST_BRW_WRITE] += t->p.size;
	t->finished++;
	t->inflight--;
	sst__rpc_free(sst, r);
	if (sst__test_may_start(t, now))
		sst__client_launch(sst, t);
	sst__test_maybe_done(sst, t);
}

static void client_fail_now(struct ulnet_sst *sst, struct sst_rpc *r, enum sst_err e)
{
	if (r->err == ERR_NONE)
		r->err = e;
	sst__rpc_abort(sst, r);
	if (!r->live)
		client_complete(sst, r);
}

void sst__client_launch(struct ulnet_sst *sst, struct sst_test *t)
{
	struct sst_rpc *r = sst__rpc_new(sst, ROLE_CLIENT);
	struct ulnet_sst_msg m;
	uint64_t now = ulnet__now_ns();
	int rc;

	if (!r) {
		t->stopping = true;
		return;
	}
	r->test = t;
	r->service = t->service;
	r->peer = t->dests[t->dnext++ % t->ndest];
	r->start_ns = now;
	r->deadline_ns = now + (uint64_t)(t->p.timeout_ms ? t->p.timeout_ms : 10000) * 1000000u;
	r->anext = sst->active;
	if (sst->active)
		sst->active->aprev = r;
	sst->active = r;
	sst__tick_due(sst);
	t->started++;
	t->inflight++;

	memset(&m, 0, sizeof(m));
	m.type = (uint32_t)ulnet__sst_service_request(t->service);
	m.ses_feats = t->feats;
	if (t->service == ULNET_SST_SVC_BRW) {
		bool write = t->p.rw == ULNET_SST_BRW_WRITE;
		bool checked = t->p.check == ULNET_SST_CHECK_SIMPLE || t->p.check == ULNET_SST_CHECK_FULL;
		/* nothing reads an unchecked (none, discard) sink nor fills an unchecked source: they may be
		 * shared (a source to corrupt keeps its own) */
		enum sst_buf use = checked ? SST_BUF_OWN
				   : !write ? SST_BUF_SHARED_SINK
				   : t->corrupt_left ? SST_BUF_OWN : SST_BUF_SHARED_SOURCE;

		rc = sst__rpc_alloc_bulk(sst, r, t->p.offset, t->p.size, use);
		if (rc) {
			r->local_rc = rc;
			client_fail_now(sst, r, ERR_REFUSED);
			return;
		}
		if (checked)
			ulnet__sst_brw_fill(r->buf + t->p.offset, t->p.size, 0,
					    write ? ULNET_SST_BRW_MAGIC : ULNET_SST_BRW_POISON);
		if (write && t->corrupt_left) {
			t->corrupt_left--;
			sst__bulk_corrupt(r, t->p.corrupt_at);
		}
		m.body.brw_reqst.rpyid = sst->next_bits++;
		m.body.brw_reqst.bulkid = sst->next_bits++;
		m.body.brw_reqst.rw = t->p.rw;
		m.body.brw_reqst.len = t->p.size;
		m.body.brw_reqst.flags = t->p.check;
		rc = sst__post_passive(sst, r, SLOT_RPY, m.body.brw_reqst.rpyid, ULNET_MD_OP_PUT);
		if (!rc)
			rc = sst__post_passive(sst, r, SLOT_BULK, m.body.brw_reqst.bulkid,
					  write ? ULNET_MD_OP_GET : ULNET_MD_OP_PUT);
	} else {
		uint64_t wall = ulnet__wall_ns(); /* the kernel's selftest stamps its pings with wall time */

		m.body.ping_reqst.rpyid = sst->next_bits++;
		m.body.ping_reqst.magic = ULNET_SST_PING_MAGIC;
		m.body.ping_reqst.seq = t->ping_seq++;
		m.body.ping_reqst.time_sec = wall / 1000000000u;
		m.body.ping_reqst.time_nsec = wall % 1000000000u;
		rc = sst__post_passive(sst, r, SLOT_RPY, m.body.ping_reqst.rpyid, ULNET_MD_OP_PUT);
	}
	if (rc) {
		r->local_rc = rc;
		client_fail_now(sst, r, ERR_REFUSED);
		return;
	}
	(void)ulnet__sst_msg_pack(&m, r->req);
	rc = sst__post_active(sst, r, SLOT_REQ, false, r->req, ULNET_SST_MSG_SIZE,
			 ulnet__sst_service_portal(t->service), t->service);
	if (rc) {
		r->status[SLOT_REQ] = rc;
		client_fail_now(sst, r, classify_status(rc));
		return;
	}
	sst->cnt.rpcs_sent++;
}

void sst__client_event(struct ulnet_sst *sst, struct sst_rpc *r, int slot, const struct ulnet_event *ev)
{
	if (ev->type != ULNET_EVENT_UNLINK || ev->status) {
		if (!r->status[slot])
			r->status[slot] = ev->status;
	} else if (!r->aborting && !r->status[slot]) {
		r->status[slot] = -EINTR;
	}
	if (slot == SLOT_RPY && ev->type == ULNET_EVENT_PUT && !ev->status)
		r->mlen[SLOT_RPY] = ev->mlength;
	/* bulk_get/bulk_put count what this node moved as a server, as lnet_selftest does */
	if (!ev->unlinked)
		return;
	r->live &= ~(1u << slot);
	if (slot == SLOT_REQ && ev->status && !r->aborting) {
		client_fail_now(sst, r, classify_status(ev->status));
		return;
	}
	if (slot == SLOT_RPY && !r->aborting) {
		/* A reply that says no means the server will not touch our bulk buffer. */
		struct ulnet_sst_hdr h;
		uint32_t status = 0;
		if (!ev->status && !ulnet__sst_hdr_unpack(r->rpy, r->mlen[SLOT_RPY], &h, NULL) &&
		    r->mlen[SLOT_RPY] >= ULNET_SST_HDR_SIZE + 4)
			status = ulnet_get_ho32(r->rpy + ULNET_SST_HDR_SIZE, h.swab);
		if (ev->status || status)
			sst__rpc_abort(sst, r);
	}
	if (!r->live)
		client_complete(sst, r);
}
