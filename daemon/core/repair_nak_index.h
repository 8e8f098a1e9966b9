/* SPDX-License-Identifier: MIT */
/*
 * The NAK schedule's indexes (repair_nak.h), inside the core: its gaps sit
 * in a pool of max_gaps nodes, each on three lists at once:
 *
 *   - its stream's, oldest first, the stream found by a keyed hash on
 *     (source, group) (repair_nak_streams.c): what a filled message, a GONE
 *     or a new gap looks at;
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
	uint64_t born;	       /* when found, in gaps: the heap's tie-break */
	uint32_t stream;
	uint32_t s_prev, s_next; /* its stream's gaps, oldest first */
	uint32_t a_prev, a_next; /* all gaps, oldest first; free nodes on a_next */
	uint32_t heap_at;	 /* NAK_NONE: out of the heap (a run holds it) */
};

struct pubd_nak_stream {
	uint64_t source, group;
	uint32_t head, tail; /* its gaps; a stream without one is freed */
	uint32_t next;	     /* its hash chain, or the free list */
};

/* The stream of (source, group), or NAK_NONE. */
uint32_t nak_stream_find(struct pubd_nak_sched *s, uint64_t source, uint64_t group);
/* Put node (its g.source and g.group set) last on its stream, the stream
 * made if new. false: no stream free (cannot be while streams are no more
 * than nodes: the caller counts it anyway). */
bool nak_stream_link(struct pubd_nak_sched *s, uint32_t node);
/* Take node off its stream; a stream left without gaps is freed. */
void nak_stream_unlink(struct pubd_nak_sched *s, uint32_t node);

void nak_heap_push(struct pubd_nak_sched *s, uint32_t node);
void nak_heap_remove(struct pubd_nak_sched *s, uint32_t node);

static inline struct pubd_nak_node *nak_node(const struct pubd_nak_sched *s, uint32_t i)
{
	return &s->nodes[i];
}

#endif
