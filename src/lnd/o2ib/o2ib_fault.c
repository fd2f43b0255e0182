/* SPDX-License-Identifier: MIT */
/* The o2ib LND under the LND-level fault rules (docs/faults.md): a reject rule turns a CONNREQ we
 * would accept into a reject with the rule's reason (what the active side then does is its own
 * policy's: o2ib_conn_policy.c); a stall rule stops an established connection: nothing is posted
 * (messages, NOOPs, keepalives) and what it receives is kept unread, so the peer's credits stay
 * spent, until the rule's latency is over or the rule is deleted. The timeouts run meanwhile. */
#include <errno.h>
#include <stdlib.h>
#include "fault_lnd.h"
#include "o2ib.h"

void o2ib_fault_reject(struct o2ib_net *net, uint64_t nid4, struct o2ib_passive_decision *d)
{
	struct ulnet_fault_lnd fl;
	struct ulnet_nid nid;

	ulnet_nid_from_nid4(nid4, &nid);
	if (!ulnet__fault_lnd(net->ni, &nid, ULNET_FAULT_REJECT, NULL, &fl))
		return;
	o2ib_passive_fault_reject(d, &net->me, (uint8_t)fl.rule.reason);
}

static void stall_end(struct o2ib_conn *conn, const char *why)
{
	char ns[ULNET_NID_STRLEN];
	uint32_t i;

	conn->stalled = false;
	ULNET_LOG(O2IB, WARN, "%s: fault rule %llu: stall over (%s); %u received messages now read",
		  o2ib_conn_peer_str(conn, ns, sizeof(ns)), (unsigned long long)conn->stall_id, why, conn->n_stall_rx);
	/* in the order they came; handling one may close the conn */
	for (i = 0; i < conn->n_stall_rx && conn->state == O2IB_CONN_ESTABLISHED; i++)
		o2ib_handle_rx(conn, &conn->rxs[conn->stall_rx[2 * i]], conn->stall_rx[2 * i + 1]);
	conn->n_stall_rx = 0;
	if (conn->state == O2IB_CONN_ESTABLISHED)
		o2ib_conn_check_sends(conn);
}

void o2ib_conn_fault_look(struct o2ib_conn *conn, uint64_t now_ns)
{
	struct ulnet_fault_lnd fl;
	char ns[ULNET_NID_STRLEN];

	if (conn->state != O2IB_CONN_ESTABLISHED || !conn->peer)
		return;
	if (conn->stalled) {
		if (conn->stall_end_ns && now_ns >= conn->stall_end_ns)
			stall_end(conn, "its latency is over");
		else if (!ulnet__fault_lnd_alive(conn->net->ni, conn->stall_id))
			stall_end(conn, "its rule was deleted");
		return;
	}
	if (!ulnet__fault_lnd(conn->net->ni, &conn->peer->nid, ULNET_FAULT_STALL, &conn->fault_seen, &fl))
		return;
	if (!conn->stall_rx && !(conn->stall_rx = calloc(2 * (size_t)conn->nrx, sizeof(*conn->stall_rx)))) {
		ULNET_LOG(O2IB, ERR, "%s: fault rule %llu: no memory to stall the connection; not stalled",
			  o2ib_conn_peer_str(conn, ns, sizeof(ns)), (unsigned long long)fl.id);
		return;
	}
	conn->stalled = true;
	conn->stall_id = fl.id;
	conn->n_stall_rx = 0;
	conn->stall_end_ns = fl.rule.latency_ms ? now_ns + (uint64_t)fl.rule.latency_ms * 1000000ull : 0;
	ULNET_LOG(O2IB, WARN, "%s: fault rule %llu: stalled for %u ms (0: until the rule is deleted; nothing posted, "
		  "nothing read; lnd tunable timeout %d s still runs)", o2ib_conn_peer_str(conn, ns, sizeof(ns)),
		  (unsigned long long)fl.id, fl.rule.latency_ms, conn->net->tun.timeout);
	if (conn->stall_end_ns)
		o2ib_peer_timer_by(conn->peer, conn->stall_end_ns);
}

void o2ib_conn_stall_rx(struct o2ib_conn *conn, uint32_t idx, uint32_t len)
{
	/* each ring buffer completes once until it is reposted, and a kept one is not: nrx at most */
	if (conn->n_stall_rx >= conn->nrx) {
		o2ib_conn_close(conn, -EPROTO, "more receives than the ring holds during a stall");
		return;
	}
	conn->stall_rx[2 * conn->n_stall_rx] = idx;
	conn->stall_rx[2 * conn->n_stall_rx + 1] = len;
	conn->n_stall_rx++;
}

void o2ib_fault_changed(struct ulnet_ni *ni)
{
	struct o2ib_net *net = ulnet__ni_priv(ni);
	uint64_t now = ulnet__now_ns();

	for (unsigned b = 0; b < O2IB_PEER_BUCKETS; b++)
		for (struct ulnet_list *p = net->peers[b].next; p != &net->peers[b]; p = p->next) {
			struct o2ib_peer *peer = ulnet_container_of(p, struct o2ib_peer, link);

			for (struct ulnet_list *c = peer->conns.next; c != &peer->conns;) {
				struct o2ib_conn *conn = ulnet_container_of(c, struct o2ib_conn, peer_link);

				c = c->next;
				if (conn->state != O2IB_CONN_ESTABLISHED)
					continue;
				o2ib_conn_fault_look(conn, now);
				if (conn->state != O2IB_CONN_ESTABLISHED) /* closed (a kept receive was bad): off the list */
					c = peer->conns.next;
			}
		}
}
