/* SPDX-License-Identifier: MIT */
/* The contended path of the node lock, the event queues' and the selftest engine's locks (futex_lock.h)
 * and the futex calls under it. Holds are short (most under 1 us, the stats' histogram), and a
 * thread that sleeps on the lock costs a futex wait, a wake-up system call by the holder and two
 * context switches. So a thread that finds the lock taken first polls it for up to
 * ULNET_LOCK_SPIN_US (the holder runs on another core and lets go within that, typically; a lock
 * taken while polling stays in state 1, so its release makes no system call), and only then sleeps
 * on it. */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "futex_lock.h"

#define ULNET_LOCK_SPIN_US 4

void ulnet__futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

bool ulnet__futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t deadline_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / 1000000000u),
			       .tv_nsec = (long)(deadline_ns % 1000000000u) };

	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline (ulnet__now_ns's clock); EAGAIN
	 * (the word moved), EINTR and ETIMEDOUT all send the caller back to its own checks */
	return syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, seen, deadline_ns ? &ts : NULL, NULL,
		       FUTEX_BITSET_MATCH_ANY) == -1 && errno == ETIMEDOUT;
}

unsigned ulnet__futex_lock_wait(struct ulnet_futex_lock *l)
{
	unsigned sleeps = 0;

	/* 2 from here on: we may sleep, so the holder's release must wake someone */
	while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0) {
		ulnet__futex_wait(&l->word, 2, 0);
		sleeps++;
	}
	return sleeps;
}

unsigned ulnet__futex_lock_slow(struct ulnet_futex_lock *l)
{
	uint64_t t0 = ulnet__lock_ticks(), spin = ULNET_LOCK_SPIN_US * ulnet__lock_ticks_per_us;

	do {
		/* a few pauses between looks; a try (an atomic write to the holder's cache line) only
		 * when the lock looks free */
		for (int i = 0; i < 8; i++)
			ulnet__cpu_relax();
		if (atomic_load_explicit(&l->word, memory_order_relaxed) == 0 && ulnet__futex_trylock(l))
			return 0;
	} while (ulnet__lock_ticks() - t0 < spin);
	return ulnet__futex_lock_wait(l);
}
