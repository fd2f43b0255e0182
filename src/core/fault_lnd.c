/* SPDX-License-Identifier: MIT */
/* LND-level fault rules (docs/faults.md): hello, reject and stall act on an LND's connections, not
 * on messages. They live in the node's rule list with the others (fault.c adds and deletes them) but
 * are judged here, under the node lock, when an LND asks on a connection path; their counters stay
 * in the node's list (the per-loop copies of fault.c leave them out). */
#include "internal.h"
#include "fault_rule.h"
#include "fault_lnd.h"

bool ulnet__fault_lnd(struct ulnet_ni *ni, const struct ulnet_nid *peer, enum ulnet_fault_kind kind, uint64_t *seen,
		      struct ulnet_fault_lnd *out)
{
	struct ulnet_node *node = ni->node;
	uint64_t newest = seen ? *seen : 0, now = 0;
	bool acted = false;

	if (!ulnet_fault_kind_is_lnd(kind))
		return false;
	ulnet__lock(node);
	for (unsigned i = 0; i < node->n_faults && !acted; i++) {
		struct ulnet_fault_state *st = &node->faults[i];

		if (st->id > newest)
			newest = st->id;
		if (st->info.rule.kind != kind || (seen && st->id <= *seen) ||
		    !ulnet__fault_matches_conn(&st->info.rule, &ni->nid, peer))
			continue;
		if (!now && !st->info.rule.rate)
			now = ulnet__node_now(node);
		if (ulnet__fault_decide(st, now)) {
			out->id = st->id;
			out->rule = st->info.rule;
			acted = true;
		}
	}
	/* the rules after the acting one have not seen it: they may judge it later */
	if (seen && !acted)
		*seen = newest;
	else if (seen)
		*seen = out->id;
	ulnet__lock_release(node);
	return acted;
}

bool ulnet__fault_lnd_alive(struct ulnet_ni *ni, uint64_t id)
{
	struct ulnet_node *node = ni->node;
	bool alive = false;

	ulnet__lock(node);
	for (unsigned i = 0; i < node->n_faults && !alive; i++)
		alive = node->faults[i].id == id;
	ulnet__lock_release(node);
	return alive;
}

void ulnet__fault_lnd_reset(struct ulnet_node *node)
{
	ulnet__lock(node);
	for (unsigned i = 0; i < node->n_faults; i++)
		if (ulnet_fault_kind_is_lnd(node->faults[i].info.rule.kind))
			node->faults[i].info.matched = node->faults[i].info.acted = 0;
	ulnet__lock_release(node);
}

void ulnet__fault_lnd_changed(struct ulnet_node *node)
{
	/* an NI goes only when the node closes: the pointer outlives the look */
	for (unsigned idx = 0;; idx++) {
		struct ulnet_ni *ni;
		bool ask;

		ulnet__lock(node);
		ni = ulnet__ni_at(node, idx);
		ask = ni && ni->started && ni->ops->lnd_fault_changed;
		ulnet__lock_release(node);
		if (!ni)
			break;
		if (!ask)
			continue;
		ulnet__loop_enter(ni->loop);
		ni->ops->lnd_fault_changed(ni);
		ulnet__loop_exit(ni->loop);
	}
}
