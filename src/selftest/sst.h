/* SPDX-License-Identifier: MIT */
/* lnet_selftest wire formats (docs/selftest.md, lnet-wire.md §6.1): the srpc message envelope and
 * every body the framework and the brw/ping tests exchange, the packed process-id list of a test
 * request, and the brw data patterns. Pure: no allocation, no logging, no globals.
 *
 * Every message is written in the sender's native byte order; the receiver detects a peer of the
 * other order because msg_magic reads byte-swapped, and swaps what it decodes. Encoders always emit
 * native order. A decoded message is one host-order struct; the wire is never cast over. */
#ifndef ULNET_SST_H
#define ULNET_SST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wire.h"

#define ULNET_SST_MSG_MAGIC 0xeeb0f00du
#define ULNET_SST_MSG_VERSION 1u
#define ULNET_SST_HDR_SIZE 24u   /* magic, version, type, reserved0, reserved1, ses_feats */
#define ULNET_SST_BODY_SIZE 136u /* the largest body: the stat reply */
#define ULNET_SST_MSG_SIZE 160u  /* sizeof(struct srpc_msg): every request and reply is this long */
#define ULNET_SST_NAME_SIZE 32u  /* LST_NAME_SIZE */
#define ULNET_SST_ID_SIZE 12u    /* lnet_process_id_packed: nid u64, pid u32 */

/* Session features (msg_ses_feats). BULK_LEN: test requests carry lengths in bytes. */
#define ULNET_SST_FEAT_BULK_LEN 0x1u
#define ULNET_SST_FEATS_MASK 0x1u

/* Portals: test requests, framework requests, and every reply/bulk buffer. */
#define ULNET_SST_PORTAL_REQUEST 50u
#define ULNET_SST_PORTAL_FRAMEWORK 51u
#define ULNET_SST_PORTAL_RDMA 52u

/* Service ids: also the match bits of a request. Below FRAMEWORK_MAX go to portal 51. */
enum ulnet_sst_service {
	ULNET_SST_SVC_DEBUG = 0,
	ULNET_SST_SVC_MAKE_SESSION = 1,
	ULNET_SST_SVC_REMOVE_SESSION = 2,
	ULNET_SST_SVC_BATCH = 3,
	ULNET_SST_SVC_TEST = 4,
	ULNET_SST_SVC_QUERY_STAT = 5,
	ULNET_SST_SVC_JOIN = 6,
	ULNET_SST_SVC_FRAMEWORK_MAX = 10,
	ULNET_SST_SVC_BRW = 11,
	ULNET_SST_SVC_PING = 12,
	ULNET_SST_SVC_MAX = 12,
};

/* msg_type: a reply is its request + 1. */
enum ulnet_sst_msg_type {
	ULNET_SST_MKSN_REQST = 0, ULNET_SST_MKSN_REPLY = 1,
	ULNET_SST_RMSN_REQST = 2, ULNET_SST_RMSN_REPLY = 3,
	ULNET_SST_BATCH_REQST = 4, ULNET_SST_BATCH_REPLY = 5,
	ULNET_SST_STAT_REQST = 6, ULNET_SST_STAT_REPLY = 7,
	ULNET_SST_TEST_REQST = 8, ULNET_SST_TEST_REPLY = 9,
	ULNET_SST_DEBUG_REQST = 10, ULNET_SST_DEBUG_REPLY = 11,
	ULNET_SST_BRW_REQST = 12, ULNET_SST_BRW_REPLY = 13,
	ULNET_SST_PING_REQST = 14, ULNET_SST_PING_REPLY = 15,
	ULNET_SST_JOIN_REQST = 16, ULNET_SST_JOIN_REPLY = 17,
	ULNET_SST_MSG_TYPE_COUNT = 18,
};

enum ulnet_sst_batch_opc { ULNET_SST_BATCH_RUN = 1, ULNET_SST_BATCH_STOP = 2, ULNET_SST_BATCH_QUERY = 3 };
enum ulnet_sst_brw_op { ULNET_SST_BRW_READ = 1, ULNET_SST_BRW_WRITE = 2 };
/* DISCARD (4) is a newer receiver-side option; ulnet treats it like NONE when it receives it. */
enum ulnet_sst_check { ULNET_SST_CHECK_NONE = 1, ULNET_SST_CHECK_SIMPLE = 2, ULNET_SST_CHECK_FULL = 3,
		       ULNET_SST_CHECK_DISCARD = 4 };

#define ULNET_SST_BRW_MAGIC UINT64_C(0xeeb0eeb1eeb2eeb3)
#define ULNET_SST_BRW_POISON UINT64_C(0xbeefbeefbeefbeef)
#define ULNET_SST_PING_MAGIC 0xbabefaceu
#define ULNET_SST_MAX_CONCUR 1024u

/* Session id: the console's nid4 and a millisecond stamp. nid = ANY means "no session". */
struct ulnet_sst_sid {
	uint64_t nid;
	int64_t stamp;
};
#define ULNET_SST_SID_NONE ((struct ulnet_sst_sid){ UINT64_MAX, -1 })

struct ulnet_sst_fw_counters { /* sfw_counters, 20 bytes */
	uint32_t running_ms, active_batches, zombie_sessions, brw_errors, ping_errors;
};
struct ulnet_sst_rpc_counters { /* srpc_counters, 36 bytes */
	uint32_t errors, rpcs_sent, rpcs_rcvd, rpcs_dropped, rpcs_expired;
	uint64_t bulk_get, bulk_put;
};
struct ulnet_sst_lnet_counters { /* lnet_counters_common, 60 bytes */
	uint32_t msgs_alloc, msgs_max, errors, send_count, recv_count, route_count, drop_count;
	uint64_t send_length, recv_length, route_length, drop_length;
};

/* Names are 32 raw bytes on the wire (NUL-padded, not always terminated); name[32] is always 0. */
struct ulnet_sst_mksn_reqst { uint64_t rpyid; struct ulnet_sst_sid sid; uint32_t force;
			      char name[ULNET_SST_NAME_SIZE + 1]; };
struct ulnet_sst_mksn_reply { uint32_t status; struct ulnet_sst_sid sid; uint32_t timeout;
			      char name[ULNET_SST_NAME_SIZE + 1]; };
struct ulnet_sst_rmsn_reqst { uint64_t rpyid; struct ulnet_sst_sid sid; };
struct ulnet_sst_join_reqst { uint64_t rpyid; struct ulnet_sst_sid sid; char group[ULNET_SST_NAME_SIZE + 1]; };
struct ulnet_sst_join_reply { uint32_t status; struct ulnet_sst_sid sid; uint32_t timeout;
			      char session[ULNET_SST_NAME_SIZE + 1]; };
struct ulnet_sst_debug_reqst { uint64_t rpyid; struct ulnet_sst_sid sid; uint32_t flags; };
struct ulnet_sst_debug_reply { uint32_t status; struct ulnet_sst_sid sid; uint32_t timeout, nbatch;
			       char name[ULNET_SST_NAME_SIZE + 1]; };
struct ulnet_sst_batch_reqst { uint64_t rpyid; struct ulnet_sst_sid sid; uint64_t bid;
			       uint32_t opc, testidx, arg; };
struct ulnet_sst_batch_reply { uint32_t status; struct ulnet_sst_sid sid; uint32_t active, time; };
/* ext_bid: a ulnet extension read from body offset 28 (zero from kernel consoles), meaningful only
 * with type ULNET_SST_STAT_TYPE_EXT. */
struct ulnet_sst_stat_reqst { uint64_t rpyid; struct ulnet_sst_sid sid; uint32_t type; uint64_t ext_bid; };
struct ulnet_sst_stat_reply {
	uint32_t status;
	struct ulnet_sst_sid sid;
	struct ulnet_sst_fw_counters fw;
	struct ulnet_sst_rpc_counters rpc;
	struct ulnet_sst_lnet_counters lnet;
};
/* The 12-byte parameter union of a test request; which member is meaningful depends on the service
 * and, for brw, on ULNET_SST_FEAT_BULK_LEN in msg_ses_feats (v1 with it, v0 without). */
struct ulnet_sst_bulk_v0 { uint32_t opc, npg, flags; };
struct ulnet_sst_bulk_v1 { uint16_t opc, flags; uint32_t len, offset; };
struct ulnet_sst_ping_param { uint32_t size, flags; };
struct ulnet_sst_test_reqst {
	uint64_t rpyid, bulkid;
	struct ulnet_sst_sid sid;
	uint64_t bid;
	uint32_t service, loop, concur;
	uint8_t is_client, stop_onerr;
	uint32_t ndest;
	union {
		struct ulnet_sst_bulk_v0 bulk_v0;
		struct ulnet_sst_bulk_v1 bulk_v1;
		struct ulnet_sst_ping_param ping;
		uint8_t raw[12]; /* any other service: carried unchanged */
	} u;
};
struct ulnet_sst_generic_reply { uint32_t status; struct ulnet_sst_sid sid; }; /* rmsn and test replies */
struct ulnet_sst_ping_reqst { uint64_t rpyid; uint32_t magic, seq; uint64_t time_sec, time_nsec; };
struct ulnet_sst_ping_reply { uint32_t status, magic, seq; };
struct ulnet_sst_brw_reqst { uint64_t rpyid, bulkid; uint32_t rw, len, flags; };
struct ulnet_sst_brw_reply { uint32_t status; };

/* A decoded (or to-be-encoded) srpc message, host order. */
struct ulnet_sst_msg {
	uint32_t version;
	uint32_t type;       /* enum ulnet_sst_msg_type */
	uint32_t reserved0, reserved1;
	uint32_t ses_feats;
	bool swab;           /* decode only: the sender's byte order is the opposite of ours */
	union {
		struct ulnet_sst_mksn_reqst mksn_reqst;
		struct ulnet_sst_mksn_reply mksn_reply;
		struct ulnet_sst_rmsn_reqst rmsn_reqst;
		struct ulnet_sst_generic_reply rmsn_reply;
		struct ulnet_sst_join_reqst join_reqst;
		struct ulnet_sst_join_reply join_reply;
		struct ulnet_sst_debug_reqst dbg_reqst;
		struct ulnet_sst_debug_reply dbg_reply;
		struct ulnet_sst_batch_reqst bat_reqst;
		struct ulnet_sst_batch_reply bat_reply;
		struct ulnet_sst_stat_reqst stat_reqst;
		struct ulnet_sst_stat_reply stat_reply;
		struct ulnet_sst_test_reqst tes_reqst;
		struct ulnet_sst_generic_reply tes_reply;
		struct ulnet_sst_ping_reqst ping_reqst;
		struct ulnet_sst_ping_reply ping_reply;
		struct ulnet_sst_brw_reqst brw_reqst;
		struct ulnet_sst_brw_reply brw_reply;
	} body;
};

/* ---- ulnet-to-ulnet extensions (docs/selftest.md §6). Kernel peers never see them or ignore them:
 * they ride in msg_reserved0/1, which lnet_selftest neither sets nor reads, or are sent only after a
 * peer has shown it is ulnet. ---- */
#define ULNET_SST_EXT_MAGIC 0x554c4e54u   /* "ULNT" in msg_reserved0 */
/* brw reply: reserved0 = EXT_MAGIC, reserved1 = transfer offset of the first bad byte.
 * test request: reserved0 = EXT_MAGIC, reserved1 = per-RPC timeout in ms for a client test.
 * stat request: str_type = ULNET_SST_STAT_TYPE_EXT, ext_bid = batch (0: every batch). A kernel server
 * ignores str_type and answers plain counters; a ulnet server answers a STAT_REPLY whose reserved0 is
 * EXT_MAGIC, reserved1 ULNET_SST_STAT_EXT_V1, and whose body is struct ulnet_sst_stat_ext. */
/* make session and debug replies: reserved0 = EXT_MAGIC, reserved1 = the node's ulnet features. This
 * is how a console knows a node is ulnet: lnet_selftest rejects unknown msg_ses_feats bits (EPROTO, on
 * both sides) but never reads the reserved words. */
#define ULNET_SST_NODE_ANY_OFFSET 0x1u   /* brw clients take any offset and size */
#define ULNET_SST_NODE_FEATS ULNET_SST_NODE_ANY_OFFSET
/* Bits 8..23: the node's large_max in MiB (rounded down) when it moves brw above LNET_MTU, as a
 * client and as a server (docs/large.md); 0: it does not. */
#define ULNET_SST_NODE_LARGE_SHIFT 8
static inline uint32_t ulnet__sst_node_large_max(uint32_t node_feats)
{
	return ((node_feats >> ULNET_SST_NODE_LARGE_SHIFT) & 0xffffu) << 20;
}
/* test reply refused by a ulnet limit: status ENOSPC/EINVAL/ENOMEM, reserved0 = EXT_MAGIC, reserved1 =
 * which limit (the values are the node's; a ulnet console knows them from here). */
#define ULNET_SST_LIMIT_TESTS 1u         /* tests per session */
#define ULNET_SST_LIMIT_TIMEOUT 2u       /* client RPC timeout */
#define ULNET_SST_LIMIT_CLIENT_MEM 3u    /* client RPC memory, node-wide */
#define ULNET_SST_MAX_TESTS 1024u        /* per session (lst console: 64 batches x 16 tests) */
#define ULNET_SST_MAX_RPC_TIMEOUT_MS 3600000u
#define ULNET_SST_MAX_CLIENT_MEM (256u << 20) /* concurrency x destinations x (size + a page), summed */
#define ULNET_SST_STAT_TYPE_EXT 0x554c4e54u
#define ULNET_SST_STAT_EXT_V1 1u
#define ULNET_SST_EXT_ERR_SIZE 44u
struct ulnet_sst_stat_ext {     /* body offsets */
	uint32_t status;            /* 0 */
	struct ulnet_sst_sid sid;   /* 4 */
	uint32_t ntests;            /* 20: client tests counted */
	uint64_t rpcs_ok, rpcs_failed, bytes; /* 24, 32, 40 */
	uint32_t timeout, mismatch, refused, peer_gone; /* 48..60 */
	uint64_t mismatch_offset;   /* 64: UINT64_MAX = unknown */
	uint32_t lat_p50_us, lat_p99_us, lat_max_us; /* 72, 76, 80 */
	uint32_t elapsed_ms;        /* 84: since the batch started running */
	uint32_t active;            /* 88: client tests still running */
	char first_error[ULNET_SST_EXT_ERR_SIZE + 1]; /* 92..136 */
};
void ulnet__sst_stat_ext_pack(const struct ulnet_sst_stat_ext *x, uint8_t body[ULNET_SST_BODY_SIZE]);
void ulnet__sst_stat_ext_unpack(const uint8_t body[ULNET_SST_BODY_SIZE], bool swab, struct ulnet_sst_stat_ext *x);

/* brw client offsets a kernel lnet_selftest node survives (sst_offset_rule.c): offset 0, or a multiple
 * of 8 below 4096 that adds no 4096-byte page to @size. */
bool ulnet__sst_kernel_offset_safe(uint32_t size, uint32_t offset);
/* 0 when safe; else -EINVAL and one line in @why: the rule, the values, and what would be accepted
 * (e.g. "size 1048568 at offset 8"). */
int ulnet__sst_kernel_offset_check(uint32_t size, uint32_t offset, char *why, size_t cap);

/* brw above LNET_MTU (sst_large_rule.c): 0 when @size fits LNET_MTU or the node (@role "client" or
 * "server", @nid, announcing @node_feats) takes it; else -EINVAL and one line in @why naming lst's
 * 1 MiB rule, the size, the node and the knob. */
int ulnet__sst_large_check(uint32_t size, const char *role, const char *nid, uint32_t node_feats,
			   char *why, size_t cap);

/* The fixed header alone: enough to answer a request whose version or type is bad. */
struct ulnet_sst_hdr {
	uint32_t magic;      /* as sent (swapped when swab) */
	uint32_t version, type, reserved0, reserved1, ses_feats; /* host order */
	bool swab;
};

/* Bytes a body of @type occupies after the 24-byte header; 0 for an unknown type. */
size_t ulnet__sst_body_size(uint32_t type);
/* "MKSN_REQST", ...; "?" for an unknown type. */
const char *ulnet__sst_msg_type_name(uint32_t type);
/* The request type a service takes (-1 unknown service); its reply is that + 1. */
int ulnet__sst_service_request(uint32_t service);
/* Portal a request for @service goes to. */
static inline uint32_t ulnet__sst_service_portal(uint32_t service)
{
	return service < ULNET_SST_SVC_FRAMEWORK_MAX ? ULNET_SST_PORTAL_FRAMEWORK : ULNET_SST_PORTAL_REQUEST;
}

/* Decode the header: 0, or -EPROTO (err filled: "msg_magic" or a truncation). */
int ulnet__sst_hdr_unpack(const uint8_t *buf, size_t len, struct ulnet_sst_hdr *out, struct ulnet_wire_err *err);
/* Decode a whole message. Checks, in order: header present, magic (native or swapped), version 1,
 * type known, body present; bytes past the body are ignored. 0, or -EPROTO with err naming the
 * field ("msg_magic", "msg_version", "msg_type", or the first body field cut short). Never writes
 * to @buf. */
int ulnet__sst_msg_unpack(const uint8_t *buf, size_t len, struct ulnet_sst_msg *out, struct ulnet_wire_err *err);
/* Encode @m (native order, magic and version 1 written, m->version ignored) into exactly
 * ULNET_SST_MSG_SIZE bytes, zero after the body. 0, or -EINVAL for an unknown type. */
int ulnet__sst_msg_pack(const struct ulnet_sst_msg *m, uint8_t out[ULNET_SST_MSG_SIZE]);

/* The destination list of a client test request: @n packed ids, sender order. */
struct ulnet_sst_id { uint64_t nid; uint32_t pid; };
void ulnet__sst_id_pack(const struct ulnet_sst_id *id, uint8_t out[ULNET_SST_ID_SIZE]);
void ulnet__sst_id_unpack(const uint8_t in[ULNET_SST_ID_SIZE], bool swab, struct ulnet_sst_id *out);

/* brw data patterns. The sender fills every byte of the transfer: byte p (counted from the start of
 * the transfer) is byte p % 8 of the 64-bit @magic stored in the sender's native order. This equals
 * lnet_selftest's word-per-fragment filling whenever fragments start on 8-byte transfer positions,
 * and extends it to any offset and length. @xfer_pos: transfer position of buf[0]. */
void ulnet__sst_brw_fill(uint8_t *buf, size_t len, uint64_t xfer_pos, uint64_t magic);
/* Check a received fragment against @magic as the peer stored it (@swab: the peer's order is the
 * opposite of ours). FULL checks every byte; SIMPLE the first and the last 8 bytes of this fragment
 * (fewer when the fragment is shorter); NONE and DISCARD check nothing. 0 when good; else 1 and
 * *bad_pos = transfer position of the first byte that differs. */
int ulnet__sst_brw_check(const uint8_t *buf, size_t len, uint64_t xfer_pos, uint64_t magic, bool swab,
			 enum ulnet_sst_check check, uint64_t *bad_pos);

#endif
