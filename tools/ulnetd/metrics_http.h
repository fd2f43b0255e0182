/* SPDX-License-Identifier: MIT */
/* ulnetd's metrics endpoint (docs/metrics.md): a tiny HTTP/1.1 server on its own thread that answers
 * GET /metrics with the node's metrics in the Prometheus text format, off unless the configuration's
 * `metrics: {listen: ADDRESS:PORT}` names an address. */
#ifndef ULNETD_METRICS_HTTP_H
#define ULNETD_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ulnet/config_file.h>
#include <ulnet/selftest.h>
#include <ulnet/ulnet.h>

/* A growing text buffer; @failed once an allocation failed (the text is then incomplete);
 * @openmetrics: the text is OpenMetrics (metrics_text.c writes its counters' TYPE lines so). */
struct ulnetd_buf {
	char *s;
	size_t len, cap;
	bool failed;
	bool openmetrics;
};

/* The two text formats the endpoint speaks (Accept header). */
enum ulnetd_metrics_format { ULNETD_METRICS_TEXT_004, ULNETD_METRICS_OPENMETRICS, ULNETD_METRICS_FORMATS };

/* What one scrape renders: the node, its selftest engine (NULL: none) and the server's own counters. */
struct ulnetd_metrics_src {
	ulnet_node *node;
	ulnet_selftest *selftest;
	uint64_t responses[ULNETD_METRICS_FORMATS]; /* 200 responses served, this one included */
};

/* metrics_text.c: append the metrics of @src to @b in format @f. 0 or -ENOMEM. */
int ulnetd_metrics_render(const struct ulnetd_metrics_src *src, enum ulnetd_metrics_format f, struct ulnetd_buf *b);

struct ulnetd_metrics;
/* Listen on @listen ("ADDRESS:PORT", ulnet_config_listen_parse) and serve @node (and @selftest, NULL
 * when the engine is not running) from a thread. 0 and *@out; or -errno with one line in @err
 * ("metrics: cannot listen on ...: reason"). */
int ulnetd_metrics_start(ulnet_node *node, ulnet_selftest *selftest, const char *listen, struct ulnetd_metrics **out,
			 char *err, size_t errlen);
/* Stop serving and join the thread (before the node and the selftest engine close). NULL is a no-op. */
void ulnetd_metrics_stop(struct ulnetd_metrics *m);

#endif
