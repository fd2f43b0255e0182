/* SPDX-License-Identifier: MIT */
/* Routing: remote nets reached through gateways (routes), forwarding messages for other nodes
 * (routing enabled) into router buffers sized in bytes, and the router checker that pings gateways
 * and marks routes up and down, as LNet's router.c does on the wire.
 *
 * A message for a net with no local NI goes to the gateway of the best route that is up: lowest
 * priority, then fewest hops (unknown = 1), then the gateway with the most send credits, then round
 * robin. A local net is always reached directly. With routing enabled the node forwards what it
 * receives for another node, payloads up to LNET_MTU only, never reassembled; its ping reply then
 * says so (no RTE_DISABLED) with the status of each NI, which is what kernel nodes check before they
 * route through it. */
#ifndef ULNET_ROUTE_H
#define ULNET_ROUTE_H

#include <stdbool.h>
#include <stdint.h>
#include "export.h"
#include "nid.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ulnet_node ulnet_node;

#define ULNET_ROUTE_HOPS_UNDEF (-1) /* lnetctl's default: unknown, ranked as 1 */
#define ULNET_ROUTE_HOPS_MAX 255
#define ULNET_ROUTES_MAX 1024

/* One route, as lnetctl's `route:` entries carry it. */
struct ulnet_route_conf {
	const char *net;              /* the remote net: "tcp1", "o2ib" */
	const char *gateway;          /* a NID on one of this node's nets: "10.0.0.1@tcp" */
	int hops;                     /* 1..255, or ULNET_ROUTE_HOPS_UNDEF */
	uint32_t priority;            /* lower is preferred; lnetctl's default 0 */
	uint32_t health_sensitivity;  /* kept and shown (lnetctl's default 1) */
};
/* Add a route. 0; -EINVAL bad net, NID or hops; -ELOOP the net is one of this node's or the
 * gateway is this node; -EHOSTUNREACH the gateway is not on a local net; -EEXIST that net and
 * gateway already have a route; -ENOSPC ULNET_ROUTES_MAX routes. Each error logs one line naming
 * the value. The route starts up; the checker (if its interval is not 0) decides from then on. */
ULNET_EXPORT int ulnet_route_add(ulnet_node *node, const struct ulnet_route_conf *conf);
/* Delete the routes to @net (NULL: any) through @gateway (NULL: any). The number deleted, or
 * -EINVAL a bad net or NID, -ENOENT none matched. Messages already sent through them go on. */
ULNET_EXPORT int ulnet_route_del(ulnet_node *node, const char *net, const char *gateway);

struct ulnet_route_info {
	char net[16];
	struct ulnet_nid gateway;
	int hops;
	uint32_t priority, health_sensitivity;
	bool up;
	bool multi_hop;               /* the gateway's last ping reply had no NI on the net */
	char reason[48];              /* why it is down ("" when up) */
	uint64_t checked_ago_ms;      /* since the checker last heard from the gateway; UINT64_MAX never */
	uint64_t send_count, send_length; /* messages (and their payload bytes) sent through it */
};
/* Route @idx (0..). 0, or -ENOENT past the last. */
ULNET_EXPORT int ulnet_route_info_get(ulnet_node *node, unsigned idx, struct ulnet_route_info *out);

/* Routing settings: lnetctl's `routing:` and `buffers:` sections and router globals. Router buffers
 * are sized in bytes whatever the page size (tiny: 0, small: ULNET_RTR_SMALL_SIZE, large: LNET_MTU),
 * so a 64 KiB-page router holds what a 4 KiB one does; they are allocated as traffic needs them, up
 * to the counts and to memory_max bytes over all pools, and kept for reuse. */
#define ULNET_RTR_SMALL_SIZE 4096u
#define ULNET_RTR_TINY_DEFAULT 2048u
#define ULNET_RTR_SMALL_DEFAULT 16384u
#define ULNET_RTR_LARGE_DEFAULT 1024u
#define ULNET_RTR_BUFFERS_MAX (1u << 20)
#define ULNET_RTR_MEMORY_MAX_DEFAULT (1ull << 30)
#define ULNET_RTR_CHECK_INTERVAL_DEFAULT 60 /* alive_router_check_interval, s */
#define ULNET_RTR_PING_TIMEOUT_DEFAULT 50   /* router_ping_timeout, s */
#define ULNET_RTR_SENSITIVITY_DEFAULT 100   /* router_sensitivity, % */
#define ULNET_RTR_SECONDS_MAX 86400         /* the interval's and the timeout's limit */
struct ulnet_routing_conf {
	bool enable;                  /* forward messages for other nodes */
	uint32_t tiny, small, large;  /* buffers per pool, 1 to ULNET_RTR_BUFFERS_MAX */
	uint64_t memory_max;          /* bytes over every pool; >= one large buffer */
	/* the checker: ping every gateway each check_interval seconds (0: never; routes stay as the
	 * LNDs leave them), giving up on an answer after ping_timeout seconds; a route is up while its
	 * gateway answers, routes, and at least sensitivity % of its NIs on the route's net are up */
	uint32_t check_interval, ping_timeout, sensitivity;
};
/* The settings the node runs with (the defaults above until set). */
ULNET_EXPORT void ulnet_routing_get(ulnet_node *node, struct ulnet_routing_conf *out);
/* Apply @conf (read it with ulnet_routing_get, change fields, set). 0, or -EINVAL a value out of
 * range (logged with the limit). Lower counts or memory free the buffers kept for reuse at once and
 * the ones in use as they come back; a pool short of room frees buffers other pools keep. */
ULNET_EXPORT int ulnet_routing_set(ulnet_node *node, const struct ulnet_routing_conf *conf);

/* Why a message to forward was dropped (counted per node, per NI it arrived on and per peer). */
enum ulnet_fwd_drop {
	ULNET_FWD_DROP_DISABLED,      /* routing is not enabled here */
	ULNET_FWD_DROP_NO_ROUTE,      /* no NI and no route that is up reaches its destination */
	ULNET_FWD_DROP_LOOP,          /* its next hop is where it came from */
	ULNET_FWD_DROP_TOO_BIG,       /* payload above LNET_MTU (the connection is closed too) */
	ULNET_FWD_DROP_NO_MEMORY,     /* no memory for a buffer or a descriptor */
	ULNET_FWD_DROP_SEND_FAILED,   /* the next hop failed (its LND's error) */
	ULNET_FWD_DROP_REASONS
};
/* "disabled", "no_route", "loop", "too_big", "no_memory", "send_failed" (NULL past the last). */
ULNET_EXPORT const char *ulnet_fwd_drop_name(enum ulnet_fwd_drop r);

struct ulnet_rtr_pool_info {
	uint32_t size;                /* bytes per buffer */
	uint32_t nbuffers;            /* the pool's count (ulnet_routing_conf) */
	uint32_t allocated;           /* buffers that exist now (in use or free for reuse) */
	uint32_t in_use, max_in_use;
	uint64_t waits;               /* messages that had to wait for one of its buffers */
};
struct ulnet_fwd_counters {
	uint64_t msgs, bytes;         /* forwarded whole */
	uint64_t drops[ULNET_FWD_DROP_REASONS];
};
struct ulnet_routing_info {
	struct ulnet_routing_conf conf;
	struct ulnet_rtr_pool_info pool[3]; /* tiny, small, large */
	uint64_t memory, memory_max_seen; /* bytes of router buffers now / at most */
	uint32_t waiting;             /* messages waiting for a buffer or a peer buffer credit now */
	struct ulnet_fwd_counters fwd; /* every NI */
};
ULNET_EXPORT void ulnet_routing_info_get(ulnet_node *node, struct ulnet_routing_info *out);
/* Forwarding counters of NI @idx (as ulnet_ni_info_get numbers NIs): messages received on it to
 * forward (in) and sent on through it (out); drops are counted on the NI the message arrived on.
 * 0, or -ENOENT past the last NI. */
ULNET_EXPORT int ulnet_routing_ni_get(ulnet_node *node, unsigned idx, struct ulnet_fwd_counters *in,
				      struct ulnet_fwd_counters *out);

#ifdef __cplusplus
}
#endif
#endif
