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
	/* the interface cookie names this incarnation in wire MD handles: a restarted node must not
	 * accept ACKs and REPLYs meant for its previous life */
	node->iface_cookie = ulnet__now_ns() ^ ((uint64_t)getpid() << 32);
	node->next_cookie = 1;
	for (unsigned i = 0; i < ULNET_HANDLE_BUCKETS; i++)
		ulnet_list_init(&node->handles[i]);
	for (unsigned i = 0; i < ULNET_MAX_PORTALS; i++)
		ulnet_list_init(&node->portals[i]);
	ulnet__match_init(node);
	for (unsigned i = 0; i < ULNET_PEER_BUCKETS; i++)
		ulnet_list_init(&node->peers[i]);
	ulnet_list_init(&node->nis);
	ulnet_list_init(&node->done_q);
	ulnet_list_init(&node->idle_peers);
	node->max_peers = opts && opts->max_peers ? opts->max_peers : ULNET_MAX_PEERS_DEFAULT;
	rc = ulnet__loop_init(node);
	if (rc) {
		free(node);
		return rc;
	}
	ulnet__lock(node);
	rc = ulnet__ni_create(node, &lo_conf, &node->lo_ni);
	if (rc == 0) {
		/* lo has no credits and no peers: it shows zeros, as LNet's lo NI does */
		node->lo_ni->peer_timeout = node->lo_ni->peer_credits = node->lo_ni->credits = 0;
		node->lo_ni->tx_credits = node->lo_ni->min_tx_credits = 0;
		rc = node->lo_ni->ops->lnd_startup(node->lo_ni);
	}
	if (rc == 0) {
		node->lo_ni->started = true;
		ulnet_list_add_tail(&node->lo_ni->link, &node->nis);
		rc = ulnet__ping_service_refresh(node);
	}
	ulnet__lock_release(node);
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
	if (node->n_started)
		ulnet__loop_stop(node);
	ulnet__lock(node);
	ulnet__submitted_fail(node);
	/* LNDs first (they finalize what they own with -ESHUTDOWN), lo last. An NI stops taking sends
	 * before its LND goes: what credits launch from here on fails with -ESHUTDOWN (peer.c). */
	for (struct ulnet_list *p = node->nis.prev; p != &node->nis; p = p->prev) {
		struct ulnet_ni *ni = ulnet_container_of(p, struct ulnet_ni, link);
		bool was_started = ni->started;

		ni->started = false;
		ulnet__md_lnd_release_ni(node, ni);
		ulnet__mem_lnd_release_ni(node, ni);
		if (was_started)
			ni->ops->lnd_shutdown(ni);
	}
	for (struct ulnet_list *p = node->nis.next; p != &node->nis; p = p->next) {
		struct ulnet_ni *ni = ulnet_container_of(p, struct ulnet_ni, link);

		while (!ulnet_list_empty(&ni->txq)) {
			struct ulnet_msg *m = ulnet_list_first(&ni->txq, struct ulnet_msg, link);

			ulnet_list_del(&m->link);
			m->ni_credit = m->peer_credit = false;
			ulnet__finalize(m, -ESHUTDOWN);
		}
	}
	ulnet__peers_fail_queues(node);
	/* complete everything while the NIs and peers the messages name still exist */
	while (ulnet__completions_run(node, ULNET_COMPLETION_BUDGET))
		;
	while (!ulnet_list_empty(&node->nis)) {
		struct ulnet_ni *ni = ulnet_container_of(node->nis.prev, struct ulnet_ni, link);

		ulnet_list_del(&ni->link);
		if (ni == node->lo_ni)
			node->lo_ni = NULL;
		ulnet__ni_destroy(ni);
	}
	ulnet__forward_free(node);
	ulnet__peers_free(node);
	ulnet__md_free_all(node);
	ulnet__lock_release(node);
	ulnet__mem_node_closed(node);
	/* handlers queued by the shutdown itself are not run: the node is gone */
	free(node->cbs);
	free(node->cbs_spare);
	ulnet__desc_cache_free(node);
	free(node->timers);
	ulnet__loop_free(node);
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

void ulnet_node_opts_get(const ulnet_node *node, struct ulnet_node_opts *out)
{
	*out = (struct ulnet_node_opts){
		.pid = node->pid,
		.page_size = node->page_size,
		.transaction_timeout = (uint32_t)(node->txn_timeout_ns / 1000000000ull),
		.max_peers = node->max_peers,
		.busy_poll_us = (uint32_t)(node->busy_poll_ns / 1000u),
		.loops = node->n_loops,
	};
}

void ulnet_stats_get(ulnet_node *node, struct ulnet_stats *out)
{
	ulnet__lock(node);
	*out = node->stats;
	out->lock_hold_max_ns = ulnet__lock_ticks_ns(node->lock_hold_max_ticks);
	out->lock_hold_total_ns = ulnet__lock_ticks_ns(node->lock_hold_total_ticks);
	out->loops = node->n_loops;
	for (unsigned i = 0; i < node->n_loops; i++)
		out->loop_watchers[i] = node->loops[i].n_watchers;
	ulnet__lock_release(node);
}
