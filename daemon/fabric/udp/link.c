/* SPDX-License-Identifier: MIT */
/*
 * The interface's MTU, kept current.
 *
 * An interface's MTU can go down while pubd runs (an operator, a VPN, a
 * jumbo-frame change rolled back). Every datagram cut for the old MTU then
 * fails with EMSGSIZE, and pubd, still cutting for it, dropped every message
 * as mtu_exceeded until it was restarted. So the MTU is read again when the
 * kernel announces a change of the interface (RTM_NEWLINK, on the netlink
 * socket selfaddr.c keeps) and when a send fails with EMSGSIZE (the
 * announcement may not have been read yet); the engine then cuts what is
 * queued for the new one (fabric_events.mtu_changed, engine/tx.c). It
 * follows the interface back up, never past the MTU chosen at open: the
 * receive ring's buffers are that size (rx.c), and fabric.mtu is an upper
 * bound the operator chose.
 */
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "log.h"
#include "udp_internal.h"

uint32_t udp_overhead(const struct pubd_fabric *f)
{
	return (f->fams & FAM_V6) ? UDP6_OVERHEAD : UDP4_OVERHEAD;
}

uint32_t udp_payload_max(const struct pubd_fabric *f)
{
	uint32_t overhead = udp_overhead(f), max = f->if_mtu > overhead ? f->if_mtu - overhead : 0;

	return max > UDP_MAX_PAYLOAD ? UDP_MAX_PAYLOAD : max;
}

bool udp_link_refresh(struct pubd_fabric *f)
{
	struct ifreq ifr;
	uint32_t mtu;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", f->ifname);
	if (ioctl(f->sfd, SIOCGIFMTU, &ifr) < 0 || ifr.ifr_mtu <= 0)
		return false; /* the interface went away: the sends say so */
	if ((uint32_t)ifr.ifr_mtu == f->if_mtu)
		return false;
	f->if_mtu = (uint32_t)ifr.ifr_mtu;
	mtu = udp_payload_max(f);
	if (mtu > f->mtu_max)
		mtu = f->mtu_max;
	if (mtu < PUBD_FABRIC_MIN_MTU) {
		log_warn("fabric udp: interface %s has MTU %" PRIu32 " now, too small for pubd datagrams: "
			 "sends fail (fabric_error) until it is raised",
			 f->ifname, f->if_mtu);
		return false;
	}
	if (mtu == f->mtu)
		return false;
	log_notice("fabric udp: interface %s has MTU %" PRIu32 " now: datagrams of at most %" PRIu32 " bytes",
		   f->ifname, f->if_mtu, mtu);
	f->mtu = mtu;
	f->mtu_changes++;
	return true;
}

void udp_link_changed(struct pubd_fabric *f)
{
	if (udp_link_refresh(f) && f->ev && f->ev->mtu_changed)
		f->ev->mtu_changed(f->ctx, f->mtu);
}
