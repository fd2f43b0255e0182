/* SPDX-License-Identifier: MIT */
/* Event queues: unbounded FIFO of events with their own lock, so the core can push while holding the
 * node lock and applications can wait without it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include "internal.h"

struct ulnet_eq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ulnet_event *ring;
	size_t cap, head, count;
	int refs; /* MDs pointing at it */
	bool doomed; /* free when refs reaches 0 */
	unsigned waiters; /* threads inside ulnet_eq_wait's wait */
	bool quiet_send; /* a successful SEND that does not end its MD wakes nobody (ulnet_ping) */
	/* pushers between their unlock and their signal: the queue is not freed under them */
	atomic_uint signalling;
};

static void eq_free(ulnet_eq *eq)
{
	/* a pusher signals after it unlocked (so the woken waiter does not block on the lock it
	 * still holds); it is at most a few instructions from done */
	while (atomic_load(&eq->signalling))
		sched_yield();
	pthread_cond_destroy(&eq->cond);
	pthread_mutex_destroy(&eq->lock);
	free(eq->ring);
	free(eq);
}

int ulnet_eq_create(ulnet_eq **out)
{
	ulnet_eq *eq = calloc(1, sizeof(*eq));

	if (!eq)
		return -ENOMEM;
	pthread_mutex_init(&eq->lock, NULL);
	ulnet__cond_init(&eq->cond);
	*out = eq;
	return 0;
}

void ulnet__eq_quiet_send(ulnet_eq *eq)
{
	pthread_mutex_lock(&eq->lock);
	eq->quiet_send = true;
	pthread_mutex_unlock(&eq->lock);
}

int ulnet_eq_destroy(ulnet_eq *eq)
{
	if (!eq)
		return -EINVAL;
	pthread_mutex_lock(&eq->lock);
	if (eq->refs > 0) {
		pthread_mutex_unlock(&eq->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&eq->lock);
	eq_free(eq);
	return 0;
}

void ulnet__eq_ref(ulnet_eq *eq, int delta)
{
	bool gone;

	pthread_mutex_lock(&eq->lock);
	eq->refs += delta;
	gone = eq->doomed && eq->refs == 0;
	pthread_mutex_unlock(&eq->lock);
	if (gone)
		eq_free(eq);
}

void ulnet__eq_release(ulnet_eq *eq)
{
	bool gone;

	pthread_mutex_lock(&eq->lock);
	eq->doomed = true;
	gone = eq->refs == 0;
	pthread_mutex_unlock(&eq->lock);
	if (gone)
		eq_free(eq);
}

/* Push @ev; with @unref, also drop one reference in the same critical section, so a waiter that sees
 * the event (say an MD's last) and destroys the queue never finds the reference still held. */
static void eq_push(ulnet_eq *eq, const struct ulnet_event *ev, bool unref)
{
	bool gone, signal = false;

	pthread_mutex_lock(&eq->lock);
	if (eq->count == eq->cap) {
		size_t ncap = eq->cap ? eq->cap * 2 : 64;
		struct ulnet_event *n = malloc(ncap * sizeof(*n));

		if (!n) {
			/* Keep the event rather than lose it: block-free fallback is impossible here, so
			 * log loudly; this only happens when the process is out of memory. */
			ULNET_LOG(CORE, ERR, "event queue: out of memory growing to %zu events; event lost", ncap);
			goto out;
		}
		for (size_t i = 0; i < eq->count; i++)
			n[i] = eq->ring[(eq->head + i) % eq->cap];
		free(eq->ring);
		eq->ring = n;
		eq->cap = ncap;
		eq->head = 0;
	}
	eq->ring[(eq->head + eq->count) % eq->cap] = *ev;
	eq->count++;
	/* one wake-up per delivery: signal only a thread that waits, after the unlock */
	signal = eq->waiters > 0 &&
		 !(eq->quiet_send && ev->type == ULNET_EVENT_SEND && ev->status == 0 && !ev->unlinked);
	if (signal)
		atomic_fetch_add(&eq->signalling, 1);
out:
	if (unref)
		eq->refs--;
	gone = eq->doomed && eq->refs == 0;
	pthread_mutex_unlock(&eq->lock);
	if (signal) {
		pthread_cond_signal(&eq->cond);
		atomic_fetch_sub(&eq->signalling, 1);
	}
	if (gone)
		eq_free(eq);
}

void ulnet__eq_push(ulnet_eq *eq, const struct ulnet_event *ev)
{
	eq_push(eq, ev, false);
}

int ulnet_eq_wait(ulnet_eq *eq, int timeout_ms, struct ulnet_event *ev)
{
	struct timespec dl;
	bool have_dl = false;
	int rc = 0;

	if (!eq || !ev)
		return -EINVAL;
	pthread_mutex_lock(&eq->lock);
	while (eq->count == 0 && timeout_ms != 0) {
		int w;

		if (timeout_ms > 0 && !have_dl) {
			/* the deadline only when we wait: an event already queued costs no clock read */
			dl = ulnet__deadline_in((uint64_t)timeout_ms * 1000000u);
			have_dl = true;
		}
		eq->waiters++;
		if (timeout_ms < 0)
			w = pthread_cond_wait(&eq->cond, &eq->lock);
		else
			w = pthread_cond_timedwait(&eq->cond, &eq->lock, &dl);
		eq->waiters--;
		if (w == ETIMEDOUT)
			break;
	}
	if (eq->count > 0) {
		*ev = eq->ring[eq->head];
		eq->head = (eq->head + 1) % eq->cap;
		eq->count--;
		rc = 1;
	}
	pthread_mutex_unlock(&eq->lock);
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
	if (umd->eq)
		eq_push(umd->eq, ev, false);
}

void ulnet__event_deliver_unref(struct ulnet_node *node, const struct ulnet_md *umd, const struct ulnet_event *ev)
{
	if (umd->handler)
		ulnet__queue_cb(node, umd->handler, ev);
	if (umd->eq)
		eq_push(umd->eq, ev, true);
}
