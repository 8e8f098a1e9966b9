/* SPDX-License-Identifier: MIT */
/*
 * Missing ranges: sequence numbers a stream jumped over, waiting (until
 * their deadline) for late, reordered messages; what is left is a gap.
 */
#include <stdlib.h>

#include "reasm_internal.h"

/* ---- missing ranges ---- */

void reasm_range_free(struct pubd_reasm *r, struct stream *s, struct range *g)
{
	r->held_bytes -= RANGE_BYTES;
	list_del(&g->slink);
	list_del(&g->glink);
	reasm_rtree_remove(s, g);
	s->nranges--;
	s->missing -= g->count;
	free(g);
}

void reasm_range_drop(struct pubd_reasm *r, struct range *g)
{
	struct stream *s = g->s;
	uint64_t n = g->count;

	reasm_range_free(r, s, g);
	drop(r, s, PUB_DROP_SEQ_GAP, n);
}

static void ranges_trim(struct pubd_reasm *r, struct stream *s)
{
	while (s->nranges > r->cfg.max_missing_ranges)
		reasm_range_drop(r, container_of(s->ranges.next, struct range, slink));
}

/* [first, first + count) went missing now, above every existing range (or
 * below every one: a stream rebased to 0). */
void reasm_range_open(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t first, uint64_t count)
{
	uint64_t deadline = sat_add(now, cls_timeout(r, s->cls));
	struct range *g, *old;

	/* Ranges are charged to the budget too, but never evict a partial:
	 * the oldest ranges are given up (as gaps) instead. */
	while (r->held_bytes + RANGE_BYTES > r->cfg.budget_bytes && (old = reasm_oldest_range(r)))
		reasm_range_drop(r, old);
	g = r->held_bytes + RANGE_BYTES > r->cfg.budget_bytes ? NULL : malloc(sizeof(*g));
	if (!g) {
		/* No memory to wait for them: they are a gap now. */
		drop(r, s, PUB_DROP_SEQ_GAP, count);
		return;
	}
	if (!list_empty(&r->granges[s->cls])) {
		struct range *last = container_of(r->granges[s->cls].prev, struct range, glink);

		if (deadline < last->deadline)
			deadline = last->deadline;
	}
	g->s = s;
	g->first = first;
	g->count = count;
	g->deadline = deadline;
	r->held_bytes += RANGE_BYTES;
	/* A stream's ranges are in sequence order. */
	if (!list_empty(&s->ranges) && first < container_of(s->ranges.next, struct range, slink)->first)
		list_insert_after(&s->ranges, &g->slink);
	else
		list_add_tail(&s->ranges, &g->slink);
	list_add_tail(&r->granges[s->cls], &g->glink);
	reasm_rtree_insert(s, g);
	s->nranges++;
	s->missing += count;
	if (r->ops.gap) {
		r->in_callback++;
		r->ops.gap(r->ctx, s->hn.k1, s->hn.k2, first, count);
		r->in_callback--;
	}
	ranges_trim(r, s);
}

/* The range seq is missing from (NULL: none). The newest range first,
 * where a reordered message usually falls, then the tree: O(log ranges),
 * however many a repair group lets a stream open (a walk down the list
 * cost a forger's every datagram thousands of ranges). */
struct range *reasm_range_find(struct pubd_reasm *r, struct stream *s, uint64_t seq)
{
	struct range *g;

	if (list_empty(&s->ranges))
		return NULL;
	g = container_of(s->ranges.prev, struct range, slink);
	r->range_visits++;
	if (seq < g->first)
		g = reasm_rtree_floor(r, s, seq);
	return g && seq - g->first < g->count ? g : NULL;
}

/* seq, inside g, arrived late: take it out, splitting g if needed. */
void reasm_range_take(struct pubd_reasm *r, struct range *g, uint64_t seq)
{
	struct stream *s = g->s;
	uint64_t hi_first = seq + 1, hi_count = g->first + g->count - hi_first;
	struct range *hi;

	if (g->count == 1) {
		reasm_range_free(r, s, g);
		return;
	}
	s->missing--;
	if (seq == g->first) {
		g->first++;
		g->count--;
		return;
	}
	g->count = seq - g->first;
	if (!hi_count)
		return;
	hi = r->held_bytes + RANGE_BYTES > r->cfg.budget_bytes ? NULL : malloc(sizeof(*hi));
	if (!hi) {
		s->missing -= hi_count;
		drop(r, s, PUB_DROP_SEQ_GAP, hi_count);
		return;
	}
	*hi = (struct range){.s = s, .first = hi_first, .count = hi_count, .deadline = g->deadline};
	r->held_bytes += RANGE_BYTES;
	list_insert_after(&g->slink, &hi->slink);
	list_insert_after(&g->glink, &hi->glink);
	reasm_rtree_insert(s, hi);
	s->nranges++;
	ranges_trim(r, s);
}

/* Compared by arrival: a head's deadline less its class's timeout. */
struct range *reasm_oldest_range(const struct pubd_reasm *r)
{
	struct range *best = NULL, *g;
	uint64_t best_at = UINT64_MAX, at;
	unsigned c;

	for (c = 0; c < REASM_NCLS; c++) {
		if (list_empty(&r->granges[c]))
			continue;
		g = container_of(r->granges[c].next, struct range, glink);
		at = g->deadline > cls_timeout(r, c) ? g->deadline - cls_timeout(r, c) : 0;
		if (!best || at < best_at) {
			best = g;
			best_at = at;
		}
	}
	return best;
}
