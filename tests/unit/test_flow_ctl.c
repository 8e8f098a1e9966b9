/* SPDX-License-Identifier: MIT */
/*
 * Receiver flow control, the pure part (core/flow_ctl.h): the source's
 * limit is the lowest of its receivers', each receiver's latest STATUS
 * standing by its serial; it forgets a receiver after the timeout and one
 * to make room, and one stuck holding the source back (its host then
 * refused for a penalty that doubles); a subscriber's room by count and
 * bytes; when a STATUS is worth sending.
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
	assert_true(pubd_fc_source_status(&fc, 1 * MS, 0xa, 100, 1, NULL, 0));
	assert_true(pubd_fc_source_allows(&fc, 99));
	assert_false(pubd_fc_source_allows(&fc, 100));
	assert_true(pubd_fc_source_status(&fc, 2 * MS, 0xb, 50, 7, NULL, 0));
	assert_int_equal(fc.n, 2);
	assert_int_equal(fc.limit, 50);
	assert_false(pubd_fc_source_allows(&fc, 50));
	/* b catches up past a: a holds it back now */
	assert_true(pubd_fc_source_status(&fc, 3 * MS, 0xb, 400, 8, NULL, 0));
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
	assert_true(pubd_fc_source_status(&fc, 1 * MS, 0xa, UINT32_MAX, 1, NULL, 0)); /* no subscriber there */
	assert_true(pubd_fc_source_status(&fc, 2 * MS, 0xa, 300, 2, NULL, 0));	      /* one joined */
	assert_int_equal(fc.limit, 300);
	assert_false(pubd_fc_source_status(&fc, 3 * MS, 0xa, 5000, 1, NULL, 0)); /* reordered: older */
	assert_int_equal(fc.limit, 300);
	assert_int_equal(fc.stale, 1);
	assert_int_equal(fc.v[0].last_ns, 2 * MS);
	assert_false(pubd_fc_source_status(&fc, 3 * MS, 0xa, 5000, 2, NULL, 0)); /* a duplicate */
	assert_true(pubd_fc_source_status(&fc, 4 * MS, 0xb, 900, UINT32_MAX, NULL, 0));
	assert_true(pubd_fc_source_status(&fc, 5 * MS, 0xb, 800, 0, NULL, 0)); /* past the wrap */
	assert_true(pubd_fc_source_status(&fc, 6 * MS, 0xb, 1000, 1, NULL, 0));
	assert_false(pubd_fc_source_status(&fc, 7 * MS, 0xb, 50, UINT32_MAX - 3, NULL, 0));
	assert_int_equal(fc.limit, 300);
	assert_int_equal(fc.statuses, 5);
}

static void a_silent_receiver_is_forgotten(void **state)
{
	(void)state;
	pubd_fc_source_init(&fc, 100 * MS);
	pubd_fc_source_status(&fc, 0, 0xa, 10, 1, NULL, 0);
	pubd_fc_source_status(&fc, 50 * MS, 0xb, 1000, 1, NULL, 0);
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
		pubd_fc_source_status(&fc, 10 + i, 100 + i, i == 0 ? 5 : 1000, 1, NULL, 0);
	assert_int_equal(fc.n, PUBD_FC_RECEIVERS_MAX);
	assert_int_equal(fc.limit, 5);
	pubd_fc_source_status(&fc, 10000, 0xffff, 2000, 1, NULL, 0); /* id 100 (limit 5) heard least recently */
	assert_int_equal(fc.n, PUBD_FC_RECEIVERS_MAX);
	assert_int_equal(fc.replaced, 1);
	assert_int_equal(fc.limit, 1000);
}

/* Receiver a (host A) holds the source, waiting at 10, unmoved: after two
 * timeouts it is forgotten and A is refused for 8 timeouts, then 16 at its
 * next strike. Receiver b (host B) that moves on a little within each
 * timeout is never stuck; nor is anyone while the source waits for
 * nothing, nor a receiver ahead of where it waits. */
static void a_stuck_receiver_is_forgotten_and_its_host_refused(void **state)
{
	const uint64_t T = 100 * MS;
	uint64_t t;

	(void)state;
	pubd_fc_source_init(&fc, T);
	assert_true(pubd_fc_source_status(&fc, 1, 0xa, 10, 1, "A", 1));
	assert_true(pubd_fc_source_status(&fc, 1, 0xb, 10, 1, "B", 1));
	/* Not waiting: nobody holds, however long. */
	for (t = 0; t <= 10 * T; t += T / 2)
		assert_int_equal(pubd_fc_source_stuck(&fc, t, false, 0), 0);
	/* Waiting at 10: both hold; b moves on past it, a does not. */
	for (t = 10 * T; t <= 10 * T + 2 * T; t += T / 2) {
		assert_int_equal(pubd_fc_source_stuck(&fc, t, true, 10), 0);
		if ((t - 10 * T) % T == 0)
			assert_true(pubd_fc_source_status(&fc, t, 0xb, 11 + (t - 10 * T) / T,
							  2 + (uint32_t)((t - 10 * T) / T), "B", 1));
	}
	assert_int_equal(pubd_fc_source_stuck(&fc, 12 * T + 1, true, 10), 1);
	assert_int_equal(fc.n, 1);
	assert_int_equal(fc.v[0].id, 0xb);
	assert_int_equal(fc.stuck, 1);
	assert_int_equal(fc.limit, 13);
	/* Host A's receivers, any id, hold nothing back for 8 timeouts. */
	assert_false(pubd_fc_source_status(&fc, 13 * T, 0xc, 0, 1, "A", 1));
	assert_false(pubd_fc_source_status(&fc, 12 * T + 8 * T, 0xa, 0, 2, "A", 1));
	assert_int_equal(fc.penalized, 2);
	assert_int_equal(fc.n, 1);
	assert_true(pubd_fc_source_status(&fc, 12 * T + 8 * T + 2, 0xc, 12, 1, "A", 1));
	/* b is ahead of 12, c holds there: stuck again, 16 timeouts now. */
	assert_int_equal(pubd_fc_source_stuck(&fc, 21 * T, true, 12), 0);
	assert_int_equal(pubd_fc_source_stuck(&fc, 23 * T + 1, true, 12), 1);
	assert_false(pubd_fc_source_status(&fc, 23 * T + 15 * T, 0xd, 0, 1, "A", 1));
	assert_true(pubd_fc_source_status(&fc, 23 * T + 16 * T + 2, 0xd, 100, 1, "A", 1));
	assert_int_equal(fc.stuck, 2);
}

/* A host that says "full" under a new receiver id every 0.4 timeout (each
 * forgotten after a timeout of silence, so none is itself held back two
 * timeouts): the host held the source without a break, and is struck. */
static void a_host_inventing_receivers_is_struck(void **state)
{
	const uint64_t T = 100 * MS;
	uint64_t t, id = 0x1000, gone = 0, at = 0;

	(void)state;
	pubd_fc_source_init(&fc, T);
	for (t = 0; t <= 3 * T && !gone; t += 2 * T / 10) {
		if (t % (4 * T / 10) == 0)
			assert_true(pubd_fc_source_status(&fc, t, id++, 7, 1, "F", 1));
		pubd_fc_source_expire(&fc, t);
		assert_true(fc.n <= 3);
		gone = pubd_fc_source_stuck(&fc, t, true, 7);
		at = t;
	}
	assert_true(gone > 0);
	assert_true(at > 2 * T && at <= 2 * T + 2 * T / 10);
	assert_int_equal(fc.n, 0);
	assert_true(fc.timed_out > 0); /* ids came and went meanwhile */
	assert_false(pubd_fc_source_status(&fc, t + 1, id++, 7, 1, "F", 1));
	assert_true(pubd_fc_source_allows(&fc, 100));
}

/* A slow receiver holds the source back at nearly every look, but lets it
 * on between them: the source waits at another message each time. That
 * is flow control working, for as long as it lasts; only a hold at one
 * message for two timeouts is stuck. */
static void a_slow_receiver_is_never_stuck(void **state)
{
	const uint64_t T = 100 * MS;
	uint64_t t, next = 100;
	uint32_t serial = 1;

	(void)state;
	pubd_fc_source_init(&fc, T);
	for (t = 0; t <= 50 * T; t += T / 5) {
		/* It took a few; the source sent up to its new limit and waits. */
		assert_true(pubd_fc_source_status(&fc, t, 0x5, next, serial++, "S", 1));
		assert_int_equal(pubd_fc_source_stuck(&fc, t + 1, true, next), 0);
		next += 3;
	}
	assert_int_equal(fc.stuck, 0);
	assert_int_equal(fc.n, 1);
	/* It stops (the last hold began at the last look, t - T / 5 + 1):
	 * stuck two timeouts later, not before. */
	t -= T / 5;
	assert_int_equal(pubd_fc_source_stuck(&fc, t + 2 * T, true, next - 3), 0);
	assert_int_equal(pubd_fc_source_stuck(&fc, t + 2 * T + T / 5, true, next - 3), 1);
}

/* Hosts are bounded: a new one beyond the table takes the place of the one
 * whose penalty ends first. */
static void the_host_table_is_bounded(void **state)
{
	uint32_t i;
	uint8_t host[2];

	(void)state;
	pubd_fc_source_init(&fc, 100 * MS);
	for (i = 0; i < PUBD_FC_HOSTS_MAX + 5; i++) {
		host[0] = (uint8_t)i;
		host[1] = (uint8_t)(i >> 8);
		assert_true(pubd_fc_source_status(&fc, i * 1000 * MS, 0x100 + i, 5, 1, host, 2));
		assert_int_equal(pubd_fc_source_stuck(&fc, i * 1000 * MS + 1, true, 5), 0);
		assert_int_equal(pubd_fc_source_stuck(&fc, i * 1000 * MS + 300 * MS, true, 5), 1);
	}
	assert_int_equal(fc.nhosts, PUBD_FC_HOSTS_MAX);
	assert_int_equal(fc.stuck, PUBD_FC_HOSTS_MAX + 5);
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
		cmocka_unit_test(a_stuck_receiver_is_forgotten_and_its_host_refused),
		cmocka_unit_test(a_host_inventing_receivers_is_struck),
		cmocka_unit_test(a_slow_receiver_is_never_stuck),
		cmocka_unit_test(the_host_table_is_bounded),
		cmocka_unit_test(room_by_count_and_by_bytes),
		cmocka_unit_test(a_status_goes_when_the_limit_moved_a_quarter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
