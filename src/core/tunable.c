/* SPDX-License-Identifier: MIT */
/* Typed tunables: parsing a configured value against its table entry, the NI-level table, and the
 * lookup of an LND's table. Pure logic apart from the registry lookup. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "internal.h"

const struct ulnet_tunable ulnet__ni_tunable_table[ULNET__NI_TUN_COUNT] = {
	[ULNET__NI_TUN_PEER_TIMEOUT] = { "peer_timeout", ULNET_TUNABLE_INT, 0, 3600, 180, NULL,
		"seconds without news before a peer is considered down (0: never)", 0 },
	[ULNET__NI_TUN_PEER_CREDITS] = { "peer_credits", ULNET_TUNABLE_INT, 1, 255, 8, NULL,
		"messages in flight to one peer", 0 },
	[ULNET__NI_TUN_PEER_BUFFER_CREDITS] = { "peer_buffer_credits", ULNET_TUNABLE_INT, 0, 65535, 0, NULL,
		"router buffers one peer may hold (0: peer_credits)", 0 },
	[ULNET__NI_TUN_CREDITS] = { "credits", ULNET_TUNABLE_INT, 1, 65535, 256, NULL,
		"messages in flight on the NI", 0 },
	[ULNET__NI_TUN_PEER_QUEUE_MSGS] = { "peer_queue_msgs", ULNET_TUNABLE_INT, 1, 1L << 24,
		ULNET_PEER_QUEUE_MSGS_DEFAULT, NULL, "messages one peer may have waiting for credits", 0 },
	[ULNET__NI_TUN_PEER_QUEUE_BYTES] = { "peer_queue_bytes", ULNET_TUNABLE_INT, 1L << 20, 1L << 40,
		(long)ULNET_PEER_QUEUE_BYTES_DEFAULT, NULL, "payload bytes one peer may have waiting for credits", 0 },
};

void ulnet_ni_tunables(const struct ulnet_tunable **table, size_t *n)
{
	*table = ulnet__ni_tunable_table;
	*n = ULNET__NI_TUN_COUNT;
}

int ulnet_lnd_tunables(const char *lnd, const struct ulnet_tunable **table, size_t *n)
{
	const struct ulnet_lnd_ops *ops = ulnet__lnd_find(lnd);

	if (!ops)
		return -EPROTONOSUPPORT;
	*table = ops->lnd_tunables;
	*n = ops->lnd_n_tunables;
	return 0;
}

const struct ulnet_tunable *ulnet_tunable_find(const struct ulnet_tunable *table, size_t n, const char *key)
{
	for (size_t i = 0; key && i < n; i++)
		if (!strcmp(table[i].key, key))
			return &table[i];
	return NULL;
}

const char *ulnet_tunable_enum_name(const struct ulnet_tunable *t, long v)
{
	if (t->type != ULNET_TUNABLE_ENUM || v < t->min || v > t->max)
		return NULL;
	return t->names[v];
}

void ulnet_tunable_keys(const struct ulnet_tunable *table, size_t n, char *buf, size_t len)
{
	size_t off = 0;

	if (!len)
		return;
	snprintf(buf, len, "%s", n ? "" : "none");
	for (size_t k = 0; k < n && off < len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", k ? ", " : "", table[k].key);
}

int ulnet__bool_parse(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" }, *const no[] = { "0", "false", "no", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

int ulnet_size_parse(const char *text, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;
	int base = 10;

	if (!text || !(text[0] >= '0' && text[0] <= '9'))
		return -EINVAL; /* no sign, no space: strtoull would take both */
	if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
		base = 16;
		if (!((text[2] >= '0' && text[2] <= '9') || (text[2] >= 'a' && text[2] <= 'f') ||
		      (text[2] >= 'A' && text[2] <= 'F')))
			return -EINVAL;
	}
	errno = 0;
	v = strtoull(text, &end, base);
	if (errno || end == text)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mult = UINT64_C(1) << 10, end++; break;
	case 'm': case 'M': mult = UINT64_C(1) << 20, end++; break;
	case 'g': case 'G': mult = UINT64_C(1) << 30, end++; break;
	default: break;
	}
	if (*end || v > max / mult) /* v * mult must neither wrap nor pass @max */
		return -EINVAL;
	*out = (uint64_t)v * mult;
	return 0;
}

int ulnet_tunable_parse(const struct ulnet_tunable *t, const char *text, long *out, char *why, size_t whylen)
{
	char *end;
	long v;

	if (!text)
		text = "";
	switch (t->type) {
	case ULNET_TUNABLE_BOOL: {
		bool b;

		if (ulnet__bool_parse(text, &b)) {
			snprintf(why, whylen, "expected 0 or 1 (true/false, yes/no, on/off)");
			return -EINVAL;
		}
		*out = b;
		return 0;
	}
	case ULNET_TUNABLE_ENUM: {
		size_t off = 0;

		for (long i = t->min; i <= t->max; i++)
			if (!strcmp(text, t->names[i])) {
				*out = i;
				return 0;
			}
		off = (size_t)snprintf(why, whylen, "expected one of");
		for (long i = t->min; i <= t->max && off < whylen; i++)
			off += (size_t)snprintf(why + off, whylen - off, "%s %s", i > t->min ? "," : "", t->names[i]);
		return -EINVAL;
	}
	case ULNET_TUNABLE_INT:
		errno = 0;
		v = strtol(text, &end, 0);
		if (end == text || *end || errno) {
			snprintf(why, whylen, "not an integer (allowed %ld..%ld)", t->min, t->max);
			return -EINVAL;
		}
		if (v < t->min || v > t->max) {
			snprintf(why, whylen, "out of range (allowed %ld..%ld)", t->min, t->max);
			return -EINVAL;
		}
		*out = v;
		return 0;
	}
	snprintf(why, whylen, "tunable of unknown type %d", (int)t->type);
	return -EINVAL;
}

int ulnet__tunables_apply(const char *subsys, const struct ulnet_tunable *table, size_t n,
			  const struct ulnet_kv *kvs, size_t nkv, long *values)
{
	for (size_t k = 0; k < n; k++)
		values[k] = table[k].def;
	for (size_t i = 0; i < nkv; i++) {
		const struct ulnet_tunable *t = ulnet_tunable_find(table, n, kvs[i].key);
		char why[256];

		if (!t) {
			char known[512];

			ulnet_tunable_keys(table, n, known, sizeof(known));
			ULNET_LOG(CORE, ERR, "%s: unknown key '%s' (known: %s)", subsys, kvs[i].key ? kvs[i].key : "",
				  known);
			return -EINVAL;
		}
		if (ulnet_tunable_parse(t, kvs[i].value, &values[t - table], why, sizeof(why))) {
			ULNET_LOG(CORE, ERR, "%s: %s '%s': %s", subsys, t->key, kvs[i].value ? kvs[i].value : "", why);
			return -EINVAL;
		}
	}
	return 0;
}
