/* SPDX-License-Identifier: MIT */
/* `ulnetctl plan`: what the o2ib RDMA planner would do for given layouts and device limits. Needs no
 * node. Thin: parse options into a ulnet_rdma_plan_query; the library checks it, plans and prints. */
#include "plan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <ulnet/ulnet.h>
#include <ulnet/rdma_plan.h>

const char *plan_usage =
	"[--len N] [--resid N] [--src-page-size N] [--src-offset N] [--src-form contig|iovec|kiov]\n"
	"      [--src-mod N] [--dst-page-size N] [--dst-offset N] [--dst-form F] [--dst-mod N]\n"
	"      [--max-send-sge N] [--max-qp-wr N] [--max-frags N] [--bounce-size N] [--json]";
const char *plan_help = "show the o2ib RDMA plan (registrations, work requests, why) for two layouts; needs no node";

static int fail_usage(const char *what, const char *val)
{
	fprintf(stderr, "ulnetctl: plan: %s '%s'\n", what, val);
	return 2;
}

int plan_main(int argc, char **argv)
{
	struct ulnet_rdma_plan_query q;
	uint64_t len, resid = UINT64_MAX, src_ps, src_mod, dst_ps, dst_mod, sge, qp, frags;
	bool json = false;
	char why[256] = "";
	int rc;

	ulnet_rdma_plan_defaults(&q);
	len = q.len, src_ps = q.src.page_size, src_mod = q.src.map_on_demand, dst_ps = q.dst.page_size;
	dst_mod = q.dst.map_on_demand, sge = q.max_send_sge, qp = q.max_qp_wr, frags = q.max_frags;
	for (int i = 0; i < argc; i++) {
		/* the library checks ranges; this only keeps each value in its field's type */
		const struct {
			const char *name;
			uint64_t *v;
		} opts[] = {
			{ "--len", &len }, { "--resid", &resid }, { "--src-page-size", &src_ps },
			{ "--src-offset", &q.src.offset }, { "--src-mod", &src_mod }, { "--dst-page-size", &dst_ps },
			{ "--dst-offset", &q.dst.offset }, { "--dst-mod", &dst_mod }, { "--max-send-sge", &sge },
			{ "--max-qp-wr", &qp }, { "--max-frags", &frags }, { "--bounce-size", &q.bounce_size },
		};
		size_t k;

		if (!strcmp(argv[i], "--json")) {
			json = true;
			continue;
		}
		if (!strcmp(argv[i], "--src-form") || !strcmp(argv[i], "--dst-form")) {
			if (i + 1 == argc)
				return fail_usage("option needs a value:", argv[i]);
			*(argv[i][2] == 's' ? &q.src.form : &q.dst.form) = argv[i + 1];
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
		if (ulnet_size_parse(argv[i + 1], UINT32_MAX, opts[k].v))
			return fail_usage("bad or too large value for", argv[i]);
		i++;
	}
	q.len = len;
	q.resid = resid == UINT64_MAX ? len : resid;
	q.src.page_size = (uint32_t)src_ps, q.src.map_on_demand = (uint32_t)src_mod;
	q.dst.page_size = (uint32_t)dst_ps, q.dst.map_on_demand = (uint32_t)dst_mod;
	q.max_send_sge = (uint32_t)sge, q.max_qp_wr = (uint32_t)qp, q.max_frags = (uint32_t)frags;
	rc = ulnet_rdma_plan_print(stdout, &q, json, why, sizeof(why));
	if (rc == -EINVAL) {
		fprintf(stderr, "ulnetctl: plan: %s\n", why);
		return 2;
	}
	if (rc == -EPROTONOSUPPORT) {
		fprintf(stderr, "ulnetctl: plan: the o2ib LND is not built into this libulnet\n");
		return 1;
	}
	if (rc)
		fprintf(stderr, "ulnetctl: plan: no plan (%s): %s\n", strerror(-rc), why);
	return rc ? 1 : 0;
}
