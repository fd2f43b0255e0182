/* SPDX-License-Identifier: MIT */
/* What the lst console knows about its nodes' reachability: a node whose framework RPC got no answer
 * (refused, unreachable, timed out) is known down, and the next command reports it down at once
 * instead of waiting on it again; the pinger probes it in the background, with a backoff, and the first
 * answer makes it an ordinary node again. Pure bookkeeping: the caller passes the clock. */
#ifndef ULNET_SST_NODE_HEALTH_H
#define ULNET_SST_NODE_HEALTH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define LST_HEALTH_MAX 512           /* down nodes remembered per session; more are simply waited on */
#define LST_PROBE_MIN_MS 1000        /* first background probe of a node found down */
#define LST_PROBE_MAX_MS 8000        /* backoff cap: the keep-alive period of live nodes */
#define LST_HEALTH_LINE 160

struct lst_health_entry {
	uint64_t nid4;
	int rc;                          /* why it is down (negative errno) */
	uint64_t since_ms, probe_at_ms;
	uint32_t backoff_ms;
	char line[LST_HEALTH_LINE];      /* the failure as the command that found it reported it */
};

struct lst_health {
	pthread_mutex_t lock;
	uint64_t gen;                    /* bumped by reset: notes of an older session are dropped */
	unsigned n;
	struct lst_health_entry e[LST_HEALTH_MAX];
};

/* Did @rc mean "no answer" (the node or the path is down), as against an answer, or a local error? */
bool lst_health_unreachable(int rc);

void lst_health_init(struct lst_health *h);
void lst_health_fini(struct lst_health *h);
/* Forget everything (a new session); returns the generation callers pass to note. */
uint64_t lst_health_reset(struct lst_health *h);
/* 0 if @nid4 is not known down; otherwise its rc, with "known down for N s (...)" in @why. */
int lst_health_check(struct lst_health *h, uint64_t nid4, uint64_t now_ms, char *why, size_t cap);
/* The outcome of an RPC to @nid4 sent in generation @gen: unreachable rc marks it down (a failed probe
 * doubles its backoff), an answer forgets it, anything else (local errors) is ignored. */
void lst_health_note(struct lst_health *h, uint64_t gen, uint64_t nid4, int rc, const char *line, uint64_t now_ms);
/* Down nodes whose probe is due, at most @cap into @out; each is not due again before its backoff. */
unsigned lst_health_due(struct lst_health *h, uint64_t now_ms, uint64_t *out, unsigned cap);

#endif
