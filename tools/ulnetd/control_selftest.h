/* SPDX-License-Identifier: MIT */
/* What ulnetd's two selftest command files share: control_selftest.c (the engine, one-shot runs and
 * the JSON result lines) and control_lst.c (lst's session, groups and batches). Both are thin: the
 * engine and the console are the library's (ulnet/selftest.h). Private to ulnetd. */
#ifndef ULNETD_CONTROL_SELFTEST_H
#define ULNETD_CONTROL_SELFTEST_H

#include <ulnet/selftest.h>

#include "ulnetd.h"

static inline ulnet_selftest *ulnetd_sst_of(struct ulnetd *d) { return d->selftest; }

/* One result line: a JSON object, formatted by the console. */
void ulnetd_sst_result_json(struct ulnetd_out *out, const struct ulnet_selftest_result *r, bool progress);

/* ---- control_lst.c ---- */
/* Register the lst-style commands (selftest session/group/batch/test). */
int ulnetd_lst_register(struct ulnetd *d);
/* ---- control_lst_admin.c ---- */
int ulnetd_lst_admin_register(struct ulnetd *d);
/* list_batch NAME: the batch's tests (@test: one), and with @test its client (@server: server) nodes. */
int ulnetd_lst_batch_detail(struct ulnetd *d, const char *name, unsigned test, bool server, struct ulnetd_out *out);

#endif
