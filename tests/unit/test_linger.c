/* SPDX-License-Identifier: MIT */
/* Lingering after work (core/linger.h): counted polls, one linger in four
 * timed, the count corrected from the timing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "linger.h"

/* The clock the linger reads: the test sets what it returns next. */
static uint64_t clock_now;
static unsigned clock_reads;

static uint64_t fake_clock(void)
{
	clock_reads++;
	return clock_now;
}

/* Idle polls until the linger ends: how many said "go on". */
static unsigned run_out(struct pubd_linger *l, uint64_t spent)
{
	unsigned n = 0;

	while (pubd_linger_idle(l, fake_clock)) {
		n++;
		if (n == 1)
			clock_now += spent; /* the whole linger's time, as the last read sees it */
		assert_true(n < 10000000);
	}
	return n;
}

static void off_means_sleep_at_once(void **state)
{
	struct pubd_linger l;

	(void)state;
	pubd_linger_init(&l, 0);
	pubd_linger_work(&l);
	assert_false(pubd_linger_active(&l));
	assert_false(pubd_linger_idle(&l, fake_clock));
}

static void a_linger_is_its_count_of_idle_polls_after_work(void **state)
{
	struct pubd_linger l;

	(void)state;
	pubd_linger_init(&l, 50000);	      /* first guess: a microsecond a poll */
	assert_false(pubd_linger_active(&l)); /* idle until work */
	assert_false(pubd_linger_idle(&l, fake_clock));
	pubd_linger_work(&l);
	assert_true(pubd_linger_active(&l));
	assert_int_equal(run_out(&l, 50000), 50); /* timed at just the right length: kept */
	assert_false(pubd_linger_active(&l));
	assert_false(pubd_linger_idle(&l, fake_clock)); /* over: stays over */
	/* Work in the middle starts it again from the full count. */
	pubd_linger_work(&l);
	assert_true(pubd_linger_idle(&l, fake_clock));
	assert_true(pubd_linger_idle(&l, fake_clock));
	pubd_linger_work(&l);
	assert_int_equal(run_out(&l, 0), 50);
}

static void the_timing_shortens_at_once_and_lengthens_halfway(void **state)
{
	struct pubd_linger l;
	unsigned i;

	(void)state;
	clock_now = 1000;
	pubd_linger_init(&l, 50000);
	/* Polls took four times as long as guessed: a quarter as many. */
	pubd_linger_work(&l);
	clock_reads = 0;
	assert_int_equal(run_out(&l, 200000), 50);
	assert_int_equal(clock_reads, 2); /* its first poll and its end */
	assert_int_equal(l.polls, 12);
	/* The next three lingers are not timed: no clock read. */
	for (i = 0; i < 3; i++) {
		pubd_linger_work(&l);
		clock_reads = 0;
		assert_int_equal(run_out(&l, 1), 12);
		assert_int_equal(clock_reads, 0);
		assert_int_equal(l.polls, 12);
	}
	/* The fifth is: polls four times as fast want 48; it goes halfway. */
	pubd_linger_work(&l);
	assert_int_equal(run_out(&l, 12500), 12);
	assert_int_equal(l.polls, 30);
}

static void the_count_stays_within_bounds(void **state)
{
	struct pubd_linger l;

	(void)state;
	pubd_linger_init(&l, 100);
	assert_int_equal(l.polls, 1); /* never none */
	pubd_linger_work(&l);
	assert_int_equal(run_out(&l, 1000000000), 1); /* far too slow: still one */
	assert_int_equal(l.polls, 1);
	pubd_linger_init(&l, 10000000); /* 10 ms */
	for (unsigned i = 0; i < 80; i++) {
		pubd_linger_work(&l);
		run_out(&l, 1); /* impossibly fast polls */
	}
	assert_true(l.polls <= 1000000);
	assert_true(l.polls > 10000);
}

/* fabric.rx_linger_us auto: twelve wakeups of this host, within bounds. */
static void auto_is_twelve_wakeups_within_bounds(void **state)
{
	(void)state;
	assert_int_equal(pubd_linger_auto_us(0), LINGER_AUTO_UNKNOWN_US); /* not measured */
	assert_int_equal(pubd_linger_auto_us(1), LINGER_AUTO_MIN_US);
	assert_int_equal(pubd_linger_auto_us(1000), LINGER_AUTO_MIN_US); /* 12 us: below the floor */
	assert_int_equal(pubd_linger_auto_us(5000), 60);		 /* hardware: a wakeup of 5 us */
	assert_int_equal(pubd_linger_auto_us(78000), 936);		 /* emulation: 78 us */
	assert_int_equal(pubd_linger_auto_us(900000), LINGER_AUTO_MAX_US);
	assert_int_equal(pubd_linger_auto_us(UINT64_MAX / 64), LINGER_AUTO_MAX_US); /* no overflow to small */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(off_means_sleep_at_once),
		cmocka_unit_test(a_linger_is_its_count_of_idle_polls_after_work),
		cmocka_unit_test(the_timing_shortens_at_once_and_lengthens_halfway),
		cmocka_unit_test(the_count_stays_within_bounds),
		cmocka_unit_test(auto_is_twelve_wakeups_within_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
