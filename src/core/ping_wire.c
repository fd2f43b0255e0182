/* SPDX-License-Identifier: MIT */
/* The ping / discovery info codec (lnet-wire.md §2.4). Pure: no allocation, no logging, no globals.
 *
 * struct lnet_ping_info travels in the sender's byte order: we write native order and the receiver swaps
 * when pi_magic reads swapped. The large NIDs of LARGE_ADDR entries are struct lnet_nid images and are
 * never swapped. The METADATA block (EFA) is neither written nor read. */
#include "hdr.h"

#define PING_HDR_SIZE 16     /* pi_magic, pi_features, pi_pid, pi_nnis */
#define PING_NI4_SIZE 16     /* struct lnet_ni_status: ns_nid u64, ns_status u32, ns_msg_size u32 */
#define PING_NNIS_MAX 4096u  /* lnet_interfaces_max default */
#define PING_LARGE_FIXED 12  /* ns_status u32 + nid_size/nid_type/nid_num + the first address word */

/* Bytes of one lnet_ni_large_status: ns_status, then the NID's 4-byte head and its nid_size + 4 address
 * bytes, rounded up to 4. */
static size_t large_entry_size(uint8_t nid_size)
{
	return ((size_t)PING_LARGE_FIXED + nid_size + 3) & ~(size_t)3;
}

int ulnet_ping_info_pack(const struct ulnet_ping_info *pi, uint8_t *out, size_t cap)
{
	uint32_t features, n4 = 0, first4 = 0;
	size_t total, off;

	if (pi->n_ni == 0 || pi->n_ni > ULNET_PING_INFO_MAX_NIDS)
		return -EINVAL;
	total = PING_HDR_SIZE;
	for (uint32_t i = 0; i < pi->n_ni; i++) {
		const struct ulnet_nid *nid = &pi->ni[i].nid;

		if (ulnet_nid_is_nid4(nid)) {
			if (n4++ == 0)
				first4 = i;
			total += PING_NI4_SIZE;
		} else {
			if (nid->size != 12)
				return -EINVAL; /* the only large size our decoder takes */
			total += large_entry_size(nid->size);
		}
	}
	if (n4 == 0)
		return -EINVAL; /* pi_nnis must be >= 1: entry 0 is 0@lo */
	if (total > cap)
		return -ENOSPC;

	/* LARGE_ADDR says large entries follow and entry 0's ns_msg_size is the total, so it is set exactly
	 * when there are some (as the kernel does); METADATA is cleared since we send no metadata block. */
	features = pi->features & ~(ULNET_PING_FEAT_LARGE_ADDR | ULNET_PING_FEAT_METADATA);
	if (n4 < pi->n_ni)
		features |= ULNET_PING_FEAT_LARGE_ADDR;

	ulnet_put_ho32(out + 0, ULNET_PING_MAGIC); /* pi_magic */
	ulnet_put_ho32(out + 4, features);         /* pi_features */
	ulnet_put_ho32(out + 8, pi->pid);          /* pi_pid */
	ulnet_put_ho32(out + 12, n4);              /* pi_nnis: nid4 entries only */
	off = PING_HDR_SIZE;
	for (uint32_t i = 0; i < pi->n_ni; i++) {  /* pi_ni[] */
		const struct ulnet_ping_ni *ni = &pi->ni[i];
		uint32_t msg_size = ni->msg_size;

		if (!ulnet_nid_is_nid4(&ni->nid))
			continue;
		if (i == first4 && (features & ULNET_PING_FEAT_LARGE_ADDR))
			msg_size = (uint32_t)total;
		ulnet_put_ho64(out + off, ulnet_nid_to_nid4(&ni->nid)); /* ns_nid */
		ulnet_put_ho32(out + off + 8, ni->status);             /* ns_status */
		ulnet_put_ho32(out + off + 12, msg_size);              /* ns_msg_size */
		off += PING_NI4_SIZE;
	}
	for (uint32_t i = 0; i < pi->n_ni; i++) {  /* lnet_ni_large_status[] */
		const struct ulnet_ping_ni *ni = &pi->ni[i];
		uint8_t image[ULNET_NID16_WIRE_SIZE];
		size_t esize;

		if (ulnet_nid_is_nid4(&ni->nid))
			continue;
		esize = large_entry_size(ni->nid.size);
		ulnet_nid16_pack(&ni->nid, image);
		memset(out + off, 0, esize);
		ulnet_put_ho32(out + off, ni->status);                         /* ns_status */
		memcpy(out + off + 4, image, 4 + 4 + (size_t)ni->nid.size);    /* ns_nid, used bytes only */
		off += esize;
	}
	return (int)off;
}

/* The pi_ni[] entry at the cursor, already bounds-checked. Entries past ULNET_PING_INFO_MAX_NIDS are
 * read over but neither stored nor checked. */
static int ni4_unpack(struct ulnet_rd *rd, struct ulnet_ping_info *out)
{
	size_t off = ulnet_rd_off(rd);
	struct ulnet_ping_ni ni;
	uint64_t nid4;

	if (ulnet_rd_u64(rd, "ns_nid", &nid4) || ulnet_rd_u32(rd, "ns_status", &ni.status) ||
	    ulnet_rd_u32(rd, "ns_msg_size", &ni.msg_size))
		return -EPROTO;
	if (out->n_ni >= ULNET_PING_INFO_MAX_NIDS)
		return 0;
	/* A nid4's LND type is 16 bits on the wire but 8 in struct ulnet_nid; no real type is above 0xff. */
	if (nid4 != ULNET_NID_ANY4 && (nid4 >> 56) != 0)
		return ulnet_wire_fail(rd->err, "ns_nid", off, nid4, UINT64_C(0x00ffffffffffffff));
	ulnet_nid_from_nid4(nid4, &ni.nid);
	out->ni[out->n_ni++] = ni;
	return 0;
}

/* One lnet_ni_large_status at the cursor, which must end by @end (the total size entry 0 announced). */
static int large_unpack(struct ulnet_rd *rd, size_t end, struct ulnet_ping_info *out)
{
	uint8_t image[ULNET_NID16_WIRE_SIZE] = { 0 };
	size_t off = ulnet_rd_off(rd), room = end - off, esize, nid_bytes;
	struct ulnet_ping_ni ni = { 0 };
	int rc;

	if (room < PING_LARGE_FIXED)
		return ulnet_wire_fail(rd->err, "lnet_ni_large_status", off, room, PING_LARGE_FIXED);
	esize = large_entry_size(rd->p[4]); /* ns_nid.nid_size */
	if (room < esize)
		return ulnet_wire_fail(rd->err, "lnet_ni_large_status", off, room, esize);
	if (ulnet_rd_u32(rd, "ns_status", &ni.status))
		return -EPROTO;
	/* ns_nid: only its used bytes are on the wire; the rest of the 20-byte image reads as zero */
	nid_bytes = 4 + 4 + (size_t)rd->p[0];
	memcpy(image, rd->p, nid_bytes < sizeof(image) ? nid_bytes : sizeof(image));
	rc = ulnet_nid16_unpack(image, &ni.nid, rd->err);
	if (rc) {
		if (rd->err) {
			rd->err->field = "ns_nid";
			rd->err->offset += off + 4;
		}
		return rc;
	}
	rd->p += esize - 4;
	out->ni[out->n_ni++] = ni;
	return 0;
}

int ulnet_ping_info_unpack(const uint8_t *buf, size_t len, struct ulnet_ping_info *out,
			   struct ulnet_wire_err *err)
{
	uint32_t magic, nnis, features, pid;
	struct ulnet_rd rd;
	uint64_t lo;
	int rc;

	memset(out, 0, sizeof(*out));
	ulnet_rd_init(&rd, buf, len, false, err);
	/* the fixed part */
	if (ulnet_rd_need(&rd, "lnet_ping_info", PING_HDR_SIZE))
		return -EPROTO;
	/* pi_magic: native, swapped, or not a ping info */
	magic = ulnet_get_ho32(buf, false);
	if (magic == ulnet_swab32(ULNET_PING_MAGIC))
		rd.swab = true;
	else if (magic != ULNET_PING_MAGIC)
		return ulnet_wire_fail(err, "pi_magic", 0, magic, ULNET_PING_MAGIC);
	rd.p += 4;
	if (ulnet_rd_u32(&rd, "pi_features", &features) || ulnet_rd_u32(&rd, "pi_pid", &pid) ||
	    ulnet_rd_u32(&rd, "pi_nnis", &nnis))
		return -EPROTO;
	/* pi_features: without NI_STATUS the entries are bare NIDs, a format nobody sends any more */
	if (!(features & ULNET_PING_FEAT_NI_STATUS))
		return ulnet_wire_fail(err, "pi_features", 4, features, ULNET_PING_FEAT_NI_STATUS);
	/* pi_nnis: at least 0@lo, at most lnet_interfaces_max */
	if (nnis < 1)
		return ulnet_wire_fail(err, "pi_nnis", 12, nnis, 1);
	if (nnis > PING_NNIS_MAX)
		return ulnet_wire_fail(err, "pi_nnis", 12, nnis, PING_NNIS_MAX);
	/* pi_ni[]: every announced nid4 entry present */
	if (ulnet_rd_need(&rd, "pi_ni", (size_t)nnis * PING_NI4_SIZE))
		return -EPROTO;
	/* pi_ni[0].ns_nid: 0@lo, whose ns_status carries the ping sequence number */
	lo = ulnet_get_ho64(rd.p, rd.swab);
	if (lo != ULNET_NID_LO_0)
		return ulnet_wire_fail(err, "ns_nid", PING_HDR_SIZE, lo, ULNET_NID_LO_0);

	out->features = features;
	out->pid = pid;
	for (uint32_t i = 0; i < nnis; i++) {
		rc = ni4_unpack(&rd, out);
		if (rc)
			return rc;
	}
	if (features & ULNET_PING_FEAT_LARGE_ADDR) {
		/* pi_ni[0].ns_msg_size: total size, covering the large entries; the low bits are not size */
		size_t total = out->ni[0].msg_size & ~(size_t)3;
		size_t start = ulnet_rd_off(&rd);
		const size_t msg_size_off = PING_HDR_SIZE + 12;

		if (total < start)
			return ulnet_wire_fail(err, "ns_msg_size", msg_size_off, total, start);
		if (total > len)
			return ulnet_wire_fail(err, "ns_msg_size", msg_size_off, total, len);
		while (ulnet_rd_off(&rd) < total && out->n_ni < ULNET_PING_INFO_MAX_NIDS) {
			rc = large_unpack(&rd, total, out);
			if (rc)
				return rc;
		}
	}
	return 0;
}
