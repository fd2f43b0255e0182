/* SPDX-License-Identifier: MIT */
/* The node's index of ulnet_mem_alloc allocations (mem_ranges.h): a sorted array of record
 * pointers, binary searched, since a transfer asks it once and allocations come and go rarely. */
#include "mem_ranges.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The first record whose base is above @a. */
static size_t upper(const struct ulnet_mem_ranges *idx, uintptr_t a)
{
	size_t lo = 0, hi = idx->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (idx->v[mid]->base <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The record holding byte @a, or NULL. */
static struct ulnet_mem_range *holding(const struct ulnet_mem_ranges *idx, uintptr_t a)
{
	size_t i = upper(idx, a);

	if (i == 0)
		return NULL;
	return a - idx->v[i - 1]->base < idx->v[i - 1]->len ? idx->v[i - 1] : NULL;
}

int ulnet__mem_ranges_add(struct ulnet_mem_ranges *idx, struct ulnet_mem_range *r)
{
	size_t i;

	if (!r->len || r->base + r->len < r->base)
		return -EINVAL;
	i = upper(idx, r->base);
	if ((i > 0 && r->base - idx->v[i - 1]->base < idx->v[i - 1]->len) ||
	    (i < idx->n && idx->v[i]->base - r->base < r->len))
		return -EEXIST;
	if (idx->n == idx->cap) {
		size_t cap = idx->cap ? idx->cap * 2 : 16;
		struct ulnet_mem_range **v = realloc(idx->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		idx->v = v;
		idx->cap = cap;
	}
	memmove(&idx->v[i + 1], &idx->v[i], (idx->n - i) * sizeof(*idx->v));
	idx->v[i] = r;
	idx->n++;
	return 0;
}

struct ulnet_mem_range *ulnet__mem_ranges_del(struct ulnet_mem_ranges *idx, uintptr_t base)
{
	size_t i = upper(idx, base);
	struct ulnet_mem_range *r;

	if (i == 0 || idx->v[i - 1]->base != base)
		return NULL;
	r = idx->v[i - 1];
	memmove(&idx->v[i - 1], &idx->v[i], (idx->n - i) * sizeof(*idx->v));
	idx->n--;
	return r;
}

struct ulnet_mem_range *ulnet__mem_ranges_find(const struct ulnet_mem_ranges *idx, const struct iovec *iov,
					       unsigned niov, uint64_t nob)
{
	struct ulnet_mem_range *r = NULL;
	uint64_t left = nob;

	for (unsigned i = 0; i < niov && left; i++) {
		uintptr_t a = (uintptr_t)iov[i].iov_base;
		uint64_t len = iov[i].iov_len < left ? iov[i].iov_len : left;

		if (!len)
			continue;
		if (!r && !(r = holding(idx, a)))
			return NULL;
		/* within r: its first byte and its length from there */
		if (a < r->base || a - r->base >= r->len || len > r->len - (a - r->base))
			return NULL;
		left -= len;
	}
	return left ? NULL : r;
}

void ulnet__mem_ranges_free(struct ulnet_mem_ranges *idx)
{
	free(idx->v);
	*idx = (struct ulnet_mem_ranges){ 0 };
}
