/* SPDX-License-Identifier: MIT */
/* One fault rule through the one writer: what `fault show` prints and the config file's `fault:`
 * entries hold, so an export reads back as the same rules. */
#include "ulnet/fault.h"
#include "ulnet/writer.h"

static void nid_or_any(struct ulnet_writer *w, const char *key, const struct ulnet_nid *nid)
{
	if (ulnet_nid_is_any(nid))
		ulnet_writer_str(w, key, "*");
	else
		ulnet_writer_nid(w, key, nid);
}

static const char *acted_key(enum ulnet_fault_kind k)
{
	static const char *const keys[ULNET_FAULT_KINDS] = { "dropped", "delayed", "corrupted", "duplicated",
							     "reordered", "spoiled", "rejected", "stalled" };

	return (unsigned)k < ULNET_FAULT_KINDS ? keys[k] : "acted";
}

void ulnet_fault_write(struct ulnet_writer *w, const struct ulnet_fault_info *fi, bool counters)
{
	const struct ulnet_fault_rule *r = &fi->rule;
	char types[32];

	ulnet_writer_map(w, NULL);
	ulnet_writer_str(w, "kind", ulnet_fault_kind_name(r->kind));
	nid_or_any(w, "src", &r->src);
	nid_or_any(w, "dst", &r->dst);
	nid_or_any(w, "local_nid", &r->local);
	if (!ulnet_fault_kind_is_lnd(r->kind)) { /* connections have neither */
		if (r->portal == ULNET_FAULT_PORTAL_ANY)
			ulnet_writer_str(w, "portal", "*");
		else
			ulnet_writer_uint(w, "portal", r->portal);
		ulnet_writer_str(w, "message", ulnet_fault_types_format(r->msg_mask, types, sizeof(types)));
	}
	if (r->rate)
		ulnet_writer_uint(w, "rate", r->rate);
	else
		ulnet_writer_uint(w, "interval", r->interval_s);
	if (r->seed)
		ulnet_writer_uint(w, "seed", r->seed);
	if (r->kind == ULNET_FAULT_DROP)
		ulnet_writer_str(w, "health_error", ulnet_fault_health_name(r->health));
	if (r->kind == ULNET_FAULT_DELAY)
		ulnet_writer_uint(w, "latency", r->latency_ms);
	if (r->kind == ULNET_FAULT_REORDER)
		ulnet_writer_uint(w, "hold", r->hold_ms);
	if (r->kind == ULNET_FAULT_HELLO)
		ulnet_writer_uint(w, "version", r->version);
	if (r->kind == ULNET_FAULT_REJECT)
		ulnet_writer_str(w, "reason", ulnet_fault_reject_name(r->reason));
	if (r->kind == ULNET_FAULT_STALL && r->latency_ms)
		ulnet_writer_uint(w, "latency", r->latency_ms);
	if (counters) {
		ulnet_writer_uint(w, "matched", fi->matched);
		ulnet_writer_uint(w, acted_key(r->kind), fi->acted);
	}
	ulnet_writer_end(w);
}
