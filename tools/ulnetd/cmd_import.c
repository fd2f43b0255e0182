/* SPDX-License-Identifier: MIT */
/* `import FILE`: a configuration file applied to the running node (ulnet_config_apply: every check
 * first, then the changes, undone on a failure). FILE is read by the daemon, with its rights: the
 * control socket's mode (0600) already limits the clients to its own user and root. The sections
 * that are ulnetd's (metrics, selftest) cannot change at run time: a file that changes them is
 * refused; `node: control` is the socket in use and ignored. ulnetd's SIGHUP reload (main.c) goes
 * through ulnetd_import_file as well. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulnetd.h"

static pthread_mutex_t import_lock = PTHREAD_MUTEX_INITIALIZER; /* one import at a time */

static uint32_t rpc_timeout(const struct ulnet_selftest_opts *o)
{
	return o->server_rpc_timeout_ms ? o->server_rpc_timeout_ms : ULNET_SELFTEST_SERVER_TIMEOUT_DEFAULT_MS;
}

int ulnetd_import_file(struct ulnetd *d, const char *path, char *err, size_t errlen)
{
	struct ulnet_config *cfg = NULL;
	int rc;

	if ((rc = ulnet_config_load(path, &cfg, err, errlen)))
		return rc == -ENOMEM ? rc : -EINVAL;
	if ((cfg->metrics_listen || d->cfg->metrics_listen) &&
	    (!cfg->metrics_listen || !d->cfg->metrics_listen || strcmp(cfg->metrics_listen, d->cfg->metrics_listen))) {
		snprintf(err, errlen, "%s: metrics: listen %s differs from the running %s (it cannot change at run time)",
			 path, cfg->metrics_listen ? cfg->metrics_listen : "(none)",
			 d->cfg->metrics_listen ? d->cfg->metrics_listen : "(none)");
		rc = -EINVAL;
		goto out;
	}
	if ((cfg->selftest.server_rpc_timeout_ms || cfg->selftest.kernel_stats) &&
	    (rpc_timeout(&cfg->selftest) != rpc_timeout(&d->cfg->selftest) ||
	     cfg->selftest.kernel_stats != d->cfg->selftest.kernel_stats)) {
		snprintf(err, errlen, "%s: selftest: differs from the running settings (they cannot change at run time)", path);
		rc = -EINVAL;
		goto out;
	}
	pthread_mutex_lock(&import_lock);
	rc = ulnet_config_apply(d->node, cfg, err, errlen);
	pthread_mutex_unlock(&import_lock);
	if (rc && rc != -ENOMEM)
		rc = -EINVAL;
out:
	ulnet_config_free(cfg);
	return rc;
}

static int cmd_import(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char err[512], *pos[1];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "import", argc, argv, NULL, 0, pos, 1, &npos)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "import: missing FILE (a configuration in ulnetd -c's format)");
	if ((rc = ulnetd_import_file(d, pos[0], err, sizeof(err))))
		return ulnetd_errorf(out, rc, "import: %s", err);
	return 0;
}

static const struct ulnetd_cmd import_cmds[] = {
	{ "import", "FILE", "apply a configuration file to the running node (what it already has stays)", cmd_import },
};

int ulnetd_import_register(struct ulnetd *d)
{
	return ulnetd_cmd_register(d, import_cmds, sizeof(import_cmds) / sizeof(import_cmds[0]));
}
