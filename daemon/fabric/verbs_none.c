/* SPDX-License-Identifier: MIT */
/*
 * The verbs fabric in a build without libibverbs/librdmacm
 * (-DPUBD_WITH_VERBS=OFF): it refuses to open and never claims an address,
 * so fabric: auto falls back to udp and fabric: verbs says why it cannot.
 */
#include <errno.h>

#include "fabric.h"
#include "log.h"

static int none_open(struct pubd_fabric **out, const struct pubd_config *cfg, struct pubd_loop *loop,
		     const struct pubd_fabric_events *ev, void *ctx)
{
	*out = NULL;
	log_err("verbs: this pubd was built without the verbs fabric (PUBD_WITH_VERBS=OFF)");
	return -EPROTONOSUPPORT;
}

static void none_close(struct pubd_fabric *f)
{
}

static int none_join(struct pubd_fabric *f, int slot, const struct sockaddr *addr, socklen_t addrlen,
		     enum pubd_join_mode mode)
{
	return -EPROTONOSUPPORT;
}

static void none_leave(struct pubd_fabric *f, int slot)
{
}

static int none_send(struct pubd_fabric *f, int slot, const struct pubd_tx_dgram *d, unsigned n)
{
	return -EPROTONOSUPPORT;
}

static uint32_t none_mtu(const struct pubd_fabric *f)
{
	return 0;
}

static void none_status(const struct pubd_fabric *f, struct pub_table_builder *tb)
{
}

static int none_poll(struct pubd_fabric *f)
{
	return 0;
}

const struct pubd_fabric_ops pubd_fabric_verbs_ops = {
	.name = "verbs",
	.open = none_open,
	.close = none_close,
	.join = none_join,
	.leave = none_leave,
	.send = none_send,
	.mtu = none_mtu,
	.status = none_status,
	.poll = none_poll,
};

int pubd_fabric_verbs_probe(const char *address, char *dev, size_t devlen)
{
	if (dev && devlen)
		dev[0] = 0;
	return 0;
}
