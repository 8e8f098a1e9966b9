/* SPDX-License-Identifier: MIT */
/*
 * Reassembly: values a peer sends (implausible jumps, hostile geometry,
 * floods of sources), the memory the budget charges, the limits, malformed
 * datagrams, teardown and introspection.
 */
#include "reasm_harness.h"

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

/* Jumps spend a budget that comes back with time: a chain of forged
 * datagrams each a window ahead is not a window of "lost" messages each
 * (70 of them made 4.5 million in the audit, and pushed the real stream's
 * next messages out as stale); the real stream goes on. */
static void reasm_chained_jumps_spend_one_window(void **state)
{
	struct pubd_reasm *r = make(NULL);
	uint64_t t = 1 * MS, i;

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	for (i = 1; i <= 70; i++)
		push_msg(r, t, SRC_A, GRP_X, i * 65536, 10);
	/* The first jump fits (65,535 skipped); the others are malformed,
	 * but for what 1 ms of budget gives back (50 a microsecond). */
	assert_true(sink.drops[PUB_DROP_MALFORMED] >= 68);
	assert_true(stream_info(r, SRC_A, GRP_X).missing <= 65536 + 50 * 1000);
	/* The stream's own next message, right after, is delivered. */
	push_msg(r, t, SRC_A, GRP_X, stream_info(r, SRC_A, GRP_X).next_seq, 10);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 0);
	/* Silence gives the budget back, up to the silence's window. */
	push_msg(r, t + 2000 * MS, SRC_A, GRP_X, stream_info(r, SRC_A, GRP_X).next_seq + 1000000, 10);
	assert_true(stream_info(r, SRC_A, GRP_X).missing >= 1000000);
	pubd_reasm_destroy(r);
}

/* A receiver that stalled while its socket overflowed finds the next
 * datagram of a stream far ahead, with no time between as it sees it: a
 * jump the kernel's drops since the stream was last heard could have
 * carried (a batch of messages each) is loss, not a forged datagram. The
 * drops are spent by the stream that was heard since: they cover no later
 * jump. */
static void reasm_kernel_drops_account_for_a_jump(void **state)
{
	struct pubd_reasm *r = make(NULL);
	uint64_t t = 1 * MS, over;

	push_msg(r, 0, SRC_A, GRP_X, 0, 10);
	push_msg(r, 0, SRC_B, GRP_X, 0, 10);
	/* 1 ms of silence allows 65,536 + 50,000; 200,000 is past it. */
	push_msg(r, t, SRC_A, GRP_X, 200000, 10);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED], 1);
	/* Over by 84,463: 82 dropped datagrams could carry 83,968, 83 could
	 * carry 84,992. */
	over = 200000 - 1 - (65536 + 50 * 1000);
	assert_true(82 * PUBD_WIRE_BATCH_MAX < over && over <= 83 * PUBD_WIRE_BATCH_MAX);
	pubd_reasm_kernel_drops(r, 82);
	push_msg(r, t, SRC_A, GRP_X, 200000, 10);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED], 2);
	pubd_reasm_kernel_drops(r, 83);
	push_msg(r, t, SRC_A, GRP_X, 200000, 10);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED], 2);
	assert_true(stream_info(r, SRC_A, GRP_X).missing == 199999);
	/* Spent: the same drops allow A no second jump... */
	push_msg(r, t, SRC_A, GRP_X, 200001 + 150000, 10);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED], 3);
	/* ...but B, not heard since they happened, lost as much. */
	push_msg(r, t, SRC_B, GRP_X, 200000, 10);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED], 3);
	/* Nor with drops whose batches could not carry the jump. */
	pubd_reasm_kernel_drops(r, 84);
	push_msg(r, t, SRC_A, GRP_X, 200001 + 10000000, 10);
	assert_int_equal(sink.drops[PUB_DROP_MALFORMED], 4);
	/* The stream goes on. */
	push_msg(r, t, SRC_A, GRP_X, 200001, 10);
	pubd_reasm_expire(r, 1000 * MS);
	assert_int_equal(sink.delivered, 5);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 0);
	assert_true(sink.drops[PUB_DROP_SEQ_GAP] == 199999 + 199999);
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

/*
 * A forger on a repair group (4,096 missing ranges a stream) opens every
 * range it may in one stream and then fills the holes from the bottom:
 * each late message is looked up among the ranges. The lookup must cost
 * O(log ranges), not a walk from the newest range down to the oldest
 * (which made each datagram cost 15-22 us, an honest stream beside it 14
 * times its CPU). Counted in ranges looked at, not in time.
 */
#define FILL_RANGES 4096u
#define FILL_GAP    4u /* each range is [5k + 1, 5k + 4] */

static void ranges_4096(struct pubd_reasm_config *c)
{
	c->max_missing_ranges = FILL_RANGES;
}

static uint64_t range_visits(const struct pubd_reasm *r)
{
	struct pubd_reasm_totals t;

	pubd_reasm_totals(r, &t);
	return t.range_visits;
}

static void reasm_late_message_lookup_is_logarithmic_in_ranges(void **state)
{
	struct pubd_reasm *r = make(ranges_4096);
	struct pubd_reasm_config c;
	struct pubd_reasm_totals t;
	uint64_t k, v, *order, n = (uint64_t)FILL_RANGES * (FILL_GAP - 1), x = 0x9e3779b97f4a7c15ull;
	/* An AVL tree of n nodes is at most 1.44 log2(n + 2) deep; one more
	 * for the look at the newest range first. */
	const uint64_t per_4096 = 1 + 18, per_8192 = 1 + 20;

	for (k = 0; k <= FILL_RANGES; k++)
		push_msg(r, 0, SRC_A, GRP_X, k * (FILL_GAP + 1), 10);
	assert_true(stream_info(r, SRC_A, GRP_X).missing == (uint64_t)FILL_RANGES * FILL_GAP);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 0);

	/* Bottom-up, the first of each range: never a split, 4,096 ranges
	 * all along. */
	v = range_visits(r);
	for (k = 0; k < FILL_RANGES; k++)
		push_msg(r, 0, SRC_A, GRP_X, k * (FILL_GAP + 1) + 1, 10);
	v = range_visits(r) - v;
	print_message("%u holes filled bottom-up among %u ranges: %" PRIu64 " ranges looked at\n", FILL_RANGES,
		      FILL_RANGES, v);
	assert_true(v <= FILL_RANGES * per_4096);

	/* The rest in a random order: middles split ranges (up to 8,192). */
	pubd_reasm_config_defaults(&c);
	c.max_missing_ranges = 2 * FILL_RANGES;
	pubd_reasm_set_config(r, &c);
	order = malloc(n * sizeof(*order));
	assert_non_null(order);
	for (k = 0; k < n; k++)
		order[k] = (k / (FILL_GAP - 1)) * (FILL_GAP + 1) + 2 + k % (FILL_GAP - 1);
	for (k = n - 1; k > 0; k--) {
		uint64_t j, tmp;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % (k + 1);
		tmp = order[k];
		order[k] = order[j];
		order[j] = tmp;
	}
	v = range_visits(r);
	for (k = 0; k < n; k++)
		push_msg(r, 0, SRC_A, GRP_X, order[k], 10);
	v = range_visits(r) - v;
	print_message("%" PRIu64 " holes filled in random order: %" PRIu64 " ranges looked at\n", n, v);
	assert_true(v <= n * per_8192);
	free(order);

	/* Every message delivered, nothing missing, and no byte of the
	 * ranges still charged. */
	assert_true(stream_info(r, SRC_A, GRP_X).missing == 0);
	assert_true(sink.delivered == (uint64_t)FILL_RANGES * (FILL_GAP + 1) + 1);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 0);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 0);
	pubd_reasm_totals(r, &t);
	assert_true(t.held_bytes == 0);
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

/*
 * A burst of 4,000 forged sources grows the tables' bucket arrays; once
 * their streams are gone the streams' array is given back, and once their
 * tombstones go too (their group left) so is the tombstones' (THREATS.md 1:
 * memory taken by a burst is returned after it). A real stream goes on
 * being found throughout.
 */
static void reasm_tables_shrink_after_a_burst(void **state)
{
	struct pubd_reasm *r = make(NULL);
	struct pubd_reasm_totals t0, peak, t;
	uint64_t src, now = 1 * MS, seq = 0;

	push_msg(r, 0, SRC_A, GRP_X, seq++, 10);
	pubd_reasm_totals(r, &t0);
	for (src = 1000; src < 1000 + 4000; src++)
		push_msg(r, now, src, GRP_Y, 0, 10);
	pubd_reasm_totals(r, &peak);
	assert_int_equal(peak.streams, 4001);
	printf("bucket arrays: %" PRIu64 " bytes before the burst, %" PRIu64 " at its height\n", t0.table_bytes,
	       peak.table_bytes);
	assert_true(peak.table_bytes >= 4000 * sizeof(void *));
	/* The real source keeps talking; the forged ones go silent and are
	 * forgotten, each leaving a tombstone: the streams' array shrinks as
	 * the tombstones' grows. */
	for (now = 2 * MS; now < 100ull * 1000 * MS; now += 1000 * MS) {
		push_msg(r, now, SRC_A, GRP_X, seq++, 10);
		pubd_reasm_expire(r, now);
	}
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.streams, 1);
	printf("with only their tombstones left: %" PRIu64 " bytes\n", t.table_bytes);
	assert_true(t.table_bytes <= peak.table_bytes);
	pubd_reasm_forget_group(r, GRP_Y);
	pubd_reasm_totals(r, &t);
	printf("after their group is left: %" PRIu64 " bytes\n", t.table_bytes);
	assert_true(t.table_bytes <= 2 * t0.table_bytes);
	push_msg(r, now, SRC_A, GRP_X, seq++, 10);
	assert_int_equal(sink.delivered, 1 + 4000 + 100 + 1);
	assert_int_equal(sink.drops[PUB_DROP_SEQ_GAP], 0);
	assert_int_equal(sink.drops[PUB_DROP_STALE], 0);
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

/* Group Y is a repair group: its streams wait repair_timeout_ns. */
static bool y_repairs(void *ctx, uint64_t grp)
{
	(void)ctx;
	return grp == GRP_Y;
}

/*
 * A repair group's long wait must not stretch another group's timeout:
 * a partial and a gap of group X time out after timeout_ns even when
 * group Y's (repair) partial and gap, made earlier, wait 10x longer.
 */
static void reasm_repair_class_does_not_stretch_plain_timeout(void **state)
{
	struct pubd_reasm_config c;
	struct pubd_reasm_ops o = ops;
	struct pubd_reasm *r;

	(void)state;
	memset(&sink, 0, sizeof(sink));
	pubd_reasm_config_defaults(&c);
	c.timeout_ns = 10 * MS;
	c.repair_timeout_ns = 100 * MS;
	o.repairs = y_repairs;
	r = pubd_reasm_create(&c, &o, &sink);
	assert_non_null(r);
	/* at 1 ms: Y's message 0 half there, Y's 1 missing (2 arrived) */
	push_frag(r, 1 * MS, SRC_A, GRP_Y, 0, 3000, 1500, 0);
	push_msg(r, 1 * MS, SRC_A, GRP_Y, 2, 100);
	/* at 2 ms: the same on X */
	push_frag(r, 2 * MS, SRC_A, GRP_X, 0, 3000, 1500, 0);
	push_msg(r, 2 * MS, SRC_A, GRP_X, 2, 100);
	assert_int_equal(pubd_reasm_next_deadline(r), 12 * MS);
	pubd_reasm_expire(r, 12 * MS);
	assert_int_equal(per_drops(SRC_A, GRP_X, PUB_DROP_REASM_TIMEOUT), 1);
	assert_int_equal(per_drops(SRC_A, GRP_X, PUB_DROP_SEQ_GAP), 1);
	assert_int_equal(per_drops(SRC_A, GRP_Y, PUB_DROP_REASM_TIMEOUT) + per_drops(SRC_A, GRP_Y, PUB_DROP_SEQ_GAP),
			 0);
	assert_int_equal(pubd_reasm_next_deadline(r), 101 * MS);
	pubd_reasm_expire(r, 100 * MS);
	assert_int_equal(per_drops(SRC_A, GRP_Y, PUB_DROP_REASM_TIMEOUT), 0);
	pubd_reasm_expire(r, 101 * MS);
	assert_int_equal(per_drops(SRC_A, GRP_Y, PUB_DROP_REASM_TIMEOUT), 1);
	assert_int_equal(per_drops(SRC_A, GRP_Y, PUB_DROP_SEQ_GAP), 1);
	pubd_reasm_destroy(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reasm_budget_evicts_oldest_partials_until_new_one_fits),
		cmocka_unit_test(reasm_budget_bounds_memory_of_tiny_partials),
		cmocka_unit_test(reasm_tables_shrink_after_a_burst),
		cmocka_unit_test(reasm_refuses_implausible_sequence_jump),
		cmocka_unit_test(reasm_chained_jumps_spend_one_window),
		cmocka_unit_test(reasm_kernel_drops_account_for_a_jump),
		cmocka_unit_test(reasm_new_stream_from_zero_is_bounded),
		cmocka_unit_test(reasm_hostile_fragment_geometry),
		cmocka_unit_test(reasm_flood_of_new_sources_spares_established_streams),
		cmocka_unit_test(reasm_late_message_lookup_is_logarithmic_in_ranges),
		cmocka_unit_test(reasm_budget_bounds_missing_ranges),
		cmocka_unit_test(reasm_budget_drops_message_larger_than_whole_budget),
		cmocka_unit_test(reasm_inflight_limit_evicts_oldest_partial_of_stream),
		cmocka_unit_test(reasm_drops_too_large_message_once),
		cmocka_unit_test(reasm_set_config_applies_to_new_decisions),
		cmocka_unit_test(reasm_drops_fragment_disagreeing_with_partial_as_malformed),
		cmocka_unit_test(reasm_drops_header_that_fails_wire_checks),
		cmocka_unit_test(reasm_destroy_frees_partials_ranges_and_streams),
		cmocka_unit_test(reasm_foreach_and_totals_report_state),
		cmocka_unit_test(reasm_repair_class_does_not_stretch_plain_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
