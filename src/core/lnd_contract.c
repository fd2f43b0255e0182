/* SPDX-License-Identifier: MIT */
/* The parts of the LND contract (lnd.h) an RDMA LND needs beyond send and receive: the out-of-band
 * REPLY of a GET, the MD's memory for registration and its release, peer limits and peer loss. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

bool ulnet__msg_is_reply(const struct ulnet_msg *msg)
{
	return msg->rdma_reply;
}

struct ulnet_msg *ulnet__create_reply_msg(struct ulnet_ni *ni, struct ulnet_msg *get)
{
	struct ulnet_libmd *md = get->md;
	struct ulnet_msg *reply;
	struct ulnet_event *ev;

	if (!md || get->v.hdr.type != ULNET_MSG_GET)
		return NULL;
	reply = ulnet__msg_alloc(ni->node, 0);
	if (!reply)
		return NULL;
	ulnet__lock(ni->node);
	ulnet__md_use(md);
	ulnet__lock_release(ni->node);
	reply->ni = ni;
	reply->md = md;
	if (get->lat == ULNET_LAT_GET) { /* the round trip started at the GET's ulnet_get */
		reply->lat = ULNET_LAT_GET;
		reply->t0 = get->t0;
	}
	if (get->peer) {
		reply->rx_peer = get->peer;
		ulnet__peer_get(get->peer);
	}
	reply->v.hdr.type = ULNET_MSG_REPLY;
	reply->v.hdr.src_nid = get->v.hdr.dest_nid;
	reply->v.hdr.src_pid = get->v.hdr.dest_pid;
	reply->v.hdr.dest_nid = ni->nid;
	reply->v.hdr.dest_pid = ni->node->pid;
	reply->has_event = true;
	ev = &reply->ev;
	ev->type = ULNET_EVENT_REPLY;
	ev->target.nid = ni->nid;
	ev->target.pid = ni->node->pid;
	ev->initiator.nid = get->v.hdr.dest_nid;
	ev->initiator.pid = get->v.hdr.dest_pid;
	ev->sender = get->v.target.nid; /* the last hop */
	ev->msg_type = ULNET_MSG_REPLY;
	ev->pt_index = get->v.hdr.msg.get.ptl_index;
	ev->match_bits = get->v.hdr.msg.get.match_bits;
	ulnet__md_event_init(md, ev);
	return reply;
}

void ulnet__set_reply_len(struct ulnet_msg *reply, uint32_t len)
{
	reply->v.hdr.payload_length = len;
	reply->ev.rlength = len;
	reply->ev.mlength = reply->md && len > reply->md->total ? reply->md->total : len;
}

int ulnet__msg_md(struct ulnet_msg *msg, struct ulnet_lnd_md *out)
{
	struct ulnet_libmd *md = msg->md;

	if (!md)
		return -ENOENT;
	out->form = md->frag_form;
	out->frags = md->frags;
	out->nfrags = md->nfrags;
	out->length = md->total;
	out->page_size = msg->node->page_size;
	/* the slot is claimed under the node lock (NIs on two loops may ask at once); only the claimer
	 * writes it, and the MD, held by this message, cannot be freed meanwhile */
	ulnet__lock(msg->node);
	if (md->lnd_reg_ni && md->lnd_reg_ni != msg->ni) {
		out->lnd_reg = NULL; /* another NI's registration: not this LND's to touch */
	} else {
		md->lnd_reg_ni = msg->ni; /* an empty slot goes to whoever claims it first */
		out->lnd_reg = &md->lnd_reg;
	}
	ulnet__lock_release(msg->node);
	return 0;
}

/* What the node lock's holder owes once it lets the lock go (ulnet__unlock), in order: the
 * lnd_md_unlinked of an MD freed with a registration, which must run as the owner of the registering
 * NI's loop (not under the node lock: lock order), and the final events queued behind such a
 * release, which must not reach the application before it (lnd.h: no registration outlives the
 * memory the application gets back with that event). */
enum owed_kind { OWED_RELEASE, OWED_EVENT };
struct owed {
	struct owed *next;
	enum owed_kind kind;
	struct ulnet_node *node;
	struct owed *then;           /* a release mailed to another loop: the events it delivers after */
	/* OWED_RELEASE */
	struct ulnet_ni *ni;
	void *reg;
	struct ulnet_lnd_md m;
	/* OWED_EVENT */
	struct ulnet_md umd;
	struct ulnet_event ev;
	struct iovec frags[];        /* the released MD's fragments (a copy: the MD is gone) */
};

/* This thread's, FIFO (filled under the node lock, emptied by ulnet__unlock). */
static _Thread_local struct owed *owed_head, **owed_tail;

static void owed_add(struct owed *o)
{
	o->next = NULL;
	if (!owed_head)
		owed_tail = &owed_head;
	*owed_tail = o;
	owed_tail = &o->next;
}

bool ulnet__owed_pending(void)
{
	return owed_head != NULL;
}

void ulnet__event_deliver_after(struct ulnet_node *node, const struct ulnet_md *umd, const struct ulnet_event *ev)
{
	struct owed *o = calloc(1, sizeof(*o));

	if (!o) { /* out of memory: deliver it now rather than lose it */
		ulnet__event_push_unref(node, umd, ev);
		return;
	}
	o->kind = OWED_EVENT;
	o->node = node;
	o->umd = *umd;
	o->ev = *ev;
	owed_add(o);
}

/* Run @o as the owner of its NI's loop: the LND lets go of the registration, then the events queued
 * behind it go out. */
static void release_run(struct ulnet_loop *loop, void *arg)
{
	struct owed *o = arg;

	(void)loop;
	o->ni->ops->lnd_md_unlinked(o->ni, &o->m, o->reg);
	while (o->then) {
		struct owed *e = o->then;

		o->then = e->next;
		ulnet__event_push_unref(e->node, &e->umd, &e->ev);
		free(e);
	}
	free(o);
}

void ulnet__md_lnd_release(struct ulnet_libmd *md)
{
	struct ulnet_ni *ni = md->lnd_reg_ni;
	struct owed *o;
	void *reg = md->lnd_reg;

	md->lnd_reg = NULL;
	md->lnd_reg_ni = NULL;
	if (!ni || !reg || !ni->ops->lnd_md_unlinked)
		return;
	o = calloc(1, sizeof(*o) + md->nfrags * sizeof(struct iovec));
	if (!o) {
		ULNET_LOG(CORE, ERR, "%s: out of memory releasing an MD's registration; it stays until the NI "
			  "shuts down", ni->ops->lnd_name);
		return;
	}
	memcpy(o->frags, md->frags, md->nfrags * sizeof(struct iovec));
	o->kind = OWED_RELEASE;
	o->node = ni->node;
	o->ni = ni;
	o->reg = reg;
	o->m = (struct ulnet_lnd_md){ .form = md->frag_form, .frags = o->frags, .nfrags = md->nfrags,
				      .length = md->total, .page_size = ni->node->page_size };
	owed_add(o);
}

void ulnet__unlock(struct ulnet_node *node)
{
	ulnet__lock_release(node);
	while (owed_head) {
		struct owed *o = owed_head;
		struct ulnet_loop *own = ulnet__owned(node), *to;

		owed_head = o->next;
		if (o->kind == OWED_EVENT) {
			ulnet__event_push_unref(o->node, &o->umd, &o->ev);
			free(o);
			continue;
		}
		to = o->ni->loop;
		if (own == to || ulnet__holds_all_loops()) {
			release_run(to, o);
		} else if (!own) {
			ulnet__loop_enter(to);
			release_run(to, o);
			ulnet__loop_exit(to);
		} else {
			/* another loop's NI: mailed, with the events queued behind it until the next release */
			struct owed **tail = &o->then;

			while (owed_head && owed_head->kind == OWED_EVENT) {
				*tail = owed_head;
				owed_head = owed_head->next;
				tail = &(*tail)->next;
			}
			*tail = NULL;
			if (ulnet__loop_call(to, release_run, o)) {
				ULNET_LOG(CORE, ERR, "%s: out of memory handing an MD's registration back to its loop; "
					  "released here", o->ni->ops->lnd_name);
				release_run(to, o); /* a lesser evil than a registration outliving its memory */
			}
		}
	}
}

void ulnet__md_lnd_release_ni(struct ulnet_node *node, struct ulnet_ni *ni)
{
	for (unsigned b = 0; b < ULNET_HANDLE_BUCKETS; b++) {
		struct ulnet_list *h = &node->handles[b], *p;

		for (p = h->next; p != h; p = p->next) {
			struct ulnet_libmd *md = ulnet_container_of(p, struct ulnet_libmd, hash_link);

			/* the handle table holds MDs and MEs: only MD cookies end in ULNET_OBJ_MD */
			if ((md->cookie & 3) == ULNET_OBJ_MD && md->lnd_reg_ni == ni)
				ulnet__md_lnd_release(md);
		}
	}
}

/* Move every message of @q bound for @lp onto @out. */
static void take_for_peer(struct ulnet_list *q, struct ulnet_peer *lp, struct ulnet_list *out)
{
	struct ulnet_list *p = q->next;

	while (p != q) {
		struct ulnet_msg *m = ulnet_container_of(p, struct ulnet_msg, link);

		p = p->next;
		if (m->peer == lp) {
			ulnet_list_del(&m->link);
			ulnet_list_add_tail(&m->link, out);
		}
	}
}

void ulnet__peer_down(struct ulnet_ni *ni, const struct ulnet_nid *nid, int status)
{
	struct ulnet_peer *lp = ulnet__peer_find(ni, nid, false);
	struct ulnet_list dead;
	char s[ULNET_NID_STRLEN];
	unsigned n = 0;

	if (!lp)
		return;
	if (!lp->down)
		lp->down_count++;
	lp->down = true;
	ulnet_list_init(&dead);
	/* detach first: finalizing returns credits, which must not launch the next dead message */
	take_for_peer(&lp->txq, lp, &dead);
	take_for_peer(&ni->txq, lp, &dead);
	while (!ulnet_list_empty(&dead)) {
		struct ulnet_msg *m = ulnet_list_first(&dead, struct ulnet_msg, link);

		ulnet_list_del(&m->link);
		ulnet__finalize(m, status < 0 ? status : -EHOSTUNREACH);
		n++;
	}
	if (n)
		ULNET_LOG(CORE, INFO, "%s: peer %s down (%s): %u waiting message(s) failed", ni->ops->lnd_name,
			  ulnet_nid_format(nid, s, sizeof(s)), ulnet_strerror(status), n);
}

/* Ask the LND of the NI that reaches @nid about that peer: its limits (@limits) or its RDMA counters. */
static int peer_query(ulnet_node *node, const struct ulnet_nid *nid, bool limits, void *out)
{
	struct ulnet_ni *ni;
	bool local = false;
	int rc;

	if (!node || !nid || !out)
		return -EINVAL;
	ulnet__lock(node);
	ni = ulnet__ni_for_dest(node, nid, &local);
	ulnet__lock_release(node);
	if (!ni)
		return -EHOSTUNREACH;
	if (limits ? !ni->ops->lnd_query_peer : !ni->ops->lnd_peer_rdma_stats)
		return -EOPNOTSUPP;
	/* the LND's state is its loop's: ask as its owner (NIs go only when the node closes) */
	ulnet__loop_enter(ni->loop);
	rc = limits ? ni->ops->lnd_query_peer(ni, nid, out) : ni->ops->lnd_peer_rdma_stats(ni, nid, out);
	ulnet__loop_exit(ni->loop);
	return rc;
}

int ulnet_peer_limits_get(ulnet_node *node, const struct ulnet_nid *nid, struct ulnet_peer_limits *out)
{
	return peer_query(node, nid, true, out);
}

const uint32_t ulnet_rdma_bucket_max[ULNET_RDMA_BUCKETS] = { 4096u, 65536u, 262144u, 1048576u };

int ulnet_peer_rdma_stats_get(ulnet_node *node, const struct ulnet_nid *nid, struct ulnet_peer_rdma_stats *out)
{
	return peer_query(node, nid, false, out);
}
