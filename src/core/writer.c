/* SPDX-License-Identifier: MIT */
/* The YAML/JSON writer (include/ulnet/writer.h). Pure: text goes only to the caller's write function. */
#include <stdio.h>
#include <string.h>
#include <ulnet/writer.h>

#include "internal.h"

static void put(struct ulnet_writer *w, const char *s, size_t len)
{
	w->write(w->arg, s, len);
}

static void puts_(struct ulnet_writer *w, const char *s)
{
	put(w, s, strlen(s));
}

static void pad(struct ulnet_writer *w, int n)
{
	static const char sp[] = "                                                                ";

	while (n > 0) {
		int k = n < (int)sizeof(sp) - 1 ? n : (int)sizeof(sp) - 1;

		put(w, sp, (size_t)k);
		n -= k;
	}
}

/* A JSON string, which is also a valid double-quoted YAML scalar: every byte below 0x20 and DEL are
 * escaped (YAML may not carry them raw either), so nothing a peer or a user typed can break a line
 * or vanish from it. */
static void quoted(struct ulnet_writer *w, const char *s)
{
	const char *run = s;

	put(w, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];

		if (c >= 0x20 && c != 0x7f && c != '"' && c != '\\')
			continue;
		put(w, run, (size_t)(s - run));
		run = s + 1;
		if (c == '"' || c == '\\')
			snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c == '\n')
			snprintf(esc, sizeof(esc), "\\n");
		else if (c == '\t')
			snprintf(esc, sizeof(esc), "\\t");
		else if (c == '\r')
			snprintf(esc, sizeof(esc), "\\r");
		else
			snprintf(esc, sizeof(esc), "\\u%04x", c);
		puts_(w, esc);
	}
	put(w, run, (size_t)(s - run));
	put(w, "\"", 1);
}

/* Plain YAML scalars are fine for NIDs, names and paths; quote what YAML would read otherwise. */
static bool yaml_needs_quotes(const char *s)
{
	static const char *const words[] = { "true", "false", "yes", "no", "on", "off", "null", "~",
					     "True", "False", "Yes", "No", "On", "Off", "Null", "NULL" };

	if (!*s || strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]) || s[strlen(s) - 1] == ' ')
		return true;
	if (strstr(s, ": ") || strstr(s, " #") || s[strlen(s) - 1] == ':')
		return true;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f || *p == '"' || *p == '\\')
			return true;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(s, words[i]))
			return true;
	return false;
}

void ulnet_writer_init(struct ulnet_writer *w, ulnet_write_fn fn, void *arg, bool json)
{
	memset(w, 0, sizeof(*w));
	w->write = fn;
	w->arg = arg;
	w->json = json;
}

/* Start an entry in the current container: JSON comma and key; YAML indentation and key. @inline_val
 * says the value follows on the same line (a scalar). */
static void entry(struct ulnet_writer *w, const char *key, bool inline_val)
{
	__typeof__(w->st[0]) *top;

	if (!w->depth)
		return; /* the root */
	top = &w->st[w->depth - 1];
	if (w->json) {
		if (top->count++)
			put(w, ",", 1);
		if (top->kind == 'm') {
			quoted(w, key ? key : "");
			put(w, ":", 1);
		}
		return;
	}
	if (top->kind == 'm') {
		if (top->dash_pending)
			top->dash_pending = false;
		else
			pad(w, top->col);
		if (key && yaml_needs_quotes(key))
			quoted(w, key);
		else
			puts_(w, key ? key : "");
		puts_(w, inline_val ? ": " : ":\n");
	} else {
		pad(w, top->col);
		put(w, "- ", 2);
	}
	top->count++;
}

static void push(struct ulnet_writer *w, char kind, const char *key)
{
	int col = 0;
	bool dash = false;

	if (w->depth == ULNET_WRITER_DEPTH) {
		w->overflow = true;
		return;
	}
	if (w->depth) {
		const __typeof__(w->st[0]) *top = &w->st[w->depth - 1];

		if (top->kind == 'l') {
			/* list item: a mapping starts on the dash line; a list in a list gets its own line */
			entry(w, NULL, kind == 'm');
			col = top->col + 2;
			dash = kind == 'm';
			if (kind == 'l' && !w->json)
				put(w, "\n", 1);
		} else {
			entry(w, key, false);
			col = kind == 'm' ? top->col + 4 : (top->col ? top->col + 2 : 4);
		}
	}
	if (w->json)
		put(w, kind == 'm' ? "{" : "[", 1);
	w->st[w->depth].kind = kind;
	w->st[w->depth].col = col;
	w->st[w->depth].dash_pending = dash;
	w->st[w->depth].count = 0;
	w->depth++;
}

void ulnet_writer_map(struct ulnet_writer *w, const char *key)
{
	push(w, 'm', key);
}

void ulnet_writer_list(struct ulnet_writer *w, const char *key)
{
	push(w, 'l', key);
}

void ulnet_writer_end(struct ulnet_writer *w)
{
	if (!w->depth)
		return;
	w->depth--;
	if (w->json) {
		put(w, w->st[w->depth].kind == 'm' ? "}" : "]", 1);
		if (!w->depth)
			put(w, "\n", 1);
	} else if (w->st[w->depth].dash_pending) {
		put(w, "{}\n", 3); /* an empty list item */
	}
}

static void scalar(struct ulnet_writer *w, const char *key, const char *val, bool is_string)
{
	entry(w, key, true);
	if (is_string && (w->json || yaml_needs_quotes(val)))
		quoted(w, val);
	else
		puts_(w, val);
	if (!w->json)
		put(w, "\n", 1);
}

void ulnet_writer_str(struct ulnet_writer *w, const char *key, const char *val)
{
	scalar(w, key, val ? val : "", true);
}

void ulnet_writer_raw(struct ulnet_writer *w, const char *key, const char *val)
{
	scalar(w, key, val ? val : "", false);
}

void ulnet_writer_int(struct ulnet_writer *w, const char *key, long long val)
{
	char b[32];

	snprintf(b, sizeof(b), "%lld", val);
	scalar(w, key, b, false);
}

void ulnet_writer_uint(struct ulnet_writer *w, const char *key, unsigned long long val)
{
	char b[32];

	snprintf(b, sizeof(b), "%llu", val);
	scalar(w, key, b, false);
}

void ulnet_writer_bool(struct ulnet_writer *w, const char *key, bool val)
{
	scalar(w, key, w->json ? (val ? "true" : "false") : (val ? "True" : "False"), false);
}

void ulnet_writer_nid(struct ulnet_writer *w, const char *key, const struct ulnet_nid *nid)
{
	char b[ULNET_NID_STRLEN];

	ulnet_writer_str(w, key, ulnet_nid_format(nid, b, sizeof(b)));
}
