/* SPDX-License-Identifier: MIT */
/*
 * Lingering: after work, go on polling (the loop turns without sleeping)
 * for a while before sleeping on events. Messages come in trains (the
 * pieces of a large message, a burst of publishes, the answer of a
 * ping-pong a few microseconds later), and a sleep costs a wakeup: a
 * context switch on our side, and a system call on the waker's (the
 * client's doorbell, the kernel's socket wakeup). A poll that finds the
 * next message costs neither.
 *
 * The linger is counted in idle polls, not read from the clock at each:
 * where there is no vDSO clock (a VM under TCG) reading it is a system
 * call. One linger in four is timed and the count corrected, so it stays
 * about `ns` long whatever a poll costs. Pure logic: the caller passes the
 * clock.
 */
#ifndef PUBD_LINGER_H
#define PUBD_LINGER_H

#include <stdbool.h>
#include <stdint.h>

struct pubd_linger {
	uint64_t ns;	/* how long to poll on after the last work; 0: sleep at once */
	uint32_t polls; /* idle polls that take about ns (calibrated) */
	uint32_t left;	/* idle polls still to go in this linger */
	uint32_t runs;	/* lingers begun, to time one in four */
	uint64_t t0;	/* when the timed linger began; 0: this one is not timed */
};

/*
 * fabric.rx_linger_us: auto. A linger pays when it is about a round trip:
 * the answer of a ping-pong through two pubds and their clients, or the
 * next message of a burst. That is some ten wakeups (a sleeping process
 * woken through a socket) on any host, whereas in microseconds it is 50
 * on hardware and twenty times that in a VM under emulation. So auto is
 * LINGER_AUTO_WAKEUPS wakeups as measured on this host at start
 * (sys/wake_cost.h), within LINGER_AUTO_MIN_US..LINGER_AUTO_MAX_US.
 * wake_ns 0 (not measured): LINGER_AUTO_UNKNOWN_US.
 */
#define LINGER_AUTO_WAKEUPS    12u
#define LINGER_AUTO_MIN_US     20u
#define LINGER_AUTO_MAX_US     10000u
#define LINGER_AUTO_UNKNOWN_US 50u
uint32_t pubd_linger_auto_us(uint64_t wake_ns);

/* ns: the linger's length (0 turns it off). Starts idle (not lingering). */
void pubd_linger_init(struct pubd_linger *l, uint64_t ns);

/* Work was done: a new linger begins (its polls counted from the next idle one). */
static inline void pubd_linger_work(struct pubd_linger *l)
{
	l->left = l->ns ? l->polls : 0;
	l->t0 = 0;
}

/*
 * An idle poll found nothing. Returns true while the linger goes on (poll
 * again without sleeping), false once it is over (sleep on events). The
 * clock is read at a timed linger's first and last poll only.
 */
bool pubd_linger_idle(struct pubd_linger *l, uint64_t (*clock_ns)(void));

/* Lingering now: polls are left. */
static inline bool pubd_linger_active(const struct pubd_linger *l)
{
	return l->left != 0;
}

#endif
