/* SPDX-License-Identifier: MIT */
/* The LND contract (src/core/sdk/lnd.h) driven through a scripted LND (tests/common/tst_lnd.h): rendezvous
 * GET, out-of-band REPLY, delayed and eager receive with forwarding under peer_buffer_credits, an MD
 * unlinked while its registration is held, a peer reported down, peer limits, bulk memory from the
 * LND, the fabric an NI runs on. Each case asserts the events the application sees. */
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

struct fixture {
	ulnet_node *node;
	ulnet_eq *eq;
	struct ulnet_ni *ni;
};

static struct ulnet_process_id peer_id(unsigned n)
{
	return (struct ulnet_process_id){ .nid = tst_nid(n), .pid = ULNET_PID_LUSTRE };
}

static void fx_open(struct fixture *f, const struct ulnet_kv *tun, size_t ntun)
{
	struct ulnet_ni_conf conf = { .net = "gni", .nid = "1@gni", .tunables = tun, .n_tunables = ntun };

	memset(&tst, 0, sizeof(tst));
	tst_register();
	assert_int_equal(ulnet_node_open(NULL, &f->node), 0);
	assert_int_equal(ulnet_eq_create(&f->eq), 0);
	assert_int_equal(ulnet_ni_add(f->node, &conf), 0);
	f->ni = tst.ni;
	assert_non_null(f->ni);
}

/* A router: one loop, NIs 1@gni (f->ni, where messages come in) and 1@gni1 (where they go on). */
static void fx_open_router(struct fixture *f, const struct ulnet_kv *tun, size_t ntun)
{
	struct ulnet_node_opts opts = { .loops = 1 };
	struct ulnet_ni_conf in = { .net = "gni", .nid = "1@gni", .tunables = tun, .n_tunables = ntun };
	struct ulnet_ni_conf out = { .net = "gni1", .nid = "1@gni1" };

	memset(&tst, 0, sizeof(tst));
	tst_register();
	assert_int_equal(ulnet_node_open(&opts, &f->node), 0);
	assert_int_equal(ulnet_eq_create(&f->eq), 0);
	assert_int_equal(ulnet_ni_add(f->node, &in), 0);
	f->ni = tst.ni;
	assert_int_equal(ulnet_ni_add(f->node, &out), 0);
}

/* Node @n on gni1, the net behind the router. */
static struct ulnet_nid far_nid(unsigned n)
{
	struct ulnet_nid nid;
	char s[32];

	snprintf(s, sizeof(s), "%u@gni1", n);
	assert_int_equal(ulnet_nid_parse(s, &nid, NULL), 0);
	return nid;
}

static void fx_close(struct fixture *f)
{
	struct ulnet_event ev;

	ulnet_node_close(f->node);
	while (ulnet_eq_wait(f->eq, 0, &ev) == 1)
		;
	assert_int_equal(ulnet_eq_destroy(f->eq), 0);
}

/* The next event; fails the test when there is none. */
static struct ulnet_event next_event(struct fixture *f)
{
	struct ulnet_event ev;

	assert_int_equal(ulnet_eq_wait(f->eq, 1000, &ev), 1);
	return ev;
}

static void no_event(struct fixture *f)
{
	struct ulnet_event ev;

	assert_int_equal(ulnet_eq_wait(f->eq, 0, &ev), 0);
}

/* Act as the scripted LND's loop (what its callbacks run as); leaving runs the completion phase. */
static void lock(struct fixture *f) { tst_enter(tst_first_ni(f->node)); }
static void unlock(struct fixture *f) { tst_exit(tst_first_ni(f->node)); }

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

/* Copy @len bytes from @src into a fragment list (what an RDMA write does). */
static void to_frags(const struct iovec *iov, unsigned niov, const uint8_t *src, size_t len)
{
	for (unsigned i = 0; i < niov && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(iov[i].iov_base, src, n);
		src += n;
		len -= n;
	}
}

static void from_frags(uint8_t *dst, const struct iovec *iov, unsigned niov, size_t len)
{
	for (unsigned i = 0; i < niov && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(dst, iov[i].iov_base, n);
		dst += n;
		len -= n;
	}
}

/* Rendezvous GET on the target: the LND gets the REPLY message with the MD's fragments, nothing goes
 * out as a REPLY header, and finalizing the REPLY gives the application its GET event. */
static void test_rendezvous_get(void **state)
{
	struct fixture f;
	static uint8_t src[20000], got[20000];
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	struct ulnet_md md = { .start = src, .length = sizeof(src), .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE };
	struct ulnet_handle me, mdh;
	struct ulnet_hdr h = tst_hdr(ULNET_MSG_GET, 2, 1, 0);
	struct ulnet_nid from = tst_nid(2);
	struct ulnet_event ev;
	struct ulnet_msg *reply;

	(void)state;
	fx_open(&f, NULL, 0);
	fill(src, sizeof(src), 3);
	md.eq = f.eq;
	assert_int_equal(ulnet_me_attach(f.node, 9, &any, 0x55, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(f.node, me, &md, ULNET_RETAIN, &mdh), 0);
	h.msg.get.ptl_index = 9;
	h.msg.get.match_bits = 0x55;
	h.msg.get.src_offset = 100;
	h.msg.get.sink_length = 12345;
	h.msg.get.return_wmd.wh_interface_cookie = 0xaa;
	h.msg.get.return_wmd.wh_object_cookie = 0xbb;

	lock(&f);
	assert_int_equal(ulnet__parse_rdma(f.ni, &h, &from, (void *)0x77), 0);
	unlock(&f);
	assert_int_equal(tst.nsent, 0); /* no REPLY header on the wire */
	assert_int_equal(tst.nrecv, 1);
	reply = tst.recvs[0].msg;
	assert_non_null(reply);
	assert_true(ulnet__msg_is_reply(reply));
	assert_ptr_equal(tst.recvs[0].rx_priv, (void *)0x77);
	assert_int_equal(tst.recvs[0].mlen, 12345);
	assert_int_equal(ulnet__msg_view(reply)->hdr.type, ULNET_MSG_REPLY);
	assert_true(ulnet__msg_view(reply)->hdr.msg.reply.dst_wmd.wh_object_cookie == 0xbb);
	from_frags(got, tst.recvs[0].iov, tst.recvs[0].niov, tst.recvs[0].mlen);
	assert_memory_equal(got, src + 100, 12345);
	no_event(&f); /* the GET event waits for the LND to finish */

	lock(&f);
	ulnet__finalize(reply, 0);
	unlock(&f);
	ev = next_event(&f);
	assert_int_equal(ev.type, ULNET_EVENT_GET);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.mlength, 12345);
	assert_int_equal(ev.offset, 100);
	assert_true(ulnet_nid_equal(&ev.initiator.nid, &from));

	/* no match: a drop (lnd_recv without a message), no event */
	h.msg.get.match_bits = 0x56;
	lock(&f);
	assert_int_equal(ulnet__parse_rdma(f.ni, &h, &from, (void *)0x78), 0);
	unlock(&f);
	assert_int_equal(tst.nrecv, 2);
	assert_null(tst.recvs[1].msg);
	assert_int_equal(tst.nsent, 0);
	no_event(&f);

	/* a rendezvous request that is not a GET is a protocol error */
	h = tst_hdr(ULNET_MSG_PUT, 2, 1, 10);
	lock(&f);
	assert_int_equal(ulnet__parse_rdma(f.ni, &h, &from, NULL), -EPROTO);
	unlock(&f);
	fx_close(&f);
}

/* Out-of-band REPLY on the initiator: the GET carries its sink fragments, the LND creates the REPLY
 * before the GET completes and reports the real length that landed. */
static void test_oob_reply(void **state)
{
	struct fixture f;
	static uint8_t sink[8192], data[8192];
	struct ulnet_md md = { .start = sink, .length = sizeof(sink), .threshold = 2 };
	struct ulnet_process_id to = peer_id(2);
	const struct ulnet_msg_lnd_view *v;
	struct ulnet_handle mdh;
	struct ulnet_msg *get, *reply;
	struct ulnet_event ev;
	struct iovec sink_frag;

	(void)state;
	fx_open(&f, NULL, 0);
	md.eq = f.eq;
	fill(data, sizeof(data), 9);
	assert_int_equal(ulnet_md_bind(f.node, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_get(f.node, mdh, &to, 4, 0x99, 0), 0);
	ulnet__node_sync(f.node); /* the loop posts sends to remote NIDs */
	assert_int_equal(tst.nsent, 1);
	get = tst.sent[0];
	v = ulnet__msg_view(get);
	assert_int_equal(v->hdr.type, ULNET_MSG_GET);
	assert_int_equal(v->hdr.payload_length, 0);
	assert_int_equal(v->niov, 0);
	assert_int_equal(v->rdma_len, sizeof(sink));
	assert_int_equal(v->rdma_niov, 1);
	assert_ptr_equal(v->rdma_iov[0].iov_base, sink);
	sink_frag = v->rdma_iov[0]; /* what the LND described to the peer; the GET message goes below */

	lock(&f);
	reply = ulnet__create_reply_msg(f.ni, get);
	assert_non_null(reply);
	ulnet__finalize(get, 0);
	unlock(&f);
	ev = next_event(&f);
	assert_int_equal(ev.type, ULNET_EVENT_SEND);
	assert_int_equal(ev.status, 0);
	assert_false(ev.unlinked);

	/* the peer RDMA-wrote 5000 bytes, then GET_DONE(5000) */
	to_frags(&sink_frag, 1, data, 5000);
	lock(&f);
	ulnet__set_reply_len(reply, 5000);
	ulnet__finalize(reply, 0);
	unlock(&f);
	ev = next_event(&f);
	assert_int_equal(ev.type, ULNET_EVENT_REPLY);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.mlength, 5000);
	assert_int_equal(ev.rlength, 5000);
	assert_int_equal(ev.pt_index, 4);
	assert_true(ev.match_bits == 0x99);
	assert_true(ulnet_nid_equal(&ev.initiator.nid, &to.nid));
	assert_true(ev.unlinked); /* threshold 2: SEND and REPLY */
	assert_memory_equal(sink, data, 5000);
	no_event(&f);

	/* a failed GET: the REPLY carries the error */
	md.threshold = 2;
	assert_int_equal(ulnet_md_bind(f.node, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_get(f.node, mdh, &to, 4, 0x99, 0), 0);
	ulnet__node_sync(f.node); /* the loop posts sends to remote NIDs */
	get = tst.sent[1];
	lock(&f);
	reply = ulnet__create_reply_msg(f.ni, get);
	ulnet__finalize(get, 0);
	ulnet__finalize(reply, -ENODATA);
	unlock(&f);
	assert_int_equal(next_event(&f).type, ULNET_EVENT_SEND);
	ev = next_event(&f);
	assert_int_equal(ev.type, ULNET_EVENT_REPLY);
	assert_int_equal(ev.status, -ENODATA);
	fx_close(&f);
}

/* Forward after receive: two router buffers, peer_buffer_credits 1. A second message from the same
 * peer, and a message finding no buffer, wait without holding the LND's receive resources (eager
 * receive), and are received in order when a buffer and a credit come back. */
static void test_forward_delayed(void **state)
{
	const struct ulnet_kv tun[] = { { "peer_buffer_credits", "1" } };
	struct fixture f;
	struct ulnet_hdr h[4];
	const unsigned from[4] = { 2, 2, 4, 5 };
	static uint8_t payload[4][3000];
	struct ulnet_stats st;

	(void)state;
	fx_open_router(&f, tun, 1);
	lock(&f);
	ulnet__node_set_forwarding(f.node, true, 2);
	for (unsigned i = 0; i < 4; i++) {
		struct ulnet_nid src = tst_nid(from[i]);

		fill(payload[i], sizeof(payload[i]), i);
		h[i] = tst_hdr(ULNET_MSG_PUT, from[i], 3, sizeof(payload[i]));
		h[i].dest_nid = far_nid(3);
		h[i].msg.put.match_bits = i;
		tst.rx_held++;
		assert_int_equal(ulnet__parse(f.ni, &h[i], &src, (void *)(uintptr_t)(0x100 * (i + 1))), 0);
	}
	unlock(&f);
	/* m0 (peer 2) and m2 (peer 4) are received at once; m1 (peer 2, no credit) and m3 (no buffer) wait */
	assert_int_equal(tst.nrecv, 2);
	assert_ptr_equal(tst.recvs[0].rx_priv, (void *)0x100);
	assert_ptr_equal(tst.recvs[1].rx_priv, (void *)0x300);
	assert_int_equal(tst.recvs[0].mlen, 3000);
	assert_int_equal(tst.neager, 2);
	assert_ptr_equal(tst.eager_in[0], (void *)0x200);
	assert_ptr_equal(tst.eager_in[1], (void *)0x400);
	assert_int_equal(tst.rx_held, 2); /* only what is being received */
	assert_int_equal(tst.nsent, 0);

	/* m0's payload lands: it is sent on with its header unchanged */
	lock(&f);
	to_frags(tst.recvs[0].iov, tst.recvs[0].niov, payload[0], 3000);
	tst.rx_held--;
	ulnet__finalize(tst.recvs[0].msg, 0);
	unlock(&f);
	assert_int_equal(tst.nsent, 1);
	{
		const struct ulnet_msg_lnd_view *v = ulnet__msg_view(tst.sent[0]);
		uint8_t got[3000];
		struct ulnet_nid two = tst_nid(2), three = far_nid(3);

		assert_true(ulnet_nid_equal(&v->hdr.src_nid, &two));
		assert_true(ulnet_nid_equal(&v->hdr.dest_nid, &three));
		assert_true(ulnet_nid_equal(&v->target.nid, &three));
		assert_int_equal(v->hdr.payload_length, 3000);
		from_frags(got, v->iov, v->niov, 3000);
		assert_memory_equal(got, payload[0], 3000);
	}
	assert_int_equal(tst.nrecv, 2); /* the buffer is still m0's until its send completes */

	/* m0 sent: buffer and peer 2's credit back, m1 (the oldest that can go) is received, with the
	 * rx_priv the eager receive gave */
	lock(&f);
	ulnet__finalize(tst.sent[0], 0);
	unlock(&f);
	assert_int_equal(tst.nrecv, 3);
	assert_ptr_equal(tst.recvs[2].rx_priv, tst.eager_out[0]);
	assert_int_equal(ulnet__msg_view(tst.recvs[2].msg)->hdr.msg.put.match_bits, 1);

	/* m2 through, then m3 gets the buffer */
	lock(&f);
	ulnet__finalize(tst.recvs[1].msg, 0);
	ulnet__finalize(tst.sent[1], 0);
	unlock(&f);
	assert_int_equal(tst.nrecv, 4);
	assert_ptr_equal(tst.recvs[3].rx_priv, tst.eager_out[1]);
	lock(&f);
	ulnet__finalize(tst.recvs[2].msg, 0);
	ulnet__finalize(tst.sent[2], 0);
	ulnet__finalize(tst.recvs[3].msg, -EIO); /* a failed receive frees its buffer too */
	unlock(&f);
	assert_int_equal(tst.nsent, 3);
	ulnet_stats_get(f.node, &st);
	assert_int_equal(st.route_count, 3);
	assert_int_equal(st.route_length, 9000);
	assert_int_equal(st.msgs_alloc, 0);
	{
		struct ulnet_routing_info ri;
		struct ulnet_fwd_counters in, out;

		ulnet_routing_info_get(f.node, &ri);
		assert_int_equal(ri.pool[1].in_use, 0); /* 3000 bytes: small buffers */
		assert_int_equal(ri.pool[1].allocated, 2);
		assert_int_equal(ri.pool[1].max_in_use, 2);
		assert_int_equal(ri.pool[1].size, 4096);
		assert_int_equal(ri.memory, 2 * 4096);
		assert_int_equal(ri.fwd.msgs, 3);
		assert_int_equal(ri.fwd.bytes, 9000);
		assert_int_equal(ri.fwd.drops[ULNET_FWD_DROP_SEND_FAILED], 1); /* m3's failed receive */
		assert_int_equal(ulnet_routing_ni_get(f.node, 1, &in, &out), 0);
		assert_int_equal(in.msgs, 3);
		assert_int_equal(out.msgs, 0);
		assert_int_equal(ulnet_routing_ni_get(f.node, 2, &in, &out), 0);
		assert_int_equal(out.msgs, 3);
		assert_int_equal(out.bytes, 9000);
	}
	no_event(&f); /* forwarding shows the application nothing */
	fx_close(&f);
}

/* An LND that cannot receive eagerly keeps its receive resources while the message waits, and gets
 * its own rx_priv back in lnd_recv. */
static void test_forward_delayed_not_eager(void **state)
{
	struct fixture f;
	struct ulnet_hdr h[2];
	struct ulnet_nid src = tst_nid(2);
	struct ulnet_stats st;

	(void)state;
	fx_open_router(&f, NULL, 0);
	tst.eager_refuse = true;
	lock(&f);
	ulnet__node_set_forwarding(f.node, true, 1);
	for (unsigned i = 0; i < 2; i++) {
		h[i] = tst_hdr(ULNET_MSG_PUT, 2, 3, 10);
		h[i].dest_nid = far_nid(3);
		tst.rx_held++;
		assert_int_equal(ulnet__parse(f.ni, &h[i], &src, (void *)(uintptr_t)(0x10 * (i + 1))), 0);
	}
	unlock(&f);
	assert_int_equal(tst.nrecv, 1);
	assert_int_equal(tst.neager, 0);
	assert_int_equal(tst.rx_held, 2); /* the waiting message still holds its receive resources */
	lock(&f);
	ulnet__finalize(tst.recvs[0].msg, 0);
	ulnet__finalize(tst.sent[0], 0);
	unlock(&f);
	assert_int_equal(tst.nrecv, 2);
	assert_ptr_equal(tst.recvs[1].rx_priv, (void *)0x20);
	lock(&f);
	ulnet__finalize(tst.recvs[1].msg, 0);
	ulnet__finalize(tst.sent[1], 0);
	unlock(&f);
	ulnet_stats_get(f.node, &st);
	assert_int_equal(st.route_count, 2);
	no_event(&f);
	fx_close(&f);
}

/* What a router drops and what it refuses, as lnet_parse: a message no NI or route reaches, or any
 * message while routing is off, is dropped and counted; one for another node on the net it came in
 * on (it should have gone there directly), for another NI of ours, or a rendezvous GET, is a
 * protocol error; so is a payload above LNET_MTU. A message whose next hop is where it came from is
 * dropped as a loop. */
static void test_forward_refused(void **state)
{
	struct fixture f;
	struct ulnet_hdr h = tst_hdr(ULNET_MSG_PUT, 2, 3, 10);
	struct ulnet_nid src = tst_nid(2);
	struct ulnet_routing_info ri;
	struct ulnet_route_conf rc = { .net = "gni2", .gateway = "2@gni", .hops = -1 };
	struct ulnet_stats st;

	(void)state;
	fx_open_router(&f, NULL, 0);
	assert_int_equal(ulnet_nid_parse("1.2.3.4@tcp9", &h.dest_nid, NULL), 0);
	lock(&f);
	ulnet__node_set_forwarding(f.node, true, 1);
	assert_int_equal(ulnet__parse(f.ni, &h, &src, (void *)0x1), 0);
	unlock(&f);
	assert_int_equal(tst.nrecv, 1);
	assert_null(tst.recvs[0].msg);
	ulnet_stats_get(f.node, &st);
	assert_int_equal(st.drop_count, 1);

	/* through a route whose gateway is the sender: a loop (no checker: it would ping the gateway) */
	ulnet_routing_info_get(f.node, &ri);
	ri.conf.check_interval = 0;
	assert_int_equal(ulnet_routing_set(f.node, &ri.conf), 0);
	assert_int_equal(ulnet_route_add(f.node, &rc), 0);
	assert_int_equal(ulnet_nid_parse("7@gni2", &h.dest_nid, NULL), 0);
	lock(&f);
	assert_int_equal(ulnet__parse(f.ni, &h, &src, (void *)0x2), 0);
	unlock(&f);
	assert_int_equal(tst.nrecv, 2);
	assert_null(tst.recvs[1].msg);

	/* same net as it came in on, another NI of ours, too big, a rendezvous GET */
	lock(&f);
	h = tst_hdr(ULNET_MSG_PUT, 2, 3, 10);
	assert_int_equal(ulnet__parse(f.ni, &h, &src, (void *)0x1), -EPROTO);
	h.dest_nid = far_nid(1);
	assert_int_equal(ulnet__parse(f.ni, &h, &src, (void *)0x1), -EPROTO);
	h = tst_hdr(ULNET_MSG_PUT, 2, 3, ULNET_MTU + 1);
	h.dest_nid = far_nid(3);
	assert_int_equal(ulnet__parse(f.ni, &h, &src, (void *)0x1), -EPROTO);
	h = tst_hdr(ULNET_MSG_GET, 2, 3, 0);
	h.dest_nid = far_nid(3);
	assert_int_equal(ulnet__parse_rdma(f.ni, &h, &src, (void *)0x1), -EPROTO);

	/* routing off: dropped and counted, the connection stays */
	ulnet__node_set_forwarding(f.node, false, 0);
	h = tst_hdr(ULNET_MSG_PUT, 2, 3, 10);
	h.dest_nid = far_nid(3);
	assert_int_equal(ulnet__parse(f.ni, &h, &src, (void *)0x3), 0);
	unlock(&f);
	assert_int_equal(tst.nrecv, 3);
	assert_null(tst.recvs[2].msg);
	ulnet_routing_info_get(f.node, &ri);
	assert_int_equal(ri.fwd.drops[ULNET_FWD_DROP_NO_ROUTE], 1);
	assert_int_equal(ri.fwd.drops[ULNET_FWD_DROP_LOOP], 1);
	assert_int_equal(ri.fwd.drops[ULNET_FWD_DROP_TOO_BIG], 1);
	assert_int_equal(ri.fwd.drops[ULNET_FWD_DROP_DISABLED], 1);
	assert_int_equal(ri.fwd.msgs, 0);
	assert_int_equal(ri.memory, 0);
	fx_close(&f);
}

/* The MD's memory for registration: fragments and form, a slot, and its release when the MD goes
 * (after the user unlinked it during the transfer), before the application sees the unlink. */
static void test_md_unlink_during_registration(void **state)
{
	struct fixture f;
	uint32_t page = 4096;
	uint8_t *mem = aligned_alloc(page, 4 * page);
	/* pages apart (a kiov of pages side by side would be one fragment, shown as an iovec) */
	struct ulnet_kiov kiov[3] = { { mem + 100, page - 100 }, { mem + 2 * page, page }, { mem + page, 10 } };
	struct ulnet_md md = { .start = kiov, .length = 3, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_KIOV };
	struct ulnet_process_id to = peer_id(2);
	struct ulnet_lnd_md m;
	struct ulnet_handle mdh;
	struct ulnet_event ev;
	int *reg = malloc(sizeof(*reg));

	(void)state;
	fx_open(&f, NULL, 0);
	md.eq = f.eq;
	assert_int_equal(ulnet_md_bind(f.node, &md, ULNET_RETAIN, &mdh), 0);
	assert_int_equal(ulnet_put(f.node, mdh, ULNET_NOACK_REQ, &to, 4, 1, 0, 0), 0);
	ulnet__node_sync(f.node); /* the loop posts sends to remote NIDs */
	assert_int_equal(tst.nsent, 1);
	lock(&f);
	assert_int_equal(ulnet__msg_md(tst.sent[0], &m), 0);
	assert_int_equal(m.form, ULNET_FRAG_KIOV);
	assert_int_equal(m.nfrags, 3);
	assert_int_equal(m.length, 2 * page - 100 + 10);
	assert_int_equal(m.page_size, ulnet_node_page_size(f.node));
	assert_ptr_equal(m.frags[0].iov_base, mem + 100);
	assert_non_null(m.lnd_reg);
	assert_null(*m.lnd_reg);
	*m.lnd_reg = reg; /* "registered" */
	unlock(&f);
	assert_int_equal(ulnet_md_unlink(f.node, mdh), 0);
	assert_int_equal(tst.nunreg, 0); /* the transfer still uses the memory */
	no_event(&f);
	lock(&f);
	ulnet__finalize(tst.sent[0], 0);
	unlock(&f);
	/* the completion phase frees the MD: the registration is released before the event is queued */
	ev = next_event(&f);
	assert_int_equal(ev.type, ULNET_EVENT_SEND);
	assert_true(ev.unlinked);
	lock(&f);
	assert_int_equal(tst.nunreg, 1);
	assert_ptr_equal(tst.unreg[0], reg);
	assert_int_equal(tst.unreg_md[0].nfrags, 3);
	unlock(&f);
	no_event(&f);
	free(reg);

	/* a registration still held at shutdown is released before the LND shuts down */
	md.start = kiov;
	assert_int_equal(ulnet_md_bind(f.node, &md, ULNET_RETAIN, &mdh), 0);
	assert_int_equal(ulnet_put(f.node, mdh, ULNET_NOACK_REQ, &to, 4, 1, 0, 0), 0);
	ulnet__node_sync(f.node); /* the loop posts sends to remote NIDs */
	lock(&f);
	assert_int_equal(ulnet__msg_md(tst.sent[1], &m), 0);
	*m.lnd_reg = mem;
	ulnet__finalize(tst.sent[1], 0);
	unlock(&f);
	assert_int_equal(tst.nunreg, 1); /* the MD lives on (RETAIN, infinite threshold) */
	fx_close(&f);
	assert_int_equal(tst.nunreg, 2);
	assert_ptr_equal(tst.unreg[1], mem);
	free(mem);
}

/* A peer reported down: what waits for a credit to it fails with the LND's status. */
static void test_peer_down(void **state)
{
	const struct ulnet_kv tun[] = { { "peer_credits", "1" } };
	struct fixture f;
	static uint8_t buf[100];
	struct ulnet_md md = { .start = buf, .length = sizeof(buf), .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_process_id to = peer_id(2);
	struct ulnet_handle mdh;
	struct ulnet_nid two = tst_nid(2);
	struct ulnet_event ev;

	(void)state;
	fx_open(&f, tun, 1);
	md.eq = f.eq;
	assert_int_equal(ulnet_md_bind(f.node, &md, ULNET_RETAIN, &mdh), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ulnet_put(f.node, mdh, ULNET_NOACK_REQ, &to, 4, (uint64_t)i, 0, 0), 0);
	ulnet__node_sync(f.node); /* the loop posts sends to remote NIDs */
	assert_int_equal(tst.nsent, 1); /* one credit */
	lock(&f);
	ulnet__peer_down(f.ni, &two, -EHOSTDOWN);
	unlock(&f);
	{ /* peer show says so */
		struct ulnet_peer_info pi;
		unsigned i = 0;

		while (!ulnet_peer_info_get(f.node, i, &pi) && !ulnet_nid_equal(&pi.nid, &two))
			i++;
		assert_true(ulnet_nid_equal(&pi.nid, &two));
		assert_string_equal(pi.state, "down");
	}
	for (int i = 0; i < 2; i++) {
		ev = next_event(&f);
		assert_int_equal(ev.type, ULNET_EVENT_SEND);
		assert_int_equal(ev.status, -EHOSTDOWN);
		assert_true(ev.match_bits == (uint64_t)(i + 1));
	}
	assert_int_equal(tst.nsent, 1); /* nothing launched by the credits the failures returned */
	lock(&f);
	ulnet__finalize(tst.sent[0], -EHOSTDOWN); /* the LND fails the one it owns */
	unlock(&f);
	ev = next_event(&f);
	assert_int_equal(ev.status, -EHOSTDOWN);
	assert_true(ev.match_bits == 0);
	no_event(&f);
	fx_close(&f);
}

static void test_query_peer(void **state)
{
	struct fixture f;
	struct ulnet_peer_limits l;
	struct ulnet_nid nid = tst_nid(2), lo;

	(void)state;
	fx_open(&f, NULL, 0);
	tst.limits = (struct ulnet_peer_limits){ .max_frags = 256, .queue_depth = 8, .lnet_mtu = ULNET_MTU,
						 .lnd_msg_size = 4096, .conns = 2, .conns_used = 1 };
	assert_int_equal(ulnet_peer_limits_get(f.node, &nid, &l), 0);
	assert_int_equal(l.max_frags, 256);
	assert_int_equal(l.queue_depth, 8);
	assert_int_equal(l.lnet_mtu, ULNET_MTU);
	assert_int_equal(l.lnd_msg_size, 4096);
	assert_int_equal(l.conns, 2);
	assert_int_equal(l.conns_used, 1);
	nid = tst_nid(99);
	assert_int_equal(ulnet_peer_limits_get(f.node, &nid, &l), -ENOENT);
	assert_int_equal(ulnet_nid_parse("0@lo", &lo, NULL), 0);
	assert_int_equal(ulnet_peer_limits_get(f.node, &lo, &l), 0);
	assert_int_equal(l.lnet_mtu, ULNET_MTU);
	assert_int_equal(l.lnd_msg_size, 0); /* lo has no message size of its own */
	assert_int_equal(ulnet_nid_parse("1.2.3.4@tcp7", &nid, NULL), 0);
	assert_int_equal(ulnet_peer_limits_get(f.node, &nid, &l), -EHOSTUNREACH);
	fx_close(&f);
}

/* ulnet_mem_alloc takes the LND's memory when it offers some, heap memory when not; ulnet_mem_free
 * gives each back to where it came from, also after the node is gone. */
static void test_mem_alloc(void **state)
{
	struct fixture f;
	void *a, *b;

	(void)state;
	fx_open(&f, NULL, 0);
	assert_non_null(a = ulnet_mem_alloc(f.node, 65536, 100000));
	assert_int_equal((uintptr_t)a % 65536, 0);
	assert_int_equal(tst.mem_allocs, 1);
	tst.mem_refuse = true;
	assert_non_null(b = ulnet_mem_alloc(f.node, 4096, 100));
	assert_int_equal((uintptr_t)b % 4096, 0);
	assert_int_equal(tst.mem_allocs, 1);
	assert_null(ulnet_mem_alloc(f.node, 3000, 100)); /* not a power of two */
	assert_null(ulnet_mem_alloc(f.node, 4096, 0));
	ulnet_mem_free(b, 100);
	assert_int_equal(tst.mem_frees, 0);
	fx_close(&f);
	ulnet_mem_free(a, 100000);
	assert_int_equal(tst.mem_frees, 1);
	ulnet_mem_free(NULL, 0);
}

/* ulnet_ni_fabric_get: what the LND says; lo runs on no fabric; past the last NI. */
static void test_fabric_info(void **state)
{
	struct fixture f;
	struct ulnet_ni_fabric fab;

	(void)state;
	fx_open(&f, NULL, 0);
	assert_int_equal(ulnet_ni_fabric_get(f.node, 0, &fab), -EOPNOTSUPP);
	assert_int_equal(ulnet_ni_fabric_get(f.node, 1, &fab), 0);
	assert_string_equal(fab.provider, "tst");
	assert_int_equal(fab.max_send_sge, 3);
	assert_int_equal(fab.page_size, 65536);
	assert_int_equal(fab.max_qp_wr, 0);
	assert_int_equal(ulnet_ni_fabric_get(f.node, 2, &fab), -ENOENT);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rendezvous_get),
		cmocka_unit_test(test_oob_reply),
		cmocka_unit_test(test_forward_delayed),
		cmocka_unit_test(test_forward_delayed_not_eager),
		cmocka_unit_test(test_forward_refused),
		cmocka_unit_test(test_md_unlink_during_registration),
		cmocka_unit_test(test_peer_down),
		cmocka_unit_test(test_query_peer),
		cmocka_unit_test(test_mem_alloc),
		cmocka_unit_test(test_fabric_info),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
