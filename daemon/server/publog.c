/* SPDX-License-Identifier: MIT */
/*
 * A client's publish log: a shared-memory ring (common/shmlog.h) the client
 * writes its messages into and pubd reads without a system call per
 * message. pubd makes it at HELLO when the client asks (a memfd sealed
 * against shrinking, so a client cannot make pubd's reads fault), with two
 * eventfds: the doorbell the client rings when pubd said it sleeps, and the
 * one pubd rings when the client said it waits for room.
 *
 * Records (common/publog_format.h) carry a message whole, or in pieces
 * when it is larger than a record may be. Everything in the log is the
 * client's: each record is checked before it is used, what the checks read
 * is copied first, and a record no honest libpub writes ends that client
 * (l->broken; the session turns it into a protocol error), nobody else.
 *
 * A message that fits one record is published from the record itself: its
 * buffer is lent the record's bytes (msgbuf.h), and the log's head, the
 * space given back to the writer, stays before the first record still lent.
 * The engine usually has the message sent and delivered within the same
 * loop turn; what is still held at the turn's end (pubd_ipc_settle) is
 * copied then, so a writer waits for no one but the fabric. The transmit
 * path pins what it holds (msgbuf.h): a message waiting for the fabric (up
 * to half the log, lender.tx_hold_max), or being sent from the record in
 * place (verbs, the mapping registered as l->region), is neither copied
 * nor given back before it is sent. A log
 * whose client left while it had such loans stays mapped, and charged to
 * the client budget, until the last returns. The bytes a hostile writer
 * changes under a lent message are its own message's.
 *
 * Reading follows the socket's rules: a message is admitted by the same
 * checks as a PUBLISH frame (admit.c), a client paused by back-pressure is
 * not read (its own unread replies pause it too), a large message in pieces
 * is charged to the client budget, and what a client committed before it
 * hung up is read, a batch a turn, up to one lap past where its close began
 * and for at most CLOSE_GRACE_NS (srv_publog_drain); what lies beyond is
 * counted client_gone. A writer that keeps committing after it hung up
 * (another thread, or a process sharing the mapping) holds nobody up.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "publog_format.h"
#include "server_internal.h"

/* Records read per wakeup before other clients get a turn. */
#define LOG_BATCH 256

/* Smaller messages are copied: lending one costs about 150 instructions
 * more than copying 64 bytes into a recycled buffer (tests/bench/bench_rxcost). */
#define LEND_MIN 1024u

/*
 * The client rang: it committed records while we said we sleep. The
 * doorbell is watched edge-triggered and never read: each ring (an
 * eventfd write) makes an edge of its own whatever the count, so the
 * read() that reset the count only cost a system call per wakeup when
 * pubd sleeps between messages (sparse traffic; bench_locallat "asleep":
 * p50 8.46 -> 8.39 us, p99 15.5 -> 14.5 us here). What one read does not
 * finish (a batch, a pause) is read on later turns (l->more), not on the
 * doorbell's level. A count the client drives to its maximum stops its
 * own rings only.
 */
static void read_log(struct pubd_client *c, struct srv_publog *l);

static void on_doorbell(void *ctx, uint32_t events)
{
	struct srv_publog *l = ctx;

	(void)events;
	read_log(l->owner, l);
}

/* ---- lent records ---- */

static struct srv_publog *log_of(struct pubd_msgbuf_lender *lender)
{
	return (struct srv_publog *)((char *)lender - offsetof(struct srv_publog, lender));
}

static void unmap_and_free(struct srv_publog *l)
{
	pubd_mem_region_release(&l->region);
	srv_shm_punch(&l->shm, 0, l->shm.map_len);
	srv_budget_give(l->srv, l->shm.charged);
	srv_shm_unmap(l->shm.map, l->shm.map_len);
	free(l);
}

/* Past the loans at the front that came back or were copied. */
static void pop_settled(struct srv_publog *l)
{
	while (l->lent_head != l->lent_tail && !l->lent[l->lent_head % PUBLOG_LENT_MAX].m)
		l->lent_head++;
}

/* The last reference to a lent message went: its record may be reused
 * (from the next release on). An orphan log goes with its last loan. */
static void loan_returned(struct pubd_msgbuf_lender *lender, uint32_t cookie)
{
	struct srv_publog *l = log_of(lender);

	l->lent[cookie % PUBLOG_LENT_MAX].m = NULL;
	pop_settled(l);
	if (l->orphan && l->lent_head == l->lent_tail)
		unmap_and_free(l);
}

/* A message lent the record being taken, or NULL (too many lent: copy). */
static struct pubd_msgbuf *lend(struct srv_publog *l, const struct pub_publog_piece *p)
{
	struct pubd_msgbuf *m;

	if (l->lent_tail - l->lent_head >= PUBLOG_LENT_MAX)
		return NULL;
	m = pubd_msgbuf_lend(&l->lender, l->lent_tail, p->data, p->len);
	if (!m)
		return NULL;
	l->lent[l->lent_tail % PUBLOG_LENT_MAX] = (struct srv_publog_loan){.m = m, .pos = l->cur_pos};
	l->lent_tail++;
	if (!l->lending) {
		l->lending = true;
		l->next_lending = l->srv->lending;
		l->srv->lending = l;
	}
	l->srv->counters[PUBD_CTR_PUBLOG_LENT]++;
	return m;
}

/* Copy every message still lent. Returns how many stay lent (out of
 * memory, or pinned by a send reading the record in place). */
static uint32_t detach_all(struct srv_publog *l)
{
	uint32_t i, left = 0;

	for (i = l->lent_head; i != l->lent_tail; i++) {
		struct srv_publog_loan *e = &l->lent[i % PUBLOG_LENT_MAX];

		if (!e->m)
			continue;
		if (pubd_msgbuf_detach(e->m) < 0) {
			left++;
			continue;
		}
		e->m = NULL;
		l->srv->counters[PUBD_CTR_PUBLOG_LENT_COPIED]++;
	}
	pop_settled(l);
	return left;
}

/* Give the writer back what was read, up to the first record still lent,
 * and ring it when it waits for room (not while held). */
static void release(struct srv_publog *l)
{
	uint64_t limit = l->lent_head != l->lent_tail ? l->lent[l->lent_head % PUBLOG_LENT_MAX].pos : l->r.pos;

	if (!l->held && pub_shmlog_release_to(&l->r, limit)) {
		uint64_t one = 1;

		if (write(l->shm.space_fd, &one, sizeof(one)) < 0)
			log_debug("client %u: publish log space eventfd: %s", l->client_id, strerror(errno));
	}
}

void srv_settle_lending(struct pubd_ipc *srv)
{
	struct srv_publog *l, **pp = &srv->lending;

	while ((l = *pp)) {
		detach_all(l);
		release(l);
		if (l->lent_head == l->lent_tail) {
			*pp = l->next_lending;
			l->lending = false;
		} else {
			pp = &l->next_lending;
		}
	}
}

static void unlink_lending(struct pubd_ipc *srv, struct srv_publog *l)
{
	struct srv_publog **pp;

	for (pp = &srv->lending; *pp; pp = &(*pp)->next_lending) {
		if (*pp == l) {
			*pp = l->next_lending;
			break;
		}
	}
	l->lending = false;
}

static void log_free(struct pubd_ipc *srv, struct srv_publog *l)
{
	if (l->part) {
		srv_budget_give(srv, l->part->len);
		pubd_msgbuf_put(l->part);
	}
	if (l->lending)
		unlink_lending(srv, l);
	/* Messages still lent keep reading the mapping: copied now, or (out
	 * of memory, or a send still reading one in place) the mapping
	 * stays until the last of them returns. */
	l->orphan = detach_all(l) > 0;
	if (!l->orphan) {
		pubd_mem_region_release(&l->region);
		/* Nothing of ours reads it now; the client may still map it. */
		srv_shm_punch(&l->shm, 0, l->shm.map_len);
	}
	srv_shm_close(srv, &l->shm, l->orphan);
	if (!l->orphan)
		free(l);
}

/* Make the log, its mapping and eventfds. Returns it, with *memfd to send. */
static struct srv_publog *log_make(struct pubd_client *c, uint32_t cap, uint32_t kind, int *memfd)
{
	struct srv_publog *l = calloc(1, sizeof(*l));

	*memfd = -1;
	if (!l)
		return NULL;
	l->srv = c->srv;
	l->client_id = c->id;
	l->lender.returned = loan_returned;
	*memfd = srv_shm_make(c, cap, kind, &l->shm);
	if (*memfd < 0)
		goto fail;
	l->region.base = l->shm.map;
	l->region.len = l->shm.map_len;
	l->lender.region = &l->region;
	l->lender.tx_hold_max = cap / 2;
	if (pub_shmlog_reader_init(&l->r, l->shm.map, l->shm.map_len, cap,
				   ((struct pub_shmlog_ctl *)l->shm.map)->max_record, 0) < 0)
		goto fail;
	l->owner = c;
	l->shm.watch = pubd_loop_watch(c->srv->loop, l->shm.doorbell_fd, EPOLLIN | EPOLLET, on_doorbell, l);
	if (!l->shm.watch)
		goto fail;
	return l;
fail:
	if (*memfd >= 0)
		close(*memfd);
	*memfd = -1;
	log_free(c->srv, l);
	return NULL;
}

int srv_publog_open(struct pubd_client *c, struct pub_msg_shm *m, int fds[3])
{
	struct pubd_ipc *srv = c->srv;
	uint32_t cap = srv_shm_capacity(srv->cfg->publish_log);
	size_t charge = pub_shmlog_map_len(cap);
	struct srv_publog *l;
	int memfd;

	if (!srv_budget_take(srv, charge)) {
		srv->counters[PUBD_CTR_BUDGET_WAITS]++;
		return -ENOBUFS; /* the client publishes through its socket */
	}
	l = log_make(c, cap, PUB_SHM_PUBLISH_LOG, &memfd);
	if (!l) {
		srv_budget_give(srv, charge);
		srv_log_limited(srv, log_client, LOG_WARNING, "client %u: cannot make a publish log of %u bytes: %s",
				c->id, cap, strerror(errno));
		return -ENOMEM;
	}
	l->shm.charged = charge;
	c->log = l;
	*m = (struct pub_msg_shm){.kind = PUB_SHM_PUBLISH_LOG, .capacity = cap, .max_record = l->r.max_record};
	fds[0] = memfd;
	fds[1] = l->shm.doorbell_fd;
	fds[2] = l->shm.space_fd;
	return 0;
}

struct srv_publog *srv_publog_make_direct(struct pubd_client *c, int *memfd)
{
	struct pubd_ipc *srv = c->srv;
	uint32_t cap = srv_shm_capacity(srv->cfg->direct_log);
	size_t charge = pub_shmlog_map_len(cap);
	struct srv_publog *l;

	*memfd = -1;
	if (!srv_budget_take(srv, charge)) {
		srv->counters[PUBD_CTR_BUDGET_WAITS]++;
		errno = ENOBUFS;
		return NULL;
	}
	l = log_make(c, cap, PUB_SHM_DIRECT_LOG, memfd);
	if (!l) {
		srv_budget_give(srv, charge);
		return NULL;
	}
	l->shm.charged = charge;
	return l;
}

void srv_publog_free_direct(struct pubd_ipc *srv, struct srv_publog *l)
{
	if (l->more)
		srv->nlog_more--;
	log_free(srv, l);
}

/* The log cannot be read further: the session ends the client. */
static int broken(struct pubd_client *c, struct srv_publog *l, const char *why)
{
	if (!l->broken) {
		snprintf(l->why, sizeof(l->why), "%s: %s", l->direct ? "direct log" : "publish log", why);
		l->broken = true;
		srv_mark_dirty(c);
	}
	return -1;
}

static void count_gone(struct pubd_client *c, uint64_t n)
{
	pubd_drops_add(&c->drops, PUB_DROP_CLIENT_GONE, n);
	pubd_drops_add(c->srv->drops, PUB_DROP_CLIENT_GONE, n);
	c->srv->counters[PUBD_CTR_MSG_DROPPED] += n;
}

/* The group a first piece names: a direct log's is its own (its decode
 * checked the record names it, and copies nothing). */
static const char *piece_group(const struct srv_publog *l, const struct pub_publog_piece *p)
{
	return l->direct ? l->direct->name : p->group;
}

/*
 * srv_publish_admit for a record, remembering the group it admitted: the
 * records of one log mostly go to one group, and within one admission
 * generation (no group gone, no ACL reloaded since) the same name is the
 * same group with the same answer from its ACL. The size checks are made
 * every time.
 */
static struct pubd_group *admit(struct pubd_client *c, struct srv_publog *l, const struct pub_publog_piece *p)
{
	struct pubd_group *g;

	/* Within the generation the group is still there: its own name is the
	 * one to compare (a direct log's records name its group: decoded so). */
	g = l->admit_gen == c->srv->admit_gen ? l->admit_g : NULL;
	if (g && (l->direct ? g == l->direct->g : g->name_len == p->glen && memcmp(g->name, p->group, p->glen) == 0))
		return srv_publish_size_ok(c, p->req_id, g, p->total) ? g : NULL;
	g = srv_publish_admit(c, p->req_id, piece_group(l, p), p->glen, p->total);
	if (g) {
		l->admit_g = g;
		l->admit_gen = c->srv->admit_gen;
	}
	return g;
}

/* srv_publish_accept; a direct log's readers have the message already. */
static void accept_message(struct pubd_client *c, struct srv_publog *l, uint32_t req_id, struct pubd_group *g,
			   struct pubd_msgbuf *m, bool pieces)
{
	if (l->direct)
		srv_direct_accept_begin(l->direct, g, m->len, pieces ? m : NULL, l->cur_seq);
	srv_publish_accept(c, req_id, g, m);
	if (l->direct)
		srv_direct_accept_end(l->direct, g);
}

/* A message's first (or only) piece. Returns 1 when taken, 0 to wait for
 * the client budget, -1 when the log is broken. */
static int first_piece(struct pubd_client *c, struct srv_publog *l, const struct pub_publog_piece *p)
{
	struct pubd_ipc *srv = c->srv;
	struct pubd_group *g;
	struct pubd_msgbuf *m;

	g = admit(c, l, p);
	if (!g) {
		l->skip = p->more; /* refused and counted; its other pieces are read and dropped */
		l->part_total = p->total;
		l->part_have = p->len;
		return 1;
	}
	/* A host group's small message goes nowhere but to the local
	 * subscribers, now: they take it from the record, and only one that
	 * must queue it costs a copy (no buffer, no loan). A large one is lent
	 * as for any group: when its group log is full it waits there as a
	 * loan of the record, not as a copy (borrowed, 64 KiB messages under
	 * PUB_MORE bursts ran at 0.6x the lent speed). */
	if (g->host && !p->more && p->len < LEND_MIN) {
		if (l->direct)
			srv_direct_accept_begin(l->direct, g, p->len, NULL, l->cur_seq);
		srv_publish_accept_local(c, p->req_id, g, p->data, p->len);
		if (l->direct)
			srv_direct_accept_end(l->direct, g);
		return 1;
	}
	if (p->more && !srv_budget_take(srv, p->total)) {
		/* A retire's catch-up (forced) stops for nothing: the log's
		 * readers may have read past this message. It goes over the
		 * budget by this one message, held while its pieces come. */
		if (!l->forced) {
			srv_pause_for_budget(c, p->total);
			return 0;
		}
		srv->charged += p->total;
	}
	m = !p->more && p->len >= LEND_MIN ? lend(l, p) : NULL;
	if (!m && (m = pubd_msgbuf_alloc(p->total)))
		memcpy(m->data, p->data, p->len); /* the whole message, or its first piece */
	if (!m) {
		if (p->more)
			srv_budget_give(srv, p->total);
		srv_publish_refused(c, &g->drops, PUB_DROP_CLIENT_BUDGET);
		srv_reply_error(c, p->req_id, PUB_ERR_INTERNAL, "out of memory");
		l->skip = p->more;
		l->part_total = p->total;
		l->part_have = p->len;
		return 1;
	}
	if (!p->more) {
		accept_message(c, l, p->req_id, g, m, false);
		pubd_msgbuf_put(m);
		return 1;
	}
	l->part = m;
	l->part_have = p->len;
	l->part_total = p->total;
	l->part_req = p->req_id;
	l->part_glen = p->glen;
	memcpy(l->part_group, piece_group(l, p), p->glen);
	return 1;
}

/* A later piece of the message in l->part (or of one being skipped). */
static int next_piece(struct pubd_client *c, struct srv_publog *l, const struct pub_publog_piece *p)
{
	struct pubd_group *g;
	struct pubd_msgbuf *m;

	if (p->first || p->total != l->part_total || p->len > l->part_total - l->part_have ||
	    p->more == (l->part_have + p->len == l->part_total))
		return broken(c, l, "a message's pieces do not add up");
	if (l->part)
		memcpy(l->part->data + l->part_have, p->data, p->len);
	l->part_have += p->len;
	if (p->more)
		return 1;
	l->skip = false;
	if (!(m = l->part))
		return 1;
	l->part = NULL;
	srv_budget_give(c->srv, m->len);
	/* Checked again: a reload may have removed the group or changed its
	 * ACL while the pieces came. */
	g = srv_publish_admit(c, l->part_req, l->part_group, l->part_glen, m->len);
	if (g)
		accept_message(c, l, l->part_req, g, m, true);
	pubd_msgbuf_put(m);
	return 1;
}

static int take_record(struct pubd_client *c, struct srv_publog *l, const struct pub_shmlog_view *v)
{
	struct pub_publog_piece p;

	if ((l->direct ? srv_direct_decode(l->direct, v, &p) : pub_publog_decode(v, &p)) < 0)
		return broken(c, l, "malformed record");
	if (l->part || l->skip)
		return next_piece(c, l, &p);
	if (!p.first)
		return broken(c, l, "a message's later piece without its first");
	l->cur_pos = v->pos;
	l->cur_seq = p.seq;
	if (l->direct)
		pub_direct_seqmarks_note(&l->direct->marks, v->pos, p.seq);
	return first_piece(c, l, &p);
}

static void read_log(struct pubd_client *c, struct srv_publog *l)
{
	struct pub_shmlog_view v;
	unsigned n = 0;
	bool dry = false;
	int r, t;

	/* A client pubd is ending is not read, unless it hung up and its
	 * log is being drained (srv_publog_drain). */
	if (!l || l->broken || l->drained || (c->closing && !l->draining))
		return;
	if (l->more) {
		l->more = false;
		c->srv->nlog_more--;
	}
	while ((!c->paused || l->forced) && n < LOG_BATCH) {
		/* Draining: no further than a lap past where the close began. */
		if (l->draining && l->r.pos >= l->drain_end) {
			dry = true;
			break;
		}
		r = pub_shmlog_next(&l->r, &v);
		if (r < 0) {
			broken(c, l, "a record no writer of this protocol writes (length, type or lap)");
			break;
		}
		if (r == 0) {
			dry = true;
			break;
		}
		t = take_record(c, l, &v);
		if (t <= 0)
			break;
		pub_shmlog_consume(&l->r, &v);
		l->records++;
		n++;
		/* Each record with a req_id the reader refuses queues an ERROR. */
		if (!l->forced && srv_replies_back_pressure(c))
			break;
	}
	release(l);
	if (l->broken || c->paused)
		return;
	if (l->draining) {
		/* Read to where it ran dry (or to the lap's end) once: what
		 * it commits after that is counted, not read. */
		if (dry)
			l->drained = true;
		else if (!l->more) {
			l->more = true;
			c->srv->nlog_more++;
		}
		return;
	}
	/* A direct log whose readers take everything of it (a host group's)
	 * is read lazily: its writer rings only when half of it waits. */
	if (l->direct && !srv_direct_after_read(l->direct, n > 0) && dry && !l->draining)
		return;
	/* Stopped by the batch, or found it empty: then sleep, unless a
	 * record came while we said so. While the loop polls (fabric.busy_poll,
	 * or lingering after work) pubd does not sleep on a log: it looks
	 * again every loop turn, and the client need not ring. */
	if ((!dry || c->srv->polling || !pub_shmlog_reader_sleep(&l->r)) && !l->more) {
		l->more = true;
		c->srv->nlog_more++;
	}
}

void srv_publog_read(struct pubd_client *c)
{
	unsigned i;

	read_log(c, c->log);
	for (i = 0; i < c->ndirects; i++)
		read_log(c, c->directs[i]->l);
}

void srv_publog_read_one(struct pubd_client *c, struct srv_publog *l)
{
	struct pub_shmlog_view v;
	uint64_t end = l->r.pos + l->r.cap, before;

	/* Batch after batch, up to what is committed now (a lap at most, for
	 * a writer that goes on meanwhile), unless back-pressure stops it. */
	do {
		before = l->r.pos;
		read_log(c, l); /* a record no writer writes ends its client here, as when rung */
	} while (l->r.pos != before && (!c->paused || l->forced) && !l->broken && l->r.pos < end &&
		 pub_shmlog_next(&l->r, &v) == 1);
}

void srv_publog_read_all(struct pubd_client *c, struct srv_publog *l)
{
	l->forced = true;
	srv_publog_read_one(c, l);
	l->forced = false;
}

void srv_publog_hold(struct srv_publog *l, bool hold)
{
	l->held = hold;
	release(l);
}

bool srv_publog_more(const struct pubd_client *c)
{
	unsigned i;

	if (c->log && c->log->more)
		return true;
	for (i = 0; i < c->ndirects; i++)
		if (c->directs[i]->l->more)
			return true;
	return false;
}

const char *srv_publog_broken(const struct pubd_client *c)
{
	unsigned i;

	if (c->log && c->log->broken)
		return c->log->why;
	for (i = 0; i < c->ndirects; i++)
		if (c->directs[i]->l->broken)
			return c->directs[i]->l->why;
	return NULL;
}

bool srv_publog_caught_up(struct pubd_client *c)
{
	struct pub_shmlog_view v;

	if (!c->log || c->log->broken)
		return true;
	srv_publog_read(c);
	return !c->paused && !c->log->broken && pub_shmlog_next(&c->log->r, &v) == 0;
}

/* Is the drain of a hung-up client's log over (read to where it ran dry
 * or to its lap's end, broken, out of time, or pubd exiting)? */
static bool drain_over(const struct pubd_client *c, const struct srv_publog *l, uint64_t now_ns)
{
	return l->drained || l->broken || c->srv->exiting || now_ns >= l->drain_deadline_ns;
}

static bool drain_log(struct pubd_client *c, struct srv_publog *l)
{
	struct pub_shmlog_view v;
	uint64_t now = pubd_now_ns();

	if (!l || l->broken || c->srv->exiting)
		return false;
	if (l->draining)
		return !drain_over(c, l, now);
	/* One pubd ended is not read further (srv_publog_read), hung up or not. */
	if (c->closing)
		return false;
	/* Nothing committed: nothing to wait for (a record half-written
	 * is counted at close). */
	if (pub_shmlog_next(&l->r, &v) != 1)
		return false;
	/* One lap: all an honest writer can have committed when it hung up
	 * (it writes no further than the space pubd gave back). A writer
	 * that goes on past it, or for longer than a client being closed is
	 * given to read why, has what lies beyond counted client_gone. */
	l->draining = true;
	l->drain_end = l->r.pos + l->r.cap;
	l->drain_deadline_ns = now + CLOSE_GRACE_NS;
	if (!l->more) {
		l->more = true; /* read from pubd_ipc_flush_all, a batch a turn */
		c->srv->nlog_more++;
	}
	return true;
}

bool srv_publog_drain(struct pubd_client *c)
{
	bool any = drain_log(c, c->log);
	unsigned i;

	for (i = 0; i < c->ndirects; i++)
		any |= drain_log(c, c->directs[i]->l);
	return any;
}

bool srv_publog_draining(const struct pubd_client *c)
{
	unsigned i;

	if (c->log && c->log->draining)
		return true;
	for (i = 0; i < c->ndirects; i++)
		if (c->directs[i]->l->draining)
			return true;
	return false;
}

void srv_publog_close(struct pubd_client *c)
{
	struct srv_publog *l = c->log;
	uint64_t lost;

	if (!l)
		return;
	/* What it committed and pubd did not read (a record left
	 * half-written, a message whose pieces stop, what it wrote past the
	 * drain) was published from its side: counted. */
	lost = srv_publog_unhandled(c);
	if (lost) {
		srv_log_limited(c->srv, log_client, LOG_INFO,
				"client %u: closed leaving %llu messages in its publish log unfinished or unread "
				"(counted client_gone)",
				c->id, (unsigned long long)lost);
		count_gone(c, lost);
	}
	if (l->more)
		c->srv->nlog_more--;
	c->log = NULL;
	log_free(c->srv, l);
}

static uint64_t unhandled(struct srv_publog *l)
{
	struct pub_publog_piece p;
	struct pub_shmlog_reader r;
	struct pub_shmlog_view v;
	uint64_t n, end;
	bool open;

	if (!l || l->broken)
		return 0;
	/* A message in pieces counts once: whether it was begun before (in
	 * l->part; a skipped one was counted when refused) or in the log. */
	n = l->part ? 1 : 0;
	open = l->part || l->skip;
	r = l->r; /* a copy: counting consumes nothing */
	/* No further than a lap: a writer that goes on committing while it
	 * is counted must not keep pubd counting (nor stopping) for ever. */
	end = r.pos + r.cap;
	while (r.pos < end && pub_shmlog_next(&r, &v) == 1 &&
	       (l->direct ? srv_direct_decode(l->direct, &v, &p) : pub_publog_decode(&v, &p)) == 0) {
		n += p.first;
		open = p.more;
		pub_shmlog_consume(&r, &v);
	}
	/* A record begun and never committed is a message lost, unless it
	 * was a later piece of one already counted. */
	return n + (r.pos < end && !open && pub_shmlog_partial(&r));
}

uint64_t srv_publog_unhandled(struct pubd_client *c)
{
	uint64_t n = unhandled(c->log);
	unsigned i;

	for (i = 0; i < c->ndirects; i++)
		n += unhandled(c->directs[i]->l);
	return n;
}

uint64_t srv_publog_unhandled_one(struct srv_publog *l)
{
	return unhandled(l);
}

void srv_publog_stop_all(struct pubd_client *c)
{
	unsigned i;

	if (c->log)
		c->log->broken = true;
	for (i = 0; i < c->ndirects; i++)
		c->directs[i]->l->broken = true;
}
