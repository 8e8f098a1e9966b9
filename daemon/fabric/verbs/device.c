/* SPDX-License-Identifier: MIT */
/*
 * The device resources: built in steps on the rdmacm id bound to
 * fabric.address (verbs_dev_setup), released in reverse (verbs_dev_teardown),
 * and rebuilt after a loss, with back-off when they keep failing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "verbs_internal.h"
#include "grh.h"
#include "log.h"
#include "loop.h"

void verbs_dev_teardown(struct pubd_fabric *f)
{
	/* Strict reverse order of verbs_dev_setup; the cm id goes last. */
	verbs_hub_detach(f);
	if (f->comp_watch) {
		pubd_loop_unwatch(f->comp_watch);
		f->comp_watch = NULL;
	}
	/* The peers' AHs are the device's too: retired with the groups'. */
	verbs_peer_ah_flush(f);
	for (unsigned i = 0; i < f->nmcs; i++) {
		struct vmc *m = &f->mcs[i];

		if (!m->used)
			continue;
		verbs_mc_leave(f, m); /* detaches the QP: before the QP goes */
		m->up = false;
		verbs_ah_retire(f, m->ah);
		m->ah = NULL;
	}
	/* The QP before the AHs (created after it, by join events): posted
	 * sends may still name them until the QP is gone. */
	if (f->qp) {
		rdma_destroy_qp(f->id);
		f->qp = NULL;
	}
	f->self_gid_ok = false;
	verbs_ah_reap(f, true);
	verbs_tx_teardown(f);
	verbs_rx_teardown(f);
	if (f->cq) {
		if (f->cq_unacked)
			ibv_ack_cq_events(f->cq, f->cq_unacked);
		f->cq_unacked = 0;
		ibv_destroy_cq(f->cq);
		f->cq = NULL;
	}
	if (f->comp_ch) {
		ibv_destroy_comp_channel(f->comp_ch);
		f->comp_ch = NULL;
	}
	if (f->pd) {
		ibv_dealloc_pd(f->pd);
		f->pd = NULL;
	}
	if (f->id) {
		rdma_destroy_id(f->id);
		f->id = NULL;
	}
	f->tx_posted = f->tx_done = 0;
	/* tx_blocked survives: the daemon still waits for ev.writable, which
	 * verbs_try_rebuild gives it once there are credits again. */
	f->tx_retry_at = f->rx_retry_at = 0;
	f->port_check_at = 0;
	f->dev_ok = false;
	f->port_active = false;
}

/* The rdmacm id, bound to fabric.address: it names the device and port. */
static int bind_id(struct pubd_fabric *f, bool quiet)
{
	char where[sizeof(f->address) + 16];
	int ret;

	snprintf(where, sizeof(where), "fabric.address %s", f->address);
	ret = rdma_create_id(f->cm_ch, &f->id, f, RDMA_PS_UDP) ? -errno : 0;
	if (ret) {
		f->id = NULL;
		SETUP_ERR("verbs: rdma_create_id: %s", verbs_err_str(ret));
		return ret;
	}
	ret = rdma_bind_addr(f->id, (struct sockaddr *)&f->bind_addr) ? -errno : 0;
	if (ret) {
		char found[512];

		verbs_devices_found(found, sizeof(found));
		SETUP_ERR("verbs: %s: rdma_bind_addr: %s; RDMA devices found: %s", where, verbs_err_str(ret), found);
		return ret;
	}
	if (!f->id->verbs) {
		char found[512];

		verbs_devices_found(found, sizeof(found));
		SETUP_ERR("verbs: %s is not on an RDMA device (rdma_bind_addr found none); RDMA devices found: %s",
			  where, found);
		return -ENODEV;
	}
	snprintf(f->dev_name, sizeof(f->dev_name), "%s", ibv_get_device_name(f->id->verbs->device));
	f->port = f->id->port_num;
	return 0;
}

/* What the device and port can do, and the port's state and active MTU. */
static int query_device(struct pubd_fabric *f, bool quiet, struct ibv_device_attr *da, struct ibv_port_attr *pa)
{
	int ret;

	ret = -ibv_query_device(f->id->verbs, da);
	if (!ret)
		ret = -ibv_query_port(f->id->verbs, f->port, pa);
	if (ret) {
		SETUP_ERR("verbs: querying %s port %u: %s", f->dev_name, f->port, verbs_err_str(ret));
		return ret;
	}
	if (da->max_mcast_grp == 0 || da->max_srq == 0) {
		SETUP_ERR("verbs: %s cannot do %s (max_mcast_grp %d, max_srq %d)", f->dev_name,
			  da->max_mcast_grp == 0 ? "multicast" : "shared receive queues", da->max_mcast_grp,
			  da->max_srq);
		return -EOPNOTSUPP;
	}
	f->link_layer = pa->link_layer;
	f->active_mtu = verbs_mtu_bytes(pa->active_mtu);
	f->port_active = pa->state == IBV_PORT_ACTIVE;
	return 0;
}

/* The largest datagram sent: fabric.mtu, or the port's active MTU (auto,
 * or while the port carries less than fabric.mtu after a change). */
static int choose_mtu(struct pubd_fabric *f, bool quiet)
{
	if (f->cfg_mtu && f->cfg_mtu > f->active_mtu && !f->opened) {
		/* Sending more than the path MTU is not possible on UD (the
		 * device drops it without a word): refuse to start. */
		SETUP_ERR("verbs: fabric.mtu %u is larger than the active MTU %u of %s port %u (fabric.address %s): "
			  "set fabric.mtu to at most %u, or auto",
			  f->cfg_mtu, f->active_mtu, f->dev_name, f->port, f->address, f->active_mtu);
		return -EINVAL;
	}
	if (f->cfg_mtu && f->cfg_mtu > f->active_mtu) {
		/* The port came back (or changed) with a smaller MTU while we
		 * run: failing the rebuild would leave the fabric down until
		 * someone edits the configuration. Run at the port's MTU, say so
		 * once, and go back to fabric.mtu when the port carries it. */
		if (!f->mtu_capped)
			log_err("verbs: fabric.mtu %u is larger than the active MTU %u of %s port %u now: sending "
				"datagrams of at most %u until the port carries %u again",
				f->cfg_mtu, f->active_mtu, f->dev_name, f->port, f->active_mtu, f->cfg_mtu);
		f->mtu_capped = true;
		f->mtu = f->active_mtu;
	} else {
		if (f->mtu_capped)
			log_notice("verbs: %s port %u carries fabric.mtu %u again (active MTU %u)", f->dev_name,
				   f->port, f->cfg_mtu, f->active_mtu);
		f->mtu_capped = false;
		f->mtu = f->cfg_mtu ? f->cfg_mtu : f->active_mtu;
	}
	return 0;
}

/* The configured queue depths, within what the device allows. */
static int fit_depths(struct pubd_fabric *f, bool quiet, const struct ibv_device_attr *da)
{
	if (f->srq_depth > (uint32_t)da->max_srq_wr) {
		SETUP_NOTE("verbs: srq_depth %u exceeds %s's max_srq_wr %d; using %d", f->srq_depth, f->dev_name,
			   da->max_srq_wr, da->max_srq_wr);
		f->srq_depth = (uint32_t)da->max_srq_wr;
	}
	if (f->sq_depth > (uint32_t)da->max_qp_wr) {
		SETUP_NOTE("verbs: send_queue_depth %u exceeds %s's max_qp_wr %d; using %d", f->sq_depth, f->dev_name,
			   da->max_qp_wr, da->max_qp_wr);
		f->sq_depth = (uint32_t)da->max_qp_wr;
	}
	if (f->srq_wm >= f->srq_depth) {
		SETUP_ERR("verbs: srq_low_watermark %u must be below srq_depth %u", f->srq_wm, f->srq_depth);
		return -EINVAL;
	}
	if ((int)(f->srq_depth + f->sq_depth) > da->max_cqe) {
		SETUP_ERR("verbs: srq_depth + send_queue_depth (%u) exceeds %s's max_cqe %d",
			  f->srq_depth + f->sq_depth, f->dev_name, da->max_cqe);
		return -EINVAL;
	}
	return 0;
}

/* The PD, and one CQ with its completion channel. */
static int create_pd_cq(struct pubd_fabric *f, bool quiet)
{
	int ret;

	f->pd = ibv_alloc_pd(f->id->verbs);
	if (!f->pd) {
		ret = -errno;
		SETUP_ERR("verbs: ibv_alloc_pd on %s: %s", f->dev_name, verbs_err_str(ret));
		return ret;
	}
	f->comp_ch = ibv_create_comp_channel(f->id->verbs);
	if (!f->comp_ch) {
		ret = -errno;
		SETUP_ERR("verbs: ibv_create_comp_channel on %s: %s", f->dev_name, verbs_err_str(ret));
		return ret;
	}
	/* One CQ for both directions, deep enough for every posted receive
	 * and every send, so it cannot overrun. */
	f->cq = ibv_create_cq(f->id->verbs, (int)(f->srq_depth + f->sq_depth), f, f->comp_ch, 0);
	if (!f->cq) {
		ret = -errno;
		SETUP_ERR("verbs: ibv_create_cq(%u) on %s: %s", f->srq_depth + f->sq_depth, f->dev_name,
			  verbs_err_str(ret));
		return ret;
	}
	return 0;
}

/* The UD QP, and how often its sends are signalled. */
static int setup_qp(struct pubd_fabric *f, bool quiet)
{
	int ret = verbs_create_qp(f);

	if (ret) {
		SETUP_ERR("verbs: creating a UD QP on %s: %s", f->dev_name, verbs_err_str(ret));
		return ret;
	}
	f->signal_every = f->sq_depth / 4 ? f->sq_depth / 4 : 1;
	if (f->signal_every > 64)
		f->signal_every = 64;
	return 0;
}

/* On the loop: the CQ's completion channel (armed), the async events. */
static int watch_events(struct pubd_fabric *f, bool quiet)
{
	int ret;

	ret = verbs_set_nonblock(f->comp_ch->fd);
	if (ret)
		return ret;
	ret = -ibv_req_notify_cq(f->cq, 0);
	if (ret) {
		SETUP_ERR("verbs: ibv_req_notify_cq on %s: %s", f->dev_name, verbs_err_str(ret));
		return ret;
	}
	f->cq_armed = true;
	f->comp_watch = pubd_loop_watch(f->loop, f->comp_ch->fd, EPOLLIN, verbs_on_comp, f);
	if (!f->comp_watch)
		return errno ? -errno : -ENOMEM;
	ret = verbs_hub_attach(f);
	if (ret) {
		SETUP_ERR("verbs: watching the async events of %s: %s", f->dev_name, verbs_err_str(ret));
		return ret;
	}
	return 0;
}

/* Built: usable from now on; the port check starts. */
static void setup_done(struct pubd_fabric *f, const struct ibv_port_attr *pa)
{
	f->dev_ok = true;
	f->dev_retry_logged = 0;
	f->rebuilt_at = pubd_now_ns();
	f->port_check_at = f->rebuilt_at + PORT_CHECK_NS;
	f->tx_retry_at = f->rx_retry_at = 0;
	f->tx_retry_delay = f->rx_retry_delay = 0;
	verbs_arm_retry(f); /* the port check */
	log_notice("verbs: %s on %s port %u (%s), state %s, MTU %u (active %u), SRQ %u/%u posted, low watermark "
		   "%u, send queue %u, inline %u, self-loopback block %s",
		   f->address, f->dev_name, f->port, verbs_link_layer_name(f->link_layer),
		   ibv_port_state_str(pa->state), f->mtu, f->active_mtu, f->srq_posted, f->srq_depth, f->srq_wm,
		   f->sq_depth, f->max_inline, f->block_self_lb ? "on" : "unsupported (filtering by source id)");
}

/*
 * Build the device resources, in order: the bound id, the device's limits,
 * the PD and CQ, the SRQ and its receive slab, the send slab, the QP, the
 * first receives, and the fds on the loop. quiet: failures are logged at
 * debug level (a rebuild that keeps failing says why once per period).
 * On failure everything built is released again.
 */
int verbs_dev_setup(struct pubd_fabric *f, bool quiet)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int ret;

	ret = bind_id(f, quiet);
	if (!ret)
		ret = query_device(f, quiet, &da, &pa);
	if (!ret)
		ret = choose_mtu(f, quiet);
	if (!ret)
		ret = fit_depths(f, quiet, &da);
	if (!ret)
		ret = create_pd_cq(f, quiet);
	if (!ret)
		ret = verbs_rx_setup(f, quiet);
	if (!ret)
		ret = verbs_tx_setup(f, quiet);
	if (!ret)
		ret = setup_qp(f, quiet);
	if (!ret)
		ret = verbs_rx_start(f, quiet);
	if (!ret)
		ret = watch_events(f, quiet);
	if (ret) {
		verbs_dev_teardown(f);
		return ret;
	}
	setup_done(f, &pa);
	return 0;
}

/* Lose the device resources, tell the daemon every group is down, and try
 * to build them again from the retry timer. */
void verbs_dev_lost(struct pubd_fabric *f, const char *why, bool removed)
{
	if (!f->dev_ok)
		return;
	log_warn("verbs: %s on %s: releasing the device and rebuilding", why, f->dev_name);
	/* Not usable from here on, also for joins the daemon makes from
	 * inside the group_state callbacks below. */
	f->dev_ok = false;
	for (unsigned i = 0; i < f->nmcs; i++)
		if (f->mcs[i].used) {
			f->mcs[i].retry_at = 0;
			verbs_mc_down(f, (int)i, -ENETDOWN);
		}
	verbs_dev_teardown(f);
	if (removed) {
		/* librdmacm keeps each device's ibv_context open until its
		 * device list is resynced, which only a GUID miss or
		 * rdma_get_devices() does (librdmacm/cma.c, sync_devices_list).
		 * Providers without disassociate (rxe) make the kernel's
		 * unregister wait for that close: resync now, so the context
		 * goes as soon as the last id on the device is destroyed. */
		struct ibv_context **l = rdma_get_devices(NULL);

		if (l)
			rdma_free_devices(l);
	}
	/* Resources that fail again soon after each rebuild (a fatal event
	 * or a send error that keeps coming) are rebuilt ever later, up to
	 * REBUILD_MAX_NS: never a rebuild loop at the speed of the fault. */
	uint64_t now = pubd_now_ns();

	if (f->rebuilt_at && now - f->rebuilt_at < REBUILD_STABLE_NS) {
		f->rebuild_delay = f->rebuild_delay ? f->rebuild_delay * 2 : DEV_RETRY_NS;
		if (f->rebuild_delay > REBUILD_MAX_NS)
			f->rebuild_delay = REBUILD_MAX_NS;
	} else {
		f->rebuild_delay = 0;
	}
	if (f->rebuild_delay)
		log_warn("verbs: %s: lost again %.1f s after the last rebuild: rebuilding in %.0f s", f->address,
			 (double)(now - f->rebuilt_at) / 1e9, (double)f->rebuild_delay / 1e9);
	f->dev_retry_at = now + f->rebuild_delay;
	verbs_arm_retry(f);
}

void verbs_try_rebuild(struct pubd_fabric *f)
{
	uint64_t held = 0;
	/* The first failed attempt says why in full; later ones once per
	 * FAULT_LOG_NS, with the number of attempts in between. */
	bool say = verbs_ratelog_ok(&f->rl_rebuild, &held);
	int ret = verbs_dev_setup(f, !say);

	if (ret) {
		if (say)
			log_warn("verbs: %s: device not back yet (%s; %" PRIu64
				 " more attempts since the last report); retrying every second",
				 f->address, verbs_err_str(ret), held);
		f->dev_retry_logged++;
		f->dev_retry_at = pubd_now_ns() + DEV_RETRY_NS;
		verbs_arm_retry(f);
		return;
	}
	f->rl_rebuild = (struct ratelog){0};
	f->cnt[VC_REBUILDS]++;
	f->dev_retry_at = 0;
	verbs_arm_retry(f); /* the port check and retries of the new resources */
	if (f->mtu != f->told_mtu && f->ev.mtu_changed) {
		/* Before the rejoins: the daemon cuts for the new MTU before
		 * any group comes up again and its queue is offered. */
		f->told_mtu = f->mtu;
		f->ev.mtu_changed(f->ctx, f->mtu);
	}
	/* Credits are all back with the new send queue: a daemon that was
	 * waiting for them would otherwise wait for ever. */
	if (f->tx_blocked && f->dev_ok) {
		f->tx_blocked = false;
		f->ev.writable(f->ctx);
	}
	if (f->dev_ok)
		verbs_rejoin_all(f);
}

const struct verbs_up verbs_device_up = {
	.dev_lost = verbs_dev_lost,
};
