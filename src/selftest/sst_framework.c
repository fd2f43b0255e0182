/* SPDX-License-Identifier: MIT */
/* The selftest framework server (sst_internal.h), one session at a time like lnet_selftest: sessions,
 * the tests and batches a console adds and runs, and the stat replies (plain and ulnet extended). */
#include "sst_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static bool sid_eq(struct ulnet_sst_sid a, struct ulnet_sst_sid b)
{
	return a.nid == b.nid && a.stamp == b.stamp;
}

struct ulnet_sst_sid sst__cur_sid(const struct ulnet_sst *sst)
{
	return sst->have_session ? sst->sid : ULNET_SST_SID_NONE;
}

/* Stop launching RPCs for batch @batch (@all: every batch). As lnet_selftest: RPCs in flight finish
 * (their server's bulk and reply still find our MDs) unless @force, which aborts them. */
static void tests_stop(struct ulnet_sst *sst, uint64_t batch, bool all, bool force)
{
	for (struct sst_test *t = sst->tests; t; t = t->next) {
		if (!t->framework || (!all && t->batch_id != batch))
			continue;
		t->stopping = true;
		t->abort |= force;
		for (struct sst_rpc *r = sst->active; force && r; r = r->anext)
			if (r->test == t && !r->aborting) {
				r->err = ERR_CANCELLED;
				sst__rpc_abort(sst, r);
			}
		sst__test_maybe_done(sst, t);
	}
}

void sst__session_end(struct ulnet_sst *sst)
{
	tests_stop(sst, 0, true, true);
	for (struct sst_test *t = sst->tests; t; t = t->next)
		if (t->framework && !t->zombie) {
			t->zombie = true;
			sst->zombies++;
			sst__tick_due(sst);
		}
	sst->have_session = false;
	sst->ses_ntests = 0;
	sst->fw_client_mem = 0;
}

/* Free the tests of ended sessions once no RPC refers to them. */
void sst__tests_reap(struct ulnet_sst *sst)
{
	for (struct sst_test **pp = &sst->tests; *pp;) {
		struct sst_test *t = *pp;
		if (!t->zombie || t->inflight) {
			pp = &t->next;
			continue;
		}
		*pp = t->next;
		sst->zombies--;
		sst__test_free(t);
	}
}

/* Sum the client tests of batch @bid (0: all) for an extended stat reply. */
static void stat_ext_fill(struct ulnet_sst *sst, uint64_t bid, struct ulnet_sst_stat_ext *x)
{
	uint64_t now = ulnet__now_ns(), start = 0, end = 0;
	uint32_t *all = NULL;
	size_t n = 0, cap = 0;

	memset(x, 0, sizeof(*x));
	x->mismatch_offset = UINT64_MAX;
	for (struct sst_test *t = sst->tests; t; t = t->next) {
		if (!t->framework || t->zombie || !t->is_client || (bid && t->batch_id != bid) || !t->run_start_ns)
			continue;
		x->ntests++;
		x->rpcs_ok += t->st.ok;
		x->rpcs_failed += t->st.failed;
		x->bytes += t->st.bytes;
		x->mismatch += (uint32_t)t->st.errs[ERR_MISMATCH];
		x->refused += (uint32_t)t->st.errs[ERR_REFUSED];
		x->peer_gone += (uint32_t)t->st.errs[ERR_PEER_GONE];
		/* timeouts to a peer later found gone were the peer going away */
		if (t->dest_gone)
			x->peer_gone += (uint32_t)t->st.errs[ERR_TIMEOUT];
		else
			x->timeout += (uint32_t)t->st.errs[ERR_TIMEOUT];
		if (t->st.bad_known && x->mismatch_offset == UINT64_MAX)
			x->mismatch_offset = t->st.bad_pos;
		if (t->st.lat_max > x->lat_max_us)
			x->lat_max_us = t->st.lat_max > UINT32_MAX ? UINT32_MAX : (uint32_t)t->st.lat_max;
		if (!x->first_error[0] && t->st.first_error[0])
			memcpy(x->first_error, t->st.first_error, ULNET_SST_EXT_ERR_SIZE); /* both NUL-padded */
		if (!t->done)
			x->active++;
		if (!start || t->run_start_ns < start)
			start = t->run_start_ns;
		if (t->done && t->run_end_ns > end)
			end = t->run_end_ns;
		if (t->st.nlat && n + t->st.nlat <= SST_MAX_LAT_SAMPLES) {
			if (n + t->st.nlat > cap) {
				size_t c = n + t->st.nlat;
				uint32_t *m = realloc(all, c * sizeof(*all));
				if (!m)
					continue;
				all = m;
				cap = c;
			}
			memcpy(all + n, t->st.lat, t->st.nlat * sizeof(*all));
			n += t->st.nlat;
		}
	}
	if (n) {
		qsort(all, n, sizeof(*all), sst__cmp_u32);
		x->lat_p50_us = all[(n - 1) * 50 / 100];
		x->lat_p99_us = all[(n - 1) * 99 / 100];
	}
	free(all);
	if (start)
		x->elapsed_ms = (uint32_t)(((x->active || !end ? now : end) - start) / 1000000u);
}

/* Worst-case memory of a client test: every unit's RPC in flight with its bulk buffer. */
static uint64_t client_test_mem(const struct ulnet_sst *sst, const struct ulnet_sst_msg *in)
{
	const struct ulnet_sst_test_reqst *q = &in->body.tes_reqst;
	uint64_t per = sizeof(struct sst_rpc), len;

	if (q->service == ULNET_SST_SVC_BRW) {
		len = in->ses_feats & ULNET_SST_FEAT_BULK_LEN ? q->u.bulk_v1.len : (uint64_t)q->u.bulk_v0.npg * sst->page;
		per += len + sst->page;
	}
	return per * q->concur * q->ndest;
}

/* The limits a remote console may not pass (docs/selftest.md §6): true when @r's TEST request is
 * refused; its reply says which limit (ulnet extension) and the node logs one line. */
static bool test_over_limit(struct ulnet_sst *sst, struct sst_rpc *r)
{
	const struct ulnet_sst_test_reqst *q = &r->in.body.tes_reqst;
	struct ulnet_sst_msg *out = &r->out;
	char peer[ULNET_NID_STRLEN];
	uint64_t mem = q->is_client ? client_test_mem(sst, &r->in) : 0;
	uint32_t timeout = r->in.reserved0 == ULNET_SST_EXT_MAGIC ? r->in.reserved1 : 0;

	ulnet_nid_format(&r->peer.nid, peer, sizeof(peer));
	if (sst->ses_ntests >= ULNET_SST_MAX_TESTS) {
		out->body.tes_reply.status = ENOSPC;
		out->reserved1 = ULNET_SST_LIMIT_TESTS;
		ULNET_LOG(SST, WARN, "selftest TEST from %s refused: session '%s' has %u tests, the limit "
			  "(ULNET_SST_MAX_TESTS)", peer, sst->ses_name, sst->ses_ntests);
	} else if (q->is_client && timeout > ULNET_SST_MAX_RPC_TIMEOUT_MS) {
		out->body.tes_reply.status = EINVAL;
		out->reserved1 = ULNET_SST_LIMIT_TIMEOUT;
		ULNET_LOG(SST, WARN, "selftest TEST from %s refused: RPC timeout %u ms, limit %u ms "
			  "(ULNET_SST_MAX_RPC_TIMEOUT_MS)", peer, timeout, ULNET_SST_MAX_RPC_TIMEOUT_MS);
	} else if (mem > ULNET_SST_MAX_CLIENT_MEM - sst->fw_client_mem) {
		out->body.tes_reply.status = ENOMEM;
		out->reserved1 = ULNET_SST_LIMIT_CLIENT_MEM;
		ULNET_LOG(SST, WARN, "selftest TEST from %s refused: client test needs up to %llu bytes "
			  "(concurrency %u x %u destinations), %llu of %u already taken by the session's tests "
			  "(ULNET_SST_MAX_CLIENT_MEM)", peer, (unsigned long long)mem, q->concur, q->ndest,
			  (unsigned long long)sst->fw_client_mem, ULNET_SST_MAX_CLIENT_MEM);
	} else {
		return false;
	}
	out->reserved0 = ULNET_SST_EXT_MAGIC;
	return true;
}

void sst__fw_handle(struct ulnet_sst *sst, struct sst_rpc *r)
{
	struct ulnet_sst_msg *in = &r->in, *out = &r->out;
	uint32_t feats = sst->have_session ? sst->ses_feats : ULNET_SST_FEATS_MASK;

	sst->ses_last_ns = ulnet__now_ns();
	out->body.rmsn_reply.sid = sst__cur_sid(sst); /* every framework reply has status, sid first */
	if (in->type != ULNET_SST_MKSN_REQST && in->type != ULNET_SST_DEBUG_REQST) {
		if (sst->have_session && in->ses_feats != sst->ses_feats) {
			out->body.rmsn_reply.status = EPROTO;
			goto reply;
		}
	} else if (in->ses_feats & ~ULNET_SST_FEATS_MASK) {
		out->body.rmsn_reply.status = EPROTO;
		goto reply;
	}
	switch (in->type) {
	case ULNET_SST_DEBUG_REQST:
		if (!sst->have_session) {
			out->body.dbg_reply.status = ESRCH;
			break;
		}
		out->body.dbg_reply.timeout = SST_SESSION_TIMEOUT;
		memcpy(out->body.dbg_reply.name, sst->ses_name, sizeof(out->body.dbg_reply.name));
		break;
	case ULNET_SST_MKSN_REQST: {
		const struct ulnet_sst_mksn_reqst *q = &in->body.mksn_reqst;
		struct ulnet_sst_mksn_reply *p = &out->body.mksn_reply;
		if (q->sid.nid == ULNET_NID_ANY4) {
			p->status = EINVAL;
			break;
		}
		if (sst->have_session) {
			p->timeout = SST_SESSION_TIMEOUT;
			if (sid_eq(q->sid, sst->sid))
				break;
			if (!q->force) {
				p->status = EBUSY;
				memcpy(p->name, sst->ses_name, sizeof(p->name));
				break;
			}
			sst__session_end(sst);
		}
		sst->have_session = true;
		sst->sid = q->sid;
		sst->ses_feats = in->ses_feats;
		memcpy(sst->ses_name, q->name, sizeof(sst->ses_name));
		sst->ses_started_ns = ulnet__now_ns();
		sst->brw_errors = sst->ping_errors = 0;
		p->sid = sst->sid;
		p->timeout = SST_SESSION_TIMEOUT;
		feats = sst->ses_feats;
		break;
	}
	case ULNET_SST_RMSN_REQST: {
		const struct ulnet_sst_rmsn_reqst *q = &in->body.rmsn_reqst;
		if (q->sid.nid == ULNET_NID_ANY4)
			out->body.rmsn_reply.status = EINVAL;
		else if (!sst->have_session || !sid_eq(q->sid, sst->sid))
			out->body.rmsn_reply.status = sst->have_session ? EBUSY : ESRCH;
		else {
			sst__session_end(sst);
			out->body.rmsn_reply.sid = ULNET_SST_SID_NONE;
		}
		break;
	}
	case ULNET_SST_STAT_REQST: {
		const struct ulnet_sst_stat_reqst *q = &in->body.stat_reqst;
		struct ulnet_sst_stat_reply *p = &out->body.stat_reply;
		struct ulnet_stats ls;
		if (q->sid.nid == ULNET_NID_ANY4) {
			p->status = EINVAL;
			break;
		}
		if (!sst->have_session || !sid_eq(q->sid, sst->sid)) {
			p->status = ESRCH;
			break;
		}
		if (q->type == ULNET_SST_STAT_TYPE_EXT && !sst->kernel_stats) {
			/* ulnet console: per-batch results of this node's client tests */
			stat_ext_fill(sst, q->ext_bid, &r->ext);
			r->ext.sid = sst->sid;
			r->ext_stat = true;
			out->reserved0 = ULNET_SST_EXT_MAGIC;
			out->reserved1 = ULNET_SST_STAT_EXT_V1;
			break;
		}
		ulnet_stats_get(sst->node, &ls);
		p->lnet = (struct ulnet_sst_lnet_counters){ ls.msgs_alloc, ls.msgs_max, (uint32_t)ls.errors,
			(uint32_t)ls.send_count, (uint32_t)ls.recv_count, (uint32_t)ls.route_count, (uint32_t)ls.drop_count,
			ls.send_length, ls.recv_length, ls.route_length, ls.drop_length };
		p->rpc = sst->cnt;
		p->fw.running_ms = (uint32_t)((ulnet__now_ns() - sst->ses_started_ns) / 1000000u);
		p->fw.brw_errors = sst->brw_errors;
		p->fw.ping_errors = sst->ping_errors;
		for (struct sst_test *t = sst->tests; t; t = t->next)
			if (t->framework && !t->zombie && !t->done)
				p->fw.active_batches++;
		break;
	}
	case ULNET_SST_BATCH_REQST: {
		const struct ulnet_sst_batch_reqst *q = &in->body.bat_reqst;
		struct ulnet_sst_batch_reply *p = &out->body.bat_reply;
		bool found = false;
		if (!sst->have_session || !sid_eq(q->sid, sst->sid)) {
			p->status = ESRCH;
			break;
		}
		for (struct sst_test *t = sst->tests; t; t = t->next)
			found |= t->framework && !t->zombie && t->batch_id == q->bid;
		if (!found) {
			p->status = ENOENT;
			break;
		}
		if (q->opc == ULNET_SST_BATCH_RUN) {
			uint64_t now = ulnet__now_ns();
			for (struct sst_test *t = sst->tests; t; t = t->next) {
				if (!t->framework || t->zombie || t->batch_id != q->bid || !t->is_client ||
				    (t->inflight && !t->done))
					continue;
				sst__test_running(sst, t);
				t->stopping = t->abort = t->dest_gone = false;
				t->started = t->finished = 0;
				free(t->st.lat);
				memset(&t->st, 0, sizeof(t->st));
				t->run_start_ns = now;
				t->run_end_ns = 0;
				t->end_ns = q->arg ? now + (uint64_t)q->arg * 1000000000u : 0;
				for (uint32_t i = 0; i < t->p.concurrency * t->ndest && sst__test_may_start(t, now); i++)
					sst__client_launch(sst, t);
			}
		} else if (q->opc == ULNET_SST_BATCH_STOP) {
			tests_stop(sst, q->bid, false, q->arg != 0); /* bar_arg: force */
		} else if (q->opc == ULNET_SST_BATCH_QUERY) {
			unsigned idx = 0;
			for (struct sst_test *t = sst->tests; t; t = t->next) {
				if (!t->framework || t->zombie || t->batch_id != q->bid)
					continue;
				idx++;
				if (q->testidx == 0 || q->testidx == idx)
					p->active += t->is_client && !t->done && t->started ? 1 : 0;
			}
		} else {
			sst__rpc_free(sst, r); /* unknown opcode: drop, as lnet_selftest does */
			return;
		}
		break;
	}
	case ULNET_SST_TEST_REQST: {
		const struct ulnet_sst_test_reqst *q = &in->body.tes_reqst;
		if (!q->loop || !q->concur || q->sid.nid == ULNET_NID_ANY4 || (q->is_client && !q->ndest) ||
		    q->ndest > 4096 || q->concur > ULNET_SST_MAX_CONCUR || q->service <= ULNET_SST_SVC_FRAMEWORK_MAX ||
		    q->service > ULNET_SST_SVC_MAX) {
			out->body.tes_reply.status = EINVAL;
			break;
		}
		if (!sst->have_session || !sid_eq(q->sid, sst->sid)) {
			out->body.tes_reply.status = ENOENT;
			break;
		}
		if (test_over_limit(sst, r))
			break;
		if (q->is_client) {
			/* fetch the destination list from the console's bulk buffer */
			uint32_t len = q->ndest * ULNET_SST_ID_SIZE;
			if (sst__rpc_alloc_bulk(sst, r, 0, len, SST_BUF_OWN)) {
				out->body.tes_reply.status = ENOMEM;
				break;
			}
			if (sst__post_active(sst, r, SLOT_BULK, true, r->buf + r->off, r->len, ULNET_SST_PORTAL_RDMA,
					q->bulkid)) {
				out->body.tes_reply.status = EIO;
				if (r->live)
					return;
				break;
			}
			return; /* continues in sst__fw_test_add_ids() */
		}
		sst__fw_test_add_ids(sst, r); /* a server entry: our buffers are always posted */
		return;
	}
	default:
		out->body.rmsn_reply.status = EINVAL;
		break;
	}
reply:
	out->ses_feats = feats;
	if (in->type == ULNET_SST_MKSN_REQST || in->type == ULNET_SST_DEBUG_REQST) {
		out->reserved0 = ULNET_SST_EXT_MAGIC; /* "this node is ulnet" (docs/selftest.md §6) */
		out->reserved1 = ulnet__sst_node_feats(sst->node);
	}
	sst__server_send_reply(sst, r);
}

void sst__fw_test_add_ids(struct ulnet_sst *sst, struct sst_rpc *r)
{
	const struct ulnet_sst_test_reqst *q = &r->in.body.tes_reqst;
	struct sst_test *t;

	r->out.ses_feats = sst->have_session ? sst->ses_feats : ULNET_SST_FEATS_MASK;
	if (r->out.body.tes_reply.status || r->status[SLOT_BULK]) {
		if (!r->out.body.tes_reply.status)
			r->out.body.tes_reply.status = EIO;
		sst__server_send_reply(sst, r);
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		r->out.body.tes_reply.status = ENOMEM;
		sst__server_send_reply(sst, r);
		return;
	}
	ulnet_list_init(&t->run_link);
	t->framework = true;
	t->is_client = q->is_client;
	t->batch_id = q->bid;
	t->service = q->service;
	t->feats = r->in.ses_feats;
	t->p.kind = q->service == ULNET_SST_SVC_BRW ? ULNET_SST_TEST_BRW : ULNET_SST_TEST_PING;
	t->p.concurrency = q->concur;
	/* lnet_selftest's client RPC timeout, unless a ulnet console sent its own */
	t->p.timeout_ms = r->in.reserved0 == ULNET_SST_EXT_MAGIC && r->in.reserved1 ? r->in.reserved1 : 64000;
	t->limit = (int32_t)q->loop < 0 ? 0 : (uint64_t)q->loop * q->concur * (q->ndest ? q->ndest : 1);
	t->done = true;
	if (q->service == ULNET_SST_SVC_BRW) {
		if (r->in.ses_feats & ULNET_SST_FEAT_BULK_LEN) {
			t->p.rw = q->u.bulk_v1.opc;
			t->p.check = q->u.bulk_v1.flags;
			t->p.size = q->u.bulk_v1.len;
			t->p.offset = q->u.bulk_v1.offset;
		} else {
			t->p.rw = q->u.bulk_v0.opc;
			t->p.check = q->u.bulk_v0.flags;
			t->p.size = q->u.bulk_v0.npg * sst->page;
		}
	}
	if (q->is_client) {
		const char *why;
		t->ndest = q->ndest;
		t->dests = calloc(q->ndest, sizeof(*t->dests));
		for (unsigned i = 0; t->dests && i < q->ndest; i++) {
			struct ulnet_sst_id id;
			ulnet__sst_id_unpack(r->buf + i * ULNET_SST_ID_SIZE, r->in.swab, &id);
			ulnet_nid_from_nid4(id.nid, &t->dests[i].nid);
			t->dests[i].pid = id.pid;
		}
		t->p.dest = t->dests ? t->dests[0] : t->p.dest;
		t->p.duration_ms = 1;
		if (!t->dests || (t->service == ULNET_SST_SVC_BRW &&
				  ulnet__sst_params_check(&t->p, sst->page, ulnet__sst_size_max(sst->node), &why))) {
			free(t->dests);
			free(t);
			r->out.body.tes_reply.status = EINVAL;
			sst__server_send_reply(sst, r);
			return;
		}
		t->p.duration_ms = 0;
		t->client_mem = client_test_mem(sst, &r->in);
	}
	if (!sst->have_session || !sid_eq(q->sid, sst->sid)) { /* the session ended while the ids came */
		sst__test_free(t);
		r->out.body.tes_reply.status = ENOENT;
		sst__server_send_reply(sst, r);
		return;
	}
	sst->ses_ntests++;
	sst->fw_client_mem += t->client_mem;
	t->next = sst->tests;
	sst->tests = t;
	sst__server_send_reply(sst, r);
}
