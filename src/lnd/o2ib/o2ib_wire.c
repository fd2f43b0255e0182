/* SPDX-License-Identifier: MIT */
/* o2iblnd message codec (lnet-wire.md §2.5, §1.6). Pure: no allocation, no logging, no globals.
 * Offsets are the spec tables'; every field is read or written byte by byte. */
#include "o2ib_wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Header field offsets (§2.5.1). */
#define OFF_MAGIC 0
#define OFF_VERSION 4
#define OFF_TYPE 6
#define OFF_CREDITS 7
#define OFF_NOB 8
#define OFF_CKSUM 12
#define OFF_SRCNID 16
#define OFF_SRCSTAMP 24
#define OFF_DSTNID 32
#define OFF_DSTSTAMP 40
#define OFF_BODY 48
/* Body offsets, as message offsets (§2.5.2). */
#define OFF_CP_DEPTH 48
#define OFF_CP_FRAGS 50
#define OFF_CP_MSGSIZE 52
#define OFF_LNET_HDR 48
#define OFF_HDR_COOKIE 120   /* PUT_REQ, GET_REQ cookie after the LNet header */
#define OFF_IMM_PAYLOAD 120
#define OFF_GET_RD 128
#define OFF_PUTACK_SRC 48
#define OFF_PUTACK_DST 56
#define OFF_PUTACK_RD 64
#define OFF_COMPL_COOKIE 48
#define OFF_COMPL_STATUS 56
/* Descriptor offsets relative to the descriptor. */
#define RD_KEY 0
#define RD_NFRAGS 4
#define RD_FRAGS 8
#define RF_NOB 0
#define RF_ADDR 4
/* kib_rej offsets (§1.6). */
#define REJ_MAGIC 0
#define REJ_VERSION 4
#define REJ_WHY 6
#define REJ_PAD 7
#define REJ_INC 8
#define REJ_CP 16

_Static_assert(O2IB_IMMEDIATE_MAX_PAYLOAD == 3976, "IMMEDIATE payload limit");
_Static_assert(O2IB_PUTACK_SIZE(O2IB_RD_FRAGS_CAP) <= O2IB_MSG_SIZE, "cap fits one message");
_Static_assert(O2IB_PUTACK_SIZE(O2IB_RD_FRAGS_CAP + 1) > O2IB_MSG_SIZE, "cap is the most that fits");

const char *o2ib_msg_type_name(unsigned type)
{
	switch (type) {
	case O2IB_MSG_CONNREQ: return "CONNREQ";
	case O2IB_MSG_CONNACK: return "CONNACK";
	case O2IB_MSG_NOOP: return "NOOP";
	case O2IB_MSG_IMMEDIATE: return "IMMEDIATE";
	case O2IB_MSG_PUT_REQ: return "PUT_REQ";
	case O2IB_MSG_PUT_NAK: return "PUT_NAK";
	case O2IB_MSG_PUT_ACK: return "PUT_ACK";
	case O2IB_MSG_PUT_DONE: return "PUT_DONE";
	case O2IB_MSG_GET_REQ: return "GET_REQ";
	case O2IB_MSG_GET_DONE: return "GET_DONE";
	default: return "unknown";
	}
}

const char *o2ib_rej_why_name(unsigned why)
{
	static const char *const names[] = {
		[O2IB_REJECT_CONN_RACE] = "CONN_RACE", [O2IB_REJECT_NO_RESOURCES] = "NO_RESOURCES",
		[O2IB_REJECT_FATAL] = "FATAL", [O2IB_REJECT_CONN_UNCOMPAT] = "CONN_UNCOMPAT",
		[O2IB_REJECT_CONN_STALE] = "CONN_STALE", [O2IB_REJECT_RDMA_FRAGS] = "RDMA_FRAGS",
		[O2IB_REJECT_MSG_QUEUE_SIZE] = "MSG_QUEUE_SIZE", [O2IB_REJECT_INVALID_SRV_ID] = "INVALID_SRV_ID",
		[O2IB_REJECT_EARLY] = "EARLY",
	};

	return why < sizeof(names) / sizeof(names[0]) && names[why] ? names[why] : "unknown";
}

int o2ib_wire_err_format(const struct o2ib_wire_err *err, char *buf, size_t cap)
{
	/* magics and checksums read better in hex */
	bool hex = err->field && (strstr(err->field, "magic") || strstr(err->field, "cksum"));

	return snprintf(buf, cap, hex ? "%s=0x%" PRIx64 " at offset %zu: %s (limit 0x%" PRIx64 ")"
				      : "%s=%" PRIu64 " at offset %zu: %s (limit %" PRIu64 ")",
			err->field ? err->field : "?", err->got, err->offset, err->why ? err->why : "invalid",
			err->limit);
}

static int fail(struct o2ib_wire_err *err, const char *field, size_t off, uint64_t got, uint64_t limit,
		const char *why)
{
	if (err) {
		err->field = field;
		err->offset = off;
		err->got = got;
		err->limit = limit;
		err->why = why;
	}
	return -EPROTO;
}

/* ---- checksum (§2.5.3) ---- */

static uint32_t cksum_step(uint32_t sum, uint8_t byte, bool signed_char)
{
	int32_t add = signed_char ? (int32_t)(int8_t)byte : (int32_t)byte;

	return ((sum << 1) | (sum >> 31)) + (uint32_t)add;
}

/* The sum over @len bytes with the 4 ibm_cksum bytes taken as zero (the buffer stays untouched). */
static uint32_t cksum_skip_field(const uint8_t *buf, size_t len, bool signed_char)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum = cksum_step(sum, (i >= OFF_CKSUM && i < OFF_CKSUM + 4) ? 0 : buf[i], signed_char);
	return sum == 0 ? 1 : sum;
}

uint32_t o2ib_cksum(const uint8_t *buf, size_t len, bool signed_char)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum = cksum_step(sum, buf[i], signed_char);
	return sum == 0 ? 1 : sum;
}

/* ---- pack ---- */

static void put16(uint8_t *p, uint16_t v, bool swab)
{
	ulnet_put_ho16(p, swab ? __builtin_bswap16(v) : v);
}
static void put32(uint8_t *p, uint32_t v, bool swab)
{
	ulnet_put_ho32(p, swab ? __builtin_bswap32(v) : v);
}
static void put64(uint8_t *p, uint64_t v, bool swab)
{
	ulnet_put_ho64(p, swab ? __builtin_bswap64(v) : v);
}

static int rd_bytes(const struct o2ib_rdma_desc *rd)
{
	if (rd->nfrags > O2IB_RD_FRAGS_CAP)
		return -EINVAL;
	return (int)(RD_FRAGS + O2IB_RD_FRAG_SIZE * rd->nfrags);
}

int o2ib_msg_size(const struct o2ib_msg *m)
{
	switch (m->type) {
	case O2IB_MSG_CONNREQ:
	case O2IB_MSG_CONNACK:
		return O2IB_CONN_MSG_SIZE;
	case O2IB_MSG_NOOP:
		return O2IB_HDR_SIZE;
	case O2IB_MSG_IMMEDIATE: /* we never send more than one receive buffer holds */
		if (m->u.immediate.payload_len > O2IB_IMMEDIATE_MAX_PAYLOAD)
			return -EINVAL;
		return (int)(O2IB_IMMEDIATE_HDR_SIZE + m->u.immediate.payload_len);
	case O2IB_MSG_PUT_REQ:
		return O2IB_PUTREQ_SIZE;
	case O2IB_MSG_PUT_NAK:
	case O2IB_MSG_PUT_DONE:
	case O2IB_MSG_GET_DONE:
		return O2IB_COMPLETION_SIZE;
	case O2IB_MSG_PUT_ACK:
		return rd_bytes(&m->u.putack.rd) < 0 ? -EINVAL : (int)O2IB_PUTACK_SIZE(m->u.putack.rd.nfrags);
	case O2IB_MSG_GET_REQ:
		return rd_bytes(&m->u.get.rd) < 0 ? -EINVAL : (int)O2IB_GETREQ_SIZE(m->u.get.rd.nfrags);
	default:
		return -EINVAL;
	}
}

static void pack_rd(const struct o2ib_rdma_desc *rd, bool swab, uint8_t *p)
{
	put32(p + RD_KEY, rd->key, swab);
	put32(p + RD_NFRAGS, rd->nfrags, swab);
	for (uint32_t i = 0; i < rd->nfrags; i++) {
		uint8_t *f = p + RD_FRAGS + O2IB_RD_FRAG_SIZE * i;

		put32(f + RF_NOB, rd->frags[i].nob, swab);
		put64(f + RF_ADDR, rd->frags[i].addr, swab);
	}
}

int o2ib_msg_pack_order(const struct o2ib_msg *m, bool cksum, bool swab, uint8_t *out, size_t cap)
{
	int size = o2ib_msg_size(m);

	if (size < 0)
		return size;
	if ((size_t)size > cap)
		return -ENOSPC;
	memset(out, 0, (size_t)size);
	put32(out + OFF_MAGIC, O2IB_MSG_MAGIC, swab);
	put16(out + OFF_VERSION, m->version, swab);
	out[OFF_TYPE] = m->type;
	out[OFF_CREDITS] = m->credits;
	put32(out + OFF_NOB, (uint32_t)size, swab);
	put64(out + OFF_SRCNID, m->srcnid, swab);
	put64(out + OFF_SRCSTAMP, m->srcstamp, swab);
	put64(out + OFF_DSTNID, m->dstnid, swab);
	put64(out + OFF_DSTSTAMP, m->dststamp, swab);

	switch (m->type) {
	case O2IB_MSG_CONNREQ:
	case O2IB_MSG_CONNACK:
		put16(out + OFF_CP_DEPTH, m->u.connparams.queue_depth, swab);
		put16(out + OFF_CP_FRAGS, m->u.connparams.max_frags, swab);
		put32(out + OFF_CP_MSGSIZE, m->u.connparams.max_msg_size, swab);
		break;
	case O2IB_MSG_IMMEDIATE:
		if (ulnet_hdr_pack_nid4(&m->u.immediate.hdr, out + OFF_LNET_HDR))
			return -EINVAL;
		if (m->u.immediate.payload_len)
			memcpy(out + OFF_IMM_PAYLOAD, m->u.immediate.payload, m->u.immediate.payload_len);
		break;
	case O2IB_MSG_PUT_REQ:
		if (ulnet_hdr_pack_nid4(&m->u.putreq.hdr, out + OFF_LNET_HDR))
			return -EINVAL;
		ulnet_put_raw64(out + OFF_HDR_COOKIE, m->u.putreq.cookie);
		break;
	case O2IB_MSG_GET_REQ:
		if (ulnet_hdr_pack_nid4(&m->u.get.hdr, out + OFF_LNET_HDR))
			return -EINVAL;
		ulnet_put_raw64(out + OFF_HDR_COOKIE, m->u.get.cookie);
		pack_rd(&m->u.get.rd, swab, out + OFF_GET_RD);
		break;
	case O2IB_MSG_PUT_ACK:
		ulnet_put_raw64(out + OFF_PUTACK_SRC, m->u.putack.src_cookie);
		ulnet_put_raw64(out + OFF_PUTACK_DST, m->u.putack.dst_cookie);
		pack_rd(&m->u.putack.rd, swab, out + OFF_PUTACK_RD);
		break;
	case O2IB_MSG_PUT_NAK:
	case O2IB_MSG_PUT_DONE:
	case O2IB_MSG_GET_DONE:
		ulnet_put_raw64(out + OFF_COMPL_COOKIE, m->u.completion.cookie);
		put32(out + OFF_COMPL_STATUS, (uint32_t)m->u.completion.status, swab);
		break;
	default: /* NOOP: no body */
		break;
	}
	if (cksum)
		put32(out + OFF_CKSUM, o2ib_cksum(out, (size_t)size, false), swab);
	return size;
}

/* ---- unpack (§2.5.4) ---- */

static uint32_t min_size(unsigned type)
{
	switch (type) {
	case O2IB_MSG_CONNREQ:
	case O2IB_MSG_CONNACK: return O2IB_CONN_MSG_SIZE;
	case O2IB_MSG_NOOP: return O2IB_HDR_SIZE;
	case O2IB_MSG_IMMEDIATE: return O2IB_IMMEDIATE_HDR_SIZE;
	case O2IB_MSG_PUT_REQ: return O2IB_PUTREQ_SIZE;
	case O2IB_MSG_PUT_NAK:
	case O2IB_MSG_PUT_DONE:
	case O2IB_MSG_GET_DONE: return O2IB_COMPLETION_SIZE;
	case O2IB_MSG_PUT_ACK: return O2IB_PUTACK_SIZE(0);
	case O2IB_MSG_GET_REQ: return O2IB_GETREQ_SIZE(0);
	default: return 0;
	}
}

static int unpack_rd(const uint8_t *buf, uint32_t nob, size_t off, bool flip, uint32_t max_frags,
		     struct o2ib_rdma_desc *rd, struct o2ib_wire_err *err)
{
	const uint8_t *p = buf + off;

	rd->key = ulnet_get_ho32(p + RD_KEY, flip);
	rd->nfrags = ulnet_get_ho32(p + RD_NFRAGS, flip);
	if (rd->nfrags == 0 || rd->nfrags > max_frags)
		return fail(err, "rd_nfrags", off + RD_NFRAGS, rd->nfrags, max_frags,
			    "fragment count must be 1..limit");
	if ((uint64_t)off + RD_FRAGS + (uint64_t)O2IB_RD_FRAG_SIZE * rd->nfrags > nob)
		return fail(err, "ibm_nob", OFF_NOB, nob, off + RD_FRAGS + O2IB_RD_FRAG_SIZE * rd->nfrags,
			    "shorter than the descriptor it carries");
	for (uint32_t i = 0; i < rd->nfrags; i++) {
		const uint8_t *f = p + RD_FRAGS + O2IB_RD_FRAG_SIZE * i;

		rd->frags[i].nob = ulnet_get_ho32(f + RF_NOB, flip);
		rd->frags[i].addr = ulnet_get_ho64(f + RF_ADDR, flip);
	}
	return 0;
}

static int unpack_lnet_hdr(const uint8_t *buf, struct ulnet_hdr *hdr, struct o2ib_wire_err *err)
{
	struct ulnet_wire_err werr = { 0 };

	if (ulnet_hdr_unpack_nid4(buf + OFF_LNET_HDR, ULNET_HDR_NID4_SIZE, false, hdr, &werr))
		return fail(err, werr.field, OFF_LNET_HDR + werr.offset, werr.got, werr.limit,
			    "embedded LNet header invalid");
	return 0;
}

int o2ib_msg_unpack(const uint8_t *buf, size_t len, uint32_t max_frags, struct o2ib_msg *m,
		    struct o2ib_wire_err *err)
{
	uint32_t magic, msg_cksum, need;
	bool flip;

	if (max_frags > O2IB_RD_FRAGS_CAP)
		max_frags = O2IB_RD_FRAGS_CAP;
	memset(m, 0, offsetof(struct o2ib_msg, u));
	if (len < 6)
		return fail(err, "length", 0, len, 6, "too short for magic and version");
	memcpy(&magic, buf + OFF_MAGIC, 4);
	if (magic == O2IB_MSG_MAGIC)
		flip = false;
	else if (magic == __builtin_bswap32(O2IB_MSG_MAGIC))
		flip = true;
	else
		return fail(err, "ibm_magic", OFF_MAGIC, magic, O2IB_MSG_MAGIC, "not the o2ib magic in either byte order");
	m->magic = magic;
	m->version = ulnet_get_ho16(buf + OFF_VERSION, flip);
	if (m->version != O2IB_MSG_VERSION_1 && m->version != O2IB_MSG_VERSION_2)
		return fail(err, "ibm_version", OFF_VERSION, m->version, O2IB_MSG_VERSION,
			    "version must be 0x11 or 0x12");
	if (len < O2IB_HDR_SIZE)
		return fail(err, "length", 0, len, O2IB_HDR_SIZE, "shorter than the kib_msg header");
	m->nob = ulnet_get_ho32(buf + OFF_NOB, flip);
	if (m->nob > len)
		return fail(err, "ibm_nob", OFF_NOB, m->nob, len, "larger than the bytes received");
	if (m->nob < O2IB_HDR_SIZE)
		return fail(err, "ibm_nob", OFF_NOB, m->nob, O2IB_HDR_SIZE, "smaller than the kib_msg header");
	/* verified on the raw bytes, before anything is flipped */
	msg_cksum = ulnet_get_ho32(buf + OFF_CKSUM, flip);
	m->cksum = msg_cksum;
	if (msg_cksum != 0 && msg_cksum != cksum_skip_field(buf, m->nob, false) &&
	    msg_cksum != cksum_skip_field(buf, m->nob, true))
		return fail(err, "ibm_cksum", OFF_CKSUM, msg_cksum, cksum_skip_field(buf, m->nob, false),
			    "checksum mismatch");
	m->type = buf[OFF_TYPE];
	m->credits = buf[OFF_CREDITS];
	m->srcnid = ulnet_get_ho64(buf + OFF_SRCNID, flip);
	m->srcstamp = ulnet_get_ho64(buf + OFF_SRCSTAMP, flip);
	m->dstnid = ulnet_get_ho64(buf + OFF_DSTNID, flip);
	m->dststamp = ulnet_get_ho64(buf + OFF_DSTSTAMP, flip);
	if (m->srcnid == UINT64_MAX)
		return fail(err, "ibm_srcnid", OFF_SRCNID, m->srcnid, 0, "source NID is LNET_NID_ANY");
	need = min_size(m->type);
	if (need == 0)
		return fail(err, "ibm_type", OFF_TYPE, m->type, 0, "unknown message type");
	if (m->nob < need)
		return fail(err, "ibm_nob", OFF_NOB, m->nob, need, "shorter than the message type's minimum");

	switch (m->type) {
	case O2IB_MSG_CONNREQ:
	case O2IB_MSG_CONNACK:
		m->u.connparams.queue_depth = ulnet_get_ho16(buf + OFF_CP_DEPTH, flip);
		m->u.connparams.max_frags = ulnet_get_ho16(buf + OFF_CP_FRAGS, flip);
		m->u.connparams.max_msg_size = ulnet_get_ho32(buf + OFF_CP_MSGSIZE, flip);
		return 0;
	case O2IB_MSG_NOOP:
		return 0;
	case O2IB_MSG_IMMEDIATE:
		m->u.immediate.payload = buf + OFF_IMM_PAYLOAD;
		m->u.immediate.payload_len = m->nob - O2IB_IMMEDIATE_HDR_SIZE;
		return unpack_lnet_hdr(buf, &m->u.immediate.hdr, err);
	case O2IB_MSG_PUT_REQ:
		m->u.putreq.cookie = ulnet_get_raw64(buf + OFF_HDR_COOKIE);
		return unpack_lnet_hdr(buf, &m->u.putreq.hdr, err);
	case O2IB_MSG_GET_REQ:
		m->u.get.cookie = ulnet_get_raw64(buf + OFF_HDR_COOKIE);
		if (unpack_lnet_hdr(buf, &m->u.get.hdr, err))
			return -EPROTO;
		return unpack_rd(buf, m->nob, OFF_GET_RD, flip, max_frags, &m->u.get.rd, err);
	case O2IB_MSG_PUT_ACK:
		m->u.putack.src_cookie = ulnet_get_raw64(buf + OFF_PUTACK_SRC);
		m->u.putack.dst_cookie = ulnet_get_raw64(buf + OFF_PUTACK_DST);
		return unpack_rd(buf, m->nob, OFF_PUTACK_RD, flip, max_frags, &m->u.putack.rd, err);
	default: /* completions */
		m->u.completion.cookie = ulnet_get_raw64(buf + OFF_COMPL_COOKIE);
		m->u.completion.status = (int32_t)ulnet_get_ho32(buf + OFF_COMPL_STATUS, flip);
		return 0;
	}
}

/* ---- kib_rej (§1.6) ---- */

int o2ib_rej_pack_order(const struct o2ib_rej *r, bool swab, uint8_t *out, size_t cap)
{
	size_t size = r->version == O2IB_MSG_VERSION_1 ? O2IB_REJ_V1_SIZE : O2IB_REJ_SIZE;

	if (cap < size)
		return -ENOSPC;
	memset(out, 0, size);
	put32(out + REJ_MAGIC, O2IB_MSG_MAGIC, swab);
	put16(out + REJ_VERSION, r->version, swab);
	out[REJ_WHY] = r->why;
	if (size == O2IB_REJ_SIZE) {
		out[REJ_PAD] = 0;
		put64(out + REJ_INC, r->incarnation, swab);
		put16(out + REJ_CP, r->cp.queue_depth, swab);
		put16(out + REJ_CP + 2, r->cp.max_frags, swab);
		put32(out + REJ_CP + 4, r->cp.max_msg_size, swab);
	}
	return (int)size;
}

int o2ib_rej_unpack(const uint8_t *buf, size_t len, struct o2ib_rej *r, struct o2ib_wire_err *err)
{
	uint32_t magic;
	bool flip;

	memset(r, 0, sizeof(*r));
	if (len < O2IB_REJ_V1_SIZE)
		return fail(err, "length", 0, len, O2IB_REJ_V1_SIZE, "reject private data too short");
	memcpy(&magic, buf + REJ_MAGIC, 4);
	if (magic == O2IB_MSG_MAGIC || magic == O2IB_PROTO_MAGIC)
		flip = false;
	else if (magic == __builtin_bswap32(O2IB_MSG_MAGIC) || magic == __builtin_bswap32(O2IB_PROTO_MAGIC))
		flip = true;
	else
		return fail(err, "ibr_magic", REJ_MAGIC, magic, O2IB_MSG_MAGIC, "not an o2ib reject");
	r->magic = magic;
	r->version = ulnet_get_ho16(buf + REJ_VERSION, flip);
	r->why = buf[REJ_WHY];
	r->incarnation = UINT64_MAX;
	/* IB CM always delivers 148 bytes, so length alone proves nothing: the version must say V2 */
	if (len >= O2IB_REJ_SIZE && r->version > O2IB_MSG_VERSION_1) {
		r->has_cp = true;
		r->incarnation = ulnet_get_ho64(buf + REJ_INC, flip);
		r->cp.queue_depth = ulnet_get_ho16(buf + REJ_CP, flip);
		r->cp.max_frags = ulnet_get_ho16(buf + REJ_CP + 2, flip);
		r->cp.max_msg_size = ulnet_get_ho32(buf + REJ_CP + 4, flip);
	}
	return 0;
}
