/* SPDX-License-Identifier: MIT */
/* The route table (placeholder while the routing core is written). */
#include <errno.h>
#include <string.h>
#include "internal.h"

int ulnet_route_add(ulnet_node *node, const struct ulnet_route_conf *conf)
{
	(void)node;
	(void)conf;
	return -ENOSYS;
}

int ulnet_route_del(ulnet_node *node, const char *net, const char *gateway)
{
	(void)node;
	(void)net;
	(void)gateway;
	return -ENOENT;
}

int ulnet_route_info_get(ulnet_node *node, unsigned idx, struct ulnet_route_info *out)
{
	(void)node;
	(void)idx;
	(void)out;
	return -ENOENT;
}

void ulnet_routing_get(ulnet_node *node, struct ulnet_routing_conf *out)
{
	(void)node;
	memset(out, 0, sizeof(*out));
	out->tiny = ULNET_RTR_TINY_DEFAULT;
	out->small = ULNET_RTR_SMALL_DEFAULT;
	out->large = ULNET_RTR_LARGE_DEFAULT;
	out->memory_max = ULNET_RTR_MEMORY_MAX_DEFAULT;
	out->check_interval = ULNET_RTR_CHECK_INTERVAL_DEFAULT;
	out->ping_timeout = ULNET_RTR_PING_TIMEOUT_DEFAULT;
	out->sensitivity = ULNET_RTR_SENSITIVITY_DEFAULT;
}

int ulnet_routing_set(ulnet_node *node, const struct ulnet_routing_conf *conf)
{
	(void)node;
	(void)conf;
	return -ENOSYS;
}

const char *ulnet_fwd_drop_name(enum ulnet_fwd_drop r)
{
	static const char *const names[ULNET_FWD_DROP_REASONS] = {
		"disabled", "no_route", "loop", "too_big", "no_memory", "send_failed",
	};

	return (unsigned)r < ULNET_FWD_DROP_REASONS ? names[r] : NULL;
}

void ulnet_routing_info_get(ulnet_node *node, struct ulnet_routing_info *out)
{
	memset(out, 0, sizeof(*out));
	ulnet_routing_get(node, &out->conf);
}

int ulnet_routing_ni_get(ulnet_node *node, unsigned idx, struct ulnet_fwd_counters *in,
			 struct ulnet_fwd_counters *out)
{
	(void)node;
	(void)idx;
	memset(in, 0, sizeof(*in));
	memset(out, 0, sizeof(*out));
	return -ENOENT;
}
