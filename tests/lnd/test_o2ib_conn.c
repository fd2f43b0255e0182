/* SPDX-License-Identifier: MIT */
/* o2ib connection setup end to end (lnet-wire.md §1.4-§1.6, §4.3): an o2ib node on the shm provider
 * against a raw fabric peer (tests/common/o2ib_raw_peer.h) that speaks kib_msg by hand.
 *
 *  - passive: CONNREQs with max_frags {16, 256, 257} and queue depths 8..255 (V2) and 0x11 (V1) get a
 *    CONNACK in the requester's version with the negotiated values, the core sees those limits, and
 *    the node then keeps to that depth: with no credit returned it sends exactly `depth` messages
 *    (depth - 1 in V1, whose last credit is kept for a NOOP), and more once credits come back;
 *  - passive rejects: every bad CONNREQ gets the right kib_rej (reason, version, our values);
 *    CONN_RACE goes to the loser of the tie-break only;
 *  - active: every reject reason the node receives leads to the documented retry (the next CONNREQ
 *    shows the renegotiated values) or to exactly one error line and a failed send.
 * Addresses: 127.135.0.{1,9,10,11} and 127.135.1.N (one raw listener per active case). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "log_count.h"
#include "o2ib_raw_peer.h"
#include "lnd/o2ib/o2ib_conn_policy.h"

#define NODE_IP "127.135.0.1"
#define NODE_NID NODE_IP "@o2ib"
#define RAW_IP "127.135.0.9"
#define PORTAL 9

/* Start counting the O2IB error lines about @nid4 from 0: lines about a peer of an earlier case may
 * still come in while the next case runs. */
static void errors_about(uint64_t nid4)
{
	struct ulnet_nid nid;
	char about[64];

	ulnet_nid_from_nid4(nid4, &nid);
	ulnet_nid_format(&nid, about, sizeof(about));
	log_count_about(about);
}

static struct raw_peer rp; /* big: not on the stack */

static ulnet_node *node_up(const char *nid, const char *peer_credits)
{
	const struct ulnet_kv lt[] = { { "provider", "shm" }, { "timeout", "5" }, { "peer_credits", peer_credits } };
	struct ulnet_ni_conf conf = { .net = "o2ib", .nid = nid, .lnd_tunables = lt, .n_lnd_tunables = 3 };
	struct ulnet_node_opts opts = { .page_size = 4096 };
	ulnet_node *n;

	log_count_install("O2IB", ULNET_LOG_ERR);
	ulnet_log_set_rate(0, 0); /* every line counts: no rate limit */
	assert_int_equal(ulnet_node_open(&opts, &n), 0);
	assert_int_equal(ulnet_ni_add(n, &conf), 0);
	return n;
}

/* A small PUT (an IMMEDIATE on the wire) from @node to @nid4; its SEND event goes to @eq. */
static void node_put(ulnet_node *node, ulnet_eq *eq, uint64_t nid4, uint64_t match)
{
	static char payload[64] = "o2ib conn test";
	struct ulnet_md md = { .start = payload, .length = sizeof(payload), .threshold = 1, .eq = eq };
	struct ulnet_process_id to = { .pid = ULNET_PID_LUSTRE };
	struct ulnet_handle h;

	ulnet_nid_from_nid4(nid4, &to.nid);
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_UNLINK, &h), 0);
	assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &to, PORTAL, match, 0, 0), 0);
}

/* The status of the next SEND event on @eq. */
static int send_status(ulnet_eq *eq)
{
	struct ulnet_event ev;

	for (;;) {
		assert_int_equal(ulnet_eq_wait(eq, 20000, &ev), 1);
		if (ev.type == ULNET_EVENT_SEND)
			return ev.status;
	}
}

/* Wait (10 s at most) for @want IMMEDIATEs; NOOPs are skipped. */
static void expect_immediates(unsigned want, bool owes_nothing)
{
	struct o2ib_msg m;

	for (unsigned n = 0; n < want;) {
		if (!raw_msg(&rp, 10000, &m))
			fail_msg("%u of %u IMMEDIATEs within 10 s", n, want);
		if (owes_nothing) /* the raw peer sent nothing that takes a credit */
			assert_int_equal(m.credits, 0);
		if (m.type == O2IB_MSG_IMMEDIATE)
			n++;
		else
			assert_int_equal(m.type, O2IB_MSG_NOOP);
	}
}

/* A PUT (an IMMEDIATE) from the raw peer to a portal of the node with nothing attached: the node
 * drops it, and owes the raw peer the credit. */
static void raw_put_dropped(void)
{
	struct o2ib_msg m;
	struct ulnet_hdr *h = &m.u.immediate.hdr;

	raw_msg_init(&rp, &m, O2IB_MSG_IMMEDIATE);
	ulnet_nid_from_nid4(rp.node_nid, &h->dest_nid);
	ulnet_nid_from_nid4(rp.nid, &h->src_nid);
	h->dest_pid = h->src_pid = ULNET_PID_LUSTRE;
	h->type = ULNET_MSG_PUT;
	h->msg.put.ack_wmd.wh_interface_cookie = h->msg.put.ack_wmd.wh_object_cookie = ULNET_WIRE_COOKIE_NONE;
	h->msg.put.ptl_index = PORTAL;
	raw_send(&rp, &m);
}

/* The node has no credit left: has it sent nothing more? Make it owe @hiw credits (its high-water
 * mark) with as many PUTs; it must return them with what its credits allow: a NOOP (V2, which takes
 * no credit), or on V1 an IMMEDIATE on the last credit, which V1 keeps for a message that returns
 * credits. Messages on a QP arrive in order, so any IMMEDIATE sent past the credits comes before that
 * message. Returns the IMMEDIATEs that came, that message included. */
static unsigned credits_returned(uint16_t version, unsigned hiw)
{
	struct o2ib_msg m;

	for (unsigned i = 0; i < hiw; i++)
		raw_put_dropped();
	if (!raw_msg(&rp, 10000, &m))
		fail_msg("the node returned no credit within 10 s of %u PUTs", hiw);
	if (!m.credits)
		fail_msg("the node sent a message type %#x with no credit to spend", m.type);
	assert_int_equal(m.type, version == O2IB_MSG_VERSION_1 ? O2IB_MSG_IMMEDIATE : O2IB_MSG_NOOP);
	return m.type == O2IB_MSG_IMMEDIATE;
}

/* The core's view of the peer's connection (the node may see its ESTABLISHED after the raw peer
 * does: wait up to 5 s for it). */
static void expect_limits(ulnet_node *node, uint64_t nid4, uint32_t depth, uint32_t frags)
{
	struct ulnet_peer_limits lim = { 0 };
	struct ulnet_nid nid;

	ulnet_nid_from_nid4(nid4, &nid);
	for (int i = 0; i < 500; i++) {
		if (!ulnet_peer_limits_get(node, &nid, &lim) && lim.queue_depth == depth && lim.max_frags == frags)
			return;
		raw_pump(&rp, 10);
	}
	fail_msg("peer limits depth %u frags %u, want %u/%u", lim.queue_depth, lim.max_frags, depth, frags);
}

/* Hang up the raw peer, close it and the node. */
static void finish(ulnet_node *a, ulnet_eq *eq)
{
	raw_hangup(&rp);
	raw_close(&rp);
	ulnet_node_close(a);
	if (eq)
		ulnet_eq_destroy(eq);
}

/* ---- passive side: negotiated values ---- */

static void test_passive_negotiation(void **state)
{
	static const uint16_t frags[] = { 16, 256, 257 };
	ulnet_node *a = node_up(NODE_NID, "255");
	uint64_t a_nid = raw_nid4(NODE_NID);
	uint32_t stamp = 1;

	(void)state;
	raw_open(&rp, RAW_IP, false);
	for (unsigned f = 0; f < 3; f++)
		for (uint16_t depth = 8; depth <= 255; depth++) { /* every depth o2iblnd allows */
			/* the node's QP (max_qp_wr 32768 by default) holds (1 + max_frags) send WRs per credit */
			uint32_t fit = 32768u / (1u + frags[f]), want = depth < fit ? depth : fit;
			struct o2ib_connparams cp;

			rp.stamp = stamp++; /* a new incarnation each time: no STALE from the last one */
			cp = raw_connect_ok(&rp, NODE_IP, a_nid, depth, frags[f]);
			if (depth % 40 == 8 || depth == 127 || depth == 128 || depth == 255)
				print_message("v0x12 depth %3u frags %3u -> CONNACK depth %3u frags %3u\n", depth, frags[f],
					      cp.queue_depth, cp.max_frags);
			assert_int_equal(cp.max_frags, frags[f]);
			assert_int_equal(cp.queue_depth, want);
			assert_int_equal(cp.max_msg_size, O2IB_MSG_SIZE);
			expect_limits(a, rp.nid, want, frags[f]);
			raw_hangup(&rp);
		}
	/* V1: answered in 0x11 with its fixed depth 8 */
	rp.version = O2IB_MSG_VERSION_1;
	rp.stamp = stamp++;
	{
		struct o2ib_connparams cp = raw_connect_ok(&rp, NODE_IP, a_nid, 8, 256);

		assert_int_equal(cp.queue_depth, 8);
		assert_int_equal(cp.max_frags, 256);
		expect_limits(a, rp.nid, 8, 256);
	}
	finish(a, NULL);
}

/* A device whose QPs hold 20 WRs: 1 fragment (2 send WRs a credit) lets the send queue take 10
 * credits, but 10 credits need 22 receive buffers. The node lowers the depth until its receive ring
 * fits (9: 20 buffers) and CONNACK says so, as o2iblnd does when its QP cannot be made (§3.4). */
static void test_passive_depth_fits_rx_ring(void **state)
{
	const struct ulnet_kv lt[] = { { "provider", "shm" }, { "timeout", "5" }, { "peer_credits", "16" },
				       { "device.max_qp_wr", "20" } };
	struct ulnet_ni_conf conf = { .net = "o2ib", .nid = NODE_NID, .lnd_tunables = lt, .n_lnd_tunables = 4 };
	struct ulnet_node_opts opts = { .page_size = 4096 };
	struct o2ib_connparams cp;
	ulnet_node *a;

	(void)state;
	log_count_install("O2IB", ULNET_LOG_ERR);
	assert_int_equal(ulnet_node_open(&opts, &a), 0);
	assert_int_equal(ulnet_ni_add(a, &conf), 0);
	raw_open(&rp, RAW_IP, false);
	rp.stamp = 77;
	cp = raw_connect_ok(&rp, NODE_IP, raw_nid4(NODE_NID), 10, 1);
	assert_int_equal(cp.queue_depth, 9);
	assert_int_equal(cp.max_frags, 1);
	expect_limits(a, rp.nid, 9, 1);
	finish(a, NULL);
}

/* The active side of the same: the CONNREQ offers the depth whose receive ring the QP holds
 * (peer_credits 16, 1 fragment, max_qp_wr 20: the send queue allows 10, the ring 9). */
static void test_active_depth_fits_rx_ring(void **state)
{
	const struct ulnet_kv lt[] = { { "provider", "shm" }, { "timeout", "5" }, { "peer_credits", "16" },
				       { "max_frags", "1" }, { "device.max_qp_wr", "20" } };
	struct ulnet_ni_conf conf = { .net = "o2ib", .nid = NODE_NID, .lnd_tunables = lt, .n_lnd_tunables = 5 };
	struct ulnet_node_opts opts = { .page_size = 4096 };
	struct fab_cm_event req;
	struct o2ib_wire_err err;
	struct o2ib_msg m;
	ulnet_node *a;
	ulnet_eq *eq;

	(void)state;
	log_count_install("O2IB", ULNET_LOG_ERR);
	assert_int_equal(ulnet_node_open(&opts, &a), 0);
	assert_int_equal(ulnet_ni_add(a, &conf), 0);
	assert_int_equal(ulnet_eq_create(&eq), 0);
	raw_open(&rp, "127.135.3.1", true);
	node_put(a, eq, rp.nid, 1);
	raw_expect_event(&rp, FAB_CM_CONNECT_REQUEST, &req);
	assert_int_equal(o2ib_msg_unpack(req.private_data, req.private_data_len, 0, &m, &err), 0);
	assert_int_equal(m.type, O2IB_MSG_CONNREQ);
	assert_int_equal(m.u.connparams.queue_depth, 9);
	assert_int_equal(m.u.connparams.max_frags, 1);
	assert_int_equal(rp.f->reject(req.id, NULL, 0), 0);
	rp.f->destroy_id(req.id);
	assert_true(send_status(eq) < 0);
	raw_close(&rp);
	ulnet_node_close(a);
	ulnet_eq_destroy(eq);
}

/* After the handshake the node keeps to the depth: with no credit returned, @depth messages (V1:
 * depth - 1) and no more (credits_returned checks the "no more"); each credit given back by a NOOP
 * lets one more go. */
static void credits_used(uint16_t version, uint16_t depth, uint16_t frags)
{
	ulnet_node *a = node_up(NODE_NID, "255");
	uint64_t a_nid = raw_nid4(NODE_NID);
	unsigned first = version == O2IB_MSG_VERSION_1 ? depth - 1u : depth, total = depth + 4u, got;
	ulnet_eq *eq;
	struct o2ib_msg noop;

	assert_int_equal(ulnet_eq_create(&eq), 0);
	raw_open(&rp, RAW_IP, false);
	rp.version = version;
	raw_connect_ok(&rp, NODE_IP, a_nid, depth, frags);
	for (unsigned i = 0; i < total; i++)
		node_put(a, eq, rp.nid, i);
	expect_immediates(first, true);
	for (unsigned i = 0; i < first; i++) /* sent, and the node has seen them complete */
		assert_int_equal(send_status(eq), 0);
	got = first + credits_returned(version, depth / 2u); /* the default high-water mark */
	print_message("v0x%x depth %u: %u messages sent with no credit returned\n", version, depth, first);
	/* give back the credits for what arrived, one NOOP */
	raw_msg_init(&rp, &noop, O2IB_MSG_NOOP);
	noop.credits = (uint8_t)got;
	raw_send(&rp, &noop);
	expect_immediates(total - got, false);
	for (unsigned i = first; i < total; i++)
		assert_int_equal(send_status(eq), 0);
	finish(a, eq);
}

static void test_passive_depth_used(void **state)
{
	(void)state;
	credits_used(O2IB_MSG_VERSION_2, 8, 16);
	credits_used(O2IB_MSG_VERSION_2, 13, 257);
	credits_used(O2IB_MSG_VERSION_1, 8, 256);
}

/* ---- passive side: rejects ---- */

enum bad_req { REQ_SHORT, REQ_UNIFIED_MAGIC, REQ_VERSION, REQ_DSTNID, REQ_STALE, REQ_DEPTH, REQ_FRAGS,
	       REQ_V1_DEPTH, REQ_MSG_SIZE, REQ_NOT_CONNREQ, REQ_ZERO_DEPTH, REQ_N };
static const struct {
	const char *name;
	uint8_t why;
	uint16_t version; /* the reject's */
} bad_req[REQ_N] = {
	[REQ_SHORT] = { "shorter than the structure", O2IB_REJECT_FATAL, 0x12 },
	[REQ_UNIFIED_MAGIC] = { "unified-protocol magic", O2IB_REJECT_FATAL, 0x12 },
	[REQ_VERSION] = { "version 0x13", O2IB_REJECT_FATAL, 0x12 },
	[REQ_DSTNID] = { "another dstnid", O2IB_REJECT_FATAL, 0x12 },
	[REQ_STALE] = { "old dststamp", O2IB_REJECT_CONN_STALE, 0x12 },
	[REQ_DEPTH] = { "queue depth 256", O2IB_REJECT_MSG_QUEUE_SIZE, 0x12 },
	[REQ_FRAGS] = { "max_frags 258", O2IB_REJECT_RDMA_FRAGS, 0x12 },
	[REQ_V1_DEPTH] = { "V1 with queue depth 16", O2IB_REJECT_FATAL, 0x11 },
	[REQ_MSG_SIZE] = { "max_msg_size 8192", O2IB_REJECT_FATAL, 0x12 },
	[REQ_NOT_CONNREQ] = { "a CONNACK", O2IB_REJECT_FATAL, 0x12 },
	[REQ_ZERO_DEPTH] = { "queue depth 0", O2IB_REJECT_FATAL, 0x12 },
};

static void test_passive_rejects(void **state)
{
	ulnet_node *a = node_up(NODE_NID, "255");
	uint64_t a_nid = raw_nid4(NODE_NID), node_stamp = 0;

	(void)state;
	raw_open(&rp, RAW_IP, false);
	for (int b = 0; b < REQ_N; b++) {
		uint8_t pd[FAB_PRIVATE_DATA_MAX];
		struct o2ib_msg m;
		struct o2ib_rej rej;
		struct o2ib_wire_err err;
		struct fab_cm_event ev;
		int n;

		memset(&m, 0, sizeof(m));
		m.version = b == REQ_V1_DEPTH ? O2IB_MSG_VERSION_1 : O2IB_MSG_VERSION_2;
		m.type = b == REQ_NOT_CONNREQ ? O2IB_MSG_CONNACK : O2IB_MSG_CONNREQ;
		m.srcnid = rp.nid;
		m.srcstamp = 100 + (uint64_t)b;
		m.dstnid = b == REQ_DSTNID ? raw_nid4("127.135.0.77@o2ib") : a_nid;
		m.dststamp = b == REQ_STALE ? 12345 : 0;
		m.u.connparams = (struct o2ib_connparams){ 8, 257, O2IB_MSG_SIZE };
		if (b == REQ_DEPTH)
			m.u.connparams.queue_depth = 256;
		if (b == REQ_V1_DEPTH)
			m.u.connparams = (struct o2ib_connparams){ 16, 256, O2IB_MSG_SIZE };
		if (b == REQ_FRAGS)
			m.u.connparams.max_frags = 258;
		if (b == REQ_MSG_SIZE)
			m.u.connparams.max_msg_size = 8192;
		if (b == REQ_ZERO_DEPTH)
			m.u.connparams.queue_depth = 0;
		n = o2ib_msg_pack(&m, false, pd, sizeof(pd));
		assert_int_equal(n, O2IB_CONN_MSG_SIZE);
		if (b == REQ_SHORT)
			n = 40;
		if (b == REQ_UNIFIED_MAGIC)
			memcpy(pd, &(uint32_t){ O2IB_PROTO_MAGIC }, 4);
		if (b == REQ_VERSION)
			memcpy(pd + 4, &(uint16_t){ 0x13 }, 2);
		raw_connect(&rp, NODE_IP, pd, (size_t)n, &ev);
		print_message("CONNREQ %s: %s\n", bad_req[b].name, fab_cm_event_str(ev.type));
		if (ev.type != FAB_CM_REJECTED)
			fail_msg("CONNREQ %s: %s, want REJECTED", bad_req[b].name, fab_cm_event_str(ev.type));
		assert_int_equal(o2ib_rej_unpack(ev.private_data, ev.private_data_len, &rej, &err), 0);
		if (rej.why != bad_req[b].why || rej.version != bad_req[b].version)
			fail_msg("CONNREQ %s: rejected %s v%#x, want %s v%#x", bad_req[b].name, o2ib_rej_why_name(rej.why),
				 rej.version, o2ib_rej_why_name(bad_req[b].why), bad_req[b].version);
		if (rej.version == O2IB_MSG_VERSION_1) {
			assert_false(rej.has_cp); /* the 7-byte V1 form */
		} else {
			assert_true(rej.has_cp);
			assert_int_equal(rej.cp.queue_depth, 255);
			assert_int_equal(rej.cp.max_frags, O2IB_MAX_RDMA_FRAGS);
			assert_int_equal(rej.cp.max_msg_size, O2IB_MSG_SIZE);
			assert_true(rej.incarnation != 0 && rej.incarnation != UINT64_MAX);
			assert_true(!node_stamp || rej.incarnation == node_stamp);
			node_stamp = rej.incarnation;
		}
		rp.f->destroy_id(rp.id);
		rp.id = NULL;
	}
	/* the incarnation a STALE reject names is the one a CONNREQ may name */
	{
		uint8_t pd[FAB_PRIVATE_DATA_MAX];
		struct o2ib_msg m;
		struct fab_cm_event ev;

		memset(&m, 0, sizeof(m));
		m.version = O2IB_MSG_VERSION_2;
		m.type = O2IB_MSG_CONNREQ;
		m.srcnid = rp.nid;
		m.srcstamp = 999;
		m.dstnid = a_nid;
		m.dststamp = node_stamp;
		m.u.connparams = (struct o2ib_connparams){ 8, 257, O2IB_MSG_SIZE };
		/* and in the other byte order, as a big-endian peer sends it */
		assert_int_equal(o2ib_msg_pack_order(&m, false, true, pd, sizeof(pd)), O2IB_CONN_MSG_SIZE);
		raw_connect(&rp, NODE_IP, pd, O2IB_CONN_MSG_SIZE, &ev);
		assert_int_equal(ev.type, FAB_CM_ESTABLISHED);
		raw_hangup(&rp);
	}
	raw_close(&rp);
	ulnet_node_close(a);
}

/* CONN_RACE: the node (127.135.0.10) connects to a raw peer while the raw peer connects to it. The
 * higher nidhash wins (lnet-wire.md §4.3): against 127.135.0.9 the node wins and rejects the raw
 * CONNREQ with CONN_RACE; against 127.135.0.11 it loses, accepts, and its own queued PUT goes over
 * the raw peer's connection once the raw peer rejects the node's CONNREQ with CONN_RACE. */
static void race(const char *raw_ip, bool node_wins)
{
	ulnet_node *a = node_up("127.135.0.10@o2ib", "8");
	uint64_t a_nid = raw_nid4("127.135.0.10@o2ib");
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	struct fab_cm_event req, ev;
	struct o2ib_msg m, creq;
	struct o2ib_wire_err err;
	struct o2ib_rej rej;
	ulnet_eq *eq;
	int n;

	assert_int_equal(ulnet_eq_create(&eq), 0);
	raw_open(&rp, raw_ip, true);
	node_put(a, eq, rp.nid, 1);
	raw_expect_event(&rp, FAB_CM_CONNECT_REQUEST, &req); /* the node's CONNREQ: not answered yet */
	assert_int_equal(o2ib_msg_unpack(req.private_data, req.private_data_len, 0, &creq, &err), 0);
	assert_int_equal(creq.type, O2IB_MSG_CONNREQ);
	n = raw_connreq(&rp, a_nid, O2IB_MSG_VERSION_2, 8, 257, pd);
	raw_connect(&rp, "127.135.0.10", pd, (size_t)n, &ev);
	if (node_wins) {
		assert_int_equal(ev.type, FAB_CM_REJECTED);
		assert_int_equal(o2ib_rej_unpack(ev.private_data, ev.private_data_len, &rej, &err), 0);
		assert_int_equal(rej.why, O2IB_REJECT_CONN_RACE);
		rp.f->destroy_id(rp.id);
		/* the loser accepts the winner's CONNREQ: the PUT comes over the node's connection */
		rp.node_nid = creq.srcnid;
		rp.node_stamp = creq.srcstamp;
		raw_qp(&rp, req.id);
		raw_msg_init(&rp, &m, O2IB_MSG_CONNACK);
		m.dststamp = creq.srcstamp;
		m.u.connparams = creq.u.connparams;
		n = o2ib_msg_pack(&m, false, pd, sizeof(pd));
		assert_int_equal(rp.f->accept(req.id, pd, (size_t)n), 0);
	} else {
		struct o2ib_rej r = { .magic = O2IB_MSG_MAGIC, .version = 0x12, .why = O2IB_REJECT_CONN_RACE,
				      .incarnation = rp.stamp, .cp = { 8, 257, O2IB_MSG_SIZE } };

		assert_int_equal(ev.type, FAB_CM_ESTABLISHED);
		assert_int_equal(o2ib_msg_unpack(ev.private_data, ev.private_data_len, 0, &m, &err), 0);
		rp.node_nid = m.srcnid;
		rp.node_stamp = m.srcstamp;
		n = o2ib_rej_pack(&r, pd, sizeof(pd));
		assert_int_equal(rp.f->reject(req.id, pd, (size_t)n), 0);
		rp.f->destroy_id(req.id);
	}
	assert_true(raw_msg(&rp, 10000, &m));
	assert_int_equal(m.type, O2IB_MSG_IMMEDIATE);
	assert_int_equal(send_status(eq), 0);
	finish(a, eq);
}

static void test_conn_race(void **state)
{
	(void)state;
	race("127.135.0.9", true);
	race("127.135.0.11", false);
}

/* ---- active side: what each reject leads to ---- */

struct active_case {
	const char *name;
	uint8_t why;
	uint16_t rej_version;
	struct o2ib_connparams rej_cp;  /* what the reject says the raw peer accepts */
	bool retry;                     /* a second CONNREQ must follow */
	uint16_t want_version, want_depth, want_frags; /* in that CONNREQ (0: as the first) */
	bool want_stamp;                /* the CONNREQ names the incarnation the reject gave */
};

static const struct active_case active_cases[] = {
	/* fewer fragments per credit: the QP now holds the full depth (255 x 17 WRs <= 32768) */
	{ "RDMA_FRAGS 16", O2IB_REJECT_RDMA_FRAGS, 0x12, { 255, 16, 4096 }, true, 0x12, 255, 16, false },
	{ "MSG_QUEUE_SIZE 8", O2IB_REJECT_MSG_QUEUE_SIZE, 0x12, { 8, 257, 4096 }, true, 0x12, 8, 257, false },
	/* V1 peers want exactly depth 8 and 256 fragments */
	{ "CONN_UNCOMPAT 0x11", O2IB_REJECT_CONN_UNCOMPAT, 0x11, { 0 }, true, 0x11, 8, 256, false },
	{ "FATAL from a V1 peer", O2IB_REJECT_FATAL, 0x11, { 0 }, true, 0x11, 8, 256, false },
	{ "CONN_STALE", O2IB_REJECT_CONN_STALE, 0x12, { 255, 257, 4096 }, true, 0x12, 0, 257, true },
	{ "CONN_RACE", O2IB_REJECT_CONN_RACE, 0x12, { 255, 257, 4096 }, true, 0x12, 0, 257, false },
	{ "NO_RESOURCES", O2IB_REJECT_NO_RESOURCES, 0x12, { 255, 257, 4096 }, false, 0, 0, 0, false },
	{ "FATAL", O2IB_REJECT_FATAL, 0x12, { 255, 257, 4096 }, false, 0, 0, 0, false },
	{ "EARLY", O2IB_REJECT_EARLY, 0x12, { 255, 257, 4096 }, false, 0, 0, 0, false },
	{ "RDMA_FRAGS not fewer", O2IB_REJECT_RDMA_FRAGS, 0x12, { 255, 300, 4096 }, false, 0, 0, 0, false },
	{ "no private data", 0, 0, { 0 }, false, 0, 0, 0, false },
};

static void test_active_rejects(void **state)
{
	ulnet_node *a = node_up(NODE_NID, "255");
	ulnet_eq *eq;

	(void)state;
	assert_int_equal(ulnet_eq_create(&eq), 0);
	for (unsigned c = 0; c < sizeof(active_cases) / sizeof(active_cases[0]); c++) {
		const struct active_case *k = &active_cases[c];
		struct o2ib_rej r = { .magic = O2IB_MSG_MAGIC, .version = k->rej_version, .why = k->why,
				      .incarnation = 0xfeed0000u + c, .cp = k->rej_cp };
		uint8_t pd[FAB_PRIVATE_DATA_MAX];
		struct fab_cm_event req, ev;
		struct o2ib_msg first, next, m;
		struct o2ib_wire_err err;
		char ip[32];
		int n;

		snprintf(ip, sizeof(ip), "127.135.1.%u", c + 1);
		raw_open(&rp, ip, true);
		errors_about(rp.nid);
		node_put(a, eq, rp.nid, c);
		raw_expect_event(&rp, FAB_CM_CONNECT_REQUEST, &req);
		assert_int_equal(o2ib_msg_unpack(req.private_data, req.private_data_len, 0, &first, &err), 0);
		assert_int_equal(first.type, O2IB_MSG_CONNREQ);
		assert_int_equal(first.version, 0x12);
		n = k->why ? o2ib_rej_pack(&r, pd, sizeof(pd)) : 0;
		assert_true(n >= 0);
		assert_int_equal(rp.f->reject(req.id, pd, (size_t)n), 0);
		rp.f->destroy_id(req.id);
		if (!k->retry) {
			int st = send_status(eq);

			print_message("reject %s: send failed %s, no retry\n", k->name, strerror(-st));
			assert_true(st < 0);
			/* failed at the reject: a node that retried later would have kept the message until
			 * its timeout failed it (ETIMEDOUT), and one that retried at once sent its CONNREQ
			 * before failing it (the shm provider sends it within the connect call): none is
			 * waiting for the raw peer */
			assert_int_not_equal(st, -ETIMEDOUT);
			raw_pump(&rp, 0);
			assert_false(raw_event(&rp, 0, &ev)); /* no second CONNREQ */
			if (log_count_errors() != 1)
				fail_msg("reject %s: %d O2IB error lines, want 1", k->name, log_count_errors());
			raw_close(&rp);
			continue;
		}
		raw_expect_event(&rp, FAB_CM_CONNECT_REQUEST, &req);
		assert_int_equal(o2ib_msg_unpack(req.private_data, req.private_data_len, 0, &next, &err), 0);
		print_message("reject %s: retried v0x%x depth %u frags %u dststamp %#llx\n", k->name, next.version,
			      next.u.connparams.queue_depth, next.u.connparams.max_frags,
			      (unsigned long long)next.dststamp);
		assert_int_equal(next.type, O2IB_MSG_CONNREQ);
		assert_int_equal(next.version, k->want_version);
		assert_int_equal(next.u.connparams.queue_depth,
				 k->want_depth ? k->want_depth : first.u.connparams.queue_depth);
		assert_int_equal(next.u.connparams.max_frags, k->want_frags);
		assert_true(next.dststamp == (k->want_stamp ? r.incarnation : 0));
		assert_int_equal(log_count_errors(), 0); /* a retry is not an error */
		/* accept it: the node then uses what it proposed, and the PUT arrives */
		rp.node_nid = next.srcnid;
		rp.node_stamp = next.srcstamp;
		rp.version = next.version;
		raw_qp(&rp, req.id);
		raw_msg_init(&rp, &m, O2IB_MSG_CONNACK);
		m.u.connparams = next.u.connparams;
		n = o2ib_msg_pack(&m, false, pd, sizeof(pd));
		assert_int_equal(rp.f->accept(req.id, pd, (size_t)n), 0);
		assert_true(raw_msg(&rp, 10000, &m));
		assert_int_equal(m.type, O2IB_MSG_IMMEDIATE);
		assert_int_equal(m.version, next.version);
		assert_int_equal(send_status(eq), 0);
		expect_limits(a, rp.nid, next.u.connparams.queue_depth, next.u.connparams.max_frags);
		raw_hangup(&rp);
		raw_close(&rp);
	}
	ulnet_node_close(a);
	ulnet_eq_destroy(eq);
}

/* A peer that rejects STALE forever: O2IB_RECONNECT_BURST reconnects at once, then one a second, until
 * the message's timeout (5 s) fails it with one line. */
static void test_active_reject_storm(void **state)
{
	ulnet_node *a = node_up(NODE_NID, "8");
	struct o2ib_rej r = { .magic = O2IB_MSG_MAGIC, .version = 0x12, .why = O2IB_REJECT_CONN_STALE,
			      .incarnation = 0xabcd, .cp = { 8, 257, O2IB_MSG_SIZE } };
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	struct fab_cm_event ev;
	unsigned early = 0, total = 0;
	double t0 = 0;
	ulnet_eq *eq;
	int n = o2ib_rej_pack(&r, pd, sizeof(pd)), st = 0;

	(void)state;
	assert_int_equal(ulnet_eq_create(&eq), 0);
	raw_open(&rp, "127.135.2.1", true);
	errors_about(rp.nid);
	node_put(a, eq, rp.nid, 1);
	/* answer every CONNREQ with STALE until the PUT fails (its timeout is 5 s; give up after 20) */
	for (int waited = 0; !st; waited += 20) {
		struct ulnet_event uev;
		struct timespec ts;
		double t;

		assert_true(waited < 20000);
		if (ulnet_eq_wait(eq, 0, &uev) == 1 && uev.type == ULNET_EVENT_SEND) {
			st = uev.status;
			assert_true(st != 0);
		}
		if (!raw_event(&rp, 20, &ev) || ev.type != FAB_CM_CONNECT_REQUEST)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
		if (!total)
			t0 = t;
		total++;
		early += t - t0 < 0.5;
		assert_int_equal(rp.f->reject(ev.id, pd, (size_t)n), 0);
		rp.f->destroy_id(ev.id);
	}
	print_message("STALE forever: %u CONNREQs in the first 0.5 s, %u in all; the PUT failed: %s\n", early, total,
		      strerror(-st));
	assert_true(early <= O2IB_RECONNECT_BURST + 1);  /* no storm */
	assert_true(total > O2IB_RECONNECT_BURST + 1);   /* but it kept trying, once a second */
	assert_true(total <= O2IB_RECONNECT_BURST + 8);
	assert_int_equal(st, -ETIMEDOUT);
	assert_int_equal(log_count_errors(), 1);
	finish(a, eq);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_passive_negotiation),
		cmocka_unit_test(test_passive_depth_fits_rx_ring),
		cmocka_unit_test(test_active_depth_fits_rx_ring),
		cmocka_unit_test(test_passive_depth_used),
		cmocka_unit_test(test_passive_rejects),
		cmocka_unit_test(test_conn_race),
		cmocka_unit_test(test_active_rejects),
		cmocka_unit_test(test_active_reject_storm),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
