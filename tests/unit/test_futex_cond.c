/* SPDX-License-Identifier: MIT */
/* The futex lock's condition variable (futex_cond.h): a timed wait ends at its CLOCK_MONOTONIC
 * deadline, not before, and says so, with the lock held again; a broadcast with no waiter leaves the
 * sequence word alone (no system call); a broadcast wakes every waiter, also one caught between its
 * unlock and its sleep (rounds of waiters that the broadcast races: a lost wake-up hangs the test). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "internal.h"
#include "futex_cond.h"

#define WAITERS 3
#define ROUNDS 200

static struct ulnet_futex_lock lock;
static struct ulnet_futex_cond cond;
static bool go; /* under lock */

static void deadline_passes(void **state)
{
	struct ulnet_futex_cond c = { 0 };
	struct ulnet_futex_lock l = { 0 };
	uint64_t t0, t1;
	bool passed;

	(void)state;
	ulnet__futex_lock(&l);
	t0 = ulnet__now_ns();
	do
		passed = ulnet__futex_cond_wait(&c, &l, t0 + 20000000u); /* 20 ms */
	while (!passed); /* an early return without a broadcast is allowed */
	t1 = ulnet__now_ns();
	assert_false(ulnet__futex_trylock(&l)); /* held again */
	ulnet__futex_unlock(&l);
	assert_true(t1 - t0 >= 20000000u);
	assert_int_equal(atomic_load(&c.waiters), 0);
}

static void broadcast_without_waiter_is_quiet(void **state)
{
	struct ulnet_futex_cond c = { 0 };

	(void)state;
	ulnet__futex_cond_broadcast(&c);
	assert_int_equal(atomic_load(&c.seq), 0);
}

static void *waiter(void *arg)
{
	bool timed_out = false;

	(void)arg;
	ulnet__futex_lock(&lock);
	while (!go)
		timed_out |= ulnet__futex_cond_wait(&cond, &lock, 0);
	ulnet__futex_unlock(&lock);
	return (void *)(uintptr_t)timed_out;
}

static void broadcast_wakes_all(void **state)
{
	(void)state;
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t th[WAITERS];

		go = false;
		for (int i = 0; i < WAITERS; i++)
			assert_int_equal(pthread_create(&th[i], NULL, waiter, NULL), 0);
		/* every waiter counted in: some may not have reached their sleep yet */
		while (atomic_load(&cond.waiters) < WAITERS)
			sched_yield();
		ulnet__futex_lock(&lock);
		go = true;
		ulnet__futex_cond_broadcast(&cond);
		ulnet__futex_unlock(&lock);
		for (int i = 0; i < WAITERS; i++) {
			void *timed_out;

			assert_int_equal(pthread_join(th[i], &timed_out), 0);
			assert_null(timed_out); /* no deadline: never "passed" */
		}
		assert_int_equal(atomic_load(&cond.waiters), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(deadline_passes),
		cmocka_unit_test(broadcast_without_waiter_is_quiet),
		cmocka_unit_test(broadcast_wakes_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
