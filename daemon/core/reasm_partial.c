/* SPDX-License-Identifier: MIT */
/*
 * Fragment assembly of one message: a partial's buffer and bitmap, the room
 * made for it (the stream's in-flight limit, the global budget), each
 * fragment written once, and the delivery when the bitmap is full.
 */
#include <stdlib.h>
#include <string.h>

#include "reasm_internal.h"

/* ---- partials ---- */

void reasm_partial_free(struct pubd_reasm *r, struct partial *p)
{
	struct stream *s = p->s;

	pubd_htab_remove(&r->partials, &p->hn);
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

void reasm_partial_drop(struct pubd_reasm *r, struct partial *p, enum pub_drop_reason why)
{
	struct stream *s = p->s;

	reasm_partial_free(r, p);
	drop(r, s, why, 1);
}

/*
 * Room for a new partial of msg_len bytes: first the stream's in-flight
 * limit, then the global budget. A message that could never fit is refused
 * before anything is evicted for it. Returns NULL when the message was
 * dropped (and counted).
 */
struct partial *reasm_partial_new(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t seq,
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
		reasm_partial_drop(r, container_of(s->partials.next, struct partial, slink), PUB_DROP_REASM_INFLIGHT);
	/* Older partials go first; only when none is left do missing ranges
	 * (which then count as a gap now) make room. */
	while (r->held_bytes + charge > r->cfg.budget_bytes) {
		struct partial *old = reasm_oldest_partial(r);

		if (old)
			reasm_partial_drop(r, old, PUB_DROP_REASM_BUDGET);
		else
			reasm_range_drop(r, reasm_oldest_range(r));
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
	p->offered = false;
	deadline = sat_add(now, cls_timeout(r, s->cls));
	if (!list_empty(&r->gpartials[s->cls])) {
		struct partial *last = container_of(r->gpartials[s->cls].prev, struct partial, glink);

		if (deadline < last->deadline)
			deadline = last->deadline;
	}
	p->deadline = deadline;
	p->hn.k1 = s->id;
	p->hn.k2 = seq;
	pubd_htab_insert(&r->partials, &p->hn);
	list_add_tail(&s->partials, &p->slink);
	list_add_tail(&r->gpartials[s->cls], &p->glink);
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

void reasm_partial_add(struct pubd_reasm *r, struct partial *p, const struct pubd_wire_hdr *h, uint32_t unit,
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
	reasm_partial_free(r, p);
	stream_proven(r, s);
	call_deliver(r, s, seq, buf->data, buf->len, buf);
}

/* Compared by arrival: a head's deadline less its class's timeout. */
struct partial *reasm_oldest_partial(const struct pubd_reasm *r)
{
	struct partial *best = NULL, *p;
	uint64_t best_at = UINT64_MAX, at;
	unsigned c;

	for (c = 0; c < REASM_NCLS; c++) {
		if (list_empty(&r->gpartials[c]))
			continue;
		p = container_of(r->gpartials[c].next, struct partial, glink);
		at = p->deadline > cls_timeout(r, c) ? p->deadline - cls_timeout(r, c) : 0;
		if (!best || at < best_at) {
			best = p;
			best_at = at;
		}
	}
	return best;
}
