/* SPDX-License-Identifier: MIT */
/* Latency and health metrics on the control socket (ulnet/metrics.h, docs/metrics.md): the latency
 * blocks `stats show` and `peer show -v` print, and `stats reset`. In text a histogram is its count
 * and percentiles (what a reader asks first); with --json it also has every bucket. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ulnetd.h"

static void emit_hist(struct ulnetd_emit *e, const char *key, const struct ulnet_hist *h, bool buckets)
{
	ulnetd_emit_map(e, key);
	ulnetd_emit_uint(e, "count", h->count);
	ulnetd_emit_uint(e, "sum_us", h->sum_ns / 1000);
	/* a percentile is its bucket's upper bound: within a factor 2, never under the truth */
	ulnetd_emit_uint(e, "p50_us", ulnet_hist_percentile_us(h, 50));
	ulnetd_emit_uint(e, "p99_us", ulnet_hist_percentile_us(h, 99));
	if (buckets) { /* "le" bound in us -> samples in the bucket (not cumulative) */
		ulnetd_emit_map(e, "buckets_us");
		for (unsigned b = 0; b < ULNET_HIST_BUCKETS; b++) {
			uint64_t le = ulnet_hist_bucket_le_us(b);
			char k[24];

			if (le == UINT64_MAX)
				snprintf(k, sizeof(k), "inf");
			else
				snprintf(k, sizeof(k), "%llu", (unsigned long long)le);
			ulnetd_emit_uint(e, k, h->bucket[b]);
		}
		ulnetd_emit_end(e);
	}
	ulnetd_emit_end(e);
}

void ulnetd_emit_latency(struct ulnetd_emit *e, const struct ulnet_latency *lat, bool buckets)
{
	ulnetd_emit_map(e, "latency");
	emit_hist(e, "put_egress", &lat->put, buckets);
	emit_hist(e, "get_rtt", &lat->get, buckets);
	emit_hist(e, "ack_rtt", &lat->ack, buckets);
	ulnetd_emit_end(e);
}

static void hist_add(struct ulnet_hist *to, const struct ulnet_hist *h)
{
	for (unsigned b = 0; b < ULNET_HIST_BUCKETS; b++)
		to->bucket[b] += h->bucket[b];
	to->count += h->count;
	to->sum_ns += h->sum_ns;
}

void ulnetd_node_metrics(ulnet_node *node, struct ulnet_latency *lat, uint64_t drops[ULNET_DROP_REASONS])
{
	struct ulnet_ni_metrics m;

	memset(lat, 0, sizeof(*lat));
	memset(drops, 0, sizeof(uint64_t) * ULNET_DROP_REASONS);
	for (unsigned i = 0; ulnet_ni_metrics_get(node, i, &m) == 0; i++) {
		hist_add(&lat->put, &m.lat.put);
		hist_add(&lat->get, &m.lat.get);
		hist_add(&lat->ack, &m.lat.ack);
		for (unsigned r = 0; r < ULNET_DROP_REASONS; r++)
			drops[r] += m.drops[r];
	}
}

static int cmd_stats_reset(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	const char *net = NULL, *nid = NULL, *why = NULL;
	const struct ulnetd_opt opts[] = {
		{ "--net", NULL, ULNETD_OPT_STR, 0, 0, &net },
		{ "--nid", NULL, ULNETD_OPT_STR, 0, 0, &nid },
	};
	struct ulnet_nid n;
	uint32_t num = 0;
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "stats reset", argc, argv, opts, 2, NULL, 0, &npos)))
		return rc;
	if (net && nid)
		return ulnetd_errorf(out, -EINVAL, "stats reset: --net and --nid together (one scope at a time)");
	if (net && ulnet_net_parse(net, &num, &why))
		return ulnetd_errorf(out, -EINVAL, "bad net '%s': %s", net, why ? why : "invalid");
	if (nid && ulnet_nid_parse(nid, &n, &why))
		return ulnetd_errorf(out, -EINVAL, "bad NID '%s': %s", nid, why ? why : "invalid");
	rc = ulnet_metrics_reset(d->node, net ? ULNET_METRICS_NI : nid ? ULNET_METRICS_PEER : ULNET_METRICS_NODE,
				 num, nid ? &n : NULL);
	if (rc == -ENOENT)
		return ulnetd_errorf(out, rc, "stats reset: no %s %s here", net ? "NI on net" : "peer", net ? net : nid);
	if (rc)
		return ulnetd_errorf(out, rc, "stats reset: %s", ulnet_strerror(rc));
	return 0;
}

static int cmd_set_latency(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	char *pos[1];
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "set latency_metrics", argc, argv, NULL, 0, pos, 1, &npos)))
		return rc;
	if (npos != 1 || (strcmp(pos[0], "0") && strcmp(pos[0], "1")))
		return ulnetd_errorf(out, -EINVAL, "set latency_metrics: give 0 (off) or 1 (on)%s%s",
				     npos == 1 ? ", not " : "", npos == 1 ? pos[0] : "");
	ulnet_metrics_latency_set(d->node, pos[0][0] == '1');
	return 0;
}

static const struct ulnetd_cmd metrics_cmds[] = {
	{ "stats reset", "[--net NET] [--nid NID]",
	  "zero the counters and latency histograms: the node's, one NI's (with its peers') or one peer's",
	  cmd_stats_reset },
	{ "set latency_metrics", "0|1", "stop or start the latency histograms (what they cost: bench/observe_cost.sh)",
	  cmd_set_latency },
};

int ulnetd_metrics_register(struct ulnetd *d)
{
	return ulnetd_cmd_register(d, metrics_cmds, sizeof(metrics_cmds) / sizeof(metrics_cmds[0]));
}
