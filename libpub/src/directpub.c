// SPDX-License-Identifier: MIT
/*
 * The direct path, writing (common/directlog.h): the first message to a
 * group asks pubd for a direct log of it (PUB_FRAME_DIRECT); pubd answers
 * with the log's memfd and, before its OK, a WAKER frame for each local
 * subscriber that reads the log. From then on a message to the group is
 * written there: the subscribers read it where we wrote it, and pubd reads
 * it too (for the fabric, for the subscribers that do not read the log,
 * and for the counts). After a commit we ring each reader that says it
 * sleeps, and pubd when it says it sleeps (or, when it reads lazily, when
 * half the log waits for it).
 *
 * pubd tells us of readers that come and go on the socket, and says in the
 * log's control page that it did (wakers_gen): a change there makes us read
 * the socket at once. A log pubd retires (a reload changed who may read it)
 * is written no more; the next message asks for a new one. A group pubd
 * makes no direct log of (a raw group, the direct path off, an ACL that
 * does not allow it, no memory) is published through the publish log, for
 * the rest of the connection.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "grow.h"
#include "internal.h"

static void ring(int fd)
{
	uint64_t one = 1;

	/* A reader's doorbell is non-blocking (pubd made it): a count at its
	 * maximum costs that reader its own wakeups, nothing of ours. */
	(void)!write(fd, &one, sizeof(one));
}

static void waker_free(struct pub_waker *k)
{
	munmap((void *)k->page, PUB_WAKE_PAGE_LEN);
	close(k->fd);
}

static void dw_free(struct pub_dwriter *dw)
{
	for (unsigned i = 0; i < dw->nwakers; i++)
		waker_free(&dw->wakers[i]);
	free(dw->wakers);
	if (dw->map)
		munmap(dw->map, dw->map_len);
	if (dw->doorbell >= 0)
		close(dw->doorbell);
	if (dw->space >= 0)
		close(dw->space);
	free(dw);
}

static struct pub_dwriter *find_id(struct pub_client *c, uint32_t id, unsigned *idx)
{
	for (unsigned i = 0; i < c->ndws; i++) {
		if (c->dws[i]->id == id) {
			if (idx)
				*idx = i;
			return c->dws[i];
		}
	}
	return NULL;
}

/* pubd's count of reader changes we have taken in, said back to it. */
static void gen_took(struct pub_dwriter *dw, uint64_t gen)
{
	if ((uint32_t)gen - dw->gen_seen < UINT32_MAX / 2) {
		dw->gen_seen = (uint32_t)gen;
		atomic_store_explicit(&dw->w.ctl->wakers_seen, dw->gen_seen, memory_order_release);
	}
}

int dw_attach(struct pub_client *c, const struct pub_msg_shm *m, const int fds[3])
{
	size_t len = pub_shmlog_map_len(m->capacity);
	struct pub_dwriter *dw, **v;
	void *map;

	if (!c->wake_map || m->group.len > PUB_GROUP_MAX || find_id(c, m->log_id, NULL))
		return set_err(c, -PUB_EPROTO, "pubd's direct log frame is not one this libpub can use");
	v = pub_grow(c->dws, c->ndws, &c->dws_cap, sizeof(*v), 4);
	if (!v)
		return set_err(c, -ENOMEM, "direct log: out of memory");
	c->dws = v;
	dw = calloc(1, sizeof(*dw));
	if (!dw)
		return set_err(c, -ENOMEM, "direct log: out of memory");
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (map == MAP_FAILED) {
		free(dw);
		return set_err(c, -errno, "mapping a direct log: %s", strerror(errno));
	}
	dw->map = map;
	dw->map_len = len;
	dw->doorbell = fds[1];
	dw->space = fds[2];
	if (pub_shmlog_writer_init(&dw->w, map, len, false) < 0 || dw->w.cap != m->capacity) {
		dw->doorbell = dw->space = -1; /* the caller closes them */
		dw_free(dw);
		return set_err(c, -PUB_EPROTO, "pubd's direct log is not one this libpub can write");
	}
	memcpy(dw->group, m->group.ptr, m->group.len);
	dw->glen = m->group.len;
	dw->id = m->log_id;
	dw->source = m->source;
	dw->gen_seen = (uint32_t)m->start;
	dw->mark_seg = UINT64_MAX;
	c->dws[c->ndws++] = dw;
	return 0;
}

int dw_waker_add(struct pub_client *c, const struct pub_msg_shm *m, const int fds[2])
{
	struct pub_dwriter *dw = find_id(c, m->log_id, NULL);
	struct pub_waker *k;
	void *page;
	unsigned i;

	if (!dw)
		return 0; /* retired meanwhile: nobody to wake through it */
	k = pub_grow(dw->wakers, dw->nwakers, &dw->wakers_cap, sizeof(*k), 4);
	if (!k)
		return set_err(c, -ENOMEM, "direct log: out of memory");
	dw->wakers = k;
	page = mmap(NULL, PUB_WAKE_PAGE_LEN, PROT_READ, MAP_SHARED, fds[0], 0);
	if (page == MAP_FAILED)
		return set_err(c, -errno, "mapping a reader's wake page: %s", strerror(errno));
	/* A reader pubd names again replaces what we had of it. */
	for (i = 0; i < dw->nwakers && dw->wakers[i].peer != m->peer; i++)
		;
	if (i < dw->nwakers)
		waker_free(&dw->wakers[i]);
	else
		dw->nwakers++;
	dw->wakers[i] = (struct pub_waker){.page = page, .fd = fds[1], .peer = m->peer};
	gen_took(dw, m->start);
	return 0;
}

void dw_waker_gone(struct pub_client *c, const struct pub_msg_shm *m)
{
	struct pub_dwriter *dw = find_id(c, m->log_id, NULL);

	if (!dw)
		return;
	for (unsigned i = 0; i < dw->nwakers; i++) {
		if (dw->wakers[i].peer == m->peer) {
			waker_free(&dw->wakers[i]);
			dw->wakers[i] = dw->wakers[--dw->nwakers];
			break;
		}
	}
	gen_took(dw, m->start);
}

static void dw_remove(struct pub_client *c, unsigned i)
{
	/* A claim in it is gone with it; its pub_commit says so. */
	if (c->claim_dw == c->dws[i]) {
		c->claim_dw = NULL;
		c->claim_rec = NULL;
		c->claim_open = false;
	}
	dw_free(c->dws[i]);
	c->dws[i] = c->dws[--c->ndws];
}

/* The group of a retired log may be asked for again. */
static void forget_asked(struct pub_client *c, const char *group)
{
	for (unsigned i = 0; i < c->ndw_asked; i++) {
		if (!strcmp(c->dw_asked[i], group)) {
			free(c->dw_asked[i]);
			c->dw_asked[i] = c->dw_asked[--c->ndw_asked];
			return;
		}
	}
}

void dw_retired(struct pub_client *c, uint32_t log_id)
{
	unsigned i;

	if (find_id(c, log_id, &i)) {
		forget_asked(c, c->dws[i]->group);
		dw_remove(c, i);
	}
}

/* A direct log's record: a message's first piece? -1: not one of ours. */
static int direct_first(const struct pub_shmlog_view *v)
{
	struct pub_deliverlog_piece p;

	return pub_deliverlog_decode(v, &p) < 0 ? -1 : p.first;
}

uint64_t dw_unread(const struct pub_client *c)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < c->ndws; i++)
		n += shm_messages_past_head(&c->dws[i]->w, c->dws[i]->map, c->dws[i]->map_len, direct_first);
	return n;
}

void dw_detach_all(struct pub_client *c)
{
	while (c->ndws)
		dw_remove(c, c->ndws - 1);
	free(c->dws);
	c->dws = NULL;
	c->dws_cap = 0;
	for (unsigned i = 0; i < c->ndw_asked; i++)
		free(c->dw_asked[i]);
	free(c->dw_asked);
	c->dw_asked = NULL;
	c->ndw_asked = 0;
}

static bool asked(const struct pub_client *c, const char *group)
{
	for (unsigned i = 0; i < c->ndw_asked; i++)
		if (!strcmp(c->dw_asked[i], group))
			return true;
	return false;
}

static void remember_asked(struct pub_client *c, const char *group)
{
	char **v = realloc(c->dw_asked, (c->ndw_asked + 1) * sizeof(*v));

	if (!v)
		return;
	c->dw_asked = v;
	if ((v[c->ndw_asked] = strdup(group)))
		c->ndw_asked++;
}

struct pub_dwriter *dw_ask(struct pub_client *c, const char *group, size_t glen, bool nonblock)
{
	uint8_t frame[PUB_PROTO_HDR_LEN + 4 + 1 + PUB_PROTO_NAME_MAX];
	char what[PUB_GROUP_MAX + 32];
	struct pub_waiter w = {.what = what};
	uint64_t deadline;
	bool partial;
	long n;
	int r;

	if (asked(c, group))
		return NULL;
	/* Asked once per connection: pubd's answer (an SHM frame, or an ERROR
	 * when it makes none) may come after we stopped waiting for it, and
	 * is taken whenever it is read. */
	remember_asked(c, group);
	snprintf(what, sizeof(what), "direct log of '%s'", group);
	w.req_id = next_req(c);
	n = pub_proto_enc_group_req(frame, sizeof(frame), PUB_FRAME_DIRECT, w.req_id, group, glen);
	if (n <= 0)
		return NULL;
	/* A publish does not wait long for it: the publish log carries the
	 * group's messages until the log comes (PUB_NONBLOCK: not at all). */
	deadline = nonblock
			   ? 0
			   : deadline_in(c->request_timeout_ms < DIRECT_ASK_MS ? c->request_timeout_ms : DIRECT_ASK_MS);
	r = tx_flush(c, deadline);
	if (r == 0)
		r = tx_frame(c, frame, (size_t)n, NULL, 0, deadline, &partial);
	if (r == 0 && !nonblock)
		r = wait_for(c, &w, deadline);
	if (is_disconnect(r) || r == -PUB_EPROTO || r == -ENOMEM) {
		conn_lost(c); /* the publish finds it down, and reconnects */
		return NULL;
	}
	return dw_find(c, group, glen);
}

/* The log waited on: its id, kept apart (a retired one is freed). */
struct waited {
	uint32_t id;
	const struct pub_dwriter *dw;
};

/* It is still ours (not retired while we waited for room in it). */
static bool still_ours(struct pub_client *c, const void *arg)
{
	const struct waited *w = arg;

	return find_id(c, w->id, NULL) == w->dw;
}

static int wait_room(struct pub_client *c, struct pub_dwriter *dw, uint32_t len, bool nonblock)
{
	struct waited w = {.id = dw->id, .dw = dw};

	return shm_wait_room(c, &dw->w, dw->doorbell, dw->space, len, nonblock, still_ours, &w);
}

/* Ring whoever sleeps on what was committed. Readers first: on one CPU
 * the first woken runs first, and they are the ones waiting. */
static void dw_wake(struct pub_dwriter *dw)
{
	uint64_t head;

	dw->wake_owed = false;
	dw->rung_tail = dw->w.tail;
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned i = 0; i < dw->nwakers; i++)
		if (pub_wake_due(dw->wakers[i].page, &dw->wakers[i].woken_at))
			ring(dw->wakers[i].fd);
	if (pub_shmlog_wake_reader(&dw->w)) {
		ring(dw->doorbell);
		return;
	}
	if (!atomic_load_explicit(&dw->w.ctl->lazy, memory_order_relaxed))
		return;
	/* Lazy: pubd reads when half the log waits for it, rung once per
	 * position of its head. */
	head = atomic_load_explicit(&dw->w.ctl->head, memory_order_acquire);
	if (dw->w.tail - head > dw->w.cap / 2 && head != dw->lazy_rung_head) {
		dw->lazy_rung_head = head;
		ring(dw->doorbell);
	}
}

void dw_wake_all(struct pub_client *c)
{
	for (unsigned i = 0; i < c->ndws; i++)
		if (c->dws[i]->wake_owed)
			dw_wake(c->dws[i]);
}

/* Write one piece: claimed, head and payload copied, committed. The
 * record's source field carries a PUB_SYNC's req_id in the first piece
 * (readers take the source pubd gave them; pubd answers the req_id). */
static int put_piece(struct pub_client *c, struct pub_dwriter *dw, uint32_t req_id, bool first, const uint8_t *data,
		     uint32_t n, uint32_t total, bool more, bool nonblock)
{
	uint8_t glen = first ? (uint8_t)dw->glen : 0;
	uint32_t body = PUB_DELIVERLOG_HEAD + glen + n, head;
	uint8_t *b;
	int r;

	r = wait_room(c, dw, body, nonblock);
	if (r < 0)
		return r;
	b = pub_shmlog_claim(&dw->w, PUB_SHMLOG_MSG, more ? PUB_SHMLOG_F_MORE : 0, total, body);
	if (!b)
		return -EAGAIN; /* cannot happen after wait_room */
	head = pub_deliverlog_put_head(b, first ? req_id : 0, dw->seq, dw->group, glen);
	if (n)
		memcpy(b + head, data, n);
	pub_shmlog_commit(&dw->w);
	pub_direct_mark(dw->map, dw->w.cap, dw->w.tail - pub_shmlog_align(PUB_SHMLOG_HDR_LEN + body), &dw->mark_seg);
	return 0;
}

/* The ring bytes a message takes at most (as shmpub.c's log_bytes). */
static uint64_t log_bytes(const struct pub_dwriter *dw, size_t len)
{
	uint32_t per = pub_shmlog_max_body(&dw->w) - PUB_DELIVERLOG_HEAD;
	uint64_t pieces = (len + dw->glen + per - 1) / per;

	if (!pieces)
		pieces = 1;
	return pieces * (PUB_SHMLOG_HDR_LEN + PUB_DELIVERLOG_HEAD + PUB_SHMLOG_ALIGN) + len + dw->glen +
	       dw->w.max_record + PUB_SHMLOG_ALIGN;
}

/* A message is committed: its readers (and pubd) rung unless PUB_MORE
 * holds the rings back; a PUB_SYNC rings pubd whatever it said, for its
 * answer. Then pubd's news of readers, if any (dw may go there). */
static void committed(struct pub_client *c, struct pub_dwriter *dw, uint32_t req_id, int flags)
{
	dw->seq++;
	dw->wake_owed = true;
	/* PUB_MORE holds the rings back, but not past a quarter of the log:
	 * readers asleep meanwhile would be lapped before the burst ends. */
	if ((flags & PUB_MORE) && dw->w.tail - dw->rung_tail < dw->w.cap / 4)
		c->wake_owed = true;
	else
		dw_wake(dw);
	if (req_id && !atomic_load_explicit(&dw->w.ctl->reader_sleeping, memory_order_relaxed))
		ring(dw->doorbell);
	/* Readers came or went: pubd said so on the socket. Read it now, so
	 * that the next message wakes whom it should (a PUB_SYNC's wait for
	 * its answer reads it, and must see the answer itself). */
	if (!req_id && atomic_load_explicit(&dw->w.ctl->wakers_gen, memory_order_acquire) != dw->gen_seen)
		drain(c);
}

uint8_t *dw_claim(struct pub_client *c, struct pub_dwriter *dw, size_t len, int *err)
{
	uint32_t body = (uint32_t)(PUB_DELIVERLOG_HEAD + dw->glen + len);
	uint8_t *b;

	*err = 0;
	if (PUB_DELIVERLOG_HEAD + dw->glen + len > pub_shmlog_max_body(&dw->w) ||
	    atomic_load_explicit(&dw->w.ctl->retired, memory_order_acquire))
		return NULL;
	*err = wait_room(c, dw, body, false);
	if (*err < 0)
		return NULL;
	b = pub_shmlog_claim(&dw->w, PUB_SHMLOG_MSG, 0, (uint32_t)len, body);
	if (!b) {
		*err = -EAGAIN;
		return NULL;
	}
	c->claim_dw = dw;
	c->claim_rec = b;
	return b + pub_deliverlog_put_head(b, 0, dw->seq, dw->group, (uint8_t)dw->glen);
}

void dw_commit(struct pub_client *c, uint32_t req_id, int flags)
{
	struct pub_dwriter *dw = c->claim_dw;
	uint64_t req = req_id;

	/* Not visible until its commit word: the req_id can still go in. */
	memcpy(c->claim_rec, &req, sizeof(req));
	pub_shmlog_commit(&dw->w);
	pub_direct_mark(dw->map, dw->w.cap, atomic_load_explicit(&dw->w.ctl->latest, memory_order_relaxed),
			&dw->mark_seg);
	c->claim_rec = NULL;
	c->claim_dw = NULL;
	committed(c, dw, req_id, flags);
}

int dw_publish(struct pub_client *c, struct pub_dwriter *dw, uint32_t req_id, const void *data, size_t len, int flags)
{
	uint32_t max = pub_shmlog_max_body(&dw->w) - PUB_DELIVERLOG_HEAD, n, id = dw->id;
	bool nonblock = flags & PUB_NONBLOCK, first = true;
	const uint8_t *p = data;
	size_t left = len;
	int r;

	/* Retired by pubd: written no more (the caller asks for a new one). */
	if (atomic_load_explicit(&dw->w.ctl->retired, memory_order_acquire)) {
		dw_retired(c, id);
		return -ESTALE;
	}
	if (nonblock && log_bytes(dw, len) <= dw->w.cap / 2) {
		if (pub_shmlog_room(&dw->w) < log_bytes(dw, len))
			return -EAGAIN;
	} else {
		nonblock = false;
	}
	do {
		n = (uint32_t)(left < max - (first ? dw->glen : 0) ? left : max - (first ? dw->glen : 0));
		r = put_piece(c, dw, req_id, first, p, n, (uint32_t)len, left > n, nonblock);
		if (r < 0)
			return r;
		p += n;
		left -= n;
		first = false;
		if (left && pub_shmlog_wake_reader(&dw->w))
			ring(dw->doorbell);
	} while (left);
	committed(c, dw, req_id, flags);
	return 0;
}
