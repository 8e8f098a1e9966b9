/* SPDX-License-Identifier: MIT */
/*
 * The 40 bytes in front of every UD receive buffer: what pubd reads from
 * them. Pure: bytes in, answers out.
 *
 * Three encodings reach us (ibv_poll_cq(3), the RoCEv2 annex):
 *   - IB and RoCEv1: a real GRH (IPVer 6), SGID at 8..23, DGID at 24..39;
 *   - RoCEv2 over IPv6: the IPv6 header, the same layout;
 *   - RoCEv2 over IPv4: the IPv4 header in bytes 20..39 (source address at
 *     32..35, destination at 36..39); bytes 0..19 are undefined (rxe zeroes
 *     them, hardware may leave them as they were).
 */
#ifndef PUBD_GRH_H
#define PUBD_GRH_H

#include <stdbool.h>
#include <stdint.h>

/* Every UD receive buffer starts with these 40 bytes (ibv_post_recv(3)). */
#define PUBD_GRH_LEN 40

/* Bytes 36..39: the IPv4 destination, or the last 4 bytes of the DGID
 * (those of an IPv4-mapped group GID ::ffff:a.b.c.d). The same place names
 * an IPv4 group in every encoding. */
#define PUBD_GRH_DST4_OFF 36
#define PUBD_GRH_DGID_OFF 24

enum pubd_grh_kind {
	PUBD_GRH_UNKNOWN,
	PUBD_GRH_IPV4, /* RoCEv2 over IPv4 */
	PUBD_GRH_GID,  /* IB/RoCEv1 GRH or RoCEv2 over IPv6: GIDs at 8 and 24 */
};

/* Which encoding the buffer holds. IPv4 is recognised by a valid header
 * (version 4, no options, correct checksum) at byte 20, since bytes 0..19 of
 * that encoding may hold anything, including a stale IPv6 version nibble. */
enum pubd_grh_kind pubd_grh_kind(const uint8_t grh[PUBD_GRH_LEN]);

/* Whether the datagram was sent from the port whose GID is `gid` (for
 * RoCEv2/IPv4, an IPv4-mapped GID whose last 4 bytes are the address). */
bool pubd_grh_from_gid(const uint8_t grh[PUBD_GRH_LEN], const uint8_t gid[16]);

#endif
