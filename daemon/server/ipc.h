/* SPDX-License-Identifier: MIT */
/*
 * The local API: a Unix stream socket speaking common/proto.h.
 *
 * Every client has a receive buffer, an output queue and its counters.
 * Output (deliveries, replies) is queued and written in batches with
 * writev() once per loop iteration, so a burst of messages costs few
 * system calls. A subscriber's queue holds at most limits.subscriber_queue
 * deliveries and limits.subscriber_queue_bytes of their payload (one message
 * always fits an empty queue); past either the slow_subscriber policy
 * decides, and every message it drops is counted against that subscriber
 * only. Payload buffers are shared (refcounted) by every subscriber a message
 * is queued for, so the bytes bound is what one client can pin; together
 * clients pin at most max_clients times it, less when they share messages.
 */
#ifndef PUBD_IPC_H
#define PUBD_IPC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "msgbuf.h"
#include "stats.h"

/* frame header + source + seq + name8 */
#define PUB_OUT_HEAD_MAX (8 + 8 + 8 + 1 + 255)

struct pubd;
struct pubd_group;
struct pubd_sub;
struct pubd_loop_watch;

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

/* Per client, per group publish counts (`pubctl group NAME` shows publishers). */
struct pubd_pubstat {
	struct pubd_group *group;
	uint64_t published;
	uint64_t bytes;
};

struct pubd_client {
	struct pubd *d;
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

struct pubd_ipc {
	int listen_fd;
	bool listen_from_systemd;
	struct pubd_loop_watch *listen_watch;
	char *path; /* NULL when systemd owns the socket */
	struct pubd_client *clients;
	unsigned nclients;
	uint32_t next_id;
	struct pubd_client *dirty;
	unsigned npaused; /* clients not being read (back-pressure): the loop looks for them only when there are some */
	unsigned ngone;	  /* hung-up clients whose input is still being drained */
	size_t charged;	  /* bytes held for clients, against limits.client_buffer_budget */
	size_t uncharged; /* replies outside it: at most one REPLY_FREE_MAX per client */
	int reserve_fd;	  /* closed to accept and refuse a connection when out of fds */
	bool listen_paused;	     /* accept kept failing: resumed by pubd_ipc_tick */
	uint64_t accept_fail_logged; /* accept errors and refusals already logged */
	uint64_t refused_logged;
	uint64_t last_accept_log_ns;
	struct pubd_out *free_outs;
};

int pubd_ipc_init(struct pubd *d);
void pubd_ipc_close(struct pubd *d);
/* Write queued output of every client that has some. Returns work done. */
int pubd_ipc_flush_all(struct pubd *d);
/* Queue a message for one subscriber, applying the slow-subscriber policy. */
void pubd_ipc_deliver(struct pubd *d, struct pubd_sub *s, uint64_t source, uint64_t seq, struct pubd_msgbuf *msg);
/* A message of this client's left the transmit queue. */
void pubd_ipc_tx_done(struct pubd *d, struct pubd_client *c);
/* Close clients whose disconnect grace period has passed (called every second). */
void pubd_ipc_tick(struct pubd *d, uint64_t now_ns);
/* Tell every client the daemon is stopping, flush what we can, close them. */
void pubd_ipc_shutdown(struct pubd *d);
/* A group is going away: drop its subscriptions (clients are told). */
void pubd_ipc_group_removed(struct pubd *d, struct pubd_group *g);
/* The group's ACLs changed (reload): end the subscriptions and publishing
 * its new ACLs no longer allow (clients are told, counted acl_revoked). */
void pubd_ipc_acl_changed(struct pubd *d, struct pubd_group *g);

#endif
