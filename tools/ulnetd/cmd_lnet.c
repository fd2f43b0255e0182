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

static int cmd_ping(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	bool json = false;
	long long count = 1, timeout = 1000;
	const struct ulnetd_opt opts[] = {
		{ "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json },
		{ "--count", "-c", ULNETD_OPT_INT, 1, PING_MAX_COUNT, &count },
		{ "--timeout", NULL, ULNETD_OPT_INT, 1, PING_MAX_TIMEOUT_MS, &timeout },
	};
	struct ulnet_ping_result *res;
	struct ulnet_process_id ids[PING_MAX_NIDS];
	struct ulnetd_emit e;
	char *pos[PING_MAX_NIDS], failmsg[512] = "";
	int npos, rc, first_err = 0, t, nids_failed = 0;
	long long failed = 0, i = 0;
	bool started = false, gone = false;
	uint64_t flushed = ulnet_clock_ns();

	if ((rc = ulnetd_parse_args(out, "ping", argc, argv, opts, 3, pos, PING_MAX_NIDS, &npos)))
		return rc;
	if (npos < 1)
		return ulnetd_errorf(out, -EINVAL, "ping: missing NID");
	for (t = 0; t < npos; t++) /* every NID checked before the first ping */
		if ((rc = parse_target(out, pos[t], &ids[t])))
			return rc;
	if (!(res = malloc(sizeof(*res))))
		return -ENOMEM;
	ulnetd_emit_init(&e, out, json);
	/* lnetctl's `ping NID...`: each NID in turn, --count times each, one list of replies */
	for (t = 0; t < npos && !gone && !ulnetd_stopping(d); t++) {
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

			snprintf(failmsg + l, sizeof(failmsg) - l, "%sping %s: %s%s", nids_failed++ ? "; " : "", pos[t],
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
	if (t < npos || i < count)
		return ulnetd_errorf(out, -ESHUTDOWN, "ping %s: node shutting down", pos[t < npos ? t : npos - 1]);
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
	{ "net show", "[-v] [--net NET] [--json]", "show the local NIs", cmd_net_show },
	{ "export", "[--json]", "print the running configuration (input for ulnetd -c)", cmd_export },
	{ "ping", "[PID-]NID... [--count N] [--timeout MS] [--json]", "ping NIDs (up to 16) and list their NIDs", cmd_ping },
	{ "stats show", "[-v] [--json]", "show the node's counters, drops, latencies and forwarding (-v: descriptor free lists, lock hold times)", cmd_stats_show },
	{ "peer show", "[-v] [--nid NID] [--json]", "show the peers (-v: credits, counters, latencies)", cmd_peer_show },
};

int ulnetd_lnet_register(struct ulnetd *d)
{
	return ulnetd_cmd_register(d, lnet_cmds, sizeof(lnet_cmds) / sizeof(lnet_cmds[0]));
}
