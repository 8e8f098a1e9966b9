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

struct held {
	struct held *next;
	uint64_t seq;
	struct pubd_msgbuf *msg;
};

struct hold_stream {
	struct hold_stream *next;
	uint64_t source, group;
	struct held *head; /* ascending seq */
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
	struct held *m;

	while ((m = h->head) && m->seq < low) {
		if (g && !forced && !room_for(g, m->msg->len)) {
			d->holds_waiting = true;
			return;
		}
		h->head = m->next;
		h->bytes -= m->msg->len;
		d->held_bytes -= m->msg->len;
		if (g)
			engine_fan_out(d, g, h->source, m->seq, m->msg);
		pubd_msgbuf_put(m->msg);
		free(m);
	}
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
	struct held *m, **p;

	if (!h && pubd_reasm_stream_low(d->reasm, source, group) >= seq)
		return false; /* nothing before it outstanding: deliver now */
	if (!h && !(h = find(d, source, group, true)))
		return false;
	m = malloc(sizeof(*m));
	if (!m)
		return false;
	m->seq = seq;
	m->msg = pubd_msgbuf_get(msg);
	for (p = &h->head; *p && (*p)->seq < seq; p = &(*p)->next)
		;
	m->next = *p;
	*p = m;
	h->bytes += msg->len;
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
		if (h->head) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		free(h);
	}
}

void engine_order_forget(struct pubd *d, uint64_t group)
{
	struct hold_stream **pp = &d->holds, *h;
	struct held *m;

	while ((h = *pp)) {
		if (group && h->group != group) {
			pp = &h->next;
			continue;
		}
		while ((m = h->head)) {
			h->head = m->next;
			d->held_bytes -= m->msg->len;
			pubd_msgbuf_put(m->msg);
			free(m);
		}
		*pp = h->next;
		free(h);
	}
}
