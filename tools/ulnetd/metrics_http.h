/* SPDX-License-Identifier: MIT */
/* ulnetd's metrics endpoint (docs/metrics.md): a tiny HTTP/1.1 server on its own thread that answers
 * GET /metrics with the node's metrics in the Prometheus text format, off unless the configuration's
 * `metrics: {listen: ADDRESS:PORT}` names an address. */
#ifndef ULNETD_METRICS_HTTP_H
#define ULNETD_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <ulnet/config_file.h>
#include <ulnet/ulnet.h>

/* A growing text buffer; @failed once an allocation failed (the text is then incomplete). */
struct ulnetd_buf {
	char *s;
	size_t len, cap;
	bool failed;
};

/* metrics_text.c: append the node's metrics to @b. 0 or -ENOMEM. */
int ulnetd_metrics_render(ulnet_node *node, struct ulnetd_buf *b);

struct ulnetd_metrics;
/* Listen on @listen ("ADDRESS:PORT", ulnet_config_listen_parse) and serve @node from a thread. 0 and
 * *@out; or -errno with one line in @err ("metrics: cannot listen on ...: reason"). */
int ulnetd_metrics_start(ulnet_node *node, const char *listen, struct ulnetd_metrics **out, char *err, size_t errlen);
/* Stop serving and join the thread (before the node closes). NULL is a no-op. */
void ulnetd_metrics_stop(struct ulnetd_metrics *m);

#endif
