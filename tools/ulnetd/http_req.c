/* SPDX-License-Identifier: MIT */
/* The request line of the metrics endpoint: METHOD SP TARGET SP HTTP/1.x, the only part of a request
 * it reads (RFC 9112 §3). Works on lengths, never on NUL termination: a request is hostile input. */
#include <stdbool.h>
#include <strings.h>
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

static bool ows(char c) { return c == ' ' || c == '\t'; }

/* [p, e) trimmed of optional white space on both ends */
static void trim(const char **p, const char **e)
{
	while (*p < *e && ows(**p))
		(*p)++;
	while (*e > *p && ows((*e)[-1]))
		(*e)--;
}

static bool is_nocase(const char *p, const char *e, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(e - p) == n && !strncasecmp(p, word, n);
}

/* Does one element of an Accept list, [p, e), name OpenMetrics with a weight above 0? */
static bool accept_elem_om(const char *p, const char *e)
{
	const char *semi = memchr(p, ';', (size_t)(e - p)), *te = semi ? semi : e, *tp = p;

	trim(&tp, &te);
	if (!is_nocase(tp, te, "application/openmetrics-text"))
		return false;
	while (semi) { /* parameters: only q matters, "q=0", "q=0.", "q=0.000" refuse */
		const char *a = semi + 1, *b;

		semi = memchr(a, ';', (size_t)(e - a));
		b = semi ? semi : e;
		trim(&a, &b);
		if (b - a >= 2 && (a[0] == 'q' || a[0] == 'Q') && a[1] == '=') {
			const char *v = a + 2;
			bool zero = v < b && *v == '0';

			for (v++; zero && v < b; v++)
				zero = *v == '.' || *v == '0';
			if (zero)
				return false;
		}
	}
	return true;
}

bool ulnetd_http_wants_openmetrics(const char *req, size_t len)
{
	const char *p = memchr(req, '\n', len), *end = req + len;

	/* the header fields: the lines after the request line, up to the blank one */
	while (p && ++p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *le = eol ? eol : end, *colon;

		if (le > p && le[-1] == '\r')
			le--;
		if (le == p)
			break;
		colon = memchr(p, ':', (size_t)(le - p));
		if (colon && is_nocase(p, colon, "accept")) {
			for (const char *a = colon + 1; a < le;) {
				const char *comma = memchr(a, ',', (size_t)(le - a)), *ae = comma ? comma : le;

				if (accept_elem_om(a, ae))
					return true;
				a = ae + 1;
			}
		}
		p = eol;
	}
	return false;
}
