/* SPDX-License-Identifier: MIT */
/*
 * Who sent a UD datagram, as a reply to it needs it: the sender's GID (from
 * the 40 GRH bytes in front of the payload), its QP number and, for
 * InfiniBand, its LID and service level. The verbs fabric hands this up as
 * a received datagram's `from` (fabric.h, PUBD_FABRIC_PEER_MAX) and takes it
 * back in send_to, where it builds (and caches) an address handle from it.
 * Pure: bytes in, answers out.
 *
 * The layout is fixed and has no padding of unknown content, so two
 * datagrams from one sender give byte-identical peers (the daemon compares
 * them with memcmp).
 */
#ifndef PUBD_UD_PEER_H
#define PUBD_UD_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "grh.h"

/* How the sender's datagram reached us, which says what the reply needs. */
enum pubd_ud_kind {
	PUBD_UD_NONE = 0, /* not a valid peer */
	PUBD_UD_LID = 1,  /* InfiniBand without a GRH: the LID alone */
	PUBD_UD_IPV4 = 2, /* RoCEv2 over IPv4: the GID is ::ffff:a.b.c.d */
	PUBD_UD_UDP6 = 3, /* RoCEv2 over IPv6: the IPv6 header's source */
	PUBD_UD_IB = 4,	  /* an IB or RoCEv1 GRH (next header: BTH) */
};

struct pubd_ud_addr {
	uint8_t gid[16]; /* the sender's GID (dgid of a reply) */
	uint16_t lid;	 /* the sender's LID (InfiniBand; 0 on RoCE) */
	uint8_t sl;	 /* service level */
	uint8_t tclass;	 /* traffic class the sender used; the reply uses it too */
	uint8_t kind;	 /* enum pubd_ud_kind */
	uint8_t pad[3];	 /* zero */
};

struct pubd_ud_peer {
	struct pubd_ud_addr addr; /* what an address handle is built from */
	uint32_t qpn;		  /* the sender's QP number (24 bits) */
};

_Static_assert(sizeof(struct pubd_ud_addr) == 24, "no hidden padding");
_Static_assert(sizeof(struct pubd_ud_peer) == 28, "fits PUBD_FABRIC_PEER_MAX (32)");

/*
 * The peer that sent a datagram: grh is the 40-byte area in front of the
 * payload, has_grh whether the completion said one arrived (IBV_WC_GRH),
 * src_qp, slid and sl the completion's fields. false when no reply could be
 * addressed from it: an unknown encoding, or a source that cannot be a
 * unicast sender (multicast, unspecified, loopback, broadcast).
 */
bool pubd_ud_peer_from_grh(const uint8_t grh[PUBD_GRH_LEN], bool has_grh, uint32_t src_qp, uint16_t slid, uint8_t sl,
			   struct pubd_ud_peer *out);

/*
 * Whether len bytes at p are a peer this module could have made (send_to
 * takes opaque bytes from the daemon). Copies it to *out when so.
 */
bool pubd_ud_peer_parse(const void *p, uint32_t len, struct pubd_ud_peer *out);

#endif
