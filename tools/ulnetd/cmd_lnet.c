/* SPDX-License-Identifier: MIT */
/* ulnetd's built-in control commands, the ones `lnetctl` has: net show, export, ping, stats show,
 * peer show (the routing ones are cmd_route.c's). Each renders lnetctl's YAML layout or JSON with the same keys (ulnetd_emit, the
 * library's writer); net show and export are the library's (ulnet_nets_write, ulnet_config_export). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulnetd.h"

#define PING_MAX_COUNT 1000
#define PING_MAX_TIMEOUT_MS 60000

/* Parse "NID" or "PID-NID" (lnetctl's "12345-10.0.0.1@tcp"). */
static int parse_target(struct ulnetd_out *out, const char *s, struct ulnet_process_id *id)
{
	const char *why = NULL, *nid = s, *dash = strchr(s, '-');

	id->pid = ULNET_PID_ANY;
	if (dash && dash > s && strspn(s, "0123456789") == (size_t)(dash - s)) {
		char *end;
		unsigned long long pid = strtoull(s, &end, 10);

		if (end != dash || pid > UINT32_MAX)
			return ulnetd_errorf(out, -EINVAL, "bad process id in '%s'", s);
		id->pid = (uint32_t)pid;
		nid = dash + 1;
	}
	if (ulnet_nid_parse(nid, &id->nid, &why))
		return ulnetd_errorf(out, -EINVAL, "bad NID '%s': %s", nid, why ? why : "invalid");
	return 0;
}

static int cmd_net_show(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool json = false, verbose = false;
	const char *net = NULL;
	const struct ulnetd_opt opts[] = {
		{ "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json },
		{ "--verbose", "-v", ULNETD_OPT_FLAG, 0, 0, &verbose },
		{ "--net", NULL, ULNETD_OPT_STR, 0, 0, &net },
	};
	struct ulnetd_emit e;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "net show", argc, argv, opts, 3, NULL, 0, &npos)))
		return rc;
	if (net) {
		uint32_t num;
		const char *why = NULL;

		if (ulnet_net_parse(net, &num, &why))
			return ulnetd_errorf(out, -EINVAL, "bad net '%s': %s", net, why ? why : "invalid");
	}
	ulnetd_emit_init(&e, out, json);
	ulnetd_emit_map(&e, NULL);
	rc = ulnet_nets_write(d->node, net, verbose ? ULNET_NET_SHOW_VERBOSE : ULNET_NET_SHOW, &e.w);
	ulnetd_emit_end(&e);
	return rc;
}

#define NET_ADD_MAX_IFS 4

/* lnetctl net add: --net, and --nid or --if (the address of the first interface), with the
 * tunables lnetctl takes on the command line; LND tunables come by import. */
static int cmd_net_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *net = NULL, *nid = NULL, *ifs_s = NULL, *ifs[NET_ADD_MAX_IFS + 1] = { 0 };
	const char *tun_s[4] = { 0 };
	static const char *const tun_keys[4] = { "peer_timeout", "peer_credits", "peer_buffer_credits", "credits" };
	const struct ulnetd_opt opts[] = {
		{ "--net", NULL, ULNETD_OPT_STR, 0, 0, &net },
		{ "--nid", NULL, ULNETD_OPT_STR, 0, 0, &nid },
		{ "--if", NULL, ULNETD_OPT_STR, 0, 0, &ifs_s },
		{ "--peer-timeout", NULL, ULNETD_OPT_STR, 0, 0, &tun_s[0] },
		{ "--peer-credits", NULL, ULNETD_OPT_STR, 0, 0, &tun_s[1] },
		{ "--peer-buffer-credits", NULL, ULNETD_OPT_STR, 0, 0, &tun_s[2] },
		{ "--credits", NULL, ULNETD_OPT_STR, 0, 0, &tun_s[3] },
	};
	struct ulnet_kv tun[4];
	struct ulnet_ni_conf conf = { 0 };
	char ifbuf[256];
	size_t ntun = 0;
	int npos, rc, nif = 0;

	if ((rc = ulnetd_parse_args(out, "net add", argc, argv, opts, 7, NULL, 0, &npos)))
		return rc;
	if (!net)
		return ulnetd_errorf(out, -EINVAL, "net add: --net NET is required");
	if (!nid && !ifs_s)
		return ulnetd_errorf(out, -EINVAL, "net add %s: give --nid NID or --if INTERFACE", net);
	if (ifs_s) {
		char *save = NULL;

		if (strlen(ifs_s) >= sizeof(ifbuf))
			return ulnetd_errorf(out, -EINVAL, "net add %s: --if list too long", net);
		snprintf(ifbuf, sizeof(ifbuf), "%s", ifs_s);
		for (char *t = strtok_r(ifbuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (nif == NET_ADD_MAX_IFS)
				return ulnetd_errorf(out, -EINVAL, "net add %s: more than %d interfaces", net, NET_ADD_MAX_IFS);
			ifs[nif++] = t;
		}
	}
	for (size_t k = 0; k < 4; k++)
		if (tun_s[k])
			tun[ntun++] = (struct ulnet_kv){ tun_keys[k], tun_s[k] };
	conf.net = net;
	conf.nid = nid;
	conf.interfaces = nif ? ifs : NULL;
	conf.tunables = tun;
	conf.n_tunables = ntun;
	rc = ulnet_ni_add(d->node, &conf);
	if (rc)
		return ulnetd_errorf(out, rc, "net add %s: %s (the node's log names the cause)", net, ulnet_strerror(rc));
	return 0;
}

/* lnetctl net del: --net, and --if only as a check (one NI per net). */
static int cmd_net_del(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *net = NULL, *ifname = NULL;
	const struct ulnetd_opt opts[] = {
		{ "--net", NULL, ULNETD_OPT_STR, 0, 0, &net },
		{ "--if", NULL, ULNETD_OPT_STR, 0, 0, &ifname },
	};
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "net del", argc, argv, opts, 2, NULL, 0, &npos)))
		return rc;
	if (!net)
		return ulnetd_errorf(out, -EINVAL, "net del: --net NET is required");
	if (ifname) {
		struct ulnet_ni_info ni;
		bool match = false;

		for (unsigned i = 1; ulnet_ni_info_get(d->node, i, &ni) == 0; i++) {
			char *save = NULL;

			if (strcmp(ni.net, net))
				continue;
			for (char *t = strtok_r(ni.interfaces, ", ", &save); t && !match; t = strtok_r(NULL, ", ", &save))
				match = !strcmp(t, ifname);
		}
		if (!match)
			return ulnetd_errorf(out, -ENOENT, "net del %s: no NI on it uses interface %s", net, ifname);
	}
	rc = ulnet_ni_del(d->node, net);
	if (rc)
		return ulnetd_errorf(out, rc, "net del %s: %s (the node's log names the cause)", net, ulnet_strerror(rc));
	return 0;
}

/* lnetctl peer add/del --prim_nid NID [--nid NID] [--non_mr]: ulnet peers have one NID (no
 * Multi-Rail), so --nid may only repeat the primary NID. */
static int peer_nids(struct ulnetd_out *out, const char *cmd, const char *prim, const char *nids, struct ulnet_nid *nid)
{
	const char *why = NULL, *first = prim ? prim : nids;
	char buf[256], *save = NULL;

	if (!first)
		return ulnetd_errorf(out, -EINVAL, "%s: --prim_nid NID is required", cmd);
	if (nids && strlen(nids) >= sizeof(buf))
		return ulnetd_errorf(out, -EINVAL, "%s: --nid list too long", cmd);
	snprintf(buf, sizeof(buf), "%s", first);
	if (strchr(buf, ','))
		*strchr(buf, ',') = '\0';
	if (ulnet_nid_parse(buf, nid, &why) || ulnet_nid_is_any(nid))
		return ulnetd_errorf(out, -EINVAL, "%s: bad NID '%s': %s", cmd, buf, why ? why : "not a NID");
	snprintf(buf, sizeof(buf), "%s", nids ? nids : "");
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		struct ulnet_nid other;

		if (ulnet_nid_parse(t, &other, &why))
			return ulnetd_errorf(out, -EINVAL, "%s: bad NID '%s': %s", cmd, t, why ? why : "invalid");
		if (!ulnet_nid_equal(&other, nid))
			return ulnetd_errorf(out, -EOPNOTSUPP,
					     "%s: --nid %s: ulnet has no Multi-Rail, a peer's one NID is its primary NID", cmd, t);
	}
	return 0;
}

static int cmd_peer_add(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *prim = NULL, *nids = NULL;
	bool non_mr = false;
	const struct ulnetd_opt opts[] = {
		{ "--prim_nid", NULL, ULNETD_OPT_STR, 0, 0, &prim },
		{ "--nid", NULL, ULNETD_OPT_STR, 0, 0, &nids },
		{ "--non_mr", NULL, ULNETD_OPT_FLAG, 0, 0, &non_mr }, /* every ulnet peer is */
	};
	struct ulnet_nid nid;
	char s[ULNET_NID_STRLEN];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "peer add", argc, argv, opts, 3, NULL, 0, &npos)) ||
	    (rc = peer_nids(out, "peer add", prim, nids, &nid)))
		return rc;
	rc = ulnet_peer_add(d->node, &nid);
	if (rc)
		return ulnetd_errorf(out, rc, "peer add %s: %s%s", ulnet_nid_format(&nid, s, sizeof(s)), ulnet_strerror(rc),
				     rc == -EHOSTUNREACH ? " (no local NI on its net: net add it first)" : "");
	return 0;
}

static int cmd_peer_del(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *prim = NULL, *nids = NULL;
	const struct ulnetd_opt opts[] = {
		{ "--prim_nid", NULL, ULNETD_OPT_STR, 0, 0, &prim },
		{ "--nid", NULL, ULNETD_OPT_STR, 0, 0, &nids },
	};
	struct ulnet_nid nid;
	char s[ULNET_NID_STRLEN];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "peer del", argc, argv, opts, 2, NULL, 0, &npos)) ||
	    (rc = peer_nids(out, "peer del", prim, nids, &nid)))
		return rc;
	rc = ulnet_peer_del(d->node, &nid);
	if (rc)
		return ulnetd_errorf(out, rc, "peer del %s: %s", ulnet_nid_format(&nid, s, sizeof(s)), ulnet_strerror(rc));
	return 0;
}

static int cmd_export(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool json = false;
	const struct ulnetd_opt opts[] = { { "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json } };
	struct ulnetd_emit e;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "export", argc, argv, opts, 1, NULL, 0, &npos)))
		return rc;
	ulnetd_emit_init(&e, out, json);
	return ulnet_config_export(d->node, d->control_path, &d->cfg->selftest, d->cfg->metrics_listen, &e.w); /* the library's, as it reads it back */
}

#define PING_MAX_NIDS 16   /* NIDs one ping command takes, as lnetctl takes a list */
#define PING_FLUSH_NS 100000000ull /* --count: the output so far goes out at most every 100 ms */

/* Split lnetctl's "NID,NID" lists (and several words) into @ids. */
static int ping_targets(struct ulnetd_out *out, char **pos, int npos, struct ulnet_process_id *ids, char (*names)[64],
			int *n)
{
	*n = 0;
	for (int t = 0; t < npos; t++) {
		char *save = NULL, *tok;
		int rc;

		for (tok = strtok_r(pos[t], ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (*n == PING_MAX_NIDS)
				return ulnetd_errorf(out, -EINVAL, "ping: more than %d NIDs", PING_MAX_NIDS);
			if ((rc = parse_target(out, tok, &ids[*n])))
				return rc;
			snprintf(names[(*n)++], sizeof(names[0]), "%s", tok);
		}
	}
	return *n ? 0 : ulnetd_errorf(out, -EINVAL, "ping: missing NID");
}

/* lnetctl's --source: the NID the ping must leave from. ulnet has one NI per net, so it is the one
 * the node would use anyway, or the ping cannot honour it. */
static int check_source(struct ulnetd *d, struct ulnetd_out *out, const char *src, const struct ulnet_process_id *id,
			const char *name)
{
	struct ulnet_nid want, have;
	const char *why = NULL;
	char h[ULNET_NID_STRLEN];
	int rc;

	if (ulnet_nid_parse(src, &want, &why))
		return ulnetd_errorf(out, -EINVAL, "ping: bad --source '%s': %s", src, why ? why : "invalid");
	if ((rc = ulnet_source_nid(d->node, &id->nid, &have)))
		return ulnetd_errorf(out, rc, "ping %s: no NI or route reaches it", name);
	if (!ulnet_nid_equal(&want, &have))
		return ulnetd_errorf(out, -EINVAL,
				     "ping %s: --source %s cannot reach it; it leaves from %s (one NI per net, no Multi-Rail)",
				     name, src, ulnet_nid_format(&have, h, sizeof(h)));
	return 0;
}

static int cmd_ping(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool json = false;
	long long count = 1, timeout_s = 0, timeout = 0;
	const char *source = NULL;
	const struct ulnetd_opt opts[] = {
		{ "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json },
		{ "--count", "-c", ULNETD_OPT_INT, 1, PING_MAX_COUNT, &count },
		/* lnetctl's --timeout is in seconds; --timeout_ms is ulnet's finer one */
		{ "--timeout", "-t", ULNETD_OPT_INT, 1, PING_MAX_TIMEOUT_MS / 1000, &timeout_s },
		{ "--timeout_ms", NULL, ULNETD_OPT_INT, 1, PING_MAX_TIMEOUT_MS, &timeout },
		{ "--source", "-s", ULNETD_OPT_STR, 0, 0, &source },
	};
	struct ulnet_ping_result *res;
	struct ulnet_process_id ids[PING_MAX_NIDS];
	char names[PING_MAX_NIDS][64];
	struct ulnetd_emit e;
	char *pos[PING_MAX_NIDS], failmsg[512] = "";
	int npos, rc, first_err = 0, t, nids_failed = 0, nt;
	long long failed = 0, i = 0;
	bool started = false, gone = false;
	uint64_t flushed = ulnet_clock_ns();

	if ((rc = ulnetd_parse_args(out, "ping", argc, argv, opts, 5, pos, PING_MAX_NIDS, &npos)))
		return rc;
	if (timeout_s && timeout)
		return ulnetd_errorf(out, -EINVAL, "ping: --timeout (seconds) and --timeout_ms: give one");
	if (!timeout)
		timeout = timeout_s ? timeout_s * 1000 : 1000; /* lnetctl's default: 1 s */
	if ((rc = ping_targets(out, pos, npos, ids, names, &nt)))
		return rc; /* every NID checked before the first ping */
	for (t = 0; source && t < nt; t++)
		if ((rc = check_source(d, out, source, &ids[t], names[t])))
			return rc;
	if (!(res = malloc(sizeof(*res))))
		return -ENOMEM;
	ulnetd_emit_init(&e, out, json);
	/* lnetctl's `ping NID...`: each NID in turn, --count times each, one list of replies */
	for (t = 0; t < nt && !gone && !ulnetd_stopping(d); t++) {
		long long nid_failed = 0;
		int nid_err = 0;

		for (i = 0; i < count && !ulnetd_stopping(d); i++) {
			char nid[ULNET_NID_STRLEN], ms[32];
			const struct ulnet_nid *primary;
			const struct ulnet_process_id id = ids[t];

			rc = ulnet_ping(d->node, &id, (int)timeout, res);
			if (rc) {
				if (!nid_failed++)
					nid_err = rc;
				if (!failed++)
					first_err = rc;
				continue;
			}
			if (!started) {
				ulnetd_emit_map(&e, NULL);
				ulnetd_emit_list(&e, "ping");
				started = true;
			}
			/* The primary NID is the first one that is not 0@lo (entry 0), as lnetctl shows it. */
			primary = res->n_nids ? &res->nids[0].nid : &id.nid;
			if (res->n_nids > 1)
				primary = &res->nids[1].nid;
			ulnetd_emit_map(&e, NULL);
			ulnetd_emit_str(&e, "primary nid", ulnet_nid_format(primary, nid, sizeof(nid)));
			ulnetd_emit_bool(&e, "Multi-Rail", res->features & 0x08);
			snprintf(ms, sizeof(ms), "%.3f", (double)res->rtt_ns / 1e6);
			ulnetd_emit_raw(&e, "time (ms)", ms);
			ulnetd_emit_list(&e, "peer ni");
			for (uint32_t k = 0; k < res->n_nids && k < ULNET_PING_MAX_NIDS; k++) {
				ulnetd_emit_map(&e, NULL);
				ulnetd_emit_str(&e, "nid", ulnet_nid_format(&res->nids[k].nid, nid, sizeof(nid)));
				ulnetd_emit_end(&e);
			}
			ulnetd_emit_end(&e);
			ulnetd_emit_end(&e);
			/* lines reach the client every PING_FLUSH_NS at most: a write per ping and the client's
			 * wake-up (a context switch on a shared core) would come between two pings */
			if (count > 1 && ulnet_clock_ns() - flushed >= PING_FLUSH_NS) {
				flushed = ulnet_clock_ns();
				if (ulnetd_out_flush(out)) {
					gone = true; /* the client left */
					break;
				}
			}
		}
		if (nid_failed) {
			size_t l = strlen(failmsg);

			snprintf(failmsg + l, sizeof(failmsg) - l, "%sping %.63s: %.80s%s", nids_failed++ ? "; " : "", names[t],
				 ulnet_strerror(nid_err), nid_failed < count ? " (some replies missing)" : "");
		}
	}
	free(res);
	if (started) {
		ulnetd_emit_end(&e);
		ulnetd_emit_end(&e);
	}
	if (failed)
		return ulnetd_errorf(out, first_err, "%s", failmsg);
	if (t < nt || i < count)
		return ulnetd_errorf(out, -ESHUTDOWN, "ping %s: node shutting down", names[t < nt ? t : nt - 1]);
	return 0;
}

static int cmd_stats_show(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool json = false, verbose = false;
	const struct ulnetd_opt opts[] = {
		{ "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json },
		{ "--verbose", "-v", ULNETD_OPT_FLAG, 0, 0, &verbose },
	};
	struct ulnet_routing_info ri;
	struct ulnet_stats st;
	struct ulnet_latency lat;
	uint64_t drops[ULNET_DROP_REASONS];
	struct ulnetd_emit e;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "stats show", argc, argv, opts, 2, NULL, 0, &npos)))
		return rc;
	memset(&st, 0, sizeof(st));
	ulnet_stats_get(d->node, &st);
	ulnet_routing_info_get(d->node, &ri);
	ulnetd_node_metrics(d->node, &lat, drops);
	ulnetd_emit_init(&e, out, json);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_map(&e, "statistics");
	ulnetd_emit_uint(&e, "msgs_alloc", st.msgs_alloc);
	ulnetd_emit_uint(&e, "msgs_max", st.msgs_max);
	ulnetd_emit_uint(&e, "errors", st.errors);
	ulnetd_emit_uint(&e, "send_count", st.send_count);
	ulnetd_emit_uint(&e, "recv_count", st.recv_count);
	ulnetd_emit_uint(&e, "route_count", st.route_count);
	ulnetd_emit_uint(&e, "drop_count", st.drop_count);
	ulnetd_emit_uint(&e, "send_length", st.send_length);
	ulnetd_emit_uint(&e, "recv_length", st.recv_length);
	ulnetd_emit_uint(&e, "route_length", st.route_length);
	ulnetd_emit_uint(&e, "drop_length", st.drop_length);
	ulnetd_emit_uint(&e, "tx_queue_full", st.tx_queue_full);
	ulnetd_emit_uint(&e, "tx_timeouts", st.tx_timeouts);
	ulnetd_emit_uint(&e, "events_dropped", st.events_dropped);
	ulnetd_emit_uint(&e, "loops", st.loops);
	/* received messages dropped (drop_count), by reason */
	ulnetd_emit_map(&e, "drops");
	for (int r = 0; r < ULNET_DROP_REASONS; r++)
		ulnetd_emit_uint(&e, ulnet_drop_name((enum ulnet_drop)r), drops[r]);
	ulnetd_emit_end(&e);
	ulnetd_emit_latency(&e, &lat, json);
	/* messages forwarded for other nodes (routing enabled), and why others were not */
	ulnetd_emit_map(&e, "forwarding");
	ulnetd_emit_uint(&e, "msgs", ri.fwd.msgs);
	ulnetd_emit_uint(&e, "bytes", ri.fwd.bytes);
	ulnetd_emit_map(&e, "drops");
	for (int r = 0; r < ULNET_FWD_DROP_REASONS; r++)
		ulnetd_emit_uint(&e, ulnet_fwd_drop_name((enum ulnet_fwd_drop)r), ri.fwd.drops[r]);
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	if (verbose) {
		/* descriptors handed out vs taken from the heap: flat in steady state (free lists) */
		ulnetd_emit_uint(&e, "desc_gets", st.desc_gets);
		ulnetd_emit_uint(&e, "desc_heap_allocs", st.desc_heap_allocs);
		/* node lock (shared state) hold times: "lo-hi" microseconds -> holds */
		ulnetd_emit_uint(&e, "lock_hold_max_ns", st.lock_hold_max_ns);
		ulnetd_emit_uint(&e, "lock_hold_total_ns", st.lock_hold_total_ns);
		ulnetd_emit_uint(&e, "lock_sleeps", st.lock_sleeps);
		ulnetd_emit_uint(&e, "owner_sleeps", st.owner_sleeps); /* waits to enter a loop */
		/* connections and listeners each loop thread polls */
		ulnetd_emit_list(&e, "loop_watchers");
		for (unsigned i = 0; i < st.loops && i < ULNET_LOOPS_MAX; i++)
			ulnetd_emit_uint(&e, NULL, st.loop_watchers[i]);
		ulnetd_emit_end(&e);
		ulnetd_emit_map(&e, "lock_hold_us");
		for (unsigned b = 0; b < ULNET_LOCK_HIST_BUCKETS; b++) {
			char k[32];

			if (b == 0)
				snprintf(k, sizeof(k), "0-1");
			else if (b == ULNET_LOCK_HIST_BUCKETS - 1)
				snprintf(k, sizeof(k), "%u-", 1u << (b - 1));
			else
				snprintf(k, sizeof(k), "%u-%u", 1u << (b - 1), 1u << b);
			ulnetd_emit_uint(&e, k, st.lock_hold_hist[b]);
		}
		ulnetd_emit_end(&e);
	}
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	return 0;
}

/* The o2ib data path with this peer: per size bucket, what transfers cost (WRs, SGEs, bounces,
 * registrations), and the ratios a reader wants (WRs per transfer, SGEs per WR). */
static void emit_ratio(struct ulnetd_emit *e, const char *key, uint64_t num, uint64_t den)
{
	char v[32];

	snprintf(v, sizeof(v), "%.2f", den ? (double)num / (double)den : 0.0);
	ulnetd_emit_raw(e, key, v);
}

static void emit_rdma_stats(struct ulnetd_emit *e, const struct ulnet_peer_rdma_stats *rs)
{
	ulnetd_emit_map(e, "rdma");
	ulnetd_emit_uint(e, "renegotiations", rs->renegotiations);
	ulnetd_emit_uint(e, "post_rejects", rs->post_rejects);
	ulnetd_emit_uint(e, "window_waits", rs->window_waits);
	ulnetd_emit_uint(e, "reg_cache_hits", rs->reg_cache_hits);
	ulnetd_emit_uint(e, "reg_cache_misses", rs->reg_cache_misses);
	ulnetd_emit_uint(e, "reg_cache_evictions", rs->reg_cache_evictions);
	ulnetd_emit_list(e, "buckets");
	for (unsigned k = 0; k < ULNET_RDMA_BUCKETS; k++) {
		const struct ulnet_rdma_bucket *b = &rs->bucket[k];

		ulnetd_emit_map(e, NULL);
		ulnetd_emit_uint(e, "max_bytes", ulnet_rdma_bucket_max[k]);
		ulnetd_emit_uint(e, "transfers", b->transfers);
		ulnetd_emit_uint(e, "wrs", b->wrs);
		emit_ratio(e, "wrs_per_transfer", b->wrs, b->transfers);
		ulnetd_emit_uint(e, "max_wrs", b->max_wrs);
		emit_ratio(e, "sges_per_wr", b->sges, b->wrs);
		ulnetd_emit_uint(e, "sinks", b->sinks);
		emit_ratio(e, "frags_per_sink", b->sink_frags, b->sinks);
		ulnetd_emit_uint(e, "bounces", b->bounces);
		ulnetd_emit_uint(e, "registrations", b->registrations);
		ulnetd_emit_end(e);
	}
	ulnetd_emit_end(e);
	ulnetd_emit_end(e);
}

/* Payloads above LNET_MTU toward the peer (docs/large.md): "announced" once its ping reply carried
 * ulnet's large bit, "not announced" once one did not, "unknown" before any (the peer table may have
 * forgotten a ping the large-payload table still knows). Not yes/no: YAML would read booleans. */
static const char *large_payloads(ulnet_node *node, const struct ulnet_peer_info *p)
{
	if (ulnet_large_peer(node, &p->nid) == 1)
		return "announced";
	if (!p->ping_known)
		return "unknown";
	return p->ping_features & ULNET_PING_FEAT_ULNET_LARGE ? "announced" : "not announced";
}

static int cmd_peer_show(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool json = false, verbose = false;
	const char *only = NULL;
	const struct ulnetd_opt opts[] = {
		{ "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json },
		{ "--verbose", "-v", ULNETD_OPT_FLAG, 0, 0, &verbose },
		{ "--nid", NULL, ULNETD_OPT_STR, 0, 0, &only },
	};
	struct ulnet_nid want;
	struct ulnetd_emit e;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "peer show", argc, argv, opts, 3, NULL, 0, &npos)))
		return rc;
	if (only) {
		const char *why = NULL;

		if (ulnet_nid_parse(only, &want, &why))
			return ulnetd_errorf(out, -EINVAL, "bad NID '%s': %s", only, why ? why : "invalid");
	}
	ulnetd_emit_init(&e, out, json);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_list(&e, "peer");
	for (unsigned i = 0;; i++) {
		struct ulnet_peer_info p;
		struct ulnet_peer_metrics pm;
		struct ulnet_peer_limits lim;
		struct ulnet_peer_rdma_stats rs;
		char nid[ULNET_NID_STRLEN];

		memset(&p, 0, sizeof(p));
		if (ulnet_peer_info_get(d->node, i, &p))
			break;
		if (only && !ulnet_nid_equal(&want, &p.nid))
			continue;
		ulnet_nid_format(&p.nid, nid, sizeof(nid));
		ulnetd_emit_map(&e, NULL);
		ulnetd_emit_str(&e, "primary nid", nid);
		/* as the peer's ping info said (lnet-wire.md §2.4: MULTI_RAIL 0x08); False before any ping */
		ulnetd_emit_bool(&e, "Multi-Rail", p.ping_known && (p.ping_features & 0x08));
		ulnetd_emit_str(&e, "large payloads", large_payloads(d->node, &p));
		ulnetd_emit_list(&e, "peer ni");
		ulnetd_emit_map(&e, NULL);
		ulnetd_emit_str(&e, "nid", nid);
		ulnetd_emit_str(&e, "state", p.state[0] ? p.state : "NA");
		if (verbose) {
			ulnetd_emit_int(&e, "max_ni_tx_credits", p.max_tx_credits);
			ulnetd_emit_int(&e, "available_tx_credits", p.tx_credits);
			ulnetd_emit_int(&e, "min_tx_credits", p.min_tx_credits);
			ulnetd_emit_int(&e, "tx_q_num_of_buf", p.tx_queued);
			/* router buffers this peer may still fill here (peer_buffer_credits), lowest seen */
			ulnetd_emit_int(&e, "available_rtr_credits", p.rtr_credits);
			ulnetd_emit_int(&e, "min_rtr_credits", p.min_rtr_credits);
			ulnetd_emit_map(&e, "statistics");
			ulnetd_emit_uint(&e, "send_count", p.send_count);
			ulnetd_emit_uint(&e, "recv_count", p.recv_count);
			/* the same index names the same peer unless the table changed in between */
			if (ulnet_peer_metrics_get(d->node, i, &pm) == 0 && ulnet_nid_equal(&pm.nid, &p.nid)) {
				ulnetd_emit_uint(&e, "tx_queue_full", pm.tx_queue_full);
				ulnetd_emit_uint(&e, "down_count", pm.down_count);
			} else {
				memset(&pm, 0, sizeof(pm));
			}
			ulnetd_emit_end(&e);
			ulnetd_emit_latency(&e, &pm.lat, json);
			ulnetd_emit_map(&e, "forwarded");
			ulnetd_emit_uint(&e, "msgs", p.fwd_msgs);
			ulnetd_emit_uint(&e, "bytes", p.fwd_bytes);
			ulnetd_emit_uint(&e, "drops", p.fwd_drops);
			ulnetd_emit_end(&e);
			/* what the LND negotiated with this peer, when it can say */
			if (ulnet_peer_limits_get(d->node, &p.nid, &lim) == 0) {
				ulnetd_emit_map(&e, "limits");
				ulnetd_emit_uint(&e, "max_frags", lim.max_frags);
				ulnetd_emit_uint(&e, "queue_depth", lim.queue_depth);
				/* LNET_MTU, and the LND's own message size (o2ib: ibcp_max_msg_size): not the same */
				ulnetd_emit_uint(&e, "lnet_mtu", lim.lnet_mtu);
				if (lim.lnd_msg_size)
					ulnetd_emit_uint(&e, "max_msg_size", lim.lnd_msg_size);
				if (lim.conns) {
					ulnetd_emit_uint(&e, "conns", lim.conns);
					ulnetd_emit_uint(&e, "conns_used", lim.conns_used);
				}
				ulnetd_emit_end(&e);
			}
			if (ulnet_peer_rdma_stats_get(d->node, &p.nid, &rs) == 0)
				emit_rdma_stats(&e, &rs);
		}
		ulnetd_emit_end(&e);
		ulnetd_emit_end(&e);
		ulnetd_emit_end(&e);
	}
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	return 0;
}

static const struct ulnetd_cmd lnet_cmds[] = {
	{ "net show", "[-v [LEVEL]] [--net NET] [--json]", "show the local NIs", cmd_net_show },
	{ "net add", "--net NET (--nid NID | --if IF[,IF]) [--peer-timeout S] [--peer-credits N] [--peer-buffer-credits N] [--credits N]",
	  "add an NI to the running node", cmd_net_add },
	{ "net del", "--net NET [--if IF]", "remove the NI on NET (its routes first; not while the node routes)", cmd_net_del },
	{ "peer add", "--prim_nid NID [--nid NID] [--non_mr]", "add a static peer on a local net (kept while idle)", cmd_peer_add },
	{ "peer del", "--prim_nid NID [--nid NID]", "forget a peer (static or not)", cmd_peer_del },
	{ "export", "[--json]", "print the running configuration (input for ulnetd -c)", cmd_export },
	{ "ping", "[PID-]NID[,NID...]... [--count N] [--timeout S|--timeout_ms MS] [--source NID] [--json]",
	  "ping NIDs (up to 16) and list their NIDs", cmd_ping },
	{ "stats show", "[-v] [--json]", "show the node's counters, drops, latencies and forwarding (-v: descriptor free lists, lock hold times)", cmd_stats_show },
	{ "peer show", "[-v [LEVEL]] [--nid NID] [--json]", "show the peers (-v: credits, counters, latencies)", cmd_peer_show },
};

int ulnetd_lnet_register(struct ulnetd *d)
{
	return ulnetd_cmd_register(d, lnet_cmds, sizeof(lnet_cmds) / sizeof(lnet_cmds[0]));
}
