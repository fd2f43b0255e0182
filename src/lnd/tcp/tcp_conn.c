/* SPDX-License-Identifier: MIT */
/* One tcp LND connection: the socket adapter around the sans-I/O machines of tcp_fsm.c. It owns the
 * fd, the io watcher, the tx queue and the close path; it does not decide which connections should
 * exist (tcp_lnd.c does).
 *
 * ulnet__finalize() only queues (completions are deferred to the loop), so nothing here is re-entered
 * through it. ulnet__parse() still calls lnd_recv() and, for a GET, lnd_send() before it returns; that
 * may queue on this very conn or close it, so the rx loop re-checks conn->state after it.
 * A closed conn is not freed at once: close may run inside the conn's own io callback, which still
 * touches the conn after it returns, and the core may hold a header of ours and owe lnd_recv
 * (recv_owed) with the conn as rx_priv. It waits on net->closed until the net's reap timer finds it
 * unused (tcp_lnd.c), and longer while that lnd_recv is owed.
 *
 * Each conn has one timer, armed at its next deadline: the handshake's, half the timeout and the
 * timeout of a stalled message (rx or tx), or at most half the timeout from now to look again. A
 * stall that starts between two looks is seen at the next one, which is never more than half the
 * timeout later, and arms its exact deadline: every deadline is kept to the nanosecond without
 * re-arming on every byte.
 *
 * Only conn_io_cb calls the socket (readv, sendmsg, the handshake's send/recv), at its top level.
 * Everything else that wants bytes out (lnd_send, ZC-ACKs, the HELLO reply) queues them and kicks the
 * watcher (conn_tx_kick), so no socket call runs inside a core call. The NI's loop owns the conn
 * throughout: nothing closes it while a socket call is under way. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fault_lnd.h"
#include "tcp.h"

#define RX_BUDGET (8u << 20) /* bytes per io callback before yielding to other fds */

const char *tcplnd_conn_state_name(enum tcplnd_conn_state s)
{
	switch (s) {
	case TCPLND_CONN_CONNECTING: return "CONNECTING";
	case TCPLND_CONN_HELLO_TX: return "HELLO_TX";
	case TCPLND_CONN_HELLO_RX: return "HELLO_RX";
	case TCPLND_CONN_UP: return "UP";
	case TCPLND_CONN_CLOSING: return "CLOSING";
	}
	return "?";
}

static void conn_set_state(struct tcplnd_conn *conn, enum tcplnd_conn_state next)
{
	ULNET_LOG(TCP, DEBUG, "%s: %s -> %s", conn->name, tcplnd_conn_state_name(conn->state),
		  tcplnd_conn_state_name(next));
	conn->state = next;
}

static void addr_str(const struct sockaddr_storage *ss, char *buf, size_t len, uint16_t *port)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)ss;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		*port = ntohs(in->sin_port);
		snprintf(buf, len, "%s:%u", ip, *port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		*port = ntohs(in6->sin6_port);
		snprintf(buf, len, "[%s]:%u", ip, *port);
	} else {
		*port = 0;
		snprintf(buf, len, "?");
	}
}

void tcplnd_conn_name(struct tcplnd_conn *conn)
{
	char a[64], n[ULNET_NID_STRLEN];

	addr_str(&conn->raddr, a, sizeof(a), &conn->rport);
	if (conn->peer)
		snprintf(conn->name, sizeof(conn->name), "%s(%s %s%s)", ulnet_nid_format(&conn->peer->nid, n, sizeof(n)),
			 a, conn->passive ? "<-" : "->", tcplnd_ctype_name(conn->ctype));
	else
		snprintf(conn->name, sizeof(conn->name), "%s", a);
}

void tcplnd_log_bad(struct tcplnd_conn *conn, const char *what, const struct ulnet_wire_err *err)
{
	ULNET_LOG(TCP, ERR, "%s: %s: bad %s %llu (0x%llx) at byte %zu, limit %llu; closing", conn->name, what,
		  err->field ? err->field : "?", (unsigned long long)err->got, (unsigned long long)err->got,
		  err->offset, (unsigned long long)err->limit);
}

static void conn_io_cb(struct ulnet_io *io, uint32_t revents);
static int conn_spin(struct ulnet_io *io);
static void conn_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now);

struct tcplnd_conn *tcplnd_conn_new(struct tcplnd_net *net, int fd, bool passive)
{
	struct tcplnd_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	conn->net = net;
	conn->passive = passive;
	conn->io.fd = fd;
	conn->io.cb = conn_io_cb;
	conn->io.spin = conn_spin;
	conn->io.data = conn;
	conn->ctype = TCPLND_CONN_NONE;
	ulnet_list_init(&conn->plink);
	ulnet_list_init(&conn->txq);
	conn->raddrlen = sizeof(conn->raddr);
	if (passive && getpeername(fd, (struct sockaddr *)&conn->raddr, &conn->raddrlen) < 0)
		conn->raddr.ss_family = AF_UNSPEC;
	tcplnd_conn_name(conn);
	ulnet_list_add_tail(&conn->link, &net->conns);
	net->n_conns++;
	conn->rx_progress = conn->tx_progress = ulnet__now_ns();
	conn->timer.fn = conn_timer_fire;
	return conn;
}

void tcplnd_conn_free(struct tcplnd_conn *conn)
{
	ulnet__timer_cancel(conn->net->node, &conn->timer);
	if (conn->peer && !conn->net->shutting_down) /* at shutdown the peers are gone first */
		conn->peer->n_closed--;
	ulnet_list_del(&conn->link);
	free(conn->rx_iov);
	free(conn->ra);
	free(conn->rx);
	free(conn);
}

/* What the watcher listens for follows from the state; no interest at all removes it. */
void tcplnd_conn_update_io(struct tcplnd_conn *conn)
{
	uint32_t ev = 0;
	int rc;

	switch (conn->state) {
	case TCPLND_CONN_CONNECTING:
	case TCPLND_CONN_HELLO_TX:
		ev = EPOLLOUT;
		break;
	case TCPLND_CONN_HELLO_RX:
		ev = EPOLLIN;
		break;
	case TCPLND_CONN_UP:
		if (conn->stalled)
			break; /* a stall fault rule: no reads, no writes */
		if (conn->rx->state != TCPLND_RX_PARSE_WAIT)
			ev |= EPOLLIN;
		/* output kicked for this turn needs no EPOLLOUT (two epoll_ctl a message when a reply is
		 * queued inside the rx callback): the flush asks for it if the socket is full */
		if (!ulnet_list_empty(&conn->txq) &&
		    (!(conn->io.kicked && (conn->io.kick_events & EPOLLOUT)) || (conn->io.events & EPOLLOUT)))
			ev |= EPOLLOUT;
		break;
	case TCPLND_CONN_CLOSING:
		return;
	}
	if (!ev) {
		ulnet__io_stop(conn->net->node, &conn->io);
		return;
	}
	rc = ulnet__io_start(conn->net->node, &conn->io, ev);
	if (rc)
		ULNET_LOG(TCP, ERR, "%s: epoll: %s", conn->name, strerror(-rc));
}

static void conn_close_fail(struct tcplnd_conn *conn, int rc);

void tcplnd_conn_close(struct tcplnd_conn *conn, int rc, const char *why)
{
	struct tcplnd_net *net = conn->net;
	enum tcplnd_conn_state prev = conn->state;

	if (prev == TCPLND_CONN_CLOSING)
		return;
	if (why)
		ULNET_LOG(TCP, ERR, "%s: %s; closing", conn->name, why);
	else
		ULNET_LOG(TCP, DEBUG, "%s: closing (%s)", conn->name, strerror(rc < 0 ? -rc : rc));
	conn_set_state(conn, TCPLND_CONN_CLOSING);
	ulnet__io_stop(net->node, &conn->io);
	if (conn->io.fd >= 0) {
		close(conn->io.fd);
		conn->io.fd = -1;
	}

	/* unhook first, so what the finalizations below send cannot land here */
	tcplnd_conn_hello_list_del(conn);
	if (conn->peer) {
		if (prev == TCPLND_CONN_UP)
			tcplnd_peer_conn_down(conn->peer, conn);
		else if (!conn->passive) {
			conn->peer->n_connecting[conn->ctype]--;
			tcplnd_peer_connect_failed(conn->peer, rc, false, false);
		}
	}
	ulnet__timer_cancel(net->node, &conn->timer);
	ulnet_list_del(&conn->link);
	ulnet_list_add_tail(&conn->link, &net->closed);
	net->n_conns--;
	if (conn->peer)
		conn->peer->n_closed++;
	ulnet__timer_arm_by(net->node, &net->reap_timer, ulnet__now_ns() + TCPLND_REAP_NS);
	conn_close_fail(conn, rc);
}

/* The last part of a close: fail what the conn still holds (queued txs, the message being received). */
static void conn_close_fail(struct tcplnd_conn *conn, int rc)
{
	struct ulnet_list done, *p, *tmp;

	ulnet_list_init(&done);
	ulnet_list_splice_tail_init(&conn->txq, &done);
	conn->tx_queued_nob = 0;
	if (conn->rx && conn->rx->msg) {
		void *msg = conn->rx->msg;

		conn->rx->msg = NULL;
		ulnet__finalize(msg, rc);
	}
	ulnet_list_for_each_safe(p, tmp, &done) {
		struct tcplnd_tx *tx = ulnet_container_of(p, struct tcplnd_tx, link);

		ulnet_list_del(p);
		if (tx->msg)
			ulnet__finalize(tx->msg, rc);
		tcplnd_tx_free(conn->net, tx);
	}
}

/* Output was queued: the io callback writes it, in this loop turn (never from inside the caller,
 * which may be a core call holding state across it). */
static void conn_tx_kick(struct tcplnd_conn *conn)
{
	if (conn->state == TCPLND_CONN_UP)
		ulnet__io_kick_events(conn->net->node, &conn->io, EPOLLOUT);
}

/* After a failed socket call: 0 = it would block (stop for now), 1 = interrupted (retry), -1 = the
 * connection is closed, with "@what: <error>" as the reason unless @quiet. EPIPE and ECONNRESET both
 * read as -ECONNRESET for the messages that fail with it. */
static int conn_sock_error(struct tcplnd_conn *conn, const char *what, const char *detail, bool quiet)
{
	int err = errno;
	char why[200];

	if (err == EAGAIN || err == EWOULDBLOCK)
		return 0;
	if (err == EINTR)
		return 1;
	snprintf(why, sizeof(why), "%s: %s%s", what, strerror(err), detail ? detail : "");
	tcplnd_conn_close(conn, err == EPIPE || err == ECONNRESET ? -ECONNRESET : -err, quiet ? NULL : why);
	return -1;
}

/* ---- handshake ---- */

static void conn_hello_flush(struct tcplnd_conn *conn)
{
	while (conn->hello_done < conn->hello_len) {
		ssize_t r;

		r = send(conn->io.fd, conn->hello_out + conn->hello_done, conn->hello_len - conn->hello_done,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r < 0) {
			if (conn_sock_error(conn, "sending the handshake", NULL, conn->close_after_tx) == 1)
				continue;
			return;
		}
		conn->hello_done += (size_t)r;
	}
	if (conn->close_after_tx) {
		/* a NONE or version reply: the peer retries or gives up */
		tcplnd_conn_close(conn, -ECONNABORTED, NULL);
		return;
	}
	conn_set_state(conn, TCPLND_CONN_HELLO_RX);
	tcplnd_hs_init(&conn->hs, false);
	tcplnd_conn_update_io(conn);
}

/* Reply with @len bytes of @buf and close once they are out. */
void tcplnd_conn_hello_list_del(struct tcplnd_conn *conn)
{
	if (conn->in_hello_list) {
		ulnet_list_del(&conn->plink);
		conn->net->n_hello--;
		conn->in_hello_list = false;
	}
}

static void conn_reply_close(struct tcplnd_conn *conn, const uint8_t *buf, size_t len)
{
	tcplnd_conn_hello_list_del(conn);
	memcpy(conn->hello_out, buf, len);
	conn->hello_len = len;
	conn->hello_done = 0;
	conn->close_after_tx = true;
	conn_set_state(conn, TCPLND_CONN_HELLO_TX);
	/* written by the io callback when the socket is writable (at once: it is) */
	tcplnd_conn_update_io(conn);
}

/* Our own HELLO with ctype NONE, in @proto: "lost the race / duplicate / retry". */
static void conn_reply_none(struct tcplnd_conn *conn, uint32_t proto, const struct ulnet_nid *dst)
{
	struct tcplnd_hello h;
	uint8_t buf[TCPLND_HELLO_NID16_SIZE];
	int n;

	tcplnd_fill_hello(conn->net, &h, proto, dst, TCPLND_CONN_NONE);
	n = tcplnd_hello_pack(&h, buf, sizeof(buf));
	if (n < 0) {
		tcplnd_conn_close(conn, -EPROTO, NULL);
		return;
	}
	conn_reply_close(conn, buf, (size_t)n);
}

void tcplnd_conn_reply_none(struct tcplnd_conn *conn, uint32_t proto, const struct ulnet_nid *dst)
{
	conn_reply_none(conn, proto, dst);
}

static void conn_hs_error(struct tcplnd_conn *conn, int rc)
{
	struct tcplnd_hs *hs = &conn->hs;
	uint8_t buf[TCPLND_ACCEPTOR_V1_SIZE];

	switch (hs->state) {
	case TCPLND_HS_CONNREQ_PEEK:
	case TCPLND_HS_CONNREQ:
		if (rc == -EPROTONOSUPPORT ||
		    (hs->err.got == TCPLND_PROTO_MAGIC || hs->err.got == ulnet_swab32(TCPLND_PROTO_MAGIC))) {
			/* a newer acceptor protocol (or a unified-magic query): tell it ours */
			tcplnd_log_bad(conn, "acceptor request (answering with version 1)", &hs->err);
			tcplnd_connreq_pack_version(buf);
			conn_reply_close(conn, buf, sizeof(buf));
			return;
		}
		tcplnd_log_bad(conn, "acceptor request", &hs->err);
		break;
	default:
		if (rc == -EPROTONOSUPPORT && conn->passive) {
			/* unknown HELLO version: send ours (it tells the peer what we speak) and close */
			tcplnd_log_bad(conn, "HELLO (answering with ours)", &hs->err);
			conn_reply_none(conn, conn->net->nid.size ? TCPLND_PROTO_V4 : TCPLND_PROTO_V3, &conn->net->nid);
			return;
		}
		tcplnd_log_bad(conn, "HELLO", &hs->err);
		break;
	}
	tcplnd_conn_close(conn, -EPROTO, NULL);
}

static void conn_hello_rx(struct tcplnd_conn *conn)
{
	while (conn->state == TCPLND_CONN_HELLO_RX) {
		uint8_t *buf;
		size_t want = tcplnd_hs_buf(&conn->hs, &buf);
		ssize_t r;
		int ev;

		if (!want)
			return;
		r = recv(conn->io.fd, buf, want, MSG_DONTWAIT);
		if (r < 0) {
			if (conn_sock_error(conn, "handshake read", NULL, false) == 1)
				continue;
			return;
		}
		if (r == 0) {
			char why[160];

			snprintf(why, sizeof(why), "peer closed the connection during the handshake (%zu of %zu bytes of "
				 "%s)", conn->hs.done, conn->hs.want,
				 conn->hs.state <= TCPLND_HS_CONNREQ ? "the acceptor request" : "the HELLO");
			tcplnd_conn_close(conn, -ECONNRESET, why);
			return;
		}
		ev = tcplnd_hs_advance(&conn->hs, (size_t)r);
		if (ev < 0) {
			conn_hs_error(conn, ev);
			return;
		}
		if (ev == TCPLND_HS_EV_CONNREQ && !ulnet__nid_equal(&conn->hs.connreq.nid, &conn->net->nid)) {
			char why[200], a[ULNET_NID_STRLEN], b[ULNET_NID_STRLEN];

			snprintf(why, sizeof(why), "acceptor request for %s: no matching NI (this one is %s)",
				 ulnet_nid_format(&conn->hs.connreq.nid, a, sizeof(a)),
				 ulnet_nid_format(&conn->net->nid, b, sizeof(b)));
			tcplnd_conn_close(conn, -EPERM, why);
			return;
		}
		if (ev == TCPLND_HS_EV_HELLO) {
			tcplnd_hello_done(conn);
			return;
		}
	}
}

/* ---- tx ---- */

static size_t tx_size(unsigned niov)
{
	return sizeof(struct tcplnd_tx) + (size_t)niov * sizeof(struct iovec);
}

struct tcplnd_tx *tcplnd_tx_new(struct tcplnd_net *net, unsigned niov)
{
	struct tcplnd_tx *tx = ulnet__desc_get(net->node, tx_size(niov));

	if (tx)
		tx->iov_cap = niov;
	return tx;
}

void tcplnd_tx_free(struct tcplnd_net *net, struct tcplnd_tx *tx)
{
	ulnet__desc_put(net->node, tx, tx_size(tx->iov_cap));
}

/* Prepare @tx for this conn's protocol: the header it carries and its iovec window. */
static int tx_prep(struct tcplnd_conn *conn, struct tcplnd_tx *tx)
{
	const struct ulnet_msg_lnd_view *v;
	size_t hlen = 0;
	unsigned i;

	tx->niov = 1;
	tx->iov_first = 0;
	if (tx->raw) {
		tx->iov[0].iov_base = tx->hdr;
		tx->iov[0].iov_len = tx->nob;
		return 0;
	}
	if (!tx->msg) { /* NOOP (V2+) */
		tx->iov[0].iov_base = tx->hdr;
		tx->iov[0].iov_len = TCPLND_MSG_HDR_SIZE;
		tx->nob = TCPLND_MSG_HDR_SIZE;
		return 0;
	}
	v = ulnet__msg_view(tx->msg);
	if (conn->proto == TCPLND_PROTO_V1) {
		if (ulnet_hdr_pack_nid4(&v->hdr, tx->hdr))
			return -EPROTO;
		hlen = ULNET_HDR_NID4_SIZE;
	} else if (conn->proto >= TCPLND_PROTO_V4) {
		ulnet_hdr_pack_nid16(&v->hdr, tx->hdr + TCPLND_MSG_HDR_SIZE);
		hlen = TCPLND_MSG_HDR_SIZE + ULNET_HDR_NID16_SIZE;
	} else {
		if (ulnet_hdr_pack_nid4(&v->hdr, tx->hdr + TCPLND_MSG_HDR_SIZE))
			return -EPROTO;
		hlen = TCPLND_MSG_HDR_SIZE + ULNET_HDR_NID4_SIZE;
	}
	tx->iov[0].iov_base = tx->hdr;
	tx->iov[0].iov_len = hlen;
	tx->nob = (uint32_t)hlen;
	for (i = 0; i < tx->npiov; i++)
		tx->nob += (uint32_t)tx->piov[i].iov_len;
	tx->niov += tcplnd_iov_coalesce(tx->iov + 1, tx->piov, tx->npiov);
	return 0;
}

/* First time @tx goes into a writev: settle its ksock header (piggybacked ZC-ACK, checksum). */
static void tx_freeze(struct tcplnd_conn *conn, struct tcplnd_tx *tx)
{
	uint64_t c[2];

	tx->started = true;
	if (conn->proto == TCPLND_PROTO_V1 || tx->raw)
		return;
	if (!tx->msg) {
		if (tx->kh.zc_cookies[1] == 0 && tcplnd_zcack_take(&conn->zcacks, conn->proto, c)) {
			tx->kh.zc_cookies[0] = c[0];
			tx->kh.zc_cookies[1] = c[1];
		}
	} else if (tx->kh.zc_cookies[1] == 0 && tcplnd_zcack_take(&conn->zcacks, TCPLND_PROTO_V2, c)) {
		tx->kh.zc_cookies[1] = c[1];
	}
	tx->kh.csum = 0;
	tcplnd_msg_hdr_pack(&tx->kh, tx->hdr);
	if (conn->proto == TCPLND_PROTO_V2 && conn->net->tun.enable_csum) {
		uint32_t crc = ~0u;
		unsigned i;

		for (i = 0; i < tx->niov; i++)
			crc = tcplnd_crc32(crc, tx->iov[i].iov_base, tx->iov[i].iov_len);
		tx->kh.csum = crc;
		tcplnd_msg_hdr_pack(&tx->kh, tx->hdr);
	}
}

/* Append @tx to the tx queue without writing; false if it was dropped (and finalized). */
static bool conn_enqueue(struct tcplnd_conn *conn, struct tcplnd_tx *tx)
{
	if (tx_prep(conn, tx)) {
		char n[ULNET_NID_STRLEN];

		ULNET_LOG(TCP, ERR, "%s: a NID of the message does not fit protocol V%u (dest %s); dropping it",
			  conn->name, conn->proto, ulnet_nid_format(&ulnet__msg_view(tx->msg)->hdr.dest_nid, n, sizeof(n)));
		ulnet__finalize(tx->msg, -EPROTO);
		tcplnd_tx_free(conn->net, tx);
		return false;
	}
	if (ulnet_list_empty(&conn->txq))
		conn->tx_progress = ulnet__now_coarse_ns(); /* progress stamps: timeouts count in seconds */
	ulnet_list_add_tail(&tx->link, &conn->txq);
	conn->tx_queued_nob += tx->nob;
	return true;
}

/* A NOOP carrying ZC-ACK cookies; {0, 0} is the carrier that takes them when it goes out. */
static struct tcplnd_tx *noop_tx_new(struct tcplnd_conn *conn, uint64_t c0, uint64_t c1)
{
	struct tcplnd_tx *tx = tcplnd_tx_new(conn->net, 1);

	if (!tx) {
		ULNET_LOG(TCP, ERR, "%s: no memory for a NOOP", conn->name);
		return NULL;
	}
	tx->kh.type = TCPLND_MSG_NOOP;
	tx->kh.zc_cookies[0] = c0;
	tx->kh.zc_cookies[1] = c1;
	if (c1 == 0) {
		tx->carrier = true; /* the ZC-ACK carrier: cookies are taken when it goes out */
		conn->noop_queued = true;
	}
	return tx;
}

static void conn_flush(struct tcplnd_conn *conn)
{
	struct iovec v[TCPLND_TX_BATCH_IOV];
	struct ulnet_list done, *p, *tmp;

	if (conn->state != TCPLND_CONN_UP)
		return;
	while (conn->state == TCPLND_CONN_UP && !ulnet_list_empty(&conn->txq)) {
		struct msghdr mh = { .msg_iov = v };
		size_t total = 0, left;
		unsigned n = 0, i;
		ssize_t r;

		for (p = conn->txq.next; p != &conn->txq && n < TCPLND_TX_BATCH_IOV; p = p->next) {
			struct tcplnd_tx *tx = ulnet_container_of(p, struct tcplnd_tx, link);
			bool raw = tx->raw;

			if (!tx->started)
				tx_freeze(conn, tx);
			for (i = 0; i < tx->niov && n < TCPLND_TX_BATCH_IOV; i++) {
				v[n++] = tx->iov[tx->iov_first + i];
				total += tx->iov[tx->iov_first + i].iov_len;
			}
			/* the HELLO reply goes out on its own, so the first message starts a segment (tshark) */
			if (raw)
				break;
		}
		mh.msg_iovlen = n;
		r = sendmsg(conn->io.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			if (e == EAGAIN || e == EWOULDBLOCK)
				break;
			conn_sock_error(conn, "write", NULL, false);
			return;
		}
		conn->tx_progress = ulnet__now_coarse_ns();
		ulnet_list_init(&done);
		for (left = (size_t)r; left;) {
			struct tcplnd_tx *tx = ulnet_list_first(&conn->txq, struct tcplnd_tx, link);
			struct iovec *iv = &tx->iov[tx->iov_first];

			if (left >= iv->iov_len) {
				left -= iv->iov_len;
				tx->iov_first++;
				tx->niov--;
			} else {
				iv->iov_base = (uint8_t *)iv->iov_base + left;
				iv->iov_len -= left;
				left = 0;
			}
			if (!tx->niov) {
				ulnet_list_del(&tx->link);
				ulnet_list_add_tail(&tx->link, &done);
				conn->tx_queued_nob -= tx->nob;
			}
		}
		ulnet_list_for_each_safe(p, tmp, &done) {
			struct tcplnd_tx *tx = ulnet_container_of(p, struct tcplnd_tx, link);

			ulnet_list_del(p);
			if (tx->msg) {
				ulnet__finalize(tx->msg, 0);
			} else if (tx->carrier) {
				conn->noop_queued = false;
			}
			tcplnd_tx_free(conn->net, tx);
		}
		if (conn->state == TCPLND_CONN_UP && conn->proto != TCPLND_PROTO_V1 && conn->zcacks.n &&
		    !conn->noop_queued) {
			struct tcplnd_tx *noop = noop_tx_new(conn, 0, 0);

			/* this loop writes it: queueing through tcplnd_conn_queue would flush from inside a flush */
			if (noop)
				conn_enqueue(conn, noop);
		}
		if ((size_t)r < total)
			break;
	}
	if (conn->state == TCPLND_CONN_UP)
		tcplnd_conn_update_io(conn);
}

void tcplnd_conn_queue_hello(struct tcplnd_conn *conn, const struct tcplnd_hello *h, uint32_t fault_version)
{
	struct tcplnd_tx *tx = tcplnd_tx_new(conn->net, 1);
	int n;

	if (!tx) {
		tcplnd_conn_close(conn, -ENOMEM, "no memory for the HELLO reply");
		return;
	}
	n = tcplnd_hello_pack(h, tx->hdr, sizeof(tx->hdr));
	if (n < 0) {
		tcplnd_tx_free(conn->net, tx);
		tcplnd_conn_close(conn, -EPROTO, "cannot encode our HELLO reply");
		return;
	}
	if (fault_version)
		tcplnd_hello_set_version(tx->hdr, (size_t)n, fault_version);
	tx->raw = true;
	tx->nob = (uint32_t)n;
	/* ahead of everything: nothing may precede our HELLO on the wire */
	tx_prep(conn, tx);
	ulnet_list_add_head(&tx->link, &conn->txq);
	conn->tx_queued_nob += tx->nob;
	conn->tx_progress = ulnet__now_ns();
	conn_tx_kick(conn);
}

void tcplnd_conn_queue(struct tcplnd_conn *conn, struct tcplnd_tx *tx)
{
	/* written by the io callback later in this turn, together with what else gets queued by then
	 * (a batch of credits coming back in the completion phase goes out in one writev) */
	if (conn_enqueue(conn, tx))
		conn_tx_kick(conn);
}

void tcplnd_conn_queue_noop(struct tcplnd_conn *conn, uint64_t c0, uint64_t c1)
{
	struct tcplnd_tx *tx;

	if (conn->proto == TCPLND_PROTO_V1 || conn->state != TCPLND_CONN_UP)
		return;
	tx = noop_tx_new(conn, c0, c1);
	if (tx)
		tcplnd_conn_queue(conn, tx);
}

void tcplnd_conn_zcack(struct tcplnd_conn *conn, uint64_t cookie)
{
	struct ulnet_list *p;

	if (conn->state != TCPLND_CONN_UP)
		return;
	/* piggyback on a queued message whose header is not settled yet */
	for (p = conn->txq.next; p != &conn->txq; p = p->next) {
		struct tcplnd_tx *tx = ulnet_container_of(p, struct tcplnd_tx, link);

		if (!tx->started && tx->msg && tx->kh.zc_cookies[1] == 0) {
			tx->kh.zc_cookies[1] = cookie;
			return;
		}
	}
	while (tcplnd_zcack_add(&conn->zcacks, cookie) == -ENOSPC) {
		uint64_t c[2];

		/* full: settle a NOOP now */
		tcplnd_zcack_take(&conn->zcacks, conn->proto, c);
		tcplnd_conn_queue_noop(conn, c[0], c[1]);
		if (conn->state != TCPLND_CONN_UP)
			return;
	}
	if (!conn->noop_queued)
		tcplnd_conn_queue_noop(conn, 0, 0);
}

/* ---- rx ---- */

static void conn_rx_event(struct tcplnd_conn *conn, int ev)
{
	struct tcplnd_rx *rx = conn->rx;
	struct tcplnd_peer *peer = conn->peer;

	for (;;) {
		struct ulnet_hdr hdr;
		void *msg;
		int rc;

		if (ev < 0) {
			char what[64];

			snprintf(what, sizeof(what), "rx %s", tcplnd_rx_state_name(rx->state));
			tcplnd_log_bad(conn, what, &rx->err);
			tcplnd_conn_close(conn, -EPROTO, NULL);
			return;
		}
		switch (ev) {
		case TCPLND_RX_EV_HDR:
			hdr = rx->lhdr;
			if (peer->userflag) {
				/* a user-space peer is known by the address it connected from */
				hdr.src_nid = peer->nid;
				hdr.src_pid = peer->pid;
			}
			conn->recv_owed = true;
			conn->in_parse = true;
			rc = ulnet__parse(conn->net->ni, &hdr, &peer->nid, conn);
			conn->in_parse = false;
			if (rc < 0) {
				/* the core logged why */
				conn->recv_owed = false;
				tcplnd_conn_close(conn, -EPROTO, NULL);
				return;
			}
			if (conn->state != TCPLND_CONN_UP || rx->state == TCPLND_RX_PARSE_WAIT)
				return; /* closed meanwhile, or the receive was delayed */
			ev = tcplnd_rx_advance(rx, 0);
			continue;
		case TCPLND_RX_EV_DONE:
			msg = rx->msg;
			rx->msg = NULL;
			if (rx->status) {
				ULNET_LOG(TCP, ERR, "%s: checksum mismatch: wire 0x%08x, data 0x%08x; closing", conn->name,
					  rx->kh.csum, rx->data_crc);
				if (msg)
					ulnet__finalize(msg, rx->status);
				tcplnd_conn_close(conn, -EIO, NULL);
				return;
			}
			if (rx->zc_cookie)
				tcplnd_conn_zcack(conn, rx->zc_cookie);
			if (msg)
				ulnet__finalize(msg, 0);
			return;
		default: /* MORE, NOOP */
			return;
		}
	}
}

/* Copy read-ahead bytes into the rx machine's buffers; how many. */
static size_t ra_take(struct tcplnd_conn *conn, const struct iovec *iov, unsigned n)
{
	size_t got = 0;

	for (unsigned i = 0; i < n && conn->ra_off < conn->ra_len; i++) {
		size_t k = conn->ra_len - conn->ra_off;

		if (k > iov[i].iov_len)
			k = iov[i].iov_len;
		memcpy(iov[i].iov_base, conn->ra + conn->ra_off, k);
		conn->ra_off += (uint32_t)k;
		got += k;
	}
	return got;
}

/* Before waiting for the rest of a large payload: let the socket wake us only once a large part of it
 * is in (SO_RCVLOWAT), instead of for every segment that lands; back to 1 between messages. Only
 * bytes the peer is certain to send (the payload under way) are waited for, so this never stalls. */
static void conn_set_rcvlowat(struct tcplnd_conn *conn, int want)
{
	if (want == (conn->rcvlowat ? conn->rcvlowat : 1))
		return;
	if (setsockopt(conn->io.fd, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof(want)) == 0)
		conn->rcvlowat = want;
}

static void conn_rcvlowat(struct tcplnd_conn *conn)
{
	const struct tcplnd_rx *rx = conn->rx;
	int want = 1;

	if (rx->state == TCPLND_RX_PAYLOAD && rx->mlen_left >= TCPLND_RCVLOWAT_MIN)
		want = (int)(rx->mlen_left < TCPLND_RCVLOWAT_MAX ? rx->mlen_left : TCPLND_RCVLOWAT_MAX);
	conn_set_rcvlowat(conn, want);
}

/* Bytes came: the receive progress and the peer's liveness move on (timeouts count in seconds: the
 * coarse clock will do) */
static void conn_rx_stamp(struct tcplnd_conn *conn)
{
	uint64_t now = ulnet__now_coarse_ns();

	conn->rx_progress = now;
	conn->peer->last_alive = now;
}

static void conn_rx(struct tcplnd_conn *conn, uint32_t revents)
{
	size_t budget = RX_BUDGET;
	bool drained = conn->ra_short; /* a spin's read came short: the socket had no more */

	conn->ra_short = false;

	/* backlogged: what we read now only waits in the completion queue; epoll brings us back */
	while (conn->state == TCPLND_CONN_UP && budget && !ulnet__node_backlogged(conn->net->node)) {
		struct tcplnd_rx *rx = conn->rx;
		struct iovec *iov, v[TCPLND_RX_IOV_WINDOW + 1];
		unsigned n = tcplnd_rx_bufs(rx, &iov);
		size_t want = 0;
		ssize_t r;

		if (!n) {
			if ((revents & EPOLLHUP) && conn->ra_off == conn->ra_len)
				tcplnd_conn_close(conn, -ECONNRESET, NULL);
			break;
		}
		if (conn->ra_off < conn->ra_len) {
			size_t got = ra_take(conn, iov, n);

			conn_rx_event(conn, tcplnd_rx_advance(rx, got));
			continue;
		}
		if (drained)
			break; /* the last read came short: nothing more until epoll says so */
		for (unsigned i = 0; i < n; i++) {
			v[i] = iov[i];
			want += iov[i].iov_len;
		}
		v[n].iov_base = conn->ra;
		v[n].iov_len = TCPLND_RA_SIZE;
		r = readv(conn->io.fd, v, (int)(n + 1 < IOV_MAX ? n + 1 : IOV_MAX));
		if (r < 0) {
			char detail[48];
			int rc;

			snprintf(detail, sizeof(detail), " (rx %s)", tcplnd_rx_state_name(rx->state));
			rc = conn_sock_error(conn, "read", detail, false);
			if (rc == 1)
				continue;
			break;
		}
		if (r == 0) {
			char why[200];

			if (rx->started) {
				const char *what;
				size_t left = tcplnd_rx_missing(rx, &what);

				snprintf(why, sizeof(why), "peer closed the connection mid-message (rx %s, %zu %s bytes "
					 "missing)", tcplnd_rx_state_name(rx->state), left, what);
				tcplnd_conn_close(conn, -ECONNRESET, why);
			} else {
				ULNET_LOG(TCP, INFO, "%s: closed by the peer", conn->name);
				tcplnd_conn_close(conn, -ECONNRESET, NULL);
			}
			break;
		}
		drained = (size_t)r < want + TCPLND_RA_SIZE;
		if ((size_t)r > want) {
			conn->ra_off = 0;
			conn->ra_len = (uint32_t)((size_t)r - want);
			r = (ssize_t)want;
		}
		conn_rx_stamp(conn);
		budget = (size_t)r >= budget ? 0 : budget - (size_t)r;
		conn_rx_event(conn, tcplnd_rx_advance(rx, (size_t)r));
	}
	if (conn->state != TCPLND_CONN_UP)
		return;
	/* bytes read ahead wait on no epoll event: come back next turn (unless a delayed receive holds
	 * the stream; its lnd_recv resumes it) */
	if (conn->ra_off < conn->ra_len && conn->rx->state != TCPLND_RX_PARSE_WAIT)
		ulnet__io_kick(conn->net->node, &conn->io);
	else
		conn_rcvlowat(conn);
	tcplnd_conn_update_io(conn);
}

/* A busy-polling loop's spin on this socket (struct ulnet_io spin): between messages, one
 * non-blocking recv into the read-ahead buffer, without the lock, finds the next message and reads its
 * header and a small payload, where epoll_wait and a readv after it are two system calls; conn_rx
 * takes it in the next turn. 1: bytes came, or the end or an error (conn_rx's read reports them); 0:
 * none; -1: mid-message or not reading (the loop's epoll_wait looks). */
static int conn_spin(struct ulnet_io *io)
{
	struct tcplnd_conn *conn = io->data;
	ssize_t r;

	/* mid-message (the payload goes straight into the MD: conn_rx's readv), or not reading: epoll */
	if (conn->state != TCPLND_CONN_UP || conn->stalled || !(conn->io.events & EPOLLIN) || conn->rx->started ||
	    conn->ra_off < conn->ra_len)
		return -1;
	r = recv(conn->io.fd, conn->ra, TCPLND_RA_SIZE, MSG_DONTWAIT);
	if (r < 0)
		return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
	if (r == 0)
		return 1;
	conn->ra_off = 0;
	conn->ra_len = (uint32_t)r;
	conn->ra_short = r < TCPLND_RA_SIZE;
	conn_rx_stamp(conn);
	return 1;
}

void tcplnd_conn_rx_resume(struct tcplnd_conn *conn)
{
	conn_rx_event(conn, tcplnd_rx_advance(conn->rx, 0));
	if (conn->state != TCPLND_CONN_UP)
		return;
	if (conn->ra_off < conn->ra_len && conn->rx->state != TCPLND_RX_PARSE_WAIT)
		ulnet__io_kick(conn->net->node, &conn->io);
	tcplnd_conn_update_io(conn);
}

/* ---- io callback ---- */

static void conn_io_cb(struct ulnet_io *io, uint32_t revents)
{
	struct tcplnd_conn *conn = io->data;
	int err = 0;
	socklen_t len = sizeof(err);
	char why[200];

	switch (conn->state) {
	case TCPLND_CONN_CONNECTING:
		if (getsockopt(conn->io.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err) {
			snprintf(why, sizeof(why), "connect: %s", strerror(err));
			/* refusals are routine while a peer restarts: say so once, at warning level */
			ULNET_LOG(TCP, WARN, "%s: %s", conn->name, why);
			tcplnd_conn_close(conn, err == ETIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH, NULL);
			return;
		}
		conn_set_state(conn, TCPLND_CONN_HELLO_TX);
		conn_hello_flush(conn);
		if (conn->state == TCPLND_CONN_HELLO_TX)
			tcplnd_conn_update_io(conn);
		return;
	case TCPLND_CONN_HELLO_TX:
		conn_hello_flush(conn);
		return;
	case TCPLND_CONN_HELLO_RX:
		conn_hello_rx(conn);
		return;
	case TCPLND_CONN_UP:
		if (conn->stalled)
			return; /* a kick or an event from before the stall: the stall reads and writes nothing */
		if (revents & EPOLLERR) {
			if (getsockopt(conn->io.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
				err = errno;
			snprintf(why, sizeof(why), "socket error: %s", strerror(err ? err : EIO));
			tcplnd_conn_close(conn, err == ECONNRESET || !err ? -ECONNRESET : -err, why);
			return;
		}
		if (revents & (EPOLLIN | EPOLLHUP | ULNET_IO_POLLED))
			conn_rx(conn, revents);
		if (conn->state == TCPLND_CONN_UP && (revents & EPOLLOUT))
			conn_flush(conn);
		return;
	case TCPLND_CONN_CLOSING:
		return;
	}
}

/* ---- active open ---- */

void tcplnd_sock_setup(struct tcplnd_net *net, int fd)
{
	const struct tcplnd_tunables *t = &net->tun;
	int one = 1, v;

	if (!t->nagle)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (t->tx_buffer_size > 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &t->tx_buffer_size, sizeof(int));
	if (t->rx_buffer_size > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &t->rx_buffer_size, sizeof(int));
	if (t->keepalive_idle > 0 && t->keepalive_intvl > 0 && t->keepalive_count > 0) {
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		v = t->keepalive_idle;
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v));
		v = t->keepalive_intvl;
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &v, sizeof(v));
		v = t->keepalive_count;
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v, sizeof(v));
	}
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)(void *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)(void *)ss)->sin6_port = htons(port);
}

/* A non-blocking socket bound to the NI's address, privileged port if we may, connecting to @to. */
static int open_connect(struct tcplnd_net *net, const struct sockaddr_storage *to, socklen_t tolen, int *fdp)
{
	struct sockaddr_storage local = net->addr;
	int tries = TCPLND_MAX_RESERVED_PORT - TCPLND_MIN_RESERVED_PORT + 1;
	int one = 1;

	for (;;) {
		int fd = socket(to->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), rc;
		int port = 0;

		if (fd < 0)
			return -errno;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!net->no_priv_ports) {
			port = net->next_port;
			net->next_port = port > TCPLND_MIN_RESERVED_PORT ? port - 1 : TCPLND_MAX_RESERVED_PORT;
		}
		set_port(&local, (uint16_t)port);
		if (bind(fd, (struct sockaddr *)&local, net->addrlen) < 0) {
			rc = -errno;
			close(fd);
			if (port && (rc == -EACCES || rc == -EPERM)) {
				ULNET_LOG(TCP, INFO, "binding privileged source ports is not permitted; connecting from "
					  "any port (peers with accept=secure will refuse us)");
				net->no_priv_ports = true;
				continue;
			}
			if (port && rc == -EADDRINUSE && --tries > 0)
				continue;
			return rc == -EADDRINUSE && port ? -EADDRINUSE : rc;
		}
		tcplnd_sock_setup(net, fd);
		if (connect(fd, (const struct sockaddr *)to, tolen) == 0 || errno == EINPROGRESS) {
			*fdp = fd;
			return 0;
		}
		rc = -errno;
		close(fd);
		/* this 4-tuple is taken: try the next port */
		if (port && (rc == -EADDRNOTAVAIL || rc == -EADDRINUSE) && --tries > 0)
			continue;
		return rc;
	}
}

int tcplnd_conn_connect(struct tcplnd_peer *peer, int ctype)
{
	struct tcplnd_net *net = peer->net;
	struct sockaddr_storage to;
	socklen_t tolen;
	struct tcplnd_conn *conn;
	struct tcplnd_hello h;
	uint32_t proto;
	int fd = -1, n, m, rc;

	if ((rc = ulnet__nid_sockaddr(&peer->nid, (uint16_t)net->tun.accept_port, &to, &tolen)))
		return rc;
	if (to.ss_family != net->addr.ss_family)
		return -EAFNOSUPPORT;
	rc = open_connect(net, &to, tolen, &fd);
	if (rc)
		return rc;
	conn = tcplnd_conn_new(net, fd, false);
	if (!conn) {
		close(fd);
		return -ENOMEM;
	}
	memcpy(&conn->raddr, &to, tolen);
	conn->raddrlen = tolen;
	conn->peer = peer;
	conn->ctype = ctype;
	proto = peer->proto_hint ? peer->proto_hint
		: net->tun.protocol ? (uint32_t)net->tun.protocol
		: peer->nid.size ? TCPLND_PROTO_V4 : TCPLND_PROTO_V3;
	conn->proto = proto;
	tcplnd_conn_name(conn);
	n = tcplnd_connreq_pack(&peer->nid, conn->hello_out, sizeof(conn->hello_out));
	tcplnd_fill_hello(net, &h, proto, &peer->nid, ctype);
	m = n < 0 ? n : tcplnd_hello_pack(&h, conn->hello_out + n, sizeof(conn->hello_out) - (size_t)n);
	if (m < 0) {
		/* e.g. a forced V1..V3 towards an IPv6 NID */
		conn->peer = NULL;
		tcplnd_conn_close(conn, -EPROTO, NULL);
		return -EPROTONOSUPPORT;
	}
	conn->hello_len = (size_t)(n + m);
	{
		uint32_t bad = tcplnd_fault_hello(conn, &peer->nid);

		/* on the wire only: what we offered (conn->proto) stays what the reply is judged by */
		if (bad)
			tcplnd_hello_set_version(conn->hello_out + n, (size_t)m, bad);
	}
	peer->n_connecting[ctype]++;
	conn->deadline = ulnet__now_ns() + (uint64_t)net->tun.timeout * 1000000000ull;
	conn->state = TCPLND_CONN_CONNECTING;
	tcplnd_conn_timer_update(conn);
	ULNET_LOG(TCP, DEBUG, "%s: connecting, protocol V%u", conn->name, proto);
	tcplnd_conn_update_io(conn);
	return 0;
}

/* ---- stall fault rules (docs/faults.md) ---- */

static void conn_stall_end(struct tcplnd_conn *conn, const char *why)
{
	conn->stalled = false;
	ULNET_LOG(TCP, WARN, "%s: fault rule %llu: stall over (%s); reading and writing again", conn->name,
		  (unsigned long long)conn->stall_id, why);
	tcplnd_conn_update_io(conn);
	/* what came or was queued meanwhile: level-triggered reads see it; the writes need a kick */
	ulnet__io_kick(conn->net->node, &conn->io);
	if (!ulnet_list_empty(&conn->txq))
		conn_tx_kick(conn);
	tcplnd_conn_timer_update(conn);
}

uint32_t tcplnd_fault_hello(struct tcplnd_conn *conn, const struct ulnet_nid *peer)
{
	struct ulnet_fault_lnd fl;

	if (!ulnet__fault_lnd(conn->net->ni, peer, ULNET_FAULT_HELLO, NULL, &fl))
		return 0;
	ULNET_LOG(TCP, WARN, "%s: fault rule %llu: our HELLO carries version %u (0x%x), not V%u", conn->name,
		  (unsigned long long)fl.id, fl.rule.version, fl.rule.version, conn->proto);
	return fl.rule.version;
}

void tcplnd_conn_fault_look(struct tcplnd_conn *conn)
{
	struct ulnet_fault_lnd fl;

	if (conn->state != TCPLND_CONN_UP || !conn->peer)
		return;
	if (conn->stalled) {
		if (!ulnet__fault_lnd_alive(conn->net->ni, conn->stall_id))
			conn_stall_end(conn, "its rule was deleted");
		return;
	}
	if (!ulnet__fault_lnd(conn->net->ni, &conn->peer->nid, ULNET_FAULT_STALL, &conn->fault_seen, &fl))
		return;
	conn->stalled = true;
	conn->stall_id = fl.id;
	conn->stall_end = fl.rule.latency_ms ? ulnet__now_ns() + (uint64_t)fl.rule.latency_ms * 1000000ull : 0;
	if (fl.rule.latency_ms)
		ULNET_LOG(TCP, WARN, "%s: fault rule %llu: stalled for %u ms (no reads, no writes; lnd tunable "
			  "timeout %d s still runs)", conn->name, (unsigned long long)fl.id, fl.rule.latency_ms,
			  conn->net->tun.timeout);
	else
		ULNET_LOG(TCP, WARN, "%s: fault rule %llu: stalled until the rule is deleted (no reads, no writes; "
			  "lnd tunable timeout %d s still runs)", conn->name, (unsigned long long)fl.id,
			  conn->net->tun.timeout);
	tcplnd_conn_update_io(conn);
	tcplnd_conn_timer_update(conn);
}

void tcplnd_conn_tick(struct tcplnd_conn *conn, uint64_t now)
{
	uint64_t tmo = (uint64_t)conn->net->tun.timeout * 1000000000ull;
	char why[200];

	switch (conn->state) {
	case TCPLND_CONN_CONNECTING:
	case TCPLND_CONN_HELLO_TX:
	case TCPLND_CONN_HELLO_RX:
		if (now > conn->deadline) {
			snprintf(why, sizeof(why), "handshake timed out in %s (%zu of %zu bytes)",
				 tcplnd_conn_state_name(conn->state),
				 conn->state == TCPLND_CONN_HELLO_RX ? conn->hs.done : conn->hello_done,
				 conn->state == TCPLND_CONN_HELLO_RX ? conn->hs.want : conn->hello_len);
			tcplnd_conn_close(conn, -ETIMEDOUT, why);
		}
		return;
	case TCPLND_CONN_UP:
		if (conn->stalled && conn->stall_end && now >= conn->stall_end)
			conn_stall_end(conn, "its latency is over");
		/* bytes under SO_RCVLOWAT wake nobody: half the timeout gone, take whatever is queued
		 * (lowering the mark signals it), so a slow peer shows progress and a stalled one still
		 * times out below */
		if (conn->rx->started && now - conn->rx_progress > tmo / 2)
			conn_set_rcvlowat(conn, 1);
		if (conn->rx->started && now - conn->rx_progress > tmo) {
			const char *what;
			size_t left = tcplnd_rx_missing(conn->rx, &what);

			snprintf(why, sizeof(why), "no data for %d s in the middle of a message (rx %s, %zu %s bytes "
				 "missing; lnd tunable timeout)", conn->net->tun.timeout,
				 tcplnd_rx_state_name(conn->rx->state), left, what);
			tcplnd_conn_close(conn, -ETIMEDOUT, why);
			return;
		}
		if (!ulnet_list_empty(&conn->txq) && now - conn->tx_progress > tmo) {
			snprintf(why, sizeof(why), "could not send for %d s (%llu bytes queued; lnd tunable timeout)",
				 conn->net->tun.timeout, (unsigned long long)conn->tx_queued_nob);
			tcplnd_conn_close(conn, -ETIMEDOUT, why);
		}
		return;
	case TCPLND_CONN_CLOSING:
		return;
	}
}

/* The conn's next deadline after @now (tcplnd_conn_tick's tests pass just after it), or 0 for none. A
 * deadline already past was acted on at the last look: it is not armed again. */
static uint64_t conn_next_deadline(const struct tcplnd_conn *conn, uint64_t now)
{
	uint64_t tmo = (uint64_t)conn->net->tun.timeout * 1000000000ull, next = now + tmo / 2, c[4];
	unsigned n = 0;

	switch (conn->state) {
	case TCPLND_CONN_CONNECTING:
	case TCPLND_CONN_HELLO_TX:
	case TCPLND_CONN_HELLO_RX:
		c[n++] = conn->deadline + 1;
		break;
	case TCPLND_CONN_UP:
		if (conn->rx->started) {
			if (conn->rcvlowat > 1)
				c[n++] = conn->rx_progress + tmo / 2 + 1;
			c[n++] = conn->rx_progress + tmo + 1;
		}
		if (!ulnet_list_empty(&conn->txq))
			c[n++] = conn->tx_progress + tmo + 1;
		if (conn->stalled && conn->stall_end)
			c[n++] = conn->stall_end;
		break;
	case TCPLND_CONN_CLOSING:
		return 0;
	}
	return ulnet__deadline_next(now, next, c, n);
}

void tcplnd_conn_timer_update(struct tcplnd_conn *conn)
{
	uint64_t next = conn_next_deadline(conn, ulnet__now_ns());

	if (next)
		ulnet__timer_arm_by(conn->net->node, &conn->timer, next);
}

static void conn_timer_fire(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now)
{
	struct tcplnd_conn *conn = ulnet_container_of(t, struct tcplnd_conn, timer);

	(void)node, (void)now; /* the conn's stamps are on ulnet__now_ns's clock */
	tcplnd_conn_tick(conn, ulnet__now_ns());
	tcplnd_conn_timer_update(conn);
}
