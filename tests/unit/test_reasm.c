/* SPDX-License-Identifier: MIT */
/*
 * Reassembly: order, loss, duplicates, deadlines, limits, streams, and the
 * accounting identity under random loss, reordering and duplication.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <malloc.h>

#include "frag.h"
#include "reasm.h"

#define MS    1000000ull
#define SRC_A 0xa1a1a1a1a1a1a1a1ull
#define SRC_B 0xb2b2b2b2b2b2b2b2ull
#define SRC_C 0xc3c3c3c3c3c3c3c3ull
#define GRP_X 0x1111ull
#define GRP_Y 0x2222ull

/* ---- what the engine reported ---- */

struct event {
	uint64_t src, grp, seq;
	size_t len;
	bool owned;
	const uint8_t *data;
};

struct sink {
	uint64_t drops[PUB_DROP__COUNT];
	uint64_t msg_drops;
	uint64_t delivered;
	uint64_t bad_content;
	struct event log[64];
	size_t nlog;
	/* drops per (src, grp) for the tests that tell streams apart */
	struct {
		uint64_t src, grp, n[PUB_DROP__COUNT];
	} per[8];
	size_t nper;
};

static struct sink sink;

static uint8_t pattern(uint64_t seq, size_t off)
{
	return (uint8_t)(seq * 31 + off * 7 + (off >> 9));
}

static void on_deliver(void *ctx, uint64_t src, uint64_t grp, uint64_t seq, const uint8_t *data, size_t len,
		       struct pubd_msgbuf *owned)
{
	struct sink *k = ctx;
	size_t i;

	for (i = 0; i < len; i++) {
		if (data[i] != pattern(seq, i)) {
			k->bad_content++;
			break;
		}
	}
	if (owned) {
		if (owned->refs != 1 || owned->data != data || owned->len != len)
			k->bad_content++;
		pubd_msgbuf_put(owned);
	}
	if (k->nlog < 64)
		k->log[k->nlog++] = (struct event){src, grp, seq, len, owned != NULL, data};
	k->delivered++;
}

static void on_drop(void *ctx, uint64_t src, uint64_t grp, enum pub_drop_reason why, uint64_t n)
{
	struct sink *k = ctx;
	size_t i;

	k->drops[why] += n;
	if (pub_drop_reason_kind(why) == PUB_DROP_KIND_MSG)
		k->msg_drops += n;
	for (i = 0; i < k->nper; i++)
		if (k->per[i].src == src && k->per[i].grp == grp)
			break;
	if (i == k->nper && k->nper < 8) {
		k->per[i].src = src;
		k->per[i].grp = grp;
		k->nper++;
	}
	if (i < 8)
		k->per[i].n[why] += n;
}

static const struct pubd_reasm_ops ops = {.deliver = on_deliver, .drop = on_drop};

static uint64_t per_drops(uint64_t src, uint64_t grp, enum pub_drop_reason why)
{
	size_t i;

	for (i = 0; i < sink.nper; i++)
		if (sink.per[i].src == src && sink.per[i].grp == grp)
			return sink.per[i].n[why];
	return 0;
}

static uint64_t dgram_drops(void)
{
	return sink.drops[PUB_DROP_MALFORMED] + sink.drops[PUB_DROP_DUPLICATE] + sink.drops[PUB_DROP_STALE];
}

static struct pubd_reasm *make(void (*tweak)(struct pubd_reasm_config *c))
{
	struct pubd_reasm_config c;
	struct pubd_reasm *r;

	memset(&sink, 0, sizeof(sink));
	pubd_reasm_config_defaults(&c);
	if (tweak)
		tweak(&c);
	r = pubd_reasm_create(&c, &ops, &sink);
	assert_non_null(r);
	return r;
}

/* ---- feeding ---- */

static uint8_t dgram[PUBD_WIRE_HDR_LEN + 9000];

/* Fragment idx of message (src, grp, seq) of len bytes cut for mtu, through
 * the encoder and the decoder like a received datagram. */
/* Flags for pubd_reasm_push_flags in push_frag and push_hb; tests that set
 * them reset them to 0 before they return. */
static unsigned push_flags;

static void push_frag(struct pubd_reasm *r, uint64_t now, uint64_t src, uint64_t grp, uint64_t seq, size_t len,
		      size_t mtu, uint32_t idx)
{
	struct pubd_wire_hdr tmpl = {.source_id = src, .group_id = grp, .msg_seq = seq}, h, out;
	struct pubd_frag_plan p;
	const uint8_t *pl;
	size_t off, flen, pll, i;

	assert_int_equal(pubd_frag_plan(&p, len, mtu, SIZE_MAX), 0);
	assert_true(idx < p.frag_count);
	pubd_frag_get(&p, &tmpl, idx, &h, &off, &flen);
	pubd_wire_encode(&h, dgram);
	for (i = 0; i < flen; i++)
		dgram[PUBD_WIRE_HDR_LEN + i] = pattern(seq, off + i);
	assert_int_equal(pubd_wire_decode(dgram, PUBD_WIRE_HDR_LEN + flen, &out, &pl, &pll), 0);
	pubd_reasm_push_flags(r, now, &out, pl, pll, push_flags);
}

static uint32_t nfrags(size_t len, size_t mtu)
{
	struct pubd_frag_plan p;

	assert_int_equal(pubd_frag_plan(&p, len, mtu, SIZE_MAX), 0);
	return p.frag_count;
}

static void push_msg(struct pubd_reasm *r, uint64_t now, uint64_t src, uint64_t grp, uint64_t seq, size_t len)
{
	uint32_t i, n = nfrags(len, 1024);

	for (i = 0; i < n; i++)
		push_frag(r, now, src, grp, seq, len, 1024, i);
}

static void push_hb(struct pubd_reasm *r, uint64_t now, uint64_t src, uint64_t grp, uint64_t next_seq)
{
	struct pubd_wire_hdr h = {
		.flags = PUBD_WIRE_F_HEARTBEAT, .source_id = src, .group_id = grp, .msg_seq = next_seq};

	pubd_reasm_push_flags(r, now, &h, NULL, 0, push_flags);
}

struct infos {
	struct pubd_reasm_stream_info s[16];
	size_t n;
};

static void collect(void *ctx, const struct pubd_reasm_stream_info *s)
{
	struct infos *in = ctx;

	if (in->n < 16)
		in->s[in->n++] = *s;
}

static struct pubd_reasm_stream_info stream_info(struct pubd_reasm *r, uint64_t src, uint64_t grp)
{
	struct infos in = {.n = 0};
	struct pubd_reasm_stream_info none = {0};
	size_t i;

	pubd_reasm_foreach(r, collect, &in);
	for (i = 0; i < in.n; i++)
		if (in.s[i].source_id == src && in.s[i].group_id == grp)
			return in.s[i];
	return none;
}

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

/* ---- values a peer sends ---- */

/* A forged datagram or heartbeat far ahead of a known stream is malformed,
 * not 2^63 lost messages, and the real stream goes on undisturbed. */
static void reasm_refuses_implausible_sequence_jump(void **state)
{
	struct pubd_reasm *r = make(NULL);
	uint64_t t = 5 * MS;

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	push_hb(r, t, SRC_A, GRP_X, 1ull << 62);
	push_msg(r, t, SRC_A, GRP_X, (1ull << 63) - 5, 10);
	push_frag(r, t, SRC_A, GRP_X, UINT64_MAX - 1, 3000, 1024, 0);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED], 3);
	assert_true(stream_info(r, SRC_A, GRP_X).next_seq == 1);
	push_msg(r, t, SRC_A, GRP_X, 1, 10);
	/* A real burst of loss within the window still counts. */
	push_msg(r, t, SRC_A, GRP_X, 1002, 10);
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 1000);
	assert_int_equal(sink.delivered, 3);
	pubd_reasm_destroy(r);
}

/* A new stream "from zero" announcing an absurd sequence starts there. */
static void reasm_new_stream_from_zero_is_bounded(void **state)
{
	struct pubd_reasm *r = make(NULL);

	push_flags = PUBD_REASM_NEW_FROM_ZERO;
	push_hb(r, 0, SRC_A, GRP_X, 1ull << 62);
	push_msg(r, 0, SRC_B, GRP_X, 7, 10);
	push_flags = 0;
	assert_true(stream_info(r, SRC_A, GRP_X).baseline == 1ull << 62);
	assert_int_equal(stream_info(r, SRC_B, GRP_X).baseline, 0);
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 7);
	pubd_reasm_destroy(r);
}

/* Fragment geometry a peer controls: zero or 2^32-1 fragments, 4 GiB
 * lengths, offsets past the end, and an overlapping fragment with other
 * bytes: each is counted, none is written, the real message is intact. */
static void reasm_hostile_fragment_geometry(void **state)
{
	struct pubd_reasm *r = make(NULL);
	static uint8_t junk[1024];
	struct pubd_wire_hdr h = {.source_id = SRC_A, .group_id = GRP_X, .msg_seq = 0};
	uint64_t before;

	memset(junk, 0xee, sizeof(junk));
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 0); /* real: 976-byte unit */
	h.msg_len = 3000, h.frag_count = 0;
	pubd_reasm_push(r, 0, &h, junk, 976);
	h.frag_count = UINT32_MAX, h.frag_index = 1, h.frag_offset = 976;
	pubd_reasm_push(r, 0, &h, junk, 976);
	h.msg_len = UINT32_MAX, h.frag_count = 3;
	pubd_reasm_push(r, 0, &h, junk, 976);
	h.msg_len = 3000, h.frag_offset = 2990;
	pubd_reasm_push(r, 0, &h, junk, 976);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED] + sink.drops[PUB_DROP_TOO_LARGE], 4);
	/* Same fragment again with other bytes: a duplicate, not a rewrite. */
	h.msg_len = 3000, h.frag_count = 4, h.frag_index = 0, h.frag_offset = 0;
	before = sink.drops[PUB_DROP_MALFORMED] + sink.drops[PUB_DROP_DUPLICATE];
	pubd_reasm_push(r, 0, &h, junk, 976);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED] + sink.drops[PUB_DROP_DUPLICATE], before + 1);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 1);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 2);
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 3);
	assert_int_equal(sink.delivered, 1);
	assert_int_equal(sink.bad_content, 0);
	assert_int_equal(sink.msg_drops - sink.drops[PUB_DROP_TOO_LARGE], 0);
	pubd_reasm_destroy(r);
}

static void streams_16(struct pubd_reasm_config *c)
{
	c->max_streams = 16;
}

/* 10,000 invented source ids (first fragments that never complete) do not
 * push out the streams that deliver, nor their tombstones. */
static void reasm_flood_of_new_sources_spares_established_streams(void **state)
{
	struct pubd_reasm *r = make(streams_16);
	uint64_t src, k;

	for (k = 0; k < 4; k++)
		push_msg(r, 0, SRC_A + k, GRP_X, 0, 10);
	/* B+4 delivered, then went quiet and was forgotten: a tombstone. */
	push_msg(r, 0, SRC_B, GRP_Y, 0, 10);
	pubd_reasm_expire(r, 30000 * MS);
	for (k = 0; k < 4; k++)
		push_msg(r, 30000 * MS, SRC_A + k, GRP_X, 1, 10);
	for (src = 1; src <= 10000; src++)
		push_frag(r, 30000 * MS, src, GRP_X, 0, 3000, 1024, 0);
	for (k = 0; k < 4; k++) {
		assert_int_equal(stream_info(r, SRC_A + k, GRP_X).next_seq, 2);
		push_msg(r, 30001 * MS, SRC_A + k, GRP_X, 2, 10);
	}
	push_msg(r, 30001 * MS, SRC_B, GRP_Y, 3, 10); /* resumes at 1: 1, 2 lost */
	assert_int_equal(stream_info(r, SRC_B, GRP_Y).baseline, 1);
	pubd_reasm_expire(r, 30002 * MS);
	for (k = 0; k < 4; k++)
		assert_int_equal(per_drops(SRC_A + k, GRP_X, PUB_DROP_SEQ_GAP), 0);
	assert_int_equal(sink.delivered, 5 + 4 + 4 + 1);
	pubd_reasm_destroy(r);
}

/* ---- memory held is what the budget charges ---- */

static void budget_64k(struct pubd_reasm_config *c)
{
	c->budget_bytes = 64 << 10;
}

/* Heap in use (glibc's count; 0 under a sanitizer's allocator, where only
 * the engine's own count is checked). */
static size_t heap_used(void)
{
	return mallinfo2().uordblks;
}

/*
 * 262,144 first fragments of 2-byte messages (64 per stream, 4096 streams)
 * under a 64 KiB budget: the partials' structures are charged, so what is
 * held stays near the budget plus the streams themselves (it was 14 MB
 * when only message bytes were charged).
 */
static void reasm_budget_bounds_memory_of_tiny_partials(void **state)
{
	struct pubd_reasm *r = make(budget_64k);
	struct pubd_reasm_totals t;
	size_t before = heap_used(), after, bound;
	uint64_t src, seq;

	for (src = 1; src <= 4096; src++)
		for (seq = 0; seq < 64; seq++)
			push_frag(r, 0, src, GRP_X, seq, 2, PUBD_WIRE_HDR_LEN + 1, 0);
	after = heap_used();
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.streams, 4096);
	assert_true(t.held_bytes <= 64 << 10);
	/* Every message is still accounted for, held or dropped for budget. */
	assert_int_equal(t.inflight_msgs + sink.drops[PUB_DROP_REASM_BUDGET], 4096 * 64);
	/* budget + the streams (with their table) + slack for the tables'
	 * bucket arrays. */
	bound = (64 << 10) + t.stream_bytes + (1 << 20);
	printf("heap held for 262144 tiny partials under a 64 KiB budget: %zu bytes (bound %zu)\n",
	       after > before ? after - before : 0, bound);
	assert_true(after <= before || after - before <= bound);
	pubd_reasm_destroy(r);
}

/* Forged heartbeats opening missing ranges on many streams: the ranges
 * are charged too, and what they give up is counted as gaps. */
static void reasm_budget_bounds_missing_ranges(void **state)
{
	struct pubd_reasm *r = make(budget_64k);
	struct pubd_reasm_totals t;
	size_t before = heap_used(), after;
	uint64_t src, k;

	for (src = 1; src <= 4096; src++)
		for (k = 1; k <= 64; k++)
			push_hb(r, 0, src, GRP_X, 2 * k);
	after = heap_used();
	pubd_reasm_totals(r, &t);
	assert_true(t.held_bytes <= 64 << 10);
	printf("heap held for 258048 forged ranges under a 64 KiB budget: %zu bytes\n",
	       after > before ? after - before : 0);
	assert_true(after <= before || after - before <= (64 << 10) + t.stream_bytes + (1 << 20));
	/* Each stream: baseline 2, then 63 holes of two messages, all counted
	 * once (given up for room now, or at their deadline). */
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 4096 * 63 * 2);
	pubd_reasm_destroy(r);
}

/* ---- limits ---- */

static void small_budget(struct pubd_reasm_config *c)
{
	c->budget_bytes = 100000;
}

static void reasm_budget_evicts_oldest_partials_until_new_one_fits(void **state)
{
	struct pubd_reasm *r = make(small_budget);
	struct pubd_reasm_totals t;

	push_frag(r, 0, SRC_A, GRP_X, 0, 40000, 1024, 0);
	push_frag(r, 0, SRC_B, GRP_X, 0, 40000, 1024, 0);
	push_frag(r, 0, SRC_A, GRP_X, 1, 15000, 1024, 0);
	assert_int_equal(sink.drops[PUB_DROP_REASM_BUDGET], 0);
	/* 95000 held; 60000 more needs the two oldest (A0, B0) gone. */
	push_frag(r, 0, SRC_A, GRP_Y, 0, 60000, 1024, 0);
	assert_int_equal(per_drops(SRC_A, GRP_X, PUB_DROP_REASM_BUDGET), 1);
	assert_int_equal(per_drops(SRC_B, GRP_X, PUB_DROP_REASM_BUDGET), 1);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.inflight_msgs, 2);
	assert_int_equal(t.inflight_bytes, 75000);
	/* Evicted ones are resolved: their fragments are stale now. */
	push_frag(r, 0, SRC_A, GRP_X, 0, 40000, 1024, 1);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 1);
	/* The survivors complete. */
	push_msg(r, 0, SRC_A, GRP_X, 1, 15000);
	push_msg(r, 0, SRC_A, GRP_Y, 0, 60000);
	assert_int_equal(sink.delivered, 2);
	assert_int_equal(sink.bad_content, 0);
	pubd_reasm_destroy(r);
}

static void reasm_budget_drops_message_larger_than_whole_budget(void **state)
{
	struct pubd_reasm *r = make(small_budget);

	push_frag(r, 0, SRC_A, GRP_X, 0, 50000, 1024, 0);
	push_msg(r, 0, SRC_A, GRP_X, 1, 100001);
	/* Counted once, the partial already held is left alone. */
	assert_int_equal(sink.drops[PUB_DROP_REASM_BUDGET], 1);
	assert_int_equal(sink.drops[PUB_DROP_STALE], nfrags(100001, 1024) - 1);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).inflight, 1);
	pubd_reasm_destroy(r);
}

static void small_inflight(struct pubd_reasm_config *c)
{
	c->max_inflight_per_source = 3;
}

static void reasm_inflight_limit_evicts_oldest_partial_of_stream(void **state)
{
	struct pubd_reasm *r = make(small_inflight);
	uint64_t s;

	for (s = 0; s < 3; s++)
		push_frag(r, 0, SRC_A, GRP_X, s, 3000, 1024, 0);
	push_frag(r, 0, SRC_B, GRP_X, 0, 3000, 1024, 0);
	assert_int_equal(sink.msg_drops, 0);
	push_frag(r, 0, SRC_A, GRP_X, 3, 3000, 1024, 0);
	assert_int_equal(per_drops(SRC_A, GRP_X, PUB_DROP_REASM_INFLIGHT), 1);
	assert_int_equal(stream_info(r, SRC_A, GRP_X).inflight, 3);
	assert_int_equal(stream_info(r, SRC_B, GRP_X).inflight, 1);
	/* seq 0 was the one evicted. */
	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 1);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 1);
	for (s = 1; s < 4; s++)
		push_msg(r, 0, SRC_A, GRP_X, s, 3000);
	assert_int_equal(sink.delivered, 3);
	pubd_reasm_destroy(r);
}

static void small_max_message(struct pubd_reasm_config *c)
{
	c->max_message_size = 2000;
}

static void reasm_drops_too_large_message_once(void **state)
{
	struct pubd_reasm *r = make(small_max_message);

	push_msg(r, 0, SRC_A, GRP_X, 0, 3000);
	push_msg(r, 0, SRC_A, GRP_X, 1, 2000);
	assert_int_equal(sink.drops[PUB_DROP_TOO_LARGE], 1);
	assert_int_equal(sink.drops[PUB_DROP_STALE], nfrags(3000, 1024) - 1);
	assert_int_equal(sink.delivered, 1);
	pubd_reasm_destroy(r);
}

static void reasm_set_config_applies_to_new_decisions(void **state)
{
	struct pubd_reasm *r = make(NULL);
	struct pubd_reasm_config c;

	pubd_reasm_config_defaults(&c);
	c.max_message_size = 100;
	pubd_reasm_set_config(r, &c);
	push_msg(r, 0, SRC_A, GRP_X, 0, 101);
	assert_int_equal(sink.drops[PUB_DROP_TOO_LARGE], 1);
	pubd_reasm_destroy(r);
}

/* ---- malformed ---- */

static void reasm_drops_fragment_disagreeing_with_partial_as_malformed(void **state)
{
	struct pubd_reasm *r = make(NULL);
	struct pubd_wire_hdr h = {.source_id = SRC_A, .group_id = GRP_X, .msg_seq = 0};
	static uint8_t zeros[1000];

	push_frag(r, 0, SRC_A, GRP_X, 0, 3000, 1024, 0);
	/* Another msg_len (still 4 fragments). */
	h.msg_len = 3100;
	h.frag_count = 4;
	h.frag_index = 1;
	h.frag_offset = 976;
	pubd_reasm_push(r, 0, &h, zeros, 976);
	/* Same length, another fragment count. */
	h.msg_len = 3000;
	h.frag_count = 5;
	h.frag_offset = 700;
	pubd_reasm_push(r, 0, &h, zeros, 700);
	/* Same length and count, another unit (800 * 3 + 600). */
	h.frag_count = 4;
	h.frag_offset = 800;
	pubd_reasm_push(r, 0, &h, zeros, 800);
	/* A single-fragment message claiming a partial's sequence. */
	h.msg_len = 10;
	h.frag_count = 1;
	h.frag_index = 0;
	h.frag_offset = 0;
	pubd_reasm_push(r, 0, &h, zeros, 10);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED], 4);
	/* None of them wrote into the message. */
	push_msg(r, 0, SRC_A, GRP_X, 0, 3000);
	assert_int_equal(sink.delivered, 1);
	assert_int_equal(sink.bad_content, 0);
	pubd_reasm_destroy(r);
}

static void reasm_drops_header_that_fails_wire_checks(void **state)
{
	struct pubd_reasm *r = make(NULL);
	struct pubd_wire_hdr h = {.source_id = SRC_A, .group_id = GRP_X, .msg_len = 3000, .frag_count = 4};
	static uint8_t zeros[2000];
	struct pubd_reasm_totals t;

	pubd_reasm_push(r, 0, &h, zeros, 2000); /* beyond the layout */
	h.frag_offset = 2500;
	pubd_reasm_push(r, 0, &h, zeros, 976); /* beyond the message */
	h = (struct pubd_wire_hdr){.flags = PUBD_WIRE_F_HEARTBEAT, .source_id = SRC_A, .frag_count = 1};
	pubd_reasm_push(r, 0, &h, NULL, 0);
	h = (struct pubd_wire_hdr){.source_id = SRC_A, .msg_seq = UINT64_MAX, .frag_count = 1};
	pubd_reasm_push(r, 0, &h, NULL, 0);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED], 4);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.streams, 0);
	pubd_reasm_destroy(r);
}

/* ---- memory ---- */

static void reasm_destroy_frees_partials_ranges_and_streams(void **state)
{
	struct pubd_reasm *r = make(NULL);
	uint64_t s;

	for (s = 0; s < 200; s++) {
		push_frag(r, s, s, GRP_X, 0, 5000, 1024, 0);
		push_msg(r, s, s, GRP_Y, 0, 10);
		push_msg(r, s, s, GRP_Y, 10, 10);
	}
	push_hb(r, 0, SRC_A, GRP_X, 7);
	/* Silent: no callbacks from destroy; the sanitizer build finds leaks. */
	memset(&sink, 0, sizeof(sink));
	pubd_reasm_destroy(r);
	assert_int_equal(sink.msg_drops + sink.delivered, 0);
	pubd_reasm_destroy(NULL);
}

static void reasm_foreach_and_totals_report_state(void **state)
{
	struct pubd_reasm *r = make(NULL);
	struct pubd_reasm_stream_info s;
	struct pubd_reasm_totals t;
	struct infos in = {.n = 0};

	push_msg(r, 7, SRC_A, GRP_X, 10, 10);
	push_frag(r, 8, SRC_A, GRP_X, 14, 3000, 1024, 1);
	push_frag(r, 9, SRC_B, GRP_Y, 3, 5000, 1024, 1);
	pubd_reasm_foreach(r, collect, &in);
	assert_int_equal(in.n, 2);
	s = stream_info(r, SRC_A, GRP_X);
	assert_int_equal(s.baseline, 10);
	assert_int_equal(s.next_seq, 15);
	assert_int_equal(s.inflight, 1);
	assert_int_equal(s.inflight_bytes, 3000);
	assert_int_equal(s.missing, 3);
	assert_int_equal(s.last_active_ns, 8);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.streams, 2);
	assert_int_equal(t.inflight_msgs, 2);
	assert_int_equal(t.inflight_bytes, 8000);
	pubd_reasm_destroy(r);
}

/* ---- the property: random loss, reordering and duplication ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Byte off of message (stream, seq): random-looking, recomputable. */
static void body(uint32_t stream, uint64_t seq, size_t off, uint8_t *out, size_t len)
{
	uint64_t key = mix(((uint64_t)stream << 48) ^ seq), w = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		size_t o = off + i;

		if (i == 0 || o % 8 == 0)
			w = mix(key + o / 8);
		out[i] = (uint8_t)(w >> (o % 8 * 8));
	}
}

struct pmsg {
	uint32_t len;
	uint32_t frags;
	uint32_t lost;
	uint32_t delivered;
};

struct pstream {
	uint64_t src, grp;
	size_t mtu;
	uint64_t nmsgs;
	struct pmsg *m;
	uint64_t delivered, msg_drops, dgram_drops;
	uint64_t drops[PUB_DROP__COUNT];
	uint64_t first_fed, max_fed;
	bool fed;
};

struct pdgram {
	uint64_t key; /* feed order */
	uint32_t stream;
	uint32_t frag;
	uint64_t seq;
};

struct prun {
	const char *name;
	unsigned nstreams;
	unsigned nmsgs;
	unsigned loss_pm, dup_pm, delay_pm; /* per mille */
	unsigned window, delay;		    /* reordering, in datagrams */
	bool heartbeats;		    /* reliable heartbeats at start and end */
	bool exact;			    /* no evictions expected: delivered == complete */
	size_t budget;
	uint32_t inflight;
	uint64_t timeout_ns;
	uint64_t seed;
};

struct pctx {
	struct pstream *st;
	unsigned n;
	uint8_t *scratch;
	uint64_t bad;
};

static struct pstream *pfind(struct pctx *c, uint64_t src, uint64_t grp)
{
	unsigned i;

	for (i = 0; i < c->n; i++)
		if (c->st[i].src == src && c->st[i].grp == grp)
			return &c->st[i];
	return NULL;
}

static void p_deliver(void *ctx, uint64_t src, uint64_t grp, uint64_t seq, const uint8_t *data, size_t len,
		      struct pubd_msgbuf *owned)
{
	struct pctx *c = ctx;
	struct pstream *s = pfind(c, src, grp);

	if (!s || seq >= s->nmsgs || s->m[seq].delivered || len != s->m[seq].len) {
		c->bad++;
	} else {
		body((uint32_t)(s - c->st), seq, 0, c->scratch, len);
		if (memcmp(c->scratch, data, len))
			c->bad++;
		s->m[seq].delivered = 1;
		s->delivered++;
	}
	pubd_msgbuf_put(owned);
}

static void p_drop(void *ctx, uint64_t src, uint64_t grp, enum pub_drop_reason why, uint64_t n)
{
	struct pctx *c = ctx;
	struct pstream *s = pfind(c, src, grp);

	if (!s) {
		c->bad++;
		return;
	}
	s->drops[why] += n;
	if (pub_drop_reason_kind(why) == PUB_DROP_KIND_MSG)
		s->msg_drops += n;
	else
		s->dgram_drops += n;
}

static int cmp_dgram(const void *a, const void *b)
{
	const struct pdgram *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static uint32_t random_size(void)
{
	uint64_t k = rnd() % 100;

	if (k < 15)
		return (uint32_t)(rnd() % 65);
	if (k < 45)
		return (uint32_t)(rnd() % 4097);
	if (k < 80)
		return (uint32_t)(rnd() % 65537);
	return (uint32_t)(rnd() % (300 * 1024 + 1));
}

static void feed_dgram(struct pubd_reasm *r, struct pctx *c, uint64_t now, const struct pdgram *d, uint8_t *dg)
{
	struct pstream *s = &c->st[d->stream];
	struct pubd_wire_hdr tmpl = {.source_id = s->src, .group_id = s->grp, .msg_seq = d->seq}, h, out;
	struct pubd_frag_plan p;
	const uint8_t *pl;
	size_t off, len, pll;

	assert_int_equal(pubd_frag_plan(&p, s->m[d->seq].len, s->mtu, SIZE_MAX), 0);
	pubd_frag_get(&p, &tmpl, d->frag, &h, &off, &len);
	pubd_wire_encode(&h, dg);
	body(d->stream, d->seq, off, dg + PUBD_WIRE_HDR_LEN, len);
	assert_int_equal(pubd_wire_decode(dg, PUBD_WIRE_HDR_LEN + len, &out, &pl, &pll), 0);
	if (!s->fed) {
		s->fed = true;
		s->first_fed = d->seq;
	}
	if (d->seq > s->max_fed)
		s->max_fed = d->seq;
	pubd_reasm_push(r, now, &out, pl, pll);
}

static void run_property(const struct prun *pr)
{
	static const size_t mtus[] = {1024, 4096, 2048, 9000};
	const struct pubd_reasm_ops pops = {.deliver = p_deliver, .drop = p_drop};
	struct pubd_reasm_config cfg;
	struct pubd_reasm_totals t;
	struct pctx c = {0};
	struct pdgram *dg = NULL;
	size_t ndg = 0, cap = 0, i, dups = 0;
	struct pubd_reasm *r;
	uint64_t now = 0, step = 1000;
	uint8_t *buf;
	unsigned k, m;

	rng_state = pr->seed;
	c.n = pr->nstreams;
	c.st = calloc(c.n, sizeof(*c.st));
	c.scratch = malloc(300 * 1024 + 1);
	buf = malloc(PUBD_WIRE_HDR_LEN + 9000);
	assert_true(c.st && c.scratch && buf);
	for (k = 0; k < c.n; k++) {
		/* Streams 0 and 1 share a group (two sources); the last one is
		 * stream 0's source restarted with a new id. */
		c.st[k].src = 0x5000 + k;
		c.st[k].grp = k == c.n - 1 ? 0x6000 : 0x6000 + k / 2;
		c.st[k].mtu = mtus[k % 4];
		c.st[k].m = calloc(pr->nmsgs, sizeof(*c.st[k].m));
		assert_non_null(c.st[k].m);
	}

	/* Messages in send order, interleaved across streams; each fragment
	 * lost, sent once, or sent twice; its feed position jittered. */
	for (m = 0; m < pr->nmsgs; m++) {
		/* Halfway, stream 0's source restarts as the last one. */
		k = (unsigned)(rnd() % c.n);
		if (k == c.n - 1 && m < pr->nmsgs / 2)
			k = 0;
		else if (k == 0 && m >= pr->nmsgs / 2)
			k = c.n - 1;
		struct pstream *s = &c.st[k];
		uint64_t seq = s->nmsgs++;
		struct pmsg *pm = &s->m[seq];
		uint32_t f;

		pm->len = random_size();
		pm->frags = nfrags(pm->len, s->mtu);
		for (f = 0; f < pm->frags; f++) {
			unsigned copies = 1, j;

			if (rnd() % 1000 < pr->loss_pm) {
				pm->lost++;
				continue;
			}
			if (rnd() % 1000 < pr->dup_pm) {
				copies = 2;
				dups++;
			}
			for (j = 0; j < copies; j++) {
				uint64_t pos = (uint64_t)ndg * 16 + rnd() % (pr->window * 16 + 1);

				if (rnd() % 1000 < pr->delay_pm)
					pos += rnd() % (pr->delay * 16 + 1);
				if (ndg == cap) {
					cap = cap ? cap * 2 : 4096;
					dg = realloc(dg, cap * sizeof(*dg));
					assert_non_null(dg);
				}
				dg[ndg++] = (struct pdgram){.key = pos, .stream = k, .frag = f, .seq = seq};
			}
		}
	}
	qsort(dg, ndg, sizeof(*dg), cmp_dgram);

	pubd_reasm_config_defaults(&cfg);
	cfg.budget_bytes = pr->budget;
	cfg.max_inflight_per_source = pr->inflight;
	cfg.timeout_ns = pr->timeout_ns;
	r = pubd_reasm_create(&cfg, &pops, &c);
	assert_non_null(r);

	if (pr->heartbeats)
		for (k = 0; k < c.n; k++) {
			struct pubd_wire_hdr hb = {.flags = PUBD_WIRE_F_HEARTBEAT,
						   .source_id = c.st[k].src,
						   .group_id = c.st[k].grp,
						   .msg_seq = 0};

			pubd_reasm_push(r, now, &hb, NULL, 0);
		}
	for (i = 0; i < ndg; i++) {
		now += step;
		feed_dgram(r, &c, now, &dg[i], buf);
		/* What the loop's timerfd does. */
		if (pubd_reasm_next_deadline(r) <= now) {
			pubd_reasm_expire(r, now);
			assert_true(pubd_reasm_next_deadline(r) > now);
		}
	}
	if (pr->heartbeats)
		for (k = 0; k < c.n; k++) {
			struct pubd_wire_hdr hb = {.flags = PUBD_WIRE_F_HEARTBEAT,
						   .source_id = c.st[k].src,
						   .group_id = c.st[k].grp,
						   .msg_seq = c.st[k].nmsgs};

			pubd_reasm_push(r, now, &hb, NULL, 0);
		}
	now += pr->timeout_ns;
	pubd_reasm_expire(r, now);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.inflight_msgs, 0);
	assert_int_equal(t.inflight_bytes, 0);
	assert_int_equal(t.streams, c.n);
	assert_int_equal(c.bad, 0);

	for (k = 0; k < c.n; k++) {
		struct pstream *s = &c.st[k];
		uint64_t want, complete = 0, partial = 0, none = 0, seq;

		for (seq = 0; seq < s->nmsgs; seq++) {
			if (s->m[seq].lost == 0)
				complete++;
			else if (s->m[seq].lost < s->m[seq].frags)
				partial++;
			else
				none++;
			/* Only complete messages are ever delivered. */
			if (s->m[seq].delivered)
				assert_int_equal(s->m[seq].lost, 0);
		}
		if (pr->heartbeats)
			want = s->nmsgs;
		else
			want = s->fed ? s->max_fed - s->first_fed + 1 : 0;
		if (s->delivered + s->msg_drops != want)
			fail_msg("%s: stream %u: delivered %" PRIu64 " + dropped %" PRIu64 " != %" PRIu64, pr->name, k,
				 s->delivered, s->msg_drops, want);
		if (pr->exact) {
			assert_int_equal(s->delivered, complete);
			assert_int_equal(s->drops[PUB_DROP_REASM_TIMEOUT], partial);
			assert_int_equal(s->drops[PUB_DROP_SEQ_GAP], none);
		}
		assert_int_equal(s->drops[PUB_DROP_MALFORMED], 0);
	}
	if (pr->exact) {
		uint64_t dd = 0;

		for (k = 0; k < c.n; k++)
			dd += c.st[k].dgram_drops;
		assert_int_equal(dd, dups);
	}
	/* Idle streams age out with nothing left to report. */
	pubd_reasm_expire(r, UINT64_MAX);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.streams, 0);
	pubd_reasm_destroy(r);

	for (k = 0; k < c.n; k++)
		free(c.st[k].m);
	free(c.st);
	free(c.scratch);
	free(buf);
	free(dg);
}

static void reasm_property_exactly_complete_messages_delivered(void **state)
{
	/* Reordering within a window well inside the timeout, generous
	 * limits: exactly the complete messages come out, byte for byte. */
	const struct prun pr = {
		.name = "exact",
		.nstreams = 7,
		.nmsgs = 3000,
		.loss_pm = 3,
		.dup_pm = 20,
		.window = 300,
		.budget = (size_t)64 << 20,
		.inflight = 64,
		.timeout_ns = 20 * MS,
		.heartbeats = true,
		.exact = true,
		.seed = 1,
	};

	run_property(&pr);
}

static void reasm_property_accounts_every_message_under_pressure(void **state)
{
	/* Tight budget and inflight limit, long delays past the timeout. */
	const struct prun pr = {
		.name = "pressure",
		.nstreams = 5,
		.nmsgs = 2500,
		.loss_pm = 10,
		.dup_pm = 30,
		.delay_pm = 10,
		.window = 200,
		.delay = 5000,
		.budget = 600 * 1024,
		.inflight = 3,
		.timeout_ns = 2 * MS,
		.heartbeats = true,
		.seed = 2,
	};

	run_property(&pr);
}

static void reasm_property_accounts_from_first_seen_without_heartbeats(void **state)
{
	const struct prun pr = {
		.name = "no-heartbeats",
		.nstreams = 6,
		.nmsgs = 2000,
		.loss_pm = 20,
		.dup_pm = 20,
		.delay_pm = 5,
		.window = 500,
		.delay = 3000,
		.budget = (size_t)2 << 20,
		.inflight = 8,
		.timeout_ns = 3 * MS,
		.seed = 3,
	};

	run_property(&pr);
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
		cmocka_unit_test(reasm_budget_evicts_oldest_partials_until_new_one_fits),
		cmocka_unit_test(reasm_budget_bounds_memory_of_tiny_partials),
		cmocka_unit_test(reasm_refuses_implausible_sequence_jump),
		cmocka_unit_test(reasm_new_stream_from_zero_is_bounded),
		cmocka_unit_test(reasm_hostile_fragment_geometry),
		cmocka_unit_test(reasm_flood_of_new_sources_spares_established_streams),
		cmocka_unit_test(reasm_budget_bounds_missing_ranges),
		cmocka_unit_test(reasm_budget_drops_message_larger_than_whole_budget),
		cmocka_unit_test(reasm_inflight_limit_evicts_oldest_partial_of_stream),
		cmocka_unit_test(reasm_drops_too_large_message_once),
		cmocka_unit_test(reasm_set_config_applies_to_new_decisions),
		cmocka_unit_test(reasm_drops_fragment_disagreeing_with_partial_as_malformed),
		cmocka_unit_test(reasm_drops_header_that_fails_wire_checks),
		cmocka_unit_test(reasm_destroy_frees_partials_ranges_and_streams),
		cmocka_unit_test(reasm_foreach_and_totals_report_state),
		cmocka_unit_test(reasm_property_exactly_complete_messages_delivered),
		cmocka_unit_test(reasm_property_accounts_every_message_under_pressure),
		cmocka_unit_test(reasm_property_accounts_from_first_seen_without_heartbeats),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
