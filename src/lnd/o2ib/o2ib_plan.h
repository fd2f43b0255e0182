/* SPDX-License-Identifier: MIT */
/* The o2ib RDMA planner (lnet-wire.md §3.2-§3.4, §7): pure, no I/O, no verbs.
 *
 * o2ib_plan_advertise() decides how a sink (PUT_ACK) or GET sink (GET_REQ) is described: which one
 * registration backs rd_key and which fragments the descriptor carries.
 * o2ib_plan_source() turns local memory plus the peer's descriptor into RDMA WRITE work requests,
 * choosing per transfer between gathering SGEs, registering the local buffer as one region, or
 * copying through a pre-registered bounce buffer, and cutting the WRs into send-queue windows.
 * Both record why in struct o2ib_why; o2ib_plan_print() renders it as text or JSON. */
#ifndef ULNET_O2IB_PLAN_H
#define ULNET_O2IB_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "o2ib_wire.h"

/* Never advertise more fragments than this to any peer (lnet-wire.md §3.6), whatever it negotiated. */
#define O2IB_ADV_FRAGS_MAX 256u

enum o2ib_mem_form {
	O2IB_MEM_CONTIG,   /* one virtually contiguous buffer */
	O2IB_MEM_IOVEC,    /* entries anywhere, any length */
	O2IB_MEM_KIOV,     /* pieces each inside one page of the node's page size */
};
const char *o2ib_mem_form_name(enum o2ib_mem_form form);

struct o2ib_seg {
	uint64_t addr;
	uint64_t len;
};

/* An MD's memory: the transfer is bytes [offset, offset + len) of the concatenated segments. */
struct o2ib_mem {
	enum o2ib_mem_form form;
	uint32_t page_size;        /* the node's page size (a power of two) */
	uint32_t nsegs;
	const struct o2ib_seg *segs;
	uint64_t offset, len;
};

/* Synthetic layouts (ulnetctl plan, tests): page-aligned @base; CONTIG one segment of offset+len
 * bytes; IOVEC entries of page_size bytes, each 512 bytes past the end of the previous one (so every
 * entry after the first starts mid-page); KIOV whole pages at every other page. Returns the number
 * of segments needed (fill happens only if it is <= @cap), or -EINVAL for a bad page size. */
int o2ib_mem_synth(enum o2ib_mem_form form, uint32_t page_size, uint64_t base, uint64_t offset, uint64_t len,
		   struct o2ib_seg *segs, uint32_t cap, struct o2ib_mem *out);
/* Bytes of address space o2ib_mem_synth's layout spans from @base. */
uint64_t o2ib_mem_synth_span(enum o2ib_mem_form form, uint32_t page_size, uint64_t offset, uint64_t len);

struct o2ib_limits {
	uint32_t max_send_sge;     /* device: SGEs per WR (wrq_sge) */
	uint32_t sq_room;          /* send-queue slots this transfer may use at once (>= 2) */
	uint32_t max_frags;        /* negotiated: WRs per transfer, fragments the peer accepts */
	uint32_t map_on_demand;    /* local tunable: 0 page by page; N one region above N fragments */
	uint64_t bounce_addr;      /* a pre-registered bounce buffer (0 bytes: none) */
	uint64_t bounce_size;
};

enum o2ib_reg_kind {
	O2IB_REG_PAGE,     /* one node page (map_on_demand page-granular emulation) */
	O2IB_REG_REGION,   /* a virtually contiguous range, or the span holding several ranges */
	O2IB_REG_BOUNCE,   /* the pre-registered bounce buffer: data is copied */
};
const char *o2ib_reg_kind_name(enum o2ib_reg_kind kind);

struct o2ib_reg {
	enum o2ib_reg_kind kind;
	uint64_t addr, len;
};

enum o2ib_strategy {
	O2IB_STRAT_GATHER,   /* as registered by map_on_demand, up to max_send_sge pieces per WR */
	O2IB_STRAT_REGION,   /* contiguous runs registered as regions: fewer pieces */
	O2IB_STRAT_BOUNCE,   /* copy into the bounce buffer: one piece */
	O2IB_STRAT_PAGES,    /* advertise: page by page */
	O2IB_STRAT_NONE,
};
const char *o2ib_strategy_name(enum o2ib_strategy s);

struct o2ib_try {
	enum o2ib_strategy strategy;
	uint32_t pieces;           /* local pieces (source) or descriptor fragments (advertise) */
	uint32_t wrs;              /* source: RDMA WRs it needs */
	bool ok;
};

struct o2ib_why {
	bool advertise;            /* advertise (sink description) or source (work requests) */
	int rc;
	const char *verdict;       /* one sentence: why this choice, or why nothing works */
	uint32_t page_pieces, runs;      /* the memory cut at page boundaries / in contiguous runs */
	uint32_t remote_frags;     /* source: fragments the peer's descriptor touches */
	struct o2ib_limits lim;
	uint32_t ntries;
	struct o2ib_try tries[4];
};

/* How a sink is described. frags points into the struct; at most O2IB_ADV_FRAGS_MAX. */
struct o2ib_adv {
	enum o2ib_strategy how;    /* PAGES, REGION or BOUNCE */
	struct o2ib_reg reg;       /* behind rd_key */
	struct o2ib_rdma_desc rd;  /* key 0: the caller puts the registration's rkey there */
	struct o2ib_why why;
};
/* 0, -EINVAL (bad limits or memory, zero length) or -EMSGSIZE (too fragmented and no bounce buffer
 * holds it); why.verdict says which. */
int o2ib_plan_advertise(const struct o2ib_mem *mem, const struct o2ib_limits *lim, struct o2ib_adv *out);

struct o2ib_sge {
	uint64_t addr;
	uint32_t len;
	uint32_t reg;              /* index into plan.regs */
};

struct o2ib_wr {
	uint64_t remote_addr;      /* the peer's fragment address (plus what earlier WRs consumed) */
	uint32_t remote_frag;      /* index in the peer's descriptor */
	uint32_t sge0, nsge;       /* into plan.sges */
	uint32_t nob;
	uint32_t window;           /* posting window; the last WR of a window is signalled */
	bool signalled;
};

struct o2ib_plan {
	enum o2ib_strategy strategy;
	uint64_t resid;
	uint32_t nregs, nsges, nwrs;
	struct o2ib_reg *regs;
	struct o2ib_sge *sges;
	struct o2ib_wr *wrs;       /* RDMA WRITEs; the completion SEND follows in the last window */
	uint32_t nwindows;         /* including the one that carries the completion SEND */
	struct o2ib_why why;
	/* a plan of one registration, SGE and WR (a contiguous transfer into one remote fragment: the
	 * usual 1 MiB) points here instead of allocating three arrays; so the plan is not copied */
	struct o2ib_reg reg1;
	struct o2ib_sge sge1;
	struct o2ib_wr wr1;
};
/* Which of o2ib_plan_source's ways to plan: tests compare the short path's plans with the walk's. */
enum o2ib_plan_path {
	O2IB_PLAN_ANY,     /* the usual transfer's short path when it applies, else the walk */
	O2IB_PLAN_WALK,    /* the general walk only (cuts, then gather, regions, bounce) */
	O2IB_PLAN_USUAL,   /* the short path only: -ENOENT when the transfer is not its shape */
};
/* Move @resid bytes of @local into @remote by @path. 0, -EINVAL (limits), -EPROTO (either side
 * shorter than resid: "Src/Dst buffer exhausted") or -EMSGSIZE (the peer's descriptor alone needs
 * more WRs than negotiated, or nothing fits and no bounce buffer holds it); -ENOMEM. Free with
 * o2ib_plan_free. */
int o2ib_plan_source_by(const struct o2ib_mem *local, const struct o2ib_rdma_desc *remote, uint64_t resid,
			const struct o2ib_limits *lim, struct o2ib_plan *out, enum o2ib_plan_path path);
/* o2ib_plan_source_by with either path: its first case is the usual transfer (one contiguous run
 * into a first remote fragment that holds it: one WR of one SGE, no walk), else the general walk. */
static inline int o2ib_plan_source(const struct o2ib_mem *local, const struct o2ib_rdma_desc *remote,
				   uint64_t resid, const struct o2ib_limits *lim, struct o2ib_plan *out)
{
	return o2ib_plan_source_by(local, remote, resid, lim, out, O2IB_PLAN_ANY);
}
void o2ib_plan_free(struct o2ib_plan *plan);

/* Render an advertisement and/or a source plan (either may be NULL) as text or one JSON object. */
void o2ib_plan_print(FILE *f, const struct o2ib_adv *adv, const struct o2ib_plan *plan, bool json);

#endif
