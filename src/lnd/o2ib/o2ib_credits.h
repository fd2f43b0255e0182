/* SPDX-License-Identifier: MIT */
/* o2ib send credits (lnet-wire.md §4.1): pure decisions over a snapshot of a connection's counters,
 * no I/O, no clock. The LND copies the counters in (o2ib_tx.c), asks, and does what the answer says;
 * the counting itself (a post spends, a receive returns) stays with the LND.
 *
 * The rules, in the order o2ib_credit_decide applies them to the message at the head of a queue:
 *   1. no more than max_sends messages in flight at once (concurrent_sends, bounded by the slots);
 *   2. a credit-queue message needs a peer credit;
 *   3. V1: the last credit is kept for a NOOP, so credits can always flow back (V2 NOOPs need no
 *      credit, and at depth 1 the rule would stop everything);
 *   4. a NOOP with no credits to return and no keepalive due is dropped, unsent;
 *   5. a PUT_REQ/GET_REQ also holds a reserved credit: a receive kept for its answer.
 * And o2ib_credit_need_noop: a NOOP is queued when the credits to return reach the high-water mark
 * (or a keepalive is due) and no other message can carry them. */
#ifndef ULNET_O2IB_CREDITS_H
#define ULNET_O2IB_CREDITS_H

#include <stdbool.h>
#include <stdint.h>
#include "o2ib_wire.h"

/* A connection's credit counters (names as in struct o2ib_conn) at the time of a decision. */
struct o2ib_credit_state {
	uint16_t version;        /* the connection's message version: a V2 NOOP takes no credit */
	int queue_depth;
	int credits;             /* peer receives we may still fill */
	int outstanding_credits; /* credits we owe the peer (sent with the next message) */
	int reserved_credits;    /* our receives free for answers to our PUT_REQ/GET_REQ */
	int nsends_posted, max_sends;
	int noops_posted;        /* V2: NOOPs in flight */
	int hiw;                 /* o2ib_credit_hiw */
	bool keepalive_due;      /* the keepalive interval has passed since the last send */
	bool credit_queued;      /* a message waits in the credit queue */
	bool nocred_queued;      /* a message waits in the no-credit queue */
};

enum o2ib_credit_verdict {
	O2IB_CREDIT_POST,          /* post it, spending a peer credit */
	O2IB_CREDIT_POST_NOCRED,   /* post it, no credit needed */
	O2IB_CREDIT_DROP_NOOP,     /* a NOOP with nothing to carry: complete it unsent */
	O2IB_CREDIT_WAIT_SENDS,    /* rule 1: max_sends messages are in flight */
	O2IB_CREDIT_WAIT_CREDIT,   /* rule 2: no peer credit */
	O2IB_CREDIT_WAIT_LAST,     /* rule 3: the last credit is kept for a NOOP */
	O2IB_CREDIT_WAIT_RESERVED, /* rule 5: no reserved credit for the answer */
};

/* "POST", "WAIT_LAST", ... (tests and logs) */
const char *o2ib_credit_verdict_name(enum o2ib_credit_verdict v);

/* True if a message of @type spends a peer credit on a connection of @version, i.e. goes on the
 * credit queue (else the no-credit queue). */
bool o2ib_credit_needed(uint16_t version, uint8_t type);

/* True if a message of @type holds one of our reserved credits while its answer is awaited. */
bool o2ib_credit_reserves(uint8_t type);

/* The message of @type at the head of its queue (the one o2ib_credit_needed chose): what to do now.
 * Every WAIT_* means stop posting until something changes. */
enum o2ib_credit_verdict o2ib_credit_decide(const struct o2ib_credit_state *s, uint8_t type);

/* True if a NOOP should be queued to return credits (or as a keepalive): the credits owed reach the
 * high-water mark or a keepalive is due; on V2, fewer than 2 NOOPs are in flight and no no-credit
 * message is queued to carry them; and no credit message can carry them now (none is queued, or no
 * credit is left to send it). */
bool o2ib_credit_need_noop(const struct o2ib_credit_state *s);

/* The NOOP high-water mark: @tun_hiw (0: half the depth), below the depth, at least 1 (a depth of 1
 * returns every credit at once). */
int o2ib_credit_hiw(int queue_depth, int tun_hiw);

/* Messages in flight at once: @concurrent_sends (0: the depth), no more than the send slots. */
int o2ib_credit_max_sends(int concurrent_sends, int queue_depth, uint32_t nslots);

#endif
