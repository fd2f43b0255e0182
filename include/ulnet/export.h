/* SPDX-License-Identifier: MIT */
/* ULNET_EXPORT marks what libulnet.so exports; everything else in the library is hidden. */
#ifndef ULNET_EXPORT_H
#define ULNET_EXPORT_H

#ifndef ULNET_EXPORT
#define ULNET_EXPORT __attribute__((visibility("default")))
#endif

#endif
