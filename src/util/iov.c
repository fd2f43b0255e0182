/* SPDX-License-Identifier: MIT */
/* Fragment-list copies (iov.h). */
#include <string.h>
#include "iov.h"

size_t ulnet__iov_copy(const struct iovec *dst, unsigned ndst, const struct iovec *src, unsigned nsrc, size_t len)
{
	unsigned di = 0, si = 0;
	size_t doff = 0, soff = 0, done = 0;

	while (done < len && di < ndst && si < nsrc) {
		size_t n = dst[di].iov_len - doff;

		if (n > src[si].iov_len - soff)
			n = src[si].iov_len - soff;
		if (n > len - done)
			n = len - done;
		memcpy((char *)dst[di].iov_base + doff, (const char *)src[si].iov_base + soff, n);
		doff += n;
		soff += n;
		done += n;
		if (doff == dst[di].iov_len)
			di++, doff = 0;
		if (soff == src[si].iov_len)
			si++, soff = 0;
	}
	return done;
}

/* One list against a flat buffer: a plain walk (the small inline messages of every RPC take it). */
size_t ulnet__iov_to_flat(void *flat, const struct iovec *iov, unsigned niov, size_t len)
{
	size_t done = 0;

	for (unsigned i = 0; i < niov && done < len; i++) {
		size_t n = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;

		memcpy((char *)flat + done, iov[i].iov_base, n);
		done += n;
	}
	return done;
}

size_t ulnet__iov_from_flat(const struct iovec *iov, unsigned niov, const void *flat, size_t len)
{
	size_t done = 0;

	for (unsigned i = 0; i < niov && done < len; i++) {
		size_t n = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;

		memcpy(iov[i].iov_base, (const char *)flat + done, n);
		done += n;
	}
	return done;
}
