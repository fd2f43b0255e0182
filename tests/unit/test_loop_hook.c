/* SPDX-License-Identifier: MIT */
/* The loop hook (struct ulnet_io poll/arm, src/core/loop.c): a source the loop can look at in user
 * space, played here by a flag and a doorbell eventfd with the shm rings' protocol (the producer
 * sets the flag, then rings only if the consumer said it sleeps). A busy-polling loop finds every
 * item through poll, with no doorbell written and its callback told ULNET_IO_POLLED; a sleeping loop
 * arms before it sleeps, and the doorbell wakes it (the callback sees the fd readable). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "internal.h"
#include "wait_count.h"

struct src {
	struct ulnet_io io;
	atomic_uint pending;  /* items the producer published */
	atomic_uint armed;    /* the consumer said it sleeps */
	atomic_uint doorbells, arms, runs, polled_runs;
	unsigned taken;       /* the callback's, under the node lock */
};

static bool src_poll(struct ulnet_io *io)
{
	struct src *s = io->data;

	atomic_store(&s->armed, 0); /* awake: the producer need not ring */
	return atomic_load(&s->pending) != s->taken;
}

static bool src_arm(struct ulnet_io *io)
{
	struct src *s = io->data;

	atomic_fetch_add(&s->arms, 1);
	atomic_store(&s->armed, 1); /* (seq_cst: store, then load, as shm_ring_sleep) */
	return atomic_load(&s->pending) != s->taken;
}

static void src_cb(struct ulnet_io *io, uint32_t revents)
{
	struct src *s = io->data;
	uint64_t v;

	if (revents & EPOLLIN)
		assert_int_equal(read(s->io.fd, &v, sizeof(v)), (ssize_t)sizeof(v));
	else
		assert_true(revents == ULNET_IO_POLLED);
	if (atomic_load(&s->pending) == s->taken)
		return; /* a late doorbell: nothing new */
	s->taken = atomic_load(&s->pending);
	atomic_fetch_add(&s->runs, 1);
	if (!(revents & EPOLLIN))
		atomic_fetch_add(&s->polled_runs, 1);
}

/* The producer: publish one item, ring only a sleeping consumer. */
static void src_put(struct src *s)
{
	uint64_t one = 1;

	atomic_fetch_add(&s->pending, 1);
	if (atomic_exchange(&s->armed, 0)) {
		atomic_fetch_add(&s->doorbells, 1);
		assert_int_equal(write(s->io.fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	}
}

static ulnet_node *node_with(struct src *s, uint32_t busy_poll_us)
{
	struct ulnet_node_opts opts = {.busy_poll_us = busy_poll_us};
	ulnet_node *node;

	memset(s, 0, sizeof(*s));
	assert_int_equal(ulnet_node_open(&opts, &node), 0);
	s->io.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(s->io.fd >= 0);
	s->io.cb = src_cb;
	s->io.data = s;
	s->io.poll = src_poll;
	s->io.arm = src_arm;
	ulnet__loop_enter(&node->loops[0]);
	assert_int_equal(ulnet__io_start(node, &s->io, EPOLLIN), 0);
	ulnet__loop_exit(&node->loops[0]);
	return node;
}

static void node_done(ulnet_node *node, struct src *s)
{
	ulnet__loop_enter(&node->loops[0]);
	ulnet__io_stop(node, &s->io);
	ulnet__loop_exit(&node->loops[0]);
	ulnet_node_close(node);
	close(s->io.fd);
}

/* No busy polling: the loop arms before each sleep, and every item costs a doorbell that wakes it. */
static void test_sleeping_loop_gets_doorbell(void **state)
{
	struct src s;
	ulnet_node *node = node_with(&s, 0);

	(void)state;
	for (unsigned i = 1; i <= 20; i++) {
		wait_count(&s.armed, 1); /* asleep (armed), or about to be */
		src_put(&s);
		wait_count(&s.runs, i);
	}
	/* each item woke the loop through its doorbell, but for one that came while the LND tick (every
	 * 100 ms) had it awake, which its poll found: a lost wake-up would show as many such */
	assert_int_equal(atomic_load(&s.doorbells) + atomic_load(&s.polled_runs), 20);
	assert_true(atomic_load(&s.polled_runs) <= 2);
	assert_true(atomic_load(&s.arms) >= 20);
	node_done(node, &s);
}

/* Busy polling: once a first item woke the loop, it spins and finds the next ones through poll,
 * with no doorbell written and without arming; after the spin window it arms and sleeps again. */
static void test_busy_loop_polls(void **state)
{
	struct src s;
	ulnet_node *node = node_with(&s, ULNET_BUSY_POLL_US_MAX); /* 1 s: the test's items come within it */
	unsigned bells, arms;

	(void)state;
	wait_count(&s.armed, 1);
	src_put(&s); /* asleep: rung */
	wait_count(&s.runs, 1);
	bells = atomic_load(&s.doorbells);
	arms = atomic_load(&s.arms);
	assert_int_equal(bells, 1);
	for (unsigned i = 2; i <= 200; i++) {
		src_put(&s);
		wait_count(&s.runs, i);
	}
	assert_int_equal(atomic_load(&s.doorbells), bells);
	assert_int_equal(atomic_load(&s.arms), arms);
	assert_int_equal(atomic_load(&s.polled_runs), 199);
	/* idle past the window: armed again, and a doorbell wakes it */
	wait_count(&s.armed, 1);
	src_put(&s);
	wait_count(&s.runs, 201);
	assert_int_equal(atomic_load(&s.doorbells), bells + 1);
	node_done(node, &s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sleeping_loop_gets_doorbell),
		cmocka_unit_test(test_busy_loop_polls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
