/* SPDX-License-Identifier: MIT */
/* libFuzzer target: what ulnet-selftest reads that someone else wrote (tools/ulnet-selftest): batch
 * file lines (test_spec.c) and the daemon's JSON result objects (result_json.c). Byte 0 even = a
 * batch file line, odd = a result line. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "result_json.h"
#include "test_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void batch_line(char *line)
{
	char *words[TEST_SPEC_MAX_WORDS], why[160];
	struct test t;
	int n = test_spec_split(line, words);

	if (n <= 0)
		return;
	test_defaults(&t, false, false);
	memset(why, 'x', sizeof(why));
	if (test_spec_parse(n, words, &t, why, sizeof(why)) != 0) {
		if (!memchr(why, '\0', sizeof(why)) || !why[0])
			abort(); /* every refusal says why */
		return;
	}
	/* brw sizes above 1 MiB are the console's to check against the nodes' large_max (up to 1 GiB) */
	if (!t.from || !t.to || !t.concurrency || t.concurrency > 1024 || (t.brw && (!t.size || t.size > (1u << 30))) ||
	    t.offset >= (1u << 20) || !(t.timeout > 0) || t.duration < 0)
		abort(); /* accepted but out of range */
}

static void result_line(const char *line)
{
	struct result r;
	char s[8];

	memset(&r, 0, sizeof(r));
	result_parse(line, &r);
	if (strlen(r.first_error) >= sizeof(r.first_error) || strlen(r.source) >= sizeof(r.source))
		abort();
	if (isnan(r.seconds) || isnan(r.bytes))
		abort();
	json_str(line, "test", s, sizeof(s));
	(void)json_count(line, "size");
	(void)json_bool(line, "write");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char *s;

	if (len < 1)
		return 0;
	if (!(s = malloc(len)))
		return 0;
	memcpy(s, data + 1, len - 1);
	s[len - 1] = '\0';
	if (data[0] & 1)
		result_line(s);
	else
		batch_line(s);
	free(s);
	return 0;
}
