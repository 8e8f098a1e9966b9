/* SPDX-License-Identifier: MIT */
/*
 * Benchmark 5: pubd's memory under a flood. Two private daemons on the udp
 * fabric (loopback, a random port and group, a 8 KiB MTU so 64 KiB messages
 * go through reassembly in 9 fragments):
 *
 *   publisher --> A --wire--> B --> fast subscriber
 *                 |               \-> slow subscriber (reads ~100 msg/s:
 *                 \-> local subscriber   its queue sits full, drop-oldest)
 *
 * The publisher floods 64 KiB messages for --seconds (pubd pushes back when
 * its send queue fills). Loopback drops under the flood leave partial
 * messages in B's reassembly until they expire, so the budget is exercised
 * too. Every second VmRSS of A and B is sampled from /proc/PID/status.
 *
 * Verdicts, per daemon:
 *  - flat: after the warm-up (the first sixth, at least 5 s), the highest RSS
 *    of the last third exceeds the highest of the first third by no more
 *    than max(1 MiB, 2%);
 *  - bounded: peak RSS <= configured buffers + 16 MiB, where configured
 *    buffers are computed from the config used here (reassembly budget,
 *    subscriber queues x message size, the send backlog at which pubd stops
 *    reading a publisher, the fabric's receive ring, per-client receive
 *    buffers). The udp socket buffers pubd asks for are kernel memory (not
 *    in VmRSS); they are listed but not counted.
 *
 *   bench_memory [--seconds N] [--size BYTES]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

/* The config below, as numbers for the bound. */
#define REASM_BUDGET (16u << 20)
#define SUB_QUEUE    256u
#define MTU	     8192u
#define MAX_MESSAGE  (1u << 20)
/* pubd internals the bound must count (daemon/ipc.c, daemon/fabric_udp.c). */
#define PUBD_CLIENT_RBUF   (256u << 10)	    /* RBUF_CAP per client */
#define PUBD_TX_PENDING	   256u		    /* TX_PENDING_HIGH: messages per publisher before pausing it */
#define PUBD_UDP_RX_RING   32u		    /* RX_BATCH slots of MTU + 1 */
#define PUBD_UDP_SOCK_BUFS (2u * 64u << 20) /* rcv + snd as the kernel reports them: not in RSS */
#define SLACK		   (16u << 20)

struct flood {
	const char *sock_a, *sock_b;
	size_t size;
	_Atomic int stop;
	_Atomic uint64_t published, fast_got, slow_got, local_got;
};

struct sub_arg {
	struct flood *f;
	pub_client_t *c;
	_Atomic uint64_t *got;
	unsigned delay_ms;
};

static void *sub_main(void *p)
{
	struct sub_arg *a = p;
	struct pub_message m;
	int r;

	while (!atomic_load(&a->f->stop)) {
		r = pub_recv(a->c, &m, 100);
		if (r < 0) {
			fprintf(stderr, "bench_memory: subscriber: %s\n", pub_errmsg(a->c));
			break;
		}
		if (r == 1) {
			atomic_fetch_add(a->got, 1);
			if (a->delay_ms)
				bench_sleep_ms(a->delay_ms);
		}
	}
	return NULL;
}

static void *pub_main(void *p)
{
	struct flood *f = p;
	pub_client_t *c = bench_connect(f->sock_a, "bench-memory-pub");
	uint8_t *buf = calloc(1, f->size);
	uint64_t k = 0;

	while (buf && !atomic_load(&f->stop)) {
		memcpy(buf, &k, sizeof(k));
		if (pub_publish(c, "flood", buf, f->size, 0) < 0) {
			fprintf(stderr, "bench_memory: publish: %s\n", pub_errmsg(c));
			break;
		}
		atomic_store(&f->published, ++k);
	}
	free(buf);
	pub_close(c);
	return NULL;
}

struct verdict {
	double base, end, peak, limit, slope_kib_per_min;
	bool flat, bounded;
};

static void judge(const long long *rss, unsigned n, unsigned warm, double limit, struct verdict *v)
{
	unsigned third = (n - warm) / 3, i;
	double sx = 0, sy = 0, sxx = 0, sxy = 0, m = (double)(n - warm);

	memset(v, 0, sizeof(*v));
	for (i = 0; i < n; i++)
		if ((double)rss[i] > v->peak)
			v->peak = (double)rss[i];
	for (i = warm; i < warm + third; i++)
		if ((double)rss[i] > v->base)
			v->base = (double)rss[i];
	for (i = n - third; i < n; i++)
		if ((double)rss[i] > v->end)
			v->end = (double)rss[i];
	for (i = warm; i < n; i++) {
		double x = (double)(i - warm), y = (double)rss[i];

		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
	}
	if (m > 1 && m * sxx - sx * sx > 0)
		v->slope_kib_per_min = (m * sxy - sx * sy) / (m * sxx - sx * sx) * 60.0 / 1024.0;
	v->flat = third > 0 && v->end - v->base <= (v->base * 0.02 > 1 * MIB ? v->base * 0.02 : 1 * MIB);
	v->limit = limit;
	v->bounded = v->peak <= limit;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"seconds", required_argument, NULL, 't'},
		{"size", required_argument, NULL, 'z'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct flood f = {.size = 65536};
	struct bench_daemon a, b;
	struct sub_arg fast, slow, local;
	pthread_t th_pub, th_fast, th_slow, th_local;
	char body[2048], addr[32];
	unsigned seconds = 60, warm, n, i;
	long long *rss_a, *rss_b;
	double msg_cost, cfg_a, cfg_b;
	struct verdict va, vb;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			seconds = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'z':
			f.size = strtoul(optarg, NULL, 0);
			break;
		case 'h':
			printf("usage: bench_memory [--seconds N] [--size BYTES]\n");
			return 0;
		default:
			fprintf(stderr, "usage: bench_memory [--seconds N] [--size BYTES]\n");
			return 2;
		}
	}
	if (seconds < 6 || f.size < 8 || f.size > MAX_MESSAGE) {
		fprintf(stderr, "bench_memory: --seconds at least 6, --size 8..%u\n", MAX_MESSAGE);
		return 2;
	}

	snprintf(body, sizeof(body),
		 "fabric:\n  type: udp\n  udp_port: %u\n  mtu: %u\n"
		 "limits:\n  max_message_size: %u\n  reassembly_budget: %u\n  reassembly_inflight: 64\n"
		 "  reassembly_timeout_ms: 500\n  subscriber_queue: %u\n  slow_subscriber: drop-oldest\n"
		 "groups:\n  - name: flood\n    address: %s\n",
		 bench_udp_port(), MTU, MAX_MESSAGE, REASM_BUDGET, SUB_QUEUE, bench_group_addr(1, addr, sizeof(addr)));
	if (bench_daemon_start(&a, "mem-a", body, NULL, 10000) < 0)
		return 2;
	if (bench_daemon_start(&b, "mem-b", body, NULL, 10000) < 0) {
		bench_daemon_stop(&a, 2000, false);
		return 2;
	}

	f.sock_a = a.sock;
	f.sock_b = b.sock;
	fast = (struct sub_arg){.f = &f, .c = bench_connect(b.sock, "bench-memory-fast"), .got = &f.fast_got};
	slow = (struct sub_arg){
		.f = &f, .c = bench_connect(b.sock, "bench-memory-slow"), .got = &f.slow_got, .delay_ms = 10};
	local = (struct sub_arg){.f = &f, .c = bench_connect(a.sock, "bench-memory-local"), .got = &f.local_got};
	if (pub_subscribe(fast.c, "flood") < 0 || pub_subscribe(slow.c, "flood") < 0 ||
	    pub_subscribe(local.c, "flood") < 0) {
		fprintf(stderr, "bench_memory: subscribe failed\n");
		return 2;
	}
	pthread_create(&th_fast, NULL, sub_main, &fast);
	pthread_create(&th_slow, NULL, sub_main, &slow);
	pthread_create(&th_local, NULL, sub_main, &local);

	rss_a = calloc(seconds + 1, sizeof(*rss_a));
	rss_b = calloc(seconds + 1, sizeof(*rss_b));
	if (!rss_a || !rss_b)
		return 2;
	printf("\n5. Memory under a %u s flood of %zu B messages (RSS sampled every second)\n", seconds, f.size);
	printf("%6s %10s %10s %12s %12s %12s %12s\n", "t/s", "A RSS MiB", "B RSS MiB", "published", "B fast", "B slow",
	       "A local");
	pthread_create(&th_pub, NULL, pub_main, &f);
	{
		uint64_t t0 = bench_now_ns();

		for (n = 0; n <= seconds; n++) {
			uint64_t due = t0 + (uint64_t)n * 1000000000ull, now = bench_now_ns();

			if (due > now)
				bench_sleep_ms((unsigned)((due - now) / 1000000));
			rss_a[n] = bench_rss_bytes(a.pid);
			rss_b[n] = bench_rss_bytes(b.pid);
			if (n % 5 == 0 || n == seconds)
				printf("%6u %10.1f %10.1f %12llu %12llu %12llu %12llu\n", n, (double)rss_a[n] / MIB,
				       (double)rss_b[n] / MIB, (unsigned long long)atomic_load(&f.published),
				       (unsigned long long)atomic_load(&f.fast_got),
				       (unsigned long long)atomic_load(&f.slow_got),
				       (unsigned long long)atomic_load(&f.local_got));
			fflush(stdout);
		}
	}
	atomic_store(&f.stop, 1);
	pthread_join(th_pub, NULL);
	pthread_join(th_fast, NULL);
	pthread_join(th_slow, NULL);
	pthread_join(th_local, NULL);
	pub_close(fast.c);
	pub_close(slow.c);
	pub_close(local.c);
	bench_daemon_stop(&a, 5000, false);
	bench_daemon_stop(&b, 5000, false);

	/*
	 * Configured buffers. One message buffer is header + payload; subscriber
	 * queues hold references to shared buffers, but a slow subscriber's
	 * queue holds messages the others have long released, so each queue
	 * counts in full. The +1 clients are the probe and pubctl-like queries
	 * (none here); the publisher's socket frames are in its receive buffer.
	 */
	msg_cost = (double)f.size + 64;
	cfg_a = (double)SUB_QUEUE * msg_cost * 1	 /* A's local subscriber */
		+ (double)PUBD_TX_PENDING * msg_cost * 1 /* one publisher's send backlog */
		+ (double)PUBD_UDP_RX_RING * (MTU + 1)	 /* receive ring */
		+ 2.0 * PUBD_CLIENT_RBUF		 /* publisher + local subscriber */
		+ (double)REASM_BUDGET;			 /* reassembly (idle on A) */
	cfg_b = (double)SUB_QUEUE * msg_cost * 2	 /* fast + slow subscriber */
		+ (double)PUBD_UDP_RX_RING * (MTU + 1) + 2.0 * PUBD_CLIENT_RBUF + (double)REASM_BUDGET;
	warm = seconds / 6 > 5 ? seconds / 6 : 5;
	judge(rss_a, seconds + 1, warm, cfg_a + SLACK, &va);
	judge(rss_b, seconds + 1, warm, cfg_b + SLACK, &vb);

	printf("\nconfig: reassembly_budget %u MiB, subscriber_queue %u x %zu B, mtu %u, udp socket buffers %u MiB "
	       "(kernel, not in RSS)\n",
	       REASM_BUDGET >> 20, SUB_QUEUE, f.size, MTU, PUBD_UDP_SOCK_BUFS >> 20);
	printf("%-6s %12s %12s %12s %14s %12s %10s %10s\n", "daemon", "post-warm", "last third", "peak",
	       "slope KiB/min", "limit", "flat", "bounded");
	for (i = 0; i < 2; i++) {
		const struct verdict *v = i ? &vb : &va;

		printf("%-6s %9.1f MiB %8.1f MiB %8.1f MiB %14.1f %8.1f MiB %10s %10s\n", i ? "B (rx)" : "A (tx)",
		       v->base / MIB, v->end / MIB, v->peak / MIB, v->slope_kib_per_min, v->limit / MIB,
		       v->flat ? "yes" : "NO", v->bounded ? "yes" : "NO");
	}
	for (i = 0; i < 2; i++) {
		const struct verdict *v = i ? &vb : &va;
		struct bench_json j;

		bench_json_begin(&j, "memory", i ? "rx_daemon" : "tx_daemon");
		bench_json_str(&j, "metric", "peak_rss_bytes");
		bench_json_num(&j, "pubd", v->peak);
		bench_json_str(&j, "baseline_name", "configured_buffers_plus_16MiB");
		bench_json_num(&j, "baseline", v->limit);
		bench_json_num(&j, "ratio", bench_ratio(v->peak, v->limit));
		bench_json_num(&j, "rss_after_warmup", v->base);
		bench_json_num(&j, "rss_last_third", v->end);
		bench_json_num(&j, "slope_kib_per_min", v->slope_kib_per_min);
		bench_json_int(&j, "seconds", seconds);
		bench_json_num(&j, "target", 1.0);
		bench_json_str(&j, "flat", v->flat ? "yes" : "no");
		bench_json_str(&j, "bounded", v->bounded ? "yes" : "no");
		bench_json_str(&j, "verdict", v->flat && v->bounded ? "met" : "missed");
		bench_json_end(&j);
	}
	free(rss_a);
	free(rss_b);
	return 0;
}
