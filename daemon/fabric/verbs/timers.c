/* SPDX-License-Identifier: MIT */
/*
 * The fabric's two timers: the kick (deferred work for the next loop
 * iteration: group_state(up) never from inside join(), a CQ drained beyond its
 * budget) and the retry timer, armed for the earliest of every pending retry
 * (rejoins, device rebuilds, failed posts, the port check, a paused cm channel).
 */
#include <sys/epoll.h>

#include "verbs_internal.h"
#include "loop.h"

void verbs_kick(struct pubd_fabric *f)
{
	if (!f->kicked) {
		f->kicked = true;
		pubd_loop_timer_arm(f->kick, 0); /* a deadline in the past: next iteration */
	}
}

void verbs_arm_retry(struct pubd_fabric *f)
{
	uint64_t next = UINT64_MAX;

	if (!f->dev_ok && f->dev_retry_at)
		next = f->dev_retry_at;
	if (f->dev_ok) {
		uint64_t at[] = {f->port_check_at, f->tx_retry_at, f->rx_retry_at};

		for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++)
			if (at[i] && at[i] < next)
				next = at[i];
	}
	if (f->cm_resume_at && f->cm_resume_at < next)
		next = f->cm_resume_at;
	for (unsigned i = 0; i < f->nmcs; i++)
		if (f->mcs[i].used && f->mcs[i].retry_at && f->mcs[i].retry_at < next)
			next = f->mcs[i].retry_at;
	pubd_loop_timer_arm(f->retry, next);
}

void verbs_on_kick(void *ctx, uint64_t now)
{
	struct pubd_fabric *f = ctx;

	f->kicked = false;
	for (unsigned s = 0; s < f->nslots; s++) {
		struct vslot *v = &f->slots[s];

		if (!v->used || !v->notify)
			continue;
		v->notify = false;
		if (!v->up && f->mcs[v->mc].up) {
			v->up = true;
			f->ev.group_state(f->ctx, (int)s, true, 0);
		}
	}
	if (f->cq)
		verbs_process_cq(f);
}

void verbs_on_retry(void *ctx, uint64_t now)
{
	struct pubd_fabric *f = ctx;

	if (f->cm_resume_at && f->cm_resume_at <= now) {
		f->cm_resume_at = 0;
		pubd_loop_watch_mod(f->cm_watch, EPOLLIN);
	}
	if (f->dev_ok && f->rx_retry_at && f->rx_retry_at <= now) {
		f->rx_retry_at = 0;
		verbs_rx_refill(f);
	}
	if (f->dev_ok && f->tx_retry_at && f->tx_retry_at <= now) {
		f->tx_retry_at = 0;
		if (f->tx_blocked && f->tx_posted - f->tx_done < f->sq_depth) {
			f->tx_blocked = false;
			f->ev.writable(f->ctx); /* may post, fail and set tx_retry_at again */
		}
	}
	if (f->dev_ok && f->port_check_at && f->port_check_at <= now)
		verbs_port_check(f, now);
	if (!f->dev_ok) {
		if (f->dev_retry_at && f->dev_retry_at <= now)
			verbs_try_rebuild(f);
		else
			verbs_arm_retry(f);
		return;
	}
	for (unsigned i = 0; i < f->nmcs; i++) {
		struct vmc *m = &f->mcs[i];

		if (m->used && m->refs && m->retry_at && m->retry_at <= now && !m->joined) {
			f->cnt[VC_REJOINS]++;
			verbs_mc_join(f, (int)i);
		}
	}
	verbs_arm_retry(f);
}
