/* SPDX-License-Identifier: MIT */
/* ulnetd's lst administration commands (docs/selftest.md §7): ping, del_group, update_group,
 * show_error, query and list_batch NAME. The library does the work (sst_lst_admin.c,
 * sst_lst_query.c); these handlers parse and print. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control_selftest.h"

#define ADMIN_MAX_NIDS 256

static int need_engine(struct ulnetd *d, struct ulnetd_out *out)
{
	if (!ulnetd_sst_of(d))
		return ulnetd_errorf(out, -ENODEV, "the selftest engine is not running on this node");
	return 0;
}

/* NIDs from words, each one NID or a comma-separated list. -EINVAL with the message set. */
static int parse_nids(struct ulnetd_out *out, const char *cmd, char **words, int nwords, struct ulnet_nid *nids,
		      unsigned *n)
{
	*n = 0;
	for (int i = 0; i < nwords; i++) {
		char *save = NULL, *buf = strdup(words[i]);
		int rc = 0;
		if (!buf)
			return ulnetd_errorf(out, -ENOMEM, "%s: out of memory", cmd);
		for (char *tok = strtok_r(buf, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
			const char *bad = NULL;
			if (*n == ADMIN_MAX_NIDS)
				rc = ulnetd_errorf(out, -EINVAL, "%s: at most %d NIDs", cmd, ADMIN_MAX_NIDS);
			else if (ulnet_nid_parse(tok, &nids[*n], &bad))
				rc = ulnetd_errorf(out, -EINVAL, "%s: bad NID '%s': %s", cmd, tok, bad ? bad : "invalid");
			else
				(*n)++;
		}
		free(buf);
		if (rc)
			return rc;
	}
	if (!*n)
		return ulnetd_errorf(out, -EINVAL, "%s: give at least one NID", cmd);
	return 0;
}

/* "GROUP" or "NID[,NID...] ...": a word with '@' is a NID (names cannot hold one). */
static int parse_target(struct ulnetd_out *out, const char *cmd, char **pos, int npos, const char *nodes_opt,
			struct ulnet_nid *nids, struct ulnet_selftest_nodes *who)
{
	memset(who, 0, sizeof(*who));
	who->nids = nids;
	if (nodes_opt && npos)
		return ulnetd_errorf(out, -EINVAL, "%s: give a GROUP or --nodes NIDs, not both", cmd);
	if (nodes_opt)
		return parse_nids(out, cmd, (char **)&nodes_opt, 1, nids, &who->n);
	if (!npos)
		return ulnetd_errorf(out, -EINVAL, "%s: give a GROUP or NIDs", cmd);
	if (!strchr(pos[0], '@')) {
		if (npos > 1)
			return ulnetd_errorf(out, -EINVAL, "%s: one GROUP only", cmd);
		who->group = pos[0];
		return 0;
	}
	return parse_nids(out, cmd, pos, npos, nids, &who->n);
}

struct ping_print {
	struct ulnetd_out *out;
	unsigned n[ULNET_SELFTEST_NODE_DOWN + 1];
};

static void print_ping(void *arg, const struct ulnet_nid *nid, enum ulnet_selftest_node_state s, const char *detail)
{
	struct ping_print *pp = arg;
	char b[ULNET_NID_STRLEN];

	pp->n[s]++;
	ulnetd_out_printf(pp->out, "%s %s%s%s%s\n", ulnet_nid_format(nid, b, sizeof(b)), ulnet_selftest_node_state_name(s),
			  detail[0] ? " (" : "", detail, detail[0] ? ")" : "");
}

/* lst ping: each node's state, from a DEBUG to each. */
static int cmd_ping(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *nodes = NULL;
	long long timeout = 0;
	const struct ulnetd_opt opts[] = {
		{ "--nodes", NULL, ULNETD_OPT_STR, 0, 0, &nodes },
		{ "--timeout", NULL, ULNETD_OPT_INT, 1, 3600, &timeout },
	};
	struct ulnet_nid *nids = calloc(ADMIN_MAX_NIDS, sizeof(*nids));
	struct ping_print pp = { out, { 0 } };
	struct ulnet_selftest_nodes who;
	char *pos[ADMIN_MAX_NIDS], why[256];
	unsigned down = 0;
	int npos, rc;

	if (!nids)
		return ulnetd_errorf(out, -ENOMEM, "ping: out of memory");
	if ((rc = ulnetd_parse_args(out, "ping", argc, argv, opts, 2, pos, ADMIN_MAX_NIDS, &npos)) ||
	    (rc = need_engine(d, out)) || (rc = parse_target(out, "ping", pos, npos, nodes, nids, &who)))
		goto out;
	if ((rc = ulnet_selftest_ping(ulnetd_sst_of(d), &who, (uint32_t)timeout, print_ping, &pp, &down, why,
				      sizeof(why)))) {
		rc = ulnetd_errorf(out, rc, "ping: %s", why);
		goto out;
	}
	ulnetd_out_printf(out, "total %u node(s): %u active, %u busy, %u unknown, %u down\n",
			  pp.n[0] + pp.n[1] + pp.n[2] + pp.n[3], pp.n[ULNET_SELFTEST_NODE_ACTIVE],
			  pp.n[ULNET_SELFTEST_NODE_BUSY], pp.n[ULNET_SELFTEST_NODE_UNKNOWN], pp.n[ULNET_SELFTEST_NODE_DOWN]);
	if (down)
		rc = ulnetd_errorf(out, -EREMOTEIO, "ping: %u node(s) down", down);
out:
	free(nids);
	return rc;
}

static int cmd_group_del(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char *pos[1], why[256];
	unsigned left = 0;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "del_group", argc, argv, NULL, 0, pos, 1, &npos)) || (rc = need_engine(d, out)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "del_group: give the group NAME");
	if ((rc = ulnet_selftest_group_del(ulnetd_sst_of(d), pos[0], &left, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "del_group: %s", why);
	ulnetd_out_printf(out, "group %s deleted (%u node(s) left the session)\n", pos[0], left);
	return 0;
}

/* update_group --clean STATE: lst's states; "invalid" is every state but active. */
static int clean_states(const char *s, unsigned *mask)
{
	static const struct { const char *name; unsigned mask; } st[] = {
		{ "active", 1u << ULNET_SELFTEST_NODE_ACTIVE }, { "busy", 1u << ULNET_SELFTEST_NODE_BUSY },
		{ "unknown", 1u << ULNET_SELFTEST_NODE_UNKNOWN }, { "down", 1u << ULNET_SELFTEST_NODE_DOWN },
		{ "invalid", (1u << ULNET_SELFTEST_NODE_BUSY) | (1u << ULNET_SELFTEST_NODE_UNKNOWN) |
			     (1u << ULNET_SELFTEST_NODE_DOWN) },
	};

	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
		if (!strcmp(s, st[i].name)) {
			*mask = st[i].mask;
			return 0;
		}
	return -EINVAL;
}

static int cmd_group_update(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *clean = NULL, *remove = NULL;
	bool refresh = false;
	const struct ulnetd_opt opts[] = {
		{ "--refresh", NULL, ULNETD_OPT_FLAG, 0, 0, &refresh },
		{ "--clean", NULL, ULNETD_OPT_STR, 0, 0, &clean },
		{ "--remove", NULL, ULNETD_OPT_STR, 0, 0, &remove },
	};
	struct ulnet_nid *nids = calloc(ADMIN_MAX_NIDS, sizeof(*nids));
	enum ulnet_selftest_update op;
	unsigned n = 0, mask = 0, changed = 0;
	char *pos[1], why[256];
	int npos, rc;

	if (!nids)
		return ulnetd_errorf(out, -ENOMEM, "update_group: out of memory");
	if ((rc = ulnetd_parse_args(out, "update_group", argc, argv, opts, 3, pos, 1, &npos)) ||
	    (rc = need_engine(d, out)))
		goto out;
	if (npos != 1 || refresh + !!clean + !!remove != 1) {
		rc = ulnetd_errorf(out, -EINVAL, "update_group: give NAME and one of --refresh, --clean STATE, --remove NIDs");
		goto out;
	}
	op = refresh ? ULNET_SELFTEST_UPDATE_REFRESH : clean ? ULNET_SELFTEST_UPDATE_CLEAN : ULNET_SELFTEST_UPDATE_REMOVE;
	if (clean && clean_states(clean, &mask)) {
		rc = ulnetd_errorf(out, -EINVAL, "update_group: --clean takes active, busy, unknown, down or invalid, not '%s'",
				   clean);
		goto out;
	}
	if (remove && (rc = parse_nids(out, "update_group", (char **)&remove, 1, nids, &n)))
		goto out;
	if ((rc = ulnet_selftest_group_update(ulnetd_sst_of(d), pos[0], op, mask, nids, n, &changed, why, sizeof(why)))) {
		rc = ulnetd_errorf(out, rc, "update_group: %s", why);
		goto out;
	}
	ulnetd_out_printf(out, "group %s: %u node(s) %s\n", pos[0], changed,
			  op == ULNET_SELFTEST_UPDATE_REFRESH ? "joined again" : "removed");
out:
	free(nids);
	return rc;
}

static void print_errors(void *arg, const struct ulnet_selftest_node_errors *e)
{
	struct ulnetd_out *out = arg;
	char nid[ULNET_NID_STRLEN];

	ulnet_nid_format(&e->nid, nid, sizeof(nid));
	if (!e->answered) {
		ulnetd_out_printf(out, "%s: no answer: %s\n", nid, e->why);
		return;
	}
	ulnetd_out_printf(out, "%s: [Session %u brw errors, %u ping errors] [RPC: %u errors, %u dropped, %u expired]\n",
			  nid, e->brw_errors, e->ping_errors, e->rpc_errors, e->rpcs_dropped, e->rpcs_expired);
	if (e->has_tests)
		ulnetd_out_printf(out, "%s: its client tests: timeout %u, mismatch %u, refused %u, peer gone %u\n", nid,
				  e->timeout, e->mismatch, e->refused, e->peer_gone);
}

/* lst show_error: the nodes with RPC errors. */
static int cmd_errors(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool session = false;
	const struct ulnetd_opt opts[] = { { "--session", NULL, ULNETD_OPT_FLAG, 0, 0, &session } };
	struct ulnet_nid *nids = calloc(ADMIN_MAX_NIDS, sizeof(*nids));
	struct ulnet_selftest_nodes who;
	char *pos[ADMIN_MAX_NIDS], why[256];
	unsigned nerr = 0;
	int npos, rc;

	if (!nids)
		return ulnetd_errorf(out, -ENOMEM, "show_error: out of memory");
	if ((rc = ulnetd_parse_args(out, "show_error", argc, argv, opts, 1, pos, ADMIN_MAX_NIDS, &npos)) ||
	    (rc = need_engine(d, out)) || (rc = parse_target(out, "show_error", pos, npos, NULL, nids, &who)))
		goto out;
	rc = ulnet_selftest_errors(ulnetd_sst_of(d), &who, session, print_errors, out, &nerr, why, sizeof(why));
	if (rc && rc != -EREMOTEIO) {
		rc = ulnetd_errorf(out, rc, "show_error: %s", why);
		goto out;
	}
	ulnetd_out_printf(out, "total %u error node(s) in %s%s\n", nerr, who.group ? "group " : "the NIDs given",
			  who.group ? who.group : "");
	if (rc)
		rc = ulnetd_errorf(out, rc, "show_error: %s", why);
out:
	free(nids);
	return rc;
}

struct query_print {
	struct ulnetd_out *out;
	bool all;
};

static void print_query_node(void *arg, const struct ulnet_nid *nid, const char *state)
{
	struct query_print *qp = arg;
	char b[ULNET_NID_STRLEN];

	if (qp->all)
		ulnetd_out_printf(qp->out, "%s %s\n", ulnet_nid_format(nid, b, sizeof(b)), state);
}

/* lst query: the state of each node of a batch, @loop times @delay_ms apart. */
static int cmd_batch_query(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	long long test = 0, timeout = 0, loop = 1, delay_ms = 1000;
	bool server = false, all = false;
	const struct ulnetd_opt opts[] = {
		{ "--test", NULL, ULNETD_OPT_INT, 1, 16, &test },
		{ "--server", NULL, ULNETD_OPT_FLAG, 0, 0, &server },
		{ "--timeout", NULL, ULNETD_OPT_INT, 1, 3600, &timeout },
		{ "--loop", NULL, ULNETD_OPT_INT, 1, 1000, &loop },
		{ "--delay-ms", NULL, ULNETD_OPT_INT, 100, 60000, &delay_ms },
		{ "--all", NULL, ULNETD_OPT_FLAG, 0, 0, &all },
	};
	struct query_print qp = { out, false };
	char *pos[1], why[256];
	unsigned down = 0;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "query", argc, argv, opts, 6, pos, 1, &npos)) || (rc = need_engine(d, out)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "query: give the batch NAME");
	qp.all = all;
	for (long long i = 0; i < loop; i++) {
		struct ulnet_selftest_query q;
		if (i) {
			if (ulnetd_out_flush(out))
				return -EPIPE; /* the console went away */
			usleep((useconds_t)delay_ms * 1000);
			if (ulnetd_stopping(d)) /* a daemon stopping waits for this handler */
				return ulnetd_errorf(out, -ESHUTDOWN, "query %s: the node is stopping", pos[0]);
		}
		if ((rc = ulnet_selftest_batch_query(ulnetd_sst_of(d), pos[0], (unsigned)test, server, (uint32_t)timeout,
						     print_query_node, &qp, &q, why, sizeof(why))))
			return ulnetd_errorf(out, rc, "query %s: %s", pos[0], why);
		ulnetd_out_printf(out, "batch %s%s%.0lld%s: %s; running %u, idle %u, unknown %u, down %u\n", pos[0],
				  test ? " test " : "", test, server ? " (servers)" : "",
				  q.running ? "running" : "idle", q.running, q.idle, q.unknown, q.down);
		down += q.down;
	}
	if (down)
		return ulnetd_errorf(out, -EREMOTEIO, "query %s: %u node answer(s) missing", pos[0], down);
	return 0;
}

static const char *loop_str(int32_t loop, char *b, size_t cap)
{
	if (loop < 0)
		snprintf(b, cap, "until stopped");
	else
		snprintf(b, cap, "%d", loop);
	return b;
}

struct test_print {
	struct ulnetd_out *out;
	const struct ulnet_selftest_batch_info *b; /* filled before the first test */
	bool header;
};

static void print_header(struct test_print *tp)
{
	if (!tp->header)
		ulnetd_out_printf(tp->out, "batch %s: %u test(s), %s\n", tp->b->name, tp->b->tests,
				  tp->b->running ? "running" : "idle");
	tp->header = true;
}

static void print_test(void *arg, const struct ulnet_selftest_test_info *t)
{
	struct test_print *tp = arg;
	struct ulnetd_out *out = tp->out;
	char lp[24], to[24];

	print_header(tp);
	snprintf(to, sizeof(to), "%u ms", t->t.rpc_timeout_ms);
	ulnetd_out_printf(out, "test %u: %s", t->index, t->t.kind == ULNET_SELFTEST_PING ? "ping" : "brw");
	if (t->t.kind == ULNET_SELFTEST_BRW)
		ulnetd_out_printf(out, " %s size=%u off=%u check=%s", t->t.write ? "write" : "read", t->t.size, t->t.offset,
				  ulnet_selftest_check_name(t->t.check));
	ulnetd_out_printf(out, ", loop %s, concurrency %u, distribute %u:%u, RPC timeout %s; from %s (%u node(s)) to %s "
			  "(%u node(s))\n", loop_str(t->loop, lp, sizeof(lp)), t->t.concurrency, t->dist, t->span,
			  t->t.rpc_timeout_ms ? to : "64 s (lnet_selftest's)", t->from, t->nclients, t->to, t->nservers);
}

struct node_print {
	struct ulnetd_out *out;
	const char *role;
};

static void print_test_node(void *arg, const struct ulnet_nid *nid)
{
	struct node_print *np = arg;
	char b[ULNET_NID_STRLEN];

	ulnetd_out_printf(np->out, "  %s %s\n", np->role, ulnet_nid_format(nid, b, sizeof(b)));
}

/* list_batch NAME [--test N] [--server]: the batch's tests; with --test, that test's nodes too. */
int ulnetd_lst_batch_detail(struct ulnetd *d, const char *name, unsigned test, bool server, struct ulnetd_out *out)
{
	struct ulnet_selftest_batch_info b = { .tests = 0 };
	struct test_print tp = { out, &b, false };
	struct node_print np = { out, server ? "server" : "client" };
	char why[256];
	int rc;

	if ((rc = ulnet_selftest_batch_tests(ulnetd_sst_of(d), name, test, &b, print_test, &tp, why, sizeof(why))))
		return ulnetd_errorf(out, rc, "list_batch: %s", why);
	print_header(&tp); /* a batch without tests */
	if (test && (rc = ulnet_selftest_test_nodes(ulnetd_sst_of(d), name, test, server, print_test_node, &np, why,
						    sizeof(why))))
		return ulnetd_errorf(out, rc, "list_batch: %s", why);
	return 0;
}

static const struct ulnetd_cmd admin_cmds[] = {
	{ "selftest node ping", "GROUP | --nodes NID[,NID...] [--timeout SEC]",
	  "lst ping: each node's state (active, busy, unknown, down); exit 1 when one is down", cmd_ping },
	{ "selftest node errors", "GROUP | NID[,NID...] [--session]",
	  "lst show_error: the nodes with RPC errors (--session: the session counters only)", cmd_errors },
	{ "selftest group del", "NAME", "lst del_group (refused while a batch uses it)", cmd_group_del },
	{ "selftest group update", "NAME --refresh | --clean active|busy|unknown|down|invalid | --remove NID[,NID...]",
	  "lst update_group (refused while a batch uses it)", cmd_group_update },
	{ "selftest batch query", "NAME [--test N] [--server] [--timeout SEC] [--loop N] [--delay-ms N] [--all]",
	  "lst query: how many nodes of the batch run it (--all: each node)", cmd_batch_query },
};

int ulnetd_lst_admin_register(struct ulnetd *d)
{
	return ulnetd_cmd_register(d, admin_cmds, sizeof(admin_cmds) / sizeof(admin_cmds[0]));
}
