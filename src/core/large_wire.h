/* SPDX-License-Identifier: MIT */
/* Large payloads between ulnet peers (docs/large.md): the match bits, header fields and the one
 * descriptor the rendezvous carries over ordinary LNet messages on portal 0. Pure: table-tested in
 * tests/unit/test_large_wire.c. */
#ifndef ULNET_CORE_LARGE_WIRE_H
#define ULNET_CORE_LARGE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Match bits on portal 0: a 16-bit tag, an 8-bit message kind, 40 bits of argument. LNet's ping
 * and push match bits (0x8000..., 0x4000...) never carry this tag. */
#define ULNET_LARGE_TAG UINT64_C(0x756c)            /* "ul" */
#define ULNET_LARGE_ARG_BITS 40
#define ULNET_LARGE_ARG_MASK ((UINT64_C(1) << ULNET_LARGE_ARG_BITS) - 1)
enum ulnet_large_kind {
	ULNET_LARGE_ANNOUNCE = 1, /* initiator -> target, 0 bytes: arg = op kind, hdr_data = cookie */
	ULNET_LARGE_DESC = 2,     /* target GETs the descriptor: arg = cookie */
	ULNET_LARGE_DATA = 3,     /* the payload pieces (GET or PUT+ACK of <= LNET_MTU): arg = cookie */
	ULNET_LARGE_DONE = 4,     /* target -> initiator, 0 bytes: arg = mlength, hdr_data = cookie|status */
};
enum ulnet_large_op_kind { ULNET_LARGE_OP_PUT = 1, ULNET_LARGE_OP_GET = 2 };

static inline uint64_t ulnet_large_bits(enum ulnet_large_kind kind, uint64_t arg)
{
	return ULNET_LARGE_TAG << 48 | (uint64_t)kind << ULNET_LARGE_ARG_BITS | (arg & ULNET_LARGE_ARG_MASK);
}
/* kind of @bits, or 0 when they are not ours */
static inline unsigned ulnet_large_bits_kind(uint64_t bits)
{
	return (bits >> 48) == ULNET_LARGE_TAG ? (unsigned)((bits >> ULNET_LARGE_ARG_BITS) & 0xff) : 0;
}

/* DONE's hdr_data: the cookie (40 bits), the errno (12 bits: 0 or 1..4095), ACK sent (bit 56). */
static inline uint64_t ulnet_large_done_data(uint64_t cookie, int status, bool acked)
{
	uint64_t e = status < 0 && status > -4096 ? (uint64_t)-status : status < 0 ? 5 /* EIO */ : 0;

	return (cookie & ULNET_LARGE_ARG_MASK) | e << 40 | (uint64_t)acked << 56;
}
/* -EPROTO when a reserved bit is set. */
int ulnet_large_done_parse(uint64_t hdr_data, uint64_t *cookie, int *status, bool *acked);

/* The descriptor, little-endian on the wire whatever the hosts. */
#define ULNET_LARGE_DESC_MAGIC 0x554c5256u /* "ULRV" */
#define ULNET_LARGE_DESC_VERSION 1
#define ULNET_LARGE_DESC_SIZE 48
struct ulnet_large_desc {
	uint16_t kind;          /* enum ulnet_large_op_kind */
	bool ack;               /* PUT: an ACK is wanted */
	uint32_t portal;        /* the application's portal, match bits, offset, header data */
	uint64_t match_bits;
	uint32_t offset;
	uint64_t hdr_data;
	uint32_t length;        /* the initiator's MD length: > LNET_MTU */
	uint64_t cookie;        /* the op, as announced */
};
void ulnet_large_desc_pack(const struct ulnet_large_desc *d, uint8_t out[ULNET_LARGE_DESC_SIZE]);
/* Check every field against what was announced (@kind, @cookie) and this node's limit @max:
 * 0, or -EPROTO/-EMSGSIZE with the field named in *@why. */
int ulnet_large_desc_unpack(const uint8_t *buf, size_t len, unsigned kind, uint64_t cookie, uint32_t max,
			    struct ulnet_large_desc *out, const char **why);

#endif
