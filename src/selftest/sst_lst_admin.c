/* SPDX-License-Identifier: MIT */
/* lst's node administration on the console's session (include/ulnet/selftest.h): ping, del_group,
 * update_group (refresh, clean, remove) and show_error. The lock rule is sst_lst.h's: copy under the
 * lock, talk to the nodes without it, commit under it after checking the session generation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulnet/ulnet.h"
#include "sst_lst.h"

/* Per-node scratch of one command: the RPC outcome and its line. */
struct admin_scratch {
	struct lst_group g;
	int rc[LST_MAX_NODES];
	char line[LST_MAX_NODES][256];
	struct ulnet_sst_con_stat st[LST_MAX_NODES];
};

static struct admin_scratch *scratch_new(char *why, size_t whylen)
{
	struct admin_scratch *s = calloc(1, sizeof(*s));

	if (!s)
		snprintf(why, whylen, "out of memory");
	return s;
}

/* DEBUG to every node of @s->g at once, sent even to nodes known down (an explicit ask). */
static void ping_all(struct ulnet_sst_con *c, struct admin_scratch *s)
{
	struct node_fan nf = { c, s->g.nodes, NODE_PING, false, s->rc, s->line, NULL, NULL, 0, false, 0, 0 };

	c->probe = true;
	lst_fanout(s->g.n, lst_node_one, &nf);
}

int ulnet_selftest_ping(ulnet_selftest *st, const struct ulnet_selftest_nodes *who, uint32_t timeout_s,
			void (*fn)(void *arg, const struct ulnet_nid *nid, enum ulnet_selftest_node_state s,
				   const char *detail),
			void *arg, unsigned *down, char *why, size_t whylen)
{
	struct admin_scratch *s = scratch_new(why, whylen);
	struct ulnet_sst_con c;
	int rc;

	*down = 0;
	if (!s)
		return -ENOMEM;
	if (timeout_s > 3600) {
		snprintf(why, whylen, "RPC timeout %u s is not in 1..3600", timeout_s);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = lst_nodes_snapshot(&st->lst, who, false, &s->g, &c, why, whylen)))
		goto out;
	if (timeout_s)
		c.rpc_timeout_ms = timeout_s * 1000;
	ping_all(&c, s);
	for (unsigned i = 0; i < s->g.n; i++) {
		enum ulnet_selftest_node_state ns = lst_ping_state(s->rc[i]);
		*down += ns == ULNET_SELFTEST_NODE_DOWN;
		fn(arg, &s->g.nodes[i].nid, ns, ns == ULNET_SELFTEST_NODE_ACTIVE ? "" : s->line[i]);
	}
out:
	free(s);
	return rc;
}

/* Is group index @gi used by a test of a batch? Names the first user in @why. With the lock held. */
static int group_in_use(const struct lst_session *ls, int gi, char *why, size_t whylen)
{
	for (unsigned b = 0; b < ls->nbatches; b++)
		for (unsigned t = 0; t < ls->batches[b]->ntests; t++)
			if (ls->batches[b]->tests[t].from == gi || ls->batches[b]->tests[t].to == gi) {
				snprintf(why, whylen, "group '%s' is used by test %u of batch '%s' (groups in a batch "
					 "stay until end_session)", ls->groups[gi]->name, t + 1, ls->batches[b]->name);
				return -EBUSY;
			}
	return 0;
}

/* The session's group @name, which no batch uses (a change to it now would change a test): its
 * index in *@gi, or the reason in @why. Under ls->lock. */
static int group_to_change(const struct lst_session *ls, const char *name, int *gi, char *why, size_t whylen)
{
	int rc = lst_need_session(ls, why, whylen);

	if (rc)
		return rc;
	if ((*gi = lst_group_find(ls, name)) < 0) {
		snprintf(why, whylen, "no group '%s' in session %s", name, ls->con.name);
		return -ENOENT;
	}
	return group_in_use(ls, *gi, why, whylen);
}

/* Is @id in a group other than @except? With the lock held. */
static bool in_other_group(const struct lst_session *ls, int except, const struct ulnet_process_id *id)
{
	for (unsigned i = 0; i < ls->ngroups; i++)
		for (unsigned k = 0; (int)i != except && k < ls->groups[i]->n; k++)
			if (ulnet_nid_equal(&ls->groups[i]->nodes[k].nid, &id->nid))
				return true;
	return false;
}

/* Drop @id from the session's joined nodes. With the lock held. */
static void unjoin(struct lst_session *ls, const struct ulnet_process_id *id)
{
	int j = lst_joined_index(ls, id);

	if (j >= 0)
		ls->joined[j] = ls->joined[--ls->njoined];
}

/* Tell the nodes @ids that left the session (RMSN to each at once); the count that answered. */
static unsigned leave_all(struct ulnet_sst_con *c, const struct ulnet_process_id *ids, unsigned n,
			  struct admin_scratch *s)
{
	struct node_fan nf = { c, ids, NODE_LEAVE, false, s->rc, s->line, NULL, NULL, 0, false, 0, 0 };
	unsigned ok = 0;

	lst_fanout(n, lst_node_one, &nf);
	for (unsigned i = 0; i < n; i++)
		ok += !s->rc[i];
	return ok;
}

int ulnet_selftest_group_del(ulnet_selftest *st, const char *name, unsigned *left, char *why, size_t whylen)
{
	struct lst_session *ls = &st->lst;
	struct admin_scratch *s = scratch_new(why, whylen);
	struct ulnet_process_id *gone = NULL;
	struct ulnet_sst_con c;
	unsigned ngone = 0;
	int rc, gi;

	*left = 0;
	if (!s)
		return -ENOMEM;
	if (!lst_name_ok(name)) {
		rc = lst_bad_name(name, why, whylen);
		goto out;
	}
	if (!(gone = calloc(LST_MAX_NODES, sizeof(*gone)))) {
		snprintf(why, whylen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&ls->lock);
	if (!(rc = group_to_change(ls, name, &gi, why, whylen))) {
		struct lst_group *g = ls->groups[gi];
		for (unsigned k = 0; k < g->n; k++)
			if (!in_other_group(ls, gi, &g->nodes[k]) && lst_joined_index(ls, &g->nodes[k]) >= 0) {
				gone[ngone++] = g->nodes[k]; /* only a joined node has our session to leave */
				unjoin(ls, &g->nodes[k]);
			}
		/* tests name groups by index: the groups after it move down one */
		for (unsigned b = 0; b < ls->nbatches; b++)
			for (unsigned t = 0; t < ls->batches[b]->ntests; t++) {
				ls->batches[b]->tests[t].from -= ls->batches[b]->tests[t].from > gi;
				ls->batches[b]->tests[t].to -= ls->batches[b]->tests[t].to > gi;
			}
		memmove(&ls->groups[gi], &ls->groups[gi + 1], (ls->ngroups - (unsigned)gi - 1) * sizeof(ls->groups[0]));
		ls->ngroups--;
		free(g);
		c = ls->con;
	}
	pthread_mutex_unlock(&ls->lock);
	if (!rc && ngone)
		*left = leave_all(&c, gone, ngone, s);
out:
	free(gone);
	free(s);
	return rc;
}

/* What update_group commits: the group's new node list, and the nodes that joined or left. */
struct update_plan {
	struct lst_group g;             /* the group as the command found it */
	bool keep[LST_MAX_NODES];
	bool joined[LST_MAX_NODES];     /* refresh: joined now */
	uint32_t feats[LST_MAX_NODES];
};

struct rejoin_fan {
	struct ulnet_sst_con *c;
	bool force;
	struct update_plan *p;
	struct admin_scratch *s;
};

static void rejoin_one(void *arg, unsigned i)
{
	struct rejoin_fan *f = arg;

	if (!f->p->joined[i]) /* only the nodes that were not active */
		f->s->rc[i] = ulnet__sst_con_join(f->c, &f->p->g.nodes[i], f->force, &f->p->feats[i], f->s->line[i],
						  sizeof(f->s->line[i]));
}

/* The states update_group --clean takes; "invalid" is every state but active, as lst's. */
static int plan_update(struct ulnet_sst_con *c, bool force, enum ulnet_selftest_update op, unsigned states,
		       const struct ulnet_nid *nids, unsigned n, struct update_plan *p, struct admin_scratch *s,
		       unsigned *changed, char *why, size_t whylen)
{
	char nid[ULNET_NID_STRLEN];

	for (unsigned k = 0; k < p->g.n; k++)
		p->keep[k] = true;
	if (op == ULNET_SELFTEST_UPDATE_REMOVE) {
		for (unsigned i = 0; i < n; i++) {
			unsigned k = 0;
			while (k < p->g.n && !ulnet_nid_equal(&p->g.nodes[k].nid, &nids[i]))
				k++;
			if (k == p->g.n) {
				snprintf(why, whylen, "node %s is not in group %s", ulnet_nid_format(&nids[i], nid, sizeof(nid)),
					 p->g.name);
				return -ENOENT;
			}
			*changed += p->keep[k];
			p->keep[k] = false;
		}
		return 0;
	}
	s->g = p->g;
	ping_all(c, s); /* every node's state now */
	if (op == ULNET_SELFTEST_UPDATE_CLEAN) {
		for (unsigned k = 0; k < p->g.n; k++)
			if (states & (1u << lst_ping_state(s->rc[k]))) {
				p->keep[k] = false;
				(*changed)++;
			}
		return 0;
	}
	/* refresh: the nodes that are not active join again, at once */
	{
		struct rejoin_fan rf = { c, force, p, s };
		for (unsigned k = 0; k < p->g.n; k++)
			p->joined[k] = !s->rc[k];
		lst_fanout(p->g.n, rejoin_one, &rf); /* probe still set: a node known down is asked too */
		for (unsigned k = 0; k < p->g.n; k++)
			if (!p->joined[k] && !s->rc[k]) {
				p->joined[k] = true;
				(*changed)++;
			} else {
				p->joined[k] = false; /* already in: nothing to commit */
			}
	}
	return 0;
}

int ulnet_selftest_group_update(ulnet_selftest *st, const char *name, enum ulnet_selftest_update op, unsigned states,
				const struct ulnet_nid *nids, unsigned n, unsigned *changed, char *why, size_t whylen)
{
	struct lst_session *ls = &st->lst;
	struct admin_scratch *s = scratch_new(why, whylen);
	struct update_plan *p = calloc(1, sizeof(*p));
	struct ulnet_process_id *gone = calloc(LST_MAX_NODES, sizeof(*gone));
	struct ulnet_sst_con c;
	unsigned ngone = 0;
	uint64_t gen = 0;
	bool force = false;
	int rc, gi;

	*changed = 0;
	if (!s || !p || !gone) {
		snprintf(why, whylen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	if (!lst_name_ok(name)) {
		rc = lst_bad_name(name, why, whylen);
		goto out;
	}
	if (op < ULNET_SELFTEST_UPDATE_REFRESH || op > ULNET_SELFTEST_UPDATE_REMOVE ||
	    (op == ULNET_SELFTEST_UPDATE_CLEAN && (!states || states >= 1u << (ULNET_SELFTEST_NODE_DOWN + 1))) ||
	    (op == ULNET_SELFTEST_UPDATE_REMOVE && (!n || n > LST_MAX_NODES))) {
		snprintf(why, whylen, "give one of --refresh, --clean STATE, --remove NID...");
		rc = -EINVAL;
		goto out;
	}
	pthread_mutex_lock(&ls->lock);
	if (!(rc = group_to_change(ls, name, &gi, why, whylen))) {
		p->g = *ls->groups[gi];
		c = ls->con;
		gen = ls->gen;
		force = ls->force;
	}
	pthread_mutex_unlock(&ls->lock);
	if (rc || (rc = plan_update(&c, force, op, states, nids, n, p, s, changed, why, whylen)))
		goto out;
	pthread_mutex_lock(&ls->lock);
	if ((rc = lst_same_session(ls, gen, why, whylen))) {
	} else if ((gi = lst_group_find(ls, name)) < 0) {
		snprintf(why, whylen, "group '%s' was deleted while the command ran", name);
		rc = -ESTALE;
	} else if (!(rc = group_in_use(ls, gi, why, whylen))) {
		struct lst_group *g = ls->groups[gi];
		unsigned m = 0;
		/* commit against the group as it is now: only the nodes the plan saw are touched */
		for (unsigned k = 0; k < g->n; k++) {
			unsigned j = 0;
			while (j < p->g.n && !ulnet_nid_equal(&p->g.nodes[j].nid, &g->nodes[k].nid))
				j++;
			if (j < p->g.n && p->joined[j] && lst_joined_index(ls, &g->nodes[k]) < 0 &&
			    ls->njoined < LST_MAX_NODES)
				ls->joined[ls->njoined++] = (struct lst_joined){ g->nodes[k], p->feats[j] };
			if (j == p->g.n || p->keep[j]) {
				g->nodes[m++] = g->nodes[k];
				continue;
			}
			if (!in_other_group(ls, gi, &g->nodes[k])) {
				/* only an active node is in this session (a busy one is another console's): removed,
				 * or cleaned as active, it is told to leave */
				if (lst_joined_index(ls, &g->nodes[k]) >= 0 &&
				    (op == ULNET_SELFTEST_UPDATE_REMOVE || (op == ULNET_SELFTEST_UPDATE_CLEAN && !s->rc[j])))
					gone[ngone++] = g->nodes[k];
				unjoin(ls, &g->nodes[k]);
			}
		}
		g->n = m;
	}
	pthread_mutex_unlock(&ls->lock);
	if (!rc && ngone)
		(void)leave_all(&c, gone, ngone, s);
out:
	free(s);
	free(p);
	free(gone);
	return rc;
}

/* A STAT to each node, and the extended one (a ulnet node's client test errors), at once. */
struct err_fan {
	struct node_fan plain, ext;
	unsigned n;
};

static void err_one(void *arg, unsigned i)
{
	struct err_fan *f = arg;

	lst_node_one(i < f->n ? &f->plain : &f->ext, i < f->n ? i : i - f->n);
}

int ulnet_selftest_errors(ulnet_selftest *st, const struct ulnet_selftest_nodes *who, bool session_only,
			  void (*fn)(void *arg, const struct ulnet_selftest_node_errors *e), void *arg, unsigned *nerr,
			  char *why, size_t whylen)
{
	struct admin_scratch *s = scratch_new(why, whylen), *x = scratch_new(why, whylen);
	struct ulnet_sst_con c;
	int rc;

	*nerr = 0;
	if (!s || !x) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = lst_nodes_snapshot(&st->lst, who, true, &s->g, &c, why, whylen)))
		goto out;
	{
		struct err_fan ef = { { &c, s->g.nodes, NODE_STAT, false, s->rc, s->line, s->st, NULL, 0, false, 0, 0 },
				      { &c, s->g.nodes, NODE_STAT, true, x->rc, x->line, x->st, NULL, 0, false, 0, 0 },
				      s->g.n };
		lst_fanout(2 * s->g.n, err_one, &ef);
	}
	for (unsigned i = 0; i < s->g.n; i++) {
		struct ulnet_selftest_node_errors e = { .nid = s->g.nodes[i].nid };
		const struct ulnet_sst_stat_reply *r = &s->st[i].plain;
		bool bad;

		if (s->rc[i]) {
			snprintf(e.why, sizeof(e.why), "%.150s", s->line[i]);
			(*nerr)++;
			fn(arg, &e);
			continue;
		}
		e.answered = true;
		e.brw_errors = r->fw.brw_errors;
		e.ping_errors = r->fw.ping_errors;
		e.rpc_errors = r->rpc.errors;
		e.rpcs_dropped = r->rpc.rpcs_dropped;
		e.rpcs_expired = r->rpc.rpcs_expired;
		if (!x->rc[i] && x->st[i].ext && x->st[i].x.ntests) {
			const struct ulnet_sst_stat_ext *xe = &x->st[i].x;
			e.has_tests = true;
			e.timeout = xe->timeout;
			e.mismatch = xe->mismatch;
			e.refused = xe->refused;
			e.peer_gone = xe->peer_gone;
		}
		bad = e.brw_errors || e.ping_errors || e.timeout || e.mismatch || e.refused || e.peer_gone ||
		      (!session_only && (e.rpc_errors || e.rpcs_dropped || e.rpcs_expired));
		if (bad) {
			(*nerr)++;
			fn(arg, &e);
		}
	}
	if (*nerr) {
		snprintf(why, whylen, "%u node(s) with errors or no answer", *nerr);
		rc = -EREMOTEIO;
	}
out:
	free(s);
	free(x);
	return rc;
}
