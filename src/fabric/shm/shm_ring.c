/* SPDX-License-Identifier: MIT */
/* SEND rings in shared memory (shm_ring.h): the copies, the bounds and the doorbell flags. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "shm_ring.h"
#include "wire.h"

#define SHM_RING_MAGIC 0x5352u /* "RS" */

/* Two nodes of one process (the in-process tests) map a connection's rings once, at one address:
 * one mapping fewer, and ThreadSanitizer, which keys synchronization by address, sees the
 * producer's release and the consumer's acquire on the same word. */
struct ring_mapping {
	struct ring_mapping *next;
	dev_t dev;
	ino_t ino;
	void *map;
	unsigned refs;
};
static struct ring_mapping *ring_maps;
static pthread_mutex_t ring_maps_lock = PTHREAD_MUTEX_INITIALIZER;

void *shm_ring_map(int fd)
{
	struct ring_mapping *m;
	struct stat st;
	void *p = NULL;

	if (fstat(fd, &st) < 0 || st.st_size != SHM_RING_MAP_LEN)
		return NULL;
	pthread_mutex_lock(&ring_maps_lock);
	for (m = ring_maps; m; m = m->next)
		if (m->dev == st.st_dev && m->ino == st.st_ino) {
			m->refs++;
			p = m->map;
			goto out;
		}
	if (!(m = calloc(1, sizeof(*m))))
		goto out;
	p = mmap(NULL, SHM_RING_MAP_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		free(m);
		p = NULL;
		goto out;
	}
	*m = (struct ring_mapping){ring_maps, st.st_dev, st.st_ino, p, 1};
	ring_maps = m;
out:
	pthread_mutex_unlock(&ring_maps_lock);
	return p;
}

void shm_ring_unmap(void *map)
{
	struct ring_mapping **pm, *m;

	pthread_mutex_lock(&ring_maps_lock);
	for (pm = &ring_maps; (m = *pm); pm = &m->next)
		if (m->map == map) {
			if (--m->refs == 0) {
				*pm = m->next;
				munmap(m->map, SHM_RING_MAP_LEN);
				free(m);
			}
			break;
		}
	pthread_mutex_unlock(&ring_maps_lock);
}

void shm_ring_attach(struct shm_ring *r, void *map, int dir)
{
	r->ctl = (struct shm_ring_ctl *)map + dir;
	r->data = (uint8_t *)map + SHM_RING_CTL_LEN + (size_t)dir * SHM_RING_BYTES;
	r->pos = 0;
}

/* @len bytes from @iov into the ring at byte @at (wrapping). */
static void ring_in(uint8_t *data, uint64_t at, const struct iovec *iov, int n, uint32_t len)
{
	uint64_t o = at % SHM_RING_BYTES;

	for (int i = 0; i < n && len; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t l = iov[i].iov_len < len ? iov[i].iov_len : len;

		len -= (uint32_t)l;
		while (l) {
			size_t k = SHM_RING_BYTES - o < l ? SHM_RING_BYTES - o : l;

			memcpy(data + o, p, k);
			p += k;
			l -= k;
			o = (o + k) % SHM_RING_BYTES;
		}
	}
}

int shm_ring_put(struct shm_ring *r, const struct iovec *iov, int n, uint32_t len, bool *bell)
{
	uint64_t need = shm_ring_need(len), tail = atomic_load_explicit(&r->ctl->tail, memory_order_acquire);
	uint8_t hdr[SHM_RING_HDR] = {0};

	*bell = false;
	if (need > SHM_RING_BYTES || r->pos - tail > SHM_RING_BYTES)
		return -EPROTO; /* (the consumer's tail is past our head or a full ring behind it) */
	if (SHM_RING_BYTES - (r->pos - tail) < need) {
		atomic_store_explicit(&r->ctl->want_space, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);
		tail = atomic_load_explicit(&r->ctl->tail, memory_order_acquire);
		if (r->pos - tail > SHM_RING_BYTES)
			return -EPROTO;
		if (SHM_RING_BYTES - (r->pos - tail) < need)
			return 1;
	}
	ulnet_put_le32(hdr, len);
	ulnet_put_le32(hdr + 4, SHM_RING_MAGIC);
	memcpy(r->data + r->pos % SHM_RING_BYTES, hdr, sizeof(hdr)); /* pos is 8-aligned: no wrap */
	ring_in(r->data, r->pos + SHM_RING_HDR, iov, n, len);
	r->pos += need;
	atomic_store_explicit(&r->ctl->head, r->pos, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&r->ctl->sleeping, memory_order_relaxed))
		*bell = atomic_exchange_explicit(&r->ctl->sleeping, 0, memory_order_relaxed) != 0;
	return 0;
}

int shm_ring_peek(struct shm_ring *r, uint32_t *len)
{
	uint64_t avail = atomic_load_explicit(&r->ctl->head, memory_order_acquire) - r->pos;
	uint8_t hdr[SHM_RING_HDR];

	if (!avail)
		return 0;
	if (avail > SHM_RING_BYTES || avail < SHM_RING_HDR)
		return -EPROTO;
	memcpy(hdr, r->data + r->pos % SHM_RING_BYTES, sizeof(hdr));
	*len = ulnet_get_le32(hdr);
	if (ulnet_get_le32(hdr + 4) != SHM_RING_MAGIC || shm_ring_need(*len) > avail)
		return -EPROTO;
	return 1;
}

void shm_ring_read(const struct shm_ring *r, uint32_t len, const struct iovec *iov, int n)
{
	uint64_t o = (r->pos + SHM_RING_HDR) % SHM_RING_BYTES;

	for (int i = 0; i < n && len; i++) {
		uint8_t *p = iov[i].iov_base;
		size_t l = iov[i].iov_len < len ? iov[i].iov_len : len;

		len -= (uint32_t)l;
		while (l) {
			size_t k = SHM_RING_BYTES - o < l ? SHM_RING_BYTES - o : l;

			memcpy(p, r->data + o, k);
			p += k;
			l -= k;
			o = (o + k) % SHM_RING_BYTES;
		}
	}
}

bool shm_ring_pop(struct shm_ring *r, uint32_t len)
{
	r->pos += shm_ring_need(len);
	atomic_store_explicit(&r->ctl->tail, r->pos, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&r->ctl->want_space, memory_order_relaxed))
		return false;
	return atomic_exchange_explicit(&r->ctl->want_space, 0, memory_order_relaxed) != 0;
}

bool shm_ring_sleep(struct shm_ring *r)
{
	atomic_store_explicit(&r->ctl->sleeping, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&r->ctl->head, memory_order_acquire) == r->pos)
		return true;
	atomic_store_explicit(&r->ctl->sleeping, 0, memory_order_relaxed);
	return false;
}

void shm_ring_wake(struct shm_ring *r)
{
	if (atomic_load_explicit(&r->ctl->sleeping, memory_order_relaxed))
		atomic_store_explicit(&r->ctl->sleeping, 0, memory_order_relaxed);
}
