/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the verbs fabric's files: the rate limit on
 * repeating fault logs, and conversions for log lines and the status table.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "verbs_internal.h"
#include "loop.h"

/* True when this occurrence may be logged; *held says how many were not. */
bool verbs_ratelog_ok(struct ratelog *r, uint64_t *held)
{
	uint64_t now = pubd_now_ns();

	if (r->next_ns && now < r->next_ns) {
		r->held++;
		return false;
	}
	*held = r->held;
	r->held = 0;
	r->next_ns = now + FAULT_LOG_NS;
	return true;
}

int verbs_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

const char *verbs_err_str(int neg)
{
	return strerror(neg < 0 ? -neg : neg);
}

uint32_t verbs_mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

const char *verbs_link_layer_name(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET:
		return "Ethernet (RoCE)";
	default:
		return "unspecified";
	}
}
