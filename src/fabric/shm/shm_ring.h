/* SPDX-License-Identifier: MIT */
/* The shm provider's SEND rings: one single-producer single-consumer byte ring per QP and direction
 * in a memfd both processes map (the connector makes it and passes it with its CONNREQ). A record is
 * an 8-byte header (payload length, magic) and the payload, padded to 8 bytes. The producer keeps
 * its own copy of head, the consumer of tail: everything read from the shared page is the peer's to
 * scribble on, so it is loaded once, bounded and checked (a bad ring is -EPROTO, never an overrun).
 * Doorbells: a consumer that drained the ring says it sleeps (a flag), a producer that found no room
 * says it waits for space; the other side writes the peer's eventfd only then. Both flags follow a
 * store; fence; load pattern on each side (seq_cst fences), so no wake-up is lost. A flag may be
 * taken late (for a record the consumer found on its own since): whoever is rung looks again and,
 * with nothing to do, says again that it sleeps (or waits). */
#ifndef ULNET_FABRIC_SHM_RING_H
#define ULNET_FABRIC_SHM_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

/* per direction; a device whose max_msg_sz + 8 exceeds it sends over the socket */
#define SHM_RING_BYTES (128u << 10)
#define SHM_RING_HDR 8u
#define SHM_RING_CTL_LEN 4096u        /* both directions' control blocks */
#define SHM_RING_MAP_LEN (SHM_RING_CTL_LEN + 2u * SHM_RING_BYTES)

struct shm_ring_ctl {
	_Atomic uint64_t head;       /* producer: bytes published */
	uint8_t pad0[56];
	_Atomic uint64_t tail;       /* consumer: bytes consumed */
	uint8_t pad1[56];
	_Atomic uint32_t sleeping;   /* consumer: drained, ring the doorbell */
	_Atomic uint32_t want_space; /* producer: waits for room, ring the doorbell when tail moves */
	_Atomic uint32_t closed;     /* producer: its side closed the connection (before its socket) */
	/* the producer's side copies from/into the consumer's memory with this rkey right now (0: no
	 * copy): a deregistration of that key waits for it (shm_mr.c). Per connection, so a peer that
	 * holds it only delays the deregistration, then loses its own connection. */
	_Atomic uint32_t copying;
	uint8_t pad2[48];
};
_Static_assert(2 * sizeof(struct shm_ring_ctl) <= SHM_RING_CTL_LEN, "control blocks fit their page");

/* One end of one direction. */
struct shm_ring {
	struct shm_ring_ctl *ctl;
	uint8_t *data;
	uint64_t pos; /* producer: our head; consumer: our tail */
};

/* Map the rings' memfd @fd (SHM_RING_MAP_LEN bytes; else NULL): once per process, counted. */
void *shm_ring_map(int fd);
void shm_ring_unmap(void *map);
/* @map: SHM_RING_MAP_LEN bytes; @dir 0: connector -> acceptor, 1: acceptor -> connector. */
void shm_ring_attach(struct shm_ring *r, void *map, int dir);
/* Producer: bytes a SEND of @len takes. */
static inline uint64_t shm_ring_need(uint32_t len)
{
	return SHM_RING_HDR + (((uint64_t)len + 7) & ~7ull);
}
/* Publish @len bytes gathered from @iov[0..n). 0: published, *@bell: the consumer sleeps (write its
 * eventfd); 1: no room (the consumer will ring ours when it makes some); -EPROTO: the ring is bad. */
int shm_ring_put(struct shm_ring *r, const struct iovec *iov, int n, uint32_t len, bool *bell);
/* Consumer: 1 and *@len: a record waits; 0: empty; -EPROTO: the ring is bad. */
int shm_ring_peek(struct shm_ring *r, uint32_t *len);
/* Copy the waiting record's first @max bytes into @iov[0..n) (after shm_ring_peek). */
void shm_ring_read(const struct shm_ring *r, uint32_t len, const struct iovec *iov, int n);
/* Consume the waiting record. true: the producer waits for space (write its eventfd). */
bool shm_ring_pop(struct shm_ring *r, uint32_t len);
/* Say we sleep. false: a record came meanwhile (not asleep: consume it). */
bool shm_ring_sleep(struct shm_ring *r);
/* Consumer: we are awake after all (busy polling): the producer need not ring. A producer that took
 * the flag already rings once, harmlessly. */
void shm_ring_wake(struct shm_ring *r);
/* Consumer: a record may wait (one load; no check). */
static inline bool shm_ring_nonempty(const struct shm_ring *r)
{
	return atomic_load_explicit(&r->ctl->head, memory_order_relaxed) != r->pos;
}

#endif
