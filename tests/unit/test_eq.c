/* SPDX-License-Identifier: MIT */
/* Event queues and handlers: unbounded queue (nothing dropped), wait timeouts, -EBUSY while MDs use
 * a queue, several waiters woken by one batch, each with waiters that sleep at once and with waiters
 * that poll first (ulnet_eq_set_spin, and its bounds), and handlers that run on the loop thread and
 * may call the API themselves. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "ulnet/ulnet.h"

static void never_drops(unsigned spin_us)
{
	struct ulnet_process_id self = { .pid = ULNET_PID_LUSTRE }, any = { .pid = ULNET_PID_ANY };
	static uint8_t tbuf[8], ibuf[8];
	struct ulnet_md tmd = { .start = tbuf, .length = 8, .threshold = ULNET_MD_THRESH_INF,
				.options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE };
	struct ulnet_md imd = { .start = ibuf, .length = 8, .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_handle me, th, ih;
	struct ulnet_event ev;
	ulnet_node *node;
	ulnet_eq *eq;
	int puts = 0, sends = 0;
	const int n = 5000;

	any.nid = ulnet_nid_any();
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_nid_parse("0@lo", &self.nid, NULL), 0);
	assert_int_equal(ulnet_eq_create(&eq), 0);
	assert_int_equal(ulnet_eq_set_spin(eq, spin_us), 0);
	tmd.eq = imd.eq = eq;
	assert_int_equal(ulnet_me_attach(node, 2, &any, 0, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(node, me, &tmd, ULNET_UNLINK, &th), 0);
	assert_int_equal(ulnet_md_bind(node, &imd, ULNET_RETAIN, &ih), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(ulnet_put(node, ih, ULNET_NOACK_REQ, &self, 2, 0, 0, (uint64_t)i), 0);
	assert_int_equal(ulnet_eq_destroy(eq), -EBUSY);
	/* lo completes in the loop's completion phase: wait for every event (never lost, FIFO) */
	while ((puts < n || sends < n) && ulnet_eq_wait(eq, 5000, &ev) == 1) {
		if (ev.type == ULNET_EVENT_PUT) {
			assert_int_equal(ev.hdr_data, (uint64_t)puts); /* FIFO */
			puts++;
		} else if (ev.type == ULNET_EVENT_SEND) {
			sends++;
		}
	}
	assert_int_equal(puts, n);
	assert_int_equal(sends, n);
	assert_int_equal(ulnet_eq_wait(eq, 30, &ev), 0); /* timeout, nothing left */
	assert_int_equal(ulnet_md_unlink(node, ih), 0);
	assert_int_equal(ulnet_md_unlink(node, th), 0);
	assert_int_equal(ulnet_eq_wait(eq, 0, &ev), 1);
	assert_int_equal(ev.type, ULNET_EVENT_UNLINK);
	assert_int_equal(ulnet_eq_wait(eq, 0, &ev), 1);
	assert_int_equal(ev.type, ULNET_EVENT_UNLINK);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
	ulnet_node_close(node);
}

static void eq_never_drops(void **state)
{
	(void)state;
	never_drops(0);
}

/* the same with a waiter that polls the queue 200 us before it sleeps: the waits that find the queue
 * empty take events pushed during the poll, and the one that finds nothing still times out */
static void eq_never_drops_spinning(void **state)
{
	(void)state;
	never_drops(200);
}

static void eq_spin_bounds(void **state)
{
	ulnet_eq *eq;
	struct ulnet_event ev;

	(void)state;
	assert_int_equal(ulnet_eq_set_spin(NULL, 1), -EINVAL);
	assert_int_equal(ulnet_eq_create(&eq), 0);
	assert_int_equal(ulnet_eq_set_spin(eq, ULNET_EQ_SPIN_MAX_US + 1), -EINVAL);
	assert_int_equal(ulnet_eq_set_spin(eq, ULNET_EQ_SPIN_MAX_US), 0);
	/* an empty queue: a poll (timeout 0) finds nothing, a wait with a timeout finds nothing after
	 * its spin and its sleep */
	assert_int_equal(ulnet_eq_wait(eq, 0, &ev), 0);
	assert_int_equal(ulnet_eq_wait(eq, 20, &ev), 0);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
}

/* Several threads asleep on one queue: a completion phase that queues several events wakes as many of
 * them (its wake-ups wait for the phase's end, one call for the batch). Each lo Put's completion
 * phase queues two events (the target's PUT, the initiator's SEND). */
#define WAITERS 4
static ulnet_eq *wait_eq;
static pthread_barrier_t wait_bar;

static void *one_waiter(void *arg)
{
	struct ulnet_event ev;
	struct timespec t0, t1;

	pthread_barrier_wait(&wait_bar);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	*(int *)arg = ulnet_eq_wait(wait_eq, 20000, &ev);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* woken, not timed out (a timed-out wait still takes an event left queued) */
	if (t1.tv_sec - t0.tv_sec >= 10)
		*(int *)arg = -ETIMEDOUT;
	return NULL;
}

static void batch_wakes_each_waiter(unsigned spin_us)
{
	struct ulnet_process_id self = { .pid = ULNET_PID_LUSTRE }, any = { .pid = ULNET_PID_ANY };
	static uint8_t buf[8];
	struct ulnet_md tmd = { .start = buf, .length = 8, .threshold = ULNET_MD_THRESH_INF,
				.options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE };
	struct ulnet_md imd = { .start = buf, .length = 8, .threshold = ULNET_MD_THRESH_INF };
	struct ulnet_handle me, th, ih;
	pthread_t t[WAITERS];
	int got[WAITERS];
	ulnet_node *node;

	any.nid = ulnet_nid_any();
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	assert_int_equal(ulnet_nid_parse("0@lo", &self.nid, NULL), 0);
	assert_int_equal(ulnet_eq_create(&wait_eq), 0);
	assert_int_equal(ulnet_eq_set_spin(wait_eq, spin_us), 0);
	tmd.eq = imd.eq = wait_eq;
	assert_int_equal(ulnet_me_attach(node, 2, &any, 0, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(node, me, &tmd, ULNET_UNLINK, &th), 0);
	assert_int_equal(ulnet_md_bind(node, &imd, ULNET_RETAIN, &ih), 0);
	pthread_barrier_init(&wait_bar, NULL, WAITERS + 1);
	for (int i = 0; i < WAITERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, one_waiter, &got[i]), 0);
	pthread_barrier_wait(&wait_bar);
	for (int i = 0; i < WAITERS / 2; i++)
		assert_int_equal(ulnet_put(node, ih, ULNET_NOACK_REQ, &self, 2, 0, 0, 0), 0);
	for (int i = 0; i < WAITERS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(got[i], 1); /* an event each, none left waiting for its timeout */
	}
	pthread_barrier_destroy(&wait_bar);
	assert_int_equal(ulnet_md_unlink(node, ih), 0);
	assert_int_equal(ulnet_md_unlink(node, th), 0);
	ulnet_node_close(node);
	assert_int_equal(ulnet_eq_destroy(wait_eq), 0);
}

static void eq_batch_wakes_each_waiter(void **state)
{
	(void)state;
	batch_wakes_each_waiter(0);
}

/* waiters that poll 1 ms first: whether an event comes during a poll or after the sleep, each gets one */
static void eq_batch_reaches_spinning_waiters(void **state)
{
	(void)state;
	batch_wakes_each_waiter(1000);
}

/* A handler chain: each PUT event's handler sends the next PUT until the count is reached. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	ulnet_node *node;
	struct ulnet_handle ih;
	struct ulnet_process_id self;
	int puts, target;
	bool wrong_thread;
	pthread_t caller;
} chain = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void chain_handler(const struct ulnet_event *ev)
{
	if (pthread_equal(pthread_self(), chain.caller))
		chain.wrong_thread = true;
	if (ev->type != ULNET_EVENT_PUT)
		return;
	pthread_mutex_lock(&chain.lock);
	chain.puts++;
	if (chain.puts < chain.target)
		assert_int_equal(ulnet_put(chain.node, chain.ih, ULNET_NOACK_REQ, &chain.self, 4, 0, 0, 0), 0);
	pthread_cond_broadcast(&chain.cond);
	pthread_mutex_unlock(&chain.lock);
}

static void handlers_run_on_loop_thread(void **state)
{
	struct ulnet_process_id any = { .pid = ULNET_PID_ANY };
	static uint8_t tbuf[4], ibuf[4];
	struct ulnet_md tmd = { .start = tbuf, .length = 4, .threshold = ULNET_MD_THRESH_INF,
				.options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE, .handler = chain_handler };
	struct ulnet_md imd = { .start = ibuf, .length = 4, .threshold = ULNET_MD_THRESH_INF,
				.handler = chain_handler };
	struct ulnet_handle me, th;
	struct timespec dl;

	(void)state;
	any.nid = ulnet_nid_any();
	chain.caller = pthread_self();
	chain.target = 200;
	chain.self.pid = ULNET_PID_LUSTRE;
	assert_int_equal(ulnet_node_open(NULL, &chain.node), 0);
	assert_int_equal(ulnet_nid_parse("0@lo", &chain.self.nid, NULL), 0);
	assert_int_equal(ulnet_me_attach(chain.node, 4, &any, 0, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(chain.node, me, &tmd, ULNET_UNLINK, &th), 0);
	assert_int_equal(ulnet_md_bind(chain.node, &imd, ULNET_RETAIN, &chain.ih), 0);
	assert_int_equal(ulnet_put(chain.node, chain.ih, ULNET_NOACK_REQ, &chain.self, 4, 0, 0, 0), 0);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 10;
	pthread_mutex_lock(&chain.lock);
	while (chain.puts < chain.target)
		if (pthread_cond_timedwait(&chain.cond, &chain.lock, &dl) != 0)
			break;
	pthread_mutex_unlock(&chain.lock);
	assert_int_equal(chain.puts, chain.target);
	assert_false(chain.wrong_thread);
	ulnet_node_close(chain.node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(eq_never_drops),
		cmocka_unit_test(eq_never_drops_spinning),
		cmocka_unit_test(eq_spin_bounds),
		cmocka_unit_test(eq_batch_wakes_each_waiter),
		cmocka_unit_test(eq_batch_reaches_spinning_waiters),
		cmocka_unit_test(handlers_run_on_loop_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
