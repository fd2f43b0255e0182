/* SPDX-License-Identifier: MIT */
/* fault_rule.c: one fault rule's matching and its 1-in-N / interval decision, pure (no node, no
 * lock, no clock of its own): what tests/unit/test_fault.c tables. */
#ifndef ULNET_FAULT_RULE_H
#define ULNET_FAULT_RULE_H

#include <stdbool.h>
#include <stdint.h>
#include "ulnet/fault.h"
#include "hdr.h"

struct ulnet_fault_state {
	uint64_t id;                 /* the node's name for the rule (each loop keeps its own state of it) */
	struct ulnet_fault_info info; /* the rule and its counters */
	uint64_t next_ns;            /* interval: the earliest time it acts again */
	uint64_t rng;                /* rate with a seed: xorshift state */
	uint32_t pick;               /* ... the place in the current window it acts at */
};

/* The screen (docs/faults.md "Cost"): a necessary condition for a message to fit any per-message
 * rule, cheap enough for every message. One NID field of the message every rule names (the
 * destination if they all do, else the local NI, else the source), and the set of those rules' NIDs
 * as bits of a 64-bit word; a message whose NID's bit is clear fits no rule and skips the rules. */
enum ulnet_fault_screen_field {
	ULNET_FAULT_SCREEN_OFF,   /* no per-message rule: nothing to judge */
	ULNET_FAULT_SCREEN_DST, ULNET_FAULT_SCREEN_LOCAL, ULNET_FAULT_SCREEN_SRC,
	ULNET_FAULT_SCREEN_ALL,   /* no field every rule names: every message goes to the rules */
};

/* The screen's bit of a NID: a hash of the fields ulnet__nid_equal compares first (equal NIDs, equal
 * bits). */
static inline unsigned ulnet__fault_nid_bit(const struct ulnet_nid *n)
{
	return (uint32_t)((n->addr[0] ^ ((uint32_t)n->num << 8) ^ n->type) * 0x9e3779b1u) >> 26;
}

/* The screen of the @n rules @rules: its field (enum ulnet_fault_screen_field) and *@bits. */
unsigned ulnet__fault_screen_make(const struct ulnet_fault_state *rules, unsigned n, uint64_t *bits);

/* Start @st for @r, added at @now_ns. */
void ulnet__fault_state_init(struct ulnet_fault_state *st, const struct ulnet_fault_rule *r, uint64_t now_ns);
/* Does the message @hdr, sent or received by NI @local, fit the rule's match? */
bool ulnet__fault_matches(const struct ulnet_fault_rule *r, const struct ulnet_hdr *hdr,
			  const struct ulnet_nid *local);
/* Does a connection (attempt) between NI @local and @peer fit the LND-level rule's match? Its source
 * and destination fit the two ends in either order. */
bool ulnet__fault_matches_conn(const struct ulnet_fault_rule *r, const struct ulnet_nid *local,
			       const struct ulnet_nid *peer);
/* @hdr fits: count it; true if the rule acts on this one (1 in rate, or the interval is over). */
bool ulnet__fault_decide(struct ulnet_fault_state *st, uint64_t now_ns);

#endif
