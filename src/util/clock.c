/* SPDX-License-Identifier: MIT */
/* The library's one clock (clock.h). Every duration, deadline and rate is CLOCK_MONOTONIC nanoseconds;
 * wall time only stamps what a peer or a session compares across restarts. Condition-variable deadlines
 * use the same monotonic clock, so a wall-clock step never shortens or stretches a wait.
 *
 * Lock hold times are read at every lock and release, several times per message, so that read must be
 * cheap: on x86 with an invariant TSC it is the TSC itself, elsewhere CLOCK_MONOTONIC. The TSC rate is
 * measured once per process against CLOCK_MONOTONIC, and holds are converted with it. */
#include <pthread.h>
#include <time.h>
#include "clock.h"

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

uint64_t ulnet__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts_ns(&ts);
}

uint64_t ulnet__now_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts_ns(&ts);
}

uint64_t ulnet__wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts_ns(&ts);
}

int ulnet__cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
	return -rc;
}

struct timespec ulnet__deadline_in(uint64_t ns)
{
	uint64_t t = ulnet__now_ns() + ns;

	return (struct timespec){ .tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull) };
}

#if ULNET_LOCK_TSC
#include <cpuid.h>
#endif

bool ulnet__lock_tsc;
uint64_t ulnet__lock_ticks_per_us = 1000; /* CLOCK_MONOTONIC ns until (unless) the TSC is calibrated */

#if ULNET_LOCK_TSC
/* One (TSC, clock) pair read close together: the tightest of several reads, since a clock read may
 * take microseconds (an instrumented build, a virtual machine) or be preempted. */
static uint64_t tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	*tsc = *ns = 0;

	for (int i = 0; i < 16; i++) {
		uint64_t a = __rdtsc(), t = ulnet__now_ns(), b = __rdtsc();

		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = t;
		}
	}
	return best;
}

static void lock_clock_calibrate(void)
{
	unsigned a, b, c, d;
	uint64_t c0, t0, c1, t1, s0, s1;

	/* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in every C- and P-state */
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
		return;
	s0 = tsc_pair(&c0, &t0);
	do
		s1 = tsc_pair(&c1, &t1);
	while (t1 - t0 < 1000000);
	/* over 1 ms, each pair within half its spread of one instant: an error over 0.1% stays on
	 * CLOCK_MONOTONIC */
	if (c1 <= c0 || (s0 + s1) / 2 * 1000 > c1 - c0)
		return;
	ulnet__lock_ticks_per_us = ((c1 - c0) * 1000 + (t1 - t0) / 2) / (t1 - t0);
	if (ulnet__lock_ticks_per_us == 0)
		ulnet__lock_ticks_per_us = 1000;
	else
		ulnet__lock_tsc = true;
}
#else
static void lock_clock_calibrate(void)
{
}
#endif

void ulnet__lock_clock_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, lock_clock_calibrate);
}

uint64_t ulnet__lock_ticks_ns(uint64_t ticks)
{
	return ticks / ulnet__lock_ticks_per_us * 1000 + ticks % ulnet__lock_ticks_per_us * 1000 / ulnet__lock_ticks_per_us;
}
