/* SPDX-License-Identifier: MIT */
/* shm memory regions: the registration table (a memfd the peers map read-only), keys with a
 * generation, the access check both local SGEs and peers' RDMA go through, and the wait of a
 * deregistration for copies in flight. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "log.h"
#include "shm.h"

int shm_mr_table_open(struct fab_dev *dev)
{
	size_t bytes = shm_tbl_bytes(dev->lim.max_mr);

	dev->tbl_fd = memfd_create("ulnet-shm-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (dev->tbl_fd < 0)
		return -errno;
	if (ftruncate(dev->tbl_fd, (off_t)bytes) < 0)
		goto fail;
	dev->tbl = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, dev->tbl_fd, 0);
	if (dev->tbl == MAP_FAILED) {
		dev->tbl = NULL;
		goto fail;
	}
	/* peers get this fd: after our own mapping, nobody may map it writable, write, or resize it (a
	 * truncation would SIGBUS every mapper; a write would forge keys) */
	if ((errno = -shm_seal_read_only(dev->tbl_fd)))
		goto fail;
	dev->mrs = calloc(dev->lim.max_mr, sizeof(*dev->mrs));
	dev->seg_used = calloc(shm_seg_cap(dev->lim.max_mr) / SHM_SEG_CHUNK, 1);
	if (!dev->mrs || !dev->seg_used) {
		errno = ENOMEM;
		goto fail;
	}
	return 0;
fail: {
	int rc = -errno;

	shm_mr_table_close(dev);
	return rc;
}
}

void shm_mr_table_close(struct fab_dev *dev)
{
	free(dev->mrs);
	dev->mrs = NULL;
	free(dev->seg_used);
	dev->seg_used = NULL;
	if (dev->tbl)
		munmap(dev->tbl, shm_tbl_bytes(dev->lim.max_mr));
	dev->tbl = NULL;
	if (dev->tbl_fd >= 0)
		close(dev->tbl_fd);
	dev->tbl_fd = -1;
}

unsigned shm_seg_count(const struct iovec *ranges, unsigned n)
{
	unsigned k = n ? 1 : 0;

	for (unsigned i = 1; i < n; i++)
		if ((const char *)ranges[i - 1].iov_base + ranges[i - 1].iov_len != ranges[i].iov_base)
			k++;
	return k;
}

void shm_seg_fill(const struct iovec *ranges, unsigned n, struct shm_seg *segs)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		uintptr_t b = (uintptr_t)ranges[i].iov_base;

		if (i && segs[k - 1].base + segs[k - 1].len == b)
			segs[k - 1].len += ranges[i].iov_len;
		else
			segs[k++] = (struct shm_seg){b, ranges[i].iov_len};
	}
}

/* Arena @mid holds a region peers may reach: every connected peer gets its memfd now, before the key
 * can reach it (the LND sends the key after reg_mr returns); later connections at connect time. */
static void export_arena(struct fab_dev *dev, uint64_t mid)
{
	struct ulnet_list *pos, *tmp;
	uint32_t i;

	for (i = 0; i < dev->n_exported && dev->exported[i] != mid; i++)
		;
	if (i == dev->n_exported) {
		if (dev->n_exported == dev->cap_exported) {
			uint32_t cap = dev->cap_exported ? dev->cap_exported * 2 : 8;
			uint64_t *n = realloc(dev->exported, cap * sizeof(*n));

			if (!n)
				return; /* (peers copy with process_vm, as for other memory) */
			dev->exported = n;
			dev->cap_exported = cap;
		}
		dev->exported[dev->n_exported++] = mid;
	}
	ulnet_list_for_each_safe(pos, tmp, &dev->ids) {
		struct fab_cm_id *id = ulnet_container_of(pos, struct fab_cm_id, link);

		if (id->mem_fd >= 0)
			shm_mem_announce(id, mid);
	}
}

/* @k consecutive free chunks of the segment area, first fit from where the last search ended: the
 * first one, or -1. */
static int64_t seg_alloc(struct fab_dev *dev, uint32_t k)
{
	uint32_t n = (uint32_t)(shm_seg_cap(dev->lim.max_mr) / SHM_SEG_CHUNK), run = 0;

	for (uint32_t i = 0; i < n + k; i++) {
		uint32_t c = (dev->seg_cursor + i) % n;

		if (c == 0)
			run = 0; /* (a run does not wrap) */
		run = dev->seg_used[c] ? 0 : run + 1;
		if (run == k) {
			memset(dev->seg_used + c + 1 - k, 1, k);
			dev->seg_cursor = (c + 1) % n;
			return (int64_t)(c + 1 - k);
		}
	}
	return -1;
}

int shm_reg_mr(struct fab_dev *dev, const struct iovec *ranges, unsigned n, unsigned access, struct fab_mr *out)
{
	struct shm_mr_entry *e;
	int64_t chunk = 0;
	uint32_t idx, gen, chunks = 0;
	uint64_t total;
	unsigned nseg;
	int rc;

	if (n > 1024)
		return -EINVAL;
	if ((rc = fab_reg_check("shm", &dev->lim, ranges, n, access, dev->n_mr, &total)))
		return rc;
	/* ranges that touch become one segment (the region's bytes are the same): a buffer registered
	 * page by page is one segment, which a peer's RDMA reaches without reading a segment list */
	nseg = shm_seg_count(ranges, n);
	if (nseg > 1) {
		chunks = (nseg + SHM_SEG_CHUNK - 1) / SHM_SEG_CHUNK;
		if ((chunk = seg_alloc(dev, chunks)) < 0) {
			ULNET_LOG(FABRIC, ERR, "shm: no room for the %u segments of a region of separate ranges (the "
				  "table's segment area holds %llu segments for max_mr %u, in chunks of %u; lnd tunable "
				  "device: max_mr)", nseg, (unsigned long long)shm_seg_cap(dev->lim.max_mr),
				  dev->lim.max_mr, SHM_SEG_CHUNK);
			return -ENOMEM;
		}
		shm_seg_fill(ranges, n, (struct shm_seg *)(void *)(dev->tbl + dev->lim.max_mr) +
					       (uint64_t)chunk * SHM_SEG_CHUNK);
	}
	/* round robin over the indexes: a freed index is reused as late as possible, so a stale key
	 * meets a new generation only after the whole table has turned over */
	for (idx = dev->mr_cursor; dev->mrs[idx].used; idx = (idx + 1) % dev->lim.max_mr)
		;
	dev->mr_cursor = (idx + 1) % dev->lim.max_mr;
	e = &dev->tbl[idx];
	gen = ((atomic_load(&e->state) >> 1) + 1) & 0xffffu;
	e->access = access;
	e->nseg = nseg;
	e->addr = (uintptr_t)ranges[0].iov_base;
	e->length = total;
	e->segs = nseg > 1 ? (uint64_t)chunk * SHM_SEG_CHUNK : 0;
	shm_mem_describe(e, ranges, n);
	if (e->mem_id && (access & (FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_REMOTE_READ)))
		export_arena(dev, e->mem_id);
	atomic_store_explicit(&e->state, SHM_STATE(gen, true), memory_order_release);
	dev->mrs[idx].seg_chunk = (uint32_t)chunk;
	dev->mrs[idx].seg_chunks = chunks;
	dev->mrs[idx].used = true;
	dev->n_mr++;
	*out = (struct fab_mr){.lkey = SHM_KEY(idx, gen), .rkey = SHM_KEY(idx, gen), .addr = e->addr, .length = total};
	return 0;
}

/* Sleep @ns (a deregistration waiting for a copy: a copy takes microseconds, a preempted one
 * milliseconds). */
static void nap(uint64_t ns)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ns};

	nanosleep(&ts, NULL);
}

/* Wait until no peer copies with @key. A peer that holds it past SHM_DEREG_WAIT_NS loses its
 * connection (it can only be slow or hostile; its copy, if any, lands in memory it was given). */
#define SHM_DEREG_WAIT_NS 200000000ull
static void wait_peers(struct fab_dev *dev, uint32_t key)
{
	struct ulnet_list *pos, *tmp;

	ulnet_list_for_each_safe(pos, tmp, &dev->ids) {
		struct fab_cm_id *id = ulnet_container_of(pos, struct fab_cm_id, link);
		uint64_t start = 0, pause = 1000;

		if (!id->ring_map)
			continue;
		while (atomic_load(&id->ring_rx.ctl->copying) == key) {
			uint64_t now = shm_now_ns();

			if (!start) {
				start = now;
			} else if (now - start > SHM_DEREG_WAIT_NS) {
				ULNET_LOG(FABRIC, ERR, "shm: pid %d (uid %u) held region key %#x for %llu ms after its "
					  "deregistration (a copy takes microseconds); its connection is closed",
					  (int)id->peer_pid, (unsigned)id->peer_uid, key,
					  (unsigned long long)(SHM_DEREG_WAIT_NS / 1000000));
				shm_id_teardown(id, -ETIMEDOUT);
				break;
			}
			nap(pause);
			pause = pause < 1000000 ? pause * 2 : pause;
		}
	}
}

int shm_dereg_mr(struct fab_dev *dev, const struct fab_mr *mr)
{
	uint32_t idx = SHM_KEY_IDX(mr->lkey), gen = SHM_KEY_GEN(mr->lkey);
	struct shm_mr_entry *e;

	if (mr->lkey < (1u << 16) || idx >= dev->lim.max_mr || !dev->mrs[idx].used)
		return -ENOENT;
	e = &dev->tbl[idx];
	if (atomic_load(&e->state) != SHM_STATE(gen, true))
		return -ENOENT;
	/* (seq_cst: a copier stores its copying word, then loads the state; we store the state, then
	 * load the words: one of us sees the other) */
	atomic_store(&e->state, SHM_STATE(gen, false));
	/* our copy thread may be reading the segment list (microseconds, never a peer) */
	while (atomic_load(&dev->mrs[idx].busy))
		sched_yield();
	if (e->access & (FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_REMOTE_READ))
		wait_peers(dev, mr->lkey);
	if (dev->mrs[idx].seg_chunks)
		memset(dev->seg_used + dev->mrs[idx].seg_chunk, 0, dev->mrs[idx].seg_chunks);
	dev->mrs[idx].seg_chunks = 0;
	dev->mrs[idx].used = false;
	dev->n_mr--;
	return 0;
}

int shm_iov_slice(const struct iovec *in, int n, uint64_t off, uint64_t len, struct iovec *out, int max)
{
	int k = 0;

	for (int i = 0; i < n && len; i++) {
		uint64_t take;

		if (off >= in[i].iov_len) {
			off -= in[i].iov_len;
			continue;
		}
		if (k >= max)
			return -1;
		take = in[i].iov_len - off < len ? in[i].iov_len - off : len;
		/* (a peer's segment may sit anywhere: address arithmetic, never a pointer overflow) */
		out[k++] = (struct iovec){(void *)((uintptr_t)in[i].iov_base + off), take};
		len -= take;
		off = 0;
	}
	return len ? -1 : k;
}

/* The iovecs of [addr, addr + len) in @e's segments (more than one), read from @area (@cap
 * segments): count, or -errno. Apart from shm_mr_check so that its one-segment path (every SGE of the
 * LND's message areas, every 1 MiB region) carries none of this stack room. */
static __attribute__((noinline)) int check_segs(const struct shm_mr_entry *e, const struct shm_seg *area,
						 uint64_t cap, uint64_t addr, uint64_t len, struct iovec *iov, int max)
{
	struct iovec stack_iov[16], *ranges = stack_iov;
	uint32_t nseg = e->nseg; /* (a peer's table: loaded once) */
	uint64_t first = e->segs;
	int n;

	if (nseg < 2 || nseg > 1024 || first > cap || nseg > cap - first)
		return -EACCES;
	if (nseg > sizeof(stack_iov) / sizeof(stack_iov[0]) && !(ranges = malloc(nseg * sizeof(*ranges))))
		return -ENOMEM;
	for (uint32_t i = 0; i < nseg; i++) /* (each segment loaded once: its owner may rewrite it) */
		ranges[i] = (struct iovec){(void *)(uintptr_t)area[first + i].base, area[first + i].len};
	n = shm_iov_slice(ranges, (int)nseg, addr - e->addr, len, iov, max);
	if (ranges != stack_iov)
		free(ranges);
	return n < 0 ? -EACCES : n;
}

int shm_mr_check(const struct shm_mr_entry *tbl, uint32_t tbl_n, uint32_t key, uint64_t addr, uint64_t len,
		 unsigned access, struct iovec *iov, int max, const struct shm_mr_entry **out)
{
	uint32_t idx = SHM_KEY_IDX(key);
	const struct shm_mr_entry *e;

	if (key < (1u << 16) || idx >= tbl_n || max < 1)
		return -EACCES;
	e = &tbl[idx];
	*out = e;
	if (!shm_mr_entry_ok(e, key, addr, len, access))
		return -EACCES;
	if (e->nseg == 1) {
		iov[0] = (struct iovec){(void *)(uintptr_t)addr, len};
		return 1;
	}
	return check_segs(e, shm_seg_area(tbl, tbl_n), shm_seg_cap(tbl_n), addr, len, iov, max);
}
