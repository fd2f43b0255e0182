/* SPDX-License-Identifier: MIT */
/* The fabric layer's pure parts, table-tested: device limits parser, provider choice, and (shm) the
 * region segment translation and the EPERM log line. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "config.h"
#include "fabric.h"
#ifdef ULNET_HAVE_FABRIC_SHM
#include "shm.h"
#endif

struct limits_case {
	const char *name;
	struct ulnet_kv kv[3];
	size_t n;
	int rc;
	const char *field; /* the limit that must change (rc == 0) */
	uint64_t want;
};

static const struct limits_case limits_cases[] = {
	{"mlx4-like sge 1", {{"max_send_sge", "1"}}, 1, 0, "max_send_sge", 1},
	{"prefixed key", {{"device.max_qp_wr", "16"}}, 1, 0, "max_qp_wr", 16},
	{"hex value", {{"max_mr_size", "0x100000"}}, 1, 0, "max_mr_size", 0x100000},
	{"64 KiB pages", {{"page_size", "65536"}}, 1, 0, "page_size", 65536},
	{"max_msg_sz minimum", {{"max_msg_sz", "256"}}, 1, 0, "max_msg_sz", 256},
	{"copy thread on", {{"device.copy_thread", "1"}}, 1, 0, "copy_thread", 1},
	{"copy thread 2", {{"copy_thread", "2"}}, 1, -EINVAL, NULL, 0},
	{"allow a uid", {{"device.allow_uid", "1001"}}, 1, 0, "allow_uid", 1001},
	{"allow root", {{"allow_uid", "0"}}, 1, 0, "allow_uid", 0},
	{"allow no uid (-1)", {{"allow_uid", "1001"}, {"allow_uid", "-1"}}, 2, 0, "allow_uid", FAB_ALLOW_NONE},
	{"allow a group", {{"allow_gid", "100"}}, 1, 0, "allow_gid", 100},
	{"allow uid -2", {{"allow_uid", "-2"}}, 1, -EINVAL, NULL, 0},
	{"allow uid 2^32-1 (means none)", {{"allow_uid", "4294967295"}}, 1, -EINVAL, NULL, 0},
	{"zero sge", {{"max_send_sge", "0"}}, 1, -EINVAL, NULL, 0},
	{"negative", {{"max_qp_wr", "-1"}}, 1, -EINVAL, NULL, 0},
	{"over range", {{"max_qp_wr", "65537"}}, 1, -EINVAL, NULL, 0},
	{"not a number", {{"max_recv_sge", "two"}}, 1, -EINVAL, NULL, 0},
	{"trailing junk", {{"max_recv_sge", "2x"}}, 1, -EINVAL, NULL, 0},
	{"empty", {{"max_recv_sge", ""}}, 1, -EINVAL, NULL, 0},
	{"page not power of two", {{"page_size", "12288"}}, 1, -EINVAL, NULL, 0},
	{"unknown key", {{"max_sge", "2"}}, 1, -EINVAL, NULL, 0},
	{"no value", {{"max_qp", NULL}}, 1, -EINVAL, NULL, 0},
	{"second bad: nothing applied", {{"max_send_sge", "2"}, {"max_mr", "65536"}}, 2, -EINVAL, NULL, 0},
};

static uint64_t limit_get(const struct fab_limits *l, const char *f)
{
	if (!strcmp(f, "max_send_sge")) return l->max_send_sge;
	if (!strcmp(f, "max_recv_sge")) return l->max_recv_sge;
	if (!strcmp(f, "max_qp_wr")) return l->max_qp_wr;
	if (!strcmp(f, "max_mr_size")) return l->max_mr_size;
	if (!strcmp(f, "max_msg_sz")) return l->max_msg_sz;
	if (!strcmp(f, "page_size")) return l->page_size;
	if (!strcmp(f, "copy_thread")) return l->copy_thread;
	if (!strcmp(f, "allow_uid")) return l->allow_uid;
	if (!strcmp(f, "allow_gid")) return l->allow_gid;
	fail_msg("unknown field %s", f);
	return 0;
}

static void run_limits_case(void **state)
{
	const struct limits_case *c = *state;
	struct fab_limits def, lim;

	fab_limits_default(&def);
	lim = def;
	assert_int_equal(fab_limits_parse(c->kv, c->n, &lim), c->rc);
	if (c->rc) {
		assert_memory_equal(&lim, &def, sizeof(lim)); /* unchanged on error */
		return;
	}
	assert_int_equal(limit_get(&lim, c->field), c->want);
}

static void test_provider_choose(void **state)
{
	static const struct {
		const char *req;
		bool rdma;
		const char *want;
		int err;
	} rows[] = {
		{NULL, false, "shm", 0}, {NULL, true, "verbs", 0}, {"shm", true, "shm", 0},
		{"verbs", false, "verbs", 0}, {"psm2", false, NULL, -EINVAL}, {"", false, NULL, -EINVAL},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int err = 1;
		const char *got = fab_provider_choose(rows[i].req, rows[i].rdma, &err);

		assert_int_equal(err, rows[i].err);
		if (rows[i].want)
			assert_string_equal(got, rows[i].want);
		else
			assert_null(got);
	}
}

static void test_provider_select(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7fdc0001)};
	const struct fab_provider_ops *ops = NULL;

	(void)state;
#ifdef ULNET_HAVE_FABRIC_VERBS
	assert_int_equal(fab_provider_select("verbs", &a, &ops), 0);
	assert_string_equal(ops->name, "verbs");
#else
	/* verbs is not built: a clear -EPROTONOSUPPORT, whether asked for or chosen */
	assert_int_equal(fab_provider_select("verbs", &a, &ops), -EPROTONOSUPPORT);
#endif
	assert_int_equal(fab_provider_select("bogus", &a, &ops), -EINVAL);
#ifdef ULNET_HAVE_FABRIC_SHM
	assert_int_equal(fab_provider_select("shm", &a, &ops), 0);
	assert_string_equal(ops->name, "shm");
	if (!fab_rdma_dev_serves(&a)) {
		ops = NULL;
		assert_int_equal(fab_provider_select(NULL, &a, &ops), 0);
		assert_string_equal(ops->name, "shm");
	}
#endif
}

/* Device-by-address: the port whose netdev holds the address, from a given probe result. */
static const struct fab_rdma_scan scan_fixture = {
	.ports = {{"mlx5_0", 1, "ib0"}, {"mlx5_0", 2, ""}, {"rxe0", 1, "eth0"}, {"rxe1", 1, "eth1"}},
	.nports = 4,
	.ifs = {{"lo", {0}}, {"eth0", {0}}, {"eth0", {0}}, {"ib0", {0}}},
	.nifs = 4,
};

static struct fab_rdma_scan scan_with_addrs(void)
{
	struct fab_rdma_scan s = scan_fixture;

	inet_pton(AF_INET, "127.0.0.1", &s.ifs[0].addr);
	inet_pton(AF_INET, "192.168.77.1", &s.ifs[1].addr);
	inet_pton(AF_INET, "10.9.0.1", &s.ifs[2].addr);
	inet_pton(AF_INET, "172.16.0.5", &s.ifs[3].addr);
	return s;
}

static void test_rdma_port_for_addr(void **state)
{
	static const struct { const char *addr; int port; } cases[] = {
		{"192.168.77.1", 2}, {"10.9.0.1", 2}, /* rxe0 on eth0, either address */
		{"172.16.0.5", 0},                    /* mlx5_0 port 1 on ib0 */
		{"127.0.0.1", -1},                    /* lo: no RDMA port */
		{"192.168.77.2", -1},                 /* not a local address */
	};
	struct fab_rdma_scan s = scan_with_addrs(), none = {0};
	struct in_addr a;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		inet_pton(AF_INET, cases[i].addr, &a);
		assert_int_equal(fab_rdma_port_for_addr(&s, a), cases[i].port);
		assert_int_equal(fab_rdma_port_for_addr(&none, a), -1);
	}
}

static void test_rdma_describe(void **state)
{
	struct fab_rdma_scan s = scan_with_addrs(), none = {0};
	char buf[512], tiny[24];

	(void)state;
	fab_rdma_describe(&s, buf, sizeof(buf));
	assert_string_equal(buf, "mlx5_0 port 1 (ib0 172.16.0.5), mlx5_0 port 2 (no netdev), "
				 "rxe0 port 1 (eth0 192.168.77.1 10.9.0.1), rxe1 port 1 (eth1, no IPv4)");
	fab_rdma_describe(&none, buf, sizeof(buf));
	assert_string_equal(buf, "none");
	fab_rdma_describe(&s, tiny, sizeof(tiny)); /* truncated, still terminated */
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
}

#ifdef ULNET_HAVE_FABRIC_SHM
static void test_iov_slice(void **state)
{
	const struct iovec segs[] = {{(void *)1000, 100}, {(void *)5000, 50}, {(void *)9000, 10}};
	struct iovec iov[4];

	(void)state;
	assert_int_equal(shm_iov_slice(segs, 3, 0, 160, iov, 4), 3);
	assert_int_equal((uintptr_t)iov[0].iov_base, 1000);
	assert_int_equal(iov[2].iov_len, 10);
	assert_int_equal(shm_iov_slice(segs, 3, 90, 20, iov, 4), 2);
	assert_int_equal((uintptr_t)iov[0].iov_base, 1090);
	assert_int_equal(iov[0].iov_len, 10);
	assert_int_equal((uintptr_t)iov[1].iov_base, 5000);
	assert_int_equal(iov[1].iov_len, 10);
	assert_int_equal(shm_iov_slice(segs, 3, 150, 10, iov, 4), 1);
	assert_int_equal((uintptr_t)iov[0].iov_base, 9000);
	assert_int_equal(shm_iov_slice(segs, 3, 150, 11, iov, 4), -1); /* past the end */
	assert_int_equal(shm_iov_slice(segs, 3, 0, 160, iov, 2), -1);  /* too many pieces */
}

/* Ranges that touch are joined into one segment; others stay apart, in order. */
static void test_seg_join(void **state)
{
	static const struct {
		struct iovec in[4];
		unsigned n, want;
		struct shm_seg out[4];
	} t[] = {
		{{{(void *)4096, 4096}}, 1, 1, {{4096, 4096}}},
		{{{(void *)4096, 4096}, {(void *)8192, 4096}, {(void *)12288, 100}}, 3, 1, {{4096, 8292}}},
		{{{(void *)4096, 4096}, {(void *)8193, 10}, {(void *)8203, 5}}, 3, 2, {{4096, 4096}, {8193, 15}}},
		{{{(void *)8192, 10}, {(void *)4096, 10}, {(void *)4106, 10}, {(void *)9000, 1}}, 4, 3,
		 {{8192, 10}, {4096, 20}, {9000, 1}}}, /* order kept, only neighbours in the list join */
	};
	struct shm_seg out[4];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(shm_seg_count(t[i].in, t[i].n), t[i].want);
		shm_seg_fill(t[i].in, t[i].n, out);
		for (unsigned k = 0; k < t[i].want; k++) {
			assert_int_equal(out[k].base, t[i].out[k].base);
			assert_int_equal(out[k].len, t[i].out[k].len);
		}
	}
}

static void test_eperm_msg(void **state)
{
	char buf[512];

	(void)state;
	fab_shm_eperm_msg(buf, sizeof(buf), 42, "2", "kernel.yama.ptrace_scope=2; this node called prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)");
	assert_non_null(strstr(buf, "pid 42"));
	assert_non_null(strstr(buf, "kernel.yama.ptrace_scope=2"));
	assert_non_null(strstr(buf, "PR_SET_PTRACER"));
	fab_shm_eperm_msg(buf, sizeof(buf), 42, NULL, "no Yama");
	assert_non_null(strstr(buf, "(no Yama)"));
}

/* Who may connect to an shm device (shm_cred_allowed): its own uid, allow_uid, allow_gid as the
 * primary or a supplementary group; nobody else. */
static void test_cred_rule(void **state)
{
	static const struct {
		uint32_t allow_uid, allow_gid;
		uid_t uid;
		gid_t gid, sup;
		bool ok;
	} cases[] = {
		{FAB_ALLOW_NONE, FAB_ALLOW_NONE, 0, 0, 0, true},          /* our own uid (0 here) */
		{FAB_ALLOW_NONE, FAB_ALLOW_NONE, 1001, 1001, 1001, false}, /* another uid */
		{1001, FAB_ALLOW_NONE, 1001, 1001, 1001, true},
		{1001, FAB_ALLOW_NONE, 1002, 1001, 1001, false},
		{FAB_ALLOW_NONE, 100, 1002, 100, 1002, true},              /* primary group */
		{FAB_ALLOW_NONE, 100, 1002, 1002, 100, true},              /* supplementary group */
		{FAB_ALLOW_NONE, 100, 1002, 1002, 1002, false},
		{FAB_ALLOW_NONE, 0, 1002, 1002, 1002, false},              /* group 0 is not "none" */
		{FAB_ALLOW_NONE, 0, 1002, 0, 1002, true},
	};
	struct fab_limits lim;

	(void)state;
	fab_limits_default(&lim);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lim.allow_uid = cases[i].allow_uid;
		lim.allow_gid = cases[i].allow_gid;
		if (shm_cred_allowed(0, &lim, cases[i].uid, cases[i].gid, &cases[i].sup, 1) != cases[i].ok)
			fail_msg("case %zu: uid %u gid %u sup %u", i, (unsigned)cases[i].uid, (unsigned)cases[i].gid,
				 (unsigned)cases[i].sup);
	}
}

/* The CM message and the memory channel's announcement: round trips and what is refused. */
static void test_shm_codecs(void **state)
{
	struct shm_cm_msg m = {.type = 3, .status = -13, .pdata_len = 5, .pdata = "hello", .tbl_n = 7}, o;
	uint8_t b[SHM_CM_SIZE], mb[SHM_MEM_MSG];
	uint64_t mid, base;
	uint32_t len;

	(void)state;
	shm_cm_pack(&m, b);
	assert_int_equal(shm_cm_unpack(b, sizeof(b), &o), 0);
	assert_int_equal(o.type, 3);
	assert_int_equal(o.status, -13);
	assert_memory_equal(o.pdata, "hello", 5);
	assert_int_equal(shm_cm_unpack(b, sizeof(b) - 1, &o), -EPROTO);
	b[5] = FAB_PRIVATE_DATA_MAX + 1;
	assert_int_equal(shm_cm_unpack(b, sizeof(b), &o), -EPROTO);
	m.status = 5; /* a REJECT's status from a peer reads as an errno */
	shm_cm_pack(&m, b);
	assert_int_equal(shm_cm_unpack(b, sizeof(b), &o), 0);
	assert_int_equal(o.status, -ECONNREFUSED);
	b[0] ^= 1; /* USM1 or anything else */
	assert_int_equal(shm_cm_unpack(b, sizeof(b), &o), -EPROTO);
	shm_mem_msg_pack(mb, 9, 0x7f0000000000ull, 1 << 20);
	assert_int_equal(shm_mem_msg_unpack(mb, sizeof(mb), &mid, &base, &len), 0);
	assert_int_equal(mid, 9);
	assert_int_equal(len, 1 << 20);
	shm_mem_msg_pack(mb, 0, 4096, 4096); /* id 0 names no arena */
	assert_int_equal(shm_mem_msg_unpack(mb, sizeof(mb), &mid, &base, &len), -EPROTO);
	shm_mem_msg_pack(mb, 1, UINT64_MAX - 100, 4096); /* wraps */
	assert_int_equal(shm_mem_msg_unpack(mb, sizeof(mb), &mid, &base, &len), -EPROTO);
	shm_mem_msg_pack(mb, 1, 4096, 0);
	assert_int_equal(shm_mem_msg_unpack(mb, sizeof(mb), &mid, &base, &len), -EPROTO);
	assert_int_equal(shm_mem_msg_unpack(mb, sizeof(mb) - 1, &mid, &base, &len), -EPROTO);
}
#endif

int main(void)
{
	struct CMUnitTest tests[sizeof(limits_cases) / sizeof(limits_cases[0]) + 9];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(limits_cases) / sizeof(limits_cases[0]); i++)
		tests[n++] = (struct CMUnitTest){.name = limits_cases[i].name, .test_func = run_limits_case,
						 .initial_state = (void *)&limits_cases[i]};
	tests[n++] = (struct CMUnitTest){.name = "provider choose", .test_func = test_provider_choose};
	tests[n++] = (struct CMUnitTest){.name = "provider select", .test_func = test_provider_select};
	tests[n++] = (struct CMUnitTest){.name = "RDMA port for an address", .test_func = test_rdma_port_for_addr};
	tests[n++] = (struct CMUnitTest){.name = "RDMA devices described", .test_func = test_rdma_describe};
#ifdef ULNET_HAVE_FABRIC_SHM
	tests[n++] = (struct CMUnitTest){.name = "iovec slice", .test_func = test_iov_slice};
	tests[n++] = (struct CMUnitTest){.name = "segment join", .test_func = test_seg_join};
	tests[n++] = (struct CMUnitTest){.name = "EPERM line", .test_func = test_eperm_msg};
	tests[n++] = (struct CMUnitTest){.name = "shm credential rule", .test_func = test_cred_rule};
	tests[n++] = (struct CMUnitTest){.name = "shm CM and memory channel codecs", .test_func = test_shm_codecs};
#endif
	return _cmocka_run_group_tests("fabric_pure", tests, n, NULL, NULL);
}
