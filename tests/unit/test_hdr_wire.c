/* SPDX-License-Identifier: MIT */
/* Table tests for the LNet header codec (lnet-wire.md §2.3) and struct lnet_nid. Every vector is written
 * by hand from the spec tables, field by field, never produced by our encoder. One row = one named test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hdr.h"
#include "ulnet/event.h"

#define HDR_MAX 128

#include "hex.h"
#include "nid_assert.h"

/* ---- vector pieces (each comment gives the value and the spec field) ---- */

#define N4_O2IB "0101a8c000000500" /* 192.168.1.1@o2ib = 0x00050000c0a80101, LE */
#define N4_TCP1 "0100000a01000200" /* 10.0.0.1@tcp1 = 0x000200010a000001, LE */
#define N4_TCP "0200000a00000200"  /* 10.0.0.2@tcp = 0x000200000a000002, LE */
#define N4_ANY "ffffffffffffffff"  /* LNET_NID_ANY */
#define PID_LUSTRE "39300000"      /* 12345 */
#define PID_USER "01040080"        /* 0x80000401: USERFLAG | port 1025 */

#define MSG_PUT                                                                                         \
	"1112131415161718" "2122232425262728" /* ack_wmd: interface cookie, object cookie (opaque) */   \
	"efcdab8967452301"                    /* match_bits 0x0123456789abcdef */                       \
	"3132333435363738"                    /* hdr_data (opaque) */                                   \
	"2a000000"                            /* ptl_index 42 */                                        \
	"45230100"                            /* offset 0x12345 */
#define MSG_GET                                                                                         \
	"4142434445464748" "5152535455565758" /* return_wmd */                                          \
	"0000000000000080"                    /* match_bits 0x8000000000000000 */                       \
	"3f000000"                            /* ptl_index 63 */                                        \
	"00100000"                            /* src_offset 4096 */                                     \
	"780f0000"                            /* sink_length 3960 */                                    \
	"00000000"                            /* unused */
#define MSG_ACK                                                                                         \
	"6162636465666768" "7172737475767778" /* dst_wmd */                                             \
	"1032547698badcfe"                    /* match_bits 0xfedcba9876543210 */                       \
	"00f00f00"                            /* mlength 0xff000 */                                     \
	"000000000000000000000000"            /* unused */
#define MSG_REPLY                                                                                       \
	"8182838485868788" "9192939495969798"                 /* dst_wmd */                          \
	"000000000000000000000000000000000000000000000000"    /* unused */
#define MSG_HELLO                                                                                       \
	"08f7e6d5c4b3a217"                                         /* incarnation 0x17a2b3c4d5e6f708 */ \
	"01000000"                                                 /* type: CONTROL */                  \
	"00000000000000000000000000000000000000000000000000000000" /* unused */

/* Opaque fields as a little-endian host reads the bytes above; fix_opaque() swaps them on a BE host. */
#define WMD(a, b) { .wh_interface_cookie = UINT64_C(a), .wh_object_cookie = UINT64_C(b) }
#define WMD_PUT WMD(0x1817161514131211, 0x2827262524232221)
#define HDR_DATA UINT64_C(0x3837363534333231)
#define WMD_GET WMD(0x4847464544434241, 0x5857565554535251)
#define WMD_ACK WMD(0x6867666564636261, 0x7877767574737271)
#define WMD_REPLY WMD(0x8887868584838281, 0x9897969594939291)
#define WMD_NONE WMD(0xffffffffffffffff, 0xffffffffffffffff)

#define NID4(t, n, a) { .size = 0, .type = (t), .num = (n), .addr = { (a), 0, 0, 0 } }
#define NID6(t, n, a0, a1, a2, a3) { .size = 12, .type = (t), .num = (n), .addr = { (a0), (a1), (a2), (a3) } }
#define NID_ANY                                                                                         \
	{ .size = 0xff, .type = 0xff, .num = 0xffff,                                                     \
	  .addr = { UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX } }
#define W_O2IB NID4(ULNET_LND_O2IB, 0, 0xc0a80101)
#define W_TCP1 NID4(ULNET_LND_SOCK, 1, 0x0a000001)
#define W_TCP NID4(ULNET_LND_SOCK, 0, 0x0a000002)

#define WANT_PUT                                                                                        \
	.put = { .ack_wmd = WMD_PUT, .match_bits = UINT64_C(0x0123456789abcdef), .hdr_data = HDR_DATA, \
		 .ptl_index = 42, .offset = 0x12345 }
#define WANT_GET                                                                                        \
	.get = { .return_wmd = WMD_GET, .match_bits = UINT64_C(0x8000000000000000), .ptl_index = 63,   \
		 .src_offset = 4096, .sink_length = 3960 }
#define WANT_ACK .ack = { .dst_wmd = WMD_ACK, .match_bits = UINT64_C(0xfedcba9876543210), .mlength = 0xff000 }

/* large NIDs: nid_size, nid_type, nid_num BE16, nid_addr[4] BE32 */
#define N16_V6 "0c020000" "20010db8" "00000000" "00000000" "00000001" /* 2001:db8::1@tcp */
#define N16_V6B "0c020003" "20010db8" "00ab0000" "00000000" "0000cafe" /* 2001:db8:ab::cafe@tcp3 */
#define N16_V4 "00020001" "0a000001" "00000000" "00000000" "00000000" /* 10.0.0.1@tcp1 */
#define N16_O2IB "00050000" "c0a80101" "00000000" "00000000" "00000000" /* 192.168.1.1@o2ib */
#define W_V6 NID6(ULNET_LND_SOCK, 0, 0x20010db8, 0, 0, 1)
#define W_V6B NID6(ULNET_LND_SOCK, 3, 0x20010db8, 0x00ab0000, 0, 0x0000cafe)

enum form { NID4_FORM, NID16_FORM };

struct hdr_case {
	const char *name;
	enum form form;
	bool allow_hello;
	const char *hex;       /* exact wire bytes */
	int rc;                /* 0 or -EPROTO */
	const char *bad_field; /* err.field when rc != 0 */
	size_t bad_off;        /* err.offset when rc != 0 */
	struct ulnet_hdr want; /* compared field by field when rc == 0 */
};

static const struct hdr_case hdr_cases[] = {
	/* ---- nid4, good ---- */
	{ .name = "PUT nid4: every field distinctive", .form = NID4_FORM,
	  .hex = N4_O2IB N4_TCP1 PID_LUSTRE PID_USER "01000000" "00100000" MSG_PUT,
	  .want = { .dest_nid = W_O2IB, .src_nid = W_TCP1, .dest_pid = 12345, .src_pid = 0x80000401,
		    .type = ULNET_MSG_PUT, .payload_length = 4096, .msg = { WANT_PUT } } },
	{ .name = "PUT nid4: no ACK wanted (wmd all ones), payload 0, dest ANY", .form = NID4_FORM,
	  .hex = N4_ANY N4_TCP PID_LUSTRE PID_LUSTRE "01000000" "00000000"
		 "ffffffffffffffff" "ffffffffffffffff" /* ack_wmd: LNET_WIRE_HANDLE_COOKIE_NONE */
		 "0000000000000000" "0000000000000000" "00000000" "00000000",
	  .want = { .dest_nid = NID_ANY, .src_nid = W_TCP, .dest_pid = 12345, .src_pid = 12345,
		    .type = ULNET_MSG_PUT, .msg = { .put = { .ack_wmd = WMD_NONE } } } },
	{ .name = "GET nid4: ping match bits, sink 3960", .form = NID4_FORM,
	  .hex = N4_TCP N4_O2IB PID_LUSTRE PID_LUSTRE "02000000" "00000000" MSG_GET,
	  .want = { .dest_nid = W_TCP, .src_nid = W_O2IB, .dest_pid = 12345, .src_pid = 12345,
		    .type = ULNET_MSG_GET, .msg = { WANT_GET } } },
	{ .name = "ACK nid4: match bits LE, mlength", .form = NID4_FORM,
	  .hex = N4_TCP1 N4_O2IB PID_USER PID_LUSTRE "00000000" "00000000" MSG_ACK,
	  .want = { .dest_nid = W_TCP1, .src_nid = W_O2IB, .dest_pid = 0x80000401, .src_pid = 12345,
		    .type = ULNET_MSG_ACK, .msg = { WANT_ACK } } },
	{ .name = "REPLY nid4: payload exactly 1 MiB", .form = NID4_FORM,
	  .hex = N4_TCP1 N4_TCP PID_USER PID_LUSTRE "03000000" "00001000" MSG_REPLY,
	  .want = { .dest_nid = W_TCP1, .src_nid = W_TCP, .dest_pid = 0x80000401, .src_pid = 12345,
		    .type = ULNET_MSG_REPLY, .payload_length = 1u << 20,
		    .msg = { .reply = { .dst_wmd = WMD_REPLY } } } },
	{ .name = "HELLO nid4 (socklnd V1, allowed): magicversion in dest_nid", .form = NID4_FORM,
	  .allow_hello = true,
	  .hex = "ed0dbcee01000000" /* lnet_magicversion: 0xeebc0ded, major 1, minor 0 */
		 N4_TCP1 "00000000" PID_LUSTRE "04000000" "00000000" MSG_HELLO,
	  .want = { .dest_nid = NID4(0, 1, 0xeebc0ded), .src_nid = W_TCP1, .dest_pid = 0, .src_pid = 12345,
		    .type = ULNET_MSG_HELLO,
		    .msg = { .hello = { .incarnation = UINT64_C(0x17a2b3c4d5e6f708), .type = 1 } } } },

	/* ---- nid4, bad ---- */
	{ .name = "bad nid4: type 5", .form = NID4_FORM,
	  .hex = N4_O2IB N4_TCP1 PID_LUSTRE PID_USER "05000000" "00100000" MSG_PUT,
	  .rc = -EPROTO, .bad_field = "type", .bad_off = 24 },
	{ .name = "bad nid4: type 0xffffffff", .form = NID4_FORM, .allow_hello = true,
	  .hex = N4_O2IB N4_TCP1 PID_LUSTRE PID_USER "ffffffff" "00000000" MSG_PUT,
	  .rc = -EPROTO, .bad_field = "type", .bad_off = 24 },
	{ .name = "bad nid4: HELLO (type 4) without allow_hello", .form = NID4_FORM,
	  .hex = "ed0dbcee01000000" N4_TCP1 "00000000" PID_LUSTRE "04000000" "00000000" MSG_HELLO,
	  .rc = -EPROTO, .bad_field = "type", .bad_off = 24 },
	{ .name = "bad nid4: GET with payload_length 1", .form = NID4_FORM,
	  .hex = N4_TCP N4_O2IB PID_LUSTRE PID_LUSTRE "02000000" "01000000" MSG_GET,
	  .rc = -EPROTO, .bad_field = "payload_length", .bad_off = 28 },
	{ .name = "bad nid4: ACK with payload_length 1", .form = NID4_FORM,
	  .hex = N4_TCP1 N4_O2IB PID_USER PID_LUSTRE "00000000" "01000000" MSG_ACK,
	  .rc = -EPROTO, .bad_field = "payload_length", .bad_off = 28 },
	{ .name = "bad nid4: PUT with payload_length 1 MiB + 1", .form = NID4_FORM,
	  .hex = N4_O2IB N4_TCP1 PID_LUSTRE PID_USER "01000000" "01001000" MSG_PUT,
	  .rc = -EPROTO, .bad_field = "payload_length", .bad_off = 28 },
	{ .name = "bad nid4: REPLY with payload_length 0xffffffff", .form = NID4_FORM,
	  .hex = N4_TCP1 N4_TCP PID_USER PID_LUSTRE "03000000" "ffffffff" MSG_REPLY,
	  .rc = -EPROTO, .bad_field = "payload_length", .bad_off = 28 },
	{ .name = "bad nid4: dest_nid LND type 0x105 does not fit 8 bits", .form = NID4_FORM,
	  .hex = "0101a8c000000501" N4_TCP1 PID_LUSTRE PID_USER "01000000" "00100000" MSG_PUT,
	  .rc = -EPROTO, .bad_field = "dest_nid", .bad_off = 0 },
	{ .name = "bad nid4: src_nid LND type 0x100", .form = NID4_FORM,
	  .hex = N4_O2IB "0100000a01000001" PID_LUSTRE PID_USER "01000000" "00100000" MSG_PUT,
	  .rc = -EPROTO, .bad_field = "src_nid", .bad_off = 8 },
	{ .name = "bad nid4: type is checked before the NIDs", .form = NID4_FORM,
	  .hex = "0101a8c000000501" N4_TCP1 PID_LUSTRE PID_USER "07000000" "00100000" MSG_PUT,
	  .rc = -EPROTO, .bad_field = "type", .bad_off = 24 },

	/* ---- nid16 (socklnd V4), good ---- */
	{ .name = "PUT nid16: IPv6 dest, IPv4 src", .form = NID16_FORM,
	  .hex = N16_V6 N16_V4 PID_LUSTRE PID_USER "01000000" "00100000" MSG_PUT,
	  .want = { .dest_nid = W_V6, .src_nid = W_TCP1, .dest_pid = 12345, .src_pid = 0x80000401,
		    .type = ULNET_MSG_PUT, .payload_length = 4096, .msg = { WANT_PUT } } },
	{ .name = "GET nid16: IPv6 both ends, nid_num 3 big-endian", .form = NID16_FORM,
	  .hex = N16_V6B N16_V6 PID_LUSTRE PID_LUSTRE "02000000" "00000000" MSG_GET,
	  .want = { .dest_nid = W_V6B, .src_nid = W_V6, .dest_pid = 12345, .src_pid = 12345,
		    .type = ULNET_MSG_GET, .msg = { WANT_GET } } },
	{ .name = "ACK nid16: IPv4 NIDs in the large form", .form = NID16_FORM,
	  .hex = N16_V4 N16_O2IB PID_USER PID_LUSTRE "00000000" "00000000" MSG_ACK,
	  .want = { .dest_nid = W_TCP1, .src_nid = W_O2IB, .dest_pid = 0x80000401, .src_pid = 12345,
		    .type = ULNET_MSG_ACK, .msg = { WANT_ACK } } },
	{ .name = "REPLY nid16: IPv6 src, payload 1 MiB", .form = NID16_FORM,
	  .hex = N16_O2IB N16_V6B PID_LUSTRE PID_LUSTRE "03000000" "00001000" MSG_REPLY,
	  .want = { .dest_nid = W_O2IB, .src_nid = W_V6B, .dest_pid = 12345, .src_pid = 12345,
		    .type = ULNET_MSG_REPLY, .payload_length = 1u << 20,
		    .msg = { .reply = { .dst_wmd = WMD_REPLY } } } },

	/* ---- nid16, bad ---- */
	{ .name = "bad nid16: HELLO type never valid in the large form", .form = NID16_FORM,
	  .hex = N16_V6 N16_V4 "00000000" PID_LUSTRE "04000000" "00000000" MSG_HELLO,
	  .rc = -EPROTO, .bad_field = "type", .bad_off = 48 },
	{ .name = "bad nid16: GET with payload_length 1", .form = NID16_FORM,
	  .hex = N16_V6B N16_V6 PID_LUSTRE PID_LUSTRE "02000000" "01000000" MSG_GET,
	  .rc = -EPROTO, .bad_field = "payload_length", .bad_off = 52 },
	{ .name = "bad nid16: PUT with payload_length 1 MiB + 1", .form = NID16_FORM,
	  .hex = N16_V6 N16_V4 PID_LUSTRE PID_USER "01000000" "01001000" MSG_PUT,
	  .rc = -EPROTO, .bad_field = "payload_length", .bad_off = 52 },
	{ .name = "bad nid16: dest nid_size 4", .form = NID16_FORM,
	  .hex = "04020000" "20010db8" "00000000" "00000000" "00000000" N16_V4
		 PID_LUSTRE PID_USER "01000000" "00100000" MSG_PUT,
	  .rc = -EPROTO, .bad_field = "dest_nid", .bad_off = 0 },
	{ .name = "bad nid16: src IPv4 with non-zero nid_addr[2]", .form = NID16_FORM,
	  .hex = N16_V6 "00020001" "0a000001" "00000000" "00000001" "00000000"
		 PID_LUSTRE PID_USER "01000000" "00100000" MSG_PUT,
	  .rc = -EPROTO, .bad_field = "src_nid", .bad_off = 32 },
};

/* The opaque fields of the table are what a little-endian host reads; a big-endian one reads them
 * byte-reversed (the wire bytes are the same). All-ones values are the same either way. */
static void fix_opaque(struct ulnet_hdr *h)
{
	struct ulnet_wire_handle *wmd = NULL;

	if (ulnet_host_is_le())
		return;
	switch (h->type) {
	case ULNET_MSG_PUT:
		wmd = &h->msg.put.ack_wmd;
		h->msg.put.hdr_data = __builtin_bswap64(h->msg.put.hdr_data);
		break;
	case ULNET_MSG_GET:
		wmd = &h->msg.get.return_wmd;
		break;
	case ULNET_MSG_ACK:
		wmd = &h->msg.ack.dst_wmd;
		break;
	case ULNET_MSG_REPLY:
		wmd = &h->msg.reply.dst_wmd;
		break;
	default:
		break;
	}
	if (wmd) {
		wmd->wh_interface_cookie = __builtin_bswap64(wmd->wh_interface_cookie);
		wmd->wh_object_cookie = __builtin_bswap64(wmd->wh_object_cookie);
	}
}


static void assert_wmd_equal(const struct ulnet_wire_handle *want, const struct ulnet_wire_handle *got)
{
	assert_int_equal(got->wh_interface_cookie, want->wh_interface_cookie);
	assert_int_equal(got->wh_object_cookie, want->wh_object_cookie);
}

static void assert_hdr_equal(const struct ulnet_hdr *want, const struct ulnet_hdr *got)
{
	assert_nid_equal(&want->dest_nid, &got->dest_nid);
	assert_nid_equal(&want->src_nid, &got->src_nid);
	assert_int_equal(got->dest_pid, want->dest_pid);
	assert_int_equal(got->src_pid, want->src_pid);
	assert_int_equal(got->type, want->type);
	assert_int_equal(got->payload_length, want->payload_length);
	switch (want->type) {
	case ULNET_MSG_PUT:
		assert_wmd_equal(&want->msg.put.ack_wmd, &got->msg.put.ack_wmd);
		assert_int_equal(got->msg.put.match_bits, want->msg.put.match_bits);
		assert_int_equal(got->msg.put.hdr_data, want->msg.put.hdr_data);
		assert_int_equal(got->msg.put.ptl_index, want->msg.put.ptl_index);
		assert_int_equal(got->msg.put.offset, want->msg.put.offset);
		break;
	case ULNET_MSG_GET:
		assert_wmd_equal(&want->msg.get.return_wmd, &got->msg.get.return_wmd);
		assert_int_equal(got->msg.get.match_bits, want->msg.get.match_bits);
		assert_int_equal(got->msg.get.ptl_index, want->msg.get.ptl_index);
		assert_int_equal(got->msg.get.src_offset, want->msg.get.src_offset);
		assert_int_equal(got->msg.get.sink_length, want->msg.get.sink_length);
		break;
	case ULNET_MSG_ACK:
		assert_wmd_equal(&want->msg.ack.dst_wmd, &got->msg.ack.dst_wmd);
		assert_int_equal(got->msg.ack.match_bits, want->msg.ack.match_bits);
		assert_int_equal(got->msg.ack.mlength, want->msg.ack.mlength);
		break;
	case ULNET_MSG_REPLY:
		assert_wmd_equal(&want->msg.reply.dst_wmd, &got->msg.reply.dst_wmd);
		break;
	case ULNET_MSG_HELLO:
		assert_int_equal(got->msg.hello.incarnation, want->msg.hello.incarnation);
		assert_int_equal(got->msg.hello.type, want->msg.hello.type);
		break;
	default:
		fail_msg("table row has unknown type %u", want->type);
	}
}

static size_t form_size(enum form f)
{
	return f == NID4_FORM ? ULNET_HDR_NID4_SIZE : ULNET_HDR_NID16_SIZE;
}

static int unpack(const struct hdr_case *c, const uint8_t *buf, size_t len, struct ulnet_hdr *out,
		  struct ulnet_wire_err *err)
{
	if (c->form == NID4_FORM)
		return ulnet_hdr_unpack_nid4(buf, len, c->allow_hello, out, err);
	return ulnet_hdr_unpack_nid16(buf, len, out, err);
}

/* Every prefix of a good vector is short: -EPROTO naming the whole header, and @out left alone. The
 * prefix sits in a buffer of exactly its size so a sanitizer or valgrind sees any over-read. */
static void check_truncations(const struct hdr_case *c, const uint8_t *buf, size_t size)
{
	const char *whole = c->form == NID4_FORM ? "lnet_hdr_nid4" : "lnet_hdr";

	for (size_t cut = 0; cut < size; cut++) {
		uint8_t *part = malloc(cut ? cut : 1);
		struct ulnet_wire_err err = { 0 };
		struct ulnet_hdr out;

		assert_non_null(part);
		memcpy(part, buf, cut);
		memset(&out, 0x5a, sizeof(out));
		assert_int_equal(unpack(c, part, cut, &out, &err), -EPROTO);
		assert_string_equal(err.field, whole);
		assert_int_equal(err.offset, 0);
		assert_int_equal(err.got, cut);
		assert_int_equal(err.limit, size);
		assert_int_equal(out.dest_pid, 0x5a5a5a5a);
		free(part);
	}
}

static void run_hdr_case(void **state)
{
	const struct hdr_case *c = *state;
	const size_t size = form_size(c->form);
	uint8_t buf[HDR_MAX], longer[HDR_MAX + 8], again[HDR_MAX];
	struct ulnet_wire_err err = { 0 };
	struct ulnet_hdr got, got2, want = c->want;
	size_t len = hex_decode(c->hex, buf, sizeof(buf));

	assert_int_equal(len, size); /* the table itself is well formed */

	memset(&got, 0, sizeof(got));
	if (c->rc != 0) {
		assert_int_equal(unpack(c, buf, len, &got, &err), c->rc);
		assert_non_null(err.field);
		assert_string_equal(err.field, c->bad_field);
		assert_int_equal(err.offset, c->bad_off);
		/* a NULL err is allowed and changes nothing but the report */
		assert_int_equal(unpack(c, buf, len, &got, NULL), c->rc);
		return;
	}

	fix_opaque(&want);
	assert_int_equal(unpack(c, buf, len, &got, &err), 0);
	assert_hdr_equal(&want, &got);

	/* trailing bytes (the payload) are not the header's business */
	memcpy(longer, buf, len);
	memset(longer + len, 0xee, 8);
	assert_int_equal(unpack(c, longer, len + 8, &got2, &err), 0);
	assert_hdr_equal(&want, &got2);

	/* repack over garbage: the exact input bytes, unused union bytes zero */
	memset(again, 0xaa, sizeof(again));
	if (c->form == NID4_FORM)
		assert_int_equal(ulnet_hdr_pack_nid4(&got, again), 0);
	else
		ulnet_hdr_pack_nid16(&got, again);
	assert_memory_equal(again, buf, size);
	assert_int_equal(again[size], 0xaa); /* nothing written past the header */

	check_truncations(c, buf, size);
}

/* ---- struct lnet_nid on its own ---- */

struct nid16_case {
	const char *name;
	const char *hex;
	int rc;
	const char *bad_field;
	size_t bad_off;
	struct ulnet_nid want;
	bool repack; /* the canonical image: repacking gives the input back */
};

static const struct nid16_case nid16_cases[] = {
	{ .name = "nid16: IPv6 2001:db8:ab::cafe@tcp3", .hex = N16_V6B, .want = W_V6B, .repack = true },
	{ .name = "nid16: IPv4 10.0.0.1@tcp1", .hex = N16_V4, .want = W_TCP1, .repack = true },
	{ .name = "nid16: 0@lo", .hex = "00090000" "00000000" "00000000" "00000000" "00000000",
	  .want = NID4(ULNET_LND_LO, 0, 0), .repack = true },
	{ .name = "nid16: ANY, all ones", .hex = "ffffffff" "ffffffff" "ffffffff" "ffffffff" "ffffffff",
	  .want = NID_ANY, .repack = true },
	{ .name = "nid16: nid_type 0xff is ANY whatever the rest says",
	  .hex = "00ff0000" "00000000" "00000000" "00000000" "00000000", .want = NID_ANY },
	{ .name = "bad nid16: nid_size 4", .hex = "04020000" "20010db8" "00000001" "00000000" "00000000",
	  .rc = -EPROTO, .bad_field = "nid_size", .bad_off = 0 },
	{ .name = "bad nid16: nid_size 0xff without ANY type",
	  .hex = "ff020000" "0a000001" "00000000" "00000000" "00000000",
	  .rc = -EPROTO, .bad_field = "nid_size", .bad_off = 0 },
	{ .name = "bad nid16: IPv4 with non-zero nid_addr[3]",
	  .hex = "00020000" "0a000001" "00000000" "00000000" "00000100",
	  .rc = -EPROTO, .bad_field = "nid_addr", .bad_off = 16 },
};

static void run_nid16_case(void **state)
{
	const struct nid16_case *c = *state;
	uint8_t buf[ULNET_NID16_WIRE_SIZE], again[ULNET_NID16_WIRE_SIZE];
	struct ulnet_wire_err err = { 0 };
	struct ulnet_nid got;

	assert_int_equal(hex_decode(c->hex, buf, sizeof(buf)), sizeof(buf));
	assert_int_equal(ulnet_nid16_unpack(buf, &got, &err), c->rc);
	if (c->rc != 0) {
		assert_string_equal(err.field, c->bad_field);
		assert_int_equal(err.offset, c->bad_off);
		return;
	}
	assert_nid_equal(&c->want, &got);
	ulnet_nid16_pack(&got, again);
	if (c->repack)
		assert_memory_equal(again, buf, sizeof(buf));
	else /* a wildcard always goes out as the all-ones image */
		for (size_t i = 0; i < sizeof(again); i++)
			assert_int_equal(again[i], 0xff);
}

/* ---- single tests ---- */

/* A large NID has no nid4 form: -EINVAL, and nothing is claimed about @out. */
static void test_pack_nid4_rejects_large_nid(void **state)
{
	struct ulnet_hdr h = { .dest_nid = W_TCP1, .src_nid = W_V6, .type = ULNET_MSG_PUT };
	uint8_t out[ULNET_HDR_NID4_SIZE];

	(void)state;
	assert_int_equal(ulnet_hdr_pack_nid4(&h, out), -EINVAL);
	h.src_nid = h.dest_nid;
	h.dest_nid = (struct ulnet_nid)W_V6B;
	assert_int_equal(ulnet_hdr_pack_nid4(&h, out), -EINVAL);
}

/* Only the union members of the message's type reach the wire: stale bytes from another member
 * (here a PUT's hdr_data/ptl_index/offset left in a REPLY) are not sent. */
static void test_pack_zeroes_unused_union(void **state)
{
	struct ulnet_hdr h;
	uint8_t out[ULNET_HDR_NID4_SIZE], want[ULNET_HDR_NID4_SIZE];

	(void)state;
	memset(&h, 0xc3, sizeof(h));
	h.dest_nid = (struct ulnet_nid)W_TCP1;
	h.src_nid = (struct ulnet_nid)W_TCP;
	h.dest_pid = 0x80000401;
	h.src_pid = 12345;
	h.type = ULNET_MSG_REPLY;
	h.payload_length = 1u << 20;
	h.msg.reply.dst_wmd = (struct ulnet_wire_handle)WMD_REPLY;
	fix_opaque(&h);
	assert_int_equal(hex_decode(N4_TCP1 N4_TCP PID_USER PID_LUSTRE "03000000" "00001000" MSG_REPLY, want,
				    sizeof(want)),
			 sizeof(want));
	assert_int_equal(ulnet_hdr_pack_nid4(&h, out), 0);
	assert_memory_equal(out, want, sizeof(want));
}

/* Words past nid_size are padding in the host struct but must be zero on the wire. */
static void test_nid16_pack_zeroes_padding(void **state)
{
	struct ulnet_nid nid = { .size = 0, .type = ULNET_LND_SOCK, .num = 1,
				 .addr = { 0x0a000001, 0xdeadbeef, 1, 2 } };
	uint8_t out[ULNET_NID16_WIRE_SIZE], want[ULNET_NID16_WIRE_SIZE];

	(void)state;
	hex_decode(N16_V4, want, sizeof(want));
	ulnet_nid16_pack(&nid, out);
	assert_memory_equal(out, want, sizeof(want));
}

/* A wildcard with stray bits still leaves in the canonical all-ones nid4. */
static void test_pack_nid4_any(void **state)
{
	struct ulnet_hdr h = { .dest_nid = { .type = ULNET_LND_ANY }, .src_nid = W_TCP,
			       .type = ULNET_MSG_GET, .msg = { WANT_GET } };
	uint8_t out[ULNET_HDR_NID4_SIZE];
	struct ulnet_hdr back;
	struct ulnet_wire_err err = { 0 };
	const struct ulnet_nid any = NID_ANY;

	(void)state;
	assert_int_equal(ulnet_hdr_pack_nid4(&h, out), 0);
	assert_memory_equal(out, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
	assert_int_equal(ulnet_hdr_unpack_nid4(out, sizeof(out), false, &back, &err), 0);
	assert_nid_equal(&any, &back.dest_nid);
}

static int run_group(const char *group, struct CMUnitTest *tests, size_t n)
{
	return _cmocka_run_group_tests(group, tests, n, NULL, NULL);
}

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

int main(void)
{
	struct CMUnitTest hdr_tests[N_ELEMS(hdr_cases)];
	struct CMUnitTest nid_tests[N_ELEMS(nid16_cases)];
	const struct CMUnitTest single[] = {
		cmocka_unit_test(test_pack_nid4_rejects_large_nid),
		cmocka_unit_test(test_pack_zeroes_unused_union),
		cmocka_unit_test(test_nid16_pack_zeroes_padding),
		cmocka_unit_test(test_pack_nid4_any),
	};
	int failed = 0;

	for (size_t i = 0; i < N_ELEMS(hdr_cases); i++)
		hdr_tests[i] = (struct CMUnitTest){ .name = hdr_cases[i].name, .test_func = run_hdr_case,
						    .initial_state = (void *)&hdr_cases[i] };
	for (size_t i = 0; i < N_ELEMS(nid16_cases); i++)
		nid_tests[i] = (struct CMUnitTest){ .name = nid16_cases[i].name, .test_func = run_nid16_case,
						    .initial_state = (void *)&nid16_cases[i] };
	failed += run_group("hdr_wire rows", hdr_tests, N_ELEMS(hdr_tests));
	failed += run_group("nid16 rows", nid_tests, N_ELEMS(nid_tests));
	failed += cmocka_run_group_tests_name("hdr_wire", single, NULL, NULL);
	return failed;
}
