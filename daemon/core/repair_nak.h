/* SPDX-License-Identifier: MIT */
/*
 * A receiver's NAK schedule: which missing messages of which streams to ask
 * for, and when. Pure: the clock (now_ns) and the random numbers come from
 * the caller, so tests can drive it exactly.
 *
 * A gap is a range of sequence numbers of one stream (source, group), or one
 * message whose fragments are partly missing (partial). When a gap is found
 * its first NAK is due after a random back-off in [0, backoff_ns] (RFC 5401
 * style: receivers that lost the same datagram spread their NAKs out), then
 * again every interval_ns; after `retries` NAKs without an answer the gap is
 * given up (ops->give_up: counted as unrecovered by the caller). A NAK that
 * could not go (ops->send false: a new source's repair token is not known
 * until its first heartbeat) is no try while the gap is younger than the
 * whole schedule (back-off + (retries + 1) intervals); after that it is, so
 * a gap on a source that never gives a token still ends. A message
 * that arrives (pubd_nak_filled) leaves its gap; a GONE from the source
 * (pubd_nak_gone) gives up what it names at once.
 *
 * Timings are per group: ops->timing (optional) gives a group's back-off,
 * interval and retries, asked when a gap is found and each time it is
 * NAKed, so a reload applies at once; without it, cfg's apply to all.
 *
 * Bounds: at most max_gaps gaps in all; a new one beyond it gives up the
 * oldest eighth first. A range longer than PUBD_NAK_MAX_RANGE is asked for
 * in pieces (one NAK names at most that many); a gap longer than
 * PUBD_NAK_GAP_MAX is asked for up to that, the rest given up at once; and
 * one pubd_nak_run sends at most PUBD_NAK_RUN_MAX NAKs (what is left stays
 * due: pubd_nak_next_deadline says so). So what a peer's forged sequence
 * numbers can make pubd send is bounded, per gap and per run.
 *
 * Gaps of one stream may overlap: a new range is taken unless one gap
 * already holds all of it; a message fills the oldest gap holding it, and a
 * GONE takes from every gap it touches, oldest first.
 *
 * Cost: a run takes the due gaps earliest due first (the first found first
 * among equals) and looks at no other; filling, GONE, pending and a new gap
 * look only at their own stream's gaps, and among those only at the ones
 * their sequence numbers touch, found in a tree by sequence number: O(log
 * g) for a stream of g gaps that do not overlap (4,096 gaps found and
 * filled one at a time look at 6 to 18 gaps a call, 1,000 to 4,096 when
 * each call walked them all: test_repair_nak_index), plus the gaps found
 * (a GONE's, or overlapping ones). None of them grows with the gaps of
 * other streams. pubd_nak_due_now and pubd_nak_forget of a stream look at
 * all its gaps, which they change; only pubd_nak_forget of every source of
 * a group looks at all gaps (a group left: rare). ops must not call back
 * into the schedule.
 */
#ifndef PUBD_REPAIR_NAK_H
#define PUBD_REPAIR_NAK_H

#include <stdbool.h>
#include <stdint.h>

#include "keyed_hash.h"

#define PUBD_NAK_MAX_RANGE 65536u
#define PUBD_NAK_GAP_MAX   (16ull * PUBD_NAK_MAX_RANGE)
#define PUBD_NAK_RUN_MAX   256u

struct pubd_nak_timing {
	uint64_t backoff_ns;
	uint64_t interval_ns;
	uint32_t retries;
};

struct pubd_nak_cfg {
	uint64_t backoff_ns; /* the timing of groups ops->timing does not give */
	uint64_t interval_ns;
	uint32_t retries;
	uint32_t max_gaps;
	/* Streams are hashed on ids a peer chooses: a secret key (pubd draws
	 * it, keyed_hash.h), taken at init only. */
	struct pubd_hash_key hash_key;
};

struct pubd_nak_gap {
	uint64_t source, group;
	uint64_t first;
	uint64_t count;
	uint64_t due_ns;
	uint64_t found_ns;
	uint32_t tries; /* NAKs sent */
	bool partial;	/* one message, some of its fragments */
};

struct pubd_nak_ops {
	/* Send a NAK for gap (first .. first + count - 1 at most PUBD_NAK_MAX_RANGE).
	 * false: it could not go (the source's repair token not heard yet, the
	 * fabric full); that is no try, see pubd_nak_run. */
	bool (*send)(void *ctx, const struct pubd_nak_gap *gap, uint64_t first, uint64_t count);
	/* These messages will not be repaired. */
	void (*give_up)(void *ctx, uint64_t source, uint64_t group, uint64_t first, uint64_t count, bool partial);
	/* Optional: group's timing into t (left as cfg's when it returns false). */
	bool (*timing)(void *ctx, uint64_t group, struct pubd_nak_timing *t);
};

struct pubd_nak_node;
struct pubd_nak_stream;
struct pubd_nak_hit;

struct pubd_nak_sched {
	struct pubd_nak_cfg cfg;
	struct pubd_nak_ops ops;
	void *ctx;
	uint64_t (*rand64)(void *rctx);
	void *rctx;
	/* All sized by max_gaps at init (memory stays bounded by it), and
	 * indexed so that no call's cost grows with the gaps of other streams
	 * (a forger's sources each leaving a gap once made every delivered
	 * message scan 4,096 of them): repair_nak_index.h. */
	struct pubd_nak_node *nodes;	 /* the gaps; NULL when init failed */
	struct pubd_nak_stream *streams; /* streams with a gap, by a keyed hash */
	uint32_t *buckets, mask;	 /* heads of the streams' hash chains */
	uint32_t *heap, hn;		 /* gaps by due time, then age */
	struct pubd_nak_hit *hits;	 /* what a lookup in a stream's tree found */
	uint32_t n, cap;		 /* gaps, and room for them */
	uint32_t oldest, youngest;	 /* all gaps in the order found */
	uint32_t free_node, free_stream, last_stream;
	uint64_t born; /* gaps found so far: their age */
	struct pubd_hash_key key;
	uint64_t visits; /* gaps and streams looked at, for tests to see what a call costs */
	/* counters */
	uint64_t naks_sent, given_up_retries, given_up_gone, given_up_full, given_up_large;
};

int pubd_nak_init(struct pubd_nak_sched *s, const struct pubd_nak_cfg *cfg, const struct pubd_nak_ops *ops, void *ctx,
		  uint64_t (*rand64)(void *rctx), void *rctx);
void pubd_nak_close(struct pubd_nak_sched *s);
void pubd_nak_set(struct pubd_nak_sched *s, const struct pubd_nak_cfg *cfg);

/* Gaps waiting. */
uint32_t pubd_nak_count(const struct pubd_nak_sched *s);
/* Messages first .. first + count - 1 of (source, group) are missing. */
void pubd_nak_gap(struct pubd_nak_sched *s, uint64_t now_ns, uint64_t source, uint64_t group, uint64_t first,
		  uint64_t count, bool partial);
/* Message seq arrived (whole): no longer asked for. Returns true if it was. */
bool pubd_nak_filled(struct pubd_nak_sched *s, uint64_t source, uint64_t group, uint64_t seq);
/* The source says these are gone: give them up now. */
void pubd_nak_gone(struct pubd_nak_sched *s, uint64_t source, uint64_t group, uint64_t first, uint64_t count);
/* What held the stream's NAKs back is gone (its source gave us the
 * cookie they must carry): its gaps due later are due at now_ns. */
void pubd_nak_due_now(struct pubd_nak_sched *s, uint64_t now_ns, uint64_t source, uint64_t group);
/* Forget a stream's or a group's gaps silently (left group: source 0 = every source). */
void pubd_nak_forget(struct pubd_nak_sched *s, uint64_t source, uint64_t group);
/* Send what is due and give up what ran out of retries. */
void pubd_nak_run(struct pubd_nak_sched *s, uint64_t now_ns);
/* When pubd_nak_run has something to do next; UINT64_MAX when nothing. */
uint64_t pubd_nak_next_deadline(const struct pubd_nak_sched *s);
/* Is seq of (source, group) waiting for repair? (Not const: the lookup
 * keeps the stream it found for the next.) */
bool pubd_nak_pending(struct pubd_nak_sched *s, uint64_t source, uint64_t group, uint64_t seq);

#endif
