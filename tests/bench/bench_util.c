/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#ifndef BENCH_PUBD
#define BENCH_PUBD "pubd"
#endif

const char *bench_pubd_path(void)
{
	const char *p = getenv("PUBD");

	return p && *p ? p : BENCH_PUBD;
}

static unsigned run_rand(void)
{
	static unsigned r;
	static bool have;

	if (!have) {
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (unsigned)getpid() ^ (unsigned)bench_now_ns();
		have = true;
	}
	return r;
}

unsigned bench_udp_port(void)
{
	/* Above the usual ephemeral range's start, away from pubd's 7470. */
	return 20000 + run_rand() % 20000;
}

const char *bench_group_addr(unsigned i, char *buf, size_t len)
{
	unsigned r = run_rand() >> 8;

	snprintf(buf, len, "239.%u.%u.%u", 100 + (r >> 16) % 100, (r >> 8) & 0xff, (r + i) % 250 + 1);
	return buf;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double bench_now_s(void)
{
	return (double)bench_now_ns() * 1e-9;
}

void bench_sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f)
		return -errno;
	if (fputs(text, f) < 0)
		err = -EIO;
	if (fclose(f) != 0 && !err)
		err = -errno;
	return err;
}

static void dump_log(const struct bench_daemon *d)
{
	char line[512];
	FILE *f = fopen(d->log, "r");

	if (!f)
		return;
	fprintf(stderr, "---- %s log (%s)\n", d->name, d->log);
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fclose(f);
}

int bench_daemon_start(struct bench_daemon *d, const char *name, const char *body, const char *const *prefix,
		       int timeout_ms)
{
	struct pub_options o = PUB_OPTIONS_INIT;
	const char *argv[32];
	pub_client_t *c;
	char *text;
	size_t n = 0;
	int err, st;

	memset(d, 0, sizeof(*d));
	d->pid = -1;
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->dir, sizeof(d->dir), "%s/pubd-bench-%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
	if (!mkdtemp(d->dir))
		return -errno;
	snprintf(d->sock, sizeof(d->sock), "%s/pubd.sock", d->dir);
	snprintf(d->conf, sizeof(d->conf), "%s/pubd.yaml", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/pubd.log", d->dir);
	if (asprintf(&text, "daemon:\n  socket: %s\n  log_level: notice\n%s", d->sock, body) < 0)
		return -ENOMEM;
	err = write_file(d->conf, text);
	free(text);
	if (err < 0)
		return err;

	for (; prefix && prefix[n] && n < 24; n++)
		argv[n] = prefix[n];
	argv[n++] = bench_pubd_path();
	argv[n++] = "-c";
	argv[n++] = d->conf;
	argv[n] = NULL;

	d->pid = fork();
	if (d->pid < 0)
		return -errno;
	if (d->pid == 0) {
		int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}

	/* Ready when a client gets its WELCOME: the loop is running. */
	o.client_name = "bench-probe";
	o.connect_timeout_ms = 0;
	for (uint64_t end = bench_now_ns() + (uint64_t)timeout_ms * 1000000ull;;) {
		if (pub_connect(&c, d->sock, &o) == 0) {
			pub_close(c);
			return 0;
		}
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			fprintf(stderr, "bench: %s (%s) exited during start-up\n", d->name, bench_pubd_path());
			d->pid = -1;
			dump_log(d);
			return -ECHILD;
		}
		if (bench_now_ns() > end)
			break;
		bench_sleep_ms(20);
	}
	fprintf(stderr, "bench: %s did not answer on %s within %d ms\n", d->name, d->sock, timeout_ms);
	dump_log(d);
	bench_daemon_stop(d, 1000, true);
	return -ETIMEDOUT;
}

void bench_daemon_stop(struct bench_daemon *d, int timeout_ms, bool keep)
{
	int st;

	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		for (int i = 0; i < timeout_ms / 10; i++) {
			if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
				d->pid = -1;
				break;
			}
			bench_sleep_ms(10);
		}
		if (d->pid > 0) {
			fprintf(stderr, "bench: %s did not stop within %d ms; killing it\n", d->name, timeout_ms);
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &st, 0);
			d->pid = -1;
		}
	}
	if (!keep && d->dir[0]) {
		unlink(d->conf);
		unlink(d->log);
		unlink(d->sock);
		rmdir(d->dir);
	}
}

pub_client_t *bench_connect(const char *sock, const char *name)
{
	struct pub_options o = PUB_OPTIONS_INIT;
	pub_client_t *c;

	o.client_name = name;
	o.connect_timeout_ms = 10000;
	/* A benchmark must see a lost connection, not ride over it. */
	o.flags = PUB_OPT_NO_RECONNECT;
	if (pub_connect(&c, sock, &o) < 0) {
		fprintf(stderr, "bench: %s: %s\n", name, pub_errmsg(NULL));
		exit(2);
	}
	return c;
}

uint64_t bench_cpu_ns_self(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

uint64_t bench_cpu_ns_pid(pid_t pid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	fclose(f);
	return ns;
}

long long bench_rss_bytes(pid_t pid)
{
	char path[64], line[256];
	long long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_percentile(double *v, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	rank = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

static void json_add(struct bench_json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void json_add(struct bench_json *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->len >= sizeof(j->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(j->buf + j->len, sizeof(j->buf) - j->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		j->len += (size_t)n;
}

void bench_json_begin(struct bench_json *j, const char *bench, const char *kase)
{
	j->len = 0;
	json_add(j, "{\"bench\":\"%s\",\"case\":\"%s\"", bench, kase);
}

void bench_json_str(struct bench_json *j, const char *key, const char *val)
{
	json_add(j, ",\"%s\":\"%s\"", key, val);
}

void bench_json_num(struct bench_json *j, const char *key, double val)
{
	json_add(j, ",\"%s\":%.6g", key, val);
}

void bench_json_int(struct bench_json *j, const char *key, long long val)
{
	json_add(j, ",\"%s\":%lld", key, val);
}

void bench_json_end(struct bench_json *j)
{
	json_add(j, "}");
	printf("%s\n", j->buf);
	fflush(stdout);
}

double bench_ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

const char *bench_si(double v, char *buf, size_t len)
{
	static const char *const unit[] = {"", " k", " M", " G", " T"};
	unsigned u = 0;

	while (v >= 1000.0 && u < 4) {
		v /= 1000.0;
		u++;
	}
	snprintf(buf, len, "%.3g%s", v, unit[u]);
	return buf;
}
