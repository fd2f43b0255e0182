/* SPDX-License-Identifier: MIT */
/* Timers: a binary min-heap of deadlines on the node's clock, run by the loop after its io phase.
 * The clock is injectable (clock.c: ulnet__node_set_clock) so timeouts are tested without waiting. Timers are
 * intrusive (no allocation to arm one, except growing the heap array) and run under the node lock. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "internal.h"

static void heap_set(struct ulnet_node *node, unsigned i, struct ulnet_timer *t)
{
	node->timers[i] = t;
	t->idx = i + 1;
}

static void sift_up(struct ulnet_node *node, unsigned i)
{
	struct ulnet_timer *t = node->timers[i];

	while (i > 0) {
		unsigned parent = (i - 1) / 2;

		if (node->timers[parent]->deadline <= t->deadline)
			break;
		heap_set(node, i, node->timers[parent]);
		i = parent;
	}
	heap_set(node, i, t);
}

static void sift_down(struct ulnet_node *node, unsigned i)
{
	struct ulnet_timer *t = node->timers[i];

	for (;;) {
		unsigned c = 2 * i + 1;

		if (c >= node->n_timers)
			break;
		if (c + 1 < node->n_timers && node->timers[c + 1]->deadline < node->timers[c]->deadline)
			c++;
		if (t->deadline <= node->timers[c]->deadline)
			break;
		heap_set(node, i, node->timers[c]);
		i = c;
	}
	heap_set(node, i, t);
}

int ulnet__timer_arm(struct ulnet_node *node, struct ulnet_timer *t, uint64_t deadline)
{
	if (t->idx) {
		t->deadline = deadline;
		sift_up(node, t->idx - 1);
		sift_down(node, t->idx - 1);
		return 0;
	}
	if (node->n_timers == node->cap_timers) {
		unsigned ncap = node->cap_timers ? node->cap_timers * 2 : 64;
		struct ulnet_timer **n = realloc(node->timers, ncap * sizeof(*n));

		if (!n) {
			ULNET_LOG(CORE, ERR, "out of memory growing the timer heap to %u entries", ncap);
			return -ENOMEM;
		}
		node->timers = n;
		node->cap_timers = ncap;
	}
	t->deadline = deadline;
	heap_set(node, node->n_timers++, t);
	sift_up(node, node->n_timers - 1);
	return 0;
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
	unsigned i;

	if (!t->idx)
		return;
	i = t->idx - 1;
	t->idx = 0;
	if (i == --node->n_timers)
		return;
	{
		struct ulnet_timer *last = node->timers[node->n_timers];

		heap_set(node, i, last);
		sift_up(node, i);
		sift_down(node, last->idx - 1);
	}
}

unsigned ulnet__timers_run(struct ulnet_node *node, uint64_t now)
{
	unsigned n = 0;

	/* a callback may arm timers (even itself) or cancel others: re-read the top every time */
	while (node->n_timers && node->timers[0]->deadline <= now) {
		struct ulnet_timer *t = node->timers[0];

		ulnet__timer_cancel(node, t);
		t->fn(node, t, now);
		n++;
	}
	return n;
}

int ulnet__timers_next_ms(const struct ulnet_node *node, uint64_t now, int max_ms)
{
	uint64_t left;

	if (!node->n_timers)
		return max_ms;
	if (node->timers[0]->deadline <= now)
		return 0;
	left = (node->timers[0]->deadline - now + 999999) / 1000000;
	return left < (uint64_t)max_ms ? (int)left : max_ms;
}
