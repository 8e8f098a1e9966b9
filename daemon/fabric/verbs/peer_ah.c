/* SPDX-License-Identifier: MIT */
/*
 * Address handles for unicast replies (loss repair's NAKs and repairs): one
 * per peer, built from what the peer's datagram showed (struct
 * pubd_ud_peer, filled by cq.c) and kept in a bounded cache (core/ah_cache.h).
 *
 * Not ibv_create_ah_from_wc: it refuses a datagram that came by multicast
 * (it looks the destination GID up in our GID table, and a group's is not
 * there), and NAKs answer exactly those. The reply leaves from the GID our
 * multicast leaves from (the joins' source GID), of the GID type the peer
 * sent with (RoCEv2, or IB/RoCEv1), found once per device build.
 *
 * A cached AH may be named by posted sends: evicted ones are retired (ah.c)
 * until the send queue has completed past them. A device rebuild drops the
 * whole cache before the QP and PD go (verbs_peer_ah_flush from teardown).
 */
#include <errno.h>
#include <string.h>

#include "verbs_internal.h"
#include "log.h"
#include "loop.h"
#include "random_key.h"

#define PEER_AH_MAX	     1024u		  /* peers with an AH at once */
#define PEER_AH_MAX_AGE_NS   (60ull * 1000000000) /* rebuilt after: the peer's MAC may change */
#define PEER_AH_FAIL_HOLD_NS (10ull * 1000000000) /* an unreachable peer is retried after */
#define PEER_AH_NEW_PER_SEC  64u		  /* creations may wait for ARP in the kernel: paced */
#define REPLY_HOP_LIMIT	     64

/* The index of our GID gid, of a type the peer's kind takes; -1 if none. */
static int find_sgid(struct pubd_fabric *f, const uint8_t gid[16], bool v2)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(f->id->verbs, f->port, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(f->id->verbs, f->port, (uint32_t)i, &e, 0))
			continue;
		if (memcmp(e.gid.raw, gid, 16) != 0)
			continue;
		if (v2 ? e.gid_type == IBV_GID_TYPE_ROCE_V2 : e.gid_type != IBV_GID_TYPE_ROCE_V2)
			return i;
	}
	return -1;
}

/* The GID a reply of this kind leaves from: the one our multicast carries
 * (known once a join completed), else the bound address's (RoCE). */
static int reply_sgid(struct pubd_fabric *f, enum pubd_ud_kind kind)
{
	bool v2 = kind == PUBD_UD_IPV4 || kind == PUBD_UD_UDP6;
	int *cached = v2 ? &f->reply_sgid_v2 : &f->reply_sgid_v1;
	uint8_t gid[16] = {0};

	if (*cached >= 0)
		return *cached;
	if (f->self_gid_ok) {
		memcpy(gid, f->self_gid, 16);
	} else if (f->bind_addr.ss_family == AF_INET) {
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &((const struct sockaddr_in *)&f->bind_addr)->sin_addr, 4);
	} else {
		memcpy(gid, &((const struct sockaddr_in6 *)&f->bind_addr)->sin6_addr, 16);
	}
	*cached = find_sgid(f, gid, v2);
	return *cached;
}

static void *create_ah(void *ctx, const struct pubd_ud_addr *a, int *err)
{
	struct pubd_fabric *f = ctx;
	struct ibv_ah_attr attr = {
		.dlid = a->lid,
		.sl = a->sl,
		.port_num = f->port,
		.is_global = a->kind != PUBD_UD_LID,
	};
	struct ibv_ah *ah;

	if (!f->pd) {
		*err = -ENOTCONN;
		return NULL;
	}
	if (attr.is_global) {
		int idx = reply_sgid(f, (enum pubd_ud_kind)a->kind);

		if (idx < 0) {
			*err = -EADDRNOTAVAIL;
			log_warn("verbs: no GID on %s port %u to answer a peer from (its GID type not found)",
				 f->dev_name, f->port);
			return NULL;
		}
		memcpy(attr.grh.dgid.raw, a->gid, 16);
		attr.grh.sgid_index = (uint8_t)idx;
		attr.grh.hop_limit = REPLY_HOP_LIMIT;
		attr.grh.traffic_class = a->tclass;
	}
	ah = ibv_create_ah(f->pd, &attr);
	if (!ah) {
		*err = errno ? -errno : -EIO;
		log_debug("verbs: ibv_create_ah for a peer on %s: %s", f->dev_name, verbs_err_str(*err));
	}
	return ah;
}

static void retire_ah(void *ctx, void *handle)
{
	verbs_ah_retire(ctx, handle);
}

static const struct pubd_ah_cache_ops peer_ah_ops = {.create = create_ah, .destroy = retire_ah};

int verbs_peer_ah_init(struct pubd_fabric *f)
{
	struct pubd_ah_cache_cfg cfg = {
		.cap = PEER_AH_MAX,
		.max_age_ns = PEER_AH_MAX_AGE_NS,
		.fail_hold_ns = PEER_AH_FAIL_HOLD_NS,
		.new_per_sec = PEER_AH_NEW_PER_SEC,
	};

	pubd_random_key(&cfg.hash_key);
	f->reply_sgid_v2 = f->reply_sgid_v1 = -1;
	return pubd_ah_cache_init(&f->peer_ahs, &cfg, &peer_ah_ops, f, pubd_now_ns());
}

/* After the device teardown: nothing is cached any more. */
void verbs_peer_ah_close(struct pubd_fabric *f)
{
	pubd_ah_cache_close(&f->peer_ahs);
}

/* The device goes: every AH to the retired list (destroyed with the QP),
 * and the GID indexes looked up again on the next build. */
void verbs_peer_ah_flush(struct pubd_fabric *f)
{
	pubd_ah_cache_flush(&f->peer_ahs);
	f->reply_sgid_v2 = f->reply_sgid_v1 = -1;
}

struct ibv_ah *verbs_peer_ah_get(struct pubd_fabric *f, const struct pubd_ud_addr *a, int *err)
{
	return pubd_ah_cache_get(&f->peer_ahs, a, pubd_now_ns(), err);
}
