/* SPDX-License-Identifier: MIT */
/* Shared by the two ways a configuration reaches a node: at its start (config_file.c) and running
 * (config_apply.c). */
#ifndef ULNET_CONFIG_ROUTING_H
#define ULNET_CONFIG_ROUTING_H

#include <stddef.h>
#include "ulnet/config_file.h"

/* The node's routing settings with the ones @cfg gives in their place; set on the node when that
 * changes anything. 0; or ulnet_routing_set's error with one line in @err. */
int ulnet__config_routing_apply(const struct ulnet_config *cfg, ulnet_node *node, char *err, size_t errlen);

#endif
