/* SPDX-License-Identifier: MIT */
/* libFuzzer target: lnet_selftest message decoder (src/selftest/sst_wire.c). A decoded message must
 * re-encode, and the re-encoding must decode to the same message (what a ulnet node answers with). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sst.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct ulnet_sst_msg m, m2;
	static uint8_t out[ULNET_SST_MSG_SIZE];
	struct ulnet_wire_err err;

	if (ulnet__sst_msg_unpack(data, len, &m, &err) != 0)
		return 0;
	if (ulnet__sst_msg_pack(&m, out) != 0)
		return 0;
	if (ulnet__sst_msg_unpack(out, sizeof(out), &m2, &err) != 0)
		abort(); /* we produced something we cannot read back */
	return 0;
}
