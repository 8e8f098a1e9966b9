/* SPDX-License-Identifier: MIT */
/*
 * Receiver flow control, the source side (core/flow_ctl.h): on a group
 * with repair.flow_control: min, the receivers' STATUS datagrams set how
 * far the transmit queue may go (tx.c asks pubd_fc_source_allows before a
 * message's first datagram). A queue that reaches the limit leaves the
 * ready list (fc_blocked, counted in flow_waits); the transmit pump puts
 * it back once a STATUS moved the limit on, or the receiver holding it
 * back fell silent for receiver_timeout_ms and is forgotten here.
 *
 * A STATUS must echo the group's repair token (wire_ctl.h), which only
 * hosts on the group's multicast have: anyone else cannot stall the
 * source. It must echo its address's cookie too (as NAKs do, asker.c), so
 * the host it comes from is one that receives there. A host whose
 * receivers hold the source back at one message, without a break, for
 * two receiver timeouts has them forgotten, and holds nothing back for a
 * while (core/flow_ctl.h): a pubd never does that, and a host that says
 * "full" forever stalls the source for a bounded time. The table lives
 * with the repair window (the token's), so flow control needs repair on
 * and a fabric that can unicast.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "flow_ctl.h"
#include "log.h"

/* A receiver sends a STATUS at least every receiver_timeout / 4, on its
 * heartbeat timer: a source waits at least this many of its own heartbeat
 * periods before it forgets one, whatever receiver_timeout_ms says. */
#define MIN_TIMEOUT_HEARTBEATS 5

static uint64_t timeout_ns(const struct pubd *d, const struct pubd_group *g)
{
	uint64_t t = (uint64_t)g->cfg->repair.receiver_timeout_ms * MS;
	uint64_t floor = (uint64_t)MIN_TIMEOUT_HEARTBEATS * d->cfg.heartbeat_ms * MS;

	return t > floor ? t : floor;
}

/* The repair window (and with it the token) exists only where repair
 * runs (repair_src.c), so it is all flow control needs besides its key. */
static bool wanted(const struct pubd_group *g)
{
	return g->rwin && g->cfg->repair.flow_control == PUBD_FLOW_MIN;
}

/* Open, update or close g's receiver table as its config says. */
static void sync_group(struct pubd *d, struct pubd_group *g)
{
	if (!wanted(g)) {
		if (g->fcs) {
			free(g->fcs);
			g->fcs = NULL;
			log_info("group %s: flow control off", g->name);
		}
		return;
	}
	if (!g->fcs) {
		g->fcs = malloc(sizeof(*g->fcs));
		if (!g->fcs)
			return;
		pubd_fc_source_init(g->fcs, timeout_ns(d, g));
		log_info("group %s: flow control min: waits for its slowest receiver (forgotten after %llu ms silent)",
			 g->name, (unsigned long long)(timeout_ns(d, g) / MS));
		return;
	}
	g->fcs->timeout_ns = timeout_ns(d, g);
}

/* The bytes of dg's sender that name its machine (fabric.h peer_host). */
static uint32_t sender_host(const struct pubd *d, const struct pubd_rx_dgram *dg, uint8_t *out)
{
	uint32_t len;

	if (d->fops->peer_host)
		return d->fops->peer_host(dg->from, dg->from_len, out);
	len = dg->from_len < PUBD_FABRIC_HOST_MAX ? dg->from_len : PUBD_FABRIC_HOST_MAX;
	memcpy(out, dg->from, len);
	return len;
}

void engine_flow_on_status(struct pubd *d, struct pubd_group *g, uint64_t from, const struct pubd_ctl *c,
			   const struct pubd_rx_dgram *dg)
{
	uint8_t host[PUBD_FABRIC_HOST_MAX];

	sync_group(d, g);
	if (!g->fcs || c->stream != d->source_id || c->token != g->repair_token) {
		/* Flow control off here, an old source id, or not from a host
		 * that receives the group: it holds nothing back. */
		g->statuses_ignored++;
		return;
	}
	/* Not shown to receive where it says: it is sent its cookie. */
	if (!engine_repair_proven(d, g, dg, c->cookie)) {
		g->statuses_ignored++;
		return;
	}
	/* One that came after a newer one from the same receiver says
	 * nothing, nor one from a host in its penalty. */
	if (!pubd_fc_source_status(g->fcs, d->event_ns, from, c->first_seq + c->count, c->frag_first, host,
				   sender_host(d, dg, host))) {
		g->statuses_ignored++;
		return;
	}
	g->statuses_received++;
}

void engine_flow_tick(struct pubd *d, uint64_t now)
{
	struct pubd_group *g;
	unsigned i;

	/* Any host that hears a group can make these: a few lines a period. */
	if (!d->log_flow_stuck.what)
		d->log_flow_stuck = (struct pubd_log_limit){
			.what = "flow-controlled receivers not waited for", .burst = 5, .prio = LOG_WARNING};
	pubd_log_limit_flush(&d->log_flow_stuck, now);

	pubd_groups_foreach(&d->groups, g, i)
	{
		sync_group(d, g);
		if (g->fcs && pubd_fc_source_expire(g->fcs, now))
			log_info("group %s: a flow-controlled receiver fell silent; %u still heard", g->name,
				 g->fcs->n);
		if (g->fcs &&
		    pubd_fc_source_stuck(g->fcs, now, g->fc_blocked && g->txq_head,
					 g->txq_head ? g->txq_head->seq : 0) &&
		    pubd_log_limit_pass(&d->log_flow_stuck, now))
			log_warn("group %s: a host's receivers held its sending back at one message for %llu ms: "
				 "not waited for, nor that host for a while",
				 g->name, (unsigned long long)(PUBD_FC_STUCK_TIMEOUTS * g->fcs->timeout_ns / MS));
	}
	engine_flow_rx_tick(d, now);
}

void engine_flow_free(struct pubd *d, struct pubd_group *g)
{
	free(g->fcs);
	g->fcs = NULL;
	engine_flow_rx_free(d, g);
}
