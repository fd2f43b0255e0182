/* SPDX-License-Identifier: MIT */
/* lst's batch inspection (include/ulnet/selftest.h): query (the state of each node of a batch, asked
 * with BATCH QUERY) and list_batch NAME (the tests of a batch and their nodes, from the console's own
 * record). The lock rule is sst_lst.h's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulnet/ulnet.h"
#include "sst_lst.h"

/* A batch and the groups of its tests, copied under the lock. */
struct batch_copy {
	struct lst_batch b;
	struct ulnet_sst_con con;
	struct lst_group from[LST_MAX_TESTS], to[LST_MAX_TESTS];
};

static int batch_copy(struct lst_session *ls, const char *name, unsigned test, struct batch_copy *bc, char *why,
		      size_t whylen)
{
	int rc, bi;

	pthread_mutex_lock(&ls->lock);
	if ((rc = lst_need_session(ls, why, whylen))) {
	} else if ((bi = lst_batch_find(ls, name)) < 0) {
		snprintf(why, whylen, "no batch '%s' in session %s", name, ls->con.name);
		rc = -ENOENT;
	} else if (test > ls->batches[bi]->ntests) {
		snprintf(why, whylen, "batch '%s' has no test %u (it has %u)", name, test, ls->batches[bi]->ntests);
		rc = -ENOENT;
	} else {
		bc->b = *ls->batches[bi];
		bc->con = ls->con;
		for (unsigned t = 0; t < bc->b.ntests; t++) {
			bc->from[t] = *ls->groups[bc->b.tests[t].from];
			bc->to[t] = *ls->groups[bc->b.tests[t].to];
		}
	}
	pthread_mutex_unlock(&ls->lock);
	return rc;
}

static bool group_has(const struct lst_group *g, const struct ulnet_nid *nid)
{
	for (unsigned k = 0; k < g->n; k++)
		if (ulnet_nid_equal(&g->nodes[k].nid, nid))
			return true;
	return false;
}

/* The number a node gives its entry of test @t (0-based) of the batch: a node numbers the TEST requests
 * of a batch in the order they came, and each add_test sends the server entries before the client ones.
 * @server: the server entry's number, else the client entry's. */
static uint32_t node_test_index(const struct batch_copy *bc, unsigned t, const struct ulnet_nid *nid, bool server)
{
	uint32_t idx = 0;

	for (unsigned k = 0; k < t; k++)
		idx += group_has(&bc->from[k], nid) + group_has(&bc->to[k], nid);
	if (!server && group_has(&bc->to[t], nid))
		idx++;
	return idx + 1;
}

struct query_fan {
	struct ulnet_sst_con *c;
	uint64_t bid;
	const struct ulnet_process_id *ids;
	const uint32_t *testidx;
	int *rc;
	uint32_t *active;
	char (*line)[256];
};

static void query_one(void *arg, unsigned i)
{
	struct query_fan *f = arg;

	f->rc[i] = ulnet__sst_con_query(f->c, &f->ids[i], f->bid, f->testidx[i], &f->active[i], f->line[i],
					sizeof(f->line[i]));
}

struct query_scratch {
	struct batch_copy bc;
	unsigned n;
	struct ulnet_process_id ids[LST_MAX_NODES];
	uint32_t testidx[LST_MAX_NODES], active[LST_MAX_NODES];
	int rc[LST_MAX_NODES];
	char line[LST_MAX_NODES][256];
};

/* Add @g's nodes not yet in @q (test @t's entry number on each; 0 for every test). */
static void add_nodes(struct query_scratch *q, const struct lst_group *g, int t, bool server)
{
	for (unsigned k = 0; k < g->n; k++) {
		bool seen = false;
		for (unsigned j = 0; j < q->n && !seen; j++)
			seen = ulnet_nid_equal(&q->ids[j].nid, &g->nodes[k].nid);
		if (seen || q->n == LST_MAX_NODES)
			continue;
		q->testidx[q->n] = t < 0 ? 0 : node_test_index(&q->bc, (unsigned)t, &g->nodes[k].nid, server);
		q->ids[q->n++] = g->nodes[k];
	}
}

int ulnet_selftest_batch_query(ulnet_selftest *st, const char *name, unsigned test, bool server, uint32_t timeout_s,
			       void (*fn)(void *arg, const struct ulnet_nid *nid, const char *state), void *arg,
			       struct ulnet_selftest_query *qr, char *why, size_t whylen)
{
	struct query_scratch *q = calloc(1, sizeof(*q));
	int rc;

	memset(qr, 0, sizeof(*qr));
	if (!q) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (timeout_s > 3600) {
		snprintf(why, whylen, "RPC timeout %u s is not in 1..3600", timeout_s);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = batch_copy(&st->lst, name, test, &q->bc, why, whylen)))
		goto out;
	if (!q->bc.b.ntests) {
		snprintf(why, whylen, "batch '%s' has no test", name);
		rc = -ENOENT;
		goto out;
	}
	if (timeout_s)
		q->bc.con.rpc_timeout_ms = timeout_s * 1000;
	for (unsigned t = 0; t < q->bc.b.ntests; t++)
		if (!test || t + 1 == test)
			add_nodes(q, server ? &q->bc.to[t] : &q->bc.from[t], test ? (int)t : -1, server);
	{
		struct query_fan qf = { &q->bc.con, q->bc.b.bid, q->ids, q->testidx, q->rc, q->active, q->line };
		lst_fanout(q->n, query_one, &qf);
	}
	for (unsigned i = 0; i < q->n; i++) {
		const char *state;
		if (!q->rc[i] && q->active[i]) {
			state = "running";
			qr->running++;
		} else if (!q->rc[i]) {
			state = "idle";
			qr->idle++;
		} else if (lst_unreachable(q->rc[i])) {
			state = "down";
			qr->down++;
		} else {
			state = "unknown"; /* answered: not in this session, or does not have the batch */
			qr->unknown++;
		}
		fn(arg, &q->ids[i].nid, state);
	}
out:
	free(q);
	return rc;
}

int ulnet_selftest_batch_tests(ulnet_selftest *st, const char *name, unsigned test, struct ulnet_selftest_batch_info *b,
			       void (*fn)(void *arg, const struct ulnet_selftest_test_info *t), void *arg, char *why,
			       size_t whylen)
{
	struct batch_copy *bc = calloc(1, sizeof(*bc));
	int rc;

	if (!bc) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (!(rc = batch_copy(&st->lst, name, test, bc, why, whylen))) {
		snprintf(b->name, sizeof(b->name), "%s", bc->b.name);
		b->tests = bc->b.ntests;
		b->running = bc->b.running;
		for (unsigned t = 0; t < bc->b.ntests; t++) {
			const struct lst_test *lt = &bc->b.tests[t];
			struct ulnet_selftest_test_info ti = { .index = t + 1 };
			if (test && t + 1 != test)
				continue;
			ti.t.kind = lt->t.service == ULNET_SST_SVC_PING ? ULNET_SELFTEST_PING : ULNET_SELFTEST_BRW;
			ti.t.write = lt->t.rw == ULNET_SST_BRW_WRITE;
			ti.t.size = lt->t.size;
			ti.t.offset = lt->t.offset;
			ti.t.check = (enum ulnet_selftest_check)lt->t.check;
			ti.t.concurrency = lt->t.concurrency;
			ti.t.rpc_timeout_ms = lt->t.rpc_timeout_ms;
			ti.loop = lt->t.loop;
			ti.dist = lt->dist;
			ti.span = lt->span;
			snprintf(ti.from, sizeof(ti.from), "%s", bc->from[t].name);
			snprintf(ti.to, sizeof(ti.to), "%s", bc->to[t].name);
			ti.nclients = bc->from[t].n;
			ti.nservers = bc->to[t].n;
			fn(arg, &ti);
		}
	}
	free(bc);
	return rc;
}

int ulnet_selftest_test_nodes(ulnet_selftest *st, const char *name, unsigned test, bool server,
			      void (*fn)(void *arg, const struct ulnet_nid *nid), void *arg, char *why, size_t whylen)
{
	struct batch_copy *bc = calloc(1, sizeof(*bc));
	int rc;

	if (!bc) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (!test) {
		snprintf(why, whylen, "give the test's number (1..)");
		rc = -EINVAL;
	} else if (!(rc = batch_copy(&st->lst, name, test, bc, why, whylen))) {
		const struct lst_group *g = server ? &bc->to[test - 1] : &bc->from[test - 1];
		for (unsigned k = 0; k < g->n; k++)
			fn(arg, &g->nodes[k].nid);
	}
	free(bc);
	return rc;
}
