// SPDX-License-Identifier: MIT
/*
 * The publish path: pub_publish (one frame straight from the caller's
 * memory, or held back with PUB_MORE; PUB_SYNC waits for pubd's answer)
 * and pub_flush. A publisher that never receives reads what pubd reported
 * only here (drain).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Look at what pubd sent without waiting: errors about earlier publishes,
 * new logs, readers of our direct logs. */
/* pubd closed the connection (died, or ended us), whatever is left unread. */
static bool peer_hung_up(const struct pub_client *c)
{
	struct pollfd p = {.fd = c->sock, .events = POLLRDHUP};

	return c->sock >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR));
}

void drain(struct pub_client *c)
{
	int r;

	for (;;) {
		r = process(c, NULL, NULL);
		if (r < 0)
			break;
		r = rx_read(c);
		if (r == -EAGAIN)
			return;
		if (r < 0)
			break;
	}
	if (is_disconnect(r)) {
		conn_lost(c);
		return; /* the publish finds the connection down and tries once to reconnect */
	}
	if (r != -PUB_EPROTO && r != -ENOMEM)
		set_err(c, r, "reading from pubd: %s", pub_strerror(r));
	set_pending(c, r, c->errmsg);
	conn_lost(c);
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

/* The arguments of a publish, checked; the group name's length in *glen. */
static int publish_checks(struct pub_client *c, const char *group, const void *data, size_t len, int flags,
			  size_t *glen)
{
	int r = check_group(c, "publish", group, glen);

	if (r < 0)
		return r;
	if (flags & ~(PUB_NONBLOCK | PUB_SYNC | PUB_MORE))
		return set_err(c, -EINVAL, "publish '%s': unknown flags 0x%x", group, flags);
	if (!data && len)
		return set_err(c, -EINVAL, "publish '%s': no data", group);
	return 0;
}

/* PUB_MORE: the message is held back with the others (hold_frame). */
static int publish_more(struct pub_client *c, struct pub_waiter *w, const char *group, size_t glen, const void *data,
			size_t len, bool nonblock)
{
	int r = hold_frame(c, group, glen, data, len, nonblock);

	if (r == 0)
		return 0;
	if (r == -EAGAIN)
		return set_err(c, r, "%s: socket full (PUB_NONBLOCK)", waiter_what(w));
	if (!is_disconnect(r))
		return set_err(c, r, "%s: %s", waiter_what(w), pub_strerror(r));
	/* The held messages went down with the connection; so does this one. */
	conn_lost(c);
	take_pending(c);
	return set_err(c, -ENOTCONN, "%s: connection to pubd lost; this and %s", waiter_what(w),
		       "the messages held by PUB_MORE before it were not sent");
}

/* One attempt to send the frame (after what is already queued). *final:
 * the result is the call's, its error already said. */
static int publish_send(struct pub_client *c, struct pub_waiter *w, const char *group, size_t glen, const void *data,
			size_t len, int flags, bool *final)
{
	uint64_t deadline = flags & PUB_NONBLOCK ? 0 : NEVER;
	uint8_t head[PUB_PROTO_MAX_HEAD];
	bool partial;
	long n;
	int r;

	*final = false;
	r = tx_flush(c, deadline);
	if (r == 0) {
		w->req_id = (flags & PUB_SYNC) ? next_req(c) : 0;
		n = pub_proto_enc_publish_head(head, sizeof(head), w->req_id, group, glen, len);
		if (n <= 0) {
			*final = true;
			return set_err(c, -PUB_ETOOLARGE, "%s: message of %zu bytes cannot be framed", waiter_what(w),
				       len);
		}
		r = tx_frame(c, head, (size_t)n, data, len, deadline, &partial);
	}
	if (r == -EAGAIN) {
		*final = true;
		return set_err(c, r, "%s: socket full (PUB_NONBLOCK)", waiter_what(w));
	}
	return r;
}

/* PUB_SYNC: the frame is sent; wait for pubd's answer. */
int publish_wait(struct pub_client *c, struct pub_waiter *w)
{
	int r = wait_for(c, w, deadline_in(c->request_timeout_ms));

	if (r == 0)
		return 0;
	if (w->done)
		return r; /* pubd refused: errmsg says why */
	if (r == -ETIMEDOUT)
		return set_err(c, r, "%s: pubd did not answer within %d ms", waiter_what(w), c->request_timeout_ms);
	conn_lost(c);
	if (!is_disconnect(r))
		return set_err(c, r, "%s: %s", waiter_what(w), c->errmsg);
	/* Sent, then the connection died before pubd answered: we cannot tell. */
	return set_err(c, -ENOTCONN, "%s: connection to pubd lost before it confirmed", waiter_what(w));
}

/* Through the publish log: no system call unless pubd sleeps (and, with
 * PUB_MORE, not even then until the burst ends). PUB_SYNC's req_id rides in
 * the record; pubd answers it on the socket once it read it. */
static int publish_log(struct pub_client *c, struct pub_waiter *w, const char *group, size_t glen, const void *data,
		       size_t len, int flags)
{
	int r;

	if (flags & PUB_SYNC)
		flags &= ~PUB_MORE;
	w->req_id = (flags & PUB_SYNC) ? next_req(c) : 0;
	r = shm_publish(c, w->req_id, group, glen, data, len, flags);
	if (r == 0)
		return flags & PUB_SYNC ? publish_wait(c, w) : 0;
	if (r == -EAGAIN)
		return set_err(c, r, "%s: publish log full (PUB_NONBLOCK)", waiter_what(w));
	if (!is_disconnect(r))
		return set_err(c, r, "%s: %s", waiter_what(w), pub_strerror(r));
	/* Pieces of it may be in the old log already: pubd counts them lost
	 * (client_gone); it is not sent again. */
	conn_lost(c);
	return set_err(c, -ENOTCONN, "%s: connection to pubd lost", waiter_what(w));
}

/* What a direct log's write came to (0, or its error as publish_log says it). */
static int publish_direct_done(struct pub_client *c, struct pub_waiter *w, int r, int flags)
{
	if (r == 0)
		return flags & PUB_SYNC ? publish_wait(c, w) : 0;
	if (r == -EAGAIN)
		return set_err(c, r, "%s: direct log full (PUB_NONBLOCK)", waiter_what(w));
	if (!is_disconnect(r))
		return set_err(c, r, "%s: %s", waiter_what(w), pub_strerror(r));
	conn_lost(c);
	return set_err(c, -ENOTCONN, "%s: connection to pubd lost", waiter_what(w));
}

/* Between pub_claim and pub_commit (pub.h): said plainly, on either
 * transport (the direct log said "full" with PUB_NONBLOCK unset, and the
 * socket took the message). Looked at only where it matters, off the
 * direct path's way: a publish there costs no more for it. */
static int claim_is_open(struct pub_client *c, const char *group)
{
	return set_err(c, -EBUSY, "publish '%s': a claim is open (pub_commit it first)", group);
}

/* A pure publisher reads only here (every DRAIN_EVERY publishes, and for
 * PUB_SYNC): errors pubd reported, or the end of the connection. Inlined:
 * it runs on every publish (bench_rxcost counts that path). */
static inline void read_back(struct pub_client *c, int flags)
{
	if (c->up && (++c->publishes >= DRAIN_EVERY || (flags & PUB_SYNC))) {
		c->publishes = 0;
		if (c->nsubs == 0)
			drain(c);
		else if (peer_hung_up(c))
			/* A subscriber's deliveries are pub_recv's to read; but
			 * with pubd gone, what we write into its logs reaches no
			 * one: the publish reconnects (or fails) as for a pure
			 * publisher, and never says 0 for a dead pubd's log. */
			conn_lost(c);
	}
}

static int publish(struct pub_client *c, const char *group, const void *data, size_t len, int flags)
{
	char what[PUB_GROUP_MAX + 32];
	struct pub_waiter w = {.publish_group = group, .what_buf = what};
	size_t glen = 0; /* set by check_group; gcc -O3 cannot see it */
	bool final;
	int r;

	r = publish_checks(c, group, data, len, flags, &glen);
	if (r < 0)
		return r;

	read_back(c, flags);
	r = take_pending(c);
	if (r < 0)
		return r;

	for (int attempt = 0;; attempt++) {
		/* PUB_NONBLOCK: a reconnect's handshake waits HANDSHAKE_MIN_MS at most. */
		r = c->up ? 0 : ensure_up_by(c, flags & PUB_NONBLOCK ? now_ns() : deadline_in(c->request_timeout_ms));
		if (r < 0)
			return set_err(c, r, "%s: %s", waiter_what(&w), c->errmsg);
		if (len > c->info.max_message)
			return set_err(c, -PUB_ETOOLARGE,
				       "%s: message of %zu bytes exceeds pubd's max_message_size (%u)", waiter_what(&w),
				       len, c->info.max_message);
		if (c->wake_map) {
			/* The direct path: a log of the group's own; one pubd
			 * retired meanwhile is asked for again, once. */
			struct pub_dwriter *dw = dw_for(c, group, glen, flags & PUB_NONBLOCK);
			int f = flags & PUB_SYNC ? flags & ~PUB_MORE : flags;

			w.req_id = (flags & PUB_SYNC) ? next_req(c) : 0;
			if (dw) {
				r = dw_publish(c, dw, w.req_id, data, len, f);
			} else if (!c->up) {
				/* Asking for the log found pubd gone: nothing of this
				 * message was sent; a fresh connection may carry it (it
				 * wrote on to a closed socket before: EBADF). */
				if (attempt > 0)
					return set_err(c, -ENOTCONN, "%s: connection to pubd lost", waiter_what(&w));
				continue;
			} else {
				r = 1;
			}
			if (r == -ESTALE && (dw = dw_for(c, group, glen, flags & PUB_NONBLOCK)))
				r = dw_publish(c, dw, w.req_id, data, len, f);
			if (r <= 0 && r != -ESTALE)
				return r < 0 && c->claim_open ? claim_is_open(c, group)
							      : publish_direct_done(c, &w, r, flags);
		}
		if (c->claim_open)
			return claim_is_open(c, group);
		if (c->log_map)
			return publish_log(c, &w, group, glen, data, len, flags);
		if ((flags & PUB_MORE) && !(flags & PUB_SYNC) && len <= MORE_COPY_MAX)
			return publish_more(c, &w, group, glen, data, len, flags & PUB_NONBLOCK);
		r = publish_send(c, &w, group, glen, data, len, flags, &final);
		if (final)
			return r;
		/* Sent: errors about earlier messages stay kept for the next call. */
		if (r == 0)
			return flags & PUB_SYNC ? publish_wait(c, &w) : 0;
		if (!is_disconnect(r))
			return set_err(c, r, "%s: %s", waiter_what(&w), pub_strerror(r));
		/* pubd went away. Nothing of this frame reached a live pubd (a partial frame dies
		 * with the connection), so one fresh connection may carry it whole. */
		conn_lost(c);
		if (attempt > 0)
			return set_err(c, -ENOTCONN, "%s: connection to pubd lost", waiter_what(&w));
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
	shm_wake(c);
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
