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
 * Bounds (THREATS.md rule 1): what holding takes from the heap, all
 * streams together, and what reassembly holds (partial messages, missing
 * ranges), at most limits.reassembly_budget: reassembly gets what the hold
 * leaves (pubd_reasm_set_outside), and a held message that takes the two
 * over releases as below. Each held message's
 * buffer as allocated (pubd_msgbuf_footprint), and each stream's struct
 * and entry array as malloc holds them. Storage follows the messages
 * held, not the span of sequence numbers between them, so a peer that
 * sends seq 0, 65536, 131072, ... costs one entry per message. Beyond the
 * budget a stream charged most (to a factor of two) is released as it
 * stands, whether the queues have room or not: out of order if a gap is
 * still open, and a full queue applies the slow-subscriber policy to it
 * exactly as to any delivery (sub_overflow or sub_disconnect, counted).
 * At most limits.max_sources streams hold at once (a stream is a (source,
 * group), as that limit's entries are); a message of a further stream is
 * not held but delivered at once, as a forced release would.
 * `order_overflows` counts these forced releases and refusals. No message
 * is lost here uncounted: each one held is delivered, and a subscriber
 * that leaves first (its group going too) counts those of its group as
 * its sub_disconnect drops (g->order_held, server/requests.c), as it
 * does its queue.
 *
 * Work: a stream is found by a keyed hash of (source, group), and a
 * release looks only at the streams reassembly touched since the last
 * one (a message of theirs completed or dropped: engine_order_touch) and
 * those a full queue stopped. A forger's thousands of streams held open
 * behind gaps cost the honest streams nothing per message; when each
 * receive batch walked every holding stream, 4,000 of them took an
 * honest stream's CPU from 0.11 s to 1.1-3.0 s. A forced release finds
 * its stream in a list per power of two of what streams are charged,
 * not by a walk of them all.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "log.h"
#include "random_key.h"

/*
 * A stream's held messages: entries sorted by seq, e[lo] to e[hi - 1], in
 * an array of cap with slack kept on both sides. Taking the first out is
 * O(1); a live message goes on the end, O(1); a repair into the middle
 * moves the shorter side, O(min(i, n - i)) 16-byte entries, a memmove
 * (test_daemon_repair_order's 20,000 held with 1,177 repairs in random
 * order run as fast as on the ring of slots this replaced, about 40 ms in
 * all; repairs mostly come for the oldest gaps, near the front). A sorted
 * list walked per repair took the receiving core at 100k 1 KiB
 * messages/s with 5% loss; a ring of slots per seq, the design before
 * this one, cost 8 bytes per seq of the span, and a peer's sparse seqs
 * made that 8 MiB a stream.
 */
struct hold_entry {
	uint64_t seq;
	struct pubd_msgbuf *msg;
};

struct hold_stream {
	struct hnode hn;		     /* (source, group) in d->holds.ix */
	struct hold_stream *next, **pprev;   /* d->holds.all */
	struct hold_stream *dnext, **dpprev; /* d->holds.dirty; dpprev NULL: not on it */
	struct hold_stream *snext, **spprev; /* d->holds.by_size[size] */
	unsigned size;			     /* log2 of bytes */
	struct hold_entry *e;
	uint32_t cap, lo, hi;
	uint64_t bytes; /* charged to d->held_bytes: struct, array, messages */
};

#define HOLD_CAP_MIN 16u

/* What malloc really holds for a request of n bytes (glibc, 64-bit: an
 * 8-byte size header, 16-byte alignment, 32 bytes at least). */
static uint64_t chunk_bytes(size_t n)
{
	size_t c = (n + sizeof(size_t) + 15) & ~(size_t)15;

	return c < 32 ? 32 : c;
}

static uint64_t array_bytes(uint32_t cap)
{
	return cap ? chunk_bytes((size_t)cap * sizeof(struct hold_entry)) : 0;
}

static unsigned size_of(uint64_t bytes)
{
	return bytes ? 63u - (unsigned)__builtin_clzll(bytes) : 0;
}

static void size_link(struct pubd *d, struct hold_stream *h)
{
	struct hold_stream **head = &d->holds.by_size[h->size];

	h->snext = *head;
	if (h->snext)
		h->snext->spprev = &h->snext;
	*head = h;
	h->spprev = head;
	d->holds.size_mask |= 1ull << h->size;
}

static void size_unlink(struct pubd *d, struct hold_stream *h)
{
	*h->spprev = h->snext;
	if (h->snext)
		h->snext->spprev = h->spprev;
	if (!d->holds.by_size[h->size])
		d->holds.size_mask &= ~(1ull << h->size);
}

static void charge(struct pubd *d, struct hold_stream *h, uint64_t add, uint64_t sub)
{
	h->bytes = h->bytes + add - sub;
	d->held_bytes = d->held_bytes + add - sub;
	pubd_reasm_set_outside(d->reasm, d->held_bytes);
	if (size_of(h->bytes) != h->size) {
		size_unlink(d, h);
		h->size = size_of(h->bytes);
		size_link(d, h);
	}
}

int engine_order_init(struct pubd *d)
{
	struct pubd_hash_key key;

	pubd_random_key(&key); /* streams are hashed on ids a peer picks */
	return pubd_htab_init(&d->holds.ix, &key) ? -ENOMEM : 0;
}

/* The stream of (source, group), or NULL. */
static struct hold_stream *find(struct pubd *d, uint64_t source, uint64_t group)
{
	struct hnode *n;

	if (!d->holds.ix.n)
		return NULL;
	n = htab_find(&d->holds.ix, source, group);
	return n ? container_of(n, struct hold_stream, hn) : NULL;
}

/* Put h on the list the next release looks at (once). */
static void mark(struct pubd *d, struct hold_stream *h)
{
	if (h->dpprev)
		return;
	h->dnext = d->holds.dirty;
	if (h->dnext)
		h->dnext->dpprev = &h->dnext;
	d->holds.dirty = h;
	h->dpprev = &d->holds.dirty;
}

static void unmark(struct hold_stream *h)
{
	if (!h->dpprev)
		return;
	*h->dpprev = h->dnext;
	if (h->dnext)
		h->dnext->dpprev = h->dpprev;
	h->dpprev = NULL;
}

static struct hold_stream *stream_new(struct pubd *d, uint64_t source, uint64_t group)
{
	struct hold_stream *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->hn.k1 = source;
	h->hn.k2 = group;
	pubd_htab_insert(&d->holds.ix, &h->hn);
	h->next = d->holds.all;
	if (h->next)
		h->next->pprev = &h->next;
	d->holds.all = h;
	h->pprev = &d->holds.all;
	size_link(d, h); /* size 0 */
	charge(d, h, chunk_bytes(sizeof(*h)), 0);
	return h;
}

/* Forget h (empty of messages) and give back what it charged. */
static void stream_free(struct pubd *d, struct hold_stream *h)
{
	*h->pprev = h->next;
	if (h->next)
		h->next->pprev = h->pprev;
	unmark(h);
	size_unlink(d, h);
	pubd_htab_remove(&d->holds.ix, &h->hn);
	d->held_bytes -= h->bytes;
	pubd_reasm_set_outside(d->reasm, d->held_bytes);
	free(h->e);
	free(h);
}

/* Move the entries into an array of cap (NULL: h's own), centred so both
 * ends have room. false without memory (h unchanged). */
static bool recentre(struct pubd *d, struct hold_stream *h, uint32_t cap)
{
	uint32_t n = h->hi - h->lo, lo = (cap - n) / 2;
	struct hold_entry *v = h->e;

	if (cap != h->cap) {
		v = malloc((size_t)cap * sizeof(*v));
		if (!v)
			return false;
		if (n)
			memcpy(v + lo, h->e + h->lo, (size_t)n * sizeof(*v));
		free(h->e);
		charge(d, h, array_bytes(cap), array_bytes(h->cap));
		h->cap = cap;
	} else {
		memmove(v + lo, v + h->lo, (size_t)n * sizeof(*v));
	}
	h->e = v;
	h->lo = lo;
	h->hi = lo + n;
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
 * subscribers; unless forced, only while their queues have room. true:
 * it stopped at a full queue. */
static bool release(struct pubd *d, struct hold_stream *h, uint64_t low, bool forced)
{
	uint64_t source = h->hn.k1, seq;
	struct pubd_group *g = pubd_groups_by_id(&d->groups, h->hn.k2);
	struct pubd_msgbuf *m;
	bool stopped = false;

	while (h->lo < h->hi && h->e[h->lo].seq < low) {
		seq = h->e[h->lo].seq;
		m = h->e[h->lo].msg;
		if (g && !forced && !room_for(g, m->len)) {
			stopped = true;
			break;
		}
		h->lo++;
		d->holds.msgs--;
		if (g)
			g->order_held--;
		charge(d, h, 0, pubd_msgbuf_footprint(m));
		if (g) {
			engine_fan_out(d, g, source, seq, m);
			engine_flow_delivered(d, g, source, seq);
		}
		pubd_msgbuf_put(m);
	}
	/* A stream that held a burst gives the memory back as it drains
	 * (an empty one goes whole: its caller frees it). */
	if (h->hi > h->lo && h->cap > HOLD_CAP_MIN && h->hi - h->lo < h->cap / 8)
		recentre(d, h, h->cap / 2);
	return stopped;
}

/* Put msg in h for seq: 1, or 0 when one is held for seq already
 * (reassembly completes a message once), -1 without memory. */
static int put(struct pubd *d, struct hold_stream *h, uint64_t seq, struct pubd_msgbuf *msg)
{
	uint32_t a = h->lo, b = h->hi, mid, n = h->hi - h->lo, p;

	while (a < b) {
		mid = a + (b - a) / 2;
		if (h->e[mid].seq < seq)
			a = mid + 1;
		else
			b = mid;
	}
	if (a < h->hi && h->e[a].seq == seq)
		return 0;
	p = a - h->lo; /* entries before the new one */
	/* Keep a quarter free, so a recentring (O(n)) comes at most once
	 * every cap / 8 insertions at one end. */
	if (n + 1 > h->cap - h->cap / 4 && !recentre(d, h, h->cap ? h->cap * 2 : HOLD_CAP_MIN))
		return -1;
	if (n - p <= p) { /* fewer after it: those move up */
		if (h->hi == h->cap)
			recentre(d, h, h->cap);
		a = h->lo + p;
		memmove(&h->e[a + 1], &h->e[a], (size_t)(n - p) * sizeof(h->e[0]));
		h->hi++;
	} else { /* fewer before it: those move down */
		if (h->lo == 0)
			recentre(d, h, h->cap);
		h->lo--;
		a = h->lo + p;
		memmove(&h->e[h->lo], &h->e[h->lo + 1], (size_t)p * sizeof(h->e[0]));
	}
	h->e[a] = (struct hold_entry){.seq = seq, .msg = pubd_msgbuf_get(msg)};
	d->holds.msgs++;
	charge(d, h, pubd_msgbuf_footprint(msg), 0);
	return 1;
}

/* Over the budget: one of the streams charged most (within a factor of
 * two) goes out as it stands. Found without a walk: a forger's thousands
 * of small streams do not make each forced release cost them all. */
static void overflow(struct pubd *d)
{
	struct hold_stream *big;

	if (!d->holds.size_mask)
		return;
	big = d->holds.by_size[63 - __builtin_clzll(d->holds.size_mask)];
	d->counters[PUBD_CTR_ORDER_OVERFLOWS]++;
	log_debug("repair: held messages over limits.reassembly_budget; releasing a stream out of order");
	release(d, big, UINT64_MAX, true);
	stream_free(d, big);
}

bool engine_order_hold(struct pubd *d, struct pubd_group *g, uint64_t source, uint64_t seq, struct pubd_msgbuf *msg)
{
	uint64_t group = g->id;
	struct hold_stream *h = find(d, source, group);
	int r;

	if (!h && pubd_reasm_stream_low(d->reasm, source, group) >= seq)
		return false; /* nothing before it outstanding: deliver now */
	if (!h) {
		if (d->holds.ix.n >= d->cfg.max_sources) {
			/* As many streams hold as there may be sources: this
			 * one is delivered now, out of order. */
			d->counters[PUBD_CTR_ORDER_OVERFLOWS]++;
			log_debug("repair: limits.max_sources streams hold messages; delivering one out of order");
			return false;
		}
		if (!(h = stream_new(d, source, group))) {
			d->counters[PUBD_CTR_ORDER_OVERFLOWS]++;
			return false;
		}
	}
	/* Completing this message may have moved the stream's low: the
	 * release at the end of the receive batch looks. */
	mark(d, h);
	r = put(d, h, seq, msg);
	if (r > 0)
		g->order_held++;
	if (r < 0) {
		/* Out of memory: release what is held as the budget would,
		 * then deliver this one after it. */
		d->counters[PUBD_CTR_ORDER_OVERFLOWS]++;
		release(d, h, UINT64_MAX, true);
		stream_free(d, h);
		return false;
	}
	/* One budget for what reassembly and the hold take together. */
	while (d->held_bytes + pubd_reasm_held_bytes(d->reasm) > d->cfg.reassembly_budget && d->holds.all)
		overflow(d);
	return true;
}

void engine_order_touch(struct pubd *d, uint64_t source, uint64_t group)
{
	struct hold_stream *h = find(d, source, group);

	if (h)
		mark(d, h);
}

void engine_order_release(struct pubd *d)
{
	struct hold_stream *todo = d->holds.dirty, *h;

	/* Those a full queue stops go back on d->holds.dirty, for the
	 * next release; this one walks what was there when it began. */
	d->holds.dirty = NULL;
	if (todo)
		todo->dpprev = &todo;
	d->holds_waiting = false;
	while ((h = todo)) {
		unmark(h);
		d->holds.visits++;
		if (release(d, h, pubd_reasm_stream_low(d->reasm, h->hn.k1, h->hn.k2), false)) {
			d->holds_waiting = true;
			mark(d, h);
		} else if (h->lo == h->hi) {
			stream_free(d, h);
		}
	}
}

void engine_order_flush_group(struct pubd *d, uint64_t group)
{
	struct hold_stream *h, *next;

	for (h = d->holds.all; h; h = next) {
		next = h->next;
		if (h->hn.k2 != group)
			continue;
		release(d, h, UINT64_MAX, true);
		stream_free(d, h);
	}
}

void engine_order_forget(struct pubd *d, uint64_t group)
{
	struct hold_stream *h, *next;
	struct pubd_group *g;
	uint32_t i;

	for (h = d->holds.all; h; h = next) {
		next = h->next;
		if (group && h->hn.k2 != group)
			continue;
		for (i = h->lo; i < h->hi; i++)
			pubd_msgbuf_put(h->e[i].msg);
		d->holds.msgs -= h->hi - h->lo;
		if ((g = pubd_groups_by_id(&d->groups, h->hn.k2)))
			g->order_held -= h->hi - h->lo;
		stream_free(d, h);
	}
}

void engine_order_close(struct pubd *d)
{
	engine_order_forget(d, 0);
	pubd_htab_free(&d->holds.ix);
}
