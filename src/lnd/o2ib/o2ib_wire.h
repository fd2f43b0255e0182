/* SPDX-License-Identifier: MIT */
/* o2iblnd messages (lnet-wire.md §2.5, §1.6): struct kib_msg, its bodies and struct kib_rej, as host
 * structs with explicit pack/unpack. Pure: no allocation, no logging, no globals.
 *
 * Envelopes travel in the sender's byte order; we always send native order and flip on receive when
 * the magic reads byte-swapped. The magic itself is kept as read (a record of the peer's order).
 * Cookies and the embedded LNet header (always little-endian, src/core/hdr_wire.c) are never swapped. */
#ifndef ULNET_O2IB_WIRE_H
#define ULNET_O2IB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hdr.h"

#define O2IB_MSG_MAGIC 0x0be91b91u        /* LNET_PROTO_IB_MAGIC */
#define O2IB_PROTO_MAGIC 0x45726963u      /* LNET_PROTO_MAGIC: "future unified protocol", rejected */
#define O2IB_MSG_VERSION_1 0x11u
#define O2IB_MSG_VERSION_2 0x12u
#define O2IB_MSG_VERSION O2IB_MSG_VERSION_2
#define O2IB_MSG_SIZE 4096u               /* every receive buffer; largest SEND */
#define O2IB_MAX_RDMA_FRAGS 257u          /* IBLND_MAX_RDMA_FRAGS since 2.14.56 */
/* The most fragments a 4096-byte PUT_ACK can carry; unpack never stores more, whatever the caller
 * asks, so a peer cannot make a descriptor grow past this. */
#define O2IB_RD_FRAGS_CAP 335u
#define O2IB_QUEUE_DEPTH_V1 8u
#define O2IB_MAX_FRAGS_V1 256u            /* V1 peers want exactly 8 credits and 256 fragments */

#define O2IB_HDR_SIZE 48u
#define O2IB_CONNPARAMS_SIZE 8u
#define O2IB_CONN_MSG_SIZE 56u            /* CONNREQ / CONNACK */
#define O2IB_COMPLETION_SIZE 60u          /* PUT_NAK / PUT_DONE / GET_DONE */
#define O2IB_IMMEDIATE_HDR_SIZE 120u      /* header + LNet header; payload follows */
#define O2IB_IMMEDIATE_MAX_PAYLOAD (O2IB_MSG_SIZE - O2IB_IMMEDIATE_HDR_SIZE) /* 3976 */
#define O2IB_PUTREQ_SIZE 128u
#define O2IB_PUTACK_SIZE(n) (72u + 12u * (n))
#define O2IB_GETREQ_SIZE(n) (136u + 12u * (n))
#define O2IB_RD_FRAG_SIZE 12u
#define O2IB_REJ_V1_SIZE 7u
#define O2IB_REJ_SIZE 24u

enum o2ib_msg_type {
	O2IB_MSG_CONNREQ = 0xc0,
	O2IB_MSG_CONNACK = 0xc1,
	O2IB_MSG_NOOP = 0xd0,
	O2IB_MSG_IMMEDIATE = 0xd1,
	O2IB_MSG_PUT_REQ = 0xd2,
	O2IB_MSG_PUT_NAK = 0xd3,
	O2IB_MSG_PUT_ACK = 0xd4,
	O2IB_MSG_PUT_DONE = 0xd5,
	O2IB_MSG_GET_REQ = 0xd6,
	O2IB_MSG_GET_DONE = 0xd7,
};
/* "PUT_ACK", or "unknown" */
const char *o2ib_msg_type_name(unsigned type);

/* Reject reasons carried in kib_rej.ibr_why (§1.6). */
enum o2ib_rej_why {
	O2IB_REJECT_CONN_RACE = 1,
	O2IB_REJECT_NO_RESOURCES = 2,
	O2IB_REJECT_FATAL = 3,
	O2IB_REJECT_CONN_UNCOMPAT = 4,
	O2IB_REJECT_CONN_STALE = 5,
	O2IB_REJECT_RDMA_FRAGS = 6,
	O2IB_REJECT_MSG_QUEUE_SIZE = 7,
	O2IB_REJECT_INVALID_SRV_ID = 8,
	O2IB_REJECT_EARLY = 9,
};
const char *o2ib_rej_why_name(unsigned why);

struct o2ib_connparams {
	uint16_t queue_depth;
	uint16_t max_frags;     /* a count of RDMA fragments, never pages */
	uint32_t max_msg_size;
};

struct o2ib_rdma_frag {
	uint32_t nob;
	uint64_t addr;          /* whatever the registering side's HCA expects with rd_key */
};

struct o2ib_rdma_desc {
	uint32_t key;
	uint32_t nfrags;
	struct o2ib_rdma_frag frags[O2IB_RD_FRAGS_CAP];
};

struct o2ib_msg {
	uint32_t magic;         /* as read: O2IB_MSG_MAGIC, or its byte swap for a flipped peer */
	uint16_t version;
	uint8_t type;
	uint8_t credits;
	uint32_t nob;           /* pack computes it */
	uint32_t cksum;         /* as received; pack computes it when asked */
	uint64_t srcnid, srcstamp, dstnid, dststamp; /* nid4 values */
	union {
		struct o2ib_connparams connparams;           /* CONNREQ, CONNACK */
		struct {
			struct ulnet_hdr hdr;
			const uint8_t *payload; /* points into the unpacked buffer / the caller's data */
			uint32_t payload_len;
		} immediate;
		struct {
			struct ulnet_hdr hdr;
			uint64_t cookie;        /* opaque */
		} putreq;
		struct {
			uint64_t src_cookie, dst_cookie;
			struct o2ib_rdma_desc rd;
		} putack;
		struct {
			struct ulnet_hdr hdr;
			uint64_t cookie;
			struct o2ib_rdma_desc rd;
		} get;
		struct {
			uint64_t cookie;
			int32_t status;         /* negative errno, or bytes transferred */
		} completion;                   /* PUT_NAK, PUT_DONE, GET_DONE */
	} u;
};

/* Why an unpack failed: the spec's field name, its offset in the message, the value seen, the limit,
 * and what the rule is. o2ib_wire_err_format() renders it as one log line. */
struct o2ib_wire_err {
	const char *field;
	size_t offset;
	uint64_t got, limit;
	const char *why;
};
/* "kib_msg rd_nfrags=0 at offset 68: fragment count must be 1..257 (limit 257)". Returns snprintf's value. */
int o2ib_wire_err_format(const struct o2ib_wire_err *err, char *buf, size_t cap);

/* kiblnd_cksum: rotate left by one, add the byte (unsigned char, as every kernel since 6.2 and every
 * non-x86 kernel); 0 becomes 1. @signed_char gives the pre-6.2 x86_64 variant. */
uint32_t o2ib_cksum(const uint8_t *buf, size_t len, bool signed_char);

/* Bytes the packed message will take (without writing), or -EINVAL for an unknown type, an IMMEDIATE
 * payload above 3976 bytes or a descriptor with more than O2IB_RD_FRAGS_CAP fragments. */
int o2ib_msg_size(const struct o2ib_msg *m);
/* Pack @m (magic, nob and cksum are computed: cksum only when @cksum). @swab writes the opposite byte
 * order, as a peer of the other endianness would (tests, fuzz seeds). Returns bytes written, -ENOSPC
 * if @cap is short, -EINVAL for an unpackable message (unknown type, too many fragments, an LNet header
 * NID that does not fit nid4). */
int o2ib_msg_pack_order(const struct o2ib_msg *m, bool cksum, bool swab, uint8_t *out, size_t cap);
static inline int o2ib_msg_pack(const struct o2ib_msg *m, bool cksum, uint8_t *out, size_t cap)
{
	return o2ib_msg_pack_order(m, cksum, false, out, cap);
}
/* Unpack and validate as §2.5.4 (kiblnd_unpack_msg). @max_frags is the most fragments a descriptor may
 * carry (O2IB_MAX_RDMA_FRAGS normally; clamped to O2IB_RD_FRAGS_CAP). Returns 0, or -EPROTO with @err.
 * Checksums are verified when non-zero; either char signedness is accepted (§2.5.3 hazard). */
int o2ib_msg_unpack(const uint8_t *buf, size_t len, uint32_t max_frags, struct o2ib_msg *out,
		    struct o2ib_wire_err *err);
static inline bool o2ib_msg_flipped(const struct o2ib_msg *m) { return m->magic != O2IB_MSG_MAGIC; }

/* struct kib_rej (CM REJ private data). */
struct o2ib_rej {
	uint32_t magic;         /* as read (unpack) */
	uint16_t version;
	uint8_t why;
	uint64_t incarnation;   /* all ones when the reject did not carry one */
	bool has_cp;            /* unpack: connparams and incarnation present (>= 24 bytes and version > 0x11) */
	struct o2ib_connparams cp;
};
/* Writes the 7-byte V1 form for version 0x11, the 24-byte form otherwise (native order, or swapped
 * with @swab). Returns bytes written or -ENOSPC. */
int o2ib_rej_pack_order(const struct o2ib_rej *r, bool swab, uint8_t *out, size_t cap);
static inline int o2ib_rej_pack(const struct o2ib_rej *r, uint8_t *out, size_t cap)
{
	return o2ib_rej_pack_order(r, false, out, cap);
}
/* Needs >= 7 bytes and an IB or unified-protocol magic in either order. 0 or -EPROTO with @err. */
int o2ib_rej_unpack(const uint8_t *buf, size_t len, struct o2ib_rej *out, struct o2ib_wire_err *err);

#endif
