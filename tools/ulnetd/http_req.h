/* SPDX-License-Identifier: MIT */
/* The metrics endpoint's request parser (http_req.c), apart from the sockets so it can be fuzzed
 * (fuzz/fuzz_http_req.c). */
#ifndef ULNETD_HTTP_REQ_H
#define ULNETD_HTTP_REQ_H

#include <stdbool.h>
#include <stddef.h>

#define ULNETD_HTTP_REQ_MAX 8192 /* bytes up to the blank line that ends the header */

/* How far @len bytes of @buf (read so far from a client) are a request: the length of the header
 * up to and including its blank line (CRLF CRLF, or LF LF as lenient servers take it), or 0 when it
 * has not ended yet. NUL bytes are data. */
size_t ulnetd_http_header_len(const char *buf, size_t len);

/* What to answer to the header @req of @len bytes: 200 for "GET /metrics HTTP/1.x" (a query string
 * is ignored), 405 another method, 404 another path, 400 anything that is not such a request line. */
int ulnetd_http_route(const char *req, size_t len);

/* Does the header @req of @len bytes (a routed request) ask for OpenMetrics: an Accept field lists
 * application/openmetrics-text without q=0? Prometheus lists it first; anything else (no Accept,
 * text/plain, any type) gets the 0.0.4 text. */
bool ulnetd_http_wants_openmetrics(const char *req, size_t len);

#endif
