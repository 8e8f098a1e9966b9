/* SPDX-License-Identifier: MIT */
/*
 * The verbs side of the join type following listening (core/jointype.h):
 * each multicast address is joined send-only while none of its slots
 * listens, as a full member from the first listener (listen(on) answers 1
 * and ev.listening follows the full join's event), and send-only again once
 * nobody has listened for fabric.sendonly_hold_ms.
 */
#include "verbs_internal.h"
#include "jointype.h"
#include "loop.h"

static enum pubd_join_kind mc_kind(const struct vmc *m)
{
	if (!m->joined)
		return PUBD_JOIN_KIND_NONE;
	return m->join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER ? PUBD_JOIN_KIND_FULL : PUBD_JOIN_KIND_SENDONLY;
}

/* What the join type wants now (jointype.c); arms the retry timer for a
 * hold-off that runs out. mcast.c acts on it (verbs_mc_apply). */
enum pubd_jt_action verbs_mc_decide(struct pubd_fabric *f, int idx)
{
	struct vmc *m = &f->mcs[idx];
	struct pubd_jt_in in = {
		.kind = mc_kind(m),
		.pending = m->pending,
		.listening = m->want_recv,
		.sendonly_ok = f->sendonly_ok && !m->no_sendonly,
		.idle_since_ns = m->idle_since,
		.hold_ns = f->join_hold_ns,
		.now_ns = pubd_now_ns(),
	};
	enum pubd_jt_action a = pubd_jt_next(&in, &m->hold_at);

	if (m->hold_at)
		verbs_arm_retry(f);
	return a;
}

/* The full join completed: answer the listen(on) calls that waited for it. */
void verbs_mc_listening_done(struct pubd_fabric *f, int idx)
{
	if (!pubd_jt_ready(mc_kind(&f->mcs[idx]), f->mcs[idx].pending))
		return;
	for (unsigned s = 0; s < f->nslots; s++) {
		struct vslot *v = &f->slots[s];

		if (!v->used || v->mc != idx || !v->listen_wait)
			continue;
		v->listen_wait = false;
		if (f->ev.listening)
			f->ev.listening(f->ctx, (int)s);
	}
}

const char *verbs_join_state(const struct pubd_fabric *f, int slot)
{
	const struct vmc *m;

	if (slot < 0 || (unsigned)slot >= f->nslots || !f->slots[slot].used)
		return "-";
	m = &f->mcs[f->slots[slot].mc];
	return pubd_jt_label(mc_kind(m), m->pending);
}
