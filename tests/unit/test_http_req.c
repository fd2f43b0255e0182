/* SPDX-License-Identifier: MIT */
/* The metrics endpoint's request parser (tools/ulnetd/http_req.c): where a header ends, and the
 * answer to each kind of request line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "http_req.h"

static int route(const char *s)
{
	return ulnetd_http_route(s, strlen(s));
}

static void test_header_len(void **state)
{
	static const char nul[] = "GET /metrics HTTP/1.1\r\nX: \0\r\n\r\nbody";

	(void)state;
	assert_int_equal(ulnetd_http_header_len("GET / HTTP/1.1\r\n", 16), 0);
	assert_int_equal(ulnetd_http_header_len("GET / HTTP/1.1\r\n\r\n", 18), 18);
	assert_int_equal(ulnetd_http_header_len("GET / HTTP/1.1\n\nrest", 20), 16);
	assert_int_equal(ulnetd_http_header_len("\r\n\r", 3), 0);
	assert_int_equal(ulnetd_http_header_len("", 0), 0);
	assert_int_equal(ulnetd_http_header_len(nul, sizeof(nul) - 1), 31); /* a NUL is data */
}

static void test_route(void **state)
{
	(void)state;
	assert_int_equal(route("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), 200);
	assert_int_equal(route("GET /metrics HTTP/1.0\n\n"), 200);
	assert_int_equal(route("GET /metrics?a=b HTTP/1.1\r\n\r\n"), 200);
	assert_int_equal(route("GET /metrics/ HTTP/1.1\r\n\r\n"), 404);
	assert_int_equal(route("GET / HTTP/1.1\r\n\r\n"), 404);
	assert_int_equal(route("GET /metricsx HTTP/1.1\r\n\r\n"), 404);
	assert_int_equal(route("POST /metrics HTTP/1.1\r\n\r\n"), 405);
	assert_int_equal(route("HEAD /metrics HTTP/1.1\r\n\r\n"), 405);
	assert_int_equal(route("get /metrics HTTP/1.1\r\n\r\n"), 405); /* methods are case-sensitive */
	assert_int_equal(route("GET /metrics HTTP/2\r\n\r\n"), 400);
	assert_int_equal(route("GET /metrics HTTP/1.1 x\r\n\r\n"), 400);
	assert_int_equal(route("GET  /metrics HTTP/1.1\r\n\r\n"), 400);
	assert_int_equal(route(" GET /metrics HTTP/1.1\r\n\r\n"), 400);
	assert_int_equal(route("GET /metrics\r\n\r\n"), 400);
	assert_int_equal(route("hello\r\n\r\n"), 400);
	assert_int_equal(route("GET /metrics HTTP/1.1"), 400); /* no end of line */
	assert_int_equal(ulnetd_http_route("GET /metrics\0HTTP/1.1\r\n", 23), 400);
}

static bool om(const char *s)
{
	return ulnetd_http_wants_openmetrics(s, strlen(s));
}

/* The Accept negotiation: OpenMetrics only when asked for with a weight above 0 */
static void test_accept(void **state)
{
	(void)state;
	/* what Prometheus 2.42 sends */
	assert_true(om("GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0,"
		       "application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n\r\n"));
	assert_true(om("GET /metrics HTTP/1.1\nACCEPT:APPLICATION/OpenMetrics-Text\n\n"));
	assert_true(om("GET /metrics HTTP/1.1\r\naccept: text/plain , application/openmetrics-text ; q=0.1\r\n\r\n"));
	assert_false(om("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
	assert_false(om("GET /metrics HTTP/1.1\r\nAccept: text/plain;version=0.0.4\r\n\r\n"));
	assert_false(om("GET /metrics HTTP/1.1\r\nAccept: */*\r\n\r\n"));
	assert_false(om("GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;q=0\r\n\r\n"));
	assert_false(om("GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text; q=0.000\r\n\r\n"));
	assert_false(om("GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-textual\r\n\r\n"));
	assert_false(om("GET /metrics HTTP/1.1\r\nX-Accept: application/openmetrics-text\r\n\r\n"));
	/* after the blank line is the body, not a header */
	assert_false(om("GET /metrics HTTP/1.1\r\n\r\nAccept: application/openmetrics-text\r\n\r\n"));
	/* the request line itself is not a header */
	assert_false(om("Accept: application/openmetrics-text\r\n\r\n"));
	/* truncated inputs stay within their length */
	assert_false(ulnetd_http_wants_openmetrics("GET / HTTP/1.1\r\nAccept: application/openmetrics-text", 30));
	assert_false(ulnetd_http_wants_openmetrics("", 0));
	assert_true(om("GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;q=0.5"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_len),
		cmocka_unit_test(test_route),
		cmocka_unit_test(test_accept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
