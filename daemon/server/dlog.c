/* SPDX-License-Identifier: MIT */
/*
 * A client's deliver log: the shared-memory ring pubd writes that client's
 * deliveries into instead of its socket (common/shmlog.h, records in
 * common/deliverlog_format.h). The output queue, its bounds and the
 * slow-subscriber policy stay as they are: a delivery leaves the queue when
 * it is in the log, as it did when the socket took it, and the log's room
 * plays the socket buffer's part. pubd rings the client's doorbell only
 * when the client said it sleeps; the client rings pubd's space eventfd
 * when pubd said it waits for room.
 *
 * The client maps the log read-write (it publishes its read position in
 * the control page), so whatever is in it is the client's business: pubd
 * reads nothing from it but that position (checked by the writer: a
 * nonsense head means no room), and never reads the ring.
 */
#include <endian.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "deliverlog_format.h"
#include "log.h"
#include "loop.h"
#include "server_internal.h"

/* The client read while we waited for room. Edge-triggered and never
 * read, as a publish log's doorbell (publog.c on_doorbell): each ring is
 * an edge of its own. */
static void on_space(void *ctx, uint32_t events)
{
	struct pubd_client *c = ctx;

	(void)events;
	c->dlog->blocked = false;
	srv_mark_dirty(c);
}

/*
 * At its end the log gives back every page but what its client may still
 * read. A client that hung up reads nothing more: libpub copies a message
 * it still returns where it lies into pages of its own before it lets go
 * of the connection (conn.c), so every page goes. One that pubd ended
 * before it hung up (a protocol error, the disconnect policy) reads on what
 * it has not read yet, [head, tail), which pubd counted delivered: that
 * stays while the connection lingers (ended.c), and at pubd's exit. The
 * control page goes either way: a libpub still attached reads its zeros (no
 * magic) as closed, as it reads the closed flag, and stops reading its group
 * logs, which pubd writes on for others.
 */
void srv_dlog_free(struct pubd_ipc *srv, struct srv_dlog *l, bool hung_up)
{
	const struct pub_shmlog_writer *w = &l->w;
	const size_t ring = PUB_SHMLOG_CTL_LEN, end = l->shm.map_len;
	uint64_t head = w->ctl ? atomic_load_explicit(&w->ctl->head, memory_order_relaxed) : 0;
	size_t from, to;

	/* The head is the client's: one that means nothing keeps nothing. */
	if (hung_up || !w->ctl || head >= w->tail || w->tail - head > w->cap) {
		srv_shm_punch(&l->shm, 0, end);
	} else {
		from = ring + (size_t)(head & (w->cap - 1));
		to = ring + (size_t)(w->tail & (w->cap - 1));
		if (to > from) { /* unread: [from, to) */
			srv_shm_punch(&l->shm, 0, from);
			srv_shm_punch(&l->shm, to, end);
		} else { /* unread: [from, end) and [ring, to) */
			srv_shm_punch(&l->shm, 0, ring);
			srv_shm_punch(&l->shm, to, from);
		}
	}
	srv_shm_close(srv, &l->shm, false);
	free(l);
}

int srv_dlog_open(struct pubd_client *c, struct pub_msg_shm *m, int fds[3])
{
	struct pubd_ipc *srv = c->srv;
	uint32_t cap = srv_shm_capacity(srv->cfg->deliver_log);
	size_t charge = pub_shmlog_map_len(cap);
	struct srv_dlog *l;
	int memfd;

	if (!srv_budget_take(srv, charge)) {
		srv->counters[PUBD_CTR_BUDGET_WAITS]++;
		return -ENOBUFS;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		srv_budget_give(srv, charge);
		return -ENOMEM;
	}
	l->shm.charged = charge;
	memfd = srv_shm_make(c, cap, PUB_SHM_DELIVER_LOG, &l->shm);
	if (memfd < 0 || pub_shmlog_writer_init(&l->w, l->shm.map, l->shm.map_len, false) < 0 ||
	    !(l->shm.watch = pubd_loop_watch(srv->loop, l->shm.space_fd, EPOLLIN | EPOLLET, on_space, c))) {
		if (memfd >= 0)
			close(memfd);
		srv_dlog_free(srv, l, true);
		return memfd < 0 ? memfd : -ENOMEM;
	}
	c->dlog = l;
	*m = (struct pub_msg_shm){.kind = PUB_SHM_DELIVER_LOG, .capacity = cap, .max_record = l->w.max_record};
	fds[0] = memfd;
	fds[1] = l->shm.doorbell_fd;
	fds[2] = l->shm.space_fd;
	return 0;
}

void srv_dlog_close(struct pubd_client *c, bool hung_up)
{
	if (!c->dlog)
		return;
	srv_said_closed(c);
	srv_dlog_free(c->srv, c->dlog, hung_up);
	c->dlog = NULL;
}

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* One record: n bytes of a message of total bytes, more to follow or not;
 * false when the log has no room for it. */
static bool put_record(struct srv_dlog *l, bool more, uint32_t total, uint64_t source, uint64_t seq, const char *group,
		       uint8_t glen, const uint8_t *data, uint32_t n)
{
	uint8_t *b = pub_shmlog_claim(&l->w, PUB_SHMLOG_MSG, more ? PUB_SHMLOG_F_MORE : 0, total,
				      PUB_DELIVERLOG_HEAD + glen + n);
	uint32_t h;

	if (!b)
		return false;
	h = pub_deliverlog_put_head(b, source, seq, group, glen);
	memcpy(b + h, data, n);
	pub_shmlog_commit(&l->w);
	l->unrung = true;
	return true;
}

bool srv_dlog_mark(struct pubd_client *c, const char *group, uint8_t glen, bool dry_run)
{
	struct srv_dlog *l = c->dlog;
	uint8_t *b;

	if (!l || l->blocked || !pub_shmlog_has_room(&l->w, PUB_DELIVERLOG_HEAD + glen))
		return false;
	if (dry_run)
		return true;
	b = pub_shmlog_claim(&l->w, PUB_SHMLOG_MSG, PUB_DELIVERLOG_F_MOVE, 0, PUB_DELIVERLOG_HEAD + glen);
	if (!b)
		return false;
	pub_deliverlog_put_head(b, 0, 0, group, glen);
	pub_shmlog_commit(&l->w);
	l->unrung = true;
	srv_mark_dirty(c);
	return true;
}

/* The most payload one record carries after its head and a group name of glen bytes. */
static uint32_t record_room(const struct srv_dlog *l, uint8_t glen)
{
	return pub_shmlog_max_body(&l->w) - PUB_DELIVERLOG_HEAD - glen;
}

/* One piece of o's payload, from o->written on, if the log has room. */
static bool put_piece(struct srv_dlog *l, struct pubd_out *o, uint64_t source, uint64_t seq, const char *group,
		      uint8_t glen)
{
	uint32_t total = o->body->len, first = o->written == 0;
	uint32_t room = record_room(l, first ? glen : 0);
	uint32_t n = total - o->written < room ? total - o->written : room;

	if (!put_record(l, o->written + n < total, total, source, seq, group, first ? glen : 0,
			o->body->data + o->written, n))
		return false;
	o->written += n;
	return true;
}

int srv_dlog_put(struct pubd_client *c, struct pubd_out *o)
{
	struct srv_dlog *l = c->dlog;
	/* o->head is the socket's DELIVER head: frame header, u64 source,
	 * u64 seq, name8 group (little-endian, common/proto.h). */
	uint64_t source = le64_at(o->head + PUB_PROTO_HDR_LEN), seq = le64_at(o->head + PUB_PROTO_HDR_LEN + 8);
	uint8_t glen = o->head[PUB_PROTO_HDR_LEN + 16];
	const char *group = (const char *)o->head + PUB_PROTO_HDR_LEN + 17;

	if (l->blocked)
		return 0;
	for (;;) {
		if (put_piece(l, o, source, seq, group, glen)) {
			if (o->written >= o->body->len)
				return 1;
			continue;
		}
		/* Wake the reader to make room, then wait for its ring. */
		srv_dlog_wake(c);
		if (pub_shmlog_writer_sleep(&l->w, pub_shmlog_max_body(&l->w))) {
			l->blocked = true;
			return 0;
		}
	}
}

/*
 * A delivery with nothing queued before it goes straight into the deliver
 * log when the log has room for it in one record: what the queue would
 * have written at the turn's flush, without queueing it (the flush still
 * rings the reader, once a turn). Anything else goes by the queue, which
 * keeps the order and applies the slow-subscriber policy.
 */
bool pubd_ipc_deliver_now(struct pubd_ipc *srv, struct pubd_sub *s, uint64_t source, uint64_t seq, const uint8_t *data,
			  size_t len)
{
	struct pubd_client *c = s->client;
	struct srv_dlog *l = c->dlog;
	uint8_t glen = (uint8_t)s->group->name_len;

	(void)srv;
	if (!l || c->closing || c->out_delivers || l->blocked || len > record_room(l, glen) ||
	    !put_record(l, false, (uint32_t)len, source, seq, s->group->name, glen, data, (uint32_t)len))
		return false;
	srv_count_delivered(c, s, len);
	srv_mark_dirty(c);
	return true;
}

void pubd_ipc_deliver(struct pubd_ipc *srv, struct pubd_sub *s, uint64_t source, uint64_t seq, struct pubd_msgbuf *msg)
{
	if (!pubd_ipc_deliver_now(srv, s, source, seq, msg->data, msg->len))
		srv_out_deliver(srv, s, source, seq, msg);
}

void srv_dlog_wake(struct pubd_client *c)
{
	struct srv_dlog *l = c->dlog;
	uint64_t one = 1;

	if (!l || !l->unrung)
		return;
	l->unrung = false;
	if (pub_shmlog_wake_reader(&l->w) && write(l->shm.doorbell_fd, &one, sizeof(one)) < 0)
		log_debug("client %u: deliver log doorbell: %s", c->id, strerror(errno));
}
