/* SPDX-License-Identifier: MIT */
/* Several o2ib connections from one peer (o2iblnd 2.15+ conns_per_peer), against a raw fabric peer
 * (tests/common/o2ib_raw_peer.h) on the shm provider, as a kernel with conns_per_peer=2 does:
 *
 *  - two connections: the raw peer opens A, then B; once the node counts both established it pings
 *    (an LNet GET to the ping portal) on A, the FIRST: the REPLY must come (ulnet used to close A when
 *    B came up, and the ping was lost). A second ping goes on B; the node answers round robin, so the
 *    two REPLYs come one on each connection, and the node counts both connections as used. A and B
 *    stay connected throughout (no DISCONNECTED event);
 *  - a new incarnation (the peer restarted): its CONNREQ is refused STALE and both old connections
 *    are closed (the raw peer sees two DISCONNECTEDs; the node counts 0 up); the retry is accepted and
 *    a ping on it is answered;
 *  - the cap: a peer may hold O2IB_CONNS_PER_PEER_MAX connections; the next CONNREQ is rejected
 *    NO_RESOURCES, and the first connection still answers a ping (nothing lost by the refusal).
 * Addresses: 127.221.0.{1,2} (nodes), 127.221.0.{9,10} (raw peers). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "o2ib_raw_peer.h"
#include "lnd/o2ib/o2ib_conn_policy.h"

static struct raw_peer rp; /* big: not on the stack */

static ulnet_node *node_up(const char *nid)
{
	const struct ulnet_kv lt[] = { { "provider", "shm" }, { "timeout", "10" } };
	struct ulnet_ni_conf conf = { .net = "o2ib", .nid = nid, .lnd_tunables = lt, .n_lnd_tunables = 2 };
	struct ulnet_node_opts opts = { .page_size = 4096 };
	ulnet_node *n;

	assert_int_equal(ulnet_node_open(&opts, &n), 0);
	assert_int_equal(ulnet_ni_add(n, &conf), 0);
	return n;
}

/* Wait (10 s at most) until the node counts @want established connections of the raw peer. */
static struct ulnet_peer_limits expect_conns(ulnet_node *node, uint32_t want)
{
	struct ulnet_peer_limits lim = { 0 };
	struct ulnet_nid nid;
	int rc = -ENOENT;

	ulnet_nid_from_nid4(rp.nid, &nid);
	for (int i = 0; i < 1000; i++) {
		memset(&lim, 0, sizeof(lim));
		if (!(rc = ulnet_peer_limits_get(node, &nid, &lim)) && lim.conns == want)
			return lim;
		raw_pump(&rp, 10);
	}
	fail_msg("the node counts %u connections of the raw peer (rc %d), want %u", lim.conns, rc, want);
	return lim;
}

struct rconn {
	struct fab_cm_id *id;
	struct fab_qp *qp;
};

/* Make @c the connection raw_send uses. */
static void use(const struct rconn *c)
{
	rp.id = c->id;
	rp.qp = c->qp;
}

/* A ping (GET, ping portal, ping match bits) from the raw peer on its current connection; the REPLY
 * names @cookie. */
static void raw_ping(uint64_t cookie)
{
	struct o2ib_msg m;
	struct ulnet_hdr *h = &m.u.immediate.hdr;

	raw_msg_init(&rp, &m, O2IB_MSG_IMMEDIATE);
	ulnet_nid_from_nid4(rp.node_nid, &h->dest_nid);
	ulnet_nid_from_nid4(rp.nid, &h->src_nid);
	h->dest_pid = h->src_pid = ULNET_PID_LUSTRE;
	h->type = ULNET_MSG_GET;
	h->msg.get.return_wmd = (struct ulnet_wire_handle){ 0x1234, cookie };
	h->msg.get.match_bits = ULNET_PING_MATCHBITS;
	h->msg.get.ptl_index = ULNET_RESERVED_PORTAL;
	h->msg.get.sink_length = 2048; /* the REPLY fits an IMMEDIATE */
	raw_send(&rp, &m);
}

/* Wait (10 s at most) for the REPLY naming @cookie (NOOPs skipped); the QP it came on. */
static struct fab_qp *expect_reply(uint64_t cookie)
{
	struct o2ib_msg m;

	for (int i = 0; i < 1000; i++) {
		if (!raw_msg(&rp, 10, &m) || m.type == O2IB_MSG_NOOP)
			continue;
		assert_int_equal(m.type, O2IB_MSG_IMMEDIATE);
		assert_int_equal(m.u.immediate.hdr.type, ULNET_MSG_REPLY);
		assert_true(m.u.immediate.hdr.msg.reply.dst_wmd.wh_object_cookie == cookie);
		assert_true(m.u.immediate.payload_len > 0); /* the ping info */
		return rp.last_qp;
	}
	fail_msg("no REPLY to ping %#llx within 10 s", (unsigned long long)cookie);
	return NULL;
}

/* No CM event (a DISCONNECTED would be a connection the node closed) for @ms. */
static void expect_no_event(int ms)
{
	struct fab_cm_event ev;

	if (raw_event(&rp, ms, &ev))
		fail_msg("unexpected %s event", fab_cm_event_str(ev.type));
}

static void test_two_conns_ping_on_first(void **state)
{
	ulnet_node *node = node_up("127.221.0.1@o2ib");
	uint64_t node_nid = raw_nid4("127.221.0.1@o2ib");
	struct ulnet_peer_limits lim;
	struct rconn a, b, c;
	struct fab_qp *q1, *q2;
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	struct fab_cm_event ev;
	struct o2ib_rej rej;
	struct o2ib_wire_err err;
	int n, down = 0;

	(void)state;
	raw_open(&rp, "127.221.0.9", false);
	rp.nrx_posted = RAW_NRX / 2; /* A's receives in buffers 0..31, B's in 32..63 */
	raw_connect_ok(&rp, "127.221.0.1", node_nid, 8, 257);
	a = (struct rconn){ rp.id, rp.qp };
	expect_conns(node, 1);
	rp.rx_first = RAW_NRX / 2;
	raw_connect_ok(&rp, "127.221.0.1", node_nid, 8, 257);
	b = (struct rconn){ rp.id, rp.qp };
	lim = expect_conns(node, 2);
	assert_int_equal(lim.lnd_msg_size, O2IB_MSG_SIZE); /* ibcp_max_msg_size, not the LNet MTU */
	assert_int_equal(lim.lnet_mtu, 1u << 20);

	/* the ping on the first connection, after the second is up: answered */
	use(&a);
	raw_ping(1);
	q1 = expect_reply(1);
	use(&b);
	raw_ping(2);
	q2 = expect_reply(2);
	/* round robin: one REPLY on each connection */
	assert_true((q1 == a.qp && q2 == b.qp) || (q1 == b.qp && q2 == a.qp));
	lim = expect_conns(node, 2);
	assert_int_equal(lim.conns_used, 2);
	expect_no_event(200); /* neither connection was closed */

	/* the peer restarts: its first CONNREQ is refused STALE and closes both old connections */
	rp.stamp++;
	rp.rx_first = 0;
	n = raw_connreq(&rp, node_nid, rp.version, 8, 257, pd);
	assert_true(n > 0);
	{ /* (raw_connect skips DISCONNECTED events: count them here) */
		struct sockaddr_in to = raw_addr("127.221.0.1", 987);
		struct fab_cm_id *id;
		bool answered = false;

		assert_int_equal(rp.f->create_id(rp.dev, NULL, &id), 0);
		raw_qp(&rp, id);
		assert_int_equal(rp.f->connect(id, &to, pd, (size_t)n, 5000), 0);
		for (int i = 0; i < 1000 && (!answered || down < 2); i++) {
			if (!raw_event(&rp, 10, &ev))
				continue;
			if (ev.type == FAB_CM_DISCONNECTED) {
				assert_true(ev.id == a.id || ev.id == b.id);
				down++;
				continue;
			}
			assert_int_equal(ev.type, FAB_CM_REJECTED);
			assert_int_equal(o2ib_rej_unpack(ev.private_data, ev.private_data_len, &rej, &err), 0);
			assert_int_equal(rej.why, O2IB_REJECT_CONN_STALE);
			answered = true;
		}
		assert_true(answered);
		assert_int_equal(down, 2); /* both old connections closed */
		rp.f->destroy_id(id);
	}
	expect_conns(node, 0);
	raw_connect_ok(&rp, "127.221.0.1", node_nid, 8, 257);
	c = (struct rconn){ rp.id, rp.qp };
	expect_conns(node, 1);
	use(&c);
	raw_ping(3);
	assert_true(expect_reply(3) == c.qp);

	raw_close(&rp); /* (every id and QP of the raw device with it) */
	ulnet_node_close(node);
}

static void test_conns_cap(void **state)
{
	ulnet_node *node = node_up("127.221.0.2@o2ib");
	uint64_t node_nid = raw_nid4("127.221.0.2@o2ib");
	struct rconn first;
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	struct fab_cm_event ev;
	struct o2ib_rej rej;
	struct o2ib_wire_err err;
	int n;

	(void)state;
	raw_open(&rp, "127.221.0.10", false);
	rp.nrx_posted = 8; /* the first connection's receives; the others take none (nothing comes on them) */
	raw_connect_ok(&rp, "127.221.0.2", node_nid, 8, 257);
	first = (struct rconn){ rp.id, rp.qp };
	rp.nrx_posted = 0;
	for (uint32_t i = 1; i < O2IB_CONNS_PER_PEER_MAX; i++)
		raw_connect_ok(&rp, "127.221.0.2", node_nid, 8, 257);
	expect_conns(node, O2IB_CONNS_PER_PEER_MAX);
	n = raw_connreq(&rp, node_nid, rp.version, 8, 257, pd);
	assert_true(n > 0);
	raw_connect(&rp, "127.221.0.2", pd, (size_t)n, &ev);
	assert_int_equal(ev.type, FAB_CM_REJECTED);
	assert_int_equal(o2ib_rej_unpack(ev.private_data, ev.private_data_len, &rej, &err), 0);
	assert_int_equal(rej.why, O2IB_REJECT_NO_RESOURCES);
	expect_conns(node, O2IB_CONNS_PER_PEER_MAX);
	/* the refusal cost nothing: the first connection still answers */
	use(&first);
	raw_ping(7);
	assert_true(expect_reply(7) != NULL);
	raw_close(&rp); /* (every id and QP of the raw device with it) */
	ulnet_node_close(node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_conns_ping_on_first),
		cmocka_unit_test(test_conns_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
