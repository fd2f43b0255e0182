/* SPDX-License-Identifier: MIT */
/* shm provider extras for tests and the bench: fault injection, data path counters. Never installed. */
#ifndef ULNET_FABRIC_SHM_FAULTS_H
#define ULNET_FABRIC_SHM_FAULTS_H

#include <stdbool.h>
#include <stdint.h>
#include "fabric.h"

/* Counters count calls from the moment they are set: 1 = the next one. 0 = off. */
struct fab_shm_faults {
	uint32_t fail_post_nth;        /* the Nth post_send/post_recv call fails with -EIO, nothing posted */
	uint32_t drop_completion_nth;  /* the Nth completion generated is never reported */
	uint32_t delay_completion_ms;  /* every completion becomes visible this much later (in order) */
	uint32_t kill_peer_rdma_nth;   /* the Nth RDMA WR SIGKILLs the peer after moving half its bytes */
	bool refuse_connect;           /* listeners reject every CONNREQ (REJECTED, -ECONNREFUSED, no data) */
	bool timeout_connect;          /* listeners never answer a CONNREQ (the active side times out) */
};

/* The device's fault switches (shm devices only), changed in place by the test. */
struct fab_shm_faults *fab_shm_faults(struct fab_dev *dev);
/* How the device's RDMA WRs moved their bytes (successful or not, once the keys were accepted). */
struct fab_shm_stats {
	uint64_t rdma_mapped;     /* memcpy through the peer's mapped memfd (memory from mem_alloc) */
	uint64_t rdma_process_vm; /* process_vm_writev/readv (any other memory) */
	uint64_t doorbells;       /* doorbells written to peers (their consumer slept, or we made room) */
	uint64_t evfd_raises;     /* times dev_fd was made readable for a completion or an event */
};
const struct fab_shm_stats *fab_shm_stats(const struct fab_dev *dev);
/* The shared mapping of @qp's SEND rings (layout: shm_ring.h), for tests that play a peer who
 * scribbles on it; NULL: none. Whether our SENDs go through it (else the socket). */
void *fab_shm_qp_rings(struct fab_qp *qp, bool *sending);
/* Move @qp to the error state now, flushing every posted WR (as a link failure would). */
void fab_shm_flush_qp(struct fab_qp *qp);
/* Pure: the log line for a refused process_vm_{read,write}v (EPERM). @scope: the contents of
 * /proc/sys/kernel/yama/ptrace_scope or NULL; @note: what the node did at open. */
void fab_shm_eperm_msg(char *buf, size_t len, int peer_pid, const char *scope, const char *note);

#endif
