/* SPDX-License-Identifier: MIT */
/* The ping service (a GET target on portal 0 with LNet's ping match bits, answering with the ping
 * info of lnet-wire.md §2.4) and the blocking ping client. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* A blocking ping polls its event queue this long before it sleeps: a loopback or LAN round trip
 * often ends within it, and then the REPLY costs no wake-up of this thread (busy_poll_us, if longer,
 * takes over). */
#define PING_SPIN_NS 30000u

/* Rebuild the ping buffer from the NI list; a reply already in flight keeps the old buffer, which is
 * freed with its MD. */
int ulnet__ping_service_refresh(struct ulnet_node *node)
{
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	struct ulnet_ping_info *pi = calloc(1, sizeof(*pi));
	size_t cap = 16 + ULNET_PING_INFO_MAX_NIDS * (16 + 24);
	uint8_t *buf = malloc(cap);
	struct ulnet_md umd = { 0 };
	struct ulnet_libmd *md;
	struct ulnet_me *me;
	struct ulnet_list *p;
	int len, rc;

	if (!pi || !buf) {
		free(pi);
		free(buf);
		return -ENOMEM;
	}
	/* a node that routes says so, with each NI's status: a kernel node routes through a gateway
	 * only while its reply has no RTE_DISABLED and its NIs on the remote net are up */
	pi->features = ULNET_PING_FEAT_BASE | ULNET_PING_FEAT_NI_STATUS |
		       (node->routing.enable ? 0 : ULNET_PING_FEAT_RTE_DISABLED) |
		       (ulnet__large_on(node) ? ULNET_PING_FEAT_ULNET_LARGE : 0);
	pi->pid = node->pid;
	for (p = node->nis.next; p != &node->nis && pi->n_ni < ULNET_PING_INFO_MAX_NIDS; p = p->next) {
		struct ulnet_ni *ni = ulnet_container_of(p, struct ulnet_ni, link);
		struct ulnet_ping_ni *e = &pi->ni[pi->n_ni++];

		e->nid = ni->nid;
		e->status = ni == node->lo_ni ? node->ping_seq : ni->status;
	}
	node->ping_seq++;
	len = ulnet_ping_info_pack(pi, buf, cap);
	free(pi);
	if (len < 0) {
		free(buf);
		return len;
	}
	if (node->ping_me.cookie) {
		me = ulnet__handle_lookup(node, node->ping_me.cookie, ULNET_OBJ_ME);
		if (me)
			ulnet__me_unlink_locked(node, me);
		node->ping_me.cookie = 0;
	}
	rc = ulnet__me_attach_locked(node, ULNET_RESERVED_PORTAL, &any, ULNET_PING_MATCHBITS, 0, ULNET_RETAIN,
				     ULNET_INS_BEFORE, &me);
	if (rc) {
		free(buf);
		return rc;
	}
	umd.start = buf;
	umd.length = (uint32_t)len;
	umd.threshold = ULNET_MD_THRESH_INF;
	umd.options = ULNET_MD_OP_GET | ULNET_MD_TRUNCATE | ULNET_MD_MANAGE_REMOTE;
	rc = ulnet__md_attach_locked(node, me, &umd, ULNET_UNLINK, &md);
	if (rc) {
		ulnet__me_unlink_locked(node, me);
		free(buf);
		return rc;
	}
	md->free_on_unlink = buf;
	node->ping_me.cookie = me->cookie;
	return 0;
}

/* Wait up to @timeout_ms for @eq's next event. Leading @led: do its work until the event, for up to
 * the spin window, then let it go (the caller ends a lead that found its event); else poll the queue
 * beside the loops for a while, then sleep. */
static int ping_wait(ulnet_node *node, struct ulnet_loop **led, ulnet_eq *eq, int timeout_ms, struct ulnet_event *ev)
{
	uint64_t spin = node->busy_poll_ns > PING_SPIN_NS ? node->busy_poll_ns : PING_SPIN_NS;

	if (*led) {
		int rc = ulnet__lead_wait(*led, eq, ulnet__now_ns() + spin, ev);

		if (rc)
			return rc;
		ulnet__lead_end(*led);
		*led = NULL;
	}
	return ulnet__eq_wait_busy(eq, spin, timeout_ms, ev);
}

/* The loop @nid's answers come in on (NULL: no NI reaches it). */
static struct ulnet_loop *answer_loop(ulnet_node *node, const struct ulnet_nid *nid)
{
	struct ulnet_ni *ni;
	bool local;

	ulnet__lock(node);
	ni = ulnet__ni_for_dest(node, nid, &local);
	ulnet__lock_release(node);
	return ni ? ni->loop : NULL;
}

int ulnet_ping(ulnet_node *node, const struct ulnet_process_id *target, int timeout_ms,
	       struct ulnet_ping_result *out)
{
	struct ulnet_process_id tgt;
	struct ulnet_handle mdh = { 0 }; /* cookie 0 names no MD: out_eq finds nothing if binding failed */
	struct ulnet_md umd = { 0 };
	struct ulnet_event ev;
	struct ulnet_wire_err err = { 0 };
	struct ulnet_loop *led = NULL;
	uint64_t t0, deadline;
	uint8_t *buf;
	ulnet_eq *eq;
	int rc, done_rc = -ETIMEDOUT;
	bool replied = false, unlinked = false, note = false;

	if (!node || !target || !out || timeout_ms <= 0)
		return -EINVAL;
	tgt = *target;
	if (tgt.pid == ULNET_PID_ANY)
		tgt.pid = ULNET_PID_LUSTRE;
	buf = calloc(1, ULNET_PING_BUFFER_MAX);
	if (!buf)
		return -ENOMEM;
	rc = ulnet_eq_create(&eq);
	if (rc) {
		free(buf);
		return rc;
	}
	/* one wake-up per ping: the REPLY's (or a failure's), not also the SEND's */
	ulnet__eq_quiet_send(eq);
	umd.start = buf;
	umd.length = ULNET_PING_BUFFER_MAX;
	umd.threshold = 2; /* SEND + REPLY */
	umd.options = ULNET_MD_TRUNCATE;
	umd.eq = eq;
	rc = ulnet_md_bind(node, &umd, ULNET_UNLINK, &mdh);
	if (rc)
		goto out_eq;
	t0 = ulnet__now_ns();
	deadline = t0 + (uint64_t)timeout_ms * 1000000ull;
	/* lead the loop the REPLY comes in on, if nobody holds it: the GET goes out from here, as its
	 * owner, without a hand-off or a wake-up, and for the spin window this thread reads what comes
	 * in (one spinning thread, not two, on a busy-polling node) */
	if ((led = answer_loop(node, &tgt.nid)) && !ulnet__lead_begin(led))
		led = NULL;
	rc = ulnet_get(node, mdh, &tgt, ULNET_RESERVED_PORTAL, ULNET_PING_MATCHBITS, 0);
	if (rc) {
		if (led)
			ulnet__lead_end(led);
		ulnet_md_unlink(node, mdh);
		goto out_eq;
	}
	while (!unlinked) {
		uint64_t now = ulnet__now_ns();
		int left = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);

		if (left == 0 && !replied) {
			/* give up; the MD goes once the LND lets go of the GET */
			ulnet_md_unlink(node, mdh);
			break;
		}
		if (ping_wait(node, &led, eq, left ? left : 1, &ev) <= 0)
			continue;
		unlinked = ev.unlinked;
		if (ev.type == ULNET_EVENT_SEND && ev.status) {
			done_rc = ev.status;
			ulnet_md_unlink(node, mdh);
			break;
		}
		if (ev.type == ULNET_EVENT_REPLY) {
			replied = true;
			out->rtt_ns = ulnet__now_ns() - t0;
			done_rc = ev.status;
			if (done_rc == 0) {
				struct ulnet_ping_info pi;

				done_rc = ulnet_ping_info_unpack(buf, ev.mlength, &pi, &err);
				if (done_rc == 0) {
					note = true; /* peer show reports it (below, under the lock we take anyway) */
					out->pid = pi.pid;
					out->features = pi.features;
					out->n_nids = pi.n_ni < ULNET_PING_MAX_NIDS ? pi.n_ni : ULNET_PING_MAX_NIDS;
					for (uint32_t i = 0; i < out->n_nids; i++) {
						out->nids[i].nid = pi.ni[i].nid;
						out->nids[i].status = pi.ni[i].status;
					}
				} else {
					char nid[ULNET_NID_STRLEN];

					ULNET_LOG(CORE, ERR, "ping %s: bad reply: field %s at offset %zu: got %llu, limit %llu",
						  ulnet_nid_format(&tgt.nid, nid, sizeof(nid)), err.field ? err.field : "?",
						  err.offset, (unsigned long long)err.got, (unsigned long long)err.limit);
				}
			}
			if (!unlinked)
				ulnet_md_unlink(node, mdh);
			break;
		}
	}
	rc = done_rc;
	if (led)
		ulnet__lead_end(led);
out_eq:
	/* The MD may still be held by an LND: the buffer and EQ are freed with it. */
	if (note) {
		ulnet__peer_note_ping(node, &tgt.nid, out->features);
		ulnet__large_note_ping(node, &tgt.nid, out->features);
	}
	ulnet__lock(node);
	{
		struct ulnet_libmd *md = mdh.cookie && !unlinked ? ulnet__handle_lookup(node, mdh.cookie, ULNET_OBJ_MD)
							       : NULL;

		if (md) {
			md->free_on_unlink = buf;
			buf = NULL;
		}
	}
	ulnet__lock_release(node);
	free(buf);
	ulnet__eq_release(eq);
	return rc;
}
