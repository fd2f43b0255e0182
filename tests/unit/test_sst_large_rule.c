/* SPDX-License-Identifier: MIT */
/* brw above LNET_MTU (issue #33, sst_large_rule.c): which node features word takes which size, the
 * large_max the word carries, and the one line a console prints when it refuses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "selftest/sst.h"

#define MIB (1u << 20)
#define LARGE(mib) (ULNET_SST_NODE_FEATS | (uint32_t)(mib) << ULNET_SST_NODE_LARGE_SHIFT)

struct large_case {
	uint32_t size, feats;
	const char *has; /* NULL: taken; else the tail of the refusal line */
};

static const struct large_case cases[] = {
	{ MIB, 0, NULL },                                   /* lst's own limit: any node */
	{ 1, 0, NULL },
	{ MIB + 1, 0, "is not known to be a ulnet node" },  /* a kernel node: the reserved words are 0 */
	{ MIB + 1, ULNET_SST_NODE_FEATS, "has large payloads off" },
	{ MIB + 1, LARGE(64), NULL },
	{ 64 * MIB, LARGE(64), NULL },
	{ 64 * MIB + 1, LARGE(64), "has large_max 67108864" },
	{ 1024 * MIB, LARGE(1024), NULL },
	{ 2 * MIB, LARGE(1), "has large_max 1048576" },     /* 1.5 MiB announced as 1 (rounded down) */
	{ MIB + 1, LARGE(64) & ~ULNET_SST_NODE_ANY_OFFSET, "is not known to be a ulnet node" },
};

static void test_large_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct large_case *c = &cases[i];
		char why[512] = "", want[128];
		int rc = ulnet__sst_large_check(c->size, "server", "10.0.0.2@tcp", c->feats, why, sizeof(why));

		if (!c->has) {
			if (rc)
				fail_msg("size %u feats %#x: refused: %s", c->size, c->feats, why);
			continue;
		}
		assert_int_equal(rc, -EINVAL);
		snprintf(want, sizeof(want), "brw size %u is above lst's 1048576 bytes per RPC (LNET_MTU)", c->size);
		if (strncmp(why, want, strlen(want)) || !strstr(why, "large_max") || strchr(why, '\n'))
			fail_msg("not the one line naming the rule, the size and the knob: %s", why);
		snprintf(want, sizeof(want), "server 10.0.0.2@tcp %s", c->has);
		if (strlen(why) < strlen(want) || strcmp(why + strlen(why) - strlen(want), want))
			fail_msg("size %u feats %#x: want '...%s', got '%s'", c->size, c->feats, want, why);
	}
}

/* The word's large_max: bits 8..23 in MiB; bit 0 and other bits do not leak into it. */
static void test_node_large_max(void **state)
{
	(void)state;
	assert_int_equal(ulnet__sst_node_large_max(0), 0);
	assert_int_equal(ulnet__sst_node_large_max(ULNET_SST_NODE_FEATS), 0);
	assert_int_equal(ulnet__sst_node_large_max(LARGE(64)), 64 * MIB);
	assert_int_equal(ulnet__sst_node_large_max(LARGE(1024) | 0xff000000u | 0xfeu), 1024 * MIB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_large_table),
		cmocka_unit_test(test_node_large_max),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
