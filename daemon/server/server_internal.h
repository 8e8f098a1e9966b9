/* SPDX-License-Identifier: MIT */
/*
 * What the server's files share: a client, its output queue, the limits
 * that bound both, and the functions one file offers the others.
 */
#ifndef PUBD_SERVER_INTERNAL_H
#define PUBD_SERVER_INTERNAL_H

#include "ipc.h"

/* frame header + source + seq + name8 */
#define PUB_OUT_HEAD_MAX (8 + 8 + 8 + 1 + 255)

/* One queued output frame. */
struct pubd_out {
	struct pubd_out *next;
	struct pubd_msgbuf *body; /* DELIVER payload, or a whole control frame */
	struct pubd_sub *sub;	  /* DELIVER: the subscription it counts against */
	uint32_t head_len;	  /* bytes of head[] in use (0 for control frames) */
	bool uncharged;		  /* a reply outside the client budget (REPLY_FREE_MAX in ipc.c) */
	uint32_t written;	  /* of head + body */
	uint8_t head[PUB_OUT_HEAD_MAX];
};

struct pubd_client {
	struct pubd_ipc *srv;
	struct pubd_client *prev, *next; /* all clients */
	int fd;
	struct pubd_loop_watch *watch;
	uint32_t watch_events;
	uint32_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	uint32_t *sup_gids; /* supplementary groups (SO_PEERGROUPS) */
	size_t nsup_gids;
	char name[64];
	bool hello;
	bool closing;		    /* protocol error: flush the error reply, then close */
	bool unsub_deferred;	    /* closing from inside fan-out: subscriptions end in pubd_ipc_flush_all */
	uint64_t close_deadline_ns; /* closing: closed by then even if the reply did not drain */
	uint64_t connected_ns;

	uint8_t *rbuf;
	size_t rlen, rcap;    /* rcap above RBUF_MIN is charged to the client budget */
	bool read_since_tick; /* rbuf saw data since the last pubd_ipc_tick */
	/* A PUBLISH too big for rbuf is read straight into its message buffer. */
	struct pubd_msgbuf *big; /* charged to the client budget while read */
	size_t big_have;
	size_t skip; /* body bytes of a refused big PUBLISH still to be read and discarded */
	uint32_t big_req_id;
	char big_group[256];
	size_t big_group_len;
	/* The last frame seen was a big PUBLISH: read rbuf in small bites, so
	 * that the next big body is read into its buffer, not into rbuf. */
	bool expect_big;

	struct pubd_out *out_head, *out_tail;
	uint32_t out_delivers;	  /* queued DELIVER frames (the subscriber queue) */
	size_t out_deliver_bytes; /* their payload bytes (limits.subscriber_queue_bytes) */
	size_t out_ctrl_bytes;	  /* queued reply bytes */
	bool dirty;		  /* on the flush list */
	struct pubd_client *next_dirty;

	uint32_t tx_pending; /* its messages waiting in transmit queues */
	bool paused;	     /* not reading: back-pressure */
	size_t budget_wait;  /* paused until this many bytes of the client budget are free */
	bool reply_wait;     /* ... or until its queued replies are all written */
	bool gone;	     /* the peer hung up: what it sent is read and handled, nothing written */

	struct pubd_sub **subs;
	unsigned nsubs, subs_cap;
	struct pubd_pubstat *pubs;
	unsigned npubs;

	uint64_t published, delivered;
	struct pubd_drops drops;
};

#endif
