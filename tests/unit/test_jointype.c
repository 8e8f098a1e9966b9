/* SPDX-License-Identifier: MIT */
/* The join type following listening (daemon/core/jointype.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "jointype.h"

#define MS   1000000ull
#define HOLD (3000 * MS)

/* A group as the verbs fabric keeps it: the decision applied, the join
 * completing when told. */
struct sim {
	struct pubd_jt_in in;
	unsigned joins_full, joins_sendonly;
	uint64_t wake;
};

static void step(struct sim *s)
{
	enum pubd_jt_action a = pubd_jt_next(&s->in, &s->wake);

	if (a == PUBD_JT_KEEP)
		return;
	s->in.kind = a == PUBD_JT_JOIN_FULL ? PUBD_JOIN_KIND_FULL : PUBD_JOIN_KIND_SENDONLY;
	s->in.pending = true;
	s->joins_full += a == PUBD_JT_JOIN_FULL;
	s->joins_sendonly += a == PUBD_JT_JOIN_SENDONLY;
}

static void listen_at(struct sim *s, bool on, uint64_t now)
{
	s->in.now_ns = now;
	s->in.listening = on;
	if (!on)
		s->in.idle_since_ns = now;
	step(s);
}

static void complete_at(struct sim *s, uint64_t now)
{
	s->in.now_ns = now;
	s->in.pending = false;
	step(s);
}

static void tick_at(struct sim *s, uint64_t now)
{
	s->in.now_ns = now;
	step(s);
}

static struct sim fresh(void)
{
	struct sim s = {.in = {.sendonly_ok = true, .hold_ns = HOLD, .now_ns = 1000 * MS}};

	step(&s);
	return s;
}

/* Publish-only: send-only; a subscriber: full, served once the join completes. */
static void publish_only_is_sendonly_until_a_listener(void **state)
{
	struct sim s = fresh();

	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_SENDONLY);
	assert_string_equal(pubd_jt_label(s.in.kind, s.in.pending), "joining");
	complete_at(&s, 1010 * MS);
	assert_string_equal(pubd_jt_label(s.in.kind, s.in.pending), "sendonly");
	assert_false(pubd_jt_ready(s.in.kind, s.in.pending));

	listen_at(&s, true, 2000 * MS);
	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_FULL);
	assert_false(pubd_jt_ready(s.in.kind, s.in.pending)); /* the SUBSCRIBE waits */
	complete_at(&s, 2010 * MS);
	assert_true(pubd_jt_ready(s.in.kind, s.in.pending));
	assert_string_equal(pubd_jt_label(s.in.kind, s.in.pending), "full");
	assert_int_equal(s.joins_full, 1);
	assert_int_equal(s.joins_sendonly, 1);
}

/* The last listener leaves: full for the hold-off, then send-only. */
static void back_to_sendonly_after_the_hold_off(void **state)
{
	struct sim s = fresh();

	complete_at(&s, 1010 * MS);
	listen_at(&s, true, 2000 * MS);
	complete_at(&s, 2010 * MS);
	listen_at(&s, false, 5000 * MS);
	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_FULL);
	assert_int_equal(s.wake, 5000 * MS + HOLD);
	tick_at(&s, 5000 * MS + HOLD - 1);
	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_FULL);
	tick_at(&s, 5000 * MS + HOLD);
	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_SENDONLY);
	assert_int_equal(s.wake, 0);
	assert_int_equal(s.joins_sendonly, 2);
}

/* A subscriber that comes and goes within the hold-off: no join at all. */
static void no_flap_within_the_hold_off(void **state)
{
	struct sim s = fresh();
	uint64_t t = 2000 * MS;

	complete_at(&s, 1010 * MS);
	listen_at(&s, true, t);
	complete_at(&s, t + 10 * MS);
	for (int i = 0; i < 50; i++) {
		t += 100 * MS;
		listen_at(&s, false, t);
		tick_at(&s, t + 50 * MS);
		listen_at(&s, true, t + 60 * MS);
		assert_true(pubd_jt_ready(s.in.kind, s.in.pending));
	}
	assert_int_equal(s.joins_full, 1);
	assert_int_equal(s.joins_sendonly, 1);
}

/* The hold-off counts from the last leave, not the first. */
static void hold_off_restarts_with_each_leave(void **state)
{
	struct sim s = fresh();

	complete_at(&s, 1010 * MS);
	listen_at(&s, true, 2000 * MS);
	complete_at(&s, 2010 * MS);
	listen_at(&s, false, 3000 * MS);
	listen_at(&s, true, 3000 * MS + HOLD - 10 * MS);
	listen_at(&s, false, 3000 * MS + HOLD);
	tick_at(&s, 3000 * MS + HOLD + 10 * MS);
	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_FULL);
	assert_int_equal(s.wake, 3000 * MS + 2 * HOLD);
}

/* A listener while the send-only join is under way: upgrade at once; a
 * leave while the full join is under way: decided once it completes. */
static void changes_while_a_join_is_under_way(void **state)
{
	struct sim s = fresh();

	assert_true(s.in.pending);
	listen_at(&s, true, 1001 * MS);
	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_FULL);
	listen_at(&s, false, 1002 * MS);
	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_FULL); /* pending: keep */
	complete_at(&s, 1003 * MS + HOLD);
	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_SENDONLY);
}

/* A provider that refused send-only: full from the start, and it stays. */
static void refused_sendonly_means_full_always(void **state)
{
	struct sim s = {.in = {.sendonly_ok = false, .hold_ns = HOLD, .now_ns = 1000 * MS}};

	step(&s);
	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_FULL);
	complete_at(&s, 1010 * MS);
	listen_at(&s, true, 2000 * MS);
	listen_at(&s, false, 3000 * MS);
	tick_at(&s, 3000 * MS + 10 * HOLD);
	assert_int_equal(s.in.kind, PUBD_JOIN_KIND_FULL);
	assert_int_equal(s.joins_full, 1);
	assert_int_equal(s.joins_sendonly, 0);
	assert_string_equal(pubd_jt_label(PUBD_JOIN_KIND_NONE, false), "-");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(publish_only_is_sendonly_until_a_listener),
		cmocka_unit_test(back_to_sendonly_after_the_hold_off),
		cmocka_unit_test(no_flap_within_the_hold_off),
		cmocka_unit_test(hold_off_restarts_with_each_leave),
		cmocka_unit_test(changes_while_a_join_is_under_way),
		cmocka_unit_test(refused_sendonly_means_full_always),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
