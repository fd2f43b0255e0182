/* SPDX-License-Identifier: MIT */
/* The node lock's contended path (internal.h: ulnet__lock). Holds are short (most under 1 us, the
 * stats' histogram), and a thread that sleeps on a glibc mutex costs a futex wait, a wake-up syscall
 * by the holder and two context switches; worse, the mutex stays marked contended, so the sleeper's
 * own unlock makes a wake-up syscall too, waiter or not. So a thread that finds the lock taken first
 * polls it for up to ULNET_LOCK_SPIN_US (the holder runs on another core and lets go within that,
 * typically; an acquired trylock leaves the mutex uncontended), and only then sleeps on it. */
#include <pthread.h>
#include "internal.h"

#define ULNET_LOCK_SPIN_US 4

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

void ulnet__lock_contended(struct ulnet_node *node)
{
	uint64_t t0 = ulnet__lock_ticks(), spin = ULNET_LOCK_SPIN_US * ulnet__lock_ticks_per_us;

	do {
		/* a few pauses between attempts: a try is an atomic write to the holder's cache line */
		for (int i = 0; i < 8; i++)
			cpu_relax();
		if (pthread_mutex_trylock(&node->lock) == 0)
			return;
	} while (ulnet__lock_ticks() - t0 < spin);
	pthread_mutex_lock(&node->lock);
}
