/* SPDX-License-Identifier: MIT */
/* The node's loop threads (node option loops). One turn: epoll_wait (until the next timer), io
 * callbacks (which may drop the lock around a socket call) and kicked watchers, submitted sends, due
 * timers (LND ticks, transaction timeouts; loop 0), the completion phase (at most
 * ULNET_COMPLETION_BUDGET finalized messages, msg.c), then the user handlers queued meanwhile, run
 * without the lock (loop 0) (docs/progress.md). */
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
/* A lazily handed-back loop (loop_unborrow) stays parked, its sockets polled by nobody, for a
 * busy-poll window but never longer than this */
#define LOOP_LINGER_MAX_NS 100000u
/* A lingering thread that wakes to find its window moved on (a lead came meanwhile: a ping stream
 * goes on) sleeps past the window's end, twice as far each time up to this, instead of waking about
 * every window: each such wake takes a core from a spinner. Work for the loop still ends the park at
 * once (loop_unpark); only socket input to a parked loop waits up to this after a stream ends. */
#define LOOP_LINGER_OVER_MAX_NS 400000u

/* The loop whose thread runs this code (NULL on other threads). Initial-exec: read several times per
 * message, and the shared library's default (general dynamic) model makes each read a call to
 * __tls_get_addr; the few bytes come from the static TLS glibc keeps spare even for a dlopen. */
static _Thread_local struct ulnet_loop *cur_loop ULNET_TLS_IE;
bool ulnet__on_loop(const struct ulnet_node *node)
{
	return cur_loop && cur_loop->node == node;
}

static int loop_init_one(struct ulnet_loop *loop)
{
	/* edge-triggered: every write to the eventfd reports it once, so the loop never reads it (a
	 * syscall per wake-up); its counter only grows, 2^64 writes from overflowing */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.ptr = NULL };

	loop->wakefd = -1;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0)
		return -errno;
	loop->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (loop->wakefd < 0 || epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wakefd, &ev) < 0)
		return -errno;
	return 0;
}

int ulnet__loop_init(struct ulnet_node *node)
{
	for (unsigned i = 0; i < ULNET_LOOPS_MAX; i++) {
		node->loops[i].epfd = node->loops[i].wakefd = -1;
		ulnet_list_init(&node->loops[i].submit_q);
	}
	for (unsigned i = 0; i < node->n_loops; i++) {
		struct ulnet_loop *loop = &node->loops[i];
		int rc;

		loop->node = node;
		loop->idx = i;
		rc = loop_init_one(loop);
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
		if (node->loops[i].epfd >= 0)
			close(node->loops[i].epfd);
		if (node->loops[i].wakefd >= 0)
			close(node->loops[i].wakefd);
		node->loops[i].node = NULL;
		node->loops[i].epfd = node->loops[i].wakefd = -1;
	}
}

static struct ulnet_loop *io_loop(struct ulnet_node *node, const struct ulnet_io *io)
{
	return &node->loops[io->loop < node->n_loops ? io->loop : 0];
}

unsigned ulnet__nid_loop(const struct ulnet_node *node, const struct ulnet_nid *nid)
{
	return node->n_loops > 1 ? ulnet__nid_hash(nid) % node->n_loops : 0;
}

int ulnet__io_start(struct ulnet_node *node, struct ulnet_io *io, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };
	int op = io->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;

	if (io->events == events && events)
		return 0;
	if (epoll_ctl(io_loop(node, io)->epfd, op, io->fd, &ev) < 0)
		return -errno;
	if (!io->events && events) {
		struct ulnet_loop *loop = io_loop(node, io);

		loop->n_watchers++;
		if (io->poll) {
			io->hook_next = loop->hooks;
			loop->hooks = io;
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
	struct ulnet_loop *loop = io_loop(node, io);

	io->kick_events |= events;
	if (io->kicked)
		return;
	io->kicked = true;
	io->kick_next = NULL;
	if (!loop->kicked)
		loop->kicked_tail = &loop->kicked;
	*loop->kicked_tail = io;
	loop->kicked_tail = &io->kick_next;
	if (loop != cur_loop)
		ulnet__loop_wake_if_sleeping(loop); /* kicked from an API call or another loop */
}

static void io_unkick(struct ulnet_loop *loop, struct ulnet_io *io)
{
	struct ulnet_io **pp = &loop->kicked, *prev = NULL;

	if (!io->kicked)
		return;
	while (*pp && *pp != io) {
		prev = *pp;
		pp = &(*pp)->kick_next;
	}
	if (*pp) {
		*pp = io->kick_next;
		if (!io->kick_next)
			loop->kicked_tail = prev ? &prev->kick_next : &loop->kicked;
	}
	io->kicked = false;
	io->kick_events = 0;
}

/* The watchers kicked before this turn, once each (a callback kicking again waits a turn). */
static void run_kicked(struct ulnet_loop *loop)
{
	unsigned n = 0;

	for (struct ulnet_io *io = loop->kicked; io; io = io->kick_next)
		n++;
	while (n-- && loop->kicked) {
		struct ulnet_io *io = loop->kicked;
		uint32_t ev = io->kick_events;

		io_unkick(loop, io);
		io->cb(io, ev);
	}
}

/* Take @io off @loop's epoll set and out of its kicked list and of the batch it is dispatching. */
static void io_detach(struct ulnet_loop *loop, struct ulnet_io *io)
{
	io_unkick(loop, io);
	if (loop->spin_hot == io)
		loop->spin_hot = NULL;
	if (io->events) {
		epoll_ctl(loop->epfd, EPOLL_CTL_DEL, io->fd, NULL);
		loop->n_watchers--;
		for (struct ulnet_io **pp = &loop->hooks; *pp; pp = &(*pp)->hook_next)
			if (*pp == io) {
				*pp = io->hook_next;
				break;
			}
	}
	for (int i = 0; i < loop->cur_nevs; i++)
		if (loop->cur_evs[i].data.ptr == io)
			loop->cur_evs[i].data.ptr = NULL, loop->cur_evs[i].events = 0;
}

void ulnet__io_stop(struct ulnet_node *node, struct ulnet_io *io)
{
	struct ulnet_loop *loop = io_loop(node, io);

	io_detach(loop, io);
	io->events = 0;
	io->stop_turn = loop->turns;
}

bool ulnet__io_quiesced(struct ulnet_node *node, const struct ulnet_io *io)
{
	const struct ulnet_loop *loop = io_loop(node, io);

	/* a batch fetched before the stop is dispatched at stop_turn + 1 at the latest (a borrowed
	 * loop's thread may hold one: loop_borrow) */
	return node->n_started == 0 || (loop == cur_loop && !loop->borrowed) || loop->turns >= io->stop_turn + 2;
}

void ulnet__io_bind(struct ulnet_node *node, struct ulnet_io *io, unsigned idx)
{
	struct ulnet_loop *from = io_loop(node, io), *to = &node->loops[idx < node->n_loops ? idx : 0];
	uint32_t events = io->events, kicks = io->kicked ? io->kick_events : 0;

	if (from == to)
		return;
	io_detach(from, io);
	io->events = 0;
	io->loop = to->idx;
	if (events && ulnet__io_start(node, io, events))
		ULNET_LOG(CORE, ERR, "moving a watcher to loop %u: epoll: %s", to->idx, strerror(errno));
	if (kicks)
		ulnet__io_kick_events(node, io, kicks);
}

void ulnet__io_unlock(struct ulnet_node *node)
{
	ulnet__lock_release(node);
}

void ulnet__io_relock(struct ulnet_node *node)
{
	ulnet__lock(node);
}

static void loop_wake_one(struct ulnet_loop *loop)
{
	uint64_t one = 1;

	if (write(loop->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		ULNET_LOG(CORE, WARN, "loop wake: %s", strerror(errno));
}

/* End a park (loop_park): the sequence moves, so a thread about to sleep on it does not. */
static void loop_park_signal(struct ulnet_loop *loop)
{
	atomic_fetch_add_explicit(&loop->park_seq, 1, memory_order_release);
	ulnet__futex_wake(&loop->park_seq);
}

/* Work for a loop whose thread is parked after a lead (loop_park): it leaves the park now rather than
 * at the end of its linger. Without the lock (ulnet__node_sync) this may come between the thread's
 * check and its sleep; the sequence it sleeps on has moved by then, so it does not sleep. */
static void loop_unpark(struct ulnet_loop *loop)
{
	if (atomic_load_explicit(&loop->parked, memory_order_relaxed)) {
		atomic_store_explicit(&loop->unpark, true, memory_order_relaxed);
		loop_park_signal(loop);
	}
}

void ulnet__loop_wake_if_sleeping(struct ulnet_loop *loop)
{
	atomic_store_explicit(&loop->poked, true, memory_order_relaxed); /* a busy-polling loop looks */
	/* the loop sets the flag under the lock before it computes its timeout: if it is clear, the
	 * loop has not decided to sleep yet and will see the work when it takes the lock again. The
	 * first waker clears it: one eventfd write wakes the loop, the calls that queue more work before
	 * it is back need none (a burst of API calls costs one write, not one each). */
	if (atomic_exchange_explicit(&loop->sleeping, false, memory_order_relaxed))
		loop_wake_one(loop);
	loop_unpark(loop);
}

/* The io callbacks of a batch epoll_wait fetched (@n < 0: none). Lock held. */
static void dispatch(struct ulnet_loop *loop, struct epoll_event *evs, int n)
{
	loop->cur_evs = evs;
	loop->cur_nevs = n > 0 ? n : 0;
	for (int i = 0; i < loop->cur_nevs; i++) {
		struct ulnet_io *io = evs[i].data.ptr;

		if (!evs[i].events || !io)
			continue;
		if (io->spin && (evs[i].events & EPOLLIN))
			loop->spin_hot = io; /* input comes here: the spins read this socket */
		io->cb(io, evs[i].events);
	}
	loop->cur_nevs = 0;
	loop->cur_evs = NULL;
}

static uint64_t loop_linger_ns(const struct ulnet_node *node)
{
	return node->busy_poll_ns < LOOP_LINGER_MAX_NS ? node->busy_poll_ns : LOOP_LINGER_MAX_NS;
}

/* Hand a borrowed loop back to its thread; @lazy: leave its thread parked (if it is) until a
 * busy-poll window from now, for the next lead or borrow to find it there with no wake-up, unless
 * work for it comes first (loop_unpark). Lock held. */
static void loop_unborrow(struct ulnet_loop *loop, bool lazy)
{
	cur_loop = NULL;
	loop->borrowed = false;
	if (lazy && loop->borrow_waiting) {
		loop->linger_until = ulnet__now_ns() + loop_linger_ns(loop->node);
		return;
	}
	loop->linger_until = 0;
	if (loop->borrow_waiting) {
		loop->borrow_waiting = false;
		loop_park_signal(loop);
	}
}

/* The loop's thread, back from epoll_wait with the lock, waits while its loop is borrowed and, after a
 * lead, while it lingers (loop_unborrow): timed, as a lazy hand-back sends no signal. Its batch waits
 * with it (ulnet__io_quiesced counts its turns, not the borrowers'). Lock held. */
static void loop_park(struct ulnet_loop *loop)
{
	struct ulnet_node *node = loop->node;
	uint64_t over = 0; /* how far past the window this sleep goes (LOOP_LINGER_OVER_MAX_NS) */

	while (loop->borrowed || (loop->linger_until && !node->stopping &&
				  !atomic_load_explicit(&loop->unpark, memory_order_relaxed) &&
				  ulnet__now_ns() < loop->linger_until + over)) {
		/* read under the lock, before it goes: a signal after this point moves the sequence, and
		 * the sleep ends (or does not start) */
		uint32_t seq = atomic_load_explicit(&loop->park_seq, memory_order_acquire);
		uint64_t window = loop->linger_until, until = window ? window + over : 0;

		loop->borrow_waiting = true;
		atomic_store_explicit(&loop->parked, true, memory_order_relaxed);
		ulnet__lock_release(node);
		ulnet__futex_wait(&loop->park_seq, seq, until);
		ulnet__lock(node);
		if (window && loop->linger_until > window) { /* a lead moved the window while we slept */
			over = over ? over * 2 : loop_linger_ns(node);
			if (over > LOOP_LINGER_OVER_MAX_NS)
				over = LOOP_LINGER_OVER_MAX_NS;
		}
	}
	loop->borrow_waiting = false;
	loop->linger_until = 0;
	atomic_store_explicit(&loop->parked, false, memory_order_relaxed);
	atomic_store_explicit(&loop->unpark, false, memory_order_relaxed);
}

/* Leader/follower: an API call that leaves a send it blocks on next (node->submit_borrow) submitted to
 * a loop waiting for io does that loop's work for it itself (posts it, writes it with the lock dropped
 * around the socket call, completes what that finished), instead of a wake-up of the loop thread and
 * a hand-off. The loop is borrowed meanwhile: if epoll wakes it, it waits for the borrower before its
 * turn, so its watchers still run on one thread at a time. Handlers and timers stay with loop 0's thread. Lock held. */
static bool loop_borrow(struct ulnet_loop *loop)
{
	struct ulnet_node *node = loop->node;
	bool lingering = loop->linger_until != 0;

	if (cur_loop || !(loop->in_wait || lingering) || loop->borrowed || node->stopping || !node->n_started ||
	    ulnet_list_empty(&loop->submit_q))
		return false;
	loop->borrowed = true;
	cur_loop = loop; /* kicks of its watchers wait for run_kicked below, no wake-up */
	run_kicked(loop);
	ulnet__submitted_run(loop);
	ulnet__completions_run(node, ULNET_COMPLETION_BUDGET);
	run_kicked(loop);
	loop_unborrow(loop, lingering); /* what it left wakes it (ulnet__unlock) */
	return true;
}

/* Drop the node lock taken by an API call. Off the loop thread, first run the completion phase for
 * what the call finalized (lo completes inside ulnet_put; at the top of the call, so no recursion),
 * then wake the loop if handlers or completions beyond the budget wait. The loop thread itself (a
 * handler calling the API) leaves both to the end of its turn. */
void ulnet__unlock(struct ulnet_node *node)
{
	uint64_t wake = 0, subs = node->submit_wake, borrow = node->submit_borrow;

	node->submit_wake = node->submit_borrow = 0;
	if (!ulnet__on_loop(node)) {
		uint64_t borrowed = 0;

		/* leader/follower: a send this call's thread blocks on next, submitted to a loop waiting
		 * for io, goes out from here. Only such a send: a streaming caller's would go out one
		 * sendmsg each instead of batched by the loop (tcp_msgrate, 2 loops: about 1 M msg/s
		 * without borrowing, 260 k with). */
		for (unsigned i = 0; i < node->n_loops; i++)
			if ((borrow >> i & 1) && loop_borrow(&node->loops[i]))
				borrowed |= 1ull << i;
		subs &= ~borrowed;
		ulnet__completions_run(node, ULNET_COMPLETION_BUDGET);
		if (node->n_cbs > 0 || !ulnet_list_empty(&node->done_q))
			subs |= 1; /* loop 0 */
		/* a borrowed loop gets back what the borrower left: callbacks kicked again, submissions past
		 * the budget */
		for (unsigned i = 0; i < node->n_loops; i++)
			if ((borrowed >> i & 1) && (node->loops[i].kicked || !ulnet_list_empty(&node->loops[i].submit_q)))
				subs |= 1ull << i;
		/* each loop that has work: poke it (busy polling) and take its eventfd write if it sleeps */
		for (unsigned i = 0; subs; i++, subs >>= 1) {
			struct ulnet_loop *loop = &node->loops[i];

			if (!(subs & 1))
				continue;
			atomic_store_explicit(&loop->poked, true, memory_order_relaxed);
			if (atomic_exchange_explicit(&loop->sleeping, false, memory_order_relaxed))
				wake |= 1ull << i;
			loop_unpark(loop);
		}
	}
	ulnet__lock_release(node);
	for (unsigned i = 0; wake; i++, wake >>= 1)
		if (wake & 1)
			loop_wake_one(&node->loops[i]);
}

void ulnet__queue_cb(struct ulnet_node *node, ulnet_event_handler h, const struct ulnet_event *ev)
{
	if (node->n_cbs == node->cap_cbs) {
		size_t ncap = node->cap_cbs ? node->cap_cbs * 2 : 64;
		struct ulnet_pending_cb *n = realloc(node->cbs, ncap * sizeof(*n));

		if (!n) {
			ULNET_LOG(CORE, ERR, "out of memory queueing an event handler call; %s event lost "
				  "(stats: events_dropped)", ulnet_event_kind_name(ev->type));
			node->stats.events_dropped++;
			return;
		}
		node->cbs = n;
		node->cap_cbs = ncap;
	}
	node->cbs[node->n_cbs].handler = h;
	node->cbs[node->n_cbs].ev = *ev;
	node->n_cbs++;
}

/* Called with the lock held; returns with it held. Handlers run unlocked, in queue order. The queue
 * is double-buffered: handlers queued meanwhile go to the other array, and neither is freed per turn. */
static void run_callbacks(struct ulnet_node *node)
{
	while (node->n_cbs) {
		struct ulnet_pending_cb *batch = node->cbs;
		size_t n = node->n_cbs, cap = node->cap_cbs;

		node->cbs = node->cbs_spare;
		node->cap_cbs = node->cap_spare;
		node->n_cbs = 0;
		node->cbs_spare = NULL;
		node->cap_spare = 0;
		ulnet__lock_release(node);
		for (size_t i = 0; i < n; i++)
			batch[i].handler(&batch[i].ev);
		ulnet__lock(node);
		node->cbs_spare = batch;
		node->cap_spare = cap;
	}
}

/* The hooked watchers' poll (@arm false) or arm: each that has work is kicked with ULNET_IO_POLLED
 * (runs this turn). true: one had. Lock held, on @loop's thread. */
static bool hooks_run(struct ulnet_loop *loop, bool arm)
{
	bool found = false;

	for (struct ulnet_io *io = loop->hooks, *next; io; io = next) {
		next = io->hook_next;
		if (arm ? io->arm(io) : io->poll(io)) {
			ulnet__io_kick_events(loop->node, io, ULNET_IO_POLLED);
			found = true;
		}
	}
	return found;
}

/* One turn of @loop's work, defined once for its thread (loop_main) and a receive-side lead
 * (ulnet__loop_lead): the io callbacks of the batch @evs (@n < 0: none), the watchers kicked before,
 * the submitted sends, the due timers (@owner0: loop 0's own thread), the completion phase (bounded: a
 * flood of completions cannot starve the sockets; the rest wait a turn), what the sends and completions
 * queued on the sockets (out in this turn), then the handlers: run by loop 0's thread, queued ones
 * wake it from any other loop. Lock held. */
static void loop_turn(struct ulnet_loop *loop, struct epoll_event *evs, int n, bool owner0)
{
	struct ulnet_node *node = loop->node;

	dispatch(loop, evs, n);
	run_kicked(loop);
	ulnet__submitted_run(loop);
	if (owner0)
		ulnet__timers_run(node, ulnet__node_now(node));
	ulnet__completions_run(node, ULNET_COMPLETION_BUDGET);
	run_kicked(loop);
	if (owner0)
		run_callbacks(node);
	else if (loop->idx != 0 && node->n_cbs)
		ulnet__loop_wake_if_sleeping(&node->loops[0]);
}

/* A spin of a busy-polling loop with hooked watchers: their poll under the lock, if it is free (a
 * holder is doing work; we look again at the next spin). Lock not held. */
static bool hooks_spin(struct ulnet_loop *loop)
{
	struct ulnet_node *node = loop->node;
	bool found;

	if (!ulnet__trylock(node))
		return false;
	found = hooks_run(loop, false);
	ulnet__lock_release(node);
	return found;
}

/* A spin of a busy-polling loop whose sockets had input: the spin hook of the one input last came to
 * (one system call finds input and reads it, where epoll_wait(0) and a read after it are two), under
 * the lock if it is free. As the hook: > 0 found (the watcher kicked), 0 looked, < 0 did not look.
 * Lock not held. */
static int sock_spin(struct ulnet_loop *loop)
{
	struct ulnet_node *node = loop->node;
	struct ulnet_io *io;
	int rc = -1;

	if (!ulnet__trylock(node))
		return -1;
	io = loop->spin_hot;
	if (io && !loop->borrowed) {
		/* the hook may drop the lock: no borrower or lead meanwhile (they take a loop in_wait), so
		 * the watcher's callbacks and hooks stay on one thread; a close meanwhile takes it off
		 * (io_detach) */
		loop->in_wait = false;
		rc = io->spin(io);
		if (rc > 0 && loop->spin_hot == io)
			ulnet__io_kick_events(node, io, ULNET_IO_POLLED);
		loop->in_wait = true;
	}
	ulnet__lock_release(node);
	return rc;
}

/* Wait for io: sleep in epoll_wait until @timeout, or with @spin_until (busy polling, decided under the
 * lock together with the sleeping flag: a loop that decided to spin never sleeps unflagged, where a
 * poke could not wake it) spin on epoll_wait(0) until then (ulnet__now_ns), an API call pokes us, or
 * the timeout. @hooked: the loop has hooked watchers, whose poll each spin runs (a find returns 0 with
 * the watcher kicked); their fds are then polled every 4th spin only (what they wait for mostly comes
 * through the hook, and epoll_wait is a system call). @hot: a socket had input (loop->spin_hot): each
 * spin reads it (sock_spin), and epoll_wait, every 4th spin, watches the others. Lock not held. */
static int loop_wait(struct ulnet_loop *loop, struct epoll_event *evs, int timeout, uint64_t spin_until,
		     bool hooked, bool hot)
{
	unsigned spins = 0;
	uint64_t end;
	int n;

	if (timeout == 0 || !spin_until)
		return epoll_wait(loop->epfd, evs, LOOP_MAX_EVENTS, timeout);
	end = timeout < 0 ? spin_until : ulnet__now_ns() + (uint64_t)timeout * 1000000u;
	if (end > spin_until)
		end = spin_until;
	do {
		int looked = hot ? sock_spin(loop) : -1;

		if (looked > 0)
			return 0;
		/* a spin that read no socket (none hot, or mid-message) polls them all */
		if (!(hooked || looked == 0) || spins++ % 4 == 3) {
			n = epoll_wait(loop->epfd, evs, LOOP_MAX_EVENTS, 0);
			if (n != 0)
				return n;
		}
		if (atomic_load_explicit(&loop->poked, memory_order_relaxed) || (hooked && hooks_spin(loop)))
			return 0;
		sched_yield(); /* a core shared with the threads we wait for: let them run */
	} while (ulnet__now_ns() < end);
	return 0;
}

static bool loop_has_work(const struct ulnet_loop *loop);

/* Leader/follower on the receive side: a thread about to spin for an event (ulnet_ping waiting for its
 * REPLY) on a node whose loop @idx busy polls takes that loop's place instead of spinning beside it
 * (three spinners on two cores): the poke ends the loop thread's spin and it parks (loop_park), and
 * this thread polls the loop's epoll set and runs its turns (io callbacks, kicked watchers,
 * submissions, completions) until the event is queued or @end. The REPLY is read, matched and
 * delivered on the thread that waits for it. The hand-back is lazy: with the event and nothing left
 * for the loop, its thread stays parked for a busy-poll window, where the next lead (the next ping)
 * finds it with no wake-up; work for it (loop_unpark) or the window's end resumes it. Loop 0's
 * handlers and timers stay on its thread: queued handlers or a due timer end the lead and wake it.
 * Lock not held. */
int ulnet__loop_lead(struct ulnet_node *node, unsigned idx, ulnet_eq *eq, uint64_t end, struct ulnet_event *ev)
{
	struct ulnet_loop *loop = &node->loops[idx < node->n_loops ? idx : 0];
	struct epoll_event evs[LOOP_MAX_EVENTS];
	unsigned spins = 0;
	bool lazy;
	int rc;

	if (cur_loop)
		return -EAGAIN;
	ulnet__lock(node);
	if (!((loop->in_wait && loop->spinning) || loop->linger_until) || loop->borrowed || node->stopping ||
	    !node->n_started) {
		ulnet__lock_release(node);
		return -EAGAIN;
	}
	loop->borrowed = true;
	/* the thread parks with a timed wait: a lazy hand-back (loop_unborrow) sends no signal */
	if (loop->linger_until < end + loop_linger_ns(node))
		loop->linger_until = end + loop_linger_ns(node);
	atomic_store_explicit(&loop->poked, true, memory_order_relaxed); /* a spinning thread stops */
	cur_loop = loop;
	while (!(rc = ulnet_eq_wait(eq, 0, ev)) && !node->stopping && ulnet__now_ns() < end &&
	       !(loop->idx == 0 && (node->n_cbs || !ulnet__timers_next_ms(node, ulnet__node_now(node), 1)))) {
		struct ulnet_io *hot = loop->spin_hot;
		int n = -1, looked = -1; /* no batch; no socket read */

		/* the socket spin, as the loop's (sock_spin): the lead is its loop's runner */
		if (hot && spins++ % 4 != 3)
			looked = hot->spin(hot);
		if (looked > 0) {
			if (loop->spin_hot == hot)
				ulnet__io_kick_events(node, hot, ULNET_IO_POLLED);
		} else if (looked == 0) {
			ulnet__lock_release(node);
			sched_yield();
			ulnet__lock(node);
		} else {
			ulnet__lock_release(node);
			n = epoll_wait(loop->epfd, evs, LOOP_MAX_EVENTS, 0);
			if (n == 0)
				sched_yield(); /* as a spinning loop does */
			ulnet__lock(node);
		}
		if (loop->hooks) /* the parked thread's hooks, as its spin would (an o2ib REPLY) */
			hooks_run(loop, false);
		loop_turn(loop, evs, n, false); /* not counted in loop->turns: the parked thread's batch waits */
	}
	lazy = rc > 0 && !node->stopping && !loop_has_work(loop) &&
	       !(loop->idx == 0 && !ulnet__timers_next_ms(node, ulnet__node_now(node), 1));
	loop_unborrow(loop, lazy);
	ulnet__lock_release(node);
	return rc;
}

/* Work for @loop right now (so it does not sleep): its kicked watchers, the node's submissions and
 * completions (any loop runs them), and on loop 0 the handlers. Lock held. */
static bool loop_has_work(const struct ulnet_loop *loop)
{
	const struct ulnet_node *node = loop->node;

	return loop->kicked || !ulnet_list_empty(&node->done_q) || !ulnet_list_empty(&loop->submit_q) ||
	       (loop->idx == 0 && node->n_cbs);
}

/* One loop thread. Loop 0 also runs the timers and the user handlers (in order, one thread); the
 * others wake it when they leave handlers queued. */
static void *loop_main(void *arg)
{
	struct ulnet_loop *loop = arg;
	struct ulnet_node *node = loop->node;
	struct epoll_event evs[LOOP_MAX_EVENTS];
	uint64_t busy_until = 0;
	bool first = loop->idx == 0, skip_wait = false;
	unsigned skips = 0;

	cur_loop = loop;
	ulnet__lock(node);
	while (!node->stopping) {
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
		timeout = loop_has_work(loop) ? 0
			  : first ? ulnet__timers_next_ms(node, ulnet__node_now(node), LOOP_MAX_WAIT_MS)
			  : LOOP_MAX_WAIT_MS;
		spin = timeout != 0 && node->busy_poll_ns && ulnet__now_ns() < busy_until;
		/* about to sleep: the hooked sources make their fds readable from now on, or say that
		 * something came meanwhile */
		if (timeout && !spin && loop->hooks && hooks_run(loop, true))
			timeout = 0;
		hooked = loop->hooks != NULL;
		hot = loop->spin_hot != NULL;
		atomic_store_explicit(&loop->poked, false, memory_order_relaxed);
		/* a spinning loop needs no eventfd write: a poke ends its spin */
		if (timeout && !spin)
			atomic_store_explicit(&loop->sleeping, true, memory_order_relaxed);
		loop->in_wait = true;
		loop->spinning = spin;
		ulnet__lock_release(node);
		n = loop_wait(loop, evs, timeout, spin ? busy_until : 0, hooked, hot);
		wait_errno = errno; /* the lock and park below may make futex calls that overwrite it */
		atomic_store_explicit(&loop->sleeping, false, memory_order_relaxed);
		ulnet__lock(node);
		loop->in_wait = loop->spinning = false; /* no new borrower: one at most to wait for */
		/* an API call does our work: our batch waits for it (loop_borrow, ulnet__loop_lead) */
		loop_park(loop);
		if (n < 0 && wait_errno != EINTR) {
			ULNET_LOG(CORE, ERR, "epoll_wait: %s", strerror(wait_errno));
			n = 0;
		}
		if (node->busy_poll_ns && (n > 0 || loop->kicked || atomic_load_explicit(&loop->poked, memory_order_relaxed)))
			busy_until = ulnet__now_ns() + node->busy_poll_ns;
turn:
		loop->turns++;
		loop_turn(loop, evs, n, first);
		if (n >= 0)
			skips = 0;
		/* user space only: what the hooked sources hold runs in the next turn without epoll_wait
		 * (a loop that never busy polls sleeps next: its sources stay armed) */
		if (loop->hooks && node->busy_poll_ns)
			hooks_run(loop, false);
		skip_wait = skips < LOOP_SKIP_MAX && loop_has_work(loop);
		skips += skip_wait;
	}
	if (first)
		run_callbacks(node);
	ulnet__lock_release(node);
	return NULL;
}

int ulnet__loop_start(struct ulnet_node *node)
{
	int rc;

	for (unsigned i = 0; i < node->n_loops; i++) {
		char name[16];

		rc = pthread_create(&node->loops[i].thread, NULL, loop_main, &node->loops[i]);
		if (rc)
			return -rc;
		node->n_started++;
		/* top -H, perf --sort comm and gdb tell the loops apart */
		snprintf(name, sizeof(name), "ulnet-loop%u", i % 100000u); /* the kernel keeps 15 bytes */
		pthread_setname_np(node->loops[i].thread, name);
	}
	return 0;
}

void ulnet__loop_stop(struct ulnet_node *node)
{
	ulnet__lock(node);
	node->stopping = true;
	for (unsigned i = 0; i < node->n_started; i++) {
		loop_wake_one(&node->loops[i]);
		loop_park_signal(&node->loops[i]); /* a lingering park (loop_park) */
	}
	ulnet__lock_release(node);
	for (unsigned i = 0; i < node->n_started; i++)
		pthread_join(node->loops[i].thread, NULL);
	node->n_started = 0;
}
