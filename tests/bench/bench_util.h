/* SPDX-License-Identifier: MIT */
/*
 * What the pubd benchmarks share: starting a private pubd (own temp dir,
 * socket, random udp port and group address, so runs of different people
 * on one host never hear each other), clocks, RSS, percentiles, and the
 * one-line JSON every benchmark prints beside its table.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <pub.h>

#define MIB (1024.0 * 1024.0)

struct bench_daemon {
	pid_t pid;
	char dir[96];	     /* private temp dir: config, socket, log (short: sun_path is 108 bytes) */
	char sock[PATH_MAX]; /* its Unix socket */
	char conf[PATH_MAX];
	char log[PATH_MAX];
	char name[32];
};

/* Where pubd is: $PUBD, else the build's own (BENCH_PUBD, set by CMake). */
const char *bench_pubd_path(void);

/*
 * A udp port and a 239.x.y.z base for this run, picked at random once per
 * process so that concurrent runs on one host do not share multicast
 * traffic. Daemons of one run share them (that is how they talk).
 */
unsigned bench_udp_port(void);
/* Group address number i of this run as text ("239.a.b.c"). */
const char *bench_group_addr(unsigned i, char *buf, size_t len);

/*
 * Start pubd with a config of `body` (YAML for fabric:, limits:, groups:;
 * daemon: is written here). prefix, if not NULL, is a NULL-terminated argv
 * put before pubd (e.g. valgrind and its options). Waits until the socket
 * answers a pub_connect, up to timeout_ms. Returns 0 or -errno; on failure
 * the daemon's log is printed to stderr.
 */
int bench_daemon_start(struct bench_daemon *d, const char *name, const char *body, const char *const *prefix,
		       int timeout_ms);
/* SIGTERM, wait up to timeout_ms, then SIGKILL. Removes the temp dir unless keep. */
void bench_daemon_stop(struct bench_daemon *d, int timeout_ms, bool keep);

/* Connect with a name, failing loudly (exits: a benchmark cannot go on without pubd). */
pub_client_t *bench_connect(const char *sock, const char *name);

uint64_t bench_now_ns(void);
double bench_now_s(void);
void bench_sleep_ms(unsigned ms);

/* CPU time (user + system) this process has used, all threads, in ns. */
uint64_t bench_cpu_ns_self(void);
/* CPU time of a single-threaded process from /proc/PID/schedstat (ns resolution), or 0. */
uint64_t bench_cpu_ns_pid(pid_t pid);

/* VmRSS of pid in bytes, or -1. */
long long bench_rss_bytes(pid_t pid);

/* Sort v[0..n) and return the p-th percentile (0..100), nearest rank. */
double bench_percentile(double *v, size_t n, double p);

/*
 * One flat JSON object on one line, built up by key. Keys and string values
 * are the benchmark's own (no escaping needed beyond quotes, which they
 * never contain).
 */
struct bench_json {
	char buf[4096];
	size_t len;
};
void bench_json_begin(struct bench_json *j, const char *bench, const char *kase);
void bench_json_str(struct bench_json *j, const char *key, const char *val);
void bench_json_num(struct bench_json *j, const char *key, double val);
void bench_json_int(struct bench_json *j, const char *key, long long val);
/* Close the object and print it on stdout as one line. */
void bench_json_end(struct bench_json *j);

/* a / b, or 0 when b is 0. */
double bench_ratio(double a, double b);

/* Human figures: "1.23 M", "456.7 k". */
const char *bench_si(double v, char *buf, size_t len);

#endif
