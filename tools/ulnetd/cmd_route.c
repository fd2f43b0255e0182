/* SPDX-License-Identifier: MIT */
/* ulnetd's routing commands, lnetctl's syntax over ulnet/route.h: route add/del/show, routing show
 * and the `set` keys of the routing settings (each a read-modify-write of ulnet_routing_get/set).
 * Output in lnetctl's layout, with ulnet's extra keys after lnetctl's. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulnetd.h"

#define MAX_NIS 256

static int check_net(struct ulnetd_out *out, const char *cmd, const char *net, uint32_t *num)
{
	const char *why = NULL;

	if (ulnet_net_parse(net, num, &why))
		return ulnetd_errorf(out, -EINVAL, "%s: bad net '%s': %s", cmd, net, why ? why : "invalid");
	return 0;
}

static int check_nid(struct ulnetd_out *out, const char *cmd, const char *s, struct ulnet_nid *nid)
{
	const char *why = NULL;

	if (ulnet_nid_parse(s, nid, &why) || ulnet_nid_is_any(nid))
		return ulnetd_errorf(out, -EINVAL, "%s: bad NID '%s': %s", cmd, s, why ? why : "not a NID");
	return 0;
}

/* true when one of the node's NIs is on @net */
static bool net_is_local(ulnet_node *node, uint32_t net)
{
	struct ulnet_ni_info ni;

	for (unsigned i = 0; ulnet_ni_info_get(node, i, &ni) == 0; i++)
		if (ulnet_nid_net(&ni.nid) == net)
			return true;
	return false;
}

static int cmd_route_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *net = NULL, *gw = NULL;
	long long hop = ULNET_ROUTE_HOPS_UNDEF, prio = 0, hsens = 1;
	const struct ulnetd_opt opts[] = {
		{ "--net", NULL, ULNETD_OPT_STR, 0, 0, &net },
		{ "--gateway", NULL, ULNETD_OPT_STR, 0, 0, &gw },
		{ "--hop", NULL, ULNETD_OPT_INT, -1, ULNET_ROUTE_HOPS_MAX, &hop },
		{ "--priority", NULL, ULNETD_OPT_INT, 0, UINT32_MAX, &prio },
		{ "--health_sensitivity", NULL, ULNETD_OPT_INT, 0, UINT32_MAX, &hsens },
	};
	struct ulnet_route_conf c;
	struct ulnet_nid nid;
	uint32_t num;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "route add", argc, argv, opts, 5, NULL, 0, &npos)))
		return rc;
	if (!net || !gw)
		return ulnetd_errorf(out, -EINVAL, "route add: missing %s", net ? "--gateway" : "--net");
	if ((rc = check_net(out, "route add", net, &num)) || (rc = check_nid(out, "route add", gw, &nid)))
		return rc;
	if (hop == 0)
		return ulnetd_errorf(out, -EINVAL, "route add: bad --hop 0: must be -1 (unknown) or 1..%d",
				     ULNET_ROUTE_HOPS_MAX);
	c = (struct ulnet_route_conf){ .net = net, .gateway = gw, .hops = (int)hop, .priority = (uint32_t)prio,
				       .health_sensitivity = (uint32_t)hsens };
	switch ((rc = ulnet_route_add(d->node, &c))) {
	case 0:
		return 0;
	case -EHOSTUNREACH:
		return ulnetd_errorf(out, rc, "route add: gateway %s is not on a local net", gw);
	case -ELOOP:
		if (net_is_local(d->node, num))
			return ulnetd_errorf(out, rc, "route add: net %s is local (reached directly, not routed)", net);
		return ulnetd_errorf(out, rc, "route add: gateway %s is this node", gw);
	case -EEXIST:
		return ulnetd_errorf(out, rc, "route add: a route to %s via %s exists already", net, gw);
	case -ENOSPC:
		return ulnetd_errorf(out, rc, "route add: %d routes already", ULNET_ROUTES_MAX);
	default:
		return ulnetd_errorf(out, rc, "route add %s via %s: %s", net, gw, ulnet_strerror(rc));
	}
}

static int cmd_route_del(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *net = NULL, *gw = NULL;
	const struct ulnetd_opt opts[] = {
		{ "--net", NULL, ULNETD_OPT_STR, 0, 0, &net },
		{ "--gateway", NULL, ULNETD_OPT_STR, 0, 0, &gw },
	};
	struct ulnet_nid nid;
	uint32_t num;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "route del", argc, argv, opts, 2, NULL, 0, &npos)))
		return rc;
	if (!net)
		return ulnetd_errorf(out, -EINVAL, "route del: missing --net");
	if ((rc = check_net(out, "route del", net, &num)) || (gw && (rc = check_nid(out, "route del", gw, &nid))))
		return rc;
	rc = ulnet_route_del(d->node, net, gw);
	if (rc == -ENOENT)
		return ulnetd_errorf(out, rc, "route del: no route to %s%s%s", net, gw ? " via " : "", gw ? gw : "");
	if (rc < 0)
		return ulnetd_errorf(out, rc, "route del %s: %s", net, ulnet_strerror(rc));
	return 0;
}

static int cmd_route_show(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool json = false, verbose = false;
	const char *net = NULL, *gw = NULL;
	long long hop = LLONG_MIN, prio = -1;
	const struct ulnetd_opt opts[] = {
		{ "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json },
		{ "--verbose", "-v", ULNETD_OPT_FLAG, 0, 0, &verbose },
		{ "--net", NULL, ULNETD_OPT_STR, 0, 0, &net },
		{ "--gateway", NULL, ULNETD_OPT_STR, 0, 0, &gw },
		{ "--hop", NULL, ULNETD_OPT_INT, -1, ULNET_ROUTE_HOPS_MAX, &hop },
		{ "--priority", NULL, ULNETD_OPT_INT, 0, UINT32_MAX, &prio },
	};
	struct ulnet_route_info r;
	struct ulnet_nid want_gw;
	struct ulnetd_emit e;
	uint32_t num;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "route show", argc, argv, opts, 6, NULL, 0, &npos)))
		return rc;
	if ((net && (rc = check_net(out, "route show", net, &num))) ||
	    (gw && (rc = check_nid(out, "route show", gw, &want_gw))))
		return rc;
	ulnetd_emit_init(&e, out, json);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_list(&e, "route");
	for (unsigned i = 0; ulnet_route_info_get(d->node, i, &r) == 0; i++) {
		uint32_t rnum;
		const char *why;

		if (net && (ulnet_net_parse(r.net, &rnum, &why) || rnum != num))
			continue;
		if ((gw && !ulnet_nid_equal(&want_gw, &r.gateway)) || (hop != LLONG_MIN && hop != r.hops) ||
		    (prio >= 0 && (uint32_t)prio != r.priority))
			continue;
		ulnetd_emit_map(&e, NULL);
		ulnetd_emit_str(&e, "net", r.net);
		ulnet_writer_nid(&e.w, "gateway", &r.gateway);
		if (verbose) {
			ulnetd_emit_int(&e, "hop", r.hops);
			ulnetd_emit_uint(&e, "priority", r.priority);
			ulnetd_emit_uint(&e, "health_sensitivity", r.health_sensitivity);
			ulnetd_emit_str(&e, "state", r.up ? "up" : "down");
			ulnetd_emit_str(&e, "type", r.multi_hop ? "multi-hop" : "single-hop");
			if (!r.up)
				ulnetd_emit_str(&e, "reason", r.reason);
			/* -1: the checker never heard from the gateway */
			ulnetd_emit_int(&e, "checked_ago_ms", r.checked_ago_ms == UINT64_MAX ? -1 : (long long)r.checked_ago_ms);
			ulnetd_emit_uint(&e, "send_count", r.send_count);
			ulnetd_emit_uint(&e, "send_length", r.send_length);
		}
		ulnetd_emit_end(&e);
	}
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	return 0;
}

/* msgs, bytes and, with @drops, a drop count per reason (ulnet_fwd_drop_name) */
static void emit_fwd(struct ulnetd_emit *e, const char *key, const struct ulnet_fwd_counters *c, bool drops)
{
	ulnetd_emit_map(e, key);
	ulnetd_emit_uint(e, "msgs", c->msgs);
	ulnetd_emit_uint(e, "bytes", c->bytes);
	if (drops) {
		ulnetd_emit_map(e, "drops");
		for (int r = 0; r < ULNET_FWD_DROP_REASONS; r++)
			ulnetd_emit_uint(e, ulnet_fwd_drop_name((enum ulnet_fwd_drop)r), c->drops[r]);
		ulnetd_emit_end(e);
	}
	ulnetd_emit_end(e);
}

/* lnetctl's four numbers per pool (npages as pages of this node, for its scripts), then ulnet's */
static void emit_pool(struct ulnetd_emit *e, const char *key, const struct ulnet_rtr_pool_info *p, uint32_t page_size)
{
	ulnetd_emit_map(e, key);
	ulnetd_emit_uint(e, "npages", page_size ? (p->size + page_size - 1) / page_size : 0);
	ulnetd_emit_uint(e, "nbuffers", p->nbuffers);
	ulnetd_emit_int(e, "credits", (long long)p->nbuffers - p->in_use);
	ulnetd_emit_int(e, "mincredits", (long long)p->nbuffers - p->max_in_use);
	ulnetd_emit_uint(e, "size", p->size);
	ulnetd_emit_uint(e, "allocated", p->allocated);
	ulnetd_emit_uint(e, "in_use", p->in_use);
	ulnetd_emit_uint(e, "waits", p->waits);
	ulnetd_emit_end(e);
}

static int cmd_routing_show(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	static const char *const pools[] = { "tiny", "small", "large" };
	bool json = false;
	const struct ulnetd_opt opts[] = { { "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json } };
	struct ulnet_routing_info *ri;
	struct ulnet_node_opts o;
	struct ulnetd_emit e;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "routing show", argc, argv, opts, 1, NULL, 0, &npos)))
		return rc;
	if (!(ri = malloc(sizeof(*ri))))
		return -ENOMEM;
	ulnet_routing_info_get(d->node, ri);
	ulnet_node_opts_get(d->node, &o);
	ulnetd_emit_init(&e, out, json);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_list(&e, "routing");
	ulnetd_emit_map(&e, NULL); /* one CPT: ulnet's pools are node-wide */
	ulnetd_emit_map(&e, "cpt[0]");
	for (int i = 0; i < 3; i++)
		emit_pool(&e, pools[i], &ri->pool[i], o.page_size);
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_int(&e, "enable", ri->conf.enable);
	ulnetd_emit_uint(&e, "memory", ri->memory);
	ulnetd_emit_uint(&e, "memory_max", ri->conf.memory_max);
	ulnetd_emit_uint(&e, "memory_max_seen", ri->memory_max_seen);
	ulnetd_emit_uint(&e, "waiting", ri->waiting);
	ulnetd_emit_uint(&e, "check_interval", ri->conf.check_interval);
	ulnetd_emit_uint(&e, "ping_timeout", ri->conf.ping_timeout);
	ulnetd_emit_uint(&e, "sensitivity", ri->conf.sensitivity);
	emit_fwd(&e, "forwarded", &ri->fwd, true);
	ulnetd_emit_list(&e, "net");
	for (unsigned i = 0; i < MAX_NIS; i++) {
		struct ulnet_fwd_counters in, fwd_out;
		struct ulnet_ni_info ni;

		if (ulnet_ni_info_get(d->node, i, &ni) || ulnet_routing_ni_get(d->node, i, &in, &fwd_out))
			break;
		ulnetd_emit_map(&e, NULL);
		ulnet_writer_nid(&e.w, "nid", &ni.nid);
		emit_fwd(&e, "in", &in, true);
		emit_fwd(&e, "out", &fwd_out, false);
		ulnetd_emit_end(&e);
	}
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	free(ri);
	return 0;
}

/* ---- set KEY VALUE ---- */

enum set_key { SET_ROUTING, SET_TINY, SET_SMALL, SET_LARGE, SET_SENSITIVITY, SET_MEMORY, SET_INTERVAL, SET_TIMEOUT };

struct set_spec {
	const char *name;
	uint64_t min, max;
};

static const struct set_spec set_specs[] = {
	[SET_ROUTING] = { "set routing", 0, 1 },
	[SET_TINY] = { "set tiny_buffers", 1, ULNET_RTR_BUFFERS_MAX },
	[SET_SMALL] = { "set small_buffers", 1, ULNET_RTR_BUFFERS_MAX },
	[SET_LARGE] = { "set large_buffers", 1, ULNET_RTR_BUFFERS_MAX },
	[SET_SENSITIVITY] = { "set router_sensitivity", 0, 100 },
	[SET_MEMORY] = { "set router_buffer_memory", ULNET_MTU, UINT64_MAX }, /* one large buffer at least */
	[SET_INTERVAL] = { "set alive_router_check_interval", 0, ULNET_RTR_SECONDS_MAX },
	[SET_TIMEOUT] = { "set router_ping_timeout", 1, ULNET_RTR_SECONDS_MAX },
};

static int set_one(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out, enum set_key k)
{
	const struct set_spec *s = &set_specs[k];
	struct ulnet_routing_conf c;
	char *pos[1];
	uint64_t v;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, s->name, argc, argv, NULL, 0, pos, 1, &npos)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "%s: missing value", s->name);
	/* sizes take k/M/G (ulnet's one size syntax); the others are plain numbers */
	if (k == SET_MEMORY ? ulnet_size_parse(pos[0], UINT64_MAX, &v) != 0
			    : strspn(pos[0], "0123456789") != strlen(pos[0]) || ulnet_size_parse(pos[0], UINT64_MAX, &v))
		return ulnetd_errorf(out, -EINVAL, "%s: bad value '%s': not a number", s->name, pos[0]);
	if (v < s->min || v > s->max)
		return ulnetd_errorf(out, -EINVAL, "%s: %s out of range [%llu, %llu]", s->name, pos[0],
				     (unsigned long long)s->min, (unsigned long long)s->max);
	ulnet_routing_get(d->node, &c);
	switch (k) {
	case SET_ROUTING: c.enable = v; break;
	case SET_TINY: c.tiny = (uint32_t)v; break;
	case SET_SMALL: c.small = (uint32_t)v; break;
	case SET_LARGE: c.large = (uint32_t)v; break;
	case SET_SENSITIVITY: c.sensitivity = (uint32_t)v; break;
	case SET_MEMORY: c.memory_max = v; break;
	case SET_INTERVAL: c.check_interval = (uint32_t)v; break;
	case SET_TIMEOUT: c.ping_timeout = (uint32_t)v; break;
	}
	if ((rc = ulnet_routing_set(d->node, &c)))
		return ulnetd_errorf(out, rc, "%s %s: %s", s->name, pos[0], ulnet_strerror(rc));
	return 0;
}

#define SET_CMD(fn, key)                                                                           \
	static int fn(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)             \
	{                                                                                          \
		return set_one(d, argc, argv, out, key);                                           \
	}
SET_CMD(cmd_set_routing, SET_ROUTING)
SET_CMD(cmd_set_tiny, SET_TINY)
SET_CMD(cmd_set_small, SET_SMALL)
SET_CMD(cmd_set_large, SET_LARGE)
SET_CMD(cmd_set_sensitivity, SET_SENSITIVITY)
SET_CMD(cmd_set_memory, SET_MEMORY)
SET_CMD(cmd_set_interval, SET_INTERVAL)
SET_CMD(cmd_set_timeout, SET_TIMEOUT)

static const struct ulnetd_cmd route_cmds[] = {
	{ "route add", "--net NET --gateway NID [--hop N] [--priority N] [--health_sensitivity N]",
	  "add a route to a remote net through a gateway on a local net", cmd_route_add },
	{ "route del", "--net NET [--gateway NID]", "delete the routes to NET (through NID only)", cmd_route_del },
	{ "route show", "[--net NET] [--gateway NID] [--hop N] [--priority N] [-v] [--json]",
	  "show the routes (-v: hop, priority, state, type, checker and traffic)", cmd_route_show },
	{ "routing show", "[--json]", "show router buffers, routing settings and forwarding counters", cmd_routing_show },
	{ "set routing", "0|1", "disable or enable forwarding for other nodes", cmd_set_routing },
	{ "set tiny_buffers", "N", "tiny router buffers (no payload)", cmd_set_tiny },
	{ "set small_buffers", "N", "small router buffers (4 KiB payloads)", cmd_set_small },
	{ "set large_buffers", "N", "large router buffers (1 MiB payloads)", cmd_set_large },
	{ "set router_sensitivity", "PERCENT", "NIs of a gateway on a route's net that must be up", cmd_set_sensitivity },
	{ "set router_buffer_memory", "BYTES", "bytes of router buffers over every pool (k/M/G)", cmd_set_memory },
	{ "set alive_router_check_interval", "SECONDS", "ping gateways this often (0: never)", cmd_set_interval },
	{ "set router_ping_timeout", "SECONDS", "a gateway's ping answer is late after this", cmd_set_timeout },
};

int ulnetd_route_register(struct ulnetd *d)
{
	return ulnetd_cmd_register(d, route_cmds, sizeof(route_cmds) / sizeof(route_cmds[0]));
}
