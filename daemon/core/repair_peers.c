/* SPDX-License-Identifier: MIT */
/*
 * Per-asker repair caps (repair_peers.h): a small table searched linearly
 * (64 entries, one search per NAK), refilled by token buckets.
 */
#include <string.h>

#include "repair_peers.h"

void pubd_repair_peers_init(struct pubd_repair_peers *p, uint64_t bytes_per_s, uint64_t bytes_burst)
{
	memset(p, 0, sizeof(*p));
	p->bytes_per_s = bytes_per_s;
	p->bytes_burst = bytes_burst;
}

void pubd_repair_peers_set(struct pubd_repair_peers *p, uint64_t now_ns, uint64_t bytes_per_s, uint64_t bytes_burst)
{
	uint32_t i;

	if (p->bytes_per_s == bytes_per_s && p->bytes_burst == bytes_burst)
		return;
	p->bytes_per_s = bytes_per_s;
	p->bytes_burst = bytes_burst;
	for (i = 0; i < p->n; i++)
		pubd_pacer_set(&p->v[i].bytes, now_ns, bytes_per_s, bytes_burst);
}

static struct pubd_repair_peer *make_room(struct pubd_repair_peers *p)
{
	struct pubd_repair_peer *old;
	uint32_t i;

	if (p->n < PUBD_REPAIR_PEERS_MAX)
		return &p->v[p->n++];
	old = &p->v[0];
	for (i = 1; i < p->n; i++)
		if (p->v[i].last_ns < old->last_ns)
			old = &p->v[i];
	p->replaced++;
	return old;
}

struct pubd_repair_peer *pubd_repair_peers_get(struct pubd_repair_peers *p, uint64_t now_ns, const void *addr,
					       uint32_t len)
{
	struct pubd_repair_peer *peer;
	uint32_t i;

	if (!len || len > PUBD_REPAIR_PEER_ADDR_MAX)
		return NULL;
	for (i = 0; i < p->n; i++) {
		peer = &p->v[i];
		if (peer->len == len && !memcmp(peer->addr, addr, len)) {
			peer->last_ns = now_ns;
			return peer;
		}
	}
	peer = make_room(p);
	memset(peer, 0, sizeof(*peer));
	memcpy(peer->addr, addr, len);
	peer->len = len;
	peer->last_ns = now_ns;
	pubd_pacer_init(&peer->naks, now_ns, PUBD_REPAIR_PEER_NAKS_PER_S, PUBD_REPAIR_PEER_NAK_BURST);
	pubd_pacer_init(&peer->bytes, now_ns, p->bytes_per_s, p->bytes_burst);
	return peer;
}

bool pubd_repair_peer_nak(struct pubd_repair_peer *peer, uint64_t now_ns)
{
	return pubd_pacer_take(&peer->naks, now_ns, 1) == 0;
}

bool pubd_repair_peer_bytes(struct pubd_repair_peer *peer, uint64_t now_ns, uint64_t bytes)
{
	return pubd_pacer_take(&peer->bytes, now_ns, bytes) == 0;
}
