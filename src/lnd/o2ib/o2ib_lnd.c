/* SPDX-License-Identifier: MIT */
/* The o2ib LND: its ops table, typed tunables, startup over a fabric provider, peers, and the send
 * and receive entry points. Connections are o2ib_conn.c's and o2ib_cm.c's, sending o2ib_tx.c's,
 * completions o2ib_cb.c's.
 *
 * IMMEDIATE carries payloads up to 3976 bytes (lnet-wire.md §3.1); larger ones, and GETs whose sink
 * is larger, take the RDMA rendezvous of o2ib_rdma.c. */
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <time.h>
#include "o2ib.h"

ULNET_LOG_SUBSYS_DEFINE(O2IB, "O2IB")

#define NS_PER_S 1000000000ull

static struct o2ib_net *net_of(struct ulnet_ni *ni) { return ulnet__ni_priv(ni); }
static uint64_t peer_look_ns(const struct o2ib_net *net);
static void peer_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now_node);
static void pending_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now);
static void reap_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now);

/* ---- tunables ---- */

enum o2ib_provider { O2IB_PROVIDER_AUTO, O2IB_PROVIDER_SHM, O2IB_PROVIDER_VERBS };
static const char *const provider_names[] = { [O2IB_PROVIDER_AUTO] = "auto", [O2IB_PROVIDER_SHM] = "shm",
					      [O2IB_PROVIDER_VERBS] = "verbs" };

/* Kept in struct o2ib_tun (T), or read otherwise (I: the device.* keys go to the fabric's parser). */
#define T(k, lo, hi, def, d) { #k, ULNET_TUNABLE_INT, lo, hi, def, NULL, d, ULNET_TUNABLE_AT(struct o2ib_tun, k) }
#define I(k, lo, hi, def, d) { k, ULNET_TUNABLE_INT, lo, hi, def, NULL, d, 0 }
/* Device limits: the range here only admits integers; fab_limits_parse checks each key's real range. */
#define DEV(k) I("device." k, 0, 0x7fffffffffffffffL, 0, "device limit (fab_limits_parse); 0: the device's own")
static const struct ulnet_tunable o2ib_tunables[] = {
	{ "provider", ULNET_TUNABLE_ENUM, O2IB_PROVIDER_AUTO, O2IB_PROVIDER_VERBS, O2IB_PROVIDER_AUTO,
	  provider_names, "fabric provider: shm, verbs, or auto (verbs if an RDMA device serves the NID)",
	  ULNET_TUNABLE_AT(struct o2ib_tun, provider) },
	T(port, 1, 65535, 987, "RDMA CM port of the listener and of outgoing connections"),
	T(peer_credits, 0, 255, 0, "queue depth proposed and accepted, 8..255 (0: the NI's peer_credits)"),
	T(peer_credits_hiw, 0, 255, 0, "owed credits that trigger a NOOP (0: half the queue depth)"),
	T(concurrent_sends, 0, 1024, 0, "messages posted at once per connection (0: the queue depth)"),
	T(map_on_demand, 0, 257, 1, "0: describe RDMA buffers page by page; N: one region above N fragments"),
	T(timeout, 1, 3600, 50, "seconds before a message or a connection attempt fails"),
	T(keepalive, 0, 3600, 100, "seconds of silence before a keepalive NOOP (0: off)"),
	T(max_frags, 1, 257, 257, "RDMA fragments per transfer proposed and accepted (a peer asking more is "
				    "rejected with RDMA_FRAGS and retries with this)"),
	T(reg_cache_entries, 0, 65536, 1024, "source registrations kept for reuse, least recently used dropped "
					       "first (0: register per transfer)"),
	T(reg_cache_mb, 1, 1 << 20, 1024, "MiB of memory the kept source registrations may cover"),
	T(max_peers, 1, 1048576, 4096, "peers remembered at once; idle ones (no connection, nothing queued) "
	  "are forgotten after timeout s, or at once to make room"),
	T(conns_per_peer, 1, 127, 1, "connections opened to a peer that has none (o2iblnd 2.15+); messages go "
	  "round robin over a peer's connections, and a peer may hold up to 127 here"),
	T(use_privileged_port, 0, 1, 0, "1: connect from a source port below 1024 (peers that "
	  "require_privileged_port; needs CAP_NET_BIND_SERVICE)"),
	DEV("max_send_sge"), DEV("max_recv_sge"), DEV("max_qp_wr"), DEV("max_qp"), DEV("max_mr"),
	DEV("max_mr_size"), DEV("max_msg_sz"), DEV("page_size"),
	I("device.copy_thread", 0, 1, 0, "shm provider: 1 = a copy thread per device runs the send queues (RDMA "
	  "copies, SENDs) as an HCA would, so the loop goes on meanwhile; 0 = the loop copies (verbs: 0 only)"),
	I("device.allow_uid", -1, 4294967294L, -1, "shm provider: a uid besides this process's own whose "
	  "processes may connect (-1: none; docs/fabric.md, Trust model)"),
	I("device.allow_gid", -1, 4294967294L, -1, "shm provider: a group whose processes (primary or "
	  "supplementary) may connect (-1: none)"),
};
#undef DEV
#undef I
#undef T
#define N_TUNABLES (sizeof(o2ib_tunables) / sizeof(o2ib_tunables[0]))

static int tunables_load(struct o2ib_net *net, struct ulnet_ni *ni)
{
	ulnet__ni_lnd_tunables_load(ni, &net->tun);
	if (net->tun.peer_credits && net->tun.peer_credits < (int)O2IB_CREDITS_MIN) {
		ULNET_LOG(O2IB, ERR, "lnd tunables: peer_credits %d below the o2ib minimum %u (use 8..255, or 0 "
			  "for the NI's peer_credits)", net->tun.peer_credits, O2IB_CREDITS_MIN);
		return -EINVAL;
	}
	return 0;
}

/* The configured device.* keys, given to the fabric's limits parser over its defaults. */
static int limits_load(struct ulnet_ni *ni, struct fab_limits *lim)
{
	const struct ulnet_ni_conf *conf = ulnet__ni_conf(ni);
	struct ulnet_kv kv[N_TUNABLES];
	size_t n = 0;

	fab_limits_default(lim);
	for (size_t i = 0; conf && i < conf->n_lnd_tunables; i++)
		if (!strncmp(conf->lnd_tunables[i].key, "device.", 7) && n < N_TUNABLES)
			kv[n++] = conf->lnd_tunables[i];
	return n ? fab_limits_parse(kv, n, lim) : 0;
}

/* ---- peers ---- */

static bool peer_busy(const struct o2ib_peer *peer)
{
	return !ulnet_list_empty(&peer->conns) || peer->nconns || !ulnet_list_empty(&peer->txq);
}

static void peer_forget(struct o2ib_net *net, struct o2ib_peer *peer)
{
	if (net->last_peer == peer)
		net->last_peer = NULL;
	ulnet__timer_cancel(ulnet__ni_node(net->ni), &peer->timer);
	ulnet_list_del(&peer->link);
	net->npeers--;
	free(peer);
}

/* Make room for one more peer: forget the one idle longest. */
static bool peer_make_room(struct o2ib_net *net)
{
	struct o2ib_peer *oldest = NULL;

	for (unsigned b = 0; b < O2IB_PEER_BUCKETS; b++)
		for (struct ulnet_list *p = net->peers[b].next; p != &net->peers[b]; p = p->next) {
			struct o2ib_peer *peer = ulnet_container_of(p, struct o2ib_peer, link);

			if (!peer_busy(peer) && (!oldest || peer->busy_ns < oldest->busy_ns))
				oldest = peer;
		}
	if (oldest)
		peer_forget(net, oldest);
	return oldest != NULL;
}

struct o2ib_peer *o2ib_peer_find(struct o2ib_net *net, const struct ulnet_nid *nid, bool create)
{
	struct ulnet_list *head, *p;
	struct o2ib_peer *peer;
	char ns[ULNET_NID_STRLEN];

	/* every message looks its peer up: the usual one is the last one, no hash nor walk */
	if (net->last_peer && ulnet__nid_equal(&net->last_peer->nid, nid))
		return net->last_peer;
	head = &net->peers[ulnet__nid_hash(nid) % O2IB_PEER_BUCKETS];
	for (p = head->next; p != head; p = p->next) {
		peer = ulnet_container_of(p, struct o2ib_peer, link);
		if (ulnet__nid_equal(&peer->nid, nid))
			return net->last_peer = peer;
	}
	if (!create)
		return NULL;
	if (net->npeers >= (uint32_t)net->tun.max_peers && !peer_make_room(net)) {
		ULNET_LOG(O2IB, ERR, "%s: no room for another peer: %u peers, all connected or with messages "
			  "queued (lnd tunable max_peers %d)", o2ib_nid_str(nid, ns, sizeof(ns)), net->npeers,
			  net->tun.max_peers);
		return NULL;
	}
	peer = calloc(1, sizeof(*peer));
	if (!peer)
		return NULL;
	peer->net = net;
	peer->nid = *nid;
	peer->nid4 = ulnet_nid_to_nid4(nid);
	peer->busy_ns = ulnet__now_ns();
	peer->timer.fn = peer_timer_fire;
	o2ib_peer_timer_by(peer, peer->busy_ns + peer_look_ns(net));
	ulnet_list_init(&peer->txq);
	ulnet_list_init(&peer->conns);
	ulnet_list_add_tail(&peer->link, head);
	net->npeers++;
	return peer;
}

const char *o2ib_nid_str(const struct ulnet_nid *nid, char *buf, size_t len)
{
	return ulnet_nid_format(nid, buf, len);
}

void o2ib_tx_done(struct o2ib_net *net, struct o2ib_tx *tx, int status)
{
	if (tx->mr_ok && net->dev)
		net->fab->dereg_mr(net->dev, &tx->mr); /* a sink's key dies with its transfer */
	o2ib_tx_release(net, tx);
	if (tx->lntmsg)
		ulnet__finalize(tx->lntmsg, status);
	if (tx->lntmsg2)
		ulnet__finalize(tx->lntmsg2, status);
	o2ib_tx_free(net, tx);
}

/* A tx is ~9.5 KB, mostly room a message rarely fills: an RDMA descriptor's 335 fragments and the
 * IMMEDIATE payload. Only the bytes a message carries are ever read from those (pack stops at
 * rd.nfrags and payload_len), so only what comes before them is cleared, and the tx comes from the
 * node's descriptor free lists: a malloc of 9.5 KB and clearing 5 KB of it, three times per RPC,
 * showed in the copying node's profile. */
#define TX_CLEAR offsetof(struct o2ib_tx, msg.u.get.rd.frags)
_Static_assert(offsetof(struct o2ib_tx, msg.u.putack.rd.frags) <= TX_CLEAR, "the putack fragments start later");
_Static_assert(offsetof(struct o2ib_tx, payload) >= TX_CLEAR, "the payload starts earlier");

struct o2ib_tx *o2ib_tx_new(struct o2ib_net *net, uint8_t type)
{
	struct o2ib_tx *tx = ulnet__desc_get_hdr(ulnet__ni_node(net->ni), sizeof(*tx), TX_CLEAR);

	if (tx) {
		tx->slot = -1;
		tx->msg.type = type;
	}
	return tx;
}

void o2ib_tx_free(struct o2ib_net *net, struct o2ib_tx *tx)
{
	ulnet__desc_put(ulnet__ni_node(net->ni), tx, sizeof(*tx));
}

/* ---- startup and shutdown ---- */

int o2ib_nid_sockaddr(const struct ulnet_nid *nid, uint16_t port, struct sockaddr_in *out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int rc;

	if ((rc = ulnet__nid_sockaddr(nid, port, &ss, &len)))
		return rc;
	if (ss.ss_family != AF_INET)
		return -EAFNOSUPPORT;
	memcpy(out, &ss, sizeof(*out));
	return 0;
}

/* The NID's address must be one of this host's (as o2iblnd needs an IPoIB interface holding it). */
static int addr_is_local(const struct sockaddr_in *addr)
{
	struct sockaddr_in a = *addr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	a.sin_port = 0;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		rc = -errno;
	close(fd);
	return rc;
}

static void o2ib_io_cb(struct ulnet_io *io, uint32_t revents)
{
	/* only the loop hook (no epoll event): the completions and events it found, no system call */
	o2ib_progress(io->data, (revents & ~ULNET_IO_POLLED) != 0);
}

/* The loop hook (the provider's poll/arm, shm): a busy-polling loop finds completions and ring
 * SENDs in user space, and the device fd is armed only when the loop is about to sleep. */
static bool o2ib_io_poll(struct ulnet_io *io)
{
	struct o2ib_net *net = io->data;

	return net->fab->poll(net->dev);
}

static bool o2ib_io_arm(struct ulnet_io *io)
{
	struct o2ib_net *net = io->data;

	return net->fab->arm(net->dev);
}

const struct fab_provider_ops *(*o2ib_test_fab_wrap)(const struct fab_provider_ops *chosen);

static int o2iblnd_startup(struct ulnet_ni *ni)
{
	struct o2ib_net *net = net_of(ni);
	const struct ulnet_nid *nid = ulnet__ni_nid(ni);
	const char *requested;
	struct fab_limits lim;
	char ns[ULNET_NID_STRLEN];
	int rc;

	memset(net, 0, sizeof(*net));
	net->ni = ni;
	for (unsigned i = 0; i < O2IB_PEER_BUCKETS; i++)
		ulnet_list_init(&net->peers[i]);
	ulnet_list_init(&net->pending);
	ulnet_list_init(&net->zombies);
	net->pending_timer.fn = pending_timer_fire;
	net->reap_timer.fn = reap_timer_fire;
	ulnet_list_init(&net->checks);
	ulnet_list_init(&net->bounces);
	ulnet_list_init(&net->reg_lru);
	if ((rc = tunables_load(net, ni)) || (rc = limits_load(ni, &lim)))
		return rc;
	if (!ulnet_nid_is_nid4(nid) || nid->size) {
		ULNET_LOG(O2IB, ERR, "%s: the o2ib LND needs an IPv4 NID", o2ib_nid_str(nid, ns, sizeof(ns)));
		return -EINVAL;
	}
	if ((rc = o2ib_nid_sockaddr(nid, (uint16_t)net->tun.port, &net->addr)))
		return rc;
	if ((rc = addr_is_local(&net->addr))) {
		ULNET_LOG(O2IB, ERR, "%s: the address is not one of this host's: %s", o2ib_nid_str(nid, ns, sizeof(ns)),
			  strerror(-rc));
		return rc;
	}
	requested = net->tun.provider == O2IB_PROVIDER_AUTO ? NULL : provider_names[net->tun.provider];
	if ((rc = fab_provider_select(requested, &net->addr, &net->fab)))
		return rc;
	{
		const struct fab_provider_ops *(*wrap)(const struct fab_provider_ops *) =
			__atomic_load_n(&o2ib_test_fab_wrap, __ATOMIC_ACQUIRE);

		if (wrap)
			net->fab = wrap(net->fab);
	}
	if ((rc = net->fab->dev_open(&net->addr, &lim, &net->dev))) {
		ULNET_LOG(O2IB, ERR, "%s: %s provider: cannot open the device: %s", o2ib_nid_str(nid, ns, sizeof(ns)),
			  net->fab->name, strerror(-rc));
		return rc;
	}
	if ((rc = net->fab->create_id(net->dev, NULL, &net->listener)) ||
	    (rc = net->fab->listen(net->listener, &net->addr, 64))) {
		ULNET_LOG(O2IB, ERR, "%s: cannot listen on port %d (lnd tunable port): %s",
			  o2ib_nid_str(nid, ns, sizeof(ns)), net->tun.port, strerror(-rc));
		goto fail;
	}
	net->io.fd = net->fab->dev_fd(net->dev);
	net->io.cb = o2ib_io_cb;
	net->io.data = net;
	if (net->fab->poll && net->fab->arm) {
		net->io.poll = o2ib_io_poll;
		net->io.arm = o2ib_io_arm;
	}
	if ((rc = ulnet__io_start(ulnet__ni_node(ni), &net->io, EPOLLIN)))
		goto fail;
	net->me.nid = ulnet_nid_to_nid4(nid);
	net->me.stamp = ulnet__wall_ns() / 1000u; /* incarnation, µs */
	net->me.ni_ready = true;
	net->me.tun.peer_credits = (uint16_t)(net->tun.peer_credits ? net->tun.peer_credits
						: (int)ulnet__ni_peer_credits(ni));
	if (net->me.tun.peer_credits < O2IB_CREDITS_MIN)
		net->me.tun.peer_credits = O2IB_CREDITS_MIN;
	if (net->me.tun.peer_credits > O2IB_CREDITS_MAX)
		net->me.tun.peer_credits = O2IB_CREDITS_MAX;
	net->me.tun.max_frags = (uint16_t)net->tun.max_frags;
	net->me.tun.max_qp_wr = net->fab->dev_limits(net->dev)->max_qp_wr;
	ULNET_LOG(O2IB, INFO, "%s: %s provider, port %d, queue depth %u", o2ib_nid_str(nid, ns, sizeof(ns)),
		  net->fab->name, net->tun.port, net->me.tun.peer_credits);
	return 0;
fail:
	net->fab->dev_close(net->dev); /* destroys the listener too */
	net->dev = NULL;
	return rc;
}

static void fail_txq(struct o2ib_net *net, struct ulnet_list *q, int status)
{
	while (!ulnet_list_empty(q)) {
		struct o2ib_tx *tx = ulnet_container_of(q->next, struct o2ib_tx, link);

		ulnet_list_del(&tx->link);
		o2ib_tx_done(net, tx, status);
	}
}

static void o2iblnd_shutdown(struct ulnet_ni *ni)
{
	struct o2ib_net *net = net_of(ni);

	net->shutting_down = true;
	ulnet__io_stop(ulnet__ni_node(ni), &net->io);
	/* pending conns first: they may name a peer freed below (a losing race, a passive conn) */
	while (!ulnet_list_empty(&net->pending))
		o2ib_conn_close(ulnet_container_of(net->pending.next, struct o2ib_conn, link), -ESHUTDOWN, NULL);
	for (unsigned b = 0; b < O2IB_PEER_BUCKETS; b++)
		while (!ulnet_list_empty(&net->peers[b])) {
			struct o2ib_peer *peer = ulnet_container_of(net->peers[b].next, struct o2ib_peer, link);

			while (!ulnet_list_empty(&peer->conns))
				o2ib_conn_close(ulnet_container_of(peer->conns.next, struct o2ib_conn, peer_link),
						-ESHUTDOWN, NULL);
			fail_txq(net, &peer->txq, -ESHUTDOWN);
			/* closed conns wait in zombies until reaped: none may keep pointing at the peer */
			for (struct ulnet_list *p = net->zombies.next; p != &net->zombies; p = p->next) {
				struct o2ib_conn *conn = ulnet_container_of(p, struct o2ib_conn, link);

				if (conn->peer == peer)
					conn->peer = NULL;
			}
			peer_forget(net, peer);
		}
	o2ib_reap_zombies(net); /* with shutting_down set, frees every closed conn */
	ulnet__timer_cancel(ulnet__ni_node(net->ni), &net->pending_timer);
	ulnet__timer_cancel(ulnet__ni_node(net->ni), &net->reap_timer);
	o2ib_bounce_pool_free(net);
	o2ib_reg_cache_free(net);
	net->fab->dev_close(net->dev);
	net->dev = NULL;
}

/* ---- send and receive ---- */

static int send_immediate(struct o2ib_peer *peer, struct ulnet_msg *msg)
{
	const struct ulnet_msg_lnd_view *v = ulnet__msg_view(msg);
	uint32_t nob = v->hdr.payload_length;
	struct o2ib_tx *tx = o2ib_tx_new(peer->net, O2IB_MSG_IMMEDIATE);

	if (!tx)
		return -ENOMEM;
	ulnet__iov_to_flat(tx->payload, v->iov, v->niov, nob);
	tx->msg.u.immediate.hdr = v->hdr;
	tx->msg.u.immediate.payload = tx->payload;
	tx->msg.u.immediate.payload_len = nob;
	tx->lntmsg = msg;
	o2ib_peer_queue(peer, tx);
	return 0;
}

static int o2iblnd_send(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg)
{
	struct o2ib_net *net = net_of(ni);
	const struct ulnet_msg_lnd_view *v = ulnet__msg_view(msg);
	uint32_t nob = v->hdr.payload_length;
	struct o2ib_peer *peer;

	(void)rx_priv;
	peer = o2ib_peer_find(net, &v->target.nid, true);
	if (!peer)
		return -ENOMEM;
	/* o2iblnd's rule: RDMA when the payload, or a GET's sink, does not fit an IMMEDIATE; but a
	 * GET through a gateway goes IMMEDIATE (a router cannot expose our sink: its REPLY comes back as
	 * a message of its own) */
	if (nob > O2IB_IMMEDIATE_MAX_PAYLOAD ||
	    (v->hdr.type == ULNET_MSG_GET && v->rdma_len > O2IB_IMMEDIATE_MAX_PAYLOAD &&
	     ulnet__nid_equal(&v->hdr.dest_nid, &v->target.nid)))
		return o2ib_send_rdma(net, peer, msg);
	return send_immediate(peer, msg);
}

static int o2iblnd_recv(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, const struct iovec *iov,
			unsigned niov, uint32_t mlen, uint32_t rlen)
{
	struct o2ib_rx *rx = rx_priv;

	(void)rlen;
	rx->held = false;
	rx->conn->rx_held--;
	if (rx->msg.type == O2IB_MSG_PUT_REQ || rx->msg.type == O2IB_MSG_GET_REQ)
		return o2ib_recv_rdma(net_of(ni), rx, msg, iov, niov, mlen);
	if (msg) {
		ulnet__iov_from_flat(iov, niov, rx->msg.u.immediate.payload, mlen);
		ulnet__finalize(msg, 0);
	}
	o2ib_rx_repost(rx, true);
	return 0;
}

/* How long a peer's timer may sleep: half its shortest period, so that whatever starts meanwhile (a
 * message queued or posted, a conn that goes quiet) is looked at before its own deadline. */
static uint64_t peer_look_ns(const struct o2ib_net *net)
{
	uint64_t p = (uint64_t)net->tun.timeout;

	if (net->tun.keepalive > 0 && (uint64_t)net->tun.keepalive < p)
		p = (uint64_t)net->tun.keepalive;
	return p * NS_PER_S / 2;
}

void o2ib_peer_timer_by(struct o2ib_peer *peer, uint64_t deadline)
{
	ulnet__timer_arm_by(ulnet__ni_node(peer->net->ni), &peer->timer, deadline);
}

/* The peer's next deadline after @now: its conn's, its queue's head, a reconnect, being forgotten. */
static uint64_t peer_next_deadline(const struct o2ib_peer *peer, uint64_t now)
{
	const struct o2ib_net *net = peer->net;
	uint64_t next = now + peer_look_ns(net), c[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX };

	if (!peer_busy(peer))
		c[0] = peer->busy_ns + (uint64_t)net->tun.timeout * NS_PER_S;
	else if (peer->nup)
		for (const struct ulnet_list *p = peer->conns.next; p != &peer->conns; p = p->next) {
			uint64_t d = o2ib_conn_next_deadline(ulnet_container_of(p, struct o2ib_conn, peer_link));

			if (d < c[0])
				c[0] = d;
		}
	else if (peer->connecting)
		; /* each attempt has its own timeout (the fabric's) */
	else if (!ulnet_list_empty(&peer->txq)) {
		c[0] = ulnet_container_of(peer->txq.next, struct o2ib_tx, link)->deadline_ns;
		if (!peer->accepting)
			c[1] = peer->retry_at_ns;
	}
	return ulnet__deadline_next(now, next, c, 3);
}

/* Timeouts, keepalives and reconnects of one peer; an idle one is forgotten after the timeout (its
 * incarnation and version help a quick reconnect for a while only). */
static void peer_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now_node)
{
	struct o2ib_peer *peer = ulnet_container_of(t, struct o2ib_peer, timer);
	struct o2ib_net *net = peer->net;
	uint64_t now = ulnet__now_ns(); /* the peer's stamps are on this clock */
	char ns[ULNET_NID_STRLEN];

	(void)node, (void)now_node;
	if (!peer_busy(peer)) {
		if (now >= peer->busy_ns + (uint64_t)net->tun.timeout * NS_PER_S) {
			peer_forget(net, peer);
			return;
		}
		o2ib_peer_timer_by(peer, peer_next_deadline(peer, now));
		return;
	}
	peer->busy_ns = now;
	if (peer->nup) {
		/* a tick may close its conn (off the list): look again from the start after each close */
		for (struct ulnet_list *p = peer->conns.next; p != &peer->conns;) {
			struct o2ib_conn *c = ulnet_container_of(p, struct o2ib_conn, peer_link);

			p = p->next;
			o2ib_conn_tick(c, now);
			if (c->state == O2IB_CONN_CLOSING)
				p = peer->conns.next;
		}
	} else if (!peer->connecting && !ulnet_list_empty(&peer->txq)) {
		if (ulnet_container_of(peer->txq.next, struct o2ib_tx, link)->deadline_ns <= now) {
			ULNET_LOG(O2IB, ERR, "%s: no connection within %d s (lnd tunable timeout); failing its "
				  "queued messages", o2ib_nid_str(&peer->nid, ns, sizeof(ns)), net->tun.timeout);
			fail_txq(net, &peer->txq, -ETIMEDOUT);
			peer->act.attempts = 0; /* the next message starts afresh */
			ulnet__peer_down(net->ni, &peer->nid, -ETIMEDOUT);
		} else if (now >= peer->retry_at_ns && !peer->accepting) {
			o2ib_connect(peer);
		}
	}
	o2ib_peer_timer_by(peer, peer_next_deadline(peer, now));
}

static void pending_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now)
{
	struct o2ib_net *net = ulnet_container_of(t, struct o2ib_net, pending_timer);
	uint64_t next = o2ib_pending_tick(net, ulnet__now_ns());

	(void)now;
	if (next != UINT64_MAX)
		ulnet__timer_arm_by(node, t, next);
}

static void reap_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now)
{
	struct o2ib_net *net = ulnet_container_of(t, struct o2ib_net, reap_timer);

	(void)now;
	o2ib_reap_zombies(net);
	if (!ulnet_list_empty(&net->zombies))
		ulnet__timer_arm_by(node, t, ulnet__now_ns() + O2IB_REAP_NS);
}

static int o2iblnd_query_peer(struct ulnet_ni *ni, const struct ulnet_nid *nid, struct ulnet_peer_limits *out)
{
	struct o2ib_peer *peer = o2ib_peer_find(net_of(ni), nid, false);

	if (!peer || !peer->have_limits)
		return -ENOENT;
	*out = peer->limits;
	out->conns = peer->nup;
	out->conns_used = 0;
	for (const struct ulnet_list *p = peer->conns.next; p != &peer->conns; p = p->next) {
		const struct o2ib_conn *c = ulnet_container_of(p, struct o2ib_conn, peer_link);

		out->conns_used += c->state == O2IB_CONN_ESTABLISHED && c->tx_msgs && c->rx_msgs;
	}
	return 0;
}

static int o2iblnd_peer_rdma_stats(struct ulnet_ni *ni, const struct ulnet_nid *nid,
				   struct ulnet_peer_rdma_stats *out)
{
	struct o2ib_peer *peer = o2ib_peer_find(net_of(ni), nid, false);

	if (!peer)
		return -ENOENT;
	*out = peer->stats;
	return 0;
}

static void o2iblnd_fabric_info(struct ulnet_ni *ni, struct ulnet_ni_fabric *out)
{
	struct o2ib_net *net = net_of(ni);
	const struct fab_limits *lim = net->fab->dev_limits(net->dev);

	snprintf(out->provider, sizeof(out->provider), "%s", net->fab->name);
	out->max_send_sge = lim->max_send_sge;
	out->max_recv_sge = lim->max_recv_sge;
	out->max_qp_wr = lim->max_qp_wr;
	out->max_qp = lim->max_qp;
	out->max_mr = lim->max_mr;
	out->max_mr_size = lim->max_mr_size;
	out->max_msg_sz = lim->max_msg_sz;
	out->page_size = lim->page_size;
	out->copy_thread = lim->copy_thread;
}

/* Memory the provider moves fastest (shm: memfd the peer maps); the provider's allocator is global,
 * so the buffer outlives this NI. */
static void *o2iblnd_mem_alloc(struct ulnet_ni *ni, size_t align, size_t len, void (**free_fn)(void *p, size_t len))
{
	const struct fab_provider_ops *fab = net_of(ni)->fab;

	if (!fab->mem_alloc || !fab->mem_free)
		return NULL;
	*free_fn = fab->mem_free;
	return fab->mem_alloc(align, len);
}

const struct ulnet_lnd_ops ulnet__o2iblnd_ops = {
	.lnd_type = ULNET_LND_O2IB,
	.lnd_name = "o2ib",
	.lnd_ni_size = sizeof(struct o2ib_net),
	.lnd_startup = o2iblnd_startup,
	.lnd_shutdown = o2iblnd_shutdown,
	.lnd_send = o2iblnd_send,
	.lnd_recv = o2iblnd_recv,
	.lnd_tunables = o2ib_tunables,
	.lnd_n_tunables = N_TUNABLES,
	.lnd_query_peer = o2iblnd_query_peer,
	.lnd_peer_rdma_stats = o2iblnd_peer_rdma_stats,
	.lnd_fabric_info = o2iblnd_fabric_info,
	.lnd_mem_alloc = o2iblnd_mem_alloc,
	.lnd_md_unlinked = o2ib_md_unlinked,
	.lnd_mem_freed = o2ib_mem_freed,
	.lnd_fault_changed = o2ib_fault_changed,
};
