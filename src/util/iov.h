/* SPDX-License-Identifier: MIT */
/* Copies between fragment lists (struct iovec arrays) and flat buffers: the one place the library
 * walks two fragment lists in step. */
#ifndef ULNET_IOV_H
#define ULNET_IOV_H

#include <stddef.h>
#include <sys/uio.h>

/* Copy up to @len bytes from @src to @dst, both from their start; stops at the shorter list. Returns
 * the bytes copied. */
size_t ulnet__iov_copy(const struct iovec *dst, unsigned ndst, const struct iovec *src, unsigned nsrc, size_t len);
/* Up to @len bytes between @iov and the flat buffer @flat; returns the bytes copied. */
size_t ulnet__iov_to_flat(void *flat, const struct iovec *iov, unsigned niov, size_t len);
size_t ulnet__iov_from_flat(const struct iovec *iov, unsigned niov, const void *flat, size_t len);

#endif
