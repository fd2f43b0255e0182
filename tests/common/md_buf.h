/* SPDX-License-Identifier: MIT */
/* Test helper shared by the data-path tests (lo, tcp): an aligned buffer described as a contiguous,
 * iovec or kiov MD, and a position-dependent byte pattern. Header-only; include after cmocka.h. */
#ifndef ULNET_TEST_MD_BUF_H
#define ULNET_TEST_MD_BUF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ulnet/ulnet.h"

enum md_form { FORM_CONTIG, FORM_IOVEC, FORM_KIOV };

struct md_buf {
	uint8_t *mem; /* page-aligned backing store */
	size_t memlen;
	struct iovec iov[ULNET_MD_MAX_FRAGS];
	struct ulnet_kiov kiov[ULNET_MD_MAX_FRAGS];
	struct ulnet_md md;
};

/* Describe @len bytes starting @off bytes into an aligned buffer filled with @fill. kiov entries never
 * cross a node page; iovec entries are cut at odd sizes on purpose. */
static inline void md_buf_init(struct md_buf *b, enum md_form form, uint32_t page, size_t off, size_t len,
			       uint8_t fill)
{
	size_t n = 0, pos = off, end = off + len;

	b->memlen = ((off + len) / page + 2) * page;
	b->mem = aligned_alloc(page, b->memlen);
	assert_non_null(b->mem);
	memset(b->mem, fill, b->memlen);
	memset(&b->md, 0, sizeof(b->md));
	b->md.threshold = ULNET_MD_THRESH_INF;
	switch (form) {
	case FORM_CONTIG:
		b->md.start = b->mem + off;
		b->md.length = (uint32_t)len;
		break;
	case FORM_IOVEC:
		while (pos < end) {
			size_t take = 3001 + (n % 7) * 10007;

			if (take > end - pos)
				take = end - pos;
			b->iov[n].iov_base = b->mem + pos;
			b->iov[n].iov_len = take;
			pos += take;
			n++;
		}
		b->md.start = b->iov;
		b->md.length = (uint32_t)n;
		b->md.options = ULNET_MD_IOVEC;
		break;
	case FORM_KIOV:
		while (pos < end) {
			size_t room = page - pos % page, take = end - pos < room ? end - pos : room;

			b->kiov[n].kiov_base = b->mem + pos;
			b->kiov[n].kiov_len = (uint32_t)take;
			pos += take;
			n++;
		}
		b->md.start = b->kiov;
		b->md.length = (uint32_t)n;
		b->md.options = ULNET_MD_KIOV;
		break;
	}
}

static inline void pattern(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 131 + seed) ^ (i >> 8));
}

#endif
