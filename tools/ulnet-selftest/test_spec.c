/* SPDX-License-Identifier: MIT */
/* Test words -> struct test (test_spec.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ulnet/ulnet.h>
#include "test_spec.h"

/* ulnet_size_parse into the console's unsigned long long fields. */
static int parse_size(const char *s, unsigned long long max, unsigned long long *out)
{
	uint64_t v;
	int rc = ulnet_size_parse(s, max, &v);

	if (!rc)
		*out = v;
	return rc;
}

int parse_secs(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	v = strtod(s, &end);
	if (*end || !(v > 0) || v > 86400)
		return -EINVAL;
	*out = v;
	return 0;
}

void test_defaults(struct test *t, bool json, bool tty)
{
	memset(t, 0, sizeof(*t));
	t->size = 1 << 20;
	t->check = "full";
	t->concurrency = 1;
	t->timeout = 10;
	t->json = json;
	t->tty = tty;
}

static int refuse(char *why, size_t cap, const char *fmt, const char *arg)
{
	snprintf(why, cap, fmt, arg ? arg : "");
	return -EINVAL;
}

int test_spec_parse(int argc, char **argv, struct test *t, char *why, size_t cap)
{
	int i = 1;

	if (argc < 1)
		return refuse(why, cap, "no test%s", NULL);
	if (!strcmp(argv[0], "brw")) {
		t->brw = true;
		if (argc < 2 || (strcmp(argv[1], "read") && strcmp(argv[1], "write")))
			return refuse(why, cap, "brw needs read or write%s", NULL);
		t->write = !strcmp(argv[1], "write");
		i = 2;
	} else if (strcmp(argv[0], "ping")) {
		return refuse(why, cap, "unknown command '%s'", argv[0]);
	}
	for (; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--json")) {
			t->json = true;
			continue;
		}
		if (!strcmp(o, "--from")) {
			t->from = v;
		} else if (!strcmp(o, "--to")) {
			t->to = v;
		} else if (!strcmp(o, "--size") && t->brw) {
			/* above 1M: only between ulnet nodes, up to their large_max (the console checks) */
			if (parse_size(v, ULNET_LARGE_MAX_MAX, &t->size) || !t->size)
				return refuse(why, cap, "--size must be 1..1G bytes, not '%s'", v);
		} else if (!strcmp(o, "--offset") && t->brw) {
			if (parse_size(v, ULNET_MTU - 1, &t->offset))
				return refuse(why, cap, "--offset must be 0..1048575, not '%s'", v);
		} else if (!strcmp(o, "--check") && t->brw) {
			if (!v || (strcmp(v, "none") && strcmp(v, "simple") && strcmp(v, "full") && strcmp(v, "discard")))
				return refuse(why, cap, "--check must be none, simple, full or discard, not '%s'", v);
			t->check = v;
		} else if (!strcmp(o, "--concurrency")) {
			if (parse_size(v, 1024, &t->concurrency) || !t->concurrency)
				return refuse(why, cap, "--concurrency must be 1..1024, not '%s'", v);
		} else if (!strcmp(o, "--duration")) {
			if (parse_secs(v, &t->duration))
				return refuse(why, cap, "--duration must be seconds > 0, not '%s'", v);
		} else if (!strcmp(o, "--timeout")) {
			if (parse_secs(v, &t->timeout))
				return refuse(why, cap, "--timeout must be seconds > 0, not '%s'", v);
		} else if (!strcmp(o, "--count")) {
			if (parse_size(v, UINT32_MAX, &t->count) || !t->count)
				return refuse(why, cap, "--count must be a positive number, not '%s'", v);
		} else if (!strcmp(o, "--corrupt-at") && t->brw) {
			if (parse_size(v, ULNET_LARGE_MAX_MAX - 1, &t->corrupt_at))
				return refuse(why, cap, "--corrupt-at must be a byte of the transfer (below 1G), "
					      "not '%s'", v);
		} else if (!strcmp(o, "--corrupt-count") && t->brw) {
			if (parse_size(v, UINT32_MAX, &t->corrupt_count))
				return refuse(why, cap, "bad --corrupt-count '%s'", v);
		} else {
			return refuse(why, cap, "unknown option '%s'", o);
		}
		if (!v)
			return refuse(why, cap, "%s needs a value", o);
		i++;
	}
	if (!t->from || !t->to)
		return refuse(why, cap, "--from and --to are required%s", NULL);
	if (t->count && !t->duration)
		t->duration = 0;
	else if (!t->duration)
		t->duration = 10;
	return 0;
}

int test_spec_split(char *line, char *words[TEST_SPEC_MAX_WORDS])
{
	char *save = NULL, *w;
	int n = 0;

	for (w = strtok_r(line, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == 0 && w[0] == '#')
			return 0;
		if (n == TEST_SPEC_MAX_WORDS)
			return -E2BIG;
		words[n++] = w;
	}
	return n;
}
