/* SPDX-License-Identifier: MIT */
/* An o2ib node (127.253.0.1@o2ib, shm provider) against a raw fabric peer (127.253.0.9,
 * tests/common/o2ib_raw_peer.h) that connects with a valid CONNREQ and then sends one bad kib_msg:
 * a wrong dstnid, dststamp or srcstamp, credits beyond the queue depth, an unknown type, a PUT_DONE /
 * GET_DONE / PUT_ACK / PUT_NAK naming a cookie nobody waits for, a message shorter than its header,
 * an RDMA descriptor with 0 or 10000 fragments (PUT_ACK and GET_REQ), an ibm_nob beyond the bytes
 * that came, a CONNREQ after the handshake. Each must close that connection (the raw peer sees
 * DISCONNECTED) with exactly one O2IB error line, and a second node (127.253.0.2@o2ib) must still
 * ping the node afterwards. A CONNREQ shorter than the structure is rejected (FATAL) with one
 * warning line. A CONNREQ followed by nothing (no RTU) loses its accepted connection after the
 * timeout, and the peer connects again. All of it three times over, and the node's heap must not grow with the rounds. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "o2ib_raw_peer.h"

#define A_IP "127.253.0.1"
#define A_NID A_IP "@o2ib"
#define B_NID "127.253.0.2@o2ib"
#define RAW_IP "127.253.0.9"
#define ROUNDS 3

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static int o2ib_lines[2]; /* errors, warnings */
static int handshake_lines; /* "did not complete the connection" */

static void count_sink(int level, const char *subsys, const char *line)
{
	if (getenv("ULNET_TEST_LOG"))
		fprintf(stderr, "%d %s: %s\n", level, subsys, line);
	pthread_mutex_lock(&sink_lock);
	if (level <= 1 && !strcmp(subsys, "O2IB"))
		o2ib_lines[level]++;
	if (level == 0 && strstr(line, "did not complete the connection within"))
		handshake_lines++;
	pthread_mutex_unlock(&sink_lock);
}

static int lines(int level)
{
	int n;

	pthread_mutex_lock(&sink_lock);
	n = o2ib_lines[level];
	pthread_mutex_unlock(&sink_lock);
	return n;
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

enum bad { BAD_DSTNID, BAD_DSTSTAMP, BAD_SRCSTAMP, BAD_CREDITS, BAD_TYPE, BAD_PUT_DONE, BAD_GET_DONE,
	   BAD_PUT_ACK, BAD_SHORT, BAD_ACK_NFRAGS_0, BAD_ACK_NFRAGS_10000, BAD_GET_NFRAGS_0, BAD_GET_NFRAGS_10000,
	   BAD_NOB, BAD_CONNREQ_AGAIN, BAD_PUT_NAK, BAD_N };
static const char *const bad_name[] = { "dstnid", "dststamp", "srcstamp", "credits", "type", "PUT_DONE cookie",
					"GET_DONE cookie", "PUT_ACK cookie", "short", "PUT_ACK rd_nfrags 0",
					"PUT_ACK rd_nfrags 10000", "GET_REQ rd_nfrags 0", "GET_REQ rd_nfrags 10000",
					"ibm_nob beyond the message", "CONNREQ after the handshake", "PUT_NAK cookie" };

static struct raw_peer rp;

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); } /* native order, as we send */

/* Connect as a raw peer, send one bad message, expect the node to disconnect with one error line. */
static void raw_session(enum bad bad, uint64_t stamp)
{
	static uint8_t buf[O2IB_MSG_SIZE];
	uint64_t a_nid = raw_nid4(A_NID);
	struct fab_cm_event ev;
	struct o2ib_msg m;
	int n, before;

	raw_open(&rp, RAW_IP, false);
	rp.stamp = stamp;
	raw_connect_ok(&rp, A_IP, a_nid, 8, 257);
	raw_msg_init(&rp, &m, O2IB_MSG_NOOP);
	switch (bad) {
	case BAD_DSTNID: m.dstnid = raw_nid4("127.253.0.77@o2ib"); break;
	case BAD_DSTSTAMP: m.dststamp++; break;
	case BAD_SRCSTAMP: m.srcstamp++; break;
	case BAD_CREDITS: m.credits = 200; break;
	case BAD_PUT_DONE: m.type = O2IB_MSG_PUT_DONE; m.u.completion.cookie = 0x5eed; break;
	case BAD_GET_DONE: m.type = O2IB_MSG_GET_DONE; m.u.completion.cookie = 0x5eed; break;
	case BAD_PUT_NAK: m.type = O2IB_MSG_PUT_NAK; m.u.completion = (typeof(m.u.completion)){ 0x5eed, -ENODATA }; break;
	case BAD_PUT_ACK:
	case BAD_ACK_NFRAGS_0:
	case BAD_ACK_NFRAGS_10000:
		m.type = O2IB_MSG_PUT_ACK;
		m.u.putack.src_cookie = 0x5eed;
		m.u.putack.rd.nfrags = 1;
		m.u.putack.rd.frags[0] = (struct o2ib_rdma_frag){ 4096, 0x1000 };
		break;
	case BAD_GET_NFRAGS_0:
	case BAD_GET_NFRAGS_10000:
		m.type = O2IB_MSG_GET_REQ;
		m.u.get.hdr.type = ULNET_MSG_GET;
		m.u.get.rd.nfrags = 1;
		m.u.get.rd.frags[0] = (struct o2ib_rdma_frag){ 4096, 0x1000 };
		break;
	case BAD_CONNREQ_AGAIN:
		m.type = O2IB_MSG_CONNREQ;
		m.u.connparams = (struct o2ib_connparams){ 8, 257, O2IB_MSG_SIZE };
		break;
	default: break;
	}
	n = o2ib_msg_pack(&m, false, buf, sizeof(buf));
	assert_true(n > 0);
	if (bad == BAD_TYPE)
		buf[6] = 0xd9; /* ibm_type: no such message (the checksum is 0: not verified) */
	if (bad == BAD_SHORT)
		n = 20;
	if (bad == BAD_ACK_NFRAGS_0 || bad == BAD_ACK_NFRAGS_10000) /* rd_nfrags: msg offset 64 + 4 */
		put32(buf + 68, bad == BAD_ACK_NFRAGS_0 ? 0 : 10000);
	if (bad == BAD_GET_NFRAGS_0 || bad == BAD_GET_NFRAGS_10000) /* rd_nfrags: msg offset 128 + 4 */
		put32(buf + 132, bad == BAD_GET_NFRAGS_0 ? 0 : 10000);
	if (bad == BAD_NOB)
		put32(buf + 8, (uint32_t)n + 100); /* ibm_nob: more than arrives */
	before = lines(0);
	raw_send_bytes(&rp, buf, (uint32_t)n);
	raw_expect_event(&rp, FAB_CM_DISCONNECTED, &ev);
	if (lines(0) - before != 1)
		fail_msg("bad %s: %d O2IB error lines, want 1", bad_name[bad], lines(0) - before);
	raw_close(&rp);
}

/* A CONNREQ cut short: rejected FATAL, one warning line, nothing kept. */
static void short_connreq(void)
{
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	struct fab_cm_event ev;
	struct o2ib_rej rej;
	struct o2ib_wire_err err;
	int n, before = lines(1);

	raw_open(&rp, RAW_IP, false);
	n = raw_connreq(&rp, raw_nid4(A_NID), O2IB_MSG_VERSION_2, 8, 257, pd);
	assert_int_equal(n, O2IB_CONN_MSG_SIZE);
	raw_connect(&rp, A_IP, pd, 50, &ev);
	assert_int_equal(ev.type, FAB_CM_REJECTED);
	assert_int_equal(o2ib_rej_unpack(ev.private_data, ev.private_data_len, &rej, &err), 0);
	assert_int_equal(rej.why, O2IB_REJECT_FATAL);
	if (lines(1) - before != 1)
		fail_msg("short CONNREQ: %d O2IB warning lines, want 1", lines(1) - before);
	raw_close(&rp);
}

/* A peer that sends its CONNREQ and then nothing (no RTU: it died, or it is hostile) loses the
 * accepted connection after the lnd tunable timeout (5 s here; the shm provider's own RTU wait is
 * 10 s and ends in a quiet disconnect, not this line): it holds no QP for good, and it connects
 * again afterwards. */
static void stalled_handshake(void)
{
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	struct sockaddr_in node = raw_addr(A_IP, 987);
	struct fab_cm_id *id;
	int n, before, waited = 0;

	raw_open(&rp, RAW_IP, false);
	n = raw_connreq(&rp, raw_nid4(A_NID), O2IB_MSG_VERSION_2, 8, 257, pd);
	assert_true(n > 0);
	assert_int_equal(rp.f->create_id(rp.dev, NULL, &id), 0);
	raw_qp(&rp, id);
	pthread_mutex_lock(&sink_lock);
	before = handshake_lines;
	pthread_mutex_unlock(&sink_lock);
	assert_int_equal(rp.f->connect(id, &node, pd, (size_t)n, 5000), 0); /* then never pumped: no RTU */
	for (;;) {
		struct pollfd p = { .fd = -1 };
		int now;

		pthread_mutex_lock(&sink_lock);
		now = handshake_lines;
		pthread_mutex_unlock(&sink_lock);
		if (now > before)
			break;
		if (waited++ > 600)
			fail_msg("the node kept a connection whose handshake never completed for 30 s");
		poll(&p, 0, 50); /* (the node's loop threads do the work: this only waits for its line) */
	}
	raw_close(&rp);
	rp.dev = NULL;
	raw_open(&rp, RAW_IP, false); /* the same peer connects again */
	raw_connect_ok(&rp, A_IP, raw_nid4(A_NID), 8, 257);
	raw_close(&rp);
}

static void test_bad_messages(void **state)
{
	ulnet_node *a, *b;
	struct ulnet_process_id ida = { .pid = ULNET_PID_LUSTRE };
	struct ulnet_ping_result res;
	size_t heap[ROUNDS];

	(void)state;
	ulnet_log_set(count_sink, getenv("ULNET_TEST_LOG") ? 3 : 1);
	ulnet_log_set_rate(0, 0); /* every line counts: no rate limit */
	a = node_up(A_NID);
	b = node_up(B_NID);
	assert_int_equal(ulnet_nid_parse(A_NID, &ida.nid, NULL), 0);
	assert_int_equal(ulnet_ping(b, &ida, 5000, &res), 0);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BAD_N; i++) {
			if (!r)
				print_message("bad %s\n", bad_name[i]);
			raw_session((enum bad)i, 1000u * (unsigned)r + (unsigned)i);
			assert_int_equal(ulnet_ping(b, &ida, 5000, &res), 0);
		}
		short_connreq();
		assert_int_equal(ulnet_ping(b, &ida, 5000, &res), 0);
		if (!r)
			stalled_handshake();
		heap[r] = mallinfo2().uordblks; /* (0 under sanitizers, whose allocator LSan checks) */
	}
	print_message("heap in use after each round: %zu %zu %zu bytes\n", heap[0], heap[1], heap[2]);
	/* one leaked connection per bad message would be 17 x 18 receive buffers of 4 KiB a round */
	assert_true(heap[ROUNDS - 1] <= heap[0] + 256 * 1024);
	ulnet_node_close(b);
	ulnet_node_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_bad_messages) };

	return cmocka_run_group_tests(tests, NULL, NULL);
}
