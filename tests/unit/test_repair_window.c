/* SPDX-License-Identifier: MIT */
/* The source's retransmit window: age, byte limits, shared budget, holes, NAK verdicts. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "repair_window.h"

#define MS 1000000ull
#define OV PUBD_REPAIR_ENTRY_OVERHEAD

static const struct pubd_repair_window_cfg cfg_default = {
	.window_bytes = 10 * (1000 + OV),
	.max_age_ns = 100 * MS,
	.linger_ns = 20 * MS,
	.mcast_ns = 10 * MS,
};

/* Keep message seq of len bytes at now; the window holds its own reference. */
static bool keep(struct pubd_repair_window *w, uint64_t now, uint64_t seq, size_t len)
{
	struct pubd_msgbuf *m = pubd_msgbuf_alloc(len);
	bool kept;

	memset(m->data, (int)(seq & 0xff), len);
	kept = pubd_repair_window_keep(w, now, seq, m, 976);
	pubd_msgbuf_put(m);
	return kept;
}

static void window_keeps_within_age_then_expires(void **state)
{
	struct pubd_repair_budget b = {.limit = 1ull << 30};
	struct pubd_repair_window w;
	struct pubd_repair_entry *e;
	uint64_t s;

	(void)state;
	pubd_repair_window_init(&w, &cfg_default, &b);
	for (s = 5; s < 10; s++)
		assert_true(keep(&w, s * MS, s, 1000));
	e = pubd_repair_window_find(&w, 7);
	assert_non_null(e);
	assert_int_equal(e->msg->len, 1000);
	assert_int_equal(e->msg->data[0], 7);
	assert_int_equal(e->unit, 976);
	assert_null(pubd_repair_window_find(&w, 4));
	assert_null(pubd_repair_window_find(&w, 10));
	assert_int_equal(pubd_repair_window_next_seq(&w), 10);
	assert_int_equal(b.used, 5 * (1000 + OV));
	/* message 5 was sent at 5 ms: kept through 105 ms, gone after */
	assert_int_equal(pubd_repair_window_next_deadline(&w), 105 * MS + 1);
	pubd_repair_window_expire(&w, 105 * MS);
	assert_non_null(pubd_repair_window_find(&w, 5));
	pubd_repair_window_expire(&w, 107 * MS + 1);
	assert_null(pubd_repair_window_find(&w, 5));
	assert_null(pubd_repair_window_find(&w, 7));
	assert_non_null(pubd_repair_window_find(&w, 8));
	assert_int_equal(w.evicted_age, 3);
	assert_int_equal(b.used, 2 * (1000 + OV));
	pubd_repair_window_close(&w);
	assert_int_equal(b.used, 0);
	assert_int_equal(pubd_msgbuf_cached() > 0, 1); /* every buffer went back */
}

static void window_bytes_are_a_hard_limit(void **state)
{
	struct pubd_repair_budget b = {.limit = 1ull << 30};
	struct pubd_repair_window w;
	uint64_t s;

	(void)state;
	pubd_repair_window_init(&w, &cfg_default, &b);
	for (s = 0; s < 25; s++)
		assert_true(keep(&w, MS, s, 1000)); /* all young */
	assert_true(w.bytes <= cfg_default.window_bytes);
	assert_int_equal(w.bytes, 10 * (1000 + OV));
	assert_null(pubd_repair_window_find(&w, 14));
	assert_non_null(pubd_repair_window_find(&w, 15));
	assert_int_equal(w.evicted_bytes, 15);
	/* a message bigger than the window is not kept: a hole */
	assert_false(keep(&w, MS, 25, 20000));
	assert_null(pubd_repair_window_find(&w, 25));
	assert_int_equal(pubd_repair_window_next_seq(&w), 26);
	assert_int_equal(w.not_kept, 1);
	pubd_repair_window_close(&w);
}

static void window_budget_is_shared_by_groups(void **state)
{
	struct pubd_repair_budget b = {.limit = 4 * (1000 + OV)};
	struct pubd_repair_window w1, w2;

	(void)state;
	pubd_repair_window_init(&w1, &cfg_default, &b);
	pubd_repair_window_init(&w2, &cfg_default, &b);
	assert_true(keep(&w1, MS, 0, 1000));
	assert_true(keep(&w1, MS, 1, 1000));
	assert_true(keep(&w1, MS, 2, 1000));
	assert_true(keep(&w2, MS, 0, 1000));
	assert_int_equal(b.used, b.limit);
	/* w2 is full by the budget; it gives up its own oldest first... */
	assert_true(keep(&w2, MS, 1, 1000));
	assert_null(pubd_repair_window_find(&w2, 0));
	/* ...and when it has nothing to give, the message is a hole, w1 untouched */
	assert_false(keep(&w2, MS, 2, 2000));
	assert_non_null(pubd_repair_window_find(&w1, 0));
	assert_true(b.used <= b.limit);
	pubd_repair_window_close(&w1);
	pubd_repair_window_close(&w2);
	assert_int_equal(b.used, 0);
}

static void window_skipped_numbers_are_holes(void **state)
{
	struct pubd_repair_budget b = {.limit = 1ull << 30};
	struct pubd_repair_window w;

	(void)state;
	pubd_repair_window_init(&w, &cfg_default, &b);
	assert_true(keep(&w, MS, 100, 10));
	assert_true(keep(&w, MS, 103, 10));
	assert_non_null(pubd_repair_window_find(&w, 100));
	assert_null(pubd_repair_window_find(&w, 101));
	assert_non_null(pubd_repair_window_find(&w, 103));
	assert_int_equal(pubd_repair_window_nak(&w, 2 * MS, 101, 1), PUBD_REPAIR_GONE);
	assert_int_equal(pubd_repair_window_nak(&w, 2 * MS, 99, 1), PUBD_REPAIR_GONE);
	assert_int_equal(pubd_repair_window_nak(&w, 2 * MS, 104, 1), PUBD_REPAIR_AHEAD);
	/* backwards is refused */
	assert_false(keep(&w, MS, 102, 10));
	/* many more than 200 entries: the ring grows and keeps order */
	for (uint64_t s = 104; s < 400; s++)
		assert_true(keep(&w, MS, s, 10));
	assert_int_equal(pubd_repair_window_find(&w, 399)->msg->data[0], 399 & 0xff);
	assert_int_equal(pubd_repair_window_find(&w, 320)->msg->data[0], 320 & 0xff);
	assert_null(pubd_repair_window_find(&w, 150)); /* by bytes */
	pubd_repair_window_close(&w);
}

static void window_nak_verdicts(void **state)
{
	struct pubd_repair_budget b = {.limit = 1ull << 30};
	struct pubd_repair_window w;

	(void)state;
	pubd_repair_window_init(&w, &cfg_default, &b);
	assert_int_equal(pubd_repair_window_nak(&w, MS, 0, 1), PUBD_REPAIR_AHEAD); /* nothing sent */
	assert_true(keep(&w, MS, 0, 100));
	assert_true(keep(&w, MS, 1, 100));
	/* receiver A asks: unicast; A again within linger: duplicate */
	assert_int_equal(pubd_repair_window_nak(&w, 10 * MS, 0, 0xa), PUBD_REPAIR_UNICAST);
	assert_int_equal(pubd_repair_window_nak(&w, 15 * MS, 0, 0xa), PUBD_REPAIR_DUPLICATE);
	/* B asks for it within mcast_ns of A: multicast, which then covers A too */
	assert_int_equal(pubd_repair_window_nak(&w, 16 * MS, 0, 0xb), PUBD_REPAIR_MULTICAST);
	assert_int_equal(pubd_repair_window_nak(&w, 17 * MS, 0, 0xa), PUBD_REPAIR_DUPLICATE);
	assert_int_equal(pubd_repair_window_nak(&w, 18 * MS, 0, 0xc), PUBD_REPAIR_DUPLICATE);
	/* after the linger, A's repeat is answered again */
	assert_int_equal(pubd_repair_window_nak(&w, 40 * MS, 0, 0xa), PUBD_REPAIR_UNICAST);
	/* B long after A (beyond mcast_ns): unicast */
	assert_int_equal(pubd_repair_window_nak(&w, 40 * MS, 1, 0xa), PUBD_REPAIR_UNICAST);
	assert_int_equal(pubd_repair_window_nak(&w, 55 * MS, 1, 0xb), PUBD_REPAIR_UNICAST);
	pubd_repair_window_close(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(window_keeps_within_age_then_expires),
		cmocka_unit_test(window_bytes_are_a_hard_limit),
		cmocka_unit_test(window_budget_is_shared_by_groups),
		cmocka_unit_test(window_skipped_numbers_are_holes),
		cmocka_unit_test(window_nak_verdicts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
