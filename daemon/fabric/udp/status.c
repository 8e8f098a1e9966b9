/* SPDX-License-Identifier: MIT */
/*
 * The "fabric" table of `pubctl status` for udp.
 */
#include <inttypes.h>

#include "udp_internal.h"

void udp_status(const struct pubd_fabric *f, struct pub_table_builder *tb)
{
	pubd_fabric_row(tb, "fabric", "udp");
	pubd_fabric_row(tb, "interface", "%s (index %u, MTU %" PRIu32 ")", f->ifname, f->ifindex, f->if_mtu);
	pubd_fabric_row(tb, "address", "%s", f->address ? f->address : "(unset: loopback)");
	pubd_fabric_row(tb, "family", "%s", udp_fam_name(f->fams));
	pubd_fabric_row(tb, "port", "%u", f->port);
	if (f->mtu_changes)
		pubd_fabric_row(tb, "mtu",
				"%" PRIu32 " (at most %" PRIu32 "; changed with the interface %" PRIu64
				" times since start)",
				f->mtu, f->mtu_max, f->mtu_changes);
	else
		pubd_fabric_row(tb, "mtu", "%" PRIu32, f->mtu);
	pubd_fabric_row(tb, "socket_buffers", "rcv %d snd %d%s", f->rcvbuf, f->sndbuf,
			f->rcvbuf_forced && f->sndbuf_forced ? " (forced)" : "");
	pubd_fabric_row(tb, "groups_joined", "%u", f->nmembers);
	pubd_fabric_row(tb, "gso", "%s, %" PRIu64 " sends of %" PRIu64 " datagrams", f->gso_off ? "off" : "on",
			f->gso_sends, f->gso_datagrams);
	if (!f->self_filter)
		pubd_fabric_row(tb, "self_filter", "off (our own looped-back datagrams are read whole and discarded)");
	else if (f->self_filter_addrs < f->nself_addrs)
		pubd_fabric_row(tb, "self_filter",
				"on for %u of the %u addresses (our own looped-back datagrams from those are cut to "
				"nothing in the kernel, the others' read whole and discarded)",
				f->self_filter_addrs, f->nself_addrs);
	else
		pubd_fabric_row(tb, "self_filter",
				"on (our own looped-back datagrams are cut to nothing in the kernel)");
	pubd_fabric_row(tb, "self_addrs", "%u (%s; changed %" PRIu64 " times since start)", f->nself_addrs,
			f->nlwatch ? "kept current" : "as at start", f->self_addr_changes);
	pubd_fabric_counter_rows(tb, f->cnt, pubd_fabric_counter_names, 0, PUBD_FC__COUNT);
	pubd_fabric_row(tb, "rx_kernel_drops", "%" PRIu32, f->rx_kernel_drops);
}
