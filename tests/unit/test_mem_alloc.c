/* SPDX-License-Identifier: MIT */
/* ulnet_mem_alloc / ulnet_mem_free (src/core/mem.c) over many allocations: each live one is in the
 * node's index, a freed one never is again, and memory freed after its node closed goes back as
 * plain memory. Heap memory here (a node without NIs); leaks show under ASan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "internal.h"

enum { N = 2000 };

static bool indexed(ulnet_node *node, void *p, size_t len)
{
	struct iovec iov = { p, len };
	bool found;

	ulnet__lock(node);
	found = ulnet__mem_ranges_find(&node->mem_ranges, &iov, 1, len) != NULL;
	ulnet__lock_release(node);
	return found;
}

static void many_allocations(void **state)
{
	static void *p[N];
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	for (unsigned i = 0; i < N; i++) {
		p[i] = ulnet_mem_alloc(node, 64, 100 + i);
		assert_non_null(p[i]);
		assert_true(((uintptr_t)p[i] & 63) == 0);
		memset(p[i], 0xa5, 100 + i);
	}
	for (unsigned i = 0; i < N; i++)
		assert_true(indexed(node, p[i], 100 + i));
	/* free every other one, last first: the rest stay found, the freed are gone */
	for (unsigned i = N; i-- > 0;)
		if (i % 2)
			ulnet_mem_free(p[i], 100 + i);
	for (unsigned i = 0; i < N; i++)
		if (!(i % 2))
			assert_true(indexed(node, p[i], 100 + i));
	for (unsigned i = 0; i < N; i += 2) {
		ulnet_mem_free(p[i], 100 + i);
		p[i] = ulnet_mem_alloc(node, 8, 32); /* reuse of freed addresses is found again */
		assert_non_null(p[i]);
		assert_true(indexed(node, p[i], 32));
	}
	ulnet_node_close(node); /* what is still allocated outlives the node */
	for (unsigned i = 0; i < N; i += 2)
		ulnet_mem_free(p[i], 32);
	ulnet_mem_free(NULL, 0);
}

static void bad_arguments(void **state)
{
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_null(ulnet_mem_alloc(node, 3, 64));
	assert_null(ulnet_mem_alloc(node, 64, 0));
	assert_null(ulnet_mem_alloc(NULL, 64, 64));
	ulnet_node_close(node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(many_allocations),
		cmocka_unit_test(bad_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
