/* SPDX-License-Identifier: MIT */
/*
 * A client connection: reading and framing its input (the large-PUBLISH
 * path reads bodies straight into their message buffer), hang-ups, and
 * closing.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "proto.h"
#include "server_internal.h"

/*
 * The peer hung up, or its socket no longer takes writes. What it sent is
 * acknowledged from its side (a frame in the socket is as good as sent), so
 * it is still read and handled to the end of the stream, after any pause;
 * what was queued for it is dropped and counted, and its subscriptions end.
 * The fd leaves epoll (it would report EPOLLHUP on every wait): the rest is
 * read from pubd_ipc_flush_all, which closes the client at end of stream.
 */
void srv_client_hangup(struct pubd_client *c)
{
	if (c->gone)
		return;
	c->hung_up = true; /* it holds no message in a retired group log */
	srv_drop_output(c);
	srv_client_unsubscribe_all(c, false);
	srv_ended_holds(c);
	c->gone = true;
	c->srv->ngone++;
	pubd_loop_unwatch(c->watch);
	c->watch = NULL;
}

static size_t max_body(const struct pubd_ipc *srv)
{
	return (size_t)srv->cfg->max_message_size + 4 + 1 + PUB_PROTO_NAME_MAX;
}

/*
 * A PUBLISH whose body cannot fit the receive buffer: once its group name
 * is in, check it (HELLO was, group, ACL, size) and take its size from the
 * client budget, and only then allocate the message and read the rest of
 * the payload straight into it. A refused one's body is read and discarded
 * (c->skip). Returns bytes consumed from rbuf+off, 0 to wait for more (or
 * for the budget: the client is paused), -1 on a protocol error.
 */
static long start_big(struct pubd_client *c, const uint8_t *p, size_t avail, uint32_t body_len)
{
	struct pubd_ipc *srv = c->srv;
	struct pub_msg_publish m;
	size_t fixed, plen, have;
	uint32_t req_id;
	struct pubd_group *g;
	int r = pub_proto_dec_publish_head(p + PUB_PROTO_HDR_LEN, avail - PUB_PROTO_HDR_LEN, body_len, &m);

	if (r <= 0)
		return r < 0 ? -1 : 0;
	req_id = m.req_id;
	plen = m.payload_len;
	fixed = body_len - plen;
	have = avail - PUB_PROTO_HDR_LEN - fixed;
	if (have > plen)
		have = plen;
	g = srv_publish_admit(c, req_id, m.group.ptr, m.group.len, plen);
	if (g && plen > srv->cfg->client_buffer_budget) {
		srv_publish_refused(c, &g->drops, PUB_DROP_CLIENT_BUDGET);
		srv_reply_error(c, req_id, PUB_ERR_TOO_LARGE,
				"message of %zu bytes can never fit limits.client_buffer_budget (%llu bytes)", plen,
				(unsigned long long)srv->cfg->client_buffer_budget);
		g = NULL;
	}
	if (!g) {
		c->skip = plen - have; /* refused, counted and answered */
		return (long)(PUB_PROTO_HDR_LEN + fixed + have);
	}
	if (!srv_budget_take(srv, plen)) {
		srv_pause_for_budget(c, plen);
		return 0;
	}
	c->big = pubd_msgbuf_alloc(plen);
	if (!c->big) {
		srv_budget_give(srv, plen);
		return -1;
	}
	c->big_req_id = req_id;
	memcpy(c->big_group, m.group.ptr, m.group.len);
	c->big_group_len = m.group.len;
	memcpy(c->big->data, p + PUB_PROTO_HDR_LEN + fixed, have);
	c->big_have = have;
	return (long)(PUB_PROTO_HDR_LEN + fixed + have);
}

static void finish_big(struct pubd_client *c)
{
	struct pubd_msgbuf *m = c->big;
	struct pubd_group *g;

	c->big = NULL;
	srv_budget_give(c->srv, m->len);
	/* Checked again: a reload may have changed the group or its ACL. */
	g = srv_publish_admit(c, c->big_req_id, c->big_group, c->big_group_len, m->len);
	if (g)
		srv_publish_accept(c, c->big_req_id, g, m);
	pubd_msgbuf_put(m);
}

/* Grow rbuf to RBUF_CAP if the client budget has room. */
static bool rbuf_grow(struct pubd_client *c)
{
	size_t more = RBUF_CAP - c->rcap;
	uint8_t *b;

	if (!c->hello || !more || !srv_budget_take(c->srv, more))
		return false;
	b = realloc(c->rbuf, RBUF_CAP);
	if (!b) {
		srv_budget_give(c->srv, more);
		return false;
	}
	c->rbuf = b;
	c->rcap = RBUF_CAP;
	return true;
}

/* Handle every whole frame in rbuf (until paused or closing). */
void srv_client_parse(struct pubd_client *c)
{
	size_t off = 0, need;
	const uint8_t *body;
	uint32_t body_len;
	uint8_t type;
	long used;
	int r;

	while (!c->closing && !c->paused && !c->big && !c->skip && off < c->rlen) {
		r = pub_proto_frame_peek(c->rbuf + off, c->rlen - off, max_body(c->srv), &type, &body_len, &body,
					 &need);
		if (r < 0) {
			srv_protocol_error(c, "invalid frame header");
			return;
		}
		if (r == 0 && c->rlen - off < PUB_PROTO_HDR_LEN)
			break; /* more bytes will come */
		/* Judged on the header, before anything of the body is kept:
		 * nothing but a small HELLO is buffered for an unknown client. */
		if (!c->hello && type != PUB_FRAME_HELLO) {
			srv_protocol_error(c, "first frame must be HELLO");
			return;
		}
		if (!c->hello && PUB_PROTO_HDR_LEN + (size_t)body_len > RBUF_MIN) {
			srv_protocol_error(c, "HELLO too large");
			return;
		}
		c->expect_big = type == PUB_FRAME_PUBLISH && body_len >= BIG_MIN;
		if (r == 0) {
			if (type != PUB_FRAME_PUBLISH && PUB_PROTO_HDR_LEN + (size_t)body_len > RBUF_CAP) {
				srv_protocol_error(c, "frame too large");
				return;
			}
			if (type != PUB_FRAME_PUBLISH || body_len < BIG_MIN)
				break; /* more bytes will come and fit (rbuf grows) */
			used = start_big(c, c->rbuf + off, c->rlen - off, body_len);
			if (used < 0) {
				srv_protocol_error(c, "malformed PUBLISH");
				return;
			}
			if (used == 0)
				break;
			off += (size_t)used;
			if (c->big && c->big_have == c->big->len)
				finish_big(c);
			continue;
		}
		/* A client with no reply queued is always answered (its
		 * reply may go outside the budget: REPLY_FREE_MAX). */
		if (type == PUB_FRAME_QUERY && c->out_ctrl_bytes && !srv_budget_fits(c->srv, QUERY_BUDGET_WAIT)) {
			srv_pause_for_reply(c);
			break;
		}
		/* What the client committed to its publish log before this
		 * frame is handled before it (a PUBLISH and a later SUBSCRIBE
		 * keep their order, whichever way each came). */
		if (c->log && type != PUB_FRAME_HELLO && !srv_publog_caught_up(c))
			break;
		if (!srv_handle_frame(c, type, body, body_len))
			break;
		off += PUB_PROTO_HDR_LEN + body_len;
		srv_replies_back_pressure(c);
	}
	if (c->closing)
		return;
	if (off) {
		memmove(c->rbuf, c->rbuf + off, c->rlen - off);
		c->rlen -= off;
	}
	srv_update_watch(c);
}

/* What one read took from the client's READ_BUDGET. */
static void spend(size_t *budget, ssize_t n)
{
	*budget -= (size_t)n > *budget ? *budget : (size_t)n;
}

/* The body of a refused big PUBLISH: read and thrown away. */
static ssize_t read_discard(struct pubd_client *c, size_t *budget)
{
	/* Where refused bodies go: one buffer for all (single-threaded). */
	static uint8_t discard[64 * 1024];
	ssize_t n = read(c->fd, discard, c->skip < sizeof(discard) ? c->skip : sizeof(discard));

	if (n > 0) {
		c->skip -= (size_t)n;
		spend(budget, n);
		if (!c->skip)
			srv_client_parse(c);
	}
	return n;
}

/* The rest of a big body into its buffer, and in the same call the start
 * of what follows into rbuf. */
static ssize_t read_big(struct pubd_client *c, size_t *budget)
{
	size_t want = c->big->len - c->big_have, tail = c->rcap - c->rlen;
	struct iovec iov[2] = {
		{c->big->data + c->big_have, want},
		{c->rbuf + c->rlen, tail < BIG_TAIL_READ ? tail : BIG_TAIL_READ},
	};
	ssize_t n = readv(c->fd, iov, iov[1].iov_len ? 2 : 1);

	if (n > 0) {
		size_t body = (size_t)n < want ? (size_t)n : want;

		c->big_have += body;
		c->rlen += (size_t)n - body;
		c->read_since_tick = true;
		spend(budget, n);
		if (c->big_have == c->big->len) {
			finish_big(c);
			srv_client_parse(c);
		}
	}
	return n;
}

/* read_rbuf: the client was closed or paused; stop reading it. */
#define READ_STOPPED (-2)

/* Frames into rbuf, and handled. */
static ssize_t read_rbuf(struct pubd_client *c, size_t *budget)
{
	size_t room;
	ssize_t n;

	/* Parsing leaves a full buffer only when it is paused (then we are
	 * not here), the buffer is still small, or a frame can never fit; a
	 * read of 0 bytes would look like end of connection. */
	if (c->rlen == c->rcap) {
		if (c->rcap >= RBUF_CAP || !c->hello) {
			srv_protocol_error(c, "frame does not fit the receive buffer");
			return READ_STOPPED;
		}
		if (!rbuf_grow(c)) {
			srv_pause_for_budget(c, RBUF_CAP - c->rcap);
			srv_update_watch(c);
			return READ_STOPPED;
		}
	}
	room = c->rcap - c->rlen;
	if (c->expect_big && room > BIG_TAIL_READ)
		room = BIG_TAIL_READ;
	n = read(c->fd, c->rbuf + c->rlen, room);
	if (n > 0) {
		c->rlen += (size_t)n;
		c->read_since_tick = true;
		spend(budget, n);
		/* A small buffer filled by one read: a busy client (not the
		 * small bites taken between big bodies). */
		if ((size_t)n == room && c->rcap < RBUF_CAP && !c->expect_big)
			rbuf_grow(c);
		srv_client_parse(c);
	}
	return n;
}

void srv_client_read(struct pubd_client *c)
{
	size_t budget = READ_BUDGET;
	ssize_t n;

	while (budget && !c->paused && !c->closing) {
		if (c->skip)
			n = read_discard(c, &budget);
		else if (c->big)
			n = read_big(c, &budget);
		else
			n = read_rbuf(c, &budget);
		if (n > 0)
			continue;
		if (n == READ_STOPPED)
			return;
		if (n == 0) {
			log_debug("client %u: disconnected", c->id);
			srv_client_close(c);
			return;
		}
		if (errno == EAGAIN || errno == EINTR)
			break;
		if (errno == ECONNRESET && !c->gone) {
			srv_client_hangup(c);
			continue;
		}
		srv_log_limited(c->srv, log_client, LOG_INFO, "client %u: read failed: %s", c->id, strerror(errno));
		srv_client_close(c);
		return;
	}
}

void srv_on_client(void *ctx, uint32_t events)
{
	struct pubd_client *c = ctx;

	if (events & EPOLLOUT) {
		if (srv_client_flush(c) || c->gone)
			return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		if (c->closing) {
			if (events & (EPOLLHUP | EPOLLERR))
				srv_client_close(c);
			return;
		}
		if (c->paused) {
			/* Its frames still in rbuf and the socket are read
			 * once the pause ends, not thrown away now. */
			if (events & (EPOLLHUP | EPOLLERR))
				srv_client_hangup(c);
			return;
		}
		srv_client_read(c);
	}
}

/* The client closed its end (or shut it for writing): libpub closes it in
 * the call that lets go of its logs, and reads none of them after. */
static bool peer_hung_up(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

void srv_client_close(struct pubd_client *c)
{
	struct pubd_ipc *srv = c->srv;
	struct pubd_client **p;

	srv_hello_wait_end(c);
	c->hung_up = peer_hung_up(c->fd);
	/* Its publish log first: what it committed is published (or counted)
	 * while it is still a client with its counters. Read on over the
	 * next turns, within its pauses (publog.c), as a hung-up client's
	 * socket is: the client stays, ending nothing else, until that is
	 * over. One pubd ends, still connected, is not read further. */
	if (c->hung_up && srv_publog_drain(c)) {
		srv_client_hangup(c);
		c->closing = true;		   /* nothing read from the socket, nothing delivered */
		c->close_deadline_ns = UINT64_MAX; /* closed by pubd_ipc_flush_all */
		return;
	}
	srv_publog_close(c);
	srv_direct_client_close(c);
	/* Deliveries still queued, a half-written one included, never reach
	 * the client: each is counted against its subscription. */
	srv_drop_output(c);
	/* Ended by pubd before it hung up: it reads on what its deliver log
	 * holds, and pubd keeps that until it hangs up (ended.c). */
	if (c->hung_up || !srv_ended_linger(c))
		srv_dlog_close(c, c->hung_up);
	if (c->unsub_deferred) {
		c->unsub_deferred = false;
		srv->ndeferred--;
	}
	srv_client_unsubscribe_all(c, !c->hung_up);
	srv_ended_holds(c);
	if (c->tx_pending)
		srv->ops->client_closed(srv->ctx, c, c->tx_pending);
	c->tx_pending = 0;
	if (c->paused)
		srv->npaused--;
	if (c->gone)
		srv->ngone--;
	if (c->big)
		srv_budget_give(srv, c->big->len);
	srv_budget_give(srv, c->rcap - RBUF_MIN);
	if (c->dirty) {
		for (p = &srv->dirty; *p; p = &(*p)->next_dirty) {
			if (*p == c) {
				*p = c->next_dirty;
				break;
			}
		}
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nclients--;
	/* Its uid's count goes with it, or passes to its lingering log. */
	if (!c->linger)
		pubd_uid_count_dec(&srv->per_uid, c->uid);
	pubd_loop_unwatch(c->watch);
	close(c->fd);
	pubd_msgbuf_put(c->big);
	free(c->rbuf);
	free(c->subs);
	free(c->pubs);
	free(c->sup_gids);
	free(c);
}

void srv_read_peer(struct pubd_client *c, const struct ucred *cred)
{
	socklen_t len;
	gid_t *gids = NULL;

	if (cred) {
		c->pid = cred->pid;
		c->uid = cred->uid;
		c->gid = cred->gid;
	} else {
		/* Unknown peers get the least privilege: a uid no ACL names. */
		c->uid = (uid_t)-1;
		c->gid = (gid_t)-1;
	}
	/* Supplementary groups, for gid:/group: ACL entries. */
	len = 0;
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, NULL, &len) < 0 && errno == ERANGE && len) {
		gids = malloc(len);
		if (gids && getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, gids, &len) == 0) {
			c->nsup_gids = len / sizeof(gid_t);
			c->sup_gids = (uint32_t *)gids;
			return;
		}
		free(gids);
	}
}

/* PUBLISH frames read from c and not handled (pubd is stopping): counted
 * client_gone, whole frames in rbuf and a big body being read. */
uint64_t srv_count_unhandled(struct pubd_client *c)
{
	size_t off = 0, need;
	const uint8_t *body;
	uint32_t body_len;
	uint64_t n = c->big ? 1 : 0;
	uint8_t type;

	if (c->closing)
		return 0; /* a protocol error already ended its stream */
	while (off < c->rlen && pub_proto_frame_peek(c->rbuf + off, c->rlen - off, max_body(c->srv), &type, &body_len,
						     &body, &need) == 1) {
		n += type == PUB_FRAME_PUBLISH;
		off += PUB_PROTO_HDR_LEN + body_len;
	}
	return n;
}

/* Write as much queued output as the socket takes. Returns 1 if the client
 * was closed, 0 otherwise. */
/* A frame all written (to the socket or the deliver log) leaves the queue
 * (prev: the frame before it, NULL at the head); a delivery counts as
 * delivered. */
static void out_finished(struct pubd_client *c, struct pubd_out *prev, struct pubd_out *o)
{
	struct pubd_ipc *srv = c->srv;

	srv_out_unlink(c, prev, o);
	/* A delivery; its subscription may have gone away mid-write (sub NULL). */
	if (o->head_len)
		srv_count_out_delivered(c, o);
	srv_out_release(srv, o);
}

/* Deliveries go to the deliver log when the client has one. */
static bool via_log(const struct pubd_client *c, const struct pubd_out *o)
{
	return c->dlog && o->head_len;
}

/* The deliveries bound for the deliver log, in order, until it is full. */
static void flush_log(struct pubd_client *c)
{
	struct pubd_out *o, *prev = NULL, *next;

	for (o = c->out_head; o; o = next) {
		next = o->next;
		if (!via_log(c, o)) {
			prev = o;
			continue;
		}
		if (!srv_dlog_put(c, o))
			break;
		out_finished(c, prev, o);
	}
	srv_dlog_wake(c);
}

/* One writev of the socket frames in the queue, in order, passing over
 * deliveries that wait for the deliver log's room: replies and errors are
 * not held behind a subscriber's full log (libpub waits for a reply
 * without reading that log). 1 to go on, 0 when the socket is full or
 * nothing is left for it, -1 when the client was closed, -2 when it went
 * away for writing. */
static int flush_socket(struct pubd_client *c)
{
	struct iovec iov[FLUSH_IOV];
	struct pubd_out *o, *prev, *next;
	unsigned n = 0;
	size_t left, total, rest;
	ssize_t w;

	for (o = c->out_head; o && n + 2 <= FLUSH_IOV; o = o->next) {
		uint32_t skip = o->written;

		if (via_log(c, o))
			continue;
		if (skip < o->head_len) {
			iov[n].iov_base = o->head + skip;
			iov[n++].iov_len = o->head_len - skip;
			skip = 0;
		} else {
			skip -= o->head_len;
		}
		if (o->body && o->body->len > skip) {
			iov[n].iov_base = o->body->data + skip;
			iov[n++].iov_len = o->body->len - skip;
		}
	}
	if (!n)
		return 0;
	w = writev(c->fd, iov, (int)n);
	if (w < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		if (c->closing) {
			srv_client_close(c);
			return -1;
		}
		/* Gone for writing; what it sent is still handled. */
		log_debug("client %u: write failed: %s", c->id, strerror(errno));
		srv_client_hangup(c);
		return -2;
	}
	for (left = (size_t)w, prev = NULL, o = c->out_head; o && left; o = next) {
		next = o->next;
		if (via_log(c, o)) {
			prev = o;
			continue;
		}
		total = o->head_len + (o->body ? o->body->len : 0);
		rest = total - o->written;
		if (left < rest) {
			o->written += (uint32_t)left;
			return 0; /* short write: the socket is full */
		}
		left -= rest;
		out_finished(c, prev, o);
	}
	return 1;
}

int srv_client_flush(struct pubd_client *c)
{
	const char *why = srv_publog_broken(c);
	int r;

	if (why && !c->closing)
		srv_protocol_error(c, why);
	if (c->dlog)
		flush_log(c);
	/* Replies and errors (out_ctrl_bytes) are all that goes by the socket
	 * when deliveries go by the log. */
	while (c->dlog ? c->out_ctrl_bytes : c->out_head != NULL) {
		r = flush_socket(c);
		if (r == -1)
			return 1;
		if (r == -2)
			return 0;
		if (r == 0)
			break;
	}
	/* A client being closed gets this one attempt to read why: one that
	 * does not read must not hold its connection and queue open. */
	if (c->closing && (!c->out_head || pubd_now_ns() >= c->close_deadline_ns)) {
		srv_client_close(c);
		return 1;
	}
	srv_update_watch(c);
	return 0;
}

/* The subscriptions of clients disconnected during fan-out end now. */
static void run_deferred(struct pubd_ipc *srv)
{
	struct pubd_client *c;

	for (c = srv->clients; c && srv->ndeferred; c = c->next) {
		if (!c->unsub_deferred)
			continue;
		c->unsub_deferred = false;
		srv->ndeferred--;
		srv_client_unsubscribe_all(c, !c->gone);
	}
}

int pubd_ipc_flush_all(struct pubd_ipc *srv)
{
	struct pubd_client *c, *next;
	int work = 0;

	if (srv->ndeferred)
		run_deferred(srv);
	if (srv->glogs_waiting)
		srv_glog_flush_all(srv);
	/* Resume publishers whose transmit backlog drained or whose budget
	 * came free, and drain clients that hung up (a walk only while there
	 * are some: this runs every loop iteration). */
	for (c = srv->npaused || srv->ngone || srv->nlog_more ? srv->clients : NULL; c; c = next) {
		next = c->next;
		if (c->paused && c->tx_pending <= TX_PENDING_LOW && c->out_ctrl_bytes < CTRL_BYTES_HIGH / 2 &&
		    (!c->budget_wait || srv_budget_fits(srv, c->budget_wait) ||
		     (c->reply_wait && !c->out_ctrl_bytes))) {
			c->paused = false;
			c->budget_wait = 0;
			c->reply_wait = false;
			srv->npaused--;
			srv_update_watch(c);
			srv_client_parse(c);
			srv_publog_read(c);
			work++;
		} else if (srv_publog_more(c)) {
			srv_publog_read(c);
			/* Socket frames that waited for the log to be caught up. */
			if (c->rlen && !(c->log && c->log->more))
				srv_client_parse(c);
			work++;
		}
		/* A hung-up client whose log was drained (or ran out of time;
		 * a paused one is looked at again on the next turn, at the
		 * latest on pubd_ipc_tick's). */
		if (srv_publog_draining(c)) {
			if (!srv_publog_drain(c)) {
				srv_client_close(c);
				work++;
			}
			continue;
		}
		if (c->gone && !c->paused && !c->closing) {
			srv_client_read(c); /* may close it */
			work++;
		}
	}
	while ((c = srv->dirty)) {
		srv->dirty = c->next_dirty;
		c->dirty = false;
		srv_client_flush(c);
		work++;
	}
	return work;
}
