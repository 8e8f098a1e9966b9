/* SPDX-License-Identifier: MIT */
/*
 * A stream's missing ranges by sequence number: an AVL tree threaded
 * through the ranges themselves (range.tl, .tr, .th), beside the stream's
 * list of them in sequence order, so that the range a late message falls
 * in is found in O(log ranges). A walk of the list from the newest range
 * was enough while a stream had 64 of them, but a repair group allows
 * 4,096, and a forger that opened them all and filled the holes from the
 * bottom made every one of its datagrams walk them all.
 *
 * Ranges never overlap, so their first sequence numbers are distinct and
 * are the key. A range's first may grow in place (its lowest message
 * arrived) without moving it: it stays below the next range's first.
 *
 * An AVL tree, not a red-black one or a skip list: it is deterministic (a
 * forger cannot be lucky with it), no taller than 1.44 log2(n + 2), and the
 * recursive insertion and removal below are short. The recursion is as
 * deep as the tree: at most 17 for the 4,097 ranges a stream can hold at
 * once (max_missing_ranges on a repair group, and one opened before the
 * oldest is dropped).
 *
 * The nodes are inside struct range, so the tree allocates nothing and the
 * budget's RANGE_BYTES already counts it.
 */
#include <stddef.h>

#include "reasm_internal.h"

static int height(const struct range *g)
{
	return g ? g->th : 0;
}

static void fix_height(struct range *g)
{
	int l = height(g->tl), r = height(g->tr);

	g->th = (l > r ? l : r) + 1;
}

static struct range *rotate_right(struct range *g)
{
	struct range *l = g->tl;

	g->tl = l->tr;
	l->tr = g;
	fix_height(g);
	fix_height(l);
	return l;
}

static struct range *rotate_left(struct range *g)
{
	struct range *r = g->tr;

	g->tr = r->tl;
	r->tl = g;
	fix_height(g);
	fix_height(r);
	return r;
}

/* g's subtrees are balanced and differ in height by at most 2: g's subtree
 * balanced, returning its new root. */
static struct range *balance(struct range *g)
{
	int diff = height(g->tl) - height(g->tr);

	if (diff > 1) {
		if (height(g->tl->tl) < height(g->tl->tr))
			g->tl = rotate_left(g->tl);
		return rotate_right(g);
	}
	if (diff < -1) {
		if (height(g->tr->tr) < height(g->tr->tl))
			g->tr = rotate_right(g->tr);
		return rotate_left(g);
	}
	fix_height(g);
	return g;
}

static struct range *tree_insert(struct range *t, struct range *g)
{
	if (!t) {
		g->tl = g->tr = NULL;
		g->th = 1;
		return g;
	}
	if (g->first < t->first)
		t->tl = tree_insert(t->tl, g);
	else
		t->tr = tree_insert(t->tr, g);
	return balance(t);
}

/* t without its lowest range, which is left in *min. */
static struct range *remove_min(struct range *t, struct range **min)
{
	if (!t->tl) {
		*min = t;
		return t->tr;
	}
	t->tl = remove_min(t->tl, min);
	return balance(t);
}

static struct range *tree_remove(struct range *t, const struct range *g)
{
	struct range *m;

	if (!t)
		return NULL;
	if (t != g) {
		if (g->first < t->first)
			t->tl = tree_remove(t->tl, g);
		else
			t->tr = tree_remove(t->tr, g);
		return balance(t);
	}
	if (!t->tr)
		return t->tl;
	/* The next range up takes g's place. */
	t->tr = remove_min(t->tr, &m);
	m->tl = t->tl;
	m->tr = t->tr;
	return balance(m);
}

void reasm_rtree_insert(struct stream *s, struct range *g)
{
	s->rtree = tree_insert(s->rtree, g);
}

void reasm_rtree_remove(struct stream *s, struct range *g)
{
	s->rtree = tree_remove(s->rtree, g);
	g->tl = g->tr = NULL;
}

struct range *reasm_rtree_floor(struct pubd_reasm *r, const struct stream *s, uint64_t seq)
{
	struct range *t = s->rtree, *best = NULL;

	while (t) {
		r->range_visits++;
		if (seq < t->first) {
			t = t->tl;
		} else {
			best = t;
			t = t->tr;
		}
	}
	return best;
}
