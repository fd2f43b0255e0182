/* SPDX-License-Identifier: MIT */
/* ulnetd internals shared by its files: the daemon context, the control command registry, and the
 * output helpers command handlers write with. The wire framing is in ctl_proto.h.
 *
 * Adding commands (e.g. tools/ulnetd/control_selftest.c):
 *
 *     static int cmd_sst_stat(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
 *     {
 *             bool json = false;
 *             const struct ulnetd_opt opts[] = { { "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json } };
 *             char *pos[1];
 *             int npos, rc;
 *
 *             if ((rc = ulnetd_parse_args(out, "selftest stat", argc, argv, opts, 1, pos, 1, &npos)))
 *                     return rc;                    // message already set
 *             ...
 *             struct ulnetd_emit e;
 *             ulnetd_emit_init(&e, out, json);
 *             ulnetd_emit_map(&e, NULL);            // document root
 *             ulnetd_emit_int(&e, "errors", 0);
 *             ulnetd_emit_end(&e);
 *             return 0;                             // or ulnetd_errorf(out, -ETIMEDOUT, "...")
 *     }
 *     static const struct ulnetd_cmd sst_cmds[] = {
 *             { "selftest stat", "[--json]", "show selftest counters", cmd_sst_stat },
 *     };
 *     int ulnetd_selftest_register(struct ulnetd *d)    // declared below; called by main.c
 *     {
 *             return ulnetd_cmd_register(d, sst_cmds, sizeof(sst_cmds) / sizeof(sst_cmds[0]));
 *     }
 *
 * main.c calls ulnetd_selftest_register() (control_selftest.c) after the built-in commands are
 * registered and before the control socket opens. State of an extension goes in d->selftest; free it
 * from a ulnetd_on_close() hook. Handlers use only the public API (<ulnet/...>, libulnet.so).
 *
 * Threading: each control connection is served by its own thread, so a handler may block (ulnet_ping,
 * a selftest run) without stalling other clients; handlers run concurrently with each other and must
 * lock any state they share. The ulnet API is thread-safe. Registration happens only before the
 * control socket opens (single-threaded). On SIGTERM/SIGINT ulnetd stops accepting, shuts the client
 * sockets down, waits for every handler to return, runs the on_close hooks (last registered first),
 * then closes the node: a long handler should poll ulnetd_stopping(). */
#ifndef ULNETD_ULNETD_H
#define ULNETD_ULNETD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <ulnet/ulnet.h>
#include <ulnet/writer.h>

#include <ulnet/config_file.h>

struct ulnetd_priv; /* control.c: registry, clients, listening socket */

/* The daemon. Fields are set by main.c before any handler runs and never change after. */
struct ulnetd {
	ulnet_node *node;                 /* the node this daemon runs */
	const struct ulnet_config *cfg;  /* the parsed configuration file */
	const char *config_path;          /* as given with -c */
	const char *control_path;         /* the control socket in use (--control wins over the file) */
	int verbose;                      /* number of -v */
	void *selftest;                   /* owned by control_selftest.c */
	struct ulnetd_priv *priv;         /* control.c only */
};

/* ---- output ---- */

/* What a handler writes its answer into. Text is buffered and sent as the final frame when the
 * handler returns; ulnetd_out_flush() sends what is buffered now as a partial frame (progress). */
struct ulnetd_out {
	char *buf;
	size_t len, cap;
	int fd;             /* the client socket */
	int err;            /* first -ENOMEM or send error; further output is dropped */
	char errmsg[512];   /* set by ulnetd_errorf() */
};

__attribute__((format(printf, 2, 3))) void ulnetd_out_printf(struct ulnetd_out *out, const char *fmt, ...);
void ulnetd_out_write(struct ulnetd_out *out, const char *s, size_t len);
/* Send the buffered text to the client now. 0 or -errno (the client went away: stop working). */
int ulnetd_out_flush(struct ulnetd_out *out);
/* Record the one-line error the client prints (no trailing '\n') and return @rc (< 0), so handlers
 * can write `return ulnetd_errorf(out, -EINVAL, "bad NID '%s': %s", s, why);`. Output already
 * written is still delivered before the error. */
__attribute__((format(printf, 3, 4))) int ulnetd_errorf(struct ulnetd_out *out, int rc, const char *fmt, ...);

/* Structured output: the library's one YAML/JSON writer (ulnet/writer.h: lnetctl's YAML layout or
 * compact JSON on one line, from the same calls; control characters escaped), into @out. @key is NULL
 * for list items and for the root. */
struct ulnetd_emit {
	struct ulnetd_out *out;
	struct ulnet_writer w;
};
void ulnetd_emit_init(struct ulnetd_emit *e, struct ulnetd_out *out, bool json);
void ulnetd_emit_map(struct ulnetd_emit *e, const char *key);
void ulnetd_emit_list(struct ulnetd_emit *e, const char *key);
void ulnetd_emit_end(struct ulnetd_emit *e);    /* closes the innermost map or list */
void ulnetd_emit_str(struct ulnetd_emit *e, const char *key, const char *val);   /* quoted as needed */
void ulnetd_emit_int(struct ulnetd_emit *e, const char *key, long long val);
void ulnetd_emit_uint(struct ulnetd_emit *e, const char *key, unsigned long long val);
void ulnetd_emit_bool(struct ulnetd_emit *e, const char *key, bool val);         /* True / true */
/* @val is printed as it is (a number such as "0.042"). */
void ulnetd_emit_raw(struct ulnetd_emit *e, const char *key, const char *val);

/* ---- commands ---- */

/* A handler: @argv[0..argc) are the request words after the command name. Returns 0, or -errno with
 * the reason set by ulnetd_errorf() (else the client prints strerror). Runs on the connection's
 * thread; may block. */
typedef int (*ulnetd_cmd_fn)(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out);

struct ulnetd_cmd {
	const char *name;  /* one or more words: "net show", "selftest run"; the longest match wins */
	const char *usage; /* options after the name, for help: "[-v] [--json]" */
	const char *help;  /* one line */
	ulnetd_cmd_fn fn;
};

/* Register @n commands; @cmds must outlive the daemon (a static table). Only before the control
 * socket opens. 0, -EEXIST a name is taken (logged), -ENOMEM. */
int ulnetd_cmd_register(struct ulnetd *d, const struct ulnetd_cmd *cmds, size_t n);
/* Run @fn(d, arg) at shutdown, after every handler returned and before the node closes. */
int ulnetd_on_close(struct ulnetd *d, void (*fn)(struct ulnetd *d, void *arg), void *arg);
/* true once shutdown started; long handlers should return soon after. */
bool ulnetd_stopping(const struct ulnetd *d);

/* Option parsing for handlers. Options may come anywhere among the positionals; "--opt=value" and
 * "--opt value" both work. Errors (unknown option, missing or bad value, too many positionals) are
 * set on @out and returned as -EINVAL. */
enum ulnetd_opt_type {
	ULNETD_OPT_FLAG, /* @val: bool * */
	ULNETD_OPT_INT,  /* @val: long long *, checked against [min, max] */
	ULNETD_OPT_STR,  /* @val: const char ** (borrows the request) */
};
struct ulnetd_opt {
	const char *name;  /* "--count" */
	const char *alias; /* "-c" or NULL */
	enum ulnetd_opt_type type;
	long long min, max;
	void *val;
};
int ulnetd_parse_args(struct ulnetd_out *out, const char *cmd, int argc, char **argv,
		      const struct ulnetd_opt *opts, size_t nopts, char **pos, int maxpos, int *npos);

/* ---- control.c, used by main.c ---- */
int ulnetd_control_init(struct ulnetd *d);
/* Bind and listen on d->control_path (mode 0600). A stale socket (nobody answers) is replaced; a live
 * one is -EADDRINUSE. 0 or -errno with a line in @err. */
int ulnetd_control_open(struct ulnetd *d, char *err, size_t errlen);
/* Serve until @sigfd (a signalfd for SIGTERM/SIGINT) is readable. 0 or -errno. */
int ulnetd_control_run(struct ulnetd *d, int sigfd);
/* Stop: close the listener, unlink the socket, end every connection and wait for its handler, run
 * the on_close hooks. Idempotent. */
void ulnetd_control_close(struct ulnetd *d);
void ulnetd_control_fini(struct ulnetd *d);

/* Built-in commands (cmd_lnet.c): net show, export, ping, stats show, peer show, help. */
int ulnetd_lnet_register(struct ulnetd *d);
/* Routing commands (cmd_route.c): route add/del/show, routing show, set routing and buffer keys. */
int ulnetd_route_register(struct ulnetd *d);
/* Metrics commands (cmd_metrics.c): stats reset; and the latency block stats show and peer show -v
 * print (@buckets: every bucket too, as --json does). */
int ulnetd_metrics_register(struct ulnetd *d);
void ulnetd_emit_latency(struct ulnetd_emit *e, const struct ulnet_latency *lat, bool buckets);
/* The node's latencies and drops by reason: every NI's summed. */
void ulnetd_node_metrics(ulnet_node *node, struct ulnet_latency *lat, uint64_t drops[ULNET_DROP_REASONS]);
/* Fault rule commands (cmd_fault.c): fault drop|delay|corrupt|duplicate|reorder add/del/show, reset. */
int ulnetd_fault_register(struct ulnetd *d);
/* lnetctl's globals (cmd_global.c): global show, set transaction_timeout, the refused lnetctl names. */
int ulnetd_global_register(struct ulnetd *d);
/* import FILE (cmd_import.c). */
int ulnetd_import_register(struct ulnetd *d);
/* What import FILE does, for the SIGHUP reload too: load @path, refuse a metrics: or selftest: section
 * unlike the running one, then ulnet_config_apply (one at a time). 0, or -EINVAL/-ENOMEM with the
 * one-line reason in @err (no "import: " prefix). */
int ulnetd_import_file(struct ulnetd *d, const char *path, char *err, size_t errlen);
/* The selftest and lst commands (control_selftest.c, control_lst.c) over ulnet/selftest.h. */
int ulnetd_selftest_register(struct ulnetd *d);

#endif
