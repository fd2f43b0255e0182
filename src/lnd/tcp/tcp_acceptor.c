/* SPDX-License-Identifier: MIT */
/* The acceptor of one tcp NI: a listening socket on the NI's address and accept_port (988). It applies
 * the accept policy (secure: the peer's source port must be privileged) and bounds the connections
 * still in their handshake: past TCPLND_MAX_HELLO_CONNS the oldest of the busiest source host is
 * dropped, and each has TCPLND_ACCEPT_TIMEOUT_S to finish. Reading the acceptor request and the
 * HELLO is tcp_conn.c's. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "tcp.h"

#define ACCEPT_BACKLOG 127

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)(const void *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr, sizeof(struct in6_addr));
	return false;
}

/* Make room among the connections in the handshake: drop the oldest of the source host holding the
 * most of them, so that a flood from one host never evicts another host's handshake (the list is
 * at most TCPLND_MAX_HELLO_CONNS long, and this runs only when it is full). */
static void drop_oldest(struct tcplnd_net *net, const char *reason)
{
	struct tcplnd_conn *victim = NULL;
	struct ulnet_list *a, *b, *ta, *tb;
	unsigned best = 0;
	char why[160];

	ulnet_list_for_each_safe(a, ta, &net->hello_conns) {
		struct tcplnd_conn *c = ulnet_container_of(a, struct tcplnd_conn, plink);
		unsigned n = 0;

		ulnet_list_for_each_safe(b, tb, &net->hello_conns)
			n += same_host(&c->raddr, &ulnet_container_of(b, struct tcplnd_conn, plink)->raddr);
		if (n > best) /* strictly more: the first (oldest) of the busiest host wins */
			best = n, victim = c;
	}
	if (!victim)
		return;
	snprintf(why, sizeof(why), "%s (%u connections in the handshake, %u from this host); dropping its oldest",
		 reason, net->n_hello, best);
	tcplnd_conn_close(victim, -ECONNABORTED, why);
}

static void acceptor_cb(struct ulnet_io *io, uint32_t revents)
{
	struct tcplnd_net *net = io->data;
	int n;

	(void)revents;
	for (n = 0; n < 64; n++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct tcplnd_conn *conn;
		uint16_t port;
		int fd = accept4(net->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE) && net->n_hello) {
				drop_oldest(net, "out of file descriptors");
				continue;
			}
			ULNET_LOG(TCP, ERR, "acceptor: accept: %s; pausing it for %llu ms", strerror(errno),
				  TCPLND_REAP_NS / 1000000ull);
			ulnet__io_stop(net->node, &net->lio);
			net->listen_paused = true;
			ulnet__timer_arm_by(net->node, &net->accept_timer, ulnet__now_ns() + TCPLND_REAP_NS);
			return;
		}
		port = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)(void *)&ss)->sin_port)
					       : ntohs(((struct sockaddr_in6 *)(void *)&ss)->sin6_port);
		if (!tcplnd_accept_allows(net->tun.accept, port)) {
			char ip[INET6_ADDRSTRLEN] = "?";

			inet_ntop(ss.ss_family,
				  ss.ss_family == AF_INET ? (void *)&((struct sockaddr_in *)(void *)&ss)->sin_addr
							  : (void *)&((struct sockaddr_in6 *)(void *)&ss)->sin6_addr,
				  ip, sizeof(ip));
			ULNET_LOG(TCP, ERR, "acceptor: refusing %s:%u: source port %u > %d (lnd tunable accept=secure)", ip,
				  port, port, TCPLND_MAX_RESERVED_PORT);
			close(fd);
			continue;
		}
		if (net->n_hello >= TCPLND_MAX_HELLO_CONNS)
			drop_oldest(net, "too many connections in the handshake");
		conn = tcplnd_conn_new(net, fd, true);
		if (!conn) {
			ULNET_LOG(TCP, ERR, "acceptor: no memory for a connection");
			close(fd);
			continue;
		}
		tcplnd_sock_setup(net, fd);
		ulnet_list_add_tail(&conn->plink, &net->hello_conns);
		conn->in_hello_list = true;
		net->n_hello++;
		conn->deadline = ulnet__now_ns() + TCPLND_ACCEPT_TIMEOUT_S * 1000000000ull;
		conn->state = TCPLND_CONN_HELLO_RX;
		tcplnd_conn_timer_update(conn);
		tcplnd_hs_init(&conn->hs, true);
		ULNET_LOG(TCP, DEBUG, "%s: accepted", conn->name);
		tcplnd_conn_update_io(conn);
	}
}

int tcplnd_acceptor_start(struct tcplnd_net *net)
{
	struct sockaddr_storage a = net->addr;
	char ip[INET6_ADDRSTRLEN] = "?";
	int one = 1, fd, rc;

	net->lfd = -1;
	if (net->tun.accept == TCPLND_ACCEPT_NONE)
		return 0;
	if (a.ss_family == AF_INET) {
		((struct sockaddr_in *)(void *)&a)->sin_port = htons((uint16_t)net->tun.accept_port);
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)&a)->sin_addr, ip, sizeof(ip));
	} else {
		((struct sockaddr_in6 *)(void *)&a)->sin6_port = htons((uint16_t)net->tun.accept_port);
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)(void *)&a)->sin6_addr, ip, sizeof(ip));
	}
	fd = socket(a.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, net->addrlen) < 0 || listen(fd, ACCEPT_BACKLOG) < 0) {
		rc = -errno;
		ULNET_LOG(TCP, ERR, "acceptor: cannot listen on %s:%d: %s (lnd tunable accept_port)", ip,
			  net->tun.accept_port, strerror(-rc));
		close(fd);
		return rc;
	}
	net->lfd = fd;
	net->lio.fd = fd;
	net->lio.cb = acceptor_cb;
	net->lio.data = net;
	rc = ulnet__io_start(net->node, &net->lio, EPOLLIN);
	if (rc) {
		close(fd);
		net->lfd = -1;
		return rc;
	}
	ULNET_LOG(TCP, INFO, "acceptor: listening on %s:%d (accept=%s)", ip, net->tun.accept_port,
		  net->tun.accept == TCPLND_ACCEPT_SECURE ? "secure" : "all");
	return 0;
}

void tcplnd_acceptor_stop(struct tcplnd_net *net)
{
	if (net->lfd < 0)
		return;
	ulnet__io_stop(net->node, &net->lio);
	close(net->lfd);
	net->lfd = -1;
}

void tcplnd_acceptor_resume(struct tcplnd_net *net)
{
	if (net->listen_paused && net->lfd >= 0) {
		net->listen_paused = false;
		ulnet__io_start(net->node, &net->lio, EPOLLIN);
	}
}
