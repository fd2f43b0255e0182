/* SPDX-License-Identifier: MIT */
/* Large payloads: the descriptor codec and DONE's header data (large_wire.h, docs/large.md). */
#include <errno.h>
#include <string.h>
#include "large_wire.h"
#include "wire.h"

#define LARGE_MAX_PORTALS 64 /* ULNET_MAX_PORTALS */
#define LARGE_MTU (1u << 20)  /* ULNET_MTU */

int ulnet_large_done_parse(uint64_t hdr_data, uint64_t *cookie, int *status, bool *acked)
{
	uint64_t e = (hdr_data >> 40) & 0xfff;

	if (hdr_data >> 57 || (hdr_data >> 52 & 0xf))
		return -EPROTO;
	*cookie = hdr_data & ULNET_LARGE_ARG_MASK;
	*status = -(int)e;
	*acked = (hdr_data >> 56) & 1;
	return 0;
}

void ulnet_large_desc_pack(const struct ulnet_large_desc *d, uint8_t out[ULNET_LARGE_DESC_SIZE])
{
	memset(out, 0, ULNET_LARGE_DESC_SIZE);
	ulnet_put_le32(out, ULNET_LARGE_DESC_MAGIC);
	ulnet_put_le16(out + 4, ULNET_LARGE_DESC_VERSION);
	ulnet_put_le16(out + 6, d->kind);
	ulnet_put_le32(out + 8, d->portal);
	ulnet_put_le32(out + 12, d->ack ? 1 : 0);
	ulnet_put_le64(out + 16, d->match_bits);
	ulnet_put_le64(out + 24, d->hdr_data);
	ulnet_put_le32(out + 32, d->offset);
	ulnet_put_le32(out + 36, d->length);
	ulnet_put_le64(out + 40, d->cookie);
}

int ulnet_large_desc_unpack(const uint8_t *buf, size_t len, unsigned kind, uint64_t cookie, uint32_t max,
			    struct ulnet_large_desc *out, const char **why)
{
	uint32_t flags;

	memset(out, 0, sizeof(*out));
	*why = NULL;
	if (len != ULNET_LARGE_DESC_SIZE)
		return *why = "length", -EPROTO;
	if (ulnet_get_le32(buf) != ULNET_LARGE_DESC_MAGIC)
		return *why = "magic", -EPROTO;
	if (ulnet_get_le16(buf + 4) != ULNET_LARGE_DESC_VERSION)
		return *why = "version", -EPROTO;
	out->kind = ulnet_get_le16(buf + 6);
	if (out->kind != kind || (kind != ULNET_LARGE_OP_PUT && kind != ULNET_LARGE_OP_GET))
		return *why = "kind", -EPROTO;
	out->portal = ulnet_get_le32(buf + 8);
	if (out->portal >= LARGE_MAX_PORTALS)
		return *why = "portal", -EPROTO;
	flags = ulnet_get_le32(buf + 12);
	if (flags > 1 || (flags && kind != ULNET_LARGE_OP_PUT))
		return *why = "flags", -EPROTO;
	out->ack = flags;
	out->match_bits = ulnet_get_le64(buf + 16);
	out->hdr_data = ulnet_get_le64(buf + 24);
	out->offset = ulnet_get_le32(buf + 32);
	out->length = ulnet_get_le32(buf + 36);
	out->cookie = ulnet_get_le64(buf + 40);
	if (out->cookie != (cookie & ULNET_LARGE_ARG_MASK))
		return *why = "cookie", -EPROTO;
	if (out->length <= LARGE_MTU)
		return *why = "length", -EPROTO;
	if (out->length > max)
		return *why = "length", -EMSGSIZE;
	return 0;
}
