/* SPDX-License-Identifier: MIT */
/* A node's configuration file (ulnetd -c): YAML in `lnetctl export` layout plus a `node:` section.
 * The library reads it with the same rules the core applies (page size, tunable names and ranges from
 * the tables, a NID on its net), so a file that parses is refused later only for what needs the
 * running system (an LND not built, an address not present). `ulnetctl export` prints a valid one.
 *
 * Accepted layout (every key optional unless marked):
 *   node:     pid, page_size, transaction_timeout, max_peers, busy_poll_us, loops, control
 *   selftest: server_rpc_timeout_ms, kernel_stats (struct ulnet_selftest_opts; for ulnet_selftest_start)
 *   net:      list of { net type (required), local NI(s): list of { nid | interfaces, status, tunables,
 *             lnd tunables, CPT, dev cpt } }; `net type: lo` entries are checked and then ignored
 *   route:    list of { net, gateway (both required), hop, priority, health_sensitivity, state, type }
 *             (state and type, as `lnetctl route show -v` prints them, are checked and ignored)
 *   routing:  enable, alive_router_check_interval, router_ping_timeout; or lnetctl's show layout, a
 *             list of `- cpt[N]: {tiny/small/large: {npages, nbuffers, credits, mincredits}}` (checked,
 *             ignored) and `- enable: 0|1`
 *   buffers:  tiny, small, large, memory_max (bytes, a ulnet extension)
 *   global:   lnetctl's global keys (integers); router_sensitivity applies, the others are ignored
 *   metrics:  listen (ADDRESS:PORT of the application's OpenMetrics endpoint; ulnetd's)
 *   fault:    list of fault rules as `ulnetctl fault show` prints them: { kind (required), src, dst,
 *             local_nid ("*" or a NID), portal ("*" or 0..63), message ("*" or PUT,ACK,GET,REPLY),
 *             rate | interval, seed, health_error, latency, hold } (its counters are checked, ignored)
 * Anything else is an error naming the file, the line and the key:
 *   node.yaml:7: unknown key 'peer_credit' in tunables */
#ifndef ULNET_CONFIG_FILE_H
#define ULNET_CONFIG_FILE_H

#include <stddef.h>
#include "node.h"
#include "route.h"
#include "fault.h"
#include "selftest.h"
#include "writer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One NI to add: @conf maps onto ulnet_ni_add(); every string it points to is owned by the config. */
struct ulnet_config_ni {
	struct ulnet_ni_conf conf;
	unsigned line; /* line of the NI in the file, for messages */
};

/* One accepted `global:` key (kept for export and messages; the core has no setter yet). */
struct ulnet_config_global {
	const char *key;
	long long value;
	unsigned line;
};

/* One `route:` entry; @conf's strings are owned by the config. */
struct ulnet_config_route {
	struct ulnet_route_conf conf;
	unsigned line;
};

/* One `peer:` entry, lnetctl's layout (`primary nid`, `Multi-Rail: False`, `peer ni: [{nid}]`): a
 * static peer (ulnet_peer_add). ulnet has no Multi-Rail, so a peer has exactly one NID. */
#define ULNET_CONFIG_PEERS_MAX 4096
struct ulnet_config_peer {
	struct ulnet_nid nid;
	unsigned line;
};

/* One `fault:` entry, checked (ulnet_fault_rule_check). */
struct ulnet_config_fault {
	struct ulnet_fault_rule rule;
	unsigned line;
};
/* The routing settings the file gives (bits of ulnet_config.routing_set): only those replace the
 * node's own (ulnet_routing_get, change, ulnet_routing_set). */
enum {
	ULNET_CONFIG_RT_ENABLE = 1u << 0,
	ULNET_CONFIG_RT_TINY = 1u << 1,
	ULNET_CONFIG_RT_SMALL = 1u << 2,
	ULNET_CONFIG_RT_LARGE = 1u << 3,
	ULNET_CONFIG_RT_MEMORY_MAX = 1u << 4,
	ULNET_CONFIG_RT_CHECK_INTERVAL = 1u << 5,
	ULNET_CONFIG_RT_PING_TIMEOUT = 1u << 6,
	ULNET_CONFIG_RT_SENSITIVITY = 1u << 7,
};

struct ulnet_config {
	char *file;                    /* the name used in messages */
	struct ulnet_node_opts opts;   /* 0 fields = core defaults */
	char *control;                 /* node: control, the application's control socket path (ulnetd);
					* NULL when the file has none. Only its length is checked. */
	struct ulnet_selftest_opts selftest; /* selftest: section; 0 fields = defaults */
	struct ulnet_config_ni *nis;   /* non-lo NIs in file order */
	size_t n_nis;
	struct ulnet_config_global *globals;
	size_t n_globals;
	struct ulnet_config_route *routes; /* route: in file order */
	size_t n_routes;
	struct ulnet_routing_conf routing; /* routing:, buffers:, global: router_sensitivity ... */
	unsigned routing_set;              /* ... the fields given (ULNET_CONFIG_RT_*) */
	unsigned routing_line;             /* the first of them, for messages */
	char *metrics_listen;              /* metrics: listen, "ADDRESS:PORT" (checked by
					    * ulnet_config_listen_parse); NULL: no endpoint */
	struct ulnet_config_fault *faults; /* fault: in file order, added after the routes */
	size_t n_faults;
	struct ulnet_config_peer *peers;   /* peer: static peers, added after the NIs */
	size_t n_peers;
};

/* "ADDRESS:PORT" of a listening socket: an IPv4 address or a bracketed IPv6 one ([::1]:9669), and a
 * port 1..65535; no host names (a metrics endpoint binds what the file names, nothing a resolver
 * picks). 0 with the address (brackets removed) in @host and the port in *@port; or -EINVAL and
 * the reason in *@why. */
ULNET_EXPORT int ulnet_config_listen_parse(const char *s, char *host, size_t hostlen, uint16_t *port, const char **why);

/* Largest control socket path (sizeof sun_path - 1). */
#define ULNET_CONFIG_CONTROL_MAX 107

/* Parse @len bytes of YAML; @file names the source in messages. 0 and *out set (free it with
 * ulnet_config_free), or -EINVAL with one line "FILE:LINE: reason" in @err (NUL-terminated, cut to
 * @errlen), or -ENOMEM. */
ULNET_EXPORT int ulnet_config_parse(const char *file, const char *text, size_t len, struct ulnet_config **out,
				    char *err, size_t errlen);
/* Read and parse @path. As ulnet_config_parse, plus -errno from open/read ("FILE: reason"). */
ULNET_EXPORT int ulnet_config_load(const char *path, struct ulnet_config **out, char *err, size_t errlen);
/* Free @cfg and every string it owns. NULL is a no-op. */
ULNET_EXPORT void ulnet_config_free(struct ulnet_config *cfg);
/* Open a node with @cfg's options, add its NIs in file order, apply the routing settings it gives
 * (when they change anything) and add its routes. 0 and *out set; or the error of ulnet_node_open,
 * ulnet_ni_add, ulnet_routing_set or ulnet_route_add with one line in @err
 * ("FILE:LINE: cannot add NI NID: reason", "FILE:LINE: cannot add route NET via NID: reason"). */
ULNET_EXPORT int ulnet_config_node_open(const struct ulnet_config *cfg, ulnet_node **out, char *err, size_t errlen);

/* Apply @cfg to the running @node (ulnetctl import). Every check that needs no change comes first:
 * node: options a running node cannot change (pid, page_size, max_peers, busy_poll_us, loops) must
 * equal the node's, a net the node has must keep its NID, every new route's gateway must be on a
 * net the node has or the file adds. Then, in order: the routing settings the file gives, the NIs
 * of nets the node lacks, the routes it lacks, transaction_timeout, the fault rules it lacks (an
 * identical NI, route or rule is left alone: an export imported back changes nothing). 0; or the
 * error with one line in @err ("FILE:LINE: reason") and the node as it was, except NIs: an NI
 * cannot be removed, so when one NI fails the ones before it stay (the line says so). The file's
 * control, selftest and metrics sections are the application's (ulnetd's) to judge. */
ULNET_EXPORT int ulnet_config_apply(ulnet_node *node, const struct ulnet_config *cfg, char *err, size_t errlen);

/* Writing a running node back, through the one writer (ulnet/writer.h), in lnetctl's layout. */
enum ulnet_net_detail {
	ULNET_NET_SHOW,         /* net show: nid, status, interfaces */
	ULNET_NET_SHOW_VERBOSE, /* net show -v: also statistics, tunables, lnd tunables, fabric, credits, CPT */
	ULNET_NET_EXPORT,       /* export: what a configuration file holds (tunables, lnd tunables, CPT) */
};
/* The `net:` list (a key of the mapping open in @w): NIs grouped by net in order of first appearance;
 * @only: one net's name, or NULL. 0 or -ENOMEM. */
ULNET_EXPORT int ulnet_nets_write(ulnet_node *node, const char *only, enum ulnet_net_detail detail,
				  struct ulnet_writer *w);
/* The node as a whole configuration file (a document: `node:` with every option the node runs with
 * and, when non-NULL, @control; then `net:`; `route:` when there are routes; `routing:`, `buffers:`
 * and `global: router_sensitivity` with the settings in force; `fault:` when there are fault rules
 * (without their counters); then, when @selftest is non-NULL,
 * `selftest:`; when @metrics_listen is non-NULL, `metrics: {listen}`), which ulnet_config_parse
 * reads back into the same options. 0 or -ENOMEM. */
ULNET_EXPORT int ulnet_config_export(ulnet_node *node, const char *control, const struct ulnet_selftest_opts *selftest,
				     const char *metrics_listen, struct ulnet_writer *w);

#ifdef __cplusplus
}
#endif
#endif
