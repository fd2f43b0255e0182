/* SPDX-License-Identifier: MIT */
/* What command handlers write with (ulnetd.h): the output buffer, the YAML/JSON emitter, and the
 * option parser. No I/O except ulnetd_out_flush(). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_proto.h"
#include "ulnetd.h"

/* ---- buffer ---- */

static void out_reserve(struct ulnetd_out *out, size_t more)
{
	size_t cap;
	char *b;

	if (out->err || out->len + more + 1 <= out->cap)
		return;
	cap = out->cap ? out->cap : 1024;
	while (cap < out->len + more + 1)
		cap *= 2;
	if (cap > ULNETD_PROTO_MAX_BODY || !(b = realloc(out->buf, cap))) {
		out->err = -ENOMEM;
		return;
	}
	out->buf = b;
	out->cap = cap;
}

void ulnetd_out_write(struct ulnetd_out *out, const char *s, size_t len)
{
	out_reserve(out, len);
	if (out->err)
		return;
	memcpy(out->buf + out->len, s, len);
	out->len += len;
	out->buf[out->len] = '\0';
}

void ulnetd_out_printf(struct ulnetd_out *out, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	out_reserve(out, (size_t)n);
	if (out->err)
		return;
	va_start(ap, fmt);
	vsnprintf(out->buf + out->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	out->len += (size_t)n;
}

int ulnetd_out_flush(struct ulnetd_out *out)
{
	int rc;

	if (out->err)
		return out->err;
	if (!out->len)
		return 0;
	rc = ulnetd_proto_send_frame(out->fd, 0, 0, out->buf, out->len);
	out->len = 0;
	if (rc)
		out->err = rc;
	return rc;
}

int ulnetd_errorf(struct ulnetd_out *out, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->errmsg, sizeof(out->errmsg), fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- emitter ---- */

static void pad(struct ulnetd_out *out, int n)
{
	static const char sp[] = "                                                                ";

	while (n > 0) {
		int k = n < (int)sizeof(sp) - 1 ? n : (int)sizeof(sp) - 1;

		ulnetd_out_write(out, sp, (size_t)k);
		n -= k;
	}
}

static void json_str(struct ulnetd_out *out, const char *s)
{
	ulnetd_out_write(out, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			ulnetd_out_printf(out, "\\%c", c);
		else if (c == '\n')
			ulnetd_out_write(out, "\\n", 2);
		else if (c == '\t')
			ulnetd_out_write(out, "\\t", 2);
		else if (c < 0x20)
			ulnetd_out_printf(out, "\\u%04x", c);
		else
			ulnetd_out_write(out, (const char *)&c, 1);
	}
	ulnetd_out_write(out, "\"", 1);
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
		if ((unsigned char)*p < 0x20 || *p == '"' || *p == '\\')
			return true;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(s, words[i]))
			return true;
	return false;
}

void ulnetd_emit_init(struct ulnetd_emit *e, struct ulnetd_out *out, bool json)
{
	memset(e, 0, sizeof(*e));
	e->out = out;
	e->json = json;
}

/* Start an entry in the current container: JSON comma and key; YAML indentation and key. @inline_val
 * says the value follows on the same line (a scalar). */
static void entry(struct ulnetd_emit *e, const char *key, bool inline_val)
{
	struct ulnetd_out *o = e->out;

	if (!e->depth)
		return; /* the root */
	if (e->json) {
		if (e->st[e->depth - 1].count++)
			ulnetd_out_write(o, ",", 1);
		if (e->st[e->depth - 1].kind == 'm') {
			json_str(o, key ? key : "");
			ulnetd_out_write(o, ":", 1);
		}
		return;
	}
	if (e->st[e->depth - 1].kind == 'm') {
		if (e->st[e->depth - 1].dash_pending)
			e->st[e->depth - 1].dash_pending = false;
		else
			pad(o, e->st[e->depth - 1].col);
		ulnetd_out_printf(o, "%s:%s", key ? key : "", inline_val ? " " : "\n");
	} else {
		pad(o, e->st[e->depth - 1].col);
		ulnetd_out_write(o, "- ", 2);
	}
	e->st[e->depth - 1].count++;
}

static void push(struct ulnetd_emit *e, char kind, const char *key)
{
	int col = 0;
	bool dash = false;

	if (e->depth == ULNETD_EMIT_DEPTH) {
		e->out->err = -E2BIG;
		return;
	}
	if (e->depth) {
		const __typeof__(e->st[0]) *top = &e->st[e->depth - 1];

		if (top->kind == 'l') {
			/* list item: a mapping starts on the dash line; a list in a list gets its own line */
			entry(e, NULL, kind == 'm');
			col = top->col + 2;
			dash = kind == 'm';
			if (kind == 'l' && !e->json)
				ulnetd_out_write(e->out, "\n", 1);
		} else {
			entry(e, key, false);
			col = kind == 'm' ? top->col + 4 : (top->col ? top->col + 2 : 4);
		}
	}
	if (e->json)
		ulnetd_out_write(e->out, kind == 'm' ? "{" : "[", 1);
	e->st[e->depth].kind = kind;
	e->st[e->depth].col = col;
	e->st[e->depth].dash_pending = dash;
	e->st[e->depth].count = 0;
	e->depth++;
}

void ulnetd_emit_map(struct ulnetd_emit *e, const char *key)
{
	push(e, 'm', key);
}

void ulnetd_emit_list(struct ulnetd_emit *e, const char *key)
{
	push(e, 'l', key);
}

void ulnetd_emit_end(struct ulnetd_emit *e)
{
	if (!e->depth)
		return;
	e->depth--;
	if (e->json) {
		ulnetd_out_write(e->out, e->st[e->depth].kind == 'm' ? "}" : "]", 1);
		if (!e->depth)
			ulnetd_out_write(e->out, "\n", 1);
	} else if (e->st[e->depth].dash_pending) {
		ulnetd_out_write(e->out, "{}\n", 3); /* an empty list item */
	}
}

static void scalar(struct ulnetd_emit *e, const char *key, const char *val, bool quote_json)
{
	entry(e, key, true);
	if (e->json) {
		if (quote_json)
			json_str(e->out, val);
		else
			ulnetd_out_write(e->out, val, strlen(val));
		return;
	}
	if (quote_json && yaml_needs_quotes(val)) {
		json_str(e->out, val); /* a JSON string is a valid double-quoted YAML scalar */
	} else {
		ulnetd_out_write(e->out, val, strlen(val));
	}
	ulnetd_out_write(e->out, "\n", 1);
}

void ulnetd_emit_str(struct ulnetd_emit *e, const char *key, const char *val)
{
	scalar(e, key, val ? val : "", true);
}

void ulnetd_emit_raw(struct ulnetd_emit *e, const char *key, const char *val)
{
	scalar(e, key, val, false);
}

void ulnetd_emit_int(struct ulnetd_emit *e, const char *key, long long val)
{
	char b[32];

	snprintf(b, sizeof(b), "%lld", val);
	scalar(e, key, b, false);
}

void ulnetd_emit_uint(struct ulnetd_emit *e, const char *key, unsigned long long val)
{
	char b[32];

	snprintf(b, sizeof(b), "%llu", val);
	scalar(e, key, b, false);
}

void ulnetd_emit_bool(struct ulnetd_emit *e, const char *key, bool val)
{
	scalar(e, key, e->json ? (val ? "true" : "false") : (val ? "True" : "False"), false);
}

/* ---- options ---- */

int ulnetd_parse_args(struct ulnetd_out *out, const char *cmd, int argc, char **argv,
		      const struct ulnetd_opt *opts, size_t nopts, char **pos, int maxpos, int *npos)
{
	*npos = 0;
	for (int i = 0; i < argc; i++) {
		const struct ulnetd_opt *o = NULL;
		const char *a = argv[i], *val = NULL, *eq;
		size_t nlen;

		if (a[0] != '-' || !a[1]) {
			if (*npos == maxpos)
				return ulnetd_errorf(out, -EINVAL, "%s: unexpected argument '%s'", cmd, a);
			pos[(*npos)++] = argv[i];
			continue;
		}
		eq = a[1] == '-' ? strchr(a, '=') : NULL;
		nlen = eq ? (size_t)(eq - a) : strlen(a);
		for (size_t k = 0; k < nopts && !o; k++) {
			if ((strlen(opts[k].name) == nlen && !strncmp(opts[k].name, a, nlen)) ||
			    (opts[k].alias && !eq && !strcmp(opts[k].alias, a)))
				o = &opts[k];
		}
		if (!o)
			return ulnetd_errorf(out, -EINVAL, "%s: unknown option '%.*s'", cmd, (int)nlen, a);
		if (o->type == ULNETD_OPT_FLAG) {
			if (eq)
				return ulnetd_errorf(out, -EINVAL, "%s: option '%s' takes no value", cmd, o->name);
			*(bool *)o->val = true;
			continue;
		}
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			return ulnetd_errorf(out, -EINVAL, "%s: option '%s' needs a value", cmd, o->name);
		if (o->type == ULNETD_OPT_STR) {
			*(const char **)o->val = val;
		} else {
			char *end;
			long long x;

			errno = 0;
			x = strtoll(val, &end, 10);
			if (!*val || *end || errno)
				return ulnetd_errorf(out, -EINVAL, "%s: option '%s' needs an integer, got '%s'", cmd,
						     o->name, val);
			if (x < o->min || x > o->max)
				return ulnetd_errorf(out, -EINVAL, "%s: option '%s' out of range [%lld, %lld]: %lld",
						     cmd, o->name, o->min, o->max, x);
			*(long long *)o->val = x;
		}
	}
	return 0;
}
