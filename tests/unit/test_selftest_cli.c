/* SPDX-License-Identifier: MIT */
/* ulnet-selftest's readers of text others wrote: test words / batch lines (test_spec.c) and the
 * daemon's JSON results (result_json.c). Limits and hostile numbers, from tables. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "result_json.h"
#include "test_spec.h"

static void test_split(void **state)
{
	char line[1024], *w[TEST_SPEC_MAX_WORDS];
	size_t n = 0;

	(void)state;
	strcpy(line, "  # brw write\n");
	assert_int_equal(test_spec_split(line, w), 0);
	strcpy(line, "ping --from a\t--to b\r\n");
	assert_int_equal(test_spec_split(line, w), 5);
	assert_string_equal(w[4], "b");
	for (int i = 0; i < TEST_SPEC_MAX_WORDS + 1; i++)
		n += (size_t)sprintf(line + n, "w ");
	assert_int_equal(test_spec_split(line, w), -E2BIG);
}

static void test_parse_refusals(void **state)
{
	static const struct { const char *line, *why; } cases[] = {
		{ "brw", "brw needs read or write" },
		{ "dd --from a --to b", "unknown command 'dd'" },
		{ "ping --from a", "--from and --to are required" },
		{ "ping --from", "--from needs a value" },
		{ "ping --bogus 1", "unknown option '--bogus'" },
		{ "brw read --from a --to b --size 0", "--size must be 1..1G bytes, not '0'" },
		{ "brw read --from a --to b --check", "--check must be none, simple, full or discard, not ''" },
		{ "ping --from a --to b --concurrency 1025", "--concurrency must be 1..1024, not '1025'" },
		{ "ping --from a --to b --timeout nan", "--timeout must be seconds > 0, not 'nan'" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char line[256], *w[TEST_SPEC_MAX_WORDS], why[160];
		struct test t;
		int n;

		strcpy(line, cases[i].line);
		n = test_spec_split(line, w);
		test_defaults(&t, false, false);
		assert_int_equal(test_spec_parse(n, w, &t, why, sizeof(why)), -EINVAL);
		assert_string_equal(why, cases[i].why);
	}
}

/* every check lst has, discard (4, LU-20342) included, is taken as written */
static void test_parse_checks(void **state)
{
	static const char *const checks[] = { "none", "simple", "full", "discard" };
	(void)state;
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		char line[128], *w[TEST_SPEC_MAX_WORDS], why[160];
		struct test t;
		int n;

		snprintf(line, sizeof(line), "brw write --from a --to b --check %s", checks[i]);
		n = test_spec_split(line, w);
		test_defaults(&t, false, false);
		assert_int_equal(test_spec_parse(n, w, &t, why, sizeof(why)), 0);
		assert_string_equal(t.check, checks[i]);
	}
}

static void test_result_numbers(void **state)
{
	struct result r;

	(void)state;
	memset(&r, 0, sizeof(r));
	result_parse("{\"timeout\":1e300,\"mismatch\":-5,\"refused\":nan,\"mismatch_offset\":-1e30,"
		     "\"seconds\":nan,\"peer_gone\":7,\"first_error\":\"a\\\"b\",\"remote\":true}", &r);
	assert_true(r.timeout == ULLONG_MAX);
	assert_true(r.mismatch == 0);
	assert_true(r.refused == 0);
	assert_true(r.mismatch_offset == LLONG_MIN);
	assert_true(r.seconds == 0);
	assert_true(r.peer_gone == 7);
	assert_string_equal(r.first_error, "a\"b");
	assert_true(r.remote);
	/* what the writer escaped comes back as the bytes it was */
	result_parse("{\"first_error\":\"x\\ny\\u0001z\\u001b[\\t\\\\\",\"source\":\"s\\u00e9\"}", &r);
	assert_string_equal(r.first_error, "x\ny\001z\033[\t\\");
	assert_string_equal(r.source, "s?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_parse_checks),
		cmocka_unit_test(test_result_numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
