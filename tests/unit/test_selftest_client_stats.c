/* SPDX-License-Identifier: MIT */
/* ulnet_selftest_client_stats_get (include/ulnet/selftest.h), what the metrics endpoint exports: one-shot
 * runs over lo move the client counters by exactly their RPCs and bytes; a run under way is active; a
 * refused run leaves the last result as it was. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <ulnet/ulnet.h>
#include <ulnet/selftest.h>

struct fixture {
	ulnet_node *node;
	ulnet_selftest *st;
};

static int setup(void **state)
{
	static struct fixture f;
	struct ulnet_node_opts no = { 0 };

	assert_int_equal(ulnet_node_open(&no, &f.node), 0);
	assert_int_equal(ulnet_selftest_start(f.node, NULL, &f.st), 0);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	ulnet_selftest_stop(f->st);
	ulnet_node_close(f->node);
	return 0;
}

static void run(struct fixture *f, struct ulnet_selftest_run *p, int want)
{
	struct ulnet_selftest_result r;
	char why[256] = "";

	assert_int_equal(ulnet_nid_parse("0@lo", &p->to.nid, NULL), 0);
	p->from = ulnet_nid_any();
	if (!p->t.rpc_timeout_ms)
		p->t.rpc_timeout_ms = 5000;
	assert_int_equal(ulnet_selftest_run(f->st, p, &r, why, sizeof(why)), want);
	if (!want)
		assert_true(ulnet_selftest_result_ok(&r));
}

static void test_counts(void **state)
{
	struct fixture *f = *state;
	struct ulnet_selftest_client_stats c;
	struct ulnet_selftest_run ping = { .t = { .kind = ULNET_SELFTEST_PING, .concurrency = 2 }, .count = 10 };
	struct ulnet_selftest_run wr = { .t = { .kind = ULNET_SELFTEST_BRW, .write = true, .size = 4096,
						.check = ULNET_SELFTEST_CHECK_FULL, .concurrency = 1 }, .count = 4 };
	struct ulnet_selftest_run rd = { .t = { .kind = ULNET_SELFTEST_BRW, .size = 1000,
						.check = ULNET_SELFTEST_CHECK_SIMPLE, .concurrency = 3 }, .count = 3 };
	struct ulnet_selftest_run bad = { .t = { .kind = ULNET_SELFTEST_PING, .concurrency = 0 }, .count = 1 };
	uint64_t t0 = (uint64_t)time(NULL) * 1000;

	ulnet_selftest_client_stats_get(f->st, &c);
	assert_false(c.have_last);
	assert_int_equal(c.runs_active + c.tests_running + c.runs_finished + c.rpcs_ok + c.bytes_read + c.bytes_written, 0);

	run(f, &ping, 0);
	ulnet_selftest_client_stats_get(f->st, &c);
	assert_int_equal(c.rpcs_ok, 10);
	assert_int_equal(c.rpcs_timeout + c.rpcs_mismatch + c.rpcs_refused + c.rpcs_peer_gone, 0);
	assert_int_equal(c.runs_finished, 1);
	assert_int_equal(c.runs_active, 0);
	assert_int_equal(c.tests_running, 0);
	assert_true(c.have_last);
	assert_int_equal(c.last.kind, ULNET_SELFTEST_PING);
	assert_int_equal(c.last.rpcs_ok, 10);
	assert_true(c.last_end_unix_ms >= t0 && c.last_end_unix_ms <= t0 + 60000);

	run(f, &wr, 0);
	run(f, &rd, 0);
	ulnet_selftest_client_stats_get(f->st, &c);
	assert_int_equal(c.rpcs_ok, 10 + 4 + 3);
	assert_int_equal(c.bytes_written, 4 * 4096);
	assert_int_equal(c.bytes_read, 3 * 1000);
	assert_int_equal(c.runs_finished, 3);
	assert_int_equal(c.last.size, 1000);
	assert_false(c.last.write);

	/* refused before it ran: no result, the last one stays */
	run(f, &bad, -EINVAL);
	ulnet_selftest_client_stats_get(f->st, &c);
	assert_int_equal(c.runs_finished, 3);
	assert_int_equal(c.runs_active, 0);
	assert_int_equal(c.last.size, 1000);
}

/* From the run's own progress callback (at least once a second): the run and its test are active. */
static int seen_active(void *arg, const struct ulnet_selftest_result *so_far)
{
	struct fixture *f = arg;
	struct ulnet_selftest_client_stats c;

	(void)so_far;
	ulnet_selftest_client_stats_get(f->st, &c);
	assert_int_equal(c.runs_active, 1);
	assert_int_equal(c.tests_running, 1);
	return 1; /* seen: stop the run */
}

static void test_active(void **state)
{
	struct fixture *f = *state;
	struct ulnet_selftest_client_stats c;
	struct ulnet_selftest_run p = { .t = { .kind = ULNET_SELFTEST_PING, .concurrency = 1 }, .duration_ms = 30000,
					.progress = seen_active, .progress_arg = f };
	uint64_t before;

	ulnet_selftest_client_stats_get(f->st, &c);
	before = c.runs_finished;
	run(f, &p, 0); /* ends at the first progress call, about 1 s in, not at 30 s */
	ulnet_selftest_client_stats_get(f->st, &c);
	assert_int_equal(c.runs_finished, before + 1);
	assert_int_equal(c.runs_active, 0);
	assert_int_equal(c.tests_running, 0);
	assert_true(c.last.rpcs_ok > 0);
}

/* the check names round-trip, discard (4 on the wire, LU-20342) included; anything else is refused */
static void test_check_names(void **state)
{
	static const char *const names[] = { "none", "simple", "full", "discard" };
	enum ulnet_selftest_check c;

	(void)state;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ulnet_selftest_check_parse(names[i], &c), 0);
		assert_int_equal((int)c, i + 1);
		assert_string_equal(ulnet_selftest_check_name(c), names[i]);
	}
	assert_int_equal(ulnet_selftest_check_parse("maybe", &c), -EINVAL);
	assert_int_equal(ulnet_selftest_check_parse(NULL, &c), -EINVAL);
	assert_string_equal(ulnet_selftest_check_name((enum ulnet_selftest_check)5), "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_active),
		cmocka_unit_test(test_check_names),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
