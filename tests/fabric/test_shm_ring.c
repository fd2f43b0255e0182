/* SPDX-License-Identifier: MIT */
/* The shm provider's SEND ring on its own (shm_ring.c): records wrap around the end in order, a full
 * ring refuses and asks for a doorbell, a peer's scribbles on indexes and headers are refused (never
 * an overrun), and two threads that sleep on eventfds when the ring is empty or full never lose a
 * wake-up (run it under TSan). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "fab_test.h"
#include "shm_ring.h"

static void *map;

static int setup(void **state)
{
	(void)state;
	map = aligned_alloc(4096, SHM_RING_MAP_LEN);
	assert_non_null(map);
	memset(map, 0, SHM_RING_MAP_LEN);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(map);
	return 0;
}

static void ends(struct shm_ring *p, struct shm_ring *c)
{
	shm_ring_attach(p, map, 0);
	shm_ring_attach(c, map, 0);
}

static int put(struct shm_ring *p, const void *buf, uint32_t len, bool *bell)
{
	struct iovec iov = {(void *)buf, len};

	return shm_ring_put(p, &iov, 1, len, bell);
}

/* Records of every size up to 5000 bytes, three times round the ring, come out whole and in order. */
static void test_wrap(void **state)
{
	struct shm_ring p, c;
	uint8_t in[5000], out[5000];
	uint64_t sent = 0;
	uint32_t len;
	bool bell;

	(void)state;
	ends(&p, &c);
	for (uint32_t i = 0; sent < 3ull * SHM_RING_BYTES; i++) {
		uint32_t n = (i * 977u) % sizeof(in);

		for (uint32_t k = 0; k < n; k++)
			in[k] = (uint8_t)(i + k);
		assert_int_equal(put(&p, in, n, &bell), 0);
		assert_int_equal(shm_ring_peek(&c, &len), 1);
		assert_int_equal(len, n);
		memset(out, 0, sizeof(out));
		/* two pieces: a record is scattered into the receive's SGEs */
		struct iovec v[2] = {{out, n / 3}, {out + n / 3, n - n / 3}};
		shm_ring_read(&c, len, v, 2);
		assert_memory_equal(in, out, n);
		assert_false(shm_ring_pop(&c, len));
		assert_int_equal(shm_ring_peek(&c, &len), 0);
		sent += shm_ring_need(n);
	}
}

/* A full ring refuses (nothing written) and asks for space; the consumer's pop says to ring the
 * producer, after which the record fits. The consumer's sleep is refused while a record waits. */
static void test_full(void **state)
{
	static uint8_t big[60000];
	struct shm_ring p, c;
	uint32_t len;
	bool bell;
	int n = 0;

	(void)state;
	ends(&p, &c);
	while (put(&p, big, sizeof(big), &bell) == 0)
		n++;
	assert_int_equal(n, (int)(SHM_RING_BYTES / shm_ring_need(sizeof(big))));
	assert_int_equal(put(&p, big, sizeof(big), &bell), 1);
	assert_false(shm_ring_sleep(&c)); /* records wait: not asleep */
	assert_int_equal(shm_ring_peek(&c, &len), 1);
	assert_true(shm_ring_pop(&c, len)); /* the producer asked for space */
	assert_int_equal(put(&p, big, sizeof(big), &bell), 0);
	/* drained: asleep; the next put says to ring */
	while (shm_ring_peek(&c, &len) == 1)
		shm_ring_pop(&c, len);
	assert_true(shm_ring_sleep(&c));
	assert_int_equal(put(&p, big, 1, &bell), 0);
	assert_true(bell);
	assert_int_equal(put(&p, big, 1, &bell), 0);
	assert_false(bell); /* rung once */
	/* a record larger than the ring never fits: refused, not waited for */
	assert_int_equal(shm_ring_put(&p, NULL, 0, SHM_RING_BYTES, &bell), -EPROTO);
}

/* What the peer controls: head, tail and record headers. Each bad value is refused. */
static void test_scribble(void **state)
{
	struct shm_ring p, c;
	uint8_t buf[64] = {1, 2, 3}, *hdr;
	uint32_t len;
	bool bell;

	(void)state;
	ends(&p, &c);
	assert_int_equal(put(&p, buf, 20, &bell), 0);
	hdr = c.data;
	/* head more than a ring ahead, head less than a header ahead, head behind tail */
	atomic_store(&c.ctl->head, SHM_RING_BYTES + 8);
	assert_int_equal(shm_ring_peek(&c, &len), -EPROTO);
	atomic_store(&c.ctl->head, 4);
	assert_int_equal(shm_ring_peek(&c, &len), -EPROTO);
	atomic_store(&c.ctl->head, (uint64_t)-8);
	assert_int_equal(shm_ring_peek(&c, &len), -EPROTO);
	/* a record longer than what was published, a record longer than the ring, a bad magic */
	atomic_store(&c.ctl->head, shm_ring_need(20));
	hdr[0] = 200;
	assert_int_equal(shm_ring_peek(&c, &len), -EPROTO);
	memset(hdr, 0xff, 4);
	assert_int_equal(shm_ring_peek(&c, &len), -EPROTO);
	hdr[0] = 20, hdr[1] = hdr[2] = hdr[3] = 0;
	hdr[4] ^= 1;
	assert_int_equal(shm_ring_peek(&c, &len), -EPROTO);
	hdr[4] ^= 1;
	assert_int_equal(shm_ring_peek(&c, &len), 1);
	assert_int_equal(len, 20);
	/* the consumer's tail past our head, or more than a ring behind it */
	atomic_store(&p.ctl->tail, p.pos + 8);
	assert_int_equal(put(&p, buf, 8, &bell), -EPROTO);
	p.pos = 2ull * SHM_RING_BYTES;
	atomic_store(&p.ctl->tail, 0);
	assert_int_equal(put(&p, buf, 8, &bell), -EPROTO);
}

/* Two threads, each sleeping on its eventfd (the consumer when the ring is empty, the producer when
 * it is full): every record arrives, in order. A lost wake-up would leave one asleep: the poll's
 * bound (10 s) fails the test. */
#define RACE_N 50000u
struct race {
	struct shm_ring p, c;
	int pfd, cfd; /* the producer's and the consumer's doorbells */
};

static void ring_bell(int fd)
{
	uint64_t one = 1;

	assert_int_equal(write(fd, &one, sizeof(one)), (ssize_t)sizeof(one));
}

static void sleep_on(int fd)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	uint64_t v;

	if (poll(&pf, 1, 10000) != 1)
		fail_msg("asleep for 10 s: a lost wake-up");
	assert_int_equal(read(fd, &v, sizeof(v)), (ssize_t)sizeof(v));
}

static void *producer(void *arg)
{
	struct race *r = arg;

	for (uint32_t i = 0; i < RACE_N;) {
		uint8_t m[64];
		uint32_t n = 4 + i % 60;
		bool bell;
		int rc;

		memcpy(m, &i, 4);
		memset(m + 4, (int)(i & 0xff), n - 4);
		rc = put(&r->p, m, n, &bell);
		assert_true(rc >= 0);
		if (rc == 1) {
			sleep_on(r->pfd);
			continue;
		}
		if (bell)
			ring_bell(r->cfd);
		i++;
	}
	return NULL;
}

static void test_no_lost_wakeup(void **state)
{
	struct race r;
	pthread_t t;
	(void)state;
	ends(&r.p, &r.c);
	atomic_store(&r.c.ctl->sleeping, 1); /* as the connector leaves it */
	r.pfd = eventfd(0, EFD_NONBLOCK);
	r.cfd = eventfd(0, EFD_NONBLOCK);
	assert_true(r.pfd >= 0 && r.cfd >= 0);
	assert_int_equal(pthread_create(&t, NULL, producer, &r), 0);
	for (uint32_t i = 0; i < RACE_N;) {
		uint8_t m[64];
		uint32_t len;
		int rc = shm_ring_peek(&r.c, &len);

		assert_true(rc >= 0);
		if (rc == 0) {
			if (shm_ring_sleep(&r.c))
				sleep_on(r.cfd);
			continue;
		}
		assert_int_equal(len, 4 + i % 60);
		struct iovec v = {m, sizeof(m)};
		shm_ring_read(&r.c, len, &v, 1);
		assert_memory_equal(m, &i, 4);
		if (len > 4)
			assert_int_equal(m[len - 1], (uint8_t)(i & 0xff));
		if (shm_ring_pop(&r.c, len))
			ring_bell(r.pfd);
		i++;
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	close(r.pfd);
	close(r.cfd);
}

int main(int argc, char **argv)
{
	ft_args(argc, argv);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_wrap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scribble, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_lost_wakeup, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
