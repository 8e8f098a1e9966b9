/* SPDX-License-Identifier: MIT */
/*
 * A group log (its ending, retiring and giving back are glog_end.c's): the
 * shared-memory ring pubd writes each message of a group into once, for all
 * of the group's local subscribers that read it, instead of a copy into
 * each one's deliver log (common/deliverlog_format.h). A subscriber gets a
 * read-only file of the memfd (shm.c): it can map it read-only only, and
 * cannot make it writable.
 *
 * Readers. A subscriber on shared memory gets the log at SUBSCRIBE (an SHM
 * frame, before the OK), with a slot in its own deliver log's control page
 * where it publishes how far it has read. pubd writes nothing over what a
 * reader still may read: the log's head is the least of its readers' slots
 * (untrusted: a value behind what pubd saw before, past the log's tail, or
 * not on a record boundary is ignored). A delivery counts as delivered when
 * it is in the log, as it does in a deliver log.
 *
 * Slow readers. A message the ring has no room for waits in the log's
 * queue, bounded like a subscriber's (limits.subscriber_queue and
 * subscriber_queue_bytes); readers ring their deliver log's space eventfd
 * after reading when pubd said it waits. Past the bound pubd ends the log
 * for every reader at once (an END record): each reads what it still has
 * there, then finds the group's messages in its own deliver log, where the
 * waiting ones go first and the slow-subscriber policy applies as before.
 * No reader can be passed over alone: the ring between it and the others
 * is what it still reads. Until every reader the END ended has read up to
 * it (or left), the log takes no new reader, so it is never written over
 * what one of them may still read. Then, once a second, each of them with
 * nothing queued gets it back: an SHM frame that says "from the mark on",
 * and a mark of the group in its deliver log, behind what that log still
 * holds of the group (libpub reads the log only from the mark on: the frame
 * comes on the socket, which it reads after its logs).
 *
 * Access. A mapping cannot be taken back: a client given the log reads
 * whatever is written there later, subscribed or not. So when the
 * subscribe ACL changes the group log is ended and retired (nothing is
 * written to it again) and a new one made; its readers get that one back
 * as above, and a client denied by the new ACL never gets it. Readers get
 * a read-only file of the memfd (shm.c).
 *
 * Memory: a group's log is kept while the group lives: one per group at
 * most, limits.group_log bytes each. A retired log is kept while a reader
 * may still read it: until each of its readers has read up to its END or
 * gone, and one that unsubscribed before its END (it may hold a message
 * there, valid until its next pub_recv) until its connection closes. Then
 * pubd punches its pages out (MADV_REMOVE) before it lets go: a client that
 * keeps the mapping longer reads zeros, and pins nothing of pubd's. Without
 * that, a client could pin one more log each time pubd retired one (an ACL
 * change, or pubd giving up on a reader, below): any number of them. It is
 * the operator's to size, like the repair window, and not charged to
 * limits.client_buffer_budget, which a few groups' logs would otherwise
 * take from every client's own logs for good. What waits for room in a log
 * is held for its readers: it counts against each reader's subscriber queue
 * (limits.subscriber_queue and subscriber_queue_bytes, with what the client
 * has queued of its own and waits in its other group logs), so one reader
 * of many groups makes pubd hold one queue's worth, not one per group.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "deliverlog_format.h"
#include "directlog.h"
#include "log.h"
#include "loop.h"
#include "glog_internal.h"
#include "server_internal.h"

/* Bytes kept back for the END record: its header and the commit word after it. */
#define GLOG_END_RESERVE (2 * PUB_SHMLOG_HDR_LEN)

/* ---- the log ---- */

void glog_free(struct pubd_ipc *srv, struct srv_glog *gl)
{
	unsigned i;

	/* Retired, with no reader left that may read it: its pages go from
	 * every mapping of it (a client may keep one as long as it likes). */
	if (!gl->g)
		srv_shm_punch(&gl->shm, 0, gl->shm.map_len);
	for (i = 0; i < gl->wq_n; i++)
		pubd_msgbuf_put(gl->wq[(gl->wq_head + i) % gl->wq_cap].m);
	free(gl->wq);
	free(gl->acl.entries);
	srv_shm_close(srv, &gl->shm, false);
	if (gl->memfd >= 0)
		close(gl->memfd);
	free(gl);
}

/* A group log pubd could not make (no /proc to reopen it read-only, out of
 * memory): its subscribers get copies. Each SUBSCRIBE tries again, so the
 * reason is logged once a period, and the count of the others after it. */
static void make_failed(struct pubd_ipc *srv, const struct pubd_group *g, int err)
{
	srv_log_limited(srv, log_glog, LOG_WARNING,
			"group %s: cannot make its group log (%s): its subscribers get copies", g->name, strerror(err));
}

static struct srv_glog *glog_make(struct pubd_ipc *srv, struct pubd_group *g)
{
	uint32_t cap = srv_shm_capacity(srv->cfg->group_log);
	struct srv_glog *gl = calloc(1, sizeof(*gl));

	if (!gl)
		return NULL;
	gl->memfd = gl->shm.doorbell_fd = gl->shm.space_fd = -1; /* nothing to close yet */
	gl->g = g;
	gl->acl = g->cfg->subscribe;
	gl->acl.entries = NULL;
	if (gl->acl.n && !(gl->acl.entries = malloc(gl->acl.n * sizeof(*gl->acl.entries)))) {
		glog_free(srv, gl);
		return NULL;
	}
	if (gl->acl.n)
		memcpy(gl->acl.entries, g->cfg->subscribe.entries, gl->acl.n * sizeof(*gl->acl.entries));
	/* Writable by this mapping only; readers get a read-only file (shm.c). */
	gl->memfd = srv_shm_make(NULL, cap, PUB_SHM_GROUP_LOG, &gl->shm);
	if (gl->memfd < 0 || pub_shmlog_writer_init(&gl->w, gl->shm.map, gl->shm.map_len, false) < 0) {
		make_failed(srv, g, gl->memfd < 0 ? -gl->memfd : EPROTO);
		glog_free(srv, gl);
		return NULL;
	}
	gl->w.reserve = GLOG_END_RESERVE;
	return gl;
}

/* ---- readers ---- */

static _Atomic uint64_t *slot_of(const struct pubd_sub *s)
{
	return pub_deliverlog_slot(s->client->dlog->shm.map, s->glog_slot);
}

/* How far a reader says it has read: its slot, unless the value is behind
 * what it said before, past the tail, or off a record boundary (a lie or
 * a torn write: ignored). */
uint64_t glog_released_now(const struct srv_glog *gl, const struct pubd_sub *s)
{
	uint64_t v;

	if (!s->client->dlog)
		return s->glog_released;
	v = atomic_load_explicit(slot_of(s), memory_order_acquire);
	return v > s->glog_released && v <= gl->w.tail && v % PUB_SHMLOG_ALIGN == 0 ? v : s->glog_released;
}

/* What s says it has read, if it makes sense; a draining reader that
 * reached the END is done with the log. */
void glog_look_at_reader(struct srv_glog *gl, struct pubd_sub *s)
{
	s->glog_released = glog_released_now(gl, s);
	if (!s->glog_live && s->glog_until && s->glog_released >= s->glog_until) {
		s->glog_until = 0;
		gl->draining--;
	}
}

/* The log's head: the least position a reader may still read. */
void glog_refresh_head(struct srv_glog *gl)
{
	struct pubd_group *g = gl->g;
	uint64_t head = gl->w.tail;
	unsigned i;

	for (i = 0; i < g->nsubs; i++) {
		struct pubd_sub *s = g->subs[i];

		if (s->glog != gl)
			continue;
		glog_look_at_reader(gl, s);
		if ((s->glog_live || s->glog_until) && s->glog_released < head)
			head = s->glog_released;
	}
	atomic_store_explicit(&gl->w.ctl->head, head, memory_order_release);
	gl->w.head_seen = head;
}

/* The held slots whose reader let its direct log go are free again. */
static void reclaim_held(struct pubd_client *c)
{
	for (uint32_t w = 0; w < (PUB_DELIVERLOG_NSLOTS + 63) / 64; w++) {
		uint64_t bits = c->held_slots[w];

		while (bits) {
			uint32_t slot = w * 64 + (uint32_t)__builtin_ctzll(bits);

			bits &= bits - 1;
			if (atomic_load_explicit(pub_deliverlog_slot(c->dlog->shm.map, slot), memory_order_acquire) !=
			    PUB_DIRECT_SLOT_RELEASED)
				continue;
			c->held_slots[w] &= ~(UINT64_C(1) << (slot % 64));
			srv_slot_give(c, slot);
		}
	}
}

void srv_slot_hold(struct pubd_client *c, uint32_t slot)
{
	c->held_slots[slot / 64] |= UINT64_C(1) << (slot % 64);
}

uint32_t srv_slot_take(struct pubd_client *c)
{
	uint32_t i;

	if (c->dlog)
		reclaim_held(c);
	for (i = 0; i < PUB_DELIVERLOG_NSLOTS; i++) {
		if (!(c->glog_slots[i / 64] & (UINT64_C(1) << (i % 64)))) {
			c->glog_slots[i / 64] |= UINT64_C(1) << (i % 64);
			return i;
		}
	}
	return UINT32_MAX;
}

void srv_slot_give(struct pubd_client *c, uint32_t slot)
{
	c->glog_slots[slot / 64] &= ~(UINT64_C(1) << (slot % 64));
}

/* Give s the group's log: at SUBSCRIBE (read at once), or back after an
 * END (after_mark: read from the group's mark in its deliver log on). */
void glog_give(struct pubd_client *c, struct pubd_sub *s, bool after_mark)
{
	struct pubd_ipc *srv = c->srv;
	struct pubd_group *g = s->group;
	struct srv_glog *gl = g->glog;
	struct pub_msg_shm m;
	uint8_t frame[64 + PUB_PROTO_NAME_MAX];
	uint32_t slot;
	long n;
	int err;

	/* Only a shared-memory subscriber the socket can take the memfd for
	 * at once, and a log that has no one behind on it. */
	if (!srv->cfg->group_log || !c->dlog || c->out_head || c->closing || c->gone || c->glog_withheld)
		return;
	if (gl && (gl->wq_n || gl->draining || gl->must_end))
		return;
	if (after_mark && !srv_dlog_mark(c, g->name, (uint8_t)g->name_len, true))
		return;
	slot = srv_slot_take(c);
	if (slot == UINT32_MAX)
		return;
	if (!gl && !(gl = g->glog = glog_make(srv, g))) {
		srv_slot_give(c, slot);
		return;
	}
	m = (struct pub_msg_shm){.kind = PUB_SHM_GROUP_LOG,
				 .flags = after_mark ? PUB_SHM_F_AFTER_MARK : 0,
				 .capacity = gl->w.cap,
				 .max_record = gl->w.max_record,
				 .slot = slot,
				 .start = gl->w.tail,
				 .group = {g->name, g->name_len}};
	n = pub_proto_enc_shm(frame, sizeof(frame), &m);
	/* Its slot says "nothing read" before the client can see the log. */
	atomic_store_explicit(pub_deliverlog_slot(c->dlog->shm.map, slot), gl->w.tail, memory_order_release);
	err = n > 0 ? srv_send_fds(c, frame, (size_t)n, &gl->memfd, 1) : -EINVAL;
	if (err < 0) {
		log_debug("client %u: group log of %s not handed over (%s): its deliveries are copied", c->id, g->name,
			  strerror(-err));
		srv_slot_give(c, slot);
		return;
	}
	/* Behind what the deliver log holds of the group (nothing more of it
	 * is queued: the output queue is empty); room was checked above. */
	if (after_mark)
		srv_dlog_mark(c, g->name, (uint8_t)g->name_len, false);
	s->glog = gl;
	s->glog_slot = slot;
	s->glog_released = gl->w.tail;
	s->glog_live = true;
	s->glog_until = 0;
	gl->readers++;
	g->glog_live++;
}

void srv_glog_attach(struct pubd_client *c, struct pubd_sub *s)
{
	glog_give(c, s, false);
}

/* What waits for c in its group logs, less msgs and bytes. */
static void wait_less(struct pubd_client *c, uint32_t msgs, size_t bytes)
{
	c->glog_wait_msgs -= msgs < c->glog_wait_msgs ? msgs : c->glog_wait_msgs;
	c->glog_wait_bytes -= bytes < c->glog_wait_bytes ? bytes : c->glog_wait_bytes;
}

/* One of gl's readers is done with it. A retired log goes with its last
 * reader; the group's stays. */
static void reader_gone(struct pubd_ipc *srv, struct srv_glog *gl)
{
	gl->readers--;
	if (!gl->g && !gl->readers)
		glog_free(srv, gl);
}

/* c keeps gl (still counted a reader) until it closes or hangs up; false
 * if it cannot. The whole log is charged to limits.client_buffer_budget
 * for as long: a client on a loop of subscribe, fall behind, get itself
 * ended and never hang up, would otherwise keep one retired log after
 * another, uncharged, each a group_log of pubd's memory. */
static bool hold(struct pubd_client *c, struct srv_glog *gl)
{
	struct srv_glog_holds *h = &c->glog_holds;
	struct srv_glog **v;

	if (!srv_budget_take(c->srv, gl->shm.map_len))
		return false;
	v = realloc(h->v, (h->n + 1) * sizeof(*v));
	if (!v) {
		srv_budget_give(c->srv, gl->shm.map_len);
		return false;
	}
	h->v = v;
	v[h->n++] = gl;
	return true;
}

/* The messages of gl from position from up to end, and their bytes: a
 * walk of pubd's own records (a position a reader gave stops it early
 * if it is off a record: that reader's count only). */
static uint64_t messages_between(const struct srv_glog *gl, uint64_t from, uint64_t end, uint64_t *bytes)
{
	struct pub_shmlog_reader r;
	struct pub_shmlog_view v;
	uint64_t n = 0;

	*bytes = 0;
	if (from >= end ||
	    pub_shmlog_reader_init(&r, gl->shm.map, gl->shm.map_len, gl->w.cap, gl->w.max_record, from) < 0)
		return 0;
	while (r.pos < end && pub_shmlog_next(&r, &v) == 1) {
		if (v.type == PUB_SHMLOG_MSG && !(v.flags & PUB_SHMLOG_F_MORE)) {
			n++;
			*bytes += v.aux;
		}
		pub_shmlog_consume(&r, &v);
	}
	return n;
}

/*
 * What s was counted delivered in gl and has not read, taken back as
 * sub_disconnect: libpub lets a group's log go when the subscription ends
 * (it says how far it read first), and a connected client would never
 * see them. A client that went keeps them as delivered, as its deliver
 * log's.
 */
static void take_back_unread(struct srv_glog *gl, struct pubd_sub *s)
{
	struct pubd_client *c = s->client;
	uint64_t n, bytes, end = s->glog_live ? gl->w.tail : s->glog_until;

	if (c->closing || c->gone || c->hung_up || !end)
		return;
	n = messages_between(gl, glog_released_now(gl, s), end, &bytes);
	if (n > s->delivered)
		n = s->delivered;
	if (n)
		srv_take_back(s, n, bytes, PUB_DROP_SUB_DISCONNECT);
}

/* s stops reading the log (unsubscribed, or its client closing). */
void srv_glog_leave(struct pubd_ipc *srv, struct pubd_sub *s)
{
	struct srv_glog *gl = s->glog;

	if (!gl)
		return;
	take_back_unread(gl, s);
	/* What waits for the log never reaches it now. */
	if (s->glog_live && gl->wq_n) {
		srv_count_sub_drop(srv, s, PUB_DROP_SUB_DISCONNECT, gl->wq_n);
		wait_less(s->client, gl->wq_n, gl->wq_bytes);
	}
	if (s->glog_live)
		s->group->glog_live--;
	if (!s->glog_live && s->glog_until)
		gl->draining--;
	/* A retired log's reader that leaves before its END may hold a message
	 * there: one that unsubscribed, or that pubd ends before it hung up.
	 * The log is kept, as if it read on, until its client closes or hangs
	 * up (srv_ended_holds). */
	bool holds = !gl->g && s->glog_until && !s->client->hung_up && hold(s->client, gl);

	srv_slot_give(s->client, s->glog_slot);
	s->glog = NULL;
	s->glog_live = false;
	s->glog_until = 0;
	if (!holds)
		reader_gone(srv, gl);
}

void srv_glog_holds_release(struct pubd_ipc *srv, struct srv_glog_holds *h)
{
	unsigned i;

	for (i = 0; i < h->n; i++) {
		srv_budget_give(srv, h->v[i]->shm.map_len);
		reader_gone(srv, h->v[i]);
	}
	free(h->v);
	h->v = NULL;
	h->n = 0;
}

/* What waits in gl, added to (or taken from) each of its readers' counts.
 * Returns whether a reader has more held for it than a subscriber queue:
 * its own queue and what waits for it in all its group logs. */
bool glog_readers_wait(struct srv_glog *gl, int sign, uint32_t msgs, size_t bytes)
{
	struct pubd_group *g = gl->g;
	bool full = false;
	unsigned i;

	for (i = 0; g && i < g->nsubs; i++) {
		struct pubd_client *c = g->subs[i]->client;

		if (!g->subs[i]->glog_live || g->subs[i]->glog != gl)
			continue;
		if (sign < 0) {
			wait_less(c, msgs, bytes);
			continue;
		}
		c->glog_wait_msgs += msgs;
		c->glog_wait_bytes += bytes;
		const struct pubd_config *cfg = c->srv->cfg;

		full |= c->out_delivers + c->glog_wait_msgs > cfg->subscriber_queue ||
			c->out_deliver_bytes + c->glog_wait_bytes > cfg->subscriber_queue_bytes;
	}
	return full;
}

/* ---- writing ---- */

/* Records came: each reader is rung at the turn's flush if it sleeps (a
 * piece too: the reader's room for the next one may be what it waits for).
 * count: whole messages, bytes in all, delivered to each. */
static void wake_readers_n(struct srv_glog *gl, uint64_t count, uint64_t bytes)
{
	struct pubd_group *g = gl->g;
	unsigned i;

	for (i = 0; i < g->nsubs; i++) {
		struct pubd_sub *s = g->subs[i];

		if (!s->glog_live || s->glog != gl)
			continue;
		if (count)
			srv_count_delivered_n(s->client, s, count, bytes);
		if (s->client->dlog) {
			s->client->dlog->unrung = true;
			srv_mark_dirty(s->client);
		}
	}
}

/* One record of a message's bytes [from, from + n) of total. */
static bool put_record(struct srv_glog *gl, uint64_t source, uint64_t seq, const uint8_t *data, uint32_t from,
		       uint32_t n, uint32_t total)
{
	struct pubd_group *g = gl->g;
	uint8_t glen = from ? 0 : (uint8_t)g->name_len;
	uint32_t body = PUB_DELIVERLOG_HEAD + glen + n;
	uint8_t *b = pub_shmlog_claim(&gl->w, PUB_SHMLOG_MSG, from + n < total ? PUB_SHMLOG_F_MORE : 0, total, body);

	if (!b) {
		glog_refresh_head(gl);
		b = pub_shmlog_claim(&gl->w, PUB_SHMLOG_MSG, from + n < total ? PUB_SHMLOG_F_MORE : 0, total, body);
		if (!b)
			return false;
	}
	memcpy(b + pub_deliverlog_put_head(b, source, seq, g->name, glen), data + from, n);
	pub_shmlog_commit(&gl->w);
	return true;
}

/* The payload one record carries after its head (and, first, the group's name). */
static uint32_t record_room(const struct srv_glog *gl, bool first)
{
	return pub_shmlog_max_body(&gl->w) - PUB_DELIVERLOG_HEAD - (first ? (uint32_t)gl->g->name_len : 0);
}

/* Write the oldest waiting message's next pieces; true when it is all in. */
static bool write_waiting_head(struct srv_glog *gl)
{
	struct glog_wait *x = &gl->wq[gl->wq_head];
	uint32_t total = (uint32_t)x->m->len;

	while (gl->wq_written < total || (total == 0 && gl->wq_written == 0)) {
		uint32_t room = record_room(gl, gl->wq_written == 0);
		uint32_t n = total - gl->wq_written < room ? total - gl->wq_written : room;

		if (!put_record(gl, x->source, x->seq, x->m->data, gl->wq_written, n, total))
			return false;
		gl->wq_written += n;
		if (gl->wq_written < total)
			wake_readers_n(gl, 0, 0);
		if (total == 0)
			break;
	}
	return true;
}

void glog_wait_unlink(struct pubd_ipc *srv, struct srv_glog *gl)
{
	struct srv_glog **p;

	for (p = &srv->glogs_waiting; *p; p = &(*p)->next_waiting) {
		if (*p == gl) {
			*p = gl->next_waiting;
			break;
		}
	}
	gl->on_list = false;
}

void glog_set_waiting(struct srv_glog *gl, bool on)
{
	gl->waiting = on;
	atomic_store_explicit(&gl->w.ctl->writer_waiting, on, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

/* Write what waits, oldest first, while there is room. */
void glog_write_waiting(struct pubd_ipc *srv, struct srv_glog *gl)
{
	while (gl->wq_n) {
		struct glog_wait *x = &gl->wq[gl->wq_head];

		if (!write_waiting_head(gl)) {
			if (gl->waiting)
				return;
			/* Say we wait, then look once more (a reader that read
			 * meanwhile may not have seen us say so). */
			glog_set_waiting(gl, true);
			continue;
		}
		wake_readers_n(gl, 1, x->m->len);
		glog_readers_wait(gl, -1, 1, x->m->len);
		gl->wq_bytes -= x->m->len;
		pubd_msgbuf_put(x->m);
		gl->wq_head = (gl->wq_head + 1) % gl->wq_cap;
		gl->wq_n--;
		gl->wq_written = 0;
	}
	if (gl->waiting)
		glog_set_waiting(gl, false);
	if (gl->on_list)
		glog_wait_unlink(srv, gl);
}

static bool enqueue(struct pubd_ipc *srv, struct srv_glog *gl, uint64_t source, uint64_t seq, struct pubd_msgbuf *m)
{
	unsigned cap = srv->cfg->subscriber_queue;
	bool full;

	if (gl->wq_n == gl->wq_cap) {
		unsigned ncap = gl->wq_cap ? gl->wq_cap * 2 : 16;
		struct glog_wait *q = malloc(ncap * sizeof(*q));
		unsigned i;

		if (!q)
			return false;
		for (i = 0; i < gl->wq_n; i++)
			q[i] = gl->wq[(gl->wq_head + i) % gl->wq_cap];
		free(gl->wq);
		gl->wq = q;
		gl->wq_cap = ncap;
		gl->wq_head = 0;
	}
	gl->wq[(gl->wq_head + gl->wq_n) % gl->wq_cap] = (struct glog_wait){pubd_msgbuf_get(m), source, seq};
	gl->wq_n++;
	gl->wq_bytes += m->len;
	full = glog_readers_wait(gl, 1, 1, m->len);
	if (!gl->on_list) {
		gl->on_list = true;
		gl->next_waiting = srv->glogs_waiting;
		srv->glogs_waiting = gl;
	}
	if (gl->wq_n > cap || gl->wq_bytes > srv->cfg->subscriber_queue_bytes || full)
		gl->must_end = true;
	return true;
}

void srv_glog_put(struct pubd_ipc *srv, struct pubd_group *g, uint64_t source, uint64_t seq, const uint8_t *data,
		  size_t len, struct pubd_msgbuf *msg)
{
	struct srv_glog *gl = g->glog;
	struct pubd_msgbuf *m = msg;
	unsigned i;

	if (!gl->wq_n && len <= record_room(gl, true) &&
	    put_record(gl, source, seq, data, 0, (uint32_t)len, (uint32_t)len)) {
		wake_readers_n(gl, 1, len);
		return;
	}
	if (!m && (m = pubd_msgbuf_alloc(len)))
		memcpy(m->data, data, len);
	if (m && enqueue(srv, gl, source, seq, m)) {
		if (!msg)
			pubd_msgbuf_put(m);
		return;
	}
	if (m && !msg)
		pubd_msgbuf_put(m);
	/* No memory to keep it: lost for every reader, and counted so. */
	for (i = 0; i < g->nsubs; i++)
		if (g->subs[i]->glog_live)
			srv_count_sub_drop(srv, g->subs[i], PUB_DROP_SUB_OVERFLOW, 1);
}

void srv_glog_put_run(struct pubd_ipc *srv, struct pubd_group *g, uint64_t source, uint64_t first,
		      const struct pubd_msg_view *v, unsigned n)
{
	struct srv_glog *gl = g->glog;
	uint32_t room = record_room(gl, true);
	uint64_t bytes = 0;
	unsigned k = 0;

	/* Straight into the log while nothing waits for room before them. */
	if (!gl->wq_n) {
		for (; k < n && v[k].len <= room; k++) {
			if (!put_record(gl, source, first + k, v[k].data, 0, (uint32_t)v[k].len, (uint32_t)v[k].len))
				break;
			bytes += v[k].len;
		}
		if (k)
			wake_readers_n(gl, k, bytes);
	}
	/* The rest as one at a time: queued behind the first that had no room. */
	for (; k < n; k++)
		srv_glog_put(srv, g, source, first + k, v[k].data, v[k].len, NULL);
}

/* ---- flow control: a reader's backlog ---- */

/* A group log reader's backlog is what waits for the log (shared by its
 * readers, and bounded like a subscriber queue) and what it has not read
 * there; what it has taken, how far it has read. So flow control holds a
 * source back for a reader that is behind, and sees one that stopped. */
void pubd_ipc_sub_queue(const struct pubd_sub *s, struct pubd_sub_queue *q)
{
	const struct srv_glog *gl = s->glog;
	uint64_t released;

	srv_out_sub_queue(s, q);
	if (!s->glog_live)
		return;
	released = glog_released_now(gl, s);
	q->msgs += gl->wq_n + (released < gl->w.tail);
	q->bytes += gl->wq_bytes + (gl->w.tail - released);
	q->taken = released;
}

unsigned srv_glog_waiting_for(const struct pubd_sub *s)
{
	return s->glog_live ? s->glog->wq_n : 0;
}

bool pubd_ipc_sub_has_room(const struct pubd_sub *s, size_t len)
{
	const struct srv_glog *gl = s->glog;
	const struct pubd_config *cfg = s->client->srv->cfg;

	if (!s->glog_live)
		return srv_out_sub_has_room(s, len);
	return s->client->closing ||
	       (gl->wq_n < cfg->subscriber_queue && gl->wq_bytes + len <= cfg->subscriber_queue_bytes);
}

void pubd_ipc_group_log_info(const struct pubd_group *g, struct pubd_group_log_info *info)
{
	const struct srv_glog *gl = g->glog;

	*info = (struct pubd_group_log_info){
		.ends = g->glog_ends, .returns = g->glog_returns, .abandoned = g->glog_abandoned};
	if (!gl)
		return;
	info->capacity = gl->w.cap;
	info->readers = g->glog_live;
	info->draining = gl->draining;
	info->waiting = gl->wq_n;
}
