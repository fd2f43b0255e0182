/* SPDX-License-Identifier: MIT */
/* Route policy, pure: which of two routes a message takes, and what a gateway's ping reply says of
 * a route through it. Table-tested in tests/unit/test_route_rank.c. */
#include <limits.h>
#include "internal.h"

static int hops_rank(int hops)
{
	return hops == ULNET_ROUTE_HOPS_UNDEF ? 1 : hops;
}

bool ulnet__route_better(const struct ulnet_route_rank *a, const struct ulnet_route_rank *b)
{
	if (a->up != b->up)
		return a->up;
	if (a->priority != b->priority)
		return a->priority < b->priority;
	if (hops_rank(a->hops) != hops_rank(b->hops))
		return hops_rank(a->hops) < hops_rank(b->hops);
	if (a->credits != INT_MIN && b->credits != INT_MIN && a->credits != b->credits)
		return a->credits > b->credits;
	return a->seq < b->seq;
}

enum ulnet_route_down ulnet__route_judge(uint32_t net, uint32_t features, const struct ulnet_nid *nids,
					 const uint32_t *status, unsigned n, uint32_t sensitivity, bool *multi_hop)
{
	unsigned on_net = 0, up = 0;

	*multi_hop = false;
	if (features & ULNET_PING_FEAT_RTE_DISABLED)
		return ULNET_ROUTE_GW_NOT_ROUTING;
	for (unsigned i = 0; i < n; i++) {
		if (ulnet_nid_net(&nids[i]) != net)
			continue;
		on_net++;
		/* without NI_STATUS the reply says nothing of its NIs: take them as up */
		if (!(features & ULNET_PING_FEAT_NI_STATUS) || status[i] == ULNET_NI_STATUS_UP)
			up++;
	}
	if (!on_net) {
		*multi_hop = true; /* the net is further on: the gateway's answer is all we know */
		return ULNET_ROUTE_OK;
	}
	/* at least @sensitivity % of its NIs on the net up, and always at least one */
	if (up == 0 || (uint64_t)up * 100 < (uint64_t)on_net * sensitivity)
		return ULNET_ROUTE_GW_NET_DOWN;
	return ULNET_ROUTE_OK;
}
