// SPDX-License-Identifier: MIT
/*
 * libpub's connection to pubd: handshake, requests, publish, receive,
 * reconnect.
 *
 * The socket is non-blocking; blocking calls wait in poll(). Frames are
 * read into one receive buffer and handed to the caller in place: a
 * message returned by pub_recv() points into it, so the buffer is not
 * moved while the caller holds a message (see rx_room). Frames that arrive
 * while a call waits for a reply are dispatched in order: replies end the
 * wait, errors pubd reports without a request are kept for the next call,
 * and messages are copied to a queue that pub_recv() empties first.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "internal.h"

#define RBUF_MIN (256 * 1024)
/* Replies (tables) can exceed max_message; below this nothing is refused. */
#define MAX_BODY_MIN		 (16u * 1024 * 1024)
#define DEFAULT_REQUEST_MS	 10000
#define DEFAULT_RECONNECT_MIN_MS 10
#define DEFAULT_RECONNECT_MAX_MS 1000
/* A publisher that never receives still reads what pubd reported, every so many publishes. */
#define DRAIN_EVERY 16
/* PUB_MORE holds messages of up to MORE_COPY_MAX bytes (larger ones are
 * worth their own system call, and copying them would cost more than it
 * saves) and writes them once MORE_FLUSH_AT bytes wait. */
#define MORE_COPY_MAX (8 * 1024)
#define MORE_FLUSH_AT (64 * 1024)

#define NEVER UINT64_MAX

static __thread char connect_errmsg[1024];

/* ---- time ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t deadline_in(int ms)
{
	if (ms < 0)
		return NEVER;
	return now_ns() + (uint64_t)ms * 1000000ull;
}

/* poll() timeout until a deadline: -1 for never, rounded up so we do not spin. */
static int ms_until(uint64_t deadline)
{
	uint64_t now, left;

	if (deadline == NEVER)
		return -1;
	now = now_ns();
	if (now >= deadline)
		return 0;
	left = (deadline - now + 999999) / 1000000;
	return left > 1000000000 ? 1000000000 : (int)left;
}

/* ---- errors ---- */

static int set_err(struct pub_client *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Record the handle's last error with its context; returns err so callers can `return set_err(...)`. */
static int set_err(struct pub_client *c, int err, const char *fmt, ...)
{
	char msg[sizeof(c->errmsg)];
	va_list ap;

	/* Through a copy: callers add context to the previous message (c->errmsg as an argument). */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(c->errmsg, msg, sizeof(msg));
	return err;
}

/* An error pubd reported without a request: keep the first until a call returns it. */
static void set_pending(struct pub_client *c, int err, const char *msg)
{
	if (c->pending_err)
		return;
	c->pending_err = err;
	snprintf(c->pending_msg, sizeof(c->pending_msg), "%s", msg);
}

static int take_pending(struct pub_client *c)
{
	int err = c->pending_err;

	if (!err)
		return 0;
	c->pending_err = 0;
	snprintf(c->errmsg, sizeof(c->errmsg), "%s", c->pending_msg);
	return err;
}

static int check_group(struct pub_client *c, const char *op, const char *group, size_t *len)
{
	if (!group)
		return set_err(c, -EINVAL, "%s: no group name", op);
	*len = strlen(group);
	if (*len == 0 || *len > PUB_GROUP_MAX)
		return set_err(c, -EINVAL, "%s: a group name has 1 to %d bytes", op, PUB_GROUP_MAX);
	return 0;
}

/* ---- pub_fd() readiness ---- */

/*
 * pub_fd() is an epoll instance holding the socket (level-triggered), the
 * reconnect timer and an eventfd that stands for work already buffered in
 * the handle (a complete frame in rbuf, a queued message, a kept error),
 * which the socket alone would not show.
 */
static bool frame_buffered(struct pub_client *c)
{
	uint8_t type;
	uint32_t len;
	const uint8_t *body;

	return c->rbuf && c->rlen > c->rpos &&
	       pub_proto_frame_peek(c->rbuf + c->rpos, c->rlen - c->rpos, c->max_body, &type, &len, &body, NULL) != 0;
}

static void readiness_update(struct pub_client *c)
{
	bool kick = c->qhead || c->pending_err || (c->up && frame_buffered(c)) ||
		    (!c->up && (c->flags & PUB_OPT_NO_RECONNECT));
	bool out = c->up && c->wpos < c->wlen;
	uint64_t v = 1;

	if (kick != c->kicked) {
		ssize_t n = kick ? write(c->kickfd, &v, sizeof(v)) : read(c->kickfd, &v, sizeof(v));

		(void)n; /* an eventfd counter neither overflows here nor blocks (EFD_NONBLOCK) */
		c->kicked = kick;
	}
	if (c->sock >= 0 && out != c->want_out) {
		struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.fd = c->sock};

		if (epoll_ctl(c->epfd, EPOLL_CTL_MOD, c->sock, &ev) == 0)
			c->want_out = out;
	}
}

static void timer_arm(struct pub_client *c, uint64_t at_ns)
{
	struct itimerspec its = {0};

	if (at_ns) {
		/* 0 would disarm: an attempt due now is due in 1 ns. */
		its.it_value.tv_sec = (time_t)(at_ns / 1000000000ull);
		its.it_value.tv_nsec = (long)(at_ns % 1000000000ull);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(c->timerfd, at_ns ? TFD_TIMER_ABSTIME : 0, &its, NULL);
	if (!at_ns) {
		uint64_t expirations;
		ssize_t n = read(c->timerfd, &expirations, sizeof(expirations));

		(void)n; /* clear a past expiry; EAGAIN when there was none */
	}
}

/* ---- the connection ---- */

/* Forget a buffer the caller may still point into: keep it alive until its next pub_recv. */
static void rx_detach(struct pub_client *c)
{
	free(c->held_buf);
	c->held_buf = c->rbuf;
	c->rbuf = NULL;
	c->rpos = c->rlen = c->rcap = 0;
	c->holding = false;
}

static void conn_close(struct pub_client *c)
{
	if (c->sock >= 0) {
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->sock, NULL);
		close(c->sock);
		c->sock = -1;
	}
	c->want_out = false;
	c->up = false;
	/* What was half read or half written belongs to the old connection. */
	if (c->holding)
		rx_detach(c);
	c->rpos = c->rlen = 0;
	c->wpos = c->wlen = 0;
	/* pub_publish() said yes to these: say now that they are gone. */
	if (c->more_held && !c->pending_err) {
		char msg[128];

		snprintf(msg, sizeof(msg), "connection to pubd lost: %u message%s held by PUB_MORE not sent",
			 c->more_held, c->more_held == 1 ? "" : "s");
		set_pending(c, -ENOTCONN, msg);
	}
	c->more_held = 0;
}

/* The connection dropped: close it and make a reconnect attempt due now. */
static void conn_lost(struct pub_client *c)
{
	conn_close(c);
	c->backoff_ms = c->reconnect_min_ms;
	c->next_attempt_ns = now_ns();
	if (!(c->flags & PUB_OPT_NO_RECONNECT))
		timer_arm(c, c->next_attempt_ns);
}

static bool is_disconnect(int err)
{
	return err == -ECONNRESET || err == -EPIPE || err == -ENOTCONN || err == -ECONNABORTED;
}

/* Make room to read: the frame at rpos must fit, and there must be free tail. */
static int rx_room(struct pub_client *c, size_t need)
{
	size_t have = c->rlen - c->rpos, cap;
	uint8_t *p;

	if (need < have + 1)
		need = have + 1;
	if (c->rcap - c->rpos >= need && c->rlen < c->rcap)
		return 0;
	cap = need > RBUF_MIN ? need : RBUF_MIN;
	if (c->holding) {
		/* The caller's message lies before rpos: move to a new buffer, keep the old one. */
		if (cap < c->rcap)
			cap = c->rcap;
		p = malloc(cap);
		if (!p)
			return -ENOMEM;
		memcpy(p, c->rbuf + c->rpos, have);
		rx_detach(c);
		c->rbuf = p;
		c->rcap = cap;
		c->rlen = have;
		return 0;
	}
	if (c->rpos) {
		memmove(c->rbuf, c->rbuf + c->rpos, have);
		c->rlen = have;
		c->rpos = 0;
	}
	if (c->rcap >= need && c->rlen < c->rcap)
		return 0;
	p = realloc(c->rbuf, cap);
	if (!p)
		return -ENOMEM;
	c->rbuf = p;
	c->rcap = cap;
	return 0;
}

/* Read what the socket has: >0 bytes, -EAGAIN, -ECONNRESET at EOF, or -errno. */
static int rx_read(struct pub_client *c)
{
	size_t need = PUB_PROTO_HDR_LEN;
	uint8_t type;
	uint32_t len;
	const uint8_t *body;
	ssize_t n;
	int r;

	if (c->rpos == c->rlen && !c->holding)
		c->rpos = c->rlen = 0;
	if (c->rbuf) {
		r = pub_proto_frame_peek(c->rbuf + c->rpos, c->rlen - c->rpos, c->max_body, &type, &len, &body, &need);
		if (r < 0)
			return -PUB_EPROTO;
	}
	r = rx_room(c, need);
	if (r < 0)
		return r;
	do {
		n = recv(c->sock, c->rbuf + c->rlen, c->rcap - c->rlen, MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n > 0) {
		c->rlen += (size_t)n;
		return (int)(n > 0x7fffffff ? 0x7fffffff : n);
	}
	if (n == 0)
		return -ECONNRESET;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

static int queue_message(struct pub_client *c, const struct pub_msg_deliver *d)
{
	struct pub_queued *q = malloc(sizeof(*q) + d->payload_len);

	if (!q)
		return -ENOMEM;
	q->next = NULL;
	q->source = d->source;
	q->seq = d->seq;
	q->len = d->payload_len;
	memcpy(q->group, d->group.ptr, d->group.len);
	q->group[d->group.len] = '\0';
	if (d->payload_len)
		memcpy(q->data, d->payload, d->payload_len);
	*c->qtail = q;
	c->qtail = &q->next;
	return 0;
}

static void reply_error(struct pub_client *c, struct pub_waiter *w, const struct pub_msg_error *e)
{
	int err = pub_err_from_code(e->code);

	w->done = true;
	w->result = err;
	set_err(c, err, "%s: %s (pubd: %.*s)", w->what ? w->what : "request", pub_err_describe(err, w->what),
		(int)e->text.len, e->text.ptr);
}

/* An ERROR without a request: about a fast-path publish, a dropped subscription, or the connection. */
static void async_error(struct pub_client *c, const struct pub_msg_error *e)
{
	int err = pub_err_from_code(e->code);
	char msg[sizeof(c->pending_msg)];

	/* The connection ends next; reconnecting is the whole answer. */
	if (e->code == PUB_ERR_SHUTDOWN)
		return;
	snprintf(msg, sizeof(msg), "pubd reported: %s (pubd: %.*s)", pub_strerror(err), (int)e->text.len, e->text.ptr);
	set_pending(c, err, msg);
}

/*
 * One frame from pubd. Returns 1 when it was a message placed in *m, 0
 * when handled, or a negative error that ends the connection (pubd broke
 * the protocol, or memory ran out).
 */
static int dispatch(struct pub_client *c, uint8_t type, const uint8_t *body, size_t len, struct pub_waiter *w,
		    struct pub_message *m)
{
	struct pub_msg_deliver d;
	struct pub_msg_ok ok;
	struct pub_msg_error e;
	struct pub_msg_welcome wel;
	struct pub_table_reader t;

	switch (type) {
	case PUB_FRAME_DELIVER:
		if (pub_proto_dec_deliver(body, len, &d) < 0)
			return set_err(c, -PUB_EPROTO, "malformed DELIVER from pubd");
		if (!m)
			return queue_message(c, &d);
		memcpy(c->msg_group, d.group.ptr, d.group.len);
		c->msg_group[d.group.len] = '\0';
		m->group = c->msg_group;
		m->source = d.source;
		m->seq = d.seq;
		m->data = d.payload;
		m->len = d.payload_len;
		c->holding = true;
		return 1;
	case PUB_FRAME_OK:
		if (pub_proto_dec_ok(body, len, &ok) < 0)
			return set_err(c, -PUB_EPROTO, "malformed OK from pubd");
		if (w && w->req_id && ok.req_id == w->req_id) {
			w->done = true;
			w->result = 0;
		}
		return 0; /* otherwise the late answer to a request that timed out */
	case PUB_FRAME_ERROR:
		if (pub_proto_dec_error(body, len, &e) < 0)
			return set_err(c, -PUB_EPROTO, "malformed ERROR from pubd");
		if (w && (w->welcome || (w->req_id && e.req_id == w->req_id)))
			reply_error(c, w, &e);
		else if (e.req_id == 0)
			async_error(c, &e);
		return 0;
	case PUB_FRAME_TABLE:
		if (pub_proto_dec_table(body, len, &t) < 0)
			return set_err(c, -PUB_EPROTO, "malformed TABLE from pubd");
		if (w && w->req_id && t.req_id == w->req_id && w->cb && !w->cb_ret)
			w->cb_ret = pub_table_deliver(&t, w->cb, w->cb_arg);
		return 0;
	case PUB_FRAME_WELCOME:
		if (!w || !w->welcome)
			return set_err(c, -PUB_EPROTO, "pubd sent a second WELCOME");
		if (pub_proto_dec_welcome(body, len, &wel) < 0)
			return set_err(c, -PUB_EPROTO, "malformed WELCOME from pubd");
		if (wel.version != PUB_PROTO_VERSION) {
			w->done = true;
			w->result =
				set_err(c, -PUB_EVERSION, "pubd answered with protocol version %u, libpub speaks %u",
					wel.version, PUB_PROTO_VERSION);
			return 0;
		}
		c->info.max_message = wel.max_message;
		c->info.mtu = wel.mtu;
		c->info.client_id = wel.client_id;
		c->info.source_id = wel.source_id;
		snprintf(c->info.daemon_version, sizeof(c->info.daemon_version), "%.*s", (int)wel.daemon_version.len,
			 wel.daemon_version.ptr);
		snprintf(c->info.fabric, sizeof(c->info.fabric), "%.*s", (int)wel.fabric.len, wel.fabric.ptr);
		/* Room for the largest DELIVER pubd may send, and never less than the floor for tables. */
		c->max_body = (size_t)wel.max_message + PUB_PROTO_MAX_HEAD;
		if (c->max_body < MAX_BODY_MIN)
			c->max_body = MAX_BODY_MIN;
		w->done = true;
		w->result = 0;
		return 0;
	}
	return set_err(c, -PUB_EPROTO, "pubd sent a frame of type %u, which only clients send", type);
}

/* Dispatch the complete frames in rbuf until a message (1), the waiter is done (0), or an error. */
static int process(struct pub_client *c, struct pub_waiter *w, struct pub_message *m)
{
	while (c->rbuf && !(w && w->done)) {
		uint8_t type;
		uint32_t len;
		const uint8_t *body;
		int r = pub_proto_frame_peek(c->rbuf + c->rpos, c->rlen - c->rpos, c->max_body, &type, &len, &body,
					     NULL);

		if (r < 0)
			return set_err(c, -PUB_EPROTO,
				       "invalid frame header from pubd (type %u, or longer than %zu bytes)",
				       c->rbuf[c->rpos + 4], c->max_body);
		if (r == 0)
			return 0;
		c->rpos += PUB_PROTO_HDR_LEN + len;
		r = dispatch(c, type, body, len, w, m);
		if (r)
			return r;
	}
	return 0;
}

/* Write out pending output. deadline 0: only what fits now (-EAGAIN otherwise). */
static int tx_flush(struct pub_client *c, uint64_t deadline)
{
	while (c->wpos < c->wlen) {
		ssize_t n = send(c->sock, c->wbuf + c->wpos, c->wlen - c->wpos, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			c->wpos += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (!deadline || now_ns() >= deadline)
			return deadline ? -ETIMEDOUT : -EAGAIN;
		struct pollfd p = {.fd = c->sock, .events = POLLOUT};
		if (poll(&p, 1, ms_until(deadline)) < 0 && errno != EINTR)
			return -errno;
	}
	c->wpos = c->wlen = 0;
	c->more_held = 0;
	return 0;
}

/* Room for `extra` more bytes of output after those waiting, which move to
 * the front; the buffer grows to at least min_cap when it must grow. */
static int wbuf_room(struct pub_client *c, size_t extra, size_t min_cap)
{
	size_t need;

	if (c->wpos) {
		memmove(c->wbuf, c->wbuf + c->wpos, c->wlen - c->wpos);
		c->wlen -= c->wpos;
		c->wpos = 0;
	}
	need = c->wlen + extra;
	if (need > c->wcap) {
		size_t cap = need < min_cap ? min_cap : need;
		uint8_t *p = realloc(c->wbuf, cap);

		if (!p)
			return -ENOMEM;
		c->wbuf = p;
		c->wcap = cap;
	}
	return 0;
}

/* Keep the unwritten rest of a frame [iov from `done`] so the stream stays whole. */
static int tx_keep(struct pub_client *c, const struct iovec *iov, int iovcnt, size_t done)
{
	size_t total = 0, off = 0;
	int r;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	c->wpos = 0;
	c->wlen = 0;
	r = wbuf_room(c, total - done, 0);
	if (r < 0)
		return r;
	for (int i = 0; i < iovcnt; i++) {
		const uint8_t *base = iov[i].iov_base;
		size_t len = iov[i].iov_len;

		if (off + len <= done) {
			off += len;
			continue;
		}
		size_t skip = done > off ? done - off : 0;
		memcpy(c->wbuf + c->wlen, base + skip, len - skip);
		c->wlen += len - skip;
		off += len;
	}
	return 0;
}

/*
 * Send one frame (head + payload) straight from the caller's memory with
 * sendmsg (MSG_NOSIGNAL: a dead pubd must not kill the application).
 * deadline 0: non-blocking: -EAGAIN if the socket took nothing; a partial
 * write keeps the rest in wbuf and counts as sent. Otherwise wait for room
 * until the deadline; on -ETIMEDOUT after a partial write the rest is kept
 * too. *partial tells whether any byte went out (the frame is then pubd's).
 * Pending output must have been flushed first.
 */
static int tx_frame(struct pub_client *c, const void *head, size_t hlen, const void *data, size_t dlen,
		    uint64_t deadline, bool *partial)
{
	struct iovec iov[2] = {{(void *)head, hlen}, {(void *)data, dlen}};
	size_t total = hlen + dlen, done = 0;

	*partial = false;
	while (done < total) {
		struct iovec v[2];
		struct msghdr msg = {.msg_iov = v};
		size_t skip = done;
		ssize_t n;

		for (int i = 0; i < 2; i++) {
			if (skip >= iov[i].iov_len) {
				skip -= iov[i].iov_len;
				continue;
			}
			v[msg.msg_iovlen].iov_base = (uint8_t *)iov[i].iov_base + skip;
			v[msg.msg_iovlen].iov_len = iov[i].iov_len - skip;
			msg.msg_iovlen++;
			skip = 0;
		}
		n = sendmsg(c->sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			done += (size_t)n;
			*partial = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (!deadline || now_ns() >= deadline) {
			if (!done)
				return deadline ? -ETIMEDOUT : -EAGAIN;
			int r = tx_keep(c, iov, 2, done);
			if (r < 0)
				return r;
			return deadline ? -ETIMEDOUT : 0;
		}
		struct pollfd p = {.fd = c->sock, .events = POLLOUT};
		if (poll(&p, 1, ms_until(deadline)) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

/*
 * Read and dispatch until the waiter is done, the deadline passes, or the
 * connection fails. Messages that arrive meanwhile are queued.
 */
static int wait_for(struct pub_client *c, struct pub_waiter *w, uint64_t deadline)
{
	for (;;) {
		int r = process(c, w, NULL);

		if (r < 0)
			return r;
		if (w->done)
			return w->result;
		if (c->wpos < c->wlen) {
			r = tx_flush(c, 0);
			if (r < 0 && r != -EAGAIN)
				return r;
		}
		r = rx_read(c);
		if (r > 0)
			continue;
		if (r != -EAGAIN)
			return r;
		if (now_ns() >= deadline)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = c->sock, .events = POLLIN | (c->wpos < c->wlen ? POLLOUT : 0)};
		if (poll(&p, 1, ms_until(deadline)) < 0 && errno != EINTR)
			return -errno;
	}
}

/* Send a small control frame and wait for its answer. -ECONNRESET etc. when the connection failed. */
static int roundtrip(struct pub_client *c, const uint8_t *frame, size_t len, struct pub_waiter *w)
{
	uint64_t deadline = deadline_in(c->request_timeout_ms);
	bool partial;
	int r;

	r = tx_flush(c, deadline);
	if (r < 0)
		return r;
	r = tx_frame(c, frame, len, NULL, 0, deadline, &partial);
	if (r < 0)
		return r;
	return wait_for(c, w, deadline);
}

static uint32_t next_req(struct pub_client *c)
{
	if (++c->next_req == 0)
		c->next_req = 1;
	return c->next_req;
}

static int sock_connect(struct pub_client *c)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	if (strlen(c->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, c->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A Unix stream connect completes at once, or fails with EAGAIN when pubd's backlog is full. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static int resubscribe(struct pub_client *c);

/*
 * One attempt: connect, HELLO, WELCOME, then subscribe again to every group.
 * On failure the handle is left down with c->errmsg telling why.
 */
static int conn_open(struct pub_client *c)
{
	uint8_t hello[PUB_PROTO_HDR_LEN + 8 + 1 + PUB_PROTO_NAME_MAX];
	struct pub_waiter w = {.welcome = true, .what = "handshake"};
	struct epoll_event ev = {.events = EPOLLIN};
	long n;
	int r;

	conn_close(c);
	r = sock_connect(c);
	if (r < 0)
		return set_err(c, r, "cannot reach pubd at %s: %s", c->path, pub_strerror(r));
	c->sock = r;
	c->max_body = MAX_BODY_MIN;
	ev.data.fd = c->sock;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->sock, &ev) < 0) {
		r = set_err(c, -errno, "epoll_ctl: %s", strerror(errno));
		goto fail;
	}
	n = pub_proto_enc_hello(hello, sizeof(hello), 0, c->name, strlen(c->name));
	if (n <= 0) {
		r = set_err(c, -EINVAL, "cannot encode HELLO");
		goto fail;
	}
	r = roundtrip(c, hello, (size_t)n, &w);
	if (r < 0) {
		if (!w.done)
			set_err(c, r, "pubd at %s did not complete the handshake: %s", c->path, pub_strerror(r));
		goto fail;
	}
	c->up = true;
	r = resubscribe(c);
	if (r < 0)
		goto fail;
	timer_arm(c, 0);
	c->backoff_ms = c->reconnect_min_ms;
	return 0;
fail:
	conn_close(c);
	return r;
}

static bool retryable(int err)
{
	return err == -ENOENT || err == -ECONNREFUSED || err == -EAGAIN || err == -ETIMEDOUT || is_disconnect(err) ||
	       err == -PUB_ESHUTDOWN;
}

/* A reconnect attempt, if one is due; schedules the next with backoff when it fails. */
static int reconnect(struct pub_client *c)
{
	uint64_t now = now_ns();
	int r;

	if (c->flags & PUB_OPT_NO_RECONNECT)
		return set_err(c, -ENOTCONN, "not connected to pubd at %s (reconnecting is off)", c->path);
	if (now < c->next_attempt_ns)
		return set_err(c, -ENOTCONN, "not connected to pubd at %s (next attempt in %llu ms)", c->path,
			       (unsigned long long)((c->next_attempt_ns - now) / 1000000));
	r = conn_open(c);
	if (r == 0) {
		c->info.reconnects++;
		return 0;
	}
	c->next_attempt_ns = now_ns() + (uint64_t)c->backoff_ms * 1000000ull;
	c->backoff_ms = c->backoff_ms * 2 > c->reconnect_max_ms ? c->reconnect_max_ms : c->backoff_ms * 2;
	timer_arm(c, c->next_attempt_ns);
	return r;
}

static int ensure_up(struct pub_client *c)
{
	int r;

	if (c->up)
		return 0;
	r = reconnect(c);
	if (r < 0 && r != -ENOMEM && r != -PUB_EVERSION)
		r = -ENOTCONN;
	return r;
}

/* Subscribe again after a reconnect; a group pubd now refuses is dropped and reported once. */
static int resubscribe(struct pub_client *c)
{
	uint8_t frame[PUB_PROTO_HDR_LEN + 4 + 1 + PUB_PROTO_NAME_MAX];
	char what[PUB_GROUP_MAX + 32];
	size_t i = 0;

	while (i < c->nsubs) {
		struct pub_waiter w = {.req_id = next_req(c), .what = what};
		const char *g = c->subs[i];
		long n = pub_proto_enc_group_req(frame, sizeof(frame), PUB_FRAME_SUBSCRIBE, w.req_id, g, strlen(g));
		int r;

		snprintf(what, sizeof(what), "resubscribe '%s'", g);
		r = roundtrip(c, frame, (size_t)n, &w);
		if (r < 0 && !w.done)
			return set_err(c, r, "resubscribe '%s' after reconnect: %s", g, pub_strerror(r));
		if (r < 0) {
			/* pubd refused (group gone, ACL changed): that subscription ends here. */
			set_pending(c, r, c->errmsg);
			free(c->subs[i]);
			c->subs[i] = c->subs[--c->nsubs];
			continue;
		}
		i++;
	}
	return 0;
}

/* ---- subscriptions list ---- */

static ssize_t sub_find(struct pub_client *c, const char *group)
{
	for (size_t i = 0; i < c->nsubs; i++)
		if (strcmp(c->subs[i], group) == 0)
			return (ssize_t)i;
	return -1;
}

static int sub_add(struct pub_client *c, const char *group)
{
	char *s;

	if (sub_find(c, group) >= 0)
		return 0;
	if (c->nsubs == c->subcap) {
		size_t cap = c->subcap ? c->subcap * 2 : 8;
		char **v = realloc(c->subs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->subs = v;
		c->subcap = cap;
	}
	s = strdup(group);
	if (!s)
		return -ENOMEM;
	c->subs[c->nsubs++] = s;
	return 0;
}

static void sub_remove(struct pub_client *c, const char *group)
{
	ssize_t i = sub_find(c, group);

	if (i < 0)
		return;
	free(c->subs[i]);
	c->subs[i] = c->subs[--c->nsubs];
}

/*
 * A request with a reply. If the connection turns out to be dead, one
 * reconnect and one retry: a restart of pubd between two calls should not
 * fail the second.
 */
static int request(struct pub_client *c, const uint8_t *frame, size_t len, struct pub_waiter *w)
{
	int r;

	for (int attempt = 0;; attempt++) {
		r = ensure_up(c);
		if (r < 0)
			return set_err(c, r, "%s: %s", w->what, c->errmsg);
		w->done = false;
		w->result = 0;
		r = roundtrip(c, frame, len, w);
		if (r >= 0 || w->done)
			return r;
		if (r == -ETIMEDOUT)
			return set_err(c, r, "%s: pubd did not answer within %d ms", w->what, c->request_timeout_ms);
		if (r == -PUB_EPROTO || r == -ENOMEM) {
			conn_lost(c);
			return set_err(c, r, "%s: %s", w->what, c->errmsg);
		}
		conn_lost(c);
		if (attempt > 0 || !is_disconnect(r))
			return set_err(c, -ENOTCONN, "%s: connection to pubd lost: %s", w->what, pub_strerror(r));
	}
}

static int group_request(struct pub_client *c, uint8_t type, const char *op, const char *group)
{
	uint8_t frame[PUB_PROTO_HDR_LEN + 4 + 1 + PUB_PROTO_NAME_MAX];
	char what[PUB_GROUP_MAX + 32];
	struct pub_waiter w = {.what = what};
	size_t len = 0; /* set by check_group; gcc -O3 cannot see it */
	long n;
	int r;

	r = check_group(c, op, group, &len);
	if (r < 0)
		return r;
	snprintf(what, sizeof(what), "%s '%s'", op, group);
	w.req_id = next_req(c);
	n = pub_proto_enc_group_req(frame, sizeof(frame), type, w.req_id, group, len);
	if (n <= 0)
		return set_err(c, -EINVAL, "%s: cannot encode", what);
	return request(c, frame, (size_t)n, &w);
}

/* ---- public API ---- */

static const char *default_name(void)
{
	return program_invocation_short_name ? program_invocation_short_name : "libpub";
}

static void client_free(struct pub_client *c)
{
	struct pub_queued *q, *next;

	conn_close(c);
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->timerfd >= 0)
		close(c->timerfd);
	if (c->kickfd >= 0)
		close(c->kickfd);
	for (q = c->qhead; q; q = next) {
		next = q->next;
		free(q);
	}
	free(c->cur);
	for (size_t i = 0; i < c->nsubs; i++)
		free(c->subs[i]);
	free(c->subs);
	free(c->rbuf);
	free(c->held_buf);
	free(c->wbuf);
	free(c->path);
	free(c);
}

static void options_apply(struct pub_client *c, const struct pub_options *opts)
{
	struct pub_options o = {0};

	/* A caller built against a smaller struct passes its size; read no further. */
	if (opts) {
		size_t n = opts->struct_size && opts->struct_size < sizeof(o) ? opts->struct_size : sizeof(o);

		memcpy(&o, opts, n);
	}
	snprintf(c->name, sizeof(c->name), "%s", o.client_name ? o.client_name : default_name());
	c->connect_timeout_ms = o.connect_timeout_ms;
	c->request_timeout_ms = o.request_timeout_ms ? o.request_timeout_ms : DEFAULT_REQUEST_MS;
	c->reconnect_min_ms = o.reconnect_min_ms > 0 ? o.reconnect_min_ms : DEFAULT_RECONNECT_MIN_MS;
	c->reconnect_max_ms = o.reconnect_max_ms > 0 ? o.reconnect_max_ms : DEFAULT_RECONNECT_MAX_MS;
	if (c->reconnect_max_ms < c->reconnect_min_ms)
		c->reconnect_max_ms = c->reconnect_min_ms;
	c->flags = o.flags;
}

int pub_connect(pub_client_t **out, const char *socket_path, const struct pub_options *opts)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct pub_client *c;
	uint64_t deadline;
	const char *path;
	int r;

	connect_errmsg[0] = '\0';
	if (!out) {
		snprintf(connect_errmsg, sizeof(connect_errmsg), "pub_connect: out is NULL");
		return -EINVAL;
	}
	*out = NULL;
	path = socket_path ? socket_path : secure_getenv(PUB_SOCKET_ENV);
	if (!path || !*path)
		path = PUB_DEFAULT_SOCKET;

	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(connect_errmsg, sizeof(connect_errmsg), "pub_connect: out of memory");
		return -ENOMEM;
	}
	c->sock = c->epfd = c->timerfd = c->kickfd = -1;
	c->qtail = &c->qhead;
	c->max_body = MAX_BODY_MIN;
	options_apply(c, opts);
	c->backoff_ms = c->reconnect_min_ms;
	c->path = strdup(path);
	if (!c->path) {
		r = set_err(c, -ENOMEM, "pub_connect: out of memory");
		goto fail;
	}
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	c->kickfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->epfd < 0 || c->timerfd < 0 || c->kickfd < 0) {
		r = set_err(c, -errno, "pub_connect: %s", strerror(errno));
		goto fail;
	}
	ev.data.fd = c->timerfd;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->timerfd, &ev) < 0) {
		r = set_err(c, -errno, "pub_connect: epoll_ctl: %s", strerror(errno));
		goto fail;
	}
	ev.data.fd = c->kickfd;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->kickfd, &ev) < 0) {
		r = set_err(c, -errno, "pub_connect: epoll_ctl: %s", strerror(errno));
		goto fail;
	}

	/* connect_timeout_ms lets an application start before pubd is up. */
	deadline = deadline_in(c->connect_timeout_ms);
	for (int backoff = c->reconnect_min_ms;;) {
		r = conn_open(c);
		if (r == 0)
			break;
		if (!retryable(r) || now_ns() >= deadline)
			goto fail;
		int wait = ms_until(deadline);
		poll(NULL, 0, wait >= 0 && wait < backoff ? wait : backoff);
		backoff = backoff * 2 > c->reconnect_max_ms ? c->reconnect_max_ms : backoff * 2;
	}
	readiness_update(c);
	*out = c;
	return 0;
fail:
	snprintf(connect_errmsg, sizeof(connect_errmsg), "%s", c->errmsg);
	client_free(c);
	return r;
}

void pub_close(pub_client_t *c)
{
	if (c)
		client_free(c);
}

int pub_subscribe(pub_client_t *c, const char *group)
{
	int r;

	if (!c)
		return -EINVAL;
	r = group_request(c, PUB_FRAME_SUBSCRIBE, "subscribe", group);
	if (r == 0 && sub_add(c, group) < 0)
		r = set_err(c, -ENOMEM, "subscribe '%s': out of memory", group);
	readiness_update(c);
	return r;
}

int pub_unsubscribe(pub_client_t *c, const char *group)
{
	int r;

	if (!c)
		return -EINVAL;
	/* While pubd is down there is nothing to undo there: forgetting the group is enough. */
	if (group && !c->up && sub_find(c, group) >= 0 && ensure_up(c) < 0) {
		sub_remove(c, group);
		readiness_update(c);
		return 0;
	}
	r = group_request(c, PUB_FRAME_UNSUBSCRIBE, "unsubscribe", group);
	if (r == 0 || r == -PUB_ESTATE || r == -PUB_ENOGROUP)
		sub_remove(c, group);
	readiness_update(c);
	return r;
}

/* Look at what pubd sent without waiting: errors about earlier publishes. */
static int drain(struct pub_client *c)
{
	int r;

	for (;;) {
		r = process(c, NULL, NULL);
		if (r < 0)
			break;
		r = rx_read(c);
		if (r == -EAGAIN)
			return 0;
		if (r < 0)
			break;
	}
	if (is_disconnect(r)) {
		conn_lost(c);
		return 0; /* the publish finds the connection down and tries once to reconnect */
	}
	if (r != -PUB_EPROTO && r != -ENOMEM)
		set_err(c, r, "reading from pubd: %s", pub_strerror(r));
	set_pending(c, r, c->errmsg);
	conn_lost(c);
	return 0;
}

/*
 * PUB_MORE: append the frame to the output kept in the handle, so that many
 * small messages leave in one write. -EAGAIN (PUB_NONBLOCK) when the held
 * output is full and the socket has no room: nothing of this message taken.
 */
static int hold_frame(struct pub_client *c, const char *group, size_t glen, const void *data, size_t len, bool nonblock)
{
	long n;
	int r;

	if (c->wlen - c->wpos >= MORE_FLUSH_AT) {
		r = tx_flush(c, nonblock ? 0 : NEVER);
		if (r < 0)
			return r;
	}
	r = wbuf_room(c, PUB_PROTO_MAX_HEAD + len, MORE_FLUSH_AT + MORE_COPY_MAX + PUB_PROTO_MAX_HEAD);
	if (r < 0)
		return r;
	/* The head straight into the output, the payload after it. */
	n = pub_proto_enc_publish_head(c->wbuf + c->wlen, PUB_PROTO_MAX_HEAD, 0, group, glen, len);
	if (n <= 0)
		return -PUB_ETOOLARGE;
	if (len)
		memcpy(c->wbuf + c->wlen + (size_t)n, data, len);
	c->wlen += (size_t)n + len;
	c->more_held++;
	if (c->wlen >= MORE_FLUSH_AT) {
		r = tx_flush(c, nonblock ? 0 : NEVER);
		if (r < 0 && r != -EAGAIN)
			return r;
	}
	return 0;
}

static int publish(struct pub_client *c, const char *group, const void *data, size_t len, int flags)
{
	uint8_t head[PUB_PROTO_MAX_HEAD];
	char what[PUB_GROUP_MAX + 32];
	struct pub_waiter w = {.what = what};
	bool nonblock = flags & PUB_NONBLOCK, partial;
	uint64_t deadline;
	size_t glen = 0; /* set by check_group; gcc -O3 cannot see it */
	long n;
	int r;

	r = check_group(c, "publish", group, &glen);
	if (r < 0)
		return r;
	if (flags & ~(PUB_NONBLOCK | PUB_SYNC | PUB_MORE))
		return set_err(c, -EINVAL, "publish '%s': unknown flags 0x%x", group, flags);
	if (!data && len)
		return set_err(c, -EINVAL, "publish '%s': no data", group);
	snprintf(what, sizeof(what), "publish '%s'", group);

	/* A pure publisher reads only here: errors pubd reported, or the end of the connection. */
	if (c->up && c->nsubs == 0 && (++c->publishes >= DRAIN_EVERY || (flags & PUB_SYNC))) {
		c->publishes = 0;
		drain(c);
	}
	r = take_pending(c);
	if (r < 0)
		return r;

	for (int attempt = 0;; attempt++) {
		r = ensure_up(c);
		if (r < 0)
			return set_err(c, r, "%s: %s", what, c->errmsg);
		if (len > c->info.max_message)
			return set_err(c, -PUB_ETOOLARGE,
				       "%s: message of %zu bytes exceeds pubd's max_message_size (%u)", what, len,
				       c->info.max_message);

		if ((flags & PUB_MORE) && !(flags & PUB_SYNC) && len <= MORE_COPY_MAX) {
			r = hold_frame(c, group, glen, data, len, nonblock);
			if (r == 0)
				return 0;
			if (r == -EAGAIN)
				return set_err(c, r, "%s: socket full (PUB_NONBLOCK)", what);
			if (!is_disconnect(r))
				return set_err(c, r, "%s: %s", what, pub_strerror(r));
			/* The held messages went down with the connection; so does this one. */
			conn_lost(c);
			take_pending(c);
			return set_err(c, -ENOTCONN, "%s: connection to pubd lost; this and %s", what,
				       "the messages held by PUB_MORE before it were not sent");
		}

		deadline = nonblock ? 0 : NEVER;
		r = tx_flush(c, deadline);
		if (r == -EAGAIN)
			return set_err(c, r, "%s: socket full (PUB_NONBLOCK)", what);
		if (r == 0) {
			w.req_id = (flags & PUB_SYNC) ? next_req(c) : 0;
			n = pub_proto_enc_publish_head(head, sizeof(head), w.req_id, group, glen, len);
			if (n <= 0)
				return set_err(c, -PUB_ETOOLARGE, "%s: message of %zu bytes cannot be framed", what,
					       len);
			r = tx_frame(c, head, (size_t)n, data, len, deadline, &partial);
			if (r == -EAGAIN)
				return set_err(c, r, "%s: socket full (PUB_NONBLOCK)", what);
		}
		if (r == 0 && (flags & PUB_SYNC)) {
			r = wait_for(c, &w, deadline_in(c->request_timeout_ms));
			if (r < 0 && w.done)
				return r; /* pubd refused: errmsg says why */
			if (r == -ETIMEDOUT)
				return set_err(c, r, "%s: pubd did not answer within %d ms", what,
					       c->request_timeout_ms);
			if (r < 0 && !is_disconnect(r)) {
				conn_lost(c);
				return set_err(c, r, "%s: %s", what, c->errmsg);
			}
			if (r < 0) {
				/* Sent, then the connection died before pubd answered: we cannot tell. */
				conn_lost(c);
				return set_err(c, -ENOTCONN, "%s: connection to pubd lost before it confirmed", what);
			}
		}
		if (r == 0)
			return 0; /* errors about earlier messages stay kept for the next call */
		if (!is_disconnect(r))
			return set_err(c, r, "%s: %s", what, pub_strerror(r));
		/* pubd went away. Nothing of this frame reached a live pubd (a partial frame dies
		 * with the connection), so one fresh connection may carry it whole. */
		conn_lost(c);
		if (attempt > 0)
			return set_err(c, -ENOTCONN, "%s: connection to pubd lost", what);
	}
}

int pub_publish(pub_client_t *c, const char *group, const void *data, size_t len, int flags)
{
	int r;

	if (!c)
		return -EINVAL;
	r = publish(c, group, data, len, flags);
	readiness_update(c);
	return r;
}

int pub_flush(pub_client_t *c, int timeout_ms)
{
	int r;

	if (!c)
		return -EINVAL;
	if (c->up && c->nsubs == 0)
		drain(c);
	r = take_pending(c);
	if (r == 0 && c->wpos < c->wlen) {
		if (!c->up)
			r = set_err(c, -ENOTCONN, "flush: %s", "not connected to pubd");
		else
			r = tx_flush(c, timeout_ms == 0 ? 0 : deadline_in(timeout_ms));
		if (is_disconnect(r)) {
			conn_lost(c);
			r = set_err(c, -ENOTCONN, "flush: connection to pubd lost");
		} else if (r < 0) {
			set_err(c, r, "flush: %s", pub_strerror(r));
		}
	}
	readiness_update(c);
	return r;
}

/* Release what the caller's previous message pointed into. */
static void recv_release(struct pub_client *c)
{
	free(c->held_buf);
	c->held_buf = NULL;
	c->holding = false;
	free(c->cur);
	c->cur = NULL;
}

static int recv_one(struct pub_client *c, struct pub_message *m, int timeout_ms)
{
	uint64_t deadline = deadline_in(timeout_ms);
	int r;

	for (;;) {
		r = take_pending(c);
		if (r < 0)
			return r;
		if (c->qhead) {
			c->cur = c->qhead;
			c->qhead = c->cur->next;
			if (!c->qhead)
				c->qtail = &c->qhead;
			m->group = c->cur->group;
			m->source = c->cur->source;
			m->seq = c->cur->seq;
			m->data = c->cur->data;
			m->len = c->cur->len;
			return 1;
		}
		if (!c->up) {
			if (c->flags & PUB_OPT_NO_RECONNECT)
				return set_err(c, -ENOTCONN, "not connected to pubd at %s (reconnecting is off)",
					       c->path);
			if (now_ns() >= c->next_attempt_ns) {
				r = reconnect(c);
				if (r == -ENOMEM || r == -PUB_EVERSION)
					return r;
				continue;
			}
			if (now_ns() >= deadline)
				return 0;
			/* Sleep until the next attempt or the caller's deadline, whichever is first. */
			uint64_t until = c->next_attempt_ns < deadline ? c->next_attempt_ns : deadline;
			poll(NULL, 0, ms_until(until));
			continue;
		}
		r = process(c, NULL, m);
		if (r == 1)
			return 1;
		if (r == 0 && c->wpos < c->wlen)
			r = tx_flush(c, 0);
		if (r == 0 || r == -EAGAIN)
			r = rx_read(c);
		if (r > 0)
			continue;
		if (r == -EAGAIN) {
			if (now_ns() >= deadline)
				return 0;
			struct pollfd p = {.fd = c->sock, .events = POLLIN | (c->wpos < c->wlen ? POLLOUT : 0)};
			if (poll(&p, 1, ms_until(deadline)) < 0 && errno != EINTR)
				return set_err(c, -errno, "recv: poll: %s", strerror(errno));
			continue;
		}
		if (is_disconnect(r)) {
			conn_lost(c);
			continue;
		}
		/* pubd broke the protocol or memory ran out: drop this connection, report, go on later. */
		if (r != -ENOMEM && r != -PUB_EPROTO)
			set_err(c, r, "recv: %s", pub_strerror(r));
		conn_lost(c);
		return r;
	}
}

int pub_recv(pub_client_t *c, struct pub_message *m, int timeout_ms)
{
	int r;

	if (!c || !m)
		return -EINVAL;
	recv_release(c);
	r = recv_one(c, m, timeout_ms);
	readiness_update(c);
	return r;
}

int pub_fd(pub_client_t *c)
{
	return c ? c->epfd : -EINVAL;
}

int pub_info(pub_client_t *c, struct pub_info *info)
{
	if (!c || !info)
		return -EINVAL;
	*info = c->info;
	info->connected = c->up;
	return 0;
}

int pub_query(pub_client_t *c, int kind, const char *arg, pub_table_cb cb, void *cb_arg)
{
	uint8_t frame[PUB_PROTO_HDR_LEN + 4 + 1 + 1 + PUB_PROTO_NAME_MAX];
	char what[PUB_GROUP_MAX + 32];
	struct pub_waiter w = {.what = what, .cb = cb, .cb_arg = cb_arg};
	size_t alen = arg ? strlen(arg) : 0;
	long n;
	int r;

	if (!c)
		return -EINVAL;
	static const char *const names[] = {
		[PUB_Q_STATUS] = "status",   [PUB_Q_GROUPS] = "groups", [PUB_Q_GROUP] = "group",
		[PUB_Q_CLIENTS] = "clients", [PUB_Q_DROPS] = "drops",	[PUB_Q_SOURCES] = "sources",
		[PUB_Q_RELOAD] = "reload"};
	if (kind > 0 && kind < (int)(sizeof(names) / sizeof(names[0])))
		snprintf(what, sizeof(what), "%s%s%.255s", names[kind], arg ? " " : "", arg ? arg : "");
	else
		snprintf(what, sizeof(what), "query %d", kind);
	if (kind <= 0 || kind > 255 || alen > PUB_PROTO_NAME_MAX)
		return set_err(c, -EINVAL, "%s: bad kind or argument", what);
	w.req_id = next_req(c);
	n = pub_proto_enc_query(frame, sizeof(frame), w.req_id, (uint8_t)kind, arg, alen);
	if (n <= 0)
		return set_err(c, -EINVAL, "%s: cannot encode", what);
	r = request(c, frame, (size_t)n, &w);
	if (r == 0 && w.cb_ret)
		r = w.cb_ret;
	readiness_update(c);
	return r;
}

const char *pub_errmsg(pub_client_t *c)
{
	return c ? c->errmsg : connect_errmsg;
}
