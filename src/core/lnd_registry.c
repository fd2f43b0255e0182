/* SPDX-License-Identifier: MIT */
/* The LNDs built into this library, by wire type; config.h says which ones. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <ulnet/rdma_plan.h>
#include "internal.h"
#include "config.h"

#ifdef ULNET_HAVE_LND_TCP
extern const struct ulnet_lnd_ops ulnet__tcplnd_ops;
#endif
#ifdef ULNET_HAVE_LND_O2IB
extern const struct ulnet_lnd_ops ulnet__o2iblnd_ops;
#endif

static const struct ulnet_lnd_ops *const builtin_lnds[] = {
	&ulnet__lolnd_ops,
#ifdef ULNET_HAVE_LND_TCP
	&ulnet__tcplnd_ops,
#endif
#ifdef ULNET_HAVE_LND_O2IB
	&ulnet__o2iblnd_ops,
#endif
};

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

static void register_builtins(void)
{
	for (size_t i = 0; i < sizeof(builtin_lnds) / sizeof(builtin_lnds[0]); i++)
		ulnet__lnd_register(builtin_lnds[i]);
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

#ifndef ULNET_HAVE_LND_O2IB
/* ulnet/rdma_plan.h without the o2ib LND (-Dlnd_o2ib=disabled): the API stays, and says so. */
void ulnet_rdma_plan_defaults(struct ulnet_rdma_plan_query *q)
{
	memset(q, 0, sizeof(*q));
}

int ulnet_rdma_plan_print(FILE *f, const struct ulnet_rdma_plan_query *q, bool json, char *why, size_t whylen)
{
	(void)f, (void)q, (void)json;
	snprintf(why, whylen, "the o2ib LND is not built (-Dlnd_o2ib=disabled)");
	return -EPROTONOSUPPORT;
}
#endif
