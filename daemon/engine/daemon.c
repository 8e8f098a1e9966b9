/* SPDX-License-Identifier: MIT */
/*
 * The daemon: wires the config, the fabric, reassembly, groups and the IPC
 * server to one event loop, and owns the receive and publish paths.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "proto.h"
#include "daemon.h"
#include "log.h"
#include "wire.h"

#define MS (1000000ull)
/* Heartbeat periods a group must have been joined before a source heard for
 * the first time is taken to have started since (see on_rx). Assumes the
 * daemons of a fabric share fabric.heartbeat_ms, as config/pubd.yaml says. */
#define NEW_STREAM_GRACE_PERIODS 5
/* How long a stopping daemon waits for messages it accepted to reach the
 * fabric (systemd's stop timeout is far longer). */
#define STOP_DRAIN_NS (2000 * MS)

/* ---- receive path ---- */

static void fan_out(struct pubd *d, struct pubd_group *g, uint64_t source, uint64_t seq, struct pubd_msgbuf *m)
{
	unsigned i;

	/* A delivery never changes g->subs: a subscriber disconnected as slow
	 * keeps its entry until the server's next flush (pubd_ipc_deliver). */
	for (i = 0; i < g->nsubs; i++)
		pubd_ipc_deliver(&d->ipc, g->subs[i], source, seq, m);
}

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

static void reasm_deliver(void *ctx, uint64_t source, uint64_t group_id, uint64_t seq, const uint8_t *data, size_t len,
			  struct pubd_msgbuf *owned)
{
	struct pubd *d = ctx;
	struct pubd_group *g = pubd_groups_by_id(&d->groups, group_id);
	struct pubd_source_stats *s = source_stats(d, source, group_id);

	if (s)
		pubd_source_map_delivered(&d->sources, s, len);
	d->counters[PUBD_CTR_MSG_RECEIVED]++;
	if (!g) {
		pubd_msgbuf_put(owned);
		return;
	}
	g->received++;
	g->received_bytes += len;
	if (g->nsubs) {
		/* A single-datagram message still points into the receive
		 * buffer, which goes back to the fabric: copy it once here. */
		if (!owned) {
			owned = pubd_msgbuf_alloc(len);
			if (!owned) {
				unsigned i;

				for (i = 0; i < g->nsubs; i++) {
					pubd_drops_add(&g->subs[i]->drops, PUB_DROP_SUB_OVERFLOW, 1);
					pubd_drops_add(&g->sub_drops, PUB_DROP_SUB_OVERFLOW, 1);
				}
				return;
			}
			memcpy(owned->data, data, len);
		}
		fan_out(d, g, source, seq, owned);
	}
	pubd_msgbuf_put(owned);
}

static void reasm_drop(void *ctx, uint64_t source, uint64_t group_id, enum pub_drop_reason reason, uint64_t count)
{
	struct pubd *d = ctx;
	struct pubd_group *g = pubd_groups_by_id(&d->groups, group_id);
	struct pubd_source_stats *s = source_stats(d, source, group_id);

	if (s)
		pubd_drops_add(&s->drops, reason, count);
	if (g)
		pubd_drops_add(&g->drops, reason, count);
	else
		pubd_drops_add(&d->drops, reason, count);
	if (pub_drop_reason_kind(reason) == PUB_DROP_KIND_MSG)
		d->counters[PUBD_CTR_MSG_DROPPED] += count;
	else if (reason == PUB_DROP_MALFORMED)
		d->counters[PUBD_CTR_RX_MALFORMED] += count; /* as on_rx counts the header's own failures */
}

static const struct pubd_reasm_ops reasm_ops = {
	.deliver = reasm_deliver,
	.drop = reasm_drop,
};

static void arm_reasm_timer(struct pubd *d)
{
	pubd_loop_timer_arm(d->reasm_timer, pubd_reasm_next_deadline(d->reasm));
}

static void rx_raw(struct pubd *d, struct pubd_group *g, const struct pubd_rx_dgram *dg)
{
	struct pubd_msgbuf *m;

	g->received++;
	g->received_bytes += dg->len;
	d->counters[PUBD_CTR_MSG_RECEIVED]++;
	if (!g->nsubs) {
		g->raw_rx_seq++;
		return;
	}
	m = pubd_msgbuf_alloc(dg->len);
	if (!m)
		return;
	memcpy(m->data, dg->data, dg->len);
	/* Raw datagrams carry no source or sequence: source 0, our own count. */
	fan_out(d, g, 0, g->raw_rx_seq++, m);
	pubd_msgbuf_put(m);
}

static void on_rx(void *ctx, const struct pubd_rx_dgram *dgs, unsigned n)
{
	struct pubd *d = ctx;
	uint64_t now = d->event_ns = pubd_now_ns();
	uint64_t grace = NEW_STREAM_GRACE_PERIODS * (uint64_t)d->cfg.heartbeat_ms * MS;
	const uint8_t *payload;
	struct pubd_wire_hdr h;
	struct pubd_group *g;
	size_t plen;
	unsigned i;
	int err;

	for (i = 0; i < n; i++) {
		const struct pubd_rx_dgram *dg = &dgs[i];

		d->counters[PUBD_CTR_RX_DATAGRAMS]++;
		d->counters[PUBD_CTR_RX_BYTES] += dg->len;
		/* Our own multicast looped back: local subscribers already had
		 * it through local fan-out. The fabric knows it by the sender
		 * (QP and GID, or send port); raw groups, without a header, have
		 * nothing else to tell it by. */
		if (dg->self) {
			d->counters[PUBD_CTR_RX_SELF]++;
			continue;
		}
		g = pubd_groups_by_slot(&d->groups, dg->slot);
		if (g && g->raw) {
			g->rx_datagrams++;
			rx_raw(d, g, dg);
			continue;
		}
		err = pubd_wire_decode(dg->data, dg->len, &h, &payload, &plen);
		if (err) {
			d->counters[PUBD_CTR_RX_MALFORMED]++;
			pubd_drops_add(g ? &g->drops : &d->drops, PUB_DROP_MALFORMED, 1);
			log_debug("malformed datagram of %u bytes: %s", dg->len, pubd_wire_strerror(err));
			continue;
		}
		/* The same by source id, where the fabric could not tell. */
		if (h.source_id == d->source_id) {
			d->counters[PUBD_CTR_RX_SELF]++;
			continue;
		}
		if (!g) {
			/* Not sent to a group address joined here: a unicast
			 * datagram to the fabric's port or QP, or a stale mapping.
			 * Whatever its header claims, nobody here subscribed to it. */
			d->counters[PUBD_CTR_RX_UNJOINED]++;
			continue;
		}
		if (g->id != h.group_id) {
			/* Groups may share an address; the header's group must be
			 * one of those on the address it arrived on. */
			struct pubd_group *by_id = pubd_groups_by_id(&d->groups, h.group_id);

			if (by_id && !pubd_group_same_address(by_id, g)) {
				d->counters[PUBD_CTR_RX_UNJOINED]++;
				continue;
			}
			g = by_id;
		}
		if (!g || g->raw || !g->listening) {
			/* Not ours, or still in flight from before we stopped
			 * listening: nobody here takes it. */
			d->counters[PUBD_CTR_RX_FOREIGN]++;
			continue;
		}
		g->rx_datagrams++;
		if (h.flags & PUBD_WIRE_F_HEARTBEAT)
			d->counters[PUBD_CTR_RX_HEARTBEATS]++;
		/* Publishing daemons heartbeat every group they ever sent on. A
		 * source unheard after several heartbeat periods on a joined group
		 * began publishing since: all of its stream is ours to account for,
		 * from sequence 0, even when its first datagrams were lost. */
		pubd_reasm_push_flags(d->reasm, now, &h, payload, plen,
				      g->up && now - g->up_since_ns > grace && now - g->listen_since_ns > grace
					      ? PUBD_REASM_NEW_FROM_ZERO
					      : 0);
	}
	arm_reasm_timer(d);
}

static void on_writable(void *ctx)
{
	struct pubd *d = ctx;

	d->tx.stalled = false;
	pubd_tx_pump(d);
}

static bool all_groups_up(const struct pubd *d)
{
	struct pubd_group *g;
	unsigned i;

	pubd_groups_foreach(&d->groups, g, i)
	{
		if (!g->up)
			return false;
	}
	return true;
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
	g->up = up;
	pubd_tx_group_state(d, g);
	if (up)
		pubd_tx_pump(d);
	if (!d->ready && all_groups_up(d))
		pubd_notify_ready(d);
	pubd_notify_status(d);
}

static void on_mtu_changed(void *ctx, uint32_t mtu)
{
	struct pubd *d = ctx;
	uint64_t dropped;

	if (mtu == d->mtu)
		return;
	log_warn("fabric %s: MTU changed from %u to %u bytes per datagram; messages are cut for %u from now on",
		 d->fops->name, d->mtu, mtu, mtu);
	d->mtu = mtu;
	pubd_ipc_set_fabric(&d->ipc, d->mtu, d->source_id, d->fops->name);
	dropped = pubd_tx_mtu_changed(d);
	if (dropped)
		log_warn("fabric %s: %llu queued messages no longer fit the MTU and were dropped (fabric_error, or "
			 "mtu_exceeded on raw groups)",
			 d->fops->name, (unsigned long long)dropped);
	pubd_tx_pump(d);
}

static const struct pubd_fabric_events fabric_events = {
	.rx = on_rx,
	.writable = on_writable,
	.group_state = on_group_state,
	.mtu_changed = on_mtu_changed,
};

/* ---- publish path ---- */

bool pubd_publish(struct pubd *d, struct pubd_client *origin, struct pubd_group *g, struct pubd_msgbuf *msg)
{
	uint64_t seq;
	int err;

	/* Before the first message of a stream, announce its start (next seq
	 * 0): a receiver that loses the first datagrams still learns the
	 * stream's baseline and counts them. */
	if (!g->raw && g->next_seq == 0)
		pubd_tx_announce(d, g);
	seq = g->next_seq++; /* raw groups: a local count only, never on the wire */

	g->published++;
	g->published_bytes += msg->len;
	d->counters[PUBD_CTR_MSG_PUBLISHED]++;
	/* Local subscribers get it here, exactly once; the fabric's looped-back
	 * copy is discarded by source id. */
	fan_out(d, g, d->source_id, seq, msg);
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

int pubd_group_join(struct pubd *d, struct pubd_group *g)
{
	/* Joined idle: receiving starts with pubd_group_listen_sync, at once
	 * under receive: always, else with the first local subscriber. */
	enum pubd_join_mode mode = g->mode & PUBD_JOIN_RECV ? g->mode | PUBD_JOIN_IDLE : g->mode;
	int err = d->fops->join(d->fabric, g->slot, (const struct sockaddr *)&g->addr, g->addrlen, mode);

	if (err < 0) {
		log_err("group %s (%s): join: %s", g->name, g->cfg->address_text, strerror(-err));
		return err;
	}
	g->listening = false;
	return pubd_group_listen_sync(d, g);
}

int pubd_group_listen_sync(struct pubd *d, struct pubd_group *g)
{
	bool want = (g->mode & PUBD_JOIN_RECV) && (d->cfg.receive == PUBD_RECEIVE_ALWAYS || g->nsubs > 0);
	int err;

	if (want == g->listening)
		return 0;
	err = d->fops->listen(d->fabric, g->slot, want);
	if (err < 0) {
		log_warn("group %s (%s): %s receiving: %s", g->name, g->cfg->address_text,
			 want ? "cannot start" : "cannot stop", strerror(-err));
		return err;
	}
	g->listening = want;
	if (want) {
		/* Streams heard from now on start where we first hear them;
		 * only after the grace period is a new one counted from 0. */
		g->listen_since_ns = pubd_now_ns();
	} else {
		/* Partial messages have nobody to go to, and where the streams
		 * had got to means nothing once we listen again. The per-source
		 * counters stay for pubctl sources. */
		pubd_reasm_forget_group(d->reasm, g->id);
	}
	log_info("group %s (%s): %s receiving", g->name, g->cfg->address_text, want ? "started" : "stopped");
	return 0;
}

/* ---- timers and signals ---- */

static void on_reasm_timer(void *ctx, uint64_t now)
{
	struct pubd *d = ctx;

	d->event_ns = now;
	pubd_reasm_expire(d->reasm, now);
	arm_reasm_timer(d);
}

static void on_heartbeat_timer(void *ctx, uint64_t now)
{
	struct pubd *d = ctx;

	pubd_tx_heartbeat(d);
	pubd_loop_timer_arm(d->heartbeat_timer, now + (uint64_t)d->cfg.heartbeat_ms * MS);
}

static void on_status_timer(void *ctx, uint64_t now)
{
	struct pubd *d = ctx;

	pubd_notify_status(d);
	pubd_ipc_tick(&d->ipc, now);
	pubd_loop_timer_arm(d->status_timer, now + 1000 * MS);
}

static void on_watchdog_timer(void *ctx, uint64_t now)
{
	struct pubd *d = ctx;

	pubd_notify_watchdog(d);
	pubd_loop_timer_arm(d->watchdog_timer, now + d->watchdog_usec * 1000 / 2);
}

static void stop_loop(struct pubd *d)
{
	d->stopped = true;
	pubd_loop_stop(d->loop);
}

static void on_signal(void *ctx, int signo)
{
	struct pubd *d = ctx;

	switch (signo) {
	case SIGHUP:
		pubd_reload(d, NULL, 0);
		break;
	case SIGTERM:
	case SIGINT:
		if (d->stopping) {
			log_notice("%s again: stopping now", strsignal(signo));
			stop_loop(d);
			break;
		}
		log_notice("%s: stopping", strsignal(signo));
		d->stopping = true;
		/* Clients are told and closed first, so nothing more comes
		 * in; what they published and pubd accepted then gets a short
		 * while to reach the fabric (the loop stops once it has, see
		 * on_idle), and what is left after that is counted. */
		pubd_ipc_shutdown(&d->ipc);
		pubd_tx_pump(d);
		if (!d->tx.queued_msgs) {
			stop_loop(d);
			break;
		}
		log_info("stopping: %u accepted messages still going to the fabric; waiting up to %llu ms",
			 d->tx.queued_msgs, STOP_DRAIN_NS / MS);
		pubd_loop_timer_arm(d->stop_timer, pubd_now_ns() + STOP_DRAIN_NS);
		break;
	}
}

static void on_stop_timer(void *ctx, uint64_t now)
{
	(void)now;
	stop_loop(ctx);
}

static int on_idle(void *ctx)
{
	struct pubd *d = ctx;
	/* Local subscribers first: a send to the fabric can cost more than
	 * the local hop (Soft-RoCE runs the whole send inside the post), and
	 * the local delivery need not wait for it. */
	int work = pubd_ipc_flush_all(&d->ipc) + (int)pubd_tx_pump(d);

	if (d->stopping && !d->tx.queued_msgs && !d->stopped)
		stop_loop(d); /* everything accepted went out */

	if (d->cfg.busy_poll && d->fops->poll)
		return work + d->fops->poll(d->fabric);
	if (d->fops->linger)
		work += d->fops->linger(d->fabric, work > 0);
	return work;
}

/* ---- config ---- */

static void reasm_config_from(const struct pubd_config *c, struct pubd_reasm_config *rc)
{
	pubd_reasm_config_defaults(rc);
	rc->budget_bytes = c->reassembly_budget;
	rc->timeout_ns = (uint64_t)c->reassembly_timeout_ms * MS;
	rc->max_message_size = c->max_message_size;
	rc->max_inflight_per_source = c->reassembly_inflight;
}

static int load_config(const char *path, struct pubd_config *cfg, char *errtext, size_t errcap)
{
	struct pubd_config_errors errs = {0};
	char line[1024];
	size_t i, used = 0;
	int err;

	err = pubd_config_load(cfg, path, &pubd_nss_resolver, &errs);
	if (err == 0)
		return 0;
	for (i = 0; i < errs.n; i++) {
		pubd_config_error_format(&errs, i, line, sizeof(line));
		log_err("%s", line);
		if (errtext && used + 2 < errcap)
			used += (size_t)snprintf(errtext + used, errcap - used, "%s%s", used ? "\n" : "", line);
	}
	if (!errs.n) {
		log_err("%s: %s", path, strerror(-err));
		if (errtext)
			snprintf(errtext, errcap, "%s: %s", path, strerror(-err));
	}
	pubd_config_errors_free(&errs);
	return err;
}

static bool same_address(const struct pubd_group_config *a, const struct pubd_group *g)
{
	return a->address_len == g->addrlen && memcmp(&a->address, &g->addr, g->addrlen) == 0 && a->raw == g->raw &&
	       pubd_group_join_mode(a) == g->mode;
}

static void group_destroy(struct pubd *d, struct pubd_group *g)
{
	pubd_ipc_group_removed(&d->ipc, g);
	pubd_tx_group_flush(d, g);
	d->fops->leave(d->fabric, g->slot);
	pubd_reasm_forget_group(d->reasm, g->id);
	pubd_source_map_forget_group(&d->sources, g->id);
	/* Its drops outlive it in the daemon scope, so the drops table keeps
	 * adding up to the daemon's totals (dropped, rx_malformed). */
	pubd_drops_merge(&d->drops, &g->drops);
	pubd_drops_merge(&d->drops, &g->sub_drops);
	pubd_groups_remove(&d->groups, g);
}

static int apply_groups(struct pubd *d, struct pubd_config *cfg)
{
	const struct pubd_group_config *gc;
	struct pubd_group *g;
	unsigned i;
	size_t k;
	int err = 0;

	/* Removed, or changed in a way that needs a new join. */
	pubd_groups_foreach(&d->groups, g, i)
	{
		gc = pubd_config_group(cfg, g->name, g->name_len);
		if (gc && same_address(gc, g)) {
			/* New ACLs take effect at once, for live clients too. */
			g->cfg = gc;
			pubd_ipc_acl_changed(&d->ipc, g);
			continue;
		}
		log_notice("group %s: %s", g->name, gc ? "address or mode changed, rejoining" : "removed");
		group_destroy(d, g);
	}
	for (k = 0; k < cfg->ngroups; k++) {
		gc = &cfg->groups[k];
		if (pubd_groups_by_name(&d->groups, gc->name, strlen(gc->name)))
			continue;
		g = pubd_groups_add(&d->groups, gc);
		if (!g)
			return -ENOMEM;
		log_info("group %s: %s%s", g->name, gc->address_text, g->raw ? " (raw)" : "");
		if (pubd_group_join(d, g) < 0)
			err = -EIO;
	}
	return err;
}

int pubd_reload(struct pubd *d, char *errtext, size_t errcap)
{
	struct pubd_config cfg;
	struct pubd_reasm_config rc;
	int err;

	pubd_notify_reloading(d);
	log_notice("reloading %s", d->config_path);
	err = load_config(d->config_path, &cfg, errtext, errcap);
	if (err < 0) {
		log_err("reload rejected; keeping the running configuration");
		d->counters[PUBD_CTR_RELOAD_FAILURES]++;
		pubd_notify_ready(d);
		return err;
	}
	if (cfg.fabric_type != d->cfg.fabric_type ||
	    (cfg.fabric_address && d->cfg.fabric_address && strcmp(cfg.fabric_address, d->cfg.fabric_address)) ||
	    cfg.udp_port != d->cfg.udp_port || cfg.mtu != d->cfg.mtu || cfg.srq_depth != d->cfg.srq_depth ||
	    cfg.srq_low_watermark != d->cfg.srq_low_watermark || cfg.send_queue_depth != d->cfg.send_queue_depth ||
	    cfg.rx_linger_us != d->cfg.rx_linger_us)
		log_warn("fabric settings changed; they take effect when pubd restarts");
	if (strcmp(cfg.socket_path, d->cfg.socket_path))
		log_warn("daemon.socket changed; it takes effect when pubd restarts");
	/* Groups point into the config they were made from: swap, then fix. */
	err = apply_groups(d, &cfg);
	{
		struct pubd_config old = d->cfg;

		d->cfg = cfg;
		d->sources.max = cfg.max_sources;
		pubd_config_free(&old);
	}
	pubd_log_set_level(d->cfg.log_level);
	{
		struct pubd_group *g;
		unsigned i;

		/* fabric.receive may have changed. */
		pubd_groups_foreach(&d->groups, g, i) pubd_group_listen_sync(d, g);
	}
	reasm_config_from(&d->cfg, &rc);
	pubd_reasm_set_config(d->reasm, &rc);
	d->counters[PUBD_CTR_RELOADS]++;
	log_notice("reload applied: %zu groups", d->cfg.ngroups);
	pubd_notify_ready(d);
	pubd_notify_status(d);
	if (err < 0 && errtext)
		snprintf(errtext, errcap, "reload applied, but some groups failed to join (see the log)");
	return 0;
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

static int open_fabric(struct pubd *d, const struct pubd_fabric_ops *given)
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
	return 0;
}

/* ---- what the server asks of the engine ---- */

static bool srv_publish(void *ctx, struct pubd_client *origin, struct pubd_group *g, struct pubd_msgbuf *msg)
{
	return pubd_publish(ctx, origin, g, msg);
}

static int srv_subscribers_changed(void *ctx, struct pubd_group *g)
{
	return pubd_group_listen_sync(ctx, g);
}

static void srv_client_closed(void *ctx, struct pubd_client *c, uint32_t tx_pending)
{
	(void)tx_pending;
	pubd_tx_forget_client(ctx, c);
}

static int srv_query(void *ctx, struct pub_table_builder *b, uint32_t req_id, uint8_t kind, const char *arg,
		     size_t arglen, char *err, size_t errcap)
{
	return pubd_query(ctx, b, req_id, kind, arg, arglen, err, errcap);
}

static int srv_reload(void *ctx, char *err, size_t errcap)
{
	return pubd_reload(ctx, err, errcap);
}

static const struct pubd_ipc_ops server_ops = {
	.publish = srv_publish,
	.subscribers_changed = srv_subscribers_changed,
	.client_closed = srv_client_closed,
	.query = srv_query,
	.reload = srv_reload,
};

static int server_init(struct pubd *d)
{
	const struct pubd_ipc_env env = {
		.loop = d->loop,
		.cfg = &d->cfg,
		.groups = &d->groups,
		.counters = d->counters,
		.drops = &d->drops,
		.ops = &server_ops,
		.ctx = d,
	};
	int err = pubd_ipc_init(&d->ipc, &env);

	pubd_ipc_set_fabric(&d->ipc, d->mtu, d->source_id, d->fops->name);
	return err;
}

int pubd_init(struct pubd *d, const char *config_path)
{
	return pubd_init_with(d, config_path, NULL);
}

int pubd_init_with(struct pubd *d, const char *config_path, const struct pubd_init_opts *opts)
{
	static const int signals[] = {SIGTERM, SIGINT, SIGHUP};
	struct pubd_reasm_config rc;
	uint64_t now;
	int err;

	memset(d, 0, sizeof(*d));
	d->ipc.listen_fd = -1;
	d->ipc.reserve_fd = -1;
	d->config_path = strdup(config_path);
	if (!d->config_path)
		return -ENOMEM;
	err = load_config(config_path, &d->cfg, NULL, 0);
	if (err < 0) {
		pubd_config_defaults(&d->cfg); /* so pubd_close frees nothing twice */
		return err;
	}
	pubd_log_set_level(d->cfg.log_level);
	d->sources.max = d->cfg.max_sources;
	if (getrandom(&d->source_id, sizeof(d->source_id), 0) != sizeof(d->source_id))
		d->source_id = (uint64_t)getpid() << 32 ^ pubd_now_ns();
	d->started_ns = pubd_now_ns();
	log_notice("pubd %s starting: config %s, source id %016llx", PUBD_VERSION, config_path,
		   (unsigned long long)d->source_id);

	d->loop = pubd_loop_create();
	if (!d->loop)
		return -ENOMEM;
	err = pubd_loop_signals(d->loop, signals, 3, on_signal, d);
	if (err < 0)
		return err;
	reasm_config_from(&d->cfg, &rc);
	d->reasm = pubd_reasm_create(&rc, &reasm_ops, d);
	d->reasm_timer = pubd_loop_timer(d->loop, on_reasm_timer, d);
	d->heartbeat_timer = pubd_loop_timer(d->loop, on_heartbeat_timer, d);
	d->status_timer = pubd_loop_timer(d->loop, on_status_timer, d);
	d->stop_timer = pubd_loop_timer(d->loop, on_stop_timer, d);
	d->watchdog_timer = pubd_loop_timer(d->loop, on_watchdog_timer, d);
	if (!d->reasm || !d->reasm_timer || !d->heartbeat_timer || !d->status_timer || !d->watchdog_timer ||
	    !d->stop_timer)
		return -ENOMEM;
	pubd_loop_set_idle(d->loop, on_idle, d);
	pubd_notify_init(d);

	err = open_fabric(d, opts ? opts->fabric : NULL);
	if (err < 0)
		return err;
	err = server_init(d);
	if (err < 0)
		return err;
	err = apply_groups(d, &d->cfg);
	if (err < 0)
		return err;

	now = pubd_now_ns();
	pubd_loop_timer_arm(d->heartbeat_timer, now + (uint64_t)d->cfg.heartbeat_ms * MS);
	pubd_loop_timer_arm(d->status_timer, now + 1000 * MS);
	if (d->watchdog_usec)
		pubd_loop_timer_arm(d->watchdog_timer, now + d->watchdog_usec * 1000 / 2);
	if (!d->ready && all_groups_up(d))
		pubd_notify_ready(d);
	return 0;
}

int pubd_run(struct pubd *d)
{
	int err = pubd_loop_run(d->loop);

	if (err < 0)
		log_err("event loop: %s", strerror(-err));
	return err;
}

void pubd_close(struct pubd *d)
{
	struct pubd_group *g;
	unsigned i;

	pubd_notify_stopping(d);
	if (d->loop)
		pubd_ipc_shutdown(&d->ipc);
	/* Leave groups before the fabric goes, in reverse order of setup. */
	if (d->fabric) {
		pubd_groups_foreach(&d->groups, g, i) d->fops->leave(d->fabric, g->slot);
	}
	pubd_tx_free(d);
	if (d->loop)
		pubd_ipc_close(&d->ipc);
	if (d->fabric)
		d->fops->close(d->fabric);
	d->fabric = NULL;
	pubd_groups_free(&d->groups);
	pubd_reasm_destroy(d->reasm);
	d->reasm = NULL;
	pubd_msgbuf_cache_drain();
	pubd_source_map_free(&d->sources);
	pubd_loop_timer_free(d->reasm_timer);
	pubd_loop_timer_free(d->heartbeat_timer);
	pubd_loop_timer_free(d->status_timer);
	pubd_loop_timer_free(d->stop_timer);
	pubd_loop_timer_free(d->watchdog_timer);
	pubd_loop_destroy(d->loop);
	d->loop = NULL;
	pubd_config_free(&d->cfg);
	free(d->config_path);
	d->config_path = NULL;
}
