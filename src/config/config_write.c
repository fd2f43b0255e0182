/* SPDX-License-Identifier: MIT */
/* A running node written back as its configuration (ulnet/config_file.h): `export` (a file
 * ulnet_config_parse reads into the same node) and `net show` share one rendering of an NI, in
 * lnetctl's key order, through the one writer. Typed: tunables come from the LNDs' tables. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ulnet/config_file.h>
#include <ulnet/ulnet.h>
#include <ulnet/writer.h>

#define MAX_NIS 256

static const char *ni_status_name(uint32_t status)
{
	return status == ULNET_NI_STATUS_UP ? "up" : "down";
}

/* The NI's LND tunables, typed by the LND's table: integers and bools (0/1, as lnetctl prints them) as
 * numbers, enums by name. */
static void write_lnd_tunables(struct ulnet_writer *w, ulnet_node *node, unsigned idx, const struct ulnet_ni_info *ni)
{
	ulnet_writer_map(w, "lnd tunables");
	for (size_t k = 0; k < ni->n_lnd_tunables; k++) {
		const struct ulnet_tunable *t = &ni->lnd_tunables[k];
		long v;

		if (ulnet_ni_lnd_tunable_get(node, idx, k, &v))
			continue;
		if (t->type == ULNET_TUNABLE_ENUM && ulnet_tunable_enum_name(t, v))
			ulnet_writer_str(w, t->key, ulnet_tunable_enum_name(t, v));
		else
			ulnet_writer_int(w, t->key, v);
	}
	ulnet_writer_end(w);
}

/* interfaces: "lo" or "eth0,eth1" / "eth0 eth1" -> {0: eth0, 1: eth1} */
static void write_interfaces(struct ulnet_writer *w, const char *text)
{
	char buf[sizeof(((struct ulnet_ni_info *)0)->interfaces)], *word, *save = NULL;
	unsigned i = 0;

	if (!text[0])
		return;
	snprintf(buf, sizeof(buf), "%s", text);
	ulnet_writer_map(w, "interfaces");
	for (word = strtok_r(buf, ", ", &save); word; word = strtok_r(NULL, ", ", &save)) {
		char k[12];

		snprintf(k, sizeof(k), "%u", i++);
		ulnet_writer_str(w, k, word);
	}
	ulnet_writer_end(w);
}

/* An NI over an RDMA fabric (o2ib): the provider and the device limits in force, which the
 * configured `lnd tunables` (provider: auto, device: {...} over the defaults) do not say alone. */
static void write_fabric(struct ulnet_writer *w, ulnet_node *node, unsigned idx)
{
	struct ulnet_ni_fabric f;

	if (ulnet_ni_fabric_get(node, idx, &f))
		return;
	ulnet_writer_map(w, "fabric");
	ulnet_writer_str(w, "provider", f.provider);
	ulnet_writer_map(w, "device");
	ulnet_writer_uint(w, "max_send_sge", f.max_send_sge);
	ulnet_writer_uint(w, "max_recv_sge", f.max_recv_sge);
	ulnet_writer_uint(w, "max_qp_wr", f.max_qp_wr);
	ulnet_writer_uint(w, "max_qp", f.max_qp);
	ulnet_writer_uint(w, "max_mr", f.max_mr);
	ulnet_writer_uint(w, "max_mr_size", f.max_mr_size);
	ulnet_writer_uint(w, "max_msg_sz", f.max_msg_sz);
	ulnet_writer_uint(w, "page_size", f.page_size);
	ulnet_writer_uint(w, "copy_thread", f.copy_thread);
	ulnet_writer_end(w);
	ulnet_writer_end(w);
}

static void write_ni(struct ulnet_writer *w, ulnet_node *node, unsigned idx, const struct ulnet_ni_info *ni,
		     enum ulnet_net_detail detail)
{
	ulnet_writer_map(w, NULL);
	ulnet_writer_nid(w, "nid", &ni->nid);
	ulnet_writer_str(w, "status", ni_status_name(ni->status));
	write_interfaces(w, ni->interfaces);
	if (detail == ULNET_NET_SHOW_VERBOSE) {
		ulnet_writer_map(w, "statistics");
		ulnet_writer_uint(w, "send_count", ni->send_count);
		ulnet_writer_uint(w, "recv_count", ni->recv_count);
		ulnet_writer_uint(w, "drop_count", ni->drop_count);
		ulnet_writer_end(w);
	}
	if (detail != ULNET_NET_SHOW) {
		ulnet_writer_map(w, "tunables");
		ulnet_writer_int(w, "peer_timeout", ni->peer_timeout);
		ulnet_writer_int(w, "peer_credits", ni->peer_credits);
		ulnet_writer_int(w, "peer_buffer_credits", ni->peer_buffer_credits);
		ulnet_writer_int(w, "credits", ni->credits);
		ulnet_writer_end(w);
		write_lnd_tunables(w, node, idx, ni);
	}
	if (detail == ULNET_NET_SHOW_VERBOSE) {
		write_fabric(w, node, idx);
		ulnet_writer_int(w, "available_tx_credits", ni->tx_credits);
		ulnet_writer_int(w, "min_tx_credits", ni->min_tx_credits);
	}
	if (detail != ULNET_NET_SHOW)
		ulnet_writer_str(w, "CPT", "[0]");
	ulnet_writer_end(w);
}

int ulnet_nets_write(ulnet_node *node, const char *only, enum ulnet_net_detail detail, struct ulnet_writer *w)
{
	struct ulnet_ni_info *nis = calloc(MAX_NIS, sizeof(*nis));
	unsigned n = 0;

	if (!nis)
		return -ENOMEM;
	while (n < MAX_NIS && ulnet_ni_info_get(node, n, &nis[n]) == 0) /* the core's order, 0@lo first */
		n++;
	/* NIs grouped by net in order of first appearance */
	ulnet_writer_list(w, "net");
	for (unsigned i = 0; i < n; i++) {
		bool seen = false;

		for (unsigned k = 0; k < i && !seen; k++)
			seen = !strcmp(nis[k].net, nis[i].net);
		if (seen || (only && strcmp(only, nis[i].net)))
			continue;
		ulnet_writer_map(w, NULL);
		ulnet_writer_str(w, "net type", nis[i].net);
		ulnet_writer_list(w, "local NI(s)");
		for (unsigned k = i; k < n; k++)
			if (!strcmp(nis[k].net, nis[i].net))
				write_ni(w, node, k, &nis[k], detail);
		ulnet_writer_end(w);
		ulnet_writer_end(w);
	}
	ulnet_writer_end(w);
	free(nis);
	return 0;
}

/* `route:` (only when there are routes), `routing:` and `buffers:` as lnetctl export writes them,
 * then the router checker's sensitivity as lnetctl's `global: router_sensitivity`. */
static void write_routing(struct ulnet_writer *w, ulnet_node *node)
{
	struct ulnet_routing_conf rc;
	struct ulnet_route_info r;

	unsigned i;

	for (i = 0; ulnet_route_info_get(node, i, &r) == 0; i++) {
		if (!i)
			ulnet_writer_list(w, "route");
		ulnet_writer_map(w, NULL);
		ulnet_writer_str(w, "net", r.net);
		ulnet_writer_nid(w, "gateway", &r.gateway);
		ulnet_writer_int(w, "hop", r.hops);
		ulnet_writer_uint(w, "priority", r.priority);
		ulnet_writer_uint(w, "health_sensitivity", r.health_sensitivity);
		ulnet_writer_end(w);
	}
	if (i)
		ulnet_writer_end(w);
	ulnet_routing_get(node, &rc);
	ulnet_writer_map(w, "routing");
	ulnet_writer_int(w, "enable", rc.enable);
	ulnet_writer_uint(w, "alive_router_check_interval", rc.check_interval);
	ulnet_writer_uint(w, "router_ping_timeout", rc.ping_timeout);
	ulnet_writer_end(w);
	ulnet_writer_map(w, "buffers");
	ulnet_writer_uint(w, "tiny", rc.tiny);
	ulnet_writer_uint(w, "small", rc.small);
	ulnet_writer_uint(w, "large", rc.large);
	ulnet_writer_uint(w, "memory_max", rc.memory_max);
	ulnet_writer_end(w);
	ulnet_writer_map(w, "global");
	ulnet_writer_uint(w, "router_sensitivity", rc.sensitivity);
	ulnet_writer_end(w);
}

/* `peer:` (only when there are static peers) in lnetctl export's layout. */
static void write_peers(struct ulnet_writer *w, ulnet_node *node)
{
	struct ulnet_peer_info pi;
	bool any = false;

	for (unsigned i = 0; ulnet_peer_info_get(node, i, &pi) == 0; i++) {
		if (!pi.is_static)
			continue;
		if (!any)
			ulnet_writer_list(w, "peer");
		any = true;
		ulnet_writer_map(w, NULL);
		ulnet_writer_nid(w, "primary nid", &pi.nid);
		ulnet_writer_bool(w, "Multi-Rail", false);
		ulnet_writer_list(w, "peer ni");
		ulnet_writer_map(w, NULL);
		ulnet_writer_nid(w, "nid", &pi.nid);
		ulnet_writer_end(w);
		ulnet_writer_end(w);
		ulnet_writer_end(w);
	}
	if (any)
		ulnet_writer_end(w);
}

/* `fault:` (only when there are rules), without their counters. */
static void write_faults(struct ulnet_writer *w, ulnet_node *node)
{
	struct ulnet_fault_info fi;
	unsigned i;

	for (i = 0; ulnet_fault_info_get(node, ULNET_FAULT_KINDS, i, &fi) == 0; i++) {
		if (!i)
			ulnet_writer_list(w, "fault");
		ulnet_fault_write(w, &fi, false);
	}
	if (i)
		ulnet_writer_end(w);
}

int ulnet_config_export(ulnet_node *node, const char *control, const struct ulnet_selftest_opts *selftest,
			const char *metrics_listen, struct ulnet_writer *w)
{
	struct ulnet_node_opts o;
	int rc;

	ulnet_node_opts_get(node, &o);
	ulnet_writer_map(w, NULL);
	ulnet_writer_map(w, "node");
	ulnet_writer_uint(w, "pid", o.pid);
	ulnet_writer_uint(w, "page_size", o.page_size);
	ulnet_writer_uint(w, "transaction_timeout", o.transaction_timeout);
	ulnet_writer_uint(w, "max_peers", o.max_peers);
	ulnet_writer_uint(w, "busy_poll_us", o.busy_poll_us);
	ulnet_writer_uint(w, "large_max", o.large_max);
	ulnet_writer_uint(w, "loops", o.loops);
	if (control)
		ulnet_writer_str(w, "control", control);
	ulnet_writer_end(w);
	rc = ulnet_nets_write(node, NULL, ULNET_NET_EXPORT, w);
	write_peers(w, node);
	write_routing(w, node);
	write_faults(w, node);
	if (selftest) {
		ulnet_writer_map(w, "selftest");
		ulnet_writer_uint(w, "server_rpc_timeout_ms", selftest->server_rpc_timeout_ms
								       ? selftest->server_rpc_timeout_ms
								       : ULNET_SELFTEST_SERVER_TIMEOUT_DEFAULT_MS);
		ulnet_writer_bool(w, "kernel_stats", selftest->kernel_stats);
		ulnet_writer_end(w);
	}
	if (metrics_listen) {
		ulnet_writer_map(w, "metrics");
		ulnet_writer_str(w, "listen", metrics_listen);
		ulnet_writer_end(w);
	}
	ulnet_writer_end(w);
	return rc;
}
