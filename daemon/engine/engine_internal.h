/* SPDX-License-Identifier: MIT */
/*
 * What the engine's files share.
 */
#ifndef PUBD_ENGINE_INTERNAL_H
#define PUBD_ENGINE_INTERNAL_H

#include "daemon.h"
#include "wire_ctl.h"

#define MS (1000000ull)
/* Heartbeat periods a group must have been joined before a source heard for
 * the first time is taken to have started since (see on_rx). Assumes the
 * daemons of a fabric share fabric.heartbeat_ms, as config/pubd.yaml says. */
#define NEW_STREAM_GRACE_PERIODS 5
/* How long a stopping daemon waits for messages it accepted to reach the
 * fabric (systemd's stop timeout is far longer). */
#define STOP_DRAIN_NS (2000 * MS)

/* A message to every local subscriber of g (receive and publish paths). */
static inline void engine_fan_out(struct pubd *d, struct pubd_group *g, uint64_t source, uint64_t seq,
				  struct pubd_msgbuf *m)
{
	unsigned i;

	/* Once for every reader of its group log, then to each other
	 * subscriber. A delivery never changes g->subs: a subscriber
	 * disconnected as slow keeps its entry until the server's next flush
	 * (pubd_ipc_deliver). */
	if (d->ipc.direct_fan_out) {
		/* A direct log's message: its readers have it already. The
		 * others get it in their own queues (a group log's readers
		 * too: those of the direct log read that log as well). */
		for (i = 0; i < g->nsubs; i++)
			if (!g->subs[i]->direct_now)
				pubd_ipc_deliver(&d->ipc, g->subs[i], source, seq, m);
		return;
	}
	pubd_ipc_group_log_put(&d->ipc, g, source, seq, m->data, m->len, m);
	for (i = 0; i < g->nsubs; i++)
		if (!g->subs[i]->glog_live)
			pubd_ipc_deliver(&d->ipc, g->subs[i], source, seq, m);
}

/* rx.c */
/* A message still in someone else's buffer (the fabric's receive buffer, a
 * client's publish log) to every local subscriber of g: written straight
 * into the group log and the deliver logs of those with nothing queued,
 * and copied once into a buffer for the rest. */
void engine_fan_out_borrowed(struct pubd *d, struct pubd_group *g, uint64_t source, uint64_t seq, const uint8_t *data,
			     size_t len);
extern const struct pubd_reasm_ops engine_reasm_ops;
void engine_arm_reasm_timer(struct pubd *d);
void engine_on_rx(void *ctx, const struct pubd_rx_dgram *dgs, unsigned n);

/* repair_src.c: loss repair, the source side */
/* Keep a message whose datagrams all went out, on a group with repair on
 * (its window, if it has one). */
void engine_repair_keep_on(struct pubd *d, struct pubd_group *g, struct pubd_msgbuf *msg, uint64_t seq, uint32_t unit);
/* A control datagram (NAK or GONE) that arrived; counted and answered. */
/* asker.c: what a source sends back to the hosts that ask it things */
/* A control datagram of ours for g to the sender of to; true when it went. */
bool engine_ctl_send(struct pubd *d, struct pubd_group *g, const struct pubd_rx_dgram *to, const struct pubd_ctl *c);
/* The cookie of a NAK asker's fabric address (wire_ctl.h): non-zero. */
uint64_t engine_repair_cookie(const struct pubd *d, const void *addr, uint32_t len);
/* Does a control datagram dg for repair group g echo its sender's cookie?
 * If not, the sender is sent the cookie (at most one in 10 ms). */
bool engine_repair_proven(struct pubd *d, struct pubd_group *g, const struct pubd_rx_dgram *dg, uint64_t cookie);
void engine_repair_on_ctl(struct pubd *d, const struct pubd_rx_dgram *dg, const struct pubd_wire_hdr *h,
			  const uint8_t *body, size_t len);
/* Age every window (the heartbeat timer); open or close windows as the config says. */
void engine_repair_tick(struct pubd *d, uint64_t now);
/* Drop g's window (the group goes, or pubd stops). */
void engine_repair_free(struct pubd *d, struct pubd_group *g);
/* The repair token g's heartbeats carry; 0 while g keeps no window. */
uint64_t engine_repair_token(const struct pubd_group *g);

/* repair_rx.c: loss repair, the receiver side */
int engine_naks_init(struct pubd *d);
void engine_naks_close(struct pubd *d);
/* reasm's gap op: a range of messages went missing. */
void engine_naks_gap(void *ctx, uint64_t source, uint64_t group_id, uint64_t first, uint64_t count);
/* A message of a repair group was delivered: was it asked for? */
void engine_naks_delivered(struct pubd *d, struct pubd_group *g, struct pubd_source_stats *s, uint64_t source,
			   uint64_t seq);
/* A GONE from a source: given up if it carries the source's token. */
void engine_naks_gone(struct pubd *d, struct pubd_group *g, uint64_t source, const struct pubd_ctl *c);
/* A COOKIE from source for repair group g: our NAKs to it carry it now. */
void engine_naks_cookie(struct pubd *d, struct pubd_group *g, uint64_t source, const struct pubd_ctl *c);
/* A heartbeat of source on repair group g: learn its repair token. */
void engine_naks_heartbeat(struct pubd *d, struct pubd_group *g, uint64_t source, const struct pubd_rx_dgram *dg);
/* Partials stuck for a while, NAKed whole (the heartbeat timer). */
void engine_naks_tick(struct pubd *d, uint64_t now);
void engine_naks_arm(struct pubd *d);
/* Is g a group whose losses this daemon asks to be repaired? */
/* Was a source's NAK address or repair token, last heard at heard_ns,
 * heard lately? Then no other may replace it: it must have been silent a
 * few of our heartbeat periods (a source heartbeats each group it sends
 * on). Anyone on a group's multicast can claim a source's id. */
static inline bool engine_repair_still_heard(const struct pubd *d, uint64_t heard_ns)
{
	return d->event_ns - heard_ns < 3 * (uint64_t)d->cfg.heartbeat_ms * MS + 100 * MS;
}

static inline bool engine_repairs(const struct pubd *d, const struct pubd_group *g)
{
	return g && g->cfg && g->cfg->repair.on && !g->raw && d->fabric_unicast;
}

/* flow_src.c, flow_rx.c: receiver flow control (groups.repair.flow_control) */
/* A STATUS for g from the daemon from (its token checked here). */
void engine_flow_on_status(struct pubd *d, struct pubd_group *g, uint64_t from, const struct pubd_ctl *c,
			   const struct pubd_rx_dgram *dg);
/* A COOKIE from source came for g: report to it at once (flow_rx.c). */
void engine_flow_cookie(struct pubd *d, struct pubd_group *g, uint64_t source);
/* The heartbeat timer: tables opened or closed as the config says, silent
 * receivers forgotten (source), stuck subscribers found and keepalive
 * STATUSes sent (receiver). */
void engine_flow_tick(struct pubd *d, uint64_t now);
void engine_flow_rx_tick(struct pubd *d, uint64_t now);
/* After a loop turn: STATUSes whose limit moved enough. */
void engine_flow_turn(struct pubd *d);
/* A message of source, numbered seq, went to g's subscribers. */
void engine_flow_delivered(struct pubd *d, struct pubd_group *g, uint64_t source, uint64_t seq);
/* Drop both sides' state of g (the group goes, repair goes off, pubd stops). */
void engine_flow_free(struct pubd *d, struct pubd_group *g);
void engine_flow_rx_free(struct pubd *d, struct pubd_group *g);

/* repair_order.c: in-order delivery on repair groups */
int engine_order_init(struct pubd *d); /* -ENOMEM */
void engine_order_close(struct pubd *d);
/* Hold msg (seq of source on group) if an earlier one is outstanding; true if held. */
bool engine_order_hold(struct pubd *d, struct pubd_group *g, uint64_t source, uint64_t seq, struct pubd_msgbuf *msg);
/* Reassembly resolved a message of (source, group) some other way (dropped
 * it, or delivered it past the holding): the next release looks at the
 * stream. */
void engine_order_touch(struct pubd *d, uint64_t source, uint64_t group);
/* Release what reassembly has caught up with on the streams touched since
 * the last release, and those a full queue stopped (after each batch of
 * reassembly's work, when d->holds.dirty). */
void engine_order_release(struct pubd *d);
/* What the group's streams hold goes out now, in order but past any gap
 * (a full queue applies its policy): reassembly forgot them (the group
 * stopped receiving), or a reload turned the group's repair off. */
void engine_order_flush_group(struct pubd *d, uint64_t group);
/* Drop what is held for a group (0: every group) without delivering it. */
void engine_order_forget(struct pubd *d, uint64_t group);

/* membership.c */
int engine_open_fabric(struct pubd *d, const struct pubd_fabric_ops *given);
bool engine_all_groups_up(const struct pubd *d);

/* reload.c */
int engine_load_config(const char *path, struct pubd_config *cfg, char *errtext, size_t errcap);
void engine_reasm_config_from(const struct pubd_config *c, struct pubd_reasm_config *rc);
int engine_apply_groups(struct pubd *d, struct pubd_config *cfg);

#endif
