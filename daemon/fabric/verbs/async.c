/* SPDX-License-Identifier: MIT */
/*
 * Device async events: port changes, SRQ limit, fatal QP/CQ/device events.
 * One hub per ibv_context reads them and routes each to the fabrics it names.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "verbs_internal.h"
#include "log.h"
#include "loop.h"

/*
 * librdmacm opens each device once per process and hands the same
 * ibv_context to every id bound to it (librdmacm/cma.c, ucma_get_device),
 * so fabrics on one device share one async fd. A hub per context reads it
 * and routes each event to the fabric that owns the SRQ, QP or CQ named,
 * and port and device events to every fabric on the context. One loop
 * thread only, like the rest of pubd.
 */
struct async_hub {
	struct ibv_context *verbs;
	struct pubd_loop_watch *watch;
	struct pubd_fabric *fabrics[8];
	unsigned n;
	struct async_hub *next;
};

/* IBV_EVENT_SRQ_LIMIT_REACHED: fewer than srq_wm buffers are posted. */
static void srq_limit_reached(struct pubd_fabric *f)
{
	uint64_t held;

	f->cnt[VC_SRQ_LIMIT_EVENTS]++;
	if (verbs_ratelog_ok(&f->rl_srq_limit, &held))
		log_info("verbs: %s SRQ fell below its low watermark %u: draining the CQ and refilling (%" PRIu64
			 " more times since the last report)",
			 f->dev_name, f->srq_wm, held);
	verbs_process_cq(f); /* consumed buffers sit in the CQ: drain reposts them */
	if (!f->dev_ok)
		return;
	verbs_rx_refill(f);
	f->cnt[VC_SRQ_REFILLS]++;
	verbs_rx_arm_limit(f);
}

static struct async_hub *hubs;

/* One device event for fabric f (already acked). */
static void handle_async(struct pubd_fabric *f, enum ibv_event_type type, int port)
{
	if (!f->dev_ok || (port >= 0 && port != f->port))
		return;
	switch (type) {
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		srq_limit_reached(f);
		break;
	case IBV_EVENT_PORT_ERR:
		f->cnt[VC_PORT_ERR]++;
		log_warn("verbs: %s port %u down: leaving the groups until it is active", f->dev_name, f->port);
		verbs_port_went_down(f);
		break;
	case IBV_EVENT_PORT_ACTIVE:
		f->cnt[VC_PORT_ACTIVE]++;
		verbs_port_came_up(f);
		break;
	case IBV_EVENT_CLIENT_REREGISTER:
		/* The SM lost its records (ibacm rejoins here too). */
		f->cnt[VC_PORT_OTHER]++;
		log_notice("verbs: %s port %u: client reregister: rejoining", f->dev_name, f->port);
		verbs_port_went_down(f);
		verbs_port_came_up(f);
		break;
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_GID_CHANGE:
		/* On IB the kernel turns these into multicast errors for
		 * the affected joins, handled there. */
		f->cnt[VC_PORT_OTHER]++;
		log_info("verbs: %s port %u: %s", f->dev_name, f->port, ibv_event_type_str(type));
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_CQ_ERR:
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_DEVICE_FATAL:
		f->cnt[VC_FATAL_EVENTS]++;
		log_err("verbs: %s: %s", f->dev_name, ibv_event_type_str(type));
		f->up->dev_lost(f, ibv_event_type_str(type), type == IBV_EVENT_DEVICE_FATAL);
		return; /* the context is gone */
	default:
		log_debug("verbs: %s: %s", f->dev_name, ibv_event_type_str(type));
		break;
	}
}

static struct async_hub *hub_of(struct ibv_context *verbs)
{
	for (struct async_hub *h = hubs; h; h = h->next)
		if (h->verbs == verbs)
			return h;
	return NULL;
}

static bool hub_has(struct ibv_context *verbs, struct pubd_fabric *f)
{
	struct async_hub *h = hub_of(verbs);

	for (unsigned i = 0; h && i < h->n; i++)
		if (h->fabrics[i] == f)
			return true;
	return false;
}

static void on_async(void *ctx, uint32_t events)
{
	struct ibv_context *verbs = ctx;
	struct async_hub *h;
	struct ibv_async_event ae;

	while ((h = hub_of(verbs)) && ibv_get_async_event(verbs, &ae) == 0) {
		struct pubd_fabric *to[8];
		enum ibv_event_type type = ae.event_type;
		unsigned n = 0;
		int port = -1;

		switch (type) {
		case IBV_EVENT_SRQ_LIMIT_REACHED:
		case IBV_EVENT_SRQ_ERR:
			for (unsigned i = 0; i < h->n; i++)
				if (h->fabrics[i]->srq == ae.element.srq)
					to[n++] = h->fabrics[i];
			break;
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_QP_LAST_WQE_REACHED:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_PATH_MIG:
		case IBV_EVENT_PATH_MIG_ERR:
			for (unsigned i = 0; i < h->n; i++)
				if (h->fabrics[i]->qp == ae.element.qp)
					to[n++] = h->fabrics[i];
			break;
		case IBV_EVENT_CQ_ERR:
			for (unsigned i = 0; i < h->n; i++)
				if (h->fabrics[i]->cq == ae.element.cq)
					to[n++] = h->fabrics[i];
			break;
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_PKEY_CHANGE:
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
		case IBV_EVENT_GID_CHANGE:
			port = ae.element.port_num;
			/* fall through */
		default:
			memcpy(to, h->fabrics, h->n * sizeof(*to));
			n = h->n;
			break;
		}
		/* Ack first: destroying the object waits for its acks
		 * (ibv_get_async_event(3)), and a handler may destroy it. */
		ibv_ack_async_event(&ae);
		for (unsigned i = 0; i < n; i++)
			if (hub_has(verbs, to[i])) /* an earlier handler may have torn it down */
				handle_async(to[i], type, port);
	}
	if (h && errno != EAGAIN && errno != EWOULDBLOCK) {
		/* Readable but failing (a disassociated device): the level-
		 * triggered fd would wake the loop for ever. Every fabric on the
		 * context rebuilds; the last one's teardown drops the hub. */
		struct pubd_fabric *to[8];
		unsigned n = h->n;
		int err = errno;

		memcpy(to, h->fabrics, n * sizeof(*to));
		log_err("verbs: reading the async events of %s: %s", ibv_get_device_name(verbs->device), strerror(err));
		for (unsigned i = 0; i < n; i++)
			if (hub_has(verbs, to[i]))
				to[i]->up->dev_lost(to[i], "async event channel error", true);
	}
}

int verbs_hub_attach(struct pubd_fabric *f)
{
	struct ibv_context *verbs = f->id->verbs;
	struct async_hub *h = hub_of(verbs);
	int ret;

	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return -ENOMEM;
		ret = verbs_set_nonblock(verbs->async_fd);
		if (!ret) {
			h->watch = pubd_loop_watch(f->loop, verbs->async_fd, EPOLLIN, on_async, verbs);
			if (!h->watch)
				ret = errno ? -errno : -ENOMEM;
		}
		if (ret) {
			free(h);
			return ret;
		}
		h->verbs = verbs;
		h->next = hubs;
		hubs = h;
	}
	if (h->n == sizeof(h->fabrics) / sizeof(h->fabrics[0]))
		return -EMFILE;
	h->fabrics[h->n++] = f;
	f->hub_attached = true;
	return 0;
}

void verbs_hub_detach(struct pubd_fabric *f)
{
	struct async_hub *h, **pp;

	if (!f->hub_attached)
		return;
	f->hub_attached = false;
	h = hub_of(f->id->verbs);
	if (!h)
		return;
	for (unsigned i = 0; i < h->n; i++)
		if (h->fabrics[i] == f) {
			h->fabrics[i] = h->fabrics[--h->n];
			break;
		}
	if (h->n)
		return;
	pubd_loop_unwatch(h->watch);
	for (pp = &hubs; *pp != h; pp = &(*pp)->next)
		;
	*pp = h->next;
	free(h);
}
