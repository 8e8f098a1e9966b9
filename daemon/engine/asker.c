/* SPDX-License-Identifier: MIT */
/*
 * What a source sends back to the hosts that ask it things (NAKs, flow
 * control STATUSes), and whether they are who they say (wire_ctl.h).
 *
 * An asker's address cookie is a keyed hash of its fabric address with a
 * secret drawn at start: the source keeps nothing per asker. A NAK or a
 * STATUS must echo it. Without it, the address it claims gets a COOKIE (at
 * most one in COOKIE_GAP_NS), and nothing else: the repair token is on the
 * group's multicast for any host there to read, and the address a datagram
 * claims may be a third party's, which repairs would flood (a forged NAK of
 * 88 bytes made 1.68 MB), or whose name a forger would take to hold a
 * flow-controlled source back. Used by repair_src.c and flow_src.c.
 */
#include "repair_peers.h"

#include "engine_internal.h"
#include "wire.h"
#include "wire_ctl.h"

/* COOKIEs to one address: at most one this often (a receiver whose first
 * one was lost asks again at its next NAK or STATUS). */
#define COOKIE_GAP_NS (10 * MS)

bool engine_ctl_send(struct pubd *d, struct pubd_group *g, const struct pubd_rx_dgram *to, const struct pubd_ctl *c)
{
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_CONTROL, .group_id = g->id, .source_id = d->source_id};
	uint8_t hdr[PUBD_WIRE_HDR_LEN], body[PUBD_CTL_MAX_LEN];
	struct pubd_tx_dgram dg = {.hdr = hdr, .hdr_len = sizeof(hdr), .payload = body};

	dg.payload_len = (uint32_t)pubd_ctl_encode(c, body, sizeof(body));
	if (!dg.payload_len)
		return false;
	h.msg_len = dg.payload_len;
	pubd_wire_encode(&h, hdr);
	return d->fops->send_to(d->fabric, to->from, to->from_len, &dg, 1) == 1;
}

uint64_t engine_repair_cookie(const struct pubd *d, const void *addr, uint32_t len)
{
	uint64_t v = pubd_hash_bytes(&d->cookie_key, addr, len);

	return v ? v : 1;
}

/* The asker's cookie, to the address its datagram claims, at most one a
 * COOKIE_GAP_NS an address: whoever receives there gets one datagram no
 * bigger than the NAK or STATUS, and a forger that claimed it, nothing. */
static void send_cookie(struct pubd *d, struct pubd_group *g, const struct pubd_rx_dgram *to,
			struct pubd_repair_peer *peer)
{
	struct pubd_ctl c = {.type = PUBD_CTL_COOKIE,
			     .stream = d->source_id,
			     .token = g->repair_token,
			     .cookie = engine_repair_cookie(d, to->from, to->from_len)};

	if (peer->cookie_ns && d->event_ns - peer->cookie_ns < COOKIE_GAP_NS)
		return;
	peer->cookie_ns = d->event_ns;
	if (engine_ctl_send(d, g, to, &c))
		g->cookies_sent++;
}

bool engine_repair_proven(struct pubd *d, struct pubd_group *g, const struct pubd_rx_dgram *dg, uint64_t cookie)
{
	struct pubd_repair_peer *peer;

	if (dg->from_len && cookie == engine_repair_cookie(d, dg->from, dg->from_len))
		return true;
	/* The askers' table bounds the COOKIEs to each address (repair_src.c
	 * keeps it with the group's window). */
	if (g->rpeers && dg->from_len && (peer = pubd_repair_peers_get(g->rpeers, d->event_ns, dg->from, dg->from_len)))
		send_cookie(d, g, dg, peer);
	return false;
}
