/* SPDX-License-Identifier: MIT */
/*
 * A stream's gaps by sequence number (repair_nak_index.h): an AVL tree
 * threaded through the schedule's nodes, keyed on (first, born), each node
 * keeping the highest last sequence number below it (an interval tree), so
 * that the gaps a message or a range touches are found in O(log gaps)
 * instead of by a walk of all the stream's gaps. A stream may hold 4,096
 * gaps; a forger that opened them one at a time and filled them bottom-up
 * made every datagram of its stream walk them all, twice (a new gap asked
 * whether it was already asked for, a delivered message whether it filled
 * one).
 *
 * Gaps of one stream may overlap (a range is kept unless one gap already
 * holds all of it), so the first sequence number alone is no key: the age
 * breaks ties, and a gap whose first or last changes leaves the tree and
 * comes back (nak_tree_remove before the change, nak_tree_insert after).
 * With overlaps a lookup looks at the gaps that hold the sequence number
 * too, as it must: the oldest of them is the one a message fills.
 *
 * An AVL tree (as reasm_rtree.c): deterministic, so a forger cannot be
 * lucky with it, and no taller than 1.44 log2(n + 2); the recursion below
 * is as deep as the tree, 18 for the 4,096 gaps of one stream (46 for a
 * pool of 2^32). It allocates nothing: the links are in the nodes.
 */
#include "repair_nak_index.h"

static uint32_t height(const struct pubd_nak_sched *s, uint32_t i)
{
	return i == NAK_NONE ? 0 : nak_node(s, i)->t_height;
}

static uint64_t top(const struct pubd_nak_sched *s, uint32_t i)
{
	return i == NAK_NONE ? 0 : nak_node(s, i)->t_top;
}

/* i's height and highest last from its children's. */
static void fix(struct pubd_nak_sched *s, uint32_t i)
{
	struct pubd_nak_node *n = nak_node(s, i);
	uint32_t l = height(s, n->t_left), r = height(s, n->t_right);
	uint64_t t = nak_gap_last(&n->g), tl = top(s, n->t_left), tr = top(s, n->t_right);

	n->t_height = (uint8_t)((l > r ? l : r) + 1);
	n->t_top = t > tl ? (t > tr ? t : tr) : (tl > tr ? tl : tr);
}

static uint32_t rotate_right(struct pubd_nak_sched *s, uint32_t i)
{
	struct pubd_nak_node *n = nak_node(s, i);
	uint32_t l = n->t_left;

	n->t_left = nak_node(s, l)->t_right;
	nak_node(s, l)->t_right = i;
	fix(s, i);
	fix(s, l);
	return l;
}

static uint32_t rotate_left(struct pubd_nak_sched *s, uint32_t i)
{
	struct pubd_nak_node *n = nak_node(s, i);
	uint32_t r = n->t_right;

	n->t_right = nak_node(s, r)->t_left;
	nak_node(s, r)->t_left = i;
	fix(s, i);
	fix(s, r);
	return r;
}

/* i's subtrees are balanced and differ in height by at most 2: i's subtree
 * balanced, returning its new root. */
static uint32_t balance(struct pubd_nak_sched *s, uint32_t i)
{
	struct pubd_nak_node *n = nak_node(s, i);
	int diff = (int)height(s, n->t_left) - (int)height(s, n->t_right);

	if (diff > 1) {
		const struct pubd_nak_node *l = nak_node(s, n->t_left);

		if (height(s, l->t_left) < height(s, l->t_right))
			n->t_left = rotate_left(s, n->t_left);
		return rotate_right(s, i);
	}
	if (diff < -1) {
		const struct pubd_nak_node *r = nak_node(s, n->t_right);

		if (height(s, r->t_right) < height(s, r->t_left))
			n->t_right = rotate_right(s, n->t_right);
		return rotate_left(s, i);
	}
	fix(s, i);
	return i;
}

static bool before(const struct pubd_nak_node *a, const struct pubd_nak_node *b)
{
	return a->g.first < b->g.first || (a->g.first == b->g.first && a->born < b->born);
}

static uint32_t insert(struct pubd_nak_sched *s, uint32_t t, uint32_t i)
{
	struct pubd_nak_node *n;

	if (t == NAK_NONE) {
		n = nak_node(s, i);
		n->t_left = n->t_right = NAK_NONE;
		fix(s, i);
		return i;
	}
	n = nak_node(s, t);
	s->visits++;
	if (before(nak_node(s, i), n))
		n->t_left = insert(s, n->t_left, i);
	else
		n->t_right = insert(s, n->t_right, i);
	return balance(s, t);
}

/* t without its lowest node, which is left in *min. */
static uint32_t remove_min(struct pubd_nak_sched *s, uint32_t t, uint32_t *min)
{
	struct pubd_nak_node *n = nak_node(s, t);

	s->visits++;
	if (n->t_left == NAK_NONE) {
		*min = t;
		return n->t_right;
	}
	n->t_left = remove_min(s, n->t_left, min);
	return balance(s, t);
}

static uint32_t remove_node(struct pubd_nak_sched *s, uint32_t t, uint32_t i)
{
	struct pubd_nak_node *n, *m;
	uint32_t mi;

	if (t == NAK_NONE)
		return NAK_NONE; /* not there: cannot be, nodes are keyed uniquely */
	n = nak_node(s, t);
	s->visits++;
	if (t != i) {
		if (before(nak_node(s, i), n))
			n->t_left = remove_node(s, n->t_left, i);
		else
			n->t_right = remove_node(s, n->t_right, i);
		return balance(s, t);
	}
	if (n->t_right == NAK_NONE)
		return n->t_left;
	/* The next gap up takes i's place. */
	n->t_right = remove_min(s, n->t_right, &mi);
	m = nak_node(s, mi);
	m->t_left = n->t_left;
	m->t_right = n->t_right;
	return balance(s, mi);
}

void nak_tree_insert(struct pubd_nak_sched *s, uint32_t *root, uint32_t node)
{
	*root = insert(s, *root, node);
}

void nak_tree_remove(struct pubd_nak_sched *s, uint32_t *root, uint32_t node)
{
	struct pubd_nak_node *n = nak_node(s, node);

	*root = remove_node(s, *root, node);
	n->t_left = n->t_right = NAK_NONE;
}

bool nak_tree_covers(struct pubd_nak_sched *s, uint32_t t, uint64_t first, uint64_t last)
{
	while (t != NAK_NONE) {
		const struct pubd_nak_node *n = nak_node(s, t);

		s->visits++;
		if (n->g.first > first) {
			t = n->t_left;
			continue;
		}
		/* n and all it has on its left begin at first or below: one
		 * of them reaching last holds [first, last]. */
		if (nak_gap_last(&n->g) >= last || (n->t_left != NAK_NONE && top(s, n->t_left) >= last))
			return true;
		t = n->t_right;
	}
	return false;
}

void nak_tree_touching(struct pubd_nak_sched *s, uint32_t t, uint64_t lo, uint64_t hi, struct pubd_nak_hit *out,
		       uint32_t *n)
{
	while (t != NAK_NONE) {
		const struct pubd_nak_node *x = nak_node(s, t);

		s->visits++;
		/* Nothing below reaches lo; or x and all on its right begin
		 * past hi (those on its left may not). */
		if (x->t_top < lo)
			return;
		nak_tree_touching(s, x->t_left, lo, hi, out, n);
		if (x->g.first > hi)
			return;
		if (nak_gap_last(&x->g) >= lo)
			out[(*n)++] = (struct pubd_nak_hit){.born = x->born, .node = t};
		t = x->t_right;
	}
}
