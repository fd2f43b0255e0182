/* SPDX-License-Identifier: MIT */
/* shm connection manager: rdma_cm's handshake over unix-domain SEQPACKET sockets named
 * "ulnet-shm/<IPv4>:<port>" in the abstract namespace (one namespace per network namespace, like
 * IP addresses). Active: CONNREQ (+ our registration table memfd) -> CONNACK (+ theirs) or REJECT;
 * then RTU. The CONNREQ also carries the connector's doorbell eventfd and the SEND rings' memfd
 * (shm_ring.h), the CONNACK the acceptor's doorbell and whether it reads the rings; both carry the
 * sender's life page (shm_life.h) when it has one. Once
 * established the rings (or the socket) carry the QP's SENDs; a shutdown or EOF is a disconnect. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <unistd.h>
#include "log.h"
#include "shm.h"
#include "wire.h"

#define SHM_CM_MAGIC 0x314d5355u /* "USM1" */
#define SHM_CM_SIZE 80
#define SHM_REQ_WAIT_NS 10000000000ull /* an accepted socket must send its CONNREQ within 10 s */
#define SHM_RTU_WAIT_NS 10000000000ull
/* CONNREQ: table, doorbell, [life], [rings]; CONNACK: table, doorbell, [life] */
#define SHM_CM_FDS 4
#define SHM_CM_RING_OK 0x01    /* CONNACK flags: the acceptor mapped the rings and reads them */
#define SHM_CM_LIFE 0x02       /* CONNREQ/CONNACK flags: the sender's life page follows the doorbell */

enum shm_cm_type { SHM_CM_CONNREQ = 1, SHM_CM_CONNACK, SHM_CM_REJECT, SHM_CM_RTU };

struct shm_cm_msg {
	uint8_t type;
	int32_t status;     /* REJECT: -errno from the provider, 0 from the consumer */
	uint32_t tbl_n;     /* CONNREQ/CONNACK: entries of the attached table */
	uint8_t flags;      /* CONNACK: SHM_CM_RING_OK */
	struct sockaddr_in src;
	uint8_t pdata_len;
	uint8_t pdata[FAB_PRIVATE_DATA_MAX];
};

static void cm_pack(const struct shm_cm_msg *m, uint8_t b[SHM_CM_SIZE])
{
	memset(b, 0, SHM_CM_SIZE);
	ulnet_put_le32(b, SHM_CM_MAGIC);
	b[4] = m->type;
	b[5] = m->pdata_len;
	b[6] = m->flags;
	ulnet_put_le32(b + 8, (uint32_t)m->status);
	ulnet_put_le32(b + 12, m->tbl_n);
	memcpy(b + 16, &m->src.sin_addr.s_addr, 4); /* network order as is */
	memcpy(b + 20, &m->src.sin_port, 2);
	memcpy(b + 24, m->pdata, m->pdata_len);
}

static int cm_unpack(const uint8_t *b, size_t len, struct shm_cm_msg *m)
{
	if (len != SHM_CM_SIZE || ulnet_get_le32(b) != SHM_CM_MAGIC || b[4] < SHM_CM_CONNREQ ||
	    b[4] > SHM_CM_RTU || b[5] > FAB_PRIVATE_DATA_MAX)
		return -EPROTO;
	*m = (struct shm_cm_msg){.type = b[4], .pdata_len = b[5], .flags = b[6]};
	m->status = (int32_t)ulnet_get_le32(b + 8);
	m->tbl_n = ulnet_get_le32(b + 12);
	m->src.sin_family = AF_INET;
	memcpy(&m->src.sin_addr.s_addr, b + 16, 4);
	memcpy(&m->src.sin_port, b + 20, 2);
	memcpy(m->pdata, b + 24, m->pdata_len);
	return 0;
}

static socklen_t cm_name(const struct sockaddr_in *a, struct sockaddr_un *un)
{
	char ip[INET_ADDRSTRLEN];
	int n;

	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "ulnet-shm/%s:%u", ip, ntohs(a->sin_port));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* @fds[0..nfd) go along (SCM_RIGHTS). */
static int cm_send(struct fab_cm_id *id, const struct shm_cm_msg *m, const int *fds, int nfd)
{
	uint8_t b[SHM_CM_SIZE];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(SHM_CM_FDS * sizeof(int))];
	} ctl;
	struct iovec iov = {b, sizeof(b)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	cm_pack(m, b);
	if (nfd > 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfd * sizeof(int));
		CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN((size_t)nfd * sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), fds, (size_t)nfd * sizeof(int));
	}
	return sendmsg(id->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(b) ? 0 : -errno;
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* 0 and @m (and @fds[0..SHM_CM_FDS), -1 where none came); -EAGAIN; -ECONNRESET on EOF; -EPROTO. */
static int cm_recv(struct fab_cm_id *id, struct shm_cm_msg *m, int fds[SHM_CM_FDS])
{
	uint8_t b[SHM_CM_SIZE + 1];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(SHM_CM_FDS * sizeof(int))];
	} ctl;
	struct iovec iov = {b, sizeof(b)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
	struct cmsghdr *c;
	ssize_t n = recvmsg(id->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	int k = 0;

	for (int i = 0; i < SHM_CM_FDS; i++)
		fds[i] = -1;
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -ECONNRESET;
	if (n == 0)
		return -ECONNRESET;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (k < SHM_CM_FDS)
				fds[k++] = fd;
			else
				close(fd);
		}
	}
	if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || cm_unpack(b, (size_t)n, m)) {
		close_fds(fds, SHM_CM_FDS);
		return -EPROTO;
	}
	return 0;
}

/* The connector's rings: a sealed memfd (a peer cannot shrink it under our mapping), both
 * directions' consumers asleep until they first look. -errno (the connection goes on over the
 * socket alone). */
static int ring_create(struct fab_cm_id *id)
{
	int fd = memfd_create("ulnet-shm-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING), rc;
	void *p;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, SHM_RING_MAP_LEN) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 || !(p = shm_ring_map(fd))) {
		rc = errno ? -errno : -ENOMEM;
		close(fd);
		return rc;
	}
	id->ring_map = p;
	id->ring_fd = fd;
	shm_ring_attach(&id->ring_tx, p, 0);
	shm_ring_attach(&id->ring_rx, p, 1);
	atomic_store(&id->ring_tx.ctl->sleeping, 1);
	atomic_store(&id->ring_rx.ctl->sleeping, 1);
	return 0;
}

/* The acceptor maps the connector's rings (takes @fd): false, logged, if they cannot be trusted
 * not to move under us (the connection then goes on over the socket alone). */
static bool ring_map_peer(struct fab_cm_id *id, int fd)
{
	void *p;
	int seals;

	if (fd < 0)
		return false;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || !(p = shm_ring_map(fd))) {
		ULNET_LOG(FABRIC, WARN, "shm: the SEND rings from pid %d are not a sealed memfd of %u bytes; SENDs "
			  "go over the socket", (int)id->peer_pid, SHM_RING_MAP_LEN);
		close(fd);
		return false;
	}
	close(fd);
	id->ring_map = p;
	shm_ring_attach(&id->ring_tx, p, 1);
	shm_ring_attach(&id->ring_rx, p, 0);
	return true;
}

/* Our SENDs may go through a ring: every SEND fits it, and only the owner's thread sends (no copy
 * thread: a ring has one producer). */
static bool ring_sends(const struct fab_dev *dev)
{
	return !dev->eng.on && shm_ring_need(dev->lim.max_msg_sz) <= SHM_RING_BYTES;
}

static void sock_tune(struct fab_dev *dev, int fd)
{
	/* one SEND of max_msg_sz must fit the socket buffer; root may go past wmem_max */
	int sz = (int)(dev->lim.max_msg_sz * 4 > 262144 ? dev->lim.max_msg_sz * 4 : 262144);

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
}

static void raise_ev(struct fab_cm_id *id, enum fab_cm_event_type t, int status, const struct shm_cm_msg *m)
{
	struct fab_cm_event ev = {.type = t, .id = id, .context = id->context, .status = status, .peer = id->peer};

	if (m) {
		ev.private_data_len = m->pdata_len;
		memcpy(ev.private_data, m->pdata, m->pdata_len);
	}
	shm_ev_push(id->dev, &ev);
}

/* Our side closes: a peer checking that we are alive after an RDMA (shm_peer_alive) sees it. */
static void ring_mark_closed(struct fab_cm_id *id)
{
	if (id->ring_map)
		atomic_store_explicit(&id->ring_tx.ctl->closed, 1, memory_order_release);
}

static void id_close_fd(struct fab_cm_id *id)
{
	ring_mark_closed(id);
	shm_ep_set(id, 0);
	if (id->fd >= 0)
		close(id->fd);
	id->fd = -1;
}

/* Map the peer's registration table (takes ownership of @fd). */
static int map_peer_table(struct fab_cm_id *id, int fd, uint32_t n)
{
	struct stat st;
	void *p;

	if (fd < 0 || n == 0 || n > 65535) {
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	/* a table shorter than announced would SIGBUS us on the first look-up past its end */
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < (uint64_t)n * sizeof(struct shm_mr_entry)) {
		close(fd);
		return -EPROTO;
	}
	p = mmap(NULL, (size_t)n * sizeof(struct shm_mr_entry), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	id->peer_tbl = p;
	id->peer_tbl_n = n;
	return 0;
}

static void peer_pid(struct fab_cm_id *id)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	id->peer_pid = getsockopt(id->fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) == 0 ? cr.pid : 0;
}

int shm_create_id(struct fab_dev *dev, void *context, struct fab_cm_id **out)
{
	struct fab_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return -ENOMEM;
	id->dev = dev;
	id->context = context;
	id->fd = id->peer_tbl_fd = id->ring_fd = id->peer_db = id->peer_life_fd = -1;
	id->local = dev->addr;
	ulnet_list_add_tail(&id->link, &dev->ids);
	*out = id;
	return 0;
}

void shm_set_context(struct fab_cm_id *id, void *context)
{
	id->context = context;
}

void shm_destroy_id(struct fab_cm_id *id)
{
	struct ulnet_list *pos, *tmp;
	struct fab_dev *dev;

	if (!id)
		return;
	dev = id->dev;
	if (id->state == SHM_ID_LISTEN) {
		ulnet_list_for_each_safe(pos, tmp, &dev->ids) {
			struct fab_cm_id *c = ulnet_container_of(pos, struct fab_cm_id, link);

			if (c->listener != id)
				continue;
			c->listener = NULL;
			if (c->state == SHM_ID_REQ_WAIT) /* not yet shown to the owner */
				shm_destroy_id(c);
		}
	}
	if (id->qp) {
		shm_qp_stop(id->qp); /* the engine done with it: no completion comes after the purge */
		shm_dev_purge(dev, NULL, id->qp);
		shm_qp_free(id->qp);
		id->qp = NULL;
	}
	shm_dev_purge(dev, id, NULL);
	id_close_fd(id);
	shm_peer_maps_drop(id);
	if (id->peer_tbl)
		munmap(id->peer_tbl, (size_t)id->peer_tbl_n * sizeof(struct shm_mr_entry));
	if (id->peer_tbl_fd >= 0)
		close(id->peer_tbl_fd);
	if (id->ring_map)
		shm_ring_unmap(id->ring_map);
	if (id->ring_fd >= 0)
		close(id->ring_fd);
	if (id->peer_db >= 0)
		close(id->peer_db);
	if (id->peer_life_fd >= 0)
		close(id->peer_life_fd);
	shm_life_unmap(id->peer_life);
	ulnet_list_del(&id->link);
	free(id);
}

/* Unix-domain names have no source ports: nothing to bind. */
int shm_bind_src(struct fab_cm_id *id, bool privileged)
{
	(void)id;
	(void)privileged;
	return 0;
}

int shm_listen(struct fab_cm_id *id, const struct sockaddr_in *addr, int backlog)
{
	struct sockaddr_un un;
	socklen_t l;
	int rc;

	if (id->state != SHM_ID_IDLE || id->fd >= 0 || addr->sin_family != AF_INET)
		return -EINVAL;
	id->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (id->fd < 0)
		return -errno;
	id->local = *addr;
	l = cm_name(addr, &un);
	/* the backlog bounds connects not yet picked up by progress: keep it deep */
	if (bind(id->fd, (struct sockaddr *)&un, l) < 0 || listen(id->fd, backlog > 1024 ? backlog : 1024) < 0 ||
	    (rc = shm_ep_set(id, EPOLLIN))) {
		rc = -errno;
		id_close_fd(id);
		return rc;
	}
	id->state = SHM_ID_LISTEN;
	return 0;
}

int shm_connect(struct fab_cm_id *id, const struct sockaddr_in *dst, const void *pdata, size_t len, int timeout_ms)
{
	struct shm_cm_msg m = {.type = SHM_CM_CONNREQ, .pdata_len = (uint8_t)len};
	struct sockaddr_un un;
	socklen_t l;
	int rc;

	if (id->state != SHM_ID_IDLE || !id->qp || len > FAB_PRIVATE_DATA_MAX || (len && !pdata) || timeout_ms <= 0)
		return -EINVAL;
	id->peer = *dst;
	id->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (id->fd < 0)
		return -errno;
	sock_tune(id->dev, id->fd);
	l = cm_name(dst, &un);
	if (connect(id->fd, (struct sockaddr *)&un, l) < 0) {
		/* nobody listens (or the listener's backlog is full): an event, as over a fabric */
		rc = -errno;
		id_close_fd(id);
		id->state = SHM_ID_CLOSED;
		raise_ev(id, FAB_CM_UNREACHABLE, rc == -ENOENT ? -ECONNREFUSED : rc, NULL);
		return 0;
	}
	peer_pid(id);
	m.src = id->dev->addr;
	m.tbl_n = id->dev->lim.max_mr;
	if (len) /* pdata may be NULL when empty */
		memcpy(m.pdata, pdata, len);
	{
		int fds[SHM_CM_FDS] = {id->dev->tbl_fd, id->dev->dbfd}, nfd = 2, life = shm_life_fd();

		if (life >= 0) {
			fds[nfd++] = life;
			m.flags |= SHM_CM_LIFE;
		}
		if (!id->ring_map && ring_create(id) == 0)
			fds[nfd++] = id->ring_fd;
		rc = cm_send(id, &m, fds, nfd);
		if (id->ring_fd >= 0) /* the mapping stays */
			close(id->ring_fd);
		id->ring_fd = -1;
	}
	if (rc || (rc = shm_ep_set(id, EPOLLIN | EPOLLRDHUP))) {
		id_close_fd(id);
		return rc;
	}
	id->state = SHM_ID_REQ_SENT;
	id->deadline_ns = shm_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	return 0;
}

static void establish(struct fab_cm_id *id)
{
	id->state = SHM_ID_ESTABLISHED;
	id->deadline_ns = 0;
	id->qp->connected = true;
	shm_ep_set(id, shm_qp_ep_events(id->qp));
	shm_qp_run(id->qp);
	shm_qp_rx(id->qp);
}

int shm_accept(struct fab_cm_id *id, const void *pdata, size_t len)
{
	struct shm_cm_msg m = {.type = SHM_CM_CONNACK, .pdata_len = (uint8_t)len};
	int rc, tfd = id->peer_tbl_fd;

	if (id->state != SHM_ID_REQ_RCVD || !id->qp || len > FAB_PRIVATE_DATA_MAX || (len && !pdata))
		return -EINVAL;
	id->peer_tbl_fd = -1;
	if ((rc = map_peer_table(id, tfd, id->peer_tbl_n))) {
		shm_id_teardown(id, rc);
		return 0;
	}
	m.src = id->dev->addr;
	m.tbl_n = id->dev->lim.max_mr;
	if (len)
		memcpy(m.pdata, pdata, len);
	if (id->peer_db >= 0 && ring_map_peer(id, id->ring_fd)) {
		m.flags |= SHM_CM_RING_OK;
		id->ring_send = ring_sends(id->dev);
	} else if (id->ring_fd >= 0) {
		close(id->ring_fd);
	}
	id->ring_fd = -1;
	id->peer_life = shm_life_map(id->peer_life_fd);
	if (id->peer_life_fd >= 0)
		close(id->peer_life_fd);
	id->peer_life_fd = -1;
	{
		int life = shm_life_fd();

		if (life >= 0)
			m.flags |= SHM_CM_LIFE;
		rc = cm_send(id, &m, (int[]){id->dev->tbl_fd, id->dev->dbfd, life}, life >= 0 ? 3 : 2);
	}
	if (rc) {
		shm_id_teardown(id, rc);
		return 0;
	}
	/* the QP may send at once (RTS); ESTABLISHED is raised when the RTU arrives */
	id->state = SHM_ID_ACCEPTED;
	id->qp->connected = true;
	id->deadline_ns = shm_now_ns() + SHM_RTU_WAIT_NS;
	shm_ep_set(id, EPOLLIN | EPOLLRDHUP);
	shm_qp_run(id->qp);
	return 0;
}

int shm_reject(struct fab_cm_id *id, const void *pdata, size_t len)
{
	struct shm_cm_msg m = {.type = SHM_CM_REJECT, .pdata_len = (uint8_t)len};

	if (id->state != SHM_ID_REQ_RCVD || len > FAB_PRIVATE_DATA_MAX || (len && !pdata))
		return -EINVAL;
	if (len)
		memcpy(m.pdata, pdata, len);
	cm_send(id, &m, NULL, 0); /* a peer that is gone already needs no answer */
	id_close_fd(id);
	id->state = SHM_ID_CLOSED;
	return 0;
}

void shm_id_teardown(struct fab_cm_id *id, int status)
{
	if (id->qp)
		shm_qp_set_error(id->qp);
	ring_mark_closed(id);
	if (id->fd >= 0)
		shutdown(id->fd, SHUT_RDWR);
	shm_ep_set(id, 0);
	id->state = SHM_ID_CLOSED;
	id->deadline_ns = 0;
	if (!id->disconnect_reported) {
		id->disconnect_reported = true;
		raise_ev(id, FAB_CM_DISCONNECTED, status, NULL);
	}
}

int shm_disconnect(struct fab_cm_id *id)
{
	switch (id->state) {
	case SHM_ID_REQ_RCVD:
	case SHM_ID_ACCEPTED:
	case SHM_ID_ESTABLISHED:
		shm_id_teardown(id, 0);
		return 0;
	case SHM_ID_REQ_SENT:
		id_close_fd(id);
		id->state = SHM_ID_CLOSED;
		if (id->qp)
			shm_qp_set_error(id->qp);
		return 0;
	default:
		return 0;
	}
}

static void listener_io(struct fab_cm_id *l)
{
	int fd;

	while ((fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct fab_cm_id *id;

		if (shm_create_id(l->dev, NULL, &id)) {
			close(fd);
			continue;
		}
		id->fd = fd;
		id->local = l->local;
		id->listener = l;
		id->state = SHM_ID_REQ_WAIT;
		id->deadline_ns = shm_now_ns() + SHM_REQ_WAIT_NS;
		sock_tune(l->dev, fd);
		peer_pid(id);
		if (shm_ep_set(id, EPOLLIN | EPOLLRDHUP))
			shm_destroy_id(id);
	}
}

static void req_wait_io(struct fab_cm_id *id)
{
	struct fab_shm_faults *f = &id->dev->faults;
	struct fab_cm_event ev = {.type = FAB_CM_CONNECT_REQUEST, .id = id};
	struct shm_cm_msg m;
	int fds[SHM_CM_FDS], rc = cm_recv(id, &m, fds), tfd = fds[0];

	if (rc == -EAGAIN)
		return;
	if (rc || m.type != SHM_CM_CONNREQ || tfd < 0 || !id->listener) {
		if (rc == -EPROTO || (!rc && m.type != SHM_CM_CONNREQ))
			ULNET_LOG(FABRIC, WARN, "shm: bad CONNREQ from pid %d; dropping the connection", (int)id->peer_pid);
		close_fds(fds, SHM_CM_FDS);
		shm_destroy_id(id);
		return;
	}
	close_fds(fds + 1, f->timeout_connect || f->refuse_connect ? SHM_CM_FDS - 1 : 0);
	if (f->timeout_connect) { /* swallow it: the active side times out */
		close(tfd);
		shm_ep_set(id, EPOLLRDHUP);
		id->deadline_ns = shm_now_ns() + SHM_REQ_WAIT_NS;
		return;
	}
	if (f->refuse_connect) {
		struct shm_cm_msg r = {.type = SHM_CM_REJECT, .status = -ECONNREFUSED};

		close(tfd);
		cm_send(id, &r, NULL, 0);
		shm_destroy_id(id);
		return;
	}
	id->peer = m.src;
	id->peer_db = fds[1];
	if (m.flags & SHM_CM_LIFE) {
		id->peer_life_fd = fds[2];
		id->ring_fd = fds[3];
	} else {
		id->ring_fd = fds[2];
		close_fds(fds + 3, 1);
	}
	id->peer_tbl_fd = tfd;
	id->peer_tbl_n = m.tbl_n;
	id->state = SHM_ID_REQ_RCVD;
	id->deadline_ns = 0;
	shm_ep_set(id, EPOLLRDHUP);
	ev.listen_id = id->listener;
	ev.context = id->listener->context;
	ev.peer = m.src;
	ev.private_data_len = m.pdata_len;
	memcpy(ev.private_data, m.pdata, m.pdata_len);
	shm_ev_push(id->dev, &ev);
}

static void req_sent_io(struct fab_cm_id *id)
{
	struct shm_cm_msg m;
	struct shm_cm_msg rtu = {.type = SHM_CM_RTU};
	int fds[SHM_CM_FDS], rc = cm_recv(id, &m, fds), tfd = fds[0];

	if (rc == -EAGAIN)
		return;
	if (!rc && m.type == SHM_CM_CONNACK && (m.flags & SHM_CM_LIFE) && !id->peer_life)
		id->peer_life = shm_life_map(fds[2]);
	close_fds(fds + 2, SHM_CM_FDS - 2);
	if (!rc && m.type == SHM_CM_REJECT) {
		close_fds(fds, 2);
		id_close_fd(id);
		id->state = SHM_ID_CLOSED;
		raise_ev(id, FAB_CM_REJECTED, m.status ? m.status : -ECONNREFUSED, &m);
		return;
	}
	if (!rc && m.type == SHM_CM_CONNACK) { /* the doorbell is ours to close from now on */
		id->peer_db = fds[1];
		fds[1] = -1;
		id->ring_send = (m.flags & SHM_CM_RING_OK) && id->ring_map && id->peer_db >= 0 && ring_sends(id->dev);
	}
	close_fds(fds + 1, 1);
	if (rc || m.type != SHM_CM_CONNACK || (rc = map_peer_table(id, tfd, m.tbl_n)) || (rc = cm_send(id, &rtu, NULL, 0))) {
		if (!rc && tfd >= 0)
			close(tfd);
		id_close_fd(id);
		id->state = SHM_ID_CLOSED;
		if (id->qp)
			shm_qp_set_error(id->qp);
		/* the listener went away without answering */
		raise_ev(id, FAB_CM_UNREACHABLE, rc ? rc : -EPROTO, NULL);
		return;
	}
	establish(id);
	raise_ev(id, FAB_CM_ESTABLISHED, 0, &m);
}

void shm_id_io(struct fab_cm_id *id, uint32_t revents)
{
	struct shm_cm_msg m;
	int fds[SHM_CM_FDS], rc;

	switch (id->state) {
	case SHM_ID_LISTEN:
		listener_io(id);
		return;
	case SHM_ID_REQ_WAIT:
		req_wait_io(id);
		return;
	case SHM_ID_REQ_SENT:
		req_sent_io(id);
		return;
	case SHM_ID_REQ_RCVD:
		if (revents & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
			shm_id_teardown(id, -ECONNRESET);
		return;
	case SHM_ID_ACCEPTED:
		rc = cm_recv(id, &m, fds);
		close_fds(fds, SHM_CM_FDS);
		if (rc == -EAGAIN)
			return;
		if (rc || m.type != SHM_CM_RTU) {
			shm_id_teardown(id, rc ? rc : -EPROTO);
			return;
		}
		establish(id);
		raise_ev(id, FAB_CM_ESTABLISHED, 0, NULL);
		return;
	case SHM_ID_ESTABLISHED:
		if (revents & EPOLLOUT)
			shm_qp_run(id->qp);
		/* deliver what arrived before the peer left, then tear down */
		if (revents & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR))
			shm_qp_rx(id->qp);
		if (id->state == SHM_ID_ESTABLISHED && (revents & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
			shm_id_teardown(id, -ECONNRESET);
		return;
	default:
		shm_ep_set(id, 0);
		return;
	}
}

void shm_id_timeouts(struct fab_dev *dev, uint64_t now, uint64_t *next)
{
	struct ulnet_list *pos, *tmp;

	ulnet_list_for_each_safe(pos, tmp, &dev->ids) {
		struct fab_cm_id *id = ulnet_container_of(pos, struct fab_cm_id, link);

		if (!id->deadline_ns)
			continue;
		if (id->deadline_ns > now) {
			if (id->deadline_ns < *next)
				*next = id->deadline_ns;
			continue;
		}
		id->deadline_ns = 0;
		switch (id->state) {
		case SHM_ID_REQ_SENT:
			id_close_fd(id);
			id->state = SHM_ID_CLOSED;
			if (id->qp)
				shm_qp_set_error(id->qp);
			raise_ev(id, FAB_CM_TIMED_OUT, -ETIMEDOUT, NULL);
			break;
		case SHM_ID_REQ_WAIT:
			shm_destroy_id(id);
			break;
		case SHM_ID_ACCEPTED:
			shm_id_teardown(id, -ETIMEDOUT);
			break;
		default:
			break;
		}
	}
}
