/* SPDX-License-Identifier: MIT */
/* Routes: the ranking and the judgement of a gateway's ping reply (pure, tables), the table's
 * checks, and the next hop a Put takes (the scripted LND records what it is asked to send). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>
#include "tst_lnd.h"
#include "tst_owner.h"

#define UNK INT_MIN
static void test_rank_table(void **state)
{
	static const struct {
		struct ulnet_route_rank a, b;
		bool a_better;
	} t[] = {
		/* up first, whatever else */
		{ { true, 9, 9, 0, 9 }, { false, 0, 1, 8, 0 }, true },
		{ { false, 0, 1, 8, 0 }, { true, 9, 9, 0, 9 }, false },
		/* then lower priority */
		{ { true, 0, 5, 0, 9 }, { true, 1, 1, 8, 0 }, true },
		/* then fewer hops; unknown (-1) ranks as 1 */
		{ { true, 0, 1, 0, 9 }, { true, 0, 2, 8, 0 }, true },
		{ { true, 0, -1, 0, 9 }, { true, 0, 2, 8, 0 }, true },
		{ { true, 0, -1, 0, 9 }, { true, 0, 1, 0, 0 }, false }, /* equal: older use wins */
		/* then more credits, when both are known */
		{ { true, 0, 1, 5, 9 }, { true, 0, 1, 4, 0 }, true },
		{ { true, 0, 1, UNK, 9 }, { true, 0, 1, 4, 0 }, false }, /* unknown: round robin */
		{ { true, 0, 1, 5, 1 }, { true, 0, 1, UNK, 2 }, true },
		/* then least recently used */
		{ { true, 0, 1, 3, 1 }, { true, 0, 1, 3, 2 }, true },
		{ { true, 0, 1, 3, 2 }, { true, 0, 1, 3, 1 }, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		print_message("row %zu\n", i);
		assert_int_equal(ulnet__route_better(&t[i].a, &t[i].b), t[i].a_better);
	}
}

static struct ulnet_nid nid_of(const char *s)
{
	struct ulnet_nid n;

	assert_int_equal(ulnet_nid_parse(s, &n, NULL), 0);
	return n;
}

static void test_judge_table(void **state)
{
	/* features: BASE 0x01, NI_STATUS 0x02, RTE_DISABLED 0x04; status: UP 0x15aac0de, DOWN 0xdeadface */
	static const struct {
		const char *net;
		uint32_t features;
		const char *nids[3];
		uint32_t status[3];
		uint32_t sensitivity;
		enum ulnet_route_down want;
		bool multi_hop;
	} t[] = {
		{ "o2ib", 0x01 | 0x02, { "0@lo", "10.0.0.1@tcp", "10.0.0.2@o2ib" }, { 0, 0x15aac0de, 0x15aac0de }, 100, ULNET_ROUTE_OK, false },
		/* routing disabled on the gateway */
		{ "o2ib", 0x01 | 0x02 | 0x04, { "0@lo", "10.0.0.1@tcp", "10.0.0.2@o2ib" }, { 0, 0x15aac0de, 0x15aac0de }, 100,
		  ULNET_ROUTE_GW_NOT_ROUTING, false },
		/* its NI on the net is down */
		{ "o2ib", 0x01 | 0x02, { "0@lo", "10.0.0.1@tcp", "10.0.0.2@o2ib" }, { 0, 0x15aac0de, 0xdeadface }, 100,
		  ULNET_ROUTE_GW_NET_DOWN, false },
		/* no NI on the net: further on, judged by the answer */
		{ "o2ib9", 0x01 | 0x02, { "0@lo", "10.0.0.1@tcp", "10.0.0.2@o2ib" }, { 0, 0x15aac0de, 0x15aac0de }, 100, ULNET_ROUTE_OK,
		  true },
		/* no NI_STATUS: nothing said of the NIs, taken as up */
		{ "o2ib", 0x01, { "0@lo", "10.0.0.1@tcp", "10.0.0.2@o2ib" }, { 0, 0, 0 }, 100, ULNET_ROUTE_OK, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ulnet_nid nids[3];
		uint32_t net;
		bool multi;

		print_message("row %zu\n", i);
		for (int k = 0; k < 3; k++)
			nids[k] = nid_of(t[i].nids[k]);
		assert_int_equal(ulnet_net_parse(t[i].net, &net, NULL), 0);
		assert_int_equal(ulnet__route_judge(net, t[i].features, nids, t[i].status, 3, t[i].sensitivity, &multi),
				 t[i].want);
		assert_int_equal(multi, t[i].multi_hop);
	}
}

/* Sensitivity: the share of the gateway's NIs on the net that must be up. */
static void test_judge_sensitivity(void **state)
{
	struct ulnet_nid nids[4] = { nid_of("0@lo"), nid_of("10.0.0.1@o2ib"), nid_of("10.0.0.2@o2ib"), nid_of("10.0.0.3@o2ib") };
	const uint32_t st[4] = { 0, ULNET_NI_STATUS_UP, 0xdeadfaceu, ULNET_NI_STATUS_UP };
	const uint32_t none_up[4] = { 0, 0xdeadfaceu, 0xdeadfaceu, 0xdeadfaceu };
	uint32_t net = ulnet_nid_net(&nids[1]);
	bool multi;

	(void)state;
	assert_int_equal(ulnet__route_judge(net, 3, nids, st, 4, 100, &multi), ULNET_ROUTE_GW_NET_DOWN);
	assert_int_equal(ulnet__route_judge(net, 3, nids, st, 4, 67, &multi), ULNET_ROUTE_GW_NET_DOWN);
	assert_int_equal(ulnet__route_judge(net, 3, nids, st, 4, 66, &multi), ULNET_ROUTE_OK);
	assert_int_equal(ulnet__route_judge(net, 3, nids, st, 4, 0, &multi), ULNET_ROUTE_OK);
	/* at least one up, whatever the sensitivity */
	assert_int_equal(ulnet__route_judge(net, 3, nids, none_up, 4, 0, &multi), ULNET_ROUTE_GW_NET_DOWN);
}

struct fixture {
	ulnet_node *node;
	ulnet_eq *eq;
	struct ulnet_handle mdh;
	char buf[64];
};

/* One loop, NIs 1@gni and 1@gni1, no checker (it would ping through the scripted LND). */
static void fx_open(struct fixture *f)
{
	struct ulnet_node_opts opts = { .loops = 1 };
	struct ulnet_ni_conf a = { .net = "gni", .nid = "1@gni" }, b = { .net = "gni1", .nid = "1@gni1" };
	struct ulnet_routing_conf rc;
	struct ulnet_md md = { 0 };

	memset(&tst, 0, sizeof(tst));
	tst_register();
	assert_int_equal(ulnet_node_open(&opts, &f->node), 0);
	assert_int_equal(ulnet_ni_add(f->node, &a), 0);
	assert_int_equal(ulnet_ni_add(f->node, &b), 0);
	ulnet_routing_get(f->node, &rc);
	rc.check_interval = 0;
	assert_int_equal(ulnet_routing_set(f->node, &rc), 0);
	assert_int_equal(ulnet_eq_create(&f->eq), 0);
	md.start = f->buf;
	md.length = sizeof(f->buf);
	md.threshold = ULNET_MD_THRESH_INF;
	md.eq = f->eq;
	assert_int_equal(ulnet_md_bind(f->node, &md, ULNET_RETAIN, &f->mdh), 0);
}

static void fx_close(struct fixture *f)
{
	struct ulnet_event ev;

	ulnet_node_close(f->node);
	while (ulnet_eq_wait(f->eq, 0, &ev) == 1)
		;
	assert_int_equal(ulnet_eq_destroy(f->eq), 0);
}

static int add(struct fixture *f, const char *net, const char *gw, int hops, uint32_t prio)
{
	struct ulnet_route_conf c = { .net = net, .gateway = gw, .hops = hops, .priority = prio, .health_sensitivity = 1 };

	return ulnet_route_add(f->node, &c);
}

static void test_table_checks(void **state)
{
	struct fixture f;
	struct ulnet_route_info ri;

	(void)state;
	fx_open(&f);
	assert_int_equal(add(&f, "tcp7", "2@gni", -1, 0), 0);
	assert_int_equal(add(&f, "tcp7", "2@gni", 3, 1), -EEXIST);
	assert_int_equal(add(&f, "gni1", "2@gni", -1, 0), -ELOOP);   /* a local net */
	assert_int_equal(add(&f, "tcp8", "1@gni", -1, 0), -ELOOP);   /* ourselves */
	assert_int_equal(add(&f, "tcp8", "2@gni5", -1, 0), -EHOSTUNREACH);
	assert_int_equal(add(&f, "tcp8", "2@gni", 0, 0), -EINVAL);
	assert_int_equal(add(&f, "tcp8", "2@gni", 256, 0), -EINVAL);
	assert_int_equal(add(&f, "nonsense!", "2@gni", -1, 0), -EINVAL);
	assert_int_equal(add(&f, "tcp8", "2@@gni", -1, 0), -EINVAL);
	assert_int_equal(add(&f, "tcp8", "3@gni1", 2, 5), 0);
	assert_int_equal(ulnet_route_info_get(f.node, 1, &ri), 0);
	assert_string_equal(ri.net, "tcp8");
	assert_int_equal(ri.hops, 2);
	assert_int_equal(ri.priority, 5);
	assert_true(ri.up);
	assert_int_equal(ri.checked_ago_ms, UINT64_MAX);
	assert_int_equal(ulnet_route_info_get(f.node, 2, &ri), -ENOENT);
	assert_int_equal(ulnet_route_del(f.node, "tcp9", NULL), -ENOENT);
	assert_int_equal(ulnet_route_del(f.node, NULL, "3@gni1"), 1);
	assert_int_equal(ulnet_route_del(f.node, "tcp7", NULL), 1);
	assert_int_equal(ulnet_route_info_get(f.node, 0, &ri), -ENOENT);
	fx_close(&f);
}

/* Put to @to and return the next hop the LND was asked to send to (the header names @to). */
static struct ulnet_nid put_hop(struct fixture *f, const char *to)
{
	struct ulnet_process_id t = { .nid = nid_of(to), .pid = ULNET_PID_LUSTRE };
	unsigned n = tst.nsent;
	struct ulnet_nid hop;

	assert_int_equal(ulnet_put(f->node, f->mdh, ULNET_NOACK_REQ, &t, 4, 0, 0, 0), 0);
	/* the loop sends it: wait for the scripted LND to have it */
	for (int i = 0; i < 2000; i++) {
		struct ulnet_ni *ni = tst_first_ni(f->node);
		bool got;

		tst_enter(ni);
		got = tst.nsent > n;
		tst_exit(ni);
		if (got)
			break;
		usleep(1000);
	}
	assert_true(tst.nsent > n);
	tst_enter(tst_first_ni(f->node));
	assert_true(ulnet_nid_equal(&ulnet__msg_view(tst.sent[n])->hdr.dest_nid, &t.nid));
	hop = ulnet__msg_view(tst.sent[n])->target.nid;
	ulnet__finalize(tst.sent[n], 0);
	tst_exit(tst_first_ni(f->node));
	return hop;
}

static void mark_down(struct fixture *f, unsigned idx, bool down)
{
	tst_world_stop(f->node, NULL);
	atomic_store(&f->node->routes[idx]->down, down ? ULNET_ROUTE_NO_ANSWER : ULNET_ROUTE_OK);
	tst_world_go(f->node);
}

/* Priority first, round robin among equals, a route that is down skipped, none up: unreachable. */
static void test_next_hop(void **state)
{
	struct fixture f;
	struct ulnet_nid a = nid_of("2@gni"), b = nid_of("3@gni1"), c = nid_of("4@gni"), h1, h2;
	struct ulnet_route_info ri;
	struct ulnet_event ev;

	(void)state;
	fx_open(&f);
	assert_int_equal(add(&f, "tcp7", "2@gni", -1, 0), 0);
	assert_int_equal(add(&f, "tcp7", "3@gni1", 1, 0), 0);
	assert_int_equal(add(&f, "tcp7", "4@gni", 1, 1), 0); /* lower priority: last resort */
	/* a local net: direct, never through a gateway */
	h1 = put_hop(&f, "9@gni1");
	{
		struct ulnet_nid direct = nid_of("9@gni1");

		assert_true(ulnet_nid_equal(&h1, &direct));
	}
	/* the two priority-0 routes in turn */
	h1 = put_hop(&f, "10.0.0.5@tcp7");
	h2 = put_hop(&f, "10.0.0.6@tcp7");
	assert_true((ulnet_nid_equal(&h1, &a) && ulnet_nid_equal(&h2, &b)) ||
		    (ulnet_nid_equal(&h1, &b) && ulnet_nid_equal(&h2, &a)));
	h1 = put_hop(&f, "10.0.0.5@tcp7");
	h2 = put_hop(&f, "10.0.0.5@tcp7");
	assert_false(ulnet_nid_equal(&h1, &h2));
	/* one down: the other only */
	mark_down(&f, 0, true);
	for (int i = 0; i < 3; i++) {
		h1 = put_hop(&f, "10.0.0.5@tcp7");
		assert_true(ulnet_nid_equal(&h1, &b));
	}
	/* both down: the priority-1 route */
	mark_down(&f, 1, true);
	h1 = put_hop(&f, "10.0.0.5@tcp7");
	assert_true(ulnet_nid_equal(&h1, &c));
	assert_int_equal(ulnet_route_info_get(f.node, 2, &ri), 0);
	assert_int_equal(ri.send_count, 1);
	assert_int_equal(ri.send_length, sizeof(f.buf));
	/* every route down: the Put fails with its SEND event */
	mark_down(&f, 2, true);
	{
		struct ulnet_process_id t = { .nid = nid_of("10.0.0.5@tcp7"), .pid = ULNET_PID_LUSTRE };

		while (ulnet_eq_wait(f.eq, 0, &ev) == 1)
			;
		assert_int_equal(ulnet_put(f.node, f.mdh, ULNET_NOACK_REQ, &t, 4, 0, 0, 0), 0);
		assert_int_equal(ulnet_eq_wait(f.eq, 2000, &ev), 1);
		assert_int_equal(ev.type, ULNET_EVENT_SEND);
		assert_int_equal(ev.status, -EHOSTUNREACH);
	}
	fx_close(&f);
}

/* The ping reply says whether the node routes. */
static void test_ping_says_routing(void **state)
{
	struct ulnet_process_id lo = { .nid = nid_of("0@lo"), .pid = ULNET_PID_ANY };
	struct ulnet_ping_result res;
	struct ulnet_routing_conf rc;
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_ping(node, &lo, 2000, &res), 0);
	assert_true(res.features & ULNET_PING_FEAT_RTE_DISABLED);
	ulnet_routing_get(node, &rc);
	rc.enable = true;
	assert_int_equal(ulnet_routing_set(node, &rc), 0);
	assert_int_equal(ulnet_ping(node, &lo, 2000, &res), 0);
	assert_false(res.features & ULNET_PING_FEAT_RTE_DISABLED);
	assert_true(res.features & ULNET_PING_FEAT_NI_STATUS);
	rc.sensitivity = 101;
	assert_int_equal(ulnet_routing_set(node, &rc), -EINVAL);
	rc.sensitivity = 100;
	rc.memory_max = 4096; /* below one large buffer */
	assert_int_equal(ulnet_routing_set(node, &rc), -EINVAL);
	ulnet_node_close(node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rank_table),
		cmocka_unit_test(test_judge_table),
		cmocka_unit_test(test_judge_sensitivity),
		cmocka_unit_test(test_table_checks),
		cmocka_unit_test(test_next_hop),
		cmocka_unit_test(test_ping_says_routing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
