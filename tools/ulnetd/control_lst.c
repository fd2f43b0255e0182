/* SPDX-License-Identifier: MIT */
/* ulnetd's lst-style selftest commands (docs/selftest.md): lst's named session, groups and batches.
 * The console is the library's (ulnet/selftest.h: it keeps the session, so that separate console
 * invocations share it, and pings every node to keep it alive); these handlers parse and print. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_selftest.h"

#define LST_MAX_GROUP_NODES 256

/* The engine is needed by every command; the session checks are the library's. */
static int need_engine(struct ulnetd *d, struct ulnetd_out *out)
{
	if (!ulnetd_sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	return 0;
}

static int cmd_session_new(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long timeout = 5;
	bool force = false;
	const struct ulnetd_opt opts[] = {
		{ "--timeout", NULL, ULNETD_OPT_INT, 1, 3600, &timeout },
		{ "--force", NULL, ULNETD_OPT_FLAG, 0, 0, &force },
	};
	struct ulnet_selftest_session_info info;
	char *pos[1], why[256], nid[ULNET_NID_STRLEN];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "new_session", argc, argv, opts, 2, pos, 1, &npos)) || (rc = need_engine(d, out)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "new_session: give the session NAME");
	if ((rc = ulnet_selftest_session_new(ulnetd_sst_of(d), pos[0], (uint32_t)timeout, force, &info, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "new_session: %s", why);
	ulnetd_out_printf(out, "session %s: console %s, RPC timeout %lld s\n", info.name,
			  ulnet_nid_format(&info.console, nid, sizeof(nid)), timeout);
	return 0;
}

static void print_warning(void *arg, const char *line)
{
	ulnetd_out_printf(arg, "warning: %s\n", line);
}

static int cmd_session_end(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	struct ulnet_selftest_session_info info;
	unsigned bad = 0;
	char why[256];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "end_session", argc, argv, NULL, 0, NULL, 0, &npos)) || (rc = need_engine(d, out)))
		return rc;
	if ((rc = ulnet_selftest_session_end(ulnetd_sst_of(d), &info, &bad, print_warning, out, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "end_session: %s", why);
	ulnetd_out_printf(out, "session %s ended (%u node(s)%s)\n", info.name, info.nodes, bad ? ", some unreachable" : "");
	return 0;
}

static int cmd_session_show(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	struct ulnet_selftest_session_info info;
	char why[256], nid[ULNET_NID_STRLEN];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "show_session", argc, argv, NULL, 0, NULL, 0, &npos)) || (rc = need_engine(d, out)))
		return rc;
	if ((rc = ulnet_selftest_session_show(ulnetd_sst_of(d), &info, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "show_session: %s", why);
	ulnetd_out_printf(out, "session %s: console %s, %u node(s), %u group(s), %u batch(es)\n", info.name,
			  ulnet_nid_format(&info.console, nid, sizeof(nid)), info.nodes, info.groups, info.batches);
	return 0;
}

static int cmd_group_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char *pos[LST_MAX_GROUP_NODES + 1], why[512];
	struct ulnet_selftest_session_info info;
	struct ulnet_nid *nids;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "add_group", argc, argv, NULL, 0, pos, LST_MAX_GROUP_NODES + 1, &npos)) ||
	    (rc = need_engine(d, out)))
		return rc;
	if (npos < 2)
		return ulnetd_errorf(out, -EINVAL, "add_group: give a NAME and at least one NID");
	if (!(nids = calloc((size_t)npos - 1, sizeof(*nids))))
		return ulnetd_errorf(out, -ENOMEM, "add_group: out of memory");
	for (int i = 1; i < npos; i++) {
		const char *bad = NULL;
		if (ulnet_nid_parse(pos[i], &nids[i - 1], &bad)) {
			free(nids);
			return ulnetd_errorf(out, -EINVAL, "add_group: bad NID '%s': %s", pos[i], bad ? bad : "invalid");
		}
	}
	rc = ulnet_selftest_group_add(ulnetd_sst_of(d), pos[0], nids, (unsigned)npos - 1, why, sizeof(why));
	free(nids);
	if (rc)
		return ulnetd_errorf(out, rc, "add_group: %s", why);
	if (why[0]) /* nodes that did not answer are in the group, down */
		ulnetd_out_printf(out, "warning: %s\n", why);
	if (ulnet_selftest_session_show(ulnetd_sst_of(d), &info, why, sizeof(why)))
		info.name[0] = '\0';
	ulnetd_out_printf(out, "group %s: %d node(s) in session %s\n", pos[0], npos - 1, info.name);
	return 0;
}

struct group_lines {
	struct ulnetd_out *out;
	unsigned n;
};

static void print_group(void *arg, const struct ulnet_selftest_group_info *g)
{
	struct group_lines *gl = arg;

	ulnetd_out_printf(gl->out, "%s: %u node(s)\n", g->name, g->nodes);
	gl->n++;
}

static void print_node(void *arg, const struct ulnet_nid *nid, enum ulnet_selftest_node_state s)
{
	char b[ULNET_NID_STRLEN];

	ulnetd_out_printf(arg, "%s %s\n", ulnet_nid_format(nid, b, sizeof(b)), ulnet_selftest_node_state_name(s));
}

static int cmd_group_list(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char *pos[1], why[256];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "list_group", argc, argv, NULL, 0, pos, 1, &npos)) || (rc = need_engine(d, out)))
		return rc;
	if (npos == 0) {
		struct group_lines gl = { out, 0 };
		if ((rc = ulnet_selftest_group_list(ulnetd_sst_of(d), print_group, &gl, why, sizeof(why))))
			return ulnetd_errorf(out, rc, "list_group: %s", why);
		ulnetd_out_printf(out, "total %u group(s)\n", gl.n);
		return 0;
	}
	if ((rc = ulnet_selftest_group_nodes(ulnetd_sst_of(d), pos[0], print_node, out, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "list_group: %s", why);
	return 0;
}

static int cmd_batch_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char *pos[1], why[256];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "add_batch", argc, argv, NULL, 0, pos, 1, &npos)) || (rc = need_engine(d, out)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "add_batch: give the batch NAME");
	if ((rc = ulnet_selftest_batch_add(ulnetd_sst_of(d), pos[0], why, sizeof(why))))
		return ulnetd_errorf(out, rc, "add_batch: %s", why);
	ulnetd_out_printf(out, "batch %s added\n", pos[0]);
	return 0;
}

/* A count of --distribute: 1..4096 digits only. */
static int dist_count(const char *s, unsigned *v)
{
	char *end;
	unsigned long x;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	x = strtoul(s, &end, 10);
	if (!x || x > 4096 || *end)
		return -EINVAL;
	*v = (unsigned)x;
	return 0;
}

/* lst's --distribute x:y; x:all and all (1:all) give each client every server of the group. */
static int parse_distribute(const char *s, unsigned *dist, unsigned *span)
{
	const char *colon = strchr(s, ':');
	char head[16];

	if (!strcmp(s, "all")) {
		*dist = 1;
		*span = ULNET_SELFTEST_SPAN_ALL;
		return 0;
	}
	if (!colon || (size_t)(colon - s) >= sizeof(head))
		return -EINVAL;
	snprintf(head, sizeof(head), "%.*s", (int)(colon - s), s);
	if (dist_count(head, dist))
		return -EINVAL;
	if (!strcmp(colon + 1, "all")) {
		*span = ULNET_SELFTEST_SPAN_ALL;
		return 0;
	}
	return dist_count(colon + 1, span);
}

static int cmd_test_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *dist = "1:1";
	long long loop = -1, concur = 1, timeout = 0;
	struct ulnet_selftest_batch_test bt = { 0 };
	const struct ulnetd_opt opts[] = {
		{ "--batch", NULL, ULNETD_OPT_STR, 0, 0, &bt.batch },
		{ "--from", NULL, ULNETD_OPT_STR, 0, 0, &bt.from },
		{ "--to", NULL, ULNETD_OPT_STR, 0, 0, &bt.to },
		{ "--loop", NULL, ULNETD_OPT_INT, -1, INT32_MAX, &loop },
		{ "--concurrency", NULL, ULNETD_OPT_INT, 1, ULNET_SELFTEST_MAX_CONCUR, &concur },
		{ "--distribute", NULL, ULNETD_OPT_STR, 0, 0, &dist },
		{ "--timeout", NULL, ULNETD_OPT_INT, 0, 3600, &timeout },
	};
	char *pos[8], why[512];
	unsigned index = 0;
	int npos, rc, wi = 1;

	if ((rc = ulnetd_parse_args(out, "add_test", argc, argv, opts, sizeof(opts) / sizeof(opts[0]), pos, 8, &npos)) ||
	    (rc = need_engine(d, out)))
		return rc;
	if (!bt.batch || !bt.from || !bt.to || npos < 1)
		return ulnetd_errorf(out, -EINVAL, "add_test: give --batch B --from G1 --to G2 brw read|write ... or ping");
	if (parse_distribute(dist, &bt.dist, &bt.span))
		return ulnetd_errorf(out, -EINVAL, "add_test: --distribute needs x:y, x:all or all (x, y >= 1), not '%s'",
				     dist);
	bt.loop = (int32_t)loop;
	bt.t.concurrency = (uint32_t)concur;
	bt.t.rpc_timeout_ms = (uint32_t)timeout * 1000;
	bt.t.check = ULNET_SELFTEST_CHECK_NONE;
	bt.t.size = 4096;
	if (!strcmp(pos[0], "ping")) {
		bt.t.kind = ULNET_SELFTEST_PING;
	} else if (!strcmp(pos[0], "brw")) {
		bt.t.kind = ULNET_SELFTEST_BRW; /* lst's default: read */
		if (npos > 1 && (!strcmp(pos[1], "read") || !strcmp(pos[1], "write"))) {
			bt.t.write = !strcmp(pos[1], "write");
			wi = 2;
		}
	} else {
		return ulnetd_errorf(out, -EINVAL, "add_test: unknown test '%s' (brw or ping)", pos[0]);
	}
	for (; wi < npos; wi++) {
		const char *w = pos[wi];
		uint64_t v;
		if (bt.t.kind == ULNET_SELFTEST_BRW && !strncmp(w, "size=", 5)) {
			if (ulnet_size_parse(w + 5, ULNET_LARGE_MAX_MAX, &v) || !v)
				return ulnetd_errorf(out, -EINVAL, "add_test: size must be 1..1G, not '%s'", w + 5);
			bt.t.size = (uint32_t)v;
		} else if (bt.t.kind == ULNET_SELFTEST_BRW && !strncmp(w, "off=", 4)) {
			if (ulnet_size_parse(w + 4, ULNET_MTU - 1, &v))
				return ulnetd_errorf(out, -EINVAL, "add_test: off must be 0..1048575, not '%s'", w + 4);
			bt.t.offset = (uint32_t)v;
		} else if (bt.t.kind == ULNET_SELFTEST_BRW && !strncmp(w, "check=", 6)) {
			if (ulnet_selftest_check_parse(w + 6, &bt.t.check))
				return ulnetd_errorf(out, -EINVAL, "add_test: check must be none, simple, full or discard, not '%s'",
						     w + 6);
		} else {
			return ulnetd_errorf(out, -EINVAL, "add_test: unexpected '%s'", w);
		}
	}
	if ((rc = ulnet_selftest_test_add(ulnetd_sst_of(d), &bt, &index, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "add_test: %s", why);
	ulnetd_out_printf(out, "test %u added to batch %s: %s %s from %s to %s\n", index, bt.batch, pos[0],
			  bt.t.kind == ULNET_SELFTEST_PING ? "" : bt.t.write ? "write" : "read", bt.from, bt.to);
	return 0;
}

/* "run NAME", "stop NAME [--force]": the batch name. */
static int batch_arg(struct ulnetd *d, struct ulnetd_out *out, const char *cmd, int argc, char **argv, bool *force,
		     const char **name)
{
	const struct ulnetd_opt opts[] = { { "--force", NULL, ULNETD_OPT_FLAG, 0, 0, force } };
	char *pos[1];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, cmd, argc, argv, opts, force ? 1 : 0, pos, 1, &npos)) ||
	    (rc = need_engine(d, out)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "%s: give the batch NAME", cmd);
	*name = pos[0];
	return 0;
}

/* lst run [--timeout SEC]: the clients run SEC seconds (BATCH RUN's argument), or until stopped. */
static int cmd_batch_run(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long secs = 0;
	const struct ulnetd_opt opts[] = { { "--timeout", NULL, ULNETD_OPT_INT, 1, 86400, &secs } };
	char *pos[1], why[256];
	unsigned nc = 0;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "run", argc, argv, opts, 1, pos, 1, &npos)) || (rc = need_engine(d, out)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "run: give the batch NAME");
	if ((rc = ulnet_selftest_batch_run_for(ulnetd_sst_of(d), pos[0], (uint32_t)secs, &nc, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "run %s: %s", pos[0], why);
	if (secs)
		ulnetd_out_printf(out, "batch %s running on %u client node(s) for %lld s\n", pos[0], nc, secs);
	else
		ulnetd_out_printf(out, "batch %s running on %u client node(s)\n", pos[0], nc);
	return 0;
}

static void print_result(void *arg, const struct ulnet_selftest_result *r)
{
	ulnetd_sst_result_json(arg, r, false);
}

static int cmd_batch_stop(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *name = NULL;
	bool force = false;
	char why[256];
	int rc;

	if ((rc = batch_arg(d, out, "stop", argc, argv, &force, &name)))
		return rc;
	if ((rc = ulnet_selftest_batch_stop(ulnetd_sst_of(d), name, force, print_result, out, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "stop %s: %s", name, why);
	return 0;
}

static void print_batch(void *arg, const struct ulnet_selftest_batch_info *b)
{
	ulnetd_out_printf(arg, "%s: %u test(s), %s\n", b->name, b->tests, b->running ? "running" : "idle");
}

static int cmd_batch_list(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long test = 0;
	bool server = false;
	const struct ulnetd_opt opts[] = {
		{ "--test", NULL, ULNETD_OPT_INT, 1, 16, &test },
		{ "--server", NULL, ULNETD_OPT_FLAG, 0, 0, &server },
	};
	char *pos[1], why[256];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "list_batch", argc, argv, opts, 2, pos, 1, &npos)) || (rc = need_engine(d, out)))
		return rc;
	if (npos == 1)
		return ulnetd_lst_batch_detail(d, pos[0], (unsigned)test, server, out);
	if (test || server)
		return ulnetd_errorf(out, -EINVAL, "list_batch: --test and --server need the batch NAME");
	if ((rc = ulnet_selftest_batch_list(ulnetd_sst_of(d), print_batch, out, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "list_batch: %s", why);
	return 0;
}

/* What `stat` prints: the per-node lines (ulnet's) and lst's summary over the nodes, filtered by lst's
 * options: --bw/--rate (what), --read/--write (direction: into / out of the nodes), --avg/--min/--max
 * (which figure), --mbs (MB/s instead of MiB/s). No option: everything, per-node lines included. */
struct stat_sel {
	bool bw, rate, read, write, avg, min, max, mbs, nodes;
};

struct stat_acc {
	struct ulnetd_out *out;
	const struct stat_sel *sel;
	unsigned n;                     /* nodes that answered */
	double sum[4], lo[4], hi[4];    /* rx msg/s, tx msg/s, rx bytes/s, tx bytes/s */
};

static void print_node_stat(void *arg, const struct ulnet_selftest_node_stat *s)
{
	struct stat_acc *acc = arg;
	struct ulnetd_out *out = acc->out;
	char nid[ULNET_NID_STRLEN];

	ulnet_nid_format(&s->nid, nid, sizeof(nid));
	if (!s->answered) {
		ulnetd_out_printf(out, "%s: no answer: %s\n", nid, s->why);
		return;
	}
	{
		const double v[4] = { s->rx_msgs_s, s->tx_msgs_s, s->rx_bytes_s, s->tx_bytes_s };
		for (int i = 0; i < 4; i++) {
			acc->sum[i] += v[i];
			acc->lo[i] = acc->n && acc->lo[i] < v[i] ? acc->lo[i] : v[i];
			acc->hi[i] = acc->n && acc->hi[i] > v[i] ? acc->hi[i] : v[i];
		}
		acc->n++;
	}
	if (!acc->sel->nodes)
		return;
	ulnetd_out_printf(out,
			  "%s: LNet in (into the node) %.2f MB/s (%.2f MiB/s) %.1f msg/s, out (from the node) "
			  "%.2f MB/s (%.2f MiB/s) %.1f msg/s; selftest brw errors %u, ping errors %u, "
			  "RPCs expired %u\n",
			  nid, s->rx_bytes_s / 1e6, s->rx_bytes_s / 1048576.0, s->rx_msgs_s, s->tx_bytes_s / 1e6,
			  s->tx_bytes_s / 1048576.0, s->tx_msgs_s, s->brw_errors, s->ping_errors, s->rpcs_expired);
	if (s->has_tests)
		ulnetd_out_printf(out,
				  "%s: its client tests since run: %llu RPCs ok, %llu bytes, errors: timeout %u, "
				  "mismatch %u, refused %u, peer gone %u; latency p50 %.3f ms p99 %.3f ms max %.3f ms; "
				  "%u running\n",
				  nid, (unsigned long long)s->rpcs_ok, (unsigned long long)s->bytes, s->timeout, s->mismatch,
				  s->refused, s->peer_gone, s->lat_p50_us / 1e3, s->lat_p99_us / 1e3, s->lat_max_us / 1e3,
				  s->active);
}

/* lst's "[LNet Rates of G]" and "[LNet Bandwidth of G]" blocks; [R] = into the nodes, [W] = out. */
static void print_summary(struct stat_acc *acc, const char *what)
{
	const struct stat_sel *sel = acc->sel;
	const double unit = sel->mbs ? 1e6 : 1048576.0;

	if (!acc->n) {
		ulnetd_out_printf(acc->out, "[LNet of %s]: no node answered\n", what);
		return;
	}
	for (int bw = 0; bw < 2; bw++) {
		if (bw ? !sel->bw : !sel->rate)
			continue;
		ulnetd_out_printf(acc->out, "[LNet %s of %s]\n", bw ? "Bandwidth" : "Rates", what);
		for (int w = 0; w < 2; w++) {
			const int i = bw * 2 + w;
			const double div = bw ? unit : 1.0;
			const char *u = bw ? (sel->mbs ? "MB/s" : "MiB/s") : "msg/s";
			const char *fmt = bw ? "%s: %.2f %s" : "%s: %.0f %s";
			if (w ? !sel->write : !sel->read)
				continue;
			ulnetd_out_printf(acc->out, "[%c]", w ? 'W' : 'R');
			if (sel->avg) {
				ulnetd_out_printf(acc->out, " ");
				ulnetd_out_printf(acc->out, fmt, "Avg", acc->sum[i] / acc->n / div, u);
			}
			if (sel->min) {
				ulnetd_out_printf(acc->out, " ");
				ulnetd_out_printf(acc->out, fmt, "Min", acc->lo[i] / div, u);
			}
			if (sel->max) {
				ulnetd_out_printf(acc->out, " ");
				ulnetd_out_printf(acc->out, fmt, "Max", acc->hi[i] / div, u);
			}
			ulnetd_out_printf(acc->out, "\n");
		}
	}
}

/* lst stat GROUP|NIDs: per node, LNet traffic over a sampling interval and its client tests, and lst's
 * summary; --count samples (each over --delay-ms). */
static int cmd_group_stat(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long delay_ms = 1000, count = 1, timeout = 0;
	struct stat_sel sel = { 0 };
	const struct ulnetd_opt opts[] = {
		{ "--delay-ms", NULL, ULNETD_OPT_INT, 100, 60000, &delay_ms },
		{ "--count", NULL, ULNETD_OPT_INT, 1, 1000, &count },
		{ "--timeout", NULL, ULNETD_OPT_INT, 1, 3600, &timeout },
		{ "--bw", NULL, ULNETD_OPT_FLAG, 0, 0, &sel.bw },
		{ "--rate", NULL, ULNETD_OPT_FLAG, 0, 0, &sel.rate },
		{ "--read", NULL, ULNETD_OPT_FLAG, 0, 0, &sel.read },
		{ "--write", NULL, ULNETD_OPT_FLAG, 0, 0, &sel.write },
		{ "--avg", NULL, ULNETD_OPT_FLAG, 0, 0, &sel.avg },
		{ "--min", NULL, ULNETD_OPT_FLAG, 0, 0, &sel.min },
		{ "--max", NULL, ULNETD_OPT_FLAG, 0, 0, &sel.max },
		{ "--mbs", NULL, ULNETD_OPT_FLAG, 0, 0, &sel.mbs },
	};
	struct ulnet_nid *nids = NULL;
	struct ulnet_selftest_nodes who = { NULL, NULL, 0 };
	char *pos[LST_MAX_GROUP_NODES], why[256];
	unsigned bad_total = 0;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "stat", argc, argv, opts, sizeof(opts) / sizeof(opts[0]), pos,
				    LST_MAX_GROUP_NODES, &npos)) || (rc = need_engine(d, out)))
		return rc;
	if (npos < 1)
		return ulnetd_errorf(out, -EINVAL, "stat: give a group NAME or NIDs");
	if (!strchr(pos[0], '@')) { /* a group (names cannot hold '@') */
		if (npos != 1)
			return ulnetd_errorf(out, -EINVAL, "stat: one group NAME, or NIDs");
		who.group = pos[0];
	} else {
		if (!(nids = calloc((size_t)npos, sizeof(*nids))))
			return ulnetd_errorf(out, -ENOMEM, "stat: out of memory");
		for (int i = 0; i < npos; i++) {
			const char *bad = NULL;
			if (ulnet_nid_parse(pos[i], &nids[i], &bad)) {
				free(nids);
				return ulnetd_errorf(out, -EINVAL, "stat: bad NID '%s': %s", pos[i], bad ? bad : "invalid");
			}
		}
		who.nids = nids;
		who.n = (unsigned)npos;
	}
	/* no selection: everything, as lst; a missing axis means both of it */
	sel.nodes = !(sel.bw || sel.rate || sel.read || sel.write || sel.avg || sel.min || sel.max);
	if (!sel.bw && !sel.rate)
		sel.bw = sel.rate = true;
	if (!sel.read && !sel.write)
		sel.read = sel.write = true;
	if (!sel.avg && !sel.min && !sel.max)
		sel.avg = sel.min = sel.max = true;
	for (long long i = 0; i < count; i++) {
		struct stat_acc acc = { out, &sel, 0, { 0 }, { 0 }, { 0 } };
		unsigned bad = 0;
		if (i && ulnetd_out_flush(out)) { /* each sample as it comes; the console went away */
			free(nids);
			return -EPIPE;
		}
		if (i && ulnetd_stopping(d)) { /* a daemon stopping waits for this handler: one sample at most */
			free(nids);
			return ulnetd_errorf(out, -ESHUTDOWN, "stat %s: the node is stopping", pos[0]);
		}
		rc = ulnet_selftest_nodes_stat(ulnetd_sst_of(d), &who, (uint32_t)delay_ms, (uint32_t)timeout, print_node_stat,
					       &acc, &bad, why, sizeof(why));
		if (rc && rc != -EREMOTEIO) {
			free(nids);
			return ulnetd_errorf(out, rc, "stat %s: %s", pos[0], why);
		}
		print_summary(&acc, who.group ? who.group : "the NIDs given");
		bad_total += bad;
	}
	free(nids);
	if (bad_total)
		return ulnetd_errorf(out, -EREMOTEIO, "stat %s: %s", pos[0], why);
	return 0;
}

static const struct ulnetd_cmd lst_cmds[] = {
	{ "selftest session new", "NAME [--timeout SEC] [--force]", "lst new_session: this node is the console",
	  cmd_session_new },
	{ "selftest session end", "", "lst end_session: remove the session from every node", cmd_session_end },
	{ "selftest session show", "", "lst show_session", cmd_session_show },
	{ "selftest group add", "NAME NID...", "lst add_group: the nodes join the session", cmd_group_add },
	{ "selftest group list", "[NAME]", "lst list_group: groups, or a group's nodes and their state",
	  cmd_group_list },
	{ "selftest group stat", "NAME|NID... [--delay-ms N] [--count N] [--timeout SEC] [--bw] [--rate] [--read] "
				 "[--write] [--avg] [--min] [--max] [--mbs]",
	  "lst stat: traffic and selftest counters of a group's nodes, and lst's summary", cmd_group_stat },
	{ "selftest batch add", "NAME", "lst add_batch", cmd_batch_add },
	{ "selftest batch list", "[NAME [--test N] [--server]]",
	  "lst list_batch: the batches, or one batch's tests (with --test: that test's client or server nodes)",
	  cmd_batch_list },
	{ "selftest batch run", "NAME [--timeout SEC]", "lst run (--timeout: the clients run SEC seconds)",
	  cmd_batch_run },
	{ "selftest batch stop", "NAME [--force]",
	  "lst stop (--force aborts RPCs in flight), then one JSON result per client node", cmd_batch_stop },
	{ "selftest test add", "--batch B --from G --to G [--loop N] [--concurrency N] [--distribute x:y|x:all|all] "
			       "[--timeout SEC] brw [read|write] [size=S] [off=O] [check=C] | ping",
	  "lst add_test", cmd_test_add },
};

int ulnetd_lst_register(struct ulnetd *d)
{
	int rc = ulnetd_cmd_register(d, lst_cmds, sizeof(lst_cmds) / sizeof(lst_cmds[0]));

	return rc ? rc : ulnetd_lst_admin_register(d);
}
