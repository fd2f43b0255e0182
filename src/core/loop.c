/* SPDX-License-Identifier: MIT */
/* The node's loop thread. One turn: epoll_wait (until the next timer), io callbacks and due timers
 * (LND ticks, transaction timeouts) under the node lock, the completion phase (at most ULNET_COMPLETION_BUDGET finalized messages, msg.c), then
 * the user handlers queued meanwhile, run without the lock (docs/progress.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

#define LOOP_MAX_EVENTS 64
#define LOOP_TICK_NS 100000000ull /* LND ticks: a periodic timer */
#define LOOP_MAX_WAIT_MS 1000      /* epoll_wait bound: an injected clock may jump without a wake */

uint64_t ulnet__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ulnet__wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ulnet__loop_init(struct ulnet_node *node)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	node->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (node->epfd < 0)
		return -errno;
	node->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (node->wakefd < 0 || epoll_ctl(node->epfd, EPOLL_CTL_ADD, node->wakefd, &ev) < 0) {
		int rc = -errno;

		close(node->epfd);
		if (node->wakefd >= 0)
			close(node->wakefd);
		return rc;
	}
	return 0;
}

int ulnet__io_start(struct ulnet_node *node, struct ulnet_io *io, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };
	int op = io->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;

	if (io->events == events && events)
		return 0;
	if (epoll_ctl(node->epfd, op, io->fd, &ev) < 0)
		return -errno;
	io->events = events ? events : io->events;
	return 0;
}

void ulnet__io_stop(struct ulnet_node *node, struct ulnet_io *io)
{
	if (io->events) {
		epoll_ctl(node->epfd, EPOLL_CTL_DEL, io->fd, NULL);
		io->events = 0;
	}
	/* the batch being dispatched may still name this watcher: forget it */
	for (int i = 0; i < node->cur_nevs; i++)
		if (node->cur_evs[i].data.ptr == io)
			node->cur_evs[i].data.ptr = NULL, node->cur_evs[i].events = 0;
}

void ulnet__loop_wake(struct ulnet_node *node)
{
	uint64_t one = 1;

	if (write(node->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		ULNET_LOG(CORE, WARN, "loop wake: %s", strerror(errno));
}

/* Drop the node lock taken by an API call. Off the loop thread, first run the completion phase for
 * what the call finalized (lo completes inside ulnet_put; at the top of the call, so no recursion),
 * then wake the loop if handlers or completions beyond the budget wait. The loop thread itself (a
 * handler calling the API) leaves both to the end of its turn. */
void ulnet__unlock(struct ulnet_node *node)
{
	bool off_loop = !pthread_equal(pthread_self(), node->thread), wake = false;

	if (off_loop) {
		ulnet__completions_run(node, ULNET_COMPLETION_BUDGET);
		wake = node->n_cbs > 0 || !ulnet_list_empty(&node->done_q);
	}
	pthread_mutex_unlock(&node->lock);
	if (wake)
		ulnet__loop_wake(node);
}

void ulnet__queue_cb(struct ulnet_node *node, ulnet_event_handler h, const struct ulnet_event *ev)
{
	if (node->n_cbs == node->cap_cbs) {
		size_t ncap = node->cap_cbs ? node->cap_cbs * 2 : 64;
		struct ulnet_pending_cb *n = realloc(node->cbs, ncap * sizeof(*n));

		if (!n) {
			ULNET_LOG(CORE, ERR, "out of memory queueing an event handler call; event lost");
			return;
		}
		node->cbs = n;
		node->cap_cbs = ncap;
	}
	node->cbs[node->n_cbs].handler = h;
	node->cbs[node->n_cbs].ev = *ev;
	node->n_cbs++;
}

/* Called with the lock held; returns with it held. Handlers run unlocked, in queue order. */
static void run_callbacks(struct ulnet_node *node)
{
	while (node->n_cbs) {
		struct ulnet_pending_cb *batch = node->cbs;
		size_t n = node->n_cbs;

		node->cbs = NULL;
		node->n_cbs = node->cap_cbs = 0;
		pthread_mutex_unlock(&node->lock);
		for (size_t i = 0; i < n; i++)
			batch[i].handler(&batch[i].ev);
		free(batch);
		pthread_mutex_lock(&node->lock);
	}
}

/* The LND tick timer: timeouts, keepalives and reconnects of every LND, every 100 ms. LNDs read the
 * real clock (ulnet__now_ns) for their own deadlines. */
static void lnd_tick(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now)
{
	struct ulnet_list *p;
	uint64_t real = ulnet__now_ns();

	for (p = node->nis.next; p != &node->nis; p = p->next) {
		struct ulnet_ni *ni = ulnet_container_of(p, struct ulnet_ni, link);

		if (ni->ops->lnd_tick)
			ni->ops->lnd_tick(ni, real);
	}
	ulnet__timer_arm(node, t, now + LOOP_TICK_NS);
}

static void *loop_main(void *arg)
{
	struct ulnet_node *node = arg;
	struct epoll_event evs[LOOP_MAX_EVENTS];

	pthread_mutex_lock(&node->lock);
	while (!node->stopping) {
		int n, timeout = node->n_cbs || !ulnet_list_empty(&node->done_q)
					 ? 0 : ulnet__timers_next_ms(node, ulnet__node_now(node), LOOP_MAX_WAIT_MS);

		pthread_mutex_unlock(&node->lock);
		n = epoll_wait(node->epfd, evs, LOOP_MAX_EVENTS, timeout);
		pthread_mutex_lock(&node->lock);
		if (n < 0 && errno != EINTR) {
			ULNET_LOG(CORE, ERR, "epoll_wait: %s", strerror(errno));
			n = 0;
		}
		node->cur_evs = evs;
		node->cur_nevs = n > 0 ? n : 0;
		for (int i = 0; i < node->cur_nevs; i++) {
			struct ulnet_io *io = evs[i].data.ptr;

			if (!evs[i].events)
				continue;
			if (!io) {
				uint64_t v;

				if (read(node->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
					ULNET_LOG(CORE, WARN, "loop wake read: %s", strerror(errno));
				continue;
			}
			io->cb(io, evs[i].events);
		}
		node->cur_nevs = 0;
		node->cur_evs = NULL;
		ulnet__timers_run(node, ulnet__node_now(node));
		/* bounded: a flood of completions cannot starve the sockets; the rest wait one turn */
		ulnet__completions_run(node, ULNET_COMPLETION_BUDGET);
		run_callbacks(node);
	}
	run_callbacks(node);
	pthread_mutex_unlock(&node->lock);
	return NULL;
}

int ulnet__loop_start(struct ulnet_node *node)
{
	int rc;

	pthread_mutex_lock(&node->lock);
	node->lnd_tick.fn = lnd_tick;
	rc = ulnet__timer_arm(node, &node->lnd_tick, ulnet__node_now(node) + LOOP_TICK_NS);
	pthread_mutex_unlock(&node->lock);
	if (rc)
		return rc;
	rc = pthread_create(&node->thread, NULL, loop_main, node);

	return -rc;
}

void ulnet__loop_stop(struct ulnet_node *node)
{
	pthread_mutex_lock(&node->lock);
	node->stopping = true;
	ulnet__loop_wake(node);
	pthread_mutex_unlock(&node->lock);
	pthread_join(node->thread, NULL);
}
