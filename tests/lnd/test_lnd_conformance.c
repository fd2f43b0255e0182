/* SPDX-License-Identifier: MIT */
/* The LND conformance suite: the same cases for every LND, named on the command line ("lo", "tcp",
 * "o2ib"; meson runs it once per LND built). Two nodes in one process (lo: one node talking to itself).
 * Start/stop twice; Put and Get of 0, 1, 4095, 4096, 4097, 65536 and 1 MiB with offsets, contiguous,
 * iovec and kiov MDs, node pages of 4 KiB and 64 KiB; a GET whose reply is truncated; an MD unlinked
 * while its transfer is in flight; a peer that vanishes mid-message; a corrupt header on a connection
 * of its own that closes that connection (one error line) while the node keeps serving its real peer;
 * 10,000 messages queued behind one credit from a thread with a 256 KiB stack (the node's threads get
 * the same stack); peer limits after traffic; no heap allocation per message once warm.
 * What differs per LND sits in kinds[]: addresses, the log subsystem, and how to corrupt one
 * connection (tcp: a raw socket; o2ib: the raw fabric peer of tests/common/o2ib_raw_peer.h). Cases
 * that need a wire or a second node are skipped on lo with cmocka's skip(), and say why.
 * tcp addresses: 127.240.P.1 and 127.240.P.2, port 988, the raw socket from 127.240.0.9:1021 (run as
 * root: without it the program exits 77, skipped); o2ib (shm provider): 127.251.P.{1,2}, port 987,
 * the raw peer 127.251.P.9. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "config.h"
#include "ulnet/ulnet.h"
#if defined(ULNET_HAVE_LND_O2IB) && defined(ULNET_HAVE_FABRIC_SHM)
#define CONF_O2IB_RAW 1
#include "log_count.h"
#include "o2ib_raw_peer.h"
#endif

#include "md_buf.h"
#include "xfer.h"

struct pair;

/* Open a connection of its own to node b of @p, send a corrupt header on it, and return once b has
 * closed that connection. */
typedef void (*corrupt_one_conn_fn)(const struct pair *p);
static void tcp_corrupt_one_conn(const struct pair *p);
#ifdef CONF_O2IB_RAW
static void o2ib_corrupt_one_conn(const struct pair *p);
#else
#define o2ib_corrupt_one_conn NULL
#endif

struct lnd_kind {
	const char *name;
	bool two_nodes;     /* a second node reachable over a wire */
	unsigned octet;     /* two_nodes: addresses 127.<octet>.<block>.{1,2} */
	bool needs_root;    /* binds port 988 and privileged source ports */
	const char *subsys; /* the LND's log subsystem: the corrupt connection costs one error line there */
	corrupt_one_conn_fn corrupt_one_conn; /* NULL: the corrupt-header case is skipped, for @no_corrupt */
	const char *no_corrupt;
};
static const struct lnd_kind kinds[] = {
	{ "lo", false, 0, false, "LO", NULL, "lo has no wire to corrupt" },
	{ "tcp", true, 240, true, "TCP", tcp_corrupt_one_conn, NULL },
	{ "o2ib", true, 251, false, "O2IB", o2ib_corrupt_one_conn, "built without the shm fabric provider" },
};
static const struct lnd_kind *K;
static unsigned next_block = 1; /* 127.<octet>.<block>.{1,2} */

static ulnet_node *node_start(uint32_t page, const char *nid, const struct ulnet_kv *tun, size_t ntun)
{
	struct ulnet_node_opts opts = { .page_size = page };
	struct ulnet_ni_conf conf = { .net = K->name, .nid = nid, .tunables = tun, .n_tunables = ntun };
	ulnet_node *n;

	assert_int_equal(ulnet_node_open(&opts, &n), 0);
	if (K->two_nodes)
		assert_int_equal(ulnet_ni_add(n, &conf), 0);
	return n;
}

/* A fresh pair on its own address block. @tun applies to node a. */
static struct pair *pair_new(uint32_t page, const struct ulnet_kv *tun, size_t ntun)
{
	struct pair *p = calloc(1, sizeof(*p));
	char na[40], nb[40];

	assert_non_null(p);
	p->page = page;
	if (!K->two_nodes) {
		p->a = p->b = node_start(page, NULL, NULL, 0);
		assert_int_equal(ulnet_nid_parse("0@lo", &p->ida.nid, NULL), 0);
		p->idb.nid = p->ida.nid;
	} else {
		unsigned blk = next_block++;

		snprintf(na, sizeof(na), "127.%u.%u.1@%s", K->octet, blk, K->name);
		snprintf(nb, sizeof(nb), "127.%u.%u.2@%s", K->octet, blk, K->name);
		p->a = node_start(page, na, tun, ntun);
		p->b = node_start(page, nb, NULL, 0);
		assert_int_equal(ulnet_nid_parse(na, &p->ida.nid, NULL), 0);
		assert_int_equal(ulnet_nid_parse(nb, &p->idb.nid, NULL), 0);
	}
	p->ida.pid = p->idb.pid = ULNET_PID_LUSTRE;
	nstash = 0;
	assert_int_equal(ulnet_eq_create(&p->eq), 0);
	return p;
}

static void pair_free(struct pair *p)
{
	struct ulnet_event ev;

	ulnet_node_close(p->a);
	if (p->b != p->a)
		ulnet_node_close(p->b);
	while (ulnet_eq_wait(p->eq, 0, &ev) == 1)
		;
	nstash = 0;
	assert_int_equal(ulnet_eq_destroy(p->eq), 0);
	free(p);
}

static struct pair *cur;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- start/stop ---- */

static void test_start_stop_twice(void **state)
{
	const struct xcase put = { "put", 4097, FORM_CONTIG, FORM_CONTIG, 1, 2, 3, false };

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct pair *p = pair_new(4096, NULL, 0);

		xfer(p, &put, 3, (uint64_t)i);
		pair_free(p);
	}
}

/* ---- the Put/Get matrix ---- */

static void run_xcase(void **state)
{
	const struct xcase *c = *state;

	xfer(cur, c, 5, 0x1000 + c->size);
}

static int group_setup_4k(void **state)
{
	(void)state;
	cur = pair_new(4096, NULL, 0);
	return 0;
}

static int group_setup_64k(void **state)
{
	(void)state;
	cur = pair_new(65536, NULL, 0);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	pair_free(cur);
	cur = NULL;
	return 0;
}

#define MAXCASES 100
static struct xcase cases[MAXCASES];
static char names[MAXCASES][96];

static size_t build_matrix(struct CMUnitTest *tests, uint32_t page)
{
	static const uint32_t sizes[] = { 0, 1, 4095, 4096, 4097, 65536, 1u << 20 };
	static const char *form_name[] = { "contig", "iovec", "kiov" };
	static size_t used;
	size_t n = 0;

	for (int get = 0; get <= 1; get++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			for (int f = 0; f < 3; f++) {
				struct xcase *c = &cases[used];

				c->size = sizes[s];
				c->src_form = (enum md_form)f;
				c->dst_form = (enum md_form)((f + 2 - get) % 3);
				c->src_off = (uint32_t)(s * 13 + 3);
				c->dst_off = (uint32_t)(4099 * (f + 1)) % page;
				c->remote_off = c->size == (1u << 20) ? 0 : 29 + (uint32_t)s;
				c->get = get;
				snprintf(names[used], sizeof(names[used]), "%s %s %u page %u %s->%s off %u/%u remote %u",
					 K->name, get ? "GET" : "PUT", c->size, page, form_name[c->src_form],
					 form_name[c->dst_form], c->src_off, c->dst_off, c->remote_off);
				tests[n++] = (struct CMUnitTest){ .name = names[used], .test_func = run_xcase,
								  .initial_state = c };
				used++;
			}
	return n;
}

/* ---- edge cases ---- */

/* The target MD holds 1000 bytes (TRUNCATE) and the GET asks for 4096: REPLY and GET say 1000. */
static void test_get_truncated(void **state)
{
	struct pair *p = pair_new(4096, NULL, 0);
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	static uint8_t src[1000], sink[4096];
	struct ulnet_md tmd = { .start = src, .length = sizeof(src), .threshold = 1,
				.options = ULNET_MD_OP_GET | ULNET_MD_TRUNCATE };
	struct ulnet_md imd = { .start = sink, .length = sizeof(sink), .threshold = 2 };
	struct ulnet_handle me, th, ih;
	struct ulnet_event ev;

	(void)state;
	pattern(src, sizeof(src), 77);
	memset(sink, 0xee, sizeof(sink));
	tmd.eq = imd.eq = p->eq;
	assert_int_equal(ulnet_me_attach(p->b, 11, &any, 0x77, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(p->b, me, &tmd, ULNET_UNLINK, &th), 0);
	assert_int_equal(ulnet_md_bind(p->a, &imd, ULNET_UNLINK, &ih), 0);
	assert_int_equal(ulnet_get(p->a, ih, &p->idb, 11, 0x77, 0), 0);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_REPLY, &ev), 0);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.mlength, 1000);
	assert_memory_equal(sink, src, 1000);
	assert_int_equal(sink[1000], 0xee);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_GET, &ev), 0);
	assert_int_equal(ev.mlength, 1000);
	assert_int_equal(ev.rlength, 4096);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_SEND, &ev), 0);
	pair_free(p);
}

/* The initiator unlinks its MD right after a 1 MiB Put: the transfer completes, its memory stays
 * borrowed until the last event, and that event says the MD is gone. */
static void test_unlink_in_flight(void **state)
{
	struct pair *p = pair_new(4096, NULL, 0);
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	size_t len = 1u << 20;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	struct ulnet_md tmd = { .start = dst, .length = (uint32_t)len, .threshold = 1, .options = ULNET_MD_OP_PUT };
	struct ulnet_md imd = { .start = src, .length = (uint32_t)len, .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_handle me, th, ih;
	struct ulnet_event ev;
	int rc;

	(void)state;
	pattern(src, len, 5);
	tmd.eq = imd.eq = p->eq;
	assert_int_equal(ulnet_me_attach(p->b, 12, &any, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(p->b, me, &tmd, ULNET_UNLINK, &th), 0);
	assert_int_equal(ulnet_md_bind(p->a, &imd, ULNET_RETAIN, &ih), 0);
	assert_int_equal(ulnet_put(p->a, ih, ULNET_NOACK_REQ, &p->idb, 12, 1, 0, 0), 0);
	rc = ulnet_md_unlink(p->a, ih);
	assert_int_equal(rc, 0); /* RETAIN, infinite threshold: still there until unlinked */
	/* the unlink shows once: on the SEND if the transfer was still in flight, else as UNLINK (lo
	 * completes the Put before ulnet_put returns) */
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_SEND, &ev), 0);
	assert_int_equal(ev.status, 0);
	if (!ev.unlinked) {
		assert_int_equal(wait_for(p->eq, ULNET_EVENT_UNLINK, &ev), 0);
		assert_true(ev.unlinked);
	}
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_PUT, &ev), 0);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.mlength, len);
	assert_memory_equal(dst, src, len);
	/* the handle is stale now */
	assert_int_equal(ulnet_put(p->a, ih, ULNET_NOACK_REQ, &p->idb, 12, 1, 0, 0), -ENOENT);
	pair_free(p);
	free(src);
	free(dst);
}

/* b goes away while a 1 MiB Put and a Get to it are in flight: a's events come (with whatever
 * status), nothing hangs, and a keeps serving a new b. */
static void test_peer_vanishes(void **state)
{
	struct pair *p;
	size_t len = 1u << 20;
	uint8_t *src, *sink;
	struct ulnet_md imd = { .length = (uint32_t)len, .threshold = 1 };
	struct ulnet_md gmd = { .length = (uint32_t)len, .threshold = 2 };
	struct ulnet_handle ih, gh;
	struct ulnet_event ev;
	char nb[40];
	const struct xcase put = { "put", 70000, FORM_IOVEC, FORM_KIOV, 1, 2, 3, false };

	(void)state;
	if (!K->two_nodes) {
		print_message("skipped: %s has no peer to lose\n", K->name);
		skip();
	}
	p = pair_new(4096, NULL, 0);
	src = malloc(len);
	sink = malloc(len);
	pattern(src, len, 1);
	imd.start = src;
	gmd.start = sink;
	imd.eq = gmd.eq = p->eq;
	assert_int_equal(ulnet_md_bind(p->a, &imd, ULNET_UNLINK, &ih), 0);
	assert_int_equal(ulnet_md_bind(p->a, &gmd, ULNET_UNLINK, &gh), 0);
	/* nothing matches on b: b drops the payload, but the bytes are on the wire when b goes */
	assert_int_equal(ulnet_put(p->a, ih, ULNET_NOACK_REQ, &p->idb, 13, 1, 0, 0), 0);
	assert_int_equal(ulnet_get(p->a, gh, &p->idb, 13, 2, 0), 0);
	ulnet_node_close(p->b);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_SEND, &ev), 0);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_SEND, &ev), 0);
	/* the GET's REPLY never comes; failing it needs the core's transaction timeout (issue 7, core) */
	p->b = node_start(4096, ulnet_nid_format(&p->idb.nid, nb, sizeof(nb)), NULL, 0);
	/* a's conns to the old b die as a notices (reset, new incarnation), and while its reconnect backoff
	 * runs (min_reconnectms) a's sends fail at once: poll with pings until two in a row succeed */
	{
		struct ulnet_ping_result r;
		struct timespec pause = { 0, 20 * 1000 * 1000 };
		uint64_t deadline = now_ms() + 60000;
		int ok = 0, last = 0;

		while (ok < 2 && now_ms() < deadline) {
			last = ulnet_ping(p->a, &p->idb, 5000, &r);
			ok = last == 0 ? ok + 1 : 0;
			if (last)
				nanosleep(&pause, NULL);
		}
		if (ok < 2)
			print_message("ping after the restart: %s\n", ulnet_strerror(last));
		assert_int_equal(ok, 2);
	}
	xfer(p, &put, 14, 3);
	pair_free(p);
	free(src);
	free(sink);
}

/* b's address as dotted quad, with the last octet @last if non-zero. */
static void b_ip(const struct pair *p, unsigned last, char *ip, size_t len)
{
	uint32_t a = p->idb.nid.addr[0];

	if (last)
		a = (a & ~255u) | last;
	snprintf(ip, len, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

/* tcp: a socket from a privileged source port (so the acceptor reads it: accept=secure) to b's port
 * 988, sending 64 bytes whose acceptor magic is wrong; b closes it (perhaps after an answer). */
static void tcp_corrupt_one_conn(const struct pair *p)
{
	static const uint8_t junk[64] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4 };
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(988) };
	struct sockaddr_in from = { .sin_family = AF_INET, .sin_port = htons(1021) };
	struct timeval hang = { .tv_sec = 30 }; /* only against a hang: b closes at once */
	char ip[INET_ADDRSTRLEN];
	uint8_t buf[256];
	ssize_t n;
	int fd, one = 1;

	b_ip(p, 0, ip, sizeof(ip));
	assert_int_equal(inet_pton(AF_INET, ip, &to.sin_addr), 1);
	assert_int_equal(inet_pton(AF_INET, "127.240.0.9", &from.sin_addr), 1);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &hang, sizeof(hang));
	assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0 && errno != ECONNRESET)
		fail_msg("the node did not close the corrupt connection: %s", strerror(errno));
	close(fd);
}

#ifdef CONF_O2IB_RAW
/* o2ib: a raw fabric peer (127.251.P.9) connects to b with a valid CONNREQ, then sends a NOOP whose
 * header names another node (dstnid); b disconnects it. */
static void o2ib_corrupt_one_conn(const struct pair *p)
{
	struct raw_peer *rp = calloc(1, sizeof(*rp));
	char ip[INET_ADDRSTRLEN], raw_ip[INET_ADDRSTRLEN], other[64];
	uint64_t b_nid = ulnet_nid_to_nid4(&p->idb.nid);
	struct fab_cm_event ev;
	struct o2ib_msg m;

	assert_non_null(rp);
	b_ip(p, 0, ip, sizeof(ip));
	b_ip(p, 9, raw_ip, sizeof(raw_ip));
	b_ip(p, 77, other, sizeof(other));
	strcat(other, "@o2ib");
	raw_open(rp, raw_ip, false);
	raw_connect_ok(rp, ip, b_nid, 8, 257);
	raw_msg_init(rp, &m, O2IB_MSG_NOOP);
	m.dstnid = raw_nid4(other);
	raw_send(rp, &m);
	raw_expect_event(rp, FAB_CM_DISCONNECTED, &ev);
	raw_close(rp);
	free(rp);
}
#endif

/* A connection of its own sends a corrupt header: the node closes that connection with one error line
 * (nothing else breaks: a second line would be out by the round trip after it), and keeps serving its
 * real peer on the pair's connections. */
static void test_corrupt_header(void **state)
{
	struct pair *p;
	const struct xcase put = { "put", 5000, FORM_CONTIG, FORM_CONTIG, 0, 0, 0, false };
	uint64_t deadline;
	int before;

	(void)state;
	if (!K->corrupt_one_conn) {
		print_message("skipped: %s\n", K->no_corrupt);
		skip();
	}
	p = pair_new(4096, NULL, 0);
	xfer(p, &put, 15, 1);
	before = log_count_errors();
	K->corrupt_one_conn(p);
	/* the line may trail the close: wait for it (bounded only against a hang) */
	deadline = now_ms() + 30000;
	while (log_count_errors() == before && now_ms() < deadline) {
		struct timespec pause = { 0, 10 * 1000 * 1000 };

		nanosleep(&pause, NULL);
	}
	ping_ok(p->a, &p->idb);
	xfer(p, &put, 15, 2);
	if (log_count_errors() - before != 1)
		fail_msg("%s: %d error lines for one corrupt connection, want 1", K->name, log_count_errors() - before);
	pair_free(p);
}

/* After traffic the LND knows the peer and reports limits a planner can use; an unknown one is -ENOENT
 * (or the LND cannot say, -EOPNOTSUPP, which no LND here may answer). */
static void test_peer_limits(void **state)
{
	struct pair *p = pair_new(4096, NULL, 0);
	const struct xcase put = { "put", 100, FORM_CONTIG, FORM_CONTIG, 0, 0, 0, false };
	struct ulnet_peer_limits l = { 0 };

	(void)state;
	xfer(p, &put, 17, 1);
	assert_int_equal(ulnet_peer_limits_get(p->a, &p->idb.nid, &l), 0);
	assert_true(l.max_frags >= 1);
	assert_int_equal(l.lnet_mtu, ULNET_MTU);
	/* an LND's own message size, when it has one, is what one message carries on its wire (o2ib:
	 * ibcp_max_msg_size, 4096), never the LNet MTU */
	assert_true(l.lnd_msg_size == 0 || (l.lnd_msg_size >= 512 && l.lnd_msg_size < ULNET_MTU));
	if (!strcmp(K->name, "o2ib")) {
		assert_int_equal(l.lnd_msg_size, 4096);
		assert_int_equal(l.conns, 1); /* conns_per_peer 1: one connection */
		assert_true(l.conns_used <= l.conns);
	}
	if (K->two_nodes) {
		struct ulnet_nid stranger = p->idb.nid;

		stranger.addr[0] += 100; /* same net, never talked to */
		assert_int_equal(ulnet_peer_limits_get(p->a, &stranger, &l), -ENOENT);
	}
	pair_free(p);
}

/* ---- 10,000 messages behind one credit ---- */

#define FLOOD 10000

struct flood {
	struct pair *p;
	int rc;
};

static void *flood_thread(void *arg)
{
	struct flood *f = arg;
	struct pair *p = f->p;
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	struct ulnet_md tmd = { .start = NULL, .length = 0, .threshold = ULNET_MD_THRESH_INF,
				.options = ULNET_MD_OP_PUT };
	struct ulnet_md imd = { .start = NULL, .length = 0, .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_handle me, th, ih;
	struct ulnet_event ev;
	unsigned sends = 0, puts = 0;

	f->rc = -__LINE__;
	tmd.eq = imd.eq = p->eq;
	if (ulnet_me_attach(p->b, 16, &any, 0, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me) ||
	    ulnet_md_attach(p->b, me, &tmd, ULNET_RETAIN, &th) || ulnet_md_bind(p->a, &imd, ULNET_RETAIN, &ih))
		return NULL;
	f->rc = -__LINE__;
	for (unsigned i = 0; i < FLOOD; i++)
		if (ulnet_put(p->a, ih, ULNET_NOACK_REQ, &p->idb, 16, 0, 0, i))
			return NULL;
	f->rc = -__LINE__;
	while (sends < FLOOD || puts < FLOOD) {
		int w = ulnet_eq_wait(p->eq, 30000, &ev);

		if (w != 1 || ev.status) {
			print_message("flood: after %u SEND and %u PUT events: wait %d, event %s status %d\n", sends,
				      puts, w, ulnet_event_kind_name(ev.type), ev.status);
			return NULL;
		}
		sends += ev.type == ULNET_EVENT_SEND;
		puts += ev.type == ULNET_EVENT_PUT;
	}
	f->rc = -__LINE__;
	if (ulnet_md_unlink(p->a, ih) || ulnet_me_unlink(p->b, me))
		return NULL;
	f->rc = 0;
	return NULL;
}

static void test_flood_one_credit(void **state)
{
	/* the whole flood waits behind one credit: let the peer queue hold it (its default bound is 4096) */
	const struct ulnet_kv tun[] = { { "peer_credits", "1" }, { "credits", "1" }, { "peer_queue_msgs", "20000" } };
	pthread_attr_t attr, saved;
	struct flood f;
	pthread_t t;

	(void)state;
	/* every thread made from now on (the nodes' loops too) gets 256 KiB: recursion would overflow */
	assert_int_equal(pthread_getattr_default_np(&saved), 0);
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstacksize(&attr, 256 << 10), 0);
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
	/* GCC 12's libtsan fails every pthread_create without attributes (EINVAL) once a default is
	 * set: the nodes' loops keep the usual stack here (clang's TSan and the other builds check it) */
#else
	assert_int_equal(pthread_setattr_default_np(&attr), 0);
#endif
	f.p = pair_new(4096, tun, sizeof(tun) / sizeof(tun[0]));
	assert_int_equal(pthread_create(&t, &attr, flood_thread, &f), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(f.rc, 0);
	pair_free(f.p);
	assert_int_equal(pthread_setattr_default_np(&saved), 0);
	pthread_attr_destroy(&attr);
	pthread_attr_destroy(&saved);
}

/* ---- no allocation per message in steady state ---- */

/* One Put with ACK and one Get of 4 KiB, waiting for both events of each. */
static void put_get_round(struct pair *p, struct ulnet_handle ih)
{
	struct ulnet_event ev;

	assert_int_equal(ulnet_put(p->a, ih, ULNET_ACK_REQ, &p->idb, 12, 0x55, 0, 0), 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(ulnet_eq_wait(p->eq, 10000, &ev), 1);
		assert_int_equal(ev.status, 0);
	}
	assert_int_equal(ulnet_get(p->a, ih, &p->idb, 12, 0x55, 0), 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(ulnet_eq_wait(p->eq, 10000, &ev), 1);
		assert_int_equal(ev.status, 0);
	}
}

/* After a warm-up, messages, ACKs and (for LNDs that use them) tx descriptors come from the nodes'
 * free lists: descriptors keep being handed out, the heap is not asked for one more. */
static void test_steady_state_no_alloc(void **state)
{
	struct pair *p = pair_new(4096, NULL, 0);
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	static uint8_t src[4096], sink[4096];
	struct ulnet_md tmd = { .start = sink, .length = sizeof(sink), .threshold = ULNET_MD_THRESH_INF,
				.options = ULNET_MD_OP_PUT | ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE };
	struct ulnet_md imd = { .start = src, .length = sizeof(src), .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_stats a0, b0, a1, b1;
	struct ulnet_handle me, th, ih;
	const int rounds = 500;

	(void)state;
	imd.eq = p->eq;
	assert_int_equal(ulnet_me_attach(p->b, 12, &any, 0x55, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(p->b, me, &tmd, ULNET_RETAIN, &th), 0);
	assert_int_equal(ulnet_md_bind(p->a, &imd, ULNET_RETAIN, &ih), 0);
	for (int i = 0; i < 50; i++)
		put_get_round(p, ih);
	ulnet_stats_get(p->a, &a0);
	ulnet_stats_get(p->b, &b0);
	for (int i = 0; i < rounds; i++)
		put_get_round(p, ih);
	ulnet_stats_get(p->a, &a1);
	ulnet_stats_get(p->b, &b1);
	/* a: Put, ACK in, Get, REPLY in; b: Put in, ACK, REPLY (lo: b is a) */
	assert_true(a1.desc_gets - a0.desc_gets >= 4u * rounds);
	/* a late completion may still deepen the lists by a descriptor or two (the depth is bounded by
	 * what is in flight, not by the message count) */
	assert_true(a1.desc_heap_allocs - a0.desc_heap_allocs <= 4);
	if (p->b != p->a) {
		assert_true(b1.desc_gets - b0.desc_gets >= 3u * rounds);
		assert_true(b1.desc_heap_allocs - b0.desc_heap_allocs <= 4);
	}
	assert_int_equal(ulnet_md_unlink(p->a, ih), 0);
	assert_int_equal(ulnet_me_unlink(p->b, me), 0);
	pair_free(p);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest edge[] = {
		cmocka_unit_test(test_start_stop_twice),
		cmocka_unit_test(test_get_truncated),
		cmocka_unit_test(test_unlink_in_flight),
		cmocka_unit_test(test_peer_vanishes),
		cmocka_unit_test(test_corrupt_header),
		cmocka_unit_test(test_peer_limits),
		cmocka_unit_test(test_flood_one_credit),
		cmocka_unit_test(test_steady_state_no_alloc),
	};
	struct CMUnitTest t4[50], t64[50];
	size_t n4, n64;
	int rc = 0;

	for (size_t i = 0; argc == 2 && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(argv[1], kinds[i].name))
			K = &kinds[i];
	if (!K) {
		fprintf(stderr, "usage: %s lo|tcp|o2ib\n", argv[0]);
		return 2;
	}
	if (K->needs_root && geteuid() != 0) {
		fprintf(stderr, "%s: binds port 988 and privileged source ports: run as root (skipped)\n", K->name);
		return 77;
	}
	/* the LND's errors are counted; set ULNET_TEST_LOG to see every line the nodes log */
	log_count_install(K->subsys, ULNET_LOG_ERR);
	if (getenv("ULNET_TEST_FILTER")) /* a cmocka name pattern: run only those cases */
		cmocka_set_test_filter(getenv("ULNET_TEST_FILTER"));
	n4 = build_matrix(t4, 4096);
	n64 = build_matrix(t64, 65536);
	rc |= _cmocka_run_group_tests("edge cases", edge, sizeof(edge) / sizeof(edge[0]), NULL, NULL);
	rc |= _cmocka_run_group_tests("page 4 KiB", t4, n4, group_setup_4k, group_teardown);
	rc |= _cmocka_run_group_tests("page 64 KiB", t64, n64, group_setup_64k, group_teardown);
	return rc;
}
