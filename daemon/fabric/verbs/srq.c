/* SPDX-License-Identifier: MIT */
/*
 * The receive side's buffers: one registered slab, posted to the SRQ from a
 * free list, refilled as completions hand buffers back and when the SRQ
 * falls below its low watermark (IBV_EVENT_SRQ_LIMIT_REACHED, handled in
 * async.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_internal.h"
#include "grh.h"
#include "log.h"
#include "loop.h"

void verbs_rx_arm_limit(struct pubd_fabric *f)
{
	struct ibv_srq_attr a = {.srq_limit = f->srq_wm};
	int ret;

	if (!f->srq || !f->srq_wm)
		return;
	/* The device raises IBV_EVENT_SRQ_LIMIT_REACHED once when the posted
	 * count drops below srq_limit and then clears it (rxe sets it to 0):
	 * re-armed after every refill (ibv_modify_srq(3)). */
	ret = ibv_modify_srq(f->srq, &a, IBV_SRQ_LIMIT);
	if (ret)
		log_warn("verbs: arming srq_limit %u on %s: %s", f->srq_wm, f->dev_name, strerror(ret));
}

/* The SRQ and its receive slab, every buffer on the free list. */
int verbs_rx_setup(struct pubd_fabric *f, bool quiet)
{
	struct ibv_srq_init_attr sa = {0};
	size_t sz;
	int ret;

	sa.attr.max_wr = f->srq_depth;
	sa.attr.max_sge = 1;
	f->srq = ibv_create_srq(f->pd, &sa);
	if (!f->srq) {
		ret = -errno;
		SETUP_ERR("verbs: ibv_create_srq(%u) on %s: %s", f->srq_depth, f->dev_name, verbs_err_str(ret));
		return ret;
	}

	/* Receive slab: GRH + active MTU per buffer (not fabric.mtu: a peer
	 * may send up to the path MTU), rounded to a cache line. */
	f->rx_stride = (PUBD_GRH_LEN + f->active_mtu + 63) & ~(size_t)63;
	sz = f->rx_stride * f->srq_depth;
	if (posix_memalign((void **)&f->rx_slab, 4096, sz)) {
		f->rx_slab = NULL;
		SETUP_ERR("verbs: no memory for %zu bytes of receive buffers", sz);
		return -ENOMEM;
	}
	memset(f->rx_slab, 0, sz);
	f->rx_mr = ibv_reg_mr(f->pd, f->rx_slab, sz, IBV_ACCESS_LOCAL_WRITE);
	if (!f->rx_mr) {
		ret = -errno;
		SETUP_ERR("verbs: registering %zu bytes of receive buffers on %s: %s (RLIMIT_MEMLOCK?)", sz,
			  f->dev_name, verbs_err_str(ret));
		return ret;
	}
	f->rx_free = calloc(f->srq_depth, sizeof(*f->rx_free));
	if (!f->rx_free)
		return -ENOMEM;
	for (uint32_t i = 0; i < f->srq_depth; i++)
		f->rx_free[i] = f->srq_depth - 1 - i;
	f->rx_nfree = f->srq_depth;
	return 0;
}

/* The first receives (the QP is on the SRQ now), and the low watermark. */
int verbs_rx_start(struct pubd_fabric *f, bool quiet)
{
	verbs_rx_refill(f);
	if (f->srq_posted == 0) {
		SETUP_ERR("verbs: could not post any receive buffer on %s", f->dev_name);
		return -EIO;
	}
	f->srq_min_fill = f->srq_posted;
	verbs_rx_arm_limit(f);
	return 0;
}

/* After the QP is gone: nothing can complete into the slab any more. */
void verbs_rx_teardown(struct pubd_fabric *f)
{
	if (f->rx_mr) {
		ibv_dereg_mr(f->rx_mr);
		f->rx_mr = NULL;
	}
	free(f->rx_slab);
	f->rx_slab = NULL;
	free(f->rx_free);
	f->rx_free = NULL;
	f->rx_nfree = 0;
	f->srq_posted = 0;
	if (f->srq) {
		ibv_destroy_srq(f->srq);
		f->srq = NULL;
	}
}

/* Post every buffer on the free list, in linked batches. */
unsigned verbs_rx_refill(struct pubd_fabric *f)
{
	struct ibv_recv_wr wr[POST_BATCH], *bad;
	struct ibv_sge sge[POST_BATCH];
	unsigned posted = 0;

	while (f->rx_nfree) {
		unsigned n = f->rx_nfree < POST_BATCH ? f->rx_nfree : POST_BATCH;
		uint32_t *idx = &f->rx_free[f->rx_nfree - n];
		int ret;

		for (unsigned i = 0; i < n; i++) {
			sge[i] = (struct ibv_sge){
				.addr = (uintptr_t)(f->rx_slab + (size_t)idx[i] * f->rx_stride),
				.length = (uint32_t)f->rx_stride,
				.lkey = f->rx_mr->lkey,
			};
			wr[i] = (struct ibv_recv_wr){
				.wr_id = idx[i],
				.next = i + 1 < n ? &wr[i + 1] : NULL,
				.sg_list = &sge[i],
				.num_sge = 1,
			};
		}
		ret = ibv_post_srq_recv(f->srq, wr, &bad);
		if (ret) {
			/* WRs before bad_wr were posted (ibv_post_srq_recv(3)); the
			 * rest stay on the free list for the next refill. */
			unsigned ok = (unsigned)(bad - wr);
			uint64_t held;

			memmove(idx, idx + ok, (n - ok) * sizeof(*idx));
			f->rx_nfree -= ok;
			f->srq_posted += ok;
			posted += ok;
			f->cnt[VC_RX_POST_ERRORS]++;
			if (verbs_ratelog_ok(&f->rl_rx_post, &held))
				log_warn("verbs: posting receives on %s: %s (%u buffers unposted; %" PRIu64
					 " more failures since the last report); retrying with back-off",
					 f->dev_name, strerror(ret), f->rx_nfree, held);
			/* Completions may never come to refill from (an empty SRQ
			 * takes nothing): the retry timer tries again. */
			f->rx_retry_delay = f->rx_retry_delay ? f->rx_retry_delay * 2 : POST_RETRY_MIN_NS;
			if (f->rx_retry_delay > POST_RETRY_MAX_NS)
				f->rx_retry_delay = POST_RETRY_MAX_NS;
			f->rx_retry_at = pubd_now_ns() + f->rx_retry_delay;
			verbs_arm_retry(f);
			return posted;
		}
		f->rx_nfree -= n;
		f->srq_posted += n;
		posted += n;
	}
	f->rx_retry_delay = 0;
	f->rx_retry_at = 0;
	return posted;
}
