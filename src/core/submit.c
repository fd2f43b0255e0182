/* SPDX-License-Identifier: MIT */
/* ulnet_md_bind and ulnet_put without the node lock (issue #11): an API thread streaming Puts
 * otherwise takes the lock twice a Put and sleeps behind the loops' holds. A bound MD is built
 * off the lock (descriptor from the leaf-locked free lists, cookie from an atomic count) and queued
 * on node->pend as a BIND record; the thread's next ulnet_put from that fresh MD, to a NID a
 * locked ulnet_put of this thread found remote, queues a PUT record (its message, header filled)
 * and wakes the target's loop. Whoever takes the node lock next applies the records in order
 * (ulnet__lock: ulnet__pend_drain), so any later call, from any thread, sees them done; the loop
 * that owns the peer posts the Put at its turn, as for a locked ulnet_put. Anything else (errors,
 * lo, a handle that is not this thread's fresh MD) takes the locked path (docs/progress.md). */
#include "internal.h"

/* The MD this thread bound last without the lock, until its first Put or any call that takes the
 * node lock (which may use the MD: its Put is then checked under the lock again) */
_Thread_local struct ulnet_node *ulnet__fresh_node __attribute__((tls_model("initial-exec")));
static _Thread_local struct {
	uint64_t gen, cookie;
	uint32_t total;
	unsigned nfrags;
} fresh;
/* the last target a locked ulnet_put of this thread found remote, and when (NIs added since: checked
 * again) */
static _Thread_local struct {
	struct ulnet_node *node;
	uint64_t gen;
	unsigned ni_epoch;
	struct ulnet_nid nid;
} remote;

static bool fast_ok(struct ulnet_node *node)
{
	return atomic_load_explicit(&node->fast_ok, memory_order_relaxed) && !ulnet__on_loop(node);
}

static void pend_push(struct ulnet_node *node, struct ulnet_pend *p)
{
	struct ulnet_pend *head = atomic_load_explicit(&node->pend, memory_order_relaxed);

	do
		p->next = head;
	while (!atomic_compare_exchange_weak_explicit(&node->pend, &head, p, memory_order_seq_cst,
						      memory_order_relaxed));
}

int ulnet__md_bind_fast(struct ulnet_node *node, const struct ulnet_md *umd, struct ulnet_handle *md_out, int *rc)
{
	struct ulnet_libmd *md;

	if (!fast_ok(node))
		return 0;
	*rc = ulnet__md_build(node, umd, &md);
	if (*rc)
		return 1;
	md_out->cookie = md->cookie;
	if (md->threshold != 0) {
		fresh.gen = node->gen;
		fresh.cookie = md->cookie;
		fresh.total = md->total;
		fresh.nfrags = md->nfrags;
		ulnet__fresh_node = node;
	} else {
		ulnet__fresh_node = NULL;
	}
	md->pend.kind = ULNET_PEND_BIND;
	pend_push(node, &md->pend); /* no wake-up: the next call that names it takes the lock */
	return 1;
}

void ulnet__put_remote_seen(struct ulnet_node *node, const struct ulnet_nid *nid)
{
	remote.node = node;
	remote.gen = node->gen;
	remote.ni_epoch = atomic_load_explicit(&node->ni_epoch, memory_order_relaxed);
	remote.nid = *nid;
}

int ulnet__put_fast(struct ulnet_node *node, struct ulnet_handle mdh, enum ulnet_ack_req ack,
		    const struct ulnet_process_id *target, uint32_t portal, uint64_t match_bits, uint32_t offset,
		    uint64_t hdr_data, int *rc)
{
	struct ulnet_msg *msg;

	if (ulnet__fresh_node != node || fresh.gen != node->gen || fresh.cookie != mdh.cookie)
		return 0;
	ulnet__fresh_node = NULL; /* one Put: the next one checks the threshold under the lock */
	if (!fast_ok(node) || !target || portal >= ULNET_MAX_PORTALS || fresh.total > ULNET_MTU ||
	    remote.node != node || remote.gen != node->gen ||
	    remote.ni_epoch != atomic_load_explicit(&node->ni_epoch, memory_order_relaxed) ||
	    !ulnet_nid_equal(&remote.nid, &target->nid))
		return 0;
	msg = ulnet__msg_alloc_unlocked(node, fresh.nfrags);
	if (!msg)
		return 0;
	ulnet__put_hdr(node, &msg->v.hdr, mdh.cookie, fresh.total, ack, portal, match_bits, offset, hdr_data);
	msg->ev.md_handle.cookie = mdh.cookie;
	msg->v.target = *target;
	msg->pend.kind = ULNET_PEND_PUT;
	/* seq_cst after the push: a loop about to sleep either sees the record or is woken (loop.c).
	 * Always: the record below may be a BIND, which woke nobody */
	pend_push(node, &msg->pend);
	ulnet__loop_wake_if_sleeping(&node->loops[ulnet__nid_loop(node, &target->nid)]);
	*rc = 0;
	return 1;
}

void ulnet__pend_drain(struct ulnet_node *node)
{
	struct ulnet_pend *p = atomic_exchange_explicit(&node->pend, NULL, memory_order_acquire), *fifo = NULL;
	uint64_t saved = node->submit_wake, wake;

	while (p) { /* pushed LIFO: reverse, so a thread's calls apply in its order */
		struct ulnet_pend *next = p->next;

		p->next = fifo;
		fifo = p;
		p = next;
	}
	node->submit_wake = 0;
	while (fifo) {
		p = fifo;
		fifo = p->next;
		if (p->kind == ULNET_PEND_BIND)
			ulnet__md_hash(node, ulnet_container_of(p, struct ulnet_libmd, pend));
		else
			ulnet__put_fast_launch(node, ulnet_container_of(p, struct ulnet_msg, pend));
	}
	/* the loops the Puts were queued on; loop 0 for a failed one's completion. Whatever call took
	 * the lock may end without ulnet__unlock, so wake them here */
	wake = node->submit_wake;
	node->submit_wake = saved;
	if (!ulnet__on_loop(node) && !ulnet_list_empty(&node->done_q))
		wake |= 1;
	for (unsigned i = 0; wake; i++, wake >>= 1)
		if (wake & 1)
			ulnet__loop_wake_if_sleeping(&node->loops[i]);
}
