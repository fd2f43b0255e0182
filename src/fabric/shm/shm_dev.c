/* SPDX-License-Identifier: MIT */
/* shm device: the fd the owner waits on (an epoll set of the device's sockets, an eventfd raised
 * while completions or events wait, a timerfd for deadlines), the completion and CM event queues,
 * progress, and the provider's ops table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "log.h"
#include "clock.h"
#include "shm.h"

uint64_t shm_now_ns(void)
{
	return ulnet__now_ns(); /* the core's one clock */
}

/* Let peers of the same user read and write our registered memory under Yama (ptrace_scope 1). */
static void shm_allow_peers(struct fab_dev *dev)
{
	char scope[8] = "";
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");

	if (f) {
		if (!fgets(scope, sizeof(scope), f))
			scope[0] = 0;
		fclose(f);
		scope[strcspn(scope, "\n")] = 0;
	}
	if (!f) {
		snprintf(dev->ptrace_note, sizeof(dev->ptrace_note), "no Yama on this kernel; nothing done");
	} else if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0) {
		snprintf(dev->ptrace_note, sizeof(dev->ptrace_note),
			 "kernel.yama.ptrace_scope=%s; this node called prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)", scope);
	} else {
		snprintf(dev->ptrace_note, sizeof(dev->ptrace_note),
			 "kernel.yama.ptrace_scope=%s; prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY) failed: %s", scope,
			 strerror(errno));
	}
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)
		ULNET_LOG(FABRIC, WARN, "shm: this process is not dumpable: peers cannot RDMA into it unless they "
			  "have CAP_SYS_PTRACE");
}

void fab_shm_eperm_msg(char *buf, size_t len, int peer_pid, const char *scope, const char *note)
{
	snprintf(buf, len,
		 "shm: the kernel refused cross-process access to pid %d (EPERM); kernel.yama.ptrace_scope=%s; "
		 "peer's and our setting: %s; scope 2 needs CAP_SYS_PTRACE and 3 forbids it: set "
		 "sysctl kernel.yama.ptrace_scope=1 (or use provider: verbs)",
		 peer_pid, scope ? scope : "(no Yama)", note);
}

static int shm_dev_open(const struct sockaddr_in *addr, const struct fab_limits *lim, struct fab_dev **out)
{
	struct fab_limits def;
	struct fab_dev *dev;
	struct epoll_event ev = {.events = EPOLLIN};
	int rc;

	fab_limits_default(&def);
	if (!lim)
		lim = &def;
	if (!lim->max_send_sge || !lim->max_recv_sge || !lim->max_qp_wr || !lim->max_mr || lim->max_mr > 65535 ||
	    !lim->max_qp || lim->max_msg_sz < 256 || !lim->page_size)
		return -EINVAL;
	if (lim->copy_thread > 1) {
		ULNET_LOG(FABRIC, ERR, "shm: copy_thread %u: 0 (the posting thread copies) or 1 (a copy thread per "
			  "device; lnd tunable device.copy_thread)", lim->copy_thread);
		return -EINVAL;
	}
	if (!(dev = calloc(1, sizeof(*dev))))
		return -ENOMEM;
	dev->lim = *lim;
	dev->addr = *addr;
	dev->addr.sin_port = 0;
	dev->tbl_fd = dev->evfd = dev->timerfd = dev->idfd = -1;
	dev->armed = dev->owner_asleep = true;
	ulnet_list_init(&dev->ids);
	pthread_mutex_init(&dev->lock, NULL);
	shm_engine_init(dev);
	dev->epfd = epoll_create1(EPOLL_CLOEXEC);
	dev->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	dev->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (dev->epfd < 0 || dev->evfd < 0 || dev->timerfd < 0) {
		rc = -errno;
		goto fail;
	}
	ev.data.ptr = NULL; /* the eventfd */
	if (epoll_ctl(dev->epfd, EPOLL_CTL_ADD, dev->evfd, &ev) < 0) {
		rc = -errno;
		goto fail;
	}
	ev.data.ptr = dev; /* the timerfd */
	if (epoll_ctl(dev->epfd, EPOLL_CTL_ADD, dev->timerfd, &ev) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = shm_identity_open(dev)) || (rc = shm_mr_table_open(dev)))
		goto fail;
	shm_allow_peers(dev);
	*out = dev;
	return 0;
fail:
	if (dev->epfd >= 0)
		close(dev->epfd);
	if (dev->evfd >= 0)
		close(dev->evfd);
	if (dev->timerfd >= 0)
		close(dev->timerfd);
	if (dev->idfd >= 0)
		close(dev->idfd);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
	return rc;
}

static void shm_dev_close(struct fab_dev *dev)
{
	if (!dev)
		return;
	/* one at a time: destroying a listener also destroys its unannounced children */
	while (!ulnet_list_empty(&dev->ids))
		shm_destroy_id(ulnet_list_first(&dev->ids, struct fab_cm_id, link));
	shm_engine_stop(dev);
	shm_mr_table_close(dev);
	close(dev->epfd);
	close(dev->evfd);
	close(dev->timerfd);
	close(dev->idfd);
	free(dev->exported);
	free(dev->cq);
	free(dev->evq);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

static const struct fab_limits *shm_dev_limits(const struct fab_dev *dev) { return &dev->lim; }
static int shm_dev_fd(const struct fab_dev *dev) { return dev->epfd; }

/* Ring growth shared by the completion and event queues. */
static int ring_grow(void **buf, size_t *cap, size_t head, size_t len, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 64;
	char *nb = malloc(ncap * elem);

	if (!nb)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		memcpy(nb + i * elem, (char *)*buf + ((head + i) % *cap) * elem, elem);
	free(*buf);
	*buf = nb;
	*cap = ncap;
	return 0;
}

int shm_cq_push_locked(struct fab_dev *dev, struct fab_qp *qp, uint64_t wr_id, enum fab_wc_opcode op,
		       enum fab_wc_status st, uint32_t len, bool is_send, uint64_t sq_seq)
{
	struct fab_shm_faults *f = &dev->faults;
	struct shm_cqe *c;

	if (f->drop_completion_nth && --f->drop_completion_nth == 0)
		return 0;
	if (dev->cq_len == dev->cq_cap) {
		void *b = dev->cq;
		int rc = ring_grow(&b, &dev->cq_cap, dev->cq_head, dev->cq_len, sizeof(*dev->cq));

		if (rc) {
			ULNET_LOG(FABRIC, ERR, "shm: no memory for a completion (%zu queued); lost", dev->cq_len);
			return rc;
		}
		dev->cq = b;
		dev->cq_head = 0;
	}
	c = &dev->cq[(dev->cq_head + dev->cq_len++) % dev->cq_cap];
	*c = (struct shm_cqe){
		.wc = {.wr_id = wr_id, .status = st, .opcode = op, .byte_len = len, .qp = qp, .qp_context = qp->context},
		.sq_seq = sq_seq,
		.is_send = is_send,
		.ready_ns = f->delay_completion_ms ? shm_now_ns() + f->delay_completion_ms * 1000000ull : 0,
	};
	shm_dev_signal_locked(dev);
	return 0;
}

int shm_ev_push(struct fab_dev *dev, const struct fab_cm_event *ev)
{
	shm_lock(dev);
	if (dev->ev_len == dev->ev_cap) {
		void *b = dev->evq;
		int rc = ring_grow(&b, &dev->ev_cap, dev->ev_head, dev->ev_len, sizeof(*dev->evq));

		if (rc) {
			shm_unlock(dev);
			ULNET_LOG(FABRIC, ERR, "shm: no memory for a CM event (%s); lost", fab_cm_event_str(ev->type));
			return rc;
		}
		dev->evq = b;
		dev->ev_head = 0;
	}
	dev->evq[(dev->ev_head + dev->ev_len++) % dev->ev_cap] = *ev;
	shm_dev_signal_locked(dev);
	shm_unlock(dev);
	return 0;
}

/* Forget the completions of @qp and the events about @id: both are being destroyed. */
void shm_dev_purge(struct fab_dev *dev, const struct fab_cm_id *id, const struct fab_qp *qp)
{
	size_t j = 0;

	shm_lock(dev);
	for (size_t i = 0; i < dev->cq_len; i++) {
		struct shm_cqe c = dev->cq[(dev->cq_head + i) % dev->cq_cap];

		if (!qp || c.wc.qp != qp)
			dev->cq[(dev->cq_head + j++) % dev->cq_cap] = c;
	}
	dev->cq_len = j;
	j = 0;
	for (size_t i = 0; i < dev->ev_len; i++) {
		struct fab_cm_event e = dev->evq[(dev->ev_head + i) % dev->ev_cap];

		if (!id || (e.id != id && e.listen_id != id))
			dev->evq[(dev->ev_head + j++) % dev->ev_cap] = e;
	}
	dev->ev_len = j;
	shm_dev_signal_locked(dev);
	shm_unlock(dev);
}

static bool cq_ready(const struct fab_dev *dev, uint64_t now)
{
	return dev->cq_len && dev->cq[dev->cq_head].ready_ns <= now;
}

/* Something waits for the owner (a delayed completion only once it is due). */
static bool owner_work_locked(const struct fab_dev *dev)
{
	return dev->ev_len || dev->eng.attn ||
	       (dev->cq_len && (!dev->cq[dev->cq_head].ready_ns || cq_ready(dev, shm_now_ns())));
}

/* Keep the eventfd readable exactly while something waits for an owner that may sleep on it (a
 * busy-polling owner, disarmed, finds its work with poll, and a running one with its next arm: no
 * eventfd write and read per completion; a level left raised from before is lowered here, once). */
void shm_dev_signal_locked(struct fab_dev *dev)
{
	bool was = dev->ev_signaled;

	if (!was && !dev->eng.started && (!dev->armed || (dev->arms && !dev->owner_asleep)))
		return; /* a busy-polling or running owner, no level raised: nothing to raise or lower */

	fab_evfd_level(dev->evfd, &dev->ev_signaled, (dev->armed || dev->eng.started) && owner_work_locked(dev));
	if (dev->ev_signaled && !was)
		dev->stats.evfd_raises++;
}

void shm_owner_back(struct fab_dev *dev)
{
	shm_lock(dev);
	dev->owner_asleep = false;
	shm_unlock(dev);
}

void shm_dev_signal(struct fab_dev *dev)
{
	shm_lock(dev);
	shm_dev_signal_locked(dev);
	shm_unlock(dev);
}

int shm_ep_set(struct fab_cm_id *id, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = id};
	int op = !id->ep_events ? EPOLL_CTL_ADD : events ? EPOLL_CTL_MOD : EPOLL_CTL_DEL;

	if (id->fd < 0 || id->ep_events == events)
		return 0;
	if (epoll_ctl(id->dev->epfd, op, id->fd, &ev) < 0)
		return -errno;
	id->ep_events = events;
	return 0;
}

static void arm_timer(struct fab_dev *dev, uint64_t when)
{
	struct itimerspec its = {0};

	if (when == dev->timer_armed_ns)
		return;
	if (when != UINT64_MAX) {
		its.it_value.tv_sec = (time_t)(when / 1000000000ull);
		its.it_value.tv_nsec = (long)(when % 1000000000ull);
	}
	timerfd_settime(dev->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
	dev->timer_armed_ns = when;
}

/* Look at every ring: after a doorbell nobody could tell apart, or periodically, so one lost
 * wake-up (a peer that never rings, a bug) costs at most SHM_RECHECK_NS. */
#define SHM_RECHECK_NS 1000000000ull
static void rings_look(struct fab_dev *dev)
{
	struct ulnet_list *pos, *tmp;

	ulnet_list_for_each_safe(pos, tmp, &dev->ids) {
		struct fab_cm_id *id = ulnet_container_of(pos, struct fab_cm_id, link);

		if (id->qp)
			shm_qp_ring_poll(id->qp);
	}
}

/* The connection's doorbell rang: what the peer put into the ring, or room it made. */
static void doorbell(struct fab_cm_id *id)
{
	char junk[16];

	while (recv(id->db_fd, junk, sizeof(junk), MSG_DONTWAIT) >= 0)
		;
	if (id->qp)
		shm_qp_ring_poll(id->qp);
}

static int shm_progress(struct fab_dev *dev)
{
	struct epoll_event evs[64];
	uint64_t now, next = UINT64_MAX, junk;
	int n;

	shm_owner_back(dev);
	do {
		n = epoll_wait(dev->epfd, evs, 64, 0);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == dev) {
				if (read(dev->timerfd, &junk, sizeof(junk)) == sizeof(junk))
					dev->timer_armed_ns = 0;
			} else if (p == &dev->idfd) {
				shm_identity_accept(dev);
			} else if ((uintptr_t)p & 1) {
				doorbell((struct fab_cm_id *)((uintptr_t)p & ~(uintptr_t)1));
			} else if (p) {
				shm_id_io(p, evs[i].events);
			}
		}
	} while (n == 64);
	shm_engine_attend(dev);
	now = shm_now_ns();
	if (now >= dev->recheck_ns) {
		rings_look(dev);
		dev->recheck_ns = now + SHM_RECHECK_NS;
	}
	if (dev->n_qp && dev->recheck_ns < next)
		next = dev->recheck_ns;
	if (dev->id_paused_ns && now >= dev->id_paused_ns) { /* the identity listener's EMFILE pause */
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &dev->idfd};

		dev->id_paused_ns = 0;
		epoll_ctl(dev->epfd, EPOLL_CTL_ADD, dev->idfd, &ev);
	} else if (dev->id_paused_ns && dev->id_paused_ns < next) {
		next = dev->id_paused_ns;
	}
	shm_id_timeouts(dev, now, &next);
	shm_lock(dev);
	if (dev->cq_len && dev->cq[dev->cq_head].ready_ns > now && dev->cq[dev->cq_head].ready_ns < next)
		next = dev->cq[dev->cq_head].ready_ns;
	shm_dev_signal_locked(dev);
	shm_unlock(dev);
	arm_timer(dev, next);
	return 0;
}

static int shm_poll_cq(struct fab_dev *dev, struct fab_wc *wc, int n)
{
	uint64_t now = 0;
	int got = 0;

	shm_lock(dev);
	dev->owner_asleep = false;
	while (got < n && dev->cq_len) {
		struct shm_cqe *c = &dev->cq[dev->cq_head];

		if (c->ready_ns && c->ready_ns > (now ? now : (now = shm_now_ns())))
			break;
		wc[got++] = c->wc;
		if (c->is_send)
			shm_qp_sq_release(c->wc.qp, c->sq_seq + 1);
		dev->cq_head = (dev->cq_head + 1) % dev->cq_cap;
		dev->cq_len--;
	}
	shm_dev_signal_locked(dev);
	shm_unlock(dev);
	return got;
}

static int shm_get_event(struct fab_dev *dev, struct fab_cm_event *ev)
{
	shm_lock(dev);
	if (!dev->ev_len) {
		shm_unlock(dev);
		return -EAGAIN;
	}
	*ev = dev->evq[dev->ev_head];
	dev->ev_head = (dev->ev_head + 1) % dev->ev_cap;
	dev->ev_len--;
	shm_dev_signal_locked(dev);
	shm_unlock(dev);
	return 0;
}

/* The owner busy polls: no eventfd level for completions, no doorbell from a ring's producer. */
static void dev_disarm(struct fab_dev *dev)
{
	struct ulnet_list *pos, *tmp;

	if (!dev->armed || dev->eng.started)
		return;
	dev->armed = false;
	ulnet_list_for_each_safe(pos, tmp, &dev->ids) {
		struct fab_cm_id *id = ulnet_container_of(pos, struct fab_cm_id, link);

		if (id->qp)
			shm_qp_ring_disarm(id->qp);
	}
}

/* Busy polling (fab poll): the owner is awake; what the rings hold goes into the posted receives. */
static bool shm_poll(struct fab_dev *dev)
{
	struct ulnet_list *pos, *tmp;
	bool work;

	dev_disarm(dev);
	ulnet_list_for_each_safe(pos, tmp, &dev->ids) { /* (a bad ring tears its id down, not others) */
		struct fab_cm_id *id = ulnet_container_of(pos, struct fab_cm_id, link);

		if (id->qp)
			shm_qp_ring_peek_rx(id->qp);
	}
	shm_lock(dev);
	work = owner_work_locked(dev);
	shm_unlock(dev);
	return work;
}

/* The owner is about to sleep on dev_fd: completions raise it, and we sleep on every ring a peer
 * may put into (its producer rings our doorbell). true: something waits already (not armed). */
static bool shm_arm(struct fab_dev *dev)
{
	struct ulnet_list *pos, *tmp;
	bool work;

	shm_lock(dev);
	work = owner_work_locked(dev);
	dev->owner_asleep = !work;
	dev->arms = true;
	shm_unlock(dev);
	/* (armed since: ring_rx says we sleep on each ring it drains; with the copy thread, always) */
	if (work || dev->armed || dev->eng.started)
		return work;
	dev->armed = true;
	ulnet_list_for_each_safe(pos, tmp, &dev->ids) {
		struct fab_cm_id *id = ulnet_container_of(pos, struct fab_cm_id, link);

		if (id->qp && !shm_qp_ring_arm(id->qp))
			work = true;
	}
	if (work)
		dev_disarm(dev); /* a record came: the owner polls on */
	return work;
}

struct fab_shm_faults *fab_shm_faults(struct fab_dev *dev) { return &dev->faults; }
const struct fab_shm_stats *fab_shm_stats(const struct fab_dev *dev) { return &dev->stats; }
void fab_shm_flush_qp(struct fab_qp *qp) { shm_qp_set_error(qp); }

void *fab_shm_qp_rings(struct fab_qp *qp, bool *sending)
{
	*sending = qp->id->ring_send;
	return qp->id->ring_map;
}

const struct fab_provider_ops fab_shm_ops = {
	.name = "shm",
	.dev_open = shm_dev_open,
	.dev_close = shm_dev_close,
	.dev_limits = shm_dev_limits,
	.dev_fd = shm_dev_fd,
	.progress = shm_progress,
	.poll_cq = shm_poll_cq,
	.get_event = shm_get_event,
	.reg_mr = shm_reg_mr,
	.dereg_mr = shm_dereg_mr,
	.create_id = shm_create_id,
	.destroy_id = shm_destroy_id,
	.set_context = shm_set_context,
	.bind_src = shm_bind_src,
	.listen = shm_listen,
	.create_qp = shm_create_qp,
	.qp_query = shm_qp_query,
	.connect = shm_connect,
	.accept = shm_accept,
	.reject = shm_reject,
	.disconnect = shm_disconnect,
	.post_recv = shm_post_recv,
	.post_send = shm_post_send,
	.poll = shm_poll,
	.arm = shm_arm,
	.mem_alloc = shm_mem_alloc,
	.mem_free = shm_mem_free,
};
