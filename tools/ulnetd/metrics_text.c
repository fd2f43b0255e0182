/* SPDX-License-Identifier: MIT */
/* The node's metrics in the Prometheus text exposition format (version 0.0.4) or in OpenMetrics
 * 1.0.0, what GET /metrics serves (metrics_http.c). The two differ here only in a counter's TYPE and
 * HELP lines (OpenMetrics names the family without _total) and OpenMetrics' final "# EOF". Names follow Prometheus' conventions: the unit in the name (_seconds,
 * _bytes), counters end in _total, histograms have _bucket{le}/_sum/_count; labels net= and nid= (an
 * NI's NID, or a peer's with its local NI in ni=). Every family is written whole, HELP and TYPE
 * first, as the format asks. Only the public API (ulnet/metrics.h, ulnet_stats_get, ulnet/rdma.h,
 * ulnet/selftest.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ulnet/rdma.h>

#include "metrics_http.h"

__attribute__((format(printf, 2, 3))) static void put(struct ulnetd_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap); /* (no arithmetic on NULL) */
		va_end(ap);
		if (n < 0) {
			b->failed = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 65536;
		char *s;

		while (cap - b->len <= (size_t)n)
			cap *= 2;
		if (!(s = realloc(b->s, cap))) {
			b->failed = true;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
}

static void family(struct ulnetd_buf *b, const char *name, const char *type, const char *help)
{
	size_t n = strlen(name);

	/* OpenMetrics: a counter family is named without the _total its samples carry */
	if (b->openmetrics && !strcmp(type, "counter") && n > 6 && !strcmp(name + n - 6, "_total"))
		n -= 6;
	put(b, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)n, name, help, (int)n, name, type);
}

/* A label value: NIDs and net names hold no quote, backslash or newline, but a value never breaks
 * the format whatever it holds. */
static const char *esc(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 3 < len; s++) {
		if (*s == '"' || *s == '\\') {
			out[o++] = '\\';
			out[o++] = *s;
		} else if (*s == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
	return out;
}

struct snap {
	struct ulnet_stats st;
	struct ulnet_ni_metrics *nis;
	size_t n_nis;
	struct ulnet_peer_metrics *peers;
	size_t n_peers;
	char (*ni_labels)[160];   /* net="..",nid=".." per NI */
	char (*peer_labels)[240]; /* net="..",ni="..",nid=".." per peer */
};

static int grow(void **a, size_t *cap, size_t n, size_t size)
{
	void *p;

	if (n < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 16;
	if (!(p = realloc(*a, *cap * size)))
		return -ENOMEM;
	*a = p;
	return 0;
}

static int snap_take(ulnet_node *node, struct snap *s)
{
	size_t cap = 0, pcap = 0;
	char e1[96], e2[96], e3[96];

	memset(s, 0, sizeof(*s));
	ulnet_stats_get(node, &s->st);
	for (;;) {
		if (grow((void **)&s->nis, &cap, s->n_nis, sizeof(*s->nis)))
			return -ENOMEM;
		if (ulnet_ni_metrics_get(node, (unsigned)s->n_nis, &s->nis[s->n_nis]))
			break;
		s->n_nis++;
	}
	for (;;) {
		if (grow((void **)&s->peers, &pcap, s->n_peers, sizeof(*s->peers)))
			return -ENOMEM;
		if (ulnet_peer_metrics_get(node, (unsigned)s->n_peers, &s->peers[s->n_peers]))
			break;
		s->n_peers++;
	}
	s->ni_labels = calloc(s->n_nis + 1, sizeof(*s->ni_labels));
	s->peer_labels = calloc(s->n_peers + 1, sizeof(*s->peer_labels));
	if (!s->ni_labels || !s->peer_labels)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_nis; i++) {
		char nid[ULNET_NID_STRLEN];

		ulnet_nid_format(&s->nis[i].nid, nid, sizeof(nid));
		snprintf(s->ni_labels[i], sizeof(s->ni_labels[i]), "net=\"%s\",nid=\"%s\"",
			 esc(s->nis[i].net, e1, sizeof(e1)), esc(nid, e2, sizeof(e2)));
	}
	for (size_t i = 0; i < s->n_peers; i++) {
		char nid[ULNET_NID_STRLEN], ni[ULNET_NID_STRLEN], net[32];

		ulnet_nid_format(&s->peers[i].nid, nid, sizeof(nid));
		ulnet_nid_format(&s->peers[i].ni_nid, ni, sizeof(ni));
		ulnet_net_format(ulnet_nid_net(&s->peers[i].ni_nid), net, sizeof(net));
		snprintf(s->peer_labels[i], sizeof(s->peer_labels[i]), "net=\"%s\",ni=\"%s\",nid=\"%s\"",
			 esc(net, e1, sizeof(e1)), esc(ni, e2, sizeof(e2)), esc(nid, e3, sizeof(e3)));
	}
	return 0;
}

static void snap_free(struct snap *s)
{
	free(s->nis);
	free(s->peers);
	free(s->ni_labels);
	free(s->peer_labels);
}

static void hist(struct ulnetd_buf *b, const char *name, const char *labels, const struct ulnet_hist *h)
{
	uint64_t cum = 0;

	for (unsigned k = 0; k + 1 < ULNET_HIST_BUCKETS; k++) {
		cum += h->bucket[k];
		put(b, "%s_bucket{%s,le=\"%.9g\"} %llu\n", name, labels, (double)ulnet_hist_bucket_le_us(k) / 1e6,
		    (unsigned long long)cum);
	}
	/* +Inf is the count: the last bucket holds everything above the largest bound */
	put(b, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
	put(b, "%s_sum{%s} %.9f\n", name, labels, (double)h->sum_ns / 1e9);
	put(b, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

/* A histogram family over the NIs (@peers false) or the peers. @which: 0 put, 1 get, 2 ack. */
static void hist_family(struct ulnetd_buf *b, const struct snap *s, bool peers, int which, const char *name,
			const char *help)
{
	family(b, name, "histogram", help);
	for (size_t i = 0; i < (peers ? s->n_peers : s->n_nis); i++) {
		const struct ulnet_latency *l = peers ? &s->peers[i].lat : &s->nis[i].lat;
		const struct ulnet_hist *h = which == 0 ? &l->put : which == 1 ? &l->get : &l->ack;

		hist(b, name, peers ? s->peer_labels[i] : s->ni_labels[i], h);
	}
}

#define NI_FAMILY(b, s, name, type, help, fmt, expr)                                                          \
	do {                                                                                                   \
		family(b, name, type, help);                                                                   \
		for (size_t i_ = 0; i_ < (s)->n_nis; i_++) {                                                   \
			const struct ulnet_ni_metrics *m = &(s)->nis[i_];                                      \
			put(b, "%s{%s} " fmt "\n", name, (s)->ni_labels[i_], expr);                            \
		}                                                                                              \
	} while (0)
#define PEER_FAMILY(b, s, name, type, help, fmt, expr)                                                        \
	do {                                                                                                   \
		family(b, name, type, help);                                                                   \
		for (size_t i_ = 0; i_ < (s)->n_peers; i_++) {                                                 \
			const struct ulnet_peer_metrics *m = &(s)->peers[i_];                                  \
			put(b, "%s{%s} " fmt "\n", name, (s)->peer_labels[i_], expr);                          \
		}                                                                                              \
	} while (0)

/* o2ib's per-peer RDMA counters (what `peer show -v` prints as rdma:), per peer NID: the LND keeps
 * them per NID, so a NID seen on two NIs is written once, with its first NI's labels. */
struct rdma_row {
	size_t peer; /* index in the snapshot */
	struct ulnet_peer_rdma_stats rs;
};

#define RDMA_COUNTER(name, help, field)                                                                      \
	do {                                                                                                 \
		family(b, name, "counter", help);                                                            \
		for (size_t i_ = 0; i_ < n; i_++)                                                            \
			put(b, "%s{%s} %llu\n", name, s->peer_labels[rows[i_].peer],                         \
			    (unsigned long long)rows[i_].rs.field);                                          \
	} while (0)
#define RDMA_BUCKETS(name, type, help, field)                                                                \
	do {                                                                                                 \
		family(b, name, type, help);                                                                 \
		for (size_t i_ = 0; i_ < n; i_++)                                                            \
			for (unsigned k_ = 0; k_ < ULNET_RDMA_BUCKETS; k_++)                                 \
				put(b, "%s{%s,max_bytes=\"%s\"} %llu\n", name, s->peer_labels[rows[i_].peer], \
				    bound[k_], (unsigned long long)rows[i_].rs.bucket[k_].field);            \
	} while (0)

static void rdma_families(struct ulnetd_buf *b, ulnet_node *node, const struct snap *s)
{
	struct rdma_row *rows = s->n_peers ? calloc(s->n_peers, sizeof(*rows)) : NULL;
	char bound[ULNET_RDMA_BUCKETS][16];
	size_t n = 0;

	if (s->n_peers && !rows) {
		b->failed = true;
		return;
	}
	for (size_t i = 0; i < s->n_peers; i++) {
		bool seen = false;

		for (size_t j = 0; j < n && !seen; j++)
			seen = ulnet_nid_equal(&s->peers[rows[j].peer].nid, &s->peers[i].nid);
		if (!seen && ulnet_peer_rdma_stats_get(node, &s->peers[i].nid, &rows[n].rs) == 0)
			rows[n++].peer = i;
	}
	if (!n) { /* no o2ib peer: no family at all, as a node without o2ib has none */
		free(rows);
		return;
	}
	/* the bounds peer show -v prints (the last also takes anything larger: nothing is, at ULNET_MTU) */
	for (unsigned k = 0; k < ULNET_RDMA_BUCKETS; k++)
		snprintf(bound[k], sizeof(bound[k]), "%u", ulnet_rdma_bucket_max[k]);
	RDMA_COUNTER("ulnet_peer_rdma_renegotiations_total",
		     "o2ib connection attempts retried with the peer's smaller max_frags or queue depth.", renegotiations);
	RDMA_COUNTER("ulnet_peer_rdma_post_rejects_total", "o2ib posts the provider refused (each closes the connection).",
		     post_rejects);
	RDMA_COUNTER("ulnet_peer_rdma_window_waits_total",
		     "o2ib transfers whose next window found the send queue too full.", window_waits);
	RDMA_COUNTER("ulnet_peer_rdma_reg_cache_hits_total", "o2ib source registrations found in the NI's cache.",
		     reg_cache_hits);
	RDMA_COUNTER("ulnet_peer_rdma_reg_cache_misses_total", "o2ib source registrations made (not in the cache).",
		     reg_cache_misses);
	RDMA_COUNTER("ulnet_peer_rdma_reg_cache_evictions_total",
		     "o2ib registrations dropped from the cache to stay within its limits.", reg_cache_evictions);
	/* by transfer size: max_bytes is the bucket's upper bound (not cumulative, unlike a histogram's le) */
	RDMA_BUCKETS("ulnet_peer_rdma_transfers_total", "counter",
		     "o2ib transfers written into the peer's memory, by size bucket.", transfers);
	RDMA_BUCKETS("ulnet_peer_rdma_write_wrs_total", "counter", "RDMA WRITE work requests those transfers took.",
		     wrs);
	RDMA_BUCKETS("ulnet_peer_rdma_sges_total", "counter", "SGEs in those work requests.", sges);
	RDMA_BUCKETS("ulnet_peer_rdma_wrs_per_transfer_max", "gauge", "Most work requests one transfer took.", max_wrs);
	RDMA_BUCKETS("ulnet_peer_rdma_sinks_total", "counter", "Sinks described to the peer (PUT_ACK, GET_REQ).", sinks);
	RDMA_BUCKETS("ulnet_peer_rdma_sink_fragments_total", "counter", "Fragments in those sink descriptors.",
		     sink_frags);
	RDMA_BUCKETS("ulnet_peer_rdma_bounces_total", "counter", "Transfers copied through a bounce buffer.", bounces);
	RDMA_BUCKETS("ulnet_peer_rdma_registrations_total", "counter", "Memory regions registered for transfers.",
		     registrations);
	free(rows);
}

/* The selftest engine: this node as a client (ulnet_selftest_client_stats_get), as a server and its
 * lst session (ulnet_selftest_stats_get), and the last one-shot run's result. */
static void selftest_families(struct ulnetd_buf *b, ulnet_selftest *st)
{
	struct ulnet_selftest_client_stats c;
	struct ulnet_selftest_stats e;
	static const char *const results[] = { "ok", "timeout", "mismatch", "refused", "peer_gone" };

	ulnet_selftest_client_stats_get(st, &c);
	ulnet_selftest_stats_get(st, &e);
	family(b, "ulnet_selftest_runs_active", "gauge",
	       "One-shot selftest runs under way on this node's console (ulnet-selftest brw/ping).");
	put(b, "ulnet_selftest_runs_active %u\n", c.runs_active);
	family(b, "ulnet_selftest_runs_finished_total", "counter", "One-shot selftest runs that ran to their end.");
	put(b, "ulnet_selftest_runs_finished_total %llu\n", (unsigned long long)c.runs_finished);
	family(b, "ulnet_selftest_client_tests_active", "gauge",
	       "Selftest tests this node runs as a client now (one-shot runs and lst batches).");
	put(b, "ulnet_selftest_client_tests_active %u\n", c.tests_running);
	family(b, "ulnet_selftest_rpcs_total", "counter", "Selftest RPCs this node sent as a client, by result.");
	{
		const uint64_t v[] = { c.rpcs_ok, c.rpcs_timeout, c.rpcs_mismatch, c.rpcs_refused, c.rpcs_peer_gone };

		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			put(b, "ulnet_selftest_rpcs_total{result=\"%s\"} %llu\n", results[i], (unsigned long long)v[i]);
	}
	family(b, "ulnet_selftest_bytes_total", "counter",
	       "brw payload of this node's successful client RPCs: read (into this node) and write.");
	put(b, "ulnet_selftest_bytes_total{direction=\"read\"} %llu\n", (unsigned long long)c.bytes_read);
	put(b, "ulnet_selftest_bytes_total{direction=\"write\"} %llu\n", (unsigned long long)c.bytes_written);
	family(b, "ulnet_selftest_server_rpcs", "gauge", "Selftest RPCs this node serves now.");
	put(b, "ulnet_selftest_server_rpcs %u\n", e.server_rpcs);
	family(b, "ulnet_selftest_server_waiting_rpcs", "gauge", "Served brw RPCs waiting for bulk memory.");
	put(b, "ulnet_selftest_server_waiting_rpcs %u\n", e.server_waiting);
	family(b, "ulnet_selftest_server_bulk_bytes", "gauge", "Bulk memory the served RPCs hold.");
	put(b, "ulnet_selftest_server_bulk_bytes %llu\n", (unsigned long long)e.server_bulk_bytes);
	family(b, "ulnet_selftest_server_rpcs_expired_total", "counter",
	       "Served RPCs aborted after server_rpc_timeout_ms (lnet_selftest's rpcs_expired, 32 bits).");
	put(b, "ulnet_selftest_server_rpcs_expired_total %u\n", e.rpcs_expired);
	family(b, "ulnet_selftest_session_active", "gauge", "1 while this node is in an lst session.");
	put(b, "ulnet_selftest_session_active %d\n", e.session_active ? 1 : 0);
	if (!c.have_last)
		return;
	/* the last one-shot run: gauges that keep its figures until the next run ends */
	const struct ulnet_selftest_result *r = &c.last;
	char l[400], e1[96], e2[200];

	snprintf(l, sizeof(l), "test=\"%s\",from=\"%s\",to=\"%s\"",
		 r->kind == ULNET_SELFTEST_PING ? "ping" : r->write ? "brw_write" : "brw_read",
		 esc(r->from, e1, sizeof(e1)), esc(r->to, e2, sizeof(e2)));
	family(b, "ulnet_selftest_last_run_rpcs", "gauge", "The last one-shot run's RPCs, by result.");
	{
		const uint64_t v[] = { r->rpcs_ok, r->timeout, r->mismatch, r->refused, r->peer_gone, r->unclassified };
		static const char *const names[] = { "ok", "timeout", "mismatch", "refused", "peer_gone", "unclassified" };

		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			put(b, "ulnet_selftest_last_run_rpcs{%s,result=\"%s\"} %llu\n", l, names[i], (unsigned long long)v[i]);
	}
	family(b, "ulnet_selftest_last_run_seconds", "gauge", "The last one-shot run's duration.");
	put(b, "ulnet_selftest_last_run_seconds{%s} %.6f\n", l, r->seconds);
	if (!r->bytes_na) {
		family(b, "ulnet_selftest_last_run_bytes", "gauge", "The last one-shot run's brw payload bytes.");
		put(b, "ulnet_selftest_last_run_bytes{%s} %llu\n", l, (unsigned long long)r->bytes);
		family(b, "ulnet_selftest_last_run_bandwidth_bytes_per_second", "gauge",
		       "The last one-shot run's brw payload over its duration.");
		put(b, "ulnet_selftest_last_run_bandwidth_bytes_per_second{%s} %.0f\n", l,
		    r->seconds > 0 ? (double)r->bytes / r->seconds : 0.0);
	}
	if (!r->latency_na) {
		family(b, "ulnet_selftest_last_run_latency_seconds", "gauge",
		       "The last one-shot run's RPC latency: p50, p99 and max (a gauge, not a summary: no quantile label).");
		put(b, "ulnet_selftest_last_run_latency_seconds{%s,stat=\"p50\"} %.6f\n", l, (double)r->lat_p50_us / 1e6);
		put(b, "ulnet_selftest_last_run_latency_seconds{%s,stat=\"p99\"} %.6f\n", l, (double)r->lat_p99_us / 1e6);
		put(b, "ulnet_selftest_last_run_latency_seconds{%s,stat=\"max\"} %.6f\n", l, (double)r->lat_max_us / 1e6);
	}
	family(b, "ulnet_selftest_last_run_end_timestamp_seconds", "gauge", "When the last one-shot run ended (Unix time).");
	put(b, "ulnet_selftest_last_run_end_timestamp_seconds{%s} %.3f\n", l, (double)c.last_end_unix_ms / 1e3);
}

int ulnetd_metrics_render(const struct ulnetd_metrics_src *src, enum ulnetd_metrics_format f, struct ulnetd_buf *b)
{
	const struct ulnet_stats *st;
	struct snap s;
	int rc;

	b->openmetrics = f == ULNETD_METRICS_OPENMETRICS;
	rc = snap_take(src->node, &s);

	if (rc) {
		snap_free(&s);
		return rc;
	}
	st = &s.st;
	/* the node: ulnet_stats_get (what stats show prints) */
	family(b, "ulnet_node_sent_messages_total", "counter", "Messages sent by the node (every NI).");
	put(b, "ulnet_node_sent_messages_total %llu\n", (unsigned long long)st->send_count);
	family(b, "ulnet_node_received_messages_total", "counter", "Messages received by the node.");
	put(b, "ulnet_node_received_messages_total %llu\n", (unsigned long long)st->recv_count);
	family(b, "ulnet_node_sent_bytes_total", "counter", "Payload bytes sent.");
	put(b, "ulnet_node_sent_bytes_total %llu\n", (unsigned long long)st->send_length);
	family(b, "ulnet_node_received_bytes_total", "counter", "Payload bytes received.");
	put(b, "ulnet_node_received_bytes_total %llu\n", (unsigned long long)st->recv_length);
	family(b, "ulnet_node_errors_total", "counter", "Messages that completed with an error.");
	put(b, "ulnet_node_errors_total %llu\n", (unsigned long long)st->errors);
	family(b, "ulnet_node_transaction_timeouts_total", "counter",
	       "GETs and ACK-requested PUTs whose REPLY or ACK never came.");
	put(b, "ulnet_node_transaction_timeouts_total %llu\n", (unsigned long long)st->tx_timeouts);
	family(b, "ulnet_node_events_dropped_total", "counter", "Events lost for lack of memory.");
	put(b, "ulnet_node_events_dropped_total %llu\n", (unsigned long long)st->events_dropped);
	family(b, "ulnet_node_messages_allocated", "gauge", "Message descriptors in use.");
	put(b, "ulnet_node_messages_allocated %u\n", st->msgs_alloc);

	/* per NI */
	NI_FAMILY(b, &s, "ulnet_sent_messages_total", "counter", "Messages sent on the NI.", "%llu",
		  (unsigned long long)m->send_count);
	NI_FAMILY(b, &s, "ulnet_received_messages_total", "counter", "Messages received on the NI.", "%llu",
		  (unsigned long long)m->recv_count);
	family(b, "ulnet_dropped_messages_total", "counter", "Received messages dropped, by reason.");
	for (size_t i = 0; i < s.n_nis; i++)
		for (int r = 0; r < ULNET_DROP_REASONS; r++)
			put(b, "ulnet_dropped_messages_total{%s,reason=\"%s\"} %llu\n", s.ni_labels[i],
			    ulnet_drop_name((enum ulnet_drop)r), (unsigned long long)s.nis[i].drops[r]);
	NI_FAMILY(b, &s, "ulnet_tx_queue_full_total", "counter",
		  "Sends refused: a peer's queue was at peer_queue_msgs or peer_queue_bytes.", "%llu",
		  (unsigned long long)m->tx_queue_full);
	NI_FAMILY(b, &s, "ulnet_ni_tx_credits", "gauge", "NI send credits available now.", "%d", m->tx_credits);
	NI_FAMILY(b, &s, "ulnet_ni_tx_credits_min", "gauge", "Lowest NI send credits seen (since a reset).", "%d",
		  m->min_tx_credits);
	hist_family(b, &s, false, 0, "ulnet_put_egress_seconds", "PUT egress on the NI: ulnet_put to the SEND event.");
	hist_family(b, &s, false, 1, "ulnet_get_rtt_seconds", "GET round trip on the NI: ulnet_get to the REPLY event.");
	hist_family(b, &s, false, 2, "ulnet_ack_rtt_seconds",
		    "ACK round trip on the NI: ulnet_put (ACK requested) to the ACK event.");

	/* per peer */
	PEER_FAMILY(b, &s, "ulnet_peer_sent_messages_total", "counter", "Messages sent to the peer.", "%llu",
		    (unsigned long long)m->send_count);
	PEER_FAMILY(b, &s, "ulnet_peer_received_messages_total", "counter", "Messages received from the peer.",
		    "%llu", (unsigned long long)m->recv_count);
	PEER_FAMILY(b, &s, "ulnet_peer_tx_queue_full_total", "counter", "Sends to the peer refused: its queue was full.",
		    "%llu", (unsigned long long)m->tx_queue_full);
	PEER_FAMILY(b, &s, "ulnet_peer_down_transitions_total", "counter", "Times the peer's LND reported it down.",
		    "%llu", (unsigned long long)m->down_count);
	PEER_FAMILY(b, &s, "ulnet_peer_tx_credits", "gauge", "Send credits to the peer available now.", "%d",
		    m->tx_credits);
	PEER_FAMILY(b, &s, "ulnet_peer_tx_credits_min", "gauge", "Lowest send credits to the peer seen.", "%d",
		    m->min_tx_credits);
	PEER_FAMILY(b, &s, "ulnet_peer_tx_queued_messages", "gauge", "Messages waiting for a credit to the peer.", "%u",
		    m->tx_queued);
	hist_family(b, &s, true, 0, "ulnet_peer_put_egress_seconds", "PUT egress to the peer: ulnet_put to the SEND event.");
	hist_family(b, &s, true, 1, "ulnet_peer_get_rtt_seconds", "GET round trip with the peer: ulnet_get to the REPLY event.");
	hist_family(b, &s, true, 2, "ulnet_peer_ack_rtt_seconds",
		    "ACK round trip with the peer: ulnet_put (ACK requested) to the ACK event.");
	rdma_families(b, src->node, &s);
	if (src->selftest)
		selftest_families(b, src->selftest);
	family(b, "ulnet_metrics_responses_total", "counter", "Scrapes this endpoint answered, by format.");
	put(b, "ulnet_metrics_responses_total{format=\"text\"} %llu\n",
	    (unsigned long long)src->responses[ULNETD_METRICS_TEXT_004]);
	put(b, "ulnet_metrics_responses_total{format=\"openmetrics\"} %llu\n",
	    (unsigned long long)src->responses[ULNETD_METRICS_OPENMETRICS]);
	if (b->openmetrics)
		put(b, "# EOF\n");
	snap_free(&s);
	return b->failed ? -ENOMEM : 0;
}
