/* SPDX-License-Identifier: MIT */
/* Peers and transmit credits. A message needs one peer credit (peer_credits per peer) and one NI
 * credit (credits per NI) to reach its LND; without them it waits in FIFO order and is launched
 * when a credit comes back. Nothing is dropped for lack of credits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static unsigned peer_hash(const struct ulnet_nid *nid)
{
	uint32_t h = nid->type * 31u + nid->num;

	for (int i = 0; i < 4; i++)
		h = h * 2654435761u + nid->addr[i];
	return h % ULNET_PEER_BUCKETS;
}

struct ulnet_peer *ulnet__peer_find(struct ulnet_node *node, struct ulnet_ni *ni, const struct ulnet_nid *nid,
				    bool create)
{
	struct ulnet_list *h = &node->peers[peer_hash(nid)], *p;
	struct ulnet_peer *lp;

	for (p = h->next; p != h; p = p->next) {
		lp = ulnet_container_of(p, struct ulnet_peer, hash_link);
		if (lp->ni == ni && ulnet_nid_equal(&lp->nid, nid))
			return lp;
	}
	if (!create)
		return NULL;
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return NULL;
	lp->nid = *nid;
	lp->ni = ni;
	lp->max_tx_credits = lp->tx_credits = lp->min_tx_credits = ni->peer_credits;
	lp->buf_credits = ni->peer_buffer_credits ? ni->peer_buffer_credits : ni->peer_credits;
	ulnet_list_init(&lp->txq);
	ulnet_list_add_tail(&lp->hash_link, h);
	node->n_peers++;
	return lp;
}

static void fail_queue(struct ulnet_list *q)
{
	while (!ulnet_list_empty(q)) {
		struct ulnet_msg *m = ulnet_list_first(q, struct ulnet_msg, link);

		ulnet_list_del(&m->link);
		/* it never reached the LND: it holds no credit worth returning */
		m->peer_credit = m->ni_credit = false;
		ulnet__finalize(m, -ESHUTDOWN);
	}
}

void ulnet__peers_free(struct ulnet_node *node)
{
	for (unsigned b = 0; b < ULNET_PEER_BUCKETS; b++) {
		struct ulnet_list *h = &node->peers[b];

		while (!ulnet_list_empty(h)) {
			struct ulnet_peer *lp = ulnet_list_first(h, struct ulnet_peer, hash_link);

			fail_queue(&lp->txq);
			ulnet_list_del(&lp->hash_link);
			free(lp);
		}
	}
	node->n_peers = 0;
}

int ulnet__credits_take(struct ulnet_msg *msg)
{
	struct ulnet_peer *lp = msg->peer;
	struct ulnet_ni *ni = msg->ni;

	if (lp && !msg->peer_credit) {
		msg->peer_credit = true;
		lp->tx_credits--;
		if (lp->tx_credits < lp->min_tx_credits)
			lp->min_tx_credits = lp->tx_credits;
		if (lp->tx_credits < 0) {
			ulnet_list_add_tail(&msg->link, &lp->txq);
			return 1;
		}
	}
	if (ni != ni->node->lo_ni && !msg->ni_credit) {
		msg->ni_credit = true;
		ni->tx_credits--;
		if (ni->tx_credits < ni->min_tx_credits)
			ni->min_tx_credits = ni->tx_credits;
		if (ni->tx_credits < 0) {
			ulnet_list_add_tail(&msg->link, &ni->txq);
			return 1;
		}
	}
	return 0;
}

void ulnet__post_send(struct ulnet_msg *msg)
{
	int rc;

	if (ulnet__credits_take(msg) != 0)
		return;
	rc = msg->ni->ops->lnd_send(msg->ni, msg->rx_priv, msg);
	if (rc < 0) {
		char nid[ULNET_NID_STRLEN];

		ULNET_LOG(CORE, ERR, "%s: send to %s failed: %s", msg->ni->ops->lnd_name,
			  ulnet_nid_format(&msg->v.target.nid, nid, sizeof(nid)), ulnet_strerror(rc));
		ulnet__finalize(msg, rc);
	}
}

void ulnet__credits_return(struct ulnet_msg *msg)
{
	struct ulnet_ni *ni = msg->ni;
	struct ulnet_peer *lp = msg->peer;

	if (msg->ni_credit) {
		msg->ni_credit = false;
		ni->tx_credits++;
		if (!ulnet_list_empty(&ni->txq)) {
			struct ulnet_msg *next = ulnet_list_first(&ni->txq, struct ulnet_msg, link);

			ulnet_list_del(&next->link);
			ulnet__post_send(next);
		}
	}
	if (msg->peer_credit) {
		msg->peer_credit = false;
		lp->tx_credits++;
		if (!ulnet_list_empty(&lp->txq)) {
			struct ulnet_msg *next = ulnet_list_first(&lp->txq, struct ulnet_msg, link);

			ulnet_list_del(&next->link);
			ulnet__post_send(next);
		}
	}
}

int ulnet_peer_info_get(ulnet_node *node, unsigned idx, struct ulnet_peer_info *out)
{
	unsigned i = 0;
	int rc = -ENOENT;

	if (!node || !out)
		return -EINVAL;
	pthread_mutex_lock(&node->lock);
	for (unsigned b = 0; b < ULNET_PEER_BUCKETS && rc; b++) {
		struct ulnet_list *h = &node->peers[b], *p;

		for (p = h->next; p != h; p = p->next, i++) {
			struct ulnet_peer *lp = ulnet_container_of(p, struct ulnet_peer, hash_link);
			int queued = 0;
			struct ulnet_list *q;

			if (i != idx)
				continue;
			memset(out, 0, sizeof(*out));
			out->nid = lp->nid;
			snprintf(out->state, sizeof(out->state), "%s", "up");
			out->max_tx_credits = lp->max_tx_credits;
			out->tx_credits = lp->tx_credits;
			out->min_tx_credits = lp->min_tx_credits;
			for (q = lp->txq.next; q != &lp->txq; q = q->next)
				queued++;
			out->tx_queued = queued;
			out->send_count = lp->send_count;
			out->recv_count = lp->recv_count;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&node->lock);
	return rc;
}
