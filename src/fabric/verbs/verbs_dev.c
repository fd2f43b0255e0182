/* SPDX-License-Identifier: MIT */
/* verbs device: found by binding a CM id to the NI's address (rdma_cm picks the device that serves
 * it), limits from ibv_query_device clamped by the NI's tunables, the fd the owner waits on, and the
 * provider's ops table. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "log.h"
#include "verbs.h"

enum { EP_CM, EP_COMP, EP_EV, EP_TIMER };

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

static int ep_add(struct fab_dev *dev, int fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};

	return epoll_ctl(dev->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* The device's capabilities, as fab_limits (page size: the kernel's, which registration uses). */
static int query_caps(struct fab_dev *dev, struct fab_limits *cap)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	long page = sysconf(_SC_PAGESIZE);
	int rc;

	if ((rc = ibv_query_device(dev->ctx, &da)))
		return -rc;
	if ((rc = ibv_query_port(dev->ctx, dev->probe->port_num ? dev->probe->port_num : 1, &pa)))
		return -rc;
	*cap = (struct fab_limits){
		.max_send_sge = (uint32_t)da.max_sge,
		.max_recv_sge = (uint32_t)da.max_sge,
		.max_qp_wr = (uint32_t)da.max_qp_wr,
		.max_qp = (uint32_t)da.max_qp,
		.max_mr = (uint32_t)da.max_mr,
		.max_mr_size = da.max_mr_size,
		.max_msg_sz = pa.max_msg_sz,
		.page_size = page > 0 ? (uint32_t)page : 4096,
		.allow_uid = FAB_ALLOW_NONE,
		.allow_gid = FAB_ALLOW_NONE,
	};
	return 0;
}

static void log_no_device(const struct sockaddr_in *addr, int err)
{
	struct fab_rdma_scan scan;
	char a[INET_ADDRSTRLEN], devs[512];

	fab_rdma_scan(&scan);
	fab_rdma_describe(&scan, devs, sizeof(devs));
	inet_ntop(AF_INET, &addr->sin_addr, a, sizeof(a));
	ULNET_LOG(FABRIC, ERR, "verbs: no RDMA device serves %s (%s); RDMA devices: %s (add one, e.g. rdma link "
		  "add rxe0 type rxe netdev IF, or set lnd tunable provider: shm)", a, strerror(err), devs);
}

static void vrb_dev_close(struct fab_dev *dev);

static int vrb_dev_open(const struct sockaddr_in *addr, const struct fab_limits *lim, struct fab_dev **out)
{
	struct sockaddr_in a = *addr;
	struct fab_limits def, cap;
	struct fab_dev *dev;
	char why[256];
	int rc;

	fab_limits_default(&def);
	if (!lim)
		lim = &def;
	if (lim->copy_thread) {
		ULNET_LOG(FABRIC, ERR, "verbs: copy_thread is the shm provider's (an RDMA device's HCA moves the "
			  "data itself): leave lnd tunable device.copy_thread at 0");
		return -EINVAL;
	}
	if (lim->allow_uid != FAB_ALLOW_NONE || lim->allow_gid != FAB_ALLOW_NONE) {
		ULNET_LOG(FABRIC, ERR, "verbs: allow_uid/allow_gid are the shm provider's (the fabric, not a "
			  "local uid, decides who reaches an RDMA device): leave lnd tunables device.allow_uid and "
			  "device.allow_gid unset");
		return -EINVAL;
	}
	if (!(dev = calloc(1, sizeof(*dev))))
		return -ENOMEM;
	dev->addr = *addr;
	dev->addr.sin_port = 0;
	dev->epfd = dev->evfd = dev->timerfd = -1;
	ulnet_list_init(&dev->ids);
	ulnet_list_init(&dev->ready);
	a.sin_port = 0;
	errno = 0;
	if (!(dev->cm_ch = rdma_create_event_channel()) ||
	    rdma_create_id(dev->cm_ch, &dev->probe, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(dev->probe, (struct sockaddr *)&a) || !dev->probe->verbs) {
		rc = errno ? -errno : -ENODEV;
		log_no_device(addr, -rc);
		goto fail;
	}
	dev->ctx = dev->probe->verbs;
	if ((rc = query_caps(dev, &cap))) {
		ULNET_LOG(FABRIC, ERR, "verbs %s: cannot query the device: %s", ibv_get_device_name(dev->ctx->device),
			  strerror(-rc));
		goto fail;
	}
	if ((rc = vrb_limits_clamp(&cap, lim, &dev->lim, why, sizeof(why)))) {
		ULNET_LOG(FABRIC, ERR, "%s (device %s)", why, ibv_get_device_name(dev->ctx->device));
		goto fail;
	}
	errno = 0;
	if (!(dev->pd = ibv_alloc_pd(dev->ctx)) || !(dev->comp_ch = ibv_create_comp_channel(dev->ctx))) {
		rc = errno ? -errno : -ENOMEM;
		goto fail;
	}
	dev->epfd = epoll_create1(EPOLL_CLOEXEC);
	dev->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	dev->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (dev->epfd < 0 || dev->evfd < 0 || dev->timerfd < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = nonblock(dev->cm_ch->fd)) || (rc = nonblock(dev->comp_ch->fd)) ||
	    (rc = ep_add(dev, dev->cm_ch->fd, EP_CM)) || (rc = ep_add(dev, dev->comp_ch->fd, EP_COMP)) ||
	    (rc = ep_add(dev, dev->evfd, EP_EV)) || (rc = ep_add(dev, dev->timerfd, EP_TIMER)))
		goto fail;
	ULNET_LOG(FABRIC, INFO, "verbs: %s port %u serves the address; max_send_sge %u max_qp_wr %u max_mr_size %llu "
		  "page_size %u", ibv_get_device_name(dev->ctx->device), dev->probe->port_num, dev->lim.max_send_sge,
		  dev->lim.max_qp_wr, (unsigned long long)dev->lim.max_mr_size, dev->lim.page_size);
	*out = dev;
	return 0;
fail:
	vrb_dev_close(dev);
	return rc;
}

static void vrb_dev_close(struct fab_dev *dev)
{
	if (!dev)
		return;
	while (!ulnet_list_empty(&dev->ids))
		vrb_destroy_id(ulnet_list_first(&dev->ids, struct fab_cm_id, link));
	vrb_mr_close_all(dev);
	if (dev->pd)
		ibv_dealloc_pd(dev->pd);
	if (dev->comp_ch)
		ibv_destroy_comp_channel(dev->comp_ch);
	if (dev->probe)
		rdma_destroy_id(dev->probe);
	if (dev->cm_ch)
		rdma_destroy_event_channel(dev->cm_ch);
	if (dev->epfd >= 0)
		close(dev->epfd);
	if (dev->evfd >= 0)
		close(dev->evfd);
	if (dev->timerfd >= 0)
		close(dev->timerfd);
	free(dev);
}

static const struct fab_limits *vrb_dev_limits(const struct fab_dev *dev) { return &dev->lim; }
static int vrb_dev_fd(const struct fab_dev *dev) { return dev->epfd; }

void vrb_deadlines(struct fab_dev *dev)
{
	struct itimerspec its = {0};
	uint64_t now = ulnet__now_ns(), next = UINT64_MAX, junk;

	if (read(dev->timerfd, &junk, sizeof(junk)) < 0 && errno != EAGAIN)
		ULNET_LOG(FABRIC, WARN, "verbs: timerfd: %s", strerror(errno));
	for (struct ulnet_list *p = dev->ids.next; p != &dev->ids; p = p->next) {
		struct fab_cm_id *id = ulnet_container_of(p, struct fab_cm_id, link);

		if (!id->connecting || id->expired)
			continue;
		if (id->deadline_ns <= now) {
			id->expired = true;
			dev->n_expired++;
		} else if (id->deadline_ns < next) {
			next = id->deadline_ns;
		}
	}
	if (next != UINT64_MAX) {
		its.it_value.tv_sec = (time_t)(next / 1000000000ull);
		its.it_value.tv_nsec = (long)(next % 1000000000ull);
	}
	timerfd_settime(dev->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
	vrb_dev_signal(dev);
}

/* Keep the eventfd readable exactly while a CQ may hold completions nobody polled yet, or a
 * TIMED_OUT is due. */
void vrb_dev_signal(struct fab_dev *dev)
{
	fab_evfd_level(dev->evfd, &dev->ev_signaled, !ulnet_list_empty(&dev->ready) || dev->n_expired);
}

/* CM events are read by get_event straight from their channel; completions need the CQ events. */
static int vrb_progress(struct fab_dev *dev)
{
	int rc = vrb_comp_events(dev);

	vrb_deadlines(dev);
	return rc;
}

const struct fab_provider_ops fab_verbs_ops = {
	.name = "verbs",
	.dev_open = vrb_dev_open,
	.dev_close = vrb_dev_close,
	.dev_limits = vrb_dev_limits,
	.dev_fd = vrb_dev_fd,
	.progress = vrb_progress,
	.poll_cq = vrb_poll_cq,
	.get_event = vrb_get_event,
	.reg_mr = vrb_reg_mr,
	.dereg_mr = vrb_dereg_mr,
	.create_id = vrb_create_id,
	.destroy_id = vrb_destroy_id,
	.set_context = vrb_set_context,
	.bind_src = vrb_id_bind,
	.listen = vrb_listen,
	.create_qp = vrb_create_qp,
	.qp_query = vrb_qp_query,
	.connect = vrb_connect,
	.accept = vrb_accept,
	.reject = vrb_reject,
	.disconnect = vrb_disconnect,
	.post_recv = vrb_post_recv,
	.post_send = vrb_post_send,
};
