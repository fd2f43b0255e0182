/* SPDX-License-Identifier: MIT */
/* The shm provider against hostile local peers (issue "The shm provider lets no one in"): one case
 * per finding. Where the finding needs an unprivileged attacker, a forked child drops to uid 1001
 * (no account is needed for a uid) and attacks the root node the parent runs. Every case waits on
 * observable state (events, completions, pipes), never on a sleep. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "fab_test.h"
#include "shm.h"
#include "wire.h"

#define ALL (FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_REMOTE_READ)
#define EVIL_UID 1001

static int next_port;
/* each case's addresses: 127.x.y.(tbase + k); a failed case's devices stay open, the next case
 * does not meet them */
static int tbase;

static int case_setup(void **state)
{
	(void)state;
	tbase += 10;
	return 0;
}

struct node {
	struct fab_dev *d;
	struct fab_cm_id *l; /* listener, or NULL */
	struct sockaddr_in a;
};

static struct fab_limits lim_allow(uint32_t uid)
{
	struct fab_limits l;

	fab_limits_default(&l);
	l.allow_uid = uid;
	return l;
}

/* A device at 127.x.y.@k (a listener on a fresh port if @listen). 0 or -errno (children use it). */
static int node_open(struct node *n, int k, const struct fab_limits *lim, bool listen)
{
	int rc;

	memset(n, 0, sizeof(*n));
	n->a = ft_addr(tbase + k, listen ? next_port++ : 0);
	if ((rc = ft_dev_open(&n->a, lim, &n->d)))
		return rc;
	if (listen && ((rc = OPS->create_id(n->d, NULL, &n->l)) || (rc = OPS->listen(n->l, &n->a, 16))))
		return rc;
	return 0;
}

struct link {
	struct fab_cm_id *ia, *ib; /* a connected to b's listener */
	struct fab_qp *qa, *qb;
};

static void link_up(struct node *a, struct node *b, struct link *k, const void *pd, size_t pdlen)
{
	struct fab_qp_attr attr = {16, 16};
	struct fab_dev *ab[2] = {a->d, b->d}, *ba[2] = {b->d, a->d};
	struct fab_cm_event ev;

	assert_int_equal(OPS->create_id(a->d, NULL, &k->ia), 0);
	assert_int_equal(OPS->create_qp(k->ia, &attr, NULL, &k->qa), 0);
	assert_int_equal(OPS->connect(k->ia, &b->a, pd, pdlen, 5000), 0);
	ft_expect_event(ba, 2, FAB_CM_CONNECT_REQUEST, &ev);
	k->ib = ev.id;
	assert_int_equal(OPS->create_qp(k->ib, &attr, NULL, &k->qb), 0);
	assert_int_equal(OPS->accept(k->ib, NULL, 0), 0);
	ft_expect_event(ab, 2, FAB_CM_ESTABLISHED, &ev);
	ft_expect_event(ba, 2, FAB_CM_ESTABLISHED, &ev);
}

/* A receive posted on @qr (device @dr) and a 4-byte SEND on @qs (device @ds) into it, wr_id @wr
 * both; the buffers' registrations are kept in @x until sr_done. */
struct sendrec {
	struct fab_dev *ds, *dr;
	struct fab_mr ms, mr;
};

static void sr_post(struct sendrec *x, struct fab_dev *ds, struct fab_qp *qs, struct fab_dev *dr, struct fab_qp *qr,
		    uint64_t wr)
{
	static uint8_t sbuf[64] = "ping", rbuf[64];
	struct iovec si = {sbuf, sizeof(sbuf)}, ri = {rbuf, sizeof(rbuf)};
	struct fab_sge s, r;

	x->ds = ds;
	x->dr = dr;
	assert_int_equal(OPS->reg_mr(ds, &si, 1, ALL, &x->ms), 0);
	assert_int_equal(OPS->reg_mr(dr, &ri, 1, ALL, &x->mr), 0);
	r = (struct fab_sge){(uintptr_t)rbuf, sizeof(rbuf), x->mr.lkey};
	s = (struct fab_sge){(uintptr_t)sbuf, 4, x->ms.lkey};
	assert_int_equal(ft_post_recv1(qr, wr, &r, 1), 0);
	assert_int_equal(ft_post_send1(qs, wr, FAB_WR_SEND, false, &s, 1, 0, 0), 0);
}

static void sr_done(struct sendrec *x)
{
	OPS->dereg_mr(x->ds, &x->ms);
	OPS->dereg_mr(x->dr, &x->mr);
}

/* a listens, @k connects node @bk to it; devs: {a, b}. */
struct pair {
	struct node a, b;
	struct link k;
	struct fab_dev *devs[2];
};

static void pair_up(struct pair *p, int bk)
{
	assert_int_equal(node_open(&p->a, 1, NULL, true), 0);
	assert_int_equal(node_open(&p->b, bk, NULL, false), 0);
	link_up(&p->b, &p->a, &p->k, NULL, 0);
	p->devs[0] = p->a.d;
	p->devs[1] = p->b.d;
}

static void pair_down(struct pair *p)
{
	OPS->dev_close(p->b.d);
	OPS->dev_close(p->a.d);
}

/* One SEND from @qs (device @ds) into @qr (device @dr): it arrives. */
static void send_one(struct fab_dev *ds, struct fab_qp *qs, struct fab_dev *dr, struct fab_qp *qr, uint64_t wr)
{
	struct fab_dev *devs[2] = {dr, ds};
	struct sendrec x;
	struct fab_wc wc;

	sr_post(&x, ds, qs, dr, qr, wr);
	ft_expect_wc(devs, 2, wr, FAB_WC_SUCCESS, &wc);
	assert_int_equal(wc.byte_len, 4);
	sr_done(&x);
}

static bool no_event(struct fab_dev *d)
{
	struct fab_cm_event ev;

	return OPS->get_event(d, &ev) == -EAGAIN;
}

/* ---- unprivileged children ---- */

/* Drop to EVIL_UID for good (and stay killable by the parent's death, and traceable by root). */
static void become_evil(void)
{
	if (setgroups(0, NULL) || setresgid(EVIL_UID, EVIL_UID, EVIL_UID) || setresuid(EVIL_UID, EVIL_UID, EVIL_UID))
		_exit(90);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_DUMPABLE, 1);
}

static pid_t spawn(int *rd, void (*fn)(int wfd, void *arg), void *arg)
{
	int p[2];
	pid_t c;

	assert_int_equal(pipe(p), 0);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		fn(p[1], arg);
		_exit(0);
	}
	close(p[1]);
	*rd = p[0];
	return c;
}

/* Read @len bytes from the child's pipe while pumping @devs (it may wait on us). */
static void child_read(int rd, void *buf, size_t len, struct fab_dev **devs, int n)
{
	uint64_t end = ft_now_ms() + WAIT_MS;
	size_t got = 0;

	while (got < len) {
		struct pollfd p = {.fd = rd, .events = POLLIN};

		if (ft_now_ms() > end)
			fail_msg("the child said nothing within %d ms", WAIT_MS);
		if (poll(&p, 1, 20) == 1) {
			ssize_t r = read(rd, (char *)buf + got, len - got);

			if (r <= 0)
				fail_msg("the child exited early");
			got += (size_t)r;
		}
		if (n)
			ft_pump(devs, n, 0);
	}
}

static void child_done(pid_t c, int rd)
{
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	close(rd);
}

/* The child's first CM event within WAIT_MS, as {type, status}. */
static void child_event(struct fab_dev *d, int32_t out[2])
{
	struct fab_cm_event ev;
	uint64_t end = ft_now_ms() + WAIT_MS;

	while (OPS->get_event(d, &ev) == -EAGAIN && ft_now_ms() < end)
		ft_pump(&d, 1, 20);
	out[0] = ft_now_ms() < end ? (int32_t)ev.type : -1;
	out[1] = ev.status;
}

struct evil_args {
	struct sockaddr_in target; /* where to connect (or where to listen, for evil_listen) */
	struct fab_limits lim;
	int mode;
	char path[64];
};

static void evil_connect(int wfd, void *arg)
{
	struct evil_args *a = arg;
	struct fab_qp_attr attr = {16, 16};
	struct fab_dev *d;
	struct fab_cm_id *id;
	struct fab_qp *qp;
	struct sockaddr_in me = ft_addr(tbase + 5, 0);
	int32_t r[2];

	become_evil();
	if (OPS->dev_open(&me, &a->lim, &d) || OPS->create_id(d, NULL, &id) || OPS->create_qp(id, &attr, NULL, &qp) ||
	    OPS->connect(id, &a->target, NULL, 0, 5000))
		_exit(91);
	child_event(d, r);
	if (write(wfd, r, sizeof(r)) != sizeof(r))
		_exit(92);
	for (;;) /* keep the connection until the parent is done */
		ft_pump(&d, 1, 100);
}

static void evil_listen(int wfd, void *arg)
{
	struct evil_args *a = arg;
	struct fab_dev *d;
	struct fab_cm_id *l;
	int32_t r[2];

	become_evil();
	if (OPS->dev_open(&a->target, &a->lim, &d) || OPS->create_id(d, NULL, &l) || OPS->listen(l, &a->target, 4))
		_exit(91);
	if (write(wfd, "r", 1) != 1)
		_exit(92);
	child_event(d, r); /* nothing may come: -1 */
	if (write(wfd, r, sizeof(r)) != sizeof(r))
		_exit(92);
	for (;;)
		ft_pump(&d, 1, 100);
}

/* An unprivileged user can neither connect to a root node nor be connected to by it: both ends
 * check SO_PEERCRED before a byte of theirs goes out. */
static void test_other_uid_refused(void **state)
{
	struct node a;
	struct evil_args ea = {0};
	struct fab_qp_attr attr = {16, 16};
	struct fab_cm_id *id;
	struct fab_qp *qp;
	struct fab_cm_event ev;
	int32_t r[2];
	char c;
	int rd;
	pid_t ch;

	(void)state;
	assert_int_equal(node_open(&a, 1, NULL, true), 0);
	ea.target = a.a;
	ea.lim = lim_allow(0); /* (the child would let root in: the refusal is the node's) */
	ch = spawn(&rd, evil_connect, &ea);
	child_read(rd, r, sizeof(r), &a.d, 1);
	assert_int_equal(r[0], FAB_CM_REJECTED);
	assert_int_equal(r[1], -EACCES);
	ft_pump(&a.d, 1, 0);
	assert_true(no_event(a.d));
	child_done(ch, rd);

	/* the other way: a root node never connects to (hands its table to) an unprivileged listener */
	ea.target = ft_addr(tbase + 6, next_port++);
	ch = spawn(&rd, evil_listen, &ea);
	child_read(rd, &c, 1, NULL, 0);
	assert_int_equal(OPS->create_id(a.d, NULL, &id), 0);
	assert_int_equal(OPS->create_qp(id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->connect(id, &ea.target, NULL, 0, 5000), 0);
	ft_expect_event(&a.d, 1, FAB_CM_UNREACHABLE, &ev);
	assert_int_equal(ev.status, -EACCES);
	child_done(ch, rd);
	OPS->dev_close(a.d);
}

/* device.allow_uid lets that uid in (and the child lets root in the same way). */
static void test_allow_uid(void **state)
{
	struct fab_limits lim = lim_allow(EVIL_UID);
	struct fab_dev *ad[1];
	struct node a;
	struct evil_args ea = {0};
	struct fab_qp_attr attr = {16, 16};
	struct fab_cm_event ev;
	struct fab_qp *qp;
	int32_t r[2];
	int rd;
	pid_t ch;

	(void)state;
	assert_int_equal(node_open(&a, 1, &lim, true), 0);
	ad[0] = a.d;
	ea.target = a.a;
	ea.lim = lim_allow(0);
	ch = spawn(&rd, evil_connect, &ea);
	ft_expect_event(ad, 1, FAB_CM_CONNECT_REQUEST, &ev);
	assert_int_equal(OPS->create_qp(ev.id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->accept(ev.id, NULL, 0), 0);
	child_read(rd, r, sizeof(r), ad, 1);
	assert_int_equal(r[0], FAB_CM_ESTABLISHED);
	child_done(ch, rd);
	OPS->dev_close(a.d);
}

/* A CONNREQ claiming another node's address (to close that node's connection, as o2ib closes the
 * older connection of a peer that reconnects) is refused; the real node's connection goes on. */
static void spoofer(int wfd, void *arg)
{
	struct evil_args *a = arg;
	struct fab_qp_attr attr = {16, 16};
	struct sockaddr_in me = ft_addr(tbase + 7, 0);
	struct fab_dev *d;
	struct fab_cm_id *id;
	struct fab_qp *qp;
	int32_t r[2];

	if (OPS->dev_open(&me, NULL, &d) || OPS->create_id(d, NULL, &id) || OPS->create_qp(id, &attr, NULL, &qp))
		_exit(91);
	d->addr.sin_addr = ft_addr(tbase + 2, 0).sin_addr; /* claim b's address */
	if (OPS->connect(id, &a->target, NULL, 0, 5000))
		_exit(91);
	child_event(d, r);
	if (write(wfd, r, sizeof(r)) != sizeof(r))
		_exit(92);
	for (;;)
		ft_pump(&d, 1, 100);
}

static void test_spoofed_source(void **state)
{
	struct pair p;
	struct evil_args ea = {0};
	int32_t r[2];
	int rd;
	pid_t ch;

	(void)state;
	pair_up(&p, 2);
	ea.target = p.a.a;
	ch = spawn(&rd, spoofer, &ea);
	child_read(rd, r, sizeof(r), p.devs, 2);
	assert_int_equal(r[0], FAB_CM_REJECTED);
	assert_int_equal(r[1], -EACCES);
	ft_pump(p.devs, 2, 0);
	assert_true(no_event(p.a.d)); /* no CONNECT_REQUEST claiming b, no disconnect */
	assert_true(no_event(p.b.d));
	send_one(p.b.d, p.k.qa, p.a.d, p.k.qb, 7);
	child_done(ch, rd);
	pair_down(&p);
}

/* ---- what the node shares is read-only ---- */

static void expect_read_only(int fd)
{
	char b = 1;

	assert_true(fd >= 0);
	errno = 0;
	assert_true(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
	assert_int_equal(errno, EPERM);
	assert_int_equal(pwrite(fd, &b, 1, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(fd, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(fd, 1 << 30), -1);
}

/* The registration table (keys, generations) and the life word go to every peer: no peer may write
 * them, or resize them under the mappings (SIGBUS). */
static void test_shared_fds_read_only(void **state)
{
	struct node a;
	char path[64];
	int fd;

	(void)state;
	assert_int_equal(node_open(&a, 1, NULL, false), 0);
	expect_read_only(a.d->tbl_fd);
	/* what a peer holds after SCM_RIGHTS: a new descriptor, or one reopened through /proc */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", a.d->tbl_fd);
	fd = open(path, O_RDWR);
	if (fd >= 0) {
		expect_read_only(fd);
		close(fd);
	}
	expect_read_only(shm_life_fd());
	OPS->dev_close(a.d);
}

/* A peer's table that is not sealed (it could truncate it under our mapping: SIGBUS) is refused,
 * at connect (CONNREQ) and at accept (CONNACK). */
static void test_unsealed_table_refused(void **state)
{
	struct node a, c;
	struct fab_dev *devs[2];
	struct fab_qp_attr attr = {16, 16};
	struct fab_cm_id *id;
	struct fab_qp *qp;
	struct fab_cm_event ev;
	int real, fake = memfd_create("evil-table", MFD_CLOEXEC);

	(void)state;
	assert_int_equal(node_open(&a, 1, NULL, true), 0);
	assert_int_equal(node_open(&c, 3, NULL, true), 0);
	assert_true(fake >= 0);
	assert_int_equal(ftruncate(fake, (off_t)shm_tbl_bytes(c.d->lim.max_mr)), 0);
	real = c.d->tbl_fd;
	c.d->tbl_fd = fake;
	/* c connects to a with it */
	devs[0] = c.d;
	devs[1] = a.d;
	assert_int_equal(OPS->create_id(c.d, NULL, &id), 0);
	assert_int_equal(OPS->create_qp(id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->connect(id, &a.a, NULL, 0, 5000), 0);
	ft_expect_event(devs, 2, FAB_CM_REJECTED, &ev);
	assert_int_equal(ev.status, -EACCES);
	assert_int_equal(ftruncate(fake, 0), 0); /* what the attacker did next: nobody maps it */
	assert_true(no_event(a.d));
	/* a connects to c, which answers with it */
	assert_int_equal(ftruncate(fake, (off_t)shm_tbl_bytes(c.d->lim.max_mr)), 0);
	devs[0] = a.d;
	devs[1] = c.d;
	assert_int_equal(OPS->create_id(a.d, NULL, &id), 0);
	assert_int_equal(OPS->create_qp(id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->connect(id, &c.a, NULL, 0, 5000), 0);
	ft_event(devs + 1, 1, &ev); /* c's CONNECT_REQUEST */
	assert_int_equal(ev.type, FAB_CM_CONNECT_REQUEST);
	assert_int_equal(OPS->create_qp(ev.id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->accept(ev.id, NULL, 0), 0);
	ft_expect_event(devs, 2, FAB_CM_UNREACHABLE, &ev);
	assert_int_equal(ev.status, -EPROTO);
	c.d->tbl_fd = real;
	close(fake);
	OPS->dev_close(c.d);
	OPS->dev_close(a.d);
}

/* ---- memory a peer hands us ---- */

/* Send the memory channel's announcement of arena @mid (@base, @len) with descriptor @fd on @chan,
 * as an owner does (shm_mem_announce), whatever @fd is. */
static int announce_fd(int chan, uint64_t mid, uint64_t base, uint32_t len, int fd)
{
	uint8_t msg[SHM_MEM_MSG];

	shm_mem_msg_pack(msg, mid, base, len);
	return shm_send_fds(chan, msg, sizeof(msg), &fd, 1);
}

/* The attacker: a region of its own whose table entry says it lies in arena 0x777, and an
 * announcement of that arena on the memory channel with @mode 0: an O_PATH descriptor of a root
 * file it cannot read (the node used to reopen such a descriptor read-write with its own rights);
 * 1: a memfd not sealed, truncated once announced (the node would SIGBUS on its mapping). */
static void evil_arena(int wfd, void *arg)
{
	struct evil_args *a = arg;
	struct fab_qp_attr attr = {16, 16};
	struct sockaddr_in me = ft_addr(tbase + 8, 0);
	static uint8_t region[4096] __attribute__((aligned(4096)));
	struct iovec ri = {region, sizeof(region)};
	struct fab_dev *d;
	struct fab_cm_id *id;
	struct fab_qp *qp;
	struct fab_mr mr;
	struct shm_mr_entry *e;
	uint8_t pd[12];
	int32_t r[2];
	int fd;

	become_evil();
	if (OPS->dev_open(&me, &a->lim, &d) || OPS->reg_mr(d, &ri, 1, ALL, &mr) || OPS->create_id(d, NULL, &id) ||
	    OPS->create_qp(id, &attr, NULL, &qp))
		_exit(91);
	e = &d->tbl[SHM_KEY_IDX(mr.rkey)]; /* our own table: writable through our own mapping */
	e->mem_id = 0x777;
	e->mem_base = (uintptr_t)region;
	e->mem_len = sizeof(region);
	ulnet_put_le64(pd, mr.addr);
	ulnet_put_le32(pd + 8, mr.rkey);
	if (OPS->connect(id, &a->target, pd, sizeof(pd), 5000))
		_exit(93);
	child_event(d, r);
	if (r[0] != FAB_CM_ESTABLISHED)
		_exit(94);
	fd = a->mode == 0 ? open(a->path, O_PATH | O_CLOEXEC) : memfd_create("evil-arena", MFD_CLOEXEC);
	if (fd < 0 || (a->mode == 1 && ftruncate(fd, sizeof(region))))
		_exit(95);
	if (announce_fd(id->mem_fd, 0x777, (uintptr_t)region, sizeof(region), fd))
		_exit(96);
	if (a->mode == 1 && ftruncate(fd, 0))
		_exit(97);
	if (write(wfd, "a", 1) != 1)
		_exit(92);
	for (;;)
		ft_pump(&d, 1, 100);
}

static void arena_attack(int mode)
{
	struct fab_limits lim = lim_allow(EVIL_UID);
	struct evil_args ea = {0};
	struct fab_qp_attr attr = {16, 16};
	struct node a;
	struct fab_cm_event ev;
	struct fab_qp *qp = NULL;
	struct fab_mr ms;
	static uint8_t src[8] = "pwned!!";
	struct iovec si = {src, sizeof(src)};
	struct fab_sge s;
	struct fab_wc wc;
	uint64_t raddr = 0;
	uint32_t rkey = 0;
	char buf[16] = "", c;
	int rd, fd = -1;
	pid_t ch;

	assert_int_equal(node_open(&a, 1, &lim, true), 0);
	ea.target = a.a;
	ea.lim = lim_allow(0);
	ea.mode = mode;
	snprintf(ea.path, sizeof(ea.path), "/tmp/ulnet-trust-%d", (int)getpid());
	if (mode == 0) { /* root's file, 0600: the attacker may name it (O_PATH) but not open it */
		fd = open(ea.path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "secret", 6), 6);
	}
	ch = spawn(&rd, evil_arena, &ea);
	ft_expect_event(&a.d, 1, FAB_CM_CONNECT_REQUEST, &ev);
	assert_int_equal(ev.private_data_len, 12);
	raddr = ulnet_get_le64(ev.private_data);
	rkey = ulnet_get_le32(ev.private_data + 8);
	assert_int_equal(OPS->create_qp(ev.id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->accept(ev.id, NULL, 0), 0);
	child_read(rd, &c, 1, &a.d, 1);
	assert_int_equal(OPS->reg_mr(a.d, &si, 1, ALL, &ms), 0);
	s = (struct fab_sge){(uintptr_t)src, sizeof(src), ms.lkey};
	assert_int_equal(ft_post_send1(qp, 1, FAB_WR_RDMA_WRITE, true, &s, 1, raddr, rkey), 0);
	for (;;) { /* the WRITE fails (the connection is closed), nothing else happens to the node */
		ft_wc(&a.d, 1, &wc);
		if (wc.wr_id == 1)
			break;
	}
	assert_int_equal(wc.status, FAB_WC_REM_ACCESS_ERR);
	do
		ft_event(&a.d, 1, &ev);
	while (ev.type == FAB_CM_ESTABLISHED);
	assert_int_equal(ev.type, FAB_CM_DISCONNECTED);
	if (mode == 0) {
		assert_int_equal(pread(fd, buf, sizeof(buf) - 1, 0), 6);
		assert_string_equal(buf, "secret");
		close(fd);
		unlink(ea.path);
	}
	child_done(ch, rd);
	OPS->dev_close(a.d);
}

static void test_path_fd_never_opened(void **state)
{
	(void)state;
	arena_attack(0);
}

static void test_unsealed_memfd_refused(void **state)
{
	(void)state;
	arena_attack(1);
}

/* A peer that announces arena after arena of 4 GiB gets at most SHM_PEER_MAP_BYTES of our address
 * space mapped (least recently used unmapped first); the RDMA goes on (process_vm: same process). */
static void announce(int chan, uint64_t mid, uint32_t len)
{
	int fd = memfd_create("big-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, len), 0);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	assert_int_equal(announce_fd(chan, mid, 1ull << 40, len, fd), 0);
	close(fd);
}

static void test_peer_arenas_capped(void **state)
{
	struct pair p;
	static uint8_t region[4096], src[64];
	struct iovec ri = {region, sizeof(region)}, si = {src, sizeof(src)};
	struct fab_mr mr, ms;
	struct fab_sge sg;
	struct fab_wc wc;
	int mapped = 0;

	(void)state;
	pair_up(&p, 3);
	assert_int_equal(OPS->reg_mr(p.b.d, &ri, 1, ALL, &mr), 0);
	p.b.d->tbl[SHM_KEY_IDX(mr.rkey)].mem_id = 0x999; /* an arena never announced: a miss, then process_vm */
	for (uint64_t i = 1; i <= 6; i++)
		announce(p.k.ia->mem_fd, 0x100 + i, SHM_MEM_MAX);
	assert_int_equal(OPS->reg_mr(p.a.d, &si, 1, ALL, &ms), 0);
	sg = (struct fab_sge){(uintptr_t)src, sizeof(src), ms.lkey};
	assert_int_equal(ft_post_send1(p.k.qb, 1, FAB_WR_RDMA_WRITE, true, &sg, 1, mr.addr, mr.rkey), 0);
	ft_expect_wc(p.devs, 2, 1, FAB_WC_SUCCESS, &wc);
	for (int i = 0; i < SHM_PEER_MAPS; i++)
		mapped += p.k.ib->maps[i].map != NULL;
	print_message("6 arenas of 4 GiB announced: %d mapped, %llu GiB\n", mapped,
		      (unsigned long long)(p.k.ib->map_bytes >> 30));
	assert_true(p.k.ib->map_bytes <= SHM_PEER_MAP_BYTES);
	assert_int_equal(mapped, (int)(SHM_PEER_MAP_BYTES / SHM_MEM_MAX));
	pair_down(&p);
}

/* ---- per-connection control words ---- */

/* a listens; b and c are connected to it (kb, kc); devs: {a, b, c}. */
struct star {
	struct node a, b, c;
	struct link kb, kc;
	struct fab_dev *devs[3];
};

static void star_up(struct star *st)
{
	assert_int_equal(node_open(&st->a, 1, NULL, true), 0);
	assert_int_equal(node_open(&st->b, 2, NULL, false), 0);
	assert_int_equal(node_open(&st->c, 3, NULL, false), 0);
	link_up(&st->b, &st->a, &st->kb, NULL, 0);
	link_up(&st->c, &st->a, &st->kc, NULL, 0);
	st->devs[0] = st->a.d;
	st->devs[1] = st->b.d;
	st->devs[2] = st->c.d;
}

static void star_down(struct star *st)
{
	OPS->dev_close(st->c.d);
	OPS->dev_close(st->b.d);
	OPS->dev_close(st->a.d);
}

/* A peer that claims to copy with a key for ever delays that key's deregistration by a bounded time,
 * then loses its connection; the node's other connections go on. */
static void test_copying_word_bounded(void **state)
{
	struct star st;
	static uint8_t region[4096];
	struct iovec ri = {region, sizeof(region)};
	struct fab_cm_event ev;
	struct fab_mr mr;
	uint64_t t0, ms;

	(void)state;
	star_up(&st);
	assert_int_equal(OPS->reg_mr(st.a.d, &ri, 1, ALL, &mr), 0);
	atomic_store(&st.kc.ia->ring_tx.ctl->copying, mr.rkey); /* c: "copying into it", never done */
	t0 = ft_now_ms();
	assert_int_equal(OPS->dereg_mr(st.a.d, &mr), 0);
	ms = ft_now_ms() - t0;
	print_message("dereg with a peer holding the key: %llu ms\n", (unsigned long long)ms);
	assert_true(ms >= 150); /* it waited (and came back: the peer lost its connection, below) */
	ft_expect_event(st.devs, 3, FAB_CM_DISCONNECTED, &ev);
	assert_ptr_equal(ev.id, st.kc.ib);
	send_one(st.b.d, st.kb.qa, st.a.d, st.kb.qb, 9); /* b's connection is untouched */
	assert_true(no_event(st.a.d));
	star_down(&st);
}

/* Each connection has its own doorbell: a peer that reads whatever it was given steals no wake-up
 * of another connection (the bell stays there for the node to read). */
static void test_doorbell_per_connection(void **state)
{
	struct star st;

	(void)state;
	star_up(&st);
	for (uint64_t i = 1; i <= 10; i++) {
		struct sendrec x;
		struct fab_wc wc;
		char junk[64];

		sr_post(&x, st.b.d, st.kb.qa, st.a.d, st.kb.qb, i);
		/* c reads everything it holds of a's before a looks: b's bell stays a's to read */
		while (read(st.kc.ia->peer_db, junk, sizeof(junk)) > 0 ||
		       recv(st.kc.ia->peer_db, junk, sizeof(junk), MSG_DONTWAIT) > 0)
			;
		assert_true(recv(st.kb.ib->db_fd, junk, sizeof(junk), MSG_PEEK | MSG_DONTWAIT) > 0);
		ft_expect_wc(st.devs, 3, i, FAB_WC_SUCCESS, &wc);
		sr_done(&x);
	}
	star_down(&st);
}

/* A wake-up lost all the same (here: the node's own doorbell read behind its back) costs at most the
 * periodic look, never the connection. */
static void test_lost_wakeup_recovers(void **state)
{
	struct pair p;
	struct sendrec x;
	struct fab_wc wc;
	char junk[64];
	uint64_t t0;

	(void)state;
	pair_up(&p, 2);
	sr_post(&x, p.b.d, p.k.qa, p.a.d, p.k.qb, 1); /* (a sleeps on the ring: b rings it) */
	assert_true(recv(p.k.ib->db_fd, junk, sizeof(junk), MSG_DONTWAIT) > 0); /* the bell, gone */
	t0 = ft_now_ms();
	ft_expect_wc(p.devs, 2, 1, FAB_WC_SUCCESS, &wc);
	print_message("SEND after a lost wake-up: %llu ms\n", (unsigned long long)(ft_now_ms() - t0));
	sr_done(&x);
	pair_down(&p);
}

/* ---- the listener ---- */

/* Connect @n silent sockets to @a's listener (they stay until the child is killed). */
struct silent_args {
	struct sockaddr_in a;
	int n;
};

static void silent_connects(int wfd, void *arg)
{
	struct silent_args *s = arg;
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct rlimit rl;
	char ip[INET_ADDRSTRLEN];
	socklen_t l;
	int k = 0;

	getrlimit(RLIMIT_NOFILE, &rl); /* (the parent may have lowered ours) */
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	inet_ntop(AF_INET, &s->a.sin_addr, ip, sizeof(ip));
	l = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			(size_t)snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1, "ulnet-shm/%s:%u", ip,
					 ntohs(s->a.sin_port)));
	for (int i = 0; i < s->n; i++) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);

		k += fd >= 0 && connect(fd, (struct sockaddr *)&un, l) == 0;
	}
	if (write(wfd, &k, sizeof(k)) != sizeof(k))
		_exit(92);
	for (;;)
		pause();
}

/* The lowest free descriptor: with RLIMIT_NOFILE there, no new one can be made. */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	assert_true(fd >= 0);
	close(fd);
	return fd;
}

static uint64_t cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* At the fd limit the listener pauses (it would spin: the connects wait in its backlog), and picks
 * them up once fds are free again. */
static void test_listener_emfile(void **state)
{
	struct silent_args sa;
	struct rlimit rl, low;
	struct node a;
	uint64_t c0, c1, end;
	int rd, k = 0;
	pid_t ch;

	(void)state;
	assert_int_equal(node_open(&a, 1, NULL, true), 0);
	sa.a = a.a;
	sa.n = 8;
	ch = spawn(&rd, silent_connects, &sa);
	child_read(rd, &k, sizeof(k), NULL, 0);
	assert_int_equal(k, 8);
	getrlimit(RLIMIT_NOFILE, &rl);
	low = rl;
	low.rlim_cur = (rlim_t)lowest_free_fd();
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	c0 = cpu_us();
	end = ft_now_ms() + 1000;
	while (ft_now_ms() < end)
		ft_pump(&a.d, 1, 100);
	c1 = cpu_us();
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	print_message("1 s at EMFILE with 8 connects waiting: %llu us of CPU\n", (unsigned long long)(c1 - c0));
	assert_true(c1 - c0 < 100000); /* a spinning loop takes the whole second */
	assert_int_equal(a.l->n_half, 0);
	end = ft_now_ms() + WAIT_MS;
	while (a.l->n_half < 8 && ft_now_ms() < end)
		ft_pump(&a.d, 1, 50);
	assert_int_equal(a.l->n_half, 8);
	child_done(ch, rd);
	OPS->dev_close(a.d);
}

/* Silent connects (accepted, no CONNREQ) are capped; a real connect still gets in. */
static void test_half_open_cap(void **state)
{
	struct silent_args sa;
	struct node a, b;
	struct link k;
	struct fab_dev *devs[2];
	uint64_t end;
	int rd, n = 0;
	pid_t ch;

	(void)state;
	assert_int_equal(node_open(&a, 1, NULL, true), 0);
	assert_int_equal(node_open(&b, 2, NULL, false), 0);
	sa.a = a.a;
	sa.n = SHM_HALF_OPEN_MAX + 100;
	ch = spawn(&rd, silent_connects, &sa);
	child_read(rd, &n, sizeof(n), NULL, 0);
	assert_true(n > SHM_HALF_OPEN_MAX);
	end = ft_now_ms() + WAIT_MS;
	while (a.l->n_half < SHM_HALF_OPEN_MAX && ft_now_ms() < end)
		ft_pump(&a.d, 1, 50);
	ft_pump(&a.d, 1, 50);
	assert_int_equal(a.l->n_half, SHM_HALF_OPEN_MAX);
	link_up(&b, &a, &k, NULL, 0);
	devs[0] = a.d;
	devs[1] = b.d;
	send_one(b.d, k.qa, a.d, k.qb, 3);
	assert_true(a.l->n_half <= SHM_HALF_OPEN_MAX);
	child_done(ch, rd);
	(void)devs;
	OPS->dev_close(b.d);
	OPS->dev_close(a.d);
}

int main(int argc, char **argv)
{
	ft_args(argc, argv);
	next_port = ft_port_base();
	if (geteuid() != 0) {
		fprintf(stderr, "test_shm_trust: needs root (it plays an unprivileged attacker against a root node)\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_other_uid_refused, case_setup),
		cmocka_unit_test_setup(test_allow_uid, case_setup),
		cmocka_unit_test_setup(test_spoofed_source, case_setup),
		cmocka_unit_test_setup(test_shared_fds_read_only, case_setup),
		cmocka_unit_test_setup(test_unsealed_table_refused, case_setup),
		cmocka_unit_test_setup(test_path_fd_never_opened, case_setup),
		cmocka_unit_test_setup(test_unsealed_memfd_refused, case_setup),
		cmocka_unit_test_setup(test_peer_arenas_capped, case_setup),
		cmocka_unit_test_setup(test_copying_word_bounded, case_setup),
		cmocka_unit_test_setup(test_doorbell_per_connection, case_setup),
		cmocka_unit_test_setup(test_lost_wakeup_recovers, case_setup),
		cmocka_unit_test_setup(test_listener_emfile, case_setup),
		cmocka_unit_test_setup(test_half_open_cap, case_setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
