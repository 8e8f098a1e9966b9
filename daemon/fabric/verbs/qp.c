/* SPDX-License-Identifier: MIT */
/*
 * The UD QP: created on the SRQ and the CQ, stepping down from what we
 * would like to what the provider takes, and checked for having left RTS.
 */
#include <errno.h>
#include <string.h>

#include "verbs_internal.h"
#include "log.h"

int verbs_create_qp(struct pubd_fabric *f)
{
	/* Try the most we would like first, then step down: not every
	 * provider takes IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (there is no
	 * capability bit for it) or inline data. */
	static const struct {
		bool block_lb;
		uint32_t inl;
	} tries[] = {{true, REQ_INLINE}, {false, REQ_INLINE}, {false, 0}};
	int ret = -EINVAL;

	for (unsigned t = 0; t < sizeof(tries) / sizeof(tries[0]); t++) {
		struct ibv_qp_init_attr_ex a = {
			.qp_type = IBV_QPT_UD,
			.send_cq = f->cq,
			.recv_cq = f->cq,
			.srq = f->srq,
			.sq_sig_all = 0,
			.cap = {.max_send_wr = f->sq_depth, .max_send_sge = 2, .max_inline_data = tries[t].inl},
			.comp_mask = IBV_QP_INIT_ATTR_PD,
			.pd = f->pd,
		};

		if (tries[t].block_lb) {
			a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
			a.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
		}
		/* rdma_create_qp_ex also moves a UD QP to RTS with the
		 * RDMA_UDP_QKEY (librdmacm/cma.c, ucma_init_ud_qp). */
		if (rdma_create_qp_ex(f->id, &a) == 0) {
			f->qp = f->id->qp;
			f->block_self_lb = tries[t].block_lb;
			f->max_inline = a.cap.max_inline_data;
			return 0;
		}
		ret = -errno;
		log_debug("verbs: UD QP on %s (block self loopback %d, inline %u): %s", f->dev_name, tries[t].block_lb,
			  tries[t].inl, strerror(-ret));
	}
	return ret;
}

/*
 * A failed send can move a UD QP to SQE or ERR (the IB spec's QP state
 * machine; rxe does it when the link drops under a send), and every later
 * send is then flushed: the group looks joined but nothing leaves. Nothing
 * moves it back by itself, so rebuild the device resources when it is not
 * in RTS.
 */
bool verbs_qp_usable(struct pubd_fabric *f)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (!f->qp)
		return false;
	if (ibv_query_qp(f->qp, &attr, IBV_QP_STATE, &init))
		return true; /* cannot tell: leave it to the next error */
	return attr.qp_state == IBV_QPS_RTS;
}
