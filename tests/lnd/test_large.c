/* SPDX-License-Identifier: MIT */
/* Payloads above LNET_MTU between two ulnet nodes in one process (issue #33, docs/large.md): one
 * program, run per net ("tcp": 127.226.B.{1,2}, port 988; "o2ib": the shm provider, 127.227.B.{1,2}).
 * Node a has 4 KiB pages, node b 64 KiB (and the other way round for Gets). Put and Get of 1 MiB + 1,
 * 16 MiB at offset 4097 and the limit (64 MiB), data checked byte for byte, exactly one event on the
 * target and SEND + ACK/REPLY on the initiator; refusal toward a peer whose ping reply lacks the
 * capability, nothing sent; a target MD that does not match; each side killed mid-transfer. The
 * core's probe of a peer never pinged (nodes at 127.235.B.x: B 10.. for tcp, 20.. for o2ib): one ping,
 * then the ops start or end with -EMSGSIZE; ops parked behind it bounded; a probe that fails (its
 * ping dropped) ends them and holds off the next; the node closed with ops parked. tcp needs root
 * (port 988): else exit 77, skipped. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "ulnet/ulnet.h"
#include "large_wire.h"

#define MIB (1u << 20)
#define LIMIT ULNET_LARGE_MAX_DEFAULT

static const char *net;      /* "tcp" or "o2ib" */
static unsigned octet, block = 1;

struct node2 {
	ulnet_node *n;
	struct ulnet_process_id id;
	ulnet_eq *eq;
};

static void node_up_at(struct node2 *x, uint32_t page, uint32_t large_max, unsigned oct, unsigned blk, unsigned host)
{
	struct ulnet_node_opts opts = { .page_size = page, .large_max = large_max, .transaction_timeout = 3 };
	const struct ulnet_kv shm[] = { { "provider", "shm" } };
	char nid[48];
	struct ulnet_ni_conf conf = { .net = net, .nid = nid };

	if (!strcmp(net, "o2ib")) {
		conf.lnd_tunables = shm;
		conf.n_lnd_tunables = 1;
	}
	snprintf(nid, sizeof(nid), "127.%u.%u.%u@%s", oct, blk, host, net);
	assert_int_equal(ulnet_node_open(&opts, &x->n), 0);
	assert_int_equal(ulnet_ni_add(x->n, &conf), 0);
	assert_int_equal(ulnet_nid_parse(nid, &x->id.nid, NULL), 0);
	x->id.pid = ULNET_PID_LUSTRE;
	assert_int_equal(ulnet_eq_create(&x->eq), 0);
}

static void node_up(struct node2 *x, uint32_t page, uint32_t large_max, unsigned blk, unsigned host)
{
	node_up_at(x, page, large_max, octet, blk, host);
}

static void node_down(struct node2 *x)
{
	struct ulnet_event ev;

	if (x->n)
		ulnet_node_close(x->n);
	x->n = NULL;
	while (ulnet_eq_wait(x->eq, 0, &ev) == 1)
		;
	assert_int_equal(ulnet_eq_destroy(x->eq), 0);
}

static void ping_ok(struct node2 *from, const struct node2 *to, bool large)
{
	struct ulnet_ping_result r;

	assert_int_equal(ulnet_ping(from->n, &to->id, 10000, &r), 0);
	assert_int_equal(!!(r.features & ULNET_PING_FEAT_ULNET_LARGE), large);
	assert_int_equal(ulnet_large_peer(from->n, &to->id.nid), large);
}

static void pattern(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 131 + seed) ^ (i >> 8) ^ (i >> 16));
}

/* the one event of @eq (within 20 s), and no other within 200 ms after the last expected one */
static void next_ev(ulnet_eq *eq, struct ulnet_event *ev)
{
	assert_int_equal(ulnet_eq_wait(eq, 20000, ev), 1);
}

static void no_more(ulnet_eq *eq)
{
	struct ulnet_event ev;
	int rc = ulnet_eq_wait(eq, 200, &ev);

	if (rc == 1)
		fprintf(stderr, "unexpected event %s status %d\n", ulnet_event_kind_name(ev.type), ev.status);
	assert_int_equal(rc, 0);
}

/* An MD of @len bytes at @buf: contiguous, or as a kiov of the node's pages, or an iovec of 3 pieces. */
enum form { CONTIG, KIOV, IOVEC };
struct big_md {
	struct ulnet_md md;
	struct ulnet_kiov *kiov;
	struct iovec iov[3];
};

static void big_md(struct big_md *b, enum form f, uint8_t *buf, size_t len, uint32_t page)
{
	memset(b, 0, sizeof(*b));
	if (f == KIOV && len / page + 2 > ULNET_MD_MAX_FRAGS)
		f = IOVEC; /* 16 MiB of 4 KiB pages is more kiov entries than an MD takes */
	if (f == CONTIG) {
		b->md.start = buf;
		b->md.length = (uint32_t)len;
	} else if (f == IOVEC) {
		size_t third = len / 3;

		b->iov[0] = (struct iovec){ buf, third };
		b->iov[1] = (struct iovec){ buf + third, 1 };
		b->iov[2] = (struct iovec){ buf + third + 1, len - third - 1 };
		b->md.start = b->iov;
		b->md.length = 3;
		b->md.options = ULNET_MD_IOVEC;
	} else {
		size_t n = 0, pos = 0;

		b->kiov = calloc(len / page + 2, sizeof(*b->kiov));
		while (pos < len) {
			size_t room = page - ((uintptr_t)(buf + pos) % page), take = len - pos < room ? len - pos : room;

			b->kiov[n].kiov_base = buf + pos;
			b->kiov[n].kiov_len = (uint32_t)take;
			pos += take;
			n++;
		}
		assert_true(n <= ULNET_MD_MAX_FRAGS);
		b->md.start = b->kiov;
		b->md.length = (uint32_t)n;
		b->md.options = ULNET_MD_KIOV;
	}
}

struct xc {
	uint32_t size, remote_off;
	enum form src, dst;
	bool get;
};

/* Put a -> b or Get a <- b of c->size bytes; the target MD on b, c->remote_off into it. */
static void xfer(struct node2 *a, struct node2 *b, const struct xc *c, uint32_t portal, uint64_t bits)
{
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	size_t room = (size_t)c->size + c->remote_off + 100;
	uint8_t *tbuf = aligned_alloc(65536, (room + 65535) & ~(size_t)65535);
	uint8_t *ibuf = aligned_alloc(65536, ((size_t)c->size + 65535) & ~(size_t)65535);
	uint8_t *want = malloc(c->size);
	struct big_md t, i;
	struct ulnet_handle me, tmd, imd;
	struct ulnet_event ev, ev2;
	uint32_t pa = ulnet_node_page_size(a->n), pb = ulnet_node_page_size(b->n);

	assert_non_null(tbuf);
	assert_non_null(ibuf);
	pattern(want, c->size, c->size + portal);
	memset(tbuf, 0xee, room);
	memset(ibuf, 0x11, c->size);
	if (c->get)
		memcpy(tbuf + c->remote_off, want, c->size);
	else
		memcpy(ibuf, want, c->size);
	big_md(&t, c->dst, tbuf, room, pb);
	big_md(&i, c->src, ibuf, c->size, pa);
	t.md.options |= (c->get ? ULNET_MD_OP_GET : ULNET_MD_OP_PUT) | ULNET_MD_MANAGE_REMOTE | ULNET_MD_TRUNCATE;
	t.md.threshold = 1;
	t.md.eq = b->eq;
	i.md.threshold = 2;
	i.md.eq = a->eq;
	assert_int_equal(ulnet_me_attach(b->n, portal, &any, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(b->n, me, &t.md, ULNET_UNLINK, &tmd), 0);
	assert_int_equal(ulnet_md_bind(a->n, &i.md, ULNET_UNLINK, &imd), 0);
	if (c->get)
		assert_int_equal(ulnet_get(a->n, imd, &b->id, portal, bits, c->remote_off), 0);
	else
		assert_int_equal(ulnet_put(a->n, imd, ULNET_ACK_REQ, &b->id, portal, bits, c->remote_off, 0x5eed), 0);
	/* the target: one event for the whole payload */
	next_ev(b->eq, &ev);
	assert_int_equal(ev.type, c->get ? ULNET_EVENT_GET : ULNET_EVENT_PUT);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.mlength, c->size);
	assert_int_equal(ev.rlength, c->size);
	assert_int_equal(ev.offset, c->remote_off);
	assert_true(ev.match_bits == bits);
	assert_int_equal(ev.pt_index, portal);
	assert_true(ulnet_nid_equal(&ev.initiator.nid, &a->id.nid));
	assert_true(ev.hdr_data == (c->get ? 0 : 0x5eed));
	assert_true(ev.unlinked);
	/* the initiator: SEND, then ACK or REPLY */
	next_ev(a->eq, &ev);
	next_ev(a->eq, &ev2);
	assert_int_equal(ev.type, ULNET_EVENT_SEND);
	assert_int_equal(ev.status, 0);
	assert_false(ev.unlinked);
	assert_int_equal(ev2.type, c->get ? ULNET_EVENT_REPLY : ULNET_EVENT_ACK);
	assert_int_equal(ev2.status, 0);
	assert_int_equal(ev2.mlength, c->size);
	assert_true(ev2.unlinked);
	no_more(a->eq);
	no_more(b->eq);
	if (c->get) {
		assert_memory_equal(ibuf, want, c->size);
	} else {
		assert_memory_equal(tbuf + c->remote_off, want, c->size);
		for (uint32_t k = 0; k < c->remote_off; k++)
			assert_int_equal(tbuf[k], 0xee);
		for (size_t k = c->remote_off + c->size; k < room; k++)
			assert_int_equal(tbuf[k], 0xee);
	}
	free(t.kiov);
	free(i.kiov);
	free(tbuf);
	free(ibuf);
	free(want);
}

static struct node2 A, B; /* a: 4 KiB pages, b: 64 KiB */

static int setup(void **state)
{
	unsigned blk = block++;

	(void)state;
	node_up(&A, 4096, 0, blk, 1);
	node_up(&B, 65536, 0, blk, 2);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	node_down(&A);
	node_down(&B);
	return 0;
}

static void test_put_get(void **state)
{
	static const struct xc cases[] = {
		{ MIB + 1, 0, CONTIG, CONTIG, false },
		{ 16 * MIB, 4097, IOVEC, KIOV, false },
		{ LIMIT, 0, CONTIG, CONTIG, false },
		{ MIB + 1, 0, CONTIG, IOVEC, true },
		{ 16 * MIB, 4097, KIOV, KIOV, true },
		{ LIMIT, 0, CONTIG, CONTIG, true },
	};

	(void)state;
	ping_ok(&A, &B, true);
	ping_ok(&B, &A, true);
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		xfer(&A, &B, &cases[k], 7, 0x100 + k);
		xfer(&B, &A, &cases[k], 8, 0x200 + k); /* the other way: 64 KiB pages initiating */
	}
}

static uint64_t sent_msgs(ulnet_node *n)
{
	struct ulnet_stats st;

	ulnet_stats_get(n, &st);
	return st.send_count;
}

/* A node with large payloads off, known from a ping: -EMSGSIZE at the call, no event, nothing sent. */
static void test_refused(void **state)
{
	struct node2 C = { 0 };
	uint8_t *buf = malloc(MIB + 1);
	struct ulnet_md md = { .start = buf, .length = MIB + 1, .threshold = 2 };
	struct ulnet_handle h;
	uint64_t sent;

	(void)state;
	node_up(&C, 4096, ULNET_MTU, block - 1, 3); /* large_max = LNET_MTU: off */
	md.eq = A.eq;
	assert_int_equal(ulnet_md_bind(A.n, &md, ULNET_UNLINK, &h), 0);
	ping_ok(&A, &C, false);
	sent = sent_msgs(A.n);
	assert_int_equal(ulnet_put(A.n, h, ULNET_ACK_REQ, &C.id, 7, 1, 0, 0), -EMSGSIZE);
	assert_int_equal(ulnet_get(A.n, h, &C.id, 7, 1, 0), -EMSGSIZE);
	usleep(100000);
	assert_true(sent_msgs(A.n) == sent);
	no_more(A.eq);
	/* and C, with the feature off, refuses from its side too */
	ping_ok(&C, &A, true);
	md.eq = C.eq;
	assert_int_equal(ulnet_md_bind(C.n, &md, ULNET_UNLINK, &h), 0);
	assert_int_equal(ulnet_put(C.n, h, ULNET_NOACK_REQ, &A.id, 7, 1, 0, 0), -EMSGSIZE);
	/* over the limit toward a capable peer */
	ping_ok(&A, &B, true);
	{
		uint8_t *big = malloc(LIMIT + 1);
		struct ulnet_md m2 = { .start = big, .length = LIMIT + 1, .threshold = 1, .eq = A.eq };

		assert_int_equal(ulnet_md_bind(A.n, &m2, ULNET_UNLINK, &h), 0);
		assert_int_equal(ulnet_put(A.n, h, ULNET_NOACK_REQ, &B.id, 7, 1, 0, 0), -EMSGSIZE);
		assert_int_equal(ulnet_md_unlink(A.n, h), 0);
		next_ev(A.eq, &(struct ulnet_event){ 0 });
		free(big);
	}
	no_more(A.eq);
	node_down(&C);
	free(buf);
}

/* No ME matches (a target MD too small without TRUNCATE): the initiator's one SEND event says
 * -ENOENT; the target's MD sees nothing. */
static void test_no_match(void **state)
{
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	uint8_t *src = calloc(1, 2 * MIB), *dst = calloc(1, MIB);
	struct ulnet_md tm = { .start = dst, .length = MIB, .threshold = 1, .options = ULNET_MD_OP_PUT, .eq = B.eq };
	struct ulnet_md im = { .start = src, .length = 2 * MIB, .threshold = 2, .eq = A.eq };
	struct ulnet_handle me, md, imd;
	struct ulnet_event ev;

	(void)state;
	ping_ok(&A, &B, true);
	assert_int_equal(ulnet_me_attach(B.n, 9, &any, 5, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(B.n, me, &tm, ULNET_UNLINK, &md), 0);
	assert_int_equal(ulnet_md_bind(A.n, &im, ULNET_UNLINK, &imd), 0);
	assert_int_equal(ulnet_put(A.n, imd, ULNET_ACK_REQ, &B.id, 9, 5, 0, 0), 0);
	next_ev(A.eq, &ev);
	assert_int_equal(ev.type, ULNET_EVENT_SEND);
	assert_int_equal(ev.status, -ENOENT);
	no_more(A.eq);
	no_more(B.eq);
	/* the target MD is still there and whole: unlink it (UNLINK event) */
	assert_int_equal(ulnet_md_unlink(B.n, md), 0);
	next_ev(B.eq, &ev);
	assert_int_equal(ev.type, ULNET_EVENT_UNLINK);
	assert_int_equal(ulnet_md_unlink(A.n, imd), 0);
	next_ev(A.eq, &ev);
	assert_int_equal(ev.type, ULNET_EVENT_UNLINK);
	free(src);
	free(dst);
}

static uint64_t bytes_of(ulnet_node *n, bool rx)
{
	struct ulnet_stats st;

	ulnet_stats_get(n, &st);
	return rx ? st.recv_length : st.send_length;
}

static uint64_t recv_msgs(ulnet_node *n)
{
	struct ulnet_stats st;

	ulnet_stats_get(n, &st);
	return st.recv_count;
}

/* @n's received messages once they reach @want (or 10 s pass): a message is counted when its receive
 * ends, which may be after its sender has its events */
static uint64_t recv_msgs_at_least(ulnet_node *n, uint64_t want)
{
	for (unsigned i = 0; i < 10000 && recv_msgs(n) < want; i++)
		usleep(1000);
	return recv_msgs(n);
}

/* A 64 MiB Put; once the target has taken 4 MiB of it, @victim (a or b) is closed. The survivor ends
 * with one event carrying an error. The target's pulls (its GETs of the pieces) are delayed 20 ms each
 * (a fault rule), so the rest cannot land before the close: over shm the whole 64 MiB is a few ms. */
static void killed(bool kill_target)
{
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	uint8_t *src = malloc(LIMIT), *dst = malloc(LIMIT);
	struct ulnet_md tm = { .start = dst, .length = LIMIT, .threshold = 1, .options = ULNET_MD_OP_PUT, .eq = B.eq };
	struct ulnet_md im = { .start = src, .length = LIMIT, .threshold = 2, .eq = A.eq };
	struct ulnet_handle me, md, imd;
	struct ulnet_event ev;
	uint64_t t0 = bytes_of(B.n, true);
	struct node2 *survivor = kill_target ? &A : &B, *victim = kill_target ? &B : &A;
	struct ulnet_fault_rule slow;
	struct ulnet_fault_info slow_info;
	int waited = 0;

	memset(src, 0x5a, LIMIT);
	ping_ok(&A, &B, true);
	ulnet_fault_rule_init(&slow, ULNET_FAULT_DELAY);
	slow.dst = A.id.nid;
	slow.msg_mask = 1u << ULNET_MSG_GET;
	slow.rate = 1;
	slow.latency_ms = 20;
	assert_int_equal(ulnet_fault_add(B.n, &slow), 0);
	assert_int_equal(ulnet_me_attach(B.n, 9, &any, 6, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(B.n, me, &tm, ULNET_UNLINK, &md), 0);
	assert_int_equal(ulnet_md_bind(A.n, &im, ULNET_UNLINK, &imd), 0);
	assert_int_equal(ulnet_put(A.n, imd, ULNET_ACK_REQ, &B.id, 9, 6, 0, 0), 0);
	while (bytes_of(B.n, true) - t0 < 4 * MIB && waited++ < 20000)
		usleep(100);
	assert_true(bytes_of(B.n, true) - t0 < LIMIT);
	assert_int_equal(ulnet_fault_info_get(B.n, ULNET_FAULT_DELAY, 0, &slow_info), 0);
	assert_true(slow_info.acted > 0); /* the pulls are the rule's: the rest is still to come */
	ulnet_node_close(victim->n);
	victim->n = NULL;
	next_ev(survivor->eq, &ev);
	fprintf(stderr, "%s killed: survivor's event %s status %d (%s)\n", kill_target ? "target" : "initiator",
		ulnet_event_kind_name(ev.type), ev.status, ulnet_strerror(ev.status));
	assert_int_equal(ev.type, kill_target ? ULNET_EVENT_SEND : ULNET_EVENT_PUT);
	assert_true(ev.status < 0);
	if (!kill_target)
		assert_int_equal(ev.mlength, 0);
	no_more(survivor->eq);
	free(src);
	free(dst);
}

static void test_target_killed(void **state)
{
	(void)state;
	killed(true);
}

static void test_initiator_killed(void **state)
{
	(void)state;
	killed(false);
}

/* A hostile initiator, speaking the rendezvous by hand with the public API (a sends, b is the target):
 * a descriptor announcing more than b's limit, a bad descriptor, an announce of an unknown kind, a DONE
 * nobody waits for, and more announces than b admits from one peer. b answers each with a DONE
 * carrying the error (caught here by an ME ahead of a's own DONE service), allocates nothing sized
 * by what was announced, and its application sees no event. */
static ulnet_eq *done_eq;

static void expose_desc(const struct ulnet_large_desc *d, uint8_t *buf)
{
	struct ulnet_md md = { .start = buf, .length = ULNET_LARGE_DESC_SIZE, .threshold = 1,
			       .options = ULNET_MD_OP_GET };
	struct ulnet_handle me, h;

	ulnet_large_desc_pack(d, buf);
	assert_int_equal(ulnet_me_attach(A.n, 0, &B.id, ulnet_large_bits(ULNET_LARGE_DESC, d->cookie), 0, ULNET_UNLINK,
					 ULNET_INS_BEFORE, &me), 0);
	assert_int_equal(ulnet_md_attach(A.n, me, &md, ULNET_UNLINK, &h), 0);
}

static void announce(unsigned kind, uint64_t cookie)
{
	struct ulnet_md md = { .threshold = 1 };
	struct ulnet_handle h;

	assert_int_equal(ulnet_md_bind(A.n, &md, ULNET_UNLINK, &h), 0);
	assert_int_equal(ulnet_put(A.n, h, ULNET_NOACK_REQ, &B.id, 0, ulnet_large_bits(ULNET_LARGE_ANNOUNCE, kind), 0,
				   cookie), 0);
}

/* the next DONE b sent: its cookie and status */
static void done_ev(uint64_t *cookie, int *status)
{
	struct ulnet_event ev;
	bool acked;

	do
		assert_int_equal(ulnet_eq_wait(done_eq, 10000, &ev), 1);
	while (ev.type != ULNET_EVENT_PUT);
	assert_int_equal(ulnet_large_bits_kind(ev.match_bits), ULNET_LARGE_DONE);
	assert_int_equal(ulnet_large_done_parse(ev.hdr_data, cookie, status, &acked), 0);
	assert_false(acked);
}

static void test_hostile(void **state)
{
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	struct ulnet_md cm = { .threshold = ULNET_MD_THRESH_INF, .options = ULNET_MD_OP_PUT | ULNET_MD_TRUNCATE };
	struct ulnet_md tm = { .length = 0, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_TRUNCATE };
	static uint8_t descs[40][ULNET_LARGE_DESC_SIZE];
	struct ulnet_large_desc d = { .kind = ULNET_LARGE_OP_PUT, .portal = 7, .match_bits = 1, .length = 1u << 30 };
	struct ulnet_handle me, h, catcher;
	uint64_t cookie;
	int status, busy = 0, timedout = 0;

	(void)state;
	ping_ok(&A, &B, true);
	/* a DONE nobody waits for: a's DONE service ignores it */
	{
		struct ulnet_md md = { .threshold = 1 };

		assert_int_equal(ulnet_md_bind(B.n, &md, ULNET_UNLINK, &h), 0);
		uint64_t got = recv_msgs(A.n);

		assert_int_equal(ulnet_put(B.n, h, ULNET_NOACK_REQ, &A.id, 0, ulnet_large_bits(ULNET_LARGE_DONE, 5), 0,
					   ulnet_large_done_data(99, 0, true)), 0);
		/* in and ignored before the catcher below is there to see it */
		assert_true(recv_msgs_at_least(A.n, got + 1) > got);
	}
	assert_int_equal(ulnet_eq_create(&done_eq), 0);
	cm.eq = done_eq;
	assert_int_equal(ulnet_me_attach(A.n, 0, &any, ulnet_large_bits(ULNET_LARGE_DONE, 0), ULNET_LARGE_ARG_MASK,
					 ULNET_RETAIN, ULNET_INS_BEFORE, &catcher), 0);
	assert_int_equal(ulnet_md_attach(A.n, catcher, &cm, ULNET_RETAIN, &h), 0);
	/* b's application: an ME that would take anything on portal 7 */
	tm.eq = B.eq;
	assert_int_equal(ulnet_me_attach(B.n, 7, &any, 0, ~0ull, ULNET_RETAIN, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(B.n, me, &tm, ULNET_RETAIN, &h), 0);
	/* 1 GiB announced: over b's 64 MiB */
	d.cookie = 1;
	expose_desc(&d, descs[0]);
	announce(ULNET_LARGE_OP_PUT, 1);
	done_ev(&cookie, &status);
	assert_true(cookie == 1);
	assert_int_equal(status, -EMSGSIZE);
	/* a descriptor whose kind is not the announced one */
	d.cookie = 2;
	d.length = 2 * MIB;
	expose_desc(&d, descs[1]);
	announce(ULNET_LARGE_OP_GET, 2);
	done_ev(&cookie, &status);
	assert_true(cookie == 2);
	assert_int_equal(status, -EPROTO);
	/* an unknown kind: ignored, no DONE */
	announce(7, 3);
	/* 20 announces whose descriptor never comes: b admits 16 (they time out with the transaction
	 * timeout, 3 s) and turns 4 away at once */
	for (uint64_t c = 100; c < 120; c++)
		announce(ULNET_LARGE_OP_PUT, c);
	for (int i = 0; i < 20; i++) {
		done_ev(&cookie, &status);
		assert_true(cookie >= 100 && cookie < 120);
		busy += status == -EBUSY;
		timedout += status == -ETIMEDOUT;
	}
	assert_int_equal(busy, 4);
	assert_int_equal(timedout, 16);
	no_more(B.eq);
	/* and b still serves an honest Put (a's own DONE service back in front) */
	assert_int_equal(ulnet_me_unlink(A.n, catcher), 0);
	{
		static const struct xc c = { 2 * MIB, 0, CONTIG, CONTIG, false };

		xfer(&A, &B, &c, 14, 3);
	}
	node_down(&A);
	node_down(&B);
	A.n = B.n = NULL;
	assert_int_equal(ulnet_eq_destroy(done_eq), 0);
	setup(NULL);
}

/* A node to itself (its own NID, so the lo NI): the rendezvous runs through lo as through a net. */
static void test_self(void **state)
{
	static const struct xc cases[] = {
		{ 3 * MIB + 7, 4097, IOVEC, KIOV, false },
		{ 3 * MIB + 7, 4097, CONTIG, IOVEC, true },
	};

	(void)state;
	ping_ok(&B, &B, true);
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		xfer(&B, &B, &cases[k], 13, 0x500 + k);
}

/* Through a router (tcp only): a on tcp, r on tcp and tcp1 with routing on, b on tcp1; every message
 * of the rendezvous is an ordinary one of at most LNET_MTU, which r forwards. */
static void ni_add(ulnet_node *n, const char *netname, const char *nid)
{
	struct ulnet_ni_conf conf = { .net = netname, .nid = nid };

	assert_int_equal(ulnet_ni_add(n, &conf), 0);
}

static void test_routed(void **state)
{
	struct ulnet_node_opts opts = { .page_size = 4096, .transaction_timeout = 3 };
	struct node2 a = { 0 }, b = { 0 };
	ulnet_node *r;
	struct ulnet_routing_conf rc;
	struct ulnet_route_conf ra = { .net = "tcp1", .gateway = "127.226.90.9@tcp", .hops = ULNET_ROUTE_HOPS_UNDEF };
	struct ulnet_route_conf rb = { .net = "tcp", .gateway = "127.226.91.9@tcp1", .hops = ULNET_ROUTE_HOPS_UNDEF };
	static const struct xc cases[] = {
		{ 16 * MIB, 4097, IOVEC, KIOV, false },
		{ 16 * MIB, 4097, CONTIG, KIOV, true },
	};

	(void)state;
	if (strcmp(net, "tcp"))
		skip();
	assert_int_equal(ulnet_node_open(&opts, &r), 0);
	ni_add(r, "tcp", "127.226.90.9@tcp");
	ni_add(r, "tcp1", "127.226.91.9@tcp1");
	ulnet_routing_get(r, &rc);
	rc.enable = true;
	assert_int_equal(ulnet_routing_set(r, &rc), 0);
	opts.page_size = 4096;
	assert_int_equal(ulnet_node_open(&opts, &a.n), 0);
	ni_add(a.n, "tcp", "127.226.90.1@tcp");
	opts.page_size = 65536;
	assert_int_equal(ulnet_node_open(&opts, &b.n), 0);
	ni_add(b.n, "tcp1", "127.226.91.2@tcp1");
	assert_int_equal(ulnet_nid_parse("127.226.90.1@tcp", &a.id.nid, NULL), 0);
	assert_int_equal(ulnet_nid_parse("127.226.91.2@tcp1", &b.id.nid, NULL), 0);
	a.id.pid = b.id.pid = ULNET_PID_LUSTRE;
	assert_int_equal(ulnet_eq_create(&a.eq), 0);
	assert_int_equal(ulnet_eq_create(&b.eq), 0);
	assert_int_equal(ulnet_route_add(a.n, &ra), 0);
	assert_int_equal(ulnet_route_add(b.n, &rb), 0);
	ping_ok(&a, &b, true);
	ping_ok(&b, &a, true);
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		xfer(&a, &b, &cases[k], 11, 0x300 + k);
		xfer(&b, &a, &cases[k], 12, 0x400 + k);
	}
	{
		struct ulnet_routing_info ri;

		ulnet_routing_info_get(r, &ri);
		fprintf(stderr, "router forwarded %llu messages, %llu bytes\n", (unsigned long long)ri.fwd.msgs,
			(unsigned long long)ri.fwd.bytes);
		assert_true(ri.fwd.bytes >= 4ull * 16 * MIB);
	}
	node_down(&a);
	node_down(&b);
	ulnet_node_close(r);
}

/* ---- the core's probe of a peer never pinged ---- */

static unsigned probe_block(unsigned k)
{
	return (!strcmp(net, "tcp") ? 10 : 20) + k;
}

/* @c from @a to @b, never pinged: it works as after a ping, and costs exactly one message (the
 * probe's ping) more than the same op once the capability is known. */
static void first_costs_one_ping(struct node2 *a, struct node2 *b, const struct xc *c, uint32_t portal)
{
	uint64_t first, again;

	assert_int_equal(ulnet_large_peer(a->n, &b->id.nid), 0);
	first = sent_msgs(a->n);
	xfer(a, b, c, portal, 1);
	first = sent_msgs(a->n) - first;
	assert_int_equal(ulnet_large_peer(a->n, &b->id.nid), 1);
	again = sent_msgs(a->n);
	xfer(a, b, c, portal, 2);
	again = sent_msgs(a->n) - again;
	assert_true(first == again + 1);
}

/* A Put toward a capable peer never pinged, and a Get the other way (that peer never pinged either). */
static void test_probe_capable(void **state)
{
	static const struct xc put = { 2 * MIB + 1, 4097, IOVEC, KIOV, false };
	static const struct xc get = { 2 * MIB + 1, 4097, CONTIG, KIOV, true };
	struct node2 p = { 0 }, q = { 0 };

	(void)state;
	node_up_at(&p, 4096, 0, 235, probe_block(0), 1);
	node_up_at(&q, 65536, 0, 235, probe_block(0), 2);
	first_costs_one_ping(&p, &q, &put, 7);
	first_costs_one_ping(&q, &p, &get, 8);
	node_down(&p);
	node_down(&q);
}

/* @n ops (Puts and Gets in turn) of 1 MiB + 1 from @from to @to on their own MDs (threshold 2, on
 * @from's EQ); each call's return in rc[i]. */
#define PROBE_OPS 20
static void many_ops(struct node2 *from, const struct node2 *to, uint8_t *buf, unsigned n,
		     struct ulnet_handle *h, int *rc)
{
	for (unsigned i = 0; i < n; i++) {
		struct ulnet_md md = { .start = buf, .length = MIB + 1, .threshold = 2, .eq = from->eq };

		assert_int_equal(ulnet_md_bind(from->n, &md, ULNET_UNLINK, &h[i]), 0);
		rc[i] = i % 2 ? ulnet_get(from->n, h[i], &to->id, 7, 1, 0)
			      : ulnet_put(from->n, h[i], ULNET_ACK_REQ, &to->id, 7, 1, 0, 0);
	}
}

/* the SEND event of each of the @n ops on @eq ended with @status (any order), nothing else; their
 * MDs (one use left) then unlinked */
static void ops_ended(struct node2 *from, const struct ulnet_handle *h, unsigned n, int status)
{
	struct ulnet_event ev;

	for (unsigned i = 0; i < n; i++) {
		next_ev(from->eq, &ev);
		assert_int_equal(ev.type, ULNET_EVENT_SEND);
		assert_int_equal(ev.status, status);
		assert_int_equal(ev.mlength, MIB + 1);
	}
	no_more(from->eq);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(ulnet_md_unlink(from->n, h[i]), 0);
		next_ev(from->eq, &ev);
		assert_int_equal(ev.type, ULNET_EVENT_UNLINK);
	}
}

/* Toward a ulnet with large payloads off, never pinged: the calls return 0, one ping goes for all
 * of them, each ends in its SEND event with -EMSGSIZE, and the peer received the ping and nothing
 * else. Then it is known: -EMSGSIZE at the call, nothing sent. */
static void test_probe_not_capable(void **state)
{
	struct node2 p = { 0 }, c = { 0 };
	uint8_t *buf = calloc(1, MIB + 1);
	struct ulnet_handle h[PROBE_OPS];
	int rc[PROBE_OPS];
	uint64_t sent, got;

	(void)state;
	node_up_at(&p, 4096, 0, 235, probe_block(1), 1);
	node_up_at(&c, 4096, ULNET_MTU, 235, probe_block(1), 3);
	sent = sent_msgs(p.n);
	got = recv_msgs(c.n);
	many_ops(&p, &c, buf, 8, h, rc);
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(rc[i], 0);
	ops_ended(&p, h, 8, -EMSGSIZE);
	assert_true(sent_msgs(p.n) - sent == 1);
	assert_true(recv_msgs_at_least(c.n, got + 1) - got == 1);
	assert_true(bytes_of(c.n, true) == 0);
	assert_int_equal(ulnet_large_peer(p.n, &c.id.nid), 0);
	/* known now: refused at the call */
	many_ops(&p, &c, buf, 2, h, rc);
	assert_int_equal(rc[0], -EMSGSIZE);
	assert_int_equal(rc[1], -EMSGSIZE);
	no_more(p.eq);
	assert_true(sent_msgs(p.n) - sent == 1);
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(ulnet_md_unlink(p.n, h[i]), 0);
	for (unsigned i = 0; i < 2; i++)
		next_ev(p.eq, &(struct ulnet_event){ 0 });
	node_down(&p);
	node_down(&c);
	free(buf);
}

/* p drops its own pings to q (a fault rule: the probe's REPLY never comes). */
static void drop_pings(struct node2 *p, const struct node2 *q, bool on)
{
	struct ulnet_fault_rule r;

	if (!on) {
		assert_int_equal(ulnet_fault_del(p->n, ULNET_FAULT_DROP, NULL, &q->id.nid), 1);
		return;
	}
	ulnet_fault_rule_init(&r, ULNET_FAULT_DROP);
	r.dst = q->id.nid;
	r.portal = 0;
	r.msg_mask = 1u << ULNET_MSG_GET;
	r.rate = 1;
	assert_int_equal(ulnet_fault_add(p->n, &r), 0);
}

/* p and q up at block @k, p dropping its pings to q; @n ops from p to q parked behind the probe (the
 * first 16 of them: the 17th is over the bound, its call's return in rc[16]). */
static void park_ops(struct node2 *p, struct node2 *q, unsigned k, uint8_t *buf, unsigned n,
		     struct ulnet_handle *h, int *rc)
{
	node_up_at(p, 4096, 0, 235, probe_block(k), 1);
	node_up_at(q, 4096, 0, 235, probe_block(k), 2);
	drop_pings(p, q, true);
	many_ops(p, q, buf, n, h, rc);
	for (unsigned i = 0; i < n && i < 16; i++)
		assert_int_equal(rc[i], 0);
}

/* While the probe waits (its ping dropped): 16 ops park behind it, the 17th is refused with -ENOBUFS;
 * one MD unlinked meanwhile. The ping times out (transaction_timeout, 3 s): every parked op ends
 * with -ETIMEDOUT (the unlinked MD's event says unlinked), the capability stays unknown, and within
 * the hold-off the next call returns that error at once. Once the hold-off is over, an op probes
 * again and goes (here to no matching ME: -ENOENT from the target). */
static void test_probe_failed(void **state)
{
	struct node2 p = { 0 }, q = { 0 };
	uint8_t *buf = calloc(1, MIB + 1);
	struct ulnet_handle h[PROBE_OPS];
	struct ulnet_event ev;
	int rc[PROBE_OPS], timedout = 0, unlinked = 0, tries = 0;

	(void)state;
	park_ops(&p, &q, 2, buf, 17, h, rc);
	assert_int_equal(rc[16], -ENOBUFS);
	assert_int_equal(ulnet_md_unlink(p.n, h[16]), 0);
	next_ev(p.eq, &ev);
	assert_int_equal(ev.type, ULNET_EVENT_UNLINK);
	assert_int_equal(ulnet_md_unlink(p.n, h[3]), 0); /* parked: it goes with the op's event */
	for (unsigned i = 0; i < 16; i++) {
		next_ev(p.eq, &ev);
		assert_int_equal(ev.type, ULNET_EVENT_SEND);
		timedout += ev.status == -ETIMEDOUT;
		unlinked += ev.unlinked && ev.md_handle.cookie == h[3].cookie;
	}
	assert_int_equal(timedout, 16);
	assert_int_equal(unlinked, 1);
	no_more(p.eq);
	assert_int_equal(ulnet_large_peer(p.n, &q.id.nid), 0);
	drop_pings(&p, &q, false);
	/* within the hold-off: the probe's error at the call */
	assert_int_equal(ulnet_put(p.n, h[0], ULNET_NOACK_REQ, &q.id, 7, 1, 0, 0), -ETIMEDOUT);
	/* after it: probed again, and the op goes (no ME on q's portal 7: the target says -ENOENT) */
	while ((rc[0] = ulnet_put(p.n, h[0], ULNET_NOACK_REQ, &q.id, 7, 1, 0, 0)) == -ETIMEDOUT && tries++ < 300)
		usleep(10000);
	assert_int_equal(rc[0], 0);
	next_ev(p.eq, &ev);
	assert_int_equal(ev.type, ULNET_EVENT_SEND);
	assert_int_equal(ev.status, -ENOENT);
	assert_true(ev.unlinked); /* its last use */
	assert_int_equal(ulnet_large_peer(p.n, &q.id.nid), 1);
	for (unsigned i = 1; i < 16; i++)
		if (i != 3)
			assert_int_equal(ulnet_md_unlink(p.n, h[i]), 0);
	for (unsigned i = 0; i < 14; i++) {
		next_ev(p.eq, &ev);
		assert_int_equal(ev.type, ULNET_EVENT_UNLINK);
	}
	no_more(p.eq);
	node_down(&p);
	node_down(&q);
	free(buf);
}

/* The node closed with ops parked behind a probe: it returns, nothing leaks (ASan), no event comes. */
static void test_probe_close(void **state)
{
	struct node2 p = { 0 }, q = { 0 };
	uint8_t *buf = calloc(1, MIB + 1);
	struct ulnet_handle h[PROBE_OPS];
	int rc[PROBE_OPS];

	(void)state;
	park_ops(&p, &q, 3, buf, 4, h, rc);
	ulnet_node_close(p.n);
	p.n = NULL;
	no_more(p.eq);
	node_down(&p);
	node_down(&q);
	free(buf);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_match, setup, teardown),
		cmocka_unit_test_setup_teardown(test_target_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_initiator_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_self, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
		cmocka_unit_test(test_routed),
		cmocka_unit_test(test_probe_capable),
		cmocka_unit_test(test_probe_not_capable),
		cmocka_unit_test(test_probe_failed),
		cmocka_unit_test(test_probe_close),
	};

	if (argc != 2 || (strcmp(argv[1], "tcp") && strcmp(argv[1], "o2ib"))) {
		fprintf(stderr, "usage: %s tcp|o2ib\n", argv[0]);
		return 2;
	}
	net = argv[1];
	octet = !strcmp(net, "tcp") ? 226 : 227;
	if (!strcmp(net, "tcp") && geteuid() != 0) {
		fprintf(stderr, "tcp needs root (port 988): skipped\n");
		return 77;
	}
	cmocka_set_message_output(CM_OUTPUT_STDOUT);
	return cmocka_run_group_tests_name(net, tests, NULL, NULL);
}
