/* SPDX-License-Identifier: MIT */
/* Log lines (src/util/log.c): per-subsystem levels over a global default, the rate limit per call
 * site with its "suppressed N" line, and a sink that may log again (it is called with no lock held). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "internal.h"
ULNET_LOG_SUBSYS_DECLARE(TCP); /* defined by the tcp LND */

static int nlines, nsuppressed, depth;
static char last[256];

/* The rate limiter's clock (ulnet__log_set_clock): real time unless a case sets fake_now_ns, so a
 * window ends when the case says, not when the machine gets round to it. */
static uint64_t fake_now_ns; /* 0: real time */

static uint64_t test_clock(void)
{
	return fake_now_ns ? fake_now_ns : ulnet__now_ns();
}

static void sink(int level, const char *subsys, const char *line)
{
	unsigned n;

	(void)level;
	nlines++;
	snprintf(last, sizeof(last), "%s %s", subsys, line);
	if (sscanf(line, "suppressed %u similar lines", &n) == 1)
		nsuppressed += (int)n;
	if (depth++ == 0 && !strcmp(line, "reenter"))
		ULNET_LOG(CORE, ERR, "from the sink"); /* deadlocked while the sink ran under the log lock */
	depth--;
}

static void reset(void)
{
	nlines = nsuppressed = 0;
	last[0] = '\0';
	ulnet_log_set(sink, ULNET_LOG_INFO);
	ulnet_log_set_level("TCP", -1);
	ulnet_log_set_level("CORE", -1);
	ulnet_log_set_rate(10, 5000);
}

static void test_levels(void **state)
{
	(void)state;
	reset();
	ULNET_LOG(TCP, DEBUG, "hidden");
	assert_int_equal(nlines, 0);
	assert_int_equal(ulnet_log_set_level("tcp", ULNET_LOG_DEBUG), 0);
	ULNET_LOG(TCP, DEBUG, "shown %d", 1);
	assert_int_equal(nlines, 1);
	assert_string_equal(last, "TCP shown 1");
	ULNET_LOG(CORE, DEBUG, "core follows the default");
	assert_int_equal(nlines, 1);
	/* the global default moves every subsystem without its own level */
	ulnet_log_set(sink, ULNET_LOG_ERR);
	ULNET_LOG(CORE, WARN, "below the default");
	ULNET_LOG(TCP, DEBUG, "own level kept");
	assert_int_equal(nlines, 2);
	assert_int_equal(ulnet_log_set_level("TCP", -1), 0);
	ULNET_LOG(TCP, DEBUG, "follows again");
	assert_int_equal(nlines, 2);
	assert_int_equal(ulnet_log_set_level("NOPE", 1), -ENOENT);
	assert_int_equal(ulnet_log_set_level("TCP", 4), -EINVAL);
	assert_int_equal(ulnet_log_set_level(NULL, ULNET_LOG_WARN), 0);
	ULNET_LOG(CORE, WARN, "global via NULL");
	assert_int_equal(nlines, 3);
}

static void flood(int n)
{
	for (int i = 0; i < n; i++)
		ULNET_LOG(TCP, ERR, "bad connection %d", i); /* one call site */
}

static void test_rate_limit(void **state)
{
	(void)state;
	reset();
	fake_now_ns = ulnet__now_ns(); /* time stands still while the 10,000 lines come */
	ulnet_log_set_rate(10, 20);
	flood(10000);
	assert_int_equal(nlines, 10);
	fake_now_ns += 30 * 1000000ull; /* past the 20 ms window */
	flood(1);
	assert_int_equal(nlines, 12);
	assert_int_equal(nsuppressed, 9990);
	assert_string_equal(last, "TCP bad connection 0");
	/* another call site has its own budget */
	ULNET_LOG(TCP, ERR, "other site");
	assert_int_equal(nlines, 13);
	/* DEBUG is never limited; burst 0 turns the limit off */
	ulnet_log_set_level("TCP", ULNET_LOG_DEBUG);
	for (int i = 0; i < 50; i++)
		ULNET_LOG(TCP, DEBUG, "debug %d", i);
	assert_int_equal(nlines, 63);
	ulnet_log_set_rate(0, 0);
	flood(100);
	assert_int_equal(nlines, 163);
	fake_now_ns = 0;
}

static void test_sink_may_log(void **state)
{
	(void)state;
	reset();
	ULNET_LOG(CORE, ERR, "reenter");
	assert_int_equal(nlines, 2);
	assert_string_equal(last, "CORE from the sink");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_sink_may_log),
	};

	ulnet__log_set_clock(test_clock);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
