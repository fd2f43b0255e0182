/* SPDX-License-Identifier: MIT */
/* Read a node's YAML configuration (ulnet/config_file.h) with libyaml's document API, keeping each
 * node's mark so every message names the line. Value rules are the core's own (page size, NID on its
 * net, the tunable tables); what needs the running system is checked when the NIs are added. */
#include <ulnet/config_file.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "internal.h" /* the node's own checks: bool, page size, NI NID */
#include "config_routing.h"

#define CFG_MAX_INTERFACES 16
#define CFG_MAX_FILE (16u << 20)

struct cfgp {
	const char *file;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
	struct ulnet_config *cfg;
};

static void xfree(const void *p)
{
	free((void *)(uintptr_t)p);
}

static unsigned node_line(const yaml_node_t *n)
{
	return n ? (unsigned)n->start_mark.line + 1 : 0;
}

__attribute__((format(printf, 3, 4))) static int fail(struct cfgp *p, const yaml_node_t *n,
						      const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->errlen)
		snprintf(p->err, p->errlen, "%s:%u: %s", p->file, node_line(n), msg);
	return -EINVAL;
}

static int oom(struct cfgp *p)
{
	if (p->errlen)
		snprintf(p->err, p->errlen, "%s: out of memory", p->file);
	return -ENOMEM;
}

static yaml_node_t *get_node(struct cfgp *p, yaml_node_item_t id)
{
	return yaml_document_get_node(p->doc, id);
}

static const char *scalar(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A plain "", "~" or "null": an empty value ("lnd tunables:" with nothing under it). */
static bool is_null(const yaml_node_t *n)
{
	const char *s = scalar(n);

	if (!s || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static const char *node_kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE: return "a mapping";
	case YAML_SEQUENCE_NODE: return "a list";
	default: return is_null(n) ? "an empty value" : "a scalar";
	}
}

/* Check @n is a mapping (an empty value counts as an empty one) with unique scalar keys.
 * *empty is set for the empty-value case; iterate pairs only when it is false. */
static int want_map(struct cfgp *p, const yaml_node_t *n, const char *what, bool *empty)
{
	*empty = false;
	if (is_null(n)) {
		*empty = true;
		return 0;
	}
	if (n->type != YAML_MAPPING_NODE)
		return fail(p, n, "expected a mapping for '%s', got %s", what, node_kind(n));
	for (yaml_node_pair_t *a = n->data.mapping.pairs.start; a < n->data.mapping.pairs.top; a++) {
		yaml_node_t *k = get_node(p, a->key);
		const char *ks = scalar(k);

		if (!ks)
			return fail(p, k, "expected a scalar key in %s, got %s", what, node_kind(k));
		for (yaml_node_pair_t *b = n->data.mapping.pairs.start; b < a; b++) {
			if (!strcmp(scalar(get_node(p, b->key)), ks))
				return fail(p, k, "duplicate key '%s' in %s", ks, what);
		}
	}
	return 0;
}

static int want_seq(struct cfgp *p, const yaml_node_t *n, const char *what, bool *empty)
{
	*empty = false;
	if (is_null(n)) {
		*empty = true;
		return 0;
	}
	if (n->type != YAML_SEQUENCE_NODE)
		return fail(p, n, "expected a list for '%s', got %s", what, node_kind(n));
	return 0;
}

static int get_int(struct cfgp *p, const yaml_node_t *v, const char *key, long long min, long long max,
		   long long *out)
{
	const char *s = scalar(v);
	char *end;
	long long x;

	if (!s || is_null(v))
		return fail(p, v, "expected an integer for '%s', got %s", key, s ? "an empty value" : node_kind(v));
	if (v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return fail(p, v, "expected an integer for '%s', got the string \"%s\"", key, s);
	errno = 0;
	x = strtoll(s, &end, (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10);
	if (end == s || *end || (s[0] == '0' && s[1] && s[1] != 'x' && s[1] != 'X'))
		return fail(p, v, "expected an integer for '%s', got '%s'", key, s);
	if (errno == ERANGE || x < min || x > max)
		return fail(p, v, "'%s' out of range [%lld, %lld]: %s", key, min, max, s);
	*out = x;
	return 0;
}

/* A non-empty scalar; *out borrows from the document. */
static int get_str(struct cfgp *p, const yaml_node_t *v, const char *key, const char **out)
{
	const char *s = scalar(v);

	if (!s)
		return fail(p, v, "expected a string for '%s', got %s", key, node_kind(v));
	if (is_null(v) || !*s)
		return fail(p, v, "empty value for '%s'", key);
	*out = s;
	return 0;
}

/* A plain scalar in the core's boolean words (as a BOOL tunable takes them). */
static int get_bool(struct cfgp *p, const yaml_node_t *v, const char *key, bool *out)
{
	const char *s = scalar(v);

	if (!s || is_null(v) || v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || ulnet__bool_parse(s, out))
		return fail(p, v, "expected 0 or 1 (true/false, yes/no, on/off) for '%s', got %s", key,
			    !s ? node_kind(v) : is_null(v) ? "an empty value" : s);
	return 0;
}

#define FOREACH_PAIR(p, n, k, ks, v)                                                               \
	for (yaml_node_pair_t *pair_ = (n)->data.mapping.pairs.start;                              \
	     pair_ < (n)->data.mapping.pairs.top && ((k) = get_node((p), pair_->key)) &&           \
	     ((ks) = scalar(k)) && ((v) = get_node((p), pair_->value));                            \
	     pair_++)

/* ---- node: ---- */

static int parse_node(struct cfgp *p, const yaml_node_t *n)
{
	yaml_node_t *k, *v;
	const char *ks;
	bool empty;
	int rc;

	if ((rc = want_map(p, n, "node", &empty)) || empty)
		return rc;
	FOREACH_PAIR(p, n, k, ks, v) {
		long long x;
		char why[80];

		if (!strcmp(ks, "pid")) {
			if ((rc = get_int(p, v, ks, 0, UINT32_MAX, &x)))
				return rc;
			p->cfg->opts.pid = (uint32_t)x;
		} else if (!strcmp(ks, "page_size")) {
			if ((rc = get_int(p, v, ks, 0, LLONG_MAX, &x)))
				return rc;
			if (x > UINT32_MAX || ulnet__page_size_check((uint32_t)x, why, sizeof(why)))
				return fail(p, v, "bad page_size %lld: %s", x, why);
			p->cfg->opts.page_size = (uint32_t)x;
		} else if (!strcmp(ks, "transaction_timeout")) {
			if ((rc = get_int(p, v, ks, 1, ULNET_TXN_TIMEOUT_MAX, &x)))
				return rc;
			p->cfg->opts.transaction_timeout = (uint32_t)x;
		} else if (!strcmp(ks, "max_peers")) {
			if ((rc = get_int(p, v, ks, 1, UINT32_MAX, &x)))
				return rc;
			p->cfg->opts.max_peers = (uint32_t)x;
		} else if (!strcmp(ks, "busy_poll_us")) {
			if ((rc = get_int(p, v, ks, 0, ULNET_BUSY_POLL_US_MAX, &x)))
				return rc;
			p->cfg->opts.busy_poll_us = (uint32_t)x;
		} else if (!strcmp(ks, "large_max")) {
			if ((rc = get_int(p, v, ks, ULNET_MTU, ULNET_LARGE_MAX_MAX, &x)))
				return rc;
			p->cfg->opts.large_max = (uint32_t)x;
		} else if (!strcmp(ks, "loops")) {
			if ((rc = get_int(p, v, ks, 1, ULNET_LOOPS_MAX, &x)))
				return rc;
			p->cfg->opts.loops = (uint32_t)x;
		} else if (!strcmp(ks, "control")) {
			const char *s;

			if ((rc = get_str(p, v, ks, &s)))
				return rc;
			if (strlen(s) > ULNET_CONFIG_CONTROL_MAX)
				return fail(p, v, "control socket path too long (%zu > %d bytes)", strlen(s),
					    ULNET_CONFIG_CONTROL_MAX);
			free(p->cfg->control);
			if (!(p->cfg->control = strdup(s)))
				return oom(p);
		} else {
			return fail(p, k, "unknown key '%s' in node", ks);
		}
	}
	return 0;
}

/* ---- metrics: ---- */

int ulnet_config_listen_parse(const char *s, char *host, size_t hostlen, uint16_t *port, const char **why)
{
	const char *colon, *h = s;
	size_t hl;
	char *end;
	unsigned long v;
	unsigned char bin[16];
	char tmp[64];

	if (!s || !host || !port || !why)
		return -EINVAL;
	if (*s == '[') { /* [IPv6]:PORT */
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':') {
			*why = "expected [IPV6]:PORT";
			return -EINVAL;
		}
		h = s + 1;
		hl = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || strchr(s, ':') != colon) {
			*why = "expected ADDRESS:PORT (an IPv6 address in brackets)";
			return -EINVAL;
		}
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= sizeof(tmp) || hl >= hostlen) {
		*why = "missing or overlong address";
		return -EINVAL;
	}
	memcpy(tmp, h, hl);
	tmp[hl] = '\0';
	if (inet_pton(*s == '[' ? AF_INET6 : AF_INET, tmp, bin) != 1) {
		*why = *s == '[' ? "not an IPv6 address" : "not an IPv4 address (no host names)";
		return -EINVAL;
	}
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || v == 0 || v > 65535 || colon[1] == '-' || colon[1] == '+') {
		*why = "port must be 1..65535";
		return -EINVAL;
	}
	memcpy(host, tmp, hl + 1);
	*port = (uint16_t)v;
	return 0;
}

static int parse_metrics(struct cfgp *p, const yaml_node_t *n)
{
	yaml_node_t *k, *v;
	const char *ks;
	bool empty;
	int rc;

	if ((rc = want_map(p, n, "metrics", &empty)) || empty)
		return rc;
	FOREACH_PAIR(p, n, k, ks, v) {
		if (!strcmp(ks, "listen")) {
			const char *s, *why = NULL;
			char host[64];
			uint16_t port;

			if ((rc = get_str(p, v, ks, &s)))
				return rc;
			if (ulnet_config_listen_parse(s, host, sizeof(host), &port, &why))
				return fail(p, v, "bad metrics listen '%s': %s", s, why);
			free(p->cfg->metrics_listen);
			if (!(p->cfg->metrics_listen = strdup(s)))
				return oom(p);
		} else {
			return fail(p, k, "unknown key '%s' in metrics", ks);
		}
	}
	return 0;
}

/* ---- selftest: ---- */

static int parse_selftest(struct cfgp *p, const yaml_node_t *n)
{
	yaml_node_t *k, *v;
	const char *ks;
	bool empty;
	int rc;

	if ((rc = want_map(p, n, "selftest", &empty)) || empty)
		return rc;
	FOREACH_PAIR(p, n, k, ks, v) {
		long long x;

		if (!strcmp(ks, "server_rpc_timeout_ms")) {
			if ((rc = get_int(p, v, ks, ULNET_SELFTEST_SERVER_TIMEOUT_MIN_MS, ULNET_SELFTEST_SERVER_TIMEOUT_MAX_MS, &x)))
				return rc;
			p->cfg->selftest.server_rpc_timeout_ms = (uint32_t)x;
		} else if (!strcmp(ks, "kernel_stats")) {
			if ((rc = get_bool(p, v, ks, &p->cfg->selftest.kernel_stats)))
				return rc;
		} else {
			return fail(p, k, "unknown key '%s' in selftest", ks);
		}
	}
	return 0;
}

/* ---- global: ---- */

/* Remember that the file gives routing field @bit (the first one's line is the one messages name). */
static void routing_given(struct cfgp *p, unsigned bit, const yaml_node_t *k)
{
	if (!p->cfg->routing_set)
		p->cfg->routing_line = node_line(k);
	p->cfg->routing_set |= bit;
}

static const char *const global_keys[] = {
	"numa_range", "max_intf", "discovery", "drop_asym_route", "retry_count", "transaction_timeout",
	"health_sensitivity", "recovery_interval", "router_sensitivity", "lnd_timeout",
	"response_tracking", "recovery_limit", "max_recovery_ping_interval",
};

static int parse_global(struct cfgp *p, const yaml_node_t *n)
{
	yaml_node_t *k, *v;
	const char *ks;
	bool empty;
	int rc;

	if ((rc = want_map(p, n, "global", &empty)) || empty)
		return rc;
	FOREACH_PAIR(p, n, k, ks, v) {
		const char *known = NULL;
		struct ulnet_config_global *g;
		long long x;

		for (size_t i = 0; i < sizeof(global_keys) / sizeof(global_keys[0]); i++)
			if (!strcmp(ks, global_keys[i]))
				known = global_keys[i];
		if (!known)
			return fail(p, k, "unknown key '%s' in global", ks);
		if (!strcmp(known, "router_sensitivity")) { /* the router checker's (a percentage) */
			if ((rc = get_int(p, v, ks, 0, 100, &x)))
				return rc;
			p->cfg->routing.sensitivity = (uint32_t)x;
			routing_given(p, ULNET_CONFIG_RT_SENSITIVITY, k);
		} else if ((rc = get_int(p, v, ks, INT32_MIN, INT32_MAX, &x))) {
			return rc;
		}
		g = realloc(p->cfg->globals, (p->cfg->n_globals + 1) * sizeof(*g));
		if (!g)
			return oom(p);
		p->cfg->globals = g;
		g[p->cfg->n_globals++] = (struct ulnet_config_global){ .key = known, .value = x, .line = node_line(k) };
	}
	return 0;
}

/* ---- net: ---- */

static int kv_add(struct cfgp *p, struct ulnet_kv **arr, size_t *n, const char *key, const char *value)
{
	struct ulnet_kv *a = realloc(*arr, (*n + 1) * sizeof(**arr));
	char *k, *v;

	if (!a)
		return oom(p);
	*arr = a;
	k = strdup(key);
	v = strdup(value);
	if (!k || !v) {
		free(k);
		free(v);
		return oom(p);
	}
	a[(*n)++] = (struct ulnet_kv){ .key = k, .value = v };
	return 0;
}

/* One key of a tunables mapping, checked against its table entry (the same table the core parses
 * with): an integer key takes a plain integer, a bool or enum key a word. */
static int tunable_check(struct cfgp *p, const struct ulnet_tunable *t, const yaml_node_t *v, const char *section,
			 bool lo)
{
	char why[200];
	long x;

	if (t->type == ULNET_TUNABLE_INT) {
		long long ll;

		/* lo has no credits or timeouts: lnetctl (and our export) print 0 for them */
		return get_int(p, v, t->key, lo ? 0 : t->min, lo ? INT32_MAX : t->max, &ll);
	}
	if (!scalar(v) || is_null(v))
		return fail(p, v, "expected a value for '%s' in %s", t->key, section);
	if (ulnet_tunable_parse(t, scalar(v), &x, why, sizeof(why)))
		return fail(p, v, "%s '%s': %s", t->key, scalar(v), why);
	return 0;
}

/* A tunables mapping whose keys are those of @table. !@have_table: the LND is not built into this
 * ulnet (ulnet_ni_add says so), keep the strings as they are. @lo: the lo net's entry. */
/* One `key: value` of a tunables section, checked against @table when there is one. */
static int kv_pair(struct cfgp *p, const yaml_node_t *k, const char *ks, const yaml_node_t *v, const char *section,
		   const struct ulnet_tunable *table, size_t nt, bool have_table, bool lo, struct ulnet_kv **arr,
		   size_t *cnt)
{
	const struct ulnet_tunable *t = ulnet_tunable_find(table, nt, ks);
	const char *s;
	int rc;

	if (!*ks)
		return fail(p, k, "empty key in %s", section);
	if (have_table && !t) {
		char known[768];

		ulnet_tunable_keys(table, nt, known, sizeof(known));
		return fail(p, k, "unknown key '%s' in %s (known: %s)", ks, section, known);
	}
	if (t && (rc = tunable_check(p, t, v, section, lo)))
		return rc;
	if ((rc = get_str(p, v, ks, &s)))
		return rc;
	return kv_add(p, arr, cnt, ks, s);
}

/* A map of scalars; with @nested, a key that is no tunable itself and whose value is a map (o2ib's
 * `device: {max_send_sge: 1}`) is flattened to `device.max_send_sge`, the form LND tables use. */
static int parse_kv_table(struct cfgp *p, const yaml_node_t *n, const char *section,
			  const struct ulnet_tunable *table, size_t nt, bool have_table, bool lo, bool nested,
			  struct ulnet_kv **out, size_t *nout)
{
	struct ulnet_kv *arr = NULL;
	yaml_node_t *k, *v, *k2, *v2;
	const char *ks, *ks2;
	size_t cnt = 0;
	bool empty;
	int rc = 0;

	*out = NULL;
	*nout = 0;
	if ((rc = want_map(p, n, section, &empty)) || empty)
		return rc;
	FOREACH_PAIR(p, n, k, ks, v) {
		if (nested && v->type == YAML_MAPPING_NODE && *ks && !ulnet_tunable_find(table, nt, ks)) {
			FOREACH_PAIR(p, v, k2, ks2, v2) {
				char flat[128];

				if ((size_t)snprintf(flat, sizeof(flat), "%s.%s", ks, ks2) >= sizeof(flat)) {
					rc = fail(p, k2, "key '%s.%s' in %s is too long", ks, ks2, section);
					break;
				}
				if ((rc = kv_pair(p, k2, flat, v2, section, table, nt, have_table, lo, &arr, &cnt)))
					break;
			}
		} else {
			rc = kv_pair(p, k, ks, v, section, table, nt, have_table, lo, &arr, &cnt);
		}
		if (rc)
			break;
	}
	*out = arr;
	*nout = cnt;
	return rc;
}

static int parse_tunables(struct cfgp *p, const yaml_node_t *n, uint32_t net, struct ulnet_ni_conf *c)
{
	const struct ulnet_tunable *table;
	size_t nt;
	struct ulnet_kv *arr;
	int rc;

	ulnet_ni_tunables(&table, &nt);
	rc = parse_kv_table(p, n, "tunables", table, nt, true, (net >> 16) == ULNET_LND_LO, false, &arr, &c->n_tunables);
	c->tunables = arr;
	return rc;
}

static int parse_lnd_tunables(struct cfgp *p, const yaml_node_t *n, uint32_t net, struct ulnet_ni_conf *c)
{
	const struct ulnet_tunable *table = NULL;
	const char *lnd = ulnet_lnd_type_name(net >> 16);
	size_t nt = 0;
	bool built = lnd && ulnet_lnd_tunables(lnd, &table, &nt) == 0;
	struct ulnet_kv *arr;
	int rc;

	rc = parse_kv_table(p, n, "lnd tunables", table, nt, built, false, true, &arr, &c->n_lnd_tunables);
	c->lnd_tunables = arr;
	return rc;
}

/* `interfaces: {0: eth0, 1: eth1}` as lnetctl prints it, or a plain list `[eth0, eth1]`. */
static int parse_interfaces(struct cfgp *p, const yaml_node_t *n, struct ulnet_ni_conf *c)
{
	const yaml_node_t *names[CFG_MAX_INTERFACES];
	size_t cnt = 0;
	char **arr;
	int rc;

	if (n->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
			if (cnt == CFG_MAX_INTERFACES)
				return fail(p, n, "more than %d interfaces", CFG_MAX_INTERFACES);
			names[cnt++] = get_node(p, *it);
		}
	} else {
		yaml_node_t *k, *v;
		const char *ks;
		bool empty;

		if ((rc = want_map(p, n, "interfaces", &empty)))
			return rc;
		if (empty)
			return fail(p, n, "empty value for 'interfaces'");
		FOREACH_PAIR(p, n, k, ks, v) {
			long long idx;

			if ((rc = get_int(p, k, "interfaces index", 0, CFG_MAX_INTERFACES - 1, &idx)))
				return rc;
			if (cnt == CFG_MAX_INTERFACES)
				return fail(p, n, "more than %d interfaces", CFG_MAX_INTERFACES);
			names[cnt++] = v;
		}
	}
	if (!cnt)
		return fail(p, n, "empty value for 'interfaces'");
	for (size_t i = 0; i < cnt; i++) {
		const char *s;

		if ((rc = get_str(p, names[i], "interfaces", &s)))
			return rc;
	}
	if (!(arr = calloc(cnt + 1, sizeof(*arr))))
		return oom(p);
	c->interfaces = (const char *const *)arr;
	for (size_t i = 0; i < cnt; i++)
		if (!(arr[i] = strdup(scalar(names[i]))))
			return oom(p);
	return 0;
}

static void ni_conf_free(struct ulnet_ni_conf *c)
{
	xfree(c->net);
	xfree(c->nid);
	if (c->interfaces)
		for (const char *const *i = c->interfaces; *i; i++)
			xfree(*i);
	xfree(c->interfaces);
	for (size_t i = 0; i < c->n_tunables; i++) {
		xfree(c->tunables[i].key);
		xfree(c->tunables[i].value);
	}
	xfree(c->tunables);
	for (size_t i = 0; i < c->n_lnd_tunables; i++) {
		xfree(c->lnd_tunables[i].key);
		xfree(c->lnd_tunables[i].value);
	}
	xfree(c->lnd_tunables);
	memset(c, 0, sizeof(*c));
}

/* Parse one `local NI(s)` entry of net @net_name (number @net) into @c (partly filled on error). */
static int parse_ni(struct cfgp *p, const yaml_node_t *n, const char *net_name, uint32_t net,
		    struct ulnet_ni_conf *c)
{
	yaml_node_t *k, *v;
	const char *ks;
	bool empty;
	int rc;

	if ((rc = want_map(p, n, "local NI(s)", &empty)))
		return rc;
	if (empty)
		return fail(p, n, "NI of net '%s' needs 'nid' or 'interfaces'", net_name);
	if (!(c->net = strdup(net_name)))
		return oom(p);
	FOREACH_PAIR(p, n, k, ks, v) {
		if (!strcmp(ks, "nid")) {
			struct ulnet_nid nid;
			const char *s;
			char why[200];

			if ((rc = get_str(p, v, ks, &s)))
				return rc;
			if (ulnet__ni_nid_parse(s, net, net_name, &nid, why, sizeof(why)))
				return fail(p, v, "%s", why);
			if (!(c->nid = strdup(s)))
				return oom(p);
		} else if (!strcmp(ks, "status")) {
			const char *s;

			if ((rc = get_str(p, v, ks, &s)))
				return rc;
			if (strcmp(s, "up") && strcmp(s, "down"))
				return fail(p, v, "bad status '%s': must be up or down", s);
		} else if (!strcmp(ks, "interfaces")) {
			if ((rc = parse_interfaces(p, v, c)))
				return rc;
		} else if (!strcmp(ks, "tunables")) {
			if ((rc = parse_tunables(p, v, net, c)))
				return rc;
		} else if (!strcmp(ks, "lnd tunables")) {
			if ((rc = parse_lnd_tunables(p, v, net, c)))
				return rc;
		} else if (!strcmp(ks, "CPT")) {
			if (!scalar(v))
				return fail(p, v, "expected a string for 'CPT', got %s", node_kind(v));
		} else if (!strcmp(ks, "dev cpt")) {
			long long x;

			if ((rc = get_int(p, v, ks, -1, INT32_MAX, &x)))
				return rc;
		} else {
			return fail(p, k, "unknown key '%s' in local NI(s)", ks);
		}
	}
	if (!c->nid && !c->interfaces)
		return fail(p, n, "NI of net '%s' needs 'nid' or 'interfaces'", net_name);
	return 0;
}

static int parse_net_entry(struct cfgp *p, const yaml_node_t *n)
{
	const yaml_node_t *type_node = NULL, *nis = NULL;
	const char *type = NULL, *why = NULL;
	yaml_node_t *k, *v;
	const char *ks;
	uint32_t net;
	bool empty, is_lo;
	int rc;

	if ((rc = want_map(p, n, "net", &empty)))
		return rc;
	if (empty)
		return fail(p, n, "missing 'net type' in net entry");
	FOREACH_PAIR(p, n, k, ks, v) {
		if (!strcmp(ks, "net type"))
			type_node = v;
		else if (!strcmp(ks, "local NI(s)"))
			nis = v;
		else
			return fail(p, k, "unknown key '%s' in net entry", ks);
	}
	if (!type_node)
		return fail(p, n, "missing 'net type' in net entry");
	if ((rc = get_str(p, type_node, "net type", &type)))
		return rc;
	if (ulnet_net_parse(type, &net, &why))
		return fail(p, type_node, "bad net type '%s': %s", type, why ? why : "invalid");
	is_lo = (net >> 16) == ULNET_LND_LO;
	if (!nis) {
		if (is_lo)
			return 0;
		return fail(p, n, "net '%s' has no 'local NI(s)'", type);
	}
	if ((rc = want_seq(p, nis, "local NI(s)", &empty)))
		return rc;
	if (empty) {
		if (is_lo)
			return 0;
		return fail(p, nis, "net '%s' has no 'local NI(s)'", type);
	}
	for (yaml_node_item_t *it = nis->data.sequence.items.start; it < nis->data.sequence.items.top; it++) {
		const yaml_node_t *ni = get_node(p, *it);
		struct ulnet_config_ni *e;

		if (is_lo) { /* lo always exists: check the entry, keep nothing */
			struct ulnet_ni_conf tmp = { 0 };

			rc = parse_ni(p, ni, type, net, &tmp);
			ni_conf_free(&tmp);
			if (rc)
				return rc;
			continue;
		}
		e = realloc(p->cfg->nis, (p->cfg->n_nis + 1) * sizeof(*e));
		if (!e)
			return oom(p);
		p->cfg->nis = e;
		e = &e[p->cfg->n_nis++];
		memset(e, 0, sizeof(*e));
		e->line = node_line(ni);
		if ((rc = parse_ni(p, ni, type, net, &e->conf)))
			return rc;
	}
	return 0;
}

static int parse_net(struct cfgp *p, const yaml_node_t *n)
{
	bool empty;
	int rc;

	if ((rc = want_seq(p, n, "net", &empty)) || empty)
		return rc;
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
		if ((rc = parse_net_entry(p, get_node(p, *it))))
			return rc;
	return 0;
}

/* ---- route:, routing:, buffers: ---- */

static int parse_route_entry(struct cfgp *p, const yaml_node_t *n)
{
	const yaml_node_t *net_node = NULL, *gw_node = NULL;
	struct ulnet_config_route *r;
	struct ulnet_route_conf c = { .hops = ULNET_ROUTE_HOPS_UNDEF, .health_sensitivity = 1 };
	const char *net_s, *gw_s, *why = NULL;
	struct ulnet_nid gw;
	uint32_t net;
	yaml_node_t *k, *v;
	const char *ks;
	bool empty;
	int rc;

	if ((rc = want_map(p, n, "route", &empty)))
		return rc;
	if (empty)
		return fail(p, n, "route entry needs 'net' and 'gateway'");
	FOREACH_PAIR(p, n, k, ks, v) {
		long long x;
		const char *s;

		if (!strcmp(ks, "net")) {
			net_node = v;
		} else if (!strcmp(ks, "gateway")) {
			gw_node = v;
		} else if (!strcmp(ks, "hop")) {
			if ((rc = get_int(p, v, ks, -1, ULNET_ROUTE_HOPS_MAX, &x)))
				return rc;
			if (x == 0)
				return fail(p, v, "bad hop 0: must be -1 (unknown) or 1..%d", ULNET_ROUTE_HOPS_MAX);
			c.hops = (int)x;
		} else if (!strcmp(ks, "priority")) {
			if ((rc = get_int(p, v, ks, 0, UINT32_MAX, &x)))
				return rc;
			c.priority = (uint32_t)x;
		} else if (!strcmp(ks, "health_sensitivity")) {
			if ((rc = get_int(p, v, ks, 0, UINT32_MAX, &x)))
				return rc;
			c.health_sensitivity = (uint32_t)x;
		} else if (!strcmp(ks, "state")) { /* route show -v: the checker's, not configuration */
			if ((rc = get_str(p, v, ks, &s)))
				return rc;
			if (strcmp(s, "up") && strcmp(s, "down"))
				return fail(p, v, "bad state '%s': must be up or down", s);
		} else if (!strcmp(ks, "type")) {
			if ((rc = get_str(p, v, ks, &s)))
				return rc;
			if (strcmp(s, "single-hop") && strcmp(s, "multi-hop"))
				return fail(p, v, "bad type '%s': must be single-hop or multi-hop", s);
		} else {
			return fail(p, k, "unknown key '%s' in route", ks);
		}
	}
	if (!net_node || !gw_node)
		return fail(p, n, "route entry needs '%s'", net_node ? "gateway" : "net");
	if ((rc = get_str(p, net_node, "net", &net_s)))
		return rc;
	if (ulnet_net_parse(net_s, &net, &why))
		return fail(p, net_node, "bad net '%s': %s", net_s, why ? why : "invalid");
	if ((rc = get_str(p, gw_node, "gateway", &gw_s)))
		return rc;
	if (ulnet_nid_parse(gw_s, &gw, &why) || ulnet_nid_is_any(&gw))
		return fail(p, gw_node, "bad gateway '%s': %s", gw_s, why ? why : "not a NID");
	for (size_t i = 0; i < p->cfg->n_routes; i++) {
		const struct ulnet_config_route *o = &p->cfg->routes[i];

		if (!strcmp(o->conf.net, net_s) && !strcmp(o->conf.gateway, gw_s))
			return fail(p, n, "duplicate route to %s via %s (line %u)", net_s, gw_s, o->line);
	}
	if (p->cfg->n_routes == ULNET_ROUTES_MAX)
		return fail(p, n, "more than %d routes", ULNET_ROUTES_MAX);
	r = realloc(p->cfg->routes, (p->cfg->n_routes + 1) * sizeof(*r));
	if (!r)
		return oom(p);
	p->cfg->routes = r;
	r = &r[p->cfg->n_routes];
	c.net = strdup(net_s);
	c.gateway = strdup(gw_s);
	if (!c.net || !c.gateway) {
		xfree(c.net);
		xfree(c.gateway);
		return oom(p);
	}
	*r = (struct ulnet_config_route){ .conf = c, .line = node_line(n) };
	p->cfg->n_routes++;
	return 0;
}

/* ---- fault: ---- */

/* A NID of a fault rule: "*" or a NID. */
static int get_fault_nid(struct cfgp *p, const yaml_node_t *v, const char *key, struct ulnet_nid *out)
{
	const char *s, *why = NULL;
	int rc;

	if ((rc = get_str(p, v, key, &s)))
		return rc;
	if (ulnet_nid_parse(s, out, &why))
		return fail(p, v, "bad %s '%s': %s", key, s, why ? why : "not a NID");
	return 0;
}

/* One `fault:` entry, the keys `fault show` prints (its counters checked and ignored). */
static int parse_fault_entry(struct cfgp *p, const yaml_node_t *n)
{
	struct ulnet_config_fault *f;
	struct ulnet_fault_rule r;
	const yaml_node_t *kind_node = NULL;
	const char *s, *why = NULL;
	yaml_node_t *k, *v;
	const char *ks;
	bool empty;
	int rc;

	if ((rc = want_map(p, n, "fault", &empty)))
		return rc;
	if (empty)
		return fail(p, n, "fault entry needs 'kind' and 'rate' or 'interval'");
	FOREACH_PAIR(p, n, k, ks, v) {
		if (!strcmp(ks, "kind"))
			kind_node = v;
	}
	if (!kind_node)
		return fail(p, n, "fault entry needs 'kind' (drop, delay, corrupt, duplicate, reorder, hello, reject, stall)");
	if ((rc = get_str(p, kind_node, "kind", &s)))
		return rc;
	if (ulnet_fault_kind_parse(s, &r.kind))
		return fail(p, kind_node, "bad kind '%s': drop, delay, corrupt, duplicate, reorder, hello, reject or stall", s);
	ulnet_fault_rule_init(&r, r.kind);
	FOREACH_PAIR(p, n, k, ks, v) {
		long long x;

		if (!strcmp(ks, "kind")) {
			continue;
		} else if (!strcmp(ks, "src") || !strcmp(ks, "dst") || !strcmp(ks, "local_nid")) {
			if ((rc = get_fault_nid(p, v, ks, ks[0] == 's' ? &r.src : ks[0] == 'd' ? &r.dst : &r.local)))
				return rc;
		} else if (!strcmp(ks, "portal")) {
			if (v->type == YAML_SCALAR_NODE && !strcmp((const char *)v->data.scalar.value, "*")) {
				r.portal = ULNET_FAULT_PORTAL_ANY;
				continue;
			}
			if ((rc = get_int(p, v, ks, 0, 63, &x)))
				return rc;
			r.portal = (uint32_t)x;
		} else if (!strcmp(ks, "message")) {
			if ((rc = get_str(p, v, ks, &s)))
				return rc;
			r.msg_mask = 0;
			if (strcmp(s, "*") && ulnet_fault_types_parse(s, &r.msg_mask, &why))
				return fail(p, v, "bad message '%s': %s", s, why);
		} else if (!strcmp(ks, "rate") || !strcmp(ks, "interval") || !strcmp(ks, "latency") ||
			   !strcmp(ks, "hold") || !strcmp(ks, "version")) {
			if ((rc = get_int(p, v, ks, 0, UINT32_MAX, &x)))
				return rc;
			*(ks[0] == 'r' ? &r.rate : ks[0] == 'i' ? &r.interval_s : ks[0] == 'l' ? &r.latency_ms
			  : ks[0] == 'h' ? &r.hold_ms : &r.version) = (uint32_t)x;
		} else if (!strcmp(ks, "reason")) {
			if ((rc = get_str(p, v, ks, &s)))
				return rc;
			if (ulnet_fault_reject_parse(s, &r.reason))
				return fail(p, v, "bad reason '%s': an o2iblnd reject reason 1..9 (CONN_RACE, NO_RESOURCES, "
					    "FATAL, CONN_UNCOMPAT, CONN_STALE, RDMA_FRAGS, MSG_QUEUE_SIZE, INVALID_SRV_ID, EARLY)", s);
		} else if (!strcmp(ks, "seed")) {
			if ((rc = get_int(p, v, ks, 0, LLONG_MAX, &x)))
				return rc;
			r.seed = (uint64_t)x;
		} else if (!strcmp(ks, "health_error")) {
			if ((rc = get_str(p, v, ks, &s)))
				return rc;
			if (ulnet_fault_health_parse(s, &r.health))
				return fail(p, v, "bad health_error '%s' (local_interrupt, local_dropped, local_aborted, "
					    "local_no_route, local_error, local_timeout, remote_error, remote_dropped, "
					    "remote_timeout, network_timeout)", s);
		} else if (!strcmp(ks, "matched") || !strcmp(ks, "dropped") || !strcmp(ks, "delayed") ||
			   !strcmp(ks, "corrupted") || !strcmp(ks, "duplicated") || !strcmp(ks, "reordered") ||
			   !strcmp(ks, "spoiled") || !strcmp(ks, "rejected") || !strcmp(ks, "stalled")) {
			if ((rc = get_int(p, v, ks, 0, LLONG_MAX, &x))) /* fault show's counters */
				return rc;
		} else {
			return fail(p, k, "unknown key '%s' in fault", ks);
		}
	}
	if (ulnet_fault_rule_check(&r, &why))
		return fail(p, n, "fault %s: %s", ulnet_fault_kind_name(r.kind), why);
	f = realloc(p->cfg->faults, (p->cfg->n_faults + 1) * sizeof(*f));
	if (!f)
		return oom(p);
	p->cfg->faults = f;
	f[p->cfg->n_faults++] = (struct ulnet_config_fault){ .rule = r, .line = node_line(n) };
	return 0;
}

static int parse_fault(struct cfgp *p, const yaml_node_t *n)
{
	bool empty;
	int rc;

	if ((rc = want_seq(p, n, "fault", &empty)) || empty)
		return rc;
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
		if ((rc = parse_fault_entry(p, get_node(p, *it))))
			return rc;
	return 0;
}

/* `- nid: NID` of a peer's `peer ni:` list: exactly one, the primary NID (no Multi-Rail). */
static int peer_ni_list(struct cfgp *p, const yaml_node_t *n, const struct ulnet_nid *primary, bool *seen)
{
	bool empty;
	int rc;

	if ((rc = want_seq(p, n, "peer ni", &empty)) || empty)
		return rc;
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		const yaml_node_t *e = get_node(p, *it), *k, *v;
		const char *ks;

		if ((rc = want_map(p, e, "peer ni entry", &empty)))
			return rc;
		FOREACH_PAIR(p, e, k, ks, v) {
			const char *s, *why = NULL;
			struct ulnet_nid nid;

			if (!strcmp(ks, "state")) /* peer show's, not configuration */
				continue;
			if (strcmp(ks, "nid"))
				return fail(p, k, "unknown key '%s' in peer ni (known: nid)", ks);
			if ((rc = get_str(p, v, ks, &s)))
				return rc;
			if (ulnet_nid_parse(s, &nid, &why))
				return fail(p, v, "bad nid '%s': %s", s, why ? why : "invalid");
			if (*seen || !ulnet_nid_equal(&nid, primary))
				return fail(p, v, "peer ni %s: ulnet has no Multi-Rail, a peer's one NID is its primary nid", s);
			*seen = true;
		}
	}
	return 0;
}

static int parse_peer_entry(struct cfgp *p, const yaml_node_t *n)
{
	const yaml_node_t *k, *v, *nis = NULL, *prim = NULL;
	struct ulnet_config_peer *np;
	struct ulnet_nid nid;
	const char *ks, *s, *why = NULL;
	bool empty, mr = false, seen = false;
	int rc;

	if ((rc = want_map(p, n, "peer", &empty)))
		return rc;
	if (empty)
		return fail(p, n, "peer entry needs 'primary nid'");
	FOREACH_PAIR(p, n, k, ks, v) {
		if (!strcmp(ks, "primary nid"))
			prim = v;
		else if (!strcmp(ks, "peer ni"))
			nis = v;
		else if (!strcmp(ks, "Multi-Rail")) {
			if ((rc = get_bool(p, v, ks, &mr)))
				return rc;
			if (mr)
				return fail(p, v, "Multi-Rail: True: ulnet has no Multi-Rail (a static peer is non-MR)");
		} else
			return fail(p, k, "unknown key '%s' in peer (known: primary nid, Multi-Rail, peer ni)", ks);
	}
	if (!prim)
		return fail(p, n, "peer entry needs 'primary nid'");
	if ((rc = get_str(p, prim, "primary nid", &s)))
		return rc;
	if (ulnet_nid_parse(s, &nid, &why) || ulnet_nid_is_any(&nid))
		return fail(p, prim, "bad primary nid '%s': %s", s, why ? why : "not a NID");
	if (nis && (rc = peer_ni_list(p, nis, &nid, &seen)))
		return rc;
	for (size_t i = 0; i < p->cfg->n_peers; i++)
		if (ulnet_nid_equal(&p->cfg->peers[i].nid, &nid))
			return fail(p, n, "duplicate peer %s (line %u)", s, p->cfg->peers[i].line);
	if (p->cfg->n_peers == ULNET_CONFIG_PEERS_MAX)
		return fail(p, n, "more than %d static peers", ULNET_CONFIG_PEERS_MAX);
	np = realloc(p->cfg->peers, (p->cfg->n_peers + 1) * sizeof(*np));
	if (!np)
		return oom(p);
	p->cfg->peers = np;
	np[p->cfg->n_peers++] = (struct ulnet_config_peer){ .nid = nid, .line = node_line(n) };
	return 0;
}

static int parse_peer(struct cfgp *p, const yaml_node_t *n)
{
	bool empty;
	int rc;

	if ((rc = want_seq(p, n, "peer", &empty)) || empty)
		return rc;
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
		if ((rc = parse_peer_entry(p, get_node(p, *it))))
			return rc;
	return 0;
}

static int parse_route(struct cfgp *p, const yaml_node_t *n)
{
	bool empty;
	int rc;

	if ((rc = want_seq(p, n, "route", &empty)) || empty)
		return rc;
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
		if ((rc = parse_route_entry(p, get_node(p, *it))))
			return rc;
	return 0;
}

/* One key of `routing:` (either layout). */
static int routing_key(struct cfgp *p, const yaml_node_t *k, const char *ks, const yaml_node_t *v)
{
	struct ulnet_routing_conf *r = &p->cfg->routing;
	long long x;
	int rc;

	if (!strcmp(ks, "enable")) {
		if ((rc = get_bool(p, v, ks, &r->enable)))
			return rc;
		routing_given(p, ULNET_CONFIG_RT_ENABLE, k);
	} else if (!strcmp(ks, "alive_router_check_interval")) {
		if ((rc = get_int(p, v, ks, 0, ULNET_RTR_SECONDS_MAX, &x)))
			return rc;
		r->check_interval = (uint32_t)x;
		routing_given(p, ULNET_CONFIG_RT_CHECK_INTERVAL, k);
	} else if (!strcmp(ks, "router_ping_timeout")) {
		if ((rc = get_int(p, v, ks, 1, ULNET_RTR_SECONDS_MAX, &x)))
			return rc;
		r->ping_timeout = (uint32_t)x;
		routing_given(p, ULNET_CONFIG_RT_PING_TIMEOUT, k);
	} else {
		return fail(p, k, "unknown key '%s' in routing", ks);
	}
	return 0;
}

/* `- cpt[N]: {tiny: {npages, nbuffers, credits, mincredits}, small: ..., large: ...}` as `lnetctl
 * routing show` prints it: what the pools hold now, not settings (those are `buffers:`). */
static int routing_cpt(struct cfgp *p, const yaml_node_t *n)
{
	static const char *const pools[] = { "tiny", "small", "large" };
	static const char *const keys[] = { "npages", "nbuffers", "credits", "mincredits" };
	yaml_node_t *k, *v, *k2, *v2;
	const char *ks, *ks2;
	bool empty, known;
	int rc;

	if ((rc = want_map(p, n, "cpt", &empty)) || empty)
		return rc;
	FOREACH_PAIR(p, n, k, ks, v) {
		known = false;
		for (size_t i = 0; i < 3; i++)
			known |= !strcmp(ks, pools[i]);
		if (!known)
			return fail(p, k, "unknown key '%s' in cpt (known: tiny, small, large)", ks);
		if ((rc = want_map(p, v, ks, &empty)) || empty)
			return rc;
		FOREACH_PAIR(p, v, k2, ks2, v2) {
			long long x;

			known = false;
			for (size_t i = 0; i < 4; i++)
				known |= !strcmp(ks2, keys[i]);
			if (!known)
				return fail(p, k2, "unknown key '%s' in %s", ks2, ks);
			if ((rc = get_int(p, v2, ks2, INT32_MIN, INT32_MAX, &x)))
				return rc;
		}
	}
	return 0;
}

static bool is_cpt_key(const char *s)
{
	size_t n = strspn(s + 4, "0123456789");

	return !strncmp(s, "cpt[", 4) && n && !strcmp(s + 4 + n, "]");
}

static int parse_routing(struct cfgp *p, const yaml_node_t *n)
{
	yaml_node_t *k, *v;
	const char *ks;
	bool empty;
	int rc;

	if (n->type != YAML_SEQUENCE_NODE) {
		if ((rc = want_map(p, n, "routing", &empty)) || empty)
			return rc;
		FOREACH_PAIR(p, n, k, ks, v)
			if ((rc = routing_key(p, k, ks, v)))
				return rc;
		return 0;
	}
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		const yaml_node_t *item = get_node(p, *it);

		if ((rc = want_map(p, item, "routing", &empty)) || empty)
			return rc;
		FOREACH_PAIR(p, item, k, ks, v) {
			rc = is_cpt_key(ks) ? routing_cpt(p, v) : routing_key(p, k, ks, v);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int parse_buffers(struct cfgp *p, const yaml_node_t *n)
{
	struct ulnet_routing_conf *r = &p->cfg->routing;
	yaml_node_t *k, *v;
	const char *ks;
	bool empty;
	int rc;

	if ((rc = want_map(p, n, "buffers", &empty)) || empty)
		return rc;
	FOREACH_PAIR(p, n, k, ks, v) {
		uint32_t *count = !strcmp(ks, "tiny") ? &r->tiny : !strcmp(ks, "small") ? &r->small
							  : !strcmp(ks, "large") ? &r->large : NULL;
		long long x;

		if (count) {
			if ((rc = get_int(p, v, ks, 1, ULNET_RTR_BUFFERS_MAX, &x)))
				return rc;
			*count = (uint32_t)x;
			routing_given(p, count == &r->tiny ? ULNET_CONFIG_RT_TINY
					 : count == &r->small ? ULNET_CONFIG_RT_SMALL : ULNET_CONFIG_RT_LARGE, k);
		} else if (!strcmp(ks, "memory_max")) {
			/* at least one large buffer: a forwarded message of LNET_MTU must fit */
			if ((rc = get_int(p, v, ks, ULNET_MTU, LLONG_MAX, &x)))
				return rc;
			r->memory_max = (uint64_t)x;
			routing_given(p, ULNET_CONFIG_RT_MEMORY_MAX, k);
		} else {
			return fail(p, k, "unknown key '%s' in buffers (known: tiny, small, large, memory_max)", ks);
		}
	}
	return 0;
}

static int parse_root(struct cfgp *p, const yaml_node_t *root)
{
	yaml_node_t *k, *v;
	const char *ks;
	bool empty;
	int rc;

	if (!root)
		return 0; /* empty file: defaults, lo only */
	if (root->type != YAML_MAPPING_NODE && !is_null(root))
		return fail(p, root, "expected a mapping at top level, got %s", node_kind(root));
	if ((rc = want_map(p, root, "top level", &empty)) || empty)
		return rc;
	FOREACH_PAIR(p, root, k, ks, v) {
		if (!strcmp(ks, "node"))
			rc = parse_node(p, v);
		else if (!strcmp(ks, "net"))
			rc = parse_net(p, v);
		else if (!strcmp(ks, "global"))
			rc = parse_global(p, v);
		else if (!strcmp(ks, "selftest"))
			rc = parse_selftest(p, v);
		else if (!strcmp(ks, "metrics"))
			rc = parse_metrics(p, v);
		else if (!strcmp(ks, "route"))
			rc = parse_route(p, v);
		else if (!strcmp(ks, "routing"))
			rc = parse_routing(p, v);
		else if (!strcmp(ks, "buffers"))
			rc = parse_buffers(p, v);
		else if (!strcmp(ks, "fault"))
			rc = parse_fault(p, v);
		else if (!strcmp(ks, "peer"))
			rc = parse_peer(p, v);
		else
			rc = fail(p, k, "unknown key '%s' at top level", ks);
		if (rc)
			return rc;
	}
	return 0;
}

static int yaml_fail(struct cfgp *p, const yaml_parser_t *parser)
{
	if (parser->error == YAML_MEMORY_ERROR)
		return oom(p);
	if (p->errlen) {
		const yaml_mark_t *m = parser->problem ? &parser->problem_mark : &parser->context_mark;
		char ctx[160] = "";

		/* libyaml finds an unclosed construct where the file ends; say where it began */
		if (parser->context && parser->context_mark.line != m->line)
			snprintf(ctx, sizeof(ctx), " (%s started at line %zu)", parser->context,
				 parser->context_mark.line + 1);
		else if (parser->context)
			snprintf(ctx, sizeof(ctx), " (%s)", parser->context);
		snprintf(p->err, p->errlen, "%s:%zu: YAML syntax error: %s%s", p->file, m->line + 1,
			 parser->problem ? parser->problem : "unknown problem", ctx);
	}
	return -EINVAL;
}

int ulnet_config_parse(const char *file, const char *text, size_t len, struct ulnet_config **out,
			char *err, size_t errlen)
{
	struct cfgp p = { .file = file, .err = err, .errlen = errlen };
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	int rc;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (!(p.cfg = calloc(1, sizeof(*p.cfg))) || !(p.cfg->file = strdup(file))) {
		free(p.cfg);
		return oom(&p);
	}
	if (!yaml_parser_initialize(&parser)) {
		ulnet_config_free(p.cfg);
		return oom(&p);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = yaml_fail(&p, &parser);
		yaml_parser_delete(&parser);
		ulnet_config_free(p.cfg);
		return rc;
	}
	p.doc = &doc;
	rc = parse_root(&p, yaml_document_get_root_node(&doc));
	if (!rc) {
		/* A second document would be silently ignored; refuse it. */
		if (!yaml_parser_load(&parser, &extra)) {
			rc = yaml_fail(&p, &parser);
		} else {
			yaml_node_t *r = yaml_document_get_root_node(&extra);

			if (r)
				rc = fail(&p, r, "more than one YAML document");
			yaml_document_delete(&extra);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (rc) {
		ulnet_config_free(p.cfg);
		return rc;
	}
	*out = p.cfg;
	return 0;
}

int ulnet_config_load(const char *path, struct ulnet_config **out, char *err, size_t errlen)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd, rc;

	*out = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(-rc));
		return rc;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > CFG_MAX_FILE) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file of at most %u bytes", path, CFG_MAX_FILE);
		return -EINVAL;
	}
	if (!(buf = malloc((size_t)st.st_size + 1))) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO;
			close(fd);
			free(buf);
			snprintf(err, errlen, "%s: cannot read: %s", path, strerror(-rc));
			return rc;
		}
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	rc = ulnet_config_parse(path, buf, got, out, err, errlen);
	free(buf);
	return rc;
}

void ulnet_config_free(struct ulnet_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_nis; i++)
		ni_conf_free(&cfg->nis[i].conf);
	free(cfg->nis);
	free(cfg->globals);
	for (size_t i = 0; i < cfg->n_routes; i++) {
		xfree(cfg->routes[i].conf.net);
		xfree(cfg->routes[i].conf.gateway);
	}
	free(cfg->routes);
	free(cfg->faults);
	free(cfg->peers);
	free(cfg->control);
	free(cfg->metrics_listen);
	free(cfg->file);
	free(cfg);
}

/* The routing settings the file gives over the node's own; set only when they change something, so
 * a file that repeats the defaults (an export) asks nothing of the routing core. */
int ulnet__config_routing_apply(const struct ulnet_config *cfg, ulnet_node *node, char *err, size_t errlen)
{
	const struct ulnet_routing_conf *f = &cfg->routing;
	struct ulnet_routing_conf c, was;
	unsigned set = cfg->routing_set;
	int rc;

	ulnet_routing_get(node, &c);
	was = c;
	if (set & ULNET_CONFIG_RT_ENABLE)
		c.enable = f->enable;
	if (set & ULNET_CONFIG_RT_TINY)
		c.tiny = f->tiny;
	if (set & ULNET_CONFIG_RT_SMALL)
		c.small = f->small;
	if (set & ULNET_CONFIG_RT_LARGE)
		c.large = f->large;
	if (set & ULNET_CONFIG_RT_MEMORY_MAX)
		c.memory_max = f->memory_max;
	if (set & ULNET_CONFIG_RT_CHECK_INTERVAL)
		c.check_interval = f->check_interval;
	if (set & ULNET_CONFIG_RT_PING_TIMEOUT)
		c.ping_timeout = f->ping_timeout;
	if (set & ULNET_CONFIG_RT_SENSITIVITY)
		c.sensitivity = f->sensitivity;
	if (c.enable == was.enable && c.tiny == was.tiny && c.small == was.small && c.large == was.large &&
	    c.memory_max == was.memory_max && c.check_interval == was.check_interval &&
	    c.ping_timeout == was.ping_timeout && c.sensitivity == was.sensitivity)
		return 0;
	if ((rc = ulnet_routing_set(node, &c)))
		snprintf(err, errlen, "%s:%u: cannot apply the routing settings: %s", cfg->file, cfg->routing_line,
			 ulnet_strerror(rc));
	return rc;
}

int ulnet_config_node_open(const struct ulnet_config *cfg, ulnet_node **out, char *err, size_t errlen)
{
	ulnet_node *node;
	int rc;

	*out = NULL;
	if ((rc = ulnet_node_open(&cfg->opts, &node))) {
		snprintf(err, errlen, "%s: cannot open the node: %s", cfg->file, ulnet_strerror(rc));
		return rc;
	}
	for (size_t i = 0; i < cfg->n_nis; i++) {
		const struct ulnet_config_ni *ni = &cfg->nis[i];

		if ((rc = ulnet_ni_add(node, &ni->conf))) {
			snprintf(err, errlen, "%s:%u: cannot add NI %s: %s", cfg->file, ni->line,
				 ni->conf.nid ? ni->conf.nid : ni->conf.net, ulnet_strerror(rc));
			ulnet_node_close(node);
			return rc;
		}
	}
	if ((rc = ulnet__config_routing_apply(cfg, node, err, errlen))) {
		ulnet_node_close(node);
		return rc;
	}
	for (size_t i = 0; i < cfg->n_peers; i++) { /* after the NIs: a peer is on one of them */
		if ((rc = ulnet_peer_add(node, &cfg->peers[i].nid))) {
			char nid[ULNET_NID_STRLEN];

			snprintf(err, errlen, "%s:%u: cannot add peer %s: %s", cfg->file, cfg->peers[i].line,
				 ulnet_nid_format(&cfg->peers[i].nid, nid, sizeof(nid)), ulnet_strerror(rc));
			ulnet_node_close(node);
			return rc;
		}
	}
	/* after the NIs: a gateway must be on one of them */
	for (size_t i = 0; i < cfg->n_routes; i++) {
		const struct ulnet_config_route *r = &cfg->routes[i];

		if ((rc = ulnet_route_add(node, &r->conf))) {
			snprintf(err, errlen, "%s:%u: cannot add route %s via %s: %s", cfg->file, r->line,
				 r->conf.net, r->conf.gateway, ulnet_strerror(rc));
			ulnet_node_close(node);
			return rc;
		}
	}
	for (size_t i = 0; i < cfg->n_faults; i++) {
		if ((rc = ulnet_fault_add(node, &cfg->faults[i].rule))) {
			snprintf(err, errlen, "%s:%u: cannot add fault %s rule: %s", cfg->file, cfg->faults[i].line,
				 ulnet_fault_kind_name(cfg->faults[i].rule.kind), ulnet_strerror(rc));
			ulnet_node_close(node);
			return rc;
		}
	}
	*out = node;
	return 0;
}
