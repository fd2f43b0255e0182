/* SPDX-License-Identifier: MIT */
/* A ulnet_writer sink into a fixed buffer, for tests that compare what was written. */
#ifndef ULNET_TEST_TEXT_SINK_H
#define ULNET_TEST_TEXT_SINK_H

#include <string.h>

struct text_sink {
	char s[8192];
	size_t len;
};

/* ulnet_write_fn: @arg is a struct text_sink; fails the test when it overflows. */
static inline void text_sink_write(void *arg, const char *s, size_t len)
{
	struct text_sink *t = arg;

	assert_true(t->len + len < sizeof(t->s));
	memcpy(t->s + t->len, s, len);
	t->len += len;
	t->s[t->len] = '\0';
}

#endif
