/* SPDX-License-Identifier: MIT */
/*
 * The transmit path: per-group FIFOs of messages waiting for the fabric,
 * cut into datagrams by the fragmenter as they go out, and heartbeats.
 *
 * Each group has its own queue so a group that is not joined yet (or is
 * rejoining after a link flap) holds back only its own messages. Groups with
 * something to send sit on a round-robin list. When the fabric takes fewer
 * datagrams than offered it is out of credits: the pump stops until the
 * fabric's writable event, and publishers whose messages are queued stop
 * being read (back-pressure, not drops).
 */
#ifndef PUBD_TX_H
#define PUBD_TX_H

#include <stdbool.h>
#include <stdint.h>

#include "frag.h"
#include "msgbuf.h"

struct pubd;
struct pubd_group;
struct pubd_client;

struct pubd_tx_item {
	struct pubd_tx_item *next;
	/* Pinned while lent (a client's publish-log record): it waits for the
	 * fabric only, and goes out from the record, not from a copy. */
	struct pubd_msgbuf *msg;
	bool pinned;
	struct pubd_client *origin; /* for back-pressure accounting; NULL once it left */
	uint64_t seq;
	uint32_t next_frag;
	struct pubd_frag_plan plan;
};

struct pubd_tx {
	struct pubd_group *ready_head, *ready_tail;
	bool stalled;			 /* waiting for the fabric's writable event */
	struct pubd_tx_item *free_items; /* recycled: no allocation per message */
	uint32_t queued_msgs;
	uint32_t fc_blocked;	/* groups whose queue waits for their receivers (flow control) */
	uint64_t pace_deadline; /* the pace timer's, UINT64_MAX when disarmed */
	/* Batch bodies (fabric.batch): TX_BATCH of batch_stride bytes, made
	 * at the first batch and again when the MTU grows. */
	uint8_t *batch_bodies;
	size_t batch_stride;
};

/* Queue a message (the queue takes a reference). -ENOMEM on failure. The
 * origin client (or NULL) is told when it leaves (pubd_ipc_tx_done). */
int pubd_tx_enqueue(struct pubd *d, struct pubd_group *g, struct pubd_msgbuf *msg, uint64_t seq,
		    struct pubd_client *origin);
/* Send what the fabric will take. Returns datagrams sent. */
unsigned pubd_tx_pump(struct pubd *d);
/* The group became usable (joined) or unusable. */
void pubd_tx_group_state(struct pubd *d, struct pubd_group *g);
/* Drop a group's queue (a reload removed the group or made it anew), the
 * messages counted as group_reloaded; returns how many. */
uint64_t pubd_tx_group_flush(struct pubd *d, struct pubd_group *g);
/* The fabric's MTU is mtu now (d->mtu becomes it; the clients are told):
 * messages not yet started are cut anew; those partly sent (or raw ones)
 * that no longer fit are dropped, counted and logged. Nothing is sent:
 * the caller pumps. */
void pubd_tx_mtu_changed(struct pubd *d, uint32_t mtu);
/* A client is going away (it has messages queued): they stay queued, unowned. */
void pubd_tx_forget_client(struct pubd *d, struct pubd_client *c);
/* Send one heartbeat on g announcing its next sequence to be sent. */
void pubd_tx_announce(struct pubd *d, struct pubd_group *g);
/* Sender pacing: (re)configure g's token bucket from g->cfg->rate and d->mtu
 * (a new group, a reload, an MTU change). */
void pubd_tx_pace_config(struct pubd *d, struct pubd_group *g);
/* The pace timer fired: groups whose wait is over go back on the ready list. */
void pubd_tx_pace_wake(struct pubd *d, uint64_t now_ns);
/* Send heartbeats on every idle group that has published. */
void pubd_tx_heartbeat(struct pubd *d);
void pubd_tx_free(struct pubd *d);

#endif
