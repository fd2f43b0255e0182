/* SPDX-License-Identifier: MIT */
/* The node's index of ulnet_mem_alloc allocations (src/core/mem_ranges.c), table-tested: adding
 * (overlaps refused, order kept whatever the insertion order), finding the allocation that holds
 * every byte of a transfer (iovec pieces, empty pieces, partial last piece, a byte outside, pieces in
 * two allocations), and taking records out (a freed allocation is never found again). No I/O. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "mem_ranges.h"

#define A(x) ((void *)(uintptr_t)(x))

/* allocations: [0x1000, 0x3000), [0x3000, 0x4000) (touching the first), [0x10000, 0x10001) */
static struct ulnet_mem_range recs[] = { { 0x3000, 0x1000, NULL, NULL }, { 0x10000, 1, NULL, NULL },
					 { 0x1000, 0x2000, NULL, NULL } };

static void setup_idx(struct ulnet_mem_ranges *idx)
{
	*idx = (struct ulnet_mem_ranges){ 0 };
	for (unsigned i = 0; i < sizeof(recs) / sizeof(recs[0]); i++)
		assert_int_equal(ulnet__mem_ranges_add(idx, &recs[i]), 0);
	for (size_t i = 1; i < idx->n; i++)
		assert_true(idx->v[i - 1]->base < idx->v[i]->base);
}

static void test_add(void **state)
{
	static const struct {
		uintptr_t base;
		size_t len;
		int rc;
	} cases[] = {
		{ 0x0800, 0x0800, 0 },       /* ends where the first starts */
		{ 0x0800, 0x0801, -EEXIST }, /* one byte into it */
		{ 0x2fff, 1, -EEXIST },      /* its last byte */
		{ 0x1000, 0x2000, -EEXIST }, /* the same again */
		{ 0x0fff, 0x4000, -EEXIST }, /* covering two */
		{ 0x4000, 0xc000, 0 },       /* the gap exactly */
		{ 0x10001, 5, 0 },           /* right after the last */
		{ 0xffff, 2, -EEXIST },      /* across the last's start */
		{ 0x20000, 0, -EINVAL },     /* empty */
		{ UINTPTR_MAX - 1, 4, -EINVAL }, /* wraps */
	};
	struct ulnet_mem_range extra[sizeof(cases) / sizeof(cases[0])];
	struct ulnet_mem_ranges idx;

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setup_idx(&idx);
		extra[i] = (struct ulnet_mem_range){ cases[i].base, cases[i].len, NULL, NULL };
		if (ulnet__mem_ranges_add(&idx, &extra[i]) != cases[i].rc)
			fail_msg("case %u: add [%#lx, +%#zx) not %d", i, (unsigned long)cases[i].base, cases[i].len,
				 cases[i].rc);
		assert_int_equal(idx.n, 3 + (cases[i].rc == 0));
		for (size_t k = 1; k < idx.n; k++)
			assert_true(idx.v[k - 1]->base + idx.v[k - 1]->len <= idx.v[k]->base);
		ulnet__mem_ranges_free(&idx);
	}
}

static void test_find(void **state)
{
	static const struct {
		struct iovec iov[3];
		unsigned niov;
		uint64_t nob;
		int want; /* index in recs, -1: none */
	} cases[] = {
		{ { { A(0x1000), 0x2000 } }, 1, 0x2000, 2 },                      /* all of it */
		{ { { A(0x2fff), 1 } }, 1, 1, 2 },                                /* its last byte */
		{ { { A(0x3000), 1 } }, 1, 1, 0 },                                /* the next one's first */
		{ { { A(0x2fff), 2 } }, 1, 2, -1 },                               /* across two allocations */
		{ { { A(0x1000), 0x1000 }, { A(0x3000), 0x10 } }, 2, 0x1010, -1 }, /* pieces in two */
		{ { { A(0x1000), 0x1000 }, { A(0x2800), 0x10 } }, 2, 0x1010, 2 },  /* gaps inside one: fine */
		{ { { A(0x2000), 0x1000 }, { A(0x1000), 0x10 } }, 2, 0x1010, 2 },  /* out of order inside one */
		{ { { A(0x1000), 0 }, { A(0x3000), 0x1000 } }, 2, 0x1000, 0 },     /* empty pieces ignored */
		{ { { A(0x3000), 0x800 }, { A(0x9000), 0x800 } }, 2, 0x800, 0 },   /* only nob bytes count */
		{ { { A(0x3000), 0x800 }, { A(0x3800), 0x900 } }, 2, 0x1000, 0 },  /* last piece cut at nob */
		{ { { A(0x3000), 0x800 }, { A(0x3800), 0x900 } }, 2, 0x1100, -1 }, /* past its end */
		{ { { A(0x3000), 0x800 } }, 1, 0x900, -1 },                        /* fewer bytes than nob */
		{ { { A(0x0fff), 1 } }, 1, 1, -1 },                                /* below every one */
		{ { { A(0x4000), 1 } }, 1, 1, -1 },                                /* in the gap */
		{ { { A(0x10000), 1 } }, 1, 1, 1 },                                /* a one-byte allocation */
		{ { { A(0x10000), 2 } }, 1, 2, -1 },
		{ { { A(0x10001), 1 } }, 1, 1, -1 },                               /* above every one */
		{ { { A(0x1000), 0x10 } }, 1, 0, -1 },                             /* nothing to move */
		{ { { 0 } }, 0, 1, -1 },                                           /* no pieces */
	};
	struct ulnet_mem_ranges idx;

	(void)state;
	setup_idx(&idx);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ulnet_mem_range *got = ulnet__mem_ranges_find(&idx, cases[i].iov, cases[i].niov, cases[i].nob);
		struct ulnet_mem_range *want = cases[i].want < 0 ? NULL : &recs[cases[i].want];

		if (got != want)
			fail_msg("case %u: found %p (base %#lx), want %p", i, (void *)got,
				 got ? (unsigned long)got->base : 0ul, (void *)want);
	}
	ulnet__mem_ranges_free(&idx);
}

static void test_del(void **state)
{
	struct iovec in_first = { A(0x1800), 0x10 }, in_second = { A(0x3800), 0x10 };
	struct ulnet_mem_ranges idx;

	(void)state;
	setup_idx(&idx);
	assert_null(ulnet__mem_ranges_del(&idx, 0x1800)); /* not a record's start */
	assert_null(ulnet__mem_ranges_del(&idx, 0x5000));
	assert_ptr_equal(ulnet__mem_ranges_del(&idx, 0x1000), &recs[2]);
	assert_int_equal(idx.n, 2);
	assert_null(ulnet__mem_ranges_find(&idx, &in_first, 1, 0x10));
	assert_ptr_equal(ulnet__mem_ranges_find(&idx, &in_second, 1, 0x10), &recs[0]);
	assert_null(ulnet__mem_ranges_del(&idx, 0x1000)); /* once */
	/* the same range comes back (a new allocation at the old address): found again */
	assert_int_equal(ulnet__mem_ranges_add(&idx, &recs[2]), 0);
	assert_ptr_equal(ulnet__mem_ranges_find(&idx, &in_first, 1, 0x10), &recs[2]);
	assert_ptr_equal(ulnet__mem_ranges_del(&idx, 0x10000), &recs[1]);
	assert_ptr_equal(ulnet__mem_ranges_del(&idx, 0x3000), &recs[0]);
	assert_ptr_equal(ulnet__mem_ranges_del(&idx, 0x1000), &recs[2]);
	assert_int_equal(idx.n, 0);
	assert_null(ulnet__mem_ranges_find(&idx, &in_second, 1, 0x10));
	ulnet__mem_ranges_free(&idx);
}

/* Many records in shuffled order: each found by an inner byte, none in the gaps. */
static void test_many(void **state)
{
	enum { N = 1000 };
	struct ulnet_mem_range *r = calloc(N, sizeof(*r));
	struct ulnet_mem_ranges idx = { 0 };

	(void)state;
	assert_non_null(r);
	for (unsigned i = 0; i < N; i++) {
		unsigned k = (i * 617u) % N; /* 617 is prime to N: a permutation */

		r[k] = (struct ulnet_mem_range){ 0x100000u + (uintptr_t)k * 0x2000u, 0x1000u + k, NULL, NULL };
		assert_int_equal(ulnet__mem_ranges_add(&idx, &r[k]), 0);
	}
	for (unsigned k = 0; k < N; k++) {
		struct iovec in = { A(r[k].base + r[k].len - 1), 1 }, gap = { A(r[k].base + r[k].len), 1 };

		assert_ptr_equal(ulnet__mem_ranges_find(&idx, &in, 1, 1), &r[k]);
		assert_null(ulnet__mem_ranges_find(&idx, &gap, 1, 1));
	}
	ulnet__mem_ranges_free(&idx);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_del),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
