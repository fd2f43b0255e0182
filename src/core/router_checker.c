/* SPDX-License-Identifier: MIT */
/* The router checker: a thread that, every alive_router_check_interval seconds, pings each gateway
 * of the route table at once (LNet's ping: a GET on portal 0 with the ping match bits) and waits up to
 * router_ping_timeout for the answers. A route is up while its gateway answers, routes (no
 * RTE_DISABLED in its reply) and has enough of its NIs on the route's net up (router_sensitivity %);
 * ulnet__route_judge says which. It is the application's kind of thread (the public MD and EQ calls),
 * so a gateway that never answers costs it a wait, never a loop. Pings of a round that ended are
 * left to finish on their own (their buffers go with their MDs); their late events are told apart by
 * the round number in the MD's user pointer. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "futex_cond.h"
#include "internal.h"

struct ulnet_rtr_checker {
	pthread_t thread;
	struct ulnet_futex_lock lock; /* stop and kicks */
	struct ulnet_futex_cond cond;
	bool stop;
	uint32_t kicks;
};

/* One gateway's ping in a round. */
struct gw_ping {
	struct ulnet_nid nid;
	struct ulnet_handle mdh;
	uint8_t *buf;
	bool pending, answered, unlinked;
	struct ulnet_ping_info *pi;
};

#define ROUND_BITS 20 /* the MD user pointer: round << ROUND_BITS | gateway index */

/* The distinct gateways of the route table (node lock). */
static struct gw_ping *gateways(struct ulnet_node *node, unsigned *n)
{
	struct gw_ping *g;

	ulnet__lock(node);
	g = calloc(node->n_routes ? node->n_routes : 1, sizeof(*g));
	*n = 0;
	for (unsigned i = 0; g && i < node->n_routes; i++) {
		unsigned j = 0;

		while (j < *n && !ulnet__nid_equal(&g[j].nid, &node->routes[i]->gw))
			j++;
		if (j == *n)
			g[(*n)++].nid = node->routes[i]->gw;
	}
	ulnet__lock_release(node);
	return g;
}

static void ping_post(struct ulnet_node *node, ulnet_eq *eq, uint64_t round, unsigned i, struct gw_ping *g)
{
	struct ulnet_process_id to = { .nid = g->nid, .pid = ULNET_PID_LUSTRE };
	struct ulnet_md umd = { 0 };

	g->buf = calloc(1, ULNET_PING_BUFFER_MAX);
	if (!g->buf)
		return;
	umd.start = g->buf;
	umd.length = ULNET_PING_BUFFER_MAX;
	umd.threshold = 2; /* SEND + REPLY */
	umd.options = ULNET_MD_TRUNCATE;
	umd.eq = eq;
	umd.user_ptr = (void *)(uintptr_t)(round << ROUND_BITS | i);
	if (ulnet_md_bind(node, &umd, ULNET_UNLINK, &g->mdh)) {
		free(g->buf);
		g->buf = NULL;
		return;
	}
	g->pending = true;
	if (ulnet_get(node, g->mdh, &to, ULNET_RESERVED_PORTAL, ULNET_PING_MATCHBITS, 0)) {
		g->pending = false;
		ulnet_md_unlink(node, g->mdh);
	}
}

static void ping_event(struct gw_ping *g, const struct ulnet_event *ev)
{
	struct ulnet_wire_err err;

	if (ev->unlinked)
		g->unlinked = true;
	if (!g->pending)
		return;
	if (ev->type == ULNET_EVENT_SEND && ev->status) {
		g->pending = false;
	} else if (ev->type == ULNET_EVENT_REPLY) {
		g->pending = false;
		g->pi = ev->status ? NULL : malloc(sizeof(*g->pi));
		if (g->pi && ulnet_ping_info_unpack(g->buf, ev->mlength, g->pi, &err) == 0) {
			g->answered = true;
		} else if (g->pi) {
			char s[ULNET_NID_STRLEN];

			ULNET_LOG(CORE, WARN, "router checker: bad ping reply from gateway %s: field %s at offset %zu",
				  ulnet_nid_format(&g->nid, s, sizeof(s)), err.field ? err.field : "?", err.offset);
		}
	}
}

/* Mark each route from its gateway's answer (or silence). */
static void apply(struct ulnet_node *node, const struct gw_ping *g, unsigned n, uint32_t sensitivity)
{
	uint64_t now = ulnet__now_ns();

	ulnet__lock(node);
	for (unsigned i = 0; i < node->n_routes; i++) {
		struct ulnet_route *r = node->routes[i];
		enum ulnet_route_down d = ULNET_ROUTE_NO_ANSWER, was;
		bool multi = atomic_load(&r->multi_hop);
		unsigned j = 0;

		while (j < n && !ulnet__nid_equal(&g[j].nid, &r->gw))
			j++;
		if (j == n)
			continue; /* added during the round: the next one looks at it */
		if (g[j].answered) {
			struct ulnet_nid nids[ULNET_PING_INFO_MAX_NIDS];
			uint32_t st[ULNET_PING_INFO_MAX_NIDS];

			for (unsigned k = 0; k < g[j].pi->n_ni; k++) {
				nids[k] = g[j].pi->ni[k].nid;
				st[k] = g[j].pi->ni[k].status;
			}
			d = ulnet__route_judge(r->net, g[j].pi->features, nids, st, g[j].pi->n_ni, sensitivity, &multi);
			atomic_store(&r->checked_ns, now);
			atomic_store(&r->multi_hop, multi);
		}
		was = atomic_exchange(&r->down, (uint8_t)d);
		if ((was == ULNET_ROUTE_OK) != (d == ULNET_ROUTE_OK)) {
			char net[32], s[ULNET_NID_STRLEN];

			ULNET_LOG(CORE, INFO, "route to %s via %s is %s", ulnet_net_format(r->net, net, sizeof(net)),
				  ulnet_nid_format(&r->gw, s, sizeof(s)), d == ULNET_ROUTE_OK ? "up" : "down");
		}
	}
	ulnet__lock_release(node);
}

/* True when told to stop. Sleeps until @deadline (0: a kick) or a kick. */
static bool sleep_until(struct ulnet_rtr_checker *ck, uint64_t deadline)
{
	bool stop;

	ulnet__futex_lock(&ck->lock);
	for (uint32_t k = ck->kicks; !ck->stop && ck->kicks == k;)
		if (ulnet__futex_cond_wait(&ck->cond, &ck->lock, deadline) && deadline)
			break;
	stop = ck->stop;
	ulnet__futex_unlock(&ck->lock);
	return stop;
}

static bool stopping(struct ulnet_rtr_checker *ck)
{
	bool stop;

	ulnet__futex_lock(&ck->lock);
	stop = ck->stop;
	ulnet__futex_unlock(&ck->lock);
	return stop;
}

static void round_run(struct ulnet_node *node, struct ulnet_rtr_checker *ck, ulnet_eq *eq, uint64_t round,
		      const struct ulnet_routing_conf *c)
{
	unsigned n, pending = 0;
	struct gw_ping *g = gateways(node, &n);
	uint64_t deadline = ulnet__now_ns() + (uint64_t)c->ping_timeout * 1000000000ull;
	struct ulnet_event ev;

	if (!g)
		return;
	for (unsigned i = 0; i < n; i++) {
		ping_post(node, eq, round, i, &g[i]);
		pending += g[i].pending;
	}
	while (pending && !stopping(ck)) {
		uint64_t now = ulnet__now_ns();
		/* at most 100 ms at a time, so that a stop is seen */
		int ms = now >= deadline ? 0 : (int)((deadline - now) / 1000000u) + 1;

		if (ms == 0)
			break;
		if (ulnet_eq_wait(eq, ms < 100 ? ms : 100, &ev) <= 0)
			continue;
		if ((uint64_t)(uintptr_t)ev.md_user_ptr >> ROUND_BITS != round)
			continue; /* a late event of an earlier round */
		{
			struct gw_ping *p = &g[(uintptr_t)ev.md_user_ptr & ((1u << ROUND_BITS) - 1)];
			bool was = p->pending;

			ping_event(p, &ev);
			pending -= was && !p->pending;
		}
	}
	apply(node, g, n, c->sensitivity);
	for (unsigned i = 0; i < n; i++) {
		struct ulnet_libmd *md = NULL;

		free(g[i].pi);
		if (!g[i].buf)
			continue;
		if (!g[i].unlinked)
			ulnet_md_unlink(node, g[i].mdh);
		/* an MD an LND still holds frees the buffer when it goes */
		ulnet__lock(node);
		md = g[i].unlinked ? NULL : ulnet__handle_lookup(node, g[i].mdh.cookie, ULNET_OBJ_MD);
		if (md) {
			md->free_on_unlink = g[i].buf;
			g[i].buf = NULL;
		}
		ulnet__lock_release(node);
		free(g[i].buf);
	}
	free(g);
}

static void *checker_main(void *arg)
{
	struct ulnet_node *node = arg;
	struct ulnet_rtr_checker *ck = node->checker;
	ulnet_eq *eq = NULL;
	uint64_t round = 0;

	if (ulnet_eq_create(&eq)) {
		ULNET_LOG(CORE, ERR, "router checker: no memory for its event queue; routes stay as they are");
		return NULL;
	}
	ulnet__eq_quiet_send(eq);
	for (;;) {
		struct ulnet_routing_conf c;
		uint64_t start = ulnet__now_ns();

		ulnet_routing_get(node, &c);
		if (c.check_interval == 0) {
			if (sleep_until(ck, 0))
				break;
			continue;
		}
		round_run(node, ck, eq, ++round & ((1ull << (64 - ROUND_BITS)) - 1), &c);
		if (sleep_until(ck, start + (uint64_t)c.check_interval * 1000000000ull))
			break;
	}
	ulnet__eq_release(eq);
	return NULL;
}

int ulnet__checker_start(struct ulnet_node *node)
{
	struct ulnet_rtr_checker *ck;
	int rc;

	ulnet__lock(node);
	ck = node->checker;
	ulnet__lock_release(node);
	if (ck) {
		ulnet__checker_kick(node); /* a new route: look at it now */
		return 0;
	}
	ck = calloc(1, sizeof(*ck));
	if (!ck)
		return -ENOMEM;
	ulnet__lock(node);
	if (node->checker) { /* another thread was first */
		ulnet__lock_release(node);
		free(ck);
		return 0;
	}
	node->checker = ck;
	rc = -pthread_create(&ck->thread, NULL, checker_main, node);
	if (rc)
		node->checker = NULL;
	else
		pthread_setname_np(ck->thread, "ulnet-rtrcheck");
	ulnet__lock_release(node);
	if (rc) {
		ULNET_LOG(CORE, ERR, "router checker: cannot start its thread: %s", ulnet_strerror(rc));
		free(ck);
	}
	return rc;
}

void ulnet__checker_kick(struct ulnet_node *node)
{
	struct ulnet_rtr_checker *ck;

	ulnet__lock(node);
	ck = node->checker;
	ulnet__lock_release(node);
	if (!ck)
		return;
	ulnet__futex_lock(&ck->lock);
	ck->kicks++;
	ulnet__futex_cond_broadcast(&ck->cond);
	ulnet__futex_unlock(&ck->lock);
}

void ulnet__checker_stop(struct ulnet_node *node)
{
	struct ulnet_rtr_checker *ck = node->checker;

	if (!ck)
		return;
	ulnet__futex_lock(&ck->lock);
	ck->stop = true;
	ulnet__futex_cond_broadcast(&ck->cond);
	ulnet__futex_unlock(&ck->lock);
	pthread_join(ck->thread, NULL);
	node->checker = NULL;
	free(ck);
}
