/* SPDX-License-Identifier: MIT */
/* An o2ib node (127.253.0.1@o2ib, shm provider) against a raw fabric peer (127.253.0.9) that
 * connects with a valid CONNREQ and then sends one bad kib_msg: a wrong dstnid, a wrong dststamp, a
 * wrong srcstamp, credits beyond the queue depth, an unknown type, a PUT_DONE / GET_DONE / PUT_ACK
 * naming a cookie nobody waits for, a message shorter than its header. Each must close that
 * connection (the raw peer sees DISCONNECTED) with exactly one O2IB error line, and a second node
 * (127.253.0.2@o2ib) must still ping the node afterwards. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "ulnet/ulnet.h"
#include "fabric.h"
#include "lnd/o2ib/o2ib_wire.h"

#define A_NID "127.253.0.1@o2ib"
#define B_NID "127.253.0.2@o2ib"
#define RAW_ADDR "127.253.0.9"

static atomic_int o2ib_errors;

static void count_sink(int level, const char *subsys, const char *line)
{
	if (getenv("ULNET_TEST_LOG"))
		fprintf(stderr, "%d %s: %s\n", level, subsys, line);
	if (level == 0 && !strcmp(subsys, "O2IB"))
		atomic_fetch_add(&o2ib_errors, 1);
}

static ulnet_node *node_up(const char *nid)
{
	const struct ulnet_kv lt[] = { { "provider", "shm" }, { "timeout", "5" } };
	struct ulnet_ni_conf conf = { .net = "o2ib", .nid = nid, .lnd_tunables = lt, .n_lnd_tunables = 2 };
	struct ulnet_node_opts opts = { .page_size = 4096 };
	ulnet_node *n;

	assert_int_equal(ulnet_node_open(&opts, &n), 0);
	assert_int_equal(ulnet_ni_add(n, &conf), 0);
	return n;
}

static uint64_t nid4(const char *s)
{
	struct ulnet_nid nid;

	assert_int_equal(ulnet_nid_parse(s, &nid, NULL), 0);
	return ulnet_nid_to_nid4(&nid);
}

/* Wait up to 5 s for a CM event of @type on @dev, reading completions as a real peer would (without
 * that, the DISCONNECTED event was missed in some runs). */
static void wait_event(const struct fab_provider_ops *f, struct fab_dev *dev, enum fab_cm_event_type type,
		       struct fab_cm_event *ev)
{
	struct pollfd p = { .fd = f->dev_fd(dev), .events = POLLIN };
	const char *seen = "none";
	struct fab_wc wc[8];

	for (int i = 0; i < 500; i++) {
		f->progress(dev);
		while (f->poll_cq(dev, wc, 8) > 0)
			;
		while (f->get_event(dev, ev) == 0) {
			if (ev->type == type)
				return;
			seen = fab_cm_event_str(ev->type);
		}
		poll(&p, 1, 10);
	}
	fail_msg("no %s event within 5 s (last seen: %s)", fab_cm_event_str(type), seen);
}

enum bad { BAD_DSTNID, BAD_DSTSTAMP, BAD_SRCSTAMP, BAD_CREDITS, BAD_TYPE, BAD_PUT_DONE, BAD_GET_DONE,
	   BAD_PUT_ACK, BAD_SHORT, BAD_N };
static const char *const bad_name[] = { "dstnid", "dststamp", "srcstamp", "credits", "type", "PUT_DONE cookie",
					"GET_DONE cookie", "PUT_ACK cookie", "short" };

/* Connect as a raw peer, send one bad message, expect the node to disconnect. */
static void raw_session(enum bad bad)
{
	const struct fab_provider_ops *f = &fab_shm_ops;
	struct sockaddr_in me = { .sin_family = AF_INET }, node = { .sin_family = AF_INET, .sin_port = htons(987) };
	static uint8_t rbuf[8][O2IB_MSG_SIZE], sbuf[O2IB_MSG_SIZE];
	struct fab_qp_attr attr = { 8, 8 };
	struct fab_dev *dev;
	struct fab_cm_id *id;
	struct fab_qp *qp;
	struct fab_mr rmr, smr;
	struct fab_cm_event ev;
	struct o2ib_msg m = { 0 }, ack;
	struct o2ib_wire_err err;
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	struct iovec r = { rbuf, sizeof(rbuf) }, s = { sbuf, sizeof(sbuf) };
	const struct fab_recv_wr *rbad;
	const struct fab_send_wr *sbad;
	int n, before;

	inet_pton(AF_INET, RAW_ADDR, &me.sin_addr);
	inet_pton(AF_INET, "127.253.0.1", &node.sin_addr);
	assert_int_equal(f->dev_open(&me, NULL, &dev), 0);
	assert_int_equal(f->create_id(dev, NULL, &id), 0);
	assert_int_equal(f->create_qp(id, &attr, NULL, &qp), 0);
	assert_int_equal(f->reg_mr(dev, &r, 1, FAB_ACCESS_LOCAL_WRITE, &rmr), 0);
	assert_int_equal(f->reg_mr(dev, &s, 1, FAB_ACCESS_LOCAL_WRITE, &smr), 0);
	for (unsigned i = 0; i < 8; i++) {
		struct fab_sge sge = { rmr.addr + i * O2IB_MSG_SIZE, O2IB_MSG_SIZE, rmr.lkey };
		struct fab_recv_wr wr = { NULL, i, &sge, 1 };

		assert_int_equal(f->post_recv(qp, &wr, &rbad), 0);
	}
	m.version = O2IB_MSG_VERSION_2;
	m.type = O2IB_MSG_CONNREQ;
	m.srcnid = nid4(RAW_ADDR "@o2ib");
	m.srcstamp = 1000 + bad;
	m.dstnid = nid4(A_NID);
	m.u.connparams = (struct o2ib_connparams){ 8, 257, O2IB_MSG_SIZE };
	n = o2ib_msg_pack(&m, false, pd, sizeof(pd));
	assert_true(n > 0);
	assert_int_equal(f->connect(id, &node, pd, (size_t)n, 5000), 0);
	wait_event(f, dev, FAB_CM_ESTABLISHED, &ev);
	assert_int_equal(o2ib_msg_unpack(ev.private_data, ev.private_data_len, 257, &ack, &err), 0);
	assert_int_equal(ack.type, O2IB_MSG_CONNACK);

	memset(&m, 0, sizeof(m));
	m.version = O2IB_MSG_VERSION_2;
	m.type = O2IB_MSG_NOOP;
	m.srcnid = nid4(RAW_ADDR "@o2ib");
	m.srcstamp = 1000 + bad;
	m.dstnid = nid4(A_NID);
	m.dststamp = ack.srcstamp;
	switch (bad) {
	case BAD_DSTNID: m.dstnid = nid4("127.253.0.77@o2ib"); break;
	case BAD_DSTSTAMP: m.dststamp++; break;
	case BAD_SRCSTAMP: m.srcstamp++; break;
	case BAD_CREDITS: m.credits = 200; break;
	case BAD_PUT_DONE: m.type = O2IB_MSG_PUT_DONE; m.u.completion.cookie = 0x5eed; break;
	case BAD_GET_DONE: m.type = O2IB_MSG_GET_DONE; m.u.completion.cookie = 0x5eed; break;
	case BAD_PUT_ACK:
		m.type = O2IB_MSG_PUT_ACK;
		m.u.putack.src_cookie = 0x5eed;
		m.u.putack.rd.nfrags = 1;
		m.u.putack.rd.frags[0] = (struct o2ib_rdma_frag){ 4096, 0x1000 };
		break;
	default: break;
	}
	n = o2ib_msg_pack(&m, false, sbuf, sizeof(sbuf));
	assert_true(n > 0);
	if (bad == BAD_TYPE)
		sbuf[6] = 0xd9; /* ibm_type: no such message (the checksum is 0: not verified) */
	if (bad == BAD_SHORT)
		n = 20;
	before = atomic_load(&o2ib_errors);
	{
		struct fab_sge sge = { smr.addr, (uint32_t)n, smr.lkey };
		struct fab_send_wr wr = { .wr_id = 1, .opcode = FAB_WR_SEND, .signaled = true, .sg_list = &sge,
					  .num_sge = 1 };

		assert_int_equal(f->post_send(qp, &wr, &sbad), 0);
	}
	wait_event(f, dev, FAB_CM_DISCONNECTED, &ev);
	if (atomic_load(&o2ib_errors) - before != 1)
		fail_msg("bad %s: %d O2IB error lines, want 1", bad_name[bad], atomic_load(&o2ib_errors) - before);
	f->dev_close(dev);
}

static void test_bad_messages(void **state)
{
	ulnet_node *a, *b;
	struct ulnet_process_id ida = { .pid = ULNET_PID_LUSTRE };
	struct ulnet_ping_result res;

	(void)state;
	ulnet_log_set(count_sink, getenv("ULNET_TEST_LOG") ? 3 : 0);
	a = node_up(A_NID);
	b = node_up(B_NID);
	assert_int_equal(ulnet_nid_parse(A_NID, &ida.nid, NULL), 0);
	assert_int_equal(ulnet_ping(b, &ida, 5000, &res), 0);
	for (int i = 0; i < BAD_N; i++) {
		print_message("bad %s\n", bad_name[i]);
		raw_session((enum bad)i);
		assert_int_equal(ulnet_ping(b, &ida, 5000, &res), 0);
	}
	ulnet_node_close(b);
	ulnet_node_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_bad_messages) };

	return cmocka_run_group_tests(tests, NULL, NULL);
}
