/* SPDX-License-Identifier: MIT */
/* shm memory regions: the registration table (a memfd the peers map), keys with a generation, and
 * the access check both local SGEs and peers' RDMA go through. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "log.h"
#include "shm.h"

int shm_mr_table_open(struct fab_dev *dev)
{
	size_t bytes = (size_t)dev->lim.max_mr * sizeof(struct shm_mr_entry);

	dev->tbl_fd = memfd_create("ulnet-shm-mr", MFD_CLOEXEC);
	if (dev->tbl_fd < 0)
		return -errno;
	if (ftruncate(dev->tbl_fd, (off_t)bytes) < 0)
		goto fail;
	dev->tbl = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, dev->tbl_fd, 0);
	if (dev->tbl == MAP_FAILED) {
		dev->tbl = NULL;
		goto fail;
	}
	dev->mrs = calloc(dev->lim.max_mr, sizeof(*dev->mrs));
	if (!dev->mrs) {
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
	if (dev->mrs)
		for (uint32_t i = 0; i < dev->lim.max_mr; i++)
			free(dev->mrs[i].segs);
	free(dev->mrs);
	dev->mrs = NULL;
	if (dev->tbl)
		munmap(dev->tbl, (size_t)dev->lim.max_mr * sizeof(struct shm_mr_entry));
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

int shm_reg_mr(struct fab_dev *dev, const struct iovec *ranges, unsigned n, unsigned access, struct fab_mr *out)
{
	struct shm_mr_entry *e;
	struct shm_seg *segs = NULL;
	uint64_t total;
	uint32_t idx, gen;
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
		if (!(segs = malloc(nseg * sizeof(*segs))))
			return -ENOMEM;
		shm_seg_fill(ranges, n, segs);
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
	e->segs = nseg > 1 ? (uintptr_t)segs : (uintptr_t)ranges[0].iov_base;
	shm_mem_describe(e, ranges, n);
	atomic_store_explicit(&e->state, SHM_STATE(gen, true), memory_order_release);
	dev->mrs[idx] = (struct shm_mr){.segs = segs, .used = true};
	dev->n_mr++;
	*out = (struct fab_mr){.lkey = SHM_KEY(idx, gen), .rkey = SHM_KEY(idx, gen), .addr = e->addr, .length = total};
	return 0;
}

int shm_dereg_mr(struct fab_dev *dev, const struct fab_mr *mr)
{
	uint32_t idx = SHM_KEY_IDX(mr->lkey), gen = SHM_KEY_GEN(mr->lkey);
	struct shm_mr_entry *e;
	uint64_t deadline;

	if (mr->lkey < (1u << 16) || idx >= dev->lim.max_mr || !dev->mrs[idx].used)
		return -ENOENT;
	e = &dev->tbl[idx];
	if (atomic_load(&e->state) != SHM_STATE(gen, true))
		return -ENOENT;
	atomic_store(&e->state, SHM_STATE(gen, false));
	/* a peer that took busy before the store above may be copying now: wait for it (a copy takes
	 * microseconds). A peer killed while holding busy never drops it: give up after 2 s, it can no
	 * longer write. */
	deadline = shm_now_ns() + 2000000000ull;
	while (atomic_load(&e->busy)) {
		if (shm_now_ns() > deadline) {
			ULNET_LOG(FABRIC, WARN, "shm: region key %#x still held by a peer after 2 s (peer died "
				  "mid-RDMA?); deregistered anyway", mr->lkey);
			atomic_store(&e->busy, 0);
			break;
		}
		sched_yield();
	}
	free(dev->mrs[idx].segs);
	dev->mrs[idx] = (struct shm_mr){0};
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
		if (k == max)
			return -1;
		take = in[i].iov_len - off < len ? in[i].iov_len - off : len;
		out[k++] = (struct iovec){(char *)in[i].iov_base + off, take};
		len -= take;
		off = 0;
	}
	return len ? -1 : k;
}

/* The iovecs of [addr, addr + len) in @e's segments (more than one): count, or -errno. Apart from
 * shm_mr_acquire so that its one-segment path (every SGE of the LND's message areas, every 1 MiB
 * region) carries none of this stack room. */
static __attribute__((noinline)) int acquire_segs(const struct shm_mr_entry *e, pid_t pid, uint64_t addr,
						   uint64_t len, struct iovec *iov, int max)
{
	struct shm_seg stack_segs[16], *segs = stack_segs;
	struct iovec stack_iov[16], *ranges = stack_iov;
	int n = -EACCES;

	if (e->nseg > 1024)
		return -EACCES;
	if (e->nseg > sizeof(stack_segs) / sizeof(stack_segs[0]) &&
	    (!(segs = malloc(e->nseg * sizeof(*segs))) || !(ranges = malloc(e->nseg * sizeof(*ranges))))) {
		n = -ENOMEM;
		goto out;
	}
	if (pid == 0 || pid == getpid()) {
		memcpy(segs, (const void *)(uintptr_t)e->segs, e->nseg * sizeof(*segs));
	} else {
		struct iovec l = {segs, e->nseg * sizeof(*segs)}, r = {(void *)(uintptr_t)e->segs, l.iov_len};
		ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

		if (got != (ssize_t)l.iov_len) {
			n = got < 0 && errno == ESRCH ? -ESRCH : got < 0 && errno == EPERM ? -EPERM : -EACCES;
			goto out;
		}
	}
	for (uint32_t i = 0; i < e->nseg; i++)
		ranges[i] = (struct iovec){(void *)(uintptr_t)segs[i].base, segs[i].len};
	n = shm_iov_slice(ranges, (int)e->nseg, addr - e->addr, len, iov, max);
	if (n < 0)
		n = -EACCES;
out:
	if (segs != stack_segs)
		free(segs);
	if (ranges != stack_iov)
		free(ranges);
	return n;
}

int shm_mr_acquire(struct shm_mr_entry *tbl, uint32_t tbl_n, pid_t pid, uint32_t key, uint64_t addr,
		   uint64_t len, unsigned access, struct iovec *iov, int max, struct shm_mr_entry **held)
{
	uint32_t idx = SHM_KEY_IDX(key);
	struct shm_mr_entry *e;
	int n = -EACCES;

	if (key < (1u << 16) || idx >= tbl_n)
		return -EACCES;
	e = &tbl[idx];
	atomic_fetch_add(&e->busy, 1);
	/* busy first, then the state: a dereg that cleared valid after this point waits for us */
	if (!shm_mr_entry_ok(e, key, addr, len, access))
		goto out;
	if (e->nseg == 1) {
		if (max < 1)
			goto out;
		iov[0] = (struct iovec){(void *)(uintptr_t)addr, len};
		*held = e;
		return 1;
	}
	n = acquire_segs(e, pid, addr, len, iov, max);
out:
	if (n < 0) {
		atomic_fetch_sub(&e->busy, 1);
		return n;
	}
	*held = e;
	return n;
}

void shm_mr_release(struct shm_mr_entry *held)
{
	if (held)
		atomic_fetch_sub(&held->busy, 1);
}
