/* SPDX-License-Identifier: MIT */
/* Matching and MD life cycle: match/ignore bits, initiator filters, ME order, TRUNCATE, MANAGE_REMOTE
 * offsets, threshold, MAX_SIZE, unlink while a message is in flight, and transmit credits. A "hold"
 * LND (registered as kfi) keeps sent messages until the test completes them. */
#include <errno.h>
#include <sched.h>
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

/* ---- matching table over lo ---- */

struct match_case {
	const char *name;
	uint64_t me_bits, me_ignore;
	uint32_t me_pid;             /* ULNET_PID_ANY or a pid */
	uint32_t options;            /* on top of OP_PUT */
	uint32_t md_len;
	uint64_t put_bits;
	uint32_t put_len, put_off;
	bool match;                  /* else the PUT is dropped */
	uint32_t want_mlen, want_off;
};

static const struct match_case match_cases[] = {
	{ "exact bits", 0x10, 0, ULNET_PID_ANY, 0, 100, 0x10, 50, 0, true, 50, 0 },
	{ "bits differ", 0x10, 0, ULNET_PID_ANY, 0, 100, 0x11, 50, 0, false, 0, 0 },
	{ "ignored bit differs", 0x10, 0x1, ULNET_PID_ANY, 0, 100, 0x11, 50, 0, true, 50, 0 },
	{ "high ignore mask", 0xff00000000000000ull, 0x00ffffffffffffffull, ULNET_PID_ANY, 0, 100,
	  0xff12345678abcdefull, 10, 0, true, 10, 0 },
	{ "pid filter matches", 1, 0, ULNET_PID_LUSTRE, 0, 100, 1, 10, 0, true, 10, 0 },
	{ "pid filter rejects", 1, 0, 777, 0, 100, 1, 10, 0, false, 0, 0 },
	{ "too long without TRUNCATE", 1, 0, ULNET_PID_ANY, 0, 100, 1, 101, 0, false, 0, 0 },
	{ "too long with TRUNCATE", 1, 0, ULNET_PID_ANY, ULNET_MD_TRUNCATE, 100, 1, 150, 0, true, 100, 0 },
	{ "remote offset", 1, 0, ULNET_PID_ANY, ULNET_MD_MANAGE_REMOTE, 100, 1, 40, 60, true, 40, 60 },
	{ "remote offset too far", 1, 0, ULNET_PID_ANY, ULNET_MD_MANAGE_REMOTE, 100, 1, 41, 60, false, 0, 0 },
	{ "remote offset truncated", 1, 0, ULNET_PID_ANY, ULNET_MD_MANAGE_REMOTE | ULNET_MD_TRUNCATE, 100, 1, 80,
	  60, true, 40, 60 },
	{ "remote offset past end truncated", 1, 0, ULNET_PID_ANY, ULNET_MD_MANAGE_REMOTE | ULNET_MD_TRUNCATE,
	  100, 1, 80, 200, true, 0, 200 },
	{ "local offset ignores remote", 1, 0, ULNET_PID_ANY, 0, 100, 1, 40, 60, true, 40, 0 },
	{ "zero length", 1, 0, ULNET_PID_ANY, 0, 0, 1, 0, 0, true, 0, 0 },
	{ "GET-only MD refuses PUT", 1, 0, ULNET_PID_ANY, ULNET_MD_OP_GET, 100, 1, 10, 0, false, 0, 0 },
};

static ulnet_node *open_node(uint32_t page)
{
	struct ulnet_node_opts o = { .page_size = page };
	ulnet_node *node;

	assert_int_equal(ulnet_node_open(&o, &node), 0);
	return node;
}

static struct ulnet_process_id lo_id(void)
{
	struct ulnet_process_id id = { .pid = ULNET_PID_LUSTRE };

	assert_int_equal(ulnet_nid_parse("0@lo", &id.nid, NULL), 0);
	return id;
}

static void run_match_case(void **state)
{
	const struct match_case *c = *state;
	ulnet_node *node = open_node(0);
	struct ulnet_process_id self = lo_id(), filt = { .nid = ulnet_nid_any(), .pid = c->me_pid };
	uint8_t *tbuf = calloc(1, c->md_len + 1), *ibuf = malloc(c->put_len + 1);
	struct ulnet_md tmd = { .start = tbuf, .length = c->md_len, .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_md imd = { .start = ibuf, .length = c->put_len, .threshold = 1 };
	struct ulnet_handle me, mdh, imdh;
	struct ulnet_event ev;
	struct ulnet_stats st;
	ulnet_eq *eq;

	assert_int_equal(ulnet_eq_create(&eq), 0);
	memset(ibuf, 0x5a, c->put_len + 1);
	tmd.options = c->options & ULNET_MD_OP_GET ? c->options : (c->options | ULNET_MD_OP_PUT);
	tmd.eq = eq;
	imd.eq = eq;
	assert_int_equal(ulnet_me_attach(node, 3, &filt, c->me_bits, c->me_ignore, ULNET_UNLINK, ULNET_INS_AFTER,
					 &me), 0);
	assert_int_equal(ulnet_md_attach(node, me, &tmd, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_md_bind(node, &imd, ULNET_UNLINK, &imdh), 0);
	assert_int_equal(ulnet_put(node, imdh, ULNET_NOACK_REQ, &self, 3, c->put_bits, c->put_off, 0), 0);
	/* lo is synchronous: by now the PUT (if it matched) and the SEND are both queued, PUT first */
	if (c->match) {
		assert_int_equal(ulnet_eq_wait(eq, 2000, &ev), 1);
		assert_int_equal(ev.type, ULNET_EVENT_PUT);
		assert_int_equal(ev.mlength, c->want_mlen);
		assert_int_equal(ev.rlength, c->put_len);
		assert_int_equal(ev.offset, c->want_off);
		for (uint32_t i = 0; i < c->md_len; i++)
			assert_int_equal(tbuf[i], i >= c->want_off && i < c->want_off + c->want_mlen ? 0x5a : 0);
	}
	assert_int_equal(ulnet_eq_wait(eq, 2000, &ev), 1);
	assert_int_equal(ev.type, ULNET_EVENT_SEND);
	assert_true(ev.unlinked); /* threshold 1 used up */
	assert_int_equal(ulnet_eq_wait(eq, 0, &ev), 0);
	if (!c->match) {
		ulnet_stats_get(node, &st);
		assert_int_equal(st.drop_count, 1);
		for (uint32_t i = 0; i < c->md_len; i++)
			assert_int_equal(tbuf[i], 0);
	}
	assert_int_equal(ulnet_md_unlink(node, mdh), 0);
	assert_int_equal(ulnet_eq_wait(eq, 2000, &ev), 1);
	assert_int_equal(ev.type, ULNET_EVENT_UNLINK);
	assert_true(ev.unlinked);
	assert_int_equal(ulnet_md_unlink(node, mdh), -ENOENT);
	assert_int_equal(ulnet_me_unlink(node, me), -ENOENT); /* went with its MD */
	ulnet_node_close(node);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
	free(tbuf);
	free(ibuf);
}

/* ---- threshold, MAX_SIZE, ME order ---- */

static void put_bytes(ulnet_node *node, uint32_t portal, uint64_t bits, uint32_t len)
{
	static uint8_t buf[256];
	struct ulnet_md imd = { .start = buf, .length = len, .threshold = 1 };
	struct ulnet_process_id self = lo_id();
	struct ulnet_handle h;

	assert_int_equal(ulnet_md_bind(node, &imd, ULNET_UNLINK, &h), 0);
	assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &self, portal, bits, 0, 0), 0);
}

static void threshold_and_order(void **state)
{
	ulnet_node *node = open_node(0);
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	uint8_t a[64], b[64];
	struct ulnet_md ma = { .start = a, .length = 64, .threshold = 2, .options = ULNET_MD_OP_PUT,
			       .user_ptr = a };
	struct ulnet_md mb = { .start = b, .length = 64, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT, .user_ptr = b };
	struct ulnet_handle mea, meb, ha, hb;
	struct ulnet_event ev;
	ulnet_eq *eq;

	(void)state;
	assert_int_equal(ulnet_eq_create(&eq), 0);
	ma.eq = mb.eq = eq;
	/* b is attached AFTER, a BEFORE: a wins while it lasts, then b takes over */
	assert_int_equal(ulnet_me_attach(node, 5, &any, 9, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meb), 0);
	assert_int_equal(ulnet_md_attach(node, meb, &mb, ULNET_UNLINK, &hb), 0);
	assert_int_equal(ulnet_me_attach(node, 5, &any, 9, 0, ULNET_UNLINK, ULNET_INS_BEFORE, &mea), 0);
	assert_int_equal(ulnet_md_attach(node, mea, &ma, ULNET_UNLINK, &ha), 0);
	for (int i = 0; i < 3; i++)
		put_bytes(node, 5, 9, 8);
	assert_int_equal(ulnet_eq_wait(eq, 1000, &ev), 1);
	assert_ptr_equal(ev.md_user_ptr, a);
	assert_false(ev.unlinked);
	assert_int_equal(ev.offset, 0);
	assert_int_equal(ulnet_eq_wait(eq, 1000, &ev), 1);
	assert_ptr_equal(ev.md_user_ptr, a);
	assert_true(ev.unlinked); /* threshold 2 used up */
	assert_int_equal(ev.offset, 8); /* local offset advanced */
	assert_int_equal(ulnet_eq_wait(eq, 1000, &ev), 1);
	assert_ptr_equal(ev.md_user_ptr, b);
	assert_int_equal(ulnet_md_unlink(node, ha), -ENOENT);
	assert_int_equal(ulnet_me_unlink(node, meb), 0);
	assert_int_equal(ulnet_eq_wait(eq, 1000, &ev), 1);
	assert_int_equal(ev.type, ULNET_EVENT_UNLINK);
	ulnet_node_close(node);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
}

static void max_size_unlinks(void **state)
{
	ulnet_node *node = open_node(0);
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	uint8_t a[100];
	struct ulnet_md ma = { .start = a, .length = 100, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MAX_SIZE, .max_size = 30 };
	struct ulnet_handle me, h;
	struct ulnet_event ev;
	ulnet_eq *eq;

	(void)state;
	assert_int_equal(ulnet_eq_create(&eq), 0);
	ma.eq = eq;
	assert_int_equal(ulnet_me_attach(node, 6, &any, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(node, me, &ma, ULNET_UNLINK, &h), 0);
	put_bytes(node, 6, 1, 30);
	put_bytes(node, 6, 1, 30);
	put_bytes(node, 6, 1, 30); /* 10 bytes left < max_size: unlinked after this one */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ulnet_eq_wait(eq, 1000, &ev), 1);
		assert_int_equal(ev.offset, 30u * (uint32_t)i);
		assert_int_equal(ev.unlinked, i == 2);
	}
	assert_int_equal(ulnet_eq_destroy(eq), 0); /* no MD refers to it any more */
	ulnet_node_close(node);
}

static void bad_mds(void **state)
{
	ulnet_node *node = open_node(65536);
	struct ulnet_kiov k[2];
	struct ulnet_md md = { .threshold = 1 };
	struct ulnet_handle h, me;
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	uint8_t *mem = aligned_alloc(65536, 3 * 65536);

	(void)state;
	/* a kiov entry may fill a 64 KiB node page, not cross it */
	k[0].kiov_base = mem;
	k[0].kiov_len = 65536;
	k[1].kiov_base = mem + 65536 + 100;
	k[1].kiov_len = 65436;
	md.start = k;
	md.length = 2;
	md.options = ULNET_MD_KIOV;
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_UNLINK, &h), 0);
	k[1].kiov_len = 65437;
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_UNLINK, &h), -EINVAL);
	md.length = ULNET_MD_MAX_FRAGS + 1;
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_UNLINK, &h), -EINVAL);
	md.options = ULNET_MD_KIOV | ULNET_MD_IOVEC;
	md.length = 1;
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_UNLINK, &h), -EINVAL);
	md.options = 0;
	md.threshold = -2;
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_UNLINK, &h), -EINVAL);
	assert_int_equal(ulnet_me_attach(node, 64, &any, 0, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), -EINVAL);
	assert_int_equal(ulnet_me_attach(node, 63, &any, 0, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	md.threshold = 1;
	md.start = mem;
	md.length = 10;
	assert_int_equal(ulnet_md_attach(node, me, &md, ULNET_UNLINK, &h), 0);
	assert_int_equal(ulnet_md_attach(node, me, &md, ULNET_UNLINK, &h), -EBUSY);
	h.cookie ^= 3; /* wrong kind */
	assert_int_equal(ulnet_md_unlink(node, h), -ENOENT);
	ulnet_node_close(node);
	free(mem);
}

/* ---- the hold LND: messages stay in flight until the test completes them ---- */

#define HOLD_MAX 64
static struct ulnet_msg *held[HOLD_MAX];
static int n_held;

static int hold_startup(struct ulnet_ni *ni) { (void)ni; return 0; }
static void hold_shutdown(struct ulnet_ni *ni)
{
	(void)ni;
	for (int i = 0; i < n_held; i++)
		ulnet__finalize(held[i], -ESHUTDOWN);
	n_held = 0;
}
static int hold_send(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg)
{
	(void)ni;
	(void)rx_priv;
	if (n_held == HOLD_MAX)
		return -ENOMEM;
	held[n_held++] = msg;
	return 0;
}
static int hold_recv(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, const struct iovec *iov,
		     unsigned niov, uint32_t mlen, uint32_t rlen)
{
	(void)ni, (void)rx_priv, (void)iov, (void)niov, (void)mlen, (void)rlen;
	if (msg)
		ulnet__finalize(msg, 0);
	return 0;
}
static const struct ulnet_lnd_ops hold_ops = {
	.lnd_type = ULNET_LND_KFI, .lnd_name = "kfi", .lnd_startup = hold_startup,
	.lnd_shutdown = hold_shutdown, .lnd_send = hold_send, .lnd_recv = hold_recv,
};

static int hold_setup(void **state)
{
	(void)state;
	ulnet__lnd_find("lo"); /* builtins first */
	ulnet__lnd_register(&hold_ops);
	return 0;
}

static int held_count(ulnet_node *node)
{
	int n;

	tst_enter(tst_first_ni(node)); /* the LND's state: its loop's */
	n = n_held;
	tst_exit(tst_first_ni(node));
	return n;
}

/* Completions run in the loop's completion phase: wait until it has run every one queued. */
static void settle(ulnet_node *node)
{
	for (;;) {
		bool idle;

		struct ulnet_ni *ni = tst_first_ni(node);

		tst_enter(ni);
		idle = ulnet_list_empty(&ni->loop->done.q);
		tst_exit(ni);
		if (idle)
			return;
		sched_yield();
	}
}

static void complete_first(ulnet_node *node, int status)
{
	struct ulnet_msg *m;

	tst_enter(tst_first_ni(node));
	m = held[0];
	memmove(held, held + 1, (size_t)(--n_held) * sizeof(held[0]));
	ulnet__finalize(m, status);
	tst_exit(tst_first_ni(node)); /* completes it here, as the LND's loop would */
	settle(node);
}

static ulnet_node *hold_node(const char *peer_credits, const char *credits)
{
	struct ulnet_kv tun[] = { { "peer_credits", peer_credits }, { "credits", credits } };
	struct ulnet_ni_conf conf = { .net = "kfi", .nid = "5@kfi", .tunables = tun, .n_tunables = 2 };
	ulnet_node *node = open_node(0);

	assert_int_equal(ulnet_ni_add(node, &conf), 0);
	assert_int_equal(ulnet_ni_add(node, &conf), -EEXIST);
	return node;
}

static void credits_queue_not_drop(void **state)
{
	ulnet_node *node = hold_node("2", "3");
	struct ulnet_process_id p6 = { .pid = ULNET_PID_LUSTRE }, p7 = { .pid = ULNET_PID_LUSTRE };
	static uint8_t buf[16];
	struct ulnet_md md = { .start = buf, .length = 16, .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_handle h;
	struct ulnet_peer_info pi;
	struct ulnet_ni_info ni;
	struct ulnet_event ev;
	ulnet_eq *eq;
	int sends = 0;

	(void)state;
	assert_int_equal(ulnet_eq_create(&eq), 0);
	md.eq = eq;
	assert_int_equal(ulnet_nid_parse("6@kfi", &p6.nid, NULL), 0);
	assert_int_equal(ulnet_nid_parse("7@kfi", &p7.nid, NULL), 0);
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_RETAIN, &h), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &p6, 1, 0, 0, 0), 0);
	ulnet__node_sync(node); /* the loop posts sends to remote NIDs */
	assert_int_equal(held_count(node), 2); /* peer_credits 2 */
	assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &p7, 1, 0, 0, 0), 0);
	ulnet__node_sync(node); /* the loop posts sends to remote NIDs */
	assert_int_equal(held_count(node), 3); /* NI credits 3 */
	assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &p7, 1, 0, 0, 0), 0);
	ulnet__node_sync(node); /* the loop posts sends to remote NIDs */
	assert_int_equal(held_count(node), 3); /* waits for an NI credit */
	assert_int_equal(ulnet_ni_info_get(node, 1, &ni), 0);
	assert_int_equal(ni.tx_credits, -1);
	assert_int_equal(ni.min_tx_credits, -1);
	complete_first(node, 0); /* 6's first: its peer credit launches 6's third, which waits for... */
	assert_int_equal(held_count(node), 3);
	for (int i = 0; i < 5; i++) {
		assert_true(held_count(node) > 0);
		complete_first(node, i == 4 ? -ETIMEDOUT : 0);
	}
	assert_int_equal(held_count(node), 0);
	for (;;) {
		if (ulnet_eq_wait(eq, 100, &ev) != 1)
			break;
		assert_int_equal(ev.type, ULNET_EVENT_SEND);
		if (++sends == 6)
			assert_int_equal(ev.status, -ETIMEDOUT);
		else
			assert_int_equal(ev.status, 0);
	}
	assert_int_equal(sends, 6); /* nothing was dropped */
	assert_int_equal(ulnet_peer_info_get(node, 0, &pi) == 0 || ulnet_peer_info_get(node, 1, &pi) == 0, 1);
	assert_int_equal(pi.tx_credits, pi.max_tx_credits);
	assert_int_equal(ulnet_md_unlink(node, h), 0);
	ulnet_node_close(node);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
}

static void unlink_while_in_flight(void **state)
{
	ulnet_node *node = hold_node("8", "256");
	struct ulnet_process_id p6 = { .pid = ULNET_PID_LUSTRE };
	static uint8_t buf[16];
	struct ulnet_md md = { .start = buf, .length = 16, .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_handle h;
	struct ulnet_event ev;
	ulnet_eq *eq;

	(void)state;
	assert_int_equal(ulnet_eq_create(&eq), 0);
	md.eq = eq;
	assert_int_equal(ulnet_nid_parse("6@kfi", &p6.nid, NULL), 0);
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_RETAIN, &h), 0);
	assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &p6, 1, 0, 0, 0), 0);
	assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &p6, 1, 0, 0, 0), 0);
	ulnet__node_sync(node); /* the loop posts sends to remote NIDs */
	assert_int_equal(ulnet_md_unlink(node, h), 0);
	assert_int_equal(ulnet_eq_wait(eq, 50, &ev), 0); /* busy: no UNLINK event yet */
	assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &p6, 1, 0, 0, 0), -ENOENT); /* zombie */
	assert_int_equal(ulnet_eq_destroy(eq), -EBUSY);
	complete_first(node, 0);
	assert_int_equal(ulnet_eq_wait(eq, 1000, &ev), 1);
	assert_false(ev.unlinked);
	complete_first(node, 0);
	assert_int_equal(ulnet_eq_wait(eq, 1000, &ev), 1);
	assert_true(ev.unlinked); /* the last completion carries the unlink */
	assert_int_equal(ulnet_md_unlink(node, h), -ENOENT);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
	ulnet_node_close(node);
}

static void shutdown_fails_queued(void **state)
{
	ulnet_node *node = hold_node("1", "256");
	struct ulnet_process_id p6 = { .pid = ULNET_PID_LUSTRE };
	static uint8_t buf[16];
	struct ulnet_md md = { .start = buf, .length = 16, .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_handle h;
	struct ulnet_event ev;
	ulnet_eq *eq;
	int n = 0;

	(void)state;
	assert_int_equal(ulnet_eq_create(&eq), 0);
	md.eq = eq;
	assert_int_equal(ulnet_nid_parse("6@kfi", &p6.nid, NULL), 0);
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_RETAIN, &h), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &p6, 1, 0, 0, 0), 0);
	ulnet__node_sync(node); /* the loop posts sends to remote NIDs */
	assert_int_equal(held_count(node), 1);
	ulnet_node_close(node);
	while (ulnet_eq_wait(eq, 0, &ev) == 1)
		if (ev.type == ULNET_EVENT_SEND) {
			assert_int_equal(ev.status, -ESHUTDOWN);
			n++;
		}
	assert_int_equal(n, 3);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
}

/* A Put or Get of a whole MD shows the LND the MD's fragments: its own array when none is empty
 * (nothing copied per message), the non-empty ones in order otherwise; the same either way. */
static void fragments_as_sent(void **state)
{
	static uint8_t buf[64];
	const struct iovec full[3] = { { buf, 4 }, { buf + 8, 4 }, { buf + 16, 8 } };
	const struct iovec gap[3] = { { buf, 4 }, { buf + 8, 0 }, { buf + 16, 8 } };
	struct ulnet_process_id p6 = { .pid = ULNET_PID_LUSTRE };
	ulnet_node *node = hold_node("8", "256");

	(void)state;
	assert_int_equal(ulnet_nid_parse("6@kfi", &p6.nid, NULL), 0);
	for (int get = 0; get < 2; get++) {
		for (int g = 0; g < 2; g++) {
			const struct iovec *want = g ? gap : full;
			struct ulnet_md md = { .start = (void *)want, .length = 3, .threshold = 1 + get,
					       .options = ULNET_MD_IOVEC };
			const struct ulnet_msg_lnd_view *v;
			const struct iovec *iov;
			struct ulnet_handle h;
			unsigned n, k = 0;

			assert_int_equal(ulnet_md_bind(node, &md, ULNET_UNLINK, &h), 0);
			assert_int_equal(get ? ulnet_get(node, h, &p6, 1, 0, 0)
					     : ulnet_put(node, h, ULNET_NOACK_REQ, &p6, 1, 0, 0, 0), 0);
			ulnet__node_sync(node);
			assert_int_equal(held_count(node), 1);
			tst_enter(tst_first_ni(node));
			v = ulnet__msg_view(held[0]);
			iov = get ? v->rdma_iov : v->iov;
			n = get ? v->rdma_niov : v->niov;
			assert_int_equal(n, g ? 2 : 3);
			assert_int_equal(get ? v->rdma_len : v->hdr.payload_length, g ? 12 : 16);
			for (unsigned i = 0; i < 3; i++) {
				if (!want[i].iov_len)
					continue;
				assert_ptr_equal(iov[k].iov_base, want[i].iov_base);
				assert_int_equal(iov[k].iov_len, want[i].iov_len);
				k++;
			}
			tst_exit(tst_first_ni(node));
			complete_first(node, 0);
			if (get) /* no REPLY comes: the MD goes by hand */
				assert_int_equal(ulnet_md_unlink(node, h), 0);
		}
	}
	ulnet_node_close(node);
}

/* A kiov's pages that continue one another (each next page starting on a page boundary where the
 * last ended) reach the LND as one fragment, shown as an iovec; pages that do not stay apart, and an
 * MD that stays page by page is still shown as a kiov. Empty pages are dropped. */
static const struct kiov_run_case {
	const char *name;
	struct { unsigned page, off, len; } k[4];
	unsigned nk;
	struct { unsigned page, off, len; } want[4];
	unsigned nwant;
	enum ulnet_frag_form form;
} kiov_run_cases[] = {
	{ "offset, whole page, short page: one run", { { 0, 100, 4096 - 100 }, { 1, 0, 4096 }, { 2, 0, 10 } }, 3,
	  { { 0, 100, 2 * 4096 - 100 + 10 } }, 1, ULNET_FRAG_IOVEC },
	{ "a page missing: two", { { 0, 0, 4096 }, { 2, 0, 4096 } }, 2, { { 0, 0, 4096 }, { 2, 0, 4096 } }, 2,
	  ULNET_FRAG_KIOV },
	{ "pages in reverse: two", { { 1, 0, 4096 }, { 0, 0, 4096 } }, 2, { { 1, 0, 4096 }, { 0, 0, 4096 } }, 2,
	  ULNET_FRAG_KIOV },
	{ "pieces of one page: not joined", { { 0, 0, 100 }, { 0, 100, 200 } }, 2, { { 0, 0, 100 }, { 0, 100, 200 } },
	  2, ULNET_FRAG_KIOV },
	{ "a short page ends a run", { { 0, 0, 4000 }, { 1, 0, 4096 } }, 2, { { 0, 0, 4000 }, { 1, 0, 4096 } }, 2,
	  ULNET_FRAG_KIOV },
	{ "an empty page between: dropped", { { 0, 0, 4096 }, { 3, 7, 0 }, { 1, 0, 4096 }, { 2, 0, 1 } }, 4,
	  { { 0, 0, 2 * 4096 + 1 } }, 1, ULNET_FRAG_IOVEC },
};

static void kiov_runs_as_sent(void **state)
{
	const struct kiov_run_case *c = *state;
	uint8_t *mem = aligned_alloc(4096, 4 * 4096);
	struct ulnet_process_id p6 = { .pid = ULNET_PID_LUSTRE };
	ulnet_node *node = hold_node("8", "256");
	struct ulnet_kiov kiov[4];
	struct ulnet_md md = { .start = kiov, .length = c->nk, .threshold = 1, .options = ULNET_MD_KIOV };
	const struct ulnet_msg_lnd_view *v;
	struct ulnet_lnd_md m;
	struct ulnet_handle h;
	unsigned total = 0;

	assert_non_null(mem);
	assert_int_equal(ulnet_node_page_size(node), 4096);
	assert_int_equal(ulnet_nid_parse("6@kfi", &p6.nid, NULL), 0);
	for (unsigned i = 0; i < c->nk; i++) {
		kiov[i] = (struct ulnet_kiov){ mem + c->k[i].page * 4096 + c->k[i].off, c->k[i].len };
		total += c->k[i].len;
	}
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_UNLINK, &h), 0);
	assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &p6, 1, 0, 0, 0), 0);
	ulnet__node_sync(node);
	assert_int_equal(held_count(node), 1);
	tst_enter(tst_first_ni(node));
	v = ulnet__msg_view(held[0]);
	assert_int_equal(v->hdr.payload_length, total);
	assert_int_equal(v->niov, c->nwant);
	assert_int_equal(ulnet__msg_md(held[0], &m), 0);
	assert_int_equal(m.form, c->form);
	assert_int_equal(m.nfrags, c->nwant);
	assert_int_equal(m.length, total);
	for (unsigned i = 0; i < c->nwant; i++) {
		assert_ptr_equal(v->iov[i].iov_base, mem + c->want[i].page * 4096 + c->want[i].off);
		assert_int_equal(v->iov[i].iov_len, c->want[i].len);
	}
	tst_exit(tst_first_ni(node));
	complete_first(node, 0);
	ulnet_node_close(node);
	free(mem);
}

int main(void)
{
	struct CMUnitTest tests[64];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++)
		tests[n++] = (struct CMUnitTest){ .name = match_cases[i].name, .test_func = run_match_case,
						  .initial_state = (void *)&match_cases[i] };
	tests[n++] = (struct CMUnitTest){ .name = "threshold and ME order", .test_func = threshold_and_order };
	tests[n++] = (struct CMUnitTest){ .name = "MAX_SIZE unlinks", .test_func = max_size_unlinks };
	tests[n++] = (struct CMUnitTest){ .name = "bad MDs and MEs", .test_func = bad_mds };
	tests[n++] = (struct CMUnitTest){ .name = "credits queue, never drop", .test_func = credits_queue_not_drop };
	tests[n++] = (struct CMUnitTest){ .name = "unlink while in flight", .test_func = unlink_while_in_flight };
	tests[n++] = (struct CMUnitTest){ .name = "shutdown fails queued", .test_func = shutdown_fails_queued };
	tests[n++] = (struct CMUnitTest){ .name = "fragments as sent", .test_func = fragments_as_sent };
	for (size_t i = 0; i < sizeof(kiov_run_cases) / sizeof(kiov_run_cases[0]); i++)
		tests[n++] = (struct CMUnitTest){ .name = kiov_run_cases[i].name, .test_func = kiov_runs_as_sent,
						  .initial_state = (void *)&kiov_run_cases[i] };
	return _cmocka_run_group_tests("md", tests, n, hold_setup, NULL);
}
