/* SPDX-License-Identifier: MIT */
/* libFuzzer target: ulnetd's YAML configuration (tools/ulnetd/config.c). Any text either parses or
 * fails with one terminated "FILE:LINE: reason" line; nothing leaks either way. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ulnet/config_file.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct ulnet_config *cfg = NULL;
	char err[256];
	int rc;

	memset(err, 'x', sizeof(err));
	rc = ulnet_config_parse("fuzz.yaml", (const char *)data, len, &cfg, err, sizeof(err));
	if (rc == 0) {
		if (!cfg)
			abort();
		ulnet_config_free(cfg);
	} else if (cfg || !memchr(err, '\0', sizeof(err)) || (rc == -22 && !err[0])) {
		abort(); /* a refusal leaves nothing behind and always says why */
	}
	return 0;
}
