/* SPDX-License-Identifier: MIT */
/* The large payload rendezvous' pure parts (src/core/large_wire.c, docs/large.md): match bits, DONE's
 * header data, the descriptor codec and every check it makes, table-driven. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "large_wire.h"

#define MIB (1u << 20)

static void test_bits(void **state)
{
	static const struct { unsigned kind; uint64_t arg, want; } t[] = {
		{ ULNET_LARGE_ANNOUNCE, 1, UINT64_C(0x756c010000000001) },
		{ ULNET_LARGE_DESC, UINT64_C(0xffffffffff), UINT64_C(0x756c02ffffffffff) },
		{ ULNET_LARGE_DATA, UINT64_C(0x1ffffffffff), UINT64_C(0x756c03ffffffffff) }, /* arg cut to 40 bits */
		{ ULNET_LARGE_DONE, 64 * MIB, UINT64_C(0x756c040004000000) },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t b = ulnet_large_bits(t[i].kind, t[i].arg);

		assert_true(b == t[i].want);
		assert_int_equal(ulnet_large_bits_kind(b), t[i].kind);
	}
	/* LNet's ping and push match bits, anything else: not ours */
	assert_int_equal(ulnet_large_bits_kind(UINT64_C(0x8000000000000000)), 0);
	assert_int_equal(ulnet_large_bits_kind(UINT64_C(0x4000000000000000)), 0);
	assert_int_equal(ulnet_large_bits_kind(0), 0);
}

static void test_done_data(void **state)
{
	static const struct { uint64_t cookie; int status; bool acked; } t[] = {
		{ 0, 0, false }, { 0xffffffffffull, -ENOENT, false }, { 12345, 0, true }, { 7, -4095, false },
		{ 9, -ETIMEDOUT, false },
	};
	uint64_t c;
	int st;
	bool ack;

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t d = ulnet_large_done_data(t[i].cookie, t[i].status, t[i].acked);

		assert_int_equal(ulnet_large_done_parse(d, &c, &st, &ack), 0);
		assert_true(c == t[i].cookie);
		assert_int_equal(st, t[i].status);
		assert_int_equal(ack, t[i].acked);
	}
	/* an errno beyond 4095 is sent as EIO */
	assert_int_equal(ulnet_large_done_parse(ulnet_large_done_data(1, -5000, false), &c, &st, &ack), 0);
	assert_int_equal(st, -EIO);
	/* reserved bits */
	assert_int_equal(ulnet_large_done_parse(UINT64_C(1) << 57, &c, &st, &ack), -EPROTO);
	assert_int_equal(ulnet_large_done_parse(UINT64_C(1) << 52, &c, &st, &ack), -EPROTO);
	assert_int_equal(ulnet_large_done_parse(UINT64_C(1) << 63, &c, &st, &ack), -EPROTO);
}

static const struct ulnet_large_desc good = {
	.kind = ULNET_LARGE_OP_PUT, .ack = true, .portal = 7, .match_bits = UINT64_C(0x0123456789abcdef),
	.offset = 4097, .hdr_data = UINT64_C(0xfeedface00c0ffee), .length = 16 * MIB, .cookie = 0x42,
};

static void test_desc_round_trip(void **state)
{
	uint8_t buf[ULNET_LARGE_DESC_SIZE];
	struct ulnet_large_desc d;
	const char *why;

	(void)state;
	ulnet_large_desc_pack(&good, buf);
	/* little-endian whatever the host */
	assert_int_equal(buf[0], 0x56);
	assert_int_equal(buf[3], 0x55);
	assert_int_equal(buf[32], 0x01);
	assert_int_equal(buf[33], 0x10);
	assert_int_equal(ulnet_large_desc_unpack(buf, sizeof(buf), ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, &d, &why), 0);
	assert_int_equal(d.kind, good.kind);
	assert_int_equal(d.ack, good.ack);
	assert_int_equal(d.portal, good.portal);
	assert_true(d.match_bits == good.match_bits);
	assert_int_equal(d.offset, good.offset);
	assert_true(d.hdr_data == good.hdr_data);
	assert_int_equal(d.length, good.length);
	assert_true(d.cookie == good.cookie);
}

/* One field spoilt at a time: the error and the field named. */
static void test_desc_checks(void **state)
{
	static const struct {
		size_t off;        /* byte to overwrite, or SIZE_MAX: none */
		uint8_t val;
		size_t len;        /* buffer length given */
		unsigned kind;     /* announced */
		uint64_t cookie;   /* announced */
		uint32_t max;
		int rc;
		const char *why;
	} t[] = {
		{ SIZE_MAX, 0, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, 0, NULL },
		{ SIZE_MAX, 0, ULNET_LARGE_DESC_SIZE - 1, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, -EPROTO, "length" },
		{ SIZE_MAX, 0, 0, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, -EPROTO, "length" },
		{ 0, 0, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, -EPROTO, "magic" },
		{ 4, 2, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, -EPROTO, "version" },
		{ SIZE_MAX, 0, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_GET, 0x42, 64 * MIB, -EPROTO, "kind" },
		{ 6, 9, ULNET_LARGE_DESC_SIZE, 9, 0x42, 64 * MIB, -EPROTO, "kind" },
		{ 8, 64, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, -EPROTO, "portal" },
		{ 11, 1, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, -EPROTO, "portal" },
		{ 12, 2, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, -EPROTO, "flags" },
		{ 40, 0x43, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, -EPROTO, "cookie" },
		{ SIZE_MAX, 0, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x43, 64 * MIB, -EPROTO, "cookie" },
		{ 38, 0x10, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, -EPROTO, "length" }, /* 1 MiB */
		{ 38, 0x00, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 64 * MIB, -EPROTO, "length" }, /* 4097 */
		{ SIZE_MAX, 0, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 16 * MIB - 1, -EMSGSIZE, "length" },
		{ 39, 0xff, ULNET_LARGE_DESC_SIZE, ULNET_LARGE_OP_PUT, 0x42, 1u << 30, -EMSGSIZE, "length" },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint8_t buf[ULNET_LARGE_DESC_SIZE];
		struct ulnet_large_desc d;
		const char *why;
		int rc;

		ulnet_large_desc_pack(&good, buf);
		if (t[i].off != SIZE_MAX)
			buf[t[i].off] = t[i].val;
		if (t[i].off == 38 && t[i].val == 0x10) { /* length exactly LNET_MTU */
			memset(buf + 36, 0, 4);
			buf[38] = 0x10;
		} else if (t[i].off == 38) {
			memset(buf + 36, 0, 4);
			buf[36] = 0x01;
			buf[37] = 0x10;
		}
		rc = ulnet_large_desc_unpack(buf, t[i].len, t[i].kind, t[i].cookie, t[i].max, &d, &why);
		if (rc != t[i].rc || (t[i].why && (!why || strcmp(why, t[i].why))))
			fail_msg("case %u: rc %d why %s, want %d %s", i, rc, why ? why : "-", t[i].rc,
				 t[i].why ? t[i].why : "-");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bits),
		cmocka_unit_test(test_done_data),
		cmocka_unit_test(test_desc_round_trip),
		cmocka_unit_test(test_desc_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
