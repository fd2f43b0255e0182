/* SPDX-License-Identifier: MIT */
/* ulnetd configuration parser (tools/ulnetd/config.c): good files mapped field by field onto
 * ulnet_node_opts / ulnet_ni_conf, and one table row per malformed form with the exact line and a
 * message substring. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <ulnet/config_file.h>
#include "text_sink.h"

static struct ulnet_config *parse_ok(const char *yaml)
{
	struct ulnet_config *cfg = NULL;
	char err[512];
	int rc = ulnet_config_parse("node.yaml", yaml, strlen(yaml), &cfg, err, sizeof(err));

	if (rc)
		print_error("unexpected error %d: %s\n", rc, err);
	assert_int_equal(rc, 0);
	assert_non_null(cfg);
	return cfg;
}

static const char *kv_get(const struct ulnet_kv *kv, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(kv[i].key, key))
			return kv[i].value;
	return NULL;
}

/* The layout of the brief / `lnetctl export`, every key present. */
static const char full_yaml[] =
	"node:\n"
	"    pid: 4242\n"
	"    page_size: 65536\n"
	"    control: /tmp/n1/ctl.sock\n"
	"net:\n"
	"    - net type: lo\n"
	"      local NI(s):\n"
	"        - nid: 0@lo\n"
	"          status: up\n"
	"          tunables:\n"
	"              peer_timeout: 0\n"
	"              peer_credits: 0\n"
	"              peer_buffer_credits: 0\n"
	"              credits: 0\n"
	"          lnd tunables:\n"
	"          CPT: \"[0]\"\n"
	"    - net type: tcp\n"
	"      local NI(s):\n"
	"        - nid: 127.0.0.2@tcp\n"
	"          status: up\n"
	"          interfaces:\n"
	"              0: lo\n"
	"          tunables:\n"
	"              peer_timeout: 180\n"
	"              peer_credits: 8\n"
	"              peer_buffer_credits: 0\n"
	"              credits: 256\n"
	"          lnd tunables:\n"
	"              accept_port: 988\n"
	"              nagle: \"off\"\n"
	"          dev cpt: -1\n"
	"          CPT: \"[0]\"\n"
	"    - net type: tcp1\n"
	"      local NI(s):\n"
	"        - interfaces: {0: eth0, 1: eth1}\n"
	"        - interfaces: [ib0]\n"
	"global:\n"
	"    discovery: 1\n"
	"    retry_count: 2\n"
	"    transaction_timeout: 50\n";

static void test_full(void **state)
{
	struct ulnet_config *cfg = parse_ok(full_yaml);
	const struct ulnet_ni_conf *c;

	(void)state;
	assert_string_equal(cfg->file, "node.yaml");
	assert_int_equal(cfg->opts.pid, 4242);
	assert_int_equal(cfg->opts.page_size, 65536);
	assert_string_equal(cfg->control, "/tmp/n1/ctl.sock");
	assert_int_equal(cfg->n_nis, 3); /* lo is ignored */

	c = &cfg->nis[0].conf;
	assert_int_equal(cfg->nis[0].line, 19);
	assert_string_equal(c->net, "tcp");
	assert_string_equal(c->nid, "127.0.0.2@tcp");
	assert_non_null(c->interfaces);
	assert_string_equal(c->interfaces[0], "lo");
	assert_null(c->interfaces[1]);
	assert_int_equal(c->n_tunables, 4);
	assert_string_equal(c->tunables[0].key, "peer_timeout");
	assert_string_equal(kv_get(c->tunables, c->n_tunables, "peer_timeout"), "180");
	assert_string_equal(kv_get(c->tunables, c->n_tunables, "peer_credits"), "8");
	assert_string_equal(kv_get(c->tunables, c->n_tunables, "peer_buffer_credits"), "0");
	assert_string_equal(kv_get(c->tunables, c->n_tunables, "credits"), "256");
	assert_int_equal(c->n_lnd_tunables, 2);
	assert_string_equal(kv_get(c->lnd_tunables, c->n_lnd_tunables, "accept_port"), "988");
	assert_string_equal(kv_get(c->lnd_tunables, c->n_lnd_tunables, "nagle"), "off");

	c = &cfg->nis[1].conf;
	assert_int_equal(cfg->nis[1].line, 35);
	assert_string_equal(c->net, "tcp1");
	assert_null(c->nid);
	assert_string_equal(c->interfaces[0], "eth0");
	assert_string_equal(c->interfaces[1], "eth1");
	assert_null(c->interfaces[2]);
	assert_int_equal(c->n_tunables, 0);
	assert_null(c->tunables);
	assert_int_equal(c->n_lnd_tunables, 0);

	c = &cfg->nis[2].conf;
	assert_int_equal(cfg->nis[2].line, 36);
	assert_string_equal(c->interfaces[0], "ib0");
	assert_null(c->interfaces[1]);

	assert_int_equal(cfg->n_globals, 3);
	assert_string_equal(cfg->globals[0].key, "discovery");
	assert_int_equal(cfg->globals[0].value, 1);
	assert_int_equal(cfg->globals[2].value, 50);
	ulnet_config_free(cfg);
}

static void test_minimal(void **state)
{
	static const char *const docs[] = { "", "# only a comment\n", "---\n", "net:\n", "node:\nnet: []\nglobal: {}\n",
					    "net:\n    - net type: lo\n" };

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct ulnet_config *cfg = parse_ok(docs[i]);

		assert_int_equal(cfg->opts.pid, 0);
		assert_int_equal(cfg->opts.page_size, 0);
		assert_null(cfg->control);
		assert_int_equal(cfg->n_nis, 0);
		ulnet_config_free(cfg);
	}
}

static void test_busy_poll(void **state)
{
	struct ulnet_config *cfg = parse_ok("node:\n    busy_poll_us: 50\n");

	(void)state;
	assert_int_equal(cfg->opts.busy_poll_us, 50);
	ulnet_config_free(cfg);
	cfg = parse_ok("node: {}\n");
	assert_int_equal(cfg->opts.busy_poll_us, 0); /* off unless asked */
	ulnet_config_free(cfg);
}

static void test_loops(void **state)
{
	struct ulnet_config *cfg = parse_ok("node:\n    loops: 2\n");

	(void)state;
	assert_int_equal(cfg->opts.loops, 2);
	ulnet_config_free(cfg);
	cfg = parse_ok("node: {}\n");
	assert_int_equal(cfg->opts.loops, 0); /* the library's default (1, or ULNET_LOOPS) */
	ulnet_config_free(cfg);
}

static void test_selftest_section(void **state)
{
	struct ulnet_config *cfg = parse_ok("selftest:\n    server_rpc_timeout_ms: 3000\n    kernel_stats: yes\n");

	(void)state;
	assert_int_equal(cfg->selftest.server_rpc_timeout_ms, 3000);
	assert_true(cfg->selftest.kernel_stats);
	ulnet_config_free(cfg);
	cfg = parse_ok("selftest: {kernel_stats: false}\n");
	assert_int_equal(cfg->selftest.server_rpc_timeout_ms, 0); /* the engine's default (64 s) */
	assert_false(cfg->selftest.kernel_stats);
	ulnet_config_free(cfg);
}

/* The engine applies the same range to options that do not come from a file. */
static void test_selftest_opts_checked(void **state)
{
	struct ulnet_node_opts no = { 0 };
	struct ulnet_selftest_opts bad = { .server_rpc_timeout_ms = ULNET_SELFTEST_SERVER_TIMEOUT_MIN_MS - 1 };
	struct ulnet_selftest_opts good = { .server_rpc_timeout_ms = 3000, .kernel_stats = true };
	ulnet_selftest *st = NULL;
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(&no, &node), 0);
	assert_int_equal(ulnet_selftest_start(node, &bad, &st), -EINVAL);
	assert_null(st);
	bad.server_rpc_timeout_ms = ULNET_SELFTEST_SERVER_TIMEOUT_MAX_MS + 1;
	assert_int_equal(ulnet_selftest_start(node, &bad, &st), -EINVAL);
	assert_int_equal(ulnet_selftest_start(node, &good, &st), 0);
	assert_non_null(st);
	ulnet_selftest_stop(st);
	assert_int_equal(ulnet_selftest_start(node, NULL, &st), 0);
	ulnet_selftest_stop(st);
	ulnet_node_close(node);
}

static void test_page_sizes(void **state)
{
	(void)state;
	for (uint32_t ps = 4096; ps <= 2097152; ps <<= 1) {
		char yaml[64];
		struct ulnet_config *cfg;

		snprintf(yaml, sizeof(yaml), "node:\n  page_size: %u\n", ps);
		cfg = parse_ok(yaml);
		assert_int_equal(cfg->opts.page_size, ps);
		ulnet_config_free(cfg);
	}
}

/* Anchors and flow style are plain YAML; the parser must not care. */
static void test_flow_and_anchors(void **state)
{
	struct ulnet_config *cfg = parse_ok(
		"node: {pid: 0x3039, control: \"/tmp/a b/s\"}\n"
		"net:\n"
		"  - {net type: tcp, local NI(s): [{nid: 10.0.0.1@tcp, tunables: &t {credits: 64}},\n"
		"                                 {nid: 10.0.0.2@tcp, tunables: *t}]}\n");

	(void)state;
	assert_int_equal(cfg->opts.pid, 12345);
	assert_string_equal(cfg->control, "/tmp/a b/s");
	assert_int_equal(cfg->n_nis, 2);
	assert_string_equal(cfg->nis[1].conf.nid, "10.0.0.2@tcp");
	assert_int_equal(cfg->nis[1].conf.n_tunables, 1);
	assert_string_equal(cfg->nis[1].conf.tunables[0].value, "64");
	ulnet_config_free(cfg);
}

static void test_load_file(void **state)
{
	char path[] = "/tmp/test_config_XXXXXX";
	struct ulnet_config *cfg = NULL;
	char err[512];
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, full_yaml, strlen(full_yaml)), (ssize_t)strlen(full_yaml));
	close(fd);
	assert_int_equal(ulnet_config_load(path, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg->file, path);
	assert_int_equal(cfg->n_nis, 3);
	ulnet_config_free(cfg);
	unlink(path);

	assert_int_equal(ulnet_config_load(path, &cfg, err, sizeof(err)), -ENOENT);
	assert_null(cfg);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "No such file"));
	ulnet_config_free(NULL);
}

struct bad_case {
	const char *name;
	const char *yaml;
	unsigned line;   /* expected "node.yaml:LINE: " prefix */
	const char *msg; /* expected substring of the reason */
};

static const struct bad_case bad_cases[] = {
	/* YAML syntax */
	{ "syntax: unclosed flow", "node:\n  pid: [1, 2\n", 3, "YAML syntax error" },
	{ "syntax: bad indentation", "node:\n    pid: 1\n  page_size: 4096\n", 3, "YAML syntax error" },
	{ "syntax: tab", "node:\n\tpid: 1\n", 2, "YAML syntax error" },
	{ "syntax: unterminated quote", "net:\n  - net type: \"tcp\n", 3, "YAML syntax error" },
	{ "syntax: undefined alias", "node:\n  pid: *nope\n", 2, "YAML syntax error" },
	{ "two documents", "node: {}\n---\nnet: []\n", 3, "more than one YAML document" },
	/* unknown keys, one per level */
	{ "unknown: top level", "node: {}\nudsp: []\n", 2, "unknown key 'udsp' at top level" },
	{ "peer: no primary nid", "peer:\n  - peer ni: []\n", 2, "peer entry needs 'primary nid'" },
	{ "peer: Multi-Rail", "peer:\n  - primary nid: 10.0.0.1@tcp\n    Multi-Rail: True\n", 3,
	  "Multi-Rail: True: ulnet has no Multi-Rail" },
	{ "peer: a second NID", "peer:\n  - primary nid: 10.0.0.1@tcp\n    peer ni:\n      - nid: 10.0.0.2@tcp\n", 4,
	  "peer ni 10.0.0.2@tcp: ulnet has no Multi-Rail" },
	{ "peer: duplicate", "peer:\n  - primary nid: 10.0.0.1@tcp\n  - primary nid: 10.0.0.1@tcp\n", 3,
	  "duplicate peer 10.0.0.1@tcp (line 2)" },
	{ "peer: unknown key", "peer:\n  - primary nid: 10.0.0.1@tcp\n    lnd: tcp\n", 3, "unknown key 'lnd' in peer" },
	{ "unknown: node", "node:\n  pid: 1\n  pagesize: 4096\n", 3, "unknown key 'pagesize' in node" },
	{ "unknown: global", "global:\n  discovery: 1\n  discover: 1\n", 3, "unknown key 'discover' in global" },
	{ "unknown: net entry", "net:\n  - net type: tcp\n    local NI: []\n", 3, "unknown key 'local NI' in net entry" },
	{ "unknown: NI", "net:\n  - net type: tcp\n    local NI(s):\n      - nid: 1.2.3.4@tcp\n        nids: x\n", 5,
	  "unknown key 'nids' in local NI(s)" },
	{ "unknown: tunables",
	  "node:\n    pid: 12345\nnet:\n    - net type: tcp\n      local NI(s):\n        - nid: 127.0.0.2@tcp\n"
	  "          tunables:\n              peer_credit: 8\n",
	  8, "unknown key 'peer_credit' in tunables" },
	{ "unknown: lo NI is checked too", "net:\n  - net type: lo\n    local NI(s):\n      - nid: 0@lo\n        foo: 1\n", 5,
	  "unknown key 'foo' in local NI(s)" },
	{ "duplicate key", "node:\n  pid: 1\n  pid: 2\n", 3, "duplicate key 'pid' in node" },
	{ "duplicate tunable", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      tunables: {credits: 1, credits: 2}\n",
	  5, "duplicate key 'credits' in tunables" },
	/* wrong types */
	{ "type: root is a list", "- node\n", 1, "expected a mapping at top level" },
	{ "type: root is a scalar", "hello\n", 1, "expected a mapping at top level" },
	{ "type: node is a list", "node:\n  - pid: 1\n", 2, "expected a mapping for 'node', got a list" },
	{ "type: net is a mapping", "net:\n  net type: tcp\n", 2, "expected a list for 'net', got a mapping" },
	{ "type: pid is a word", "node:\n  pid: twelve\n", 2, "expected an integer for 'pid', got 'twelve'" },
	{ "type: pid is quoted", "node:\n  pid: \"12\"\n", 2, "expected an integer for 'pid', got the string" },
	{ "type: pid empty", "node:\n  pid:\n  control: /x\n", 2, "expected an integer for 'pid', got an empty value" },
	{ "type: pid negative", "node:\n  pid: -1\n", 2, "'pid' out of range" },
	{ "type: pid too big", "node:\n  pid: 4294967296\n", 2, "'pid' out of range" },
	{ "range: busy_poll_us", "node:\n  busy_poll_us: 1000001\n", 2, "'busy_poll_us' out of range" },
	{ "range: loops 0", "node:\n  loops: 0\n", 2, "'loops' out of range [1, 64]: 0" },
	{ "range: selftest server_rpc_timeout_ms", "selftest:\n  server_rpc_timeout_ms: 99\n", 2,
	  "'server_rpc_timeout_ms' out of range [100, 3600000]: 99" },
	{ "type: selftest kernel_stats", "selftest:\n  kernel_stats: maybe\n", 2,
	  "expected 0 or 1 (true/false, yes/no, on/off) for 'kernel_stats', got maybe" },
	{ "type: selftest kernel_stats quoted", "selftest:\n  kernel_stats: \"true\"\n", 2,
	  "expected 0 or 1 (true/false, yes/no, on/off) for 'kernel_stats'" },
	{ "unknown: selftest", "selftest:\n  server_timeout: 5\n", 2, "unknown key 'server_timeout' in selftest" },
	{ "type: selftest is a list", "selftest:\n  - kernel_stats: true\n", 2, "expected a mapping for 'selftest', got a list" },
	{ "metrics: host name", "metrics:\n  listen: localhost:9669\n", 2, "bad metrics listen 'localhost:9669': not an IPv4" },
	{ "metrics: no port", "metrics:\n  listen: 127.0.0.1\n", 2, "expected ADDRESS:PORT" },
	{ "metrics: port 0", "metrics:\n  listen: 127.0.0.1:0\n", 2, "port must be 1..65535" },
	{ "metrics: port range", "metrics:\n  listen: 127.0.0.1:65536\n", 2, "port must be 1..65535" },
	{ "metrics: bare IPv6", "metrics:\n  listen: ::1:9669\n", 2, "an IPv6 address in brackets" },
	{ "metrics: bad IPv6", "metrics:\n  listen: \"[::g]:9669\"\n", 2, "not an IPv6 address" },
	{ "metrics: empty", "metrics:\n  listen:\n", 2, "for 'listen'" },
	{ "unknown: metrics", "metrics:\n  port: 9669\n", 2, "unknown key 'port' in metrics" },
	{ "range: loops 65", "node:\n  loops: 65\n", 2, "'loops' out of range [1, 64]: 65" },
	{ "type: pid octal-looking", "node:\n  pid: 0123\n", 2, "expected an integer for 'pid'" },
	{ "type: control is a list", "node:\n  control: [a]\n", 2, "expected a string for 'control', got a list" },
	{ "type: control empty", "node:\n  control: \"\"\n", 2, "empty value for 'control'" },
	{ "control too long",
	  "node:\n  control: /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  2, "control socket path too long" },
	{ "type: tunable is a word", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      tunables:\n        credits: many\n",
	  6, "expected an integer for 'credits'" },
	{ "type: tunable negative", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      tunables:\n        credits: -8\n",
	  6, "'credits' out of range" },
	{ "type: tunables is a list", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      tunables: [1]\n",
	  5, "expected a mapping for 'tunables', got a list" },
	{ "type: lnd tunable is a map", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      lnd tunables:\n        accept_port: {a: 1}\n",
	  6, "expected an integer for 'accept_port', got a mapping" },
	{ "type: lnd tunable empty", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      lnd tunables:\n        accept_port:\n",
	  6, "expected an integer for 'accept_port', got an empty value" },
	{ "range: lnd tunable from the LND's table", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      lnd tunables:\n        conns_per_peer: 0\n",
	  6, "'conns_per_peer' out of range [1, 16]: 0" },
	{ "enum: lnd tunable from the LND's table", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      lnd tunables:\n        accept: maybe\n",
	  6, "accept 'maybe': expected one of none, all, secure" },
	{ "bool: lnd tunable from the LND's table", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      lnd tunables:\n        nagle: 2\n",
	  6, "nagle '2': expected 0 or 1 (true/false, yes/no, on/off)" },
	{ "unknown: lnd tunable", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      lnd tunables:\n        frob: 2\n",
	  6, "unknown key 'frob' in lnd tunables (known: accept_port, accept, timeout," },
	{ "range: tunables from the NI table", "net:\n - net type: tcp\n   local NI(s):\n    - nid: 1.2.3.4@tcp\n      tunables:\n        peer_credits: 256\n",
	  6, "'peer_credits' out of range [1, 255]: 256" },
	{ "type: local NI(s) is a mapping", "net:\n - net type: tcp\n   local NI(s):\n     nid: 1.2.3.4@tcp\n", 4,
	  "expected a list for 'local NI(s)', got a mapping" },
	{ "type: NI is a scalar", "net:\n - net type: tcp\n   local NI(s):\n     - 1.2.3.4@tcp\n", 4,
	  "expected a mapping for 'local NI(s)', got a scalar" },
	{ "type: nid is a list", "net:\n - net type: tcp\n   local NI(s):\n     - nid: [1.2.3.4@tcp]\n", 4,
	  "expected a string for 'nid', got a list" },
	{ "type: interfaces index", "net:\n - net type: tcp\n   local NI(s):\n     - interfaces:\n         first: eth0\n", 5,
	  "expected an integer for 'interfaces index'" },
	{ "type: interfaces empty", "net:\n - net type: tcp\n   local NI(s):\n     - interfaces: []\n", 4,
	  "empty value for 'interfaces'" },
	{ "type: interface name is a map", "net:\n - net type: tcp\n   local NI(s):\n     - interfaces: {0: {a: b}}\n", 4,
	  "expected a string for 'interfaces', got a mapping" },
	{ "type: global is a word", "global:\n  discovery: yes\n", 2, "expected an integer for 'discovery'" },
	{ "type: key is a mapping", "node:\n  ? {a: 1}\n  : 2\n", 2, "expected a scalar key in node" },
	{ "bad status", "net:\n - net type: tcp\n   local NI(s):\n     - nid: 1.2.3.4@tcp\n       status: sideways\n", 5,
	  "bad status 'sideways'" },
	/* page_size */
	{ "page_size 3000", "node:\n    page_size: 3000\n", 2, "bad page_size 3000" },
	{ "page_size 4097", "node:\n    page_size: 4097\n", 2, "bad page_size 4097" },
	{ "page_size 4 MiB", "node:\n    page_size: 4194304\n", 2, "bad page_size 4194304" },
	{ "page_size 2048", "node:\n    page_size: 2048\n", 2, "bad page_size 2048" },
	{ "page_size 0", "node:\n    page_size: 0\n", 2, "bad page_size 0" },
	{ "page_size 64k", "node:\n    page_size: 64k\n", 2, "expected an integer for 'page_size', got '64k'" },
	/* NIDs and nets */
	{ "bad nid: no @", "net:\n - net type: tcp\n   local NI(s):\n     - nid: 127.0.0.2\n", 4, "bad nid '127.0.0.2'" },
	{ "bad nid: address", "net:\n - net type: tcp\n   local NI(s):\n     - nid: 127.0.0.300@tcp\n", 4,
	  "bad nid '127.0.0.300@tcp'" },
	{ "bad nid: lnd", "net:\n - net type: tcp\n   local NI(s):\n     - nid: 1.2.3.4@tcpx\n", 4, "bad nid '1.2.3.4@tcpx'" },
	{ "nid on another net", "net:\n - net type: tcp\n   local NI(s):\n     - nid: 1.2.3.4@tcp1\n", 4,
	  "nid '1.2.3.4@tcp1' is not on net 'tcp'" },
	{ "nid empty", "net:\n - net type: tcp\n   local NI(s):\n     - nid: \"\"\n", 4, "empty value for 'nid'" },
	{ "missing net type", "net:\n  - local NI(s):\n      - nid: 1.2.3.4@tcp\n", 2, "missing 'net type' in net entry" },
	{ "missing net type: empty entry", "net:\n  - net type: tcp\n    local NI(s): [{nid: 1.2.3.4@tcp}]\n  -\n", 4,
	  "missing 'net type' in net entry" },
	{ "bad net type", "net:\n  - net type: ethernet\n    local NI(s): [{nid: 1.2.3.4@tcp}]\n", 2,
	  "bad net type 'ethernet'" },
	{ "net without NIs", "net:\n  - net type: tcp\n", 2, "net 'tcp' has no 'local NI(s)'" },
	{ "NI without nid or interfaces", "net:\n  - net type: tcp\n    local NI(s):\n      - status: up\n", 4,
	  "needs 'nid' or 'interfaces'" },
	/* route:, routing:, buffers: */
	{ "route: is a mapping", "route:\n  net: tcp1\n", 2, "expected a list for 'route', got a mapping" },
	{ "route: missing net", "route:\n  - gateway: 10.0.0.1@tcp\n", 2, "route entry needs 'net'" },
	{ "route: missing gateway", "route:\n  - net: tcp1\n", 2, "route entry needs 'gateway'" },
	{ "route: empty entry", "route:\n  -\n", 2, "route entry needs 'net' and 'gateway'" },
	{ "route: bad net", "route:\n  - net: tcpx1\n    gateway: 10.0.0.1@tcp\n", 2, "bad net 'tcpx1'" },
	{ "route: bad gateway", "route:\n  - net: tcp1\n    gateway: 10.0.0.300@tcp\n", 3, "bad gateway '10.0.0.300@tcp'" },
	{ "route: gateway ANY", "route:\n  - net: tcp1\n    gateway: \"*\"\n", 3, "bad gateway '*': not a NID" },
	{ "route: hop 0", "route:\n  - net: tcp1\n    gateway: 10.0.0.1@tcp\n    hop: 0\n", 4,
	  "bad hop 0: must be -1 (unknown) or 1..255" },
	{ "route: hop 256", "route:\n  - net: tcp1\n    gateway: 10.0.0.1@tcp\n    hop: 256\n", 4, "'hop' out of range [-1, 255]: 256" },
	{ "route: hop -2", "route:\n  - net: tcp1\n    gateway: 10.0.0.1@tcp\n    hop: -2\n", 4, "'hop' out of range [-1, 255]: -2" },
	{ "route: priority negative", "route:\n  - net: tcp1\n    gateway: 10.0.0.1@tcp\n    priority: -1\n", 4,
	  "'priority' out of range [0, 4294967295]: -1" },
	{ "route: priority word", "route:\n  - net: tcp1\n    gateway: 10.0.0.1@tcp\n    priority: high\n", 4,
	  "expected an integer for 'priority', got 'high'" },
	{ "route: health_sensitivity too big", "route:\n  - {net: tcp1, gateway: 10.0.0.1@tcp, health_sensitivity: 4294967296}\n",
	  2, "'health_sensitivity' out of range" },
	{ "route: unknown key", "route:\n  - net: tcp1\n    gateway: 10.0.0.1@tcp\n    gw: x\n", 4, "unknown key 'gw' in route" },
	{ "route: bad state", "route:\n  - net: tcp1\n    gateway: 10.0.0.1@tcp\n    state: sideways\n", 4, "bad state 'sideways'" },
	{ "route: bad type", "route:\n  - net: tcp1\n    gateway: 10.0.0.1@tcp\n    type: two-hop\n", 4, "bad type 'two-hop'" },
	{ "route: duplicate", "route:\n  - {net: tcp1, gateway: 10.0.0.1@tcp}\n  - {net: tcp1, gateway: 10.0.0.1@tcp, hop: 2}\n", 3,
	  "duplicate route to tcp1 via 10.0.0.1@tcp (line 2)" },
	{ "routing: is a scalar", "routing: 1\n", 1, "expected a mapping for 'routing', got a scalar" },
	{ "routing: enable 2", "routing:\n  enable: 2\n", 2, "expected 0 or 1 (true/false, yes/no, on/off) for 'enable', got 2" },
	{ "routing: unknown key", "routing:\n  enabled: 1\n", 2, "unknown key 'enabled' in routing" },
	{ "routing: check interval negative", "routing:\n  alive_router_check_interval: -1\n", 2,
	  "'alive_router_check_interval' out of range" },
	{ "routing: ping timeout 0", "routing:\n  router_ping_timeout: 0\n", 2, "'router_ping_timeout' out of range [1, 86400]: 0" },
	{ "routing: check interval over a day", "routing:\n  alive_router_check_interval: 86401\n", 2,
	  "'alive_router_check_interval' out of range [0, 86400]: 86401" },
	{ "routing: list item unknown", "routing:\n  - cpt[0]: {}\n  - enables: 1\n", 3, "unknown key 'enables' in routing" },
	{ "routing: cpt pool unknown", "routing:\n  - cpt[0]:\n      huge: {npages: 1}\n", 3, "unknown key 'huge' in cpt" },
	{ "routing: cpt key unknown", "routing:\n  - cpt[0]:\n      tiny: {pages: 1}\n", 3, "unknown key 'pages' in tiny" },
	{ "routing: list item is a scalar", "routing:\n  - 1\n", 2, "expected a mapping for 'routing', got a scalar" },
	{ "buffers: tiny too many", "buffers:\n  tiny: 1048577\n", 2, "'tiny' out of range [1, 1048576]: 1048577" },
	{ "buffers: large negative", "buffers:\n  large: -1\n", 2, "'large' out of range" },
	{ "buffers: small word", "buffers:\n  small: lots\n", 2, "expected an integer for 'small', got 'lots'" },
	{ "buffers: memory_max below one large buffer", "buffers:\n  memory_max: 4096\n", 2,
	  "'memory_max' out of range [1048576, " },
	{ "buffers: unknown key", "buffers:\n  huge: 1\n", 2, "unknown key 'huge' in buffers (known: tiny, small, large, memory_max)" },
	{ "buffers: is a list", "buffers:\n  - tiny: 1\n", 2, "expected a mapping for 'buffers', got a list" },
	{ "global: router_sensitivity 101", "global:\n  router_sensitivity: 101\n", 2, "'router_sensitivity' out of range [0, 100]: 101" },
};

static void run_bad_case(void **state)
{
	const struct bad_case *bc = *state;
	struct ulnet_config *cfg = (struct ulnet_config *)(uintptr_t)1;
	char err[512], prefix[64];
	int rc = ulnet_config_parse("node.yaml", bc->yaml, strlen(bc->yaml), &cfg, err, sizeof(err));

	assert_int_equal(rc, -EINVAL);
	assert_null(cfg);
	snprintf(prefix, sizeof(prefix), "node.yaml:%u: ", bc->line);
	if (strncmp(err, prefix, strlen(prefix)) || !strstr(err, bc->msg)) {
		print_error("case '%s'\n  got:  %s\n  want: %s...%s\n", bc->name, err, prefix, bc->msg);
		fail();
	}
	/* The message is one line. */
	assert_null(strchr(err, '\n'));
}

/* A short error buffer is cut, never overrun. */
/* What ulnet_config_export writes, ulnet_config_parse reads back into the same options, in YAML and
 * in JSON (a JSON document is YAML too). */
static void test_export_round_trip(void **state)
{
	struct ulnet_node_opts opts = { .pid = 4242, .page_size = 65536, .transaction_timeout = 7, .max_peers = 99,
					.busy_poll_us = 25, .large_max = 8u << 20, .loops = 2 };
	struct ulnet_selftest_opts sst = { .server_rpc_timeout_ms = 5000, .kernel_stats = true };
	ulnet_node *node;
	(void)state;

	assert_int_equal(ulnet_node_open(&opts, &node), 0);
	for (int json = 0; json < 2; json++) {
		struct ulnet_config *cfg = NULL;
		struct ulnet_writer w;
		struct text_sink t = { .len = 0 };
		char err[256] = "";

		ulnet_writer_init(&w, text_sink_write, &t, json);
		assert_int_equal(ulnet_config_export(node, "/tmp/x.sock", json ? NULL : &sst,
						     json ? "[::1]:9669" : "127.0.0.1:9669", &w), 0);
		assert_int_equal(ulnet_config_parse("export", t.s, t.len, &cfg, err, sizeof(err)), 0);
		assert_memory_equal(&cfg->opts, &opts, sizeof(opts));
		assert_int_equal(cfg->selftest.server_rpc_timeout_ms, json ? 0 : 5000); /* NULL: no section */
		assert_int_equal(cfg->selftest.kernel_stats, !json);
		assert_string_equal(cfg->control, "/tmp/x.sock");
		assert_string_equal(cfg->metrics_listen, json ? "[::1]:9669" : "127.0.0.1:9669");
		assert_int_equal(cfg->n_nis, 0); /* lo only: its entry is checked and not kept */
		ulnet_config_free(cfg);
	}
	ulnet_node_close(node);
}

/* The brief's layout (lnetctl export's sections, ulnet's extra keys) and global router_sensitivity. */
static const char routing_yaml[] =
	"route:\n"
	"    - net: o2ib1\n"
	"      gateway: 10.0.0.1@tcp\n"
	"      hop: -1\n"
	"      priority: 0\n"
	"      health_sensitivity: 1\n"
	"    - net: tcp7\n"
	"      gateway: 10.0.0.2@tcp\n"
	"      hop: 3\n"
	"      priority: 4294967295\n"
	"      health_sensitivity: 0\n"
	"      state: down\n"
	"      type: multi-hop\n"
	"    - {net: tcp7, gateway: 10.0.0.3@tcp}\n"
	"routing:\n"
	"    enable: 1\n"
	"    alive_router_check_interval: 0\n"
	"    router_ping_timeout: 50\n"
	"buffers:\n"
	"    tiny: 1\n"
	"    small: 16384\n"
	"    large: 1048576\n"
	"    memory_max: 1073741824\n"
	"global:\n"
	"    discovery: 1\n"
	"    router_sensitivity: 75\n";

static void test_routing_sections(void **state)
{
	struct ulnet_config *cfg = parse_ok(routing_yaml);
	const struct ulnet_route_conf *r;

	(void)state;
	assert_int_equal(cfg->n_routes, 3);
	r = &cfg->routes[0].conf;
	assert_int_equal(cfg->routes[0].line, 2);
	assert_string_equal(r->net, "o2ib1");
	assert_string_equal(r->gateway, "10.0.0.1@tcp");
	assert_int_equal(r->hops, ULNET_ROUTE_HOPS_UNDEF);
	assert_int_equal(r->priority, 0);
	assert_int_equal(r->health_sensitivity, 1);
	r = &cfg->routes[1].conf;
	assert_int_equal(cfg->routes[1].line, 7);
	assert_int_equal(r->hops, 3);
	assert_int_equal(r->priority, UINT32_MAX);
	assert_int_equal(r->health_sensitivity, 0);
	r = &cfg->routes[2].conf; /* lnetctl's defaults */
	assert_string_equal(r->gateway, "10.0.0.3@tcp");
	assert_int_equal(r->hops, ULNET_ROUTE_HOPS_UNDEF);
	assert_int_equal(r->priority, 0);
	assert_int_equal(r->health_sensitivity, 1);

	assert_int_equal(cfg->routing_set, ULNET_CONFIG_RT_ENABLE | ULNET_CONFIG_RT_CHECK_INTERVAL |
						   ULNET_CONFIG_RT_PING_TIMEOUT | ULNET_CONFIG_RT_TINY |
						   ULNET_CONFIG_RT_SMALL | ULNET_CONFIG_RT_LARGE |
						   ULNET_CONFIG_RT_MEMORY_MAX | ULNET_CONFIG_RT_SENSITIVITY);
	assert_int_equal(cfg->routing_line, 16);
	assert_true(cfg->routing.enable);
	assert_int_equal(cfg->routing.check_interval, 0);
	assert_int_equal(cfg->routing.ping_timeout, 50);
	assert_int_equal(cfg->routing.tiny, 1);
	assert_int_equal(cfg->routing.small, 16384);
	assert_int_equal(cfg->routing.large, ULNET_RTR_BUFFERS_MAX);
	assert_int_equal(cfg->routing.memory_max, 1ull << 30);
	assert_int_equal(cfg->routing.sensitivity, 75);
	assert_int_equal(cfg->n_globals, 2); /* still listed with the others */
	ulnet_config_free(cfg);

	/* only what the file gives is marked: the node keeps its own for the rest */
	cfg = parse_ok("routing:\n    enable: 0\nbuffers: {large: 8}\nroute: []\n");
	assert_int_equal(cfg->routing_set, ULNET_CONFIG_RT_ENABLE | ULNET_CONFIG_RT_LARGE);
	assert_int_equal(cfg->routing_line, 2);
	assert_false(cfg->routing.enable);
	assert_int_equal(cfg->routing.large, 8);
	assert_int_equal(cfg->n_routes, 0);
	ulnet_config_free(cfg);
	cfg = parse_ok("routing:\nbuffers:\n");
	assert_int_equal(cfg->routing_set, 0);
	ulnet_config_free(cfg);
}

/* `lnetctl routing show` prints a list: the pools per CPT (what they hold, not settings) and
 * `- enable: N`; a file holding it (lnetctl export without --backup) reads. */
static void test_routing_show_layout(void **state)
{
	struct ulnet_config *cfg = parse_ok(
		"routing:\n"
		"    - cpt[0]:\n"
		"          tiny:\n"
		"              npages: 0\n"
		"              nbuffers: 2048\n"
		"              credits: 2048\n"
		"              mincredits: 2048\n"
		"          small:\n"
		"              npages: 1\n"
		"              nbuffers: 16384\n"
		"              credits: 16384\n"
		"              mincredits: 16384\n"
		"          large:\n"
		"              npages: 256\n"
		"              nbuffers: 1024\n"
		"              credits: 1024\n"
		"              mincredits: 1024\n"
		"    - cpt[1]: {}\n"
		"    - enable: 1\n");

	(void)state;
	assert_int_equal(cfg->routing_set, ULNET_CONFIG_RT_ENABLE);
	assert_true(cfg->routing.enable);
	assert_int_equal(cfg->routing_line, 19);
	ulnet_config_free(cfg);
}

static void quiet(int level, const char *subsys, const char *line)
{
	(void)level;
	(void)subsys;
	(void)line;
}

/* A node with a tcp NI (accept none: nothing listens) on 127.44.0.1, as a file would give it. */
static struct ulnet_config *routed_cfg(const char *extra)
{
	char yaml[2048];

	snprintf(yaml, sizeof(yaml),
		 "net:\n"
		 "    - net type: tcp\n"
		 "      local NI(s):\n"
		 "        - nid: 127.44.0.1@tcp\n"
		 "          lnd tunables: {accept: none}\n"
		 "%s",
		 extra);
	return parse_ok(yaml);
}

/* Field by field: the struct has padding. */
static void assert_routing_equal(const struct ulnet_routing_conf *a, const struct ulnet_routing_conf *b)
{
	assert_int_equal(a->enable, b->enable);
	assert_int_equal(a->tiny, b->tiny);
	assert_int_equal(a->small, b->small);
	assert_int_equal(a->large, b->large);
	assert_int_equal(a->memory_max, b->memory_max);
	assert_int_equal(a->check_interval, b->check_interval);
	assert_int_equal(a->ping_timeout, b->ping_timeout);
	assert_int_equal(a->sensitivity, b->sensitivity);
}

/* What export writes with routes and routing settings reads back into the same ones, and a node
 * opened from it has the same routes (YAML and JSON). */
static void test_export_routes_round_trip(void **state)
{
	struct ulnet_config *cfg = routed_cfg(
		"route:\n"
		"    - {net: o2ib1, gateway: 127.44.0.2@tcp, hop: 2, priority: 5, health_sensitivity: 3}\n"
		"    - {net: o2ib1, gateway: 127.44.0.3@tcp}\n"
		"    - {net: tcp9, gateway: 127.44.0.3@tcp, priority: 1}\n"
		"routing: {enable: 1, alive_router_check_interval: 7, router_ping_timeout: 9}\n"
		"buffers: {tiny: 11, small: 22, large: 33, memory_max: 2097152}\n"
		"global: {router_sensitivity: 50}\n");
	struct ulnet_routing_conf want = { .enable = true, .tiny = 11, .small = 22, .large = 33, .memory_max = 2097152,
					   .check_interval = 7, .ping_timeout = 9, .sensitivity = 50 };
	struct ulnet_routing_conf got;
	ulnet_node *node;
	char err[512] = "";

	(void)state;
	ulnet_log_set(quiet, 0);
	assert_int_equal(ulnet_config_node_open(cfg, &node, err, sizeof(err)), 0);
	ulnet_config_free(cfg);
	ulnet_routing_get(node, &got);
	assert_routing_equal(&got, &want);
	for (int json = 0; json < 2; json++) {
		struct ulnet_writer w;
		struct text_sink t = { .len = 0 };
		struct ulnet_route_info a, b;
		ulnet_node *copy;
		unsigned i;

		ulnet_writer_init(&w, text_sink_write, &t, json);
		assert_int_equal(ulnet_config_export(node, NULL, NULL, NULL, &w), 0);
		if (ulnet_config_parse("export", t.s, t.len, &cfg, err, sizeof(err)))
			print_error("%s\n%s\n", err, t.s);
		assert_non_null(cfg);
		assert_int_equal(cfg->n_routes, 3);
		assert_string_equal(cfg->routes[0].conf.net, "o2ib1");
		assert_string_equal(cfg->routes[0].conf.gateway, "127.44.0.2@tcp");
		assert_int_equal(cfg->routes[0].conf.hops, 2);
		assert_int_equal(cfg->routes[0].conf.priority, 5);
		assert_int_equal(cfg->routes[0].conf.health_sensitivity, 3);
		assert_int_equal(cfg->routes[1].conf.hops, ULNET_ROUTE_HOPS_UNDEF);
		assert_int_equal(cfg->routes[1].conf.health_sensitivity, 1);
		assert_routing_equal(&cfg->routing, &want);

		/* the exported file opens the same node again (its tcp NI is the same address: accept none) */
		assert_int_equal(ulnet_config_node_open(cfg, &copy, err, sizeof(err)), 0);
		ulnet_routing_get(copy, &got);
		assert_routing_equal(&got, &want);
		for (i = 0; ulnet_route_info_get(node, i, &a) == 0; i++) {
			assert_int_equal(ulnet_route_info_get(copy, i, &b), 0);
			assert_string_equal(a.net, b.net);
			assert_true(ulnet_nid_equal(&a.gateway, &b.gateway));
			assert_int_equal(a.hops, b.hops);
			assert_int_equal(a.priority, b.priority);
			assert_int_equal(a.health_sensitivity, b.health_sensitivity);
		}
		assert_int_equal(i, 3);
		assert_int_equal(ulnet_route_info_get(copy, i, &b), -ENOENT);
		ulnet_node_close(copy);
		ulnet_config_free(cfg);
	}
	ulnet_node_close(node);
}

/* No routes: no `route:` section (lnetctl writes none either); the settings are still there. */
static void test_export_no_routes(void **state)
{
	struct ulnet_writer w;
	struct text_sink t = { .len = 0 };
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(NULL, &node), 0);
	ulnet_writer_init(&w, text_sink_write, &t, false);
	assert_int_equal(ulnet_config_export(node, NULL, NULL, NULL, &w), 0);
	assert_null(strstr(t.s, "route:"));
	assert_non_null(strstr(t.s, "\nrouting:\n    enable: 0\n    alive_router_check_interval: 60\n"
				    "    router_ping_timeout: 50\nbuffers:\n    tiny: 2048\n    small: 16384\n"
				    "    large: 1024\n    memory_max: 1073741824\nglobal:\n    router_sensitivity: 100\n"));
	ulnet_node_close(node);
}

/* What only the running node can refuse names the file's line and the route. */
static void test_node_open_route_errors(void **state)
{
	static const struct {
		const char *route;
		int rc;
		const char *msg;
	} cases[] = {
		{ "route: [{net: o2ib1, gateway: 10.9.0.1@tcp5}]\n", -EHOSTUNREACH,
		  "node.yaml:6: cannot add route o2ib1 via 10.9.0.1@tcp5: " },
		{ "route: [{net: tcp, gateway: 127.44.0.2@tcp}]\n", -ELOOP, "node.yaml:6: cannot add route tcp via 127.44.0.2@tcp: " },
		{ "route: [{net: o2ib1, gateway: 127.44.0.1@tcp}]\n", -ELOOP,
		  "node.yaml:6: cannot add route o2ib1 via 127.44.0.1@tcp: " },
	};

	(void)state;
	ulnet_log_set(quiet, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ulnet_config *cfg = routed_cfg(cases[i].route);
		ulnet_node *node = (ulnet_node *)(uintptr_t)1;
		char err[512] = "";

		assert_int_equal(ulnet_config_node_open(cfg, &node, err, sizeof(err)), cases[i].rc);
		assert_null(node);
		if (strncmp(err, cases[i].msg, strlen(cases[i].msg))) {
			print_error("got:  %s\nwant: %s...\n", err, cases[i].msg);
			fail();
		}
		ulnet_config_free(cfg);
	}
}

static void test_short_errbuf(void **state)
{
	struct ulnet_config *cfg;
	char err[12];

	(void)state;
	memset(err, 'x', sizeof(err));
	assert_int_equal(ulnet_config_parse("node.yaml", "node:\n  pid: x\n", 15, &cfg, err, 8), -EINVAL);
	assert_int_equal(strlen(err), 7);
	assert_int_equal(err[8], 'x');
	assert_int_equal(ulnet_config_parse("node.yaml", "node:\n  pid: x\n", 15, &cfg, NULL, 0), -EINVAL);
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_minimal),
		cmocka_unit_test(test_busy_poll),
		cmocka_unit_test(test_loops),
		cmocka_unit_test(test_selftest_section),
		cmocka_unit_test(test_selftest_opts_checked),
		cmocka_unit_test(test_page_sizes),
		cmocka_unit_test(test_flow_and_anchors),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_export_round_trip),
		cmocka_unit_test(test_routing_sections),
		cmocka_unit_test(test_routing_show_layout),
		cmocka_unit_test(test_export_no_routes),
		cmocka_unit_test(test_export_routes_round_trip),
		cmocka_unit_test(test_node_open_route_errors),
		cmocka_unit_test(test_short_errbuf),
	};
	size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
	size_t nbad = sizeof(bad_cases) / sizeof(bad_cases[0]);
	struct CMUnitTest *tests = calloc(nfixed + nbad, sizeof(*tests));
	int rc;

	if (!tests)
		return 1;
	memcpy(tests, fixed, sizeof(fixed));
	for (size_t i = 0; i < nbad; i++)
		tests[nfixed + i] = (struct CMUnitTest){ .name = bad_cases[i].name, .test_func = run_bad_case,
							 .initial_state = (void *)(uintptr_t)&bad_cases[i] };
	rc = _cmocka_run_group_tests("config", tests, nfixed + nbad, NULL, NULL);
	free(tests);
	return rc;
}
