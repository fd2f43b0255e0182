/* SPDX-License-Identifier: MIT */
/* A configuration applied to a running node (ulnetctl import): first every check that can be made
 * without changing anything, then the changes, undone in reverse on a failure (NIs included). What the node has
 * already (an NI on the net with that NID, an identical route or fault rule) is left as it is, so an
 * export imported back changes nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulnet/config_file.h"
#include "ulnet/ulnet.h"
#include "config_routing.h"

/* The running NI on @net: its index, or -1. */
static int running_ni(ulnet_node *node, const char *net, struct ulnet_ni_info *out)
{
	for (unsigned i = 1; ulnet_ni_info_get(node, i, out) == 0; i++)
		if (!strcmp(out->net, net))
			return (int)i;
	return -1;
}

/* Is @net one of the node's nets, or one @cfg adds? */
static bool net_will_be_local(ulnet_node *node, const struct ulnet_config *cfg, uint32_t net)
{
	struct ulnet_ni_info ni;

	for (unsigned i = 1; ulnet_ni_info_get(node, i, &ni) == 0; i++)
		if (ulnet_nid_net(&ni.nid) == net)
			return true;
	for (size_t i = 0; i < cfg->n_nis; i++) {
		uint32_t n;

		if (ulnet_net_parse(cfg->nis[i].conf.net, &n, NULL) == 0 && n == net)
			return true;
	}
	return false;
}

static bool route_exists(ulnet_node *node, const struct ulnet_route_conf *c)
{
	struct ulnet_route_info ri;
	struct ulnet_nid gw;

	if (ulnet_nid_parse(c->gateway, &gw, NULL))
		return false;
	for (unsigned i = 0; ulnet_route_info_get(node, i, &ri) == 0; i++)
		if (!strcmp(ri.net, c->net) && ulnet_nid_equal(&ri.gateway, &gw))
			return true;
	return false;
}

static bool peer_is_static(ulnet_node *node, const struct ulnet_nid *nid)
{
	struct ulnet_peer_info pi;

	for (unsigned i = 0; ulnet_peer_info_get(node, i, &pi) == 0; i++)
		if (pi.is_static && ulnet_nid_equal(&pi.nid, nid))
			return true;
	return false;
}

static bool rule_equal(const struct ulnet_fault_rule *a, const struct ulnet_fault_rule *b)
{
	return a->kind == b->kind && ulnet_nid_equal(&a->src, &b->src) && ulnet_nid_equal(&a->dst, &b->dst) &&
	       ulnet_nid_equal(&a->local, &b->local) && a->portal == b->portal && a->msg_mask == b->msg_mask &&
	       a->rate == b->rate && a->interval_s == b->interval_s && a->seed == b->seed && a->health == b->health &&
	       a->latency_ms == b->latency_ms && (a->hold_ms == b->hold_ms || a->kind != ULNET_FAULT_REORDER);
}

static bool fault_exists(ulnet_node *node, const struct ulnet_fault_rule *r)
{
	struct ulnet_fault_info fi;

	for (unsigned i = 0; ulnet_fault_info_get(node, ULNET_FAULT_KINDS, i, &fi) == 0; i++)
		if (rule_equal(&fi.rule, r))
			return true;
	return false;
}

/* Does a rule of @r's kind, source and destination exist (ulnet_fault_del would take it too)? */
static bool fault_triple_exists(ulnet_node *node, const struct ulnet_fault_rule *r)
{
	struct ulnet_fault_info fi;

	for (unsigned i = 0; ulnet_fault_info_get(node, r->kind, i, &fi) == 0; i++)
		if (ulnet_nid_equal(&fi.rule.src, &r->src) && ulnet_nid_equal(&fi.rule.dst, &r->dst))
			return true;
	return false;
}

/* The node: options a running node cannot change: each one the file gives must be the node's. */
static int check_node_opts(ulnet_node *node, const struct ulnet_config *cfg, char *err, size_t errlen)
{
	struct ulnet_node_opts run;

	ulnet_node_opts_get(node, &run);
	const struct {
		const char *key;
		uint32_t want, have;
	} fixed[] = {
		{ "pid", cfg->opts.pid, run.pid },
		{ "page_size", cfg->opts.page_size, run.page_size },
		{ "max_peers", cfg->opts.max_peers, run.max_peers },
		{ "busy_poll_us", cfg->opts.busy_poll_us, run.busy_poll_us },
		{ "large_max", cfg->opts.large_max, run.large_max },
		{ "loops", cfg->opts.loops, run.loops },
	};

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (fixed[i].want && fixed[i].want != fixed[i].have) {
			snprintf(err, errlen, "%s: node: %s %u differs from the running node's %u (it cannot change at run time)",
				 cfg->file, fixed[i].key, fixed[i].want, fixed[i].have);
			return -EINVAL;
		}
	if (cfg->opts.transaction_timeout > ULNET_TXN_TIMEOUT_MAX) {
		snprintf(err, errlen, "%s: node: transaction_timeout %u > %u", cfg->file, cfg->opts.transaction_timeout,
			 ULNET_TXN_TIMEOUT_MAX);
		return -EINVAL;
	}
	return 0;
}

int ulnet_config_apply(ulnet_node *node, const struct ulnet_config *cfg, char *err, size_t errlen)
{
	struct ulnet_routing_conf old_rt;
	struct ulnet_ni_info ni;
	bool *add_route = NULL, *add_fault = NULL, *add_ni = NULL, *del_safe = NULL, *add_peer = NULL;
	size_t routes_done = 0, faults_done = 0, nis_done = 0, peers_done = 0, i;
	uint32_t old_txn = 0;
	int rc = 0;

	if (!node || !cfg || !err || !errlen)
		return -EINVAL;
	err[0] = '\0';
	/* ---- checks: nothing changes ---- */
	if ((rc = check_node_opts(node, cfg, err, errlen)))
		return rc;
	add_ni = calloc(cfg->n_nis + 1, sizeof(bool));
	add_route = calloc(cfg->n_routes + 1, sizeof(bool));
	add_fault = calloc(cfg->n_faults + 1, sizeof(bool));
	del_safe = calloc(cfg->n_faults + 1, sizeof(bool));
	add_peer = calloc(cfg->n_peers + 1, sizeof(bool));
	if (!add_ni || !add_route || !add_fault || !del_safe || !add_peer) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < cfg->n_nis; i++) {
		const struct ulnet_config_ni *c = &cfg->nis[i];
		struct ulnet_nid want;

		if (running_ni(node, c->conf.net, &ni) < 0) {
			add_ni[i] = true;
			continue;
		}
		if (c->conf.nid && (ulnet_nid_parse(c->conf.nid, &want, NULL) || !ulnet_nid_equal(&want, &ni.nid))) {
			char have[ULNET_NID_STRLEN];

			snprintf(err, errlen, "%s:%u: net %s runs with NID %s, not %s (an NI cannot change at run time)",
				 cfg->file, c->line, c->conf.net, ulnet_nid_format(&ni.nid, have, sizeof(have)), c->conf.nid);
			rc = -EEXIST;
			goto out;
		}
	}
	for (i = 0; i < cfg->n_routes; i++) {
		const struct ulnet_config_route *r = &cfg->routes[i];
		struct ulnet_nid gw;

		if (route_exists(node, &r->conf))
			continue;
		if (ulnet_nid_parse(r->conf.gateway, &gw, NULL) || !net_will_be_local(node, cfg, ulnet_nid_net(&gw))) {
			snprintf(err, errlen, "%s:%u: route to %s: gateway %s is not on a local net", cfg->file, r->line,
				 r->conf.net, r->conf.gateway);
			rc = -EHOSTUNREACH;
			goto out;
		}
		add_route[i] = true;
	}
	for (i = 0; i < cfg->n_peers; i++) {
		const struct ulnet_config_peer *c = &cfg->peers[i];

		if (peer_is_static(node, &c->nid))
			continue;
		if (!net_will_be_local(node, cfg, ulnet_nid_net(&c->nid))) {
			char nid[ULNET_NID_STRLEN];

			snprintf(err, errlen, "%s:%u: peer %s is not on a local net", cfg->file, c->line,
				 ulnet_nid_format(&c->nid, nid, sizeof(nid)));
			rc = -EHOSTUNREACH;
			goto out;
		}
		add_peer[i] = true;
	}
	for (i = 0; i < cfg->n_faults; i++) {
		add_fault[i] = !fault_exists(node, &cfg->faults[i].rule);
		del_safe[i] = !fault_triple_exists(node, &cfg->faults[i].rule);
	}

	/* ---- changes, each undone on a later failure ---- */
	ulnet_routing_get(node, &old_rt);
	if ((rc = ulnet__config_routing_apply(cfg, node, err, errlen)))
		goto out;
	/* NIs before peers and routes (a peer or a gateway must be on one) */
	for (nis_done = 0; nis_done < cfg->n_nis; nis_done++) {
		const struct ulnet_config_ni *c = &cfg->nis[nis_done];

		if (add_ni[nis_done] && (rc = ulnet_ni_add(node, &c->conf))) {
			snprintf(err, errlen, "%s:%u: cannot add NI %s: %s", cfg->file, c->line,
				 c->conf.nid ? c->conf.nid : c->conf.net, ulnet_strerror(rc));
			goto undo;
		}
	}
	for (peers_done = 0; peers_done < cfg->n_peers; peers_done++) {
		const struct ulnet_config_peer *c = &cfg->peers[peers_done];

		if (add_peer[peers_done] && (rc = ulnet_peer_add(node, &c->nid))) {
			char nid[ULNET_NID_STRLEN];

			snprintf(err, errlen, "%s:%u: cannot add peer %s: %s", cfg->file, c->line,
				 ulnet_nid_format(&c->nid, nid, sizeof(nid)), ulnet_strerror(rc));
			goto undo;
		}
	}
	for (routes_done = 0; routes_done < cfg->n_routes; routes_done++) {
		const struct ulnet_config_route *r = &cfg->routes[routes_done];

		if (add_route[routes_done] && (rc = ulnet_route_add(node, &r->conf))) {
			snprintf(err, errlen, "%s:%u: cannot add route %s via %s: %s", cfg->file, r->line, r->conf.net,
				 r->conf.gateway, ulnet_strerror(rc));
			goto undo;
		}
	}
	if (cfg->opts.transaction_timeout) {
		struct ulnet_node_opts run;

		ulnet_node_opts_get(node, &run);
		old_txn = run.transaction_timeout;
		ulnet_transaction_timeout_set(node, cfg->opts.transaction_timeout); /* in range: checked */
	}
	/* faults last: checked when the file was read, only memory can fail them */
	for (faults_done = 0; faults_done < cfg->n_faults; faults_done++) {
		if (add_fault[faults_done] && (rc = ulnet_fault_add(node, &cfg->faults[faults_done].rule))) {
			snprintf(err, errlen, "%s:%u: cannot add fault %s rule: %s", cfg->file, cfg->faults[faults_done].line,
				 ulnet_fault_kind_name(cfg->faults[faults_done].rule.kind), ulnet_strerror(rc));
			goto undo;
		}
	}
	rc = 0;
	goto out;
undo:
	/* a rule cannot be named alone: ulnet_fault_del takes every rule of its kind, source and
	 * destination, so only a rule with no such neighbour from before is taken back */
	while (faults_done-- > 0)
		if (add_fault[faults_done] && del_safe[faults_done])
			ulnet_fault_del(node, cfg->faults[faults_done].rule.kind, &cfg->faults[faults_done].rule.src,
					&cfg->faults[faults_done].rule.dst);
	while (routes_done-- > 0)
		if (add_route[routes_done])
			ulnet_route_del(node, cfg->routes[routes_done].conf.net, cfg->routes[routes_done].conf.gateway);
	while (peers_done-- > 0)
		if (add_peer[peers_done])
			ulnet_peer_del(node, &cfg->peers[peers_done].nid);
	if (cfg->routing_set)
		ulnet_routing_set(node, &old_rt);
	if (old_txn)
		ulnet_transaction_timeout_set(node, old_txn);
	/* last, with the routing settings back: a node that routes keeps its NIs (ulnet_ni_del) */
	while (nis_done-- > 0)
		if (add_ni[nis_done] && ulnet_ni_del(node, cfg->nis[nis_done].conf.net)) {
			size_t len = strlen(err);

			snprintf(err + len, errlen - len, " (NI %s stays: it could not be removed)",
				 cfg->nis[nis_done].conf.net);
		}
out:
	free(add_ni);
	free(add_route);
	free(add_fault);
	free(del_safe);
	free(add_peer);
	return rc;
}
