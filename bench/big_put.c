/* SPDX-License-Identifier: MIT */
/* Large payload benchmark helper (bench/big_put.sh; not a test): one node per process.
 *   big_put target    NET NID PAGE            serves portal 10 (Puts into, Gets from, a 64 MiB buffer)
 *                                             until SIGTERM, then prints its peak RSS
 *   big_put initiator NET NID PAGE PEER SECS  pings PEER, then alternates for SECS seconds each, ROUNDS
 *                                             times: one 16 MiB Put, and sixteen 1 MiB Puts in flight
 *                                             at once, each waiting for its ACKs; prints MB/s of both
 *                                             and their ratio; then 64 MiB Puts and Gets with its RSS.
 * NET: tcp, or o2ib (shm provider). Buffers from ulnet_mem_alloc, touched before measuring. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ulnet/ulnet.h"

#define MIB (1u << 20)
#define BIG (64u * MIB)
#define PORTAL 10

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static long status_kib(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtol(line + strlen(key) + 1, NULL, 10);
	fclose(f);
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static ulnet_node *node_open(uint32_t page)
{
	struct ulnet_node_opts o = { .page_size = page };
	ulnet_node *n;
	int rc = ulnet_node_open(&o, &n);

	if (rc) {
		fprintf(stderr, "big_put: node: %s\n", ulnet_strerror(rc));
		exit(1);
	}
	return n;
}

static void ni_up(ulnet_node *n, const char *net, const char *nid)
{
	const struct ulnet_kv shm[] = { { "provider", "shm" } };
	struct ulnet_ni_conf c = { .net = net, .nid = nid };
	int rc;

	if (!strcmp(net, "o2ib")) {
		c.lnd_tunables = shm;
		c.n_lnd_tunables = 1;
	}
	if ((rc = ulnet_ni_add(n, &c))) {
		fprintf(stderr, "big_put: NI %s: %s\n", nid, ulnet_strerror(rc));
		exit(1);
	}
}

static ulnet_node *node_up(const char *net, const char *nid, uint32_t page)
{
	ulnet_node *n = node_open(page);

	ni_up(n, net, nid);
	return n;
}

static int target(const char *net, const char *nid, uint32_t page)
{
	ulnet_node *n = node_up(net, nid, page); /* first: ulnet_mem_alloc gives the NI's memory */
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	uint8_t *buf = ulnet_mem_alloc(n, 65536, BIG);
	struct ulnet_md md = { .start = buf, .length = BIG, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE | ULNET_MD_TRUNCATE };
	struct ulnet_handle me, mdh;
	struct ulnet_event ev;
	long base;

	signal(SIGTERM, on_term);
	memset(buf, 0x5a, BIG);
	base = status_kib("VmRSS:");
	if (ulnet_eq_create(&md.eq) || ulnet_me_attach(n, PORTAL, &any, 0, ~0ull, ULNET_RETAIN, ULNET_INS_AFTER, &me) ||
	    ulnet_md_attach(n, me, &md, ULNET_RETAIN, &mdh))
		return 1;
	printf("ready\n"); /* bench/big_put.sh starts the initiator now */
	fflush(stdout);
	while (!stop)
		ulnet_eq_wait(md.eq, 100, &ev);
	printf("target %s page %u: RSS after buffer %ld KiB, peak %ld KiB, now anon %ld KiB + shared memory %ld KiB "
	       "(buffer %u KiB)\n", nid, page, base, status_kib("VmHWM:"), status_kib("RssAnon:"),
	       status_kib("RssShmem:"), BIG / 1024);
	fflush(stdout);
	ulnet_node_close(n);
	return 0;
}

/* @n MDs of @len bytes each from @buf, all put (or got) at once; wait for every SEND and ACK/REPLY. */
static int burst(ulnet_node *n, ulnet_eq *eq, const struct ulnet_process_id *peer, uint8_t *buf, uint32_t len,
		 unsigned cnt, bool get)
{
	unsigned want = 2 * cnt, got = 0;
	struct ulnet_event ev;

	for (unsigned i = 0; i < cnt; i++) {
		struct ulnet_md md = { .start = buf + (size_t)i * len, .length = len, .threshold = 2, .eq = eq };
		struct ulnet_handle h;
		int rc = ulnet_md_bind(n, &md, ULNET_UNLINK, &h);

		if (!rc)
			rc = get ? ulnet_get(n, h, peer, PORTAL, 1, (uint32_t)((size_t)i * len))
				 : ulnet_put(n, h, ULNET_ACK_REQ, peer, PORTAL, 1, (uint32_t)((size_t)i * len), 0);
		if (rc) {
			fprintf(stderr, "big_put: %s: %s\n", get ? "get" : "put", ulnet_strerror(rc));
			return rc;
		}
	}
	while (got < want) {
		if (ulnet_eq_wait(eq, 30000, &ev) != 1) {
			fprintf(stderr, "big_put: no event in 30 s\n");
			return -ETIMEDOUT;
		}
		if (ev.status) {
			fprintf(stderr, "big_put: %s event: %s\n", ulnet_event_kind_name(ev.type), ulnet_strerror(ev.status));
			return ev.status;
		}
		if (ev.type != ULNET_EVENT_UNLINK)
			got++;
	}
	return 0;
}

static int initiator(const char *net, const char *nid, uint32_t page, const char *peer_s, double secs, int rounds)
{
	ulnet_node *n = node_up(net, nid, page);
	struct ulnet_process_id peer = { .pid = ULNET_PID_LUSTRE };
	struct ulnet_ping_result pr;
	uint8_t *buf = ulnet_mem_alloc(n, 65536, BIG);
	ulnet_eq *eq;
	double mb_big[16], mb_small[16];
	long base;
	int rc = -1;

	if (ulnet_nid_parse(peer_s, &peer.nid, NULL) || ulnet_eq_create(&eq) || !buf)
		return 1;
	memset(buf, 0xa5, BIG);
	for (int i = 0; i < 100 && (rc = ulnet_ping(n, &peer, 1000, &pr)); i++)
		usleep(100000);
	if (rc || !(pr.features & ULNET_PING_FEAT_ULNET_LARGE)) {
		fprintf(stderr, "big_put: ping %s: %s, features 0x%x\n", peer_s, ulnet_strerror(rc), pr.features);
		return 1;
	}
	if (rounds > 16)
		rounds = 16;
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 2; k++) {
			double t0 = now_s(), t;
			uint64_t bytes = 0;

			do {
				rc = k == 0 ? burst(n, eq, &peer, buf, 16 * MIB, 1, false)
					    : burst(n, eq, &peer, buf, MIB, 16, false);
				if (rc)
					return 1;
				bytes += 16 * MIB;
				t = now_s() - t0;
			} while (t < secs);
			(k == 0 ? mb_big : mb_small)[r] = (double)bytes / t / 1e6;
		}
		printf("round %d: one 16 MiB Put %.0f MB/s, sixteen 1 MiB Puts %.0f MB/s, ratio %.2f\n", r, mb_big[r],
		       mb_small[r], mb_big[r] / mb_small[r]);
	}
	{
		double sb = 0, ss = 0;

		for (int r = 0; r < rounds; r++) {
			sb += mb_big[r];
			ss += mb_small[r];
		}
		printf("%s page %u: mean one 16 MiB Put %.0f MB/s, sixteen 1 MiB Puts %.0f MB/s, ratio %.2f\n", net, page,
		       sb / rounds, ss / rounds, sb / ss);
	}
	base = status_kib("VmRSS:");
	for (int i = 0; i < 3; i++)
		if (burst(n, eq, &peer, buf, BIG, 1, false) || burst(n, eq, &peer, buf, BIG, 1, true))
			return 1;
	printf("initiator %s page %u: 64 MiB Puts and Gets: RSS after buffer %ld KiB, peak %ld KiB, now anon %ld KiB + "
	       "shared memory %ld KiB (buffer %u KiB)\n", nid, page, base, status_kib("VmHWM:"), status_kib("RssAnon:"),
	       status_kib("RssShmem:"), BIG / 1024);
	ulnet_node_close(n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "target"))
		return target(argv[2], argv[3], (uint32_t)atoi(argv[4]));
	if (argc >= 7 && !strcmp(argv[1], "initiator"))
		return initiator(argv[2], argv[3], (uint32_t)atoi(argv[4]), argv[5], atof(argv[6]),
				 argc > 7 ? atoi(argv[7]) : 3);
	fprintf(stderr, "usage: big_put target NET NID PAGE | initiator NET NID PAGE PEER SECS [ROUNDS]\n");
	return 2;
}
