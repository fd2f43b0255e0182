/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the o2ib receive path -- kib_msg unpack, kib_rej unpack and the passive side's
 * CONNREQ decision. Nothing may read out of bounds or abort; a message that decodes must re-encode
 * (both byte orders) to bytes that decode to the same type, version, credits, NIDs, stamps and
 * descriptor. Seeds: fuzz/corpus/o2ib_msg/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lnd/o2ib/o2ib_conn_policy.h"
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
