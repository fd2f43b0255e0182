/* SPDX-License-Identifier: MIT */
/* A bare ulnet node for foreign architectures (run under qemu-user): one tcp NI, the ping service and
 * the selftest services, until SIGTERM. No YAML, no control socket: it is driven from a native ulnetd
 * (ping it, run selftest against it). Usage: xnode NID PAGE_SIZE [kernel-stats] (kernel-stats: answer
 * STAT with lnet_selftest's counters only, as a kernel node does) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ulnet/ulnet.h"
#include "selftest.h"

int main(int argc, char **argv)
{
	struct ulnet_node_opts opts = { 0 };
	struct ulnet_ni_conf conf = { .net = "tcp" };
	struct ulnet_selftest_opts sst_opts = { 0 };
	struct ulnet_sst *sst = NULL;
	ulnet_node *node;
	sigset_t set;
	union { uint32_t u; uint8_t b[4]; } e = { .u = 1 };
	int sig, rc;

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "kernel-stats"))) {
		fprintf(stderr, "usage: xnode NID PAGE_SIZE [kernel-stats]\n");
		return 2;
	}
	sst_opts.kernel_stats = argc == 4;
	conf.nid = argv[1];
	opts.page_size = (uint32_t)strtoul(argv[2], NULL, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rc = ulnet_node_open(&opts, &node);
	if (rc == 0)
		rc = ulnet_ni_add(node, &conf);
	if (rc == 0)
		rc = ulnet__sst_start(node, &sst_opts, &sst);
	if (rc) {
		fprintf(stderr, "xnode: %s\n", ulnet_strerror(rc));
		return 1;
	}
	printf("xnode ready: %s page_size %u %s-endian host page %ld\n", argv[1], ulnet_node_page_size(node),
	       e.b[0] ? "little" : "big", sysconf(_SC_PAGESIZE));
	fflush(stdout);
	sigwait(&set, &sig);
	ulnet__sst_stop(sst);
	ulnet_node_close(node);
	return 0;
}
