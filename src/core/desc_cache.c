/* SPDX-License-Identifier: MIT */
/* Free lists of message descriptors (core messages, ACKs, LND tx and NOOP descriptors, MEs) in four size
 * classes, so a node in steady state sends and receives without calling malloc. Each loop has its
 * own, used by its owner; a thread that owns no loop uses the node's, under the node lock. Any
 * descriptor may go back to any cache. Each class keeps at most a bounded number of free descriptors; larger
 * requests and a full list go to the heap. The node counts both (stats: desc_gets, desc_heap_allocs). */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* 256: MEs (128 bytes); 1024: messages and MDs of a few fragments; the larger: LND descriptors */
static const size_t class_size[ULNET_DESC_CLASSES] = { 256, 1024, 4096, 20480 };
/* about 1, 4, 2 and 1.3 MiB of cached descriptors at most */
static const unsigned class_keep[ULNET_DESC_CLASSES] = { 4096, 4096, 512, 64 };

struct desc_free {
	struct desc_free *next;
};

static int size_class(size_t size)
{
	for (int c = 0; c < ULNET_DESC_CLASSES; c++)
		if (size <= class_size[c])
			return c;
	return -1;
}

/* The cache the caller may use. */
static struct ulnet_desc_cache *cache(struct ulnet_node *node)
{
	struct ulnet_loop *own = ulnet__owned(node);

	return own ? &own->descs : &node->descs;
}

static void *get_from(struct ulnet_desc_cache *dc, struct ulnet_stats *st, size_t size, size_t hdr)
{
	int c = size_class(size);

	st->desc_gets++;
	if (c >= 0 && dc->free[c]) {
		struct desc_free *f = dc->free[c];

		dc->free[c] = f->next;
		dc->nfree[c]--;
		memset(f, 0, hdr < size ? hdr : size);
		return f;
	}
	st->desc_heap_allocs++;
	return calloc(1, c >= 0 ? class_size[c] : size);
}

void *ulnet__desc_get_hdr(struct ulnet_node *node, size_t size, size_t hdr)
{
	return get_from(cache(node), ulnet__stats(node), size, hdr);
}

void *ulnet__node_desc_get(struct ulnet_node *node, size_t size, size_t hdr)
{
	return get_from(&node->descs, &node->stats, size, hdr);
}

void *ulnet__desc_get(struct ulnet_node *node, size_t size)
{
	return ulnet__desc_get_hdr(node, size, size);
}

static void put_to(struct ulnet_desc_cache *dc, void *p, size_t size)
{
	int c = size_class(size);
	struct desc_free *f = p;

	if (!p)
		return;
	if (c < 0 || dc->nfree[c] >= class_keep[c]) {
		free(p);
		return;
	}
	f->next = dc->free[c];
	dc->free[c] = f;
	dc->nfree[c]++;
}

void ulnet__desc_put(struct ulnet_node *node, void *p, size_t size)
{
	put_to(cache(node), p, size);
}

void ulnet__node_desc_put(struct ulnet_node *node, void *p, size_t size)
{
	put_to(&node->descs, p, size);
}

void ulnet__desc_cache_free(struct ulnet_desc_cache *dc)
{
	for (int c = 0; c < ULNET_DESC_CLASSES; c++) {
		while (dc->free[c]) {
			struct desc_free *f = dc->free[c];

			dc->free[c] = f->next;
			free(f);
		}
		dc->nfree[c] = 0;
	}
}
