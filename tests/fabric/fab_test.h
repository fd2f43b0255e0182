/* SPDX-License-Identifier: MIT */
/* Helpers for the fabric tests: drive devices until an observable state (a CM event, a completion)
 * appears, with a deadline; never a sleep. Addresses 127.X.Y.N, X.Y from the pid (abstract unix names
 * only; a device holds its address, so two test processes at once must not share one). */
#ifndef ULNET_FAB_TEST_H
#define ULNET_FAB_TEST_H

#include <arpa/inet.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "config.h"
#include "fabric.h"
#include "fabric_shm.h"

#ifndef OPS /* a test of another provider defines it first */
#define OPS (&fab_shm_ops)
#endif
#define WAIT_MS 10000

/* The test process's pid, taken at start: forked children name the same addresses. */
static int ft_pid;
__attribute__((constructor)) static void ft_pid_init(void) { ft_pid = (int)getpid(); }

static inline struct sockaddr_in ft_addr(int n, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	char s[32];

	snprintf(s, sizeof(s), "127.%d.%d.%d", 200 + ft_pid / 256 % 50, ft_pid % 256, n);
	inet_pton(AF_INET, s, &a.sin_addr);
	return a;
}

/* The first of 64 ports this test process may use: two runs of a test at once (two worktrees,
 * parallel suites) must not meet on one abstract name. */
static inline int ft_port_base(void) { return 1024 + (int)(getpid() % 900) * 64; }

static inline uint64_t ft_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The shm tests run twice (meson): the devices' copy thread off, and on with the argument
 * "copy_thread" (fab_limits.copy_thread, the o2ib lnd tunable device.copy_thread). */
static unsigned ft_copy_thread;

static inline void ft_args(int argc, char **argv)
{
	ft_copy_thread = argc > 1 && !strcmp(argv[1], "copy_thread");
}

/* dev_open with @lim (NULL: the defaults) and the copy thread of this run. */
static inline int ft_dev_open(const struct sockaddr_in *a, const struct fab_limits *lim, struct fab_dev **out)
{
	struct fab_limits l;

	if (lim)
		l = *lim;
	else
		fab_limits_default(&l);
	l.copy_thread = ft_copy_thread;
	return OPS->dev_open(a, &l, out);
}

/* Wait up to @ms for any of @n devices' fds, then progress them all. */
static inline void ft_pump(struct fab_dev **devs, int n, int ms)
{
	struct pollfd p[8];

	for (int i = 0; i < n; i++)
		p[i] = (struct pollfd){.fd = OPS->dev_fd(devs[i]), .events = POLLIN};
	poll(p, (nfds_t)n, ms);
	for (int i = 0; i < n; i++)
		assert_int_equal(OPS->progress(devs[i]), 0);
}

/* The next CM event of devs[0], driving all of @devs; fails the test after WAIT_MS. */
static inline void ft_event(struct fab_dev **devs, int n, struct fab_cm_event *ev)
{
	uint64_t end = ft_now_ms() + WAIT_MS;

	while (OPS->get_event(devs[0], ev) == -EAGAIN) {
		if (ft_now_ms() > end)
			fail_msg("no CM event within %d ms", WAIT_MS);
		ft_pump(devs, n, 50);
	}
}

static inline void ft_expect_event(struct fab_dev **devs, int n, enum fab_cm_event_type t, struct fab_cm_event *ev)
{
	ft_event(devs, n, ev);
	if (ev->type != t)
		fail_msg("CM event %s (status %d), wanted %s", fab_cm_event_str(ev->type), ev->status, fab_cm_event_str(t));
}

/* The next completion of devs[0]. */
static inline void ft_wc(struct fab_dev **devs, int n, struct fab_wc *wc)
{
	uint64_t end = ft_now_ms() + WAIT_MS;

	while (OPS->poll_cq(devs[0], wc, 1) == 0) {
		if (ft_now_ms() > end)
			fail_msg("no completion within %d ms", WAIT_MS);
		ft_pump(devs, n, 50);
	}
}

static inline void ft_expect_wc(struct fab_dev **devs, int n, uint64_t wr_id, enum fab_wc_status st, struct fab_wc *wc)
{
	ft_wc(devs, n, wc);
	if (wc->wr_id != wr_id || wc->status != st)
		fail_msg("completion wr_id %llu status %s, wanted wr_id %llu %s", (unsigned long long)wc->wr_id,
			 fab_wc_status_str(wc->status), (unsigned long long)wr_id, fab_wc_status_str(st));
}

static inline int ft_post_send1(struct fab_qp *qp, uint64_t id, enum fab_wr_opcode op, bool sig, const struct fab_sge *sge,
				uint32_t nsge, uint64_t raddr, uint32_t rkey)
{
	struct fab_send_wr wr = {.wr_id = id, .opcode = op, .signaled = sig, .sg_list = sge, .num_sge = nsge,
				 .remote_addr = raddr, .rkey = rkey};
	const struct fab_send_wr *bad;

	return OPS->post_send(qp, &wr, &bad);
}

static inline int ft_post_recv1(struct fab_qp *qp, uint64_t id, const struct fab_sge *sge, uint32_t nsge)
{
	struct fab_recv_wr wr = {.wr_id = id, .sg_list = sge, .num_sge = nsge};
	const struct fab_recv_wr *bad;

	return OPS->post_recv(qp, &wr, &bad);
}

#endif
