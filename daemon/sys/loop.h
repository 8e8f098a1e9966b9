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
/* Called once per loop iteration before waiting; returns work done (0 = idle). */
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

/* One-shot timer at an absolute CLOCK_MONOTONIC deadline; re-arm from the callback. */
struct pubd_loop_timer *pubd_loop_timer(struct pubd_loop *l, pubd_loop_timer_fn fn, void *ctx);
void pubd_loop_timer_arm(struct pubd_loop_timer *t, uint64_t deadline_ns); /* UINT64_MAX disarms */
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
 * work done (0: nothing happened), or -errno. */
int pubd_loop_run_once(struct pubd_loop *l, int timeout_ms);

#endif
