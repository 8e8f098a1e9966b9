/* SPDX-License-Identifier: MIT */
/*
 * Benchmarks 1 and 2: throughput between two daemons. The subscriber runs
 * on one daemon, the publisher on the other; both are plain libpub clients.
 *
 *   bench_tput sub -s SOCK -g GROUP --size BYTES --count N [--idle-ms MS]
 *       Subscribes, prints "READY" (flushed) so a script knows it may start
 *       the publisher, then counts messages until N arrived or none came for
 *       --idle-ms (default 3000) after the first. Rate = messages between the
 *       first and the last arrival / that time (so the publisher's start-up
 *       and the idle wait are not counted). Message loss is the gaps in the
 *       sequence the publisher writes into each payload; each payload is
 *       checked whole (the index, then zeros), and one that comes behind
 *       the sequence (out of order, or twice) is counted.
 *   bench_tput pub -s SOCK -g GROUP --size BYTES --count N [--rate MSGS_PER_S] [--more]
 *       Publishes N messages as fast as pubd takes them (pubd pushes back
 *       when its send queue is full), or paced at --rate. --more publishes
 *       with PUB_MORE (libpub writes many small messages at once).
 *
 * Each prints one line of figures and one JSON line (bench "tput", case
 * "sub" or "pub"); vm-bench.sh pairs them with ib_send_bw's figure.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_tput sub -s SOCK -g GROUP --size BYTES --count N [--idle-ms MS]\n"
		   "       bench_tput pub -s SOCK -g GROUP --size BYTES --count N [--rate MSGS_PER_S] [--more]\n");
}

static int run_sub(const char *sock, const char *group, size_t size, uint64_t count, int idle_ms)
{
	pub_client_t *c = bench_connect(sock, "bench-tput-sub");
	uint64_t got = 0, bad = 0, gaps = 0, expect = 0, first = 0, last = 0, idx, late = 0, wrong = 0;
	static const uint8_t zeros[4096];
	struct pub_message m;
	struct bench_json j;
	double secs, rate;
	char a[32];
	int r;

	if (pub_subscribe(c, group) < 0) {
		fprintf(stderr, "bench_tput: %s\n", pub_errmsg(c));
		return 2;
	}
	printf("READY\n");
	fflush(stdout);
	while (got < count) {
		/* Wait as long as it takes for the first, then at most idle_ms between two. */
		r = pub_recv(c, &m, got ? idle_ms : 600000);
		if (r == 0)
			break;
		if (r < 0) {
			fprintf(stderr, "bench_tput: recv: %s\n", pub_errmsg(c));
			break;
		}
		last = bench_now_ns();
		if (!got)
			first = last;
		got++;
		if (m.len != size || m.len < sizeof(idx)) {
			bad++;
			continue;
		}
		memcpy(&idx, m.data, sizeof(idx));
		/* Behind the index, the publisher's bytes are zeros: every
		 * message is checked whole (a repaired one too). */
		for (size_t off = sizeof(idx); off < m.len; off += sizeof(zeros)) {
			size_t n = m.len - off < sizeof(zeros) ? m.len - off : sizeof(zeros);

			if (memcmp((const uint8_t *)m.data + off, zeros, n)) {
				wrong++;
				break;
			}
		}
		if (idx < expect) {
			late++; /* out of order, or twice */
			continue;
		}
		if (idx > expect)
			gaps += idx - expect;
		expect = idx + 1;
	}
	/* The first arrival starts the clock: it and its bytes are not in the rate. */
	secs = (double)(last - first) * 1e-9;
	rate = got > 1 && secs > 0 ? (double)(got - 1) / secs : 0;
	printf("sub: %llu of %llu messages of %zu B in %.3f s: %s msg/s, %.2f MB/s payload; lost %llu (%.2f%%), "
	       "wrong size %llu, wrong bytes %llu, out of order %llu\n",
	       (unsigned long long)got, (unsigned long long)count, size, secs, bench_si(rate, a, sizeof(a)),
	       rate * (double)size / MIB, (unsigned long long)(count - got),
	       count ? 100.0 * (double)(count - got) / (double)count : 0, (unsigned long long)bad,
	       (unsigned long long)wrong, (unsigned long long)late);
	bench_json_begin(&j, "tput", "sub");
	bench_json_int(&j, "size", (long long)size);
	bench_json_int(&j, "count", (long long)count);
	bench_json_int(&j, "received", (long long)got);
	bench_json_int(&j, "seq_gaps", (long long)gaps);
	bench_json_int(&j, "wrong_size", (long long)bad);
	bench_json_int(&j, "wrong_bytes", (long long)wrong);
	bench_json_int(&j, "out_of_order", (long long)late);
	bench_json_num(&j, "seconds", secs);
	bench_json_num(&j, "msgs_per_s", rate);
	bench_json_num(&j, "bytes_per_s", rate * (double)size);
	bench_json_end(&j);
	pub_close(c);
	return 0;
}

static int run_pub(const char *sock, const char *group, size_t size, uint64_t count, double rate, bool more)
{
	pub_client_t *c = bench_connect(sock, "bench-tput-pub");
	uint8_t *buf = calloc(1, size < 8 ? 8 : size);
	uint64_t t0, t1, k;
	struct bench_json j;
	double secs, got;
	char a[32];
	int r = 0;

	if (!buf)
		return 2;
	t0 = bench_now_ns();
	for (k = 0; k < count; k++) {
		if (rate > 0) {
			uint64_t due = t0 + (uint64_t)((double)k * 1e9 / rate);

			while (bench_now_ns() < due)
				;
		}
		memcpy(buf, &k, sizeof(k));
		/* The last one synchronously: pubd has taken every message when it returns. */
		r = pub_publish(c, group, buf, size, k + 1 == count ? PUB_SYNC : more ? PUB_MORE : 0);
		if (r < 0) {
			fprintf(stderr, "bench_tput: publish #%llu: %s\n", (unsigned long long)k, pub_errmsg(c));
			break;
		}
	}
	t1 = bench_now_ns();
	secs = (double)(t1 - t0) * 1e-9;
	got = secs > 0 ? (double)k / secs : 0;
	printf("pub: %llu messages of %zu B in %.3f s: %s msg/s, %.2f MB/s payload\n", (unsigned long long)k, size,
	       secs, bench_si(got, a, sizeof(a)), got * (double)size / MIB);
	bench_json_begin(&j, "tput", "pub");
	bench_json_int(&j, "size", (long long)size);
	bench_json_int(&j, "count", (long long)count);
	bench_json_int(&j, "published", (long long)k);
	bench_json_num(&j, "seconds", secs);
	bench_json_num(&j, "msgs_per_s", got);
	bench_json_num(&j, "bytes_per_s", got * (double)size);
	bench_json_end(&j);
	free(buf);
	pub_close(c);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'},
		{"group", required_argument, NULL, 'g'},
		{"size", required_argument, NULL, 'z'},
		{"count", required_argument, NULL, 'n'},
		{"idle-ms", required_argument, NULL, 'i'},
		{"rate", required_argument, NULL, 'r'},
		{"more", no_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *sock = NULL, *group = NULL, *role;
	size_t size = 1024;
	uint64_t count = 10000;
	int idle_ms = 3000, c;
	double rate = 0;
	bool more = false;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	role = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "s:g:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'g':
			group = optarg;
			break;
		case 'z':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			count = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			idle_ms = atoi(optarg);
			break;
		case 'r':
			rate = strtod(optarg, NULL);
			break;
		case 'm':
			more = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!sock || !group || size < 8 || !count) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(role, "sub"))
		return run_sub(sock, group, size, count, idle_ms);
	if (!strcmp(role, "pub"))
		return run_pub(sock, group, size, count, rate, more);
	usage(stderr);
	return 2;
}
