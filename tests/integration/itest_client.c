/* SPDX-License-Identifier: MIT */
/*
 * itest_client: a real libpub client for the integration tests, for what
 * pubctl does not do on purpose: subscribe and then not read (a slow
 * subscriber), stay subscribed across a daemon restart, log every message
 * with its source and sequence, and speak garbage to the daemon's socket.
 *
 *   itest_client sub -s SOCK -g GROUP [-g GROUP...] [--log FILE] [--dir DIR]
 *                    [--count N] [--timeout-ms MS] [--ready FILE] [--hold] [--rate R]
 *       Subscribe, create the ready file, then receive. One line per message
 *       in the log: "msg GROUP SOURCE SEQ LEN INDEX OK|BAD" (INDEX from the
 *       payload of `itest_client pub`, -1 when too short; BAD when the bytes
 *       are not the pattern of that index), "error CODE NAME" for an error
 *       pub_recv returned, "reconnected N" when the handle reconnected.
 *       --dir writes each payload to DIR/<n>.bin (n from 0, in order).
 *       --hold: after subscribing, read nothing until a line arrives on stdin;
 *       a number on that line replaces --count. --rate: take at most R
 *       messages a second (a subscriber slower than its publisher). Exits 0
 *       when --count messages arrived, 3 on timeout. --hold-last: after the
 *       last message, log "holding", keep it (no further pub_recv) and
 *       query pubd's status (again whenever pub_fd is readable, or 100 ms
 *       passed) until libpub reports the
 *       connection lost, then check the held message's bytes again: "held
 *       OK|BAD" (they stay valid until the next pub_recv, whatever became
 *       of the connection).
 *   itest_client pub -s SOCK -g GROUP --count N --size B [--start I] [--rate R] [--more]
 *       Publish N messages of B >= 8 bytes with indices I.. (the index, then a
 *       pattern of it); the last one with PUB_SYNC, so exit 0 means pubd took
 *       them all. --rate: at most R messages per second (paced against the
 *       clock, for a load that a reading subscriber keeps up with). --more:
 *       all but the last with PUB_MORE. --hold: print "connected", wait for a
 *       line on stdin, publish the N without PUB_SYNC, print "published N", wait
 *       for another line, then publish one more with PUB_SYNC and print "after
 *       RC MESSAGE" (what libpub said; exit 0 either way). --also-sub G: the
 *       publishing handle subscribes to G too (and never reads it), and
 *       first publishes one message (index I + N) with PUB_SYNC: its logs
 *       are there before the rest.
 *   itest_client pollsub -s SOCK -g GROUP --count N [--ready FILE] [--timeout-ms MS]
 *       Subscribe, then receive as an event loop does: poll(pub_fd) and take
 *       what pub_recv(0) gives. Prints "pollsub: got N, W wakeups, E empty"
 *       (E: poll said readable and pub_recv had nothing); exits 0 with all N.
 *   itest_client recvtime -s SOCK -g GROUP --count N --timeout-ms MS
 *       Subscribe, print "ready", wait for a line on stdin, then call
 *       pub_recv(MS) N times; print "recvtime: longest L ms" (the longest
 *       call; each must keep to its timeout, a reconnect's handshake with it).
 *   itest_client forksub -s SOCK -g GROUP --count N
 *       Subscribe to GROUP and receive a first message (from a second handle
 *       of its own), fork; the child closes the handle it inherited and
 *       exits; then N more are published and received. Prints "forksub: got
 *       K of N" and exits 0 when K == N (a child's pub_close must not touch
 *       what the parent still uses).
 *   itest_client gen --count N --size B [--start I]
 *       Write those payloads to stdout, concatenated (what `pubctl sub
 *       --output` writes for them).
 *   itest_client garbage -s SOCK --mode MODE
 *       A raw Unix-socket client. MODE: type (HELLO, then a frame of an
 *       unknown type), length (HELLO, then a frame longer than any limit),
 *       body (HELLO, then a SUBSCRIBE whose name runs past its body),
 *       hello (a HELLO with a bad body). Expects an ERROR frame with the
 *       protocol error code and then end of file; prints what it got.
 *       Exit 0 when that happened, 1 otherwise.
 *
 * No sleeps: every wait is pub_recv or poll with a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "pub.h"

#define MAX_GROUPS 16

struct opts {
	const char *sock;
	const char *groups[MAX_GROUPS];
	unsigned ngroups;
	const char *log, *dir, *ready, *mode, *also_sub;
	uint64_t count, size, start, rate;
	long timeout_ms;
	bool hold, more, hold_last;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The payload of message idx: 8 bytes of index (little-endian), then bytes
 * of an xorshift stream seeded by it. */
static void fill(uint8_t *p, uint64_t size, uint64_t idx)
{
	uint64_t x = idx * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull, i;

	for (i = 0; i < 8 && i < size; i++)
		p[i] = (uint8_t)(idx >> (8 * i));
	for (; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)(x >> 32);
	}
}

static bool check_payload(const uint8_t *p, size_t len, int64_t *idx_out)
{
	uint64_t idx = 0;
	uint8_t *want;
	bool ok;
	int i;

	*idx_out = -1;
	if (len < 8)
		return true;
	for (i = 0; i < 8; i++)
		idx |= (uint64_t)p[i] << (8 * i);
	*idx_out = (int64_t)idx;
	want = malloc(len);
	if (!want)
		return false;
	fill(want, len, idx);
	ok = memcmp(want, p, len) == 0;
	free(want);
	return ok;
}

static int touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int connect_client(const struct opts *o, pub_client_t **c)
{
	struct pub_options po = PUB_OPTIONS_INIT;
	int err;

	po.client_name = "itest_client";
	po.connect_timeout_ms = 10000;
	err = pub_connect(c, o->sock, &po);
	if (err < 0)
		fprintf(stderr, "itest_client: connect %s: %s\n", o->sock ? o->sock : "(default)", pub_errmsg(NULL));
	return err;
}

/* Pacing, not synchronisation: event i happens no earlier than i / rate
 * seconds after t0. */
static void pace(uint64_t t0, uint64_t i, uint64_t rate)
{
	uint64_t due = t0 + i * 1000000000ull / rate;
	struct timespec ts = {(time_t)(due / 1000000000ull), (long)(due % 1000000000ull)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int count_table(const struct pub_table *t, void *arg)
{
	(void)t;
	(void)arg;
	return 0;
}

/* --hold-last: the last message outlives its connection until the next pub_recv. */
static int hold_across_loss(pub_client_t *c, const struct pub_message *m, const char *group, FILE *log)
{
	struct pollfd p = {.fd = pub_fd(c), .events = POLLIN};
	uint64_t deadline = now_ms() + 60000;
	int64_t idx;
	int err = 0;

	fprintf(log, "holding\n");
	fflush(log);
	(void)group;
	while (err == 0 && now_ms() < deadline) {
		poll(&p, 1, 100); /* readable when the socket ends */
		err = pub_query(c, PUB_Q_STATUS, NULL, count_table, NULL);
	}
	fprintf(log, "query after the loss: %s\n", pub_strerror(err));
	fprintf(log, "held %s\n", check_payload(m->data, m->len, &idx) ? "OK" : "BAD");
	fflush(log);
	return err ? 0 : 1;
}

static int cmd_sub(const struct opts *o)
{
	pub_client_t *c = NULL;
	struct pub_message m;
	struct pub_info info;
	FILE *log = stdout;
	uint64_t got = 0, count = o->count, reconnects = 0, deadline, t0;
	unsigned i;
	int err, rc = 1;

	if (o->log) {
		log = fopen(o->log, "a");
		if (!log) {
			fprintf(stderr, "itest_client: %s: %s\n", o->log, strerror(errno));
			return 1;
		}
	}
	if (connect_client(o, &c) < 0)
		goto out;
	for (i = 0; i < o->ngroups; i++) {
		err = pub_subscribe(c, o->groups[i]);
		if (err < 0) {
			fprintf(stderr, "itest_client: subscribe %s: %s\n", o->groups[i], pub_errmsg(c));
			fprintf(log, "subscribe-error %d %s\n", -err, pub_strerror(err));
			fflush(log);
			goto out;
		}
	}
	if (o->ready && touch(o->ready) < 0) {
		fprintf(stderr, "itest_client: %s: %s\n", o->ready, strerror(errno));
		goto out;
	}
	if (o->hold) {
		char line[64];

		/* The test decides when this subscriber starts reading. */
		if (fgets(line, sizeof(line), stdin) && strtoull(line, NULL, 10) > 0)
			count = strtoull(line, NULL, 10);
	}
	deadline = o->timeout_ms > 0 ? now_ms() + (uint64_t)o->timeout_ms : UINT64_MAX;
	t0 = now_ns();
	while (!count || got < count) {
		uint64_t now;
		int64_t idx;
		bool ok;

		if (o->rate)
			pace(t0, got, o->rate);
		now = now_ms();
		if (now >= deadline) {
			fprintf(log, "timeout after %" PRIu64 " messages\n", got);
			rc = 3;
			goto out;
		}
		/* At most a second per call, so a reconnect is logged soon after it happens. */
		err = pub_recv(c, &m, deadline - now < 1000 ? (int)(deadline - now) : 1000);
		if (pub_info(c, &info) == 0 && info.reconnects != reconnects) {
			reconnects = info.reconnects;
			fprintf(log, "reconnected %" PRIu64 "\n", reconnects);
			fflush(log);
		}
		if (err == 0)
			continue;
		if (err < 0) {
			fprintf(log, "error %d %s\n", -err, pub_strerror(err));
			fflush(log);
			if (err == -ENOTCONN || err == -ENOMEM || err == -PUB_EPROTO)
				goto out;
			continue;
		}
		ok = check_payload(m.data, m.len, &idx);
		fprintf(log, "msg %s %016" PRIx64 " %" PRIu64 " %zu %" PRId64 " %s\n", m.group, m.source, m.seq, m.len,
			idx, ok ? "OK" : "BAD");
		fflush(log);
		if (o->dir) {
			char path[4096];
			FILE *f;

			snprintf(path, sizeof(path), "%s/%" PRIu64 ".bin", o->dir, got);
			f = fopen(path, "w");
			if (!f || (m.len && fwrite(m.data, 1, m.len, f) != m.len) || fclose(f) != 0) {
				fprintf(stderr, "itest_client: %s: %s\n", path, strerror(errno));
				goto out;
			}
		}
		got++;
	}
	rc = o->hold_last && got ? hold_across_loss(c, &m, o->groups[0], log) : 0;
out:
	pub_close(c);
	if (log != stdout)
		fclose(log);
	return rc;
}

/* pub --hold: say where we are, then wait for the test's line on stdin. */
static bool say_and_wait(const char *what)
{
	char line[64];

	printf("%s\n", what);
	fflush(stdout);
	return fgets(line, sizeof(line), stdin) != NULL;
}

static int cmd_pub(const struct opts *o)
{
	pub_client_t *c = NULL;
	uint8_t *buf;
	uint64_t i, t0;
	int err = 0;

	if (o->ngroups != 1 || o->size < 8 || !o->count) {
		fprintf(stderr, "itest_client pub: one -g, --count N >= 1 and --size B >= 8\n");
		return 2;
	}
	buf = malloc(o->size);
	if (!buf)
		return 1;
	if (connect_client(o, &c) < 0) {
		free(buf);
		return 1;
	}
	if (o->also_sub) {
		fill(buf, o->size, o->start + o->count);
		if (pub_subscribe(c, o->also_sub) < 0 || pub_publish(c, o->groups[0], buf, o->size, PUB_SYNC) < 0) {
			fprintf(stderr, "itest_client: subscribe %s, publish: %s\n", o->also_sub, pub_errmsg(c));
			goto out;
		}
	}
	if (o->hold && !say_and_wait("connected"))
		goto out;
	t0 = now_ns();
	for (i = 0; i < o->count; i++) {
		if (o->rate)
			pace(t0, i, o->rate);
		fill(buf, o->size, o->start + i);
		err = pub_publish(c, o->groups[0], buf, o->size,
				  i + 1 == o->count && !o->hold ? PUB_SYNC
				  : o->more			? PUB_MORE
								: 0);
		if (err < 0) {
			fprintf(stderr, "itest_client: publish %" PRIu64 " to %s: %s\n", o->start + i, o->groups[0],
				pub_errmsg(c));
			break;
		}
	}
	if (o->hold && err == 0) {
		char what[64];

		snprintf(what, sizeof(what), "published %" PRIu64, o->count);
		if (!say_and_wait(what))
			goto out;
		fill(buf, o->size, o->start + o->count);
		err = pub_publish(c, o->groups[0], buf, o->size, PUB_SYNC);
		printf("after %d %s\n", err, err < 0 ? pub_errmsg(c) : "");
		err = 0;
	}
out:
	pub_close(c);
	free(buf);
	return err < 0 ? 1 : 0;
}

static int cmd_pollsub(const struct opts *o)
{
	uint64_t got = 0, wakeups = 0, empty = 0, deadline;
	pub_client_t *c = NULL;
	struct pub_message m;
	int r;

	if (!o->ngroups || connect_client(o, &c) < 0 || pub_subscribe(c, o->groups[0]) < 0 ||
	    (o->ready && touch(o->ready) < 0)) {
		fprintf(stderr, "itest_client pollsub: %s\n", c ? pub_errmsg(c) : "cannot connect");
		return 1;
	}
	deadline = now_ms() + (uint64_t)(o->timeout_ms > 0 ? o->timeout_ms : 30000);
	while (got < o->count && now_ms() < deadline) {
		struct pollfd p = {.fd = pub_fd(c), .events = POLLIN};

		if (poll(&p, 1, 1000) <= 0)
			continue;
		wakeups++;
		r = pub_recv(c, &m, 0);
		if (r == 0)
			empty++;
		while (r == 1 && ++got < o->count)
			r = pub_recv(c, &m, 0);
		if (r < 0) {
			fprintf(stderr, "itest_client pollsub: %s\n", pub_errmsg(c));
			break;
		}
	}
	printf("pollsub: got %llu, %llu wakeups, %llu empty\n", (unsigned long long)got, (unsigned long long)wakeups,
	       (unsigned long long)empty);
	pub_close(c);
	return got == o->count ? 0 : 1;
}

static int cmd_recvtime(const struct opts *o)
{
	pub_client_t *c = NULL;
	struct pub_message m;
	uint64_t longest = 0, t;
	char line[64];

	if (!o->ngroups || connect_client(o, &c) < 0 || pub_subscribe(c, o->groups[0]) < 0) {
		fprintf(stderr, "itest_client recvtime: %s\n", c ? pub_errmsg(c) : "cannot connect");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (uint64_t i = 0; i < o->count; i++) {
		t = now_ms();
		(void)pub_recv(c, &m, (int)o->timeout_ms);
		t = now_ms() - t;
		longest = t > longest ? t : longest;
	}
	printf("recvtime: longest %llu ms (%s)\n", (unsigned long long)longest, pub_errmsg(c));
	fflush(stdout);
	pub_close(c);
	return 0;
}

static int cmd_forksub(const struct opts *o)
{
	pub_client_t *sub = NULL, *pub = NULL;
	struct pub_message m;
	uint64_t got = 0, i;
	int st = 0, r;
	pid_t pid;

	if (!o->ngroups || connect_client(o, &sub) < 0 || connect_client(o, &pub) < 0 ||
	    pub_subscribe(sub, o->groups[0]) < 0 || pub_publish(pub, o->groups[0], "first", 5, PUB_SYNC) < 0 ||
	    pub_recv(sub, &m, 10000) != 1) {
		fprintf(stderr, "itest_client forksub: %s\n", sub ? pub_errmsg(sub) : "cannot connect");
		return 1;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		pub_close(sub);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return 1;
	for (i = 0; i < o->count; i++)
		if (pub_publish(pub, o->groups[0], "after", 5, PUB_SYNC) < 0)
			return 1;
	while (got < o->count && (r = pub_recv(sub, &m, 2000)) == 1)
		got++;
	printf("forksub: got %llu of %llu\n", (unsigned long long)got, (unsigned long long)o->count);
	pub_close(pub);
	pub_close(sub);
	return got == o->count ? 0 : 1;
}

static int cmd_gen(const struct opts *o)
{
	uint8_t *buf = malloc(o->size ? o->size : 1);
	uint64_t i;

	if (!buf)
		return 1;
	for (i = 0; i < o->count; i++) {
		fill(buf, o->size, o->start + i);
		if (fwrite(buf, 1, o->size, stdout) != o->size) {
			free(buf);
			return 1;
		}
	}
	free(buf);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* ---- garbage ---- */

static int raw_connect(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int write_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Read frames until EOF or the deadline. Returns 0 when an ERROR frame with
 * PUB_ERR_PROTO arrived and then the daemon closed the connection.
 */
static int expect_proto_error(int fd, long timeout_ms)
{
	static uint8_t buf[1 << 16];
	size_t have = 0;
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	bool got_error = false;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = now_ms();
		const uint8_t *body;
		uint32_t body_len;
		uint8_t type;
		size_t need;
		ssize_t n;
		int r;

		/* Take every whole frame out of the buffer first. */
		while ((r = pub_proto_frame_peek(buf, have, sizeof(buf), &type, &body_len, &body, &need)) == 1) {
			size_t flen = PUB_PROTO_HDR_LEN + body_len;

			if (type == PUB_FRAME_ERROR) {
				struct pub_msg_error e;

				if (pub_proto_dec_error(body, body_len, &e) == 0) {
					printf("error code=%u (%s) text=%.*s\n", e.code, pub_proto_err_name(e.code),
					       (int)e.text.len, e.text.ptr);
					if (e.code == PUB_ERR_PROTO)
						got_error = true;
				}
			} else {
				printf("frame type=%u len=%u\n", type, body_len);
			}
			memmove(buf, buf + flen, have - flen);
			have -= flen;
		}
		if (r < 0) {
			printf("undecodable reply from the daemon\n");
			return 1;
		}
		if (now >= deadline) {
			printf("timeout: %s\n", got_error ? "error but no close" : "no error");
			return 1;
		}
		if (poll(&p, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			return 1;
		n = recv(fd, buf + have, sizeof(buf) - have, MSG_DONTWAIT);
		if (n == 0) {
			printf("eof\n");
			return got_error ? 0 : 1;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			/* A reset after the error frame is a close too. */
			printf("recv: %s\n", strerror(errno));
			return got_error && errno == ECONNRESET ? 0 : 1;
		}
		have += (size_t)n;
	}
}

static int cmd_garbage(const struct opts *o)
{
	uint8_t frame[512];
	long n;
	int fd, err;

	if (!o->sock || !o->mode) {
		fprintf(stderr, "itest_client garbage: -s SOCK --mode MODE\n");
		return 2;
	}
	fd = raw_connect(o->sock);
	if (fd < 0) {
		fprintf(stderr, "itest_client: connect %s: %s\n", o->sock, strerror(-fd));
		return 1;
	}
	if (strcmp(o->mode, "hello") == 0) {
		/* A HELLO whose client name runs past the body. */
		n = (long)pub_proto_put_hdr(frame, PUB_FRAME_HELLO, 9);
		memset(frame + n, 0, 9);
		frame[n] = PUB_PROTO_VERSION;
		frame[n + 8] = 200; /* name8 length 200, no bytes follow */
		n += 9;
	} else {
		n = pub_proto_enc_hello(frame, sizeof(frame), 0, "garbage", 7);
		if (n <= 0)
			return 1;
		if (strcmp(o->mode, "type") == 0) {
			n += (long)pub_proto_put_hdr(frame + n, PUB_FRAME_HELLO, 4);
			frame[n - PUB_PROTO_HDR_LEN + 4] = 0xee; /* type byte: unknown */
			memset(frame + n, 0xab, 4);
			n += 4;
		} else if (strcmp(o->mode, "length") == 0) {
			/* body_len 0xfffffff0: above any limit the daemon may set. */
			n += (long)pub_proto_put_hdr(frame + n, PUB_FRAME_PUBLISH, 0xfffffff0u);
			memset(frame + n, 0, 16);
			n += 16;
		} else if (strcmp(o->mode, "body") == 0) {
			n += (long)pub_proto_put_hdr(frame + n, PUB_FRAME_SUBSCRIBE, 6);
			memset(frame + n, 0, 6);
			frame[n + 4] = 50; /* name8 length 50 with one byte of name */
			frame[n + 5] = 'x';
			n += 6;
		} else {
			fprintf(stderr, "itest_client garbage: unknown mode %s\n", o->mode);
			close(fd);
			return 2;
		}
	}
	err = write_all(fd, frame, (size_t)n);
	if (err < 0) {
		printf("write: %s\n", strerror(-err));
		close(fd);
		return 1;
	}
	err = expect_proto_error(fd, o->timeout_ms > 0 ? o->timeout_ms : 10000);
	close(fd);
	return err;
}

static void usage(void)
{
	fprintf(stderr, "usage: itest_client sub|pub|gen|garbage [options] (see the source)\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"socket", required_argument, NULL, 's'},   {"group", required_argument, NULL, 'g'},
		{"log", required_argument, NULL, 'l'},	    {"dir", required_argument, NULL, 'd'},
		{"count", required_argument, NULL, 'n'},    {"size", required_argument, NULL, 'b'},
		{"start", required_argument, NULL, 'i'},    {"timeout-ms", required_argument, NULL, 't'},
		{"ready", required_argument, NULL, 'r'},    {"hold", no_argument, NULL, 'H'},
		{"mode", required_argument, NULL, 'm'},	    {"rate", required_argument, NULL, 'R'},
		{"more", no_argument, NULL, 'M'},	    {"hold-last", no_argument, NULL, 'L'},
		{"also-sub", required_argument, NULL, 'A'}, {NULL, 0, NULL, 0},
	};
	struct opts o = {0};
	const char *cmd;
	int c;

	if (argc < 2) {
		usage();
		return 2;
	}
	cmd = argv[1];
	optind = 2;
	o.sock = getenv(PUB_SOCKET_ENV);
	while ((c = getopt_long(argc, argv, "s:g:", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			o.sock = optarg;
			break;
		case 'g':
			if (o.ngroups == MAX_GROUPS)
				return 2;
			o.groups[o.ngroups++] = optarg;
			break;
		case 'l':
			o.log = optarg;
			break;
		case 'd':
			o.dir = optarg;
			break;
		case 'n':
			o.count = strtoull(optarg, NULL, 0);
			break;
		case 'b':
			o.size = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			o.start = strtoull(optarg, NULL, 0);
			break;
		case 't':
			o.timeout_ms = strtol(optarg, NULL, 0);
			break;
		case 'r':
			o.ready = optarg;
			break;
		case 'H':
			o.hold = true;
			break;
		case 'm':
			o.mode = optarg;
			break;
		case 'R':
			o.rate = strtoull(optarg, NULL, 0);
			break;
		case 'M':
			o.more = true;
			break;
		case 'L':
			o.hold_last = true;
			break;
		case 'A':
			o.also_sub = optarg;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (strcmp(cmd, "sub") == 0)
		return cmd_sub(&o);
	if (strcmp(cmd, "pub") == 0)
		return cmd_pub(&o);
	if (strcmp(cmd, "gen") == 0)
		return cmd_gen(&o);
	if (strcmp(cmd, "pollsub") == 0)
		return cmd_pollsub(&o);
	if (strcmp(cmd, "recvtime") == 0)
		return cmd_recvtime(&o);
	if (strcmp(cmd, "forksub") == 0)
		return cmd_forksub(&o);
	if (strcmp(cmd, "garbage") == 0)
		return cmd_garbage(&o);
	usage();
	return 2;
}
