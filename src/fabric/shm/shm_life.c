/* SPDX-License-Identifier: MIT */
/* The process's life word (shm_life.h): a futex word in a sealed memfd page that connected peers map
 * read-only. A helper thread that only sleeps owns it (the word holds its thread id) and has it on
 * its robust futex list (set_robust_list), so when the process dies, however it dies, the kernel
 * marks the word (FUTEX_OWNER_DIED, the thread id cleared) before it closes the process's files. A
 * peer then checks, with one load, that we are alive after an RDMA into our memory, where it polled
 * the connection's socket (a system call per WRITE). One page and one sleeping thread per process,
 * made at the first connection. A child forked after that has none (its parent's helper thread is
 * not its own, and a child of a threaded process should start no thread): its peers poll its socket. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "log.h"
#include "shm_life.h"
#include "shm.h"

/* The page: the robust list entry the kernel walks (in our address space) and the word after it. */
struct life_page {
	struct robust_list entry;
	_Atomic uint32_t word;
};
_Static_assert(sizeof(struct life_page) <= SHM_LIFE_LEN, "one page");

static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t life_once = PTHREAD_ONCE_INIT;
static int life_fd = -1;      /* -1: not made yet (or after a fork) */
static bool life_failed;      /* making it failed once: peers poll our socket (logged once) */
static struct life_page *life;
static struct robust_list_head life_head;
static sem_t life_ready;

static void *life_main(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* never takes the process's signals */
	atomic_store(&life->word, (uint32_t)syscall(SYS_gettid));
	life_head.list.next = &life->entry;
	life->entry.next = &life_head.list; /* circular: the list holds the one entry */
	life_head.futex_offset = (long)((char *)&life->word - (char *)&life->entry);
	life_head.list_op_pending = NULL;
	/* (glibc's own robust list for this thread is replaced: the thread takes no robust mutex) */
	if (syscall(SYS_set_robust_list, &life_head, sizeof(life_head)))
		atomic_store(&life->word, 0);
	sem_post(&life_ready);
	for (;;)
		pause();
	return NULL;
}

/* A forked child has not the helper thread: the parent's page says nothing about it. A child of a
 * process that made none makes its own when it first connects. */
static void life_prepare(void) { pthread_mutex_lock(&life_lock); }
static void life_parent(void) { pthread_mutex_unlock(&life_lock); }
static void life_child(void)
{
	if (life_fd >= 0) {
		close(life_fd);
		life_failed = true; /* (no line: the choice is ours, nothing failed) */
	}
	if (life)
		munmap(life, SHM_LIFE_LEN);
	life_fd = -1;
	life = NULL;
	pthread_mutex_unlock(&life_lock);
}

static void life_init(void)
{
	pthread_atfork(life_prepare, life_parent, life_child);
}

static int life_make(void)
{
	pthread_attr_t attr;
	pthread_t t;
	int fd, rc;
	void *p;

	fd = memfd_create("ulnet-shm-life", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* peers get this fd: after our own mapping nobody may map it writable or write it (one write to
	 * the word would make every peer see us dead), nor resize it (a SIGBUS in every mapper) */
	if (ftruncate(fd, SHM_LIFE_LEN) < 0 ||
	    (p = mmap(NULL, SHM_LIFE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if ((rc = shm_seal_read_only(fd))) {
		munmap(p, SHM_LIFE_LEN);
		close(fd);
		return rc;
	}
	life = p;
	sem_init(&life_ready, 0, 0);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	rc = pthread_create(&t, &attr, life_main, NULL);
	pthread_attr_destroy(&attr);
	if (rc) {
		munmap(life, SHM_LIFE_LEN);
		life = NULL;
		close(fd);
		sem_destroy(&life_ready);
		return -rc;
	}
	pthread_setname_np(t, "ulnet-shm-life");
	while (sem_wait(&life_ready) && errno == EINTR)
		;
	sem_destroy(&life_ready);
	if (!atomic_load(&life->word)) { /* set_robust_list refused: the word would never be marked */
		close(fd);
		return -ENOSYS; /* (the thread sleeps on, harmless; the page stays mapped for it) */
	}
	life_fd = fd;
	return 0;
}

int shm_life_fd(void)
{
	int fd, rc = 0;

	pthread_once(&life_once, life_init);
	pthread_mutex_lock(&life_lock);
	if (life_fd < 0 && !life_failed && (rc = life_make())) {
		life_failed = true;
		ULNET_LOG(FABRIC, WARN, "shm: no life word for peers (%s): they poll the connection after each RDMA",
			  strerror(-rc));
	}
	fd = life_fd;
	pthread_mutex_unlock(&life_lock);
	return fd;
}

const _Atomic uint32_t *shm_life_map(int fd)
{
	struct stat st;
	void *p;

	/* (sealed against shrinking: a peer cannot truncate it under our mapping, no SIGBUS) */
	if (shm_fd_sealed(fd, SHM_LIFE_LEN) || fstat(fd, &st) < 0 || st.st_size != SHM_LIFE_LEN ||
	    (p = mmap(NULL, SHM_LIFE_LEN, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)
		return NULL;
	return &((const struct life_page *)p)->word;
}

void shm_life_unmap(const _Atomic uint32_t *w)
{
	if (w)
		munmap((void *)((uintptr_t)w & ~(uintptr_t)(SHM_LIFE_LEN - 1)), SHM_LIFE_LEN);
}

bool shm_life_alive(const _Atomic uint32_t *w)
{
	uint32_t v = atomic_load_explicit(w, memory_order_acquire);

	return (v & FUTEX_TID_MASK) && !(v & FUTEX_OWNER_DIED);
}
