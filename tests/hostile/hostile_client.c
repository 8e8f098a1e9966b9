/* SPDX-License-Identifier: MIT */
/*
 * hostile_client: a local client that speaks the frames of common/proto.h
 * raw, the way a hostile or broken one would, for the hostile tier.
 *
 *   hostile_client MODE -s SOCK [options]
 *
 * MODE:
 *   bigpub      -n N --declare BYTES [-g G] [--hello]: N connections, each
 *               sends a PUBLISH head declaring BYTES of payload (before HELLO,
 *               or right after it with --hello), then all of it but the last
 *               byte. Prints bytes sent and how many
 *               connections pubd refused, then holds them open.
 *   idle        -n N [--hello]: open N connections (with --hello: HELLO and
 *               wait for WELCOME); prints accepted/refused, then holds.
 *   nohello     -n N: N connections that never complete HELLO (every other
 *               one sends half a HELLO frame), then waits (--hold-ms, default
 *               10 s) for pubd to end them; prints how many it ended with a
 *               PROTO error (limits.hello_timeout_ms), refused (BUSY), or
 *               left open, and after how long.
 *   flood       -n N: non-blocking connects until one fails (a full listen
 *               backlog) or N; prints the count, then holds.
 *   unsub       -g G --size BYTES: subscribe, have a second connection
 *               publish one BYTES message to G, do not read until pubd has
 *               written part of the DELIVER, then UNSUBSCRIBE and QUERY;
 *               read: exit 0 when both are answered within the deadline,
 *               and 3 more queries after them, one at a time. --trigger
 *               FILE: instead of UNSUBSCRIBE, create --ready and wait for
 *               FILE (the test ends the subscription by a reload meanwhile).
 *   deaf        -g G: HELLO, SUBSCRIBE, then never read again; holds.
 *   pubclose    -g G -n N --size BYTES: HELLO, N PUBLISHes (req_id 0) with
 *               blocking writes, then close at once; prints what it sent.
 *   name        --name TEXT [-g G]: HELLO with that client name, SUBSCRIBE to
 *               group G (any name), then a frame of an invalid type (a
 *               protocol error, which pubd logs with the client name).
 *               With --ready: no bad frame; once the SUBSCRIBE is answered,
 *               holds, a subscriber by that name (in tables and metrics).
 *   subscribes  -n N [-g G]: HELLO, then N SUBSCRIBEs to distinct unknown
 *               groups (255-byte names), or all to G, never reading; holds.
 *   endhold     -n N [-g G] [--size S]: N connections on shared memory,
 *               each subscribed to G, publishing 20 messages of S bytes
 *               there (written into the group log it never reads), then a
 *               frame of an invalid type: pubd ends each one while it may
 *               hold a message there. None hangs up; holds.
 *   connflood   [--hold-ms T]: connect and close, as fast as it can, for T ms
 *               (default 5000).
 *   queries     -n N --kind K: HELLO, then N QUERYs of kind K, never reading;
 *               holds.
 *   fdpass      -g G -n N: HELLO and N PUBLISHes to G (req_id 0, 64 bytes),
 *               every frame sent with FDPASS_NFDS descriptors attached
 *               (SCM_RIGHTS: a 1 MiB memfd and a pipe's ends, over and over),
 *               the last with a req_id, whose answer it waits for; prints
 *               frames and descriptors sent and the answer.
 *
 * Common: --ready FILE is created once the attack is in place; holding means
 * waiting until stdin reaches EOF or --hold-ms passes (default: forever,
 * the test kills it). Every wait has a deadline; no sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

struct opts {
	const char *sock, *group, *name, *ready, *trigger;
	long n, declare, size, kind, hold_ms;
	bool hello;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int sock_connect(const char *path, bool nonblock)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* Write all of it, waiting at most until deadline (ms). 0, or -errno. */
static int send_until(int fd, const void *p, size_t len, uint64_t deadline)
{
	const uint8_t *b = p;

	while (len) {
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			b += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		poll(&pf, 1, (int)(deadline - now_ms()));
	}
	return 0;
}

/* A receive buffer that hands out whole frames. */
struct rx {
	uint8_t *buf;
	size_t have, cap;
	size_t consumed; /* the frame handed out last, dropped on the next call */
};

/*
 * Next whole frame from fd before deadline: 1 (type/body/len set; valid
 * until the next call), 0 on EOF, -ETIMEDOUT, or another -errno.
 */
static int rx_frame(struct rx *r, int fd, uint64_t deadline, uint8_t *type, const uint8_t **body, uint32_t *len)
{
	if (r->consumed) {
		memmove(r->buf, r->buf + r->consumed, r->have - r->consumed);
		r->have -= r->consumed;
		r->consumed = 0;
	}
	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		size_t need;
		ssize_t n;
		int p = pub_proto_frame_peek(r->buf, r->have, r->cap - PUB_PROTO_HDR_LEN, type, len, body, &need);

		if (p == 1) {
			r->consumed = PUB_PROTO_HDR_LEN + *len;
			return 1;
		}
		if (p < 0)
			return -EPROTO;
		n = recv(fd, r->buf + r->have, r->cap - r->have, MSG_DONTWAIT);
		if (n == 0)
			return 0;
		if (n > 0) {
			r->have += (size_t)n;
			continue;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		poll(&pf, 1, (int)(deadline - now_ms()));
	}
}

static int rx_init(struct rx *r, size_t cap)
{
	r->buf = malloc(cap);
	r->have = 0;
	r->consumed = 0;
	r->cap = cap;
	return r->buf ? 0 : -ENOMEM;
}

static int send_hello_flags(int fd, const char *name, size_t name_len, uint32_t flags)
{
	uint8_t f[600];
	long n = pub_proto_enc_hello(f, sizeof(f), flags, name, name_len);

	return n > 0 ? send_until(fd, f, (size_t)n, now_ms() + 5000) : -EINVAL;
}

static int send_hello(int fd, const char *name, size_t name_len)
{
	return send_hello_flags(fd, name, name_len, 0);
}

/* HELLO, then wait for WELCOME. 0 when welcomed, 1 when refused, -errno. */
static int hello_welcome(int fd, const char *name)
{
	struct rx r;
	uint8_t type;
	const uint8_t *body;
	uint32_t len;
	int err = send_hello(fd, name, strlen(name));

	if (err < 0)
		return err == -EPIPE || err == -ECONNRESET ? 1 : err;
	if (rx_init(&r, 1 << 16) < 0)
		return -ENOMEM;
	err = rx_frame(&r, fd, now_ms() + 5000, &type, &body, &len);
	free(r.buf);
	if (err == 1)
		return type == PUB_FRAME_WELCOME ? 0 : 1;
	if (err == 0 || err == -ECONNRESET)
		return 1;
	return err;
}

static void make_ready(const struct opts *o)
{
	fflush(stdout);
	if (o->ready) {
		int fd = open(o->ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd >= 0)
			close(fd);
	}
}

/* Hold what we have: until stdin ends, --hold-ms passes, or we are killed. */
static void hold(const struct opts *o)
{
	uint64_t end = o->hold_ms > 0 ? now_ms() + (uint64_t)o->hold_ms : UINT64_MAX;
	char c[64];

	make_ready(o);
	for (;;) {
		struct pollfd pf = {.fd = 0, .events = POLLIN};
		uint64_t now = now_ms();
		int t = end == UINT64_MAX ? 1000 : (now >= end ? 0 : (int)(end - now));

		if (now >= end)
			return;
		if (poll(&pf, 1, t) > 0) {
			ssize_t n = read(0, c, sizeof(c));

			if (n <= 0 && o->hold_ms > 0)
				return;
			if (n <= 0) /* stdin closed (or /dev/null): wait for the kill */
				pause();
		}
	}
}

static long publish_head(uint8_t *f, size_t cap, uint32_t req, const char *g, size_t payload)
{
	return pub_proto_enc_publish_head(f, cap, req, g, strlen(g), payload);
}

/* ---- modes ---- */

static int mode_bigpub(const struct opts *o)
{
	long n = o->n > 0 ? o->n : 32, i, refused = 0, connected = 0;
	size_t declare = o->declare > 0 ? (size_t)o->declare : 16u << 20, want = declare - 1, total = 0;
	const char *g = o->group ? o->group : "h";
	static uint8_t chunk[1 << 16];
	int *fds = calloc((size_t)n, sizeof(int));
	size_t *sent = calloc((size_t)n, sizeof(size_t));
	uint64_t last_progress = now_ms();

	if (!fds || !sent)
		return 1;
	memset(chunk, 0xab, sizeof(chunk));
	for (i = 0; i < n; i++) {
		uint8_t head[PUB_PROTO_MAX_HEAD];
		long h;

		fds[i] = sock_connect(o->sock, true);
		if (fds[i] < 0) {
			refused++;
			continue;
		}
		connected++;
		if (o->hello && send_hello(fds[i], "bigpub", 6) < 0) {
			close(fds[i]);
			fds[i] = -1;
			refused++;
			continue;
		}
		h = publish_head(head, sizeof(head), 1, g, declare);
		if (h <= 0 || send_until(fds[i], head, (size_t)h, now_ms() + 2000) < 0) {
			close(fds[i]);
			fds[i] = -1;
			refused++;
		}
	}
	/* Push every connection's payload until each is done, refused, or
	 * nothing has moved for 2 s (pubd stopped reading: what it holds now
	 * is what the attack pinned). */
	for (;;) {
		bool active = false, moved = false;

		for (i = 0; i < n; i++) {
			ssize_t w;
			size_t left;

			if (fds[i] < 0 || sent[i] >= want)
				continue;
			active = true;
			left = want - sent[i];
			w = send(fds[i], chunk, left < sizeof(chunk) ? left : sizeof(chunk),
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0) {
				sent[i] += (size_t)w;
				total += (size_t)w;
				moved = true;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				close(fds[i]);
				fds[i] = -1;
				refused++;
			}
		}
		if (!active)
			break;
		if (moved)
			last_progress = now_ms();
		else if (now_ms() - last_progress > 2000)
			break;
		else {
			struct pollfd pf = {.fd = -1};

			poll(&pf, 0, 5); /* waiting for socket room, bounded above */
		}
	}
	printf("bigpub: connections %ld, declared %zu bytes each, sent %zu bytes in all, refused %ld\n", connected,
	       declare, total, refused);
	hold(o);
	return 0;
}

static int mode_idle(const struct opts *o)
{
	long n = o->n > 0 ? o->n : 1000, i, ok = 0, refused = 0;

	for (i = 0; i < n; i++) {
		/* Without HELLO, a full listen backlog refuses at once. */
		int fd = sock_connect(o->sock, !o->hello);

		if (fd < 0) {
			refused++;
			continue;
		}
		if (o->hello) {
			int r = hello_welcome(fd, "idle");

			if (r != 0) {
				refused++;
				close(fd);
				continue;
			}
		}
		ok++;
	}
	printf("idle: %ld open, %ld refused\n", ok, refused);
	hold(o);
	return 0;
}

/* How pubd ended one connection: its ERROR's code, 0 when it just closed,
 * -1 when it is still open at the deadline. */
static int ended_how(int fd, uint64_t deadline)
{
	struct pub_msg_error e;
	const uint8_t *body;
	uint32_t len;
	uint8_t type;
	struct rx r;
	int got, code = 0;

	if (rx_init(&r, 1 << 12) < 0)
		return -1;
	got = rx_frame(&r, fd, deadline, &type, &body, &len);
	if (got == 1 && type == PUB_FRAME_ERROR && pub_proto_dec_error(body, len, &e) == 0)
		code = (int)e.code;
	if (got == 1)
		got = rx_frame(&r, fd, deadline, &type, &body, &len); /* then EOF */
	free(r.buf);
	return got == 0 || got == -ECONNRESET ? code : -1;
}

static int mode_nohello(const struct opts *o)
{
	long n = o->n > 0 ? o->n : 100, i, timed_out = 0, busy = 0, open_ = 0;
	uint64_t t0 = now_ms(), deadline = t0 + (o->hold_ms > 0 ? (uint64_t)o->hold_ms : 10000), last = 0;
	int *fds = calloc((size_t)n, sizeof(int));
	uint8_t f[600];
	long hl = pub_proto_enc_hello(f, sizeof(f), 0, "nohello", 7);

	if (!fds || hl <= 0)
		return 2;
	for (i = 0; i < n; i++) {
		fds[i] = sock_connect(o->sock, false);
		if (fds[i] >= 0 && i % 2)
			send_until(fds[i], f, (size_t)hl / 2, now_ms() + 1000);
	}
	make_ready(o);
	for (i = 0; i < n; i++) {
		int how = fds[i] < 0 ? PUB_ERR_BUSY : ended_how(fds[i], deadline);

		if (how == PUB_ERR_HELLO_LATE) {
			timed_out++;
			last = now_ms() - t0;
		} else if (how == PUB_ERR_BUSY) {
			busy++;
		} else {
			open_++;
		}
	}
	printf("nohello: %ld connections (half of them sent half a HELLO): %ld ended by the HELLO deadline (the last "
	       "%llu ms after the first connect), %ld refused, %ld still open\n",
	       n, timed_out, (unsigned long long)last, busy, open_);
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	return 0;
}

static int mode_flood(const struct opts *o)
{
	long n = o->n > 0 ? o->n : 100000, i;

	for (i = 0; i < n; i++) {
		int fd = sock_connect(o->sock, true);

		if (fd < 0)
			break;
	}
	printf("flood: %ld connections queued before the backlog was full\n", i);
	hold(o);
	return 0;
}

/* Wait until a DELIVER has started to arrive on fd and stopped moving
 * (pubd has written part of it and waits for us to read); the bytes queued. */
static int wait_deliver_stalled(int fd)
{
	uint64_t deadline = now_ms() + 10000, stable = 0;
	int inq = 0, prev = -1;

	while (now_ms() < deadline) {
		struct pollfd pf = {.fd = -1};

		ioctl(fd, FIONREAD, &inq);
		if (inq > 0 && inq == prev) {
			if (!stable)
				stable = now_ms();
			else if (now_ms() - stable >= 200)
				break;
		} else {
			stable = 0;
		}
		prev = inq;
		poll(&pf, 0, 20); /* sampling the queue length */
	}
	return inq;
}

/* Queries one at a time, each waited for: how many of n were answered (a
 * client left paused by an abandoned frame's bookkeeping answers one more
 * at most). */
static int later_queries(struct rx *r, int fd, int n)
{
	uint8_t f[PUB_PROTO_MAX_HEAD + 64], type;
	const uint8_t *body;
	uint32_t len;
	int later;

	for (later = 0; later < n; later++) {
		bool answered = false;
		long k = pub_proto_enc_query(f, sizeof(f), 10 + (uint32_t)later, PUB_QUERY_STATUS, "", 0);
		uint64_t deadline = now_ms() + 5000;

		send_until(fd, f, (size_t)k, now_ms() + 2000);
		while (!answered && rx_frame(r, fd, deadline, &type, &body, &len) == 1)
			answered = type == PUB_FRAME_OK && len >= 4 && body[0] == 10 + later;
		if (!answered)
			break;
	}
	return later;
}

static int mode_unsub(const struct opts *o)
{
	const char *g = o->group ? o->group : "h";
	size_t size = o->size > 0 ? (size_t)o->size : 8u << 20;
	uint8_t f[PUB_PROTO_MAX_HEAD + 64], type;
	const uint8_t *body;
	uint32_t len;
	struct rx r;
	int sub, pub, err, got_ok = 0, got_table = 0, inq, later;
	long n;
	uint8_t *payload;
	uint64_t deadline;
	size_t read_bytes = 0;

	sub = sock_connect(o->sock, false);
	pub = sock_connect(o->sock, false);
	if (sub < 0 || pub < 0 || hello_welcome(sub, "unsub-sub") || hello_welcome(pub, "unsub-pub") ||
	    rx_init(&r, 32u << 20) < 0) {
		fprintf(stderr, "unsub: setup failed\n");
		return 2;
	}
	n = pub_proto_enc_group_req(f, sizeof(f), PUB_FRAME_SUBSCRIBE, 1, g, strlen(g));
	send_until(sub, f, (size_t)n, now_ms() + 2000);
	err = rx_frame(&r, sub, now_ms() + 5000, &type, &body, &len);
	if (err != 1 || type != PUB_FRAME_OK) {
		fprintf(stderr, "unsub: SUBSCRIBE not answered OK\n");
		return 2;
	}
	/* The publisher: one big message, answered OK when pubd took it. */
	payload = calloc(1, size);
	n = publish_head(f, sizeof(f), 7, g, size);
	if (!payload || send_until(pub, f, (size_t)n, now_ms() + 5000) ||
	    send_until(pub, payload, size, now_ms() + 20000)) {
		fprintf(stderr, "unsub: publishing failed\n");
		return 2;
	}
	inq = wait_deliver_stalled(sub);
	if (o->trigger) {
		/* The test ends the subscription (a reload) while we wait. */
		printf("unsub: %d bytes of the %zu-byte DELIVER written when the test is told\n", inq, size);
		make_ready(o);
		deadline = now_ms() + 20000;
		while (access(o->trigger, F_OK) != 0 && now_ms() < deadline) {
			struct pollfd pf = {.fd = -1};

			poll(&pf, 0, 20); /* polling for the trigger file */
		}
		got_ok = 1;
	} else {
		printf("unsub: %d bytes of the %zu-byte DELIVER written when UNSUBSCRIBE is sent\n", inq, size);
		n = pub_proto_enc_group_req(f, sizeof(f), PUB_FRAME_UNSUBSCRIBE, 2, g, strlen(g));
		send_until(sub, f, (size_t)n, now_ms() + 2000);
	}
	n = pub_proto_enc_query(f, sizeof(f), 3, PUB_QUERY_STATUS, "", 0);
	send_until(sub, f, (size_t)n, now_ms() + 2000);
	deadline = now_ms() + 10000;
	while (!(got_ok && got_table)) {
		err = rx_frame(&r, sub, deadline, &type, &body, &len);
		if (err != 1)
			break;
		read_bytes += PUB_PROTO_HDR_LEN + len;
		if (type == PUB_FRAME_OK && len >= 4 && body[0] == 2)
			got_ok = 1;
		if ((type == PUB_FRAME_OK || type == PUB_FRAME_TABLE) && len >= 4 && body[0] == 3)
			got_table = 1;
	}
	later = got_ok && got_table ? later_queries(&r, sub, 3) : 0;
	printf("unsub: read %zu bytes after; UNSUBSCRIBE answered %s, QUERY answered %s, %d of 3 later queries "
	       "answered\n",
	       read_bytes, got_ok ? "yes" : "no", got_table ? "yes" : "no", later);
	free(payload);
	free(r.buf);
	close(sub);
	close(pub);
	return got_ok && got_table && later == 3 ? 0 : 1;
}

/* Connect and close, as fast as it can, until --hold-ms passes (or stdin
 * ends): connections pubd must accept only to find them gone. */
static int mode_connflood(const struct opts *o)
{
	uint64_t end = now_ms() + (uint64_t)(o->hold_ms > 0 ? o->hold_ms : 5000);
	long made = 0, refused = 0;

	make_ready(o);
	while (now_ms() < end) {
		int fd = sock_connect(o->sock, true);

		if (fd < 0) {
			refused++;
			continue;
		}
		made++;
		close(fd);
	}
	printf("connflood: %ld connections made and closed, %ld refused at connect\n", made, refused);
	return 0;
}

static int mode_deaf(const struct opts *o)
{
	const char *g = o->group ? o->group : "h";
	uint8_t f[600], type;
	const uint8_t *body;
	uint32_t len;
	struct rx r;
	long n;
	int fd = sock_connect(o->sock, false);

	if (fd < 0 || rx_init(&r, 1 << 16) < 0 || hello_welcome(fd, "deaf") != 0)
		return 2;
	n = pub_proto_enc_group_req(f, sizeof(f), PUB_FRAME_SUBSCRIBE, 1, g, strlen(g));
	send_until(fd, f, (size_t)n, now_ms() + 2000);
	if (rx_frame(&r, fd, now_ms() + 5000, &type, &body, &len) != 1 || type != PUB_FRAME_OK) {
		fprintf(stderr, "deaf: SUBSCRIBE not answered OK\n");
		return 1;
	}
	printf("deaf: subscribed to %s, reading nothing more\n", g);
	hold(o);
	free(r.buf);
	return 0;
}

static int mode_pubclose(const struct opts *o)
{
	const char *g = o->group ? o->group : "h";
	long n = o->n > 0 ? o->n : 2000, i;
	size_t size = o->size > 0 ? (size_t)o->size : 4096, flen;
	uint8_t *frame;
	int fd = sock_connect(o->sock, false);
	long h;

	if (fd < 0 || hello_welcome(fd, "pubclose") != 0) {
		fprintf(stderr, "pubclose: no session\n");
		return 2;
	}
	frame = calloc(1, PUB_PROTO_MAX_HEAD + size);
	h = publish_head(frame, PUB_PROTO_MAX_HEAD, 0, g, size);
	if (!frame || h <= 0)
		return 2;
	flen = (size_t)h + size;
	for (i = 0; i < n; i++) {
		memcpy(frame + h, &i, sizeof(i));
		if (send_until(fd, frame, flen, now_ms() + 60000) < 0)
			break;
	}
	close(fd);
	free(frame);
	printf("pubclose: sent %ld messages, then closed\n", i);
	return i == n ? 0 : 1;
}

/* Frames from pubd until one of type want (1), or another answer (ERROR:
 * 0), or the end (-1). */
static int await_frame(struct rx *r, int fd, uint8_t want)
{
	const uint8_t *body;
	uint32_t len;
	uint8_t type;

	while (rx_frame(r, fd, now_ms() + 5000, &type, &body, &len) == 1)
		if (type == want || type == PUB_FRAME_ERROR)
			return type == want;
	return -1;
}

/* One endhold round: a connection on shared memory that subscribes to g,
 * publishes n messages of size bytes there (pubd writes them into the
 * group log it reads none of), then sends a frame of an invalid type.
 * Returns the connection, left open, or -1. */
static int end_holding(const char *sock, const char *g, unsigned n, size_t size)
{
	uint8_t f[600], *frame = calloc(1, PUB_PROTO_MAX_HEAD + size);
	int fd = sock_connect(sock, false);
	struct rx r = {0};
	long h = frame ? publish_head(frame, PUB_PROTO_MAX_HEAD, 0, g, size) : -1, len;
	unsigned i;

	if (fd < 0 || h <= 0 || rx_init(&r, 1 << 20) < 0 || send_hello_flags(fd, "endhold", 7, PUB_HELLO_F_SHM) < 0 ||
	    await_frame(&r, fd, PUB_FRAME_WELCOME) != 1)
		goto fail;
	len = pub_proto_enc_group_req(f, sizeof(f), PUB_FRAME_SUBSCRIBE, 1, g, strlen(g));
	if (send_until(fd, f, (size_t)len, now_ms() + 2000) < 0 || await_frame(&r, fd, PUB_FRAME_OK) != 1)
		goto fail;
	for (i = 0; i < n; i++)
		if (send_until(fd, frame, (size_t)h + size, now_ms() + 5000) < 0)
			goto fail;
	len = (long)pub_proto_put_hdr(f, PUB_FRAME_WELCOME, 0); /* not a client's frame */
	if (send_until(fd, f, (size_t)len, now_ms() + 2000) < 0)
		goto fail;
	free(r.buf);
	free(frame);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	free(r.buf);
	free(frame);
	return -1;
}

static int mode_endhold(const struct opts *o)
{
	long n = o->n > 0 ? o->n : 20, i;

	for (i = 0; i < n; i++)
		if (end_holding(o->sock, o->group ? o->group : "h", 20, o->size > 0 ? (size_t)o->size : 50000) < 0)
			break;
	printf("endhold: %ld connections ended by pubd with unread group logs, none hung up\n", i);
	hold(o);
	return i == n ? 0 : 1;
}

/* Descriptors attached to each frame (the kernel takes at most 253). */
#define FDPASS_NFDS 240

/* One frame, sent whole with fds attached to its first byte. */
static int send_with_fds(int fd, const uint8_t *f, size_t len, const int *fds, unsigned nfds)
{
	union {
		struct cmsghdr align;
		uint8_t buf[CMSG_SPACE(FDPASS_NFDS * sizeof(int))];
	} u;
	struct iovec iov = {.iov_base = (void *)f, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	memset(u.buf, 0, sizeof(u.buf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != 1)
		return -errno;
	return send_until(fd, f + 1, len - 1, now_ms() + 10000);
}

static int mode_fdpass(const struct opts *o)
{
	const char *g = o->group ? o->group : "h";
	long n = o->n > 0 ? o->n : 1000, i;
	int fd = sock_connect(o->sock, false), fds[FDPASS_NFDS], pipefd[2], memfd = memfd_create("fdpass", 0);
	uint8_t f[PUB_PROTO_MAX_HEAD + 64] = {0}, hello[600], type;
	const uint8_t *body;
	uint32_t len;
	struct rx r;
	long h;
	int err;

	if (fd < 0 || memfd < 0 || ftruncate(memfd, 1 << 20) < 0 || pipe(pipefd) < 0 || rx_init(&r, 1 << 16) < 0) {
		fprintf(stderr, "fdpass: setup: %s\n", strerror(errno));
		return 2;
	}
	for (unsigned k = 0; k < FDPASS_NFDS; k++)
		fds[k] = k % 3 == 0 ? memfd : pipefd[k % 3 - 1];
	h = pub_proto_enc_hello(hello, sizeof(hello), 0, "fdpass", 6);
	if (h <= 0 || send_with_fds(fd, hello, (size_t)h, fds, FDPASS_NFDS) < 0 ||
	    rx_frame(&r, fd, now_ms() + 5000, &type, &body, &len) != 1 || type != PUB_FRAME_WELCOME) {
		fprintf(stderr, "fdpass: no session\n");
		return 2;
	}
	for (i = 0; i < n; i++) {
		h = publish_head(f, PUB_PROTO_MAX_HEAD, i == n - 1 ? 1 : 0, g, 64);
		memcpy(f + h, &i, sizeof(i));
		err = h > 0 ? send_with_fds(fd, f, (size_t)h + 64, fds, FDPASS_NFDS) : -EINVAL;
		if (err < 0) {
			fprintf(stderr, "fdpass: frame %ld: %s\n", i, strerror(-err));
			return 1;
		}
	}
	do
		err = rx_frame(&r, fd, now_ms() + 10000, &type, &body, &len);
	while (err == 1 && type != PUB_FRAME_OK && type != PUB_FRAME_ERROR);
	printf("fdpass: %ld frames with %d descriptors each (%ld in all); the last one's answer: %s\n", n + 1,
	       FDPASS_NFDS, (n + 1) * FDPASS_NFDS, err == 1 ? (type == PUB_FRAME_OK ? "OK" : "ERROR") : "none");
	close(fd);
	free(r.buf);
	return err == 1 && type == PUB_FRAME_OK ? 0 : 1;
}

static int mode_name(const struct opts *o)
{
	const char *name = o->name ? o->name : "x\n<2>forged";
	const char *g = o->group ? o->group : name;
	uint8_t f[600], type;
	const uint8_t *body;
	uint32_t len;
	struct rx r;
	long n;
	int fd = sock_connect(o->sock, false), err;

	if (fd < 0 || rx_init(&r, 1 << 20) < 0 || hello_welcome(fd, name) != 0) {
		fprintf(stderr, "name: no session\n");
		return 2;
	}
	n = pub_proto_enc_group_req(f, sizeof(f), PUB_FRAME_SUBSCRIBE, 1, g, strlen(g));
	send_until(fd, f, (size_t)n, now_ms() + 2000);
	if (o->ready) {
		while ((err = rx_frame(&r, fd, now_ms() + 5000, &type, &body, &len)) == 1 && type != PUB_FRAME_OK &&
		       type != PUB_FRAME_ERROR)
			;
		if (err != 1 || type != PUB_FRAME_OK) {
			fprintf(stderr, "name: SUBSCRIBE not answered OK\n");
			return 2;
		}
		hold(o);
		return 0;
	}
	n = (long)pub_proto_put_hdr(f, PUB_FRAME_WELCOME, 0); /* not a client's frame */
	send_until(fd, f, (size_t)n, now_ms() + 2000);
	while ((err = rx_frame(&r, fd, now_ms() + 5000, &type, &body, &len)) == 1)
		;
	printf("name: session ended (%s)\n", err == 0 ? "closed by pubd" : strerror(-err));
	return 0;
}

static int mode_subscribes(const struct opts *o)
{
	long n = o->n > 0 ? o->n : 10000, i;
	char g[256];
	uint8_t f[600];
	int fd = sock_connect(o->sock, false);
	size_t sent = 0;

	if (fd < 0 || hello_welcome(fd, "subscribes") != 0)
		return 2;
	for (i = 0; i < n; i++) {
		long len;

		snprintf(g, sizeof(g), "%0255ld", i);
		if (o->group)
			snprintf(g, sizeof(g), "%s", o->group);
		len = pub_proto_enc_group_req(f, sizeof(f), PUB_FRAME_SUBSCRIBE, (uint32_t)i + 1, g, strlen(g));
		if (send_until(fd, f, (size_t)len, now_ms() + 3000) < 0)
			break;
		sent += (size_t)len;
	}
	printf("subscribes: %ld SUBSCRIBEs (%zu bytes) written, none of the replies read\n", i, sent);
	hold(o);
	return 0;
}

static int mode_queries(const struct opts *o)
{
	long n = o->n > 0 ? o->n : 1000, i;
	uint8_t f[64];
	int fd = sock_connect(o->sock, false);

	if (fd < 0 || hello_welcome(fd, "queries") != 0)
		return 2;
	for (i = 0; i < n; i++) {
		long len =
			pub_proto_enc_query(f, sizeof(f), (uint32_t)i + 1, (uint8_t)(o->kind > 0 ? o->kind : 6), "", 0);

		if (send_until(fd, f, (size_t)len, now_ms() + 3000) < 0)
			break;
	}
	printf("queries: %ld QUERYs written, none of the replies read\n", i);
	hold(o);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(const struct opts *o);
} modes[] = {
	{"bigpub", mode_bigpub},   {"idle", mode_idle},
	{"flood", mode_flood},	   {"nohello", mode_nohello},
	{"unsub", mode_unsub},	   {"pubclose", mode_pubclose},
	{"deaf", mode_deaf},	   {"connflood", mode_connflood},
	{"name", mode_name},	   {"subscribes", mode_subscribes},
	{"queries", mode_queries}, {"fdpass", mode_fdpass},
	{"endhold", mode_endhold},
};

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"sock", required_argument, NULL, 's'},	   {"group", required_argument, NULL, 'g'},
		{"n", required_argument, NULL, 'n'},	   {"declare", required_argument, NULL, 'D'},
		{"size", required_argument, NULL, 'S'},	   {"kind", required_argument, NULL, 'K'},
		{"name", required_argument, NULL, 'N'},	   {"ready", required_argument, NULL, 'R'},
		{"hold-ms", required_argument, NULL, 'H'}, {"hello", no_argument, NULL, 'E'},
		{"trigger", required_argument, NULL, 'T'}, {NULL, 0, NULL, 0},
	};
	struct opts o = {0};
	const char *mode;
	int c;

	if (argc < 2) {
		fprintf(stderr, "usage: hostile_client MODE -s SOCK [options] (see the source)\n");
		return 2;
	}
	mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "s:g:n:", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			o.sock = optarg;
			break;
		case 'g':
			o.group = optarg;
			break;
		case 'n':
			o.n = atol(optarg);
			break;
		case 'D':
			o.declare = atol(optarg);
			break;
		case 'S':
			o.size = atol(optarg);
			break;
		case 'K':
			o.kind = atol(optarg);
			break;
		case 'N':
			o.name = optarg;
			break;
		case 'R':
			o.ready = optarg;
			break;
		case 'H':
			o.hold_ms = atol(optarg);
			break;
		case 'E':
			o.hello = true;
			break;
		case 'T':
			o.trigger = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!o.sock) {
		fprintf(stderr, "hostile_client: -s SOCK\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(mode, modes[i].name))
			return modes[i].run(&o);
	fprintf(stderr, "hostile_client: unknown mode %s\n", mode);
	return 2;
}
