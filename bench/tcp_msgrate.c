/* SPDX-License-Identifier: MIT */
/* bench helper for tcp_bench.sh: two nodes in one process over the tcp LND (loopback, addresses from
 * argv). Prints "put0_rate <msgs/s>" for 0-byte Puts without ACK (a window of 64 in flight, one API
 * thread binding an MD per Put, at most peer_credits of them in the LND (below); one peer,
 * so with several loops its own loop posts and writes them and the others mostly idle) and, for the
 * same interval, "put0_cpu_us <CPU time of the process per Put>" and "put0_csw <context switches per
 * Put>" (getrusage: every thread of both nodes; what a Put costs, which swings less than the rate when
 * the VM's cores are shared with other work), "put0_lock_hold_ns" and "put0_lock_sleeps" (both node
 * locks per Put: time held, futex waits; ulnet_stats), then
 * "ping_rtt_us <mean>" over ulnet_ping, then "tcp_rtt_us <mean>" for a raw TCP 8-byte ping-pong
 * between the same two addresses (TCP_NODELAY). Usage:
 * tcp_msgrate ADDR_A ADDR_B SECONDS [LOOPS [put0 [PEER_CREDITS [EQ_SPIN_US]]]]: LOOPS loop threads per
 * node (node option loops; default 1); "put0" stops after the first rate; PEER_CREDITS the NIs'
 * peer_credits (default 8, as the kernel's socklnd): a sendmsg carries at most that many Puts, since
 * a Put's credit comes back when the LND has written it; EQ_SPIN_US how long the API thread polls
 * its event queue before it sleeps (ulnet_eq_set_spin; default 0), as message-rate benchmarks poll
 * their completions. FAULT_NOMATCH=1 in the environment installs on both nodes one fault rule that matches
 * nothing (a drop from 192.0.2.1@tcp): what an idle rule costs the data path (bench/fault_bench.sh);
 * METRICS_OFF=1 turns the latency histograms off (ulnet_metrics_latency_set): what they cost
 * (bench/observe_cost.sh, which also reads "put0_count", the Puts in the rate). NET=o2ib runs the
 * nodes over the o2ib LND on the shm provider instead (the Put rate; the raw TCP round trip is
 * still over TCP); BUSY_POLL_US=N sets both nodes' busy_poll_us (their loops poll that long before
 * they sleep, as message-rate benchmarks' peers poll). */
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "ulnet/ulnet.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time (us) and context switches of the whole process so far */
static void usage_now(double *cpu_us, double *csw)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*cpu_us = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
		  (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	*csw = (double)(ru.ru_nvcsw + ru.ru_nivcsw);
}

/* the nodes' net: tcp, or o2ib over the shm provider (NET=o2ib) */
static const char *net(void)
{
	const char *e = getenv("NET");

	return e && !strcmp(e, "o2ib") ? "o2ib" : "tcp";
}

static ulnet_node *open_node(const char *addr, unsigned loops, const char *peer_credits)
{
	char nid[64];
	/* credits (the NI's) at least the window, so only peer_credits bounds the Puts in the LND */
	const struct ulnet_kv kv[] = { { "peer_credits", peer_credits }, { "credits", "256" } };
	const struct ulnet_kv shm[] = { { "provider", "shm" } };
	struct ulnet_ni_conf c = { .net = net(), .nid = nid, .tunables = kv, .n_tunables = peer_credits ? 2 : 0 };
	struct ulnet_node_opts o = { .loops = loops };
	ulnet_node *n;

	if (getenv("BUSY_POLL_US"))
		o.busy_poll_us = (uint32_t)atoi(getenv("BUSY_POLL_US"));
	if (!strcmp(c.net, "o2ib")) {
		c.lnd_tunables = shm;
		c.n_lnd_tunables = 1;
	}
	snprintf(nid, sizeof(nid), "%s@%s", addr, c.net);
	if (ulnet_node_open(&o, &n) || ulnet_ni_add(n, &c)) {
		fprintf(stderr, "cannot start a node on %s\n", nid);
		exit(1);
	}
	if (getenv("METRICS_OFF") && atoi(getenv("METRICS_OFF")))
		ulnet_metrics_latency_set(n, false);
	if (getenv("FAULT_NOMATCH") && atoi(getenv("FAULT_NOMATCH"))) {
		struct ulnet_fault_rule r;

		ulnet_fault_rule_init(&r, ULNET_FAULT_DROP);
		r.rate = 1;
		if (ulnet_nid_parse("192.0.2.1@tcp", &r.src, NULL) || ulnet_fault_add(n, &r)) {
			fprintf(stderr, "cannot add the fault rule\n");
			exit(1);
		}
	}
	return n;
}

static void *echo_server(void *arg)
{
	int ls = *(int *)arg, fd = accept(ls, NULL, NULL), one = 1;
	char b[8];

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (recv(fd, b, 8, MSG_WAITALL) == 8)
		if (send(fd, b, 8, 0) != 8)
			break;
	close(fd);
	return NULL;
}

static double tcp_rtt(const char *a, const char *b, int n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(7399) }, ca = { .sin_family = AF_INET };
	int ls = socket(AF_INET, SOCK_STREAM, 0), fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	pthread_t t;
	char buf[8] = "pingpong";
	double t0;

	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	inet_pton(AF_INET, b, &sa.sin_addr);
	inet_pton(AF_INET, a, &ca.sin_addr);
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
		return -1;
	pthread_create(&t, NULL, echo_server, &ls);
	bind(fd, (struct sockaddr *)&ca, sizeof(ca));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	t0 = now_s();
	for (int i = 0; i < n; i++)
		if (send(fd, buf, 8, 0) != 8 || recv(fd, buf, 8, MSG_WAITALL) != 8)
			return -1;
	t0 = now_s() - t0;
	close(fd);
	pthread_join(t, NULL);
	close(ls);
	return t0 / n * 1e6;
}

int main(int argc, char **argv)
{
	struct ulnet_process_id any = { .pid = ULNET_PID_ANY }, tb = { .pid = ULNET_PID_LUSTRE };
	ulnet_node *na, *nb;
	ulnet_eq *eqa, *eqb;
	struct ulnet_handle me, mdh;
	struct ulnet_event ev;
	struct ulnet_ping_result r;
	static char sink[1];
	double secs, t0, el, cpu0, csw0, cpu1, csw1;
	long sent = 0, done = 0;
	char nidb[64];
	unsigned loops;
	struct ulnet_stats sa0, sa1, sb0, sb1;

	if (argc < 4 || argc > 8)
		return 2;
	secs = atof(argv[3]);
	loops = argc > 4 ? (unsigned)atoi(argv[4]) : 1;
	na = open_node(argv[1], loops, argc > 6 ? argv[6] : NULL);
	nb = open_node(argv[2], loops, argc > 6 ? argv[6] : NULL);
	snprintf(nidb, sizeof(nidb), "%s@%s", argv[2], net());
	ulnet_nid_parse(nidb, &tb.nid, NULL);
	any.nid = ulnet_nid_any();
	ulnet_eq_create(&eqa);
	ulnet_eq_create(&eqb);
	if (argc > 7 && ulnet_eq_set_spin(eqa, (unsigned)atoi(argv[7]))) {
		fprintf(stderr, "bad EQ_SPIN_US %s\n", argv[7]);
		return 2;
	}
	{
		struct ulnet_md t = { .start = sink, .length = 0, .threshold = ULNET_MD_THRESH_INF,
				      .options = ULNET_MD_OP_PUT | ULNET_MD_ACK_DISABLE };
		ulnet_me_attach(nb, 3, &any, 1, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me);
		ulnet_md_attach(nb, me, &t, ULNET_RETAIN, &mdh);
	}
	if (ulnet_ping(na, &tb, 5000, &r)) {
		fprintf(stderr, "ping failed\n");
		return 1;
	}
	/* 0-byte Puts, no ACK: completion = SEND event on the initiator */
	ulnet_stats_get(na, &sa0);
	ulnet_stats_get(nb, &sb0);
	usage_now(&cpu0, &csw0);
	t0 = now_s();
	/* the clock every 64 events, not per event: the sending thread spends its time on Puts */
	for (el = 0; el < secs; el = done % 64 ? el : now_s() - t0) {
		while (sent - done < 64) {
			struct ulnet_md i = { .start = sink, .length = 0, .threshold = 1, .eq = eqa };
			struct ulnet_handle h;

			if (ulnet_md_bind(na, &i, ULNET_UNLINK, &h) || ulnet_put(na, h, ULNET_NOACK_REQ, &tb, 3, 1, 0, 0))
				break;
			sent++;
		}
		/* one event, then top the window up again: 64 in flight all along (refilling only below
		 * 32, as this did before, averaged about 48 and stalled the sender on each refill) */
		if (ulnet_eq_wait(eqa, 100, &ev) == 1 && ev.type == ULNET_EVENT_SEND)
			done++;
		else
			el = now_s() - t0; /* no event for 100 ms: still check the time */
	}
	el = now_s() - t0;
	usage_now(&cpu1, &csw1);
	ulnet_stats_get(na, &sa1);
	ulnet_stats_get(nb, &sb1);
	printf("put0_rate %.0f\nput0_count %llu\n", done / el, (unsigned long long)done);
	/* both nodes' node locks, per Put: held (ns) and futex waits of threads that found it taken */
	printf("put0_lock_hold_ns %.0f\nput0_lock_sleeps %.4f\n",
	       (double)(sa1.lock_hold_total_ns - sa0.lock_hold_total_ns + sb1.lock_hold_total_ns - sb0.lock_hold_total_ns) /
		       (double)(done ? done : 1),
	       (double)(sa1.lock_sleeps - sa0.lock_sleeps + sb1.lock_sleeps - sb0.lock_sleeps) / (double)(done ? done : 1));
	/* waits to enter a loop (an API thread during a turn, or the loop's thread behind one), per Put */
	printf("put0_owner_sleeps %.4f\n",
	       (double)(sa1.owner_sleeps - sa0.owner_sleeps + sb1.owner_sleeps - sb0.owner_sleeps) / (double)(done ? done : 1));
	printf("put0_cpu_us %.2f\nput0_csw %.3f\n", (cpu1 - cpu0) / (double)(done ? done : 1),
	       (csw1 - csw0) / (double)(done ? done : 1));
	fflush(stdout);
	if (argc > 5 && !strcmp(argv[5], "put0")) {
		ulnet_node_close(na);
		ulnet_node_close(nb);
		return 0;
	}
	{
		/* 1 MiB Puts, no ACK, 8 in flight */
		static char big[1 << 20];
		/* MANAGE_REMOTE: every Put lands at its offset 0 (a local offset would fill the MD after
		 * the first one and drop the rest) */
		struct ulnet_md t = { .start = big, .length = sizeof(big), .threshold = ULNET_MD_THRESH_INF,
				      .options = ULNET_MD_OP_PUT | ULNET_MD_ACK_DISABLE | ULNET_MD_MANAGE_REMOTE };
		static char src[1 << 20];

		ulnet_me_attach(nb, 4, &any, 1, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me);
		ulnet_md_attach(nb, me, &t, ULNET_RETAIN, &mdh);
		sent = done = 0;
		t0 = now_s();
		while ((el = now_s() - t0) < secs) {
			while (sent - done < 8) {
				struct ulnet_md i = { .start = src, .length = sizeof(src), .threshold = 1, .eq = eqa };
				struct ulnet_handle h;

				if (ulnet_md_bind(na, &i, ULNET_UNLINK, &h) ||
				    ulnet_put(na, h, ULNET_NOACK_REQ, &tb, 4, 1, 0, 0))
					break;
				sent++;
			}
			if (ulnet_eq_wait(eqa, 100, &ev) == 1 && ev.type == ULNET_EVENT_SEND)
				done++;
		}
		printf("put1m_MBps %.1f\n", done * 1048576.0 / el / 1e6);
		fflush(stdout);
	}
	{
		int n = 0;
		double tot = 0;

		for (int i = 0; i < 2000; i++) {
			t0 = now_s();
			if (ulnet_ping(na, &tb, 5000, &r) == 0) {
				tot += now_s() - t0;
				n++;
			}
		}
		printf("ping_rtt_us %.1f\n", n ? tot / n * 1e6 : -1.0);
	}
	printf("tcp_rtt_us %.1f\n", tcp_rtt(argv[1], argv[2], 20000));
	ulnet_node_close(na);
	ulnet_node_close(nb);
	return 0;
}
