/* SPDX-License-Identifier: MIT */
/*
 * The event loop's timers: each fires at its deadline, in deadline order,
 * however they were re-armed. pubd_loop_timer_arm scans all timers only
 * when the one holding the earliest deadline moves later; these cases move
 * timers every way and check none is missed or held back.
 *
 * And fairness: a periodic timer whose callback takes longer than its
 * period (sleeps in it: the slow work under test) holds back no other
 * timer, no fd and no signal; a periodic timer re-armed with
 * pubd_loop_timer_arm_periodic skips the periods it missed; a turn timer
 * (the watchdog's) waits for the loop to have served its fds.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

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

/*
 * A periodic timer whose callback works 4 ms and re-arms 2 ms after it
 * started, as pubd's heartbeat did: due again at once, every time. After
 * SLOW_CAP runs it stops, so that a loop that never gets back to epoll
 * while it is due (pubd's before this case) returns at all.
 */
#define SLOW_CAP 100

struct slow {
	struct pubd_loop_timer *t;
	uint64_t period, work; /* ns */
	bool periodic;	       /* re-arm with pubd_loop_timer_arm_periodic */
	unsigned runs;
	int efd;   /* made readable at the first run, when >= 0 */
	int signo; /* raised at the first run, when not 0 */
	uint64_t start[8], end[8];
};

static void on_slow(void *ctx, uint64_t now)
{
	struct slow *s = ctx;
	struct timespec ts = {0, (long)s->work};
	uint64_t one = 1;

	if (s->runs < 8)
		s->start[s->runs] = now;
	if (!s->runs++) {
		if (s->efd >= 0)
			assert_int_equal(write(s->efd, &one, sizeof(one)), sizeof(one));
		if (s->signo)
			raise(s->signo);
	}
	nanosleep(&ts, NULL); /* the slow work under test */
	if (s->runs <= 8)
		s->end[s->runs - 1] = pubd_now_ns();
	if (s->runs >= SLOW_CAP)
		return;
	if (s->periodic)
		pubd_loop_timer_arm_periodic(s->t, now, s->period);
	else
		pubd_loop_timer_arm(s->t, now + s->period);
}

static struct pubd_loop_timer *slow_timer(struct pubd_loop *l, struct slow *s)
{
	s->period = 2 * MS;
	s->work = 4 * MS;
	s->efd = -1;
	s->t = pubd_loop_timer(l, on_slow, s);
	assert_non_null(s->t);
	return s->t;
}

/* What the other timer, fd or signal saw of the slow timer when served. */
struct other {
	struct slow *s;
	struct pubd_loop *l;
	int fd;
	bool served;
	unsigned slow_runs;
};

static void on_other_timer(void *ctx, uint64_t now)
{
	struct other *o = ctx;

	(void)now;
	o->served = true;
	o->slow_runs = o->s->runs;
}

/* The slow timer is created last, so it is first on the loop's list (as
 * the heartbeat sat ahead of the reassembly timer). The other timer is due
 * 10 ms in: by then the slow one has run three times at most. */
static void slow_periodic_timer_does_not_starve_another_timer(void **state)
{
	struct pubd_loop *l = pubd_loop_create();
	struct slow s = {0};
	struct other o = {&s, l, -1, false, 0};
	struct pubd_loop_timer *ot;
	uint64_t t0, end;

	(void)state;
	assert_non_null(l);
	ot = pubd_loop_timer(l, on_other_timer, &o);
	assert_non_null(ot);
	slow_timer(l, &s);
	t0 = pubd_now_ns();
	pubd_loop_timer_arm(ot, t0 + 10 * MS);
	pubd_loop_timer_arm(s.t, t0 + 2 * MS);
	end = t0 + 3000 * MS;
	while (!o.served && pubd_now_ns() < end)
		assert_true(pubd_loop_run_once(l, 50) >= 0);
	print_message("  other timer served after %u runs of the slow one (it stops after %d)\n", o.slow_runs,
		      SLOW_CAP);
	assert_true(o.served);
	assert_true(o.slow_runs <= 6);
	pubd_loop_timer_free(ot);
	pubd_loop_timer_free(s.t);
	pubd_loop_destroy(l);
}

static void on_other_fd(void *ctx, uint32_t events)
{
	struct other *o = ctx;
	uint64_t v;

	(void)events;
	assert_int_equal(read(o->fd, &v, sizeof(v)), sizeof(v));
	o->served = true;
	o->slow_runs = o->s->runs;
}

/* The slow timer's first run makes an eventfd readable: the loop serves it
 * in the next turn, within a run or two of the slow timer. */
static void slow_periodic_timer_does_not_starve_an_fd(void **state)
{
	struct pubd_loop *l = pubd_loop_create();
	struct slow s = {0};
	struct other o = {&s, l, -1, false, 0};
	struct pubd_loop_watch *w;
	unsigned turns = 0, first = 0;
	uint64_t end;

	(void)state;
	assert_non_null(l);
	o.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(o.fd >= 0);
	w = pubd_loop_watch(l, o.fd, EPOLLIN, on_other_fd, &o);
	assert_non_null(w);
	slow_timer(l, &s);
	s.efd = o.fd;
	pubd_loop_timer_arm(s.t, pubd_now_ns() + 2 * MS);
	end = pubd_now_ns() + 3000 * MS;
	while (!o.served && pubd_now_ns() < end) {
		assert_true(pubd_loop_run_once(l, 50) >= 0);
		turns++;
		if (s.runs && !first)
			first = turns;
	}
	print_message("  eventfd served after %u runs of the slow timer, %u loop turns after its first "
		      "(it stops after %d)\n",
		      o.slow_runs, turns - first, SLOW_CAP);
	assert_true(o.served);
	assert_true(o.slow_runs <= 2);
	assert_true(turns - first <= 2);
	pubd_loop_unwatch(w);
	pubd_loop_timer_free(s.t);
	pubd_loop_destroy(l);
	close(o.fd);
}

static void on_other_signal(void *ctx, int signo)
{
	struct other *o = ctx;

	assert_int_equal(signo, SIGUSR1);
	o->served = true;
	o->slow_runs = o->s->runs;
	pubd_loop_stop(o->l);
}

/* SIGTERM ends pubd while a periodic timer overruns: here SIGUSR1, raised
 * at the slow timer's first run, stops pubd_loop_run within a run or two. */
static void slow_periodic_timer_does_not_hold_back_a_signal(void **state)
{
	struct pubd_loop *l = pubd_loop_create();
	static const int signos[] = {SIGUSR1};
	struct slow s = {0};
	struct other o = {&s, l, -1, false, 0};

	(void)state;
	assert_non_null(l);
	assert_int_equal(pubd_loop_signals(l, signos, 1, on_other_signal, &o), 0);
	slow_timer(l, &s);
	s.signo = SIGUSR1;
	pubd_loop_timer_arm(s.t, pubd_now_ns() + 2 * MS);
	assert_int_equal(pubd_loop_run(l), 0);
	print_message("  signal served after %u runs of the slow timer (it stops after %d)\n", o.slow_runs, SLOW_CAP);
	assert_true(o.served);
	assert_true(o.slow_runs <= 2);
	pubd_loop_timer_free(s.t);
	pubd_loop_destroy(l);
}

/* A periodic timer whose callback overran its period is next due a period
 * after the callback ended, not at once: the loop gets that period for the
 * rest of its work. One that did not overrun keeps its phase. */
static void periodic_rearm_skips_missed_periods(void **state)
{
	struct pubd_loop *l = pubd_loop_create();
	struct slow s = {0};
	unsigned i;

	(void)state;
	assert_non_null(l);
	slow_timer(l, &s);
	s.periodic = true;
	pubd_loop_timer_arm(s.t, pubd_now_ns() + 2 * MS);
	while (s.runs < 5)
		assert_true(pubd_loop_run_once(l, 50) >= 0);
	for (i = 1; i < 5; i++)
		assert_true(s.start[i] >= s.end[i - 1] + s.period);
	s.work = 0;
	s.period = 20 * MS;
	while (s.runs < 8)
		assert_true(pubd_loop_run_once(l, 50) >= 0);
	/* s.start[5] re-armed by an overrun: 6 and 7 keep its phase. */
	for (i = 6; i < 8; i++) {
		assert_true(s.start[i] >= s.start[i - 1] + s.period);
		assert_true(s.start[i] < s.start[5] + (i - 5) * s.period + 15 * MS);
	}
	pubd_loop_timer_free(s.t);
	pubd_loop_destroy(l);
}

/* A turn timer (the watchdog's ping) due while a callback keeps the loop
 * from epoll runs only once the loop has been back to epoll and served the
 * fd made readable meanwhile; a plain timer due as well ran before that. */
struct turn {
	struct other *o;
	bool ran, fd_served_first;
	uint64_t at;
};

static void on_turn_timer(void *ctx, uint64_t now)
{
	struct turn *tt = ctx;

	tt->ran = true;
	tt->fd_served_first = tt->o->served;
	tt->at = now;
}

static void turn_timer_waits_for_the_loop_to_serve_its_fds(void **state)
{
	struct pubd_loop *l = pubd_loop_create();
	struct slow s = {0};
	struct other o = {&s, l, -1, false, 0};
	struct turn tt = {&o, false, false, 0};
	struct pubd_loop_timer *w;
	struct pubd_loop_watch *fw;
	uint64_t t0, woke;
	unsigned i;

	(void)state;
	assert_non_null(l);
	o.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(o.fd >= 0);
	fw = pubd_loop_watch(l, o.fd, EPOLLIN, on_other_fd, &o);
	assert_non_null(fw);
	w = pubd_loop_turn_timer(l, on_turn_timer, &tt);
	assert_non_null(w);
	slow_timer(l, &s);
	s.efd = o.fd;
	s.work = 30 * MS;
	s.period = 1000 * MS;
	t0 = pubd_now_ns();
	pubd_loop_timer_arm(s.t, t0 + 2 * MS); /* busy until t0 + 32 ms */
	pubd_loop_timer_arm(w, t0 + 10 * MS);
	while (!s.runs)
		assert_true(pubd_loop_run_once(l, 50) >= 0);
	assert_false(tt.ran);
	/* Due since t0 + 10 ms, it runs within a few turns that do not sleep. */
	woke = pubd_now_ns();
	for (i = 0; i < 4 && !tt.ran; i++)
		assert_true(pubd_loop_run_once(l, 500) >= 0);
	assert_true(tt.ran);
	assert_true(tt.fd_served_first);
	assert_true(tt.at >= s.end[0]);
	assert_true(pubd_now_ns() - woke < 200 * MS);
	/* Armed again and disarmed before it runs, it does not. */
	tt.ran = false;
	pubd_loop_timer_arm(w, pubd_now_ns() + 1 * MS);
	pubd_loop_timer_arm(w, UINT64_MAX);
	for (i = 0; i < 3; i++)
		assert_true(pubd_loop_run_once(l, 10) >= 0);
	assert_false(tt.ran);
	pubd_loop_unwatch(fw);
	pubd_loop_timer_free(w);
	pubd_loop_timer_free(s.t);
	pubd_loop_destroy(l);
	close(o.fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(timer_moved_later_does_not_hold_back_the_others),
		cmocka_unit_test(timer_armed_earlier_goes_first_and_rearms_itself),
		cmocka_unit_test(slow_periodic_timer_does_not_starve_another_timer),
		cmocka_unit_test(slow_periodic_timer_does_not_starve_an_fd),
		cmocka_unit_test(slow_periodic_timer_does_not_hold_back_a_signal),
		cmocka_unit_test(periodic_rearm_skips_missed_periods),
		cmocka_unit_test(turn_timer_waits_for_the_loop_to_serve_its_fds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
