/* SPDX-License-Identifier: MIT */
/* Memory: a node with 1000 registered regions and 100 connected QPs (o2ib sizing: send queue
 * (1 + 257 + 2) x 8 WRs with 2 SGEs, receive queue 2 x 8 + 2) stays under 64 MiB RSS; so does its
 * peer process holding the other ends of the 100 QPs. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fab_test.h"

#define NQP 100
#define NMR 1000
#define RSS_LIMIT_KB (64 * 1024)
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

static void child_main(int port, int ready_fd)
{
	struct sockaddr_in me = ft_addr(4, port);
	struct fab_limits lim;
	struct fab_dev *d;
	struct fab_cm_id *l;
	struct fab_qp *qp;
	struct fab_cm_event ev;
	struct pollfd p;

	limits(&lim);
	if (OPS->dev_open(&me, &lim, &d) || OPS->create_id(d, NULL, &l) || OPS->listen(l, &me, NQP))
		_exit(10);
	if (write(ready_fd, "r", 1) != 1)
		_exit(12);
	for (;;) { /* until the parent kills us */
		p = (struct pollfd){.fd = OPS->dev_fd(d), .events = POLLIN};
		poll(&p, 1, 1000);
		OPS->progress(d);
		while (OPS->get_event(d, &ev) == 0)
			if (ev.type == FAB_CM_CONNECT_REQUEST &&
			    (OPS->create_qp(ev.id, &o2ib_attr, NULL, &qp) || OPS->accept(ev.id, NULL, 0)))
				_exit(14);
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
	char *mem = malloc((size_t)NMR * 4096), b;
	int pfd[2], port = ft_port_base(), st, established = 0;
	long kb, child_kb;
	pid_t child;

	(void)state;
	assert_non_null(mem);
	memset(mem, 1, (size_t)NMR * 4096);
	assert_int_equal(pipe(pfd), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(pfd[0]);
		child_main(port, pfd[1]);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &b, 1), 1);
	close(pfd[0]);
	peer = ft_addr(4, port);
	limits(&lim);
	assert_int_equal(OPS->dev_open(&me, &lim, &d), 0);
	for (int i = 0; i < NMR; i++) {
		struct iovec r = {mem + (size_t)i * 4096, 4096};

		assert_int_equal(OPS->reg_mr(d, &r, 1, ALL, &mr[i]), 0);
	}
	for (int i = 0; i < NQP; i++) {
		assert_int_equal(OPS->create_id(d, NULL, &id[i]), 0);
		assert_int_equal(OPS->create_qp(id[i], &o2ib_attr, NULL, &qp[i]), 0);
		assert_int_equal(OPS->connect(id[i], &peer, NULL, 0, 10000), 0);
	}
	while (established < NQP) {
		ft_expect_event(&d, 1, FAB_CM_ESTABLISHED, &ev);
		established++;
	}
	kb = rss_kb(getpid());
	child_kb = rss_kb(child);
	print_message("RSS with %d regions and %d QPs: node %ld kB, peer %ld kB (limit %d kB)\n", NMR, NQP, kb,
		      child_kb, RSS_LIMIT_KB);
	assert_true(kb > 0 && kb < RSS_LIMIT_KB);
	assert_true(child_kb > 0 && child_kb < RSS_LIMIT_KB);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &st, 0), child);
	OPS->dev_close(d);
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_1000_regions_100_qps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
