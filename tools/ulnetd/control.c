/* SPDX-License-Identifier: MIT */
/* ulnetd's control socket: the command registry, the listener, and one thread per connection that
 * reads requests (ctl_proto.h), dispatches them to the registered handlers (ulnetd.h) and sends the
 * answers. It knows no command except `help`; cmd_lnet.c and extensions register the rest. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_proto.h"
#include "ulnetd.h"

#define CONTROL_MAX_CLIENTS 64
/* Out of descriptors (or memory) for accept: stop polling the listener this long, as the tcp
 * acceptor pauses until its next tick; the pending connections wait in the backlog. */
#define CONTROL_ACCEPT_PAUSE_MS 250
/* A command slower than this is logged: a console should answer at once (lst's goal is 1 s with 64
 * nodes, some of them down), so a slow one points at a wait on a node that should not happen. */
#define CONTROL_SLOW_CMD_MS 1000

struct client {
	struct client *next;
	struct ulnetd *d;
	pthread_t th;
	int fd;
	atomic_bool done; /* the thread finished; join it */
};

struct close_hook {
	void (*fn)(struct ulnetd *d, void *arg);
	void *arg;
};

struct ulnetd_priv {
	const struct ulnetd_cmd **cmds; /* registered commands, pointers into the callers' tables */
	size_t n_cmds;
	struct close_hook *hooks;
	size_t n_hooks;
	int lfd;                        /* listener, -1 when closed */
	bool bound;                     /* we created the socket file: unlink it on close */
	bool listen_paused;             /* accept ran out of resources: listener not polled until... */
	uint64_t paused_until;          /* ...this time (ulnet_clock_ns) */
	atomic_bool stopping;
	pthread_mutex_t lock;           /* clients list */
	struct client *clients;
	unsigned n_clients;
};


int ulnetd_cmd_register(struct ulnetd *d, const struct ulnetd_cmd *cmds, size_t n)
{
	struct ulnetd_priv *pv = d->priv;
	const struct ulnetd_cmd **a;

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < pv->n_cmds; k++) {
			if (!strcmp(pv->cmds[k]->name, cmds[i].name)) {
				fprintf(stderr, "ulnetd: command '%s' registered twice\n", cmds[i].name);
				return -EEXIST;
			}
		}
	}
	if (!(a = realloc(pv->cmds, (pv->n_cmds + n) * sizeof(*a))))
		return -ENOMEM;
	pv->cmds = a;
	for (size_t i = 0; i < n; i++)
		a[pv->n_cmds++] = &cmds[i];
	return 0;
}

int ulnetd_on_close(struct ulnetd *d, void (*fn)(struct ulnetd *d, void *arg), void *arg)
{
	struct ulnetd_priv *pv = d->priv;
	struct close_hook *h = realloc(pv->hooks, (pv->n_hooks + 1) * sizeof(*h));

	if (!h)
		return -ENOMEM;
	pv->hooks = h;
	h[pv->n_hooks++] = (struct close_hook){ fn, arg };
	return 0;
}

bool ulnetd_stopping(const struct ulnetd *d)
{
	return atomic_load(&d->priv->stopping);
}

static int cmd_help(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	struct ulnetd_priv *pv = d->priv;
	struct ulnetd_emit e;
	bool json = false;
	const struct ulnetd_opt opts[] = { { "--json", NULL, ULNETD_OPT_FLAG, 0, 0, &json } };
	int npos, rc;

	if ((rc = ulnetd_parse_args(out, "help", argc, argv, opts, 1, NULL, 0, &npos)))
		return rc;
	ulnetd_emit_init(&e, out, json);
	ulnetd_emit_map(&e, NULL);
	ulnetd_emit_list(&e, "commands");
	for (size_t i = 0; i < pv->n_cmds; i++) {
		ulnetd_emit_map(&e, NULL);
		ulnetd_emit_str(&e, "name", pv->cmds[i]->name);
		ulnetd_emit_str(&e, "usage", pv->cmds[i]->usage ? pv->cmds[i]->usage : "");
		ulnetd_emit_str(&e, "help", pv->cmds[i]->help ? pv->cmds[i]->help : "");
		ulnetd_emit_end(&e);
	}
	ulnetd_emit_end(&e);
	ulnetd_emit_end(&e);
	return 0;
}

static const struct ulnetd_cmd control_cmds[] = {
	{ "help", "[--json]", "list the commands this daemon serves", cmd_help },
};

int ulnetd_control_init(struct ulnetd *d)
{
	struct ulnetd_priv *pv = calloc(1, sizeof(*pv));

	if (!pv)
		return -ENOMEM;
	pv->lfd = -1;
	pthread_mutex_init(&pv->lock, NULL);
	d->priv = pv;
	return ulnetd_cmd_register(d, control_cmds, sizeof(control_cmds) / sizeof(control_cmds[0]));
}

void ulnetd_control_fini(struct ulnetd *d)
{
	struct ulnetd_priv *pv = d->priv;

	if (!pv)
		return;
	ulnetd_control_close(d);
	pthread_mutex_destroy(&pv->lock);
	free(pv->cmds);
	free(pv->hooks);
	free(pv);
	d->priv = NULL;
}

/* ---- requests ---- */

static int dispatch(struct ulnetd *d, int argc, char **argv, struct ulnetd_out *out)
{
	struct ulnetd_priv *pv = d->priv;
	const struct ulnetd_cmd *best = NULL;
	size_t best_words = 0;
	bool first_word_known = false;

	for (size_t i = 0; i < pv->n_cmds; i++) {
		size_t w = ulnetd_proto_words_match(pv->cmds[i]->name, argc, argv);

		if (w > best_words) {
			best = pv->cmds[i];
			best_words = w;
		}
		/* "net bogus": say which word is wrong */
		first_word_known |= !strncmp(pv->cmds[i]->name, argv[0], strlen(argv[0])) &&
				    pv->cmds[i]->name[strlen(argv[0])] == ' ';
	}
	if (!best) {
		if (first_word_known && argc > 1)
			return ulnetd_errorf(out, -EINVAL, "unknown command '%s %s'", argv[0], argv[1]);
		if (first_word_known)
			return ulnetd_errorf(out, -EINVAL, "incomplete command '%s'", argv[0]);
		return ulnetd_errorf(out, -EINVAL, "unknown command '%s'", argv[0]);
	}
	return best->fn(d, argc - (int)best_words, argv + best_words, out);
}

/* How long the lst console's commands (selftest session|group|batch|test|node ...) may take before they are
 * logged as slow: CONTROL_SLOW_CMD_MS plus the sampling intervals a stat or query was asked for. Other commands
 * (a one-shot brw runs for its duration) are not timed: LLONG_MAX. */
static long long slow_cmd_ms(int argc, char **argv)
{
	static const char *const lst[] = { "session", "group", "batch", "test", "node" };
	long long ms = LLONG_MAX, delay = 0, times = 1;

	for (size_t i = 0; argc > 1 && !strcmp(argv[0], "selftest") && i < sizeof(lst) / sizeof(lst[0]); i++)
		if (!strcmp(argv[1], lst[i]))
			ms = CONTROL_SLOW_CMD_MS;
	for (int i = 2; ms != LLONG_MAX && i + 1 < argc; i++) {
		if (!strcmp(argv[i], "--delay-ms"))
			delay = strtoll(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--count") || !strcmp(argv[i], "--loop")) /* stat, query: samples */
			times = strtoll(argv[i + 1], NULL, 10);
	}
	if (ms != LLONG_MAX && delay > 0 && delay <= 60000 && times > 0 && times <= 1000)
		ms += delay * times;
	return ms;
}

/* Answer one request. 0 to go on, <0 to drop the connection. */
static int serve_one(struct ulnetd *d, int fd, int argc, char **argv)
{
	struct ulnetd_out out = { .fd = fd };
	uint64_t t0;
	long long ms;
	int rc, wr;

	t0 = ulnet_clock_ns();
	rc = dispatch(d, argc, argv, &out);
	ms = (long long)((ulnet_clock_ns() - t0) / 1000000u);
	if (ms > slow_cmd_ms(argc, argv)) {
		char what[128] = "";
		size_t len = 0;

		for (int i = 0; i < argc && i < 4 && len < sizeof(what); i++) /* the command and its object */
			len += (size_t)snprintf(what + len, sizeof(what) - len, "%s%s", i ? " " : "", argv[i]);
		ULNET_LOGF(ULNET_LOG_WARN, "ULNETD", "control: '%s' answered in %lld ms (over %lld ms)", what, ms,
			   slow_cmd_ms(argc, argv));
	}
	if (rc > 0)
		rc = 0;
	if (out.err && out.err != -ENOMEM) {
		free(out.buf);
		return out.err; /* the client is gone */
	}
	if (!rc && out.err == -ENOMEM)
		rc = ulnetd_errorf(&out, -ENOMEM, "%s: output too large or out of memory", argv[0]);
	if (rc) {
		const char *msg = out.errmsg[0] ? out.errmsg : strerror(-rc);

		/* what the handler wrote before failing still reaches the client */
		wr = out.err ? 0 : ulnetd_out_flush(&out);
		if (!wr)
			wr = ulnetd_proto_send_frame(fd, 1, rc, msg, strlen(msg));
	} else {
		wr = ulnetd_proto_send_frame(fd, 1, 0, out.buf, out.len);
	}
	if (d->verbose >= 2)
		fprintf(stderr, "ulnetd: control: %s%s -> %d\n", argv[0], argc > 1 ? " ..." : "", rc);
	free(out.buf);
	return wr;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	char line[ULNETD_PROTO_MAX_LINE + 1];
	char *argv[ULNETD_PROTO_MAX_WORDS];

	while (!ulnetd_stopping(c->d)) {
		int argc = ulnetd_proto_recv_request(c->fd, line, sizeof(line), argv);

		if (argc == -EINVAL) { /* empty line */
			static const char msg[] = "empty request";

			if (ulnetd_proto_send_frame(c->fd, 1, -EINVAL, msg, sizeof(msg) - 1))
				break;
			continue;
		}
		if (argc == -E2BIG) {
			static const char msg[] = "request too long";

			ulnetd_proto_send_frame(c->fd, 1, -E2BIG, msg, sizeof(msg) - 1);
			break;
		}
		if (argc <= 0 || serve_one(c->d, c->fd, argc, argv))
			break;
	}
	atomic_store(&c->done, true);
	return NULL;
}

/* Join the threads that finished. With @all, shut every connection down first and join them all. */
static void reap_clients(struct ulnetd_priv *pv, bool all)
{
	struct client **pp, *c, *dead = NULL;

	pthread_mutex_lock(&pv->lock);
	for (pp = &pv->clients; (c = *pp);) {
		if (all)
			shutdown(c->fd, SHUT_RDWR); /* wakes a thread blocked in read */
		if (all || atomic_load(&c->done)) {
			*pp = c->next;
			c->next = dead;
			dead = c;
			pv->n_clients--;
		} else {
			pp = &c->next;
		}
	}
	pthread_mutex_unlock(&pv->lock);
	while ((c = dead)) {
		dead = c->next;
		pthread_join(c->th, NULL);
		close(c->fd);
		free(c);
	}
}

static void accept_client(struct ulnetd *d)
{
	struct ulnetd_priv *pv = d->priv;
	struct client *c;
	int fd = accept4(pv->lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0) {
		int err = errno;

		if (err == EAGAIN || err == EINTR || err == ECONNABORTED)
			return;
		if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
			struct rlimit rl = { 0 };

			/* the listener stays readable: polling it now would spin a core */
			getrlimit(RLIMIT_NOFILE, &rl);
			ULNET_LOGF(ULNET_LOG_ERR, "ULNETD",
				  "control: accept: %s (RLIMIT_NOFILE %llu, %u control connections open); pausing the "
				  "listener for %d ms (raise the limit with ulimit -n)",
				  strerror(err), (unsigned long long)rl.rlim_cur, pv->n_clients, CONTROL_ACCEPT_PAUSE_MS);
			pv->paused_until = ulnet_clock_ns() + CONTROL_ACCEPT_PAUSE_MS * 1000000ull;
			pv->listen_paused = true;
			return;
		}
		ULNET_LOGF(ULNET_LOG_ERR, "ULNETD", "control: accept: %s", strerror(err));
		return;
	}
	reap_clients(pv, false);
	if (pv->n_clients >= CONTROL_MAX_CLIENTS || !(c = calloc(1, sizeof(*c)))) {
		static const char msg[] = "too many control connections";

		ulnetd_proto_send_frame(fd, 1, -EBUSY, msg, sizeof(msg) - 1);
		close(fd);
		return;
	}
	c->d = d;
	c->fd = fd;
	if (pthread_create(&c->th, NULL, client_main, c)) {
		close(fd);
		free(c);
		return;
	}
	pthread_mutex_lock(&pv->lock);
	c->next = pv->clients;
	pv->clients = c;
	pv->n_clients++;
	pthread_mutex_unlock(&pv->lock);
}

/* ---- listener ---- */

int ulnetd_control_open(struct ulnetd *d, char *err, size_t errlen)
{
	struct ulnetd_priv *pv = d->priv;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = d->control_path;
	struct stat st;
	mode_t old;
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "control socket path too long (%zu > %zu bytes): %s", strlen(path),
			 sizeof(sa.sun_path) - 1, path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		int probe;

		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "control socket %s: exists and is not a socket", path);
			return -EEXIST;
		}
		/* A socket nobody answers on is left over from a crash: replace it. */
		rc = ulnetd_proto_connect(path, &probe);
		if (!rc) {
			close(probe);
			snprintf(err, errlen, "control socket %s: another ulnetd is serving it", path);
			return -EADDRINUSE;
		}
		if (rc != -ECONNREFUSED) {
			snprintf(err, errlen, "control socket %s: %s", path, strerror(-rc));
			return rc;
		}
		unlink(path);
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "control socket: %s", strerror(errno));
		return rc;
	}
	old = umask(0177); /* the file is created 0600; no window with wider access */
	rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old);
	if (!rc && chmod(path, 0600))
		rc = -errno;
	if (!rc && listen(fd, 16))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "control socket %s: %s", path, strerror(-rc));
		close(fd);
		return rc;
	}
	pv->lfd = fd;
	pv->bound = true;
	return 0;
}

int ulnetd_control_run(struct ulnetd *d, int sigfd)
{
	struct ulnetd_priv *pv = d->priv;

	for (;;) {
		struct pollfd p[2] = { { .fd = sigfd, .events = POLLIN }, { .fd = pv->lfd, .events = POLLIN } };
		int timeout = 1000;

		if (pv->listen_paused) {
			uint64_t now = ulnet_clock_ns();

			if (now < pv->paused_until) {
				p[1].fd = -1; /* poll ignores it */
				timeout = (int)((pv->paused_until - now + 999999) / 1000000u);
			} else {
				pv->listen_paused = false;
			}
		}
		if (poll(p, 2, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[0].revents) {
			struct signalfd_siginfo si;

			if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si) && d->verbose)
				fprintf(stderr, "ulnetd: signal %u: shutting down\n", si.ssi_signo);
			return 0;
		}
		if (p[1].revents & POLLIN)
			accept_client(d);
		reap_clients(pv, false);
	}
}

void ulnetd_control_close(struct ulnetd *d)
{
	struct ulnetd_priv *pv = d->priv;

	atomic_store(&pv->stopping, true);
	if (pv->lfd >= 0) {
		close(pv->lfd);
		pv->lfd = -1;
	}
	if (pv->bound) {
		unlink(d->control_path);
		pv->bound = false;
	}
	reap_clients(pv, true);
	while (pv->n_hooks) {
		struct close_hook h = pv->hooks[--pv->n_hooks];

		h.fn(d, h.arg);
	}
}
