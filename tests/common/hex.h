/* SPDX-License-Identifier: MIT */
/* Test helper: hand-written hex wire vectors to bytes. Header-only; include after cmocka.h. */
#ifndef ULNET_TEST_HEX_H
#define ULNET_TEST_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Hex digits to bytes; spaces are ignored. A malformed vector is a bug in the table: fail loudly. */
static inline size_t hex_decode(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;

	for (const char *c = hex; *c; c++) {
		int v = 0;

		if (*c == ' ')
			continue;
		if (*c >= '0' && *c <= '9')
			v = *c - '0';
		else if (*c >= 'a' && *c <= 'f')
			v = *c - 'a' + 10;
		else if (*c >= 'A' && *c <= 'F')
			v = *c - 'A' + 10;
		else
			fail_msg("bad hex digit '%c' in vector", *c);
		if (hi < 0) {
			hi = v;
			continue;
		}
		assert_true(n < cap);
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	assert_int_equal(hi, -1); /* odd number of digits */
	return n;
}

#endif
