/* SPDX-License-Identifier: MIT */
/* SEND rings in shared memory (shm_ring.h): the copies, the bounds and the doorbell flags. */
#include <errno.h>
#include <string.h>
#include "shm_ring.h"
#include "wire.h"

#define SHM_RING_MAGIC 0x5352u /* "RS" */

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

bool shm_ring_nonempty(const struct shm_ring *r)
{
	return atomic_load_explicit(&r->ctl->head, memory_order_relaxed) != r->pos;
}
