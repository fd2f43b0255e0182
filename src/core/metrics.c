/* SPDX-License-Identifier: MIT */
/* Latency histograms and health counters per NI and per peer (include/ulnet/metrics.h,
 * docs/metrics.md). Written only by the owner of the NI's loop, where the rest of the NI and its
 * peers live, so the hot path takes no lock and shares no cache line with another loop; readers and
 * resets enter the loop for a moment. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"

void ulnet__lat_note(struct ulnet_loop *loop, struct ulnet_msg *msg)
{
	struct ulnet_done_queue *d = &loop->done;
	struct ulnet_peer *lp = msg->is_tx ? msg->peer : msg->rx_peer;
	uint64_t ns;
	size_t h;
	unsigned b;

	if (!msg->ni)
		return;
	if (!d->now_valid) { /* one clock read per completion phase: its events are delivered then */
		d->now = ulnet__lat_now(loop->node);
		d->now_valid = true;
	}
	ns = ulnet__lat_ns(loop->node, msg->t0, d->now);
	b = ulnet__hist_bucket(ns); /* once for both histograms */
	/* put, get, ack: the same offset in the NI's and the peer's struct ulnet_latency */
	h = msg->lat == ULNET_LAT_PUT ? offsetof(struct ulnet_latency, put)
	    : msg->lat == ULNET_LAT_GET ? offsetof(struct ulnet_latency, get) : offsetof(struct ulnet_latency, ack);
	ulnet__hist_put((struct ulnet_hist *)((char *)&msg->ni->lat + h), b, ns);
	if (lp)
		ulnet__hist_put((struct ulnet_hist *)((char *)&lp->lat + h), b, ns);
}

uint64_t ulnet_hist_bucket_le_us(unsigned b)
{
	return b + 1 >= ULNET_HIST_BUCKETS ? UINT64_MAX : 1ull << b;
}

uint64_t ulnet_hist_percentile_us(const struct ulnet_hist *h, unsigned pct)
{
	uint64_t total = 0, want, seen = 0;

	for (unsigned b = 0; b < ULNET_HIST_BUCKETS; b++)
		total += h->bucket[b];
	if (!total)
		return 0;
	if (pct > 100)
		pct = 100;
	want = (total * pct + 99) / 100; /* the rank of the sample, 1-based */
	if (!want)
		want = 1;
	for (unsigned b = 0; b < ULNET_HIST_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= want)
			return b + 1 < ULNET_HIST_BUCKETS ? 1ull << b : 1ull << (b - 1);
	}
	return 1ull << (ULNET_HIST_BUCKETS - 2);
}

const char *ulnet_drop_name(enum ulnet_drop r)
{
	static const char *const names[ULNET_DROP_REASONS] = { "no_match", "stale", "too_long", "no_memory", "fault" };

	return (unsigned)r < ULNET_DROP_REASONS ? names[r] : NULL;
}

int ulnet_ni_metrics_get(ulnet_node *node, unsigned idx, struct ulnet_ni_metrics *out)
{
	struct ulnet_ni *ni;

	if (!node || !out)
		return -EINVAL;
	ulnet__lock(node);
	ni = ulnet__ni_at(node, idx);
	ulnet__lock_release(node);
	if (!ni)
		return -ENOENT;
	/* an NI goes only when the node closes: its loop's state may be read as its owner */
	ulnet__loop_enter(ni->loop);
	memset(out, 0, sizeof(*out));
	out->nid = ni->nid;
	ulnet_net_format(ni->net, out->net, sizeof(out->net));
	out->credits = ni->credits;
	out->tx_credits = ni->tx_credits;
	out->min_tx_credits = ni->min_tx_credits;
	out->send_count = ni->send_count;
	out->recv_count = ni->recv_count;
	memcpy(out->drops, ni->drops, sizeof(out->drops));
	out->tx_queue_full = ni->tx_queue_full;
	out->lat = ni->lat;
	ulnet__loop_exit(ni->loop);
	return 0;
}

static void peer_metrics_fill(const struct ulnet_peer *lp, struct ulnet_peer_metrics *out)
{
	memset(out, 0, sizeof(*out));
	out->nid = lp->nid;
	out->ni_nid = lp->ni->nid;
	out->max_tx_credits = lp->max_tx_credits;
	out->tx_credits = lp->tx_credits;
	out->min_tx_credits = lp->min_tx_credits;
	out->tx_queued = lp->txq_msgs;
	out->send_count = lp->send_count;
	out->recv_count = lp->recv_count;
	out->tx_queue_full = lp->tx_queue_full;
	out->down_count = lp->down_count;
	out->lat = lp->lat;
}

/* Call @fn on every peer of @loop's table that @match accepts; returns how many. Owner. */
static unsigned peers_each(struct ulnet_loop *loop, bool (*match)(const struct ulnet_peer *lp, const void *arg),
			   const void *arg, void (*fn)(struct ulnet_peer *lp, void *farg), void *farg)
{
	unsigned n = 0;

	for (unsigned b = 0; b < ULNET_PEER_BUCKETS; b++) {
		struct ulnet_list *h = &loop->peers.hash[b], *p;

		for (p = h->next; p != h; p = p->next) {
			struct ulnet_peer *lp = ulnet_container_of(p, struct ulnet_peer, hash_link);

			if (match && !match(lp, arg))
				continue;
			if (fn)
				fn(lp, farg);
			n++;
		}
	}
	return n;
}

struct peer_pick {
	unsigned idx, i;
	struct ulnet_peer_metrics *out;
	bool found;
};

static void pick_one(struct ulnet_peer *lp, void *arg)
{
	struct peer_pick *pk = arg;

	if (pk->i++ == pk->idx) {
		peer_metrics_fill(lp, pk->out);
		pk->found = true;
	}
}

int ulnet_peer_metrics_get(ulnet_node *node, unsigned idx, struct ulnet_peer_metrics *out)
{
	struct peer_pick pk = { .idx = idx, .out = out };

	if (!node || !out)
		return -EINVAL;
	/* the same order as ulnet_peer_info_get: loops in turn, each table's buckets in turn */
	for (unsigned l = 0; l < node->n_loops && !pk.found; l++) {
		ulnet__loop_enter(&node->loops[l]);
		peers_each(&node->loops[l], NULL, NULL, pick_one, &pk);
		ulnet__loop_exit(&node->loops[l]);
	}
	return pk.found ? 0 : -ENOENT;
}

static void peer_reset(struct ulnet_peer *lp, void *arg)
{
	(void)arg;
	lp->send_count = lp->recv_count = 0;
	lp->tx_queue_full = lp->down_count = 0;
	lp->fwd_msgs = lp->fwd_bytes = lp->fwd_drops = 0;
	lp->min_tx_credits = lp->tx_credits;
	lp->min_buf_credits = lp->buf_credits;
	memset(&lp->lat, 0, sizeof(lp->lat));
}

static bool peer_of_ni(const struct ulnet_peer *lp, const void *arg)
{
	return lp->ni == arg;
}

static bool peer_is(const struct ulnet_peer *lp, const void *arg)
{
	return ulnet__nid_equal(&lp->nid, arg);
}

/* The NI's own counters and those of its peers. Owner of its loop. */
static void ni_reset(struct ulnet_ni *ni)
{
	ni->send_count = ni->recv_count = ni->drop_count = 0;
	memset(ni->drops, 0, sizeof(ni->drops));
	ni->tx_queue_full = 0;
	ni->min_tx_credits = ni->tx_credits;
	memset(&ni->lat, 0, sizeof(ni->lat));
	peers_each(ni->loop, peer_of_ni, ni, peer_reset, NULL);
}

int ulnet_metrics_reset(ulnet_node *node, enum ulnet_metrics_scope scope, uint32_t net,
			const struct ulnet_nid *nid)
{
	unsigned hit = 0;

	if (!node || (scope == ULNET_METRICS_PEER && !nid) || scope > ULNET_METRICS_PEER)
		return -EINVAL;
	if (scope == ULNET_METRICS_PEER) {
		for (unsigned l = 0; l < node->n_loops; l++) {
			ulnet__loop_enter(&node->loops[l]);
			hit += peers_each(&node->loops[l], peer_is, nid, peer_reset, NULL);
			ulnet__loop_exit(&node->loops[l]);
		}
		return hit ? 0 : -ENOENT;
	}
	for (unsigned i = 0;; i++) {
		struct ulnet_ni *ni;

		ulnet__lock(node);
		ni = ulnet__ni_at(node, i);
		ulnet__lock_release(node);
		if (!ni)
			break;
		if (scope == ULNET_METRICS_NI && ni->net != net)
			continue;
		/* an NI goes only when the node closes: reset it as the owner of its loop */
		ulnet__loop_enter(ni->loop);
		ni_reset(ni);
		ulnet__loop_exit(ni->loop);
		hit++;
	}
	if (scope == ULNET_METRICS_NI)
		return hit ? 0 : -ENOENT;
	/* ulnet_stats_get's counters: the node's share and every loop's */
	ulnet__lock(node);
	memset(&node->stats, 0, sizeof(node->stats));
	ulnet__lock_release(node);
	for (unsigned l = 0; l < node->n_loops; l++) {
		ulnet__loop_enter(&node->loops[l]);
		memset(&node->loops[l].stats, 0, sizeof(node->loops[l].stats));
		ulnet__loop_exit(&node->loops[l]);
	}
	return 0;
}

void ulnet_metrics_latency_set(ulnet_node *node, bool on)
{
	if (node)
		atomic_store_explicit(&node->lat_off, !on, memory_order_relaxed);
}

bool ulnet_metrics_latency_get(ulnet_node *node)
{
	return node && !atomic_load_explicit(&node->lat_off, memory_order_relaxed);
}
