/* SPDX-License-Identifier: MIT */
/*
 * Output: the client buffer budget, output queues, writing them (writev
 * batches), the slow-subscriber policy, and back-pressure pauses.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "proto.h"
#include "server_internal.h"

/* ---- output queue ---- */
static struct pubd_out *out_alloc(struct pubd_ipc *srv)
{
	struct pubd_out *o = srv->free_outs;

	if (o)
		srv->free_outs = o->next;
	else if (!(o = malloc(sizeof(*o))))
		return NULL;
	o->next = NULL;
	o->body = NULL;
	o->sub = NULL;
	o->orphan_of = NULL;
	o->head_len = 0;
	o->uncharged = false;
	o->written = 0;
	return o;
}

void srv_out_release(struct pubd_ipc *srv, struct pubd_out *o)
{
	pubd_msgbuf_put(o->body);
	o->next = srv->free_outs;
	srv->free_outs = o;
}

void srv_mark_dirty(struct pubd_client *c)
{
	if (c->dirty)
		return;
	c->dirty = true;
	c->next_dirty = c->srv->dirty;
	c->srv->dirty = c;
}

/* Back-pressure: stop reading a client until pubd_ipc_flush_all resumes it. */
void srv_pause_client(struct pubd_client *c)
{
	if (c->paused)
		return;
	c->paused = true;
	c->srv->npaused++;
}

/* Not within limits.client_buffer_budget: stop reading the client until n
 * bytes of it are free (pubd_ipc_flush_all resumes it); nothing is lost. */
void srv_pause_for_budget(struct pubd_client *c, size_t n)
{
	c->budget_wait = n;
	c->reply_wait = false;
	c->srv->counters[PUBD_CTR_BUDGET_WAITS]++;
	srv_pause_client(c);
}

/* A query waits: until QUERY_BUDGET_WAIT of the budget is free, or until the
 * client's queued replies are written (its next reply then goes outside the
 * budget). */
void srv_pause_for_reply(struct pubd_client *c)
{
	srv_pause_for_budget(c, QUERY_BUDGET_WAIT);
	c->reply_wait = true;
}

/*
 * A client that does not read its replies stops being read, its socket and
 * its publish log alike: each SUBSCRIBE, PUBLISH or record with a req_id
 * that pubd refuses queues an ERROR, and a client that sends such and never
 * reads would grow its queue without bound. Paused at CTRL_BYTES_HIGH of
 * replies, or once the client budget they are charged to is spent (else
 * many such clients would hold CTRL_BYTES_HIGH each, past the budget);
 * pubd_ipc_flush_all resumes it as its replies are written.
 */
void srv_replies_pause(struct pubd_client *c)
{
	if (c->out_ctrl_bytes >= CTRL_BYTES_HIGH)
		srv_pause_client(c);
	else if (c->out_ctrl_bytes && !srv_budget_fits(c->srv, 0))
		srv_pause_for_reply(c);
}

/* May a reply of n bytes be queued for c now? */
bool srv_reply_fits(const struct pubd_client *c, size_t n)
{
	return (!c->out_ctrl_bytes && n <= REPLY_FREE_MAX) || srv_budget_fits(c->srv, n);
}

/*
 * What a queued reply costs, as charged to the client budget and counted
 * in out_ctrl_bytes against CTRL_BYTES_HIGH: its memory, not only its
 * bytes (THREATS rule 1): its queue entry (a DELIVER's head room
 * included) and its buffer as allocated (header, and the frame rounded up
 * to its size class). A 262-byte ERROR costs about 1.4 KB.
 */
static size_t reply_cost(const struct pubd_out *o)
{
	return sizeof(*o) + pubd_msgbuf_footprint(o->body);
}

static void out_append(struct pubd_client *c, struct pubd_out *o)
{
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	/* A DELIVER (head_len set) counts against the subscriber queue, a
	 * reply against the client's reply bytes and the client budget. */
	if (o->head_len) {
		c->out_delivers++;
		c->out_deliver_bytes += o->body->len;
	} else {
		/* Its first reply outside the budget (REPLY_FREE_MAX); the
		 * rest are charged (and bounded per client by CTRL_BYTES_HIGH). */
		size_t cost = reply_cost(o);

		if (!c->out_ctrl_bytes && o->body->len <= REPLY_FREE_MAX) {
			o->uncharged = true;
			c->srv->uncharged += cost;
		} else {
			c->srv->charged += cost;
		}
		c->out_ctrl_bytes += cost;
	}
	srv_mark_dirty(c);
}

/* Unlink o, whose predecessor is prev (NULL when o is the head). */
void srv_out_unlink(struct pubd_client *c, struct pubd_out *prev, struct pubd_out *o)
{
	if (prev)
		prev->next = o->next;
	else
		c->out_head = o->next;
	if (c->out_tail == o)
		c->out_tail = prev;
	/* By the frame's kind, not by o->sub: a DELIVER whose subscription
	 * ended mid-write (sub NULL) is still a DELIVER, and counting it as
	 * reply bytes wrapped out_ctrl_bytes, pausing the client for good. */
	if (o->head_len) {
		c->out_delivers--;
		c->out_deliver_bytes -= o->body->len;
	} else {
		size_t cost = reply_cost(o);

		c->out_ctrl_bytes -= cost;
		if (o->uncharged)
			c->srv->uncharged -= cost;
		else
			srv_budget_give(c->srv, cost);
	}
}

void srv_count_delivered_n(struct pubd_client *c, struct pubd_sub *s, uint64_t n, uint64_t bytes)
{
	if (s) {
		s->delivered += n;
		s->group->delivered += n;
		s->group->delivered_bytes += bytes;
	}
	c->delivered += n;
	c->srv->counters[PUBD_CTR_MSG_DELIVERED] += n;
}

void srv_count_delivered(struct pubd_client *c, struct pubd_sub *s, size_t len)
{
	srv_count_delivered_n(c, s, 1, len);
}

void srv_count_out_delivered(struct pubd_client *c, const struct pubd_out *o)
{
	size_t len = o->body ? o->body->len : 0;

	srv_count_delivered(c, o->sub, len);
	if (!o->sub && o->orphan_of) {
		o->orphan_of->delivered++;
		o->orphan_of->delivered_bytes += len;
	}
}

void srv_take_back(struct pubd_sub *s, uint64_t n, uint64_t bytes, enum pub_drop_reason r)
{
	struct pubd_client *c = s->client;

	s->delivered -= n < s->delivered ? n : s->delivered;
	s->group->delivered -= n < s->group->delivered ? n : s->group->delivered;
	s->group->delivered_bytes -= bytes < s->group->delivered_bytes ? bytes : s->group->delivered_bytes;
	c->delivered -= n < c->delivered ? n : c->delivered;
	c->srv->counters[PUBD_CTR_MSG_DELIVERED] -= n;
	srv_count_sub_drop(c->srv, s, r, n);
}

void srv_count_sub_drop(struct pubd_ipc *srv, struct pubd_sub *s, enum pub_drop_reason r, uint64_t n)
{
	pubd_drops_add(&s->drops, r, n);
	pubd_drops_add(&s->client->drops, r, n);
	pubd_drops_add(&s->group->sub_drops, r, n);
	srv->counters[PUBD_CTR_MSG_DROPPED] += n;
}

void pubd_ipc_sub_dropped(struct pubd_ipc *srv, struct pubd_sub *s, enum pub_drop_reason r, uint64_t n)
{
	srv_count_sub_drop(srv, s, r, n);
}

int srv_queue_frame(struct pubd_client *c, const void *frame, size_t len)
{
	struct pubd_out *o;
	struct pubd_msgbuf *m;

	if (c->gone)
		return 0; /* nobody left to read it */
	o = out_alloc(c->srv);
	m = pubd_msgbuf_alloc(len);

	if (!o || !m) {
		pubd_msgbuf_put(m);
		if (o)
			srv_out_release(c->srv, o);
		return -ENOMEM;
	}
	memcpy(m->data, frame, len);
	o->body = m;
	out_append(c, o);
	return 0;
}

void srv_reply_ok(struct pubd_client *c, uint32_t req_id)
{
	uint8_t buf[16];
	long n = pub_proto_enc_ok(buf, sizeof(buf), req_id);

	if (n > 0)
		srv_queue_frame(c, buf, (size_t)n);
}

void srv_reply_error(struct pubd_client *c, uint32_t req_id, uint32_t code, const char *fmt, ...)
{
	/* Room for a refused reload's whole text (up to 2 KiB of errors, each
	 * naming file, line and column): 512 bytes cut it mid-word. */
	char text[4096];
	uint8_t buf[sizeof(text) + 32];
	va_list ap;
	long n;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (len < 0)
		len = 0;
	if ((size_t)len >= sizeof(text))
		len = sizeof(text) - 1;
	n = pub_proto_enc_error(buf, sizeof(buf), req_id, code, text, (size_t)len);
	if (n > 0)
		srv_queue_frame(c, buf, (size_t)n);
}

void srv_update_watch(struct pubd_client *c)
{
	uint32_t ev = 0;

	if (!c->watch)
		return; /* gone: drained from pubd_ipc_flush_all */
	if (!c->paused && !c->closing)
		ev |= EPOLLIN;
	/* The socket's room matters only while a socket frame waits: a
	 * delivery bound for the deliver log waits for the log's room. */
	if (c->out_head && (!c->dlog || c->out_ctrl_bytes))
		ev |= EPOLLOUT;
	if (ev != c->watch_events) {
		pubd_loop_watch_mod(c->watch, ev);
		c->watch_events = ev;
	}
}

/* Every queued frame goes; deliveries are counted against their
 * subscriptions (sub_disconnect), a half-written one included. */
void srv_drop_output(struct pubd_client *c)
{
	struct pubd_ipc *srv = c->srv;
	struct pubd_out *o;

	while ((o = c->out_head)) {
		srv_out_unlink(c, NULL, o);
		if (o->sub) {
			srv_count_sub_drop(srv, o->sub, PUB_DROP_SUB_DISCONNECT, 1);
		} else if (o->head_len) {
			/* Its subscription ended while it was being written:
			 * counted where that subscription's drops went (the
			 * client's row goes with it). */
			pubd_drops_add(&c->drops, PUB_DROP_SUB_DISCONNECT, 1);
			pubd_drops_add(o->orphan_of ? &o->orphan_of->sub_drops : srv->drops, PUB_DROP_SUB_DISCONNECT,
				       1);
			srv->counters[PUBD_CTR_MSG_DROPPED]++;
		}
		srv_out_release(srv, o);
	}
}

/* Would one more delivery of len payload bytes overflow c's subscriber queue?
 * One message always fits an empty queue, whatever its size: a message up to
 * max_message_size must be deliverable with any subscriber_queue_bytes. */
static bool subscriber_queue_full(const struct pubd_client *c, size_t len)
{
	const struct pubd_ipc *srv = c->srv;

	if (c->out_delivers >= srv->cfg->subscriber_queue)
		return true;
	return c->out_delivers && c->out_deliver_bytes + len > srv->cfg->subscriber_queue_bytes;
}

/*
 * srv_begin_close for a subscriber found slow while a message is being fanned
 * out: fan-out runs inside the engine's receive path (a reassembly callback)
 * or its publish path, and ending subscriptions there would call the engine
 * back (the last subscriber gone stops the group receiving, which clears
 * its reassembly state) from inside its own loop. The client stops
 * receiving at once (later deliveries count as sub_disconnect); its
 * subscriptions end on the next pubd_ipc_flush_all.
 */
static void begin_close_deferred(struct pubd_client *c)
{
	if (c->closing)
		return;
	srv_said_closed(c);
	c->closing = true;
	c->close_deadline_ns = pubd_now_ns() + CLOSE_GRACE_NS;
	c->unsub_deferred = true;
	c->srv->ndeferred++;
	srv_mark_dirty(c);
}

bool srv_out_sub_has_room(const struct pubd_sub *s, size_t len)
{
	return s->client->closing || !subscriber_queue_full(s->client, len);
}

void srv_out_sub_queue(const struct pubd_sub *s, struct pubd_sub_queue *q)
{
	const struct pubd_client *c = s->client;

	*q = (struct pubd_sub_queue){
		.msgs = c->out_delivers, .bytes = c->out_deliver_bytes, .taken = c->delivered, .closing = c->closing};
}

void srv_out_deliver(struct pubd_ipc *srv, struct pubd_sub *s, uint64_t source, uint64_t seq, struct pubd_msgbuf *msg)
{
	struct pubd_client *c = s->client;
	struct pubd_out *o, *prev;
	long n;

	if (c->closing) {
		/* Being disconnected (slow, or a protocol error): counted, not lost. */
		srv_count_sub_drop(srv, s, PUB_DROP_SUB_DISCONNECT, 1);
		return;
	}
	if (subscriber_queue_full(c, msg->len)) {
		switch (srv->cfg->slow_subscriber) {
		case PUBD_SLOW_DROP_NEWEST:
			srv_count_sub_drop(srv, s, PUB_DROP_SUB_OVERFLOW, 1);
			return;
		case PUBD_SLOW_DROP_OLDEST:
			/* The oldest deliveries not yet started (one being written
			 * must finish, or the stream would lose its framing), as
			 * many as the bytes bound needs; the new one when none is
			 * left to drop. */
			do {
				for (prev = NULL, o = c->out_head; o; prev = o, o = o->next)
					if (o->sub && !o->written)
						break;
				if (!o) {
					srv_count_sub_drop(srv, s, PUB_DROP_SUB_OVERFLOW, 1);
					return;
				}
				srv_out_unlink(c, prev, o);
				srv_count_sub_drop(srv, o->sub, PUB_DROP_SUB_OVERFLOW, 1);
				srv_out_release(srv, o);
			} while (subscriber_queue_full(c, msg->len));
			break;
		case PUBD_SLOW_DISCONNECT:
			srv_count_sub_drop(srv, s, PUB_DROP_SUB_DISCONNECT, 1);
			srv_log_limited(
				srv, log_client, LOG_NOTICE,
				"client %u (pid %d): subscriber queue full (%u messages, %zu bytes); disconnecting "
				"as slow",
				c->id, (int)c->pid, c->out_delivers, c->out_deliver_bytes);
			begin_close_deferred(c);
			srv_reply_error(
				c, 0, PUB_ERR_SLOW,
				"disconnected: subscriber queue full (%u messages, %zu bytes; limits %u messages, "
				"%llu bytes; policy disconnect)",
				c->out_delivers, c->out_deliver_bytes, srv->cfg->subscriber_queue,
				(unsigned long long)srv->cfg->subscriber_queue_bytes);
			return;
		}
	}
	o = out_alloc(srv);
	if (!o) {
		srv_count_sub_drop(srv, s, PUB_DROP_SUB_OVERFLOW, 1);
		return;
	}
	n = pub_proto_enc_deliver_head(o->head, sizeof(o->head), source, seq, s->group->name, s->group->name_len,
				       msg->len);
	if (n <= 0) {
		srv_out_release(srv, o);
		srv_count_sub_drop(srv, s, PUB_DROP_SUB_OVERFLOW, 1);
		return;
	}
	o->head_len = (uint32_t)n;
	o->body = pubd_msgbuf_get(msg);
	o->sub = s;
	out_append(c, o);
}

void pubd_ipc_tx_hold(struct pubd_ipc *srv, size_t bytes)
{
	srv->charged += bytes;
}

void pubd_ipc_tx_done(struct pubd_ipc *srv, struct pubd_client *origin, size_t bytes, uint32_t n)
{
	srv_budget_give(srv, bytes);
	if (origin)
		origin->tx_pending -= n < origin->tx_pending ? n : origin->tx_pending;
}

bool srv_peer_read_all(const struct pubd_client *c)
{
	int unread = 0;

	/* On a Unix socket SIOCOUTQ is what was sent and not yet read. */
	return !c->out_head && ioctl(c->fd, SIOCOUTQ, &unread) == 0 && unread == 0;
}

int srv_send_fds(struct pubd_client *c, const void *frame, size_t len, const int *fds, unsigned nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	struct iovec iov = {.iov_base = (void *)frame, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf};
	struct cmsghdr *cm;
	ssize_t n;

	if (c->out_head || nfds > 8)
		return -EBUSY;
	/* Fds in flight count against pubd's RLIMIT_NOFILE until the client
	 * reads them: one that reads nothing must not run pubd out of them. */
	if (c->fds_unread && srv_peer_read_all(c))
		c->fds_unread = 0;
	if (c->fds_unread + nfds > SRV_FDS_UNREAD_MAX)
		return -EAGAIN;
	memset(&ctl, 0, sizeof(ctl));
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	c->fds_unread += nfds;
	/* The fds went with the first byte: the rest of the frame, if the
	 * socket took only part of it, is queued like any reply. */
	if ((size_t)n < len && srv_queue_frame(c, (const uint8_t *)frame + n, len - (size_t)n) < 0)
		return -EPIPE;
	return 0;
}
