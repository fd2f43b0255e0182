/* SPDX-License-Identifier: MIT */
/* tcp LND codecs (tcp_wire.c): one row per case, bytes hand-written from lnet-wire.md §2.6. Every good
 * row is decoded, compared field by field, re-encoded (native rows) and cut at every shorter length;
 * swapped rows are the byte-swapped twins of native ones and must decode to the same values. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lnd/tcp/tcp.h"

/* rows name only the fields they check */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

enum kind { K_CONNREQ, K_HELLO, K_MSGHDR };

struct wcase {
	const char *name;
	enum kind kind;
	const char *hex;
	int rc;                /* 0, -EPROTO or -EPROTONOSUPPORT */
	const char *bad_field; /* err.field when rc != 0 */
	bool swapped;          /* twin of a native row: do not re-encode */
	/* expected values */
	uint32_t version;
	const char *nid;       /* connreq nid, hello src nid */
	const char *dst;       /* hello dst nid */
	uint32_t src_pid;
	uint64_t inc;
	int32_t ctype;
	uint32_t nips;
	uint32_t type;         /* msg hdr */
	uint64_t c0, c1;
};

#define AMAGIC_LE "00 71 ce ac "
#define AMAGIC_BE "ac ce 71 00 "
#define PMAGIC_LE "63 69 72 45 "
#define PMAGIC_BE "45 72 69 63 "
#define NID_1_2_LE "02 01 a8 c0 00 00 02 00 " /* 192.168.1.2@tcp */
#define NID_1_2_BE "00 02 00 00 c0 a8 01 02 "
#define NID_1_1_LE "01 01 a8 c0 00 00 02 00 " /* 192.168.1.1@tcp */
#define NID_1_1_BE "00 02 00 00 c0 a8 01 01 "
#define NID16_1_2 "00 02 00 00 c0 a8 01 02 00 00 00 00 00 00 00 00 00 00 00 00 "
#define NID16_1_1 "00 02 00 00 c0 a8 01 01 00 00 00 00 00 00 00 00 00 00 00 00 "
#define NID16_V6 "0c 02 00 03 fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 " /* [fd00::1]@tcp3 */
#define INC_LE "08 07 06 05 04 03 02 01 "
#define INC_BE "01 02 03 04 05 06 07 08 "
#define Z4 "00 00 00 00 "
#define Z8 Z4 Z4
#define INC 0x0102030405060708ull

static const struct wcase cases[] = {
	/* ---- acceptor request ---- */
	{ "connreq v1 native", K_CONNREQ, AMAGIC_LE "01 00 00 00 " NID_1_2_LE, 0, NULL, false, 1, "192.168.1.2@tcp" },
	{ "connreq v1 swapped", K_CONNREQ, AMAGIC_BE "00 00 00 01 " NID_1_2_BE, 0, NULL, true, 1, "192.168.1.2@tcp" },
	{ "connreq v2 ipv4", K_CONNREQ, AMAGIC_LE "02 00 00 00 " NID16_1_2, 0, NULL, false, 2, "192.168.1.2@tcp" },
	{ "connreq v2 swapped (nid never swapped)", K_CONNREQ, AMAGIC_BE "00 00 00 02 " NID16_1_2, 0, NULL, true, 2,
	  "192.168.1.2@tcp" },
	{ "connreq v2 ipv6", K_CONNREQ, AMAGIC_LE "02 00 00 00 " NID16_V6, 0, NULL, false, 2, "fd00::1@tcp3" },
	{ "connreq bad magic", K_CONNREQ, "00 71 ce ad 01 00 00 00 " NID_1_2_LE, -EPROTO, "acr_magic" },
	{ "connreq LNET_PROTO_MAGIC", K_CONNREQ, PMAGIC_LE "01 00 00 00 " NID_1_2_LE, -EPROTO, "acr_magic" },
	{ "connreq version 3", K_CONNREQ, AMAGIC_LE "03 00 00 00 " NID_1_2_LE, -EPROTONOSUPPORT, "acr_version" },
	{ "connreq version 0 swapped", K_CONNREQ, AMAGIC_BE "00 00 00 00 " NID_1_2_BE, -EPROTONOSUPPORT, "acr_version" },
	{ "connreq v2 bad nid_size", K_CONNREQ,
	  AMAGIC_LE "02 00 00 00 05 02 00 00 c0 a8 01 02 00 00 00 00 00 00 00 00 00 00 00 00", -EPROTO, NULL },

	/* ---- HELLO ---- */
	{ "hello V3 native", K_HELLO,
	  PMAGIC_LE "03 00 00 00 " NID_1_2_LE NID_1_1_LE "39 30 00 00 " Z4 INC_LE Z8 "01 00 00 00 " Z4, 0, NULL, false,
	  3, "192.168.1.2@tcp", "192.168.1.1@tcp", 12345, INC, TCPLND_CONN_CONTROL, 0 },
	{ "hello V3 swapped", K_HELLO,
	  PMAGIC_BE "00 00 00 03 " NID_1_2_BE NID_1_1_BE "00 00 30 39 " Z4 INC_BE Z8 "00 00 00 01 " Z4, 0, NULL, true,
	  3, "192.168.1.2@tcp", "192.168.1.1@tcp", 12345, INC, TCPLND_CONN_CONTROL, 0 },
	{ "hello V2 BULK_OUT", K_HELLO,
	  PMAGIC_LE "02 00 00 00 " NID_1_2_LE NID_1_1_LE "39 30 00 00 " Z4 INC_LE Z8 "03 00 00 00 " Z4, 0, NULL, false,
	  2, "192.168.1.2@tcp", "192.168.1.1@tcp", 12345, INC, TCPLND_CONN_BULK_OUT, 0 },
	{ "hello V3 NONE reply", K_HELLO,
	  PMAGIC_LE "03 00 00 00 " NID_1_2_LE NID_1_1_LE "39 30 00 00 " Z4 INC_LE Z8 "ff ff ff ff " Z4, 0, NULL, false,
	  3, "192.168.1.2@tcp", "192.168.1.1@tcp", 12345, INC, TCPLND_CONN_NONE, 0 },
	{ "hello V3 one IP", K_HELLO,
	  PMAGIC_LE "03 00 00 00 " NID_1_2_LE NID_1_1_LE "39 30 00 00 " Z4 INC_LE Z8 "01 00 00 00 01 00 00 00 "
		    "02 01 a8 c0",
	  0, NULL, false, 3, "192.168.1.2@tcp", "192.168.1.1@tcp", 12345, INC, TCPLND_CONN_CONTROL, 1 },
	{ "hello V3 zero IP", K_HELLO,
	  PMAGIC_LE "03 00 00 00 " NID_1_2_LE NID_1_1_LE "39 30 00 00 " Z4 INC_LE Z8 "01 00 00 00 01 00 00 00 " Z4,
	  -EPROTO, "kshm_ips" },
	{ "hello V3 nips 17", K_HELLO,
	  PMAGIC_LE "03 00 00 00 " NID_1_2_LE NID_1_1_LE "39 30 00 00 " Z4 INC_LE Z8 "01 00 00 00 11 00 00 00 ",
	  -EPROTO, "kshm_nips" },
	{ "hello V3 src ANY", K_HELLO,
	  PMAGIC_LE "03 00 00 00 ff ff ff ff ff ff ff ff " NID_1_1_LE "39 30 00 00 " Z4 INC_LE Z8 "01 00 00 00 " Z4,
	  -EPROTO, "kshm_src_nid" },
	{ "hello bad magic", K_HELLO,
	  "63 69 72 46 03 00 00 00 " NID_1_2_LE NID_1_1_LE "39 30 00 00 " Z4 INC_LE Z8 "01 00 00 00 " Z4, -EPROTO,
	  "kshm_magic" },
	{ "hello acceptor magic", K_HELLO, AMAGIC_LE "01 00 00 00 " NID_1_2_LE, -EPROTO, "kshm_magic" },
	{ "hello V5", K_HELLO,
	  PMAGIC_LE "05 00 00 00 " NID_1_2_LE NID_1_1_LE "39 30 00 00 " Z4 INC_LE Z8 "01 00 00 00 " Z4,
	  -EPROTONOSUPPORT, "kshm_version" },
	{ "hello V1 native", K_HELLO,
	  "ed 0d bc ee 01 00 00 00 " NID_1_2_LE Z4 "39 30 00 00 04 00 00 00 " Z4 INC_LE "02 00 00 00 " Z4 Z8 Z8 Z8,
	  0, NULL, false, 1, "192.168.1.2@tcp", NULL, 12345, INC, TCPLND_CONN_BULK_IN, 0 },
	{ "hello V1 version 2.0", K_HELLO,
	  "ed 0d bc ee 02 00 00 00 " NID_1_2_LE Z4 "39 30 00 00 04 00 00 00 " Z4 INC_LE "02 00 00 00 " Z4 Z8 Z8 Z8,
	  -EPROTONOSUPPORT, "version_major" },
	{ "hello V1 type PUT", K_HELLO,
	  "ed 0d bc ee 01 00 00 00 " NID_1_2_LE Z4 "39 30 00 00 01 00 00 00 " Z4 INC_LE "02 00 00 00 " Z4 Z8 Z8 Z8,
	  -EPROTO, "type" },
	{ "hello V1 payload 68", K_HELLO,
	  "ed 0d bc ee 01 00 00 00 " NID_1_2_LE Z4 "39 30 00 00 04 00 00 00 44 00 00 00 " INC_LE "02 00 00 00 " Z4 Z8
	  Z8 Z8,
	  -EPROTO, "payload_length" },
	{ "hello V1 big-endian magic", K_HELLO, "ee bc 0d ed 00 01 00 00 " NID_1_2_LE, -EPROTO, "kshm_magic" },
	{ "hello V4 native", K_HELLO,
	  PMAGIC_LE "04 00 00 00 " NID16_V6 NID16_1_1 "39 30 00 00 " Z4 INC_LE Z8 "03 00 00 00 " Z4, 0, NULL, false,
	  4, "fd00::1@tcp3", "192.168.1.1@tcp", 12345, INC, TCPLND_CONN_BULK_OUT, 0 },
	{ "hello V4 swapped", K_HELLO,
	  PMAGIC_BE "00 00 00 04 " NID16_V6 NID16_1_1 "00 00 30 39 " Z4 INC_BE Z8 "00 00 00 03 " Z4, 0, NULL, true,
	  4, "fd00::1@tcp3", "192.168.1.1@tcp", 12345, INC, TCPLND_CONN_BULK_OUT, 0 },

	/* ---- ksock_msg_hdr ---- */
	{ "msghdr LNET native", K_MSGHDR, "c1 00 00 00 " Z4 "05 00 00 00 00 00 00 00 " Z8, 0, NULL, false,
	  .type = TCPLND_MSG_LNET, .c0 = 5 },
	{ "msghdr LNET swapped", K_MSGHDR, "00 00 00 c1 " Z4 "00 00 00 00 00 00 00 05 " Z8, 0, NULL, true,
	  .type = TCPLND_MSG_LNET, .c0 = 5 },
	{ "msghdr NOOP keepalive", K_MSGHDR, "c0 00 00 00 " Z4 Z8 "01 00 00 00 00 00 00 00", 0, NULL, false,
	  .type = TCPLND_MSG_NOOP, .c1 = 1 },
	{ "msghdr NOOP range", K_MSGHDR, "c0 00 00 00 " Z4 "07 00 00 00 00 00 00 00 09 00 00 00 00 00 00 00", 0,
	  NULL, false, .type = TCPLND_MSG_NOOP, .c0 = 7, .c1 = 9 },
	{ "msghdr type 0xc2", K_MSGHDR, "c2 00 00 00 " Z4 Z8 Z8, -EPROTO, "ksh_type" },
	{ "msghdr type 0", K_MSGHDR, Z4 Z4 Z8 Z8, -EPROTO, "ksh_type" },
};

#include "hex.h"

static void want_nid(const char *str, const struct ulnet_nid *got)
{
	struct ulnet_nid n;
	char a[ULNET_NID_STRLEN], b[ULNET_NID_STRLEN];

	if (!str) {
		assert_true(ulnet_nid_is_any(got));
		return;
	}
	assert_int_equal(ulnet_nid_parse(str, &n, NULL), 0);
	if (!ulnet_nid_equal(&n, got))
		fail_msg("nid %s != %s", ulnet_nid_format(&n, a, sizeof(a)), ulnet_nid_format(got, b, sizeof(b)));
}

/* Decode @len bytes of @buf as the row's kind. */
static int decode(const struct wcase *c, const uint8_t *buf, size_t len, struct ulnet_wire_err *err,
		  struct tcplnd_connreq *cr, struct tcplnd_hello *h, struct tcplnd_msg_hdr *mh)
{
	size_t tail = 0;
	int rc;

	switch (c->kind) {
	case K_CONNREQ:
		return tcplnd_connreq_unpack(buf, len, cr, err);
	case K_HELLO:
		rc = tcplnd_hello_unpack(buf, len, h, &tail, err);
		if (rc)
			return rc;
		{
			size_t fixed = len - 0;
			uint32_t v;
			bool sw;

			assert_int_equal(tcplnd_hello_peek(buf, len, &v, &sw, &fixed, err), 0);
			if (len < fixed + tail)
				return ulnet_wire_fail(err, "kshm_ips", fixed, len, fixed + tail);
			return tcplnd_hello_unpack_ips(buf + fixed, tail, h, err);
		}
	case K_MSGHDR:
		return tcplnd_msg_hdr_unpack(buf, len, c->swapped, mh, err);
	}
	return -1;
}

static void run_case(void **state)
{
	const struct wcase *c = *state;
	uint8_t buf[256], out[256];
	size_t len = hex_decode(c->hex, buf, sizeof(buf)), i;
	struct ulnet_wire_err err = { 0 };
	struct tcplnd_connreq cr;
	struct tcplnd_hello h;
	struct tcplnd_msg_hdr mh;
	int rc;

	memset(&h, 0, sizeof(h));
	rc = decode(c, buf, len, &err, &cr, &h, &mh);
	assert_int_equal(rc, c->rc);
	if (rc) {
		assert_non_null(err.field);
		if (c->bad_field)
			assert_string_equal(err.field, c->bad_field);
		return;
	}
	switch (c->kind) {
	case K_CONNREQ:
		assert_int_equal(cr.version, c->version);
		assert_int_equal(cr.swab, c->swapped);
		want_nid(c->nid, &cr.nid);
		/* we send v2 only for NIDs that do not fit nid4 */
		if (!c->swapped && (cr.version == 1 || !ulnet_nid_is_nid4(&cr.nid))) {
			assert_int_equal(tcplnd_connreq_pack(&cr.nid, out, sizeof(out)), (int)len);
			assert_memory_equal(out, buf, len);
		}
		break;
	case K_HELLO:
		assert_int_equal(h.version, c->version);
		assert_int_equal(h.swab, c->swapped && c->version != 1);
		want_nid(c->nid, &h.src_nid);
		want_nid(c->dst, &h.dst_nid);
		assert_int_equal(h.src_pid, c->src_pid);
		assert_int_equal(h.dst_pid, 0);
		assert_true(h.src_incarnation == c->inc);
		assert_true(h.dst_incarnation == 0);
		assert_int_equal(h.ctype, c->ctype);
		assert_int_equal(h.nips, c->nips);
		if (!c->swapped && !c->nips) { /* we always send nips = 0 */
			assert_int_equal(tcplnd_hello_pack(&h, out, sizeof(out)), (int)len);
			assert_memory_equal(out, buf, len);
		}
		break;
	case K_MSGHDR:
		assert_int_equal(mh.type, c->type);
		assert_true(mh.csum == 0);
		assert_true(mh.zc_cookies[0] == c->c0);
		assert_true(mh.zc_cookies[1] == c->c1);
		if (!c->swapped) {
			tcplnd_msg_hdr_pack(&mh, out);
			assert_memory_equal(out, buf, TCPLND_MSG_HDR_SIZE);
		}
		break;
	}
	/* every truncation fails cleanly; exact-size heap copies let ASan see any over-read */
	for (i = 0; i < len; i++) {
		uint8_t *cut = malloc(i ? i : 1);

		memcpy(cut, buf, i);
		memset(&err, 0, sizeof(err));
		rc = decode(c, cut, i, &err, &cr, &h, &mh);
		if (rc == 0)
			fail_msg("%s: cut at %zu decoded", c->name, i);
		assert_non_null(err.field);
		free(cut);
	}
}

static void test_crc32(void **state)
{
	(void)state;
	/* crc32_le(~0, "123456789") without the final inversion = ~0xCBF43926 */
	assert_int_equal(tcplnd_crc32(~0u, "123456789", 9), 0x340BC6D9u);
	assert_int_equal(tcplnd_crc32(tcplnd_crc32(~0u, "1234", 4), "56789", 5), 0x340BC6D9u);
}

static void test_connreq_version_reply(void **state)
{
	uint8_t out[16];
	const uint8_t want[16] = { 0x00, 0x71, 0xce, 0xac, 1, 0, 0, 0 };

	(void)state;
	tcplnd_connreq_pack_version(out);
	assert_memory_equal(out, want, 16);
}

static void test_ctype(void **state)
{
	(void)state;
	assert_int_equal(tcplnd_ctype_invert(TCPLND_CONN_BULK_IN), TCPLND_CONN_BULK_OUT);
	assert_int_equal(tcplnd_ctype_invert(TCPLND_CONN_BULK_OUT), TCPLND_CONN_BULK_IN);
	assert_int_equal(tcplnd_ctype_invert(TCPLND_CONN_CONTROL), TCPLND_CONN_CONTROL);
	assert_int_equal(tcplnd_ctype_invert(TCPLND_CONN_ANY), TCPLND_CONN_ANY);
	assert_int_equal(tcplnd_ctype_invert(4), TCPLND_CONN_NONE);
	assert_int_equal(tcplnd_ctype_invert(TCPLND_CONN_NONE), TCPLND_CONN_NONE);
}

static void test_hello_pack_errors(void **state)
{
	struct tcplnd_hello h = { .version = 3 };
	uint8_t out[128];

	(void)state;
	assert_int_equal(ulnet_nid_parse("fd00::1@tcp", &h.src_nid, NULL), 0);
	h.dst_nid = h.src_nid;
	assert_int_equal(tcplnd_hello_pack(&h, out, sizeof(out)), -EINVAL); /* V3 cannot carry IPv6 */
	h.version = 4;
	assert_int_equal(tcplnd_hello_pack(&h, out, 79), -ENOSPC);
	assert_int_equal(tcplnd_hello_pack(&h, out, sizeof(out)), 80);
	h.version = 5;
	assert_int_equal(tcplnd_hello_pack(&h, out, sizeof(out)), -EINVAL);
}

/* A hello fault rule's version on a packed HELLO: the receiver's peek refuses it, naming the value. */
static void test_hello_set_version(void **state)
{
	struct tcplnd_hello h = { .version = 3, .ctype = TCPLND_CONN_CONTROL };
	struct ulnet_wire_err err = { 0 };
	uint32_t version = 0;
	size_t fixed = 0;
	uint8_t out[128];
	bool swab;
	int n;

	(void)state;
	assert_int_equal(ulnet_nid_parse("10.0.0.1@tcp", &h.src_nid, NULL), 0);
	h.dst_nid = h.src_nid;
	for (uint32_t v = 1; v <= 3; v++) {
		h.version = v;
		n = tcplnd_hello_pack(&h, out, sizeof(out));
		assert_true(n > 0);
		assert_int_equal(tcplnd_hello_peek(out, (size_t)n, &version, &swab, &fixed, &err), 0);
		assert_int_equal(version, v);
		tcplnd_hello_set_version(out, (size_t)n, 0xbad);
		assert_int_equal(tcplnd_hello_peek(out, (size_t)n, &version, &swab, &fixed, &err), -EPROTONOSUPPORT);
		assert_int_equal(err.offset, 4);
		if (v > 1)
			assert_int_equal(err.got, 0xbad);
		else /* V1: major and minor in one value */
			assert_int_equal(err.got, 0xbadull << 16);
	}
}

static void test_zcack_check(void **state)
{
	struct ulnet_wire_err err;
	struct tcplnd_msg_hdr noop = { .type = TCPLND_MSG_NOOP }, lnet = { .type = TCPLND_MSG_LNET };

	(void)state;
	assert_int_equal(tcplnd_zcack_check(3, &noop, &err), 0);               /* {0,0} */
	noop.zc_cookies[1] = 1;
	assert_int_equal(tcplnd_zcack_check(3, &noop, &err), 0);               /* keepalive */
	assert_int_equal(tcplnd_zcack_check(2, &noop, &err), -EPROTO);         /* V2 has no keepalive */
	noop.zc_cookies[0] = 5;
	assert_int_equal(tcplnd_zcack_check(3, &noop, &err), -EPROTO);         /* range 5..1 unknown */
	noop.zc_cookies[0] = 0;
	noop.zc_cookies[1] = 7;
	assert_int_equal(tcplnd_zcack_check(3, &noop, &err), -EPROTO);         /* unknown cookie */
	assert_string_equal(err.field, "ksh_zc_cookies");
	assert_true(err.got == 7);
	lnet.zc_cookies[0] = 9; /* a ZC request, not an ACK */
	assert_int_equal(tcplnd_zcack_check(3, &lnet, &err), 0);
	lnet.zc_cookies[1] = 1;
	assert_int_equal(tcplnd_zcack_check(3, &lnet, &err), 0);
	lnet.zc_cookies[1] = 3;
	assert_int_equal(tcplnd_zcack_check(3, &lnet, &err), -EPROTO);
}

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]), i;
	struct CMUnitTest *t = calloc(n + 6, sizeof(*t));

	for (i = 0; i < n; i++) {
		t[i].name = cases[i].name;
		t[i].test_func = run_case;
		t[i].initial_state = (void *)&cases[i];
	}
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_crc32);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_connreq_version_reply);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_ctype);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_hello_pack_errors);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_hello_set_version);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_zcack_check);
	i = (size_t)_cmocka_run_group_tests("tcp_wire", t, n, NULL, NULL);
	free(t);
	return (int)i;
}
