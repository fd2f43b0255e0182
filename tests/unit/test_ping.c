/* SPDX-License-Identifier: MIT */
/* Ping over lo: the service answers with 0@lo first, the client validates and times out cleanly. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ulnet/ulnet.h"

static void ping_lo(void **state)
{
	struct ulnet_process_id tgt = { .pid = ULNET_PID_ANY };
	struct ulnet_ping_result res;
	struct ulnet_nid lo;
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_nid_parse("0@lo", &tgt.nid, NULL), 0);
	lo = tgt.nid;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ulnet_ping(node, &tgt, 2000, &res), 0);
		assert_int_equal(res.n_nids, 1);
		assert_true(ulnet_nid_equal(&res.nids[0].nid, &lo));
		assert_int_equal(res.pid, ULNET_PID_LUSTRE);
		assert_true(res.features & 0x02); /* NI_STATUS */
	}
	ulnet_node_close(node);
}

/* busy_poll_us: the loop and the pinging thread poll instead of sleeping; same answers. Past the
 * maximum the node does not open. */
static void ping_lo_busy_poll(void **state)
{
	struct ulnet_node_opts opts = { .busy_poll_us = 200 };
	struct ulnet_process_id tgt = { .pid = ULNET_PID_ANY };
	struct ulnet_ping_result res;
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_nid_parse("0@lo", &tgt.nid, NULL), 0);
	assert_int_equal(ulnet_node_open(&opts, &node), 0);
	for (int i = 0; i < 20; i++) {
		assert_int_equal(ulnet_ping(node, &tgt, 2000, &res), 0);
		assert_int_equal(res.n_nids, 1);
	}
	ulnet_node_close(node);
	opts.busy_poll_us = ULNET_BUSY_POLL_US_MAX + 1;
	assert_int_equal(ulnet_node_open(&opts, &node), -EINVAL);
}

/* loops: the node runs that many loop threads (stats and ulnet_node_loops say so) and answers as
 * with one; out of range, from the option or from ULNET_LOOPS, the node does not open. */
static void ping_lo_loops(void **state)
{
	struct ulnet_node_opts opts = { .loops = 3 };
	struct ulnet_process_id tgt = { .pid = ULNET_PID_ANY };
	struct ulnet_ping_result res;
	struct ulnet_stats st;
	ulnet_node *node;
	char *env = getenv("ULNET_LOOPS") ? strdup(getenv("ULNET_LOOPS")) : NULL;

	(void)state;
	assert_int_equal(ulnet_nid_parse("0@lo", &tgt.nid, NULL), 0);
	assert_int_equal(ulnet_node_open(&opts, &node), 0);
	assert_int_equal(ulnet_node_loops(node), 3);
	for (int i = 0; i < 20; i++)
		assert_int_equal(ulnet_ping(node, &tgt, 2000, &res), 0);
	ulnet_stats_get(node, &st);
	assert_int_equal(st.loops, 3);
	ulnet_node_close(node);
	opts.loops = ULNET_LOOPS_MAX + 1;
	assert_int_equal(ulnet_node_open(&opts, &node), -EINVAL);
	/* the environment sets the default only */
	setenv("ULNET_LOOPS", "2", 1);
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_node_loops(node), 2);
	ulnet_node_close(node);
	opts.loops = 1;
	assert_int_equal(ulnet_node_open(&opts, &node), 0);
	assert_int_equal(ulnet_node_loops(node), 1);
	ulnet_node_close(node);
	setenv("ULNET_LOOPS", "0", 1);
	assert_int_equal(ulnet_node_open(NULL, &node), -EINVAL);
	setenv("ULNET_LOOPS", "2x", 1);
	assert_int_equal(ulnet_node_open(NULL, &node), -EINVAL);
	if (env)
		setenv("ULNET_LOOPS", env, 1);
	else
		unsetenv("ULNET_LOOPS");
	free(env);
}

static void ping_local_any_dest_pid(void **state)
{
	struct ulnet_process_id tgt = { .pid = 4242 };
	struct ulnet_ping_result res;
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_nid_parse("0@lo", &tgt.nid, NULL), 0);
	/* dest_pid is not checked for local delivery (as LNet): the ping still succeeds */
	assert_int_equal(ulnet_ping(node, &tgt, 2000, &res), 0);
	ulnet_node_close(node);
}

static void ping_unreachable(void **state)
{
	struct ulnet_process_id tgt = { .pid = ULNET_PID_ANY };
	struct ulnet_ping_result res;
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_nid_parse("10.1.2.3@o2ib", &tgt.nid, NULL), 0);
	assert_int_equal(ulnet_ping(node, &tgt, 500, &res), -EHOSTUNREACH);
	assert_int_equal(ulnet_ping(node, &tgt, 0, &res), -EINVAL);
	ulnet_node_close(node);
}

static void ping_after_portal_busy(void **state)
{
	/* a user ME on portal 0 with other bits must not disturb the ping service */
	struct ulnet_process_id tgt = { .pid = ULNET_PID_ANY }, any = { .pid = ULNET_PID_ANY };
	struct ulnet_ping_result res;
	struct ulnet_handle me;
	ulnet_node *node;

	(void)state;
	any.nid = ulnet_nid_any();
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_me_attach(node, 0, &any, 1, 0, ULNET_UNLINK, ULNET_INS_BEFORE, &me), 0);
	assert_int_equal(ulnet_nid_parse("0@lo", &tgt.nid, NULL), 0);
	assert_int_equal(ulnet_ping(node, &tgt, 2000, &res), 0);
	assert_int_equal(ulnet_me_unlink(node, me), 0);
	assert_int_equal(ulnet_me_unlink(node, me), -ENOENT);
	ulnet_node_close(node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ping_lo),
		cmocka_unit_test(ping_lo_busy_poll),
		cmocka_unit_test(ping_lo_loops),
		cmocka_unit_test(ping_local_any_dest_pid),
		cmocka_unit_test(ping_unreachable),
		cmocka_unit_test(ping_after_portal_busy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
