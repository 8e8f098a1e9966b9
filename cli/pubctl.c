// SPDX-License-Identifier: MIT
/*
 * pubctl: look at and talk to the local pubd.
 *
 * One table of subcommands drives both dispatch and --help. Queries print
 * whatever tables pubd answers with (any columns), as text or --json.
 * Exit codes: 0 fine, 1 an error, 2 pubd cannot be reached.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pubctl.h"

struct command {
	const char *name;
	int (*fn)(struct pubctl *ctl, int argc, char **argv);
	const char *args;
	const char *help;
};

static int cmd_query(struct pubctl *ctl, int argc, char **argv);
static int cmd_help(struct pubctl *ctl, int argc, char **argv);

static const struct command commands[] = {
	{"status", cmd_query, "", "pubd's state, fabric and counters"},
	{"groups", cmd_query, "", "configured groups with subscriber and message counts"},
	{"group", cmd_query, "NAME", "one group: local subscribers, publishers, remote sources"},
	{"clients", cmd_query, "", "connected clients"},
	{"drops", cmd_query, "", "messages not delivered, by scope and reason"},
	{"sources", cmd_query, "", "remote sources heard, with sequence numbers and losses"},
	{"reload", cmd_query, "", "re-read pubd's configuration (as SIGHUP does)"},
	{"metrics", cmd_query, "", "pubd's Prometheus metrics, as metrics.listen serves them on /metrics"},
	{"pub", cmd_pub, "GROUP [MESSAGE] [--file F|-] [--count N] [--size B] [--rate R]",
	 "publish a message (or N of B bytes, batched unless --rate), confirmed by pubd"},
	{"sub", cmd_sub, "GROUP... [--count N] [--timeout S] [--output FILE]",
	 "print (or save) the messages of groups"},
	{"watch", cmd_watch, "[--interval S] [--count N]",
	 "live view like top: rates per group, fabric, drops (q quits); see below"},
	{"help", cmd_help, "", "this text"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

void pubctl_err(const char *fmt, ...)
{
	va_list ap;

	fputs("pubctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out, "Usage: %s [-s SOCKET] [--json] COMMAND [ARGS]\n\n", prog);
	fprintf(out, "Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char left[80];

		snprintf(left, sizeof(left), "%s %s", commands[i].name, commands[i].args);
		if (strlen(left) > 24)
			fprintf(out, "  %s\n  %-24s  %s\n", left, "", commands[i].help);
		else
			fprintf(out, "  %-24s  %s\n", left, commands[i].help);
	}
	fprintf(out, "\nOptions:\n"
		     "  -s, --socket PATH  pubd's socket (default: $" PUB_SOCKET_ENV ", else " PUB_DEFAULT_SOCKET ")\n"
		     "      --json         queries print one JSON object {\"table\": [{column: value}, ...]}\n"
		     "  -h, --help         this text\n"
		     "  -V, --version      pubctl's version\n"
		     "\nwatch: on a terminal, one screen redrawn every interval (default 1s), changed\n"
		     "values highlighted, q or Ctrl-C quits; if pubd goes away it says so and reconnects.\n"
		     "Not on a terminal: one plain-text frame per interval. --count N: stop after N frames.\n"
		     "\npub and sub send and receive through the socket ($PUBD_TRANSPORT=shm: shared memory);\n"
		     "queries always use the socket alone.\n"
		     "\nExit status: 0 success, 1 error, 2 pubd cannot be reached.\n");
}

static int cmd_help(struct pubctl *ctl, int argc, char **argv)
{
	usage(stdout, ctl->prog);
	return 0;
}

pub_client_t *pubctl_connect(struct pubctl *ctl, bool data, bool reconnect, int *exit_code)
{
	const char *transport = getenv(PUB_TRANSPORT_ENV);
	struct pub_options o = PUB_OPTIONS_INIT;
	pub_client_t *c;
	int r;

	o.client_name = "pubctl";
	/* The socket data path is pubctl's (issue 12): a shell's publisher or
	 * subscriber is not what shared memory is for, and the socket keeps
	 * it working against a pubd with daemon.shm: off or its logs full.
	 * $PUBD_TRANSPORT still picks, as for any libpub program. */
	if (!data || !transport || !transport[0])
		o.transport = PUB_TRANSPORT_SOCKET;
	o.request_timeout_ms = ctl->request_timeout_ms;
	if (!reconnect)
		o.flags |= PUB_OPT_NO_RECONNECT;
	r = pub_connect(&c, ctl->socket, &o);
	if (r == 0)
		return c;
	if (r == -PUB_EVERSION) {
		pubctl_err("%s", pub_errmsg(NULL));
		*exit_code = 1;
	} else {
		/* libpub's words say more than the code: pubd's own refusal
		 * ("out of file descriptors"), or that it accepted and never
		 * answered (stopped, or stuck). */
		const char *why = pub_errmsg(NULL);

		if (why[0])
			pubctl_err("%s", why);
		else
			pubctl_err("cannot reach pubd at %s: %s", ctl->socket, pub_strerror(r));
		*exit_code = EXIT_UNREACHABLE;
	}
	return NULL;
}

static int query_kind(const char *name)
{
	static const struct {
		const char *name;
		int kind;
	} kinds[] = {
		{"status", PUB_Q_STATUS},   {"groups", PUB_Q_GROUPS},	{"group", PUB_Q_GROUP},
		{"clients", PUB_Q_CLIENTS}, {"drops", PUB_Q_DROPS},	{"sources", PUB_Q_SOURCES},
		{"reload", PUB_Q_RELOAD},   {"metrics", PUB_Q_METRICS},
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].name, name) == 0)
			return kinds[i].kind;
	return -1;
}

/* `pubctl metrics` without --json: the pieces joined (a character may
 * straddle two), printed once whole, as it is but for what a terminal
 * would act on (render_lines). */
static int join_metrics(const struct pub_table *t, void *arg)
{
	FILE *text = arg;

	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		if (t->cells[i].type == PUB_VALUE_STR &&
		    fwrite(t->cells[i].s, 1, t->cells[i].len, text) != t->cells[i].len)
			return -1;
	return 0;
}

static int query_metrics_text(pub_client_t *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *text = open_memstream(&buf, &len);
	int r;

	if (!text)
		return -1;
	r = pub_query(c, PUB_Q_METRICS, NULL, join_metrics, text);
	if (fclose(text) == 0 && r >= 0)
		render_lines(stdout, buf, len);
	free(buf);
	return r;
}

/* The queries: status, groups, group NAME, clients, drops, sources, reload, metrics. */
static int cmd_query(struct pubctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {{"json", no_argument, NULL, 'j'}, {0}};
	int kind = query_kind(ctl->cmd), opt, r, code = 0;
	const char *arg = NULL;
	struct render rd;
	pub_client_t *c;

	optind = 0; /* 0, not 1: GNU getopt re-initialises (main parsed with "+") */
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt != 'j') {
			pubctl_err("usage: %s %s%s", ctl->cmd, kind == PUB_Q_GROUP ? "NAME " : "", "[--json]");
			return 1;
		}
		ctl->json = true;
	}
	if (kind == PUB_Q_GROUP) {
		if (optind + 1 != argc) {
			pubctl_err("usage: group NAME [--json]");
			return 1;
		}
		arg = argv[optind];
	} else if (optind != argc) {
		pubctl_err("%s takes no arguments", ctl->cmd);
		return 1;
	}
	c = pubctl_connect(ctl, false, false, &code);
	if (!c)
		return code;
	render_begin(&rd, stdout, ctl->json);
	if (kind == PUB_Q_METRICS && !ctl->json)
		r = query_metrics_text(c);
	else
		r = pub_query(c, kind, arg, render_table, &rd);
	if (r < 0) {
		/* Nothing half-printed: JSON closes what it opened, text just stops. */
		if (ctl->json)
			render_end(&rd);
		pubctl_err("%s", pub_errmsg(c));
		pub_close(c);
		return 1;
	}
	if (kind == PUB_Q_RELOAD && !ctl->json && rd.ntables == 0)
		printf("pubd reloaded its configuration\n");
	render_end(&rd);
	pub_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	struct pubctl ctl = {.prog = "pubctl"};
	const char *env;
	int opt;

	/* "+": stop at the subcommand; its own options are parsed by it. */
	while ((opt = getopt_long(argc, argv, "+s:hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			ctl.socket = optarg;
			break;
		case 'j':
			ctl.json = true;
			break;
		case 'h':
			usage(stdout, ctl.prog);
			return 0;
		case 'V':
			printf("pubctl %s (libpub %s)\n", PUBD_VERSION, pub_version());
			return 0;
		default:
			usage(stderr, ctl.prog);
			return 1;
		}
	}
	if (!ctl.socket) {
		env = getenv(PUB_SOCKET_ENV);
		ctl.socket = env && *env ? env : PUB_DEFAULT_SOCKET;
	}
	if (optind >= argc) {
		usage(stderr, ctl.prog);
		return 1;
	}
	ctl.cmd = argv[optind];
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, ctl.cmd) == 0)
			return commands[i].fn(&ctl, argc - optind, argv + optind);
	pubctl_err("unknown command '%s' (see %s --help)", ctl.cmd, ctl.prog);
	return 1;
}
