/* SPDX-License-Identifier: MIT */
/* One structured-output writer for everything ulnet and its tools print: the same calls render
 * lnetctl's YAML layout (mapping children +4 columns, list dashes +4 under a top-level key and +2
 * below that, the first key of a list item on the dash line) or compact JSON on one line. Strings
 * are quoted where YAML would read them otherwise, and control characters are escaped (\n, \t,
 * \u00XX), never dropped. */
#ifndef ULNET_WRITER_H
#define ULNET_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include "nid.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the text goes: called with pieces of the output, in order. */
typedef void (*ulnet_write_fn)(void *arg, const char *s, size_t len);

#define ULNET_WRITER_DEPTH 16
/* Fields are the writer's; set them with ulnet_writer_init. */
struct ulnet_writer {
	ulnet_write_fn write;
	void *arg;
	bool json;
	bool overflow;        /* nesting went past ULNET_WRITER_DEPTH: the output is incomplete */
	int depth;
	struct {
		char kind;        /* 'm' mapping, 'l' list */
		int col;          /* YAML: key column (mapping) or dash column (list) */
		bool dash_pending;/* YAML: the "- " of this list item is written; next key goes after it */
		unsigned count;   /* entries so far (JSON commas) */
	} st[ULNET_WRITER_DEPTH];
};

ULNET_EXPORT void ulnet_writer_init(struct ulnet_writer *w, ulnet_write_fn fn, void *arg, bool json);
/* Open a mapping or a list. @key is NULL for list items and for the document root. */
ULNET_EXPORT void ulnet_writer_map(struct ulnet_writer *w, const char *key);
ULNET_EXPORT void ulnet_writer_list(struct ulnet_writer *w, const char *key);
/* Close the innermost mapping or list; closing the root ends the document (JSON: with a newline). */
ULNET_EXPORT void ulnet_writer_end(struct ulnet_writer *w);
ULNET_EXPORT void ulnet_writer_str(struct ulnet_writer *w, const char *key, const char *val); /* NULL: "" */
ULNET_EXPORT void ulnet_writer_int(struct ulnet_writer *w, const char *key, long long val);
ULNET_EXPORT void ulnet_writer_uint(struct ulnet_writer *w, const char *key, unsigned long long val);
ULNET_EXPORT void ulnet_writer_bool(struct ulnet_writer *w, const char *key, bool val); /* True / true */
/* A number already formatted ("0.042"), written as it is. */
ULNET_EXPORT void ulnet_writer_raw(struct ulnet_writer *w, const char *key, const char *val);
/* A NID in its string form. */
ULNET_EXPORT void ulnet_writer_nid(struct ulnet_writer *w, const char *key, const struct ulnet_nid *nid);

#ifdef __cplusplus
}
#endif
#endif
