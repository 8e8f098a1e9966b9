/* SPDX-License-Identifier: MIT */
/*
 * The receiver's NAK schedule (repair_nak.h): an array of gaps, oldest
 * first. Gaps are few when losses are honest, so a linear scan is cheaper
 * than any index; but a peer can make many (forged first fragments,
 * invented sources), so nothing here moves the array per gap: a gap that
 * ends is marked dead (count 0) and the array is compacted in one pass
 * once half of it is dead, or when room is needed; and when it is full of
 * live gaps the oldest eighth is given up at once, not one memmove per new
 * gap (which made a flood of stuck partials cost seconds a tick).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "repair_nak.h"

int pubd_nak_init(struct pubd_nak_sched *s, const struct pubd_nak_cfg *cfg, const struct pubd_nak_ops *ops, void *ctx,
		  uint64_t (*rand64)(void *rctx), void *rctx)
{
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	if (!s->cfg.max_gaps)
		s->cfg.max_gaps = 1;
	s->ops = *ops;
	s->ctx = ctx;
	s->rand64 = rand64;
	s->rctx = rctx;
	s->v = calloc(s->cfg.max_gaps, sizeof(*s->v));
	if (!s->v)
		return -ENOMEM;
	s->cap = s->cfg.max_gaps;
	return 0;
}

void pubd_nak_close(struct pubd_nak_sched *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void pubd_nak_set(struct pubd_nak_sched *s, const struct pubd_nak_cfg *cfg)
{
	uint32_t max = cfg->max_gaps < s->cap ? cfg->max_gaps : s->cap;

	s->cfg = *cfg;
	s->cfg.max_gaps = max ? max : 1;
}

/* Drop the dead gaps, in one pass, keeping the order. */
static void compact(struct pubd_nak_sched *s)
{
	uint32_t i, w = 0;

	if (!s->dead)
		return;
	for (i = 0; i < s->n; i++)
		if (s->v[i].count)
			s->v[w++] = s->v[i];
	s->n = w;
	s->dead = 0;
}

/* Gap i ends (no memmove: compacted later, see above). */
static void remove_at(struct pubd_nak_sched *s, uint32_t i)
{
	s->v[i].count = 0;
	s->dead++;
}

static void maybe_compact(struct pubd_nak_sched *s)
{
	if (s->dead > s->n / 2)
		compact(s);
}

static void give_up_at(struct pubd_nak_sched *s, uint32_t i)
{
	struct pubd_nak_gap g = s->v[i];

	remove_at(s, i);
	s->ops.give_up(s->ctx, g.source, g.group, g.first, g.count, g.partial);
}

uint32_t pubd_nak_count(const struct pubd_nak_sched *s)
{
	return s->n - s->dead;
}

/* Room for one more gap: the dead ones go first; then, full of live gaps,
 * the oldest eighth is given up. */
static void make_room(struct pubd_nak_sched *s)
{
	uint32_t i, k;

	if (s->n < s->cfg.max_gaps)
		return;
	compact(s);
	if (s->n < s->cfg.max_gaps)
		return;
	k = s->cfg.max_gaps / 8 ? s->cfg.max_gaps / 8 : 1;
	for (i = 0; i < s->n && k; i++) {
		if (!s->v[i].count)
			continue;
		s->given_up_full++;
		give_up_at(s, i);
		k--;
	}
	compact(s);
}

static struct pubd_nak_timing timing_of(const struct pubd_nak_sched *s, uint64_t group)
{
	struct pubd_nak_timing t = {
		.backoff_ns = s->cfg.backoff_ns, .interval_ns = s->cfg.interval_ns, .retries = s->cfg.retries};

	if (s->ops.timing && !s->ops.timing(s->ctx, group, &t))
		t = (struct pubd_nak_timing){
			.backoff_ns = s->cfg.backoff_ns, .interval_ns = s->cfg.interval_ns, .retries = s->cfg.retries};
	return t;
}

/* How long a gap's NAKs run when every one goes: back-off, the NAKs, and
 * one interval for the last one's answer (as reassembly waits, reload.c). */
static uint64_t schedule_ns(const struct pubd_nak_timing *t)
{
	return t->backoff_ns + t->interval_ns * ((uint64_t)t->retries + 1);
}

static uint64_t backoff(struct pubd_nak_sched *s, uint64_t group)
{
	uint64_t b = timing_of(s, group).backoff_ns;

	if (!b)
		return 0;
	return s->rand64(s->rctx) % (b + 1);
}

void pubd_nak_gap(struct pubd_nak_sched *s, uint64_t now, uint64_t source, uint64_t group, uint64_t first,
		  uint64_t count, bool partial)
{
	struct pubd_nak_gap *g;
	uint32_t i;

	if (!count)
		return;
	/* More than a NAK run can ask for at once is more than any source
	 * keeps to repair: asked for up to that, the rest given up now (a
	 * forged jump of a billion sequence numbers costs PUBD_NAK_GAP_MAX
	 * worth of NAKs a try, not 15,000 of them). */
	if (count > PUBD_NAK_GAP_MAX) {
		s->given_up_large++;
		s->ops.give_up(s->ctx, source, group, first + PUBD_NAK_GAP_MAX, count - PUBD_NAK_GAP_MAX, partial);
		count = PUBD_NAK_GAP_MAX;
	}
	/* The same partial found again (a later timeout): already asked for. */
	for (i = 0; i < s->n; i++)
		if (s->v[i].count && s->v[i].source == source && s->v[i].group == group && s->v[i].first <= first &&
		    first + count <= s->v[i].first + s->v[i].count)
			return;
	make_room(s);
	g = &s->v[s->n++];
	memset(g, 0, sizeof(*g));
	g->source = source;
	g->group = group;
	g->first = first;
	g->count = count;
	g->partial = partial;
	g->found_ns = now;
	g->due_ns = now + backoff(s, group);
}

/* Take [lo, hi) out of gap i (it is inside it, not all of it). A tail cut
 * off goes at the end, or is given up when there is no room: callers that
 * may cut compact first (never in here: they hold indices). */
static void cut(struct pubd_nak_sched *s, uint32_t i, uint64_t lo, uint64_t hi)
{
	struct pubd_nak_gap *g = &s->v[i], tail;
	uint64_t end = g->first + g->count;

	if (lo == g->first) {
		g->first = hi;
		g->count = end - hi;
		return;
	}
	g->count = lo - g->first;
	if (hi == end)
		return;
	tail = *g;
	tail.first = hi;
	tail.count = end - hi;
	if (s->n < s->cfg.max_gaps) {
		s->v[s->n++] = tail;
		return;
	}
	s->given_up_full++;
	s->ops.give_up(s->ctx, tail.source, tail.group, tail.first, tail.count, tail.partial);
}

bool pubd_nak_filled(struct pubd_nak_sched *s, uint64_t source, uint64_t group, uint64_t seq)
{
	struct pubd_nak_gap *g;
	uint32_t i;

	if (s->n >= s->cfg.max_gaps)
		compact(s); /* room for a tail that a split cuts off */
	for (i = 0; i < s->n; i++) {
		g = &s->v[i];
		if (g->source != source || g->group != group || seq < g->first || seq - g->first >= g->count)
			continue;
		if (g->count == 1) {
			remove_at(s, i);
			maybe_compact(s);
		} else if (seq == g->first) {
			g->first++;
			g->count--;
		} else if (seq == g->first + g->count - 1) {
			g->count--;
		} else {
			/* Split: the tail becomes a gap of its own, on the same schedule. */
			cut(s, i, seq, seq + 1);
		}
		return true;
	}
	return false;
}

void pubd_nak_gone(struct pubd_nak_sched *s, uint64_t source, uint64_t group, uint64_t first, uint64_t count)
{
	uint64_t hi_c = first > UINT64_MAX - count ? UINT64_MAX : first + count;
	uint32_t i;

	if (s->n >= s->cfg.max_gaps)
		compact(s); /* as in pubd_nak_filled */
	for (i = 0; i < s->n;) {
		struct pubd_nak_gap *g = &s->v[i];
		uint64_t hi_g = g->first + g->count, lo = g->first > first ? g->first : first;
		uint64_t hi = hi_g < hi_c ? hi_g : hi_c;
		bool partial = g->partial;

		if (g->source != source || g->group != group || lo >= hi) {
			i++;
			continue;
		}
		s->given_up_gone++;
		if (lo == g->first && hi == hi_g) {
			give_up_at(s, i++);
			continue;
		}
		cut(s, i, lo, hi);
		s->ops.give_up(s->ctx, source, group, lo, hi - lo, partial);
		i++;
	}
	maybe_compact(s);
}

void pubd_nak_forget(struct pubd_nak_sched *s, uint64_t source, uint64_t group)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].count && s->v[i].group == group && (!source || s->v[i].source == source))
			remove_at(s, i);
	maybe_compact(s);
}

void pubd_nak_run(struct pubd_nak_sched *s, uint64_t now)
{
	struct pubd_nak_timing t;
	uint64_t off, len;
	uint32_t i;
	bool went;

	uint32_t budget = PUBD_NAK_RUN_MAX;

	for (i = 0; i < s->n; i++) {
		struct pubd_nak_gap *g = &s->v[i];

		if (!g->count || g->due_ns > now)
			continue;
		t = timing_of(s, g->group);
		if (g->tries >= t.retries) {
			s->given_up_retries++;
			give_up_at(s, i);
			continue;
		}
		/* The run's NAKs are spent: the rest stay due, for the next run
		 * (right after the loop's next turn). */
		if (budget < (g->count + PUBD_NAK_MAX_RANGE - 1) / PUBD_NAK_MAX_RANGE)
			break;
		went = false;
		for (off = 0; off < g->count; off += len) {
			len = g->count - off < PUBD_NAK_MAX_RANGE ? g->count - off : PUBD_NAK_MAX_RANGE;
			budget--;
			if (s->ops.send(s->ctx, g, g->first + off, len)) {
				went = true;
				s->naks_sent++;
			}
		}
		if (went || now - g->found_ns >= schedule_ns(&t))
			g->tries++;
		g->due_ns = now + t.interval_ns;
	}
	maybe_compact(s);
}

uint64_t pubd_nak_next_deadline(const struct pubd_nak_sched *s)
{
	uint64_t d = UINT64_MAX;
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].count && s->v[i].due_ns < d)
			d = s->v[i].due_ns;
	return d;
}

bool pubd_nak_pending(const struct pubd_nak_sched *s, uint64_t source, uint64_t group, uint64_t seq)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].source == source && s->v[i].group == group && seq >= s->v[i].first &&
		    seq - s->v[i].first < s->v[i].count)
			return true;
	return false;
}
