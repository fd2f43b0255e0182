/* SPDX-License-Identifier: MIT */
/* Events and event queues (lnet-wire.md §6.2). */
#ifndef ULNET_EVENT_H
#define ULNET_EVENT_H

#include <stdbool.h>
#include <stdint.h>
#include "md.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values are LNet's. */
enum ulnet_event_kind {
	ULNET_EVENT_GET = 1,    /* target: a GET read this MD */
	ULNET_EVENT_PUT = 2,    /* target: data landed in this MD */
	ULNET_EVENT_REPLY = 3,  /* initiator: reply data landed */
	ULNET_EVENT_ACK = 4,    /* initiator: PUT acknowledged (mlength = what the target kept) */
	ULNET_EVENT_SEND = 5,   /* initiator: the MD may be reused; not a delivery guarantee */
	ULNET_EVENT_UNLINK = 6, /* the MD is gone; its memory is the caller's again */
};

/* Message types on the wire (lnet_hdr type). */
enum ulnet_msg_type { ULNET_MSG_ACK = 0, ULNET_MSG_PUT = 1, ULNET_MSG_GET = 2, ULNET_MSG_REPLY = 3 };

struct ulnet_event {
	enum ulnet_event_kind type;
	struct ulnet_process_id target;    /* who the operation was addressed to */
	struct ulnet_process_id initiator; /* who started it */
	struct ulnet_nid sender;           /* last hop */
	uint32_t pt_index;
	uint64_t match_bits;
	uint32_t rlength;                  /* requested length */
	uint32_t mlength;                  /* length actually moved */
	uint32_t offset;                   /* offset in the MD where data went / came from */
	struct ulnet_handle md_handle;
	void *md_start;
	void *md_user_ptr;
	uint32_t md_options;
	uint64_t hdr_data;
	int msg_type;                      /* enum ulnet_msg_type */
	int status;                        /* 0, or -errno (e.g. -ETIMEDOUT, -ECONNRESET, -ESHUTDOWN) */
	bool unlinked;                     /* this was the MD's last event */
};

/* An unbounded event queue: events are never dropped. Thread-safe. */
ULNET_EXPORT int ulnet_eq_create(ulnet_eq **out);
/* -EBUSY while MDs still refer to it. */
ULNET_EXPORT int ulnet_eq_destroy(ulnet_eq *eq);
/* Take the oldest event. 1: *ev filled; 0: none within @timeout_ms (0 = poll, -1 = forever). */
ULNET_EXPORT int ulnet_eq_wait(ulnet_eq *eq, int timeout_ms, struct ulnet_event *ev);
/* A waiter that finds @eq empty polls it for up to @spin_us before it sleeps (default 0: it sleeps
 * at once). An event that comes meanwhile costs no sleep and no wake-up: for a thread that takes a
 * stream of completions (a message-rate loop), at the price of its core, which it does not yield
 * while it polls. 0 to ULNET_EQ_SPIN_MAX_US; -EINVAL beyond. */
#define ULNET_EQ_SPIN_MAX_US 10000u
ULNET_EXPORT int ulnet_eq_set_spin(ulnet_eq *eq, unsigned spin_us);
ULNET_EXPORT const char *ulnet_event_kind_name(enum ulnet_event_kind kind);

#ifdef __cplusplus
}
#endif
#endif
