/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the verbs fabric's files: arming the kick and the
 * retry timer, the rate limit on repeating fault logs, and conversions for
 * log lines and the status table.
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

void verbs_kick(struct pubd_fabric *f)
{
	if (!f->kicked) {
		f->kicked = true;
		pubd_loop_timer_arm(f->kick, 0); /* a deadline in the past: next iteration */
	}
}

void verbs_arm_retry(struct pubd_fabric *f)
{
	uint64_t next = UINT64_MAX;

	if (!f->dev_ok && f->dev_retry_at)
		next = f->dev_retry_at;
	if (f->dev_ok) {
		uint64_t at[] = {f->port_check_at, f->tx_retry_at, f->rx_retry_at};

		for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++)
			if (at[i] && at[i] < next)
				next = at[i];
	}
	if (f->cm_resume_at && f->cm_resume_at < next)
		next = f->cm_resume_at;
	for (unsigned i = 0; i < f->nmcs; i++) {
		if (f->mcs[i].used && f->mcs[i].retry_at && f->mcs[i].retry_at < next)
			next = f->mcs[i].retry_at;
		if (f->mcs[i].used && f->mcs[i].hold_at && f->mcs[i].hold_at < next)
			next = f->mcs[i].hold_at; /* the join type's hold-off runs out */
	}
	pubd_loop_timer_arm(f->retry, next);
}
