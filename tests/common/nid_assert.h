/* SPDX-License-Identifier: MIT */
/* Test helper: compare two host NIDs field by field (so a failure names the field). Header-only;
 * include after cmocka.h. */
#ifndef ULNET_TEST_NID_ASSERT_H
#define ULNET_TEST_NID_ASSERT_H

#include "ulnet/nid.h"

static inline void assert_nid_equal(const struct ulnet_nid *want, const struct ulnet_nid *got)
{
	assert_int_equal(got->size, want->size);
	assert_int_equal(got->type, want->type);
	assert_int_equal(got->num, want->num);
	for (int i = 0; i < 4; i++)
		assert_int_equal(got->addr[i], want->addr[i]);
}

#endif
