/* SPDX-License-Identifier: MIT */
/* Event queues: unbounded FIFO of events with their own lock, so the core can push while holding the
 * node lock and applications can wait without it. A waiter sleeps on a futex word the pushers bump,
 * not on a condition variable: glibc's condition wait takes the mutex back marked contended, so the
 * woken thread's next unlock makes a futex call whether anyone waits or not, and a signal may cost
 * two. Here a wake-up costs the pusher's one FUTEX_WAKE and the waiter's one FUTEX_WAIT. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

struct ulnet_eq {
	struct ulnet_futex_lock lock; /* short holds: no condition waits on it */
	_Atomic uint32_t seq; /* the futex word: bumped by every push, under the lock */
	struct ulnet_event *ring;
	size_t cap, head, count; /* cap: 0 or a power of two */
	int refs; /* MDs pointing at it */
	bool doomed; /* free when refs reaches 0 */
	unsigned waiters; /* threads inside ulnet_eq_wait's wait */
	/* wake-ups sent and not yet taken by a returning waiter: a waiter woken once is not woken again
	 * by every push (every completion phase) before it gets a core */
	unsigned woken;
	bool quiet_send; /* a successful SEND that does not end its MD wakes nobody (ulnet_ping) */
	uint64_t spin_ticks; /* ulnet_eq_set_spin, in ulnet__lock_ticks */
	/* pushers between their unlock and their signal: the queue is not freed under them */
	atomic_uint signalling;
	bool signal_deferred; /* on a pusher's deferred list (eq_defer): one signal for its batch */
};

/* The queues this thread pushed to inside a completion phase (ulnet__eq_defer_begin/_end) and owes a
 * signal: a batch of events (a sendmsg's worth of SENDs) wakes a waiter once, at the end of the
 * phase, instead of at its first event, where the woken thread would contend for the queue's lock
 * with the pushes that follow and take the events one wake-up at a time. Each entry holds the
 * queue's `signalling` count, so the queue is not freed before the signal. */
#define EQ_DEFER_MAX 8
static _Thread_local struct {
	ulnet_eq *eq[EQ_DEFER_MAX];
	unsigned n;
	unsigned depth; /* nested completion phases: the outermost signals */
} eq_defer ULNET_TLS_IE; /* internal.h */

/* Wake up to @n threads sleeping in ulnet_eq_wait (the lock not held). */
static void eq_wake(ulnet_eq *eq, int n)
{
	syscall(SYS_futex, &eq->seq, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static void eq_signal_deferred(ulnet_eq *eq)
{
	size_t wake;

	ulnet__futex_lock(&eq->lock);
	eq->signal_deferred = false;
	wake = eq->waiters - eq->woken < eq->count ? eq->waiters - eq->woken : eq->count;
	eq->woken += (unsigned)wake;
	ulnet__futex_unlock(&eq->lock);
	if (wake) /* several waiters, several events: each would have had its signal */
		eq_wake(eq, wake > INT_MAX ? INT_MAX : (int)wake);
	atomic_fetch_sub(&eq->signalling, 1);
}

/* Signal now what this thread deferred for @eq (it is about to be freed by this thread). */
static void eq_defer_drop(ulnet_eq *eq)
{
	for (unsigned i = 0; i < eq_defer.n; i++)
		if (eq_defer.eq[i] == eq) {
			eq_defer.eq[i] = eq_defer.eq[--eq_defer.n];
			eq_signal_deferred(eq);
			return;
		}
}

void ulnet__eq_defer_begin(void)
{
	eq_defer.depth++;
}

void ulnet__eq_defer_end(void)
{
	if (--eq_defer.depth)
		return;
	while (eq_defer.n)
		eq_signal_deferred(eq_defer.eq[--eq_defer.n]);
}

static void eq_free(ulnet_eq *eq)
{
	/* a pusher signals after it unlocked (so the woken waiter does not block on the lock it
	 * still holds); it is at most a few instructions from done, or the end of its completion
	 * phase (which waits for nobody: only this queue's lock, a leaf); ours we send now */
	eq_defer_drop(eq);
	while (atomic_load(&eq->signalling))
		sched_yield();
	free(eq->ring);
	free(eq);
}

int ulnet_eq_create(ulnet_eq **out)
{
	ulnet_eq *eq = calloc(1, sizeof(*eq));

	if (!eq)
		return -ENOMEM;
	/* the lock's contended path times its spin in calibrated ticks: an application may contend a
	 * queue before it opens its first node, which otherwise calibrates them */
	ulnet__lock_clock_init();
	*out = eq;
	return 0;
}

int ulnet_eq_set_spin(ulnet_eq *eq, unsigned spin_us)
{
	if (!eq)
		return -EINVAL;
	if (spin_us > ULNET_EQ_SPIN_MAX_US) {
		ULNET_LOG(CORE, ERR, "event queue spin %u us: at most %u (ulnet_eq_set_spin)", spin_us,
			  ULNET_EQ_SPIN_MAX_US);
		return -EINVAL;
	}
	ulnet__futex_lock(&eq->lock);
	eq->spin_ticks = spin_us * ulnet__lock_ticks_per_us;
	ulnet__futex_unlock(&eq->lock);
	return 0;
}

/* Poll @eq's futex word, which every push moves, until it leaves @seq or @spin ticks pass (the lock
 * not held: the word is read, never written); the caller looks at the queue either way. */
static void eq_spin(ulnet_eq *eq, uint32_t seq, uint64_t spin)
{
	uint64_t end = ulnet__lock_ticks() + spin;

	for (unsigned i = 1; atomic_load_explicit(&eq->seq, memory_order_acquire) == seq; i++) {
		ulnet__cpu_relax();
		if (!(i % 32) && ulnet__lock_ticks() >= end)
			return;
	}
}

void ulnet__eq_quiet_send(ulnet_eq *eq)
{
	ulnet__futex_lock(&eq->lock);
	eq->quiet_send = true;
	ulnet__futex_unlock(&eq->lock);
}

int ulnet_eq_destroy(ulnet_eq *eq)
{
	if (!eq)
		return -EINVAL;
	ulnet__futex_lock(&eq->lock);
	if (eq->refs > 0) {
		ulnet__futex_unlock(&eq->lock);
		return -EBUSY;
	}
	ulnet__futex_unlock(&eq->lock);
	eq_free(eq);
	return 0;
}

void ulnet__eq_ref(ulnet_eq *eq, int delta)
{
	bool gone;

	ulnet__futex_lock(&eq->lock);
	eq->refs += delta;
	gone = eq->doomed && eq->refs == 0;
	ulnet__futex_unlock(&eq->lock);
	if (gone)
		eq_free(eq);
}

void ulnet__eq_release(ulnet_eq *eq)
{
	bool gone;

	ulnet__futex_lock(&eq->lock);
	eq->doomed = true;
	gone = eq->refs == 0;
	ulnet__futex_unlock(&eq->lock);
	if (gone)
		eq_free(eq);
}

/* Push @ev; with @unref, also drop one reference in the same critical section, so a waiter that sees
 * the event (say an MD's last) and destroys the queue never finds the reference still held. false: the
 * event was dropped (out of memory growing the queue; the caller counts it). */
static bool eq_push(ulnet_eq *eq, const struct ulnet_event *ev, bool unref)
{
	bool gone, signal = false, pushed = false;

	ulnet__futex_lock(&eq->lock);
	if (eq->count == eq->cap) {
		size_t ncap = eq->cap ? eq->cap * 2 : 64;
		struct ulnet_event *n = malloc(ncap * sizeof(*n));

		if (!n) {
			/* the pusher may hold the node lock and must not block: the event is lost, logged
			 * here and counted in the node's events_dropped */
			ULNET_LOG(CORE, ERR, "event queue: out of memory growing to %zu events; %s event lost "
				  "(stats: events_dropped)", ncap, ulnet_event_kind_name(ev->type));
			goto out;
		}
		for (size_t i = 0; i < eq->count; i++)
			n[i] = eq->ring[(eq->head + i) & (eq->cap - 1)];
		free(eq->ring);
		eq->ring = n;
		eq->cap = ncap;
		eq->head = 0;
	}
	eq->ring[(eq->head + eq->count) & (eq->cap - 1)] = *ev;
	eq->count++;
	pushed = true;
	atomic_fetch_add_explicit(&eq->seq, 1, memory_order_relaxed);
	/* one wake-up per delivery: signal only a thread that waits, after the unlock */
	signal = eq->waiters > eq->woken &&
		 !(eq->quiet_send && ev->type == ULNET_EVENT_SEND && ev->status == 0 && !ev->unlinked);
	if (signal && eq->signal_deferred) {
		signal = false; /* this thread's completion phase signals it at its end */
	} else if (signal && eq_defer.depth && eq_defer.n < EQ_DEFER_MAX) {
		eq->signal_deferred = true;
		eq_defer.eq[eq_defer.n++] = eq;
		atomic_fetch_add(&eq->signalling, 1);
		signal = false;
	} else if (signal) {
		eq->woken++;
		atomic_fetch_add(&eq->signalling, 1);
	}
out:
	if (unref)
		eq->refs--;
	gone = eq->doomed && eq->refs == 0;
	ulnet__futex_unlock(&eq->lock);
	if (signal) {
		eq_wake(eq, 1);
		atomic_fetch_sub(&eq->signalling, 1);
	}
	if (gone)
		eq_free(eq);
	return pushed;
}

bool ulnet__eq_push(ulnet_eq *eq, const struct ulnet_event *ev)
{
	return eq_push(eq, ev, false);
}

int ulnet_eq_wait(ulnet_eq *eq, int timeout_ms, struct ulnet_event *ev)
{
	struct timespec dl;
	bool have_dl = false, spun = false;
	int rc = 0;

	if (!eq || !ev)
		return -EINVAL;
	ulnet__futex_lock(&eq->lock);
	while (eq->count == 0 && timeout_ms != 0) {
		uint32_t seq;
		int w;

		if (eq->spin_ticks && !spun) {
			/* once per call, before any sleep; not counted in waiters, so pushes make no
			 * wake-up call for us meanwhile (a push moves seq, whether it signals now or at
			 * the end of its batch) */
			uint64_t spin = eq->spin_ticks;

			spun = true;
			seq = atomic_load_explicit(&eq->seq, memory_order_relaxed);
			ulnet__futex_unlock(&eq->lock);
			eq_spin(eq, seq, spin);
			ulnet__futex_lock(&eq->lock);
			continue;
		}
		if (timeout_ms > 0 && !have_dl) {
			/* the deadline only when we wait: an event already queued costs no clock read */
			dl = ulnet__deadline_in((uint64_t)timeout_ms * 1000000u);
			have_dl = true;
		}
		/* a push between our unlock and the FUTEX_WAIT changes seq: the wait returns at once */
		seq = atomic_load_explicit(&eq->seq, memory_order_relaxed);
		eq->waiters++;
		ulnet__futex_unlock(&eq->lock);
		w = syscall(SYS_futex, &eq->seq, FUTEX_WAIT_BITSET_PRIVATE, seq, have_dl ? &dl : NULL, NULL,
			    FUTEX_BITSET_MATCH_ANY) < 0 ? errno : 0;
		ulnet__futex_lock(&eq->lock);
		eq->waiters--;
		if (eq->woken) /* ours, or one a waiter that left by itself leaves unused (harmless) */
			eq->woken--;
		if (w == ETIMEDOUT)
			break;
	}
	if (eq->count > 0) {
		*ev = eq->ring[eq->head];
		eq->head = (eq->head + 1) & (eq->cap - 1);
		eq->count--;
		rc = 1;
	}
	ulnet__futex_unlock(&eq->lock);
	return rc;
}

int ulnet__eq_wait_busy(ulnet_eq *eq, uint64_t spin_ns, int timeout_ms, struct ulnet_event *ev)
{
	if (spin_ns) {
		uint64_t end = ulnet__now_ns() + spin_ns;

		do {
			int rc = ulnet_eq_wait(eq, 0, ev);

			if (rc != 0)
				return rc;
			sched_yield();
		} while (ulnet__now_ns() < end);
	}
	return ulnet_eq_wait(eq, timeout_ms, ev);
}

const char *ulnet_event_kind_name(enum ulnet_event_kind kind)
{
	switch (kind) {
	case ULNET_EVENT_GET: return "GET";
	case ULNET_EVENT_PUT: return "PUT";
	case ULNET_EVENT_REPLY: return "REPLY";
	case ULNET_EVENT_ACK: return "ACK";
	case ULNET_EVENT_SEND: return "SEND";
	case ULNET_EVENT_UNLINK: return "UNLINK";
	}
	return "?";
}

void ulnet__event_deliver(struct ulnet_node *node, const struct ulnet_md *umd, const struct ulnet_event *ev)
{
	if (umd->handler)
		ulnet__queue_cb(node, umd->handler, ev);
	if (umd->eq && !eq_push(umd->eq, ev, false))
		atomic_fetch_add_explicit(&node->events_lost, 1, memory_order_relaxed);
}

void ulnet__event_deliver_unref(struct ulnet_node *node, const struct ulnet_md *umd, const struct ulnet_event *ev)
{
	if (ulnet__owed_pending()) { /* an LND release comes first (lnd_contract.c) */
		ulnet__event_deliver_after(node, umd, ev);
		return;
	}
	ulnet__event_push_unref(node, umd, ev);
}

void ulnet__event_push_unref(struct ulnet_node *node, const struct ulnet_md *umd, const struct ulnet_event *ev)
{
	if (umd->handler)
		ulnet__queue_cb(node, umd->handler, ev);
	if (umd->eq && !eq_push(umd->eq, ev, true))
		atomic_fetch_add_explicit(&node->events_lost, 1, memory_order_relaxed);
}
