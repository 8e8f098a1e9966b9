/* SPDX-License-Identifier: MIT */
/*
 * The send path: datagrams gathered into the registered send slab (or sent
 * inline, or a lent payload from where it lies: inplace.c), posted in
 * linked batches against the send queue's credits.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_internal.h"
#include "log.h"
#include "loop.h"

/* The registered send slab: one buffer of the MTU per send queue entry. */
int verbs_tx_setup(struct pubd_fabric *f, bool quiet)
{
	size_t sz;
	int ret;

	f->tx_stride = (f->mtu + 63) & ~(size_t)63;
	sz = f->tx_stride * f->sq_depth;
	if (posix_memalign((void **)&f->tx_slab, 4096, sz)) {
		f->tx_slab = NULL;
		SETUP_ERR("verbs: no memory for %zu bytes of send buffers", sz);
		return -ENOMEM;
	}
	memset(f->tx_slab, 0, sz);
	f->tx_mr = ibv_reg_mr(f->pd, f->tx_slab, sz, 0);
	if (!f->tx_mr) {
		ret = -errno;
		SETUP_ERR("verbs: registering %zu bytes of send buffers on %s: %s (RLIMIT_MEMLOCK?)", sz, f->dev_name,
			  verbs_err_str(ret));
		return ret;
	}
	if (verbs_inplace_setup(f)) {
		SETUP_ERR("verbs: no memory for %u send queue entries", f->sq_depth);
		return -ENOMEM;
	}
	return 0;
}

/* After the QP is gone: no posted send names the slab any more. */
void verbs_tx_teardown(struct pubd_fabric *f)
{
	verbs_inplace_teardown(f);
	if (f->tx_mr) {
		ibv_dereg_mr(f->tx_mr);
		f->tx_mr = NULL;
	}
	free(f->tx_slab);
	f->tx_slab = NULL;
}

/* Where a batch goes: a group (its join's AH, QPN 0xffffff and Q_Key) or
 * one peer's QP (an AH from peer_ah.c, pubd's Q_Key). */
struct dest {
	struct ibv_ah *ah;
	uint32_t qpn, qkey;
};

/* One send WR for datagram x, the post's sequence number seq. Returns
 * whether it reads x's payload in place (inplace.c: pin it once posted). */
static bool build_wr(struct pubd_fabric *f, const struct dest *to, const struct pubd_tx_dgram *x, uint64_t seq,
		     struct ibv_send_wr *w, struct ibv_sge sge[2])
{
	uint32_t len = x->hdr_len + x->payload_len, lkey;
	bool in_place = false;

	*w = (struct ibv_send_wr){
		.wr_id = TX_WRID | seq,
		.sg_list = sge,
		.opcode = IBV_WR_SEND,
		.wr.ud = {.ah = to->ah, .remote_qpn = to->qpn, .remote_qkey = to->qkey},
	};
	if (len <= f->max_inline) {
		/* Inline: the provider copies at post time, no lkey. */
		int ns = 0;

		if (x->hdr_len)
			sge[ns++] = (struct ibv_sge){(uintptr_t)x->hdr, x->hdr_len, 0};
		if (x->payload_len)
			sge[ns++] = (struct ibv_sge){(uintptr_t)x->payload, x->payload_len, 0};
		w->num_sge = ns;
		w->send_flags = IBV_SEND_INLINE;
		f->cnt[VC_TX_INLINE]++;
	} else if ((in_place = verbs_inplace_lkey(f, x, &lkey))) {
		/* The header from the slab, the payload from the client's
		 * publish log, where it lies. */
		uint8_t *p = f->tx_slab + (size_t)(seq % f->sq_depth) * f->tx_stride;
		int ns = 0;

		if (x->hdr_len) {
			memcpy(p, x->hdr, x->hdr_len);
			sge[ns++] = (struct ibv_sge){(uintptr_t)p, x->hdr_len, f->tx_mr->lkey};
		}
		sge[ns++] = (struct ibv_sge){(uintptr_t)x->payload, x->payload_len, lkey};
		w->num_sge = ns;
	} else {
		/* Slot seq % depth is free: credits keep at most
		 * sq_depth sends outstanding. */
		uint8_t *p = f->tx_slab + (size_t)(seq % f->sq_depth) * f->tx_stride;

		if (x->hdr_len) /* raw groups carry no header */
			memcpy(p, x->hdr, x->hdr_len);
		if (x->payload_len)
			memcpy(p + x->hdr_len, x->payload, x->payload_len);
		sge[0] = (struct ibv_sge){(uintptr_t)p, len, f->tx_mr->lkey};
		w->num_sge = 1;
	}
	f->cnt[PUBD_FC_TX_BYTES] += len;
	return in_place;
}

/*
 * ibv_post_send failed (error ret) after ok of the WRs went out. The WRs
 * are well formed, so the device refused them (queue full, out of memory,
 * or the QP left RTS): not the message's fault, so not a drop. Take the
 * rest as out of credits and let the retry timer make it writable again,
 * backing off while the posts keep failing; a QP that left RTS is rebuilt
 * (qp_check). Answering writable at once would spin.
 */
static void post_failed(struct pubd_fabric *f, int ret, unsigned ok)
{
	uint64_t held;

	f->tx_posted += ok;
	f->cnt[PUBD_FC_TX_POST_ERRORS]++;
	f->cnt[PUBD_FC_TX_DATAGRAMS] += ok;
	if (verbs_ratelog_ok(&f->rl_tx_post, &held))
		log_warn("verbs: ibv_post_send on %s: %s (%" PRIu64
			 " more failures since the last report); retrying with back-off",
			 f->dev_name, strerror(ret), held);
	f->qp_check = true;
	verbs_kick(f);
	f->tx_blocked = true;
	f->tx_retry_delay = f->tx_retry_delay ? f->tx_retry_delay * 2 : POST_RETRY_MIN_NS;
	if (f->tx_retry_delay > POST_RETRY_MAX_NS)
		f->tx_retry_delay = POST_RETRY_MAX_NS;
	f->tx_retry_at = pubd_now_ns() + f->tx_retry_delay;
	verbs_arm_retry(f);
}

/* Post the k (<= POST_BATCH) datagrams d as one linked list of WRs.
 * Returns how many were posted: k, or fewer when the post failed. */
static unsigned post_batch(struct pubd_fabric *f, const struct dest *to, const struct pubd_tx_dgram *d, unsigned k)
{
	struct ibv_send_wr wr[POST_BATCH], *bad;
	struct ibv_sge sge[POST_BATCH][2];
	bool in_place[POST_BATCH];
	unsigned ok;
	int ret;

	for (unsigned i = 0; i < k; i++) {
		uint64_t seq = f->tx_posted + i;

		in_place[i] = build_wr(f, to, &d[i], seq, &wr[i], sge[i]);
		wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
		/* Signal every Nth and the last of each post, so no
		 * unsignalled tail is left without a completion to
		 * return its credits. */
		if ((seq + 1) % f->signal_every == 0 || i + 1 == k)
			wr[i].send_flags |= IBV_SEND_SIGNALED;
	}
	ret = ibv_post_send(f->qp, wr, &bad);
	ok = ret ? (unsigned)(bad - wr) : k;
	/* Only what was posted reads its payload (and retires at tx_done). */
	for (unsigned i = 0; i < ok; i++)
		if (in_place[i])
			verbs_inplace_posted(f, f->tx_posted + i, d[i].lent);
	if (ret) {
		post_failed(f, ret, ok);
		return ok;
	}
	f->tx_retry_delay = 0;
	f->tx_posted += k;
	f->cnt[PUBD_FC_TX_DATAGRAMS] += k;
	return k;
}

/*
 * Send queue entries free for a send now. Multicast and unicast share the
 * queue, and so its credits, but the last eighth is kept for unicast: a
 * publisher keeps the queue full, and loss repair's NAKs and repairs,
 * small and few, would otherwise find no credit whenever they come, and
 * the receiver's gap would stay open until its retries run out.
 */
uint64_t verbs_tx_credits(const struct pubd_fabric *f, bool unicast)
{
	uint64_t used = f->tx_posted - f->tx_done, keep = unicast ? 0 : f->sq_depth / 8;

	return used + keep < f->sq_depth ? f->sq_depth - used - keep : 0;
}

/* As many of the n datagrams to `to` as there are credits for. */
static int post_all(struct pubd_fabric *f, const struct dest *to, bool unicast, const struct pubd_tx_dgram *d,
		    unsigned n)
{
	uint64_t credits;
	unsigned want, done = 0;

	/* Refuse the whole batch before posting any of it: UD cannot carry
	 * more than the path MTU, and a datagram cut short is worse. */
	for (unsigned i = 0; i < n; i++)
		if ((uint64_t)d[i].hdr_len + d[i].payload_len > f->mtu) {
			f->cnt[VC_TX_TOO_BIG]++;
			return -EMSGSIZE;
		}
	credits = verbs_tx_credits(f, unicast);
	want = n < credits ? n : (unsigned)credits;
	if (want < n) {
		f->tx_blocked = true;
		f->cnt[PUBD_FC_TX_NO_CREDITS]++;
	}
	while (done < want) {
		unsigned k = want - done < POST_BATCH ? want - done : POST_BATCH;
		unsigned posted = post_batch(f, to, &d[done], k);

		done += posted;
		if (posted < k)
			break;
	}
	return (int)done;
}

/* The ops' send: as many of the n datagrams as there are credits for. */
int verbs_send(struct pubd_fabric *f, int slot, const struct pubd_tx_dgram *d, unsigned n)
{
	struct dest to;
	struct vmc *m;

	if (slot < 0 || (unsigned)slot >= f->nslots || !f->slots[slot].used)
		return -EBADSLT;
	m = &f->mcs[f->slots[slot].mc];
	if (!f->dev_ok || !m->up || !m->ah)
		return -ENOTCONN;
	to = (struct dest){.ah = m->ah, .qpn = m->qpn, .qkey = m->qkey};
	return post_all(f, &to, false, d, n);
}

/*
 * The ops' send_to: the n datagrams to one peer's QP, as a received
 * datagram's from named it (struct pubd_ud_peer), with the Q_Key every
 * pubd QP has (rdma_create_qp sets RDMA_UDP_QKEY on a UD QP of an
 * RDMA_PS_UDP id). The address handle comes from peer_ah.c's cache.
 * A probe with no peer (n 0) says unicast works here.
 */
/* A UD peer's machine: its GID (a QP is one of many there), or its LID on
 * InfiniBand without a GRH. */
uint32_t verbs_peer_host(const void *peer, uint32_t peer_len, uint8_t *out)
{
	struct pubd_ud_peer p;

	if (!pubd_ud_peer_parse(peer, peer_len, &p))
		return 0;
	if (p.addr.kind == PUBD_UD_LID) {
		memcpy(out, &p.addr.lid, sizeof(p.addr.lid));
		return sizeof(p.addr.lid);
	}
	memcpy(out, p.addr.gid, sizeof(p.addr.gid));
	return sizeof(p.addr.gid);
}

int verbs_send_to(struct pubd_fabric *f, const void *peer, uint32_t peer_len, const struct pubd_tx_dgram *d, unsigned n)
{
	struct pubd_ud_peer p;
	struct dest to;
	int ret;

	if (!peer && !n)
		return 0;
	if (!pubd_ud_peer_parse(peer, peer_len, &p)) {
		f->cnt[VC_TX_BAD_PEER]++;
		return -EINVAL;
	}
	if (!f->dev_ok || !f->qp)
		return -ENOTCONN;
	to.ah = verbs_peer_ah_get(f, &p.addr, &ret);
	if (!to.ah)
		return ret;
	to.qpn = p.qpn;
	to.qkey = RDMA_UDP_QKEY;
	ret = post_all(f, &to, true, d, n);
	if (ret > 0)
		f->cnt[VC_TX_UNICAST] += (unsigned)ret;
	return ret;
}
