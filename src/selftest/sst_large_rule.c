/* SPDX-License-Identifier: MIT */
/* Which nodes a brw above LNET_MTU may involve (docs/selftest.md §6, docs/large.md). lst moves at most
 * 1 MiB per brw RPC (LNET_MTU: its wire carries at most 256 pages, and a kernel node refuses more); a
 * ulnet node moves more, up to its node option large_max, as the core's rendezvous of LNet messages.
 * A console asks this before it sends a brw above 1 MiB anywhere: the client and the server must both
 * be ulnet nodes that announced a large_max taking the size. Pure policy: no I/O. */
#include "sst.h"

#include <errno.h>
#include <stdio.h>

#include <ulnet/md.h>

int ulnet__sst_large_check(uint32_t size, const char *role, const char *nid, uint32_t node_feats, char *why,
			   size_t cap)
{
	uint32_t max = ulnet__sst_node_large_max(node_feats);
	char has[64];

	if (size <= ULNET_MTU || ((node_feats & ULNET_SST_NODE_ANY_OFFSET) && size <= max))
		return 0; /* (a word without bit 0 is no ulnet node's: its other bits mean nothing) */
	if (!(node_feats & ULNET_SST_NODE_ANY_OFFSET))
		snprintf(has, sizeof(has), "is not known to be a ulnet node");
	else if (!max)
		snprintf(has, sizeof(has), "has large payloads off");
	else
		snprintf(has, sizeof(has), "has large_max %u", max);
	snprintf(why, cap, "brw size %u is above lst's %u bytes per RPC (LNET_MTU), which only ulnet nodes "
		 "exceed, up to their node option large_max: %s %s %s", size, ULNET_MTU, role, nid, has);
	return -EINVAL;
}
