/* SPDX-License-Identifier: MIT */
/*
 * The event loop: epoll for fds, one timerfd for every timer, a signalfd.
 *
 * Timers live on a short unsorted list: pubd has a handful of them
 * (reassembly expiry, heartbeat, watchdog, status), so finding the earliest
 * is O(timers) per arm and cheaper than keeping a heap.
 *
 * Watches removed during dispatch are only marked dead and freed after the
 * batch, so a callback may remove any watch, its own included, without the
 * rest of the batch touching freed memory.
 *
 * Fairness: a timerfd wakeup runs each timer that was due when it began at
 * most once, then goes back to epoll. A timer that is due again at once (its
 * callback took longer than its period) runs again in the next round, after
 * the fds that became ready meanwhile (clients, the signalfd) and after every
 * other timer that was due: no timer can keep the loop from epoll, nor hold
 * back another timer.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"

#define MAX_EVENTS 64

struct pubd_loop_watch {
	struct pubd_loop *loop;
	int fd;
	bool dead;
	pubd_loop_fd_fn fn;
	void *ctx;
	struct pubd_loop_watch *next_dead;
};

struct pubd_loop_timer {
	struct pubd_loop *loop;
	uint64_t deadline;
	pubd_loop_timer_fn fn;
	void *ctx;
	struct pubd_loop_timer *next;
	bool due;	  /* in the round on_timerfd is running, not run yet */
	bool after_turn;  /* a turn timer (pubd_loop_turn_timer) */
	bool held;	  /* a turn timer past its deadline, waiting for a turn */
	uint64_t held_at; /* l->turns when it was held */
};

struct pubd_loop {
	int epfd;
	int timerfd;
	int sigfd;
	bool stop;
	uint64_t armed; /* deadline the timerfd is set to, UINT64_MAX when disarmed */
	uint64_t turns; /* epoll_waits that returned */
	unsigned held;	/* turn timers held */
	struct pubd_loop_timer *timers;
	struct pubd_loop_watch *dead;
	struct pubd_loop_watch timer_watch, signal_watch;
	pubd_loop_signal_fn sig_fn;
	void *sig_ctx;
	pubd_loop_idle_fn idle_fn;
	void *idle_ctx;
};

uint64_t pubd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Point the timerfd at min, the earliest deadline of all timers. */
static void set_timerfd(struct pubd_loop *l, uint64_t min)
{
	struct itimerspec its = {0};

	if (min == l->armed)
		return;
	l->armed = min;
	if (min != UINT64_MAX) {
		/* 0 would disarm the timerfd: a deadline in the past fires at once. */
		if (min == 0)
			min = 1;
		its.it_value.tv_sec = (time_t)(min / 1000000000ull);
		its.it_value.tv_nsec = (long)(min % 1000000000ull);
	}
	timerfd_settime(l->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void rearm_timerfd(struct pubd_loop *l)
{
	uint64_t min = UINT64_MAX;
	struct pubd_loop_timer *t;

	for (t = l->timers; t; t = t->next)
		if (t->deadline < min)
			min = t->deadline;
	set_timerfd(l, min);
}

/* The due timer of the round with the earliest deadline, or NULL. A timer
 * armed anew by an earlier callback of the round is left to the next round
 * if it is no longer due. */
static struct pubd_loop_timer *next_due(struct pubd_loop *l, uint64_t now)
{
	struct pubd_loop_timer *t, *first = NULL;

	for (t = l->timers; t; t = t->next) {
		if (!t->due)
			continue;
		if (t->deadline > now) {
			t->due = false;
			continue;
		}
		if (!first || t->deadline < first->deadline)
			first = t;
	}
	return first;
}

/* A turn timer come due waits for the loop to go back to epoll: see
 * run_held. */
static void hold(struct pubd_loop *l, struct pubd_loop_timer *t)
{
	t->deadline = UINT64_MAX;
	if (!t->held) {
		t->held = true;
		l->held++;
	}
	t->held_at = l->turns;
}

static void on_timerfd(void *ctx, uint32_t events)
{
	struct pubd_loop *l = ctx;
	struct pubd_loop_timer *t;
	uint64_t expirations, now;

	(void)events;
	if (read(l->timerfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		return;
	l->armed = UINT64_MAX;
	/* The round: the timers due now, each run once, earliest deadline
	 * first. A callback may arm, create or free timers, so each pick
	 * scans the list again (pubd has a handful of timers); one it arms
	 * to a deadline already past runs in the next round, after epoll. */
	now = pubd_now_ns();
	for (t = l->timers; t; t = t->next)
		t->due = t->deadline <= now;
	while ((t = next_due(l, now))) {
		t->due = false;
		if (t->after_turn) {
			hold(l, t);
			continue;
		}
		t->deadline = UINT64_MAX;
		t->fn(t->ctx, pubd_now_ns());
	}
	rearm_timerfd(l);
}

/* Turn timers held since before the last epoll_wait returned, after what it
 * returned was dispatched: the loop has been back to epoll and served its
 * fds since they came due. */
static void run_held(struct pubd_loop *l)
{
	struct pubd_loop_timer *t;
	bool ran;

	do {
		ran = false;
		for (t = l->timers; t && l->held; t = t->next) {
			if (!t->held || t->held_at == l->turns)
				continue;
			t->held = false;
			l->held--;
			t->fn(t->ctx, pubd_now_ns());
			ran = true; /* the callback may have freed timers */
			break;
		}
	} while (ran);
}

static void on_signalfd(void *ctx, uint32_t events)
{
	struct pubd_loop *l = ctx;
	struct signalfd_siginfo si;

	(void)events;
	while (read(l->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (l->sig_fn)
			l->sig_fn(l->sig_ctx, (int)si.ssi_signo);
}

static int add_internal(struct pubd_loop *l, struct pubd_loop_watch *w, int fd, pubd_loop_fd_fn fn)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};

	w->loop = l;
	w->fd = fd;
	w->fn = fn;
	w->ctx = l;
	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

struct pubd_loop *pubd_loop_create(void)
{
	struct pubd_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->timerfd = -1;
	l->sigfd = -1;
	l->armed = UINT64_MAX;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		goto fail;
	l->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (l->timerfd < 0)
		goto fail;
	if (add_internal(l, &l->timer_watch, l->timerfd, on_timerfd) < 0)
		goto fail;
	return l;
fail:
	pubd_loop_destroy(l);
	return NULL;
}

static void free_dead(struct pubd_loop *l)
{
	struct pubd_loop_watch *w;

	while ((w = l->dead)) {
		l->dead = w->next_dead;
		free(w);
	}
}

void pubd_loop_destroy(struct pubd_loop *l)
{
	struct pubd_loop_timer *t;

	if (!l)
		return;
	free_dead(l);
	while ((t = l->timers)) {
		l->timers = t->next;
		free(t);
	}
	if (l->sigfd >= 0)
		close(l->sigfd);
	if (l->timerfd >= 0)
		close(l->timerfd);
	if (l->epfd >= 0)
		close(l->epfd);
	free(l);
}

struct pubd_loop_watch *pubd_loop_watch(struct pubd_loop *l, int fd, uint32_t events, pubd_loop_fd_fn fn, void *ctx)
{
	struct pubd_loop_watch *w = calloc(1, sizeof(*w));
	struct epoll_event ev = {.events = events};
	int saved;

	if (!w)
		return NULL;
	w->loop = l;
	w->fd = fd;
	w->fn = fn;
	w->ctx = ctx;
	ev.data.ptr = w;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		saved = errno;
		free(w);
		errno = saved;
		return NULL;
	}
	return w;
}

int pubd_loop_watch_mod(struct pubd_loop_watch *w, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};

	if (w->dead)
		return -EBADF;
	return epoll_ctl(w->loop->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0 ? -errno : 0;
}

void pubd_loop_unwatch(struct pubd_loop_watch *w)
{
	if (!w || w->dead)
		return;
	epoll_ctl(w->loop->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->dead = true;
	w->next_dead = w->loop->dead;
	w->loop->dead = w;
}

struct pubd_loop_timer *pubd_loop_timer(struct pubd_loop *l, pubd_loop_timer_fn fn, void *ctx)
{
	struct pubd_loop_timer *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->loop = l;
	t->fn = fn;
	t->ctx = ctx;
	t->deadline = UINT64_MAX;
	t->next = l->timers;
	l->timers = t;
	return t;
}

struct pubd_loop_timer *pubd_loop_turn_timer(struct pubd_loop *l, pubd_loop_timer_fn fn, void *ctx)
{
	struct pubd_loop_timer *t = pubd_loop_timer(l, fn, ctx);

	if (t)
		t->after_turn = true;
	return t;
}

/*
 * Timers are re-armed every loop turn, mostly to the deadline they had:
 * only a timer that held the earliest deadline and moves later needs the
 * scan of them all (l->armed is the earliest, except while on_timerfd runs
 * its callbacks, which ends with a full scan).
 */
void pubd_loop_timer_arm(struct pubd_loop_timer *t, uint64_t deadline_ns)
{
	struct pubd_loop *l = t->loop;
	uint64_t old = t->deadline;

	if (t->held) { /* arming anew sets when it runs */
		t->held = false;
		l->held--;
	}
	if (deadline_ns == old)
		return;
	t->deadline = deadline_ns;
	if (deadline_ns < l->armed)
		set_timerfd(l, deadline_ns);
	else if (old <= l->armed)
		rearm_timerfd(l);
}

/*
 * One period after start, the time the callback was called with; a callback
 * that overran its period would make that deadline past already, and the
 * timer due again at once, round after round: then the missed periods are
 * skipped and it runs one period after now, leaving the loop that period for
 * everything else.
 */
void pubd_loop_timer_arm_periodic(struct pubd_loop_timer *t, uint64_t start_ns, uint64_t period_ns)
{
	uint64_t next = start_ns + period_ns, now = pubd_now_ns();

	if (next <= now)
		next = now + period_ns;
	pubd_loop_timer_arm(t, next);
}

void pubd_loop_timer_free(struct pubd_loop_timer *t)
{
	struct pubd_loop_timer **p;

	if (!t)
		return;
	if (t->held)
		t->loop->held--;
	for (p = &t->loop->timers; *p; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	rearm_timerfd(t->loop);
	free(t);
}

int pubd_loop_signals(struct pubd_loop *l, const int *signos, int n, pubd_loop_signal_fn fn, void *ctx)
{
	sigset_t mask;
	int i, err;

	sigemptyset(&mask);
	for (i = 0; i < n; i++)
		sigaddset(&mask, signos[i]);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	l->sigfd = signalfd(l->sigfd, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (l->sigfd < 0)
		return -errno;
	l->sig_fn = fn;
	l->sig_ctx = ctx;
	if (l->signal_watch.loop)
		return 0;
	err = add_internal(l, &l->signal_watch, l->sigfd, on_signalfd);
	return err;
}

void pubd_loop_set_idle(struct pubd_loop *l, pubd_loop_idle_fn fn, void *ctx)
{
	l->idle_fn = fn;
	l->idle_ctx = ctx;
}

/* One iteration: the idle hook, then wait at most timeout_ms (-1: no limit)
 * for events and dispatch them. Returns events and the idle hook's "more to
 * do", or -errno. */
static int loop_step(struct pubd_loop *l, int timeout_ms)
{
	struct epoll_event evs[MAX_EVENTS];
	int n, i, work = 0;

	if (l->idle_fn && (work = l->idle_fn(l->idle_ctx)) > 0)
		timeout_ms = 0;
	if (l->stop)
		return work;
	/* A turn timer still held waits for this epoll_wait to return, not
	 * for the next event. */
	if (l->held)
		timeout_ms = 0;
	n = epoll_wait(l->epfd, evs, MAX_EVENTS, timeout_ms);
	if (n < 0)
		return errno == EINTR ? work : -errno;
	l->turns++;
	for (i = 0; i < n; i++) {
		struct pubd_loop_watch *w = evs[i].data.ptr;

		if (!w->dead)
			w->fn(w->ctx, evs[i].events);
	}
	free_dead(l);
	if (l->held)
		run_held(l);
	return work + n;
}

int pubd_loop_run(struct pubd_loop *l)
{
	int r;

	l->stop = false;
	while (!l->stop) {
		r = loop_step(l, -1);
		if (r < 0)
			return r;
	}
	return 0;
}

int pubd_loop_run_once(struct pubd_loop *l, int timeout_ms)
{
	l->stop = false;
	return loop_step(l, timeout_ms);
}

void pubd_loop_stop(struct pubd_loop *l)
{
	l->stop = true;
}
