/* SPDX-License-Identifier: MIT */
/* The o2ib RDMA planner (lnet-wire.md §3.2-§3.4). Pure: allocation only for the plan's own arrays.
 *
 * Rules kept here, whatever the layouts:
 *   - one WR never crosses a remote fragment; it gathers at most max_send_sge local pieces; a WR still
 *     open when the bytes run out is closed (the short-GET-reply defect of §3.3);
 *   - never more RDMA WRs per transfer than the negotiated max_frags; when the pieces the memory is
 *     registered in would need more, register contiguous runs as regions, else bounce;
 *   - WRs are cut into windows of at most sq_room slots, the completion SEND counted in the last;
 *   - a descriptor we advertise has one registration behind its key and never more fragments than
 *     min(max_frags, 256). */
#include "o2ib_plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *o2ib_mem_form_name(enum o2ib_mem_form form)
{
	switch (form) {
	case O2IB_MEM_CONTIG: return "contig";
	case O2IB_MEM_IOVEC: return "iovec";
	case O2IB_MEM_KIOV: return "kiov";
	}
	return "?";
}

const char *o2ib_reg_kind_name(enum o2ib_reg_kind kind)
{
	switch (kind) {
	case O2IB_REG_PAGE: return "page";
	case O2IB_REG_REGION: return "region";
	case O2IB_REG_BOUNCE: return "bounce";
	}
	return "?";
}

const char *o2ib_strategy_name(enum o2ib_strategy s)
{
	switch (s) {
	case O2IB_STRAT_GATHER: return "gather";
	case O2IB_STRAT_REGION: return "region";
	case O2IB_STRAT_BOUNCE: return "bounce";
	case O2IB_STRAT_PAGES: return "pages";
	case O2IB_STRAT_NONE: return "none";
	}
	return "?";
}

static bool pow2(uint32_t v) { return v >= 512 && (v & (v - 1)) == 0; }

#define IOVEC_GAP 512u

uint64_t o2ib_mem_synth_span(enum o2ib_mem_form form, uint32_t page_size, uint64_t offset, uint64_t len)
{
	uint64_t total = offset + len, n = (total + page_size - 1) / page_size;

	switch (form) {
	case O2IB_MEM_CONTIG: return total;
	case O2IB_MEM_IOVEC: return n * (page_size + IOVEC_GAP);
	case O2IB_MEM_KIOV: return n * 2 * (uint64_t)page_size;
	}
	return 0;
}

int o2ib_mem_synth(enum o2ib_mem_form form, uint32_t page_size, uint64_t base, uint64_t offset, uint64_t len,
		   struct o2ib_seg *segs, uint32_t cap, struct o2ib_mem *out)
{
	uint64_t total = offset + len, n;

	if (!pow2(page_size) || total == 0)
		return -EINVAL;
	n = form == O2IB_MEM_CONTIG ? 1 : (total + page_size - 1) / page_size;
	if (n > INT32_MAX)
		return -EINVAL;
	*out = (struct o2ib_mem){ .form = form, .page_size = page_size, .nsegs = (uint32_t)n, .segs = segs,
				  .offset = offset, .len = len };
	if (n > cap)
		return (int)n;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t left = total - i * page_size;

		if (form == O2IB_MEM_CONTIG)
			segs[i] = (struct o2ib_seg){ base, total };
		else if (form == O2IB_MEM_IOVEC)
			segs[i] = (struct o2ib_seg){ base + i * (page_size + IOVEC_GAP), left < page_size ? left : page_size };
		else
			segs[i] = (struct o2ib_seg){ base + i * 2 * page_size, left < page_size ? left : page_size };
	}
	return (int)n;
}

/* ---- cutting memory into pieces ---- */

struct piece {
	uint64_t addr, len;
};

enum cut_mode { CUT_PAGES, CUT_RUNS };

/* Cut the transfer's bytes at segment boundaries and, for CUT_PAGES, at node page boundaries; CUT_RUNS
 * joins virtually adjacent pieces. Fills @out when non-NULL. Returns the count, or -EINVAL when the
 * segments do not hold offset+len bytes or a kiov piece crosses a page. */
static int64_t cut(const struct o2ib_mem *mem, enum cut_mode mode, struct piece *out)
{
	/* page_size is a power of two (checked below): offsets in a page by mask, not by a division, which
	 * cost more than the rest of a 1 MiB kiov transfer's planning (256 pieces, 4 walks) */
	uint64_t skip = mem->offset, want = mem->len, ps = mem->page_size, pmask = ps - 1;
	int64_t n = 0;
	struct piece last = { 0, 0 };

	if (!pow2(mem->page_size) || (mem->nsegs && !mem->segs))
		return -EINVAL;
	for (uint32_t i = 0; i < mem->nsegs && want; i++) {
		uint64_t a = mem->segs[i].addr, l = mem->segs[i].len;

		if (mem->form == O2IB_MEM_KIOV && (a & pmask) + l > ps)
			return -EINVAL;
		if (mem->form == O2IB_MEM_CONTIG && mem->nsegs != 1)
			return -EINVAL;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		a += skip;
		l -= skip;
		skip = 0;
		if (l > want)
			l = want;
		want -= l;
		if (!out && mode == CUT_PAGES) { /* counting: the pages this piece touches, without a walk */
			n += (int64_t)(((a & pmask) + l + pmask) / ps);
			continue;
		}
		while (l) {
			uint64_t take = l;

			if (mode == CUT_PAGES && take > ps - (a & pmask))
				take = ps - (a & pmask);
			if (mode == CUT_RUNS && n > 0 && last.addr + last.len == a) {
				last.len += take;
				if (out)
					out[n - 1] = last;
			} else {
				last = (struct piece){ a, take };
				if (out)
					out[n] = last;
				n++;
			}
			a += take;
			l -= take;
		}
	}
	return want ? -EINVAL : n;
}

/* One registration can hold all pieces only if they come in increasing address order. */
static bool span_ok(const struct piece *p, int64_t n)
{
	for (int64_t i = 1; i < n; i++)
		if (p[i].addr < p[i - 1].addr + p[i - 1].len)
			return false;
	return true;
}

/* Pieces of a cut: a few in the caller's room (the usual transfer is one run), the heap beyond. */
#define PIECES_LOCAL 4
struct pieces {
	struct piece local[PIECES_LOCAL];
	struct piece *v; /* local, from malloc, or NULL: not cut */
};

static void pieces_free(struct pieces *b)
{
	if (b->v != b->local)
		free(b->v);
	b->v = NULL;
}

/* The pieces of @mode in @b->v (pieces_free frees them): the count, or -errno. Runs are cut in one
 * pass into room for one per segment (there are never more); pages count first. */
static int cut_alloc(const struct o2ib_mem *mem, enum cut_mode mode, struct pieces *b)
{
	int64_t n = mode == CUT_RUNS ? (int64_t)mem->nsegs : cut(mem, mode, NULL);

	b->v = NULL;
	if (n < 0)
		return (int)n;
	if (n > INT32_MAX)
		return -EINVAL;
	b->v = n <= PIECES_LOCAL ? b->local : malloc(((size_t)n + 1) * sizeof(*b->v));
	if (!b->v)
		return -ENOMEM;
	n = cut(mem, mode, b->v);
	if (n < 0)
		pieces_free(b);
	return (int)n;
}

/* The page pieces only when map_on_demand would describe or register page by page (0, or no more
 * than N of them): otherwise their count is all the planner needs (@b->v NULL). */
static int cut_pages(const struct o2ib_mem *mem, const struct o2ib_limits *lim, struct pieces *b)
{
	int64_t n = cut(mem, CUT_PAGES, NULL);

	b->v = NULL;
	if (n < 0 || n > INT32_MAX)
		return n < 0 ? (int)n : -EINVAL;
	if (lim->map_on_demand && (uint64_t)n > lim->map_on_demand)
		return (int)n;
	return cut_alloc(mem, CUT_PAGES, b);
}

static void tried(struct o2ib_why *why, enum o2ib_strategy s, uint32_t pieces, uint32_t wrs, bool ok)
{
	if (why->ntries < sizeof(why->tries) / sizeof(why->tries[0]))
		why->tries[why->ntries++] = (struct o2ib_try){ s, pieces, wrs, ok };
}

static int verdict(struct o2ib_why *why, int rc, const char *text)
{
	why->rc = rc;
	why->verdict = text;
	return rc;
}

static int check_limits(const struct o2ib_limits *lim, bool source)
{
	if (lim->max_frags == 0 || lim->max_send_sge == 0)
		return -EINVAL;
	if (source && lim->sq_room < 2)
		return -EINVAL;
	return 0;
}

/* ---- advertise ---- */

int o2ib_plan_advertise(const struct o2ib_mem *mem, const struct o2ib_limits *lim, struct o2ib_adv *out)
{
	struct o2ib_why *why = &out->why;
	struct pieces pages = { .v = NULL }, runs = { .v = NULL };
	struct piece *use = NULL;
	uint32_t limit = lim->max_frags < O2IB_ADV_FRAGS_MAX ? lim->max_frags : O2IB_ADV_FRAGS_MAX;
	int np, nr, n = 0, rc;
	bool spannable;

	memset(out, 0, offsetof(struct o2ib_adv, rd) + offsetof(struct o2ib_rdma_desc, frags));
	memset(why, 0, sizeof(*why));
	why->advertise = true;
	why->lim = *lim;
	out->how = O2IB_STRAT_NONE;
	if (check_limits(lim, false))
		return verdict(why, -EINVAL, "invalid limits: max_frags and max_send_sge must be at least 1");
	if (mem->len == 0)
		return verdict(why, -EINVAL, "nothing to describe: a zero-length sink goes as IMMEDIATE");
	np = cut_pages(mem, lim, &pages);
	nr = np < 0 ? np : cut_alloc(mem, CUT_RUNS, &runs);
	if (np < 0 || nr < 0) {
		rc = np < 0 ? np : nr;
		pieces_free(&pages);
		pieces_free(&runs);
		return verdict(why, rc, rc == -ENOMEM ? "out of memory"
						       : "memory does not hold offset+len, or a kiov piece crosses a page");
	}
	why->page_pieces = (uint32_t)np;
	why->runs = (uint32_t)nr;
	spannable = span_ok(runs.v, nr);

	/* map_on_demand=0: page by page; =N: page by page unless more than N fragments */
	if (lim->map_on_demand == 0 || (uint32_t)np <= lim->map_on_demand) {
		bool ok = spannable && (uint32_t)np <= limit;

		tried(why, O2IB_STRAT_PAGES, (uint32_t)np, 0, ok);
		if (ok) {
			out->how = O2IB_STRAT_PAGES;
			use = pages.v;
			n = np;
			verdict(why, 0, lim->map_on_demand == 0
						? "map_on_demand=0 describes page by page, and the peer accepts that many fragments"
						: "no more page fragments than map_on_demand: described page by page");
		}
	}
	if (!use) {
		bool ok = spannable && (uint32_t)nr <= limit;

		tried(why, O2IB_STRAT_REGION, (uint32_t)nr, 0, ok);
		if (ok) {
			out->how = O2IB_STRAT_REGION;
			use = runs.v;
			n = nr;
			verdict(why, 0, why->ntries > 1
						? "page by page needs more fragments than the peer accepts: registered as one region"
						: (nr == 1 ? "registered as one region: one fragment"
							   : "registered as one region holding each contiguous run"));
		}
	}
	if (!use) {
		bool ok = lim->bounce_size >= mem->len;

		tried(why, O2IB_STRAT_BOUNCE, 1, 0, ok);
		if (ok) {
			out->how = O2IB_STRAT_BOUNCE;
			out->reg = (struct o2ib_reg){ O2IB_REG_BOUNCE, lim->bounce_addr, mem->len };
			out->rd.nfrags = 1;
			out->rd.frags[0] = (struct o2ib_rdma_frag){ (uint32_t)mem->len, lim->bounce_addr };
			verdict(why, 0, spannable ? "too many fragments for the peer even as regions: described through the bounce buffer"
						  : "pieces out of address order cannot share one key: described through the bounce buffer");
		} else {
			verdict(why, -EMSGSIZE, "too many fragments for the peer and no bounce buffer holds the transfer "
						"(raise the bounce buffer size or map_on_demand)");
		}
	}
	if (use) {
		const struct piece *lastp = &use[n - 1];

		out->reg = (struct o2ib_reg){ O2IB_REG_REGION, use[0].addr, lastp->addr + lastp->len - use[0].addr };
		out->rd.nfrags = (uint32_t)n;
		for (int i = 0; i < n; i++)
			out->rd.frags[i] = (struct o2ib_rdma_frag){ (uint32_t)use[i].len, use[i].addr };
	}
	pieces_free(&pages);
	pieces_free(&runs);
	return why->rc;
}

/* ---- source: work requests ---- */

/* §3.3 with the trailing-WR fix. Counts only when @plan is NULL; else fills plan->sges/wrs (sized by a
 * counting pass). Piece i is registration i. */
static uint32_t build_wrs(const struct piece *p, const struct o2ib_rdma_desc *rd, uint64_t resid, uint32_t sge,
			  struct o2ib_plan *plan)
{
	uint32_t si = 0, di = 0, nwr = 0, nsge = 0, open = 0;
	uint64_t soff = 0, doff = 0;
	struct o2ib_wr *wr = NULL;

	while (resid > 0) {
		uint64_t piece;
		bool dmoved;

		while (rd->frags[di].nob == doff) { /* zero-length remote fragments get no WR */
			di++;
			doff = 0;
		}
		piece = p[si].len - soff;
		if (piece > rd->frags[di].nob - doff)
			piece = rd->frags[di].nob - doff;
		if (piece > resid)
			piece = resid;
		if (open == 0 && plan) {
			wr = &plan->wrs[nwr];
			*wr = (struct o2ib_wr){ .remote_addr = rd->frags[di].addr + doff, .remote_frag = di, .sge0 = nsge };
		}
		if (plan) {
			plan->sges[nsge] = (struct o2ib_sge){ p[si].addr + soff, (uint32_t)piece, si };
			wr->nob += (uint32_t)piece;
		}
		nsge++;
		open++;
		soff += piece;
		if (soff == p[si].len) {
			si++;
			soff = 0;
		}
		doff += piece;
		dmoved = doff == rd->frags[di].nob;
		if (dmoved) {
			di++;
			doff = 0;
		}
		resid -= piece;
		if (open == sge || dmoved) {
			if (plan)
				wr->nsge = open;
			nwr++;
			open = 0;
		}
	}
	if (open) { /* the transfer ended inside a remote fragment: close that WR too */
		if (plan)
			wr->nsge = open;
		nwr++;
	}
	if (plan) {
		plan->nwrs = nwr;
		plan->nsges = nsge;
	}
	return nwr;
}

static uint32_t count_sges(const struct piece *p, const struct o2ib_rdma_desc *rd, uint64_t resid)
{
	/* an SGE is where a piece and a remote fragment overlap: the transfer cut at both sides'
	 * boundaries, at most pieces + fragments - 1 (so one SGE for one piece into one fragment, the
	 * usual 1 MiB: no array to allocate) */
	uint32_t n = 0;
	uint64_t covered = 0;

	for (uint32_t i = 0; covered < resid; i++) {
		covered += p[i].len;
		n++;
	}
	covered = 0;
	for (uint32_t i = 0; covered < resid; i++) {
		covered += rd->frags[i].nob;
		n += rd->frags[i].nob != 0;
	}
	return n ? n - 1 : 0;
}

void o2ib_plan_free(struct o2ib_plan *plan)
{
	if (plan->regs != &plan->reg1)
		free(plan->regs);
	if (plan->sges != &plan->sge1)
		free(plan->sges);
	if (plan->wrs != &plan->wr1)
		free(plan->wrs);
	plan->regs = NULL;
	plan->sges = NULL;
	plan->wrs = NULL;
	plan->nregs = plan->nsges = plan->nwrs = 0;
}

static int fill_plan(struct o2ib_plan *plan, enum o2ib_strategy s, const struct piece *p, uint32_t np,
		     enum o2ib_reg_kind kind, const struct o2ib_rdma_desc *rd, uint64_t resid, uint32_t sge,
		     uint32_t nwr, uint32_t sq_room)
{
	uint32_t nsge = count_sges(p, rd, resid);

	plan->strategy = s;
	plan->reg1 = (struct o2ib_reg){ 0 };
	plan->sge1 = (struct o2ib_sge){ 0 };
	plan->wr1 = (struct o2ib_wr){ 0 };
	plan->regs = np <= 1 ? &plan->reg1 : calloc(np, sizeof(*plan->regs));
	plan->sges = nsge <= 1 ? &plan->sge1 : calloc(nsge, sizeof(*plan->sges));
	plan->wrs = nwr <= 1 ? &plan->wr1 : calloc(nwr, sizeof(*plan->wrs));
	if (!plan->regs || !plan->sges || !plan->wrs) {
		o2ib_plan_free(plan);
		return -ENOMEM;
	}
	plan->nregs = np;
	for (uint32_t i = 0; i < np; i++)
		plan->regs[i] = (struct o2ib_reg){ kind, p[i].addr, p[i].len };
	build_wrs(p, rd, resid, sge, plan);
	/* windows of sq_room slots; the completion SEND takes a slot in the last one */
	for (uint32_t i = 0; i < plan->nwrs; i++) {
		plan->wrs[i].window = i / sq_room;
		plan->wrs[i].signalled = (i + 1) % sq_room == 0;
	}
	plan->nwindows = plan->nwrs / sq_room + 1;
	return 0;
}

/* The usual transfer, o2ib_plan_source's first case (its arguments checked, @used remote fragments
 * touched): one contiguous local run into a first remote fragment that holds it, one WR of one SGE,
 * gather or region alike. Writes the whole plan and why, exactly what the walk plans and says (the
 * unit test compares them), without the walk's cuts (~0.7k instructions per 1 MiB) nor a clearing of
 * the plan first. false: not that shape, @out untouched. */
static bool plan_usual(const struct o2ib_mem *local, const struct o2ib_rdma_desc *remote, uint64_t resid,
		       const struct o2ib_limits *lim, uint32_t used, struct o2ib_plan *out)
{
	struct o2ib_why *why = &out->why;
	uint64_t a, pmask = (uint64_t)local->page_size - 1, np;
	bool per_page;

	if (resid == 0 || local->form != O2IB_MEM_CONTIG || local->nsegs != 1 || !local->segs ||
	    !pow2(local->page_size) || remote->frags[0].nob < resid || local->offset > local->segs[0].len ||
	    resid > local->segs[0].len - local->offset)
		return false;
	a = local->segs[0].addr + local->offset;
	/* map_on_demand registering page by page gathers one SGE per page: one WR of one SGE only when
	 * the run lies in one page */
	np = ((a & pmask) + resid + pmask) / local->page_size;
	per_page = lim->map_on_demand == 0 || np <= lim->map_on_demand;
	if (per_page && np != 1)
		return false;
	out->strategy = O2IB_STRAT_GATHER;
	out->resid = resid;
	out->reg1 = (struct o2ib_reg){ per_page ? O2IB_REG_PAGE : O2IB_REG_REGION, a, resid };
	out->sge1 = (struct o2ib_sge){ a, (uint32_t)resid, 0 };
	/* one WR: never the last of a full window (sq_room >= 2), so unsignalled; the SEND follows it */
	out->wr1 = (struct o2ib_wr){ .remote_addr = remote->frags[0].addr, .remote_frag = 0, .sge0 = 0, .nsge = 1,
				     .nob = (uint32_t)resid, .window = 0, .signalled = false };
	out->regs = &out->reg1;
	out->sges = &out->sge1;
	out->wrs = &out->wr1;
	out->nregs = out->nsges = out->nwrs = 1;
	out->nwindows = 1;
	why->advertise = false;
	why->page_pieces = (uint32_t)np;
	why->runs = 1;
	why->remote_frags = used;
	why->lim = *lim;
	why->ntries = 0;
	tried(why, O2IB_STRAT_GATHER, 1, 1, true);
	verdict(why, 0, per_page ? "the pieces as registered page by page fit max_frags WRs"
				 : "the pieces as registered in regions fit max_frags WRs");
	return true;
}

/* The general walk (o2ib_plan_source's arguments checked): cut the memory in page pieces and runs,
 * then gather as registered, register the runs as regions, or bounce, whichever first fits max_frags
 * WRs. Not inlined: o2ib_plan_source's short path then sets up none of its locals (~10 instructions). */
static __attribute__((noinline)) int plan_walk(const struct o2ib_mem *local, const struct o2ib_rdma_desc *remote,
					       uint64_t resid, const struct o2ib_limits *lim, struct o2ib_plan *out)
{
	struct o2ib_why *why = &out->why;
	struct o2ib_mem mem = *local;
	struct pieces pieces = { .v = NULL }, runs = { .v = NULL };
	struct piece bounce;
	uint32_t nwr;
	int np, nr, rc;
	bool per_page;

	mem.len = resid;
	np = cut_pages(&mem, lim, &pieces);
	nr = np < 0 ? np : cut_alloc(&mem, CUT_RUNS, &runs);
	if (np < 0 || nr < 0) {
		rc = np < 0 ? np : nr;
		pieces_free(&pieces);
		pieces_free(&runs);
		return verdict(why, rc, rc == -ENOMEM ? "out of memory"
						       : "memory does not hold offset+len, or a kiov piece crosses a page");
	}
	why->page_pieces = (uint32_t)np;
	why->runs = (uint32_t)nr;
	/* what map_on_demand registers: pages (0, or no more than N fragments) or regions */
	per_page = lim->map_on_demand == 0 || (uint32_t)np <= lim->map_on_demand;

	nwr = build_wrs(per_page ? pieces.v : runs.v, remote, resid, lim->max_send_sge, NULL);
	tried(why, O2IB_STRAT_GATHER, (uint32_t)(per_page ? np : nr), nwr, nwr <= lim->max_frags);
	if (nwr <= lim->max_frags) {
		rc = fill_plan(out, O2IB_STRAT_GATHER, per_page ? pieces.v : runs.v, (uint32_t)(per_page ? np : nr),
			       per_page ? O2IB_REG_PAGE : O2IB_REG_REGION, remote, resid, lim->max_send_sge, nwr,
			       lim->sq_room);
		verdict(why, rc, rc ? "out of memory"
				    : (per_page ? "the pieces as registered page by page fit max_frags WRs"
						: "the pieces as registered in regions fit max_frags WRs"));
		goto done;
	}
	if (per_page && nr < np) {
		nwr = build_wrs(runs.v, remote, resid, lim->max_send_sge, NULL);
		tried(why, O2IB_STRAT_REGION, (uint32_t)nr, nwr, nwr <= lim->max_frags);
		if (nwr <= lim->max_frags) {
			rc = fill_plan(out, O2IB_STRAT_REGION, runs.v, (uint32_t)nr, O2IB_REG_REGION, remote, resid,
				       lim->max_send_sge, nwr, lim->sq_room);
			verdict(why, rc, rc ? "out of memory"
					    : "gathering page pieces needs more WRs than max_frags: registered the contiguous "
					      "runs as regions");
			goto done;
		}
	}
	bounce = (struct piece){ lim->bounce_addr, resid };
	nwr = why->remote_frags; /* one WR per remote fragment the transfer touches */
	tried(why, O2IB_STRAT_BOUNCE, 1, nwr, lim->bounce_size >= resid);
	if (lim->bounce_size >= resid) {
		rc = fill_plan(out, O2IB_STRAT_BOUNCE, &bounce, 1, O2IB_REG_BOUNCE, remote, resid, lim->max_send_sge,
			       nwr, lim->sq_room);
		verdict(why, rc, rc ? "out of memory"
				    : "the local pieces need more WRs than max_frags even as regions: copied through the "
				      "bounce buffer, one WR per remote fragment");
	} else {
		verdict(why, -EMSGSIZE, "the local pieces need more WRs than max_frags and no bounce buffer holds "
					"the transfer (raise the bounce buffer size or max_send_sge)");
	}
done:
	pieces_free(&pieces);
	pieces_free(&runs);
	return why->rc;
}

/* o2ib_plan_source's argument checks: 0, or -errno and *@text saying why. *@used: the remote
 * fragments the transfer touches (up to the one its last byte lands in; empty ones not counted).
 * Writes nothing else, so the usual transfer's plan is written once. */
static int source_args(const struct o2ib_mem *local, const struct o2ib_rdma_desc *remote, uint64_t resid,
		       const struct o2ib_limits *lim, uint32_t *used, const char **text)
{
	uint64_t rbytes = 0;
	uint32_t n = 0;

	*used = 0;
	if (check_limits(lim, true)) {
		*text = "invalid limits: max_frags and max_send_sge >= 1, send-queue room >= 2";
		return -EINVAL;
	}
	if (resid > local->len) {
		*text = "Src buffer exhausted: the local memory is shorter than the transfer";
		return -EPROTO;
	}
	if (remote->nfrags == 0 || remote->nfrags > O2IB_RD_FRAGS_CAP) {
		*text = "the peer's descriptor has no fragments (or more than a message holds)";
		return -EPROTO;
	}
	for (uint32_t i = 0; i < remote->nfrags && rbytes < resid; i++) {
		rbytes += remote->frags[i].nob;
		n += remote->frags[i].nob != 0;
	}
	*used = n;
	if (rbytes < resid) {
		*text = "Dst buffer exhausted: the peer's descriptor is shorter than the transfer";
		return -EPROTO;
	}
	if (n > lim->max_frags) { /* (0 when nothing moves) */
		*text = "the peer's descriptor alone needs one WR per remote fragment, more than the max_frags "
			"negotiated: the peer must describe its buffer in fewer fragments";
		return -EMSGSIZE;
	}
	return 0;
}

int o2ib_plan_source_by(const struct o2ib_mem *local, const struct o2ib_rdma_desc *remote, uint64_t resid,
			const struct o2ib_limits *lim, struct o2ib_plan *out, enum o2ib_plan_path path)
{
	struct o2ib_why *why = &out->why;
	const char *text = NULL;
	uint32_t used;
	int rc = source_args(local, remote, resid, lim, &used, &text);

	if (!rc && path != O2IB_PLAN_WALK && plan_usual(local, remote, resid, lim, used, out))
		return 0;
	/* (cleared here, not before the usual transfer's plan, which writes every field itself) */
	memset(out, 0, sizeof(*out));
	out->strategy = O2IB_STRAT_NONE;
	out->resid = resid;
	why->remote_frags = used;
	why->lim = *lim;
	if (rc)
		return verdict(why, rc, text);
	if (resid == 0) {
		rc = fill_plan(out, O2IB_STRAT_GATHER, NULL, 0, O2IB_REG_REGION, remote, 0, lim->max_send_sge, 0,
			       lim->sq_room);
		return verdict(why, rc, rc ? "out of memory" : "nothing to move: only the completion is sent");
	}
	if (path == O2IB_PLAN_USUAL)
		return verdict(why, -ENOENT, "not the usual transfer (one contiguous run into one remote fragment)");
	return plan_walk(local, remote, resid, lim, out);
}

/* ---- formatting ---- */

static void print_tries(FILE *f, const struct o2ib_why *why, bool json)
{
	for (uint32_t i = 0; i < why->ntries; i++) {
		const struct o2ib_try *t = &why->tries[i];

		if (json)
			fprintf(f, "%s{\"strategy\":\"%s\",\"pieces\":%u,\"wrs\":%u,\"ok\":%s}", i ? "," : "",
				o2ib_strategy_name(t->strategy), t->pieces, t->wrs, t->ok ? "true" : "false");
		else if (why->advertise)
			fprintf(f, "%s%s %u fragment(s): %s", i ? "; " : "", o2ib_strategy_name(t->strategy), t->pieces,
				t->ok ? "ok" : "no");
		else
			fprintf(f, "%s%s %u piece(s) -> %u WR(s): %s", i ? "; " : "", o2ib_strategy_name(t->strategy),
				t->pieces, t->wrs, t->ok ? "ok" : "no");
	}
}

static void print_limits(FILE *f, const struct o2ib_limits *l, bool json)
{
	if (json)
		fprintf(f, "\"limits\":{\"max_send_sge\":%u,\"sq_room\":%u,\"max_frags\":%u,\"map_on_demand\":%u,"
			   "\"bounce_size\":%" PRIu64 "}",
			l->max_send_sge, l->sq_room, l->max_frags, l->map_on_demand, l->bounce_size);
	else
		fprintf(f, "  limits: max_send_sge=%u sq_room=%u max_frags=%u map_on_demand=%u bounce_size=%" PRIu64 "\n",
			l->max_send_sge, l->sq_room, l->max_frags, l->map_on_demand, l->bounce_size);
}

static void print_adv(FILE *f, const struct o2ib_adv *a, bool json)
{
	const struct o2ib_why *w = &a->why;

	if (json) {
		fprintf(f, "\"advertise\":{\"rc\":%d,\"how\":\"%s\",\"why\":\"%s\",\"page_pieces\":%u,\"runs\":%u,",
			w->rc, o2ib_strategy_name(a->how), w->verdict ? w->verdict : "", w->page_pieces, w->runs);
		print_limits(f, &w->lim, true);
		fprintf(f, ",\"tried\":[");
		print_tries(f, w, true);
		fprintf(f, "],\"registration\":{\"kind\":\"%s\",\"addr\":%" PRIu64 ",\"len\":%" PRIu64 "},\"frags\":[",
			o2ib_reg_kind_name(a->reg.kind), a->reg.addr, a->reg.len);
		for (uint32_t i = 0; i < a->rd.nfrags; i++)
			fprintf(f, "%s{\"addr\":%" PRIu64 ",\"nob\":%u}", i ? "," : "", a->rd.frags[i].addr,
				a->rd.frags[i].nob);
		fprintf(f, "]}");
		return;
	}
	fprintf(f, "advertise: %s, %u fragment(s) in 1 registration (rc %d)\n", o2ib_strategy_name(a->how),
		a->rd.nfrags, w->rc);
	fprintf(f, "  why: %s\n", w->verdict ? w->verdict : "");
	fprintf(f, "  memory: %u page piece(s), %u contiguous run(s)\n", w->page_pieces, w->runs);
	print_limits(f, &w->lim, false);
	fprintf(f, "  tried: ");
	print_tries(f, w, false);
	fprintf(f, "\n");
	if (w->rc == 0) {
		fprintf(f, "  registration: %s addr=0x%" PRIx64 " len=%" PRIu64 "\n", o2ib_reg_kind_name(a->reg.kind),
			a->reg.addr, a->reg.len);
		for (uint32_t i = 0; i < a->rd.nfrags; i++)
			fprintf(f, "  frag[%u] addr=0x%" PRIx64 " nob=%u\n", i, a->rd.frags[i].addr, a->rd.frags[i].nob);
	}
}

static void print_source(FILE *f, const struct o2ib_plan *p, bool json)
{
	const struct o2ib_why *w = &p->why;

	if (json) {
		fprintf(f, "\"source\":{\"rc\":%d,\"strategy\":\"%s\",\"why\":\"%s\",\"resid\":%" PRIu64
			   ",\"page_pieces\":%u,\"runs\":%u,\"remote_frags\":%u,\"windows\":%u,",
			w->rc, o2ib_strategy_name(p->strategy), w->verdict ? w->verdict : "", p->resid, w->page_pieces,
			w->runs, w->remote_frags, p->nwindows);
		print_limits(f, &w->lim, true);
		fprintf(f, ",\"tried\":[");
		print_tries(f, w, true);
		fprintf(f, "],\"registrations\":[");
		for (uint32_t i = 0; i < p->nregs; i++)
			fprintf(f, "%s{\"kind\":\"%s\",\"addr\":%" PRIu64 ",\"len\":%" PRIu64 "}", i ? "," : "",
				o2ib_reg_kind_name(p->regs[i].kind), p->regs[i].addr, p->regs[i].len);
		fprintf(f, "],\"wrs\":[");
		for (uint32_t i = 0; i < p->nwrs; i++) {
			const struct o2ib_wr *wr = &p->wrs[i];

			fprintf(f, "%s{\"window\":%u,\"remote_frag\":%u,\"remote_addr\":%" PRIu64 ",\"nob\":%u,"
				   "\"signalled\":%s,\"sges\":[",
				i ? "," : "", wr->window, wr->remote_frag, wr->remote_addr, wr->nob,
				wr->signalled ? "true" : "false");
			for (uint32_t s = 0; s < wr->nsge; s++)
				fprintf(f, "%s{\"addr\":%" PRIu64 ",\"len\":%u,\"reg\":%u}", s ? "," : "",
					p->sges[wr->sge0 + s].addr, p->sges[wr->sge0 + s].len, p->sges[wr->sge0 + s].reg);
			fprintf(f, "]}");
		}
		fprintf(f, "]}");
		return;
	}
	fprintf(f, "source: %s, %u RDMA WRITE WR(s) in %u window(s) + completion SEND (rc %d)\n",
		o2ib_strategy_name(p->strategy), p->nwrs, p->nwindows, w->rc);
	fprintf(f, "  why: %s\n", w->verdict ? w->verdict : "");
	fprintf(f, "  transfer: %" PRIu64 " bytes; memory: %u page piece(s), %u contiguous run(s); peer descriptor: "
		   "%u fragment(s) used\n", p->resid, w->page_pieces, w->runs, w->remote_frags);
	print_limits(f, &w->lim, false);
	fprintf(f, "  tried: ");
	print_tries(f, w, false);
	fprintf(f, "\n");
	for (uint32_t i = 0; i < p->nregs; i++)
		fprintf(f, "  reg[%u] %s addr=0x%" PRIx64 " len=%" PRIu64 "\n", i, o2ib_reg_kind_name(p->regs[i].kind),
			p->regs[i].addr, p->regs[i].len);
	for (uint32_t i = 0; i < p->nwrs; i++) {
		const struct o2ib_wr *wr = &p->wrs[i];

		fprintf(f, "  wr[%u] window=%u%s remote_frag=%u remote=0x%" PRIx64 " nob=%u sges:", i, wr->window,
			wr->signalled ? " signalled" : "", wr->remote_frag, wr->remote_addr, wr->nob);
		for (uint32_t s = 0; s < wr->nsge; s++)
			fprintf(f, " reg[%u]+0x%" PRIx64 "/%u", p->sges[wr->sge0 + s].reg,
				p->sges[wr->sge0 + s].addr - p->regs[p->sges[wr->sge0 + s].reg].addr,
				p->sges[wr->sge0 + s].len);
		fprintf(f, "\n");
	}
	if (w->rc == 0)
		fprintf(f, "  send: completion in window %u (signalled)\n", p->nwindows - 1);
}

void o2ib_plan_print(FILE *f, const struct o2ib_adv *adv, const struct o2ib_plan *plan, bool json)
{
	if (json) {
		fprintf(f, "{");
		if (adv)
			print_adv(f, adv, true);
		if (plan) {
			if (adv)
				fprintf(f, ",");
			print_source(f, plan, true);
		}
		fprintf(f, "}\n");
		return;
	}
	if (adv)
		print_adv(f, adv, false);
	if (plan)
		print_source(f, plan, false);
}
