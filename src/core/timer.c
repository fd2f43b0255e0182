/* SPDX-License-Identifier: MIT */
/* Timers: binary min-heaps of deadlines on the node's clock. Each loop has one for what its owner arms
 * (LND timers, idle peers), run after its io phase; the node has one for MD transaction timeouts,
 * under the node lock, run by loop 0. The clock is injectable (clock.c: ulnet__node_set_clock) so
 * timeouts are tested without waiting. Timers are intrusive (no allocation to arm one, except growing
 * the heap array). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "internal.h"

static void heap_set(struct ulnet_timer_heap *h, unsigned i, struct ulnet_timer *t)
{
	h->v[i] = t;
	t->idx = i + 1;
}

static void sift_up(struct ulnet_timer_heap *h, unsigned i)
{
	struct ulnet_timer *t = h->v[i];

	while (i > 0) {
		unsigned parent = (i - 1) / 2;

		if (h->v[parent]->deadline <= t->deadline)
			break;
		heap_set(h, i, h->v[parent]);
		i = parent;
	}
	heap_set(h, i, t);
}

static void sift_down(struct ulnet_timer_heap *h, unsigned i)
{
	struct ulnet_timer *t = h->v[i];

	for (;;) {
		unsigned c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1]->deadline < h->v[c]->deadline)
			c++;
		if (t->deadline <= h->v[c]->deadline)
			break;
		heap_set(h, i, h->v[c]);
		i = c;
	}
	heap_set(h, i, t);
}

static void heap_cancel(struct ulnet_timer *t)
{
	struct ulnet_timer_heap *h = t->heap;
	unsigned i;

	if (!t->idx)
		return;
	i = t->idx - 1;
	t->idx = 0;
	if (i == --h->n)
		return;
	{
		struct ulnet_timer *last = h->v[h->n];

		heap_set(h, i, last);
		sift_up(h, i);
		sift_down(h, last->idx - 1);
	}
}

static int heap_arm(struct ulnet_timer_heap *h, struct ulnet_timer *t, uint64_t deadline)
{
	if (t->idx && t->heap != h)
		heap_cancel(t); /* armed by another owner (a watcher moved): it runs here from now on */
	if (t->idx) {
		t->deadline = deadline;
		sift_up(h, t->idx - 1);
		sift_down(h, t->idx - 1);
		return 0;
	}
	if (h->n == h->cap) {
		unsigned ncap = h->cap ? h->cap * 2 : 64;
		struct ulnet_timer **n = realloc(h->v, ncap * sizeof(*n));

		if (!n) {
			ULNET_LOG(CORE, ERR, "out of memory growing a timer heap to %u entries", ncap);
			return -ENOMEM;
		}
		h->v = n;
		h->cap = ncap;
	}
	t->deadline = deadline;
	t->heap = h;
	heap_set(h, h->n++, t);
	sift_up(h, h->n - 1);
	return 0;
}

/* The heap of the loop the caller owns (a test thread that owns none: loop 0's, before it starts). */
static struct ulnet_timer_heap *owner_heap(struct ulnet_node *node)
{
	struct ulnet_loop *own = ulnet__owned(node);

	return own ? &own->timers : &node->loops[0].timers;
}

int ulnet__timer_arm(struct ulnet_node *node, struct ulnet_timer *t, uint64_t deadline)
{
	return heap_arm(owner_heap(node), t, deadline);
}

int ulnet__timer_arm_by(struct ulnet_node *node, struct ulnet_timer *t, uint64_t deadline)
{
	if (node->clock) { /* a test's clock: the same distance from its now */
		uint64_t real = ulnet__now_ns(), now = ulnet__node_now(node);

		deadline = deadline > real ? now + (deadline - real) : now;
	}
	if (t->idx && t->deadline <= deadline)
		return 0;
	return ulnet__timer_arm(node, t, deadline);
}

void ulnet__timer_cancel(struct ulnet_node *node, struct ulnet_timer *t)
{
	(void)node;
	heap_cancel(t);
}

int ulnet__node_timer_arm(struct ulnet_node *node, struct ulnet_timer *t, uint64_t deadline)
{
	int rc = heap_arm(&node->timers, t, deadline);

	atomic_store_explicit(&node->timers_next, ulnet__timers_first(&node->timers), memory_order_relaxed);
	return rc;
}

void ulnet__node_timer_cancel(struct ulnet_node *node, struct ulnet_timer *t)
{
	heap_cancel(t);
	atomic_store_explicit(&node->timers_next, ulnet__timers_first(&node->timers), memory_order_relaxed);
}

unsigned ulnet__timers_run(struct ulnet_node *node, struct ulnet_timer_heap *h, uint64_t now)
{
	unsigned n = 0;

	/* a callback may arm timers (even itself) or cancel others: re-read the top every time */
	while (h->n && h->v[0]->deadline <= now) {
		struct ulnet_timer *t = h->v[0];

		heap_cancel(t);
		t->fn(node, t, now);
		n++;
	}
	return n;
}

uint64_t ulnet__timers_first(const struct ulnet_timer_heap *h)
{
	return h->n ? h->v[0]->deadline : UINT64_MAX;
}

void ulnet__node_timers_run(struct ulnet_node *node, uint64_t now)
{
	if (atomic_load_explicit(&node->timers_next, memory_order_relaxed) > now)
		return;
	ulnet__lock(node);
	ulnet__timers_run(node, &node->timers, now);
	atomic_store_explicit(&node->timers_next, ulnet__timers_first(&node->timers), memory_order_relaxed);
	ulnet__unlock(node);
}
