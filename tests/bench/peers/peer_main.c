/* SPDX-License-Identifier: MIT */
/*
 * The peer benchmarks' client, one main for every transport (see peer.h).
 *
 *   peer_X sub  --rx CH --size B --count N [--idle-ms MS]
 *       Subscribes, prints "READY" (flushed), then takes messages until N
 *       arrived or none came for --idle-ms (default 3000) after the first.
 *       Every message is checked: its length, its sequence number (the
 *       first 8 bytes: missing ones, ones out of order, duplicates) and
 *       every other byte (a pattern of its sequence number). Rate =
 *       messages between the first and the last arrival / that time, as
 *       bench_tput counts it.
 *   peer_X pub  --tx CH --size B --count N
 *       Publishes N messages as fast as the transport takes them (it waits
 *       when the transport pushes back), then sends what is queued.
 *   peer_X pong --rx PING --tx PONG [--idle-ms MS]
 *       Echoes every message of PING on PONG; ends on a message of 8 bytes
 *       or after --idle-ms (default 10000) without one.
 *   peer_X ping --tx PING --rx PONG --count N [--size B] [--warmup W]
 *       W + N round trips, one at a time; one-way = round trip / 2 (a pong
 *       lost for 1 s is counted lost). min, p50, p99, max.
 *
 * Common options: --socket SOCK (pubd's socket), --max-size B. Every role
 * prints one line of figures and one JSON line (bench "peers") with the
 * process's own CPU seconds (all its threads: a library's I/O threads
 * count) and its peak RSS.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "peer.h"

#define PONG_WAIT_MS 1000
#define PATTERN_MUL  0x9E3779B97F4A7C15ull

struct opts {
	struct peer_args a;
	const char *role;
	size_t size;
	uint64_t count, warmup;
	int idle_ms;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Message seq: 8 bytes of seq, then words of a pattern of seq, then its tail bytes. */
static void fill(uint8_t *buf, size_t len, uint64_t seq)
{
	uint64_t w = seq * PATTERN_MUL;
	size_t i = 8;

	memcpy(buf, &seq, 8);
	for (; i + 8 <= len; i += 8, w++)
		memcpy(buf + i, &w, 8);
	for (; i < len; i++)
		buf[i] = (uint8_t)(seq + i);
}

static bool content_ok(const uint8_t *buf, size_t len, uint64_t seq)
{
	uint64_t w = seq * PATTERN_MUL, v;
	size_t i = 8;

	for (; i + 8 <= len; i += 8, w++) {
		memcpy(&v, buf + i, 8);
		if (v != w)
			return false;
	}
	for (; i < len; i++)
		if (buf[i] != (uint8_t)(seq + i))
			return false;
	return true;
}

static void print_self_cost(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	/* Voluntary context switches: how often the process slept (waited
	 * for a wakeup), which is what a round trip pays for in latency. */
	printf(",\"cpu_s\":%.6f,\"maxrss_kb\":%ld,\"sleeps\":%ld",
	       (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
		       (double)ru.ru_stime.tv_usec * 1e-6,
	       ru.ru_maxrss, ru.ru_nvcsw);
}

struct sub_state {
	size_t size;
	uint64_t got, expect, gaps, backwards, bad_len, bad_content, first, last;
};

static void on_sub_msg(const void *data, size_t len, void *arg)
{
	struct sub_state *s = arg;
	uint64_t seq;

	s->last = now_ns();
	if (!s->got)
		s->first = s->last;
	s->got++;
	if (len != s->size || len < 8) {
		s->bad_len++;
		return;
	}
	memcpy(&seq, data, 8);
	if (!content_ok(data, len, seq))
		s->bad_content++;
	if (seq < s->expect) {
		s->backwards++; /* out of order or a duplicate */
		return;
	}
	s->gaps += seq - s->expect;
	s->expect = seq + 1;
}

static int run_sub(struct peer *p, const struct opts *o)
{
	struct sub_state s = {.size = o->size};
	double secs, rate;
	int r;

	printf("READY\n");
	fflush(stdout);
	while (s.got < o->count) {
		r = peer_poll(p, on_sub_msg, &s, s.got ? o->idle_ms : 600000);
		if (r < 0)
			break;
		if (r == 0 && s.got)
			break;
	}
	secs = (double)(s.last - s.first) * 1e-9;
	rate = s.got > 1 && secs > 0 ? (double)(s.got - 1) / secs : 0;
	printf("sub %s: %llu of %llu messages of %zu B in %.3f s: %.0f msg/s, %.2f MB/s; gaps %llu, "
	       "backwards %llu, wrong size %llu, wrong content %llu\n",
	       peer_transport_name(&o->a), (unsigned long long)s.got, (unsigned long long)o->count, o->size, secs, rate,
	       rate * (double)o->size / 1e6, (unsigned long long)s.gaps, (unsigned long long)s.backwards,
	       (unsigned long long)s.bad_len, (unsigned long long)s.bad_content);
	printf("{\"bench\":\"peers\",\"role\":\"sub\",\"transport\":\"%s\",\"size\":%zu,\"count\":%llu,"
	       "\"received\":%llu,\"gaps\":%llu,\"backwards\":%llu,\"wrong_size\":%llu,\"wrong_content\":%llu,"
	       "\"seconds\":%.6f,\"msgs_per_s\":%.1f,\"bytes_per_s\":%.1f",
	       peer_transport_name(&o->a), o->size, (unsigned long long)o->count, (unsigned long long)s.got,
	       (unsigned long long)s.gaps, (unsigned long long)s.backwards, (unsigned long long)s.bad_len,
	       (unsigned long long)s.bad_content, secs, rate, rate * (double)o->size);
	print_self_cost();
	printf("}\n");
	return 0;
}

static int run_pub(struct peer *p, const struct opts *o)
{
	uint8_t *buf = malloc(o->size);
	uint64_t t0, k;
	double secs;

	if (!buf)
		return 2;
	t0 = now_ns();
	for (k = 0; k < o->count; k++) {
		fill(buf, o->size, k);
		if (peer_send(p, buf, o->size) < 0)
			break;
	}
	secs = (double)(now_ns() - t0) * 1e-9;
	free(buf);
	printf("pub %s: %llu messages of %zu B in %.3f s: %.0f msg/s\n", peer_transport_name(&o->a),
	       (unsigned long long)k, o->size, secs, secs > 0 ? (double)k / secs : 0);
	printf("{\"bench\":\"peers\",\"role\":\"pub\",\"transport\":\"%s\",\"size\":%zu,\"count\":%llu,"
	       "\"published\":%llu,\"seconds\":%.6f",
	       peer_transport_name(&o->a), o->size, (unsigned long long)o->count, (unsigned long long)k, secs);
	print_self_cost();
	printf("}\n");
	return k == o->count ? 0 : 1;
}

struct echo_state {
	struct peer *p;
	uint64_t n;
	bool stop, failed;
};

static void on_ping(const void *data, size_t len, void *arg)
{
	struct echo_state *e = arg;

	if (len <= 8) {
		e->stop = true;
		return;
	}
	e->n++;
	if (peer_send(e->p, data, len) < 0)
		e->failed = true;
}

static int run_pong(struct peer *p, const struct opts *o)
{
	struct echo_state e = {.p = p};
	int r;

	printf("READY\n");
	fflush(stdout);
	while (!e.stop && !e.failed) {
		r = peer_poll(p, on_ping, &e, e.n ? o->idle_ms : 600000);
		if (r <= 0)
			break;
	}
	printf("pong %s: echoed %llu\n", peer_transport_name(&o->a), (unsigned long long)e.n);
	printf("{\"bench\":\"peers\",\"role\":\"pong\",\"transport\":\"%s\",\"echoed\":%llu",
	       peer_transport_name(&o->a), (unsigned long long)e.n);
	print_self_cost();
	printf("}\n");
	return e.failed ? 1 : 0;
}

struct pong_state {
	uint64_t want, stale;
	bool got;
};

static void on_pong(const void *data, size_t len, void *arg)
{
	struct pong_state *s = arg;
	uint64_t idx;

	if (len < 8)
		return;
	memcpy(&idx, data, 8);
	if (idx != s->want || !content_ok(data, len, idx)) {
		s->stale++;
		return;
	}
	s->got = true;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, uint64_t n, double p)
{
	uint64_t i = (uint64_t)(p / 100.0 * (double)n + 0.999999);

	if (!n)
		return 0;
	return v[i ? i - 1 : 0];
}

/* One round trip: send ping k, wait for its pong. The one-way time in us, or -1 if lost. */
static double round_trip(struct peer *p, uint8_t *buf, size_t size, uint64_t k, struct pong_state *s)
{
	uint64_t t0 = now_ns();
	int left;

	fill(buf, size, k);
	s->want = k;
	s->got = false;
	if (peer_send(p, buf, size) < 0)
		return -2;
	while (!s->got) {
		left = PONG_WAIT_MS - (int)((now_ns() - t0) / 1000000);
		if (left <= 0 || peer_poll(p, on_pong, s, left) < 0)
			return -1;
	}
	return (double)(now_ns() - t0) / 2e3;
}

static int run_ping(struct peer *p, const struct opts *o)
{
	double *ow = calloc(o->count, sizeof(double)), us;
	uint8_t *buf = malloc(o->size);
	struct pong_state s = {0};
	uint64_t k, n = 0, lost = 0;

	if (!ow || !buf)
		return 2;
	for (k = 0; k < o->warmup + o->count; k++) {
		us = round_trip(p, buf, o->size, k, &s);
		if (us == -2)
			return 1;
		if (us < 0)
			lost++;
		else if (k >= o->warmup)
			ow[n++] = us;
	}
	memset(buf, 0, 8);
	peer_send(p, buf, 8); /* tells pong to stop */
	qsort(ow, n, sizeof(double), cmp_double);
	printf("ping %s: %llu round trips of %zu B: one-way min %.2f p50 %.2f p99 %.2f max %.2f us; lost %llu\n",
	       peer_transport_name(&o->a), (unsigned long long)n, o->size, n ? ow[0] : 0, pct(ow, n, 50),
	       pct(ow, n, 99), n ? ow[n - 1] : 0, (unsigned long long)lost);
	printf("{\"bench\":\"peers\",\"role\":\"ping\",\"transport\":\"%s\",\"size\":%zu,\"samples\":%llu,"
	       "\"lost\":%llu,\"stale\":%llu,\"oneway_min_us\":%.3f,\"oneway_p50_us\":%.3f,\"oneway_p99_us\":%.3f,"
	       "\"oneway_max_us\":%.3f",
	       peer_transport_name(&o->a), o->size, (unsigned long long)n, (unsigned long long)lost,
	       (unsigned long long)s.stale, n ? ow[0] : 0, pct(ow, n, 50), pct(ow, n, 99), n ? ow[n - 1] : 0);
	print_self_cost();
	printf("}\n");
	free(ow);
	free(buf);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: peer sub  --rx CH --size B --count N [--idle-ms MS]\n"
		   "       peer pub  --tx CH --size B --count N\n"
		   "       peer pong --rx PING --tx PONG [--idle-ms MS]\n"
		   "       peer ping --tx PING --rx PONG --count N [--size B] [--warmup W]\n"
		   "  common: [--socket SOCK] (pubd) [--max-size B]\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"tx", required_argument, NULL, 't'},
		{"rx", required_argument, NULL, 'r'},
		{"socket", required_argument, NULL, 's'},
		{"size", required_argument, NULL, 'z'},
		{"count", required_argument, NULL, 'n'},
		{"warmup", required_argument, NULL, 'w'},
		{"idle-ms", required_argument, NULL, 'i'},
		{"max-size", required_argument, NULL, 'm'},
		{NULL, 0, NULL, 0},
	};
	int c;

	o->role = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			o->a.tx = optarg;
			break;
		case 'r':
			o->a.rx = optarg;
			break;
		case 's':
			o->a.socket = optarg;
			break;
		case 'z':
			o->size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			o->count = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			o->warmup = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			o->idle_ms = atoi(optarg);
			break;
		case 'm':
			o->a.max_size = strtoul(optarg, NULL, 0);
			break;
		default:
			return -1;
		}
	}
	if (o->size < 16 || !o->count)
		return -1;
	if (o->a.max_size < o->size)
		o->a.max_size = o->size;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.size = 1024, .count = 10000, .warmup = 100, .idle_ms = 0};
	struct peer *p;
	int rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || parse(argc, argv, &o) < 0) {
		usage(stderr);
		return 2;
	}
	if (!o.idle_ms)
		o.idle_ms = !strcmp(o.role, "pong") ? 10000 : 3000;
	p = peer_open(&o.a);
	if (!p)
		return 2;
	if (!strcmp(o.role, "sub") && o.a.rx)
		rc = run_sub(p, &o);
	else if (!strcmp(o.role, "pub") && o.a.tx)
		rc = run_pub(p, &o);
	else if (!strcmp(o.role, "pong") && o.a.rx && o.a.tx)
		rc = run_pong(p, &o);
	else if (!strcmp(o.role, "ping") && o.a.rx && o.a.tx)
		rc = run_ping(p, &o);
	else
		usage(stderr);
	peer_close(p, 3000);
	return rc;
}
