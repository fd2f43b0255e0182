/* SPDX-License-Identifier: MIT */
/* ulnet-selftest: the selftest console (docs/selftest.md). It drives a local ulnetd over its control
 * socket, which acts as the lst console node: --from may be that node (it runs the test itself) or
 * any other node that serves lnet_selftest RPCs (another ulnetd or a kernel node with lnet_selftest),
 * which the daemon drives over the framework RPCs; --to is any such node. lst's scripted form
 * (new_session, add_group, add_batch, add_test, run, stat, stop, end_session, and the administration
 * words ping, del_group, update_group, show_error, query, list_batch NAME) keeps its state in the
 * daemon, so separate invocations share it. No wait on the daemon is unbounded (--wait).
 *
 * Every result line names the direction of the data, MB/s and MiB/s, the RPC rate, latency
 * percentiles and classified errors; --json prints one object per test instead. Exit status: 0 when
 * every test is ok, 1 when a test saw errors (or a name, state or node check failed), 2 for bad
 * arguments, 3 when the node cannot run it or the daemon stays silent. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <ulnet/ulnet.h>

#include "ctl_proto.h"
#include "result_json.h"
#include "test_spec.h"

#define EXIT_TESTFAIL 1
#define EXIT_USAGE 2
#define EXIT_NODE 3

static unsigned wait_override; /* --wait SEC; 0: each command's own bound */
static int bound_wait(int fd, unsigned secs);

static const char usage_text[] =
	"usage: ulnet-selftest [--node PATH] [--wait SEC] [--json] brw read|write --from NID --to NID [--size N[k|M]]\n"
	"                      [--offset N] [--check none|simple|full|discard] [--concurrency N] [--duration SEC]\n"
	"                      [--count N] [--timeout SEC] [--corrupt-at N --corrupt-count N]\n"
	"       ulnet-selftest [--node PATH] [--json] ping --from NID --to NID [--concurrency N] [--duration SEC]\n"
	"       ulnet-selftest [--node PATH] inject [--count N] [--at N]\n"
	"       ulnet-selftest [--node PATH] stat [--json]\n"
	"       ulnet-selftest [--node PATH] [--json] batch FILE   (one test per line: brw ...|ping ...)\n"
	"  lst style (state kept in the node's ulnetd):\n"
	"       ulnet-selftest new_session NAME [--timeout SEC] [--force] | end_session | show_session\n"
	"       ulnet-selftest add_group NAME NID... | list_group [NAME] | del_group NAME\n"
	"       ulnet-selftest update_group NAME --refresh | --clean active|busy|unknown|down|invalid | --remove NIDs\n"
	"       ulnet-selftest ping GROUP | --nodes NIDs [--timeout SEC]\n"
	"       ulnet-selftest show_error [--session] GROUP | NIDs\n"
	"       ulnet-selftest stat [--bw] [--rate] [--read] [--write] [--avg] [--min] [--max] [--mbs]\n"
	"                      [--count N] [--delay SEC] [--timeout SEC] GROUP | NIDs\n"
	"       ulnet-selftest add_batch NAME | list_batch [NAME [--test N] [--server]]\n"
	"       ulnet-selftest run BATCH [--timeout SEC] | stop BATCH [--force]\n"
	"       ulnet-selftest query BATCH [--test N] [--server] [--timeout SEC] [--loop N] [--delay SEC] [--all]\n"
	"       ulnet-selftest add_test --batch B --from G1 --to G2 [--loop N] [--concurrency N]\n"
	"                      [--distribute x:y|x:all|all] [--timeout SEC] brw read|write [size=S] [off=O]\n"
	"                      [check=C] | ping\n"
	"NIDs: NID[,NID...]. --node defaults to $ULNET_NODE; that node is the console. --from may be it or any\n"
	"other node. --wait SEC: give up when ulnetd says nothing for SEC s (exit 3; default 600, stop 3700).\n";

static int usage(const char *fmt, const char *arg)
{
	if (fmt) {
		fprintf(stderr, "ulnet-selftest: ");
		fprintf(stderr, fmt, arg ? arg : "");
		fprintf(stderr, "\n");
	}
	fputs(usage_text, stderr);
	return EXIT_USAGE;
}

/* Parse one test's words; a refusal prints the usage. 0 or EXIT_USAGE. */
static int parse_test(int argc, char **argv, struct test *t)
{
	char why[160];

	if (test_spec_parse(argc, argv, t, why, sizeof(why)))
		return usage("%s", why);
	return 0;
}

/* ---- control connection ---- */

struct conn {
	int fd;
	const char *path;
};

/* Send @argv; deliver partial frames to @on_partial; return the final rc and body. */
static int request(struct conn *c, int argc, char **argv, void (*on_partial)(const char *, void *), void *arg,
		   char **body)
{
	const char *bad = NULL;
	int rc = ulnetd_proto_send_request(c->fd, argc, argv, &bad);

	*body = NULL;
	if (rc)
		return rc;
	for (;;) {
		int final = 0, frc = 0;
		size_t len;
		char *b = NULL;
		rc = ulnetd_proto_recv_frame(c->fd, &final, &frc, &b, &len);
		if (rc)
			return rc;
		if (final) {
			*body = b;
			return frc;
		}
		if (on_partial)
			on_partial(b, arg);
		free(b);
	}
}

/* ---- one test ---- */

static const char *direction(const struct test *t)
{
	if (!t->brw)
		return "client\u2194server";
	return t->write ? "client\u2192server" : "server\u2192client";
}

static void on_progress(const char *body, void *arg)
{
	const struct test *t = arg;
	struct result r;
	double s;

	memset(&r, 0, sizeof(r));
	result_parse(body, &r);
	s = r.seconds > 0 ? r.seconds : 1;
	printf("\r\033[K  %s %.0fs: %.2f MB/s (%.2f MiB/s), %.0f msg/s, errors %llu", direction(t), r.seconds,
	       r.bytes / s / 1e6, r.bytes / s / 1048576.0, r.rpcs / s,
	       r.timeout + r.mismatch + r.refused + r.peer_gone);
	fflush(stdout);
}

static void to_stdout(void *arg, const char *s, size_t len)
{
	(void)arg;
	fwrite(s, 1, len, stdout);
}

__attribute__((format(printf, 3, 4))) static const char *fmt(char *buf, size_t cap, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, cap, f, ap);
	va_end(ap);
	return buf;
}

static bool print_result(const struct test *t, const struct result *r)
{
	double s = r->seconds > 0 ? r->seconds : 1e-9;
	double mbps = r->bytes / s / 1e6, mibps = r->bytes / s / 1048576.0, rate = r->rpcs / s;
	bool ok = !r->timeout && !r->mismatch && !r->refused && !r->peer_gone && !r->unclassified;
	char name[32];

	snprintf(name, sizeof(name), "%s", t->brw ? (t->write ? "brw write" : "brw read") : "ping");
	if (t->json) { /* through the library's writer: every string escaped, nothing dropped */
		struct ulnet_writer w;
		char v[64];

		ulnet_writer_init(&w, to_stdout, NULL, true);
		ulnet_writer_map(&w, NULL);
		ulnet_writer_str(&w, "test", name);
		ulnet_writer_str(&w, "direction", direction(t));
		ulnet_writer_str(&w, "from", t->from);
		ulnet_writer_str(&w, "to", t->to);
		if (t->brw) {
			ulnet_writer_uint(&w, "size", t->size);
			ulnet_writer_uint(&w, "offset", t->offset);
			ulnet_writer_str(&w, "check", t->check);
		}
		ulnet_writer_uint(&w, "concurrency", t->concurrency);
		ulnet_writer_raw(&w, "seconds", fmt(v, sizeof(v), "%.3f", r->seconds));
		ulnet_writer_raw(&w, "rpcs", fmt(v, sizeof(v), "%.0f", r->rpcs));
		ulnet_writer_raw(&w, "bytes", r->bytes_na ? "null" : fmt(v, sizeof(v), "%.0f", r->bytes));
		ulnet_writer_raw(&w, "MBps", r->bytes_na ? "null" : fmt(v, sizeof(v), "%.3f", mbps));
		ulnet_writer_raw(&w, "MiBps", r->bytes_na ? "null" : fmt(v, sizeof(v), "%.3f", mibps));
		ulnet_writer_raw(&w, "rate", fmt(v, sizeof(v), "%.1f", rate));
		ulnet_writer_map(&w, "latency_us");
		ulnet_writer_raw(&w, "p50", r->lat_na ? "null" : fmt(v, sizeof(v), "%.0f", r->p50));
		ulnet_writer_raw(&w, "p99", r->lat_na ? "null" : fmt(v, sizeof(v), "%.0f", r->p99));
		ulnet_writer_raw(&w, "max", r->lat_na ? "null" : fmt(v, sizeof(v), "%.0f", r->max));
		ulnet_writer_end(&w);
		ulnet_writer_map(&w, "errors");
		ulnet_writer_uint(&w, "timeout", r->timeout);
		ulnet_writer_uint(&w, "mismatch", r->mismatch);
		ulnet_writer_uint(&w, "refused", r->refused);
		ulnet_writer_uint(&w, "peer_gone", r->peer_gone);
		if (r->unclassified)
			ulnet_writer_uint(&w, "unclassified", r->unclassified);
		ulnet_writer_end(&w);
		ulnet_writer_str(&w, "clients", r->remote ? "remote" : "local");
		ulnet_writer_str(&w, "source", r->source);
		if (r->mismatch_offset >= 0)
			ulnet_writer_int(&w, "mismatch_offset", r->mismatch_offset);
		else
			ulnet_writer_raw(&w, "mismatch_offset", "null");
		ulnet_writer_str(&w, "first_error", r->first_error);
		ulnet_writer_bool(&w, "ok", ok);
		ulnet_writer_end(&w);
		return ok;
	}
	printf("%s %s \u2192 %s (%s)", name, t->from, t->to, direction(t));
	if (t->brw)
		printf(" size %llu offset %llu check %s", t->size, t->offset, t->check);
	printf(" concurrency %llu: ", t->concurrency);
	if (r->bytes_na)
		printf("MB/s n/a (no counter gives the bytes), ");
	else
		printf("%.2f MB/s (%.2f MiB/s), ", mbps, mibps);
	printf("%.1f msg/s, ", rate);
	if (r->lat_na)
		printf("latency n/a (remote clients),");
	else
		printf("latency p50 %.3f ms p99 %.3f ms max %.3f ms,", r->p50 / 1e3, r->p99 / 1e3, r->max / 1e3);
	printf(" errors: timeout %llu, mismatch %llu, refused %llu, peer gone %llu", r->timeout, r->mismatch,
	       r->refused, r->peer_gone);
	if (r->unclassified)
		printf(", unclassified %llu", r->unclassified);
	printf(": %s\n", ok ? "ok" : "FAILED");
	if (r->remote && r->source[0])
		printf("  (remote clients: %s)\n", r->source);
	if (!ok && r->mismatch_offset >= 0)
		printf("  first data mismatch at byte %lld of the transfer\n", r->mismatch_offset);
	if (!ok && r->first_error[0])
		printf("  first error: %s\n", r->first_error);
	return ok;
}

static int run_test(struct conn *c, struct test *t)
{
	char a[16][48], *argv[40], *body = NULL;
	unsigned wait_s;
	int argc = 0, rc, n = 0;
	struct ulnet_nid nid;
	const char *why;
	struct result r;

#define ARG(...) (snprintf(a[n], sizeof(a[n]), __VA_ARGS__), argv[argc++] = a[n++])
	if (ulnet_nid_parse(t->from, &nid, &why))
		return usage("bad --from NID '%s'", t->from);
	if (ulnet_nid_parse(t->to, &nid, &why))
		return usage("bad --to NID '%s'", t->to);
	argv[argc++] = "selftest";
	argv[argc++] = "run";
	if (t->brw) {
		argv[argc++] = "brw";
		argv[argc++] = t->write ? "write" : "read";
		argv[argc++] = "--size";
		ARG("%llu", t->size);
		argv[argc++] = "--offset";
		ARG("%llu", t->offset);
		argv[argc++] = "--check";
		argv[argc++] = (char *)t->check;
		if (t->corrupt_count) {
			argv[argc++] = "--corrupt-at";
			ARG("%llu", t->corrupt_at);
			argv[argc++] = "--corrupt-count";
			ARG("%llu", t->corrupt_count);
		}
	} else {
		argv[argc++] = "ping";
	}
	argv[argc++] = "--to";
	argv[argc++] = (char *)t->to;
	argv[argc++] = "--from";
	argv[argc++] = (char *)t->from;
	argv[argc++] = "--concurrency";
	ARG("%llu", t->concurrency);
	argv[argc++] = "--duration-ms";
	ARG("%llu", t->count && !t->duration ? 0ULL : (unsigned long long)llround(t->duration * 1000));
	argv[argc++] = "--timeout-ms";
	ARG("%llu", (unsigned long long)llround(t->timeout * 1000));
	if (t->count) {
		argv[argc++] = "--count";
		ARG("%llu", t->count);
	}
	/* progress always: the daemon then speaks at least once a second while the test runs, so a silence
	 * longer than the setup and drain (each bounded by the RPC timeout) means it is stuck */
	argv[argc++] = "--progress";
#undef ARG
	wait_s = wait_override ? wait_override : (unsigned)llround(2 * t->timeout) + 60;
	if ((rc = bound_wait(c->fd, wait_s)))
		return rc;
	rc = request(c, argc, argv, t->tty && !t->json ? on_progress : NULL, t, &body);
	if (rc == -EAGAIN) {
		fprintf(stderr, "ulnet-selftest: no word from ulnetd at %s for %u s (--wait); gave up\n", c->path, wait_s);
		free(body);
		return EXIT_NODE;
	}
	if (t->tty && !t->json) {
		printf("\r\033[K");
		fflush(stdout);
	}
	if (rc) {
		fprintf(stderr, "ulnet-selftest: %s\n", body && *body ? body : strerror(-rc));
		free(body);
		return rc == -EINVAL ? EXIT_USAGE : EXIT_NODE;
	}
	memset(&r, 0, sizeof(r));
	result_parse(body, &r);
	free(body);
	return print_result(t, &r) ? 0 : EXIT_TESTFAIL;
}

static int connect_node(const char *path, struct conn *c)
{
	int rc;

	c->path = path;
	if (!path || !*path) {
		usage("no node: give --node PATH or set ULNET_NODE", NULL);
		return EXIT_USAGE;
	}
	rc = ulnetd_proto_connect(path, &c->fd);
	if (rc) {
		fprintf(stderr, "ulnet-selftest: cannot reach ulnetd at %s: %s\n", path, strerror(-rc));
		return EXIT_NODE;
	}
	return 0;
}

/* Never wait on ulnetd forever: a read that sees nothing for @secs fails with -EAGAIN. */
static int bound_wait(int fd, unsigned secs)
{
	struct timeval tv = { .tv_sec = (time_t)secs };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		fprintf(stderr, "ulnet-selftest: cannot bound the wait on ulnetd: %s\n", strerror(errno));
		return EXIT_NODE;
	}
	return 0;
}

static int run_batch(struct conn *c, const char *file, bool json, bool tty)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	char line[1024];
	int worst = 0, lineno = 0;

	if (!f) {
		fprintf(stderr, "ulnet-selftest: %s: %s\n", file, strerror(errno));
		return EXIT_USAGE;
	}
	while (fgets(line, sizeof(line), f)) {
		char *words[TEST_SPEC_MAX_WORDS];
		size_t len = strlen(line);
		int n, rc;
		struct test t;
		lineno++;
		if (len == sizeof(line) - 1 && line[len - 1] != '\n' && !feof(f)) {
			/* the rest of an overlong line must not run as a test of its own */
			int ch;
			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			fprintf(stderr, "ulnet-selftest: %s:%d: line longer than %zu bytes, test not run\n", file,
				lineno, sizeof(line) - 2);
			worst = worst > EXIT_USAGE ? worst : EXIT_USAGE;
			continue;
		}
		n = test_spec_split(line, words);
		if (n < 0) {
			fprintf(stderr, "ulnet-selftest: %s:%d: more than %d words, test not run\n", file, lineno,
				TEST_SPEC_MAX_WORDS);
			worst = worst > EXIT_USAGE ? worst : EXIT_USAGE;
			continue;
		}
		if (!n)
			continue;
		test_defaults(&t, json, tty);
		rc = parse_test(n, words, &t);
		if (!rc)
			rc = run_test(c, &t);
		if (rc == EXIT_USAGE)
			fprintf(stderr, "ulnet-selftest: %s:%d: test not run\n", file, lineno);
		if (rc > worst)
			worst = rc;
	}
	if (f != stdin)
		fclose(f);
	return worst;
}

/* ---- lst style: forwarded to the daemon, which keeps the session ---- */

struct lst_cmd {
	const char *name;     /* console word */
	const char *daemon;   /* daemon command words */
	int min, max;         /* positional arguments (max -1: any) */
	const char *usage;
};

static const struct lst_cmd lst_cmds[] = {
	{ "new_session", "session new", 1, 1, "new_session NAME [--timeout SEC] [--force]" },
	{ "end_session", "session end", 0, 0, "end_session" },
	{ "show_session", "session show", 0, 0, "show_session" },
	{ "add_group", "group add", 2, -1, "add_group NAME NID..." },
	{ "list_group", "group list", 0, 1, "list_group [NAME]" },
	{ "stat", "group stat", 1, -1,
	  "stat [--bw] [--rate] [--read] [--write] [--avg] [--min] [--max] [--mbs] [--count N] [--delay SEC] "
	  "[--timeout SEC] GROUP|NIDs" },
	{ "add_batch", "batch add", 1, 1, "add_batch NAME" },
	{ "list_batch", "batch list", 0, 1, "list_batch [NAME [--test N] [--server]]" },
	{ "run", "batch run", 1, 1, "run BATCH [--timeout SEC]" },
	{ "stop", "batch stop", 1, 1, "stop BATCH [--force]" },
	{ "add_test", "test add", 1, 8,
	  "add_test --batch B --from G1 --to G2 [--loop N] [--concurrency N] [--distribute x:y|x:all|all] "
	  "[--timeout SEC] brw read|write [size=S] [off=O] [check=none|simple|full|discard] | ping" },
	{ "del_group", "group del", 1, 1, "del_group NAME" },
	{ "update_group", "group update", 1, 1,
	  "update_group NAME --refresh | --clean active|busy|unknown|down|invalid | --remove NID[,NID...]" },
	{ "ping", "node ping", 0, 1, "ping GROUP | --nodes NID[,NID...] [--timeout SEC]" },
	{ "show_error", "node errors", 1, -1, "show_error [--session] GROUP | NID[,NID...]" },
	{ "query", "batch query", 1, 1,
	  "query BATCH [--test N] [--server] [--timeout SEC] [--loop N] [--delay SEC] [--all]" },
};

/* Options of the lst words that take no value. */
static bool lst_flag(const char *a)
{
	static const char *const flags[] = { "--force", "--bw", "--rate", "--read", "--write", "--avg", "--min",
					     "--max", "--mbs", "--server", "--all", "--session", "--refresh" };

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (!strcmp(a, flags[i]))
			return true;
	return false;
}

static const struct lst_cmd *lst_find(const char *name)
{
	for (size_t k = 0; k < sizeof(lst_cmds) / sizeof(lst_cmds[0]); k++)
		if (!strcmp(name, lst_cmds[k].name))
			return &lst_cmds[k];
	return NULL;
}

static int lst_usage(const struct lst_cmd *lc, const char *why, const char *arg)
{
	fprintf(stderr, "ulnet-selftest: %s: ", lc->name);
	fprintf(stderr, why, arg ? arg : "");
	fprintf(stderr, "\nusage: ulnet-selftest [--node PATH] %s\n", lc->usage);
	return EXIT_USAGE;
}

/* Print the JSON result lines of "stop" like one-shot results; 0 when all are ok. */
static int print_results(const char *body, bool json)
{
	int rc = 0;
	char line[4096];

	for (const char *p = body; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		p += nl ? (size_t)(nl - p) + 1 : strlen(p);
		if (line[0] != '{') {
			if (line[0])
				puts(line);
			continue;
		}
		{
			struct test t;
			struct result r;
			char from[64], to[200], kind[8], check[8];
			test_defaults(&t, json, false);
			json_str(line, "from", from, sizeof(from));
			json_str(line, "to", to, sizeof(to));
			json_str(line, "test", kind, sizeof(kind));
			json_str(line, "check", check, sizeof(check));
			t.from = from;
			t.to = to;
			t.brw = !strcmp(kind, "brw");
			t.write = json_bool(line, "write");
			t.size = json_count(line, "size");
			t.offset = json_count(line, "offset");
			t.check = check;
			t.concurrency = json_count(line, "concurrency");
			memset(&r, 0, sizeof(r));
			result_parse(line, &r);
			if (!print_result(&t, &r))
				rc = EXIT_TESTFAIL;
		}
	}
	return rc;
}

struct sbuf {
	char *buf;
	size_t len;
};

/* Partial frames of commands that sample (stat --count, query --loop): each sample as it comes. */
static void print_live(const char *text, void *arg)
{
	(void)arg;
	fputs(text, stdout);
	fflush(stdout);
}

static void collect(const char *text, void *arg)
{
	struct sbuf *sb = arg;
	size_t n = strlen(text);
	char *nb = realloc(sb->buf, sb->len + n + 1);

	if (!nb)
		return;
	memcpy(nb + sb->len, text, n + 1);
	sb->buf = nb;
	sb->len += n;
}

/* The console's bound on ulnetd's silence: --wait, or 600 s (stop: 3700 s, the longest test RPC timeout a
 * non-forced stop may wait for, plus margin), or 2 × --timeout + 60 s when a command has a longer one. */
static unsigned lst_wait_s(const struct lst_cmd *lc, int argc, char **argv, unsigned wait_s)
{
	unsigned w = !strcmp(lc->name, "stop") ? 3700 : 600;

	if (wait_s)
		return wait_s;
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--timeout")) {
			long t = strtol(argv[i + 1], NULL, 10);
			if (t > 0 && t <= 86400 && (unsigned)(2 * t + 60) > w)
				w = (unsigned)(2 * t + 60);
		}
	return w;
}

static int run_lst(const char *node, const struct lst_cmd *lc, int argc, char **argv, bool json, unsigned wait_s)
{
	char *fwd[72], *body = NULL, secbuf[32];
	int n = 0, npos = 0, rc;
	struct conn c = { -1, NULL };
	struct sbuf early = { NULL, 0 };
	const char *w;

	for (w = lc->daemon; *w;) { /* daemon words, "selftest" first */
		static char words[4][16];
		const char *sp = strchr(w, ' ');
		size_t len = sp ? (size_t)(sp - w) : strlen(w);
		if (!n)
			fwd[n++] = "selftest";
		snprintf(words[n - 1], sizeof(words[0]), "%.*s", (int)len, w);
		fwd[n] = words[n - 1];
		n++;
		w += len + (sp ? 1 : 0);
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (n >= 70)
			return lst_usage(lc, "too many arguments", NULL);
		if ((!strcmp(lc->name, "stat") || !strcmp(lc->name, "query")) && !strcmp(a, "--delay")) {
			double sec;
			if (i + 1 >= argc || parse_secs(argv[i + 1], &sec) || sec < 0.1 || sec > 60)
				return lst_usage(lc, "--delay needs seconds in 0.1..60", NULL);
			snprintf(secbuf, sizeof(secbuf), "%lld", (long long)llround(sec * 1000));
			fwd[n++] = "--delay-ms";
			fwd[n++] = secbuf;
			i++;
			continue;
		}
		if (a[0] == '-' && a[1]) {
			/* options that take a value: check it is there, the daemon checks the rest */
			fwd[n++] = (char *)a;
			if (!lst_flag(a) && !strchr(a, '=')) {
				if (i + 1 >= argc)
					return lst_usage(lc, "%s needs a value", a);
				fwd[n++] = argv[++i];
			}
			continue;
		}
		npos++;
		fwd[n++] = (char *)a;
	}
	if (npos < lc->min)
		return lst_usage(lc, "missing argument%s", lc->min - npos > 1 ? "s" : "");
	if (lc->max >= 0 && npos > lc->max)
		return lst_usage(lc, "too many arguments", NULL);
	if ((rc = connect_node(node, &c)))
		return rc;
	wait_s = lst_wait_s(lc, argc, argv, wait_s);
	if ((rc = bound_wait(c.fd, wait_s))) {
		close(c.fd);
		return rc;
	}
	rc = request(&c, n, fwd, strcmp(lc->name, "stop") ? print_live : collect, &early, &body);
	close(c.fd);
	if (rc == -EAGAIN) {
		fprintf(stderr, "ulnet-selftest: %s: no word from ulnetd at %s for %u s (--wait); gave up\n", lc->name, node,
			wait_s);
		free(early.buf);
		free(body);
		return EXIT_NODE;
	}
	/* what the daemon wrote before an error comes first (stat lines, stop results) */
	if (!strcmp(lc->name, "stop")) {
		int prc = print_results(early.buf ? early.buf : "", json);
		if (!rc)
			prc |= print_results(body ? body : "", json);
		else
			fprintf(stderr, "ulnet-selftest: %s\n", body && *body ? body : strerror(-rc));
		rc = rc ? rc : prc ? -EREMOTEIO : 0;
	} else {
		fputs(early.buf ? early.buf : "", stdout);
		if (!rc)
			fputs(body ? body : "", stdout);
		else
			fprintf(stderr, "ulnet-selftest: %s\n", body && *body ? body : strerror(-rc));
	}
	free(early.buf);
	free(body);
	if (!rc)
		return 0;
	return rc == -EINVAL ? EXIT_USAGE : rc == -ENOENT || rc == -EEXIST || rc == -EBUSY || rc == -EREMOTEIO
							? EXIT_TESTFAIL : EXIT_NODE;
}

/* "ping --from A --to B" is a one-shot ping test; "ping GROUP", "ping --nodes NIDs" lst's ping. */
static bool one_shot_ping(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--from") || !strcmp(argv[i], "--to"))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const char *node = getenv("ULNET_NODE");
	bool json = false, tty = isatty(STDOUT_FILENO);
	struct conn c = { -1, NULL };
	unsigned wait_s = 0;
	int i = 1, rc;

	ulnet_log_set(NULL, 0);
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--node")) {
			if (i + 1 >= argc)
				return usage("--node needs a path", NULL);
			node = argv[++i];
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--wait")) {
			char *end;
			long w = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
			if (i + 1 >= argc || *end || w < 1 || w > 86400)
				return usage("--wait needs seconds in 1..86400", NULL);
			wait_s = wait_override = (unsigned)w;
			i++;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else {
			return usage("unknown option '%s'", argv[i]);
		}
	}
	if (i >= argc)
		return usage("no command", NULL);
	if (!strcmp(argv[i], "brw") || (!strcmp(argv[i], "ping") && one_shot_ping(argc - i, argv + i))) {
		struct test t;
		test_defaults(&t, json, tty);
		if ((rc = parse_test(argc - i, argv + i, &t)))
			return rc;
		if ((rc = connect_node(node, &c)))
			return rc;
		rc = run_test(&c, &t);
	} else if (!strcmp(argv[i], "batch")) {
		if (i + 2 != argc)
			return usage("batch needs one FILE", NULL);
		if ((rc = connect_node(node, &c)))
			return rc;
		rc = run_batch(&c, argv[i + 1], json, tty);
	} else if (!strcmp(argv[i], "stat") && i + 1 < argc && strcmp(argv[i + 1], "--json")) {
		return run_lst(node, lst_find("stat"), argc - i, argv + i, json, wait_s); /* lst's stat GROUP|NIDs */
	} else if (!strcmp(argv[i], "inject") || !strcmp(argv[i], "stat")) {
		char *fwd[16], *body = NULL;
		int n = 0;
		fwd[n++] = "selftest";
		for (int k = i; k < argc && n < 15; k++)
			fwd[n++] = argv[k];
		if (json && !strcmp(argv[i], "stat") && n < 15)
			fwd[n++] = "--json";
		if ((rc = connect_node(node, &c)))
			return rc;
		if ((rc = bound_wait(c.fd, wait_override ? wait_override : 600))) {
			close(c.fd);
			return rc;
		}
		rc = request(&c, n, fwd, NULL, NULL, &body);
		if (rc) {
			fprintf(stderr, "ulnet-selftest: %s\n", body && *body ? body : strerror(-rc));
			rc = rc == -EINVAL ? EXIT_USAGE : EXIT_NODE;
		} else {
			fputs(body ? body : "", stdout);
		}
		free(body);
	} else {
		const struct lst_cmd *lc = lst_find(argv[i]);
		if (lc)
			return run_lst(node, lc, argc - i, argv + i, json, wait_s);
		return usage("unknown command '%s'", argv[i]);
	}
	if (c.fd >= 0)
		close(c.fd);
	return rc;
}
