/* SPDX-License-Identifier: MIT */
/* Bulk memory for a node's transfers (ulnet_mem_alloc): from the first NI whose LND has faster
 * memory to offer (o2ib over the shm provider: a memfd the peer maps, so its RDMA is a memcpy), else
 * aligned heap memory. Which allocator gave a buffer is remembered here, process-wide, because the
 * buffer may outlive the NI and be freed by any thread. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "internal.h"

struct lnd_mem {
	void *p;
	size_t len;
	void (*free_fn)(void *p, size_t len);
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lnd_mem *mems;
static size_t n_mems, cap_mems;

static bool mem_remember(void *p, size_t len, void (*free_fn)(void *, size_t))
{
	bool ok = true;

	pthread_mutex_lock(&mem_lock);
	if (n_mems == cap_mems) {
		size_t cap = cap_mems ? cap_mems * 2 : 32;
		struct lnd_mem *m = realloc(mems, cap * sizeof(*m));

		if (m) {
			mems = m;
			cap_mems = cap;
		} else {
			ok = false;
		}
	}
	if (ok)
		mems[n_mems++] = (struct lnd_mem){p, len, free_fn};
	pthread_mutex_unlock(&mem_lock);
	return ok;
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
	pthread_mutex_lock(&node->lock);
	for (l = node->nis.next; l != &node->nis && !p; l = l->next) {
		struct ulnet_ni *ni = ulnet_container_of(l, struct ulnet_ni, link);

		if (ni->ops->lnd_mem_alloc)
			p = ni->ops->lnd_mem_alloc(ni, align, len, &free_fn);
	}
	pthread_mutex_unlock(&node->lock);
	if (p && !mem_remember(p, len, free_fn)) {
		free_fn(p, len);
		p = NULL;
	}
	if (!p && posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, len))
		p = NULL;
	return p;
}

void ulnet_mem_free(void *p, size_t len)
{
	struct lnd_mem m = {0};

	if (!p)
		return;
	pthread_mutex_lock(&mem_lock);
	for (size_t i = 0; i < n_mems; i++)
		if (mems[i].p == p) {
			m = mems[i];
			mems[i] = mems[--n_mems];
			break;
		}
	pthread_mutex_unlock(&mem_lock);
	if (m.free_fn)
		m.free_fn(p, m.len);
	else
		free(p);
	(void)len;
}
