/* SPDX-License-Identifier: MIT */
/*
 * The daemon: wires the config, the fabric, reassembly, groups and the IPC
 * server to one event loop (timers, signals, the idle pass), and its
 * lifecycle.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "engine_internal.h"
#include "heap.h"
#include "log.h"
#include "proto.h"
#include "random_key.h"
#include "wake_cost.h"

/* ---- timers and signals ---- */
static void on_reasm_timer(void *ctx, uint64_t now)
{
	struct pubd *d = ctx;

	d->event_ns = now;
	pubd_reasm_expire(d->reasm, now);
	engine_arm_reasm_timer(d);
	if (d->holds.dirty)
		engine_order_release(d);
}

static void on_heartbeat_timer(void *ctx, uint64_t now)
{
	struct pubd *d = ctx;

	pubd_tx_heartbeat(d);
	engine_repair_tick(d, now);
	engine_flow_tick(d, now);
	engine_naks_tick(d, now);
	pubd_loop_timer_arm_periodic(d->heartbeat_timer, now, (uint64_t)d->cfg.heartbeat_ms * MS);
}

static void on_pace_timer(void *ctx, uint64_t now)
{
	pubd_tx_pace_wake(ctx, now);
}

static void on_status_timer(void *ctx, uint64_t now)
{
	struct pubd *d = ctx;

	pubd_notify_status(d);
	pubd_ipc_tick(&d->ipc, now);
	pubd_log_limit_flush(&d->log_tx_refused, now);
	pubd_heap_give_back(now);
	pubd_loop_timer_arm_periodic(d->status_timer, now, 1000 * MS);
}

/* A turn timer: it pings only once the loop has been back to epoll since the
 * ping came due, so a loop kept from its fds and signals (a callback that
 * does not return) stops pinging, and systemd restarts pubd. */
static void on_watchdog_timer(void *ctx, uint64_t now)
{
	struct pubd *d = ctx;

	pubd_notify_watchdog(d);
	pubd_loop_timer_arm_periodic(d->watchdog_timer, now, d->watchdog_usec * 1000 / 2);
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

/* The loop's linger, and the fabric's (read at its open): fabric.rx_linger_us
 * auto is sized here, from a wakeup measured now. */
static void linger_init(struct pubd *d)
{
	if (d->cfg.rx_linger_us == PUBD_LINGER_AUTO && !d->cfg.busy_poll) {
		d->wake_ns = pubd_wake_cost_ns();
		d->cfg.rx_linger_auto_us = pubd_linger_auto_us(d->wake_ns);
		log_info("fabric.rx_linger_us auto: %u (a wakeup here takes %.1f us)", d->cfg.rx_linger_auto_us,
			 (double)d->wake_ns / 1000);
	}
	pubd_linger_init(&d->linger, (uint64_t)pubd_config_linger_us(&d->cfg) * 1000);
}

/* The work a linger follows: datagrams received, messages published and
 * delivered. Timers and queries do not make the loop linger. */
static uint64_t engine_activity(const struct pubd *d)
{
	return d->counters[PUBD_CTR_RX_DATAGRAMS] + d->counters[PUBD_CTR_MSG_PUBLISHED] +
	       d->counters[PUBD_CTR_MSG_DELIVERED];
}

/*
 * After a message came or went, the loop turns on without sleeping for
 * fabric.rx_linger_us (core/linger.h), and while it does the clients'
 * publish logs are read every turn instead of slept on (pubd_ipc.polling).
 * The next message of a train, or a ping-pong's answer, is then found by a
 * poll: no wakeup for pubd, and no doorbell for the client to ring. Returns
 * 1 while lingering (the loop must not sleep). Not with fabric.busy_poll,
 * which polls anyway.
 */
static int engine_linger(struct pubd *d)
{
	uint64_t seen = engine_activity(d);
	bool on;

	if (seen != d->linger_seen) {
		d->linger_seen = seen;
		pubd_linger_work(&d->linger);
		on = pubd_linger_active(&d->linger);
	} else {
		on = pubd_linger_idle(&d->linger, pubd_now_ns);
		/* An idle poll gives the CPU to whoever else can run: most
		 * often the client pubd just woke, whose answer it waits for.
		 * Spinning instead holds the core until the linger ends (the
		 * scheduler does not preempt for so short a run), and on a
		 * host with fewer cores than busy processes that doubled the
		 * ping-pong latency it was meant to cut. */
		if (on)
			sched_yield();
	}
	d->ipc.polling = on;
	return on;
}

/*
 * Would on_idle find anything to do if run again now, before any event?
 * Only what one pass can leave for the next: clients still to flush,
 * resume or read (pubd_ipc_idle_pending), groups still queued for the
 * fabric (TX_BATCH a pass; not while it waits for its writable event),
 * groups waiting on their receivers, held messages waiting for a
 * subscriber's room, flow control's reports, and stopping.
 */
static bool idle_pending(const struct pubd *d)
{
	return pubd_ipc_idle_pending(&d->ipc) || (d->tx.ready_head && !d->tx.stalled) || d->tx.fc_blocked ||
	       d->holds_waiting || d->fc_streams || d->stopping;
}

static int on_idle(void *ctx)
{
	struct pubd *d = ctx;
	int linger;
	/* Local subscribers first: a send to the fabric can cost more than
	 * the local hop (Soft-RoCE runs the whole send inside the post), and
	 * the local delivery need not wait for it. */
	int work = pubd_ipc_flush_all(&d->ipc) + (int)pubd_tx_pump(d);

	/* Messages held for order that a full subscriber queue stopped:
	 * the flush may have made room. */
	if (d->holds_waiting)
		engine_order_release(d);
	/* The flush may have let subscribers take what waited: sources under
	 * flow control hear of the room. */
	engine_flow_turn(d);

	pubd_ipc_settle(&d->ipc); /* what is still held of the clients' publish logs is copied */

	if (d->stopping && !d->tx.queued_msgs && !d->stopped)
		stop_loop(d); /* everything accepted went out */

	if (d->cfg.busy_poll) {
		d->ipc.polling = true; /* publish logs are read every turn, never slept on */
		if (d->fops->poll)
			work += d->fops->poll(d->fabric);
		/* A turn that found nothing gives the CPU to whoever else can
		 * run: with more spinners than cores (pubd and two busy clients
		 * on two), spinning on made each round trip wait for the
		 * scheduler's tick (4 ms); yielding, 8.6 us. */
		if (!work)
			sched_yield();
		return work ? work : 1;
	}
	if (d->fops->linger) {
		work += d->fops->linger(d->fabric, work > 0);
		return work + engine_linger(d);
	}
	linger = engine_linger(d);
	/* Work done is no reason to turn again without sleeping when a second
	 * pass would find nothing: the epoll_wait that sleeps returns at once
	 * for what came meanwhile. A message sent one at a time otherwise
	 * cost a second turn (this pass again and an epoll_wait that found
	 * nothing: some 100 instructions of the publish path's 1,470). */
	if (work && !idle_pending(d))
		work = 0;
	return work + linger;
}

/* ---- what the server asks of the engine ---- */
static bool srv_publish(void *ctx, struct pubd_client *origin, struct pubd_group *g, struct pubd_msgbuf *msg)
{
	return pubd_publish(ctx, origin, g, msg);
}

static void srv_publish_local(void *ctx, struct pubd_group *g, const uint8_t *data, size_t len)
{
	pubd_publish_local(ctx, g, data, len);
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
	if (kind == PUB_QUERY_METRICS)
		return pubd_metrics_reply(ctx, b, req_id, err, errcap);
	return pubd_query(ctx, b, req_id, kind, arg, arglen, err, errcap);
}

static int srv_reload(void *ctx, char *err, size_t errcap)
{
	return pubd_reload(ctx, err, errcap);
}

static const struct pubd_ipc_ops server_ops = {
	.publish = srv_publish,
	.publish_local = srv_publish_local,
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
	err = engine_load_config(config_path, &d->cfg, NULL, 0);
	if (err < 0) {
		pubd_config_defaults(&d->cfg); /* so pubd_close frees nothing twice */
		return err;
	}
	pubd_log_set_level(d->cfg.log_level);
	d->sources.max = d->cfg.max_sources;
	pubd_random_key(&d->sources.key);
	pubd_random_key(&d->cookie_key);
	if (getrandom(&d->source_id, sizeof(d->source_id), 0) != sizeof(d->source_id))
		d->source_id = (uint64_t)getpid() << 32 ^ pubd_now_ns();
	d->started_ns = pubd_now_ns();
	d->log_tx_refused =
		(struct pubd_log_limit){.what = "messages the fabric refused to send", .burst = 5, .prio = LOG_WARNING};
	log_notice("pubd %s starting: config %s, source id %016llx", PUBD_VERSION, config_path,
		   (unsigned long long)d->source_id);

	d->loop = pubd_loop_create();
	if (!d->loop)
		return -ENOMEM;
	err = pubd_loop_signals(d->loop, signals, 3, on_signal, d);
	if (err < 0)
		return err;
	engine_reasm_config_from(&d->cfg, &rc);
	pubd_random_key(&rc.hash_key);
	d->reasm = pubd_reasm_create(&rc, &engine_reasm_ops, d);
	d->reasm_timer = pubd_loop_timer(d->loop, on_reasm_timer, d);
	d->heartbeat_timer = pubd_loop_timer(d->loop, on_heartbeat_timer, d);
	d->status_timer = pubd_loop_timer(d->loop, on_status_timer, d);
	d->stop_timer = pubd_loop_timer(d->loop, on_stop_timer, d);
	d->pace_timer = pubd_loop_timer(d->loop, on_pace_timer, d);
	d->tx.pace_deadline = UINT64_MAX;
	d->watchdog_timer = pubd_loop_turn_timer(d->loop, on_watchdog_timer, d);
	if (!d->reasm || !d->reasm_timer || !d->heartbeat_timer || !d->status_timer || !d->watchdog_timer ||
	    !d->stop_timer || !d->pace_timer)
		return -ENOMEM;
	err = engine_naks_init(d);
	if (err < 0)
		return err;
	err = engine_order_init(d);
	if (err < 0)
		return err;
	linger_init(d);
	pubd_loop_set_idle(d->loop, on_idle, d);
	pubd_notify_init(d);

	err = engine_open_fabric(d, opts ? opts->fabric : NULL);
	if (err < 0)
		return err;
	err = server_init(d);
	if (err < 0)
		return err;
	err = engine_apply_groups(d, &d->cfg);
	if (err < 0)
		return err;
	err = pubd_metrics_apply(d, true);
	if (err < 0)
		return err;

	now = pubd_now_ns();
	pubd_loop_timer_arm(d->heartbeat_timer, now + (uint64_t)d->cfg.heartbeat_ms * MS);
	pubd_loop_timer_arm(d->status_timer, now + 1000 * MS);
	if (d->watchdog_usec)
		pubd_loop_timer_arm(d->watchdog_timer, now + d->watchdog_usec * 1000 / 2);
	if (!d->ready && engine_all_groups_up(d))
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
	pubd_metrics_close(d);
	if (d->loop)
		pubd_ipc_shutdown(&d->ipc);
	/* Leave groups before the fabric goes, in reverse order of setup. */
	if (d->fabric) {
		pubd_groups_foreach(&d->groups, g, i)
		{
			if (!g->host)
				d->fops->leave(d->fabric, g->slot);
		}
	}
	pubd_tx_free(d);
	/* Windows hold buffers that clients' publish logs may have lent. */
	pubd_groups_foreach(&d->groups, g, i) engine_repair_free(d, g);
	if (d->loop)
		pubd_ipc_close(&d->ipc);
	if (d->fabric)
		d->fops->close(d->fabric);
	d->fabric = NULL;
	pubd_groups_free(&d->groups);
	engine_naks_close(d);
	engine_order_close(d);
	pubd_reasm_destroy(d->reasm);
	d->reasm = NULL;
	pubd_msgbuf_cache_drain();
	pubd_source_map_free(&d->sources);
	pubd_loop_timer_free(d->reasm_timer);
	pubd_loop_timer_free(d->heartbeat_timer);
	pubd_loop_timer_free(d->status_timer);
	pubd_loop_timer_free(d->stop_timer);
	pubd_loop_timer_free(d->pace_timer);
	pubd_loop_timer_free(d->watchdog_timer);
	pubd_loop_destroy(d->loop);
	d->loop = NULL;
	pubd_config_free(&d->cfg);
	free(d->config_path);
	d->config_path = NULL;
}
