/* SPDX-License-Identifier: MIT */
/* Fault rules without a node: names, checks, matching and the decision to act. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fault_rule.h"
#include "sdk/nid_equal.h"

static const char *const kind_names[ULNET_FAULT_KINDS] = { "drop", "delay", "corrupt", "duplicate", "reorder",
							   "hello", "reject", "stall" };

/* o2iblnd's reject reasons by value (lnet-wire.md §1.6) */
static const char *const reject_names[ULNET_FAULT_REJECT_MAX + 1] = {
	[1] = "CONN_RACE", [2] = "NO_RESOURCES", [3] = "FATAL", [4] = "CONN_UNCOMPAT", [5] = "CONN_STALE",
	[6] = "RDMA_FRAGS", [7] = "MSG_QUEUE_SIZE", [8] = "INVALID_SRV_ID", [9] = "EARLY",
};

/* lnetctl's --health_error names and the errno each completes a send with (a drop on receive has no
 * sender to tell: the status only shows on the sender's own drops) */
static const struct {
	const char *name;
	int err;
} healths[ULNET_FAULT_HEALTH_COUNT] = {
	[ULNET_FAULT_HEALTH_NONE] = { "none", 0 },
	[ULNET_FAULT_LOCAL_INTERRUPT] = { "local_interrupt", -EINTR },
	[ULNET_FAULT_LOCAL_DROPPED] = { "local_dropped", -ECANCELED },
	[ULNET_FAULT_LOCAL_ABORTED] = { "local_aborted", -ECONNABORTED },
	[ULNET_FAULT_LOCAL_NO_ROUTE] = { "local_no_route", -EHOSTUNREACH },
	[ULNET_FAULT_LOCAL_ERROR] = { "local_error", -EIO },
	[ULNET_FAULT_LOCAL_TIMEOUT] = { "local_timeout", -ETIMEDOUT },
	[ULNET_FAULT_REMOTE_ERROR] = { "remote_error", -EREMOTEIO },
	[ULNET_FAULT_REMOTE_DROPPED] = { "remote_dropped", -ECONNRESET },
	[ULNET_FAULT_REMOTE_TIMEOUT] = { "remote_timeout", -ETIMEDOUT },
	[ULNET_FAULT_NETWORK_TIMEOUT] = { "network_timeout", -ENETUNREACH },
};

static const char *const type_names[4] = { "ACK", "PUT", "GET", "REPLY" };

const char *ulnet_fault_kind_name(enum ulnet_fault_kind kind)
{
	return (unsigned)kind < ULNET_FAULT_KINDS ? kind_names[kind] : "?";
}

int ulnet_fault_kind_parse(const char *s, enum ulnet_fault_kind *out)
{
	for (unsigned i = 0; s && i < ULNET_FAULT_KINDS; i++)
		if (strcmp(s, kind_names[i]) == 0) {
			*out = (enum ulnet_fault_kind)i;
			return 0;
		}
	return -EINVAL;
}

const char *ulnet_fault_reject_name(uint32_t why)
{
	return why >= ULNET_FAULT_REJECT_MIN && why <= ULNET_FAULT_REJECT_MAX ? reject_names[why] : "?";
}

int ulnet_fault_reject_parse(const char *s, uint32_t *why)
{
	char *end;
	unsigned long v;

	if (!s || !*s)
		return -EINVAL;
	if (*s >= '0' && *s <= '9') {
		v = strtoul(s, &end, 10);
		if (*end || v < ULNET_FAULT_REJECT_MIN || v > ULNET_FAULT_REJECT_MAX)
			return -EINVAL;
		*why = (uint32_t)v;
		return 0;
	}
	if (strncasecmp(s, "IBLND_REJECT_", 13) == 0)
		s += 13;
	for (uint32_t i = ULNET_FAULT_REJECT_MIN; i <= ULNET_FAULT_REJECT_MAX; i++)
		if (strcasecmp(s, reject_names[i]) == 0) {
			*why = i;
			return 0;
		}
	return -EINVAL;
}

const char *ulnet_fault_health_name(enum ulnet_fault_health h)
{
	return (unsigned)h < ULNET_FAULT_HEALTH_COUNT ? healths[h].name : "?";
}

int ulnet_fault_health_parse(const char *s, enum ulnet_fault_health *out)
{
	for (unsigned i = 0; s && i < ULNET_FAULT_HEALTH_COUNT; i++)
		if (strcmp(s, healths[i].name) == 0) {
			*out = (enum ulnet_fault_health)i;
			return 0;
		}
	return -EINVAL;
}

int ulnet_fault_health_errno(enum ulnet_fault_health h)
{
	return (unsigned)h < ULNET_FAULT_HEALTH_COUNT ? healths[h].err : -EIO;
}

int ulnet_fault_types_parse(const char *s, uint32_t *mask, const char **why)
{
	uint32_t m = 0;

	if (!s || !*s) {
		*why = "empty message type list (PUT,ACK,GET,REPLY)";
		return -EINVAL;
	}
	while (*s) {
		size_t n = strcspn(s, ",");
		unsigned i;

		for (i = 0; i < 4; i++)
			if (n == strlen(type_names[i]) && strncasecmp(s, type_names[i], n) == 0)
				break;
		if (i == 4) {
			*why = "unknown message type (PUT, ACK, GET, REPLY)";
			return -EINVAL;
		}
		m |= 1u << i;
		s += n;
		if (*s == ',')
			s++;
	}
	*mask = m;
	return 0;
}

const char *ulnet_fault_types_format(uint32_t mask, char *buf, size_t len)
{
	static const unsigned order[4] = { ULNET_MSG_PUT, ULNET_MSG_ACK, ULNET_MSG_GET, ULNET_MSG_REPLY };
	size_t off = 0;

	snprintf(buf, len, "%s", mask ? "" : "*");
	for (unsigned i = 0; i < 4 && mask; i++) {
		if (!(mask & (1u << order[i])))
			continue;
		int w = snprintf(buf + off, len > off ? len - off : 0, "%s%s", off ? "," : "", type_names[order[i]]);

		if (w > 0)
			off += (size_t)w;
	}
	return buf;
}

void ulnet_fault_rule_init(struct ulnet_fault_rule *r, enum ulnet_fault_kind kind)
{
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->src = r->dst = r->local = ulnet_nid_any();
	r->portal = ULNET_FAULT_PORTAL_ANY;
}

int ulnet_fault_rule_check(const struct ulnet_fault_rule *r, const char **why)
{
	bool lnd = r && ulnet_fault_kind_is_lnd(r->kind);

	*why = NULL;
	if (!r || (unsigned)r->kind >= ULNET_FAULT_KINDS)
		*why = "unknown fault kind (drop, delay, corrupt, duplicate, reorder, hello, reject, stall)";
	else if (!r->rate == !r->interval_s)
		*why = "give one of --rate N (1 in N) and --interval S (seconds)";
	else if (r->portal != ULNET_FAULT_PORTAL_ANY && r->portal >= 64)
		*why = "portal out of range (0..63)";
	else if (r->msg_mask & ~0xfu)
		*why = "unknown message type in the mask";
	else if ((unsigned)r->health >= ULNET_FAULT_HEALTH_COUNT)
		*why = "unknown health error";
	else if (r->health != ULNET_FAULT_HEALTH_NONE && r->kind != ULNET_FAULT_DROP)
		*why = "--health_error is for drop rules";
	else if (r->kind == ULNET_FAULT_DELAY && (r->latency_ms == 0 || r->latency_ms > 3600000))
		*why = "a delay rule needs --latency MS (1..3600000)";
	else if (r->kind == ULNET_FAULT_STALL && r->latency_ms > 3600000)
		*why = "a stall rule's --latency MS is 1..3600000 (none: until the rule is deleted)";
	else if (r->kind != ULNET_FAULT_DELAY && r->kind != ULNET_FAULT_STALL && r->latency_ms)
		*why = "--latency is for delay and stall rules";
	else if (r->hold_ms > 60000)
		*why = "reorder hold above 60000 ms";
	else if (r->hold_ms && r->kind != ULNET_FAULT_REORDER)
		*why = "--hold is for reorder rules";
	else if (lnd && (r->portal != ULNET_FAULT_PORTAL_ANY || r->msg_mask))
		*why = "--portal and --message are for message rules: hello, reject and stall act on connections";
	else if (r->version && r->kind != ULNET_FAULT_HELLO)
		*why = "--version is for hello rules";
	else if (r->kind == ULNET_FAULT_REJECT &&
		 (r->reason < ULNET_FAULT_REJECT_MIN || r->reason > ULNET_FAULT_REJECT_MAX))
		*why = "a reject rule needs --reason, an o2iblnd reject reason 1..9 or its name (CONN_RACE, "
		       "NO_RESOURCES, FATAL, CONN_UNCOMPAT, CONN_STALE, RDMA_FRAGS, MSG_QUEUE_SIZE, INVALID_SRV_ID, EARLY)";
	else if (r->reason && r->kind != ULNET_FAULT_REJECT)
		*why = "--reason is for reject rules";
	return *why ? -EINVAL : 0;
}

static bool nid_fits(const struct ulnet_nid *want, const struct ulnet_nid *nid)
{
	return ulnet_nid_is_any(want) || ulnet__nid_equal(want, nid);
}

bool ulnet__fault_matches(const struct ulnet_fault_rule *r, const struct ulnet_hdr *hdr,
			  const struct ulnet_nid *local)
{
	uint32_t portal = ULNET_FAULT_PORTAL_ANY;

	if (r->msg_mask && !(r->msg_mask & (1u << (hdr->type & 3))))
		return false;
	if (hdr->type == ULNET_MSG_PUT)
		portal = hdr->msg.put.ptl_index;
	else if (hdr->type == ULNET_MSG_GET)
		portal = hdr->msg.get.ptl_index;
	if (r->portal != ULNET_FAULT_PORTAL_ANY && r->portal != portal)
		return false;
	return nid_fits(&r->src, &hdr->src_nid) && nid_fits(&r->dst, &hdr->dest_nid) && nid_fits(&r->local, local);
}

unsigned ulnet__fault_screen_make(const struct ulnet_fault_state *rules, unsigned n, uint64_t *bits)
{
	static const unsigned order[] = { ULNET_FAULT_SCREEN_DST, ULNET_FAULT_SCREEN_LOCAL, ULNET_FAULT_SCREEN_SRC };
	bool any = false;

	*bits = 0;
	for (unsigned i = 0; i < n; i++)
		any |= !ulnet_fault_kind_is_lnd(rules[i].info.rule.kind);
	if (!any)
		return ULNET_FAULT_SCREEN_OFF;
	for (unsigned f = 0; f < sizeof(order) / sizeof(order[0]); f++) {
		uint64_t b = 0;
		unsigned i;

		for (i = 0; i < n; i++) {
			const struct ulnet_fault_rule *r = &rules[i].info.rule;
			const struct ulnet_nid *nid = order[f] == ULNET_FAULT_SCREEN_DST     ? &r->dst
						      : order[f] == ULNET_FAULT_SCREEN_LOCAL ? &r->local
											     : &r->src;

			if (ulnet_fault_kind_is_lnd(r->kind))
				continue;
			if (ulnet_nid_is_any(nid))
				break; /* this rule fits every NID in this field */
			b |= 1ull << ulnet__fault_nid_bit(nid);
		}
		if (i == n) {
			*bits = b;
			return order[f];
		}
	}
	return ULNET_FAULT_SCREEN_ALL;
}

bool ulnet__fault_matches_conn(const struct ulnet_fault_rule *r, const struct ulnet_nid *local,
			       const struct ulnet_nid *peer)
{
	/* a connection carries both ways: source and destination fit it in either order */
	return nid_fits(&r->local, local) &&
	       ((nid_fits(&r->src, local) && nid_fits(&r->dst, peer)) ||
		(nid_fits(&r->src, peer) && nid_fits(&r->dst, local)));
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

void ulnet__fault_state_init(struct ulnet_fault_state *st, const struct ulnet_fault_rule *r, uint64_t now_ns)
{
	memset(st, 0, sizeof(*st));
	st->info.rule = *r;
	if (st->info.rule.kind == ULNET_FAULT_REORDER && !st->info.rule.hold_ms)
		st->info.rule.hold_ms = ULNET_FAULT_HOLD_MS_DEFAULT;
	if (st->info.rule.kind == ULNET_FAULT_HELLO && !st->info.rule.version)
		st->info.rule.version = ULNET_FAULT_HELLO_VERSION_DEFAULT;
	st->next_ns = now_ns + (uint64_t)r->interval_s * 1000000000ull;
	st->rng = r->seed ? r->seed : 1;
}

bool ulnet__fault_decide(struct ulnet_fault_state *st, uint64_t now_ns)
{
	const struct ulnet_fault_rule *r = &st->info.rule;
	uint64_t n = st->info.matched++; /* 0-based place of this message */
	bool act;

	if (!r->rate) { /* once per interval: the first message after it is over */
		act = now_ns >= st->next_ns;
		if (act)
			st->next_ns = now_ns + (uint64_t)r->interval_s * 1000000000ull;
	} else if (!r->seed) {
		act = (n + 1) % r->rate == 0; /* every rate-th, as a counter */
	} else {
		if (n % r->rate == 0)
			st->pick = (uint32_t)(xorshift(&st->rng) % r->rate);
		act = n % r->rate == st->pick;
	}
	if (act)
		st->info.acted++;
	return act;
}
