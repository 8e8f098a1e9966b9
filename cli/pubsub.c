// SPDX-License-Identifier: MIT
/* pubctl pub and sub: the commands that stay connected (watch is in watch.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pubctl.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

/* SIGINT/SIGTERM end the loops cleanly (output flushed) instead of killing the process. */
static void catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};

	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: poll() must return EINTR so the loop sees the flag. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int parse_u64(const char *s, const char *what, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-') {
		pubctl_err("%s: '%s' is not a number", what, s);
		return -1;
	}
	return 0;
}

int parse_seconds(const char *s, const char *what, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || *out < 0) {
		pubctl_err("%s: '%s' is not a number of seconds", what, s);
		return -1;
	}
	return 0;
}

/* --rate: messages a second (0: as fast as pubd takes them). */
static int parse_rate(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || *out < 0) {
		pubctl_err("--rate: '%s' is not a number of messages a second", s);
		return -1;
	}
	return 0;
}

/* The whole file (or stdin for "-") as one message. */
static int read_all(const char *path, uint8_t **out, size_t *len)
{
	int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 65536, n = 0;
	uint8_t *buf = NULL, *p;
	ssize_t got;
	int ret = 0;

	if (fd < 0) {
		pubctl_err("%s: %s", path, strerror(errno));
		return -1;
	}
	buf = malloc(cap);
	if (!buf)
		goto nomem;
	for (;;) {
		if (n == cap) {
			p = realloc(buf, cap * 2);
			if (!p)
				goto nomem;
			buf = p;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			pubctl_err("%s: %s", path, strerror(errno));
			ret = -1;
			goto out;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	*out = buf;
	*len = n;
	buf = NULL;
	goto out;
nomem:
	pubctl_err("%s: out of memory", path);
	ret = -1;
out:
	free(buf);
	if (fd != STDIN_FILENO)
		close(fd);
	return ret;
}

/* Load-test content: "#<index> " then the alphabet over and over, cut to size; printable for `sub`. */
static void pattern(uint8_t *p, size_t size, uint64_t index)
{
	char head[32];
	int h = snprintf(head, sizeof(head), "#%" PRIu64 " ", index);

	for (size_t k = 0; k < size; k++)
		p[k] = k < (size_t)h ? (uint8_t)head[k] : (uint8_t)('a' + (k - (size_t)h) % 26);
}

static int publish_failed(struct pubctl *ctl, pub_client_t *c, int r)
{
	if (r == -ENOTCONN) {
		pubctl_err("cannot reach pubd at %s: %s", ctl->socket,
			   pub_errmsg(c)[0] ? pub_errmsg(c) : pub_strerror(r));
		return EXIT_UNREACHABLE;
	}
	pubctl_err("%s", pub_errmsg(c));
	return 1;
}

/* What pub sends: the MESSAGE argument, a file (- for stdin) or size bytes
 * of a pattern. 0, or -1 with the error said. */
static int message_data(const char *text, const char *file, bool have_size, uint64_t size, uint8_t **data, size_t *len)
{
	*data = NULL;
	if (text) {
		*len = strlen(text);
		*data = malloc(*len ? *len : 1);
		if (*data)
			memcpy(*data, text, *len);
	} else if (file) {
		if (read_all(file, data, len) < 0)
			return -1;
	} else {
		*len = (size_t)size;
		*data = malloc(*len ? *len : 1);
	}
	if (!*data) {
		pubctl_err("pub: out of memory");
		return -1;
	}
	return 0;
}

/* Sleep until message i is due at rate messages a second from start: paced
 * against the start, not the previous message, so the rate does not drift. */
static void pace(double start, uint64_t i, double rate)
{
	double due = start + (double)i / rate, wait = due - now_s();

	if (wait > 0) {
		struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};

		nanosleep(&ts, NULL);
	}
}

/* count messages (a pattern numbered by message when sized), then the
 * flush that reports any error pubd gave about an earlier one. */
static int publish_count(pub_client_t *c, const char *group, uint8_t *data, size_t len, uint64_t count, double rate,
			 bool numbered)
{
	double start = now_s();
	int r = 0;

	for (uint64_t i = 0; i < count && !interrupted; i++) {
		if (rate > 0)
			pace(start, i, rate);
		if (numbered)
			pattern(data, len, i);
		/* The last message waits for pubd's word, which covers every earlier
		 * one. Unpaced, the others go out gathered (PUB_MORE); paced, each
		 * leaves when it is due. */
		r = pub_publish(c, group, data, len, i + 1 == count ? PUB_SYNC : rate > 0 ? 0 : PUB_MORE);
		if (r < 0)
			return r;
	}
	return pub_flush(c, -1);
}

/* pub's arguments: GROUP, and one of MESSAGE (text), --file, --size. */
struct pub_args {
	const char *group, *text, *file;
	uint64_t count, size;
	double rate;
	bool have_size;
};

static int pub_usage(void)
{
	pubctl_err("usage: pub GROUP [MESSAGE] [--file F|-] [--count N] [--size B] [--rate MSGS_PER_S]");
	return 1;
}

/* 0, or pub's exit code (1) having said what is wrong. */
static int parse_pub_args(int argc, char **argv, struct pub_args *a)
{
	static const struct option longopts[] = {
		{"file", required_argument, NULL, 'f'},
		{"count", required_argument, NULL, 'n'},
		{"size", required_argument, NULL, 'b'},
		{"rate", required_argument, NULL, 'r'},
		{0},
	};
	int opt;

	*a = (struct pub_args){.count = 1};
	optind = 0; /* 0, not 1: GNU getopt re-initialises (main parsed with "+") */
	while ((opt = getopt_long(argc, argv, "f:n:b:r:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			a->file = optarg;
			break;
		case 'n':
			if (parse_u64(optarg, "--count", &a->count) < 0)
				return 1;
			if (!a->count) {
				pubctl_err("--count: expected at least 1 message, got 0");
				return 1;
			}
			break;
		case 'b':
			if (parse_u64(optarg, "--size", &a->size) < 0)
				return 1;
			a->have_size = true;
			break;
		case 'r':
			if (parse_rate(optarg, &a->rate) < 0)
				return 1;
			break;
		default:
			return pub_usage();
		}
	}
	if (optind >= argc || argc - optind > 2)
		return pub_usage();
	a->group = argv[optind];
	a->text = argc - optind == 2 ? argv[optind + 1] : NULL;
	if ((a->text != NULL) + (a->file != NULL) + a->have_size != 1) {
		pubctl_err("pub: give exactly one of MESSAGE, --file F, --size B");
		return pub_usage();
	}
	return 0;
}

int cmd_pub(struct pubctl *ctl, int argc, char **argv)
{
	struct pub_args a;
	double start, secs;
	uint8_t *data = NULL;
	size_t len = 0;
	pub_client_t *c = NULL;
	struct pub_info info;
	int r, ret = 1;

	r = parse_pub_args(argc, argv, &a);
	if (r)
		return r;
	c = pubctl_connect(ctl, true, false, &ret);
	if (!c)
		goto out;
	/* Told before the pattern is made: a size pubd would refuse is said
	 * as such, not as the "out of memory" of allocating it. */
	if (a.have_size && pub_info(c, &info) == 0 && a.size > info.max_message) {
		pubctl_err("pub: --size %" PRIu64 " is larger than pubd's limits.max_message_size (%" PRIu32 " bytes)",
			   a.size, info.max_message);
		goto out;
	}
	if (message_data(a.text, a.file, a.have_size, a.size, &data, &len) < 0)
		goto out;
	start = now_s();
	r = publish_count(c, a.group, data, len, a.count, a.rate, a.have_size);
	if (r < 0) {
		ret = publish_failed(ctl, c, r);
		goto out;
	}
	secs = now_s() - start;
	if (a.count > 1)
		printf("published %" PRIu64 " messages of %zu bytes to '%s' in %.3f s: %.0f msg/s, %.1f MB/s\n",
		       a.count, len, a.group, secs, secs > 0 ? (double)a.count / secs : 0,
		       secs > 0 ? (double)a.count * (double)len / secs / 1e6 : 0);
	ret = 0;
out:
	pub_close(c);
	free(data);
	return ret;
}

static bool printable(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((p[i] < 0x20 && p[i] != '\t') || p[i] >= 0x7f)
			return false;
	return true;
}

/* GROUP SOURCE SEQ LEN PAYLOAD: the payload as text when it is text, else its size. */
static void print_message(const struct pub_message *m)
{
	enum { SHOW = 80 };
	const uint8_t *p = m->data;
	size_t n = m->len;

	printf("%s %016" PRIx64 " %" PRIu64 " %zu ", m->group, m->source, m->seq, m->len);
	if (n && p[n - 1] == '\n') /* `echo text | pubctl pub g --file -` */
		n--;
	if (printable(p, n))
		printf("%.*s%s\n", (int)(n > SHOW ? SHOW : n), (const char *)p, n > SHOW ? "..." : "");
	else
		printf("<%zu bytes>\n", m->len);
}

/* Wait for pubd's socket to be readable, until deadline (seconds, now_s;
 * negative: for ever). 0 readable (or interrupted), 1 the deadline passed,
 * -1 with the error said. */
static int wait_readable(pub_client_t *c, double deadline)
{
	struct pollfd p = {.fd = pub_fd(c), .events = POLLIN};
	int wait = -1;

	if (deadline >= 0) {
		double left = deadline - now_s();

		if (left <= 0)
			return 1;
		wait = (int)(left * 1000) + 1;
	}
	if (poll(&p, 1, wait) < 0 && errno != EINTR) {
		pubctl_err("poll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Every message waiting (up to count in all, 0: no limit), each written raw
 * to out, or printed as a line when out is NULL. 0, or -1 with the error said. */
static int take_messages(pub_client_t *c, uint64_t count, uint64_t *got, FILE *out)
{
	struct pub_message m;
	int r;

	while ((!count || *got < count) && (r = pub_recv(c, &m, 0)) != 0) {
		if (r < 0 && -r > PUB_EBASE) {
			/* pubd's word (a slow-subscriber cut, a group gone): say so and go on. */
			pubctl_err("warning: %s", pub_errmsg(c));
			continue;
		}
		if (r < 0) {
			pubctl_err("%s", pub_errmsg(c));
			return -1;
		}
		++*got;
		if (out)
			fwrite(m.data, 1, m.len, out);
		else
			print_message(&m);
	}
	return 0;
}

/* sub --count N ended with fewer: say why. */
static void short_count(uint64_t got, uint64_t count, double timeout)
{
	if (interrupted)
		pubctl_err("interrupted: received %" PRIu64 " of %" PRIu64 " messages", got, count);
	else
		pubctl_err("timed out after %g s: received %" PRIu64 " of %" PRIu64 " messages", timeout, got, count);
}

/* Take messages until count of them (0: no end), the timeout or a signal.
 * Returns the exit code: 0, or 1 having said why. */
static int sub_loop(pub_client_t *c, uint64_t count, double timeout, FILE *out, bool to_file)
{
	double deadline = timeout >= 0 ? now_s() + timeout : -1;
	uint64_t got = 0;
	int r;

	while (!interrupted && (!count || got < count)) {
		r = wait_readable(c, deadline);
		if (r > 0)
			break; /* timed out */
		if (r < 0 || take_messages(c, count, &got, to_file ? out : NULL) < 0)
			return 1;
		/* Whatever arrived together is written together: a reader of a pipe sees each batch at once. */
		fflush(out);
	}
	if (count && got < count) {
		short_count(got, count, timeout);
		return 1;
	}
	return 0;
}

int cmd_sub(struct pubctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"count", required_argument, NULL, 'n'},
		{"timeout", required_argument, NULL, 't'},
		{"output", required_argument, NULL, 'o'},
		{0},
	};
	uint64_t count = 0;
	double timeout = -1;
	const char *output = NULL;
	FILE *out = stdout;
	pub_client_t *c = NULL;
	int opt, r, ret = 1;

	optind = 0; /* 0, not 1: GNU getopt re-initialises (main parsed with "+") */
	while ((opt = getopt_long(argc, argv, "n:t:o:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (parse_u64(optarg, "--count", &count) < 0)
				return 1;
			break;
		case 't':
			if (parse_seconds(optarg, "--timeout", &timeout) < 0)
				return 1;
			break;
		case 'o':
			output = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind >= argc)
		goto usage;
	if (output && strcmp(output, "-") != 0) {
		out = fopen(output, "wbe");
		if (!out) {
			pubctl_err("%s: %s", output, strerror(errno));
			return 1;
		}
	}

	/* --timeout bounds the whole wait: a pubd that accepts and never
	 * answers (stopped) is given no longer than that either. */
	if (timeout >= 0 && timeout * 1000 < 10000)
		ctl->request_timeout_ms = timeout * 1000 < 1 ? 1 : (int)(timeout * 1000);
	/* A subscriber survives a pubd restart: libpub reconnects and resubscribes. */
	c = pubctl_connect(ctl, true, true, &ret);
	if (!c)
		goto out;
	for (int i = optind; i < argc; i++) {
		r = pub_subscribe(c, argv[i]);
		if (r < 0) {
			pubctl_err("%s", pub_errmsg(c));
			ret = r == -ENOTCONN ? EXIT_UNREACHABLE : 1;
			goto out;
		}
	}
	catch_signals();
	ret = sub_loop(c, count, timeout, out, output != NULL);
out:
	if (out && fflush(out) != 0 && ret == 0) {
		pubctl_err("%s: %s", output ? output : "stdout", strerror(errno));
		ret = 1;
	}
	if (out && out != stdout)
		fclose(out);
	pub_close(c);
	return ret;
usage:
	pubctl_err("usage: sub GROUP... [--count N] [--timeout SECONDS] [--output FILE]");
	return 1;
}
