/* SPDX-License-Identifier: MIT */
/* ulnetd's lst-style selftest commands (docs/selftest.md): lst's named session, groups and batches,
 * kept here so that separate console invocations share them (as lst keeps them in the console node's
 * kernel), with the pinger that keeps the session alive on every node. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control_selftest.h"

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
	uint32_t joined_feats[CON_MAX_NODES]; /* what each announced at join (ULNET_SST_NODE_*; 0: kernel) */
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

static int joined_index(const struct ulnet_process_id *id)
{
	for (unsigned i = 0; i < cs.njoined; i++)
		if (ulnet_nid_equal(&cs.joined[i].nid, &id->nid))
			return (int)i;
	return -1;
}

static bool joined(const struct ulnet_process_id *id)
{
	return joined_index(id) >= 0;
}

/* The ulnet features @id announced when it joined; 0 (a kernel node) when unknown. */
static uint32_t joined_feats(const struct ulnet_process_id *id)
{
	int i = joined_index(id);

	return i < 0 ? 0 : cs.joined_feats[i];
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
	if (!ulnetd_sst_of(d))
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
	cs.con.sst = ulnetd_sst_of(d);
	cs.con.sid.nid = ulnet__sst_console_nid4(cs.con.sst);
	cs.con.sid.stamp = ulnetd_sst_real_ms();
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
		rc = ulnet__sst_con_join(&cs.con, &g->nodes[k], cs.force, &cs.joined_feats[cs.njoined], why,
					 sizeof(why));
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
	char *pos[8], why[512];
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
			if (ulnetd_sst_check_parse(w + 6, &ct.t.check))
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
	/* before anything is sent: no client node that may be a kernel node gets an offset it cannot survive */
	for (unsigned i = 0; ct.t.service == ULNET_SST_SVC_BRW && i < cs.groups[fg]->n; i++) {
		const struct ulnet_process_id *id = &cs.groups[fg]->nodes[i];
		char nid[ULNET_NID_STRLEN];
		if (!(joined_feats(id) & ULNET_SST_NODE_ANY_OFFSET) &&
		    ulnet__sst_kernel_offset_check(ct.t.size, ct.t.offset, why, sizeof(why))) {
			rc = ulnetd_errorf(out, -EINVAL, "add_test: client %s is not known to be a ulnet node: %s",
					   ulnet_nid_format(&id->nid, nid, sizeof(nid)), why);
			goto out;
		}
	}
	{
		const struct con_group *src = cs.groups[fg], *dst = cs.groups[tg];
		/* lst: servers first, each asked for buffers for the units that may aim at it */
		unsigned ndist = (src->n + ct.dist - 1) / ct.dist, nspan = (dst->n + ct.span - 1) / ct.span;
		unsigned nmax = (ndist + nspan - 1) / nspan;
		struct ulnet_sst_con_test st = ct.t;
		st.loop = (int32_t)(nmax * ct.dist * ct.t.concurrency);
		for (unsigned k = 0; k < dst->n; k++)
			if ((rc = ulnet__sst_con_test_add(&cs.con, &dst->nodes[k], b->bid, &st, false, 0, NULL, 0, why,
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
			if ((rc = ulnet__sst_con_test_add(&cs.con, &src->nodes[i], b->bid, &ct.t, true,
							  joined_feats(&src->nodes[i]), dests, ct.span,
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

/* @force: where --force goes (NULL: the command takes no option). */
static int batch_lookup(struct ulnetd_out *out, const char *cmd, int argc, char **argv, bool *force,
			struct con_batch **bp)
{
	const struct ulnetd_opt opts[] = { { "--force", NULL, ULNETD_OPT_FLAG, 0, 0, force } };
	char *pos[1];
	int npos, rc, bi;

	if ((rc = ulnetd_parse_args(out, cmd, argc, argv, opts, force ? 1 : 0, pos, 1, &npos)))
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
	if ((rc = batch_lookup(out, "run", argc, argv, NULL, &b)))
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
	b->run_ms = ulnetd_sst_mono_ms();
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
			srv_bytes += ulnetd_sst_bulk_bytes(&s) - ulnetd_sst_bulk_bytes(&cb->s);
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
			ulnetd_sst_derive_result(&s0, &s1, ct->t.service, srv_ok && nc == 1 && cb && cb->ok, srv_bytes,
				      (ulnetd_sst_mono_ms() - b->run_ms) / 1000.0, &o);
			if (!s1.ext && !(cb && cb->ok)) {
				o.source = "no counters from the start of the batch";
				o.bytes_na = o.lat_na = true;
			}
		}
		if (ntests > 1) /* the extended stats sum the node's tests in this batch */
			snprintf(o.to, sizeof(o.to), "group %s (+%u more tests of batch %s)", cs.groups[ct->to]->name,
				 ntests - 1, b->name);
		all_ok &= !o.r.timeout && !o.r.mismatch && !o.r.refused && !o.r.peer_gone && !o.unclassified;
		ulnetd_sst_result_json(out, &o, false);
	}
	return all_ok;
}

static int cmd_batch_stop(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	struct ulnet_process_id cli[CON_MAX_NODES];
	struct con_batch *b;
	char why[256];
	unsigned nc;
	uint64_t until, wait_ms = cs.con.rpc_timeout_ms;
	bool force = false;
	int rc;

	(void)d;
	pthread_mutex_lock(&cs.lock);
	if ((rc = batch_lookup(out, "stop", argc, argv, &force, &b)))
		goto out;
	nc = batch_nodes(b, false, cli, CON_MAX_NODES);
	for (unsigned i = 0; i < nc; i++)
		(void)ulnet__sst_con_batch(&cs.con, &cli[i], b->bid, ULNET_SST_BATCH_STOP, force, NULL, why,
					   sizeof(why));
	/* without force, RPCs in flight finish or time out on the clients: wait for that, and a little more */
	for (unsigned t = 0; !force && t < b->ntests; t++) {
		uint32_t rpc_ms = b->tests[t].t.rpc_timeout_ms ? b->tests[t].t.rpc_timeout_ms : 64000;
		if (rpc_ms > wait_ms)
			wait_ms = rpc_ms;
	}
	until = ulnetd_sst_mono_ms() + wait_ms + 2000;
	for (unsigned i = 0; i < nc; i++) {
		uint32_t active = 1;
		while (!ulnet__sst_con_batch(&cs.con, &cli[i], b->bid, ULNET_SST_BATCH_QUERY, 0, &active, why,
					     sizeof(why)) && active && ulnetd_sst_mono_ms() < until)
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
	t0 = ulnetd_sst_mono_ms();
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
		s = (ulnetd_sst_mono_ms() - t0) / 1000.0;
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

static const struct ulnetd_cmd lst_cmds[] = {
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
	{ "selftest batch stop", "NAME [--force]",
	  "lst stop (--force aborts RPCs in flight), then one JSON result per client node", cmd_batch_stop },
	{ "selftest test add", "--batch B --from G --to G [--loop N] [--concurrency N] [--distribute x:y] "
			       "[--timeout SEC] brw [read|write] [size=S] [off=O] [check=C] | ping",
	  "lst add_test", cmd_test_add },
};

/* Runs before sst_on_close (hooks run last registered first): the engine still sends. */
void ulnetd_lst_on_close(struct ulnetd *d, void *arg)
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

int ulnetd_lst_register(struct ulnetd *d)
{
	return ulnetd_cmd_register(d, lst_cmds, sizeof(lst_cmds) / sizeof(lst_cmds[0]));
}
