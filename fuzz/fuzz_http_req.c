/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the metrics endpoint's request parser (tools/ulnetd/http_req.c) on what a
 * hostile client sends, in a buffer of exactly its length (a read past it is ASan's to see). Its
 * answers must be one of the four, and 200 only for a GET of /metrics; the Accept negotiation
 * runs on every input too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "http_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char *req;
	size_t hlen;
	int code;

	if (len > ULNETD_HTTP_REQ_MAX)
		len = ULNETD_HTTP_REQ_MAX;
	if (!(req = malloc(len ? len : 1)))
		return 0;
	memcpy(req, data, len);
	hlen = ulnetd_http_header_len(req, len);
	if (hlen > len)
		abort();
	code = ulnetd_http_route(req, hlen ? hlen : len);
	if (code != 200 && code != 400 && code != 404 && code != 405)
		abort();
	if (code == 200 && (len < 22 || memcmp(req, "GET /metrics", 12)))
		abort();
	/* the Accept negotiation reads the same bytes, within them */
	(void)ulnetd_http_wants_openmetrics(req, hlen ? hlen : len);
	free(req);
	return 0;
}
