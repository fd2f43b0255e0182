/* SPDX-License-Identifier: MIT */
/* large_put NID PEER SIZE: a ulnet node with one tcp NI at NID tries a Put of SIZE bytes toward PEER
 * (portal 4, match bits 0), never pinged (the core probes it), then a Get of SIZE bytes (the
 * capability known by then), then pings it, and prints one line per step:
 *   put 0               ulnet_put's return value: the peer's capability was unknown, the op went on
 *   put-event SEND -90  the op's one event and its status (-EMSGSIZE: the probe's reply lacked the bit)
 *   get -90             ulnet_get's return value (known now: refused at the call)
 *   features 0x1b       the ping reply's pi_features: whatever the Put and Get sent would have arrived
 *                       before it
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
	struct ulnet_handle md[2];
	struct ulnet_event ev;
	ulnet_eq *eq;
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
	if ((rc = ulnet_eq_create(&eq)))
		return fail("EQ", rc);
	/* an MD per call: a refused call leaves it bound, unused */
	for (int i = 0; i < 2; i++)
		if ((rc = ulnet_md_bind(node, &(struct ulnet_md){ .start = buf, .length = (uint32_t)size,
								  .threshold = 2, .eq = eq }, ULNET_UNLINK, &md[i])))
			return fail("MD", rc);
	rc = ulnet_put(node, md[0], ULNET_ACK_REQ, &peer, 4, 0, 0, 0);
	printf("put %d\n", rc);
	if (rc == 0) {
		if ((rc = ulnet_eq_wait(eq, 30000, &ev)) != 1)
			return fail("the Put's event", rc ? rc : -ETIMEDOUT);
		printf("put-event %s %d\n", ulnet_event_kind_name(ev.type), ev.status);
	}
	printf("get %d\n", ulnet_get(node, md[1], &peer, 4, 0, 0));
	if ((rc = ulnet_ping(node, &peer, 5000, &pr)))
		return fail("ping", rc);
	printf("features %#x\n", pr.features);
	fflush(stdout);
	ulnet_node_close(node);
	ulnet_eq_destroy(eq);
	free(buf);
	return 0;
}
