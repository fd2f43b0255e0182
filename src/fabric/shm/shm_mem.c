/* SPDX-License-Identifier: MIT */
/* shm memory a peer can map. mem_alloc hands out memfd-backed memory, sealed against shrinking and
 * growing, and remembers it (an arena, with a process-unique id); a region registered inside one
 * arena carries the arena's id and base address in its table entry. The owner sends the arena's
 * memfd over the connection's memory channel before the key can reach the peer, and the peer maps
 * what it received (nothing is ever reopened by path), so its RDMA is a memcpy, still checked
 * against key, generation, rights and bounds while its connection's copying word names the key.
 * Other memory keeps process_vm_readv/writev. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"
#include "shm.h"
#include "wire.h"

#define SHM_MEM_MAGIC 0x4d4d5355u /* "USMM" */
/* messages read from the memory channel per look (a peer that floods it slows its own RDMA only) */
#define SHM_MEM_DRAIN_MAX 256

struct shm_arena {
	uintptr_t base;
	size_t len;
	int fd;
	uint64_t id;
};
static uint64_t arena_next_id = 1;

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
	void *p = MAP_FAILED;
	int err;

	if (!len || len > SHM_MEM_MAX || align > SHM_MEM_ALIGN_MAX || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (align < (size_t)sysconf(_SC_PAGESIZE))
		align = (size_t)sysconf(_SC_PAGESIZE);
	a.len = arena_round(len);
	/* sealed: a peer we send it to can neither shrink it under our mapping nor grow it */
	if ((a.fd = memfd_create("ulnet-shm-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0 ||
	    ftruncate(a.fd, (off_t)a.len) < 0 ||
	    fcntl(a.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
	    (p = map_aligned(a.fd, a.len, align)) == MAP_FAILED)
		goto fail;
	a.base = (uintptr_t)p;
	pthread_mutex_lock(&arena_lock);
	a.id = arena_next_id++;
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
	e->mem_id = 0;
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
			e->mem_id = a->id;
			e->mem_base = a->base;
			e->mem_len = (uint32_t)a->len;
			break;
		}
	}
	pthread_mutex_unlock(&arena_lock);
}

void shm_mem_msg_pack(uint8_t b[SHM_MEM_MSG], uint64_t mid, uint64_t base, uint32_t len)
{
	ulnet_put_le32(b, SHM_MEM_MAGIC);
	ulnet_put_le32(b + 4, len);
	ulnet_put_le64(b + 8, mid);
	ulnet_put_le64(b + 16, base);
}

int shm_mem_msg_unpack(const uint8_t *b, size_t n, uint64_t *mid, uint64_t *base, uint32_t *len)
{
	if (n != SHM_MEM_MSG || ulnet_get_le32(b) != SHM_MEM_MAGIC)
		return -EPROTO;
	*len = ulnet_get_le32(b + 4);
	*mid = ulnet_get_le64(b + 8);
	*base = ulnet_get_le64(b + 16);
	/* (a base whose arena would wrap the address space cannot hold a region) */
	if (!*mid || !*len || *len > SHM_MEM_MAX || *base > UINT64_MAX - *len)
		return -EPROTO;
	return 0;
}

int shm_fd_sealed(int fd, uint64_t len)
{
	struct stat st;
	int seals;

	/* (F_GET_SEALS fails on anything but a memfd: a file, an O_PATH descriptor, a socket) */
	if (fd < 0 || (seals = fcntl(fd, F_GET_SEALS)) < 0 ||
	    (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW) || fstat(fd, &st) < 0 ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size < len)
		return -EPROTO;
	return 0;
}

int shm_mem_announce(struct fab_cm_id *id, uint64_t mid)
{
	uint8_t b[SHM_MEM_MSG];
	uint64_t base = 0;
	uint32_t len = 0;
	int fd = -1, rc;

	if (id->mem_fd < 0)
		return -ENOTCONN;
	for (uint32_t i = 0; i < id->n_sent; i++)
		if (id->sent[i] == mid)
			return 0;
	if (id->n_sent == id->cap_sent) {
		uint32_t cap = id->cap_sent ? id->cap_sent * 2 : 8;
		uint64_t *n = realloc(id->sent, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		id->sent = n;
		id->cap_sent = cap;
	}
	pthread_mutex_lock(&arena_lock);
	for (size_t i = 0; i < n_arenas; i++)
		if (arenas[i].id == mid) {
			fd = dup(arenas[i].fd); /* (freed meanwhile by another thread: our copy stays valid) */
			base = arenas[i].base;
			len = (uint32_t)arenas[i].len;
			break;
		}
	pthread_mutex_unlock(&arena_lock);
	if (fd < 0)
		return -ENOENT; /* freed: no region of it is valid any more */
	shm_mem_msg_pack(b, mid, base, len);
	rc = shm_send_fds(id->mem_fd, b, sizeof(b), &fd, 1);
	close(fd);
	if (rc) {
		/* (the peer then copies with process_vm, as for other memory) */
		ULNET_LOG(FABRIC, WARN, "shm: could not send memory arena %llu to pid %d: %s",
			  (unsigned long long)mid, (int)id->peer_pid, strerror(-rc));
		return rc;
	}
	id->sent[id->n_sent++] = mid;
	return 0;
}

void shm_mem_announce_all(struct fab_cm_id *id)
{
	struct fab_dev *dev = id->dev;

	for (uint32_t i = 0; i < dev->n_exported;) {
		if (shm_mem_announce(id, dev->exported[i]) == -ENOENT) { /* freed: forget it */
			dev->exported[i] = dev->exported[--dev->n_exported];
			continue;
		}
		i++;
	}
}

/* An empty slot, or NULL. */
static struct shm_peer_map *map_empty(struct fab_cm_id *id)
{
	for (struct shm_peer_map *m = id->maps; m < id->maps + SHM_PEER_MAPS; m++)
		if (!m->map)
			return m;
	return NULL;
}

/* The least recently used mapped slot, or NULL. */
static struct shm_peer_map *map_lru(struct fab_cm_id *id)
{
	struct shm_peer_map *lru = NULL;

	for (struct shm_peer_map *m = id->maps; m < id->maps + SHM_PEER_MAPS; m++)
		if (m->map && (!lru || m->used < lru->used))
			lru = m;
	return lru;
}

static void map_drop(struct fab_cm_id *id, struct shm_peer_map *m)
{
	if (m->map) {
		munmap(m->map, m->len);
		id->map_bytes -= m->len;
	}
	*m = (struct shm_peer_map){0};
}

/* Install arena @mid (@fd, taken), least recently used ones unmapped first to make room: a slot,
 * and address space within SHM_PEER_MAP_BYTES per connection (a peer announcing arena after arena
 * of 4 GiB cannot exhaust ours). */
static void map_install(struct fab_cm_id *id, uint64_t mid, uint64_t base, uint32_t len, int fd)
{
	struct shm_peer_map *m;
	void *p;

	for (m = id->maps; m < id->maps + SHM_PEER_MAPS; m++)
		if (m->map && m->mid == mid) { /* announced again: keep the mapping we have */
			close(fd);
			return;
		}
	while (!map_empty(id) || id->map_bytes + len > SHM_PEER_MAP_BYTES)
		map_drop(id, map_lru(id)); /* (len <= SHM_MEM_MAX < the cap: dropping all makes room) */
	/* not populated: that would allocate the memfd's holes; a page faults in once per mapping */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	*map_empty(id) = (struct shm_peer_map){.mid = mid, .base = base, .len = len, .used = ++id->map_clock, .map = p};
	id->map_bytes += len;
}

/* Read what the peer announced on the memory channel. 0, or -EPROTO (logged): a message that is not
 * an announcement, or memory that is not a sealed memfd of the size announced. */
static int mem_drain(struct fab_cm_id *id)
{
	for (int k = 0; k < SHM_MEM_DRAIN_MAX; k++) {
		uint8_t b[SHM_MEM_MSG + 1];
		uint64_t mid, base;
		uint32_t len;
		int fd, rc;
		ssize_t n = shm_recv_fds(id->mem_fd, b, sizeof(b), &fd, 1);

		if (n == 0 || (n < 0 && n != -EPROTO))
			return 0; /* nothing more (or closed: the connection's socket says so) */
		rc = n < 0 ? -EPROTO : shm_mem_msg_unpack(b, (size_t)n, &mid, &base, &len);
		if (!rc && shm_fd_sealed(fd, len))
			rc = -EPROTO;
		if (rc) {
			if (fd >= 0)
				close(fd);
			ULNET_LOG(FABRIC, ERR, "shm: pid %d (uid %u) announced memory that is not a memfd sealed against "
				  "shrinking and growing of the size it says (or a malformed announcement); its connection "
				  "is closed", (int)id->peer_pid, (unsigned)id->peer_uid);
			return -EPROTO;
		}
		map_install(id, mid, base, len, fd);
	}
	return 0;
}

static struct shm_peer_map *map_find(struct fab_cm_id *id, const struct shm_mr_entry *e)
{
	for (struct shm_peer_map *m = id->maps; m < id->maps + SHM_PEER_MAPS; m++)
		if (m->map && m->mid == e->mem_id) {
			m->used = ++id->map_clock;
			return m;
		}
	return NULL;
}

void shm_peer_maps_drop(struct fab_cm_id *id)
{
	for (int i = 0; i < SHM_PEER_MAPS; i++)
		map_drop(id, &id->maps[i]);
}

int shm_peer_translate(struct fab_cm_id *id, const struct shm_mr_entry *e, struct iovec *iov, int n)
{
	struct shm_peer_map *m;
	uint64_t mid = e->mem_id;

	if (!mid)
		return 0;
	/* the owner announced the arena before it sent the key (the channel holds it by now) */
	if (!(m = map_find(id, e))) {
		if (mem_drain(id))
			return -EPROTO;
		if (!(m = map_find(id, e)))
			return 0;
	}
	for (int i = 0; i < n; i++) {
		uintptr_t b = (uintptr_t)iov[i].iov_base;

		/* the entry and the segment list come from the peer: checked against what we mapped */
		if (b < m->base || iov[i].iov_len > m->len || b - m->base > m->len - iov[i].iov_len)
			return 0;
	}
	for (int i = 0; i < n; i++)
		iov[i].iov_base = m->map + ((uintptr_t)iov[i].iov_base - m->base);
	return 1;
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
