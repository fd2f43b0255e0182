/* SPDX-License-Identifier: MIT */
/* socklnd HELLO policy (tcp_hello_policy.c) from tables: each row is what we know of the peer, its
 * HELLO and our side, and the action socklnd takes (lnet-wire.md §2.6). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include "lnd/tcp/tcp.h"

/* rows name only the fields they set */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
/* a row starts from a base (ACTIVE, PASSIVE, KNOWN) and overrides what it is about */
#pragma GCC diagnostic ignored "-Woverride-init"

#define BI TCPLND_CONN_BULK_IN
#define BO TCPLND_CONN_BULK_OUT
#define CT TCPLND_CONN_CONTROL
#define NONE TCPLND_CONN_NONE

struct row {
	const char *name;
	struct tcplnd_hello_facts f;
	enum tcplnd_hello_action want;
};

/* an active conn whose peer answered as asked: we asked BULK_IN, it says BULK_OUT, V3 both ways */
#define ACTIVE .passive = false, .same_net = true, .src_is_target = true, .offered_version = 3, \
	.hello_version = 3, .our_ctype = BI, .hello_ctype = BO
#define PASSIVE .passive = true, .same_net = true, .hello_version = 3, .hello_ctype = CT

static const struct row check_rows[] = {
	{ "active, all as asked", { ACTIVE }, TCPLND_HELLO_GO_ON },
	{ "active, other net", { ACTIVE, .same_net = false }, TCPLND_HELLO_WRONG_NET },
	{ "active, someone else answers", { ACTIVE, .src_is_target = false }, TCPLND_HELLO_WRONG_NID },
	{ "active, peer speaks V2", { ACTIVE, .hello_version = 2 }, TCPLND_HELLO_RETRY_VERSION },
	{ "active, version before ctype", { ACTIVE, .hello_version = 2, .hello_ctype = NONE },
	  TCPLND_HELLO_RETRY_VERSION },
	{ "active, NONE: lost the race", { ACTIVE, .hello_ctype = NONE }, TCPLND_HELLO_LOST_RACE },
	{ "active, ctype not mirrored", { ACTIVE, .hello_ctype = BI }, TCPLND_HELLO_BAD_CTYPE },
	{ "active, control mirrored", { ACTIVE, .our_ctype = CT, .hello_ctype = CT }, TCPLND_HELLO_GO_ON },
	{ "active, wrong nid before version", { ACTIVE, .src_is_target = false, .hello_version = 2 },
	  TCPLND_HELLO_WRONG_NID },
	{ "passive, control", { PASSIVE }, TCPLND_HELLO_GO_ON },
	{ "passive, bulk out", { PASSIVE, .hello_ctype = BO }, TCPLND_HELLO_GO_ON },
	{ "passive, NONE is not a request", { PASSIVE, .hello_ctype = NONE }, TCPLND_HELLO_BAD_CTYPE },
	{ "passive, garbage ctype", { PASSIVE, .hello_ctype = 7 }, TCPLND_HELLO_BAD_CTYPE },
	{ "passive, other net", { PASSIVE, .same_net = false }, TCPLND_HELLO_WRONG_NET },
	{ "passive, any version goes on", { PASSIVE, .hello_version = 1 }, TCPLND_HELLO_GO_ON },
};

/* a conn of a known peer, V3, incarnation 100, room for one more of its type */
#define KNOWN .peer_proto = 3, .peer_incarnation = 100, .hello_incarnation = 100, .conn_proto = 3, \
	.n_up = 0, .type_limit = 1

static const struct row admit_rows[] = {
	{ "new peer", { .passive = true, .conn_proto = 3, .hello_incarnation = 5, .type_limit = 1 },
	  TCPLND_HELLO_GO_ON },
	{ "known peer, same incarnation", { .passive = true, KNOWN }, TCPLND_HELLO_GO_ON },
	{ "race: lower NID while we connect", { .passive = true, KNOWN, .src_below_us = true,
						.peer_connecting = true }, TCPLND_HELLO_ANSWER_NONE_RACE },
	{ "race: higher NID while we connect", { .passive = true, KNOWN, .peer_connecting = true },
	  TCPLND_HELLO_GO_ON },
	{ "lower NID, we are not connecting", { .passive = true, KNOWN, .src_below_us = true },
	  TCPLND_HELLO_GO_ON },
	{ "active never answers a race", { .passive = false, KNOWN, .src_below_us = true, .peer_connecting = true },
	  TCPLND_HELLO_GO_ON },
	{ "race wins over restart", { .passive = true, KNOWN, .src_below_us = true, .peer_connecting = true,
				      .hello_incarnation = 101 }, TCPLND_HELLO_ANSWER_NONE_RACE },
	{ "restart: new incarnation", { .passive = true, KNOWN, .hello_incarnation = 101 },
	  TCPLND_HELLO_PEER_RESTARTED },
	{ "restart seen on an active conn", { .passive = false, KNOWN, .hello_incarnation = 1 },
	  TCPLND_HELLO_PEER_RESTARTED },
	{ "protocol changed", { .passive = true, KNOWN, .conn_proto = 2 }, TCPLND_HELLO_PEER_RESTARTED },
	{ "restart wins over duplicate", { .passive = true, KNOWN, .hello_incarnation = 7, .n_up = 1 },
	  TCPLND_HELLO_PEER_RESTARTED },
	{ "no peer proto yet: incarnation not compared", { .passive = true, KNOWN, .peer_proto = 0,
							   .hello_incarnation = 9 }, TCPLND_HELLO_GO_ON },
	{ "duplicate", { .passive = true, KNOWN, .n_up = 1 }, TCPLND_HELLO_DUPLICATE },
	{ "duplicate, active", { .passive = false, KNOWN, .n_up = 2, .type_limit = 2 }, TCPLND_HELLO_DUPLICATE },
	{ "room for a second bulk conn", { .passive = true, KNOWN, .n_up = 1, .type_limit = 2 },
	  TCPLND_HELLO_GO_ON },
};

static void run(const struct row *rows, size_t n,
		struct tcplnd_hello_verdict (*decide)(const struct tcplnd_hello_facts *))
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct tcplnd_hello_verdict v = decide(&rows[i].f);

		if (v.action != rows[i].want)
			fail_msg("%s: got %s, want %s", rows[i].name, tcplnd_hello_action_name(v.action),
				 tcplnd_hello_action_name(rows[i].want));
		assert_non_null(v.reason);
	}
}

static void test_check(void **state)
{
	(void)state;
	run(check_rows, sizeof(check_rows) / sizeof(check_rows[0]), tcplnd_hello_check);
}

static void test_admit(void **state)
{
	(void)state;
	run(admit_rows, sizeof(admit_rows) / sizeof(admit_rows[0]), tcplnd_hello_admit);
}

static void test_accept_policy(void **state)
{
	static const struct {
		int policy;
		unsigned port;
		bool want;
	} rows[] = {
		{ TCPLND_ACCEPT_ALL, 1023, true },   { TCPLND_ACCEPT_ALL, 40000, true },
		{ TCPLND_ACCEPT_SECURE, 988, true }, { TCPLND_ACCEPT_SECURE, 1023, true },
		{ TCPLND_ACCEPT_SECURE, 1024, false }, { TCPLND_ACCEPT_SECURE, 65535, false },
		{ TCPLND_ACCEPT_NONE, 988, false },  { TCPLND_ACCEPT_NONE, 40000, false },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (tcplnd_accept_allows(rows[i].policy, rows[i].port) != rows[i].want)
			fail_msg("accept=%d port %u: want %d", rows[i].policy, rows[i].port, rows[i].want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_admit),
		cmocka_unit_test(test_accept_policy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
