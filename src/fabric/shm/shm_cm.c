/* SPDX-License-Identifier: MIT */
/* shm connection manager: rdma_cm's handshake over unix-domain SEQPACKET sockets named
 * "ulnet-shm/<IPv4>:<port>" in the abstract namespace (one namespace per network namespace, like
 * IP addresses). Active: CONNREQ -> CONNACK or REJECT; then RTU. Who may connect is checked on both
 * ends before a byte goes out (SO_PEERCRED: our uid, or the device's allow_uid / allow_gid), and the
 * address a CONNREQ claims must be held by the connecting process (the device's identity name,
 * "ulnet-shm-id/<IPv4>", which only one socket can hold). The CONNREQ carries the connector's
 * registration table (sealed, read-only to peers), the connection's SEND rings and control words
 * (shm_ring.h), its doorbell (a datagram socketpair end), the connection's memory channel (a
 * socketpair end, shm_mem.c) and its life page (shm_life.h); the CONNACK the acceptor's table,
 * doorbell and life page. Everything received is checked before it is mapped or written to. Once
 * established the rings (or the socket) carry the QP's SENDs; a shutdown or EOF is a disconnect. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <unistd.h>
#include "log.h"
#include "shm.h"
#include "wire.h"

#define SHM_CM_MAGIC 0x324d5355u /* "USM2" (USM1, before the trust model, is refused) */
#define SHM_REQ_WAIT_NS 10000000000ull /* an accepted socket must send its CONNREQ within 10 s */
#define SHM_RTU_WAIT_NS 10000000000ull
#define SHM_ACCEPT_PAUSE_NS 100000000ull /* accept paused this long at EMFILE (it would spin) */
/* CONNREQ: table, rings, doorbell, memory channel, [life]; CONNACK: table, doorbell, [life] */
#define SHM_CM_FDS SHM_FDS_MAX
#define SHM_CM_RING_OK 0x01    /* CONNACK flags: the acceptor reads the rings */
#define SHM_CM_LIFE 0x02       /* CONNREQ/CONNACK flags: the sender's life page comes last */

enum shm_cm_type { SHM_CM_CONNREQ = 1, SHM_CM_CONNACK, SHM_CM_REJECT, SHM_CM_RTU };

void shm_cm_pack(const struct shm_cm_msg *m, uint8_t b[SHM_CM_SIZE])
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

int shm_cm_unpack(const uint8_t *b, size_t len, struct shm_cm_msg *m)
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
	/* (a REJECT's status is an errno from the peer: bounded, so it reads as one) */
	if (m->type == SHM_CM_REJECT && (m->status > 0 || m->status < -4095))
		m->status = -ECONNREFUSED;
	return 0;
}

/* "ulnet-shm/<IPv4>:<port>" (a listener) or, with @port < 0, "ulnet-shm-id/<IPv4>" (a device's
 * identity) in the abstract namespace. */
static socklen_t cm_name(const struct in_addr *a, int port, struct sockaddr_un *un)
{
	char ip[INET_ADDRSTRLEN];
	int n;

	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	inet_ntop(AF_INET, a, ip, sizeof(ip));
	if (port < 0)
		n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "ulnet-shm-id/%s", ip);
	else
		n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "ulnet-shm/%s:%u", ip, (unsigned)port);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

bool shm_cred_allowed(uid_t self, const struct fab_limits *lim, uid_t uid, gid_t gid, const gid_t *groups,
		      int ngroups)
{
	if (uid == self || (lim->allow_uid != FAB_ALLOW_NONE && uid == (uid_t)lim->allow_uid))
		return true;
	if (lim->allow_gid == FAB_ALLOW_NONE)
		return false;
	if (gid == (gid_t)lim->allow_gid)
		return true;
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == (gid_t)lim->allow_gid)
			return true;
	return false;
}

int shm_peer_cred_check(const struct fab_dev *dev, int fd, const char *what, struct ucred *cr)
{
	gid_t groups[64];
	socklen_t l = sizeof(*cr), gl = sizeof(groups);
	int ng = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &l) < 0)
		return -errno;
	/* (supplementary groups only matter when a group is allowed; more than 64: the first 64) */
	if (dev->lim.allow_gid != FAB_ALLOW_NONE && cr->uid != geteuid() &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl) == 0)
		ng = (int)(gl / sizeof(gid_t));
	if (shm_cred_allowed(geteuid(), &dev->lim, cr->uid, cr->gid, groups, ng))
		return 0;
	ULNET_LOG(FABRIC, ERR, "shm: %s pid %d runs as uid %u gid %u; this node (uid %u) lets in its own uid only "
		  "(lnd tunables device.allow_uid: %d, device.allow_gid: %d): refused", what, (int)cr->pid,
		  (unsigned)cr->uid, (unsigned)cr->gid, (unsigned)geteuid(),
		  dev->lim.allow_uid == FAB_ALLOW_NONE ? -1 : (int)dev->lim.allow_uid,
		  dev->lim.allow_gid == FAB_ALLOW_NONE ? -1 : (int)dev->lim.allow_gid);
	return -EACCES;
}

/* The process that holds @a's identity name: 0 and *@cr, or -errno (nobody: -ECONNREFUSED). */
static int identity_holder(const struct in_addr *a, struct ucred *cr)
{
	struct sockaddr_un un;
	socklen_t l = cm_name(a, -1, &un), cl = sizeof(*cr);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&un, l) < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &cl) < 0)
		rc = errno == ENOENT ? -ECONNREFUSED : -errno;
	close(fd);
	return rc;
}

int shm_identity_open(struct fab_dev *dev)
{
	struct sockaddr_un un;
	socklen_t l = cm_name(&dev->addr.sin_addr, -1, &un);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &dev->idfd};
	struct ucred cr;
	char ip[INET_ADDRSTRLEN];
	int rc;

	dev->idfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (dev->idfd < 0)
		return -errno;
	if (bind(dev->idfd, (struct sockaddr *)&un, l) == 0 && listen(dev->idfd, SOMAXCONN) == 0 &&
	    epoll_ctl(dev->epfd, EPOLL_CTL_ADD, dev->idfd, &ev) == 0)
		return 0;
	rc = -errno;
	close(dev->idfd);
	dev->idfd = -1;
	inet_ntop(AF_INET, &dev->addr.sin_addr, ip, sizeof(ip));
	if (rc == -EADDRINUSE && identity_holder(&dev->addr.sin_addr, &cr) == 0)
		ULNET_LOG(FABRIC, ERR, "shm: %s is held by pid %d (uid %u), another shm device on this address: stop it "
			  "or give this NI another address", ip, (int)cr.pid, (unsigned)cr.uid);
	else
		ULNET_LOG(FABRIC, ERR, "shm: cannot hold the identity of %s: %s", ip, strerror(-rc));
	return rc;
}

/* accept failed for want of descriptors or memory: the listener stays readable, so polling it again
 * at once would spin a core; it pauses instead */
static bool accept_exhausted(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

void shm_identity_accept(struct fab_dev *dev)
{
	int fd;

	/* probes of our identity: the prober has read our pid when its connect returned */
	while ((fd = accept4(dev->idfd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
	if (accept_exhausted(errno)) {
		struct epoll_event ev = {0};

		epoll_ctl(dev->epfd, EPOLL_CTL_DEL, dev->idfd, &ev);
		dev->id_paused_ns = shm_now_ns() + SHM_ACCEPT_PAUSE_NS;
	}
}

/* @id's peer holds the address it claims (@who: "CONNREQ from" or "listener of"): the process
 * listening on its identity name is the one at the other end of @id's socket. 0, or -EACCES logged. */
static int check_identity(struct fab_cm_id *id, const struct in_addr *claimed, const char *who)
{
	struct ucred cr;
	char ip[INET_ADDRSTRLEN];
	int rc = identity_holder(claimed, &cr);

	if (!rc && cr.pid == id->peer_pid)
		return 0;
	inet_ntop(AF_INET, claimed, ip, sizeof(ip));
	if (rc)
		ULNET_LOG(FABRIC, ERR, "shm: %s pid %d (uid %u) claims %s, which no shm device holds (%s): refused", who,
			  (int)id->peer_pid, (unsigned)id->peer_uid, ip, strerror(-rc));
	else
		ULNET_LOG(FABRIC, ERR, "shm: %s pid %d (uid %u) claims %s, which pid %d holds: refused", who,
			  (int)id->peer_pid, (unsigned)id->peer_uid, ip, (int)cr.pid);
	return -EACCES;
}

/* @fd is the end of a socketpair of @type (a peer's doorbell or memory channel): nothing we send on
 * it can go to a named socket the peer chose. */
static bool is_pair_end(int fd, int type)
{
	struct sockaddr_un un;
	socklen_t l = sizeof(un);
	int t = 0, d = 0;
	socklen_t tl = sizeof(t), dl = sizeof(d);

	return fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &tl) == 0 && t == type &&
	       getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &d, &dl) == 0 && d == AF_UNIX &&
	       getpeername(fd, (struct sockaddr *)&un, &l) == 0 && l == sizeof(sa_family_t);
}

static int cm_send(struct fab_cm_id *id, const struct shm_cm_msg *m, const int *fds, int nfd)
{
	uint8_t b[SHM_CM_SIZE];

	shm_cm_pack(m, b);
	return shm_send_fds(id->fd, b, sizeof(b), fds, nfd);
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
	ssize_t n = shm_recv_fds(id->fd, b, sizeof(b), fds, SHM_CM_FDS);

	if (n == -EAGAIN || n == -EWOULDBLOCK)
		return -EAGAIN;
	if (n == -EPROTO)
		return -EPROTO;
	if (n <= 0)
		return -ECONNRESET;
	if (shm_cm_unpack(b, (size_t)n, m)) {
		close_fds(fds, SHM_CM_FDS);
		return -EPROTO;
	}
	return 0;
}

/* The connector's rings and control words: a sealed memfd (a peer cannot resize it under our
 * mapping), both directions' consumers asleep until they first look. 0 and *@fd, or -errno. */
static int ring_create(struct fab_cm_id *id, int *fd_out)
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
	shm_ring_attach(&id->ring_tx, p, 0);
	shm_ring_attach(&id->ring_rx, p, 1);
	atomic_store(&id->ring_tx.ctl->sleeping, 1);
	atomic_store(&id->ring_rx.ctl->sleeping, 1);
	*fd_out = fd;
	return 0;
}

/* The acceptor maps the connector's rings (@fd not taken): false if they cannot be trusted not to
 * move under us. */
static bool ring_map_peer(struct fab_cm_id *id, int fd)
{
	struct stat st;
	void *p;

	if (shm_fd_sealed(fd, SHM_RING_MAP_LEN) || fstat(fd, &st) < 0 || st.st_size != SHM_RING_MAP_LEN ||
	    !(p = shm_ring_map(fd)))
		return false;
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

/* Map the peer's registration table read-only (@fd not taken). */
static int map_peer_table(struct fab_cm_id *id, int fd, uint32_t n)
{
	void *p;

	/* a table shorter than announced would SIGBUS us on the first look-up past its end; one the
	 * peer could shrink later, too */
	if (n == 0 || n > 65535 || shm_fd_sealed(fd, shm_tbl_bytes(n)))
		return -EPROTO;
	p = mmap(NULL, shm_tbl_bytes(n), PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	id->peer_tbl = p;
	id->peer_tbl_n = n;
	return 0;
}

/* Our doorbell for this connection: a datagram socketpair; we read one end (epoll, tagged), the
 * peer gets the other (*@peer_end). A peer can only ring it, and only this connection's. */
static int db_open(struct fab_cm_id *id, int *peer_end)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = (void *)((uintptr_t)id | 1)};
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if (epoll_ctl(id->dev->epfd, EPOLL_CTL_ADD, sv[0], &ev) < 0) {
		int rc = -errno;

		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	id->db_fd = sv[0];
	id->db_polled = true;
	shutdown(sv[0], SHUT_WR); /* (nothing goes the other way) */
	*peer_end = sv[1];
	return 0;
}

/* The doorbell leaves the epoll set: a peer whose connection is gone cannot wake us any more. */
static void db_stop(struct fab_cm_id *id)
{
	struct epoll_event ev = {0};

	if (id->db_fd >= 0 && id->db_polled) {
		epoll_ctl(id->dev->epfd, EPOLL_CTL_DEL, id->db_fd, &ev);
		id->db_polled = false;
	}
}

static void peer_cred(struct fab_cm_id *id, const struct ucred *cr)
{
	id->peer_pid = cr->pid;
	id->peer_uid = cr->uid;
}

int shm_create_id(struct fab_dev *dev, void *context, struct fab_cm_id **out)
{
	struct fab_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return -ENOMEM;
	id->dev = dev;
	id->context = context;
	id->fd = id->db_fd = id->peer_db = id->mem_fd = -1;
	id->local = dev->addr;
	ulnet_list_add_tail(&id->link, &dev->ids);
	*out = id;
	return 0;
}

void shm_set_context(struct fab_cm_id *id, void *context)
{
	id->context = context;
}

/* @id leaves REQ_WAIT (its listener's half-open count). */
static void half_done(struct fab_cm_id *id)
{
	if (id->state == SHM_ID_REQ_WAIT && id->listener && id->listener->n_half)
		id->listener->n_half--;
}

void shm_destroy_id(struct fab_cm_id *id)
{
	struct ulnet_list *pos, *tmp;
	struct fab_dev *dev;

	if (!id)
		return;
	dev = id->dev;
	half_done(id);
	if (id->state == SHM_ID_LISTEN) {
		ulnet_list_for_each_safe(pos, tmp, &dev->ids) {
			struct fab_cm_id *c = ulnet_container_of(pos, struct fab_cm_id, link);

			if (c->listener != id)
				continue;
			if (c->state == SHM_ID_REQ_WAIT) { /* not yet shown to the owner */
				shm_destroy_id(c);
				continue;
			}
			c->listener = NULL;
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
		munmap((void *)id->peer_tbl, shm_tbl_bytes(id->peer_tbl_n));
	if (id->ring_map)
		shm_ring_unmap(id->ring_map);
	db_stop(id);
	if (id->db_fd >= 0)
		close(id->db_fd);
	if (id->peer_db >= 0)
		close(id->peer_db);
	if (id->mem_fd >= 0)
		close(id->mem_fd);
	free(id->sent);
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
	l = cm_name(&addr->sin_addr, ntohs(addr->sin_port), &un);
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

/* The active side fails before anything was sent: an event, as over a fabric. */
static void connect_failed(struct fab_cm_id *id, enum fab_cm_event_type t, int status)
{
	id_close_fd(id);
	id->state = SHM_ID_CLOSED;
	raise_ev(id, t, status, NULL);
}

int shm_connect(struct fab_cm_id *id, const struct sockaddr_in *dst, const void *pdata, size_t len, int timeout_ms)
{
	struct shm_cm_msg m = {.type = SHM_CM_CONNREQ, .pdata_len = (uint8_t)len};
	struct sockaddr_un un;
	struct ucred cr;
	socklen_t l;
	int rc, ring_fd = -1, db_peer = -1, mem[2] = {-1, -1};

	if (id->state != SHM_ID_IDLE || !id->qp || len > FAB_PRIVATE_DATA_MAX || (len && !pdata) || timeout_ms <= 0)
		return -EINVAL;
	id->peer = *dst;
	id->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (id->fd < 0)
		return -errno;
	sock_tune(id->dev, id->fd);
	l = cm_name(&dst->sin_addr, ntohs(dst->sin_port), &un);
	if (connect(id->fd, (struct sockaddr *)&un, l) < 0) {
		/* nobody listens (or the listener's backlog is full) */
		rc = -errno;
		connect_failed(id, FAB_CM_UNREACHABLE, rc == -ENOENT ? -ECONNREFUSED : rc);
		return 0;
	}
	/* nothing of ours goes to a listener we may not trust, or one squatting on another's address */
	if ((rc = shm_peer_cred_check(id->dev, id->fd, "listener of", &cr)) == 0)
		peer_cred(id, &cr);
	if (rc || check_identity(id, &dst->sin_addr, "listener of")) {
		connect_failed(id, FAB_CM_UNREACHABLE, -EACCES);
		return 0;
	}
	m.src = id->dev->addr;
	m.tbl_n = id->dev->lim.max_mr;
	if (len) /* pdata may be NULL when empty */
		memcpy(m.pdata, pdata, len);
	if ((rc = ring_create(id, &ring_fd)) || (rc = db_open(id, &db_peer)) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, mem) < 0) {
		rc = rc ? rc : -errno;
	} else {
		int fds[SHM_CM_FDS] = {id->dev->tbl_fd, ring_fd, db_peer, mem[1]}, nfd = 4, life = shm_life_fd();

		if (life >= 0) {
			fds[nfd++] = life;
			m.flags |= SHM_CM_LIFE;
		}
		id->mem_fd = mem[0];
		mem[0] = -1;
		shm_mem_announce_all(id); /* (a key may travel in the private data) */
		rc = cm_send(id, &m, fds, nfd);
	}
	close_fds(&ring_fd, 1); /* (the mapping stays) */
	close_fds(&db_peer, 1);
	close_fds(mem, 2);
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
	struct shm_cm_msg m = {.type = SHM_CM_CONNACK, .pdata_len = (uint8_t)len, .flags = SHM_CM_RING_OK};
	int rc, db_peer = -1, life = shm_life_fd();

	if (id->state != SHM_ID_REQ_RCVD || !id->qp || len > FAB_PRIVATE_DATA_MAX || (len && !pdata))
		return -EINVAL;
	m.src = id->dev->addr;
	m.tbl_n = id->dev->lim.max_mr;
	if (len)
		memcpy(m.pdata, pdata, len);
	id->ring_send = ring_sends(id->dev);
	if (life >= 0)
		m.flags |= SHM_CM_LIFE;
	/* the peer learns our arenas before any key into them (the private data may hold one) */
	shm_mem_announce_all(id);
	if (!(rc = db_open(id, &db_peer)))
		rc = cm_send(id, &m, (int[]){id->dev->tbl_fd, db_peer, life}, life >= 0 ? 3 : 2);
	close_fds(&db_peer, 1);
	if (rc) {
		shm_id_teardown(id, rc);
		return 0;
	}
	/* the QP may send at once (RTS) */
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
	db_stop(id);
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

/* A listener at its half-open cap drops its oldest half-open connection (a flood of silent
 * connects cannot keep a CONNREQ out for longer than the flood takes to turn over). */
static void half_open_make_room(struct fab_cm_id *l)
{
	struct fab_cm_id *oldest = NULL;
	struct ulnet_list *pos, *tmp;

	ulnet_list_for_each_safe(pos, tmp, &l->dev->ids) {
		struct fab_cm_id *c = ulnet_container_of(pos, struct fab_cm_id, link);

		if (c->listener == l && c->state == SHM_ID_REQ_WAIT && (!oldest || c->deadline_ns < oldest->deadline_ns))
			oldest = c;
	}
	if (!oldest)
		return;
	ULNET_LOG(FABRIC, WARN, "shm: %u connections accepted without a CONNREQ yet (the cap); dropping the oldest, "
		  "from pid %d", SHM_HALF_OPEN_MAX, (int)oldest->peer_pid);
	shm_destroy_id(oldest);
}

static void req_wait_io(struct fab_cm_id *id);

static void listener_io(struct fab_cm_id *l)
{
	int fd;

	while ((fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct fab_cm_id *id;
		struct ucred cr;

		/* before anything is read: a peer we may not trust gets nothing of ours but a REJECT */
		if (shm_peer_cred_check(l->dev, fd, "connection from", &cr)) {
			struct shm_cm_msg r = {.type = SHM_CM_REJECT, .status = -EACCES};
			uint8_t b[SHM_CM_SIZE];

			shm_cm_pack(&r, b);
			if (send(fd, b, sizeof(b), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
				/* (its socket buffer is full or it left: nothing to tell) */
			}
			/* what it sent already goes unread (descriptors in it are dropped by the kernel,
			 * never installed here): a close with it queued would reset the REJECT away */
			while (recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0)
				;
			close(fd);
			continue;
		}
		if (shm_create_id(l->dev, NULL, &id)) {
			close(fd);
			continue;
		}
		if (l->n_half >= SHM_HALF_OPEN_MAX)
			half_open_make_room(l);
		id->fd = fd;
		id->local = l->local;
		id->listener = l;
		id->state = SHM_ID_REQ_WAIT;
		l->n_half++;
		id->deadline_ns = shm_now_ns() + SHM_REQ_WAIT_NS;
		sock_tune(l->dev, fd);
		peer_cred(id, &cr);
		if (shm_ep_set(id, EPOLLIN | EPOLLRDHUP)) {
			shm_destroy_id(id);
			continue;
		}
		req_wait_io(id); /* a connector sends its CONNREQ with its connect: usually there already */
	}
	if (accept_exhausted(errno)) {
		struct rlimit rl = {0};

		getrlimit(RLIMIT_NOFILE, &rl);
		ULNET_LOG(FABRIC, ERR, "shm: accept: %s (RLIMIT_NOFILE %llu); pausing the listener for %llu ms (raise "
			  "the limit with ulimit -n)", strerror(errno), (unsigned long long)rl.rlim_cur,
			  (unsigned long long)(SHM_ACCEPT_PAUSE_NS / 1000000));
		shm_ep_set(l, 0);
		l->deadline_ns = shm_now_ns() + SHM_ACCEPT_PAUSE_NS;
	}
}

/* A CONNREQ's attachments (@fds: table, rings, doorbell, memory channel, [life]; taken). 0, or a
 * -errno and *@why: the peer sent what we must not map or write to. */
static int req_attach(struct fab_cm_id *id, const struct shm_cm_msg *m, int fds[SHM_CM_FDS], const char **why)
{
	int rc = 0;

	if ((rc = map_peer_table(id, fds[0], m->tbl_n)))
		*why = "its registration table is not a memfd sealed against shrinking and growing, of the size it says";
	else if (!ring_map_peer(id, fds[1]))
		*why = "its SEND rings are not a memfd sealed against shrinking and growing, of their size", rc = -EPROTO;
	else if (!is_pair_end(fds[2], SOCK_DGRAM))
		*why = "its doorbell is not the end of a datagram socketpair", rc = -EPROTO;
	else if (!is_pair_end(fds[3], SOCK_SEQPACKET))
		*why = "its memory channel is not the end of a socketpair", rc = -EPROTO;
	else if ((m->flags & SHM_CM_LIFE) && !(id->peer_life = shm_life_map(fds[4])))
		*why = "its life page is not a sealed memfd of one page", rc = -EPROTO;
	if (!rc) {
		id->peer_db = fds[2];
		id->mem_fd = fds[3];
		fds[2] = fds[3] = -1;
	}
	close_fds(fds, SHM_CM_FDS);
	return rc;
}

static void req_wait_io(struct fab_cm_id *id)
{
	struct fab_shm_faults *f = &id->dev->faults;
	struct fab_cm_event ev = {.type = FAB_CM_CONNECT_REQUEST, .id = id};
	struct shm_cm_msg m, r = {.type = SHM_CM_REJECT, .status = -EACCES};
	const char *why = NULL;
	int fds[SHM_CM_FDS], rc = cm_recv(id, &m, fds);

	if (rc == -EAGAIN)
		return;
	if (rc || m.type != SHM_CM_CONNREQ || !id->listener) {
		if (rc == -EPROTO || (!rc && m.type != SHM_CM_CONNREQ))
			ULNET_LOG(FABRIC, WARN, "shm: bad CONNREQ from pid %d (uid %u); dropping the connection",
				  (int)id->peer_pid, (unsigned)id->peer_uid);
		close_fds(fds, SHM_CM_FDS);
		shm_destroy_id(id);
		return;
	}
	if (f->timeout_connect) { /* swallow it: the active side times out */
		close_fds(fds, SHM_CM_FDS);
		shm_ep_set(id, EPOLLRDHUP);
		id->deadline_ns = shm_now_ns() + SHM_REQ_WAIT_NS;
		return;
	}
	if (f->refuse_connect) {
		close_fds(fds, SHM_CM_FDS);
		r.status = -ECONNREFUSED;
		cm_send(id, &r, NULL, 0);
		shm_destroy_id(id);
		return;
	}
	/* the source address must be the connecting process's (else any local process could close a
	 * peer's connection by claiming its address), and what it sends must be safe to map */
	if (check_identity(id, &m.src.sin_addr, "CONNREQ from") || (rc = req_attach(id, &m, fds, &why))) {
		if (why)
			ULNET_LOG(FABRIC, ERR, "shm: CONNREQ from pid %d (uid %u) refused: %s", (int)id->peer_pid,
				  (unsigned)id->peer_uid, why);
		close_fds(fds, SHM_CM_FDS);
		cm_send(id, &r, NULL, 0);
		shm_destroy_id(id);
		return;
	}
	id->peer = m.src;
	half_done(id);
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
	const char *why = NULL;
	int fds[SHM_CM_FDS], rc = cm_recv(id, &m, fds);

	if (rc == -EAGAIN)
		return;
	if (!rc && m.type == SHM_CM_REJECT) {
		close_fds(fds, SHM_CM_FDS);
		id_close_fd(id);
		id->state = SHM_ID_CLOSED;
		raise_ev(id, FAB_CM_REJECTED, m.status ? m.status : -ECONNREFUSED, &m);
		return;
	}
	if (!rc && m.type == SHM_CM_CONNACK) {
		if ((rc = map_peer_table(id, fds[0], m.tbl_n)))
			why = "its registration table is not a memfd sealed against shrinking and growing, of the size it says";
		else if (!is_pair_end(fds[1], SOCK_DGRAM))
			why = "its doorbell is not the end of a datagram socketpair", rc = -EPROTO;
		else if ((m.flags & SHM_CM_LIFE) && !(id->peer_life = shm_life_map(fds[2])))
			why = "its life page is not a sealed memfd of one page", rc = -EPROTO;
		else if (!(m.flags & SHM_CM_RING_OK))
			why = "it does not read the SEND rings", rc = -EPROTO;
		if (!rc) {
			id->peer_db = fds[1];
			fds[1] = -1;
			id->ring_send = ring_sends(id->dev);
		} else {
			ULNET_LOG(FABRIC, ERR, "shm: CONNACK from pid %d (uid %u) refused: %s", (int)id->peer_pid,
				  (unsigned)id->peer_uid, why);
		}
	}
	close_fds(fds, SHM_CM_FDS);
	if (rc || m.type != SHM_CM_CONNACK || (rc = cm_send(id, &rtu, NULL, 0))) {
		id_close_fd(id);
		id->state = SHM_ID_CLOSED;
		if (id->qp)
			shm_qp_set_error(id->qp);
		/* the listener went away without answering, or answered what we must not use */
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
		case SHM_ID_LISTEN: /* the EMFILE pause is over */
			shm_ep_set(id, EPOLLIN);
			break;
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
