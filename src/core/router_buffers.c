/* SPDX-License-Identifier: MIT */
/* Router buffers: three pools by payload size in bytes (tiny: none, small: 4 KiB, large: LNET_MTU),
 * whatever the node's page size, so a 64 KiB-page router holds what a 4 KiB one does for the same
 * traffic (LNet sizes them in pages: its small buffer is 64 KiB there, its large one 16 MiB with
 * LNET_MAX_IOV pages). Buffers are made as traffic needs them, up to each pool's count and to the
 * node's memory cap, and kept for reuse; lowering a count or the cap frees buffers as they come back.
 * A large buffer is made of the receiving NI's LND memory when it has some (o2ib over shm: a memfd
 * its peers map, so their RDMA into it is a memcpy, not a process_vm_writev). Everything here runs
 * under the node lock, except the allocation of a new buffer (as the owner of the receiving loop). */
#include <stdlib.h>
#include "internal.h"

void ulnet__rtr_init(struct ulnet_node *node)
{
	node->rtr.pool[ULNET_RTR_TINY].size = 0;
	node->rtr.pool[ULNET_RTR_SMALL].size = ULNET_RTR_SMALL_SIZE;
	node->rtr.pool[ULNET_RTR_LARGE].size = ULNET_MTU;
	node->routing = (struct ulnet_routing_conf){
		.tiny = ULNET_RTR_TINY_DEFAULT, .small = ULNET_RTR_SMALL_DEFAULT, .large = ULNET_RTR_LARGE_DEFAULT,
		.memory_max = ULNET_RTR_MEMORY_MAX_DEFAULT, .check_interval = ULNET_RTR_CHECK_INTERVAL_DEFAULT,
		.ping_timeout = ULNET_RTR_PING_TIMEOUT_DEFAULT, .sensitivity = ULNET_RTR_SENSITIVITY_DEFAULT,
	};
}

unsigned ulnet__rtr_class(uint32_t len)
{
	return len == 0 ? ULNET_RTR_TINY : len <= ULNET_RTR_SMALL_SIZE ? ULNET_RTR_SMALL : ULNET_RTR_LARGE;
}

static uint32_t pool_count(const struct ulnet_node *node, unsigned cls)
{
	return cls == ULNET_RTR_TINY ? node->routing.tiny : cls == ULNET_RTR_SMALL ? node->routing.small
										    : node->routing.large;
}

static void buf_free(struct ulnet_rtr_buf *buf, size_t len)
{
	if (buf->free_fn)
		buf->free_fn(buf->mem, len);
	else
		free(buf->mem);
	free(buf);
}

/* Free one kept buffer of @p. */
static void drop_kept(struct ulnet_node *node, struct ulnet_rtr_pool *p)
{
	struct ulnet_rtr_buf **from = p->free_heap ? &p->free_heap : &p->free_lnd;
	struct ulnet_rtr_buf *buf = *from;

	*from = buf->next;
	p->nfree--;
	p->allocated--;
	node->rtr.memory -= p->size;
	buf_free(buf, p->size);
}

/* Free kept buffers of any pool until @need more bytes fit under the cap: a kept buffer is a cache,
 * and a pool whose buffers are all kept elsewhere must not wait for ones that never come back.
 * False when what is in use leaves no room (it will come back). */
static bool make_room(struct ulnet_node *node, uint64_t need)
{
	for (unsigned i = 0; i < ULNET_RTR_POOLS; i++)
		while (node->rtr.pool[i].nfree && node->rtr.memory + need > node->routing.memory_max)
			drop_kept(node, &node->rtr.pool[i]);
	return node->rtr.memory + need <= node->routing.memory_max;
}

bool ulnet__rtr_available(struct ulnet_node *node, unsigned cls)
{
	struct ulnet_rtr_pool *p = &node->rtr.pool[cls];

	if (p->in_use >= pool_count(node, cls))
		return false;
	return p->nfree > 0 || make_room(node, p->size);
}

void ulnet__rtr_trim(struct ulnet_node *node)
{
	for (unsigned i = 0; i < ULNET_RTR_POOLS; i++) {
		struct ulnet_rtr_pool *p = &node->rtr.pool[i];

		while (p->nfree && (p->allocated > pool_count(node, i) || node->rtr.memory > node->routing.memory_max))
			drop_kept(node, p);
	}
}

struct ulnet_rtr_buf *ulnet__rtr_take(struct ulnet_node *node, unsigned cls, struct ulnet_ni *ni, bool *fresh)
{
	struct ulnet_rtr_pool *p = &node->rtr.pool[cls];
	bool lnd = cls == ULNET_RTR_LARGE && ni->ops->lnd_mem_alloc; /* see ulnet__rtr_alloc */
	struct ulnet_rtr_buf **from = lnd && p->free_lnd ? &p->free_lnd : &p->free_heap;
	struct ulnet_rtr_buf *buf;

	*fresh = false;
	if (++p->in_use > p->max_in_use)
		p->max_in_use = p->in_use;
	if (p->size == 0)
		return NULL;
	/* an NI with memory of its own gets a new buffer of it rather than a kept heap one, while
	 * there is room: a peer writes into such memory by a memcpy (the shm provider) */
	if (*from && (!lnd || from == &p->free_lnd || p->allocated >= pool_count(node, cls) ||
		      node->rtr.memory + p->size > node->routing.memory_max)) {
		buf = *from;
		*from = buf->next;
		p->nfree--;
		return buf;
	}
	if (!*from && p->nfree) { /* no room for a new one (ulnet__rtr_available): any kept one */
		from = p->free_lnd ? &p->free_lnd : &p->free_heap;
		buf = *from;
		*from = buf->next;
		p->nfree--;
		return buf;
	}
	*fresh = true;
	p->allocated++;
	node->rtr.memory += p->size;
	if (node->rtr.memory > node->rtr.memory_max_seen)
		node->rtr.memory_max_seen = node->rtr.memory;
	return NULL;
}

struct ulnet_rtr_buf *ulnet__rtr_alloc(struct ulnet_ni *ni, unsigned cls)
{
	size_t len = cls == ULNET_RTR_SMALL ? ULNET_RTR_SMALL_SIZE : ULNET_MTU;
	struct ulnet_rtr_buf *buf = calloc(1, sizeof(*buf));

	if (!buf)
		return NULL;
	/* only large buffers move by RDMA (o2ib sends 4 KiB IMMEDIATE) */
	if (cls == ULNET_RTR_LARGE && ni->ops->lnd_mem_alloc)
		buf->mem = ni->ops->lnd_mem_alloc(ni, 4096, len, &buf->free_fn);
	/* page-aligned as a kernel router's are: an LND maps it in few fragments whatever it does */
	if (!buf->mem) {
		buf->free_fn = NULL;
		if (posix_memalign(&buf->mem, 4096, len))
			buf->mem = NULL;
	}
	if (!buf->mem) {
		free(buf);
		return NULL;
	}
	return buf;
}

void ulnet__rtr_put(struct ulnet_node *node, unsigned cls, struct ulnet_rtr_buf *buf)
{
	struct ulnet_rtr_pool *p = &node->rtr.pool[cls];

	p->in_use--;
	if (p->size == 0)
		return;
	/* over the count or the cap: a kept heap buffer goes before one of LND memory */
	if (buf && buf->free_fn && p->free_heap &&
	    (p->allocated > pool_count(node, cls) || node->rtr.memory > node->routing.memory_max))
		drop_kept(node, p);
	/* keep it unless the pool or the memory shrank below what exists */
	if (buf && p->allocated <= pool_count(node, cls) && node->rtr.memory <= node->routing.memory_max) {
		struct ulnet_rtr_buf **to = buf->free_fn ? &p->free_lnd : &p->free_heap;

		buf->next = *to;
		*to = buf;
		p->nfree++;
		return;
	}
	if (buf)
		buf_free(buf, p->size);
	p->allocated--;
	node->rtr.memory -= p->size;
}

void ulnet__rtr_free_all(struct ulnet_node *node)
{
	for (unsigned i = 0; i < ULNET_RTR_POOLS; i++) {
		struct ulnet_rtr_pool *p = &node->rtr.pool[i];
		struct ulnet_rtr_buf *lists[2] = { p->free_lnd, p->free_heap };

		for (int k = 0; k < 2; k++) {
			while (lists[k]) {
				struct ulnet_rtr_buf *b = lists[k];

				lists[k] = b->next;
				buf_free(b, p->size);
			}
		}
		p->free_lnd = p->free_heap = NULL;
		p->nfree = 0;
	}
}
