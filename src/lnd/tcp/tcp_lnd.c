/* SPDX-License-Identifier: MIT */
/* The tcp LND: its ops table, tunables, peers and connection policy (which conns a peer gets, which
 * conn a message takes, what a HELLO decides, keepalives, reconnect backoff). Socket I/O is
 * tcp_conn.c's and tcp_acceptor.c's.
 *
 * Policy facts borrowed from socklnd: typed conns (CONTROL, BULK_IN, BULK_OUT; conns_per_peer bulk
 * conns each way), messages under min_bulk bytes on CONTROL; a passive connection from a peer with a
 * lower NID while we are connecting to it is answered with ctype NONE (the higher NID wins the race);
 * a changed incarnation or protocol closes all the peer's conns; reconnect backoff doubles from
 * min_reconnectms to max_reconnectms. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tcp.h"

ULNET_LOG_SUBSYS_DEFINE(TCP, "TCP")

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull

static struct tcplnd_net *net_of(struct ulnet_ni *ni) { return ulnet__ni_priv(ni); }
static uint64_t peer_look_ns(const struct tcplnd_net *net);
static void peer_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now_node);
static void reap_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now);
static void accept_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now);

/* ---- tunables ---- */

static const char *const accept_names[] = { [TCPLND_ACCEPT_NONE] = "none", [TCPLND_ACCEPT_ALL] = "all",
					    [TCPLND_ACCEPT_SECURE] = "secure" };
#define AT(k) ULNET_TUNABLE_AT(struct tcplnd_tunables, k)
#define I(k, lo, hi, def, d) { #k, ULNET_TUNABLE_INT, lo, hi, def, NULL, d, AT(k) }
#define B(k, def, d) { #k, ULNET_TUNABLE_BOOL, 0, 1, def, NULL, d, AT(k) }
static const struct ulnet_tunable tcplnd_tunables[] = {
	I(accept_port, 1, 65535, 988, "TCP port of the acceptor and of outgoing connections"),
	{ "accept", ULNET_TUNABLE_ENUM, TCPLND_ACCEPT_NONE, TCPLND_ACCEPT_SECURE, TCPLND_ACCEPT_SECURE,
	  accept_names, "which connections to accept: none, all, or secure (privileged source port)", AT(accept) },
	I(timeout, 1, 3600, 50, "seconds without progress before a connection is closed"),
	I(keepalive, 0, 3600, 30, "seconds of silence before a keepalive NOOP (0: off)"),
	I(keepalive_idle, 0, 3600, 30, "TCP_KEEPIDLE seconds (0: system default)"),
	I(keepalive_intvl, 0, 3600, 5, "TCP_KEEPINTVL seconds (0: system default)"),
	I(keepalive_count, 0, 100, 5, "TCP_KEEPCNT probes (0: system default)"),
	B(typed_conns, 1, "separate CONTROL, BULK_IN and BULK_OUT connections"),
	I(conns_per_peer, 1, 16, 1, "bulk connections each way per peer"),
	I(min_bulk, 0, 1 << 20, 1024, "messages smaller than this go on the CONTROL connection"),
	B(enable_csum, 0, "checksum messages (protocol V2 only)"),
	I(min_reconnectms, 1, 3600000, 1000, "first reconnect delay, ms"),
	I(max_reconnectms, 1, 3600000, 60000, "longest reconnect delay, ms"),
	B(nagle, 0, "leave Nagle's algorithm on"),
	I(tx_buffer_size, 0, 1 << 30, 0, "SO_SNDBUF bytes (0: system default)"),
	I(rx_buffer_size, 0, 1 << 30, 0, "SO_RCVBUF bytes (0: system default)"),
	I(protocol, 0, 4, 0, "socklnd protocol offered first (0: V3, or V4 for IPv6)"),
	I(zc_min_payload, 0, 1 << 30, 16 << 10, "accepted for compatibility; zero-copy is never requested"),
	B(nonblk_zcack, 1, "accepted for compatibility; zero-copy is never requested"),
};
#undef I
#undef B
#undef AT
#define N_TUNABLES (sizeof(tcplnd_tunables) / sizeof(tcplnd_tunables[0]))

/* The core parsed the configuration against the table; copy it into our struct and cross-check. */
static int tunables_load(struct tcplnd_net *net, struct ulnet_ni *ni)
{
	ulnet__ni_lnd_tunables_load(ni, &net->tun);
	if (net->tun.max_reconnectms < net->tun.min_reconnectms) {
		ULNET_LOG(TCP, ERR, "lnd tunables: max_reconnectms %d < min_reconnectms %d", net->tun.max_reconnectms,
			  net->tun.min_reconnectms);
		return -EINVAL;
	}
	return 0;
}

/* ---- peers ---- */

struct tcplnd_peer *tcplnd_peer_find(struct tcplnd_net *net, const struct ulnet_nid *nid, bool create)
{
	struct ulnet_list *head = &net->peers[ulnet__nid_hash(nid) % TCPLND_PEER_BUCKETS], *p;
	struct tcplnd_peer *peer;

	for (p = head->next; p != head; p = p->next) {
		peer = ulnet_container_of(p, struct tcplnd_peer, link);
		if (ulnet__nid_equal(&peer->nid, nid))
			return peer;
	}
	if (!create)
		return NULL;
	peer = calloc(1, sizeof(*peer));
	if (!peer)
		return NULL;
	peer->net = net;
	peer->nid = *nid;
	ulnet_list_init(&peer->conns);
	ulnet_list_init(&peer->txq);
	peer->last_alive = peer->idle_since = ulnet__now_ns();
	peer->timer.fn = peer_timer_fire;
	ulnet__timer_arm_by(net->node, &peer->timer, peer->idle_since + peer_look_ns(net));
	ulnet_list_add_tail(&peer->link, head);
	return peer;
}

static unsigned type_limit(const struct tcplnd_net *net, int ctype)
{
	return ctype == TCPLND_CONN_CONTROL ? 1u : (unsigned)net->tun.conns_per_peer;
}

static bool peer_connecting(const struct tcplnd_peer *peer)
{
	unsigned t;

	for (t = 0; t < TCPLND_CONN_NTYPES; t++)
		if (peer->n_connecting[t])
			return true;
	return false;
}

/* The conn a message of @nob wire bytes takes (socklnd's match_tx, simplified): small ones on
 * CONTROL, bulk on BULK_OUT, either on the other when its own is missing; BULK_IN (the peer's
 * sending side) only for V1/V2 peers. The least loaded of the chosen type. */
static struct tcplnd_conn *peer_select(struct tcplnd_peer *peer, uint32_t nob)
{
	static const int small[] = { TCPLND_CONN_CONTROL, TCPLND_CONN_ANY, TCPLND_CONN_BULK_OUT, TCPLND_CONN_BULK_IN };
	static const int bulk[] = { TCPLND_CONN_BULK_OUT, TCPLND_CONN_ANY, TCPLND_CONN_CONTROL, TCPLND_CONN_BULK_IN };
	const int *order = nob < (uint32_t)peer->net->tun.min_bulk ? small : bulk;
	unsigned i, ntypes = peer->proto >= TCPLND_PROTO_V3 ? 3 : 4;

	for (i = 0; i < ntypes; i++) {
		struct tcplnd_conn *best = NULL;
		struct ulnet_list *p;

		if (!peer->n_up[order[i]])
			continue;
		for (p = peer->conns.next; p != &peer->conns; p = p->next) {
			struct tcplnd_conn *c = ulnet_container_of(p, struct tcplnd_conn, plink);

			if (c->ctype == order[i] && (!best || c->tx_queued_nob < best->tx_queued_nob))
				best = c;
		}
		if (best)
			return best;
	}
	return NULL;
}

static void peer_fail_txq(struct tcplnd_peer *peer, int rc)
{
	struct ulnet_list q, *p, *tmp;

	ulnet_list_init(&q);
	ulnet_list_splice_tail_init(&peer->txq, &q);
	ulnet_list_for_each_safe(p, tmp, &q) {
		struct tcplnd_tx *tx = ulnet_container_of(p, struct tcplnd_tx, link);

		ulnet_list_del(p);
		ulnet__finalize(tx->msg, rc);
		tcplnd_tx_free(peer->net, tx);
	}
}

/* Open the conns @peer is missing, if its backoff allows. */
static void peer_launch(struct tcplnd_peer *peer)
{
	struct tcplnd_net *net = peer->net;
	static const int typed[] = { TCPLND_CONN_CONTROL, TCPLND_CONN_BULK_IN, TCPLND_CONN_BULK_OUT };
	static const int untyped[] = { TCPLND_CONN_ANY };
	const int *types = net->tun.typed_conns ? typed : untyped;
	unsigned nt = net->tun.typed_conns ? 3 : 1, i;

	if (net->shutting_down || peer->userflag || ulnet__now_ns() < peer->retry_at)
		return;
	for (i = 0; i < nt; i++) {
		int t = types[i];

		while (peer->n_up[t] + peer->n_connecting[t] < type_limit(net, t)) {
			int rc = tcplnd_conn_connect(peer, t);

			if (rc) {
				char n[ULNET_NID_STRLEN];

				ULNET_LOG(TCP, ERR, "%s: cannot connect: %s", ulnet_nid_format(&peer->nid, n, sizeof(n)),
					  strerror(-rc));
				tcplnd_peer_connect_failed(peer, rc == -EADDRINUSE ? -EADDRINUSE : -EHOSTUNREACH, false, false);
				return;
			}
		}
	}
}

void tcplnd_peer_connect_failed(struct tcplnd_peer *peer, int rc, bool retry, bool now)
{
	struct tcplnd_net *net = peer->net;
	uint64_t t = ulnet__now_ns();

	if (retry) {
		/* lost a race or must renegotiate: not the peer's fault */
		peer->retry_at = now ? 0 : t + (uint64_t)net->tun.min_reconnectms * NS_PER_MS;
		ulnet__timer_arm_by(net->node, &peer->timer, now ? t : peer->retry_at);
		return;
	}
	peer->retry_ms = peer->retry_ms ? peer->retry_ms * 2 : (uint64_t)net->tun.min_reconnectms;
	if (peer->retry_ms > (uint64_t)net->tun.max_reconnectms)
		peer->retry_ms = (uint64_t)net->tun.max_reconnectms;
	if (peer->retry_ms < (uint64_t)net->tun.min_reconnectms)
		peer->retry_ms = (uint64_t)net->tun.min_reconnectms;
	peer->retry_at = t + peer->retry_ms * NS_PER_MS;
	peer->last_error = rc;
	ulnet__timer_arm_by(net->node, &peer->timer, peer->retry_at);
	/* nothing up and nothing on the way: what waits for this peer fails now */
	if (ulnet_list_empty(&peer->conns) && !peer_connecting(peer))
		peer_fail_txq(peer, rc);
}

void tcplnd_peer_conn_up(struct tcplnd_peer *peer, struct tcplnd_conn *conn)
{
	struct ulnet_list q, *p, *tmp;

	(void)conn;
	peer->retry_ms = 0;
	peer->retry_at = 0;
	peer->last_alive = ulnet__now_ns();
	/* work on a private list: queueing may finalize, and that may touch peer->txq */
	ulnet_list_init(&q);
	ulnet_list_splice_tail_init(&peer->txq, &q);
	ulnet_list_for_each_safe(p, tmp, &q) {
		struct tcplnd_tx *tx = ulnet_container_of(p, struct tcplnd_tx, link);
		struct tcplnd_conn *c = peer_select(peer, tx->payload + TCPLND_MSG_HDR_SIZE + ULNET_HDR_NID4_SIZE);

		ulnet_list_del(p);
		if (c)
			tcplnd_conn_queue(c, tx);
		else
			ulnet_list_add_tail(p, &peer->txq);
	}
}

void tcplnd_peer_conn_down(struct tcplnd_peer *peer, struct tcplnd_conn *conn)
{
	ulnet_list_del(&conn->plink);
	peer->n_up[conn->ctype]--;
	if (ulnet_list_empty(&peer->conns)) {
		peer->proto = 0; /* renegotiate with whatever comes next */
		peer->idle_since = ulnet__now_ns();
		if (!ulnet_list_empty(&peer->txq))
			peer_launch(peer);
	}
}

/* ---- HELLO decisions ---- */

void tcplnd_fill_hello(struct tcplnd_net *net, struct tcplnd_hello *h, uint32_t proto, const struct ulnet_nid *dst,
		       int ctype)
{
	memset(h, 0, sizeof(*h));
	h->version = proto;
	h->src_nid = net->nid;
	h->dst_nid = *dst;
	h->src_pid = ulnet_node_pid(net->node);
	h->src_incarnation = net->incarnation;
	h->ctype = ctype;
}

/* Order NIDs as socklnd does: by the 20-byte struct lnet_nid image. */
static int nid_cmp(const struct ulnet_nid *a, const struct ulnet_nid *b)
{
	uint8_t x[ULNET_NID16_WIRE_SIZE], y[ULNET_NID16_WIRE_SIZE];

	ulnet_nid16_pack(a, x);
	ulnet_nid16_pack(b, y);
	return memcmp(x, y, sizeof(x));
}

static void conn_reject(struct tcplnd_conn *conn, const char *field, uint64_t got, uint64_t limit)
{
	struct ulnet_wire_err err = { .field = field, .got = got, .limit = limit };

	tcplnd_log_bad(conn, "HELLO", &err);
	tcplnd_conn_close(conn, -EPROTO, NULL);
}

void tcplnd_hello_done(struct tcplnd_conn *conn)
{
	struct tcplnd_net *net = conn->net;
	const struct tcplnd_hello *h = &conn->hs.hello;
	struct tcplnd_peer *peer = conn->peer;
	struct ulnet_nid src = h->src_nid;
	uint32_t pid = h->src_pid;
	bool userflag = false;
	char a[ULNET_NID_STRLEN], b[ULNET_NID_STRLEN];
	struct tcplnd_hello_facts f = {
		.passive = conn->passive,
		.same_net = ulnet_nid_net(&src) == ulnet_nid_net(&net->nid),
		.src_is_target = !conn->passive && ulnet__nid_equal(&src, &peer->nid),
		.offered_version = conn->proto,
		.our_ctype = conn->ctype,
		.hello_version = h->version,
		.hello_ctype = h->ctype,
		.hello_incarnation = h->src_incarnation,
	};
	struct tcplnd_hello_verdict v = tcplnd_hello_check(&f);

	tcplnd_conn_hello_list_del(conn);
	if (v.action == TCPLND_HELLO_WRONG_NET) {
		if (!conn->passive) {
			peer->n_connecting[conn->ctype]--;
			conn->peer = NULL;
			tcplnd_peer_connect_failed(peer, -EPROTO, false, false);
		}
		conn_reject(conn, "kshm_src_nid (net)", ulnet_nid_net(&src), ulnet_nid_net(&net->nid));
		return;
	}
	if (conn->passive && conn->rport > TCPLND_MAX_RESERVED_PORT && conn->raddr.ss_family == AF_INET) {
		/* a user-space peer: known by its address and source port, as socklnd does */
		userflag = true;
		pid = conn->rport | ULNET_PID_USERFLAG;
		src.addr[0] = ntohl(((struct sockaddr_in *)(void *)&conn->raddr)->sin_addr.s_addr);
	}
	conn->swab = h->swab;

	if (!conn->passive) {
		uint32_t offered = conn->proto;

		peer->n_connecting[conn->ctype]--;
		conn->peer = NULL; /* from here on the close below must not count a second failure */
		if (v.action == TCPLND_HELLO_WRONG_NID) {
			ULNET_LOG(TCP, ERR, "%s: connected, but the peer says it is %s; check the configuration; closing",
				  conn->name, ulnet_nid_format(&src, a, sizeof(a)));
			tcplnd_conn_close(conn, -EPROTO, NULL);
			tcplnd_peer_connect_failed(peer, -EPROTO, false, false);
			return;
		}
		if (v.action == TCPLND_HELLO_RETRY_VERSION) {
			/* the peer speaks another version: offer that one next, at once */
			ULNET_LOG(TCP, INFO, "%s: peer answers protocol V%u to our V%u; retrying with V%u", conn->name,
				  h->version, offered, h->version);
			peer->proto_hint = h->version;
			tcplnd_conn_close(conn, -EPROTO, NULL);
			tcplnd_peer_connect_failed(peer, -EPROTO, true, true);
			peer_launch(peer);
			return;
		}
		if (v.action == TCPLND_HELLO_LOST_RACE) {
			ULNET_LOG(TCP, DEBUG, "%s: lost the connection race (or duplicate); retrying later", conn->name);
			tcplnd_conn_close(conn, -EALREADY, NULL);
			tcplnd_peer_connect_failed(peer, -EALREADY, true, false);
			return;
		}
		if (v.action == TCPLND_HELLO_BAD_CTYPE) {
			conn_reject(conn, "kshm_ctype", (uint32_t)h->ctype, (uint32_t)tcplnd_ctype_invert(conn->ctype));
			tcplnd_peer_connect_failed(peer, -EPROTO, false, false);
			return;
		}
		conn->peer = peer;
	} else {
		conn->proto = h->version;
		conn->ctype = tcplnd_ctype_invert(h->ctype);
		if (v.action == TCPLND_HELLO_BAD_CTYPE) {
			conn_reject(conn, "kshm_ctype", (uint32_t)h->ctype, TCPLND_CONN_BULK_OUT);
			return;
		}
		peer = tcplnd_peer_find(net, &src, true);
		if (!peer) {
			tcplnd_conn_close(conn, -ENOMEM, "no memory for a peer");
			return;
		}
	}

	f.src_below_us = nid_cmp(&src, &net->nid) < 0;
	f.peer_connecting = peer_connecting(peer);
	f.peer_proto = peer->proto;
	f.peer_incarnation = peer->incarnation;
	f.conn_proto = conn->proto;
	f.n_up = peer->n_up[conn->ctype];
	f.type_limit = type_limit(net, conn->ctype);
	v = tcplnd_hello_admit(&f);
	if (v.action == TCPLND_HELLO_ANSWER_NONE_RACE) {
		ULNET_LOG(TCP, DEBUG, "%s: connection race with %s; answering NONE", conn->name,
			  ulnet_nid_format(&src, a, sizeof(a)));
		tcplnd_conn_reply_none(conn, conn->proto, &src);
		return;
	}
	if (v.action == TCPLND_HELLO_PEER_RESTARTED) {
		struct ulnet_list *p, *tmp;

		ULNET_LOG(TCP, WARN, "%s: peer %s (%s V%u -> V%u, incarnation %llx -> %llx); closing its connections",
			  conn->name, peer->incarnation != h->src_incarnation ? "restarted" : "changed protocol",
			  ulnet_nid_format(&peer->nid, b, sizeof(b)), peer->proto, conn->proto,
			  (unsigned long long)peer->incarnation, (unsigned long long)h->src_incarnation);
		ulnet_list_for_each_safe(p, tmp, &peer->conns)
			tcplnd_conn_close(ulnet_container_of(p, struct tcplnd_conn, plink), -ECONNRESET, NULL);
		peer->proto = 0;
		if (conn->passive) {
			tcplnd_conn_reply_none(conn, conn->proto, &src);
		} else {
			conn->peer = NULL;
			tcplnd_conn_close(conn, -ESTALE, NULL);
			tcplnd_peer_connect_failed(peer, -ESTALE, true, true);
			peer_launch(peer);
		}
		return;
	}
	if (v.action == TCPLND_HELLO_DUPLICATE) {
		ULNET_LOG(TCP, DEBUG, "%s: duplicate %s connection", conn->name, tcplnd_ctype_name(conn->ctype));
		if (conn->passive) {
			tcplnd_conn_reply_none(conn, conn->proto, &src);
		} else {
			conn->peer = NULL;
			tcplnd_conn_close(conn, -EALREADY, NULL);
		}
		return;
	}

	/* accepted */
	conn->rx = malloc(sizeof(*conn->rx));
	/* the read-ahead buffer, then the conn's own slop (loops read concurrently: nothing shared) */
	conn->ra = malloc(TCPLND_RA_SIZE + TCPLND_SLOP_SIZE);
	conn->ra_off = conn->ra_len = 0;
	if (!conn->rx || !conn->ra) {
		conn->peer = NULL;
		tcplnd_conn_close(conn, -ENOMEM, "no memory for the receive state");
		if (!conn->passive)
			tcplnd_peer_connect_failed(peer, -ENOMEM, false, false);
		return;
	}
	peer->proto = conn->proto;
	peer->incarnation = h->src_incarnation;
	peer->pid = pid;
	peer->userflag = userflag;
	conn->peer = peer;
	tcplnd_conn_name(conn);
	tcplnd_rx_init(conn->rx, conn->proto, conn->swab, true, conn->ra + TCPLND_RA_SIZE);
	conn->rx_progress = conn->tx_progress = ulnet__now_ns();
	ulnet_list_add_tail(&conn->plink, &peer->conns);
	peer->n_up[conn->ctype]++;
	conn->state = TCPLND_CONN_UP;
	ULNET_LOG(TCP, INFO, "%s: connected, protocol V%u%s", conn->name, conn->proto, conn->swab ? " (byte-swapped)" : "");
	if (conn->passive) {
		struct tcplnd_hello reply;

		tcplnd_fill_hello(net, &reply, conn->proto, &h->src_nid, conn->ctype);
		tcplnd_conn_queue_hello(conn, &reply, tcplnd_fault_hello(conn, &h->src_nid));
		if (conn->state != TCPLND_CONN_UP)
			return;
	}
	tcplnd_peer_conn_up(peer, conn);
	if (conn->state == TCPLND_CONN_UP)
		tcplnd_conn_update_io(conn);
	tcplnd_conn_fault_look(conn); /* a stall rule that fits stops it from here on */
}

/* ---- ops ---- */

/* A stall rule came or went: each UP conn is judged by the new rules, or let go when its rule went. */
static void tcplnd_fault_changed(struct ulnet_ni *ni)
{
	struct tcplnd_net *net = net_of(ni);
	struct ulnet_list *p;

	for (p = net->conns.next; p != &net->conns; p = p->next)
		tcplnd_conn_fault_look(ulnet_container_of(p, struct tcplnd_conn, link));
}

static int net_address(struct tcplnd_net *net, struct ulnet_ni *ni)
{
	const struct ulnet_ni_conf *conf = ulnet__ni_conf(ni);
	struct ulnet_nid nid = *ulnet__ni_nid(ni);

	if (ulnet_nid_is_any(&nid)) {
		struct ifaddrs *ifa, *i;
		uint32_t netnum = 0;
		bool found = false;

		if (!conf->interfaces || !conf->interfaces[0]) {
			ULNET_LOG(TCP, ERR, "net %s: neither a nid nor an interface to take the address from",
				  conf->net ? conf->net : "tcp");
			return -EINVAL;
		}
		if (getifaddrs(&ifa) < 0)
			return -errno;
		for (i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || strcmp(i->ifa_name, conf->interfaces[0]))
				continue;
			memset(&nid, 0, sizeof(nid));
			nid.type = ULNET_LND_SOCK;
			nid.addr[0] = ntohl(((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr);
			found = true;
			break;
		}
		freeifaddrs(ifa);
		if (!found) {
			ULNET_LOG(TCP, ERR, "net %s: interface '%s' has no IPv4 address", conf->net ? conf->net : "tcp",
				  conf->interfaces[0]);
			return -EINVAL;
		}
		if (conf->net && ulnet_net_parse(conf->net, &netnum, NULL) == 0)
			nid.num = (uint16_t)(netnum & 0xffff);
		ulnet__ni_set_nid(ni, &nid);
	}
	net->nid = nid;
	return ulnet__nid_sockaddr(&nid, 0, &net->addr, &net->addrlen);
}

static int tcplnd_startup(struct ulnet_ni *ni)
{
	struct tcplnd_net *net = net_of(ni);
	unsigned i;
	int rc;

	memset(net, 0, sizeof(*net));
	net->ni = ni;
	net->node = ulnet__ni_node(ni);
	net->lfd = -1;
	for (i = 0; i < TCPLND_PEER_BUCKETS; i++)
		ulnet_list_init(&net->peers[i]);
	ulnet_list_init(&net->conns);
	ulnet_list_init(&net->closed);
	ulnet_list_init(&net->hello_conns);
	net->reap_timer.fn = reap_timer_fire;
	net->accept_timer.fn = accept_timer_fire;
	net->next_port = TCPLND_MAX_RESERVED_PORT;
	rc = tunables_load(net, ni);
	if (rc)
		return rc;
	rc = net_address(net, ni);
	if (rc)
		return rc;
	/* the NI's start time: a restarted peer shows up as a new incarnation */
	net->incarnation = ulnet__wall_ns();
	return tcplnd_acceptor_start(net);
}

/* Snapshot of the live conns: closing one may open or close others. */
static struct tcplnd_conn **conns_snapshot(struct tcplnd_net *net, size_t *n)
{
	struct tcplnd_conn **v = malloc((net->n_conns + 1) * sizeof(*v));
	struct ulnet_list *p;

	*n = 0;
	if (!v)
		return NULL;
	for (p = net->conns.next; p != &net->conns && *n < net->n_conns; p = p->next)
		v[(*n)++] = ulnet_container_of(p, struct tcplnd_conn, link);
	return v;
}

/* Free closed conns (all at shutdown; otherwise those the core owes no lnd_recv, no socket call of
 * another loop is using and no event batch of another loop may still name). */
static void free_closed_conns(struct tcplnd_net *net, bool all)
{
	struct ulnet_list *p, *tmp;

	ulnet_list_for_each_safe(p, tmp, &net->closed) {
		struct tcplnd_conn *conn = ulnet_container_of(p, struct tcplnd_conn, link);

		if (all || (!conn->recv_owed && ulnet__io_quiesced(net->node, &conn->io)))
			tcplnd_conn_free(conn);
	}
}

static void tcplnd_shutdown(struct ulnet_ni *ni)
{
	struct tcplnd_net *net = net_of(ni);
	struct tcplnd_conn **v;
	size_t n, i;
	unsigned b;

	net->shutting_down = true;
	tcplnd_acceptor_stop(net);
	while (!ulnet_list_empty(&net->conns)) {
		v = conns_snapshot(net, &n);
		if (!v)
			break;
		for (i = 0; i < n; i++)
			tcplnd_conn_close(v[i], -ESHUTDOWN, NULL);
		free(v);
	}
	for (b = 0; b < TCPLND_PEER_BUCKETS; b++) {
		while (!ulnet_list_empty(&net->peers[b])) {
			struct tcplnd_peer *peer = ulnet_list_first(&net->peers[b], struct tcplnd_peer, link);

			peer_fail_txq(peer, -ESHUTDOWN);
			ulnet__timer_cancel(net->node, &peer->timer);
			ulnet_list_del(&peer->link);
			free(peer);
		}
	}
	free_closed_conns(net, true);
	ulnet__timer_cancel(net->node, &net->reap_timer);
	ulnet__timer_cancel(net->node, &net->accept_timer);
}

static int tcplnd_send(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg)
{
	struct tcplnd_net *net = net_of(ni);
	const struct ulnet_msg_lnd_view *v = ulnet__msg_view(msg);
	struct tcplnd_peer *peer;
	struct tcplnd_conn *conn;
	struct tcplnd_tx *tx;

	(void)rx_priv;
	if (net->shutting_down)
		return -ESHUTDOWN;
	peer = tcplnd_peer_find(net, &v->target.nid, true);
	if (!peer)
		return -ENOMEM;
	if (peer->userflag && ulnet_list_empty(&peer->conns))
		return -EHOSTUNREACH; /* a user-space peer can only be reached while it is connected */
	tx = tcplnd_tx_new(net, v->niov + 1);
	if (!tx)
		return -ENOMEM;
	tx->msg = msg;
	tx->kh.type = TCPLND_MSG_LNET;
	tx->payload = v->hdr.payload_length;
	tx->piov = v->iov;
	tx->npiov = v->niov;
	conn = peer_select(peer, tx->payload + TCPLND_MSG_HDR_SIZE + ULNET_HDR_NID4_SIZE);
	if (conn) {
		tcplnd_conn_queue(conn, tx);
		return 0;
	}
	tx->deadline = ulnet__now_ns() + (uint64_t)net->tun.timeout * NS_PER_S;
	ulnet_list_add_tail(&tx->link, &peer->txq);
	ulnet__timer_arm_by(net->node, &peer->timer, tx->deadline + 1);
	if (!peer_connecting(peer)) {
		if (ulnet__now_ns() < peer->retry_at && ulnet_list_empty(&peer->conns)) {
			/* still backing off after a failure: fail at once, as a down peer would */
			ulnet_list_del(&tx->link);
			tcplnd_tx_free(peer->net, tx);
			return peer->last_error ? peer->last_error : -EHOSTUNREACH;
		}
		peer_launch(peer);
	}
	return 0;
}

static int tcplnd_recv(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, const struct iovec *iov,
		       unsigned niov, uint32_t mlen, uint32_t rlen)
{
	struct tcplnd_conn *conn = rx_priv;

	(void)ni;
	conn->recv_owed = false;
	if (conn->state != TCPLND_CONN_UP || conn->rx->state != TCPLND_RX_PARSE_WAIT)
		return msg ? -ECONNRESET : 0; /* the conn went away while the core held the header */
	if (msg && mlen && niov > conn->rx_iov_cap) {
		unsigned cap = niov < 16 ? 16 : niov;
		struct iovec *n = realloc(conn->rx_iov, cap * sizeof(*n));

		if (!n) {
			/* keep the stream in step: the payload goes to the slop buffer */
			tcplnd_rx_deliver(conn->rx, NULL, NULL, 0, 0, rlen);
			if (!conn->in_parse)
				tcplnd_conn_rx_resume(conn);
			return -ENOMEM;
		}
		conn->rx_iov = n;
		conn->rx_iov_cap = cap;
	}
	if (msg && mlen)
		niov = tcplnd_iov_coalesce(conn->rx_iov, iov, niov);
	tcplnd_rx_deliver(conn->rx, msg, conn->rx_iov, msg && mlen ? niov : 0, mlen, rlen);
	if (!conn->in_parse)
		tcplnd_conn_rx_resume(conn);
	return 0;
}

static void peer_tick(struct tcplnd_peer *peer, uint64_t now)
{
	struct tcplnd_net *net = peer->net;
	struct ulnet_list *p, *tmp, late;

	/* messages that waited too long for a conn */
	ulnet_list_init(&late);
	ulnet_list_for_each_safe(p, tmp, &peer->txq) {
		struct tcplnd_tx *tx = ulnet_container_of(p, struct tcplnd_tx, link);

		if (now > tx->deadline) {
			ulnet_list_del(p);
			ulnet_list_add_tail(p, &late);
		}
	}
	if (!ulnet_list_empty(&late)) {
		char n[ULNET_NID_STRLEN];

		ULNET_LOG(TCP, ERR, "%s: no connection within %d s (lnd tunable timeout); failing its queued messages",
			  ulnet_nid_format(&peer->nid, n, sizeof(n)), net->tun.timeout);
		ulnet_list_for_each_safe(p, tmp, &late) {
			struct tcplnd_tx *tx = ulnet_container_of(p, struct tcplnd_tx, link);

			ulnet_list_del(p);
			ulnet__finalize(tx->msg, -ETIMEDOUT);
			tcplnd_tx_free(peer->net, tx);
		}
	}
	if (!ulnet_list_empty(&peer->txq) && !peer_connecting(peer))
		peer_launch(peer);
	/* keepalive (V3+): a NOOP {0, 1} after silence, preferably on the ACK (BULK_IN) conn */
	if (net->tun.keepalive > 0 && peer->proto >= TCPLND_PROTO_V3 && !ulnet_list_empty(&peer->conns) &&
	    now - peer->last_alive > (uint64_t)net->tun.keepalive * NS_PER_S && now >= peer->keepalive_at) {
		struct tcplnd_conn *best = NULL;

		peer->keepalive_at = now + TCPLND_KEEPALIVE_RETRY_S * NS_PER_S;
		for (p = peer->conns.next; p != &peer->conns; p = p->next) {
			struct tcplnd_conn *c = ulnet_container_of(p, struct tcplnd_conn, plink);

			if (!best || (c->ctype == TCPLND_CONN_BULK_IN && best->ctype != TCPLND_CONN_BULK_IN))
				best = c;
		}
		if (best && ulnet_list_empty(&best->txq))
			tcplnd_conn_queue_noop(best, 0, TCPLND_KEEPALIVE_PING);
	}
}

/* How long a peer's timer may sleep: half its shortest period, so that whatever starts meanwhile (a
 * message queued, traffic that ends) is looked at before its own deadline (see tcp_conn.c). */
static uint64_t peer_look_ns(const struct tcplnd_net *net)
{
	uint64_t p = TCPLND_PEER_IDLE_S;

	if ((uint64_t)net->tun.timeout < p)
		p = (uint64_t)net->tun.timeout;
	if (net->tun.keepalive > 0 && (uint64_t)net->tun.keepalive < p)
		p = (uint64_t)net->tun.keepalive;
	return p * NS_PER_S / 2;
}

static bool peer_idle(const struct tcplnd_peer *peer)
{
	return ulnet_list_empty(&peer->conns) && ulnet_list_empty(&peer->txq) && !peer_connecting(peer);
}

/* The peer's next deadline after @now (peer_tick's tests pass just after it). */
static uint64_t peer_next_deadline(const struct tcplnd_peer *peer, uint64_t now)
{
	const struct tcplnd_net *net = peer->net;
	uint64_t next = now + peer_look_ns(net), c[4];
	unsigned n = 0;

	if (!ulnet_list_empty(&peer->txq)) {
		c[n++] = ulnet_list_first(&peer->txq, struct tcplnd_tx, link)->deadline + 1; /* oldest first */
		if (!peer_connecting(peer))
			c[n++] = peer->retry_at;
	}
	if (net->tun.keepalive > 0 && peer->proto >= TCPLND_PROTO_V3 && !ulnet_list_empty(&peer->conns)) {
		uint64_t ka = peer->last_alive + (uint64_t)net->tun.keepalive * NS_PER_S + 1;

		c[n++] = ka > peer->keepalive_at ? ka : peer->keepalive_at;
	}
	if (peer_idle(peer)) {
		uint64_t forget = peer->idle_since + TCPLND_PEER_IDLE_S * NS_PER_S + 1;

		c[n++] = forget > peer->retry_at ? forget : peer->retry_at;
	}
	return ulnet__deadline_next(now, next, c, n);
}

/* A peer with nothing left for TCPLND_PEER_IDLE_S is forgotten (no callbacks below), unless a closed
 * conn still names it. */
static void peer_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now_node)
{
	struct tcplnd_peer *peer = ulnet_container_of(t, struct tcplnd_peer, timer);
	uint64_t now = ulnet__now_ns(); /* the peer's stamps are on this clock */

	(void)now_node;
	peer_tick(peer, now);
	if (!peer_idle(peer))
		peer->idle_since = now;
	else if (now - peer->idle_since > TCPLND_PEER_IDLE_S * NS_PER_S && now >= peer->retry_at &&
		 !peer->n_closed) {
		ulnet_list_del(&peer->link);
		free(peer);
		return;
	}
	ulnet__timer_arm_by(node, t, peer_next_deadline(peer, now));
}

static void reap_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now)
{
	struct tcplnd_net *net = ulnet_container_of(t, struct tcplnd_net, reap_timer);

	(void)now;
	free_closed_conns(net, false);
	if (!ulnet_list_empty(&net->closed))
		ulnet__timer_arm_by(node, t, ulnet__now_ns() + TCPLND_REAP_NS);
}

static void accept_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now)
{
	(void)node, (void)now;
	tcplnd_acceptor_resume(ulnet_container_of(t, struct tcplnd_net, accept_timer));
}

/* socklnd negotiates no limits: a payload goes inline as any number of fragments up to LNET_MTU, and
 * the queue depth is the NI's peer_credits. Known only once we have state for the peer. */
static int tcplnd_query_peer(struct ulnet_ni *ni, const struct ulnet_nid *nid, struct ulnet_peer_limits *out)
{
	struct tcplnd_peer *peer = tcplnd_peer_find(net_of(ni), nid, false);

	if (!peer)
		return -ENOENT;
	/* no LND message size of its own (lnd_msg_size 0); its connections are not counted here (0) */
	*out = (struct ulnet_peer_limits){ .max_frags = ULNET_MD_MAX_FRAGS,
					   .queue_depth = (uint32_t)ulnet__ni_peer_credits(ni), .lnet_mtu = ULNET_MTU };
	return 0;
}

const struct ulnet_lnd_ops ulnet__tcplnd_ops = {
	.lnd_type = ULNET_LND_SOCK,
	.lnd_name = "tcp",
	.lnd_ni_size = sizeof(struct tcplnd_net),
	.lnd_startup = tcplnd_startup,
	.lnd_shutdown = tcplnd_shutdown,
	.lnd_send = tcplnd_send,
	.lnd_recv = tcplnd_recv,
	.lnd_tunables = tcplnd_tunables,
	.lnd_n_tunables = N_TUNABLES,
	.lnd_query_peer = tcplnd_query_peer,
	.lnd_fault_changed = tcplnd_fault_changed,
};
