/* SPDX-License-Identifier: MIT */
/* What an NI over an RDMA fabric (o2ib) can report: its fabric and per-peer RDMA counters. Other LNDs
 * answer -EOPNOTSUPP. */
#ifndef ULNET_RDMA_H
#define ULNET_RDMA_H

#include <stdint.h>
#include "md.h" /* ulnet_node */
#include "nid.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The RDMA fabric under an NI (o2ib): the provider in force and the limits its device enforces (the
 * defaults or the device, shrunk by the NI's `lnd tunables: device: {...}`). */
struct ulnet_ni_fabric {
	char provider[16];              /* "shm", "verbs" */
	uint32_t max_send_sge, max_recv_sge, max_qp_wr, max_qp, max_mr;
	uint64_t max_mr_size;
	uint32_t max_msg_sz;
	uint32_t page_size;             /* registration page size */
	uint32_t copy_thread;           /* shm: 1 = a copy thread per device runs the send queues */
};
/* Fill @out for NI @idx. -ENOENT past the last NI; -EOPNOTSUPP its LND runs on no fabric. */
ULNET_EXPORT int ulnet_ni_fabric_get(ulnet_node *node, unsigned idx, struct ulnet_ni_fabric *out);

/* RDMA data-path counters of one peer (o2ib), by transfer size bucket: bucket k holds transfers of
 * at most ulnet_rdma_bucket_max[k] bytes (the last takes everything larger). */
#define ULNET_RDMA_BUCKETS 4
ULNET_EXPORT extern const uint32_t ulnet_rdma_bucket_max[ULNET_RDMA_BUCKETS];
struct ulnet_rdma_bucket {
	uint64_t transfers;     /* transfers we wrote into the peer's memory (source side) */
	uint64_t wrs;           /* RDMA WRITE work requests they took */
	uint64_t sges;          /* SGEs in those work requests */
	uint32_t max_wrs;       /* most WRs one transfer took */
	uint64_t sinks;         /* sinks we described to the peer (PUT_ACK, GET_REQ) */
	uint64_t sink_frags;    /* fragments in those descriptors */
	uint64_t bounces;       /* transfers copied through a bounce buffer (either side) */
	uint64_t registrations; /* memory regions registered for them (either side) */
};
struct ulnet_peer_rdma_stats {
	uint64_t renegotiations; /* connection attempts retried with the peer's smaller max_frags/queue depth */
	uint64_t post_rejects;   /* posts the provider refused (each closes the connection) */
	uint64_t window_waits;   /* times a transfer's next window found the send queue too full */
	/* the NI's source registration cache, for transfers to this peer: found, made, and others
	 * dropped (least recently used) to stay within reg_cache_entries / reg_cache_mb */
	uint64_t reg_cache_hits, reg_cache_misses, reg_cache_evictions;
	struct ulnet_rdma_bucket bucket[ULNET_RDMA_BUCKETS];
};
/* The RDMA counters of peer @nid. 0; -EHOSTUNREACH no NI reaches it; -EOPNOTSUPP its LND has none;
 * -ENOENT the LND has no state for it. */
ULNET_EXPORT int ulnet_peer_rdma_stats_get(ulnet_node *node, const struct ulnet_nid *nid,
					   struct ulnet_peer_rdma_stats *out);

#ifdef __cplusplus
}
#endif
#endif
