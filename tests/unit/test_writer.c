/* SPDX-License-Identifier: MIT */
/* The one YAML/JSON writer (ulnet/writer.h): lnetctl's YAML layout and one-line JSON from the same
 * calls, and strings with control characters escaped in both renderings, never dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ulnet/ulnet.h"
#include "text_sink.h"


/* One document touching every construct: nested maps, a list of maps, a list of scalars. */
static void doc(struct text_sink *b, bool json, const char *name)
{
	struct ulnet_writer w;
	struct ulnet_nid lo;

	ulnet_nid_from_nid4(ULNET_NID_LO_0, &lo);
	memset(b, 0, sizeof(*b));
	ulnet_writer_init(&w, text_sink_write, b, json);
	ulnet_writer_map(&w, NULL);
	ulnet_writer_list(&w, "net");
	ulnet_writer_map(&w, NULL);
	ulnet_writer_str(&w, "net type", "lo");
	ulnet_writer_list(&w, "local NI(s)");
	ulnet_writer_map(&w, NULL);
	ulnet_writer_nid(&w, "nid", &lo);
	ulnet_writer_str(&w, "name", name);
	ulnet_writer_map(&w, "tunables");
	ulnet_writer_int(&w, "peer_timeout", -1);
	ulnet_writer_uint(&w, "credits", 256);
	ulnet_writer_bool(&w, "up", true);
	ulnet_writer_raw(&w, "time (ms)", "0.042");
	ulnet_writer_end(&w);
	ulnet_writer_end(&w);
	ulnet_writer_end(&w);
	ulnet_writer_end(&w);
	ulnet_writer_end(&w);
	ulnet_writer_end(&w);
	assert_int_equal(w.depth, 0);
	assert_false(w.overflow);
}

static void test_layout(void **state)
{
	struct text_sink b;

	(void)state;
	doc(&b, false, "n1");
	assert_string_equal(b.s, "net:\n"
				 "    - net type: lo\n"
				 "      local NI(s):\n"
				 "        - nid: 0@lo\n"
				 "          name: n1\n"
				 "          tunables:\n"
				 "              peer_timeout: -1\n"
				 "              credits: 256\n"
				 "              up: True\n"
				 "              time (ms): 0.042\n");
	doc(&b, true, "n1");
	assert_string_equal(b.s, "{\"net\":[{\"net type\":\"lo\",\"local NI(s)\":[{\"nid\":\"0@lo\",\"name\":\"n1\","
				 "\"tunables\":{\"peer_timeout\":-1,\"credits\":256,\"up\":true,\"time (ms)\":0.042}}]}]}\n");
}

/* Every byte below 0x20, DEL, quote and backslash: escaped in JSON and in YAML (a double-quoted
 * scalar), with the bytes around them kept. */
static void test_escaping(void **state)
{
	static const struct {
		const char *in, *json, *yaml;
	} cases[] = {
		{ "a\nb", "\"a\\nb\"", "\"a\\nb\"" },
		{ "tab\there", "\"tab\\there\"", "\"tab\\there\"" },
		{ "cr\r", "\"cr\\r\"", "\"cr\\r\"" },
		{ "\x01x\x1f", "\"\\u0001x\\u001f\"", "\"\\u0001x\\u001f\"" },
		{ "del\x7f", "\"del\\u007f\"", "\"del\\u007f\"" },
		{ "q\"b\\", "\"q\\\"b\\\\\"", "\"q\\\"b\\\\\"" },
		{ "\x1b[31mred", "\"\\u001b[31mred\"", "\"\\u001b[31mred\"" },
		{ "plain", "\"plain\"", "plain" },
		{ "", "\"\"", "\"\"" },
		{ "true", "\"true\"", "\"true\"" },         /* YAML would read a bool */
		{ "a: b", "\"a: b\"", "\"a: b\"" },         /* YAML would read a mapping */
		{ "-x", "\"-x\"", "\"-x\"" },               /* YAML would read a list item */
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ulnet_writer w;
		struct text_sink b = { 0 };
		char want[128];

		ulnet_writer_init(&w, text_sink_write, &b, true);
		ulnet_writer_map(&w, NULL);
		ulnet_writer_str(&w, "k", cases[i].in);
		ulnet_writer_end(&w);
		snprintf(want, sizeof(want), "{\"k\":%s}\n", cases[i].json);
		assert_string_equal(b.s, want);

		memset(&b, 0, sizeof(b));
		ulnet_writer_init(&w, text_sink_write, &b, false);
		ulnet_writer_map(&w, NULL);
		ulnet_writer_str(&w, "k", cases[i].in);
		ulnet_writer_end(&w);
		snprintf(want, sizeof(want), "k: %s\n", cases[i].yaml);
		assert_string_equal(b.s, want);
	}
}

/* Nesting deeper than the writer holds is reported, not written past its state. */
static void test_depth(void **state)
{
	struct ulnet_writer w;
	struct text_sink b = { 0 };

	(void)state;
	ulnet_writer_init(&w, text_sink_write, &b, true);
	for (int i = 0; i < ULNET_WRITER_DEPTH + 2; i++)
		ulnet_writer_list(&w, NULL);
	assert_true(w.overflow);
	assert_int_equal(w.depth, ULNET_WRITER_DEPTH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_depth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
