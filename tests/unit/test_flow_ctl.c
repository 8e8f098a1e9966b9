/* SPDX-License-Identifier: MIT */
/*
 * Receiver flow control, the pure part (core/flow_ctl.h): the source's
 * limit is the lowest of its receivers', each receiver's latest STATUS
 * standing by its serial; it forgets a receiver after the timeout and one
 * to make room; a subscriber's room by
 * count and bytes; when a STATUS is worth sending.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "flow_ctl.h"

#define MS 1000000ull

static struct pubd_fc_source fc;

static void no_receiver_holds_nothing_back(void **state)
{
	(void)state;
	pubd_fc_source_init(&fc, 1000 * MS);
	assert_true(pubd_fc_source_allows(&fc, 0));
	assert_true(pubd_fc_source_allows(&fc, UINT64_MAX - 1));
}

static void the_slowest_receiver_sets_the_limit(void **state)
{
	(void)state;
	pubd_fc_source_init(&fc, 1000 * MS);
	assert_true(pubd_fc_source_status(&fc, 1 * MS, 0xa, 100, 1));
	assert_true(pubd_fc_source_allows(&fc, 99));
	assert_false(pubd_fc_source_allows(&fc, 100));
	assert_true(pubd_fc_source_status(&fc, 2 * MS, 0xb, 50, 7));
	assert_int_equal(fc.n, 2);
	assert_int_equal(fc.limit, 50);
	assert_false(pubd_fc_source_allows(&fc, 50));
	/* b catches up past a: a holds it back now */
	assert_true(pubd_fc_source_status(&fc, 3 * MS, 0xb, 400, 8));
	assert_int_equal(fc.limit, 100);
	assert_int_equal(fc.statuses, 3);
}

/* The latest STATUS stands, less room included (a subscriber joined a
 * receiver that had none); one older than it, however late, is ignored;
 * serials wrap. */
static void the_latest_status_stands(void **state)
{
	(void)state;
	pubd_fc_source_init(&fc, 1000 * MS);
	assert_true(pubd_fc_source_status(&fc, 1 * MS, 0xa, UINT32_MAX, 1)); /* no subscriber there */
	assert_true(pubd_fc_source_status(&fc, 2 * MS, 0xa, 300, 2));	     /* one joined */
	assert_int_equal(fc.limit, 300);
	assert_false(pubd_fc_source_status(&fc, 3 * MS, 0xa, 5000, 1)); /* reordered: older */
	assert_int_equal(fc.limit, 300);
	assert_int_equal(fc.stale, 1);
	assert_int_equal(fc.v[0].last_ns, 2 * MS);
	assert_false(pubd_fc_source_status(&fc, 3 * MS, 0xa, 5000, 2)); /* a duplicate */
	assert_true(pubd_fc_source_status(&fc, 4 * MS, 0xb, 900, UINT32_MAX));
	assert_true(pubd_fc_source_status(&fc, 5 * MS, 0xb, 800, 0)); /* past the wrap */
	assert_true(pubd_fc_source_status(&fc, 6 * MS, 0xb, 1000, 1));
	assert_false(pubd_fc_source_status(&fc, 7 * MS, 0xb, 50, UINT32_MAX - 3));
	assert_int_equal(fc.limit, 300);
	assert_int_equal(fc.statuses, 5);
}

static void a_silent_receiver_is_forgotten(void **state)
{
	(void)state;
	pubd_fc_source_init(&fc, 100 * MS);
	pubd_fc_source_status(&fc, 0, 0xa, 10, 1);
	pubd_fc_source_status(&fc, 50 * MS, 0xb, 1000, 1);
	assert_int_equal(pubd_fc_source_expire(&fc, 100 * MS), 0); /* exactly the timeout: kept */
	assert_int_equal(fc.limit, 10);
	assert_int_equal(pubd_fc_source_expire(&fc, 100 * MS + 1), 1);
	assert_int_equal(fc.n, 1);
	assert_int_equal(fc.limit, 1000);
	assert_int_equal(fc.timed_out, 1);
	assert_int_equal(pubd_fc_source_expire(&fc, 151 * MS), 1);
	assert_true(pubd_fc_source_allows(&fc, 5000)); /* nobody left */
}

static void a_full_table_forgets_the_least_recently_heard(void **state)
{
	uint32_t i;

	(void)state;
	pubd_fc_source_init(&fc, 1000 * MS);
	for (i = 0; i < PUBD_FC_RECEIVERS_MAX; i++)
		pubd_fc_source_status(&fc, 10 + i, 100 + i, i == 0 ? 5 : 1000, 1);
	assert_int_equal(fc.n, PUBD_FC_RECEIVERS_MAX);
	assert_int_equal(fc.limit, 5);
	pubd_fc_source_status(&fc, 10000, 0xffff, 2000, 1); /* id 100 (limit 5) heard least recently */
	assert_int_equal(fc.n, PUBD_FC_RECEIVERS_MAX);
	assert_int_equal(fc.replaced, 1);
	assert_int_equal(fc.limit, 1000);
}

static void room_by_count_and_by_bytes(void **state)
{
	(void)state;
	assert_int_equal(pubd_fc_sub_room(0, 0, 1024, 1 << 20, 64), 1024);
	assert_int_equal(pubd_fc_sub_room(1000, 64000, 1024, 1 << 20, 64), 24);
	assert_int_equal(pubd_fc_sub_room(1024, 0, 1024, 1 << 20, 64), 0);
	assert_int_equal(pubd_fc_sub_room(2000, 0, 1024, 1 << 20, 64), 0); /* over (limits lowered) */
	/* 1 MiB messages: the bytes bound, not the count */
	assert_int_equal(pubd_fc_sub_room(2, 2 << 20, 1024, 8 << 20, 1 << 20), 6);
	assert_int_equal(pubd_fc_sub_room(2, 8 << 20, 1024, 8 << 20, 1 << 20), 0);
	assert_int_equal(pubd_fc_sub_room(0, 0, 10, 100, 0), 10); /* no mean size yet */
}

static void a_status_goes_when_the_limit_moved_a_quarter(void **state)
{
	(void)state;
	assert_true(pubd_fc_should_send(5, 0, 256, false)); /* the first */
	assert_false(pubd_fc_should_send(1000 + 255, 1000, 256, false));
	assert_true(pubd_fc_should_send(1000 + 256, 1000, 256, false));
	assert_false(pubd_fc_should_send(900, 1000, 256, false)); /* a little back */
	assert_true(pubd_fc_should_send(744, 1000, 256, false));  /* a quarter back: a subscriber joined */
	assert_true(pubd_fc_should_send(900, 1000, 256, true));	  /* keepalive */
	assert_true(pubd_fc_should_send(1001, 1000, 256, true));
	assert_true(pubd_fc_should_send(1001, 1000, 0, false)); /* a queue of under 4 */
	assert_false(pubd_fc_should_send(1000, 1000, 0, false));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_receiver_holds_nothing_back),
		cmocka_unit_test(the_slowest_receiver_sets_the_limit),
		cmocka_unit_test(the_latest_status_stands),
		cmocka_unit_test(a_silent_receiver_is_forgotten),
		cmocka_unit_test(a_full_table_forgets_the_least_recently_heard),
		cmocka_unit_test(room_by_count_and_by_bytes),
		cmocka_unit_test(a_status_goes_when_the_limit_moved_a_quarter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
