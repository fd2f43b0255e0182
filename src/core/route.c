/* SPDX-License-Identifier: MIT */
/* The route table: remote nets through gateways on local nets, the next hop of each message, and
 * the routing settings. Routes change under every loop's owner lock and the node lock (as the NI
 * list), so a loop reads them with its own lock and an API thread with the node lock; what changes
 * while they are read (up or down, last use, counters) is atomic. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static const char *const down_reason[] = {
	[ULNET_ROUTE_OK] = "",
	[ULNET_ROUTE_NO_ANSWER] = "gateway does not answer pings",
	[ULNET_ROUTE_GW_NOT_ROUTING] = "routing is disabled on the gateway",
	[ULNET_ROUTE_GW_NET_DOWN] = "gateway's NIs on the net are down",
	[ULNET_ROUTE_GW_DOWN] = "gateway's connection failed",
};

/* The local NI on @nid's net (not lo), or NULL. */
static struct ulnet_ni *ni_on_net(struct ulnet_node *node, uint32_t net)
{
	for (struct ulnet_list *p = node->nis.next; p != &node->nis; p = p->next) {
		struct ulnet_ni *ni = ulnet_container_of(p, struct ulnet_ni, link);

		if (ni != node->lo_ni && ni->net == net && ni->started)
			return ni;
	}
	return NULL;
}

/* How @r ranks for a message sent by the owner of @own (the gateway's credits are known only to
 * the owner of its NI's loop). */
static struct ulnet_route_rank rank_of(struct ulnet_route *r, struct ulnet_loop *own)
{
	struct ulnet_route_rank k = {
		.up = atomic_load_explicit(&r->down, memory_order_relaxed) == ULNET_ROUTE_OK,
		.priority = r->priority,
		.hops = r->hops,
		.credits = INT_MIN,
		.seq = atomic_load_explicit(&r->seq, memory_order_relaxed),
	};

	if (own && r->ni->loop == own) {
		struct ulnet_peer *gw = ulnet__peer_find(r->ni, &r->gw, false);

		k.credits = gw ? gw->tx_credits : r->ni->peer_credits;
	}
	return k;
}

struct ulnet_ni *ulnet__next_hop(struct ulnet_node *node, const struct ulnet_nid *dest, bool *local,
				 struct ulnet_route **route, struct ulnet_nid *hop)
{
	uint32_t net = ulnet_nid_net(dest);
	struct ulnet_loop *own = ulnet__owned(node);
	struct ulnet_route *best = NULL;
	struct ulnet_route_rank best_k = { 0 };
	struct ulnet_ni *ni;

	*route = NULL;
	*local = ulnet__nid_is_local(node, dest);
	if (*local) {
		if (hop)
			*hop = *dest;
		return node->lo_ni;
	}
	ni = ni_on_net(node, net);
	if (ni) {
		if (hop)
			*hop = *dest;
		return ni;
	}
	for (unsigned i = 0; i < node->n_routes; i++) {
		struct ulnet_route *r = node->routes[i];
		struct ulnet_route_rank k;

		if (r->net != net || !r->ni->started)
			continue;
		k = rank_of(r, own);
		if (!best || ulnet__route_better(&k, &best_k)) {
			best = r;
			best_k = k;
		}
	}
	if (!best || !best_k.up)
		return NULL; /* no route, or every one is down */
	*route = best;
	if (hop)
		*hop = best->gw;
	return best->ni;
}

void ulnet__route_used(struct ulnet_node *node, struct ulnet_route *route, uint32_t bytes)
{
	atomic_store_explicit(&route->seq, atomic_fetch_add(&node->route_seq, 1) + 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&route->send_count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&route->send_length, bytes, memory_order_relaxed);
}

static int route_check(struct ulnet_node *node, const struct ulnet_route_conf *c, uint32_t *net,
		       struct ulnet_nid *gw, struct ulnet_ni **ni)
{
	const char *why = NULL;
	char s[ULNET_NID_STRLEN];

	if (!c->net || ulnet_net_parse(c->net, net, &why)) {
		ULNET_LOG(CORE, ERR, "route: bad net '%s': %s", c->net ? c->net : "(none)", why ? why : "missing");
		return -EINVAL;
	}
	if (!c->gateway || ulnet_nid_parse(c->gateway, gw, &why)) {
		ULNET_LOG(CORE, ERR, "route to %s: bad gateway '%s': %s", c->net, c->gateway ? c->gateway : "(none)",
			  why ? why : "missing");
		return -EINVAL;
	}
	if (c->hops != ULNET_ROUTE_HOPS_UNDEF && (c->hops < 1 || c->hops > ULNET_ROUTE_HOPS_MAX)) {
		ULNET_LOG(CORE, ERR, "route to %s via %s: hop %d out of range (-1 or 1..%d)", c->net, c->gateway,
			  c->hops, ULNET_ROUTE_HOPS_MAX);
		return -EINVAL;
	}
	if (ni_on_net(node, *net) || *net == ulnet_nid_net(&node->lo_ni->nid)) {
		ULNET_LOG(CORE, ERR, "route to %s via %s: %s is a local net (reached directly, never through a gateway)",
			  c->net, c->gateway, c->net);
		return -ELOOP;
	}
	if (ulnet__nid_is_local(node, gw)) {
		ULNET_LOG(CORE, ERR, "route to %s via %s: the gateway is this node", c->net, c->gateway);
		return -ELOOP;
	}
	*ni = ni_on_net(node, ulnet_nid_net(gw));
	if (!*ni) {
		char gnet[32];

		ULNET_LOG(CORE, ERR, "route to %s via %s: the gateway is not on a local net (add an NI on %s first)",
			  c->net, ulnet_nid_format(gw, s, sizeof(s)), ulnet_net_format(ulnet_nid_net(gw), gnet, sizeof(gnet)));
		return -EHOSTUNREACH;
	}
	return 0;
}

int ulnet_route_add(ulnet_node *node, const struct ulnet_route_conf *conf)
{
	struct ulnet_route *r, **grown;
	struct ulnet_ni *ni = NULL;
	struct ulnet_nid gw;
	uint32_t net;
	int rc;

	if (!node || !conf)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	ulnet__loops_enter(node, NULL);
	ulnet__lock(node);
	rc = route_check(node, conf, &net, &gw, &ni);
	for (unsigned i = 0; rc == 0 && i < node->n_routes; i++) {
		if (node->routes[i]->net == net && ulnet__nid_equal(&node->routes[i]->gw, &gw)) {
			ULNET_LOG(CORE, ERR, "route to %s via %s exists (delete it first to change it)", conf->net,
				  conf->gateway);
			rc = -EEXIST;
		}
	}
	if (rc == 0 && node->n_routes >= ULNET_ROUTES_MAX) {
		ULNET_LOG(CORE, ERR, "route to %s via %s: %u routes already (the limit, ULNET_ROUTES_MAX)", conf->net,
			  conf->gateway, ULNET_ROUTES_MAX);
		rc = -ENOSPC;
	}
	if (rc == 0) {
		grown = realloc(node->routes, (node->n_routes + 1) * sizeof(*grown));
		rc = grown ? 0 : -ENOMEM;
		if (grown)
			node->routes = grown;
	}
	if (rc == 0) {
		r->net = net;
		r->gw = gw;
		r->ni = ni;
		r->hops = conf->hops;
		r->priority = conf->priority;
		r->health_sensitivity = conf->health_sensitivity;
		node->routes[node->n_routes++] = r;
		r = NULL;
	}
	ulnet__lock_release(node);
	ulnet__loops_exit(node);
	free(r);
	if (rc == 0)
		rc = ulnet__checker_start(node);
	return rc;
}

int ulnet_route_del(ulnet_node *node, const char *net_s, const char *gw_s)
{
	struct ulnet_route **gone = NULL;
	struct ulnet_nid gw;
	uint32_t net = 0;
	const char *why = NULL;
	unsigned n = 0, kept = 0;

	if (!node)
		return -EINVAL;
	if (net_s && ulnet_net_parse(net_s, &net, &why)) {
		ULNET_LOG(CORE, ERR, "route del: bad net '%s': %s", net_s, why);
		return -EINVAL;
	}
	if (gw_s && ulnet_nid_parse(gw_s, &gw, &why)) {
		ULNET_LOG(CORE, ERR, "route del: bad gateway '%s': %s", gw_s, why);
		return -EINVAL;
	}
	/* a route is looked at only by the owner of a loop or under the node lock, and no message
	 * keeps it past the send that chose it: with both held, a deleted route can go at once */
	ulnet__loops_enter(node, NULL);
	ulnet__lock(node);
	gone = calloc(node->n_routes ? node->n_routes : 1, sizeof(*gone));
	for (unsigned i = 0; gone && i < node->n_routes; i++) {
		struct ulnet_route *r = node->routes[i];

		if ((!net_s || r->net == net) && (!gw_s || ulnet__nid_equal(&r->gw, &gw)))
			gone[n++] = r;
		else
			node->routes[kept++] = r;
	}
	if (gone)
		node->n_routes = kept;
	ulnet__lock_release(node);
	ulnet__loops_exit(node);
	if (!gone)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		free(gone[i]);
	free(gone);
	if (!n) {
		ULNET_LOG(CORE, ERR, "route del: no route to %s via %s", net_s ? net_s : "any net",
			  gw_s ? gw_s : "any gateway");
		return -ENOENT;
	}
	ulnet__checker_kick(node);
	return (int)n;
}

int ulnet_route_info_get(ulnet_node *node, unsigned idx, struct ulnet_route_info *out)
{
	struct ulnet_route *r;
	uint64_t checked, now = ulnet__now_ns();
	uint8_t down;

	if (!node || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	ulnet__lock(node);
	if (idx >= node->n_routes) {
		ulnet__lock_release(node);
		return -ENOENT;
	}
	r = node->routes[idx];
	ulnet_net_format(r->net, out->net, sizeof(out->net));
	out->gateway = r->gw;
	out->hops = r->hops;
	out->priority = r->priority;
	out->health_sensitivity = r->health_sensitivity;
	down = atomic_load(&r->down);
	out->up = down == ULNET_ROUTE_OK;
	snprintf(out->reason, sizeof(out->reason), "%s", down < sizeof(down_reason) / sizeof(down_reason[0])
									 ? down_reason[down] : "?");
	out->multi_hop = atomic_load(&r->multi_hop);
	checked = atomic_load(&r->checked_ns);
	out->checked_ago_ms = checked ? (now > checked ? now - checked : 0) / 1000000u : UINT64_MAX;
	out->send_count = atomic_load(&r->send_count);
	out->send_length = atomic_load(&r->send_length);
	ulnet__lock_release(node);
	return 0;
}

void ulnet_routing_get(ulnet_node *node, struct ulnet_routing_conf *out)
{
	ulnet__lock(node);
	*out = node->routing;
	ulnet__lock_release(node);
}

static int conf_range(const char *key, uint64_t v, uint64_t lo, uint64_t hi)
{
	if (v >= lo && v <= hi)
		return 0;
	ULNET_LOG(CORE, ERR, "routing: %s %llu out of range %llu..%llu (setting %s)", key, (unsigned long long)v,
		  (unsigned long long)lo, (unsigned long long)hi, key);
	return -EINVAL;
}

int ulnet_routing_set(ulnet_node *node, const struct ulnet_routing_conf *c)
{
	int rc;

	if (!node || !c)
		return -EINVAL;
	/* at least one of each: a message with no buffer it could ever get would wait for ever */
	rc = conf_range("tiny_buffers", c->tiny, 1, ULNET_RTR_BUFFERS_MAX);
	rc = rc ? rc : conf_range("small_buffers", c->small, 1, ULNET_RTR_BUFFERS_MAX);
	rc = rc ? rc : conf_range("large_buffers", c->large, 1, ULNET_RTR_BUFFERS_MAX);
	rc = rc ? rc : conf_range("router_buffer_memory", c->memory_max, ULNET_MTU, UINT64_MAX);
	rc = rc ? rc : conf_range("alive_router_check_interval", c->check_interval, 0, ULNET_RTR_SECONDS_MAX);
	rc = rc ? rc : conf_range("router_ping_timeout", c->ping_timeout, 1, ULNET_RTR_SECONDS_MAX);
	rc = rc ? rc : conf_range("router_sensitivity", c->sensitivity, 0, 100);
	if (rc)
		return rc;
	ulnet__lock(node);
	node->routing = *c;
	ulnet__rtr_trim(node);
	rc = ulnet__ping_service_refresh(node); /* the reply says whether we route */
	ulnet__unlock(node);
	atomic_store(&node->forwarding, c->enable); /* parse reads it with no lock */
	ulnet__checker_kick(node);
	return rc;
}

const char *ulnet_fwd_drop_name(enum ulnet_fwd_drop r)
{
	static const char *const names[ULNET_FWD_DROP_REASONS] = {
		"disabled", "no_route", "loop", "too_big", "no_memory", "send_failed",
	};

	return (unsigned)r < ULNET_FWD_DROP_REASONS ? names[r] : NULL;
}

void ulnet_routing_info_get(ulnet_node *node, struct ulnet_routing_info *out)
{
	uint32_t counts[ULNET_RTR_POOLS];

	memset(out, 0, sizeof(*out));
	ulnet__lock(node);
	out->conf = node->routing;
	counts[ULNET_RTR_TINY] = node->routing.tiny;
	counts[ULNET_RTR_SMALL] = node->routing.small;
	counts[ULNET_RTR_LARGE] = node->routing.large;
	for (unsigned i = 0; i < ULNET_RTR_POOLS; i++) {
		const struct ulnet_rtr_pool *p = &node->rtr.pool[i];

		out->pool[i] = (struct ulnet_rtr_pool_info){
			.size = p->size, .nbuffers = counts[i], .allocated = p->allocated,
			.in_use = p->in_use, .max_in_use = p->max_in_use, .waits = p->waits,
		};
	}
	out->memory = node->rtr.memory;
	out->memory_max_seen = node->rtr.memory_max_seen;
	out->waiting = node->fwd_waiting;
	out->fwd = node->fwd;
	ulnet__lock_release(node);
}

int ulnet_routing_ni_get(ulnet_node *node, unsigned idx, struct ulnet_fwd_counters *in,
			 struct ulnet_fwd_counters *out)
{
	unsigned i = 0;
	int rc = -ENOENT;

	memset(in, 0, sizeof(*in));
	memset(out, 0, sizeof(*out));
	ulnet__lock(node);
	for (struct ulnet_list *p = node->nis.next; p != &node->nis; p = p->next, i++) {
		if (i == idx) {
			struct ulnet_ni *ni = ulnet_container_of(p, struct ulnet_ni, link);

			*in = ni->fwd_in;
			*out = ni->fwd_out;
			rc = 0;
			break;
		}
	}
	ulnet__lock_release(node);
	return rc;
}

void ulnet__routes_free(struct ulnet_node *node)
{
	for (unsigned i = 0; i < node->n_routes; i++)
		free(node->routes[i]);
	free(node->routes);
	node->routes = NULL;
	node->n_routes = 0;
}
