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

/* ---- emitter: the library's writer, into the handler's output ---- */

static void out_sink(void *arg, const char *s, size_t len)
{
	ulnetd_out_write(arg, s, len);
}

void ulnetd_emit_init(struct ulnetd_emit *e, struct ulnetd_out *out, bool json)
{
	e->out = out;
	ulnet_writer_init(&e->w, out_sink, out, json);
}

void ulnetd_emit_map(struct ulnetd_emit *e, const char *key)
{
	ulnet_writer_map(&e->w, key);
	if (e->w.overflow)
		e->out->err = -E2BIG;
}

void ulnetd_emit_list(struct ulnetd_emit *e, const char *key)
{
	ulnet_writer_list(&e->w, key);
	if (e->w.overflow)
		e->out->err = -E2BIG;
}

void ulnetd_emit_end(struct ulnetd_emit *e) { ulnet_writer_end(&e->w); }
void ulnetd_emit_str(struct ulnetd_emit *e, const char *key, const char *val) { ulnet_writer_str(&e->w, key, val); }
void ulnetd_emit_raw(struct ulnetd_emit *e, const char *key, const char *val) { ulnet_writer_raw(&e->w, key, val); }
void ulnetd_emit_int(struct ulnetd_emit *e, const char *key, long long val) { ulnet_writer_int(&e->w, key, val); }
void ulnetd_emit_uint(struct ulnetd_emit *e, const char *key, unsigned long long val)
{
	ulnet_writer_uint(&e->w, key, val);
}
void ulnetd_emit_bool(struct ulnetd_emit *e, const char *key, bool val) { ulnet_writer_bool(&e->w, key, val); }

/* ---- options ---- */

/* lnetctl's verbose level: one digit; -1 if @s is not one. */
static int verbose_level(const char *s)
{
	return s[0] >= '0' && s[0] <= '9' && !s[1] ? s[0] - '0' : -1;
}

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
			/* lnetctl's -v3: the level joined to the short name */
			else if (opts[k].alias && !eq && !strcmp(opts[k].name, "--verbose") &&
				 !strncmp(opts[k].alias, a, strlen(opts[k].alias)) && verbose_level(a + strlen(opts[k].alias)) >= 0)
				o = &opts[k], val = a + strlen(opts[k].alias);
		}
		if (!o)
			return ulnetd_errorf(out, -EINVAL, "%s: unknown option '%.*s'", cmd, (int)nlen, a);
		if (o->type == ULNETD_OPT_FLAG) {
			/* lnetctl's verbose level: -v 2, -v2, --verbose=2 (0 is off); ulnet has one level */
			if (!strcmp(o->name, "--verbose")) {
				if (eq)
					val = eq + 1;
				else if (!val && i + 1 < argc && verbose_level(argv[i + 1]) >= 0)
					val = argv[++i];
				if (val && verbose_level(val) < 0)
					return ulnetd_errorf(out, -EINVAL, "%s: bad verbose level '%s' (0 to 9)", cmd, val);
				*(bool *)o->val = !val || verbose_level(val) > 0;
				continue;
			}
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
