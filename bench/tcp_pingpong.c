/* SPDX-License-Identifier: MIT */
/* bench helper: a raw TCP ping-pong between two processes, the baseline of the round trips
 * tcp_bench.sh measures (TCP_NODELAY; with "busy", both sides poll the socket with MSG_DONTWAIT
 * instead of sleeping in recv, as busy_poll_us makes ulnetd do). The client sends REQ bytes and the
 * server answers with REP bytes: the bench passes the sizes the LNet messages it compares against
 * have on the wire, so both carry the same bytes per round trip.
 *   tcp_pingpong server ADDR PORT REQ REP [busy]            answer one client, then exit
 *   tcp_pingpong client ADDR PORT SRC COUNT REQ REP [busy]  print "rtt_p50_us X rtt_mean_us Y" */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

#define MAX_MSG 65536

static bool recv_all(int fd, char *b, size_t len, bool busy)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = recv(fd, b + got, len - got, busy ? MSG_DONTWAIT : MSG_WAITALL);

		if (r > 0)
			got += (size_t)r;
		else if (r == 0 || (errno != EAGAIN && errno != EINTR))
			return false;
	}
	return true;
}

static int cmp(const void *a, const void *b)
{
	double d = *(const double *)a - *(const double *)b;

	return d < 0 ? -1 : d > 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int one = 1, fd;
	bool busy;
	static char b[MAX_MSG];
	size_t req, rep;

	if (argc < 6)
		return 2;
	sa.sin_port = htons((uint16_t)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1)
		return 2;
	if (!strcmp(argv[1], "server")) {
		int ls = socket(AF_INET, SOCK_STREAM, 0);

		req = strtoul(argv[4], NULL, 0);
		rep = strtoul(argv[5], NULL, 0);
		busy = argc > 6 && !strcmp(argv[6], "busy");
		if (!req || !rep || req > MAX_MSG || rep > MAX_MSG)
			return 2;
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
			perror("bind/listen");
			return 1;
		}
		printf("listening\n");
		fflush(stdout);
		fd = accept(ls, NULL, NULL);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (recv_all(fd, b, req, busy))
			if (send(fd, b, rep, 0) != (ssize_t)rep)
				break;
		return 0;
	}
	if (!strcmp(argv[1], "client") && argc >= 8) {
		struct sockaddr_in ca = { .sin_family = AF_INET };
		int n = atoi(argv[5]);
		double *v = calloc((size_t)n, sizeof(*v)), sum = 0;

		req = strtoul(argv[6], NULL, 0);
		rep = strtoul(argv[7], NULL, 0);
		busy = argc > 8 && !strcmp(argv[8], "busy");
		if (!req || !rep || req > MAX_MSG || rep > MAX_MSG)
			return 2;
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (!v || n <= 0 || inet_pton(AF_INET, argv[4], &ca.sin_addr) != 1 ||
		    bind(fd, (struct sockaddr *)&ca, sizeof(ca)) || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			perror("client");
			return 1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (int i = 0; i < n; i++) {
			double t0 = now_us();

			if (send(fd, b, req, 0) != (ssize_t)req || !recv_all(fd, b, rep, busy))
				return 1;
			v[i] = now_us() - t0;
			sum += v[i];
		}
		qsort(v, (size_t)n, sizeof(*v), cmp);
		printf("rtt_p50_us %.1f rtt_mean_us %.1f\n", v[n / 2], sum / n);
		return 0;
	}
	return 2;
}
