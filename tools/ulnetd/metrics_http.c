/* SPDX-License-Identifier: MIT */
/* The metrics endpoint's HTTP/1.1 server: one thread, one connection at a time, one request per
 * connection (Connection: close). A scraper asks once every few seconds: serving connections one
 * after the other costs it nothing, and a slow or hostile client holds the thread at most
 * CONN_TIMEOUT_MS in all, whatever it sends or reads. Only `GET /metrics` is served, in OpenMetrics
 * 1.0.0 when the Accept header asks for it, else in the Prometheus text format 0.0.4; a request is at most REQ_MAX bytes
 * up to its blank line (its body, if any, is not read). No library: the protocol needed is a request
 * line and a response header. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_req.h"
#include "metrics_http.h"

#define REQ_MAX ULNETD_HTTP_REQ_MAX
#define CONN_TIMEOUT_MS 5000 /* a connection's whole life: request, response, linger */
#define LINGER_MS 1000
#define LINGER_MAX 65536

struct ulnetd_metrics {
	struct ulnetd_metrics_src src; /* the node, its selftest engine, the responses counted (this thread's) */
	int lfd;
	int stop[2];         /* a pipe: the thread polls its read end with the listener */
	pthread_t thread;
	char listen[80];
	uint64_t deadline;   /* ulnet_clock_ns: the current connection's end */
};

/* Wait until @fd is ready for @events, or the server stops. 1 ready, 0 stop or the connection's
 * deadline (none for the listener: @fd == m->lfd). */
static int wait_fd(struct ulnetd_metrics *m, int fd, short events)
{
	struct pollfd p[2] = { { .fd = fd, .events = events }, { .fd = m->stop[0], .events = POLLIN } };

	for (;;) {
		uint64_t now = ulnet_clock_ns();
		int timeout_ms = fd == m->lfd ? -1 : now >= m->deadline ? 0 : (int)((m->deadline - now) / 1000000) + 1;
		int n = poll(p, 2, timeout_ms);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || p[1].revents)
			return 0;
		return 1;
	}
}

static void send_all(struct ulnetd_metrics *m, int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (!wait_fd(m, fd, POLLOUT))
				return;
			continue;
		}
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

static void respond(struct ulnetd_metrics *m, int fd, int code, const char *reason, const char *type,
		    const char *extra, const char *body, size_t len)
{
	char h[512];
	int n = snprintf(h, sizeof(h),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
			 code, reason, type, len, extra ? extra : "");

	send_all(m, fd, h, (size_t)n);
	send_all(m, fd, body, len);
}

static void error_page(struct ulnetd_metrics *m, int fd, int code, const char *reason, const char *extra,
		       const char *why)
{
	char body[256];
	int n = snprintf(body, sizeof(body), "%d %s: %s\n", code, reason, why);

	respond(m, fd, code, reason, "text/plain; charset=utf-8", extra, body, (size_t)n);
}

/* Read the request up to its blank line. Its length, 0 when the client went or stalled, -1 too long. */
static ssize_t read_request(struct ulnetd_metrics *m, int fd, char *req)
{
	size_t len = 0;

	while (len < REQ_MAX) {
		ssize_t n;

		if (!wait_fd(m, fd, POLLIN))
			return 0;
		n = recv(fd, req + len, REQ_MAX - len, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return 0;
		len += (size_t)n;
		if (ulnetd_http_header_len(req, len))
			return (ssize_t)len;
	}
	return -1;
}

static void serve(struct ulnetd_metrics *m, int fd)
{
	char *req = malloc(REQ_MAX);
	ssize_t len;
	struct ulnetd_buf b = { 0 };
	enum ulnetd_metrics_format fmt;

	if (!req) {
		error_page(m, fd, 503, "Service Unavailable", NULL, "out of memory");
		return;
	}
	len = read_request(m, fd, req);
	if (len == 0)
		goto out;
	if (len < 0) {
		error_page(m, fd, 431, "Request Header Fields Too Large", NULL, "request over 8192 bytes");
		goto out;
	}
	switch (ulnetd_http_route(req, (size_t)len)) {
	case 200:
		break;
	case 405:
		error_page(m, fd, 405, "Method Not Allowed", "Allow: GET\r\n", "only GET is served");
		goto out;
	case 404:
		error_page(m, fd, 404, "Not Found", NULL, "only /metrics is served");
		goto out;
	default:
		error_page(m, fd, 400, "Bad Request", NULL, "expected 'GET /metrics HTTP/1.1'");
		goto out;
	}
	fmt = ulnetd_http_wants_openmetrics(req, (size_t)len) ? ULNETD_METRICS_OPENMETRICS : ULNETD_METRICS_TEXT_004;
	m->src.responses[fmt]++;
	if (ulnetd_metrics_render(&m->src, fmt, &b)) {
		error_page(m, fd, 503, "Service Unavailable", NULL, "out of memory rendering the metrics");
		goto out;
	}
	respond(m, fd, 200, "OK",
		fmt == ULNETD_METRICS_OPENMETRICS ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
						  : "text/plain; version=0.0.4; charset=utf-8",
		NULL, b.s, b.len);
out:
	free(b.s);
	free(req);
}

/* Close as HTTP servers do after a response: stop sending, then read what the client still sends
 * (the rest of an oversize request) until it closes, for at most LINGER_MS and LINGER_MAX bytes. A
 * close with unread input resets the connection, and the reset can destroy the response before the
 * client reads it. */
static void linger_close(struct ulnetd_metrics *m, int fd)
{
	char sink[4096];
	size_t total = 0;
	uint64_t end = ulnet_clock_ns() + LINGER_MS * 1000000ull;

	if (end < m->deadline)
		m->deadline = end;
	shutdown(fd, SHUT_WR);
	while (total < LINGER_MAX && wait_fd(m, fd, POLLIN)) {
		ssize_t n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			break;
		total += (size_t)n;
	}
	close(fd);
}

static void *metrics_thread(void *arg)
{
	struct ulnetd_metrics *m = arg;

	while (wait_fd(m, m->lfd, POLLIN)) {
		int fd = accept4(m->lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				ULNET_LOGF(ULNET_LOG_ERR, "ULNETD", "metrics: accept: %s (RLIMIT_NOFILE?)", strerror(errno));
				poll(NULL, 0, 250); /* the client waits in the backlog */
			}
			continue;
		}
		m->deadline = ulnet_clock_ns() + CONN_TIMEOUT_MS * 1000000ull;
		serve(m, fd);
		linger_close(m, fd);
	}
	return NULL;
}

int ulnetd_metrics_start(ulnet_node *node, ulnet_selftest *selftest, const char *listen_at, struct ulnetd_metrics **out, char *err,
			 size_t errlen)
{
	struct ulnetd_metrics *m;
	struct sockaddr_storage ss;
	socklen_t sl;
	const char *why = NULL;
	char host[64];
	uint16_t port;
	int one = 1, rc;

	if (ulnet_config_listen_parse(listen_at, host, sizeof(host), &port, &why)) {
		snprintf(err, errlen, "metrics: bad listen address '%s': %s", listen_at, why);
		return -EINVAL;
	}
	memset(&ss, 0, sizeof(ss));
	if (strchr(host, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		inet_pton(AF_INET6, host, &a->sin6_addr);
		sl = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		inet_pton(AF_INET, host, &a->sin_addr);
		sl = sizeof(*a);
	}
	if (!(m = calloc(1, sizeof(*m))))
		return -ENOMEM;
	m->src.node = node;
	m->src.selftest = selftest;
	m->stop[0] = m->stop[1] = -1;
	snprintf(m->listen, sizeof(m->listen), "%s", listen_at);
	m->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (m->lfd < 0 || setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->lfd, (struct sockaddr *)&ss, sl) || listen(m->lfd, 16) || pipe2(m->stop, O_CLOEXEC)) {
		rc = -errno;
		snprintf(err, errlen, "metrics: cannot listen on %s: %s", listen_at, strerror(-rc));
		goto fail;
	}
	if ((rc = -pthread_create(&m->thread, NULL, metrics_thread, m))) {
		snprintf(err, errlen, "metrics: cannot start the server thread: %s", strerror(-rc));
		goto fail;
	}
	pthread_setname_np(m->thread, "ulnetd-metrics");
	*out = m;
	return 0;
fail:
	if (m->lfd >= 0)
		close(m->lfd);
	if (m->stop[0] >= 0) {
		close(m->stop[0]);
		close(m->stop[1]);
	}
	free(m);
	return rc;
}

void ulnetd_metrics_stop(struct ulnetd_metrics *m)
{
	char c = 1;

	if (!m)
		return;
	while (write(m->stop[1], &c, 1) < 0 && errno == EINTR)
		;
	pthread_join(m->thread, NULL);
	close(m->lfd);
	close(m->stop[0]);
	close(m->stop[1]);
	free(m);
}
