/* SPDX-License-Identifier: MIT */
/*
 * The fabric's two timers' callbacks: the kick (deferred work for the next
 * loop iteration: group_state(up) never from inside join(), a CQ drained
 * beyond its budget) and the retry timer, armed for the earliest of every
 * pending retry (rejoins, device rebuilds, failed posts, the port check, a
 * paused cm channel). Arming them is in util.c, for every file to use.
 */
#include <sys/epoll.h>

#include "verbs_internal.h"
#include "loop.h"

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
		if (m->used && m->refs && m->hold_at && m->hold_at <= now) {
			m->hold_at = 0;
			verbs_mc_apply(f, (int)i);
		}
	}
	verbs_arm_retry(f);
}
