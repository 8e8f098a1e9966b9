/* SPDX-License-Identifier: MIT */
/*
 * The receive path: datagrams from the fabric through reassembly (or
 * straight, on raw groups) to the local subscribers, with per-source
 * statistics.
 */
#include <errno.h>
#include <string.h>

#include "engine_internal.h"
#include "log.h"
#include "wire.h"
#include "wire_ctl.h"

/* The statistics of (source, group), within limits.max_sources: making
 * room evicts one (counted; its counts go to the map's evicted row). */
static struct pubd_source_stats *source_stats(struct pubd *d, uint64_t source, uint64_t group_id)
{
	/* The receive batch's or the timer's time: no clock read per message
	 * (a system call in guests without a vDSO clock). */
	struct pubd_source_stats *s = pubd_source_map_get(&d->sources, source, group_id, d->event_ns);

	d->counters[PUBD_CTR_SOURCES_EVICTED] = d->sources.evicted.sources;
	return s;
}

static struct pubd_msgbuf *copy_out(const uint8_t *data, size_t len)
{
	struct pubd_msgbuf *m = pubd_msgbuf_alloc(len);

	if (m)
		memcpy(m->data, data, len);
	return m;
}

/* No memory for a subscriber's copy: counted as its queue overflowing. */
static void overflow_all(struct pubd *d, struct pubd_group *g)
{
	unsigned i;

	for (i = 0; i < g->nsubs; i++)
		pubd_ipc_sub_dropped(&d->ipc, g->subs[i], PUB_DROP_SUB_OVERFLOW, 1);
}

/* A message still in the fabric's receive buffer, to g's subscribers that
 * are not on the group log (or, direct, not reading the direct log): into
 * the deliver logs of those with nothing queued (no buffer of pubd's
 * between), and copied into one buffer, once, for the rest (their queues
 * keep it after the receive buffer goes back). */
static void fan_out_queued(struct pubd *d, struct pubd_group *g, bool direct, uint64_t source, uint64_t seq,
			   const uint8_t *data, size_t len)
{
	struct pubd_msgbuf *m = NULL;
	unsigned i;

	for (i = 0; i < g->nsubs; i++) {
		if (direct ? g->subs[i]->direct_now : g->subs[i]->glog_live)
			continue;
		if (pubd_ipc_deliver_now(&d->ipc, g->subs[i], source, seq, data, len))
			continue;
		if (!m && !(m = copy_out(data, len))) {
			pubd_ipc_sub_dropped(&d->ipc, g->subs[i], PUB_DROP_SUB_OVERFLOW, 1);
			continue;
		}
		pubd_ipc_deliver(&d->ipc, g->subs[i], source, seq, m);
	}
	pubd_msgbuf_put(m);
}

/*
 * A message still in the fabric's receive buffer, to every subscriber of
 * g: written once into the group log for its readers, and to the others
 * as fan_out_queued says.
 */
void engine_fan_out_borrowed(struct pubd *d, struct pubd_group *g, uint64_t source, uint64_t seq, const uint8_t *data,
			     size_t len)
{
	bool direct = d->ipc.direct_fan_out;

	/* A direct log's message (server/direct.c): its readers have it, and
	 * the others get it in their own queues, as in engine_fan_out. */
	if (!direct)
		pubd_ipc_group_log_put(&d->ipc, g, source, seq, data, len, NULL);
	fan_out_queued(d, g, direct, source, seq, data, len);
}

/* Messages first .. first + n - 1 of source in group_id (g, or NULL: gone),
 * bytes in all, counted received: by the daemon, the group and the source,
 * whose statistics it returns. */
static inline struct pubd_source_stats *count_received(struct pubd *d, struct pubd_group *g, uint64_t source,
						       uint64_t group_id, uint64_t first, unsigned n, uint64_t bytes)
{
	struct pubd_source_stats *s = source_stats(d, source, group_id);

	if (s) {
		pubd_source_map_delivered_n(&d->sources, s, n, bytes);
		/* For pubctl sources once reassembly lets the stream go. */
		if (first + n - 1 >= s->next_seq_kept)
			s->next_seq_kept = first + n;
	}
	d->counters[PUBD_CTR_MSG_RECEIVED] += n;
	if (g) {
		g->received += n;
		g->received_bytes += bytes;
	}
	return s;
}

static void reasm_deliver(void *ctx, uint64_t source, uint64_t group_id, uint64_t seq, const uint8_t *data, size_t len,
			  struct pubd_msgbuf *owned)
{
	struct pubd *d = ctx;
	struct pubd_group *g = pubd_groups_by_id(&d->groups, group_id);
	struct pubd_source_stats *s = count_received(d, g, source, group_id, seq, 1, len);
	bool repairs = engine_repairs(d, g);

	if (repairs)
		engine_naks_delivered(d, g, s, source, seq);
	if (!g) {
		pubd_msgbuf_put(owned);
		return;
	}
	if (g->nsubs && !owned && !repairs) {
		/* (Flow control, engine_flow_delivered, runs on repair groups only.) */
		engine_fan_out_borrowed(d, g, source, seq, data, len);
	} else if (g->nsubs) {
		/* A single-datagram message still points into the receive
		 * buffer, which goes back to the fabric: copy it once here,
		 * as a repair group's order may keep it. */
		if (!owned && !(owned = copy_out(data, len))) {
			overflow_all(d, g);
			if (repairs)
				engine_order_touch(d, source, group_id);
			return;
		}
		if (!repairs || !engine_order_hold(d, g, source, seq, owned)) {
			engine_fan_out(d, g, source, seq, owned);
			engine_flow_delivered(d, g, source, seq);
		}
	} else if (repairs) {
		/* Nobody to hold it for; what its stream holds may go now. */
		engine_order_touch(d, source, group_id);
	}
	pubd_msgbuf_put(owned);
}

/*
 * Messages first .. first + n - 1 of a stream, from one batch datagram,
 * each as reasm_deliver would take it; the lookups, counts and the group
 * log's wakeups once for them all. A repair group's messages go one at a
 * time (its NAKs and its order are per message).
 */
static void reasm_deliver_run(void *ctx, uint64_t source, uint64_t group_id, uint64_t first,
			      const struct pubd_msg_view *v, unsigned n)
{
	struct pubd *d = ctx;
	struct pubd_group *g = pubd_groups_by_id(&d->groups, group_id);
	uint64_t bytes = 0;
	unsigned i;

	if (!g || engine_repairs(d, g) || d->ipc.direct_fan_out) {
		for (i = 0; i < n; i++)
			reasm_deliver(ctx, source, group_id, first + i, v[i].data, v[i].len, NULL);
		return;
	}
	for (i = 0; i < n; i++)
		bytes += v[i].len;
	count_received(d, g, source, group_id, first, n, bytes);
	if (!g->nsubs)
		return;
	pubd_ipc_group_log_put_run(&d->ipc, g, source, first, v, n);
	for (i = 0; i < g->nsubs; i++)
		if (!g->subs[i]->glog_live)
			break;
	if (i == g->nsubs)
		return; /* every subscriber reads the group log */
	for (i = 0; i < n; i++)
		fan_out_queued(d, g, false, source, first + i, v[i].data, v[i].len);
}

static void reasm_drop(void *ctx, uint64_t source, uint64_t group_id, enum pub_drop_reason reason, uint64_t count)
{
	struct pubd *d = ctx;
	struct pubd_group *g = pubd_groups_by_id(&d->groups, group_id);
	struct pubd_source_stats *s = source_stats(d, source, group_id);
	bool repairs = engine_repairs(d, g);

	/* On a repair group a lost message was asked for: not getting it back
	 * is one reason, whichever way reassembly found it missing. */
	if (repairs && (reason == PUB_DROP_SEQ_GAP || reason == PUB_DROP_REASM_TIMEOUT))
		reason = PUB_DROP_UNRECOVERED;
	if (s)
		pubd_drops_add(&s->drops, reason, count);
	if (g)
		pubd_drops_add(&g->drops, reason, count);
	else
		pubd_drops_add(&d->drops, reason, count);
	if (pub_drop_reason_kind(reason) == PUB_DROP_KIND_MSG) {
		d->counters[PUBD_CTR_MSG_DROPPED] += count;
		/* The stream's low may have moved past them: what it holds
		 * behind them may go. */
		if (repairs)
			engine_order_touch(d, source, group_id);
	} else if (reason == PUB_DROP_MALFORMED)
		d->counters[PUBD_CTR_RX_MALFORMED] += count; /* as on_rx counts the header's own failures */
}

/* A stream of a repair group waits for its NAKs (reasm's repair class). */
static bool reasm_repairs(void *ctx, uint64_t group_id)
{
	struct pubd *d = ctx;

	return engine_repairs(d, pubd_groups_by_id(&d->groups, group_id));
}

const struct pubd_reasm_ops engine_reasm_ops = {
	.deliver = reasm_deliver,
	.deliver_run = reasm_deliver_run,
	.drop = reasm_drop,
	.gap = engine_naks_gap,
	.repairs = reasm_repairs,
};

void engine_arm_reasm_timer(struct pubd *d)
{
	pubd_loop_timer_arm(d->reasm_timer, pubd_reasm_next_deadline(d->reasm));
}

static void rx_raw(struct pubd *d, struct pubd_group *g, const struct pubd_rx_dgram *dg)
{
	g->received++;
	g->received_bytes += dg->len;
	d->counters[PUBD_CTR_MSG_RECEIVED]++;
	/* Raw datagrams carry no source or sequence: source 0, our own count. */
	if (g->nsubs)
		engine_fan_out_borrowed(d, g, 0, g->raw_rx_seq, dg->data, dg->len);
	g->raw_rx_seq++;
}

/*
 * The group a well-formed datagram that arrived on group slot g's address
 * is for, or NULL having counted why nobody here takes it. Inlined: once
 * per datagram.
 */
static inline struct pubd_group *rx_group(struct pubd *d, struct pubd_group *g, const struct pubd_wire_hdr *h)
{
	if (!g) {
		/* Not sent to a group address joined here: a unicast
		 * datagram to the fabric's port or QP, or a stale mapping.
		 * Whatever its header claims, nobody here subscribed to it. */
		d->counters[PUBD_CTR_RX_UNJOINED]++;
		return NULL;
	}
	if (g->id != h->group_id) {
		/* Groups may share an address; the header's group must be
		 * one of those on the address it arrived on. */
		struct pubd_group *by_id = pubd_groups_by_id(&d->groups, h->group_id);

		if (by_id && !pubd_group_same_address(by_id, g)) {
			d->counters[PUBD_CTR_RX_UNJOINED]++;
			return NULL;
		}
		g = by_id;
	}
	if (!g || g->raw || !g->listening) {
		/* Not ours, or still in flight from before we stopped
		 * listening: nobody here takes it. */
		d->counters[PUBD_CTR_RX_FOREIGN]++;
		return NULL;
	}
	return g;
}

/*
 * The group of a REPAIR datagram that came to us alone (on no group's
 * address), or NULL: a repair group's, of one message of a stream we NAKed
 * and still wait for. Repairs go one fragment a datagram, never batched.
 */
static struct pubd_group *unicast_repair_group(struct pubd *d, const struct pubd_wire_hdr *h)
{
	struct pubd_group *g = pubd_groups_by_id(&d->groups, h->group_id);

	if (!g || !engine_repairs(d, g) || (h->flags & PUBD_WIRE_F_BATCH) ||
	    !pubd_nak_pending(&d->naks, h->source_id, h->group_id, h->msg_seq))
		return NULL;
	return g;
}

/*
 * Is this datagram from the address its source is live at? A source's
 * datagrams all leave by one socket (udp) or one QP (verbs), so they share
 * an address; anyone on the multicast can send one with the source's id.
 * A new address is taken only once the one we have has been silent a few
 * heartbeat periods (a source that moved: a rebuilt QP, a reopened
 * socket). Datagrams from elsewhere while it still speaks are a forger's:
 * taken, a sequence number far ahead would cut the real stream off (every
 * real message after it stale), and on repair groups the NAKs would go to
 * the forger or to a third party. The address is also where the source's
 * NAKs go.
 */
static bool from_live_sender(struct pubd *d, const struct pubd_wire_hdr *h, const struct pubd_rx_dgram *dg)
{
	struct pubd_source_stats *s = source_stats(d, h->source_id, h->group_id);
	uint64_t now = d->event_ns;

	if (!s || dg->from_len > sizeof(s->peer))
		return true; /* nothing to judge by: reassembly's own checks only */
	if (s->peer_len == dg->from_len && !memcmp(s->peer, dg->from, dg->from_len)) {
		s->peer_heard_ns = now;
		return true;
	}
	if (s->peer_len && engine_repair_still_heard(d, s->peer_heard_ns))
		return false;
	memcpy(s->peer, dg->from, dg->from_len);
	s->peer_len = dg->from_len;
	s->peer_heard_ns = now;
	return true;
}

/*
 * Did the stream of this heartbeat begin after g started listening? The
 * heartbeat says how long ago its source sent the stream's first datagram;
 * a heartbeat period of slack covers the heartbeat's transit and queueing,
 * so a stream begun just before we listened is never taken for one begun
 * after (which would count messages never meant for us as lost).
 */
static bool began_since_listening(const struct pubd *d, const struct pubd_group *g, uint64_t now,
				  const struct pubd_rx_dgram *dg)
{
	uint64_t age_us, since = g->up_since_ns > g->listen_since_ns ? g->up_since_ns : g->listen_since_ns;

	if (!g->up || !g->listening || !pubd_ctl_hb_age_us(dg->data, dg->len, &age_us) || age_us > now / 1000)
		return false;
	return now - age_us * 1000 > since + (uint64_t)d->cfg.heartbeat_ms * MS;
}

/*
 * The group whose stream a datagram carries, or NULL having taken it as
 * what else it is (our own looped back, a raw group's, malformed, loss
 * repair's control, a repair we did not ask for, a forger's) and counted
 * it. h, payload and plen are its header and payload once decoded. Inlined
 * into engine_on_rx, as rx_stream is: once per datagram.
 */
static inline struct pubd_group *rx_admit(struct pubd *d, const struct pubd_rx_dgram *dg, struct pubd_wire_hdr *h,
					  const uint8_t **payload, size_t *plen)
{
	struct pubd_group *g;
	bool unicast;
	int err;

	/* Our own multicast looped back: local subscribers already had
	 * it through local fan-out. The fabric knows it by the sender
	 * (QP and GID, or send port); raw groups, without a header, have
	 * nothing else to tell it by. */
	if (dg->self) {
		d->counters[PUBD_CTR_RX_SELF]++;
		return NULL;
	}
	g = pubd_groups_by_slot(&d->groups, dg->slot);
	if (g && g->raw) {
		g->rx_datagrams++;
		rx_raw(d, g, dg);
		return NULL;
	}
	err = pubd_wire_decode(dg->data, dg->len, h, payload, plen);
	if (err) {
		d->counters[PUBD_CTR_RX_MALFORMED]++;
		pubd_drops_add(g ? &g->drops : &d->drops, PUB_DROP_MALFORMED, 1);
		log_debug("malformed datagram of %u bytes: %s", dg->len, pubd_wire_strerror(err));
		return NULL;
	}
	/* The same by source id, where the fabric could not tell. */
	if (h->source_id == d->source_id) {
		d->counters[PUBD_CTR_RX_SELF]++;
		return NULL;
	}
	/* Loss repair: a NAK or GONE (unicast, on no group's address). */
	if (h->flags & PUBD_WIRE_F_CONTROL) {
		engine_repair_on_ctl(d, dg, h, *payload, *plen);
		return NULL;
	}
	/* A repair sent to us alone: its group by the header, and only
	 * what we asked for. Anything else sent to the fabric port
	 * alone is no group's data, REPAIR flag or not. */
	unicast = !g;
	if (unicast && (h->flags & PUBD_WIRE_F_REPAIR)) {
		g = unicast_repair_group(d, h);
		if (!g) {
			d->counters[PUBD_CTR_RX_UNJOINED]++;
			return NULL;
		}
	}
	g = rx_group(d, g, h);
	if (!g)
		return NULL;
	/* A repair the source sent us alone is let through from
	 * another address: a multi-homed source's unicast may leave by
	 * another interface than its multicast, and a repair can only
	 * fill a message we asked for, never move the stream on. */
	if (dg->from_len && !from_live_sender(d, h, dg) && !unicast) {
		d->counters[PUBD_CTR_RX_WRONG_SENDER]++;
		return NULL;
	}
	return g;
}

/* An admitted datagram of g's stream: its heartbeat to loss repair, and
 * its message or fragment (or batch) to reassembly. */
static inline void rx_stream(struct pubd *d, struct pubd_group *g, const struct pubd_rx_dgram *dg,
			     const struct pubd_wire_hdr *h, const uint8_t *payload, size_t plen, uint64_t now,
			     uint64_t grace)
{
	unsigned flags;

	g->rx_datagrams++;
	if (h->flags & PUBD_WIRE_F_HEARTBEAT) {
		d->counters[PUBD_CTR_RX_HEARTBEATS]++;
		if (engine_repairs(d, g))
			engine_naks_heartbeat(d, g, h->source_id, dg);
	}
	/* Publishing daemons heartbeat every group they ever sent on. A
	 * source unheard after several heartbeat periods on a joined group
	 * began publishing since: all of its stream is ours to account for,
	 * from sequence 0, even when its first datagrams were lost. */
	flags = g->up && now - g->up_since_ns > grace && now - g->listen_since_ns > grace ? PUBD_REASM_NEW_FROM_ZERO
											  : 0;
	if ((h->flags & PUBD_WIRE_F_HEARTBEAT) && began_since_listening(d, g, now, dg))
		flags |= PUBD_REASM_BEGAN_SINCE;
	pubd_reasm_kernel_drops(d->reasm, dg->kernel_drops);
	if (h->flags & PUBD_WIRE_F_BATCH) {
		/* A batch (wire.h): each of its messages as if it had come alone, in order. */
		d->counters[PUBD_CTR_RX_BATCHES]++;
		pubd_reasm_push_batch(d->reasm, now, h, payload, plen, flags);
	} else
		pubd_reasm_push_flags(d->reasm, now, h, payload, plen, flags);
}

void engine_on_rx(void *ctx, const struct pubd_rx_dgram *dgs, unsigned n)
{
	struct pubd *d = ctx;
	uint64_t now = d->event_ns = pubd_now_ns();
	uint64_t grace = NEW_STREAM_GRACE_PERIODS * (uint64_t)d->cfg.heartbeat_ms * MS;
	const uint8_t *payload;
	struct pubd_wire_hdr h;
	struct pubd_group *g;
	size_t plen;
	unsigned i;

	for (i = 0; i < n; i++) {
		const struct pubd_rx_dgram *dg = &dgs[i];

		d->counters[PUBD_CTR_RX_DATAGRAMS]++;
		d->counters[PUBD_CTR_RX_BYTES] += dg->len;
		g = rx_admit(d, dg, &h, &payload, &plen);
		if (g)
			rx_stream(d, g, dg, &h, payload, plen, now, grace);
	}
	engine_arm_reasm_timer(d);
	engine_naks_arm(d);
	if (d->holds.dirty)
		engine_order_release(d);
}
