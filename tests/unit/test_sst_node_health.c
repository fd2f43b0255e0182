/* SPDX-License-Identifier: MIT */
/* The lst console's down-node table (sst_node_health.h): which outcomes mark a node down, the probe
 * backoff, what an answer or a new session forgets, and a full table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "selftest/sst_node_health.h"

struct note_case {
	int rc;
	bool down; /* known down afterwards, starting from "down since t=0" */
	bool was_down;
};

/* each outcome, applied to a node not known and to a node known down */
static const struct note_case cases[] = {
	{ -ETIMEDOUT, true, false },    { -ECONNREFUSED, true, false }, { -EHOSTUNREACH, true, false },
	{ -ECONNRESET, true, false },   { 0, false, false },            { -EPROTO, false, false },
	{ -ENOMEM, false, false },      { -ESHUTDOWN, false, false },   { -ETIMEDOUT, true, true },
	{ 0, false, true },             { -EPROTO, false, true },       { -ENOMEM, true, true },
	{ -ESHUTDOWN, true, true },
};

static void test_note_table(void **state)
{
	struct lst_health *h = malloc(sizeof(*h));
	char why[256];

	(void)state;
	lst_health_init(h);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t gen = lst_health_reset(h);
		if (cases[i].was_down)
			lst_health_note(h, gen, 7, -ECONNREFUSED, "n7: refused", 0);
		lst_health_note(h, gen, 7, cases[i].rc, "n7: outcome", 100);
		int rc = lst_health_check(h, 7, 3000, why, sizeof(why));
		if ((rc != 0) != cases[i].down)
			fail_msg("case %zu: rc %d, was down %d: known down %d, want %d", i, cases[i].rc, cases[i].was_down,
				 rc != 0, cases[i].down);
		if (rc)
			assert_non_null(strstr(why, cases[i].was_down ? "known down for 3 s" : "known down for 2 s"));
	}
	lst_health_fini(h);
	free(h);
}

static void test_backoff_and_due(void **state)
{
	struct lst_health *h = malloc(sizeof(*h));
	uint64_t due[4], gen;
	uint32_t expect = LST_PROBE_MIN_MS;
	uint64_t now = 1000;

	(void)state;
	lst_health_init(h);
	gen = lst_health_reset(h);
	lst_health_note(h, gen, 9, -ETIMEDOUT, "n9: no reply", now);
	assert_int_equal(lst_health_due(h, now + expect - 1, due, 4), 0);
	for (int round = 0; round < 6; round++) {
		now += expect;
		assert_int_equal(lst_health_due(h, now, due, 4), 1);
		assert_int_equal(due[0], 9);
		assert_int_equal(lst_health_due(h, now, due, 4), 0); /* not twice while its probe is out */
		lst_health_note(h, gen, 9, -ETIMEDOUT, "n9: no reply", now); /* the probe failed: back off */
		expect = expect * 2 > LST_PROBE_MAX_MS ? LST_PROBE_MAX_MS : expect * 2;
		assert_int_equal(lst_health_due(h, now + expect - 1, due, 4), 0);
	}
	assert_int_equal(expect, LST_PROBE_MAX_MS);
	/* an old session's late note is dropped; a reset forgets everything */
	lst_health_note(h, gen - 1, 10, -ETIMEDOUT, "n10", now);
	assert_int_equal(lst_health_check(h, 10, now, (char[64]){ 0 }, 64), 0);
	gen = lst_health_reset(h);
	assert_int_equal(lst_health_check(h, 9, now, (char[64]){ 0 }, 64), 0);
	lst_health_fini(h);
	free(h);
}

static void test_full_table(void **state)
{
	struct lst_health *h = malloc(sizeof(*h));
	char why[256];
	uint64_t gen;

	(void)state;
	lst_health_init(h);
	gen = lst_health_reset(h);
	for (uint64_t n = 1; n <= LST_HEALTH_MAX + 1; n++)
		lst_health_note(h, gen, n, -ECONNREFUSED, "refused", 0);
	assert_int_equal(lst_health_check(h, LST_HEALTH_MAX, 0, why, sizeof(why)), -ECONNREFUSED);
	/* no room: that node is simply waited on, as before */
	assert_int_equal(lst_health_check(h, LST_HEALTH_MAX + 1, 0, why, sizeof(why)), 0);
	lst_health_note(h, gen, 1, 0, "", 0); /* an answer frees a slot */
	lst_health_note(h, gen, LST_HEALTH_MAX + 1, -ECONNREFUSED, "refused", 0);
	assert_int_equal(lst_health_check(h, LST_HEALTH_MAX + 1, 0, why, sizeof(why)), -ECONNREFUSED);
	lst_health_fini(h);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_note_table),
		cmocka_unit_test(test_backoff_and_due),
		cmocka_unit_test(test_full_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
