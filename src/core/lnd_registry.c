/* SPDX-License-Identifier: MIT */
/* The LNDs of this library, by wire type: the built-in ones (src/lnd/meson.build generates their list)
 * registered on first use. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"

static const struct ulnet_lnd_ops *lnds[256];
static pthread_once_t lnds_once = PTHREAD_ONCE_INIT;

int ulnet__lnd_register(const struct ulnet_lnd_ops *ops)
{
	const char *missing = !ops->lnd_name ? "lnd_name" : !ops->lnd_startup ? "lnd_startup"
			    : !ops->lnd_shutdown ? "lnd_shutdown" : !ops->lnd_send ? "lnd_send"
			    : !ops->lnd_recv ? "lnd_recv" : NULL;

	if (missing) {
		ULNET_LOG(CORE, ERR, "LND type %u: ops table lacks %s", ops->lnd_type, missing);
		return -EINVAL;
	}
	if (ops->lnd_type >= 256 || lnds[ops->lnd_type]) {
		ULNET_LOG(CORE, ERR, "LND %s: type %u already registered", ops->lnd_name, ops->lnd_type);
		return -EEXIST;
	}
	lnds[ops->lnd_type] = ops;
	return 0;
}

/* A built-in LND that cannot register (two with one type, a table without an op: a build defect) is
 * logged by ulnet__lnd_register and left out: an NI of its type then fails to start, naming it. */
static void register_builtins(void)
{
	for (size_t i = 0; ulnet__lnd_builtin[i]; i++)
		(void)ulnet__lnd_register(ulnet__lnd_builtin[i]);
}

const struct ulnet_lnd_ops *ulnet__lnd_find(const char *name)
{
	pthread_once(&lnds_once, register_builtins);
	if (!name)
		return NULL;
	for (unsigned i = 0; i < 256; i++)
		if (lnds[i] && !strcmp(lnds[i]->lnd_name, name))
			return lnds[i];
	return NULL;
}
