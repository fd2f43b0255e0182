/* SPDX-License-Identifier: MIT */
/* lnetctl's globals: `global show` prints the ones ulnet has, with the values in force, and the
 * lnetctl settings that describe what ulnet does not do (no Dynamic Discovery, no resends, no health
 * scoring: 0, as lnetctl shows them switched off); `set transaction_timeout` changes the one a node
 * can change at run time besides the routing ones (cmd_route.c). lnetctl's other `set` names are
 * refused with one line saying what ulnet lacks, rather than "unknown command". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ulnetd.h"

static int cmd_global_show(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool json = false;
	const struct ulnetd_opt opts[] = { { "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json } };
	struct ulnet_routing_conf rc_;
	struct ulnet_node_opts o;
	struct ulnetd_emit e;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "global show", argc, argv, opts, 1, NULL, 0, &npos)))
		return rc;
	ulnet_node_opts_get(d->node, &o);
	ulnet_routing_get(d->node, &rc_);
	ulnetd_emit_init(&e, out, json);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_map(&e, "global");
	ulnetd_emit_uint(&e, "discovery", 0);
	ulnetd_emit_uint(&e, "retry_count", 0);
	ulnetd_emit_uint(&e, "transaction_timeout", o.transaction_timeout);
	ulnetd_emit_uint(&e, "health_sensitivity", 0);
	ulnetd_emit_uint(&e, "router_sensitivity", rc_.sensitivity);
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	return 0;
}

static int cmd_set_txn_timeout(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char *pos[1], *end;
	unsigned long v;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "set transaction_timeout", argc, argv, NULL, 0, pos, 1, &npos)))
		return rc;
	if (npos != 1)
		return ulnetd_errorf(out, -EINVAL, "set transaction_timeout: missing value (seconds)");
	errno = 0;
	v = strtoul(pos[0], &end, 10);
	if (errno || end == pos[0] || *end || strspn(pos[0], "0123456789") != strlen(pos[0]) || v == 0 ||
	    v > ULNET_TXN_TIMEOUT_MAX)
		return ulnetd_errorf(out, -EINVAL, "set transaction_timeout: '%s' is not a number of seconds in [1, %u]",
				     pos[0], ULNET_TXN_TIMEOUT_MAX);
	if ((rc = ulnet_transaction_timeout_set(d->node, (uint32_t)v)))
		return ulnetd_errorf(out, rc, "set transaction_timeout %s: %s", pos[0], ulnet_strerror(rc));
	return 0;
}

/* lnetctl `set` names with no ulnet counterpart: one handler each, naming what ulnet lacks */
#define UNSUPPORTED(fn, key, why)                                                                         \
	static int fn(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)                    \
	{                                                                                                 \
		(void)d, (void)argc, (void)argv;                                                          \
		return ulnetd_errorf(out, -EOPNOTSUPP, "set " key ": not supported: " why);             \
	}
#define NO_HEALTH "ulnet keeps no health values (LNet health)"
UNSUPPORTED(set_discovery, "discovery", "ulnet has no Dynamic Discovery (its peers are non-Multi-Rail)")
UNSUPPORTED(set_retry_count, "retry_count", "ulnet does not resend messages (LNet health)")
UNSUPPORTED(set_health_sensitivity, "health_sensitivity", NO_HEALTH)
UNSUPPORTED(set_recovery_interval, "recovery_interval", NO_HEALTH)
UNSUPPORTED(set_recovery_limit, "recovery_limit", NO_HEALTH)
UNSUPPORTED(set_max_recovery_ping_interval, "max_recovery_ping_interval", NO_HEALTH)
UNSUPPORTED(set_response_tracking, "response_tracking", "ulnet does not track responses (LNet health)")
UNSUPPORTED(set_drop_asym_route, "drop_asym_route", "ulnet does not drop asymmetric routes")
UNSUPPORTED(set_numa_range, "numa_range", "ulnet has no NUMA-aware NI selection")
UNSUPPORTED(set_max_interfaces, "max_interfaces", "ulnet has no Multi-Rail interfaces to advertise")
UNSUPPORTED(set_lnd_timeout, "lnd_timeout", "each LND has its own timeout (lnd tunables: timeout)")
#undef UNSUPPORTED

#define REFUSED "lnetctl's; refused: ulnet has no such setting"
static const struct ulnetd_cmd global_cmds[] = {
	{ "global show", "[--json]", "show lnetctl's globals as ulnet runs them", cmd_global_show },
	{ "set transaction_timeout", "SECONDS", "seconds a GET or ACK-requested PUT waits for its answer",
	  cmd_set_txn_timeout },
	{ "set discovery", "N", REFUSED, set_discovery },
	{ "set retry_count", "N", REFUSED, set_retry_count },
	{ "set health_sensitivity", "N", REFUSED, set_health_sensitivity },
	{ "set recovery_interval", "N", REFUSED, set_recovery_interval },
	{ "set recovery_limit", "N", REFUSED, set_recovery_limit },
	{ "set max_recovery_ping_interval", "N", REFUSED, set_max_recovery_ping_interval },
	{ "set response_tracking", "N", REFUSED, set_response_tracking },
	{ "set drop_asym_route", "N", REFUSED, set_drop_asym_route },
	{ "set numa_range", "N", REFUSED, set_numa_range },
	{ "set max_interfaces", "N", REFUSED, set_max_interfaces },
	{ "set lnd_timeout", "N", REFUSED, set_lnd_timeout },
};

int ulnetd_global_register(struct ulnetd *d)
{
	return ulnetd_cmd_register(d, global_cmds, sizeof(global_cmds) / sizeof(global_cmds[0]));
}
