/* SPDX-License-Identifier: MIT */
/* Memory descriptors and match entries: what LNet calls MDs and MEs (lnet-wire.md §6.2). */
#ifndef ULNET_MD_H
#define ULNET_MD_H

#include <stdint.h>
#include <sys/uio.h>
#include "nid.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ulnet_node ulnet_node;
typedef struct ulnet_eq ulnet_eq;
struct ulnet_event;

#define ULNET_MAX_PORTALS 64
#define ULNET_RESERVED_PORTAL 0
#define ULNET_MTU (1u << 20)      /* LNET_MTU: largest payload of one LNet message */
#define ULNET_MAX_IOV 256         /* LNET_MAX_IOV: LNet's limit on MD fragment entries */
/* ulnet accepts more entries than LNet: an unaligned 1 MiB on 4 KiB pages spans 257 pages (LU-15092),
 * and a valid transfer must never fail for fragment reasons. */
#define ULNET_MD_MAX_FRAGS 1024
#define ULNET_MD_THRESH_INF (-1)

/* MD options; values are LNet's. */
enum ulnet_md_option {
	ULNET_MD_OP_PUT = 0x1,
	ULNET_MD_OP_GET = 0x2,
	ULNET_MD_MANAGE_REMOTE = 0x4, /* use the offset the initiator sent, not the local one */
	ULNET_MD_TRUNCATE = 0x10,     /* accept longer messages, keeping what fits */
	ULNET_MD_ACK_DISABLE = 0x20,  /* never send an ACK for a PUT into this MD */
	ULNET_MD_IOVEC = 0x40,        /* start = struct iovec[], length = entry count */
	ULNET_MD_MAX_SIZE = 0x80,     /* unlink when less than max_size room is left */
	ULNET_MD_KIOV = 0x100,        /* start = struct ulnet_kiov[], length = entry count */
};

/* A page fragment: it may not cross a boundary of the node's page size (ulnet_node_page_size). */
struct ulnet_kiov {
	void *kiov_base;
	uint32_t kiov_len;
};

/* Called on the node's loop thread, with no ulnet lock held; it may call any non-blocking API. */
typedef void (*ulnet_event_handler)(const struct ulnet_event *ev);

/* What the caller fills to create an MD. The memory behind @start is borrowed until the UNLINK
 * event (or, for an MD that never sees traffic, until ulnet_md_unlink returns). */
struct ulnet_md {
	void *start;           /* buffer, struct iovec[] or struct ulnet_kiov[] */
	uint32_t length;       /* bytes, or entries (<= ULNET_MD_MAX_FRAGS) for IOVEC/KIOV */
	int threshold;         /* operations before auto-unlink; ULNET_MD_THRESH_INF never */
	uint32_t max_size;     /* with ULNET_MD_MAX_SIZE */
	uint32_t options;      /* enum ulnet_md_option bits */
	void *user_ptr;        /* returned in every event */
	ulnet_eq *eq;          /* events go here (may be NULL) */
	ulnet_event_handler handler; /* and/or to this callback (may be NULL) */
};

/* Opaque handle; a stale handle is detected (-ENOENT), never dereferenced. */
struct ulnet_handle {
	uint64_t cookie;
};
#define ULNET_HANDLE_NONE ((struct ulnet_handle){ UINT64_MAX })

enum ulnet_unlink { ULNET_RETAIN = 0, ULNET_UNLINK = 1 };
enum ulnet_ins_pos { ULNET_INS_BEFORE, ULNET_INS_AFTER };
enum ulnet_ack_req { ULNET_NOACK_REQ = 0, ULNET_ACK_REQ = 1 };

/* Attach an ME to @portal matching initiators @match_id (NID and/or pid may be ANY) and bits where
 * ((bits ^ match_bits) & ~ignore_bits) == 0. -EINVAL bad portal; -ENOMEM. */
ULNET_EXPORT int ulnet_me_attach(ulnet_node *node, uint32_t portal, const struct ulnet_process_id *match_id,
				 uint64_t match_bits, uint64_t ignore_bits, enum ulnet_unlink unlink,
				 enum ulnet_ins_pos pos, struct ulnet_handle *me_out);
/* Remove an ME; its MD (if any) is unlinked too (UNLINK event). -ENOENT stale handle. */
ULNET_EXPORT int ulnet_me_unlink(ulnet_node *node, struct ulnet_handle me);
/* Attach a new MD to an ME (one MD per ME). @unlink = ULNET_UNLINK: the ME goes when the MD does.
 * -EINVAL bad MD (kiov entry crossing a page, too many entries, length over 2^32), -EBUSY ME has an
 * MD, -ENOENT stale ME. */
ULNET_EXPORT int ulnet_md_attach(ulnet_node *node, struct ulnet_handle me, const struct ulnet_md *md,
				 enum ulnet_unlink unlink, struct ulnet_handle *md_out);
/* A free-standing MD for the initiator side of put/get. Each operation on it uses one unit of
 * threshold (a PUT with ACK uses two: SEND and ACK; a GET two: SEND and REPLY); it goes when the
 * threshold is used up or on ulnet_md_unlink, whatever @unlink says (kept for LNet's signature).
 * Errors as ulnet_md_attach. */
ULNET_EXPORT int ulnet_md_bind(ulnet_node *node, const struct ulnet_md *md, enum ulnet_unlink unlink,
			       struct ulnet_handle *md_out);
/* Unlink an MD (and the ME it is attached to). Idle: it goes at once with an UNLINK event. Busy: nothing
 * new matches it, and the last in-flight message's completion event carries unlinked = 1 (as LNet).
 * -ENOENT stale handle. */
ULNET_EXPORT int ulnet_md_unlink(ulnet_node *node, struct ulnet_handle md);

#ifdef __cplusplus
}
#endif
#endif
