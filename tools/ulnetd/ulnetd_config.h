/* SPDX-License-Identifier: MIT */
/* (Not "config.h": that name is Meson's generated build configuration.) */
/* ulnetd's node configuration file: YAML in `lnetctl export` layout plus a `node:` section.
 * This file owns parsing and validation of the syntax, the keys and the value types; it does not
 * check what only the core can (whether an LND is built, whether an address exists, LND tunables).
 *
 * Accepted layout (every key optional unless marked):
 *   node:     pid, page_size, transaction_timeout, max_peers, busy_poll_us, control
 *   net:      list of { net type (required), local NI(s): list of { nid | interfaces, status, tunables,
 *             lnd tunables, CPT, dev cpt } }; `net type: lo` entries are checked and then ignored
 *   global:   lnetctl's global keys (integers), accepted and ignored
 * Anything else is an error naming the file, the line and the key:
 *   node.yaml:7: unknown key 'peer_credit' in tunables */
#ifndef ULNETD_ULNETD_CONFIG_H
#define ULNETD_ULNETD_CONFIG_H

#include <stddef.h>
#include <ulnet/ulnet.h>

/* One NI to add: @conf maps onto ulnet_ni_add(); every string it points to is owned by the config. */
struct ulnetd_ni_entry {
	struct ulnet_ni_conf conf;
	unsigned line; /* line of the NI in the file, for messages */
};

/* One accepted `global:` key (kept for export and messages; the core has no setter yet). */
struct ulnetd_global {
	const char *key;
	long long value;
	unsigned line;
};

struct ulnetd_config {
	char *file;                    /* the name used in messages */
	struct ulnet_node_opts opts;   /* 0 fields = core defaults */
	char *control;                 /* control socket path, NULL when the file has none */
	struct ulnetd_ni_entry *nis;   /* non-lo NIs in file order */
	size_t n_nis;
	struct ulnetd_global *globals;
	size_t n_globals;
};

/* Largest control socket path (sizeof sun_path - 1). */
#define ULNETD_CONTROL_PATH_MAX 107

/* Parse @len bytes of YAML; @file names the source in messages. 0 and *out set (free it with
 * ulnetd_config_free), or -EINVAL with one line "FILE:LINE: reason" in @err (NUL-terminated, cut to
 * @errlen), or -ENOMEM. */
int ulnetd_config_parse(const char *file, const char *text, size_t len, struct ulnetd_config **out,
			char *err, size_t errlen);
/* Read and parse @path. As ulnetd_config_parse, plus -errno from open/read ("FILE: reason"). */
int ulnetd_config_load(const char *path, struct ulnetd_config **out, char *err, size_t errlen);
/* Free @cfg and every string it owns. NULL is a no-op. */
void ulnetd_config_free(struct ulnetd_config *cfg);

#endif
