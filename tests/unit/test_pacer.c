/* SPDX-License-Identifier: MIT */
/* The pacer's token bucket: exact waits, no drift, reloads, extremes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "pacer.h"

#define S 1000000000ull

__extension__ typedef unsigned __int128 u128;

static void pacer_starts_full_and_says_exactly_how_long_to_wait(void **state)
{
	struct pubd_pacer p;

	pubd_pacer_init(&p, 0, 1000, 100); /* 1000 B/s: one byte per ms */
	assert_int_equal(pubd_pacer_take(&p, 0, 60), 0);
	assert_int_equal(pubd_pacer_take(&p, 0, 40), 0);
	assert_int_equal(pubd_pacer_tokens(&p), 0);
	assert_int_equal(pubd_pacer_take(&p, 0, 1), 1000000);
	assert_int_equal(pubd_pacer_take(&p, 0, 3), 3000000);
	/* One ns short is still short; the wait told is enough. */
	assert_int_equal(pubd_pacer_take(&p, 2999999, 3), 1);
	assert_int_equal(pubd_pacer_take(&p, 3000000, 3), 0);
	/* A long pause fills the bucket to its depth, no further. */
	assert_int_equal(pubd_pacer_take(&p, 100 * S, 100), 0);
	assert_int_not_equal(pubd_pacer_take(&p, 100 * S, 1), 0);
}

static void pacer_unpaced_never_waits(void **state)
{
	struct pubd_pacer p;
	int i;

	pubd_pacer_init(&p, 5, 0, 0);
	for (i = 0; i < 1000; i++)
		assert_int_equal(pubd_pacer_take(&p, 5, UINT64_MAX), 0);
}

/*
 * A sender that waits exactly as long as it is told, for ten million
 * datagrams of an awkward size at an awkward (prime) rate: at every send
 * the bytes sent beyond the initial burst are exactly what the rate earned
 * by then, to within the one nanosecond a wait is rounded up by. Any
 * rounding that accumulated would break this long before the end.
 */
static void pacer_has_no_drift_over_a_long_run(void **state)
{
	const uint64_t rate = 999983, burst = 4096, dgram = 1473;
	struct pubd_pacer p;
	uint64_t now = 7, w, sent = 0, i;

	pubd_pacer_init(&p, now, rate, burst);
	for (i = 0; i < 10000000; i++) {
		while ((w = pubd_pacer_take(&p, now, dgram)) != 0)
			now += w;
		sent += dgram;
		if (sent > burst) {
			u128 earned = (u128)(now - 7) * rate, owed = (u128)(sent - burst) * S;

			/* Sent no earlier than earned, and no later than needed. */
			assert_true(earned >= owed);
			assert_true(earned < owed + rate);
		}
	}
	/* 14.7 GB at ~1 MB/s: about four simulated hours. */
	assert_true(now > 4ull * 3600 * S);
}

static void pacer_reload_keeps_what_was_earned(void **state)
{
	struct pubd_pacer p;

	pubd_pacer_init(&p, 0, 1000, 1000);
	assert_int_equal(pubd_pacer_take(&p, 0, 1000), 0);
	/* Half a second earned 500 bytes at the old rate... */
	pubd_pacer_set(&p, S / 2, 2000, 1000);
	assert_int_equal(pubd_pacer_tokens(&p), 500);
	assert_int_equal(pubd_pacer_take(&p, S / 2, 500), 0);
	/* ...and from then on the new rate: 2 bytes per ms. */
	assert_int_equal(pubd_pacer_take(&p, S / 2, 1), 500000);
	assert_int_equal(pubd_pacer_take(&p, S / 2 + 500000, 1), 0);

	/* A smaller depth clips what is stored. */
	pubd_pacer_init(&p, 0, 1000, 10000);
	pubd_pacer_set(&p, 0, 1000, 100);
	assert_int_equal(pubd_pacer_take(&p, 0, 100), 0);
	assert_int_equal(pubd_pacer_take(&p, 0, 1), 1000000);

	/* Unpaced to paced starts full; paced to unpaced stops waiting. */
	pubd_pacer_init(&p, 0, 0, 0);
	pubd_pacer_set(&p, 10, 1000, 300);
	assert_int_equal(pubd_pacer_tokens(&p), 300);
	assert_int_equal(pubd_pacer_take(&p, 10, 300), 0);
	assert_int_not_equal(pubd_pacer_take(&p, 10, 1), 0);
	pubd_pacer_set(&p, 10, 0, 0);
	assert_int_equal(pubd_pacer_take(&p, 10, 1000000), 0);
}

static void pacer_lets_an_oversized_datagram_go_from_a_full_bucket(void **state)
{
	struct pubd_pacer p;

	pubd_pacer_init(&p, 0, 1000, 100);
	assert_int_equal(pubd_pacer_take(&p, 0, 1000), 0); /* 900 bytes of debt */
	assert_int_equal(pubd_pacer_tokens(&p), -900);
	assert_int_equal(pubd_pacer_take(&p, 0, 1), 901000000);
	/* The next big one waits for a full bucket: 900 + 100 ms. */
	assert_int_equal(pubd_pacer_take(&p, 0, 5000), 1000000000);
	assert_int_equal(pubd_pacer_take(&p, S, 5000), 0);
}

static void pacer_survives_huge_rates_gaps_and_sizes(void **state)
{
	struct pubd_pacer p;

	/* The largest rate and depth: nothing wraps. */
	pubd_pacer_init(&p, 0, UINT64_MAX, UINT64_MAX);
	assert_int_equal(pubd_pacer_take(&p, 0, UINT64_MAX), 0);
	/* One ns at UINT64_MAX bytes/s earns UINT64_MAX nano-bytes. */
	assert_int_equal(pubd_pacer_take(&p, 1, UINT64_MAX / S), 0);
	assert_int_not_equal(pubd_pacer_take(&p, 1, 1), 0);
	/* The longest gap at the largest rate: full, not wrapped. */
	assert_int_equal(pubd_pacer_take(&p, UINT64_MAX, 1), 0);
	assert_int_equal(pubd_pacer_tokens(&p), INT64_MAX); /* shown clamped */
	assert_int_equal(pubd_pacer_take(&p, UINT64_MAX, UINT64_MAX - 1), 0);

	/* 1 TiB/s with its depth: a gap of the whole clock range fills, no more. */
	pubd_pacer_init(&p, 0, 1ull << 40, pubd_pacer_burst_for(1ull << 40, 65507));
	assert_int_equal(pubd_pacer_take(&p, 0, (1ull << 40) / 200), 0);
	assert_int_equal(pubd_pacer_take(&p, UINT64_MAX - 1, (1ull << 40) / 200), 0);
	assert_int_equal(pubd_pacer_take(&p, UINT64_MAX - 1, 1), 1);

	/* The slowest rate and the largest wanted depth: the wait saturates. */
	pubd_pacer_init(&p, 0, 1, UINT64_MAX);
	assert_int_equal(pubd_pacer_take(&p, 0, UINT64_MAX), 0);
	assert_int_equal(pubd_pacer_take(&p, 0, UINT64_MAX), UINT64_MAX);
}

static void pacer_ignores_a_clock_going_backwards(void **state)
{
	struct pubd_pacer p;

	pubd_pacer_init(&p, 1000 * S, 1000, 10);
	assert_int_equal(pubd_pacer_take(&p, 1000 * S, 10), 0);
	assert_int_equal(pubd_pacer_take(&p, 5, 1), 1000000); /* earned nothing */
	assert_int_equal(pubd_pacer_take(&p, 1000 * S + 1000000, 1), 0);
}

static void pacer_refund_gives_back_an_unsent_datagram(void **state)
{
	struct pubd_pacer p;

	pubd_pacer_init(&p, 0, 1000, 100);
	assert_int_equal(pubd_pacer_take(&p, 0, 80), 0);
	pubd_pacer_refund(&p, 80);
	assert_int_equal(pubd_pacer_tokens(&p), 100);
	assert_int_equal(pubd_pacer_take(&p, 0, 100), 0);
}

static void pacer_wait_says_when_without_taking(void **state)
{
	struct pubd_pacer p;

	pubd_pacer_init(&p, 0, 1000, 100);
	assert_int_equal(pubd_pacer_wait(&p, 0, 100), 0);
	assert_int_equal(pubd_pacer_take(&p, 0, 100), 0);
	assert_int_equal(pubd_pacer_wait(&p, 0, 50), 50000000);
	assert_int_equal(pubd_pacer_wait(&p, 0, 5000), 100000000); /* at most the depth */
	assert_int_equal(pubd_pacer_wait(&p, 20000000, 50), 30000000);
	assert_int_equal(pubd_pacer_tokens(&p), 20); /* earned, nothing taken */
}

static void pacer_depth_is_5ms_or_two_datagrams(void **state)
{
	assert_int_equal(pubd_pacer_burst_for(100ull << 20, 4096), (100ull << 20) / 200);
	assert_int_equal(pubd_pacer_burst_for(100000, 4096), 8192);
	assert_int_equal(pubd_pacer_burst_for(UINT64_MAX, 65507), UINT64_MAX / 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pacer_starts_full_and_says_exactly_how_long_to_wait),
		cmocka_unit_test(pacer_unpaced_never_waits),
		cmocka_unit_test(pacer_has_no_drift_over_a_long_run),
		cmocka_unit_test(pacer_reload_keeps_what_was_earned),
		cmocka_unit_test(pacer_lets_an_oversized_datagram_go_from_a_full_bucket),
		cmocka_unit_test(pacer_survives_huge_rates_gaps_and_sizes),
		cmocka_unit_test(pacer_ignores_a_clock_going_backwards),
		cmocka_unit_test(pacer_refund_gives_back_an_unsent_datagram),
		cmocka_unit_test(pacer_wait_says_when_without_taking),
		cmocka_unit_test(pacer_depth_is_5ms_or_two_datagrams),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
