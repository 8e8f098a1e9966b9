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
 * Bounds: held bytes, all streams together, at most limits.reassembly_budget;
 * beyond it the stream holding most is released as it stands (out of order,
 * nothing lost), and `order_overflows` counts it.
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

/* Release h's messages below low (all: UINT64_MAX) to the group's subscribers. */
static void release(struct pubd *d, struct hold_stream *h, uint64_t low)
{
	struct pubd_group *g = pubd_groups_by_id(&d->groups, h->group);
	struct held *m;

	while ((m = h->head) && m->seq < low) {
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
	release(d, big, UINT64_MAX);
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

	while ((h = *pp)) {
		release(d, h, pubd_reasm_stream_low(d->reasm, h->source, h->group));
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
