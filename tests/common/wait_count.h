/* SPDX-License-Identifier: MIT */
/* Test helper: wait until a counter another thread bumps reaches a value, polling (never a sleep);
 * fails the test after 10 s. Header-only; include after cmocka.h. */
#ifndef ULNET_TEST_WAIT_COUNT_H
#define ULNET_TEST_WAIT_COUNT_H

#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static uint64_t wait_count_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait (a poll of nothing, 1 ms) until *@v reaches @want. */
static void wait_count(atomic_uint *v, unsigned want)
{
	uint64_t end = wait_count_now_ms() + 10000;

	while (atomic_load(v) < want) {
		if (wait_count_now_ms() > end)
			fail_msg("waited 10 s for %u (at %u)", want, atomic_load(v));
		poll(NULL, 0, 1);
	}
}

#endif
