/* SPDX-License-Identifier: MIT */
/*
 * Reassembly: turns datagrams back into messages, and accounts for every
 * message it could not complete.
 *
 * Pure logic: no fd, no clock (now_ns is passed in), allocation only for the
 * bodies of multi-fragment messages and for per-stream state.
 *
 * A stream is (source_id, group_id). Within a stream:
 *  - The first datagram (or heartbeat) seen sets the baseline: earlier
 *    sequence numbers were before our time, not lost.
 *  - next_seq is one past the highest sequence started. A message (or a
 *    heartbeat announcing next_seq = s) that jumps ahead opens a "missing"
 *    range [next_seq, s) with a deadline now + timeout: a late (reordered)
 *    message in the range is still accepted; what is still missing at the
 *    deadline is dropped as PUB_DROP_SEQ_GAP.
 *  - A partial message keeps a bitmap of fragments; duplicates are discarded
 *    (PUB_DROP_DUPLICATE, a datagram-level reason); it is dropped as
 *    PUB_DROP_REASM_TIMEOUT if not complete by its deadline (first fragment
 *    time + timeout).
 *  - A fragment of a message already delivered or dropped: PUB_DROP_STALE.
 *  - A source that restarts gets a new source id, so a new stream: no false
 *    gap and no false duplicates; the old stream ages out (idle_timeout).
 * Limits:
 *  - budget_bytes: heap held for partial messages and missing ranges, as
 *    malloc holds it: each partial's struct, fragment bitmap, buffer (its
 *    size class) and table entry, each range's entry, with allocation
 *    overhead; not just message bytes. A new partial that does not fit
 *    evicts the oldest partials (PUB_DROP_REASM_BUDGET) until it does (then
 *    ranges, as gaps); one larger than the whole budget is dropped itself.
 *    A range that does not fit gives up the oldest ranges (SEQ_GAP now),
 *    never a partial. Streams and tombstones (a fixed size each) are
 *    bounded by max_streams: memory <= budget + 2 * max_streams * ~200 B.
 *  - max_inflight_per_source: partial messages per stream; the oldest is
 *    evicted (PUB_DROP_REASM_INFLIGHT).
 *  - max_message_size: a header announcing a bigger msg_len: PUB_DROP_TOO_LARGE.
 *  - max_streams: streams tracked; the least recently active is forgotten
 *    (its partials dropped as timeouts, its missing ranges as gaps), taken
 *    first from streams that never completed a message, so invented source
 *    ids push out each other, not the streams that deliver; tombstones
 *    likewise.
 *  - Sequence window: a datagram or heartbeat more than 65,536 + 50 per
 *    microsecond since the stream was last heard ahead of next_seq is
 *    MALFORMED, not that many lost messages (a forged msg_seq near 2^63
 *    would count 2^63 gaps and make the real stream's messages stale). A
 *    new stream "from zero" further than 65,536 in starts where it is.
 *
 * Invariant (tested): for each stream, every sequence number between the
 * baseline and the last one announced is reported exactly once, as delivered
 * or as dropped with a MSG-kind reason, once all deadlines have passed.
 *
 * Details:
 *  - A datagram below the baseline is STALE (it was before our time).
 *  - TOO_LARGE and REASM_BUDGET (bigger than the whole budget, or out of
 *    memory) are decided at a message's first datagram and counted once;
 *    its other datagrams are then STALE.
 *  - MALFORMED (datagram): a header failing pubd_wire_check_frag(), a bad
 *    heartbeat, msg_seq UINT64_MAX, a jump beyond the sequence window, or a fragment whose msg_len, frag_count
 *    or fragment unit disagree with the partial it belongs to (so a full
 *    bitmap always means every byte was written once).
 *  - Forgetting an idle stream reports what it still waits for like
 *    max_streams does (timeouts, gaps); normally nothing is left by then.
 *  - A stream forgotten that way leaves a tombstone (source, group,
 *    next_seq); heard again, it resumes from there: messages sent while it
 *    was forgotten and never heard count as a gap, those before as before.
 *    At most max_streams tombstones are kept, the oldest going first;
 *    pubd_reasm_forget_group() (the group was left) clears its tombstones.
 *  - A deadline is never set earlier than the newest one already pending,
 *    so lowering timeout_ns by reload takes effect once older ones drain.
 *  - Callbacks must not call back into the same pubd_reasm: push, expire,
 *    forget_group and destroy abort when called from inside one.
 */
#ifndef PUBD_REASM_H
#define PUBD_REASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pub_reasons.h"
#include "msgbuf.h"
#include "wire.h"
#include "keyed_hash.h"

struct pubd_reasm;

struct pubd_reasm_config {
	/* The defaults of these four are the config keys' (limits.reassembly_budget,
	 * reassembly_inflight, reassembly_timeout_ms, max_message_size). */
	size_t budget_bytes;
	uint32_t max_inflight_per_source;
	uint64_t timeout_ns;
	/* Streams of groups ops->repairs names (loss repair) wait this long
	 * instead, so their NAKs have time; other groups keep timeout_ns.
	 * 0: timeout_ns. A stream's class is fixed when it is created. */
	uint64_t repair_timeout_ns;
	uint64_t idle_timeout_ns; /* stream forgotten after this much silence; default 30 s */
	size_t max_message_size;
	uint32_t max_streams;	     /* default 4096 */
	uint32_t max_missing_ranges; /* per stream; beyond it the oldest is dropped as a gap now; default 64 */
	/* The tables' secret (keyed_hash.h: senders choose the ids), read at
	 * create only; pubd draws it at random (an all-zero one is a key too). */
	struct pubd_hash_key hash_key;
};

struct pubd_reasm_ops {
	/*
	 * A complete message. When owned is NULL, data points into the datagram
	 * handed to pubd_reasm_push and is valid only during the call (the
	 * single-fragment fast path: no copy, no allocation). Otherwise the
	 * callee receives one reference to owned (data == owned->data).
	 */
	void (*deliver)(void *ctx, uint64_t source_id, uint64_t group_id, uint64_t seq, const uint8_t *data, size_t len,
			struct pubd_msgbuf *owned);
	/*
	 * Optional: n complete messages of one stream, first .. first + n - 1,
	 * in order, as deliver would have been called for each with owned NULL
	 * (their bytes point into the batch given to pubd_reasm_push_batch).
	 * Without it, deliver is called for each.
	 */
	void (*deliver_run)(void *ctx, uint64_t source_id, uint64_t group_id, uint64_t first,
			    const struct pubd_msg_view *msgs, unsigned n);
	/* count messages (MSG reasons) or datagrams (DGRAM reasons) dropped. */
	void (*drop)(void *ctx, uint64_t source_id, uint64_t group_id, enum pub_drop_reason reason, uint64_t count);
	/* Optional: messages first .. first + count - 1 went missing (a range
	 * opened; loss repair asks for them). Must not call back into reasm. */
	void (*gap)(void *ctx, uint64_t source_id, uint64_t group_id, uint64_t first, uint64_t count);
	/* Optional: does group_id wait repair_timeout_ns (a repair group)? */
	bool (*repairs)(void *ctx, uint64_t group_id);
};

/* Every default; those that are config keys from the config's table. */
void pubd_reasm_config_defaults(struct pubd_reasm_config *c);

/* Returns NULL on allocation failure. cfg is copied. */
struct pubd_reasm *pubd_reasm_create(const struct pubd_reasm_config *cfg, const struct pubd_reasm_ops *ops, void *ctx);
/* Frees everything held; partial messages are dropped silently (no callbacks). */
void pubd_reasm_destroy(struct pubd_reasm *r);

/* Change limits at run time (reload). Takes effect for new decisions. */
void pubd_reasm_set_config(struct pubd_reasm *r, const struct pubd_reasm_config *cfg);
/* Heap charged to the same budget outside reassembly (messages held back
 * for order, daemon/engine/repair_order.c): partials and ranges get what is
 * left of budget_bytes. Partials already held stay until the next one
 * needs room. */
void pubd_reasm_set_outside(struct pubd_reasm *r, uint64_t bytes);
/* Heap reassembly holds against the budget (partials and missing ranges). */
uint64_t pubd_reasm_held_bytes(const struct pubd_reasm *r);

/*
 * Feed one decoded datagram (header from pubd_wire_decode, its payload).
 * Outcomes go through ops, possibly several (a jump can resolve a gap...).
 */
void pubd_reasm_push(struct pubd_reasm *r, uint64_t now_ns, const struct pubd_wire_hdr *h, const uint8_t *payload,
		     size_t payload_len);

/*
 * The same, with flags. PUBD_REASM_NEW_FROM_ZERO: if this datagram starts a
 * stream not seen before, its baseline is sequence 0 rather than its own
 * sequence, so messages 0..seq-1 count as missing. The caller sets it when
 * it knows the stream began after it started listening (pubd: its group had
 * been joined for several heartbeat periods and no heartbeat of this source
 * was heard, so the source had not published before). A stream forgotten
 * while listening (idle or max_streams) is not new: it resumes at the
 * next_seq it had (tombstones, up to max_streams of them), flag or not.
 */
#define PUBD_REASM_NEW_FROM_ZERO 0x1u
/*
 * PUBD_REASM_BEGAN_SINCE, on a heartbeat: its source's stream began after
 * we started listening (the heartbeat's age says so). A new stream starts
 * at 0, as with NEW_FROM_ZERO; a stream first heard at seq s > 0 (its
 * first messages lost, within the grace the caller gives NEW_FROM_ZERO) is
 * rebased to 0 once: 0..s-1 are missing, or, when a message after them
 * was delivered already, dropped as gaps at once (order is kept).
 */
#define PUBD_REASM_BEGAN_SINCE 0x2u
void pubd_reasm_push_flags(struct pubd_reasm *r, uint64_t now_ns, const struct pubd_wire_hdr *h, const uint8_t *payload,
			   size_t payload_len, unsigned flags);

/*
 * A batch datagram (flag BATCH, as pubd_wire_decode accepted it): each of
 * its messages as pubd_reasm_push_flags would take it alone, in order, with
 * the same outcomes. The messages that simply continue their stream (the
 * next sequence number, within max_message_size) skip the per-message
 * steps and go out together through ops.deliver_run.
 */
void pubd_reasm_push_batch(struct pubd_reasm *r, uint64_t now_ns, const struct pubd_wire_hdr *h, const uint8_t *payload,
			   size_t payload_len, unsigned flags);

/*
 * The datagrams the kernel dropped on the way in so far (a count that only
 * grows; pubd_rx_dgram.kernel_drops), as of the datagrams pushed next. A
 * stream's jump past its sequence window is taken as loss, not counted
 * malformed, when the drops since the stream was last heard could have
 * carried that many messages: a receiver that stalled while its socket
 * overflowed finds the next datagram far ahead, with little time between.
 */
void pubd_reasm_kernel_drops(struct pubd_reasm *r, uint64_t drops);

/* Resolve everything whose deadline is <= now_ns. */
void pubd_reasm_expire(struct pubd_reasm *r, uint64_t now_ns);

/* Earliest pending deadline, or UINT64_MAX when nothing is pending. */
uint64_t pubd_reasm_next_deadline(const struct pubd_reasm *r);

/* Forget a group's streams now (e.g. its group was left): partials and
 * missing ranges are dropped silently, and no tombstone is kept. */
void pubd_reasm_forget_group(struct pubd_reasm *r, uint64_t group_id);

struct pubd_reasm_stream_info {
	uint64_t source_id;
	uint64_t group_id;
	uint64_t baseline;	 /* first sequence accounted for (set by the first datagram) */
	uint64_t next_seq;	 /* one past the highest sequence started */
	uint32_t inflight;	 /* partial messages */
	uint64_t inflight_bytes; /* bytes reserved for them */
	uint64_t missing;	 /* sequence numbers waiting in missing ranges */
	uint64_t last_active_ns;
};

/* Offer the partial messages that began at or before older_than_ns and
 * were not offered before, oldest first, at most max of them (loss repair
 * asks for those that seem stuck; each once: its NAKs have their own
 * schedule). Returns how many were offered. */
unsigned pubd_reasm_offer_stuck(struct pubd_reasm *r, uint64_t older_than_ns, unsigned max,
				void (*fn)(void *ctx, uint64_t source_id, uint64_t group_id, uint64_t seq), void *ctx);

/* The fragments partial message seq of (source, group) still misses, as a
 * bitmap (bit i, LSB first: fragment *first + i) of at most cap bytes;
 * returns the bytes used, 0 when there is no such partial. */
size_t pubd_reasm_partial_missing(const struct pubd_reasm *r, uint64_t source, uint64_t group, uint64_t seq,
				  uint32_t *first, uint8_t *bitmap, size_t cap);

/* The lowest sequence number of (source, group) not yet delivered or
 * dropped (a missing range's or a partial's), next_seq when none;
 * UINT64_MAX for a stream not tracked. Loss repair holds later messages
 * back until it passes them, to deliver in order. */
uint64_t pubd_reasm_stream_low(const struct pubd_reasm *r, uint64_t source, uint64_t group);

/* Visit every stream (order unspecified). */
void pubd_reasm_foreach(const struct pubd_reasm *r, void (*fn)(void *ctx, const struct pubd_reasm_stream_info *s),
			void *ctx);

struct pubd_reasm_totals {
	uint64_t streams;
	uint64_t inflight_msgs;
	uint64_t inflight_bytes; /* message bytes of the partials */
	uint64_t held_bytes;	 /* heap charged to budget_bytes (partials and missing ranges) */
	uint64_t stream_bytes;	 /* heap of streams and tombstones (bounded by max_streams) */
	uint64_t table_bytes;	 /* the hash tables' bucket arrays: they grow with a burst and shrink after it */
	uint64_t range_visits;	 /* missing ranges looked at to place a late message, all told (tests) */
};
void pubd_reasm_totals(const struct pubd_reasm *r, struct pubd_reasm_totals *t);

#endif
