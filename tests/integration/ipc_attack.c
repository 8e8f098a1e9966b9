// SPDX-License-Identifier: MIT
/*
 * Hostile local clients for ipc_hardening.sh, speaking the raw protocol
 * (libpub would not misbehave on purpose). Each mode prints one figure line
 * and exits 0 when pubd behaved, 1 when it did not, 2 on a usage or setup
 * error. Every wait has a deadline (-t, milliseconds).
 *
 *   nohello-big N    N connections each send a 3 MiB PUBLISH header and
 *                    group, no HELLO: each must get an ERROR and EOF
 *   idle N           N connections that say nothing, held until stdin closes
 *   unsub-mid        subscribe, get a 1 MiB DELIVER half written, UNSUBSCRIBE,
 *                    read it all: a later SUBSCRIBE must still be answered
 *   group-removed  the same, the group removed by a reload meanwhile
 *   paused-close N   fill the reply queue (unread QUERYs) until pubd pauses
 *                    us, then write N fire-and-forget PUBLISHes and close;
 *                    prints how many whole frames went into the socket
 *   revoked sub|pub  subscribe (or publish once), create the -r file, then
 *                    wait for an unsolicited ERROR with code ACL
 *   too-big SIZE     HELLO, PUBLISH SIZE bytes: must be refused with an
 *                    ERROR, and a small PUBLISH after it answered OK
 *   budget-wait SIZE two PUBLISHes of SIZE, together over the budget: the
 *                    second waits unread until the first completes
 *   hello N          N connections say HELLO: prints welcomed and refused
 *   flood N          N connections (non-blocking connect), held until stdin
 *                    closes; prints how many connected
 *   silent N MIN_MS  N connections that never complete HELLO (every other
 *                    one sends half of a HELLO frame): each must get an
 *                    ERROR and EOF, none before MIN_MS after its connect
 *   hello-idle MS    HELLO, then idle MS ms: pubd must send nothing and keep
 *                    the connection; then a QUERY must be answered
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

static const char *sock_path;
static const char *group = "g1";
static const char *ready_file;
static int timeout_ms = 10000;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int conn(bool nonblock)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read exactly len bytes before the deadline; -1 on EOF, error or timeout. */
static int recv_all(int fd, void *p, size_t len, uint64_t deadline)
{
	uint8_t *b = p;

	while (len) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		uint64_t t = now_ms();
		ssize_t n;

		if (t >= deadline || poll(&pf, 1, (int)(deadline - t)) <= 0)
			return -1;
		n = read(fd, b, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One frame: its type, and its body in a buffer the caller frees. */
static int recv_frame(int fd, uint8_t *type, uint8_t **body, uint32_t *len, uint64_t deadline)
{
	uint8_t hdr[PUB_PROTO_HDR_LEN];
	const uint8_t *bp;
	size_t need;

	if (recv_all(fd, hdr, sizeof(hdr), deadline) < 0)
		return -1;
	if (pub_proto_frame_peek(hdr, sizeof(hdr), 1u << 30, type, len, &bp, &need) < 0)
		return -1;
	*body = malloc(*len ? *len : 1);
	if (!*body || recv_all(fd, *body, *len, deadline) < 0) {
		free(*body);
		return -1;
	}
	return 0;
}

/* Frames until one of type want (its body returned), or -1. */
static int expect(int fd, uint8_t want, uint8_t **body, uint32_t *len, uint64_t deadline)
{
	uint8_t type;

	for (;;) {
		if (recv_frame(fd, &type, body, len, deadline) < 0)
			return -1;
		if (type == want)
			return 0;
		free(*body);
	}
}

static int hello(int fd)
{
	uint8_t buf[300], *body;
	uint32_t len;
	long n = pub_proto_enc_hello(buf, sizeof(buf), 0, "ipc_attack", 10);

	if (send_all(fd, buf, (size_t)n) < 0 || expect(fd, PUB_FRAME_WELCOME, &body, &len, now_ms() + timeout_ms) < 0)
		return -1;
	free(body);
	return 0;
}

static int request(int fd, uint8_t type, uint32_t req_id)
{
	uint8_t buf[300], *body;
	uint32_t len;
	long n = pub_proto_enc_group_req(buf, sizeof(buf), type, req_id, group, strlen(group));

	if (send_all(fd, buf, (size_t)n) < 0 || expect(fd, PUB_FRAME_OK, &body, &len, now_ms() + timeout_ms) < 0)
		return -1;
	free(body);
	return 0;
}

/* A QUERY answered (its TABLEs skipped, then OK) before the deadline. */
static int query(int fd, uint32_t req_id)
{
	uint8_t q[64], *body;
	uint32_t len;
	long ql = pub_proto_enc_query(q, sizeof(q), req_id, PUB_QUERY_STATUS, "", 0);

	if (send_all(fd, q, (size_t)ql) < 0 || expect(fd, PUB_FRAME_OK, &body, &len, now_ms() + timeout_ms) < 0)
		return -1;
	free(body);
	return 0;
}

static int publish(int fd, uint32_t req_id, size_t size)
{
	uint8_t head[300];
	long n = pub_proto_enc_publish_head(head, sizeof(head), req_id, group, strlen(group), size);
	uint8_t *payload = calloc(1, size ? size : 1);
	int r;

	r = send_all(fd, head, (size_t)n) < 0 || send_all(fd, payload, size) < 0 ? -1 : 0;
	free(payload);
	return r;
}

static void touch_ready(void)
{
	FILE *f = ready_file ? fopen(ready_file, "w") : NULL;

	if (f)
		fclose(f);
}

static void wait_stdin(void)
{
	char c;

	while (read(0, &c, 1) > 0)
		;
}

static int nohello_big(int n)
{
	int *fds = calloc((size_t)n, sizeof(int)), i, ended = 0;
	uint8_t head[300];
	/* Under limits.max_message_size (4 MiB in the test): a header that
	 * says more is refused on its face already. */
	long hl = pub_proto_enc_publish_head(head, sizeof(head), 1, group, strlen(group), 3u << 20);

	for (i = 0; i < n; i++) {
		fds[i] = conn(false);
		if (fds[i] < 0 || send_all(fds[i], head, (size_t)hl) < 0)
			return 2;
	}
	uint64_t deadline = now_ms() + timeout_ms; /* one for all */

	for (i = 0; i < n; i++) {
		uint8_t *body;
		uint32_t len;
		char c;

		/* An ERROR, then the end of the connection. */
		if (expect(fds[i], PUB_FRAME_ERROR, &body, &len, deadline) == 0) {
			free(body);
			if (recv_all(fds[i], &c, 1, deadline) < 0)
				ended++;
		}
	}
	printf("nohello-big: %d of %d connections refused and closed\n", ended, n);
	fflush(stdout);
	/* Held open for the script to measure pubd, until stdin closes. */
	touch_ready();
	wait_stdin();
	free(fds);
	return ended == n ? 0 : 1;
}

static int hold(int n, bool nonblock, const char *what)
{
	int i, ok = 0;

	for (i = 0; i < n; i++)
		if (conn(nonblock) >= 0)
			ok++;
	printf("%s: %d of %d connected\n", what, ok, n);
	fflush(stdout);
	touch_ready();
	wait_stdin();
	return 0;
}

static int unsub_mid(void)
{
	int sub = conn(false), pub = conn(false);
	uint64_t deadline = now_ms() + timeout_ms;
	uint8_t *body;
	uint32_t len;
	struct pollfd pf;

	if (sub < 0 || pub < 0 || hello(sub) < 0 || hello(pub) < 0 || request(sub, PUB_FRAME_SUBSCRIBE, 1) < 0)
		return 2;
	if (publish(pub, 0, 1u << 20) < 0)
		return 2;
	/* pubd has started the DELIVER (the socket has bytes) and cannot have
	 * finished it: 1 MiB is more than a Unix socket buffer holds. */
	pf = (struct pollfd){.fd = sub, .events = POLLIN};
	if (poll(&pf, 1, timeout_ms) != 1)
		return 2;
	if (request(sub, PUB_FRAME_UNSUBSCRIBE, 2) < 0) {
		printf("unsub-mid: UNSUBSCRIBE not answered\n");
		return 1;
	}
	/* Three more: a client wrongly paused still has the first answered. */
	if (request(sub, PUB_FRAME_SUBSCRIBE, 3) < 0 || query(sub, 4) < 0 || query(sub, 5) < 0) {
		printf("unsub-mid: requests after the UNSUBSCRIBE not answered within %d ms\n", timeout_ms);
		return 1;
	}
	(void)deadline;
	(void)body;
	(void)len;
	printf("unsub-mid: later requests answered\n");
	return 0;
}

/* Subscribe, get a 1 MiB DELIVER half written, create the ready file,
 * wait for a line on stdin (the script removed the group meanwhile), then
 * read: the ERROR saying so, and a QUERY after it must be answered. */
static int group_removed(void)
{
	int sub = conn(false), pub = conn(false);
	uint8_t *body;
	uint32_t len;
	struct pollfd pf;
	char c;
	struct pub_msg_error e;

	if (sub < 0 || pub < 0 || hello(sub) < 0 || hello(pub) < 0 || request(sub, PUB_FRAME_SUBSCRIBE, 1) < 0)
		return 2;
	if (publish(pub, 0, 1u << 20) < 0)
		return 2;
	pf = (struct pollfd){.fd = sub, .events = POLLIN};
	if (poll(&pf, 1, timeout_ms) != 1)
		return 2;
	touch_ready();
	while (read(0, &c, 1) == 1 && c != '\n')
		;
	for (;;) {
		if (expect(sub, PUB_FRAME_ERROR, &body, &len, now_ms() + timeout_ms) < 0) {
			printf("group-removed: no ERROR for the removed group\n");
			return 1;
		}
		if (pub_proto_dec_error(body, len, &e) == 0 && e.code == PUB_ERR_NO_GROUP)
			break;
		free(body);
	}
	free(body);
	/* Three: a client wrongly paused still has the first answered. */
	if (query(sub, 9) < 0 || query(sub, 10) < 0 || query(sub, 11) < 0) {
		printf("group-removed: QUERYs after the group went not answered within %d ms\n", timeout_ms);
		return 1;
	}
	printf("group-removed: later requests answered\n");
	return 0;
}

static int paused_close(int n)
{
	int fd = conn(false), i, flags, sent = 0;
	uint8_t q[64], p[300], *buf, *w;
	long ql = pub_proto_enc_query(q, sizeof(q), 7, PUB_QUERY_STATUS, "", 0);
	long pl = pub_proto_enc_publish_head(p, sizeof(p), 0, group, strlen(group), 8);
	size_t pair, written = 0;

	if (fd < 0 || hello(fd) < 0)
		return 2;
	memset(p + pl, 'x', 8);
	pair = (size_t)ql + (size_t)pl + 8;
	buf = malloc(pair * (size_t)n);
	for (w = buf, i = 0; i < n; i++) {
		memcpy(w, q, (size_t)ql);
		memcpy(w + ql, p, (size_t)pl + 8);
		w += pair;
	}
	flags = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	/* QUERY, PUBLISH, QUERY, ...: replies we never read make pubd stop
	 * reading us at its reply cap; then our socket fills. */
	while (written < pair * (size_t)n) {
		ssize_t r = write(fd, buf + written, pair * (size_t)n - written);

		if (r > 0) {
			written += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EAGAIN) {
			struct pollfd pf = {.fd = fd, .events = POLLOUT};

			/* Wait a moment for pubd to read more; when it has
			 * stopped reading us, the socket stays full. */
			if (poll(&pf, 1, 500) == 1)
				continue;
		}
		break;
	}
	/* A PUBLISH wholly in the socket is acknowledged; a torn one is not. */
	sent = (int)(written / pair); /* pair k ends with its PUBLISH */
	close(fd);
	free(buf);
	printf("paused-close: %zu bytes, %d whole publishes in the socket at close\n", written, sent);
	printf("%d\n", sent);
	return 0;
}

static int revoked(const char *what)
{
	int fd = conn(false);
	uint8_t *body;
	uint32_t len;
	struct pub_msg_error e;

	if (fd < 0 || hello(fd) < 0)
		return 2;
	if (!strcmp(what, "sub")) {
		if (request(fd, PUB_FRAME_SUBSCRIBE, 1) < 0)
			return 2;
	} else if (publish(fd, 1, 8) < 0 || expect(fd, PUB_FRAME_OK, &body, &len, now_ms() + timeout_ms) < 0) {
		return 2;
	} else {
		free(body);
	}
	touch_ready();
	if (expect(fd, PUB_FRAME_ERROR, &body, &len, now_ms() + timeout_ms) < 0) {
		printf("revoked %s: no ERROR within %d ms\n", what, timeout_ms);
		return 1;
	}
	if (pub_proto_dec_error(body, len, &e) < 0 || e.req_id != 0 || e.code != PUB_ERR_ACL) {
		printf("revoked %s: unexpected ERROR\n", what);
		free(body);
		return 1;
	}
	printf("revoked %s: %.*s\n", what, (int)e.text.len, e.text.ptr);
	free(body);
	return 0;
}

static int too_big(size_t size)
{
	int fd = conn(false);
	uint8_t *body;
	uint32_t len;
	struct pub_msg_error e;

	if (fd < 0 || hello(fd) < 0)
		return 2;
	if (publish(fd, 1, size) < 0) {
		printf("too-big: connection ended while sending\n");
		return 1;
	}
	if (expect(fd, PUB_FRAME_ERROR, &body, &len, now_ms() + timeout_ms) < 0 ||
	    pub_proto_dec_error(body, len, &e) < 0) {
		printf("too-big: no ERROR for a %zu-byte message\n", size);
		return 1;
	}
	printf("too-big: %.*s\n", (int)e.text.len, e.text.ptr);
	free(body);
	if (publish(fd, 2, 8) < 0 || expect(fd, PUB_FRAME_OK, &body, &len, now_ms() + timeout_ms) < 0) {
		printf("too-big: the next PUBLISH was not answered\n");
		return 1;
	}
	free(body);
	return 0;
}

/* Bytes we sent that the peer has not read yet. */
static int unread(int fd)
{
	int n = -1;

	return ioctl(fd, SIOCOUTQ, &n) < 0 ? -1 : n;
}

/* A holds SIZE of the budget (half its body read), B's PUBLISH of SIZE
 * must wait unread until A's completes, then both are answered. */
static int budget_wait(size_t size)
{
	int a = conn(false), b = conn(false), left;
	uint8_t head[300], *pay = calloc(1, size), *body;
	long hl = pub_proto_enc_publish_head(head, sizeof(head), 1, group, strlen(group), size);
	uint64_t deadline;
	size_t off = 0;
	uint32_t len;

	if (a < 0 || b < 0 || hello(a) < 0 || hello(b) < 0)
		return 2;
	if (send_all(a, head, (size_t)hl) < 0 || send_all(a, pay, size / 2) < 0)
		return 2;
	/* pubd has read all of it: A's body is being read, its size held. */
	for (deadline = now_ms() + timeout_ms; unread(a) > 0 && now_ms() < deadline;)
		poll(NULL, 0, 10); /* polling a condition, with a deadline */
	fcntl(b, F_SETFL, fcntl(b, F_GETFL) | O_NONBLOCK);
	head[PUB_PROTO_HDR_LEN] = 2; /* req_id 2 */
	if (send_all(b, head, (size_t)hl) < 0)
		return 2;
	while (off < size) {
		ssize_t w = write(b, pay + off, size - off);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	/* Give pubd a window to (wrongly) read B: it must leave it unread. */
	for (deadline = now_ms() + 1000; now_ms() < deadline;)
		poll(NULL, 0, 50);
	left = unread(b);
	printf("budget-wait: %d bytes of B's PUBLISH left unread while A held the budget\n", left);
	if (left < (int)hl) {
		printf("budget-wait: pubd read B's PUBLISH beyond the budget\n");
		return 1;
	}
	if (send_all(a, pay + size / 2, size - size / 2) < 0 ||
	    expect(a, PUB_FRAME_OK, &body, &len, now_ms() + timeout_ms) < 0) {
		printf("budget-wait: A was not answered\n");
		return 1;
	}
	free(body);
	fcntl(b, F_SETFL, fcntl(b, F_GETFL) & ~O_NONBLOCK);
	if (send_all(b, pay + off, size - off) < 0 || expect(b, PUB_FRAME_OK, &body, &len, now_ms() + timeout_ms) < 0) {
		printf("budget-wait: B was not answered once A's memory freed\n");
		return 1;
	}
	free(body);
	free(pay);
	printf("budget-wait: both answered\n");
	return 0;
}

static int hellos(int n)
{
	int i, welcomed = 0, refused = 0;

	for (i = 0; i < n; i++) {
		int fd = conn(false);
		uint8_t buf[300], type, *body;
		uint32_t len;
		long l = pub_proto_enc_hello(buf, sizeof(buf), 0, "h", 1);

		if (fd < 0 || send_all(fd, buf, (size_t)l) < 0 ||
		    recv_frame(fd, &type, &body, &len, now_ms() + timeout_ms) < 0) {
			refused++;
			continue;
		}
		free(body);
		if (type == PUB_FRAME_WELCOME)
			welcomed++;
		else
			refused++;
		/* kept open: the next ones count against the limit */
	}
	printf("hello: %d welcomed, %d refused\n", welcomed, refused);
	printf("%d %d\n", welcomed, refused);
	return 0;
}

/* limits.hello_timeout_ms: closed with an ERROR, not before min_ms. */
static int silent(int n, int min_ms)
{
	int *fds = calloc((size_t)n, sizeof(int)), i, closed = 0, early = 0;
	uint64_t *t0 = calloc((size_t)n, sizeof(uint64_t)), lo = UINT64_MAX, hi = 0;
	uint8_t hello_f[300];
	long hl = pub_proto_enc_hello(hello_f, sizeof(hello_f), 0, "silent", 6);

	if (!fds || !t0)
		return 2;
	for (i = 0; i < n; i++) {
		t0[i] = now_ms(); /* before: pubd may accept before connect returns */
		fds[i] = conn(false);
		if (fds[i] < 0 || (i % 2 && send_all(fds[i], hello_f, (size_t)hl / 2) < 0))
			return 2;
	}
	touch_ready();
	uint64_t deadline = now_ms() + timeout_ms; /* one for all */

	for (i = 0; i < n; i++) {
		uint8_t *body;
		uint32_t len;
		uint64_t took;
		char c;

		if (expect(fds[i], PUB_FRAME_ERROR, &body, &len, deadline) < 0)
			continue;
		free(body);
		if (recv_all(fds[i], &c, 1, deadline) == 0)
			continue; /* not closed */
		took = now_ms() - t0[i];
		lo = took < lo ? took : lo;
		hi = took > hi ? took : hi;
		early += took < (uint64_t)min_ms;
		closed++;
	}
	printf("silent: %d of %d closed with an ERROR (half of them sent half a HELLO), %llu..%llu ms after "
	       "connecting, %d before %d ms\n",
	       closed, n, (unsigned long long)(closed ? lo : 0), (unsigned long long)hi, early, min_ms);
	free(fds);
	free(t0);
	return closed == n && !early ? 0 : 1;
}

/* A client that said HELLO is never timed out, however long it idles. */
static int hello_idle(int ms)
{
	int fd = conn(false);
	struct pollfd pf;

	if (fd < 0 || hello(fd) < 0)
		return 2;
	touch_ready();
	pf = (struct pollfd){.fd = fd, .events = POLLIN};
	/* Waiting for what must not come: anything readable (an ERROR, EOF). */
	if (poll(&pf, 1, ms) != 0) {
		printf("hello-idle: pubd sent something or closed within %d ms\n", ms);
		return 1;
	}
	if (query(fd, 5) < 0) {
		printf("hello-idle: no answer to a QUERY after %d ms idle\n", ms);
		return 1;
	}
	printf("hello-idle: idle %d ms after HELLO, then answered\n", ms);
	return 0;
}

int main(int argc, char **argv)
{
	struct rlimit rl = {65536, 65536};
	int opt;

	setrlimit(RLIMIT_NOFILE, &rl);
	signal(SIGPIPE, SIG_IGN); /* a refused connection is an answer, not a crash */
	while ((opt = getopt(argc, argv, "s:g:r:t:")) != -1) {
		switch (opt) {
		case 's':
			sock_path = optarg;
			break;
		case 'g':
			group = optarg;
			break;
		case 'r':
			ready_file = optarg;
			break;
		case 't':
			timeout_ms = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (!sock_path || optind >= argc)
		goto usage;
	const char *mode = argv[optind], *arg = optind + 1 < argc ? argv[optind + 1] : "1";

	if (!strcmp(mode, "nohello-big"))
		return nohello_big(atoi(arg));
	if (!strcmp(mode, "idle"))
		return hold(atoi(arg), false, "idle");
	if (!strcmp(mode, "flood"))
		return hold(atoi(arg), true, "flood");
	if (!strcmp(mode, "unsub-mid"))
		return unsub_mid();
	if (!strcmp(mode, "group-removed"))
		return group_removed();
	if (!strcmp(mode, "paused-close"))
		return paused_close(atoi(arg));
	if (!strcmp(mode, "revoked"))
		return revoked(arg);
	if (!strcmp(mode, "too-big"))
		return too_big((size_t)atoll(arg));
	if (!strcmp(mode, "budget-wait"))
		return budget_wait((size_t)atoll(arg));
	if (!strcmp(mode, "hello"))
		return hellos(atoi(arg));
	if (!strcmp(mode, "silent"))
		return silent(atoi(arg), optind + 2 < argc ? atoi(argv[optind + 2]) : 0);
	if (!strcmp(mode, "hello-idle"))
		return hello_idle(atoi(arg));
usage:
	fprintf(stderr, "usage: ipc_attack -s SOCK [-g GROUP] [-r READY] [-t MS] MODE [ARG] (see the source)\n");
	return 2;
}
