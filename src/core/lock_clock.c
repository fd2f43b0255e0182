/* SPDX-License-Identifier: MIT */
/* The node lock's hold-time clock (internal.h: ulnet__lock_ticks). A hold is timed at every lock and
 * release, several times per message, so the clock must be cheap: on x86 with an invariant TSC it is
 * the TSC itself (one rdtsc, about half a vDSO clock_gettime here), elsewhere CLOCK_MONOTONIC. The
 * TSC rate is measured once per process against CLOCK_MONOTONIC; holds are converted to
 * microseconds with it (histogram bucket at release, the maximum when the stats are read). */
#include <pthread.h>
#include "internal.h"
#if ULNET_LOCK_TSC
#include <cpuid.h>
#endif

bool ulnet__lock_tsc;
uint64_t ulnet__lock_ticks_per_us = 1000; /* CLOCK_MONOTONIC ns until (unless) the TSC is calibrated */

#if ULNET_LOCK_TSC
/* One (TSC, clock) pair read close together; retried when something (preemption) came between. */
static void tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	for (int i = 0; i < 8; i++) {
		uint64_t a = __rdtsc(), t = ulnet__now_ns(), b = __rdtsc();

		*tsc = a + (b - a) / 2;
		*ns = t;
		if (b - a < 20000)
			return;
	}
}

static void lock_clock_calibrate(void)
{
	unsigned a, b, c, d;
	uint64_t c0, t0, c1, t1;

	/* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in every C- and P-state */
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
		return;
	tsc_pair(&c0, &t0);
	do
		tsc_pair(&c1, &t1);
	while (t1 - t0 < 200000); /* 200 us: the pairs' error (tens of ns) is well under 0.1% */
	if (c1 <= c0)
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
