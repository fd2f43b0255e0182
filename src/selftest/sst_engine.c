/* SPDX-License-Identifier: MIT */
/* The selftest engine (sst_internal.h): the MD handler that dispatches every event by RPC role on the
 * node's loop thread; the engine thread, which expires RPCs and sessions every 10 ms (every 1 s
 * while nothing has a deadline); start and stop; and the inject and stats entry points. */
#include "sst_internal.h"
#include "log.h"

ULNET_LOG_SUBSYS_DEFINE(SST, "SST")

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

#define SST_TEST_BUFS 256   /* posted request buffers per test service */
#define SST_FW_BUFS 16      /* per framework service */
#define SST_TICK_NS 10000000ull        /* the tick while RPCs or tests run */
#define SST_IDLE_TICK_NS 1000000000ull /* with nothing to expire but a session (100 s): an idle node
					* does not wake 100 times a second for nothing */

/* The engines of this process, by instance number (an MD's user_ptr names its engine by it). The
 * table's lock is held only to find an engine and count its handler in or out, never across one:
 * engines of different nodes handle their events at the same time. */
static struct ulnet_futex_lock engines_lock; /* per event: a futex lock, not glibc's mutex */
static struct ulnet_sst *engines[SST_MAX_INST + 1];

static int engine_register(struct ulnet_sst *sst)
{
	int rc = -ENOSPC;

	ulnet__futex_lock(&engines_lock);
	for (unsigned i = 1; i <= SST_MAX_INST; i++)
		if (!engines[i]) {
			engines[i] = sst;
			sst->inst = i;
			rc = 0;
			break;
		}
	ulnet__futex_unlock(&engines_lock);
	if (rc)
		ULNET_LOG(SST, ERR, "more than %u selftest engines in one process", SST_MAX_INST);
	return rc;
}

/* Out of the table, and no handler still in it: the engine may be freed. */
static void engine_unregister(struct ulnet_sst *sst)
{
	uint32_t n;

	ulnet__futex_lock(&engines_lock);
	if (sst->inst && engines[sst->inst] == sst)
		engines[sst->inst] = NULL;
	ulnet__futex_unlock(&engines_lock);
	for (;;) {
		ulnet__futex_lock(&engines_lock);
		n = atomic_load_explicit(&sst->handlers, memory_order_relaxed);
		ulnet__futex_unlock(&engines_lock);
		if (!n)
			return;
		ulnet__futex_wait(&sst->handlers, n, 0);
	}
}

static bool engine_idle(const struct ulnet_sst *sst)
{
	for (int i = 0; i < SST_HASH; i++)
		if (sst->hash[i])
			return false;
	return true;
}

/* Nothing for the tick to watch but the session: no RPC with a deadline, no running test, no test
 * to reap. */
static bool engine_quiet(const struct ulnet_sst *sst)
{
	return !sst->active && ulnet_list_empty(&sst->running) && !sst->zombies && ulnet_list_empty(&sst->srv_rpcs) &&
	       ulnet_list_empty(&sst->srv_waiting);
}

void sst__tick_due(struct ulnet_sst *sst)
{
	if (sst->tick_idle) {
		sst->tick_idle = false;
		ulnet__futex_cond_broadcast(&sst->tick_cv);
	}
}

static void dispatch(struct ulnet_sst *sst, const struct ulnet_event *ev)
{
	uint64_t key = (uint64_t)(uintptr_t)ev->md_user_ptr & ((1ull << SST_INST_SHIFT) - 1);
	struct sst_rpc *r = sst__rpc_find(sst, key >> 2);
	int slot = (int)(key & 3);

	if (!r)
		return; /* an RPC already gone: nothing to do */
	switch (r->role) {
	case ROLE_REQBUF:
		if (!ev->unlinked)
			return;
		if (ev->type == ULNET_EVENT_PUT && !sst->stopping) {
			uint32_t service = r->service;
			bool taken = sst__server_request(sst, r, ev);
			sst__rpc_free(sst, r);
			if (!taken && sst__post_reqbuf(sst, service))
				ULNET_LOG(SST, ERR, "cannot repost a request buffer for service %u", service);
			return;
		}
		sst__rpc_free(sst, r);
		return;
	case ROLE_CLIENT:
		sst__client_event(sst, r, slot, ev);
		return;
	case ROLE_SERVER:
		sst__server_event(sst, r, slot, ev);
		return;
	case ROLE_CONSOLE:
		sst__console_event(sst, r, slot, ev);
		return;
	}
}

static void tick(struct ulnet_sst *sst)
{
	uint64_t now = ulnet__now_ns();
	struct sst_rpc *r, *next;

	for (r = sst->active; r; r = next) {
		next = r->anext;
		if (!r->aborting && now >= r->deadline_ns) {
			sst->cnt.rpcs_expired++;
			r->err = r->test->dest_gone ? ERR_PEER_GONE : ERR_TIMEOUT;
			sst__rpc_abort(sst, r);
		}
	}
	/* only running tests cost anything here: idle ones are not on sst->running.
	 * A stop without force lets RPCs in flight finish (lnet_selftest's batch stop). */
	struct ulnet_list *pos, *tmp;
	ulnet_list_for_each_safe(pos, tmp, &sst->running) {
		struct sst_test *t = ulnet_container_of(pos, struct sst_test, run_link);
		if (t->inflight && (t->abort || t->dest_gone))
			for (r = sst->active; r; r = r->anext)
				if (r->test == t && !r->aborting) {
					r->err = t->dest_gone ? ERR_PEER_GONE : ERR_CANCELLED;
					sst__rpc_abort(sst, r);
				}
		sst__test_maybe_done(sst, t);
	}
	if (sst->zombies)
		sst__tests_reap(sst);
	sst__server_expire(sst, now);
	if (sst->have_session && now - sst->ses_last_ns > (uint64_t)SST_SESSION_TIMEOUT * 1000000000u) {
		ULNET_LOG(SST, WARN, "selftest session '%s' expired", sst->ses_name);
		sst__session_end(sst);
	}
}

void sst__event_handler(const struct ulnet_event *ev)
{
	unsigned inst = (unsigned)((uint64_t)(uintptr_t)ev->md_user_ptr >> SST_INST_SHIFT);
	struct ulnet_sst *sst;

	/* counted in under the table lock: ulnet__sst_stop takes the engine out of the table and then
	 * waits for the handlers counted in, so a late event never finds a freed engine */
	ulnet__futex_lock(&engines_lock);
	sst = inst <= SST_MAX_INST ? engines[inst] : NULL;
	if (sst)
		atomic_fetch_add_explicit(&sst->handlers, 1, memory_order_relaxed);
	ulnet__futex_unlock(&engines_lock);
	if (!sst)
		return;
	ulnet__futex_lock(&sst->lock);
	dispatch(sst, ev);
	if (!sst->stopping)
		sst__server_kick(sst);
	else if (engine_idle(sst))
		ulnet__futex_cond_broadcast(&sst->tick_cv); /* the last final event: stop may go on */
	ulnet__futex_unlock(&sst->lock);
	/* counted out under the table lock, with the wake-up: the stopping thread takes that lock
	 * before it frees the engine, so the wake never touches freed memory. Only a stopping thread
	 * waits, and it took the engine out of the table first: a running engine's events make no
	 * system call here. */
	ulnet__futex_lock(&engines_lock);
	if (atomic_fetch_sub_explicit(&sst->handlers, 1, memory_order_relaxed) == 1 && engines[inst] != sst)
		ulnet__futex_wake(&sst->handlers);
	ulnet__futex_unlock(&engines_lock);
}

/* The engine thread: timeouts and sessions every 10 ms, or every 1 s while quiet (sst__tick_due ends
 * that sleep); it ends once stopping and every MD is gone. */
static void *sst_thread(void *arg)
{
	struct ulnet_sst *sst = arg;

	ulnet__futex_lock(&sst->lock);
	for (;;) {
		if (!sst->stopping)
			sst__server_kick(sst);
		tick(sst);
		if (sst->stopping && engine_idle(sst))
			break;
		sst->tick_idle = !sst->stopping && engine_quiet(sst);
		ulnet__futex_cond_wait(&sst->tick_cv, &sst->lock,
				       ulnet__now_ns() + (sst->tick_idle ? SST_IDLE_TICK_NS : SST_TICK_NS));
		sst->tick_idle = false;
	}
	ulnet__futex_unlock(&sst->lock);
	return NULL;
}

int ulnet__sst_start(ulnet_node *node, const struct ulnet_selftest_opts *opts, struct ulnet_sst **out)
{
	static const uint32_t services[] = { ULNET_SST_SVC_DEBUG, ULNET_SST_SVC_MAKE_SESSION, ULNET_SST_SVC_REMOVE_SESSION,
		ULNET_SST_SVC_BATCH, ULNET_SST_SVC_TEST, ULNET_SST_SVC_QUERY_STAT, ULNET_SST_SVC_BRW, ULNET_SST_SVC_PING };
	static const struct ulnet_selftest_opts defaults = { 0 };
	uint32_t timeout_ms;
	struct ulnet_sst *sst;
	int rc;

	if (!opts)
		opts = &defaults;
	timeout_ms = opts->server_rpc_timeout_ms ? opts->server_rpc_timeout_ms : ULNET_SELFTEST_SERVER_TIMEOUT_DEFAULT_MS;
	if (timeout_ms < ULNET_SELFTEST_SERVER_TIMEOUT_MIN_MS || timeout_ms > ULNET_SELFTEST_SERVER_TIMEOUT_MAX_MS) {
		ULNET_LOG(SST, ERR, "selftest server_rpc_timeout_ms %u out of range [%u, %u] (selftest: server_rpc_timeout_ms)",
			  timeout_ms, ULNET_SELFTEST_SERVER_TIMEOUT_MIN_MS, ULNET_SELFTEST_SERVER_TIMEOUT_MAX_MS);
		return -EINVAL;
	}
	if (!(sst = calloc(1, sizeof(*sst))))
		return -ENOMEM;
	sst->node = node;
	sst->page = ulnet_node_page_size(node);
	sst->kernel_stats = opts->kernel_stats;
	sst->next_bits = (uint64_t)time(NULL) << 48;
	ulnet_list_init(&sst->srv_rpcs);
	ulnet_list_init(&sst->running);
	ulnet_list_init(&sst->srv_waiting);
	sst->srv_bulk_max = SST_SERVER_BULK_MAX;
	sst->srv_timeout_ms = timeout_ms;
	rc = engine_register(sst);
	if (rc) {
		free(sst);
		return rc;
	}
	for (size_t s = 0; s < sizeof(services) / sizeof(services[0]) && !rc; s++) {
		int n = services[s] > ULNET_SST_SVC_FRAMEWORK_MAX ? SST_TEST_BUFS : SST_FW_BUFS;
		for (int i = 0; i < n && !rc; i++)
			rc = sst__post_reqbuf(sst, services[s]);
	}
	if (!rc)
		rc = -pthread_create(&sst->thread, NULL, sst_thread, sst);
	if (rc) {
		ULNET_LOG(SST, ERR, "selftest services did not start: %s", ulnet_strerror(rc));
		sst->thread_started = false;
		ulnet__sst_stop(sst);
		return rc;
	}
	sst->thread_started = true;
	*out = sst;
	return 0;
}

void ulnet__sst_stop(struct ulnet_sst *sst)
{
	if (!sst)
		return;
	ulnet__futex_lock(&sst->lock);
	sst->stopping = true;
	while (!ulnet_list_empty(&sst->srv_waiting)) /* no MD yet: nothing to wait for */
		sst__rpc_free(sst, ulnet_list_first(&sst->srv_waiting, struct sst_rpc, slink));
	for (struct sst_test *t = sst->tests; t; t = t->next)
		t->stopping = t->abort = true;
	for (int i = 0; i < SST_HASH; i++)
		for (struct sst_rpc *r = sst->hash[i]; r; r = r->hnext)
			sst__rpc_abort(sst, r);
	for (struct sst_test *t = sst->tests; t; t = t->next)
		ulnet__futex_cond_broadcast(&t->cv);
	ulnet__futex_cond_broadcast(&sst->tick_cv);
	if (sst->thread_started) {
		ulnet__futex_unlock(&sst->lock);
		pthread_join(sst->thread, NULL);
	} else {
		/* never started: wait for the final events (the loop runs their handlers), giving up
		 * after 100 ms without one, as the thread's drain did */
		while (!engine_idle(sst))
			if (ulnet__futex_cond_wait(&sst->tick_cv, &sst->lock, ulnet__now_ns() + 100000000u))
				break;
		ulnet__futex_unlock(&sst->lock);
	}
	engine_unregister(sst); /* from here a late event finds no engine and is ignored */
	for (int i = 0; i < SST_HASH; i++)
		while (sst->hash[i])
			sst__rpc_free(sst, sst->hash[i]);
	while (sst->tests) {
		struct sst_test *t = sst->tests;
		sst->tests = t->next;
		sst__test_free(t);
	}
	sst__rpc_cache_drain(sst);
	sst__discard_free(sst);
	free(sst);
}

void ulnet__sst_inject(struct ulnet_sst *sst, uint32_t count, uint32_t at)
{
	ulnet__futex_lock(&sst->lock);
	sst->inject_left = count;
	sst->inject_at = at;
	ulnet__futex_unlock(&sst->lock);
}

void ulnet__sst_stats(struct ulnet_sst *sst, struct ulnet_sst_stats *out)
{
	ulnet__futex_lock(&sst->lock);
	memset(out, 0, sizeof(*out));
	out->rpc = sst->cnt;
	out->brw_errors = sst->brw_errors;
	out->ping_errors = sst->ping_errors;
	out->session_active = sst->have_session;
	out->server_rpcs = sst->srv_nrpcs;
	out->server_waiting = sst->srv_nwaiting;
	out->server_bulk_bytes = sst->srv_bulk_bytes;
	out->sid = sst__cur_sid(sst);
	memcpy(out->session_name, sst->ses_name, sizeof(out->session_name));
	_Static_assert(sizeof(out->client_results) == sizeof(sst->cl_results), "one counter per result");
	memcpy(out->client_results, sst->cl_results, sizeof(out->client_results));
	memcpy(out->client_bytes, sst->cl_bytes, sizeof(out->client_bytes));
	for (struct ulnet_list *l = sst->running.next; l != &sst->running; l = l->next)
		out->client_tests_running++;
	ulnet__futex_unlock(&sst->lock);
}
