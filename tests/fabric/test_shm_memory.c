/* SPDX-License-Identifier: MIT */
/* Memory: a node with 1000 registered regions and 100 connected QPs (o2ib sizing: send queue
 * (1 + 257 + 2) x 8 WRs with 2 SGEs, receive queue 2 x 8 + 2) stays under 64 MiB RSS; so does its
 * peer process holding the other ends of the 100 QPs. The regions lie in memory from mem_alloc, and
 * the peer RDMA WRITEs into one of them over each QP, so it maps the node's memfd once per
 * connection (100 mappings): that too stays under the limit. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fab_test.h"
#include "wire.h"

#define NQP 100
#define NMR 1000
#define RSS_LIMIT_KB (64 * 1024)
/* ThreadSanitizer's shadow memory alone is past the limit: the bound is not checked under it. */
#if defined(__SANITIZE_THREAD__)
#define RSS_CHECKED 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RSS_CHECKED 0
#endif
#endif
#ifndef RSS_CHECKED
#define RSS_CHECKED 1
#endif
#define ALL (FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_REMOTE_READ)

static const struct fab_qp_attr o2ib_attr = {(1 + 257 + 2) * 8, 2 * 8 + 2};

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void limits(struct fab_limits *lim)
{
	struct ulnet_kv kv[] = {{"max_send_sge", "2"}, {"max_recv_sge", "1"}};

	fab_limits_default(lim);
	if (fab_limits_parse(kv, 2, lim))
		abort();
}

/* The peer: accepts every QP; once one is established, RDMA WRITEs 4 KiB of 0x5a to the region the
 * connect private data names. Reports, on @done_fd, how many WRITEs succeeded and how many went
 * through the mapped memfd, once all NQP are in. */
struct target {
	uint64_t addr;
	uint32_t rkey;
	struct fab_qp *qp;
};

static void child_main(int port, int ready_fd, int done_fd)
{
	struct sockaddr_in me = ft_addr(4, port);
	struct fab_limits lim;
	struct fab_dev *d;
	struct fab_cm_id *l;
	struct fab_cm_event ev;
	struct fab_mr sm;
	struct fab_wc wc[16];
	struct pollfd p;
	static uint8_t src[4096];
	struct iovec sr = {src, sizeof(src)};
	uint32_t ok = 0, reported = 0;

	memset(src, 0x5a, sizeof(src));
	limits(&lim);
	if (ft_dev_open(&me, &lim, &d) || OPS->create_id(d, NULL, &l) || OPS->listen(l, &me, NQP) ||
	    OPS->reg_mr(d, &sr, 1, ALL, &sm))
		_exit(10);
	if (write(ready_fd, "r", 1) != 1)
		_exit(12);
	for (;;) { /* until the parent kills us */
		p = (struct pollfd){.fd = OPS->dev_fd(d), .events = POLLIN};
		poll(&p, 1, 1000);
		OPS->progress(d);
		while (OPS->get_event(d, &ev) == 0) {
			if (ev.type == FAB_CM_CONNECT_REQUEST) {
				struct target *t = malloc(sizeof(*t));

				if (!t || ev.private_data_len != 12)
					_exit(13);
				t->addr = ulnet_get_le64(ev.private_data);
				t->rkey = ulnet_get_le32(ev.private_data + 8);
				OPS->set_context(ev.id, t);
				if (OPS->create_qp(ev.id, &o2ib_attr, t, &t->qp) || OPS->accept(ev.id, NULL, 0))
					_exit(14);
			} else if (ev.type == FAB_CM_ESTABLISHED) {
				const struct target *t = ev.context;
				struct fab_sge s = {(uintptr_t)src, sizeof(src), sm.lkey};

				if (!t || ft_post_send1(t->qp, 1, FAB_WR_RDMA_WRITE, true, &s, 1, t->addr, t->rkey))
					_exit(15);
			}
		}
		for (int n = OPS->poll_cq(d, wc, 16), i = 0; i < n; i++)
			ok += wc[i].status == FAB_WC_SUCCESS;
		if (ok == NQP && !reported) {
			uint32_t msg[2] = {ok, (uint32_t)fab_shm_stats(d)->rdma_mapped};

			if (write(done_fd, msg, sizeof(msg)) != sizeof(msg))
				_exit(16);
			reported = 1;
		}
	}
}

static void test_1000_regions_100_qps(void **state)
{
	struct sockaddr_in me = ft_addr(3, 0), peer;
	struct fab_limits lim;
	struct fab_dev *d;
	struct fab_cm_id *id[NQP];
	struct fab_qp *qp[NQP];
	struct fab_mr mr[NMR];
	struct fab_cm_event ev;
	char *mem = OPS->mem_alloc(4096, (size_t)NMR * 4096), b;
	int pfd[2], dfd[2], port = ft_port_base(), st, established = 0;
	uint32_t done[2];
	uint64_t end;
	long kb, child_kb;
	pid_t child;

	(void)state;
	assert_non_null(mem);
	memset(mem, 1, (size_t)NMR * 4096);
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(pipe(dfd), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failing parent must not leave it behind (and meson waiting) */
		close(pfd[0]);
		close(dfd[0]);
		child_main(port, pfd[1], dfd[1]);
	}
	close(pfd[1]);
	close(dfd[1]);
	assert_int_equal(read(pfd[0], &b, 1), 1);
	close(pfd[0]);
	peer = ft_addr(4, port);
	limits(&lim);
	assert_int_equal(ft_dev_open(&me, &lim, &d), 0);
	for (int i = 0; i < NMR; i++) {
		struct iovec r = {mem + (size_t)i * 4096, 4096};

		assert_int_equal(OPS->reg_mr(d, &r, 1, ALL, &mr[i]), 0);
	}
	for (int i = 0; i < NQP; i++) { /* QP i names region 10 i to the peer */
		uint8_t pd[12];

		ulnet_put_le64(pd, mr[i * 10].addr);
		ulnet_put_le32(pd + 8, mr[i * 10].rkey);
		assert_int_equal(OPS->create_id(d, NULL, &id[i]), 0);
		assert_int_equal(OPS->create_qp(id[i], &o2ib_attr, NULL, &qp[i]), 0);
		assert_int_equal(OPS->connect(id[i], &peer, pd, sizeof(pd), 10000), 0);
	}
	while (established < NQP) {
		ft_expect_event(&d, 1, FAB_CM_ESTABLISHED, &ev);
		established++;
	}
	/* the peer's WRITEs need nothing of ours (one-sided): wait for its report */
	end = ft_now_ms() + WAIT_MS;
	for (;;) {
		struct pollfd pf = {.fd = dfd[0], .events = POLLIN};

		if (poll(&pf, 1, 50) == 1)
			break;
		if (ft_now_ms() > end)
			fail_msg("the peer's %d RDMA WRITEs did not complete within %d ms", NQP, WAIT_MS);
		ft_pump(&d, 1, 0);
	}
	assert_int_equal(read(dfd[0], done, sizeof(done)), sizeof(done));
	assert_int_equal(done[0], NQP);
	assert_int_equal(done[1], NQP); /* every one through the mapped memfd */
	for (int i = 0; i < NMR; i++)
		assert_int_equal((uint8_t)mem[(size_t)i * 4096 + 4095], i % 10 ? 1 : 0x5a);
	kb = rss_kb(getpid());
	child_kb = rss_kb(child);
	print_message("RSS with %d regions and %d QPs (the peer mapping the regions' memfd over each): node %ld kB, "
		      "peer %ld kB (limit %d kB)\n", NMR, NQP, kb, child_kb, RSS_LIMIT_KB);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(kb > 0 && child_kb > 0);
	if (RSS_CHECKED) {
		assert_true(kb < RSS_LIMIT_KB);
		assert_true(child_kb < RSS_LIMIT_KB);
	} else {
		print_message("RSS limit not checked under ThreadSanitizer (its shadow memory)\n");
	}
	OPS->dev_close(d);
	close(dfd[0]);
	OPS->mem_free(mem, (size_t)NMR * 4096);
}

int main(int argc, char **argv)
{
	ft_args(argc, argv);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_1000_regions_100_qps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
