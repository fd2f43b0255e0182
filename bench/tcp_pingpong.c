/* SPDX-License-Identifier: MIT */
/* bench helper: a raw TCP 8-byte ping-pong between two processes, the baseline of the round trips
 * tcp_bench.sh measures (TCP_NODELAY; with "busy", both sides poll the socket with MSG_DONTWAIT
 * instead of sleeping in recv, as busy_poll_us makes ulnetd do).
 *   tcp_pingpong server ADDR PORT [busy]            answer one client, then exit
 *   tcp_pingpong client ADDR PORT SRC COUNT [busy]  print "rtt_p50_us X rtt_mean_us Y" */
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

static bool recv8(int fd, char *b, bool busy)
{
	size_t got = 0;

	while (got < 8) {
		ssize_t r = recv(fd, b + got, 8 - got, busy ? MSG_DONTWAIT : MSG_WAITALL);

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
	char b[8] = "pingpong";

	if (argc < 4)
		return 2;
	sa.sin_port = htons((uint16_t)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1)
		return 2;
	if (!strcmp(argv[1], "server")) {
		int ls = socket(AF_INET, SOCK_STREAM, 0);

		busy = argc > 4 && !strcmp(argv[4], "busy");
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
			perror("bind/listen");
			return 1;
		}
		printf("listening\n");
		fflush(stdout);
		fd = accept(ls, NULL, NULL);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (recv8(fd, b, busy))
			if (send(fd, b, 8, 0) != 8)
				break;
		return 0;
	}
	if (!strcmp(argv[1], "client") && argc >= 6) {
		struct sockaddr_in ca = { .sin_family = AF_INET };
		int n = atoi(argv[5]);
		double *v = calloc((size_t)n, sizeof(*v)), sum = 0;

		busy = argc > 6 && !strcmp(argv[6], "busy");
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (!v || n <= 0 || inet_pton(AF_INET, argv[4], &ca.sin_addr) != 1 ||
		    bind(fd, (struct sockaddr *)&ca, sizeof(ca)) || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			perror("client");
			return 1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (int i = 0; i < n; i++) {
			double t0 = now_us();

			if (send(fd, b, 8, 0) != 8 || !recv8(fd, b, busy))
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
