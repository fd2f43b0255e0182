/* SPDX-License-Identifier: MIT */
/* ulnetd's selftest commands (docs/selftest.md): the engine starts with the daemon, so every ulnetd
 * serves lnet_selftest RPCs; these commands run a test with this node as the client and report it
 * as one JSON object, which the ulnet-selftest console formats.
 *
 *   selftest run brw read|write --to NID [--size N] [--offset N] [--check none|simple|full]
 *                [--concurrency N] [--duration-ms N] [--count N] [--timeout-ms N]
 *                [--corrupt-at N --corrupt-count N] [--progress]
 *   selftest run ping --to NID [...]
 *   selftest inject --count N [--at N]     corrupt the next N brw transfers this node serves
 *   selftest stat [--json]                 engine counters and the lst session, if any
 *   selftest nids                          this node's NIDs, one per line */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest/selftest.h"
#include "ulnetd.h"

static struct ulnet_sst *sst_of(struct ulnetd *d) { return d->selftest; }

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

static void result_json(struct ulnetd_out *out, const char *kind, const struct ulnet_sst_result *r, bool progress)
{
	ulnetd_out_printf(out,
			  "{\"progress\":%s,\"test\":\"%s\",\"seconds\":%.6f,\"rpcs_ok\":%llu,\"rpcs_failed\":%llu,"
			  "\"bytes\":%llu,\"lat_p50_us\":%llu,\"lat_p99_us\":%llu,\"lat_max_us\":%llu,"
			  "\"timeout\":%llu,\"mismatch\":%llu,\"refused\":%llu,\"peer_gone\":%llu,"
			  "\"mismatch_offset\":%lld,\"first_error\":\"",
			  progress ? "true" : "false", kind, r->seconds, (unsigned long long)r->rpcs_ok,
			  (unsigned long long)r->rpcs_failed, (unsigned long long)r->bytes,
			  (unsigned long long)r->lat_p50_us, (unsigned long long)r->lat_p99_us,
			  (unsigned long long)r->lat_max_us, (unsigned long long)r->timeout,
			  (unsigned long long)r->mismatch, (unsigned long long)r->refused,
			  (unsigned long long)r->peer_gone,
			  r->mismatch_offset_known ? (long long)r->first_mismatch_offset : -1LL);
	for (const char *p = r->first_error; *p; p++) {
		if (*p == '"' || *p == '\\')
			ulnetd_out_printf(out, "\\%c", *p);
		else if ((unsigned char)*p >= 0x20)
			ulnetd_out_write(out, p, 1);
	}
	ulnetd_out_printf(out, "\"}\n");
}

struct progress_ctx {
	struct ulnetd *d;
	struct ulnetd_out *out;
	const char *kind;
};

static int on_progress(void *arg, const struct ulnet_sst_result *so_far)
{
	struct progress_ctx *pc = arg;

	if (ulnetd_stopping(pc->d))
		return 1;
	result_json(pc->out, pc->kind, so_far, true);
	return ulnetd_out_flush(pc->out) ? 1 : 0; /* the console went away: stop */
}

static int cmd_run(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long size = 1 << 20, offset = 0, concur = 1, duration_ms = 10000, count = 0, timeout_ms = 10000;
	long long corrupt_at = 0, corrupt_count = 0, pid = ULNET_PID_LUSTRE;
	const char *to = NULL, *check = "full";
	bool progress = false;
	const struct ulnetd_opt opts[] = {
		{ "--to", NULL, ULNETD_OPT_STR, 0, 0, &to },
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
	struct progress_ctx pc = { d, out, NULL };
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
	pc.kind = pos[0];
	if (progress) {
		p.progress = on_progress;
		p.progress_arg = &pc;
	}
	rc = ulnet__sst_run(sst_of(d), &p, &res, &why);
	if (rc == -EINVAL)
		return ulnetd_errorf(out, rc, "selftest run: %s", why ? why : "bad parameters");
	if (rc)
		return ulnetd_errorf(out, rc, "selftest run: %s", ulnet_strerror(rc));
	result_json(out, pos[0], &res, false);
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
	{ "selftest run", "brw read|write|ping --to NID [--size N] [--offset N] [--check C] [--concurrency N] "
			  "[--duration-ms N] [--count N] [--timeout-ms N] [--progress]",
	  "run a selftest with this node as the client (JSON result)", cmd_run },
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
	if (sst && (rc = ulnetd_on_close(d, sst_on_close, NULL)))
		return rc;
	return ulnetd_cmd_register(d, sst_cmds, sizeof(sst_cmds) / sizeof(sst_cmds[0]));
}
