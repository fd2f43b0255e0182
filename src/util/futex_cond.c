/* SPDX-License-Identifier: MIT */
/* The futex lock's condition variable (futex_cond.h). */
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "futex_cond.h"

void ulnet__futex_cond_broadcast_slow(struct ulnet_futex_cond *c)
{
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_relaxed);
	syscall(SYS_futex, &c->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

bool ulnet__futex_cond_wait(struct ulnet_futex_cond *c, struct ulnet_futex_lock *l, uint64_t deadline_ns)
{
	/* read under the lock: a broadcast after our unlock moves it, and the futex wait returns at once */
	uint32_t seen = atomic_load_explicit(&c->seq, memory_order_relaxed);
	bool passed;

	atomic_fetch_add_explicit(&c->waiters, 1, memory_order_relaxed);
	ulnet__futex_unlock(l);
	/* the kernel's ETIMEDOUT, not a clock read: a wake-up at the deadline says "not passed" and the
	 * caller's next wait, already late, says it at once */
	passed = ulnet__futex_wait(&c->seq, seen, deadline_ns);
	ulnet__futex_lock(l);
	atomic_fetch_sub_explicit(&c->waiters, 1, memory_order_relaxed);
	return passed;
}
