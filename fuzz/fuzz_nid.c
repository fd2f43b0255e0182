/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the NID and net string parsers (src/core/nid.c), which read configuration files,
 * command lines and control requests. Whatever parses must format within ULNET_NID_STRLEN and parse
 * back to the same value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ulnet/nid.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char *s = malloc(len + 1), buf[ULNET_NID_STRLEN];
	struct ulnet_nid nid, back;
	uint32_t net, net2;
	const char *why = NULL;

	if (!s)
		return 0;
	memcpy(s, data, len);
	s[len] = '\0';
	if (ulnet_nid_parse(s, &nid, &why) == 0) {
		if (!ulnet_nid_format(&nid, buf, sizeof(buf)) || strlen(buf) >= sizeof(buf))
			abort();
		if (ulnet_nid_parse(buf, &back, &why) != 0 || !ulnet_nid_equal(&nid, &back))
			abort(); /* we printed something we cannot read back */
	} else if (!why) {
		abort(); /* every refusal says why */
	}
	why = NULL;
	if (ulnet_net_parse(s, &net, &why) == 0) {
		if (!ulnet_net_format(net, buf, sizeof(buf)) || ulnet_net_parse(buf, &net2, &why) != 0 || net2 != net)
			abort();
	} else if (!why) {
		abort();
	}
	free(s);
	return 0;
}
