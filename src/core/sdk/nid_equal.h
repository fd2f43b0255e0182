/* SPDX-License-Identifier: MIT */
/* NID comparison inline for the library's own paths (a 0-byte Put compares about a dozen NIDs:
 * ulnet_nid_equal as a call cost more than the comparison). ulnet_nid_equal (nid.c) is this. */
#ifndef ULNET_NID_EQUAL_H
#define ULNET_NID_EQUAL_H

#include <stdbool.h>
#include "ulnet/nid.h"

/* Words beyond the size are ignored so that a NID built elsewhere with stale padding still compares
 * equal; nid.c zeroes them anyway. Any two wildcards are equal. */
static inline bool ulnet__nid_equal(const struct ulnet_nid *a, const struct ulnet_nid *b)
{
	unsigned words;

	/* type first: an ANY NID equals only another ANY, whatever its other fields; and the
	 * cheapest test that tells most pairs apart */
	if (a->type != b->type)
		return false;
	if (a->type == ULNET_LND_ANY)
		return true;
	if (a->size != b->size || a->num != b->num || a->addr[0] != b->addr[0])
		return false;
	/* addr words the size covers: 1 for IPv4 and numeric addresses, 4 for IPv6 */
	words = ((unsigned)a->size + 4 + 3) / 4;
	for (unsigned i = 1; i < words && i < 4; i++)
		if (a->addr[i] != b->addr[i])
			return false;
	return true;
}

#endif
