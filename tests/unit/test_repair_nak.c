/* SPDX-License-Identifier: MIT */
/* The receiver's NAK schedule, on an injected clock and random numbers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "repair_nak.h"

#define MS 1000000ull

struct rec {
	unsigned sends;
	uint64_t last_first, last_count, last_tries;
	uint64_t given_up; /* messages */
	unsigned give_ups;
	uint64_t gu_first, gu_count;
	uint64_t rnd;
	bool refuse; /* NAKs cannot go (the source's token not heard yet) */
	unsigned refused;
	uint8_t seen[1024]; /* per seq: 1 given up */
	bool many_sources;  /* seqs repeat across sources: seen is not kept */
};

static bool on_send(void *ctx, const struct pubd_nak_gap *g, uint64_t first, uint64_t count)
{
	struct rec *r = ctx;

	if (r->refuse) {
		r->refused++;
		return false;
	}
	r->sends++;
	r->last_first = first;
	r->last_count = count;
	r->last_tries = g->tries;
	return true;
}

static void on_give_up(void *ctx, uint64_t source, uint64_t group, uint64_t first, uint64_t count, bool partial)
{
	struct rec *r = ctx;
	uint64_t i;

	(void)source, (void)group, (void)partial;
	r->give_ups++;
	r->given_up += count;
	r->gu_first = first;
	r->gu_count = count;
	for (i = first; !r->many_sources && i < first + count && i < sizeof(r->seen); i++) {
		assert_int_equal(r->seen[i], 0); /* never twice */
		r->seen[i] = 1;
	}
}

static uint64_t fixed_rand(void *ctx)
{
	return ((struct rec *)ctx)->rnd;
}

static const struct pubd_nak_ops ops = {.send = on_send, .give_up = on_give_up};

static void setup(struct pubd_nak_sched *s, struct rec *r, uint32_t max_gaps)
{
	struct pubd_nak_cfg cfg = {.backoff_ns = 60 * MS, .interval_ns = 100 * MS, .retries = 3, .max_gaps = max_gaps};

	memset(r, 0, sizeof(*r));
	assert_int_equal(pubd_nak_init(s, &cfg, &ops, r, fixed_rand, r), 0);
}

static void nak_waits_backoff_then_repeats_then_gives_up(void **state)
{
	struct pubd_nak_sched s;
	struct rec r;

	(void)state;
	setup(&s, &r, 8);
	r.rnd = 1000 * MS + 25 * MS; /* mod (60 ms + 1 ns): a back-off well inside 0..60 ms */
	pubd_nak_gap(&s, 10 * MS, 1, 2, 100, 5, false);
	assert_true(pubd_nak_next_deadline(&s) >= 10 * MS && pubd_nak_next_deadline(&s) <= 70 * MS);
	pubd_nak_run(&s, pubd_nak_next_deadline(&s) - 1);
	assert_int_equal(r.sends, 0);
	pubd_nak_run(&s, pubd_nak_next_deadline(&s));
	assert_int_equal(r.sends, 1);
	assert_int_equal(r.last_first, 100);
	assert_int_equal(r.last_count, 5);
	/* then every 100 ms, three NAKs in all, then given up */
	pubd_nak_run(&s, pubd_nak_next_deadline(&s));
	pubd_nak_run(&s, pubd_nak_next_deadline(&s));
	assert_int_equal(r.sends, 3);
	assert_int_equal(r.given_up, 0);
	pubd_nak_run(&s, pubd_nak_next_deadline(&s));
	assert_int_equal(r.sends, 3);
	assert_int_equal(r.given_up, 5);
	assert_int_equal(s.given_up_retries, 1);
	assert_int_equal(pubd_nak_next_deadline(&s), UINT64_MAX);
	pubd_nak_close(&s);
}

/* A source's token comes with its heartbeats, and a busy source's can come
 * late: NAKs that could not go are no tries while the gap is young, so every
 * try is left for when they can; a gap whose NAKs never go still ends. */
static void nak_that_cannot_go_is_no_try(void **state)
{
	struct pubd_nak_sched s;
	struct rec r;
	uint64_t t;

	(void)state;
	setup(&s, &r, 8); /* back-off 60 ms, interval 100 ms, 3 tries: 460 ms in all */
	r.rnd = 0;
	r.refuse = true;
	pubd_nak_gap(&s, 0, 1, 2, 100, 5, false);
	for (t = 0; t < 350 * MS; t = pubd_nak_next_deadline(&s))
		pubd_nak_run(&s, pubd_nak_next_deadline(&s));
	assert_int_equal(r.refused, 4); /* at 0, 100, 200 and 300 ms */
	assert_int_equal(r.given_up, 0);
	r.refuse = false; /* the token is heard: all three tries follow */
	pubd_nak_run(&s, pubd_nak_next_deadline(&s));
	pubd_nak_run(&s, pubd_nak_next_deadline(&s));
	pubd_nak_run(&s, pubd_nak_next_deadline(&s));
	assert_int_equal(r.sends, 3);
	assert_int_equal(s.naks_sent, 3);
	assert_int_equal(r.given_up, 0);
	pubd_nak_run(&s, pubd_nak_next_deadline(&s));
	assert_int_equal(r.given_up, 5);
	pubd_nak_close(&s);

	setup(&s, &r, 8);
	r.refuse = true; /* never: tries count once the whole schedule has passed */
	pubd_nak_gap(&s, 0, 1, 2, 100, 5, false);
	while (!r.given_up && pubd_nak_next_deadline(&s) != UINT64_MAX)
		pubd_nak_run(&s, pubd_nak_next_deadline(&s));
	assert_int_equal(r.given_up, 5);
	assert_int_equal(r.sends, 0);
	assert_int_equal(s.naks_sent, 0);
	assert_true(r.refused <= 5 + 3);
	pubd_nak_close(&s);
}

static void nak_backoff_zero_asks_at_once(void **state)
{
	struct pubd_nak_sched s;
	struct pubd_nak_cfg cfg = {.backoff_ns = 0, .interval_ns = 100 * MS, .retries = 1, .max_gaps = 4};
	struct rec r;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_int_equal(pubd_nak_init(&s, &cfg, &ops, &r, fixed_rand, &r), 0);
	pubd_nak_gap(&s, 5 * MS, 1, 2, 7, 1, true);
	assert_int_equal(pubd_nak_next_deadline(&s), 5 * MS);
	pubd_nak_close(&s);
}

static void nak_filled_messages_leave_their_gap(void **state)
{
	struct pubd_nak_sched s;
	struct rec r;

	(void)state;
	setup(&s, &r, 8);
	pubd_nak_gap(&s, 0, 1, 2, 10, 10, false); /* 10..19 */
	assert_true(pubd_nak_filled(&s, 1, 2, 10));
	assert_true(pubd_nak_filled(&s, 1, 2, 19));
	assert_true(pubd_nak_filled(&s, 1, 2, 15)); /* split: 11..14 and 16..18 */
	assert_false(pubd_nak_filled(&s, 1, 2, 15));
	assert_false(pubd_nak_filled(&s, 1, 3, 12)); /* another group */
	assert_false(pubd_nak_pending(&s, 1, 2, 10));
	assert_true(pubd_nak_pending(&s, 1, 2, 11));
	assert_true(pubd_nak_pending(&s, 1, 2, 18));
	assert_int_equal(pubd_nak_count(&s), 2);
	pubd_nak_run(&s, 0);
	assert_int_equal(r.sends, 2);
	for (uint64_t q = 11; q < 19; q++)
		if (q != 15)
			assert_true(pubd_nak_filled(&s, 1, 2, q));
	assert_int_equal(pubd_nak_count(&s), 0);
	pubd_nak_run(&s, UINT64_MAX / 2);
	assert_int_equal(r.given_up, 0);
	pubd_nak_close(&s);
}

static void nak_gone_gives_up_what_it_names(void **state)
{
	struct pubd_nak_sched s;
	struct rec r;

	(void)state;
	setup(&s, &r, 8);
	pubd_nak_gap(&s, 0, 1, 2, 10, 10, false); /* 10..19 */
	pubd_nak_gap(&s, 0, 1, 2, 30, 2, false);  /* 30..31 */
	pubd_nak_gone(&s, 1, 2, 0, 13);		  /* 10..12 gone */
	assert_int_equal(r.given_up, 3);
	pubd_nak_gone(&s, 1, 2, 15, 2); /* 15..16 gone: 13..14 and 17..19 stay */
	assert_int_equal(r.given_up, 5);
	assert_true(pubd_nak_pending(&s, 1, 2, 14));
	assert_true(pubd_nak_pending(&s, 1, 2, 17));
	pubd_nak_gone(&s, 1, 2, 0, 100); /* everything */
	assert_int_equal(r.given_up, 12);
	assert_int_equal(pubd_nak_count(&s), 0);
	for (uint64_t q = 10; q < 20; q++)
		assert_int_equal(r.seen[q], 1);
	pubd_nak_close(&s);
}

static void nak_bounded_gaps_give_up_the_oldest(void **state)
{
	struct pubd_nak_sched s;
	struct rec r;

	(void)state;
	setup(&s, &r, 2);
	pubd_nak_gap(&s, 0, 1, 2, 10, 1, false);
	pubd_nak_gap(&s, 0, 1, 2, 20, 1, false);
	pubd_nak_gap(&s, 0, 1, 2, 30, 1, false);
	assert_int_equal(r.given_up, 1);
	assert_int_equal(r.gu_first, 10);
	assert_int_equal(s.given_up_full, 1);
	/* a split with no room gives up the tail, each message once */
	pubd_nak_gap(&s, 0, 1, 2, 40, 5, false); /* gives up 20 */
	assert_true(pubd_nak_filled(&s, 1, 2, 42));
	assert_int_equal(r.given_up, 1 + 1 + 2); /* 10, 20, 43..44 */
	assert_true(pubd_nak_pending(&s, 1, 2, 41));
	assert_false(pubd_nak_pending(&s, 1, 2, 43));
	pubd_nak_close(&s);
}

static void nak_long_range_goes_in_pieces(void **state)
{
	struct pubd_nak_sched s;
	struct rec r;

	(void)state;
	setup(&s, &r, 2);
	r.rnd = 0;
	pubd_nak_gap(&s, 0, 1, 2, 0, PUBD_NAK_MAX_RANGE + 10, false);
	pubd_nak_run(&s, 0);
	assert_int_equal(r.sends, 2);
	assert_int_equal(r.last_first, PUBD_NAK_MAX_RANGE);
	assert_int_equal(r.last_count, 10);
	/* the same gap found again (a later heartbeat) is not a second gap */
	pubd_nak_gap(&s, 0, 1, 2, 5, 3, false);
	assert_int_equal(pubd_nak_count(&s), 1);
	pubd_nak_forget(&s, 0, 2);
	assert_int_equal(pubd_nak_count(&s), 0);
	assert_int_equal(r.given_up, 0);
	pubd_nak_close(&s);
}

/* Group 2 has its own timing (no back-off, 10 ms interval, 1 retry);
 * group 3 says nothing and takes cfg's; group 1 fast too but via op. */
static bool group_timing(void *ctx, uint64_t group, struct pubd_nak_timing *t)
{
	(void)ctx;
	if (group != 2)
		return false;
	*t = (struct pubd_nak_timing){.backoff_ns = 0, .interval_ns = 10 * MS, .retries = 1};
	return true;
}

static void nak_timings_are_per_group(void **state)
{
	struct pubd_nak_cfg cfg = {.backoff_ns = 60 * MS, .interval_ns = 100 * MS, .retries = 3, .max_gaps = 8};
	struct pubd_nak_ops o = ops;
	struct pubd_nak_sched s;
	struct rec r = {.rnd = 60 * MS};

	(void)state;
	o.timing = group_timing;
	assert_int_equal(pubd_nak_init(&s, &cfg, &o, &r, fixed_rand, &r), 0);
	pubd_nak_gap(&s, 0, 1, 2, 100, 1, false); /* group 2: asked at once */
	pubd_nak_gap(&s, 0, 1, 3, 200, 1, false); /* group 3: after cfg's 60 ms */
	assert_int_equal(pubd_nak_next_deadline(&s), 0);
	pubd_nak_run(&s, 0);
	assert_int_equal(r.sends, 1);
	assert_int_equal(r.last_first, 100);
	assert_int_equal(pubd_nak_next_deadline(&s), 10 * MS); /* group 2's interval */
	pubd_nak_run(&s, 10 * MS);			       /* its one retry is used up */
	assert_int_equal(r.give_ups, 1);
	assert_int_equal(r.gu_first, 100);
	assert_int_equal(pubd_nak_next_deadline(&s), 60 * MS);
	pubd_nak_run(&s, 60 * MS);
	assert_int_equal(r.sends, 2);
	assert_int_equal(r.last_first, 200);
	assert_int_equal(pubd_nak_next_deadline(&s), 160 * MS); /* cfg's interval */
	pubd_nak_run(&s, 160 * MS);
	pubd_nak_run(&s, 260 * MS);
	pubd_nak_run(&s, 360 * MS); /* three NAKs sent: given up */
	assert_int_equal(r.sends, 4);
	assert_int_equal(r.give_ups, 2);
	assert_int_equal(r.gu_first, 200);
	pubd_nak_close(&s);
}

/* A flood of gaps (forged first fragments of many messages, each a partial
 * found stuck): the schedule stays within max_gaps, gives up the oldest in
 * batches, and a full scan of it costs no more than the array. */
static void nak_flood_of_gaps_is_bounded(void **state)
{
	struct pubd_nak_sched s;
	struct rec r;
	uint64_t q;

	(void)state;
	setup(&s, &r, 4096);
	r.many_sources = true;
	for (q = 0; q < 40000; q++)
		pubd_nak_gap(&s, 0, 100 + q / 64, 2, q % 64, 1, true);
	assert_true(pubd_nak_count(&s) <= 4096);
	assert_true(pubd_nak_count(&s) > 4096 - 4096 / 8);
	assert_int_equal(s.given_up_full, 40000 - pubd_nak_count(&s));
	assert_int_equal(r.give_ups, 40000 - pubd_nak_count(&s));
	/* the youngest are the ones kept */
	assert_true(pubd_nak_pending(&s, 100 + 39999 / 64, 2, 39999 % 64));
	assert_false(pubd_nak_pending(&s, 100, 2, 0));
	pubd_nak_close(&s);
}

/* A forged jump of 900 million: asked for up to PUBD_NAK_GAP_MAX (16 NAKs
 * a try), the rest given up at once; and a run sends at most
 * PUBD_NAK_RUN_MAX NAKs, the rest going at the next run. */
static void nak_huge_gap_and_runs_are_bounded(void **state)
{
	struct pubd_nak_sched s;
	struct rec r;

	(void)state;
	setup(&s, &r, 4096);
	r.rnd = 0;
	pubd_nak_gap(&s, 0, 1, 2, 5, 900000000ull, false);
	assert_int_equal(s.given_up_large, 1);
	assert_int_equal(r.given_up, 900000000ull - PUBD_NAK_GAP_MAX);
	assert_int_equal(r.gu_first, 5 + PUBD_NAK_GAP_MAX);
	pubd_nak_run(&s, 0);
	assert_int_equal(r.sends, PUBD_NAK_GAP_MAX / PUBD_NAK_MAX_RANGE);
	pubd_nak_forget(&s, 1, 2);
	r.sends = 0;
	for (uint64_t q = 0; q < 300; q++)
		pubd_nak_gap(&s, 0, 7, 2, 10 * q, 1, false);
	pubd_nak_run(&s, 0);
	assert_int_equal(r.sends, PUBD_NAK_RUN_MAX);
	assert_int_equal(pubd_nak_next_deadline(&s), 0); /* the rest is due now */
	pubd_nak_run(&s, 0);
	assert_int_equal(r.sends, 300);
	assert_int_equal(pubd_nak_next_deadline(&s), 100 * MS);
	pubd_nak_close(&s);
}

/* Random gaps, fills, GONEs and forgets against a plain set of what is
 * pending: dead slots and compaction never change the answer. */
static void nak_random_ops_agree_with_a_model(void **state)
{
	enum { SEQS = 512, SRCS = 3 };
	static uint8_t model[SRCS][SEQS];
	struct pubd_nak_sched s;
	struct rec r;
	uint64_t x = 12345;

	(void)state;
	memset(model, 0, sizeof(model));
	setup(&s, &r, 1u << 16); /* room for all: no give-up for want of it */
	r.many_sources = true;
	for (int step = 0; step < 20000; step++) {
		uint64_t op, src, a, n, i;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		op = (x >> 33) % 10;
		src = (x >> 20) % SRCS;
		a = (x >> 40) % SEQS;
		n = 1 + (x >> 50) % 8;
		if (a + n > SEQS)
			n = SEQS - a;
		if (op < 4) {
			bool any = false;

			for (i = a; i < a + n; i++)
				any |= model[src][i];
			if (any)
				continue; /* the schedule takes overlapping gaps as they come; the model does not */
			pubd_nak_gap(&s, 0, src + 1, 2, a, n, false);
			for (i = a; i < a + n; i++)
				model[src][i] = 1;
		} else if (op < 8) {
			assert_int_equal(pubd_nak_filled(&s, src + 1, 2, a), model[src][a]);
			model[src][a] = 0;
		} else if (op == 8) {
			pubd_nak_gone(&s, src + 1, 2, a, n);
			for (i = a; i < a + n; i++)
				model[src][i] = 0;
		} else if ((x >> 60) == 0) {
			pubd_nak_forget(&s, src + 1, 2);
			memset(model[src], 0, sizeof(model[src]));
		}
		if (step % 97 == 0)
			for (uint64_t k = 0; k < SRCS; k++)
				for (i = 0; i < SEQS; i++)
					assert_int_equal(pubd_nak_pending(&s, k + 1, 2, i), model[k][i]);
	}
	pubd_nak_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nak_waits_backoff_then_repeats_then_gives_up),
		cmocka_unit_test(nak_that_cannot_go_is_no_try),
		cmocka_unit_test(nak_backoff_zero_asks_at_once),
		cmocka_unit_test(nak_filled_messages_leave_their_gap),
		cmocka_unit_test(nak_gone_gives_up_what_it_names),
		cmocka_unit_test(nak_bounded_gaps_give_up_the_oldest),
		cmocka_unit_test(nak_long_range_goes_in_pieces),
		cmocka_unit_test(nak_timings_are_per_group),
		cmocka_unit_test(nak_flood_of_gaps_is_bounded),
		cmocka_unit_test(nak_huge_gap_and_runs_are_bounded),
		cmocka_unit_test(nak_random_ops_agree_with_a_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
