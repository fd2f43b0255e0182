/* SPDX-License-Identifier: MIT */
/* shm provider bandwidth for 1 MiB transfers (not a test; bench/shm_rdma_bench.sh runs it):
 *   memcpy     - 1 MiB memcpy between two buffers of the working set, in one process (the baseline)
 *   write      - 1 MiB RDMA WRITEs from this process into a forked peer's registered working set,
 *                both sides' memory from the provider's mem_alloc (memfd: the peer maps it)
 *   read       - 1 MiB RDMA READs from it
 *   write_pvm  - the same into a second working set of ordinary (aligned_alloc) memory, which the
 *   read_pvm     provider reaches with process_vm_writev/readv
 * Prints "<name> <MiB/s> <CPU ms per GiB>" per line (CPU: this process's threads, all of them, so a
 * load-insensitive cost; the target only waits). Usage: shm_rdma_bench SECONDS WORKING_SET_MIB [DEPTH
 * [COPY_THREAD]]: DEPTH WRs in flight (default 16; bench/o2ib_bench.sh gives the RPCs brw keeps in
 * flight); COPY_THREAD 1: both devices get the provider's copy thread (fab_limits.copy_thread). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "config.h"
#include "fabric.h"
#include "wire.h"

#define MSG (1u << 20)
#define OPS (&fab_shm_ops)
#define ALL (FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_REMOTE_READ)
#define DEPTH_MAX 256
static unsigned depth = 16;
static struct fab_limits lim; /* the defaults, and the copy thread asked for */

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* Every buffer (memcpy's too) is 2 MiB aligned and asks for transparent huge pages, as an HPC
 * node's bulk buffers would; HUGE=0 in the environment turns that off. */
static char *buf_alloc(size_t len, bool memfd)
{
	const char *h = getenv("HUGE");
	size_t al = 2u << 20;
	char *p = memfd ? OPS->mem_alloc(al, (len + al - 1) / al * al) : aligned_alloc(al, (len + al - 1) / al * al);

	if (p && !(h && !strcmp(h, "0")))
		madvise(p, (len + al - 1) / al * al, MADV_HUGEPAGE);
	return p;
}

__attribute__((noreturn)) static void die(const char *what, int rc)
{
	fprintf(stderr, "shm_rdma_bench: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static struct sockaddr_in addr(int n, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

	a.sin_addr.s_addr = htonl(0x7fdd0000u | (uint32_t)n); /* 127.221.0.n */
	return a;
}

static void pump(struct fab_dev *d)
{
	struct pollfd p = {.fd = OPS->dev_fd(d), .events = POLLIN};

	poll(&p, 1, 100);
	OPS->progress(d);
}

/* The target: registers two working sets (memfd, ordinary), advertises them in the accept data,
 * serves until disconnect. */
static void target(size_t ws, int port, int ready)
{
	struct sockaddr_in me = addr(2, port);
	struct fab_qp_attr attr = {depth, 4};
	struct fab_dev *d;
	struct fab_cm_id *l;
	struct fab_qp *qp;
	struct fab_cm_event ev;
	struct fab_mr m, mp;
	struct iovec r, rp;
	uint8_t pd[24];
	char *buf = buf_alloc(ws, true), *pbuf = buf_alloc(ws, false);
	int rc;

	if (!buf || !pbuf)
		die("target memory", ENOMEM);
	memset(buf, 1, ws);
	memset(pbuf, 1, ws);
	r = (struct iovec){buf, ws};
	rp = (struct iovec){pbuf, ws};
	if ((rc = OPS->dev_open(&me, &lim, &d)) || (rc = OPS->create_id(d, NULL, &l)) || (rc = OPS->listen(l, &me, 4)) ||
	    (rc = OPS->reg_mr(d, &r, 1, ALL, &m)) || (rc = OPS->reg_mr(d, &rp, 1, ALL, &mp)))
		die("target setup", rc);
	if (write(ready, "r", 1) != 1)
		_exit(1);
	for (;;) {
		pump(d);
		while (OPS->get_event(d, &ev) == 0) {
			if (ev.type == FAB_CM_CONNECT_REQUEST) {
				ulnet_put_le64(pd, m.addr);
				ulnet_put_le32(pd + 8, m.rkey);
				ulnet_put_le32(pd + 12, mp.rkey);
				ulnet_put_le64(pd + 16, mp.addr);
				if ((rc = OPS->create_qp(ev.id, &attr, NULL, &qp)) || (rc = OPS->accept(ev.id, pd, sizeof(pd))))
					die("accept", rc);
			} else if (ev.type == FAB_CM_DISCONNECTED) {
				_exit(0);
			}
		}
	}
}

/* Bytes moved and seconds taken, and CPU seconds used with the bytes moved meanwhile (the drain
 * after a slice included), summed over the slices of one measurement. */
struct acc {
	double bytes, secs, cpu, cpu_bytes;
};

static void bench_memcpy(char *a, char *b, size_t ws, double secs, struct acc *acc)
{
	size_t n = ws / MSG, i = 0;
	uint64_t bytes = 0;
	double t0, t, c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);

	t0 = now_s();
	do {
		for (int k = 0; k < 16; k++, i++) {
			memcpy(b + (i % n) * MSG, a + (i % n) * MSG, MSG);
			bytes += MSG;
		}
		__asm__ volatile("" ::: "memory");
	} while ((t = now_s()) - t0 < secs);
	acc->bytes += (double)bytes;
	acc->secs += t - t0;
	acc->cpu += clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	acc->cpu_bytes += (double)bytes;
}

static void bench_rdma(struct fab_dev *d, struct fab_qp *qp, enum fab_wr_opcode op, char *src, uint32_t lkey,
		       uint64_t raddr, uint32_t rkey, size_t ws, double secs, struct acc *acc)
{
	size_t n = ws / MSG, i = 0;
	uint64_t bytes = 0, posted = 0, done = 0;
	struct fab_wc wc[DEPTH_MAX];
	double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = now_s(), t;

	/* keep up to depth in flight, each signalled, as a sender that needs every completion would */
	do {
		while (posted - done < depth) {
			struct fab_sge s = {(uintptr_t)src + (i % n) * MSG, MSG, lkey};
			struct fab_send_wr wr = {.wr_id = i, .opcode = op, .signaled = true, .sg_list = &s, .num_sge = 1,
						 .remote_addr = raddr + (i % n) * MSG, .rkey = rkey};
			const struct fab_send_wr *bad;
			int rc = OPS->post_send(qp, &wr, &bad);

			if (rc)
				die("post", rc);
			posted++;
			i++;
		}
		int got = OPS->poll_cq(d, wc, (int)depth);

		for (int k = 0; k < got; k++) {
			if (wc[k].status != FAB_WC_SUCCESS) {
				fprintf(stderr, "shm_rdma_bench: completion %s\n", fab_wc_status_str(wc[k].status));
				exit(1);
			}
			bytes += wc[k].byte_len;
		}
		done += (uint64_t)got;
		if (!got) /* wait for the device's fd (its copy thread runs the WRs): a spin would take its core */
			pump(d);
	} while ((t = now_s()) - t0 < secs);
	acc->bytes += (double)bytes;
	acc->secs += t - t0;
	while (done < posted) {
		int got = OPS->poll_cq(d, wc, (int)depth);

		for (int k = 0; k < got; k++)
			bytes += wc[k].byte_len;
		done += (uint64_t)(got > 0 ? got : 0);
		if (!got)
			pump(d);
	}
	acc->cpu += clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	acc->cpu_bytes += (double)bytes;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	size_t ws = (size_t)(argc > 2 ? atoi(argv[2]) : 1) << 20;
	int port = 9000 + (int)(getpid() % 1000), pfd[2], st;
	struct sockaddr_in me = addr(1, 0), peer = addr(2, port);
	struct fab_qp_attr attr;
	struct fab_dev *d;
	struct fab_cm_id *id;
	struct fab_qp *qp;
	struct fab_cm_event ev;
	struct fab_mr m, mp;
	struct iovec r, rp;
	char *src, *psrc, b;
	pid_t child;
	int rc;

	fab_limits_default(&lim);
	if (argc > 3)
		depth = (unsigned)atoi(argv[3]);
	if (argc > 4)
		lim.copy_thread = (uint32_t)atoi(argv[4]);
	if (secs <= 0 || ws < MSG || depth < 1 || depth > DEPTH_MAX) {
		fprintf(stderr, "usage: shm_rdma_bench SECONDS WORKING_SET_MIB (>= 1) [DEPTH (1..%u) [COPY_THREAD (0, 1)]]\n",
			DEPTH_MAX);
		return 2;
	}
	attr = (struct fab_qp_attr){depth, 4};
	if (pipe(pfd) || (child = fork()) < 0)
		die("fork", errno);
	if (child == 0) {
		close(pfd[0]);
		target(ws, port, pfd[1]);
	}
	close(pfd[1]);
	if (read(pfd[0], &b, 1) != 1)
		die("target did not start", EIO);
	src = buf_alloc(ws, true);
	psrc = buf_alloc(ws, false);
	if (!src || !psrc)
		die("memory", ENOMEM);
	memset(src, 4, ws);
	memset(psrc, 4, ws);
	r = (struct iovec){src, ws};
	rp = (struct iovec){psrc, ws};
	if ((rc = OPS->dev_open(&me, &lim, &d)) || (rc = OPS->reg_mr(d, &r, 1, ALL, &m)) ||
	    (rc = OPS->reg_mr(d, &rp, 1, ALL, &mp)) ||
	    (rc = OPS->create_id(d, NULL, &id)) || (rc = OPS->create_qp(id, &attr, NULL, &qp)) ||
	    (rc = OPS->connect(id, &peer, NULL, 0, 5000)))
		die("setup", rc);
	while (OPS->get_event(d, &ev) == -EAGAIN)
		pump(d);
	if (ev.type != FAB_CM_ESTABLISHED)
		die(fab_cm_event_str(ev.type), ECONNREFUSED);
	uint64_t raddr = ulnet_get_le64(ev.private_data);
	uint32_t rkey = ulnet_get_le32(ev.private_data + 8);
	uint32_t prkey = ulnet_get_le32(ev.private_data + 12);
	uint64_t praddr = ulnet_get_le64(ev.private_data + 16);

	/* the five measurements take turns in slices of about 0.2 s, so a change of load on this
	 * shared machine hits them alike and the ratios hold */
	{
		static const char *const name[5] = {"memcpy", "write", "read", "write_pvm", "read_pvm"};
		struct acc acc[5] = {{0, 0, 0, 0}};
		char *ma = buf_alloc(ws, false), *mb = buf_alloc(ws, false);
		int slices = secs / 0.2 < 1 ? 1 : (int)(secs / 0.2);
		double slice = secs / slices;

		if (!ma || !mb)
			die("memory", ENOMEM);
		memset(ma, 2, ws);
		memset(mb, 3, ws);
		for (int k = 0; k < slices; k++) {
			bench_memcpy(ma, mb, ws, slice, &acc[0]);
			bench_rdma(d, qp, FAB_WR_RDMA_WRITE, src, m.lkey, raddr, rkey, ws, slice, &acc[1]);
			bench_rdma(d, qp, FAB_WR_RDMA_READ, src, m.lkey, raddr, rkey, ws, slice, &acc[2]);
			bench_rdma(d, qp, FAB_WR_RDMA_WRITE, psrc, mp.lkey, praddr, prkey, ws, slice, &acc[3]);
			bench_rdma(d, qp, FAB_WR_RDMA_READ, psrc, mp.lkey, praddr, prkey, ws, slice, &acc[4]);
		}
		for (int k = 0; k < 5; k++)
			printf("%s %.1f %.1f\n", name[k], acc[k].bytes / acc[k].secs / (1 << 20),
			       acc[k].cpu * 1e3 / (acc[k].cpu_bytes / (1 << 30)));
	}
	fflush(stdout);
	OPS->disconnect(id);
	OPS->dev_close(d);
	waitpid(child, &st, 0);
	return 0;
}
