/* SPDX-License-Identifier: MIT */
/*
 * A bound on log lines that a peer can cause, one per event (a protocol
 * error, a refused SUBSCRIBE, a hang-up mid-record): a few go out in each
 * period, the rest are counted, and the count goes out in one line once the
 * period is over. Without it a client on a loop of connect and misbehave
 * writes lines as fast as it connects, fills the disk or the journal, and
 * spends the unit's journald rate limit, which then suppresses pubd's own
 * lines.
 */
#ifndef PUBD_LOG_LIMIT_H
#define PUBD_LOG_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct pubd_log_limit {
	const char *what;	 /* the lines, plural, for the count's line: "protocol errors" */
	unsigned burst;		 /* lines that go out in a period */
	int prio;		 /* of the count's line (0: LOG_EMERG, so set it) */
	uint64_t period_ns;	 /* 0: PUBD_LOG_LIMIT_PERIOD_NS */
	uint64_t opened_ns;	 /* when the period began (0: no period open) */
	unsigned passed;	 /* lines that went out in it */
	unsigned long long held; /* lines counted instead */
};

#define PUBD_LOG_LIMIT_PERIOD_NS (10000ull * 1000 * 1000)

/* May one more line go out now? If not, it is counted. */
bool pubd_log_limit_pass(struct pubd_log_limit *l, uint64_t now_ns);

/* Once the period is over: the count of lines held in it, logged in one
 * line (when there were any), and a new period may begin. Call it from a
 * periodic tick. Returns the count. */
unsigned long long pubd_log_limit_flush(struct pubd_log_limit *l, uint64_t now_ns);

#endif
