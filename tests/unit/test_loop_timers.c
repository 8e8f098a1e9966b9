/* SPDX-License-Identifier: MIT */
/*
 * The event loop's timers: each fires at its deadline, in deadline order,
 * however they were re-armed. pubd_loop_timer_arm scans all timers only
 * when the one holding the earliest deadline moves later; these cases move
 * timers every way and check none is missed or held back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "loop.h"

#define MS 1000000ull

struct fired {
	char order[8];
	unsigned n;
	uint64_t at[3];
};

struct tctx {
	struct fired *f;
	char name;
	unsigned idx;
};

static void on_timer(void *ctx, uint64_t now)
{
	struct tctx *t = ctx;

	t->f->order[t->f->n++] = t->name;
	t->f->at[t->idx] = now;
}

/* Run the loop until n timers have fired or limit_ms passed. */
static void run_until(struct pubd_loop *l, struct fired *f, unsigned n, uint64_t limit_ms)
{
	uint64_t end = pubd_now_ns() + limit_ms * MS;

	while (f->n < n && pubd_now_ns() < end)
		assert_true(pubd_loop_run_once(l, 50) >= 0);
}

/* B held the earliest deadline and moves later: A, armed before, is not
 * held back to B's new deadline; C re-armed to its own deadline and then
 * disarmed never fires. */
static void timer_moved_later_does_not_hold_back_the_others(void **state)
{
	struct pubd_loop *l = pubd_loop_create();
	struct fired f = {0};
	struct tctx ca = {&f, 'A', 0}, cb = {&f, 'B', 1}, cc = {&f, 'C', 2};
	struct pubd_loop_timer *a, *b, *c;
	uint64_t t0;

	(void)state;
	assert_non_null(l);
	a = pubd_loop_timer(l, on_timer, &ca);
	b = pubd_loop_timer(l, on_timer, &cb);
	c = pubd_loop_timer(l, on_timer, &cc);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	t0 = pubd_now_ns();
	pubd_loop_timer_arm(a, t0 + 40 * MS);
	pubd_loop_timer_arm(b, t0 + 10 * MS); /* the earliest */
	pubd_loop_timer_arm(c, t0 + 20 * MS);
	pubd_loop_timer_arm(c, t0 + 20 * MS);  /* unchanged */
	pubd_loop_timer_arm(b, t0 + 400 * MS); /* the earliest moves later: A is next */
	pubd_loop_timer_arm(c, UINT64_MAX);    /* disarmed */
	run_until(l, &f, 1, 2000);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.order[0], 'A');
	assert_true(f.at[0] >= t0 + 40 * MS);
	assert_true(f.at[0] < t0 + 300 * MS);
	run_until(l, &f, 2, 2000);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.order[1], 'B');
	assert_true(f.at[1] >= t0 + 400 * MS);
	run_until(l, &f, 3, 100);
	assert_int_equal(f.n, 2);
	pubd_loop_timer_free(a);
	pubd_loop_timer_free(b);
	pubd_loop_timer_free(c);
	pubd_loop_destroy(l);
}

/* A timer armed earlier than the earliest goes first; one re-armed from
 * its own callback fires again. */
struct rearm {
	struct fired *f;
	struct pubd_loop_timer *t;
	unsigned left;
};

static void on_rearm(void *ctx, uint64_t now)
{
	struct rearm *r = ctx;

	r->f->order[r->f->n++] = 'R';
	if (--r->left)
		pubd_loop_timer_arm(r->t, now + 5 * MS);
}

static void timer_armed_earlier_goes_first_and_rearms_itself(void **state)
{
	struct pubd_loop *l = pubd_loop_create();
	struct fired f = {0};
	struct tctx ca = {&f, 'A', 0};
	struct rearm r = {&f, NULL, 3};
	struct pubd_loop_timer *a;
	uint64_t t0;

	(void)state;
	assert_non_null(l);
	a = pubd_loop_timer(l, on_timer, &ca);
	r.t = pubd_loop_timer(l, on_rearm, &r);
	assert_non_null(a);
	assert_non_null(r.t);
	t0 = pubd_now_ns();
	pubd_loop_timer_arm(a, t0 + 200 * MS);
	pubd_loop_timer_arm(r.t, t0 + 5 * MS);
	run_until(l, &f, 4, 2000);
	assert_int_equal(f.n, 4);
	assert_memory_equal(f.order, "RRRA", 4);
	pubd_loop_timer_free(a);
	pubd_loop_timer_free(r.t);
	pubd_loop_destroy(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(timer_moved_later_does_not_hold_back_the_others),
		cmocka_unit_test(timer_armed_earlier_goes_first_and_rearms_itself),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
