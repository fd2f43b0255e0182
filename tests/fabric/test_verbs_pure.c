/* SPDX-License-Identifier: MIT */
/* The verbs provider's pure policies, table-tested: limits in force, the QP shrink step, the
 * memlock line, completion statuses and region spans. Runs without an RDMA device. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "verbs.h"

/* rxe as measured in testbed-notes §7, on a 64 KiB-page kernel */
static const struct fab_limits rxe64k = {
	.max_send_sge = 32, .max_recv_sge = 32, .max_qp_wr = 1048576, .max_qp = 1048576, .max_mr = 262144,
	.max_mr_size = UINT64_MAX, .max_msg_sz = 8u << 20, .page_size = 65536,
};
/* a small HCA (mlx4/router-like) on a 4 KiB-page kernel */
static const struct fab_limits small4k = {
	.max_send_sge = 1, .max_recv_sge = 1, .max_qp_wr = 16, .max_qp = 64, .max_mr = 128,
	.max_mr_size = 1 << 20, .max_msg_sz = 4096, .page_size = 4096,
};

struct clamp_case {
	const char *name;
	const struct fab_limits *dev;
	const char *key;     /* the NI's device: key (NULL: none set) */
	uint64_t value;
	int rc;
	uint64_t want_sge, want_qp_wr, want_page; /* rc == 0 */
	const char *why[3];  /* rc != 0: substrings of the log line */
};

static const struct clamp_case clamp_cases[] = {
	{"nothing set: the device's own (rxe)", &rxe64k, NULL, 0, 0, 32, 1048576, 65536, {0}},
	{"nothing set: the device's own (small)", &small4k, NULL, 0, 0, 1, 16, 4096, {0}},
	{"NI shrinks sge", &rxe64k, "max_send_sge", 1, 0, 1, 1048576, 65536, {0}},
	{"NI shrinks qp_wr", &rxe64k, "max_qp_wr", 16, 0, 32, 16, 65536, {0}},
	{"NI asks equal", &small4k, "max_qp_wr", 16, 0, 1, 16, 4096, {0}},
	{"NI asks more sge than the device", &small4k, "max_send_sge", 2, -EINVAL, 0, 0, 0,
	 {"max_send_sge is 1", "asks 2", "lnd tunable device: max_send_sge"}},
	{"NI asks more qp_wr", &small4k, "max_qp_wr", 32, -EINVAL, 0, 0, 0, {"max_qp_wr is 16", "asks 32", "lower it"}},
	{"NI asks 64K pages on a 4K kernel", &small4k, "page_size", 65536, -EINVAL, 0, 0, 0,
	 {"page_size is 4096", "asks 65536", "match it"}},
	{"NI asks 8K pages on a 64K kernel", &rxe64k, "page_size", 8192, -EINVAL, 0, 0, 0, {"page_size is 65536"}},
	{"NI names the kernel's page size", &rxe64k, "page_size", 65536, 0, 32, 1048576, 65536, {0}},
};

static void run_clamp_case(void **state)
{
	const struct clamp_case *c = *state;
	struct fab_limits asked, out = {0};
	struct ulnet_kv kv[1];
	char v[32], why[256] = "";

	fab_limits_default(&asked);
	if (c->key) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)c->value);
		kv[0] = (struct ulnet_kv){c->key, v};
		assert_int_equal(fab_limits_parse(kv, 1, &asked), 0);
	}
	assert_int_equal(vrb_limits_clamp(c->dev, &asked, &out, why, sizeof(why)), c->rc);
	if (c->rc) {
		for (int i = 0; i < 3 && c->why[i]; i++)
			if (!strstr(why, c->why[i]))
				fail_msg("'%s' not in '%s'", c->why[i], why);
		return;
	}
	assert_int_equal(out.max_send_sge, c->want_sge);
	assert_int_equal(out.max_qp_wr, c->want_qp_wr);
	assert_int_equal(out.page_size, c->want_page);
	assert_int_equal(out.max_mr_size, c->dev->max_mr_size);
}

static void test_qp_shrink(void **state)
{
	static const struct {
		struct fab_qp_attr asked, from, next;
		bool more;
	} cases[] = {
		{{530, 34}, {530, 34}, {398, 34}, true},
		{{530, 34}, {398, 34}, {299, 34}, true},
		{{530, 34}, {3, 34}, {2, 34}, true},   /* at least one less */
		{{530, 34}, {2, 34}, {2, 34}, false},  /* the floor: nothing left */
		{{1, 1}, {1, 1}, {1, 1}, false},       /* asked below the floor */
		{{8, 520}, {8, 520}, {6, 520}, true},  /* the receive queue never shrinks */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fab_qp_attr a = cases[i].from;

		assert_int_equal(vrb_qp_shrink(&a, &cases[i].asked), cases[i].more);
		assert_int_equal(a.max_send_wr, cases[i].next.max_send_wr);
		assert_int_equal(a.max_recv_wr, cases[i].next.max_recv_wr);
	}
}

static void test_memlock_msg(void **state)
{
	char buf[400];

	(void)state;
	vrb_memlock_msg(buf, sizeof(buf), 64 * 1024, 60 * 1024, 1 << 20);
	assert_non_null(strstr(buf, "ulimit -l 64 KiB"));
	assert_non_null(strstr(buf, "60 KiB registered"));
	assert_non_null(strstr(buf, "at least 1084 KiB"));
	assert_non_null(strstr(buf, "1048576 bytes"));
	assert_non_null(strstr(buf, "CAP_IPC_LOCK"));
}

static void test_wc_status(void **state)
{
	static const struct { enum ibv_wc_status in; enum fab_wc_status out; } cases[] = {
		{IBV_WC_SUCCESS, FAB_WC_SUCCESS}, {IBV_WC_LOC_LEN_ERR, FAB_WC_LOC_LEN_ERR},
		{IBV_WC_LOC_PROT_ERR, FAB_WC_LOC_PROT_ERR}, {IBV_WC_WR_FLUSH_ERR, FAB_WC_WR_FLUSH_ERR},
		{IBV_WC_REM_ACCESS_ERR, FAB_WC_REM_ACCESS_ERR}, {IBV_WC_REM_OP_ERR, FAB_WC_REM_OP_ERR},
		{IBV_WC_REM_INV_REQ_ERR, FAB_WC_REM_OP_ERR}, {IBV_WC_RETRY_EXC_ERR, FAB_WC_RETRY_EXC_ERR},
		{IBV_WC_RNR_RETRY_EXC_ERR, FAB_WC_RETRY_EXC_ERR}, {IBV_WC_LOC_QP_OP_ERR, FAB_WC_FATAL_ERR},
		{IBV_WC_GENERAL_ERR, FAB_WC_FATAL_ERR},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(vrb_wc_status(cases[i].in), cases[i].out);
}

static void test_ranges_span(void **state)
{
	static char buf[3 * 4096];
	const struct iovec pages[] = {{buf + 100, 3996}, {buf + 4096, 4096}, {buf + 8192, 1}};
	const struct iovec gap[] = {{buf, 100}, {buf + 200, 100}};
	const struct iovec backwards[] = {{buf + 4096, 10}, {buf, 4096}};
	uint64_t base, len;

	(void)state;
	assert_true(vrb_ranges_span(pages, 3, &base, &len));
	assert_int_equal(base, (uint64_t)(uintptr_t)(buf + 100));
	assert_int_equal(len, 3996 + 4096 + 1);
	assert_true(vrb_ranges_span(pages + 1, 1, &base, &len));
	assert_int_equal(len, 4096);
	assert_false(vrb_ranges_span(gap, 2, &base, &len));
	assert_false(vrb_ranges_span(backwards, 2, &base, &len));
}

int main(void)
{
	struct CMUnitTest tests[sizeof(clamp_cases) / sizeof(clamp_cases[0]) + 4];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(clamp_cases) / sizeof(clamp_cases[0]); i++)
		tests[n++] = (struct CMUnitTest){.name = clamp_cases[i].name, .test_func = run_clamp_case,
						 .initial_state = (void *)&clamp_cases[i]};
	tests[n++] = (struct CMUnitTest){.name = "QP shrink step", .test_func = test_qp_shrink};
	tests[n++] = (struct CMUnitTest){.name = "memlock line", .test_func = test_memlock_msg};
	tests[n++] = (struct CMUnitTest){.name = "completion status", .test_func = test_wc_status};
	tests[n++] = (struct CMUnitTest){.name = "region span", .test_func = test_ranges_span};
	return _cmocka_run_group_tests("verbs_pure", tests, n, NULL, NULL);
}
