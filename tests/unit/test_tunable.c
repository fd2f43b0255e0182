/* SPDX-License-Identifier: MIT */
/* Typed tunables: the parser of one value against its table entry (table-tested), the tables the
 * LNDs declare, and the core applying them (ulnet_ni_add refuses what the table refuses; the values
 * read back are the ones configured or the defaults). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "ulnet/ulnet.h"
#include "config.h"

static const char *const colours[] = { "red", "green", "blue" };
static const struct ulnet_tunable t_int = { "n", ULNET_TUNABLE_INT, -2, 100, 7, NULL, "an integer", 0 };
static const struct ulnet_tunable t_bool = { "b", ULNET_TUNABLE_BOOL, 0, 1, 1, NULL, "a bool", 0 };
static const struct ulnet_tunable t_enum = { "c", ULNET_TUNABLE_ENUM, 0, 2, 0, colours, "an enum", 0 };

struct parse_case {
	const struct ulnet_tunable *t;
	const char *text;
	int rc;
	long value;     /* when rc == 0 */
	const char *why; /* substring of the reason when rc != 0 */
};

static const struct parse_case parse_cases[] = {
	{ &t_int, "0", 0, 0, NULL },
	{ &t_int, "-2", 0, -2, NULL },
	{ &t_int, "100", 0, 100, NULL },
	{ &t_int, "0x10", 0, 16, NULL },
	{ &t_int, "101", -EINVAL, 0, "out of range (allowed -2..100)" },
	{ &t_int, "-3", -EINVAL, 0, "out of range" },
	{ &t_int, "", -EINVAL, 0, "not an integer" },
	{ &t_int, "12x", -EINVAL, 0, "not an integer" },
	{ &t_int, NULL, -EINVAL, 0, "not an integer" },
	{ &t_int, "99999999999999999999999", -EINVAL, 0, "not an integer" },
	{ &t_bool, "1", 0, 1, NULL },
	{ &t_bool, "0", 0, 0, NULL },
	{ &t_bool, "true", 0, 1, NULL },
	{ &t_bool, "Off", 0, 0, NULL },
	{ &t_bool, "yes", 0, 1, NULL },
	{ &t_bool, "2", -EINVAL, 0, "expected 0 or 1" },
	{ &t_enum, "red", 0, 0, NULL },
	{ &t_enum, "blue", 0, 2, NULL },
	{ &t_enum, "1", -EINVAL, 0, "expected one of red, green, blue" },
	{ &t_enum, "Red", -EINVAL, 0, "expected one of" },
};

static void test_size_parse(void **state)
{
	static const struct { const char *s; uint64_t max, want; int rc; } cases[] = {
		{ "4097", 1 << 20, 4097, 0 },
		{ "64k", 1 << 20, 65536, 0 },
		{ "1M", 1 << 20, 1 << 20, 0 },
		{ "2M", 1 << 20, 0, -EINVAL },
		{ "17592186044417M", 1 << 20, 0, -EINVAL }, /* wraps to 1 MiB without the overflow check */
		{ "18014398509481985k", 1 << 20, 0, -EINVAL },
		{ "-1", 1 << 20, 0, -EINVAL },
		{ "", 1 << 20, 0, -EINVAL },
		{ "12x", 1 << 20, 0, -EINVAL },
		{ "99999999999999999999999", UINT64_MAX, 0, -EINVAL },
		{ "0x1000", 1 << 20, 4096, 0 },
		{ "0x10k", 1 << 20, 16384, 0 },
		{ "1G", UINT64_C(1) << 30, UINT64_C(1) << 30, 0 },
		{ "17179869184G", UINT64_MAX, 0, -EINVAL },   /* 2^34 G = 2^64: wraps to 0 */
		{ "0x", 1 << 20, 0, -EINVAL },
		{ " 12", 1 << 20, 0, -EINVAL },
		{ "+12", 1 << 20, 0, -EINVAL },
		{ "1MB", 1 << 20, 0, -EINVAL },
		{ "0", 1 << 20, 0, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 0;
		int rc = ulnet_size_parse(cases[i].s, cases[i].max, &v);

		assert_int_equal(rc, cases[i].rc);
		if (!rc)
			assert_true(v == cases[i].want);
	}
}

static void test_parse_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		char why[128] = "";
		long v = 12345;
		int rc = ulnet_tunable_parse(c->t, c->text, &v, why, sizeof(why));

		if (rc != c->rc || (rc == 0 && v != c->value) || (rc && !strstr(why, c->why)))
			fail_msg("case %zu (%s '%s'): rc %d value %ld why '%s'", i, c->t->key,
				 c->text ? c->text : "(null)", rc, v, why);
	}
}

static void test_enum_name(void **state)
{
	(void)state;
	assert_string_equal(ulnet_tunable_enum_name(&t_enum, 1), "green");
	assert_null(ulnet_tunable_enum_name(&t_enum, 3));
	assert_null(ulnet_tunable_enum_name(&t_int, 0));
}

/* Every table an LND declares is well formed: unique keys, a description, the default in range. */
static void check_table(const struct ulnet_tunable *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert_non_null(t[i].key);
		assert_non_null(t[i].desc);
		assert_true(strlen(t[i].desc) > 0 && !strchr(t[i].desc, '\n'));
		assert_true(t[i].min <= t[i].def && t[i].def <= t[i].max);
		if (t[i].type == ULNET_TUNABLE_ENUM)
			for (long v = t[i].min; v <= t[i].max; v++)
				assert_non_null(t[i].names[v]);
		if (t[i].type == ULNET_TUNABLE_BOOL)
			assert_true(t[i].min == 0 && t[i].max == 1);
		assert_ptr_equal(ulnet_tunable_find(t, n, t[i].key), &t[i]);
	}
}

static void test_tables(void **state)
{
	const struct ulnet_tunable *t;
	size_t n;

	(void)state;
	ulnet_ni_tunables(&t, &n);
	assert_int_equal(n, 6);
	check_table(t, n);
	assert_int_equal(ulnet_tunable_find(t, n, "peer_credits")->def, 8);
	assert_int_equal(ulnet_lnd_tunables("lo", &t, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(ulnet_lnd_tunables("nosuchlnd", &t, &n), -EPROTONOSUPPORT);
#ifdef ULNET_HAVE_LND_TCP
	assert_int_equal(ulnet_lnd_tunables("tcp", &t, &n), 0);
	check_table(t, n);
	assert_non_null(ulnet_tunable_find(t, n, "conns_per_peer"));
	assert_int_equal(ulnet_tunable_find(t, n, "accept")->type, ULNET_TUNABLE_ENUM);
	assert_null(ulnet_tunable_find(t, n, "no_such_knob"));
#endif
}

#ifdef ULNET_HAVE_LND_TCP
static void quiet(int level, const char *subsys, const char *line)
{
	(void)level;
	(void)subsys;
	(void)line;
}

/* The core parses an NI's lnd tunables with the LND's table: values and defaults read back typed. */
static void test_ni_applies_table(void **state)
{
	const struct ulnet_kv good[] = { { "accept", "none" }, { "conns_per_peer", "3" }, { "nagle", "on" } };
	const struct ulnet_kv bad_range[] = { { "accept", "none" }, { "conns_per_peer", "17" } };
	const struct ulnet_kv bad_key[] = { { "accept", "none" }, { "conns_per_peers", "2" } };
	const struct ulnet_kv bad_ni[] = { { "peer_credits", "0" } };
	struct ulnet_ni_conf conf = { .net = "tcp", .nid = "127.0.0.1@tcp" };
	struct ulnet_ni_info info;
	ulnet_node *node;
	const struct ulnet_tunable *t;
	size_t n;
	long v;

	(void)state;
	ulnet_log_set(quiet, 0);
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	conf.lnd_tunables = bad_range;
	conf.n_lnd_tunables = 2;
	assert_int_equal(ulnet_ni_add(node, &conf), -EINVAL);
	conf.lnd_tunables = bad_key;
	assert_int_equal(ulnet_ni_add(node, &conf), -EINVAL);
	conf.lnd_tunables = good;
	conf.n_lnd_tunables = 3;
	conf.tunables = bad_ni;
	conf.n_tunables = 1;
	assert_int_equal(ulnet_ni_add(node, &conf), -EINVAL);
	conf.tunables = NULL;
	conf.n_tunables = 0;
	assert_int_equal(ulnet_ni_add(node, &conf), 0);

	assert_int_equal(ulnet_ni_info_get(node, 1, &info), 0);
	assert_int_equal(ulnet_lnd_tunables("tcp", &t, &n), 0);
	assert_ptr_equal(info.lnd_tunables, t);
	assert_int_equal(info.n_lnd_tunables, n);
	assert_int_equal(info.peer_credits, 8);
	for (size_t k = 0; k < n; k++) {
		long want = t[k].def;

		assert_int_equal(ulnet_ni_lnd_tunable_get(node, 1, k, &v), 0);
		if (!strcmp(t[k].key, "accept"))
			want = 0; /* "none" */
		else if (!strcmp(t[k].key, "conns_per_peer"))
			want = 3;
		else if (!strcmp(t[k].key, "nagle"))
			want = 1;
		assert_int_equal(v, want);
	}
	assert_int_equal(ulnet_ni_lnd_tunable_get(node, 1, n, &v), -ENOENT);
	assert_int_equal(ulnet_ni_lnd_tunable_get(node, 2, 0, &v), -ENOENT);
	assert_int_equal(ulnet_ni_info_get(node, 0, &info), 0);
	assert_int_equal(info.n_lnd_tunables, 0); /* lo */
	ulnet_node_close(node);
	ulnet_log_set(NULL, 1);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_parse),
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_enum_name),
		cmocka_unit_test(test_tables),
#ifdef ULNET_HAVE_LND_TCP
		cmocka_unit_test(test_ni_applies_table),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
