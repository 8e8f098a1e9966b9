/* SPDX-License-Identifier: MIT */
/*
 * The NAK schedule's gaps by due time (repair_nak_index.h): a binary
 * min-heap of node indices, each node knowing its place so that a gap that
 * ends anywhere leaves in O(log n). Equal due times go in the order found,
 * as the schedule's array of old did: which gaps a run's budget reaches
 * first does not depend on the heap's shape.
 */
#include "repair_nak_index.h"

static bool before(const struct pubd_nak_sched *s, uint32_t a, uint32_t b)
{
	const struct pubd_nak_node *x = nak_node(s, a), *y = nak_node(s, b);

	return x->g.due_ns < y->g.due_ns || (x->g.due_ns == y->g.due_ns && x->born < y->born);
}

static void place(struct pubd_nak_sched *s, uint32_t at, uint32_t node)
{
	s->heap[at] = node;
	nak_node(s, node)->heap_at = at;
}

static void sift_up(struct pubd_nak_sched *s, uint32_t at)
{
	uint32_t node = s->heap[at];

	while (at) {
		uint32_t up = (at - 1) / 2;

		if (!before(s, node, s->heap[up]))
			break;
		place(s, at, s->heap[up]);
		at = up;
	}
	place(s, at, node);
}

static void sift_down(struct pubd_nak_sched *s, uint32_t at)
{
	uint32_t node = s->heap[at];

	for (;;) {
		uint32_t c = 2 * at + 1;

		if (c >= s->hn)
			break;
		if (c + 1 < s->hn && before(s, s->heap[c + 1], s->heap[c]))
			c++;
		if (!before(s, s->heap[c], node))
			break;
		place(s, at, s->heap[c]);
		at = c;
	}
	place(s, at, node);
}

void nak_heap_push(struct pubd_nak_sched *s, uint32_t node)
{
	place(s, s->hn++, node);
	sift_up(s, s->hn - 1);
}

void nak_heap_remove(struct pubd_nak_sched *s, uint32_t node)
{
	uint32_t at = nak_node(s, node)->heap_at, last;

	if (at == NAK_NONE)
		return;
	nak_node(s, node)->heap_at = NAK_NONE;
	last = s->heap[--s->hn];
	if (at == s->hn)
		return;
	/* The last one takes its place, then goes whichever way it must. */
	place(s, at, last);
	if (at && before(s, last, s->heap[(at - 1) / 2]))
		sift_up(s, at);
	else
		sift_down(s, at);
}
