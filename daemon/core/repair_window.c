/* SPDX-License-Identifier: MIT */
/*
 * The source's retransmit window (repair_window.h): a ring of kept
 * messages, trimmed by age, by its own byte limit and by the shared budget.
 */
#include <stdlib.h>
#include <string.h>

#include "repair_window.h"

#define RING_MIN 64u
/* A ring never holds more entries than this (holes included). */
#define RING_MAX (1u << 24)

static uint64_t charge_of(const struct pubd_repair_entry *e)
{
	return e->msg ? (uint64_t)e->msg->len + PUBD_REPAIR_ENTRY_OVERHEAD : 0;
}

static struct pubd_repair_entry *at(struct pubd_repair_window *w, uint32_t i)
{
	return &w->ring[(w->head + i) & (w->cap - 1)];
}

void pubd_repair_window_init(struct pubd_repair_window *w, const struct pubd_repair_window_cfg *cfg,
			     struct pubd_repair_budget *budget)
{
	memset(w, 0, sizeof(*w));
	w->cfg = *cfg;
	w->budget = budget;
}

void pubd_repair_window_set(struct pubd_repair_window *w, const struct pubd_repair_window_cfg *cfg)
{
	w->cfg = *cfg;
}

/* Drop the oldest entry (kept message or hole). */
static void pop_oldest(struct pubd_repair_window *w)
{
	struct pubd_repair_entry *e = at(w, 0);
	uint64_t c = charge_of(e);

	w->bytes -= c;
	w->budget->used -= c;
	pubd_msgbuf_put(e->msg);
	memset(e, 0, sizeof(*e));
	w->head = (w->head + 1) & (w->cap - 1);
	w->n--;
	w->first_seq++;
}

void pubd_repair_window_close(struct pubd_repair_window *w)
{
	while (w->n)
		pop_oldest(w);
	free(w->ring);
	w->ring = NULL;
	w->cap = 0;
}

/* Room for one more entry: 0, or -1 (the ring is at its largest, or no memory). */
static int ring_reserve(struct pubd_repair_window *w)
{
	struct pubd_repair_entry *r;
	uint32_t cap, i;

	if (w->n < w->cap)
		return 0;
	cap = w->cap ? w->cap * 2 : RING_MIN;
	if (cap > RING_MAX)
		return -1;
	r = calloc(cap, sizeof(*r));
	if (!r)
		return -1;
	for (i = 0; i < w->n; i++)
		r[i] = *at(w, i);
	free(w->ring);
	w->ring = r;
	w->cap = cap;
	w->head = 0;
	return 0;
}

/* Append an entry for seq (a hole when m is NULL). */
static bool append(struct pubd_repair_window *w, uint64_t now, struct pubd_msgbuf *m, uint32_t unit)
{
	struct pubd_repair_entry *e;

	while (ring_reserve(w)) {
		if (!w->n)
			return false;
		pop_oldest(w);
	}
	e = at(w, w->n++);
	memset(e, 0, sizeof(*e));
	e->sent_ns = now;
	e->unit = unit;
	if (m) {
		e->msg = pubd_msgbuf_get(m);
		w->bytes += charge_of(e);
		w->budget->used += charge_of(e);
	}
	return true;
}

bool pubd_repair_window_keep(struct pubd_repair_window *w, uint64_t now, uint64_t seq, struct pubd_msgbuf *m,
			     uint32_t unit)
{
	uint64_t c = (uint64_t)m->len + PUBD_REPAIR_ENTRY_OVERHEAD;

	if (!w->started) {
		w->started = true;
		w->first_seq = seq;
	}
	if (seq < w->first_seq + w->n)
		return false; /* backwards: never happens with one sender */
	/* Skipped numbers are holes; so many that the ring cannot hold them start it afresh. */
	if (seq - (w->first_seq + w->n) >= RING_MAX) {
		while (w->n)
			pop_oldest(w);
		w->first_seq = seq;
	}
	while (w->first_seq + w->n < seq)
		if (!append(w, now, NULL, 0))
			w->first_seq = seq - w->n; /* only when empty: restart there */
	/* The byte limits are hard: the oldest go, young or not. */
	while (w->n && (w->bytes + c > w->cfg.window_bytes || w->budget->used + c > w->budget->limit)) {
		w->evicted_bytes += at(w, 0)->msg != NULL;
		pop_oldest(w);
	}
	if (!w->n)
		w->first_seq = seq;
	if (c > w->cfg.window_bytes || w->budget->used + c > w->budget->limit) {
		w->not_kept++;
		append(w, now, NULL, 0);
		return false;
	}
	if (!append(w, now, m, unit)) {
		w->not_kept++;
		return false;
	}
	w->kept++;
	return true;
}

void pubd_repair_window_expire(struct pubd_repair_window *w, uint64_t now)
{
	while (w->n && now - at(w, 0)->sent_ns > w->cfg.max_age_ns) {
		w->evicted_age += at(w, 0)->msg != NULL;
		pop_oldest(w);
	}
}

uint64_t pubd_repair_window_next_deadline(const struct pubd_repair_window *w)
{
	const struct pubd_repair_entry *e;

	if (!w->n)
		return UINT64_MAX;
	e = &w->ring[w->head];
	return e->sent_ns + w->cfg.max_age_ns + 1;
}

struct pubd_repair_entry *pubd_repair_window_find(struct pubd_repair_window *w, uint64_t seq)
{
	struct pubd_repair_entry *e;

	if (!w->n || seq < w->first_seq || seq - w->first_seq >= w->n)
		return NULL;
	e = at(w, (uint32_t)(seq - w->first_seq));
	return e->msg ? e : NULL;
}

uint64_t pubd_repair_window_next_seq(const struct pubd_repair_window *w)
{
	return w->started ? w->first_seq + w->n : 0;
}

enum pubd_repair_verdict pubd_repair_window_nak(struct pubd_repair_window *w, uint64_t now, uint64_t seq,
						uint64_t asker)
{
	struct pubd_repair_entry *e;
	bool mcast;

	if (!w->started || seq >= pubd_repair_window_next_seq(w))
		return PUBD_REPAIR_AHEAD;
	e = pubd_repair_window_find(w, seq);
	if (!e)
		return PUBD_REPAIR_GONE;
	if (e->repaired_ns && now - e->repaired_ns < w->cfg.linger_ns && (e->repaired_mcast || e->last_asker == asker))
		return PUBD_REPAIR_DUPLICATE;
	mcast = e->last_nak_ns && now - e->last_nak_ns < w->cfg.mcast_ns && e->last_asker != asker;
	e->last_nak_ns = now;
	e->last_asker = asker;
	e->repaired_ns = now ? now : 1;
	e->repaired_mcast = mcast;
	return mcast ? PUBD_REPAIR_MULTICAST : PUBD_REPAIR_UNICAST;
}
