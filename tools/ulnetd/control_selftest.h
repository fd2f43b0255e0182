/* SPDX-License-Identifier: MIT */
/* What ulnetd's two selftest command files share: control_selftest.c (the engine, one-shot runs and
 * the JSON result lines) and control_lst.c (lst's session, groups and batches). Private to ulnetd. */
#ifndef ULNETD_CONTROL_SELFTEST_H
#define ULNETD_CONTROL_SELFTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "selftest/selftest.h"
#include "ulnetd.h"

static inline struct ulnet_sst *ulnetd_sst_of(struct ulnetd *d) { return d->selftest; }

#define CON_PING_MS 8000    /* keep-alive DEBUG to every node, as lst's console pinger does */

/* A test result plus what the console needs to label it. */
struct run_out {
	struct ulnet_sst_result r;
	const char *kind;               /* "brw" or "ping" */
	bool write;
	char from[ULNET_NID_STRLEN], to[160];
	uint32_t size, offset, concurrency;
	const char *check;
	bool remote;                    /* the clients are another node */
	bool lat_na;                    /* no latency samples exist (remote lnet_selftest clients) */
	bool bytes_na;                  /* no counter gives the payload bytes */
	unsigned long long unclassified;/* errors a kernel node counted without saying which */
	const char *source;             /* where the numbers come from */
};

static inline uint64_t ulnetd_sst_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline int64_t ulnetd_sst_real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- control_selftest.c ---- */
/* "none", "simple", "full": 0 or -EINVAL. */
int ulnetd_sst_check_parse(const char *s, enum ulnet_sst_check *out);
/* One result line: a JSON object, formatted by the console. */
void ulnetd_sst_result_json(struct ulnetd_out *out, const struct run_out *o, bool progress);
void ulnetd_sst_derive_result(const struct ulnet_sst_con_stat *c0, const struct ulnet_sst_con_stat *c1,
			      uint32_t service, bool srv_bytes_ok, uint64_t srv_bytes, double wall_s,
			      struct run_out *o);
uint64_t ulnetd_sst_bulk_bytes(const struct ulnet_sst_con_stat *s);

/* ---- control_lst.c ---- */
/* Register the lst-style commands (selftest session/group/batch/test). */
int ulnetd_lst_register(struct ulnetd *d);
void ulnetd_lst_on_close(struct ulnetd *d, void *arg);

#endif
