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
 * ranges: the newest first, where a reordered message usually falls, then
 * an AVL tree of them by sequence (reasm_rtree.c), O(log ranges). A scan
 * of the list was O(max_missing_ranges), 4,096 on a repair group: a forger
 * that opened them all and filled them from the bottom made each of its
 * datagrams cost 15-22 us.
 *
 * The pieces: reasm_push.c (the receive path), reasm_partial.c (assembly
 * of one message), reasm_ranges.c (missing ranges), reasm_rtree.c (a
 * stream's ranges by sequence), reasm_streams.c (forgetting streams,
 * tombstones), htab.c (the keyed tables); this file is the life cycle,
 * time and introspection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "reasm_internal.h"

/* The limits that are also config keys take their defaults from the
 * config's one table of keys (config_keys.c). */
static uint64_t key_default(const char *key)
{
	uint64_t v = 0;

	pubd_config_key_default(key, &v);
	return v;
}

void pubd_reasm_config_defaults(struct pubd_reasm_config *c)
{
	c->budget_bytes = (size_t)key_default("limits.reassembly_budget");
	c->max_inflight_per_source = (uint32_t)key_default("limits.reassembly_inflight");
	c->timeout_ns = key_default("limits.reassembly_timeout_ms") * 1000 * 1000;
	c->idle_timeout_ns = 30ull * 1000 * 1000 * 1000;
	c->max_message_size = (size_t)key_default("limits.max_message_size");
	c->max_streams = 4096;
	c->max_missing_ranges = 64;
	c->hash_key = (struct pubd_hash_key){0}; /* pubd draws its own */
}

void pubd_reasm_kernel_drops(struct pubd_reasm *r, uint64_t drops)
{
	r->kernel_drops = drops;
}

/* The budget's share left for partials and ranges: what the caller set
 * less what is charged outside (never below nothing). */
static void budget_left(struct pubd_reasm *r)
{
	r->cfg.budget_bytes = r->outside_bytes < r->budget_total ? r->budget_total - r->outside_bytes : 0;
}

void pubd_reasm_set_config(struct pubd_reasm *r, const struct pubd_reasm_config *cfg)
{
	r->cfg = *cfg;
	r->budget_total = cfg->budget_bytes;
	budget_left(r);
	/* A datagram always belongs to some stream; keep room for one. */
	if (!r->cfg.max_streams)
		r->cfg.max_streams = 1;
}

void pubd_reasm_set_outside(struct pubd_reasm *r, uint64_t bytes)
{
	r->outside_bytes = bytes;
	budget_left(r);
}

uint64_t pubd_reasm_held_bytes(const struct pubd_reasm *r)
{
	return r->held_bytes;
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
	for (unsigned c = 0; c < REASM_NCLS; c++) {
		list_init(&r->gpartials[c]);
		list_init(&r->granges[c]);
	}
	list_init(&r->tombs_fifo);
	if (pubd_htab_init(&r->streams, &r->cfg.hash_key))
		goto err_free;
	if (pubd_htab_init(&r->partials, &r->cfg.hash_key))
		goto err_streams;
	if (pubd_htab_init(&r->tombs, &r->cfg.hash_key))
		goto err_partials;
	return r;

err_partials:
	pubd_htab_free(&r->partials);
err_streams:
	pubd_htab_free(&r->streams);
err_free:
	free(r);
	return NULL;
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

void reasm_reentered(const char *entry)
{
	fprintf(stderr, "pubd: bug: %s called from inside a reassembly callback (reasm.h forbids it)\n", entry);
	abort();
}

void pubd_reasm_expire(struct pubd_reasm *r, uint64_t now_ns)
{
	unsigned c;

	reasm_no_reentry(r);
	for (c = 0; c < REASM_NCLS; c++) {
		while (!list_empty(&r->gpartials[c])) {
			struct partial *p = container_of(r->gpartials[c].next, struct partial, glink);

			if (p->deadline > now_ns)
				break;
			reasm_partial_drop(r, p, PUB_DROP_REASM_TIMEOUT);
		}
		while (!list_empty(&r->granges[c])) {
			struct range *g = container_of(r->granges[c].next, struct range, glink);

			if (g->deadline > now_ns)
				break;
			reasm_range_drop(r, g);
		}
	}
	while (idle_next(r) && idle_deadline(r) <= now_ns)
		reasm_stream_forget(r, idle_next(r), true);
}

uint64_t pubd_reasm_next_deadline(const struct pubd_reasm *r)
{
	uint64_t d = idle_deadline(r);
	unsigned c;

	for (c = 0; c < REASM_NCLS; c++) {
		if (!list_empty(&r->gpartials[c])) {
			const struct partial *p = container_of(r->gpartials[c].next, const struct partial, glink);

			if (p->deadline < d)
				d = p->deadline;
		}
		if (!list_empty(&r->granges[c])) {
			const struct range *g = container_of(r->granges[c].next, const struct range, glink);

			if (g->deadline < d)
				d = g->deadline;
		}
	}
	return d;
}

/* ---- teardown and introspection ---- */

void pubd_reasm_forget_group(struct pubd_reasm *r, uint64_t group_id)
{
	struct link *l, *next;

	reasm_no_reentry(r);
	for (l = r->lru.next; l != &r->lru; l = next) {
		struct stream *s = container_of(l, struct stream, lru);

		next = l->next;
		if (s->hn.k2 == group_id)
			reasm_stream_forget(r, s, false);
	}
	for (l = r->lru_new.next; l != &r->lru_new; l = next) {
		struct stream *s = container_of(l, struct stream, lru);

		next = l->next;
		if (s->hn.k2 == group_id)
			reasm_stream_forget(r, s, false);
	}
	/* Not listening any more: where its streams had got to stops meaning
	 * anything for when (if) the group is joined again. */
	for (l = r->tombs_fifo.next; l != &r->tombs_fifo; l = next) {
		struct tomb *t = container_of(l, struct tomb, fifo);

		next = l->next;
		if (t->hn.k2 == group_id)
			reasm_tomb_free(r, t);
	}
	for (l = r->tombs_fifo_new.next; l != &r->tombs_fifo_new; l = next) {
		struct tomb *t = container_of(l, struct tomb, fifo);

		next = l->next;
		if (t->hn.k2 == group_id)
			reasm_tomb_free(r, t);
	}
}

void pubd_reasm_destroy(struct pubd_reasm *r)
{
	if (!r)
		return;
	reasm_no_reentry(r);
	while (!list_empty(&r->lru))
		reasm_stream_forget(r, container_of(r->lru.next, struct stream, lru), false);
	while (!list_empty(&r->lru_new))
		reasm_stream_forget(r, container_of(r->lru_new.next, struct stream, lru), false);
	while (!list_empty(&r->tombs_fifo))
		reasm_tomb_free(r, container_of(r->tombs_fifo.next, struct tomb, fifo));
	while (!list_empty(&r->tombs_fifo_new))
		reasm_tomb_free(r, container_of(r->tombs_fifo_new.next, struct tomb, fifo));
	pubd_htab_free(&r->partials);
	pubd_htab_free(&r->streams);
	pubd_htab_free(&r->tombs);
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
	t->range_visits = r->range_visits;
	t->table_bytes =
		(pubd_htab_buckets(&r->streams) + pubd_htab_buckets(&r->partials) + pubd_htab_buckets(&r->tombs)) *
		sizeof(struct hnode *);
}

unsigned pubd_reasm_offer_stuck(struct pubd_reasm *r, uint64_t older_than_ns, unsigned max,
				void (*fn)(void *ctx, uint64_t source_id, uint64_t group_id, uint64_t seq), void *ctx)
{
	const struct link *l;
	unsigned c, n = 0;

	/* Partials are in arrival order and each deadline is its arrival plus
	 * its class's timeout (never earlier than the one before), so the scan
	 * of each class stops at the first that is young enough. Offered once:
	 * a peer's flood of first fragments once cost a NAK-schedule look for
	 * every one of them at every tick. */
	for (c = 0; c < REASM_NCLS; c++)
		for (l = r->gpartials[c].next; l != &r->gpartials[c] && n < max; l = l->next) {
			struct partial *p = container_of(l, struct partial, glink);

			if (p->deadline > sat_add(older_than_ns, cls_timeout(r, c)))
				break;
			if (p->offered)
				continue;
			p->offered = true;
			n++;
			fn(ctx, p->s->hn.k1, p->s->hn.k2, p->seq);
		}
	return n;
}

uint64_t pubd_reasm_stream_low(const struct pubd_reasm *r, uint64_t source, uint64_t group)
{
	const struct hnode *n = htab_find(&r->streams, source, group);
	const struct stream *s;
	const struct link *l;
	uint64_t low;

	if (!n)
		return UINT64_MAX;
	s = container_of(n, struct stream, hn);
	low = s->next_seq;
	if (!list_empty(&s->ranges)) {
		const struct range *g = container_of(s->ranges.next, struct range, slink);

		if (g->first < low)
			low = g->first;
	}
	for (l = s->partials.next; l != &s->partials; l = l->next) {
		const struct partial *p = container_of(l, struct partial, slink);

		if (p->seq < low)
			low = p->seq;
	}
	return low;
}

size_t pubd_reasm_partial_missing(const struct pubd_reasm *r, uint64_t source, uint64_t group, uint64_t seq,
				  uint32_t *first, uint8_t *bitmap, size_t cap)
{
	const struct hnode *n = htab_find(&r->streams, source, group);
	const struct partial *p;
	uint32_t i, f0 = UINT32_MAX, last = 0;

	if (!n || !cap)
		return 0;
	n = htab_find(&r->partials, container_of(n, struct stream, hn)->id, seq);
	if (!n)
		return 0;
	p = container_of(n, struct partial, hn);
	for (i = 0; i < p->frag_count; i++) {
		if (p->bits[i / 64] & (1ull << (i % 64)))
			continue;
		if (f0 == UINT32_MAX) {
			f0 = i;
			memset(bitmap, 0, cap);
		}
		if ((size_t)(i - f0) / 8 >= cap)
			break;
		bitmap[(i - f0) / 8] |= (uint8_t)(1u << ((i - f0) % 8));
		last = i;
	}
	if (f0 == UINT32_MAX)
		return 0;
	*first = f0;
	return (size_t)(last - f0) / 8 + 1;
}
