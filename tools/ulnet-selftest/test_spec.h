/* SPDX-License-Identifier: MIT */
/* One ulnet-selftest test as the user writes it: the words of a command line or of a batch file line
 * ("brw write --from NID --to NID --size 64k"). Pure parsing, no I/O. */
#ifndef ULNET_SELFTEST_TEST_SPEC_H
#define ULNET_SELFTEST_TEST_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#define TEST_SPEC_MAX_WORDS 64

struct test {
	bool brw, write;
	const char *from, *to;
	unsigned long long size, offset, count, concurrency, corrupt_at, corrupt_count;
	const char *check;
	double duration, timeout;
	bool json, tty;
};

/* Seconds, > 0 and at most a day. 0 or -EINVAL. */
int parse_secs(const char *s, double *out);
void test_defaults(struct test *t, bool json, bool tty);
/* Parse @argv[0..argc) (argv[0] "brw" or "ping") into @t, which test_defaults filled. The strings
 * stay @argv's. 0, or -EINVAL with one line in @why saying which word is wrong and what it must be. */
int test_spec_parse(int argc, char **argv, struct test *t, char *why, size_t cap);
/* Split a batch file line in place into @words. The word count (0 for a blank line or a '#'
 * comment), or -E2BIG past TEST_SPEC_MAX_WORDS words. */
int test_spec_split(char *line, char *words[TEST_SPEC_MAX_WORDS]);

#endif
