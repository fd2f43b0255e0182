/* SPDX-License-Identifier: MIT */
/* ulnetd's fault commands, lnetctl's syntax (`fault drop|delay add|del|show`, `fault reset`) over
 * ulnet/fault.h, and ulnet's own kinds beside them: corrupt, duplicate, reorder, and the LND-level
 * hello, reject, stall (docs/faults.md). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ulnetd.h"

/* "*" or a NID; NULL leaves @nid the wildcard */
static int check_nid(struct ulnetd_out *out, const char *cmd, const char *opt, const char *s, struct ulnet_nid *nid)
{
	const char *why = NULL;

	if (s && ulnet_nid_parse(s, nid, &why))
		return ulnetd_errorf(out, -EINVAL, "%s: bad %s '%s': %s", cmd, opt, s, why ? why : "not a NID");
	return 0;
}

static int fault_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out, enum ulnet_fault_kind kind)
{
	const char *src = NULL, *dst = NULL, *local = NULL, *types = NULL, *health = NULL, *reason = NULL;
	long long rate = 0, interval = 0, portal = -1, latency = 0, seed = 0, hold = 0, version = 0;
	const struct ulnetd_opt opts[] = {
		{ "--source", "-s", ULNETD_OPT_STR, 0, 0, &src },
		{ "--dest", "-d", ULNETD_OPT_STR, 0, 0, &dst },
		{ "--local_nid", "-l", ULNETD_OPT_STR, 0, 0, &local },
		{ "--rate", "-r", ULNETD_OPT_INT, 1, UINT32_MAX, &rate },
		{ "--interval", "-i", ULNETD_OPT_INT, 1, UINT32_MAX, &interval },
		{ "--portal", "-p", ULNETD_OPT_INT, 0, 63, &portal },
		{ "--message", "-m", ULNETD_OPT_STR, 0, 0, &types },
		{ "--health_error", "-e", ULNETD_OPT_STR, 0, 0, &health },
		{ "--latency", NULL, ULNETD_OPT_INT, 1, 3600000, &latency },
		{ "--seed", NULL, ULNETD_OPT_INT, 0, LLONG_MAX, &seed },
		{ "--hold", NULL, ULNETD_OPT_INT, 1, 60000, &hold },
		{ "--version", NULL, ULNETD_OPT_INT, 1, UINT32_MAX, &version },
		{ "--reason", NULL, ULNETD_OPT_STR, 0, 0, &reason },
	};
	char cmd[32];
	struct ulnet_fault_rule r;
	const char *why = NULL;
	int npos, rc;

	snprintf(cmd, sizeof(cmd), "fault %s add", ulnet_fault_kind_name(kind));
	if ((rc = ulnetd_parse_args(out, cmd, argc, argv, opts, sizeof(opts) / sizeof(opts[0]), NULL, 0, &npos)))
		return rc;
	ulnet_fault_rule_init(&r, kind);
	if ((rc = check_nid(out, cmd, "--source", src, &r.src)) || (rc = check_nid(out, cmd, "--dest", dst, &r.dst)) ||
	    (rc = check_nid(out, cmd, "--local_nid", local, &r.local)))
		return rc;
	if (types && strcmp(types, "*") && ulnet_fault_types_parse(types, &r.msg_mask, &why))
		return ulnetd_errorf(out, -EINVAL, "%s: bad --message '%s': %s", cmd, types, why);
	if (health && ulnet_fault_health_parse(health, &r.health))
		return ulnetd_errorf(out, -EINVAL, "%s: bad --health_error '%s' (local_interrupt, local_dropped, "
				     "local_aborted, local_no_route, local_error, local_timeout, remote_error, "
				     "remote_dropped, remote_timeout, network_timeout)", cmd, health);
	r.rate = (uint32_t)rate;
	r.interval_s = (uint32_t)interval;
	r.portal = portal < 0 ? ULNET_FAULT_PORTAL_ANY : (uint32_t)portal;
	r.latency_ms = (uint32_t)latency;
	r.seed = (uint64_t)seed;
	r.hold_ms = (uint32_t)hold;
	r.version = (uint32_t)version;
	if (hold && kind != ULNET_FAULT_REORDER)
		return ulnetd_errorf(out, -EINVAL, "%s: --hold is for reorder rules", cmd);
	if (reason && kind != ULNET_FAULT_REJECT)
		return ulnetd_errorf(out, -EINVAL, "%s: --reason is for reject rules", cmd);
	if (reason && ulnet_fault_reject_parse(reason, &r.reason))
		return ulnetd_errorf(out, -EINVAL, "%s: bad --reason '%s': an o2iblnd reject reason 1..9 (CONN_RACE, "
				     "NO_RESOURCES, FATAL, CONN_UNCOMPAT, CONN_STALE, RDMA_FRAGS, MSG_QUEUE_SIZE, "
				     "INVALID_SRV_ID, EARLY)", cmd, reason);
	if (ulnet_fault_rule_check(&r, &why))
		return ulnetd_errorf(out, -EINVAL, "%s: %s", cmd, why);
	if ((rc = ulnet_fault_add(d->node, &r)))
		return ulnetd_errorf(out, rc, "%s: %s", cmd, ulnet_strerror(rc));
	return 0;
}

static int fault_del(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out, enum ulnet_fault_kind kind)
{
	const char *src = NULL, *dst = NULL;
	bool all = false;
	const struct ulnetd_opt opts[] = {
		{ "--source", "-s", ULNETD_OPT_STR, 0, 0, &src },
		{ "--dest", "-d", ULNETD_OPT_STR, 0, 0, &dst },
		{ "--all", "-a", ULNETD_OPT_FLAG, 0, 0, &all },
	};
	struct ulnet_nid s = ulnet_nid_any(), t = ulnet_nid_any();
	char cmd[32];
	int npos, rc;

	snprintf(cmd, sizeof(cmd), "fault %s del", ulnet_fault_kind_name(kind));
	if ((rc = ulnetd_parse_args(out, cmd, argc, argv, opts, 3, NULL, 0, &npos)))
		return rc;
	if (all == (src || dst))
		return ulnetd_errorf(out, -EINVAL, "%s: give --source and/or --dest, or --all", cmd);
	if ((rc = check_nid(out, cmd, "--source", src, &s)) || (rc = check_nid(out, cmd, "--dest", dst, &t)))
		return rc;
	rc = ulnet_fault_del(d->node, kind, src ? &s : NULL, dst ? &t : NULL);
	if (rc == 0 && !all)
		return ulnetd_errorf(out, -ENOENT, "%s: no %s rule from %s to %s", cmd, ulnet_fault_kind_name(kind),
				     src ? src : "*", dst ? dst : "*");
	return rc < 0 ? ulnetd_errorf(out, rc, "%s: %s", cmd, ulnet_strerror(rc)) : 0;
}

static int fault_show(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out, enum ulnet_fault_kind kind)
{
	bool json = false;
	const struct ulnetd_opt opts[] = { { "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json } };
	struct ulnet_fault_info fi;
	struct ulnetd_emit e;
	char cmd[32];
	int npos, rc;

	snprintf(cmd, sizeof(cmd), "fault %s%sshow", kind == ULNET_FAULT_KINDS ? "" : ulnet_fault_kind_name(kind),
		 kind == ULNET_FAULT_KINDS ? "" : " ");
	if ((rc = ulnetd_parse_args(out, cmd, argc, argv, opts, 1, NULL, 0, &npos)))
		return rc;
	ulnetd_emit_init(&e, out, json);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_list(&e, "fault");
	for (unsigned i = 0; ulnet_fault_info_get(d->node, kind, i, &fi) == 0; i++)
		ulnet_fault_write(&e.w, &fi, true);
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	return 0;
}

static int cmd_fault_reset(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "fault reset", argc, argv, NULL, 0, NULL, 0, &npos)))
		return rc;
	ulnet_fault_reset(d->node);
	return 0;
}

#define FAULT_CMDS(kind, K)                                                                        \
	static int cmd_##kind##_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out) \
	{                                                                                          \
		return fault_add(d, argc, argv, out, K);                                           \
	}                                                                                          \
	static int cmd_##kind##_del(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out) \
	{                                                                                          \
		return fault_del(d, argc, argv, out, K);                                           \
	}                                                                                          \
	static int cmd_##kind##_show(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out) \
	{                                                                                          \
		return fault_show(d, argc, argv, out, K);                                          \
	}
FAULT_CMDS(drop, ULNET_FAULT_DROP)
FAULT_CMDS(delay, ULNET_FAULT_DELAY)
FAULT_CMDS(corrupt, ULNET_FAULT_CORRUPT)
FAULT_CMDS(duplicate, ULNET_FAULT_DUPLICATE)
FAULT_CMDS(reorder, ULNET_FAULT_REORDER)
FAULT_CMDS(hello, ULNET_FAULT_HELLO)
FAULT_CMDS(reject, ULNET_FAULT_REJECT)
FAULT_CMDS(stall, ULNET_FAULT_STALL)
FAULT_CMDS(all, ULNET_FAULT_KINDS)

#define MATCH "[--source NID] [--dest NID] [--local_nid NID] --rate N|--interval S [--seed N] [--portal P] [--message PUT,ACK,GET,REPLY]"
#define DEL "--source NID [--dest NID] | --all"
#define CONN "[--source NID] [--dest NID] [--local_nid NID] --rate N|--interval S [--seed N]"
static const struct ulnetd_cmd fault_cmds[] = {
	{ "fault drop add", MATCH " [--health_error NAME]", "drop matching messages (sent: with that LND status)", cmd_drop_add },
	{ "fault drop del", DEL, "delete drop rules", cmd_drop_del },
	{ "fault drop show", "[--json]", "show drop rules and their counters", cmd_drop_show },
	{ "fault delay add", MATCH " --latency MS", "delay matching messages on send", cmd_delay_add },
	{ "fault delay del", DEL, "delete delay rules", cmd_delay_del },
	{ "fault delay show", "[--json]", "show delay rules and their counters", cmd_delay_show },
	{ "fault corrupt add", MATCH, "flip a payload byte of matching PUTs and REPLYs on send", cmd_corrupt_add },
	{ "fault corrupt del", DEL, "delete corrupt rules", cmd_corrupt_del },
	{ "fault corrupt show", "[--json]", "show corrupt rules and their counters", cmd_corrupt_show },
	{ "fault duplicate add", MATCH, "send matching messages twice", cmd_duplicate_add },
	{ "fault duplicate del", DEL, "delete duplicate rules", cmd_duplicate_del },
	{ "fault duplicate show", "[--json]", "show duplicate rules and their counters", cmd_duplicate_show },
	{ "fault reorder add", MATCH " [--hold MS]", "hold matching messages until the next one to the peer", cmd_reorder_add },
	{ "fault reorder del", DEL, "delete reorder rules", cmd_reorder_del },
	{ "fault reorder show", "[--json]", "show reorder rules and their counters", cmd_reorder_show },
	{ "fault hello add", CONN " [--version N]", "tcp: our HELLO to/from a matching peer carries a wrong version",
	  cmd_hello_add },
	{ "fault hello del", DEL, "delete hello rules", cmd_hello_del },
	{ "fault hello show", "[--json]", "show hello rules and their counters", cmd_hello_show },
	{ "fault reject add", CONN " --reason N|NAME", "o2ib: reject a matching peer's connection request with that reason",
	  cmd_reject_add },
	{ "fault reject del", DEL, "delete reject rules", cmd_reject_del },
	{ "fault reject show", "[--json]", "show reject rules and their counters", cmd_reject_show },
	{ "fault stall add", CONN " [--latency MS]", "tcp, o2ib: a matching peer's connections neither send nor read",
	  cmd_stall_add },
	{ "fault stall del", DEL, "delete stall rules (their stalled connections go on)", cmd_stall_del },
	{ "fault stall show", "[--json]", "show stall rules and their counters", cmd_stall_show },
	{ "fault show", "[--json]", "show every fault rule and its counters", cmd_all_show },
	{ "fault reset", "", "set every fault rule's counters to 0", cmd_fault_reset },
};

int ulnetd_fault_register(struct ulnetd *d)
{
	(void)cmd_all_add;
	(void)cmd_all_del;
	return ulnetd_cmd_register(d, fault_cmds, sizeof(fault_cmds) / sizeof(fault_cmds[0]));
}
