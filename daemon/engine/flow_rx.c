/* SPDX-License-Identifier: MIT */
/*
 * Receiver flow control, the receiver side (core/flow_ctl.h): on a group
 * with repair.flow_control: min, this daemon tells each source it delivers
 * from how far its subscribers can take that source's stream, by a STATUS
 * sent unicast to where the source's datagrams come from, with the token
 * of its heartbeats (as NAKs go, repair_rx.c).
 *
 * A stream's limit is one past the last message delivered from it plus the
 * room of the group's fullest subscriber queue (limits.subscriber_queue,
 * limits.subscriber_queue_bytes at the group's mean message size; with no
 * subscriber, no limit). It grows as subscribers take what waits for them
 * and falls back when one joins, and it is looked at after every loop
 * turn: a STATUS goes when it moved a quarter of subscriber_queue on or
 * back, and on the heartbeat timer at least every receiver_timeout_ms / 4
 * (so the source keeps counting this receiver). STATUSes are numbered, so
 * the source takes the latest whatever order they arrive in.
 *
 * A subscriber that takes nothing for receiver_timeout_ms while deliveries
 * wait for it is stuck: it no longer counts in the room (logged), so one
 * process that stopped reading holds the group back for that long at most;
 * after that its queue overflows as limits.slow_subscriber says, counted.
 * It counts again once it reads.
 */
#include <stdlib.h>

#include "engine_internal.h"
#include "flow_ctl.h"
#include "log.h"
#include "wire.h"
#include "wire_ctl.h"

/* Streams (sources) one group reports on; a new one beyond this takes the
 * place of the one heard from least recently. */
#define FC_RX_STREAMS 64u
/* A stream not heard from for this many receiver timeouts is forgotten. */
#define FC_RX_FORGET_TIMEOUTS 10u

struct fc_stream {
	uint64_t source;
	uint64_t next;	   /* one past the last message delivered from it */
	uint64_t sent;	   /* the limit its last STATUS said; 0: none yet */
	uint32_t serial;   /* that STATUS's number (wire_ctl.h) */
	uint64_t sent_ns;  /* when */
	uint64_t heard_ns; /* its last delivery */
};

struct pubd_fc_rx {
	struct fc_stream v[FC_RX_STREAMS];
	uint32_t n;
};

static bool flow_on(const struct pubd *d, const struct pubd_group *g)
{
	return engine_repairs(d, g) && g->cfg->repair.flow_control == PUBD_FLOW_MIN;
}

static uint64_t rx_timeout_ns(const struct pubd_group *g)
{
	return (uint64_t)g->cfg->repair.receiver_timeout_ms * MS;
}

static struct fc_stream *stream_get(struct pubd *d, struct pubd_group *g, uint64_t source)
{
	struct pubd_fc_rx *rx = g->fcrx;
	uint32_t i, oldest = 0;

	if (!rx) {
		rx = g->fcrx = calloc(1, sizeof(*rx));
		if (!rx)
			return NULL;
	}
	for (i = 0; i < rx->n; i++) {
		if (rx->v[i].source == source)
			return &rx->v[i];
		if (rx->v[i].heard_ns < rx->v[oldest].heard_ns)
			oldest = i;
	}
	if (rx->n == FC_RX_STREAMS) {
		/* Full: the least recently heard goes (its source stops hearing
		 * from us and forgets us after its receiver timeout). */
		rx->v[oldest] = (struct fc_stream){.source = source};
		return &rx->v[oldest];
	}
	d->fc_streams++;
	rx->v[rx->n] = (struct fc_stream){.source = source};
	return &rx->v[rx->n++];
}

void engine_flow_delivered(struct pubd *d, struct pubd_group *g, uint64_t source, uint64_t seq)
{
	struct fc_stream *st;

	if (!flow_on(d, g) || !(st = stream_get(d, g, source)))
		return;
	if (seq >= st->next)
		st->next = seq + 1;
	st->heard_ns = d->event_ns;
}

/* The room of g's fullest subscriber queue that is not stuck, in messages
 * (UINT32_MAX with none: nothing here to hold a source back for). */
static uint32_t group_room(const struct pubd *d, const struct pubd_group *g)
{
	uint64_t room = UINT32_MAX, r, avg = g->received ? g->received_bytes / g->received : 1;
	struct pubd_sub_queue q;
	unsigned i;

	for (i = 0; i < g->nsubs; i++) {
		if (g->subs[i]->fc_stuck)
			continue;
		pubd_ipc_sub_queue(g->subs[i], &q);
		if (q.closing)
			continue;
		r = pubd_fc_sub_room(q.msgs, q.bytes, d->cfg.subscriber_queue, d->cfg.subscriber_queue_bytes, avg);
		if (r < room)
			room = r;
	}
	return (uint32_t)room;
}

/* A STATUS for st: its subscribers can take window messages after st->next. */
static void send_status(struct pubd *d, struct pubd_group *g, struct fc_stream *st, uint32_t window, uint64_t now)
{
	const struct pubd_source_stats *s = pubd_source_map_find(&d->sources, st->source, g->id);
	struct pubd_ctl c = {.type = PUBD_CTL_STATUS, .stream = st->source, .first_seq = st->next, .count = window};
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_CONTROL, .group_id = g->id, .source_id = d->source_id};
	uint8_t hdr[PUBD_WIRE_HDR_LEN], body[PUBD_CTL_MAX_LEN];
	struct pubd_tx_dgram dg = {.hdr = hdr, .hdr_len = sizeof(hdr), .payload = body};

	/* Its token comes with its heartbeats: none yet, no STATUS. */
	if (!s || !s->peer_len || !s->repair_token)
		return;
	c.token = s->repair_token;
	c.cookie = s->nak_cookie; /* none yet: the source answers with it (engine_flow_cookie) */
	c.frag_first = st->serial + 1;
	dg.payload_len = (uint32_t)pubd_ctl_encode(&c, body, sizeof(body));
	if (!dg.payload_len)
		return;
	h.msg_len = dg.payload_len;
	pubd_wire_encode(&h, hdr);
	if (d->fops->send_to(d->fabric, s->peer, s->peer_len, &dg, 1) != 1)
		return;
	g->statuses_sent++;
	st->serial = c.frag_first;
	st->sent = st->next + window;
	st->sent_ns = now;
}

/* STATUS for the streams of g whose limit moved enough (or, keepalive, at
 * all and none went for a quarter of the receiver timeout). */
static void group_report(struct pubd *d, struct pubd_group *g, uint64_t now, bool tick)
{
	struct pubd_fc_rx *rx = g->fcrx;
	uint32_t room = group_room(d, g), window, i;
	uint64_t quarter = d->cfg.subscriber_queue / 4;
	bool keepalive;

	for (i = 0; i < rx->n; i++) {
		struct fc_stream *st = &rx->v[i];

		/* A (forged) stream near the top of the sequence space: the
		 * range must not wrap. */
		window = st->next > UINT64_MAX - room ? (uint32_t)(UINT64_MAX - st->next) : room;
		keepalive = tick && now - st->sent_ns >= rx_timeout_ns(g) / 4;
		if (pubd_fc_should_send(st->next + window, st->sent, quarter, keepalive))
			send_status(d, g, st, window, now);
	}
}

void engine_flow_cookie(struct pubd *d, struct pubd_group *g, uint64_t source)
{
	struct pubd_fc_rx *rx = g->fcrx;
	uint32_t i;

	if (!rx)
		return;
	/* What was sent without the cookie was not taken: the next turn's
	 * report sends it again. */
	for (i = 0; i < rx->n; i++)
		if (rx->v[i].source == source)
			rx->v[i].sent = 0;
}

void engine_flow_turn(struct pubd *d)
{
	struct pubd_group *g;
	unsigned i;

	if (!d->fc_streams)
		return;
	pubd_groups_foreach(&d->groups, g, i)
	{
		if (g->fcrx && g->fcrx->n && flow_on(d, g))
			group_report(d, g, d->event_ns, false);
	}
}

/* Which subscribers of g are stuck: deliveries waiting, none taken for
 * the receiver timeout. */
static void mark_stuck(struct pubd_group *g, uint64_t now)
{
	struct pubd_client_info info;
	struct pubd_sub_queue q;
	struct pubd_sub *s;
	unsigned i;

	for (i = 0; i < g->nsubs; i++) {
		s = g->subs[i];
		pubd_ipc_sub_queue(s, &q);
		if (!s->fc_idle_since_ns || q.taken != s->fc_taken || !q.msgs) {
			s->fc_taken = q.taken;
			s->fc_idle_since_ns = now;
			s->fc_stuck = false;
			continue;
		}
		if (s->fc_stuck || now - s->fc_idle_since_ns <= rx_timeout_ns(g))
			continue;
		s->fc_stuck = true;
		pubd_ipc_client_info(s->client, &info);
		log_notice("group %s: client %u (pid %d) took nothing for %llu ms with %u deliveries waiting: "
			   "it no longer holds the group's sources back (flow control); its queue overflows as "
			   "limits.slow_subscriber says",
			   g->name, info.id, (int)info.pid, (unsigned long long)((now - s->fc_idle_since_ns) / MS),
			   q.msgs);
	}
}

/* Streams not heard from for FC_RX_FORGET_TIMEOUTS receiver timeouts go. */
static void forget_silent(struct pubd *d, struct pubd_group *g, uint64_t now)
{
	struct pubd_fc_rx *rx = g->fcrx;
	uint32_t i = 0;

	while (i < rx->n) {
		if (now > rx->v[i].heard_ns && now - rx->v[i].heard_ns > FC_RX_FORGET_TIMEOUTS * rx_timeout_ns(g)) {
			rx->v[i] = rx->v[--rx->n];
			d->fc_streams--;
		} else {
			i++;
		}
	}
}

void engine_flow_rx_tick(struct pubd *d, uint64_t now)
{
	struct pubd_group *g;
	unsigned i;

	pubd_groups_foreach(&d->groups, g, i)
	{
		if (!g->fcrx)
			continue;
		if (!flow_on(d, g)) {
			engine_flow_rx_free(d, g);
			continue;
		}
		mark_stuck(g, now);
		forget_silent(d, g, now);
		group_report(d, g, now, true);
	}
}

void engine_flow_rx_free(struct pubd *d, struct pubd_group *g)
{
	if (!g->fcrx)
		return;
	d->fc_streams -= g->fcrx->n;
	free(g->fcrx);
	g->fcrx = NULL;
}
