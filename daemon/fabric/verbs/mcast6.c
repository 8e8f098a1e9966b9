/* SPDX-License-Identifier: MIT */
/*
 * IPv6 groups on RoCE, joined without rdma_cm. The kernel's rdma_cm refuses
 * an IPv6 group on a RoCE v2 port (cma_iboe_join_multicast answers ENOTSUPP,
 * seen as errno 524 on Linux 6.1), although the wire needs nothing it
 * lacks: a RoCE v2 datagram to an IPv6 group is an IPv6/UDP packet to that
 * address, sent from one of the port's IPv6 GIDs. So pubd does for such a
 * group what rdma_cm does for an IPv4 one:
 *  - the address handle: global, DGID the group, SGID the port's RoCE v2 GID
 *    of the fabric's IPv6 address (else its first global IPv6 GID, else a
 *    link-local one), sent to QPN 0xffffff with Q_Key RDMA_UDP_QKEY;
 *  - a full member also listens: the QP attached with the group as MGID
 *    (verbs_mc_sync_attach), and an MLD join of the group on the GID's
 *    netdev (an unbound IPv6 socket with IPV6_JOIN_GROUP), so the IP layer
 *    hands the group's packets to the RoCE v2 UDP port, as rdma_cm's IGMP
 *    join does for an IPv4 group;
 *  - a send-only member has the address handle only.
 * Done when the calls return (the caller, verbs_mc_join, attaches the QP
 * and reports group_state(up) from the kick timer, never from inside join()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "verbs_internal.h"
#include "log.h"
#include "loop.h"

#define MC_QPN	     0xffffffu
#define MC_HOP_LIMIT 64 /* what rdma_cm gives a RoCE v2 group (IPV6_DEFAULT_HOPLIMIT) */

bool verbs_mc6_manual(const struct pubd_fabric *f, const struct vmc *m)
{
	return m->addr.ss_family == AF_INET6 && f->link_layer == IBV_LINK_LAYER_ETHERNET;
}

/* How well a GID entry suits as the source of IPv6 datagrams: 0 not at all. */
static int gid_rank(const struct pubd_fabric *f, const struct ibv_gid_entry *e)
{
	static const uint8_t zero[16], v4mapped[12] = {[10] = 0xff, [11] = 0xff};
	const uint8_t *g = e->gid.raw;

	if (e->gid_type != IBV_GID_TYPE_ROCE_V2 || !memcmp(g, zero, 16) || !memcmp(g, v4mapped, 12))
		return 0;
	if (f->bind_addr.ss_family == AF_INET6 &&
	    !memcmp(g, &((const struct sockaddr_in6 *)&f->bind_addr)->sin6_addr, 16))
		return 3;
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80 ? 1 : 2; /* fe80::/10 last */
}

static int find_sgid(struct pubd_fabric *f, struct ibv_gid_entry *best)
{
	struct ibv_port_attr pa;
	int best_rank = 0;

	if (ibv_query_port(f->id->verbs, f->port, &pa))
		return -errno;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		int r;

		if (ibv_query_gid_ex(f->id->verbs, f->port, (uint32_t)i, &e, 0))
			continue; /* an empty entry */
		r = gid_rank(f, &e);
		if (r > best_rank) {
			best_rank = r;
			*best = e;
		}
	}
	return best_rank ? 0 : -EADDRNOTAVAIL;
}

/* The MLD membership that makes the IP layer take the group's packets. */
static int mld_join(struct vmc *m, unsigned ifindex)
{
	struct ipv6_mreq mr = {.ipv6mr_multiaddr = ((struct sockaddr_in6 *)&m->addr)->sin6_addr,
			       .ipv6mr_interface = ifindex};
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr, sizeof(mr)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	m->mld_fd = fd;
	m->mld = true;
	return 0;
}

int verbs_mc6_join(struct pubd_fabric *f, int idx)
{
	struct vmc *m = &f->mcs[idx];
	struct ibv_gid_entry sgid;
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = f->port};
	struct ibv_ah *ah;
	char src[INET6_ADDRSTRLEN];
	int ret = find_sgid(f, &sgid);

	if (ret) {
		log_warn("verbs: %s: port %u of %s has no RoCE v2 GID of an IPv6 address to send from (give the "
			 "netdev an IPv6 address); retrying",
			 m->name, f->port, f->dev_name);
		goto fail;
	}
	memcpy(aa.grh.dgid.raw, &((struct sockaddr_in6 *)&m->addr)->sin6_addr, 16);
	aa.grh.sgid_index = (uint8_t)sgid.gid_index;
	aa.grh.hop_limit = MC_HOP_LIMIT;
	ah = ibv_create_ah(f->pd, &aa);
	if (!ah) {
		ret = -errno;
		log_warn("verbs: %s: ibv_create_ah: %s; retrying", m->name, verbs_err_str(ret));
		goto fail;
	}
	if (m->want_recv) {
		ret = mld_join(m, sgid.ndev_ifindex);
		if (ret) {
			ibv_destroy_ah(ah);
			log_warn("verbs: %s: MLD join on ifindex %u: %s; retrying", m->name, sgid.ndev_ifindex,
				 verbs_err_str(ret));
			goto fail;
		}
	}
	verbs_ah_retire(f, m->ah);
	m->ah = ah;
	m->qpn = MC_QPN;
	m->qkey = RDMA_UDP_QKEY;
	m->mlid = 0;
	memcpy(m->mgid, aa.grh.dgid.raw, 16);
	memcpy(&m->dst4, m->mgid + 12, 4);
	m->join_flags = m->want_recv ? RDMA_MC_JOIN_FLAG_FULLMEMBER : RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	m->joined = m->up = true;
	m->pending = false;
	m->up_at = pubd_now_ns();
	f->cnt[VC_JOINS]++;
	log_info("verbs: joined %s on %s as %s without rdma_cm (it refuses IPv6 groups on RoCE v2), from %s "
		 "(GID index %u)",
		 m->name, f->dev_name, m->want_recv ? "full member" : "send-only member",
		 inet_ntop(AF_INET6, sgid.gid.raw, src, sizeof(src)) ? src : "?", sgid.gid_index);
	return 0;
fail:
	return ret;
}

void verbs_mc6_leave(struct pubd_fabric *f, struct vmc *m)
{
	if (m->attached && f->qp && ibv_detach_mcast(f->qp, (const union ibv_gid *)m->mgid, m->mlid) == 0)
		f->cnt[VC_DETACHES]++;
	if (m->mld)
		close(m->mld_fd); /* drops the membership */
	m->mld = false;
	m->joined = false;
	m->pending = false;
	m->attached = false;
}
