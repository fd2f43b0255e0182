/* SPDX-License-Identifier: MIT */
/* ulnetd's selftest commands (docs/selftest.md): the engine starts with the daemon, so every ulnetd
 * serves lnet_selftest RPCs. These commands run tests and report each as one JSON object per line,
 * which the ulnet-selftest console formats; this node is the lst console.
 *
 *   selftest run brw read|write --to NID [--from NID] [--size N] [--offset N] [--check C]
 *                [--concurrency N] [--duration-ms N] [--count N] [--timeout-ms N]
 *                [--corrupt-at N --corrupt-count N] [--progress]
 *   selftest run ping --to NID [--from NID] [...]
 *                With --from another node, this node drives it over the framework RPCs (a one-test
 *                lst session: make session, add test, run, query stats, stop, remove session).
 *   selftest inject --count N [--at N]     corrupt the next N brw transfers this node serves
 *   selftest stat [--json]                 engine counters and the lst session, if any
 *   selftest nids                          this node's NIDs, one per line
 * The lst-style session, group, batch and test commands are in control_lst.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "control_selftest.h"

int ulnetd_sst_check_parse(const char *s, enum ulnet_sst_check *out)
{
	if (!strcmp(s, "none"))
		*out = ULNET_SST_CHECK_NONE;
	else if (!strcmp(s, "simple"))
		*out = ULNET_SST_CHECK_SIMPLE;
	else if (!strcmp(s, "full"))
		*out = ULNET_SST_CHECK_FULL;
	else
		return -EINVAL;
	return 0;
}

/* ---- result output: one JSON object per line (the library's writer), formatted by the console ---- */

void ulnetd_sst_result_json(struct ulnetd_out *out, const struct run_out *o, bool progress)
{
	const struct ulnet_sst_result *r = &o->r;
	struct ulnetd_emit e;
	char secs[32];

	snprintf(secs, sizeof(secs), "%.6f", r->seconds);
	ulnetd_emit_init(&e, out, true);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_bool(&e, "progress", progress);
	ulnetd_emit_str(&e, "test", o->kind);
	ulnetd_emit_bool(&e, "write", o->write);
	ulnetd_emit_str(&e, "from", o->from);
	ulnetd_emit_str(&e, "to", o->to);
	ulnetd_emit_uint(&e, "size", o->size);
	ulnetd_emit_uint(&e, "offset", o->offset);
	ulnetd_emit_str(&e, "check", o->check ? o->check : "none");
	ulnetd_emit_uint(&e, "concurrency", o->concurrency);
	ulnetd_emit_bool(&e, "remote", o->remote);
	ulnetd_emit_bool(&e, "latency_na", o->lat_na);
	ulnetd_emit_bool(&e, "bytes_na", o->bytes_na);
	ulnetd_emit_str(&e, "source", o->source ? o->source : "");
	ulnetd_emit_raw(&e, "seconds", secs);
	ulnetd_emit_uint(&e, "rpcs_ok", r->rpcs_ok);
	ulnetd_emit_uint(&e, "rpcs_failed", r->rpcs_failed);
	ulnetd_emit_uint(&e, "bytes", r->bytes);
	ulnetd_emit_uint(&e, "lat_p50_us", r->lat_p50_us);
	ulnetd_emit_uint(&e, "lat_p99_us", r->lat_p99_us);
	ulnetd_emit_uint(&e, "lat_max_us", r->lat_max_us);
	ulnetd_emit_uint(&e, "timeout", r->timeout);
	ulnetd_emit_uint(&e, "mismatch", r->mismatch);
	ulnetd_emit_uint(&e, "refused", r->refused);
	ulnetd_emit_uint(&e, "peer_gone", r->peer_gone);
	ulnetd_emit_uint(&e, "unclassified", o->unclassified);
	ulnetd_emit_int(&e, "mismatch_offset", r->mismatch_offset_known ? (long long)r->first_mismatch_offset : -1LL);
	ulnetd_emit_str(&e, "first_error", r->first_error);
	ulnetd_emit_end(&e);
}

struct progress_ctx {
	struct ulnetd *d;
	struct ulnetd_out *out;
	struct run_out *o;
	bool emit;                   /* the console asked for progress lines */
};

static int on_progress(void *arg, const struct ulnet_sst_result *so_far)
{
	struct progress_ctx *pc = arg;

	if (ulnetd_stopping(pc->d))
		return 1; /* the daemon is ending: end the run now, not at its deadline */
	if (!pc->emit)
		return 0;
	pc->o->r = *so_far;
	ulnetd_sst_result_json(pc->out, pc->o, true);
	return ulnetd_out_flush(pc->out) ? 1 : 0; /* the console went away: stop */
}

/* ---- turning STAT replies into a result ---- */

/* A client node's part of a batch: from its extended stats (ulnet node: measured there), or from the
 * counter deltas between @c0 and @c1 (lnet_selftest node; the payload from the servers' bulk counters
 * when @srv_bytes_ok). */
void ulnetd_sst_derive_result(const struct ulnet_sst_con_stat *c0, const struct ulnet_sst_con_stat *c1,
			      uint32_t service, bool srv_bytes_ok, uint64_t srv_bytes, double wall_s,
			      struct run_out *o)
{
	struct ulnet_sst_result *r = &o->r;

	memset(r, 0, sizeof(*r));
	if (c1->ext) {
		const struct ulnet_sst_stat_ext *x = &c1->x;
		r->rpcs_ok = x->rpcs_ok;
		r->rpcs_failed = x->rpcs_failed;
		r->bytes = x->bytes;
		r->seconds = x->elapsed_ms ? x->elapsed_ms / 1000.0 : wall_s;
		r->lat_p50_us = x->lat_p50_us;
		r->lat_p99_us = x->lat_p99_us;
		r->lat_max_us = x->lat_max_us;
		r->timeout = x->timeout;
		r->mismatch = x->mismatch;
		r->refused = x->refused;
		r->peer_gone = x->peer_gone;
		r->mismatch_offset_known = x->mismatch_offset != UINT64_MAX;
		r->first_mismatch_offset = x->mismatch_offset;
		snprintf(r->first_error, sizeof(r->first_error), "%.44s", x->first_error);
		o->source = "measured on the client node (ulnet)";
		return;
	}
	{
		const struct ulnet_sst_stat_reply *a = &c0->plain, *b = &c1->plain;
		uint32_t sent = b->rpc.rpcs_sent - a->rpc.rpcs_sent;
		uint32_t errs = service == ULNET_SST_SVC_BRW ? b->fw.brw_errors - a->fw.brw_errors
							      : b->fw.ping_errors - a->fw.ping_errors;
		uint32_t expired = b->rpc.rpcs_expired - a->rpc.rpcs_expired;
		if (expired > errs)
			expired = errs;
		r->rpcs_ok = sent > errs ? sent - errs : 0;
		r->rpcs_failed = errs;
		r->timeout = expired;
		o->unclassified = errs - expired;
		r->seconds = wall_s;
		r->bytes = srv_bytes_ok ? srv_bytes : 0;
		o->bytes_na = !srv_bytes_ok && service == ULNET_SST_SVC_BRW;
		o->lat_na = true;
		o->source = srv_bytes_ok ? "lnet_selftest counters (rpcs from the client, bytes from the servers)"
					 : "lnet_selftest counters of the client node";
		if (errs)
			snprintf(r->first_error, sizeof(r->first_error),
				 "the client node counted %u failed RPCs (%u expired); it does not say which kind", errs,
				 expired);
	}
}

uint64_t ulnetd_sst_bulk_bytes(const struct ulnet_sst_con_stat *s)
{
	return s->plain.rpc.bulk_get + s->plain.rpc.bulk_put;
}

/* ---- one test on a remote client node (selftest run --from) ---- */

struct remote_run {
	struct ulnet_process_id client, server;
	struct ulnet_sst_con_test t;
	uint32_t duration_ms, timeout_ms;
	uint64_t count;
	bool progress;
};

static int remote_run(struct ulnetd *d, struct ulnetd_out *out, struct remote_run *rr, struct run_out *o)
{
	struct ulnet_sst_con con = { 0 };
	struct ulnet_sst_con_stat c0, c1, s0, s1, tmp;
	char why[512] = "", why2[256];
	bool srv_joined = false, srv_stats = false, client_gone = false, stopped = false;
	uint64_t t0, deadline, next_progress, next_ping, bid = 1;
	uint32_t active = 1, client_feats = 0;
	int rc;

	con.sst = ulnetd_sst_of(d);
	con.sid.nid = ulnet__sst_console_nid4(con.sst);
	con.sid.stamp = ulnetd_sst_real_ms();
	snprintf(con.name, sizeof(con.name), "ulnet-selftest-run");
	con.feats = ULNET_SST_FEAT_BULK_LEN;
	con.rpc_timeout_ms = rr->timeout_ms < 5000 ? rr->timeout_ms : 5000;
	if (con.rpc_timeout_ms < 1000)
		con.rpc_timeout_ms = 1000;
	if (!con.sid.nid)
		return ulnetd_errorf(out, -EADDRNOTAVAIL, "selftest run: this node has no NID other than lo to be a "
				     "console with");
	rc = ulnet__sst_con_join(&con, &rr->client, false, &client_feats, why, sizeof(why));
	if (rc)
		return ulnetd_errorf(out, rc, "selftest run: client %s", why);
	/* before any test request: a client that may be a kernel node never gets an offset it cannot survive */
	if (rr->t.service == ULNET_SST_SVC_BRW && !(client_feats & ULNET_SST_NODE_ANY_OFFSET) &&
	    ulnet__sst_kernel_offset_check(rr->t.size, rr->t.offset, why, sizeof(why))) {
		char nid[ULNET_NID_STRLEN];
		(void)ulnet__sst_con_leave(&con, &rr->client, why2, sizeof(why2));
		return ulnetd_errorf(out, -EINVAL, "selftest run: client %s is not known to be a ulnet node: %s",
				     ulnet_nid_format(&rr->client.nid, nid, sizeof(nid)), why);
	}
	/* the server joins too, so a kernel server posts buffers for the test; a busy server still serves */
	if (!ulnet_nid_equal(&rr->server.nid, &rr->client.nid) &&
	    !ulnet__sst_con_join(&con, &rr->server, false, NULL, why2, sizeof(why2))) {
		struct ulnet_sst_con_test st = rr->t;
		srv_joined = true;
		st.loop = (int32_t)rr->t.concurrency;
		(void)ulnet__sst_con_test_add(&con, &rr->server, bid, &st, false, 0, NULL, 0, why2, sizeof(why2));
	}
	rc = ulnet__sst_con_test_add(&con, &rr->client, bid, &rr->t, true, client_feats, &rr->server, 1, why,
				     sizeof(why));
	if (!rc)
		rc = ulnet__sst_con_stat(&con, &rr->client, true, bid, &c0, why, sizeof(why));
	if (!rc && !c0.ext)
		rc = ulnet__sst_con_stat(&con, &rr->client, false, 0, &c0, why, sizeof(why));
	if (!rc && srv_joined && !c0.ext)
		srv_stats = !ulnet__sst_con_stat(&con, &rr->server, false, 0, &s0, why2, sizeof(why2));
	t0 = ulnetd_sst_mono_ms();
	if (!rc)
		rc = ulnet__sst_con_batch(&con, &rr->client, bid, ULNET_SST_BATCH_RUN,
					  rr->count ? 0 : (rr->duration_ms + 999) / 1000, NULL, why, sizeof(why));
	if (rc) {
		(void)ulnet__sst_con_leave(&con, &rr->client, why2, sizeof(why2));
		if (srv_joined)
			(void)ulnet__sst_con_leave(&con, &rr->server, why2, sizeof(why2));
		return ulnetd_errorf(out, rc, "selftest run: %s", why);
	}
	/* lnet_selftest ignores the run time, so the console stops the batch itself */
	deadline = rr->count ? UINT64_MAX : t0 + rr->duration_ms;
	next_progress = t0 + 1000;
	next_ping = t0 + CON_PING_MS;
	c1 = c0;
	for (;;) {
		uint64_t now;
		usleep(100000);
		now = ulnetd_sst_mono_ms();
		if (c0.ext) {
			rc = ulnet__sst_con_stat(&con, &rr->client, true, bid, &tmp, why, sizeof(why));
			if (!rc) {
				c1 = tmp; /* the last good sample stays when the node goes away */
				active = c1.x.active;
			}
		} else {
			rc = ulnet__sst_con_batch(&con, &rr->client, bid, ULNET_SST_BATCH_QUERY, 0, &active, why,
						  sizeof(why));
		}
		if (rc) {
			client_gone = true;
			break;
		}
		if (!active && now - t0 > 200)
			break;
		if (now >= deadline || ulnetd_stopping(d)) {
			if (!stopped)
				(void)ulnet__sst_con_batch(&con, &rr->client, bid, ULNET_SST_BATCH_STOP, 0, NULL, why2,
							   sizeof(why2));
			stopped = true;
			/* RPCs in flight finish or time out on the client */
			if (now >= deadline + rr->timeout_ms + 3000 || ulnetd_stopping(d))
				break;
		}
		if (srv_joined && now >= next_ping) { /* keep the server's session alive, as lst's pinger */
			(void)ulnet__sst_con_ping(&con, &rr->server, why2, sizeof(why2));
			next_ping = now + CON_PING_MS;
		}
		if (rr->progress && now >= next_progress && c1.ext) {
			ulnetd_sst_derive_result(&c0, &c1, rr->t.service, false, 0, (now - t0) / 1000.0, o);
			ulnetd_sst_result_json(out, o, true);
			if (ulnetd_out_flush(out)) {
				deadline = now; /* the console went away: stop */
				rr->progress = false;
			}
			next_progress += 1000;
		}
	}
	if (!client_gone && !(rc = ulnet__sst_con_stat(&con, &rr->client, c0.ext, bid, &tmp, why, sizeof(why))))
		c1 = tmp;
	if (rc)
		client_gone = true;
	if (srv_stats)
		srv_stats = !ulnet__sst_con_stat(&con, &rr->server, false, 0, &s1, why2, sizeof(why2));
	ulnetd_sst_derive_result(&c0, &c1, rr->t.service, srv_stats, srv_stats ? ulnetd_sst_bulk_bytes(&s1) - ulnetd_sst_bulk_bytes(&s0) : 0,
		      (ulnetd_sst_mono_ms() - t0) / 1000.0, o);
	if (client_gone) {
		/* results up to the last answer, plus the node itself */
		o->r.peer_gone++;
		o->lat_na = !c1.ext;
		if (!c1.ext)
			o->bytes_na = true;
		snprintf(o->r.first_error, sizeof(o->r.first_error), "client node stopped answering: %.120s", why);
	} else {
		(void)ulnet__sst_con_leave(&con, &rr->client, why2, sizeof(why2));
	}
	if (srv_joined)
		(void)ulnet__sst_con_leave(&con, &rr->server, why2, sizeof(why2));
	ulnetd_sst_result_json(out, o, false);
	return 0;
}

static int cmd_run(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long size = 1 << 20, offset = 0, concur = 1, duration_ms = 10000, count = 0, timeout_ms = 10000;
	long long corrupt_at = 0, corrupt_count = 0, pid = ULNET_PID_LUSTRE;
	const char *to = NULL, *from = NULL, *check = "full";
	bool progress = false;
	const struct ulnetd_opt opts[] = {
		{ "--to", NULL, ULNETD_OPT_STR, 0, 0, &to },
		{ "--from", NULL, ULNETD_OPT_STR, 0, 0, &from },
		{ "--pid", NULL, ULNETD_OPT_INT, 0, UINT32_MAX, &pid },
		{ "--size", NULL, ULNETD_OPT_INT, 1, ULNET_MTU, &size },
		{ "--offset", NULL, ULNETD_OPT_INT, 0, ULNET_MTU - 1, &offset },
		{ "--check", NULL, ULNETD_OPT_STR, 0, 0, &check },
		{ "--concurrency", NULL, ULNETD_OPT_INT, 1, ULNET_SST_MAX_CONCUR, &concur },
		{ "--duration-ms", NULL, ULNETD_OPT_INT, 0, 24LL * 3600 * 1000, &duration_ms },
		{ "--count", NULL, ULNETD_OPT_INT, 0, INT64_MAX, &count },
		{ "--timeout-ms", NULL, ULNETD_OPT_INT, 1, 3600 * 1000, &timeout_ms },
		{ "--corrupt-at", NULL, ULNETD_OPT_INT, 0, ULNET_MTU - 1, &corrupt_at },
		{ "--corrupt-count", NULL, ULNETD_OPT_INT, 0, UINT32_MAX, &corrupt_count },
		{ "--progress", NULL, ULNETD_OPT_FLAG, 0, 0, &progress },
	};
	char *pos[2];
	int npos, rc;
	struct ulnet_sst_params p = { 0 };
	struct ulnet_sst_result res;
	struct run_out o = { 0 };
	struct progress_ctx pc = { d, out, &o, progress };
	struct ulnet_process_id client = { 0 };
	const char *why = NULL;

	if ((rc = ulnetd_parse_args(out, "selftest run", argc, argv, opts, sizeof(opts) / sizeof(opts[0]), pos, 2,
				    &npos)))
		return rc;
	if (!ulnetd_sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	if (npos < 1 || (strcmp(pos[0], "brw") && strcmp(pos[0], "ping")))
		return ulnetd_errorf(out, -EINVAL, "selftest run: give brw read|write or ping");
	if (!to)
		return ulnetd_errorf(out, -EINVAL, "selftest run: --to NID is required");
	if ((rc = ulnet_nid_parse(to, &p.dest.nid, &why)))
		return ulnetd_errorf(out, rc, "selftest run: bad NID '%s': %s", to, why ? why : "invalid");
	if (from && (rc = ulnet_nid_parse(from, &client.nid, &why)))
		return ulnetd_errorf(out, rc, "selftest run: bad NID '%s': %s", from, why ? why : "invalid");
	p.dest.pid = (uint32_t)pid;
	if (!strcmp(pos[0], "brw")) {
		p.kind = ULNET_SST_TEST_BRW;
		if (npos < 2 || (strcmp(pos[1], "read") && strcmp(pos[1], "write")))
			return ulnetd_errorf(out, -EINVAL, "selftest run brw: give read or write");
		p.rw = strcmp(pos[1], "read") ? ULNET_SST_BRW_WRITE : ULNET_SST_BRW_READ;
	} else {
		p.kind = ULNET_SST_TEST_PING;
		if (npos > 1)
			return ulnetd_errorf(out, -EINVAL, "selftest run ping: unexpected '%s'", pos[1]);
	}
	if (ulnetd_sst_check_parse(check, &p.check))
		return ulnetd_errorf(out, -EINVAL, "selftest run: --check must be none, simple or full, not '%s'",
				     check);
	p.size = (uint32_t)size;
	p.offset = (uint32_t)offset;
	p.concurrency = (uint32_t)concur;
	p.duration_ms = (uint32_t)duration_ms;
	p.count = (uint64_t)count;
	p.timeout_ms = (uint32_t)timeout_ms;
	p.corrupt_at = (uint32_t)corrupt_at;
	p.corrupt_count = (uint32_t)corrupt_count;
	o.kind = pos[0];
	o.write = p.rw == ULNET_SST_BRW_WRITE;
	o.size = p.kind == ULNET_SST_TEST_BRW ? p.size : 0;
	o.offset = p.kind == ULNET_SST_TEST_BRW ? p.offset : 0;
	o.check = p.kind == ULNET_SST_TEST_BRW ? check : "none";
	o.concurrency = p.concurrency;
	snprintf(o.to, sizeof(o.to), "%s", to);
	if (from)
		snprintf(o.from, sizeof(o.from), "%s", from);
	if (from && !ulnet__sst_is_local(ulnetd_sst_of(d), &client.nid)) {
		struct remote_run rr = { 0 };
		if ((rc = ulnet__sst_params_check(&p, 4096, &why)))
			return ulnetd_errorf(out, rc, "selftest run: %s", why ? why : "bad parameters");
		if (p.corrupt_count)
			return ulnetd_errorf(out, -EINVAL, "selftest run: --corrupt-at works only with a local --from "
					     "(use 'selftest inject' on the server instead)");
		client.pid = ULNET_PID_LUSTRE;
		rr.client = client;
		rr.server = p.dest;
		rr.t.service = p.kind == ULNET_SST_TEST_BRW ? ULNET_SST_SVC_BRW : ULNET_SST_SVC_PING;
		rr.t.rw = p.rw;
		rr.t.size = p.size;
		rr.t.offset = p.offset;
		rr.t.check = p.check;
		rr.t.concurrency = p.concurrency;
		rr.t.loop = p.count ? (int32_t)((p.count + p.concurrency - 1) / p.concurrency) : -1;
		rr.t.rpc_timeout_ms = p.timeout_ms;
		rr.duration_ms = p.duration_ms;
		rr.count = p.count;
		rr.timeout_ms = p.timeout_ms;
		rr.progress = progress;
		o.remote = true;
		return remote_run(d, out, &rr, &o);
	}
	o.source = "measured on this node";
	/* called about once a second whether or not the console wants progress: it also ends the run
	 * when the daemon is stopping */
	p.progress = on_progress;
	p.progress_arg = &pc;
	rc = ulnet__sst_run(ulnetd_sst_of(d), &p, &res, &why);
	if (rc == -EINVAL)
		return ulnetd_errorf(out, rc, "selftest run: %s", why ? why : "bad parameters");
	if (rc)
		return ulnetd_errorf(out, rc, "selftest run: %s", ulnet_strerror(rc));
	o.r = res;
	ulnetd_sst_result_json(out, &o, false);
	return 0;
}

static int cmd_inject(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long count = 1, at = 0;
	const struct ulnetd_opt opts[] = {
		{ "--count", NULL, ULNETD_OPT_INT, 0, UINT32_MAX, &count },
		{ "--at", NULL, ULNETD_OPT_INT, 0, ULNET_MTU - 1, &at },
	};
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "selftest inject", argc, argv, opts, 2, NULL, 0, &npos)))
		return rc;
	if (!ulnetd_sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	ulnet__sst_inject(ulnetd_sst_of(d), (uint32_t)count, (uint32_t)at);
	ulnetd_out_printf(out, "selftest: corrupting the next %lld brw transfer(s) at byte %lld\n", count, at);
	return 0;
}

static int cmd_stat(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool json = false;
	const struct ulnetd_opt opts[] = { { "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json } };
	struct ulnet_sst_stats st;
	struct ulnetd_emit e;
	char nid[ULNET_NID_STRLEN];
	struct ulnet_nid n;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "selftest stat", argc, argv, opts, 1, NULL, 0, &npos)))
		return rc;
	if (!ulnetd_sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	ulnet__sst_stats(ulnetd_sst_of(d), &st);
	ulnetd_emit_init(&e, out, json);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_map(&e, "selftest");
	ulnetd_emit_bool(&e, "session", st.session_active);
	if (st.session_active) {
		ulnet_nid_from_nid4(st.sid.nid, &n);
		ulnetd_emit_str(&e, "console", ulnet_nid_format(&n, nid, sizeof(nid)));
		ulnetd_emit_str(&e, "name", st.session_name);
	}
	ulnetd_emit_uint(&e, "errors", st.rpc.errors);
	ulnetd_emit_uint(&e, "rpcs_sent", st.rpc.rpcs_sent);
	ulnetd_emit_uint(&e, "rpcs_rcvd", st.rpc.rpcs_rcvd);
	ulnetd_emit_uint(&e, "rpcs_dropped", st.rpc.rpcs_dropped);
	ulnetd_emit_uint(&e, "rpcs_expired", st.rpc.rpcs_expired);
	ulnetd_emit_uint(&e, "bulk_get", st.rpc.bulk_get);
	ulnetd_emit_uint(&e, "bulk_put", st.rpc.bulk_put);
	ulnetd_emit_uint(&e, "brw_errors", st.brw_errors);
	ulnetd_emit_uint(&e, "ping_errors", st.ping_errors);
	ulnetd_emit_uint(&e, "server_rpcs", st.server_rpcs);
	ulnetd_emit_uint(&e, "server_waiting", st.server_waiting);
	ulnetd_emit_uint(&e, "server_bulk_bytes", st.server_bulk_bytes);
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	return 0;
}

static int cmd_nids(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	struct ulnet_ni_info ni;
	char nid[ULNET_NID_STRLEN];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "selftest nids", argc, argv, NULL, 0, NULL, 0, &npos)))
		return rc;
	ulnetd_out_printf(out, "page_size %u\n", ulnet_node_page_size(d->node));
	for (unsigned i = 0; ulnet_ni_info_get(d->node, i, &ni) == 0; i++)
		ulnetd_out_printf(out, "%s\n", ulnet_nid_format(&ni.nid, nid, sizeof(nid)));
	return 0;
}

static const struct ulnetd_cmd sst_cmds[] = {
	{ "selftest run", "brw read|write|ping --to NID [--from NID] [--size N] [--offset N] [--check C] "
			  "[--concurrency N] [--duration-ms N] [--count N] [--timeout-ms N] [--progress]",
	  "run a selftest; --from another node drives it over lnet_selftest's framework RPCs (JSON result)",
	  cmd_run },
	{ "selftest inject", "[--count N] [--at N]", "corrupt the next N brw transfers this node serves", cmd_inject },
	{ "selftest stat", "[--json]", "selftest engine counters and session", cmd_stat },
	{ "selftest nids", "", "this node's NIDs and page size", cmd_nids },
};

static void sst_on_close(struct ulnetd *d, void *arg)
{
	(void)arg;
	ulnet__sst_stop(d->selftest);
	d->selftest = NULL;
}

int ulnetd_selftest_register(struct ulnetd *d)
{
	struct ulnet_sst *sst = NULL;
	int rc = ulnet__sst_start(d->node, &sst);

	if (rc) {
		fprintf(stderr, "ulnetd: selftest services not started: %s\n", ulnet_strerror(rc));
		sst = NULL; /* the daemon still runs; selftest commands answer -ENODEV */
	}
	d->selftest = sst;
	if (sst && ((rc = ulnetd_on_close(d, sst_on_close, NULL)) ||
		    (rc = ulnetd_on_close(d, ulnetd_lst_on_close, NULL))))
		return rc;
	if ((rc = ulnetd_cmd_register(d, sst_cmds, sizeof(sst_cmds) / sizeof(sst_cmds[0]))))
		return rc;
	return ulnetd_lst_register(d);
}
