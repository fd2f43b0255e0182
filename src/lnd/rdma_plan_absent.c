/* SPDX-License-Identifier: MIT */
/* ulnet/rdma_plan.h without the o2ib LND (-Dlnd_o2ib=disabled): the API stays, and says so. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <ulnet/rdma_plan.h>

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
