/* SPDX-License-Identifier: MIT */
/* tcp LND wire codecs (lnet-wire.md §2.6): the acceptor request, HELLO V1..V4, the ksock message
 * header and the V2 checksum. Pure: no sockets, no allocation, no logging, no globals (the CRC
 * table is constant data). Sender-order envelopes are read through a cursor whose swab flag comes
 * from the magic; the LNet header itself belongs to hdr_wire.c. */
#include <errno.h>
#include <string.h>
#include "tcp.h"

static const uint32_t crc32_le_table[256] = {
	0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u, 0x706af48fu,
	0xe963a535u, 0x9e6495a3u, 0x0edb8832u, 0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u,
	0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u, 0x1db71064u, 0x6ab020f2u,
	0xf3b97148u, 0x84be41deu, 0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u,
	0x136c9856u, 0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u,
	0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u,
	0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu, 0x35b5a8fau, 0x42b2986cu,
	0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u, 0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u,
	0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u,
	0xcfba9599u, 0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
	0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du, 0x76dc4190u, 0x01db7106u,
	0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u,
	0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du,
	0x91646c97u, 0xe6635c01u, 0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu,
	0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u,
	0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u,
	0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u, 0x4adfa541u, 0x3dd895d7u,
	0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u,
	0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau,
	0xbe0b1010u, 0xc90c2086u, 0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
	0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u, 0x2eb40d81u,
	0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au,
	0xead54739u, 0x9dd277afu, 0x04db2615u, 0x73dc1683u, 0xe3630b12u, 0x94643b84u,
	0x0d6d6a3eu, 0x7a6a5aa8u, 0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u,
	0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu,
	0x196c3671u, 0x6e6b06e7u, 0xfed41b76u, 0x89d32be0u, 0x10da7a5au, 0x67dd4accu,
	0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u, 0xd6d6a3e8u, 0xa1d1937eu,
	0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu,
	0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u, 0x41047a60u, 0xdf60efc3u, 0xa867df55u,
	0x316e8eefu, 0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
	0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu, 0xb2bd0b28u,
	0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u, 0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du,
	0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au, 0x9c0906a9u, 0xeb0e363fu,
	0x72076785u, 0x05005713u, 0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u,
	0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u,
	0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u,
	0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu, 0x8f659effu, 0xf862ae69u,
	0x616bffd3u, 0x166ccf45u, 0xa00ae278u, 0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u,
	0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu,
	0x40df0b66u, 0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
	0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u, 0xbad03605u, 0xcdd70693u,
	0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u,
	0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du,
};

uint32_t tcplnd_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len--)
		crc = crc32_le_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

const char *tcplnd_ctype_name(int ctype)
{
	switch (ctype) {
	case TCPLND_CONN_NONE: return "NONE";
	case TCPLND_CONN_ANY: return "ANY";
	case TCPLND_CONN_CONTROL: return "CONTROL";
	case TCPLND_CONN_BULK_IN: return "BULK_IN";
	case TCPLND_CONN_BULK_OUT: return "BULK_OUT";
	default: return "?";
	}
}

int tcplnd_ctype_invert(int ctype)
{
	switch (ctype) {
	case TCPLND_CONN_ANY:
	case TCPLND_CONN_CONTROL:
		return ctype;
	case TCPLND_CONN_BULK_IN:
		return TCPLND_CONN_BULK_OUT;
	case TCPLND_CONN_BULK_OUT:
		return TCPLND_CONN_BULK_IN;
	default:
		return TCPLND_CONN_NONE;
	}
}

/* ---- acceptor request ---- */

int tcplnd_connreq_pack(const struct ulnet_nid *nid, uint8_t *out, size_t cap)
{
	if (ulnet_nid_is_nid4(nid) && !ulnet_nid_is_any(nid)) {
		if (cap < TCPLND_ACCEPTOR_V1_SIZE)
			return -ENOSPC;
		ulnet_put_ho32(out, TCPLND_ACCEPTOR_MAGIC);     /* acr_magic */
		ulnet_put_ho32(out + 4, TCPLND_ACCEPTOR_V1);    /* acr_version */
		ulnet_put_ho64(out + 8, ulnet_nid_to_nid4(nid)); /* acr_nid */
		return TCPLND_ACCEPTOR_V1_SIZE;
	}
	if (cap < TCPLND_ACCEPTOR_V2_SIZE)
		return -ENOSPC;
	ulnet_put_ho32(out, TCPLND_ACCEPTOR_MAGIC);
	ulnet_put_ho32(out + 4, TCPLND_ACCEPTOR_V2);
	ulnet_nid16_pack(nid, out + 8); /* struct lnet_nid: its own byte order, never swapped */
	return TCPLND_ACCEPTOR_V2_SIZE;
}

void tcplnd_connreq_pack_version(uint8_t out[TCPLND_ACCEPTOR_V1_SIZE])
{
	memset(out, 0, TCPLND_ACCEPTOR_V1_SIZE);
	ulnet_put_ho32(out, TCPLND_ACCEPTOR_MAGIC);
	ulnet_put_ho32(out + 4, TCPLND_ACCEPTOR_V1);
}

static bool magic_is(uint32_t native, uint32_t magic) { return native == magic || native == ulnet_swab32(magic); }

int tcplnd_connreq_peek(const uint8_t *buf, size_t len, size_t *size, bool *swab, struct ulnet_wire_err *err)
{
	struct ulnet_rd rd;
	uint32_t magic, version;

	ulnet_rd_init(&rd, buf, len, false, err);
	if (ulnet_rd_u32(&rd, "acr_magic", &magic)) /* acr_magic */
		return -EPROTO;
	if (!magic_is(magic, TCPLND_ACCEPTOR_MAGIC))
		return ulnet_wire_fail(err, "acr_magic", 0, magic, TCPLND_ACCEPTOR_MAGIC);
	rd.swab = magic != TCPLND_ACCEPTOR_MAGIC;
	if (ulnet_rd_u32(&rd, "acr_version", &version)) /* acr_version */
		return -EPROTO;
	if (version == TCPLND_ACCEPTOR_V1)
		*size = TCPLND_ACCEPTOR_V1_SIZE;
	else if (version == TCPLND_ACCEPTOR_V2)
		*size = TCPLND_ACCEPTOR_V2_SIZE;
	else {
		ulnet_wire_fail(err, "acr_version", 4, version, TCPLND_ACCEPTOR_V2);
		return -EPROTONOSUPPORT;
	}
	*swab = rd.swab;
	return 0;
}

int tcplnd_connreq_unpack(const uint8_t *buf, size_t len, struct tcplnd_connreq *out, struct ulnet_wire_err *err)
{
	size_t size;
	bool swab;
	int rc;

	rc = tcplnd_connreq_peek(buf, len, &size, &swab, err);
	if (rc)
		return rc;
	if (len < size)
		return ulnet_wire_fail(err, "acr_nid", 8, len, size);
	out->swab = swab;
	out->version = size == TCPLND_ACCEPTOR_V1_SIZE ? TCPLND_ACCEPTOR_V1 : TCPLND_ACCEPTOR_V2;
	if (out->version == TCPLND_ACCEPTOR_V1) {
		ulnet_nid_from_nid4(ulnet_get_ho64(buf + 8, swab), &out->nid); /* acr_nid */
		return 0;
	}
	return ulnet_nid16_unpack(buf + 8, &out->nid, err); /* acr_nid (struct lnet_nid) */
}

/* ---- HELLO ---- */

static size_t hello_fixed(uint32_t version)
{
	switch (version) {
	case TCPLND_PROTO_V1: return TCPLND_HELLO_V1_SIZE;
	case TCPLND_PROTO_V2:
	case TCPLND_PROTO_V3: return TCPLND_HELLO_NID4_SIZE;
	case TCPLND_PROTO_V4: return TCPLND_HELLO_NID16_SIZE;
	default: return 0;
	}
}

static int nid4_of(const struct ulnet_nid *nid, uint64_t *out)
{
	if (ulnet_nid_is_any(nid)) {
		*out = ULNET_NID_ANY4;
		return 0;
	}
	if (!ulnet_nid_is_nid4(nid))
		return -EINVAL;
	*out = ulnet_nid_to_nid4(nid);
	return 0;
}

int tcplnd_hello_pack(const struct tcplnd_hello *h, uint8_t *out, size_t cap)
{
	size_t size = hello_fixed(h->version);
	uint64_t src4, dst4;

	if (!size)
		return -EINVAL;
	if (cap < size)
		return -ENOSPC;
	memset(out, 0, size);
	if (h->version == TCPLND_PROTO_V1) {
		/* An LNet nid4 header, all little-endian; dest_nid holds struct lnet_magicversion. */
		if (nid4_of(&h->src_nid, &src4))
			return -EINVAL;
		ulnet_put_le32(out, TCPLND_TCP_MAGIC);              /* magic */
		ulnet_put_le16(out + 4, 1);                         /* version_major */
		ulnet_put_le16(out + 6, 0);                         /* version_minor */
		ulnet_put_le64(out + 8, src4);                      /* src_nid */
		ulnet_put_le32(out + 20, h->src_pid);               /* src_pid */
		ulnet_put_le32(out + 24, ULNET_MSG_HELLO);          /* type */
		ulnet_put_le32(out + 28, 0);                        /* payload_length = 4 * nips */
		ulnet_put_le64(out + 32, h->src_incarnation);       /* msg.hello.incarnation */
		ulnet_put_le32(out + 40, (uint32_t)h->ctype);       /* msg.hello.type */
		return (int)size;
	}
	ulnet_put_ho32(out, TCPLND_PROTO_MAGIC);                    /* kshm_magic */
	ulnet_put_ho32(out + 4, h->version);                        /* kshm_version */
	if (h->version == TCPLND_PROTO_V4) {
		ulnet_nid16_pack(&h->src_nid, out + 8);             /* kshm_src_nid */
		ulnet_nid16_pack(&h->dst_nid, out + 28);            /* kshm_dst_nid */
		out += 24; /* the rest of struct ksock_hello_msg sits 24 bytes later than in the nid4 form */
	} else {
		if (nid4_of(&h->src_nid, &src4) || nid4_of(&h->dst_nid, &dst4))
			return -EINVAL;
		ulnet_put_ho64(out + 8, src4);                      /* kshm_src_nid */
		ulnet_put_ho64(out + 16, dst4);                     /* kshm_dst_nid */
	}
	ulnet_put_ho32(out + 24, h->src_pid);                       /* kshm_src_pid */
	ulnet_put_ho32(out + 28, h->dst_pid);                       /* kshm_dst_pid */
	ulnet_put_ho64(out + 32, h->src_incarnation);               /* kshm_src_incarnation */
	ulnet_put_ho64(out + 40, h->dst_incarnation);               /* kshm_dst_incarnation */
	ulnet_put_ho32(out + 48, (uint32_t)h->ctype);               /* kshm_ctype */
	ulnet_put_ho32(out + 52, 0);                                /* kshm_nips */
	return (int)size;
}

void tcplnd_hello_set_version(uint8_t *buf, size_t len, uint32_t version)
{
	if (len < TCPLND_HELLO_PEEK)
		return;
	if (ulnet_get_le32(buf) == TCPLND_TCP_MAGIC)
		ulnet_put_le16(buf + 4, (uint16_t)version);
	else
		ulnet_put_ho32(buf + 4, version); /* we send in our own order */
}

int tcplnd_hello_peek(const uint8_t *buf, size_t len, uint32_t *version, bool *swab, size_t *fixed,
		      struct ulnet_wire_err *err)
{
	uint32_t magic, v;

	if (len < TCPLND_HELLO_PEEK)
		return ulnet_wire_fail(err, len < 4 ? "kshm_magic" : "kshm_version", len < 4 ? 0 : 4, len,
				       TCPLND_HELLO_PEEK);
	magic = ulnet_get_le32(buf);
	if (magic == TCPLND_TCP_MAGIC) {
		/* V1: struct lnet_magicversion, little-endian whatever the sender's order. */
		uint16_t major = ulnet_get_le16(buf + 4), minor = ulnet_get_le16(buf + 6);

		if (major != 1 || minor != 0) {
			ulnet_wire_fail(err, "version_major", 4, (uint64_t)major << 16 | minor, 1u << 16);
			return -EPROTONOSUPPORT;
		}
		*version = TCPLND_PROTO_V1;
		*swab = false;
		*fixed = TCPLND_HELLO_V1_SIZE;
		return 0;
	}
	magic = ulnet_get_ho32(buf, false);
	if (!magic_is(magic, TCPLND_PROTO_MAGIC))
		return ulnet_wire_fail(err, "kshm_magic", 0, magic, TCPLND_PROTO_MAGIC);
	*swab = magic != TCPLND_PROTO_MAGIC;
	v = ulnet_get_ho32(buf + 4, *swab);
	if (v < TCPLND_PROTO_V2 || v > TCPLND_PROTO_V4) {
		ulnet_wire_fail(err, "kshm_version", 4, v, TCPLND_PROTO_V4);
		return -EPROTONOSUPPORT;
	}
	*version = v;
	*fixed = hello_fixed(v);
	return 0;
}

static int hello_unpack_v1(const uint8_t *buf, struct tcplnd_hello *out, size_t *tail, struct ulnet_wire_err *err)
{
	uint32_t type = ulnet_get_le32(buf + 24), plen = ulnet_get_le32(buf + 28);
	uint64_t src4 = ulnet_get_le64(buf + 8);

	if (type != ULNET_MSG_HELLO) /* type */
		return ulnet_wire_fail(err, "type", 24, type, ULNET_MSG_HELLO);
	if (plen % 4 || plen / 4 > TCPLND_HELLO_MAX_NIPS) /* payload_length = 4 * nips */
		return ulnet_wire_fail(err, "payload_length", 28, plen, 4 * TCPLND_HELLO_MAX_NIPS);
	if (src4 == ULNET_NID_ANY4) /* src_nid */
		return ulnet_wire_fail(err, "src_nid", 8, src4, ULNET_NID_ANY4 - 1);
	ulnet_nid_from_nid4(src4, &out->src_nid);
	out->dst_nid = ulnet_nid_any();
	out->src_pid = ulnet_get_le32(buf + 20);
	out->dst_pid = 0;
	out->src_incarnation = ulnet_get_le64(buf + 32);
	out->dst_incarnation = 0;
	out->ctype = (int32_t)ulnet_get_le32(buf + 40);
	out->nips = plen / 4;
	*tail = plen;
	return 0;
}

int tcplnd_hello_unpack(const uint8_t *buf, size_t len, struct tcplnd_hello *out, size_t *tail,
			struct ulnet_wire_err *err)
{
	struct ulnet_rd rd;
	size_t fixed;
	uint64_t src4 = 0, dst4 = 0;
	uint32_t ctype = 0;
	int rc;

	rc = tcplnd_hello_peek(buf, len, &out->version, &out->swab, &fixed, err);
	if (rc)
		return rc;
	if (len < fixed)
		return ulnet_wire_fail(err, "kshm_nips", fixed - 4, len, fixed);
	if (out->version == TCPLND_PROTO_V1)
		return hello_unpack_v1(buf, out, tail, err);

	ulnet_rd_init(&rd, buf + 8, fixed - 8, out->swab, err);
	if (out->version == TCPLND_PROTO_V4) {
		/* struct lnet_nid is never swapped */
		if (ulnet_nid16_unpack(buf + 8, &out->src_nid, err) ||  /* kshm_src_nid */
		    ulnet_nid16_unpack(buf + 28, &out->dst_nid, err))   /* kshm_dst_nid */
			return -EPROTO;
		rd.p += 40;
	} else {
		ulnet_rd_u64(&rd, "kshm_src_nid", &src4);
		ulnet_rd_u64(&rd, "kshm_dst_nid", &dst4);
		ulnet_nid_from_nid4(src4, &out->src_nid);
		ulnet_nid_from_nid4(dst4, &out->dst_nid);
	}
	/* The lengths were checked above; these reads cannot fail. */
	ulnet_rd_u32(&rd, "kshm_src_pid", &out->src_pid);
	ulnet_rd_u32(&rd, "kshm_dst_pid", &out->dst_pid);
	ulnet_rd_u64(&rd, "kshm_src_incarnation", &out->src_incarnation);
	ulnet_rd_u64(&rd, "kshm_dst_incarnation", &out->dst_incarnation);
	ulnet_rd_u32(&rd, "kshm_ctype", &ctype);
	ulnet_rd_u32(&rd, "kshm_nips", &out->nips);
	out->ctype = (int32_t)ctype;
	if (out->nips > TCPLND_HELLO_MAX_NIPS)
		return ulnet_wire_fail(err, "kshm_nips", fixed - 4, out->nips, TCPLND_HELLO_MAX_NIPS);
	if (ulnet_nid_is_any(&out->src_nid) || (out->version < TCPLND_PROTO_V4 && src4 == ULNET_NID_ANY4))
		return ulnet_wire_fail(err, "kshm_src_nid", 8, src4, ULNET_NID_ANY4 - 1);
	*tail = 4 * (size_t)out->nips;
	return 0;
}

int tcplnd_hello_unpack_ips(const uint8_t *buf, size_t len, struct tcplnd_hello *h, struct ulnet_wire_err *err)
{
	uint32_t i;

	if (len < 4 * (size_t)h->nips)
		return ulnet_wire_fail(err, "kshm_ips", len, len, 4 * (size_t)h->nips);
	for (i = 0; i < h->nips; i++) {
		/* V1 IPs are little-endian; V2+ in sender order */
		h->ips[i] = h->version == TCPLND_PROTO_V1 ? ulnet_get_le32(buf + 4 * i)
							  : ulnet_get_ho32(buf + 4 * i, h->swab);
		if (h->ips[i] == 0)
			return ulnet_wire_fail(err, "kshm_ips", 4 * i, 0, 1);
	}
	return 0;
}

/* ---- ksock_msg_hdr ---- */

void tcplnd_msg_hdr_pack(const struct tcplnd_msg_hdr *h, uint8_t out[TCPLND_MSG_HDR_SIZE])
{
	ulnet_put_ho32(out, h->type);               /* ksh_type */
	ulnet_put_ho32(out + 4, h->csum);           /* ksh_csum */
	ulnet_put_ho64(out + 8, h->zc_cookies[0]);  /* ksh_zc_cookies[0] */
	ulnet_put_ho64(out + 16, h->zc_cookies[1]); /* ksh_zc_cookies[1] */
}

int tcplnd_msg_hdr_unpack(const uint8_t *buf, size_t len, bool swab, struct tcplnd_msg_hdr *out,
			  struct ulnet_wire_err *err)
{
	struct ulnet_rd rd;

	ulnet_rd_init(&rd, buf, len, swab, err);
	if (ulnet_rd_u32(&rd, "ksh_type", &out->type) || ulnet_rd_u32(&rd, "ksh_csum", &out->csum) ||
	    ulnet_rd_u64(&rd, "ksh_zc_cookies[0]", &out->zc_cookies[0]) ||
	    ulnet_rd_u64(&rd, "ksh_zc_cookies[1]", &out->zc_cookies[1]))
		return -EPROTO;
	if (out->type != TCPLND_MSG_NOOP && out->type != TCPLND_MSG_LNET)
		return ulnet_wire_fail(err, "ksh_type", 0, out->type, TCPLND_MSG_LNET);
	return 0;
}

int tcplnd_zcack_check(uint32_t proto, const struct tcplnd_msg_hdr *h, struct ulnet_wire_err *err)
{
	uint64_t c0 = h->type == TCPLND_MSG_NOOP ? h->zc_cookies[0] : 0, c1 = h->zc_cookies[1];

	if (c1 == 0)
		return 0;
	/* A keepalive ping acknowledges exactly one cookie: SOCKNAL_KEEPALIVE_PING. */
	if (proto >= TCPLND_PROTO_V3 && c1 == TCPLND_KEEPALIVE_PING && (c0 == 0 || c0 == c1))
		return 0;
	return ulnet_wire_fail(err, "ksh_zc_cookies", c0 ? 8 : 16, c0 ? c0 : c1, 0);
}
