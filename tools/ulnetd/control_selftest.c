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
 *   selftest session new|end|show, group add|list|stat, batch add|run|stop|list, test add
 *                lst's named session, groups and batches, kept here so that separate console
 *                invocations share them (as lst keeps them in the console node's kernel). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "selftest/selftest.h"
#include "ulnetd.h"

static struct ulnet_sst *sst_of(struct ulnetd *d) { return d->selftest; }

#define CON_PING_MS 8000    /* keep-alive DEBUG to every node, as lst's console pinger does */

static int check_parse(const char *s, enum ulnet_sst_check *out)
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

/* ---- result output: one JSON object per line, formatted by the console ---- */

/* A test result plus what the console needs to label it. */
struct run_out {
	struct ulnet_sst_result r;
	const char *kind;               /* "brw" or "ping" */
	bool write;
	char from[ULNET_NID_STRLEN], to[160];
	uint32_t size, offset, concurrency;
	const char *check;
	bool remote;                    /* the clients are another node */
	bool lat_na;                    /* no latency samples exist (remote lnet_selftest clients) */
	bool bytes_na;                  /* no counter gives the payload bytes */
	unsigned long long unclassified;/* errors a kernel node counted without saying which */
	const char *source;             /* where the numbers come from */
};

static void json_str(struct ulnetd_out *out, const char *key, const char *s)
{
	ulnetd_out_printf(out, "\"%s\":\"", key);
	for (const char *p = s; *p; p++) {
		if (*p == '"' || *p == '\\')
			ulnetd_out_printf(out, "\\%c", *p);
		else if ((unsigned char)*p >= 0x20)
			ulnetd_out_write(out, p, 1);
	}
	ulnetd_out_printf(out, "\"");
}

static void result_json(struct ulnetd_out *out, const struct run_out *o, bool progress)
{
	const struct ulnet_sst_result *r = &o->r;

	ulnetd_out_printf(out, "{\"progress\":%s,\"test\":\"%s\",\"write\":%s,", progress ? "true" : "false", o->kind,
			  o->write ? "true" : "false");
	json_str(out, "from", o->from);
	ulnetd_out_printf(out, ",");
	json_str(out, "to", o->to);
	ulnetd_out_printf(out,
			  ",\"size\":%u,\"offset\":%u,\"check\":\"%s\",\"concurrency\":%u,\"remote\":%s,"
			  "\"latency_na\":%s,\"bytes_na\":%s,\"source\":\"%s\",",
			  o->size, o->offset, o->check ? o->check : "none", o->concurrency, o->remote ? "true" : "false",
			  o->lat_na ? "true" : "false", o->bytes_na ? "true" : "false", o->source ? o->source : "");
	ulnetd_out_printf(out,
			  "\"seconds\":%.6f,\"rpcs_ok\":%llu,\"rpcs_failed\":%llu,"
			  "\"bytes\":%llu,\"lat_p50_us\":%llu,\"lat_p99_us\":%llu,\"lat_max_us\":%llu,"
			  "\"timeout\":%llu,\"mismatch\":%llu,\"refused\":%llu,\"peer_gone\":%llu,\"unclassified\":%llu,"
			  "\"mismatch_offset\":%lld,",
			  r->seconds, (unsigned long long)r->rpcs_ok,
			  (unsigned long long)r->rpcs_failed, (unsigned long long)r->bytes,
			  (unsigned long long)r->lat_p50_us, (unsigned long long)r->lat_p99_us,
			  (unsigned long long)r->lat_max_us, (unsigned long long)r->timeout,
			  (unsigned long long)r->mismatch, (unsigned long long)r->refused,
			  (unsigned long long)r->peer_gone, o->unclassified,
			  r->mismatch_offset_known ? (long long)r->first_mismatch_offset : -1LL);
	json_str(out, "first_error", r->first_error);
	ulnetd_out_printf(out, "}\n");
}

struct progress_ctx {
	struct ulnetd *d;
	struct ulnetd_out *out;
	struct run_out *o;
};

static int on_progress(void *arg, const struct ulnet_sst_result *so_far)
{
	struct progress_ctx *pc = arg;

	if (ulnetd_stopping(pc->d))
		return 1;
	pc->o->r = *so_far;
	result_json(pc->out, pc->o, true);
	return ulnetd_out_flush(pc->out) ? 1 : 0; /* the console went away: stop */
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- turning STAT replies into a result ---- */

/* A client node's part of a batch: from its extended stats (ulnet node: measured there), or from the
 * counter deltas between @c0 and @c1 (lnet_selftest node; the payload from the servers' bulk counters
 * when @srv_bytes_ok). */
static void derive_result(const struct ulnet_sst_con_stat *c0, const struct ulnet_sst_con_stat *c1, uint32_t service,
			  bool srv_bytes_ok, uint64_t srv_bytes, double wall_s, struct run_out *o)
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

static uint64_t bulk_bytes(const struct ulnet_sst_con_stat *s)
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
	char why[256] = "", why2[256];
	bool srv_joined = false, srv_stats = false, client_gone = false, stopped = false;
	uint64_t t0, deadline, next_progress, next_ping, bid = 1;
	uint32_t active = 1;
	int rc;

	con.sst = sst_of(d);
	con.sid.nid = ulnet__sst_console_nid4(con.sst);
	con.sid.stamp = real_ms();
	snprintf(con.name, sizeof(con.name), "ulnet-selftest-run");
	con.feats = ULNET_SST_FEAT_BULK_LEN;
	con.rpc_timeout_ms = rr->timeout_ms < 5000 ? rr->timeout_ms : 5000;
	if (con.rpc_timeout_ms < 1000)
		con.rpc_timeout_ms = 1000;
	if (!con.sid.nid)
		return ulnetd_errorf(out, -EADDRNOTAVAIL, "selftest run: this node has no NID other than lo to be a "
				     "console with");
	rc = ulnet__sst_con_join(&con, &rr->client, false, why, sizeof(why));
	if (rc)
		return ulnetd_errorf(out, rc, "selftest run: client %s", why);
	/* the server joins too, so a kernel server posts buffers for the test; a busy server still serves */
	if (!ulnet_nid_equal(&rr->server.nid, &rr->client.nid) &&
	    !ulnet__sst_con_join(&con, &rr->server, false, why2, sizeof(why2))) {
		struct ulnet_sst_con_test st = rr->t;
		srv_joined = true;
		st.loop = (int32_t)rr->t.concurrency;
		(void)ulnet__sst_con_test_add(&con, &rr->server, bid, &st, false, NULL, 0, why2, sizeof(why2));
	}
	rc = ulnet__sst_con_test_add(&con, &rr->client, bid, &rr->t, true, &rr->server, 1, why, sizeof(why));
	if (!rc)
		rc = ulnet__sst_con_stat(&con, &rr->client, true, bid, &c0, why, sizeof(why));
	if (!rc && !c0.ext)
		rc = ulnet__sst_con_stat(&con, &rr->client, false, 0, &c0, why, sizeof(why));
	if (!rc && srv_joined && !c0.ext)
		srv_stats = !ulnet__sst_con_stat(&con, &rr->server, false, 0, &s0, why2, sizeof(why2));
	t0 = mono_ms();
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
		now = mono_ms();
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
			derive_result(&c0, &c1, rr->t.service, false, 0, (now - t0) / 1000.0, o);
			result_json(out, o, true);
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
	derive_result(&c0, &c1, rr->t.service, srv_stats, srv_stats ? bulk_bytes(&s1) - bulk_bytes(&s0) : 0,
		      (mono_ms() - t0) / 1000.0, o);
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
	result_json(out, o, false);
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
	struct progress_ctx pc = { d, out, &o };
	struct ulnet_process_id client = { 0 };
	const char *why = NULL;

	if ((rc = ulnetd_parse_args(out, "selftest run", argc, argv, opts, sizeof(opts) / sizeof(opts[0]), pos, 2,
				    &npos)))
		return rc;
	if (!sst_of(d))
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
	if (check_parse(check, &p.check))
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
	if (from && !ulnet__sst_is_local(sst_of(d), &client.nid)) {
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
	if (progress) {
		p.progress = on_progress;
		p.progress_arg = &pc;
	}
	rc = ulnet__sst_run(sst_of(d), &p, &res, &why);
	if (rc == -EINVAL)
		return ulnetd_errorf(out, rc, "selftest run: %s", why ? why : "bad parameters");
	if (rc)
		return ulnetd_errorf(out, rc, "selftest run: %s", ulnet_strerror(rc));
	o.r = res;
	result_json(out, &o, false);
	return 0;
}

/* ---- lst-style session, groups and batches (kept in this daemon for every console invocation) ---- */

#define CON_MAX_GROUPS 64
#define CON_MAX_NODES 256   /* per group, and joined nodes per session */
#define CON_MAX_BATCHES 64
#define CON_MAX_TESTS 16    /* per batch */

struct con_group {
	char name[ULNET_SST_NAME_SIZE + 1];
	unsigned n;
	struct ulnet_process_id nodes[CON_MAX_NODES];
};

struct con_test {
	struct ulnet_sst_con_test t;
	int from, to;                   /* group indexes */
	unsigned dist, span;
	char check[8];
};

struct con_base {                   /* a node's counters when its batch started */
	struct ulnet_process_id id;
	bool ok;
	struct ulnet_sst_con_stat s;
};

struct con_batch {
	char name[ULNET_SST_NAME_SIZE + 1];
	uint64_t bid;
	unsigned ntests;
	struct con_test tests[CON_MAX_TESTS];
	bool running;
	uint64_t run_ms;
	unsigned nbase;
	struct con_base base[CON_MAX_NODES];
};

static struct con_state {
	pthread_mutex_t lock;
	bool active;
	struct ulnet_sst_con con;
	unsigned ngroups, nbatches, njoined;
	struct con_group *groups[CON_MAX_GROUPS];
	struct con_batch *batches[CON_MAX_BATCHES];
	struct ulnet_process_id joined[CON_MAX_NODES];
	uint64_t next_bid;
	bool force;
	/* pinger */
	pthread_t pinger;
	bool pinger_started, pinger_quit;
	pthread_cond_t pinger_cv;
} cs = { .lock = PTHREAD_MUTEX_INITIALIZER, .pinger_cv = PTHREAD_COND_INITIALIZER };

static int con_need_session(struct ulnetd_out *out, const char *cmd)
{
	if (!cs.active)
		return ulnetd_errorf(out, -ENOENT, "%s: no session (start one with new_session NAME)", cmd);
	return 0;
}

static int group_find(const char *name)
{
	for (unsigned i = 0; i < cs.ngroups; i++)
		if (!strcmp(cs.groups[i]->name, name))
			return (int)i;
	return -1;
}

static int batch_find(const char *name)
{
	for (unsigned i = 0; i < cs.nbatches; i++)
		if (!strcmp(cs.batches[i]->name, name))
			return (int)i;
	return -1;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > ULNET_SST_NAME_SIZE - 1)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-' || *s == '.'))
			return false;
	return true;
}

static bool joined(const struct ulnet_process_id *id)
{
	for (unsigned i = 0; i < cs.njoined; i++)
		if (ulnet_nid_equal(&cs.joined[i].nid, &id->nid))
			return true;
	return false;
}

static void *pinger_main(void *arg)
{
	struct ulnetd *d = arg;

	pthread_mutex_lock(&cs.lock);
	while (!cs.pinger_quit) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += CON_PING_MS / 1000;
		pthread_cond_timedwait(&cs.pinger_cv, &cs.lock, &ts);
		if (cs.pinger_quit || !cs.active || ulnetd_stopping(d))
			continue;
		for (unsigned i = 0; i < cs.njoined && !cs.pinger_quit; i++) {
			struct ulnet_sst_con c = cs.con;
			char why[256];
			c.rpc_timeout_ms = c.rpc_timeout_ms < 2000 ? c.rpc_timeout_ms : 2000; /* keep commands moving */
			(void)ulnet__sst_con_ping(&c, &cs.joined[i], why, sizeof(why));
		}
	}
	pthread_mutex_unlock(&cs.lock);
	return NULL;
}

/* Forget the session (the caller removed it from the nodes). Called with cs.lock held. */
static void con_clear(void)
{
	for (unsigned i = 0; i < cs.ngroups; i++)
		free(cs.groups[i]);
	for (unsigned i = 0; i < cs.nbatches; i++)
		free(cs.batches[i]);
	cs.ngroups = cs.nbatches = cs.njoined = 0;
	cs.active = false;
}

static int cmd_session_new(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long timeout = 5;
	bool force = false;
	const struct ulnetd_opt opts[] = {
		{ "--timeout", NULL, ULNETD_OPT_INT, 1, 3600, &timeout },
		{ "--force", NULL, ULNETD_OPT_FLAG, 0, 0, &force },
	};
	char *pos[1];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "new_session", argc, argv, opts, 2, pos, 1, &npos)))
		return rc;
	if (!sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "new_session: give the session NAME");
	if (!name_ok(pos[0]))
		return ulnetd_errorf(out, -EINVAL, "new_session: bad name '%s' (1-31 of A-Z a-z 0-9 _ - .)", pos[0]);
	pthread_mutex_lock(&cs.lock);
	if (cs.active) {
		rc = ulnetd_errorf(out, -EBUSY, "new_session: session '%s' is open on this console; end_session first",
				   cs.con.name);
		goto out;
	}
	memset(&cs.con, 0, sizeof(cs.con));
	cs.con.sst = sst_of(d);
	cs.con.sid.nid = ulnet__sst_console_nid4(cs.con.sst);
	cs.con.sid.stamp = real_ms();
	cs.con.feats = ULNET_SST_FEAT_BULK_LEN;
	cs.con.rpc_timeout_ms = (uint32_t)timeout * 1000;
	snprintf(cs.con.name, sizeof(cs.con.name), "%s", pos[0]);
	if (!cs.con.sid.nid) {
		rc = ulnetd_errorf(out, -EADDRNOTAVAIL, "new_session: this node has no NID other than lo");
		goto out;
	}
	cs.force = force;
	cs.active = true;
	if (!cs.pinger_started) {
		cs.pinger_quit = false;
		cs.pinger_started = !pthread_create(&cs.pinger, NULL, pinger_main, d);
	}
	{
		struct ulnet_nid n;
		char nid[ULNET_NID_STRLEN];
		ulnet_nid_from_nid4(cs.con.sid.nid, &n);
		ulnetd_out_printf(out, "session %s: console %s, RPC timeout %lld s\n", cs.con.name,
				  ulnet_nid_format(&n, nid, sizeof(nid)), timeout);
	}
	rc = 0;
out:
	pthread_mutex_unlock(&cs.lock);
	return rc;
}

static int cmd_session_end(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char why[256];
	int npos, rc, bad = 0;

	(void)d;
	if ((rc = ulnetd_parse_args(out, "end_session", argc, argv, NULL, 0, NULL, 0, &npos)))
		return rc;
	pthread_mutex_lock(&cs.lock);
	if ((rc = con_need_session(out, "end_session")))
		goto out;
	/* removing the session stops every batch on the nodes */
	for (unsigned i = 0; i < cs.njoined; i++)
		if (ulnet__sst_con_leave(&cs.con, &cs.joined[i], why, sizeof(why))) {
			ulnetd_out_printf(out, "warning: %s\n", why);
			bad++;
		}
	ulnetd_out_printf(out, "session %s ended (%u node(s)%s)\n", cs.con.name, cs.njoined,
			  bad ? ", some unreachable" : "");
	con_clear();
	rc = 0;
out:
	pthread_mutex_unlock(&cs.lock);
	return rc;
}

static int cmd_session_show(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	struct ulnet_nid n;
	char nid[ULNET_NID_STRLEN];
	int npos, rc;

	(void)d;
	if ((rc = ulnetd_parse_args(out, "show_session", argc, argv, NULL, 0, NULL, 0, &npos)))
		return rc;
	pthread_mutex_lock(&cs.lock);
	if (!(rc = con_need_session(out, "show_session"))) {
		ulnet_nid_from_nid4(cs.con.sid.nid, &n);
		ulnetd_out_printf(out, "session %s: console %s, %u node(s), %u group(s), %u batch(es)\n", cs.con.name,
				  ulnet_nid_format(&n, nid, sizeof(nid)), cs.njoined, cs.ngroups, cs.nbatches);
	}
	pthread_mutex_unlock(&cs.lock);
	return rc;
}

static int cmd_group_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char *pos[CON_MAX_NODES + 1], why[256];
	struct con_group *g;
	int npos, rc;

	(void)d;
	if ((rc = ulnetd_parse_args(out, "add_group", argc, argv, NULL, 0, pos, CON_MAX_NODES + 1, &npos)))
		return rc;
	if (npos < 2)
		return ulnetd_errorf(out, -EINVAL, "add_group: give a NAME and at least one NID");
	if (!name_ok(pos[0]))
		return ulnetd_errorf(out, -EINVAL, "add_group: bad name '%s' (1-31 of A-Z a-z 0-9 _ - .)", pos[0]);
	g = calloc(1, sizeof(*g));
	if (!g)
		return ulnetd_errorf(out, -ENOMEM, "add_group: out of memory");
	snprintf(g->name, sizeof(g->name), "%s", pos[0]);
	for (int i = 1; i < npos; i++) {
		const char *bad = NULL;
		struct ulnet_process_id id = { .pid = ULNET_PID_LUSTRE };
		if (ulnet_nid_parse(pos[i], &id.nid, &bad) || ulnet_nid_is_any(&id.nid)) {
			free(g);
			return ulnetd_errorf(out, -EINVAL, "add_group: bad NID '%s': %s", pos[i], bad ? bad : "ANY");
		}
		if (ulnet_nid_to_nid4(&id.nid) == ULNET_NID_ANY4) {
			free(g);
			return ulnetd_errorf(out, -EINVAL, "add_group: NID '%s' does not fit lnet_selftest's 64-bit ids",
					     pos[i]);
		}
		for (unsigned k = 0; k < g->n; k++)
			if (ulnet_nid_equal(&g->nodes[k].nid, &id.nid)) {
				free(g);
				return ulnetd_errorf(out, -EINVAL, "add_group: NID '%s' given twice", pos[i]);
			}
		g->nodes[g->n++] = id;
	}
	pthread_mutex_lock(&cs.lock);
	if ((rc = con_need_session(out, "add_group")))
		goto fail;
	if (group_find(g->name) >= 0) {
		rc = ulnetd_errorf(out, -EEXIST, "add_group: group '%s' exists", g->name);
		goto fail;
	}
	if (cs.ngroups == CON_MAX_GROUPS) {
		rc = ulnetd_errorf(out, -ENOSPC, "add_group: at most %d groups", CON_MAX_GROUPS);
		goto fail;
	}
	/* every node joins the session now, as lst's add_group does */
	for (unsigned k = 0; k < g->n; k++) {
		if (joined(&g->nodes[k]))
			continue;
		if (cs.njoined == CON_MAX_NODES) {
			rc = ulnetd_errorf(out, -ENOSPC, "add_group: at most %d nodes per session", CON_MAX_NODES);
			goto fail;
		}
		rc = ulnet__sst_con_join(&cs.con, &g->nodes[k], cs.force, why, sizeof(why));
		if (rc) {
			rc = ulnetd_errorf(out, rc, "add_group %s: %s; group not added", g->name, why);
			goto fail;
		}
		cs.joined[cs.njoined++] = g->nodes[k];
	}
	cs.groups[cs.ngroups++] = g;
	ulnetd_out_printf(out, "group %s: %u node(s) joined session %s\n", g->name, g->n, cs.con.name);
	pthread_mutex_unlock(&cs.lock);
	return 0;
fail:
	pthread_mutex_unlock(&cs.lock);
	free(g);
	return rc;
}

static int cmd_group_list(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char *pos[1], why[256], nid[ULNET_NID_STRLEN];
	int npos, rc, gi;

	(void)d;
	if ((rc = ulnetd_parse_args(out, "list_group", argc, argv, NULL, 0, pos, 1, &npos)))
		return rc;
	pthread_mutex_lock(&cs.lock);
	if ((rc = con_need_session(out, "list_group")))
		goto out;
	if (npos == 0) {
		for (unsigned i = 0; i < cs.ngroups; i++)
			ulnetd_out_printf(out, "%s: %u node(s)\n", cs.groups[i]->name, cs.groups[i]->n);
		ulnetd_out_printf(out, "total %u group(s)\n", cs.ngroups);
		goto out;
	}
	gi = group_find(pos[0]);
	if (gi < 0) {
		rc = ulnetd_errorf(out, -ENOENT, "list_group: no group '%s' in session %s", pos[0], cs.con.name);
		goto out;
	}
	for (unsigned k = 0; k < cs.groups[gi]->n; k++) {
		const struct ulnet_process_id *id = &cs.groups[gi]->nodes[k];
		int prc = ulnet__sst_con_ping(&cs.con, id, why, sizeof(why));
		ulnetd_out_printf(out, "%s %s\n", ulnet_nid_format(&id->nid, nid, sizeof(nid)),
				  !prc ? "active" : prc == -EBUSY ? "busy" : prc == -ESRCH ? "unknown" : "down");
	}
out:
	pthread_mutex_unlock(&cs.lock);
	return rc;
}

static int cmd_batch_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char *pos[1];
	int npos, rc;
	struct con_batch *b;

	(void)d;
	if ((rc = ulnetd_parse_args(out, "add_batch", argc, argv, NULL, 0, pos, 1, &npos)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "add_batch: give the batch NAME");
	if (!name_ok(pos[0]))
		return ulnetd_errorf(out, -EINVAL, "add_batch: bad name '%s' (1-31 of A-Z a-z 0-9 _ - .)", pos[0]);
	pthread_mutex_lock(&cs.lock);
	if ((rc = con_need_session(out, "add_batch")))
		goto out;
	if (batch_find(pos[0]) >= 0) {
		rc = ulnetd_errorf(out, -EEXIST, "add_batch: batch '%s' exists", pos[0]);
		goto out;
	}
	if (cs.nbatches == CON_MAX_BATCHES || !(b = calloc(1, sizeof(*b)))) {
		rc = ulnetd_errorf(out, -ENOSPC, "add_batch: at most %d batches", CON_MAX_BATCHES);
		goto out;
	}
	snprintf(b->name, sizeof(b->name), "%s", pos[0]);
	b->bid = ++cs.next_bid;
	cs.batches[cs.nbatches++] = b;
	ulnetd_out_printf(out, "batch %s added\n", b->name);
out:
	pthread_mutex_unlock(&cs.lock);
	return rc;
}

/* "size=1M", "off=4097": 0 or -EINVAL. */
static int kv_size(const char *v, unsigned long long max, uint32_t *out)
{
	char *end;
	unsigned long long x;

	if (!*v || *v == '-')
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || end == v)
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		x *= 1024, end++;
	else if (*end == 'm' || *end == 'M')
		x *= 1024 * 1024, end++;
	if (*end || x > max)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

static int cmd_test_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *batch = NULL, *from = NULL, *to = NULL, *dist = "1:1";
	long long loop = -1, concur = 1, timeout = 0;
	const struct ulnetd_opt opts[] = {
		{ "--batch", NULL, ULNETD_OPT_STR, 0, 0, &batch },
		{ "--from", NULL, ULNETD_OPT_STR, 0, 0, &from },
		{ "--to", NULL, ULNETD_OPT_STR, 0, 0, &to },
		{ "--loop", NULL, ULNETD_OPT_INT, -1, INT32_MAX, &loop },
		{ "--concurrency", NULL, ULNETD_OPT_INT, 1, ULNET_SST_MAX_CONCUR, &concur },
		{ "--distribute", NULL, ULNETD_OPT_STR, 0, 0, &dist },
		{ "--timeout", NULL, ULNETD_OPT_INT, 0, 3600, &timeout },
	};
	char *pos[8], why[256];
	int npos, rc, bi, fg, tg, wi = 1;
	struct con_test ct = { 0 };
	struct con_batch *b;
	const char *bad = NULL;

	(void)d;
	if ((rc = ulnetd_parse_args(out, "add_test", argc, argv, opts, sizeof(opts) / sizeof(opts[0]), pos, 8, &npos)))
		return rc;
	if (!batch || !from || !to || npos < 1)
		return ulnetd_errorf(out, -EINVAL, "add_test: give --batch B --from G1 --to G2 brw read|write ... or ping");
	if (loop == 0)
		return ulnetd_errorf(out, -EINVAL, "add_test: --loop must be -1 (until stopped) or positive");
	if (sscanf(dist, "%u:%u", &ct.dist, &ct.span) != 2 || !ct.dist || !ct.span || ct.span > ULNET_SST_MAX_IDS)
		return ulnetd_errorf(out, -EINVAL, "add_test: --distribute needs x:y with x, y >= 1");
	ct.t.concurrency = (uint32_t)concur;
	ct.t.loop = (int32_t)loop;
	ct.t.rpc_timeout_ms = (uint32_t)timeout * 1000;
	ct.t.check = ULNET_SST_CHECK_NONE;
	ct.t.size = 4096;
	snprintf(ct.check, sizeof(ct.check), "none");
	if (!strcmp(pos[0], "ping")) {
		ct.t.service = ULNET_SST_SVC_PING;
		ct.t.size = 0;
	} else if (!strcmp(pos[0], "brw")) {
		ct.t.service = ULNET_SST_SVC_BRW;
		ct.t.rw = ULNET_SST_BRW_READ; /* lst's default */
		if (npos > 1 && (!strcmp(pos[1], "read") || !strcmp(pos[1], "write"))) {
			ct.t.rw = strcmp(pos[1], "read") ? ULNET_SST_BRW_WRITE : ULNET_SST_BRW_READ;
			wi = 2;
		}
	} else {
		return ulnetd_errorf(out, -EINVAL, "add_test: unknown test '%s' (brw or ping)", pos[0]);
	}
	for (; wi < npos; wi++) {
		const char *w = pos[wi];
		if (ct.t.service == ULNET_SST_SVC_BRW && !strncmp(w, "size=", 5)) {
			if (kv_size(w + 5, ULNET_MTU, &ct.t.size) || !ct.t.size)
				return ulnetd_errorf(out, -EINVAL, "add_test: size must be 1..1M, not '%s'", w + 5);
		} else if (ct.t.service == ULNET_SST_SVC_BRW && !strncmp(w, "off=", 4)) {
			if (kv_size(w + 4, ULNET_MTU - 1, &ct.t.offset))
				return ulnetd_errorf(out, -EINVAL, "add_test: off must be 0..1048575, not '%s'", w + 4);
		} else if (ct.t.service == ULNET_SST_SVC_BRW && !strncmp(w, "check=", 6)) {
			if (check_parse(w + 6, &ct.t.check))
				return ulnetd_errorf(out, -EINVAL, "add_test: check must be none, simple or full, not '%s'",
						     w + 6);
			snprintf(ct.check, sizeof(ct.check), "%s", w + 6);
		} else {
			return ulnetd_errorf(out, -EINVAL, "add_test: unexpected '%s'", w);
		}
	}
	if (ct.t.service == ULNET_SST_SVC_BRW) {
		struct ulnet_sst_params p = { .kind = ULNET_SST_TEST_BRW, .rw = ct.t.rw, .size = ct.t.size,
			.offset = ct.t.offset, .check = ct.t.check, .concurrency = ct.t.concurrency, .count = 1 };
		if (ulnet__sst_params_check(&p, 4096, &bad))
			return ulnetd_errorf(out, -EINVAL, "add_test: %s", bad);
	}
	pthread_mutex_lock(&cs.lock);
	if ((rc = con_need_session(out, "add_test")))
		goto out;
	bi = batch_find(batch);
	fg = group_find(from);
	tg = group_find(to);
	if (bi < 0 || fg < 0 || tg < 0) {
		rc = ulnetd_errorf(out, -ENOENT, "add_test: no %s '%s' in session %s", bi < 0 ? "batch" : "group",
				   bi < 0 ? batch : fg < 0 ? from : to, cs.con.name);
		goto out;
	}
	b = cs.batches[bi];
	if (b->running) {
		rc = ulnetd_errorf(out, -EBUSY, "add_test: batch '%s' is running; stop it first", b->name);
		goto out;
	}
	if (b->ntests == CON_MAX_TESTS) {
		rc = ulnetd_errorf(out, -ENOSPC, "add_test: at most %d tests per batch", CON_MAX_TESTS);
		goto out;
	}
	if (ct.span > cs.groups[tg]->n)
		ct.span = cs.groups[tg]->n;
	ct.from = fg;
	ct.to = tg;
	{
		const struct con_group *src = cs.groups[fg], *dst = cs.groups[tg];
		/* lst: servers first, each asked for buffers for the units that may aim at it */
		unsigned ndist = (src->n + ct.dist - 1) / ct.dist, nspan = (dst->n + ct.span - 1) / ct.span;
		unsigned nmax = (ndist + nspan - 1) / nspan;
		struct ulnet_sst_con_test st = ct.t;
		st.loop = (int32_t)(nmax * ct.dist * ct.t.concurrency);
		for (unsigned k = 0; k < dst->n; k++)
			if ((rc = ulnet__sst_con_test_add(&cs.con, &dst->nodes[k], b->bid, &st, false, NULL, 0, why,
							  sizeof(why)))) {
				rc = ulnetd_errorf(out, rc, "add_test: %s", why);
				goto out;
			}
		/* then clients: client i aims at @span servers from ((i / dist) * span) mod n, in group order */
		for (unsigned i = 0; i < src->n; i++) {
			struct ulnet_process_id dests[ULNET_SST_MAX_IDS];
			unsigned start = ((i / ct.dist) * ct.span) % dst->n;
			for (unsigned k = 0; k < ct.span; k++)
				dests[k] = dst->nodes[(start + k) % dst->n];
			if ((rc = ulnet__sst_con_test_add(&cs.con, &src->nodes[i], b->bid, &ct.t, true, dests, ct.span,
							  why, sizeof(why)))) {
				rc = ulnetd_errorf(out, rc, "add_test: %s", why);
				goto out;
			}
		}
	}
	b->tests[b->ntests++] = ct;
	ulnetd_out_printf(out, "test %u added to batch %s: %s %s from %s to %s\n", b->ntests, b->name, pos[0],
			  ct.t.service == ULNET_SST_SVC_PING ? "" : ct.t.rw == ULNET_SST_BRW_WRITE ? "write" : "read",
			  from, to);
out:
	pthread_mutex_unlock(&cs.lock);
	return rc;
}

/* The distinct client nodes of @b; @srv: the server nodes instead. */
static unsigned batch_nodes(const struct con_batch *b, bool srv, struct ulnet_process_id *ids, unsigned cap)
{
	unsigned n = 0;

	for (unsigned t = 0; t < b->ntests; t++) {
		const struct con_group *g = cs.groups[srv ? b->tests[t].to : b->tests[t].from];
		for (unsigned k = 0; k < g->n; k++) {
			bool seen = false;
			for (unsigned j = 0; j < n && !seen; j++)
				seen = ulnet_nid_equal(&ids[j].nid, &g->nodes[k].nid);
			if (!seen && n < cap)
				ids[n++] = g->nodes[k];
		}
	}
	return n;
}

static struct con_base *base_of(struct con_batch *b, const struct ulnet_process_id *id)
{
	for (unsigned i = 0; i < b->nbase; i++)
		if (ulnet_nid_equal(&b->base[i].id.nid, &id->nid))
			return &b->base[i];
	return NULL;
}

static int batch_lookup(struct ulnetd_out *out, const char *cmd, int argc, char **argv, struct con_batch **bp)
{
	char *pos[1];
	int npos, rc, bi;

	if ((rc = ulnetd_parse_args(out, cmd, argc, argv, NULL, 0, pos, 1, &npos)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "%s: give the batch NAME", cmd);
	if ((rc = con_need_session(out, cmd)))
		return rc;
	bi = batch_find(pos[0]);
	if (bi < 0)
		return ulnetd_errorf(out, -ENOENT, "%s: no batch '%s' in session %s", cmd, pos[0], cs.con.name);
	*bp = cs.batches[bi];
	return 0;
}

static int cmd_batch_run(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	struct ulnet_process_id cli[CON_MAX_NODES], srv[CON_MAX_NODES];
	struct con_batch *b;
	char why[256];
	unsigned nc, ns;
	int rc;

	(void)d;
	pthread_mutex_lock(&cs.lock);
	if ((rc = batch_lookup(out, "run", argc, argv, &b)))
		goto out;
	if (!b->ntests) {
		rc = ulnetd_errorf(out, -EINVAL, "run: batch '%s' has no test", b->name);
		goto out;
	}
	nc = batch_nodes(b, false, cli, CON_MAX_NODES);
	ns = batch_nodes(b, true, srv, CON_MAX_NODES);
	/* counters at the start, for nodes that only give counters (lnet_selftest) */
	b->nbase = 0;
	for (unsigned i = 0; i < nc + ns && b->nbase < CON_MAX_NODES; i++) {
		const struct ulnet_process_id *id = i < nc ? &cli[i] : &srv[i - nc];
		struct con_base *cb;
		if (base_of(b, id))
			continue;
		cb = &b->base[b->nbase++];
		cb->id = *id;
		cb->ok = !ulnet__sst_con_stat(&cs.con, id, false, 0, &cb->s, why, sizeof(why));
	}
	b->run_ms = mono_ms();
	for (unsigned i = 0; i < nc; i++)
		if ((rc = ulnet__sst_con_batch(&cs.con, &cli[i], b->bid, ULNET_SST_BATCH_RUN, 0, NULL, why,
					       sizeof(why)))) {
			rc = ulnetd_errorf(out, rc, "run %s: %s", b->name, why);
			goto out;
		}
	b->running = true;
	ulnetd_out_printf(out, "batch %s running on %u client node(s)\n", b->name, nc);
out:
	pthread_mutex_unlock(&cs.lock);
	return rc;
}

/* One result line per client node of @b (JSON objects, formatted by the console). */
static bool batch_report(struct con_batch *b, struct ulnetd_out *out)
{
	struct ulnet_process_id cli[CON_MAX_NODES], srv[CON_MAX_NODES];
	unsigned nc = batch_nodes(b, false, cli, CON_MAX_NODES), ns = batch_nodes(b, true, srv, CON_MAX_NODES);
	uint64_t srv_bytes = 0;
	bool srv_ok = true, all_ok = true;
	char why[256];

	/* payload moved by the servers (their lnet_selftest bulk counters), for counter-only clients */
	for (unsigned i = 0; i < ns; i++) {
		struct con_base *cb = base_of(b, &srv[i]);
		struct ulnet_sst_con_stat s;
		if (!cb || !cb->ok || ulnet__sst_con_stat(&cs.con, &srv[i], false, 0, &s, why, sizeof(why)))
			srv_ok = false;
		else
			srv_bytes += bulk_bytes(&s) - bulk_bytes(&cb->s);
	}
	for (unsigned i = 0; i < nc; i++) {
		struct con_base *cb = base_of(b, &cli[i]);
		struct ulnet_sst_con_stat s1, s0 = { 0 };
		const struct con_test *ct = NULL;
		struct run_out o = { 0 };
		unsigned ntests = 0;
		int rc;

		for (unsigned t = 0; t < b->ntests; t++) {
			const struct con_group *g = cs.groups[b->tests[t].from];
			for (unsigned k = 0; k < g->n; k++)
				if (ulnet_nid_equal(&g->nodes[k].nid, &cli[i].nid)) {
					ct = ct ? ct : &b->tests[t];
					ntests++;
					break;
				}
		}
		if (!ct)
			continue;
		if (cb && cb->ok)
			s0 = cb->s;
		rc = ulnet__sst_con_stat(&cs.con, &cli[i], true, b->bid, &s1, why, sizeof(why));
		if (!rc && !s1.ext)
			rc = ulnet__sst_con_stat(&cs.con, &cli[i], false, 0, &s1, why, sizeof(why));
		o.kind = ct->t.service == ULNET_SST_SVC_BRW ? "brw" : "ping";
		o.write = ct->t.rw == ULNET_SST_BRW_WRITE;
		ulnet_nid_format(&cli[i].nid, o.from, sizeof(o.from));
		snprintf(o.to, sizeof(o.to), "group %s", cs.groups[ct->to]->name);
		o.size = ct->t.size;
		o.offset = ct->t.offset;
		o.check = ct->check;
		o.concurrency = ct->t.concurrency;
		o.remote = true;
		if (rc) {
			o.r.peer_gone = 1;
			o.lat_na = o.bytes_na = true;
			o.source = "no answer from the client node";
			snprintf(o.r.first_error, sizeof(o.r.first_error), "%.150s", why);
		} else {
			/* several client nodes: the server bytes cannot be split between them */
			derive_result(&s0, &s1, ct->t.service, srv_ok && nc == 1 && cb && cb->ok, srv_bytes,
				      (mono_ms() - b->run_ms) / 1000.0, &o);
			if (!s1.ext && !(cb && cb->ok)) {
				o.source = "no counters from the start of the batch";
				o.bytes_na = o.lat_na = true;
			}
		}
		if (ntests > 1) /* the extended stats sum the node's tests in this batch */
			snprintf(o.to, sizeof(o.to), "group %s (+%u more tests of batch %s)", cs.groups[ct->to]->name,
				 ntests - 1, b->name);
		all_ok &= !o.r.timeout && !o.r.mismatch && !o.r.refused && !o.r.peer_gone && !o.unclassified;
		result_json(out, &o, false);
	}
	return all_ok;
}

static int cmd_batch_stop(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	struct ulnet_process_id cli[CON_MAX_NODES];
	struct con_batch *b;
	char why[256];
	unsigned nc;
	uint64_t until;
	int rc;

	(void)d;
	pthread_mutex_lock(&cs.lock);
	if ((rc = batch_lookup(out, "stop", argc, argv, &b)))
		goto out;
	nc = batch_nodes(b, false, cli, CON_MAX_NODES);
	for (unsigned i = 0; i < nc; i++)
		(void)ulnet__sst_con_batch(&cs.con, &cli[i], b->bid, ULNET_SST_BATCH_STOP, 0, NULL, why, sizeof(why));
	/* wait for RPCs in flight: until every client says idle, or the RPC timeout */
	until = mono_ms() + cs.con.rpc_timeout_ms + 2000;
	for (unsigned i = 0; i < nc; i++) {
		uint32_t active = 1;
		while (!ulnet__sst_con_batch(&cs.con, &cli[i], b->bid, ULNET_SST_BATCH_QUERY, 0, &active, why,
					     sizeof(why)) && active && mono_ms() < until)
			usleep(50000);
	}
	b->running = false;
	rc = batch_report(b, out) ? 0 : -EREMOTEIO;
	if (rc)
		rc = ulnetd_errorf(out, rc, "stop %s: a test of the batch had errors", b->name);
out:
	pthread_mutex_unlock(&cs.lock);
	return rc;
}

static int cmd_batch_list(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	int npos, rc;

	(void)d;
	if ((rc = ulnetd_parse_args(out, "list_batch", argc, argv, NULL, 0, NULL, 0, &npos)))
		return rc;
	pthread_mutex_lock(&cs.lock);
	if (!(rc = con_need_session(out, "list_batch")))
		for (unsigned i = 0; i < cs.nbatches; i++)
			ulnetd_out_printf(out, "%s: %u test(s), %s\n", cs.batches[i]->name, cs.batches[i]->ntests,
					  cs.batches[i]->running ? "running" : "idle");
	pthread_mutex_unlock(&cs.lock);
	return rc;
}

/* lst stat: per node of the group, LNet traffic over a sampling interval and its client tests. */
static int cmd_group_stat(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long delay_ms = 1000;
	const struct ulnetd_opt opts[] = { { "--delay-ms", NULL, ULNETD_OPT_INT, 100, 60000, &delay_ms } };
	struct ulnet_sst_con_stat a[CON_MAX_NODES], b, x;
	bool ok[CON_MAX_NODES];
	char *pos[1], why[256], nid[ULNET_NID_STRLEN];
	int npos, rc, gi;
	unsigned bad = 0;
	const struct con_group *g;
	uint64_t t0;

	(void)d;
	if ((rc = ulnetd_parse_args(out, "stat", argc, argv, opts, 1, pos, 1, &npos)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "stat: give a group NAME");
	pthread_mutex_lock(&cs.lock);
	if ((rc = con_need_session(out, "stat")))
		goto out;
	if ((gi = group_find(pos[0])) < 0) {
		rc = ulnetd_errorf(out, -ENOENT, "stat: no group '%s' in session %s", pos[0], cs.con.name);
		goto out;
	}
	g = cs.groups[gi];
	t0 = mono_ms();
	for (unsigned k = 0; k < g->n; k++)
		ok[k] = !ulnet__sst_con_stat(&cs.con, &g->nodes[k], false, 0, &a[k], why, sizeof(why));
	usleep((useconds_t)delay_ms * 1000); /* the lock stays held: the group cannot change meanwhile */
	for (unsigned k = 0; k < g->n; k++) {
		const struct ulnet_process_id *id = &g->nodes[k];
		double s;
		ulnet_nid_format(&id->nid, nid, sizeof(nid));
		if (!ok[k] || ulnet__sst_con_stat(&cs.con, id, false, 0, &b, why, sizeof(why))) {
			ulnetd_out_printf(out, "%s: no answer: %s\n", nid, why);
			bad++;
			continue;
		}
		s = (mono_ms() - t0) / 1000.0;
		{
			const struct ulnet_sst_lnet_counters *l0 = &a[k].plain.lnet, *l1 = &b.plain.lnet;
			double rx = (double)(l1->recv_length - l0->recv_length) / s;
			double tx = (double)(l1->send_length - l0->send_length) / s;
			ulnetd_out_printf(out,
					  "%s: LNet in (into the node) %.2f MB/s (%.2f MiB/s) %.1f msg/s, out (from the node) "
					  "%.2f MB/s (%.2f MiB/s) %.1f msg/s; selftest brw errors %u, ping errors %u, "
					  "RPCs expired %u\n",
					  nid, rx / 1e6, rx / 1048576.0, (double)(uint32_t)(l1->recv_count - l0->recv_count) / s,
					  tx / 1e6, tx / 1048576.0, (double)(uint32_t)(l1->send_count - l0->send_count) / s,
					  b.plain.fw.brw_errors, b.plain.fw.ping_errors, b.plain.rpc.rpcs_expired);
			if (b.plain.fw.brw_errors || b.plain.fw.ping_errors)
				bad++;
		}
		if (!ulnet__sst_con_stat(&cs.con, id, true, 0, &x, why, sizeof(why)) && x.ext && x.x.ntests)
			ulnetd_out_printf(out,
					  "%s: its client tests since run: %llu RPCs ok, %llu bytes, errors: timeout %u, "
					  "mismatch %u, refused %u, peer gone %u; latency p50 %.3f ms p99 %.3f ms max %.3f ms; "
					  "%u running\n",
					  nid, (unsigned long long)x.x.rpcs_ok, (unsigned long long)x.x.bytes, x.x.timeout,
					  x.x.mismatch, x.x.refused, x.x.peer_gone, x.x.lat_p50_us / 1e3, x.x.lat_p99_us / 1e3,
					  x.x.lat_max_us / 1e3, x.x.active);
	}
	rc = bad ? ulnetd_errorf(out, -EREMOTEIO, "stat %s: %u node(s) unreachable or with selftest errors", pos[0],
				 bad)
		 : 0;
out:
	pthread_mutex_unlock(&cs.lock);
	return rc;
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
	if (!sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	ulnet__sst_inject(sst_of(d), (uint32_t)count, (uint32_t)at);
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
	if (!sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	ulnet__sst_stats(sst_of(d), &st);
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
	{ "selftest session new", "NAME [--timeout SEC] [--force]", "lst new_session: this node is the console",
	  cmd_session_new },
	{ "selftest session end", "", "lst end_session: remove the session from every node", cmd_session_end },
	{ "selftest session show", "", "lst show_session", cmd_session_show },
	{ "selftest group add", "NAME NID...", "lst add_group: the nodes join the session", cmd_group_add },
	{ "selftest group list", "[NAME]", "lst list_group: groups, or a group's nodes and their state",
	  cmd_group_list },
	{ "selftest group stat", "NAME [--delay-ms N]", "lst stat: traffic and selftest counters of a group",
	  cmd_group_stat },
	{ "selftest batch add", "NAME", "lst add_batch", cmd_batch_add },
	{ "selftest batch list", "", "lst list_batch", cmd_batch_list },
	{ "selftest batch run", "NAME", "lst run", cmd_batch_run },
	{ "selftest batch stop", "NAME", "lst stop, then one JSON result per client node", cmd_batch_stop },
	{ "selftest test add", "--batch B --from G --to G [--loop N] [--concurrency N] [--distribute x:y] "
			       "[--timeout SEC] brw [read|write] [size=S] [off=O] [check=C] | ping",
	  "lst add_test", cmd_test_add },
};

static void sst_on_close(struct ulnetd *d, void *arg)
{
	(void)arg;
	ulnet__sst_stop(d->selftest);
	d->selftest = NULL;
}

/* Runs before sst_on_close (hooks run last registered first): the engine still sends. */
static void con_on_close(struct ulnetd *d, void *arg)
{
	char why[256];

	(void)d;
	(void)arg;
	pthread_mutex_lock(&cs.lock);
	cs.pinger_quit = true;
	pthread_cond_broadcast(&cs.pinger_cv);
	pthread_mutex_unlock(&cs.lock);
	if (cs.pinger_started)
		pthread_join(cs.pinger, NULL);
	cs.pinger_started = false;
	pthread_mutex_lock(&cs.lock);
	if (cs.active) {
		cs.con.rpc_timeout_ms = 1000;
		for (unsigned i = 0; i < cs.njoined; i++)
			(void)ulnet__sst_con_leave(&cs.con, &cs.joined[i], why, sizeof(why));
		con_clear();
	}
	pthread_mutex_unlock(&cs.lock);
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
	if (sst && ((rc = ulnetd_on_close(d, sst_on_close, NULL)) || (rc = ulnetd_on_close(d, con_on_close, NULL))))
		return rc;
	return ulnetd_cmd_register(d, sst_cmds, sizeof(sst_cmds) / sizeof(sst_cmds[0]));
}
