/* SPDX-License-Identifier: MIT */
/*
 * pubd: the multicast publish/subscribe daemon.
 *   pubd [-c FILE]              run in the foreground, log to stderr
 *   pubd --check-config FILE    print OK or every error; exit 0 or 1
 *   pubd --version
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "log.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pubd [-c|--config FILE]   run the daemon in the foreground (default %s)\n"
		"       pubd --check-config FILE  validate a configuration: print OK or every error\n"
		"       pubd -V|--version         print the version\n"
		"       pubd -h|--help            print this\n",
		PUBD_DEFAULT_CONFIG);
}

static int check_config(const char *path)
{
	struct pubd_config_errors errs = {0};
	struct pubd_config cfg;
	const char *prio;
	char line[1024];
	size_t i;
	int err;

	err = pubd_config_load(&cfg, path, &pubd_nss_resolver, &errs);
	if (err == 0) {
		printf("OK\n");
		if (cfg.empty)
			fprintf(stderr,
				"%s: holds no settings (empty, or only comments): pubd starts with it on every "
				"default, "
				"but a reload refuses it (a file of {} means every default)\n",
				path);
		pubd_config_free(&cfg);
		return 0;
	}
	/* Under systemd (ExecReload runs this) the journal reads a "<3>"
	 * prefix as error priority; on a terminal the lines stay plain. */
	prio = getenv("JOURNAL_STREAM") ? "<3>" : "";
	for (i = 0; i < errs.n; i++) {
		pubd_config_error_format(&errs, i, line, sizeof(line));
		fprintf(stderr, "%s%s\n", prio, line);
	}
	if (!errs.n)
		fprintf(stderr, "%s%s: %s\n", prio, path, strerror(-err));
	pubd_config_errors_free(&errs);
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check-config", required_argument, NULL, 'C'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *config = PUBD_DEFAULT_CONFIG;
	struct pubd d;
	int c, err;

	while ((c = getopt_long(argc, argv, "c:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'C':
			return check_config(optarg);
		case 'V':
			printf("pubd %s\n", PUBD_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "pubd: unexpected argument '%s' (the config file goes after -c)\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	/* A client that goes away mid-write must not kill the daemon. */
	signal(SIGPIPE, SIG_IGN);

	err = pubd_init(&d, config);
	if (err == 0)
		err = pubd_run(&d);
	pubd_close(&d);
	if (err < 0) {
		log_err("exiting: %s", strerror(-err));
		return 1;
	}
	log_notice("stopped");
	return 0;
}
