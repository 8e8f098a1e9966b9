/* SPDX-License-Identifier: MIT */
/*
 * The receiver's NAK schedule (repair_nak.h), on the indexes of
 * repair_nak_index.h. Gaps are few when losses are honest, but a peer can
 * make thousands (forged first fragments, invented sources each leaving a
 * gap), and every delivered message asks whether it fills one: with the
 * gaps in one array scanned whole, 4,096 forged gaps made a plain group's
 * 300,000 datagrams cost 5.1 s of CPU instead of 1.3 s. So a message looks
 * only at its own stream's gaps, and among them only at those its sequence
 * number falls in, found in the stream's tree (a forger's one stream of
 * 4,096 gaps, found and filled one at a time, cost 2.5-4 times its
 * datagrams in order while each call walked them all); a run looks only at
 * the gaps that are due, and the oldest eighth (given up when full) is the
 * head of a list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "repair_nak_index.h"

static void free_all(struct pubd_nak_sched *s)
{
	free(s->nodes);
	free(s->streams);
	free(s->buckets);
	free(s->heap);
	free(s->hits);
}

int pubd_nak_init(struct pubd_nak_sched *s, const struct pubd_nak_cfg *cfg, const struct pubd_nak_ops *ops, void *ctx,
		  uint64_t (*rand64)(void *rctx), void *rctx)
{
	uint32_t i, nb = 16;

	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	if (!s->cfg.max_gaps)
		s->cfg.max_gaps = 1;
	s->ops = *ops;
	s->ctx = ctx;
	s->rand64 = rand64;
	s->rctx = rctx;
	s->key = cfg->hash_key;
	s->cap = s->cfg.max_gaps;
	while (nb < s->cap && nb < (1u << 31))
		nb *= 2;
	s->nodes = calloc(s->cap, sizeof(*s->nodes));
	s->streams = calloc(s->cap, sizeof(*s->streams)); /* a stream has a gap at least */
	s->buckets = malloc(nb * sizeof(*s->buckets));
	s->heap = malloc(s->cap * sizeof(*s->heap));
	s->hits = malloc(s->cap * sizeof(*s->hits)); /* a lookup finds a stream's gaps at most */
	if (!s->nodes || !s->streams || !s->buckets || !s->heap || !s->hits) {
		free_all(s);
		memset(s, 0, sizeof(*s));
		return -ENOMEM;
	}
	s->mask = nb - 1;
	for (i = 0; i < nb; i++)
		s->buckets[i] = NAK_NONE;
	for (i = 0; i < s->cap; i++) {
		s->nodes[i].a_next = i + 1 < s->cap ? i + 1 : NAK_NONE;
		s->streams[i].next = i + 1 < s->cap ? i + 1 : NAK_NONE;
	}
	s->free_node = 0;
	s->free_stream = 0;
	s->oldest = s->youngest = s->last_stream = NAK_NONE;
	return 0;
}

void pubd_nak_close(struct pubd_nak_sched *s)
{
	free_all(s);
	memset(s, 0, sizeof(*s));
}

void pubd_nak_set(struct pubd_nak_sched *s, const struct pubd_nak_cfg *cfg)
{
	uint32_t max = cfg->max_gaps < s->cap ? cfg->max_gaps : s->cap;
	struct pubd_hash_key key = s->cfg.hash_key;

	s->cfg = *cfg;
	s->cfg.max_gaps = max ? max : 1;
	s->cfg.hash_key = key; /* the table is hashed on it */
}

uint32_t pubd_nak_count(const struct pubd_nak_sched *s)
{
	return s->n;
}

/* A new gap g, youngest of all; NAK_NONE if there is no node or stream for
 * it (not while the callers keep n below cap). */
static uint32_t add(struct pubd_nak_sched *s, const struct pubd_nak_gap *g)
{
	uint32_t i = s->free_node;
	struct pubd_nak_node *n;

	if (i == NAK_NONE)
		return NAK_NONE;
	n = nak_node(s, i);
	n->g = *g;
	n->born = s->born; /* part of its key in the stream's tree */
	if (!nak_stream_link(s, i))
		return NAK_NONE;
	s->born++;
	s->free_node = n->a_next;
	n->a_next = NAK_NONE;
	n->a_prev = s->youngest;
	if (s->youngest != NAK_NONE)
		nak_node(s, s->youngest)->a_next = i;
	else
		s->oldest = i;
	s->youngest = i;
	nak_heap_push(s, i);
	s->n++;
	return i;
}

/* Gap i ends, silently. */
static void drop(struct pubd_nak_sched *s, uint32_t i)
{
	struct pubd_nak_node *n = nak_node(s, i);

	nak_heap_remove(s, i);
	nak_stream_unlink(s, i);
	if (n->a_prev != NAK_NONE)
		nak_node(s, n->a_prev)->a_next = n->a_next;
	else
		s->oldest = n->a_next;
	if (n->a_next != NAK_NONE)
		nak_node(s, n->a_next)->a_prev = n->a_prev;
	else
		s->youngest = n->a_prev;
	n->g.count = 0;
	n->a_next = s->free_node;
	s->free_node = i;
	s->n--;
}

static void give_up_at(struct pubd_nak_sched *s, uint32_t i)
{
	struct pubd_nak_gap g = nak_node(s, i)->g;

	drop(s, i);
	s->ops.give_up(s->ctx, g.source, g.group, g.first, g.count, g.partial);
}

/* Room for one more gap: full, the oldest eighth is given up. */
static void make_room(struct pubd_nak_sched *s)
{
	uint32_t k;

	if (s->n < s->cfg.max_gaps)
		return;
	k = s->cfg.max_gaps / 8 ? s->cfg.max_gaps / 8 : 1;
	for (; k && s->oldest != NAK_NONE; k--) {
		s->given_up_full++;
		give_up_at(s, s->oldest);
	}
}

/* Gap g is kept if there is room, else given up (a tail cut off when
 * full, or no node: see add). */
static void keep_or_give_up(struct pubd_nak_sched *s, const struct pubd_nak_gap *g, bool room)
{
	if (room && add(s, g) != NAK_NONE)
		return;
	s->given_up_full++;
	s->ops.give_up(s->ctx, g->source, g->group, g->first, g->count, g->partial);
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

/* The root of (source, group)'s tree of gaps, or NAK_NONE. */
static uint32_t root_of(struct pubd_nak_sched *s, uint64_t source, uint64_t group)
{
	uint32_t st;

	if (!s->n)
		return NAK_NONE;
	st = nak_stream_find(s, source, group);
	return st == NAK_NONE ? NAK_NONE : s->streams[st].root;
}

/* Gap i's range becomes first .. first + count - 1: the range is its key
 * in its stream's tree, so it leaves the tree while it changes. */
static void reshape(struct pubd_nak_sched *s, uint32_t i, uint64_t first, uint64_t count)
{
	struct pubd_nak_node *n = nak_node(s, i);
	uint32_t *root = &s->streams[n->stream].root;

	nak_tree_remove(s, root, i);
	n->g.first = first;
	n->g.count = count;
	nak_tree_insert(s, root, i);
}

static int older(const void *a, const void *b)
{
	const struct pubd_nak_hit *x = a, *y = b;

	return x->born < y->born ? -1 : x->born > y->born;
}

void pubd_nak_gap(struct pubd_nak_sched *s, uint64_t now, uint64_t source, uint64_t group, uint64_t first,
		  uint64_t count, bool partial)
{
	struct pubd_nak_gap g;

	if (!count || !s->nodes)
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
	/* The same partial found again (a later timeout), or a range inside
	 * one gap: already asked for. A range overlapping gaps without one
	 * holding it all is a gap of its own (the gaps may overlap). */
	g = (struct pubd_nak_gap){.first = first, .count = count};
	if (nak_tree_covers(s, root_of(s, source, group), first, nak_gap_last(&g)))
		return;
	make_room(s);
	g = (struct pubd_nak_gap){
		.source = source, .group = group, .first = first, .count = count, .partial = partial, .found_ns = now};
	g.due_ns = now + backoff(s, group);
	keep_or_give_up(s, &g, true);
}

/* Take [lo, hi) out of gap i (it is inside it, not all of it). A tail cut
 * off is a gap of its own on the same schedule, the youngest; or given up
 * when there is no room. */
static void cut(struct pubd_nak_sched *s, uint32_t i, uint64_t lo, uint64_t hi)
{
	struct pubd_nak_gap *g = &nak_node(s, i)->g, tail;
	uint64_t end = g->first + g->count;

	if (lo == g->first) {
		reshape(s, i, hi, end - hi);
		return;
	}
	reshape(s, i, g->first, lo - g->first);
	if (hi == end)
		return;
	tail = *g;
	tail.first = hi;
	tail.count = end - hi;
	keep_or_give_up(s, &tail, s->n < s->cfg.max_gaps);
}

bool pubd_nak_filled(struct pubd_nak_sched *s, uint64_t source, uint64_t group, uint64_t seq)
{
	uint32_t i, k, n = 0;
	struct pubd_nak_gap *g;

	nak_tree_touching(s, root_of(s, source, group), seq, seq, s->hits, &n);
	if (!n)
		return false;
	/* Overlapping gaps: the oldest holding seq gives it up. */
	for (i = s->hits[0].node, k = 1; k < n; k++)
		if (s->hits[k].born < nak_node(s, i)->born)
			i = s->hits[k].node;
	g = &nak_node(s, i)->g;
	if (g->count == 1) {
		drop(s, i);
	} else if (seq == g->first) {
		reshape(s, i, g->first + 1, g->count - 1);
	} else if (seq == g->first + g->count - 1) {
		reshape(s, i, g->first, g->count - 1);
	} else {
		/* Split: the tail becomes a gap of its own, on the same schedule. */
		cut(s, i, seq, seq + 1);
	}
	return true;
}

void pubd_nak_gone(struct pubd_nak_sched *s, uint64_t source, uint64_t group, uint64_t first, uint64_t count)
{
	uint64_t hi_c = first > UINT64_MAX - count ? UINT64_MAX : first + count;
	uint32_t k, n = 0;

	if (!count)
		return;
	/* The gaps it touches, oldest first: their give-ups in that order, and
	 * the tails cut off found in that order (a tail lies past what the
	 * GONE names, so it is not among them). */
	nak_tree_touching(s, root_of(s, source, group), first, hi_c - 1, s->hits, &n);
	qsort(s->hits, n, sizeof(*s->hits), older);
	for (k = 0; k < n; k++) {
		uint32_t i = s->hits[k].node;
		struct pubd_nak_gap *g = &nak_node(s, i)->g;
		uint64_t hi_g = g->first + g->count, lo = g->first > first ? g->first : first;
		uint64_t hi = hi_g < hi_c ? hi_g : hi_c;
		bool partial = g->partial;

		/* A gap that runs to the last sequence number there is (hi_g
		 * wraps) is left alone, as it always was. */
		if (lo >= hi)
			continue;
		s->given_up_gone++;
		if (lo == g->first && hi == hi_g) {
			give_up_at(s, i);
			continue;
		}
		cut(s, i, lo, hi);
		s->ops.give_up(s->ctx, source, group, lo, hi - lo, partial);
	}
}

void pubd_nak_due_now(struct pubd_nak_sched *s, uint64_t now_ns, uint64_t source, uint64_t group)
{
	uint32_t k, nh = 0;

	/* All the stream's gaps (their order is the heap's business). */
	nak_tree_touching(s, root_of(s, source, group), 0, UINT64_MAX, s->hits, &nh);
	for (k = 0; k < nh; k++) {
		uint32_t i = s->hits[k].node;
		struct pubd_nak_node *n = nak_node(s, i);

		if (n->g.due_ns <= now_ns || n->heap_at == NAK_NONE)
			continue;
		/* Earlier is up the heap: out and back in puts it there. */
		nak_heap_remove(s, i);
		n->g.due_ns = now_ns;
		nak_heap_push(s, i);
	}
}

void pubd_nak_forget(struct pubd_nak_sched *s, uint64_t source, uint64_t group)
{
	uint32_t i, next;

	if (source) {
		while ((i = root_of(s, source, group)) != NAK_NONE)
			drop(s, i);
		return;
	}
	/* Every source of a group (it was left): all gaps, once, rarely. */
	for (i = s->n ? s->oldest : NAK_NONE; i != NAK_NONE; i = next) {
		next = nak_node(s, i)->a_next;
		s->visits++;
		if (nak_node(s, i)->g.group == group)
			drop(s, i);
	}
}

void pubd_nak_run(struct pubd_nak_sched *s, uint64_t now)
{
	/* Gaps sent to this run, out of the heap till it ends: each is looked
	 * at once a run even when its next NAK is due at once (interval 0).
	 * Each cost a NAK of the budget at least, so they fit. */
	uint32_t held[PUBD_NAK_RUN_MAX], nheld = 0, budget = PUBD_NAK_RUN_MAX, i;
	struct pubd_nak_timing t;
	uint64_t off, len;
	bool went;

	while (s->hn && nak_node(s, s->heap[0])->g.due_ns <= now) {
		struct pubd_nak_gap *g;

		i = s->heap[0];
		g = &nak_node(s, i)->g;
		s->visits++;
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
		nak_heap_remove(s, i);
		held[nheld++] = i;
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
	for (i = 0; i < nheld; i++)
		nak_heap_push(s, held[i]);
}

uint64_t pubd_nak_next_deadline(const struct pubd_nak_sched *s)
{
	return s->hn ? nak_node(s, s->heap[0])->g.due_ns : UINT64_MAX;
}

bool pubd_nak_pending(struct pubd_nak_sched *s, uint64_t source, uint64_t group, uint64_t seq)
{
	return nak_tree_covers(s, root_of(s, source, group), seq, seq);
}
