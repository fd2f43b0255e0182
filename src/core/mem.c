/* SPDX-License-Identifier: MIT */
/* Bulk memory for a node's transfers (ulnet_mem_alloc): from the first NI whose LND has faster
 * memory to offer (o2ib over the shm provider: a memfd the peer maps, so its RDMA is a memcpy), else
 * aligned heap memory. Which allocator gave a buffer is remembered here, process-wide, because the
 * buffer may outlive the NI and be freed by any thread.
 *
 * The node also indexes its live allocations (mem_ranges.h), so an LND may keep one registration
 * per allocation, whatever MDs come and go over it: ulnet_mem_free hands that registration back to
 * its LND (lnd_mem_freed) before the memory goes, so none outlives its memory. Locks: mem_lock,
 * then the owner lock of the registering NI's loop,
 * then a node's lock; never the other way round. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "internal.h"

/* One live allocation, in a process-wide index sorted by address (mem_ranges.h), so a free finds
 * it in log time however many there are. */
struct lnd_mem {
	struct ulnet_mem_range at;            /* [p, p + len): the index's key */
	void (*free_fn)(void *p, size_t len); /* NULL: heap memory */
	struct ulnet_node *node;              /* whose index holds @rec; NULL once the node is closed */
	struct ulnet_mem_range *rec;
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ulnet_mem_ranges mems;

/* Remember @p: its allocator, and (when there is room) a record in @node's index. false: the
 * allocator could not be remembered (the caller frees @p); heap memory without a record is fine,
 * free() is the fallback. */
static bool mem_remember(struct ulnet_node *node, void *p, size_t len, void (*free_fn)(void *, size_t))
{
	struct lnd_mem *m = calloc(1, sizeof(*m));
	struct ulnet_mem_range *rec = m ? calloc(1, sizeof(*rec)) : NULL;
	bool kept = false;

	if (!m)
		return !free_fn;
	m->at = (struct ulnet_mem_range){ .base = (uintptr_t)p, .len = len };
	m->free_fn = free_fn;
	pthread_mutex_lock(&mem_lock);
	if (!ulnet__mem_ranges_add(&mems, &m->at)) {
		if (rec) {
			*rec = m->at;
			ulnet__lock(node);
			if (!ulnet__mem_ranges_add(&node->mem_ranges, rec)) {
				m->rec = rec;
				m->node = node;
				rec = NULL;
			}
			ulnet__lock_release(node);
		}
		kept = free_fn || m->node;
		if (!kept)
			ulnet__mem_ranges_del(&mems, m->at.base);
	}
	pthread_mutex_unlock(&mem_lock);
	free(rec);
	if (!kept)
		free(m);
	return kept || !free_fn;
}

void *ulnet_mem_alloc(ulnet_node *node, size_t align, size_t len)
{
	void (*free_fn)(void *, size_t) = NULL;
	struct ulnet_list *l;
	void *p = NULL;

	if (!node || !len || !align || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	for (unsigned k = 0; !p; k++) {
		struct ulnet_ni *ni = NULL;
		unsigned i = 0;

		/* the k-th NI whose LND has memory of its own; asked as its loop's owner (an NI goes only
		 * when the node closes) */
		ulnet__lock(node);
		for (l = node->nis.next; l != &node->nis && !ni; l = l->next) {
			struct ulnet_ni *c = ulnet_container_of(l, struct ulnet_ni, link);

			if (c->ops->lnd_mem_alloc && i++ == k)
				ni = c;
		}
		ulnet__lock_release(node);
		if (!ni)
			break;
		ulnet__loop_enter(ni->loop);
		p = ni->ops->lnd_mem_alloc(ni, align, len, &free_fn);
		ulnet__loop_exit(ni->loop);
	}
	if (!p) {
		free_fn = NULL;
		if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, len))
			p = NULL;
	}
	if (p && !mem_remember(node, p, len, free_fn)) {
		free_fn(p, len);
		errno = ENOMEM;
		p = NULL;
	}
	return p;
}

/* Drop @rec's registration (its LND's), as the owner of its NI's loop. */
static void rec_release(struct ulnet_mem_range *rec)
{
	struct ulnet_ni *ni = rec->lnd_reg_ni;
	void *reg = rec->lnd_reg;

	rec->lnd_reg = NULL;
	rec->lnd_reg_ni = NULL;
	if (ni && reg && ni->ops->lnd_mem_freed)
		ni->ops->lnd_mem_freed(ni, reg);
}

/* The same from a thread that owns no loop, before the memory goes: the node lock is taken (to take
 * the record off the node's index) only after the loop was entered (lock order). */
static void rec_release_entered(struct ulnet_node *node, struct ulnet_mem_range *rec)
{
	struct ulnet_ni *ni;

	ulnet__lock(node);
	ni = rec->lnd_reg_ni;
	ulnet__lock_release(node);
	if (ni) {
		ulnet__loop_enter(ni->loop);
		ulnet__lock(node);
		ulnet__mem_ranges_del(&node->mem_ranges, rec->base);
		ulnet__lock_release(node);
		rec_release(rec);
		ulnet__loop_exit(ni->loop);
	} else {
		ulnet__lock(node);
		ulnet__mem_ranges_del(&node->mem_ranges, rec->base);
		ulnet__lock_release(node);
	}
}

void ulnet_mem_free(void *p, size_t len)
{
	struct ulnet_mem_range *at;
	struct lnd_mem m = { 0 };

	if (!p)
		return;
	pthread_mutex_lock(&mem_lock);
	at = ulnet__mem_ranges_del(&mems, (uintptr_t)p);
	if (at) {
		m = *ulnet_container_of(at, struct lnd_mem, at);
		free(ulnet_container_of(at, struct lnd_mem, at));
	}
	if (m.node)
		rec_release_entered(m.node, m.rec);
	pthread_mutex_unlock(&mem_lock);
	free(m.rec);
	if (m.free_fn)
		m.free_fn(p, m.at.len);
	else
		free(p);
	(void)len;
}

int ulnet__mem_slot(struct ulnet_ni *ni, const struct iovec *iov, unsigned niov, uint64_t nob,
		    struct ulnet_lnd_mem *out)
{
	struct ulnet_mem_range *rec;
	int rc = 0;

	ulnet__lock(ni->node);
	rec = ulnet__mem_ranges_find(&ni->node->mem_ranges, iov, niov, nob);
	if (!rec)
		rc = -ENOENT;
	else if (rec->lnd_reg_ni && rec->lnd_reg_ni != ni)
		rc = -EBUSY; /* another NI's registration: not this LND's to touch */
	else {
		rec->lnd_reg_ni = ni; /* an empty slot goes to whoever claims it first */
		*out = (struct ulnet_lnd_mem){ .base = rec->base, .len = rec->len, .lnd_reg = &rec->lnd_reg };
	}
	ulnet__lock_release(ni->node);
	return rc;
}

void ulnet__mem_lnd_release_ni(struct ulnet_node *node, struct ulnet_ni *ni)
{
	/* one at a time: the record is taken under the node lock (ulnet_mem_free may run meanwhile),
	 * the LND called without it */
	for (;;) {
		struct ulnet_mem_range *rec = NULL, copy;

		ulnet__lock(node);
		for (size_t i = 0; i < node->mem_ranges.n && !rec; i++)
			if (node->mem_ranges.v[i]->lnd_reg_ni == ni && node->mem_ranges.v[i]->lnd_reg)
				rec = node->mem_ranges.v[i];
		if (rec) {
			copy = *rec;
			rec->lnd_reg = NULL;
			rec->lnd_reg_ni = NULL;
		}
		ulnet__lock_release(node);
		if (!rec)
			return;
		rec_release(&copy);
	}
}

void ulnet__mem_node_closed(struct ulnet_node *node)
{
	/* the NIs are gone (their registrations with them): the memory outlives the node as plain memory */
	pthread_mutex_lock(&mem_lock);
	for (size_t i = 0; i < mems.n;) {
		struct lnd_mem *m = ulnet_container_of(mems.v[i], struct lnd_mem, at);

		if (m->node == node) {
			free(m->rec);
			m->rec = NULL;
			m->node = NULL;
		}
		if (!m->free_fn && !m->node) { /* heap memory: free() will do */
			ulnet__mem_ranges_del(&mems, m->at.base);
			free(m);
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&mem_lock);
	ulnet__mem_ranges_free(&node->mem_ranges);
}
