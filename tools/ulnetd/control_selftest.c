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
 * The lst-style session, group, batch and test commands are in control_lst.c. Both only parse and
 * print: the engine and the console are the library's (ulnet/selftest.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "control_selftest.h"

/* ---- result output: one JSON object per line (the library's writer), formatted by the console ---- */

void ulnetd_sst_result_json(struct ulnetd_out *out, const struct ulnet_selftest_result *r, bool progress)
{
	struct ulnetd_emit e;

	ulnetd_emit_init(&e, out, true);
	ulnet_selftest_result_write(r, progress, &e.w);
}

struct progress_ctx {
	struct ulnetd *d;
	struct ulnetd_out *out;
	bool emit;                   /* the console asked for progress lines */
};

static int on_progress(void *arg, const struct ulnet_selftest_result *so_far)
{
	struct progress_ctx *pc = arg;

	if (ulnetd_stopping(pc->d))
		return 1; /* the daemon is ending: end the run now, not at its deadline */
	if (!pc->emit || !so_far)
		return 0;
	ulnetd_sst_result_json(pc->out, so_far, true);
	return ulnetd_out_flush(pc->out) ? 1 : 0; /* the console went away: stop */
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
		{ "--size", NULL, ULNETD_OPT_INT, 1, ULNET_LARGE_MAX_MAX, &size },
		{ "--offset", NULL, ULNETD_OPT_INT, 0, ULNET_MTU - 1, &offset },
		{ "--check", NULL, ULNETD_OPT_STR, 0, 0, &check },
		{ "--concurrency", NULL, ULNETD_OPT_INT, 1, ULNET_SELFTEST_MAX_CONCUR, &concur },
		{ "--duration-ms", NULL, ULNETD_OPT_INT, 0, 24LL * 3600 * 1000, &duration_ms },
		{ "--count", NULL, ULNETD_OPT_INT, 0, INT64_MAX, &count },
		{ "--timeout-ms", NULL, ULNETD_OPT_INT, 1, 3600 * 1000, &timeout_ms },
		{ "--corrupt-at", NULL, ULNETD_OPT_INT, 0, ULNET_LARGE_MAX_MAX - 1, &corrupt_at },
		{ "--corrupt-count", NULL, ULNETD_OPT_INT, 0, UINT32_MAX, &corrupt_count },
		{ "--progress", NULL, ULNETD_OPT_FLAG, 0, 0, &progress },
	};
	char *pos[2], why[512] = "";
	int npos, rc;
	struct ulnet_selftest_run p = { 0 };
	struct ulnet_selftest_result res;
	struct progress_ctx pc = { d, out, progress };
	const char *bad = NULL;

	if ((rc = ulnetd_parse_args(out, "selftest run", argc, argv, opts, sizeof(opts) / sizeof(opts[0]), pos, 2,
				    &npos)))
		return rc;
	if (!ulnetd_sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	if (npos < 1 || (strcmp(pos[0], "brw") && strcmp(pos[0], "ping")))
		return ulnetd_errorf(out, -EINVAL, "selftest run: give brw read|write or ping");
	if (!to)
		return ulnetd_errorf(out, -EINVAL, "selftest run: --to NID is required");
	if ((rc = ulnet_nid_parse(to, &p.to.nid, &bad)))
		return ulnetd_errorf(out, rc, "selftest run: bad NID '%s': %s", to, bad ? bad : "invalid");
	p.from = ulnet_nid_any();
	if (from && (rc = ulnet_nid_parse(from, &p.from, &bad)))
		return ulnetd_errorf(out, rc, "selftest run: bad NID '%s': %s", from, bad ? bad : "invalid");
	p.to.pid = (uint32_t)pid;
	if (!strcmp(pos[0], "brw")) {
		p.t.kind = ULNET_SELFTEST_BRW;
		if (npos < 2 || (strcmp(pos[1], "read") && strcmp(pos[1], "write")))
			return ulnetd_errorf(out, -EINVAL, "selftest run brw: give read or write");
		p.t.write = !strcmp(pos[1], "write");
	} else {
		p.t.kind = ULNET_SELFTEST_PING;
		if (npos > 1)
			return ulnetd_errorf(out, -EINVAL, "selftest run ping: unexpected '%s'", pos[1]);
	}
	if (ulnet_selftest_check_parse(check, &p.t.check))
		return ulnetd_errorf(out, -EINVAL, "selftest run: --check must be none, simple, full or discard, not '%s'",
				     check);
	p.t.size = (uint32_t)size;
	p.t.offset = (uint32_t)offset;
	p.t.concurrency = (uint32_t)concur;
	p.t.rpc_timeout_ms = (uint32_t)timeout_ms;
	p.duration_ms = (uint32_t)duration_ms;
	p.count = (uint64_t)count;
	p.corrupt_at = (uint32_t)corrupt_at;
	p.corrupt_count = (uint32_t)corrupt_count;
	/* called at least once a second whether or not the console wants progress: it also ends the run
	 * when the daemon is stopping */
	p.progress = on_progress;
	p.progress_arg = &pc;
	if ((rc = ulnet_selftest_run(ulnetd_sst_of(d), &p, &res, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "selftest run: %s", why);
	ulnetd_sst_result_json(out, &res, false);
	return 0;
}

static int cmd_inject(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long count = 1, at = 0;
	const struct ulnetd_opt opts[] = {
		{ "--count", NULL, ULNETD_OPT_INT, 0, UINT32_MAX, &count },
		{ "--at", NULL, ULNETD_OPT_INT, 0, ULNET_LARGE_MAX_MAX - 1, &at },
	};
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "selftest inject", argc, argv, opts, 2, NULL, 0, &npos)))
		return rc;
	if (!ulnetd_sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	ulnet_selftest_inject(ulnetd_sst_of(d), (uint32_t)count, (uint32_t)at);
	ulnetd_out_printf(out, "selftest: corrupting the next %lld brw transfer(s) at byte %lld\n", count, at);
	return 0;
}

static int cmd_stat(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool json = false;
	const struct ulnetd_opt opts[] = { { "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json } };
	struct ulnet_selftest_stats st;
	struct ulnetd_emit e;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "selftest stat", argc, argv, opts, 1, NULL, 0, &npos)))
		return rc;
	if (!ulnetd_sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	ulnet_selftest_stats_get(ulnetd_sst_of(d), &st);
	ulnetd_emit_init(&e, out, json);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_map(&e, "selftest");
	ulnetd_emit_bool(&e, "session", st.session_active);
	if (st.session_active) {
		ulnet_writer_nid(&e.w, "console", &st.session_console);
		ulnetd_emit_str(&e, "name", st.session_name);
	}
	ulnetd_emit_uint(&e, "errors", st.errors);
	ulnetd_emit_uint(&e, "rpcs_sent", st.rpcs_sent);
	ulnetd_emit_uint(&e, "rpcs_rcvd", st.rpcs_rcvd);
	ulnetd_emit_uint(&e, "rpcs_dropped", st.rpcs_dropped);
	ulnetd_emit_uint(&e, "rpcs_expired", st.rpcs_expired);
	ulnetd_emit_uint(&e, "bulk_get", st.bulk_get);
	ulnetd_emit_uint(&e, "bulk_put", st.bulk_put);
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
	ulnet_selftest_stop(d->selftest); /* ends the lst session on its nodes first */
	d->selftest = NULL;
}

int ulnetd_selftest_register(struct ulnetd *d)
{
	ulnet_selftest *st = NULL;
	int rc = ulnet_selftest_start(d->node, &d->cfg->selftest, &st);

	if (rc) {
		fprintf(stderr, "ulnetd: selftest services not started: %s\n", ulnet_strerror(rc));
		st = NULL; /* the daemon still runs; selftest commands answer -ENODEV */
	}
	d->selftest = st;
	if (st && (rc = ulnetd_on_close(d, sst_on_close, NULL)))
		return rc;
	if ((rc = ulnetd_cmd_register(d, sst_cmds, sizeof(sst_cmds) / sizeof(sst_cmds[0]))))
		return rc;
	return ulnetd_lst_register(d);
}
