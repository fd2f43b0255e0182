/* SPDX-License-Identifier: MIT */
/* Table-driven tests for NID, net and LND-name conversions (src/core/nid.c, lnet-wire.md §2.2).
 * Expected values are written by hand from the spec, never produced by the code under test. Each table
 * runs as its own cmocka group with one test per row, so failures name the row. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ulnet/nid.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define NO_NID4 ULNET_NID_ANY4 /* expected nid4 of a NID that does not fit */

/* Every NID the parser produces has its unused addr words zero, so whole structs compare with memcmp. */
#define NID4(t, n, a) { .size = 0, .type = (t), .num = (n), .addr = { (a), 0, 0, 0 } }
#define NID6(t, n, a0, a1, a2, a3) { .size = 12, .type = (t), .num = (n), .addr = { (a0), (a1), (a2), (a3) } }
#define NID_ANY { .size = 0xff, .type = 0xff, .num = 0xffff, .addr = { ~0u, ~0u, ~0u, ~0u } }

static const char SENTINEL[] = "untouched";

/* ---- Good NID strings ---- */

struct good_case {
	const char *name;
	const char *str;
	struct ulnet_nid want;
	uint64_t nid4;     /* ulnet_nid_to_nid4(); NO_NID4 when it does not fit */
	const char *canon; /* ulnet_nid_format() output */
};

static const struct good_case good_cases[] = {
	/* lnet-wire.md §2.2 worked examples */
	{ "spec 192.168.1.1@o2ib", "192.168.1.1@o2ib", NID4(5, 0, 0xC0A80101), UINT64_C(0x00050000C0A80101),
	  "192.168.1.1@o2ib" },
	{ "spec 10.0.0.1@tcp1", "10.0.0.1@tcp1", NID4(2, 1, 0x0A000001), UINT64_C(0x000200010A000001),
	  "10.0.0.1@tcp1" },
	{ "spec 0@lo", "0@lo", NID4(9, 0, 0), ULNET_NID_LO_0, "0@lo" },
	/* every LND name, with and without net numbers */
	{ "tcp, no number", "10.0.0.1@tcp", NID4(2, 0, 0x0A000001), UINT64_C(0x000200000A000001), "10.0.0.1@tcp" },
	{ "tcp0 prints as tcp", "10.0.0.1@tcp0", NID4(2, 0, 0x0A000001), UINT64_C(0x000200000A000001),
	  "10.0.0.1@tcp" },
	{ "o2ib3", "192.168.1.1@o2ib3", NID4(5, 3, 0xC0A80101), UINT64_C(0x00050003C0A80101),
	  "192.168.1.1@o2ib3" },
	{ "o2ib0 prints as o2ib", "192.168.1.1@o2ib0", NID4(5, 0, 0xC0A80101), UINT64_C(0x00050000C0A80101),
	  "192.168.1.1@o2ib" },
	{ "gip2 (IP)", "172.16.0.9@gip2", NID4(14, 2, 0xAC100009), UINT64_C(0x000E0002AC100009), "172.16.0.9@gip2" },
	{ "gni (numeric)", "12@gni", NID4(13, 0, 12), UINT64_C(0x000D00000000000C), "12@gni" },
	{ "gni5", "12@gni5", NID4(13, 5, 12), UINT64_C(0x000D00050000000C), "12@gni5" },
	{ "ptlf1", "7@ptlf1", NID4(15, 1, 7), UINT64_C(0x000F000100000007), "7@ptlf1" },
	{ "kfi, largest address", "4294967295@kfi", NID4(16, 0, 0xFFFFFFFF), UINT64_C(0x00100000FFFFFFFF),
	  "4294967295@kfi" },
	{ "kfi65535, largest net number", "0@kfi65535", NID4(16, 0xFFFF, 0), UINT64_C(0x0010FFFF00000000),
	  "0@kfi65535" },
	{ "tofu2", "3@tofu2", NID4(17, 2, 3), UINT64_C(0x0011000200000003), "3@tofu2" },
	{ "efa", "100@efa", NID4(18, 0, 100), UINT64_C(0x0012000000000064), "100@efa" },
	{ "bxi3f7 (digit inside the name)", "42@bxi3f7", NID4(19, 7, 42), UINT64_C(0x001300070000002A),
	  "42@bxi3f7" },
	{ "bxi3f, no number", "1@bxi3f", NID4(19, 0, 1), UINT64_C(0x0013000000000001), "1@bxi3f" },
	/* IPv4 edges */
	{ "all-ones IPv4 on tcp65535 is not ANY", "255.255.255.255@tcp65535", NID4(2, 0xFFFF, 0xFFFFFFFF),
	  UINT64_C(0x0002FFFFFFFFFFFF), "255.255.255.255@tcp65535" },
	{ "0.0.0.0", "0.0.0.0@tcp", NID4(2, 0, 0), UINT64_C(0x0002000000000000), "0.0.0.0@tcp" },
	{ "IPv4 leading zeros are decimal", "010.000.000.001@tcp", NID4(2, 0, 0x0A000001),
	  UINT64_C(0x000200000A000001), "10.0.0.1@tcp" },
	{ "numeric leading zeros", "007@gni", NID4(13, 0, 7), UINT64_C(0x000D000000000007), "7@gni" },
	{ "net number leading zeros", "1.2.3.4@tcp007", NID4(2, 7, 0x01020304), UINT64_C(0x0002000701020304),
	  "1.2.3.4@tcp7" },
	/* IPv6: both input forms, printed bare, never nid4 */
	{ "IPv6 bracketed [::1]@tcp", "[::1]@tcp", NID6(2, 0, 0, 0, 0, 1), NO_NID4, "::1@tcp" },
	{ "IPv6 bare ::1@tcp", "::1@tcp", NID6(2, 0, 0, 0, 0, 1), NO_NID4, "::1@tcp" },
	{ "IPv6 fe80::1@tcp1", "fe80::1@tcp1", NID6(2, 1, 0xFE800000, 0, 0, 1), NO_NID4, "fe80::1@tcp1" },
	{ "IPv6 on o2ib2", "[2001:db8::a:b]@o2ib2", NID6(5, 2, 0x20010DB8, 0, 0, 0x000A000B), NO_NID4,
	  "2001:db8::a:b@o2ib2" },
	{ "IPv6 full form compresses", "2001:0db8:0000:0000:0000:0000:0000:0001@gip",
	  NID6(14, 0, 0x20010DB8, 0, 0, 1), NO_NID4, "2001:db8::1@gip" },
	{ "IPv6 all ones", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff@tcp",
	  NID6(2, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), NO_NID4,
	  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff@tcp" },
	{ "IPv4-mapped IPv6 stays IPv6", "::ffff:192.168.1.1@tcp", NID6(2, 0, 0, 0, 0xFFFF, 0xC0A80101), NO_NID4,
	  "::ffff:192.168.1.1@tcp" },
	/* wildcards */
	{ "ANY as *", "*", NID_ANY, ULNET_NID_ANY4, "<?>" },
	{ "ANY as <?>", "<?>", NID_ANY, ULNET_NID_ANY4, "<?>" },
};

static void run_good_case(void **state)
{
	const struct good_case *c = *state;
	struct ulnet_nid got, again, back;
	const char *why = SENTINEL;
	char buf[ULNET_NID_STRLEN];
	bool any = c->want.type == ULNET_LND_ANY;

	assert_int_equal(ulnet_nid_parse(c->str, &got, &why), 0);
	assert_ptr_equal(why, SENTINEL); /* untouched on success */
	assert_int_equal(got.size, c->want.size);
	assert_int_equal(got.type, c->want.type);
	assert_int_equal(got.num, c->want.num);
	for (int i = 0; i < 4; i++)
		assert_int_equal(got.addr[i], c->want.addr[i]);
	assert_memory_equal(&got, &c->want, sizeof(got)); /* includes zeroed unused words */

	assert_true(ulnet_nid_equal(&got, &c->want));
	assert_int_equal(ulnet_nid_is_any(&got), any);
	assert_int_equal(ulnet_nid_is_nid4(&got), any || c->nid4 != NO_NID4);
	assert_int_equal(ulnet_nid_to_nid4(&got), c->nid4);
	assert_int_equal(ulnet_nid_net(&got), any ? 0xFFFFFFFFu : ((uint32_t)c->want.type << 16 | c->want.num));

	/* print, then parse the printed form back */
	assert_ptr_equal(ulnet_nid_format(&got, buf, sizeof(buf)), buf);
	assert_string_equal(buf, c->canon);
	assert_int_equal(ulnet_nid_parse(buf, &again, NULL), 0);
	assert_memory_equal(&again, &got, sizeof(got));

	/* nid4 round trip where it fits */
	if (c->nid4 != NO_NID4 || any) {
		ulnet_nid_from_nid4(c->nid4, &back);
		assert_memory_equal(&back, &got, sizeof(got));
	}
}

/* ---- Bad NID strings: -EINVAL, the exact reason, and @out untouched ---- */

struct bad_case {
	const char *name;
	const char *str;
	const char *why;
};

static const struct bad_case bad_cases[] = {
	{ "empty string", "", "missing '@network'" },
	{ "no @network", "1.2.3.4", "missing '@network'" },
	{ "net name alone", "tcp", "missing '@network'" },
	{ "no address", "@tcp", "missing address" },
	{ "no network", "1.2.3.4@", "empty network name" },
	{ "unknown network", "1.2.3.4@nosuch", "unknown network type" },
	{ "network name is case-sensitive", "1.2.3.4@TCP", "unknown network type" },
	{ "truncated network name", "1.2.3.4@o2i", "unknown network type" },
	{ "net number 65536", "1.2.3.4@tcp65536", "net number out of range" },
	{ "huge net number", "1.2.3.4@tcp99999999999999999999", "net number out of range" },
	{ "negative net number", "1.2.3.4@tcp-1", "unknown network type" },
	{ "letters after net name", "1.2.3.4@tcpx", "unknown network type" },
	{ "junk after net number", "1.2.3.4@tcp1x", "bad net number" },
	{ "lo with a net number", "0@lo1", "lo takes no net number" },
	{ "lo0", "0@lo0", "lo takes no net number" },
	{ "three-part IPv4", "1.2.3@tcp", "bad IPv4 address" },
	{ "five-part IPv4", "1.2.3.4.5@tcp", "bad IPv4 address" },
	{ "IPv4 part 256", "256.1.1.1@tcp", "bad IPv4 address" },
	{ "IPv4 part of four digits", "1.2.3.0004@tcp", "bad IPv4 address" },
	{ "IPv4 empty part", "1..3.4@tcp", "bad IPv4 address" },
	{ "IPv4 trailing dot", "1.2.3.4.@tcp", "bad IPv4 address" },
	{ "IPv4 leading dot", ".1.2.3@tcp", "bad IPv4 address" },
	{ "IPv4 negative part", "1.2.3.-4@tcp", "bad IPv4 address" },
	{ "IPv4 plus sign", "+1.2.3.4@tcp", "bad IPv4 address" },
	{ "hostname", "a.b.c.d@tcp", "bad IPv4 address" },
	{ "number on an IP net", "12@o2ib", "bad IPv4 address" },
	{ "leading space", " 1.2.3.4@tcp", "bad IPv4 address" },
	{ "space before @", "1.2.3.4 @tcp", "bad IPv4 address" },
	{ "space after @", "1.2.3.4@ tcp", "unknown network type" },
	{ "trailing space", "1.2.3.4@tcp ", "unknown network type" },
	{ "trailing newline", "1.2.3.4@tcp\n", "unknown network type" },
	{ "trailing words", "1.2.3.4@o2ib3 extra", "bad net number" },
	{ "two @", "1.2.3.4@tcp@tcp", "bad IPv4 address" },
	{ "double @", "1.2.3.4@@tcp", "bad IPv4 address" },
	{ "IPv6 missing ]", "[::1@tcp", "unbalanced '[' in address" },
	{ "IPv6 lone [", "[@tcp", "unbalanced '[' in address" },
	{ "IPv6 missing [", "::1]@tcp", "bad IPv6 address" },
	{ "IPv6 empty brackets", "[]@tcp", "bad IPv6 address" },
	{ "IPv6 triple colon", ":::1@tcp", "bad IPv6 address" },
	{ "IPv6 bad hex digit", "::g@tcp", "bad IPv6 address" },
	{ "IPv6 with zone id", "fe80::1%eth0@tcp", "bad IPv6 address" },
	{ "IPv6 too many groups", "1:2:3:4:5:6:7:8:9@tcp", "bad IPv6 address" },
	{ "IPv6 overlong text", "0000:0000:0000:0000:0000:0000:0000:0000:0000:0000@tcp", "bad IPv6 address" },
	{ "IPv4 on a numeric net", "1.2.3.4@gni", "bad numeric address" },
	{ "IPv6 on a numeric net", "[::1]@kfi", "bad numeric address" },
	{ "negative numeric address", "-1@gni", "bad numeric address" },
	{ "plus-signed numeric address", "+1@gni", "bad numeric address" },
	{ "hex numeric address", "0x10@gni", "bad numeric address" },
	{ "numeric address 2^32", "4294967296@efa", "address out of range" },
	{ "lo address not 0", "1@lo", "lo address must be 0" },
	{ "lo address not a number", "x@lo", "lo address must be 0" },
	{ "wildcard with junk", "<?>x", "missing '@network'" },
	{ "double wildcard", "**", "missing '@network'" },
	{ "wildcard as address", "*@tcp", "bad IPv4 address" },
};

static void run_bad_case(void **state)
{
	const struct bad_case *c = *state;
	struct ulnet_nid out, before;
	const char *why = NULL;

	memset(&out, 0xA5, sizeof(out));
	before = out;
	assert_int_equal(ulnet_nid_parse(c->str, &out, &why), -EINVAL);
	assert_non_null(why);
	assert_string_equal(why, c->why);
	assert_memory_equal(&out, &before, sizeof(out));
	/* @why is optional */
	assert_int_equal(ulnet_nid_parse(c->str, &out, NULL), -EINVAL);
}

/* ---- Network names ---- */

struct net_case {
	const char *name;
	const char *str;
	int rc;
	uint32_t net;      /* when rc == 0 */
	const char *canon; /* ulnet_net_format(net), or the expected reason when rc != 0 */
};

static const struct net_case net_cases[] = {
	{ "tcp", "tcp", 0, 0x00020000, "tcp" },
	{ "tcp0", "tcp0", 0, 0x00020000, "tcp" },
	{ "tcp1", "tcp1", 0, 0x00020001, "tcp1" },
	{ "o2ib", "o2ib", 0, 0x00050000, "o2ib" },
	{ "o2ib3", "o2ib3", 0, 0x00050003, "o2ib3" },
	{ "o2ib65535", "o2ib65535", 0, 0x0005FFFF, "o2ib65535" },
	{ "lo", "lo", 0, 0x00090000, "lo" },
	{ "gni2", "gni2", 0, 0x000D0002, "gni2" },
	{ "gip", "gip", 0, 0x000E0000, "gip" },
	{ "ptlf4", "ptlf4", 0, 0x000F0004, "ptlf4" },
	{ "kfi", "kfi", 0, 0x00100000, "kfi" },
	{ "tofu9", "tofu9", 0, 0x00110009, "tofu9" },
	{ "efa1", "efa1", 0, 0x00120001, "efa1" },
	{ "bxi3f", "bxi3f", 0, 0x00130000, "bxi3f" },
	{ "bxi3f3", "bxi3f3", 0, 0x00130003, "bxi3f3" },
	{ "bad: empty", "", -EINVAL, 0, "empty network name" },
	{ "bad: tcp65536", "tcp65536", -EINVAL, 0, "net number out of range" },
	{ "bad: tcp-1", "tcp-1", -EINVAL, 0, "unknown network type" },
	{ "bad: tcpx", "tcpx", -EINVAL, 0, "unknown network type" },
	{ "bad: tcp1x", "tcp1x", -EINVAL, 0, "bad net number" },
	{ "bad: lo1", "lo1", -EINVAL, 0, "lo takes no net number" },
	{ "bad: nosuch", "nosuch", -EINVAL, 0, "unknown network type" },
	{ "bad: number only", "2", -EINVAL, 0, "unknown network type" },
	{ "bad: leading space", " tcp", -EINVAL, 0, "unknown network type" },
	{ "bad: trailing space", "tcp ", -EINVAL, 0, "unknown network type" },
	{ "bad: upper case", "TCP", -EINVAL, 0, "unknown network type" },
	{ "bad: full NID", "1.2.3.4@tcp", -EINVAL, 0, "unknown network type" },
};

static void run_net_case(void **state)
{
	const struct net_case *c = *state;
	uint32_t net = 0xDEADBEEF, again;
	const char *why = SENTINEL;
	char buf[ULNET_NID_STRLEN];

	assert_int_equal(ulnet_net_parse(c->str, &net, &why), c->rc);
	if (c->rc != 0) {
		assert_int_equal(net, 0xDEADBEEF);
		assert_string_equal(why, c->canon);
		return;
	}
	assert_ptr_equal(why, SENTINEL);
	assert_int_equal(net, c->net);
	assert_ptr_equal(ulnet_net_format(net, buf, sizeof(buf)), buf);
	assert_string_equal(buf, c->canon);
	assert_int_equal(ulnet_net_parse(buf, &again, NULL), 0);
	assert_int_equal(again, net);
}

/* ---- nid4 -> large NID -> string ---- */

struct nid4_case {
	const char *name;
	uint64_t nid4;
	struct ulnet_nid want;
	const char *canon;
};

static const struct nid4_case nid4_cases[] = {
	{ "spec o2ib", UINT64_C(0x00050000C0A80101), NID4(5, 0, 0xC0A80101), "192.168.1.1@o2ib" },
	{ "spec tcp1", UINT64_C(0x000200010A000001), NID4(2, 1, 0x0A000001), "10.0.0.1@tcp1" },
	{ "spec LNET_NID_LO_0", ULNET_NID_LO_0, NID4(9, 0, 0), "0@lo" },
	{ "gni net 5", UINT64_C(0x000D00050000000C), NID4(13, 5, 12), "12@gni5" },
	{ "unknown LND type prints as <type:num>", UINT64_C(0x0063000100000010), NID4(99, 1, 0x10), "10@<99:1>" },
	{ "LNET_NID_ANY", ULNET_NID_ANY4, NID_ANY, "<?>" },
};

static void run_nid4_case(void **state)
{
	const struct nid4_case *c = *state;
	struct ulnet_nid got;
	char buf[ULNET_NID_STRLEN];

	memset(&got, 0xA5, sizeof(got)); /* from_nid4 must clear the unused words */
	ulnet_nid_from_nid4(c->nid4, &got);
	assert_memory_equal(&got, &c->want, sizeof(got));
	assert_true(ulnet_nid_is_nid4(&got));
	assert_int_equal(ulnet_nid_to_nid4(&got), c->nid4);
	assert_string_equal(ulnet_nid_format(&got, buf, sizeof(buf)), c->canon);
}

/* ---- LND names ---- */

struct lnd_case {
	const char *name;
	unsigned type;
	const char *lnd; /* NULL: unknown type */
};

static const struct lnd_case lnd_cases[] = {
	{ "SOCKLND=2 tcp", 2, "tcp" },      { "O2IBLND=5 o2ib", 5, "o2ib" },  { "LOLND=9 lo", 9, "lo" },
	{ "GNILND=13 gni", 13, "gni" },     { "GNIIPLND=14 gip", 14, "gip" }, { "PTL4LND=15 ptlf", 15, "ptlf" },
	{ "KFILND=16 kfi", 16, "kfi" },     { "TOFULND=17 tofu", 17, "tofu" }, { "EFALND=18 efa", 18, "efa" },
	{ "BXI3LND=19 bxi3f", 19, "bxi3f" }, { "type 0 unknown", 0, NULL },    { "removed QSWLND=1", 1, NULL },
	{ "removed MXLND=12", 12, NULL },   { "type 20 unknown", 20, NULL },  { "ANY type 0xff", 0xff, NULL },
};

static void run_lnd_case(void **state)
{
	const struct lnd_case *c = *state;
	const char *name = ulnet_lnd_type_name(c->type);
	unsigned type = 12345;

	if (c->lnd == NULL) {
		assert_null(name);
		return;
	}
	assert_non_null(name);
	assert_string_equal(name, c->lnd);
	assert_int_equal(ulnet_lnd_type_parse(c->lnd, &type), 0);
	assert_int_equal(type, c->type);
}

/* ---- Single checks that do not fit a table ---- */

static void test_lnd_parse_rejects(void **state)
{
	unsigned type = 777;

	(void)state;
	assert_int_equal(ulnet_lnd_type_parse("nosuch", &type), -EINVAL);
	assert_int_equal(ulnet_lnd_type_parse("", &type), -EINVAL);
	assert_int_equal(ulnet_lnd_type_parse("TCP", &type), -EINVAL);
	assert_int_equal(ulnet_lnd_type_parse("tcp1", &type), -EINVAL); /* a net, not an LND name */
	assert_int_equal(ulnet_lnd_type_parse(NULL, &type), -EINVAL);
	assert_int_equal(type, 777);
}

static void test_any(void **state)
{
	struct ulnet_nid any = ulnet_nid_any(), loose, got;
	const struct ulnet_nid all_ones = NID_ANY;

	(void)state;
	assert_memory_equal(&any, &all_ones, sizeof(any));
	assert_true(ulnet_nid_is_any(&any));
	assert_true(ulnet_nid_is_nid4(&any));
	assert_int_equal(ulnet_nid_to_nid4(&any), ULNET_NID_ANY4);
	assert_int_equal(ulnet_nid_net(&any), 0xFFFFFFFFu);
	ulnet_nid_from_nid4(ULNET_NID_ANY4, &got);
	assert_memory_equal(&got, &all_ones, sizeof(got));

	/* a wildcard from elsewhere with only the type set is still ANY and equals ulnet_nid_any() */
	memset(&loose, 0, sizeof(loose));
	loose.type = ULNET_LND_ANY;
	assert_true(ulnet_nid_is_any(&loose));
	assert_true(ulnet_nid_equal(&loose, &any));
	assert_int_equal(ulnet_nid_to_nid4(&loose), ULNET_NID_ANY4);

	/* ANY never equals a real NID, not even one whose bits are all ones */
	assert_int_equal(ulnet_nid_parse("255.255.255.255@tcp65535", &got, NULL), 0);
	assert_false(ulnet_nid_is_any(&got));
	assert_false(ulnet_nid_equal(&got, &any));
	assert_false(ulnet_nid_equal(&any, &got));
}

static void test_equal(void **state)
{
	const struct ulnet_nid a = NID4(2, 1, 0x0A000001);
	const struct ulnet_nid v6 = NID6(2, 1, 0, 0, 0, 0x0A000001);
	struct ulnet_nid b;

	(void)state;
	b = a;
	assert_true(ulnet_nid_equal(&a, &b));
	b.num = 2;
	assert_false(ulnet_nid_equal(&a, &b));
	b = a;
	b.type = 5;
	assert_false(ulnet_nid_equal(&a, &b));
	b = a;
	b.addr[0]++;
	assert_false(ulnet_nid_equal(&a, &b));
	/* same low word, different size: an IPv6 NID never equals an IPv4 one */
	assert_false(ulnet_nid_equal(&a, &v6));
	/* words past the size carry no meaning */
	b = a;
	b.addr[3] = 0x1234;
	assert_true(ulnet_nid_equal(&a, &b));
	/* but every word of an IPv6 address counts */
	b = v6;
	b.addr[1] = 1;
	assert_false(ulnet_nid_equal(&v6, &b));
}

static void test_nid4_does_not_fit(void **state)
{
	const struct ulnet_nid v6 = NID6(5, 0, 0x20010DB8, 0, 0, 1);

	(void)state;
	assert_false(ulnet_nid_is_nid4(&v6));
	assert_int_equal(ulnet_nid_to_nid4(&v6), ULNET_NID_ANY4);
	assert_int_equal(ulnet_nid_net(&v6), 0x00050000);
}

static void test_format_small_buffers(void **state)
{
	const struct ulnet_nid nid = NID4(5, 3, 0xC0A80101); /* 192.168.1.1@o2ib3 */
	const struct ulnet_nid any = NID_ANY;
	char buf[8];

	(void)state;
	memset(buf, 'X', sizeof(buf));
	assert_ptr_equal(ulnet_nid_format(&nid, buf, 0), buf);
	assert_int_equal(buf[0], 'X'); /* len 0 writes nothing */
	assert_string_equal(ulnet_nid_format(&nid, buf, 1), "");
	assert_string_equal(ulnet_nid_format(&nid, buf, 5), "192.");
	assert_string_equal(ulnet_nid_format(&nid, buf, sizeof(buf)), "192.168");
	assert_string_equal(ulnet_nid_format(&any, buf, 2), "<");
	memset(buf, 'X', sizeof(buf));
	assert_ptr_equal(ulnet_net_format(0x00050003, buf, 0), buf);
	assert_int_equal(buf[0], 'X');
	assert_string_equal(ulnet_net_format(0x00050003, buf, 3), "o2");
	assert_string_equal(ulnet_net_format(0x00050003, buf, sizeof(buf)), "o2ib3");
}

static void test_format_unusual(void **state)
{
	const struct ulnet_nid longest = NID6(14, 0xFFFF, ~0u, ~0u, ~0u, ~0u);
	const struct ulnet_nid v6_on_numeric = NID6(13, 0, 1, 2, 3, 0xABCD);
	const struct ulnet_nid unknown_v6 = NID6(99, 0, 1, 2, 3, 4);
	struct ulnet_nid odd_size = NID4(2, 0, 0x0A000001);
	char buf[ULNET_NID_STRLEN];

	(void)state;
	assert_string_equal(ulnet_nid_format(&longest, buf, sizeof(buf)),
			    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff@gip65535");
	assert_true(strlen(buf) < ULNET_NID_STRLEN);
	/* a size the LND cannot use prints its address words in hex rather than pretending */
	assert_string_equal(ulnet_nid_format(&v6_on_numeric, buf, sizeof(buf)), "1:2:3:abcd@gni");
	assert_string_equal(ulnet_nid_format(&unknown_v6, buf, sizeof(buf)), "1:2:3:4@<99:0>");
	odd_size.size = 4;
	assert_string_equal(ulnet_nid_format(&odd_size, buf, sizeof(buf)), "a000001:0@tcp");
	assert_string_equal(ulnet_net_format(0x00630001, buf, sizeof(buf)), "<99:1>");
	assert_string_equal(ulnet_net_format(0xFFFFFFFF, buf, sizeof(buf)), "<?>");
}

static void test_null_arguments(void **state)
{
	struct ulnet_nid nid;
	uint32_t net;
	const char *why = NULL;

	(void)state;
	assert_int_equal(ulnet_nid_parse(NULL, &nid, &why), -EINVAL);
	assert_non_null(why);
	why = NULL;
	assert_int_equal(ulnet_nid_parse("0@lo", NULL, &why), -EINVAL);
	assert_non_null(why);
	why = NULL;
	assert_int_equal(ulnet_net_parse(NULL, &net, &why), -EINVAL);
	assert_non_null(why);
	assert_int_equal(ulnet_net_parse("tcp", NULL, NULL), -EINVAL);
}

/* ---- Runner: one cmocka group per table, one test per row ---- */

static int run_table(const char *group, const void *rows, size_t n, size_t stride, CMUnitTestFunction fn)
{
	struct CMUnitTest *tests = calloc(n, sizeof(*tests));
	int failed;

	if (tests == NULL)
		return 1;
	for (size_t i = 0; i < n; i++) {
		const void *row = (const char *)rows + i * stride;

		tests[i].name = *(const char *const *)row; /* every row starts with its name */
		tests[i].test_func = fn;
		tests[i].initial_state = (void *)(uintptr_t)row;
	}
	failed = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
	free(tests);
	return failed;
}

#define RUN_TABLE(group, rows, fn) run_table(group, rows, ARRAY_LEN(rows), sizeof((rows)[0]), fn)

int main(void)
{
	static const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_lnd_parse_rejects),  cmocka_unit_test(test_any),
		cmocka_unit_test(test_equal),              cmocka_unit_test(test_nid4_does_not_fit),
		cmocka_unit_test(test_format_small_buffers), cmocka_unit_test(test_format_unusual),
		cmocka_unit_test(test_null_arguments),
	};
	int failed = 0;

	failed += RUN_TABLE("nid_parse_good", good_cases, run_good_case);
	failed += RUN_TABLE("nid_parse_bad", bad_cases, run_bad_case);
	failed += RUN_TABLE("net", net_cases, run_net_case);
	failed += RUN_TABLE("nid4", nid4_cases, run_nid4_case);
	failed += RUN_TABLE("lnd_type", lnd_cases, run_lnd_case);
	failed += cmocka_run_group_tests_name("nid_misc", misc, NULL, NULL);
	return failed != 0;
}
