/* SPDX-License-Identifier: MIT */
/*
 * The verbs fabric's entry points: open and close, the ops table, and the
 * probe that tells whether an address sits on an RDMA device (fabric.type:
 * auto). The rest of the ops live with their concern (see verbs_internal.h).
 */
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "verbs_internal.h"
#include "config.h"
#include "log.h"
#include "loop.h"

/*
 * fabric.address: an IP literal (v4 or v6, "%scope" allowed) or an
 * interface name, whose first IPv4 address (else first IPv6) is used.
 */
static int parse_address(const char *text, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST, .ai_family = AF_UNSPEC}, *ai = NULL;
	struct ifaddrs *ifa = NULL, *i;
	int ret = -ENOENT;

	memset(ss, 0, sizeof(*ss));
	if (!text || !*text)
		return -EINVAL;
	if (getaddrinfo(text, NULL, &hints, &ai) == 0) {
		memcpy(ss, ai->ai_addr, ai->ai_addrlen);
		freeaddrinfo(ai);
		return 0;
	}
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (int fam = 0; fam < 2 && ret; fam++)
		for (i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || strcmp(i->ifa_name, text))
				continue;
			if (i->ifa_addr->sa_family != (fam ? AF_INET6 : AF_INET))
				continue;
			memcpy(ss, i->ifa_addr, fam ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
			ret = 0;
			break;
		}
	freeifaddrs(ifa);
	return ret;
}

static void verbs_close(struct pubd_fabric *f)
{
	if (!f)
		return;
	verbs_dev_teardown(f);
	verbs_peer_ah_close(f);
	if (f->retry)
		pubd_loop_timer_free(f->retry);
	if (f->kick)
		pubd_loop_timer_free(f->kick);
	if (f->cm_watch)
		pubd_loop_unwatch(f->cm_watch);
	if (f->cm_ch)
		rdma_destroy_event_channel(f->cm_ch);
	free(f->dead);
	free(f->mcs);
	free(f->slots);
	free(f);
}

static int verbs_open(struct pubd_fabric **out, const struct pubd_config *cfg, struct pubd_loop *loop,
		      const struct pubd_fabric_events *ev, void *ctx)
{
	struct pubd_fabric *f;
	int ret;

	*out = NULL;
	if (!cfg->fabric_address || !*cfg->fabric_address) {
		log_err("verbs: fabric.address is not set: it selects the RDMA device and port");
		return -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->loop = loop;
	f->up = &verbs_device_up;
	f->ev = *ev;
	f->ctx = ctx;
	f->last_rx_mc = -1;
	f->sendonly_ok = true;
	f->join_hold_ns = (uint64_t)cfg->sendonly_hold_ms * 1000000;
	snprintf(f->address, sizeof(f->address), "%s", cfg->fabric_address);
	/* The config carries every size, parsed or defaulted by its key table
	 * (daemon/core/config.c); fabric.mtu 0 is auto: the port's active MTU. */
	f->cfg_mtu = cfg->mtu;
	f->srq_depth = cfg->srq_depth;
	f->srq_wm = cfg->srq_low_watermark;
	f->sq_depth = cfg->send_queue_depth;
	/* Busy polling polls anyway, and arms after every drain. */
	pubd_linger_init(&f->linger, cfg->busy_poll ? 0 : (uint64_t)pubd_config_linger_us(cfg) * 1000);

	ret = parse_address(f->address, &f->bind_addr);
	if (ret) {
		log_err("verbs: fabric.address %s is neither an IP address nor an interface with one", f->address);
		goto fail;
	}
	f->cm_ch = rdma_create_event_channel();
	if (!f->cm_ch) {
		ret = -errno;
		char found[512];

		verbs_devices_found(found, sizeof(found));
		log_err("verbs: fabric.address %s: no RDMA device to bind it to (rdma_create_event_channel: %s; is "
			"rdma_ucm loaded?); RDMA devices found: %s",
			f->address, verbs_err_str(ret), found);
		goto fail;
	}
	ret = verbs_set_nonblock(f->cm_ch->fd);
	if (ret)
		goto fail;
	ret = verbs_peer_ah_init(f);
	if (ret)
		goto fail;
	f->cm_watch = pubd_loop_watch(loop, f->cm_ch->fd, EPOLLIN, verbs_on_cm, f);
	f->kick = pubd_loop_timer(loop, verbs_on_kick, f);
	f->retry = pubd_loop_timer(loop, verbs_on_retry, f);
	if (!f->cm_watch || !f->kick || !f->retry) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = verbs_dev_setup(f, false);
	if (ret)
		goto fail;
	f->opened = true;
	f->told_mtu = f->mtu;
	*out = f;
	return 0;
fail:
	verbs_close(f);
	return ret;
}

static uint32_t verbs_mtu(const struct pubd_fabric *f)
{
	return f->mtu;
}

const struct pubd_fabric_ops pubd_fabric_verbs_ops = {
	.name = "verbs",
	.open = verbs_open,
	.close = verbs_close,
	.join = verbs_join,
	.leave = verbs_leave,
	.listen = verbs_listen,
	.send = verbs_send,
	.send_to = verbs_send_to,
	.peer_host = verbs_peer_host,
	.mtu = verbs_mtu,
	.status = verbs_status,
	.poll = verbs_poll,
	.linger = verbs_linger,
	.join_state = verbs_join_state,
};

int pubd_fabric_verbs_probe(const char *address, char *dev, size_t devlen)
{
	struct sockaddr_storage ss;
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	int ret;

	if (dev && devlen)
		dev[0] = 0;
	ret = parse_address(address, &ss);
	if (ret)
		return ret == -ENOENT ? -EADDRNOTAVAIL : ret;
	ch = rdma_create_event_channel();
	if (!ch) {
		ret = -errno;
		/* No rdma_cm device node or no RDMA device at all: not on one. */
		if (ret == -ENODEV || ret == -ENOENT || ret == -ENOSYS || ret == -ENXIO)
			ret = 0;
		goto out;
	}
	ret = rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) ? -errno : 0;
	if (ret) {
		id = NULL;
		if (ret == -ENODEV)
			ret = 0;
		goto out;
	}
	/* Binding resolves the address to the device and port that carry it;
	 * an address on a plain NIC binds with no device (id->verbs NULL). */
	ret = rdma_bind_addr(id, (struct sockaddr *)&ss) ? -errno : 0;
	if (ret) {
		if (ret == -ENODEV)
			ret = 0;
		goto out;
	}
	ret = id->verbs != NULL;
	if (ret && dev && devlen)
		snprintf(dev, devlen, "%s", ibv_get_device_name(id->verbs->device));
out:
	if (id)
		rdma_destroy_id(id);
	if (ch)
		rdma_destroy_event_channel(ch);
	return ret;
}
