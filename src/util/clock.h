/* SPDX-License-Identifier: MIT */
/* The one clock: monotonic for every duration, deadline and rate; wall time only for stamps a peer or a
 * session compares across restarts (an LND's incarnation, a selftest session id). And the cheap tick
 * that times lock holds and spins. */
#ifndef ULNET_CLOCK_H
#define ULNET_CLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

uint64_t ulnet__now_ns(void); /* CLOCK_MONOTONIC */
/* The same at clock-tick resolution (a few ms; never ahead of ulnet__now_ns), a fraction of the cost:
 * for per-message stamps that count in seconds (timeouts, keepalives), compared with ulnet__now_ns
 * readings (they fire at most a tick early). */
uint64_t ulnet__now_coarse_ns(void);
uint64_t ulnet__wall_ns(void); /* CLOCK_REALTIME */
/* A condition variable timed on that clock, and the absolute deadline @ns from now to wait for on it. */
int ulnet__cond_init(pthread_cond_t *cv);
struct timespec ulnet__deadline_in(uint64_t ns);

/* Lock ticks: the TSC where it runs at a constant rate, else CLOCK_MONOTONIC ns. */
#if defined(__x86_64__) || defined(__i386__)
#define ULNET_LOCK_TSC 1
#include <x86intrin.h>
#else
#define ULNET_LOCK_TSC 0
#endif
extern bool ulnet__lock_tsc; /* the TSC is the clock (set once, before any node) */
extern uint64_t ulnet__lock_ticks_per_us;
void ulnet__lock_clock_init(void); /* once per process: first node or event queue */
uint64_t ulnet__lock_ticks_ns(uint64_t ticks);

static inline uint64_t ulnet__lock_ticks(void)
{
#if ULNET_LOCK_TSC
	if (ulnet__lock_tsc)
		return __rdtsc();
#endif
	return ulnet__now_ns();
}

#endif
