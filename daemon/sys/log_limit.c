/* SPDX-License-Identifier: MIT */
#include "log_limit.h"
#include "log.h"

static uint64_t period_of(const struct pubd_log_limit *l)
{
	return l->period_ns ? l->period_ns : PUBD_LOG_LIMIT_PERIOD_NS;
}

bool pubd_log_limit_pass(struct pubd_log_limit *l, uint64_t now_ns)
{
	if (!l->opened_ns || now_ns - l->opened_ns >= period_of(l)) {
		/* A new period; what the last one held is said first. */
		pubd_log_limit_flush(l, now_ns);
		l->opened_ns = now_ns ? now_ns : 1;
		l->passed = 0;
	}
	if (l->passed < l->burst) {
		l->passed++;
		return true;
	}
	l->held++;
	return false;
}

unsigned long long pubd_log_limit_flush(struct pubd_log_limit *l, uint64_t now_ns)
{
	unsigned long long held = l->held;

	if (!l->opened_ns || now_ns - l->opened_ns < period_of(l))
		return 0;
	if (held)
		pubd_log(l->prio, "%llu more %s in %llu s, not logged one by one (at most %u a period)", held, l->what,
			 (unsigned long long)((now_ns - l->opened_ns) / 1000000000ull), l->burst);
	l->held = 0;
	l->opened_ns = 0;
	return held;
}
