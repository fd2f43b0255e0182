/* SPDX-License-Identifier: MIT */
/* The shm copy engine: a thread per device that executes the send queues (RDMA copies and SENDs) in
 * post order, as an HCA's engines do, so post_send returns at once and the owner's loop goes on with
 * credits and control messages while 1 MiB moves. Completions go into the CQ under dev->lock and
 * raise the device's eventfd; what only the owner may do (epoll interest, teardown) is left to its
 * progress call (shm_engine_attend). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include "log.h"
#include "shm.h"

void shm_engine_init(struct fab_dev *dev)
{
	ulnet_list_init(&dev->eng.runq);
	dev->eng.on = dev->lim.copy_thread != 0;
}

static bool qp_runnable(const struct fab_qp *qp)
{
	return qp->connected && !qp->error && !qp->eng_stopped && !qp->eng_stalled && !qp->eng_failed &&
	       qp->sq_exec < qp->sq_post;
}

static void run_one(struct fab_dev *dev, struct fab_qp *qp)
{
	struct shm_swr *s = &qp->sq[qp->sq_exec % qp->sq_depth];
	enum fab_wc_status st = FAB_WC_SUCCESS;
	uint32_t len = 0;
	int via = -1, full;
	bool vouched = shm_qp_send_follows(qp); /* read under the lock: the owner posts under it */

	if (s->wr.opcode == FAB_WR_SEND) {
		/* a SEND (one non-blocking sendmsg) runs under the lock: its completion is queued before the
		 * owner can see the peer's answer, as when the poster sent it itself */
		full = shm_qp_exec(qp, s, &st, &len, &via, vouched);
	} else {
		qp->eng_busy = true;
		pthread_mutex_unlock(&dev->lock);
		full = shm_qp_exec(qp, s, &st, &len, &via, vouched);
		pthread_mutex_lock(&dev->lock);
		qp->eng_busy = false;
		pthread_cond_broadcast(&dev->eng.idle);
	}
	if (via > 0)
		dev->stats.rdma_mapped++;
	else if (via == 0)
		dev->stats.rdma_process_vm++;
	if (full) {
		qp->eng_stalled = true;
		dev->eng.attn = true;
		shm_dev_signal_locked(dev);
		return;
	}
	qp->sq_exec++;
	if (st != FAB_WC_SUCCESS) {
		/* as the synchronous path: this WR completes in error; the owner tears the connection down,
		 * which flushes the rest (nothing more runs meanwhile) */
		shm_cq_push_locked(dev, qp, s->wr.wr_id, shm_wc_opcode(s->wr.opcode), st, len, true, qp->sq_exec - 1);
		qp->eng_failed = true;
		dev->eng.attn = true;
		shm_dev_signal_locked(dev);
		return;
	}
	if (s->wr.signaled)
		shm_cq_push_locked(dev, qp, s->wr.wr_id, shm_wc_opcode(s->wr.opcode), st, len, true, qp->sq_exec - 1);
}

static void *engine_main(void *arg)
{
	struct fab_dev *dev = arg;

	pthread_mutex_lock(&dev->lock);
	for (;;) {
		struct fab_qp *qp;

		while (!dev->eng.stop && ulnet_list_empty(&dev->eng.runq))
			pthread_cond_wait(&dev->eng.work, &dev->lock);
		if (dev->eng.stop)
			break;
		qp = ulnet_list_first(&dev->eng.runq, struct fab_qp, eng_link);
		ulnet_list_del(&qp->eng_link);
		qp->eng_queued = false;
		if (!qp_runnable(qp))
			continue;
		run_one(dev, qp);
		/* round robin: the next WR after the other QPs' (a post meanwhile may have queued it) */
		if (!qp->eng_queued && qp_runnable(qp)) {
			ulnet_list_add_tail(&qp->eng_link, &dev->eng.runq);
			qp->eng_queued = true;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

bool shm_engine_start(struct fab_dev *dev)
{
	int rc;

	if (!dev->eng.on || dev->eng.started)
		return dev->eng.on;
	/* the thread pushes completions: the owner's fd is armed from now on (fab poll/arm no longer
	 * change it, so the thread reads it without a race) */
	dev->armed = true;
	pthread_cond_init(&dev->eng.work, NULL);
	pthread_cond_init(&dev->eng.idle, NULL);
	if ((rc = pthread_create(&dev->eng.thread, NULL, engine_main, dev))) {
		ULNET_LOG(FABRIC, WARN, "shm: no copy thread (%s): RDMA runs in the posting thread", strerror(rc));
		pthread_cond_destroy(&dev->eng.work);
		pthread_cond_destroy(&dev->eng.idle);
		dev->eng.on = false;
		return false;
	}
	dev->eng.started = true;
	return true;
}

void shm_engine_stop(struct fab_dev *dev)
{
	if (!dev->eng.started)
		return;
	pthread_mutex_lock(&dev->lock);
	dev->eng.stop = true;
	pthread_cond_signal(&dev->eng.work);
	pthread_mutex_unlock(&dev->lock);
	pthread_join(dev->eng.thread, NULL);
	pthread_cond_destroy(&dev->eng.work);
	pthread_cond_destroy(&dev->eng.idle);
	dev->eng.started = false;
}

bool shm_engine_kick_locked(struct fab_qp *qp)
{
	struct fab_dev *dev = qp->id->dev;

	if (!dev->eng.started)
		return false;
	if (!qp->eng_queued && qp_runnable(qp)) {
		ulnet_list_add_tail(&qp->eng_link, &dev->eng.runq);
		qp->eng_queued = true;
		pthread_cond_signal(&dev->eng.work);
	}
	return true;
}

void shm_engine_quiesce_locked(struct fab_qp *qp)
{
	struct fab_dev *dev = qp->id->dev;

	if (qp->eng_queued) {
		ulnet_list_del(&qp->eng_link);
		qp->eng_queued = false;
	}
	while (qp->eng_busy)
		pthread_cond_wait(&dev->eng.idle, &dev->lock);
}

void shm_engine_attend(struct fab_dev *dev)
{
	struct ulnet_list *pos, *tmp;
	bool attn;

	pthread_mutex_lock(&dev->lock);
	attn = dev->eng.attn;
	dev->eng.attn = false;
	pthread_mutex_unlock(&dev->lock);
	if (!attn)
		return;
	ulnet_list_for_each_safe(pos, tmp, &dev->ids) {
		struct fab_cm_id *id = ulnet_container_of(pos, struct fab_cm_id, link);
		struct fab_qp *qp = id->qp;
		bool failed, stalled;

		if (!qp)
			continue;
		pthread_mutex_lock(&dev->lock);
		failed = qp->eng_failed && !qp->error;
		stalled = qp->eng_stalled;
		pthread_mutex_unlock(&dev->lock);
		if (failed)
			shm_id_teardown(id, -EIO);
		else if (stalled && id->state == SHM_ID_ESTABLISHED)
			shm_ep_set(id, shm_qp_ep_events(qp));
	}
}
