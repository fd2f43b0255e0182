/* SPDX-License-Identifier: MIT */
/* o2ib message codec (src/lnd/o2ib/o2ib_wire.c). Golden vectors are hand-written from lnet-wire.md
 * §2.5 / §1.6 in little-endian sender order; each is decoded, checked field by field, re-encoded to
 * the same bytes, decoded again from the big-endian twin the codec writes, and cut at every shorter
 * length (which must fail cleanly). The error rows patch one field of a golden vector each. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lnd/o2ib/o2ib_wire.h"
#include "hex.h"

/* rows name only the fields they check */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define MAGIC_LE "91 1b e9 0b "
#define NID_2_LE "02 01 a8 c0 00 00 05 00 "  /* 192.168.1.2@o2ib = 0x00050000c0a80102 */
#define NID_1_LE "01 01 a8 c0 00 00 05 00 "  /* 192.168.1.1@o2ib */
#define STAMP_LE "08 07 06 05 04 03 02 01 "
#define STAMP2_LE "11 22 33 44 55 66 77 88 "
#define Z4 "00 00 00 00 "
#define Z8 Z4 Z4
#define NID_2 UINT64_C(0x00050000c0a80102)
#define NID_1 UINT64_C(0x00050000c0a80101)
#define STAMP UINT64_C(0x0102030405060708)
#define STAMP2 UINT64_C(0x8877665544332211)
/* header: magic, version 0x12, type, credits, nob, cksum 0, src, srcstamp, dst, dststamp */
#define HDR(type, credits, nob) MAGIC_LE "12 00 " type " " credits " " nob " 00 " Z4 NID_2_LE STAMP_LE NID_1_LE STAMP2_LE
/* LNet GET header (§2.3): dest 1.1@o2ib, src 1.2@o2ib, pids 12345, type 2, payload 0, return_wmd,
 * match_bits 0x0807060504030201, ptl 4, src_offset 0, sink_length 1 MiB, 4 bytes unused. */
#define LNET_GET "01 01 a8 c0 00 00 05 00 02 01 a8 c0 00 00 05 00 39 30 00 00 39 30 00 00 02 00 00 00 " Z4 \
	"a1 a2 a3 a4 a5 a6 a7 a8 b1 b2 b3 b4 b5 b6 b7 b8 01 02 03 04 05 06 07 08 04 00 00 00 " Z4 \
	"00 00 10 00 " Z4
/* LNet PUT header: payload 3 bytes, ack_wmd none, match 1, hdr_data 0, ptl 4, offset 0. */
#define LNET_PUT3 "01 01 a8 c0 00 00 05 00 02 01 a8 c0 00 00 05 00 39 30 00 00 39 30 00 00 01 00 00 00 03 00 00 00 " \
	"ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff 01 00 00 00 00 00 00 00 " Z8 "04 00 00 00 " Z4
#define COOKIE_A "c1 c2 c3 c4 c5 c6 c7 c8 "
#define COOKIE_B "d1 d2 d3 d4 d5 d6 d7 d8 "
/* one fragment: key 0xdeadbeef, nob 1 MiB, addr 0x00007f0012345678 */
#define RD1 "ef be ad de 01 00 00 00 00 00 10 00 78 56 34 12 00 7f 00 00 "

struct golden {
	const char *name;
	const char *hex;
	uint8_t type;
	uint8_t credits;
};

static const struct golden goldens[] = {
	{ "CONNREQ", HDR("c0", "00", "38 00 00") "08 00 01 01 00 10 00 00", O2IB_MSG_CONNREQ, 0 },
	{ "CONNACK", HDR("c1", "00", "38 00 00") "ff 00 10 00 00 10 00 00", O2IB_MSG_CONNACK, 0 },
	{ "NOOP", HDR("d0", "07", "30 00 00"), O2IB_MSG_NOOP, 7 },
	{ "IMMEDIATE", HDR("d1", "01", "7b 00 00") LNET_PUT3 "61 62 63", O2IB_MSG_IMMEDIATE, 1 },
	{ "PUT_REQ", HDR("d2", "02", "80 00 00") LNET_PUT3 COOKIE_A, O2IB_MSG_PUT_REQ, 2 },
	{ "PUT_NAK", HDR("d3", "00", "3c 00 00") COOKIE_A "00 00 00 00", O2IB_MSG_PUT_NAK, 0 },
	{ "PUT_ACK", HDR("d4", "00", "54 00 00") COOKIE_A COOKIE_B RD1, O2IB_MSG_PUT_ACK, 0 },
	{ "PUT_DONE", HDR("d5", "00", "3c 00 00") COOKIE_B "00 00 10 00", O2IB_MSG_PUT_DONE, 0 },
	{ "GET_REQ", HDR("d6", "03", "94 00 00") LNET_GET COOKIE_A RD1, O2IB_MSG_GET_REQ, 3 },
	{ "GET_DONE", HDR("d7", "00", "3c 00 00") COOKIE_A "fb ff ff ff", O2IB_MSG_GET_DONE, 0 },
};

static size_t load(const char *hex, uint8_t *buf, size_t cap) { return hex_decode(hex, buf, cap); }

static uint64_t raw(const char *hex8)
{
	uint8_t b[8];
	uint64_t v;

	assert_int_equal(hex_decode(hex8, b, 8), 8);
	memcpy(&v, b, 8);
	return v;
}

static void check_fields(const struct golden *g, const struct o2ib_msg *m)
{
	assert_int_equal(m->version, 0x12);
	assert_int_equal(m->type, g->type);
	assert_int_equal(m->credits, g->credits);
	assert_true(m->srcnid == NID_2 && m->dstnid == NID_1);
	assert_true(m->srcstamp == STAMP && m->dststamp == STAMP2);
	switch (m->type) {
	case O2IB_MSG_CONNREQ:
		assert_int_equal(m->u.connparams.queue_depth, 8);
		assert_int_equal(m->u.connparams.max_frags, 257);
		assert_int_equal(m->u.connparams.max_msg_size, 4096);
		break;
	case O2IB_MSG_CONNACK:
		assert_int_equal(m->u.connparams.queue_depth, 255);
		assert_int_equal(m->u.connparams.max_frags, 16);
		break;
	case O2IB_MSG_IMMEDIATE:
		assert_int_equal(m->u.immediate.payload_len, 3);
		assert_memory_equal(m->u.immediate.payload, "abc", 3);
		assert_int_equal(m->u.immediate.hdr.payload_length, 3);
		assert_int_equal(m->u.immediate.hdr.msg.put.ptl_index, 4);
		break;
	case O2IB_MSG_PUT_REQ:
		assert_true(m->u.putreq.cookie == raw(COOKIE_A));
		assert_int_equal(m->u.putreq.hdr.type, 1);
		break;
	case O2IB_MSG_PUT_ACK:
		assert_true(m->u.putack.src_cookie == raw(COOKIE_A) && m->u.putack.dst_cookie == raw(COOKIE_B));
		assert_int_equal(m->u.putack.rd.key, 0xdeadbeef);
		assert_int_equal(m->u.putack.rd.nfrags, 1);
		assert_int_equal(m->u.putack.rd.frags[0].nob, 1 << 20);
		assert_true(m->u.putack.rd.frags[0].addr == UINT64_C(0x00007f0012345678));
		break;
	case O2IB_MSG_GET_REQ:
		assert_true(m->u.get.cookie == raw(COOKIE_A));
		assert_int_equal(m->u.get.hdr.type, 2);
		assert_int_equal(m->u.get.hdr.msg.get.sink_length, 1 << 20);
		assert_true(m->u.get.hdr.msg.get.match_bits == UINT64_C(0x0807060504030201));
		assert_int_equal(m->u.get.rd.nfrags, 1);
		assert_int_equal(m->u.get.rd.key, 0xdeadbeef);
		break;
	case O2IB_MSG_PUT_NAK:
		assert_int_equal(m->u.completion.status, 0);
		break;
	case O2IB_MSG_PUT_DONE:
		assert_true(m->u.completion.cookie == raw(COOKIE_B));
		assert_int_equal(m->u.completion.status, 1 << 20);
		break;
	case O2IB_MSG_GET_DONE:
		assert_int_equal(m->u.completion.status, -5);
		break;
	default:
		break;
	}
}

static void test_goldens(void **state)
{
	static struct o2ib_msg m, m2;
	uint8_t buf[512], out[512], swapped[512];
	struct o2ib_wire_err err;
	bool to_le = !ulnet_host_is_le(); /* vectors are little-endian: write them the same way */

	(void)state;
	for (size_t i = 0; i < sizeof(goldens) / sizeof(goldens[0]); i++) {
		const struct golden *g = &goldens[i];
		size_t n = load(g->hex, buf, sizeof(buf));
		int rc;

		print_message("golden %s (%zu bytes)\n", g->name, n);
		assert_int_equal(o2ib_msg_unpack(buf, n, O2IB_MAX_RDMA_FRAGS, &m, &err), 0);
		assert_int_equal(m.nob, n);
		check_fields(g, &m);
		assert_int_equal(o2ib_msg_flipped(&m), !ulnet_host_is_le());
		rc = o2ib_msg_pack_order(&m, false, to_le, out, sizeof(out));
		assert_int_equal(rc, (int)n);
		assert_memory_equal(out, buf, n);
		/* the other byte order: same values, magic left as read */
		rc = o2ib_msg_pack_order(&m, false, !to_le, swapped, sizeof(swapped));
		assert_int_equal(rc, (int)n);
		assert_memory_not_equal(swapped, buf, n);
		assert_int_equal(o2ib_msg_unpack(swapped, n, O2IB_MAX_RDMA_FRAGS, &m2, &err), 0);
		check_fields(g, &m2);
		assert_int_equal(o2ib_msg_flipped(&m2), ulnet_host_is_le());
		assert_true(m2.magic == __builtin_bswap32(m.magic));
		/* with a checksum, both orders */
		for (int s = 0; s < 2; s++) {
			rc = o2ib_msg_pack_order(&m, true, s, out, sizeof(out));
			assert_int_equal(rc, (int)n);
			assert_int_equal(o2ib_msg_unpack(out, n, O2IB_MAX_RDMA_FRAGS, &m2, &err), 0);
			assert_true(m2.cksum != 0);
			out[n - 1] ^= 0x40;
			assert_int_equal(o2ib_msg_unpack(out, n, O2IB_MAX_RDMA_FRAGS, &m2, &err), -EPROTO);
			assert_string_equal(err.field, "ibm_cksum");
		}
		/* every truncation fails cleanly (a larger receive is fine) */
		for (size_t cut = 0; cut < n; cut++)
			assert_int_equal(o2ib_msg_unpack(buf, cut, O2IB_MAX_RDMA_FRAGS, &m2, &err), -EPROTO);
		assert_int_equal(o2ib_msg_unpack(buf, sizeof(buf), O2IB_MAX_RDMA_FRAGS, &m2, &err), 0);
	}
}

/* One field patched in a golden vector, or the vector cut. */
struct bad {
	const char *name;
	const char *hex;
	size_t len;        /* 0: the vector's length */
	const char *field;
	uint32_t max_frags;
};

#define PUTACK_N(nfr, nob) HDR("d4", "00", nob) COOKIE_A COOKIE_B "ef be ad de " nfr
static const struct bad bads[] = {
	{ "4 bytes", MAGIC_LE, 0, "length" },
	{ "bad magic", "91 1b e9 0c 12 00 d0 00 30 00 00 00 " Z4 NID_2_LE STAMP_LE NID_1_LE STAMP2_LE, 0, "ibm_magic" },
	{ "version 0x13", MAGIC_LE "13 00 d0 00 30 00 00 00 " Z4 NID_2_LE STAMP_LE NID_1_LE STAMP2_LE, 0, "ibm_version" },
	{ "version 0x10", MAGIC_LE "10 00 d0 00 30 00 00 00 " Z4 NID_2_LE STAMP_LE NID_1_LE STAMP2_LE, 0, "ibm_version" },
	{ "header cut at 40", HDR("d0", "00", "30 00 00"), 40, "length" },
	{ "nob beyond the message", HDR("d0", "00", "31 00 00"), 0, "ibm_nob" },
	{ "nob below the header", HDR("d0", "00", "2f 00 00"), 0, "ibm_nob" },
	{ "unknown type 0xd8", HDR("d8", "00", "30 00 00"), 0, "ibm_type" },
	{ "unknown type 0x00", HDR("00", "00", "30 00 00"), 0, "ibm_type" },
	{ "short CONNREQ (nob 52)", HDR("c0", "00", "34 00 00") "08 00 01 01", 0, "ibm_nob" },
	{ "short CONNREQ (50 bytes received)", HDR("c0", "00", "38 00 00") "08 00", 0, "ibm_nob" },
	{ "srcnid ANY", MAGIC_LE "12 00 d0 00 30 00 00 00 " Z4 "ff ff ff ff ff ff ff ff " STAMP_LE NID_1_LE STAMP2_LE,
	  0, "ibm_srcnid" },
	{ "bad checksum", MAGIC_LE "12 00 d0 00 30 00 00 00 01 00 00 00 " NID_2_LE STAMP_LE NID_1_LE STAMP2_LE, 0,
	  "ibm_cksum" },
	{ "PUT_ACK 0 fragments", PUTACK_N("00 00 00 00 ", "48 00 00"), 0, "rd_nfrags" },
	{ "PUT_ACK 10000 fragments", PUTACK_N("10 27 00 00 ", "54 00 00") "00 00 10 00 78 56 34 12 00 7f 00 00", 0,
	  "rd_nfrags" },
	{ "PUT_ACK 2 fragments, room for 1", PUTACK_N("02 00 00 00 ", "54 00 00") "00 00 10 00 78 56 34 12 00 7f 00 00",
	  0, "ibm_nob" },
	{ "PUT_ACK 2 fragments, limit 1", PUTACK_N("02 00 00 00 ", "60 00 00") "00 00 10 00 78 56 34 12 00 7f 00 00 "
	  "00 00 10 00 78 56 34 12 00 7f 00 00", 0, "rd_nfrags", 1 },
	{ "PUT_ACK without descriptor", HDR("d4", "00", "40 00 00") COOKIE_A COOKIE_B, 0, "ibm_nob" },
	{ "GET_REQ 0 fragments", HDR("d6", "00", "88 00 00") LNET_GET COOKIE_A "ef be ad de 00 00 00 00", 0,
	  "rd_nfrags" },
	{ "GET_REQ 10000 fragments", HDR("d6", "00", "94 00 00") LNET_GET COOKIE_A "ef be ad de 10 27 00 00 "
	  "00 00 10 00 78 56 34 12 00 7f 00 00", 0, "rd_nfrags" },
	{ "GET_REQ embedded header type 7",
	  HDR("d6", "00", "94 00 00") "01 01 a8 c0 00 00 05 00 02 01 a8 c0 00 00 05 00 39 30 00 00 39 30 00 00 07 00 00 00 "
	  Z4 Z8 Z8 Z8 Z8 Z8 COOKIE_A RD1, 0, "type" },
	{ "completion cut", HDR("d5", "00", "38 00 00") COOKIE_B, 0, "ibm_nob" },
};

static void test_bad(void **state)
{
	static struct o2ib_msg m;
	uint8_t buf[512];
	struct o2ib_wire_err err;
	char line[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const struct bad *b = &bads[i];
		size_t n = load(b->hex, buf, sizeof(buf));

		memset(&err, 0, sizeof(err));
		assert_int_equal(o2ib_msg_unpack(buf, b->len ? b->len : n, b->max_frags ? b->max_frags : O2IB_MAX_RDMA_FRAGS,
						 &m, &err), -EPROTO);
		o2ib_wire_err_format(&err, line, sizeof(line));
		print_message("%-36s -> %s\n", b->name, line);
		assert_non_null(err.field);
		assert_string_equal(err.field, b->field);
		assert_non_null(err.why);
		assert_null(strchr(line, '\n'));
	}
}

static void test_max_frags_param(void **state)
{
	static struct o2ib_msg m, out;
	uint8_t buf[O2IB_MSG_SIZE];
	struct o2ib_wire_err err;
	int n;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.version = 0x12;
	m.type = O2IB_MSG_PUT_ACK;
	m.srcnid = NID_2;
	m.u.putack.rd.nfrags = 257;
	for (uint32_t i = 0; i < 257; i++)
		m.u.putack.rd.frags[i] = (struct o2ib_rdma_frag){ 4096, 0x10000 + 4096 * i };
	n = o2ib_msg_pack(&m, false, buf, sizeof(buf));
	assert_int_equal(n, O2IB_PUTACK_SIZE(257));
	assert_int_equal(o2ib_msg_unpack(buf, (size_t)n, 257, &out, &err), 0);
	assert_true(out.u.putack.rd.frags[256].addr == 0x10000 + 4096 * 256);
	assert_int_equal(o2ib_msg_unpack(buf, (size_t)n, 256, &out, &err), -EPROTO);
	assert_int_equal(err.limit, 256);
	/* a caller asking for more than fits a message is clamped to the 335 that do */
	m.u.putack.rd.nfrags = O2IB_RD_FRAGS_CAP + 1;
	assert_int_equal(o2ib_msg_pack(&m, false, buf, sizeof(buf)), -EINVAL);
	m.u.putack.rd.nfrags = O2IB_RD_FRAGS_CAP;
	n = o2ib_msg_pack(&m, false, buf, sizeof(buf));
	assert_int_equal(n, 4092);
	assert_int_equal(o2ib_msg_unpack(buf, (size_t)n, 100000, &out, &err), 0);
	assert_int_equal(o2ib_msg_pack(&m, false, buf, 4091), -ENOSPC);
	/* IMMEDIATE: 3976 bytes fill a message; one more (or a wrapped length) is refused */
	memset(&m, 0, sizeof(m));
	m.version = 0x12;
	m.type = O2IB_MSG_IMMEDIATE;
	m.u.immediate.hdr.type = 1;
	m.u.immediate.payload = buf + 2048; /* any bytes */
	m.u.immediate.payload_len = O2IB_IMMEDIATE_MAX_PAYLOAD;
	assert_int_equal(o2ib_msg_size(&m), O2IB_MSG_SIZE);
	m.u.immediate.payload_len = O2IB_IMMEDIATE_MAX_PAYLOAD + 1;
	assert_int_equal(o2ib_msg_size(&m), -EINVAL);
	m.u.immediate.payload_len = UINT32_MAX - 100;
	assert_int_equal(o2ib_msg_pack(&m, false, buf, sizeof(buf)), -EINVAL);
}

static void test_cksum(void **state)
{
	static const uint8_t one_two[] = { 0x01, 0x02 }, high[] = { 0x80 }, zero[] = { 0 };

	(void)state;
	assert_int_equal(o2ib_cksum(one_two, 2, false), 4);             /* rotl(1) + 2 */
	assert_int_equal(o2ib_cksum(high, 1, false), 0x80);
	assert_int_equal(o2ib_cksum(high, 1, true), 0xffffff80);        /* pre-6.2 x86_64 signed char */
	assert_int_equal(o2ib_cksum(zero, 1, false), 1);                /* 0 is replaced by 1 */
}

static void test_signed_cksum_accepted(void **state)
{
	static struct o2ib_msg m, out;
	uint8_t buf[256];
	struct o2ib_wire_err err;
	int n;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.version = 0x12;
	m.type = O2IB_MSG_NOOP;
	m.srcnid = NID_2;
	m.srcstamp = UINT64_C(0x8080808080808080); /* bytes >= 0x80: the two sums differ */
	n = o2ib_msg_pack(&m, false, buf, sizeof(buf));
	assert_int_equal(n, 48);
	ulnet_put_ho32(buf + 12, o2ib_cksum(buf, 48, true));
	assert_true(o2ib_cksum(buf + 16, 8, true) != o2ib_cksum(buf + 16, 8, false));
	assert_int_equal(o2ib_msg_unpack(buf, 48, O2IB_MAX_RDMA_FRAGS, &out, &err), 0);
}

static void test_rej(void **state)
{
	uint8_t buf[64], out[64];
	struct o2ib_rej r;
	struct o2ib_wire_err err;
	bool to_le = !ulnet_host_is_le();
	size_t n;

	(void)state;
	/* 24-byte form: magic, version 0x12, why RDMA_FRAGS, pad, incarnation, cp {8, 256, 4096} */
	n = load(MAGIC_LE "12 00 06 00 " STAMP_LE "08 00 00 01 00 10 00 00", buf, sizeof(buf));
	assert_int_equal(n, 24);
	assert_int_equal(o2ib_rej_unpack(buf, n, &r, &err), 0);
	assert_int_equal(r.why, O2IB_REJECT_RDMA_FRAGS);
	assert_true(r.has_cp);
	assert_true(r.incarnation == STAMP);
	assert_int_equal(r.cp.queue_depth, 8);
	assert_int_equal(r.cp.max_frags, 256);
	assert_int_equal(r.cp.max_msg_size, 4096);
	assert_int_equal(o2ib_rej_pack_order(&r, to_le, out, sizeof(out)), 24);
	assert_memory_equal(out, buf, 24);
	assert_int_equal(o2ib_rej_pack_order(&r, !to_le, out, sizeof(out)), 24);
	assert_int_equal(o2ib_rej_unpack(out, 24, &r, &err), 0);
	assert_true(r.has_cp && r.cp.max_frags == 256 && r.incarnation == STAMP);
	/* IB CM hands over 148 bytes: a longer buffer is fine */
	assert_int_equal(o2ib_rej_unpack(buf, 64, &r, &err), 0);
	assert_true(r.has_cp);
	/* 7-byte V1 form */
	n = load(MAGIC_LE "11 00 03", buf, sizeof(buf));
	assert_int_equal(o2ib_rej_unpack(buf, n, &r, &err), 0);
	assert_int_equal(r.version, 0x11);
	assert_int_equal(r.why, O2IB_REJECT_FATAL);
	assert_false(r.has_cp);
	assert_true(r.incarnation == UINT64_MAX);
	assert_int_equal(o2ib_rej_pack_order(&r, to_le, out, sizeof(out)), 7);
	assert_memory_equal(out, buf, 7);
	/* a V1 reject padded to 24 bytes still carries no connparams */
	n = load(MAGIC_LE "11 00 03 00 " STAMP_LE "08 00 00 01 00 10 00 00", buf, sizeof(buf));
	assert_int_equal(o2ib_rej_unpack(buf, n, &r, &err), 0);
	assert_false(r.has_cp);
	/* the unified-protocol magic is accepted (either order) so its version is learnt */
	n = load("63 69 72 45 12 00 03", buf, sizeof(buf));
	assert_int_equal(o2ib_rej_unpack(buf, n, &r, &err), 0);
	n = load("45 72 69 63 00 12 03", buf, sizeof(buf));
	assert_int_equal(o2ib_rej_unpack(buf, n, &r, &err), 0);
	assert_int_equal(r.version, 0x12);
	/* failures */
	n = load(MAGIC_LE "12 00", buf, sizeof(buf));
	assert_int_equal(o2ib_rej_unpack(buf, n, &r, &err), -EPROTO);
	assert_string_equal(err.field, "length");
	n = load("00 00 00 00 12 00 03", buf, sizeof(buf));
	assert_int_equal(o2ib_rej_unpack(buf, n, &r, &err), -EPROTO);
	assert_string_equal(err.field, "ibr_magic");
	assert_int_equal(o2ib_rej_pack(&r, out, 6), -ENOSPC);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(o2ib_msg_type_name(O2IB_MSG_GET_DONE), "GET_DONE");
	assert_string_equal(o2ib_msg_type_name(0x42), "unknown");
	assert_string_equal(o2ib_rej_why_name(O2IB_REJECT_EARLY), "EARLY");
	assert_string_equal(o2ib_rej_why_name(0), "unknown");
	assert_string_equal(o2ib_rej_why_name(200), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goldens),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_max_frags_param),
		cmocka_unit_test(test_cksum),
		cmocka_unit_test(test_signed_cksum_accepted),
		cmocka_unit_test(test_rej),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
