/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the selftest decoders a hostile peer feeds besides the envelope
 * (src/selftest/sst_wire.c): the extended stat reply body and a client test's destination list.
 * Input: byte 0 = flags (bit 0 swab), then a STAT_REPLY body, then packed ids. A decoded body must
 * re-encode to bytes that decode to the same counters; the error text is printable and terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ulnet/nid.h>
#include "sst.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void check_stat_ext(const uint8_t body[ULNET_SST_BODY_SIZE], bool swab)
{
	struct ulnet_sst_stat_ext x, y;
	uint8_t again[ULNET_SST_BODY_SIZE];

	ulnet__sst_stat_ext_unpack(body, swab, &x);
	if (strlen(x.first_error) > ULNET_SST_EXT_ERR_SIZE)
		abort();
	for (const char *c = x.first_error; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			abort();
	ulnet__sst_stat_ext_pack(&x, again);
	ulnet__sst_stat_ext_unpack(again, false, &y);
	if (x.status != y.status || x.sid.nid != y.sid.nid || x.sid.stamp != y.sid.stamp ||
	    x.rpcs_ok != y.rpcs_ok || x.bytes != y.bytes || x.mismatch_offset != y.mismatch_offset ||
	    x.active != y.active || strcmp(x.first_error, y.first_error))
		abort();
}

/* As the framework reads it: a count the peer chose, bounded by the bytes actually received. */
static void check_dests(const uint8_t *p, size_t len, bool swab)
{
	size_t n = len / ULNET_SST_ID_SIZE;

	for (size_t i = 0; i < n; i++) {
		struct ulnet_sst_id id, back;
		struct ulnet_nid nid;
		uint8_t packed[ULNET_SST_ID_SIZE];
		char s[ULNET_NID_STRLEN];

		ulnet__sst_id_unpack(p + i * ULNET_SST_ID_SIZE, swab, &id);
		ulnet_nid_from_nid4(id.nid, &nid);
		ulnet_nid_format(&nid, s, sizeof(s));
		if (strlen(s) >= sizeof(s))
			abort();
		ulnet__sst_id_pack(&id, packed);
		ulnet__sst_id_unpack(packed, false, &back);
		if (back.nid != id.nid || back.pid != id.pid)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint8_t body[ULNET_SST_BODY_SIZE] = { 0 };
	bool swab;
	size_t take;

	if (len < 1)
		return 0;
	swab = data[0] & 1;
	data++, len--;
	take = len < sizeof(body) ? len : sizeof(body);
	memcpy(body, data, take);
	check_stat_ext(body, swab);
	check_dests(data + take, len - take, swab);
	return 0;
}
