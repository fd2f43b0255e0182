/* SPDX-License-Identifier: MIT */
/* ulnetctl: the command line client of a running ulnetd. It checks what it can without the node
 * (command names, NIDs), forwards the command words over the control socket (ctl_proto.h) and prints
 * what the daemon renders; the daemon owns every output format.
 *
 * Exit status: 0 success; 1 the node is unreachable or the operation failed; 2 usage error (unknown
 * command or option, bad NID or argument), whether found here or by the daemon. Every failure is one
 * line on stderr starting with "ulnetctl: ". */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>

#include <ulnet/ulnet.h>

#include "ctl_proto.h"
#include "plan.h"

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

struct cmd {
	const char *name;   /* words, as the daemon registers them */
	const char *usage;
	const char *help;
	bool takes_nid;     /* first positional is [PID-]NID: check it here */
};

static const struct cmd cmds[] = {
	{ "net show", "[-v [LEVEL]] [--net NET] [--json]", "show the local NIs (-v: counters, tunables, credits)", false },
	{ "net add", "--net NET (--nid NID | --if IF[,IF]) [--peer-timeout S] [--peer-credits N] [--peer-buffer-credits N] [--credits N]",
	  "add an NI to the running node", false },
	{ "net del", "--net NET [--if IF]", "remove the NI on NET (delete its routes first; not while the node routes)", false },
	{ "peer add", "--prim_nid NID [--nid NID] [--non_mr]", "add a static peer on a local net (kept while idle)", false },
	{ "peer del", "--prim_nid NID [--nid NID]", "forget a peer (static or not)", false },
	{ "import", "FILE", "apply a configuration file to the running node (what it already has stays)", false },
	{ "export", "[--json]", "print the running configuration, usable as ulnetd -c input", false },
	{ "ping", "[PID-]NID[,NID...]... [--count N] [--timeout S|--timeout_ms MS] [--source NID] [--json]",
	  "ping each NID (up to 16): per reply the time and the target's NIDs", true },
	{ "stats show", "[-v] [--json]",
	  "show the node's counters, drops, latencies and forwarding (-v: descriptor free lists, lock hold times)",
	  false },
	{ "stats reset", "[--net NET] [--nid NID]",
	  "zero the counters and latency histograms: the node's, one NI's (with its peers') or one peer's", false },
	{ "global show", "[--json]", "show lnetctl's globals as ulnet runs them", false },
	{ "set transaction_timeout", "SECONDS", "seconds a GET or ACK-requested PUT waits for its answer", false },
#define REFUSED "lnetctl's; refused: ulnet has no such setting"
	{ "set discovery", "N", REFUSED, false },
	{ "set retry_count", "N", REFUSED, false },
	{ "set health_sensitivity", "N", REFUSED, false },
	{ "set recovery_interval", "N", REFUSED, false },
	{ "set recovery_limit", "N", REFUSED, false },
	{ "set max_recovery_ping_interval", "N", REFUSED, false },
	{ "set response_tracking", "N", REFUSED, false },
	{ "set drop_asym_route", "N", REFUSED, false },
	{ "set numa_range", "N", REFUSED, false },
	{ "set max_interfaces", "N", REFUSED, false },
	{ "set lnd_timeout", "N", REFUSED, false },
#undef REFUSED
	{ "set latency_metrics", "0|1", "stop or start the latency histograms (what they cost: bench/observe_cost.sh)",
	  false },
	{ "peer show", "[-v [LEVEL]] [--nid NID] [--json]",
	  "show the peers (-v: credits, router credits, counters, latencies)", false },
	{ "route add", "--net NET --gateway NID [--hop N] [--priority N] [--health_sensitivity N]",
	  "add a route to a remote net through a gateway on a local net", false },
	{ "route del", "--net NET [--gateway NID]", "delete the routes to NET (through NID only)", false },
	{ "route show", "[--net NET] [--gateway NID] [--hop N] [--priority N] [-v] [--json]",
	  "show the routes (-v: hop, priority, state, type, checker and traffic)", false },
	{ "routing show", "[--json]", "show router buffers, routing settings and forwarding counters", false },
	{ "set routing", "0|1", "disable or enable forwarding for other nodes", false },
	{ "set tiny_buffers", "N", "tiny router buffers (no payload)", false },
	{ "set small_buffers", "N", "small router buffers (4 KiB payloads)", false },
	{ "set large_buffers", "N", "large router buffers (1 MiB payloads)", false },
	{ "set router_sensitivity", "PERCENT", "NIs of a gateway on a route's net that must be up", false },
	{ "set router_buffer_memory", "BYTES", "bytes of router buffers over every pool (k/M/G)", false },
	{ "set alive_router_check_interval", "SECONDS", "ping gateways this often (0: never)", false },
	{ "set router_ping_timeout", "SECONDS", "a gateway's ping answer is late after this", false },
#define FAULT_MATCH "[--source NID] [--dest NID] [--local_nid NID] --rate N|--interval S [--portal P] [--message PUT,GET]"
	{ "fault drop add", FAULT_MATCH " [--health_error NAME]", "drop matching messages (docs/faults.md)", false },
	{ "fault delay add", FAULT_MATCH " --latency MS", "delay matching messages on send", false },
	{ "fault corrupt add", FAULT_MATCH, "flip a payload byte of matching PUTs and REPLYs on send", false },
	{ "fault duplicate add", FAULT_MATCH, "send matching messages twice", false },
	{ "fault reorder add", FAULT_MATCH " [--hold MS]", "hold matching messages until the next one to the peer", false },
	{ "fault drop del", "--source NID [--dest NID] | --all", "delete drop rules (delay, corrupt... del alike)", false },
	{ "fault delay del", "--source NID [--dest NID] | --all", "delete delay rules", false },
	{ "fault corrupt del", "--source NID [--dest NID] | --all", "delete corrupt rules", false },
	{ "fault duplicate del", "--source NID [--dest NID] | --all", "delete duplicate rules", false },
	{ "fault reorder del", "--source NID [--dest NID] | --all", "delete reorder rules", false },
	{ "fault drop show", "[--json]", "show drop rules and their counters", false },
	{ "fault delay show", "[--json]", "show delay rules and their counters", false },
	{ "fault corrupt show", "[--json]", "show corrupt rules and their counters", false },
	{ "fault duplicate show", "[--json]", "show duplicate rules and their counters", false },
	{ "fault reorder show", "[--json]", "show reorder rules and their counters", false },
#define FAULT_CONN "[--source NID] [--dest NID] [--local_nid NID] --rate N|--interval S"
	{ "fault hello add", FAULT_CONN " [--version N]", "tcp: our HELLO to/from a matching peer carries a wrong version",
	  false },
	{ "fault reject add", FAULT_CONN " --reason N|NAME",
	  "o2ib: reject a matching peer's connection request with that o2iblnd reason", false },
	{ "fault stall add", FAULT_CONN " [--latency MS]", "tcp, o2ib: a matching peer's connections neither send nor read",
	  false },
	{ "fault hello del", "--source NID [--dest NID] | --all", "delete hello rules", false },
	{ "fault reject del", "--source NID [--dest NID] | --all", "delete reject rules", false },
	{ "fault stall del", "--source NID [--dest NID] | --all", "delete stall rules (stalled connections go on)", false },
	{ "fault hello show", "[--json]", "show hello rules and their counters", false },
	{ "fault reject show", "[--json]", "show reject rules and their counters", false },
	{ "fault stall show", "[--json]", "show stall rules and their counters", false },
	{ "fault show", "[--json]", "show every fault rule and its counters", false },
	{ "fault reset", "", "set every fault rule's counters to 0", false },
	{ "call", "WORD...", "send any command the daemon serves (`call help` lists them)", false },
};
#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: ulnetctl [--node PATH] COMMAND [ARGS]\n"
		   "Talk to a running ulnetd over its control socket.\n\n"
		   "  --node PATH     control socket of the node (default: $ULNET_NODE)\n"
		   "  -h, --help      this text; COMMAND --help for one command\n"
		   "  -V, --version   print the version\n\ncommands:\n");
	for (size_t i = 0; i < N_CMDS; i++)
		fprintf(f, "  %s %s\n      %s\n", cmds[i].name, cmds[i].usage, cmds[i].help);
	fprintf(f, "  plan %s\n      %s\n", plan_usage, plan_help);
	fprintf(f, "\nOutput is YAML in lnetctl's layout, or JSON with --json.\n"
		   "Exit status: 0 ok, 1 failure or unreachable node, 2 usage error.\n");
}

__attribute__((format(printf, 1, 2))) static void err(const char *fmt, ...)
{
	va_list ap;

	fputs("ulnetctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}


/* The first argument that is not an option or an option's value. */
static const char *first_positional(int argc, char **argv)
{
	static const char *const with_value[] = { "--count", "-c", "--timeout", "-t", "--timeout_ms", "--source", "-s",
						   "--net", "--nid" };

	for (int i = 0; i < argc; i++) {
		bool takes = false;

		if (argv[i][0] != '-' || !argv[i][1])
			return argv[i];
		for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
			takes |= !strcmp(argv[i], with_value[k]);
		if (takes)
			i++;
	}
	return NULL;
}

/* "[PID-]NID", or lnetctl's comma list of them. */
static int check_nid_arg(const char *s)
{
	char buf[1024], *save = NULL;

	if (strlen(s) >= sizeof(buf)) {
		err("NID list too long");
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		const char *nid = t, *dash = strchr(t, '-'), *why = NULL;
		struct ulnet_nid n;

		if (dash && dash > t && strspn(t, "0123456789") == (size_t)(dash - t))
			nid = dash + 1;
		if (ulnet_nid_parse(nid, &n, &why)) {
			err("bad NID '%s': %s", nid, why ? why : "invalid");
			return -EINVAL;
		}
	}
	return 0;
}

/* Send argv, print every frame. Returns the exit status. */
static int run(const char *node, int argc, char **argv)
{
	const char *bad = NULL;
	int fd, rc, status = EXIT_FAIL;

	if ((rc = ulnetd_proto_connect(node, &fd))) {
		err("cannot reach node at %s: %s", node, strerror(-rc));
		return EXIT_FAIL;
	}
	if ((rc = ulnetd_proto_send_request(fd, argc, argv, &bad))) {
		if (rc == -EINVAL && bad)
			err("argument '%s' is empty or holds spaces or control characters", bad);
		else if (rc == -E2BIG)
			err("command line too long");
		else
			err("cannot talk to node at %s: %s", node, strerror(-rc));
		close(fd);
		return rc == -EINVAL || rc == -E2BIG ? EXIT_USAGE : EXIT_FAIL;
	}
	for (;;) {
		int final, code;
		char *body;
		size_t len;

		if ((rc = ulnetd_proto_recv_frame(fd, &final, &code, &body, &len))) {
			if (rc == -ECONNRESET)
				err("node at %s closed the connection", node);
			else if (rc == -EPROTO)
				err("node at %s sent a malformed answer", node);
			else
				err("cannot talk to node at %s: %s", node, strerror(-rc));
			break;
		}
		if (!final || !code) {
			fwrite(body, 1, len, stdout);
			fflush(stdout);
		}
		if (final) {
			if (code) {
				/* the daemon's one-line reason; strip any newline it might hold */
				body[strcspn(body, "\n")] = '\0';
				err("%s", len ? body : strerror(-code));
				status = code == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
			} else {
				status = 0;
			}
			free(body);
			break;
		}
		free(body);
	}
	close(fd);
	return status;
}

int main(int argc, char **argv)
{
	const char *node = getenv("ULNET_NODE");
	const struct cmd *c = NULL;
	size_t words = 0;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("ulnetctl %s\n", ulnet_version());
			return 0;
		} else if (!strcmp(argv[i], "--node")) {
			if (++i == argc) {
				err("option '--node' needs a value");
				return EXIT_USAGE;
			}
			node = argv[i];
		} else if (!strncmp(argv[i], "--node=", 7)) {
			node = argv[i] + 7;
		} else {
			err("unknown option '%s' (try 'ulnetctl --help')", argv[i]);
			return EXIT_USAGE;
		}
	}
	argc -= i;
	argv += i;
	if (!argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[0], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[0], "plan")) { /* offline: no node involved */
		for (int k = 1; k < argc; k++)
			if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
				printf("usage: ulnetctl plan %s\n  %s\n", plan_usage, plan_help);
				return 0;
			}
		return plan_main(argc - 1, argv + 1);
	}
	for (size_t k = 0; k < N_CMDS; k++) {
		size_t w = ulnetd_proto_words_match(cmds[k].name, argc, argv);

		if (w > words) {
			c = &cmds[k];
			words = w;
		}
	}
	if (!c) {
		err("unknown command '%s%s%s' (try 'ulnetctl --help')", argv[0], argc > 1 ? " " : "",
		    argc > 1 ? argv[1] : "");
		return EXIT_USAGE;
	}
	for (int k = (int)words; k < argc; k++) {
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
			if (strcmp(c->name, "call")) {
				printf("usage: ulnetctl [--node PATH] %s %s\n  %s\n", c->name, c->usage, c->help);
				return 0;
			}
		}
	}
	if (!strcmp(c->name, "call")) {
		argc--;
		argv++;
		if (!argc) {
			err("call: missing command words");
			return EXIT_USAGE;
		}
	} else if (c->takes_nid) {
		const char *nid = first_positional(argc - (int)words, argv + words);

		if (!nid) {
			err("%s: missing NID", c->name);
			return EXIT_USAGE;
		}
		if (check_nid_arg(nid))
			return EXIT_USAGE;
	}
	if (!node || !*node) {
		err("no node given (use --node PATH or set ULNET_NODE)");
		return EXIT_USAGE;
	}
	if (!strcmp(c->name, "import") && argc > 1) {
		/* the daemon reads the file from its own working directory: give it the whole path */
		static char path[PATH_MAX];

		if (!realpath(argv[1], path)) {
			err("import: %s: %s", argv[1], strerror(errno));
			return EXIT_USAGE;
		}
		argv[1] = path;
	}
	return run(node, argc, argv);
}
