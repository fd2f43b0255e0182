/* SPDX-License-Identifier: MIT */
/* Deferred, bounded completions: 10,000 messages queued behind one peer credit complete one after the
 * other on a thread with a 256 KiB stack (with recursive completion they would need megabytes), and
 * the completion phase stops at its budget. The test LND holds the first message and finalizes every
 * later one inside lnd_send, as lo does: the worst case for recursion. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
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

#define N_QUEUED 10000
#define SMALL_STACK (256u * 1024u)

static struct ulnet_msg *held;
static bool hold_next;

static int inl_startup(struct ulnet_ni *ni) { (void)ni; return 0; }
static void inl_shutdown(struct ulnet_ni *ni)
{
	(void)ni;
	if (held)
		ulnet__finalize(held, -ESHUTDOWN);
	held = NULL;
}
static int inl_send(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg)
{
	(void)ni, (void)rx_priv;
	if (hold_next) {
		hold_next = false;
		held = msg;
		return 0;
	}
	ulnet__finalize(msg, 0);
	return 0;
}
static int inl_recv(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, const struct iovec *iov,
		    unsigned niov, uint32_t mlen, uint32_t rlen)
{
	(void)ni, (void)rx_priv, (void)iov, (void)niov, (void)mlen, (void)rlen;
	if (msg)
		ulnet__finalize(msg, 0);
	return 0;
}
static const struct ulnet_lnd_ops inl_ops = {
	.lnd_type = ULNET_LND_KFI, .lnd_name = "kfi", .lnd_startup = inl_startup,
	.lnd_shutdown = inl_shutdown, .lnd_send = inl_send, .lnd_recv = inl_recv,
};

struct drive {
	ulnet_node *node;
	bool more_after_one;  /* a budget of 1 left work behind */
	bool done_q_empty;    /* the unbounded run finished everything */
};

/* Runs on the small stack: release the one credit and run the completion phase by hand, with the
 * node lock held throughout so the loop thread cannot take any of the work. */
static void *drive_main(void *arg)
{
	struct drive *d = arg;
	struct ulnet_node *node = d->node;

	struct ulnet_ni *ni = tst_first_ni(node);

	tst_enter(ni);
	ulnet__finalize(held, 0);
	held = NULL;
	d->more_after_one = ulnet__completions_run(ni->loop, 1);
	while (ulnet__completions_run(ni->loop, UINT_MAX))
		;
	d->done_q_empty = ulnet_list_empty(&ni->loop->done.q);
	tst_exit(ni);
	return NULL;
}

static void ten_thousand_behind_one_credit(void **state)
{
	struct ulnet_kv tun[] = { { "peer_credits", "1" }, { "credits", "256" }, { "peer_queue_msgs", "20000" } };
	struct ulnet_ni_conf conf = { .net = "kfi", .nid = "5@kfi", .tunables = tun, .n_tunables = 3 };
	struct ulnet_process_id p6 = { .pid = ULNET_PID_LUSTRE };
	static uint8_t buf[8];
	struct ulnet_md md = { .start = buf, .length = sizeof(buf), .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_peer_info pi;
	struct ulnet_handle h;
	struct ulnet_event ev;
	struct drive d = { 0 };
	pthread_attr_t attr;
	pthread_t t;
	ulnet_node *node;
	ulnet_eq *eq;
	int sends = 0;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_ni_add(node, &conf), 0);
	assert_int_equal(ulnet_eq_create(&eq), 0);
	md.eq = eq;
	assert_int_equal(ulnet_nid_parse("6@kfi", &p6.nid, NULL), 0);
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_RETAIN, &h), 0);
	tst_world_stop(node, NULL);
	hold_next = true;
	tst_world_go(node);
	for (int i = 0; i <= N_QUEUED; i++)
		assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &p6, 1, 0, 0, (uint64_t)i), 0);
	ulnet__node_sync(node); /* the loop posts sends to remote NIDs */
	assert_int_equal(ulnet_peer_info_get(node, 0, &pi), 0);
	assert_int_equal(pi.tx_queued, N_QUEUED); /* all but the held one wait for its credit */

	d.node = node;
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstacksize(&attr, SMALL_STACK), 0);
	assert_int_equal(pthread_create(&t, &attr, drive_main, &d), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	pthread_attr_destroy(&attr);
	assert_true(d.more_after_one);
	assert_true(d.done_q_empty);

	while (sends < N_QUEUED + 1 && ulnet_eq_wait(eq, 5000, &ev) == 1) {
		assert_int_equal(ev.type, ULNET_EVENT_SEND);
		assert_int_equal(ev.status, 0);
		assert_int_equal(ev.hdr_data, (uint64_t)sends); /* FIFO: queue order kept */
		sends++;
	}
	assert_int_equal(sends, N_QUEUED + 1);
	assert_int_equal(ulnet_peer_info_get(node, 0, &pi), 0);
	assert_int_equal(pi.tx_queued, 0);
	assert_int_equal(pi.tx_credits, pi.max_tx_credits);
	assert_int_equal(ulnet_md_unlink(node, h), 0);
	ulnet_node_close(node);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
}

/* A peer's credit queue is bounded: past peer_queue_msgs a send fails with -ENOBUFS (its SEND event
 * carries it), counted in tx_queue_full; what was queued still goes once the credit is back. */
static void peer_queue_bounded(void **state)
{
	struct ulnet_kv tun[] = { { "peer_credits", "1" }, { "peer_queue_msgs", "3" } };
	struct ulnet_ni_conf conf = { .net = "kfi", .nid = "5@kfi", .tunables = tun, .n_tunables = 2 };
	struct ulnet_process_id p6 = { .pid = ULNET_PID_LUSTRE };
	static uint8_t buf[8];
	struct ulnet_md md = { .start = buf, .length = sizeof(buf), .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_stats st;
	struct ulnet_handle h;
	struct ulnet_event ev;
	ulnet_node *node;
	ulnet_eq *eq;
	int ok = 0, refused = 0;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_ni_add(node, &conf), 0);
	assert_int_equal(ulnet_eq_create(&eq), 0);
	md.eq = eq;
	assert_int_equal(ulnet_nid_parse("6@kfi", &p6.nid, NULL), 0);
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_RETAIN, &h), 0);
	tst_world_stop(node, NULL);
	hold_next = true;
	tst_world_go(node);
	for (int i = 0; i < 6; i++) /* 1 holds the credit, 3 queue, 2 are refused */
		assert_int_equal(ulnet_put(node, h, ULNET_NOACK_REQ, &p6, 1, 0, 0, (uint64_t)i), 0);
	ulnet__node_sync(node); /* the loop posts sends to remote NIDs */
	assert_int_equal(ulnet_eq_wait(eq, 5000, &ev), 1);
	assert_int_equal(ev.status, -ENOBUFS);
	assert_int_equal(ev.hdr_data, 4);
	assert_int_equal(ulnet_eq_wait(eq, 5000, &ev), 1);
	assert_int_equal(ev.status, -ENOBUFS);
	assert_int_equal(ev.hdr_data, 5);
	ulnet_stats_get(node, &st);
	assert_int_equal(st.tx_queue_full, 2);
	tst_enter(tst_first_ni(node));
	ulnet__finalize(held, 0);
	held = NULL;
	tst_exit(tst_first_ni(node)); /* completes it, as an LND's loop would */
	while (ok + refused < 6 && ulnet_eq_wait(eq, 5000, &ev) == 1)
		ev.status ? refused++ : ok++;
	assert_int_equal(ok, 4);
	assert_int_equal(refused, 0); /* the two refusals were read above */
	assert_int_equal(ulnet_md_unlink(node, h), 0);
	ulnet_node_close(node);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
}

static char last_err[512];
static void capture(int level, const char *subsys, const char *line)
{
	(void)subsys;
	if (level == 0)
		snprintf(last_err, sizeof(last_err), "%s", line);
}

/* Review fix: the misdirected-message line names the source, the destination and the NI (it used to
 * print the NI's NID in place of the destination). */
static void misdirected_line_names_all_three(void **state)
{
	struct ulnet_ni_conf conf = { .net = "kfi", .nid = "5@kfi" };
	struct ulnet_hdr hdr = { .type = ULNET_MSG_PUT };
	struct ulnet_ni *ni = NULL;
	ulnet_node *node;
	int rc;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_ni_add(node, &conf), 0);
	assert_int_equal(ulnet_nid_parse("6@kfi", &hdr.src_nid, NULL), 0);
	assert_int_equal(ulnet_nid_parse("7@kfi", &hdr.dest_nid, NULL), 0);
	ulnet_log_set(capture, 0);
	ulnet__lock(node);
	for (struct ulnet_list *p = node->nis.next; p != &node->nis; p = p->next)
		if (ulnet_container_of(p, struct ulnet_ni, link) != node->lo_ni)
			ni = ulnet_container_of(p, struct ulnet_ni, link);
	rc = ulnet__parse(ni, &hdr, &hdr.src_nid, NULL);
	ulnet__lock_release(node);
	ulnet_log_set(NULL, 1);
	assert_int_equal(rc, -EPROTO);
	assert_non_null(strstr(last_err, "from 6@kfi for 7@kfi arrived on NI 5@kfi"));
	ulnet_node_close(node);
}

/* ---- timers and the transaction timeout, on an injected clock ---- */

static uint64_t fake_now;
static uint64_t fake_clock(void *arg) { (void)arg; return fake_now; }

static uint64_t fired[200];
static unsigned n_fired;
struct tagged { struct ulnet_timer t; unsigned tag; };
static void record(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now)
{
	(void)node;
	assert_true(t->deadline <= now);
	fired[n_fired++] = t->deadline;
	(void)ulnet_container_of(t, struct tagged, t);
}

/* The heap runs due timers in deadline order, never a cancelled one, and a moved one at its new time. */
static void timer_heap_order(void **state)
{
	struct ulnet_node *node = calloc(1, sizeof(*node));
	struct ulnet_timer_heap *h = &node->loops[0].timers; /* a thread that owns no loop: loop 0's */
	static struct tagged ts[150];
	uint64_t seed = 12345, last = 0;
	unsigned ran;

	(void)state;
	assert_non_null(node);
	for (unsigned i = 0; i < 150; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		ts[i].t.fn = record;
		ts[i].tag = i;
		assert_int_equal(ulnet__timer_arm(node, &ts[i].t, 1000 + (seed >> 40) % 100000), 0);
	}
	for (unsigned i = 0; i < 150; i += 3)
		ulnet__timer_cancel(node, &ts[i].t);
	assert_int_equal(ulnet__timer_arm(node, &ts[1].t, 5), 0); /* moved to the front */
	assert_int_equal(h->n, 100);
	assert_int_equal(ulnet__timers_first(h), 5);
	assert_int_equal(ulnet__timers_run(node, h, 4), 0);
	assert_int_equal(ulnet__timers_run(node, h, 5), 1);
	ran = ulnet__timers_run(node, h, 50000);
	assert_int_equal(ran, n_fired - 1);
	ran = ulnet__timers_run(node, h, UINT64_MAX);
	assert_true(ran > 0);
	assert_int_equal(n_fired, 100);
	for (unsigned i = 0; i < n_fired; i++) {
		assert_true(fired[i] >= last);
		last = fired[i];
	}
	for (unsigned i = 0; i < 150; i++)
		assert_int_equal(ts[i].t.idx, 0);
	free(h->v);
	free(node);
}

static unsigned armed_timers(ulnet_node *node)
{
	unsigned n;

	ulnet__lock(node);
	n = node->timers.n; /* the node's heap: transaction timeouts only */
	ulnet__lock_release(node);
	return n;
}

/* A GET whose REPLY never comes ends, at the transaction timeout on the node's clock and not before,
 * with a REPLY event of status -ETIMEDOUT that unlinks the MD. A GET answered (ping on lo) or never
 * sent (no NI reaches the target) leaves no timer behind. */
static void transaction_timeout(void **state)
{
	struct ulnet_node_opts opts = { .transaction_timeout = 50 };
	struct ulnet_ni_conf conf = { .net = "kfi", .nid = "5@kfi" };
	struct ulnet_process_id p6 = { .pid = ULNET_PID_LUSTRE }, lo = { .pid = ULNET_PID_LUSTRE };
	struct ulnet_process_id far = { .pid = ULNET_PID_LUSTRE };
	static uint8_t buf[64];
	struct ulnet_md md = { .start = buf, .length = sizeof(buf), .threshold = 2 };
	struct ulnet_ping_result pr;
	struct ulnet_stats st;
	struct ulnet_handle h;
	struct ulnet_event ev;
	ulnet_node *node;
	ulnet_eq *eq;
	unsigned base;

	(void)state;
	assert_int_equal(ulnet_node_open(&opts, &node), 0);
	assert_int_equal(ulnet_ni_add(node, &conf), 0);
	assert_int_equal(ulnet_eq_create(&eq), 0);
	md.eq = eq;
	assert_int_equal(ulnet_nid_parse("6@kfi", &p6.nid, NULL), 0);
	assert_int_equal(ulnet_nid_parse("0@lo", &lo.nid, NULL), 0);
	assert_int_equal(ulnet_nid_parse("6@kfi1", &far.nid, NULL), 0);
	base = armed_timers(node); /* the LND tick */

	assert_int_equal(ulnet_ping(node, &lo, 2000, &pr), 0);
	assert_int_equal(armed_timers(node), base);
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_UNLINK, &h), 0);
	/* no NI reaches it: exactly one event, the SEND with the error */
	assert_int_equal(ulnet_get(node, h, &far, 0, 0, 0), 0);
	assert_int_equal(ulnet_eq_wait(eq, 5000, &ev), 1);
	assert_int_equal(ev.type, ULNET_EVENT_SEND);
	assert_int_equal(ev.status, -EHOSTUNREACH);
	assert_false(ev.unlinked);
	assert_int_equal(armed_timers(node), base);
	assert_int_equal(ulnet_md_unlink(node, h), 0);
	assert_int_equal(ulnet_eq_wait(eq, 5000, &ev), 1);
	assert_int_equal(ev.type, ULNET_EVENT_UNLINK);
	assert_int_equal(ulnet_eq_wait(eq, 0, &ev), 0);
	assert_int_equal(ulnet_md_bind(node, &md, ULNET_UNLINK, &h), 0);

	tst_world_stop(node, NULL);
	fake_now = ulnet__now_ns();
	ulnet__node_set_clock(node, fake_clock, NULL);
	hold_next = true;
	tst_world_go(node);
	assert_int_equal(ulnet_get(node, h, &p6, 0, 0x77, 0), 0);
	ulnet__node_sync(node); /* the loop posts sends to remote NIDs */
	assert_int_equal(armed_timers(node), base + 1);
	tst_enter(tst_first_ni(node));
	ulnet__finalize(held, 0); /* the GET is on the wire */
	held = NULL;
	tst_exit(tst_first_ni(node)); /* completes it, as an LND's loop would */
	assert_int_equal(ulnet_eq_wait(eq, 5000, &ev), 1);
	assert_int_equal(ev.type, ULNET_EVENT_SEND);
	assert_int_equal(ev.status, 0);
	assert_false(ev.unlinked);

	tst_world_stop(node, NULL);
	fake_now += 49ull * 1000000000ull;
	tst_world_go(node);
	ulnet__node_timers_run(node, fake_now);
	assert_int_equal(ulnet_eq_wait(eq, 0, &ev), 0); /* 49 s: still waiting */

	tst_world_stop(node, NULL);
	fake_now += 2ull * 1000000000ull;
	tst_world_go(node);
	ulnet__node_timers_run(node, fake_now);
	assert_int_equal(ulnet_eq_wait(eq, 5000, &ev), 1);
	assert_int_equal(ev.type, ULNET_EVENT_REPLY);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_int_equal(ev.match_bits, 0x77);
	assert_true(ev.unlinked);
	assert_int_equal(ulnet_md_unlink(node, h), -ENOENT); /* gone with the timeout */
	assert_int_equal(armed_timers(node), base);
	ulnet_stats_get(node, &st);
	assert_int_equal(st.tx_timeouts, 1);
	tst_world_stop(node, NULL);
	ulnet__node_set_clock(node, NULL, NULL);
	tst_world_go(node);
	ulnet_node_close(node);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
}

static struct ulnet_ni *kfi_ni(ulnet_node *node)
{
	for (struct ulnet_list *p = node->nis.next; p != &node->nis; p = p->next)
		if (ulnet_container_of(p, struct ulnet_ni, link) != node->lo_ni)
			return ulnet_container_of(p, struct ulnet_ni, link);
	return NULL;
}

/* Issue 13 "spoofed sources": ping GETs from 100 spoofed source NIDs each make a core peer (for the
 * REPLY); the table never holds more than max_peers (the longest idle makes room), and once idle for
 * ULNET_PEER_IDLE_S on the node's clock every one is gone. */
static void spoofed_sources_leave_no_peer(void **state)
{
	struct ulnet_node_opts opts = { .max_peers = 4 };
	struct ulnet_ni_conf conf = { .net = "kfi", .nid = "5@kfi" };
	struct ulnet_hdr hdr = { .type = ULNET_MSG_GET, .dest_pid = ULNET_PID_LUSTRE, .src_pid = ULNET_PID_LUSTRE };
	struct ulnet_stats st;
	struct ulnet_ni *ni;
	ulnet_node *node;
	unsigned most = 0;

	(void)state;
	assert_int_equal(ulnet_node_open(&opts, &node), 0);
	assert_int_equal(ulnet_ni_add(node, &conf), 0);
	assert_int_equal(ulnet_nid_parse("5@kfi", &hdr.dest_nid, NULL), 0);
	hdr.msg.get.ptl_index = ULNET_RESERVED_PORTAL;
	hdr.msg.get.match_bits = ULNET_PING_MATCHBITS;
	hdr.msg.get.sink_length = 4096;
	tst_world_stop(node, NULL);
	fake_now = ulnet__now_ns();
	ulnet__node_set_clock(node, fake_clock, NULL);
	ni = kfi_ni(node);
	tst_world_go(node);
	tst_enter(ni);
	for (unsigned i = 0; i < 100; i++) {
		char s[32];

		snprintf(s, sizeof(s), "%u@kfi", 100 + i);
		assert_int_equal(ulnet_nid_parse(s, &hdr.src_nid, NULL), 0);
		assert_int_equal(ulnet__parse(ni, &hdr, &hdr.src_nid, NULL), 0);
		while (ulnet__completions_run(ni->loop, UINT_MAX))
			;
		most = ni->loop->peers.n > most ? ni->loop->peers.n : most;
		fake_now += 1000000; /* 1 ms apart (the loops read it as their owners: ni's is ours) */
	}
	tst_exit(ni);
	assert_int_equal(most, 4);
	tst_world_stop(node, ni->loop);
	fake_now += (ULNET_PEER_IDLE_S - 1) * 1000000000ull;
	ulnet__timers_run(node, &ni->loop->timers, fake_now);
	assert_int_equal(ni->loop->peers.n, 4); /* the last four: not idle long enough yet */
	fake_now += 2 * 1000000000ull;
	ulnet__timers_run(node, &ni->loop->timers, fake_now);
	assert_int_equal(ni->loop->peers.n, 0);
	ulnet__node_set_clock(node, NULL, NULL);
	tst_world_go(node);
	ulnet_stats_get(node, &st);
	assert_int_equal(st.send_count, 100); /* every spoofed GET was answered */
	ulnet_node_close(node);
}

static int setup(void **state)
{
	(void)state;
	ulnet__lnd_find("lo"); /* builtins first */
	return ulnet__lnd_register(&inl_ops) < 0 ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ten_thousand_behind_one_credit),
		cmocka_unit_test(peer_queue_bounded),
		cmocka_unit_test(misdirected_line_names_all_three),
		cmocka_unit_test(timer_heap_order),
		cmocka_unit_test(transaction_timeout),
		cmocka_unit_test(spoofed_sources_leave_no_peer),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
