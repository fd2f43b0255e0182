/* SPDX-License-Identifier: MIT */
/* Fault rules (docs/faults.md): what a node does wrong on purpose to the messages it sends, receives
 * and forwards, with lnetctl's vocabulary (drop, delay: match on source, destination and local NID,
 * portal, message type; 1 in N or once per interval) and what the kernel lacks (corrupt, duplicate,
 * reorder); and, at the LND level, to its connections (hello, reject, stall). Rules are node state;
 * with none installed the data path pays one atomic load. */
#ifndef ULNET_FAULT_H
#define ULNET_FAULT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "export.h"
#include "nid.h"

struct ulnet_node;

/* DROP..REORDER act on LNet messages; HELLO, REJECT and STALL on an LND's connections (never on the
 * per-message path): each connection attempt (hello, reject) or connection (stall) between a local
 * NI and a peer is one "match". */
enum ulnet_fault_kind {
	ULNET_FAULT_DROP, ULNET_FAULT_DELAY, ULNET_FAULT_CORRUPT, ULNET_FAULT_DUPLICATE, ULNET_FAULT_REORDER,
	ULNET_FAULT_HELLO,           /* tcp: the HELLO we send carries protocol version @version */
	ULNET_FAULT_REJECT,          /* o2ib: a connection request we would accept is rejected with @reason */
	ULNET_FAULT_STALL,           /* tcp, o2ib: the connection neither sends nor reads, @latency_ms or until
				      * the rule goes */
	ULNET_FAULT_KINDS
};
#define ULNET_FAULT_FIRST_LND ULNET_FAULT_HELLO
/* Whether @kind acts on connections (an LND's) rather than on messages. */
static inline bool ulnet_fault_kind_is_lnd(enum ulnet_fault_kind kind)
{
	return kind >= ULNET_FAULT_FIRST_LND && kind < ULNET_FAULT_KINDS;
}

/* hello: a version no socklnd speaks (it knows 1..4), when the rule names none */
#define ULNET_FAULT_HELLO_VERSION_DEFAULT 0xbadu
/* reject: o2iblnd's reject reasons (lnet-wire.md §1.6, IBLND_REJECT_*), 1..9 */
#define ULNET_FAULT_REJECT_MIN 1u
#define ULNET_FAULT_REJECT_MAX 9u

/* The LND status a drop simulates (lnetctl's --health_error names); NONE: the message vanishes and
 * the sender sees success (the kernel's drop), as a loss on the wire would look. */
enum ulnet_fault_health {
	ULNET_FAULT_HEALTH_NONE, ULNET_FAULT_LOCAL_INTERRUPT, ULNET_FAULT_LOCAL_DROPPED, ULNET_FAULT_LOCAL_ABORTED,
	ULNET_FAULT_LOCAL_NO_ROUTE, ULNET_FAULT_LOCAL_ERROR, ULNET_FAULT_LOCAL_TIMEOUT, ULNET_FAULT_REMOTE_ERROR,
	ULNET_FAULT_REMOTE_DROPPED, ULNET_FAULT_REMOTE_TIMEOUT, ULNET_FAULT_NETWORK_TIMEOUT, ULNET_FAULT_HEALTH_COUNT
};

#define ULNET_FAULT_PORTAL_ANY UINT32_MAX
#define ULNET_FAULT_HOLD_MS_DEFAULT 100u /* reorder: the longest a message waits for the next one */

struct ulnet_fault_rule {
	enum ulnet_fault_kind kind;
	struct ulnet_nid src, dst, local; /* the ANY NID ("*") matches every NID */
	uint32_t portal;             /* ULNET_FAULT_PORTAL_ANY; ACK and REPLY carry none: they match ANY only */
	uint32_t msg_mask;           /* 1 << enum ulnet_msg_type for each type; 0: every type */
	uint32_t rate;               /* act on 1 in @rate matched messages; 0: once per @interval_s */
	uint32_t interval_s;
	uint64_t seed;               /* rate: 0 acts on every rate-th (a counter); else at a random place
				      * in each window of @rate, from this seed (repeatable) */
	enum ulnet_fault_health health; /* drop */
	uint32_t latency_ms;         /* delay; stall: how long (0: until the rule is deleted) */
	uint32_t hold_ms;            /* reorder: 0 is ULNET_FAULT_HOLD_MS_DEFAULT */
	uint32_t version;            /* hello: 0 is ULNET_FAULT_HELLO_VERSION_DEFAULT */
	uint32_t reason;             /* reject: ULNET_FAULT_REJECT_MIN..MAX */
};

struct ulnet_fault_info {
	struct ulnet_fault_rule rule;
	uint64_t matched;            /* messages (connection attempts, connections) that fit the rule's match */
	uint64_t acted;              /* ... it dropped, delayed, corrupted, duplicated, held, spoiled, rejected
				      * or stalled */
};

/* A rule with every match field a wildcard, of @kind. */
ULNET_EXPORT void ulnet_fault_rule_init(struct ulnet_fault_rule *r, enum ulnet_fault_kind kind);
/* 0, or -EINVAL with the reason in *@why (static). */
ULNET_EXPORT int ulnet_fault_rule_check(const struct ulnet_fault_rule *r, const char **why);
/* Install @r (checked: -EINVAL with one log line). Adding or deleting a stall rule enters each NI's
 * loop to have its LND look at its connections again (as fault show does): not from an event handler. */
ULNET_EXPORT int ulnet_fault_add(struct ulnet_node *node, const struct ulnet_fault_rule *r);
/* Remove the rules of @kind whose source and destination are @src and @dst (NULL: any); returns how
 * many went. */
ULNET_EXPORT int ulnet_fault_del(struct ulnet_node *node, enum ulnet_fault_kind kind, const struct ulnet_nid *src,
				 const struct ulnet_nid *dst);
/* The @idx-th rule of @kind (ULNET_FAULT_KINDS: of every kind), in the order added. -ENOENT past the end. */
ULNET_EXPORT int ulnet_fault_info_get(struct ulnet_node *node, enum ulnet_fault_kind kind, unsigned idx,
				      struct ulnet_fault_info *out);
/* Every rule's counters back to 0 (the rules stay). */
ULNET_EXPORT void ulnet_fault_reset(struct ulnet_node *node);

ULNET_EXPORT const char *ulnet_fault_kind_name(enum ulnet_fault_kind kind);
ULNET_EXPORT int ulnet_fault_kind_parse(const char *s, enum ulnet_fault_kind *out);
ULNET_EXPORT const char *ulnet_fault_health_name(enum ulnet_fault_health h);
ULNET_EXPORT int ulnet_fault_health_parse(const char *s, enum ulnet_fault_health *out);
/* o2iblnd's name of reject reason @why ("CONN_STALE"), "?" outside 1..9. */
ULNET_EXPORT const char *ulnet_fault_reject_name(uint32_t why);
/* "CONN_STALE", "IBLND_REJECT_CONN_STALE" (any case) or a number 1..9; 0 or -EINVAL. */
ULNET_EXPORT int ulnet_fault_reject_parse(const char *s, uint32_t *why);
/* The negative errno the simulated LND status completes the message with (0 for NONE). */
ULNET_EXPORT int ulnet_fault_health_errno(enum ulnet_fault_health h);
struct ulnet_writer;
/* @fi as one list item of `fault:` (kind, src, dst, local_nid, portal, message, rate or interval,
 * seed, health_error / latency / hold / version / reason; with @counters, matched and dropped /
 * delayed / corrupted / duplicated / reordered / spoiled / rejected / stalled): what `fault show`
 * prints and a config file's `fault:` reads back. LND-level kinds have no portal nor message. */
ULNET_EXPORT void ulnet_fault_write(struct ulnet_writer *w, const struct ulnet_fault_info *fi, bool counters);
/* "PUT,GET" (any case) into a mask of 1 << enum ulnet_msg_type; 0 or -EINVAL with *@why. */
ULNET_EXPORT int ulnet_fault_types_parse(const char *s, uint32_t *mask, const char **why);
/* The mask as "PUT,GET" ("*" for 0) into @buf. */
ULNET_EXPORT const char *ulnet_fault_types_format(uint32_t mask, char *buf, size_t len);

#endif
