/* SPDX-License-Identifier: MIT */
/*
 * Forgetting a stream (idle, max_streams, its group left, teardown), and
 * the tombstones that remember where a forgotten stream had got to.
 */
#include <stdlib.h>

#include "reasm_internal.h"

/* ---- tombstones of forgotten streams ---- */

void reasm_tomb_free(struct pubd_reasm *r, struct tomb *t)
{
	pubd_htab_remove(&r->tombs, &t->hn);
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

		reasm_tomb_free(r, container_of(l, struct tomb, fifo));
	}
	t = malloc(sizeof(*t));
	if (!t)
		return;
	t->hn.k1 = s->hn.k1;
	t->hn.k2 = s->hn.k2;
	t->next_seq = s->next_seq;
	t->last_active = s->last_active;
	t->proven = s->proven;
	pubd_htab_insert(&r->tombs, &t->hn);
	list_add_tail(s->proven ? &r->tombs_fifo : &r->tombs_fifo_new, &t->fifo);
	r->stream_bytes += TOMB_BYTES;
}

/* Where a forgotten (source, group) had got to, forgetting that: false when
 * it is not remembered. */
bool reasm_tomb_take(struct pubd_reasm *r, uint64_t source, uint64_t group, struct stream *s)
{
	struct hnode *n;
	struct tomb *t;

	if (!r->tombs.n || !(n = htab_find(&r->tombs, source, group)))
		return false;
	t = container_of(n, struct tomb, hn);
	s->baseline = t->next_seq;
	s->last_active = t->last_active;
	s->budget_ns = t->last_active; /* the silence's window, as for any stream */
	s->proven = t->proven;
	s->based = true;
	reasm_tomb_free(r, t);
	return true;
}

/* ---- streams ---- */

/* Forget s. report: drop what it still waits for as timeouts and gaps, and
 * remember where it had got to (we are still listening: idle, max_streams).
 * Without report (the group was left, teardown) nothing is remembered. */
void reasm_stream_forget(struct pubd_reasm *r, struct stream *s, bool report)
{
	uint64_t partials = s->inflight, missing = s->missing;

	if (report)
		tomb_put(r, s);

	while (!list_empty(&s->partials))
		reasm_partial_free(r, container_of(s->partials.next, struct partial, slink));
	while (!list_empty(&s->ranges))
		reasm_range_free(r, s, container_of(s->ranges.next, struct range, slink));
	if (report) {
		drop(r, s, PUB_DROP_REASM_TIMEOUT, partials);
		drop(r, s, PUB_DROP_SEQ_GAP, missing);
	}
	pubd_htab_remove(&r->streams, &s->hn);
	list_del(&s->lru);
	if (r->hot == s)
		r->hot = NULL;
	r->nstreams--;
	r->stream_bytes -= STREAM_BYTES;
	free(s);
}
