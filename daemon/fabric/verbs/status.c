/* SPDX-License-Identifier: MIT */
/*
 * The "fabric" table of `pubctl status` for verbs: configuration, device and
 * port state, the counters (the common ones first), and the kernel's own port
 * counters from sysfs.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_internal.h"

/* Indexed by enum vc: the entries before PUBD_FC__COUNT (the common
 * counters) are named in fabric_counters.c. */
static const char *const counter_names[VC__COUNT] = {
#define X(id, name) [VC_##id] = name,
	VERBS_COUNTERS(X)
#undef X
};

/* The kernel's own port counters, read now (never on the hot path). */
static void sysfs_counters(const struct pubd_fabric *f, struct pub_table_builder *tb, const char *sub)
{
	char dir[256], path[512], key[300], val[64];
	struct dirent **names = NULL;
	int n;

	snprintf(dir, sizeof(dir), "/sys/class/infiniband/%s/ports/%u/%s", f->dev_name, f->port, sub);
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		return;
	for (int i = 0; i < n; i++) {
		FILE *fp;

		if (names[i]->d_name[0] == '.')
			goto next;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		fp = fopen(path, "re");
		if (!fp)
			goto next;
		if (fgets(val, sizeof(val), fp)) {
			val[strcspn(val, "\n")] = 0;
			snprintf(key, sizeof(key), "%s.%s", sub, names[i]->d_name);
			pubd_fabric_row(tb, key, "%s", val);
		}
		fclose(fp);
	next:
		free(names[i]);
	}
	free(names);
}

/* The unicast reply AHs (peer_ah.c): how many now, and what became of them. */
static void peer_ah_rows(const struct pubd_fabric *f, struct pub_table_builder *tb)
{
	const struct pubd_ah_cache_stats *st = &f->peer_ahs.st;

	pubd_fabric_row(tb, "peer_ahs", "%u", pubd_ah_cache_size(&f->peer_ahs));
	pubd_fabric_row(tb, "peer_ah_created", "%" PRIu64, st->created);
	pubd_fabric_row(tb, "peer_ah_errors", "%" PRIu64, st->failed);
	pubd_fabric_row(tb, "peer_ah_evicted", "%" PRIu64, st->evicted);
	pubd_fabric_row(tb, "peer_ah_expired", "%" PRIu64, st->expired);
	pubd_fabric_row(tb, "peer_ah_held_failures", "%" PRIu64, st->held);
	pubd_fabric_row(tb, "peer_ah_paced", "%" PRIu64, st->paced);
}

void verbs_status(const struct pubd_fabric *f, struct pub_table_builder *tb)
{
	unsigned joined = 0, up = 0, attached = 0;

	for (unsigned i = 0; i < f->nmcs; i++) {
		joined += f->mcs[i].used && f->mcs[i].joined;
		up += f->mcs[i].used && f->mcs[i].up;
		attached += f->mcs[i].used && f->mcs[i].attached;
	}
	pubd_fabric_row(tb, "fabric", "verbs");
	pubd_fabric_row(tb, "address", "%s", f->address);
	pubd_fabric_row(tb, "device", "%s", f->dev_ok ? f->dev_name : "(none: waiting for the device)");
	pubd_fabric_row(tb, "port", "%u", f->port);
	pubd_fabric_row(tb, "port_state", "%s", f->port_active ? "ACTIVE" : "down");
	pubd_fabric_row(tb, "link_layer", "%s", verbs_link_layer_name(f->link_layer));
	pubd_fabric_row(tb, "mtu", "%u", f->mtu);
	pubd_fabric_row(tb, "active_mtu", "%u", f->active_mtu);
	pubd_fabric_row(tb, "mtu_limited_by_port", "%s", f->mtu_capped ? "yes" : "no");
	pubd_fabric_row(tb, "srq_depth", "%u", f->srq_depth);
	pubd_fabric_row(tb, "srq_low_watermark", "%u", f->srq_wm);
	pubd_fabric_row(tb, "srq_fill", "%u", f->srq_posted);
	pubd_fabric_row(tb, "srq_min_fill", "%u", f->srq_min_fill);
	pubd_fabric_row(tb, "send_queue_depth", "%u", f->sq_depth);
	pubd_fabric_row(tb, "send_credits", "%" PRIu64, f->dev_ok ? verbs_tx_credits(f, true) : 0);
	pubd_fabric_row(tb, "max_inline", "%u", f->max_inline);
	pubd_fabric_row(tb, "self_loopback_block", "%s", f->block_self_lb ? "yes" : "no");
	if (f->qp)
		pubd_fabric_row(tb, "qp_num", "%u", f->qp->qp_num);
	if (f->self_gid_ok) {
		char gid[INET6_ADDRSTRLEN];

		if (inet_ntop(AF_INET6, f->self_gid, gid, sizeof(gid)))
			pubd_fabric_row(tb, "gid", "%s", gid);
	}
	pubd_fabric_row(tb, "groups_joined", "%u", joined);
	pubd_fabric_row(tb, "groups_up", "%u", up);
	pubd_fabric_row(tb, "groups_attached", "%u", attached);
	pubd_fabric_counter_rows(tb, f->cnt, pubd_fabric_counter_names, 0, PUBD_FC__COUNT);
	pubd_fabric_counter_rows(tb, f->cnt, counter_names, PUBD_FC__COUNT, VC__COUNT);
	peer_ah_rows(f, tb);
	if (f->dev_ok) {
		sysfs_counters(f, tb, "counters");
		sysfs_counters(f, tb, "hw_counters");
	}
}
