/* SPDX-License-Identifier: MIT */
/*
 * The receive path: pubd_reasm_push and the stream lookup it starts with,
 * the sequence window, and where each datagram goes (a new message, a
 * fragment of a partial, a late one filling a gap, stale). Kept in one file
 * so that its small steps can be inlined into each other.
 */
#include <stdlib.h>

#include "reasm_internal.h"

/*
 * How far ahead of next_seq a stream last heard at last_active may jump at
 * now and still be taken as that many lost messages. A peer can put any
 * msg_seq in a datagram; a real publisher cannot send faster than
 * SEQ_MAX_RATE_PER_US messages a microsecond (well above what one pubd
 * does), so a bigger jump is a forged or corrupt datagram, counted as
 * malformed, and not 2^63 "lost" messages that push a real stream's
 * messages out as stale. A stream that really was silent for long gets a
 * window that grows with the silence.
 *
 * The window is a budget, not a fresh grant per datagram: each jump spends
 * what it skips, and the budget comes back at SEQ_MAX_RATE_PER_US, never
 * above the window. Granted anew with each accepted datagram, a chain of
 * forged datagrams each 65,536 ahead made millions of "lost" messages in a
 * millisecond (and pushed a real stream's next messages out as stale).
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

		reasm_stream_forget(r, container_of(l, struct stream, lru), true);
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->hn.k1 = source;
	s->hn.k2 = group;
	s->id = r->next_id++;
	s->last_active = now;
	s->jump_budget = SEQ_JUMP_BASE;
	s->budget_ns = now;
	s->drops_seen = r->kernel_drops;
	s->cls = r->ops.repairs && r->ops.repairs(r->ctx, group) ? REASM_CLS_REPAIR : REASM_CLS_PLAIN;
	/* A stream forgotten while we listened resumes where it was. From
	 * zero: the caller knows this stream began after we started
	 * listening, so everything before seq was sent to us and lost; no
	 * more than the window of a new stream, though (see seq_window). */
	if (!reasm_tomb_take(r, source, group, s))
		s->baseline = from_zero && seq <= SEQ_JUMP_BASE ? 0 : seq;
	s->next_seq = s->baseline;
	s->based = s->based || !s->baseline;
	list_init(&s->partials);
	list_init(&s->ranges);
	pubd_htab_insert(&r->streams, &s->hn);
	list_add_tail(lru_of(r, s), &s->lru);
	r->nstreams++;
	r->stream_bytes += STREAM_BYTES;
out:
	r->hot = s;
	return s;
}

/* What s may skip at now: its budget, grown since it was last spent, no
 * more than the window of its silence. */
static inline uint64_t jump_budget(const struct stream *s, uint64_t now)
{
	uint64_t window = seq_window(s->last_active, now), grown = seq_window(s->budget_ns, now) - SEQ_JUMP_BASE;
	uint64_t budget = s->jump_budget > UINT64_MAX - grown ? UINT64_MAX : s->jump_budget + grown;

	return budget < window ? budget : window;
}

/*
 * Could the datagrams the kernel dropped since s was last heard have
 * carried `over` messages of s? Each carries at most a batch of them
 * (PUBD_WIRE_BATCH_MAX). A host that floods the socket to make drops, and
 * then forges a jump, gains 1,024 sequence numbers a drop, once: less than
 * the window's 50 a microsecond gives it anyway, unless it makes more than
 * 50,000 drops a second, which is a flood that loses messages by itself.
 */
static inline bool kernel_dropped(const struct pubd_reasm *r, const struct stream *s, uint64_t over)
{
	uint64_t dropped = r->kernel_drops - s->drops_seen;

	return dropped && (dropped > UINT64_MAX / PUBD_WIRE_BATCH_MAX || over <= dropped * PUBD_WIRE_BATCH_MAX);
}

/* Is seq (at or beyond next_seq) within the budget? If so s is active now
 * and the jump spent; if not, and the kernel's drops since s was last heard
 * do not account for it either, the datagram is counted as malformed. */
static bool stream_accept_jump(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t seq,
			       const struct pubd_wire_hdr *h)
{
	if (seq > s->next_seq) {
		uint64_t jump = seq - s->next_seq, budget = jump_budget(s, now);

		if (jump <= budget) {
			s->jump_budget = budget - jump;
		} else if (kernel_dropped(r, s, jump - budget)) {
			s->jump_budget = 0;
		} else {
			drop_dgram(r, h, PUB_DROP_MALFORMED);
			return false;
		}
		s->budget_ns = now;
	}
	s->last_active = now;
	s->drops_seen = r->kernel_drops;
	return true;
}

/* seq is at or beyond next_seq: what lies between went missing. */
static void stream_advance(struct pubd_reasm *r, struct stream *s, uint64_t now, uint64_t seq)
{
	if (seq > s->next_seq)
		reasm_range_open(r, s, now, s->next_seq, seq - s->next_seq);
	s->next_seq = seq;
}

/*
 * Its source says the stream began after we started listening, yet its
 * baseline is above 0: its first messages were lost before we first heard
 * it, and they were meant for us. They are waited for (and on a repair
 * group asked for) while nothing after them has been delivered, which
 * keeps the stream's order; otherwise they are gaps at once. Once only, and
 * no further back than a new stream's window.
 */
static void stream_rebase(struct pubd_reasm *r, struct stream *s, uint64_t now)
{
	uint64_t lost = s->baseline;

	if (s->based)
		return;
	s->based = true;
	if (lost > SEQ_JUMP_BASE)
		return;
	s->baseline = 0;
	if (s->proven)
		drop(r, s, PUB_DROP_SEQ_GAP, lost);
	else
		reasm_range_open(r, s, now, 0, lost);
}

/* ---- push ---- */

static void heartbeat(struct pubd_reasm *r, uint64_t now, const struct pubd_wire_hdr *h, size_t payload_len,
		      unsigned flags)
{
	bool began_since = flags & PUBD_REASM_BEGAN_SINCE;
	struct stream *s;

	if (h->frag_count || h->msg_len || h->frag_index || h->frag_offset || payload_len) {
		drop_dgram(r, h, PUB_DROP_MALFORMED);
		return;
	}
	s = stream_get(r, now, h->source_id, h->group_id, h->msg_seq,
		       began_since || (flags & PUBD_REASM_NEW_FROM_ZERO));
	/* Without memory for the stream there is nothing to announce to. */
	if (!s || !stream_accept_jump(r, s, now, h->msg_seq, h))
		return;
	if (began_since)
		stream_rebase(r, s, now);
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
		call_deliver(r, s, seq, payload, len, NULL);
		return;
	}
	p = reasm_partial_new(r, s, now, seq, h, unit);
	if (p)
		reasm_partial_add(r, p, h, unit, payload, len);
}

void pubd_reasm_push(struct pubd_reasm *r, uint64_t now_ns, const struct pubd_wire_hdr *h, const uint8_t *payload,
		     size_t payload_len)
{
	pubd_reasm_push_flags(r, now_ns, h, payload, payload_len, 0);
}

/* Outcomes of push that the batch path tells apart. */
enum push_outcome {
	PUSHED,	     /* taken, or dropped as its own message */
	JUMP_REFUSED /* a jump past the window: counted malformed, the stream untouched */
};

static enum push_outcome push(struct pubd_reasm *r, uint64_t now_ns, const struct pubd_wire_hdr *h,
			      const uint8_t *payload, size_t payload_len, unsigned flags)
{
	bool from_zero = flags & PUBD_REASM_NEW_FROM_ZERO;

	uint64_t seq = h->msg_seq;
	struct stream *s;
	struct partial *p;
	struct range *g;
	uint32_t unit;

	reasm_no_reentry(r);
	if (h->flags & PUBD_WIRE_F_HEARTBEAT) {
		heartbeat(r, now_ns, h, payload_len, flags);
		return PUSHED;
	}
	/* UINT64_MAX has no next_seq after it; 64-bit sequences never get there.
	 * A batch or control datagram is split or answered before reassembly. */
	if ((h->flags & (PUBD_WIRE_F_BATCH | PUBD_WIRE_F_CONTROL)) || pubd_wire_check_frag(h, payload_len, &unit) ||
	    seq == UINT64_MAX) {
		drop_dgram(r, h, PUB_DROP_MALFORMED);
		return PUSHED;
	}
	s = stream_get(r, now_ns, h->source_id, h->group_id, seq, from_zero);
	if (!s) {
		drop_dgram(r, h, PUB_DROP_REASM_BUDGET);
		return PUSHED;
	}

	if (seq >= s->next_seq) {
		if (!stream_accept_jump(r, s, now_ns, seq, h))
			return JUMP_REFUSED;
		stream_advance(r, s, now_ns, seq);
		s->next_seq = seq + 1;
		message_new(r, s, now_ns, seq, h, unit, payload, payload_len);
		return PUSHED;
	}
	s->last_active = now_ns;
	if (seq < s->baseline) {
		drop(r, s, PUB_DROP_STALE, 1);
		return PUSHED;
	}
	p = partial_find(r, s, seq);
	if (p) {
		reasm_partial_add(r, p, h, unit, payload, payload_len);
		return PUSHED;
	}
	g = reasm_range_find(r, s, seq);
	if (g) {
		reasm_range_take(r, g, seq);
		message_new(r, s, now_ns, seq, h, unit, payload, payload_len);
		return PUSHED;
	}
	drop(r, s, PUB_DROP_STALE, 1);
	return PUSHED;
}

void pubd_reasm_push_flags(struct pubd_reasm *r, uint64_t now_ns, const struct pubd_wire_hdr *h, const uint8_t *payload,
			   size_t payload_len, unsigned flags)
{
	push(r, now_ns, h, payload, payload_len, flags);
}

/* ---- batches ---- */

/* Messages of a run handed out together at most: a bounded stack array. */
#define RUN_MAX 64

struct run {
	struct stream *s;
	uint64_t first;
	unsigned n;
	struct pubd_msg_view v[RUN_MAX];
};

/* The run's messages out, in order, as message_new would have delivered
 * each (their stream proven by the first). */
static void run_flush(struct pubd_reasm *r, struct run *run, uint64_t now)
{
	struct stream *s = run->s;
	unsigned i;

	if (!run->n)
		return;
	/* What stream_accept_jump sets for a message at next_seq. */
	s->last_active = now;
	s->drops_seen = r->kernel_drops;
	stream_proven(r, s);
	r->in_callback++;
	if (r->ops.deliver_run)
		r->ops.deliver_run(r->ctx, s->hn.k1, s->hn.k2, run->first, run->v, run->n);
	else
		for (i = 0; i < run->n; i++)
			r->ops.deliver(r->ctx, s->hn.k1, s->hn.k2, run->first + i, run->v[i].data, run->v[i].len, NULL);
	r->in_callback--;
	run->n = 0;
}

void pubd_reasm_push_batch(struct pubd_reasm *r, uint64_t now_ns, const struct pubd_wire_hdr *h, const uint8_t *payload,
			   size_t payload_len, unsigned flags)
{
	struct pubd_wire_batch_iter it;
	const struct pubd_wire_hdr *mh;
	const uint8_t *data;
	struct run run;
	size_t len;

	reasm_no_reentry(r);
	run.s = NULL;
	run.n = 0;
	pubd_wire_batch_begin(&it, h, payload, payload_len);
	while (pubd_wire_batch_next(&it, &mh, &data, &len)) {
		/* The stream's next message, whole: nothing to decide but that
		 * it is delivered (pubd_reasm_push_flags: stream found, no jump,
		 * one fragment). Nothing in between can forget the stream: the
		 * callbacks may not call back in, and the run is flushed before
		 * any other message is pushed. */
		if (run.s && mh->msg_seq == run.s->next_seq && len <= r->cfg.max_message_size &&
		    mh->msg_seq != UINT64_MAX) {
			if (!run.n)
				run.first = mh->msg_seq;
			run.v[run.n].data = data;
			run.v[run.n].len = len;
			run.s->next_seq++;
			if (++run.n == RUN_MAX)
				run_flush(r, &run, now_ns);
			continue;
		}
		run_flush(r, &run, now_ns);
		/* A jump past the window refuses the rest of the batch too (each
		 * message further on, the stream where it was): the datagram is
		 * one malformed datagram, not one per message it claimed. */
		if (push(r, now_ns, mh, data, len, flags) == JUMP_REFUSED)
			return;
		/* Its stream, when the push found or made it (r->hot). */
		run.s = r->hot && r->hot->hn.k1 == mh->source_id && r->hot->hn.k2 == mh->group_id ? r->hot : NULL;
	}
	run_flush(r, &run, now_ns);
}
