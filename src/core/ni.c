/* SPDX-License-Identifier: MIT */
/* Network interfaces: creation from a struct ulnet_ni_conf (deep-copied), generic tunables, NI
 * selection for a destination, and the accessors LNDs use. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

void *ulnet__ni_priv(struct ulnet_ni *ni) { return ni->priv; }
struct ulnet_node *ulnet__ni_node(struct ulnet_ni *ni) { return ni->node; }
const struct ulnet_nid *ulnet__ni_nid(const struct ulnet_ni *ni) { return &ni->nid; }
const struct ulnet_ni_conf *ulnet__ni_conf(const struct ulnet_ni *ni) { return &ni->conf; }
uint32_t ulnet__ni_peer_timeout(const struct ulnet_ni *ni) { return (uint32_t)ni->peer_timeout; }
uint32_t ulnet__ni_peer_credits(const struct ulnet_ni *ni) { return (uint32_t)ni->peer_credits; }
uint32_t ulnet__node_page_size(const struct ulnet_node *node) { return node->page_size; }

void ulnet__ni_set_nid(struct ulnet_ni *ni, const struct ulnet_nid *nid)
{
	ni->nid = *nid;
}

bool ulnet__nid_is_local(struct ulnet_node *node, const struct ulnet_nid *nid)
{
	struct ulnet_list *p;

	for (p = node->nis.next; p != &node->nis; p = p->next) {
		struct ulnet_ni *ni = ulnet_container_of(p, struct ulnet_ni, link);

		if (ulnet__nid_equal(&ni->nid, nid))
			return true;
	}
	return false;
}

struct ulnet_ni *ulnet__ni_for_dest(struct ulnet_node *node, const struct ulnet_nid *dest, bool *local)
{
	struct ulnet_route *route;

	return ulnet__next_hop(node, dest, local, &route, NULL);
}

void ulnet_node_primary_nid_locked(struct ulnet_node *node, struct ulnet_nid *out)
{
	struct ulnet_list *p;

	for (p = node->nis.next; p != &node->nis; p = p->next) {
		struct ulnet_ni *ni = ulnet_container_of(p, struct ulnet_ni, link);

		if (ni != node->lo_ni) {
			*out = ni->nid;
			return;
		}
	}
	*out = node->lo_ni->nid;
}

void ulnet_node_primary_nid(ulnet_node *node, struct ulnet_nid *out)
{
	ulnet__lock(node);
	ulnet_node_primary_nid_locked(node, out);
	ulnet__lock_release(node);
}

/* Copy the caller's configuration so LNDs may read it for the NI's lifetime. */
static int conf_copy(struct ulnet_ni *ni, const struct ulnet_ni_conf *c)
{
	size_t nif = 0, bytes = 0, nkv = c->n_tunables + c->n_lnd_tunables;
	char *arena, *s;
	const char **ifs;
	struct ulnet_kv *kvs;

#define STRSZ(x) ((x) ? strlen(x) + 1 : 0)
	bytes += STRSZ(c->net) + STRSZ(c->nid);
	for (; c->interfaces && c->interfaces[nif]; nif++)
		bytes += STRSZ(c->interfaces[nif]);
	for (size_t i = 0; i < c->n_tunables; i++)
		bytes += STRSZ(c->tunables[i].key) + STRSZ(c->tunables[i].value);
	for (size_t i = 0; i < c->n_lnd_tunables; i++)
		bytes += STRSZ(c->lnd_tunables[i].key) + STRSZ(c->lnd_tunables[i].value);
#undef STRSZ
	arena = calloc(1, (nif + 1) * sizeof(char *) + nkv * sizeof(struct ulnet_kv) + bytes + 1);
	if (!arena)
		return -ENOMEM;
	ifs = (const char **)(void *)arena;
	kvs = (struct ulnet_kv *)(void *)(arena + (nif + 1) * sizeof(char *));
	s = (char *)(kvs + nkv);
#define DUP(dst, src)                                    \
	do {                                             \
		if (src) {                               \
			size_t l_ = strlen(src) + 1;     \
			memcpy(s, src, l_);              \
			(dst) = s;                       \
			s += l_;                         \
		} else {                                 \
			(dst) = NULL;                    \
		}                                        \
	} while (0)
	DUP(ni->conf.net, c->net);
	DUP(ni->conf.nid, c->nid);
	for (size_t i = 0; i < nif; i++)
		DUP(ifs[i], c->interfaces[i]);
	ifs[nif] = NULL;
	ni->conf.interfaces = nif ? ifs : NULL;
	for (size_t i = 0; i < nkv; i++) {
		const struct ulnet_kv *src = i < c->n_tunables ? &c->tunables[i] : &c->lnd_tunables[i - c->n_tunables];

		DUP(kvs[i].key, src->key);
		DUP(kvs[i].value, src->value);
	}
#undef DUP
	ni->conf.tunables = kvs;
	ni->conf.n_tunables = c->n_tunables;
	ni->conf.lnd_tunables = kvs + c->n_tunables;
	ni->conf.n_lnd_tunables = c->n_lnd_tunables;
	ni->conf_arena = arena;
	return 0;
}

static int apply_tunables(struct ulnet_ni *ni)
{
	const struct ulnet_lnd_ops *ops = ni->ops;
	long v[ULNET__NI_TUN_COUNT];
	char subsys[40];
	int rc;

	rc = ulnet__tunables_apply("tunables", ulnet__ni_tunable_table, ULNET__NI_TUN_COUNT, ni->conf.tunables,
				   ni->conf.n_tunables, v);
	if (rc)
		return rc;
	ni->peer_timeout = (int)v[ULNET__NI_TUN_PEER_TIMEOUT];
	ni->peer_credits = (int)v[ULNET__NI_TUN_PEER_CREDITS];
	ni->peer_buffer_credits = (int)v[ULNET__NI_TUN_PEER_BUFFER_CREDITS];
	ni->credits = (int)v[ULNET__NI_TUN_CREDITS];
	ni->peer_queue_msgs = (unsigned)v[ULNET__NI_TUN_PEER_QUEUE_MSGS];
	ni->peer_queue_bytes = (uint64_t)v[ULNET__NI_TUN_PEER_QUEUE_BYTES];
	ni->lnd_tun = calloc(ops->lnd_n_tunables ? ops->lnd_n_tunables : 1, sizeof(long));
	if (!ni->lnd_tun)
		return -ENOMEM;
	snprintf(subsys, sizeof(subsys), "%s lnd tunables", ops->lnd_name);
	return ulnet__tunables_apply(subsys, ops->lnd_tunables, ops->lnd_n_tunables, ni->conf.lnd_tunables,
				     ni->conf.n_lnd_tunables, ni->lnd_tun);
}

long ulnet__ni_lnd_tunable(const struct ulnet_ni *ni, size_t k)
{
	return k < ni->ops->lnd_n_tunables ? ni->lnd_tun[k] : 0;
}

void ulnet__ni_lnd_tunables_load(const struct ulnet_ni *ni, void *tun)
{
	for (size_t k = 0; k < ni->ops->lnd_n_tunables; k++) {
		size_t at = ni->ops->lnd_tunables[k].store;

		if (at)
			memcpy((char *)tun + at - 1, &(int){ (int)ni->lnd_tun[k] }, sizeof(int));
	}
}

int ulnet__ni_create(struct ulnet_node *node, const struct ulnet_ni_conf *conf, struct ulnet_ni **out)
{
	const struct ulnet_lnd_ops *ops;
	struct ulnet_ni *ni;
	const char *why = NULL;
	uint32_t net;
	int rc;

	if (!conf || !conf->net) {
		ULNET_LOG(CORE, ERR, "net: missing 'net type'");
		return -EINVAL;
	}
	rc = ulnet_net_parse(conf->net, &net, &why);
	if (rc) {
		ULNET_LOG(CORE, ERR, "net type '%s': %s", conf->net, why ? why : "invalid");
		return -EINVAL;
	}
	ops = ulnet__lnd_find(ulnet_lnd_type_name(net >> 16));
	if (!ops) {
		ULNET_LOG(CORE, ERR, "net type '%s': LND '%s' is not built into this ulnet", conf->net,
			  ulnet_lnd_type_name(net >> 16) ? ulnet_lnd_type_name(net >> 16) : "?");
		return -EPROTONOSUPPORT;
	}
	ni = calloc(1, sizeof(*ni));
	if (!ni)
		return -ENOMEM;
	ni->node = node;
	ni->ops = ops;
	ni->net = net;
	ni->nid = ulnet_nid_any();
	ulnet_list_init(&ni->txq);
	ni->status = ULNET_NI_STATUS_UP;
	rc = conf_copy(ni, conf);
	if (rc == 0)
		rc = apply_tunables(ni);
	if (rc == 0 && conf->nid) {
		char bad[160];

		rc = ulnet__ni_nid_parse(conf->nid, net, conf->net, &ni->nid, bad, sizeof(bad));
		if (rc)
			ULNET_LOG(CORE, ERR, "%s", bad);
	}
	ni->tx_credits = ni->min_tx_credits = ni->credits;
	if (rc == 0 && ops->lnd_ni_size) {
		ni->priv = calloc(1, ops->lnd_ni_size);
		if (!ni->priv)
			rc = -ENOMEM;
	}
	if (rc) {
		free(ni->lnd_tun);
		free(ni->conf_arena);
		free(ni);
		return rc;
	}
	*out = ni;
	return 0;
}

void ulnet__ni_destroy(struct ulnet_ni *ni)
{
	free(ni->priv);
	free(ni->lnd_tun);
	free(ni->conf_arena);
	free(ni);
}

int ulnet__ni_nid_parse(const char *s, uint32_t net, const char *net_name, struct ulnet_nid *out, char *why,
			size_t whylen)
{
	const char *bad = NULL;

	if (ulnet_nid_parse(s, out, &bad)) {
		snprintf(why, whylen, "bad nid '%s': %s", s, bad ? bad : "invalid");
		return -EINVAL;
	}
	if (ulnet_nid_net(out) != net) {
		snprintf(why, whylen, "nid '%s' is not on net '%s'", s, net_name);
		return -EINVAL;
	}
	return 0;
}

int ulnet_ni_add(ulnet_node *node, const struct ulnet_ni_conf *conf)
{
	struct ulnet_ni *ni;
	struct ulnet_list *p;
	int rc;

	if (!node || !conf)
		return -EINVAL;
	rc = ulnet__ni_create(node, conf, &ni);
	if (rc)
		return rc;
	/* the NI list changes under every loop's owner lock and the node lock: a loop reads it with its
	 * own lock, an API call with the node lock */
	ulnet__loops_enter(node, NULL);
	ulnet__lock(node);
	for (p = node->nis.next; p != &node->nis; p = p->next) {
		struct ulnet_ni *o = ulnet_container_of(p, struct ulnet_ni, link);

		if (o->net == ni->net) {
			char net[32];

			ULNET_LOG(CORE, ERR, "net %s already has an NI (one NI per net)",
				  ulnet_net_format(ni->net, net, sizeof(net)));
			rc = -EEXIST;
		}
	}
	ulnet__lock_release(node);
	if (rc)
		goto out;
	/* its home: round robin from loop 0, where lo, the node's timers and the handlers are: the
	 * handlers' sends on the first NI go out from their own thread, with no hand-off (a node with
	 * one NI and two loops handing every selftest RPC between them ran brw 17% slower: #29 in
	 * docs/performance.md); a second NI, a router's other net, gets loop 1 */
	ni->loop = &node->loops[node->n_nis_homed % node->n_loops];
	ulnet__cur_loop = ni->loop; /* its LND starts its watchers and timers there */
	rc = ni->ops->lnd_startup(ni);
	if (rc)
		goto out;
	if (ulnet_nid_is_any(&ni->nid)) {
		ULNET_LOG(CORE, ERR, "net %s: no nid and no usable interface", conf->net);
		ni->ops->lnd_shutdown(ni);
		rc = -EINVAL;
		goto out;
	}
	node->n_nis_homed++;
	ni->started = true;
	ulnet__lock(node);
	ulnet_list_add_tail(&ni->link, &node->nis);
	rc = ulnet__ping_service_refresh(node);
	ulnet__unlock(node);
	ni = NULL;
out:
	ulnet__loops_exit(node);
	if (ni)
		ulnet__ni_destroy(ni);
	return rc;
}

int ulnet_ni_info_get(ulnet_node *node, unsigned idx, struct ulnet_ni_info *out)
{
	struct ulnet_ni *ni;
	int rc = -ENOENT;

	if (!node || !out)
		return -EINVAL;
	ulnet__lock(node);
	ni = ulnet__ni_at(node, idx);
	ulnet__lock_release(node);
	/* its credits and counters are its loop's (an NI goes only when the node closes) */
	if (ni) {
		size_t off = 0;

		ulnet__loop_enter(ni->loop);
		memset(out, 0, sizeof(*out));
		out->nid = ni->nid;
		ulnet_net_format(ni->net, out->net, sizeof(out->net));
		snprintf(out->lnd, sizeof(out->lnd), "%s", ni->ops->lnd_name);
		out->status = ni->status;
		out->peer_credits = ni->peer_credits;
		out->credits = ni->credits;
		out->peer_buffer_credits = ni->peer_buffer_credits;
		out->peer_timeout = ni->peer_timeout;
		out->tx_credits = ni->tx_credits;
		out->min_tx_credits = ni->min_tx_credits;
		out->send_count = ni->send_count;
		out->recv_count = ni->recv_count;
		out->drop_count = ni->drop_count;
		out->lnd_tunables = ni->ops->lnd_tunables;
		out->n_lnd_tunables = ni->ops->lnd_n_tunables;
		for (size_t k = 0; ni->conf.interfaces && ni->conf.interfaces[k]; k++) {
			int n = snprintf(out->interfaces + off, sizeof(out->interfaces) - off, "%s%s", k ? "," : "",
					 ni->conf.interfaces[k]);
			if (n < 0 || (size_t)n >= sizeof(out->interfaces) - off)
				break;
			off += (size_t)n;
		}
		rc = 0;
		ulnet__loop_exit(ni->loop);
	}
	return rc;
}

/* The NI number @idx (0 = lo), or NULL past the last. */
struct ulnet_ni *ulnet__ni_at(struct ulnet_node *node, unsigned idx)
{
	struct ulnet_list *p;

	for (p = node->nis.next; p != &node->nis; p = p->next)
		if (idx-- == 0)
			return ulnet_container_of(p, struct ulnet_ni, link);
	return NULL;
}

int ulnet_ni_lnd_tunable_get(ulnet_node *node, unsigned idx, size_t k, long *out)
{
	struct ulnet_ni *ni;
	int rc = -ENOENT;

	if (!node || !out)
		return -EINVAL;
	ulnet__lock(node);
	ni = ulnet__ni_at(node, idx);
	if (ni && k < ni->ops->lnd_n_tunables) {
		*out = ni->lnd_tun[k];
		rc = 0;
	}
	ulnet__lock_release(node);
	return rc;
}

int ulnet_ni_fabric_get(ulnet_node *node, unsigned idx, struct ulnet_ni_fabric *out)
{
	struct ulnet_ni *ni;
	int rc = -ENOENT;

	if (!node || !out)
		return -EINVAL;
	ulnet__lock(node);
	ni = ulnet__ni_at(node, idx);
	ulnet__lock_release(node);
	if (ni && !ni->ops->lnd_fabric_info) {
		rc = -EOPNOTSUPP;
	} else if (ni) {
		memset(out, 0, sizeof(*out));
		ulnet__loop_enter(ni->loop);
		ni->ops->lnd_fabric_info(ni, out);
		ulnet__loop_exit(ni->loop);
		rc = 0;
	}
	return rc;
}

void ulnet__ni_lnd_stop(struct ulnet_node *node, struct ulnet_ni *ni)
{
	ulnet__cur_loop = ni->loop;
	ulnet__lock(node);
	ulnet__md_lnd_release_ni(node, ni);
	ulnet__unlock(node); /* the LND releases them here, as the owner of every loop */
	ulnet__mem_lnd_release_ni(node, ni);
	ni->ops->lnd_shutdown(ni);
	while (!ulnet_list_empty(&ni->txq)) {
		struct ulnet_msg *m = ulnet_list_first(&ni->txq, struct ulnet_msg, link);

		ulnet_list_del(&m->link);
		m->ni_credit = m->peer_credit = false;
		ulnet__finalize(m, -ESHUTDOWN);
	}
}

/* Why @ni cannot go now (a route through it, forwarding on), logged; 0 if it can. Every loop owned
 * and the node lock held. */
static int ni_del_refused(struct ulnet_node *node, struct ulnet_ni *ni, const char *net_s)
{
	for (unsigned i = 0; i < node->n_routes; i++) {
		const struct ulnet_route *r = node->routes[i];

		if (r->ni == ni) {
			char gw[ULNET_NID_STRLEN], net[32];

			ULNET_LOG(CORE, ERR, "net del %s: route to %s through %s uses it (route del --net %s first)",
				  net_s, ulnet_net_format(r->net, net, sizeof(net)),
				  ulnet_nid_format(&r->gw, gw, sizeof(gw)), net);
			return -EBUSY;
		}
	}
	/* a router's buffers may be of this NI's LND memory and forwarded messages may name its peers */
	if (node->routing.enable) {
		ULNET_LOG(CORE, ERR, "net del %s: the node routes (set routing 0 first)", net_s);
		return -EBUSY;
	}
	for (unsigned c = 0; c < ULNET_RTR_POOLS; c++)
		if (node->rtr.pool[c].in_use) {
			ULNET_LOG(CORE, ERR, "net del %s: %u forwarded message(s) still in flight; try again",
				  net_s, node->rtr.pool[c].in_use);
			return -EBUSY;
		}
	return 0;
}

/* Everything of @ni goes, as at node close but with the other NIs running: the caller has parked
 * the loop threads (ulnet__loops_pause) and owns every loop. true: it is gone and may be freed;
 * false: a message still names one of its peers (logged), so the NI is kept, unlinked. */
static bool ni_teardown(struct ulnet_node *node, struct ulnet_ni *ni)
{
	unsigned busy = 0;

	ni->started = false;
	for (unsigned i = 0; i < node->n_loops; i++) {
		ulnet__cur_loop = &node->loops[i];
		ulnet__fault_loop_flush_ni(&node->loops[i], ni);
	}
	ulnet__ni_lnd_stop(node, ni);
	for (unsigned i = 0; i < node->n_loops; i++) {
		struct ulnet_loop *loop = &node->loops[i];

		ulnet__cur_loop = loop;
		ulnet__peers_fail_queues_ni(loop, ni);
		while (ulnet__completions_run(loop, ULNET_COMPLETION_BUDGET))
			;
		busy += ulnet__peers_forget_ni(loop, ni);
	}
	ulnet__cur_loop = NULL;
	if (busy) {
		char net[32];

		ULNET_LOG(CORE, WARN, "net del %s: %u peer(s) still named by a message: the NI's memory is kept",
			  ulnet_net_format(ni->net, net, sizeof(net)), busy);
		return false;
	}
	return true;
}

int ulnet_ni_del(ulnet_node *node, const char *net_s)
{
	struct ulnet_ni *ni = NULL;
	const char *why = NULL;
	uint32_t net;
	bool freeable;
	int rc;

	if (!node || !net_s)
		return -EINVAL;
	if (ulnet_net_parse(net_s, &net, &why)) {
		ULNET_LOG(CORE, ERR, "net del: bad net '%s': %s", net_s, why ? why : "invalid");
		return -EINVAL;
	}
	if (ulnet__owned(node)) {
		ULNET_LOG(CORE, ERR, "net del %s: called from an event handler or a loop", net_s);
		return -EDEADLK;
	}
	/* the loop threads leave their loops, so no batch of events they fetched can name a watcher
	 * the LND frees below (node close stops them for the same reason) */
	rc = ulnet__loops_pause(node);
	if (rc) {
		ULNET_LOG(CORE, ERR, "net del %s: another net del is under way", net_s);
		return rc;
	}
	ulnet__loops_enter(node, NULL);
	ulnet__lock(node);
	for (struct ulnet_list *p = node->nis.next; p != &node->nis; p = p->next) {
		struct ulnet_ni *o = ulnet_container_of(p, struct ulnet_ni, link);

		if (o->net == net && o != node->lo_ni)
			ni = o;
	}
	if (!ni) {
		if (node->lo_ni && node->lo_ni->net == net)
			ULNET_LOG(CORE, ERR, "net del %s: 0@lo is the node's own and stays", net_s);
		else
			ULNET_LOG(CORE, ERR, "net del %s: the node has no NI on it (net show)", net_s);
		rc = -ENOENT;
	} else {
		rc = ni_del_refused(node, ni, net_s);
	}
	if (rc == 0) { /* from here no send chooses it: ni_reaching reads the list as we hold it */
		ulnet_list_del(&ni->link);
		rc = ulnet__ping_service_refresh(node);
		if (rc) /* the ping reply keeps naming it: the NI is gone all the same */
			ULNET_LOG(CORE, WARN, "net del %s: the ping reply was not rebuilt (%d)", net_s, rc);
		rc = 0;
	}
	ulnet__unlock(node);
	freeable = rc == 0 && ni_teardown(node, ni);
	ulnet__loops_exit(node);
	ulnet__loops_resume(node);
	if (freeable)
		ulnet__ni_destroy(ni);
	return rc;
}

int ulnet_source_nid(ulnet_node *node, const struct ulnet_nid *dest, struct ulnet_nid *out)
{
	struct ulnet_ni *ni;
	bool local = false;

	if (!node || !dest || !out)
		return -EINVAL;
	ulnet__lock(node);
	ni = ulnet__ni_for_dest(node, dest, &local);
	if (ni)
		*out = local ? *dest : ni->nid;
	ulnet__unlock(node);
	return ni ? 0 : -EHOSTUNREACH;
}
