/* SPDX-License-Identifier: MIT */
/*
 * Reassembly: order, duplicates, stale datagrams, gaps and deadlines, and
 * streams (baselines, eviction, idleness, tombstones).
 */
#include "reasm_harness.h"

/* ---- order, duplicates, stale ---- */

static void reasm_delivers_single_fragment_straight_from_datagram(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_msg(r, 0, SRC_A, GRP_X, 0, 500);
	assert_int_equal(sink.delivered, 1);
	assert_false(sink.log[0].owned);
	assert_ptr_equal(sink.log[0].data, dgram + PUBD_WIRE_HDR_LEN);
	assert_int_equal(sink.log[0].len, 500);
	push_msg(r, 0, SRC_A, GRP_X, 1, 0);
	assert_int_equal(sink.delivered, 2);
	assert_int_equal(sink.log[1].len, 0);
	assert_int_equal(sink.bad_content, 0);
	pubd_reasm_destroy(r);
}

static void reasm_reassembles_fragments_in_any_order(void **state)
{
	struct pubd_reasm *r = make(NULL);
	struct pubd_reasm_totals t;
	size_t len = 10 * 976 + 17;
	uint32_t n = nfrags(len, 1024), i;

	/* Odd indices, then even ones backwards. */
	for (i = 1; i < n; i += 2)
		push_frag(r, 0, SRC_A, GRP_X, 0, len, 1024, i);
	for (i = n; i-- > 0;)
		if (i % 2 == 0)
			push_frag(r, 0, SRC_A, GRP_X, 0, len, 1024, i);
	assert_int_equal(sink.delivered, 1);
	assert_true(sink.log[0].owned);
	assert_int_equal(sink.log[0].len, len);
	assert_int_equal(sink.bad_content, 0);
	assert_int_equal(dgram_drops() + sink.msg_drops, 0);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.inflight_msgs, 0);
	assert_int_equal(t.inflight_bytes, 0);
	pubd_reasm_destroy(r);
}

static void reasm_drops_duplicate_fragment(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 0);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 0);
	assert_int_equal(sink.drops[PUB_DROP_DUPLICATE], 1);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 1);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 2);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 1);
	assert_int_equal(sink.drops[PUB_DROP_DUPLICATE], 2);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 3);
	assert_int_equal(sink.delivered, 1);
	assert_int_equal(sink.msg_drops, 0);
	pubd_reasm_destroy(r);
}

static void reasm_drops_fragment_of_delivered_message_as_stale(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_msg(r, 0, SRC_A, GRP_X, 0, 3000);
	push_msg(r, 0, SRC_A, GRP_X, 1, 10);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 2);
	push_msg(r, 0, SRC_A, GRP_X, 1, 10);
	assert_int_equal(sink.delivered, 2);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 2);
	assert_int_equal(sink.drops[PUB_DROP_DUPLICATE], 0);
	assert_int_equal(sink.msg_drops, 0);
	pubd_reasm_destroy(r);
}

static void reasm_first_datagram_sets_baseline(void **state)
{
	struct pubd_reasm *r = make(NULL);
	struct pubd_reasm_stream_info s;

	/* Joined mid-stream: 100 is the first we see; 99 was before our time. */
	push_msg(r, 0, SRC_A, GRP_X, 100, 10);
	push_msg(r, 0, SRC_A, GRP_X, 99, 10);
	s = stream_info(r, SRC_A, GRP_X);
	assert_int_equal(s.baseline, 100);
	assert_int_equal(s.next_seq, 101);
	assert_int_equal(s.missing, 0);
	pubd_reasm_expire(r, 10000 * MS);
	assert_int_equal(sink.delivered, 1);
	assert_int_equal(sink.msg_drops, 0);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 1);
	pubd_reasm_destroy(r);
}

static void reasm_new_stream_from_zero_counts_lost_first_messages(void **state)
{
	struct pubd_reasm *r = make(NULL);

	/* The caller knows the stream began since it listened: 0..2 were lost. */
	push_flags = PUBD_REASM_NEW_FROM_ZERO;
	push_msg(r, 0, SRC_A, GRP_X, 3, 10);
	push_flags = 0;
	assert_int_equal(stream_info(r, SRC_A, GRP_X).baseline, 0);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).missing, 3);
	push_msg(r, 0, SRC_A, GRP_X, 1, 10); /* a late one is still welcome */
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(sink.delivered, 2);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 2);
	pubd_reasm_destroy(r);
}

static void reasm_from_zero_heartbeat_counts_unheard_messages(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_flags = PUBD_REASM_NEW_FROM_ZERO;
	push_hb(r, 0, SRC_A, GRP_X, 4);
	push_flags = 0;
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 4);
	assert_int_equal(sink.delivered, 0);
	pubd_reasm_destroy(r);
}

/* A stream first heard at seq 2 (a fragment: nothing delivered yet); its
 * heartbeat then says it began after we listened: 0 and 1 were meant for
 * us. They are missing (a late one is welcome, the other a gap at its
 * deadline); a second such heartbeat changes nothing. Without the rebase
 * 0 is stale and 1 never counted. */
static void reasm_began_since_heartbeat_rebases_a_stream_heard_late(void **state)
{
	struct pubd_reasm *r = make(NULL);
	struct pubd_reasm_stream_info s;

	push_frag(r, 0, SRC_A, GRP_X, 2, 3000, 1024, 0);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).baseline, 2);
	push_flags = PUBD_REASM_BEGAN_SINCE;
	push_hb(r, MS, SRC_A, GRP_X, 3);
	s = stream_info(r, SRC_A, GRP_X);
	assert_int_equal(s.baseline, 0);
	assert_int_equal(s.missing, 2);
	push_hb(r, 2 * MS, SRC_A, GRP_X, 3);
	push_flags = 0;
	assert_int_equal(stream_info(r, SRC_A, GRP_X).missing, 2);
	push_msg(r, 3 * MS, SRC_A, GRP_X, 0, 10);
	push_frag(r, 3 * MS, SRC_A, GRP_X, 2, 3000, 1024, 1);
	push_frag(r, 3 * MS, SRC_A, GRP_X, 2, 3000, 1024, 2);
	push_frag(r, 3 * MS, SRC_A, GRP_X, 2, 3000, 1024, 3);
	pubd_reasm_expire(r, 10000 * MS);
	assert_int_equal(sink.delivered, 2);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 1);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 0);
	assert_int_equal(sink.msg_drops, 1);
	pubd_reasm_destroy(r);
}

/* Delivered past its lost first messages already: waiting for them would
 * break the stream's order, so they are gaps at once. */
static void reasm_began_since_after_a_delivery_counts_the_first_as_gaps(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_msg(r, 0, SRC_A, GRP_X, 3, 10);
	push_flags = PUBD_REASM_BEGAN_SINCE;
	push_hb(r, MS, SRC_A, GRP_X, 4);
	push_flags = 0;
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 3);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).baseline, 0);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).missing, 0);
	push_msg(r, 2 * MS, SRC_A, GRP_X, 1, 10); /* counted once: stale now */
	pubd_reasm_expire(r, 10000 * MS);
	assert_int_equal(sink.delivered, 1);
	assert_int_equal(sink.msg_drops, 3);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 1);
	pubd_reasm_destroy(r);
}

/* A stream whose baseline is settled (from zero, or one heard from 0) is
 * never rebased; nor a plain heartbeat (no BEGAN_SINCE) rebases one; nor
 * one heard first further in than a new stream's window (a heartbeat
 * forged on the group's multicast counts no more than a forged new stream
 * could). */
static void reasm_began_since_leaves_settled_streams_alone(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_msg(r, 0, SRC_C, GRP_X, 70000, 10);
	push_flags = PUBD_REASM_BEGAN_SINCE;
	push_hb(r, MS, SRC_C, GRP_X, 70001);
	push_flags = 0;
	assert_int_equal(stream_info(r, SRC_C, GRP_X).baseline, 70000);

	push_msg(r, 0, SRC_A, GRP_X, 5, 10);
	push_hb(r, MS, SRC_A, GRP_X, 6);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).baseline, 5);
	push_msg(r, 0, SRC_B, GRP_X, 0, 10);
	push_msg(r, 0, SRC_B, GRP_X, 1, 10);
	push_flags = PUBD_REASM_BEGAN_SINCE;
	push_hb(r, MS, SRC_B, GRP_X, 2);
	push_flags = 0;
	assert_int_equal(stream_info(r, SRC_B, GRP_X).baseline, 0);
	pubd_reasm_expire(r, 10000 * MS);
	assert_int_equal(sink.delivered, 4);
	assert_int_equal(sink.msg_drops, 0);
	pubd_reasm_destroy(r);
}

static void reasm_from_zero_leaves_known_streams_alone(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_msg(r, 0, SRC_A, GRP_X, 100, 10);
	push_flags = PUBD_REASM_NEW_FROM_ZERO;
	push_msg(r, 0, SRC_A, GRP_X, 101, 10);
	push_flags = 0;
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).baseline, 100);
	assert_int_equal(sink.delivered, 2);
	assert_int_equal(sink.msg_drops, 0);
	pubd_reasm_destroy(r);
}

/* ---- gaps and deadlines ---- */

static void reasm_counts_gap_when_range_deadline_passes(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	push_msg(r, 10 * MS, SRC_A, GRP_X, 3, 10);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).missing, 2);
	assert_true(pubd_reasm_next_deadline(r) == 510 * MS);
	pubd_reasm_expire(r, 510 * MS - 1);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 0);
	pubd_reasm_expire(r, 510 * MS);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 2);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).missing, 0);
	/* Too late now: already counted. */
	push_msg(r, 600 * MS, SRC_A, GRP_X, 1, 10);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 1);
	assert_int_equal(sink.delivered, 2);
	pubd_reasm_destroy(r);
}

static void reasm_accepts_late_message_in_missing_range(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	push_msg(r, 0, SRC_A, GRP_X, 6, 10);
	/* 1..5 missing; 3 (multi-fragment) and 5 (single) arrive late. */
	push_msg(r, 1 * MS, SRC_A, GRP_X, 3, 2500);
	push_msg(r, 1 * MS, SRC_A, GRP_X, 5, 10);
	assert_int_equal(sink.delivered, 4);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).missing, 3);
	/* 3 again: resolved, so stale, even though it sat in the range. */
	push_msg(r, 1 * MS, SRC_A, GRP_X, 3, 2500);
	assert_int_equal(sink.delivered, 4);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 3);
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 3);
	assert_int_equal(sink.delivered + sink.msg_drops, 7);
	assert_int_equal(sink.bad_content, 0);
	pubd_reasm_destroy(r);
}

static void reasm_times_out_incomplete_message(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_frag(r, 5 * MS, SRC_A, GRP_X, 0, 3000, 1024, 0);
	push_frag(r, 6 * MS, SRC_A, GRP_X, 0, 3000, 1024, 2);
	assert_true(pubd_reasm_next_deadline(r) == 505 * MS);
	pubd_reasm_expire(r, 504 * MS);
	assert_int_equal(sink.drops[PUB_DROP_REASM_TIMEOUT], 0);
	pubd_reasm_expire(r, 505 * MS);
	assert_int_equal(sink.drops[PUB_DROP_REASM_TIMEOUT], 1);
	push_frag(r, 506 * MS, SRC_A, GRP_X, 0, 3000, 1024, 1);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 1);
	assert_int_equal(sink.delivered, 0);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).inflight, 0);
	pubd_reasm_destroy(r);
}

static void reasm_heartbeat_detects_tail_loss(void **state)
{
	struct pubd_reasm *r = make(NULL);
	uint64_t s;

	for (s = 0; s < 7; s++)
		push_msg(r, 0, SRC_A, GRP_X, s, 100);
	/* 7, 8, 9 lost; the sender then falls silent and announces 10. */
	push_hb(r, 1 * MS, SRC_A, GRP_X, 10);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).missing, 3);
	/* A reordered older heartbeat changes nothing. */
	push_hb(r, 2 * MS, SRC_A, GRP_X, 8);
	push_hb(r, 2 * MS, SRC_A, GRP_X, 10);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).missing, 3);
	pubd_reasm_expire(r, 501 * MS);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 3);
	assert_int_equal(sink.delivered + sink.msg_drops, 10);
	pubd_reasm_destroy(r);
}

static void reasm_heartbeat_of_new_stream_sets_baseline(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_hb(r, 0, SRC_A, GRP_X, 50);
	push_msg(r, 0, SRC_A, GRP_X, 49, 10);
	push_msg(r, 0, SRC_A, GRP_X, 51, 10);
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 1);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 1);
	assert_int_equal(sink.delivered, 1);
	pubd_reasm_destroy(r);
}

/* A jump is taken as lost messages only within what a publisher could
 * have sent meanwhile: 2^40 after 7 hours of silence is one range. */
static void reasm_counts_huge_jump_as_one_range(void **state)
{
	struct pubd_reasm *r = make(NULL);
	uint64_t jump = 1ull << 40, later = 7ull * 3600 * 1000 * MS;

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	pubd_reasm_expire(r, 0);
	push_msg(r, 0, SRC_A, GRP_X, jump, 10);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED], 1); /* not at once */
	assert_true(stream_info(r, SRC_A, GRP_X).missing == 0);
	/* Silent for 7 hours (forgotten, remembered by its tombstone). */
	pubd_reasm_expire(r, later - 1);
	push_msg(r, later, SRC_A, GRP_X, jump, 10);
	assert_true(stream_info(r, SRC_A, GRP_X).missing == jump - 1);
	push_msg(r, later, SRC_A, GRP_X, jump / 2, 10);
	assert_true(stream_info(r, SRC_A, GRP_X).missing == jump - 2);
	pubd_reasm_expire(r, later + 1000 * MS);
	assert_true(sink.drops[PUB_DROP_SEQ_GAP] == jump - 2);
	assert_int_equal(sink.delivered, 3);
	pubd_reasm_destroy(r);
}

static void limit_ranges(struct pubd_reasm_config *c)
{
	c->max_missing_ranges = 2;
}

static void reasm_drops_oldest_range_beyond_max_missing_ranges(void **state)
{
	struct pubd_reasm *r = make(limit_ranges);

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	push_msg(r, 0, SRC_A, GRP_X, 2, 10); /* [1] */
	push_msg(r, 0, SRC_A, GRP_X, 5, 10); /* [3,4] */
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 0);
	push_msg(r, 0, SRC_A, GRP_X, 7, 10); /* [6]: [1] goes now */
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 1);
	/* Taking 3 off the edge of [3,4] leaves [4]: still two ranges. */
	push_msg(r, 0, SRC_A, GRP_X, 3, 10);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 1);
	push_msg(r, 0, SRC_A, GRP_X, 10, 10); /* [8,9]: [4] goes now */
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 2);
	push_msg(r, 0, SRC_A, GRP_X, 15, 10); /* [11..14]: [6] goes */
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 3);
	/* A split makes three: [11] [13,14], so [8,9] goes. */
	push_msg(r, 0, SRC_A, GRP_X, 12, 10);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 5);
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 8);
	assert_int_equal(sink.delivered + sink.msg_drops, 16);
	pubd_reasm_destroy(r);
}

static void reasm_next_deadline_is_the_earliest_pending(void **state)
{
	struct pubd_reasm *r = make(NULL);

	assert_true(pubd_reasm_next_deadline(r) == UINT64_MAX);
	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	/* Only the idle timeout of the stream is pending. */
	assert_true(pubd_reasm_next_deadline(r) == 30000 * MS);
	push_frag(r, 100 * MS, SRC_B, GRP_X, 0, 3000, 1024, 0);
	assert_true(pubd_reasm_next_deadline(r) == 600 * MS);
	push_msg(r, 150 * MS, SRC_A, GRP_X, 2, 10);
	assert_true(pubd_reasm_next_deadline(r) == 600 * MS);
	pubd_reasm_expire(r, 600 * MS);
	assert_true(pubd_reasm_next_deadline(r) == 650 * MS);
	pubd_reasm_expire(r, 650 * MS);
	/* B was active last at 100 ms, A at 150 ms. */
	assert_true(pubd_reasm_next_deadline(r) == 30100 * MS);
	pubd_reasm_expire(r, 30100 * MS);
	assert_true(pubd_reasm_next_deadline(r) == 30150 * MS);
	pubd_reasm_expire(r, 30150 * MS);
	assert_true(pubd_reasm_next_deadline(r) == UINT64_MAX);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 1);
	assert_int_equal(sink.drops[PUB_DROP_REASM_TIMEOUT], 1);
	pubd_reasm_destroy(r);
}

/* ---- streams ---- */

static void reasm_restarted_source_is_a_new_stream(void **state)
{
	struct pubd_reasm *r = make(NULL);
	uint64_t s, src_new = SRC_A ^ 0x5555;

	for (s = 0; s < 100; s++)
		push_msg(r, s * MS, SRC_A, GRP_X, s, s % 3 ? 100 : 2500);
	/* The daemon restarts: new random source id, sequence from 0 again. */
	for (s = 0; s < 50; s++)
		push_msg(r, (200 + s) * MS, src_new, GRP_X, s, s % 3 ? 100 : 2500);
	assert_int_equal(sink.delivered, 150);
	pubd_reasm_expire(r, 5000 * MS);
	/* Old stream ages out with nothing to report. */
	pubd_reasm_expire(r, 40000 * MS);
	assert_int_equal(sink.msg_drops, 0);
	assert_int_equal(dgram_drops(), 0);
	pubd_reasm_destroy(r);
}

static void reasm_keeps_groups_and_sources_apart(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 0);
	push_frag(r, 0, SRC_A, GRP_Y, 0, 3000, 1024, 1);
	push_frag(r, 0, SRC_B, GRP_X, 0, 3000, 1024, 2);
	assert_int_equal(dgram_drops(), 0);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 1);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 2);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 3);
	assert_int_equal(sink.delivered, 1);
	assert_true(sink.log[0].src == SRC_A && sink.log[0].grp == GRP_X);
	pubd_reasm_destroy(r);
}

static void limit_streams(struct pubd_reasm_config *c)
{
	c->max_streams = 2;
}

static void reasm_max_streams_forgets_least_recent_stream(void **state)
{
	struct pubd_reasm *r = make(limit_streams);
	struct pubd_reasm_totals t;

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	push_msg(r, 0, SRC_A, GRP_X, 3, 10); /* 1, 2 missing */
	push_frag(r, 0, SRC_A, GRP_X, 4, 3000, 1024, 0);
	push_msg(r, 1, SRC_B, GRP_X, 0, 10);
	push_msg(r, 2, SRC_A, GRP_X, 5, 10); /* A is now the most recent */
	push_msg(r, 3, SRC_A, GRP_Y, 0, 10); /* B goes, silently: nothing pending */
	assert_int_equal(sink.msg_drops, 0);
	push_msg(r, 4, SRC_B, GRP_Y, 0, 10); /* A goes: its gap and partial */
	assert_int_equal(per_drops(SRC_A, GRP_X, PUB_DROP_SEQ_GAP), 2);
	assert_int_equal(per_drops(SRC_A, GRP_X, PUB_DROP_REASM_TIMEOUT), 1);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.streams, 2);
	assert_int_equal(t.inflight_msgs, 0);
	assert_int_equal(t.inflight_bytes, 0);
	pubd_reasm_destroy(r);
}

static void reasm_forgets_idle_stream(void **state)
{
	struct pubd_reasm *r = make(NULL);
	struct pubd_reasm_totals t;

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	push_msg(r, 20000 * MS, SRC_B, GRP_X, 0, 10);
	pubd_reasm_expire(r, 30000 * MS - 1);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.streams, 2);
	pubd_reasm_expire(r, 30000 * MS);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.streams, 1);
	assert_true(stream_info(r, SRC_B, GRP_X).source_id == SRC_B);
	/* Forgotten, not lost track of: A resumes where it was (1), so the
	 * messages it sent meanwhile that never arrived (1..4) are a gap. */
	push_msg(r, 30001 * MS, SRC_A, GRP_X, 5, 10);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).baseline, 1);
	pubd_reasm_expire(r, 31000 * MS);
	assert_int_equal(per_drops(SRC_A, GRP_X, PUB_DROP_SEQ_GAP), 4);
	assert_int_equal(sink.msg_drops, 4);
	assert_int_equal(sink.delivered, 3);
	pubd_reasm_destroy(r);
}

/* The over-count this guards against: a stream that pubd counts from zero
 * (it began while the group was joined), forgotten after 30 s of silence,
 * must not count its own delivered messages as lost when it speaks again. */
static void reasm_forgotten_from_zero_stream_resumes_without_false_gap(void **state)
{
	struct pubd_reasm *r = make(NULL);
	uint64_t seq;

	push_flags = PUBD_REASM_NEW_FROM_ZERO;
	for (seq = 0; seq < 10; seq++)
		push_msg(r, 0, SRC_A, GRP_X, seq, 10);
	pubd_reasm_expire(r, 30000 * MS);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).source_id, 0); /* forgotten */
	push_msg(r, 30001 * MS, SRC_A, GRP_X, 10, 3000);	     /* fragmented too */
	push_hb(r, 30001 * MS, SRC_A, GRP_X, 11);
	push_flags = 0;
	pubd_reasm_expire(r, 100000 * MS);
	assert_int_equal(sink.delivered, 11);
	assert_int_equal(sink.msg_drops, 0);
	pubd_reasm_destroy(r);
}

static void reasm_evicted_stream_resumes_where_it_was(void **state)
{
	struct pubd_reasm *r = make(limit_streams); /* 2 streams */

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	push_msg(r, 0, SRC_A, GRP_X, 1, 10);
	push_msg(r, 1, SRC_B, GRP_X, 0, 10);
	push_msg(r, 2, SRC_C, GRP_X, 0, 10); /* A goes (nothing pending) */
	push_msg(r, 3, SRC_A, GRP_X, 2, 10); /* B goes; A is back at 2 */
	assert_int_equal(stream_info(r, SRC_A, GRP_X).baseline, 2);
	push_msg(r, 4, SRC_B, GRP_X, 3, 10); /* C goes; B resumes at 1: 1, 2 missing */
	assert_int_equal(stream_info(r, SRC_B, GRP_X).baseline, 1);
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(per_drops(SRC_B, GRP_X, PUB_DROP_SEQ_GAP), 2);
	assert_int_equal(per_drops(SRC_A, GRP_X, PUB_DROP_SEQ_GAP), 0);
	assert_int_equal(sink.delivered, 6);
	pubd_reasm_destroy(r);
}

static void reasm_tombstones_are_bounded_by_max_streams(void **state)
{
	struct pubd_reasm *r = make(limit_streams); /* 2 streams, 2 tombstones */

	push_msg(r, 0, SRC_A, GRP_X, 4, 10);
	push_msg(r, 0, SRC_A, GRP_Y, 4, 10);
	push_msg(r, 0, SRC_B, GRP_X, 4, 10); /* tombstone A/X */
	push_msg(r, 0, SRC_B, GRP_Y, 4, 10); /* tombstone A/Y */
	push_msg(r, 0, SRC_C, GRP_X, 4, 10); /* tombstone B/X; A/X's goes */
	push_msg(r, 1, SRC_A, GRP_X, 9, 10); /* not remembered: a new baseline */
	assert_int_equal(stream_info(r, SRC_A, GRP_X).baseline, 9);
	push_msg(r, 1, SRC_A, GRP_Y, 5, 10); /* remembered */
	assert_int_equal(stream_info(r, SRC_A, GRP_Y).baseline, 5);
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(sink.msg_drops, 0);
	pubd_reasm_destroy(r);
}

static void reasm_forget_group_clears_its_tombstones(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	push_msg(r, 0, SRC_A, GRP_Y, 0, 10);
	pubd_reasm_expire(r, 30000 * MS);  /* both forgotten, both remembered */
	pubd_reasm_forget_group(r, GRP_X); /* X left: not listening meanwhile */
	push_msg(r, 40000 * MS, SRC_A, GRP_X, 7, 10);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).baseline, 7);
	push_msg(r, 40000 * MS, SRC_A, GRP_Y, 3, 10);
	assert_int_equal(stream_info(r, SRC_A, GRP_Y).baseline, 1);
	pubd_reasm_expire(r, 41000 * MS);
	assert_int_equal(per_drops(SRC_A, GRP_X, PUB_DROP_SEQ_GAP), 0);
	assert_int_equal(per_drops(SRC_A, GRP_Y, PUB_DROP_SEQ_GAP), 2);
	pubd_reasm_destroy(r);
}

static void reasm_forget_group_drops_its_streams_silently(void **state)
{
	struct pubd_reasm *r = make(NULL);
	struct pubd_reasm_totals t;

	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 0);
	push_msg(r, 0, SRC_B, GRP_X, 0, 10);
	push_msg(r, 0, SRC_B, GRP_X, 5, 10);
	push_frag(r, 0, SRC_A, GRP_Y, 0, 3000, 1024, 0);
	pubd_reasm_forget_group(r, GRP_X);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.streams, 1);
	assert_int_equal(t.inflight_msgs, 1);
	assert_int_equal(t.inflight_bytes, 3000);
	pubd_reasm_expire(r, 100000 * MS);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 0);
	assert_int_equal(per_drops(SRC_A, GRP_Y, PUB_DROP_REASM_TIMEOUT), 1);
	assert_int_equal(sink.msg_drops, 1);
	pubd_reasm_destroy(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reasm_delivers_single_fragment_straight_from_datagram),
		cmocka_unit_test(reasm_reassembles_fragments_in_any_order),
		cmocka_unit_test(reasm_drops_duplicate_fragment),
		cmocka_unit_test(reasm_drops_fragment_of_delivered_message_as_stale),
		cmocka_unit_test(reasm_first_datagram_sets_baseline),
		cmocka_unit_test(reasm_new_stream_from_zero_counts_lost_first_messages),
		cmocka_unit_test(reasm_from_zero_heartbeat_counts_unheard_messages),
		cmocka_unit_test(reasm_from_zero_leaves_known_streams_alone),
		cmocka_unit_test(reasm_began_since_heartbeat_rebases_a_stream_heard_late),
		cmocka_unit_test(reasm_began_since_after_a_delivery_counts_the_first_as_gaps),
		cmocka_unit_test(reasm_began_since_leaves_settled_streams_alone),
		cmocka_unit_test(reasm_counts_gap_when_range_deadline_passes),
		cmocka_unit_test(reasm_accepts_late_message_in_missing_range),
		cmocka_unit_test(reasm_times_out_incomplete_message),
		cmocka_unit_test(reasm_heartbeat_detects_tail_loss),
		cmocka_unit_test(reasm_heartbeat_of_new_stream_sets_baseline),
		cmocka_unit_test(reasm_counts_huge_jump_as_one_range),
		cmocka_unit_test(reasm_drops_oldest_range_beyond_max_missing_ranges),
		cmocka_unit_test(reasm_next_deadline_is_the_earliest_pending),
		cmocka_unit_test(reasm_restarted_source_is_a_new_stream),
		cmocka_unit_test(reasm_keeps_groups_and_sources_apart),
		cmocka_unit_test(reasm_max_streams_forgets_least_recent_stream),
		cmocka_unit_test(reasm_forgets_idle_stream),
		cmocka_unit_test(reasm_forgotten_from_zero_stream_resumes_without_false_gap),
		cmocka_unit_test(reasm_evicted_stream_resumes_where_it_was),
		cmocka_unit_test(reasm_tombstones_are_bounded_by_max_streams),
		cmocka_unit_test(reasm_forget_group_clears_its_tombstones),
		cmocka_unit_test(reasm_forget_group_drops_its_streams_silently),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
