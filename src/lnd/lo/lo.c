/* SPDX-License-Identifier: MIT */
/* The loopback LND: a message to one of the node's own NIDs is parsed and received at once, copying
 * from the sender's fragments straight into the matched MD's fragments. */
#include <string.h>
#include "iov.h"
#include "lnd.h"

ULNET_LOG_SUBSYS_DEFINE(LO, "LO")

static int lolnd_startup(struct ulnet_ni *ni)
{
	(void)ni;
	return 0;
}

static void lolnd_shutdown(struct ulnet_ni *ni)
{
	(void)ni;
}

static int lolnd_send(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg)
{
	const struct ulnet_hdr *hdr = &ulnet__msg_view(msg)->hdr;
	int rc;

	(void)rx_priv;
	rc = ulnet__parse(ni, hdr, &hdr->src_nid, msg);
	ulnet__finalize(msg, rc < 0 ? rc : 0);
	return 0;
}

static int lolnd_recv(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, const struct iovec *iov,
		      unsigned niov, uint32_t mlen, uint32_t rlen)
{
	const struct ulnet_msg_lnd_view *tx = ulnet__msg_view(rx_priv);

	(void)ni;
	(void)rlen;
	if (!msg)
		return 0;
	if (mlen)
		ulnet__iov_copy(iov, niov, tx->iov, tx->niov, mlen);
	ulnet__finalize(msg, 0);
	return 0;
}

/* A message to ourselves: no fragment limit beyond the MD's, no queue, up to LNET_MTU. */
static int lolnd_query_peer(struct ulnet_ni *ni, const struct ulnet_nid *nid, struct ulnet_peer_limits *out)
{
	(void)ni;
	(void)nid;
	/* no LND message size of its own (lnd_msg_size 0), no connections */
	*out = (struct ulnet_peer_limits){ .max_frags = ULNET_MD_MAX_FRAGS, .queue_depth = 0, .lnet_mtu = ULNET_MTU };
	return 0;
}

const struct ulnet_lnd_ops ulnet__lolnd_ops = {
	.lnd_type = ULNET_LND_LO,
	.lnd_name = "lo",
	.lnd_startup = lolnd_startup,
	.lnd_shutdown = lolnd_shutdown,
	.lnd_send = lolnd_send,
	.lnd_recv = lolnd_recv,
	.lnd_query_peer = lolnd_query_peer,
};
