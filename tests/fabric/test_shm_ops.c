/* SPDX-License-Identifier: MIT */
/* shm provider, two devices in one process: every operation and every error of issue 8, each ending
 * in a completion or an event (never a hang), and never a write outside a registered range. */
#include <errno.h>
#include <stdlib.h>
#include "fab_test.h"
#include "shm_ring.h"

struct pair {
	struct fab_dev *a, *b;      /* a connects to b */
	struct fab_cm_id *ida, *idb, *lid;
	struct fab_qp *qa, *qb;
	struct fab_dev *da[2], *db[2]; /* {a, b} and {b, a} for the helpers */
};

/* abstract names are per network namespace, not per worktree: a port block per process */
static int next_port;

static void pair_up(struct pair *p, const struct fab_limits *lim, uint32_t sq, uint32_t rq)
{
	struct fab_qp_attr attr = {.max_send_wr = sq, .max_recv_wr = rq};
	struct sockaddr_in aa = ft_addr(1, 0), ba = ft_addr(2, next_port++);
	struct fab_cm_event ev;

	memset(p, 0, sizeof(*p));
	assert_int_equal(ft_dev_open(&aa, lim, &p->a), 0);
	assert_int_equal(ft_dev_open(&ba, lim, &p->b), 0);
	p->da[0] = p->db[1] = p->a;
	p->da[1] = p->db[0] = p->b;
	assert_int_equal(OPS->create_id(p->b, (void *)0xb, &p->lid), 0);
	assert_int_equal(OPS->listen(p->lid, &ba, 16), 0);
	assert_int_equal(OPS->create_id(p->a, (void *)0xa, &p->ida), 0);
	assert_int_equal(OPS->create_qp(p->ida, &attr, (void *)0x1a, &p->qa), 0);
	assert_int_equal(OPS->connect(p->ida, &ba, "hello-req", 9, 5000), 0);
	ft_expect_event(p->db, 2, FAB_CM_CONNECT_REQUEST, &ev);
	assert_ptr_equal(ev.listen_id, p->lid);
	assert_ptr_equal(ev.context, (void *)0xb);
	assert_int_equal(ev.private_data_len, 9);
	assert_memory_equal(ev.private_data, "hello-req", 9);
	assert_int_equal(ev.peer.sin_addr.s_addr, aa.sin_addr.s_addr);
	p->idb = ev.id;
	OPS->set_context(p->idb, (void *)0xbb);
	assert_int_equal(OPS->create_qp(p->idb, &attr, (void *)0x1b, &p->qb), 0);
	assert_int_equal(OPS->accept(p->idb, "hello-ack", 9), 0);
	ft_expect_event(p->da, 2, FAB_CM_ESTABLISHED, &ev);
	assert_ptr_equal(ev.id, p->ida);
	assert_int_equal(ev.private_data_len, 9);
	assert_memory_equal(ev.private_data, "hello-ack", 9);
	ft_expect_event(p->db, 2, FAB_CM_ESTABLISHED, &ev);
	assert_ptr_equal(ev.id, p->idb);
	assert_ptr_equal(ev.context, (void *)0xbb);
}

static void pair_down(struct pair *p)
{
	OPS->dev_close(p->a);
	OPS->dev_close(p->b);
}

static void reg(struct fab_dev *d, void *buf, size_t len, unsigned acc, struct fab_mr *mr)
{
	struct iovec r = {buf, len};

	assert_int_equal(OPS->reg_mr(d, &r, 1, acc, mr), 0);
}

#define ALL (FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_REMOTE_READ)

/* SEND/RECV with several SGEs both ways; an unsignalled SEND completes nothing. */
static void test_send_recv(void **state)
{
	struct pair p;
	char src[64] = "0123456789abcdefghijklmnopqrstuvwxyz", dst[64] = {0};
	struct fab_mr ms, md;
	struct fab_sge s[2], r[2];
	struct fab_wc wc;

	(void)state;
	pair_up(&p, NULL, 8, 8);
	reg(p.a, src, sizeof(src), ALL, &ms);
	reg(p.b, dst, sizeof(dst), ALL, &md);
	r[0] = (struct fab_sge){(uintptr_t)dst, 5, md.lkey};
	r[1] = (struct fab_sge){(uintptr_t)dst + 10, 20, md.lkey};
	assert_int_equal(ft_post_recv1(p.qb, 77, r, 2), 0);
	s[0] = (struct fab_sge){(uintptr_t)src, 3, ms.lkey};
	s[1] = (struct fab_sge){(uintptr_t)src + 20, 6, ms.lkey};
	assert_int_equal(ft_post_send1(p.qa, 5, FAB_WR_SEND, true, s, 2, 0, 0), 0);
	ft_expect_wc(p.da, 2, 5, FAB_WC_SUCCESS, &wc);
	assert_int_equal(wc.opcode, FAB_WC_SEND);
	assert_ptr_equal(wc.qp_context, (void *)0x1a);
	ft_expect_wc(p.db, 2, 77, FAB_WC_SUCCESS, &wc);
	assert_int_equal(wc.opcode, FAB_WC_RECV);
	assert_int_equal(wc.byte_len, 9);
	assert_memory_equal(dst, "012kl", 5);
	assert_memory_equal(dst + 10, "mnopqr", 4);
	/* zero-length SEND and an unsignalled one: only the signalled one completes on the sender */
	assert_int_equal(ft_post_recv1(p.qb, 78, r, 1), 0);
	assert_int_equal(ft_post_recv1(p.qb, 79, r, 1), 0);
	assert_int_equal(ft_post_send1(p.qa, 6, FAB_WR_SEND, false, s, 1, 0, 0), 0);
	assert_int_equal(ft_post_send1(p.qa, 7, FAB_WR_SEND, true, NULL, 0, 0, 0), 0);
	ft_expect_wc(p.da, 2, 7, FAB_WC_SUCCESS, &wc);
	ft_expect_wc(p.db, 2, 78, FAB_WC_SUCCESS, &wc);
	assert_int_equal(wc.byte_len, 3);
	ft_expect_wc(p.db, 2, 79, FAB_WC_SUCCESS, &wc);
	assert_int_equal(wc.byte_len, 0);
	pair_down(&p);
}

/* RDMA WRITE then SEND on one QP: when the RECV completes the written bytes are there (RC order).
 * RDMA READ back. A region of several ranges is one address space from its first byte. */
static void test_rdma_write_read(void **state)
{
	struct pair p;
	size_t len = 1 << 20;
	char *src = malloc(len), *dst = malloc(len), *back = malloc(len), msg[8], *r1 = malloc(4096), *r2 = malloc(4096);
	struct fab_mr ms, md, mb, mmsg, mr2;
	struct fab_sge s, r;
	struct fab_wc wc;
	struct iovec ranges[2] = {{r1, 4096}, {r2 + 100, 200}};

	(void)state;
	pair_up(&p, NULL, 8, 8);
	for (size_t i = 0; i < len; i++)
		src[i] = (char)(i * 7 + 3);
	memset(dst, 0, len);
	reg(p.a, src, len, ALL, &ms);
	reg(p.a, back, len, ALL, &mb);
	reg(p.b, dst, len, ALL, &md);
	reg(p.b, msg, sizeof(msg), ALL, &mmsg);
	r = (struct fab_sge){(uintptr_t)msg, sizeof(msg), mmsg.lkey};
	assert_int_equal(ft_post_recv1(p.qb, 1, &r, 1), 0);
	s = (struct fab_sge){(uintptr_t)src, (uint32_t)len, ms.lkey};
	assert_int_equal(ft_post_send1(p.qa, 10, FAB_WR_RDMA_WRITE, false, &s, 1, md.addr, md.rkey), 0);
	s = (struct fab_sge){(uintptr_t)src, 4, ms.lkey};
	assert_int_equal(ft_post_send1(p.qa, 11, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	ft_expect_wc(p.db, 2, 1, FAB_WC_SUCCESS, &wc);
	assert_memory_equal(dst, src, len);
	ft_expect_wc(p.da, 2, 11, FAB_WC_SUCCESS, &wc);
	s = (struct fab_sge){(uintptr_t)back, (uint32_t)len, mb.lkey};
	assert_int_equal(ft_post_send1(p.qa, 12, FAB_WR_RDMA_READ, true, &s, 1, md.addr, md.rkey), 0);
	ft_expect_wc(p.da, 2, 12, FAB_WC_SUCCESS, &wc);
	assert_int_equal(wc.opcode, FAB_WC_RDMA_READ);
	assert_int_equal(wc.byte_len, len);
	assert_memory_equal(back, src, len);
	/* two ranges as one region: write 150 bytes at region offset 4000 (crosses into range 2) */
	memset(r1, 0, 4096);
	memset(r2, 0, 4096);
	assert_int_equal(OPS->reg_mr(p.b, ranges, 2, ALL, &mr2), 0);
	assert_int_equal(mr2.addr, (uintptr_t)r1);
	assert_int_equal(mr2.length, 4296);
	s = (struct fab_sge){(uintptr_t)src, 150, ms.lkey};
	assert_int_equal(ft_post_send1(p.qa, 13, FAB_WR_RDMA_WRITE, true, &s, 1, mr2.addr + 4000, mr2.rkey), 0);
	ft_expect_wc(p.da, 2, 13, FAB_WC_SUCCESS, &wc);
	assert_memory_equal(r1 + 4000, src, 96);
	assert_memory_equal(r2 + 100, src + 96, 54);
	assert_int_equal(r2[99], 0);
	assert_int_equal(r2[154], 0);
	/* a READ from it gathers both ranges back */
	memset(back, 0, 200);
	s = (struct fab_sge){(uintptr_t)back, 150, mb.lkey};
	assert_int_equal(ft_post_send1(p.qa, 14, FAB_WR_RDMA_READ, true, &s, 1, mr2.addr + 4000, mr2.rkey), 0);
	ft_expect_wc(p.da, 2, 14, FAB_WC_SUCCESS, &wc);
	assert_memory_equal(back, src, 150);
	pair_down(&p);
	free(src), free(dst), free(back), free(r1), free(r2);
}

static void test_too_many_sges(void **state)
{
	struct pair p;
	struct fab_limits lim;
	char buf[64];
	struct fab_mr m;
	struct fab_sge s[3];
	struct fab_send_wr w1 = {.wr_id = 1, .opcode = FAB_WR_SEND, .signaled = true, .sg_list = s, .num_sge = 1}, w2 = w1;
	const struct fab_send_wr *bad = NULL;
	struct ulnet_kv kv[] = {{"max_send_sge", "2"}, {"device.max_recv_sge", "1"}};
	struct fab_wc wc;

	(void)state;
	fab_limits_default(&lim);
	assert_int_equal(fab_limits_parse(kv, 2, &lim), 0);
	pair_up(&p, &lim, 8, 8);
	reg(p.a, buf, sizeof(buf), ALL, &m);
	for (int i = 0; i < 3; i++)
		s[i] = (struct fab_sge){(uintptr_t)buf + i, 1, m.lkey};
	assert_int_equal(ft_post_send1(p.qa, 1, FAB_WR_SEND, true, s, 3, 0, 0), -EINVAL);
	assert_int_equal(ft_post_send1(p.qa, 1, FAB_WR_RDMA_WRITE, true, s, 3, 0, 0), -EINVAL);
	assert_int_equal(ft_post_recv1(p.qa, 1, s, 2), -EINVAL);
	/* a chain stops at the bad WR: the first is posted, *bad names the second */
	w2.num_sge = 3;
	w2.wr_id = 2;
	w1.next = &w2;
	assert_int_equal(OPS->post_send(p.qa, &w1, &bad), -EINVAL);
	assert_ptr_equal(bad, &w2);
	ft_expect_wc(p.da, 2, 1, FAB_WC_SUCCESS, &wc);
	assert_int_equal(OPS->poll_cq(p.a, &wc, 1), 0);
	pair_down(&p);
}

/* A full send queue refuses with -ENOMEM; a polled signalled completion frees its slot and the
 * unsignalled slots before it. Same for the receive queue. */
static void test_queue_full(void **state)
{
	struct pair p;
	char buf[64];
	struct fab_mr m;
	struct fab_sge s;
	struct fab_wc wc;

	(void)state;
	pair_up(&p, NULL, 4, 2);
	reg(p.a, buf, sizeof(buf), ALL, &m);
	reg(p.b, buf, sizeof(buf), ALL, &m); /* same bytes, b's key for b's receives */
	s = (struct fab_sge){(uintptr_t)buf, 8, m.lkey};
	assert_int_equal(ft_post_recv1(p.qb, 1, &s, 1), 0);
	assert_int_equal(ft_post_recv1(p.qb, 2, &s, 1), 0);
	assert_int_equal(ft_post_recv1(p.qb, 3, &s, 1), -ENOMEM);
	{
		struct fab_mr ma;
		struct fab_sge sa;

		reg(p.a, buf + 32, 32, ALL, &ma);
		sa = (struct fab_sge){(uintptr_t)buf + 32, 4, ma.lkey};
		for (int i = 0; i < 3; i++)
			assert_int_equal(ft_post_send1(p.qa, 10 + i, FAB_WR_RDMA_WRITE, false, &sa, 1, (uintptr_t)buf, m.rkey), 0);
		assert_int_equal(ft_post_send1(p.qa, 13, FAB_WR_RDMA_WRITE, true, &sa, 1, (uintptr_t)buf, m.rkey), 0);
		/* all four executed, but their slots are held until the completion is polled */
		assert_int_equal(ft_post_send1(p.qa, 14, FAB_WR_RDMA_WRITE, true, &sa, 1, (uintptr_t)buf, m.rkey), -ENOMEM);
		ft_expect_wc(p.da, 2, 13, FAB_WC_SUCCESS, &wc);
		for (int i = 0; i < 4; i++)
			assert_int_equal(ft_post_send1(p.qa, 20 + i, FAB_WR_RDMA_WRITE, i == 3, &sa, 1, (uintptr_t)buf, m.rkey), 0);
		assert_int_equal(ft_post_send1(p.qa, 24, FAB_WR_RDMA_WRITE, true, &sa, 1, (uintptr_t)buf, m.rkey), -ENOMEM);
		ft_expect_wc(p.da, 2, 23, FAB_WC_SUCCESS, &wc);
	}
	pair_down(&p);
}

/* An RDMA with rkey @rkey at @raddr fails with a remote access error; the QP is in error: a later
 * WR is flushed, b's receive is flushed and both sides see DISCONNECTED. Canaries around b's
 * region stay intact. */
static void expect_rdma_refused(struct pair *p, enum fab_wr_opcode op, uint64_t raddr, uint32_t rkey, uint32_t len,
				char *canary_lo, char *canary_hi)
{
	static char src[8192];
	struct fab_mr ms, mr;
	char rbuf[16];
	struct fab_sge s = {(uintptr_t)src, len, 0}, r;
	struct fab_wc wc;
	struct fab_cm_event ev;

	memset(src, 0x5a, sizeof(src));
	reg(p->a, src, sizeof(src), ALL, &ms);
	s.lkey = ms.lkey;
	reg(p->b, rbuf, sizeof(rbuf), ALL, &mr);
	r = (struct fab_sge){(uintptr_t)rbuf, sizeof(rbuf), mr.lkey};
	assert_int_equal(ft_post_recv1(p->qb, 100, &r, 1), 0);
	assert_int_equal(ft_post_send1(p->qa, 1, op, false, &s, 1, raddr, rkey), 0);
	assert_int_equal(ft_post_send1(p->qa, 2, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	ft_expect_wc(p->da, 2, 1, FAB_WC_REM_ACCESS_ERR, &wc);
	ft_expect_wc(p->da, 2, 2, FAB_WC_WR_FLUSH_ERR, &wc);
	/* posting in the error state succeeds and flushes */
	assert_int_equal(ft_post_send1(p->qa, 3, FAB_WR_SEND, false, &s, 1, 0, 0), 0);
	ft_expect_wc(p->da, 2, 3, FAB_WC_WR_FLUSH_ERR, &wc);
	ft_expect_event(p->da, 2, FAB_CM_DISCONNECTED, &ev);
	ft_expect_wc(p->db, 2, 100, FAB_WC_WR_FLUSH_ERR, &wc);
	ft_expect_event(p->db, 2, FAB_CM_DISCONNECTED, &ev);
	for (int i = 0; canary_lo && i < 64; i++)
		assert_int_equal((unsigned char)canary_lo[i], 0xcc);
	for (int i = 0; canary_hi && i < 64; i++)
		assert_int_equal((unsigned char)canary_hi[i], 0xcc);
}

/* b's guarded 4 KiB: ordinary memory, or (the *_memfd runs) memory from mem_alloc, which a takes
 * through the mapped memfd */
#define GUARDED_LEN (64 + 4096 + 64)
static char guarded_plain[GUARDED_LEN];
static char *guarded = guarded_plain;

static void guard_init(void) { memset(guarded, 0xcc, GUARDED_LEN); }

static int plain_memory(void **state)
{
	(void)state;
	guarded = guarded_plain;
	return 0;
}

static int memfd_memory(void **state)
{
	(void)state;
	guarded = OPS->mem_alloc(4096, GUARDED_LEN);
	return guarded ? 0 : -1;
}

static int memfd_free(void **state)
{
	(void)state;
	OPS->mem_free(guarded, GUARDED_LEN);
	guarded = guarded_plain;
	return 0;
}

/* A fresh pair; b registers the guarded 4 KiB with @acc; a's RDMA at region offset @off (may be
 * negative) of @len bytes with b's rkey XOR @key_xor must be refused with the canaries intact. */
static void refused_case(enum fab_wr_opcode op, unsigned acc, int64_t off, uint32_t len, uint32_t key_xor)
{
	struct pair p;
	struct fab_mr m;

	guard_init();
	pair_up(&p, NULL, 8, 8);
	reg(p.b, guarded + 64, 4096, acc, &m);
	expect_rdma_refused(&p, op, m.addr + (uint64_t)off, m.rkey ^ key_xor, len, guarded, guarded + 64 + 4096);
	pair_down(&p);
}

static void test_rdma_past_end(void **state)
{
	(void)state;
	for (int op = FAB_WR_RDMA_WRITE; op <= FAB_WR_RDMA_READ; op++) {
		refused_case((enum fab_wr_opcode)op, ALL, 4096 - 8, 16, 0); /* 16 bytes from 8 before the end */
		refused_case((enum fab_wr_opcode)op, ALL, -1, 4, 0);        /* from before the start */
	}
}

static void test_bad_rkey(void **state)
{
	struct pair p;

	(void)state;
	refused_case(FAB_WR_RDMA_WRITE, ALL, 0, 16, 0x00ff0000u); /* another index */
	refused_case(FAB_WR_RDMA_READ, ALL, 0, 16, 0x00000001u);  /* another generation */
	pair_up(&p, NULL, 8, 8);
	expect_rdma_refused(&p, FAB_WR_RDMA_READ, (uintptr_t)guarded, 0, 16, NULL, NULL); /* key 0 */
	pair_down(&p);
	/* regions without the remote right */
	refused_case(FAB_WR_RDMA_WRITE, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_READ, 0, 16, 0);
	refused_case(FAB_WR_RDMA_READ, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE, 0, 16, 0);
}

static void test_deregistered_rkey(void **state)
{
	struct pair p;
	struct fab_mr m;

	(void)state;
	guard_init();
	pair_up(&p, NULL, 8, 8);
	reg(p.b, guarded + 64, 4096, ALL, &m);
	assert_int_equal(OPS->dereg_mr(p.b, &m), 0);
	assert_int_equal(OPS->dereg_mr(p.b, &m), -ENOENT);
	expect_rdma_refused(&p, FAB_WR_RDMA_WRITE, m.addr, m.rkey, 16, guarded + 64, NULL);
	pair_down(&p);
}

/* A key whose index was reused by a new registration (max_mr 3 forces reuse) is stale. */
static void test_stale_rkey(void **state)
{
	struct pair p;
	struct fab_limits lim;
	struct fab_mr m1, m2, mx, m3;
	struct ulnet_kv kv[] = {{"max_mr", "3"}};
	struct iovec r = {guarded, 8};

	(void)state;
	fab_limits_default(&lim);
	assert_int_equal(fab_limits_parse(kv, 1, &lim), 0);
	guard_init();
	pair_up(&p, &lim, 8, 8);
	reg(p.b, guarded + 64, 4096, ALL, &m1);
	reg(p.b, guarded + 64, 16, ALL, &m2);
	reg(p.b, guarded + 64, 16, ALL, &mx);
	assert_int_equal(OPS->reg_mr(p.b, &r, 1, ALL, &m3), -ENOSPC);
	assert_int_equal(OPS->dereg_mr(p.b, &m1), 0);
	reg(p.b, guarded + 64, 4096, ALL, &m3); /* same index as m1, next generation */
	assert_int_equal(m3.rkey >> 16, m1.rkey >> 16);
	assert_int_not_equal(m3.rkey, m1.rkey);
	assert_int_equal(OPS->dereg_mr(p.b, &mx), 0); /* room for the helper's receive buffer */
	expect_rdma_refused(&p, FAB_WR_RDMA_WRITE, m1.addr, m1.rkey, 16, guarded + 64, NULL);
	pair_down(&p);
}

static void test_connect_nobody(void **state)
{
	struct fab_dev *a;
	struct fab_cm_id *id;
	struct fab_qp *qp;
	struct fab_qp_attr attr = {4, 4};
	struct sockaddr_in aa = ft_addr(1, 0), nobody = ft_addr(9, 6999);
	struct fab_cm_event ev;
	char big[FAB_PRIVATE_DATA_MAX + 1] = {0};

	(void)state;
	assert_int_equal(ft_dev_open(&aa, NULL, &a), 0);
	assert_int_equal(OPS->create_id(a, NULL, &id), 0);
	assert_int_equal(OPS->connect(id, &nobody, NULL, 0, 1000), -EINVAL); /* no QP */
	assert_int_equal(OPS->create_qp(id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->connect(id, &nobody, big, sizeof(big), 1000), -EINVAL); /* 57 bytes */
	assert_int_equal(OPS->connect(id, &nobody, big, FAB_PRIVATE_DATA_MAX, 1000), 0);
	ft_expect_event(&a, 1, FAB_CM_UNREACHABLE, &ev);
	assert_int_equal(ev.status, -ECONNREFUSED);
	assert_ptr_equal(ev.id, id);
	OPS->dev_close(a);
}

/* Reject with private data; refuse and time-out faults. */
static void test_reject(void **state)
{
	struct fab_dev *d[2];
	struct fab_cm_id *l, *id;
	struct fab_qp *qp;
	struct fab_qp_attr attr = {4, 4};
	struct sockaddr_in aa = ft_addr(1, 0), ba = ft_addr(2, next_port++);
	struct fab_cm_event ev;
	uint8_t rej[FAB_PRIVATE_DATA_MAX];
	uint64_t t0;

	(void)state;
	for (size_t i = 0; i < sizeof(rej); i++)
		rej[i] = (uint8_t)(0xa0 + i);
	assert_int_equal(ft_dev_open(&aa, NULL, &d[0]), 0);
	assert_int_equal(ft_dev_open(&ba, NULL, &d[1]), 0);
	assert_int_equal(OPS->create_id(d[1], NULL, &l), 0);
	assert_int_equal(OPS->listen(l, &ba, 4), 0);
	assert_int_equal(OPS->create_id(d[0], (void *)7, &id), 0);
	assert_int_equal(OPS->create_qp(id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->connect(id, &ba, "x", 1, 5000), 0);
	{
		struct fab_dev *r[2] = {d[1], d[0]};

		ft_expect_event(r, 2, FAB_CM_CONNECT_REQUEST, &ev);
		assert_int_equal(OPS->reject(ev.id, rej, sizeof(rej)), 0);
		OPS->destroy_id(ev.id);
	}
	ft_expect_event(d, 2, FAB_CM_REJECTED, &ev);
	assert_ptr_equal(ev.context, (void *)7);
	assert_int_equal(ev.private_data_len, sizeof(rej));
	assert_memory_equal(ev.private_data, rej, sizeof(rej));
	OPS->destroy_id(id);

	/* provider refuses */
	fab_shm_faults(d[1])->refuse_connect = true;
	assert_int_equal(OPS->create_id(d[0], NULL, &id), 0);
	assert_int_equal(OPS->create_qp(id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->connect(id, &ba, NULL, 0, 5000), 0);
	ft_expect_event(d, 2, FAB_CM_REJECTED, &ev);
	assert_int_equal(ev.status, -ECONNREFUSED);
	assert_int_equal(ev.private_data_len, 0);
	OPS->destroy_id(id);

	/* provider never answers: TIMED_OUT after the timeout, not before */
	fab_shm_faults(d[1])->refuse_connect = false;
	fab_shm_faults(d[1])->timeout_connect = true;
	assert_int_equal(OPS->create_id(d[0], NULL, &id), 0);
	assert_int_equal(OPS->create_qp(id, &attr, NULL, &qp), 0);
	t0 = ft_now_ms();
	assert_int_equal(OPS->connect(id, &ba, NULL, 0, 300), 0);
	ft_expect_event(d, 2, FAB_CM_TIMED_OUT, &ev);
	assert_true(ft_now_ms() - t0 >= 300);
	assert_int_equal(ev.status, -ETIMEDOUT);
	OPS->dev_close(d[0]);
	OPS->dev_close(d[1]);
}

/* Disconnect: both sides DISCONNECTED, posted receives flushed; fab_shm_flush_qp flushes too. */
static void test_disconnect_flush(void **state)
{
	struct pair p;
	char buf[32];
	struct fab_mr m;
	struct fab_sge s;
	struct fab_wc wc;
	struct fab_cm_event ev;

	(void)state;
	pair_up(&p, NULL, 4, 4);
	reg(p.a, buf, sizeof(buf), ALL, &m);
	s = (struct fab_sge){(uintptr_t)buf, 16, m.lkey};
	assert_int_equal(ft_post_recv1(p.qa, 1, &s, 1), 0);
	assert_int_equal(ft_post_recv1(p.qa, 2, &s, 1), 0);
	fab_shm_flush_qp(p.qa);
	ft_expect_wc(p.da, 2, 1, FAB_WC_WR_FLUSH_ERR, &wc);
	ft_expect_wc(p.da, 2, 2, FAB_WC_WR_FLUSH_ERR, &wc);
	pair_down(&p);

	pair_up(&p, NULL, 4, 4);
	reg(p.b, buf, sizeof(buf), ALL, &m);
	s = (struct fab_sge){(uintptr_t)buf, 16, m.lkey};
	assert_int_equal(ft_post_recv1(p.qb, 3, &s, 1), 0);
	assert_int_equal(OPS->disconnect(p.ida), 0);
	assert_int_equal(OPS->disconnect(p.ida), 0);
	ft_expect_event(p.da, 2, FAB_CM_DISCONNECTED, &ev);
	ft_expect_event(p.db, 2, FAB_CM_DISCONNECTED, &ev);
	ft_expect_wc(p.db, 2, 3, FAB_WC_WR_FLUSH_ERR, &wc);
	assert_int_equal(OPS->get_event(p.a, &ev), -EAGAIN);
	pair_down(&p);
}

/* Fault injection: fail the Nth post, drop a completion, delay completions. */
static void test_faults(void **state)
{
	struct pair p;
	char buf[32];
	static char bb[32];
	struct fab_mr m, mb;
	struct fab_sge s;
	struct fab_wc wc;
	uint64_t t0;

	(void)state;
	pair_up(&p, NULL, 8, 8);
	reg(p.a, buf, sizeof(buf), ALL, &m);
	reg(p.b, bb, sizeof(bb), ALL, &mb);
	s = (struct fab_sge){(uintptr_t)buf, 4, m.lkey};
	fab_shm_faults(p.a)->fail_post_nth = 2;
	assert_int_equal(ft_post_send1(p.qa, 1, FAB_WR_RDMA_WRITE, true, &s, 1, mb.addr, mb.rkey), 0);
	assert_int_equal(ft_post_send1(p.qa, 2, FAB_WR_RDMA_WRITE, true, &s, 1, mb.addr, mb.rkey), -EIO);
	assert_int_equal(ft_post_send1(p.qa, 3, FAB_WR_RDMA_WRITE, true, &s, 1, mb.addr, mb.rkey), 0);
	ft_expect_wc(p.da, 2, 1, FAB_WC_SUCCESS, &wc);
	ft_expect_wc(p.da, 2, 3, FAB_WC_SUCCESS, &wc);
	fab_shm_faults(p.a)->drop_completion_nth = 1;
	assert_int_equal(ft_post_send1(p.qa, 4, FAB_WR_RDMA_WRITE, true, &s, 1, mb.addr, mb.rkey), 0);
	assert_int_equal(ft_post_send1(p.qa, 5, FAB_WR_RDMA_WRITE, true, &s, 1, mb.addr, mb.rkey), 0);
	ft_expect_wc(p.da, 2, 5, FAB_WC_SUCCESS, &wc); /* 4 was dropped */
	fab_shm_faults(p.a)->delay_completion_ms = 200;
	t0 = ft_now_ms();
	assert_int_equal(ft_post_send1(p.qa, 6, FAB_WR_RDMA_WRITE, true, &s, 1, mb.addr, mb.rkey), 0);
	assert_int_equal(OPS->poll_cq(p.a, &wc, 1), 0);
	ft_expect_wc(p.da, 2, 6, FAB_WC_SUCCESS, &wc);
	assert_true(ft_now_ms() - t0 >= 200);
	pair_down(&p);
}

/* Limits: QP depth, region size, message size. */
static void test_limits(void **state)
{
	struct pair p;
	struct fab_limits lim;
	struct ulnet_kv kv[] = {{"max_qp_wr", "16"}, {"max_msg_sz", "256"}, {"max_mr_size", "8192"}, {"max_qp", "3"}};
	static char buf[16384], rb[512];
	struct fab_mr m, mr;
	struct fab_sge s, r;
	struct fab_wc wc;
	struct fab_cm_id *id;
	struct fab_qp *qp;
	struct fab_qp_attr big = {17, 4}, ok = {16, 16};
	struct iovec rg = {buf, sizeof(buf)};

	(void)state;
	fab_limits_default(&lim);
	assert_int_equal(fab_limits_parse(kv, 4, &lim), 0);
	pair_up(&p, &lim, 16, 16);
	assert_int_equal(OPS->dev_limits(p.a)->max_qp_wr, 16);
	assert_int_equal(OPS->reg_mr(p.a, &rg, 1, ALL, &m), -E2BIG);
	assert_int_equal(OPS->create_id(p.a, NULL, &id), 0);
	assert_int_equal(OPS->create_qp(id, &big, NULL, &qp), -EINVAL);
	assert_int_equal(OPS->create_qp(id, &ok, NULL, &qp), 0);
	assert_int_equal(OPS->create_qp(id, &ok, NULL, &qp), -EEXIST);
	{
		struct fab_cm_id *id2, *id3;
		assert_int_equal(OPS->create_id(p.a, NULL, &id2), 0);
		assert_int_equal(OPS->create_qp(id2, &ok, NULL, &qp), 0); /* a: qa, id, id2 = 3 */
		assert_int_equal(OPS->create_id(p.a, NULL, &id3), 0);
		assert_int_equal(OPS->create_qp(id3, &ok, NULL, &qp), -ENOSPC);
	}
	reg(p.a, buf, 4096, ALL, &m);
	reg(p.b, rb, sizeof(rb), ALL, &mr);
	/* a SEND over max_msg_sz fails locally */
	s = (struct fab_sge){(uintptr_t)buf, 257, m.lkey};
	assert_int_equal(ft_post_send1(p.qa, 1, FAB_WR_SEND, false, &s, 1, 0, 0), 0);
	ft_expect_wc(p.da, 2, 1, FAB_WC_LOC_LEN_ERR, &wc);
	pair_down(&p);
	/* a SEND longer than the receive buffer: LOC_LEN_ERR on the receiver */
	pair_up(&p, &lim, 16, 16);
	reg(p.a, buf, 4096, ALL, &m);
	reg(p.b, rb, sizeof(rb), ALL, &mr);
	r = (struct fab_sge){(uintptr_t)rb, 8, mr.lkey};
	assert_int_equal(ft_post_recv1(p.qb, 9, &r, 1), 0);
	s = (struct fab_sge){(uintptr_t)buf, 100, m.lkey};
	assert_int_equal(ft_post_send1(p.qa, 2, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	ft_expect_wc(p.db, 2, 9, FAB_WC_LOC_LEN_ERR, &wc);
	/* a local SGE with a bad lkey */
	pair_down(&p);
	pair_up(&p, &lim, 16, 16);
	reg(p.a, buf, 4096, ALL, &m);
	s = (struct fab_sge){(uintptr_t)buf + 4000, 100, m.lkey};
	assert_int_equal(ft_post_send1(p.qa, 3, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	ft_expect_wc(p.da, 2, 3, FAB_WC_LOC_PROT_ERR, &wc);
	pair_down(&p);
}

/* Memory from mem_alloc: a's RDMA copies through the mapped memfd (the counters say so) with the
 * same checks: exact bytes, canaries intact, a region of two ranges of one memfd, and a key
 * refused at once after dereg although the memfd stays mapped; a region mixing a memfd and
 * ordinary memory goes through process_vm. */
static void test_memfd_mapped(void **state)
{
	const size_t len = 1 << 20;
	struct pair p;
	char *dst = OPS->mem_alloc(65536, len + 128), *src = malloc(len), *back = malloc(len), *plain = malloc(4096);
	struct fab_mr ms, mb, md, m2, mx;
	struct fab_sge s;
	struct fab_wc wc;
	struct iovec two[2] = {{dst + 64, 4096}, {dst + 64 + 8192, 4096}}, mixed[2] = {{dst + 64, 4096}, {plain, 4096}};
	const struct fab_shm_stats *st;

	(void)state;
	assert_non_null(dst);
	assert_int_equal((uintptr_t)dst % 65536, 0);
	pair_up(&p, NULL, 8, 8);
	st = fab_shm_stats(p.a);
	for (size_t i = 0; i < len; i++)
		src[i] = (char)(i * 13 + 5);
	memset(dst, 0xcc, len + 128);
	reg(p.a, src, len, ALL, &ms);
	reg(p.a, back, len, ALL, &mb);
	reg(p.b, dst + 64, len, ALL, &md);
	s = (struct fab_sge){(uintptr_t)src, (uint32_t)len - 100, ms.lkey};
	assert_int_equal(ft_post_send1(p.qa, 1, FAB_WR_RDMA_WRITE, true, &s, 1, md.addr + 100, md.rkey), 0);
	ft_expect_wc(p.da, 2, 1, FAB_WC_SUCCESS, &wc);
	assert_int_equal(wc.byte_len, len - 100);
	assert_memory_equal(dst + 64 + 100, src, len - 100);
	for (int i = 0; i < 64 + 100; i++)
		assert_int_equal((unsigned char)dst[i], 0xcc);
	for (int i = 0; i < 64; i++)
		assert_int_equal((unsigned char)dst[64 + len + i], 0xcc);
	s = (struct fab_sge){(uintptr_t)back, (uint32_t)len - 100, mb.lkey};
	assert_int_equal(ft_post_send1(p.qa, 2, FAB_WR_RDMA_READ, true, &s, 1, md.addr + 100, md.rkey), 0);
	ft_expect_wc(p.da, 2, 2, FAB_WC_SUCCESS, &wc);
	assert_memory_equal(back, src, len - 100);
	assert_int_equal(st->rdma_mapped, 2);
	assert_int_equal(st->rdma_process_vm, 0);
	/* two ranges of one memfd: 200 bytes at region offset 4000 land 96 + 104 */
	memset(dst, 0, len);
	assert_int_equal(OPS->reg_mr(p.b, two, 2, ALL, &m2), 0);
	s = (struct fab_sge){(uintptr_t)src, 200, ms.lkey};
	assert_int_equal(ft_post_send1(p.qa, 3, FAB_WR_RDMA_WRITE, true, &s, 1, m2.addr + 4000, m2.rkey), 0);
	ft_expect_wc(p.da, 2, 3, FAB_WC_SUCCESS, &wc);
	assert_memory_equal(dst + 64 + 4000, src, 96);
	assert_memory_equal(dst + 64 + 8192, src + 96, 104);
	assert_int_equal(dst[64 + 4096], 0);
	assert_int_equal(st->rdma_mapped, 3);
	/* a region over a memfd and ordinary memory: process_vm */
	assert_int_equal(OPS->reg_mr(p.b, mixed, 2, ALL, &mx), 0);
	assert_int_equal(ft_post_send1(p.qa, 4, FAB_WR_RDMA_WRITE, true, &s, 1, mx.addr + 4000, mx.rkey), 0);
	ft_expect_wc(p.da, 2, 4, FAB_WC_SUCCESS, &wc);
	assert_memory_equal(plain, src + 96, 104);
	assert_int_equal(st->rdma_mapped, 3);
	assert_int_equal(st->rdma_process_vm, 1);
	/* deregistered: refused at once although a still maps the memfd; not a byte written */
	memset(dst, 0x11, len + 128);
	assert_int_equal(OPS->dereg_mr(p.b, &md), 0);
	s = (struct fab_sge){(uintptr_t)src, 4096, ms.lkey};
	assert_int_equal(ft_post_send1(p.qa, 5, FAB_WR_RDMA_WRITE, true, &s, 1, md.addr, md.rkey), 0);
	ft_expect_wc(p.da, 2, 5, FAB_WC_REM_ACCESS_ERR, &wc);
	for (size_t i = 0; i < len + 128; i++)
		if (dst[i] != 0x11)
			fail_msg("byte %zu of the deregistered memfd region changed", i);
	pair_down(&p);
	OPS->mem_free(dst, len + 128);
	free(src), free(back), free(plain);
}

/* SENDs through the ring (without a copy thread; with one, through the socket): posted with no
 * receive waiting they fill the ring and wait (RNR), then arrive whole and in order as receives are
 * posted, round the ring several times. */
static void test_ring_flow(void **state)
{
	enum { N = 40, LEN = 5000, ROUNDS = 4 };
	struct pair p;
	static uint8_t src[N * LEN], dst[N * LEN];
	struct fab_mr ms, md;
	struct fab_sge s, r;
	struct fab_wc wc;
	bool sending;
	int sent = 0;

	(void)state;
	pair_up(&p, NULL, N, N);
	assert_non_null(fab_shm_qp_rings(p.qa, &sending));
	assert_true(sending == !ft_copy_thread);
	reg(p.a, src, sizeof(src), ALL, &ms);
	reg(p.b, dst, sizeof(dst), ALL, &md);
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < N; i++) {
			memset(src + i * LEN, round * N + i, LEN);
			s = (struct fab_sge){(uintptr_t)src + (size_t)i * LEN, LEN - (uint32_t)i, ms.lkey};
			assert_int_equal(ft_post_send1(p.qa, (uint64_t)i, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
		}
		/* (no receive yet: what fits waits in the ring, the rest in the send queue) */
		for (int k = 0; k < 5; k++)
			ft_pump(p.da, 2, 0);
		sent = 0;
		while (OPS->poll_cq(p.a, &wc, 1) == 1)
			sent++;
		assert_true(sent <= N);
		if (!ft_copy_thread)
			assert_true(sent < N && sent <= (int)(SHM_RING_BYTES / shm_ring_need(LEN - N)));
		for (int i = 0; i < N; i++) {
			r = (struct fab_sge){(uintptr_t)dst + (size_t)i * LEN, LEN, md.lkey};
			assert_int_equal(ft_post_recv1(p.qb, 100 + (uint64_t)i, &r, 1), 0);
		}
		for (int i = 0; i < N; i++) {
			ft_expect_wc(p.db, 2, 100 + (uint64_t)i, FAB_WC_SUCCESS, &wc);
			assert_int_equal(wc.byte_len, LEN - i);
			assert_memory_equal(dst + (size_t)i * LEN, src + (size_t)i * LEN, LEN - (size_t)i);
		}
		for (; sent < N; sent++)
			ft_expect_wc(p.da, 2, (uint64_t)sent, FAB_WC_SUCCESS, &wc);
	}
	pair_down(&p);
}

/* A pair whose SENDs go through the rings (skipped with a copy thread: they go over the socket),
 * buf[0, 128) registered on a, buf[128, 256) on b. The connection's ring mapping. */
static uint8_t *ring_pair_up(struct pair *p, uint8_t *buf, struct fab_mr *ma, struct fab_mr *mb)
{
	bool sending;
	uint8_t *map;

	if (ft_copy_thread)
		skip();
	pair_up(p, NULL, 4, 4);
	map = fab_shm_qp_rings(p->qa, &sending);
	assert_non_null(map);
	assert_true(sending);
	reg(p->a, buf, 128, ALL, ma);
	reg(p->b, buf + 128, 128, ALL, mb);
	return map;
}

/* A peer that scribbles on the ring: a record header it rewrote, or the consumer index of a ring it
 * reads, closes that QP (one log line, DISCONNECTED on both sides), never an overrun. */
static void test_ring_scribble(void **state)
{
	struct pair p;
	uint8_t buf[256] = "ring", *map;
	struct fab_mr ma, mb;
	struct fab_sge s;
	struct fab_wc wc;
	struct fab_cm_event ev;

	(void)state;
	map = ring_pair_up(&p, buf, &ma, &mb);
	s = (struct fab_sge){(uintptr_t)buf, 16, ma.lkey};
	assert_int_equal(ft_post_send1(p.qa, 1, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	ft_expect_wc(p.da, 2, 1, FAB_WC_SUCCESS, &wc);
	map[SHM_RING_CTL_LEN] = 200; /* connector -> acceptor: the record's length, past what was put */
	s = (struct fab_sge){(uintptr_t)buf + 128, 128, mb.lkey};
	assert_int_equal(ft_post_recv1(p.qb, 2, &s, 1), 0);
	ft_expect_event(p.db, 2, FAB_CM_DISCONNECTED, &ev);
	assert_int_equal(ev.status, -EPROTO);
	ft_expect_wc(p.db, 2, 2, FAB_WC_WR_FLUSH_ERR, &wc);
	ft_expect_event(p.da, 2, FAB_CM_DISCONNECTED, &ev);
	pair_down(&p);

	map = ring_pair_up(&p, buf, &ma, &mb);
	/* acceptor -> connector: the consumer's tail moved past the head */
	atomic_store(&((struct shm_ring_ctl *)map)[1].tail, 4096);
	s = (struct fab_sge){(uintptr_t)buf + 128, 16, mb.lkey};
	assert_int_equal(ft_post_send1(p.qb, 3, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	ft_expect_wc(p.db, 2, 3, FAB_WC_RETRY_EXC_ERR, &wc);
	ft_expect_event(p.db, 2, FAB_CM_DISCONNECTED, &ev);
	ft_expect_event(p.da, 2, FAB_CM_DISCONNECTED, &ev);
	pair_down(&p);
}

/* A producer may take the consumer's sleep flag late (for a record the consumer found on its own
 * since) and ring: the consumer, woken with nothing new, must say again that it sleeps, or the
 * next SEND would wait for ever. Played here: the flag cleared by hand while that doorbell waits. */
static void test_ring_stolen_sleep(void **state)
{
	struct pair p;
	uint8_t buf[256] = "ring", *map;
	struct fab_mr ma, mb;
	struct fab_sge s, r;
	struct fab_wc wc;

	(void)state;
	map = ring_pair_up(&p, buf, &ma, &mb);
	r = (struct fab_sge){(uintptr_t)buf + 128, 64, mb.lkey};
	assert_int_equal(ft_post_recv1(p.qb, 1, &r, 1), 0);
	assert_int_equal(ft_post_recv1(p.qb, 2, &r, 1), 0);
	s = (struct fab_sge){(uintptr_t)buf, 16, ma.lkey};
	assert_int_equal(ft_post_send1(p.qa, 3, FAB_WR_SEND, true, &s, 1, 0, 0), 0); /* rings b */
	assert_int_equal(ft_post_recv1(p.qb, 4, &r, 1), 0); /* b finds the record itself, sleeps again */
	assert_int_equal(OPS->poll_cq(p.b, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 1);
	atomic_store(&((struct shm_ring_ctl *)map)[0].sleeping, 0); /* the late taker */
	ft_pump(p.db, 2, 0); /* b wakes on the doorbell, nothing new */
	assert_int_equal(ft_post_send1(p.qa, 5, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	ft_expect_wc(p.db, 2, 2, FAB_WC_SUCCESS, &wc);
	pair_down(&p);
}

/* A peer that closed the connection (alive: its life word says so) is seen at once by an RDMA into
 * its mapped memory, before our progress reads the socket's end: the rings' closed flag. */
static void test_peer_closed_rdma(void **state)
{
	const size_t len = 4096;
	struct pair p;
	char *dst = OPS->mem_alloc(4096, len), *src = malloc(len);
	struct fab_mr ms, md;
	struct fab_sge s;
	struct fab_wc wc;
	struct fab_cm_event ev;

	(void)state;
	assert_non_null(dst);
	pair_up(&p, NULL, 8, 8);
	reg(p.a, src, len, ALL, &ms);
	reg(p.b, dst, len, ALL, &md);
	s = (struct fab_sge){(uintptr_t)src, (uint32_t)len, ms.lkey};
	assert_int_equal(ft_post_send1(p.qa, 1, FAB_WR_RDMA_WRITE, true, &s, 1, md.addr, md.rkey), 0);
	ft_expect_wc(p.da, 2, 1, FAB_WC_SUCCESS, &wc);
	assert_int_equal(OPS->disconnect(p.idb), 0);
	assert_int_equal(ft_post_send1(p.qa, 2, FAB_WR_RDMA_WRITE, true, &s, 1, md.addr, md.rkey), 0);
	if (ft_copy_thread) { /* the copy thread may run it after our progress read the socket's end */
		ft_wc(p.da, 2, &wc);
		assert_true(wc.status == FAB_WC_RETRY_EXC_ERR || wc.status == FAB_WC_WR_FLUSH_ERR);
	} else {
		ft_expect_wc(p.da, 2, 2, FAB_WC_RETRY_EXC_ERR, &wc);
		assert_int_equal(fab_shm_stats(p.a)->rdma_mapped, 2);
	}
	ft_expect_event(p.da, 2, FAB_CM_DISCONNECTED, &ev);
	pair_down(&p);
	OPS->mem_free(dst, len);
	free(src);
}

/* Busy polling (fab poll/arm): while the receiver polls, a ring SEND reaches it and the sender's
 * completion reaches the sender with no doorbell written and no eventfd raised (both polled); once
 * the receiver arms (about to sleep), the next SEND rings its doorbell and its fd is readable. arm
 * says so when something waits already. */
static void test_busy_poll_arm(void **state)
{
	struct pair p;
	uint8_t buf[256] = "busy", *map;
	struct fab_mr ma, mb;
	struct fab_sge s, r;
	struct fab_wc wc;
	struct pollfd pf;
	uint64_t bells, raises_a, raises_b;

	(void)state;
	map = ring_pair_up(&p, buf, &ma, &mb);
	(void)map;
	assert_non_null(OPS->poll);
	assert_non_null(OPS->arm);
	r = (struct fab_sge){(uintptr_t)buf + 128, 64, mb.lkey};
	for (int i = 0; i < 3; i++)
		assert_int_equal(ft_post_recv1(p.qb, 10 + (uint64_t)i, &r, 1), 0);
	/* drain what the handshake left, then both owners poll */
	while (OPS->poll_cq(p.a, &wc, 1) || OPS->poll_cq(p.b, &wc, 1))
		;
	assert_false(OPS->poll(p.a));
	assert_false(OPS->poll(p.b));
	bells = fab_shm_stats(p.a)->doorbells;
	raises_a = fab_shm_stats(p.a)->evfd_raises;
	raises_b = fab_shm_stats(p.b)->evfd_raises;
	s = (struct fab_sge){(uintptr_t)buf, 16, ma.lkey};
	assert_int_equal(ft_post_send1(p.qa, 1, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	assert_true(OPS->poll(p.a)); /* the SEND's completion */
	assert_int_equal(OPS->poll_cq(p.a, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_true(OPS->poll(p.b)); /* the ring's record, delivered by poll */
	assert_int_equal(OPS->poll_cq(p.b, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 10);
	assert_int_equal(wc.byte_len, 16);
	assert_memory_equal(buf + 128, "busy", 5);
	assert_false(OPS->poll(p.b));
	assert_int_equal(fab_shm_stats(p.a)->doorbells, bells);
	assert_int_equal(fab_shm_stats(p.a)->evfd_raises, raises_a);
	assert_int_equal(fab_shm_stats(p.b)->evfd_raises, raises_b);
	pf = (struct pollfd){.fd = OPS->dev_fd(p.b), .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 0), 0);

	/* b about to sleep: the next SEND rings it */
	assert_false(OPS->arm(p.b));
	assert_int_equal(ft_post_send1(p.qa, 2, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	assert_int_equal(fab_shm_stats(p.a)->doorbells, bells + 1);
	assert_int_equal(poll(&pf, 1, WAIT_MS), 1);
	ft_expect_wc(p.db, 2, 11, FAB_WC_SUCCESS, &wc);
	/* woken by the doorbell, the running owner found the completion itself: no eventfd write */
	assert_int_equal(fab_shm_stats(p.b)->evfd_raises, raises_b);
	assert_int_equal(OPS->poll_cq(p.a, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 2);

	/* arm with a record already waiting (b polled, so no doorbell): refused, the owner polls */
	assert_false(OPS->poll(p.b));
	assert_int_equal(ft_post_send1(p.qa, 3, FAB_WR_SEND, true, &s, 1, 0, 0), 0);
	assert_int_equal(fab_shm_stats(p.a)->doorbells, bells + 1);
	assert_true(OPS->arm(p.b));
	assert_true(OPS->poll(p.b));
	assert_int_equal(OPS->poll_cq(p.b, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 12);
	/* and with a completion waiting */
	assert_true(OPS->arm(p.a));
	pair_down(&p);
}

int main(int argc, char **argv)
{
	ft_args(argc, argv);
	next_port = ft_port_base();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_recv),
		cmocka_unit_test(test_rdma_write_read),
		cmocka_unit_test(test_too_many_sges),
		cmocka_unit_test(test_queue_full),
		cmocka_unit_test_setup(test_rdma_past_end, plain_memory),
		cmocka_unit_test_setup(test_bad_rkey, plain_memory),
		cmocka_unit_test_setup(test_deregistered_rkey, plain_memory),
		cmocka_unit_test_setup(test_stale_rkey, plain_memory),
		{"test_rdma_past_end_memfd", test_rdma_past_end, memfd_memory, memfd_free, NULL},
		{"test_bad_rkey_memfd", test_bad_rkey, memfd_memory, memfd_free, NULL},
		{"test_deregistered_rkey_memfd", test_deregistered_rkey, memfd_memory, memfd_free, NULL},
		{"test_stale_rkey_memfd", test_stale_rkey, memfd_memory, memfd_free, NULL},
		cmocka_unit_test(test_memfd_mapped),
		cmocka_unit_test(test_connect_nobody),
		cmocka_unit_test(test_reject),
		cmocka_unit_test(test_disconnect_flush),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_ring_flow),
		cmocka_unit_test(test_ring_scribble),
		cmocka_unit_test(test_ring_stolen_sleep),
		cmocka_unit_test(test_busy_poll_arm),
		cmocka_unit_test(test_peer_closed_rdma),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
