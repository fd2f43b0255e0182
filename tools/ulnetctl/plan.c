/* SPDX-License-Identifier: MIT */
/* `ulnetctl plan`: what the o2ib RDMA planner would do for given layouts and device limits. Needs no
 * node. Thin: parse options, build the two synthetic layouts, call the library's planner and printer.
 * The sink (remote) is described by o2ib_plan_advertise with the remote map_on_demand; the source
 * (local) plan then moves --resid bytes (default --len) into that description. */
#include "plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/o2ib/o2ib_plan.h"

/* Synthetic addresses: the values only have to be distinct and page aligned. */
#define SRC_BASE UINT64_C(0x10000000)
#define DST_BASE UINT64_C(0x80000000)
#define SRC_BOUNCE UINT64_C(0x40000000)
#define DST_BOUNCE UINT64_C(0xc0000000)
#define LNET_MTU (1u << 20)

const char *plan_usage =
	"[--len N] [--resid N] [--src-page-size N] [--src-offset N] [--src-form contig|iovec|kiov]\n"
	"      [--src-mod N] [--dst-page-size N] [--dst-offset N] [--dst-form F] [--dst-mod N]\n"
	"      [--max-send-sge N] [--max-qp-wr N] [--max-frags N] [--bounce-size N] [--json]";
const char *plan_help = "show the o2ib RDMA plan (registrations, work requests, why) for two layouts; needs no node";

struct side {
	uint64_t page_size, offset, mod;
	enum o2ib_mem_form form;
};

static int fail_usage(const char *what, const char *val)
{
	fprintf(stderr, "ulnetctl: plan: %s '%s'\n", what, val);
	return 2;
}

/* Decimal or 0x..., with an optional K or M suffix (binary units). */
static int parse_size(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_form(const char *s, enum o2ib_mem_form *out)
{
	static const enum o2ib_mem_form forms[] = { O2IB_MEM_CONTIG, O2IB_MEM_IOVEC, O2IB_MEM_KIOV };

	for (size_t i = 0; i < 3; i++)
		if (!strcmp(s, o2ib_mem_form_name(forms[i]))) {
			*out = forms[i];
			return 0;
		}
	return -EINVAL;
}

static struct o2ib_seg *synth(const struct side *s, uint64_t base, uint64_t len, struct o2ib_mem *mem)
{
	int n = o2ib_mem_synth(s->form, (uint32_t)s->page_size, base, s->offset, len, NULL, 0, mem);
	struct o2ib_seg *segs = n > 0 ? calloc((size_t)n, sizeof(*segs)) : NULL;

	if (segs)
		o2ib_mem_synth(s->form, (uint32_t)s->page_size, base, s->offset, len, segs, (uint32_t)n, mem);
	return segs;
}

int plan_main(int argc, char **argv)
{
	struct side src = { 4096, 0, 1, O2IB_MEM_KIOV }, dst = { 4096, 0, 1, O2IB_MEM_CONTIG };
	uint64_t len = LNET_MTU, resid = UINT64_MAX, sge = 2, qp = 1024, frags = O2IB_MAX_RDMA_FRAGS, bounce = LNET_MTU;
	bool json = false;
	struct o2ib_mem smem, dmem;
	struct o2ib_seg *ss = NULL, *ds = NULL;
	struct o2ib_adv *adv = NULL;
	struct o2ib_plan plan = { 0 };
	int status = 1;

	for (int i = 0; i < argc; i++) {
		static const struct {
			const char *name;
			uint64_t *v, max;
		} opts[] = {
			{ "--len", NULL, LNET_MTU }, { "--resid", NULL, LNET_MTU },
			{ "--src-page-size", NULL, 65536 }, { "--src-offset", NULL, 16 * LNET_MTU },
			{ "--src-mod", NULL, 256 }, { "--dst-page-size", NULL, 65536 },
			{ "--dst-offset", NULL, 16 * LNET_MTU }, { "--dst-mod", NULL, 256 },
			{ "--max-send-sge", NULL, 64 }, { "--max-qp-wr", NULL, 1 << 20 },
			{ "--max-frags", NULL, O2IB_RD_FRAGS_CAP }, { "--bounce-size", NULL, 16 * LNET_MTU },
		};
		uint64_t *targets[] = { &len, &resid, &src.page_size, &src.offset, &src.mod, &dst.page_size,
					&dst.offset, &dst.mod, &sge, &qp, &frags, &bounce };
		size_t k;

		if (!strcmp(argv[i], "--json")) {
			json = true;
			continue;
		}
		if (!strcmp(argv[i], "--src-form") || !strcmp(argv[i], "--dst-form")) {
			if (i + 1 == argc)
				return fail_usage("option needs a value:", argv[i]);
			if (parse_form(argv[i + 1], argv[i][2] == 's' ? &src.form : &dst.form))
				return fail_usage("form must be contig, iovec or kiov, not", argv[i + 1]);
			i++;
			continue;
		}
		for (k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
			if (!strcmp(argv[i], opts[k].name))
				break;
		if (k == sizeof(opts) / sizeof(opts[0]))
			return fail_usage("unknown option", argv[i]);
		if (i + 1 == argc)
			return fail_usage("option needs a value:", argv[i]);
		if (parse_size(argv[i + 1], opts[k].max, targets[k]))
			return fail_usage("bad or too large value for", argv[i]);
		i++;
	}
	if (resid == UINT64_MAX)
		resid = len;
	if (len == 0 || resid > len) {
		fprintf(stderr, "ulnetctl: plan: --len must be 1..1M and --resid at most --len\n");
		return 2;
	}
	for (int k = 0; k < 2; k++) {
		uint64_t ps = k ? dst.page_size : src.page_size;

		if (ps < 4096 || (ps & (ps - 1)))
			return fail_usage("page size must be a power of two from 4K to 64K, not", k ? "--dst-page-size"
												 : "--src-page-size");
	}
	if (sge == 0 || qp < 2 || frags == 0) {
		fprintf(stderr, "ulnetctl: plan: limits: --max-send-sge >= 1, --max-qp-wr >= 2, --max-frags >= 1\n");
		return 2;
	}

	ss = synth(&src, SRC_BASE, resid ? resid : 1, &smem);
	ds = synth(&dst, DST_BASE, len, &dmem);
	adv = calloc(1, sizeof(*adv));
	if (!ss || !ds || !adv) {
		fprintf(stderr, "ulnetctl: plan: out of memory\n");
		goto out;
	}
	smem.len = resid;
	{
		struct o2ib_limits dlim = { (uint32_t)sge, (uint32_t)qp, (uint32_t)frags, (uint32_t)dst.mod, DST_BOUNCE,
					    bounce };
		struct o2ib_limits slim = { (uint32_t)sge, (uint32_t)qp, (uint32_t)frags, (uint32_t)src.mod, SRC_BOUNCE,
					    bounce };
		int rc = o2ib_plan_advertise(&dmem, &dlim, adv);

		if (rc == 0)
			rc = o2ib_plan_source(&smem, &adv->rd, resid, &slim, &plan);
		o2ib_plan_print(stdout, adv, rc == 0 || plan.why.verdict ? &plan : NULL, json);
		status = rc ? 1 : 0;
		if (rc)
			fprintf(stderr, "ulnetctl: plan: no plan (%s): %s\n", strerror(-rc),
				plan.why.verdict ? plan.why.verdict : adv->why.verdict);
	}
out:
	o2ib_plan_free(&plan);
	free(adv);
	free(ss);
	free(ds);
	return status;
}
