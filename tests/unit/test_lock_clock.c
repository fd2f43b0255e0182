/* SPDX-License-Identifier: MIT */
/* The node lock's hold-time clock (lock_clock.c): a hold lands in the histogram bucket of its length and
 * the longest hold reads back in nanoseconds of CLOCK_MONOTONIC, whichever clock (TSC or not) timed it.
 * The hold is bracketed by CLOCK_MONOTONIC reads inside and outside it, so the check does not depend on
 * how fast the machine is or whether the thread is preempted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "internal.h"

static void hold_reads_back(void **state)
{
	struct ulnet_stats before, after;
	uint64_t outer0, inner0, inner1, outer1, got;
	unsigned b = 0;
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	ulnet_stats_get(node, &before);
	outer0 = ulnet__now_ns();
	ulnet__lock(node);
	inner0 = ulnet__now_ns();
	do
		inner1 = ulnet__now_ns();
	while (inner1 - inner0 < 3000000); /* 3 ms: bucket [2048, 4096) us unless preempted for long */
	ulnet__lock_release(node);
	outer1 = ulnet__now_ns();
	ulnet_stats_get(node, &after);
	got = after.lock_hold_max_ns;
	/* 1% for the rate measured against CLOCK_MONOTONIC (it is within 0.1%) */
	assert_true(got >= (inner1 - inner0) / 100 * 99);
	assert_true(got <= (outer1 - outer0) / 100 * 101);
	/* the hold is counted in the bucket of its length: [2^(b-1), 2^b) us for b >= 1 */
	for (uint64_t us = got / 1000; us; us >>= 1)
		b++;
	assert_true(b < ULNET_LOCK_HIST_BUCKETS);
	assert_true(after.lock_hold_hist[b] > before.lock_hold_hist[b]);
	ulnet_node_close(node);
}

static void ticks_to_ns(void **state)
{
	uint64_t tpu = ulnet__lock_ticks_per_us;

	(void)state;
	assert_true(tpu > 0);
	assert_int_equal(ulnet__lock_ticks_ns(0), 0);
	assert_int_equal(ulnet__lock_ticks_ns(tpu), 1000);
	assert_int_equal(ulnet__lock_ticks_ns(tpu * 3600000000ull), 3600000000000ull); /* an hour: no overflow */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hold_reads_back),
		cmocka_unit_test(ticks_to_ns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
