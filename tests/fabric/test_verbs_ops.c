/* SPDX-License-Identifier: MIT */
/* The verbs provider on a real RDMA device (Soft-RoCE in the VM lane, or any HCA): one device, a
 * connection to itself over its own address, and the fabric contract's operations and errors.
 * The address: $ULNET_VERBS_ADDR, else the first IPv4 address an RDMA port serves; none: skipped
 * (exit 77), as on a host without RDMA. --list prints the tests' names and runs none (the VM lane
 * counts them). */
#include <errno.h>
#include <stdlib.h>
#define OPS (&fab_verbs_ops)
#include "fab_test.h"

static struct sockaddr_in me;
static int port = 20987;

struct conn {
	struct fab_dev *dev;
	struct fab_cm_id *lid, *ida, *idb;
	struct fab_qp *qa, *qb;
};

static void conn_up(struct conn *c, uint32_t depth)
{
	struct fab_qp_attr attr = {.max_send_wr = depth, .max_recv_wr = depth};
	struct sockaddr_in dst = me;
	uint8_t req[FAB_PRIVATE_DATA_MAX], ack[FAB_PRIVATE_DATA_MAX];
	struct fab_cm_event ev;

	for (unsigned i = 0; i < sizeof(req); i++) {
		req[i] = (uint8_t)(i + 1);
		ack[i] = (uint8_t)(0xff - i);
	}
	dst.sin_port = htons((uint16_t)++port);
	assert_int_equal(OPS->dev_open(&me, NULL, &c->dev), 0);
	assert_int_equal(OPS->create_id(c->dev, (void *)0xb, &c->lid), 0);
	assert_int_equal(OPS->listen(c->lid, &dst, 8), 0);
	assert_int_equal(OPS->create_id(c->dev, (void *)0xa, &c->ida), 0);
	assert_int_equal(OPS->create_qp(c->ida, &attr, (void *)0x1a, &c->qa), 0);
	assert_int_equal(OPS->connect(c->ida, &dst, req, sizeof(req), 5000), 0);
	ft_expect_event(&c->dev, 1, FAB_CM_CONNECT_REQUEST, &ev);
	assert_ptr_equal(ev.listen_id, c->lid);
	assert_int_equal(ev.private_data_len, FAB_PRIVATE_DATA_MAX); /* all 56 bytes, exactly */
	assert_memory_equal(ev.private_data, req, sizeof(req));
	c->idb = ev.id;
	OPS->set_context(c->idb, (void *)0xbb);
	assert_int_equal(OPS->create_qp(c->idb, &attr, (void *)0x1b, &c->qb), 0);
	assert_int_equal(OPS->accept(c->idb, ack, sizeof(ack)), 0);
	for (int n = 0; n < 2; n++) { /* both ends, in either order */
		ft_expect_event(&c->dev, 1, FAB_CM_ESTABLISHED, &ev);
		if (ev.id == c->ida)
			assert_memory_equal(ev.private_data, ack, sizeof(ack));
		else
			assert_ptr_equal(ev.context, (void *)0xbb);
	}
}

/* The next completion of the active end (the passive end's, e.g. its own error, are passed over). */
static void qa_wc(struct conn *c, struct fab_wc *wc)
{
	do
		ft_wc(&c->dev, 1, wc);
	while (wc->qp != c->qa);
}

static void test_limits(void **state)
{
	struct fab_limits lim;
	struct ulnet_kv kv[] = {{"max_send_sge", "1"}, {"max_qp_wr", "4"}};
	struct fab_dev *dev;
	const struct fab_limits *in;
	struct sockaddr_in lo = {.sin_family = AF_INET};

	(void)state;
	fab_limits_default(&lim);
	assert_int_equal(fab_limits_parse(kv, 2, &lim), 0);
	assert_int_equal(OPS->dev_open(&me, &lim, &dev), 0);
	in = OPS->dev_limits(dev);
	assert_int_equal(in->max_send_sge, 1);
	assert_int_equal(in->max_qp_wr, 4);
	assert_int_equal(in->page_size, (uint32_t)sysconf(_SC_PAGESIZE)); /* the kernel's, 65536 on ppc64le */
	OPS->dev_close(dev);
	fab_limits_default(&lim);
	lim.max_qp_wr = 1u << 31; /* more than any device has: refused, naming the cap */
	assert_int_equal(OPS->dev_open(&me, &lim, &dev), -EINVAL);
	/* an address no RDMA device serves (loopback): refused, the devices listed in the log line */
	inet_pton(AF_INET, "127.0.0.1", &lo.sin_addr);
	assert_true(OPS->dev_open(&lo, NULL, &dev) < 0);
}

static void test_send_write_errors(void **state)
{
	struct conn c;
	static char src[8192], dst[8192], rx[4096];
	struct fab_mr msrc, mdst, mrx;
	struct iovec r;
	struct fab_sge s1 = {0}, s2[40], srx;
	struct fab_wc wc;
	const struct fab_send_wr *bad;
	struct fab_send_wr wrs[5];

	(void)state;
	conn_up(&c, 4);
	r = (struct iovec){src, sizeof(src)};
	assert_int_equal(OPS->reg_mr(c.dev, &r, 1, FAB_ACCESS_LOCAL_WRITE, &msrc), 0);
	r = (struct iovec){dst, sizeof(dst)};
	assert_int_equal(OPS->reg_mr(c.dev, &r, 1, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE, &mdst), 0);
	r = (struct iovec){rx, sizeof(rx)};
	assert_int_equal(OPS->reg_mr(c.dev, &r, 1, FAB_ACCESS_LOCAL_WRITE, &mrx), 0);
	memset(src, 0x5a, sizeof(src));
	/* RDMA WRITE then SEND: RC order, the data is there when the SEND arrives */
	srx = (struct fab_sge){(uintptr_t)rx, sizeof(rx), mrx.lkey};
	assert_int_equal(ft_post_recv1(c.qb, 7, &srx, 1), 0);
	s1 = (struct fab_sge){(uintptr_t)src, 5000, msrc.lkey};
	assert_int_equal(ft_post_send1(c.qa, 1, FAB_WR_RDMA_WRITE, false, &s1, 1, mdst.addr + 100, mdst.rkey), 0);
	s1.length = 100;
	assert_int_equal(ft_post_send1(c.qa, 2, FAB_WR_SEND, true, &s1, 1, 0, 0), 0);
	for (int n = 0; n < 2; n++) { /* one device: the two ends' completions in either order */
		ft_wc(&c.dev, 1, &wc);
		assert_int_equal(wc.status, FAB_WC_SUCCESS);
		if (wc.qp == c.qa) {
			assert_int_equal(wc.wr_id, 2);
			assert_int_equal(wc.opcode, FAB_WC_SEND);
			assert_ptr_equal(wc.qp_context, (void *)0x1a);
		} else {
			assert_int_equal(wc.wr_id, 7);
			assert_int_equal(wc.opcode, FAB_WC_RECV);
			assert_int_equal(wc.byte_len, 100);
		}
	}
	assert_memory_equal(dst + 100, src, 5000);
	assert_int_equal(dst[99], 0);
	assert_int_equal(dst[5100], 0);
	/* the fabric's limits, exactly: SGEs over max_send_sge, then a full send queue */
	for (int i = 0; i < 40; i++)
		s2[i] = (struct fab_sge){(uintptr_t)src + (unsigned)i, 1, msrc.lkey};
	assert_int_equal(ft_post_send1(c.qa, 3, FAB_WR_SEND, true, s2, OPS->dev_limits(c.dev)->max_send_sge + 1, 0, 0),
			 -EINVAL);
	for (int i = 0; i < 5; i++)
		wrs[i] = (struct fab_send_wr){.next = i < 4 ? &wrs[i + 1] : NULL, .wr_id = 10 + (unsigned)i,
					      .opcode = FAB_WR_RDMA_WRITE, .signaled = i == 3, .sg_list = &s1,
					      .num_sge = 1, .remote_addr = mdst.addr, .rkey = mdst.rkey};
	assert_int_equal(OPS->post_send(c.qa, wrs, &bad), -ENOMEM); /* depth 4: the fifth does not fit */
	assert_ptr_equal(bad, &wrs[4]);
	qa_wc(&c, &wc); /* the signalled fourth frees the four slots */
	assert_int_equal(wc.wr_id, 13);
	assert_int_equal(wc.status, FAB_WC_SUCCESS);
	/* RDMA READ: o2iblnd's CM parameters (responder_resources = initiator_depth = 0, lnet-wire.md
	 * §2.5.5) leave the peer no resources to answer one, so it is refused at post, never posted */
	wrs[0] = (struct fab_send_wr){.wr_id = 15, .opcode = FAB_WR_RDMA_READ, .signaled = true, .sg_list = &s1,
				      .num_sge = 1, .remote_addr = mdst.addr, .rkey = mdst.rkey};
	assert_int_equal(OPS->post_send(c.qa, wrs, &bad), -EOPNOTSUPP);
	assert_ptr_equal(bad, &wrs[0]);
	/* a deregistered rkey: remote access error, then the QP flushes what follows */
	assert_int_equal(OPS->dereg_mr(c.dev, &mdst), 0);
	assert_int_equal(OPS->dereg_mr(c.dev, &mdst), -ENOENT);
	assert_int_equal(ft_post_send1(c.qa, 20, FAB_WR_RDMA_WRITE, true, &s1, 1, mdst.addr, mdst.rkey), 0);
	assert_int_equal(ft_post_send1(c.qa, 21, FAB_WR_SEND, true, &s1, 1, 0, 0), 0);
	qa_wc(&c, &wc);
	assert_int_equal(wc.wr_id, 20);
	assert_int_equal(wc.status, FAB_WC_REM_ACCESS_ERR);
	qa_wc(&c, &wc);
	assert_int_equal(wc.wr_id, 21);
	assert_int_equal(wc.status, FAB_WC_WR_FLUSH_ERR);
	OPS->dev_close(c.dev);
}

static void test_reject_unreachable_disconnect(void **state)
{
	struct conn c;
	struct fab_qp_attr attr = {.max_send_wr = 2, .max_recv_wr = 2};
	struct sockaddr_in dst = me;
	struct fab_cm_id *id;
	struct fab_qp *qp;
	struct fab_cm_event ev;
	int seen = 0;

	(void)state;
	conn_up(&c, 2);
	/* a second connection, from a privileged source port (root in the VM), rejected with private
	 * data the active side receives */
	dst.sin_port = htons((uint16_t)port);
	assert_int_equal(OPS->create_id(c.dev, (void *)0xc, &id), 0);
	assert_int_equal(OPS->bind_src(id, true), 0);
	assert_int_equal(OPS->create_qp(id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->connect(id, &dst, "req", 3, 5000), 0);
	ft_expect_event(&c.dev, 1, FAB_CM_CONNECT_REQUEST, &ev);
	assert_in_range(ntohs(ev.peer.sin_port), 512, 1023);
	assert_int_equal(OPS->reject(ev.id, "no-thanks", 9), 0);
	OPS->destroy_id(ev.id);
	ft_expect_event(&c.dev, 1, FAB_CM_REJECTED, &ev);
	assert_ptr_equal(ev.id, id);
	assert_memory_equal(ev.private_data, "no-thanks", 9);
	OPS->destroy_id(id);
	/* nobody listens on that port: unreachable */
	dst.sin_port = htons(4);
	assert_int_equal(OPS->create_id(c.dev, (void *)0xd, &id), 0);
	assert_int_equal(OPS->create_qp(id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->connect(id, &dst, NULL, 0, 5000), 0);
	ft_expect_event(&c.dev, 1, FAB_CM_UNREACHABLE, &ev);
	assert_ptr_equal(ev.id, id);
	OPS->destroy_id(id);
	/* an address nobody answers (no ARP reply): the attempt ends by the connect timeout */
	inet_pton(AF_INET, getenv("ULNET_VERBS_ABSENT") ? getenv("ULNET_VERBS_ABSENT") : "192.168.77.99", &dst.sin_addr);
	assert_int_equal(OPS->create_id(c.dev, (void *)0xe, &id), 0);
	assert_int_equal(OPS->create_qp(id, &attr, NULL, &qp), 0);
	assert_int_equal(OPS->connect(id, &dst, NULL, 0, 1000), 0);
	ft_event(&c.dev, 1, &ev);
	assert_ptr_equal(ev.id, id);
	if (ev.type != FAB_CM_TIMED_OUT && ev.type != FAB_CM_UNREACHABLE)
		fail_msg("connect to nobody: %s", fab_cm_event_str(ev.type));
	assert_true(ev.status < 0);
	OPS->destroy_id(id);
	/* disconnect: both ends hear it once */
	assert_int_equal(OPS->disconnect(c.ida), 0);
	while (seen != 3) {
		ft_expect_event(&c.dev, 1, FAB_CM_DISCONNECTED, &ev);
		seen |= ev.id == c.ida ? 1 : ev.id == c.idb ? 2 : 0;
	}
	OPS->dev_close(c.dev);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_send_write_errors),
		cmocka_unit_test(test_reject_unreachable_disconnect),
	};
	const char *env = getenv("ULNET_VERBS_ADDR");
	struct fab_rdma_scan scan;

	if (argc == 2 && !strcmp(argv[1], "--list")) { /* the tests' names, one a line: the VM lane counts them */
		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			printf("%s\n", tests[i].name);
		return 0;
	}

	me.sin_family = AF_INET;
	if (env) {
		if (inet_pton(AF_INET, env, &me.sin_addr) != 1)
			return fprintf(stderr, "ULNET_VERBS_ADDR %s: not an IPv4 address\n", env), 1;
	} else {
		fab_rdma_scan(&scan);
		for (size_t i = 0; i < scan.nifs && !me.sin_addr.s_addr; i++)
			if (fab_rdma_port_for_addr(&scan, scan.ifs[i].addr) >= 0)
				me.sin_addr = scan.ifs[i].addr;
		if (!me.sin_addr.s_addr) {
			printf("skip: no RDMA device serves an IPv4 address here (set ULNET_VERBS_ADDR)\n");
			return 77;
		}
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
