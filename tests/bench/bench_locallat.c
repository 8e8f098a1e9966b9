/* SPDX-License-Identifier: MIT */
/*
 * Local latency: 64-byte ping-pong between two processes, one-way = round
 * trip / 2, side by side in one run:
 *   pair        a bare Unix SOCK_SEQPACKET socketpair
 *   ring        a bare shared-memory ring pair (common/shmlog.h, as pubd's
 *               logs are), waiting on a futex, or busy-polling
 *   pubd        two libpub clients of one pubd (ping and pong groups), over
 *               shared memory (libpub's default), over the socket
 *               (PUBD_TRANSPORT=socket), with the clients lingering in
 *               pub_recv (PUBD_RECV_LINGER_US=100), and busy-polling
 *               (fabric.busy_poll and PUBD_BUSY_POLL=1); on groups sent to the
 *               fabric (udp on lo, as in production), and the "host" rows
 *               on groups of scope host, which never go to the fabric
 * each pinned (every process, pubd included, on CPU 0: repeatable) and
 * unpinned. Busy-polling cases run unpinned only (two spinners on one CPU
 * measure the scheduler). Prints p50/p99/p99.9 and the ratios of pubd's
 * p50 to the pair's and to the busy ring's, and a JSON line per row.
 *
 *   bench_locallat [--quick] [--count N] [--rounds N] [--only CASE] [--placement pinned|unpinned]
 *
 * --only runs one case (and the pair, the ratios' base), e.g. under perf.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "shmlog.h"

#define MSG	  64
#define RING_CAP  (64 * 1024)
#define MAX_COUNT 1000000

struct result {
	const char *kase, *placement;
	double p50, p99, p999; /* one-way, µs */
	unsigned n;	       /* round trips measured */
};

static unsigned count = 100000, warmup = 5000, rounds = 3;
/* --only: one case (and the pair, the ratios' base), e.g. to profile it. */
static const char *only;
/* --placement: pinned or unpinned alone. */
static const char *placement;
static double *rtt;

static void pin(pid_t pid)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(pid, sizeof(set), &set) < 0) {
		perror("sched_setaffinity");
		exit(2);
	}
}

static void check(const uint8_t *buf, size_t len, uint32_t want)
{
	uint32_t got;

	memcpy(&got, buf, sizeof(got));
	if (len != MSG || got != want) {
		fprintf(stderr, "bench_locallat: message %u wrong: %zu bytes, seq %u\n", want, len, got);
		exit(1);
	}
}

/* ---- the bare socket pair ---- */

static void pair_echo(int fd)
{
	uint8_t buf[MSG];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)n) != n)
			break;
	_exit(0);
}

static void pair_ping(int fd, unsigned i, uint64_t *ns)
{
	uint8_t buf[MSG] = {0};
	uint64_t t0 = bench_now_ns();

	memcpy(buf, &i, sizeof(i));
	if (write(fd, buf, MSG) != MSG || read(fd, buf, MSG) != MSG)
		exit(1);
	*ns = bench_now_ns() - t0;
	check(buf, MSG, i);
}

/* ---- the bare shared-memory ring pair ---- */

struct ring_end {
	struct pub_shmlog_writer w;
	struct pub_shmlog_reader r;
	bool busy;
};

static void futex_op(_Atomic uint32_t *addr, int op, uint32_t val)
{
	syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

static void ring_send(struct ring_end *e, const uint8_t *msg)
{
	uint8_t *b;

	while (!(b = pub_shmlog_claim(&e->w, PUB_SHMLOG_MSG, 0, 0, MSG)))
		pub_shmlog_cpu_relax(); /* the reader frees it at once: one message in flight */
	memcpy(b, msg, MSG);
	pub_shmlog_commit(&e->w);
	if (!e->busy && pub_shmlog_wake_reader(&e->w))
		futex_op(&e->w.ctl->reader_sleeping, FUTEX_WAKE, 1);
}

static void ring_recv(struct ring_end *e, uint8_t *msg)
{
	struct pub_shmlog_view v;

	while (pub_shmlog_next(&e->r, &v) != 1) {
		if (e->busy)
			pub_shmlog_cpu_relax();
		else if (pub_shmlog_reader_sleep(&e->r))
			futex_op(&e->r.ctl->reader_sleeping, FUTEX_WAIT, 1);
	}
	pub_shmlog_reader_awake(&e->r);
	memcpy(msg, v.body, MSG);
	pub_shmlog_consume(&e->r, &v);
	pub_shmlog_release(&e->r);
}

/* Two logs in one shared mapping: a's writer is b's reader and back. */
static void ring_ends(uint8_t *map, bool busy, struct ring_end *a, struct ring_end *b)
{
	size_t len = pub_shmlog_map_len(RING_CAP);

	if (pub_shmlog_format(map, len, RING_CAP, 1024, 0) || pub_shmlog_format(map + len, len, RING_CAP, 1024, 0) ||
	    pub_shmlog_writer_init(&a->w, map, len, false) || pub_shmlog_reader_init(&b->r, map, len, 0, 0, 0) ||
	    pub_shmlog_writer_init(&b->w, map + len, len, false) ||
	    pub_shmlog_reader_init(&a->r, map + len, len, 0, 0, 0))
		exit(2);
	a->busy = b->busy = busy;
}

/* ---- libpub clients of one pubd ---- */

static void pubd_echo(const char *sock, int ready)
{
	pub_client_t *c = bench_connect(sock, "lat-echo");
	struct pub_message m;

	if (pub_subscribe(c, "ping") < 0 || write(ready, "r", 1) != 1)
		_exit(2);
	close(ready);
	while (pub_recv(c, &m, -1) == 1) {
		if (m.len != MSG)
			break; /* the end */
		if (pub_publish(c, "pong", m.data, m.len, 0) < 0)
			_exit(1);
	}
	pub_close(c);
	_exit(0);
}

static void pubd_ping(pub_client_t *c, unsigned i, uint64_t *ns)
{
	uint8_t buf[MSG] = {0};
	struct pub_message m;
	uint64_t t0 = bench_now_ns();

	memcpy(buf, &i, sizeof(i));
	if (pub_publish(c, "ping", buf, MSG, 0) < 0 || pub_recv(c, &m, 10000) != 1) {
		fprintf(stderr, "bench_locallat: pubd ping %u: %s\n", i, pub_errmsg(c));
		exit(1);
	}
	*ns = bench_now_ns() - t0;
	check(m.data, m.len, i);
}

/* ---- one case ---- */

enum kind { K_PAIR, K_RING, K_PUBD };

struct kase {
	const char *name;
	enum kind kind;
	bool busy;
	const char *transport; /* PUBD_TRANSPORT for pubd's clients */
	const char *linger;    /* PUBD_RECV_LINGER_US for pubd's clients, or NULL */
	bool host;	       /* ping and pong of scope host: never sent to the fabric */
	bool asleep;	       /* fabric.rx_linger_us: 0: pubd sleeps after each message, as under sparse traffic */
	bool via_pubd;	       /* PUBD_DIRECT=off: every message through pubd, not the direct path */
	bool clients_busy;     /* busy: the clients spin, pubd does not (the direct path needs no pubd) */
};

struct peer {
	pid_t pid;
	int fd; /* pair: the socket; pubd: unused */
	struct ring_end ring;
	uint8_t *map;
	pub_client_t *c;
	struct bench_daemon d;
};

static void peer_start(const struct kase *k, struct peer *p, bool pinned)
{
	char body[512], addr[2][32];
	int sv[2], ready[2];
	struct ring_end echo;
	uint8_t msg[MSG];
	char r;

	memset(p, 0, sizeof(*p));
	if (k->kind == K_PAIR) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0)
			exit(2);
		if (!(p->pid = fork()))
			close(sv[0]), pair_echo(sv[1]);
		close(sv[1]);
		p->fd = sv[0];
		return;
	}
	if (k->kind == K_RING) {
		p->map = mmap(NULL, 2 * pub_shmlog_map_len(RING_CAP), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p->map == MAP_FAILED)
			exit(2);
		ring_ends(p->map, k->busy, &p->ring, &echo);
		if (!(p->pid = fork())) {
			for (;;) {
				ring_recv(&echo, msg);
				if (msg[4] == 'q')
					_exit(0);
				ring_send(&echo, msg);
			}
		}
		return;
	}
	bench_group_addr(1, addr[0], sizeof(addr[0]));
	bench_group_addr(2, addr[1], sizeof(addr[1]));
	if (k->host)
		snprintf(body, sizeof(body),
			 "fabric:\n  type: udp\n  udp_port: %u\n  busy_poll: %s\n%s"
			 "groups:\n  - name: ping\n    scope: host\n  - name: pong\n    scope: host\n",
			 bench_udp_port(), k->busy && !k->clients_busy ? "true" : "false",
			 k->asleep ? "  rx_linger_us: 0\n" : "");
	else
		snprintf(body, sizeof(body),
			 "fabric:\n  type: udp\n  udp_port: %u\n  busy_poll: %s\n%s"
			 "groups:\n  - name: ping\n    address: %s\n  - name: pong\n    address: %s\n",
			 bench_udp_port(), k->busy ? "true" : "false", k->asleep ? "  rx_linger_us: 0\n" : "", addr[0],
			 addr[1]);
	if (bench_daemon_start(&p->d, "lat", body, NULL, 10000) < 0)
		exit(2);
	if (pinned)
		pin(p->d.pid);
	setenv("PUBD_TRANSPORT", k->transport ? k->transport : "shm", 1);
	if (k->via_pubd)
		setenv("PUBD_DIRECT", "off", 1);
	else
		unsetenv("PUBD_DIRECT");
	if (k->busy)
		setenv("PUBD_BUSY_POLL", "1", 1);
	else
		unsetenv("PUBD_BUSY_POLL");
	if (k->linger)
		setenv("PUBD_RECV_LINGER_US", k->linger, 1);
	else
		unsetenv("PUBD_RECV_LINGER_US");
	if (pipe(ready) < 0)
		exit(2);
	if (!(p->pid = fork()))
		close(ready[0]), pubd_echo(p->d.sock, ready[1]);
	close(ready[1]);
	p->c = bench_connect(p->d.sock, "lat-ping");
	if (pub_subscribe(p->c, "pong") < 0 || read(ready[0], &r, 1) != 1)
		exit(2);
	close(ready[0]);
}

static void peer_ping(const struct kase *k, struct peer *p, unsigned i, uint64_t *ns)
{
	uint8_t buf[MSG] = {0};
	uint64_t t0;

	if (k->kind == K_PAIR) {
		pair_ping(p->fd, i, ns);
	} else if (k->kind == K_PUBD) {
		pubd_ping(p->c, i, ns);
	} else {
		memcpy(buf, &i, sizeof(i));
		t0 = bench_now_ns();
		ring_send(&p->ring, buf);
		ring_recv(&p->ring, buf);
		*ns = bench_now_ns() - t0;
		check(buf, MSG, i);
	}
}

static void peer_stop(const struct kase *k, struct peer *p)
{
	uint8_t buf[MSG] = {0};

	if (k->kind == K_PAIR) {
		close(p->fd);
	} else if (k->kind == K_RING) {
		buf[4] = 'q';
		ring_send(&p->ring, buf);
	} else {
		pub_publish(p->c, "ping", buf, 1, PUB_SYNC); /* not MSG bytes: the echo's end */
		pub_close(p->c);
	}
	waitpid(p->pid, NULL, 0);
	if (k->kind == K_RING)
		munmap(p->map, 2 * pub_shmlog_map_len(RING_CAP));
	if (k->kind == K_PUBD)
		bench_daemon_stop(&p->d, 5000, false);
}

/* One round of a case: warm-up, then count round trips. */
static void round_of(const struct kase *k, bool pinned, struct result *res)
{
	unsigned n = count, w = warmup, i;
	struct peer p;
	uint64_t ns;

	peer_start(k, &p, pinned);
	for (i = 0; i < w + n; i++) {
		peer_ping(k, &p, i, &ns);
		if (i >= w)
			rtt[i - w] = (double)ns / 2000.0; /* one way, µs */
	}
	peer_stop(k, &p);
	res->n = n;
	res->p50 = bench_percentile(rtt, n, 50);
	res->p99 = bench_percentile(rtt, n, 99);
	res->p999 = bench_percentile(rtt, n, 99.9);
}

/* ---- the table ---- */

static const struct kase kases[] = {
	{"pair", K_PAIR, false, NULL, NULL, false, false, false, false},
	{"ring futex", K_RING, false, NULL, NULL, false, false, false, false},
	{"ring busy", K_RING, true, NULL, NULL, false, false, false, false},
	{"pubd shm", K_PUBD, false, "shm", NULL, false, false, false, false},
	{"pubd shm linger", K_PUBD, false, "shm", "100", false, false, false, false},
	{"pubd socket", K_PUBD, false, "socket", NULL, false, false, false, false},
	{"pubd shm busy", K_PUBD, true, "shm", NULL, false, false, false, false},
	{"pubd shm host", K_PUBD, false, "shm", NULL, true, false, false, false},
	{"pubd shm host asleep", K_PUBD, false, "shm", NULL, true, true, false, false},
	{"pubd socket host", K_PUBD, false, "socket", NULL, true, false, false, false},
	{"pubd shm busy host", K_PUBD, true, "shm", NULL, true, false, false, false},
	/* The direct path's own rows, and the same through pubd (as before it). */
	{"pubd shm busy clients host", K_PUBD, true, "shm", NULL, true, false, false, true},
	{"pubd shm host via pubd", K_PUBD, false, "shm", NULL, true, false, true, false},
	{"pubd shm via pubd", K_PUBD, false, "shm", NULL, false, false, true, false},
	{"pubd shm busy host via pubd", K_PUBD, true, "shm", NULL, true, false, true, false},
};
#define NKASES (sizeof(kases) / sizeof(kases[0]))

static void measure_none(struct result *best, bool pinned)
{
	unsigned i;

	for (i = 0; i < NKASES; i++)
		best[i] =
			(struct result){.kase = kases[i].name, .placement = pinned ? "pinned" : "unpinned", .p50 = -1};
}

/* Best (lowest p50) of the rounds, rounds of the cases alternating. */
static void measure(bool pinned, struct result *best)
{
	struct result r;
	unsigned i, round;
	cpu_set_t all;

	sched_getaffinity(0, sizeof(all), &all);
	if (pinned)
		pin(0);
	for (i = 0; i < NKASES; i++)
		best[i] = (struct result){
			.kase = kases[i].name, .placement = pinned ? "pinned" : "unpinned", .p50 = -1, .n = count};
	for (round = 0; round < rounds; round++) {
		for (i = 0; i < NKASES; i++) {
			if (pinned && kases[i].busy)
				continue; /* two spinners on one CPU measure the scheduler */
			if (only && i && strcmp(kases[i].name, only))
				continue;
			round_of(&kases[i], pinned, &r);
			if (best[i].p50 < 0 || r.p50 < best[i].p50) {
				best[i].p50 = r.p50;
				best[i].p99 = r.p99;
				best[i].p999 = r.p999;
				best[i].n = r.n;
			}
		}
	}
	sched_setaffinity(0, sizeof(all), &all);
}

static void print(const struct result *res)
{
	double pair = res[0].p50, busy = res[2].p50;
	struct bench_json j;
	unsigned i;

	for (i = 0; i < NKASES; i++) {
		if (res[i].p50 < 0)
			continue;
		printf("%-9s %-20s %9.2f %9.2f %9.2f %10.2fx", res[i].placement, res[i].kase, res[i].p50, res[i].p99,
		       res[i].p999, bench_ratio(res[i].p50, pair));
		if (busy > 0)
			printf(" %10.2fx", bench_ratio(res[i].p50, busy));
		printf("\n");
		bench_json_begin(&j, "locallat", res[i].kase);
		bench_json_str(&j, "placement", res[i].placement);
		bench_json_num(&j, "p50_us", res[i].p50);
		bench_json_num(&j, "p99_us", res[i].p99);
		bench_json_num(&j, "p999_us", res[i].p999);
		bench_json_num(&j, "vs_pair", bench_ratio(res[i].p50, pair));
		if (busy > 0)
			bench_json_num(&j, "vs_busy_ring", bench_ratio(res[i].p50, busy));
		bench_json_end(&j);
	}
}

int main(int argc, char **argv)
{
	struct result pinned[NKASES], unpinned[NKASES];
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			count = 10000, warmup = 1000, rounds = 1;
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			count = (unsigned)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = (unsigned)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--placement") && i + 1 < argc) {
			placement = argv[++i];
		} else {
			fprintf(stderr, "usage: bench_locallat [--quick] [--count N] [--rounds N] [--only CASE] "
					"[--placement pinned|unpinned]\n");
			return 2;
		}
	}
	if (!count || count > MAX_COUNT || !rounds)
		return 2;
	rtt = calloc(count, sizeof(*rtt));
	if (!rtt)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; only && i < (int)NKASES && strcmp(kases[i].name, only); i++)
		;
	if ((only && i == (int)NKASES) || (placement && strcmp(placement, "pinned") && strcmp(placement, "unpinned"))) {
		fprintf(stderr, "bench_locallat: no case \"%s\" or placement \"%s\"\n", only ? only : "",
			placement ? placement : "");
		return 2;
	}
	if (!placement || !strcmp(placement, "pinned"))
		measure(true, pinned);
	else
		measure_none(pinned, true);
	if (!placement || !strcmp(placement, "unpinned"))
		measure(false, unpinned);
	else
		measure_none(unpinned, false);
	printf("Local latency, 64 B ping-pong, one-way (round trip / 2) in µs; best of %u rounds of %u\n", rounds,
	       count);
	printf("%-9s %-20s %9s %9s %9s %11s %11s\n", "placement", "case", "p50", "p99", "p99.9", "vs pair",
	       "vs busy ring");
	print(pinned);
	print(unpinned);
	free(rtt);
	return 0;
}
