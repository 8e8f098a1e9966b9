/* SPDX-License-Identifier: MIT */
/*
 * What one repair group's source will do for each asker: NAKs per second
 * and repair bytes per second, per sender address of the NAKs (the
 * fabric's opaque address: udp, address and port; verbs, GID and QP).
 * Pure: the clock comes from the caller.
 *
 * A forged or broken receiver with the group's repair token (wire_ctl.h)
 * can still ask for a lot; these caps keep one asker from taking the
 * group's whole repair rate (groups.repair.rate, which caps them all) or
 * the source's CPU. The table is bounded (PUBD_REPAIR_PEERS_MAX); a new
 * asker beyond it takes the place of the one heard from least recently,
 * which starts afresh if it comes back. So an asker spreading its NAKs
 * over many ports gets at most the group's rate, never more.
 */
#ifndef PUBD_REPAIR_PEERS_H
#define PUBD_REPAIR_PEERS_H

#include <stdbool.h>
#include <stdint.h>

#include "pacer.h"

#define PUBD_REPAIR_PEERS_MAX	  64u
#define PUBD_REPAIR_PEER_ADDR_MAX 32u
/* NAKs per second one asker may send, and how many at once. A receiver
 * NAKs each gap once per nak_interval_ms, and random loss makes a gap of
 * nearly every lost datagram: a stream of 100,000 messages a second at 5%
 * loss asks 5,000 times a second before any retry. The cap bounds the
 * source's work per asker (a NAK costs a lookup and a send at most; the
 * repair bytes have their own cap, peer_rate); at 1,000/s it starved such
 * a receiver into counting most of its losses unrecovered. */
#define PUBD_REPAIR_PEER_NAKS_PER_S 20000u
#define PUBD_REPAIR_PEER_NAK_BURST  2048u

struct pubd_repair_peer {
	uint8_t addr[PUBD_REPAIR_PEER_ADDR_MAX];
	uint32_t len;
	uint64_t last_ns;
	struct pubd_pacer naks;	 /* one "byte" a NAK */
	struct pubd_pacer bytes; /* repair bytes sent because it asked */
	uint64_t cookie_ns;	 /* when it was last sent a COOKIE (0: never) */
};

struct pubd_repair_peers {
	struct pubd_repair_peer v[PUBD_REPAIR_PEERS_MAX];
	uint32_t n;
	uint64_t bytes_per_s, bytes_burst;
	uint64_t replaced; /* askers forgotten to make room */
};

void pubd_repair_peers_init(struct pubd_repair_peers *p, uint64_t bytes_per_s, uint64_t bytes_burst);
/* New byte limits (reload), for every asker known and to come. */
void pubd_repair_peers_set(struct pubd_repair_peers *p, uint64_t now_ns, uint64_t bytes_per_s, uint64_t bytes_burst);
/* The asker at addr (len bytes, at most PUBD_REPAIR_PEER_ADDR_MAX), found
 * or made; NULL for an empty or over-long address. */
struct pubd_repair_peer *pubd_repair_peers_get(struct pubd_repair_peers *p, uint64_t now_ns, const void *addr,
					       uint32_t len);
/* One NAK from peer at now_ns: false when over its NAK rate (not taken). */
bool pubd_repair_peer_nak(struct pubd_repair_peer *peer, uint64_t now_ns);
/* Repair bytes for peer: false when over its byte rate (not taken). */
bool pubd_repair_peer_bytes(struct pubd_repair_peer *peer, uint64_t now_ns, uint64_t bytes);

#endif
