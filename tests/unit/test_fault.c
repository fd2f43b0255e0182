/* SPDX-License-Identifier: MIT */
/* Fault rules: the pure parts in tables (names, checks, matching, 1 in N and interval decisions),
 * then each kind acting on messages of one node over lo (what a sender and a receiver then see). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "ulnet/ulnet.h"
#include "ulnet/config_file.h"
#include "fault_rule.h"
#include "fault_lnd.h"
#include "internal.h"

static struct ulnet_nid nid(const char *s)
{
	struct ulnet_nid n;

	assert_int_equal(ulnet_nid_parse(s, &n, NULL), 0);
	return n;
}

/* ---- names and checks ---- */

static void test_names(void **state)
{
	static const struct {
		const char *name;
		int err;
	} h[] = {
		{ "local_interrupt", -EINTR }, { "local_dropped", -ECANCELED }, { "local_aborted", -ECONNABORTED },
		{ "local_no_route", -EHOSTUNREACH }, { "local_error", -EIO }, { "local_timeout", -ETIMEDOUT },
		{ "remote_error", -EREMOTEIO }, { "remote_dropped", -ECONNRESET }, { "remote_timeout", -ETIMEDOUT },
		{ "network_timeout", -ENETUNREACH },
	};
	enum ulnet_fault_health hv;
	enum ulnet_fault_kind k;

	(void)state;
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++) {
		assert_int_equal(ulnet_fault_health_parse(h[i].name, &hv), 0);
		assert_string_equal(ulnet_fault_health_name(hv), h[i].name);
		assert_int_equal(ulnet_fault_health_errno(hv), h[i].err);
	}
	assert_int_equal(ulnet_fault_health_parse("local_oops", &hv), -EINVAL);
	assert_int_equal(ulnet_fault_health_errno(ULNET_FAULT_HEALTH_NONE), 0);
	for (int i = 0; i < ULNET_FAULT_KINDS; i++) {
		assert_int_equal(ulnet_fault_kind_parse(ulnet_fault_kind_name((enum ulnet_fault_kind)i), &k), 0);
		assert_int_equal(k, i);
	}
	assert_int_equal(ulnet_fault_kind_parse("mangle", &k), -EINVAL);
}

static void test_types(void **state)
{
	static const struct {
		const char *in;
		int rc;
		uint32_t mask;
		const char *out;
	} t[] = {
		{ "PUT", 0, 1u << ULNET_MSG_PUT, "PUT" },
		{ "get,put", 0, (1u << ULNET_MSG_PUT) | (1u << ULNET_MSG_GET), "PUT,GET" },
		{ "REPLY,ACK,GET,PUT", 0, 0xf, "PUT,ACK,GET,REPLY" },
		{ "PUT,", 0, 1u << ULNET_MSG_PUT, "PUT" },
		{ "PUTS", -EINVAL, 0, NULL },
		{ "", -EINVAL, 0, NULL },
		{ "PUT,,GET", -EINVAL, 0, NULL },
	};
	char buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint32_t m = 0;
		const char *why = NULL;

		assert_int_equal(ulnet_fault_types_parse(t[i].in, &m, &why), t[i].rc);
		if (t[i].rc) {
			assert_non_null(why);
			continue;
		}
		assert_int_equal(m, t[i].mask);
		assert_string_equal(ulnet_fault_types_format(m, buf, sizeof(buf)), t[i].out);
	}
	assert_string_equal(ulnet_fault_types_format(0, buf, sizeof(buf)), "*");
}

static void test_check(void **state)
{
	static const struct {
		enum ulnet_fault_kind kind;
		uint32_t rate, interval, portal, latency;
		enum ulnet_fault_health health;
		bool ok;
	} t[] = {
		{ ULNET_FAULT_DROP, 10, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, true },
		{ ULNET_FAULT_DROP, 0, 5, 12, 0, ULNET_FAULT_REMOTE_DROPPED, true },
		{ ULNET_FAULT_DROP, 0, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, false },   /* neither rate nor interval */
		{ ULNET_FAULT_DROP, 10, 5, ULNET_FAULT_PORTAL_ANY, 0, 0, false },  /* both */
		{ ULNET_FAULT_DROP, 10, 0, 64, 0, 0, false },                      /* portal */
		{ ULNET_FAULT_DROP, 10, 0, ULNET_FAULT_PORTAL_ANY, 5, 0, false },  /* latency on a drop */
		{ ULNET_FAULT_DELAY, 1, 0, ULNET_FAULT_PORTAL_ANY, 5, 0, true },
		{ ULNET_FAULT_DELAY, 1, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, false },  /* no latency */
		{ ULNET_FAULT_DELAY, 1, 0, ULNET_FAULT_PORTAL_ANY, 5, ULNET_FAULT_LOCAL_ERROR, false },
		{ ULNET_FAULT_CORRUPT, 3, 0, 0, 0, 0, true },
		{ ULNET_FAULT_KINDS, 3, 0, 0, 0, 0, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ulnet_fault_rule r;
		const char *why = NULL;

		ulnet_fault_rule_init(&r, t[i].kind);
		r.rate = t[i].rate;
		r.interval_s = t[i].interval;
		r.portal = t[i].portal;
		r.latency_ms = t[i].latency;
		r.health = t[i].health;
		assert_int_equal(ulnet_fault_rule_check(&r, &why), t[i].ok ? 0 : -EINVAL);
		assert_true(t[i].ok ? why == NULL : why != NULL);
	}
}

/* LND-level kinds: what each takes and refuses. */
static void test_check_lnd(void **state)
{
	static const struct {
		enum ulnet_fault_kind kind;
		uint32_t version, reason, latency, portal, mask, hold;
		bool ok;
	} t[] = {
		{ ULNET_FAULT_HELLO, 0, 0, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, true },   /* the default version */
		{ ULNET_FAULT_HELLO, 7, 0, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, true },
		{ ULNET_FAULT_HELLO, 7, 0, 5, ULNET_FAULT_PORTAL_ANY, 0, 0, false },  /* latency on a hello */
		{ ULNET_FAULT_HELLO, 7, 3, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, false },  /* reason on a hello */
		{ ULNET_FAULT_HELLO, 0, 0, 0, 4, 0, 0, false },                      /* a portal: connections have none */
		{ ULNET_FAULT_HELLO, 0, 0, 0, ULNET_FAULT_PORTAL_ANY, 0, 20, false }, /* hold */
		{ ULNET_FAULT_REJECT, 0, 5, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, true },
		{ ULNET_FAULT_REJECT, 0, 1, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, true },
		{ ULNET_FAULT_REJECT, 0, 9, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, true },
		{ ULNET_FAULT_REJECT, 0, 0, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, false }, /* no reason */
		{ ULNET_FAULT_REJECT, 0, 10, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, false }, /* out of range */
		{ ULNET_FAULT_REJECT, 3, 5, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, false }, /* version on a reject */
		{ ULNET_FAULT_STALL, 0, 0, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, true },   /* until deleted */
		{ ULNET_FAULT_STALL, 0, 0, 2000, ULNET_FAULT_PORTAL_ANY, 0, 0, true },
		{ ULNET_FAULT_STALL, 0, 0, 3600001, ULNET_FAULT_PORTAL_ANY, 0, 0, false },
		{ ULNET_FAULT_STALL, 0, 0, 0, ULNET_FAULT_PORTAL_ANY, 1u << ULNET_MSG_PUT, 0, false }, /* message types */
		{ ULNET_FAULT_STALL, 0, 4, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, false },
		{ ULNET_FAULT_DROP, 4, 0, 0, ULNET_FAULT_PORTAL_ANY, 0, 0, false },   /* version on a drop */
		{ ULNET_FAULT_CORRUPT, 0, 0, 5, ULNET_FAULT_PORTAL_ANY, 0, 0, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ulnet_fault_rule r;
		const char *why = NULL;

		ulnet_fault_rule_init(&r, t[i].kind);
		r.rate = 1;
		r.version = t[i].version;
		r.reason = t[i].reason;
		r.latency_ms = t[i].latency;
		r.portal = t[i].portal;
		r.msg_mask = t[i].mask;
		r.hold_ms = t[i].hold;
		if (ulnet_fault_rule_check(&r, &why) != (t[i].ok ? 0 : -EINVAL))
			fail_msg("case %zu: %s", i, why ? why : "accepted");
		assert_true(t[i].ok ? why == NULL : why != NULL);
	}
}

static void test_reject_names(void **state)
{
	static const struct {
		const char *in;
		int rc;
		uint32_t why;
	} t[] = {
		{ "CONN_RACE", 0, 1 }, { "no_resources", 0, 2 }, { "IBLND_REJECT_FATAL", 0, 3 }, { "CONN_UNCOMPAT", 0, 4 },
		{ "conn_stale", 0, 5 }, { "RDMA_FRAGS", 0, 6 }, { "MSG_QUEUE_SIZE", 0, 7 }, { "INVALID_SRV_ID", 0, 8 },
		{ "EARLY", 0, 9 }, { "7", 0, 7 }, { "1", 0, 1 }, { "0", -EINVAL, 0 }, { "10", -EINVAL, 0 },
		{ "5x", -EINVAL, 0 }, { "STALE", -EINVAL, 0 }, { "", -EINVAL, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint32_t why = 0;

		assert_int_equal(ulnet_fault_reject_parse(t[i].in, &why), t[i].rc);
		if (!t[i].rc)
			assert_int_equal(why, t[i].why);
	}
	assert_string_equal(ulnet_fault_reject_name(5), "CONN_STALE");
	assert_string_equal(ulnet_fault_reject_name(0), "?");
	assert_string_equal(ulnet_fault_reject_name(10), "?");
}

/* A connection fits a rule's source and destination in either order, and its local NID. */
static void test_match_conn(void **state)
{
	struct ulnet_nid a = nid("10.0.0.1@tcp"), b = nid("10.0.0.2@tcp"), c = nid("10.0.0.3@tcp");
	struct ulnet_fault_rule r;

	(void)state;
	ulnet_fault_rule_init(&r, ULNET_FAULT_STALL);
	assert_true(ulnet__fault_matches_conn(&r, &a, &b));
	r.dst = b;
	assert_true(ulnet__fault_matches_conn(&r, &a, &b));  /* local a, peer b */
	assert_true(ulnet__fault_matches_conn(&r, &b, &a));  /* local b, peer a: b is an end */
	assert_false(ulnet__fault_matches_conn(&r, &a, &c));
	r.src = a;
	assert_true(ulnet__fault_matches_conn(&r, &b, &a));
	assert_false(ulnet__fault_matches_conn(&r, &c, &b));
	r.local = c;
	assert_false(ulnet__fault_matches_conn(&r, &a, &b));
}

/* ---- matching ---- */

static struct ulnet_hdr hdr(const char *src, const char *dst, enum ulnet_msg_type type, uint32_t portal)
{
	struct ulnet_hdr h;

	memset(&h, 0, sizeof(h));
	h.src_nid = nid(src);
	h.dest_nid = nid(dst);
	h.type = type;
	if (type == ULNET_MSG_PUT)
		h.msg.put.ptl_index = portal;
	if (type == ULNET_MSG_GET)
		h.msg.get.ptl_index = portal;
	return h;
}

static void test_match(void **state)
{
	static const struct {
		const char *r_src, *r_dst, *r_local;
		uint32_t r_portal;
		const char *r_types;
		const char *src, *dst, *local;
		enum ulnet_msg_type type;
		uint32_t portal;
		bool match;
	} t[] = {
		{ "*", "*", "*", ULNET_FAULT_PORTAL_ANY, NULL, "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_PUT, 4, true },
		{ "10.0.0.1@tcp", "*", "*", ULNET_FAULT_PORTAL_ANY, NULL, "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_ACK, 0, true },
		{ "10.0.0.3@tcp", "*", "*", ULNET_FAULT_PORTAL_ANY, NULL, "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_ACK, 0, false },
		{ "*", "10.0.0.2@tcp", "*", ULNET_FAULT_PORTAL_ANY, NULL, "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_GET, 0, true },
		{ "*", "10.0.0.2@tcp1", "*", ULNET_FAULT_PORTAL_ANY, NULL, "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_GET, 0, false },
		{ "*", "*", "10.0.0.9@tcp", ULNET_FAULT_PORTAL_ANY, NULL, "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.9@tcp", ULNET_MSG_GET, 0, true },
		{ "*", "*", "10.0.0.9@tcp", ULNET_FAULT_PORTAL_ANY, NULL, "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_GET, 0, false },
		{ "*", "*", "*", 4, NULL, "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_PUT, 4, true },
		{ "*", "*", "*", 4, NULL, "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_GET, 5, false },
		{ "*", "*", "*", 4, NULL, "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_REPLY, 0, false }, /* no portal */
		{ "*", "*", "*", ULNET_FAULT_PORTAL_ANY, "PUT,GET", "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_GET, 0, true },
		{ "*", "*", "*", ULNET_FAULT_PORTAL_ANY, "PUT,GET", "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_REPLY, 0, false },
		{ "*", "*", "*", ULNET_FAULT_PORTAL_ANY, "ACK", "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.1@tcp", ULNET_MSG_ACK, 0, true },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ulnet_fault_rule r;
		struct ulnet_hdr h = hdr(t[i].src, t[i].dst, t[i].type, t[i].portal);
		struct ulnet_nid local = nid(t[i].local);
		const char *why;

		ulnet_fault_rule_init(&r, ULNET_FAULT_DROP);
		r.rate = 1;
		r.src = nid(t[i].r_src);
		r.dst = nid(t[i].r_dst);
		r.local = nid(t[i].r_local);
		r.portal = t[i].r_portal;
		if (t[i].r_types)
			assert_int_equal(ulnet_fault_types_parse(t[i].r_types, &r.msg_mask, &why), 0);
		if (ulnet__fault_matches(&r, &h, &local) != t[i].match)
			fail_msg("case %zu: want %s", i, t[i].match ? "a match" : "no match");
	}
}

/* The screen: the field every rule names, and never a message turned away that a rule fits. */
static void test_screen(void **state)
{
	static const struct {
		const char *rules[3][3]; /* src, dst, local of up to 3 rules (NULL src: no rule) */
		unsigned field;
	} t[] = {
		{ { { NULL } }, ULNET_FAULT_SCREEN_OFF },
		{ { { "*", "10.0.0.2@tcp", "*" } }, ULNET_FAULT_SCREEN_DST },
		{ { { "10.0.0.1@tcp", "*", "*" } }, ULNET_FAULT_SCREEN_SRC },
		{ { { "*", "*", "10.0.0.1@tcp" } }, ULNET_FAULT_SCREEN_LOCAL },
		{ { { "*", "*", "*" } }, ULNET_FAULT_SCREEN_ALL },
		{ { { "10.0.0.1@tcp", "10.0.0.2@tcp", "*" }, { "*", "10.0.0.3@tcp1", "*" } }, ULNET_FAULT_SCREEN_DST },
		{ { { "10.0.0.1@tcp", "10.0.0.2@tcp", "*" }, { "10.0.0.3@tcp", "*", "*" } }, ULNET_FAULT_SCREEN_SRC },
		{ { { "*", "10.0.0.2@tcp", "*" }, { "10.0.0.3@tcp", "*", "*" } }, ULNET_FAULT_SCREEN_ALL },
		{ { { "*", "10.0.0.2@tcp", "10.0.0.1@tcp" }, { "*", "*", "10.0.0.5@tcp" }, { "9@gni", "*", "10.0.0.1@tcp" } },
		  ULNET_FAULT_SCREEN_LOCAL },
	};
	static const char *const nids[] = { "10.0.0.1@tcp", "10.0.0.2@tcp", "10.0.0.3@tcp", "10.0.0.3@tcp1",
					    "10.0.0.5@tcp", "9@gni", "10.0.0.66@tcp", "[fe80::1]@tcp" };
	const size_t nn = sizeof(nids) / sizeof(nids[0]);

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ulnet_fault_state st[3];
		unsigned n = 0, field;
		uint64_t bits;

		for (; n < 3 && t[i].rules[n][0]; n++) {
			struct ulnet_fault_rule r;

			ulnet_fault_rule_init(&r, n == 1 ? ULNET_FAULT_DELAY : ULNET_FAULT_DROP);
			r.rate = 1;
			r.latency_ms = n == 1 ? 5 : 0;
			r.src = nid(t[i].rules[n][0]);
			r.dst = nid(t[i].rules[n][1]);
			r.local = nid(t[i].rules[n][2]);
			ulnet__fault_state_init(&st[n], &r, 0);
		}
		field = ulnet__fault_screen_make(st, n, &bits);
		if (field != t[i].field)
			fail_msg("case %zu: field %u, want %u", i, field, t[i].field);
		/* every message some rule fits has its bit set */
		for (size_t a = 0; a < nn; a++)
			for (size_t b = 0; b < nn; b++)
				for (size_t c = 0; c < nn; c++) {
					struct ulnet_hdr h = hdr(nids[a], nids[b], ULNET_MSG_PUT, 4);
					struct ulnet_nid local = nid(nids[c]), *key;
					bool fits = false;

					for (unsigned k = 0; k < n; k++)
						fits |= ulnet__fault_matches(&st[k].info.rule, &h, &local);
					if (!fits || field == ULNET_FAULT_SCREEN_ALL)
						continue;
					key = field == ULNET_FAULT_SCREEN_DST ? &h.dest_nid
					      : field == ULNET_FAULT_SCREEN_SRC ? &h.src_nid : &local;
					if (!((bits >> ulnet__fault_nid_bit(key)) & 1))
						fail_msg("case %zu: %s -> %s on %s fits a rule but the screen turns it away",
							 i, nids[a], nids[b], nids[c]);
				}
	}
}

/* ---- 1 in N and interval ---- */

static void test_rate_counter(void **state)
{
	struct ulnet_fault_state st;
	struct ulnet_fault_rule r;
	char got[32] = "";

	(void)state;
	ulnet_fault_rule_init(&r, ULNET_FAULT_DROP);
	r.rate = 3;
	ulnet__fault_state_init(&st, &r, 0);
	for (int i = 0; i < 10; i++)
		got[i] = ulnet__fault_decide(&st, 0) ? 'x' : '.';
	assert_string_equal(got, "..x..x..x.");
	assert_int_equal(st.info.matched, 10);
	assert_int_equal(st.info.acted, 3);
}

static void test_rate_seeded(void **state)
{
	struct ulnet_fault_state a, b;
	struct ulnet_fault_rule r;
	bool same_place = true;
	int first = -1;

	(void)state;
	ulnet_fault_rule_init(&r, ULNET_FAULT_DROP);
	r.rate = 10;
	r.seed = 42;
	ulnet__fault_state_init(&a, &r, 0);
	ulnet__fault_state_init(&b, &r, 0);
	for (int w = 0; w < 50; w++) {
		int acts = 0, at = -1;

		for (int i = 0; i < 10; i++) {
			bool x = ulnet__fault_decide(&a, 0);

			assert_int_equal(x, ulnet__fault_decide(&b, 0)); /* same seed, same places */
			if (x) {
				acts++;
				at = i;
			}
		}
		assert_int_equal(acts, 1); /* exactly one in each window of 10 */
		if (first < 0)
			first = at;
		else if (at != first)
			same_place = false;
	}
	assert_false(same_place); /* not a counter in disguise */
	assert_int_equal(a.info.acted, 50);
}

static void test_interval(void **state)
{
	static const struct {
		uint64_t t_ms;
		bool act;
	} t[] = { { 0, false }, { 1999, false }, { 2000, true }, { 2001, false }, { 3999, false },
		  { 4001, true }, { 9000, true }, { 9001, false } };
	struct ulnet_fault_state st;
	struct ulnet_fault_rule r;

	(void)state;
	ulnet_fault_rule_init(&r, ULNET_FAULT_DELAY);
	r.interval_s = 2;
	r.latency_ms = 1;
	ulnet__fault_state_init(&st, &r, 0);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (ulnet__fault_decide(&st, t[i].t_ms * 1000000ull) != t[i].act)
			fail_msg("at %llu ms: want %s", (unsigned long long)t[i].t_ms, t[i].act ? "act" : "pass");
}

/* ---- the node's list ---- */

static void test_node_list(void **state)
{
	struct ulnet_node_opts opts = { .page_size = 4096 };
	struct ulnet_fault_rule r;
	struct ulnet_fault_info fi;
	struct ulnet_nid a = nid("10.0.0.1@tcp"), b = nid("10.0.0.2@tcp");
	ulnet_node *node;

	(void)state;
	assert_int_equal(ulnet_node_open(&opts, &node), 0);
	ulnet_fault_rule_init(&r, ULNET_FAULT_DROP);
	assert_int_equal(ulnet_fault_add(node, &r), -EINVAL); /* no rate or interval */
	r.rate = 2;
	r.src = a;
	assert_int_equal(ulnet_fault_add(node, &r), 0);
	r.src = b;
	assert_int_equal(ulnet_fault_add(node, &r), 0);
	ulnet_fault_rule_init(&r, ULNET_FAULT_DELAY);
	r.rate = 1;
	r.latency_ms = 5;
	assert_int_equal(ulnet_fault_add(node, &r), 0);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_DROP, 1, &fi), 0);
	assert_true(ulnet_nid_is_any(&fi.rule.dst));
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_DROP, 2, &fi), -ENOENT);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_KINDS, 2, &fi), 0);
	assert_int_equal(fi.rule.kind, ULNET_FAULT_DELAY);
	assert_int_equal(ulnet_fault_del(node, ULNET_FAULT_DROP, &a, NULL), 1);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_DROP, 0, &fi), 0);
	assert_int_equal(fi.rule.rate, 2);
	assert_int_equal(ulnet_fault_del(node, ULNET_FAULT_DROP, NULL, NULL), 1);
	assert_int_equal(ulnet_fault_del(node, ULNET_FAULT_DELAY, NULL, NULL), 1);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_KINDS, 0, &fi), -ENOENT);
	ulnet_node_close(node);
}

/* The LND's questions (fault_lnd.h) on lo's NI: counted per attempt or connection, the first rule
 * that acts wins, @seen asks each rule once; the per-message path never sees these rules. */
static void test_lnd_questions(void **state)
{
	struct ulnet_node_opts opts = { .page_size = 4096 };
	struct ulnet_nid peer = nid("10.0.0.9@tcp"), other = nid("10.0.0.8@tcp");
	struct ulnet_fault_rule r;
	struct ulnet_fault_info fi;
	struct ulnet_fault_lnd fl;
	struct ulnet_ni *ni;
	ulnet_node *node;
	uint64_t seen = 0;

	(void)state;
	assert_int_equal(ulnet_node_open(&opts, &node), 0);
	ni = ulnet__ni_at(node, 0);
	assert_non_null(ni);
	ulnet_fault_rule_init(&r, ULNET_FAULT_HELLO);
	r.rate = 2;
	r.dst = peer;
	assert_int_equal(ulnet_fault_add(node, &r), 0);
	/* only LND-level rules: the data path's screen stays off (no per-message look at all) */
	assert_int_equal(atomic_load(&node->fault_screen), ULNET_FAULT_SCREEN_OFF);
	assert_false(ulnet__fault_lnd(ni, &other, ULNET_FAULT_HELLO, NULL, &fl)); /* another peer */
	assert_false(ulnet__fault_lnd(ni, &peer, ULNET_FAULT_REJECT, NULL, &fl)); /* another kind */
	assert_false(ulnet__fault_lnd(ni, &peer, ULNET_FAULT_HELLO, NULL, &fl));  /* 1 of 2 */
	assert_true(ulnet__fault_lnd(ni, &peer, ULNET_FAULT_HELLO, NULL, &fl));   /* 2 of 2 */
	assert_int_equal(fl.rule.version, ULNET_FAULT_HELLO_VERSION_DEFAULT);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_HELLO, 0, &fi), 0);
	assert_int_equal(fi.matched, 2);
	assert_int_equal(fi.acted, 1);

	ulnet_fault_rule_init(&r, ULNET_FAULT_STALL);
	r.rate = 1;
	r.latency_ms = 300;
	assert_int_equal(ulnet_fault_add(node, &r), 0);
	assert_true(ulnet__fault_lnd(ni, &peer, ULNET_FAULT_STALL, &seen, &fl));
	assert_int_equal(fl.rule.latency_ms, 300);
	assert_int_equal(seen, fl.id);
	assert_false(ulnet__fault_lnd(ni, &peer, ULNET_FAULT_STALL, &seen, &fl)); /* judged once */
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_STALL, 0, &fi), 0);
	assert_int_equal(fi.matched, 1);
	assert_int_equal(fi.acted, 1);
	assert_true(ulnet__fault_lnd_alive(ni, fl.id));

	/* a message rule beside them: the screen is made of it alone (the LND rules name no
	 * destination, this one does) */
	ulnet_fault_rule_init(&r, ULNET_FAULT_DROP);
	r.rate = 1;
	r.dst = other;
	assert_int_equal(ulnet_fault_add(node, &r), 0);
	assert_int_equal(atomic_load(&node->fault_screen), ULNET_FAULT_SCREEN_DST);

	ulnet_fault_reset(node);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_HELLO, 0, &fi), 0);
	assert_int_equal(fi.matched + fi.acted, 0);
	assert_int_equal(ulnet_fault_del(node, ULNET_FAULT_STALL, NULL, NULL), 1);
	assert_false(ulnet__fault_lnd_alive(ni, fl.id));
	ulnet_node_close(node);
}

/* ---- acting on messages over lo ---- */

#define LEN 8192
#define PORTAL 7

struct lo {
	ulnet_node *node;
	ulnet_eq *eq;
	struct ulnet_process_id self;
	uint8_t *src, *dst;
};

static void lo_open(struct lo *l)
{
	struct ulnet_node_opts opts = { .page_size = 4096 };

	memset(l, 0, sizeof(*l));
	assert_int_equal(ulnet_node_open(&opts, &l->node), 0);
	assert_int_equal(ulnet_eq_create(&l->eq), 0);
	l->self.nid = nid("0@lo");
	l->self.pid = ULNET_PID_LUSTRE;
	l->src = malloc(LEN);
	l->dst = calloc(4, LEN);
	for (int i = 0; i < LEN; i++)
		l->src[i] = (uint8_t)(i * 7 + 1);
}

static void lo_close(struct lo *l)
{
	ulnet_node_close(l->node);
	assert_int_equal(ulnet_eq_destroy(l->eq), 0);
	free(l->src);
	free(l->dst);
}

/* A target MD at dst + @slot * LEN for match bits @bits (@threshold operations). */
static void lo_target(struct lo *l, uint64_t bits, int slot, int threshold)
{
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	struct ulnet_md md = { .start = l->dst + (size_t)slot * LEN, .length = LEN, .threshold = threshold,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE, .eq = l->eq };
	struct ulnet_handle me, mdh;

	assert_int_equal(ulnet_me_attach(l->node, PORTAL, &any, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(l->node, me, &md, ULNET_UNLINK, &mdh), 0);
}

static void lo_put(struct lo *l, uint64_t bits, uint64_t tag)
{
	struct ulnet_md md = { .start = l->src, .length = LEN, .threshold = 1, .eq = l->eq };
	struct ulnet_handle h;

	assert_int_equal(ulnet_md_bind(l->node, &md, ULNET_UNLINK, &h), 0);
	assert_int_equal(ulnet_put(l->node, h, ULNET_NOACK_REQ, &l->self, PORTAL, bits, 0, tag), 0);
}

/* The next event of @kind (others skipped); -1 after @ms with none. */
static int lo_wait(struct lo *l, enum ulnet_event_kind kind, int ms, struct ulnet_event *ev)
{
	for (int i = 0; i < 16; i++) {
		if (ulnet_eq_wait(l->eq, ms, ev) != 1)
			return -1;
		if (ev->type == kind)
			return 0;
	}
	return -1;
}

static struct ulnet_fault_rule lo_rule(enum ulnet_fault_kind kind)
{
	struct ulnet_fault_rule r;

	ulnet_fault_rule_init(&r, kind);
	r.rate = 1;
	r.msg_mask = 1u << ULNET_MSG_PUT;
	return r;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_lo_drop_health(void **state)
{
	struct ulnet_fault_rule r = lo_rule(ULNET_FAULT_DROP);
	struct ulnet_fault_info fi;
	struct ulnet_event ev;
	struct lo l;

	(void)state;
	lo_open(&l);
	r.health = ULNET_FAULT_REMOTE_DROPPED;
	assert_int_equal(ulnet_fault_add(l.node, &r), 0);
	lo_target(&l, 1, 0, 1);
	lo_put(&l, 1, 0);
	assert_int_equal(lo_wait(&l, ULNET_EVENT_SEND, 5000, &ev), 0);
	assert_int_equal(ev.status, -ECONNRESET); /* the simulated LND status */
	assert_int_equal(lo_wait(&l, ULNET_EVENT_PUT, 100, &ev), -1);
	assert_int_equal(ulnet_fault_info_get(l.node, ULNET_FAULT_DROP, 0, &fi), 0);
	assert_int_equal(fi.acted, 1);
	/* reset: counters to 0, the rule stays */
	ulnet_fault_reset(l.node);
	assert_int_equal(ulnet_fault_info_get(l.node, ULNET_FAULT_DROP, 0, &fi), 0);
	assert_int_equal(fi.matched + fi.acted, 0);
	lo_close(&l);
}

/* Every LND-level kind fitting everything: a PUT over lo goes through untouched and uncounted. */
static void test_lo_lnd_kinds_ignored(void **state)
{
	struct ulnet_fault_info fi;
	struct ulnet_event ev;
	struct lo l;

	(void)state;
	lo_open(&l);
	for (int k = ULNET_FAULT_FIRST_LND; k < ULNET_FAULT_KINDS; k++) {
		struct ulnet_fault_rule r;

		ulnet_fault_rule_init(&r, (enum ulnet_fault_kind)k);
		r.rate = 1;
		r.reason = k == ULNET_FAULT_REJECT ? 3 : 0;
		assert_int_equal(ulnet_fault_add(l.node, &r), 0);
	}
	lo_target(&l, 1, 0, 1);
	lo_put(&l, 1, 0);
	assert_int_equal(lo_wait(&l, ULNET_EVENT_PUT, 5000, &ev), 0);
	assert_int_equal(ev.status, 0);
	assert_memory_equal(l.dst, l.src, LEN);
	for (unsigned i = 0; ulnet_fault_info_get(l.node, ULNET_FAULT_KINDS, i, &fi) == 0; i++)
		assert_int_equal(fi.matched + fi.acted, 0);
	lo_close(&l);
}

static void test_lo_corrupt(void **state)
{
	struct ulnet_fault_rule r = lo_rule(ULNET_FAULT_CORRUPT);
	struct ulnet_event ev;
	uint8_t keep[LEN];
	int diff = 0;
	struct lo l;

	(void)state;
	lo_open(&l);
	memcpy(keep, l.src, LEN);
	assert_int_equal(ulnet_fault_add(l.node, &r), 0);
	lo_target(&l, 1, 0, 1);
	lo_put(&l, 1, 0);
	assert_int_equal(lo_wait(&l, ULNET_EVENT_PUT, 5000, &ev), 0);
	assert_int_equal(ev.status, 0);
	for (int i = 0; i < LEN; i++)
		diff += l.dst[i] != keep[i];
	assert_int_equal(diff, 1);                   /* one byte flipped on the way */
	assert_memory_equal(l.src, keep, LEN);       /* the sender's memory untouched */
	lo_close(&l);
}

static void test_lo_delay(void **state)
{
	struct ulnet_fault_rule r = lo_rule(ULNET_FAULT_DELAY);
	struct ulnet_event ev;
	uint64_t t0;
	struct lo l;

	(void)state;
	lo_open(&l);
	r.latency_ms = 60;
	assert_int_equal(ulnet_fault_add(l.node, &r), 0);
	lo_target(&l, 1, 0, 1);
	t0 = now_ms();
	lo_put(&l, 1, 0);
	assert_int_equal(lo_wait(&l, ULNET_EVENT_PUT, 5000, &ev), 0);
	assert_true(now_ms() - t0 >= 60);
	assert_memory_equal(l.dst, l.src, LEN);
	lo_close(&l);
}

/* Reorder: the first PUT waits for the second and goes after it; a lone one goes at its hold time. */
static void test_lo_reorder(void **state)
{
	struct ulnet_fault_rule r = lo_rule(ULNET_FAULT_REORDER);
	struct ulnet_event ev;
	uint64_t t0;
	struct lo l;

	(void)state;
	lo_open(&l);
	r.rate = 2; /* the 2nd, 4th... are held: the 1st goes, the 2nd waits for the 3rd */
	r.hold_ms = 200;
	assert_int_equal(ulnet_fault_add(l.node, &r), 0);
	lo_target(&l, 1, 0, 3);
	lo_put(&l, 1, 1);
	lo_put(&l, 1, 2);
	lo_put(&l, 1, 3);
	for (uint64_t want = 1, i = 0; i < 3; i++) {
		static const uint64_t order[3] = { 1, 3, 2 };

		assert_int_equal(lo_wait(&l, ULNET_EVENT_PUT, 5000, &ev), 0);
		want = order[i];
		assert_true(ev.hdr_data == want);
	}
	/* the 4th is held and nothing follows: it goes at its hold time */
	lo_target(&l, 2, 1, 1);
	t0 = now_ms();
	lo_put(&l, 2, 4);
	assert_int_equal(lo_wait(&l, ULNET_EVENT_PUT, 5000, &ev), 0);
	assert_true(ev.hdr_data == 4);
	assert_true(now_ms() - t0 >= 200);
	lo_close(&l);
}

/* Duplicate: what the receiver does with the second copy is what LNet does with any message, as the
 * header has no sequence number. Into an MD used up by the first (threshold 1: every selftest bulk
 * MD, every REPLY and ACK's MD) it matches nothing and is dropped; into an MD that takes more it is
 * delivered again (docs/faults.md). */
static void test_lo_duplicate(void **state)
{
	struct ulnet_fault_rule r = lo_rule(ULNET_FAULT_DUPLICATE);
	struct ulnet_stats before, after;
	struct ulnet_event ev;
	struct lo l;

	(void)state;
	lo_open(&l);
	assert_int_equal(ulnet_fault_add(l.node, &r), 0);
	lo_target(&l, 1, 0, 1);
	ulnet_stats_get(l.node, &before);
	lo_put(&l, 1, 1);
	assert_int_equal(lo_wait(&l, ULNET_EVENT_PUT, 5000, &ev), 0);
	assert_memory_equal(l.dst, l.src, LEN);
	assert_int_equal(lo_wait(&l, ULNET_EVENT_PUT, 200, &ev), -1); /* the copy found no MD */
	ulnet_stats_get(l.node, &after);
	assert_true(after.drop_count == before.drop_count + 1);
	/* an MD that takes two: the copy lands too */
	lo_target(&l, 2, 1, 2);
	lo_put(&l, 2, 2);
	assert_int_equal(lo_wait(&l, ULNET_EVENT_PUT, 5000, &ev), 0);
	assert_int_equal(lo_wait(&l, ULNET_EVENT_PUT, 5000, &ev), 0);
	assert_true(ev.hdr_data == 2);
	lo_close(&l);
}

/* ---- the config file's fault: section ---- */

struct sink {
	char s[8192];
	size_t len;
};

static void sink_write(void *arg, const char *s, size_t len)
{
	struct sink *k = arg;

	if (k->len + len < sizeof(k->s)) {
		memcpy(k->s + k->len, s, len);
		k->len += len;
		k->s[k->len] = '\0';
	}
}

static const char fault_yaml[] =
	"fault:\n"
	"    - kind: drop\n"
	"      src: '*'\n"
	"      dst: 10.0.0.2@tcp\n"
	"      rate: 10\n"
	"      message: PUT,GET\n"
	"      health_error: remote_dropped\n"
	"    - kind: delay\n"
	"      interval: 3\n"
	"      latency: 5\n"
	"      portal: 12\n"
	"    - kind: reorder\n"
	"      local_nid: 10.0.0.1@tcp\n"
	"      rate: 4\n"
	"      seed: 7\n"
	"      hold: 50\n"
	"      matched: 3\n"
	"      reordered: 1\n"
	"    - kind: hello\n"
	"      dst: 10.0.0.2@tcp\n"
	"      rate: 2\n"
	"      version: 9\n"
	"      spoiled: 4\n"
	"    - kind: reject\n"
	"      src: 10.0.0.2@o2ib\n"
	"      interval: 5\n"
	"      reason: CONN_STALE\n"
	"    - kind: stall\n"
	"      rate: 1\n"
	"      latency: 1500\n"
	"      stalled: 0\n"
	"    - kind: stall\n"
	"      rate: 3\n";

static void check_rules(ulnet_node *node)
{
	struct ulnet_fault_info fi;
	struct ulnet_nid dst = nid("10.0.0.2@tcp");

	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_KINDS, 0, &fi), 0);
	assert_int_equal(fi.rule.kind, ULNET_FAULT_DROP);
	assert_true(ulnet_nid_is_any(&fi.rule.src));
	assert_true(ulnet_nid_equal(&fi.rule.dst, &dst));
	assert_int_equal(fi.rule.rate, 10);
	assert_int_equal(fi.rule.msg_mask, (1u << ULNET_MSG_PUT) | (1u << ULNET_MSG_GET));
	assert_int_equal(fi.rule.health, ULNET_FAULT_REMOTE_DROPPED);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_KINDS, 1, &fi), 0);
	assert_int_equal(fi.rule.kind, ULNET_FAULT_DELAY);
	assert_int_equal(fi.rule.interval_s, 3);
	assert_int_equal(fi.rule.latency_ms, 5);
	assert_int_equal(fi.rule.portal, 12);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_KINDS, 2, &fi), 0);
	assert_int_equal(fi.rule.kind, ULNET_FAULT_REORDER);
	assert_int_equal(fi.rule.seed, 7);
	assert_int_equal(fi.rule.hold_ms, 50);
	assert_int_equal(fi.matched, 0); /* counters are not configuration */
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_KINDS, 3, &fi), 0);
	assert_int_equal(fi.rule.kind, ULNET_FAULT_HELLO);
	assert_true(ulnet_nid_equal(&fi.rule.dst, &dst));
	assert_int_equal(fi.rule.rate, 2);
	assert_int_equal(fi.rule.version, 9);
	assert_int_equal(fi.matched + fi.acted, 0);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_KINDS, 4, &fi), 0);
	assert_int_equal(fi.rule.kind, ULNET_FAULT_REJECT);
	assert_int_equal(fi.rule.interval_s, 5);
	assert_int_equal(fi.rule.reason, 5);
	assert_int_equal(fi.rule.portal, ULNET_FAULT_PORTAL_ANY);
	assert_int_equal(fi.rule.msg_mask, 0);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_KINDS, 5, &fi), 0);
	assert_int_equal(fi.rule.kind, ULNET_FAULT_STALL);
	assert_int_equal(fi.rule.latency_ms, 1500);
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_KINDS, 6, &fi), 0);
	assert_int_equal(fi.rule.kind, ULNET_FAULT_STALL);
	assert_int_equal(fi.rule.rate, 3);
	assert_int_equal(fi.rule.latency_ms, 0); /* until deleted */
	assert_int_equal(ulnet_fault_info_get(node, ULNET_FAULT_KINDS, 7, &fi), -ENOENT);
}

/* A node starts with the file's rules; its export reads back as the same rules, in YAML and JSON. */
static void test_config_round_trip(void **state)
{
	struct ulnet_config *cfg = NULL;
	ulnet_node *node, *again;
	char err[256] = "";

	(void)state;
	assert_int_equal(ulnet_config_parse("f.yaml", fault_yaml, strlen(fault_yaml), &cfg, err, sizeof(err)), 0);
	assert_int_equal(ulnet_config_node_open(cfg, &node, err, sizeof(err)), 0);
	ulnet_config_free(cfg);
	check_rules(node);
	for (int json = 0; json < 2; json++) {
		struct sink *k = calloc(1, sizeof(*k));
		struct ulnet_writer w;

		ulnet_writer_init(&w, sink_write, k, json);
		assert_int_equal(ulnet_config_export(node, NULL, NULL, NULL, &w), 0);
		cfg = NULL;
		if (ulnet_config_parse("export", k->s, k->len, &cfg, err, sizeof(err)))
			fail_msg("%s\n%s", err, k->s);
		assert_int_equal(ulnet_config_node_open(cfg, &again, err, sizeof(err)), 0);
		check_rules(again);
		ulnet_node_close(again);
		ulnet_config_free(cfg);
		free(k);
	}
	ulnet_node_close(node);
}

static void test_config_errors(void **state)
{
	static const struct {
		const char *yaml, *msg;
	} t[] = {
		{ "fault:\n  - rate: 3\n", "f.yaml:2: fault entry needs 'kind'" },
		{ "fault:\n  - kind: mangle\n    rate: 3\n", "f.yaml:2: bad kind 'mangle'" },
		{ "fault:\n  - kind: drop\n    rate: 3\n    color: red\n", "f.yaml:4: unknown key 'color' in fault" },
		{ "fault:\n  - kind: drop\n", "f.yaml:2: fault drop: give one of --rate N" },
		{ "fault:\n  - kind: delay\n    rate: 1\n", "f.yaml:2: fault delay: a delay rule needs --latency" },
		{ "fault:\n  - kind: delay\n    rate: 1\n    latency: 5\n    health_error: local_error\n",
		  "f.yaml:2: fault delay: --health_error is for drop rules" },
		{ "fault:\n  - kind: drop\n    rate: 1\n    health_error: oops\n", "f.yaml:4: bad health_error 'oops'" },
		{ "fault:\n  - kind: drop\n    rate: 1\n    src: 1.2.3.4@nowhere\n", "f.yaml:4: bad src '1.2.3.4@nowhere'" },
		{ "fault:\n  - kind: drop\n    rate: 1\n    portal: 64\n", "f.yaml:4:" },
		{ "fault:\n  - kind: drop\n    rate: 1\n    message: PUT,PUSH\n", "f.yaml:4: bad message 'PUT,PUSH'" },
		{ "fault:\n  - kind: reject\n    rate: 1\n", "f.yaml:2: fault reject: a reject rule needs --reason" },
		{ "fault:\n  - kind: reject\n    rate: 1\n    reason: 10\n", "f.yaml:4: bad reason '10'" },
		{ "fault:\n  - kind: reject\n    rate: 1\n    reason: STALE\n", "f.yaml:4: bad reason 'STALE'" },
		{ "fault:\n  - kind: hello\n    rate: 1\n    latency: 5\n",
		  "f.yaml:2: fault hello: --latency is for delay and stall rules" },
		{ "fault:\n  - kind: stall\n    rate: 1\n    message: PUT\n", "f.yaml:2: fault stall: --portal and --message" },
		{ "fault:\n  - kind: drop\n    rate: 1\n    version: 3\n", "f.yaml:2: fault drop: --version is for hello" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ulnet_config *cfg = NULL;
		char err[256] = "";

		assert_int_equal(ulnet_config_parse("f.yaml", t[i].yaml, strlen(t[i].yaml), &cfg, err, sizeof(err)), -EINVAL);
		if (strncmp(err, t[i].msg, strlen(t[i].msg)))
			fail_msg("case %zu: got '%s', want '%s...'", i, err, t[i].msg);
		assert_null(strchr(err, '\n'));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),         cmocka_unit_test(test_types),
		cmocka_unit_test(test_check),         cmocka_unit_test(test_match),
		cmocka_unit_test(test_screen),
		cmocka_unit_test(test_check_lnd),     cmocka_unit_test(test_reject_names),
		cmocka_unit_test(test_match_conn),    cmocka_unit_test(test_lnd_questions),
		cmocka_unit_test(test_lo_lnd_kinds_ignored),
		cmocka_unit_test(test_rate_counter),  cmocka_unit_test(test_rate_seeded),
		cmocka_unit_test(test_interval),      cmocka_unit_test(test_node_list),
		cmocka_unit_test(test_lo_drop_health), cmocka_unit_test(test_lo_corrupt),
		cmocka_unit_test(test_lo_delay),      cmocka_unit_test(test_lo_reorder),
		cmocka_unit_test(test_lo_duplicate),  cmocka_unit_test(test_config_round_trip),
		cmocka_unit_test(test_config_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
