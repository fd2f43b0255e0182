/* SPDX-License-Identifier: MIT */
/* The lst console (include/ulnet/selftest.h): lst's named session, groups and batches, kept in the
 * library so that separate console invocations share them (as lst keeps them in the console node's
 * kernel), with the pinger that keeps the session alive on every node. The lock rule is in sst_lst.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ulnet/ulnet.h"
#include "clock.h"
#include "sst_lst.h"

uint64_t lst_mono_ms(void)
{
	return ulnet__now_ns() / 1000000u;
}

bool lst_con_init(struct ulnet_sst *sst, const char *name, uint32_t rpc_timeout_ms, struct ulnet_sst_con *con)
{
	memset(con, 0, sizeof(*con));
	con->sst = sst;
	con->sid.nid = ulnet__sst_console_nid4(sst);
	con->sid.stamp = (int64_t)(ulnet__wall_ns() / 1000000u);
	con->feats = ULNET_SST_FEAT_BULK_LEN;
	con->rpc_timeout_ms = rpc_timeout_ms;
	snprintf(con->name, sizeof(con->name), "%s", name);
	return con->sid.nid != 0;
}

/* ---- per-node RPCs in parallel ---- */

#define LST_FANOUT_THREADS 32

struct lst_fanout {
	void (*fn)(void *arg, unsigned i);
	void *arg;
	unsigned n, next; /* next: taken atomically */
};

static void *fanout_worker(void *arg)
{
	struct lst_fanout *f = arg;

	for (unsigned i; (i = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED)) < f->n;)
		f->fn(f->arg, i);
	return NULL;
}

/* fn(arg, i) for every i < n, on up to LST_FANOUT_THREADS threads: a command on a group waits for its
 * nodes at once, so down nodes cost the RPC timeout once, not once each. No lock may be held. */
void lst_fanout(unsigned n, void (*fn)(void *arg, unsigned i), void *arg)
{
	struct lst_fanout f = { fn, arg, n, 0 };
	pthread_t th[LST_FANOUT_THREADS];
	unsigned nt = 0;

	while (nt + 1 < n && nt < LST_FANOUT_THREADS && !pthread_create(&th[nt], NULL, fanout_worker, &f))
		nt++;
	fanout_worker(&f); /* the caller works too (and alone if no thread could start) */
	for (unsigned i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
}

static void info_of(const struct lst_session *ls, struct ulnet_selftest_session_info *info)
{
	if (!info)
		return;
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", ls->con.name);
	ulnet_nid_from_nid4(ls->con.sid.nid, &info->console);
	info->rpc_timeout_s = ls->con.rpc_timeout_ms / 1000;
	info->nodes = ls->njoined;
	info->groups = ls->ngroups;
	info->batches = ls->nbatches;
}

int lst_need_session(const struct lst_session *ls, char *why, size_t cap)
{
	if (ls->active)
		return 0;
	snprintf(why, cap, "no session (start one with new_session NAME)");
	return -ENOENT;
}

/* After the lock was dropped for RPCs: is it still the session the command started in? */
int lst_same_session(const struct lst_session *ls, uint64_t gen, char *why, size_t cap)
{
	if (ls->active && ls->gen == gen)
		return 0;
	snprintf(why, cap, "the session ended while the command ran");
	return -ESTALE;
}

int lst_group_find(const struct lst_session *ls, const char *name)
{
	for (unsigned i = 0; i < ls->ngroups; i++)
		if (!strcmp(ls->groups[i]->name, name))
			return (int)i;
	return -1;
}

int lst_batch_find(const struct lst_session *ls, const char *name)
{
	for (unsigned i = 0; i < ls->nbatches; i++)
		if (!strcmp(ls->batches[i]->name, name))
			return (int)i;
	return -1;
}

struct lst_batch *lst_batch_by_bid(const struct lst_session *ls, uint64_t bid)
{
	for (unsigned i = 0; i < ls->nbatches; i++)
		if (ls->batches[i]->bid == bid)
			return ls->batches[i];
	return NULL;
}

bool lst_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (!n || n > ULNET_SELFTEST_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-' || *s == '.'))
			return false;
	return true;
}

int lst_bad_name(const char *s, char *why, size_t cap)
{
	snprintf(why, cap, "bad name '%s' (1-31 of A-Z a-z 0-9 _ - .)", s ? s : "");
	return -EINVAL;
}

int lst_joined_index(const struct lst_session *ls, const struct ulnet_process_id *id)
{
	for (unsigned i = 0; i < ls->njoined; i++)
		if (ulnet_nid_equal(&ls->joined[i].id.nid, &id->nid))
			return (int)i;
	return -1;
}

/* The ulnet features @id announced when it joined; 0 (a kernel node) when unknown. */
static uint32_t joined_feats(const struct lst_session *ls, const struct ulnet_process_id *id)
{
	int i = lst_joined_index(ls, id);

	return i < 0 ? 0 : ls->joined[i].feats;
}

static void *pinger_main(void *arg);

/* Forget the session's groups and batches. With the lock held. */
static void clear_locked(struct lst_session *ls)
{
	for (unsigned i = 0; i < ls->ngroups; i++)
		free(ls->groups[i]);
	for (unsigned i = 0; i < ls->nbatches; i++)
		free(ls->batches[i]);
	ls->ngroups = ls->nbatches = ls->njoined = 0;
	ls->active = false;
	ls->gen++;
}

void lst_session_init(struct lst_session *ls)
{
	memset(ls, 0, sizeof(*ls));
	pthread_mutex_init(&ls->lock, NULL);
	ulnet__cond_init(&ls->pinger_cv);
	lst_health_init(&ls->health);
}

void lst_session_fini(struct lst_session *ls, uint32_t timeout_ms)
{
	struct ulnet_process_id *ids = NULL;
	struct ulnet_sst_con c;
	unsigned n = 0;
	char why[256];

	pthread_mutex_lock(&ls->lock);
	__atomic_store_n(&ls->pinger_quit, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&ls->pinger_cv);
	pthread_mutex_unlock(&ls->lock);
	if (ls->pinger_started)
		pthread_join(ls->pinger, NULL);
	ls->pinger_started = false;
	pthread_mutex_lock(&ls->lock);
	if (ls->active && (ids = malloc(LST_MAX_NODES * sizeof(*ids)))) {
		c = ls->con;
		c.rpc_timeout_ms = timeout_ms;
		c.health = NULL; /* the last word goes to every node */
		n = ls->njoined;
		for (unsigned i = 0; i < n; i++)
			ids[i] = ls->joined[i].id;
	}
	clear_locked(ls);
	pthread_mutex_unlock(&ls->lock);
	for (unsigned i = 0; i < n; i++)
		(void)ulnet__sst_con_leave(&c, &ids[i], why, sizeof(why));
	free(ids);
	pthread_cond_destroy(&ls->pinger_cv);
	pthread_mutex_destroy(&ls->lock);
	lst_health_fini(&ls->health);
}

/* ---- session ---- */

int ulnet_selftest_session_new(ulnet_selftest *st, const char *name, uint32_t rpc_timeout_s, bool force,
			       struct ulnet_selftest_session_info *info, char *why, size_t whylen)
{
	struct lst_session *ls = &st->lst;
	int rc = 0;

	if (!lst_name_ok(name))
		return lst_bad_name(name, why, whylen);
	if (rpc_timeout_s < 1 || rpc_timeout_s > 3600) {
		snprintf(why, whylen, "RPC timeout %u s is not in 1..3600", rpc_timeout_s);
		return -EINVAL;
	}
	pthread_mutex_lock(&ls->lock);
	if (ls->active) {
		snprintf(why, whylen, "session '%s' is open on this console; end_session first", ls->con.name);
		rc = -EBUSY;
	} else if (!lst_con_init(st->sst, name, rpc_timeout_s * 1000, &ls->con)) {
		snprintf(why, whylen, "this node has no NID other than lo");
		rc = -EADDRNOTAVAIL;
	} else {
		ls->con.health = &ls->health;
		ls->con.health_gen = lst_health_reset(&ls->health); /* a new session knows no node yet */
		ls->force = force;
		ls->active = true;
		ls->gen++;
		if (!ls->pinger_started) {
			ls->pinger_quit = false;
			ls->pinger_started = !pthread_create(&ls->pinger, NULL, pinger_main, ls);
		}
		info_of(ls, info);
	}
	pthread_mutex_unlock(&ls->lock);
	return rc;
}

void lst_node_one(void *arg, unsigned i)
{
	struct node_fan *f = arg;

	if (f->skip && f->skip[i]) {
		f->rc[i] = f->skip[i];
		return;
	}
	switch (f->op) {
	case NODE_LEAVE: f->rc[i] = ulnet__sst_con_leave(f->c, &f->ids[i], f->line[i], sizeof(f->line[i])); break;
	case NODE_PING: f->rc[i] = ulnet__sst_con_ping(f->c, &f->ids[i], f->line[i], sizeof(f->line[i])); break;
	case NODE_STAT:
		f->rc[i] = ulnet__sst_con_stat(f->c, &f->ids[i], f->ext, f->bid, &f->st[i], f->line[i],
					       sizeof(f->line[i]));
		break;
	case NODE_RUN:
	case NODE_STOP:
		f->rc[i] = ulnet__sst_con_batch(f->c, &f->ids[i], f->bid,
						f->op == NODE_RUN ? ULNET_SST_BATCH_RUN : ULNET_SST_BATCH_STOP,
						f->op == NODE_STOP ? f->force : f->run_s, NULL, f->line[i], sizeof(f->line[i]));
		break;
	case NODE_DRAIN: { /* until the node says its part of the batch is over, or time is up */
		uint32_t active = 1;
		while (!(f->rc[i] = ulnet__sst_con_batch(f->c, &f->ids[i], f->bid, ULNET_SST_BATCH_QUERY, 0, &active,
							 f->line[i], sizeof(f->line[i]))) &&
		       active && lst_mono_ms() < f->until_ms)
			usleep(20000);
		break;
	}
	}
}

/* ---- the pinger ---- */

/* Keeps the session alive on every joined node (a DEBUG each LST_PING_MS, as lst's console pinger does)
 * and probes the nodes known down when their backoff says so, all at once: a command never waits on a
 * node the pinger or an earlier command found down, and the first answer makes it an ordinary node. */
static void *pinger_main(void *arg)
{
	struct lst_session *ls = arg;
	struct ulnet_process_id *ids = malloc((LST_MAX_NODES + LST_HEALTH_MAX) * sizeof(*ids));
	uint64_t *due = malloc(LST_HEALTH_MAX * sizeof(*due));
	int *rc = malloc((LST_MAX_NODES + LST_HEALTH_MAX) * sizeof(*rc));
	char (*line)[256] = malloc((LST_MAX_NODES + LST_HEALTH_MAX) * sizeof(*line));
	uint64_t next_keepalive = lst_mono_ms() + LST_PING_MS;

	pthread_mutex_lock(&ls->lock);
	while (!ls->pinger_quit) {
		struct timespec ts;
		struct ulnet_sst_con c;
		unsigned n = 0, ndue;
		uint64_t now;

		ts = ulnet__deadline_in(LST_PINGER_TICK_MS * 1000000ull);
		pthread_cond_timedwait(&ls->pinger_cv, &ls->lock, &ts);
		if (ls->pinger_quit || !ls->active || !ids || !due || !rc || !line)
			continue;
		c = ls->con;
		c.rpc_timeout_ms = c.rpc_timeout_ms < 2000 ? c.rpc_timeout_ms : 2000; /* keep commands moving */
		c.probe = true;
		now = lst_mono_ms();
		if (now >= next_keepalive) { /* the joined nodes not known down (those are probed below) */
			char why[256];
			next_keepalive = now + LST_PING_MS;
			for (unsigned i = 0; i < ls->njoined; i++)
				if (!lst_health_check(&ls->health, ulnet_nid_to_nid4(&ls->joined[i].id.nid), now, why,
						      sizeof(why)))
					ids[n++] = ls->joined[i].id;
		}
		ndue = lst_health_due(&ls->health, now, due, LST_HEALTH_MAX);
		for (unsigned i = 0; i < ndue; i++) {
			ulnet_nid_from_nid4(due[i], &ids[n].nid);
			ids[n++].pid = ULNET_PID_LUSTRE;
		}
		if (!n)
			continue;
		pthread_mutex_unlock(&ls->lock);
		{
			struct node_fan nf = { &c, ids, NODE_PING, false, rc, line, NULL, NULL, 0, false, 0, 0 };
			lst_fanout(n, lst_node_one, &nf); /* the outcomes land in the health table */
		}
		pthread_mutex_lock(&ls->lock);
	}
	pthread_mutex_unlock(&ls->lock);
	free(ids);
	free(due);
	free(rc);
	free(line);
	return NULL;
}

int ulnet_selftest_session_end(ulnet_selftest *st, struct ulnet_selftest_session_info *info, unsigned *unreachable,
			       void (*warn)(void *arg, const char *line), void *arg, char *why, size_t whylen)
{
	struct lst_session *ls = &st->lst;
	struct ulnet_process_id *ids = malloc(LST_MAX_NODES * sizeof(*ids));
	struct ulnet_sst_con c;
	unsigned n;
	int rc;

	*unreachable = 0;
	if (!ids) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&ls->lock);
	if ((rc = lst_need_session(ls, why, whylen))) {
		pthread_mutex_unlock(&ls->lock);
		free(ids);
		return rc;
	}
	info_of(ls, info);
	c = ls->con;
	n = ls->njoined;
	for (unsigned i = 0; i < n; i++)
		ids[i] = ls->joined[i].id;
	clear_locked(ls);
	pthread_mutex_unlock(&ls->lock);
	/* removing the session stops every batch on the nodes */
	{
		struct node_fan nf = { &c, ids, NODE_LEAVE, 0, calloc(n ? n : 1, sizeof(*nf.rc)),
				       calloc(n ? n : 1, sizeof(*nf.line)), NULL, NULL, 0, false, 0, 0 };
		if (!nf.rc || !nf.line) {
			free(nf.rc);
			free(nf.line);
			free(ids);
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		lst_fanout(n, lst_node_one, &nf);
		for (unsigned i = 0; i < n; i++)
			if (nf.rc[i]) {
				if (warn)
					warn(arg, nf.line[i]);
				(*unreachable)++;
			}
		free(nf.rc);
		free(nf.line);
	}
	free(ids);
	return 0;
}

int ulnet_selftest_session_show(ulnet_selftest *st, struct ulnet_selftest_session_info *info, char *why, size_t whylen)
{
	struct lst_session *ls = &st->lst;
	int rc;

	pthread_mutex_lock(&ls->lock);
	if (!(rc = lst_need_session(ls, why, whylen)))
		info_of(ls, info);
	pthread_mutex_unlock(&ls->lock);
	return rc;
}

/* ---- groups ---- */

/* A node that did not answer (down, or no lnet_selftest there), as against one that answered no. */
bool lst_unreachable(int rc)
{
	return lst_health_unreachable(rc) || rc == -ESHUTDOWN;
}

/* A node of a group being added that is not in the session yet: its join's answer. */
struct lst_joining {
	struct ulnet_process_id id;
	uint32_t feats; /* what it announced */
	int rc;
	char line[256];
};

struct join_fan {
	struct ulnet_sst_con *c;
	bool force;
	struct lst_joining *m;
};

static void join_one(void *arg, unsigned i)
{
	struct join_fan *f = arg;
	struct lst_joining *m = &f->m[i];

	m->rc = ulnet__sst_con_join(f->c, &m->id, f->force, &m->feats, m->line, sizeof(m->line));
}

int ulnet_selftest_group_add(ulnet_selftest *st, const char *name, const struct ulnet_nid *nids, unsigned n, char *why,
			     size_t whylen)
{
	struct lst_session *ls = &st->lst;
	struct lst_group *g;
	struct lst_joining *todo = NULL;
	unsigned ntodo = 0, njoined = 0;
	struct ulnet_sst_con c;
	uint64_t gen = 0;
	bool force = false;
	char nid[ULNET_NID_STRLEN];
	int rc = 0;

	if (whylen)
		why[0] = '\0'; /* stays empty unless some nodes are down */
	if (!lst_name_ok(name))
		return lst_bad_name(name, why, whylen);
	if (!n || n > LST_MAX_NODES) {
		snprintf(why, whylen, "a group has 1..%d nodes, not %u", LST_MAX_NODES, n);
		return -EINVAL;
	}
	g = calloc(1, sizeof(*g));
	todo = calloc(n, sizeof(*todo));
	if (!g || !todo) {
		snprintf(why, whylen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	snprintf(g->name, sizeof(g->name), "%s", name);
	for (unsigned i = 0; i < n; i++) {
		ulnet_nid_format(&nids[i], nid, sizeof(nid));
		if (ulnet_nid_is_any(&nids[i])) {
			snprintf(why, whylen, "bad NID '%s': ANY", nid);
			rc = -EINVAL;
			goto out;
		}
		if (ulnet_nid_to_nid4(&nids[i]) == ULNET_NID_ANY4) {
			snprintf(why, whylen, "NID '%s' does not fit lnet_selftest's 64-bit ids", nid);
			rc = -EINVAL;
			goto out;
		}
		for (unsigned k = 0; k < g->n; k++)
			if (ulnet_nid_equal(&g->nodes[k].nid, &nids[i])) {
				snprintf(why, whylen, "NID '%s' given twice", nid);
				rc = -EINVAL;
				goto out;
			}
		g->nodes[g->n].nid = nids[i];
		g->nodes[g->n++].pid = ULNET_PID_LUSTRE;
	}
	pthread_mutex_lock(&ls->lock);
	if ((rc = lst_need_session(ls, why, whylen))) {
	} else if (lst_group_find(ls, name) >= 0) {
		snprintf(why, whylen, "group '%s' exists", name);
		rc = -EEXIST;
	} else if (ls->ngroups == LST_MAX_GROUPS) {
		snprintf(why, whylen, "at most %d groups", LST_MAX_GROUPS);
		rc = -ENOSPC;
	} else {
		for (unsigned k = 0; k < g->n; k++)
			if (lst_joined_index(ls, &g->nodes[k]) < 0)
				todo[ntodo++].id = g->nodes[k];
		if (ls->njoined + ntodo > LST_MAX_NODES) {
			snprintf(why, whylen, "at most %d nodes per session", LST_MAX_NODES);
			rc = -ENOSPC;
		}
		c = ls->con;
		gen = ls->gen;
		force = ls->force;
	}
	pthread_mutex_unlock(&ls->lock);
	if (rc)
		goto out;
	/* every node joins the session now, as lst's add_group does, all at once */
	if (ntodo) {
		struct join_fan jf = { &c, force, todo };
		unsigned ndown = 0, first_down = 0;

		lst_fanout(ntodo, join_one, &jf);
		/* the joined first (they stay in the session whatever happens), then the nodes that did not */
		for (unsigned i = 0; i < ntodo; i++)
			if (!todo[i].rc) {
				struct lst_joining m = todo[i];

				memmove(&todo[njoined + 1], &todo[njoined], (i - njoined) * sizeof(*todo));
				todo[njoined++] = m;
			}
		for (unsigned i = njoined; i < ntodo && !rc; i++) {
			if (!lst_unreachable(todo[i].rc)) { /* it answered and refused: that fails the group */
				rc = todo[i].rc;
				snprintf(why, whylen, "group %s: %s; group not added", name, todo[i].line);
			} else if (!ndown++) {
				first_down = i;
			}
		}
		if (!rc && ndown == ntodo && ntodo == g->n) {
			rc = todo[first_down].rc;
			snprintf(why, whylen, "group %s: %s; group not added", name, todo[first_down].line);
		} else if (!rc && ndown) { /* lst keeps them: list_group shows them down */
			snprintf(why, whylen, "%u of %u node(s) did not answer and are down in group %s (first: %s)",
				 ndown, g->n, name, todo[first_down].line);
		}
	}
	pthread_mutex_lock(&ls->lock);
	if (!ls->active || ls->gen != gen) {
		if (!rc) {
			snprintf(why, whylen, "the session ended while the nodes joined");
			rc = -ESTALE;
		}
	} else {
		/* the nodes that joined are in the session, whatever happens to the group */
		for (unsigned k = 0; k < njoined && ls->njoined < LST_MAX_NODES; k++)
			if (lst_joined_index(ls, &todo[k].id) < 0)
				ls->joined[ls->njoined++] = (struct lst_joined){ todo[k].id, todo[k].feats };
		if (!rc && lst_group_find(ls, name) >= 0) {
			snprintf(why, whylen, "group '%s' exists", name);
			rc = -EEXIST;
		} else if (!rc && ls->ngroups == LST_MAX_GROUPS) {
			snprintf(why, whylen, "at most %d groups", LST_MAX_GROUPS);
			rc = -ENOSPC;
		} else if (!rc) {
			ls->groups[ls->ngroups++] = g;
			g = NULL;
		}
	}
	pthread_mutex_unlock(&ls->lock);
out:
	free(g);
	free(todo);
	return rc;
}

/* Entries of the session copied out under the lock (by @copy, at most @cap of @elem bytes), so that the
 * caller's callbacks run outside it. *@arr is the caller's to free. */
static int list_snapshot(struct lst_session *ls, size_t elem, unsigned cap,
			 unsigned (*copy)(const struct lst_session *ls, void *arr), void **arr, unsigned *n, char *why,
			 size_t whylen)
{
	int rc;

	*n = 0;
	if (!(*arr = calloc(cap, elem))) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&ls->lock);
	if (!(rc = lst_need_session(ls, why, whylen)))
		*n = copy(ls, *arr);
	pthread_mutex_unlock(&ls->lock);
	return rc;
}

static unsigned copy_groups(const struct lst_session *ls, void *arr)
{
	struct ulnet_selftest_group_info *gi = arr;

	for (unsigned i = 0; i < ls->ngroups; i++) {
		snprintf(gi[i].name, sizeof(gi[i].name), "%s", ls->groups[i]->name);
		gi[i].nodes = ls->groups[i]->n;
	}
	return ls->ngroups;
}

int ulnet_selftest_group_list(ulnet_selftest *st, void (*fn)(void *arg, const struct ulnet_selftest_group_info *g),
			      void *arg, char *why, size_t whylen)
{
	struct ulnet_selftest_group_info *gi;
	unsigned n;
	int rc = list_snapshot(&st->lst, sizeof(*gi), LST_MAX_GROUPS, copy_groups, (void **)&gi, &n, why, whylen);

	for (unsigned i = 0; i < n; i++)
		fn(arg, &gi[i]);
	free(gi);
	return rc;
}

/* A copy of group @name's nodes and the session id, for RPCs outside the lock. */
int lst_group_snapshot(struct lst_session *ls, const char *name, struct lst_group *g, struct ulnet_sst_con *c,
			  char *why, size_t whylen)
{
	int rc, gi;

	pthread_mutex_lock(&ls->lock);
	if (!(rc = lst_need_session(ls, why, whylen))) {
		if ((gi = lst_group_find(ls, name)) < 0) {
			snprintf(why, whylen, "no group '%s' in session %s", name, ls->con.name);
			rc = -ENOENT;
		} else {
			*g = *ls->groups[gi];
			*c = ls->con;
		}
	}
	pthread_mutex_unlock(&ls->lock);
	return rc;
}

int lst_nodes_snapshot(struct lst_session *ls, const struct ulnet_selftest_nodes *who, bool joined,
		       struct lst_group *g, struct ulnet_sst_con *c, char *why, size_t whylen)
{
	char nid[ULNET_NID_STRLEN];
	int rc;

	if (who->group)
		return lst_group_snapshot(ls, who->group, g, c, why, whylen);
	if (!who->n || who->n > LST_MAX_NODES) {
		snprintf(why, whylen, "give 1..%d NIDs, not %u", LST_MAX_NODES, who->n);
		return -EINVAL;
	}
	memset(g, 0, sizeof(*g));
	for (unsigned i = 0; i < who->n; i++) {
		ulnet_nid_format(&who->nids[i], nid, sizeof(nid));
		if (ulnet_nid_is_any(&who->nids[i]) || ulnet_nid_to_nid4(&who->nids[i]) == ULNET_NID_ANY4) {
			snprintf(why, whylen, "NID '%s' is ANY or does not fit lnet_selftest's 64-bit ids", nid);
			return -EINVAL;
		}
		for (unsigned k = 0; k < g->n; k++)
			if (ulnet_nid_equal(&g->nodes[k].nid, &who->nids[i])) {
				snprintf(why, whylen, "NID '%s' given twice", nid);
				return -EINVAL;
			}
		g->nodes[g->n].nid = who->nids[i];
		g->nodes[g->n++].pid = ULNET_PID_LUSTRE;
	}
	pthread_mutex_lock(&ls->lock);
	if (!(rc = lst_need_session(ls, why, whylen))) {
		*c = ls->con;
		for (unsigned i = 0; joined && i < g->n && !rc; i++)
			if (lst_joined_index(ls, &g->nodes[i]) < 0) {
				snprintf(why, whylen, "node %s is not in session %s",
					 ulnet_nid_format(&g->nodes[i].nid, nid, sizeof(nid)), ls->con.name);
				rc = -ENOENT;
			}
	}
	pthread_mutex_unlock(&ls->lock);
	return rc;
}

enum ulnet_selftest_node_state lst_ping_state(int rc)
{
	return !rc ? ULNET_SELFTEST_NODE_ACTIVE : rc == -EBUSY ? ULNET_SELFTEST_NODE_BUSY
	       : rc == -ESRCH ? ULNET_SELFTEST_NODE_UNKNOWN : ULNET_SELFTEST_NODE_DOWN;
}

const char *ulnet_selftest_node_state_name(enum ulnet_selftest_node_state s)
{
	switch (s) {
	case ULNET_SELFTEST_NODE_ACTIVE: return "active";
	case ULNET_SELFTEST_NODE_BUSY: return "busy";
	case ULNET_SELFTEST_NODE_UNKNOWN: return "unknown";
	default: return "down";
	}
}

int ulnet_selftest_group_nodes(ulnet_selftest *st, const char *name,
			       void (*fn)(void *arg, const struct ulnet_nid *nid, enum ulnet_selftest_node_state s),
			       void *arg, char *why, size_t whylen)
{
	struct lst_group *g = malloc(sizeof(*g));
	struct ulnet_sst_con c;
	int rc;

	if (!g) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (!(rc = lst_group_snapshot(&st->lst, name, g, &c, why, whylen))) {
		struct node_fan nf = { &c, g->nodes, NODE_PING, false, calloc(g->n, sizeof(*nf.rc)),
				       calloc(g->n, sizeof(*nf.line)), NULL, NULL, 0, false, 0, 0 };
		if (!nf.rc || !nf.line) {
			snprintf(why, whylen, "out of memory");
			rc = -ENOMEM;
		} else {
			lst_fanout(g->n, lst_node_one, &nf);
			for (unsigned k = 0; k < g->n; k++) {
				int prc = nf.rc[k];
				fn(arg, &g->nodes[k].nid, lst_ping_state(prc));
			}
		}
		free(nf.rc);
		free(nf.line);
	}
	free(g);
	return rc;
}

/* Two fan-outs of @n nodes as one of 2 @n: index i < n goes to @a, the rest to @b. */
struct stat2_fan {
	struct node_fan a, b;
	unsigned n;
};

static void stat2_one(void *arg, unsigned i)
{
	struct stat2_fan *f = arg;

	if (i < f->n)
		lst_node_one(&f->a, i);
	else
		lst_node_one(&f->b, i - f->n);
}

int ulnet_selftest_group_stat(ulnet_selftest *st, const char *name, uint32_t delay_ms,
			      void (*fn)(void *arg, const struct ulnet_selftest_node_stat *s), void *arg, unsigned *bad,
			      char *why, size_t whylen)
{
	const struct ulnet_selftest_nodes who = { name, NULL, 0 };

	return ulnet_selftest_nodes_stat(st, &who, delay_ms, 0, fn, arg, bad, why, whylen);
}

int ulnet_selftest_nodes_stat(ulnet_selftest *st, const struct ulnet_selftest_nodes *who, uint32_t delay_ms,
			      uint32_t timeout_s, void (*fn)(void *arg, const struct ulnet_selftest_node_stat *s),
			      void *arg, unsigned *bad, char *why, size_t whylen)
{
	struct lst_group *g = malloc(sizeof(*g));
	struct ulnet_sst_con_stat *a = calloc(LST_MAX_NODES, sizeof(*a)), *b = calloc(LST_MAX_NODES, sizeof(*b)),
				  *x = calloc(LST_MAX_NODES, sizeof(*x));
	int *rca = calloc(LST_MAX_NODES, sizeof(*rca)), *rcb = calloc(LST_MAX_NODES, sizeof(*rcb)),
	    *rcx = calloc(LST_MAX_NODES, sizeof(*rcx));
	char (*line)[256] = calloc(LST_MAX_NODES, sizeof(*line)), (*xline)[256] = calloc(LST_MAX_NODES, sizeof(*xline));
	struct ulnet_sst_con c;
	uint64_t t0, t1;
	int rc;

	*bad = 0;
	if (!g || !a || !b || !x || !rca || !rcb || !rcx || !line || !xline) {
		snprintf(why, whylen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	if (delay_ms < 100 || delay_ms > 60000) {
		snprintf(why, whylen, "sampling interval %u ms is not in 100..60000", delay_ms);
		rc = -EINVAL;
		goto out;
	}
	if (timeout_s > 3600) {
		snprintf(why, whylen, "RPC timeout %u s is not in 1..3600", timeout_s);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = lst_nodes_snapshot(&st->lst, who, true, g, &c, why, whylen)))
		goto out;
	if (timeout_s)
		c.rpc_timeout_ms = timeout_s * 1000;
	{
		struct node_fan nf = { &c, g->nodes, NODE_STAT, false, rca, line, a, NULL, 0, false, 0, 0 };
		t0 = lst_mono_ms();
		lst_fanout(g->n, lst_node_one, &nf);
		usleep((useconds_t)delay_ms * 1000); /* no lock held: the copy of the group is this command's */
		/* the second sample and the extended stats in one round; a node down at the start is not
		 * waited for again */
		struct stat2_fan sf = { { &c, g->nodes, NODE_STAT, false, rcb, line, b, rca, 0, false, 0, 0 },
					{ &c, g->nodes, NODE_STAT, true, rcx, xline, x, rca, 0, false, 0, 0 }, g->n };
		lst_fanout(2 * g->n, stat2_one, &sf);
		t1 = lst_mono_ms();
		for (unsigned k = 0; k < g->n; k++)
			if (rcb[k] && !rcx[k])
				rcx[k] = rcb[k];
	}
	for (unsigned k = 0; k < g->n; k++) {
		struct ulnet_selftest_node_stat ns = { .nid = g->nodes[k].nid };

		if (rca[k] || rcb[k]) {
			snprintf(ns.why, sizeof(ns.why), "%s",
				 rca[k] ? "no answer at the start of the interval" : line[k]);
			(*bad)++;
			fn(arg, &ns);
			continue;
		}
		{
			const struct ulnet_sst_lnet_counters *l0 = &a[k].plain.lnet, *l1 = &b[k].plain.lnet;
			double s = (t1 - t0) / 1000.0;
			ns.answered = true;
			ns.rx_bytes_s = (double)(l1->recv_length - l0->recv_length) / s;
			ns.tx_bytes_s = (double)(l1->send_length - l0->send_length) / s;
			ns.rx_msgs_s = (double)(uint32_t)(l1->recv_count - l0->recv_count) / s;
			ns.tx_msgs_s = (double)(uint32_t)(l1->send_count - l0->send_count) / s;
			ns.brw_errors = b[k].plain.fw.brw_errors;
			ns.ping_errors = b[k].plain.fw.ping_errors;
			ns.rpcs_expired = b[k].plain.rpc.rpcs_expired;
			if (ns.brw_errors || ns.ping_errors)
				(*bad)++;
		}
		if (!rcx[k] && x[k].ext && x[k].x.ntests) {
			const struct ulnet_sst_con_stat *xk = &x[k];
			ns.has_tests = true;
			ns.rpcs_ok = xk->x.rpcs_ok;
			ns.bytes = xk->x.bytes;
			ns.timeout = xk->x.timeout;
			ns.mismatch = xk->x.mismatch;
			ns.refused = xk->x.refused;
			ns.peer_gone = xk->x.peer_gone;
			ns.active = xk->x.active;
			ns.lat_p50_us = xk->x.lat_p50_us;
			ns.lat_p99_us = xk->x.lat_p99_us;
			ns.lat_max_us = xk->x.lat_max_us;
		}
		fn(arg, &ns);
	}
	if (*bad) {
		snprintf(why, whylen, "%u node(s) unreachable or with selftest errors", *bad);
		rc = -EREMOTEIO;
	}
out:
	free(g);
	free(a);
	free(b);
	free(x);
	free(rca);
	free(rcb);
	free(rcx);
	free(line);
	free(xline);
	return rc;
}

/* ---- batches and tests ---- */

int ulnet_selftest_batch_add(ulnet_selftest *st, const char *name, char *why, size_t whylen)
{
	struct lst_session *ls = &st->lst;
	struct lst_batch *b = NULL;
	int rc;

	if (!lst_name_ok(name))
		return lst_bad_name(name, why, whylen);
	pthread_mutex_lock(&ls->lock);
	if ((rc = lst_need_session(ls, why, whylen))) {
	} else if (lst_batch_find(ls, name) >= 0) {
		snprintf(why, whylen, "batch '%s' exists", name);
		rc = -EEXIST;
	} else if (ls->nbatches == LST_MAX_BATCHES || !(b = calloc(1, sizeof(*b)))) {
		snprintf(why, whylen, "at most %d batches", LST_MAX_BATCHES);
		rc = -ENOSPC;
	} else {
		snprintf(b->name, sizeof(b->name), "%s", name);
		b->bid = ++ls->next_bid;
		ls->batches[ls->nbatches++] = b;
	}
	pthread_mutex_unlock(&ls->lock);
	return rc;
}

static unsigned copy_batches(const struct lst_session *ls, void *arr)
{
	struct ulnet_selftest_batch_info *bi = arr;

	for (unsigned i = 0; i < ls->nbatches; i++) {
		snprintf(bi[i].name, sizeof(bi[i].name), "%s", ls->batches[i]->name);
		bi[i].tests = ls->batches[i]->ntests;
		bi[i].running = ls->batches[i]->running;
	}
	return ls->nbatches;
}

int ulnet_selftest_batch_list(ulnet_selftest *st, void (*fn)(void *arg, const struct ulnet_selftest_batch_info *b),
			      void *arg, char *why, size_t whylen)
{
	struct ulnet_selftest_batch_info *bi;
	unsigned n;
	int rc = list_snapshot(&st->lst, sizeof(*bi), LST_MAX_BATCHES, copy_batches, (void **)&bi, &n, why, whylen);

	for (unsigned i = 0; i < n; i++)
		fn(arg, &bi[i]);
	free(bi);
	return rc;
}

int lst_test_fanout(struct ulnet_sst_con *con, uint64_t bid, const struct lst_test *t,
		    const struct ulnet_process_id *src, const uint32_t *src_feats, unsigned nsrc,
		    const struct ulnet_process_id *dst, unsigned ndst, enum lst_servers servers, char *why, size_t cap)
{
	/* lst: servers first, each asked for buffers for the units that may aim at it */
	unsigned ndist = (nsrc + t->dist - 1) / t->dist, nspan = (ndst + t->span - 1) / t->span;
	unsigned nmax = (ndist + nspan - 1) / nspan;
	struct ulnet_sst_con_test srv = t->t;
	struct ulnet_process_id *dests = malloc(ULNET_SST_MAX_IDS * sizeof(*dests));
	int rc = 0;

	if (!dests) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	srv.loop = (int32_t)(nmax * t->dist * t->t.concurrency);
	for (unsigned k = 0; servers != LST_SERVERS_SKIP && k < ndst; k++) {
		char line[256];
		rc = ulnet__sst_con_test_add(con, &dst[k], bid, &srv, false, 0, NULL, 0, line, sizeof(line));
		if (rc && servers == LST_SERVERS_REQUIRED) {
			snprintf(why, cap, "%s", line);
			goto out;
		}
	}
	/* then clients: client i aims at @span servers from ((i / dist) * span) mod n, in group order */
	for (unsigned i = 0; i < nsrc; i++) {
		unsigned start = ((i / t->dist) * t->span) % ndst;
		for (unsigned k = 0; k < t->span; k++)
			dests[k] = dst[(start + k) % ndst];
		if ((rc = ulnet__sst_con_test_add(con, &src[i], bid, &t->t, true, src_feats[i], dests, t->span, why, cap)))
			goto out;
	}
	rc = 0;
out:
	free(dests);
	return rc;
}

int ulnet_selftest_test_add(ulnet_selftest *st, const struct ulnet_selftest_batch_test *bt, unsigned *index, char *why,
			    size_t whylen)
{
	struct lst_session *ls = &st->lst;
	struct lst_test lt = { .dist = bt->dist, .span = bt->span };
	struct lst_group *src = malloc(sizeof(*src)), *dst = malloc(sizeof(*dst));
	uint32_t *feats = calloc(LST_MAX_NODES, sizeof(*feats));
	struct ulnet_sst_con c;
	struct lst_batch *b;
	uint64_t gen = 0, bid = 0;
	const char *bad = NULL;
	int rc = 0, bi, fg, tg;

	if (!src || !dst || !feats) {
		snprintf(why, whylen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	if (bt->loop == 0 || bt->loop < -1) {
		snprintf(why, whylen, "--loop must be -1 (until stopped) or positive");
		rc = -EINVAL;
		goto out;
	}
	if (!bt->dist || !bt->span || bt->span > ULNET_SST_MAX_IDS) {
		snprintf(why, whylen, "--distribute needs x:y with x, y >= 1");
		rc = -EINVAL;
		goto out;
	}
	lt.t.service = bt->t.kind == ULNET_SELFTEST_PING ? ULNET_SST_SVC_PING : ULNET_SST_SVC_BRW;
	lt.t.rw = bt->t.write ? ULNET_SST_BRW_WRITE : ULNET_SST_BRW_READ;
	lt.t.size = bt->t.kind == ULNET_SELFTEST_PING ? 0 : bt->t.size;
	lt.t.offset = bt->t.kind == ULNET_SELFTEST_PING ? 0 : bt->t.offset;
	lt.t.check = bt->t.kind == ULNET_SELFTEST_PING ? ULNET_SST_CHECK_NONE : (enum ulnet_sst_check)bt->t.check;
	lt.t.concurrency = bt->t.concurrency;
	lt.t.loop = bt->loop;
	lt.t.rpc_timeout_ms = bt->t.rpc_timeout_ms;
	if (lt.t.service == ULNET_SST_SVC_BRW) {
		struct ulnet_sst_params p = { .kind = ULNET_SST_TEST_BRW, .rw = lt.t.rw, .size = lt.t.size,
			.offset = lt.t.offset, .check = lt.t.check, .concurrency = lt.t.concurrency, .count = 1 };
		if ((rc = ulnet__sst_params_check(&p, 4096, ULNET_LARGE_MAX_MAX, &bad))) {
			snprintf(why, whylen, "%s", bad);
			goto out;
		}
	} else if (!lt.t.concurrency || lt.t.concurrency > ULNET_SST_MAX_CONCUR) {
		snprintf(why, whylen, "concurrency must be 1..%u", ULNET_SST_MAX_CONCUR);
		rc = -EINVAL;
		goto out;
	}
	pthread_mutex_lock(&ls->lock);
	if ((rc = lst_need_session(ls, why, whylen)))
		goto unlock;
	bi = lst_batch_find(ls, bt->batch);
	fg = lst_group_find(ls, bt->from);
	tg = lst_group_find(ls, bt->to);
	if (bi < 0 || fg < 0 || tg < 0) {
		snprintf(why, whylen, "no %s '%s' in session %s", bi < 0 ? "batch" : "group",
			 bi < 0 ? bt->batch : fg < 0 ? bt->from : bt->to, ls->con.name);
		rc = -ENOENT;
		goto unlock;
	}
	b = ls->batches[bi];
	if (b->running) {
		snprintf(why, whylen, "batch '%s' is running; stop it first", b->name);
		rc = -EBUSY;
		goto unlock;
	}
	if (b->ntests == LST_MAX_TESTS) {
		snprintf(why, whylen, "at most %d tests per batch", LST_MAX_TESTS);
		rc = -ENOSPC;
		goto unlock;
	}
	if (!ls->groups[fg]->n || !ls->groups[tg]->n) {
		snprintf(why, whylen, "group '%s' has no node", ls->groups[fg]->n ? bt->to : bt->from);
		rc = -ENOENT;
		goto unlock;
	}
	*src = *ls->groups[fg];
	*dst = *ls->groups[tg];
	if (lt.span > dst->n)
		lt.span = dst->n;
	lt.from = fg;
	lt.to = tg;
	for (unsigned i = 0; i < src->n; i++)
		feats[i] = joined_feats(ls, &src->nodes[i]);
	/* a brw above LNET_MTU: every client and server announced a large_max that takes it at join */
	for (unsigned i = 0; lt.t.size > ULNET_MTU && !rc && i < src->n + dst->n; i++) {
		const struct ulnet_process_id *id = i < src->n ? &src->nodes[i] : &dst->nodes[i - src->n];
		char nid[ULNET_NID_STRLEN];

		ulnet_nid_format(&id->nid, nid, sizeof(nid));
		rc = ulnet__sst_large_check(lt.t.size, i < src->n ? "client" : "server", nid,
					    i < src->n ? feats[i] : joined_feats(ls, id), why, whylen);
	}
	c = ls->con;
	gen = ls->gen;
	bid = b->bid;
unlock:
	pthread_mutex_unlock(&ls->lock);
	if (rc)
		goto out;
	/* before anything is sent: no client node that may be a kernel node gets an offset it cannot survive */
	for (unsigned i = 0; lt.t.service == ULNET_SST_SVC_BRW && i < src->n; i++) {
		char nid[ULNET_NID_STRLEN], line[512];
		if (!(feats[i] & ULNET_SST_NODE_ANY_OFFSET) &&
		    ulnet__sst_kernel_offset_check(lt.t.size, lt.t.offset, line, sizeof(line))) {
			snprintf(why, whylen, "client %s is not known to be a ulnet node: %s",
				 ulnet_nid_format(&src->nodes[i].nid, nid, sizeof(nid)), line);
			rc = -EINVAL;
			goto out;
		}
	}
	if ((rc = lst_test_fanout(&c, bid, &lt, src->nodes, feats, src->n, dst->nodes, dst->n, LST_SERVERS_REQUIRED, why,
				   whylen)))
		goto out;
	pthread_mutex_lock(&ls->lock);
	if (!(rc = lst_same_session(ls, gen, why, whylen))) {
		b = lst_batch_by_bid(ls, bid);
		/* groups by name again: del_group may have renumbered them (or deleted one) meanwhile */
		lt.from = lst_group_find(ls, bt->from);
		lt.to = lst_group_find(ls, bt->to);
		if (!b || b->ntests == LST_MAX_TESTS || lt.from < 0 || lt.to < 0) {
			snprintf(why, whylen, "the batch or its groups changed while the test was added");
			rc = -ESTALE;
		} else {
			b->tests[b->ntests++] = lt;
			*index = b->ntests;
		}
	}
	pthread_mutex_unlock(&ls->lock);
out:
	free(src);
	free(dst);
	free(feats);
	return rc;
}

/* The distinct client nodes of @b (@srv: the server nodes instead). With the lock held. */
static unsigned batch_nodes(const struct lst_session *ls, const struct lst_batch *b, bool srv,
			    struct ulnet_process_id *ids, unsigned cap)
{
	unsigned n = 0;

	for (unsigned t = 0; t < b->ntests; t++) {
		const struct lst_group *g = ls->groups[srv ? b->tests[t].to : b->tests[t].from];
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

static struct lst_base *base_of(struct lst_batch *b, const struct ulnet_process_id *id)
{
	for (unsigned i = 0; i < b->nbase; i++)
		if (ulnet_nid_equal(&b->base[i].id.nid, &id->nid))
			return &b->base[i];
	return NULL;
}

/* What a command on batch @name works on outside the lock: a copy of the batch, its client and server
 * nodes, and for each test the names of its groups. */
struct batch_snap {
	struct lst_batch b;
	struct ulnet_sst_con con;
	uint64_t gen;
	unsigned nc, ns;
	struct ulnet_process_id cli[LST_MAX_NODES], srv[LST_MAX_NODES];
	/* per test: the client group's nodes (to find a node's tests) and the server group's name */
	struct lst_group from[LST_MAX_TESTS];
	char to_name[LST_MAX_TESTS][ULNET_SST_NAME_SIZE + 1];
	/* scratch for the fan-outs: one slot per node */
	struct ulnet_process_id nodes[LST_MAX_NODES];
	int rc[LST_MAX_NODES], rc2[LST_MAX_NODES];
	char line[LST_MAX_NODES][256];
	struct ulnet_sst_con_stat st[LST_MAX_NODES], st2[LST_MAX_NODES];
};

static int batch_snapshot(struct lst_session *ls, const char *name, struct batch_snap *s, char *why, size_t whylen)
{
	int rc, bi;

	pthread_mutex_lock(&ls->lock);
	if ((rc = lst_need_session(ls, why, whylen)))
		goto out;
	if ((bi = lst_batch_find(ls, name)) < 0) {
		snprintf(why, whylen, "no batch '%s' in session %s", name, ls->con.name);
		rc = -ENOENT;
		goto out;
	}
	s->b = *ls->batches[bi];
	s->con = ls->con;
	s->gen = ls->gen;
	s->nc = batch_nodes(ls, &s->b, false, s->cli, LST_MAX_NODES);
	s->ns = batch_nodes(ls, &s->b, true, s->srv, LST_MAX_NODES);
	for (unsigned t = 0; t < s->b.ntests; t++) {
		s->from[t] = *ls->groups[s->b.tests[t].from];
		snprintf(s->to_name[t], sizeof(s->to_name[t]), "%s", ls->groups[s->b.tests[t].to]->name);
	}
out:
	pthread_mutex_unlock(&ls->lock);
	return rc;
}

int ulnet_selftest_batch_run(ulnet_selftest *st, const char *name, unsigned *clients, char *why, size_t whylen)
{
	return ulnet_selftest_batch_run_for(st, name, 0, clients, why, whylen);
}

int ulnet_selftest_batch_run_for(ulnet_selftest *st, const char *name, uint32_t seconds, unsigned *clients, char *why,
				 size_t whylen)
{
	struct lst_session *ls = &st->lst;
	struct batch_snap *s = calloc(1, sizeof(*s));
	struct lst_batch *b;
	int rc;

	if (!s) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if ((rc = batch_snapshot(ls, name, s, why, whylen)))
		goto out;
	if (!s->b.ntests) {
		snprintf(why, whylen, "batch '%s' has no test", name);
		rc = -EINVAL;
		goto out;
	}
	if (seconds > 86400) {
		snprintf(why, whylen, "run time %u s is not in 0..86400", seconds);
		rc = -EINVAL;
		goto out;
	}
	/* counters at the start, for nodes that only give counters (lnet_selftest), from every node at once */
	{
		unsigned nn = 0;
		for (unsigned i = 0; i < s->nc + s->ns && nn < LST_MAX_NODES; i++) {
			const struct ulnet_process_id *id = i < s->nc ? &s->cli[i] : &s->srv[i - s->nc];
			bool seen = false;
			for (unsigned k = 0; k < nn && !seen; k++)
				seen = ulnet_nid_equal(&s->nodes[k].nid, &id->nid);
			if (!seen)
				s->nodes[nn++] = *id;
		}
		struct node_fan nf = { &s->con, s->nodes, NODE_STAT, false, s->rc, s->line, s->st, NULL, 0, false, 0, 0 };
		lst_fanout(nn, lst_node_one, &nf);
		s->b.nbase = nn;
		for (unsigned k = 0; k < nn; k++) {
			s->b.base[k].id = s->nodes[k];
			s->b.base[k].ok = !s->rc[k];
			s->b.base[k].s = s->st[k];
		}
	}
	s->b.run_ms = lst_mono_ms();
	{
		struct node_fan nf = { &s->con, s->cli, NODE_RUN, false, s->rc, s->line, NULL, NULL, s->b.bid, false, 0,
				       seconds };
		lst_fanout(s->nc, lst_node_one, &nf);
		for (unsigned i = 0; i < s->nc; i++)
			if ((rc = s->rc[i])) { /* lst: the run fails on the first node that did not start */
				snprintf(why, whylen, "%s", s->line[i]);
				goto out;
			}
	}
	*clients = s->nc;
	pthread_mutex_lock(&ls->lock);
	if (!(rc = lst_same_session(ls, s->gen, why, whylen)) && (b = lst_batch_by_bid(ls, s->b.bid))) {
		memcpy(b->base, s->b.base, s->b.nbase * sizeof(b->base[0]));
		b->nbase = s->b.nbase;
		b->run_ms = s->b.run_ms;
		b->running = true;
	}
	pthread_mutex_unlock(&ls->lock);
out:
	free(s);
	return rc;
}

/* One result per client node of the batch in @s. false when one has errors. */
static bool batch_report(struct batch_snap *s, void (*fn)(void *arg, const struct ulnet_selftest_result *r),
			 void *arg)
{
	struct lst_batch *b = &s->b;
	uint64_t srv_bytes = 0;
	bool srv_ok = true, all_ok = true;
	char why[256];

	/* payload moved by the servers (their lnet_selftest bulk counters), for counter-only clients */
	{
		struct node_fan nf = { &s->con, s->srv, NODE_STAT, false, s->rc, s->line, s->st, NULL, 0, false, 0, 0 };
		lst_fanout(s->ns, lst_node_one, &nf);
	}
	for (unsigned i = 0; i < s->ns; i++) {
		struct lst_base *cb = base_of(b, &s->srv[i]);
		if (!cb || !cb->ok || s->rc[i])
			srv_ok = false;
		else
			srv_bytes += lst_bulk_bytes(&s->st[i]) - lst_bulk_bytes(&cb->s);
	}
	/* the clients' extended stats, and their counters where a node has none (lnet_selftest) */
	{
		struct node_fan nf = { &s->con, s->cli, NODE_STAT, true, s->rc, s->line, s->st, NULL, b->bid, false, 0, 0 };
		lst_fanout(s->nc, lst_node_one, &nf);
		for (unsigned i = 0; i < s->nc; i++)
			s->rc2[i] = s->rc[i] ? s->rc[i] : s->st[i].ext; /* non-zero: nothing more to ask */
		nf.ext = false;
		nf.bid = 0;
		nf.rc = s->rc2;
		nf.st = s->st2;
		nf.skip = s->rc2;
		lst_fanout(s->nc, lst_node_one, &nf);
	}
	for (unsigned i = 0; i < s->nc; i++) {
		const struct ulnet_process_id *id = &s->cli[i];
		struct lst_base *cb = base_of(b, id);
		struct ulnet_sst_con_stat s1, s0 = { 0 };
		struct ulnet_selftest_result o;
		int first = -1, rc;
		unsigned ntests = 0;

		for (unsigned t = 0; t < b->ntests; t++)
			for (unsigned k = 0; k < s->from[t].n; k++)
				if (ulnet_nid_equal(&s->from[t].nodes[k].nid, &id->nid)) {
					first = first < 0 ? (int)t : first;
					ntests++;
					break;
				}
		if (first < 0)
			continue;
		if (cb && cb->ok)
			s0 = cb->s;
		rc = s->rc[i];
		s1 = rc || s->st[i].ext ? s->st[i] : s->st2[i];
		if (!rc && !s1.ext)
			rc = s->rc2[i];
		snprintf(why, sizeof(why), "%s", s->line[i]);
		memset(&o, 0, sizeof(o));
		lst_result_label(&b->tests[first].t, &o);
		ulnet_nid_format(&id->nid, o.from, sizeof(o.from));
		snprintf(o.to, sizeof(o.to), "group %s", s->to_name[first]);
		o.remote = true;
		if (rc) {
			o.peer_gone = 1;
			o.latency_na = o.bytes_na = true;
			o.mismatch_offset = -1;
			o.source = "no answer from the client node";
			snprintf(o.first_error, sizeof(o.first_error), "%.150s", why);
		} else {
			/* several client nodes: the server bytes cannot be split between them */
			lst_derive_result(&s0, &s1, b->tests[first].t.service, srv_ok && s->nc == 1 && cb && cb->ok,
					  srv_bytes, (lst_mono_ms() - b->run_ms) / 1000.0, &o);
			if (!s1.ext && !(cb && cb->ok)) {
				o.source = "no counters from the start of the batch";
				o.bytes_na = o.latency_na = true;
			}
		}
		if (ntests > 1) /* the extended stats sum the node's tests in this batch */
			snprintf(o.to, sizeof(o.to), "group %s (+%u more tests of batch %s)", s->to_name[first],
				 ntests - 1, b->name);
		all_ok &= ulnet_selftest_result_ok(&o);
		fn(arg, &o);
	}
	return all_ok;
}

int ulnet_selftest_batch_stop(ulnet_selftest *st, const char *name, bool force,
			      void (*fn)(void *arg, const struct ulnet_selftest_result *r), void *arg, char *why,
			      size_t whylen)
{
	struct lst_session *ls = &st->lst;
	struct batch_snap *s = calloc(1, sizeof(*s));
	struct lst_batch *b;
	uint64_t wait_ms;
	int rc;

	if (!s) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if ((rc = batch_snapshot(ls, name, s, why, whylen)))
		goto out;
	wait_ms = s->con.rpc_timeout_ms;
	{
		struct node_fan nf = { &s->con, s->cli, NODE_STOP, false, s->rc, s->line, NULL, NULL, s->b.bid, force, 0, 0 };
		lst_fanout(s->nc, lst_node_one, &nf);
	}
	/* without force, RPCs in flight finish or time out on the clients: wait for that, and a little more,
	 * on every client at once */
	for (unsigned t = 0; !force && t < s->b.ntests; t++) {
		uint32_t rpc_ms = s->b.tests[t].t.rpc_timeout_ms ? s->b.tests[t].t.rpc_timeout_ms : LST_LNET_RPC_TIMEOUT_MS;
		if (rpc_ms > wait_ms)
			wait_ms = rpc_ms;
	}
	{
		struct node_fan nf = { &s->con, s->cli, NODE_DRAIN, false, s->rc2, s->line, NULL, s->rc, s->b.bid, false,
				       lst_mono_ms() + wait_ms + 2000, 0 };
		lst_fanout(s->nc, lst_node_one, &nf); /* a client that did not take the stop is not asked again */
	}
	pthread_mutex_lock(&ls->lock);
	if (ls->active && ls->gen == s->gen && (b = lst_batch_by_bid(ls, s->b.bid)))
		b->running = false;
	pthread_mutex_unlock(&ls->lock);
	if (!batch_report(s, fn, arg)) {
		snprintf(why, whylen, "a test of the batch had errors");
		rc = -EREMOTEIO;
	}
out:
	free(s);
	return rc;
}
