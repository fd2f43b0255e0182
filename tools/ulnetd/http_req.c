/* SPDX-License-Identifier: MIT */
/* The request line of the metrics endpoint: METHOD SP TARGET SP HTTP/1.x, the only part of a request
 * it reads (RFC 9112 §3). Works on lengths, never on NUL termination: a request is hostile input. */
#include <stdbool.h>
#include <string.h>

#include "http_req.h"

size_t ulnetd_http_header_len(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (i >= 1 && buf[i - 1] == '\n')
			return i + 1;
		if (i >= 3 && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
			return i + 1;
	}
	return 0;
}

static bool is(const char *p, size_t n, const char *word)
{
	return n == strlen(word) && !memcmp(p, word, n);
}

int ulnetd_http_route(const char *req, size_t len)
{
	const char *end = memchr(req, '\n', len), *sp1, *sp2, *target;
	size_t line, tlen;

	if (!end)
		return 400;
	line = (size_t)(end - req);
	if (line && req[line - 1] == '\r')
		line--;
	sp1 = memchr(req, ' ', line);
	if (!sp1)
		return 400;
	target = sp1 + 1;
	sp2 = memchr(target, ' ', line - (size_t)(target - req));
	if (!sp2 || sp1 == req || sp2 == target)
		return 400;
	/* the version: exactly HTTP/1.0 or HTTP/1.1 and nothing after it */
	if (!is(sp2 + 1, line - (size_t)(sp2 + 1 - req), "HTTP/1.1") &&
	    !is(sp2 + 1, line - (size_t)(sp2 + 1 - req), "HTTP/1.0"))
		return 400;
	if (memchr(req, '\0', line))
		return 400;
	if (!is(req, (size_t)(sp1 - req), "GET"))
		return 405;
	tlen = (size_t)(sp2 - target);
	{
		const char *q = memchr(target, '?', tlen);

		if (q)
			tlen = (size_t)(q - target);
	}
	return is(target, tlen, "/metrics") ? 200 : 404;
}
