/* SPDX-License-Identifier: MIT */
/* The verbs provider's internals: one ibv_context + PD per NI address (found by binding a CM id to
 * it), RC QPs made by rdma_cm with one CQ each on the device's completion channel, and the CM event
 * channel. dev_fd is an epoll set of both channels and an eventfd raised while polled CQs may still
 * hold completions. Contract: fabric.h; overview: docs/fabric.md. */
#ifndef ULNET_FABRIC_VERBS_H
#define ULNET_FABRIC_VERBS_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "fabric.h"
#include "list.h"
#include "clock.h"

#define VRB_RECV_BIT (1ull << 63) /* ibv wr_id: receive sequence numbers carry it */
#define VRB_MR_BUCKETS 1024u

struct vrb_mr {
	struct ibv_mr *mr;
	struct vrb_mr *next; /* bucket chain, keyed by lkey */
};

/* A send WR's user wr_id and opcode, by sequence number (ibv wr_id = sequence). */
struct vrb_swr {
	uint64_t wr_id;
	enum fab_wc_opcode opcode;
	uint32_t len;
};

struct fab_qp {
	struct fab_cm_id *id;
	void *context;
	struct ibv_cq *cq;
	struct fab_qp_attr depth;   /* enforced exactly, whatever the device rounded up to */
	struct vrb_swr *sq;         /* ring: [sq_tail, sq_post) posted and not yet completed */
	uint64_t sq_tail, sq_post;
	uint64_t *rq;               /* ring of user wr_ids: [rq_tail, rq_post) */
	uint64_t rq_tail, rq_post;
	struct ulnet_list ready;    /* dev->ready: the CQ may hold completions */
	bool in_ready;
	bool connected;             /* RTS: sends may be posted (accepted, or ESTABLISHED) */
	bool read_refused_logged;   /* one log line per QP for refused RDMA READs */
};

struct fab_cm_id {
	struct fab_dev *dev;
	struct rdma_cm_id *cm;
	void *context;
	struct ulnet_list link;     /* dev->ids */
	struct fab_qp *qp;
	struct fab_cm_id *listener; /* passive ids: until CONNECT_REQUEST is raised */
	uint8_t pdata[FAB_PRIVATE_DATA_MAX]; /* active: kept for rdma_connect after route resolution */
	uint8_t pdata_len;
	int timeout_ms;
	uint64_t deadline_ns;       /* active: TIMED_OUT then, whatever rdma_cm is still doing */
	bool bound, connecting, disconnected;
	bool expired;               /* the deadline passed: TIMED_OUT is due */
	bool gave_up;               /* TIMED_OUT reported: later connection events are dropped */
};

struct fab_dev {
	struct fab_limits lim;
	struct sockaddr_in addr;
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *probe;   /* bound to addr: holds the device open */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch;
	int epfd, evfd, timerfd;
	bool ev_signaled;
	uint32_t n_expired;         /* ids with a TIMED_OUT due */
	struct ulnet_list ids, ready;
	uint32_t n_qp, n_mr;
	uint64_t mr_bytes;
	struct vrb_mr *mrs[VRB_MR_BUCKETS];
};

/* verbs_policy.c (pure) */
/* Limits in force: each key the NI set (differs from fab_limits_default) if the device has at
 * least that, else the device's own; page_size is always the device's (the kernel's). -EINVAL with
 * @why naming the cap, both values and the knob when the NI asks more than the device has. */
int vrb_limits_clamp(const struct fab_limits *devcap, const struct fab_limits *asked, struct fab_limits *out,
		     char *why, size_t len);
/* QP creation failed at @a: the next, smaller try. Only the send queue shrinks (a quarter per try,
 * not below 2, or what was asked if less): the receive queue is what the credits the owner
 * negotiates rest on. false: nothing left to shrink. */
bool vrb_qp_shrink(struct fab_qp_attr *a, const struct fab_qp_attr *asked);
/* The log line for a registration the memlock limit refused (@limit bytes; RLIM_INFINITY-like
 * values never get here). */
void vrb_memlock_msg(char *buf, size_t len, uint64_t limit, uint64_t registered, uint64_t asked);
enum fab_wc_status vrb_wc_status(enum ibv_wc_status st);
/* Pure: @n ranges as one virtually contiguous span (adjacent ranges in order). false: a gap. */
bool vrb_ranges_span(const struct iovec *r, unsigned n, uint64_t *base, uint64_t *len);

/* verbs_dev.c */
void vrb_dev_signal(struct fab_dev *dev);
/* Check the connect deadlines: mark the expired ids and arm the timer for the next one. */
void vrb_deadlines(struct fab_dev *dev);

/* verbs_mr.c */
int vrb_reg_mr(struct fab_dev *dev, const struct iovec *ranges, unsigned n, unsigned access, struct fab_mr *out);
int vrb_dereg_mr(struct fab_dev *dev, const struct fab_mr *mr);
void vrb_mr_close_all(struct fab_dev *dev);

/* verbs_cm.c */
int vrb_create_id(struct fab_dev *dev, void *context, struct fab_cm_id **out);
void vrb_destroy_id(struct fab_cm_id *id);
void vrb_set_context(struct fab_cm_id *id, void *context);
int vrb_listen(struct fab_cm_id *id, const struct sockaddr_in *addr, int backlog);
int vrb_connect(struct fab_cm_id *id, const struct sockaddr_in *dst, const void *pdata, size_t len, int timeout_ms);
int vrb_accept(struct fab_cm_id *id, const void *pdata, size_t len);
int vrb_reject(struct fab_cm_id *id, const void *pdata, size_t len);
int vrb_disconnect(struct fab_cm_id *id);
int vrb_get_event(struct fab_dev *dev, struct fab_cm_event *ev);
/* fabric.h bind_src: an active id to the device's address (a port below 1024 if @privileged). */
int vrb_id_bind(struct fab_cm_id *id, bool privileged);

/* verbs_qp.c */
int vrb_create_qp(struct fab_cm_id *id, const struct fab_qp_attr *attr, void *context, struct fab_qp **out);
void vrb_qp_query(const struct fab_qp *qp, struct fab_qp_attr *attr);
void vrb_qp_destroy(struct fab_qp *qp);
int vrb_post_recv(struct fab_qp *qp, const struct fab_recv_wr *wr, const struct fab_recv_wr **bad);
int vrb_post_send(struct fab_qp *qp, const struct fab_send_wr *wr, const struct fab_send_wr **bad);
/* Drain the completion channel: CQs with an event join dev->ready. */
int vrb_comp_events(struct fab_dev *dev);
int vrb_poll_cq(struct fab_dev *dev, struct fab_wc *wc, int n);

#endif
