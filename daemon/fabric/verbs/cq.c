/* SPDX-License-Identifier: MIT */
/*
 * The CQ: receive completions handed to the daemon in batches, send
 * completions returning credits; armed for an event, or polled from the loop
 * while datagrams keep coming (linger).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "verbs_internal.h"
#include "grh.h"
#include "ud_peer.h"
#include "log.h"
#include "loop.h"

/*
 * The slot of the group a datagram was addressed to, or -1 when it was not
 * addressed to a group whose datagrams this QP takes now (joined and
 * attached). The work completion does not say whether the datagram came by
 * multicast: a peer can send to this QP's number directly, with the
 * well-known Q_Key, to a unicast address or even to a group address it knows
 * we joined but do not listen on. Only the destination in front of the
 * payload tells, so it must name an attached group exactly: the IPv4
 * destination of a RoCEv2/IPv4 header, else the whole destination GID.
 */
static int32_t rx_slot_of(struct pubd_fabric *f, const uint8_t *grh, bool has_grh)
{
	enum pubd_grh_kind kind;
	uint32_t dst4;

	if (!has_grh)
		return -1;
	kind = pubd_grh_kind(grh);
	if (kind == PUBD_GRH_UNKNOWN)
		return -1;
	memcpy(&dst4, grh + PUBD_GRH_DST4_OFF, 4);
	/* A linear scan over the joined addresses (tens, not thousands),
	 * with the last hit tried first: a stream hits it every time. */
	for (unsigned k = 0; k <= f->nmcs; k++) {
		int i = k == 0 ? f->last_rx_mc : (int)k - 1;
		struct vmc *m;

		if (i < 0 || (unsigned)i >= f->nmcs)
			continue;
		m = &f->mcs[i];
		if (!m->used || m->dst4 != dst4 || !m->joined || !m->attached)
			continue;
		if (kind == PUBD_GRH_IPV4 ? m->addr.ss_family != AF_INET
					  : memcmp(grh + PUBD_GRH_DGID_OFF, m->mgid, 16) != 0)
			continue;
		f->last_rx_mc = i;
		return m->rx_slot;
	}
	return -1;
}

static void tx_complete(struct pubd_fabric *f, const struct ibv_wc *wc)
{
	uint64_t seq = wc->wr_id & ~TX_WRID;

	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR) {
		uint64_t held;

		f->cnt[VC_TX_WC_ERRORS]++;
		f->qp_check = true;
		if (verbs_ratelog_ok(&f->rl_tx_wc, &held))
			log_warn("verbs: send completion error on %s: %s (vendor 0x%x; %" PRIu64
				 " more since the last report)",
				 f->dev_name, ibv_wc_status_str(wc->status), wc->vendor_err, held);
	}
	/* The send queue completes in order: a signalled WR's completion
	 * retires every unsignalled one posted before it. */
	if (seq + 1 > f->tx_done) {
		uint64_t from = f->tx_done;

		f->tx_done = seq + 1;
		verbs_inplace_done(f, from, seq + 1);
	}
}

/*
 * A receive completion: its buffer goes back on bufs (reposted once the
 * daemon is done with the batch), its datagram, if whole, onto *out, its
 * sender (what a unicast reply needs: GID, QPN, LID, SL) into *peer.
 * Returns whether it gave a datagram.
 */
static bool rx_complete(struct pubd_fabric *f, const struct ibv_wc *w, struct pubd_rx_dgram *out,
			struct pubd_ud_peer *peer)
{
	uint8_t *buf;

	f->srq_posted--;
	if (w->status != IBV_WC_SUCCESS) {
		uint64_t held;

		if (w->status != IBV_WC_WR_FLUSH_ERR) {
			f->cnt[VC_RX_WC_ERRORS]++;
			if (verbs_ratelog_ok(&f->rl_rx_wc, &held))
				log_warn("verbs: receive completion error on %s: %s (%" PRIu64
					 " more since the last report)",
					 f->dev_name, ibv_wc_status_str(w->status), held);
		}
		return false;
	}
	/* byte_len counts the 40 GRH bytes (ibv_poll_cq(3)). */
	if (w->byte_len < PUBD_GRH_LEN) {
		f->cnt[PUBD_FC_RX_TRUNCATED]++;
		return false;
	}
	buf = f->rx_slab + (size_t)w->wr_id * f->rx_stride;
	out->data = buf + PUBD_GRH_LEN;
	out->len = w->byte_len - PUBD_GRH_LEN;
	out->slot = rx_slot_of(f, buf, w->wc_flags & IBV_WC_GRH);
	/* The adapter loops our own multicast back (rxe cannot block
	 * it). A QP number alone does not tell: QP numbers are per
	 * device, so a peer on another port can have ours. */
	out->self = f->qp && w->src_qp == f->qp->qp_num && f->self_gid_ok && pubd_grh_from_gid(buf, f->self_gid);
	out->from = peer;
	out->kernel_drops = 0; /* a UD QP short of receives drops unseen */
	out->from_len = pubd_ud_peer_from_grh(buf, w->wc_flags & IBV_WC_GRH, w->src_qp, w->slid, w->sl, peer)
				? sizeof(*peer)
				: 0;
	if (out->slot < 0)
		f->cnt[PUBD_FC_RX_UNKNOWN_GROUP]++;
	f->cnt[PUBD_FC_RX_BYTES] += out->len;
	return true;
}

/* One polled batch of n completions: receives to the daemon, their
 * buffers back to the SRQ, sends retired. */
static void dispatch_batch(struct pubd_fabric *f, const struct ibv_wc *wc, int n)
{
	struct pubd_rx_dgram rx[CQ_BATCH];
	struct pubd_ud_peer peers[CQ_BATCH];
	uint32_t bufs[CQ_BATCH];
	unsigned nrx = 0, nbuf = 0;

	for (int i = 0; i < n; i++) {
		if (wc[i].wr_id & TX_WRID) {
			tx_complete(f, &wc[i]);
			continue;
		}
		bufs[nbuf++] = (uint32_t)wc[i].wr_id;
		nrx += rx_complete(f, &wc[i], &rx[nrx], &peers[nrx]);
	}
	if (f->srq_posted < f->srq_min_fill)
		f->srq_min_fill = f->srq_posted;
	f->cnt[PUBD_FC_RX_DATAGRAMS] += nrx;
	if (nrx)
		f->ev.rx(f->ctx, rx, nrx);
	/* The daemon is done with the bytes: back to the SRQ at once. */
	if (nbuf && f->rx_free) {
		memcpy(f->rx_free + f->rx_nfree, bufs, nbuf * sizeof(*bufs));
		f->rx_nfree += nbuf;
		verbs_rx_refill(f);
	}
}

/* Poll up to budget completions; hand receives to the daemon in batches. */
unsigned verbs_drain_cq(struct pubd_fabric *f, unsigned budget, bool *more)
{
	struct ibv_wc wc[CQ_BATCH];
	unsigned done = 0;

	*more = false;
	while (f->cq) {
		int n;

		if (done >= budget) {
			*more = true;
			break;
		}
		n = ibv_poll_cq(f->cq, CQ_BATCH, wc);
		if (n < 0) {
			log_err("verbs: ibv_poll_cq on %s failed (%d)", f->dev_name, n);
			f->up->dev_lost(f, "CQ poll error", false);
			break;
		}
		if (n == 0)
			break;
		dispatch_batch(f, wc, n);
		done += (unsigned)n;
	}
	verbs_ah_reap(f, false);
	/* After a failed post, credits alone do not make it writable: the
	 * retry timer says when to try again (tx_retry_at). */
	if (f->tx_blocked && !f->tx_retry_at && verbs_tx_credits(f, false) > 0) {
		f->tx_blocked = false;
		f->ev.writable(f->ctx);
	}
	return done;
}

/* Ask for an event at the next completion. false: the device is gone. */
bool verbs_arm_cq(struct pubd_fabric *f)
{
	int ret = ibv_req_notify_cq(f->cq, 0);

	if (ret) {
		log_err("verbs: ibv_req_notify_cq on %s: %s", f->dev_name, strerror(ret));
		f->up->dev_lost(f, "CQ notification error", false);
		return false;
	}
	f->cq_armed = true;
	return true;
}

void verbs_process_cq(struct pubd_fabric *f)
{
	bool more;
	unsigned n;

	f->cq_armed = false; /* an event came, or the kick: the arm is spent */
	n = verbs_drain_cq(f, CQ_BUDGET, &more);
	if (!f->cq)
		return;
	if (f->qp_check) {
		f->qp_check = false;
		if (!verbs_qp_usable(f)) {
			f->up->dev_lost(f, "the QP left RTS after a send error", false);
			return;
		}
	}
	if (more) {
		verbs_kick(f); /* yield to the other fds; continue next iteration */
		return;
	}
	/* In a train of completions: leave the CQ unarmed and let verbs_linger
	 * poll on from the loop; it arms before the loop may sleep. */
	if (n && f->linger.ns) {
		pubd_linger_work(&f->linger);
		return;
	}
	/* Drain, re-arm, drain again: a completion that lands between the
	 * last empty poll and the arm raises no event (ibv_req_notify_cq(3)). */
	if (!verbs_arm_cq(f))
		return;
	verbs_drain_cq(f, CQ_BUDGET, &more);
	if (more)
		verbs_kick(f);
}

void verbs_on_comp(void *ctx, uint32_t events)
{
	struct pubd_fabric *f = ctx;
	struct ibv_cq *cq;
	void *cq_ctx;

	/* One CQ raises at most one event per ibv_req_notify_cq, so one read
	 * takes it; a second would only return EAGAIN (a system call per
	 * wakeup). The fd is level-triggered: anything left wakes us again. */
	if (f->comp_ch && ibv_get_cq_event(f->comp_ch, &cq, &cq_ctx) == 0) {
		f->cq_unacked++;
		f->cnt[VC_CQ_EVENTS]++;
	} else if (f->comp_ch && errno != EAGAIN && errno != EWOULDBLOCK) {
		/* A channel that is readable but cannot be read (the device was
		 * disassociated) would wake the loop for ever: rebuild. */
		log_err("verbs: reading the completion channel of %s: %s", f->dev_name, strerror(errno));
		f->up->dev_lost(f, "completion channel error", true);
		return;
	}
	/* Acks take a lock: batch them; ibv_destroy_cq waits for all of them. */
	if (f->cq && f->cq_unacked >= 64) {
		ibv_ack_cq_events(f->cq, f->cq_unacked);
		f->cq_unacked = 0;
	}
	if (f->cq)
		verbs_process_cq(f);
}

int verbs_poll(struct pubd_fabric *f)
{
	bool more;

	return f->cq ? (int)verbs_drain_cq(f, CQ_BUDGET, &more) : 0;
}

/*
 * Datagrams come in trains (a fragmented message, a burst of publishes),
 * and sleeping on the CQ's event costs a wakeup, a read of the channel and
 * a re-arm each time: under a train, about one wakeup per two datagrams.
 * Instead, after a completion the CQ is left unarmed and polled once per
 * loop iteration (the loop does not sleep while this returns work, so the
 * clients' sockets are served between polls) until fabric.rx_linger_us
 * has passed without one (core/linger.h); then it is armed and the loop
 * may sleep. ibv_poll_cq does not enter the kernel on most providers, rxe
 * included.
 */
int verbs_linger(struct pubd_fabric *f, bool busy)
{
	unsigned n;
	bool more;

	if (!f->cq || f->cq_armed)
		return 0; /* sleeping is safe: the next completion wakes us */
	n = verbs_drain_cq(f, CQ_BUDGET, &more);
	if (n || !f->cq) {
		pubd_linger_work(&f->linger);
		return (int)n;
	}
	if (busy)
		return 0; /* the loop comes round again anyway: not an idle poll */
	if (pubd_linger_idle(&f->linger, pubd_now_ns))
		return 1;
	/* The train is over: arm, and take what came in between. */
	if (!verbs_arm_cq(f))
		return 0;
	n = verbs_drain_cq(f, CQ_BUDGET, &more);
	if (more)
		verbs_kick(f);
	return (int)n;
}
