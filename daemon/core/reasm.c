/* SPDX-License-Identifier: MIT */
/*
 * Reassembly. See reasm.h for the semantics; this comment is about the shape.
 *
 * Per stream (source, group): a baseline, next_seq, the partial messages in
 * arrival order and the missing ranges in sequence order. Any sequence number
 * in [baseline, next_seq) that is neither partial nor missing has been
 * resolved (delivered or counted as dropped), which is what makes a later
 * datagram for it STALE without remembering every sequence number.
 *
 * Deadlines. Every partial and every range gets now + timeout, clamped to be
 * no earlier than the newest one of its kind, so the global arrival-order
 * lists (all partials, all ranges) are also deadline order and expiry only
 * ever looks at their heads. Splitting a range inserts the new piece right
 * after its sibling with the same deadline, which keeps both orders. Streams
 * sit on an LRU list whose head is the next to go idle. So
 * pubd_reasm_next_deadline() is the smallest of three heads: O(1).
 *
 * Lookups. Streams are in a hash table on (source, group), with a one-entry
 * cache for the common run of datagrams from one stream. Partials are in a
 * second table on (stream id, seq), with a per-stream cache of the partial
 * last filled, so an in-order multi-fragment stream never hashes for it.
 * A seq below next_seq that is not partial is looked up in the stream's
 * ranges, scanning from the newest: O(ranges) <= max_missing_ranges, and
 * reordering is usually recent, so the scan usually stops at once.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "reasm.h"

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

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

/* ---- intrusive chained hash table on two 64-bit keys ---- */

struct hnode {
	struct hnode *next;
	uint64_t k1, k2;
};

struct htab {
	struct hnode **b;
	size_t mask;
	size_t n;
};

#define HTAB_MIN_BUCKETS 64

static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static inline size_t hslot(const struct htab *t, uint64_t k1, uint64_t k2)
{
	return (size_t)fmix64(k1 ^ fmix64(k2 + 0x9e3779b97f4a7c15ull)) & t->mask;
}

static int htab_init(struct htab *t)
{
	t->b = calloc(HTAB_MIN_BUCKETS, sizeof(*t->b));
	if (!t->b)
		return -1;
	t->mask = HTAB_MIN_BUCKETS - 1;
	t->n = 0;
	return 0;
}

static inline struct hnode *htab_find(const struct htab *t, uint64_t k1, uint64_t k2)
{
	struct hnode *n;

	for (n = t->b[hslot(t, k1, k2)]; n; n = n->next)
		if (n->k1 == k1 && n->k2 == k2)
			return n;
	return NULL;
}

/* Double at load 1; if that allocation fails the chains just grow longer. */
static void htab_grow(struct htab *t)
{
	size_t nb = (t->mask + 1) * 2, i;
	struct hnode **b = calloc(nb, sizeof(*b)), *n, *next;
	struct htab nt = {.b = b, .mask = nb - 1};

	if (!b)
		return;
	for (i = 0; i <= t->mask; i++) {
		for (n = t->b[i]; n; n = next) {
			size_t s = hslot(&nt, n->k1, n->k2);

			next = n->next;
			n->next = b[s];
			b[s] = n;
		}
	}
	free(t->b);
	t->b = b;
	t->mask = nb - 1;
}

static void htab_insert(struct htab *t, struct hnode *n)
{
	size_t s;

	if (t->n > t->mask)
		htab_grow(t);
	s = hslot(t, n->k1, n->k2);
	n->next = t->b[s];
	t->b[s] = n;
	t->n++;
}

static void htab_remove(struct htab *t, struct hnode *n)
{
	struct hnode **pp = &t->b[hslot(t, n->k1, n->k2)];

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = n->next;
		t->n--;
	}
}

/* ---- the engine ---- */

struct stream {
	struct hnode hn; /* (source_id, group_id) */
	struct link lru; /* pubd_reasm.lru or .lru_new, least recently active first */
	struct link partials;
	struct link ranges;
	uint64_t id; /* key of its partials in pubd_reasm.partials */
	uint64_t baseline;
	uint64_t next_seq;
	uint64_t last_active;
	uint64_t missing;
	uint64_t inflight_bytes;
	uint32_t inflight;
	uint32_t nranges;
	bool proven;	     /* has completed a message: on lru, else on lru_new */
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
	uint64_t bits[];
};

struct range {
	struct link slink; /* stream's ranges, sequence order */
	struct link glink; /* all ranges, deadline order */
	struct stream *s;
	uint64_t first;
	uint64_t count;
	uint64_t deadline;
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
	struct link gpartials;
	struct link granges;
	struct stream *hot;
	uint64_t next_id;
	uint64_t nstreams;
	uint64_t inflight_msgs;
	uint64_t inflight_bytes;
	/* Heap charged to budget_bytes: partials (struct, bitmap, buffer, table
	 * entry) and missing ranges, each as malloc really holds it. */
	uint64_t held_bytes;
	/* Heap of streams and tombstones, bounded by max_streams, not budget. */
	uint64_t stream_bytes;
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

static inline void drop(struct pubd_reasm *r, const struct stream *s, enum pub_drop_reason why, uint64_t n)
{
	if (n)
		r->ops.drop(r->ctx, s->hn.k1, s->hn.k2, why, n);
}

static inline void drop_dgram(struct pubd_reasm *r, const struct pubd_wire_hdr *h, enum pub_drop_reason why)
{
	r->ops.drop(r->ctx, h->source_id, h->group_id, why, 1);
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

void pubd_reasm_config_defaults(struct pubd_reasm_config *c)
{
	c->budget_bytes = (size_t)64 << 20;
	c->max_inflight_per_source = 64;
	c->timeout_ns = 500ull * 1000 * 1000;
	c->idle_timeout_ns = 30ull * 1000 * 1000 * 1000;
	c->max_message_size = (size_t)16 << 20;
	c->max_streams = 4096;
	c->max_missing_ranges = 64;
}

void pubd_reasm_set_config(struct pubd_reasm *r, const struct pubd_reasm_config *cfg)
{
	r->cfg = *cfg;
	/* A datagram always belongs to some stream; keep room for one. */
	if (!r->cfg.max_streams)
		r->cfg.max_streams = 1;
}

struct pubd_reasm *pubd_reasm_create(const struct pubd_reasm_config *cfg, const struct pubd_reasm_ops *ops, void *ctx)
{
	struct pubd_reasm *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	pubd_reasm_set_config(r, cfg);
	r->ops = *ops;
	r->ctx = ctx;
	list_init(&r->lru);
	list_init(&r->lru_new);
	list_init(&r->tombs_fifo_new);
	list_init(&r->gpartials);
	list_init(&r->granges);
	list_init(&r->tombs_fifo);
	if (htab_init(&r->streams))
		goto err_free;
	if (htab_init(&r->partials))
		goto err_streams;
	if (htab_init(&r->tombs))
		goto err_partials;
	return r;

err_partials:
	free(r->partials.b);
err_streams:
	free(r->streams.b);
err_free:
	free(r);
	return NULL;
}

/* ---- partials ---- */

static void partial_free(struct pubd_reasm *r, struct partial *p)
{
	struct stream *s = p->s;

	htab_remove(&r->partials, &p->hn);
	list_del(&p->slink);
	list_del(&p->glink);
	s->inflight--;
	s->inflight_bytes -= p->msg_len;
	r->inflight_msgs--;
	r->inflight_bytes -= p->msg_len;
	r->held_bytes -= partial_bytes(p->frag_count, p->msg_len);
	if (s->hot == p)
		s->hot = NULL;
	pubd_msgbuf_put(p->buf);
	free(p);
}

static void partial_drop(struct pubd_reasm *r, struct partial *p, enum pub_drop_reason why)
{
	struct stream *s = p->s;

	partial_free(r, p);
	drop(r, s, why, 1);
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

static void range_drop(struct pubd_reasm *r, struct range *g);

/*
 * Room for a new partial of msg_len bytes: first the stream's in-flight
 * limit, then the global budget. A message that could never fit is refused
 * before anything is evicted for it. Returns NULL when the message was
 * dropped (and counted).
 */
static struct partial *partial_new(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t seq,
				   const struct pubd_wire_hdr *h, uint32_t unit)
{
	size_t words = ((size_t)h->frag_count + 63) / 64, charge = partial_bytes(h->frag_count, h->msg_len);
	struct partial *p;
	uint64_t deadline;

	if (!r->cfg.max_inflight_per_source) {
		drop(r, s, PUB_DROP_REASM_INFLIGHT, 1);
		return NULL;
	}
	if (charge > r->cfg.budget_bytes) {
		drop(r, s, PUB_DROP_REASM_BUDGET, 1);
		return NULL;
	}
	while (s->inflight >= r->cfg.max_inflight_per_source)
		partial_drop(r, container_of(s->partials.next, struct partial, slink), PUB_DROP_REASM_INFLIGHT);
	/* Older partials go first; only when none is left do missing ranges
	 * (which then count as a gap now) make room. */
	while (r->held_bytes + charge > r->cfg.budget_bytes) {
		if (!list_empty(&r->gpartials))
			partial_drop(r, container_of(r->gpartials.next, struct partial, glink), PUB_DROP_REASM_BUDGET);
		else
			range_drop(r, container_of(r->granges.next, struct range, glink));
	}

	p = malloc(sizeof(*p) + words * sizeof(p->bits[0]));
	if (!p)
		goto nomem;
	p->buf = pubd_msgbuf_alloc(h->msg_len);
	if (!p->buf) {
		free(p);
		goto nomem;
	}
	memset(p->bits, 0, words * sizeof(p->bits[0]));
	p->s = s;
	p->seq = seq;
	p->msg_len = h->msg_len;
	p->frag_count = h->frag_count;
	p->unit = unit;
	p->have = 0;
	deadline = sat_add(now, r->cfg.timeout_ns);
	if (!list_empty(&r->gpartials)) {
		struct partial *last = container_of(r->gpartials.prev, struct partial, glink);

		if (deadline < last->deadline)
			deadline = last->deadline;
	}
	p->deadline = deadline;
	p->hn.k1 = s->id;
	p->hn.k2 = seq;
	htab_insert(&r->partials, &p->hn);
	list_add_tail(&s->partials, &p->slink);
	list_add_tail(&r->gpartials, &p->glink);
	s->inflight++;
	s->inflight_bytes += p->msg_len;
	r->inflight_msgs++;
	r->inflight_bytes += p->msg_len;
	r->held_bytes += charge;
	return p;

nomem:
	/* Out of memory is out of budget, whatever the configured number. */
	drop(r, s, PUB_DROP_REASM_BUDGET, 1);
	return NULL;
}

static void partial_add(struct pubd_reasm *r, struct partial *p, const struct pubd_wire_hdr *h, uint32_t unit,
			const uint8_t *payload, size_t len)
{
	struct stream *s = p->s;
	uint32_t i = h->frag_index;
	uint64_t bit = 1ull << (i % 64);
	struct pubd_msgbuf *buf;
	uint64_t seq;

	/* Equal geometry is what makes a full bitmap mean every byte written. */
	if (h->msg_len != p->msg_len || h->frag_count != p->frag_count || unit != p->unit) {
		drop(r, s, PUB_DROP_MALFORMED, 1);
		return;
	}
	if (p->bits[i / 64] & bit) {
		drop(r, s, PUB_DROP_DUPLICATE, 1);
		return;
	}
	memcpy(p->buf->data + h->frag_offset, payload, len);
	p->bits[i / 64] |= bit;
	s->hot = p;
	if (++p->have < p->frag_count)
		return;

	/* Complete: hand the buffer's reference to the callee. */
	buf = pubd_msgbuf_get(p->buf);
	seq = p->seq;
	partial_free(r, p);
	stream_proven(r, s);
	r->ops.deliver(r->ctx, s->hn.k1, s->hn.k2, seq, buf->data, buf->len, buf);
}

/* ---- missing ranges ---- */

static void range_free(struct pubd_reasm *r, struct stream *s, struct range *g)
{
	r->held_bytes -= RANGE_BYTES;
	list_del(&g->slink);
	list_del(&g->glink);
	s->nranges--;
	s->missing -= g->count;
	free(g);
}

static void range_drop(struct pubd_reasm *r, struct range *g)
{
	struct stream *s = g->s;
	uint64_t n = g->count;

	range_free(r, s, g);
	drop(r, s, PUB_DROP_SEQ_GAP, n);
}

static void ranges_trim(struct pubd_reasm *r, struct stream *s)
{
	while (s->nranges > r->cfg.max_missing_ranges)
		range_drop(r, container_of(s->ranges.next, struct range, slink));
}

/* [first, first + count) went missing now, above every existing range. */
static void range_open(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t first, uint64_t count)
{
	uint64_t deadline = sat_add(now, r->cfg.timeout_ns);
	struct range *g;

	/* Ranges are charged to the budget too, but never evict a partial:
	 * the oldest ranges are given up (as gaps) instead. */
	while (r->held_bytes + RANGE_BYTES > r->cfg.budget_bytes && !list_empty(&r->granges))
		range_drop(r, container_of(r->granges.next, struct range, glink));
	g = r->held_bytes + RANGE_BYTES > r->cfg.budget_bytes ? NULL : malloc(sizeof(*g));
	if (!g) {
		/* No memory to wait for them: they are a gap now. */
		drop(r, s, PUB_DROP_SEQ_GAP, count);
		return;
	}
	if (!list_empty(&r->granges)) {
		struct range *last = container_of(r->granges.prev, struct range, glink);

		if (deadline < last->deadline)
			deadline = last->deadline;
	}
	g->s = s;
	g->first = first;
	g->count = count;
	g->deadline = deadline;
	r->held_bytes += RANGE_BYTES;
	list_add_tail(&s->ranges, &g->slink);
	list_add_tail(&r->granges, &g->glink);
	s->nranges++;
	s->missing += count;
	ranges_trim(r, s);
}

static struct range *range_find(struct stream *s, uint64_t seq)
{
	struct link *l;

	for (l = s->ranges.prev; l != &s->ranges; l = l->prev) {
		struct range *g = container_of(l, struct range, slink);

		if (seq >= g->first)
			return seq - g->first < g->count ? g : NULL;
	}
	return NULL;
}

/* seq, inside g, arrived late: take it out, splitting g if needed. */
static void range_take(struct pubd_reasm *r, struct range *g, uint64_t seq)
{
	struct stream *s = g->s;
	uint64_t hi_first = seq + 1, hi_count = g->first + g->count - hi_first;
	struct range *hi;

	if (g->count == 1) {
		range_free(r, s, g);
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
	s->nranges++;
	ranges_trim(r, s);
}

/* ---- tombstones of forgotten streams ---- */

static void tomb_free(struct pubd_reasm *r, struct tomb *t)
{
	htab_remove(&r->tombs, &t->hn);
	list_del(&t->fifo);
	r->stream_bytes -= TOMB_BYTES;
	free(t);
}

/* Remember where (source, group) had got to; at most max_streams of them,
 * the oldest going first. Without memory it is simply not remembered. */
static void tomb_put(struct pubd_reasm *r, const struct stream *s)
{
	struct tomb *t;

	while (r->tombs.n && r->tombs.n >= r->cfg.max_streams) {
		struct link *l = !list_empty(&r->tombs_fifo_new) ? r->tombs_fifo_new.next : r->tombs_fifo.next;

		tomb_free(r, container_of(l, struct tomb, fifo));
	}
	t = malloc(sizeof(*t));
	if (!t)
		return;
	t->hn.k1 = s->hn.k1;
	t->hn.k2 = s->hn.k2;
	t->next_seq = s->next_seq;
	t->last_active = s->last_active;
	t->proven = s->proven;
	htab_insert(&r->tombs, &t->hn);
	list_add_tail(s->proven ? &r->tombs_fifo : &r->tombs_fifo_new, &t->fifo);
	r->stream_bytes += TOMB_BYTES;
}

/* Where a forgotten (source, group) had got to, forgetting that: false when
 * it is not remembered. */
static bool tomb_take(struct pubd_reasm *r, uint64_t source, uint64_t group, struct stream *s)
{
	struct hnode *n;
	struct tomb *t;

	if (!r->tombs.n || !(n = htab_find(&r->tombs, source, group)))
		return false;
	t = container_of(n, struct tomb, hn);
	s->baseline = t->next_seq;
	s->last_active = t->last_active;
	s->proven = t->proven;
	tomb_free(r, t);
	return true;
}

/* ---- streams ---- */

/* Forget s. report: drop what it still waits for as timeouts and gaps, and
 * remember where it had got to (we are still listening: idle, max_streams).
 * Without report (the group was left, teardown) nothing is remembered. */
static void stream_forget(struct pubd_reasm *r, struct stream *s, bool report)
{
	uint64_t partials = s->inflight, missing = s->missing;

	if (report)
		tomb_put(r, s);

	while (!list_empty(&s->partials))
		partial_free(r, container_of(s->partials.next, struct partial, slink));
	while (!list_empty(&s->ranges))
		range_free(r, s, container_of(s->ranges.next, struct range, slink));
	if (report) {
		drop(r, s, PUB_DROP_REASM_TIMEOUT, partials);
		drop(r, s, PUB_DROP_SEQ_GAP, missing);
	}
	htab_remove(&r->streams, &s->hn);
	list_del(&s->lru);
	if (r->hot == s)
		r->hot = NULL;
	r->nstreams--;
	r->stream_bytes -= STREAM_BYTES;
	free(s);
}

/*
 * How far ahead of next_seq a stream last heard at last_active may jump at
 * now and still be taken as that many lost messages. A peer can put any
 * msg_seq in a datagram; a real publisher cannot send faster than
 * SEQ_MAX_RATE_PER_US messages a microsecond (well above what one pubd
 * does), so a bigger jump is a forged or corrupt datagram, counted as
 * malformed, and not 2^63 "lost" messages that push a real stream's
 * messages out as stale. A stream that really was silent for long gets a
 * window that grows with the silence.
 */
#define SEQ_JUMP_BASE	    (1ull << 16)
#define SEQ_MAX_RATE_PER_US 50ull

static inline uint64_t seq_window(uint64_t last_active, uint64_t now)
{
	uint64_t us = now > last_active ? (now - last_active) / 1000 : 0;

	if (us > (UINT64_MAX - SEQ_JUMP_BASE) / SEQ_MAX_RATE_PER_US)
		return UINT64_MAX;
	return SEQ_JUMP_BASE + us * SEQ_MAX_RATE_PER_US;
}

/*
 * The stream of (source, group), created with its baseline at seq when
 * new. Moves it to its LRU tail; *prev_active is when it was last heard
 * before (now for a stream new to us). last_active is left for the caller
 * to set once the datagram is accepted. NULL only when out of memory.
 */
static struct stream *stream_get(struct pubd_reasm *r, uint64_t now, uint64_t source, uint64_t group, uint64_t seq,
				 bool from_zero)
{
	struct stream *s = r->hot;
	struct hnode *n;

	if (!s || s->hn.k1 != source || s->hn.k2 != group) {
		n = htab_find(&r->streams, source, group);
		s = n ? container_of(n, struct stream, hn) : NULL;
	}
	if (s) {
		list_move_tail(lru_of(r, s), &s->lru);
		goto out;
	}

	/* Unproven streams go first: invented source ids cannot push out the
	 * streams that deliver. */
	while (r->nstreams >= r->cfg.max_streams) {
		struct link *l = !list_empty(&r->lru_new) ? r->lru_new.next : r->lru.next;

		stream_forget(r, container_of(l, struct stream, lru), true);
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->hn.k1 = source;
	s->hn.k2 = group;
	s->id = r->next_id++;
	s->last_active = now;
	/* A stream forgotten while we listened resumes where it was. From
	 * zero: the caller knows this stream began after we started
	 * listening, so everything before seq was sent to us and lost; no
	 * more than the window of a new stream, though (see seq_window). */
	if (!tomb_take(r, source, group, s))
		s->baseline = from_zero && seq <= SEQ_JUMP_BASE ? 0 : seq;
	s->next_seq = s->baseline;
	list_init(&s->partials);
	list_init(&s->ranges);
	htab_insert(&r->streams, &s->hn);
	list_add_tail(lru_of(r, s), &s->lru);
	r->nstreams++;
	r->stream_bytes += STREAM_BYTES;
out:
	r->hot = s;
	return s;
}

/* Is seq (at or beyond next_seq) within the window? If so s is active now;
 * if not the datagram is counted as malformed. */
static bool stream_accept_jump(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t seq,
			       const struct pubd_wire_hdr *h)
{
	if (seq > s->next_seq && seq - s->next_seq > seq_window(s->last_active, now)) {
		drop_dgram(r, h, PUB_DROP_MALFORMED);
		return false;
	}
	s->last_active = now;
	return true;
}

/* seq is at or beyond next_seq: what lies between went missing. */
static void stream_advance(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t seq)
{
	if (seq > s->next_seq)
		range_open(r, s, now, s->next_seq, seq - s->next_seq);
	s->next_seq = seq;
}

/* ---- push ---- */

static void heartbeat(struct pubd_reasm *r, uint64_t now, const struct pubd_wire_hdr *h, size_t payload_len,
		      bool from_zero)
{
	struct stream *s;

	if (h->frag_count || h->msg_len || h->frag_index || h->frag_offset || payload_len) {
		drop_dgram(r, h, PUB_DROP_MALFORMED);
		return;
	}
	s = stream_get(r, now, h->source_id, h->group_id, h->msg_seq, from_zero);
	/* Without memory for the stream there is nothing to announce to. */
	if (!s || !stream_accept_jump(r, s, now, h->msg_seq, h))
		return;
	if (h->msg_seq > s->next_seq)
		stream_advance(r, s, now, h->msg_seq);
}

/* The first datagram of message seq: it is resolved from here on. */
static void message_new(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t seq,
			const struct pubd_wire_hdr *h, uint32_t unit, const uint8_t *payload, size_t len)
{
	struct partial *p;

	if (h->msg_len > r->cfg.max_message_size) {
		drop(r, s, PUB_DROP_TOO_LARGE, 1);
		return;
	}
	if (h->frag_count == 1) {
		stream_proven(r, s);
		r->ops.deliver(r->ctx, s->hn.k1, s->hn.k2, seq, payload, len, NULL);
		return;
	}
	p = partial_new(r, s, now, seq, h, unit);
	if (p)
		partial_add(r, p, h, unit, payload, len);
}

void pubd_reasm_push(struct pubd_reasm *r, uint64_t now_ns, const struct pubd_wire_hdr *h, const uint8_t *payload,
		     size_t payload_len)
{
	pubd_reasm_push_flags(r, now_ns, h, payload, payload_len, 0);
}

void pubd_reasm_push_flags(struct pubd_reasm *r, uint64_t now_ns, const struct pubd_wire_hdr *h, const uint8_t *payload,
			   size_t payload_len, unsigned flags)
{
	bool from_zero = flags & PUBD_REASM_NEW_FROM_ZERO;

	uint64_t seq = h->msg_seq;
	struct stream *s;
	struct partial *p;
	struct range *g;
	uint32_t unit;

	if (h->flags & PUBD_WIRE_F_HEARTBEAT) {
		heartbeat(r, now_ns, h, payload_len, from_zero);
		return;
	}
	/* UINT64_MAX has no next_seq after it; 64-bit sequences never get there. */
	if (pubd_wire_check_frag(h, payload_len, &unit) || seq == UINT64_MAX) {
		drop_dgram(r, h, PUB_DROP_MALFORMED);
		return;
	}
	s = stream_get(r, now_ns, h->source_id, h->group_id, seq, from_zero);
	if (!s) {
		drop_dgram(r, h, PUB_DROP_REASM_BUDGET);
		return;
	}

	if (seq >= s->next_seq) {
		if (!stream_accept_jump(r, s, now_ns, seq, h))
			return;
		stream_advance(r, s, now_ns, seq);
		s->next_seq = seq + 1;
		message_new(r, s, now_ns, seq, h, unit, payload, payload_len);
		return;
	}
	s->last_active = now_ns;
	if (seq < s->baseline) {
		drop(r, s, PUB_DROP_STALE, 1);
		return;
	}
	p = partial_find(r, s, seq);
	if (p) {
		partial_add(r, p, h, unit, payload, payload_len);
		return;
	}
	g = range_find(s, seq);
	if (g) {
		range_take(r, g, seq);
		message_new(r, s, now_ns, seq, h, unit, payload, payload_len);
		return;
	}
	drop(r, s, PUB_DROP_STALE, 1);
}

/* ---- time ---- */

/* The stream of lru (or lru_new) to go idle first, or NULL. */
static inline struct stream *idle_next(const struct pubd_reasm *r)
{
	struct stream *a = list_empty(&r->lru) ? NULL : container_of(r->lru.next, struct stream, lru);
	struct stream *b = list_empty(&r->lru_new) ? NULL : container_of(r->lru_new.next, struct stream, lru);

	return !a ? b : !b ? a : a->last_active <= b->last_active ? a : b;
}

static inline uint64_t idle_deadline(const struct pubd_reasm *r)
{
	const struct stream *s = idle_next(r);

	return s ? sat_add(s->last_active, r->cfg.idle_timeout_ns) : UINT64_MAX;
}

void pubd_reasm_expire(struct pubd_reasm *r, uint64_t now_ns)
{
	while (!list_empty(&r->gpartials)) {
		struct partial *p = container_of(r->gpartials.next, struct partial, glink);

		if (p->deadline > now_ns)
			break;
		partial_drop(r, p, PUB_DROP_REASM_TIMEOUT);
	}
	while (!list_empty(&r->granges)) {
		struct range *g = container_of(r->granges.next, struct range, glink);

		if (g->deadline > now_ns)
			break;
		range_drop(r, g);
	}
	while (idle_next(r) && idle_deadline(r) <= now_ns)
		stream_forget(r, idle_next(r), true);
}

uint64_t pubd_reasm_next_deadline(const struct pubd_reasm *r)
{
	uint64_t d = idle_deadline(r);

	if (!list_empty(&r->gpartials)) {
		const struct partial *p = container_of(r->gpartials.next, const struct partial, glink);

		if (p->deadline < d)
			d = p->deadline;
	}
	if (!list_empty(&r->granges)) {
		const struct range *g = container_of(r->granges.next, const struct range, glink);

		if (g->deadline < d)
			d = g->deadline;
	}
	return d;
}

/* ---- teardown and introspection ---- */

void pubd_reasm_forget_group(struct pubd_reasm *r, uint64_t group_id)
{
	struct link *l, *next;

	for (l = r->lru.next; l != &r->lru; l = next) {
		struct stream *s = container_of(l, struct stream, lru);

		next = l->next;
		if (s->hn.k2 == group_id)
			stream_forget(r, s, false);
	}
	for (l = r->lru_new.next; l != &r->lru_new; l = next) {
		struct stream *s = container_of(l, struct stream, lru);

		next = l->next;
		if (s->hn.k2 == group_id)
			stream_forget(r, s, false);
	}
	/* Not listening any more: where its streams had got to stops meaning
	 * anything for when (if) the group is joined again. */
	for (l = r->tombs_fifo.next; l != &r->tombs_fifo; l = next) {
		struct tomb *t = container_of(l, struct tomb, fifo);

		next = l->next;
		if (t->hn.k2 == group_id)
			tomb_free(r, t);
	}
	for (l = r->tombs_fifo_new.next; l != &r->tombs_fifo_new; l = next) {
		struct tomb *t = container_of(l, struct tomb, fifo);

		next = l->next;
		if (t->hn.k2 == group_id)
			tomb_free(r, t);
	}
}

void pubd_reasm_destroy(struct pubd_reasm *r)
{
	if (!r)
		return;
	while (!list_empty(&r->lru))
		stream_forget(r, container_of(r->lru.next, struct stream, lru), false);
	while (!list_empty(&r->lru_new))
		stream_forget(r, container_of(r->lru_new.next, struct stream, lru), false);
	while (!list_empty(&r->tombs_fifo))
		tomb_free(r, container_of(r->tombs_fifo.next, struct tomb, fifo));
	while (!list_empty(&r->tombs_fifo_new))
		tomb_free(r, container_of(r->tombs_fifo_new.next, struct tomb, fifo));
	free(r->partials.b);
	free(r->streams.b);
	free(r->tombs.b);
	free(r);
}

static void foreach_list(const struct link *head, void (*fn)(void *ctx, const struct pubd_reasm_stream_info *s),
			 void *ctx)
{
	const struct link *l;

	for (l = head->next; l != head; l = l->next) {
		const struct stream *s = container_of(l, const struct stream, lru);
		struct pubd_reasm_stream_info info = {
			.source_id = s->hn.k1,
			.group_id = s->hn.k2,
			.baseline = s->baseline,
			.next_seq = s->next_seq,
			.inflight = s->inflight,
			.inflight_bytes = s->inflight_bytes,
			.missing = s->missing,
			.last_active_ns = s->last_active,
		};

		fn(ctx, &info);
	}
}

void pubd_reasm_foreach(const struct pubd_reasm *r, void (*fn)(void *ctx, const struct pubd_reasm_stream_info *s),
			void *ctx)
{
	foreach_list(&r->lru, fn, ctx);
	foreach_list(&r->lru_new, fn, ctx);
}

void pubd_reasm_totals(const struct pubd_reasm *r, struct pubd_reasm_totals *t)
{
	t->streams = r->nstreams;
	t->inflight_msgs = r->inflight_msgs;
	t->inflight_bytes = r->inflight_bytes;
	t->held_bytes = r->held_bytes;
	t->stream_bytes = r->stream_bytes;
}
