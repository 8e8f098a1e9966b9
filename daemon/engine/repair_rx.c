/* SPDX-License-Identifier: MIT */
/*
 * Loss repair, the receiver side: gaps that reassembly finds on a repair
 * group (a later message or a heartbeat showing messages missing, and
 * partial messages stuck for a while) are NAKed to their source, unicast
 * to the address its datagrams came from, on the schedule of
 * core/repair_nak.h (random back-off, repeat interval, retry limit).
 * Repairs go through reassembly like any datagram and fill the gap; what
 * is not repaired in time is counted by reassembly at its deadline, as
 * unrecovered on a repair group (rx.c). Reassembly waits long enough for
 * every retry on a daemon with repair groups (reload.c).
 *
 * A stuck partial is asked for by a fragment bitmap of what it lacks.
 * Order is kept by repair_order.c.
 *
 * A NAK echoes the source's repair token, learnt from its heartbeats on
 * the group's multicast (wire_ctl.h); until one is heard no NAK goes (the
 * gap's tries go on, and a heartbeat comes every fabric.heartbeat_ms). A
 * GONE must carry the same token, else it is forged and ignored. A NAK
 * also echoes the cookie the source gave our address: the first NAKs to a
 * source go without, and are answered by a COOKIE; that round is no try,
 * and the stream's gaps are NAKed again as soon as the cookie comes.
 */
#include <errno.h>
#include <string.h>

#include "engine_internal.h"
#include "log.h"
#include "random_key.h"
#include "wire.h"
#include "wire_ctl.h"

/* A partial message this old (and still incomplete) is asked for. */
#define STUCK_PARTIAL_NS (30 * MS)
/* Gaps waiting for repair, all streams together. */
#define MAX_GAPS 4096u
/* Stuck partials offered to the schedule a heartbeat tick (the rest at the
 * next ticks): a tick's work stays small whatever a peer sent. */
#define STUCK_OFFERS_PER_TICK (MAX_GAPS / 4)

_Static_assert(sizeof(((struct pubd_source_stats *)0)->peer) == PUBD_FABRIC_PEER_MAX, "peer fits");

static uint64_t splitmix(void *ctx)
{
	uint64_t *st = ctx, z = (*st += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool send_nak(void *ctx, const struct pubd_nak_gap *gap, uint64_t first, uint64_t count)
{
	struct pubd *d = ctx;
	struct pubd_group *g = pubd_groups_by_id(&d->groups, gap->group);
	struct pubd_source_stats *s = pubd_source_map_get(&d->sources, gap->source, gap->group, d->event_ns);
	struct pubd_ctl c = {.type = PUBD_CTL_NAK, .count = (uint32_t)count, .stream = gap->source, .first_seq = first};
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_CONTROL, .group_id = gap->group, .source_id = d->source_id};
	uint8_t hdr[PUBD_WIRE_HDR_LEN], body[PUBD_CTL_MAX_LEN], bits[PUBD_CTL_MAX_BITMAP];
	struct pubd_tx_dgram dg = {.hdr = hdr, .hdr_len = sizeof(hdr), .payload = body};

	if (!g || !s || !s->peer_len || !s->repair_token || !engine_repairs(d, g))
		return false;
	c.token = s->repair_token;
	c.cookie = s->nak_cookie;
	/* A partial message: only the fragments it lacks (as many as one NAK
	 * names; the rest at the next). Gone meanwhile: the whole message. */
	if (gap->partial && count == 1) {
		c.bitmap_len = (uint16_t)pubd_reasm_partial_missing(d->reasm, gap->source, gap->group, first,
								    &c.frag_first, bits, sizeof(bits));
		c.bitmap = bits;
	}
	dg.payload_len = (uint32_t)pubd_ctl_encode(&c, body, sizeof(body));
	if (!dg.payload_len)
		return false;
	h.msg_len = dg.payload_len;
	pubd_wire_encode(&h, hdr);
	if (d->fops->send_to(d->fabric, s->peer, s->peer_len, &dg, 1) != 1)
		return false;
	g->naks_sent++;
	s->naks_sent++;
	if (c.cookie)
		return true;
	/* Without the cookie the source answers with one, not repairs: the
	 * first round of NAKs that asks for it is no try. After that, a source
	 * that gives none (a forged one) is asked as any other, each round a
	 * try, so what a forged stream makes us send stays bounded. */
	if (!s->cookie_asked_ns)
		s->cookie_asked_ns = d->event_ns;
	return s->cookie_asked_ns != d->event_ns;
}

/* Reassembly counts what is never repaired, at its deadline: nothing here. */
static void give_up(void *ctx, uint64_t source, uint64_t group, uint64_t first, uint64_t count, bool partial)
{
	(void)ctx, (void)source, (void)group, (void)first, (void)count, (void)partial;
}

/* A group's own NAK timing, as configured (or reloaded) for it. */
static bool nak_timing(void *ctx, uint64_t group_id, struct pubd_nak_timing *t)
{
	struct pubd *d = ctx;
	struct pubd_group *g = pubd_groups_by_id(&d->groups, group_id);
	const struct pubd_repair_config *rc;

	if (!g || !g->cfg)
		return false;
	rc = &g->cfg->repair;
	t->backoff_ns = (uint64_t)rc->nak_backoff_ms * MS;
	t->interval_ns = (uint64_t)rc->nak_interval_ms * MS;
	t->retries = rc->nak_retries;
	return true;
}

/* The schedule's own timing is for gaps of a group that has gone (left
 * until pubd_nak_forget): the keys' defaults. */
static void nak_cfg(struct pubd_nak_cfg *nc)
{
	uint64_t v;

	nc->backoff_ns = pubd_config_key_default("groups.repair.nak_backoff_ms", &v) ? 60 * MS : v * MS;
	nc->interval_ns = pubd_config_key_default("groups.repair.nak_interval_ms", &v) ? 100 * MS : v * MS;
	nc->retries = pubd_config_key_default("groups.repair.nak_retries", &v) ? 8 : (uint32_t)v;
	nc->max_gaps = MAX_GAPS;
	pubd_random_key(&nc->hash_key); /* streams are hashed on ids a peer picks */
}

static void on_nak_timer(void *ctx, uint64_t now)
{
	struct pubd *d = ctx;

	d->event_ns = now;
	pubd_nak_run(&d->naks, now);
	engine_naks_arm(d);
}

int engine_naks_init(struct pubd *d)
{
	static const struct pubd_nak_ops ops = {.send = send_nak, .give_up = give_up, .timing = nak_timing};
	struct pubd_nak_cfg nc;

	nak_cfg(&nc);
	d->nak_rng = d->source_id;
	d->nak_timer = pubd_loop_timer(d->loop, on_nak_timer, d);
	if (!d->nak_timer)
		return -ENOMEM;
	return pubd_nak_init(&d->naks, &nc, &ops, d, splitmix, &d->nak_rng);
}

void engine_naks_close(struct pubd *d)
{
	pubd_nak_close(&d->naks);
	pubd_loop_timer_free(d->nak_timer);
	d->nak_timer = NULL;
}

void engine_naks_arm(struct pubd *d)
{
	if (d->nak_timer)
		pubd_loop_timer_arm(d->nak_timer, pubd_nak_next_deadline(&d->naks));
}

void engine_naks_gap(void *ctx, uint64_t source, uint64_t group_id, uint64_t first, uint64_t count)
{
	struct pubd *d = ctx;

	if (!d->naks.nodes || !engine_repairs(d, pubd_groups_by_id(&d->groups, group_id)))
		return;
	pubd_nak_gap(&d->naks, d->event_ns, source, group_id, first, count, false);
}

void engine_naks_delivered(struct pubd *d, struct pubd_group *g, struct pubd_source_stats *s, uint64_t source,
			   uint64_t seq)
{
	if (!d->naks.n || !pubd_nak_filled(&d->naks, source, g->id, seq))
		return;
	g->repaired++;
	if (s)
		s->repaired++;
}

void engine_naks_gone(struct pubd *d, struct pubd_group *g, uint64_t source, const struct pubd_ctl *c)
{
	struct pubd_source_stats *s = pubd_source_map_find(&d->sources, source, g->id);

	if (!s || !s->repair_token || c->token != s->repair_token) {
		g->gone_ignored++;
		return;
	}
	if (d->naks.nodes)
		pubd_nak_gone(&d->naks, source, g->id, c->first_seq, c->count);
}

void engine_naks_cookie(struct pubd *d, struct pubd_group *g, uint64_t source, const struct pubd_ctl *c)
{
	struct pubd_source_stats *s = pubd_source_map_find(&d->sources, source, g->id);

	/* With the source's token only: else a host that merely hears the
	 * group could make our NAKs carry a cookie the source refuses. */
	if (!s || !s->repair_token || c->token != s->repair_token) {
		g->gone_ignored++;
		return;
	}
	/* The first cookie from a source answers our first NAKs and STATUS:
	 * ask again at once. A later one (our address changed, or a forger
	 * with the token) is kept for the next round: else each forged COOKIE
	 * would send a stream's NAKs again. */
	if (s->nak_cookie) {
		s->nak_cookie = c->cookie;
		return;
	}
	s->nak_cookie = c->cookie;
	engine_flow_cookie(d, g, source);
	if (d->naks.nodes) {
		pubd_nak_due_now(&d->naks, d->event_ns, source, g->id);
		engine_naks_arm(d);
	}
}

void engine_naks_heartbeat(struct pubd *d, struct pubd_group *g, uint64_t source, const struct pubd_rx_dgram *dg)
{
	uint64_t token = pubd_ctl_hb_token(dg->data, dg->len);
	struct pubd_source_stats *s;

	if (!token || !engine_repairs(d, g))
		return;
	s = pubd_source_map_get(&d->sources, source, g->id, d->event_ns);
	if (!s)
		return;
	/* A source keeps its token while the group lives there, and draws a
	 * new one if the group is removed and added back: a new token is
	 * taken once the old one has been silent a while. Anyone on the
	 * group's multicast can send a heartbeat, and the latest winning let
	 * a forger take a live stream's token (and its NAKs) over. */
	if (s->repair_token == token || !s->repair_token || !engine_repair_still_heard(d, s->token_heard_ns)) {
		s->repair_token = token;
		s->token_heard_ns = d->event_ns;
	} else {
		d->counters[PUBD_CTR_REPAIR_TOKEN_REFUSED]++;
	}
}

static void stuck(void *ctx, uint64_t source, uint64_t group_id, uint64_t seq)
{
	struct pubd *d = ctx;

	if (engine_repairs(d, pubd_groups_by_id(&d->groups, group_id)))
		pubd_nak_gap(&d->naks, d->event_ns, source, group_id, seq, 1, true);
}

void engine_naks_tick(struct pubd *d, uint64_t now)
{
	if (!d->naks.nodes)
		return;
	if (now > STUCK_PARTIAL_NS)
		pubd_reasm_offer_stuck(d->reasm, now - STUCK_PARTIAL_NS, STUCK_OFFERS_PER_TICK, stuck, d);
	engine_naks_arm(d);
}
