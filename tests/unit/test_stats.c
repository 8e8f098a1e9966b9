// SPDX-License-Identifier: MIT
/*
 * The per-source statistics map: bounded by max, evicting idle entries
 * first, then ones that never delivered, folding evicted counts into the
 * evicted row so nothing vanishes from the totals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "stats.h"

#define SEC	  1000000000ull
#define GRP	  0x7777ull
#define N_FORGED  200000u
#define MAX_SRC	  4096u
#define REAL_BASE 0xfeed000000000000ull

static uint64_t drops_sum(const struct pubd_source_map *m, enum pub_drop_reason r)
{
	uint64_t t = m->evicted.drops.by_reason[r];
	uint32_t i;

	for (i = 0; i < m->cap; i++)
		if (m->slots[i])
			t += m->slots[i]->drops.by_reason[r];
	return t;
}

/* 200,000 forged ids, each with one counted gap: the map stays at max
 * entries and every gap is still in the sum of rows. */
static void test_forged_flood_is_bounded_and_counted(void **state)
{
	struct pubd_source_map m = {.max = MAX_SRC};
	uint32_t i;

	(void)state;
	for (i = 0; i < N_FORGED; i++) {
		struct pubd_source_stats *s = pubd_source_map_get(&m, 0x1000 + i, GRP, i);

		assert_non_null(s);
		pubd_drops_add(&s->drops, PUB_DROP_SEQ_GAP, 3);
	}
	assert_int_equal(m.n, MAX_SRC);
	assert_true(m.cap <= 4 * MAX_SRC);
	assert_int_equal(m.evicted.sources, N_FORGED - MAX_SRC);
	assert_int_equal(drops_sum(&m, PUB_DROP_SEQ_GAP), 3ull * N_FORGED);
	pubd_source_map_free(&m);
}

/* Established streams (they delivered) survive a flood of new ids. */
static void test_established_streams_survive_a_flood(void **state)
{
	struct pubd_source_map m = {.max = 64};
	struct pubd_source_stats *s;
	uint64_t now = 0, i, k;

	(void)state;
	for (k = 0; k < 8; k++) {
		s = pubd_source_map_get(&m, REAL_BASE + k, GRP, now);
		pubd_source_map_delivered(&m, s, 100);
	}
	for (i = 0; i < 100000; i++) {
		now += 1000; /* 0.1 s of flood: nobody idle */
		pubd_source_map_get(&m, i + 1, GRP, now);
		if (i % 1000 == 0)
			for (k = 0; k < 8; k++)
				pubd_source_map_delivered(&m, pubd_source_map_get(&m, REAL_BASE + k, GRP, now), 100);
	}
	assert_int_equal(m.n, 64);
	for (k = 0; k < 8; k++) {
		uint32_t before = m.evicted.sources;

		s = pubd_source_map_get(&m, REAL_BASE + k, GRP, now);
		assert_int_equal(m.evicted.sources, before); /* found, not re-created */
		assert_int_equal(s->delivered, 101);
	}
	assert_int_equal(m.evicted.delivered, 0);
	pubd_source_map_free(&m);
}

/* An established entry idle for longer than idle_ns goes before a fresh
 * unproven one. */
static void test_idle_entries_go_first(void **state)
{
	struct pubd_source_map m = {.max = 16, .idle_ns = 30 * SEC};
	struct pubd_source_stats *s;
	uint64_t i;

	(void)state;
	s = pubd_source_map_get(&m, REAL_BASE, GRP, 0);
	pubd_source_map_delivered(&m, s, 10);
	pubd_drops_add(&s->drops, PUB_DROP_REASM_TIMEOUT, 2);
	for (i = 1; i < 16; i++)
		pubd_source_map_get(&m, i, GRP, 60 * SEC);
	pubd_source_map_get(&m, 100, GRP, 61 * SEC);
	assert_int_equal(m.evicted.sources, 1);
	assert_int_equal(m.evicted.delivered, 1);
	assert_int_equal(m.evicted.bytes, 10);
	assert_int_equal(m.evicted.drops.by_reason[PUB_DROP_REASM_TIMEOUT], 2);
	pubd_source_map_free(&m);
}

/* Removal keeps every other entry reachable (shifted probe runs): random
 * keys in a small table with constant eviction, and forget_group. */
static void test_every_entry_stays_reachable(void **state)
{
	struct pubd_source_map m = {.max = 100};
	uint64_t keys[100];
	unsigned i, k, found;

	(void)state;
	srand(7);
	for (i = 0; i < 20000; i++) {
		uint64_t key = (uint64_t)rand() % 5000;

		pubd_source_map_get(&m, key, key % 3, i);
	}
	assert_int_equal(m.n, 100);
	for (i = 0, k = 0; i < m.cap; i++)
		if (m.slots[i])
			keys[k++] = m.slots[i]->source_id;
	assert_int_equal(k, 100);
	for (i = 0; i < k; i++) {
		uint32_t before = m.evicted.sources;

		assert_non_null(pubd_source_map_get(&m, keys[i], keys[i] % 3, 20000));
		assert_int_equal(m.evicted.sources, before);
	}
	pubd_source_map_forget_group(&m, 1);
	for (i = 0, found = 0; i < m.cap; i++)
		if (m.slots[i]) {
			assert_int_not_equal(m.slots[i]->group_id, 1);
			found++;
		}
	assert_int_equal(found, m.n);
	for (i = 0; i < k; i++) {
		uint32_t before = m.evicted.sources, n = m.n;

		if (keys[i] % 3 == 1)
			continue;
		pubd_source_map_get(&m, keys[i], keys[i] % 3, 20001);
		assert_int_equal(m.evicted.sources, before);
		assert_int_equal(m.n, n);
	}
	pubd_source_map_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forged_flood_is_bounded_and_counted),
		cmocka_unit_test(test_established_streams_survive_a_flood),
		cmocka_unit_test(test_idle_entries_go_first),
		cmocka_unit_test(test_every_entry_stays_reachable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
