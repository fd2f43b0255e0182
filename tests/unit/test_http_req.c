/* SPDX-License-Identifier: MIT */
/* The metrics endpoint's request parser (tools/ulnetd/http_req.c): where a header ends, and the
 * answer to each kind of request line. */
#include <setjmp.h>
#include <stdarg.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_len),
		cmocka_unit_test(test_route),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
