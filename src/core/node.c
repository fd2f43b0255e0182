/* SPDX-License-Identifier: MIT */
/* Node life cycle: options, the lo NI, the ping service and the loop thread; counters. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

ULNET_LOG_SUBSYS_DEFINE(CORE, "CORE")

int ulnet__page_size_check(uint32_t ps, char *why, size_t whylen)
{
	if (ps < 4096 || ps > (2u << 20) || (ps & (ps - 1))) {
		snprintf(why, whylen, "must be a power of two from 4096 to 2097152");
		return -EINVAL;
	}
	return 0;
}

static int check_page_size(uint32_t ps)
{
	char why[80];
	int rc = ulnet__page_size_check(ps, why, sizeof(why));

	if (rc)
		ULNET_LOG(CORE, ERR, "node: page_size %u: %s (setting page_size)", ps, why);
	return rc;
}

/* Loop threads: the option, else ULNET_LOOPS from the environment (whole test suites run with several
 * loops that way), else 1. */
static int loops_option(const struct ulnet_node_opts *opts, unsigned *out)
{
	const char *env = getenv("ULNET_LOOPS");
	unsigned long v = opts && opts->loops ? opts->loops : 1;

	if ((!opts || !opts->loops) && env && *env) {
		char *end;

		errno = 0;
		v = strtoul(env, &end, 10);
		if (errno || *end || v < 1 || v > ULNET_LOOPS_MAX) {
			ULNET_LOG(CORE, ERR, "node: loops '%s' from the environment (ULNET_LOOPS): must be 1 to %u",
				  env, ULNET_LOOPS_MAX);
			return -EINVAL;
		}
	}
	if (v > ULNET_LOOPS_MAX) {
		ULNET_LOG(CORE, ERR, "node: loops %lu > %u (setting loops)", v, ULNET_LOOPS_MAX);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

int ulnet_node_open(const struct ulnet_node_opts *opts, ulnet_node **out)
{
	struct ulnet_ni_conf lo_conf = { .net = "lo", .nid = "0@lo" };
	struct ulnet_node *node;
	long sys_ps = sysconf(_SC_PAGESIZE);
	int rc;

	if (!out)
		return -EINVAL;
	node = calloc(1, sizeof(*node));
	if (!node)
		return -ENOMEM;
	node->pid = opts && opts->pid ? opts->pid : ULNET_PID_LUSTRE;
	node->page_size = opts && opts->page_size ? opts->page_size : (uint32_t)(sys_ps > 0 ? sys_ps : 4096);
	rc = check_page_size(node->page_size);
	if (rc == 0 && opts && opts->transaction_timeout > ULNET_TXN_TIMEOUT_MAX) {
		ULNET_LOG(CORE, ERR, "node: transaction_timeout %u s > %u s (setting transaction_timeout)",
			  opts->transaction_timeout, ULNET_TXN_TIMEOUT_MAX);
		rc = -EINVAL;
	}
	if (rc == 0 && opts && opts->busy_poll_us > ULNET_BUSY_POLL_US_MAX) {
		ULNET_LOG(CORE, ERR, "node: busy_poll_us %u > %u (setting busy_poll_us)", opts->busy_poll_us,
			  ULNET_BUSY_POLL_US_MAX);
		rc = -EINVAL;
	}
	if (rc == 0 && opts && opts->large_max &&
	    (opts->large_max < ULNET_MTU || opts->large_max > ULNET_LARGE_MAX_MAX)) {
		ULNET_LOG(CORE, ERR, "node: large_max %u outside [%u, %u] (setting large_max; %u turns it off)",
			  opts->large_max, ULNET_MTU, ULNET_LARGE_MAX_MAX, ULNET_MTU);
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = loops_option(opts, &node->n_loops);
	node->busy_poll_ns = opts ? (uint64_t)opts->busy_poll_us * 1000u : 0;
	node->txn_timeout_ns = (uint64_t)(opts && opts->transaction_timeout ? opts->transaction_timeout
							      : ULNET_TXN_TIMEOUT_DEFAULT) * 1000000000ull;
	if (rc) {
		free(node);
		return rc;
	}
	/* node->lock starts free (zeroed; util/futex_lock.h) */
	ulnet__lock_clock_init();
	node->lat_mult = (1000ull << 32) / ulnet__lock_ticks_per_us;
	/* the interface cookie names this incarnation in wire MD handles: a restarted node must not
	 * accept ACKs and REPLYs meant for its previous life */
	node->iface_cookie = ulnet__now_ns() ^ ((uint64_t)getpid() << 32);
	node->next_cookie = 1;
	for (unsigned i = 0; i < ULNET_HANDLE_BUCKETS; i++)
		ulnet_list_init(&node->handles[i]);
	for (unsigned i = 0; i < ULNET_MAX_PORTALS; i++)
		ulnet_list_init(&node->portals[i]);
	ulnet__match_init(node);
	ulnet_list_init(&node->nis);
	ulnet_list_init(&node->fwd_waitq);
	ulnet__rtr_init(node);
	node->timers_next = UINT64_MAX;
	node->max_peers = opts && opts->max_peers ? opts->max_peers : ULNET_MAX_PEERS_DEFAULT;
	rc = ulnet__large_init(node, opts && opts->large_max ? opts->large_max : ULNET_LARGE_MAX_DEFAULT);
	if (rc == 0) {
		rc = ulnet__loop_init(node);
		if (rc)
			free(node->large);
	}
	if (rc) {
		free(node);
		return rc;
	}
	ulnet__loops_enter(node, &node->loops[0]); /* lo lives on loop 0 */
	rc = ulnet__ni_create(node, &lo_conf, &node->lo_ni);
	if (rc == 0) {
		/* lo has no credits and no peers: it shows zeros, as LNet's lo NI does */
		node->lo_ni->peer_timeout = node->lo_ni->peer_credits = node->lo_ni->credits = 0;
		node->lo_ni->tx_credits = node->lo_ni->min_tx_credits = 0;
		node->lo_ni->loop = &node->loops[0];
		rc = node->lo_ni->ops->lnd_startup(node->lo_ni);
	}
	if (rc == 0) {
		node->lo_ni->started = true;
		ulnet__lock(node);
		ulnet_list_add_tail(&node->lo_ni->link, &node->nis);
		rc = ulnet__ping_service_refresh(node);
		if (rc == 0)
			rc = ulnet__large_service_start(node);
		ulnet__unlock(node);
	} else if (node->lo_ni) {
		ulnet__ni_destroy(node->lo_ni);
		node->lo_ni = NULL;
	}
	ulnet__loops_exit(node);
	if (rc == 0)
		rc = ulnet__loop_start(node);
	if (rc) {
		ULNET_LOG(CORE, ERR, "node: cannot start: %s", ulnet_strerror(rc));
		ulnet_node_close(node);
		return rc;
	}
	*out = node;
	return 0;
}

void ulnet_node_close(ulnet_node *node)
{
	if (!node)
		return;
	ulnet__checker_stop(node); /* it sends as the application does: first */
	if (node->n_started)
		ulnet__loop_stop(node);
	/* the threads are gone: this thread owns every loop (the owner of each NI's in turn below) */
	ulnet__loops_enter(node, NULL);
	/* An NI stops taking sends before its LND goes: what the mailboxes hold and what credits launch
	 * from here on fails with -ESHUTDOWN (peer.c) */
	for (struct ulnet_list *p = node->nis.next; p != &node->nis; p = p->next)
		ulnet_container_of(p, struct ulnet_ni, link)->started = false;
	ulnet__loops_drain(node);
	/* LNDs first (they finalize what they own with -ESHUTDOWN), lo last */
	for (struct ulnet_list *p = node->nis.prev; p != &node->nis; p = p->prev) {
		struct ulnet_ni *ni = ulnet_container_of(p, struct ulnet_ni, link);

		ulnet__ni_lnd_stop(node, ni);
	}
	/* complete everything while the NIs and peers the messages name still exist */
	for (unsigned i = 0; i < node->n_loops; i++) {
		struct ulnet_loop *loop = &node->loops[i];

		ulnet__cur_loop = loop;
		ulnet__fault_loop_flush(loop);
		ulnet__peers_fail_queues(loop);
		while (ulnet__completions_run(loop, ULNET_COMPLETION_BUDGET))
			;
	}
	ulnet__cur_loop = NULL;
	ulnet__forward_free(node);
	ulnet__routes_free(node);
	while (!ulnet_list_empty(&node->nis)) {
		struct ulnet_ni *ni = ulnet_container_of(node->nis.prev, struct ulnet_ni, link);

		ulnet_list_del(&ni->link);
		if (ni == node->lo_ni)
			node->lo_ni = NULL;
		ulnet__ni_destroy(ni);
	}
	for (unsigned i = 0; i < node->n_loops; i++)
		ulnet__peers_free(&node->loops[i]);
	ulnet__lock(node);
	ulnet__large_free(node);
	ulnet__md_free_all(node);
	ulnet__unlock(node);
	ulnet__loops_exit(node);
	ulnet__mem_node_closed(node);
	/* handlers queued by the shutdown itself are not run: the node is gone */
	free(node->cbs);
	free(node->cbs_spare);
	ulnet__desc_cache_free(&node->descs);
	free(node->timers.v);
	ulnet__loop_free(node);
	ulnet__faults_free(node);
	free(node);
}

uint32_t ulnet_node_pid(const ulnet_node *node)
{
	return node->pid;
}

uint32_t ulnet_node_page_size(const ulnet_node *node)
{
	return node->page_size;
}

uint32_t ulnet_node_loops(const ulnet_node *node)
{
	return node->n_loops;
}

int ulnet_transaction_timeout_set(ulnet_node *node, uint32_t seconds)
{
	if (!node)
		return -EINVAL;
	if (seconds == 0 || seconds > ULNET_TXN_TIMEOUT_MAX) {
		ULNET_LOG(CORE, ERR, "transaction_timeout %u out of range [1, %u]", seconds, ULNET_TXN_TIMEOUT_MAX);
		return -EINVAL;
	}
	atomic_store_explicit(&node->txn_timeout_ns, (uint64_t)seconds * 1000000000ull, memory_order_relaxed);
	return 0;
}

void ulnet_node_opts_get(const ulnet_node *node, struct ulnet_node_opts *out)
{
	*out = (struct ulnet_node_opts){
		.pid = node->pid,
		.page_size = node->page_size,
		.large_max = ulnet__large_max(node),
		.transaction_timeout =
			(uint32_t)(atomic_load_explicit(&node->txn_timeout_ns, memory_order_relaxed) / 1000000000ull),
		.max_peers = node->max_peers,
		.busy_poll_us = (uint32_t)(node->busy_poll_ns / 1000u),
		.loops = node->n_loops,
	};
}

/* Add @l's hold times to @out (the holder of @l reads them). */
static void lock_add(struct ulnet_stats *out, const struct ulnet_lock *l, uint64_t *max_ticks, uint64_t *total_ticks)
{
	for (unsigned b = 0; b < ULNET_LOCK_HIST_BUCKETS; b++)
		out->lock_hold_hist[b] += l->hist[b];
	out->lock_sleeps += l->sleeps;
	*total_ticks += l->hold_total_ticks;
	if (l->hold_max_ticks > *max_ticks)
		*max_ticks = l->hold_max_ticks;
}

/* Add the counters of @s to @out. */
static void counters_add(struct ulnet_stats *out, const struct ulnet_stats *s)
{
	out->errors += s->errors;
	out->send_count += s->send_count;
	out->recv_count += s->recv_count;
	out->route_count += s->route_count;
	out->drop_count += s->drop_count;
	out->send_length += s->send_length;
	out->recv_length += s->recv_length;
	out->route_length += s->route_length;
	out->drop_length += s->drop_length;
	out->tx_queue_full += s->tx_queue_full;
	out->tx_timeouts += s->tx_timeouts;
	out->events_dropped += s->events_dropped;
	out->desc_gets += s->desc_gets;
	out->desc_heap_allocs += s->desc_heap_allocs;
}

void ulnet_stats_get(ulnet_node *node, struct ulnet_stats *out)
{
	uint64_t max_ticks = 0, total_ticks = 0;

	memset(out, 0, sizeof(*out));
	/* each share as its holder sees it: the node's under the node lock, a loop's as its owner
	 * (the sum is not one instant, as no counter of a running node is) */
	ulnet__lock(node);
	counters_add(out, &node->stats);
	lock_add(out, &node->lock, &max_ticks, &total_ticks);
	ulnet__lock_release(node);
	for (unsigned i = 0; i < node->n_loops; i++) {
		struct ulnet_loop *loop = &node->loops[i];

		ulnet__loop_enter(loop);
		counters_add(out, &loop->stats);
		out->owner_sleeps += loop->owner.sleeps;
		out->loop_watchers[i] = loop->io.n_watchers;
		ulnet__loop_exit(loop);
	}
	out->events_dropped += atomic_load_explicit(&node->events_lost, memory_order_relaxed);
	out->msgs_alloc = atomic_load_explicit(&node->msgs_live, memory_order_relaxed);
	out->msgs_max = atomic_load_explicit(&node->msgs_peak, memory_order_relaxed);
	out->lock_hold_max_ns = ulnet__lock_ticks_ns(max_ticks);
	out->lock_hold_total_ns = ulnet__lock_ticks_ns(total_ticks);
	out->loops = node->n_loops;
}
