/* SPDX-License-Identifier: MIT */
/* What an LND asks of the LND-level fault rules (docs/faults.md: hello, reject, stall) on its
 * connection paths: a connection attempt or a new connection, never a message. Each call takes the
 * node lock (connection set-up is rare); the LND calls from its NI's loop. */
#ifndef ULNET_SDK_FAULT_LND_H
#define ULNET_SDK_FAULT_LND_H

#include <stdbool.h>
#include <stdint.h>
#include "ulnet/fault.h"

struct ulnet_ni;

/* The rule that acted, as it was when it did. */
struct ulnet_fault_lnd {
	uint64_t id;                 /* the node's name for the rule (ulnet__fault_lnd_alive) */
	struct ulnet_fault_rule rule; /* version and hold defaults filled in */
};

/* A connection attempt (@kind hello, reject) or a connection (stall) between @ni and @peer. The rules
 * of @kind that fit it are asked in the order added; each counts it as matched, and the first that
 * acts on it (1 in rate, or its interval is over) counts it as acted, fills *@out and ends the look:
 * true. @seen NULL: every rule is asked; else only those added after rule *@seen, and *@seen becomes
 * the newest rule's id (a connection is judged once by each rule, however often the LND looks). */
bool ulnet__fault_lnd(struct ulnet_ni *ni, const struct ulnet_nid *peer, enum ulnet_fault_kind kind, uint64_t *seen,
		      struct ulnet_fault_lnd *out);
/* Whether rule @id is still installed (a stall without latency lasts until it goes). */
bool ulnet__fault_lnd_alive(struct ulnet_ni *ni, uint64_t id);

#endif
