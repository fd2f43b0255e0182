/* SPDX-License-Identifier: MIT */
/* The kernel brw offset rule (issue 12): which (size, offset) a kernel lnet_selftest client survives,
 * and the one line a console prints when it refuses, with what would be accepted. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "selftest/sst.h"

struct rule_case {
	uint32_t size, offset;
	bool safe;
	const char *accepted; /* expected tail of the refusal line */
};

static const struct rule_case cases[] = {
	{ 1048576, 0, true, NULL },
	{ 1048568, 8, true, NULL },
	{ 1048576, 8, false, "accepted: size 1048568 at offset 8, or size 1048576 at offset 0" },
	{ 1048576, 4096, false, "accepted: size 1048576 at offset 0" },
	{ 1048576, 4097, false, "accepted: size 1048576 at offset 0" },
	{ 4096, 4088, false, "accepted: size 8 at offset 4088, or size 4096 at offset 0" },
	{ 8, 4088, true, NULL },
	{ 9, 4088, false, "accepted: size 8 at offset 4088, or size 9 at offset 0" },
	{ 1, 8, true, NULL },
	{ 100, 12, false, "accepted: size 100 at offset 8, or at offset 0" },
	{ 4096, 7, false, "accepted: size 4096 at offset 0" },
	{ 65535, 1, false, "accepted: size 65535 at offset 0" },
	{ 1, 4095, false, "accepted: size 1 at offset 4088, or at offset 0" },
	{ 4000, 96, true, NULL },
	{ 4001, 96, false, "accepted: size 4000 at offset 96, or size 4001 at offset 0" },
};

static void test_rule_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct rule_case *c = &cases[i];
		char why[512] = "";
		int rc = ulnet__sst_kernel_offset_check(c->size, c->offset, why, sizeof(why));
		char head[64];

		if (ulnet__sst_kernel_offset_safe(c->size, c->offset) != c->safe)
			fail_msg("size %u offset %u: safe should be %d", c->size, c->offset, c->safe);
		if (c->safe) {
			assert_int_equal(rc, 0);
			continue;
		}
		assert_int_equal(rc, -EINVAL);
		snprintf(head, sizeof(head), "brw size %u at offset %u: ", c->size, c->offset);
		if (strncmp(why, head, strlen(head)))
			fail_msg("line does not start with '%s': %s", head, why);
		if (!strstr(why, "multiple of 8 below 4096") || strchr(why, '\n'))
			fail_msg("line does not state the rule: %s", why);
		if (strlen(why) < strlen(c->accepted) || strcmp(why + strlen(why) - strlen(c->accepted), c->accepted))
			fail_msg("size %u offset %u: want '...%s', got '%s'", c->size, c->offset, c->accepted, why);
	}
}

/* Every suggestion the line makes is itself accepted by the rule. */
static void test_suggestions_are_safe(void **state)
{
	(void)state;
	for (uint32_t off = 0; off < 8200; off += 3)
		for (uint32_t size = 1; size <= 20000; size += 997) {
			char why[512];
			unsigned s1, o1;
			const char *p;

			if (!ulnet__sst_kernel_offset_check(size, off, why, sizeof(why)))
				continue;
			p = strstr(why, "accepted: size ");
			assert_non_null(p);
			assert_int_equal(sscanf(p, "accepted: size %u at offset %u", &s1, &o1), 2);
			assert_true(ulnet__sst_kernel_offset_safe(s1, o1));
			assert_true(s1 >= 1 && s1 <= size);
		}
}

/* A buffer too small for the line still refuses. */
static void test_small_buffer(void **state)
{
	char why[16];

	(void)state;
	assert_int_equal(ulnet__sst_kernel_offset_check(1048576, 8, why, sizeof(why)), -EINVAL);
	assert_true(strlen(why) < sizeof(why));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_table),
		cmocka_unit_test(test_suggestions_are_safe),
		cmocka_unit_test(test_small_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
