/* SPDX-License-Identifier: MIT */
/* verbs queue pairs: RC QPs made by rdma_cm, each with its own CQ on the device's completion
 * channel (so a CQ can never overflow: it holds both queues), shrunk and retried when the device
 * refuses the size; posting with the fabric's exact limits; completions event-driven
 * (ibv_req_notify_cq, then drain: never busy-polled). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "verbs.h"

#define SGE_MAX 256 /* fab_limits_parse's bound on max_send_sge / max_recv_sge */

static int try_create(struct fab_cm_id *id, struct ibv_cq *cq, const struct fab_qp_attr *a)
{
	const struct fab_limits *lim = &id->dev->lim;
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .sq_sig_all = 0,
		.cap = {.max_send_wr = a->max_send_wr, .max_recv_wr = a->max_recv_wr,
			.max_send_sge = lim->max_send_sge, .max_recv_sge = lim->max_recv_sge},
	};

	return rdma_create_qp(id->cm, id->dev->pd, &ia) ? -errno : 0;
}

int vrb_create_qp(struct fab_cm_id *id, const struct fab_qp_attr *attr, void *context, struct fab_qp **out)
{
	struct fab_dev *dev = id->dev;
	struct fab_qp_attr a = *attr;
	struct fab_qp *qp;
	int rc;

	if (!a.max_send_wr || !a.max_recv_wr || a.max_send_wr > dev->lim.max_qp_wr || a.max_recv_wr > dev->lim.max_qp_wr)
		return -EINVAL;
	if (id->qp)
		return -EEXIST;
	if (dev->n_qp >= dev->lim.max_qp)
		return -ENOSPC;
	if ((rc = vrb_id_bind(id, false))) /* an active id not bound yet: binding picks the device */
		return rc;
	if (!(qp = calloc(1, sizeof(*qp))))
		return -ENOMEM;
	qp->id = id;
	qp->context = context;
	ulnet_list_init(&qp->ready);
	errno = 0;
	if (!(qp->cq = ibv_create_cq(dev->ctx, (int)(a.max_send_wr + a.max_recv_wr), qp, dev->comp_ch, 0))) {
		rc = errno ? -errno : -ENOMEM;
		goto fail;
	}
	if ((rc = -ibv_req_notify_cq(qp->cq, 0)))
		goto fail;
	while ((rc = try_create(id, qp->cq, &a)) && (rc == -ENOMEM || rc == -EINVAL) && vrb_qp_shrink(&a, attr))
		;
	if (rc) {
		ULNET_LOG(FABRIC, ERR, "verbs: cannot create a QP of %u send / %u receive WRs: %s (lnd tunables "
			  "peer_credits, device: max_qp_wr)", attr->max_send_wr, attr->max_recv_wr, strerror(-rc));
		goto fail;
	}
	if (a.max_send_wr != attr->max_send_wr || a.max_recv_wr != attr->max_recv_wr)
		ULNET_LOG(FABRIC, WARN, "verbs: the device refused a QP of %u send / %u receive WRs; made one of %u / %u",
			  attr->max_send_wr, attr->max_recv_wr, a.max_send_wr, a.max_recv_wr);
	qp->depth = (struct fab_qp_attr){.max_send_wr = a.max_send_wr, .max_recv_wr = a.max_recv_wr};
	qp->sq = calloc(a.max_send_wr, sizeof(*qp->sq));
	qp->rq = calloc(a.max_recv_wr, sizeof(*qp->rq));
	if (!qp->sq || !qp->rq) {
		rdma_destroy_qp(id->cm);
		rc = -ENOMEM;
		goto fail;
	}
	id->qp = qp;
	dev->n_qp++;
	*out = qp;
	return 0;
fail:
	if (qp->cq)
		ibv_destroy_cq(qp->cq);
	free(qp->sq);
	free(qp->rq);
	free(qp);
	return rc;
}

void vrb_qp_query(const struct fab_qp *qp, struct fab_qp_attr *attr) { *attr = qp->depth; }

void vrb_qp_destroy(struct fab_qp *qp)
{
	struct fab_dev *dev = qp->id->dev;

	rdma_destroy_qp(qp->id->cm);
	ibv_destroy_cq(qp->cq); /* every CQ event was acked as it was read */
	if (qp->in_ready)
		ulnet_list_del(&qp->ready);
	qp->id->qp = NULL;
	dev->n_qp--;
	free(qp->sq);
	free(qp->rq);
	free(qp);
	vrb_dev_signal(dev);
}

static int to_ibv_sges(const struct fab_sge *in, uint32_t n, struct ibv_sge *out)
{
	for (uint32_t i = 0; i < n; i++)
		out[i] = (struct ibv_sge){.addr = in[i].addr, .length = in[i].length, .lkey = in[i].lkey};
	return (int)n;
}

int vrb_post_recv(struct fab_qp *qp, const struct fab_recv_wr *wr, const struct fab_recv_wr **bad)
{
	struct ibv_sge sge[SGE_MAX];

	for (; wr; wr = wr->next) {
		struct ibv_recv_wr w = {.wr_id = VRB_RECV_BIT | qp->rq_post, .sg_list = sge, .num_sge = (int)wr->num_sge};
		struct ibv_recv_wr *b;
		int rc;

		*bad = wr;
		if (wr->num_sge > qp->id->dev->lim.max_recv_sge)
			return -EINVAL;
		if (qp->rq_post - qp->rq_tail >= qp->depth.max_recv_wr)
			return -ENOMEM;
		to_ibv_sges(wr->sg_list, wr->num_sge, sge);
		if ((rc = ibv_post_recv(qp->id->cm->qp, &w, &b)))
			return -rc;
		qp->rq[qp->rq_post++ % qp->depth.max_recv_wr] = wr->wr_id;
	}
	*bad = NULL;
	return 0;
}

static const enum ibv_wr_opcode ibv_op[] = {
	[FAB_WR_SEND] = IBV_WR_SEND, [FAB_WR_RDMA_WRITE] = IBV_WR_RDMA_WRITE, [FAB_WR_RDMA_READ] = IBV_WR_RDMA_READ,
};
static const enum fab_wc_opcode wc_op[] = {
	[FAB_WR_SEND] = FAB_WC_SEND, [FAB_WR_RDMA_WRITE] = FAB_WC_RDMA_WRITE, [FAB_WR_RDMA_READ] = FAB_WC_RDMA_READ,
};

int vrb_post_send(struct fab_qp *qp, const struct fab_send_wr *wr, const struct fab_send_wr **bad)
{
	struct ibv_sge sge[SGE_MAX];

	for (; wr; wr = wr->next) {
		struct ibv_send_wr w = {.wr_id = qp->sq_post, .sg_list = sge, .num_sge = (int)wr->num_sge,
					.opcode = ibv_op[wr->opcode], .send_flags = wr->signaled ? IBV_SEND_SIGNALED : 0,
					.wr.rdma = {.remote_addr = wr->remote_addr, .rkey = wr->rkey}};
		struct ibv_send_wr *b;
		uint32_t len = 0;
		int rc;

		*bad = wr;
		if ((unsigned)wr->opcode > FAB_WR_RDMA_READ || wr->num_sge > qp->id->dev->lim.max_send_sge)
			return -EINVAL;
		if (wr->opcode == FAB_WR_RDMA_READ) {
			/* o2iblnd's CM parameters give no responder resources (lnet-wire.md §2.5.5): the
			 * peer's HCA would fail the READ; refuse it here, where the caller can tell */
			if (!qp->read_refused_logged)
				ULNET_LOG(FABRIC, ERR, "verbs: RDMA READ refused: connections are made with "
					  "responder_resources 0 and initiator_depth 0, as o2iblnd's are "
					  "(o2ib moves data with RDMA WRITE only)");
			qp->read_refused_logged = true;
			return -EOPNOTSUPP;
		}
		if (!qp->connected)
			return -ENOTCONN;
		if (qp->sq_post - qp->sq_tail >= qp->depth.max_send_wr)
			return -ENOMEM;
		to_ibv_sges(wr->sg_list, wr->num_sge, sge);
		for (uint32_t i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if ((rc = ibv_post_send(qp->id->cm->qp, &w, &b)))
			return -rc;
		qp->sq[qp->sq_post++ % qp->depth.max_send_wr] =
			(struct vrb_swr){.wr_id = wr->wr_id, .opcode = wc_op[wr->opcode], .len = len};
	}
	*bad = NULL;
	return 0;
}

int vrb_comp_events(struct fab_dev *dev)
{
	struct ibv_cq *cq;
	void *ctx;

	while (!ibv_get_cq_event(dev->comp_ch, &cq, &ctx)) {
		struct fab_qp *qp = ctx;

		ibv_ack_cq_events(cq, 1);
		if (!qp->in_ready) {
			ulnet_list_add_tail(&qp->ready, &dev->ready);
			qp->in_ready = true;
		}
	}
	return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
}

static void to_fab_wc(struct fab_qp *qp, const struct ibv_wc *w, struct fab_wc *wc)
{
	uint64_t seq = w->wr_id & ~VRB_RECV_BIT;

	*wc = (struct fab_wc){.status = vrb_wc_status(w->status), .qp = qp, .qp_context = qp->context};
	if (w->wr_id & VRB_RECV_BIT) {
		wc->wr_id = qp->rq[seq % qp->depth.max_recv_wr];
		wc->opcode = FAB_WC_RECV;
		wc->byte_len = w->status == IBV_WC_SUCCESS ? w->byte_len : 0;
		qp->rq_tail = seq + 1;
	} else {
		const struct vrb_swr *s = &qp->sq[seq % qp->depth.max_send_wr];

		wc->wr_id = s->wr_id;
		wc->opcode = s->opcode;
		wc->byte_len = w->status == IBV_WC_SUCCESS ? s->len : 0;
		qp->sq_tail = seq + 1; /* this WR and every unsignalled one before it */
	}
}

int vrb_poll_cq(struct fab_dev *dev, struct fab_wc *wc, int n)
{
	struct ibv_wc w[16];
	int got = 0;

	while (got < n && !ulnet_list_empty(&dev->ready)) {
		struct fab_qp *qp = ulnet_list_first(&dev->ready, struct fab_qp, ready);
		int want = n - got < 16 ? n - got : 16, k = ibv_poll_cq(qp->cq, want, w);

		for (int i = 0; i < k; i++)
			to_fab_wc(qp, &w[i], &wc[got++]);
		if (k == want)
			continue;
		/* empty: re-arm, then look once more for what arrived before the arming */
		ibv_req_notify_cq(qp->cq, 0);
		if (k >= 0 && (k = ibv_poll_cq(qp->cq, n - got < 16 ? n - got : 16, w)) > 0) {
			for (int i = 0; i < k; i++)
				to_fab_wc(qp, &w[i], &wc[got++]);
			continue;
		}
		ulnet_list_del(&qp->ready);
		qp->in_ready = false;
	}
	vrb_dev_signal(dev);
	return got;
}
