/* SPDX-License-Identifier: MIT */
/*
 * soak_client: the libpub load of the soak (tests/soak/run.sh).
 *
 *   soak_client pub -s SOCK -g GROUP [-g GROUP...] [--min-size B] [--max-size B]
 *                   [--rate R] [--batch K] [--count N] [--seed S] [--stats FILE]
 *       Publish to the groups in turn, sizes log-uniform in [min, max]
 *       (at least 16 bytes), at most R messages per second (0: as fast as
 *       pubd takes them). With --batch K, every message but each K-th goes
 *       with PUB_MORE. --count N: stop after N messages (0: until SIGTERM).
 *       On the end (count reached or SIGTERM) flushes, confirms the last
 *       message with PUB_SYNC and writes its tallies to FILE.
 *   soak_client sub -s SOCK -g GROUP [-g GROUP...] [--slow-ms MS] [--slow-batch N]
 *                   [--seconds S] [--unsub-after-ms MS] [--stats FILE]
 *       Subscribe and count what arrives per group, checking the payload of
 *       every message that carries the soak's pattern. --slow-ms: read at
 *       most --slow-batch messages, then nothing for MS milliseconds (a slow
 *       subscriber). --unsub-after-ms: unsubscribe the first group after
 *       that long, mid-stream. SIGUSR1: read as fast as possible from now on
 *       and, once nothing arrived for 500 ms (drained), write the tallies to
 *       FILE. SIGTERM: write them and exit.
 *
 * Payload: "SOAK", u32 length, u64 index, then an xorshift stream seeded by
 * both, so a subscriber can tell a damaged message from a foreign one (the
 * soak's forger makes whole messages too, without the magic).
 *
 * Tallies (FILE, one "key value" per line, rewritten each time):
 *   pub: published N, bytes B, err_<code> N for each refusal seen.
 *   sub: recv_<group> N, bad N (pattern broken), foreign N (no magic),
 *        errors N, reconnects N, drained 0|1.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pub.h"

#define MAX_GROUPS  16
#define MAX_ERRS    16
#define SOAK_MAGIC  0x4b414f53u /* "SOAK" little-endian */
#define SOAK_HDR    16
#define DRAIN_QUIET 500 /* ms without a message: drained */

struct opts {
	const char *sock, *stats, *mode;
	const char *groups[MAX_GROUPS];
	unsigned ngroups;
	uint64_t min_size, max_size, rate, batch, count, seed;
	long slow_ms, slow_batch, seconds, unsub_after_ms;
};

struct err_tally {
	int code;
	uint64_t n;
};

static volatile sig_atomic_t got_term, got_usr1;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		got_usr1 = 1;
	else
		got_term = 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void fill(uint8_t *p, uint32_t size, uint64_t idx)
{
	uint64_t x = (idx ^ ((uint64_t)size << 40)) * 0x9e3779b97f4a7c15ull + 1;
	uint32_t magic = SOAK_MAGIC, i;

	memcpy(p, &magic, 4);
	memcpy(p + 4, &size, 4);
	memcpy(p + 8, &idx, 8);
	for (i = SOAK_HDR; i < size; i++)
		p[i] = (uint8_t)(xorshift(&x) >> 32);
}

/* 1: the soak's pattern, intact; 0: damaged; -1: not the soak's (foreign). */
static int check(const uint8_t *p, size_t len)
{
	uint64_t idx, x;
	uint32_t magic, size;
	size_t i;

	if (len < SOAK_HDR)
		return -1;
	memcpy(&magic, p, 4);
	if (magic != SOAK_MAGIC)
		return -1;
	memcpy(&size, p + 4, 4);
	memcpy(&idx, p + 8, 8);
	if (size != len)
		return 0;
	x = (idx ^ ((uint64_t)size << 40)) * 0x9e3779b97f4a7c15ull + 1;
	for (i = SOAK_HDR; i < len; i++)
		if (p[i] != (uint8_t)(xorshift(&x) >> 32))
			return 0;
	return 1;
}

static void tally_err(struct err_tally *t, int code)
{
	unsigned i;

	for (i = 0; i < MAX_ERRS && t[i].n; i++)
		if (t[i].code == code)
			break;
	if (i == MAX_ERRS)
		i = MAX_ERRS - 1; /* the last slot collects the rest */
	t[i].code = code;
	t[i].n++;
}

/* Written to a temporary name and renamed: run.sh never reads half a file. */
static void write_stats(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	if (!path)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fputs(text, f);
	if (fclose(f) == 0)
		rename(tmp, path);
}

static int connect_client(const struct opts *o, pub_client_t **c)
{
	struct pub_options po = PUB_OPTIONS_INIT;

	po.client_name = o->mode;
	po.connect_timeout_ms = 10000;
	if (pub_connect(c, o->sock, &po) < 0) {
		fprintf(stderr, "soak_client: connect %s: %s\n", o->sock, pub_errmsg(NULL));
		return -1;
	}
	return 0;
}

static uint32_t pick_size(const struct opts *o, uint64_t *rng)
{
	double lo = log((double)o->min_size), hi = log((double)o->max_size);
	double u = (double)(xorshift(rng) >> 11) / 9007199254740992.0;
	uint64_t s = (uint64_t)exp(lo + (hi - lo) * u);

	if (s < o->min_size)
		s = o->min_size;
	if (s > o->max_size)
		s = o->max_size;
	return (uint32_t)s;
}

static void pub_stats(const struct opts *o, uint64_t published, uint64_t bytes, const struct err_tally *errs)
{
	char text[2048];
	size_t used;
	unsigned i;

	used = (size_t)snprintf(text, sizeof(text), "published %" PRIu64 "\nbytes %" PRIu64 "\n", published, bytes);
	for (i = 0; i < MAX_ERRS && errs[i].n && used < sizeof(text); i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "err_%d %" PRIu64 "\n", errs[i].code,
					 errs[i].n);
	write_stats(o->stats, text);
}

static int cmd_pub(const struct opts *o)
{
	struct err_tally errs[MAX_ERRS] = {{0}};
	uint64_t rng = o->seed * 0x9e3779b97f4a7c15ull + 12345, i, published = 0, bytes = 0, t0;
	pub_client_t *c = NULL;
	uint8_t *buf;
	int err;

	buf = malloc(o->max_size);
	if (!buf || connect_client(o, &c) < 0) {
		free(buf);
		return 1;
	}
	t0 = now_ms();
	for (i = 0; !got_term && (!o->count || i < o->count); i++) {
		const char *g = o->groups[i % o->ngroups];
		uint32_t size = pick_size(o, &rng);
		bool last = o->count && i + 1 == o->count;
		int flags = last ? PUB_SYNC : (o->batch > 1 && (i + 1) % o->batch) ? PUB_MORE : 0;

		if (o->rate) {
			/* Pacing against the clock, not synchronisation. */
			uint64_t due = t0 + i * 1000 / o->rate, now = now_ms();

			if (due > now) {
				struct timespec ts = {(time_t)((due - now) / 1000),
						      (long)((due - now) % 1000) * 1000000};

				nanosleep(&ts, NULL);
				if (got_term)
					break;
			}
		}
		fill(buf, size, i);
		err = pub_publish(c, g, buf, size, flags);
		if (err < 0) {
			tally_err(errs, -err);
			if (err == -ENOTCONN) {
				/* pubd went away (or dropped us): a breath before the next try. */
				struct timespec ts = {0, 50000000};

				nanosleep(&ts, NULL);
			}
			continue;
		}
		published++;
		bytes += size;
		if ((i & 255) == 0)
			pub_stats(o, published, bytes, errs);
	}
	/* Whatever PUB_MORE left in the handle goes out, and pubd's verdict on
	 * everything so far comes back. */
	err = pub_flush(c, 5000);
	if (err < 0)
		tally_err(errs, -err);
	pub_stats(o, published, bytes, errs);
	pub_close(c);
	free(buf);
	return 0;
}

struct sub_tally {
	uint64_t recv[MAX_GROUPS], bad, foreign, errors, reconnects;
	bool drained;
};

static void sub_stats(const struct opts *o, const struct sub_tally *t)
{
	char text[4096];
	size_t used = 0;
	unsigned i;

	for (i = 0; i < o->ngroups; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "recv_%s %" PRIu64 "\n", o->groups[i],
					 t->recv[i]);
	snprintf(text + used, sizeof(text) - used,
		 "bad %" PRIu64 "\nforeign %" PRIu64 "\nerrors %" PRIu64 "\nreconnects %" PRIu64 "\ndrained %d\n",
		 t->bad, t->foreign, t->errors, t->reconnects, t->drained ? 1 : 0);
	write_stats(o->stats, text);
}

static int cmd_sub(const struct opts *o)
{
	struct sub_tally t;
	uint64_t start, last_msg, deadline, wake = 0;
	pub_client_t *c = NULL;
	struct pub_message m;
	struct pub_info info;
	bool fast = o->slow_ms <= 0, unsubscribed = false, drain_started = false;
	long read_in_batch = 0;
	unsigned i;
	int err;

	memset(&t, 0, sizeof(t));
	if (connect_client(o, &c) < 0)
		return 1;
	for (i = 0; i < o->ngroups; i++) {
		err = pub_subscribe(c, o->groups[i]);
		if (err < 0) {
			fprintf(stderr, "soak_client: subscribe %s: %s\n", o->groups[i], pub_errmsg(c));
			t.errors++;
		}
	}
	sub_stats(o, &t);
	start = last_msg = now_ms();
	deadline = o->seconds > 0 ? start + (uint64_t)o->seconds * 1000 : UINT64_MAX;
	while (!got_term && now_ms() < deadline) {
		uint64_t now = now_ms();

		if (got_usr1 && !t.drained) {
			if (!fast || !drain_started) {
				/* The quiet period counts from the signal on. */
				fast = true;
				drain_started = true;
				last_msg = now;
			}
			if (now - last_msg >= DRAIN_QUIET) {
				t.drained = true;
				sub_stats(o, &t);
			}
		}
		if (!unsubscribed && o->unsub_after_ms > 0 && now - start >= (uint64_t)o->unsub_after_ms) {
			unsubscribed = true;
			if (pub_unsubscribe(c, o->groups[0]) < 0)
				t.errors++;
		}
		if (!fast && read_in_batch >= o->slow_batch) {
			/* A slow reader: nothing for slow_ms, then another batch. */
			if (!wake)
				wake = now + (uint64_t)o->slow_ms;
			if (now < wake) {
				struct timespec ts = {0, 20000000};

				nanosleep(&ts, NULL);
				continue;
			}
			wake = 0;
			read_in_batch = 0;
		}
		err = pub_recv(c, &m, 100);
		if (pub_info(c, &info) == 0)
			t.reconnects = info.reconnects;
		if (err == 0)
			continue;
		if (err < 0) {
			t.errors++;
			if (err == -ENOMEM || err == -PUB_EPROTO)
				break;
			continue;
		}
		last_msg = now_ms();
		read_in_batch++;
		for (i = 0; i < o->ngroups; i++)
			if (strcmp(m.group, o->groups[i]) == 0)
				t.recv[i]++;
		switch (check(m.data, m.len)) {
		case 0:
			t.bad++;
			break;
		case -1:
			t.foreign++;
			break;
		}
		if (((t.recv[0] + t.foreign) & 255) == 0)
			sub_stats(o, &t);
	}
	sub_stats(o, &t);
	pub_close(c);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: soak_client pub|sub -s SOCK -g GROUP... [options] (see the source's header)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"socket", required_argument, NULL, 's'},
		{"group", required_argument, NULL, 'g'},
		{"min-size", required_argument, NULL, 1},
		{"max-size", required_argument, NULL, 2},
		{"rate", required_argument, NULL, 3},
		{"batch", required_argument, NULL, 4},
		{"count", required_argument, NULL, 5},
		{"seed", required_argument, NULL, 6},
		{"stats", required_argument, NULL, 7},
		{"slow-ms", required_argument, NULL, 8},
		{"slow-batch", required_argument, NULL, 9},
		{"seconds", required_argument, NULL, 10},
		{"unsub-after-ms", required_argument, NULL, 11},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {.min_size = 64, .max_size = 1024, .slow_batch = 16};
	struct sigaction sa = {.sa_handler = on_signal};
	int ch;

	if (argc < 2)
		usage();
	o.mode = argv[1];
	optind = 2;
	while ((ch = getopt_long(argc, argv, "s:g:", lo, NULL)) != -1) {
		switch (ch) {
		case 's':
			o.sock = optarg;
			break;
		case 'g':
			if (o.ngroups == MAX_GROUPS)
				usage();
			o.groups[o.ngroups++] = optarg;
			break;
		case 1:
			o.min_size = strtoull(optarg, NULL, 0);
			break;
		case 2:
			o.max_size = strtoull(optarg, NULL, 0);
			break;
		case 3:
			o.rate = strtoull(optarg, NULL, 0);
			break;
		case 4:
			o.batch = strtoull(optarg, NULL, 0);
			break;
		case 5:
			o.count = strtoull(optarg, NULL, 0);
			break;
		case 6:
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 7:
			o.stats = optarg;
			break;
		case 8:
			o.slow_ms = strtol(optarg, NULL, 0);
			break;
		case 9:
			o.slow_batch = strtol(optarg, NULL, 0);
			break;
		case 10:
			o.seconds = strtol(optarg, NULL, 0);
			break;
		case 11:
			o.unsub_after_ms = strtol(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (!o.sock || !o.ngroups)
		usage();
	if (o.min_size < SOAK_HDR)
		o.min_size = SOAK_HDR;
	if (o.max_size < o.min_size)
		o.max_size = o.min_size;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(o.mode, "pub") == 0)
		return cmd_pub(&o);
	if (strcmp(o.mode, "sub") == 0)
		return cmd_sub(&o);
	usage();
	return 2;
}
