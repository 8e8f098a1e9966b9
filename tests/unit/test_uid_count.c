/* SPDX-License-Identifier: MIT */
/*
 * The connections-per-uid table (daemon/core/uid_count.h), against a plain
 * array of counts: random increments and decrements over a few hundred uids
 * (so the table grows, shrinks and shifts runs back on removal), every count
 * checked after each step, and a uid gone once its count is 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "uid_count.h"

#define NUIDS 300

static uint32_t uid_of(unsigned i)
{
	return i * 7919u + (i & 1 ? 0xffff0000u : 0); /* spread, and some high ones */
}

static void counts_match_a_plain_array_through_growth_and_removal(void **state)
{
	struct pubd_hash_key key = {0x1234, 0x5678};
	struct pubd_uid_count t;
	uint32_t want[NUIDS] = {0};
	unsigned step, i, held;

	(void)state;
	srand(7);
	pubd_uid_count_init(&t, &key);
	assert_int_equal(pubd_uid_count_get(&t, 5), 0);
	pubd_uid_count_dec(&t, 5); /* nothing there: left alone */
	for (step = 0; step < 20000; step++) {
		i = (unsigned)rand() % NUIDS;
		/* Mostly up in the first half, mostly down in the second. */
		if ((unsigned)rand() % 100 < (step < 10000 ? 70u : 30u)) {
			assert_int_equal(pubd_uid_count_inc(&t, uid_of(i)), 0);
			want[i]++;
		} else {
			pubd_uid_count_dec(&t, uid_of(i));
			if (want[i])
				want[i]--;
		}
		if (step % 97 == 0 || step > 19900) {
			for (i = 0, held = 0; i < NUIDS; i++) {
				assert_int_equal(pubd_uid_count_get(&t, uid_of(i)), want[i]);
				held += want[i] > 0;
			}
			assert_int_equal(t.n, held);
			assert_true(2 * t.n <= t.mask + 1);
		}
	}
	for (i = 0; i < NUIDS; i++)
		while (want[i]--)
			pubd_uid_count_dec(&t, uid_of(i));
	assert_int_equal(t.n, 0);
	assert_true(t.mask + 1 <= 16); /* given back */
	pubd_uid_count_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counts_match_a_plain_array_through_growth_and_removal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
