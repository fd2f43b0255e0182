/* SPDX-License-Identifier: MIT */
/* The node's clock (ulnet__node_now): the library's clock (clock.h) unless a test injects its own for
 * the timers; and ulnet_clock_ns, the public face of the library's clock. */
#include "internal.h"

uint64_t ulnet_clock_ns(void)
{
	return ulnet__now_ns();
}

uint64_t ulnet__node_now(const struct ulnet_node *node)
{
	return node->clock ? node->clock(node->clock_arg) : ulnet__now_ns();
}

uint64_t ulnet__node_now_coarse(const struct ulnet_node *node)
{
	return node->clock ? node->clock(node->clock_arg) : ulnet__now_coarse_ns();
}

void ulnet__node_set_clock(struct ulnet_node *node, uint64_t (*clock)(void *arg), void *arg)
{
	node->clock = clock;
	node->clock_arg = arg;
}
