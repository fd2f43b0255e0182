/* SPDX-License-Identifier: MIT */
/* The o2ib LND's RDMA planner, offline: what it would register and post to move data between two
 * synthetic memory layouts under given device limits (`ulnetctl plan`). Needs no node. */
#ifndef ULNET_RDMA_PLAN_H
#define ULNET_RDMA_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "nid.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One side's memory: @len bytes starting @offset bytes into its first fragment. */
struct ulnet_rdma_layout {
	const char *form;       /* "contig" (one buffer), "iovec" (page-crossing fragments) or "kiov" (pages) */
	uint32_t page_size;     /* a power of two, 4096..65536 */
	uint64_t offset;        /* at most 16 MiB */
	uint32_t map_on_demand; /* the side's map_on_demand (0: page by page; N: one region above N
				 * fragments), 0..256 */
};

struct ulnet_rdma_plan_query {
	uint64_t len;           /* the sink's (destination's) length, 1..ULNET_MTU */
	uint64_t resid;         /* bytes the source moves into it, at most @len */
	struct ulnet_rdma_layout src, dst;
	uint32_t max_send_sge;  /* device: SGEs per work request, 1..64 */
	uint32_t max_qp_wr;     /* device: send-queue depth, 2..2^20 */
	uint32_t max_frags;     /* fragments in one RDMA descriptor, 1..ULNET_RDMA_FRAGS_CAP */
	uint64_t bounce_size;   /* pre-registered bounce buffer, 0..16 MiB (0: none) */
};
#define ULNET_RDMA_FRAGS_DEFAULT 257u /* IBLND_MAX_RDMA_FRAGS */
#define ULNET_RDMA_FRAGS_CAP 335u     /* the most one o2ib message can describe */

/* The query `ulnetctl plan` starts from: 1 MiB from kiov pages into a contig buffer, 4 KiB pages,
 * map_on_demand 1, 2 SGEs, 1024 WRs, ULNET_RDMA_FRAGS_DEFAULT, a 1 MiB bounce buffer. */
ULNET_EXPORT void ulnet_rdma_plan_defaults(struct ulnet_rdma_plan_query *q);
/* Describe the sink (dst), plan the source (src) into it, and print both to @f as text or one line of
 * JSON. 0: a plan exists. -EINVAL: @q is out of range (the rule broken in @why; nothing printed).
 * Otherwise the planner's refusal (e.g. -EMSGSIZE), its verdict in @why, and what it decided before
 * refusing printed. -EPROTONOSUPPORT: the o2ib LND is not built. */
ULNET_EXPORT int ulnet_rdma_plan_print(FILE *f, const struct ulnet_rdma_plan_query *q, bool json, char *why,
				       size_t whylen);

#ifdef __cplusplus
}
#endif
#endif
