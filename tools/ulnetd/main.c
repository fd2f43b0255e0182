/* SPDX-License-Identifier: MIT */
/* ulnetd: run one ulnet node in the foreground from a YAML file until SIGTERM/SIGINT, serving the
 * control socket (control.c) that ulnetctl talks to. Startup order: config, signals blocked (so every
 * thread the core starts inherits the mask), node, NIs, commands, control socket. Shutdown runs it
 * backwards. Exit status: 0 after a signal, 1 on any startup error (one line on stderr), 2 on usage.
 * Under systemd (Type=notify, built with -Dsystemd): READY=1 once the NIs are up and the control
 * socket listens, STOPPING=1 at the signal. SIGHUP re-applies the -c file as `ulnetctl import FILE`
 * does (ulnetd_import_file: ulnet_config_apply), on a thread of its own, between RELOADING=1 and
 * READY=1. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#ifdef ULNETD_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#else
/* No libsystemd: no service manager to tell (ulnetd runs in the foreground either way). */
static int sd_notify(int unset_environment, const char *state)
{
	(void)unset_environment;
	(void)state;
	return 0;
}
#endif

#include "metrics_http.h"
#include "ulnetd.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ulnetd -c FILE [--control PATH] [-v]... [--log SUBSYS=LEVEL]...\n"
		"Run one ulnet node in the foreground until SIGTERM or SIGINT; SIGHUP re-applies FILE.\n"
		"\n"
		"  -c, --config FILE     node configuration (YAML, lnetctl export layout + node: section)\n"
		"      --control PATH    control socket (overrides node: control in FILE)\n"
		"  -v, --verbose         more log output (-v info, -vv debug and control requests)\n"
		"      --log SUBSYS=LEVEL  one subsystem's level (CORE, LO, TCP, SST, ULNETD; error, warning,\n"
		"                        info, debug); the others follow -v\n"
		"  -h, --help            this text\n"
		"  -V, --version         print the version\n");
}

/* After SIGTERM/SIGINT the daemon closes everything in order; a command stuck waiting on the network
 * (an RPC that never completes) or a busy node must not keep it alive: past this grace, or at a
 * second signal, it exits at once. */
#define ULNETD_STOP_GRACE_MS 5000

static void *stop_watchdog(void *arg)
{
	struct pollfd p = { .fd = (int)(intptr_t)arg, .events = POLLIN };
	int n = poll(&p, 1, ULNETD_STOP_GRACE_MS);

	fprintf(stderr, "ulnetd: shutdown %s; exiting without waiting for it to finish\n",
		n > 0 ? "interrupted by a second signal"
		      : "still waiting after 5 s (a control command or the node is stuck)");
	_exit(1);
	return NULL;
}

/* Arm the watchdog; it ends the process unless main() returns first. */
static void stop_watchdog_arm(int sigfd)
{
	pthread_attr_t a;
	pthread_t th;
	int fd = dup(sigfd); /* never closed: main() may close sigfd while the watchdog polls */

	if (fd < 0)
		fd = -1; /* poll then only times out */
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &a, stop_watchdog, (void *)(intptr_t)fd))
		fprintf(stderr, "ulnetd: cannot start the shutdown watchdog: %s\n", strerror(errno));
	pthread_attr_destroy(&a);
}

static const char *const level_names[] = { "error", "warning", "info", "debug" };

/* "TCP=debug" -> ulnet_log_set_level. 0 or -1 with a line on stderr. */
static int log_level_arg(const char *arg)
{
	const char *eq = strchr(arg, '=');
	char subsys[16];
	int level = -1, rc;

	for (int i = 0; eq && i < 4; i++)
		if (!strcmp(eq + 1, level_names[i]))
			level = i;
	if (!eq || (size_t)(eq - arg) >= sizeof(subsys) || level < 0) {
		fprintf(stderr, "ulnetd: --log %s: want SUBSYS=LEVEL, LEVEL one of error, warning, info, debug\n", arg);
		return -1;
	}
	memcpy(subsys, arg, (size_t)(eq - arg));
	subsys[eq - arg] = '\0';
	if ((rc = ulnet_log_set_level(subsys, level))) {
		fprintf(stderr, "ulnetd: --log %s: unknown subsystem '%s' (CORE, LO, TCP, SST, ULNETD)\n", arg, subsys);
		return -1;
	}
	return 0;
}

static void log_sink(int level, const char *subsys, const char *line)
{
	const char *lv = level >= 0 && level <= 3 ? level_names[level] : "?";

	/* one fprintf = one locked write, so lines from threads do not interleave */
	fprintf(stderr, "ulnetd: %s: %s: %s\n", lv, subsys ? subsys : "-", line);
}

/* SIGHUP: the -c file applied again, as `ulnetctl import FILE` does (what is new is added, what the
 * node has stays; a file it refuses changes nothing). On a thread of its own so that the control
 * socket keeps answering while NIs start; stopped before the node closes. */
struct reloader {
	struct ulnetd *d;
	int hupfd;      /* signalfd for SIGHUP (blocked in every thread) */
	int stop[2];    /* a pipe: written at shutdown */
	pthread_t th;
	bool running;
};

static void *reload_main(void *arg)
{
	struct reloader *r = arg;
	char err[1024];

	for (;;) {
		struct pollfd p[2] = { { .fd = r->hupfd, .events = POLLIN }, { .fd = r->stop[0], .events = POLLIN } };
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "ulnetd: reload: poll: %s\n", strerror(errno));
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		if (!(p[0].revents & POLLIN) || read(r->hupfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		sd_notify(0, "RELOADING=1\nSTATUS=applying the configuration file again (SIGHUP)");
		if (ulnetd_import_file(r->d, r->d->config_path, err, sizeof(err))) {
			fprintf(stderr, "ulnetd: SIGHUP: %s not applied: %s\n", r->d->config_path, err);
			sd_notify(0, "READY=1\nSTATUS=running; the last reload failed (see the log)");
		} else {
			fprintf(stderr, "ulnetd: SIGHUP: %s applied\n", r->d->config_path);
			sd_notify(0, "READY=1\nSTATUS=running");
		}
	}
}

static int reloader_start(struct reloader *r)
{
	if (pipe2(r->stop, O_CLOEXEC))
		return -errno;
	if ((errno = pthread_create(&r->th, NULL, reload_main, r))) {
		close(r->stop[0]);
		close(r->stop[1]);
		return -errno;
	}
	r->running = true;
	return 0;
}

static void reloader_stop(struct reloader *r)
{
	if (!r->running)
		return;
	if (write(r->stop[1], "x", 1) < 0)
		fprintf(stderr, "ulnetd: reload: %s\n", strerror(errno));
	pthread_join(r->th, NULL);
	close(r->stop[0]);
	close(r->stop[1]);
	r->running = false;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "control", required_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "log", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct ulnetd d = { 0 };
	struct ulnetd_metrics *metrics = NULL;
	struct reloader reload = { .d = &d, .hupfd = -1 };
	struct ulnet_config *cfg = NULL;
	const char *config = NULL, *control = NULL;
	char err[1024];
	sigset_t set, hupset;
	int opt, rc, sigfd = -1, status = 1;

	while ((opt = getopt_long(argc, argv, "c:vhV", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c': config = optarg; break;
		case 'C': control = optarg; break;
		case 'v': d.verbose++; break;
		case 'L':
			if (log_level_arg(optarg))
				return 2;
			break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("ulnetd %s\n", ulnet_version()); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ulnetd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (!config) {
		fprintf(stderr, "ulnetd: no configuration file (-c FILE)\n");
		usage(stderr);
		return 2;
	}
	if ((rc = ulnet_config_load(config, &cfg, err, sizeof(err)))) {
		fprintf(stderr, "ulnetd: %s\n", err);
		return 1;
	}
	d.cfg = cfg;
	d.config_path = config;
	d.control_path = control ? control : cfg->control;
	if (!d.control_path) {
		fprintf(stderr, "ulnetd: %s: no control socket (set node: control, or --control PATH)\n", config);
		goto out_cfg;
	}
	ulnet_log_set(log_sink, d.verbose >= 2 ? 3 : d.verbose ? 2 : 1);

	/* Before any thread exists: the signals are only ever read from sigfd. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigemptyset(&hupset);
	sigaddset(&hupset, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_sigmask(SIG_BLOCK, &hupset, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((sigfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0 ||
	    (reload.hupfd = signalfd(-1, &hupset, SFD_CLOEXEC)) < 0) {
		fprintf(stderr, "ulnetd: signalfd: %s\n", strerror(errno));
		goto out_sig;
	}

	if ((rc = ulnet_config_node_open(cfg, &d.node, err, sizeof(err)))) {
		fprintf(stderr, "ulnetd: %s\n", err);
		goto out_sig;
	}

	if ((rc = ulnetd_control_init(&d)) || (rc = ulnetd_lnet_register(&d)) ||
	    (rc = ulnetd_route_register(&d)) || (rc = ulnetd_metrics_register(&d)) ||
	    (rc = ulnetd_fault_register(&d)) || (rc = ulnetd_global_register(&d)) ||
	    (rc = ulnetd_import_register(&d))) {
		fprintf(stderr, "ulnetd: cannot register commands: %s\n", strerror(-rc));
		goto out_ctl;
	}
	if ((rc = ulnetd_selftest_register(&d))) {
		fprintf(stderr, "ulnetd: cannot register selftest commands: %s\n", strerror(-rc));
		goto out_ctl;
	}
	if ((rc = ulnetd_control_open(&d, err, sizeof(err)))) {
		fprintf(stderr, "ulnetd: %s\n", err);
		goto out_ctl;
	}
	if (cfg->metrics_listen && (rc = ulnetd_metrics_start(d.node, d.selftest, cfg->metrics_listen, &metrics, err, sizeof(err)))) {
		fprintf(stderr, "ulnetd: %s\n", err);
		goto out_ctl;
	}
	if (d.verbose) {
		struct ulnet_nid nid;
		char nb[ULNET_NID_STRLEN];

		ulnet_node_primary_nid(d.node, &nid);
		fprintf(stderr, "ulnetd: node %s pid %u page_size %u ready on %s\n",
			ulnet_nid_format(&nid, nb, sizeof(nb)), ulnet_node_pid(d.node), ulnet_node_page_size(d.node),
			d.control_path);
		if (metrics)
			fprintf(stderr, "ulnetd: metrics on http://%s/metrics\n", cfg->metrics_listen);
	}
	if ((rc = reloader_start(&reload)))
		fprintf(stderr, "ulnetd: cannot start the SIGHUP reload thread: %s (SIGHUP is ignored)\n", strerror(-rc));
	/* the NIs are up and the control socket listens: what Type=notify waits for */
	sd_notify(0, "READY=1\nSTATUS=running");
	rc = ulnetd_control_run(&d, sigfd);
	sd_notify(0, "STOPPING=1");
	if (rc)
		fprintf(stderr, "ulnetd: control: %s\n", strerror(-rc));
	else
		status = 0;
	stop_watchdog_arm(sigfd);
	reloader_stop(&reload); /* a reload in progress finishes first (the watchdog bounds it) */
out_ctl:
	ulnetd_metrics_stop(metrics); /* before control_fini closes the selftest engine it reads */
	ulnetd_control_fini(&d); /* joins every handler before the node goes away */
	ulnet_node_close(d.node);
out_sig:
	if (reload.hupfd >= 0)
		close(reload.hupfd);
	if (sigfd >= 0)
		close(sigfd);
out_cfg:
	ulnet_config_free(cfg);
	return status;
}
