/* SPDX-License-Identifier: MIT */
/* The LNet message header (lnet-wire.md §2.3) and ping info (§2.4): host structs and their codecs.
 * hdr_wire.c and ping_wire.c are pure (no allocation, no logging, no globals). */
#ifndef ULNET_HDR_H
#define ULNET_HDR_H

#include <stdint.h>
#include "ulnet/nid.h"
#include "nid_equal.h"
#include "wire.h"
#include "ulnet/event.h" /* enum ulnet_msg_type */

/* The type of socklnd's HELLO in an LNet header: a connection's first message, never a user's. */
#define ULNET_MSG_HELLO 4

#define ULNET_HDR_NID4_SIZE 72
#define ULNET_HDR_NID16_SIZE 96
#define ULNET_NID16_WIRE_SIZE 20

/* Opaque wire MD handle: echoed byte for byte, never swapped. All-ones = none (no ACK wanted). */
struct ulnet_wire_handle {
	uint64_t wh_interface_cookie;
	uint64_t wh_object_cookie;
};
#define ULNET_WIRE_COOKIE_NONE UINT64_MAX

struct ulnet_hdr {
	struct ulnet_nid dest_nid;
	struct ulnet_nid src_nid;
	uint32_t dest_pid;
	uint32_t src_pid;
	uint32_t type;           /* enum ulnet_msg_type */
	uint32_t payload_length;
	union {
		struct {
			struct ulnet_wire_handle ack_wmd;
			uint64_t match_bits;
			uint64_t hdr_data; /* opaque */
			uint32_t ptl_index;
			uint32_t offset;
		} put;
		struct {
			struct ulnet_wire_handle return_wmd;
			uint64_t match_bits;
			uint32_t ptl_index;
			uint32_t src_offset;
			uint32_t sink_length;
		} get;
		struct {
			struct ulnet_wire_handle dst_wmd;
			uint64_t match_bits;
			uint32_t mlength;
		} ack;
		struct {
			struct ulnet_wire_handle dst_wmd;
		} reply;
		struct {
			uint64_t incarnation;
			uint32_t type;
		} hello;
	} msg;
};

/* Pack into exactly 72 bytes (unused union bytes zero). -EINVAL if a NID does not fit nid4. */
int ulnet_hdr_pack_nid4(const struct ulnet_hdr *h, uint8_t out[ULNET_HDR_NID4_SIZE]);
/* Unpack and validate: len >= 72; type in ACK..REPLY (HELLO only with @allow_hello, for socklnd V1);
 * ACK/GET payload_length == 0; PUT/REPLY payload_length <= ULNET_MTU. 0, or -EPROTO with @err. */
int ulnet_hdr_unpack_nid4(const uint8_t *buf, size_t len, bool allow_hello, struct ulnet_hdr *out,
			  struct ulnet_wire_err *err);
/* The 96-byte large-NID form (socklnd V4). Same rules. */
void ulnet_hdr_pack_nid16(const struct ulnet_hdr *h, uint8_t out[ULNET_HDR_NID16_SIZE]);
int ulnet_hdr_unpack_nid16(const uint8_t *buf, size_t len, struct ulnet_hdr *out, struct ulnet_wire_err *err);

/* struct lnet_nid, 20 bytes: size u8, type u8, num BE16, addr[4] BE32. Never swapped. */
void ulnet_nid16_pack(const struct ulnet_nid *nid, uint8_t out[ULNET_NID16_WIRE_SIZE]);
/* -EPROTO if nid_size is not 0 or 12 or the unused address words are not zero; type 0xff is ANY. */
int ulnet_nid16_unpack(const uint8_t *buf, struct ulnet_nid *out, struct ulnet_wire_err *err);

/* Ping info (struct lnet_ping_info). */
#define ULNET_PING_MAGIC 0x70696E67u
#define ULNET_PING_FEAT_BASE 0x01u
#define ULNET_PING_FEAT_NI_STATUS 0x02u
#define ULNET_PING_FEAT_RTE_DISABLED 0x04u
#define ULNET_PING_FEAT_MULTI_RAIL 0x08u
#define ULNET_PING_FEAT_DISCOVERY 0x10u
#define ULNET_PING_FEAT_LARGE_ADDR 0x20u
#define ULNET_PING_FEAT_PRIMARY_LARGE 0x40u
#define ULNET_PING_FEAT_METADATA 0x80u
#define ULNET_PING_FEAT_ALL 0xFFu
#define ULNET_PING_MATCHBITS UINT64_C(0x8000000000000000)
#define ULNET_PING_BUFFER_MAX 3960u /* kernel lnet_ping() sink cap (LU-17700) */
#define ULNET_PING_INFO_MAX_NIDS 64

struct ulnet_ping_ni {
	struct ulnet_nid nid;
	uint32_t status;   /* for entry 0: the ping sequence number */
	uint32_t msg_size;
};

struct ulnet_ping_info {
	uint32_t features;
	uint32_t pid;
	uint32_t n_ni;     /* all entries: nid4 ones first, then large ones */
	struct ulnet_ping_ni ni[ULNET_PING_INFO_MAX_NIDS];
};

/* Pack in native order. nid4 entries are the ones ulnet_nid_is_nid4() accepts, in order; the rest
 * go after them as large entries (LARGE_ADDR is set then, and entry 0's msg_size = total size).
 * Returns bytes written, or -ENOSPC if @cap is too small. */
int ulnet_ping_info_pack(const struct ulnet_ping_info *pi, uint8_t *out, size_t cap);
/* Unpack, swapping if the magic reads swapped. Checks: magic, NI_STATUS feature, 1 <= nnis <= 4096,
 * entries present in @len, entry 0 is 0@lo; keeps at most ULNET_PING_INFO_MAX_NIDS entries. */
int ulnet_ping_info_unpack(const uint8_t *buf, size_t len, struct ulnet_ping_info *out,
			   struct ulnet_wire_err *err);

#endif
