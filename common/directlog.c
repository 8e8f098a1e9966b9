/* SPDX-License-Identifier: MIT */
/*
 * A subscriber's reader of a direct log (directlog.h): the writer never
 * waits for it, so every record is copied out first and trusted only once
 * the writer's claim shows it was not written over meanwhile.
 */
#include <errno.h>
#include <string.h>

#include "directlog.h"

/* A reader the writer keeps lapping gives up for this call after so many
 * fresh starts (and tries again at the next). */
#define RESYNC_MAX 64

/* The end word of a reader pubd gave none (tests, tools): live, log 0. */
static const _Atomic uint64_t no_end;

int pub_direct_reader_init(struct pub_direct_reader *d, const void *map, size_t map_len, uint32_t cap,
			   uint32_t max_record, uint64_t start, const char *group, uint8_t glen)
{
	memset(d, 0, sizeof(*d));
	if (!cap || !glen || pub_shmlog_reader_init(&d->r, (void *)map, map_len, cap, max_record, start) < 0)
		return -EPROTO;
	d->glen = glen;
	memcpy(d->group, group, glen);
	d->end = &no_end;
	d->frozen = pub_direct_frozen_word(0); /* never no_end's */
	return 0;
}

/*
 * The writer lapped us: start again at the oldest of its marks it is not
 * about to write over (directlog.h), else at the last message record it
 * committed. Both are record boundaries it says it wrote; untrusted, so
 * checked against where it claims to be writing (and the records there are
 * checked as they are read). What lay between is counted from the sequence
 * numbers once a message is read.
 */
static bool resync_point_ok(const struct pub_direct_reader *d, uint64_t latest, uint64_t claim)
{
	return latest % PUB_SHMLOG_ALIGN == 0 && latest > d->r.pos && claim >= latest && claim - latest <= d->r.cap;
}

static int resync(struct pub_direct_reader *d)
{
	struct pub_shmlog_ctl *ctl = (struct pub_shmlog_ctl *)d->r.ctl;
	uint64_t latest = atomic_load_explicit(&ctl->latest, memory_order_acquire);
	uint64_t claim = atomic_load_explicit(&ctl->claim, memory_order_acquire);
	uint64_t latest2, claim2, best = UINT64_MAX, m;
	/* Room the writer keeps going in while we read: an eighth of the ring. */
	uint64_t keep = d->r.cap - d->r.cap / 8;
	unsigned i;

	if (!resync_point_ok(d, latest, claim)) {
		/* Two looks that disagree are a writer that moved between our
		 * loads (we were preempted): look again later. The same
		 * nonsense twice is the writer's. */
		latest2 = atomic_load_explicit(&ctl->latest, memory_order_acquire);
		claim2 = atomic_load_explicit(&ctl->claim, memory_order_acquire);
		if (latest2 == latest && claim2 == claim)
			return -EPROTO;
		return 1;
	}
	for (i = 0; i < PUB_DIRECT_NMARKS; i++) {
		m = atomic_load_explicit(&pub_direct_marks(ctl)[i], memory_order_acquire);
		if (m % PUB_SHMLOG_ALIGN == 0 && m > d->r.pos && m <= latest && claim - m <= keep && m < best)
			best = m;
	}
	d->r.pos = best != UINT64_MAX ? best : latest;
	return 0;
}

static bool lapped(const struct pub_direct_reader *d, uint64_t pos)
{
	return pub_shmlog_lapped(&d->r, pos);
}

/* What the word w says to a reader at d->r.pos: read on (false), or stop,
 * for good (d->ended) or, while pubd freezes the log, for now. */
static bool stop_at(struct pub_direct_reader *d, uint64_t w)
{
	if (__builtin_expect(w == d->live, 1))
		return false;
	if (w == d->frozen)
		return true;
	if (!d->ended)
		d->ended = pub_direct_end_reached(w, d->log_id, d->r.pos);
	return d->ended;
}

/* At or past the end pubd set (a lap carries us only forward). On every
 * read: one load and one compare while the log is live. */
static bool at_end(struct pub_direct_reader *d)
{
	return stop_at(d, atomic_load_explicit(d->end, memory_order_acquire));
}

/*
 * A record at d->r.pos, read (its commit word loaded, acquire) and not yet
 * taken: may we take it? Asked again after reading, as pubd may have frozen
 * the log meanwhile (directlog.h). Sequentially consistent, against pubd's
 * freeze and its look at the commit words after it: a word still live here
 * says pubd, reading after its freeze, sees this record committed. (A plain
 * load on x86.)
 */
static bool may_take(struct pub_direct_reader *d)
{
	return !stop_at(d, atomic_load_explicit(d->end, memory_order_seq_cst));
}

/* A message is whole: count what the writer's sequence skipped. */
static int complete(struct pub_direct_reader *d, uint64_t seq, uint32_t len, struct pub_direct_msg *m)
{
	/* A sequence that goes backwards is the writer's nonsense: nothing
	 * to count, and it is delivered as it came. */
	if (d->synced && seq > d->next_seq) {
		uint64_t gap = seq - d->next_seq;

		/* A writer's jump near 2^64 must not wrap the count back. */
		d->lost = gap > UINT64_MAX - d->lost ? UINT64_MAX : d->lost + gap;
	}
	d->synced = true;
	d->next_seq = seq + 1;
	m->seq = seq;
	m->len = len;
	return 1;
}

int pub_direct_next(struct pub_direct_reader *d, uint8_t *buf, size_t cap, uint32_t max_total, struct pub_direct_msg *m,
		    size_t *need)
{
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	unsigned resyncs = 0;
	int r;

	for (;;) {
		if (at_end(d))
			return 0;
		if (lapped(d, d->r.pos)) {
			if (++resyncs > RESYNC_MAX)
				return 0;
			r = resync(d);
			if (r < 0)
				return -EPROTO;
			continue;
		}
		r = pub_shmlog_next(&d->r, &v);
		if (r == 0)
			return 0;
		/* What we read may be torn by a lap: only then is it not the
		 * writer's fault. */
		if (r < 0 || v.type != PUB_SHMLOG_MSG || pub_deliverlog_decode(&v, &p) < 0 ||
		    !pub_direct_record_ok(&p) ||
		    (p.first && (p.glen != d->glen || memcmp(p.group, d->group, p.glen) || p.total > max_total))) {
			/* (A refused commit word filled no view: our position.) */
			if (lapped(d, r < 0 ? d->r.pos : v.pos))
				continue;
			return -EPROTO;
		}
		if (!p.first) {
			/* A later piece: of a message pubd delivers (below), or
			 * begun before where we started. */
			if (lapped(d, v.pos))
				continue;
			pub_shmlog_consume(&d->r, &v);
			continue;
		}
		if (p.more) {
			/* A message in pieces is not read here: a writer that
			 * never waits for us could write over its first pieces
			 * before we read its last. pubd delivers it, as this
			 * log's source and seq. */
			if (lapped(d, v.pos))
				continue;
			if (!may_take(d))
				return 0;
			pub_shmlog_consume(&d->r, &v);
			complete(d, p.seq, p.total, m);
			return 2;
		}
		if (p.total > cap) {
			*need = p.total;
			return -ENOSPC;
		}
		if (p.len)
			memcpy(buf, p.data, p.len);
		if (lapped(d, v.pos))
			continue;
		if (!may_take(d))
			return 0;
		pub_shmlog_consume(&d->r, &v);
		return complete(d, p.seq, p.total, m);
	}
}

int pub_direct_skip_pieces(struct pub_direct_reader *d)
{
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	int r;

	for (;;) {
		if (at_end(d))
			return 1; /* nothing of it is read past the end */
		/* Lapped: past the message whatever it was (or, the writer
		 * moving on as we looked, to be looked at again). */
		if (lapped(d, d->r.pos)) {
			r = resync(d);
			return r < 0 ? -EPROTO : r == 0 ? 1 : 0;
		}
		r = pub_shmlog_next(&d->r, &v);
		if (r <= 0)
			return r < 0 && !lapped(d, d->r.pos) ? -EPROTO : 0;
		if (v.type != PUB_SHMLOG_MSG || pub_deliverlog_decode(&v, &p) < 0) {
			if (lapped(d, v.pos))
				continue;
			return -EPROTO;
		}
		if (p.first)
			return 1;
		if (lapped(d, v.pos))
			continue;
		pub_shmlog_consume(&d->r, &v);
	}
}

bool pub_direct_ready(const struct pub_direct_reader *d)
{
	const struct pub_shmlog_rec *rec = (const struct pub_shmlog_rec *)(d->r.ring + (d->r.pos & (d->r.cap - 1)));

	if (d->ended || pub_direct_frozen(d))
		return false;
	return atomic_load_explicit((_Atomic uint64_t *)&rec->commit, memory_order_acquire) != 0 || lapped(d, d->r.pos);
}

/* ---- seq marks ---- */

void pub_direct_seqmarks_init(struct pub_direct_seqmarks *k, uint32_t cap)
{
	for (unsigned i = 0; i < PUB_DIRECT_SEQMARKS; i++)
		k->m[i] = (struct pub_direct_seqmark){.pos = UINT64_MAX};
	k->seg = UINT64_MAX;
	k->cap = cap;
	k->shift = 0;
	while (k->shift < 63 && (UINT64_C(1) << (k->shift + 1)) * PUB_DIRECT_SEQMARK_SEGS <= cap)
		k->shift++;
}

uint64_t pub_direct_seqmarks_lost(const struct pub_direct_seqmarks *k, uint64_t claim, uint64_t from)
{
	const struct pub_direct_seqmark *best = NULL;
	uint64_t below, upto;

	if (claim <= k->cap)
		return 0;
	below = claim - k->cap; /* records that begin before it are overwritten */
	for (unsigned i = 0; i < PUB_DIRECT_SEQMARKS; i++) {
		const struct pub_direct_seqmark *m = &k->m[i];

		if (m->pos != UINT64_MAX && m->pos <= below && (!best || m->pos > best->pos))
			best = m;
	}
	if (!best)
		return 0;
	/* The mark's own message too, when it begins before the line. */
	upto = best->pos < below ? best->seq + 1 : best->seq;
	return upto > from ? upto - from : 0;
}
