/* SPDX-License-Identifier: MIT */
/*
 * The direct path (common/directlog.h): a local publisher writes a group's
 * messages into a direct log pubd made for it, and the group's local
 * subscribers on shared memory read them there, with no hop through pubd.
 *
 * pubd's part:
 *   - it makes the log at the publisher's request (PUB_FRAME_DIRECT), once
 *     the group's publish ACL allows it, and hands the writer the memfd;
 *   - it hands each subscriber of the group that may read it (a client on
 *     shared memory with a wake page, slow_subscriber drop-oldest) a
 *     read-only file of it, with a slot in its deliver log and wake page,
 *     and starting where pubd itself has read up to; and it tells the
 *     writer about each such reader (PUB_SHM_WAKER: the reader's wake page,
 *     read-only, and its doorbell), so that the writer wakes it;
 *   - it reads every message itself (publog.c), as the one reader the
 *     writer waits for: to the fabric, to the local subscribers that do not
 *     read the log (their own queues), and into the counts; the fan-out
 *     passes over the log's readers (direct_now), which are counted
 *     delivered then. A host group whose subscribers all read the log
 *     needs nothing of pubd but the counts: pubd reads it lazily (the
 *     writer rings when half the log waits; once a second; before a query
 *     answers);
 *   - until the writer says it took in every reader change, pubd reads the
 *     log promptly and rings readers itself (the backstop);
 *   - the lost counts readers keep in their wake pages (messages the
 *     writer lapped them past) become sub_overflow drops of their
 *     subscriptions, each never more than pubd itself read of the log; so
 *     do, for a reader that does not read, the messages the writer surely
 *     wrote over since the position its page says (pubd's seq marks), and
 *     what a reader had not read of a log when the log goes.
 *
 * Access. A reader keeps whatever it mapped. So when a reload changes who
 * may read or write a group (its subscribe ACL, daemon.shm_direct,
 * slow_subscriber: all its logs; its publish ACL: the logs of the writers
 * it no longer allows), or the group goes, its direct logs are retired:
 * pubd reads what is in them (paused or not), writes where each ends into
 * its readers' deliver logs (a reader reads no further, whatever the writer
 * writes on), tells writer and readers (PUB_SHM_DIRECT_GONE),
 * and says so in the control page, which an honest writer looks at before
 * each message; it asks for a new log, handed to those allowed now. A
 * retired log is read no further by pubd (what its writer committed after
 * is counted client_gone) and its pages are punched out once its readers
 * had limits.group_log_drain_ms to read to its end (a log whose writer
 * closed, which nobody writes again: while a reader is behind on it, up to
 * twelve times that).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "directlog.h"
#include "grow.h"
#include "log.h"
#include "loop.h"
#include "server_internal.h"

/* Direct logs one client may write at once; past it it publishes through
 * its publish log. Each is a publish_log's worth of the client budget. */
#define DIRECT_MAX_PER_CLIENT 64

static bool direct_on(const struct pubd_ipc *srv)
{
	return srv->cfg->shm && srv->cfg->shm_direct && srv->cfg->slow_subscriber == PUBD_SLOW_DROP_OLDEST;
}

/*
 * ...and for c: only while the size limit is the one c was told. A direct
 * log's readers check a message's size against what they were told before
 * pubd reads it; after a reload that lowered limits.max_message_size they
 * took messages pubd then refused as too large (and told their publisher
 * so). Such a client publishes and is delivered to through pubd until it
 * reconnects: the reload retired its logs (pubd_ipc_direct_reconfigured).
 */
static bool direct_for(const struct pubd_client *c)
{
	return direct_on(c->srv) && c->told_max_message == c->srv->cfg->max_message_size;
}

static struct pub_shmlog_ctl *ctl_of(const struct srv_direct *d)
{
	return (struct pub_shmlog_ctl *)d->l->shm.map;
}

/* ---- the wake page ---- */

int srv_direct_hello(struct pubd_client *c, struct pub_msg_shm *m, int *fd)
{
	struct pub_wake_page *page;
	int memfd, ro;

	*fd = -1;
	if (!direct_on(c->srv) || !c->dlog)
		return -ENOTSUP;
	memfd = srv_shm_memfd(PUB_WAKE_PAGE_LEN);
	if (memfd < 0)
		return memfd;
	page = mmap(NULL, PUB_WAKE_PAGE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (page == MAP_FAILED) {
		close(memfd);
		return -ENOMEM;
	}
	page->magic = PUB_WAKE_PAGE_MAGIC;
	/* Writers get a read-only file: the page is the client's to write. */
	ro = srv_shm_read_only(memfd);
	if (ro < 0) {
		munmap(page, PUB_WAKE_PAGE_LEN);
		close(memfd);
		return ro;
	}
	c->wake_map = (uint8_t *)page;
	c->wake_ro_fd = ro;
	*m = (struct pub_msg_shm){.kind = PUB_SHM_WAKE_PAGE, .capacity = PUB_WAKE_PAGE_LEN};
	*fd = memfd;
	return 0;
}

/* ---- readers ---- */

static bool may_read(const struct pubd_sub *s)
{
	const struct pubd_client *c = s->client;

	return c->wake_map && c->dlog && !c->closing && !c->gone && direct_for(c);
}

/* The reader frame for s's client: the log read-only, from start. */
static int hand_to_reader(struct srv_direct *d, struct pubd_sub *s, uint32_t slot, uint64_t start, uint64_t seq)
{
	uint8_t frame[96 + PUB_PROTO_NAME_MAX];
	struct pub_msg_shm m = {.kind = PUB_SHM_DIRECT_READ,
				.capacity = d->l->r.cap,
				.max_record = d->l->r.max_record,
				.slot = slot,
				.start = start,
				.group = {d->name, d->name_len},
				.log_id = d->id,
				.peer = d->writer->id,
				.source = d->source,
				.seq = seq};
	long n = pub_proto_enc_shm(frame, sizeof(frame), &m);

	return n > 0 ? srv_send_fds(s->client, frame, (size_t)n, &d->ro_fd, 1) : -EINVAL;
}

/* Give s the log d, if it may read it and its socket can take the fd now
 * (else pubd delivers d's messages to it, as to any subscriber). */
static void reader_add(struct srv_direct *d, struct pubd_sub *s)
{
	struct pubd_client *c = s->client;
	struct srv_direct_reader *rd;
	uint64_t start, seq;
	uint32_t slot;

	if (!may_read(s) || d->retired_ns)
		return;
	/* What the writer committed before is read (and delivered to s if it
	 * is subscribed already) before s reads on from where pubd stands. */
	srv_publog_read_one(d->writer, d->l);
	if (c->out_head)
		return;
	rd = pub_grow(d->readers, d->nreaders, &d->readers_cap, sizeof(*rd), 4);
	if (!rd)
		return;
	d->readers = rd;
	slot = srv_slot_take(c);
	if (slot == UINT32_MAX)
		return;
	/* From the start of a message pubd has begun reading in pieces: the
	 * reader passes over what it finds before a first piece. */
	start = d->l->part || d->l->skip ? d->l->cur_pos : d->l->r.pos;
	/* ...and the seq of the message there: what it loses from the start on
	 * is counted too. Its position is said in its wake page from now: a
	 * reader that never reads (hung, or not reading its socket) is where
	 * it was handed the log. */
	seq = d->l->part || d->l->skip ? d->l->cur_seq : d->next_seq;
	atomic_store_explicit(pub_wake_at(c->wake_map, slot), pub_wake_at_word(d->id, seq), memory_order_relaxed);
	/* The slot's word in its deliver log says the log is live (a word of
	 * the slot's last log would end it at once). */
	atomic_store_explicit(pub_deliverlog_slot(c->dlog->shm.map, slot), pub_direct_end_word(d->id, false, 0),
			      memory_order_relaxed);
	if (hand_to_reader(d, s, slot, start, seq) < 0) {
		srv_slot_give(c, slot);
		return;
	}
	rd = &d->readers[d->nreaders++];
	*rd = (struct srv_direct_reader){
		.s = s,
		.slot = slot,
		.lost_base = atomic_load_explicit(pub_wake_lost(c->wake_map, slot), memory_order_acquire)};
	srv_direct_tell_writer(d, rd);
}

/* How take_lost weighs a reader's position (its wake page's word). */
enum lost_look {
	LOOK_LIVE,   /* a reader that may be reading now */
	LOOK_GONE,   /* one that reads no more (its client closed) */
	LOOK_ENDING, /* the log goes now, its pages with it */
	LOOK_LEFT,   /* its subscription ended: libpub lets the log go unread */
};

/* The writer's claim, as far as pubd believes it: no honest claim runs
 * further ahead of what pubd read than the ring's size. */
static uint64_t claim_now(const struct srv_direct *d)
{
	uint64_t claim = atomic_load_explicit(&ctl_of(d)->claim, memory_order_acquire);
	uint64_t most = d->l->r.pos + d->l->r.cap;

	return claim < most ? claim : most;
}

/*
 * Of the messages from seq `at` on, how many a reader that stood there
 * lost: those the writer surely wrote over, or all that pubd read when
 * the log goes. For a reader that may be reading, the writer's claim of
 * the tick before (claim_seen): one that copied a message out just before
 * the writer reached it says so in its page a moment later, and the
 * claim of a second ago cannot have overtaken that moment.
 */
static uint64_t lapped_since(const struct srv_direct *d, uint64_t at, enum lost_look look)
{
	if (look == LOOK_ENDING)
		return d->next_seq > at ? d->next_seq - at : 0;
	return pub_direct_seqmarks_lost(&d->marks, look == LOOK_GONE ? claim_now(d) : d->claim_seen, at);
}

/* n of what reader rd was given, taken back for r: their bytes at the mean
 * of what it was given and still counts (which it lost is not known, only
 * how many; exact for messages of one size), never more than that. */
static void take_back(struct srv_direct_reader *rd, uint64_t n, enum pub_drop_reason r)
{
	uint64_t left = rd->given - rd->lost_taken;
	uint64_t bytes = left ? rd->given_bytes / left * n : 0;

	if (bytes > rd->given_bytes)
		bytes = rd->given_bytes;
	rd->given_bytes -= bytes;
	rd->lost_taken += n;
	srv_take_back(rd->s, n, bytes, r);
}

/*
 * What reader rd lost, as far as is known now: sub_overflow drops, taken
 * off what was counted delivered to it. Of two figures the larger counts:
 * what it says in its wake page it lost (exact, counted as it reads), plus
 * what the writer surely lapped it past since where it says it is (a
 * reader that does not read, hung or gone, counts nothing itself). Its
 * page is its own to write: no more than pubd counted delivered to it is
 * taken, in all (an honest reader loses only what pubd read: the writer
 * overwrites nothing pubd has not read), and nothing taken is given back.
 */
/* The seq reader rd says it reads next in d; false: its page is on another log. */
static bool reader_at(const struct srv_direct *d, const struct srv_direct_reader *rd, uint64_t *at)
{
	const struct pubd_client *c = rd->s->client;

	return pub_wake_at_seq(atomic_load_explicit(pub_wake_at(c->wake_map, rd->slot), memory_order_acquire), d->id,
			       d->next_seq, at);
}

static void take_lost(struct srv_direct *d, struct srv_direct_reader *rd, enum lost_look look)
{
	struct pubd_sub *s = rd->s;
	struct pubd_client *c = s->client;
	uint64_t said, at, total, lapped, unread = 0;

	if (!c->wake_map)
		return;
	said = atomic_load_explicit(pub_wake_lost(c->wake_map, rd->slot), memory_order_acquire);
	total = said > rd->lost_base ? said - rd->lost_base : 0;
	if (reader_at(d, rd, &at)) {
		lapped = lapped_since(d, at, look == LOOK_LEFT ? LOOK_LIVE : look);
		total += lapped;
		/* Leaving, it reads nothing more: what pubd read past where it
		 * says it is, and the writer did not lap it past. */
		if (look == LOOK_LEFT && d->next_seq > at && d->next_seq - at > lapped)
			unread = d->next_seq - at - lapped;
	}
	if (total > rd->given)
		total = rd->given;
	if (total > rd->lost_taken) {
		c->srv->counters[PUBD_CTR_DIRECT_DELIVERED] -= total - rd->lost_taken;
		c->srv->counters[PUBD_CTR_DIRECT_LOST] += total - rd->lost_taken;
		take_back(rd, total - rd->lost_taken, PUB_DROP_SUB_OVERFLOW);
	}
	if (unread > rd->given - rd->lost_taken)
		unread = rd->given - rd->lost_taken;
	if (unread) {
		c->srv->counters[PUBD_CTR_DIRECT_DELIVERED] -= unread;
		take_back(rd, unread, PUB_DROP_SUB_DISCONNECT);
	}
}

/* Reader i goes: its lost count taken, its slot given back, the writer
 * told (a reader it wakes for nothing costs it a system call a message). */
static void reader_remove(struct srv_direct *d, unsigned i, bool ending)
{
	struct srv_direct_reader *rd = &d->readers[i];
	struct pubd_client *c = rd->s->client;

	take_lost(d, rd, ending ? LOOK_ENDING : c->closing || c->gone ? LOOK_GONE : LOOK_LEFT);
	/* The reader may still be on the log, behind: its slot's word keeps
	 * saying where the log ends until it lets it go. */
	srv_slot_hold(c, rd->slot);
	if (rd->told && !d->retired_ns && !d->writer->closing && !d->writer->gone) {
		uint8_t frame[96 + PUB_PROTO_NAME_MAX];
		struct pub_msg_shm m = {.kind = PUB_SHM_WAKER_GONE,
					.slot = rd->slot,
					.start = d->wakers_gen + 1,
					.group = {d->name, d->name_len},
					.log_id = d->id,
					.peer = c->id,
					.source = d->source};
		long n = pub_proto_enc_shm(frame, sizeof(frame), &m);

		if (n > 0 && srv_queue_frame(d->writer, frame, (size_t)n) == 0)
			srv_direct_publish_gen(d);
	}
	d->readers[i] = d->readers[--d->nreaders];
}

/* ---- open ---- */

static int list_add(struct srv_direct ***v, unsigned *n, unsigned *cap, struct srv_direct *d)
{
	struct srv_direct **nv = pub_grow(*v, *n, cap, sizeof(*nv), 4);

	if (!nv)
		return -ENOMEM;
	*v = nv;
	(*v)[(*n)++] = d;
	return 0;
}

static void list_del(struct srv_direct **v, unsigned *n, struct srv_direct *d)
{
	unsigned i;

	for (i = 0; i < *n; i++) {
		if (v[i] == d) {
			v[i] = v[--*n];
			return;
		}
	}
}

static struct srv_direct *find(const struct pubd_client *c, const struct pubd_group *g)
{
	for (unsigned i = 0; i < c->ndirects; i++)
		if (c->directs[i]->g == g)
			return c->directs[i];
	return NULL;
}

/* d goes, and its pages with it: what its readers have not read is lost to
 * them. */
static void direct_free(struct pubd_ipc *srv, struct srv_direct *d)
{
	while (d->nreaders)
		reader_remove(d, d->nreaders - 1, true);
	free(d->readers);
	if (d->ro_fd >= 0)
		close(d->ro_fd);
	/* Its pages are punched out (readers that keep their mappings pin
	 * nothing of pubd's) once nothing of pubd's reads them: now, or when
	 * the last message sent from a record in place returns (publog.c). */
	srv_publog_free_direct(srv, d->l);
	free(d);
}

/* Refused: the client publishes to the group through its publish log. */
static void refuse(struct pubd_client *c, uint32_t req_id, uint32_t code, const char *why, const char *group)
{
	srv_reply_error(c, req_id, code, "no direct log of '%s': %s", group, why);
}

void srv_direct_open(struct pubd_client *c, uint32_t req_id, struct pubd_group *g)
{
	struct pubd_ipc *srv = c->srv;
	uint8_t frame[96 + PUB_PROTO_NAME_MAX];
	struct pub_msg_shm m;
	struct srv_direct *d;
	int memfd = -1, fds[3];
	unsigned i;
	long n;

	if (!c->wake_map || !direct_for(c)) {
		refuse(c, req_id, PUB_ERR_STATE, "the direct path is off", g->name);
		return;
	}
	if (!srv_client_may(c, &g->cfg->publish)) {
		refuse(c, req_id, PUB_ERR_ACL, "the group's publish ACL does not allow it", g->name);
		return;
	}
	if (g->raw || find(c, g) || c->ndirects >= DIRECT_MAX_PER_CLIENT || c->out_head) {
		refuse(c, req_id, PUB_ERR_STATE,
		       g->raw	    ? "a raw group"
		       : find(c, g) ? "it has one"
				    : "not now",
		       g->name);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		goto nomem;
	d->ro_fd = -1;
	d->l = srv_publog_make_direct(c, &memfd);
	if (!d->l) {
		free(d);
		goto nomem;
	}
	d->l->direct = d;
	pub_direct_seqmarks_init(&d->marks, d->l->r.cap);
	d->writer = c;
	d->g = g;
	memcpy(d->name, g->name, g->name_len);
	d->name_len = (uint8_t)g->name_len;
	d->id = ++srv->next_direct_id;
	/* A stream of its own, apart from pubd's per-group one. */
	d->source = srv->source_id ^ (UINT64_C(0x9e3779b97f4a7c15) * d->id);
	d->ro_fd = srv_shm_read_only(memfd);
	if (d->ro_fd < 0 || list_add(&c->directs, &c->ndirects, &c->directs_cap, d) < 0)
		goto fail;
	if (list_add(&g->directs, &g->ndirects, &g->directs_cap, d) < 0) {
		list_del(c->directs, &c->ndirects, d);
		goto fail;
	}
	m = (struct pub_msg_shm){.kind = PUB_SHM_DIRECT_LOG,
				 .capacity = d->l->r.cap,
				 .max_record = d->l->r.max_record,
				 .group = {d->name, d->name_len},
				 .log_id = d->id,
				 .peer = c->id,
				 .source = d->source};
	n = pub_proto_enc_shm(frame, sizeof(frame), &m);
	fds[0] = memfd;
	fds[1] = d->l->shm.doorbell_fd;
	fds[2] = d->l->shm.space_fd;
	if (n <= 0 || srv_send_fds(c, frame, (size_t)n, fds, 3) < 0) {
		list_del(c->directs, &c->ndirects, d);
		list_del(g->directs, &g->ndirects, d);
		goto fail;
	}
	close(memfd);
	srv->counters[PUBD_CTR_DIRECT_OPENED]++;
	/* Its readers before the OK: the writer knows them at its first message. */
	for (i = 0; i < g->nsubs; i++)
		reader_add(d, g->subs[i]);
	srv_direct_update_lazy(d);
	srv_reply_ok(c, req_id);
	return;
fail:
	close(memfd);
	direct_free(srv, d);
nomem:
	refuse(c, req_id, PUB_ERR_INTERNAL, "out of memory or file descriptors", g->name);
}

/* ---- subscriptions ---- */

void srv_direct_attach(struct pubd_client *c, struct pubd_sub *s)
{
	struct pubd_group *g = s->group;
	unsigned i;

	(void)c;
	for (i = 0; i < g->ndirects; i++) {
		reader_add(g->directs[i], s);
		/* One that could not have it makes the log prompt again. */
		srv_direct_update_lazy(g->directs[i]);
	}
}

/* s's place among d's readers, or -1. */
static int reader_of(const struct srv_direct *d, const struct pubd_sub *s)
{
	for (unsigned j = 0; j < d->nreaders; j++)
		if (d->readers[j].s == s)
			return (int)j;
	return -1;
}

void srv_direct_leave(struct pubd_ipc *srv, struct pubd_sub *s)
{
	struct srv_direct *d;
	unsigned i;
	int j;

	for (i = 0; i < s->group->ndirects; i++) {
		d = s->group->directs[i];
		j = reader_of(d, s);
		if (j >= 0) {
			/* What it may have read there is counted delivered to it
			 * while it is a reader (a lazily read log is behind it).
			 * Not from inside a fan-out. */
			if (!srv->direct_fan_out)
				srv_publog_read_one(d->writer, d->l);
			reader_remove(d, (unsigned)j, false);
		}
		srv_direct_update_lazy(d);
	}
	/* Retired logs it may still read. */
	for (d = srv->retired; d; d = d->next_retired)
		if ((j = reader_of(d, s)) >= 0)
			reader_remove(d, (unsigned)j, false);
}

/* Before a subscription changes the group's readers: what the group's
 * lazily read logs hold goes to the subscribers it was published to. */
void srv_direct_catch_up_group(struct pubd_group *g)
{
	for (unsigned i = 0; i < g->ndirects; i++)
		if (g->directs[i]->lazy)
			srv_publog_read_one(g->directs[i]->writer, g->directs[i]->l);
}

/* ---- retiring ---- */

/* A retired-log frame (no fd) to c. */
static void tell_gone(struct srv_direct *d, struct pubd_client *c)
{
	uint8_t frame[96 + PUB_PROTO_NAME_MAX];
	struct pub_msg_shm m = {.kind = PUB_SHM_DIRECT_GONE,
				.group = {d->name, d->name_len},
				.log_id = d->id,
				.peer = d->writer_gone ? 0 : d->writer->id,
				.source = d->source};
	long n;

	if (c->closing || c->gone)
		return;
	n = pub_proto_enc_shm(frame, sizeof(frame), &m);
	if (n > 0)
		srv_queue_frame(c, frame, (size_t)n);
}

/* How a log is retired: what pubd reads of it first, and what it counts
 * when the log goes. */
enum retire_how {
	RETIRE_READ,	/* read up to where its writer is now; count what comes after */
	RETIRE_AS_READ, /* read up to there already (a reload's catch-up, under the
			 * ACLs it was written under); count what came since */
	RETIRE_CLOSED,	/* its writer is closing, whose logs were read and counted */
};

/*
 * d goes out of use: read up to where its writer is (RETIRE_READ), told to
 * writer and readers, and kept, unread, for the readers to finish: no
 * further than pubd read.
 */
static void retire(struct pubd_ipc *srv, struct srv_direct *d, enum retire_how how)
{
	struct pubd_client *w = d->writer;
	unsigned i;

	if (how == RETIRE_READ) {
		srv_direct_freeze(d);
		srv_publog_read_all(w, d->l);
	}
	/* What the writer commits from now on is counted when the log goes,
	 * and its readers read no further than pubd did: the word is in each
	 * one's deliver log, where the writer cannot write. (Read again now,
	 * under a reload's new ACLs, what an honest writer committed since the
	 * catch-up would be refused: its readers, frozen since, took none.) */
	d->counted = how == RETIRE_CLOSED;
	srv_direct_end(d);
	d->retired_ns = pubd_now_ns();
	atomic_store_explicit(&ctl_of(d)->retired, 1, memory_order_release);
	atomic_store_explicit(&ctl_of(d)->lazy, 0, memory_order_release);
	if (d->g)
		list_del(d->g->directs, &d->g->ndirects, d);
	d->g = NULL;
	list_del(w->directs, &w->ndirects, d);
	if (d->l->more) {
		d->l->more = false;
		srv->nlog_more--;
	}
	tell_gone(d, w);
	for (i = 0; i < d->nreaders; i++)
		tell_gone(d, d->readers[i].s->client);
	/* The writer's doorbell reads nothing more. */
	if (d->l->shm.watch)
		pubd_loop_unwatch(d->l->shm.watch);
	d->l->shm.watch = NULL;
	d->next_retired = srv->retired;
	srv->retired = d;
	srv->counters[PUBD_CTR_DIRECT_RETIRED]++;
}

void srv_direct_retire_group(struct pubd_ipc *srv, struct pubd_group *g)
{
	struct pubd_client *c;

	if (g) {
		while (g->ndirects)
			retire(srv, g->directs[g->ndirects - 1], RETIRE_READ);
		/* The group may be going: its list goes (made again if not). */
		free(g->directs);
		g->directs = NULL;
		g->directs_cap = 0;
		return;
	}
	for (c = srv->clients; c; c = c->next)
		while (c->ndirects)
			retire(srv, c->directs[c->ndirects - 1], RETIRE_READ);
}

/*
 * A reload from config `from` to `to` of g retires a log only when someone
 * may have lost a right to it: when the subscribe ACL changed at all (a
 * mapping cannot be taken back, and who holds one is not only who
 * subscribes now: an earlier subscriber keeps it), and, when only the
 * publish ACL changed, the logs whose writer it no longer allows (what
 * they write, readers would read without pubd's check). A reload that
 * leaves g's ACLs as they were keeps every log: its source and sequence
 * go on, and its readers keep their place.
 */
static bool acl_change_retires(const struct srv_direct *d, const struct pubd_group_config *from,
			       const struct pubd_group_config *to)
{
	return !pubd_acl_same(&from->subscribe, &to->subscribe) ||
	       (!pubd_acl_same(&from->publish, &to->publish) && !srv_client_may(d->writer, &to->publish));
}

/*
 * Before the reload gives g the config next: the logs it will retire are
 * said retired in their control page first (an honest writer looks there
 * before each message: it stops writing there and asks for a new log) and
 * their readers frozen (direct_end.c: a writer that writes on is read to
 * its end), then, when g's ACLs change at all, every log of g is read up to its
 * writer, under the ACLs it was written under and whatever pause its
 * client is in: its readers may have read that far. So nothing an honest
 * writer committed is left unread in the log the reload retires but the
 * one message it may have begun as it was told.
 */
void srv_direct_acl_changing(struct pubd_group *g, const struct pubd_group_config *next)
{
	unsigned i;

	if (pubd_acl_same(&g->cfg->subscribe, &next->subscribe) && pubd_acl_same(&g->cfg->publish, &next->publish))
		return;
	for (i = 0; i < g->ndirects; i++)
		if (acl_change_retires(g->directs[i], g->cfg, next)) {
			atomic_store_explicit(&ctl_of(g->directs[i])->retired, 1, memory_order_release);
			srv_direct_freeze(g->directs[i]); /* ended by srv_direct_acl_changed */
		}
	for (i = 0; i < g->ndirects; i++)
		srv_publog_read_all(g->directs[i]->writer, g->directs[i]->l);
}

/* The reload gave g its config; was is the one before (just read up to
 * every writer under it: srv_direct_acl_changing). A retired log goes,
 * with what a slow reader had not read of it, group_log_drain_ms later. */
void srv_direct_acl_changed(struct pubd_ipc *srv, struct pubd_group *g, const struct pubd_group_config *was)
{
	/* Backwards: retire() moves the list's last entry, seen already, into
	 * the place it empties. */
	for (unsigned i = g->ndirects; i-- > 0;)
		if (acl_change_retires(g->directs[i], was, g->cfg))
			retire(srv, g->directs[i], RETIRE_AS_READ);
}

void srv_direct_client_close(struct pubd_client *c)
{
	struct pubd_ipc *srv = c->srv;
	struct srv_direct *d;

	while (c->ndirects)
		retire(srv, c->directs[c->ndirects - 1], RETIRE_CLOSED);
	/* Its retired logs outlive it: they name no writer now. */
	for (d = srv->retired; d; d = d->next_retired)
		if (d->writer == c)
			d->writer_gone = true;
	if (c->wake_map) {
		munmap(c->wake_map, PUB_WAKE_PAGE_LEN);
		close(c->wake_ro_fd);
		c->wake_map = NULL;
		c->wake_ro_fd = -1;
	}
	free(c->directs);
	c->directs = NULL;
	c->directs_cap = 0;
}

/* A retired log goes: what its writer committed after it was retired is
 * counted (client_gone), against nobody's client counts if it is gone. */
static void retired_free(struct pubd_ipc *srv, struct srv_direct *d)
{
	uint64_t n = d->counted ? 0 : srv_publog_unhandled_one(d->l);

	if (n) {
		if (!d->writer_gone)
			pubd_drops_add(&d->writer->drops, PUB_DROP_CLIENT_GONE, n);
		pubd_drops_add(srv->drops, PUB_DROP_CLIENT_GONE, n);
		srv->counters[PUBD_CTR_MSG_DROPPED] += n;
	}
	direct_free(srv, d);
}

/* What d's readers lost, as far as is known now; at a tick, the writer's
 * claim is taken in for the next (lapped_since). */
static void take_all_lost(struct srv_direct *d, bool tick)
{
	for (unsigned j = 0; j < d->nreaders; j++)
		take_lost(d, &d->readers[j], LOOK_LIVE);
	if (tick)
		d->claim_seen = claim_now(d);
}

/* A log whose writer closed was read whole and is written no more: a reader
 * behind on it is slow, not lapped, and reads on past group_log_drain_ms, up
 * to CLOSED_KEEP_DRAINS of them (the log still charged to the budget). */
#define CLOSED_KEEP_DRAINS 12

static bool a_reader_reads_on(const struct srv_direct *d)
{
	uint64_t at;

	for (unsigned j = 0; j < d->nreaders; j++) {
		const struct pubd_client *c = d->readers[j].s->client;

		if (c->wake_map && !c->closing && !c->gone && reader_at(d, &d->readers[j], &at) && at < d->next_seq)
			return true;
	}
	return false;
}

/* Has retired log d had its time? */
static bool retired_is_due(const struct pubd_ipc *srv, const struct srv_direct *d, uint64_t now_ns)
{
	uint64_t grace = srv->cfg->group_log_drain_ms * 1000000ull, age = now_ns - d->retired_ns;

	if (srv->exiting)
		return true;
	if (age < grace)
		return false;
	return !(d->counted && age < grace * CLOSED_KEEP_DRAINS && a_reader_reads_on(d));
}

void srv_direct_tick(struct pubd_ipc *srv, uint64_t now_ns)
{
	struct srv_direct **pp, *d;
	struct pubd_client *c;
	unsigned i;

	for (pp = &srv->retired; (d = *pp);) {
		if (retired_is_due(srv, d, now_ns)) {
			*pp = d->next_retired;
			retired_free(srv, d);
			continue;
		}
		take_all_lost(d, true);
		pp = &d->next_retired;
	}
	for (c = srv->clients; c; c = c->next) {
		for (i = 0; i < c->ndirects; i++) {
			d = c->directs[i];
			if (d->lazy)
				srv_publog_read_one(c, d->l);
			take_all_lost(d, true);
			/* Readers the writer could not be told of yet. */
			srv_direct_after_read(d, false);
		}
	}
}

void srv_direct_catch_up(struct pubd_ipc *srv)
{
	struct pubd_client *c;
	struct srv_direct *d;
	unsigned i;

	for (c = srv->clients; c; c = c->next) {
		for (i = 0; i < c->ndirects; i++) {
			d = c->directs[i];
			srv_publog_read_one(c, d->l);
			take_all_lost(d, false);
		}
	}
	for (d = srv->retired; d; d = d->next_retired)
		take_all_lost(d, false);
}

unsigned pubd_ipc_sub_direct_logs(const struct pubd_sub *s)
{
	unsigned i, n = 0;

	for (i = 0; i < s->group->ndirects; i++)
		n += reader_of(s->group->directs[i], s) >= 0;
	return n;
}
