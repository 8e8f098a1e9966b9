/* SPDX-License-Identifier: MIT */
/*
 * pubd's event loop: one epoll instance per thread, timers on one timerfd,
 * signals on a signalfd. Handlers never block.
 */
#ifndef PUBD_LOOP_H
#define PUBD_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct pubd_loop;
struct pubd_loop_watch;
struct pubd_loop_timer;

/* events: EPOLLIN/EPOLLOUT/EPOLLERR/EPOLLHUP bits as epoll gives them. */
typedef void (*pubd_loop_fd_fn)(void *ctx, uint32_t events);
typedef void (*pubd_loop_timer_fn)(void *ctx, uint64_t now_ns);
typedef void (*pubd_loop_signal_fn)(void *ctx, int signo);
/* Called once per loop iteration before waiting; returns > 0 when there is
 * more to do at once (the wait does not sleep), 0 when the loop may sleep
 * until an event or a timer. */
typedef int (*pubd_loop_idle_fn)(void *ctx);

struct pubd_loop *pubd_loop_create(void);
void pubd_loop_destroy(struct pubd_loop *l);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t pubd_now_ns(void);

/* Watch fd; returns a handle or NULL (errno set). */
struct pubd_loop_watch *pubd_loop_watch(struct pubd_loop *l, int fd, uint32_t events, pubd_loop_fd_fn fn, void *ctx);
int pubd_loop_watch_mod(struct pubd_loop_watch *w, uint32_t events);
/* Stop watching (the fd is not closed). Safe to call from within a callback,
 * including the watch's own: the handle is freed after the current dispatch. */
void pubd_loop_unwatch(struct pubd_loop_watch *w);

/* One-shot timer at an absolute CLOCK_MONOTONIC deadline; re-arm from the
 * callback. A timerfd wakeup runs every timer due then, earliest deadline
 * first, each at most once, and goes back to epoll: a timer armed from a
 * callback to a deadline already past runs after the fds ready meanwhile. */
struct pubd_loop_timer *pubd_loop_timer(struct pubd_loop *l, pubd_loop_timer_fn fn, void *ctx);
/* A timer whose callback, once its deadline passed, waits until the loop
 * has been back to epoll (which does not sleep while one waits) and
 * dispatched what epoll returned; it then runs. A loop kept from epoll (a
 * callback that does not return, or spins) never runs it: for keep-alives,
 * such as systemd's watchdog ping, that must say the loop serves its fds,
 * not only that a timer fired. */
struct pubd_loop_timer *pubd_loop_turn_timer(struct pubd_loop *l, pubd_loop_timer_fn fn, void *ctx);
void pubd_loop_timer_arm(struct pubd_loop_timer *t, uint64_t deadline_ns); /* UINT64_MAX disarms */
/* For a periodic timer, from its callback: arm t at start_ns + period_ns,
 * start_ns being the now the callback was given; if the callback overran
 * its period, so that deadline has passed, the missed periods are skipped
 * and t is armed one period from now. */
void pubd_loop_timer_arm_periodic(struct pubd_loop_timer *t, uint64_t start_ns, uint64_t period_ns);
void pubd_loop_timer_free(struct pubd_loop_timer *t);

/* Route these signals (blocked process-wide) to fn. */
int pubd_loop_signals(struct pubd_loop *l, const int *signos, int n, pubd_loop_signal_fn fn, void *ctx);

/* Busy hook: while it reports work, the loop polls epoll without sleeping. */
void pubd_loop_set_idle(struct pubd_loop *l, pubd_loop_idle_fn fn, void *ctx);

/* Run until pubd_loop_stop. Returns 0 or -errno. */
int pubd_loop_run(struct pubd_loop *l);
void pubd_loop_stop(struct pubd_loop *l);
/* One iteration (for tests that drive the daemon a turn at a time): run the
 * idle hook, wait at most timeout_ms for events, dispatch them. Returns the
 * events dispatched plus the idle hook's result (0: nothing is left to do,
 * the loop would sleep now), or -errno. */
int pubd_loop_run_once(struct pubd_loop *l, int timeout_ms);

#endif
