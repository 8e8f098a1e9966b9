/* SPDX-License-Identifier: MIT */
/*
 * The requests a client sends, one handler per frame type (dispatched from
 * a table), and the subscriptions they make.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "proto.h"
#include "server_internal.h"

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
 * dropped (sub_disconnect), as are the messages its group holds back for
 * order; one being written completes. */
void srv_client_unsubscribe(struct pubd_client *c, unsigned idx)
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
			 * stays in out_delivers until written: srv_out_unlink),
			 * but still against its group. */
			o->sub = NULL;
			o->orphan_of = s->group;
			prev = o;
			continue;
		}
		srv_out_unlink(c, prev, o);
		srv_count_sub_drop(srv, s, PUB_DROP_SUB_DISCONNECT, 1);
		srv_out_release(srv, o);
	}
	/* Still waiting for the fabric: the SUBSCRIBE did succeed, and is
	 * answered before whatever ends it. */
	if (s->reply_pending && !c->closing && !c->gone)
		srv_reply_ok(c, s->reply_req_id);
	c->subs[idx] = c->subs[--c->nsubs];
	g = s->group;
	/* What its group holds back for order would have come to it next,
	 * like its queue: lost to it now. */
	if (g->order_held)
		srv_count_sub_drop(srv, s, PUB_DROP_SUB_DISCONNECT, g->order_held);
	srv_glog_leave(srv, s);
	srv_direct_leave(srv, s);
	pubd_group_sub_remove(g, s);
	srv->ops->subscribers_changed(srv->ctx, g); /* the last one gone: stop receiving */
}

void pubd_ipc_group_removed(struct pubd_ipc *srv, struct pubd_group *g, bool remade)
{
	struct pubd_client *c;
	unsigned idx;

	srv->admit_gen++; /* no publish log may name g from memory now */
	srv_direct_retire_group(srv, g);
	/* Its group log is retired before its readers leave, as for an ACL
	 * change: a reader that leaves a retired log may hold a message there
	 * (pub_recv's data stays valid until the next pub_recv), and the log
	 * is kept for it until its client closes. Left first, the log had no
	 * reader when retired, and its pages were punched under the message. */
	srv_glog_group_removed(srv, g);
	for (c = srv->clients; c; c = c->next) {
		struct pubd_pubstat *p;
		struct pubd_out *o;
		unsigned i;

		if (client_find_sub(c, g, &idx)) {
			srv_client_unsubscribe(c, idx);
			/* Made anew (its address, scope or mode changed): the
			 * subscriber's group is still there by its name, and
			 * libpub subscribes to it again. */
			if (remade)
				srv_reply_error(c, 0, PUB_ERR_REMADE,
						"group %s was made anew by a reload (address, scope or mode changed); "
						"subscribe again",
						g->name);
			else
				srv_reply_error(c, 0, PUB_ERR_NO_GROUP, "group %s was removed from the configuration",
						g->name);
		}
		/* A delivery half written when its subscription ended (just
		 * now, or before) counts in the daemon scope from now on: g's
		 * counters go with it. */
		for (o = c->out_head; o; o = o->next)
			if (o->orphan_of == g)
				o->orphan_of = NULL;
		for (i = 0; i < c->npubs; i++) {
			p = &c->pubs[i];
			if (p->group == g) {
				c->pubs[i] = c->pubs[--c->npubs];
				break;
			}
		}
	}
}

void pubd_ipc_group_listening(struct pubd_ipc *srv, struct pubd_group *g)
{
	struct pubd_client *c;
	struct pubd_sub *s;

	for (c = srv->clients; c; c = c->next) {
		s = client_find_sub(c, g, NULL);
		if (!s || !s->reply_pending)
			continue;
		s->reply_pending = false;
		if (!c->closing && !c->gone)
			srv_reply_ok(c, s->reply_req_id);
	}
}

/* ---- frame handlers ---- */
void pubd_ipc_acl_changing(struct pubd_ipc *srv, struct pubd_group *g, const struct pubd_group_config *next)
{
	(void)srv;
	srv_direct_acl_changing(g, next);
}

void pubd_ipc_acl_changed(struct pubd_ipc *srv, struct pubd_group *g, const struct pubd_group_config *was)
{
	struct pubd_client *c;
	unsigned i;

	srv->admit_gen++; /* every admission is made afresh under the new ACLs */
	/* A new group log first, if those who had the old one may differ;
	 * the direct logs' readers and writers may differ too. */
	srv_glog_acl_changed(srv, g);
	srv_direct_acl_changed(srv, g, was);
	for (c = srv->clients; c; c = c->next) {
		if (c->closing || c->gone)
			continue;
		if (client_find_sub(c, g, &i) && !srv_client_may(c, &g->cfg->subscribe)) {
			/* Client-supplied text (its HELLO name) stays out of the log. */
			log_notice("client %u (pid %d uid %u): subscription to %s ended: the reloaded subscribe ACL "
				   "no longer allows it",
				   c->id, (int)c->pid, (unsigned)c->uid, g->name);
			srv_client_unsubscribe(c, i);
			srv->counters[PUBD_CTR_ACL_REVOKED]++;
			srv_reply_error(
				c, 0, PUB_ERR_ACL,
				"subscription to '%s' ended: the reloaded subscribe ACL no longer allows uid %u",
				g->name, (unsigned)c->uid);
		}
		for (i = 0; i < c->npubs; i++) {
			if (c->pubs[i].group != g || srv_client_may(c, &g->cfg->publish))
				continue;
			/* Its next PUBLISH is refused (acl_denied); it is told now. */
			log_notice("client %u (pid %d uid %u): publishing to %s ended: the reloaded publish ACL no "
				   "longer allows it",
				   c->id, (int)c->pid, (unsigned)c->uid, g->name);
			c->pubs[i] = c->pubs[--c->npubs];
			srv->counters[PUBD_CTR_ACL_REVOKED]++;
			srv_reply_error(c, 0, PUB_ERR_ACL,
					"publishing to '%s' ended: the reloaded publish ACL no longer allows uid %u",
					g->name, (unsigned)c->uid);
			break;
		}
	}
}

/* WELCOME and, when the logs could be made, an SHM frame per log with its
 * fds, right behind it, in one write; plain WELCOME (the socket for
 * everything) when none could. */
static void welcome_with_log(struct pubd_client *c, struct pub_msg_welcome *w, uint32_t hello_flags)
{
	struct pub_msg_shm shm[3];
	uint8_t buf[600];
	int fds[7], err = -EINVAL;
	unsigned nlogs = 0, nfds = 0, i;
	long n, k;

	w->flags = 0;
	if (srv_publog_open(c, &shm[0], fds) == 0) {
		w->flags |= PUB_WELCOME_F_SHM;
		nlogs++;
		nfds += 3;
		if (srv_dlog_open(c, &shm[1], fds + 3) == 0) {
			w->flags |= PUB_WELCOME_F_SHM_DELIVER;
			nlogs++;
			nfds += 3;
			/* The direct path: the wake page, its one fd after the logs'. */
			if ((hello_flags & PUB_HELLO_F_DIRECT) && srv_direct_hello(c, &shm[2], &fds[6]) == 0) {
				w->flags |= PUB_WELCOME_F_DIRECT;
				nlogs++;
				nfds++;
			}
		}
	}
	n = pub_proto_enc_welcome(buf, sizeof(buf), w);
	if (!nlogs) {
		if (n > 0)
			srv_queue_frame(c, buf, (size_t)n);
		return;
	}
	for (i = 0; i < nlogs && n > 0; i++) {
		k = pub_proto_enc_shm(buf + n, sizeof(buf) - (size_t)n, &shm[i]);
		n = k > 0 ? n + k : -1;
	}
	if (n > 0)
		err = srv_send_fds(c, buf, (size_t)n, fds, nfds);
	for (i = 0; i < nlogs; i++)
		close(fds[3 * i]); /* the mappings stay; the client has its own fds now */
	if (err == 0) {
		log_debug("client %u: hello from %s (pid %d uid %u), %u shared-memory logs", c->id, c->name,
			  (int)c->pid, (unsigned)c->uid, nlogs);
		return;
	}
	srv_log_limited(c->srv, log_client, LOG_NOTICE,
			"client %u (pid %d): cannot hand over its shared-memory logs: %s; disconnecting", c->id,
			(int)c->pid, strerror(-err));
	srv_begin_close(c);
}

static bool handle_hello(struct pubd_client *c, const uint8_t *body, size_t len)
{
	struct pubd_ipc *srv = c->srv;
	struct pub_msg_welcome w = {0};
	struct pub_msg_hello h;
	uint8_t buf[600];
	long n;

	if (c->hello) {
		srv_protocol_error(c, "second HELLO");
		return true;
	}
	if (pub_proto_dec_hello(body, len, &h) < 0) {
		srv_protocol_error(c, "malformed HELLO");
		return true;
	}
	if (h.version != PUB_PROTO_VERSION) {
		srv_log_limited(srv, log_proto, LOG_NOTICE, "client %u: protocol version %u not supported", c->id,
				h.version);
		srv_begin_close(c);
		srv_reply_error(c, 0, PUB_ERR_VERSION, "protocol version %u not supported (pubd speaks %u)", h.version,
				PUB_PROTO_VERSION);
		return true;
	}
	snprintf(c->name, sizeof(c->name), "%.*s", (int)h.client_name.len, h.client_name.ptr);
	c->hello = true;
	srv_hello_wait_end(c);
	w.version = PUB_PROTO_VERSION;
	w.max_message = (uint32_t)srv->cfg->max_message_size;
	c->told_max_message = w.max_message;
	w.mtu = srv->mtu;
	w.client_id = c->id;
	w.source_id = srv->source_id;
	w.daemon_version = (struct pub_str){PUBD_VERSION, strlen(PUBD_VERSION)};
	w.fabric = (struct pub_str){srv->fabric_name, strlen(srv->fabric_name)};
	if ((h.flags & PUB_HELLO_F_SHM) && srv->cfg->shm && !c->out_head) {
		welcome_with_log(c, &w, h.flags);
		return true;
	}
	n = pub_proto_enc_welcome(buf, sizeof(buf), &w);
	if (n > 0)
		srv_queue_frame(c, buf, (size_t)n);
	log_debug("client %u: hello from %s (pid %d uid %u)", c->id, c->name, (int)c->pid, (unsigned)c->uid);
	return true;
}

/* SUBSCRIBE and UNSUBSCRIBE: decode, and find the group (NULL when there is
 * none, or nothing to answer: the reply, if any, is sent). */
static struct pubd_group *group_request(struct pubd_client *c, const uint8_t *body, size_t len, const char *what,
					uint32_t *req_id)
{
	struct pub_msg_group_req r;
	struct pubd_group *g;

	if (pub_proto_dec_group_req(body, len, &r) < 0) {
		srv_protocol_error(c, what);
		return NULL;
	}
	if (c->gone)
		return NULL; /* it hung up: nothing could reach it */
	*req_id = r.req_id;
	g = pubd_groups_by_name(c->srv->groups, r.group.ptr, r.group.len);
	if (!g)
		srv_reply_error(c, r.req_id, PUB_ERR_NO_GROUP, "no group named '%.*s' in pubd's configuration",
				(int)r.group.len, r.group.ptr);
	return g;
}

static bool handle_unsubscribe(struct pubd_client *c, const uint8_t *body, size_t len)
{
	struct pubd_group *g;
	uint32_t req_id;
	unsigned idx;

	g = group_request(c, body, len, "malformed UNSUBSCRIBE", &req_id);
	if (!g)
		return true;
	if (!client_find_sub(c, g, &idx)) {
		srv_reply_error(c, req_id, PUB_ERR_STATE, "not subscribed to '%s'", g->name);
		return true;
	}
	srv_client_unsubscribe(c, idx);
	srv_reply_ok(c, req_id);
	return true;
}

static bool handle_subscribe(struct pubd_client *c, const uint8_t *body, size_t len)
{
	struct pubd_group *g;
	struct pubd_sub *s, **v;
	uint32_t req_id;
	int err;

	g = group_request(c, body, len, "malformed SUBSCRIBE", &req_id);
	if (!g)
		return true;
	if (client_find_sub(c, g, NULL)) {
		srv_reply_ok(c, req_id); /* idempotent */
		return true;
	}
	if (!srv_client_may(c, &g->cfg->subscribe)) {
		srv_log_limited(c->srv, log_denied, LOG_NOTICE,
				"client %u (pid %d uid %u): subscribe to %s denied by its ACL", c->id, (int)c->pid,
				(unsigned)c->uid, g->name);
		g->sub_denied++;
		srv_reply_error(c, req_id, PUB_ERR_ACL, "uid %u may not subscribe to '%s' (group's subscribe ACL)",
				(unsigned)c->uid, g->name);
		return true;
	}
	if (c->nsubs == c->subs_cap) {
		unsigned cap = c->subs_cap ? c->subs_cap * 2 : 4;

		v = realloc(c->subs, cap * sizeof(*v));
		if (!v)
			goto nomem;
		c->subs = v;
		c->subs_cap = cap;
	}
	/* What a lazily read direct log holds was published before: it goes
	 * to the subscribers of then. */
	srv_direct_catch_up_group(g);
	s = pubd_group_sub_add(g, c);
	if (!s)
		goto nomem;
	/* The first subscriber starts the fabric receiving; answered after,
	 * so what follows the reply reaches the subscriber. */
	err = c->srv->ops->subscribers_changed(c->srv->ctx, g);
	if (err < 0) {
		pubd_group_sub_remove(g, s);
		srv_reply_error(c, req_id, PUB_ERR_INTERNAL,
				"pubd could not start receiving group '%s' from the fabric: %s", g->name,
				strerror(-err));
		return true;
	}
	c->subs[c->nsubs++] = s;
	/* Before the answer: the client maps the log as it reads it. */
	srv_glog_attach(c, s);
	srv_direct_attach(c, s);
	if (err > 0) {
		/* The fabric is becoming a full member: answered when it is
		 * (pubd_ipc_group_listening), so what follows the reply comes. */
		s->reply_pending = true;
		s->reply_req_id = req_id;
		return true;
	}
	srv_reply_ok(c, req_id);
	return true;
nomem:
	srv_reply_error(c, req_id, PUB_ERR_INTERNAL, "out of memory");
	return true;
}

static bool handle_publish(struct pubd_client *c, const uint8_t *body, size_t len)
{
	struct pub_msg_publish p;
	struct pubd_group *g;
	struct pubd_msgbuf *m;

	if (pub_proto_dec_publish(body, len, &p) < 0) {
		srv_protocol_error(c, "malformed PUBLISH");
		return true;
	}
	g = srv_publish_admit(c, p.req_id, p.group.ptr, p.group.len, p.payload_len);
	if (!g)
		return true;
	if (g->host) {
		srv_publish_accept_local(c, p.req_id, g, p.payload, p.payload_len);
		return true;
	}
	m = pubd_msgbuf_alloc(p.payload_len);
	if (!m) {
		srv_reply_error(c, p.req_id, PUB_ERR_INTERNAL, "out of memory");
		return true;
	}
	memcpy(m->data, p.payload, p.payload_len);
	srv_publish_accept(c, p.req_id, g, m);
	pubd_msgbuf_put(m);
	return true;
}

static bool handle_direct(struct pubd_client *c, const uint8_t *body, size_t len)
{
	struct pubd_group *g;
	uint32_t req_id;

	g = group_request(c, body, len, "malformed DIRECT", &req_id);
	if (g)
		srv_direct_open(c, req_id, g);
	return true;
}

/* RELOAD: re-read the configuration; OK, or ERROR with what is wrong in it.
 * Only root and pubd's own user may. */
static void handle_reload(struct pubd_client *c, uint32_t req_id)
{
	char err[2048];
	int r;

	if (c->uid != 0 && c->uid != getuid()) {
		srv_reply_error(c, req_id, PUB_ERR_ACL, "only root or pubd's own user may reload");
		return;
	}
	err[0] = 0;
	r = c->srv->ops->reload(c->srv->ctx, err, sizeof(err));
	if (r < 0) {
		srv_reply_error(c, req_id, PUB_ERR_CONFIG, "%s", err[0] ? err : "reload failed");
		return;
	}
	/* Applied, but not all of it: the operator hears what was not, not
	 * only the log (a tightened socket_mode, a metrics.listen in use). */
	if (r > 0) {
		srv_reply_error(c, req_id, PUB_ERR_PARTIAL, "%s", err);
		return;
	}
	srv_reply_ok(c, req_id);
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
		srv_protocol_error(c, "malformed QUERY");
		return true;
	}
	if (q.kind == PUB_QUERY_RELOAD) {
		/* A command that travels as a QUERY kind on the wire. */
		handle_reload(c, q.req_id);
		return true;
	}
	if (c->gone)
		return true; /* a read-only question nobody is left to hear: not worth building its tables */
	err[0] = 0;
	/* Counts as of now: what lazily read direct logs hold is read first. */
	srv_direct_catch_up(c->srv);
	r = c->srv->ops->query(c->srv->ctx, &b, q.req_id, q.kind, q.arg.ptr, q.arg.len, err, sizeof(err));
	if (r < 0) {
		srv_reply_error(c, q.req_id, (uint32_t)-r, "%s", err[0] ? err : "query failed");
		goto out;
	}
	n = pub_proto_enc_ok(ok, sizeof(ok), q.req_id);
	if (b.len + (size_t)n > c->srv->cfg->client_buffer_budget) {
		srv_reply_error(c, q.req_id, PUB_ERR_INTERNAL,
				"reply of %zu bytes exceeds limits.client_buffer_budget (%llu bytes)",
				b.len + (size_t)n, (unsigned long long)c->srv->cfg->client_buffer_budget);
		goto out;
	}
	if (b.err || (b.len + (size_t)n > b.cap && pub_table_grow_realloc(&b, b.len + (size_t)n) < 0)) {
		srv_reply_error(c, q.req_id, PUB_ERR_INTERNAL, "out of memory");
		goto out;
	}
	if (!srv_reply_fits(c, b.len + (size_t)n)) {
		srv_pause_for_budget(c, b.len + (size_t)n);
		handled = false;
		goto out;
	}
	memcpy(b.buf + b.len, ok, (size_t)n);
	b.len += (size_t)n;
	srv_queue_frame(c, b.buf, b.len);
out:
	free(b.buf);
	return handled;
}

/* Returns false when the frame must be handled again later (see handle_query). */
/* One handler per frame type a client may send. Each returns false when
 * the frame must be handled again later (handle_query). */
typedef bool (*frame_handler)(struct pubd_client *c, const uint8_t *body, size_t len);
static const frame_handler handlers[PUB_FRAME__MAX] = {
	[PUB_FRAME_HELLO] = handle_hello,
	[PUB_FRAME_SUBSCRIBE] = handle_subscribe,
	[PUB_FRAME_UNSUBSCRIBE] = handle_unsubscribe,
	[PUB_FRAME_PUBLISH] = handle_publish,
	[PUB_FRAME_QUERY] = handle_query,
	[PUB_FRAME_DIRECT] = handle_direct,
};

bool srv_handle_frame(struct pubd_client *c, uint8_t type, const uint8_t *body, size_t len)
{
	if (!c->hello && type != PUB_FRAME_HELLO) {
		srv_protocol_error(c, "first frame must be HELLO");
		return true;
	}
	if (type >= PUB_FRAME__MAX || !handlers[type]) {
		srv_protocol_error(c, "frame type not valid from a client");
		return true;
	}
	return handlers[type](c, body, len);
}

/* End every subscription of c. may_hold: pubd ends c before it hung up,
 * and libpub may hold a message where it lies in a group log: such logs
 * are retired first (glog.c), so that nothing is written over it. */
void srv_client_unsubscribe_all(struct pubd_client *c, bool may_hold)
{
	if (may_hold && c->dlog && !c->srv->exiting)
		srv_glog_client_ended(c);
	while (c->nsubs)
		srv_client_unsubscribe(c, c->nsubs - 1);
}

/*
 * Start disconnecting a client: its subscriptions end now (deliveries queued
 * and not yet started are counted as sub_disconnect), nothing more is read
 * from it, and what is queued (the reply saying why) gets CLOSE_GRACE_NS to
 * drain before the connection is closed regardless. Safe inside fan-out:
 * only this client's subscriptions go.
 */
void srv_begin_close(struct pubd_client *c)
{
	if (c->closing)
		return;
	srv_said_closed(c);
	srv_client_unsubscribe_all(c, !c->gone);
	c->closing = true;
	c->close_deadline_ns = pubd_now_ns() + CLOSE_GRACE_NS;
	srv_mark_dirty(c);
}

/* A malformed frame ends this client only: tell it why, then close. */
void srv_protocol_error(struct pubd_client *c, const char *why)
{
	srv_log_limited(c->srv, log_proto, LOG_NOTICE, "client %u (pid %d, %s): protocol error: %s; disconnecting",
			c->id, (int)c->pid, c->name[0] ? c->name : "?", why);
	c->srv->counters[PUBD_CTR_CLIENTS_REJECTED]++;
	srv_begin_close(c);
	srv_reply_error(c, 0, PUB_ERR_PROTO, "protocol error: %s", why);
	c->rlen = 0;
}
