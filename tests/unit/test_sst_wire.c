/* SPDX-License-Identifier: MIT */
/* lnet_selftest codec: hand-written little-endian vectors from docs/selftest.md, their byte-swapped
 * twins, every truncation, bad headers, the packed id list and the brw data patterns. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "selftest/sst.h"

/* Vector syntax: hex fields separated by spaces, each a little-endian number; a field starting
 * with '=' is a byte array (names, raw bytes) that a big-endian sender would not reverse. The
 * swapped twin reverses every numeric field. */
#define HDR(type, feats) "0df0b0ee 01000000 " type " 00000000 00000000 " feats " "
#define SID "0100287f00000200 0068e5cf8b010000 "
#define RPYID "8877665544332211 "
#define BULKID "0807060504030201 "
#define NAME_SESS1 "=7365737331000000000000000000000000000000000000000000000000000000 "
#define NAME_GRP "=6772700000000000000000000000000000000000000000000000000000000000 "
#define SID_VAL { UINT64_C(0x000200007f280001), INT64_C(1700000000000) }

struct sst_case {
	const char *name;
	const char *hex;
	int rc;                 /* 0 or -EPROTO */
	const char *bad_field;  /* expected err.field when rc != 0 */
	struct ulnet_sst_msg want;
};

#define MSG(t, f) .version = 1, .type = (t), .ses_feats = (f)

static const struct sst_case cases[] = {
	{ "MKSN_REQST", HDR("00000000", "01000000") RPYID SID "01000000 " NAME_SESS1, 0, NULL,
	  { MSG(ULNET_SST_MKSN_REQST, 1),
	    .body.mksn_reqst = { UINT64_C(0x1122334455667788), SID_VAL, 1, "sess1" } } },
	{ "MKSN_REPLY", HDR("01000000", "01000000") "00000000 " SID "64000000 " NAME_SESS1, 0, NULL,
	  { MSG(ULNET_SST_MKSN_REPLY, 1), .body.mksn_reply = { 0, SID_VAL, 100, "sess1" } } },
	{ "RMSN_REQST", HDR("02000000", "01000000") RPYID SID, 0, NULL,
	  { MSG(ULNET_SST_RMSN_REQST, 1), .body.rmsn_reqst = { UINT64_C(0x1122334455667788), SID_VAL } } },
	{ "RMSN_REPLY EBUSY", HDR("03000000", "01000000") "10000000 " SID, 0, NULL,
	  { MSG(ULNET_SST_RMSN_REPLY, 1), .body.rmsn_reply = { 16, SID_VAL } } },
	{ "BATCH_REQST run", HDR("04000000", "01000000") RPYID SID "0700000000000000 01000000 00000000 0a000000",
	  0, NULL,
	  { MSG(ULNET_SST_BATCH_REQST, 1),
	    .body.bat_reqst = { UINT64_C(0x1122334455667788), SID_VAL, 7, ULNET_SST_BATCH_RUN, 0, 10 } } },
	{ "BATCH_REPLY", HDR("05000000", "01000000") "00000000 " SID "03000000 05000000", 0, NULL,
	  { MSG(ULNET_SST_BATCH_REPLY, 1), .body.bat_reply = { 0, SID_VAL, 3, 5 } } },
	{ "STAT_REQST", HDR("06000000", "01000000") RPYID SID "00000000", 0, NULL,
	  { MSG(ULNET_SST_STAT_REQST, 1), .body.stat_reqst = { UINT64_C(0x1122334455667788), SID_VAL, 0, 0 } } },
	{ "STAT_REPLY", HDR("07000000", "01000000") "00000000 " SID
	  /* sfw_counters */ "e8030000 01000000 00000000 02000000 03000000 "
	  /* srpc_counters */ "04000000 05000000 06000000 07000000 08000000 0000100000000000 0000200000000000 "
	  /* lnet_counters_common */ "09000000 0a000000 0b000000 0c000000 0d000000 0e000000 0f000000 "
	  "0000000010000000 0000000020000000 0000000000000000 3000000000000000",
	  0, NULL,
	  { MSG(ULNET_SST_STAT_REPLY, 1),
	    .body.stat_reply = { 0, SID_VAL, { 1000, 1, 0, 2, 3 },
				 { 4, 5, 6, 7, 8, UINT64_C(0x100000), UINT64_C(0x200000) },
				 { 9, 10, 11, 12, 13, 14, 15, UINT64_C(0x1000000000), UINT64_C(0x2000000000), 0,
				   0x30 } } } },
	{ "TEST_REQST brw v1 (BULK_LEN)", HDR("08000000", "01000000") RPYID BULKID SID
	  "0700000000000000 0b000000 ffffffff 08000000 01 00 01000000 0200 0300 01100000 01100000", 0, NULL,
	  { MSG(ULNET_SST_TEST_REQST, 1),
	    .body.tes_reqst = { UINT64_C(0x1122334455667788), UINT64_C(0x0102030405060708), SID_VAL, 7,
				ULNET_SST_SVC_BRW, UINT32_MAX, 8, 1, 0, 1,
				.u.bulk_v1 = { ULNET_SST_BRW_WRITE, ULNET_SST_CHECK_FULL, 4097, 4097 } } } },
	{ "TEST_REQST brw v0 (page counts)", HDR("08000000", "00000000") RPYID BULKID SID
	  "0700000000000000 0b000000 64000000 02000000 00 01 00000000 02000000 02000000 03000000", 0, NULL,
	  { MSG(ULNET_SST_TEST_REQST, 0),
	    .body.tes_reqst = { UINT64_C(0x1122334455667788), UINT64_C(0x0102030405060708), SID_VAL, 7,
				ULNET_SST_SVC_BRW, 100, 2, 0, 1, 0,
				.u.bulk_v0 = { ULNET_SST_BRW_WRITE, 2, ULNET_SST_CHECK_FULL } } } },
	{ "TEST_REQST ping", HDR("08000000", "01000000") RPYID BULKID SID
	  "0700000000000000 0c000000 0a000000 01000000 01 00 02000000 40000000 00000000 =00000000", 0, NULL,
	  { MSG(ULNET_SST_TEST_REQST, 1),
	    .body.tes_reqst = { UINT64_C(0x1122334455667788), UINT64_C(0x0102030405060708), SID_VAL, 7,
				ULNET_SST_SVC_PING, 10, 1, 1, 0, 2, .u.ping = { 64, 0 } } } },
	{ "TEST_REPLY EINVAL", HDR("09000000", "01000000") "16000000 " SID, 0, NULL,
	  { MSG(ULNET_SST_TEST_REPLY, 1), .body.tes_reply = { 22, SID_VAL } } },
	{ "DEBUG_REQST", HDR("0a000000", "01000000") RPYID SID "00000000", 0, NULL,
	  { MSG(ULNET_SST_DEBUG_REQST, 1), .body.dbg_reqst = { UINT64_C(0x1122334455667788), SID_VAL, 0 } } },
	{ "DEBUG_REPLY", HDR("0b000000", "01000000") "00000000 " SID "64000000 02000000 " NAME_SESS1, 0, NULL,
	  { MSG(ULNET_SST_DEBUG_REPLY, 1), .body.dbg_reply = { 0, SID_VAL, 100, 2, "sess1" } } },
	{ "BRW_REQST write 1 MiB full", HDR("0c000000", "01000000") RPYID BULKID "02000000 00001000 03000000", 0,
	  NULL,
	  { MSG(ULNET_SST_BRW_REQST, 1),
	    .body.brw_reqst = { UINT64_C(0x1122334455667788), UINT64_C(0x0102030405060708), ULNET_SST_BRW_WRITE,
				1048576, ULNET_SST_CHECK_FULL } } },
	{ "BRW_REPLY EBADMSG", HDR("0d000000", "01000000") "4a000000", 0, NULL,
	  { MSG(ULNET_SST_BRW_REPLY, 1), .body.brw_reply = { 74 } } },
	{ "PING_REQST", HDR("0e000000", "01000000") RPYID "cefabeba 2a000000 00f1536500000000 15cd5b0700000000", 0,
	  NULL,
	  { MSG(ULNET_SST_PING_REQST, 1),
	    .body.ping_reqst = { UINT64_C(0x1122334455667788), ULNET_SST_PING_MAGIC, 42, 1700000000, 123456789 } } },
	{ "PING_REPLY", HDR("0f000000", "01000000") "00000000 cefabeba 2a000000", 0, NULL,
	  { MSG(ULNET_SST_PING_REPLY, 1), .body.ping_reply = { 0, ULNET_SST_PING_MAGIC, 42 } } },
	{ "JOIN_REQST", HDR("10000000", "01000000") RPYID SID NAME_GRP, 0, NULL,
	  { MSG(ULNET_SST_JOIN_REQST, 1), .body.join_reqst = { UINT64_C(0x1122334455667788), SID_VAL, "grp" } } },
	{ "JOIN_REPLY", HDR("11000000", "01000000") "00000000 " SID "64000000 " NAME_SESS1, 0, NULL,
	  { MSG(ULNET_SST_JOIN_REPLY, 1), .body.join_reply = { 0, SID_VAL, 100, "sess1" } } },
	/* bad input */
	{ "bad magic", "0df0b0ef 01000000 0c000000 00000000 00000000 01000000 " RPYID BULKID "02000000 00001000 03000000",
	  -EPROTO, "msg_magic", { 0 } },
	{ "version 2", "0df0b0ee 02000000 0c000000 00000000 00000000 01000000 " RPYID BULKID "02000000 00001000 03000000",
	  -EPROTO, "msg_version", { 0 } },
	{ "unknown type 18", HDR("12000000", "01000000") RPYID BULKID "02000000 00001000 03000000", -EPROTO, "msg_type",
	  { 0 } },
	{ "header cut at feats", "0df0b0ee 01000000 0c000000 00000000 00000000", -EPROTO, "msg_ses_feats", { 0 } },
	{ "BRW_REQST body cut at brw_len", HDR("0c000000", "01000000") RPYID BULKID "02000000", -EPROTO, "brw_len",
	  { 0 } },
	{ "STAT_REPLY cut in lnet counters", HDR("07000000", "01000000") "00000000 " SID
	  "e8030000 01000000 00000000 02000000 03000000 04000000 05000000 06000000 07000000 08000000 "
	  "0000100000000000 0000200000000000 09000000", -EPROTO, "lcc_msgs_max", { 0 } },
};

/* Parse a vector into its native (as written, little-endian) and swapped forms. */
static size_t parse_vec(const char *hex, uint8_t *le, uint8_t *be, size_t cap)
{
	size_t n = 0;
	const char *p = hex;

	while (*p) {
		bool raw = false;
		size_t start = n, i;
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (*p == '=') {
			raw = true;
			p++;
		}
		while (*p && *p != ' ') {
			unsigned v;
			assert_true(isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1]));
			assert_int_equal(sscanf(p, "%2x", &v), 1);
			assert_true(n < cap);
			le[n++] = (uint8_t)v;
			p += 2;
		}
		for (i = start; i < n; i++)
			be[i] = raw ? le[i] : le[n - 1 - (i - start)];
	}
	return n;
}

static void check_msg(const struct ulnet_sst_msg *got, const struct ulnet_sst_msg *want, bool swab)
{
	struct ulnet_sst_msg w = *want;

	w.swab = swab;
	assert_int_equal(got->version, w.version);
	assert_int_equal(got->type, w.type);
	assert_int_equal(got->ses_feats, w.ses_feats);
	assert_int_equal(got->swab, w.swab);
	assert_memory_equal(&got->body, &w.body, sizeof(w.body));
}

static void run_case(void **state)
{
	const struct sst_case *c = *state;
	uint8_t le[256], be[256], out[ULNET_SST_MSG_SIZE], padded[ULNET_SST_MSG_SIZE];
	const uint8_t *native = ulnet_host_is_le() ? le : be, *twin = ulnet_host_is_le() ? be : le;
	struct ulnet_sst_msg m;
	struct ulnet_wire_err err = { 0 };
	size_t n = parse_vec(c->hex, le, be, sizeof(le)), cut;

	if (c->rc != 0) {
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, native, n);
		assert_int_equal(ulnet__sst_msg_unpack(copy, n, &m, &err), c->rc);
		assert_non_null(err.field);
		assert_string_equal(err.field, c->bad_field);
		/* the swapped twin fails on the same field */
		memcpy(copy, twin, n);
		memset(&err, 0, sizeof(err));
		assert_int_equal(ulnet__sst_msg_unpack(copy, n, &m, &err), c->rc);
		assert_string_equal(err.field, c->bad_field);
		free(copy);
		return;
	}
	/* the vector itself has the documented length */
	assert_int_equal(n, ULNET_SST_HDR_SIZE + ulnet__sst_body_size(c->want.type));
	memset(padded, 0, sizeof(padded));
	memcpy(padded, native, n);

	/* native: decode, compare, re-encode byte for byte */
	assert_int_equal(ulnet__sst_msg_unpack(padded, sizeof(padded), &m, &err), 0);
	check_msg(&m, &c->want, false);
	assert_int_equal(ulnet__sst_msg_pack(&m, out), 0);
	assert_memory_equal(out, padded, sizeof(out));

	/* exactly the header and the body are needed; bytes past them are ignored */
	assert_int_equal(ulnet__sst_msg_unpack(native, n, &m, &err), 0);

	/* swapped twin: same message, flagged, re-encoded in our order */
	assert_int_equal(ulnet__sst_msg_unpack(twin, n, &m, &err), 0);
	check_msg(&m, &c->want, true);
	assert_int_equal(ulnet__sst_msg_pack(&m, out), 0);
	assert_memory_equal(out, padded, sizeof(out));

	/* every truncation fails cleanly, in both orders (heap copies so ASan sees over-reads) */
	for (cut = 0; cut < n; cut++) {
		for (int o = 0; o < 2; o++) {
			uint8_t *copy = malloc(cut ? cut : 1);
			memcpy(copy, o ? twin : native, cut);
			memset(&err, 0, sizeof(err));
			assert_int_equal(ulnet__sst_msg_unpack(copy, cut, &m, &err), -EPROTO);
			assert_non_null(err.field);
			assert_true(err.offset <= cut);
			free(copy);
		}
	}
}

static void test_sizes_and_names(void **state)
{
	(void)state;
	size_t max = 0;
	for (uint32_t t = 0; t < ULNET_SST_MSG_TYPE_COUNT; t++) {
		assert_true(ulnet__sst_body_size(t) > 0);
		if (ulnet__sst_body_size(t) > max)
			max = ulnet__sst_body_size(t);
		assert_string_not_equal(ulnet__sst_msg_type_name(t), "?");
	}
	assert_int_equal(max, ULNET_SST_BODY_SIZE);
	assert_int_equal(ulnet__sst_body_size(ULNET_SST_MSG_TYPE_COUNT), 0);
	assert_string_equal(ulnet__sst_msg_type_name(99), "?");
	assert_int_equal(ulnet__sst_service_request(ULNET_SST_SVC_BRW), ULNET_SST_BRW_REQST);
	assert_int_equal(ulnet__sst_service_request(ULNET_SST_SVC_PING), ULNET_SST_PING_REQST);
	assert_int_equal(ulnet__sst_service_request(ULNET_SST_SVC_MAKE_SESSION), ULNET_SST_MKSN_REQST);
	assert_int_equal(ulnet__sst_service_request(ULNET_SST_SVC_JOIN), ULNET_SST_JOIN_REQST);
	assert_int_equal(ulnet__sst_service_request(7), -1);
	assert_int_equal(ulnet__sst_service_portal(ULNET_SST_SVC_BRW), 50);
	assert_int_equal(ulnet__sst_service_portal(ULNET_SST_SVC_TEST), 51);

	struct ulnet_sst_msg m = { .type = 18 };
	uint8_t out[ULNET_SST_MSG_SIZE];
	assert_int_equal(ulnet__sst_msg_pack(&m, out), -EINVAL);
}

static void test_hdr_only(void **state)
{
	(void)state;
	/* a version-2 request still yields its header, so a server can answer EPROTO */
	static const uint8_t v2[24] = { 0x0d, 0xf0, 0xb0, 0xee, 2, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0,
					0, 0, 0, 0, 1, 0, 0, 0 };
	struct ulnet_sst_hdr h;
	struct ulnet_wire_err err = { 0 };
	assert_int_equal(ulnet__sst_hdr_unpack(v2, sizeof(v2), &h, &err), 0);
	assert_int_equal(h.version, 2);
	assert_int_equal(h.type, ULNET_SST_BRW_REQST);
	assert_int_equal(h.ses_feats, 1);
	assert_false(h.swab);
	assert_int_equal(ulnet__sst_hdr_unpack(v2, 3, &h, &err), -EPROTO);
	assert_string_equal(err.field, "msg_magic");
}

static void test_ids(void **state)
{
	(void)state;
	/* 127.40.0.3@tcp pid 12345, little-endian */
	static const uint8_t le[12] = { 0x03, 0x00, 0x28, 0x7f, 0x00, 0x00, 0x02, 0x00, 0x39, 0x30, 0x00, 0x00 };
	static const uint8_t be[12] = { 0x00, 0x02, 0x00, 0x00, 0x7f, 0x28, 0x00, 0x03, 0x00, 0x00, 0x30, 0x39 };
	struct ulnet_sst_id id;
	uint8_t out[12];

	ulnet__sst_id_unpack(ulnet_host_is_le() ? le : be, false, &id);
	assert_int_equal(id.nid, UINT64_C(0x000200007f280003));
	assert_int_equal(id.pid, 12345);
	ulnet__sst_id_unpack(ulnet_host_is_le() ? be : le, true, &id);
	assert_int_equal(id.nid, UINT64_C(0x000200007f280003));
	assert_int_equal(id.pid, 12345);
	ulnet__sst_id_pack(&id, out);
	assert_memory_equal(out, ulnet_host_is_le() ? le : be, 12);
}

static void test_brw_fill(void **state)
{
	(void)state;
	/* little-endian words of BRW_MAGIC: b3 b2 b0 ee b1 b0 ee ... starting at transfer position 0 */
	static const uint8_t magic_le[8] = { 0xb3, 0xee, 0xb2, 0xee, 0xb1, 0xee, 0xb0, 0xee };
	uint8_t buf[40];

	ulnet__sst_brw_fill(buf, sizeof(buf), 0, ULNET_SST_BRW_MAGIC);
	if (ulnet_host_is_le())
		for (size_t i = 0; i < sizeof(buf); i++)
			assert_int_equal(buf[i], magic_le[i % 8]);
	/* a fragment starting at transfer position 4097 continues the same stream */
	uint8_t whole[4200], part[103];
	ulnet__sst_brw_fill(whole, sizeof(whole), 0, ULNET_SST_BRW_MAGIC);
	ulnet__sst_brw_fill(part, sizeof(part), 4097, ULNET_SST_BRW_MAGIC);
	assert_memory_equal(part, whole + 4097, sizeof(part));
	/* tiny pieces at every phase */
	for (uint64_t pos = 0; pos < 16; pos++)
		for (size_t len = 0; len <= 9; len++) {
			uint8_t b[9];
			ulnet__sst_brw_fill(b, len, pos, ULNET_SST_BRW_MAGIC);
			if (len)
				assert_memory_equal(b, whole + pos, len);
		}
}

static void test_brw_check(void **state)
{
	(void)state;
	uint8_t buf[8192 + 13];
	uint64_t bad = 0;

	for (uint64_t pos = 0; pos < 9; pos++) {
		ulnet__sst_brw_fill(buf, sizeof(buf), pos, ULNET_SST_BRW_MAGIC);
		assert_int_equal(ulnet__sst_brw_check(buf, sizeof(buf), pos, ULNET_SST_BRW_MAGIC, false,
						      ULNET_SST_CHECK_FULL, &bad), 0);
		assert_int_equal(ulnet__sst_brw_check(buf, sizeof(buf), pos, ULNET_SST_BRW_MAGIC, false,
						      ULNET_SST_CHECK_SIMPLE, &bad), 0);
		/* poison is not magic */
		assert_int_equal(ulnet__sst_brw_check(buf, sizeof(buf), pos, ULNET_SST_BRW_POISON, false,
						      ULNET_SST_CHECK_FULL, &bad), 1);
		assert_int_equal(bad, pos);
	}
	/* one corrupted byte deep inside: full finds its transfer position, simple does not look */
	ulnet__sst_brw_fill(buf, sizeof(buf), 4097, ULNET_SST_BRW_MAGIC);
	buf[5000] ^= 0x40;
	assert_int_equal(ulnet__sst_brw_check(buf, sizeof(buf), 4097, ULNET_SST_BRW_MAGIC, false,
					      ULNET_SST_CHECK_FULL, &bad), 1);
	assert_int_equal(bad, 4097 + 5000);
	assert_int_equal(ulnet__sst_brw_check(buf, sizeof(buf), 4097, ULNET_SST_BRW_MAGIC, false,
					      ULNET_SST_CHECK_SIMPLE, &bad), 0);
	assert_int_equal(ulnet__sst_brw_check(buf, sizeof(buf), 4097, ULNET_SST_BRW_MAGIC, false,
					      ULNET_SST_CHECK_NONE, &bad), 0);
	/* simple sees the last byte */
	buf[5000] ^= 0x40;
	buf[sizeof(buf) - 1] ^= 1;
	assert_int_equal(ulnet__sst_brw_check(buf, sizeof(buf), 4097, ULNET_SST_BRW_MAGIC, false,
					      ULNET_SST_CHECK_SIMPLE, &bad), 1);
	assert_int_equal(bad, 4097 + sizeof(buf) - 1);
	/* a peer of the other byte order wrote swapped words */
	ulnet__sst_brw_fill(buf, sizeof(buf), 0, __builtin_bswap64(ULNET_SST_BRW_MAGIC));
	assert_int_equal(ulnet__sst_brw_check(buf, sizeof(buf), 0, ULNET_SST_BRW_MAGIC, true,
					      ULNET_SST_CHECK_FULL, &bad), 0);
	assert_int_equal(ulnet__sst_brw_check(buf, sizeof(buf), 0, ULNET_SST_BRW_MAGIC, false,
					      ULNET_SST_CHECK_FULL, &bad), 1);
	/* short fragments under simple */
	for (size_t len = 1; len < 20; len++) {
		ulnet__sst_brw_fill(buf, len, 3, ULNET_SST_BRW_MAGIC);
		assert_int_equal(ulnet__sst_brw_check(buf, len, 3, ULNET_SST_BRW_MAGIC, false,
						      ULNET_SST_CHECK_SIMPLE, &bad), 0);
		buf[len - 1] ^= 0xff;
		assert_int_equal(ulnet__sst_brw_check(buf, len, 3, ULNET_SST_BRW_MAGIC, false,
						      ULNET_SST_CHECK_SIMPLE, &bad), 1);
		assert_int_equal(bad, 3 + len - 1);
	}
}

/* The extended stat body (docs/selftest.md §6), hand-written little-endian, and its swapped twin. */
static void test_stat_ext(void **state)
{
	static const uint8_t le[ULNET_SST_BODY_SIZE] = {
		0, 0, 0, 0,                                        /* status */
		0x01, 0, 0x28, 0x7f, 0, 0, 0x02, 0,                /* sid nid */
		0, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0, 0,             /* sid stamp */
		2, 0, 0, 0,                                        /* ntests */
		10, 0, 0, 0, 0, 0, 0, 0,                           /* rpcs_ok */
		3, 0, 0, 0, 0, 0, 0, 0,                            /* rpcs_failed */
		0, 0, 0xa0, 0, 0, 0, 0, 0,                         /* bytes 10 MiB */
		1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,    /* timeout, mismatch, refused, peer_gone */
		0x39, 0x30, 0, 0, 0, 0, 0, 0,                      /* mismatch_offset 12345 */
		100, 0, 0, 0, 200, 0, 0, 0, 0x2c, 1, 0, 0,         /* p50, p99, max (300) */
		0xe8, 3, 0, 0, 1, 0, 0, 0,                         /* elapsed_ms 1000, active 1 */
		'o', 'o', 'p', 's',                                /* first_error */
	};
	uint8_t be[ULNET_SST_BODY_SIZE], out[ULNET_SST_BODY_SIZE];
	static const unsigned widths[] = { 4, 8, 8, 4, 8, 8, 8, 4, 4, 4, 4, 8, 4, 4, 4, 4, 4 };
	struct ulnet_sst_stat_ext x;
	size_t off = 0;

	(void)state;
	/* the extended request: str_type "ULNT", the batch id right after it (body offset 28) */
	{
		struct ulnet_sst_msg m = { .type = ULNET_SST_STAT_REQST, .ses_feats = 1 }, got;
		uint8_t msg[ULNET_SST_MSG_SIZE];
		m.body.stat_reqst.type = ULNET_SST_STAT_TYPE_EXT;
		m.body.stat_reqst.ext_bid = 7;
		assert_int_equal(ulnet__sst_msg_pack(&m, msg), 0);
		assert_true(ulnet_get_ho32(msg + 48, false) == 0x554c4e54u && ulnet_get_ho64(msg + 52, false) == 7);
		assert_int_equal(ulnet__sst_msg_unpack(msg, sizeof(msg), &got, NULL), 0);
		assert_true(got.body.stat_reqst.type == ULNET_SST_STAT_TYPE_EXT && got.body.stat_reqst.ext_bid == 7);
		/* a kernel console's message may end after str_type: no batch id */
		assert_int_equal(ulnet__sst_msg_unpack(msg, 52, &got, NULL), 0);
		assert_true(got.body.stat_reqst.ext_bid == 0);
	}
	for (int pass = 0; pass < 2; pass++) {
		ulnet__sst_stat_ext_unpack(pass ? be : le, pass == 1, &x);
		assert_int_equal(x.status, 0);
		assert_true(x.sid.nid == UINT64_C(0x000200007f280001) && x.sid.stamp == INT64_C(1700000000000));
		assert_int_equal(x.ntests, 2);
		assert_true(x.rpcs_ok == 10 && x.rpcs_failed == 3 && x.bytes == 10u << 20);
		assert_true(x.timeout == 1 && x.mismatch == 1 && x.refused == 0 && x.peer_gone == 1);
		assert_true(x.mismatch_offset == 12345);
		assert_true(x.lat_p50_us == 100 && x.lat_p99_us == 200 && x.lat_max_us == 300);
		assert_true(x.elapsed_ms == 1000 && x.active == 1);
		assert_string_equal(x.first_error, "oops");
		if (!pass) {
			ulnet__sst_stat_ext_pack(&x, out);
			assert_memory_equal(out, le, sizeof(le));
			/* the big-endian twin: every numeric field reversed, the text kept */
			memcpy(be, le, sizeof(le));
			for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); off += widths[i++])
				for (unsigned k = 0; k < widths[i]; k++)
					be[off + k] = le[off + widths[i] - 1 - k];
			assert_int_equal(off, 92);
		}
	}
}

int main(void)
{
	size_t ncases = sizeof(cases) / sizeof(cases[0]);
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_sizes_and_names), cmocka_unit_test(test_hdr_only), cmocka_unit_test(test_ids),
		cmocka_unit_test(test_brw_fill), cmocka_unit_test(test_brw_check), cmocka_unit_test(test_stat_ext),
	};
	size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
	struct CMUnitTest *tests = calloc(ncases + nfixed, sizeof(*tests));
	int rc;

	for (size_t i = 0; i < ncases; i++) {
		tests[i].name = cases[i].name;
		tests[i].test_func = run_case;
		tests[i].initial_state = (void *)&cases[i];
	}
	memcpy(tests + ncases, fixed, sizeof(fixed));
	rc = _cmocka_run_group_tests("sst_wire", tests, ncases + nfixed, NULL, NULL);
	free(tests);
	return rc;
}
