/* SPDX-License-Identifier: MIT */
/* The LNet message header codec (lnet-wire.md §2.3): the 72-byte nid4 form, the 96-byte large-NID form
 * and the 20-byte struct lnet_nid. Pure: no allocation, no logging, no globals.
 *
 * Every numeric field is little-endian whatever the sender's byte order; wire MD handles and hdr_data
 * are opaque bytes copied in host order so that echoing them back reproduces the sender's bytes. The
 * semantic checks (dest is mine, src is not ANY, routing) belong to the core, not here. */
#include "hdr.h"

#include "ulnet/event.h"
#include "ulnet/md.h"

_Static_assert(ULNET_HDR_NID4_SIZE == 72, "lnet_hdr_nid4 is 72 bytes");
_Static_assert(ULNET_HDR_NID16_SIZE == 96, "lnet_hdr is 96 bytes");
_Static_assert(ULNET_NID16_WIRE_SIZE == 20, "struct lnet_nid is 20 bytes");

/* Offsets of the fixed fields. The large-NID form puts two 20-byte NIDs where the nid4 form has two
 * 8-byte ones, so everything after them moves by 24. */
#define HDR4_DEST_NID 0
#define HDR4_SRC_NID 8
#define HDR4_DEST_PID 16
#define HDR16_DEST_PID 40
#define HDR_PIDS_TO_TYPE 8    /* dest_pid, src_pid */
#define HDR_PIDS_TO_PAYLOAD 12
#define HDR_PIDS_TO_MSG 16
#define HDR_MSG_SIZE 40

/* NID address words that a given nid_size covers (1 for IPv4/numeric, 4 for IPv6). */
static unsigned nid16_words(uint8_t size)
{
	unsigned words = ((unsigned)size + 4 + 3) / 4;

	return words > 4 ? 4 : words;
}

void ulnet_nid16_pack(const struct ulnet_nid *nid, uint8_t out[ULNET_NID16_WIRE_SIZE])
{
	struct ulnet_nid any;
	unsigned words;

	/* A wildcard always goes out in its one canonical image, all ones. */
	if (ulnet_nid_is_any(nid)) {
		any = ulnet_nid_any();
		nid = &any;
	}
	words = nid16_words(nid->size);
	out[0] = nid->size;                         /* nid_size */
	out[1] = nid->type;                         /* nid_type */
	ulnet_put_be16(out + 2, nid->num);          /* nid_num */
	for (unsigned i = 0; i < 4; i++)            /* nid_addr[], words past the size zeroed */
		ulnet_put_be32(out + 4 + 4 * i, i < words ? nid->addr[i] : 0);
}

/* Decode the 20 bytes at @buf, which sit at @off in the caller's message; errors name @size_field for a
 * bad nid_size and @addr_field for non-zero unused address words. */
static int nid16_decode(const uint8_t *buf, size_t off, const char *size_field, const char *addr_field,
			struct ulnet_nid *out, struct ulnet_wire_err *err)
{
	struct ulnet_nid nid = { 0 };
	unsigned words;

	/* nid_type 0xff is the wildcard, whatever the other fields say (same rule as ulnet_nid_is_any). */
	if (buf[1] == ULNET_LND_ANY) {
		*out = ulnet_nid_any();
		return 0;
	}
	/* nid_size: only 4-byte (IPv4, numeric) and 16-byte (IPv6) addresses exist */
	if (buf[0] != 0 && buf[0] != 12)
		return ulnet_wire_fail(err, size_field, off, buf[0], 12);
	nid.size = buf[0];
	nid.type = buf[1];                       /* nid_type */
	nid.num = ulnet_get_be16(buf + 2);       /* nid_num */
	words = nid16_words(nid.size);
	for (unsigned i = 0; i < 4; i++) {       /* nid_addr[] */
		uint32_t w = ulnet_get_be32(buf + 4 + 4 * i);

		if (i >= words && w != 0)
			return ulnet_wire_fail(err, addr_field, off + 4 + 4 * i, w, 0);
		nid.addr[i] = w;
	}
	*out = nid;
	return 0;
}

int ulnet_nid16_unpack(const uint8_t *buf, struct ulnet_nid *out, struct ulnet_wire_err *err)
{
	return nid16_decode(buf, 0, "nid_size", "nid_addr", out, err);
}

/* A nid4 carries a 16-bit LND type but struct ulnet_nid only 8 bits. No LND type above 0xff exists, so
 * such a value is a corrupt header; refusing it beats answering a truncated NID. */
static int nid4_decode(uint64_t nid4, const char *field, size_t off, struct ulnet_nid *out,
		       struct ulnet_wire_err *err)
{
	if (nid4 != ULNET_NID_ANY4 && (nid4 >> 56) != 0)
		return ulnet_wire_fail(err, field, off, nid4, UINT64_C(0x00ffffffffffffff));
	ulnet_nid_from_nid4(nid4, out);
	return 0;
}

/* The msg union, 40 bytes at @p. Fields the type does not use are written as zero. */
static void msg_pack(const struct ulnet_hdr *h, uint8_t *p)
{
	memset(p, 0, HDR_MSG_SIZE);
	switch (h->type) {
	case ULNET_MSG_PUT:
		ulnet_put_raw64(p + 0, h->msg.put.ack_wmd.wh_interface_cookie);
		ulnet_put_raw64(p + 8, h->msg.put.ack_wmd.wh_object_cookie);
		ulnet_put_le64(p + 16, h->msg.put.match_bits);
		ulnet_put_raw64(p + 24, h->msg.put.hdr_data);
		ulnet_put_le32(p + 32, h->msg.put.ptl_index);
		ulnet_put_le32(p + 36, h->msg.put.offset);
		break;
	case ULNET_MSG_GET:
		ulnet_put_raw64(p + 0, h->msg.get.return_wmd.wh_interface_cookie);
		ulnet_put_raw64(p + 8, h->msg.get.return_wmd.wh_object_cookie);
		ulnet_put_le64(p + 16, h->msg.get.match_bits);
		ulnet_put_le32(p + 24, h->msg.get.ptl_index);
		ulnet_put_le32(p + 28, h->msg.get.src_offset);
		ulnet_put_le32(p + 32, h->msg.get.sink_length);
		break;
	case ULNET_MSG_ACK:
		ulnet_put_raw64(p + 0, h->msg.ack.dst_wmd.wh_interface_cookie);
		ulnet_put_raw64(p + 8, h->msg.ack.dst_wmd.wh_object_cookie);
		/* Lustre may emit this one in host order (lnet-wire.md §2.1 quirk); every target is LE. */
		ulnet_put_le64(p + 16, h->msg.ack.match_bits);
		ulnet_put_le32(p + 24, h->msg.ack.mlength);
		break;
	case ULNET_MSG_REPLY:
		ulnet_put_raw64(p + 0, h->msg.reply.dst_wmd.wh_interface_cookie);
		ulnet_put_raw64(p + 8, h->msg.reply.dst_wmd.wh_object_cookie);
		break;
	case ULNET_MSG_HELLO:
		ulnet_put_le64(p + 0, h->msg.hello.incarnation);
		ulnet_put_le32(p + 8, h->msg.hello.type);
		break;
	default:
		break; /* unknown type: the union stays zero */
	}
}

/* Decode the msg union of an already validated @type; bytes the type does not use are ignored. */
static void msg_unpack(uint32_t type, const uint8_t *p, struct ulnet_hdr *h)
{
	switch (type) {
	case ULNET_MSG_PUT:
		h->msg.put.ack_wmd.wh_interface_cookie = ulnet_get_raw64(p + 0); /* ack_wmd */
		h->msg.put.ack_wmd.wh_object_cookie = ulnet_get_raw64(p + 8);
		h->msg.put.match_bits = ulnet_get_le64(p + 16);                  /* match_bits */
		h->msg.put.hdr_data = ulnet_get_raw64(p + 24);                   /* hdr_data, opaque */
		h->msg.put.ptl_index = ulnet_get_le32(p + 32);                   /* ptl_index */
		h->msg.put.offset = ulnet_get_le32(p + 36);                      /* offset */
		break;
	case ULNET_MSG_GET:
		h->msg.get.return_wmd.wh_interface_cookie = ulnet_get_raw64(p + 0); /* return_wmd */
		h->msg.get.return_wmd.wh_object_cookie = ulnet_get_raw64(p + 8);
		h->msg.get.match_bits = ulnet_get_le64(p + 16);                     /* match_bits */
		h->msg.get.ptl_index = ulnet_get_le32(p + 24);                      /* ptl_index */
		h->msg.get.src_offset = ulnet_get_le32(p + 28);                     /* src_offset */
		h->msg.get.sink_length = ulnet_get_le32(p + 32);                    /* sink_length */
		break;
	case ULNET_MSG_ACK:
		h->msg.ack.dst_wmd.wh_interface_cookie = ulnet_get_raw64(p + 0); /* dst_wmd */
		h->msg.ack.dst_wmd.wh_object_cookie = ulnet_get_raw64(p + 8);
		h->msg.ack.match_bits = ulnet_get_le64(p + 16);                  /* match_bits */
		h->msg.ack.mlength = ulnet_get_le32(p + 24);                     /* mlength */
		break;
	case ULNET_MSG_REPLY:
		h->msg.reply.dst_wmd.wh_interface_cookie = ulnet_get_raw64(p + 0); /* dst_wmd */
		h->msg.reply.dst_wmd.wh_object_cookie = ulnet_get_raw64(p + 8);
		break;
	case ULNET_MSG_HELLO:
		h->msg.hello.incarnation = ulnet_get_le64(p + 0); /* incarnation */
		h->msg.hello.type = ulnet_get_le32(p + 8);        /* type (connection type) */
		break;
	default:
		break;
	}
}

/* The part both forms share, from dest_pid on (@pids is its offset): pids, type, payload_length, msg. */
static void tail_pack(const struct ulnet_hdr *h, uint8_t *out, size_t pids)
{
	ulnet_put_le32(out + pids, h->dest_pid);
	ulnet_put_le32(out + pids + 4, h->src_pid);
	ulnet_put_le32(out + pids + HDR_PIDS_TO_TYPE, h->type);
	ulnet_put_le32(out + pids + HDR_PIDS_TO_PAYLOAD, h->payload_length);
	msg_pack(h, out + pids + HDR_PIDS_TO_MSG);
}

/* Read and check the shared tail. Order (style-anchors §7): type known, then the payload limit for it. */
static int tail_unpack(const uint8_t *buf, size_t pids, uint32_t max_type, struct ulnet_hdr *h,
		       struct ulnet_wire_err *err)
{
	const size_t type_off = pids + HDR_PIDS_TO_TYPE;
	const size_t payload_off = pids + HDR_PIDS_TO_PAYLOAD;

	h->dest_pid = ulnet_get_le32(buf + pids);             /* dest_pid */
	h->src_pid = ulnet_get_le32(buf + pids + 4);          /* src_pid */
	h->type = ulnet_get_le32(buf + type_off);             /* type */
	h->payload_length = ulnet_get_le32(buf + payload_off); /* payload_length */

	if (h->type > max_type)
		return ulnet_wire_fail(err, "type", type_off, h->type, max_type);
	switch (h->type) {
	case ULNET_MSG_ACK:
	case ULNET_MSG_GET:
		/* an ACK or GET never carries payload (lnet_parse) */
		if (h->payload_length != 0)
			return ulnet_wire_fail(err, "payload_length", payload_off, h->payload_length, 0);
		break;
	case ULNET_MSG_PUT:
	case ULNET_MSG_REPLY:
		/* LNET_MAX_PAYLOAD == LNET_MTU: one limit whether the message is for us or routed */
		if (h->payload_length > ULNET_MTU)
			return ulnet_wire_fail(err, "payload_length", payload_off, h->payload_length,
					       ULNET_MTU);
		break;
	default:
		break; /* HELLO: payload is the socklnd V1 IP list, which the LND bounds */
	}
	msg_unpack(h->type, buf + pids + HDR_PIDS_TO_MSG, h);
	return 0;
}

int ulnet_hdr_pack_nid4(const struct ulnet_hdr *h, uint8_t out[ULNET_HDR_NID4_SIZE])
{
	if (!ulnet_nid_is_nid4(&h->dest_nid) || !ulnet_nid_is_nid4(&h->src_nid))
		return -EINVAL;
	ulnet_put_le64(out + HDR4_DEST_NID, ulnet_nid_to_nid4(&h->dest_nid));
	ulnet_put_le64(out + HDR4_SRC_NID, ulnet_nid_to_nid4(&h->src_nid));
	tail_pack(h, out, HDR4_DEST_PID);
	return 0;
}

int ulnet_hdr_unpack_nid4(const uint8_t *buf, size_t len, bool allow_hello, struct ulnet_hdr *out,
			  struct ulnet_wire_err *err)
{
	struct ulnet_hdr h;
	int rc;

	memset(&h, 0, sizeof(h));
	/* lnet_hdr_nid4: fixed size, all of it present */
	if (len < ULNET_HDR_NID4_SIZE)
		return ulnet_wire_fail(err, "lnet_hdr_nid4", 0, len, ULNET_HDR_NID4_SIZE);
	rc = tail_unpack(buf, HDR4_DEST_PID, allow_hello ? ULNET_MSG_HELLO : ULNET_MSG_REPLY, &h, err);
	if (rc)
		return rc;
	/* dest_nid, src_nid: LE nid4 */
	rc = nid4_decode(ulnet_get_le64(buf + HDR4_DEST_NID), "dest_nid", HDR4_DEST_NID, &h.dest_nid, err);
	if (rc)
		return rc;
	rc = nid4_decode(ulnet_get_le64(buf + HDR4_SRC_NID), "src_nid", HDR4_SRC_NID, &h.src_nid, err);
	if (rc)
		return rc;
	*out = h;
	return 0;
}

void ulnet_hdr_pack_nid16(const struct ulnet_hdr *h, uint8_t out[ULNET_HDR_NID16_SIZE])
{
	ulnet_nid16_pack(&h->dest_nid, out);
	ulnet_nid16_pack(&h->src_nid, out + ULNET_NID16_WIRE_SIZE);
	tail_pack(h, out, HDR16_DEST_PID);
}

int ulnet_hdr_unpack_nid16(const uint8_t *buf, size_t len, struct ulnet_hdr *out, struct ulnet_wire_err *err)
{
	struct ulnet_hdr h;
	int rc;

	memset(&h, 0, sizeof(h));
	/* lnet_hdr: fixed size, all of it present */
	if (len < ULNET_HDR_NID16_SIZE)
		return ulnet_wire_fail(err, "lnet_hdr", 0, len, ULNET_HDR_NID16_SIZE);
	/* HELLO exists only in the socklnd V1 nid4 form */
	rc = tail_unpack(buf, HDR16_DEST_PID, ULNET_MSG_REPLY, &h, err);
	if (rc)
		return rc;
	/* dest_nid, src_nid: struct lnet_nid, never swapped */
	rc = nid16_decode(buf, 0, "dest_nid", "dest_nid", &h.dest_nid, err);
	if (rc)
		return rc;
	rc = nid16_decode(buf + ULNET_NID16_WIRE_SIZE, ULNET_NID16_WIRE_SIZE, "src_nid", "src_nid",
			  &h.src_nid, err);
	if (rc)
		return rc;
	*out = h;
	return 0;
}
