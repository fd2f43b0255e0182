/* SPDX-License-Identifier: MIT */
/* ulnet__sst_run (sst_internal.h): one test run as this node's client, blocking its caller, and the
 * parameter check ulnetd also uses. */
#include "sst_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint32_t ulnet__sst_size_max(ulnet_node *node)
{
	struct ulnet_node_opts o;

	ulnet_node_opts_get(node, &o);
	return o.large_max > ULNET_MTU ? o.large_max : ULNET_MTU;
}

uint32_t ulnet__sst_node_feats(ulnet_node *node)
{
	uint32_t max = ulnet__sst_size_max(node);

	return ULNET_SST_NODE_FEATS | (max > ULNET_MTU ? (max >> 20) << ULNET_SST_NODE_LARGE_SHIFT : 0);
}

int ulnet__sst_params_check(const struct ulnet_sst_params *p, uint32_t page_size, uint32_t size_max,
			    const char **why)
{
	static const char *dummy;

	if (!why)
		why = &dummy;
	if (p->kind != ULNET_SST_TEST_BRW && p->kind != ULNET_SST_TEST_PING)
		return *why = "test must be brw or ping", -EINVAL;
	if (p->concurrency < 1 || p->concurrency > ULNET_SST_MAX_CONCUR)
		return *why = "concurrency must be 1..1024", -EINVAL;
	if (!p->duration_ms && !p->count)
		return *why = "give a duration or a count", -EINVAL;
	if (p->kind == ULNET_SST_TEST_PING)
		return 0;
	if (p->rw != ULNET_SST_BRW_READ && p->rw != ULNET_SST_BRW_WRITE)
		return *why = "brw needs read or write", -EINVAL;
	if (p->size < 1 || p->size > size_max)
		return *why = size_max > ULNET_MTU ? "size must be 1 byte up to this node's large_max"
			     : "size must be 1..1048576 bytes (above it: node option large_max, ulnet nodes only)",
		       -EINVAL;
	if (p->check < ULNET_SST_CHECK_NONE || p->check > ULNET_SST_CHECK_DISCARD)
		return *why = "check must be none, simple, full or discard", -EINVAL;
	if (p->offset >= ULNET_MTU)
		return *why = "offset must be below 1048576", -EINVAL;
	if (p->size <= ULNET_MTU && /* above it the MD is one fragment moved by the core in MiB pieces */
	    ((uint64_t)p->offset % page_size + p->size + page_size - 1) / page_size > ULNET_MD_MAX_FRAGS)
		return *why = "offset+size need more than ULNET_MD_MAX_FRAGS (1024) page fragments on this node", -EINVAL;
	return 0;
}

static void fill_result(const struct sst_test *t, uint64_t t0, struct ulnet_sst_result *res, bool final)
{
	memset(res, 0, sizeof(*res));
	res->rpcs_ok = t->st.ok;
	res->rpcs_failed = t->st.failed;
	res->bytes = t->st.bytes;
	res->seconds = (double)(ulnet__now_ns() - t0) / 1e9;
	res->timeout = t->st.errs[ERR_TIMEOUT];
	/* timeouts to a peer later found gone were the peer going away */
	res->mismatch = t->st.errs[ERR_MISMATCH];
	res->refused = t->st.errs[ERR_REFUSED];
	res->peer_gone = t->st.errs[ERR_PEER_GONE];
	if (t->dest_gone) {
		res->peer_gone += res->timeout;
		res->timeout = 0;
	}
	res->mismatch_offset_known = t->st.bad_known;
	res->first_mismatch_offset = t->st.bad_pos;
	res->lat_max_us = t->st.lat_max;
	memcpy(res->first_error, t->st.first_error, sizeof(res->first_error));
	if (final && t->st.nlat) {
		qsort(t->st.lat, t->st.nlat, sizeof(uint32_t), sst__cmp_u32);
		res->lat_p50_us = t->st.lat[(t->st.nlat - 1) * 50 / 100];
		res->lat_p99_us = t->st.lat[(t->st.nlat - 1) * 99 / 100];
	}
}

int ulnet__sst_run(struct ulnet_sst *sst, const struct ulnet_sst_params *p, struct ulnet_sst_result *res,
		   const char **why)
{
	struct sst_test *t;
	uint64_t t0, next_progress;
	int rc = ulnet__sst_params_check(p, sst->page, ulnet__sst_size_max(sst->node), why);

	if (rc)
		return rc;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	ulnet_list_init(&t->run_link);
	t->p = *p;
	if (!t->p.dest.pid)
		t->p.dest.pid = ULNET_PID_LUSTRE;
	t->dests = &t->p.dest;
	t->ndest = 1;
	t->service = p->kind == ULNET_SST_TEST_BRW ? ULNET_SST_SVC_BRW : ULNET_SST_SVC_PING;
	t->feats = ULNET_SST_FEAT_BULK_LEN;
	t->limit = p->count;
	t->corrupt_left = p->rw == ULNET_SST_BRW_WRITE ? p->corrupt_count : 0;

	ulnet__futex_lock(&sst->lock);
	if (sst->stopping) {
		ulnet__futex_unlock(&sst->lock);
		free(t);
		return -ESHUTDOWN;
	}
	t->next = sst->tests;
	sst->tests = t;
	sst__test_running(sst, t);
	t0 = ulnet__now_ns();
	t->end_ns = p->duration_ms ? t0 + (uint64_t)p->duration_ms * 1000000u : 0;
	next_progress = t0 + 1000000000u;
	for (uint32_t i = 0; i < p->concurrency && sst__test_may_start(t, t0); i++)
		sst__client_launch(sst, t);
	sst__test_maybe_done(sst, t);
	while (!t->done && !sst->stopping) {
		ulnet__futex_cond_wait(&t->cv, &sst->lock, ulnet__now_ns() + 200000000u);
		if (p->progress && ulnet__now_ns() >= next_progress && !t->done) {
			struct ulnet_sst_result so_far;
			fill_result(t, t0, &so_far, false);
			next_progress += 1000000000u;
			ulnet__futex_unlock(&sst->lock);
			int stop = p->progress(p->progress_arg, &so_far);
			ulnet__futex_lock(&sst->lock);
			if (stop)
				t->stopping = t->abort = true; /* the caller gave up: do not wait */
		}
	}
	fill_result(t, t0, res, true);
	/* unlink the test; done means no RPC refers to it any more */
	for (struct sst_test **pp = &sst->tests; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	rc = t->inflight ? -ESHUTDOWN : 0;
	if (t->inflight) {
		/* engine stopping with RPCs in flight: leave the test to ulnet__sst_stop() */
		t->next = sst->tests;
		sst->tests = t;
		ulnet__futex_unlock(&sst->lock);
		return rc;
	}
	ulnet__futex_unlock(&sst->lock);
	sst__test_free(t);
	return 0;
}
