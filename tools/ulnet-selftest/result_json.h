/* SPDX-License-Identifier: MIT */
/* The daemon's flat JSON result objects, read field by field. The text comes from the control socket
 * (a daemon that may be broken or not ours): every read is bounded and every number clamped. */
#ifndef ULNET_SELFTEST_RESULT_JSON_H
#define ULNET_SELFTEST_RESULT_JSON_H

#include <stdbool.h>
#include <stddef.h>

struct result {
	double seconds, bytes, rpcs, p50, p99, max;
	unsigned long long timeout, mismatch, refused, peer_gone, unclassified;
	long long mismatch_offset;
	bool remote, lat_na, bytes_na;
	char first_error[200], source[96];
};

/* "key":<number> anywhere in @j; 0 when absent, NaN mapped to 0. */
double json_num(const char *j, const char *key);
/* As json_num, clamped to 0..ULLONG_MAX (a count or a size). */
unsigned long long json_count(const char *j, const char *key);
/* "key":"text" into @out (cut to @cap - 1 bytes), escapes decoded (\n \t \r \uXXXX \" \\); "" when absent. */
void json_str(const char *j, const char *key, char *out, size_t cap);
/* "key":true present. */
bool json_bool(const char *j, const char *key);
void result_parse(const char *j, struct result *r);

#endif
