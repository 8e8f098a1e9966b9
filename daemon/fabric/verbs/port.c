/* SPDX-License-Identifier: MIT */
/*
 * The port: down (leave every group until it is active again), active
 * (rejoin), and its active MTU, watched because not every provider says when
 * it changes.
 */
#include <errno.h>
#include <string.h>

#include "verbs_internal.h"
#include "log.h"

void verbs_port_went_down(struct pubd_fabric *f)
{
	if (!f->port_active)
		return;
	f->port_active = false;
	/* RoCE keeps the groups through a flap without telling anyone; leave
	 * them so that the rejoin on PORT_ACTIVE starts clean. */
	for (unsigned i = 0; i < f->nmcs; i++)
		if (f->mcs[i].used) {
			f->mcs[i].retry_at = 0;
			verbs_mc_down(f, (int)i, -ENETDOWN);
		}
}

void verbs_port_came_up(struct pubd_fabric *f)
{
	struct ibv_port_attr pa;
	int ret;

	ret = ibv_query_port(f->id->verbs, f->port, &pa);
	if (ret) {
		log_warn("verbs: querying %s port %u: %s", f->dev_name, f->port, strerror(ret));
		return;
	}
	/* rxe reports ACTIVE for the netdev coming up and again for its
	 * carrier: act once. */
	if (pa.state != IBV_PORT_ACTIVE || f->port_active)
		return;
	if (verbs_mtu_bytes(pa.active_mtu) != f->active_mtu) {
		/* Receive buffers are sized for the old MTU: build anew. */
		log_notice("verbs: %s port %u active MTU changed %u -> %u", f->dev_name, f->port, f->active_mtu,
			   verbs_mtu_bytes(pa.active_mtu));
		f->up->dev_lost(f, "MTU change", false);
		return;
	}
	f->port_active = true;
	if (!verbs_qp_usable(f)) {
		f->up->dev_lost(f, "the QP is not in RTS after the link came back", false);
		return;
	}
	log_notice("verbs: %s port %u active: rejoining", f->dev_name, f->port);
	verbs_rejoin_all(f);
}

/*
 * Soft-RoCE (and some RoCE drivers) change a port's active MTU with the
 * netdev's MTU without any port event, and a UD send larger than it is
 * dropped without an error (rxe fakes its completion, IB spec C10-93.1.1):
 * read it once per PORT_CHECK_NS and rebuild for the new MTU.
 */
void verbs_port_check(struct pubd_fabric *f, uint64_t now)
{
	struct ibv_port_attr pa;

	f->port_check_at = now + PORT_CHECK_NS;
	if (!f->port_active || ibv_query_port(f->id->verbs, f->port, &pa))
		return;
	if (pa.state == IBV_PORT_ACTIVE && verbs_mtu_bytes(pa.active_mtu) &&
	    verbs_mtu_bytes(pa.active_mtu) != f->active_mtu) {
		log_notice("verbs: %s port %u active MTU changed %u -> %u", f->dev_name, f->port, f->active_mtu,
			   verbs_mtu_bytes(pa.active_mtu));
		f->up->dev_lost(f, "MTU change", false);
	}
}
