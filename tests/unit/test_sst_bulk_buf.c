/* SPDX-License-Identifier: MIT */
/* Which bulk buffer a brw RPC gets (sst__rpc_alloc_bulk, src/selftest/sst_rpc.c): unchecked sinks all
 * land in one buffer of the engine, unchecked sources all send from another, checked ones and those
 * too large for the shared size keep their own; the bulk is [off, off + len) of a page-aligned buffer, and
 * its checks look at it page piece by page piece, as lnet_selftest looks at its page fragments.
 * Heap memory (a node without NIs); leaks show under ASan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "internal.h"
#include "selftest/sst_internal.h"

enum { PAGE = 4096, MIB = 1 << 20 };

struct fixture {
	ulnet_node *node;
	struct ulnet_sst sst;
	struct sst_rpc r[6];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || ulnet_node_open(NULL, &f->node))
		return -1;
	f->sst.node = f->node;
	f->sst.page = PAGE;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (unsigned i = 0; i < 6; i++) {
		if (!f->r[i].buf_shared)
			ulnet_mem_free(f->r[i].buf, f->r[i].buf_cap);
	}
	sst__discard_free(&f->sst);
	assert_null(f->sst.discard);
	assert_null(f->sst.unfilled);
	ulnet_node_close(f->node);
	free(f);
	return 0;
}

static void assert_frags(const struct sst_rpc *r, uint32_t off, uint32_t len)
{
	assert_int_equal(r->off, off);
	assert_int_equal(r->len, len);
	assert_int_equal(r->page, PAGE);
	assert_int_equal((uintptr_t)r->buf % PAGE, 0);
	assert_true(r->buf_shared || r->buf_cap >= (size_t)off + len);
}

/* Two unchecked sources (brw write's client, brw read's server) send from one buffer, two
 * unchecked sinks receive into another: never the same one, a node sending to itself would copy a
 * buffer onto itself. */
static void unchecked_share_per_direction(void **state)
{
	struct fixture *f = *state;
	struct sst_rpc *r = f->r;

	assert_int_equal(sst__rpc_alloc_bulk(&f->sst, &r[0], 0, MIB, SST_BUF_SHARED_SOURCE), 0);
	assert_int_equal(sst__rpc_alloc_bulk(&f->sst, &r[1], 8, MIB - 8, SST_BUF_SHARED_SOURCE), 0);
	assert_int_equal(sst__rpc_alloc_bulk(&f->sst, &r[2], 0, MIB, SST_BUF_SHARED_SINK), 0);
	assert_int_equal(sst__rpc_alloc_bulk(&f->sst, &r[3], PAGE, MIB, SST_BUF_SHARED_SINK), 0);
	for (unsigned i = 0; i < 4; i++)
		assert_true(r[i].buf_shared);
	assert_ptr_equal(r[0].buf, f->sst.unfilled);
	assert_ptr_equal(r[1].buf, f->sst.unfilled);
	assert_ptr_equal(r[2].buf, f->sst.discard);
	assert_ptr_equal(r[3].buf, f->sst.discard);
	assert_ptr_not_equal(f->sst.unfilled, f->sst.discard);
	assert_frags(&r[0], 0, MIB);
	assert_frags(&r[1], 8, MIB - 8);
	assert_frags(&r[3], PAGE, MIB);
}

/* Checked buffers are filled or read per RPC: each its own; so is one too large for the shared
 * size (1 MiB + a page), whatever it asked for. */
static void checked_or_too_large_own(void **state)
{
	struct fixture *f = *state;
	struct sst_rpc *r = f->r;

	assert_int_equal(sst__rpc_alloc_bulk(&f->sst, &r[0], 0, MIB, SST_BUF_SHARED_SOURCE), 0);
	assert_int_equal(sst__rpc_alloc_bulk(&f->sst, &r[1], 0, MIB, SST_BUF_OWN), 0);
	assert_int_equal(sst__rpc_alloc_bulk(&f->sst, &r[2], 0, MIB, SST_BUF_OWN), 0);
	assert_int_equal(sst__rpc_alloc_bulk(&f->sst, &r[3], 2 * PAGE, MIB, SST_BUF_SHARED_SOURCE), 0);
	assert_int_equal(sst__rpc_alloc_bulk(&f->sst, &r[4], 2 * PAGE, MIB, SST_BUF_SHARED_SINK), 0);
	assert_true(r[0].buf_shared);
	for (unsigned i = 1; i < 5; i++) {
		assert_false(r[i].buf_shared);
		assert_ptr_not_equal(r[i].buf, r[0].buf);
		for (unsigned j = 1; j < i; j++)
			assert_ptr_not_equal(r[i].buf, r[j].buf);
	}
	assert_null(f->sst.discard); /* no unchecked sink was asked for */
	assert_frags(&r[3], 2 * PAGE, MIB);
}

/* A check looks at the bulk page piece by page piece: SIMPLE sees the first and last 8 bytes of each
 * piece (the first piece runs from the offset to the end of its page), FULL every byte; a corrupted
 * byte is reported at its transfer offset. The RPC and its buffer go back to the caches. */
static void checks_walk_page_pieces(void **state)
{
	struct fixture *f = *state;
	struct sst_rpc *r = sst__rpc_new(&f->sst, ROLE_CLIENT);
	const uint32_t off = 100, len = 2 * PAGE;
	const struct { uint32_t at; bool simple_sees; } cases[] = {
		{ PAGE - off - 1, true },       /* last byte of the first piece */
		{ PAGE - off, true },           /* first byte of the second */
		{ PAGE - off + PAGE / 2, false }, /* the middle of the second */
		{ len - 1, true },              /* the last byte */
	};
	uint64_t bad;

	assert_non_null(r);
	assert_int_equal(sst__rpc_alloc_bulk(&f->sst, r, off, len, SST_BUF_OWN), 0);
	assert_frags(r, off, len);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ulnet__sst_brw_fill(r->buf + off, len, 0, ULNET_SST_BRW_MAGIC);
		assert_int_equal(sst__bulk_check(r, false, ULNET_SST_CHECK_FULL, &bad), 0);
		sst__bulk_corrupt(r, cases[i].at);
		assert_int_equal(r->buf[off + cases[i].at], 0x5a ^ r->buf[off + (cases[i].at + 8) % len]);
		assert_int_equal(sst__bulk_check(r, false, ULNET_SST_CHECK_SIMPLE, &bad), cases[i].simple_sees);
		if (cases[i].simple_sees)
			assert_int_equal(bad, cases[i].at);
		assert_int_equal(sst__bulk_check(r, false, ULNET_SST_CHECK_FULL, &bad), 1);
		assert_int_equal(bad, cases[i].at);
		assert_int_equal(sst__bulk_check(r, false, ULNET_SST_CHECK_NONE, &bad), 0);
	}
	sst__rpc_free(&f->sst, r); /* its buffer goes to the buffer cache */
	sst__rpc_cache_drain(&f->sst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(unchecked_share_per_direction, setup, teardown),
		cmocka_unit_test_setup_teardown(checked_or_too_large_own, setup, teardown),
		cmocka_unit_test_setup_teardown(checks_walk_page_pieces, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
