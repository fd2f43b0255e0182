/* SPDX-License-Identifier: MIT */
/* The one clock (clock.c). The public clock, the monotonic deadline of a timed condition wait, and
 * the node lock's hold-time ticks: a hold lands in the histogram bucket of its length and
 * the longest hold reads back in nanoseconds of CLOCK_MONOTONIC, whichever clock (TSC or not) timed it.
 * The hold is bracketed by CLOCK_MONOTONIC reads inside and outside it, so the check does not depend on
 * how fast the machine is or whether the thread is preempted. */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "internal.h"
#include "tst_owner.h"

/* One hold of at least hold_ns; true once the node's longest hold is this one, as read back. Another
 * holder (a loop thread's turn, the open) may have been preempted for longer on a loaded machine: the
 * caller then lengthens the hold until it is the longest. */
static bool hold_once(ulnet_node *node, bool try, uint64_t hold_ns)
{
	struct ulnet_stats before, after;
	uint64_t outer0, inner0, inner1, outer1, got;
	unsigned b = 0;

	ulnet_stats_get(node, &before);
	outer0 = ulnet__now_ns();
	if (try)
		while (!ulnet__trylock(node)) /* a loop thread's turn holds it for a moment */
			outer0 = ulnet__now_ns();
	else
		ulnet__lock(node);
	inner0 = ulnet__now_ns();
	do
		inner1 = ulnet__now_ns();
	while (inner1 - inner0 < hold_ns);
	ulnet__lock_release(node);
	outer1 = ulnet__now_ns();
	ulnet_stats_get(node, &after);
	got = after.lock_hold_max_ns;
	/* 1% for the rate measured against CLOCK_MONOTONIC (it is within 0.1%) */
	assert_true(got >= (inner1 - inner0) / 100 * 99);
	if (got > (outer1 - outer0) / 100 * 101)
		return false; /* someone else's hold is the longest */
	/* the hold is counted in the bucket of its length: [2^(b-1), 2^b) us for b >= 1, the last one
	 * open-ended (a hold preempted for tens of ms on a loaded machine lands there) */
	for (uint64_t us = got / 1000; us; us >>= 1)
		b++;
	if (b > ULNET_LOCK_HIST_BUCKETS - 1)
		b = ULNET_LOCK_HIST_BUCKETS - 1;
	assert_true(after.lock_hold_hist[b] > before.lock_hold_hist[b]);
	return true;
}

static void hold_reads_back_taken(bool try)
{
	uint64_t hold_ns = 3000000; /* 3 ms: bucket [2048, 4096) us unless preempted for long */
	ulnet_node *node;
	bool read_back = false;

	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	for (int i = 0; i < 7 && !read_back; i++, hold_ns *= 2) /* up to 192 ms */
		read_back = hold_once(node, try, hold_ns);
	assert_true(read_back);
	ulnet_node_close(node);
}

static void hold_reads_back(void **state)
{
	(void)state;
	hold_reads_back_taken(false);
}

/* ulnet__trylock (a busy-polling loop's hooks, loop.c) times its holds as ulnet__lock does. */
static void trylock_hold_reads_back(void **state)
{
	(void)state;
	hold_reads_back_taken(true);
}

static void *trylock_thread(void *arg)
{
	return (void *)(uintptr_t)ulnet__trylock(arg);
}

/* A held lock: ulnet__trylock returns false at once, and takes it once it is free. */
static void trylock_held(void **state)
{
	ulnet_node *node;
	pthread_t t;
	void *got;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	ulnet__lock(node);
	assert_int_equal(pthread_create(&t, NULL, trylock_thread, node), 0);
	assert_int_equal(pthread_join(t, &got), 0);
	assert_false((uintptr_t)got);
	ulnet__lock_release(node);
	while (!ulnet__trylock(node))
		; /* a loop thread's turn */
	assert_true(node->lock.t0 != 0); /* timed */
	ulnet__lock_release(node);
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

/* ulnet_clock_ns is the library's monotonic clock, the one ping times and timeouts use. */
static void public_clock_is_the_core_clock(void **state)
{
	uint64_t a = ulnet__now_ns(), b = ulnet_clock_ns(), c = ulnet__now_ns();

	(void)state;
	assert_true(a <= b && b <= c);
}

/* A wait on a condition made by ulnet__cond_init ends at a ulnet__deadline_in deadline, on the
 * monotonic clock: not before it, whatever the wall clock says. */
static void cond_deadline_on_the_same_clock(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	uint64_t t0, t1;
	struct timespec dl;
	int rc;

	(void)state;
	assert_int_equal(ulnet__cond_init(&cv), 0);
	pthread_mutex_lock(&m);
	t0 = ulnet__now_ns();
	dl = ulnet__deadline_in(20000000u); /* 20 ms */
	do
		rc = pthread_cond_timedwait(&cv, &m, &dl);
	while (rc == 0); /* a spurious wake-up */
	t1 = ulnet__now_ns();
	pthread_mutex_unlock(&m);
	assert_int_equal(rc, ETIMEDOUT);
	assert_true(t1 - t0 >= 20000000u);
	pthread_cond_destroy(&cv);
}

/* The node clock is the core clock unless a test injects one; the coarse read never runs ahead. */
static uint64_t fixed_clock(void *arg)
{
	return *(uint64_t *)arg;
}

static void node_clock(void **state)
{
	uint64_t fixed = 42, coarse, fine;
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	tst_world_stop(node, NULL); /* the loops read the node clock as their owners */
	coarse = ulnet__node_now_coarse(node);
	fine = ulnet__node_now(node);
	assert_true(coarse <= fine);
	/* the LNDs' coarse stamp (timeouts, keepalives): never ahead, and within a clock tick */
	coarse = ulnet__now_coarse_ns();
	fine = ulnet__now_ns();
	assert_true(coarse <= fine);
	assert_true(fine - coarse < 100000000u); /* a tick is 1-10 ms; 100 ms for a preempted test */
	ulnet__node_set_clock(node, fixed_clock, &fixed);
	assert_int_equal(ulnet__node_now(node), 42);
	assert_int_equal(ulnet__node_now_coarse(node), 42);
	ulnet__node_set_clock(node, NULL, NULL);
	tst_world_go(node);
	ulnet_node_close(node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(public_clock_is_the_core_clock),
		cmocka_unit_test(cond_deadline_on_the_same_clock),
		cmocka_unit_test(node_clock),
		cmocka_unit_test(hold_reads_back),
		cmocka_unit_test(trylock_hold_reads_back),
		cmocka_unit_test(trylock_held),
		cmocka_unit_test(ticks_to_ns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
