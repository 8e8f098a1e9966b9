/* SPDX-License-Identifier: MIT */
/*
 * Benchmark 3: latency, ping-pong between a libpub client on each of two
 * daemons through two groups (ping: A -> B, pong: B -> A).
 *
 *   bench_lat pong -s SOCK [--ping G] [--pong G] [--idle-ms MS]
 *       Subscribes to the ping group, prints "READY", and publishes every
 *       ping it receives back on the pong group, unchanged. Ends after
 *       --idle-ms (default 10000) without a ping, or on a zero-length ping.
 *   bench_lat ping -s SOCK [--ping G] [--pong G] --count N [--size B] [--warmup W]
 *       Subscribes to the pong group, then sends W + N pings one at a time,
 *       each waiting for its own pong (a lost one is given up after 1 s and
 *       counted). One-way latency = round trip / 2, as ib_send_lat reports.
 *       Prints min, p50, p99, max, and one JSON line (bench "lat", case "ping").
 *
 *   bench_lat pair --count N [--size B] [--warmup W]
 *       The floor of any local hop, for scale: the same ping-pong between two
 *       processes over one Unix SOCK_SEQPACKET pair (one-way = one wakeup of
 *       the peer). A pubd one-way trip crosses two such hops and the fabric.
 *
 * The ping payload carries its index so a late pong of an abandoned ping is
 * recognised and skipped.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define PONG_WAIT_MS 1000

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_lat pong -s SOCK [--ping G] [--pong G] [--idle-ms MS]\n"
		   "       bench_lat ping -s SOCK [--ping G] [--pong G] --count N [--size B] [--warmup W]\n"
		   "       bench_lat pair --count N [--size B] [--warmup W]\n");
}

static int run_pong(const char *sock, const char *ping, const char *pong, int idle_ms)
{
	pub_client_t *c = bench_connect(sock, "bench-lat-pong");
	struct pub_message m;
	uint64_t n = 0;
	int r;

	if (pub_subscribe(c, ping) < 0) {
		fprintf(stderr, "bench_lat: %s\n", pub_errmsg(c));
		return 2;
	}
	printf("READY\n");
	fflush(stdout);
	for (;;) {
		r = pub_recv(c, &m, n ? idle_ms : 600000);
		if (r <= 0) {
			if (r < 0)
				fprintf(stderr, "bench_lat: pong recv: %s\n", pub_errmsg(c));
			break;
		}
		if (m.len == 0)
			break;
		n++;
		r = pub_publish(c, pong, m.data, m.len, 0);
		if (r < 0) {
			fprintf(stderr, "bench_lat: pong publish: %s\n", pub_errmsg(c));
			break;
		}
	}
	printf("pong: echoed %llu\n", (unsigned long long)n);
	pub_close(c);
	return 0;
}

static void report(const char *kase, size_t size, uint64_t warmup, double *oneway, uint64_t n, uint64_t lost,
		   uint64_t stale)
{
	struct bench_json j;
	double p50, p99, mn, mx, mean = 0;
	uint64_t k;

	for (k = 0; k < n; k++)
		mean += oneway[k];
	mean = n ? mean / (double)n : 0;
	p99 = bench_percentile(oneway, n, 99);
	p50 = bench_percentile(oneway, n, 50);
	mn = n ? oneway[0] : 0;
	mx = n ? oneway[n - 1] : 0;
	printf("%s: %llu round trips of %zu B (after %llu warm-up): one-way min %.2f p50 %.2f p99 %.2f max %.2f "
	       "mean %.2f us; lost %llu, stale %llu\n",
	       kase, (unsigned long long)n, size, (unsigned long long)warmup, mn, p50, p99, mx, mean,
	       (unsigned long long)lost, (unsigned long long)stale);
	bench_json_begin(&j, "lat", kase);
	bench_json_int(&j, "size", (long long)size);
	bench_json_int(&j, "samples", (long long)n);
	bench_json_num(&j, "oneway_min_us", mn);
	bench_json_num(&j, "oneway_p50_us", p50);
	bench_json_num(&j, "oneway_p99_us", p99);
	bench_json_num(&j, "oneway_max_us", mx);
	bench_json_num(&j, "oneway_mean_us", mean);
	bench_json_int(&j, "lost", (long long)lost);
	bench_json_end(&j);
}

static int run_pair(uint64_t count, size_t size, uint64_t warmup)
{
	double *oneway = calloc(count, sizeof(double));
	uint8_t *buf = calloc(1, size);
	uint64_t k, n = 0;
	int fd[2], st;
	pid_t pid;

	if (!oneway || !buf || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fd) < 0)
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		ssize_t r;

		close(fd[0]);
		while ((r = recv(fd[1], buf, size, 0)) > 0)
			if (send(fd[1], buf, (size_t)r, 0) < 0)
				break;
		_exit(0);
	}
	close(fd[1]);
	for (k = 0; k < warmup + count; k++) {
		uint64_t t0 = bench_now_ns();

		if (send(fd[0], buf, size, 0) < 0 || recv(fd[0], buf, size, 0) <= 0) {
			perror("bench_lat: pair");
			break;
		}
		if (k >= warmup)
			oneway[n++] = (double)(bench_now_ns() - t0) / 2e3;
	}
	close(fd[0]);
	waitpid(pid, &st, 0);
	report("pair", size, warmup, oneway, n, 0, 0);
	free(oneway);
	free(buf);
	return 0;
}

static int run_ping(const char *sock, const char *ping, const char *pong, uint64_t count, size_t size, uint64_t warmup)
{
	pub_client_t *c = bench_connect(sock, "bench-lat-ping");
	double *oneway = calloc(count, sizeof(double));
	uint8_t *buf = calloc(1, size);
	uint64_t k, idx, lost = 0, stale = 0, n = 0;
	struct pub_message m;
	int r;

	if (!oneway || !buf)
		return 2;
	if (pub_subscribe(c, pong) < 0) {
		fprintf(stderr, "bench_lat: %s\n", pub_errmsg(c));
		return 2;
	}
	for (k = 0; k < warmup + count; k++) {
		uint64_t t0 = bench_now_ns(), t1;

		memcpy(buf, &k, sizeof(k));
		r = pub_publish(c, ping, buf, size, 0);
		if (r < 0) {
			fprintf(stderr, "bench_lat: ping publish: %s\n", pub_errmsg(c));
			return 1;
		}
		for (;;) {
			int left = PONG_WAIT_MS - (int)((bench_now_ns() - t0) / 1000000);

			r = left > 0 ? pub_recv(c, &m, left) : 0;
			if (r < 0) {
				fprintf(stderr, "bench_lat: ping recv: %s\n", pub_errmsg(c));
				return 1;
			}
			if (r == 0) {
				lost++;
				break;
			}
			t1 = bench_now_ns();
			if (m.len < sizeof(idx))
				continue;
			memcpy(&idx, m.data, sizeof(idx));
			if (idx != k) {
				stale++;
				continue;
			}
			if (k >= warmup)
				oneway[n++] = (double)(t1 - t0) / 2e3;
			break;
		}
	}
	/* Tell the pong side to stop. */
	pub_publish(c, ping, buf, 0, PUB_SYNC);
	report("ping", size, warmup, oneway, n, lost, stale);
	free(oneway);
	free(buf);
	pub_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'},
		{"ping", required_argument, NULL, 'p'},
		{"pong", required_argument, NULL, 'q'},
		{"count", required_argument, NULL, 'n'},
		{"size", required_argument, NULL, 'z'},
		{"warmup", required_argument, NULL, 'w'},
		{"idle-ms", required_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *sock = NULL, *ping = "ping", *pong = "pong", *role;
	uint64_t count = 2000, warmup = 100;
	size_t size = 64;
	int idle_ms = 10000, c;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	role = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "s:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'p':
			ping = optarg;
			break;
		case 'q':
			pong = optarg;
			break;
		case 'n':
			count = strtoull(optarg, NULL, 0);
			break;
		case 'z':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			warmup = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			idle_ms = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!strcmp(role, "pair") && size >= 8 && count)
		return run_pair(count, size, warmup);
	if (!sock || size < 8 || !count) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(role, "pong"))
		return run_pong(sock, ping, pong, idle_ms);
	if (!strcmp(role, "ping"))
		return run_ping(sock, ping, pong, count, size, warmup);
	usage(stderr);
	return 2;
}
