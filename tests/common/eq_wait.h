/* SPDX-License-Identifier: MIT */
/* Test helper: wait for one kind of event on an EQ several nodes share, keeping the others for later
 * calls. Header-only; include after cmocka.h. */
#ifndef ULNET_TEST_EQ_WAIT_H
#define ULNET_TEST_EQ_WAIT_H

#include "ulnet/ulnet.h"

/* Events of both nodes share one EQ, so the initiator's ACK may come before the target's PUT event:
 * wait for a kind, keeping the others seen meanwhile for later calls. */
static struct ulnet_event stash[16];
static unsigned nstash;

static int wait_for(ulnet_eq *eq, enum ulnet_event_kind kind, struct ulnet_event *out)
{
	for (unsigned i = 0; i < nstash; i++)
		if (stash[i].type == kind) {
			*out = stash[i];
			stash[i] = stash[--nstash];
			return 0;
		}
	for (int i = 0; i < 10; i++) {
		if (ulnet_eq_wait(eq, 10000, out) != 1)
			return -1;
		if (out->type == kind)
			return 0;
		if (nstash < 16)
			stash[nstash++] = *out;
	}
	return -1;
}

#endif
