/* SPDX-License-Identifier: MIT */
/*
 * The rdmacm id's events: multicast joins completed (RDMA_CM_EVENT_MULTICAST_JOIN
 * with the AH attributes, QPN and Q_Key to send with; issued and left in
 * mcast.c), multicast errors, address changes and device removal.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/epoll.h>

#include "verbs_internal.h"
#include "log.h"
#include "loop.h"

static bool gen_matches(uint32_t a, uint32_t b)
{
	/* On 32-bit only 16 bits of the generation survive the pointer. */
	if (sizeof(uintptr_t) < 8)
		return (a & 0xffff) == (b & 0xffff);
	return a == b;
}

/* The GID our datagrams leave with: the source GID of the AH a join
 * returns. rx() compares it with a looped-back datagram's source. */
static void note_self_gid(struct pubd_fabric *f, const struct ibv_ah_attr *ah)
{
	union ibv_gid gid;

	if (!ah->is_global || ibv_query_gid(f->id->verbs, f->port, ah->grh.sgid_index, &gid)) {
		f->self_gid_ok = false;
		return;
	}
	memcpy(f->self_gid, gid.raw, sizeof(f->self_gid));
	f->self_gid_ok = true;
}

/*
 * A join's event, already acknowledged: e is a copy of the event, and only
 * its values are used (the AH attributes, Q_Key, QPN and our context in
 * private_data), never what its pointers named. Acknowledged first because
 * what this may do waits for that acknowledgement: rdma_leave_multicast
 * (on an error, a failed AH, or a daemon that leaves a group from its
 * group_state callback) blocks until every event reported for the join is
 * acked, then frees the join that the ack would touch (librdmacm/cma.c).
 */
static void on_join_event(struct pubd_fabric *f, struct rdma_cm_event *e, enum rdma_cm_event_type type, int status)
{
	unsigned idx;
	uint32_t gen;
	struct vmc *m;

	verbs_join_ctx_decode(e->param.ud.private_data, &idx, &gen);
	if (idx >= f->nmcs || !f->mcs[idx].used || !f->mcs[idx].joined || !gen_matches(f->mcs[idx].gen, gen)) {
		/* A join left since (slot reused, group gone): not ours now. */
		log_debug("verbs: stale %s for join %u/%u ignored", rdma_event_str(type), idx, gen);
		return;
	}
	m = &f->mcs[idx];
	if (type == RDMA_CM_EVENT_MULTICAST_JOIN) {
		char mgid[INET6_ADDRSTRLEN];
		struct ibv_ah *ah = ibv_create_ah(f->pd, &e->param.ud.ah_attr);

		if (!ah) {
			int err = -errno;

			f->cnt[VC_JOIN_ERRORS]++;
			log_warn("verbs: %s joined but ibv_create_ah failed: %s; retrying", m->name,
				 verbs_err_str(err));
			verbs_mc_down(f, (int)idx, err);
			verbs_mc_retry_later(f, m);
			return;
		}
		f->cnt[VC_JOINS]++;
		note_self_gid(f, &e->param.ud.ah_attr);
		verbs_ah_retire(f, m->ah); /* a rejoin or an upgrade replaces it */
		m->ah = ah;
		m->qpn = e->param.ud.qp_num;
		m->qkey = e->param.ud.qkey;
		m->mlid = e->param.ud.ah_attr.dlid;
		memcpy(m->mgid, e->param.ud.ah_attr.grh.dgid.raw, 16);
		memcpy(&m->dst4, m->mgid + 12, 4);
		m->pending = false;
		m->up = true;
		m->up_at = pubd_now_ns();
		/* librdmacm attached the QP for a full member; detach it at once
		 * if nobody listens yet. A failed attach for a listener leaves
		 * the group up for sending and tries again with the next
		 * listen(on) or rejoin. */
		m->attached = m->join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER;
		f->cnt[VC_ATTACHES] += m->attached;
		verbs_mc_sync_attach(f, (int)idx);
		log_info("verbs: joined %s on %s as %s (mgid %s, qpn 0x%x, qkey 0x%x)", m->name, f->dev_name,
			 m->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER ? "send-only full member"
										: "full member",
			 inet_ntop(AF_INET6, m->mgid, mgid, sizeof(mgid)) ? mgid : "?", m->qpn, m->qkey);
		verbs_notify_slots(f, (int)idx, true, 0);
		/* The callbacks may have left the group: only if it is still ours. */
		if (f->mcs[idx].used && gen_matches(f->mcs[idx].gen, gen)) {
			verbs_mc_listening_done(f, (int)idx);
			verbs_mc_apply(f, (int)idx); /* what changed while the join was under way */
		}
		return;
	}

	/* MULTICAST_ERROR: the join failed, or (IB) the SA/port dropped it. */
	f->cnt[VC_MC_ERRORS]++;
	log_warn("verbs: multicast error on %s (%s): %s", m->name, f->dev_name,
		 status ? verbs_err_str(status) : "no status");
	bool was_sendonly = m->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER && m->pending;

	verbs_mc_down(f, (int)idx, status < 0 ? status : -EIO);
	if (was_sendonly && !m->no_sendonly) {
		/* Send-only joins need SM support on IB: fall back at once. */
		m->no_sendonly = true;
		f->cnt[VC_REJOINS]++;
		verbs_mc_join(f, (int)idx);
		return;
	}
	verbs_mc_retry_later(f, m);
}

void verbs_on_cm(void *ctx, uint32_t events)
{
	struct pubd_fabric *f = ctx;
	struct rdma_cm_event *e;

	while (rdma_get_cm_event(f->cm_ch, &e) == 0) {
		/* Copy what we need and ack before anything else: rdma_leave_
		 * multicast and rdma_destroy_id wait for the acks of their
		 * events (a single thread waiting for itself: for ever), and
		 * free what a later ack would write to. Every handler below
		 * runs on the copy only. */
		struct rdma_cm_event copy = *e;
		enum rdma_cm_event_type type = e->event;
		int status = e->status;
		bool ours = e->id == f->id;

		rdma_ack_cm_event(e);
		e = NULL;
		if (type == RDMA_CM_EVENT_MULTICAST_JOIN || type == RDMA_CM_EVENT_MULTICAST_ERROR) {
			/* ah_attr is copied by value; private_data is the context. */
			if (ours && f->dev_ok)
				on_join_event(f, &copy, type, status);
			continue;
		}
		if (!ours) {
			log_debug("verbs: %s for an old id ignored", rdma_event_str(type));
			continue;
		}
		switch (type) {
		case RDMA_CM_EVENT_ADDR_CHANGE:
			/* E.g. a bonding failover: the address may sit on another
			 * port or device now. */
			f->cnt[VC_ADDR_CHANGE]++;
			log_warn("verbs: address change for %s", f->address);
			f->up->dev_lost(f, "address change", false);
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			/* The id must be destroyed (rdma_get_cm_event(3)). */
			f->cnt[VC_DEVICE_REMOVAL]++;
			log_warn("verbs: device %s removed", f->dev_name);
			f->up->dev_lost(f, "device removal", true);
			break;
		default:
			log_debug("verbs: %s (status %d) ignored", rdma_event_str(type), status);
			break;
		}
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK) {
		uint64_t held;
		int err = errno;

		/* The fd stays readable while reading it fails: stop watching
		 * it for a second rather than spin on it. */
		if (verbs_ratelog_ok(&f->rl_cm, &held))
			log_warn("verbs: rdma_get_cm_event: %s (%" PRIu64
				 " more since the last report); pausing it for 1 s",
				 strerror(err), held);
		if (!pubd_loop_watch_mod(f->cm_watch, 0)) {
			f->cm_resume_at = pubd_now_ns() + DEV_RETRY_NS;
			verbs_arm_retry(f);
		}
	}
}
