/* SPDX-License-Identifier: MIT */
/* Table tests for the ping info codec (lnet-wire.md §2.4). Vectors are written by hand from the spec
 * table; each native-order vector has a byte-swapped twin (a sender of the other endianness) that must
 * decode to the same result. One row = one named test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hdr.h"

#define PING_MAX 2048

#include "hex.h"
#include "nid_assert.h"

/* ---- vectors: little-endian sender (LE) and its big-endian twin (BE) ---- */

#define LE_MAGIC "676e6970" /* pi_magic 0x70696e67 */
#define BE_MAGIC "70696e67"
#define LE_PID "39300000"   /* pi_pid 12345 */
#define BE_PID "00003039"
#define LE_LO "0000000000000900" /* ns_nid 0@lo = 0x0009000000000000 */
#define BE_LO "0009000000000000"
#define LE_O2IB "0101a8c000000500" /* ns_nid 192.168.1.1@o2ib = 0x00050000c0a80101 */
#define BE_O2IB "00050000c0a80101"
#define LE_TCP1 "0100000a01000200" /* ns_nid 10.0.0.1@tcp1 = 0x000200010a000001 */
#define BE_TCP1 "000200010a000001"
#define LE_UP "dec0aa15"   /* ns_status UP 0x15aac0de */
#define BE_UP "15aac0de"
#define LE_DOWN "cefaadde" /* ns_status DOWN 0xdeadface */
#define BE_DOWN "deadface"
/* large NID image, never swapped: nid_size 12, nid_type 2, nid_num 0, 2001:db8::1 */
#define N16_V6 "0c020000" "20010db8" "00000000" "00000000" "00000001"

/* features BASE|NI_STATUS|MULTI_RAIL|DISCOVERY = 0x1b; three nid4 entries; 64 bytes */
#define PING3_LE                                                                                    \
	LE_MAGIC "1b000000" LE_PID "03000000"                                                       \
	LE_LO "07000000" "00000000"   /* seq 7 */                                                   \
	LE_O2IB LE_UP "00100000"      /* msg_size 4096 */                                           \
	LE_TCP1 LE_DOWN "00000100"    /* msg_size 65536 */
#define PING3_BE                                                                                    \
	BE_MAGIC "0000001b" BE_PID "00000003"                                                       \
	BE_LO "00000007" "00000000"                                                                 \
	BE_O2IB BE_UP "00001000"                                                                    \
	BE_TCP1 BE_DOWN "00010000"

/* features 0x3b (+LARGE_ADDR); two nid4 entries, then one IPv6 entry; total 16 + 32 + 24 = 72 bytes */
#define PING_V6_LE                                                                                  \
	LE_MAGIC "3b000000" LE_PID "02000000"                                                       \
	LE_LO "2a000000" "48000000"   /* seq 42, ns_msg_size = total 72 */                          \
	LE_TCP1 LE_UP "00100000"                                                                    \
	LE_UP N16_V6                  /* lnet_ni_large_status */
#define PING_V6_BE                                                                                  \
	BE_MAGIC "0000003b" BE_PID "00000002"                                                       \
	BE_LO "0000002a" "00000048"                                                                 \
	BE_TCP1 BE_UP "00001000"                                                                    \
	BE_UP N16_V6

#define NID4(t, n, a) { .size = 0, .type = (t), .num = (n), .addr = { (a), 0, 0, 0 } }
#define W_LO NID4(ULNET_LND_LO, 0, 0)
#define W_O2IB NID4(ULNET_LND_O2IB, 0, 0xc0a80101)
#define W_TCP1 NID4(ULNET_LND_SOCK, 1, 0x0a000001)
#define W_V6 { .size = 12, .type = ULNET_LND_SOCK, .num = 0, .addr = { 0x20010db8, 0, 0, 1 } }
#define UP 0x15aac0deu
#define DOWN 0xdeadfaceu

struct ping_case {
	const char *name;
	const char *hex;        /* as the peer sends it */
	const char *twin;       /* the same info from a sender of the other byte order, or NULL */
	int rc;                 /* 0 or -EPROTO */
	const char *bad_field;  /* err.field when rc != 0 */
	size_t bad_off;         /* err.offset when rc != 0 */
	struct ulnet_ping_info want;
};

static const struct ping_case ping_cases[] = {
	{ .name = "ping: three nid4 entries, little-endian sender", .hex = PING3_LE, .twin = PING3_BE,
	  .want = { .features = 0x1b, .pid = 12345, .n_ni = 3,
		    .ni = { { W_LO, 7, 0 }, { W_O2IB, UP, 4096 }, { W_TCP1, DOWN, 65536 } } } },
	{ .name = "ping: three nid4 entries, big-endian sender", .hex = PING3_BE, .twin = PING3_LE,
	  .want = { .features = 0x1b, .pid = 12345, .n_ni = 3,
		    .ni = { { W_LO, 7, 0 }, { W_O2IB, UP, 4096 }, { W_TCP1, DOWN, 65536 } } } },
	{ .name = "ping: only 0@lo", .hex = LE_MAGIC "03000000" LE_PID "01000000" LE_LO "01000000" "00000000",
	  .twin = BE_MAGIC "00000003" BE_PID "00000001" BE_LO "00000001" "00000000",
	  .want = { .features = 3, .pid = 12345, .n_ni = 1, .ni = { { W_LO, 1, 0 } } } },
	{ .name = "ping: LARGE_ADDR with one IPv6 entry, little-endian sender", .hex = PING_V6_LE,
	  .twin = PING_V6_BE,
	  .want = { .features = 0x3b, .pid = 12345, .n_ni = 3,
		    .ni = { { W_LO, 42, 72 }, { W_TCP1, UP, 4096 }, { W_V6, UP, 0 } } } },
	{ .name = "ping: LARGE_ADDR with one IPv6 entry, big-endian sender (NID bytes unswapped)",
	  .hex = PING_V6_BE, .twin = PING_V6_LE,
	  .want = { .features = 0x3b, .pid = 12345, .n_ni = 3,
		    .ni = { { W_LO, 42, 72 }, { W_TCP1, UP, 4096 }, { W_V6, UP, 0 } } } },

	/* ---- bad ---- */
	{ .name = "bad ping: magic 0x70696e68", .rc = -EPROTO, .bad_field = "pi_magic", .bad_off = 0,
	  .hex = "686e6970" "1b000000" LE_PID "03000000" LE_LO "07000000" "00000000"
		 LE_O2IB LE_UP "00100000" LE_TCP1 LE_DOWN "00000100" },
	{ .name = "bad ping: NI_STATUS feature missing", .rc = -EPROTO, .bad_field = "pi_features",
	  .bad_off = 4,
	  .hex = LE_MAGIC "19000000" LE_PID "03000000" LE_LO "07000000" "00000000"
		 LE_O2IB LE_UP "00100000" LE_TCP1 LE_DOWN "00000100" },
	{ .name = "bad ping: NI_STATUS missing, big-endian sender", .rc = -EPROTO, .bad_field = "pi_features",
	  .bad_off = 4,
	  .hex = BE_MAGIC "00000019" BE_PID "00000003" BE_LO "00000007" "00000000"
		 BE_O2IB BE_UP "00001000" BE_TCP1 BE_DOWN "00010000" },
	{ .name = "bad ping: pi_nnis 0", .rc = -EPROTO, .bad_field = "pi_nnis", .bad_off = 12,
	  .hex = LE_MAGIC "1b000000" LE_PID "00000000" LE_LO "07000000" "00000000" },
	{ .name = "bad ping: pi_nnis 4097", .rc = -EPROTO, .bad_field = "pi_nnis", .bad_off = 12,
	  .hex = LE_MAGIC "1b000000" LE_PID "01100000" LE_LO "07000000" "00000000"
		 LE_O2IB LE_UP "00100000" LE_TCP1 LE_DOWN "00000100" },
	{ .name = "bad ping: pi_nnis 4 but three entries sent", .rc = -EPROTO, .bad_field = "pi_ni",
	  .bad_off = 16,
	  .hex = LE_MAGIC "1b000000" LE_PID "04000000" LE_LO "07000000" "00000000"
		 LE_O2IB LE_UP "00100000" LE_TCP1 LE_DOWN "00000100" },
	{ .name = "bad ping: entry 0 is not 0@lo", .rc = -EPROTO, .bad_field = "ns_nid", .bad_off = 16,
	  .hex = LE_MAGIC "1b000000" LE_PID "03000000" LE_O2IB LE_UP "00100000"
		 LE_LO "07000000" "00000000" LE_TCP1 LE_DOWN "00000100" },
	{ .name = "bad ping: entry 0 is not 0@lo, big-endian sender", .rc = -EPROTO, .bad_field = "ns_nid",
	  .bad_off = 16,
	  .hex = BE_MAGIC "0000001b" BE_PID "00000003" BE_TCP1 BE_UP "00001000"
		 BE_LO "00000007" "00000000" BE_O2IB BE_DOWN "00010000" },
	{ .name = "bad ping: nid4 entry with LND type 0x102", .rc = -EPROTO, .bad_field = "ns_nid",
	  .bad_off = 32,
	  .hex = LE_MAGIC "1b000000" LE_PID "02000000" LE_LO "07000000" "00000000"
		 "0100000a01000201" LE_UP "00100000" },
	{ .name = "bad ping: LARGE_ADDR total (76) beyond what arrived (72)", .rc = -EPROTO,
	  .bad_field = "ns_msg_size", .bad_off = 28,
	  .hex = LE_MAGIC "3b000000" LE_PID "02000000" LE_LO "2a000000" "4c000000"
		 LE_TCP1 LE_UP "00100000" LE_UP N16_V6 },
	{ .name = "bad ping: LARGE_ADDR total (40) inside the nid4 entries", .rc = -EPROTO,
	  .bad_field = "ns_msg_size", .bad_off = 28,
	  .hex = LE_MAGIC "3b000000" LE_PID "02000000" LE_LO "2a000000" "28000000"
		 LE_TCP1 LE_UP "00100000" LE_UP N16_V6 },
	{ .name = "bad ping: LARGE_ADDR total cuts the IPv6 entry", .rc = -EPROTO,
	  .bad_field = "lnet_ni_large_status", .bad_off = 48,
	  .hex = LE_MAGIC "3b000000" LE_PID "02000000" LE_LO "2a000000" "44000000"
		 LE_TCP1 LE_UP "00100000" LE_UP N16_V6 },
	{ .name = "bad ping: large entry with nid_size 8", .rc = -EPROTO, .bad_field = "ns_nid",
	  .bad_off = 52,
	  .hex = LE_MAGIC "3b000000" LE_PID "02000000" LE_LO "2a000000" "44000000"
		 LE_TCP1 LE_UP "00100000" LE_UP "08020000" "20010db8" "00000000" "00000001" },
};


static void assert_ping_equal(const struct ulnet_ping_info *want, const struct ulnet_ping_info *got)
{
	assert_int_equal(got->features, want->features);
	assert_int_equal(got->pid, want->pid);
	assert_int_equal(got->n_ni, want->n_ni);
	for (uint32_t i = 0; i < want->n_ni; i++) {
		assert_nid_equal(&want->ni[i].nid, &got->ni[i].nid);
		assert_int_equal(got->ni[i].status, want->ni[i].status);
		assert_int_equal(got->ni[i].msg_size, want->ni[i].msg_size);
	}
}

/* Every prefix of a good vector fails cleanly; each sits in a buffer of exactly its size. */
static void check_truncations(const uint8_t *buf, size_t size)
{
	for (size_t cut = 0; cut < size; cut++) {
		uint8_t *part = malloc(cut ? cut : 1);
		struct ulnet_wire_err err = { 0 };
		struct ulnet_ping_info out;

		assert_non_null(part);
		memcpy(part, buf, cut);
		assert_int_equal(ulnet_ping_info_unpack(part, cut, &out, &err), -EPROTO);
		assert_non_null(err.field);
		assert_true(err.offset <= cut);
		free(part);
	}
}

static void run_ping_case(void **state)
{
	const struct ping_case *c = *state;
	uint8_t buf[PING_MAX], twin[PING_MAX], again[PING_MAX];
	struct ulnet_wire_err err = { 0 };
	struct ulnet_ping_info got, got_twin;
	const uint8_t *native;
	size_t len = hex_decode(c->hex, buf, sizeof(buf)), twin_len = 0;
	int n;

	if (c->rc != 0) {
		assert_int_equal(ulnet_ping_info_unpack(buf, len, &got, &err), c->rc);
		assert_non_null(err.field);
		assert_string_equal(err.field, c->bad_field);
		assert_int_equal(err.offset, c->bad_off);
		assert_int_equal(ulnet_ping_info_unpack(buf, len, &got, NULL), c->rc);
		return;
	}
	assert_int_equal(ulnet_ping_info_unpack(buf, len, &got, &err), 0);
	assert_ping_equal(&c->want, &got);

	assert_non_null(c->twin);
	twin_len = hex_decode(c->twin, twin, sizeof(twin));
	assert_int_equal(twin_len, len);
	assert_memory_not_equal(twin, buf, len); /* a real twin, not a copy */
	assert_int_equal(ulnet_ping_info_unpack(twin, twin_len, &got_twin, &err), 0);
	assert_ping_equal(&c->want, &got_twin);

	/* repack: we always send native order, so the result is whichever of the pair is native */
	native = (buf[0] == 0x67) == ulnet_host_is_le() ? buf : twin;
	memset(again, 0xaa, sizeof(again));
	n = ulnet_ping_info_pack(&got, again, sizeof(again));
	assert_int_equal(n, (int)len);
	assert_memory_equal(again, native, len);
	assert_int_equal(again[len], 0xaa);
	/* exactly enough room works, one byte less does not */
	assert_int_equal(ulnet_ping_info_pack(&got, again, len), (int)len);
	assert_int_equal(ulnet_ping_info_pack(&got, again, len - 1), -ENOSPC);

	check_truncations(buf, len);
	check_truncations(twin, twin_len);
}

/* ---- single tests ---- */

/* Write one LE nid4 entry by hand (not with the encoder under test). */
static size_t put_entry_le(uint8_t *p, uint64_t nid, uint32_t status, uint32_t msg_size)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(nid >> (8 * i));
	for (int i = 0; i < 4; i++) {
		p[8 + i] = (uint8_t)(status >> (8 * i));
		p[12 + i] = (uint8_t)(msg_size >> (8 * i));
	}
	return 16;
}

/* A peer with more NIDs than we keep: the first ULNET_PING_INFO_MAX_NIDS are kept, no failure. */
static void test_unpack_keeps_max_nids(void **state)
{
	const uint32_t nnis = ULNET_PING_INFO_MAX_NIDS + 2;
	static uint8_t buf[16 + 16 * (ULNET_PING_INFO_MAX_NIDS + 2)];
	struct ulnet_ping_info got;
	const struct ulnet_ping_ni *last = &got.ni[ULNET_PING_INFO_MAX_NIDS - 1];
	struct ulnet_wire_err err = { 0 };
	size_t off;

	(void)state;
	assert_int_equal(hex_decode(LE_MAGIC "1b000000" LE_PID, buf, 12), 12);
	buf[12] = (uint8_t)nnis; /* pi_nnis, LE */
	buf[13] = (uint8_t)(nnis >> 8);
	buf[14] = buf[15] = 0;
	off = 16 + put_entry_le(buf + 16, ULNET_NID_LO_0, 9, 0);
	for (uint32_t i = 1; i < nnis; i++) /* 10.0.0.<i>@tcp */
		off += put_entry_le(buf + off, UINT64_C(0x000200000a000000) | i, UP, i);
	assert_int_equal(off, sizeof(buf));
	assert_int_equal(ulnet_ping_info_unpack(buf, sizeof(buf), &got, &err), 0);
	assert_int_equal(got.n_ni, ULNET_PING_INFO_MAX_NIDS);
	assert_int_equal(got.ni[0].status, 9);
	assert_int_equal(last->nid.addr[0], 0x0a000000u | (ULNET_PING_INFO_MAX_NIDS - 1));
	assert_int_equal(last->msg_size, ULNET_PING_INFO_MAX_NIDS - 1);
}

/* pi_nnis 4096 is the largest accepted count; the limit is on the wire count, not on what we keep. */
static void test_unpack_nnis_4096(void **state)
{
	const uint32_t nnis = 4096;
	uint8_t *buf = calloc(16 + 16 * (size_t)nnis, 1);
	struct ulnet_ping_info *got = malloc(sizeof(*got));
	struct ulnet_wire_err err = { 0 };
	size_t off;

	(void)state;
	assert_non_null(buf);
	assert_non_null(got);
	assert_int_equal(hex_decode(LE_MAGIC "1b000000" LE_PID "00100000", buf, 16), 16);
	off = 16;
	for (uint32_t i = 0; i < nnis; i++) /* 0@lo, then 0.0.<i>@o2ib */
		off += put_entry_le(buf + off, i ? UINT64_C(0x0005000000000000) | i : ULNET_NID_LO_0, UP, 0);
	assert_int_equal(ulnet_ping_info_unpack(buf, off, got, &err), 0);
	assert_int_equal(got->n_ni, ULNET_PING_INFO_MAX_NIDS);
	assert_int_equal(got->ni[1].nid.type, ULNET_LND_O2IB);
	free(got);
	free(buf);
}

/* Pack decides LARGE_ADDR from the entries: set (with entry 0's msg_size = total) when a large NID is
 * present, cleared otherwise; METADATA is never claimed since no metadata block is sent. */
static void test_pack_feature_bits(void **state)
{
	struct ulnet_ping_info pi = {
		.features = ULNET_PING_FEAT_BASE | ULNET_PING_FEAT_NI_STATUS | ULNET_PING_FEAT_LARGE_ADDR |
			    ULNET_PING_FEAT_METADATA,
		.pid = 12345, .n_ni = 2,
		.ni = { { W_LO, 5, 777 }, { W_O2IB, UP, 4096 } },
	};
	uint8_t out[PING_MAX];
	struct ulnet_ping_info back;
	struct ulnet_wire_err err = { 0 };
	const struct ulnet_nid v6 = W_V6;

	(void)state;
	assert_int_equal(ulnet_ping_info_pack(&pi, out, sizeof(out)), 48);
	assert_int_equal(ulnet_ping_info_unpack(out, 48, &back, &err), 0);
	assert_int_equal(back.features, ULNET_PING_FEAT_BASE | ULNET_PING_FEAT_NI_STATUS);
	assert_int_equal(back.ni[0].msg_size, 777); /* no LARGE_ADDR: passed through */

	/* a large NID listed first still goes after the nid4 entries */
	pi.n_ni = 3;
	pi.ni[2] = pi.ni[1];
	pi.ni[1] = (struct ulnet_ping_ni){ v6, DOWN, 0 };
	assert_int_equal(ulnet_ping_info_pack(&pi, out, sizeof(out)), 16 + 32 + 24);
	assert_int_equal(ulnet_ping_info_unpack(out, 72, &back, &err), 0);
	assert_int_equal(back.features,
			 ULNET_PING_FEAT_BASE | ULNET_PING_FEAT_NI_STATUS | ULNET_PING_FEAT_LARGE_ADDR);
	assert_int_equal(back.n_ni, 3);
	assert_int_equal(back.ni[0].msg_size, 72);
	assert_int_equal(back.ni[1].nid.type, ULNET_LND_O2IB);
	assert_nid_equal(&v6, &back.ni[2].nid);
	assert_int_equal(back.ni[2].status, DOWN);
}

static void test_pack_rejects_bad_input(void **state)
{
	struct ulnet_ping_info pi = { .features = 3, .pid = 1, .n_ni = 0 };
	const struct ulnet_nid v6 = W_V6;
	uint8_t out[PING_MAX];

	(void)state;
	assert_int_equal(ulnet_ping_info_pack(&pi, out, sizeof(out)), -EINVAL); /* no entries */
	pi.n_ni = 1;
	pi.ni[0].nid = v6;
	assert_int_equal(ulnet_ping_info_pack(&pi, out, sizeof(out)), -EINVAL); /* no nid4 entry */
	pi.n_ni = ULNET_PING_INFO_MAX_NIDS + 1;
	assert_int_equal(ulnet_ping_info_pack(&pi, out, sizeof(out)), -EINVAL);
}

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

int main(void)
{
	struct CMUnitTest rows[N_ELEMS(ping_cases)];
	const struct CMUnitTest single[] = {
		cmocka_unit_test(test_unpack_keeps_max_nids),
		cmocka_unit_test(test_unpack_nnis_4096),
		cmocka_unit_test(test_pack_feature_bits),
		cmocka_unit_test(test_pack_rejects_bad_input),
	};
	int failed = 0;

	for (size_t i = 0; i < N_ELEMS(ping_cases); i++)
		rows[i] = (struct CMUnitTest){ .name = ping_cases[i].name, .test_func = run_ping_case,
					       .initial_state = (void *)&ping_cases[i] };
	failed += _cmocka_run_group_tests("ping_wire rows", rows, N_ELEMS(rows), NULL, NULL);
	failed += cmocka_run_group_tests_name("ping_wire", single, NULL, NULL);
	return failed;
}
