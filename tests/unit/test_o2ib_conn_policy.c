/* SPDX-License-Identifier: MIT */
/* o2ib connection negotiation (src/lnd/o2ib/o2ib_conn_policy.c). Both ends run our policy and talk
 * through packed private data (in either byte order), so every table row exercises CONNREQ, the
 * passive decision, CONNACK or kib_rej, and the active side's reaction, until a connection or a
 * clear error. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lnd/o2ib/o2ib_conn_policy.h"
#include "hex.h"

#define NID_A UINT64_C(0x00050000c0a80102) /* 192.168.1.2@o2ib */
#define NID_P UINT64_C(0x00050000c0a80101) /* 192.168.1.1@o2ib */
#define STAMP_A UINT64_C(1700000000000001)
#define STAMP_P UINT64_C(1700000000000002)

static const struct o2ib_peer_view no_view;

struct outcome {
	int rc;                  /* 0 connected, else the active side's error */
	unsigned rounds;
	uint16_t version, depth, frags;
	uint8_t last_why;
};

/* Run the handshake: @act proposes to @pas until it connects, gives up, or 6 rounds pass. */
static struct outcome handshake(const struct o2ib_local *act, const struct o2ib_local *pas, uint16_t last_version,
				bool swab)
{
	static struct o2ib_msg req, ack;
	struct o2ib_active a;
	struct o2ib_passive_decision d;
	struct o2ib_conn_result res;
	struct o2ib_reject_action x;
	struct outcome out = { -EAGAIN, 0, 0, 0, 0, 0 };
	uint8_t buf[256];
	int n;

	o2ib_active_init(act, pas->nid, last_version, 0, &a);
	for (out.rounds = 1; out.rounds <= 6; out.rounds++) {
		o2ib_active_connreq(act, &a, &req);
		assert_int_equal(req.credits, 0);
		n = o2ib_msg_pack_order(&req, false, swab, buf, sizeof(buf));
		assert_int_equal(n, O2IB_CONN_MSG_SIZE);
		o2ib_passive_decide(buf, (size_t)n, pas, &no_view, &d);
		assert_non_null(d.reason);
		if (d.accept) {
			assert_int_equal(d.version, req.version);
			assert_true(d.peer_nid == act->nid && d.peer_stamp == act->stamp);
			memset(&ack, 0, sizeof(ack));
			ack.version = d.version;
			ack.type = O2IB_MSG_CONNACK;
			ack.srcnid = pas->nid;
			ack.srcstamp = pas->stamp;
			ack.dstnid = d.peer_nid;
			ack.dststamp = d.peer_stamp;
			ack.u.connparams = d.cp;
			n = o2ib_msg_pack_order(&ack, false, !swab, buf, sizeof(buf));
			out.rc = o2ib_active_on_connack(buf, (size_t)n, act, &a, &res);
			out.version = res.version;
			out.depth = res.queue_depth;
			out.frags = res.max_frags;
			if (out.rc == 0)
				assert_true(res.peer_stamp == pas->stamp);
			return out;
		}
		n = o2ib_rej_pack_order(&d.rej, swab, buf, sizeof(buf));
		o2ib_active_on_reject(buf, (size_t)n, &a, &x);
		out.last_why = x.why;
		assert_non_null(x.reason);
		if (x.retry != O2IB_RETRY_NOW) {
			out.rc = x.retry == O2IB_GIVE_UP ? x.err : -EAGAIN;
			return out;
		}
	}
	return out;
}

static struct o2ib_local node(uint64_t nid, uint64_t stamp, uint16_t credits, uint16_t frags)
{
	return (struct o2ib_local){ nid, stamp, true, { credits, frags, 0, false } };
}

/* A peer proposing max_frags 16/256/257 and queue depths 8..255 gets min(its, ours), whichever side
 * starts, in both byte orders. */
static void test_negotiated_values(void **state)
{
	static const uint16_t peer_frags[] = { 16, 256, 257 }, our_credits[] = { 8, 32, 255 },
			      our_frags[] = { 16, 256, 257 };
	unsigned runs = 0;

	(void)state;
	for (unsigned f = 0; f < 3; f++)
	for (unsigned c = 0; c < 3; c++)
	for (unsigned g = 0; g < 3; g++)
	for (uint16_t depth = 8; depth <= 255; depth++) {
		struct o2ib_local peer = node(NID_A, STAMP_A, depth, peer_frags[f]);
		struct o2ib_local me = node(NID_P, STAMP_P, our_credits[c], our_frags[g]);
		uint16_t want_d = depth < our_credits[c] ? depth : our_credits[c];
		uint16_t want_f = peer_frags[f] < our_frags[g] ? peer_frags[f] : our_frags[g];

		for (int dir = 0; dir < 2; dir++) {
			struct outcome o = dir ? handshake(&me, &peer, 0, depth & 1) : handshake(&peer, &me, 0, depth & 1);

			if (o.rc != 0)
				fail_msg("frags %u/%u depth %u/%u dir %d: rc %d after %u rounds (why %u)", peer_frags[f],
					 our_frags[g], depth, our_credits[c], dir, o.rc, o.rounds, o.last_why);
			assert_int_equal(o.version, O2IB_MSG_VERSION_2);
			assert_int_equal(o.depth, want_d);
			assert_int_equal(o.frags, want_f);
			assert_true(o.rounds <= 3); /* at most one reject per renegotiated value */
			runs++;
		}
	}
	assert_int_equal(runs, 3 * 3 * 3 * 248 * 2);
}

/* V1: a 0x11 CONNREQ is answered in 0x11 with depth 8; a V2 proposal to a V1-only peer (which answers
 * FATAL in 0x11) falls back to 0x11. */
static void test_version_1(void **state)
{
	struct o2ib_local a = node(NID_A, STAMP_A, 64, 257), p = node(NID_P, STAMP_P, 64, 257);
	struct o2ib_active act;
	struct o2ib_reject_action x;
	struct outcome o;
	uint8_t buf[64];
	size_t n;

	(void)state;
	o = handshake(&a, &p, O2IB_MSG_VERSION_1, false);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.version, O2IB_MSG_VERSION_1);
	assert_int_equal(o.depth, 8);
	assert_int_equal(o.rounds, 1);
	/* a V1-only peer's 7-byte FATAL reject */
	o2ib_active_init(&a, NID_P, 0, 0, &act);
	assert_int_equal(act.version, O2IB_MSG_VERSION_2);
	n = hex_decode("91 1b e9 0b 11 00 03", buf, sizeof(buf));
	o2ib_active_on_reject(buf, n, &act, &x);
	assert_int_equal(x.retry, O2IB_RETRY_NOW);
	assert_int_equal(act.version, O2IB_MSG_VERSION_1);
	assert_int_equal(act.queue_depth, 8);
	assert_int_equal(act.max_frags, 256); /* what a V1 peer insists on */
	/* FATAL from a V2 peer is final */
	o2ib_active_init(&a, NID_P, 0, 0, &act);
	n = hex_decode("91 1b e9 0b 12 00 03", buf, sizeof(buf));
	o2ib_active_on_reject(buf, n, &act, &x);
	assert_int_equal(x.retry, O2IB_GIVE_UP);
	assert_int_equal(x.err, -ECONNREFUSED);
}

/* Every reject reason's documented reaction. */
struct rej_row {
	uint8_t why;
	uint16_t version;
	bool with_cp;
	uint16_t cp_depth, cp_frags;
	enum o2ib_retry retry;
	int err;
	uint16_t after_version, after_depth, after_frags;
	uint64_t after_stamp;
};

static void test_reject_reasons(void **state)
{
	static const struct rej_row rows[] = {
		{ O2IB_REJECT_CONN_RACE, 0x12, true, 8, 257, O2IB_RETRY_LATER, 0, 0x12, 32, 257, 0 },
		{ O2IB_REJECT_NO_RESOURCES, 0x12, true, 8, 257, O2IB_GIVE_UP, -ENOMEM, 0x12, 32, 257, 0 },
		{ O2IB_REJECT_FATAL, 0x12, true, 8, 257, O2IB_GIVE_UP, -ECONNREFUSED, 0x12, 32, 257, 0 },
		{ O2IB_REJECT_FATAL, 0x11, false, 0, 0, O2IB_RETRY_NOW, 0, 0x11, 8, 256, 0 },
		{ O2IB_REJECT_CONN_UNCOMPAT, 0x11, false, 0, 0, O2IB_RETRY_NOW, 0, 0x11, 8, 256, 0 },
		{ O2IB_REJECT_CONN_UNCOMPAT, 0x12, true, 8, 257, O2IB_GIVE_UP, -EPROTO, 0x12, 32, 257, 0 },
		{ O2IB_REJECT_CONN_STALE, 0x12, true, 32, 257, O2IB_RETRY_NOW, 0, 0x12, 32, 257, 0x77 },
		{ O2IB_REJECT_RDMA_FRAGS, 0x12, true, 32, 16, O2IB_RETRY_NOW, 0, 0x12, 32, 16, 0 },
		{ O2IB_REJECT_RDMA_FRAGS, 0x12, true, 32, 257, O2IB_GIVE_UP, -EPROTO, 0x12, 32, 257, 0 },
		{ O2IB_REJECT_RDMA_FRAGS, 0x12, false, 0, 0, O2IB_GIVE_UP, -EPROTO, 0x12, 32, 257, 0 },
		{ O2IB_REJECT_MSG_QUEUE_SIZE, 0x12, true, 8, 257, O2IB_RETRY_NOW, 0, 0x12, 8, 257, 0 },
		{ O2IB_REJECT_MSG_QUEUE_SIZE, 0x12, true, 64, 257, O2IB_GIVE_UP, -EPROTO, 0x12, 32, 257, 0 },
		{ O2IB_REJECT_INVALID_SRV_ID, 0x12, true, 8, 257, O2IB_GIVE_UP, -ECONNREFUSED, 0x12, 32, 257, 0 },
		{ O2IB_REJECT_EARLY, 0x12, true, 8, 257, O2IB_GIVE_UP, -ECONNREFUSED, 0x12, 32, 257, 0 },
		{ 42, 0x12, true, 8, 257, O2IB_GIVE_UP, -ECONNREFUSED, 0x12, 32, 257, 0 },
	};
	struct o2ib_local me = node(NID_A, STAMP_A, 32, 257);

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct rej_row *r = &rows[i];
		struct o2ib_rej rej = { O2IB_MSG_MAGIC, r->version, r->why, 0x77, true, { r->cp_depth, r->cp_frags, 4096 } };
		struct o2ib_active a;
		struct o2ib_reject_action x;
		uint8_t buf[32];
		int n;

		o2ib_active_init(&me, NID_P, 0, 0x55, &a);
		n = o2ib_rej_pack_order(&rej, i & 1, buf, sizeof(buf));
		if (!r->with_cp && r->version != 0x11)
			n = 7;
		o2ib_active_on_reject(buf, (size_t)n, &a, &x);
		{
			char line[300];

			o2ib_reject_describe(&x, &a, line, sizeof(line));
			print_message("%s\n", line);
			assert_null(strchr(line, '\n'));
			assert_non_null(strstr(line, x.reason));
		}
		assert_int_equal(x.retry, r->retry);
		assert_int_equal(x.err, r->err);
		assert_int_equal(a.version, r->after_version);
		assert_int_equal(a.queue_depth, r->after_depth);
		assert_int_equal(a.max_frags, r->after_frags);
		if (r->after_stamp)
			assert_true(a.peer_stamp == r->after_stamp);
	}
	{ /* a peer that rejects STALE forever: O2IB_RECONNECT_BURST retries at once, then one a second */
		struct o2ib_rej rej = { O2IB_MSG_MAGIC, 0x12, O2IB_REJECT_CONN_STALE, 0x77, true, { 32, 257, 4096 } };
		struct o2ib_active a;
		struct o2ib_reject_action x;
		uint8_t buf[32];
		int n = o2ib_rej_pack(&rej, buf, sizeof(buf));

		o2ib_active_init(&me, NID_P, 0, 0, &a);
		for (unsigned i = 1; i <= O2IB_RECONNECT_BURST + 2; i++) {
			o2ib_active_on_reject(buf, (size_t)n, &a, &x);
			assert_int_equal(a.attempts, i);
			assert_int_equal(x.retry, i <= O2IB_RECONNECT_BURST ? O2IB_RETRY_NOW : O2IB_RETRY_LATER);
			assert_int_equal(x.delay_ms, i <= O2IB_RECONNECT_BURST ? 0 : O2IB_HELD_RETRY_MS);
			assert_true(a.peer_stamp == 0x77); /* the renegotiated values stay for the held retry */
		}
		/* CONN_RACE waits for the rejected connection to go */
		rej.why = O2IB_REJECT_CONN_RACE;
		n = o2ib_rej_pack(&rej, buf, sizeof(buf));
		o2ib_active_init(&me, NID_P, 0, 0, &a);
		o2ib_active_on_reject(buf, (size_t)n, &a, &x);
		assert_int_equal(x.retry, O2IB_RETRY_LATER);
		assert_int_equal(x.delay_ms, O2IB_RACE_RETRY_MS);
	}
	{ /* no o2ib private data at all */
		struct o2ib_active a;
		struct o2ib_reject_action x;

		o2ib_active_init(&me, NID_P, 0, 0, &a);
		o2ib_active_on_reject((const uint8_t *)"xx", 2, &a, &x);
		assert_int_equal(x.retry, O2IB_GIVE_UP);
	}
}

/* Passive rejects for bad CONNREQs and state conflicts. */
static void test_passive_rejects(void **state)
{
	static struct o2ib_msg req;
	struct o2ib_local a = node(NID_A, STAMP_A, 8, 257), me = node(NID_P, STAMP_P, 8, 257);
	struct o2ib_active act;
	struct o2ib_passive_decision d;
	struct o2ib_peer_view pv = { 0 };
	uint8_t buf[128];
	int n;

	(void)state;
	o2ib_active_init(&a, NID_P, 0, 0, &act);
#define DECIDE(len) o2ib_passive_decide(buf, (len), &me, &pv, &d)
#define PACK() (o2ib_active_connreq(&a, &act, &req), n = o2ib_msg_pack(&req, false, buf, sizeof(buf)))
	PACK();
	DECIDE((size_t)n);
	assert_true(d.accept);
	DECIDE(50); /* shorter than the structure */
	assert_false(d.accept);
	assert_int_equal(d.rej.why, O2IB_REJECT_FATAL);
	assert_int_equal(d.rej.version, 0x12);
	assert_non_null(strstr(d.reason, "shorter"));
	DECIDE(3);
	assert_int_equal(d.rej.why, O2IB_REJECT_FATAL);
	ulnet_put_ho32(buf, O2IB_PROTO_MAGIC);
	DECIDE((size_t)n);
	assert_int_equal(d.rej.why, O2IB_REJECT_FATAL);
	PACK();
	ulnet_put_ho16(buf + 4, 0x13);
	DECIDE((size_t)n);
	assert_int_equal(d.rej.why, O2IB_REJECT_FATAL);
	assert_int_equal(d.rej.version, 0x12);
	/* wrong NID, NI not ready, stale dststamp, not a CONNREQ, msg size, V1 depth */
	act.peer_nid = NID_P + 1;
	PACK();
	DECIDE((size_t)n);
	assert_int_equal(d.rej.why, O2IB_REJECT_FATAL);
	act.peer_nid = NID_P;
	me.ni_ready = false;
	PACK();
	DECIDE((size_t)n);
	assert_int_equal(d.rej.why, O2IB_REJECT_EARLY);
	me.ni_ready = true;
	act.peer_stamp = STAMP_P - 1;
	PACK();
	DECIDE((size_t)n);
	assert_int_equal(d.rej.why, O2IB_REJECT_CONN_STALE);
	assert_true(d.rej.incarnation == STAMP_P);
	act.peer_stamp = STAMP_P; /* the right one is fine */
	PACK();
	DECIDE((size_t)n);
	assert_true(d.accept);
	req.type = O2IB_MSG_CONNACK;
	n = o2ib_msg_pack(&req, false, buf, sizeof(buf));
	DECIDE((size_t)n);
	assert_int_equal(d.rej.why, O2IB_REJECT_FATAL);
	o2ib_active_connreq(&a, &act, &req);
	req.u.connparams.max_msg_size = 8192;
	n = o2ib_msg_pack(&req, false, buf, sizeof(buf));
	DECIDE((size_t)n);
	assert_int_equal(d.rej.why, O2IB_REJECT_FATAL);
	o2ib_active_connreq(&a, &act, &req);
	req.version = 0x11;
	req.u.connparams.queue_depth = 9;
	n = o2ib_msg_pack(&req, false, buf, sizeof(buf));
	DECIDE((size_t)n);
	assert_int_equal(d.rej.why, O2IB_REJECT_FATAL);
	assert_int_equal(d.rej.version, 0x11);
	assert_int_equal(o2ib_rej_pack(&d.rej, buf, sizeof(buf)), 7); /* V1 gets the 7-byte form */
	/* the log line names what was asked and what we accept */
	o2ib_active_connreq(&a, &act, &req);
	req.u.connparams.max_frags = 300;
	n = o2ib_msg_pack(&req, false, buf, sizeof(buf));
	DECIDE((size_t)n);
	assert_int_equal(d.rej.why, O2IB_REJECT_RDMA_FRAGS);
	{
		char line[300];

		o2ib_passive_describe(&d, line, sizeof(line));
		print_message("%s\n", line);
		assert_non_null(strstr(line, "rejected RDMA_FRAGS"));
		assert_non_null(strstr(line, "max_frags 300"));
		assert_non_null(strstr(line, "I accept 8/257/4096"));
	}
	/* a known peer with another incarnation: STALE and close the old connections */
	pv = (struct o2ib_peer_view){ .known = true, .stamp = STAMP_A - 5, .version = 0x12 };
	PACK();
	DECIDE((size_t)n);
	assert_int_equal(d.rej.why, O2IB_REJECT_CONN_STALE);
	assert_true(d.close_stale);
	/* connection race: 192.168.1.1 vs 192.168.1.2 -- the higher hash (.2, the requester) wins */
	pv = (struct o2ib_peer_view){ .connecting = true };
	DECIDE((size_t)n);
	assert_true(d.accept);
	me.nid = NID_A + 1; /* 192.168.1.3: now I win */
	act.peer_nid = me.nid;
	PACK();
	DECIDE((size_t)n);
	assert_false(d.accept);
	assert_int_equal(d.rej.why, O2IB_REJECT_CONN_RACE);
	pv.races = O2IB_MAX_CONN_RACES; /* the escape hatch */
	DECIDE((size_t)n);
	assert_true(d.accept);
#undef DECIDE
#undef PACK
}

/* conns_per_peer: a known peer's Nth connection with its current incarnation is accepted up to the
 * cap (its established ones plus those being accepted), refused NO_RESOURCES past it; another
 * incarnation or version is STALE whatever the count; a race still goes by the tie-break. */
static void test_conns_per_peer_policy(void **state)
{
	static const struct {
		const char *name;
		bool known;
		uint64_t stamp;       /* the peer's incarnation as we know it (its CONNREQ says STAMP_A) */
		uint16_t version;
		bool connecting;
		uint32_t conns;       /* its connections here now */
		bool accept;
		uint8_t why;          /* when refused */
		bool close_stale;
	} rows[] = {
		{ "first connection", false, 0, 0, false, 0, true, 0, false },
		{ "second, same incarnation", true, STAMP_A, 0x12, false, 1, true, 0, false },
		{ "126th (one below the cap)", true, STAMP_A, 0x12, false, O2IB_CONNS_PER_PEER_MAX - 1, true, 0, false },
		{ "at the cap", true, STAMP_A, 0x12, false, O2IB_CONNS_PER_PEER_MAX, false, O2IB_REJECT_NO_RESOURCES, false },
		{ "far past the cap", true, STAMP_A, 0x12, false, 100000, false, O2IB_REJECT_NO_RESOURCES, false },
		{ "being accepted only (not yet up)", false, 0, 0, false, O2IB_CONNS_PER_PEER_MAX, false,
		  O2IB_REJECT_NO_RESOURCES, false },
		{ "new incarnation, 2 conns", true, STAMP_A - 5, 0x12, false, 2, false, O2IB_REJECT_CONN_STALE, true },
		{ "new incarnation at the cap", true, STAMP_A - 5, 0x12, false, O2IB_CONNS_PER_PEER_MAX, false,
		  O2IB_REJECT_CONN_STALE, true },
		{ "same incarnation, other version", true, STAMP_A, 0x11, false, 1, false, O2IB_REJECT_CONN_STALE, true },
		{ "race, I win (my hash is higher)", true, STAMP_A, 0x12, true, 1, false, O2IB_REJECT_CONN_RACE, false },
	};
	static struct o2ib_msg req;
	struct o2ib_local a = node(NID_A, STAMP_A, 8, 257), me = node(NID_P, STAMP_P, 8, 257);
	struct o2ib_active act;
	struct o2ib_passive_decision d;
	uint8_t buf[128];
	char line[300];
	int n;

	(void)state;
	o2ib_active_init(&a, NID_P, 0, 0, &act);
	o2ib_active_connreq(&a, &act, &req);
	n = o2ib_msg_pack(&req, false, buf, sizeof(buf));
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct o2ib_peer_view pv = { .known = rows[i].known, .stamp = rows[i].stamp, .version = rows[i].version,
					     .connecting = rows[i].connecting, .conns = rows[i].conns };

		/* the race row: I (the passive side) must win, so my NID's hash is the higher one */
		me.nid = rows[i].connecting ? NID_A + 1 : NID_P;
		req.dstnid = me.nid;
		n = o2ib_msg_pack(&req, false, buf, sizeof(buf));
		o2ib_passive_decide(buf, (size_t)n, &me, &pv, &d);
		o2ib_passive_describe(&d, line, sizeof(line));
		print_message("%-36s %s\n", rows[i].name, line);
		assert_int_equal(d.accept, rows[i].accept);
		assert_int_equal(d.close_stale, rows[i].close_stale);
		if (!rows[i].accept)
			assert_int_equal(d.rej.why, rows[i].why);
		if (rows[i].why == O2IB_REJECT_NO_RESOURCES) { /* the line names the count and the cap */
			char want[64];

			snprintf(want, sizeof(want), "it holds %u connections here, the cap is %u", rows[i].conns,
				 O2IB_CONNS_PER_PEER_MAX);
			assert_non_null(strstr(line, want));
		}
	}
	me.nid = NID_P;
}

/* A connection that comes up closes only its peer's connections to another incarnation or version;
 * a peer with none gets conns_per_peer (1..127) opened, one with any (up, ours or its own on the way)
 * none more. */
static void test_conns_stale_and_open(void **state)
{
	static const struct { uint64_t old_stamp; uint16_t old_v; uint64_t stamp; uint16_t v; bool stale; } st[] = {
		{ 7, 0x12, 7, 0x12, false }, { 7, 0x12, 8, 0x12, true }, { 8, 0x12, 7, 0x12, true },
		{ 7, 0x11, 7, 0x12, true }, { 7, 0x12, 7, 0x11, true },
	};
	static const struct { uint32_t cpp, up, connecting, accepting, want; } op[] = {
		{ 1, 0, 0, 0, 1 }, { 2, 0, 0, 0, 2 }, { 127, 0, 0, 0, 127 }, { 500, 0, 0, 0, O2IB_CONNS_PER_PEER_MAX },
		{ 0, 0, 0, 0, 1 }, { 2, 1, 0, 0, 0 }, { 2, 0, 1, 0, 0 }, { 2, 0, 0, 1, 0 }, { 4, 3, 0, 0, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
		assert_int_equal(o2ib_conn_stale(st[i].old_stamp, st[i].old_v, st[i].stamp, st[i].v), st[i].stale);
	for (size_t i = 0; i < sizeof(op) / sizeof(op[0]); i++)
		assert_int_equal(o2ib_conns_to_open(op[i].cpp, op[i].up, op[i].connecting, op[i].accepting), op[i].want);
}

static void test_connack_checks(void **state)
{
	static struct o2ib_msg ack;
	struct o2ib_local a = node(NID_A, STAMP_A, 32, 257);
	struct o2ib_active act;
	struct o2ib_conn_result res;
	uint8_t buf[128];
	int n;

	(void)state;
	o2ib_active_init(&a, NID_P, 0, 0, &act);
	memset(&ack, 0, sizeof(ack));
	ack = (struct o2ib_msg){ .version = 0x12, .type = O2IB_MSG_CONNACK, .srcnid = NID_P, .srcstamp = STAMP_P,
				 .dstnid = NID_A, .dststamp = STAMP_A };
	ack.u.connparams = (struct o2ib_connparams){ 16, 256, 4096 };
#define CHECK(rc) (n = o2ib_msg_pack(&ack, false, buf, sizeof(buf)), \
		   assert_int_equal(o2ib_active_on_connack(buf, (size_t)n, &a, &act, &res), rc))
	CHECK(0);
	assert_int_equal(res.queue_depth, 16);
	assert_int_equal(res.max_frags, 256);
	ack.u.connparams.queue_depth = 33;
	CHECK(-EPROTO);
	ack.u.connparams.queue_depth = 16;
	ack.u.connparams.max_frags = 258;
	CHECK(-EPROTO);
	ack.u.connparams.max_frags = 257;
	ack.version = 0x11;
	CHECK(-EPROTO);
	ack.version = 0x12;
	ack.dststamp = STAMP_A + 1;
	CHECK(-ESTALE);
	ack.dststamp = STAMP_A;
	ack.dstnid = NID_P;
	CHECK(-ESTALE);
	ack.dstnid = NID_A;
	ack.type = O2IB_MSG_CONNREQ;
	CHECK(-EPROTO);
	assert_non_null(res.reason);
	assert_int_equal(o2ib_active_on_connack(buf, 40, &a, &act, &res), -EPROTO);
#undef CHECK
}

static void test_qp_and_tiebreak(void **state)
{
	struct o2ib_conn_tun t = { 128, 257, 4096, true };
	uint64_t ten_0_0_1 = UINT64_C(0x000500000a000001), nine_0_0_2 = UINT64_C(0x0005000009000002);

	(void)state;
	assert_int_equal(o2ib_depth_for_qp(&t, 128, 257), 4096 / 260);
	assert_int_equal(o2ib_depth_for_qp(&t, 8, 1), 8);
	t.max_qp_wr = 16;
	assert_int_equal(o2ib_depth_for_qp(&t, 8, 257), 1);
	t.max_qp_wr = 0;
	assert_int_equal(o2ib_depth_for_qp(&t, 255, 257), 255);
	/* nidhash and the numeric rule disagree on these two: both must be implementable */
	assert_false(o2ib_race_i_win(ten_0_0_1, nine_0_0_2, false));
	assert_true(o2ib_race_i_win(nine_0_0_2, ten_0_0_1, false));
	assert_true(o2ib_race_i_win(ten_0_0_1, nine_0_0_2, true));
	assert_false(o2ib_race_i_win(NID_A, NID_A, false));
	assert_false(o2ib_race_i_win(NID_A, NID_A, true));
}

/* A CONNREQ reduced by the QP limit advertises the reduced depth (LU-12621). */
static void test_reduced_depth_advertised(void **state)
{
	struct o2ib_local a = node(NID_A, STAMP_A, 64, 257), p = node(NID_P, STAMP_P, 64, 257);
	struct outcome o;

	(void)state;
	a.tun.max_qp_wr = 258 * 20;
	o = handshake(&a, &p, 0, false);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.depth, 20);
	a.tun.max_qp_wr = 0;
	p.tun.max_qp_wr = 258 * 10; /* the passive side's QP reduces it: the CONNACK says so */
	o = handshake(&a, &p, 0, true);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.depth, 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiated_values),
		cmocka_unit_test(test_version_1),
		cmocka_unit_test(test_reject_reasons),
		cmocka_unit_test(test_passive_rejects),
		cmocka_unit_test(test_connack_checks),
		cmocka_unit_test(test_conns_per_peer_policy),
		cmocka_unit_test(test_conns_stale_and_open),
		cmocka_unit_test(test_qp_and_tiebreak),
		cmocka_unit_test(test_reduced_depth_advertised),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
