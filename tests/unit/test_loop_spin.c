/* SPDX-License-Identifier: MIT */
/* The spin hook (struct ulnet_io spin, src/core/loop.c): a busy-polling loop's spins read the socket
 * input last came to, one non-blocking recv without the lock, instead of epoll_wait and a read after
 * it. A socketpair plays the connection: the first message comes through epoll (EPOLLIN) and makes
 * the socket the hot one; the next ones are found by the spin (the callback told ULNET_IO_POLLED,
 * the bytes already read), but for those epoll_wait, every 4th spin, sees first. A loop that does
 * not busy poll never calls the hook, and one that cannot look leaves the spin to epoll_wait. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "internal.h"
#include "wait_count.h"

struct sock {
	struct ulnet_io io;
	int peer;              /* the test's end */
	atomic_uint spins, spin_reads, runs, polled_runs;
	unsigned held;         /* bytes a spin read, for the callback (loop 0's owner) */
	bool cannot;           /* the hook cannot look (set before the node opens) */
	ulnet_node *node;
};

static int sock_spin_hook(struct ulnet_io *io)
{
	struct sock *s = io->data;
	char b[64];
	ssize_t r;

	atomic_fetch_add(&s->spins, 1);
	if (s->cannot)
		return -1; /* as mid-message: the loop's epoll_wait looks */
	r = recv(io->fd, b, sizeof(b), MSG_DONTWAIT);
	if (r <= 0)
		return 0;
	s->held += (unsigned)r;
	atomic_fetch_add(&s->spin_reads, 1);
	return 1;
}

static void sock_cb(struct ulnet_io *io, uint32_t revents)
{
	struct sock *s = io->data;
	char b[64];

	if (revents & EPOLLIN) {
		if (recv(io->fd, b, sizeof(b), MSG_DONTWAIT) <= 0)
			return; /* a spin took it first */
	} else {
		assert_true(revents == ULNET_IO_POLLED);
		assert_true(s->held > 0);
		s->held = 0;
		atomic_fetch_add(&s->polled_runs, 1);
	}
	atomic_fetch_add(&s->runs, 1);
}

static void sock_open(struct sock *s, uint32_t busy_poll_us, bool cannot)
{
	struct ulnet_node_opts opts = {.busy_poll_us = busy_poll_us};
	int sv[2];

	memset(s, 0, sizeof(*s));
	s->cannot = cannot;
	assert_int_equal(ulnet_node_open(&opts, &s->node), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	s->io.fd = sv[0];
	s->peer = sv[1];
	s->io.cb = sock_cb;
	s->io.spin = sock_spin_hook;
	s->io.data = s;
	ulnet__loop_enter(&s->node->loops[0]);
	assert_int_equal(ulnet__io_start(s->node, &s->io, EPOLLIN), 0);
	ulnet__loop_exit(&s->node->loops[0]);
}

static void sock_close(struct sock *s)
{
	ulnet__loop_enter(&s->node->loops[0]);
	ulnet__io_stop(s->node, &s->io);
	ulnet__loop_exit(&s->node->loops[0]);
	ulnet_node_close(s->node);
	close(s->io.fd);
	close(s->peer);
}

static void sock_send(struct sock *s)
{
	assert_int_equal(send(s->peer, "m", 1, MSG_NOSIGNAL), 1);
}

static void test_busy_loop_reads_hot_socket(void **state)
{
	static struct sock s; /* a failed test's node leaks: not onto the next one's stack */

	(void)state;
	sock_open(&s, ULNET_BUSY_POLL_US_MAX, false); /* 1 s: the messages come within it */
	assert_int_equal(atomic_load(&s.spins), 0); /* no input yet: no hot socket */
	sock_send(&s);
	wait_count(&s.runs, 1);
	assert_int_equal(atomic_load(&s.polled_runs), 0); /* the first came through epoll */
	for (unsigned i = 2; i <= 200; i++) {
		sock_send(&s);
		wait_count(&s.runs, i);
	}
	/* epoll_wait comes first on one spin in 4: about 150 of 199 are the spin's (a loaded machine
	 * that preempts the loop thread in its spin makes it fewer) */
	if (atomic_load(&s.polled_runs) < 50)
		fail_msg("%u of 199 found by the spin (%u spins)", atomic_load(&s.polled_runs), atomic_load(&s.spins));
	assert_int_equal(atomic_load(&s.polled_runs), atomic_load(&s.spin_reads));
	sock_close(&s);
}

static void test_sleeping_loop_never_spins(void **state)
{
	static struct sock s; /* a failed test's node leaks: not onto the next one's stack */

	(void)state;
	sock_open(&s, 0, false);
	for (unsigned i = 1; i <= 20; i++) {
		sock_send(&s);
		wait_count(&s.runs, i);
	}
	assert_int_equal(atomic_load(&s.spins), 0);
	assert_int_equal(atomic_load(&s.polled_runs), 0);
	sock_close(&s);
}

/* A hook that cannot look (the tcp conn mid-message): every spin polls epoll instead, and every
 * message comes through it. */
static void test_hook_that_cannot_look(void **state)
{
	static struct sock s;

	(void)state;
	sock_open(&s, ULNET_BUSY_POLL_US_MAX, true);
	for (unsigned i = 1; i <= 100; i++) {
		sock_send(&s);
		wait_count(&s.runs, i);
	}
	assert_true(atomic_load(&s.spins) > 0); /* it was asked */
	assert_int_equal(atomic_load(&s.polled_runs), 0);
	sock_close(&s);
}

/* The hot socket stopped (its conn closed): the loop forgets it and spins on epoll_wait again. */
static void test_stopped_socket_is_not_spun(void **state)
{
	static struct sock s; /* a failed test's node leaks: not onto the next one's stack */
	unsigned spins;

	(void)state;
	sock_open(&s, ULNET_BUSY_POLL_US_MAX, false);
	sock_send(&s);
	wait_count(&s.runs, 1);
	ulnet__loop_enter(&s.node->loops[0]);
	ulnet__io_stop(s.node, &s.io);
	assert_null(s.node->loops[0].io.spin_hot);
	ulnet__loop_exit(&s.node->loops[0]);
	sock_send(&s); /* nobody reads it */
	ulnet__loop_enter(&s.node->loops[0]);
	/* a spin under way when we took the loop has ended: none after */
	spins = atomic_load(&s.spins);
	ulnet__loop_exit(&s.node->loops[0]);
	for (unsigned i = 0; i < 20; i++) {
		ulnet__loop_enter(&s.node->loops[0]); /* a loop turn or spin between each */
		ulnet__loop_exit(&s.node->loops[0]);
		poll(NULL, 0, 1);
	}
	assert_int_equal(atomic_load(&s.spins), spins);
	assert_int_equal(atomic_load(&s.runs), 1);
	ulnet_node_close(s.node);
	close(s.io.fd);
	close(s.peer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_loop_reads_hot_socket),
		cmocka_unit_test(test_sleeping_loop_never_spins),
		cmocka_unit_test(test_hook_that_cannot_look),
		cmocka_unit_test(test_stopped_socket_is_not_spun),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
