/* SPDX-License-Identifier: MIT */
/*
 * What the pieces of reassembly share (reasm.h is the public API): the
 * intrusive list and hash table, the per-stream, per-partial and per-range
 * state, the accounting of the heap each costs, and the small helpers the
 * receive path wants inlined. See reasm.c for the shape of it all. Only
 * reasm*.c include it.
 */
#ifndef PUBD_REASM_INTERNAL_H
#define PUBD_REASM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "htab.h"
#include "reasm.h"

/* ---- intrusive circular doubly-linked list ---- */

struct link {
	struct link *next, *prev;
};

static inline void list_init(struct link *h)
{
	h->next = h->prev = h;
}

static inline bool list_empty(const struct link *h)
{
	return h->next == h;
}

static inline void list_insert_after(struct link *pos, struct link *n)
{
	n->prev = pos;
	n->next = pos->next;
	pos->next->prev = n;
	pos->next = n;
}

static inline void list_add_tail(struct link *h, struct link *n)
{
	list_insert_after(h->prev, n);
}

static inline void list_del(struct link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

static inline void list_move_tail(struct link *h, struct link *n)
{
	if (h->prev == n)
		return;
	list_del(n);
	list_add_tail(h, n);
}

/* ---- the engine ---- */

enum { REASM_CLS_PLAIN = 0, REASM_CLS_REPAIR = 1, REASM_NCLS = 2 };

struct stream {
	struct hnode hn; /* (source_id, group_id) */
	struct link lru; /* pubd_reasm.lru or .lru_new, least recently active first */
	struct link partials;
	struct link ranges;
	struct range *rtree; /* the same ranges by sequence: an AVL tree (reasm_rtree.c) */
	uint64_t id;	     /* key of its partials in pubd_reasm.partials */
	uint64_t baseline;
	uint64_t next_seq;
	uint64_t last_active;
	uint64_t jump_budget; /* sequence numbers it may still skip, as of budget_ns (reasm_push.c) */
	uint64_t budget_ns;
	uint64_t drops_seen; /* pubd_reasm.kernel_drops when it was last heard */
	uint64_t missing;
	uint64_t inflight_bytes;
	uint32_t inflight;
	uint32_t nranges;
	bool proven;	     /* has completed a message: on lru, else on lru_new */
	bool based;	     /* baseline settled: 0, a tombstone's, or rebased once */
	uint8_t cls;	     /* timeout class: REASM_CLS_PLAIN or REASM_CLS_REPAIR */
	struct partial *hot; /* the partial last filled */
};

struct partial {
	struct hnode hn;   /* (stream id, seq) */
	struct link slink; /* stream's partials, arrival order */
	struct link glink; /* all partials, arrival (= deadline) order */
	struct stream *s;
	uint64_t seq;
	uint64_t deadline;
	struct pubd_msgbuf *buf;
	uint32_t msg_len;
	uint32_t frag_count;
	uint32_t unit;
	uint32_t have;
	bool offered; /* to loss repair as stuck, once (pubd_reasm_offer_stuck) */
	uint64_t bits[];
};

struct range {
	struct link slink; /* stream's ranges, sequence order */
	struct link glink; /* all ranges, deadline order */
	struct stream *s;
	uint64_t first;
	uint64_t count;
	uint64_t deadline;
	struct range *tl, *tr; /* stream's tree of ranges by first (reasm_rtree.c) */
	int th;		       /* height of the subtree under this range */
};

/* Where a forgotten stream had got to, so that when it is heard again its
 * messages are counted from there: neither its delivered messages counted
 * again as a gap (from zero) nor the ones sent meanwhile ignored. */
struct tomb {
	struct hnode hn;  /* (source_id, group_id) */
	struct link fifo; /* pubd_reasm.tombs_fifo (or _new if never proven), oldest first */
	uint64_t next_seq;
	uint64_t last_active;
	bool proven;
};

struct pubd_reasm {
	struct pubd_reasm_config cfg;
	struct pubd_reasm_ops ops;
	void *ctx;
	struct htab streams;
	struct htab tombs; /* tombs.n: how many */
	struct link tombs_fifo, tombs_fifo_new;
	struct htab partials;
	/* Streams that have completed a message, and those that have not (new,
	 * unproven: what a flood of invented source ids is made of). Making
	 * room for a new stream or tombstone takes from the unproven first. */
	struct link lru, lru_new;
	/* Per timeout class, so that each list stays in deadline order with
	 * its own timeout (a repair group's long wait never stretches the
	 * others'). */
	struct link gpartials[REASM_NCLS];
	struct link granges[REASM_NCLS];
	struct stream *hot;
	uint64_t next_id;
	uint64_t nstreams;
	uint64_t inflight_msgs;
	uint64_t inflight_bytes;
	/* Heap charged to budget_bytes: partials (struct, bitmap, buffer, table
	 * entry) and missing ranges, each as malloc really holds it. */
	uint64_t held_bytes;
	/* The budget as configured, and what is charged to it outside
	 * (pubd_reasm_set_outside): cfg.budget_bytes is what is left. */
	uint64_t budget_total, outside_bytes;
	/* Heap of streams and tombstones, bounded by max_streams, not budget. */
	uint64_t stream_bytes;
	uint64_t kernel_drops; /* pubd_reasm_kernel_drops */
	uint64_t range_visits; /* ranges reasm_range_find looked at (pubd_reasm_totals) */
	/* Inside ops.deliver or ops.drop: the entry points that change state
	 * refuse to run (reasm_no_reentry). */
	unsigned in_callback;
};

/*
 * What malloc really holds for a request of n bytes (glibc, 64-bit: an
 * 8-byte size header, 16-byte alignment, 32 bytes at least), so the budget
 * is charged for memory, not for message bytes: a tiny partial costs
 * hundreds of bytes of structure, which is what a flood of first fragments
 * is made of.
 */
static inline size_t chunk_bytes(size_t n)
{
	size_t c = (n + sizeof(size_t) + 15) & ~(size_t)15;

	return c < 32 ? 32 : c;
}

/* A message buffer: small ones come in size classes (msgbuf.c). */
static inline size_t msgbuf_bytes(size_t len)
{
	static const size_t classes[] = {256, 1024, PUBD_MSGBUF_CLASS_MAX};
	unsigned i;

	for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (len <= classes[i])
			return chunk_bytes(sizeof(struct pubd_msgbuf) + classes[i]);
	return chunk_bytes(sizeof(struct pubd_msgbuf) + len);
}

/* A hash table entry costs its share of buckets (load <= 1, doubling: at
 * most two pointers per entry). */
#define HTAB_ENTRY_BYTES (2 * sizeof(void *))

static inline size_t partial_bytes(uint32_t frag_count, uint32_t msg_len)
{
	size_t words = ((size_t)frag_count + 63) / 64;

	return chunk_bytes(sizeof(struct partial) + words * sizeof(uint64_t)) + msgbuf_bytes(msg_len) +
	       HTAB_ENTRY_BYTES;
}

#define RANGE_BYTES  chunk_bytes(sizeof(struct range))
#define STREAM_BYTES (chunk_bytes(sizeof(struct stream)) + HTAB_ENTRY_BYTES)
#define TOMB_BYTES   (chunk_bytes(sizeof(struct tomb)) + HTAB_ENTRY_BYTES)

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/*
 * The callbacks, called only through these: reasm.h forbids a callback to
 * call back into the same pubd_reasm (a forget_group from inside a delivery
 * would free the stream being delivered from), and in_callback lets the
 * entry points hold to it.
 */
static inline void call_deliver(struct pubd_reasm *r, const struct stream *s, uint64_t seq, const uint8_t *data,
				size_t len, struct pubd_msgbuf *owned)
{
	r->in_callback++;
	r->ops.deliver(r->ctx, s->hn.k1, s->hn.k2, seq, data, len, owned);
	r->in_callback--;
}

static inline void call_drop(struct pubd_reasm *r, uint64_t source, uint64_t group, enum pub_drop_reason why,
			     uint64_t n)
{
	r->in_callback++;
	r->ops.drop(r->ctx, source, group, why, n);
	r->in_callback--;
}

/* A callback called back in: a bug in the caller that would corrupt the
 * state. Stop at once, saying where, rather than carry on corrupted. */
void reasm_reentered(const char *entry) __attribute__((noreturn));
#define reasm_no_reentry(r)                                \
	do {                                               \
		if (__builtin_expect((r)->in_callback, 0)) \
			reasm_reentered(__func__);         \
	} while (0)

static inline void drop(struct pubd_reasm *r, const struct stream *s, enum pub_drop_reason why, uint64_t n)
{
	if (n)
		call_drop(r, s->hn.k1, s->hn.k2, why, n);
}

static inline void drop_dgram(struct pubd_reasm *r, const struct pubd_wire_hdr *h, enum pub_drop_reason why)
{
	call_drop(r, h->source_id, h->group_id, why, 1);
}

static inline struct link *lru_of(struct pubd_reasm *r, const struct stream *s)
{
	return s->proven ? &r->lru : &r->lru_new;
}

/* s completed a message: from now on it is evicted after every unproven one. */
static inline void stream_proven(struct pubd_reasm *r, struct stream *s)
{
	if (s->proven)
		return;
	s->proven = true;
	list_del(&s->lru);
	list_add_tail(&r->lru, &s->lru);
}

static inline struct partial *partial_find(struct pubd_reasm *r, struct stream *s, uint64_t seq)
{
	struct hnode *n;

	if (s->hot && s->hot->seq == seq)
		return s->hot;
	if (!s->inflight)
		return NULL;
	n = htab_find(&r->partials, s->id, seq);
	return n ? container_of(n, struct partial, hn) : NULL;
}

/* ---- reasm_partial.c: fragment assembly of one message ---- */
/* How long a partial or range of class cls waits. */
static inline uint64_t cls_timeout(const struct pubd_reasm *r, unsigned cls)
{
	return cls == REASM_CLS_REPAIR && r->cfg.repair_timeout_ns ? r->cfg.repair_timeout_ns : r->cfg.timeout_ns;
}

/* The partial that arrived first, of every class (NULL: none). */
struct partial *reasm_oldest_partial(const struct pubd_reasm *r);
/* The missing range opened first, of every class (NULL: none). */
struct range *reasm_oldest_range(const struct pubd_reasm *r);

void reasm_partial_free(struct pubd_reasm *r, struct partial *p);
void reasm_partial_drop(struct pubd_reasm *r, struct partial *p, enum pub_drop_reason why);
struct partial *reasm_partial_new(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t seq,
				  const struct pubd_wire_hdr *h, uint32_t unit);
void reasm_partial_add(struct pubd_reasm *r, struct partial *p, const struct pubd_wire_hdr *h, uint32_t unit,
		       const uint8_t *payload, size_t len);

/* ---- reasm_ranges.c: missing ranges (sequence gaps) ---- */
void reasm_range_free(struct pubd_reasm *r, struct stream *s, struct range *g);
void reasm_range_drop(struct pubd_reasm *r, struct range *g);
void reasm_range_open(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t first, uint64_t count);
struct range *reasm_range_find(struct pubd_reasm *r, struct stream *s, uint64_t seq);
void reasm_range_take(struct pubd_reasm *r, struct range *g, uint64_t seq);

/* ---- reasm_rtree.c: a stream's ranges by sequence ---- */
void reasm_rtree_insert(struct stream *s, struct range *g);
void reasm_rtree_remove(struct stream *s, struct range *g);
/* The range of s with the largest first <= seq (NULL: none), in O(log
 * ranges); each range looked at counts in r->range_visits. */
struct range *reasm_rtree_floor(struct pubd_reasm *r, const struct stream *s, uint64_t seq);

/* ---- reasm_streams.c: forgetting streams, tombstones ---- */
void reasm_tomb_free(struct pubd_reasm *r, struct tomb *t);
bool reasm_tomb_take(struct pubd_reasm *r, uint64_t source, uint64_t group, struct stream *s);
void reasm_stream_forget(struct pubd_reasm *r, struct stream *s, bool report);

#endif
