/* SPDX-License-Identifier: MIT */
/* libFuzzer target: what a hostile local peer hands the shm fabric provider (issue "The shm provider
 * lets no one in": any process on the host may connect, so everything it sends is checked). The
 * first byte picks one of three decoders, the rest is their input:
 *   0  shm_cm_unpack: the 80-byte CM message. One that decodes has a known type, pdata_len <=
 *      FAB_PRIVATE_DATA_MAX, a REJECT's status in -4095..0, and re-packs (shm_cm_pack) to the
 *      bytes it came from (reserved bytes and the pdata tail zero) and to the same fields.
 *   1  shm_mem_msg_unpack: the 24-byte memory-channel announcement. One that decodes has mid != 0,
 *      0 < len <= SHM_MEM_MAX, base + len not wrapping, and re-packs to the same bytes.
 *   2  shm_mr_check on a peer-written registration table of 1-8 entries and its segment area (one
 *      allocation, as the peer's memfd: an entry's segment list must lie inside the area). On
 *      success the entry matched the key's generation with the valid bit, the access and the range;
 *      1..max iovecs (0 allowed for len 0, which no caller passes) total len, each inside one of the
 *      entry's segments modulo 2^64 (nseg 1: exactly [addr, addr + len)).
 * Nothing may read out of bounds. Seeds: fuzz/corpus/fuzz_shm_cm/. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "shm.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

#define TBL_MAX 8
#define IOV_MAX_FUZZ 18
/* shm_cm.c's message types (CONNREQ 1, CONNACK 2, REJECT 3, RTU 4) */
#define CM_TYPE_MAX 4
#define CM_REJECT 3

static void fuzz_cm(const uint8_t *in, size_t n)
{
	struct shm_cm_msg m, m2;
	uint8_t b[SHM_CM_SIZE];

	if (shm_cm_unpack(in, n, &m) != 0)
		return;
	if (n != SHM_CM_SIZE || m.type < 1 || m.type > CM_TYPE_MAX || m.pdata_len > FAB_PRIVATE_DATA_MAX ||
	    m.src.sin_family != AF_INET)
		abort();
	if (m.type == CM_REJECT && (m.status > 0 || m.status < -4095))
		abort(); /* a REJECT's status reads as an errno */
	shm_cm_pack(&m, b);
	/* the same bytes, but for a REJECT's status brought into range, the reserved bytes and the
	 * pdata past pdata_len (zero) */
	if (memcmp(b, in, 7) || b[7] || memcmp(b + 12, in + 12, 10) || b[22] || b[23] ||
	    memcmp(b + 24, in + 24, m.pdata_len))
		abort();
	for (size_t i = 24u + m.pdata_len; i < SHM_CM_SIZE; i++)
		if (b[i])
			abort();
	if (memcmp(b + 8, in + 8, 4) && !(m.type == CM_REJECT && m.status == -ECONNREFUSED))
		abort();
	if (shm_cm_unpack(b, sizeof(b), &m2) != 0 || m2.type != m.type || m2.status != m.status ||
	    m2.tbl_n != m.tbl_n || m2.flags != m.flags || m2.pdata_len != m.pdata_len ||
	    m2.src.sin_addr.s_addr != m.src.sin_addr.s_addr || m2.src.sin_port != m.src.sin_port ||
	    memcmp(m2.pdata, m.pdata, m.pdata_len))
		abort();
}

static void fuzz_mem(const uint8_t *in, size_t n)
{
	uint64_t mid, base;
	uint32_t l;
	uint8_t b[SHM_MEM_MSG];

	if (shm_mem_msg_unpack(in, n, &mid, &base, &l) != 0)
		return;
	if (n != SHM_MEM_MSG || !mid || !l || l > SHM_MEM_MAX || base > UINT64_MAX - l)
		abort();
	shm_mem_msg_pack(b, mid, base, l);
	if (memcmp(b, in, SHM_MEM_MSG))
		abort();
}

/* @iv lies inside one of @segs[0..n), modulo 2^64: a peer's segment list may wrap the address space
 * (its own; shm_peer_translate checks each iovec against the arena it maps, process_vm gets EFAULT) */
static bool in_some_seg(const struct iovec *iv, const struct shm_seg *segs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t o = (uintptr_t)iv->iov_base - segs[i].base;

		if (o <= segs[i].len && iv->iov_len <= segs[i].len - o)
			return true;
	}
	return false;
}

/* Input: [ntbl][key 4][addr 8][len 8][access][max] then ntbl 64-byte entries, then up to
 * SEG_FUZZ_MAX segments (16 bytes each) written at the start of the segment area; short input reads
 * as zeros. The table and its whole segment area are one buffer of at least shm_tbl_bytes(ntbl), as
 * the peer's memfd is: an entry's segs (fuzzed) may point anywhere in it or past it. */
#define SEG_FUZZ_MAX 96
static void fuzz_mr(const uint8_t *in, size_t n)
{
	struct shm_mr_entry *tbl;
	struct shm_seg *area;
	const struct shm_mr_entry *e = NULL;
	uint8_t hdr[23] = {0};
	size_t off = sizeof(hdr);
	uint32_t ntbl, key;
	uint64_t addr, rlen, total = 0;
	unsigned access;
	int max, rc;
	struct iovec *iov;

	memcpy(hdr, in, n < sizeof(hdr) ? n : sizeof(hdr));
	ntbl = 1u + hdr[0] % TBL_MAX;
	key = ulnet_get_le32(hdr + 1);
	addr = ulnet_get_le64(hdr + 5);
	rlen = ulnet_get_le64(hdr + 13);
	access = hdr[21] & 7u;
	max = hdr[22] % (IOV_MAX_FUZZ + 1);
	/* one buffer for every input (1 MiB: a calloc per input would be most of the run); what any
	 * input may write is cleared first, the rest stays zero */
	static struct shm_mr_entry *buf;

	if (!buf && !(buf = calloc(1, shm_tbl_bytes(TBL_MAX))))
		return;
	memset(buf, 0, TBL_MAX * sizeof(*buf) + SEG_FUZZ_MAX * sizeof(struct shm_seg));
	tbl = buf;
	area = (struct shm_seg *)(void *)(tbl + ntbl);
	for (uint32_t i = 0; i < ntbl; i++, off += sizeof(tbl[0]))
		if (off < n)
			memcpy(&tbl[i], in + off, n - off < sizeof(tbl[0]) ? n - off : sizeof(tbl[0]));
	for (uint32_t j = 0; j < SEG_FUZZ_MAX && off < n; j++, off += sizeof(struct shm_seg)) {
		uint8_t sg[16] = {0};

		memcpy(sg, in + off, n - off < sizeof(sg) ? n - off : sizeof(sg));
		area[j] = (struct shm_seg){ulnet_get_le64(sg), ulnet_get_le64(sg + 8)};
	}
	if (!(iov = calloc(max > 0 ? (size_t)max : 1, sizeof(*iov))))
		return;
	rc = shm_mr_check(tbl, ntbl, key, addr, rlen, access, iov, max, &e);
	if (rc < 0) {
		if (rc != -EACCES && rc != -ENOMEM)
			abort();
	} else {
		uint32_t idx = SHM_KEY_IDX(key);

		if (key < (1u << 16) || idx >= ntbl || e != &tbl[idx] || rc > max || (rc == 0 && rlen) ||
		    !shm_mr_entry_ok(e, key, addr, rlen, access) ||
		    atomic_load(&e->state) != SHM_STATE(SHM_KEY_GEN(key), true) || (e->access & access) != access ||
		    e->nseg > 1024 || (e->nseg != 1 && (e->segs > shm_seg_cap(ntbl) || e->nseg > shm_seg_cap(ntbl) - e->segs)))
			abort();
		for (int i = 0; i < rc; i++) {
			total += iov[i].iov_len;
			if (e->nseg == 1 ? rc != 1 || (uintptr_t)iov[0].iov_base != addr || iov[0].iov_len != rlen
					 : !in_some_seg(&iov[i], area + e->segs, e->nseg))
				abort();
		}
		if (total != rlen)
			abort();
	}
	free(iov);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	if (len < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_cm(data + 1, len - 1);
		break;
	case 1:
		fuzz_mem(data + 1, len - 1);
		break;
	default:
		fuzz_mr(data + 1, len - 1);
		break;
	}
	return 0;
}
