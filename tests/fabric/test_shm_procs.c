/* SPDX-License-Identifier: MIT */
/* shm provider across two processes (fork): RDMA WRITE + SEND ordering and READ between address
 * spaces, and the peer dying in the middle of an RDMA WRITE and of an RDMA READ (fault injection
 * SIGKILLs it after half the bytes): an error completion and a DISCONNECTED event, no hang. Each
 * twice: the target's region in ordinary memory (process_vm_*) and in mem_alloc memory (the peer
 * maps the memfd); the device's counters show which path moved the bytes. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fab_test.h"
#include "wire.h"

#define TGT_LEN (1u << 20)
#define ALL (FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_REMOTE_READ)

/* abstract names are per network namespace, not per worktree: a port block per process */
static int next_port;
/* the child's target region comes from mem_alloc (memfd) */
static bool use_memfd;

/* The child: a target with a 1 MiB region it advertises in the accept private data. Each message
 * received is a fill byte: it checks the whole region holds it (the WRITE arrived before the SEND)
 * and answers 1 (yes) or 0. Exits 0 on disconnect. Never returns. */
static void child_main(int port, int ready_fd)
{
	struct sockaddr_in me = ft_addr(2 + (port & 63), port); /* (a child of the last test may still hold its own) */
	struct fab_qp_attr attr = {8, 8};
	struct fab_dev *d;
	struct fab_cm_id *l, *id = NULL;
	struct fab_qp *qp = NULL;
	struct fab_mr mt, mm;
	struct fab_cm_event ev;
	struct fab_wc wc;
	uint8_t *tgt = use_memfd ? OPS->mem_alloc(4096, TGT_LEN) : malloc(TGT_LEN), msg[64], reply[1], pd[16];
	struct fab_sge r, s;
	struct pollfd p;

	if (!tgt || ft_dev_open(&me, NULL, &d) || OPS->create_id(d, NULL, &l) || OPS->listen(l, &me, 4))
		_exit(10);
	memset(tgt, 0x11, TGT_LEN);
	{
		struct iovec a = {tgt, TGT_LEN}, b = {msg, sizeof(msg) + 0};
		if (OPS->reg_mr(d, &a, 1, ALL, &mt) || OPS->reg_mr(d, &b, 1, ALL, &mm))
			_exit(11);
	}
	if (write(ready_fd, "r", 1) != 1)
		_exit(12);
	for (;;) {
		p = (struct pollfd){.fd = OPS->dev_fd(d), .events = POLLIN};
		poll(&p, 1, 1000);
		if (OPS->progress(d))
			_exit(13);
		while (OPS->get_event(d, &ev) == 0) {
			if (ev.type == FAB_CM_CONNECT_REQUEST) {
				id = ev.id;
				if (OPS->create_qp(id, &attr, NULL, &qp))
					_exit(14);
				r = (struct fab_sge){(uintptr_t)msg, sizeof(msg), mm.lkey};
				for (int i = 0; i < 4; i++)
					if (ft_post_recv1(qp, 1, &r, 1))
						_exit(15);
				ulnet_put_le64(pd, mt.addr);
				ulnet_put_le32(pd + 8, mt.rkey);
				ulnet_put_le32(pd + 12, TGT_LEN);
				if (OPS->accept(id, pd, sizeof(pd)))
					_exit(16);
			} else if (ev.type == FAB_CM_DISCONNECTED) {
				_exit(0);
			}
		}
		while (OPS->poll_cq(d, &wc, 1) == 1) {
			if (wc.opcode != FAB_WC_RECV || wc.status != FAB_WC_SUCCESS)
				continue; /* flushes after a disconnect */
			reply[0] = 1;
			for (uint32_t i = 0; i < TGT_LEN; i++)
				if (tgt[i] != msg[0])
					reply[0] = 0;
			r = (struct fab_sge){(uintptr_t)msg, sizeof(msg), mm.lkey};
			s = (struct fab_sge){(uintptr_t)msg + 32, 1, mm.lkey};
			msg[32] = reply[0];
			if (ft_post_recv1(qp, 1, &r, 1) || ft_post_send1(qp, 2, FAB_WR_SEND, false, &s, 1, 0, 0))
				_exit(17);
		}
	}
}

struct conn {
	pid_t child;
	struct fab_dev *d;
	struct fab_cm_id *id;
	struct fab_qp *qp;
	uint64_t raddr;
	uint32_t rkey, rlen;
};

static void conn_up(struct conn *c)
{
	struct sockaddr_in me = ft_addr(1, 0), peer;
	struct fab_qp_attr attr = {8, 8};
	struct fab_cm_event ev;
	int port = next_port++, pfd[2];
	char b;

	assert_int_equal(pipe(pfd), 0);
	c->child = fork();
	assert_true(c->child >= 0);
	if (c->child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failing parent must not leave it behind (and meson waiting) */
		close(pfd[0]);
		child_main(port, pfd[1]);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &b, 1), 1); /* the child listens */
	close(pfd[0]);
	peer = ft_addr(2 + (port & 63), port);
	assert_int_equal(ft_dev_open(&me, NULL, &c->d), 0);
	assert_int_equal(OPS->create_id(c->d, NULL, &c->id), 0);
	assert_int_equal(OPS->create_qp(c->id, &attr, NULL, &c->qp), 0);
	assert_int_equal(OPS->connect(c->id, &peer, NULL, 0, 5000), 0);
	ft_expect_event(&c->d, 1, FAB_CM_ESTABLISHED, &ev);
	assert_int_equal(ev.private_data_len, 16);
	c->raddr = ulnet_get_le64(ev.private_data);
	c->rkey = ulnet_get_le32(ev.private_data + 8);
	c->rlen = ulnet_get_le32(ev.private_data + 12);
	assert_int_equal(c->rlen, TGT_LEN);
}

/* The RDMA WRs so far took the path the target's memory calls for. */
static void expect_path(struct conn *c)
{
	const struct fab_shm_stats *st = fab_shm_stats(c->d);

	if (use_memfd) {
		assert_true(st->rdma_mapped > 0);
		assert_int_equal(st->rdma_process_vm, 0);
	} else {
		assert_true(st->rdma_process_vm > 0);
		assert_int_equal(st->rdma_mapped, 0);
	}
}

static int conn_reap(struct conn *c)
{
	int st = 0;

	OPS->dev_close(c->d);
	assert_int_equal(waitpid(c->child, &st, 0), c->child);
	return st;
}

static void test_write_send_read(void **state)
{
	struct conn c;
	uint8_t *src = malloc(TGT_LEN), *back = malloc(TGT_LEN), msg[64];
	struct fab_mr ms, mb, mm;
	struct fab_sge s, r;
	struct fab_wc wc;
	struct fab_cm_event ev;
	int st;

	(void)state;
	conn_up(&c);
	memset(src, 0x77, TGT_LEN);
	{
		struct iovec a = {src, TGT_LEN}, b = {back, TGT_LEN}, m = {msg, sizeof(msg)};
		assert_int_equal(OPS->reg_mr(c.d, &a, 1, ALL, &ms), 0);
		assert_int_equal(OPS->reg_mr(c.d, &b, 1, ALL, &mb), 0);
		assert_int_equal(OPS->reg_mr(c.d, &m, 1, ALL, &mm), 0);
	}
	for (int round = 0; round < 3; round++) {
		uint8_t fill = (uint8_t)(0x77 + round);

		memset(src, fill, TGT_LEN);
		r = (struct fab_sge){(uintptr_t)msg, sizeof(msg), mm.lkey};
		assert_int_equal(ft_post_recv1(c.qp, 50, &r, 1), 0);
		s = (struct fab_sge){(uintptr_t)src, TGT_LEN, ms.lkey};
		assert_int_equal(ft_post_send1(c.qp, 1, FAB_WR_RDMA_WRITE, false, &s, 1, c.raddr, c.rkey), 0);
		s = (struct fab_sge){(uintptr_t)src, 1, ms.lkey};
		assert_int_equal(ft_post_send1(c.qp, 2, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
		ft_expect_wc(&c.d, 1, 2, FAB_WC_SUCCESS, &wc);
		ft_expect_wc(&c.d, 1, 50, FAB_WC_SUCCESS, &wc);
		assert_int_equal(wc.byte_len, 1);
		assert_int_equal(msg[0], 1); /* the child saw the whole WRITE when the SEND arrived */
	}
	s = (struct fab_sge){(uintptr_t)back, TGT_LEN, mb.lkey};
	assert_int_equal(ft_post_send1(c.qp, 3, FAB_WR_RDMA_READ, true, &s, 1, c.raddr, c.rkey), 0);
	ft_expect_wc(&c.d, 1, 3, FAB_WC_SUCCESS, &wc);
	assert_memory_equal(back, src, TGT_LEN);
	expect_path(&c);
	assert_int_equal(OPS->disconnect(c.id), 0);
	ft_expect_event(&c.d, 1, FAB_CM_DISCONNECTED, &ev);
	st = conn_reap(&c);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	free(src);
	free(back);
}

/* The peer dies half-way through a 1 MiB RDMA: the WR completes with an error, later WRs flush,
 * the connection reports DISCONNECTED; for a READ, nothing past the local buffer is written. */
static void peer_death(enum fab_wr_opcode op)
{
	struct conn c;
	uint8_t *buf = malloc(TGT_LEN + 128);
	struct fab_mr m;
	struct fab_sge s;
	struct fab_wc wc;
	struct fab_cm_event ev;
	int st;

	conn_up(&c);
	memset(buf, 0xcc, TGT_LEN + 128);
	{
		struct iovec a = {buf + 64, TGT_LEN};
		assert_int_equal(OPS->reg_mr(c.d, &a, 1, ALL, &m), 0);
	}
	fab_shm_faults(c.d)->kill_peer_rdma_nth = 1;
	s = (struct fab_sge){(uintptr_t)buf + 64, TGT_LEN, m.lkey};
	assert_int_equal(ft_post_send1(c.qp, 1, op, true, &s, 1, c.raddr, c.rkey), 0);
	assert_int_equal(ft_post_send1(c.qp, 2, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	ft_expect_wc(&c.d, 1, 1, FAB_WC_RETRY_EXC_ERR, &wc);
	ft_expect_wc(&c.d, 1, 2, FAB_WC_WR_FLUSH_ERR, &wc);
	ft_expect_event(&c.d, 1, FAB_CM_DISCONNECTED, &ev);
	expect_path(&c);
	for (int i = 0; i < 64; i++) {
		assert_int_equal(buf[i], 0xcc);
		assert_int_equal(buf[64 + TGT_LEN + i], 0xcc);
	}
	st = conn_reap(&c);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
	free(buf);
}

/* The peer dies while both sides sleep on their SEND rings (a receive posted, nothing coming): the
 * socket's hang-up still reports DISCONNECTED and flushes the receive; a SEND after it flushes. */
static void test_peer_death_asleep(void **state)
{
	struct conn c;
	uint8_t buf[64];
	struct fab_mr m;
	struct fab_sge s;
	struct fab_wc wc;
	struct fab_cm_event ev;
	bool sending;
	int st;

	(void)state;
	conn_up(&c);
	assert_non_null(fab_shm_qp_rings(c.qp, &sending));
	{
		struct iovec a = {buf, sizeof(buf)};
		assert_int_equal(OPS->reg_mr(c.d, &a, 1, ALL, &m), 0);
	}
	s = (struct fab_sge){(uintptr_t)buf, sizeof(buf), m.lkey};
	assert_int_equal(ft_post_recv1(c.qp, 1, &s, 1), 0);
	ft_pump(&c.d, 1, 0);
	assert_int_equal(kill(c.child, SIGKILL), 0);
	ft_expect_event(&c.d, 1, FAB_CM_DISCONNECTED, &ev);
	ft_expect_wc(&c.d, 1, 1, FAB_WC_WR_FLUSH_ERR, &wc);
	assert_int_equal(ft_post_send1(c.qp, 2, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	ft_expect_wc(&c.d, 1, 2, FAB_WC_WR_FLUSH_ERR, &wc);
	st = conn_reap(&c);
	assert_true(WIFSIGNALED(st));
}

static void test_peer_death_write(void **state)
{
	(void)state;
	peer_death(FAB_WR_RDMA_WRITE);
}

static void test_peer_death_read(void **state)
{
	(void)state;
	peer_death(FAB_WR_RDMA_READ);
}

static int plain_memory(void **state)
{
	(void)state;
	use_memfd = false;
	return 0;
}

static int memfd_memory(void **state)
{
	(void)state;
	use_memfd = true;
	return 0;
}

int main(int argc, char **argv)
{
	ft_args(argc, argv);
	next_port = ft_port_base();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_write_send_read, plain_memory),
		cmocka_unit_test_setup(test_peer_death_write, plain_memory),
		cmocka_unit_test_setup(test_peer_death_asleep, plain_memory),
		cmocka_unit_test_setup(test_peer_death_read, plain_memory),
		{"test_write_send_read_memfd", test_write_send_read, memfd_memory, NULL, NULL},
		{"test_peer_death_write_memfd", test_peer_death_write, memfd_memory, NULL, NULL},
		{"test_peer_death_read_memfd", test_peer_death_read, memfd_memory, NULL, NULL},
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
