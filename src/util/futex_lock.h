/* SPDX-License-Identifier: MIT */
/* The node lock, the loops' owner locks and the leaf locks (mailboxes, handlers, event queues), on
 * Linux futexes. A message round trip takes them a dozen times: glibc's mutex spends ~30 instructions
 * in each trylock and each unlock (type and elision checks, the adaptive mutex's bookkeeping), this
 * one an atomic exchange. Three states (0 free, 1 held, 2 held and maybe waited for): only a release that finds
 * 2 makes a system call. Acquire and release orderings carry the happens-before edges, which is
 * what ThreadSanitizer sees too. */
#ifndef ULNET_FUTEX_LOCK_H
#define ULNET_FUTEX_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct ulnet_futex_lock {
	_Atomic uint32_t word;
};

/* One step of a polling loop: tells the core (and a sibling hyperthread) that this one waits. */
static inline void ulnet__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#elif defined(__powerpc64__)
	__asm__ __volatile__("or 27,27,27"); /* low thread priority while polling */
	__asm__ __volatile__("or 2,2,2");    /* back to medium */
#endif
}

static inline bool ulnet__futex_trylock(struct ulnet_futex_lock *l)
{
	uint32_t free_word = 0;

	return atomic_compare_exchange_strong_explicit(&l->word, &free_word, 1, memory_order_acquire,
						       memory_order_relaxed);
}

/* The lock is taken: sleep until it is ours (it may be handed on to another sleeper first). Returns
 * the futex waits it took. */
unsigned ulnet__futex_lock_wait(struct ulnet_futex_lock *l);
/* Wake one sleeper on @word (a release found the lock waited for, or a park's sequence moved). */
void ulnet__futex_wake(_Atomic uint32_t *word);
/* Sleep while @word is @seen, until a wake, or until @deadline_ns (CLOCK_MONOTONIC; 0: none).
 * True if it slept until the deadline. */
bool ulnet__futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t deadline_ns);

/* Taken: poll it briefly before sleeping on it (futex.c). */
unsigned ulnet__futex_lock_slow(struct ulnet_futex_lock *l);

/* Take @l; the futex waits that took (0: free, or freed while we polled). */
static inline unsigned ulnet__futex_lock(struct ulnet_futex_lock *l)
{
	return ulnet__futex_trylock(l) ? 0 : ulnet__futex_lock_slow(l);
}

static inline void ulnet__futex_unlock(struct ulnet_futex_lock *l)
{
	if (atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2)
		ulnet__futex_wake(&l->word);
}

#endif
