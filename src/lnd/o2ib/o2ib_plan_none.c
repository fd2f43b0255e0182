/* SPDX-License-Identifier: MIT */
/* ulnet_rdma_plan_* when the o2ib LND is not built (-Dlnd_o2ib=disabled): the API stays, and says so. */
#include <errno.h>
#include <string.h>
#include <ulnet/rdma_plan.h>

#include "internal.h"

void ulnet_rdma_plan_defaults(struct ulnet_rdma_plan_query *q)
{
	memset(q, 0, sizeof(*q));
}

int ulnet_rdma_plan_print(FILE *f, const struct ulnet_rdma_plan_query *q, bool json, char *why, size_t whylen)
{
	(void)f, (void)q, (void)json;
	snprintf(why, whylen, "the o2ib LND is not built (-Dlnd_o2ib=disabled)");
	return -EPROTONOSUPPORT;
}
