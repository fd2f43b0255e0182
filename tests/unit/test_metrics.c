/* SPDX-License-Identifier: MIT */
/* Metrics (include/ulnet/metrics.h) through the scripted LND (tests/common/tst_lnd.h) on a test clock:
 * PUT egress, ACK and GET round trips (wire REPLY and out-of-band REPLY) land in the bucket of their
 * exact duration, on the NI and on the peer; failures are not timed; drops are counted by reason;
 * resets of a peer, an NI and the node; the histogram helpers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "internal.h"
#include "tst_owner.h"
#include "tst_lnd.h"

static _Atomic uint64_t fake_now = 1000000000ull;

static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

struct fixture {
	ulnet_node *node;
	ulnet_eq *eq;
	struct ulnet_ni *ni;
};

static void fx_open(struct fixture *f)
{
	struct ulnet_ni_conf conf = { .net = "gni", .nid = "1@gni" };

	memset(&tst, 0, sizeof(tst));
	tst_register();
	assert_int_equal(ulnet_node_open(NULL, &f->node), 0);
	tst_world_stop(f->node, NULL); /* the loops read the clock */
	ulnet__node_set_clock(f->node, fake_clock, NULL);
	tst_world_go(f->node);
	assert_int_equal(ulnet_eq_create(&f->eq), 0);
	assert_int_equal(ulnet_ni_add(f->node, &conf), 0);
	f->ni = tst.ni;
	assert_non_null(f->ni);
}

static void fx_close(struct fixture *f)
{
	struct ulnet_event ev;

	ulnet_node_close(f->node);
	while (ulnet_eq_wait(f->eq, 0, &ev) == 1)
		;
	assert_int_equal(ulnet_eq_destroy(f->eq), 0);
}

static void lock(struct fixture *f) { tst_enter(f->ni); }
static void unlock(struct fixture *f) { tst_exit(f->ni); }

static void drain(struct fixture *f)
{
	struct ulnet_event ev;

	while (ulnet_eq_wait(f->eq, 0, &ev) == 1)
		;
}

/* The gni NI's metrics (NI 1: 0 is lo). */
static struct ulnet_ni_metrics ni_m(struct fixture *f)
{
	struct ulnet_ni_metrics m;

	assert_int_equal(ulnet_ni_metrics_get(f->node, 1, &m), 0);
	assert_string_equal(m.net, "gni");
	return m;
}

/* Peer @n's metrics; fails when it has none. */
static struct ulnet_peer_metrics peer_m(struct fixture *f, unsigned n)
{
	struct ulnet_peer_metrics m;
	struct ulnet_nid nid = tst_nid(n);

	for (unsigned i = 0; ulnet_peer_metrics_get(f->node, i, &m) == 0; i++)
		if (ulnet_nid_equal(&m.nid, &nid))
			return m;
	fail_msg("no metrics for peer %u", n);
	return m;
}

/* The bucket of a duration of @us microseconds. */
static unsigned bucket_of(uint64_t us)
{
	unsigned b = 0;

	while (b + 1 < ULNET_HIST_BUCKETS && us >= ulnet_hist_bucket_le_us(b))
		b++;
	return b;
}

static void only_bucket(struct ulnet_hist h, unsigned b, uint64_t count)
{
	for (unsigned i = 0; i < ULNET_HIST_BUCKETS; i++)
		assert_true(h.bucket[i] == (i == b ? count : 0));
	assert_true(h.count == count);
}

static struct ulnet_handle bind_md(struct fixture *f, void *buf, uint32_t len, int threshold)
{
	struct ulnet_md md = { .start = buf, .length = len, .threshold = threshold, .eq = f->eq };
	struct ulnet_handle mdh;

	assert_int_equal(ulnet_md_bind(f->node, &md, ULNET_UNLINK, &mdh), 0);
	return mdh;
}

static void test_put_egress(void **state)
{
	struct fixture f;
	static uint8_t buf[64];
	struct ulnet_process_id to = { .nid = tst_nid(2), .pid = ULNET_PID_LUSTRE };
	struct ulnet_ni_metrics nm;
	struct ulnet_peer_metrics pm;

	(void)state;
	fx_open(&f);
	assert_int_equal(ulnet_put(f.node, bind_md(&f, buf, sizeof(buf), 1), ULNET_NOACK_REQ, &to, 4, 1, 0, 0), 0);
	ulnet__node_sync(f.node);
	assert_int_equal(tst.nsent, 1);
	fake_now += 5000; /* 5 us: bucket [4, 8) us */
	lock(&f);
	ulnet__finalize(tst.sent[0], 0);
	unlock(&f);
	nm = ni_m(&f);
	only_bucket(nm.lat.put, 3, 1);
	assert_true(nm.lat.put.sum_ns == 5000);
	only_bucket(nm.lat.get, 0, 0);
	only_bucket(nm.lat.ack, 0, 0);
	pm = peer_m(&f, 2);
	only_bucket(pm.lat.put, 3, 1);
	assert_true(pm.send_count == 1);
	assert_true(ulnet_nid_equal(&pm.ni_nid, &f.ni->nid));

	/* a failed send is not timed */
	assert_int_equal(ulnet_put(f.node, bind_md(&f, buf, sizeof(buf), 1), ULNET_NOACK_REQ, &to, 4, 1, 0, 0), 0);
	ulnet__node_sync(f.node);
	fake_now += 100000;
	lock(&f);
	ulnet__finalize(tst.sent[1], -EIO);
	unlock(&f);
	only_bucket(ni_m(&f).lat.put, 3, 1);
	drain(&f);
	fx_close(&f);
}

static void test_ack_rtt(void **state)
{
	struct fixture f;
	static uint8_t buf[64];
	struct ulnet_process_id to = { .nid = tst_nid(2), .pid = ULNET_PID_LUSTRE };
	struct ulnet_hdr h = tst_hdr(ULNET_MSG_ACK, 2, 1, 0);
	struct ulnet_nid from = tst_nid(2);
	const struct ulnet_msg_lnd_view *v;

	(void)state;
	fx_open(&f);
	assert_int_equal(ulnet_put(f.node, bind_md(&f, buf, sizeof(buf), 2), ULNET_ACK_REQ, &to, 4, 1, 0, 0), 0);
	ulnet__node_sync(f.node);
	v = ulnet__msg_view(tst.sent[0]);
	h.msg.ack.dst_wmd = v->hdr.msg.put.ack_wmd;
	h.msg.ack.mlength = sizeof(buf);
	fake_now += 1000; /* egress 1 us: [1, 2) */
	lock(&f);
	ulnet__finalize(tst.sent[0], 0);
	unlock(&f);
	fake_now += 299000; /* the ACK 300 us after the put: [256, 512) */
	lock(&f);
	assert_int_equal(ulnet__parse(f.ni, &h, &from, (void *)0x5), 0);
	unlock(&f);
	assert_int_equal(tst.nrecv, 1);
	lock(&f);
	ulnet__finalize(tst.recvs[0].msg, 0);
	unlock(&f);
	only_bucket(ni_m(&f).lat.put, 1, 1);
	only_bucket(ni_m(&f).lat.ack, bucket_of(300), 1);
	assert_int_equal(bucket_of(300), 9);
	only_bucket(peer_m(&f, 2).lat.ack, 9, 1);
	assert_true(ni_m(&f).lat.ack.sum_ns == 300000);
	drain(&f);
	fx_close(&f);
}

static void test_get_rtt(void **state)
{
	struct fixture f;
	static uint8_t buf[4096];
	struct ulnet_process_id to = { .nid = tst_nid(2), .pid = ULNET_PID_LUSTRE };
	struct ulnet_hdr h = tst_hdr(ULNET_MSG_REPLY, 2, 1, 100);
	struct ulnet_nid from = tst_nid(2);
	struct ulnet_msg *reply;

	(void)state;
	fx_open(&f);
	/* over the wire: REPLY 2 ms after the GET */
	assert_int_equal(ulnet_get(f.node, bind_md(&f, buf, sizeof(buf), 2), &to, 4, 1, 0), 0);
	ulnet__node_sync(f.node);
	h.msg.reply.dst_wmd = ulnet__msg_view(tst.sent[0])->hdr.msg.get.return_wmd;
	lock(&f);
	ulnet__finalize(tst.sent[0], 0);
	unlock(&f);
	only_bucket(ni_m(&f).lat.put, 0, 0); /* a GET's SEND is not an egress sample */
	fake_now += 2000000;
	lock(&f);
	assert_int_equal(ulnet__parse(f.ni, &h, &from, (void *)0x5), 0);
	unlock(&f);
	fake_now += 100000; /* the data lands 100 us later: that is in the round trip */
	lock(&f);
	ulnet__finalize(tst.recvs[0].msg, 0);
	unlock(&f);
	only_bucket(ni_m(&f).lat.get, bucket_of(2100), 1);
	only_bucket(peer_m(&f, 2).lat.get, bucket_of(2100), 1);

	/* out of band (o2ib's GET_REQ/GET_DONE): 40 us */
	assert_int_equal(ulnet_get(f.node, bind_md(&f, buf, sizeof(buf), 2), &to, 4, 1, 0), 0);
	ulnet__node_sync(f.node);
	lock(&f);
	reply = ulnet__create_reply_msg(f.ni, tst.sent[1]);
	assert_non_null(reply);
	ulnet__finalize(tst.sent[1], 0);
	unlock(&f);
	fake_now += 40000;
	lock(&f);
	ulnet__set_reply_len(reply, 10);
	ulnet__finalize(reply, 0);
	unlock(&f);
	assert_true(ni_m(&f).lat.get.count == 2);
	assert_true(ni_m(&f).lat.get.bucket[bucket_of(40)] == 1);
	assert_true(peer_m(&f, 2).lat.get.count == 2);
	assert_true(ni_m(&f).lat.get.sum_ns == 2100000 + 40000);
	drain(&f);
	fx_close(&f);
}

/* Latencies off: a PUT, an ACK-requested PUT and a GET complete as before, with no sample; on
 * again, the next ones are timed. */
static void test_latency_off(void **state)
{
	struct fixture f;
	static uint8_t buf[64];
	struct ulnet_process_id to = { .nid = tst_nid(2), .pid = ULNET_PID_LUSTRE };
	struct ulnet_hdr h = tst_hdr(ULNET_MSG_REPLY, 2, 1, 10);
	struct ulnet_nid from = tst_nid(2);
	struct ulnet_ni_metrics nm;

	(void)state;
	fx_open(&f);
	assert_true(ulnet_metrics_latency_get(f.node));
	ulnet_metrics_latency_set(f.node, false);
	assert_false(ulnet_metrics_latency_get(f.node));
	assert_int_equal(ulnet_put(f.node, bind_md(&f, buf, sizeof(buf), 1), ULNET_NOACK_REQ, &to, 4, 1, 0, 0), 0);
	assert_int_equal(ulnet_get(f.node, bind_md(&f, buf, sizeof(buf), 2), &to, 4, 1, 0), 0);
	ulnet__node_sync(f.node);
	assert_int_equal(tst.nsent, 2);
	h.msg.reply.dst_wmd = ulnet__msg_view(tst.sent[1])->hdr.msg.get.return_wmd;
	fake_now += 5000;
	lock(&f);
	ulnet__finalize(tst.sent[0], 0);
	ulnet__finalize(tst.sent[1], 0);
	assert_int_equal(ulnet__parse(f.ni, &h, &from, (void *)0x5), 0);
	unlock(&f);
	assert_int_equal(tst.nrecv, 1);
	lock(&f);
	ulnet__finalize(tst.recvs[0].msg, 0);
	unlock(&f);
	nm = ni_m(&f);
	assert_true(nm.lat.put.count == 0 && nm.lat.get.count == 0 && nm.lat.ack.count == 0);
	assert_true(peer_m(&f, 2).send_count == 2); /* the counters still count */

	ulnet_metrics_latency_set(f.node, true);
	assert_int_equal(ulnet_put(f.node, bind_md(&f, buf, sizeof(buf), 1), ULNET_NOACK_REQ, &to, 4, 1, 0, 0), 0);
	ulnet__node_sync(f.node);
	fake_now += 5000;
	lock(&f);
	ulnet__finalize(tst.sent[2], 0);
	unlock(&f);
	only_bucket(ni_m(&f).lat.put, 3, 1);
	drain(&f);
	fx_close(&f);
}

static void test_drops(void **state)
{
	struct fixture f;
	struct ulnet_hdr put = tst_hdr(ULNET_MSG_PUT, 2, 1, 10), ack = tst_hdr(ULNET_MSG_ACK, 2, 1, 0);
	struct ulnet_nid from = tst_nid(2);
	struct ulnet_ni_metrics m;

	(void)state;
	fx_open(&f);
	put.msg.put.ptl_index = 7;
	ack.msg.ack.dst_wmd.wh_interface_cookie = 1;
	ack.msg.ack.dst_wmd.wh_object_cookie = 2;
	lock(&f);
	assert_int_equal(ulnet__parse(f.ni, &put, &from, NULL), 0);
	assert_int_equal(ulnet__parse(f.ni, &put, &from, NULL), 0);
	assert_int_equal(ulnet__parse(f.ni, &ack, &from, NULL), 0);
	unlock(&f);
	m = ni_m(&f);
	assert_true(m.drops[ULNET_DROP_NO_MATCH] == 2);
	assert_true(m.drops[ULNET_DROP_STALE] == 1);
	assert_true(m.drops[ULNET_DROP_TOO_LONG] == 0);
	assert_true(m.recv_count == 3);
	assert_string_equal(ulnet_drop_name(ULNET_DROP_STALE), "stale");
	assert_null(ulnet_drop_name(ULNET_DROP_REASONS));
	fx_close(&f);
}

/* Puts of 5 us to peers 2 and 3. */
static void two_peers(struct fixture *f)
{
	static uint8_t buf[8];

	for (unsigned p = 2; p <= 3; p++) {
		struct ulnet_process_id to = { .nid = tst_nid(p), .pid = ULNET_PID_LUSTRE };

		assert_int_equal(ulnet_put(f->node, bind_md(f, buf, sizeof(buf), 1), ULNET_NOACK_REQ, &to, 4, 1, 0, 0),
				 0);
	}
	ulnet__node_sync(f->node);
	fake_now += 5000;
	lock(f);
	while (tst.nsent)
		ulnet__finalize(tst.sent[--tst.nsent], 0);
	unlock(f);
	drain(f);
}

static void test_reset(void **state)
{
	struct fixture f;
	struct ulnet_nid two = tst_nid(2), nine = tst_nid(9);
	struct ulnet_stats st;

	(void)state;
	fx_open(&f);
	two_peers(&f);
	assert_true(ni_m(&f).lat.put.count == 2);
	assert_int_equal(ulnet_metrics_reset(f.node, ULNET_METRICS_PEER, 0, &two), 0);
	assert_true(peer_m(&f, 2).lat.put.count == 0);
	assert_true(peer_m(&f, 2).send_count == 0);
	assert_true(peer_m(&f, 3).lat.put.count == 1);
	assert_true(ni_m(&f).lat.put.count == 2); /* the NI's are its own */
	assert_int_equal(ulnet_metrics_reset(f.node, ULNET_METRICS_PEER, 0, &nine), -ENOENT);
	assert_int_equal(ulnet_metrics_reset(f.node, ULNET_METRICS_PEER, 0, NULL), -EINVAL);

	assert_int_equal(ulnet_metrics_reset(f.node, ULNET_METRICS_NI, ulnet_nid_net(&nine) + 1, NULL), -ENOENT);
	assert_int_equal(ulnet_metrics_reset(f.node, ULNET_METRICS_NI, f.ni->net, NULL), 0);
	assert_true(ni_m(&f).lat.put.count == 0);
	assert_true(ni_m(&f).send_count == 0);
	assert_true(peer_m(&f, 3).lat.put.count == 0); /* an NI's peers go with it */

	two_peers(&f);
	ulnet_stats_get(f.node, &st);
	assert_true(st.send_count >= 2);
	assert_int_equal(ulnet_metrics_reset(f.node, ULNET_METRICS_NODE, 0, NULL), 0);
	ulnet_stats_get(f.node, &st);
	assert_true(st.send_count == 0);
	assert_true(ni_m(&f).lat.put.count == 0);
	assert_true(peer_m(&f, 2).lat.put.count == 0);
	assert_int_equal(ni_m(&f).min_tx_credits, ni_m(&f).tx_credits);
	fx_close(&f);
}

static void test_hist_helpers(void **state)
{
	struct ulnet_hist h;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_true(ulnet_hist_percentile_us(&h, 50) == 0);
	assert_true(ulnet_hist_bucket_le_us(0) == 1);
	assert_true(ulnet_hist_bucket_le_us(23) == 1ull << 23);
	assert_true(ulnet_hist_bucket_le_us(24) == UINT64_MAX);
	ulnet__hist_add(&h, 999);          /* 0 us: bucket 0 */
	for (int i = 0; i < 98; i++)
		ulnet__hist_add(&h, 100000); /* 100 us: [64, 128) */
	ulnet__hist_add(&h, 20000000000ull); /* 20 s: the last bucket */
	assert_true(h.bucket[0] == 1 && h.bucket[7] == 98 && h.bucket[24] == 1);
	assert_true(ulnet_hist_percentile_us(&h, 1) == 1);
	assert_true(ulnet_hist_percentile_us(&h, 50) == 128);
	assert_true(ulnet_hist_percentile_us(&h, 99) == 128);
	assert_true(ulnet_hist_percentile_us(&h, 100) == 1ull << 23);
	assert_true(h.count == 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_egress),
		cmocka_unit_test(test_ack_rtt),
		cmocka_unit_test(test_get_rtt),
		cmocka_unit_test(test_latency_off),
		cmocka_unit_test(test_drops),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_hist_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
