/* SPDX-License-Identifier: MIT */
/*
 * Messages held back for order on a repair group are released with
 * back-pressure: when the gap is filled, a subscriber whose queue is
 * small gets what fits, the rest stays held and follows as the queue
 * drains, in order, nothing dropped; messages that arrive meanwhile queue
 * behind them. Held bytes over limits.reassembly_budget are released by
 * force, and then a full queue drops as the slow-subscriber policy says,
 * counted as sub_overflow, exactly. A peer's sparse sequence numbers
 * (0, 4096, 8192, ... from many invented sources) cost the heap what the
 * messages held take, within the budget, not the span between them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "proto.h"
#include "reasm.h"
#include "server_internal.h" /* white-box: the daemon's end of the socket */
#include "test_daemon_harness.h"
#include "wire.h"

#define SRC	0x5151ull
#define MSG_LEN 900u /* one fragment at the fake's MTU */

static const char *config(const char *limits)
{
	static char b[512];

	snprintf(b, sizeof(b),
		 "limits:\n  reassembly_timeout_ms: 60000\n  subscriber_queue: 4\n%s"
		 "groups:\n"
		 "  - {name: r, address: 239.78.0.4, repair: on}\n",
		 limits);
	return b;
}

/* Message seq of source on r, len bytes, as a datagram from the group's address. */
static void inject_from(struct hd *d, uint64_t source, uint64_t seq, uint32_t len)
{
	struct pubd_group *g = hd_group(d, "r");
	struct pubd_wire_hdr h = {
		.group_id = g->id, .source_id = source, .msg_seq = seq, .msg_len = len, .frag_count = 1};
	uint8_t dg[PUBD_WIRE_HDR_LEN + MSG_LEN];

	assert_true(len <= MSG_LEN);
	pubd_wire_encode(&h, dg);
	memset(dg + PUBD_WIRE_HDR_LEN, (int)(seq & 0xff), len);
	pubd_fake_inject_from(d->fk, g->slot, dg, PUBD_WIRE_HDR_LEN + len, 0x77);
}

/* Message seq of SRC on r, as a datagram from the group's address. */
static void inject(struct hd *d, uint64_t seq)
{
	inject_from(d, SRC, seq, MSG_LEN);
}

/* A subscriber whose socket holds little, so the daemon's queue for it
 * (subscriber_queue: 4) is what takes a burst. */
static void slow_sub(struct hd *d, struct hc *sub)
{
	int small = 4096;

	assert_int_equal(hc_connect(d, sub, 4096), 0);
	assert_int_equal(setsockopt(d->d.ipc.clients->fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	assert_int_equal(hc_hello(sub, "sub"), 0);
	assert_int_equal(hc_group_req(sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
}

/* A daemon with a slow subscriber of r, which holds messages 2 .. last - 1
 * of SRC behind the lost message 1 (0 went out): r. */
static struct pubd_group *held_behind_a_gap(struct hd *b, struct hc *sub, uint64_t last)
{
	uint64_t s;

	assert_int_equal(hd_start(b, NULL, config("")), 0);
	slow_sub(b, sub);
	inject(b, 0);
	for (s = 2; s < last; s++)
		inject(b, s);
	hd_turn(b, 1);
	return hd_group(b, "r");
}

/* Read what sub has: DELIVERs in ascending seq, whole; returns how many. */
static unsigned read_all(struct hd *d, struct hc *sub, uint64_t *next, int turns)
{
	struct pub_msg_deliver m;
	const uint8_t *fb;
	uint32_t flen;
	uint8_t type;
	unsigned n = 0;

	while (turns-- > 0) {
		hd_turn(d, 1);
		while (hc_next(sub, &type, &fb, &flen, 0) == 1) {
			assert_int_equal(type, PUB_FRAME_DELIVER);
			assert_int_equal(pub_proto_dec_deliver(fb, flen, &m), 0);
			assert_int_equal(m.seq, *next); /* in order, none missing */
			assert_int_equal(m.payload_len, MSG_LEN);
			assert_int_equal(m.payload[MSG_LEN - 1], (uint8_t)(m.seq & 0xff));
			++*next;
			n++;
			hc_pop(sub);
		}
	}
	return n;
}

static void test_release_waits_for_the_queue(void **state)
{
	static struct hd b;
	struct pubd_group *g;
	struct hc sub;
	uint64_t next = 0, s, dl;

	(void)state;
	g = held_behind_a_gap(&b, &sub, 40); /* 1 is lost: 2..39 are held */
	assert_true(b.d.held_bytes >= 38 * MSG_LEN);
	inject(&b, 1); /* the repair */
	hd_turn(&b, 1);
	/* The queue (4 messages) took what fits; the rest is still held. */
	print_message("after the repair: %llu bytes still held, sub_overflow %llu\n",
		      (unsigned long long)b.d.held_bytes,
		      (unsigned long long)g->sub_drops.by_reason[PUB_DROP_SUB_OVERFLOW]);
	assert_true(b.d.held_bytes > 0);
	assert_true(b.d.holds_waiting);
	for (s = 40; s < 50; s++) /* live messages queue behind the held ones */
		inject(&b, s);
	dl = hd_deadline(5000);
	while (!hd_past(dl) && next < 50)
		read_all(&b, &sub, &next, 1);
	assert_int_equal(next, 50);
	assert_int_equal(b.d.held_bytes, 0);
	assert_int_equal(pubd_drops_msg_total(&g->sub_drops), 0);
	assert_int_equal(g->delivered, 50);
	hc_close(&sub);
	hd_stop(&b);
}

/* Thousands held behind a thousand gaps, filled in a random order (as the
 * receivers' NAK back-off makes them come): every message reaches the
 * subscriber once, in order, and nothing stays held. */
static void test_random_repairs_among_many_held(void **state)
{
	static struct hd b;
	enum { N = 20000, EVERY = 17 };
	uint64_t *lost = malloc((N / EVERY + 1) * sizeof(*lost)), next = 0, s, dl, t0;
	struct pubd_group *g;
	unsigned nlost = 0, i, j;
	struct hc sub;

	(void)state;
	assert_non_null(lost);
	assert_int_equal(hd_start(&b, NULL,
				  "limits:\n  reassembly_timeout_ms: 60000\n  subscriber_queue: 65536\n"
				  "  subscriber_queue_bytes: 64MiB\n  reassembly_budget: 64MiB\n"
				  "groups:\n  - {name: r, address: 239.78.0.4, repair: on}\n"),
			 0);
	assert_int_equal(hc_connect(&b, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	g = hd_group(&b, "r");
	inject(&b, 0);
	hd_turn(&b, 1);
	for (s = 1; s < N; s++) {
		if (s % EVERY == 1) {
			lost[nlost++] = s;
			continue;
		}
		inject(&b, s);
		if (s % 256 == 0)
			hd_turn(&b, 0);
	}
	hd_turn(&b, 1);
	assert_true(b.d.held_bytes >= (uint64_t)(N - 1 - nlost) * MSG_LEN);
	/* The repairs, shuffled (a fixed seed: the same order every run). */
	srand(7);
	for (i = nlost - 1; i > 0; i--) {
		j = (unsigned)rand() % (i + 1);
		s = lost[i];
		lost[i] = lost[j];
		lost[j] = s;
	}
	t0 = pubd_now_ns();
	for (i = 0; i < nlost; i++) {
		inject(&b, lost[i]);
		if (i % 64 == 0)
			hd_turn(&b, 0);
	}
	dl = hd_deadline(10000);
	while (!hd_past(dl) && next < N)
		read_all(&b, &sub, &next, 1);
	print_message("%u repairs in random order among %u held: all %llu delivered in order in %llu ms\n", nlost,
		      N - 1 - nlost, (unsigned long long)next, (unsigned long long)((pubd_now_ns() - t0) / 1000000));
	assert_int_equal(next, N);
	assert_int_equal(b.d.held_bytes, 0);
	assert_int_equal(b.d.counters[PUBD_CTR_ORDER_OVERFLOWS], 0);
	assert_int_equal(g->delivered, N);
	assert_int_equal(pubd_drops_msg_total(&g->sub_drops), 0);
	hc_close(&sub);
	hd_stop(&b);
	free(lost);
}

/* Held bytes over the reassembly budget (64 KiB here) are released by
 * force: the queue's policy (drop-newest) drops what does not fit, each
 * counted as sub_overflow; once the gap is filled the rest follows, and
 * delivered + sub_overflow = received. */
static void test_forced_release_counts_overflow(void **state)
{
	static struct hd b;
	struct pubd_group *g;
	struct hc sub;
	uint64_t s, n = 200, got = 0, dl;

	(void)state;
	assert_int_equal(hd_start(&b, NULL,
				  config("  reassembly_budget: 64KiB\n  max_message_size: 64KiB\n  slow_subscriber: "
					 "drop-newest\n")),
			 0);
	slow_sub(&b, &sub);
	g = hd_group(&b, "r");
	inject(&b, 0);
	for (s = 2; s < n; s++) /* 1 lost: held until the budget forces them out */
		inject(&b, s);
	hd_turn(&b, 1);
	assert_true(b.d.counters[PUBD_CTR_ORDER_OVERFLOWS] > 0);
	assert_true(b.d.held_bytes <= 64 * 1024);
	inject(&b, 1); /* the repair: what is still held follows, in order */
	dl = hd_deadline(3000);
	while (!hd_past(dl) && (b.d.held_bytes || got + g->sub_drops.by_reason[PUB_DROP_SUB_OVERFLOW] < n)) {
		struct pub_msg_deliver m;
		const uint8_t *fb;
		uint32_t flen;
		uint8_t type;

		hd_turn(&b, 1);
		while (hc_next(&sub, &type, &fb, &flen, 0) == 1) {
			assert_int_equal(pub_proto_dec_deliver(fb, flen, &m), 0);
			got++;
			hc_pop(&sub);
		}
	}
	print_message("%llu received, %llu delivered, %llu sub_overflow, %llu bytes held, %llu forced releases\n",
		      (unsigned long long)g->received, (unsigned long long)g->delivered,
		      (unsigned long long)g->sub_drops.by_reason[PUB_DROP_SUB_OVERFLOW],
		      (unsigned long long)b.d.held_bytes, (unsigned long long)b.d.counters[PUBD_CTR_ORDER_OVERFLOWS]);
	assert_true(g->sub_drops.by_reason[PUB_DROP_SUB_OVERFLOW] > 0);
	assert_int_equal(b.d.held_bytes, 0);
	assert_int_equal(g->received, n);
	assert_int_equal(g->delivered + g->sub_drops.by_reason[PUB_DROP_SUB_OVERFLOW], g->received);
	assert_int_equal(got, g->delivered);
	hc_close(&sub);
	hd_stop(&b);
}

/* The heap in use (glibc; ASan's allocator reports nothing here). */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* Read what sub has (any order); returns how many DELIVERs. */
static uint64_t drain(struct hc *sub)
{
	const uint8_t *fb;
	uint32_t flen;
	uint8_t type;
	uint64_t n = 0;

	while (hc_next(sub, &type, &fb, &flen, 0) == 1) {
		n += type == PUB_FRAME_DELIVER;
		hc_pop(sub);
	}
	return n;
}

/* One source of the audit's attack (a11): 8-byte messages 0, 4096,
 * 2 * 4096, ... 16 * 4096, so the stream holds 16 messages across a span of
 * 65,536 sequence numbers: all a stream's jump budget lets a peer skip at
 * once (reasm_push.c; the audit used 65536 apart, before that budget). */
static void sparse_source(struct hd *d, uint64_t source)
{
	unsigned j;

	for (j = 0; j <= 16; j++)
		inject_from(d, source, (uint64_t)j * 4096, 8);
}

static void sparse_start(struct hd *d, struct hc *sub, const char *limits)
{
	char conf[512];

	snprintf(conf, sizeof(conf),
		 "limits:\n  reassembly_timeout_ms: 60000\n  subscriber_queue: 65536\n  max_message_size: 64KiB\n%s"
		 "groups:\n  - {name: r, address: 239.78.0.4, repair: on}\n",
		 limits);
	assert_int_equal(hd_start(d, NULL, conf), 0);
	assert_int_equal(hc_connect(d, sub, 0), 0);
	assert_int_equal(hc_hello(sub, "sub"), 0);
	assert_int_equal(hc_group_req(sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	hd_turn(d, 1);
}

/* The attack from 300 invented sources, reassembly_budget 1 MiB: what
 * holding takes from the heap stays within the budget, charged as memory
 * (buffers, entries, streams); beyond it a stream is released out of
 * order, counted, nothing lost; memory follows the messages held, not the
 * span (a ring of a slot per seq took 512 KiB a stream here, 150 MiB for
 * 300; 8 MiB a stream at 65536 apart). */
static void test_sparse_seqs_stay_within_budget(void **state)
{
	static struct hd b;
	enum { SOURCES = 300 };
	const uint64_t budget = 1 << 20;
	uint64_t got = 0, peak = 0, dl;
	size_t heap0, heap, heap_peak = 0;
	struct pubd_group *g;
	struct hc sub;
	unsigned i;

	(void)state;
	sparse_start(&b, &sub, "  reassembly_budget: 1MiB\n");
	g = hd_group(&b, "r");
	got += drain(&sub);
	heap0 = heap_in_use();
	for (i = 0; i < SOURCES; i++) {
		sparse_source(&b, 0x401d000000000000ull + i);
		hd_turn(&b, 0);
		got += drain(&sub);
		heap = heap_in_use();
		heap_peak = heap > heap_peak ? heap : heap_peak;
		peak = b.d.held_bytes > peak ? b.d.held_bytes : peak;
		/* What the attack took from the heap: what holding is charged
		 * (the budget at most), reassembly's missing ranges (its own
		 * budget), per-source entries and the subscriber's queue. */
		if (heap - heap0 > 3 * budget)
			fail_msg("after %u sources the heap grew by %zu KiB (held_bytes %llu)", i + 1,
				 (heap - heap0) / 1024, (unsigned long long)b.d.held_bytes);
	}
	dl = hd_deadline(2000);
	while (!hd_past(dl) && got < g->delivered) {
		hd_turn(&b, 1);
		got += drain(&sub);
	}
	print_message("%u sources x 17 messages 4096 apart: held %llu bytes (peak %llu, budget %llu), heap +%zu KiB "
		      "at most, %llu forced releases, received %llu, delivered %llu\n",
		      SOURCES, (unsigned long long)b.d.held_bytes, (unsigned long long)peak, (unsigned long long)budget,
		      (heap_peak - heap0) / 1024, (unsigned long long)b.d.counters[PUBD_CTR_ORDER_OVERFLOWS],
		      (unsigned long long)g->received, (unsigned long long)g->delivered);
	assert_true(peak <= budget);
	assert_true(b.d.held_bytes > budget / 2); /* it still holds for order */
	assert_true(b.d.counters[PUBD_CTR_ORDER_OVERFLOWS] > 0);
	assert_int_equal(g->received, SOURCES * 17);
	assert_int_equal(pubd_drops_msg_total(&g->sub_drops), 0);
	assert_int_equal(got, g->delivered);
	hc_close(&sub);
	hd_stop(&b);
}

/* Streams holding at once: at most limits.max_sources (16 here); a
 * message of a further stream is delivered at once, counted. */
static void test_holding_streams_capped(void **state)
{
	static struct hd b;
	enum { SOURCES = 40, MAX = 16 };
	uint64_t held, got = 0, dl;
	struct pubd_group *g;
	struct hc sub;
	unsigned i;

	(void)state;
	sparse_start(&b, &sub, "  reassembly_budget: 1MiB\n  max_sources: 16\n");
	g = hd_group(&b, "r");
	for (i = 0; i < MAX; i++)
		sparse_source(&b, 0x401d000000000000ull + i);
	hd_turn(&b, 0);
	held = b.d.held_bytes;
	assert_int_equal(b.d.counters[PUBD_CTR_ORDER_OVERFLOWS], 0);
	for (; i < SOURCES; i++)
		sparse_source(&b, 0x401d000000000000ull + i);
	hd_turn(&b, 0);
	dl = hd_deadline(2000);
	while (!hd_past(dl) && got < g->delivered) {
		hd_turn(&b, 1);
		got += drain(&sub);
	}
	print_message("%u sources, max_sources %u: held %llu bytes by the first %u, %llu after all; %llu refused\n",
		      SOURCES, MAX, (unsigned long long)held, MAX, (unsigned long long)b.d.held_bytes,
		      (unsigned long long)b.d.counters[PUBD_CTR_ORDER_OVERFLOWS]);
	assert_int_equal(b.d.held_bytes, held);
	assert_int_equal(b.d.counters[PUBD_CTR_ORDER_OVERFLOWS], (SOURCES - MAX) * 16);
	assert_int_equal(g->received, SOURCES * 17);
	assert_int_equal(g->delivered, (uint64_t)SOURCES * 17 - MAX * 16);
	assert_int_equal(got, g->delivered);
	hc_close(&sub);
	hd_stop(&b);
}

/* F2 of an outside audit: 2,000 invented sources each hold a message
 * behind a gap, and an honest source sends 2,000 messages, a gap among them
 * repaired late. A release looks only at the streams reassembly moved (or
 * a full queue stopped): the honest stream's messages cost no walk of the
 * forger's streams (they did: each receive batch looked at every holding
 * stream, and a lookup walked them all, 10-27x the honest stream's CPU). */
static void test_release_looks_at_touched_streams_only(void **state)
{
	static struct hd b;
	enum { FORGED = 2000, N = 2000 };
	uint64_t next = 0, got = 0, s, visits, dl;
	struct pubd_group *g;
	struct hc sub;
	unsigned i;

	(void)state;
	sparse_start(&b, &sub, "  subscriber_queue_bytes: 64MiB\n  reassembly_budget: 64MiB\n  max_sources: 8192\n");
	g = hd_group(&b, "r");
	for (i = 0; i < FORGED; i++) {
		inject_from(&b, 0x401d000000000000ull + i, 0, 8);
		inject_from(&b, 0x401d000000000000ull + i, 2, 8); /* 1 missing: held */
		if (i % 64 == 63)
			hd_turn(&b, 0);
	}
	dl = hd_deadline(5000);
	while (!hd_past(dl) && got < FORGED) { /* each one's message 0 */
		hd_turn(&b, 1);
		got += drain(&sub);
	}
	assert_int_equal(got, FORGED);
	assert_int_equal(b.d.holds.ix.n, FORGED);
	visits = b.d.holds.visits;
	inject(&b, 0);
	for (s = 2; s < N; s++) { /* 1 is lost: 2.. are held */
		inject(&b, s);
		if (s % 16 == 0)
			hd_turn(&b, 0);
	}
	hd_turn(&b, 0);
	inject(&b, 1); /* the repair */
	dl = hd_deadline(10000);
	while (!hd_past(dl) && next < N)
		read_all(&b, &sub, &next, 1);
	print_message("%u streams held by invented sources; %u honest messages, one gap: %llu stream visits\n", FORGED,
		      N, (unsigned long long)(b.d.holds.visits - visits));
	assert_int_equal(next, N);
	/* Each receive batch (a datagram here) looks at the stream it held
	 * a message of: one visit a message. A walk of every holding stream
	 * per batch made it 2,000 times that. */
	assert_true(b.d.holds.visits - visits <= N);
	assert_int_equal(b.d.holds.ix.n, FORGED);
	assert_int_equal(g->delivered, N + FORGED);
	hc_close(&sub);
	hd_stop(&b);
}

/* Over the budget, what goes out first is the stream charged most, not
 * one of a forger's many small ones: 100 invented sources hold a message
 * each, then a stream with a gap holds 900-byte messages past the budget. */
static void test_forced_release_takes_the_biggest(void **state)
{
	static struct hd b;
	enum { FORGED = 100 };
	struct hc sub;
	uint64_t s;
	unsigned i;

	(void)state;
	sparse_start(&b, &sub, "  subscriber_queue_bytes: 64MiB\n  reassembly_budget: 256KiB\n");
	inject(&b, 0);
	inject(&b, 2); /* 1 missing: the stream holds from here on */
	hd_turn(&b, 0);
	for (i = 0; i < FORGED; i++) {
		inject_from(&b, 0x401d000000000000ull + i, 0, 8);
		inject_from(&b, 0x401d000000000000ull + i, 2, 8);
	}
	hd_turn(&b, 0);
	assert_int_equal(b.d.holds.ix.n, FORGED + 1);
	for (s = 3; s < 400 && !b.d.counters[PUBD_CTR_ORDER_OVERFLOWS]; s++) {
		inject(&b, s);
		hd_turn(&b, 0);
	}
	print_message("forced release after %llu messages of the big stream: %llu streams still hold, %llu bytes\n",
		      (unsigned long long)s, (unsigned long long)b.d.holds.ix.n, (unsigned long long)b.d.held_bytes);
	assert_int_equal(b.d.counters[PUBD_CTR_ORDER_OVERFLOWS], 1);
	assert_int_equal(b.d.holds.ix.n, FORGED); /* the big one went, whole */
	assert_null(htab_find(&b.d.holds.ix, SRC, hd_group(&b, "r")->id));
	assert_true(b.d.held_bytes < b.d.cfg.reassembly_budget / 2);
	hc_close(&sub);
	hd_stop(&b);
}

/* Fragment 0 of a 2-fragment message seq of source on r: a partial
 * message reassembly keeps, charged to the budget. */
static void inject_partial(struct hd *d, uint64_t source, uint64_t seq)
{
	struct pubd_group *g = hd_group(d, "r");
	struct pubd_wire_hdr h = {
		.group_id = g->id, .source_id = source, .msg_seq = seq, .msg_len = 2 * MSG_LEN, .frag_count = 2};
	uint8_t dg[PUBD_WIRE_HDR_LEN + MSG_LEN];

	pubd_wire_encode(&h, dg);
	memset(dg + PUBD_WIRE_HDR_LEN, 0x11, MSG_LEN);
	pubd_fake_inject_from(d->fk, g->slot, dg, PUBD_WIRE_HDR_LEN + MSG_LEN, 0x77);
}

/* Partial messages and messages held for order charge one budget,
 * limits.reassembly_budget. Partials from 150 sources (nearly all of the
 * 512 KiB) and a stream that holds everything behind its gap, the partials
 * first or the held messages first: the two together never pass the
 * budget. The hold releases by force to stay within it (counted, and the
 * subscriber gets every message released); reassembly evicts partials
 * (reasm_budget) to fit in what the hold leaves. They each had the whole
 * budget before, so together took up to twice it. */
static void share_budget(bool partials_first)
{
	static struct hd b;
	uint64_t s, sum, peak = 0, budget, dl, got = 0;
	unsigned phase;
	const uint8_t *fb;
	uint32_t flen;
	uint8_t type;
	struct hc sub;

	sparse_start(&b, &sub, "  subscriber_queue_bytes: 64MiB\n  reassembly_budget: 512KiB\n");
	budget = b.d.cfg.reassembly_budget;
	inject(&b, 0);
	for (phase = 0; phase < 2; phase++) {
		for (s = 0; s < (phase == partials_first ? 598 : 150); s++) {
			if (phase == partials_first)
				inject(&b, s + 2); /* 1 is missing: the stream holds 2.. */
			else
				inject_partial(&b, 0x9a47000000000000ull + s, 0);
			sum = b.d.held_bytes + pubd_reasm_held_bytes(b.d.reasm);
			if (sum > peak)
				peak = sum;
		}
	}
	hd_turn(&b, 0);
	print_message("partials %llu bytes, held %llu bytes, peak of the two %llu of %llu; forced releases %llu\n",
		      (unsigned long long)pubd_reasm_held_bytes(b.d.reasm), (unsigned long long)b.d.held_bytes,
		      (unsigned long long)peak, (unsigned long long)budget,
		      (unsigned long long)b.d.counters[PUBD_CTR_ORDER_OVERFLOWS]);
	assert_true(peak <= budget);
	assert_true(b.d.counters[PUBD_CTR_ORDER_OVERFLOWS] > 0);
	/* What was released by force reaches the subscriber: none lost (the
	 * rest is still held behind the gap). */
	assert_int_equal(hd_group(&b, "r")->received, 599);
	assert_true(b.d.holds.msgs > 0);
	dl = hd_deadline(5000);
	while (!hd_past(dl) && got + b.d.holds.msgs < 599) {
		hd_turn(&b, 1);
		while (hc_next(&sub, &type, &fb, &flen, 0) == 1) {
			got += type == PUB_FRAME_DELIVER;
			hc_pop(&sub);
		}
	}
	assert_int_equal(got + b.d.holds.msgs, 599);
	assert_int_equal(pubd_drops_msg_total(&hd_group(&b, "r")->sub_drops), 0);
	hc_close(&sub);
	hd_stop(&b);
}

static void test_hold_and_reassembly_share_the_budget(void **state)
{
	(void)state;
	share_budget(true);
	share_budget(false);
}

/* The group's last subscriber goes: pubd stops receiving it and reassembly
 * forgets its streams, so nothing is outstanding before what is held any
 * more; it goes (to nobody) at once, not when the budget forces it. */
static void test_holds_go_when_the_group_stops_receiving(void **state)
{
	static struct hd b;
	struct pubd_group *g;
	struct hc sub;
	uint64_t dl;

	(void)state;
	g = held_behind_a_gap(&b, &sub, 10); /* 1 is lost: 2..9 are held */
	assert_true(b.d.held_bytes >= 8 * MSG_LEN);
	assert_int_equal(b.d.holds.msgs, 8); /* pubctl status: order_held */
	assert_true(g->listening);
	hc_close(&sub);
	dl = hd_deadline(3000);
	while (!hd_past(dl) && g->listening)
		hd_turn(&b, 1);
	assert_false(g->listening);
	assert_int_equal(b.d.held_bytes, 0);
	assert_int_equal(b.d.holds.msgs, 0);
	assert_int_equal(b.d.holds.ix.n, 0);
	/* The 8 were on their way to the subscriber that left: its drops
	 * (the group-subscribers scope), as its queue was. */
	print_message("received %llu, delivered %llu, sub_disconnect %llu\n", (unsigned long long)g->received,
		      (unsigned long long)g->delivered,
		      (unsigned long long)g->sub_drops.by_reason[PUB_DROP_SUB_DISCONNECT]);
	assert_int_equal(g->order_held, 0);
	assert_true(g->sub_drops.by_reason[PUB_DROP_SUB_DISCONNECT] >= 8);
	assert_int_equal(g->received, g->delivered + pubd_drops_msg_total(&g->sub_drops));
	hd_stop(&b);
}

/* A reload makes the group anew (its address changed) while it holds
 * messages for order: its subscriber counts them (sub_disconnect) as it
 * leaves, and the daemon's received = delivered + dropped still holds
 * once the group's drops went to the daemon scope. */
static void test_holds_counted_when_the_group_is_made_anew(void **state)
{
	static struct hd b;
	struct pubd_group *g;
	struct hc sub;
	uint64_t *ctr = b.d.counters;

	(void)state;
	g = held_behind_a_gap(&b, &sub, 10); /* 1 is lost: 2..9 are held */
	assert_int_equal(g->order_held, 8);
	assert_int_equal(hd_reload(&b, NULL,
				   "limits:\n  reassembly_timeout_ms: 60000\n  subscriber_queue: 4\n"
				   "groups:\n  - {name: r, address: 239.78.0.5, repair: on}\n"),
			 0);
	hd_turn(&b, 1);
	print_message("received %llu, delivered %llu, dropped %llu (sub_disconnect %llu)\n",
		      (unsigned long long)ctr[PUBD_CTR_MSG_RECEIVED], (unsigned long long)ctr[PUBD_CTR_MSG_DELIVERED],
		      (unsigned long long)ctr[PUBD_CTR_MSG_DROPPED],
		      (unsigned long long)b.d.drops.by_reason[PUB_DROP_SUB_DISCONNECT]);
	assert_int_equal(b.d.holds.msgs, 0);
	assert_int_equal(ctr[PUBD_CTR_MSG_RECEIVED], 9);
	assert_true(b.d.drops.by_reason[PUB_DROP_SUB_DISCONNECT] >= 8);
	assert_int_equal(ctr[PUBD_CTR_MSG_RECEIVED], ctr[PUBD_CTR_MSG_DELIVERED] + ctr[PUBD_CTR_MSG_DROPPED]);
	hc_close(&sub);
	hd_stop(&b);
}

/* A reload turns the group's repair off: what it held for order goes out
 * then, in order, past the gap (nothing would release it later). */
static void test_holds_go_when_repair_is_turned_off(void **state)
{
	static struct hd b;
	struct pubd_group *g;
	struct hc sub;
	uint64_t s, got = 0, dl;

	(void)state;
	assert_int_equal(hd_start(&b, NULL, config("")), 0);
	slow_sub(&b, &sub);
	g = hd_group(&b, "r");
	inject(&b, 0);
	for (s = 2; s < 4; s++) /* 1 is lost: 2 and 3 are held */
		inject(&b, s);
	hd_turn(&b, 1);
	assert_true(b.d.held_bytes >= 2 * MSG_LEN);
	assert_int_equal(hd_reload(&b, NULL,
				   "limits:\n  reassembly_timeout_ms: 60000\n  subscriber_queue: 4\n"
				   "groups:\n  - {name: r, address: 239.78.0.4}\n"),
			 0);
	assert_ptr_equal(hd_group(&b, "r"), g); /* the same group, repair off */
	assert_int_equal(b.d.held_bytes, 0);
	assert_int_equal(b.d.holds.ix.n, 0);
	dl = hd_deadline(3000);
	while (!hd_past(dl) && got < 3) {
		hd_turn(&b, 1);
		got += drain(&sub);
	}
	assert_int_equal(got, 3);
	assert_int_equal(g->delivered, 3);
	hc_close(&sub);
	hd_stop(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_release_waits_for_the_queue, hd_teardown),
		cmocka_unit_test_teardown(test_forced_release_counts_overflow, hd_teardown),
		cmocka_unit_test_teardown(test_random_repairs_among_many_held, hd_teardown),
		cmocka_unit_test_teardown(test_sparse_seqs_stay_within_budget, hd_teardown),
		cmocka_unit_test_teardown(test_holding_streams_capped, hd_teardown),
		cmocka_unit_test_teardown(test_release_looks_at_touched_streams_only, hd_teardown),
		cmocka_unit_test_teardown(test_forced_release_takes_the_biggest, hd_teardown),
		cmocka_unit_test_teardown(test_hold_and_reassembly_share_the_budget, hd_teardown),
		cmocka_unit_test_teardown(test_holds_go_when_the_group_stops_receiving, hd_teardown),
		cmocka_unit_test_teardown(test_holds_counted_when_the_group_is_made_anew, hd_teardown),
		cmocka_unit_test_teardown(test_holds_go_when_repair_is_turned_off, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
