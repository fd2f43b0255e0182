/* SPDX-License-Identifier: MIT */
/* The node's index of the live allocations ulnet_mem_alloc made for it (mem.c): which allocation
 * holds a transfer's memory, and the registration slot an LND may fill for the whole allocation
 * (lnd.h: ulnet__mem_slot). Pure: no I/O, no locking (the node lock guards it); the records belong
 * to the caller, so a slot's address stays put while the index grows. */
#ifndef ULNET_MEM_RANGES_H
#define ULNET_MEM_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct ulnet_ni;

struct ulnet_mem_range {
	uintptr_t base;
	size_t len;
	void *lnd_reg;               /* an LND's registration of [base, base + len), or NULL */
	struct ulnet_ni *lnd_reg_ni; /* the NI whose LND filled lnd_reg */
};

/* Records sorted by base; allocations never overlap. */
struct ulnet_mem_ranges {
	struct ulnet_mem_range **v;
	size_t n, cap;
};

/* Add @r (len > 0). 0; -EEXIST when it overlaps a record; -ENOMEM. */
int ulnet__mem_ranges_add(struct ulnet_mem_ranges *idx, struct ulnet_mem_range *r);
/* Take out the record starting at @base: it, or NULL. */
struct ulnet_mem_range *ulnet__mem_ranges_del(struct ulnet_mem_ranges *idx, uintptr_t base);
/* The record holding every byte of the first @nob bytes of @iov[0..niov) (empty pieces ignored), or
 * NULL (some byte outside every record, pieces in more than one, fewer than @nob bytes, or nob 0). */
struct ulnet_mem_range *ulnet__mem_ranges_find(const struct ulnet_mem_ranges *idx, const struct iovec *iov,
					       unsigned niov, uint64_t nob);
void ulnet__mem_ranges_free(struct ulnet_mem_ranges *idx);

#endif
