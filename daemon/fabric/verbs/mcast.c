/* SPDX-License-Identifier: MIT */
/*
 * Slots and the multicast addresses they share: the daemon joins, listens
 * on and leaves slots; each address (struct vmc) is joined once for all its
 * slots, attached to the QP while one of them listens, and reports group_state
 * to each. Joins and leaves are issued here (rdma_join_multicast_ex); their
 * events come back through cm.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_internal.h"
#include "log.h"
#include "loop.h"

static void addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a = sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
						  : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;

	if (!inet_ntop(sa->sa_family, a, buf, len))
		snprintf(buf, len, "?");
}

/* A canonical copy of a group address: same bytes for the same group, so
 * rdma_leave_multicast (which memcmp()s the address, librdmacm/cma.c) finds it. */
static int norm_group(const struct sockaddr *sa, socklen_t len, struct sockaddr_storage *out, socklen_t *outlen)
{
	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in *o = (struct sockaddr_in *)out;

		o->sin_family = AF_INET;
		o->sin_addr = ((const struct sockaddr_in *)sa)->sin_addr;
		*outlen = sizeof(*o);
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 *o = (struct sockaddr_in6 *)out;

		o->sin6_family = AF_INET6;
		o->sin6_addr = ((const struct sockaddr_in6 *)sa)->sin6_addr;
		o->sin6_scope_id = ((const struct sockaddr_in6 *)sa)->sin6_scope_id;
		*outlen = sizeof(*o);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static void mc_update(struct pubd_fabric *f, int idx)
{
	struct vmc *m = &f->mcs[idx];
	bool was = m->want_recv;

	/* A full member while some slot listens (join_type.c), not merely
	 * because one may: a group nobody here subscribes to stays send-only. */
	m->want_recv = false;
	m->rx_slot = -1;
	for (unsigned s = 0; s < f->nslots; s++) {
		if (!f->slots[s].used || f->slots[s].mc != idx)
			continue;
		m->want_recv |= f->slots[s].listening;
		if ((f->slots[s].mode & PUBD_JOIN_RECV) && m->rx_slot < 0)
			m->rx_slot = (int32_t)s;
	}
	if (was && !m->want_recv)
		m->idle_since = pubd_now_ns();
	if (m->rx_slot < 0) /* send-only groups still name a slot for stray traffic */
		for (unsigned s = 0; s < f->nslots; s++)
			if (f->slots[s].used && f->slots[s].mc == idx) {
				m->rx_slot = (int32_t)s;
				break;
			}
}

/* Tell the daemon about every slot on mc idx whose state changes. */
void verbs_notify_slots(struct pubd_fabric *f, int idx, bool up, int err)
{
	for (unsigned s = 0; s < f->nslots; s++) {
		/* Re-read each time: the callback may join or leave. */
		struct vslot *v = &f->slots[s];

		if (!v->used || v->mc != idx || v->up == up)
			continue;
		v->up = up;
		v->notify = false;
		f->ev.group_state(f->ctx, (int)s, up, err);
	}
}

void verbs_mc_retry_later(struct pubd_fabric *f, struct vmc *m)
{
	uint64_t now = pubd_now_ns();

	/* A join that fails again soon after it came up keeps backing off:
	 * a group that errors at once after every join would otherwise be
	 * rejoined (and logged) twice a second for ever. */
	if (m->up_at && now - m->up_at >= REBUILD_STABLE_NS)
		m->retry_delay = 0;
	m->up_at = 0;
	m->retry_delay = m->retry_delay ? m->retry_delay * 2 : RETRY_MIN_NS;
	if (m->retry_delay > RETRY_MAX_NS)
		m->retry_delay = RETRY_MAX_NS;
	m->retry_at = now + m->retry_delay;
	verbs_arm_retry(f);
}

/*
 * Attach the QP to the group while some slot listens, detach it while none
 * does, keeping the join either way. A full-member join is attached by
 * librdmacm when its event is processed (ucma_process_join); rdma_leave_
 * multicast detaches and ignores the result, so a group we detached
 * ourselves leaves cleanly. Attach and detach are synchronous verbs: the
 * first datagram after a successful attach is ours.
 */
int verbs_mc_sync_attach(struct pubd_fabric *f, int idx)
{
	struct vmc *m = &f->mcs[idx];
	bool want = false;
	int ret;

	for (unsigned s = 0; s < f->nslots && !want; s++)
		want = f->slots[s].used && f->slots[s].mc == idx && f->slots[s].listening;
	/* Not while a join is under way: librdmacm attaches a full member
	 * when its event comes, and the event handler calls this again. */
	if (!m->up || m->pending || !f->qp || m->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER || want == m->attached)
		return 0;
	if (want) {
		ret = ibv_attach_mcast(f->qp, (const union ibv_gid *)m->mgid, m->mlid);
		if (ret) {
			ret = ret > 0 ? -ret : -EIO; /* the verb returns an errno value */
			f->cnt[VC_ATTACH_ERRORS]++;
			log_warn("verbs: attaching the QP to %s failed: %s", m->name, verbs_err_str(ret));
			return ret;
		}
		f->cnt[VC_ATTACHES]++;
	} else {
		ret = ibv_detach_mcast(f->qp, (const union ibv_gid *)m->mgid, m->mlid);
		if (ret)
			log_warn("verbs: detaching the QP from %s: %s", m->name, strerror(ret));
		f->cnt[VC_DETACHES]++;
	}
	m->attached = want;
	log_debug("verbs: %s %s the QP", m->name, want ? "attached to" : "detached from");
	return 0;
}

void verbs_mc_down(struct pubd_fabric *f, int idx, int err)
{
	struct vmc *m = &f->mcs[idx];

	verbs_mc_leave(f, m);
	m->up = false;
	verbs_ah_retire(f, m->ah);
	m->ah = NULL;
	verbs_notify_slots(f, idx, false, err);
}

static int mc_find_or_add(struct pubd_fabric *f, const struct sockaddr_storage *a, socklen_t alen)
{
	int free_idx = -1;

	for (unsigned i = 0; i < f->nmcs; i++) {
		if (!f->mcs[i].used) {
			if (free_idx < 0)
				free_idx = (int)i;
			continue;
		}
		if (f->mcs[i].addrlen == alen && !memcmp(&f->mcs[i].addr, a, alen))
			return (int)i;
	}
	if (free_idx < 0) {
		unsigned cap = f->nmcs ? f->nmcs * 2 : 8;
		struct vmc *n;

		if (cap > MAX_SLOTS)
			return -ENOSPC;
		n = realloc(f->mcs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + f->nmcs, 0, (cap - f->nmcs) * sizeof(*n));
		free_idx = (int)f->nmcs;
		f->mcs = n;
		f->nmcs = cap;
	}
	struct vmc *m = &f->mcs[free_idx];

	memset(m, 0, sizeof(*m));
	m->used = true;
	m->rx_slot = -1;
	m->addr = *a;
	m->addrlen = alen;
	addr_text((const struct sockaddr *)a, m->name, sizeof(m->name));
	return free_idx;
}

void verbs_rejoin_all(struct pubd_fabric *f)
{
	for (unsigned i = 0; i < f->nmcs; i++)
		if (f->mcs[i].used && f->mcs[i].refs && !f->mcs[i].joined) {
			f->cnt[VC_REJOINS]++;
			f->mcs[i].retry_delay = 0;
			verbs_mc_join(f, (int)i);
		}
}

int verbs_join(struct pubd_fabric *f, int slot, const struct sockaddr *addr, socklen_t addrlen,
	       enum pubd_join_mode mode)
{
	struct sockaddr_storage a;
	socklen_t alen;
	struct vmc *m;
	int idx, ret;

	if (slot < 0 || slot >= MAX_SLOTS || !(mode & PUBD_JOIN_BOTH))
		return -EINVAL;
	ret = norm_group(addr, addrlen, &a, &alen);
	if (ret)
		return ret;
	if (a.ss_family == AF_INET ? !IN_MULTICAST(ntohl(((struct sockaddr_in *)&a)->sin_addr.s_addr))
				   : !IN6_IS_ADDR_MULTICAST(&((struct sockaddr_in6 *)&a)->sin6_addr))
		return -EINVAL;
	if ((unsigned)slot >= f->nslots) {
		unsigned cap = f->nslots ? f->nslots : 16;
		struct vslot *n;

		while (cap <= (unsigned)slot)
			cap *= 2;
		n = realloc(f->slots, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + f->nslots, 0, (cap - f->nslots) * sizeof(*n));
		f->slots = n;
		f->nslots = cap;
	}
	if (f->slots[slot].used)
		return -EEXIST;
	idx = mc_find_or_add(f, &a, alen);
	if (idx < 0)
		return idx;
	m = &f->mcs[idx];
	f->slots[slot] = (struct vslot){.used = true,
					.mc = idx,
					.mode = mode,
					.listening = (mode & PUBD_JOIN_RECV) && !(mode & PUBD_JOIN_IDLE)};
	m->refs++;
	mc_update(f, idx);
	if (!m->joined) {
		verbs_mc_join(f, idx);
		return 0;
	}
	verbs_mc_apply(f, idx); /* a listening slot makes a send-only join full */
	if (m->up) {
		verbs_mc_sync_attach(f, idx);
		f->slots[slot].notify = true;
		verbs_kick(f);
	}
	return 0;
}

/* 0 when done, 1 when the group must first become a full member (the
 * daemon hears ev.listening then), or -errno. */
int verbs_listen(struct pubd_fabric *f, int slot, bool on)
{
	struct vslot *v;
	struct vmc *m;
	int ret;

	if (slot < 0 || (unsigned)slot >= f->nslots || !f->slots[slot].used)
		return -EBADSLT;
	v = &f->slots[slot];
	if (!(v->mode & PUBD_JOIN_RECV))
		return on ? -EINVAL : 0;
	if (v->listening == on)
		return 0;
	v->listening = on;
	v->listen_wait = false;
	mc_update(f, v->mc);
	verbs_mc_apply(f, v->mc);
	ret = verbs_mc_sync_attach(f, v->mc);
	if (ret) {
		v->listening = !on;
		mc_update(f, v->mc);
		return ret;
	}
	m = &f->mcs[v->mc];
	if (on && m->joined && (m->pending || m->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER)) {
		v->listen_wait = true;
		return 1;
	}
	return 0;
}

void verbs_leave(struct pubd_fabric *f, int slot)
{
	struct vmc *m;
	int idx;

	if (slot < 0 || (unsigned)slot >= f->nslots || !f->slots[slot].used)
		return;
	idx = f->slots[slot].mc;
	memset(&f->slots[slot], 0, sizeof(f->slots[slot]));
	m = &f->mcs[idx];
	if (--m->refs > 0) {
		mc_update(f, idx);
		verbs_mc_sync_attach(f, idx);
		verbs_mc_apply(f, idx); /* send-only after the hold-off if nobody listens now */
		return;
	}
	verbs_mc_leave(f, m);
	verbs_ah_retire(f, m->ah);
	memset(m, 0, sizeof(*m)); /* gen 0: any late event is stale */
	if (f->last_rx_mc == idx)
		f->last_rx_mc = -1;
	verbs_arm_retry(f);
}

/* An IPv6 group on RoCE (mcast6.c): complete when it returns, reported
 * from the kick timer like a join event's result. */
static int join_without_cm(struct pubd_fabric *f, int idx)
{
	int ret = verbs_mc6_join(f, idx);

	if (ret) {
		f->cnt[VC_JOIN_ERRORS]++;
		verbs_mc_retry_later(f, &f->mcs[idx]);
		return ret;
	}
	verbs_mc_sync_attach(f, idx);
	for (unsigned s = 0; s < f->nslots; s++)
		if (f->slots[s].used && f->slots[s].mc == idx)
			f->slots[s].notify = true;
	verbs_kick(f);
	verbs_mc_listening_done(f, idx);
	return 0;
}

int verbs_mc_join(struct pubd_fabric *f, int idx)
{
	struct vmc *m = &f->mcs[idx];
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.addr = (struct sockaddr *)&m->addr,
	};
	int ret;

	if (!f->dev_ok || !f->port_active || m->joined)
		return 0;
	m->retry_at = 0;
	if (verbs_mc6_manual(f, m))
		return join_without_cm(f, idx);
	/* A send-only full member is not attached to the QP and, on RoCE,
	 * sends no IGMP report (rdma_join_multicast(3), core/cma.c): used for
	 * groups this daemon only publishes to. */
	if (!m->want_recv && !m->no_sendonly && f->sendonly_ok)
		attr.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	else
		attr.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	m->gen = ++f->gen;
	ret = rdma_join_multicast_ex(f->id, &attr, verbs_join_ctx((unsigned)idx, m->gen)) ? -errno : 0;
	if (ret && attr.join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) {
		/* Kernels or providers without send-only support refuse it here;
		 * a full member works everywhere. */
		log_info("verbs: %s: send-only join refused (%s); joining as full member", m->name, verbs_err_str(ret));
		if (ret == -ENOSYS || ret == -EINVAL || ret == -EOPNOTSUPP)
			f->sendonly_ok = false;
		m->no_sendonly = true;
		attr.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
		ret = rdma_join_multicast_ex(f->id, &attr, verbs_join_ctx((unsigned)idx, m->gen)) ? -errno : 0;
	}
	if (ret) {
		f->cnt[VC_JOIN_ERRORS]++;
		log_warn("verbs: joining %s on %s failed: %s; retrying", m->name, f->dev_name, verbs_err_str(ret));
		verbs_mc_retry_later(f, m);
		return ret;
	}
	m->joined = true;
	m->pending = true;
	m->join_flags = attr.join_flags;
	log_debug("verbs: joining %s on %s as %s", m->name, f->dev_name,
		  attr.join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER ? "send-only full member" : "full member");
	return 0;
}

/* Join, rejoin or wait as the join type decides (join_type.c); called
 * whenever the group's listening, its join or the hold-off changed. */
void verbs_mc_apply(struct pubd_fabric *f, int idx)
{
	struct vmc *m = &f->mcs[idx];

	if (!m->used || verbs_mc_decide(f, idx) == PUBD_JT_KEEP || !m->joined)
		return; /* not joined: the next join (retry, port up) takes the right type */
	/* The old AH keeps sends going until the new join's event. */
	verbs_mc_leave(f, m);
	verbs_mc_join(f, idx);
}

/* Drop librdmacm's join (and the QP attachment); keep the group's slots. */
void verbs_mc_leave(struct pubd_fabric *f, struct vmc *m)
{
	if (verbs_mc6_manual(f, m)) {
		verbs_mc6_leave(f, m);
		return;
	}
	if (m->joined && f->id) {
		/* Never called with an unacked event of this join in hand:
		 * rdma_leave_multicast waits for those acks (librdmacm/cma.c). */
		if (rdma_leave_multicast(f->id, (struct sockaddr *)&m->addr))
			log_debug("verbs: leaving %s: %s", m->name, strerror(errno));
	}
	m->joined = false;
	m->pending = false;
	m->attached = false;
}
