/* SPDX-License-Identifier: MIT */
/* Router buffers: three pools by payload size in bytes (tiny: none, small: 4 KiB, large: LNET_MTU),
 * whatever the node's page size, so a 64 KiB-page router holds what a 4 KiB one does for the same
 * traffic (LNet sizes them in pages: its small buffer is 64 KiB there, its large one 16 MiB with
 * LNET_MAX_IOV pages). Buffers are made as traffic needs them, up to each pool's count and to the
 * node's memory cap, and kept for reuse; lowering a count or the cap frees buffers as they come back.
 * Everything here runs under the node lock, except the allocation of a new buffer. */
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

bool ulnet__rtr_available(struct ulnet_node *node, unsigned cls)
{
	const struct ulnet_rtr_pool *p = &node->rtr.pool[cls];

	if (p->in_use >= pool_count(node, cls))
		return false;
	return p->nfree > 0 || node->rtr.memory + p->size <= node->routing.memory_max;
}

void *ulnet__rtr_take(struct ulnet_node *node, unsigned cls, bool *fresh)
{
	struct ulnet_rtr_pool *p = &node->rtr.pool[cls];
	void *buf = NULL;

	*fresh = false;
	if (++p->in_use > p->max_in_use)
		p->max_in_use = p->in_use;
	if (p->size == 0)
		return NULL;
	if (p->nfree) {
		buf = p->free;
		p->free = *(void **)buf;
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

void *ulnet__rtr_alloc(unsigned cls)
{
	void *buf = NULL;

	/* page-aligned as a kernel router's are: an LND maps it in few fragments whatever it does */
	if (posix_memalign(&buf, 4096, cls == ULNET_RTR_SMALL ? ULNET_RTR_SMALL_SIZE : ULNET_MTU))
		return NULL;
	return buf;
}

void ulnet__rtr_put(struct ulnet_node *node, unsigned cls, void *buf)
{
	struct ulnet_rtr_pool *p = &node->rtr.pool[cls];

	p->in_use--;
	if (p->size == 0)
		return;
	/* keep it unless the pool or the memory shrank below what exists */
	if (buf && p->allocated <= pool_count(node, cls) && node->rtr.memory <= node->routing.memory_max) {
		*(void **)buf = p->free;
		p->free = buf;
		p->nfree++;
		return;
	}
	free(buf);
	p->allocated--;
	node->rtr.memory -= p->size;
}

void ulnet__rtr_free_all(struct ulnet_node *node)
{
	for (unsigned i = 0; i < ULNET_RTR_POOLS; i++) {
		struct ulnet_rtr_pool *p = &node->rtr.pool[i];

		while (p->free) {
			void *b = p->free;

			p->free = *(void **)b;
			free(b);
		}
		p->nfree = 0;
	}
}
