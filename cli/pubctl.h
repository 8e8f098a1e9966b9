/* SPDX-License-Identifier: MIT */
/* pubctl internals: the command table's context and the shared helpers. */
#ifndef PUBCTL_H
#define PUBCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <pub.h>

/* Exit codes: 0 fine, 1 an error, 2 pubd cannot be reached. */
#define EXIT_UNREACHABLE 2

struct pubctl {
	const char *socket; /* resolved: -s, else $PUBD_SOCKET, else the default */
	bool json;
	const char *prog;
	const char *cmd;
	int request_timeout_ms; /* pub_options' (0: libpub's default); sub --timeout bounds it */
};

/* Connect (or print the one-line reason and return NULL with *exit_code set).
 * data: for pub and sub, which take the socket's data path unless
 * $PUBD_TRANSPORT asks for another; queries always take the socket alone
 * (shared-memory logs, 2 MiB and more of pubd's, would serve no message). */
pub_client_t *pubctl_connect(struct pubctl *ctl, bool data, bool reconnect, int *exit_code);
/* Print "pubctl: " + message to stderr. */
void pubctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Option values (pubsub.c): print what was expected and return -1 when s is not one. */
int parse_u64(const char *s, const char *what, uint64_t *out);
int parse_seconds(const char *s, const char *what, double *out);

/* render.c */
struct render {
	FILE *out;
	bool json;
	int ntables; /* printed so far (commas, blank lines) */
};
void render_begin(struct render *r, FILE *out, bool json);
int render_table(const struct pub_table *t, void *arg); /* a pub_table_cb */
void render_end(struct render *r);
void json_string(FILE *out, const char *s, size_t len);
/* Lines of text as they are, but for what put_text would also replace (a '?'). */
void render_lines(FILE *out, const char *s, size_t len);

/* commands */
int cmd_pub(struct pubctl *ctl, int argc, char **argv);
int cmd_sub(struct pubctl *ctl, int argc, char **argv);
int cmd_watch(struct pubctl *ctl, int argc, char **argv);

#endif
