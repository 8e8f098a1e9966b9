// SPDX-License-Identifier: MIT
/*
 * The direct path, reading (common/directlog.h): pubd hands us, per local
 * publisher of a group we subscribe to, a read-only file of its direct log
 * (an SHM frame of kind DIRECT_READ: at SUBSCRIBE before the OK, or when a
 * publisher starts), with the position to start from and a slot. pub_recv
 * reads these beside the logs pubd writes, copying each message out (the
 * writer never waits for us: a copy is all that is ours). A writer that
 * laps us costs the oldest messages we had not read; we count them in our
 * wake page's slot, where pubd takes them as sub_overflow drops.
 *
 * A log whose writer writes what no libpub writes is let go of: that
 * writer's messages no longer reach us (errmsg says so). A log pubd
 * retires is read to its end, then let go of.
 *
 * The wake page: before sleeping we say so there (sleep_seq odd), beside
 * the deliver log's flag, so that writers ring our doorbell too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "grow.h"
#include "internal.h"

static void say_at(struct pub_client *c, struct pub_dread *dr);

/* ---- the wake page ---- */

int wake_attach(struct pub_client *c, int fd)
{
	struct pub_wake_page *page = mmap(NULL, PUB_WAKE_PAGE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (page == MAP_FAILED)
		return set_err(c, -errno, "mapping the wake page: %s", strerror(errno));
	if (page->magic != PUB_WAKE_PAGE_MAGIC) {
		munmap(page, PUB_WAKE_PAGE_LEN);
		return set_err(c, -PUB_EPROTO, "pubd's wake page is not one this libpub knows");
	}
	c->wake_map = page;
	c->sleep_seq = atomic_load_explicit(&page->sleep_seq, memory_order_relaxed);
	return 0;
}

/* Before the last look and the sleep: the barrier after it is the caller's
 * (pub_shmlog_reader_sleep's). */
void wake_sleep(struct pub_client *c)
{
	if (!c->wake_map)
		return;
	/* A new odd value for every sleep: a writer rings once per value, and
	 * a reader that returned from pub_recv asleep (a timeout, pub_fd in the
	 * caller's poll) and sleeps again must be rung again. */
	c->sleep_seq += (c->sleep_seq & 1) ? 2 : 1;
	atomic_store_explicit(&((struct pub_wake_page *)c->wake_map)->sleep_seq, c->sleep_seq, memory_order_relaxed);
}

void wake_awake(struct pub_client *c)
{
	if (!c->wake_map || !(c->sleep_seq & 1))
		return;
	c->sleep_seq++;
	atomic_store_explicit(&((struct pub_wake_page *)c->wake_map)->sleep_seq, c->sleep_seq, memory_order_relaxed);
}

/* ---- the logs ---- */

/* Messages kept for a log that goes are delivered late, not lost. */
static void via_flush(struct pub_client *c, struct pub_dread *dr)
{
	if (!dr->via_head)
		return;
	*c->qtail = dr->via_head;
	c->qtail = dr->via_tail;
	dr->via_head = NULL;
	dr->via_tail = &dr->via_head;
}

static void dr_free(struct pub_dread *dr)
{
	struct pub_queued *q;

	while ((q = dr->via_head)) {
		dr->via_head = q->next;
		free(q);
	}
	if (dr->map)
		munmap(dr->map, dr->map_len);
	free(dr->buf);
	free(dr);
}

/* We let a direct log go: pubd may give its slot to another log now, and
 * not before (common/directlog.h). */
static void release_slot(struct pub_client *c, uint32_t slot)
{
	if (c->dlog_map)
		atomic_store_explicit(pub_deliverlog_slot(c->dlog_map, slot), PUB_DIRECT_SLOT_RELEASED,
				      memory_order_release);
}

/* Remove drs[i]; one the caller's message lies in goes at the next pub_recv.
 * release: say so in its slot (not when the connection goes: the deliver
 * log goes with it, and a forked child closing the handle it inherited
 * must not write there, in the parent's deliver log). */
static void dr_remove(struct pub_client *c, unsigned i, bool release)
{
	struct pub_dread *dr = c->drs[i];

	via_flush(c, dr);
	if (release)
		release_slot(c, dr->slot);
	c->drs[i] = c->drs[--c->ndrs];
	if (c->dr_held == dr) {
		dr->next_dead = c->drs_dead;
		c->drs_dead = dr;
		return;
	}
	dr_free(dr);
}

static struct pub_dread *find_id(struct pub_client *c, uint32_t id, unsigned *idx)
{
	for (unsigned i = 0; i < c->ndrs; i++) {
		if (c->drs[i]->id == id) {
			if (idx)
				*idx = i;
			return c->drs[i];
		}
	}
	return NULL;
}

int dr_attach(struct pub_client *c, const struct pub_msg_shm *m, int fd)
{
	size_t len = pub_shmlog_map_len(m->capacity);
	struct pub_dread *dr, **v;
	unsigned i;
	void *map;

	if (!c->wake_map || !c->dlog_map || m->slot >= PUB_DELIVERLOG_NSLOTS || m->group.len > PUB_GROUP_MAX)
		return set_err(c, -PUB_EPROTO, "pubd's direct log frame is not one this libpub can read");
	v = pub_grow(c->drs, c->ndrs, &c->drs_cap, sizeof(*v), 4);
	if (!v)
		return set_err(c, -ENOMEM, "direct log: out of memory");
	c->drs = v;
	dr = calloc(1, sizeof(*dr));
	if (!dr)
		return set_err(c, -ENOMEM, "direct log: out of memory");
	/* Read-only: pubd hands over a file opened read-only. */
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		free(dr);
		release_slot(c, m->slot);
		return set_err(c, -errno, "mapping a direct log of '%.*s': %s", (int)m->group.len, m->group.ptr,
			       strerror(errno));
	}
	dr->map = map;
	dr->map_len = len;
	if (pub_direct_reader_init(&dr->d, map, len, m->capacity, m->max_record, m->start, m->group.ptr,
				   (uint8_t)m->group.len) < 0) {
		dr_free(dr);
		release_slot(c, m->slot);
		return set_err(c, -PUB_EPROTO, "pubd's direct log is not one this libpub can read");
	}
	pub_direct_reader_expect(&dr->d, m->seq);
	/* Where pubd says the log ends once it retires it (our deliver log's
	 * slot word: the writer cannot reach it). */
	pub_direct_reader_end_at(&dr->d, pub_deliverlog_slot(c->dlog_map, m->slot), m->log_id);
	memcpy(dr->group, m->group.ptr, m->group.len);
	dr->id = m->log_id;
	dr->slot = m->slot;
	dr->writer = m->peer;
	dr->source = m->source;
	dr->lost_said = atomic_load_explicit(pub_wake_lost(c->wake_map, m->slot), memory_order_relaxed);
	dr->via_tail = &dr->via_head;
	say_at(c, dr);
	if (find_id(c, dr->id, &i))
		dr_remove(c, i, true);
	c->drs[c->ndrs++] = dr;
	return 0;
}

void dr_retired(struct pub_client *c, uint32_t log_id)
{
	struct pub_dread *dr = find_id(c, log_id, NULL);

	if (dr)
		dr->gone = true;
}

void dr_detach_group(struct pub_client *c, const char *group)
{
	for (unsigned i = 0; i < c->ndrs;) {
		if (!strcmp(c->drs[i]->group, group))
			dr_remove(c, i, true);
		else
			i++;
	}
}

void dr_detach_all(struct pub_client *c)
{
	while (c->ndrs)
		dr_remove(c, c->ndrs - 1, false);
	free(c->drs);
	c->drs = NULL;
	c->drs_cap = 0;
}

void dr_release(struct pub_client *c)
{
	struct pub_dread *dr;

	c->dr_held = NULL;
	while ((dr = c->drs_dead)) {
		c->drs_dead = dr->next_dead;
		dr_free(dr);
	}
}

/* Where we are in the log: said in our wake page's slot, for pubd to count
 * what the writer laps us past while we do not read (directlog.h). */
static void say_at(struct pub_client *c, struct pub_dread *dr)
{
	atomic_store_explicit(pub_wake_at(c->wake_map, dr->slot), pub_wake_at_word(dr->id, dr->d.next_seq),
			      memory_order_relaxed);
}

/* Messages the writer lapped us past: said in our wake page's slot, after
 * the position they bring us to (release: pubd loads them the other way). */
static void say_lost(struct pub_client *c, struct pub_dread *dr)
{
	say_at(c, dr);
	atomic_store_explicit(pub_wake_lost(c->wake_map, dr->slot), dr->lost_said + dr->d.lost, memory_order_release);
}

/* A message of the log pubd delivered takes its place in the log's
 * sequence (what comes after it is counted from it). */
static void placed(struct pub_client *c, struct pub_dread *dr, uint64_t seq)
{
	if (!dr->d.synced || seq >= dr->d.next_seq) {
		dr->d.synced = true;
		dr->d.next_seq = seq + 1;
		say_at(c, dr);
	}
}

/* A message kept for its place (dr_hold) is the caller's now. */
static int take_via(struct pub_client *c, struct pub_dread *dr, struct pub_message *m)
{
	struct pub_queued *q = dr->via_head;

	placed(c, dr, q->seq);
	dr->via_head = q->next;
	if (!dr->via_head)
		dr->via_tail = &dr->via_head;
	c->cur = q; /* freed at the next pub_recv */
	*m = (struct pub_message){
		.group = q->group, .source = q->source, .seq = q->seq, .data = q->data, .len = q->len};
	return 1;
}

/* Waiting for pubd's delivery of a message in pieces: 1 with it, 0 while
 * it has not come (or -EPROTO from the log). */
static int detour_step(struct pub_client *c, struct pub_dread *dr, struct pub_message *m)
{
	int r;

	/* Kept ones of earlier places come first (late), then ours. */
	if (dr->via_head && dr->via_head->seq <= dr->detour_seq) {
		if (dr->via_head->seq == dr->detour_seq)
			dr->detour = false;
		return take_via(c, dr, m);
	}
	if (!dr->detour_done_ns) {
		r = pub_direct_skip_pieces(&dr->d);
		if (r < 0)
			return r;
		if (r == 1)
			dr->detour_done_ns = now_ns();
		else if (dr->gone)
			dr->detour = false; /* retired mid-message (its writer died): the rest never comes */
	}
	if (dr->detour_done_ns && now_ns() - dr->detour_done_ns > DETOUR_WAIT_NS)
		dr->detour = false; /* it comes late, if at all: the log goes on */
	return 0;
}

/* The next message of dr: 1, 0 for none, or -EPROTO/-ENOMEM. */
static int read_one(struct pub_client *c, struct pub_dread *dr, struct pub_message *m)
{
	struct pub_direct_msg msg;
	uint64_t lost = dr->d.lost;
	size_t need = 0;
	int r;

	for (;;) {
		r = pub_direct_next(&dr->d, dr->buf, dr->cap, c->info.max_message, &msg, &need);
		if (r != -ENOSPC)
			break;
		uint8_t *b = realloc(dr->buf, need);

		if (!b)
			return set_err(c, -ENOMEM, "recv: out of memory for a %zu-byte message", need);
		dr->buf = b;
		dr->cap = need;
	}
	if (dr->d.lost != lost)
		say_lost(c, dr);
	else if (r > 0)
		say_at(c, dr);
	if (r == 2) {
		/* In pieces: pubd delivers it; its place is here. */
		dr->detour = true;
		dr->detour_seq = msg.seq;
		dr->detour_done_ns = 0;
		return detour_step(c, dr, m);
	}
	if (r <= 0)
		return r;
	memcpy(c->msg_group, dr->group, dr->d.glen);
	c->msg_group[dr->d.glen] = '\0';
	*m = (struct pub_message){.group = c->msg_group,
				  .source = dr->source,
				  .seq = msg.seq,
				  .data = msg.len ? dr->buf : (const void *)"",
				  .len = msg.len};
	c->dr_held = dr;
	return 1;
}

/* dr's next message: its place's delivery, the log's next, or (read to
 * its end) one kept whose place passed unseen (a lap). */
static int dr_step(struct pub_client *c, struct pub_dread *dr, struct pub_message *m)
{
	int r;

	if (dr->detour) {
		r = detour_step(c, dr, m);
		if (r != 0 || dr->detour)
			return r;
	}
	r = read_one(c, dr, m);
	/* (Frozen, what is kept waits: records before it may come yet.) */
	if (r == 0 && !dr->detour && dr->via_head && !pub_direct_frozen(&dr->d))
		return take_via(c, dr, m);
	return r;
}

int dr_next(struct pub_client *c, struct pub_message *m)
{
	unsigned k, n = c->ndrs, i;
	int r;

	dr_release(c);
	for (k = 0; k < n && c->ndrs; k++) {
		i = (c->drs_rr + k) % c->ndrs;
		r = dr_step(c, c->drs[i], m);
		if (r == 1) {
			c->drs_rr = i + 1;
			return 1;
		}
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			/* The writer's nonsense ends its log here, not our connection. */
			set_err(c, -PUB_EPROTO,
				"direct log of '%s' from client %u: a record no libpub writes; "
				"that publisher's messages stop here",
				c->drs[i]->group, c->drs[i]->writer);
			dr_remove(c, i, true);
		} else if ((c->drs[i]->gone || c->drs[i]->d.ended) && !c->drs[i]->detour) {
			dr_remove(c, i, true); /* retired, and read to its end */
		}
	}
	return 0;
}

bool dr_any(struct pub_client *c)
{
	for (unsigned i = 0; i < c->ndrs; i++) {
		struct pub_dread *dr = c->drs[i];

		/* pubd reads it to its end: it says so when it is over (a
		 * DIRECT_GONE frame), not before. */
		if (pub_direct_frozen(&dr->d))
			continue;
		if (dr->via_head && (!dr->detour || dr->via_head->seq <= dr->detour_seq))
			return true;
		/* Waiting for pubd's delivery, the log's next is not read:
		 * that delivery rings. */
		if (dr->detour && dr->detour_done_ns)
			continue;
		if (pub_direct_ready(&dr->d))
			return true;
	}
	return false;
}

bool dr_hold(struct pub_client *c, const struct pub_message *m)
{
	struct pub_dread *dr = NULL;
	struct pub_queued *q;

	for (unsigned i = 0; i < c->ndrs && !dr; i++)
		if (c->drs[i]->source == m->source)
			dr = c->drs[i];
	if (!dr)
		return false;
	/* Its place came, or passed (one before it was lost): now. One
	 * older than the place awaited comes late, now. */
	if (dr->detour) {
		if (m->seq >= dr->detour_seq) {
			dr->detour = false;
			placed(c, dr, m->seq);
		}
		return false;
	}
	/* Its first piece is in the log before pubd delivers it: a reader
	 * with nothing left to read there passed its place (or was lapped
	 * past it). One with more to read keeps it until it gets there, or
	 * has read all (a lap); so does one pubd froze, which may have more
	 * (pubd reads the log to its end, and delivers as it reads). */
	if (!pub_direct_ready(&dr->d) && !pub_direct_frozen(&dr->d)) {
		placed(c, dr, m->seq);
		return false;
	}
	q = malloc(sizeof(*q) + m->len);
	if (!q)
		return false; /* out of order rather than lost */
	q->next = NULL;
	q->source = m->source;
	q->seq = m->seq;
	q->len = m->len;
	snprintf(q->group, sizeof(q->group), "%s", m->group);
	if (m->len)
		memcpy(q->data, m->data, m->len);
	*dr->via_tail = q;
	dr->via_tail = &q->next;
	return true;
}
