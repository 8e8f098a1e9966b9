/* SPDX-License-Identifier: MIT */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "proto.h"
#include "server_internal.h"

/* Receive buffer per client. Frames that do not fit (big PUBLISH bodies)
 * are read straight into their message buffer instead of growing this.
 * Every connection starts with RBUF_MIN (enough for HELLO, bounded by
 * limits.max_clients); a known client that fills it grows it to RBUF_CAP,
 * charged to limits.client_buffer_budget, and shrinks back when idle. */
#define RBUF_CAP (256 * 1024)
#define RBUF_MIN (4 * 1024)
/* An rbuf that saw no data for this long shrinks back to RBUF_MIN. */
#define RBUF_IDLE_NS (1000ull * 1000 * 1000)
/* How often repeating accept errors and refusals are logged. */
#define ACCEPT_LOG_NS (10000ull * 1000 * 1000)
/*
 * Control traffic must get through whatever others hold of the client budget
 * (publishers partway through big bodies, clients that do not read their
 * replies): a client with no reply queued may always have one reply of up to
 * REPLY_FREE_MAX queued outside the budget. Only its further replies wait
 * for the budget, so no client or group of clients can lock out another's
 * queries, and memory stays bounded: connections (max_clients plus the
 * operator's reserve) times REPLY_FREE_MAX, besides the budget.
 */
#define REPLY_FREE_MAX (64 * 1024)
/* A query from a client that already has replies queued waits for this much
 * of the budget (or for its replies to be written); a reply up to this size
 * is then always queued at once. */
#define QUERY_BUDGET_WAIT REPLY_FREE_MAX
/* A PUBLISH body from this size on is read straight into its message buffer
 * once its header is in, not copied out of rbuf: one copy less per message
 * (the copy costs more than the system call it saves from here on). */
#define BIG_MIN (16 * 1024)
/* While big bodies flow, rbuf takes at most this much per read (or of what
 * follows a body in its readv): the next header, without reading the next
 * big body into rbuf (and copying it) too. */
#define BIG_TAIL_READ (4 * 1024)
/* Bytes read from one client per wakeup before others get a turn. */
#define READ_BUDGET (1024 * 1024)
/* Back-pressure: stop reading a publisher with this many messages waiting
 * for the fabric, resume below the low mark. */
#define TX_PENDING_HIGH 256
#define TX_PENDING_LOW	64
/* A client that does not read its replies stops being read too. */
#define CTRL_BYTES_HIGH (4u << 20)
#define FLUSH_IOV	64
/* Connections beyond limits.max_clients kept for root and pubd's own user,
 * so that pubctl still works while someone holds every ordinary slot. */
#define OPERATOR_RESERVE 8
/* How long a client being disconnected may take to read why. */
#define CLOSE_GRACE_NS (2000ull * 1000 * 1000)

static void client_close(struct pubd_client *c);
static void client_parse(struct pubd_client *c);
static void client_read(struct pubd_client *c);
static void client_unsubscribe(struct pubd_client *c, unsigned idx);

/* ---- the client buffer budget (limits.client_buffer_budget) ---- */

static bool budget_fits(const struct pubd_ipc *srv, size_t n)
{
	return n <= srv->cfg->client_buffer_budget && srv->charged <= srv->cfg->client_buffer_budget - n;
}

static bool budget_take(struct pubd_ipc *srv, size_t n)
{
	if (!budget_fits(srv, n))
		return false;
	srv->charged += n;
	return true;
}

static void budget_give(struct pubd_ipc *srv, size_t n)
{
	srv->charged -= n < srv->charged ? n : srv->charged;
}

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
	o->head_len = 0;
	o->uncharged = false;
	o->written = 0;
	return o;
}

static void out_release(struct pubd_ipc *srv, struct pubd_out *o)
{
	pubd_msgbuf_put(o->body);
	o->next = srv->free_outs;
	srv->free_outs = o;
}

static void mark_dirty(struct pubd_client *c)
{
	if (c->dirty)
		return;
	c->dirty = true;
	c->next_dirty = c->srv->dirty;
	c->srv->dirty = c;
}

/* Back-pressure: stop reading a client until pubd_ipc_flush_all resumes it. */
static void pause_client(struct pubd_client *c)
{
	if (c->paused)
		return;
	c->paused = true;
	c->srv->npaused++;
}

/* Not within limits.client_buffer_budget: stop reading the client until n
 * bytes of it are free (pubd_ipc_flush_all resumes it); nothing is lost. */
static void pause_for_budget(struct pubd_client *c, size_t n)
{
	c->budget_wait = n;
	c->reply_wait = false;
	c->srv->counters[PUBD_CTR_BUDGET_WAITS]++;
	pause_client(c);
}

/* A query waits: until QUERY_BUDGET_WAIT of the budget is free, or until the
 * client's queued replies are written (its next reply then goes outside the
 * budget). */
static void pause_for_reply(struct pubd_client *c)
{
	pause_for_budget(c, QUERY_BUDGET_WAIT);
	c->reply_wait = true;
}

/* May a reply of n bytes be queued for c now? */
static bool reply_fits(const struct pubd_client *c, size_t n)
{
	return (!c->out_ctrl_bytes && n <= REPLY_FREE_MAX) || budget_fits(c->srv, n);
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
		if (!c->out_ctrl_bytes && o->body->len <= REPLY_FREE_MAX) {
			o->uncharged = true;
			c->srv->uncharged += o->body->len;
		} else {
			c->srv->charged += o->body->len;
		}
		c->out_ctrl_bytes += o->body->len;
	}
	mark_dirty(c);
}

/* Unlink o, whose predecessor is prev (NULL when o is the head). */
static void out_unlink(struct pubd_client *c, struct pubd_out *prev, struct pubd_out *o)
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
		c->out_ctrl_bytes -= o->body->len;
		if (o->uncharged)
			c->srv->uncharged -= o->body->len;
		else
			budget_give(c->srv, o->body->len);
	}
}

static void count_sub_drop(struct pubd_ipc *srv, struct pubd_sub *s, enum pub_drop_reason r, uint64_t n)
{
	pubd_drops_add(&s->drops, r, n);
	pubd_drops_add(&s->client->drops, r, n);
	pubd_drops_add(&s->group->sub_drops, r, n);
	srv->counters[PUBD_CTR_MSG_DROPPED] += n;
}

static int queue_frame(struct pubd_client *c, const void *frame, size_t len)
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
			out_release(c->srv, o);
		return -ENOMEM;
	}
	memcpy(m->data, frame, len);
	o->body = m;
	out_append(c, o);
	return 0;
}

static void reply_ok(struct pubd_client *c, uint32_t req_id)
{
	uint8_t buf[16];
	long n = pub_proto_enc_ok(buf, sizeof(buf), req_id);

	if (n > 0)
		queue_frame(c, buf, (size_t)n);
}

static void reply_error(struct pubd_client *c, uint32_t req_id, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void reply_error(struct pubd_client *c, uint32_t req_id, uint32_t code, const char *fmt, ...)
{
	char text[512];
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
		queue_frame(c, buf, (size_t)n);
}

/* A malformed frame ends this client only: tell it why, then close. */
/*
 * Start disconnecting a client: its subscriptions end now (deliveries queued
 * and not yet started are counted as sub_disconnect), nothing more is read
 * from it, and what is queued (the reply saying why) gets CLOSE_GRACE_NS to
 * drain before the connection is closed regardless. Safe inside fan-out:
 * only this client's subscriptions go.
 */
static void begin_close(struct pubd_client *c)
{
	if (c->closing)
		return;
	while (c->nsubs)
		client_unsubscribe(c, c->nsubs - 1);
	c->closing = true;
	c->close_deadline_ns = pubd_now_ns() + CLOSE_GRACE_NS;
	mark_dirty(c);
}

/*
 * begin_close for a subscriber found slow while a message is being fanned
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
	c->closing = true;
	c->close_deadline_ns = pubd_now_ns() + CLOSE_GRACE_NS;
	c->unsub_deferred = true;
	c->srv->ndeferred++;
	mark_dirty(c);
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
		while (c->nsubs)
			client_unsubscribe(c, c->nsubs - 1);
	}
}

static void protocol_error(struct pubd_client *c, const char *why)
{
	log_notice("client %u (pid %d, %s): protocol error: %s; disconnecting", c->id, (int)c->pid,
		   c->name[0] ? c->name : "?", why);
	c->srv->counters[PUBD_CTR_CLIENTS_REJECTED]++;
	begin_close(c);
	reply_error(c, 0, PUB_ERR_PROTO, "protocol error: %s", why);
	c->rlen = 0;
}

static void update_watch(struct pubd_client *c)
{
	uint32_t ev = 0;

	if (!c->watch)
		return; /* gone: drained from pubd_ipc_flush_all */
	if (!c->paused && !c->closing)
		ev |= EPOLLIN;
	if (c->out_head)
		ev |= EPOLLOUT;
	if (ev != c->watch_events) {
		pubd_loop_watch_mod(c->watch, ev);
		c->watch_events = ev;
	}
}

/* Every queued frame goes; deliveries are counted against their
 * subscriptions (sub_disconnect), a half-written one included. */
static void drop_output(struct pubd_client *c)
{
	struct pubd_ipc *srv = c->srv;
	struct pubd_out *o;

	while ((o = c->out_head)) {
		out_unlink(c, NULL, o);
		if (o->sub) {
			count_sub_drop(srv, o->sub, PUB_DROP_SUB_DISCONNECT, 1);
		} else if (o->head_len) {
			/* its subscription ended while it was being written */
			pubd_drops_add(&c->drops, PUB_DROP_SUB_DISCONNECT, 1);
			srv->counters[PUBD_CTR_MSG_DROPPED]++;
		}
		out_release(srv, o);
	}
}

/*
 * The peer hung up, or its socket no longer takes writes. What it sent is
 * acknowledged from its side (a frame in the socket is as good as sent), so
 * it is still read and handled to the end of the stream, after any pause;
 * what was queued for it is dropped and counted, and its subscriptions end.
 * The fd leaves epoll (it would report EPOLLHUP on every wait): the rest is
 * read from pubd_ipc_flush_all, which closes the client at end of stream.
 */
static void client_hangup(struct pubd_client *c)
{
	if (c->gone)
		return;
	drop_output(c);
	while (c->nsubs)
		client_unsubscribe(c, c->nsubs - 1);
	c->gone = true;
	c->srv->ngone++;
	pubd_loop_unwatch(c->watch);
	c->watch = NULL;
}

/* Write as much queued output as the socket takes. Returns 1 if the client
 * was closed, 0 otherwise. */
static int client_flush(struct pubd_client *c)
{
	struct pubd_ipc *srv = c->srv;
	struct iovec iov[FLUSH_IOV];
	struct pubd_out *o;
	unsigned n;
	ssize_t w;
	size_t left;

	while (c->out_head) {
		n = 0;
		for (o = c->out_head; o && n + 2 <= FLUSH_IOV; o = o->next) {
			uint32_t skip = o->written;

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
		w = writev(c->fd, iov, (int)n);
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			if (c->closing) {
				client_close(c);
				return 1;
			}
			/* Gone for writing; what it sent is still handled. */
			log_debug("client %u: write failed: %s", c->id, strerror(errno));
			client_hangup(c);
			return 0;
		}
		left = (size_t)w;
		while ((o = c->out_head)) {
			size_t total = o->head_len + (o->body ? o->body->len : 0);
			size_t rest = total - o->written;

			if (left < rest) {
				o->written += (uint32_t)left;
				break;
			}
			left -= rest;
			out_unlink(c, NULL, o);
			if (o->sub) {
				o->sub->delivered++;
				o->sub->group->delivered++;
				c->delivered++;
				srv->counters[PUBD_CTR_MSG_DELIVERED]++;
			} else if (o->head_len) {
				/* a delivery whose subscription went away mid-write */
				c->delivered++;
				srv->counters[PUBD_CTR_MSG_DELIVERED]++;
			}
			out_release(srv, o);
		}
		if (c->out_head && c->out_head->written)
			break; /* short write: the socket is full */
	}
	/* A client being closed gets this one attempt to read why: one that
	 * does not read must not hold its connection and queue open. */
	if (c->closing && (!c->out_head || pubd_now_ns() >= c->close_deadline_ns)) {
		client_close(c);
		return 1;
	}
	update_watch(c);
	return 0;
}

int pubd_ipc_flush_all(struct pubd_ipc *srv)
{
	struct pubd_client *c, *next;
	int work = 0;

	if (srv->ndeferred)
		run_deferred(srv);
	/* Resume publishers whose transmit backlog drained or whose budget
	 * came free, and drain clients that hung up (a walk only while there
	 * are some: this runs every loop iteration). */
	for (c = srv->npaused || srv->ngone ? srv->clients : NULL; c; c = next) {
		next = c->next;
		if (c->paused && c->tx_pending <= TX_PENDING_LOW && c->out_ctrl_bytes < CTRL_BYTES_HIGH / 2 &&
		    (!c->budget_wait || budget_fits(srv, c->budget_wait) || (c->reply_wait && !c->out_ctrl_bytes))) {
			c->paused = false;
			c->budget_wait = 0;
			c->reply_wait = false;
			srv->npaused--;
			update_watch(c);
			client_parse(c);
			work++;
		}
		if (c->gone && !c->paused && !c->closing) {
			client_read(c); /* may close it */
			work++;
		}
	}
	while ((c = srv->dirty)) {
		srv->dirty = c->next_dirty;
		c->dirty = false;
		client_flush(c);
		work++;
	}
	return work;
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

void pubd_ipc_deliver(struct pubd_ipc *srv, struct pubd_sub *s, uint64_t source, uint64_t seq, struct pubd_msgbuf *msg)
{
	struct pubd_client *c = s->client;
	struct pubd_out *o, *prev;
	long n;

	if (c->closing) {
		/* Being disconnected (slow, or a protocol error): counted, not lost. */
		count_sub_drop(srv, s, PUB_DROP_SUB_DISCONNECT, 1);
		return;
	}
	if (subscriber_queue_full(c, msg->len)) {
		switch (srv->cfg->slow_subscriber) {
		case PUBD_SLOW_DROP_NEWEST:
			count_sub_drop(srv, s, PUB_DROP_SUB_OVERFLOW, 1);
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
					count_sub_drop(srv, s, PUB_DROP_SUB_OVERFLOW, 1);
					return;
				}
				out_unlink(c, prev, o);
				count_sub_drop(srv, o->sub, PUB_DROP_SUB_OVERFLOW, 1);
				out_release(srv, o);
			} while (subscriber_queue_full(c, msg->len));
			break;
		case PUBD_SLOW_DISCONNECT:
			count_sub_drop(srv, s, PUB_DROP_SUB_DISCONNECT, 1);
			log_notice("client %u (pid %d): subscriber queue full (%u messages, %zu bytes); disconnecting "
				   "as slow",
				   c->id, (int)c->pid, c->out_delivers, c->out_deliver_bytes);
			begin_close_deferred(c);
			reply_error(c, 0, PUB_ERR_SLOW,
				    "disconnected: subscriber queue full (%u messages, %zu bytes; limits %u messages, "
				    "%llu bytes; policy disconnect)",
				    c->out_delivers, c->out_deliver_bytes, srv->cfg->subscriber_queue,
				    (unsigned long long)srv->cfg->subscriber_queue_bytes);
			return;
		}
	}
	o = out_alloc(srv);
	if (!o) {
		count_sub_drop(srv, s, PUB_DROP_SUB_OVERFLOW, 1);
		return;
	}
	n = pub_proto_enc_deliver_head(o->head, sizeof(o->head), source, seq, s->group->name, s->group->name_len,
				       msg->len);
	if (n <= 0) {
		out_release(srv, o);
		count_sub_drop(srv, s, PUB_DROP_SUB_OVERFLOW, 1);
		return;
	}
	o->head_len = (uint32_t)n;
	o->body = pubd_msgbuf_get(msg);
	o->sub = s;
	out_append(c, o);
}

void pubd_ipc_tx_done(struct pubd_client *c)
{
	if (c->tx_pending)
		c->tx_pending--;
}

/* ---- subscriptions ---- */

static struct pubd_sub *client_find_sub(struct pubd_client *c, struct pubd_group *g, unsigned *idx)
{
	unsigned i;

	for (i = 0; i < c->nsubs; i++) {
		if (c->subs[i]->group == g) {
			if (idx)
				*idx = i;
			return c->subs[i];
		}
	}
	return NULL;
}

/* Remove a subscription; deliveries queued for it and not yet started are
 * dropped (sub_disconnect), one being written completes. */
static void client_unsubscribe(struct pubd_client *c, unsigned idx)
{
	struct pubd_sub *s = c->subs[idx];
	struct pubd_out *o, *prev, *next;
	struct pubd_ipc *srv = c->srv;
	struct pubd_group *g;

	for (prev = NULL, o = c->out_head; o; o = next) {
		next = o->next;
		if (o->sub != s) {
			prev = o;
			continue;
		}
		if (o->written) {
			/* Keep it: the frame must finish. It no longer counts
			 * against the subscription, which goes away now (it
			 * stays in out_delivers until written: out_unlink). */
			o->sub = NULL;
			prev = o;
			continue;
		}
		out_unlink(c, prev, o);
		count_sub_drop(srv, s, PUB_DROP_SUB_DISCONNECT, 1);
		out_release(srv, o);
	}
	c->subs[idx] = c->subs[--c->nsubs];
	g = s->group;
	pubd_group_sub_remove(g, s);
	srv->ops->subscribers_changed(srv->ctx, g); /* the last one gone: stop receiving */
}

void pubd_ipc_group_removed(struct pubd_ipc *srv, struct pubd_group *g)
{
	struct pubd_client *c;
	unsigned idx;

	for (c = srv->clients; c; c = c->next) {
		struct pubd_pubstat *p;
		unsigned i;

		if (client_find_sub(c, g, &idx)) {
			client_unsubscribe(c, idx);
			reply_error(c, 0, PUB_ERR_NO_GROUP, "group %s was removed from the configuration", g->name);
		}
		for (i = 0; i < c->npubs; i++) {
			p = &c->pubs[i];
			if (p->group == g) {
				c->pubs[i] = c->pubs[--c->npubs];
				break;
			}
		}
	}
}

static bool may(const struct pubd_client *c, const struct pubd_acl *acl);

void pubd_ipc_acl_changed(struct pubd_ipc *srv, struct pubd_group *g)
{
	struct pubd_client *c;
	unsigned i;

	for (c = srv->clients; c; c = c->next) {
		if (c->closing || c->gone)
			continue;
		if (client_find_sub(c, g, &i) && !may(c, &g->cfg->subscribe)) {
			/* Client-supplied text (its HELLO name) stays out of the log. */
			log_notice("client %u (pid %d uid %u): subscription to %s ended: the reloaded subscribe ACL "
				   "no longer allows it",
				   c->id, (int)c->pid, (unsigned)c->uid, g->name);
			client_unsubscribe(c, i);
			srv->counters[PUBD_CTR_ACL_REVOKED]++;
			reply_error(c, 0, PUB_ERR_ACL,
				    "subscription to '%s' ended: the reloaded subscribe ACL no longer allows uid %u",
				    g->name, (unsigned)c->uid);
		}
		for (i = 0; i < c->npubs; i++) {
			if (c->pubs[i].group != g || may(c, &g->cfg->publish))
				continue;
			/* Its next PUBLISH is refused (acl_denied); it is told now. */
			log_notice("client %u (pid %d uid %u): publishing to %s ended: the reloaded publish ACL no "
				   "longer allows it",
				   c->id, (int)c->pid, (unsigned)c->uid, g->name);
			c->pubs[i] = c->pubs[--c->npubs];
			srv->counters[PUBD_CTR_ACL_REVOKED]++;
			reply_error(c, 0, PUB_ERR_ACL,
				    "publishing to '%s' ended: the reloaded publish ACL no longer allows uid %u",
				    g->name, (unsigned)c->uid);
			break;
		}
	}
}

static struct pubd_pubstat *client_pubstat(struct pubd_client *c, struct pubd_group *g)
{
	struct pubd_pubstat *v;
	unsigned i;

	for (i = 0; i < c->npubs; i++)
		if (c->pubs[i].group == g)
			return &c->pubs[i];
	v = realloc(c->pubs, (c->npubs + 1) * sizeof(*v));
	if (!v)
		return NULL;
	c->pubs = v;
	memset(&v[c->npubs], 0, sizeof(v[0]));
	v[c->npubs].group = g;
	return &v[c->npubs++];
}

/* ---- frame handlers ---- */

static bool may(const struct pubd_client *c, const struct pubd_acl *acl)
{
	return pubd_acl_allows(acl, c->uid, c->gid, c->sup_gids, c->nsup_gids);
}

static void handle_hello(struct pubd_client *c, const uint8_t *body, size_t len)
{
	struct pubd_ipc *srv = c->srv;
	struct pub_msg_welcome w = {0};
	struct pub_msg_hello h;
	uint8_t buf[600];
	long n;

	if (c->hello) {
		protocol_error(c, "second HELLO");
		return;
	}
	if (pub_proto_dec_hello(body, len, &h) < 0) {
		protocol_error(c, "malformed HELLO");
		return;
	}
	if (h.version != PUB_PROTO_VERSION) {
		log_notice("client %u: protocol version %u not supported", c->id, h.version);
		begin_close(c);
		reply_error(c, 0, PUB_ERR_VERSION, "protocol version %u not supported (pubd speaks %u)", h.version,
			    PUB_PROTO_VERSION);
		return;
	}
	snprintf(c->name, sizeof(c->name), "%.*s", (int)h.client_name.len, h.client_name.ptr);
	c->hello = true;
	w.version = PUB_PROTO_VERSION;
	w.max_message = (uint32_t)srv->cfg->max_message_size;
	w.mtu = srv->mtu;
	w.client_id = c->id;
	w.source_id = srv->source_id;
	w.daemon_version = (struct pub_str){PUBD_VERSION, strlen(PUBD_VERSION)};
	w.fabric = (struct pub_str){srv->fabric_name, strlen(srv->fabric_name)};
	n = pub_proto_enc_welcome(buf, sizeof(buf), &w);
	if (n > 0)
		queue_frame(c, buf, (size_t)n);
	log_debug("client %u: hello from %s (pid %d uid %u)", c->id, c->name, (int)c->pid, (unsigned)c->uid);
}

static void handle_subscribe(struct pubd_client *c, const uint8_t *body, size_t len, bool sub)
{
	struct pub_msg_group_req r;
	struct pubd_group *g;
	struct pubd_sub *s, **v;
	int err;
	unsigned idx;

	if (pub_proto_dec_group_req(body, len, &r) < 0) {
		protocol_error(c, sub ? "malformed SUBSCRIBE" : "malformed UNSUBSCRIBE");
		return;
	}
	if (c->gone)
		return; /* it hung up: nothing could reach it */
	g = pubd_groups_by_name(c->srv->groups, r.group.ptr, r.group.len);
	if (!g) {
		reply_error(c, r.req_id, PUB_ERR_NO_GROUP, "no group named '%.*s' in pubd's configuration",
			    (int)r.group.len, r.group.ptr);
		return;
	}
	if (!sub) {
		if (!client_find_sub(c, g, &idx)) {
			reply_error(c, r.req_id, PUB_ERR_STATE, "not subscribed to '%s'", g->name);
			return;
		}
		client_unsubscribe(c, idx);
		reply_ok(c, r.req_id);
		return;
	}
	if (client_find_sub(c, g, NULL)) {
		reply_ok(c, r.req_id); /* idempotent */
		return;
	}
	if (!may(c, &g->cfg->subscribe)) {
		log_notice("client %u (pid %d uid %u): subscribe to %s denied by its ACL", c->id, (int)c->pid,
			   (unsigned)c->uid, g->name);
		g->sub_denied++;
		reply_error(c, r.req_id, PUB_ERR_ACL, "uid %u may not subscribe to '%s' (group's subscribe ACL)",
			    (unsigned)c->uid, g->name);
		return;
	}
	if (c->nsubs == c->subs_cap) {
		unsigned cap = c->subs_cap ? c->subs_cap * 2 : 4;

		v = realloc(c->subs, cap * sizeof(*v));
		if (!v)
			goto nomem;
		c->subs = v;
		c->subs_cap = cap;
	}
	s = pubd_group_sub_add(g, c);
	if (!s)
		goto nomem;
	/* The first subscriber starts the fabric receiving; answered after,
	 * so what follows the reply reaches the subscriber. */
	err = c->srv->ops->subscribers_changed(c->srv->ctx, g);
	if (err < 0) {
		pubd_group_sub_remove(g, s);
		reply_error(c, r.req_id, PUB_ERR_INTERNAL,
			    "pubd could not start receiving group '%s' from the fabric: %s", g->name, strerror(-err));
		return;
	}
	c->subs[c->nsubs++] = s;
	reply_ok(c, r.req_id);
	return;
nomem:
	reply_error(c, r.req_id, PUB_ERR_INTERNAL, "out of memory");
}

/* The checks every publish passes; on refusal the reply is sent and the
 * message counted, and NULL returned. */
static struct pubd_group *publish_admit(struct pubd_client *c, uint32_t req_id, const char *name, size_t nlen,
					size_t plen)
{
	struct pubd_ipc *srv = c->srv;
	struct pubd_group *g = pubd_groups_by_name(srv->groups, name, nlen);

	if (!g) {
		pubd_drops_add(&c->drops, PUB_DROP_NO_GROUP, 1);
		pubd_drops_add(srv->drops, PUB_DROP_NO_GROUP, 1);
		srv->counters[PUBD_CTR_MSG_DROPPED]++;
		reply_error(c, req_id, PUB_ERR_NO_GROUP, "no group named '%.*s' in pubd's configuration", (int)nlen,
			    name);
		return NULL;
	}
	if (!may(c, &g->cfg->publish)) {
		pubd_drops_add(&c->drops, PUB_DROP_ACL_DENIED, 1);
		pubd_drops_add(&g->drops, PUB_DROP_ACL_DENIED, 1);
		srv->counters[PUBD_CTR_MSG_DROPPED]++;
		log_debug("client %u uid %u: publish to %s denied by its ACL", c->id, (unsigned)c->uid, g->name);
		reply_error(c, req_id, PUB_ERR_ACL, "uid %u may not publish to '%s' (group's publish ACL)",
			    (unsigned)c->uid, g->name);
		return NULL;
	}
	if (plen > srv->cfg->max_message_size) {
		pubd_drops_add(&c->drops, PUB_DROP_TOO_LARGE, 1);
		pubd_drops_add(&g->drops, PUB_DROP_TOO_LARGE, 1);
		srv->counters[PUBD_CTR_MSG_DROPPED]++;
		reply_error(c, req_id, PUB_ERR_TOO_LARGE, "message of %zu bytes exceeds limits.max_message_size (%llu)",
			    plen, (unsigned long long)srv->cfg->max_message_size);
		return NULL;
	}
	if (g->raw && plen > srv->mtu) {
		pubd_drops_add(&c->drops, PUB_DROP_MTU_EXCEEDED, 1);
		pubd_drops_add(&g->drops, PUB_DROP_MTU_EXCEEDED, 1);
		srv->counters[PUBD_CTR_MSG_DROPPED]++;
		reply_error(c, req_id, PUB_ERR_TOO_LARGE,
			    "message of %zu bytes exceeds the fabric MTU (%u) of raw group '%s' (raw groups cannot "
			    "fragment)",
			    plen, srv->mtu, g->name);
		return NULL;
	}
	return g;
}

static void publish_accept(struct pubd_client *c, uint32_t req_id, struct pubd_group *g, struct pubd_msgbuf *m)
{
	struct pubd_pubstat *ps = client_pubstat(c, g);

	if (ps) {
		ps->published++;
		ps->bytes += m->len;
	}
	c->published++;
	if (c->srv->ops->publish(c->srv->ctx, c, g, m))
		c->tx_pending++;
	if (req_id)
		reply_ok(c, req_id);
	if (c->tx_pending >= TX_PENDING_HIGH)
		pause_client(c);
}

static void handle_publish(struct pubd_client *c, const uint8_t *body, size_t len)
{
	struct pub_msg_publish p;
	struct pubd_group *g;
	struct pubd_msgbuf *m;

	if (pub_proto_dec_publish(body, len, &p) < 0) {
		protocol_error(c, "malformed PUBLISH");
		return;
	}
	g = publish_admit(c, p.req_id, p.group.ptr, p.group.len, p.payload_len);
	if (!g)
		return;
	m = pubd_msgbuf_alloc(p.payload_len);
	if (!m) {
		reply_error(c, p.req_id, PUB_ERR_INTERNAL, "out of memory");
		return;
	}
	memcpy(m->data, p.payload, p.payload_len);
	publish_accept(c, p.req_id, g, m);
	pubd_msgbuf_put(m);
}

/* RELOAD: re-read the configuration; OK, or ERROR with what is wrong in it.
 * Only root and pubd's own user may. */
static void handle_reload(struct pubd_client *c, uint32_t req_id)
{
	char err[2048];

	if (c->uid != 0 && c->uid != getuid()) {
		reply_error(c, req_id, PUB_ERR_ACL, "only root or pubd's own user may reload");
		return;
	}
	err[0] = 0;
	if (c->srv->ops->reload(c->srv->ctx, err, sizeof(err)) < 0) {
		reply_error(c, req_id, PUB_ERR_CONFIG, "%s", err[0] ? err : "reload failed");
		return;
	}
	reply_ok(c, req_id);
}

/* Returns false when the reply cannot be queued yet (not within the client
 * budget): the client is paused and the QUERY handled again later (only a
 * reply over QUERY_BUDGET_WAIT can wait: a RELOAD's is small, so it never
 * runs twice). */
static bool handle_query(struct pubd_client *c, const uint8_t *body, size_t len)
{
	struct pub_table_builder b = {.grow = pub_table_grow_realloc};
	struct pub_msg_query q;
	bool handled = true;
	char err[2048];
	uint8_t ok[16];
	long n;
	int r;

	if (pub_proto_dec_query(body, len, &q) < 0) {
		protocol_error(c, "malformed QUERY");
		return true;
	}
	if (q.kind == PUB_QUERY_RELOAD) {
		/* A command that travels as a QUERY kind on the wire. */
		handle_reload(c, q.req_id);
		return true;
	}
	err[0] = 0;
	r = c->srv->ops->query(c->srv->ctx, &b, q.req_id, q.kind, q.arg.ptr, q.arg.len, err, sizeof(err));
	if (r < 0) {
		reply_error(c, q.req_id, (uint32_t)-r, "%s", err[0] ? err : "query failed");
		goto out;
	}
	n = pub_proto_enc_ok(ok, sizeof(ok), q.req_id);
	if (b.len + (size_t)n > c->srv->cfg->client_buffer_budget) {
		reply_error(c, q.req_id, PUB_ERR_INTERNAL,
			    "reply of %zu bytes exceeds limits.client_buffer_budget (%llu bytes)", b.len + (size_t)n,
			    (unsigned long long)c->srv->cfg->client_buffer_budget);
		goto out;
	}
	if (b.err || (b.len + (size_t)n > b.cap && pub_table_grow_realloc(&b, b.len + (size_t)n) < 0)) {
		reply_error(c, q.req_id, PUB_ERR_INTERNAL, "out of memory");
		goto out;
	}
	if (!reply_fits(c, b.len + (size_t)n)) {
		pause_for_budget(c, b.len + (size_t)n);
		handled = false;
		goto out;
	}
	memcpy(b.buf + b.len, ok, (size_t)n);
	b.len += (size_t)n;
	queue_frame(c, b.buf, b.len);
out:
	free(b.buf);
	return handled;
}

/* Returns false when the frame must be handled again later (see handle_query). */
static bool handle_frame(struct pubd_client *c, uint8_t type, const uint8_t *body, size_t len)
{
	if (!c->hello && type != PUB_FRAME_HELLO) {
		protocol_error(c, "first frame must be HELLO");
		return true;
	}
	switch (type) {
	case PUB_FRAME_HELLO:
		handle_hello(c, body, len);
		break;
	case PUB_FRAME_SUBSCRIBE:
		handle_subscribe(c, body, len, true);
		break;
	case PUB_FRAME_UNSUBSCRIBE:
		handle_subscribe(c, body, len, false);
		break;
	case PUB_FRAME_PUBLISH:
		handle_publish(c, body, len);
		break;
	case PUB_FRAME_QUERY:
		return handle_query(c, body, len);
	default:
		protocol_error(c, "frame type not valid from a client");
		break;
	}
	return true;
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
	size_t nlen, fixed, plen, have;
	uint32_t req_id;
	struct pubd_group *g;

	if (avail < PUB_PROTO_HDR_LEN + 5)
		return 0;
	nlen = p[PUB_PROTO_HDR_LEN + 4];
	fixed = 5 + nlen;
	if (body_len < fixed)
		return -1;
	if (avail < PUB_PROTO_HDR_LEN + fixed)
		return 0;
	plen = body_len - fixed;
	memcpy(&req_id, p + PUB_PROTO_HDR_LEN, 4);
	req_id = le32toh(req_id);
	have = avail - PUB_PROTO_HDR_LEN - fixed;
	if (have > plen)
		have = plen;
	g = publish_admit(c, req_id, (const char *)p + PUB_PROTO_HDR_LEN + 5, nlen, plen);
	if (g && plen > srv->cfg->client_buffer_budget) {
		pubd_drops_add(&c->drops, PUB_DROP_CLIENT_BUDGET, 1);
		pubd_drops_add(&g->drops, PUB_DROP_CLIENT_BUDGET, 1);
		srv->counters[PUBD_CTR_MSG_DROPPED]++;
		reply_error(c, req_id, PUB_ERR_TOO_LARGE,
			    "message of %zu bytes can never fit limits.client_buffer_budget (%llu bytes)", plen,
			    (unsigned long long)srv->cfg->client_buffer_budget);
		g = NULL;
	}
	if (!g) {
		c->skip = plen - have; /* refused, counted and answered */
		return (long)(PUB_PROTO_HDR_LEN + fixed + have);
	}
	if (!budget_take(srv, plen)) {
		pause_for_budget(c, plen);
		return 0;
	}
	c->big = pubd_msgbuf_alloc(plen);
	if (!c->big) {
		budget_give(srv, plen);
		return -1;
	}
	c->big_req_id = req_id;
	memcpy(c->big_group, p + PUB_PROTO_HDR_LEN + 5, nlen);
	c->big_group_len = nlen;
	memcpy(c->big->data, p + PUB_PROTO_HDR_LEN + fixed, have);
	c->big_have = have;
	return (long)(PUB_PROTO_HDR_LEN + fixed + have);
}

static void finish_big(struct pubd_client *c)
{
	struct pubd_msgbuf *m = c->big;
	struct pubd_group *g;

	c->big = NULL;
	budget_give(c->srv, m->len);
	/* Checked again: a reload may have changed the group or its ACL. */
	g = publish_admit(c, c->big_req_id, c->big_group, c->big_group_len, m->len);
	if (g)
		publish_accept(c, c->big_req_id, g, m);
	pubd_msgbuf_put(m);
}

/* Grow rbuf to RBUF_CAP if the client budget has room. */
static bool rbuf_grow(struct pubd_client *c)
{
	size_t more = RBUF_CAP - c->rcap;
	uint8_t *b;

	if (!c->hello || !more || !budget_take(c->srv, more))
		return false;
	b = realloc(c->rbuf, RBUF_CAP);
	if (!b) {
		budget_give(c->srv, more);
		return false;
	}
	c->rbuf = b;
	c->rcap = RBUF_CAP;
	return true;
}

/* Handle every whole frame in rbuf (until paused or closing). */
static void client_parse(struct pubd_client *c)
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
			protocol_error(c, "invalid frame header");
			return;
		}
		if (r == 0 && c->rlen - off < PUB_PROTO_HDR_LEN)
			break; /* more bytes will come */
		/* Judged on the header, before anything of the body is kept:
		 * nothing but a small HELLO is buffered for an unknown client. */
		if (!c->hello && type != PUB_FRAME_HELLO) {
			protocol_error(c, "first frame must be HELLO");
			return;
		}
		if (!c->hello && PUB_PROTO_HDR_LEN + (size_t)body_len > RBUF_MIN) {
			protocol_error(c, "HELLO too large");
			return;
		}
		c->expect_big = type == PUB_FRAME_PUBLISH && body_len >= BIG_MIN;
		if (r == 0) {
			if (type != PUB_FRAME_PUBLISH && PUB_PROTO_HDR_LEN + (size_t)body_len > RBUF_CAP) {
				protocol_error(c, "frame too large");
				return;
			}
			if (type != PUB_FRAME_PUBLISH || body_len < BIG_MIN)
				break; /* more bytes will come and fit (rbuf grows) */
			used = start_big(c, c->rbuf + off, c->rlen - off, body_len);
			if (used < 0) {
				protocol_error(c, "malformed PUBLISH");
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
		if (type == PUB_FRAME_QUERY && c->out_ctrl_bytes && !budget_fits(c->srv, QUERY_BUDGET_WAIT)) {
			pause_for_reply(c);
			break;
		}
		if (!handle_frame(c, type, body, body_len))
			break;
		off += PUB_PROTO_HDR_LEN + body_len;
		if (c->out_ctrl_bytes >= CTRL_BYTES_HIGH)
			pause_client(c);
	}
	if (c->closing)
		return;
	if (off) {
		memmove(c->rbuf, c->rbuf + off, c->rlen - off);
		c->rlen -= off;
	}
	update_watch(c);
}

static void client_read(struct pubd_client *c)
{
	/* Where refused bodies go: one buffer for all (single-threaded). */
	static uint8_t discard[64 * 1024];
	size_t budget = READ_BUDGET;
	ssize_t n;

	while (budget && !c->paused && !c->closing) {
		if (c->skip) {
			n = read(c->fd, discard, c->skip < sizeof(discard) ? c->skip : sizeof(discard));
			if (n > 0) {
				c->skip -= (size_t)n;
				budget -= (size_t)n > budget ? budget : (size_t)n;
				if (!c->skip)
					client_parse(c);
				continue;
			}
		} else if (c->big) {
			/* The rest of the body into its buffer, and in the same
			 * call the start of what follows into rbuf. */
			size_t want = c->big->len - c->big_have, tail = c->rcap - c->rlen;
			struct iovec iov[2] = {
				{c->big->data + c->big_have, want},
				{c->rbuf + c->rlen, tail < BIG_TAIL_READ ? tail : BIG_TAIL_READ},
			};

			n = readv(c->fd, iov, iov[1].iov_len ? 2 : 1);
			if (n > 0) {
				size_t body = (size_t)n < want ? (size_t)n : want;

				c->big_have += body;
				c->rlen += (size_t)n - body;
				c->read_since_tick = true;
				budget -= (size_t)n > budget ? budget : (size_t)n;
				if (c->big_have == c->big->len) {
					finish_big(c);
					client_parse(c);
				}
				continue;
			}
		} else {
			/* Parsing leaves a full buffer only when it is paused (then
			 * we are not here), the buffer is still small, or a frame
			 * can never fit; a read of 0 bytes would look like end of
			 * connection. */
			if (c->rlen == c->rcap) {
				if (c->rcap >= RBUF_CAP || !c->hello) {
					protocol_error(c, "frame does not fit the receive buffer");
					return;
				}
				if (!rbuf_grow(c)) {
					pause_for_budget(c, RBUF_CAP - c->rcap);
					update_watch(c);
					return;
				}
			}
			size_t room = c->rcap - c->rlen;

			if (c->expect_big && room > BIG_TAIL_READ)
				room = BIG_TAIL_READ;
			n = read(c->fd, c->rbuf + c->rlen, room);
			if (n > 0) {
				c->rlen += (size_t)n;
				c->read_since_tick = true;
				budget -= (size_t)n > budget ? budget : (size_t)n;
				/* A small buffer filled by one read: a busy client
				 * (not the small bites taken between big bodies). */
				if ((size_t)n == room && c->rcap < RBUF_CAP && !c->expect_big)
					rbuf_grow(c);
				client_parse(c);
				continue;
			}
		}
		if (n == 0) {
			log_debug("client %u: disconnected", c->id);
			client_close(c);
			return;
		}
		if (errno == EAGAIN || errno == EINTR)
			break;
		if (errno == ECONNRESET && !c->gone) {
			client_hangup(c);
			continue;
		}
		log_info("client %u: read failed: %s", c->id, strerror(errno));
		client_close(c);
		return;
	}
}

static void on_client(void *ctx, uint32_t events)
{
	struct pubd_client *c = ctx;

	if (events & EPOLLOUT) {
		if (client_flush(c) || c->gone)
			return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		if (c->closing) {
			if (events & (EPOLLHUP | EPOLLERR))
				client_close(c);
			return;
		}
		if (c->paused) {
			/* Its frames still in rbuf and the socket are read
			 * once the pause ends, not thrown away now. */
			if (events & (EPOLLHUP | EPOLLERR))
				client_hangup(c);
			return;
		}
		client_read(c);
	}
}

static void client_close(struct pubd_client *c)
{
	struct pubd_ipc *srv = c->srv;
	struct pubd_client **p;

	/* Deliveries still queued, a half-written one included, never reach
	 * the client: each is counted against its subscription. */
	drop_output(c);
	if (c->unsub_deferred) {
		c->unsub_deferred = false;
		srv->ndeferred--;
	}
	while (c->nsubs)
		client_unsubscribe(c, c->nsubs - 1);
	if (c->tx_pending)
		srv->ops->client_closed(srv->ctx, c, c->tx_pending);
	c->tx_pending = 0;
	if (c->paused)
		srv->npaused--;
	if (c->gone)
		srv->ngone--;
	if (c->big)
		budget_give(srv, c->big->len);
	budget_give(srv, c->rcap - RBUF_MIN);
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
	pubd_loop_unwatch(c->watch);
	close(c->fd);
	pubd_msgbuf_put(c->big);
	free(c->rbuf);
	free(c->subs);
	free(c->pubs);
	free(c->sup_gids);
	free(c);
}

static void read_peer(struct pubd_client *c)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	gid_t *gids = NULL;

	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
		c->pid = cred.pid;
		c->uid = cred.uid;
		c->gid = cred.gid;
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

/* Repeating accept failures and refusals: one log line per period, with
 * the counts since the last, never one per connection. */
static void accept_log(struct pubd_ipc *srv, bool now)
{
	uint64_t errs = srv->counters[PUBD_CTR_ACCEPT_ERRORS] - srv->accept_fail_logged;
	uint64_t refused = srv->counters[PUBD_CTR_CLIENTS_REFUSED] - srv->refused_logged;
	uint64_t t = pubd_now_ns();

	if (!errs && !refused)
		return;
	if (!now && srv->last_accept_log_ns && t - srv->last_accept_log_ns < ACCEPT_LOG_NS)
		return;
	log_warn("clients: %llu connections refused (limits.max_clients %u, or out of fds), %llu failed accepts "
		 "in the last %llu s; %u connected",
		 (unsigned long long)refused, srv->cfg->max_clients, (unsigned long long)errs,
		 (unsigned long long)(srv->last_accept_log_ns ? (t - srv->last_accept_log_ns) / 1000000000ull : 0),
		 srv->nclients);
	srv->accept_fail_logged = srv->counters[PUBD_CTR_ACCEPT_ERRORS];
	srv->refused_logged = srv->counters[PUBD_CTR_CLIENTS_REFUSED];
	srv->last_accept_log_ns = t;
}

/* Tell a connection pubd will not serve why, and close it. */
static void refuse(struct pubd_ipc *srv, int fd, const char *why)
{
	uint8_t buf[256];
	long n = pub_proto_enc_error(buf, sizeof(buf), 0, PUB_ERR_INTERNAL, why, strlen(why));

	/* One non-blocking attempt: the socket buffer of a new connection is
	 * empty, so it fits unless something is very wrong. */
	if (n > 0 && send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		(void)0;
	close(fd);
	srv->counters[PUBD_CTR_CLIENTS_REFUSED]++;
	accept_log(srv, false);
}

/*
 * accept() failed with err. Out of fds (EMFILE): the reserve fd is given up
 * for a moment to accept the connection and close it, so it neither waits in
 * the backlog nor keeps the listener readable (a busy loop). Anything else
 * that repeats (ENFILE, ENOBUFS, ENOMEM): stop polling the listener until
 * the next tick. Returns true to try accepting again.
 */
static bool accept_failed(struct pubd_ipc *srv, int err)
{
	int fd;

	if (err == EAGAIN || err == EINTR)
		return false;
	if (err == ECONNABORTED || err == EPROTO)
		return true; /* that connection is gone; others may wait */
	srv->counters[PUBD_CTR_ACCEPT_ERRORS]++;
	if (err == EMFILE && srv->reserve_fd >= 0) {
		close(srv->reserve_fd);
		fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			refuse(srv, fd, "pubd is out of file descriptors; try again later");
		srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && srv->reserve_fd >= 0)
			return true;
	}
	if (!srv->listen_paused) {
		srv->listen_paused = true;
		pubd_loop_watch_mod(srv->listen_watch, 0);
	}
	accept_log(srv, false);
	return false;
}

/* Every ordinary slot is taken: may this connection have one of the
 * operator's OPERATOR_RESERVE? Only root and pubd's own user, by the
 * kernel's word for who connected (SO_PEERCRED). */
static bool operator_reserve_admits(const struct pubd_ipc *srv, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (srv->nclients >= srv->cfg->max_clients + OPERATOR_RESERVE)
		return false;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == 0 || cred.uid == getuid();
}

static void on_accept(void *ctx, uint32_t events)
{
	struct pubd_ipc *srv = ctx;
	struct pubd_client *c;
	int fd;

	(void)events;
	for (;;) {
		fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (accept_failed(srv, errno))
				continue;
			return;
		}
		if (srv->nclients >= srv->cfg->max_clients && !operator_reserve_admits(srv, fd)) {
			refuse(srv, fd, "pubd has limits.max_clients connections already; try again later");
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c || !(c->rbuf = malloc(RBUF_MIN))) {
			log_err("out of memory accepting a client");
			free(c);
			close(fd);
			continue;
		}
		c->srv = srv;
		c->fd = fd;
		c->rcap = RBUF_MIN;
		c->id = ++srv->next_id;
		c->connected_ns = pubd_now_ns();
		read_peer(c);
		c->watch_events = EPOLLIN;
		c->watch = pubd_loop_watch(srv->loop, fd, EPOLLIN, on_client, c);
		if (!c->watch) {
			log_err("cannot watch client fd: %s", strerror(errno));
			free(c->rbuf);
			free(c->sup_gids);
			free(c);
			close(fd);
			continue;
		}
		c->next = srv->clients;
		if (c->next)
			c->next->prev = c;
		srv->clients = c;
		srv->nclients++;
		srv->counters[PUBD_CTR_CLIENTS_ACCEPTED]++;
	}
}

static int make_parent_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int listen_on_path(struct pubd_ipc *srv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = srv->cfg->socket_path;
	struct stat st;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_err("daemon.socket %s: path longer than %zu bytes", path, sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	err = make_parent_dir(path);
	if (err < 0) {
		log_err("daemon.socket %s: cannot create its directory: %s", path, strerror(-err));
		return err;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A socket left by a daemon that died is stale unless someone answers.
	 * The probe never blocks: a Unix connect either completes at once, is
	 * refused (nobody listens: stale), or finds the backlog full (EAGAIN:
	 * a daemon is there but stuck, SIGSTOPped or overloaded). Only a
	 * refusal lets us take the path over. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		err = probe < 0 ? errno : connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
		if (probe >= 0)
			close(probe);
		if (err != ECONNREFUSED && err != ENOENT) {
			close(fd);
			if (err == 0 || err == EINPROGRESS)
				log_err("daemon.socket %s: another pubd is listening there", path);
			else if (err == EAGAIN)
				log_err("daemon.socket %s: another process listens there but does not accept "
					"connections (stuck or stopped?); not taking it over",
					path);
			else
				log_err("daemon.socket %s: cannot tell whether another pubd listens there: %s", path,
					strerror(err));
			return -EADDRINUSE;
		}
		unlink(path);
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		log_err("daemon.socket %s: bind: %s", path, strerror(errno));
		close(fd);
		return err;
	}
	if (chmod(path, srv->cfg->socket_mode) < 0)
		log_warn("daemon.socket %s: chmod %o: %s", path, srv->cfg->socket_mode, strerror(errno));
	if (listen(fd, 128) < 0) {
		err = -errno;
		close(fd);
		unlink(path);
		return err;
	}
	srv->path = strdup(path);
	return fd;
}

int pubd_ipc_init(struct pubd_ipc *srv, const struct pubd_ipc_env *env)
{
	int n, fd = -1;

	memset(srv, 0, sizeof(*srv));
	srv->loop = env->loop;
	srv->cfg = env->cfg;
	srv->groups = env->groups;
	srv->counters = env->counters;
	srv->drops = env->drops;
	srv->ops = env->ops;
	srv->ctx = env->ctx;
	srv->fabric_name = "none";
	srv->listen_fd = -1;
	/* Held so that, out of fds, a connection can still be accepted and
	 * closed (see accept_failed). */
	srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* Socket activation: systemd hands us the listening socket. */
	n = sd_listen_fds(1);
	if (n > 1) {
		log_err("systemd passed %d sockets; pubd takes one", n);
		return -EINVAL;
	}
	if (n == 1) {
		fd = SD_LISTEN_FDS_START;
		if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
			log_err("the socket systemd passed is not a listening Unix stream socket");
			return -EINVAL;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		srv->listen_from_systemd = true;
		log_info("listening on the socket passed by systemd");
	} else {
		fd = listen_on_path(srv);
		if (fd < 0)
			return fd;
		log_info("listening on %s (mode %04o)", srv->path, srv->cfg->socket_mode);
	}
	srv->listen_fd = fd;
	srv->listen_watch = pubd_loop_watch(srv->loop, fd, EPOLLIN, on_accept, srv);
	if (!srv->listen_watch)
		return -errno;
	return 0;
}

void pubd_ipc_tick(struct pubd_ipc *srv, uint64_t now_ns)
{
	struct pubd_client *c, *next;

	for (c = srv->clients; c; c = next) {
		next = c->next;
		if (c->closing && now_ns >= c->close_deadline_ns) {
			log_info("client %u (pid %d, %s): closed without reading its last reply", c->id, (int)c->pid,
				 c->name);
			client_close(c);
			continue;
		}
		/* Idle receive buffers go back to the budget. */
		if (!c->read_since_tick && c->rcap > RBUF_MIN && c->rlen == 0 && !c->big) {
			uint8_t *b = realloc(c->rbuf, RBUF_MIN);

			if (b) {
				budget_give(srv, c->rcap - RBUF_MIN);
				c->rbuf = b;
				c->rcap = RBUF_MIN;
			}
		}
		c->read_since_tick = false;
	}
	/* Accepting again after a back-off; the reserve fd back if we can. */
	if (srv->reserve_fd < 0)
		srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (srv->listen_paused && srv->listen_watch) {
		srv->listen_paused = false;
		pubd_loop_watch_mod(srv->listen_watch, EPOLLIN);
	}
	accept_log(srv, false);
}

/* PUBLISH frames read from c and not handled (pubd is stopping): counted
 * client_gone, whole frames in rbuf and a big body being read. */
static uint64_t count_unhandled(struct pubd_client *c)
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

void pubd_ipc_shutdown(struct pubd_ipc *srv)
{
	struct pubd_client *c, *next;
	uint64_t n, lost = 0;

	for (c = srv->clients; c; c = next) {
		next = c->next;
		n = count_unhandled(c);
		if (n) {
			pubd_drops_add(&c->drops, PUB_DROP_CLIENT_GONE, n);
			pubd_drops_add(srv->drops, PUB_DROP_CLIENT_GONE, n);
			srv->counters[PUBD_CTR_MSG_DROPPED] += n;
			lost += n;
		}
		if (!c->closing)
			reply_error(c, 0, PUB_ERR_SHUTDOWN, "pubd is stopping");
		c->closing = true;
		c->close_deadline_ns = 0;
		/* One non-blocking attempt; a client that is not reading loses it. */
		if (!client_flush(c))
			client_close(c);
	}
	srv->dirty = NULL;
	if (lost)
		log_warn("stopping: %llu messages read from publishers (paused by back-pressure) were not published "
			 "(client_gone)",
			 (unsigned long long)lost);
}

void pubd_ipc_close(struct pubd_ipc *srv)
{
	struct pubd_out *o;

	while (srv->clients)
		client_close(srv->clients);
	if (srv->listen_watch)
		pubd_loop_unwatch(srv->listen_watch);
	srv->listen_watch = NULL;
	if (srv->listen_fd >= 0) {
		close(srv->listen_fd);
		if (srv->path && !srv->listen_from_systemd)
			unlink(srv->path);
	}
	srv->listen_fd = -1;
	if (srv->reserve_fd >= 0)
		close(srv->reserve_fd);
	srv->reserve_fd = -1;
	free(srv->path);
	srv->path = NULL;
	while ((o = srv->free_outs)) {
		srv->free_outs = o->next;
		free(o);
	}
}

void pubd_ipc_set_fabric(struct pubd_ipc *srv, uint32_t mtu, uint64_t source_id, const char *fabric_name)
{
	srv->mtu = mtu;
	srv->source_id = source_id;
	srv->fabric_name = fabric_name;
}

/* ---- the clients as queries see them ---- */

const struct pubd_client *pubd_ipc_clients_first(const struct pubd_ipc *srv)
{
	return srv->clients;
}

const struct pubd_client *pubd_ipc_clients_next(const struct pubd_client *c)
{
	return c->next;
}

void pubd_ipc_client_info(const struct pubd_client *c, struct pubd_client_info *info)
{
	info->id = c->id;
	info->pid = c->pid;
	info->uid = c->uid;
	info->gid = c->gid;
	info->name = c->name;
	info->connected_ns = c->connected_ns;
	info->published = c->published;
	info->delivered = c->delivered;
	info->drops = &c->drops;
	info->queued = c->out_delivers;
	info->paused = c->paused;
	info->subs = c->subs;
	info->nsubs = c->nsubs;
	info->pubs = c->pubs;
	info->npubs = c->npubs;
}

unsigned pubd_ipc_queued_for(const struct pubd_sub *s)
{
	const struct pubd_out *o;
	unsigned n = 0;

	for (o = s->client->out_head; o; o = o->next)
		if (o->sub == s)
			n++;
	return n;
}

bool pubd_ipc_listening(const struct pubd_ipc *srv)
{
	return srv->listen_fd >= 0;
}

const char *pubd_ipc_path(const struct pubd_ipc *srv)
{
	return srv->path;
}
