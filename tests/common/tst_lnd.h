/* SPDX-License-Identifier: MIT */
/* A scripted LND for contract tests: it records what the core asks of it (sends, receives, eager
 * receives, registrations released) and lets the test decide when and how each completes. It
 * registers as the "gni" LND type (not built into ulnet), so NIs are "N@gni". Header-only; every
 * call into the core must hold node->lock, as an LND's code always does. */
#ifndef ULNET_TEST_TST_LND_H
#define ULNET_TEST_TST_LND_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define TST_MAX 64

struct tst_recv {
	void *rx_priv;
	struct ulnet_msg *msg;
	const struct iovec *iov;
	unsigned niov;
	uint32_t mlen, rlen;
};

struct tst_state {
	struct ulnet_ni *ni;
	struct ulnet_msg *sent[TST_MAX];
	unsigned nsent;
	struct tst_recv recvs[TST_MAX];
	unsigned nrecv;
	void *eager_in[TST_MAX], *eager_out[TST_MAX];
	unsigned neager;
	int rx_held;              /* receive resources in use: +1 per injected message */
	void *unreg[TST_MAX];
	unsigned nunreg;
	struct ulnet_lnd_md unreg_md[TST_MAX];
	struct ulnet_peer_limits limits;
	bool eager_refuse;        /* behave like an LND that cannot copy a payload out */
	unsigned mem_allocs, mem_frees; /* through lnd_mem_alloc and the free function it gave */
	bool mem_refuse;          /* lnd_mem_alloc has nothing to offer */
};
static struct tst_state tst;

static inline struct ulnet_nid tst_nid(unsigned n)
{
	struct ulnet_nid nid;
	char s[32];

	snprintf(s, sizeof(s), "%u@gni", n);
	if (ulnet_nid_parse(s, &nid, NULL))
		abort();
	return nid;
}

static int tst_startup(struct ulnet_ni *ni)
{
	tst.ni = ni;
	return 0;
}

static void tst_shutdown(struct ulnet_ni *ni)
{
	(void)ni;
	tst.ni = NULL;
}

static int tst_send(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg)
{
	(void)ni;
	(void)rx_priv;
	if (tst.nsent == TST_MAX)
		return -ENOBUFS;
	tst.sent[tst.nsent++] = msg;
	return 0;
}

static int tst_recv(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, const struct iovec *iov,
		    unsigned niov, uint32_t mlen, uint32_t rlen)
{
	(void)ni;
	if (tst.nrecv == TST_MAX)
		return -ENOBUFS;
	tst.recvs[tst.nrecv++] = (struct tst_recv){ rx_priv, msg, iov, niov, mlen, rlen };
	return 0;
}

/* Copy the payload out of the "receive buffer": the resource is free again. */
static int tst_eager_recv(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, void **new_priv)
{
	(void)ni;
	(void)msg;
	if (tst.eager_refuse)
		return -EAGAIN;
	tst.eager_in[tst.neager] = rx_priv;
	tst.eager_out[tst.neager] = (void *)((uintptr_t)rx_priv | 0x1000);
	*new_priv = tst.eager_out[tst.neager++];
	tst.rx_held--;
	return 0;
}

static void tst_md_unlinked(struct ulnet_ni *ni, const struct ulnet_lnd_md *md, void *reg)
{
	(void)ni;
	tst.unreg_md[tst.nunreg] = *md;
	tst.unreg[tst.nunreg++] = reg;
}

static int tst_query_peer(struct ulnet_ni *ni, const struct ulnet_nid *nid, struct ulnet_peer_limits *out)
{
	struct ulnet_nid unknown = tst_nid(99);

	(void)ni;
	if (ulnet_nid_equal(nid, &unknown))
		return -ENOENT;
	*out = tst.limits;
	return 0;
}

static void tst_mem_free(void *p, size_t len)
{
	(void)len;
	tst.mem_frees++;
	free(p);
}

static void *tst_mem_alloc(struct ulnet_ni *ni, size_t align, size_t len, void (**free_fn)(void *p, size_t len))
{
	void *p = NULL;

	(void)ni;
	if (tst.mem_refuse || posix_memalign(&p, align, len))
		return NULL;
	tst.mem_allocs++;
	*free_fn = tst_mem_free;
	return p;
}

static void tst_fabric_info(struct ulnet_ni *ni, struct ulnet_ni_fabric *out)
{
	(void)ni;
	snprintf(out->provider, sizeof(out->provider), "tst");
	out->max_send_sge = 3;
	out->page_size = 65536;
}

static const struct ulnet_lnd_ops tst_ops = {
	.lnd_type = ULNET_LND_GNI,
	.lnd_name = "gni",
	.lnd_startup = tst_startup,
	.lnd_shutdown = tst_shutdown,
	.lnd_send = tst_send,
	.lnd_recv = tst_recv,
	.lnd_eager_recv = tst_eager_recv,
	.lnd_md_unlinked = tst_md_unlinked,
	.lnd_query_peer = tst_query_peer,
	.lnd_mem_alloc = tst_mem_alloc,
	.lnd_fabric_info = tst_fabric_info,
};

static inline void tst_register(void)
{
	static bool done;

	(void)ulnet__lnd_find("lo"); /* the builtins first */
	if (!done)
		ulnet__lnd_register(&tst_ops);
	done = true;
}

/* A header from @src to @dst as a peer would send it. */
static inline struct ulnet_hdr tst_hdr(enum ulnet_msg_type type, unsigned src, unsigned dst, uint32_t len)
{
	struct ulnet_hdr h;

	memset(&h, 0, sizeof(h));
	h.type = type;
	h.src_nid = tst_nid(src);
	h.dest_nid = tst_nid(dst);
	h.src_pid = ULNET_PID_LUSTRE;
	h.dest_pid = ULNET_PID_LUSTRE;
	h.payload_length = len;
	return h;
}

#endif
