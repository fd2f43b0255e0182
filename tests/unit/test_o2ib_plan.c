/* SPDX-License-Identifier: MIT */
/* The o2ib RDMA planner (src/lnd/o2ib/o2ib_plan.c). The matrix of issue 9 ("What it must show"): page
 * sizes {4K,64K} on each side, map_on_demand {0,1,32} on each side, offsets, sizes, iovec and kiov,
 * max_send_sge {1,2,30}, send-queue room {16, 1024}, Put (sink described exactly) and Get (sink is the
 * whole MD, the reply shorter). Every plan must succeed and keep the invariants (bytes covered exactly
 * once and in order, SGEs per WR, WRs <= max_frags, windows <= send-queue room); a byte-level
 * simulation applies plans to real buffers (bounce copies included) and checks the data. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lnd/o2ib/o2ib_plan.h"

#define KIB 1024u
#define MIB (1024u * 1024u)
#define ARENA (4u * MIB)
#define BOUNCE (MIB + 64u * KIB)
#define MAX_SEGS 600u

static uint8_t *src_arena, *dst_arena, *src_bounce, *dst_bounce, *pattern;

static int setup(void **state)
{
	(void)state;
	src_arena = aligned_alloc(65536, ARENA);
	dst_arena = aligned_alloc(65536, ARENA);
	src_bounce = aligned_alloc(65536, BOUNCE);
	dst_bounce = aligned_alloc(65536, BOUNCE);
	pattern = malloc(2 * MIB);
	if (!src_arena || !dst_arena || !src_bounce || !dst_bounce || !pattern)
		return -1;
	memset(dst_arena, 0, ARENA);
	memset(src_arena, 0, ARENA);
	for (uint32_t t = 0; t < 2 * MIB; t++)
		pattern[t] = (uint8_t)((t * 131u + 7u) % 251u + 1u); /* never 0 */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(src_arena);
	free(dst_arena);
	free(src_bounce);
	free(dst_bounce);
	free(pattern);
	return 0;
}

static uint64_t ptr(const void *p) { return (uint64_t)(uintptr_t)p; }

/* A cursor over transfer bytes laid out in segments (or descriptor fragments). */
struct cur {
	const struct o2ib_seg *segs;
	uint32_t n, i;
	uint64_t off;
};

static void cur_init(struct cur *c, const struct o2ib_seg *segs, uint32_t n, uint64_t skip)
{
	*c = (struct cur){ segs, n, 0, 0 };
	while (c->i < n && skip >= segs[c->i].len) {
		skip -= segs[c->i].len;
		c->i++;
	}
	c->off = skip;
}
static uint64_t cur_addr(const struct cur *c) { assert_true(c->i < c->n); return c->segs[c->i].addr + c->off; }
static uint64_t cur_left(const struct cur *c) { return c->segs[c->i].len - c->off; }
static void cur_adv(struct cur *c, uint64_t n)
{
	while (n) {
		uint64_t take = cur_left(c) < n ? cur_left(c) : n;

		c->off += take;
		n -= take;
		if (c->off == c->segs[c->i].len) {
			c->i++;
			c->off = 0;
			while (c->i < c->n && c->segs[c->i].len == 0)
				c->i++;
		}
	}
}
/* Copy @len transfer bytes between the segments at the cursor and a flat buffer. */
static void cur_copy(struct cur *c, uint8_t *flat, uint64_t len, bool to_segs)
{
	while (len) {
		uint64_t take = cur_left(c) < len ? cur_left(c) : len;
		uint8_t *p = (uint8_t *)(uintptr_t)cur_addr(c);

		if (to_segs)
			memcpy(p, flat, take);
		else
			memcpy(flat, p, take);
		flat += take;
		len -= take;
		cur_adv(c, take);
	}
}

static struct o2ib_seg rd_segs[O2IB_RD_FRAGS_CAP];

static uint32_t rd_as_segs(const struct o2ib_rdma_desc *rd)
{
	for (uint32_t i = 0; i < rd->nfrags; i++)
		rd_segs[i] = (struct o2ib_seg){ rd->frags[i].addr, rd->frags[i].nob };
	return rd->nfrags;
}

/* Invariants of a plan moving @resid bytes of @src into what @adv describes. */
static void check_invariants(const struct o2ib_mem *src, const struct o2ib_adv *adv, const struct o2ib_plan *p,
			     const struct o2ib_limits *lim)
{
	struct o2ib_seg bounce = { lim->bounce_addr, p->resid };
	struct cur lc, rc;
	uint64_t total = 0;
	uint32_t per_window[4096] = { 0 };

	if (p->strategy == O2IB_STRAT_BOUNCE)
		cur_init(&lc, &bounce, 1, 0);
	else
		cur_init(&lc, src->segs, src->nsegs, src->offset);
	cur_init(&rc, rd_segs, rd_as_segs(&adv->rd), 0);
	assert_true(p->nwrs <= lim->max_frags);
	assert_int_equal(p->nwindows, p->nwrs / lim->sq_room + 1);
	for (uint32_t w = 0; w < p->nwrs; w++) {
		const struct o2ib_wr *wr = &p->wrs[w];
		uint64_t wr_bytes = 0;

		assert_true(wr->nsge >= 1 && wr->nsge <= lim->max_send_sge);
		assert_true(wr->window < p->nwindows && wr->window < 4096);
		per_window[wr->window]++;
		/* one remote fragment per WR, in order */
		assert_true(wr->remote_addr == cur_addr(&rc));
		assert_true(wr->nob <= cur_left(&rc));
		assert_int_equal(wr->remote_frag, rc.i);
		for (uint32_t s = 0; s < wr->nsge; s++) {
			const struct o2ib_sge *sge = &p->sges[wr->sge0 + s];
			const struct o2ib_reg *reg = &p->regs[sge->reg];

			assert_true(sge->len > 0);
			assert_true(sge->addr == cur_addr(&lc));     /* local bytes in order, none skipped */
			assert_true(sge->len <= cur_left(&lc));      /* inside one local segment */
			assert_true(sge->reg < p->nregs);
			assert_true(sge->addr >= reg->addr && sge->addr + sge->len <= reg->addr + reg->len);
			cur_adv(&lc, sge->len);
			wr_bytes += sge->len;
		}
		assert_int_equal(wr_bytes, wr->nob);
		cur_adv(&rc, wr->nob);
		total += wr->nob;
		assert_true(wr->signalled == ((w + 1) % lim->sq_room == 0));
	}
	assert_true(total == p->resid);                      /* every byte exactly once */
	for (uint32_t w = 0; w + 1 < p->nwindows; w++)
		assert_int_equal(per_window[w], lim->sq_room);
	assert_true(per_window[p->nwindows - 1] + 1 <= lim->sq_room); /* + the completion SEND */
}

/* Apply the plan to the buffers: bounce in, RDMA WRITEs, bounce out; check the sink. */
static void simulate(const struct o2ib_mem *src, const struct o2ib_mem *dst, const struct o2ib_adv *adv,
		     const struct o2ib_plan *p)
{
	struct cur c;
	uint8_t *check = pattern + MIB; /* scratch past the pattern we use */

	cur_init(&c, src->segs, src->nsegs, src->offset);
	cur_copy(&c, pattern, p->resid, true);
	if (p->strategy == O2IB_STRAT_BOUNCE) {
		cur_init(&c, src->segs, src->nsegs, src->offset);
		cur_copy(&c, src_bounce, p->resid, false);
	}
	for (uint32_t w = 0; w < p->nwrs; w++) {
		uint8_t *to = (uint8_t *)(uintptr_t)p->wrs[w].remote_addr;

		for (uint32_t s = 0; s < p->wrs[w].nsge; s++) {
			const struct o2ib_sge *sge = &p->sges[p->wrs[w].sge0 + s];

			memcpy(to, (const uint8_t *)(uintptr_t)sge->addr, sge->len);
			to += sge->len;
		}
	}
	if (adv->how == O2IB_STRAT_BOUNCE) {
		cur_init(&c, dst->segs, dst->nsegs, dst->offset);
		cur_copy(&c, dst_bounce, p->resid, true);
	}
	cur_init(&c, dst->segs, dst->nsegs, dst->offset);
	cur_copy(&c, check, dst->len, false);
	assert_memory_equal(check, pattern, p->resid);
	for (uint64_t i = p->resid; i < dst->len; i++) /* a short reply leaves the rest of the sink alone */
		assert_int_equal(check[i], 0);
	if (dst->offset) { /* nothing before the sink's first byte */
		struct cur b;

		cur_init(&b, dst->segs, dst->nsegs, dst->offset - 1);
		assert_int_equal(*(uint8_t *)(uintptr_t)cur_addr(&b), 0);
	}
	/* restore zeros for the next case */
	memset(check, 0, dst->len);
	cur_init(&c, dst->segs, dst->nsegs, dst->offset);
	cur_copy(&c, check, dst->len, true);
}

struct mside {
	uint32_t ps, mod;
	enum o2ib_mem_form form;
	uint64_t off, len;
};

static struct o2ib_seg src_segs[MAX_SEGS], dst_segs[MAX_SEGS];
static struct o2ib_adv adv;
static unsigned n_plans, n_sims, n_bounce, n_region, n_gather, n_adv_bounce;

static void one(const struct mside *s, const struct mside *d, uint32_t sge, uint32_t sq, uint32_t max_frags,
		uint64_t resid, bool sim)
{
	struct o2ib_mem src, dst;
	struct o2ib_limits dlim = { sge, sq, max_frags, d->mod, ptr(dst_bounce), BOUNCE };
	struct o2ib_limits slim = { sge, sq, max_frags, s->mod, ptr(src_bounce), BOUNCE };
	struct o2ib_plan plan;
	int rc;

	assert_true(o2ib_mem_synth(d->form, d->ps, ptr(dst_arena), d->off, d->len, dst_segs, MAX_SEGS, &dst) <= (int)MAX_SEGS);
	assert_true(o2ib_mem_synth_span(d->form, d->ps, d->off, d->len) <= ARENA);
	assert_true(o2ib_mem_synth(s->form, s->ps, ptr(src_arena), s->off, s->len, src_segs, MAX_SEGS, &src) <= (int)MAX_SEGS);
	rc = o2ib_plan_advertise(&dst, &dlim, &adv);
	if (rc)
		fail_msg("advertise rc %d: %s", rc, adv.why.verdict);
	assert_true(adv.rd.nfrags >= 1 && adv.rd.nfrags <= max_frags && adv.rd.nfrags <= O2IB_ADV_FRAGS_MAX);
	n_adv_bounce += adv.how == O2IB_STRAT_BOUNCE;
	rc = o2ib_plan_source(&src, &adv.rd, resid, &slim, &plan);
	if (rc)
		fail_msg("source rc %d: %s (src %s ps %u off %" PRIu64 " len %" PRIu64 ", sge %u sq %u)", rc,
			 plan.why.verdict, o2ib_mem_form_name(s->form), s->ps, s->off, s->len, sge, sq);
	check_invariants(&src, &adv, &plan, &slim);
	n_plans++;
	n_bounce += plan.strategy == O2IB_STRAT_BOUNCE;
	n_region += plan.strategy == O2IB_STRAT_REGION;
	n_gather += plan.strategy == O2IB_STRAT_GATHER;
	if (sim) {
		simulate(&src, &dst, &adv, &plan);
		n_sims++;
	}
	o2ib_plan_free(&plan);
}

static void test_matrix(void **state)
{
	static const uint32_t pss[] = { 4096, 65536 }, mods[] = { 0, 1, 32 }, sges[] = { 1, 2, 30 },
			      sqs[] = { 16, 1024 };
	static const uint64_t offs[] = { 0, 1, 4095, 4096, 65535, 65543 };
	static const int64_t sizes[] = { 1, 3976, 3977, 4096, 65536, -1 /* 1 MiB - offset */, MIB };
	static const enum o2ib_mem_form forms[] = { O2IB_MEM_IOVEC, O2IB_MEM_KIOV };

	(void)state;
	n_plans = n_sims = n_bounce = n_region = n_gather = n_adv_bounce = 0;
	for (unsigned a = 0; a < 2; a++)
	for (unsigned b = 0; b < 2; b++)
	for (unsigned m = 0; m < 3; m++)
	for (unsigned n = 0; n < 3; n++)
	for (unsigned o = 0; o < 6; o++)
	for (unsigned z = 0; z < 7; z++)
	for (unsigned f = 0; f < 2; f++)
	for (unsigned g = 0; g < 3; g++)
	for (unsigned q = 0; q < 2; q++) {
		uint64_t len = sizes[z] < 0 ? MIB - offs[o] : (uint64_t)sizes[z];
		bool small = len <= 65536;
		/* the big ones are simulated on a deterministic slice; the invariants hold for all */
		bool sim = small || (g == 0 && q == 0 && m == n);
		struct mside put_src = { pss[a], mods[m], forms[f], offs[o], len };
		struct mside put_dst = { pss[b], mods[n], forms[f], offs[o], len };
		/* Get: the sink is the whole MD; the target's reply (from offset 0) is shorter */
		uint64_t reply = len - len / 3;
		struct mside get_src = { pss[a], mods[m], forms[f], 0, reply };

		one(&put_src, &put_dst, sges[g], sqs[q], O2IB_MAX_RDMA_FRAGS, len, sim);
		one(&get_src, &put_dst, sges[g], sqs[q], O2IB_MAX_RDMA_FRAGS, reply, sim);
	}
	print_message("matrix: %u plans (%u gather, %u region, %u bounce; %u sinks bounced), %u simulated\n", n_plans,
		      n_gather, n_region, n_bounce, n_adv_bounce, n_sims);
	assert_int_equal(n_plans, 2u * 2 * 2 * 3 * 3 * 6 * 7 * 2 * 3 * 2);
	assert_true(n_bounce > 0 && n_region > 0 && n_gather > 0);
}

/* LU-5718: 1 MiB from page-aligned 4 KiB pieces into a sink at an odd offset described page by page,
 * max_send_sge=1, a peer that negotiated 16 fragments. */
static void test_lu5718(void **state)
{
	struct mside src = { 4096, 0, O2IB_MEM_KIOV, 0, MIB };
	struct mside dst = { 4096, 0, O2IB_MEM_CONTIG, 7, MIB };
	struct mside dst_iov = { 4096, 0, O2IB_MEM_IOVEC, 7, MIB };
	struct o2ib_mem s, d;
	struct o2ib_limits lim = { 1, 16, 16, 0, ptr(src_bounce), BOUNCE };
	struct o2ib_plan plan;
	struct o2ib_rdma_desc *pages = calloc(1, sizeof(*pages));

	(void)state;
	assert_non_null(pages);
	one(&src, &dst, 1, 16, 16, MIB, true);      /* sink registered as one region, source bounced */
	assert_int_equal(adv.how, O2IB_STRAT_REGION);
	assert_int_equal(adv.rd.nfrags, 1);
	one(&src, &dst_iov, 1, 16, 16, MIB, true);  /* iovec sink: 257 runs, so the sink bounces too */
	assert_int_equal(adv.how, O2IB_STRAT_BOUNCE);
	/* the sink as the peer describes it page by page (64K pages, 16 fragments) */
	o2ib_mem_synth(O2IB_MEM_CONTIG, 65536, ptr(dst_arena), 65536 - 9, MIB - 65536 + 9, dst_segs, MAX_SEGS, &d);
	pages->nfrags = 16;
	for (uint32_t i = 0; i < 16; i++) {
		uint64_t a = ptr(dst_arena) + (i ? 65536 * i : 65536 - 9);

		pages->frags[i] = (struct o2ib_rdma_frag){ i ? 65536 : 9, a };
	}
	o2ib_mem_synth(O2IB_MEM_KIOV, 4096, ptr(src_arena), 0, d.len, src_segs, MAX_SEGS, &s);
	assert_int_equal(o2ib_plan_source(&s, pages, d.len, &lim, &plan), 0);
	assert_int_equal(plan.strategy, O2IB_STRAT_BOUNCE);
	assert_int_equal(plan.nwrs, 16);
	adv.how = O2IB_STRAT_PAGES;
	adv.rd = *pages;
	check_invariants(&s, &adv, &plan, &lim);
	simulate(&s, &d, &adv, &plan);
	o2ib_plan_free(&plan);
	/* no bounce buffer: a clear -EMSGSIZE, nothing posted */
	lim.bounce_size = 0;
	assert_int_equal(o2ib_plan_source(&s, pages, d.len, &lim, &plan), -EMSGSIZE);
	assert_int_equal(plan.nwrs, 0);
	assert_non_null(strstr(plan.why.verdict, "bounce"));
	o2ib_plan_free(&plan);
	/* 17 fragments when 16 were negotiated: the peer broke its word; clear error */
	pages->nfrags = 17;
	pages->frags[16] = (struct o2ib_rdma_frag){ 9, ptr(dst_arena) + 16 * 65536 };
	lim.bounce_size = BOUNCE;
	assert_int_equal(o2ib_plan_source(&s, pages, d.len, &lim, &plan), 0); /* 16 are enough for d.len */
	o2ib_plan_free(&plan);
	assert_int_equal(o2ib_plan_source(&s, pages, d.len + 9, &lim, &plan), -EPROTO); /* src shorter */
	o2ib_plan_free(&plan);
	o2ib_mem_synth(O2IB_MEM_KIOV, 4096, ptr(src_arena), 0, d.len + 9, src_segs, MAX_SEGS, &s);
	assert_int_equal(o2ib_plan_source(&s, pages, d.len + 9, &lim, &plan), -EMSGSIZE);
	assert_non_null(strstr(plan.why.verdict, "peer"));
	o2ib_plan_free(&plan);
	free(pages);
}

/* The short-GET-reply defect: the last WR ends inside a remote fragment with fewer than max_send_sge
 * SGEs; it must still be posted. */
static void test_trailing_wr(void **state)
{
	struct o2ib_seg seg[2] = { { 0x10000, 100 }, { 0x30000, 100 } };
	struct o2ib_mem m = { O2IB_MEM_IOVEC, 4096, 2, seg, 0, 150 };
	struct o2ib_rdma_desc *rd = calloc(1, sizeof(*rd));
	struct o2ib_limits lim = { 4, 16, 257, 1, 0, 0 };
	struct o2ib_plan p;

	(void)state;
	assert_non_null(rd);
	rd->nfrags = 1;
	rd->frags[0] = (struct o2ib_rdma_frag){ 4096, 0x900000 };
	assert_int_equal(o2ib_plan_source(&m, rd, 150, &lim, &p), 0);
	assert_int_equal(p.nwrs, 1);
	assert_int_equal(p.wrs[0].nsge, 2);
	assert_int_equal(p.wrs[0].nob, 150);
	assert_int_equal(p.sges[1].len, 50);
	o2ib_plan_free(&p);
	/* zero bytes: no WR, the completion alone */
	assert_int_equal(o2ib_plan_source(&m, rd, 0, &lim, &p), 0);
	assert_int_equal(p.nwrs, 0);
	assert_int_equal(p.nwindows, 1);
	o2ib_plan_free(&p);
	free(rd);
}

static void test_errors(void **state)
{
	struct o2ib_seg seg = { 0x10000, 8192 };
	struct o2ib_mem m = { O2IB_MEM_CONTIG, 4096, 1, &seg, 0, 8192 };
	struct o2ib_rdma_desc *rd = calloc(1, sizeof(*rd));
	struct o2ib_limits lim = { 2, 16, 257, 1, 0, 0 };
	struct o2ib_plan p;
	struct o2ib_adv a;

	(void)state;
	assert_non_null(rd);
	rd->nfrags = 1;
	rd->frags[0] = (struct o2ib_rdma_frag){ 4096, 0x900000 };
	assert_int_equal(o2ib_plan_source(&m, rd, 8192, &lim, &p), -EPROTO); /* Dst buffer exhausted */
	assert_non_null(strstr(p.why.verdict, "Dst"));
	o2ib_plan_free(&p);
	lim.sq_room = 1;
	assert_int_equal(o2ib_plan_source(&m, rd, 10, &lim, &p), -EINVAL);
	lim.sq_room = 16;
	rd->nfrags = 0;
	assert_int_equal(o2ib_plan_source(&m, rd, 10, &lim, &p), -EPROTO);
	/* zero-length remote fragments get no WR */
	rd->nfrags = 3;
	rd->frags[0] = (struct o2ib_rdma_frag){ 0, 0x800000 };
	rd->frags[1] = (struct o2ib_rdma_frag){ 4096, 0x900000 };
	rd->frags[2] = (struct o2ib_rdma_frag){ 4096, 0xa00000 };
	assert_int_equal(o2ib_plan_source(&m, rd, 8192, &lim, &p), 0);
	assert_int_equal(p.nwrs, 2);
	assert_int_equal(p.wrs[0].remote_frag, 1);
	o2ib_plan_free(&p);
	/* advertise: zero length, kiov piece crossing a page, out-of-order iovec without bounce */
	m.len = 0;
	assert_int_equal(o2ib_plan_advertise(&m, &lim, &a), -EINVAL);
	m.len = 8192;
	m.form = O2IB_MEM_KIOV;
	assert_int_equal(o2ib_plan_advertise(&m, &lim, &a), -EINVAL);
	{
		struct o2ib_seg two[2] = { { 0x40000, 4096 }, { 0x10000, 4096 } };
		struct o2ib_mem iov = { O2IB_MEM_IOVEC, 4096, 2, two, 0, 8192 };

		assert_int_equal(o2ib_plan_advertise(&iov, &lim, &a), -EMSGSIZE);
		lim.bounce_addr = 0x7000000;
		lim.bounce_size = 8192;
		assert_int_equal(o2ib_plan_advertise(&iov, &lim, &a), 0);
		assert_int_equal(a.how, O2IB_STRAT_BOUNCE);
		assert_int_equal(a.rd.nfrags, 1);
	}
	free(rd);
}

/* map_on_demand semantics for what we advertise. */
static void test_advertise_modes(void **state)
{
	struct o2ib_seg segs[MAX_SEGS];
	struct o2ib_mem m;
	struct o2ib_limits lim = { 2, 16, 257, 0, 0, 0 };
	struct o2ib_adv a;

	(void)state;
	/* contiguous 64 KiB at offset 100 on 4K pages: 17 page pieces, 1 run */
	o2ib_mem_synth(O2IB_MEM_CONTIG, 4096, 0x100000, 100, 65536, segs, MAX_SEGS, &m);
	assert_int_equal(o2ib_plan_advertise(&m, &lim, &a), 0);
	assert_int_equal(a.how, O2IB_STRAT_PAGES);
	assert_int_equal(a.rd.nfrags, 17);
	assert_int_equal(a.rd.frags[0].nob, 4096 - 100);
	lim.map_on_demand = 32; /* 17 <= 32: still page by page */
	assert_int_equal(o2ib_plan_advertise(&m, &lim, &a), 0);
	assert_int_equal(a.how, O2IB_STRAT_PAGES);
	lim.map_on_demand = 16; /* more than N: one region */
	assert_int_equal(o2ib_plan_advertise(&m, &lim, &a), 0);
	assert_int_equal(a.how, O2IB_STRAT_REGION);
	assert_int_equal(a.rd.nfrags, 1);
	assert_int_equal(a.rd.frags[0].nob, 65536);
	assert_true(a.rd.frags[0].addr == 0x100000 + 100);
	lim.map_on_demand = 0; /* page by page, but the peer accepts 16: region */
	lim.max_frags = 16;
	assert_int_equal(o2ib_plan_advertise(&m, &lim, &a), 0);
	assert_int_equal(a.how, O2IB_STRAT_REGION);
	assert_int_equal(a.why.ntries, 2);
	/* the same on 64K pages is 2 pieces: page by page */
	o2ib_mem_synth(O2IB_MEM_CONTIG, 65536, 0x100000, 100, 65536, segs, MAX_SEGS, &m);
	assert_int_equal(o2ib_plan_advertise(&m, &lim, &a), 0);
	assert_int_equal(a.how, O2IB_STRAT_PAGES);
	assert_int_equal(a.rd.nfrags, 2);
}

static void test_print(void **state)
{
	struct mside src = { 4096, 0, O2IB_MEM_KIOV, 0, 8192 };
	struct o2ib_seg ss[4], ds[4];
	struct o2ib_mem s, d;
	struct o2ib_limits lim = { 1, 16, 16, 1, 0x7000000, MIB };
	struct o2ib_plan p;
	char *text = NULL;
	size_t tlen = 0;
	FILE *f;

	(void)state;
	o2ib_mem_synth(src.form, src.ps, 0x100000, 0, 8192, ss, 4, &s);
	o2ib_mem_synth(O2IB_MEM_CONTIG, 4096, 0x900000, 7, 8192, ds, 4, &d);
	assert_int_equal(o2ib_plan_advertise(&d, &lim, &adv), 0);
	assert_int_equal(o2ib_plan_source(&s, &adv.rd, 8192, &lim, &p), 0);
	f = open_memstream(&text, &tlen);
	assert_non_null(f);
	o2ib_plan_print(f, &adv, &p, false);
	o2ib_plan_print(f, &adv, &p, true);
	fclose(f);
	print_message("%s", text);
	assert_non_null(strstr(text, "advertise: region, 1 fragment(s)"));
	assert_non_null(strstr(text, "source: gather, 2 RDMA WRITE WR(s) in 1 window(s)"));
	assert_non_null(strstr(text, "\"source\":{\"rc\":0,\"strategy\":\"gather\""));
	free(text);
	o2ib_plan_free(&p);
}

/* Two source plans are the same: every field, every registration, SGE and WR, and the explanation. */
static void assert_same_plan(const struct o2ib_plan *x, const struct o2ib_plan *y)
{
	const struct o2ib_why *a = &x->why, *b = &y->why;

	assert_int_equal(x->strategy, y->strategy);
	assert_true(x->resid == y->resid);
	assert_int_equal(x->nregs, y->nregs);
	assert_int_equal(x->nsges, y->nsges);
	assert_int_equal(x->nwrs, y->nwrs);
	assert_int_equal(x->nwindows, y->nwindows);
	for (uint32_t i = 0; i < x->nregs; i++) {
		assert_int_equal(x->regs[i].kind, y->regs[i].kind);
		assert_true(x->regs[i].addr == y->regs[i].addr && x->regs[i].len == y->regs[i].len);
	}
	for (uint32_t i = 0; i < x->nsges; i++) {
		assert_true(x->sges[i].addr == y->sges[i].addr);
		assert_int_equal(x->sges[i].len, y->sges[i].len);
		assert_int_equal(x->sges[i].reg, y->sges[i].reg);
	}
	for (uint32_t i = 0; i < x->nwrs; i++) {
		assert_true(x->wrs[i].remote_addr == y->wrs[i].remote_addr);
		assert_int_equal(x->wrs[i].remote_frag, y->wrs[i].remote_frag);
		assert_int_equal(x->wrs[i].sge0, y->wrs[i].sge0);
		assert_int_equal(x->wrs[i].nsge, y->wrs[i].nsge);
		assert_int_equal(x->wrs[i].nob, y->wrs[i].nob);
		assert_int_equal(x->wrs[i].window, y->wrs[i].window);
		assert_int_equal(x->wrs[i].signalled, y->wrs[i].signalled);
	}
	assert_int_equal(a->advertise, b->advertise);
	assert_int_equal(a->rc, b->rc);
	assert_string_equal(a->verdict ? a->verdict : "", b->verdict ? b->verdict : "");
	assert_int_equal(a->page_pieces, b->page_pieces);
	assert_int_equal(a->runs, b->runs);
	assert_int_equal(a->remote_frags, b->remote_frags);
	assert_memory_equal(&a->lim, &b->lim, sizeof(a->lim));
	assert_int_equal(a->ntries, b->ntries);
	for (uint32_t i = 0; i < a->ntries; i++) {
		assert_int_equal(a->tries[i].strategy, b->tries[i].strategy);
		assert_int_equal(a->tries[i].pieces, b->tries[i].pieces);
		assert_int_equal(a->tries[i].wrs, b->tries[i].wrs);
		assert_int_equal(a->tries[i].ok, b->tries[i].ok);
	}
}

/* o2ib_plan_source's first case, the usual transfer's short path, plans (and explains) exactly what
 * the general walk plans whenever it is taken; it is taken for every contiguous transfer the walk
 * gathers in one WR of one SGE, among them the usual one (1 MiB into one fragment, map_on_demand 1);
 * and o2ib_plan_source, short path and walk together, plans what the walk alone does, errors too. */
static void test_source_usual(void **state)
{
	static const uint32_t pss[] = { 4096, 65536 }, mods[] = { 0, 1, 32, 256 }, sqs[] = { 2, 16 };
	static const uint64_t offs[] = { 0, 100, 4095, 4096 }, lens[] = { 1, 4000, 4096, 8192, 70000, MIB };
	static const uint32_t extra[] = { 0, 1, 5000 }, nfr[] = { 1, 2 };
	uint32_t taken = 0;

	(void)state;
	/* every combination: one index, its digits in mixed radix 2, 4, 2, 4, 6, 3, 2, 2 */
	for (unsigned i = 0; i < 2u * 4 * 2 * 4 * 6 * 3 * 2 * 2; i++) {
		unsigned a = i % 2, m = i / 2 % 4, q = i / 8 % 2, o = i / 16 % 4, l = i / 64 % 6, e = i / 384 % 3,
			 f = i / 1152 % 2, form = i / 2304 % 2;
		struct o2ib_seg seg = { ptr(src_arena) + 512u * (o & 1), offs[o] + lens[l] + 64 };
		struct o2ib_mem mem = { form ? O2IB_MEM_IOVEC : O2IB_MEM_CONTIG, pss[a], 1, &seg, offs[o], lens[l] };
		struct o2ib_limits lim = { 30, sqs[q], 257, mods[m], ptr(src_bounce), BOUNCE };
		static struct o2ib_rdma_desc rd;
		struct o2ib_plan usual, walk, any;
		int rcu, rcw, rca;

		rd.key = 7;
		rd.nfrags = nfr[f];
		/* the first fragment holds the transfer only with e == 0 or 1; else it is short */
		rd.frags[0] = (struct o2ib_rdma_frag){ (uint32_t)(e == 2 ? lens[l] / 2 + 1 : lens[l] + extra[e]),
						       ptr(dst_arena) + 8192 };
		rd.frags[1] = (struct o2ib_rdma_frag){ (uint32_t)lens[l], ptr(dst_arena) + 2 * MIB };
		rcu = o2ib_plan_source_by(&mem, &rd, lens[l], &lim, &usual, O2IB_PLAN_USUAL);
		rcw = o2ib_plan_source_by(&mem, &rd, lens[l], &lim, &walk, O2IB_PLAN_WALK);
		rca = o2ib_plan_source(&mem, &rd, lens[l], &lim, &any);
		assert_int_equal(rca, rcw);
		assert_same_plan(&any, &walk);
		if (rcu == 0) {
			taken++;
			assert_int_equal(rcw, 0);
			assert_int_equal(walk.nwrs, 1);
			assert_int_equal(walk.nsges, 1);
			assert_same_plan(&usual, &walk);
		} else {
			assert_true(rcu == -ENOENT || rcu == rcw);
			if (rcw == 0 && form == 0 && walk.strategy == O2IB_STRAT_GATHER && walk.nwrs == 1 && walk.nsges == 1)
				fail_msg("a contiguous one-WR one-SGE transfer went the walk (page %u, map_on_demand %u, "
					 "offset %" PRIu64 ", len %" PRIu64 ")", pss[a], mods[m], offs[o], lens[l]);
			if (rcw == 0 && form == 0 && e < 2 && mods[m] == 1 && lens[l] > pss[a])
				fail_msg("the usual case was not taken (page %u, offset %" PRIu64 ", len %" PRIu64 ")",
					 pss[a], offs[o], lens[l]);
		}
		o2ib_plan_free(&usual);
		o2ib_plan_free(&walk);
		o2ib_plan_free(&any);
	}
	assert_true(taken > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trailing_wr),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_advertise_modes),
		cmocka_unit_test(test_print),
		cmocka_unit_test(test_lu5718),
		cmocka_unit_test(test_matrix),
		cmocka_unit_test(test_source_usual),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
