/* SPDX-License-Identifier: MIT */
/* The lst console's down-node table (sst_node_health.h). */
#include "sst_node_health.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

bool lst_health_unreachable(int rc)
{
	return rc == -ETIMEDOUT || rc == -ECONNREFUSED || rc == -EHOSTUNREACH || rc == -ENETUNREACH ||
	       rc == -ECONNRESET || rc == -ECONNABORTED || rc == -ENOTCONN || rc == -EIO;
}

void lst_health_init(struct lst_health *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->lock, NULL);
}

void lst_health_fini(struct lst_health *h)
{
	pthread_mutex_destroy(&h->lock);
}

uint64_t lst_health_reset(struct lst_health *h)
{
	uint64_t gen;

	pthread_mutex_lock(&h->lock);
	h->n = 0;
	gen = ++h->gen;
	pthread_mutex_unlock(&h->lock);
	return gen;
}

static struct lst_health_entry *find(struct lst_health *h, uint64_t nid4)
{
	for (unsigned i = 0; i < h->n; i++)
		if (h->e[i].nid4 == nid4)
			return &h->e[i];
	return NULL;
}

int lst_health_check(struct lst_health *h, uint64_t nid4, uint64_t now_ms, char *why, size_t cap)
{
	struct lst_health_entry *e;
	int rc = 0;

	pthread_mutex_lock(&h->lock);
	if ((e = find(h, nid4))) {
		rc = e->rc;
		snprintf(why, cap, "known down for %llu s, probed in the background (%s)",
			 (unsigned long long)((now_ms - e->since_ms) / 1000), e->line);
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

void lst_health_note(struct lst_health *h, uint64_t gen, uint64_t nid4, int rc, const char *line, uint64_t now_ms)
{
	struct lst_health_entry *e;

	pthread_mutex_lock(&h->lock);
	if (gen != h->gen)
		goto out;
	e = find(h, nid4);
	if (!lst_health_unreachable(rc)) {
		if (e && (rc == 0 || rc == -EPROTO)) /* it answered (a malformed reply is an answer): forget it */
			*e = h->e[--h->n];
		goto out; /* a local error says nothing about the node */
	}
	if (!e) {
		if (h->n == LST_HEALTH_MAX)
			goto out; /* table full: the node is waited on as before */
		e = &h->e[h->n++];
		e->nid4 = nid4;
		e->since_ms = now_ms;
		e->backoff_ms = LST_PROBE_MIN_MS;
	} else {
		e->backoff_ms = e->backoff_ms * 2 > LST_PROBE_MAX_MS ? LST_PROBE_MAX_MS : e->backoff_ms * 2;
	}
	e->rc = rc;
	e->probe_at_ms = now_ms + e->backoff_ms;
	snprintf(e->line, sizeof(e->line), "%s", line);
out:
	pthread_mutex_unlock(&h->lock);
}

unsigned lst_health_due(struct lst_health *h, uint64_t now_ms, uint64_t *out, unsigned cap)
{
	unsigned n = 0;

	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; i < h->n && n < cap; i++)
		if (h->e[i].probe_at_ms <= now_ms) {
			out[n++] = h->e[i].nid4;
			h->e[i].probe_at_ms = now_ms + h->e[i].backoff_ms;
		}
	pthread_mutex_unlock(&h->lock);
	return n;
}
