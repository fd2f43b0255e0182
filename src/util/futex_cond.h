/* SPDX-License-Identifier: MIT */
/* A condition variable for the futex lock (futex_lock.h), for waits whose wake-ups are rare next to
 * the lock's use (the selftest engine's: a test done, a console RPC back, a stop). A broadcast bumps
 * a sequence word and wakes its sleepers; a waiter reads the word under the lock and sleeps only
 * while it has not moved, so a broadcast between the waiter's unlock and its sleep is not lost.
 * A broadcast that finds no waiter is a load, not a system call. Waits may end without a broadcast
 * (a signal, another condition's broadcast): callers loop on their condition, read under the lock,
 * which is also what carries the happens-before edge (a futex wake is none, for ThreadSanitizer). */
#ifndef ULNET_FUTEX_COND_H
#define ULNET_FUTEX_COND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "futex_lock.h"

/* All zero is ready to use; nothing to destroy. */
struct ulnet_futex_cond {
	_Atomic uint32_t seq;     /* the futex word: bumped by a broadcast that finds a waiter */
	_Atomic uint32_t waiters; /* threads between their read of seq and their retaking of the lock */
};

/* Wake every waiter. Call it with the lock held, or after changing the condition under the lock: a
 * waiter that checked the condition before the change counted itself in under the lock, so it is
 * seen here. */
void ulnet__futex_cond_broadcast_slow(struct ulnet_futex_cond *c);

static inline void ulnet__futex_cond_broadcast(struct ulnet_futex_cond *c)
{
	if (atomic_load_explicit(&c->waiters, memory_order_relaxed))
		ulnet__futex_cond_broadcast_slow(c);
}

/* With @l held: release it, sleep until a broadcast or until @deadline_ns (absolute,
 * CLOCK_MONOTONIC as ulnet__now_ns; 0: none), take @l again. True if it slept until the deadline.
 * (A wake-up at the deadline may say false: the caller checks its condition and waits again.) */
bool ulnet__futex_cond_wait(struct ulnet_futex_cond *c, struct ulnet_futex_lock *l, uint64_t deadline_ns);

#endif
