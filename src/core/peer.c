/* SPDX-License-Identifier: MIT */
/* Peers and transmit credits. A message needs one peer credit (peer_credits per peer) and one NI
 * credit (credits per NI) to reach its LND; without them it waits in FIFO order and is launched
 * when a credit comes back. Nothing is dropped for lack of credits. Credits come back only in the
 * completion phase (msg.c), so launching the next message never nests inside an LND call. A peer
 * lives in the table of its NI's loop, and only that loop's owner touches it or its credits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

uint32_t ulnet__nid_hash(const struct ulnet_nid *nid)
{
	const uint32_t k = 2654435761u;
	uint32_t h = nid->type * 31u + nid->num;

	/* written out: gcc -O2 keeps the loop, and this runs twice per message */
	h = h * k + nid->addr[0];
	h = h * k + nid->addr[1];
	h = h * k + nid->addr[2];
	h = h * k + nid->addr[3];
	h ^= h >> 16; /* the low bits pick the bucket: mix the high ones in */
	return h;
}

static unsigned peer_hash(const struct ulnet_nid *nid)
{
	return ulnet__nid_hash(nid) % ULNET_PEER_BUCKETS;
}

void ulnet__peer_table_init(struct ulnet_peer_table *t)
{
	for (unsigned i = 0; i < ULNET_PEER_BUCKETS; i++)
		ulnet_list_init(&t->hash[i]);
	ulnet_list_init(&t->idle);
}

/* @lp is idle (refs 0: no message names it, so its queue is empty and its credits are home). */
static void peer_free(struct ulnet_peer_table *t, struct ulnet_peer *lp)
{
	ulnet_list_del(&lp->idle_link);
	ulnet_list_del(&lp->hash_link);
	t->n--;
	free(lp);
}

struct ulnet_peer *ulnet__peer_find(struct ulnet_ni *ni, const struct ulnet_nid *nid, bool create)
{
	struct ulnet_node *node = ni->node;
	struct ulnet_peer_table *t = &ni->loop->peers;
	struct ulnet_list *h = &t->hash[peer_hash(nid)], *p;
	struct ulnet_peer *lp;

	for (p = h->next; p != h; p = p->next) {
		lp = ulnet_container_of(p, struct ulnet_peer, hash_link);
		if (lp->ni == ni && ulnet__nid_equal(&lp->nid, nid)) {
			if (!lp->refs) { /* used again: the idle clock restarts (seconds: coarse will do) */
				lp->idle_since = ulnet__node_now_coarse(node);
				ulnet_list_del(&lp->idle_link);
				ulnet_list_add_tail(&lp->idle_link, &t->idle);
			}
			return lp;
		}
	}
	if (!create)
		return NULL;
	if (t->n >= node->max_peers && !ulnet_list_empty(&t->idle)) {
		/* full: the peer idle the longest makes room */
		peer_free(t, ulnet_list_first(&t->idle, struct ulnet_peer, idle_link));
	}
	if (t->n >= node->max_peers) {
		char s[ULNET_NID_STRLEN];

		if (!t->full_logged)
			ULNET_LOG(CORE, ERR, "peer table full: %u peers, all busy; cannot add %s (node option max_peers %u)",
				  t->n, ulnet_nid_format(nid, s, sizeof(s)), node->max_peers);
		t->full_logged = true;
		return NULL;
	}
	t->full_logged = false;
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return NULL;
	lp->nid = *nid;
	lp->ni = ni;
	lp->max_tx_credits = lp->tx_credits = lp->min_tx_credits = ni->peer_credits;
	lp->buf_credits = ni->peer_buffer_credits ? ni->peer_buffer_credits : ni->peer_credits;
	lp->min_buf_credits = lp->buf_credits;
	ulnet_list_init(&lp->txq);
	ulnet_list_add_tail(&lp->hash_link, h);
	/* idle until a message names it (the caller's, at once) */
	lp->idle_since = ulnet__node_now_coarse(node);
	ulnet_list_add_tail(&lp->idle_link, &t->idle);
	t->n++;
	return lp;
}

static void note_ping(struct ulnet_loop *loop, const struct ulnet_nid *nid, uint32_t features)
{
	struct ulnet_list *h = &loop->peers.hash[peer_hash(nid)], *p;

	for (p = h->next; p != h; p = p->next) {
		struct ulnet_peer *lp = ulnet_container_of(p, struct ulnet_peer, hash_link);

		if (ulnet__nid_equal(&lp->nid, nid)) {
			lp->ping_known = true;
			lp->ping_features = features;
		}
	}
}

void ulnet__peer_note_ping(struct ulnet_node *node, const struct ulnet_nid *nid, uint32_t features)
{
	for (unsigned i = 0; i < node->n_loops; i++) {
		ulnet__loop_enter(&node->loops[i]);
		note_ping(&node->loops[i], nid, features);
		ulnet__loop_exit(&node->loops[i]);
	}
}

/* Forget the peers idle for ULNET_PEER_IDLE_S; re-arm for the next one due. */
static void peer_sweep(struct ulnet_node *node, struct ulnet_timer *tm, uint64_t now)
{
	const uint64_t idle_ns = ULNET_PEER_IDLE_S * 1000000000ull;
	struct ulnet_peer_table *t = ulnet_container_of(tm, struct ulnet_peer_table, sweep);

	while (!ulnet_list_empty(&t->idle)) {
		struct ulnet_peer *lp = ulnet_list_first(&t->idle, struct ulnet_peer, idle_link);

		if (now - lp->idle_since < idle_ns) {
			ulnet__timer_arm(node, tm, lp->idle_since + idle_ns);
			return;
		}
		peer_free(t, lp);
	}
}

void ulnet__peer_get(struct ulnet_peer *lp)
{
	if (lp->refs++ == 0)
		ulnet_list_del(&lp->idle_link);
}

void ulnet__peer_put(struct ulnet_loop *loop, struct ulnet_peer *lp)
{
	struct ulnet_peer_table *t = &loop->peers;

	if (--lp->refs > 0)
		return;
	lp->idle_since = ulnet__node_now_coarse(loop->node);
	ulnet_list_add_tail(&lp->idle_link, &t->idle);
	if (!t->sweep.idx) {
		t->sweep.fn = peer_sweep;
		ulnet__timer_arm(loop->node, &t->sweep, lp->idle_since + ULNET_PEER_IDLE_S * 1000000000ull);
	}
}

/* Take the first message off @lp's credit queue. */
static struct ulnet_msg *peer_txq_pop(struct ulnet_peer *lp)
{
	struct ulnet_msg *m = ulnet_list_first(&lp->txq, struct ulnet_msg, link);

	ulnet_list_del(&m->link);
	lp->txq_msgs--;
	lp->txq_bytes -= m->v.hdr.payload_length;
	if (lp->txq_msgs == 0 && lp->txq_refused) {
		char nid[ULNET_NID_STRLEN];

		ULNET_LOG(CORE, WARN, "peer %s: transmit queue drained; %llu messages were refused while it "
			  "was full", ulnet_nid_format(&lp->nid, nid, sizeof(nid)),
			  (unsigned long long)lp->txq_refused);
		lp->txq_refused = 0;
	}
	return m;
}

/* The queue is full: one line when it fills (not one per refused message), counted always. */
static int peer_txq_full(struct ulnet_peer *lp, const struct ulnet_msg *msg)
{
	struct ulnet_ni *ni = lp->ni;

	ni->loop->stats.tx_queue_full++;
	ni->tx_queue_full++;
	lp->tx_queue_full++;
	if (lp->txq_refused++ == 0) {
		char nid[ULNET_NID_STRLEN];

		ULNET_LOG(CORE, ERR, "peer %s: transmit queue full (%u messages, %llu bytes waiting for credits; "
			  "this one %u bytes; limits peer_queue_msgs %u, peer_queue_bytes %llu): refusing new "
			  "messages to it with -ENOBUFS until it drains (tunables peer_queue_msgs, "
			  "peer_queue_bytes)", ulnet_nid_format(&lp->nid, nid, sizeof(nid)), lp->txq_msgs,
			  (unsigned long long)lp->txq_bytes, msg->v.hdr.payload_length, ni->peer_queue_msgs,
			  (unsigned long long)ni->peer_queue_bytes);
	}
	return -ENOBUFS;
}

static void fail_queue(struct ulnet_peer *lp)
{
	while (!ulnet_list_empty(&lp->txq)) {
		struct ulnet_msg *m = peer_txq_pop(lp);

		/* it never reached the LND: it holds no credit worth returning */
		m->peer_credit = m->ni_credit = false;
		ulnet__finalize(m, -ESHUTDOWN);
	}
}

void ulnet__peers_fail_queues(struct ulnet_loop *loop)
{
	for (unsigned b = 0; b < ULNET_PEER_BUCKETS; b++) {
		struct ulnet_list *h = &loop->peers.hash[b], *p;

		for (p = h->next; p != h; p = p->next)
			fail_queue(ulnet_container_of(p, struct ulnet_peer, hash_link));
	}
}

/* @ni goes (ulnet_ni_del): what waits for its peers' credits fails with -ESHUTDOWN. */
void ulnet__peers_fail_queues_ni(struct ulnet_loop *loop, const struct ulnet_ni *ni)
{
	for (unsigned b = 0; b < ULNET_PEER_BUCKETS; b++) {
		struct ulnet_list *h = &loop->peers.hash[b], *p;

		for (p = h->next; p != h; p = p->next) {
			struct ulnet_peer *lp = ulnet_container_of(p, struct ulnet_peer, hash_link);

			if (lp->ni == ni)
				fail_queue(lp);
		}
	}
}

/* ... then, their messages completed, @ni's peers are freed (a static one loses its pin). The number
 * still named by a message: they and the NI must then be kept. */
unsigned ulnet__peers_forget_ni(struct ulnet_loop *loop, const struct ulnet_ni *ni)
{
	unsigned busy = 0;

	for (unsigned b = 0; b < ULNET_PEER_BUCKETS; b++) {
		struct ulnet_list *h = &loop->peers.hash[b], *p, *tmp;

		ulnet_list_for_each_safe(p, tmp, h) {
			struct ulnet_peer *lp = ulnet_container_of(p, struct ulnet_peer, hash_link);

			if (lp->ni != ni)
				continue;
			if (lp->pinned) {
				lp->pinned = false;
				ulnet__peer_put(loop, lp);
			}
			if (lp->refs)
				busy++;
			else
				peer_free(&loop->peers, lp);
		}
	}
	return busy;
}

/* Node teardown, after ulnet__peers_fail_queues and the last completion phase. */
void ulnet__peers_free(struct ulnet_loop *loop)
{
	ulnet__timer_cancel(loop->node, &loop->peers.sweep);
	for (unsigned b = 0; b < ULNET_PEER_BUCKETS; b++) {
		struct ulnet_list *h = &loop->peers.hash[b];

		while (!ulnet_list_empty(h)) {
			struct ulnet_peer *lp = ulnet_list_first(h, struct ulnet_peer, hash_link);

			ulnet_list_del(&lp->hash_link);
			free(lp);
		}
	}
	loop->peers.n = 0;
}

int ulnet__credits_take(struct ulnet_msg *msg)
{
	struct ulnet_peer *lp = msg->peer;
	struct ulnet_ni *ni = msg->ni;

	if (lp && !msg->peer_credit) {
		uint32_t len = msg->v.hdr.payload_length;

		if (lp->tx_credits <= 0 &&
		    (lp->txq_msgs >= ni->peer_queue_msgs || lp->txq_bytes + len > ni->peer_queue_bytes))
			return peer_txq_full(lp, msg);
		msg->peer_credit = true;
		lp->tx_credits--;
		if (lp->tx_credits < lp->min_tx_credits)
			lp->min_tx_credits = lp->tx_credits;
		if (lp->tx_credits < 0) {
			ulnet_list_add_tail(&msg->link, &lp->txq);
			lp->txq_msgs++;
			lp->txq_bytes += len;
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
	int rc = ulnet__credits_take(msg);

	if (rc < 0) {
		ulnet__finalize(msg, rc); /* logged once per full episode by peer_txq_full */
		return;
	}
	if (rc > 0)
		return;
	/* a loop holding a message for reorder shows the rules every send: the next one to that peer
	 * releases it, whether it fits a rule or not */
	if (ulnet__fault_screen_pass(msg->node, &msg->v.hdr.src_nid, &msg->v.hdr.dest_nid, &msg->ni->nid,
				     msg->loop->fault_reordering) &&
	    !msg->fault_seen && ulnet__fault_send(msg))
		return; /* a fault rule took it (fault.c) */
	ulnet__lnd_send(msg);
}

void ulnet__lnd_send(struct ulnet_msg *msg)
{
	int rc;

	if (!msg->ni->started) {
		/* node shutdown: the LND is gone; the credits come back in the completion phase */
		ulnet__finalize(msg, -ESHUTDOWN);
		return;
	}
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
		if (!ulnet_list_empty(&lp->txq))
			ulnet__post_send(peer_txq_pop(lp));
	}
}

/* The @idx-th peer of @loop's table (counting from *@i, which moves past the ones seen). */
static int peer_info_at(struct ulnet_loop *loop, unsigned idx, unsigned *i, struct ulnet_peer_info *out)
{
	int rc = -ENOENT;

	for (unsigned b = 0; b < ULNET_PEER_BUCKETS && rc; b++) {
		struct ulnet_list *h = &loop->peers.hash[b], *p;

		for (p = h->next; p != h; p = p->next, (*i)++) {
			struct ulnet_peer *lp = ulnet_container_of(p, struct ulnet_peer, hash_link);

			if (*i != idx)
				continue;
			memset(out, 0, sizeof(*out));
			out->nid = lp->nid;
			snprintf(out->state, sizeof(out->state), "%s", lp->down ? "down" : "up");
			out->max_tx_credits = lp->max_tx_credits;
			out->tx_credits = lp->tx_credits;
			out->min_tx_credits = lp->min_tx_credits;
			out->tx_queued = (int)lp->txq_msgs;
			out->send_count = lp->send_count;
			out->recv_count = lp->recv_count;
			out->ping_known = lp->ping_known;
			out->ping_features = lp->ping_features;
			out->is_static = lp->pinned;
			rc = 0;
			break;
		}
	}
	return rc;
}

int ulnet_peer_info_get(ulnet_node *node, unsigned idx, struct ulnet_peer_info *out)
{
	unsigned i = 0;
	int rc = -ENOENT;

	if (!node || !out)
		return -EINVAL;
	for (unsigned l = 0; l < node->n_loops && rc; l++) {
		ulnet__loop_enter(&node->loops[l]);
		rc = peer_info_at(&node->loops[l], idx, &i, out);
		ulnet__loop_exit(&node->loops[l]);
	}
	return rc;
}

/* The NI whose net @nid is on (every loop owned): a static peer is a neighbour, not a routed NID. */
static struct ulnet_ni *ni_of_net(struct ulnet_node *node, const struct ulnet_nid *nid)
{
	for (struct ulnet_list *p = node->nis.next; p != &node->nis; p = p->next) {
		struct ulnet_ni *ni = ulnet_container_of(p, struct ulnet_ni, link);

		if (ni != node->lo_ni && ni->net == ulnet_nid_net(nid))
			return ni;
	}
	return NULL;
}

int ulnet_peer_add(ulnet_node *node, const struct ulnet_nid *nid)
{
	char s[ULNET_NID_STRLEN];
	struct ulnet_peer *lp;
	struct ulnet_ni *ni;
	int rc = 0;

	if (!node || !nid)
		return -EINVAL;
	ulnet_nid_format(nid, s, sizeof(s));
	ulnet__loops_enter(node, NULL);
	ni = ni_of_net(node, nid);
	if (ulnet__nid_is_local(node, nid)) {
		ULNET_LOG(CORE, ERR, "peer add %s: a NID of this node", s);
		rc = -EINVAL;
	} else if (!ni) {
		char net[32];

		ULNET_LOG(CORE, ERR, "peer add %s: no local NI on %s (a peer is on a local net: net add it first)",
			  s, ulnet_net_format(ulnet_nid_net(nid), net, sizeof(net)));
		rc = -EHOSTUNREACH;
	}
	if (rc)
		goto out;
	ulnet__cur_loop = ni->loop;
	lp = ulnet__peer_find(ni, nid, true);
	if (!lp) {
		rc = -ENOBUFS; /* logged */
	} else if (lp->pinned) {
		ULNET_LOG(CORE, ERR, "peer add %s: already a static peer (peer show)", s);
		rc = -EEXIST;
	} else {
		lp->pinned = true;
		ulnet__peer_get(lp);
	}
	ulnet__cur_loop = NULL;
out:
	ulnet__loops_exit(node);
	return rc;
}

int ulnet_peer_del(ulnet_node *node, const struct ulnet_nid *nid)
{
	char s[ULNET_NID_STRLEN];
	struct ulnet_peer *lp = NULL;
	struct ulnet_ni *ni;
	int rc = 0;

	if (!node || !nid)
		return -EINVAL;
	ulnet_nid_format(nid, s, sizeof(s));
	ulnet__loops_enter(node, NULL);
	ni = ni_of_net(node, nid);
	if (ni) {
		ulnet__cur_loop = ni->loop;
		lp = ulnet__peer_find(ni, nid, false);
	}
	if (!lp) {
		ULNET_LOG(CORE, ERR, "peer del %s: no such peer (peer show)", s);
		rc = -ENOENT;
	} else {
		if (lp->pinned) {
			lp->pinned = false;
			ulnet__peer_put(ni->loop, lp);
		}
		/* forgotten now if no message names it; else it goes idle, then away, as any peer */
		if (!lp->refs)
			peer_free(&ni->loop->peers, lp);
	}
	ulnet__cur_loop = NULL;
	ulnet__loops_exit(node);
	return rc;
}
