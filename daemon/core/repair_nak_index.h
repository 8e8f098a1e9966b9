/* SPDX-License-Identifier: MIT */
/*
 * The NAK schedule's indexes (repair_nak.h), inside the core: its gaps sit
 * in a pool of max_gaps nodes, each on three lists at once:
 *
 *   - its stream's tree by sequence number (repair_nak_tree.c), the stream
 *     found by a keyed hash on (source, group) (repair_nak_streams.c): what
 *     a filled message, a GONE, pending and a new gap look at;
 *   - a binary heap on (due time, age) (repair_nak_heap.c): what a run and
 *     the next deadline look at;
 *   - all gaps in the order found (repair_nak.c): the oldest eighth given
 *     up when full.
 *
 * Indices, not pointers: the pools are arrays allocated once, so nothing
 * allocates after init and nothing can fail for want of memory there.
 */
#ifndef PUBD_REPAIR_NAK_INDEX_H
#define PUBD_REPAIR_NAK_INDEX_H

#include "repair_nak.h"

#define NAK_NONE UINT32_MAX

struct pubd_nak_node {
	struct pubd_nak_gap g; /* what ops->send sees */
	uint64_t born;	       /* when found, in gaps: the heap's and the tree's tie-break */
	uint64_t t_top;	       /* the highest last sequence number in its subtree */
	uint32_t stream;
	uint32_t t_left, t_right; /* its stream's tree, by (first, born) */
	uint32_t a_prev, a_next;  /* all gaps, oldest first; free nodes on a_next */
	uint32_t heap_at;	  /* NAK_NONE: out of the heap (a run holds it) */
	uint8_t t_height;
};

struct pubd_nak_stream {
	uint64_t source, group;
	uint32_t root; /* its gaps' tree; a stream without one is freed */
	uint32_t next; /* its hash chain, or the free list */
};

/* A gap a lookup found, with its age (the oldest wins, or goes first). */
struct pubd_nak_hit {
	uint64_t born;
	uint32_t node;
};

/* g's last sequence number: first + count - 1, or the last there is when
 * that is past it, as the gap holds seq when seq - first < count. */
static inline uint64_t nak_gap_last(const struct pubd_nak_gap *g)
{
	return g->count - 1 > UINT64_MAX - g->first ? UINT64_MAX : g->first + g->count - 1;
}

/* The stream of (source, group), or NAK_NONE. */
uint32_t nak_stream_find(struct pubd_nak_sched *s, uint64_t source, uint64_t group);
/* Put node (its g and born set) in its stream's tree, the stream made if
 * new. false: no stream free (cannot be while streams are no more than
 * nodes: the caller counts it anyway). */
bool nak_stream_link(struct pubd_nak_sched *s, uint32_t node);
/* Take node off its stream; a stream left without gaps is freed. */
void nak_stream_unlink(struct pubd_nak_sched *s, uint32_t node);

/* A stream's tree (root): node in or out. A node's first, count and born
 * are its key: it is out of the tree while they change. */
void nak_tree_insert(struct pubd_nak_sched *s, uint32_t *root, uint32_t node);
void nak_tree_remove(struct pubd_nak_sched *s, uint32_t *root, uint32_t node);
/* Does one gap of tree t hold all of first .. last? */
bool nak_tree_covers(struct pubd_nak_sched *s, uint32_t t, uint64_t first, uint64_t last);
/* The gaps of tree t holding any of lo .. hi, appended to out[*n] in order
 * of first (out has room for all of the schedule's gaps). */
void nak_tree_touching(struct pubd_nak_sched *s, uint32_t t, uint64_t lo, uint64_t hi, struct pubd_nak_hit *out,
		       uint32_t *n);

void nak_heap_push(struct pubd_nak_sched *s, uint32_t node);
void nak_heap_remove(struct pubd_nak_sched *s, uint32_t node);

static inline struct pubd_nak_node *nak_node(const struct pubd_nak_sched *s, uint32_t i)
{
	return &s->nodes[i];
}

#endif
