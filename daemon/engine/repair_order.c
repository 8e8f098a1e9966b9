/* SPDX-License-Identifier: MIT */
/*
 * Loss repair delivers in order: on a repair group a message that
 * reassembly completes while an earlier one of its stream is still missing
 * (a gap waiting for repair, or a partial message) is held back, and
 * released, in sequence order, once reassembly has resolved everything
 * before it (delivered, or dropped as unrecovered). Held messages are
 * counted as received when reassembly completes them; they reach the
 * subscribers on release.
 *
 * Back-pressure: a release goes on only while every subscriber of the
 * group has room in its queue (subscriber_queue, subscriber_queue_bytes)
 * for the next message; the rest stays held, and the release goes on as
 * the queues drain (on_idle, after the server's flush). So a repair's
 * burst reaches a subscriber that keeps up with the stream without a drop;
 * messages that arrive meanwhile queue behind it, in order.
 *
 * Bounds: held bytes, all streams together, at most limits.reassembly_budget;
 * beyond it the stream holding most is released as it stands, whether the
 * queues have room or not: out of order if a gap is still open, and a full
 * queue applies the slow-subscriber policy to it exactly as to any
 * delivery (sub_overflow or sub_disconnect, counted). `order_overflows`
 * counts these forced releases.
 */
#include <stdlib.h>

#include "engine_internal.h"
#include "log.h"

/*
 * A stream's held messages by sequence number: a ring of slots, slot i
 * holding seq base + i (NULL where nothing is held: a gap still open, or
 * one resolved as lost), len slots from head. Putting one in and taking
 * the first out cost the same whether ten or a hundred thousand are held:
 * repairs come in the random order of the receivers' NAK back-off, and a
 * sorted list walked per repair took the receiving core at 100k 1 KiB
 * messages/s with 5% loss. The span is capped (HOLD_SPAN_MAX slots, 8 MiB
 * of slots); a message beyond it releases the stream as the budget does.
 */
#define HOLD_SPAN_MAX (1u << 20)

struct hold_stream {
	struct hold_stream *next;
	uint64_t source, group;
	struct pubd_msgbuf **slot;
	uint32_t cap, head, len; /* cap a power of two */
	uint64_t base;		 /* the seq of the first slot */
	uint64_t bytes;
};

static struct hold_stream *find(struct pubd *d, uint64_t source, uint64_t group, bool create)
{
	struct hold_stream *h;

	for (h = d->holds; h; h = h->next)
		if (h->source == source && h->group == group)
			return h;
	if (!create || !(h = calloc(1, sizeof(*h))))
		return NULL;
	h->source = source;
	h->group = group;
	h->next = d->holds;
	d->holds = h;
	return h;
}

static void stream_free(struct hold_stream *h)
{
	free(h->slot);
	free(h);
}

static struct pubd_msgbuf **slot_at(const struct hold_stream *h, uint32_t i)
{
	return &h->slot[(h->head + i) & (h->cap - 1)];
}

/* Room for span slots, the ones in use kept in order from index 0. */
static bool reserve(struct hold_stream *h, uint32_t span)
{
	struct pubd_msgbuf **v;
	uint32_t cap = h->cap ? h->cap : 64, i;

	if (span <= h->cap)
		return true;
	while (cap < span)
		cap *= 2;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return false;
	for (i = 0; i < h->len; i++)
		v[i] = *slot_at(h, i);
	free(h->slot);
	h->slot = v;
	h->cap = cap;
	h->head = 0;
	return true;
}

/* Has every subscriber of g room for len bytes? */
static bool room_for(const struct pubd_group *g, size_t len)
{
	unsigned i;

	for (i = 0; i < g->nsubs; i++)
		if (!pubd_ipc_sub_has_room(g->subs[i], len))
			return false;
	return true;
}

/* Release h's messages below low (all: UINT64_MAX) to the group's
 * subscribers; unless forced, only while their queues have room. */
static void release(struct pubd *d, struct hold_stream *h, uint64_t low, bool forced)
{
	struct pubd_group *g = pubd_groups_by_id(&d->groups, h->group);
	struct pubd_msgbuf **s, *m;

	while (h->len && h->base < low) {
		s = slot_at(h, 0);
		if ((m = *s)) {
			if (g && !forced && !room_for(g, m->len)) {
				d->holds_waiting = true;
				return;
			}
			*s = NULL;
			h->bytes -= m->len;
			d->held_bytes -= m->len;
			if (g) {
				engine_fan_out(d, g, h->source, h->base, m);
				engine_flow_delivered(d, g, h->source, h->base);
			}
			pubd_msgbuf_put(m);
		}
		h->head = (h->head + 1) & (h->cap - 1);
		h->base++;
		h->len--;
	}
}

/* Put msg in h's slot for seq: 1, or 0 when one is held there already
 * (reassembly completes a message once), -1 without memory or beyond the
 * span. */
static int put(struct hold_stream *h, uint64_t seq, struct pubd_msgbuf *msg)
{
	uint64_t span;
	uint32_t shift;

	if (!h->len) {
		if (!reserve(h, 1))
			return -1;
		h->base = seq;
		h->len = 1;
	} else if (seq >= h->base + h->len) {
		span = seq - h->base + 1;
		if (span > HOLD_SPAN_MAX || !reserve(h, (uint32_t)span))
			return -1;
		h->len = (uint32_t)span; /* the new slots are NULL already */
	} else if (seq < h->base) {
		span = h->base - seq + h->len;
		if (span > HOLD_SPAN_MAX || !reserve(h, (uint32_t)span))
			return -1;
		shift = (uint32_t)(h->base - seq);
		h->head = (h->head - shift) & (h->cap - 1);
		h->base = seq;
		h->len += shift;
	}
	if (*slot_at(h, (uint32_t)(seq - h->base)))
		return 0;
	*slot_at(h, (uint32_t)(seq - h->base)) = pubd_msgbuf_get(msg);
	h->bytes += msg->len;
	return 1;
}

static void overflow(struct pubd *d)
{
	struct hold_stream *h, *big = NULL;

	for (h = d->holds; h; h = h->next)
		if (!big || h->bytes > big->bytes)
			big = h;
	if (!big)
		return;
	d->order_overflows++;
	log_debug("repair: held messages over limits.reassembly_budget; releasing a stream out of order");
	release(d, big, UINT64_MAX, true);
}

bool engine_order_hold(struct pubd *d, uint64_t source, uint64_t group, uint64_t seq, struct pubd_msgbuf *msg)
{
	struct hold_stream *h = find(d, source, group, false);
	int r;

	if (!h && pubd_reasm_stream_low(d->reasm, source, group) >= seq)
		return false; /* nothing before it outstanding: deliver now */
	if (!h && !(h = find(d, source, group, true)))
		return false;
	r = put(h, seq, msg);
	if (r < 0) {
		/* Out of memory, or held further apart than the span: release
		 * what is held as the budget would, then this one after it. */
		d->order_overflows++;
		release(d, h, UINT64_MAX, true);
		r = put(h, seq, msg);
		if (r < 0)
			return false;
	}
	if (r > 0)
		d->held_bytes += msg->len;
	while (d->held_bytes > d->cfg.reassembly_budget && d->holds)
		overflow(d);
	return true;
}

void engine_order_release(struct pubd *d)
{
	struct hold_stream **pp = &d->holds, *h;

	d->holds_waiting = false;
	while ((h = *pp)) {
		release(d, h, pubd_reasm_stream_low(d->reasm, h->source, h->group), false);
		if (h->len) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		stream_free(h);
	}
}

void engine_order_forget(struct pubd *d, uint64_t group)
{
	struct hold_stream **pp = &d->holds, *h;
	struct pubd_msgbuf *m;
	uint32_t i;

	while ((h = *pp)) {
		if (group && h->group != group) {
			pp = &h->next;
			continue;
		}
		for (i = 0; i < h->len; i++) {
			if ((m = *slot_at(h, i))) {
				d->held_bytes -= m->len;
				pubd_msgbuf_put(m);
			}
		}
		*pp = h->next;
		stream_free(h);
	}
}
