// SPDX-License-Identifier: MIT
/*
 * The connection to pubd: connect, HELLO/WELCOME, subscribe again, and the
 * reconnect policy (backoff between attempts, a timer pub_fd() shows);
 * what pub_fd() reports ready.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#include "internal.h"

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

void readiness_update(struct pub_client *c)
{
	bool kick = c->qhead || c->pending_err || (c->up && frame_buffered(c)) ||
		    (!c->up && (c->flags & PUB_OPT_NO_RECONNECT)) || c->wake_owed;
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

void conn_close(struct pub_client *c)
{
	shm_keep_held(c); /* pubd takes the logs' pages back when the socket goes */
	if (c->sock >= 0) {
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->sock, NULL);
		close(c->sock);
		c->sock = -1;
	}
	c->want_out = false;
	c->up = false;
	c->resub_due = false; /* a reconnect subscribes to everything again */
	c->expect_shm = false;
	c->expect_dlog = false;
	c->expect_wake = false;
	shm_detach(c);
	dw_detach_all(c);
	dr_detach_all(c);
	dlog_detach(c);
	if (c->wake_map)
		munmap(c->wake_map, PUB_WAKE_PAGE_LEN);
	c->wake_map = NULL;
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
void conn_lost(struct pub_client *c)
{
	uint64_t unread = 0, direct = 0;

	/* pubd went without a word (killed, or crashed): what it had not
	 * taken from the publish log nobody else can count, and pub_publish()
	 * said yes to it. Up to: pubd gives back a large message's record
	 * only once it is sent, so some of them may have gone out. */
	if (!c->pending_err) {
		unread = c->log_map ? shm_unread(c) : 0;
		direct = dw_unread(c);
	}
	if (unread + direct) {
		char msg[200];

		/* (The direct logs' local readers may have read theirs.) */
		snprintf(msg, sizeof(msg),
			 "connection to pubd lost with no word from it (killed?): up to %llu message%s written to the "
			 "%s may not have reached it",
			 (unsigned long long)(unread + direct), unread + direct == 1 ? "" : "s",
			 !direct   ? "publish log"
			 : !unread ? "direct logs"
				   : "publish and direct logs");
		set_pending(c, -ENOTCONN, msg);
	}
	conn_close(c);
	c->backoff_ms = c->reconnect_min_ms;
	c->next_attempt_ns = now_ns();
	if (!(c->flags & PUB_OPT_NO_RECONNECT))
		timer_arm(c, c->next_attempt_ns);
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
			return set_err(c, r, "resubscribe '%s': %s", g, pub_strerror(r));
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

/*
 * A reload made a group we subscribe to anew (a new address, scope or mode:
 * pubd ended the old subscription with PUB_ERR_REMADE). The group's name
 * is what the application subscribed to, so the subscription goes on:
 * SUBSCRIBE again to every group (pubd answers OK at once for those it
 * kept). What was published between the two is not this subscriber's.
 */
int conn_resubscribe_due(struct pub_client *c)
{
	if (!c->resub_due || !c->up)
		return 0;
	c->resub_due = false;
	return resubscribe(c);
}

/*
 * One attempt: connect, HELLO, WELCOME, then subscribe again to every group.
 * On failure the handle is left down with c->errmsg telling why.
 */
static int conn_open(struct pub_client *c, uint64_t deadline)
{
	uint8_t hello[PUB_PROTO_HDR_LEN + 8 + 1 + PUB_PROTO_NAME_MAX];
	struct pub_waiter w = {.welcome = true, .what = "handshake"};
	struct epoll_event ev = {.events = EPOLLIN};
	long n;
	int r;

	uint64_t t0 = now_ns();

	conn_close(c);
	r = sock_connect(c);
	if (r < 0)
		return set_err(c, r, "cannot reach pubd at %s: %s", c->path, pub_strerror(r));
	c->sock = r;
	c->sock_quiet = false;
	c->max_body = MAX_BODY_MIN;
	ev.data.fd = c->sock;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->sock, &ev) < 0) {
		r = set_err(c, -errno, "epoll_ctl: %s", strerror(errno));
		goto fail;
	}
	n = pub_proto_enc_hello(hello, sizeof(hello),
				(c->want_shm ? PUB_HELLO_F_SHM : 0) | (c->want_direct ? PUB_HELLO_F_DIRECT : 0),
				c->name, strlen(c->name));
	if (n <= 0) {
		r = set_err(c, -EINVAL, "cannot encode HELLO");
		goto fail;
	}
	r = roundtrip_by(c, hello, (size_t)n, &w, deadline);
	if (r < 0) {
		if (!w.done && r == -ETIMEDOUT)
			set_err(c, r,
				"pubd at %s accepted the connection but did not answer within %llu ms (stopped, or "
				"stuck?)",
				c->path, (unsigned long long)((deadline - t0) / 1000000));
		else if (!w.done)
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

/* ---- reconnecting ---- */

static bool retryable(int err)
{
	return err == -ENOENT || err == -ECONNREFUSED || err == -EAGAIN || err == -ETIMEDOUT || is_disconnect(err) ||
	       err == -PUB_ESHUTDOWN;
}

/* The first connection, for pub_connect: attempts with backoff until one
 * succeeds, fails in a way retrying cannot cure, or the deadline passes.
 * A full backlog (EAGAIN) says pubd is up but has not taken the
 * connections before this one yet (a burst of clients, or one connecting
 * and closing in a loop): that is waited out like a reply, up to
 * request_timeout_ms, even by a caller that asked for one attempt. */
int conn_first(struct pub_client *c, uint64_t deadline)
{
	uint64_t busy_deadline = 0;
	int r;

	for (int backoff = c->reconnect_min_ms;;) {
		r = conn_open(c, deadline_in(c->request_timeout_ms));
		if (r == 0)
			return 0;
		if (r == -EAGAIN && !busy_deadline)
			busy_deadline = deadline_in(c->request_timeout_ms);
		if (r == -EAGAIN && busy_deadline > deadline)
			deadline = busy_deadline;
		if (!retryable(r) || now_ns() >= deadline)
			return r;
		int wait = ms_until(deadline);
		poll(NULL, 0, wait >= 0 && wait < backoff ? wait : backoff);
		backoff = backoff * 2 > c->reconnect_max_ms ? c->reconnect_max_ms : backoff * 2;
	}
}

/* A reconnect attempt, if one is due; schedules the next with backoff when it fails. */
int reconnect(struct pub_client *c, uint64_t deadline)
{
	uint64_t now = now_ns(), least = now + HANDSHAKE_MIN_MS * 1000000ull, most = deadline_in(c->request_timeout_ms);
	int r;

	if (c->flags & PUB_OPT_NO_RECONNECT)
		return set_err(c, -ENOTCONN, "not connected to pubd at %s (reconnecting is off)", c->path);
	if (now < c->next_attempt_ns)
		return set_err(c, -ENOTCONN, "not connected to pubd at %s (next attempt in %llu ms)", c->path,
			       (unsigned long long)((c->next_attempt_ns - now) / 1000000));
	r = conn_open(c, deadline < least ? least : deadline > most ? most : deadline);
	if (r == 0) {
		c->info.reconnects++;
		return 0;
	}
	c->next_attempt_ns = now_ns() + (uint64_t)c->backoff_ms * 1000000ull;
	c->backoff_ms = c->backoff_ms * 2 > c->reconnect_max_ms ? c->reconnect_max_ms : c->backoff_ms * 2;
	timer_arm(c, c->next_attempt_ns);
	return r;
}

int ensure_up(struct pub_client *c)
{
	return ensure_up_by(c, deadline_in(c->request_timeout_ms));
}

int ensure_up_by(struct pub_client *c, uint64_t deadline)
{
	int r;

	if (c->up)
		return 0;
	r = reconnect(c, deadline);
	if (r < 0 && r != -ENOMEM && r != -PUB_EVERSION)
		r = -ENOTCONN;
	return r;
}
