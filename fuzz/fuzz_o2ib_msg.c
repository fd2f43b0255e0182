/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the o2ib receive path -- kib_msg unpack, kib_rej unpack and the passive side's
 * CONNREQ decision. Nothing may read out of bounds or abort; a message that decodes must re-encode
 * (both byte orders) to bytes that decode to the same type, version, credits, NIDs, stamps and
 * descriptor. A decoded descriptor is also handed to the RDMA planner as the peer's sink: whatever it
 * says, the plan keeps max_frags and the SGE limit, or fails with a clear error. Seeds:
 * fuzz/corpus/fuzz_o2ib_msg/. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lnd/o2ib/o2ib_conn_policy.h"
#include "lnd/o2ib/o2ib_plan.h"
#include "lnd/o2ib/o2ib_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void same_rd(const struct o2ib_rdma_desc *a, const struct o2ib_rdma_desc *b)
{
	if (a->key != b->key || a->nfrags != b->nfrags)
		abort();
	for (uint32_t i = 0; i < a->nfrags; i++)
		if (a->frags[i].nob != b->frags[i].nob || a->frags[i].addr != b->frags[i].addr)
			abort();
}

/* Plan 1 MiB (or what the descriptor holds) of 4K kiov pages into @rd; addresses are never touched. */
static void plan_into(const struct o2ib_rdma_desc *rd, uint8_t knobs)
{
	static struct o2ib_seg segs[260];
	struct o2ib_limits lim = { 1u + (knobs & 3), 2u + (knobs >> 4), 1u + (knobs & 0x3f) * 4, knobs & 1 ? 0 : 32,
				   0x7000000000ull, knobs & 0x80 ? (1u << 20) : 0 };
	struct o2ib_mem mem;
	struct o2ib_plan p;
	uint64_t total = 0, resid;
	int rc;

	for (uint32_t i = 0; i < rd->nfrags; i++)
		total += rd->frags[i].nob;
	resid = total < (1u << 20) ? total : (1u << 20);
	if (o2ib_mem_synth(O2IB_MEM_KIOV, 4096, 0x100000000ull, 0, resid ? resid : 1, segs, 260, &mem) > 260)
		abort();
	mem.len = resid;
	rc = o2ib_plan_source(&mem, rd, resid, &lim, &p);
	if (rc != 0 && rc != -EMSGSIZE && rc != -EPROTO)
		abort();
	if (rc == 0) {
		uint64_t moved = 0;

		if (p.nwrs > lim.max_frags)
			abort();
		for (uint32_t i = 0; i < p.nwrs; i++) {
			if (p.wrs[i].nsge == 0 || p.wrs[i].nsge > lim.max_send_sge)
				abort();
			moved += p.wrs[i].nob;
		}
		if (moved != resid)
			abort();
	}
	o2ib_plan_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct o2ib_msg m, back;
	static uint8_t out[O2IB_MSG_SIZE + 512];
	static const struct o2ib_local me = { 0x00050000c0a80101ull, 1, true, { 8, 257, 0, false } };
	struct o2ib_peer_view pv = { .connecting = true };
	struct o2ib_passive_decision d;
	struct o2ib_wire_err err;
	struct o2ib_rej rej;
	char line[256];

	if (o2ib_msg_unpack(data, len, O2IB_MAX_RDMA_FRAGS, &m, &err) == 0) {
		for (int swab = 0; swab < 2; swab++) {
			int n = o2ib_msg_pack_order(&m, swab, swab, out, sizeof(out));

			if (n < 0)
				continue; /* e.g. an IMMEDIATE longer than our buffer */
			if (o2ib_msg_unpack(out, (size_t)n, O2IB_MAX_RDMA_FRAGS, &back, &err))
				abort();
			if (back.type != m.type || back.version != m.version || back.credits != m.credits ||
			    back.srcnid != m.srcnid || back.dstnid != m.dstnid || back.srcstamp != m.srcstamp ||
			    back.dststamp != m.dststamp)
				abort();
			if (m.type == O2IB_MSG_PUT_ACK)
				same_rd(&m.u.putack.rd, &back.u.putack.rd);
			if (m.type == O2IB_MSG_PUT_ACK && swab == 0)
				plan_into(&m.u.putack.rd, data[len - 1]);
			if (m.type == O2IB_MSG_GET_REQ)
				same_rd(&m.u.get.rd, &back.u.get.rd);
			if (m.type == O2IB_MSG_IMMEDIATE &&
			    (back.u.immediate.payload_len != m.u.immediate.payload_len ||
			     memcmp(back.u.immediate.payload, m.u.immediate.payload, m.u.immediate.payload_len)))
				abort();
		}
	} else {
		o2ib_wire_err_format(&err, line, sizeof(line));
		if (strchr(line, '\n'))
			abort(); /* the reason must stay one log line */
	}
	(void)o2ib_rej_unpack(data, len, &rej, &err);
	o2ib_passive_decide(data, len, &me, &pv, &d);
	if (!d.reason || (d.accept && (d.cp.queue_depth > 8 || d.cp.max_frags > 257 || d.cp.queue_depth == 0)))
		abort();
	return 0;
}
