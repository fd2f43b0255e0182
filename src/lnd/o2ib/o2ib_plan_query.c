/* SPDX-License-Identifier: MIT */
/* ulnet_rdma_plan_print: the planner run offline on synthetic layouts (include/ulnet/rdma_plan.h).
 * The sink is described by o2ib_plan_advertise with its map_on_demand; the source plan then moves
 * @resid bytes into that description. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <ulnet/rdma_plan.h>

#include "ulnet/ulnet.h"
#include "o2ib_plan.h"
#include "o2ib_wire.h"

_Static_assert(ULNET_RDMA_FRAGS_DEFAULT == O2IB_MAX_RDMA_FRAGS, "public default is the wire's");
_Static_assert(ULNET_RDMA_FRAGS_CAP == O2IB_RD_FRAGS_CAP, "public cap is the wire's");

/* Synthetic addresses: the values only have to be distinct and page aligned. */
#define SRC_BASE UINT64_C(0x10000000)
#define DST_BASE UINT64_C(0x80000000)
#define SRC_BOUNCE UINT64_C(0x40000000)
#define DST_BOUNCE UINT64_C(0xc0000000)
#define OFFSET_MAX (16u * ULNET_MTU)

static int form_parse(const char *s, enum o2ib_mem_form *out)
{
	static const enum o2ib_mem_form forms[] = { O2IB_MEM_CONTIG, O2IB_MEM_IOVEC, O2IB_MEM_KIOV };

	for (size_t i = 0; s && i < sizeof(forms) / sizeof(forms[0]); i++)
		if (!strcmp(s, o2ib_mem_form_name(forms[i]))) {
			*out = forms[i];
			return 0;
		}
	return -EINVAL;
}

static int layout_check(const char *side, const struct ulnet_rdma_layout *l, enum o2ib_mem_form *form, char *why,
			size_t whylen)
{
	if (form_parse(l->form, form))
		snprintf(why, whylen, "%s form must be contig, iovec or kiov, not '%s'", side, l->form ? l->form : "");
	else if (l->page_size < 4096 || l->page_size > 65536 || (l->page_size & (l->page_size - 1)))
		snprintf(why, whylen, "%s page size must be a power of two from 4K to 64K, not %u", side, l->page_size);
	else if (l->offset > OFFSET_MAX)
		snprintf(why, whylen, "%s offset %llu is over %u", side, (unsigned long long)l->offset, OFFSET_MAX);
	else if (l->map_on_demand > 256)
		snprintf(why, whylen, "%s map_on_demand must be 0..256, not %u", side, l->map_on_demand);
	else
		return 0;
	return -EINVAL;
}

static struct o2ib_seg *synth(const struct ulnet_rdma_layout *l, enum o2ib_mem_form form, uint64_t base,
			      uint64_t len, struct o2ib_mem *mem)
{
	int n = o2ib_mem_synth(form, l->page_size, base, l->offset, len, NULL, 0, mem);
	struct o2ib_seg *segs = n > 0 ? calloc((size_t)n, sizeof(*segs)) : NULL;

	if (segs)
		o2ib_mem_synth(form, l->page_size, base, l->offset, len, segs, (uint32_t)n, mem);
	return segs;
}

void ulnet_rdma_plan_defaults(struct ulnet_rdma_plan_query *q)
{
	*q = (struct ulnet_rdma_plan_query){
		.len = ULNET_MTU, .resid = ULNET_MTU,
		.src = { "kiov", 4096, 0, 1 }, .dst = { "contig", 4096, 0, 1 },
		.max_send_sge = 2, .max_qp_wr = 1024, .max_frags = ULNET_RDMA_FRAGS_DEFAULT, .bounce_size = ULNET_MTU,
	};
}

int ulnet_rdma_plan_print(FILE *f, const struct ulnet_rdma_plan_query *q, bool json, char *why, size_t whylen)
{
	enum o2ib_mem_form sform, dform;
	struct o2ib_mem smem, dmem;
	struct o2ib_seg *ss = NULL, *ds = NULL;
	struct o2ib_adv *adv = NULL;
	struct o2ib_plan plan = { 0 };
	int rc;

	if (q->len == 0 || q->len > ULNET_MTU || q->resid > q->len) {
		snprintf(why, whylen, "length must be 1..1M and the bytes moved at most the length");
		return -EINVAL;
	}
	if ((rc = layout_check("source", &q->src, &sform, why, whylen)) ||
	    (rc = layout_check("destination", &q->dst, &dform, why, whylen)))
		return rc;
	if (q->max_send_sge < 1 || q->max_send_sge > 64 || q->max_qp_wr < 2 || q->max_qp_wr > (1u << 20) ||
	    q->max_frags < 1 || q->max_frags > ULNET_RDMA_FRAGS_CAP || q->bounce_size > 16u * ULNET_MTU) {
		snprintf(why, whylen, "limits: max_send_sge 1..64, max_qp_wr 2..1048576, max_frags 1..%u, bounce "
			 "size at most 16M", ULNET_RDMA_FRAGS_CAP);
		return -EINVAL;
	}
	ss = synth(&q->src, sform, SRC_BASE, q->resid ? q->resid : 1, &smem);
	ds = synth(&q->dst, dform, DST_BASE, q->len, &dmem);
	adv = calloc(1, sizeof(*adv));
	if (!ss || !ds || !adv) {
		snprintf(why, whylen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	smem.len = q->resid;
	{
		struct o2ib_limits dlim = { q->max_send_sge, q->max_qp_wr, q->max_frags, q->dst.map_on_demand,
					    DST_BOUNCE, q->bounce_size };
		struct o2ib_limits slim = { q->max_send_sge, q->max_qp_wr, q->max_frags, q->src.map_on_demand,
					    SRC_BOUNCE, q->bounce_size };

		rc = o2ib_plan_advertise(&dmem, &dlim, adv);
		if (rc == 0)
			rc = o2ib_plan_source(&smem, &adv->rd, q->resid, &slim, &plan);
		o2ib_plan_print(f, adv, rc == 0 || plan.why.verdict ? &plan : NULL, json);
		if (rc)
			snprintf(why, whylen, "%s", plan.why.verdict ? plan.why.verdict : adv->why.verdict ? adv->why.verdict : "");
	}
out:
	o2ib_plan_free(&plan);
	free(adv);
	free(ss);
	free(ds);
	return rc;
}
