/* SPDX-License-Identifier: MIT */
/* Fault rules on a node (docs/faults.md): the rule list under the node lock, and what a rule does to a
 * message its loop is about to hand to the LND. The data path comes here only for a message the
 * screen (fault_rule.h) lets through. Drop acts on send and on receive; delay, corrupt,
 * duplicate and reorder on send (and so on what a router forwards: stage 2 sends through
 * ulnet__post_send too). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "fault_rule.h"

/* A message a rule holds back: delayed until @deadline, or held for reorder until the next message
 * to its peer goes (or @deadline). Its credits stay taken: a held message still occupies the wire. */
struct fault_wait {
	struct ulnet_list link;
	struct ulnet_msg *msg;
	uint64_t deadline;
	bool reorder;
};

/* A loop's fault state: its copy of the rules and what it holds, by deadline. The loop's owner only. */
struct ulnet_fault_loop {
	struct ulnet_loop *loop;
	uint64_t gen;                /* node->fault_gen the copy was taken at */
	struct ulnet_fault_state *rules;
	unsigned n_rules;
	struct ulnet_list waits;
	struct ulnet_timer timer;
};

/* ---- the rule list (node lock) ---- */

/* Node lock held: the loops take a new copy at their next message. */
static void publish(struct ulnet_node *node)
{
	/* LND-level rules (fault_lnd.c) are none of the data path's business: the screen leaves them
	 * out, so with only those the data path still pays its one atomic load */
	uint64_t bits;
	unsigned field = ulnet__fault_screen_make(node->faults, node->n_faults, &bits);

	atomic_fetch_add_explicit(&node->fault_gen, 1, memory_order_release);
	/* the bits before the field: a message judged by the new field with the old bits is one that
	 * raced the change, and would have been judged either way */
	atomic_store_explicit(&node->fault_screen_bits, bits, memory_order_release);
	atomic_store_explicit(&node->fault_screen, field, memory_order_release);
}

int ulnet_fault_add(struct ulnet_node *node, const struct ulnet_fault_rule *r)
{
	const char *why = NULL;

	if (!node)
		return -EINVAL;
	if (ulnet_fault_rule_check(r, &why)) {
		ULNET_LOG(CORE, ERR, "fault %s add: %s", r ? ulnet_fault_kind_name(r->kind) : "?", why);
		return -EINVAL;
	}
	ulnet__lock(node);
	if (node->n_faults == node->cap_faults) {
		unsigned cap = node->cap_faults ? 2 * node->cap_faults : 8;
		struct ulnet_fault_state *v = realloc(node->faults, cap * sizeof(*v));

		if (!v) {
			ulnet__lock_release(node);
			return -ENOMEM;
		}
		node->faults = v;
		node->cap_faults = cap;
	}
	ulnet__fault_state_init(&node->faults[node->n_faults], r, ulnet__node_now(node));
	node->faults[node->n_faults++].id = ++node->fault_next_id;
	publish(node);
	ulnet__lock_release(node);
	if (r->kind == ULNET_FAULT_STALL) /* LND-level: the live connections are judged now */
		ulnet__fault_lnd_changed(node);
	return 0;
}

int ulnet_fault_del(struct ulnet_node *node, enum ulnet_fault_kind kind, const struct ulnet_nid *src,
		    const struct ulnet_nid *dst)
{
	unsigned j = 0;
	int n = 0;

	if (!node)
		return -EINVAL;
	ulnet__lock(node);
	for (unsigned i = 0; i < node->n_faults; i++) {
		const struct ulnet_fault_rule *r = &node->faults[i].info.rule;
		bool gone = r->kind == kind && (!src || ulnet__nid_equal(src, &r->src)) &&
			    (!dst || ulnet__nid_equal(dst, &r->dst));

		if (gone)
			n++;
		else
			node->faults[j++] = node->faults[i];
	}
	node->n_faults = j;
	publish(node);
	ulnet__lock_release(node);
	if (n && kind == ULNET_FAULT_STALL) /* LND-level: what the rules stalled may go on */
		ulnet__fault_lnd_changed(node);
	return n;
}

static struct ulnet_fault_loop *loop_state(struct ulnet_loop *loop);

/* Rule @id's state in @loop's copy (its owner), or NULL. */
static struct ulnet_fault_state *loop_rule(struct ulnet_loop *loop, uint64_t id)
{
	struct ulnet_fault_loop *fl = loop->fault;

	for (unsigned i = 0; fl && i < fl->n_rules; i++)
		if (fl->rules[i].id == id)
			return &fl->rules[i];
	return NULL;
}

int ulnet_fault_info_get(struct ulnet_node *node, enum ulnet_fault_kind kind, unsigned idx,
			 struct ulnet_fault_info *out)
{
	uint64_t id = 0;
	int rc = -ENOENT;

	if (!node || !out)
		return -EINVAL;
	ulnet__lock(node);
	for (unsigned i = 0; i < node->n_faults; i++) {
		if (kind != ULNET_FAULT_KINDS && node->faults[i].info.rule.kind != kind)
			continue;
		if (idx-- == 0) {
			*out = node->faults[i].info;
			id = node->faults[i].id;
			rc = 0;
			break;
		}
	}
	ulnet__lock_release(node);
	/* the counters are the loops': each counted what it sent and received */
	for (unsigned l = 0; rc == 0 && l < node->n_loops; l++) {
		struct ulnet_fault_state *st;

		ulnet__loop_enter(&node->loops[l]);
		st = loop_rule(&node->loops[l], id);
		if (st) {
			out->matched += st->info.matched;
			out->acted += st->info.acted;
		}
		ulnet__loop_exit(&node->loops[l]);
	}
	return rc;
}

void ulnet_fault_reset(struct ulnet_node *node)
{
	if (!node)
		return;
	ulnet__fault_lnd_reset(node); /* LND-level rules count under the node lock, not per loop */
	for (unsigned l = 0; l < node->n_loops; l++) {
		struct ulnet_fault_loop *fl;

		ulnet__loop_enter(&node->loops[l]);
		fl = node->loops[l].fault;
		for (unsigned i = 0; fl && i < fl->n_rules; i++)
			fl->rules[i].info.matched = fl->rules[i].info.acted = 0;
		ulnet__loop_exit(&node->loops[l]);
	}
}

void ulnet__faults_free(struct ulnet_node *node)
{
	free(node->faults);
	node->faults = NULL;
	node->n_faults = node->cap_faults = 0;
}

/* @loop's copy of the rules, taken again if the node's changed (a rule kept keeps its counters and
 * its place in its 1 in N). NULL: no memory (no rule acts). The loop's owner. */
static struct ulnet_fault_loop *loop_rules(struct ulnet_loop *loop)
{
	struct ulnet_node *node = loop->node;
	struct ulnet_fault_loop *fl = loop->fault;
	uint64_t gen = atomic_load_explicit(&node->fault_gen, memory_order_acquire);
	struct ulnet_fault_state *v;

	if (fl && fl->gen == gen)
		return fl;
	if (!fl && !(fl = loop_state(loop)))
		return NULL;
	ulnet__lock(node);
	gen = atomic_load_explicit(&node->fault_gen, memory_order_relaxed);
	v = calloc(node->n_faults ? node->n_faults : 1, sizeof(*v));
	if (v) {
		unsigned n = 0;

		for (unsigned i = 0; i < node->n_faults; i++) {
			struct ulnet_fault_state *old = loop_rule(loop, node->faults[i].id);

			if (ulnet_fault_kind_is_lnd(node->faults[i].info.rule.kind))
				continue; /* LND-level rules: not in the per-message copy (fault_lnd.c) */
			v[n++] = old ? *old : node->faults[i];
		}
		free(fl->rules);
		fl->rules = v;
		fl->n_rules = n;
		fl->gen = gen;
	}
	ulnet__lock_release(node);
	return v ? fl : NULL;
}

/* The first rule that acts on @hdr (@send: the node sends it; else it received it: drop rules only),
 * in @loop's copy: valid until this loop takes a new one (its next decide). NULL: none acts. A
 * pointer, not a copy of the rule: copying it cost more than the match (callgrind). */
static const struct ulnet_fault_state *decide(struct ulnet_loop *loop, const struct ulnet_hdr *hdr,
					      const struct ulnet_nid *local, bool send)
{
	struct ulnet_fault_loop *fl = loop_rules(loop);
	uint64_t now = 0;

	for (unsigned i = 0; fl && i < fl->n_rules; i++) {
		struct ulnet_fault_state *st = &fl->rules[i];

		if (!send && st->info.rule.kind != ULNET_FAULT_DROP)
			continue;
		if (!ulnet__fault_matches(&st->info.rule, hdr, local))
			continue;
		if (!now && !st->info.rule.rate)
			now = ulnet__node_now(loop->node); /* the clock only for interval rules */
		if (ulnet__fault_decide(st, now))
			return st;
	}
	return NULL;
}

bool ulnet__fault_recv(struct ulnet_ni *ni, const struct ulnet_hdr *hdr)
{
	return decide(ni->loop, hdr, &ni->nid, false) != NULL;
}

/* ---- acting on a send (the owner of the message's loop) ---- */

static void wait_timer(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now);

/* @loop's fault state, made at its first need. The loop's owner. */
static struct ulnet_fault_loop *loop_state(struct ulnet_loop *loop)
{
	struct ulnet_fault_loop *fl = loop->fault;

	if (fl)
		return fl;
	fl = calloc(1, sizeof(*fl));
	if (!fl)
		return NULL;
	fl->loop = loop;
	ulnet_list_init(&fl->waits);
	fl->timer.fn = wait_timer;
	loop->fault = fl;
	return fl;
}

static void rearm(struct ulnet_fault_loop *fl)
{
	if (ulnet_list_empty(&fl->waits)) {
		ulnet__timer_cancel(fl->loop->node, &fl->timer);
		return;
	}
	ulnet__timer_arm(fl->loop->node, &fl->timer,
			 ulnet_list_first(&fl->waits, struct fault_wait, link)->deadline);
}

/* Hold @msg until @deadline (kept in deadline order). false: no memory (the caller sends it now). */
static bool hold(struct ulnet_loop *loop, struct ulnet_msg *msg, uint64_t deadline, bool reorder)
{
	struct ulnet_fault_loop *fl = loop_state(loop);
	struct fault_wait *w = fl ? malloc(sizeof(*w)) : NULL;
	struct ulnet_list *p;

	if (!w)
		return false;
	w->msg = msg;
	w->deadline = deadline;
	w->reorder = reorder;
	for (p = fl->waits.prev; p != &fl->waits; p = p->prev)
		if (ulnet_container_of(p, struct fault_wait, link)->deadline <= deadline)
			break;
	ulnet_list_add_head(&w->link, p); /* after p */
	loop->fault_reordering += reorder;
	rearm(fl);
	return true;
}

static void wait_timer(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now)
{
	struct ulnet_fault_loop *fl = ulnet_container_of(t, struct ulnet_fault_loop, timer);

	(void)node;
	while (!ulnet_list_empty(&fl->waits)) {
		struct fault_wait *w = ulnet_list_first(&fl->waits, struct fault_wait, link);
		struct ulnet_msg *msg = w->msg;

		if (w->deadline > now)
			break;
		ulnet_list_del(&w->link);
		fl->loop->fault_reordering -= w->reorder;
		free(w);
		ulnet__lnd_send(msg);
	}
	rearm(fl);
}

/* The message a reorder rule holds for @msg's peer (taken off the list), or NULL. */
static struct ulnet_msg *held_for(struct ulnet_loop *loop, const struct ulnet_msg *msg)
{
	struct ulnet_fault_loop *fl = loop->fault;
	struct ulnet_list *p;

	if (!fl)
		return NULL;
	for (p = fl->waits.next; p != &fl->waits; p = p->next) {
		struct fault_wait *w = ulnet_container_of(p, struct fault_wait, link);
		struct ulnet_msg *m = w->msg;

		if (w->reorder && m->ni == msg->ni && m->peer == msg->peer &&
		    ulnet__nid_equal(&m->v.target.nid, &msg->v.target.nid)) {
			ulnet_list_del(&w->link);
			loop->fault_reordering--;
			free(w);
			rearm(fl);
			return m;
		}
	}
	return NULL;
}

void ulnet__fault_loop_flush(struct ulnet_loop *loop)
{
	struct ulnet_fault_loop *fl = loop->fault;

	if (!fl)
		return;
	while (!ulnet_list_empty(&fl->waits)) {
		struct fault_wait *w = ulnet_list_first(&fl->waits, struct fault_wait, link);

		ulnet_list_del(&w->link);
		loop->fault_reordering -= w->reorder;
		ulnet__finalize(w->msg, -ESHUTDOWN);
		free(w);
	}
	ulnet__timer_cancel(loop->node, &fl->timer);
	free(fl->rules);
	free(fl);
	loop->fault = NULL;
}

/* What @loop holds for @ni (a delayed or reordered send) fails with -ESHUTDOWN: the NI goes. */
void ulnet__fault_loop_flush_ni(struct ulnet_loop *loop, const struct ulnet_ni *ni)
{
	struct ulnet_fault_loop *fl = loop->fault;
	struct ulnet_list *p, *tmp;

	if (!fl)
		return;
	ulnet_list_for_each_safe(p, tmp, &fl->waits) {
		struct fault_wait *w = ulnet_container_of(p, struct fault_wait, link);

		if (w->msg->ni != ni)
			continue;
		ulnet_list_del(&w->link);
		loop->fault_reordering -= w->reorder;
		ulnet__finalize(w->msg, -ESHUTDOWN);
		free(w);
	}
	rearm(fl);
}

/* A copy of @msg's payload in one buffer the message owns (freed with it): what corrupt flips and
 * duplicate sends, so the application's memory is never touched. NULL: no payload, or no memory. */
static void *payload_copy(struct ulnet_msg *msg)
{
	uint32_t len = msg->v.hdr.payload_length, off = 0;
	uint8_t *buf;

	if (len == 0 || (msg->v.hdr.type != ULNET_MSG_PUT && msg->v.hdr.type != ULNET_MSG_REPLY))
		return NULL;
	buf = malloc(len);
	if (!buf)
		return NULL;
	for (unsigned i = 0; i < msg->v.niov && off < len; i++) {
		size_t n = msg->v.iov[i].iov_len < len - off ? msg->v.iov[i].iov_len : len - off;

		memcpy(buf + off, msg->v.iov[i].iov_base, n);
		off += (uint32_t)n;
	}
	return buf;
}

/* Make @msg send @buf (its own copy) instead of its fragments. */
static void payload_swap(struct ulnet_msg *msg, void *buf)
{
	free(msg->fault_buf);
	msg->fault_buf = buf;
	msg->iov_store[0].iov_base = buf;
	msg->iov_store[0].iov_len = msg->v.hdr.payload_length;
	msg->v.iov = msg->v.rdma_iov = msg->iov_store;
	msg->v.niov = msg->v.rdma_niov = 1;
	msg->v.rdma_len = msg->v.hdr.payload_length;
}

static bool corrupt(struct ulnet_msg *msg, uint64_t nth)
{
	uint8_t *buf = payload_copy(msg);

	if (!buf)
		return false;
	/* one byte, somewhere else each time: a check that only looks at the ends must still catch it */
	buf[(nth * 2654435761u) % msg->v.hdr.payload_length] ^= 0xa5;
	payload_swap(msg, buf);
	return true;
}

/* A second copy of @msg, sent after it through the credit path (it waits for credits as any
 * message), with no MD and no event: the receiver sees the same header twice. */
static void duplicate(struct ulnet_loop *loop, struct ulnet_msg *msg)
{
	struct ulnet_msg *dup = ulnet__msg_alloc(loop->node, 1);
	void *buf;

	if (!dup)
		return;
	dup->v.hdr = msg->v.hdr;
	dup->v.target = msg->v.target;
	dup->v.niov = dup->v.rdma_niov = 0;
	dup->v.rdma_iov = NULL;
	dup->v.rdma_len = 0;
	buf = payload_copy(msg);
	if (buf)
		payload_swap(dup, buf);
	else if (msg->v.hdr.payload_length && (msg->v.hdr.type == ULNET_MSG_PUT || msg->v.hdr.type == ULNET_MSG_REPLY)) {
		ulnet__msg_free(dup); /* no memory for the payload: no duplicate */
		return;
	}
	dup->loop = loop;
	dup->ni = msg->ni;
	dup->peer = msg->peer;
	if (dup->peer)
		ulnet__peer_get(dup->peer);
	dup->is_tx = true;
	dup->fault_seen = true;
	ulnet__post_send(dup);
}

bool ulnet__fault_send(struct ulnet_msg *msg)
{
	struct ulnet_loop *loop = msg->loop;
	const struct ulnet_fault_state *st;
	enum ulnet_fault_kind kind = ULNET_FAULT_KINDS; /* none */
	struct ulnet_msg *held;
	uint64_t now = 0;

	msg->fault_seen = true;
	st = decide(loop, &msg->v.hdr, &msg->ni->nid, true);
	if (st) {
		kind = st->info.rule.kind;
		now = ulnet__node_now(msg->node);
	}
	if (kind == ULNET_FAULT_DELAY && hold(loop, msg, now + (uint64_t)st->info.rule.latency_ms * 1000000ull, false))
		return true;
	held = held_for(loop, msg);
	if (kind == ULNET_FAULT_REORDER && !held &&
	    hold(loop, msg, now + (uint64_t)st->info.rule.hold_ms * 1000000ull, true))
		return true;
	if (kind == ULNET_FAULT_DROP) {
		/* the credits come back in the completion phase, as after any failed send */
		ulnet__finalize(msg, ulnet_fault_health_errno(st->info.rule.health));
	} else {
		if (kind == ULNET_FAULT_CORRUPT)
			corrupt(msg, st->info.matched); /* the rule's count: a different byte each time */
		ulnet__lnd_send(msg); /* finalized or not, @msg lives until the completion phase */
		if (kind == ULNET_FAULT_DUPLICATE)
			duplicate(loop, msg);
	}
	if (held) /* the next message to its peer went: now the held one, out of order */
		ulnet__lnd_send(held);
	return true;
}
