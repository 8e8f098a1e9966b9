/* SPDX-License-Identifier: MIT */
/*
 * Benchmark 4: local fan-out. One libpub publisher to 1 and to 4 local
 * subscribers through a private pubd, for 64 B and 64 KiB messages, beside
 * the least any local hop costs: the same messages through one Unix
 * SOCK_SEQPACKET pair (a writer and a reader thread), measured in the same
 * run. For 1->4 a hand-made fan-out (the writer sends each message into four
 * pairs) is shown too, for scale.
 *
 * Figures are deliveries/s (and payload bytes/s) seen by the subscribers,
 * from the first publish to the last delivery. pubd drops for slow local
 * subscribers rather than pushing back, so the publisher keeps at most
 * WINDOW messages ahead of the slowest subscriber (half pubd's subscriber
 * queue): no drops, the same lossless stream the pair carries. On the
 * direct path (libpub's default on shared memory) the subscribers read the
 * publisher's direct log, which then must hold the window: limits.direct_log
 * is set to a subscriber queue of the largest messages (64 MiB), as
 * subscriber_queue_bytes is for pubd's queues. Cases
 * alternate within each round, best of ROUNDS, so a noisy neighbour on the
 * shared host hurts both sides alike.
 *
 * pubd runs with the udp fabric on loopback (a random port and group), so
 * each publish to the fabric group ("pubd" rows) is also sent to the wire
 * and its looped-back copy discarded, as in production. The "pubd host"
 * rows publish to a group of scope host instead, which never goes to the
 * fabric: what local fan-out costs when no other host needs the data.
 *
 *   bench_fanout [--quick] [--rounds N] [--count-small N] [--count-large N]
 *                [--only pair_1to1|pair_1to4|pubd_1to1|pubd_1to4|pubd_more_1to1|pubd_more_1to4|
 *                        pubd_host_1to1|pubd_host_1to4|pubd_host_more_1to1|pubd_host_more_1to4]
 *                [--size 64|65536]
 * The pubd cases run twice: one write per message (pub_publish without
 * flags, what the pair does too), and with PUB_MORE (libpub gathers
 * messages and writes them at once; a SEQPACKET pair cannot).
 * (--only and --size narrow the run to one case, e.g. under a profiler.)
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_SUBS    4
#define SUB_QUEUE   1024
#define WINDOW	    (SUB_QUEUE / 2)
#define IDLE_END_NS (2000ull * 1000000ull) /* a subscriber gives up this long after the publisher finished */

struct run {
	/* in */
	const char *sock;
	const char *group;
	size_t size;
	uint64_t count;
	unsigned nsubs;
	/* shared */
	_Atomic uint64_t received[MAX_SUBS];
	_Atomic int pub_waiting;
	_Atomic int pub_done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_barrier_t start;
	/* out, per subscriber */
	uint64_t t_last[MAX_SUBS];
	uint64_t gaps[MAX_SUBS];
	uint64_t bad[MAX_SUBS];
	uint64_t t0;
};

struct sub_arg {
	struct run *r;
	unsigned idx;
	pub_client_t *c; /* pubd */
	int fd;		 /* pair */
};

struct result {
	double deliveries_per_s;
	double bytes_per_s;
	uint64_t delivered;
	uint64_t lost;
	double cpu_ns;	    /* per delivery: clients (this process) + pubd */
	double pubd_cpu_ns; /* per delivery: pubd alone */
};

/* The message index rides in the first 8 bytes of the payload. */
static void account(struct run *r, unsigned idx, const void *data, size_t len, uint64_t *expect)
{
	uint64_t got;

	if (len != r->size || len < sizeof(got)) {
		r->bad[idx]++;
		return;
	}
	memcpy(&got, data, sizeof(got));
	if (got > *expect)
		r->gaps[idx] += got - *expect;
	*expect = got + 1;
	r->t_last[idx] = bench_now_ns();
	atomic_fetch_add(&r->received[idx], 1);
	if (atomic_load(&r->pub_waiting)) {
		pthread_mutex_lock(&r->lock);
		pthread_cond_signal(&r->cond);
		pthread_mutex_unlock(&r->lock);
	}
}

static void *pubd_sub_main(void *p)
{
	struct sub_arg *a = p;
	struct run *r = a->r;
	struct pub_message m;
	uint64_t expect = 0, idle_since = 0;
	int rc;

	pthread_barrier_wait(&r->start);
	while (atomic_load(&r->received[a->idx]) + r->gaps[a->idx] < r->count) {
		rc = pub_recv(a->c, &m, 100);
		if (rc == 1) {
			account(r, a->idx, m.data, m.len, &expect);
			idle_since = 0;
			continue;
		}
		if (rc < 0) {
			fprintf(stderr, "bench_fanout: subscriber %u: %s\n", a->idx, pub_errmsg(a->c));
			break;
		}
		if (atomic_load(&r->pub_done)) {
			if (!idle_since)
				idle_since = bench_now_ns();
			else if (bench_now_ns() - idle_since > IDLE_END_NS)
				break;
		}
	}
	return NULL;
}

static void *pair_reader_main(void *p)
{
	struct sub_arg *a = p;
	struct run *r = a->r;
	uint64_t expect = 0;
	uint8_t *buf = malloc(r->size + 1);
	ssize_t n;

	pthread_barrier_wait(&r->start);
	while (buf && atomic_load(&r->received[a->idx]) < r->count) {
		n = recv(a->fd, buf, r->size + 1, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		account(r, a->idx, buf, (size_t)n, &expect);
	}
	free(buf);
	return NULL;
}

static uint64_t min_received(struct run *r)
{
	uint64_t m = UINT64_MAX, v;

	for (unsigned i = 0; i < r->nsubs; i++) {
		v = atomic_load(&r->received[i]) + r->gaps[i];
		if (v < m)
			m = v;
	}
	return m;
}

/* Block while the publisher is WINDOW messages ahead of the slowest subscriber. */
static void window_wait(struct run *r, uint64_t sent)
{
	struct timespec ts;

	if (sent < min_received(r) + WINDOW)
		return;
	pthread_mutex_lock(&r->lock);
	atomic_store(&r->pub_waiting, 1);
	while (sent >= min_received(r) + WINDOW) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	}
	atomic_store(&r->pub_waiting, 0);
	pthread_mutex_unlock(&r->lock);
}

static void run_init(struct run *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
}

static void run_result(struct run *r, struct result *res)
{
	uint64_t last = r->t0, delivered = 0, lost = 0;

	for (unsigned i = 0; i < r->nsubs; i++) {
		delivered += atomic_load(&r->received[i]);
		lost += r->count - atomic_load(&r->received[i]);
		if (r->bad[i])
			fprintf(stderr, "bench_fanout: subscriber %u: %llu messages of the wrong size\n", i,
				(unsigned long long)r->bad[i]);
		if (r->t_last[i] > last)
			last = r->t_last[i];
	}
	res->delivered = delivered;
	res->lost = lost;
	res->deliveries_per_s = last > r->t0 ? (double)delivered / ((double)(last - r->t0) * 1e-9) : 0;
	res->bytes_per_s = res->deliveries_per_s * (double)r->size;
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
}

/* The baseline: one writer thread sending into nsubs SEQPACKET pairs, one reader per pair. */
static int run_pair(size_t size, uint64_t count, unsigned nsubs, struct result *res)
{
	uint64_t cpu0, cpu1;
	struct sub_arg args[MAX_SUBS];
	pthread_t th[MAX_SUBS];
	int fds[MAX_SUBS][2];
	struct run r;
	uint8_t *buf;
	unsigned i;

	run_init(&r);
	r.size = size;
	r.count = count;
	r.nsubs = nsubs;
	buf = calloc(1, size);
	if (!buf)
		return -ENOMEM;
	pthread_barrier_init(&r.start, NULL, nsubs + 1);
	for (i = 0; i < nsubs; i++) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds[i]) < 0) {
			perror("socketpair");
			exit(2);
		}
		args[i] = (struct sub_arg){.r = &r, .idx = i, .fd = fds[i][1]};
		pthread_create(&th[i], NULL, pair_reader_main, &args[i]);
	}
	cpu0 = bench_cpu_ns_self();
	pthread_barrier_wait(&r.start);
	r.t0 = bench_now_ns();
	for (uint64_t k = 0; k < count; k++) {
		memcpy(buf, &k, sizeof(k));
		for (i = 0; i < nsubs; i++) {
			while (send(fds[i][0], buf, size, 0) < 0) {
				if (errno != EINTR) {
					perror("send");
					exit(2);
				}
			}
		}
	}
	atomic_store(&r.pub_done, 1);
	for (i = 0; i < nsubs; i++) {
		pthread_join(th[i], NULL);
		close(fds[i][0]);
		close(fds[i][1]);
	}
	cpu1 = bench_cpu_ns_self();
	pthread_barrier_destroy(&r.start);
	free(buf);
	run_result(&r, res);
	res->pubd_cpu_ns = 0;
	res->cpu_ns = res->delivered ? (double)(cpu1 - cpu0) / (double)res->delivered : 0;
	return 0;
}

/* pubd: one publisher handle (this thread), nsubs subscriber handles (threads).
 * more: publish with PUB_MORE (libpub writes many messages at once), flushing
 * before the window makes the publisher wait and after the last message. */
static int run_pubd(const char *sock, pid_t pubd, const char *group, size_t size, uint64_t count, unsigned nsubs,
		    bool more, struct result *res)
{
	uint64_t cpu0, cpu1, dcpu0, dcpu1;
	struct sub_arg args[MAX_SUBS];
	pthread_t th[MAX_SUBS];
	pub_client_t *pub;
	struct run r;
	uint8_t *buf;
	unsigned i;
	int rc;

	run_init(&r);
	r.sock = sock;
	r.group = group;
	r.size = size;
	r.count = count;
	r.nsubs = nsubs;
	buf = calloc(1, size);
	if (!buf)
		return -ENOMEM;
	pthread_barrier_init(&r.start, NULL, nsubs + 1);
	for (i = 0; i < nsubs; i++) {
		args[i] = (struct sub_arg){.r = &r, .idx = i, .c = bench_connect(sock, "bench-fanout-sub")};
		if (pub_subscribe(args[i].c, group) < 0) {
			fprintf(stderr, "bench_fanout: %s\n", pub_errmsg(args[i].c));
			exit(2);
		}
		pthread_create(&th[i], NULL, pubd_sub_main, &args[i]);
	}
	pub = bench_connect(sock, "bench-fanout-pub");
	cpu0 = bench_cpu_ns_self();
	dcpu0 = bench_cpu_ns_pid(pubd);
	pthread_barrier_wait(&r.start);
	r.t0 = bench_now_ns();
	for (uint64_t k = 0; k < count; k++) {
		if (more && k >= min_received(&r) + WINDOW && pub_flush(pub, -1) < 0) {
			fprintf(stderr, "bench_fanout: flush: %s\n", pub_errmsg(pub));
			exit(2);
		}
		window_wait(&r, k);
		memcpy(buf, &k, sizeof(k));
		rc = pub_publish(pub, group, buf, size, more ? PUB_MORE : 0);
		if (rc < 0) {
			fprintf(stderr, "bench_fanout: publish: %s\n", pub_errmsg(pub));
			exit(2);
		}
	}
	rc = pub_flush(pub, -1);
	if (rc < 0)
		fprintf(stderr, "bench_fanout: flush: %s\n", pub_errmsg(pub));
	atomic_store(&r.pub_done, 1);
	for (i = 0; i < nsubs; i++)
		pthread_join(th[i], NULL);
	cpu1 = bench_cpu_ns_self();
	dcpu1 = bench_cpu_ns_pid(pubd);
	for (i = 0; i < nsubs; i++)
		pub_close(args[i].c);
	pub_close(pub);
	pthread_barrier_destroy(&r.start);
	free(buf);
	run_result(&r, res);
	if (res->delivered) {
		res->pubd_cpu_ns = (double)(dcpu1 - dcpu0) / (double)res->delivered;
		res->cpu_ns = (double)(cpu1 - cpu0) / (double)res->delivered + res->pubd_cpu_ns;
	}
	return 0;
}

enum kind { PAIR_1, PAIR_4, PUBD_1, PUBD_4, MORE_1, MORE_4, HOST_1, HOST_4, HMORE_1, HMORE_4, NKINDS };

static const struct {
	const char *label;
	const char *json;
	unsigned nsubs;
	bool pubd, more;
	const char *group; /* fan: on the fabric; here: scope host */
} kinds[NKINDS] = {
	[PAIR_1] = {"seqpacket pair 1->1", "pair_1to1", 1, false, false, NULL},
	[PAIR_4] = {"seqpacket by hand 1->4", "pair_1to4", 4, false, false, NULL},
	[PUBD_1] = {"pubd 1->1", "pubd_1to1", 1, true, false, "fan"},
	[PUBD_4] = {"pubd 1->4", "pubd_1to4", 4, true, false, "fan"},
	[MORE_1] = {"pubd 1->1 PUB_MORE", "pubd_more_1to1", 1, true, true, "fan"},
	[MORE_4] = {"pubd 1->4 PUB_MORE", "pubd_more_1to4", 4, true, true, "fan"},
	[HOST_1] = {"pubd host 1->1", "pubd_host_1to1", 1, true, false, "here"},
	[HOST_4] = {"pubd host 1->4", "pubd_host_1to4", 4, true, false, "here"},
	[HMORE_1] = {"pubd host 1->1 MORE", "pubd_host_more_1to1", 1, true, true, "here"},
	[HMORE_4] = {"pubd host 1->4 MORE", "pubd_host_more_1to4", 4, true, true, "here"},
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_fanout [--quick] [--rounds N] [--count-small N] [--count-large N]\n"
		"                    [--only pair_1to1|pair_1to4|pubd_1to1|pubd_1to4|pubd_more_1to1|pubd_more_1to4|\n"
		"                            pubd_host_1to1|pubd_host_1to4|pubd_host_more_1to1|pubd_host_more_1to4]\n"
		"                    [--size 64|65536]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"quick", no_argument, NULL, 'q'},
		{"rounds", required_argument, NULL, 'r'},
		{"count-small", required_argument, NULL, 's'},
		{"count-large", required_argument, NULL, 'l'},
		{"only", required_argument, NULL, 'o'},
		{"size", required_argument, NULL, 'z'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const size_t sizes[] = {64, 65536};
	uint64_t counts[2] = {200000, 20000};
	struct result best[2][NKINDS] = {0}, res;
	struct bench_daemon d;
	char body[1024], addr[32], a[32];
	unsigned rounds = 3;
	const char *only = NULL;
	size_t only_size = 0;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'q':
			counts[0] = 50000;
			counts[1] = 5000;
			rounds = 2;
			break;
		case 'r':
			rounds = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			counts[0] = strtoull(optarg, NULL, 0);
			break;
		case 'l':
			counts[1] = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			only = optarg;
			break;
		case 'z':
			only_size = strtoul(optarg, NULL, 0);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!rounds || !counts[0] || !counts[1]) {
		usage(stderr);
		return 2;
	}

	snprintf(body, sizeof(body),
		 "fabric:\n  type: udp\n  udp_port: %u\n"
		 "limits:\n  max_message_size: 1MiB\n  reassembly_budget: 16MiB\n"
		 "  subscriber_queue: %u\n  slow_subscriber: drop-oldest\n  direct_log: 64MiB\n"
		 "groups:\n  - name: fan\n    address: %s\n  - name: here\n    scope: host\n",
		 bench_udp_port(), SUB_QUEUE, bench_group_addr(0, addr, sizeof(addr)));
	if (bench_daemon_start(&d, "fanout", body, NULL, 10000) < 0)
		return 2;

	for (unsigned round = 0; round < rounds; round++) {
		for (unsigned s = 0; s < 2; s++) {
			for (unsigned k = 0; k < NKINDS; k++) {
				if ((only && strcmp(only, kinds[k].json)) || (only_size && only_size != sizes[s]))
					continue;
				if (kinds[k].pubd)
					run_pubd(d.sock, d.pid, kinds[k].group, sizes[s], counts[s], kinds[k].nsubs,
						 kinds[k].more, &res);
				else
					run_pair(sizes[s], counts[s], kinds[k].nsubs, &res);
				if (res.lost)
					fprintf(stderr,
						"bench_fanout: %s %zu B round %u: %llu of %llu deliveries lost\n",
						kinds[k].label, sizes[s], round, (unsigned long long)res.lost,
						(unsigned long long)(counts[s] * kinds[k].nsubs));
				/* Best rate and least CPU each on their own: both are what
				 * the path can do when the neighbours leave it alone. */
				if (res.deliveries_per_s > best[s][k].deliveries_per_s) {
					double cpu = best[s][k].cpu_ns, pcpu = best[s][k].pubd_cpu_ns;

					best[s][k] = res;
					if (cpu > 0 && cpu < res.cpu_ns) {
						best[s][k].cpu_ns = cpu;
						best[s][k].pubd_cpu_ns = pcpu;
					}
				} else if (res.cpu_ns > 0 && res.cpu_ns < best[s][k].cpu_ns) {
					best[s][k].cpu_ns = res.cpu_ns;
					best[s][k].pubd_cpu_ns = res.pubd_cpu_ns;
				}
			}
		}
	}
	bench_daemon_stop(&d, 5000, false);

	printf("\n4. Local fan-out (host; best of %u rounds; %llu x 64 B, %llu x 64 KiB per run)\n", rounds,
	       (unsigned long long)counts[0], (unsigned long long)counts[1]);
	printf("%-8s %-24s %14s %10s %9s %14s %12s %6s\n", "size", "path", "deliveries/s", "MB/s", "vs pair",
	       "CPU ns/deliv", "of it pubd", "lost");
	for (unsigned s = 0; s < 2; s++) {
		double pair = best[s][PAIR_1].deliveries_per_s;

		for (unsigned k = 0; k < NKINDS; k++) {
			if (!best[s][k].delivered)
				continue; /* not run (--only, --size) */
			printf("%-8s %-24s %14s %10.1f %8.2fx %14.0f %12.0f %6llu\n",
			       sizes[s] == 64 ? "64 B" : "64 KiB", kinds[k].label,
			       bench_si(best[s][k].deliveries_per_s, a, sizeof(a)), best[s][k].bytes_per_s / MIB,
			       bench_ratio(best[s][k].deliveries_per_s, pair), best[s][k].cpu_ns,
			       best[s][k].pubd_cpu_ns, (unsigned long long)best[s][k].lost);
		}
	}
	for (unsigned s = 0; s < 2; s++) {
		for (unsigned k = 0; k < NKINDS; k++) {
			if (!kinds[k].pubd)
				continue;
			const struct result *p = &best[s][k], *base = &best[s][PAIR_1], *hand = &best[s][PAIR_4];
			char kase[64];
			struct bench_json j;
			double ratio = bench_ratio(p->deliveries_per_s, base->deliveries_per_s);

			if (!p->delivered)
				continue;
			snprintf(kase, sizeof(kase), "%s_%s", kinds[k].json + 5, sizes[s] == 64 ? "64B" : "64KiB");
			bench_json_begin(&j, "fanout", kase);
			bench_json_str(&j, "metric", "deliveries_per_s");
			bench_json_num(&j, "pubd", p->deliveries_per_s);
			bench_json_str(&j, "baseline_name", "seqpacket_pair");
			bench_json_num(&j, "baseline", base->deliveries_per_s);
			bench_json_num(&j, "ratio", ratio);
			bench_json_num(&j, "pubd_bytes_per_s", p->bytes_per_s);
			bench_json_num(&j, "baseline_bytes_per_s", base->bytes_per_s);
			if (kinds[k].nsubs == 4)
				bench_json_num(&j, "ratio_vs_hand_fanout",
					       bench_ratio(p->deliveries_per_s, hand->deliveries_per_s));
			bench_json_num(&j, "pubd_path_cpu_ns_per_delivery", p->cpu_ns);
			bench_json_num(&j, "pubd_daemon_cpu_ns_per_delivery", p->pubd_cpu_ns);
			bench_json_num(&j, "baseline_cpu_ns_per_delivery", base->cpu_ns);
			bench_json_int(&j, "lost", (long long)p->lost);
			if (kinds[k].nsubs == 1 && sizes[s] == 64) {
				bench_json_num(&j, "target", 1.0);
				bench_json_str(&j, "verdict", ratio >= 1.0 ? "met" : "missed");
			}
			bench_json_end(&j);
		}
	}
	return 0;
}
