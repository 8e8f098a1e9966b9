/* SPDX-License-Identifier: MIT */
/*
 * The HELLO deadline (limits.hello_timeout_ms). Until its HELLO, pubd knows
 * nothing of a connection but its peer's credentials, yet it holds one of
 * limits.max_clients: anyone who may connect could otherwise take every
 * slot by saying nothing, or half a HELLO, and keep every later client out
 * (root's reserve included, once that is taken too).
 *
 * Connections waiting for their HELLO are kept in accept order on one list,
 * so the oldest is at its head and one timer, armed at the head's deadline,
 * serves them all: an accept appends (and arms the timer only when nothing
 * earlier is armed), a HELLO or a close unlinks, both O(1); the timer's run
 * closes what is due from the head and re-arms at the next. The data path
 * never looks at it. A reload changes the timeout for the waiting ones too:
 * the per-second tick sweeps as well, so a shorter timeout is applied
 * within a second, a longer one when the early timer finds nothing due.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>

#include "log.h"
#include "loop.h"
#include "server_internal.h"

/* Connections closed in one run of the timer, at most; more due go in the
 * next run, after the fds ready meanwhile (a flood's expiry must not stop
 * the loop for its whole length). */
#define HELLO_SWEEP_MAX 256

static bool bytes_waiting(int fd)
{
	int n = 0;

	return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

static uint64_t hello_deadline(const struct pubd_ipc *srv, const struct pubd_client *c)
{
	return c->connected_ns + (uint64_t)srv->cfg->hello_timeout_ms * 1000000ull;
}

static void arm_at(struct pubd_ipc *srv, uint64_t at)
{
	if (at == srv->hello_timer_at)
		return;
	srv->hello_timer_at = at;
	pubd_loop_timer_arm(srv->hello_timer, at);
}

void srv_hello_wait_begin(struct pubd_client *c)
{
	struct pubd_ipc *srv = c->srv;
	uint64_t at = hello_deadline(srv, c);

	c->hello_waiting = true;
	c->hello_next = NULL;
	c->hello_prev = srv->hello_tail;
	if (srv->hello_tail)
		srv->hello_tail->hello_next = c;
	else
		srv->hello_head = c;
	srv->hello_tail = c;
	/* A timer armed earlier re-arms for this one when it runs. */
	if (at < srv->hello_timer_at)
		arm_at(srv, at);
}

/* Told why, in one attempt (it may read it, or not), and closed at once:
 * the slot is what it held. */
static void hello_expired(struct pubd_client *c)
{
	struct pubd_ipc *srv = c->srv;
	uint32_t ms = srv->cfg->hello_timeout_ms;

	srv->counters[PUBD_CTR_CLIENTS_HELLO_TIMEOUT]++;
	srv_log_limited(srv, log_hello, LOG_NOTICE,
			"client %u (pid %d uid %u): no HELLO within limits.hello_timeout_ms (%u ms), %zu bytes of it "
			"read; disconnecting",
			c->id, (int)c->pid, (unsigned)c->uid, ms, c->rlen);
	srv_reply_error(c, 0, PUB_ERR_HELLO_LATE, "no HELLO within limits.hello_timeout_ms (%u ms)", ms);
	c->closing = true;
	c->close_deadline_ns = 0;
	if (!srv_client_flush(c))
		srv_client_close(c);
}

void srv_hello_sweep(struct pubd_ipc *srv, uint64_t now_ns)
{
	struct pubd_client *c;
	unsigned closed = 0;

	while ((c = srv->hello_head) && now_ns >= hello_deadline(srv, c)) {
		if (closed == HELLO_SWEEP_MAX) {
			arm_at(srv, 0); /* a deadline in the past: after the fds ready now */
			return;
		}
		/* Its HELLO may wait in the socket, sent in time but not read
		 * yet (a loop busy with a flood of connections had not come to
		 * it): read what it sent, once, before ending it. c may be gone
		 * after, and is off the list if its HELLO came: look again. */
		if (!c->hello_looked && !c->closing && !c->paused && bytes_waiting(c->fd)) {
			c->hello_looked = true;
			srv_on_client(c, EPOLLIN);
			continue;
		}
		srv_hello_wait_end(c);
		/* One that pubd is closing already (a protocol error before
		 * HELLO) goes by its own grace period. */
		if (c->closing)
			continue;
		hello_expired(c);
		closed++;
	}
	arm_at(srv, c ? hello_deadline(srv, c) : UINT64_MAX);
}

static void on_hello_timer(void *ctx, uint64_t now_ns)
{
	struct pubd_ipc *srv = ctx;

	/* The timer no longer holds a deadline: arm_at must arm it again. */
	srv->hello_timer_at = UINT64_MAX;
	srv_hello_sweep(srv, now_ns);
}

int srv_hello_init(struct pubd_ipc *srv)
{
	srv->hello_timer_at = UINT64_MAX;
	srv->hello_timer = pubd_loop_timer(srv->loop, on_hello_timer, srv);
	return srv->hello_timer ? 0 : -ENOMEM;
}

void srv_hello_close(struct pubd_ipc *srv)
{
	pubd_loop_timer_free(srv->hello_timer);
	srv->hello_timer = NULL;
	srv->hello_timer_at = UINT64_MAX;
}
