/* SPDX-License-Identifier: MIT */
/* o2ib send credits (lnet-wire.md §4.1). Pure: decisions only; the rules are listed in the header. */
#include "o2ib_credits.h"

const char *o2ib_credit_verdict_name(enum o2ib_credit_verdict v)
{
	switch (v) {
	case O2IB_CREDIT_POST: return "POST";
	case O2IB_CREDIT_POST_NOCRED: return "POST_NOCRED";
	case O2IB_CREDIT_DROP_NOOP: return "DROP_NOOP";
	case O2IB_CREDIT_WAIT_SENDS: return "WAIT_SENDS";
	case O2IB_CREDIT_WAIT_CREDIT: return "WAIT_CREDIT";
	case O2IB_CREDIT_WAIT_LAST: return "WAIT_LAST";
	case O2IB_CREDIT_WAIT_RESERVED: return "WAIT_RESERVED";
	}
	return "unknown";
}

static bool is_v2(uint16_t version) { return version != O2IB_MSG_VERSION_1; }

bool o2ib_credit_needed(uint16_t version, uint8_t type)
{
	switch (type) {
	case O2IB_MSG_NOOP:
		return !is_v2(version);
	case O2IB_MSG_PUT_ACK:
	case O2IB_MSG_PUT_NAK:
	case O2IB_MSG_PUT_DONE:
	case O2IB_MSG_GET_DONE:
		return false; /* answers: the peer keeps a reserved receive for them */
	default:
		return true;
	}
}

bool o2ib_credit_reserves(uint8_t type)
{
	return type == O2IB_MSG_PUT_REQ || type == O2IB_MSG_GET_REQ;
}

enum o2ib_credit_verdict o2ib_credit_decide(const struct o2ib_credit_state *s, uint8_t type)
{
	bool credit = o2ib_credit_needed(s->version, type);

	if (s->nsends_posted >= s->max_sends)
		return O2IB_CREDIT_WAIT_SENDS;
	if (credit && s->credits == 0)
		return O2IB_CREDIT_WAIT_CREDIT;
	if (credit && s->credits == 1 && s->outstanding_credits == 0 && type != O2IB_MSG_NOOP &&
	    !is_v2(s->version) && s->queue_depth > 1)
		return O2IB_CREDIT_WAIT_LAST;
	if (type == O2IB_MSG_NOOP && s->outstanding_credits == 0 && !s->keepalive_due)
		return O2IB_CREDIT_DROP_NOOP;
	if (o2ib_credit_reserves(type) && s->reserved_credits <= 0)
		return O2IB_CREDIT_WAIT_RESERVED;
	return credit ? O2IB_CREDIT_POST : O2IB_CREDIT_POST_NOCRED;
}

bool o2ib_credit_need_noop(const struct o2ib_credit_state *s)
{
	if (s->outstanding_credits < s->hiw && !s->keepalive_due)
		return false;
	if (is_v2(s->version) && (s->noops_posted >= 2 || s->nocred_queued))
		return false;
	return !s->credit_queued || s->credits == 0;
}

int o2ib_credit_hiw(int queue_depth, int tun_hiw)
{
	int h = tun_hiw ? tun_hiw : queue_depth / 2;

	if (h >= queue_depth)
		h = queue_depth - 1;
	return h > 0 ? h : 1;
}

int o2ib_credit_max_sends(int concurrent_sends, int queue_depth, uint32_t nslots)
{
	int c = concurrent_sends ? concurrent_sends : queue_depth;

	return c < (int)nslots ? c : (int)nslots;
}
