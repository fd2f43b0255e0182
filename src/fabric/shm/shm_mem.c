/* SPDX-License-Identifier: MIT */
/* shm memory a peer can map. mem_alloc hands out memfd-backed memory and remembers it (an arena);
 * a region registered inside one arena carries the memfd's fd number, inode and base address in its
 * table entry, and the peer maps that memfd (opening /proc/<owner>/fd/<fd>, which needs the same
 * ptrace access as process_vm_*), so its RDMA is a memcpy, still checked against key, generation,
 * rights and bounds under the entry's busy count. Other memory keeps process_vm_readv/writev. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"
#include "shm.h"

struct shm_arena {
	uintptr_t base;
	size_t len;
	int fd;
	uint64_t ino;
};

/* Memory belongs to the process, not to a device: one list, any thread. */
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shm_arena *arenas;
static size_t n_arenas, cap_arenas;

static size_t arena_round(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (len + pg - 1) / pg * pg;
}

/* Map @fd's @len bytes at an address aligned to @align: reserve len + align, map the memfd over the
 * aligned part, give back the rest. */
static void *map_aligned(int fd, size_t len, size_t align)
{
	char *r = mmap(NULL, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0), *p;
	size_t head;

	if (r == MAP_FAILED)
		return MAP_FAILED;
	p = (char *)(((uintptr_t)r + align - 1) & ~(uintptr_t)(align - 1));
	if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		munmap(r, len + align);
		return MAP_FAILED;
	}
	head = (size_t)(p - r);
	if (head)
		munmap(r, head);
	if (align - head)
		munmap(p + len, align - head);
	return p;
}

void *shm_mem_alloc(size_t align, size_t len)
{
	struct shm_arena a = {.fd = -1};
	struct stat st;
	void *p = MAP_FAILED;
	int err;

	if (!len || len > SHM_MEM_MAX || align > SHM_MEM_ALIGN_MAX || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (align < (size_t)sysconf(_SC_PAGESIZE))
		align = (size_t)sysconf(_SC_PAGESIZE);
	a.len = arena_round(len);
	if ((a.fd = memfd_create("ulnet-shm-mem", MFD_CLOEXEC)) < 0 || ftruncate(a.fd, (off_t)a.len) < 0 ||
	    fstat(a.fd, &st) < 0 || (p = map_aligned(a.fd, a.len, align)) == MAP_FAILED)
		goto fail;
	a.base = (uintptr_t)p;
	a.ino = (uint64_t)st.st_ino;
	pthread_mutex_lock(&arena_lock);
	if (n_arenas == cap_arenas) {
		size_t cap = cap_arenas ? cap_arenas * 2 : 16;
		struct shm_arena *na = realloc(arenas, cap * sizeof(*na));

		if (!na) {
			pthread_mutex_unlock(&arena_lock);
			errno = ENOMEM;
			goto fail;
		}
		arenas = na;
		cap_arenas = cap;
	}
	arenas[n_arenas++] = a;
	pthread_mutex_unlock(&arena_lock);
	return p;
fail:
	err = errno;
	if (p != MAP_FAILED)
		munmap(p, a.len);
	if (a.fd >= 0)
		close(a.fd);
	errno = err;
	return NULL;
}

void shm_mem_free(void *p, size_t len)
{
	struct shm_arena a = {.fd = -1};

	if (!p)
		return;
	pthread_mutex_lock(&arena_lock);
	for (size_t i = 0; i < n_arenas; i++)
		if (arenas[i].base == (uintptr_t)p) {
			a = arenas[i];
			arenas[i] = arenas[--n_arenas];
			break;
		}
	pthread_mutex_unlock(&arena_lock);
	if (a.fd < 0) {
		ULNET_LOG(FABRIC, ERR, "shm: mem_free of %p (%zu bytes): not from mem_alloc; ignored", p, len);
		return;
	}
	munmap(p, a.len);
	close(a.fd);
}

void shm_mem_describe(struct shm_mr_entry *e, const struct iovec *ranges, unsigned n)
{
	e->mem_ino = 0;
	pthread_mutex_lock(&arena_lock);
	for (size_t i = 0; i < n_arenas; i++) {
		const struct shm_arena *a = &arenas[i];
		unsigned k;

		for (k = 0; k < n; k++) {
			uintptr_t b = (uintptr_t)ranges[k].iov_base;

			if (b < a->base || ranges[k].iov_len > a->len || b - a->base > a->len - ranges[k].iov_len)
				break;
		}
		if (k == n) {
			e->mem_ino = a->ino;
			e->mem_base = a->base;
			e->mem_len = a->len;
			e->mem_fd = a->fd;
			break;
		}
	}
	pthread_mutex_unlock(&arena_lock);
}

/* Map the owner's memfd named by @e (held), or find it mapped: the local address of its byte 0, or
 * NULL (not a memfd region, or it cannot be mapped: process_vm_* then does the copy). */
static char *peer_map(struct fab_cm_id *id, const struct shm_mr_entry *e)
{
	uint64_t ino = e->mem_ino, len = e->mem_len;
	struct shm_peer_map *m, *victim = &id->maps[0];
	char path[64];
	struct stat st;
	void *p;
	int fd;

	if (!ino)
		return NULL;
	/* inode, fd, base and length: an inode number alone may come back after a memfd is freed */
	for (m = id->maps; m < id->maps + SHM_PEER_MAPS; m++) {
		if (m->ino == ino && m->len == len && m->base == e->mem_base && m->fd == e->mem_fd) {
			m->used = ++id->map_clock;
			return m->map;
		}
		if (m->used < victim->used)
			victim = m;
	}
	/* a miss: map it in the least recently used slot (a failure is remembered there too, so a
	 * memfd that cannot be mapped costs one open, not one per WR) */
	if (victim->map)
		munmap(victim->map, victim->len);
	*victim = (struct shm_peer_map){.ino = ino, .len = len, .base = e->mem_base, .fd = e->mem_fd,
					.used = ++id->map_clock};
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)id->peer_pid, e->mem_fd);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return NULL;
	/* the fd number may have been reused by the owner: the inode says whether it is the same memfd */
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != ino || (uint64_t)st.st_size < len) {
		close(fd);
		return NULL;
	}
	/* not populated: that would allocate the memfd's holes; a page faults in once per mapping */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	victim->map = p;
	return p;
}

void shm_peer_maps_drop(struct fab_cm_id *id)
{
	for (int i = 0; i < SHM_PEER_MAPS; i++) {
		if (id->maps[i].map)
			munmap(id->maps[i].map, id->maps[i].len);
		id->maps[i] = (struct shm_peer_map){0};
	}
}

bool shm_peer_translate(struct fab_cm_id *id, const struct shm_mr_entry *e, struct iovec *iov, int n)
{
	char *map = peer_map(id, e);

	if (!map)
		return false;
	for (int i = 0; i < n; i++) {
		uintptr_t b = (uintptr_t)iov[i].iov_base;

		/* the owner's segment list comes from its memory: checked against the memfd's bounds */
		if (b < e->mem_base || iov[i].iov_len > e->mem_len || b - e->mem_base > e->mem_len - iov[i].iov_len)
			return false;
	}
	for (int i = 0; i < n; i++)
		iov[i].iov_base = map + ((uintptr_t)iov[i].iov_base - e->mem_base);
	return true;
}

uint64_t shm_iov_copy(const struct iovec *dst, int nd, const struct iovec *src, int ns, uint64_t max)
{
	uint64_t done = 0;
	size_t doff = 0, soff = 0;
	int i = 0, j = 0;

	while (i < nd && j < ns && done < max) {
		size_t take = dst[i].iov_len - doff;

		if (src[j].iov_len - soff < take)
			take = src[j].iov_len - soff;
		if (max - done < take)
			take = (size_t)(max - done);
		memcpy((char *)dst[i].iov_base + doff, (const char *)src[j].iov_base + soff, take);
		done += take;
		if ((doff += take) == dst[i].iov_len)
			i++, doff = 0;
		if ((soff += take) == src[j].iov_len)
			j++, soff = 0;
	}
	return done;
}

bool shm_peer_alive(const struct fab_cm_id *id)
{
	struct pollfd p = {.fd = id->fd, .events = POLLRDHUP};

	if (id->fd < 0)
		return false;
	/* no system call: the peer process's life word (the kernel marks it when the process dies)
	 * and its closed flag in the rings' page (set before it shuts its socket) */
	if (id->peer_life && id->ring_map)
		return shm_life_alive(id->peer_life) &&
		       !atomic_load_explicit(&id->ring_rx.ctl->closed, memory_order_acquire);
	/* the connection's socket: the peer's end closes when it exits (or disconnects) */
	return poll(&p, 1, 0) == 0;
}
