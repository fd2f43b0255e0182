/* SPDX-License-Identifier: MIT */
/* The process's life word (shm_life.c): peers map it and learn with one load whether we are alive,
 * where they polled the connection's socket after each RDMA. */
#ifndef ULNET_FABRIC_SHM_LIFE_H
#define ULNET_FABRIC_SHM_LIFE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SHM_LIFE_LEN 4096u

/* Our life page's memfd (made with its helper thread at the first call of the process, or of a
 * forked child), to pass to peers; -1 if it cannot be made (logged once: peers poll the socket). */
int shm_life_fd(void);
/* Map a peer's life page (@fd: a sealed memfd of SHM_LIFE_LEN bytes; not taken). NULL if it is not. */
const _Atomic uint32_t *shm_life_map(int fd);
void shm_life_unmap(const _Atomic uint32_t *w);
/* The owner of @w has not died (one load). */
bool shm_life_alive(const _Atomic uint32_t *w);

#endif
