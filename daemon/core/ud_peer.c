/* SPDX-License-Identifier: MIT */
#include "ud_peer.h"

#include <string.h>

#define IPV4_OFF      20
#define IPV4_TOS_OFF  21
#define IPV4_SRC_OFF  32
#define GID_NEXT_OFF  6
#define GID_SGID_OFF  8
#define NEXT_HDR_UDP  17
#define NEXT_HDR_BTH  0x1b
#define QPN_MULTICAST 0xffffffu

/* A source address a unicast datagram can have come from, and be answered at. */
static bool ipv4_unicast(const uint8_t a[4])
{
	/* 0/8 (this network), 127/8 (loopback), 224/4 (multicast), 240/4
	 * (reserved, and the broadcast address). */
	return a[0] != 0 && a[0] != 127 && a[0] < 224;
}

static bool gid_unicast(const uint8_t g[16])
{
	static const uint8_t zero[16], loop[16] = {[15] = 1};

	return g[0] != 0xff && memcmp(g, zero, 16) != 0 && memcmp(g, loop, 16) != 0;
}

static bool qpn_unicast(uint32_t qpn)
{
	/* QP0 and QP1 are the subnet management and general services QPs;
	 * 0xffffff names a multicast group, never a sender. */
	return qpn > 1 && qpn < QPN_MULTICAST;
}

static void ipv4_mapped(uint8_t gid[16], const uint8_t a[4])
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, a, 4);
}

bool pubd_ud_peer_from_grh(const uint8_t grh[PUBD_GRH_LEN], bool has_grh, uint32_t src_qp, uint16_t slid, uint8_t sl,
			   struct pubd_ud_peer *out)
{
	struct pubd_ud_addr *a = &out->addr;

	memset(out, 0, sizeof(*out));
	if (!qpn_unicast(src_qp))
		return false;
	out->qpn = src_qp;
	a->lid = slid;
	a->sl = sl;
	if (!has_grh) {
		/* InfiniBand within a subnet: the LID addresses the reply;
		 * 0 and the multicast range (0xc000 up) cannot be a sender. */
		if (slid == 0 || slid >= 0xc000)
			return false;
		a->kind = PUBD_UD_LID;
		return true;
	}
	switch (pubd_grh_kind(grh)) {
	case PUBD_GRH_IPV4:
		if (!ipv4_unicast(grh + IPV4_SRC_OFF))
			return false;
		ipv4_mapped(a->gid, grh + IPV4_SRC_OFF);
		a->tclass = grh[IPV4_TOS_OFF];
		a->kind = PUBD_UD_IPV4;
		return true;
	case PUBD_GRH_GID:
		if (grh[GID_NEXT_OFF] == NEXT_HDR_UDP)
			a->kind = PUBD_UD_UDP6;
		else if (grh[GID_NEXT_OFF] == NEXT_HDR_BTH)
			a->kind = PUBD_UD_IB;
		else
			return false;
		memcpy(a->gid, grh + GID_SGID_OFF, 16);
		if (!gid_unicast(a->gid))
			return false;
		/* IPVer 4 bits, then the traffic class's 8. */
		a->tclass = (uint8_t)((grh[0] & 0x0f) << 4 | grh[1] >> 4);
		return true;
	case PUBD_GRH_UNKNOWN:
		break;
	}
	return false;
}

bool pubd_ud_peer_parse(const void *p, uint32_t len, struct pubd_ud_peer *out)
{
	struct pubd_ud_peer v;
	const struct pubd_ud_addr *a = &v.addr;
	static const uint8_t zero[3];

	if (!p || len != sizeof(v))
		return false;
	memcpy(&v, p, sizeof(v));
	if (!qpn_unicast(v.qpn) || memcmp(a->pad, zero, sizeof(a->pad)) != 0)
		return false;
	switch (a->kind) {
	case PUBD_UD_LID:
		if (a->lid == 0 || a->lid >= 0xc000)
			return false;
		break;
	case PUBD_UD_IPV4: {
		static const uint8_t prefix[12] = {[10] = 0xff, [11] = 0xff};

		if (memcmp(a->gid, prefix, 12) != 0 || !ipv4_unicast(a->gid + 12))
			return false;
		break;
	}
	case PUBD_UD_UDP6:
	case PUBD_UD_IB:
		if (!gid_unicast(a->gid))
			return false;
		break;
	default:
		return false;
	}
	*out = v;
	return true;
}
