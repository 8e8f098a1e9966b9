/* SPDX-License-Identifier: MIT */
/*
 * Benchmark 6: instructions per message on pubd's receive path (and, from
 * the same runs, its publish path), counted by callgrind: repeatable where
 * seconds are not, so a change that slows the hot path shows.
 *
 *   publisher --> A --udp loopback--> B --> subscriber
 *
 * Both daemons run under `valgrind --tool=callgrind --instr-atstart=no`.
 * Once the clients are connected and a warm-up has gone through (first-use
 * costs: source tables, reassembly streams, malloc arenas), instrumentation
 * is switched on with callgrind_control, M messages pass one at a time (the
 * next is published when the previous was delivered: every message takes
 * the same path, a wakeup of its own, so the count does not depend on how
 * the scheduler happened to batch), and instrumentation is switched off.
 * The daemons do not linger after work (fabric.rx_linger_us: 0): polls
 * that wait for the other side would count time, not the path.
 *
 * Each size runs with M = N and M = 2N; the difference divided by N is the
 * cost of one message with every fixed cost (start, connection, toggling)
 * cancelled. Timers keep firing while a run lasts (heartbeats, stats), so an
 * idle run measures their instructions per second and the difference is
 * corrected by rate x (duration 2N - duration N). B's figure is the receive
 * path: epoll wakeup, recvmmsg, wire decode, reassembly, fan-out, writev to
 * the subscriber. A's is the publish path: the client socket read, framing,
 * fragmenting, sendmmsg, and the discard of its own looped-back datagrams.
 *
 * A third pair of runs, at 64 B, puts the subscriber on A too, on a group
 * of scope host: A's figure is then the local path of one daemon (publish
 * log read, fan-out, the write into the subscriber's log and its wakeup)
 * with no fabric send in it.
 *
 * A fourth pair, at 64 B over the fabric, keeps 64 messages in flight
 * instead of one: each wakeup then finds several, and the figure is what a
 * message costs under load, with the loop's and the system calls' fixed
 * costs shared. It is printed next to the one-at-a-time figure, which
 * stays the measure of the path.
 *
 * The per-function difference of the two profiles (callgrind_annotate) is
 * printed too: where the instructions go, per message.
 *
 *   bench_rxcost [--quick] [--count-small N] [--count-large N] [--keep]
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define WARMUP		50
#define IDLE_SECONDS	3
#define TOP_FUNCS	14
#define MAX_FUNCS	4096
#define DELIVER_WAIT_MS 10000
#define STREAM_WINDOW	64

static char outdir[96];
static bool keep;

struct cost {
	double ir_a, ir_b; /* instructions while instrumented */
	double seconds;
	uint64_t delivered, lost;
	char file_a[160], file_b[160];
};

static int run_cmd(const char *const *argv)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* callgrind_control is chatty on success: keep the table clean (its exit status tells). */
		if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(127);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int instr(pid_t pid, bool on)
{
	char p[16];
	const char *argv[] = {"callgrind_control", on ? "--instr=on" : "--instr=off", p, NULL};

	snprintf(p, sizeof(p), "%d", (int)pid);
	return run_cmd(argv);
}

/* "totals: N" (or "summary: N") of a callgrind output file. */
static double totals(const char *path)
{
	char line[512];
	double v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "totals:", 7) || !strncmp(line, "summary:", 8))
			v = strtod(strchr(line, ':') + 1, NULL);
	}
	fclose(f);
	return v;
}

static int start_pair(struct bench_daemon *a, struct bench_daemon *b, const char *tag)
{
	char body[1024], addr[32], out_a[160], out_b[160];
	const char *pa[] = {"valgrind", "--tool=callgrind", "--instr-atstart=no", out_a, NULL};
	const char *pb[] = {"valgrind", "--tool=callgrind", "--instr-atstart=no", out_b, NULL};
	static unsigned pairs;

	snprintf(out_a, sizeof(out_a), "--callgrind-out-file=%s/tx-%s.out", outdir, tag);
	snprintf(out_b, sizeof(out_b), "--callgrind-out-file=%s/rx-%s.out", outdir, tag);
	/* A fresh port per pair: a datagram of the last pair still in flight
	 * must not count here. No linger after work (fabric.rx_linger_us): its
	 * polls while the other side answers are time, not the path, and under
	 * load they made the same build's figure swing by half. */
	snprintf(body, sizeof(body),
		 "fabric:\n  type: udp\n  udp_port: %u\n  rx_linger_us: 0\n"
		 "limits:\n  max_message_size: 1MiB\n"
		 "groups:\n  - name: rx\n    address: %s\n  - name: here\n    scope: host\n",
		 bench_udp_port() + pairs++, bench_group_addr(2, addr, sizeof(addr)));
	if (bench_daemon_start(a, "cg-a", body, pa, 120000) < 0)
		return -1;
	if (bench_daemon_start(b, "cg-b", body, pb, 120000) < 0) {
		bench_daemon_stop(a, 20000, false);
		return -1;
	}
	return 0;
}

/* One message through A and B, waiting for its delivery. Returns 1 delivered, 0 lost. */
static int one(pub_client_t *pub, pub_client_t *sub, const char *group, uint8_t *buf, size_t size, uint64_t k)
{
	struct pub_message m;
	uint64_t idx;
	int r;

	memcpy(buf, &k, sizeof(k));
	if (pub_publish(pub, group, buf, size, 0) < 0) {
		fprintf(stderr, "bench_rxcost: publish: %s\n", pub_errmsg(pub));
		exit(2);
	}
	for (;;) {
		r = pub_recv(sub, &m, DELIVER_WAIT_MS);
		if (r < 0) {
			fprintf(stderr, "bench_rxcost: recv: %s\n", pub_errmsg(sub));
			exit(2);
		}
		if (r == 0)
			return 0;
		memcpy(&idx, m.data, sizeof(idx));
		if (idx == k)
			return 1;
	}
}

/*
 * count messages with up to window of them in flight: published ahead of
 * their deliveries, so each daemon finds several at a wakeup and its fixed
 * costs (the loop turn, the system calls' setup) are shared, as under
 * load. What is still undelivered when a wait times out is lost.
 */
static void stream(pub_client_t *pub, pub_client_t *sub, const char *group, uint8_t *buf, size_t size, uint64_t count,
		   unsigned window, struct cost *c)
{
	uint64_t sent = 0, idx;
	struct pub_message m;
	int r;

	while (c->delivered + c->lost < count) {
		for (; sent < count && sent - c->delivered - c->lost < window; sent++) {
			idx = WARMUP + sent;
			memcpy(buf, &idx, sizeof(idx));
			if (pub_publish(pub, group, buf, size, 0) < 0) {
				fprintf(stderr, "bench_rxcost: publish: %s\n", pub_errmsg(pub));
				exit(2);
			}
		}
		r = pub_recv(sub, &m, DELIVER_WAIT_MS);
		if (r < 0) {
			fprintf(stderr, "bench_rxcost: recv: %s\n", pub_errmsg(sub));
			exit(2);
		}
		if (r == 0) {
			c->lost = sent - c->delivered; /* all in flight */
			continue;
		}
		memcpy(&idx, m.data, sizeof(idx));
		if (idx >= WARMUP && c->delivered + c->lost < sent)
			c->delivered++;
	}
}

static int ignore_table(const struct pub_table *t, void *arg)
{
	(void)t;
	(void)arg;
	return 0;
}

/* On the direct path pubd reads a publisher's log lazily (half full, or
 * at a tick), so whether a run's messages were read inside the counted
 * window was chance: the local figure came out anywhere from -340 to 850.
 * A query reads every direct log first (its counts are as of now): asked
 * as the window opens and again before it closes, every message the run
 * published is read inside it, and the query's own cost cancels out. */
static void catch_up(pub_client_t *c)
{
	if (pub_query(c, PUB_Q_GROUPS, NULL, ignore_table, NULL) < 0) {
		fprintf(stderr, "bench_rxcost: query: %s\n", pub_errmsg(c));
		exit(2);
	}
}

/* local: publisher and subscriber both on A, on its host group (B idles):
 * A's figure is then the whole local path, publish log to group log.
 * window 1: one message at a time, each delivered before the next goes. */
static int measure(const char *tag, size_t size, uint64_t count, unsigned window, unsigned idle_s, bool local,
		   struct cost *c)
{
	const char *group = local ? "here" : "rx";
	struct bench_daemon a, b;
	pub_client_t *pub, *sub;
	uint8_t *buf = calloc(1, size < 8 ? 8 : size);
	uint64_t k, t0;

	memset(c, 0, sizeof(*c));
	if (!buf || start_pair(&a, &b, tag) < 0)
		return -1;
	sub = bench_connect(local ? a.sock : b.sock, "bench-rxcost-sub");
	pub = bench_connect(a.sock, "bench-rxcost-pub");
	if (pub_subscribe(sub, group) < 0) {
		fprintf(stderr, "bench_rxcost: %s\n", pub_errmsg(sub));
		return -1;
	}
	for (k = 0; k < WARMUP && count; k++)
		one(pub, sub, group, buf, size, k);
	if (local)
		catch_up(pub);
	if (instr(a.pid, true) != 0 || instr(b.pid, true) != 0) {
		fprintf(stderr, "bench_rxcost: callgrind_control --instr=on failed\n");
		return -1;
	}
	t0 = bench_now_ns();
	if (!count)
		bench_sleep_ms(idle_s * 1000);
	for (k = 0; window <= 1 && k < count; k++) {
		if (one(pub, sub, group, buf, size, WARMUP + k))
			c->delivered++;
		else
			c->lost++;
	}
	if (window > 1)
		stream(pub, sub, group, buf, size, count, window, c);
	if (local)
		catch_up(pub);
	c->seconds = (double)(bench_now_ns() - t0) * 1e-9;
	instr(a.pid, false);
	instr(b.pid, false);
	pub_close(pub);
	pub_close(sub);
	bench_daemon_stop(&a, 60000, false);
	bench_daemon_stop(&b, 60000, false);
	snprintf(c->file_a, sizeof(c->file_a), "%s/tx-%s.out", outdir, tag);
	snprintf(c->file_b, sizeof(c->file_b), "%s/rx-%s.out", outdir, tag);
	c->ir_a = totals(c->file_a);
	c->ir_b = totals(c->file_b);
	free(buf);
	if (c->ir_a < 0 || c->ir_b < 0) {
		fprintf(stderr, "bench_rxcost: no totals in %s or %s\n", c->file_a, c->file_b);
		return -1;
	}
	return 0;
}

/* ---- the clients' side of the local path ---- */

/*
 * On the direct path (daemon.shm_direct) a local message goes from the
 * publisher's log to the subscriber without pubd: the local path's cost is
 * the clients'. This program, run again under callgrind as a client of A
 * (--client), publishes and receives `count` messages on A's host group
 * after the warm-up, collecting only inside pub_publish and pub_recv
 * (--toggle-collect): their inclusive counts, N and 2N runs apart, are the
 * publish and receive paths per message.
 */
static int client_mode(const char *sock, uint64_t count)
{
	pub_client_t *pub = bench_connect(sock, "bench-rxcost-pub"), *sub = bench_connect(sock, "bench-rxcost-sub");
	uint8_t buf[64] = {0};
	uint64_t k;

	if (pub_subscribe(sub, "here") < 0) {
		fprintf(stderr, "bench_rxcost: %s\n", pub_errmsg(sub));
		return 2;
	}
	for (k = 0; k < WARMUP; k++)
		one(pub, sub, "here", buf, sizeof(buf), k);
	for (k = 0; k < count; k++)
		if (!one(pub, sub, "here", buf, sizeof(buf), WARMUP + k))
			return 3;
	pub_close(pub);
	pub_close(sub);
	return 0;
}

/* Inclusive instructions of function fn ("pub_publish") in a profile. */
static double inclusive(const char *file, const char *fn)
{
	char cmd[512], line[1024], want[96];
	double v = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "callgrind_annotate --inclusive=yes --threshold=100 '%s' 2>/dev/null", file);
	snprintf(want, sizeof(want), ":%s [", fn);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		const char *s = line;
		double ir = 0;

		if (!strstr(line, want))
			continue;
		while (*s == ' ')
			s++;
		for (; (*s >= '0' && *s <= '9') || *s == ','; s++)
			if (*s != ',')
				ir = ir * 10 + (*s - '0');
		v = ir;
		break;
	}
	pclose(p);
	return v;
}

/* The clients' run of count messages under callgrind, against a fresh A. */
static int measure_clients(const char *self, const char *tag, uint64_t count, double *publish, double *recv)
{
	char out[200], sock[PATH_MAX], n[24];
	struct bench_daemon a, b;
	int rc;

	if (start_pair(&a, &b, tag) < 0)
		return -1;
	snprintf(out, sizeof(out), "--callgrind-out-file=%s/clients-%s.out", outdir, tag);
	snprintf(sock, sizeof(sock), "%s", a.sock);
	snprintf(n, sizeof(n), "%llu", (unsigned long long)count);
	rc = run_cmd((const char *const[]){"valgrind", "--tool=callgrind", "--collect-atstart=no",
					   "--toggle-collect=pub_publish", "--toggle-collect=pub_recv", out, self,
					   "--client", sock, "--count-small", n, NULL});
	bench_daemon_stop(&a, 60000, false);
	bench_daemon_stop(&b, 60000, false);
	if (rc != 0) {
		fprintf(stderr, "bench_rxcost: the clients under callgrind exited with %d\n", rc);
		return -1;
	}
	snprintf(out, sizeof(out), "%s/clients-%s.out", outdir, tag);
	*publish = inclusive(out, "pub_publish");
	*recv = inclusive(out, "pub_recv");
	return *publish < 0 || *recv < 0 ? -1 : 0;
}

/* ---- per-function difference of two profiles ---- */

struct func {
	char name[160];
	double ir;
};

static int annotate(const char *file, struct func *v, int max)
{
	char cmd[512], line[1024];
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "callgrind_annotate --inclusive=no --threshold=100 '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p) && n < max) {
		char *s = line, *name, *end;
		double ir = 0;

		while (*s == ' ')
			s++;
		if (*s < '0' || *s > '9' || strstr(s, "PROGRAM TOTALS"))
			continue;
		/* "1,234,567 (12.34%)  file:function [object]" */
		for (; (*s >= '0' && *s <= '9') || *s == ','; s++)
			if (*s != ',')
				ir = ir * 10 + (*s - '0');
		name = strstr(s, ")  ");
		if (!name)
			continue;
		name += 3;
		end = strchr(name, '\n');
		if (end)
			*end = 0;
		/* Keep "function [object]"; the source file is noise here. */
		end = strchr(name, ':');
		if (end && end[1] != ':')
			name = end + 1;
		snprintf(v[n].name, sizeof(v[n].name), "%s", name);
		v[n++].ir = ir;
	}
	pclose(p);
	return n;
}

static int cmp_func(const void *x, const void *y)
{
	double a = ((const struct func *)x)->ir, b = ((const struct func *)y)->ir;

	return (a < b) - (a > b);
}

static void top_diff(const char *f1, const char *f2, double n)
{
	struct func *v1 = calloc(MAX_FUNCS, sizeof(*v1)), *v2 = calloc(MAX_FUNCS, sizeof(*v2));
	int n1, n2, i, k;

	if (!v1 || !v2)
		goto out;
	n1 = annotate(f1, v1, MAX_FUNCS);
	n2 = annotate(f2, v2, MAX_FUNCS);
	for (i = 0; i < n2; i++) {
		for (k = 0; k < n1; k++) {
			if (!strcmp(v1[k].name, v2[i].name)) {
				v2[i].ir -= v1[k].ir;
				break;
			}
		}
		v2[i].ir /= n;
	}
	qsort(v2, (size_t)n2, sizeof(*v2), cmp_func);
	for (i = 0; i < n2 && i < TOP_FUNCS; i++)
		printf("    %10.0f  %s\n", v2[i].ir, v2[i].name);
out:
	free(v1);
	free(v2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"quick", no_argument, NULL, 'q'},
		{"count-small", required_argument, NULL, 's'},
		{"count-large", required_argument, NULL, 'l'},
		{"keep", no_argument, NULL, 'k'},
		{"client", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const size_t sizes[] = {64, 65536};
	static const char *const names[] = {"64B", "64KiB"};
	uint64_t counts[2] = {1000, 300};
	struct cost idle, c1[2], c2[2], l1, l2, s1, s2;
	double rate_a, rate_b, per_a[2], per_b[2], raw_b[2], per_local, per_sa, per_sb, cpub[2], crecv[2], per_cpub,
		per_crecv;
	const char *client_sock = NULL;
	char tag[32], self[PATH_MAX];
	ssize_t selflen;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'q':
			counts[0] = 300;
			counts[1] = 100;
			break;
		case 's':
			counts[0] = strtoull(optarg, NULL, 0);
			break;
		case 'l':
			counts[1] = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			keep = true;
			break;
		case 'c':
			client_sock = optarg;
			break;
		case 'h':
			printf("usage: bench_rxcost [--quick] [--count-small N] [--count-large N] [--keep]\n");
			return 0;
		default:
			fprintf(stderr, "usage: bench_rxcost [--quick] [--count-small N] [--count-large N] [--keep]\n");
			return 2;
		}
	}
	if (client_sock)
		return client_mode(client_sock, counts[0]);
	if (run_cmd((const char *const[]){"valgrind", "--version", NULL}) != 0) {
		fprintf(stderr, "bench_rxcost: valgrind not found (apt-get install valgrind)\n");
		return 2;
	}
	snprintf(outdir, sizeof(outdir), "%s/pubd-bench-callgrind-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(outdir)) {
		perror("mkdtemp");
		return 2;
	}

	if (measure("idle", 64, 0, 1, IDLE_SECONDS, false, &idle) < 0)
		return 2;
	rate_a = idle.ir_a / idle.seconds;
	rate_b = idle.ir_b / idle.seconds;
	for (int s = 0; s < 2; s++) {
		snprintf(tag, sizeof(tag), "%s-N", names[s]);
		if (measure(tag, sizes[s], counts[s], 1, 0, false, &c1[s]) < 0)
			return 2;
		snprintf(tag, sizeof(tag), "%s-2N", names[s]);
		if (measure(tag, sizes[s], 2 * counts[s], 1, 0, false, &c2[s]) < 0)
			return 2;
		if (c1[s].lost || c2[s].lost)
			fprintf(stderr, "bench_rxcost: %s: %llu + %llu messages lost (each waited %d ms)\n", names[s],
				(unsigned long long)c1[s].lost, (unsigned long long)c2[s].lost, DELIVER_WAIT_MS);
		/* Only delivered messages went the whole way. */
		{
			double dn = (double)c2[s].delivered - (double)c1[s].delivered,
			       dt = c2[s].seconds - c1[s].seconds;

			raw_b[s] = (c2[s].ir_b - c1[s].ir_b) / dn;
			per_b[s] = (c2[s].ir_b - c1[s].ir_b - rate_b * dt) / dn;
			per_a[s] = (c2[s].ir_a - c1[s].ir_a - rate_a * dt) / dn;
		}
	}

	/* The local path at 64 B: one daemon takes the message from its
	 * publisher's log and writes it for its subscriber (a host group: no
	 * fabric send in it). */
	if (measure("local-64B-N", 64, counts[0], 1, 0, true, &l1) < 0 ||
	    measure("local-64B-2N", 64, 2 * counts[0], 1, 0, true, &l2) < 0)
		return 2;
	/* The fabric paths again at 64 B, STREAM_WINDOW messages in flight:
	 * what a message costs when wakeups are shared, as under load. */
	if (measure("stream-64B-N", 64, counts[0], STREAM_WINDOW, 0, false, &s1) < 0 ||
	    measure("stream-64B-2N", 64, 2 * counts[0], STREAM_WINDOW, 0, false, &s2) < 0)
		return 2;
	if (s1.lost || s2.lost)
		fprintf(stderr, "bench_rxcost: streamed: %llu + %llu messages lost\n", (unsigned long long)s1.lost,
			(unsigned long long)s2.lost);
	{
		double dn = (double)s2.delivered - (double)s1.delivered, dt = s2.seconds - s1.seconds;

		per_sb = (s2.ir_b - s1.ir_b - rate_b * dt) / dn;
		per_sa = (s2.ir_a - s1.ir_a - rate_a * dt) / dn;
	}
	per_local = (l2.ir_a - l1.ir_a - rate_a * (l2.seconds - l1.seconds)) /
		    ((double)l2.delivered - (double)l1.delivered);
	/* ...and the clients' part of it: all of it on the direct path. */
	selflen = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (selflen <= 0)
		return 2;
	self[selflen] = 0;
	if (measure_clients(self, "N", counts[0], &cpub[0], &crecv[0]) < 0 ||
	    measure_clients(self, "2N", 2 * counts[0], &cpub[1], &crecv[1]) < 0)
		return 2;
	per_cpub = (cpub[1] - cpub[0]) / (double)counts[0];
	per_crecv = (crecv[1] - crecv[0]) / (double)counts[0];

	printf("\n6. Instructions per message (callgrind; difference of %llu and %llu / %llu and %llu messages, "
	       "idle timers subtracted)\n",
	       (unsigned long long)counts[0], (unsigned long long)(2 * counts[0]), (unsigned long long)counts[1],
	       (unsigned long long)(2 * counts[1]));
	printf("idle: A %.0f Ir/s, B %.0f Ir/s\n", rate_a, rate_b);
	printf("%-8s %16s %16s %16s %14s\n", "size", "receive (B)", "B uncorrected", "publish (A)", "B Ir/byte");
	for (int s = 0; s < 2; s++)
		printf("%-8s %16.0f %16.0f %16.0f %14.3f\n", names[s], per_b[s], raw_b[s], per_a[s],
		       per_b[s] / (double)sizes[s]);
	printf("64B, %u in flight: receive (B) %.0f, publish (A) %.0f (one at a time: %.2fx and %.2fx that)\n",
	       STREAM_WINDOW, per_sb, per_sa, per_b[0] / per_sb, per_a[0] / per_sa);
	printf("local path, 64 B, host group, pubd's part (the whole path with PUBD_DIRECT=off): %.0f\n", per_local);
	printf("local path, 64 B, the clients (libpub%s): pub_publish %.0f, pub_recv %.0f\n",
	       getenv("PUBD_DIRECT") ? ", PUBD_DIRECT set" : ", the direct path", per_cpub, per_crecv);
	for (int s = 0; s < 2; s++) {
		printf("\nreceive path (B), %s: instructions per message by function (self)\n", names[s]);
		top_diff(c1[s].file_b, c2[s].file_b, (double)c2[s].delivered - (double)c1[s].delivered);
	}
	for (int s = 0; s < 2; s++) {
		printf("\npublish path (A), %s: instructions per message by function (self)\n", names[s]);
		top_diff(c1[s].file_a, c2[s].file_a, (double)c2[s].delivered - (double)c1[s].delivered);
	}
	printf("\nreceive path (B), 64B, %u in flight: instructions per message by function (self)\n", STREAM_WINDOW);
	top_diff(s1.file_b, s2.file_b, (double)s2.delivered - (double)s1.delivered);
	printf("\npublish path (A), 64B, %u in flight: instructions per message by function (self)\n", STREAM_WINDOW);
	top_diff(s1.file_a, s2.file_a, (double)s2.delivered - (double)s1.delivered);
	printf("\nlocal path (A, host group), 64B: instructions per message by function (self)\n");
	top_diff(l1.file_a, l2.file_a, (double)l2.delivered - (double)l1.delivered);
	for (int s = 0; s < 2; s++) {
		struct bench_json j;
		char kase[32];

		snprintf(kase, sizeof(kase), "rx_%s", names[s]);
		bench_json_begin(&j, "rxcost", kase);
		bench_json_str(&j, "metric", "instructions_per_message");
		bench_json_num(&j, "pubd", per_b[s]);
		bench_json_num(&j, "pubd_uncorrected", raw_b[s]);
		bench_json_num(&j, "publish_path_instructions", per_a[s]);
		bench_json_int(&j, "n", (long long)counts[s]);
		bench_json_num(&j, "idle_ir_per_s_rx", rate_b);
		if (s == 0) {
			bench_json_num(&j, "target", 600);
			bench_json_str(&j, "verdict", per_b[s] <= 600 && per_a[s] <= 600 ? "met" : "missed");
		}
		bench_json_end(&j);
	}
	{
		struct bench_json j;

		bench_json_begin(&j, "rxcost", "stream_64B");
		bench_json_str(&j, "metric", "instructions_per_message");
		bench_json_num(&j, "pubd", per_sb);
		bench_json_num(&j, "publish_path_instructions", per_sa);
		bench_json_int(&j, "n", (long long)counts[0]);
		bench_json_int(&j, "in_flight", STREAM_WINDOW);
		bench_json_end(&j);
	}
	{
		struct bench_json j;

		bench_json_begin(&j, "rxcost", "local_64B");
		bench_json_str(&j, "metric", "instructions_per_message");
		bench_json_num(&j, "pubd", per_local);
		bench_json_int(&j, "n", (long long)counts[0]);
		bench_json_end(&j);
	}
	for (int w = 0; w < 2; w++) {
		struct bench_json j;
		double v = w ? per_crecv : per_cpub;

		bench_json_begin(&j, "rxcost", w ? "local_64B_client_recv" : "local_64B_client_publish");
		bench_json_str(&j, "metric", "instructions_per_message");
		bench_json_num(&j, "pubd", v);
		bench_json_int(&j, "n", (long long)counts[0]);
		bench_json_num(&j, "target", 600);
		bench_json_str(&j, "verdict", v <= 600 ? "met" : "missed");
		bench_json_end(&j);
	}
	if (keep) {
		printf("callgrind files kept in %s\n", outdir);
	} else {
		char cmd[160];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", outdir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_rxcost: could not remove %s\n", outdir);
	}
	return 0;
}
