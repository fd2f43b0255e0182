/* SPDX-License-Identifier: MIT */
/* Field reader for the daemon's flat result objects (result_json.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "result_json.h"

double json_num(const char *j, const char *key)
{
	char pat[64];
	const char *p;
	double v;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(j, pat);
	if (!p)
		return 0;
	v = strtod(p + strlen(pat), NULL);
	return isnan(v) ? 0 : v;
}

unsigned long long json_count(const char *j, const char *key)
{
	double v = json_num(j, key);

	/* converting a double outside the target's range is undefined: clamp first */
	if (!(v > 0))
		return 0;
	if (v >= 18446744073709551615.0)
		return ULLONG_MAX;
	return (unsigned long long)v;
}

static long long json_signed(const char *j, const char *key)
{
	double v = json_num(j, key);

	if (v <= -9223372036854775808.0)
		return LLONG_MIN;
	if (v >= 9223372036854775807.0)
		return LLONG_MAX;
	return (long long)v;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

void json_str(const char *j, const char *key, char *out, size_t cap)
{
	char pat[64];
	const char *p;
	size_t n = 0;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(j, pat);
	out[0] = '\0';
	if (!p)
		return;
	for (p += strlen(pat); *p && *p != '"' && n + 1 < cap; p++) {
		char c = *p;

		if (c == '\\' && p[1]) { /* the writer's escapes: the bytes come back as they were */
			c = *++p;
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'r')
				c = '\r';
			else if (c == 'u' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0 && hexval(p[3]) >= 0 &&
				 hexval(p[4]) >= 0) {
				int v = hexval(p[1]) << 12 | hexval(p[2]) << 8 | hexval(p[3]) << 4 | hexval(p[4]);
				c = v > 0 && v < 0x80 ? (char)v : '?'; /* the writer escapes only bytes below 0x80 */
				p += 4;
			}
		}
		out[n++] = c;
	}
	out[n] = '\0';
}

bool json_bool(const char *j, const char *key)
{
	char pat[64];

	snprintf(pat, sizeof(pat), "\"%s\":true", key);
	return strstr(j, pat) != NULL;
}

void result_parse(const char *j, struct result *r)
{
	r->seconds = json_num(j, "seconds");
	r->bytes = json_num(j, "bytes");
	r->rpcs = json_num(j, "rpcs_ok");
	r->p50 = json_num(j, "lat_p50_us");
	r->p99 = json_num(j, "lat_p99_us");
	r->max = json_num(j, "lat_max_us");
	r->timeout = json_count(j, "timeout");
	r->mismatch = json_count(j, "mismatch");
	r->refused = json_count(j, "refused");
	r->peer_gone = json_count(j, "peer_gone");
	r->mismatch_offset = json_signed(j, "mismatch_offset");
	r->unclassified = json_count(j, "unclassified");
	r->remote = json_bool(j, "remote");
	r->lat_na = json_bool(j, "latency_na");
	r->bytes_na = json_bool(j, "bytes_na");
	json_str(j, "first_error", r->first_error, sizeof(r->first_error));
	json_str(j, "source", r->source, sizeof(r->source));
}
