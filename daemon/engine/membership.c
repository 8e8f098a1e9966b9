/* SPDX-License-Identifier: MIT */
/*
 * The daemon's side of the fabric: opening it, its events (writable, group
 * joined or lost, MTU changed), joining groups and receiving exactly while
 * someone listens, and the publish path into the transmit queues.
 */
#include <errno.h>
#include <string.h>

#include "engine_internal.h"
#include "log.h"
#include "wire.h"

static void on_writable(void *ctx)
{
	struct pubd *d = ctx;

	d->tx.stalled = false;
	pubd_tx_pump(d);
}

bool engine_all_groups_up(const struct pubd *d)
{
	return d->groups.up == d->groups.count;
}

/* The fabric takes the group's datagrams now, or lost the group: either
 * way the subscribers waiting for their answer get it. */
static void listen_settled(struct pubd *d, struct pubd_group *g)
{
	if (!g->listen_pending)
		return;
	g->listen_pending = false;
	pubd_ipc_group_listening(&d->ipc, g);
}

static void on_listening(void *ctx, int slot)
{
	struct pubd *d = ctx;
	struct pubd_group *g = pubd_groups_by_slot(&d->groups, slot);

	if (!g)
		return;
	log_info("group %s (%s): full member: receiving", g->name, g->cfg->address_text);
	listen_settled(d, g);
}

static void on_group_state(void *ctx, int slot, bool up, int err)
{
	struct pubd *d = ctx;
	struct pubd_group *g = pubd_groups_by_slot(&d->groups, slot);

	if (!g)
		return;
	if (up && !g->up)
		log_info("group %s (%s): joined", g->name, g->cfg->address_text);
	else if (!up && g->up)
		log_warn("group %s (%s): left the fabric: %s", g->name, g->cfg->address_text,
			 err ? strerror(-err) : "link down");
	else if (!up && err)
		log_warn("group %s (%s): join failed: %s", g->name, g->cfg->address_text, strerror(-err));
	if (up && !g->up)
		g->up_since_ns = pubd_now_ns();
	pubd_group_set_up(&d->groups, g, up);
	listen_settled(d, g);
	pubd_tx_group_state(d, g);
	if (up)
		pubd_tx_pump(d);
	if (!d->ready && engine_all_groups_up(d))
		pubd_notify_ready(d);
	pubd_notify_status(d);
}

static void on_mtu_changed(void *ctx, uint32_t mtu)
{
	struct pubd *d = ctx;

	if (mtu == d->mtu)
		return;
	pubd_tx_mtu_changed(d, mtu);
	pubd_tx_pump(d);
}

static const struct pubd_fabric_events fabric_events = {
	.rx = engine_on_rx,
	.writable = on_writable,
	.group_state = on_group_state,
	.mtu_changed = on_mtu_changed,
	.listening = on_listening,
};

/* ---- publish path ---- */
bool pubd_publish(struct pubd *d, struct pubd_client *origin, struct pubd_group *g, struct pubd_msgbuf *msg)
{
	uint64_t seq;
	int err;

	/* Before the first message of a stream, announce its start (next seq
	 * 0): a receiver that loses the first datagrams still learns the
	 * stream's baseline and counts them. */
	if (!g->raw && !g->host && g->next_seq == 0)
		pubd_tx_announce(d, g);
	seq = g->next_seq++; /* raw groups: a local count only, never on the wire */

	g->published++;
	g->published_bytes += msg->len;
	d->counters[PUBD_CTR_MSG_PUBLISHED]++;
	/* Local subscribers get it here, exactly once; the fabric's looped-back
	 * copy is discarded by source id. */
	engine_fan_out(d, g, d->source_id, seq, msg);
	if (g->host)
		return false; /* delivered, and that is all: nothing waits for the fabric */
	err = pubd_tx_enqueue(d, g, msg, seq, origin);
	if (err < 0) {
		pubd_drops_add(&g->drops, err == -EMSGSIZE ? PUB_DROP_TOO_LARGE : PUB_DROP_FABRIC_ERROR, 1);
		d->counters[PUBD_CTR_MSG_DROPPED]++;
		return false;
	}
	/* Sent from on_idle, once per loop iteration: everything published in
	 * one read of the clients goes out in a few batched calls, not one
	 * system call (or doorbell) per message. */
	return origin != NULL;
}

void pubd_publish_local(struct pubd *d, struct pubd_group *g, const uint8_t *data, size_t len)
{
	uint64_t seq = g->next_seq++; /* a local count: never on the wire */

	g->published++;
	g->published_bytes += len;
	d->counters[PUBD_CTR_MSG_PUBLISHED]++;
	engine_fan_out_borrowed(d, g, d->source_id, seq, data, len);
}

int pubd_group_join(struct pubd *d, struct pubd_group *g)
{
	/* Joined idle: receiving starts with pubd_group_listen_sync, at once
	 * under receive: always, else with the first local subscriber. */
	enum pubd_join_mode mode = g->mode & PUBD_JOIN_RECV ? g->mode | PUBD_JOIN_IDLE : g->mode;
	int err;

	if (g->host) {
		/* Nothing to join: ready at once (READY=1 and pubctl's
		 * joined column wait for every group to be up). */
		pubd_group_set_up(&d->groups, g, true);
		g->up_since_ns = pubd_now_ns();
		return 0;
	}
	err = d->fops->join(d->fabric, g->slot, (const struct sockaddr *)&g->addr, g->addrlen, mode);
	if (err < 0) {
		log_err("group %s (%s): join: %s", g->name, g->cfg->address_text, strerror(-err));
		return err;
	}
	g->listening = false;
	return pubd_group_listen_sync(d, g);
}

struct keep_ctx {
	struct pubd *d;
	uint64_t group_id;
};

/* Where each of a group's streams had got to, kept in its source's row. */
static void keep_next_seq(void *ctx, const struct pubd_reasm_stream_info *si)
{
	const struct keep_ctx *k = ctx;
	struct pubd_source_stats *s;

	if (si->group_id != k->group_id)
		return;
	s = pubd_source_map_find(&k->d->sources, si->source_id, si->group_id);
	if (s)
		s->next_seq_kept = si->next_seq;
}

int pubd_group_listen_sync(struct pubd *d, struct pubd_group *g)
{
	bool want = (g->mode & PUBD_JOIN_RECV) && (d->cfg.receive == PUBD_RECEIVE_ALWAYS || g->nsubs > 0);
	int err;

	if (g->host)
		return 0; /* nothing to receive: its subscribers get what is published here */
	if (want == g->listening)
		return want && g->listen_pending;
	err = d->fops->listen(d->fabric, g->slot, want);
	if (err < 0) {
		log_warn("group %s (%s): %s receiving: %s", g->name, g->cfg->address_text,
			 want ? "cannot start" : "cannot stop", strerror(-err));
		return err;
	}
	g->listening = want;
	g->listen_pending = want && err > 0;
	if (want) {
		/* Streams heard from now on start where we first hear them;
		 * only after the grace period is a new one counted from 0. */
		g->listen_since_ns = pubd_now_ns();
	} else {
		/* Partial messages have nobody to go to, and where the streams
		 * had got to means nothing once we listen again. The per-source
		 * counters stay for pubctl sources, with where each stream
		 * had got to. */
		pubd_reasm_foreach(d->reasm, keep_next_seq, &(struct keep_ctx){.d = d, .group_id = g->id});
		pubd_reasm_forget_group(d->reasm, g->id);
		engine_order_flush_group(d, g->id);
	}
	log_info("group %s (%s): %s receiving%s", g->name, g->cfg->address_text, want ? "started" : "stopped",
		 g->listen_pending ? " (once the fabric's full join completes)" : "");
	return g->listen_pending;
}

/* ---- lifecycle ---- */

/* The fabric fabric.type names (auto: verbs when the address sits on an RDMA
 * device, else udp, saying so). */
static const struct pubd_fabric_ops *configured_fabric(const struct pubd_config *c)
{
	char dev[64] = "";
	int probe;

	switch (c->fabric_type) {
	case PUBD_FABRIC_UDP:
		return &pubd_fabric_udp_ops;
	case PUBD_FABRIC_VERBS:
		return &pubd_fabric_verbs_ops;
	case PUBD_FABRIC_AUTO:
		break;
	}
	probe = c->fabric_address ? pubd_fabric_verbs_probe(c->fabric_address, dev, sizeof(dev)) : 0;
	if (probe == 1) {
		log_info("fabric auto: %s is on RDMA device %s; using verbs", c->fabric_address, dev);
		return &pubd_fabric_verbs_ops;
	}
	log_warn("fabric auto: %s; falling back to the udp fabric (IP multicast, no RDMA)",
		 !c->fabric_address ? "fabric.address is not set"
		 : probe < 0	    ? "cannot tell whether fabric.address is on an RDMA device"
				    : "fabric.address is not on any RDMA device");
	return &pubd_fabric_udp_ops;
}

int engine_open_fabric(struct pubd *d, const struct pubd_fabric_ops *given)
{
	const struct pubd_config *c = &d->cfg;
	int err;

	/* A fabric given by pubd_init_with (a test's) comes before fabric.type. */
	d->fops = given ? given : configured_fabric(c);
	err = d->fops->open(&d->fabric, c, d->loop, &fabric_events, d);
	if (err < 0) {
		log_err("fabric %s: cannot open: %s", d->fops->name, strerror(-err));
		return err;
	}
	d->mtu = d->fops->mtu(d->fabric);
	log_info("fabric %s: MTU %u bytes per datagram (%u of payload after pubd's %u-byte header)", d->fops->name,
		 d->mtu, d->mtu - PUBD_WIRE_HDR_LEN, PUBD_WIRE_HDR_LEN);
	/* Loss repair needs unicast (NAKs, repairs): a probe with no peer
	 * answers -EOPNOTSUPP where the fabric has none (both have it now;
	 * a test's fabric may not). */
	d->fabric_unicast = d->fops->send_to && d->fops->send_to(d->fabric, NULL, 0, NULL, 0) != -EOPNOTSUPP;
	for (size_t i = 0; i < c->ngroups && !d->fabric_unicast; i++)
		if (c->groups[i].repair.on)
			log_warn("group %s: repair is on, but the %s fabric cannot send unicast NAKs and repairs yet: "
				 "the group runs without repair",
				 c->groups[i].name, d->fops->name);
	return 0;
}
