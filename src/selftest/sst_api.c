/* SPDX-License-Identifier: MIT */
/* include/ulnet/selftest.h over the engine: start and stop, counters, results (derived from STAT
 * replies and written through the one writer), and one-shot tests: from this node on the engine, from
 * another node as a one-test batch of a private console session. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ulnet/ulnet.h"
#include "log.h"
#include "sst_lst.h"

ULNET_LOG_SUBSYS_DECLARE(SST);

#define RUN_POLL_US 100000      /* one-shot on another node: how often the console asks it */
#define RUN_TIMEOUT_DEFAULT_MS 10000

int ulnet_selftest_start(ulnet_node *node, const struct ulnet_selftest_opts *opts, ulnet_selftest **out)
{
	ulnet_selftest *st = calloc(1, sizeof(*st));
	int rc;

	if (!st)
		return -ENOMEM;
	if ((rc = ulnet__sst_start(node, opts, &st->sst))) {
		free(st);
		return rc;
	}
	st->node = node;
	pthread_mutex_init(&st->runs_lock, NULL);
	lst_session_init(&st->lst);
	*out = st;
	return 0;
}

void ulnet_selftest_stop(ulnet_selftest *st)
{
	if (!st)
		return;
	lst_session_fini(&st->lst, 1000); /* the engine still sends: the nodes hear the session end */
	ulnet__sst_stop(st->sst);
	pthread_mutex_destroy(&st->runs_lock);
	free(st);
}

void ulnet_selftest_inject(ulnet_selftest *st, uint32_t count, uint32_t at)
{
	ulnet__sst_inject(st->sst, count, at);
}

void ulnet_selftest_stats_get(ulnet_selftest *st, struct ulnet_selftest_stats *out)
{
	struct ulnet_sst_stats s;

	ulnet__sst_stats(st->sst, &s);
	memset(out, 0, sizeof(*out));
	out->errors = s.rpc.errors;
	out->rpcs_sent = s.rpc.rpcs_sent;
	out->rpcs_rcvd = s.rpc.rpcs_rcvd;
	out->rpcs_dropped = s.rpc.rpcs_dropped;
	out->rpcs_expired = s.rpc.rpcs_expired;
	out->bulk_get = s.rpc.bulk_get;
	out->bulk_put = s.rpc.bulk_put;
	out->brw_errors = s.brw_errors;
	out->ping_errors = s.ping_errors;
	out->server_rpcs = s.server_rpcs;
	out->server_waiting = s.server_waiting;
	out->server_bulk_bytes = s.server_bulk_bytes;
	out->session_active = s.session_active;
	if (s.session_active) {
		ulnet_nid_from_nid4(s.sid.nid, &out->session_console);
		snprintf(out->session_name, sizeof(out->session_name), "%s", s.session_name);
	}
}

static const char *const check_names[] = { [ULNET_SELFTEST_CHECK_NONE] = "none",
	[ULNET_SELFTEST_CHECK_SIMPLE] = "simple", [ULNET_SELFTEST_CHECK_FULL] = "full",
	[ULNET_SELFTEST_CHECK_DISCARD] = "discard" };

_Static_assert((int)ULNET_SELFTEST_CHECK_NONE == (int)ULNET_SST_CHECK_NONE &&
	       (int)ULNET_SELFTEST_CHECK_SIMPLE == (int)ULNET_SST_CHECK_SIMPLE &&
	       (int)ULNET_SELFTEST_CHECK_FULL == (int)ULNET_SST_CHECK_FULL &&
	       (int)ULNET_SELFTEST_CHECK_DISCARD == (int)ULNET_SST_CHECK_DISCARD, "public checks are the wire's");
_Static_assert(ULNET_SELFTEST_MAX_CONCUR == ULNET_SST_MAX_CONCUR, "public limit is the engine's");
_Static_assert(ULNET_SELFTEST_NAME_MAX + 1 == ULNET_SST_NAME_SIZE, "names fit lst's 32 bytes");

int ulnet_selftest_check_parse(const char *s, enum ulnet_selftest_check *out)
{
	for (int c = ULNET_SELFTEST_CHECK_NONE; c <= ULNET_SELFTEST_CHECK_DISCARD; c++)
		if (s && !strcmp(s, check_names[c])) {
			*out = (enum ulnet_selftest_check)c;
			return 0;
		}
	return -EINVAL;
}

const char *ulnet_selftest_check_name(enum ulnet_selftest_check c)
{
	return c >= ULNET_SELFTEST_CHECK_NONE && c <= ULNET_SELFTEST_CHECK_DISCARD ? check_names[c] : "none";
}

/* ---- results ---- */

bool ulnet_selftest_result_ok(const struct ulnet_selftest_result *r)
{
	return !r->timeout && !r->mismatch && !r->refused && !r->peer_gone && !r->unclassified;
}

void ulnet_selftest_result_write(const struct ulnet_selftest_result *r, bool progress, struct ulnet_writer *w)
{
	char secs[32];

	snprintf(secs, sizeof(secs), "%.6f", r->seconds);
	ulnet_writer_map(w, NULL);
	ulnet_writer_bool(w, "progress", progress);
	ulnet_writer_str(w, "test", r->kind == ULNET_SELFTEST_PING ? "ping" : "brw");
	ulnet_writer_bool(w, "write", r->write);
	ulnet_writer_str(w, "from", r->from);
	ulnet_writer_str(w, "to", r->to);
	ulnet_writer_uint(w, "size", r->size);
	ulnet_writer_uint(w, "offset", r->offset);
	ulnet_writer_str(w, "check", ulnet_selftest_check_name(r->check));
	ulnet_writer_uint(w, "concurrency", r->concurrency);
	ulnet_writer_bool(w, "remote", r->remote);
	ulnet_writer_bool(w, "latency_na", r->latency_na);
	ulnet_writer_bool(w, "bytes_na", r->bytes_na);
	ulnet_writer_str(w, "source", r->source ? r->source : "");
	ulnet_writer_raw(w, "seconds", secs);
	ulnet_writer_uint(w, "rpcs_ok", r->rpcs_ok);
	ulnet_writer_uint(w, "rpcs_failed", r->rpcs_failed);
	ulnet_writer_uint(w, "bytes", r->bytes);
	ulnet_writer_uint(w, "lat_p50_us", r->lat_p50_us);
	ulnet_writer_uint(w, "lat_p99_us", r->lat_p99_us);
	ulnet_writer_uint(w, "lat_max_us", r->lat_max_us);
	ulnet_writer_uint(w, "timeout", r->timeout);
	ulnet_writer_uint(w, "mismatch", r->mismatch);
	ulnet_writer_uint(w, "refused", r->refused);
	ulnet_writer_uint(w, "peer_gone", r->peer_gone);
	ulnet_writer_uint(w, "unclassified", r->unclassified);
	ulnet_writer_int(w, "mismatch_offset", r->mismatch_offset);
	ulnet_writer_str(w, "first_error", r->first_error);
	ulnet_writer_end(w);
}

void lst_result_label(const struct ulnet_sst_con_test *t, struct ulnet_selftest_result *o)
{
	o->kind = t->service == ULNET_SST_SVC_BRW ? ULNET_SELFTEST_BRW : ULNET_SELFTEST_PING;
	o->write = t->rw == ULNET_SST_BRW_WRITE;
	o->size = t->size;
	o->offset = t->offset;
	o->check = (enum ulnet_selftest_check)t->check;
	o->concurrency = t->concurrency;
	o->mismatch_offset = -1;
}

uint64_t lst_bulk_bytes(const struct ulnet_sst_con_stat *s)
{
	return s->plain.rpc.bulk_get + s->plain.rpc.bulk_put;
}

void lst_derive_result(const struct ulnet_sst_con_stat *c0, const struct ulnet_sst_con_stat *c1, uint32_t service,
		       bool srv_bytes_ok, uint64_t srv_bytes, double wall_s, struct ulnet_selftest_result *o)
{
	o->rpcs_ok = o->rpcs_failed = o->bytes = o->lat_p50_us = o->lat_p99_us = o->lat_max_us = 0;
	o->timeout = o->mismatch = o->refused = o->peer_gone = o->unclassified = 0;
	o->mismatch_offset = -1;
	o->first_error[0] = '\0';
	if (c1->ext) {
		const struct ulnet_sst_stat_ext *x = &c1->x;
		o->rpcs_ok = x->rpcs_ok;
		o->rpcs_failed = x->rpcs_failed;
		o->bytes = x->bytes;
		o->seconds = x->elapsed_ms ? x->elapsed_ms / 1000.0 : wall_s;
		o->lat_p50_us = x->lat_p50_us;
		o->lat_p99_us = x->lat_p99_us;
		o->lat_max_us = x->lat_max_us;
		o->timeout = x->timeout;
		o->mismatch = x->mismatch;
		o->refused = x->refused;
		o->peer_gone = x->peer_gone;
		o->mismatch_offset = x->mismatch_offset == UINT64_MAX ? -1 : (int64_t)x->mismatch_offset;
		snprintf(o->first_error, sizeof(o->first_error), "%.44s", x->first_error);
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
		o->rpcs_ok = sent > errs ? sent - errs : 0;
		o->rpcs_failed = errs;
		o->timeout = expired;
		o->unclassified = errs - expired;
		o->seconds = wall_s;
		o->bytes = srv_bytes_ok ? srv_bytes : 0;
		o->bytes_na = !srv_bytes_ok && service == ULNET_SST_SVC_BRW;
		o->latency_na = true;
		o->source = srv_bytes_ok ? "lnet_selftest counters (rpcs from the client, bytes from the servers)"
					 : "lnet_selftest counters of the client node";
		if (errs)
			snprintf(o->first_error, sizeof(o->first_error),
				 "the client node counted %u failed RPCs (%u expired); it does not say which kind", errs,
				 expired);
	}
}

/* ---- one-shot tests ---- */

/* The engine's result of a test this node ran, with the labels it keeps. */
static void from_engine(const struct ulnet_sst_result *r, struct ulnet_selftest_result *o)
{
	o->rpcs_ok = r->rpcs_ok;
	o->rpcs_failed = r->rpcs_failed;
	o->bytes = r->bytes;
	o->seconds = r->seconds;
	o->lat_p50_us = r->lat_p50_us;
	o->lat_p99_us = r->lat_p99_us;
	o->lat_max_us = r->lat_max_us;
	o->timeout = r->timeout;
	o->mismatch = r->mismatch;
	o->refused = r->refused;
	o->peer_gone = r->peer_gone;
	o->mismatch_offset = r->mismatch_offset_known ? (int64_t)r->first_mismatch_offset : -1;
	snprintf(o->first_error, sizeof(o->first_error), "%s", r->first_error);
}

/* The server of a one-shot run from this node. lnet_selftest posts request buffers for its brw and
 * ping services only when a console adds a server TEST entry (as many as the entry's loop); without
 * them the requests park on its lazy request portal, hold its receive buffers, and the connection
 * stalls. So, as the lst console does, a server not known to be ulnet gets a private session and a
 * server entry for the run's concurrency before the first request, the keep-alive while the run lasts,
 * and its session removed afterwards. A ulnet server (its make-session reply says so) always has
 * buffers: it leaves the session at once. Best effort, as remote_run's servers: a server in another
 * session or one that does not answer is run against as it is (the run reports what happens). */
struct srv_prep {
	struct ulnet_sst_con con;
	struct ulnet_process_id id;
	bool joined;
	uint64_t next_ping;
};

static void server_prepare(ulnet_selftest *st, const struct ulnet_selftest_run *p, struct srv_prep *sp)
{
	const uint32_t timeout_ms = p->t.rpc_timeout_ms ? p->t.rpc_timeout_ms : RUN_TIMEOUT_DEFAULT_MS;
	struct ulnet_sst_con_test srv = { 0 };
	char why[512], nid[ULNET_NID_STRLEN];
	uint32_t feats = 0;
	int rc;

	memset(sp, 0, sizeof(*sp));
	sp->id = p->to;
	if (!sp->id.pid)
		sp->id.pid = ULNET_PID_LUSTRE;
	if (ulnet__sst_is_local(st->sst, &p->to.nid))
		return;
	if (!lst_con_init(st->sst, "ulnet-selftest-run", timeout_ms < 1000 ? 1000 : timeout_ms < 5000 ? timeout_ms : 5000,
			  &sp->con))
		return;
	ulnet_nid_format(&p->to.nid, nid, sizeof(nid));
	if ((rc = ulnet__sst_con_join(&sp->con, &sp->id, false, &feats, why, sizeof(why)))) {
		ULNET_LOG(SST, WARN, "one-shot run: server %s has no session for the run (%d): %s", nid, rc, why);
		return;
	}
	sp->joined = true;
	if (feats) { /* a ulnet node: its buffers are always posted */
		(void)ulnet__sst_con_leave(&sp->con, &sp->id, why, sizeof(why));
		sp->joined = false;
		return;
	}
	srv.service = p->t.kind == ULNET_SELFTEST_BRW ? ULNET_SST_SVC_BRW : ULNET_SST_SVC_PING;
	srv.rw = p->t.write ? ULNET_SST_BRW_WRITE : ULNET_SST_BRW_READ;
	srv.size = p->t.size;
	srv.check = (enum ulnet_sst_check)p->t.check;
	srv.concurrency = p->t.concurrency;
	srv.loop = (int32_t)p->t.concurrency; /* a server entry: the buffers to post (one client) */
	if ((rc = ulnet__sst_con_test_add(&sp->con, &sp->id, 1, &srv, false, 0, NULL, 0, why, sizeof(why))))
		ULNET_LOG(SST, WARN, "one-shot run: server %s took no server test entry (%d): %s", nid, rc, why);
	sp->next_ping = lst_mono_ms() + LST_PING_MS;
}

static void server_keepalive(struct srv_prep *sp)
{
	char why[512];

	if (!sp->joined || lst_mono_ms() < sp->next_ping)
		return;
	(void)ulnet__sst_con_ping(&sp->con, &sp->id, why, sizeof(why));
	sp->next_ping = lst_mono_ms() + LST_PING_MS;
}

static void server_release(struct srv_prep *sp)
{
	char why[512];

	if (sp->joined)
		(void)ulnet__sst_con_leave(&sp->con, &sp->id, why, sizeof(why));
	sp->joined = false;
}

struct local_progress {
	const struct ulnet_selftest_run *p;
	struct ulnet_selftest_result *o;
	struct srv_prep *srv;
};

static int local_progress(void *arg, const struct ulnet_sst_result *so_far)
{
	struct local_progress *lp = arg;

	server_keepalive(lp->srv);
	if (!lp->p->progress)
		return 0;
	from_engine(so_far, lp->o);
	return lp->p->progress(lp->p->progress_arg, lp->o);
}

static int local_run(ulnet_selftest *st, const struct ulnet_selftest_run *p, struct ulnet_sst_params *sp,
		     struct ulnet_selftest_result *o, char *why, size_t whylen)
{
	struct srv_prep srv;
	struct local_progress lp = { p, o, &srv };
	struct ulnet_sst_result res;
	const char *bad = NULL;
	int rc;

	o->source = "measured on this node";
	sp->corrupt_count = p->corrupt_count;
	sp->corrupt_at = p->corrupt_at;
	sp->progress = local_progress; /* also the server's keep-alive */
	sp->progress_arg = &lp;
	/* nothing is sent for a run refused here (above 1 MiB: large_check() asked before) */
	if ((rc = ulnet__sst_params_check(sp, 4096, ULNET_LARGE_MAX_MAX, &bad))) {
		snprintf(why, whylen, "%s", bad ? bad : "bad parameters");
		return rc;
	}
	server_prepare(st, p, &srv);
	rc = ulnet__sst_run(st->sst, sp, &res, &bad);
	server_release(&srv);
	if (rc) {
		snprintf(why, whylen, "%s", rc == -EINVAL && bad ? bad : ulnet_strerror(rc));
		return rc;
	}
	from_engine(&res, o);
	return 0;
}

/* The client is another node: a private session with a one-test batch (bid 1), the console polling it
 * until the run time or the count is reached; lnet_selftest ignores the run time, so the console stops
 * the batch itself. */
static int remote_run(ulnet_selftest *st, const struct ulnet_selftest_run *p, struct ulnet_selftest_result *o,
		      char *why, size_t whylen)
{
	const uint32_t timeout_ms = p->t.rpc_timeout_ms ? p->t.rpc_timeout_ms : RUN_TIMEOUT_DEFAULT_MS;
	struct ulnet_process_id client = { .nid = p->from, .pid = ULNET_PID_LUSTRE }, server = p->to;
	struct lst_test lt = { .dist = 1, .span = 1 };
	struct ulnet_sst_con con;
	struct ulnet_sst_con_stat c0, c1, s0, s1, tmp;
	char why2[512], nid[ULNET_NID_STRLEN];
	bool srv_joined = false, srv_stats = false, client_gone = false, stopped = false;
	uint64_t t0, deadline, next_progress;
	uint32_t active = 1, client_feats = 0;
	const uint64_t bid = 1;
	int rc;

	if (!server.pid)
		server.pid = ULNET_PID_LUSTRE;
	lt.t.service = p->t.kind == ULNET_SELFTEST_BRW ? ULNET_SST_SVC_BRW : ULNET_SST_SVC_PING;
	lt.t.rw = p->t.write ? ULNET_SST_BRW_WRITE : ULNET_SST_BRW_READ;
	lt.t.size = p->t.size;
	lt.t.offset = p->t.offset;
	lt.t.check = (enum ulnet_sst_check)p->t.check;
	lt.t.concurrency = p->t.concurrency;
	lt.t.loop = p->count ? (int32_t)((p->count + p->t.concurrency - 1) / p->t.concurrency) : -1;
	lt.t.rpc_timeout_ms = timeout_ms;
	if (!lst_con_init(st->sst, "ulnet-selftest-run", timeout_ms < 1000 ? 1000 : timeout_ms < 5000 ? timeout_ms : 5000,
			  &con)) {
		snprintf(why, whylen, "this node has no NID other than lo to be a console with");
		return -EADDRNOTAVAIL;
	}
	/* before any session or test request: a client that may be a kernel node never gets an offset it
	 * cannot survive. Only an offset a kernel client cannot take needs to know what the client is: one
	 * DEBUG asks (it makes no session); a safe offset sends nothing more than the run itself. */
	if (lt.t.service == ULNET_SST_SVC_BRW &&
	    ulnet__sst_kernel_offset_check(lt.t.size, lt.t.offset, why2, sizeof(why2))) {
		char rule[sizeof(why2)];
		snprintf(rule, sizeof(rule), "%s", why2);
		if ((rc = ulnet__sst_con_features(&con, &client, &client_feats, why2, sizeof(why2)))) {
			snprintf(why, whylen, "client %s", why2);
			return rc;
		}
		if (!(client_feats & ULNET_SST_NODE_ANY_OFFSET)) {
			snprintf(why, whylen, "client %s is not known to be a ulnet node: %s",
				 ulnet_nid_format(&client.nid, nid, sizeof(nid)), rule);
			return -EINVAL;
		}
	}
	if ((rc = ulnet__sst_con_join(&con, &client, false, &client_feats, why2, sizeof(why2)))) {
		snprintf(why, whylen, "client %s", why2);
		return rc;
	}
	/* the server joins too, so a kernel server posts buffers for the test; a busy server still serves */
	if (!ulnet_nid_equal(&server.nid, &client.nid))
		srv_joined = !ulnet__sst_con_join(&con, &server, false, NULL, why2, sizeof(why2));
	rc = lst_test_fanout(&con, bid, &lt, &client, &client_feats, 1, &server, 1,
			     srv_joined ? LST_SERVERS_BEST_EFFORT : LST_SERVERS_SKIP, why, whylen);
	if (!rc)
		rc = ulnet__sst_con_stat(&con, &client, true, bid, &c0, why, whylen);
	if (!rc && !c0.ext)
		rc = ulnet__sst_con_stat(&con, &client, false, 0, &c0, why, whylen);
	if (!rc && srv_joined && !c0.ext)
		srv_stats = !ulnet__sst_con_stat(&con, &server, false, 0, &s0, why2, sizeof(why2));
	t0 = lst_mono_ms();
	if (!rc)
		rc = ulnet__sst_con_batch(&con, &client, bid, ULNET_SST_BATCH_RUN,
					  p->count ? 0 : (p->duration_ms + 999) / 1000, NULL, why, whylen);
	if (rc) {
		(void)ulnet__sst_con_leave(&con, &client, why2, sizeof(why2));
		if (srv_joined)
			(void)ulnet__sst_con_leave(&con, &server, why2, sizeof(why2));
		return rc;
	}
	deadline = p->count ? UINT64_MAX : t0 + p->duration_ms;
	next_progress = t0 + 1000;
	uint64_t next_ping = t0 + LST_PING_MS;
	c1 = c0;
	for (;;) {
		uint64_t now;
		bool stop = false;

		usleep(RUN_POLL_US);
		now = lst_mono_ms();
		if (c0.ext) {
			rc = ulnet__sst_con_stat(&con, &client, true, bid, &tmp, why, whylen);
			if (!rc) {
				c1 = tmp; /* the last good sample stays when the node goes away */
				active = c1.x.active;
			}
		} else {
			rc = ulnet__sst_con_batch(&con, &client, bid, ULNET_SST_BATCH_QUERY, 0, &active, why, whylen);
		}
		if (rc) {
			client_gone = true;
			break;
		}
		if (!active && now - t0 > 200)
			break;
		if (p->progress) {
			const struct ulnet_selftest_result *so_far = NULL;
			if (now >= next_progress && c1.ext) {
				lst_derive_result(&c0, &c1, lt.t.service, false, 0, (now - t0) / 1000.0, o);
				so_far = o;
				next_progress += 1000;
			}
			stop = p->progress(p->progress_arg, so_far) != 0;
		}
		if (now >= deadline || stop) {
			if (!stopped)
				(void)ulnet__sst_con_batch(&con, &client, bid, ULNET_SST_BATCH_STOP, 0, NULL, why2,
							   sizeof(why2));
			stopped = true;
			/* RPCs in flight finish or time out on the client */
			if (now >= deadline + timeout_ms + 3000 || stop)
				break;
		}
		if (srv_joined && now >= next_ping) { /* keep the server's session alive, as lst's pinger */
			(void)ulnet__sst_con_ping(&con, &server, why2, sizeof(why2));
			next_ping = now + LST_PING_MS;
		}
	}
	if (!client_gone && !(rc = ulnet__sst_con_stat(&con, &client, c0.ext, bid, &tmp, why, whylen)))
		c1 = tmp;
	if (rc)
		client_gone = true;
	if (srv_stats)
		srv_stats = !ulnet__sst_con_stat(&con, &server, false, 0, &s1, why2, sizeof(why2));
	lst_derive_result(&c0, &c1, lt.t.service, srv_stats, srv_stats ? lst_bulk_bytes(&s1) - lst_bulk_bytes(&s0) : 0,
			  (lst_mono_ms() - t0) / 1000.0, o);
	if (client_gone) {
		/* results up to the last answer, plus the node itself */
		o->peer_gone++;
		o->latency_na = !c1.ext;
		if (!c1.ext)
			o->bytes_na = true;
		snprintf(o->first_error, sizeof(o->first_error), "client node stopped answering: %.120s", why);
	} else {
		(void)ulnet__sst_con_leave(&con, &client, why2, sizeof(why2));
	}
	if (srv_joined)
		(void)ulnet__sst_con_leave(&con, &server, why2, sizeof(why2));
	return 0;
}

/* A brw above LNET_MTU: before anything else is sent, both ends must be ulnet nodes whose large_max
 * takes it (sst_large_rule.c). This node answers for itself; another node is asked with one DEBUG
 * (lst's session query: it makes no session), as the offset rule asks a remote client. */
static int large_check(ulnet_selftest *st, const struct ulnet_selftest_run *p, char *why, size_t whylen)
{
	static const char *const role[2] = { "client", "server" };
	const uint32_t timeout_ms = p->t.rpc_timeout_ms ? p->t.rpc_timeout_ms : RUN_TIMEOUT_DEFAULT_MS;
	struct ulnet_sst_con con;
	bool con_ok = false;

	for (int i = 0; i < 2; i++) {
		struct ulnet_process_id id = { .nid = i ? p->to.nid : p->from, .pid = i ? p->to.pid : 0 };
		char nid[ULNET_NID_STRLEN] = "this node", line[512];
		uint32_t feats;
		int rc;

		if (!id.pid)
			id.pid = ULNET_PID_LUSTRE;
		if (!ulnet_nid_is_any(&id.nid))
			ulnet_nid_format(&id.nid, nid, sizeof(nid));
		if (ulnet_nid_is_any(&id.nid) || ulnet__sst_is_local(st->sst, &id.nid)) {
			feats = ulnet__sst_node_feats(st->node);
		} else {
			if (!con_ok && !(con_ok = lst_con_init(st->sst, "ulnet-selftest-run",
							      timeout_ms < 5000 ? timeout_ms : 5000, &con))) {
				snprintf(why, whylen, "this node has no NID other than lo to be a console with");
				return -EADDRNOTAVAIL;
			}
			if ((rc = ulnet__sst_con_features(&con, &id, &feats, line, sizeof(line)))) {
				snprintf(why, whylen, "%s %s", role[i], line);
				return rc;
			}
		}
		if ((rc = ulnet__sst_large_check(p->t.size, role[i], nid, feats, why, whylen)))
			return rc;
	}
	return 0;
}

static int run_once(ulnet_selftest *st, const struct ulnet_selftest_run *p, struct ulnet_selftest_result *out,
		    char *why, size_t whylen)
{
	struct ulnet_sst_params sp = { 0 };
	const char *bad = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	sp.kind = p->t.kind == ULNET_SELFTEST_BRW ? ULNET_SST_TEST_BRW : ULNET_SST_TEST_PING;
	sp.dest = p->to;
	sp.rw = p->t.write ? ULNET_SST_BRW_WRITE : ULNET_SST_BRW_READ;
	sp.size = p->t.size;
	sp.offset = p->t.offset;
	sp.check = (enum ulnet_sst_check)p->t.check;
	sp.concurrency = p->t.concurrency;
	sp.duration_ms = p->duration_ms;
	sp.count = p->count;
	sp.timeout_ms = p->t.rpc_timeout_ms ? p->t.rpc_timeout_ms : RUN_TIMEOUT_DEFAULT_MS;
	out->kind = p->t.kind;
	out->write = p->t.write;
	out->size = p->t.kind == ULNET_SELFTEST_BRW ? p->t.size : 0;
	out->offset = p->t.kind == ULNET_SELFTEST_BRW ? p->t.offset : 0;
	out->check = p->t.kind == ULNET_SELFTEST_BRW ? p->t.check : ULNET_SELFTEST_CHECK_NONE;
	out->concurrency = p->t.concurrency;
	out->mismatch_offset = -1;
	ulnet_nid_format(&p->to.nid, out->to, sizeof(out->to));
	if (sp.kind == ULNET_SST_TEST_BRW && sp.size > ULNET_MTU && (rc = large_check(st, p, why, whylen)))
		return rc;
	if (ulnet_nid_is_any(&p->from) || ulnet__sst_is_local(st->sst, &p->from)) {
		if (!ulnet_nid_is_any(&p->from))
			ulnet_nid_format(&p->from, out->from, sizeof(out->from));
		return local_run(st, p, &sp, out, why, whylen);
	}
	ulnet_nid_format(&p->from, out->from, sizeof(out->from));
	if ((rc = ulnet__sst_params_check(&sp, 4096, ULNET_LARGE_MAX_MAX, &bad))) {
		snprintf(why, whylen, "%s", bad ? bad : "bad parameters");
		return rc;
	}
	if (p->corrupt_count) {
		snprintf(why, whylen, "--corrupt-at works only with a local --from (use 'selftest inject' on the "
			 "server instead)");
		return -EINVAL;
	}
	out->remote = true;
	return remote_run(st, p, out, why, whylen);
}

int ulnet_selftest_run(ulnet_selftest *st, const struct ulnet_selftest_run *p, struct ulnet_selftest_result *out,
		       char *why, size_t whylen)
{
	struct timespec ts;
	int rc;

	pthread_mutex_lock(&st->runs_lock);
	st->runs_active++;
	pthread_mutex_unlock(&st->runs_lock);
	rc = run_once(st, p, out, why, whylen);
	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&st->runs_lock);
	st->runs_active--;
	if (!rc) { /* a run that ran, errors or not; a refused one has no result */
		st->runs_finished++;
		st->have_last = true;
		st->last = *out;
		st->last_end_unix_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	}
	pthread_mutex_unlock(&st->runs_lock);
	return rc;
}

void ulnet_selftest_client_stats_get(ulnet_selftest *st, struct ulnet_selftest_client_stats *out)
{
	struct ulnet_sst_stats s;

	ulnet__sst_stats(st->sst, &s);
	memset(out, 0, sizeof(*out));
	out->tests_running = s.client_tests_running;
	out->rpcs_ok = s.client_results[0];
	out->rpcs_timeout = s.client_results[1];
	out->rpcs_mismatch = s.client_results[2];
	out->rpcs_refused = s.client_results[3];
	out->rpcs_peer_gone = s.client_results[4];
	out->bytes_read = s.client_bytes[0];
	out->bytes_written = s.client_bytes[1];
	pthread_mutex_lock(&st->runs_lock);
	out->runs_active = st->runs_active;
	out->runs_finished = st->runs_finished;
	out->have_last = st->have_last;
	if (st->have_last) {
		out->last = st->last;
		out->last_end_unix_ms = st->last_end_unix_ms;
	}
	pthread_mutex_unlock(&st->runs_lock);
}
