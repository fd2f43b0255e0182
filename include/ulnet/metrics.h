/* SPDX-License-Identifier: MIT */
/* Latency and health metrics per NI and per peer (docs/metrics.md): what "is it the network?" needs.
 * Each is kept by the loop that owns the NI or peer, with no lock of its own; a read or a reset
 * enters that loop for a moment, as ulnet_stats_get does. */
#ifndef ULNET_METRICS_H
#define ULNET_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include "export.h"
#include "nid.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ulnet_node ulnet_node;

/* A latency histogram in log2 microsecond buckets: bucket 0 counts samples under 1 us, bucket i
 * (1..23) samples of [2^(i-1), 2^i) us, the last one 2^23 us (8.4 s) and more. So bucket i < 24
 * holds what is under 2^i us: Prometheus' "le" bound of the cumulative sum up to it. */
#define ULNET_HIST_BUCKETS 25
struct ulnet_hist {
	uint64_t bucket[ULNET_HIST_BUCKETS];
	uint64_t count;
	uint64_t sum_ns;
};
/* The upper bound of bucket @b in microseconds (UINT64_MAX for the last one). */
ULNET_EXPORT uint64_t ulnet_hist_bucket_le_us(unsigned b);
/* The @pct-th percentile (0..100) of @h, in microseconds: the upper bound of the bucket it falls in
 * (so within a factor 2), the last bucket's lower bound for the overflow; 0 when @h is empty. */
ULNET_EXPORT uint64_t ulnet_hist_percentile_us(const struct ulnet_hist *h, unsigned pct);

/* The three latencies, each measured on the initiator (docs/metrics.md):
 *  put: a PUT's egress, from ulnet_put to its SEND event (the LND is done with the payload);
 *  get: a GET's round trip, from ulnet_get to its REPLY event (the data is in);
 *  ack: an ACK-requested PUT's round trip, from ulnet_put to its ACK event. */
struct ulnet_latency {
	struct ulnet_hist put, get, ack;
};

/* Why a received message was dropped (counted per NI). */
enum ulnet_drop {
	ULNET_DROP_NO_MATCH,    /* a PUT or GET no ME/MD matched */
	ULNET_DROP_STALE,       /* an ACK or REPLY for an MD no longer active (unlinked, timed out) */
	ULNET_DROP_TOO_LONG,    /* a REPLY longer than its MD (no TRUNCATE) */
	ULNET_DROP_NO_MEMORY,   /* no memory for the message's descriptor */
	ULNET_DROP_FAULT,       /* a drop fault rule on receive (fault.h) */
	ULNET_DROP_REASONS
};
/* "no_match", "stale", "too_long", "no_memory", "fault" (NULL past the last). */
ULNET_EXPORT const char *ulnet_drop_name(enum ulnet_drop r);

struct ulnet_ni_metrics {
	struct ulnet_nid nid;
	char net[16];
	int credits, tx_credits, min_tx_credits; /* configured / available now / lowest seen */
	uint64_t send_count, recv_count;
	uint64_t drops[ULNET_DROP_REASONS];
	uint64_t tx_queue_full;   /* sends refused: a peer's queue was at peer_queue_msgs/_bytes */
	struct ulnet_latency lat; /* every message of the NI, whatever its peer */
};
/* NI number @idx (as ulnet_ni_info_get numbers them; 0 = lo). 0, -ENOENT past the last. */
ULNET_EXPORT int ulnet_ni_metrics_get(ulnet_node *node, unsigned idx, struct ulnet_ni_metrics *out);

/* A peer is the NID a message goes to or comes from on one NI: for a routed message, its gateway.
 * Its metrics go with it when an idle peer is forgotten (60 s); its NI's stay. */
struct ulnet_peer_metrics {
	struct ulnet_nid nid;
	struct ulnet_nid ni_nid;  /* the local NI it is a peer of */
	int max_tx_credits, tx_credits, min_tx_credits;
	unsigned tx_queued;       /* messages waiting for a credit to it now */
	uint64_t send_count, recv_count;
	uint64_t tx_queue_full;   /* sends to it refused: its queue was full */
	uint64_t down_count;      /* times its LND reported it down (up -> down transitions) */
	struct ulnet_latency lat;
};
/* Peer number @idx (as ulnet_peer_info_get numbers them). 0, -ENOENT past the last. */
ULNET_EXPORT int ulnet_peer_metrics_get(ulnet_node *node, unsigned idx, struct ulnet_peer_metrics *out);

enum ulnet_metrics_scope {
	ULNET_METRICS_NODE,     /* every NI and peer, and the counters of ulnet_stats_get */
	ULNET_METRICS_NI,       /* the NI on @net, with the metrics of its peers */
	ULNET_METRICS_PEER,     /* every peer entry of @nid (one per NI that talks to it) */
};
/* Zero the counters and histograms of @scope; the lowest credits seen become the credits now. @net
 * (ulnet_nid_net) for ULNET_METRICS_NI, @nid for ULNET_METRICS_PEER, else ignored (may be NULL).
 * 0; -EINVAL; -ENOENT no such NI or peer. */
ULNET_EXPORT int ulnet_metrics_reset(ulnet_node *node, enum ulnet_metrics_scope scope, uint32_t net,
				     const struct ulnet_nid *nid);
/* The latency histograms on (the default) or off. Off, ulnet_put and ulnet_get read no clock and
 * completions take no sample: what the latencies cost is then measurable in one run
 * (bench/observe_cost.sh). Operations in flight when it changes are measured as they started. */
ULNET_EXPORT void ulnet_metrics_latency_set(ulnet_node *node, bool on);
ULNET_EXPORT bool ulnet_metrics_latency_get(ulnet_node *node);

#ifdef __cplusplus
}
#endif
#endif
