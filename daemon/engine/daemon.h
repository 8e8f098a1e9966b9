/* SPDX-License-Identifier: MIT */
/*
 * struct pubd: everything the daemon owns, driven by one event loop.
 */
#ifndef PUBD_DAEMON_H
#define PUBD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "fabric.h"
#include "groups.h"
#include "htab.h"
#include "ipc.h"
#include "linger.h"
#include "loop.h"
#include "reasm.h"
#include "repair_nak.h"
#include "repair_window.h"
#include "stats.h"
#include "tx.h"

struct pub_table_builder;
struct pubd_http;
struct hold_stream;

/*
 * Messages held back for order on repair groups (repair_order.c): the
 * streams holding, by (source, group), and those a release must look at.
 * A release looks only at those (reassembly moved their low, or a full
 * subscriber queue stopped them): thousands of streams held open by a
 * forger's gaps cost nothing per message of the others.
 */
struct engine_holds {
	struct htab ix;		   /* every holding stream, by (source, group) */
	struct hold_stream *all;   /* the same streams, for walks of them all */
	struct hold_stream *dirty; /* to look at on the next release */
	/* The same streams by what they are charged, a list per power of two
	 * (bit k of mask: list k is not empty): the budget's forced release
	 * takes one of the most charged without a walk. */
	struct hold_stream *by_size[64];
	uint64_t size_mask;
	uint64_t msgs;	 /* messages held, all streams */
	uint64_t visits; /* streams releases looked at, all told (tests) */
};

struct pubd {
	char *config_path;
	struct pubd_config cfg;
	struct pubd_loop *loop;
	const struct pubd_fabric_ops *fops;
	struct pubd_fabric *fabric;
	uint32_t mtu;
	uint64_t source_id;
	uint64_t started_ns;
	uint64_t event_ns; /* when the receive batch or timer being handled began */
	struct pubd_reasm *reasm;
	struct pubd_groups groups;
	struct pubd_ipc ipc;
	struct pubd_tx tx;
	struct pubd_source_map sources;
	struct pubd_repair_budget repair_budget; /* limits.repair_budget, over every group's window */
	struct pubd_nak_sched naks;		 /* loss repair, receiver side: what to ask for (repair_rx.c) */
	struct pubd_loop_timer *nak_timer;
	uint64_t nak_rng;
	/* A NAK asker's address cookie is a keyed hash of the address with
	 * this secret (wire_ctl.h): the source keeps nothing per asker. */
	struct pubd_hash_key cookie_key;
	bool fabric_unicast;		      /* the fabric's send_to works (loss repair can run) */
	struct engine_holds holds;	      /* messages held back for order (repair_order.c) */
	uint64_t held_bytes;		      /* charged by repair_order.c, against limits.reassembly_budget */
	bool holds_waiting;		      /* a release stopped at a full subscriber queue: go on as it drains */
	uint32_t fc_streams;		      /* streams reported on by flow control, all groups (flow_rx.c) */
	struct pubd_log_limit log_flow_stuck; /* receivers flow control stopped waiting for (flow_src.c) */
	struct pubd_log_limit log_tx_refused; /* messages the fabric refused to send (tx.c) */
	const struct pubd_rx_dgram *rx_dgram; /* the datagram being pushed into reassembly, or NULL */
	struct pubd_http *metrics_http;	      /* NULL: metrics.listen not set (or its bind failed) */
	char *metrics_listening;	      /* the metrics.listen the listener was opened for */
	uint64_t counters[PUBD_CTR__COUNT];
	struct pubd_linger linger; /* after work the loop polls on (fabric, publish logs) before it sleeps */
	uint64_t wake_ns;	   /* a wakeup measured at start, for fabric.rx_linger_us auto; 0: not measured */
	uint64_t linger_seen;	   /* the work the linger watches (engine_activity), at its last look */
	struct pubd_drops drops;   /* daemon-scope: not tied to a known group */
	struct pubd_loop_timer *reasm_timer, *heartbeat_timer, *watchdog_timer, *status_timer;
	struct pubd_loop_timer *pace_timer; /* brings paced groups back (tx.c) */
	struct pubd_loop_timer *stop_timer; /* stopping: the longest wait for the transmit queue */
	uint64_t watchdog_usec;
	bool ready;    /* READY=1 sent */
	bool stopping; /* SIGTERM/SIGINT: clients closed, transmit queue draining */
	bool stopped;  /* the loop was told to stop */
	int exit_code;
};

/* Lifecycle (daemon.c). */
int pubd_init(struct pubd *d, const char *config_path);
/* What tests may choose at start (pubd_init: all defaults). */
struct pubd_init_opts {
	const struct pubd_fabric_ops *fabric; /* NULL: as fabric.type says */
};
int pubd_init_with(struct pubd *d, const char *config_path, const struct pubd_init_opts *opts);
int pubd_run(struct pubd *d);
void pubd_close(struct pubd *d);
/* Re-read the config: 0 when applied; 1 when applied but some of it could
 * not be (a key that needs a restart, a group that did not join, a
 * metrics.listen that cannot be bound), each said in errtext; -errno when
 * rejected, with the config's errors logged and, when errtext is not NULL,
 * written there (for pubctl reload). */
int pubd_reload(struct pubd *d, char *errtext, size_t errcap);

/* A message published by a local client (the server's publish op, after its
 * checks): fanned out to local subscribers and queued for the fabric.
 * Returns true when it waits in a transmit queue owned by origin. */
bool pubd_publish(struct pubd *d, struct pubd_client *origin, struct pubd_group *g, struct pubd_msgbuf *msg);
/* Join the fabric for a group. */
/* A host group's message, still in the publisher's buffer: delivered to
 * the local subscribers before it returns (no msgbuf unless one queues). */
void pubd_publish_local(struct pubd *d, struct pubd_group *g, const uint8_t *data, size_t len);
int pubd_group_join(struct pubd *d, struct pubd_group *g);
/* Receive the group's traffic exactly while it should be: it may be
 * subscribed, and it has local subscribers or fabric.receive is always.
 * Call after its subscribers change. 0, 1 while the fabric is still getting
 * there (verbs: a full join under way; new subscribers wait for their
 * answer), or -errno when the fabric could not start (or stop) receiving. */
int pubd_group_listen_sync(struct pubd *d, struct pubd_group *g);

/* Queries for pubctl (query.c): append TABLE frames for kind (RELOAD is a
 * command: pubd_reload); returns 0 or -PUB_ERR_* with a message in err. */
int pubd_query(struct pubd *d, struct pub_table_builder *b, uint32_t req_id, uint8_t kind, const char *arg,
	       size_t arglen, char *err, size_t errcap);

/* The tables the metrics are rendered from (status, fabric, counters,
 * groups, subscribers, sources, drops, more), appended to b; 0 or b->err. */
int pubd_query_metrics_tables(struct pubd *d, struct pub_table_builder *b);

/* Prometheus metrics (metrics.c): the /metrics listener of metrics.listen,
 * and the same text for `pubctl metrics`. */
int pubd_metrics_render(struct pubd *d, char **text, size_t *len);
/* Open (or, at reload, move or close) the listener as d->cfg says. At
 * start (initial) a failed bind is an error; at reload the old listener
 * is kept and the failure logged. */
int pubd_metrics_apply(struct pubd *d, bool initial);
void pubd_metrics_close(struct pubd *d);
/* The answer to PUB_QUERY_METRICS: table "metrics" (text:s) of pieces. */
int pubd_metrics_reply(struct pubd *d, struct pub_table_builder *b, uint32_t req_id, char *err, size_t errcap);

/* systemd notification (notify.c). */
void pubd_notify_init(struct pubd *d);
void pubd_notify_ready(struct pubd *d);
void pubd_notify_status(struct pubd *d);
void pubd_notify_reloading(struct pubd *d);
void pubd_notify_stopping(struct pubd *d);
void pubd_notify_watchdog(struct pubd *d);

#endif
