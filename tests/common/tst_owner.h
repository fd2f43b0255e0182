/* SPDX-License-Identifier: MIT */
/* Tests that drive the core by hand act as the owner the code expects (internal.h, "Ownership"):
 * of one NI's loop (tst_enter/tst_exit, what an LND runs as), or of every loop and the node lock at
 * once (tst_world_stop/go: nothing runs meanwhile; for a test's clock and flags the loops read). */
#ifndef TST_OWNER_H
#define TST_OWNER_H

#include "internal.h"

/* The first NI that is not lo (NULL: none). */
static inline struct ulnet_ni *tst_first_ni(ulnet_node *node)
{
	struct ulnet_ni *ni = NULL;

	ulnet__lock(node);
	for (struct ulnet_list *p = node->nis.next; p != &node->nis && !ni; p = p->next)
		if (ulnet_container_of(p, struct ulnet_ni, link) != node->lo_ni)
			ni = ulnet_container_of(p, struct ulnet_ni, link);
	ulnet__lock_release(node);
	return ni;
}

static inline void tst_enter(struct ulnet_ni *ni)
{
	ulnet__loop_enter(ni->loop);
}

static inline void tst_exit(struct ulnet_ni *ni)
{
	ulnet__loop_exit(ni->loop);
}

/* @as: the loop whose owner the caller acts as meanwhile (its timers), or NULL. */
static inline void tst_world_stop(ulnet_node *node, struct ulnet_loop *as)
{
	ulnet__loops_enter(node, as);
	ulnet__lock(node);
}

static inline void tst_world_go(ulnet_node *node)
{
	ulnet__unlock(node);
	ulnet__loops_exit(node);
}

#endif
