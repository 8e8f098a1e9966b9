// SPDX-License-Identifier: MIT
/*
 * The receive path: frames from pubd, dispatched in order. Replies end the
 * wait of the call that sent the request, errors pubd reports without a
 * request are kept for the next call, and messages that arrive while a call
 * waits for a reply are copied to a queue that pub_recv() empties first.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

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
	const char *what = waiter_what(w); /* w->what too, for a publish's */

	set_err(c, err, "%s: %s (pubd: %.*s)", what, pub_err_describe(err, w->what), (int)e->text.len, e->text.ptr);
}

/* An ERROR without a request: about a fast-path publish, a dropped subscription, or the connection. */
static void async_error(struct pub_client *c, const struct pub_msg_error *e)
{
	int err = pub_err_from_code(e->code);
	char msg[sizeof(c->pending_msg)];

	/* The connection ends next; reconnecting is the whole answer. */
	if (e->code == PUB_ERR_SHUTDOWN)
		return;
	/* A group made anew by a reload: subscribed again from pub_recv (recv_one). */
	if (e->code == PUB_ERR_REMADE) {
		c->resub_due = true;
		return;
	}
	snprintf(msg, sizeof(msg), "pubd reported: %s (pubd: %.*s)", pub_strerror(err), (int)e->text.len, e->text.ptr);
	set_pending(c, err, msg);
}

/* The n fds a frame came with: the first ones waiting. */
static int take_fds(struct pub_client *c, unsigned n, int *fds, const char *what)
{
	if (c->nrx_fds < n)
		return set_err(c, -PUB_EPROTO, "pubd's %s frame came without its file descriptors", what);
	memcpy(fds, c->rx_fds, n * sizeof(int));
	memmove(c->rx_fds, c->rx_fds + n, (c->nrx_fds - n) * sizeof(int));
	c->nrx_fds -= n;
	return 0;
}

/* A group log, before the OK of the SUBSCRIBE it serves: its memfd is the
 * first fd waiting. */
static int group_log_frame(struct pub_client *c, const struct pub_msg_shm *m)
{
	int fd, r;

	r = take_fds(c, 1, &fd, "group log");
	if (r < 0)
		return r;
	r = glog_attach(c, m, fd);
	close(fd); /* the mapping stays */
	return r;
}

/* fd is a waker's doorbell we keep (dw_waker_add took it). */
static bool find_waker_fd(const struct pub_client *c, int fd)
{
	for (unsigned i = 0; i < c->ndws; i++)
		for (unsigned j = 0; j < c->dws[i]->nwakers; j++)
			if (c->dws[i]->wakers[j].fd == fd)
				return true;
	return false;
}

/* The direct path's frames (directpub.c, directrecv.c): logs to write or
 * read, readers to wake, logs retired. */
static int direct_frame(struct pub_client *c, const struct pub_msg_shm *m)
{
	int fds[3], r;

	switch (m->kind) {
	case PUB_SHM_DIRECT_LOG:
		r = take_fds(c, 3, fds, "direct log");
		if (r < 0)
			return r;
		r = dw_attach(c, m, fds);
		close(fds[0]);
		if (r < 0) {
			close(fds[1]);
			close(fds[2]);
		}
		return r;
	case PUB_SHM_DIRECT_READ:
		r = take_fds(c, 1, fds, "direct log");
		if (r < 0)
			return r;
		r = dr_attach(c, m, fds[0]);
		close(fds[0]);
		return r;
	case PUB_SHM_WAKER:
		r = take_fds(c, 2, fds, "waker");
		if (r < 0)
			return r;
		r = dw_waker_add(c, m, fds);
		close(fds[0]);
		if (r < 0 || !find_waker_fd(c, fds[1]))
			close(fds[1]);
		return r;
	case PUB_SHM_WAKER_GONE:
		dw_waker_gone(c, m);
		return 0;
	case PUB_SHM_DIRECT_GONE:
		dw_retired(c, m->log_id);
		dr_retired(c, m->log_id);
		return 0;
	}
	return set_err(c, -PUB_EPROTO, "pubd sent an SHM frame of kind %u out of place", m->kind);
}

/* The logs pubd made for this connection, right after WELCOME: the publish
 * log's SHM frame (fds 0-2 of the ones that came with them), then the
 * deliver log's (fds 3-5). The handshake ends with the last announced. */
static int shm_frame(struct pub_client *c, const uint8_t *body, size_t len, struct pub_waiter *w)
{
	struct pub_msg_shm m;
	int r = -PUB_EPROTO;
	unsigned base;

	if (pub_proto_dec_shm(body, len, &m) < 0)
		goto fail;
	if (m.kind == PUB_SHM_GROUP_LOG)
		return group_log_frame(c, &m);
	if (m.kind >= PUB_SHM_DIRECT_LOG && c->wake_map)
		return direct_frame(c, &m);
	if (!w || !w->welcome || !(c->expect_shm || c->expect_dlog || c->expect_wake))
		goto fail;
	if (c->expect_shm || c->expect_dlog) {
		base = c->expect_shm ? 0 : 3;
		if (c->nrx_fds < base + 3 || m.kind != (c->expect_shm ? PUB_SHM_PUBLISH_LOG : PUB_SHM_DELIVER_LOG))
			goto fail;
		r = c->expect_shm ? shm_attach(c, &m, c->rx_fds + base) : dlog_attach(c, &m, c->rx_fds + base);
		if (r < 0)
			goto fail;
		/* The eventfds are the log's now; the memfd is not needed once mapped. */
		c->rx_fds[base + 1] = c->rx_fds[base + 2] = -1;
		if (c->expect_shm)
			c->expect_shm = false;
		else
			c->expect_dlog = false;
	} else {
		/* The wake page: the seventh fd, after the two logs' six. */
		if (c->nrx_fds < 7 || m.kind != PUB_SHM_WAKE_PAGE)
			goto fail;
		r = wake_attach(c, c->rx_fds[6]);
		if (r < 0)
			goto fail;
		c->expect_wake = false;
	}
	if (c->expect_shm || c->expect_dlog || c->expect_wake)
		return 0;
	rx_fds_close(c);
	w->done = true;
	w->result = 0;
	return 0;
fail:
	rx_fds_close(c);
	c->expect_shm = c->expect_dlog = c->expect_wake = false;
	if (r == -PUB_EPROTO)
		return set_err(c, r, "pubd's SHM frame is not one this libpub understands (%u fds)", c->nrx_fds);
	return r;
}

/* WELCOME: the daemon's limits and what it offers; ends the handshake
 * unless a publish log's SHM frame is still to come. */
static int on_welcome(struct pub_client *c, const uint8_t *body, size_t len, struct pub_waiter *w)
{
	struct pub_msg_welcome wel;

	if (!w || !w->welcome)
		return set_err(c, -PUB_EPROTO, "pubd sent a second WELCOME");
	if (pub_proto_dec_welcome(body, len, &wel) < 0)
		return set_err(c, -PUB_EPROTO, "malformed WELCOME from pubd");
	if (wel.version != PUB_PROTO_VERSION) {
		w->done = true;
		w->result = set_err(c, -PUB_EVERSION, "pubd answered with protocol version %u, libpub speaks %u",
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
	/* With a publish log the handshake ends at its SHM frame, so that
	 * no message goes by the socket before the log exists. */
	c->expect_shm = (wel.flags & PUB_WELCOME_F_SHM) != 0;
	c->expect_dlog = (wel.flags & PUB_WELCOME_F_SHM_DELIVER) != 0;
	c->expect_wake = (wel.flags & PUB_WELCOME_F_DIRECT) != 0;
	if ((c->expect_shm || c->expect_dlog) && !c->want_shm)
		return set_err(c, -PUB_EPROTO, "pubd offered shared memory nobody asked for");
	if (c->expect_dlog && !c->expect_shm)
		return set_err(c, -PUB_EPROTO, "pubd offered a deliver log without a publish log");
	if (c->expect_wake && (!c->want_direct || !c->expect_dlog))
		return set_err(c, -PUB_EPROTO, "pubd offered the direct path nobody asked for");
	w->done = !c->expect_shm;
	w->result = 0;
	return 0;
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
		return on_welcome(c, body, len, w);
	case PUB_FRAME_SHM:
		return shm_frame(c, body, len, w);
	}
	return set_err(c, -PUB_EPROTO, "pubd sent a frame of type %u, which only clients send", type);
}

/* Dispatch the complete frames in rbuf until a message (1), the waiter is done (0), or an error. */
int process(struct pub_client *c, struct pub_waiter *w, struct pub_message *m)
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

/*
 * Read and dispatch until the waiter is done, the deadline passes, or the
 * connection fails. Messages that arrive meanwhile are queued.
 */
int wait_for(struct pub_client *c, struct pub_waiter *w, uint64_t deadline)
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

/* Release what the caller's previous message pointed into. */
static void recv_release(struct pub_client *c)
{
	shm_release_dead(c);
	dr_release(c);
	free(c->held_buf);
	c->held_buf = NULL;
	c->holding = false;
	free(c->cur);
	c->cur = NULL;
}

/* A message queued while a request waited for its answer, if any. */
static bool take_queued(struct pub_client *c, struct pub_message *m)
{
	if (!c->qhead)
		return false;
	c->cur = c->qhead;
	c->qhead = c->cur->next;
	if (!c->qhead)
		c->qtail = &c->qhead;
	m->group = c->cur->group;
	m->source = c->cur->source;
	m->seq = c->cur->seq;
	m->data = c->cur->data;
	m->len = c->cur->len;
	return true;
}

/* Not connected: reconnect when an attempt is due, else sleep until it is
 * or the caller's deadline comes. Returns 1 to look again, 0 at the
 * deadline, or an error for pub_recv to return. */
static int while_down(struct pub_client *c, uint64_t deadline)
{
	uint64_t until;
	int r;

	if (c->flags & PUB_OPT_NO_RECONNECT)
		return set_err(c, -ENOTCONN, "not connected to pubd at %s (reconnecting is off)", c->path);
	if (now_ns() >= c->next_attempt_ns) {
		r = reconnect(c, deadline);
		return r == -ENOMEM || r == -PUB_EVERSION ? r : 1;
	}
	if (now_ns() >= deadline)
		return 0;
	until = c->next_attempt_ns < deadline ? c->next_attempt_ns : deadline;
	poll(NULL, 0, ms_until(until));
	return 1;
}

/*
 * Over shared memory the socket carries only answers, errors and new logs.
 * A reader about to sleep learns from its poll() whether any came, so it
 * reads the socket only then: a recvmsg() that found nothing before each
 * sleep cost about 0.5 us of a pinned ping-pong's 6.9 us one-way
 * (tests/bench/bench_locallat). One that spins or lingers does not poll,
 * and reads it every turn.
 */
static bool reads_socket_when_polled(const struct pub_client *c)
{
	return c->dlog_map && !(c->flags & PUB_OPT_BUSY_POLL) && !c->recv_linger_ns;
}

/*
 * Is the socket to be read on this turn? When the last look found it
 * empty: only when the reader will poll it before sleeping (then the poll
 * says), or, spinning or lingering, every BUSY_SOCK_TURNS turns: a
 * recvmsg() per message was a third of a busy-polled one-way on the direct
 * path (0.36 us against the bare ring's 0.12, tests/bench/bench_locallat).
 */
static bool socket_due(struct pub_client *c)
{
	/* Over the socket transport the socket is where messages come: read
	 * it every time (skipping 63 looks in 64 made a pub_fd poll loop spin
	 * on a readable socket, and a pub_recv(0) caller's messages late). */
	if (!c->sock_quiet || !c->dlog_map)
		return true;
	if (reads_socket_when_polled(c))
		return false;
	return (++c->quiet_turns % BUSY_SOCK_TURNS) == 0;
}

/* Does the socket hold anything to read now (answers, errors, a hang-up)? */
static bool sock_readable(const struct pub_client *c)
{
	struct pollfd p = {.fd = c->sock, .events = POLLIN};

	return poll(&p, 1, 0) > 0;
}

/* Said by logs_next: a message taken for its place in a direct log, the
 * logs to be looked at again from the top of recv_one's loop. */
#define LOGS_AGAIN 2

/* The next message of the logs, the ones pubd writes and the publishers'
 * direct logs, turn and turn about: 1 with it in m, 0 when there is none,
 * LOGS_AGAIN, or an error. */
static int logs_next(struct pub_client *c, struct pub_message *m)
{
	int r;

	c->dr_turn ^= 1;
	r = c->dr_turn && c->ndrs ? dr_next(c, m) : 0;
	if (r == 0) {
		r = dlog_next(c, m);
		/* One of a direct log's, come before its place there. */
		if (r == 1 && c->ndrs && dr_hold(c, m))
			return LOGS_AGAIN;
	}
	if (r == 0 && !c->dr_turn && c->ndrs)
		r = dr_next(c, m);
	return r;
}

/* Linger: look again, giving the CPU to whoever can run (pubd, most often,
 * with our answer) rather than spinning on it, until recv_linger_ns have
 * passed; pubd need not ring, and we need not wake. True to look again. */
static bool linger(struct pub_client *c, uint64_t deadline, uint64_t *linger_end)
{
	uint64_t now = now_ns();

	if (!*linger_end) {
		*linger_end = now + c->recv_linger_ns;
		dlog_awake(c); /* a new log starts "asleep": no ring while we look */
	}
	if (now < *linger_end && now < deadline) {
		sched_yield();
		return true;
	}
	return false;
}

/* Nothing anywhere: say so in the deliver log, so pubd rings (the doorbell
 * is in pub_fd's set too), unless something came meanwhile, and sleep until
 * it rings, the socket has something or the deadline comes. 1 to look
 * again, 0 at the deadline, or an error. */
static int sleep_until_rung(struct pub_client *c, uint64_t deadline)
{
	if (!dlog_sleep(c)) {
		dlog_awake(c);
		return 1;
	}
	if (now_ns() >= deadline) {
		/* Not read before sleeping: look once, without waiting. */
		if (!reads_socket_when_polled(c) || !sock_readable(c))
			return 0;
		dlog_awake(c);
		c->sock_quiet = false;
		return 1;
	}
	struct pollfd p[2] = {{.fd = c->sock, .events = POLLIN | (c->wpos < c->wlen ? POLLOUT : 0)},
			      {.fd = c->dlog_doorbell, .events = POLLIN}};
	if (poll(p, c->dlog_map ? 2 : 1, ms_until(deadline)) < 0 && errno != EINTR)
		return set_err(c, -errno, "recv: poll: %s", strerror(errno));
	c->sock_quiet = !(p[0].revents & (POLLIN | POLLHUP | POLLERR));
	dlog_awake(c);
	return 1;
}

/* Nothing to read now (the socket said EAGAIN): spin, linger or sleep, as
 * the client's options say. 1 to look again, 0 at the deadline, or an
 * error. */
static int recv_wait(struct pub_client *c, uint64_t deadline, uint64_t *linger_end)
{
	c->sock_quiet = true;
	if ((c->flags & PUB_OPT_BUSY_POLL) && c->dlog_map) {
		/* Spin on the log; the socket (answers, errors) is looked
		 * at again after a while, and the deadline kept. */
		if (!dlog_spin(c)) {
			if (now_ns() >= deadline)
				return 0;
			sched_yield(); /* more spinners than cores: let pubd run */
		}
		return 1;
	}
	if (c->recv_linger_ns && c->dlog_map && linger(c, deadline, linger_end))
		return 1;
	return sleep_until_rung(c, deadline);
}

static int recv_one(struct pub_client *c, struct pub_message *m, int timeout_ms)
{
	uint64_t deadline = deadline_in(timeout_ms), linger_end = 0;
	int r;

	for (;;) {
		r = take_pending(c);
		if (r < 0)
			return r;
		if (c->resub_due && (r = conn_resubscribe_due(c)) < 0)
			return r;
		if (take_queued(c, m))
			return 1;
		if (!c->up) {
			r = while_down(c, deadline);
			if (r != 1)
				return r;
			continue;
		}
		r = logs_next(c, m);
		if (r == LOGS_AGAIN)
			continue;
		if (r == 1)
			return 1;
		if (r == 0)
			r = process(c, NULL, m);
		if (r == 1)
			return 1;
		if (r == 0 && (c->pending_err || c->resub_due))
			continue; /* an error pubd sent about no request: handled now, not after the next wakeup */
		if (r == 0 && c->wpos < c->wlen)
			r = tx_flush(c, 0);
		if (r == 0 || r == -EAGAIN)
			r = socket_due(c) ? rx_read(c) : -EAGAIN;
		if (r > 0) {
			c->sock_quiet = false; /* there may be more */
			continue;
		}
		if (r == -EAGAIN) {
			r = recv_wait(c, deadline, &linger_end);
			if (r != 1)
				return r;
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
	shm_wake(c); /* messages PUB_MORE left unannounced go first */
	r = recv_one(c, m, timeout_ms);
	readiness_update(c);
	return r;
}
