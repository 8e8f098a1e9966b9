/* SPDX-License-Identifier: MIT */
/* Lingering after work before sleeping: linger.h. */
#include "linger.h"

/* Bounds on the calibrated count: a linger of 10 ms at a nanosecond a
 * poll is 10^7; never so many that a bad timing makes it minutes long. */
#define LINGER_POLLS_MAX 1000000u

static uint32_t polls_within_bounds(uint64_t polls)
{
	return (uint32_t)(polls < 1 ? 1 : polls > LINGER_POLLS_MAX ? LINGER_POLLS_MAX : polls);
}

uint32_t pubd_linger_auto_us(uint64_t wake_ns)
{
	uint64_t us = wake_ns * LINGER_AUTO_WAKEUPS / 1000;

	if (!wake_ns)
		return LINGER_AUTO_UNKNOWN_US;
	return (uint32_t)(us < LINGER_AUTO_MIN_US   ? LINGER_AUTO_MIN_US
			  : us > LINGER_AUTO_MAX_US ? LINGER_AUTO_MAX_US
						    : us);
}

void pubd_linger_init(struct pubd_linger *l, uint64_t ns)
{
	/* A first guess of a microsecond a poll round (a loop turn with an
	 * epoll_wait that returns at once); the first timed linger corrects it. */
	*l = (struct pubd_linger){.ns = ns, .polls = polls_within_bounds(ns / 1000)};
}

bool pubd_linger_idle(struct pubd_linger *l, uint64_t (*clock_ns)(void))
{
	if (l->left) {
		if (l->left == l->polls && l->runs++ % 4 == 0)
			l->t0 = clock_ns();
		l->left--;
		return true;
	}
	if (l->t0) {
		uint64_t spent = clock_ns() - l->t0;
		uint64_t polls = spent ? (uint64_t)l->polls * l->ns / spent : l->polls;

		/* Shorter at once (lingering too long only burns CPU); longer
		 * halfway, so one preempted linger cannot make the next ten
		 * times as long. */
		if (polls > l->polls)
			polls = (polls + l->polls) / 2;
		l->polls = polls_within_bounds(polls);
		l->t0 = 0;
	}
	return false;
}
