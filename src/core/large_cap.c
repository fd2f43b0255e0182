/* SPDX-License-Identifier: MIT */
/* Which peers take payloads above LNET_MTU (docs/large.md), and the core's asynchronous probe of a
 * peer not known yet: one ping, its reply read by a core handler, so no thread waits for it.
 *
 * The table is the node's only record of the capability. The peer table's ping_features cannot be
 * it: a peer there is a next hop (a routed destination has no entry, its gateway does), lives in one
 * loop's table that only that loop's owner touches, and is made by traffic, not by a ping reply. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "large_cap.h"

struct large_probe {
	struct ulnet_list link;
	struct ulnet_node *node;
	struct ulnet_process_id peer;
	int status;                  /* the GET could not be sent */
	bool answered;               /* its verdict is given; it stays listed until its MD is gone */
	uint8_t buf[ULNET_PING_BUFFER_MAX];
};

void ulnet__large_caps_init(struct ulnet_large_caps *c)
{
	c->n = c->next = 0;
	ulnet_list_init(&c->probes);
}

void ulnet__large_caps_free(struct ulnet_large_caps *c)
{
	while (!ulnet_list_empty(&c->probes)) {
		struct large_probe *p = ulnet_list_first(&c->probes, struct large_probe, link);

		ulnet_list_del(&p->link);
		free(p);
	}
}

static struct ulnet_large_peer_cap *cap_find(const struct ulnet_large_caps *c, const struct ulnet_nid *nid)
{
	for (unsigned i = 0; i < c->n; i++)
		if (ulnet__nid_equal(&c->peer[i].nid, nid))
			return (struct ulnet_large_peer_cap *)&c->peer[i];
	return NULL;
}

static struct ulnet_large_peer_cap *cap_slot(struct ulnet_large_caps *c, const struct ulnet_nid *nid)
{
	struct ulnet_large_peer_cap *e = cap_find(c, nid);

	if (e)
		return e;
	if (c->n < ULNET_LARGE_PEERS_MAX) {
		e = &c->peer[c->n++];
	} else { /* full: replace in turn; a peer forgotten is probed again */
		e = &c->peer[c->next];
		c->next = (c->next + 1) % ULNET_LARGE_PEERS_MAX;
	}
	memset(e, 0, sizeof(*e));
	e->nid = *nid;
	return e;
}

enum ulnet_large_cap ulnet__large_cap_get(const struct ulnet_large_caps *c, const struct ulnet_nid *nid,
					  uint64_t now, int *failed)
{
	const struct ulnet_large_peer_cap *e = cap_find(c, nid);

	if (!e)
		return ULNET_LARGE_CAP_UNKNOWN;
	if (e->cap == ULNET_LARGE_CAP_UNKNOWN && e->failed && now < e->retry_ns) {
		*failed = e->failed;
		return ULNET_LARGE_CAP_HELD;
	}
	return e->cap;
}

void ulnet__large_cap_note(struct ulnet_large_caps *c, const struct ulnet_nid *nid, uint32_t ping_features)
{
	struct ulnet_large_peer_cap *e = cap_slot(c, nid);

	e->cap = ping_features & ULNET_PING_FEAT_ULNET_LARGE ? ULNET_LARGE_CAP_YES : ULNET_LARGE_CAP_NO;
	e->failed = 0;
}

static void cap_failed(struct ulnet_large_caps *c, const struct ulnet_nid *nid, int status, uint64_t now)
{
	struct ulnet_large_peer_cap *e = cap_find(c, nid);

	if (e && e->cap != ULNET_LARGE_CAP_UNKNOWN)
		return; /* a ping reply (ulnet_ping's) told meanwhile: that stands */
	e = cap_slot(c, nid);
	e->cap = ULNET_LARGE_CAP_UNKNOWN;
	e->failed = status;
	e->retry_ns = now + ULNET_LARGE_PROBE_HOLDOFF_NS;
}

bool ulnet__large_probing(const struct ulnet_large_caps *c, const struct ulnet_nid *nid)
{
	for (const struct ulnet_list *p = c->probes.next; p != &c->probes; p = p->next) {
		const struct large_probe *pr = ulnet_container_of(p, const struct large_probe, link);

		if (!pr->answered && ulnet__nid_equal(&pr->peer.nid, nid))
			return true;
	}
	return false;
}

static void probe_handler(const struct ulnet_event *ev);

int ulnet__large_probe_new(struct ulnet_node *node, struct ulnet_large_caps *c, const struct ulnet_process_id *peer,
			   struct ulnet_handle *mdh)
{
	struct large_probe *p = calloc(1, sizeof(*p));
	struct ulnet_md u = { .length = ULNET_PING_BUFFER_MAX, .threshold = 2 /* SEND + REPLY */,
			      .options = ULNET_MD_TRUNCATE, .handler = probe_handler };
	struct ulnet_libmd *md;
	int rc;

	if (!p)
		return -ENOMEM;
	p->node = node;
	p->peer = *peer;
	u.start = p->buf;
	u.user_ptr = p;
	rc = ulnet__md_create(node, &u, &md);
	if (rc) {
		free(p);
		return rc;
	}
	mdh->cookie = md->cookie;
	ulnet_list_add_tail(&p->link, &c->probes);
	return 0;
}

void ulnet__large_probe_send(struct ulnet_node *node, struct ulnet_handle mdh, const struct ulnet_process_id *peer)
{
	int rc = ulnet_get(node, mdh, peer, ULNET_RESERVED_PORTAL, ULNET_PING_MATCHBITS, 0);

	if (rc) {
		struct ulnet_libmd *md;

		ulnet__lock(node);
		md = ulnet__handle_lookup(node, mdh.cookie, ULNET_OBJ_MD);
		if (md) {
			((struct large_probe *)md->umd.user_ptr)->status = rc;
			ulnet__md_unlink_locked(node, md); /* its UNLINK event gives the verdict */
		}
		ulnet__unlock(node);
	}
}

/* The reply's verdict: 1 capable, 0 not, -EPROTO unreadable; *@features what it announced. */
static int reply_verdict(const struct large_probe *p, uint32_t len, uint32_t *features)
{
	struct ulnet_ping_info *pi = malloc(sizeof(*pi));
	struct ulnet_wire_err err = { 0 };
	char s[ULNET_NID_STRLEN];
	int rc;

	if (!pi)
		return -ENOMEM;
	rc = ulnet_ping_info_unpack(p->buf, len, pi, &err);
	if (rc == 0) {
		*features = pi->features;
		rc = !!(pi->features & ULNET_PING_FEAT_ULNET_LARGE);
	} else {
		ULNET_LOG(CORE, ERR, "large payload probe of %s: bad ping reply: field %s at offset %zu: got %llu, "
			  "limit %llu", ulnet_nid_format(&p->peer.nid, s, sizeof(s)), err.field ? err.field : "?",
			  err.offset, (unsigned long long)err.got, (unsigned long long)err.limit);
		rc = -EPROTO;
	}
	free(pi);
	return rc;
}

/* The probe MD's events (loop 0's thread, no lock held; only this handler writes p->answered). */
static void probe_handler(const struct ulnet_event *ev)
{
	struct large_probe *p = ev->md_user_ptr;
	struct ulnet_node *node = p->node;
	struct ulnet_nid nid = p->peer.nid;
	bool replied = ev->type == ULNET_EVENT_REPLY && !ev->status;
	uint32_t features = 0;
	int verdict = ev->status;
	char s[ULNET_NID_STRLEN];

	if (!p->answered && (ev->type == ULNET_EVENT_REPLY || ev->status || ev->unlinked)) {
		if (replied) {
			/* the buffer is the REPLY's alone now: read it without the lock */
			verdict = reply_verdict(p, ev->mlength, &features);
			if (verdict >= 0)
				ulnet__peer_note_ping(node, &nid, features); /* peer show reports it, as after ulnet_ping */
		}
		/* the verdict and the table change at once: a large op in between still finds the probe */
		ulnet__lock(node);
		if (!replied && !verdict)
			verdict = p->status ? p->status : -EINTR; /* unlinked before any reply */
		p->answered = true;
		if (verdict >= 0)
			ulnet__large_cap_note(ulnet__large_caps(node), &nid, features);
		else
			cap_failed(ulnet__large_caps(node), &nid, verdict, ulnet__node_now(node));
		ulnet__lock_release(node);
		if (verdict < 0)
			ULNET_LOG(CORE, ERR, "large payload probe (a ping) of %s failed: %s; its large ops end with it, "
				  "and the next probes it after %llu ms", ulnet_nid_format(&nid, s, sizeof(s)),
				  ulnet_strerror(verdict), ULNET_LARGE_PROBE_HOLDOFF_NS / 1000000ull);
		ulnet__large_probe_done(node, &nid, verdict);
		if (!ev->unlinked && ev->status)
			ulnet_md_unlink(node, ev->md_handle); /* a SEND that failed: no REPLY comes */
	}
	if (ev->unlinked) {
		ulnet__lock(node);
		ulnet_list_del(&p->link);
		ulnet__unlock(node);
		free(p);
	}
}
