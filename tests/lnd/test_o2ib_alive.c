/* SPDX-License-Identifier: MIT */
/* o2ib keepalive, dead peers and the peer table (lnet-wire.md §4.4), against raw fabric peers
 * (tests/common/o2ib_raw_peer.h) on the shm provider:
 *  - an idle connection gets a NOOP every `keepalive` seconds (not every tick), addressed right;
 *  - a peer whose process dies, and a peer that stops answering (a PUT_REQ with no PUT_ACK), are
 *    reported down through the core (ulnet__peer_down, seen through the linker's --wrap) within the
 *    `timeout`, and the waiting PUT fails;
 *  - a stream of CONNREQs from new NIDs cannot grow the peer table past `max_peers`: idle peers make
 *    room, connected ones are not dropped (the newcomer is rejected NO_RESOURCES with one line), and
 *    idle peers are forgotten after `timeout`.
 * Addresses: 127.136.0.{1,9}, 127.136.1.N (NIDs only), 127.136.2.N (one raw device each). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "log_count.h"
#include "o2ib_raw_peer.h"

#define NODE_IP "127.136.0.1"
#define NODE_NID NODE_IP "@o2ib"
#define RAW_IP "127.136.0.9"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t down_nid;   /* the last peer reported down, and with what */
static int down_status, downs;

struct ulnet_ni;
void __real_ulnet__peer_down(struct ulnet_ni *ni, const struct ulnet_nid *nid, int status);
void __wrap_ulnet__peer_down(struct ulnet_ni *ni, const struct ulnet_nid *nid, int status);
void __wrap_ulnet__peer_down(struct ulnet_ni *ni, const struct ulnet_nid *nid, int status)
{
	pthread_mutex_lock(&lock);
	down_nid = ulnet_nid_to_nid4(nid);
	down_status = status;
	downs++;
	pthread_mutex_unlock(&lock);
	__real_ulnet__peer_down(ni, nid, status);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static ulnet_node *node_up(const char *keepalive, const char *timeout, const char *max_peers)
{
	const struct ulnet_kv lt[] = { { "provider", "shm" }, { "timeout", timeout }, { "keepalive", keepalive },
				       { "max_peers", max_peers } };
	struct ulnet_ni_conf conf = { .net = "o2ib", .nid = NODE_NID, .lnd_tunables = lt, .n_lnd_tunables = 4 };
	struct ulnet_node_opts opts = { .page_size = 4096 };
	ulnet_node *n;

	log_count_install("O2IB", ULNET_LOG_ERR);
	ulnet_log_set_rate(0, 0);
	pthread_mutex_lock(&lock);
	downs = 0; /* (a closed node's last words are not this test's) */
	down_nid = 0;
	pthread_mutex_unlock(&lock);
	assert_int_equal(ulnet_node_open(&opts, &n), 0);
	assert_int_equal(ulnet_ni_add(n, &conf), 0);
	return n;
}

static bool remembered(ulnet_node *node, uint64_t nid4)
{
	struct ulnet_peer_limits lim;
	struct ulnet_nid nid;

	ulnet_nid_from_nid4(nid4, &nid);
	return ulnet_peer_limits_get(node, &nid, &lim) == 0;
}

/* Wait up to 10 s for ulnet__peer_down(@nid4); returns its status. */
static int wait_down(uint64_t nid4, struct raw_peer *pump)
{
	for (int i = 0; i < 1000; i++) {
		int st = 0;

		pthread_mutex_lock(&lock);
		if (downs && down_nid == nid4)
			st = down_status;
		pthread_mutex_unlock(&lock);
		if (st)
			return st;
		if (pump && pump->dev)
			raw_pump(pump, 10);
		else
			usleep(10000);
	}
	fail_msg("peer %#llx not reported down within 10 s", (unsigned long long)nid4);
	return 0;
}

static struct raw_peer rp;

/* ---- keepalive ---- */

static void test_keepalive(void **state)
{
	ulnet_node *a = node_up("1", "5", "4096");
	struct o2ib_msg m;
	double t[3];

	(void)state;
	raw_open(&rp, RAW_IP, false);
	raw_connect_ok(&rp, NODE_IP, raw_nid4(NODE_NID), 8, 257);
	t[0] = now_s();
	for (int i = 1; i < 3; i++) {
		assert_true(raw_msg(&rp, 10000, &m));
		t[i] = now_s();
		assert_int_equal(m.type, O2IB_MSG_NOOP);
		assert_int_equal(m.credits, 0);
		assert_true(m.dstnid == rp.nid && m.dststamp == rp.stamp && m.srcstamp == rp.node_stamp);
		print_message("keepalive NOOP %d after %.2f s of silence\n", i, t[i] - t[i - 1]);
		if (i == 1) { /* the node takes our own keepalive quietly */
			raw_msg_init(&rp, &m, O2IB_MSG_NOOP);
			raw_send(&rp, &m);
		}
	}
	/* keepalive 1 s: one NOOP per second of silence, not one per 100 ms tick */
	assert_true(t[2] - t[1] >= 0.5);
	assert_int_equal(log_count_errors(), 0);
	raw_hangup(&rp);
	raw_close(&rp);
	ulnet_node_close(a);
}

/* ---- dead peers ---- */

/* The raw peer lives in a child forked before the node starts; it connects when told and then
 * sleeps until killed. */
static void test_peer_process_dies(void **state)
{
	int go[2], up[2];
	char c = 0;
	pid_t child;
	ulnet_node *a;
	double t0;
	int st;

	(void)state;
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(up), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failing parent must not leave it behind */
		if (getppid() == 1 || read(go[0], &c, 1) != 1)
			_exit(1);
		raw_open(&rp, RAW_IP, false);
		raw_connect_ok(&rp, NODE_IP, raw_nid4(NODE_NID), 8, 257);
		if (write(up[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			raw_pump(&rp, 1000);
	}
	a = node_up("100", "5", "4096");
	assert_int_equal(write(go[1], &c, 1), 1);
	assert_int_equal(read(up[0], &c, 1), 1);
	for (int i = 0; i < 500 && !remembered(a, raw_nid4(RAW_IP "@o2ib")); i++)
		usleep(10000); /* the node's ESTABLISHED may come after the child's */
	if (!remembered(a, raw_nid4(RAW_IP "@o2ib"))) {
		kill(child, SIGKILL);
		fail_msg("the node never saw the child's connection up");
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	t0 = now_s();
	st = wait_down(raw_nid4(RAW_IP "@o2ib"), NULL);
	print_message("peer process killed: reported down (%s) after %.2f s\n", strerror(-st), now_s() - t0);
	assert_true(st < 0);
	assert_true(now_s() - t0 < 5.0); /* within the timeout */
	ulnet_node_close(a);
	close(go[0]);
	close(go[1]);
	close(up[0]);
	close(up[1]);
}

/* Connected but silent: a PUT_REQ never answered closes the connection after `timeout` (2 s). */
static void test_peer_stops_answering(void **state)
{
	static char big[8192];
	ulnet_node *a = node_up("100", "2", "4096");
	struct ulnet_md md = { .start = big, .length = sizeof(big), .threshold = 1 };
	struct ulnet_process_id to = { .pid = ULNET_PID_LUSTRE };
	struct fab_cm_event ev;
	struct ulnet_event uev;
	struct ulnet_handle h;
	struct o2ib_msg m;
	ulnet_eq *eq;
	double t0;
	int st;

	(void)state;
	assert_int_equal(ulnet_eq_create(&eq), 0);
	md.eq = eq;
	raw_open(&rp, RAW_IP, false);
	raw_connect_ok(&rp, NODE_IP, raw_nid4(NODE_NID), 8, 257);
	ulnet_nid_from_nid4(rp.nid, &to.nid);
	assert_int_equal(ulnet_md_bind(a, &md, ULNET_UNLINK, &h), 0);
	assert_int_equal(ulnet_put(a, h, ULNET_NOACK_REQ, &to, 9, 0, 0, 0), 0);
	assert_true(raw_msg(&rp, 10000, &m));
	assert_int_equal(m.type, O2IB_MSG_PUT_REQ); /* and no PUT_ACK ever comes */
	t0 = now_s();
	st = wait_down(rp.nid, &rp);
	print_message("PUT_REQ unanswered: reported down (%s) after %.2f s\n", strerror(-st), now_s() - t0);
	assert_int_equal(st, -ETIMEDOUT);
	raw_expect_event(&rp, FAB_CM_DISCONNECTED, &ev);
	assert_int_equal(ulnet_eq_wait(eq, 10000, &uev), 1);
	assert_int_equal(uev.type, ULNET_EVENT_SEND);
	assert_true(uev.status < 0);
	raw_close(&rp);
	ulnet_node_close(a);
	ulnet_eq_destroy(eq);
}

/* ---- the peer table ---- */

#define MAX_PEERS 8
static struct raw_peer held[MAX_PEERS + 1];

/* The node has the connection up (its ESTABLISHED may come after the raw peer's). */
static void wait_remembered(ulnet_node *a, struct raw_peer *r)
{
	for (int i = 0; i < 500 && !remembered(a, r->nid); i++)
		raw_pump(r, 10);
	assert_true(remembered(a, r->nid));
}

static unsigned count_remembered(ulnet_node *a, unsigned n)
{
	unsigned k = 0;

	for (unsigned i = 1; i <= n; i++) {
		char nid[32];

		snprintf(nid, sizeof(nid), "127.136.1.%u@o2ib", i);
		k += remembered(a, raw_nid4(nid));
	}
	return k;
}

static void test_peer_table_bounded(void **state)
{
	ulnet_node *a = node_up("100", "2", "8");
	uint64_t a_nid = raw_nid4(NODE_NID);
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	struct fab_cm_event ev;
	struct o2ib_rej rej;
	struct o2ib_wire_err err;
	unsigned k;
	int n, before;

	(void)state;
	/* 20 NIDs connect and leave, one after the other: the idle ones make room */
	raw_open(&rp, RAW_IP, false);
	for (unsigned i = 1; i <= 20; i++) {
		char nid[32];

		snprintf(nid, sizeof(nid), "127.136.1.%u@o2ib", i);
		rp.nid = raw_nid4(nid);
		raw_connect_ok(&rp, NODE_IP, a_nid, 8, 257);
		wait_remembered(a, &rp);
		raw_hangup(&rp);
		assert_true(count_remembered(a, 20) <= MAX_PEERS);
	}
	k = count_remembered(a, 20);
	print_message("20 NIDs connected in turn: %u remembered (max_peers %d)\n", k, MAX_PEERS);
	assert_true(k >= 1 && k <= MAX_PEERS);
	/* idle peers are forgotten after timeout (2 s) */
	for (int i = 0; i < 1000 && count_remembered(a, 20); i++)
		raw_pump(&rp, 10);
	assert_int_equal(count_remembered(a, 20), 0);
	raw_close(&rp);

	/* MAX_PEERS connected peers are all kept: the next newcomer is refused */
	for (unsigned i = 0; i <= MAX_PEERS; i++) {
		char ip[32];

		snprintf(ip, sizeof(ip), "127.136.2.%u", i + 1);
		raw_open(&held[i], ip, false);
	}
	for (unsigned i = 0; i < MAX_PEERS; i++) {
		raw_connect_ok(&held[i], NODE_IP, a_nid, 8, 257);
		wait_remembered(a, &held[i]);
	}
	before = log_count_errors();
	n = raw_connreq(&held[MAX_PEERS], a_nid, O2IB_MSG_VERSION_2, 8, 257, pd);
	raw_connect(&held[MAX_PEERS], NODE_IP, pd, (size_t)n, &ev);
	assert_int_equal(ev.type, FAB_CM_REJECTED);
	assert_int_equal(o2ib_rej_unpack(ev.private_data, ev.private_data_len, &rej, &err), 0);
	print_message("newcomer beyond %d connected peers: rejected %s\n", MAX_PEERS, o2ib_rej_why_name(rej.why));
	assert_int_equal(rej.why, O2IB_REJECT_NO_RESOURCES);
	assert_int_equal(log_count_errors() - before, 1);
	held[MAX_PEERS].f->destroy_id(held[MAX_PEERS].id);
	held[MAX_PEERS].id = NULL;
	for (unsigned i = 0; i < MAX_PEERS; i++) /* still connected: each still remembered */
		assert_true(remembered(a, held[i].nid));
	/* one leaves: once the node has seen it go, the newcomer gets its place */
	raw_hangup(&held[0]);
	for (int i = 0;; i++) {
		assert_true(i < 100);
		n = raw_connreq(&held[MAX_PEERS], a_nid, O2IB_MSG_VERSION_2, 8, 257, pd);
		raw_connect(&held[MAX_PEERS], NODE_IP, pd, (size_t)n, &ev);
		if (ev.type == FAB_CM_ESTABLISHED)
			break;
		held[MAX_PEERS].f->destroy_id(held[MAX_PEERS].id);
		held[MAX_PEERS].id = NULL;
		raw_pump(&held[MAX_PEERS], 50);
	}
	for (unsigned i = 0; i <= MAX_PEERS; i++) {
		raw_hangup(&held[i]);
		raw_close(&held[i]);
	}
	ulnet_node_close(a);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keepalive),
		cmocka_unit_test(test_peer_process_dies),
		cmocka_unit_test(test_peer_stops_answering),
		cmocka_unit_test(test_peer_table_bounded),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
