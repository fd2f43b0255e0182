/* SPDX-License-Identifier: MIT */
/* libFuzzer target: LNet header (nid4 and nid16) and ping info decoders. Anything that decodes must
 * re-encode to the same bytes (nid4 header) and never read out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "hdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct ulnet_wire_err err;
	struct ulnet_hdr h;
	struct ulnet_ping_info *pi = malloc(sizeof(*pi));
	uint8_t out[ULNET_HDR_NID4_SIZE];

	if (ulnet_hdr_unpack_nid4(data, len, true, &h, &err) == 0 && ulnet_hdr_pack_nid4(&h, out) == 0) {
		/* pids, type and length must survive; NIDs may be normalised (any type-0xff NID is ANY)
		 * and union bytes the type does not use are not carried */
		if (memcmp(out + 16, data + 16, 16) != 0)
			abort();
	}
	(void)ulnet_hdr_unpack_nid16(data, len, &h, &err);
	if (pi) {
		(void)ulnet_ping_info_unpack(data, len, pi, &err);
		free(pi);
	}
	return 0;
}
