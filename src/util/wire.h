/* SPDX-License-Identifier: MIT */
/* Byte-order primitives and a bounds-checked read cursor for every wire codec. Pure: no allocation,
 * no logging. Every accessor names its byte order; no struct is ever cast over a buffer. */
#ifndef ULNET_WIRE_H
#define ULNET_WIRE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t ulnet_get_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t ulnet_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t ulnet_get_le64(const uint8_t *p)
{
	return (uint64_t)ulnet_get_le32(p) | (uint64_t)ulnet_get_le32(p + 4) << 32;
}
static inline uint16_t ulnet_get_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t ulnet_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static inline uint64_t ulnet_get_be64(const uint8_t *p)
{
	return (uint64_t)ulnet_get_be32(p) << 32 | ulnet_get_be32(p + 4);
}
static inline void ulnet_put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void ulnet_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void ulnet_put_le64(uint8_t *p, uint64_t v)
{
	ulnet_put_le32(p, (uint32_t)v);
	ulnet_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline void ulnet_put_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void ulnet_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void ulnet_put_be64(uint8_t *p, uint64_t v)
{
	ulnet_put_be32(p, (uint32_t)(v >> 32));
	ulnet_put_be32(p + 4, (uint32_t)v);
}
/* Opaque 64-bit values (cookies, wire MD handles, hdr_data) travel as raw bytes: the receiver
 * echoes them unchanged, so they are copied in host order and never swapped. */
static inline uint64_t ulnet_get_raw64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}
static inline void ulnet_put_raw64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static inline bool ulnet_host_is_le(void)
{
	const uint16_t one = 1;
	uint8_t b;
	memcpy(&b, &one, 1);
	return b == 1;
}
/* Sender-order envelopes: native order, or the opposite when the magic read swapped. */
static inline uint16_t ulnet_get_ho16(const uint8_t *p, bool swab)
{
	return (ulnet_host_is_le() != swab) ? ulnet_get_le16(p) : ulnet_get_be16(p);
}
static inline uint32_t ulnet_get_ho32(const uint8_t *p, bool swab)
{
	return (ulnet_host_is_le() != swab) ? ulnet_get_le32(p) : ulnet_get_be32(p);
}
static inline uint64_t ulnet_get_ho64(const uint8_t *p, bool swab)
{
	return (ulnet_host_is_le() != swab) ? ulnet_get_le64(p) : ulnet_get_be64(p);
}
/* Writers always emit native order (swab = false), as every LNet sender does. */
static inline void ulnet_put_ho16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void ulnet_put_ho32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void ulnet_put_ho64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Why a decode failed: the spec field's name, its offset, the value seen and the limit broken. */
struct ulnet_wire_err {
	const char *field;
	size_t offset;
	uint64_t got, limit;
};

static inline int ulnet_wire_fail(struct ulnet_wire_err *err, const char *field, size_t offset, uint64_t got,
				  uint64_t limit)
{
	if (err) {
		err->field = field;
		err->offset = offset;
		err->got = got;
		err->limit = limit;
	}
	return -EPROTO;
}

/* Bounds-checked reader over sender-order bytes. */
struct ulnet_rd {
	const uint8_t *base, *p, *end;
	bool swab;
	struct ulnet_wire_err *err;
};

static inline void ulnet_rd_init(struct ulnet_rd *rd, const uint8_t *buf, size_t len, bool swab,
				 struct ulnet_wire_err *err)
{
	rd->base = rd->p = buf;
	rd->end = buf + len;
	rd->swab = swab;
	rd->err = err;
}
static inline size_t ulnet_rd_off(const struct ulnet_rd *rd) { return (size_t)(rd->p - rd->base); }
static inline size_t ulnet_rd_left(const struct ulnet_rd *rd) { return (size_t)(rd->end - rd->p); }
static inline int ulnet_rd_need(struct ulnet_rd *rd, const char *field, size_t n)
{
	if (ulnet_rd_left(rd) < n)
		return ulnet_wire_fail(rd->err, field, ulnet_rd_off(rd), ulnet_rd_left(rd), n);
	return 0;
}
static inline int ulnet_rd_u8(struct ulnet_rd *rd, const char *field, uint8_t *out)
{
	if (ulnet_rd_need(rd, field, 1))
		return -EPROTO;
	*out = *rd->p++;
	return 0;
}
static inline int ulnet_rd_u16(struct ulnet_rd *rd, const char *field, uint16_t *out)
{
	if (ulnet_rd_need(rd, field, 2))
		return -EPROTO;
	*out = ulnet_get_ho16(rd->p, rd->swab);
	rd->p += 2;
	return 0;
}
static inline int ulnet_rd_u32(struct ulnet_rd *rd, const char *field, uint32_t *out)
{
	if (ulnet_rd_need(rd, field, 4))
		return -EPROTO;
	*out = ulnet_get_ho32(rd->p, rd->swab);
	rd->p += 4;
	return 0;
}
static inline int ulnet_rd_u64(struct ulnet_rd *rd, const char *field, uint64_t *out)
{
	if (ulnet_rd_need(rd, field, 8))
		return -EPROTO;
	*out = ulnet_get_ho64(rd->p, rd->swab);
	rd->p += 8;
	return 0;
}
static inline int ulnet_rd_raw64(struct ulnet_rd *rd, const char *field, uint64_t *out)
{
	if (ulnet_rd_need(rd, field, 8))
		return -EPROTO;
	*out = ulnet_get_raw64(rd->p);
	rd->p += 8;
	return 0;
}
/* Fails (err filled) when @got > @limit. */
static inline int ulnet_rd_max(struct ulnet_rd *rd, const char *field, uint64_t got, uint64_t limit)
{
	if (got > limit)
		return ulnet_wire_fail(rd->err, field, ulnet_rd_off(rd), got, limit);
	return 0;
}

static inline uint32_t ulnet_swab32(uint32_t v) { return __builtin_bswap32(v); }

#endif
