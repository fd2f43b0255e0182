/* SPDX-License-Identifier: MIT */
/* The shm provider's life word (shm_life.c): a peer learns with one load that a process died, the
 * kernel having marked the futex word on its helper thread's robust list, whether it was SIGKILLed or
 * exited; a live one reads alive; a page that is not a sealed memfd of the right size is refused; a
 * child forked after its parent made its page has none (its peers poll its socket). The children
 * are forked before this process makes its own page (a child of a threaded process should start no
 * thread: ThreadSanitizer refuses it). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "fab_test.h"
#include "shm_life.h"

/* A child that makes its life page, passes it up and waits for a byte (then exits 0). */
static pid_t child_up(int *fd, int *ctl)
{
	int sv[2];
	pid_t pid;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	char b = 0;
	struct iovec iov = {&b, 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)};

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int lf = shm_life_fd();

		close(sv[0]);
		if (lf < 0)
			_exit(2);
		memset(&c, 0, sizeof(c));
		CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &lf, sizeof(int));
		if (sendmsg(sv[1], &mh, 0) != 1 || read(sv[1], &b, 1) != 1)
			_exit(3);
		_exit(0);
	}
	close(sv[1]);
	assert_int_equal(recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC), 1);
	assert_non_null(CMSG_FIRSTHDR(&mh));
	memcpy(fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
	*ctl = sv[0];
	return pid;
}

/* A child's word, mapped: alive while the child runs. */
struct watched {
	int fd, ctl;
	pid_t pid;
	const _Atomic uint32_t *w;
};

static struct watched watch_child(void)
{
	struct watched c;

	c.pid = child_up(&c.fd, &c.ctl);
	c.w = shm_life_map(c.fd);
	assert_non_null(c.w);
	assert_true(shm_life_alive(c.w));
	return c;
}

/* The child is gone (reaped, its status in @st): its word reads dead. */
static void watched_gone(struct watched *c, int *st)
{
	assert_int_equal(waitpid(c->pid, st, 0), c->pid);
	assert_false(shm_life_alive(c->w));
	shm_life_unmap(c->w);
	close(c->fd);
	close(c->ctl);
}

/* SIGKILLed: the word reads dead once the child is gone (waitpid), alive before. */
static void test_killed(void **state)
{
	struct watched c = watch_child();
	int st;

	(void)state;
	kill(c.pid, SIGKILL);
	watched_gone(&c, &st);
	assert_true(WIFSIGNALED(st));
}

/* An ordinary exit marks it too. */
static void test_exited(void **state)
{
	struct watched c = watch_child();
	int st;

	(void)state;
	assert_int_equal(write(c.ctl, "x", 1), 1);
	watched_gone(&c, &st);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Ours: made once, alive; a child forked now has none; a page that is not sealed, or not of the
 * size, is refused. */
static void test_own_and_refused(void **state)
{
	int fd = shm_life_fd(), st, bad;
	const _Atomic uint32_t *w;
	pid_t pid;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(shm_life_fd(), fd);
	w = shm_life_map(fd);
	assert_non_null(w);
	assert_true(shm_life_alive(w));
	shm_life_unmap(w);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(shm_life_fd() < 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	bad = memfd_create("not-sealed", MFD_CLOEXEC);
	assert_true(bad >= 0);
	assert_int_equal(ftruncate(bad, SHM_LIFE_LEN), 0);
	assert_null(shm_life_map(bad));
	close(bad);
	bad = memfd_create("too-small", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_int_equal(ftruncate(bad, 64), 0);
	assert_int_equal(fcntl(bad, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	assert_null(shm_life_map(bad));
	close(bad);
	assert_null(shm_life_map(-1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_killed),
		cmocka_unit_test(test_exited),
		cmocka_unit_test(test_own_and_refused), /* last: after it this process has its page */
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
