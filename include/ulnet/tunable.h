/* SPDX-License-Identifier: MIT */
/* Typed tunables: every key an NI or an LND accepts is described once, with its type, range, default
 * and a one-line description. The core parses configuration with these tables, and tools print
 * `net show`, `export` and `--json` from them, so no tunable goes through a text round trip. */
#ifndef ULNET_TUNABLE_H
#define ULNET_TUNABLE_H

#include <stddef.h>
#include <stdint.h>
#include "event.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ulnet_tunable_type {
	ULNET_TUNABLE_INT = 1,  /* integer in [min, max] */
	ULNET_TUNABLE_BOOL,     /* 0 or 1; also parsed from true/false, yes/no, on/off */
	ULNET_TUNABLE_ENUM,     /* one of names[min..max], stored as its index */
};

/* One "key: value" tunable for an NI (config file: tunables / lnd tunables). */
struct ulnet_kv {
	const char *key;
	const char *value;
};

struct ulnet_tunable {
	const char *key;
	enum ulnet_tunable_type type;
	long min, max, def;
	const char *const *names; /* ULNET_TUNABLE_ENUM: names[v] for v in [min, max] */
	const char *desc;         /* one line, for help and error messages */
	size_t store;             /* where the library keeps the value, an int in its own struct
				   * (ULNET_TUNABLE_AT); 0: it reads the value otherwise */
};
/* The @store of a tunable kept in field @field (an int) of struct @type. */
#define ULNET_TUNABLE_AT(type, field) (offsetof(type, field) + 1)

/* The keys of the `lnd tunables` of LND @lnd ("tcp", "lo"). The table is static. 0, or
 * -EPROTONOSUPPORT when that LND is not built into this ulnet. An LND may have no keys (*n = 0). */
ULNET_EXPORT int ulnet_lnd_tunables(const char *lnd, const struct ulnet_tunable **table, size_t *n);
/* The keys of an NI's `tunables` (peer_timeout, peer_credits, peer_buffer_credits, credits,
 * peer_queue_msgs, peer_queue_bytes). */
ULNET_EXPORT void ulnet_ni_tunables(const struct ulnet_tunable **table, size_t *n);
/* The entry of @key in @table, or NULL. */
ULNET_EXPORT const struct ulnet_tunable *ulnet_tunable_find(const struct ulnet_tunable *table, size_t n,
							 const char *key);
/* Parse @text as a value of @t. 0, or -EINVAL with a reason ("not an integer", "out of range 1..16",
 * "expected one of secure, all, none") written to @why. */
ULNET_EXPORT int ulnet_tunable_parse(const struct ulnet_tunable *t, const char *text, long *out, char *why,
				     size_t whylen);
/* Parse a size or count: decimal, or hexadecimal after 0x, optionally followed by k/K, m/M or g/G
 * (binary units: 64k = 65536). 0, or -EINVAL for anything else (a sign, a space, an unknown suffix)
 * or a value over @max; the value never wraps. The one size syntax every ulnet tool accepts. */
ULNET_EXPORT int ulnet_size_parse(const char *text, uint64_t max, uint64_t *out);
/* The keys of @table as "a, b, c" ("none" for an empty table), cut to @len, for error messages. */
ULNET_EXPORT void ulnet_tunable_keys(const struct ulnet_tunable *table, size_t n, char *buf, size_t len);
/* The name of enum value @v, or NULL for other types and values out of range. */
ULNET_EXPORT const char *ulnet_tunable_enum_name(const struct ulnet_tunable *t, long v);

#ifdef __cplusplus
}
#endif
#endif
