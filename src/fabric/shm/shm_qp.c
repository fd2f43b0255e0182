/* SPDX-License-Identifier: MIT */
/* shm queue pairs: fixed-depth send and receive queues, execution in post order (RC ordering: an
 * RDMA WRITE's process_vm_writev has returned before the next SEND goes into the socket), the
 * limits of the device, and the error state with its flush. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "log.h"
#include "shm.h"

#define SHM_IOV_MAX 1024
#define SHM_SEND_HDR 4 /* in front of every SEND: a zero-length message must not read as EOF */
#define SHM_SEND_TYPE 0x53
#define SHM_RX_BATCH 16

void shm_qp_query(const struct fab_qp *qp, struct fab_qp_attr *attr)
{
	*attr = (struct fab_qp_attr){.max_send_wr = qp->sq_depth, .max_recv_wr = qp->rq_depth};
}

int shm_create_qp(struct fab_cm_id *id, const struct fab_qp_attr *attr, void *context, struct fab_qp **out)
{
	const struct fab_limits *lim = &id->dev->lim;
	struct fab_qp *qp;
	size_t nsge;

	if (id->qp)
		return -EEXIST;
	if (!attr->max_send_wr || !attr->max_recv_wr || attr->max_send_wr > lim->max_qp_wr ||
	    attr->max_recv_wr > lim->max_qp_wr) {
		ULNET_LOG(FABRIC, ERR, "shm: QP depth send %u recv %u: allowed 1..%u (lnd tunable device: max_qp_wr)",
			  attr->max_send_wr, attr->max_recv_wr, lim->max_qp_wr);
		return -EINVAL;
	}
	if (id->dev->n_qp >= lim->max_qp) {
		ULNET_LOG(FABRIC, ERR, "shm: %u QPs exist, max_qp %u (lnd tunable device: max_qp)", id->dev->n_qp,
			  lim->max_qp);
		return -ENOSPC;
	}
	shm_engine_start(id->dev); /* at the first QP: a process may fork before it makes any */
	if (!(qp = calloc(1, sizeof(*qp))))
		return -ENOMEM;
	qp->id = id;
	qp->context = context;
	qp->sq_depth = attr->max_send_wr;
	qp->rq_depth = attr->max_recv_wr;
	nsge = (size_t)qp->sq_depth * lim->max_send_sge + (size_t)qp->rq_depth * lim->max_recv_sge;
	qp->sq = calloc(qp->sq_depth, sizeof(*qp->sq));
	qp->rq = calloc(qp->rq_depth, sizeof(*qp->rq));
	qp->sge_pool = calloc(nsge, sizeof(*qp->sge_pool));
	if (!qp->sq || !qp->rq || !qp->sge_pool) {
		shm_qp_free(qp);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < qp->sq_depth; i++)
		qp->sq[i].sge = qp->sge_pool + (size_t)i * lim->max_send_sge;
	for (uint32_t i = 0; i < qp->rq_depth; i++)
		qp->rq[i].sge = qp->sge_pool + (size_t)qp->sq_depth * lim->max_send_sge + (size_t)i * lim->max_recv_sge;
	id->qp = qp;
	id->dev->n_qp++;
	*out = qp;
	return 0;
}

void shm_qp_stop(struct fab_qp *qp)
{
	struct fab_dev *dev = qp->id->dev;

	shm_lock(dev);
	qp->eng_stopped = true;
	shm_engine_quiesce_locked(qp);
	shm_unlock(dev);
}

void shm_qp_free(struct fab_qp *qp)
{
	if (!qp)
		return;
	shm_qp_stop(qp);
	if (qp->id && qp->id->qp == qp)
		qp->id->dev->n_qp--;
	free(qp->sq);
	free(qp->rq);
	free(qp->sge_pool);
	free(qp);
}

static inline uint32_t ep_events(const struct fab_qp *qp)
{
	struct fab_dev *dev = qp->id->dev;
	uint32_t ev = EPOLLRDHUP;

	shm_lock(dev);
	if (!qp->error && qp->rq_head != qp->rq_post)
		ev |= EPOLLIN;
	/* only left waiting when the socket was full (the engine's WRs wait for the engine; a full ring
	 * for the peer's doorbell) */
	if (!qp->error && !qp->id->ring_send && (dev->eng.started ? qp->eng_stalled : qp->sq_exec != qp->sq_post))
		ev |= EPOLLOUT;
	shm_unlock(dev);
	return ev;
}

uint32_t shm_qp_ep_events(const struct fab_qp *qp) { return ep_events(qp); }

/* After every post and run: inline, and epoll_ctl's wrapper only when the interest changes (it
 * rarely does), ~50 instructions per post saved. */
static void qp_ep_update(struct fab_qp *qp)
{
	uint32_t ev;

	if (qp->id->state != SHM_ID_ESTABLISHED)
		return;
	ev = ep_events(qp);
	if (ev != qp->id->ep_events)
		shm_ep_set(qp->id, ev);
}

void shm_qp_sq_release(struct fab_qp *qp, uint64_t upto_seq)
{
	if (upto_seq > qp->sq_tail)
		qp->sq_tail = upto_seq;
}

enum fab_wc_opcode shm_wc_opcode(enum fab_wr_opcode op)
{
	return op == FAB_WR_SEND ? FAB_WC_SEND : op == FAB_WR_RDMA_WRITE ? FAB_WC_RDMA_WRITE : FAB_WC_RDMA_READ;
}

void shm_qp_set_error(struct fab_qp *qp)
{
	struct fab_dev *dev = qp->id->dev;

	shm_lock(dev);
	if (qp->error) {
		shm_unlock(dev);
		return;
	}
	/* the WR the engine runs finishes first: what it moved completes, the rest is flushed */
	shm_engine_quiesce_locked(qp);
	qp->error = true;
	for (; qp->sq_exec < qp->sq_post; qp->sq_exec++) {
		const struct shm_swr *s = &qp->sq[qp->sq_exec % qp->sq_depth];

		shm_cq_push_locked(dev, qp, s->wr.wr_id, shm_wc_opcode(s->wr.opcode), FAB_WC_WR_FLUSH_ERR, 0, true,
				   qp->sq_exec);
	}
	for (; qp->rq_head < qp->rq_post; qp->rq_head++)
		shm_cq_push_locked(dev, qp, qp->rq[qp->rq_head % qp->rq_depth].wr_id, FAB_WC_RECV, FAB_WC_WR_FLUSH_ERR,
				   0, false, 0);
	shm_unlock(dev);
	qp_ep_update(qp);
}

/* A one-segment region of our own table (every SGE of the LND's message areas and of a 1 MiB source)
 * holds @sge with @access: with no copy thread only this thread deregisters, so there is no busy to
 * take; the checks are shm_mr_check's. */
static inline bool local_sge_ok(const struct fab_dev *dev, const struct fab_sge *sge, unsigned access)
{
	uint32_t idx = SHM_KEY_IDX(sge->lkey);

	return !dev->eng.started && sge->lkey >= (1u << 16) && idx < dev->lim.max_mr && dev->tbl[idx].nseg == 1 &&
	       shm_mr_entry_ok(&dev->tbl[idx], sge->lkey, sge->addr, sge->length, access);
}

/* local_iov's loop, through shm_mr_check where the quick check does not do (our copy thread holds
 * the region busy while it reads its segment list: the owner's dereg frees it). */
static __attribute__((noinline)) int local_iov_slow(struct fab_qp *qp, const struct fab_sge *sge, uint32_t n,
						    unsigned access, struct iovec *iov, int max, uint64_t *total)
{
	struct fab_dev *dev = qp->id->dev;
	int cnt = 0;

	*total = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct shm_mr_entry *e;
		uint32_t idx = SHM_KEY_IDX(sge[i].lkey);
		int k;

		if (!sge[i].length)
			continue;
		if (cnt < max && local_sge_ok(dev, &sge[i], access)) {
			iov[cnt++] = (struct iovec){ (void *)(uintptr_t)sge[i].addr, sge[i].length };
			*total += sge[i].length;
			continue;
		}
		if (sge[i].lkey < (1u << 16) || idx >= dev->lim.max_mr)
			return -1;
		atomic_fetch_add(&dev->mrs[idx].busy, 1);
		k = shm_mr_check(dev->tbl, dev->lim.max_mr, sge[i].lkey, sge[i].addr, sge[i].length, access,
				 iov + cnt, max - cnt, &e);
		atomic_fetch_sub(&dev->mrs[idx].busy, 1);
		if (k < 0)
			return -1;
		cnt += k;
		*total += sge[i].length;
	}
	return cnt;
}

/* Local SGEs -> iovecs in this process, checked against our own table. Count, or -1. One SGE that
 * passes the quick check (~6 per RPC) costs no call. */
static inline int local_iov(struct fab_qp *qp, const struct fab_sge *sge, uint32_t n, unsigned access,
			    struct iovec *iov, int max, uint64_t *total)
{
	if (n == 1 && max >= 1 && sge->length && local_sge_ok(qp->id->dev, sge, access)) {
		iov[0] = (struct iovec){ (void *)(uintptr_t)sge->addr, sge->length };
		*total = sge->length;
		return 1;
	}
	return local_iov_slow(qp, sge, n, access, iov, max, total);
}

/* The peer is SIGKILLed and gone when this returns (fault injection: death mid-RDMA). */
static void kill_peer_and_wait(pid_t pid)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);

	kill(pid, SIGKILL);
	if (pfd >= 0) {
		struct pollfd p = {.fd = pfd, .events = POLLIN};

		poll(&p, 1, 5000);
		close(pfd);
	} else {
		for (int i = 0; i < 500 && kill(pid, 0) == 0; i++)
			usleep(10000);
	}
}

static enum fab_wc_status vm_errno_status(struct fab_qp *qp, int err)
{
	char buf[512], scope[8] = "";
	FILE *f;

	switch (err) {
	case ESRCH:
		return FAB_WC_RETRY_EXC_ERR;
	case EPERM:
		if ((f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r"))) {
			if (!fgets(scope, sizeof(scope), f))
				scope[0] = 0;
			scope[strcspn(scope, "\n")] = 0;
			fclose(f);
		}
		fab_shm_eperm_msg(buf, sizeof(buf), (int)qp->id->peer_pid, f ? scope : NULL, qp->id->dev->ptrace_note);
		ULNET_LOG(FABRIC, ERR, "%s", buf);
		return FAB_WC_FATAL_ERR;
	default:
		return FAB_WC_REM_OP_ERR;
	}
}

bool shm_qp_send_follows(const struct fab_qp *qp)
{
	const struct shm_swr *s = &qp->sq[qp->sq_exec % qp->sq_depth];

	/* (a SEND into the ring succeeds whatever became of the peer: it proves nothing) */
	return !qp->id->ring_send && s->wr.opcode == FAB_WR_RDMA_WRITE && !s->wr.signaled &&
	       qp->sq_exec + 1 < qp->sq_post && qp->sq[(qp->sq_exec + 1) % qp->sq_depth].wr.opcode == FAB_WR_SEND;
}

/* The peer's region is mapped here (a memfd region): memcpy, then check that the peer still holds
 * the connection, as an HCA waits for the responder's ACK. @vouched (shm_qp_send_follows): the SEND
 * right after this unsignalled WRITE makes the check, a poll() per RDMA saved: its sendmsg fails
 * (EPIPE) once the peer's end is closed, as the poll would, and the WR's failure is then reported
 * by that SEND (and the teardown it causes). */
static enum fab_wc_status rdma_mapped(struct fab_qp *qp, bool write, const struct iovec *liov, int ln,
				      const struct iovec *riov, int rn, uint64_t total, bool vouched)
{
	struct fab_dev *dev = qp->id->dev;

	if (dev->faults.kill_peer_rdma_nth && --dev->faults.kill_peer_rdma_nth == 0) {
		/* move the first half, then the peer dies: the WR must fail, not hang or crash */
		if (write)
			ulnet__iov_copy(riov, (unsigned)rn, liov, (unsigned)ln, total / 2);
		else
			ulnet__iov_copy(liov, (unsigned)ln, riov, (unsigned)rn, total / 2);
		kill_peer_and_wait(qp->id->peer_pid);
		vouched = false;
	} else if (write) {
		ulnet__iov_copy(riov, (unsigned)rn, liov, (unsigned)ln, total);
	} else {
		ulnet__iov_copy(liov, (unsigned)ln, riov, (unsigned)rn, total);
	}
	/* (a copy into the mapping of a peer that died is harmless: the pages are ours until unmapped) */
	return vouched || shm_peer_alive(qp->id) ? FAB_WC_SUCCESS : FAB_WC_RETRY_EXC_ERR;
}

/* The copy through process_vm_* (memory the peer did not map for us). */
static enum fab_wc_status rdma_process_vm(struct fab_qp *qp, bool write, struct iovec *liov, int ln,
					  struct iovec *riov, int rn, uint64_t total)
{
	struct fab_dev *dev = qp->id->dev;
	struct iovec l2[SHM_IOV_MAX], r2[SHM_IOV_MAX];
	uint64_t done = 0;

	if (dev->faults.kill_peer_rdma_nth && --dev->faults.kill_peer_rdma_nth == 0) {
		/* move the first half, then the peer dies: the rest must fail, not hang or crash */
		int a = shm_iov_slice(liov, ln, 0, total / 2, l2, SHM_IOV_MAX);
		int b = shm_iov_slice(riov, rn, 0, total / 2, r2, SHM_IOV_MAX);
		ssize_t n = write ? process_vm_writev(qp->id->peer_pid, l2, (unsigned long)a, r2, (unsigned long)b, 0)
				  : process_vm_readv(qp->id->peer_pid, l2, (unsigned long)a, r2, (unsigned long)b, 0);

		if (n > 0)
			done = (uint64_t)n;
		kill_peer_and_wait(qp->id->peer_pid);
		ln = shm_iov_slice(liov, ln, done, total - done, l2, SHM_IOV_MAX);
		rn = shm_iov_slice(riov, rn, done, total - done, r2, SHM_IOV_MAX);
		memcpy(liov, l2, (size_t)ln * sizeof(*liov));
		memcpy(riov, r2, (size_t)rn * sizeof(*riov));
	}
	while (done < total) {
		ssize_t n = write ? process_vm_writev(qp->id->peer_pid, liov, (unsigned long)ln, riov, (unsigned long)rn, 0)
				  : process_vm_readv(qp->id->peer_pid, liov, (unsigned long)ln, riov, (unsigned long)rn, 0);

		if (n <= 0)
			return vm_errno_status(qp, n < 0 ? errno : EFAULT);
		done += (uint64_t)n;
		if (done < total) /* partial: a page of the peer's region is not mapped any more */
			return FAB_WC_REM_OP_ERR;
	}
	return FAB_WC_SUCCESS;
}

static enum fab_wc_status exec_rdma(struct fab_qp *qp, const struct shm_swr *s, uint32_t *len, int *via,
				    bool vouched)
{
	struct fab_cm_id *id = qp->id;
	bool write = s->wr.opcode == FAB_WR_RDMA_WRITE;
	struct iovec liov[SHM_IOV_MAX], riov[SHM_IOV_MAX];
	const struct shm_mr_entry *e;
	enum fab_wc_status st;
	_Atomic uint32_t *copying;
	uint64_t total;
	int ln, rn, mapped;

	ln = local_iov(qp, s->sge, s->wr.num_sge, write ? 0 : FAB_ACCESS_LOCAL_WRITE, liov, SHM_IOV_MAX, &total);
	if (ln < 0)
		return FAB_WC_LOC_PROT_ERR;
	*len = (uint32_t)total;
	if (!total)
		return FAB_WC_SUCCESS;
	if (!id->peer_tbl || !id->ring_map)
		return FAB_WC_REM_ACCESS_ERR;
	/* our connection's copying word names the key before we look at the peer's entry: a
	 * deregistration that cleared it after this point waits for the store of 0 below */
	copying = &id->ring_tx.ctl->copying;
	atomic_store(copying, s->wr.rkey);
	rn = shm_mr_check(id->peer_tbl, id->peer_tbl_n, s->wr.rkey, s->wr.remote_addr, total,
			  write ? FAB_ACCESS_REMOTE_WRITE : FAB_ACCESS_REMOTE_READ, riov, SHM_IOV_MAX, &e);
	if (rn < 0) {
		atomic_store_explicit(copying, 0, memory_order_release);
		return rn == -EACCES ? FAB_WC_REM_ACCESS_ERR : vm_errno_status(qp, -rn);
	}
	mapped = shm_peer_translate(id, e, riov, rn);
	if (mapped > 0) {
		*via = 1;
		st = rdma_mapped(qp, write, liov, ln, riov, rn, total, vouched);
	} else if (mapped == 0) {
		*via = 0;
		st = rdma_process_vm(qp, write, liov, ln, riov, rn, total);
	} else {
		st = FAB_WC_REM_ACCESS_ERR; /* (the memory channel broke the rules: logged) */
	}
	atomic_store_explicit(copying, 0, memory_order_release);
	return st;
}

static void ring_bell(struct fab_cm_id *id)
{
	static const char one = 1;

	if (id->peer_db < 0)
		return;
	id->dev->stats.doorbells++;
	/* (never blocks, whatever the peer does to its end; EAGAIN: the peer has plenty to wake it) */
	if (send(id->peer_db, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN)
		ULNET_LOG(FABRIC, WARN, "shm: doorbell to pid %d failed: %s", (int)id->peer_pid, strerror(errno));
}

/* A SEND through the shared ring: 1 = no room (the peer rings our doorbell when it makes some). */
static int ring_send(struct fab_qp *qp, const struct iovec *iov, int n, uint32_t total, enum fab_wc_status *st,
		     uint32_t *len)
{
	bool bell;
	int rc = shm_ring_put(&qp->id->ring_tx, iov, n, total, &bell);

	if (rc == 1)
		return 1;
	if (rc < 0) {
		ULNET_LOG(FABRIC, ERR, "shm: the SEND ring to pid %d is corrupt (its consumer index is out of "
			  "bounds); QP to error", (int)qp->id->peer_pid);
		*st = FAB_WC_RETRY_EXC_ERR;
		return 0;
	}
	if (bell)
		ring_bell(qp->id);
	*len = total;
	*st = FAB_WC_SUCCESS;
	return 0;
}

/* 1 = the socket is full (try again on EPOLLOUT), 0 = done with *@st. */
static int exec_send(struct fab_qp *qp, const struct shm_swr *s, enum fab_wc_status *st, uint32_t *len)
{
	struct iovec iov[SHM_IOV_MAX + 1];
	uint8_t hdr[SHM_SEND_HDR] = {SHM_SEND_TYPE};
	struct msghdr mh = {.msg_iov = iov};
	uint64_t total;
	int n = local_iov(qp, s->sge, s->wr.num_sge, 0, iov + 1, SHM_IOV_MAX - 1, &total);

	*len = 0;
	if (n < 0) {
		*st = FAB_WC_LOC_PROT_ERR;
		return 0;
	}
	if (total > qp->id->dev->lim.max_msg_sz) {
		ULNET_LOG(FABRIC, ERR, "shm: SEND of %llu bytes over max_msg_sz %u (lnd tunable device: max_msg_sz)",
			  (unsigned long long)total, qp->id->dev->lim.max_msg_sz);
		*st = FAB_WC_LOC_LEN_ERR;
		return 0;
	}
	if (qp->id->ring_send)
		return ring_send(qp, iov + 1, n, (uint32_t)total, st, len);
	iov[0] = (struct iovec){hdr, sizeof(hdr)};
	mh.msg_iovlen = (size_t)n + 1;
	if (sendmsg(qp->id->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 1;
		*st = errno == EMSGSIZE ? FAB_WC_LOC_LEN_ERR : FAB_WC_RETRY_EXC_ERR;
		return 0;
	}
	*len = (uint32_t)total;
	*st = FAB_WC_SUCCESS;
	return 0;
}

int shm_qp_exec(struct fab_qp *qp, const struct shm_swr *s, enum fab_wc_status *st, uint32_t *len, int *via,
		bool vouched)
{
	*len = 0;
	if (s->wr.opcode == FAB_WR_SEND)
		return exec_send(qp, s, st, len);
	*st = exec_rdma(qp, s, len, via, vouched);
	return 0;
}

void shm_qp_run(struct fab_qp *qp)
{
	struct fab_dev *dev = qp->id->dev;
	bool engine;

	shm_lock(dev);
	qp->eng_stalled = false; /* a post, the connection up, or EPOLLOUT: the socket may take more */
	engine = dev->eng.started && shm_engine_kick_locked(qp); /* (no call per post without the thread) */
	shm_unlock(dev);
	while (!engine && qp->connected && !qp->error && qp->sq_exec < qp->sq_post) {
		struct shm_swr *s = &qp->sq[qp->sq_exec % qp->sq_depth];
		enum fab_wc_status st;
		enum fab_wc_opcode op = shm_wc_opcode(s->wr.opcode);
		uint32_t len = 0;
		int via = -1;

		if (shm_qp_exec(qp, s, &st, &len, &via, shm_qp_send_follows(qp)))
			break;
		qp->sq_exec++;
		shm_lock(dev);
		if (via > 0)
			dev->stats.rdma_mapped++;
		else if (via == 0)
			dev->stats.rdma_process_vm++;
		shm_unlock(dev);
		if (st != FAB_WC_SUCCESS) {
			/* errors always complete; the QP goes to error and the peer learns it (disconnect) */
			shm_cq_push(dev, qp, s->wr.wr_id, op, st, len, true, qp->sq_exec - 1);
			shm_id_teardown(qp->id, -EIO);
			return;
		}
		if (s->wr.signaled)
			shm_cq_push(dev, qp, s->wr.wr_id, op, st, len, true, qp->sq_exec - 1);
	}
	qp_ep_update(qp);
}

/* One receive's iovecs (header first) at @iov, at most @max of them; -1: its SGEs fail the check. */
static int rx_iov(struct fab_qp *qp, const struct shm_rwr *r, uint8_t *hdr, struct iovec *iov, int max,
		  uint64_t *total)
{
	int k = local_iov(qp, r->sge, r->num_sge, FAB_ACCESS_LOCAL_WRITE, iov + 1, max - 1, total);

	iov[0] = (struct iovec){hdr, SHM_SEND_HDR};
	return k;
}

/* Deliver what the ring from the peer holds into the posted receives; once it is empty (and a
 * receive waits), say we sleep if the owner may sleep (armed; a busy-polling owner looks at the
 * ring itself). false: the QP went to error (logged). */
static bool ring_rx(struct fab_qp *qp)
{
	struct fab_cm_id *id = qp->id;
	struct fab_dev *dev = id->dev;

	while (id->state == SHM_ID_ESTABLISHED && !qp->error && qp->rq_head < qp->rq_post) {
		struct iovec iov[SHM_IOV_MAX];
		const struct shm_rwr *r;
		uint64_t total;
		uint32_t n;
		int k, rc = shm_ring_peek(&id->ring_rx, &n);

		if (rc == 0) {
			if (!dev->armed || shm_ring_sleep(&id->ring_rx))
				break;
			continue;
		}
		if (rc < 0) {
			ULNET_LOG(FABRIC, ERR, "shm: the SEND ring from pid %d is corrupt (an index or record length out "
				  "of bounds); QP to error", (int)id->peer_pid);
			shm_id_teardown(id, -EPROTO);
			return false;
		}
		r = &qp->rq[qp->rq_head++ % qp->rq_depth];
		k = local_iov(qp, r->sge, r->num_sge, FAB_ACCESS_LOCAL_WRITE, iov, SHM_IOV_MAX, &total);
		if (k < 0 || n > total) {
			if (k >= 0)
				ULNET_LOG(FABRIC, ERR, "shm: incoming SEND longer than the receive (%u bytes, %llu posted); "
					  "QP to error", n, (unsigned long long)total);
			shm_cq_push(dev, qp, r->wr_id, FAB_WC_RECV, k < 0 ? FAB_WC_LOC_PROT_ERR : FAB_WC_LOC_LEN_ERR, 0,
				    false, 0);
			shm_id_teardown(id, -EIO);
			return false;
		}
		shm_ring_read(&id->ring_rx, n, iov, k);
		if (shm_ring_pop(&id->ring_rx, n))
			ring_bell(id);
		shm_cq_push(dev, qp, r->wr_id, FAB_WC_RECV, FAB_WC_SUCCESS, n, false, 0);
	}
	return true;
}

void shm_qp_ring_poll(struct fab_qp *qp)
{
	if (qp->id->state != SHM_ID_ESTABLISHED)
		return;
	/* ring_rx even when the ring looks empty: a doorbell means our sleep flag was taken (possibly
	 * by a producer that saw it late, for a record we consumed since): say again that we sleep.
	 * (The socket is read on EPOLLIN: a recvmmsg here would find it empty.) */
	if (qp->id->ring_map && !ring_rx(qp))
		return;
	if (qp->id->ring_send && qp->sq_exec < qp->sq_post)
		shm_qp_run(qp);
}

void shm_qp_ring_peek_rx(struct fab_qp *qp)
{
	struct fab_cm_id *id = qp->id;

	if (id->ring_map && id->state == SHM_ID_ESTABLISHED && !qp->error && qp->rq_head < qp->rq_post &&
	    shm_ring_nonempty(&id->ring_rx))
		ring_rx(qp);
}

bool shm_qp_ring_arm(struct fab_qp *qp)
{
	struct fab_cm_id *id = qp->id;

	/* (no receive posted: nothing could be delivered; post_recv looks at the ring and says we
	 * sleep then) */
	if (!id->ring_map || id->state != SHM_ID_ESTABLISHED || qp->error || qp->rq_head == qp->rq_post)
		return true;
	return shm_ring_sleep(&id->ring_rx);
}

void shm_qp_ring_disarm(struct fab_qp *qp)
{
	if (qp->id->ring_map && qp->id->state == SHM_ID_ESTABLISHED)
		shm_ring_wake(&qp->id->ring_rx);
}

/* Deliver what the ring and the socket hold into the posted receives, SHM_RX_BATCH messages per
 * recvmmsg: a short batch means the socket is empty, so no call ends in EAGAIN unless nothing came.
 * (A peer sends through one of them only: through the socket when it runs a copy thread.) */
void shm_qp_rx(struct fab_qp *qp)
{
	struct fab_dev *dev = qp->id->dev;

	if (qp->id->ring_map && !ring_rx(qp))
		return;

	while (qp->id->state == SHM_ID_ESTABLISHED && !qp->error && qp->rq_head < qp->rq_post) {
		struct iovec iov[SHM_IOV_MAX + 1];
		uint8_t hdr[SHM_RX_BATCH][SHM_SEND_HDR];
		struct mmsghdr mm[SHM_RX_BATCH];
		uint64_t total[SHM_RX_BATCH];
		int bad[SHM_RX_BATCH], used = 0, want = 0, got;

		/* as many receives as are posted, while their iovecs fit (one at least, whatever its size) */
		while (want < SHM_RX_BATCH && qp->rq_head + (uint64_t)want < qp->rq_post) {
			const struct shm_rwr *r = &qp->rq[(qp->rq_head + (uint64_t)want) % qp->rq_depth];
			int k;

			if (want && used + 1 + (int)r->num_sge > SHM_IOV_MAX + 1)
				break;
			k = rx_iov(qp, r, hdr[want], iov + used, SHM_IOV_MAX + 1 - used, &total[want]);
			bad[want] = k < 0;
			mm[want] = (struct mmsghdr){.msg_hdr = {.msg_iov = iov + used, .msg_iovlen = k < 0 ? 1 : (size_t)k + 1}};
			used += k < 0 ? 1 : k + 1;
			want++;
		}
		got = recvmmsg(qp->id->fd, mm, (unsigned)want, MSG_DONTWAIT, NULL);
		qp->rx_more = false;
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (got <= 0) {
			shm_id_teardown(qp->id, -ECONNRESET);
			return;
		}
		for (int i = 0; i < got; i++) {
			const struct shm_rwr *r = &qp->rq[qp->rq_head % qp->rq_depth];
			uint32_t n = mm[i].msg_len;

			if (n == 0) { /* end of file: the peer closed (a SEND always has its header) */
				shm_id_teardown(qp->id, -ECONNRESET);
				return;
			}
			qp->rq_head++;
			if (bad[i] || (mm[i].msg_hdr.msg_flags & MSG_TRUNC) || n < SHM_SEND_HDR ||
			    hdr[i][0] != SHM_SEND_TYPE) {
				enum fab_wc_status st = bad[i] ? FAB_WC_LOC_PROT_ERR : FAB_WC_LOC_LEN_ERR;

				if (!bad[i] && (mm[i].msg_hdr.msg_flags & MSG_TRUNC))
					ULNET_LOG(FABRIC, ERR, "shm: incoming SEND longer than the receive (%llu bytes); QP "
						  "to error", (unsigned long long)total[i]);
				shm_cq_push(dev, qp, r->wr_id, FAB_WC_RECV, st, 0, false, 0);
				shm_id_teardown(qp->id, -EIO);
				return;
			}
			shm_cq_push(dev, qp, r->wr_id, FAB_WC_RECV, FAB_WC_SUCCESS, n - SHM_SEND_HDR, false, 0);
		}
		if (got < want)
			break; /* the socket is empty */
		/* every receive of the batch was used: more may wait, for receives posted later */
		qp->rx_more = true;
	}
	qp_ep_update(qp);
}

static bool post_fault(struct fab_qp *qp)
{
	struct fab_shm_faults *f = &qp->id->dev->faults;

	return f->fail_post_nth && --f->fail_post_nth == 0;
}

int shm_post_recv(struct fab_qp *qp, const struct fab_recv_wr *wr, const struct fab_recv_wr **bad)
{
	const struct fab_limits *lim = &qp->id->dev->lim;
	int rc = 0;

	if (post_fault(qp)) {
		*bad = wr;
		return -EIO;
	}
	for (; wr; wr = wr->next) {
		struct shm_rwr *r;

		if (wr->num_sge > lim->max_recv_sge) {
			ULNET_LOG(FABRIC, ERR, "shm: receive WR with %u SGEs, max_recv_sge %u (lnd tunable device: "
				  "max_recv_sge)", wr->num_sge, lim->max_recv_sge);
			rc = -EINVAL;
			break;
		}
		if (qp->rq_post - qp->rq_head == qp->rq_depth) {
			rc = -ENOMEM;
			break;
		}
		r = &qp->rq[qp->rq_post % qp->rq_depth];
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		for (uint32_t k = 0; k < wr->num_sge; k++) /* (usually one: no memcpy call) */
			r->sge[k] = wr->sg_list[k];
		qp->rq_post++;
		if (qp->error) /* flushed at once, as verbs does in the error state */
			shm_cq_push(qp->id->dev, qp, qp->rq[qp->rq_head++ % qp->rq_depth].wr_id, FAB_WC_RECV,
				    FAB_WC_WR_FLUSH_ERR, 0, false, 0);
	}
	if (rc)
		*bad = wr;
	/* a socket that had more than the receives then posted is not waited on (no EPOLLIN without a
	 * receive): read it now; otherwise epoll says when something comes */
	/* delivers what waits, or says we sleep on the ring (a busy-polling owner does not sleep: with the
	 * ring empty there is nothing to do, ~40 instructions per repost saved) */
	if (qp->id->ring_map && (qp->id->dev->armed || shm_ring_nonempty(&qp->id->ring_rx)) && !ring_rx(qp))
		return rc;
	if (qp->rx_more)
		shm_qp_rx(qp);
	else
		qp_ep_update(qp);
	return rc;
}

int shm_post_send(struct fab_qp *qp, const struct fab_send_wr *wr, const struct fab_send_wr **bad)
{
	const struct fab_limits *lim = &qp->id->dev->lim;
	int rc = 0;

	if (post_fault(qp)) {
		*bad = wr;
		return -EIO;
	}
	shm_lock(qp->id->dev); /* the engine reads sq_post and flushes with sq_exec */
	for (; wr; wr = wr->next) {
		struct shm_swr *s;

		if (wr->num_sge > lim->max_send_sge) {
			ULNET_LOG(FABRIC, ERR, "shm: send WR with %u SGEs, max_send_sge %u (lnd tunable device: "
				  "max_send_sge)", wr->num_sge, lim->max_send_sge);
			rc = -EINVAL;
			break;
		}
		if (wr->opcode != FAB_WR_SEND && wr->opcode != FAB_WR_RDMA_WRITE && wr->opcode != FAB_WR_RDMA_READ) {
			rc = -EINVAL;
			break;
		}
		if (!qp->connected && !qp->error) {
			rc = -ENOTCONN;
			break;
		}
		if (qp->sq_post - qp->sq_tail == qp->sq_depth) {
			rc = -ENOMEM;
			break;
		}
		s = &qp->sq[qp->sq_post % qp->sq_depth];
		s->wr = *wr;
		s->wr.next = NULL;
		s->wr.sg_list = NULL;
		for (uint32_t k = 0; k < wr->num_sge; k++) /* (sg_list may be NULL for an empty SEND) */
			s->sge[k] = wr->sg_list[k];
		qp->sq_post++;
		if (qp->error)
			shm_cq_push_locked(qp->id->dev, qp, wr->wr_id, shm_wc_opcode(wr->opcode), FAB_WC_WR_FLUSH_ERR, 0,
					   true, qp->sq_exec++);
	}
	shm_unlock(qp->id->dev);
	if (rc)
		*bad = wr;
	shm_qp_run(qp);
	return rc;
}
