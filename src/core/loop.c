/* SPDX-License-Identifier: MIT */
/* The node's loops (node option loops): each a thread and the state it owns (struct ulnet_loop in
 * internal.h, docs/progress.md). One turn: epoll_wait (until the loop's next timer), the io callbacks
 * and kicked watchers, the mailbox (sends and calls other threads handed over), the due timers, the
 * completion phase (at most ULNET_COMPLETION_BUDGET finalized messages, msg.c), then, on loop 0, the
 * application's handlers, run without any lock. The loop's thread holds its owner lock through the
 * turn and lets it go only to wait for io, so an API thread may enter the loop meanwhile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

#define LOOP_MAX_EVENTS 64
#define LOOP_MAX_WAIT_MS 1000      /* epoll_wait bound: an injected clock may jump without a wake */
/* turns in a row a loop that keeps leaving itself work runs without epoll_wait: its sockets are polled
 * every LOOP_SKIP_MAX + 1 turns (a sending loop's epoll_wait(0) mostly finds nothing) */
#define LOOP_SKIP_MAX 3

/* Initial-exec: read several times per message, and the shared library's default (general dynamic)
 * model makes each read a call to __tls_get_addr; the few bytes come from the static TLS glibc keeps
 * spare even for a dlopen. */
_Thread_local struct ulnet_loop *ulnet__cur_loop ULNET_TLS_IE;
/* This thread holds every loop's owner lock (ulnet__loops_enter). */
static _Thread_local bool holds_all;
/* The loop whose thread this is, while it runs the application's handlers (run_callbacks). */
static _Thread_local struct ulnet_loop *handlers_of;

struct ulnet_loop *ulnet__handlers_of(const struct ulnet_node *node)
{
	return handlers_of && handlers_of->node == node ? handlers_of : NULL;
}

bool ulnet__holds_all_loops(void)
{
	return holds_all;
}

static int loop_init_one(struct ulnet_loop *loop)
{
	/* edge-triggered: every write to the eventfd reports it once, so the loop never reads it (a
	 * syscall per wake-up); its counter only grows, 2^64 writes from overflowing */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.ptr = NULL };

	loop->io.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->io.epfd < 0)
		return -errno;
	loop->io.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (loop->io.wakefd < 0 || epoll_ctl(loop->io.epfd, EPOLL_CTL_ADD, loop->io.wakefd, &ev) < 0)
		return -errno;
	return 0;
}

int ulnet__loop_init(struct ulnet_node *node)
{
	for (unsigned i = 0; i < ULNET_LOOPS_MAX; i++) {
		struct ulnet_loop *loop = &node->loops[i];

		loop->node = node;
		loop->idx = i;
		loop->io.epfd = loop->io.wakefd = -1;
		ulnet_list_init(&loop->mbox.sends);
		ulnet_list_init(&loop->mbox.calls);
		ulnet_list_init(&loop->done.q);
		ulnet__peer_table_init(&loop->peers);
	}
	for (unsigned i = 0; i < node->n_loops; i++) {
		int rc = loop_init_one(&node->loops[i]);

		if (rc) {
			ulnet__loop_free(node);
			return rc;
		}
	}
	return 0;
}

void ulnet__loop_free(struct ulnet_node *node)
{
	for (unsigned i = 0; i < ULNET_LOOPS_MAX; i++) {
		struct ulnet_loop *loop = &node->loops[i];

		if (loop->io.epfd >= 0)
			close(loop->io.epfd);
		if (loop->io.wakefd >= 0)
			close(loop->io.wakefd);
		loop->io.epfd = loop->io.wakefd = -1;
		free(loop->timers.v);
		loop->timers.v = NULL;
		ulnet__desc_cache_free(&loop->descs);
	}
}

/* ---- io watchers ---- */

static struct ulnet_loop *io_loop(struct ulnet_node *node, const struct ulnet_io *io)
{
	return &node->loops[io->loop < node->n_loops ? io->loop : 0];
}

int ulnet__io_start(struct ulnet_node *node, struct ulnet_io *io, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };
	int op = io->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	struct ulnet_loop *loop;

	if (io->events == events && events)
		return 0;
	if (!io->events && !io->kicked) { /* a new watcher belongs to the loop that starts it */
		struct ulnet_loop *own = ulnet__owned(node);

		io->loop = own ? own->idx : 0;
	}
	loop = io_loop(node, io);
	if (epoll_ctl(loop->io.epfd, op, io->fd, &ev) < 0)
		return -errno;
	if (!io->events && events) {
		loop->io.n_watchers++;
		if (io->poll) {
			io->hook_next = loop->io.hooks;
			loop->io.hooks = io;
		}
	}
	io->events = events ? events : io->events;
	return 0;
}

void ulnet__io_kick(struct ulnet_node *node, struct ulnet_io *io)
{
	ulnet__io_kick_events(node, io, EPOLLIN);
}

void ulnet__io_kick_events(struct ulnet_node *node, struct ulnet_io *io, uint32_t events)
{
	struct ulnet_io_set *s = &io_loop(node, io)->io;

	io->kick_events |= events;
	if (io->kicked)
		return;
	io->kicked = true;
	io->kick_next = NULL;
	if (!s->kicked)
		s->kicked_tail = &s->kicked;
	*s->kicked_tail = io;
	s->kicked_tail = &io->kick_next;
	/* the owner runs it this turn; an API thread that entered the loop wakes it when it leaves */
}

static void io_unkick(struct ulnet_io_set *s, struct ulnet_io *io)
{
	struct ulnet_io **pp = &s->kicked, *prev = NULL;

	if (!io->kicked)
		return;
	while (*pp && *pp != io) {
		prev = *pp;
		pp = &(*pp)->kick_next;
	}
	if (*pp) {
		*pp = io->kick_next;
		if (!io->kick_next)
			s->kicked_tail = prev ? &prev->kick_next : &s->kicked;
	}
	io->kicked = false;
	io->kick_events = 0;
}

/* The watchers kicked before this turn, once each (a callback kicking again waits a turn). */
static void run_kicked(struct ulnet_loop *loop)
{
	unsigned n = 0;

	for (struct ulnet_io *io = loop->io.kicked; io; io = io->kick_next)
		n++;
	while (n-- && loop->io.kicked) {
		struct ulnet_io *io = loop->io.kicked;
		uint32_t ev = io->kick_events;

		io_unkick(&loop->io, io);
		io->cb(io, ev);
	}
}

void ulnet__io_stop(struct ulnet_node *node, struct ulnet_io *io)
{
	struct ulnet_io_set *s = &io_loop(node, io)->io;

	io_unkick(s, io);
	if (s->spin_hot == io)
		s->spin_hot = NULL;
	if (io->events) {
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, io->fd, NULL);
		s->n_watchers--;
		for (struct ulnet_io **pp = &s->hooks; *pp; pp = &(*pp)->hook_next)
			if (*pp == io) {
				*pp = io->hook_next;
				break;
			}
	}
	for (int i = 0; i < s->cur_nevs; i++)
		if (s->cur_evs[i].data.ptr == io)
			s->cur_evs[i].data.ptr = NULL, s->cur_evs[i].events = 0;
	io->events = 0;
	io->stop_turn = s->turns;
}

bool ulnet__io_quiesced(struct ulnet_node *node, const struct ulnet_io *io)
{
	const struct ulnet_loop *loop = io_loop(node, io);

	/* a batch the loop's thread fetched before the stop is dispatched at stop_turn + 1 at the
	 * latest; on the loop's own thread io_stop took the watcher out of the batch being dispatched */
	return node->n_started == 0 || (loop == ulnet__cur_loop && !loop->entered) ||
	       loop->io.turns >= io->stop_turn + 2;
}

/* ---- waking a loop ---- */

static void loop_wake_one(struct ulnet_loop *loop)
{
	uint64_t one = 1;

	if (write(loop->io.wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		ULNET_LOG(CORE, WARN, "loop wake: %s", strerror(errno));
}

/* Work for @loop was queued (under its lock, before this): a busy-polling loop ends its spin, and one
 * that decided to sleep gets one eventfd write. The loop sets the flag before its last look for work
 * (loop_main), so whoever queues after that look sees the flag. The first waker clears it: a burst
 * of hand-offs costs one write, not one each. */
static void loop_notify(struct ulnet_loop *loop)
{
	atomic_store_explicit(&loop->mbox.poked, true, memory_order_relaxed);
	if (atomic_exchange(&loop->mbox.sleeping, false))
		loop_wake_one(loop);
}

void ulnet__loop_mail(struct ulnet_loop *loop, struct ulnet_msg *msg)
{
	ulnet__futex_lock(&loop->mbox.lock);
	ulnet_list_add_tail(&msg->link, &loop->mbox.sends);
	ulnet__futex_unlock(&loop->mbox.lock);
	loop_notify(loop);
}

int ulnet__loop_call(struct ulnet_loop *loop, void (*fn)(struct ulnet_loop *loop, void *arg), void *arg)
{
	struct ulnet_call *c = malloc(sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->arg = arg;
	ulnet__futex_lock(&loop->mbox.lock);
	ulnet_list_add_tail(&c->link, &loop->mbox.calls);
	ulnet__futex_unlock(&loop->mbox.lock);
	loop_notify(loop);
	return 0;
}

static bool mbox_empty(struct ulnet_loop *loop)
{
	bool empty;

	ulnet__futex_lock(&loop->mbox.lock);
	empty = ulnet_list_empty(&loop->mbox.sends) && ulnet_list_empty(&loop->mbox.calls);
	ulnet__futex_unlock(&loop->mbox.lock);
	return empty;
}

/* What other threads handed over: the sends (posted here: credits, the LND) and the calls. Owner. */
static void mbox_run(struct ulnet_loop *loop)
{
	struct ulnet_list sends, calls;

	ulnet_list_init(&sends);
	ulnet_list_init(&calls);
	ulnet__futex_lock(&loop->mbox.lock);
	ulnet_list_splice_tail_init(&loop->mbox.sends, &sends);
	ulnet_list_splice_tail_init(&loop->mbox.calls, &calls);
	ulnet__futex_unlock(&loop->mbox.lock);
	while (!ulnet_list_empty(&sends)) {
		struct ulnet_msg *msg = ulnet_list_first(&sends, struct ulnet_msg, link);

		ulnet_list_del(&msg->link);
		ulnet_list_init(&msg->link);
		ulnet__send_owned(loop, msg);
	}
	while (!ulnet_list_empty(&calls)) {
		struct ulnet_call *c = ulnet_list_first(&calls, struct ulnet_call, link);

		ulnet_list_del(&c->link);
		c->fn(loop, c->arg);
		free(c);
	}
}

void ulnet__node_sync(struct ulnet_node *node)
{
	for (unsigned i = 0; i < node->n_loops; i++) {
		while (node->n_started && !mbox_empty(&node->loops[i])) {
			loop_notify(&node->loops[i]);
			usleep(100);
		}
		/* the mailbox is empty from the moment the loop took it, before its turn sent what it held:
		 * the owner lock comes once that turn is over */
		if (node->n_started) {
			ulnet__loop_enter(&node->loops[i]);
			ulnet__loop_exit(&node->loops[i]);
		}
	}
}

/* ---- ownership ---- */

static bool cbs_pending(struct ulnet_node *node)
{
	bool any;

	ulnet__futex_lock(&node->cb_lock);
	any = node->n_cbs != 0;
	ulnet__futex_unlock(&node->cb_lock);
	return any;
}

/* Work for @loop right now, so it does not sleep. Owner. */
static bool loop_has_work(struct ulnet_loop *loop)
{
	return loop->io.kicked || !ulnet_list_empty(&loop->done.q) || !mbox_empty(loop) ||
	       (loop->idx == 0 && cbs_pending(loop->node));
}

void ulnet__loop_enter(struct ulnet_loop *loop)
{
	ulnet__tlock_take(&loop->owner);
	ulnet__cur_loop = loop;
	loop->entered = true;
}

void ulnet__loop_exit(struct ulnet_loop *loop)
{
	bool left;

	ulnet__completions_run(loop, ULNET_COMPLETION_BUDGET);
	left = loop->io.kicked || !ulnet_list_empty(&loop->done.q);
	loop->entered = false;
	ulnet__cur_loop = NULL;
	ulnet__tlock_drop(&loop->owner);
	if (left)
		loop_notify(loop);
}

void ulnet__loops_enter(struct ulnet_node *node, struct ulnet_loop *as)
{
	for (unsigned i = 0; i < node->n_loops; i++) {
		ulnet__tlock_take(&node->loops[i].owner);
		node->loops[i].entered = true;
	}
	holds_all = true;
	ulnet__cur_loop = as;
}

void ulnet__loops_exit(struct ulnet_node *node)
{
	for (unsigned i = 0; i < node->n_loops; i++) {
		struct ulnet_loop *loop = &node->loops[i];

		ulnet__cur_loop = loop;
		ulnet__completions_run(loop, ULNET_COMPLETION_BUDGET);
	}
	ulnet__cur_loop = NULL;
	holds_all = false;
	for (unsigned i = node->n_loops; i-- > 0;) {
		struct ulnet_loop *loop = &node->loops[i];
		bool left = loop->io.kicked || !ulnet_list_empty(&loop->done.q);

		loop->entered = false;
		ulnet__tlock_drop(&loop->owner);
		if (left)
			loop_notify(loop);
	}
}

/* ---- handlers ---- */

void ulnet__queue_cb(struct ulnet_node *node, ulnet_event_handler h, const struct ulnet_event *ev)
{
	struct ulnet_loop *loop0 = &node->loops[0];
	bool queued = false;

	ulnet__futex_lock(&node->cb_lock);
	if (node->n_cbs == node->cap_cbs) {
		size_t ncap = node->cap_cbs ? node->cap_cbs * 2 : 64;
		struct ulnet_pending_cb *n = realloc(node->cbs, ncap * sizeof(*n));

		if (n) {
			node->cbs = n;
			node->cap_cbs = ncap;
		}
	}
	if (node->n_cbs < node->cap_cbs) {
		node->cbs[node->n_cbs].handler = h;
		node->cbs[node->n_cbs].ev = *ev;
		node->n_cbs++;
		queued = true;
	}
	ulnet__futex_unlock(&node->cb_lock);
	if (!queued) {
		ULNET_LOG(CORE, ERR, "out of memory queueing an event handler call; %s event lost "
			  "(stats: events_dropped)", ulnet_event_kind_name(ev->type));
		atomic_fetch_add_explicit(&node->events_lost, 1, memory_order_relaxed);
		return;
	}
	/* loop 0's own thread runs them at the end of this turn; anyone else wakes it */
	if (!(ulnet__cur_loop == loop0 && !loop0->entered))
		loop_notify(loop0);
}

/* Loop 0's handlers, in queue order, with no lock held and no loop owned (a handler calls the API
 * like any application thread). Double-buffered: handlers queued meanwhile go to the other array,
 * and neither is freed per turn. Called as loop 0's owner; returns as its owner. */
static void run_callbacks(struct ulnet_loop *loop)
{
	struct ulnet_node *node = loop->node;

	for (;;) {
		struct ulnet_pending_cb *batch;
		size_t n, cap;

		ulnet__futex_lock(&node->cb_lock);
		batch = node->cbs;
		n = node->n_cbs;
		cap = node->cap_cbs;
		if (n) {
			node->cbs = node->cbs_spare;
			node->cap_cbs = node->cap_spare;
			node->n_cbs = 0;
			node->cbs_spare = NULL;
			node->cap_spare = 0;
		}
		ulnet__futex_unlock(&node->cb_lock);
		if (!n)
			return;
		ulnet__cur_loop = NULL;
		ulnet__tlock_drop(&loop->owner);
		handlers_of = loop;
		for (size_t i = 0; i < n; i++)
			batch[i].handler(&batch[i].ev);
		handlers_of = NULL;
		ulnet__tlock_take(&loop->owner);
		ulnet__cur_loop = loop;
		ulnet__futex_lock(&node->cb_lock);
		if (!node->cbs_spare) {
			node->cbs_spare = batch;
			node->cap_spare = cap;
			batch = NULL;
		}
		ulnet__futex_unlock(&node->cb_lock);
		free(batch);
	}
}

/* ---- the loop's thread ---- */

/* The io callbacks of a batch epoll_wait fetched (@n < 0: none). Owner. */
static void dispatch(struct ulnet_loop *loop, struct epoll_event *evs, int n)
{
	loop->io.cur_evs = evs;
	loop->io.cur_nevs = n > 0 ? n : 0;
	for (int i = 0; i < loop->io.cur_nevs; i++) {
		struct ulnet_io *io = evs[i].data.ptr;

		if (!evs[i].events || !io)
			continue;
		if (io->spin && (evs[i].events & EPOLLIN))
			loop->io.spin_hot = io; /* input comes here: the spins read this socket */
		io->cb(io, evs[i].events);
	}
	loop->io.cur_nevs = 0;
	loop->io.cur_evs = NULL;
}

/* The hooked watchers' poll (@arm false) or arm: each that has work is kicked with ULNET_IO_POLLED
 * (runs this turn). true: one had. Owner. */
static bool hooks_run(struct ulnet_loop *loop, bool arm)
{
	bool found = false;

	for (struct ulnet_io *io = loop->io.hooks, *next; io; io = next) {
		next = io->hook_next;
		if (arm ? io->arm(io) : io->poll(io)) {
			ulnet__io_kick_events(loop->node, io, ULNET_IO_POLLED);
			found = true;
		}
	}
	return found;
}

/* One turn of @loop's work: the io callbacks of the batch @evs (@n < 0: none), the watchers kicked
 * before, the mailbox, the due timers, the completion phase (bounded: a flood of completions cannot
 * starve the sockets; the rest wait a turn), what they queued on the sockets (out in this turn), then
 * on loop 0 the handlers (@handlers: not during a lead, whose thread is not the loop's). Owner. */
static void loop_turn(struct ulnet_loop *loop, struct epoll_event *evs, int n, bool handlers)
{
	struct ulnet_node *node = loop->node;
	uint64_t now;

	dispatch(loop, evs, n);
	run_kicked(loop);
	mbox_run(loop);
	now = ulnet__node_now(node);
	ulnet__timers_run(node, &loop->timers, now);
	if (loop->idx == 0)
		ulnet__node_timers_run(node, now);
	ulnet__completions_run(loop, ULNET_COMPLETION_BUDGET);
	run_kicked(loop);
	if (loop->idx == 0 && handlers)
		run_callbacks(loop);
}

/* Milliseconds until @loop's next timer (loop 0: also the node's), at most @max_ms. */
static int loop_timeout_ms(struct ulnet_loop *loop, int max_ms)
{
	struct ulnet_node *node = loop->node;
	uint64_t now = ulnet__node_now(node), first = ulnet__timers_first(&loop->timers), left;

	if (loop->idx == 0) {
		uint64_t n = atomic_load_explicit(&node->timers_next, memory_order_relaxed);

		if (n < first)
			first = n;
	}
	if (first == UINT64_MAX)
		return max_ms;
	if (first <= now)
		return 0;
	left = (first - now + 999999) / 1000000;
	return left < (uint64_t)max_ms ? (int)left : max_ms;
}

/* A spin of a busy-polling loop with hooked watchers: their poll as the loop's owner, if nobody
 * entered it (then that thread does the work; we look again at the next spin). */
static bool hooks_spin(struct ulnet_loop *loop)
{
	bool found;

	if (!ulnet__tlock_try(&loop->owner))
		return false;
	ulnet__cur_loop = loop;
	found = hooks_run(loop, false);
	ulnet__cur_loop = NULL;
	ulnet__tlock_drop(&loop->owner);
	return found;
}

/* A spin of a busy-polling loop whose sockets had input: the spin hook of the one input last came to
 * (one system call finds input and reads it, where epoll_wait(0) and a read after it are two), as the
 * owner. As the hook: > 0 found (the watcher kicked), 0 looked, < 0 did not look. */
static int sock_spin(struct ulnet_loop *loop)
{
	struct ulnet_io *io;
	int rc = -1;

	if (!ulnet__tlock_try(&loop->owner))
		return -1;
	ulnet__cur_loop = loop;
	io = loop->io.spin_hot;
	if (io) {
		rc = io->spin(io);
		if (rc > 0 && loop->io.spin_hot == io)
			ulnet__io_kick_events(loop->node, io, ULNET_IO_POLLED);
	}
	ulnet__cur_loop = NULL;
	ulnet__tlock_drop(&loop->owner);
	return rc;
}

/* Wait for io, not owning the loop: sleep in epoll_wait until @timeout, or with @spin_until (busy
 * polling) spin on epoll_wait(0) until then (ulnet__now_ns), a hand-off pokes us, or the timeout.
 * @hooked: the loop has hooked watchers, whose poll each spin runs (a find returns 0 with the watcher
 * kicked); their fds are then polled every 4th spin only. @hot: a socket had input (spin_hot): each
 * spin reads it (sock_spin), and epoll_wait, every 4th spin, watches the others. */
static int loop_wait(struct ulnet_loop *loop, struct epoll_event *evs, int timeout, uint64_t spin_until,
		     bool hooked, bool hot)
{
	unsigned spins = 0;
	uint64_t end;
	int n;

	if (timeout == 0 || !spin_until)
		return epoll_wait(loop->io.epfd, evs, LOOP_MAX_EVENTS, timeout);
	end = timeout < 0 ? spin_until : ulnet__now_ns() + (uint64_t)timeout * 1000000u;
	if (end > spin_until)
		end = spin_until;
	do {
		int looked;

		if (atomic_load_explicit(&loop->led, memory_order_relaxed))
			return 0; /* a caller leads: wait for it on the owner lock, not beside it */
		looked = hot ? sock_spin(loop) : -1;

		if (looked > 0)
			return 0;
		/* a spin that read no socket (none hot, or mid-message) polls them all */
		if (!(hooked || looked == 0) || spins++ % 4 == 3) {
			n = epoll_wait(loop->io.epfd, evs, LOOP_MAX_EVENTS, 0);
			if (n != 0)
				return n;
		}
		if (atomic_load_explicit(&loop->mbox.poked, memory_order_relaxed) || (hooked && hooks_spin(loop)))
			return 0;
		sched_yield(); /* a core shared with the threads we wait for: let them run */
	} while (ulnet__now_ns() < end);
	return 0;
}

/* ---- lead: a caller that waits for one event does the loop's work meanwhile ---- */

bool ulnet__lead_begin(struct ulnet_loop *loop)
{
	if (ulnet__cur_loop || !loop->node->n_started)
		return false;
	/* first the flag, so the loop's thread stops spinning and lets us take the owner lock (at the
	 * end of a turn under way), then yields to us until we are done (loop_main) */
	atomic_store_explicit(&loop->led, true, memory_order_relaxed);
	ulnet__tlock_take(&loop->owner);
	ulnet__cur_loop = loop;
	loop->entered = true;
	return true;
}

int ulnet__lead_wait(struct ulnet_loop *loop, ulnet_eq *eq, uint64_t end, struct ulnet_event *ev)
{
	struct ulnet_node *node = loop->node;
	struct epoll_event evs[LOOP_MAX_EVENTS];
	unsigned spins = 0;
	int rc;

	while (!(rc = ulnet_eq_wait(eq, 0, ev)) && ulnet__now_ns() < end &&
	       !atomic_load_explicit(&node->stopping, memory_order_relaxed)) {
		struct ulnet_io *hot = loop->io.spin_hot;
		int n = -1, looked = -1;

		/* as the loop's spin does (sock_spin): the socket input last came to is read with one
		 * call, and epoll_wait, every 4th time, watches the others */
		if (hot && spins++ % 4 != 3)
			looked = hot->spin(hot);
		if (looked > 0 && loop->io.spin_hot == hot)
			ulnet__io_kick_events(node, hot, ULNET_IO_POLLED);
		else if (looked < 0)
			n = epoll_wait(loop->io.epfd, evs, LOOP_MAX_EVENTS, 0);
		if (loop->io.hooks)
			hooks_run(loop, false);
		loop_turn(loop, evs, n, false); /* loop 0's handlers run on its thread, after the lead */
		if (looked == 0 || (looked < 0 && n <= 0 && !loop->io.kicked))
			sched_yield(); /* as a spinning loop does: the peer may share our core */
	}
	return rc;
}

void ulnet__lead_end(struct ulnet_loop *loop)
{
	atomic_store_explicit(&loop->led, false, memory_order_relaxed);
	ulnet__loop_exit(loop);
}

static void *loop_main(void *arg)
{
	struct ulnet_loop *loop = arg;
	struct ulnet_node *node = loop->node;
	struct epoll_event evs[LOOP_MAX_EVENTS];
	uint64_t busy_until = 0;
	bool skip_wait = false;
	unsigned skips = 0;

	ulnet__tlock_take(&loop->owner);
	ulnet__cur_loop = loop;
	while (!atomic_load_explicit(&node->stopping, memory_order_relaxed) &&
	       !atomic_load_explicit(&node->pausing, memory_order_relaxed)) {
		int n, timeout, wait_errno = 0;
		bool spin, hooked, hot;

		if (skip_wait) {
			/* the last turn left work (a handler sent: its output is kicked; a send completed):
			 * do it now rather than after an epoll_wait(0); every LOOP_SKIP_MAX + 1 turns at
			 * least polls, so sockets never starve */
			skip_wait = false;
			n = -1; /* no batch */
			goto turn;
		}
		timeout = loop_has_work(loop) ? 0 : loop_timeout_ms(loop, LOOP_MAX_WAIT_MS);
		spin = timeout != 0 && node->busy_poll_ns && ulnet__now_ns() < busy_until;
		/* about to sleep: the hooked sources make their fds readable from now on, or say that
		 * something came meanwhile */
		if (timeout && !spin && loop->io.hooks && hooks_run(loop, true))
			timeout = 0;
		hooked = loop->io.hooks != NULL;
		hot = loop->io.spin_hot != NULL;
		atomic_store_explicit(&loop->mbox.poked, false, memory_order_relaxed);
		if (timeout && !spin) {
			/* flag first, then the last look: a hand-off after that look sees the flag and
			 * writes the eventfd (loop_notify) */
			atomic_store(&loop->mbox.sleeping, true);
			if (loop_has_work(loop))
				timeout = 0;
		}
		ulnet__cur_loop = NULL;
		ulnet__tlock_drop(&loop->owner);
		n = loop_wait(loop, evs, timeout, spin ? busy_until : 0, hooked, hot);
		wait_errno = errno; /* the lock below may make futex calls that overwrite it */
		atomic_store(&loop->mbox.sleeping, false);
		/* a caller leads (ulnet__lead_begin): let it have the loop, yielding our core to it
		 * rather than sleeping on the lock, so its end needs no futex wake (a lead is at most a
		 * spin window long) */
		while (atomic_load_explicit(&loop->led, memory_order_relaxed))
			sched_yield();
		ulnet__tlock_take(&loop->owner);
		ulnet__cur_loop = loop;
		if (n < 0 && wait_errno != EINTR) {
			ULNET_LOG(CORE, ERR, "epoll_wait: %s", strerror(wait_errno));
			n = 0;
		}
		if (node->busy_poll_ns &&
		    (n > 0 || loop->io.kicked || atomic_load_explicit(&loop->mbox.poked, memory_order_relaxed)))
			busy_until = ulnet__now_ns() + node->busy_poll_ns;
turn:
		loop->io.turns++;
		loop_turn(loop, evs, n, true);
		if (n >= 0)
			skips = 0;
		/* user space only: what the hooked sources hold runs in the next turn without epoll_wait
		 * (a loop that never busy polls sleeps next: its sources stay armed) */
		if (loop->io.hooks && node->busy_poll_ns)
			hooks_run(loop, false);
		skip_wait = skips < LOOP_SKIP_MAX && loop_has_work(loop);
		skips += skip_wait;
	}
	if (loop->idx == 0 && !atomic_load_explicit(&node->pausing, memory_order_relaxed))
		run_callbacks(loop);
	ulnet__cur_loop = NULL;
	ulnet__tlock_drop(&loop->owner);
	return NULL;
}

/* Start loop @i's thread. 0 or a positive pthread error. */
static int loop_thread_start(struct ulnet_node *node, unsigned i)
{
	char name[16];
	int rc = pthread_create(&node->loops[i].thread, NULL, loop_main, &node->loops[i]);

	if (rc)
		return rc;
	/* top -H, perf --sort comm and gdb tell the loops apart */
	snprintf(name, sizeof(name), "ulnet-loop%u", i % 100000u); /* the kernel keeps 15 bytes */
	pthread_setname_np(node->loops[i].thread, name);
	return 0;
}

int ulnet__loop_start(struct ulnet_node *node)
{
	for (unsigned i = 0; i < node->n_loops; i++) {
		int rc = loop_thread_start(node, i);

		if (rc)
			return -rc;
		node->n_started++;
	}
	return 0;
}

/* Every loop thread leaves its loop at the end of a turn (no batch of events fetched and not yet
 * dispatched, no handler running) and is joined; ulnet__loops_resume starts them again. n_started
 * stays: the threads are only parked. Not from a loop's thread or an event handler. */
int ulnet__loops_pause(struct ulnet_node *node)
{
	if (atomic_exchange(&node->pausing, true))
		return -EBUSY; /* another thread has them parked */
	for (unsigned i = 0; i < node->n_started; i++)
		loop_wake_one(&node->loops[i]);
	for (unsigned i = 0; i < node->n_started; i++)
		pthread_join(node->loops[i].thread, NULL);
	return 0;
}

void ulnet__loops_resume(struct ulnet_node *node)
{
	atomic_store(&node->pausing, false);
	for (unsigned i = 0; i < node->n_started; i++) {
		int rc;

		/* a thread we cannot start again would leave its NIs dead: retry, as the node needs it */
		while ((rc = loop_thread_start(node, i)) == EAGAIN)
			usleep(1000);
		if (rc)
			ULNET_LOG(CORE, ERR, "loop %u: cannot restart its thread: %s", i, strerror(rc));
	}
}

void ulnet__loop_stop(struct ulnet_node *node)
{
	atomic_store(&node->stopping, true);
	for (unsigned i = 0; i < node->n_started; i++)
		loop_wake_one(&node->loops[i]);
	for (unsigned i = 0; i < node->n_started; i++)
		pthread_join(node->loops[i].thread, NULL);
	node->n_started = 0;
}

/* Node teardown, the threads stopped: what the mailboxes still hold runs now (sends fail with
 * -ESHUTDOWN as their NIs are down; calls release what they carry). */
void ulnet__loops_drain(struct ulnet_node *node)
{
	for (unsigned i = 0; i < node->n_loops; i++) {
		ulnet__cur_loop = &node->loops[i];
		mbox_run(&node->loops[i]);
	}
	ulnet__cur_loop = NULL;
}
