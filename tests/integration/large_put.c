/* SPDX-License-Identifier: MIT */
/* large_put NID PEER SIZE: a ulnet node with one tcp NI at NID pings PEER, tries one Put and one Get of
 * SIZE bytes toward it (portal 4, match bits 0), then pings it again, and prints one line per step:
 *   features 0x1b       the first ping reply's pi_features
 *   put -90             ulnet_put's return value (-EMSGSIZE toward a peer without the large bit)
 *   get -90             ulnet_get's
 *   ping2 0             the second ping: whatever the Put and Get sent would have arrived before it
 * The library's log goes to stderr. Exit 0 when every step ran, 1 on a setup failure.
 * For test_large_kernel_peer.sh (docs/large.md): payloads above LNET_MTU toward a kernel-like peer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ulnet/ulnet.h>

static int fail(const char *what, int rc)
{
	fprintf(stderr, "large_put: %s: %s\n", what, ulnet_strerror(rc));
	return 1;
}

int main(int argc, char **argv)
{
	struct ulnet_node_opts opts = { 0 };
	struct ulnet_ni_conf conf = { .net = "tcp" };
	struct ulnet_process_id peer = { .pid = ULNET_PID_LUSTRE };
	struct ulnet_ping_result pr;
	struct ulnet_handle md;
	const char *why = NULL;
	ulnet_node *node;
	uint64_t size;
	void *buf;
	int rc;

	if (argc != 4 || ulnet_size_parse(argv[3], ULNET_LARGE_MAX_MAX, &size) || !size) {
		fprintf(stderr, "usage: large_put NID PEER SIZE\n");
		return 2;
	}
	if (ulnet_nid_parse(argv[2], &peer.nid, &why))
		return fail("bad PEER", -EINVAL);
	conf.nid = argv[1];
	if (!(buf = calloc(1, size)))
		return fail("buffer", -ENOMEM);
	if ((rc = ulnet_node_open(&opts, &node)))
		return fail("node", rc);
	if ((rc = ulnet_ni_add(node, &conf)))
		return fail("tcp NI", rc);
	if ((rc = ulnet_ping(node, &peer, 5000, &pr)))
		return fail("ping", rc);
	printf("features %#x\n", pr.features);
	/* an MD per call: a refused call leaves it bound, unused */
	if ((rc = ulnet_md_bind(node, &(struct ulnet_md){ .start = buf, .length = (uint32_t)size, .threshold = 2 },
				ULNET_UNLINK, &md)))
		return fail("MD", rc);
	printf("put %d\n", ulnet_put(node, md, ULNET_ACK_REQ, &peer, 4, 0, 0, 0));
	printf("get %d\n", ulnet_get(node, md, &peer, 4, 0, 0));
	printf("ping2 %d\n", ulnet_ping(node, &peer, 5000, &pr));
	fflush(stdout);
	ulnet_node_close(node);
	free(buf);
	return 0;
}
