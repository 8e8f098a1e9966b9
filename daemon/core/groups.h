/* SPDX-License-Identifier: MIT */
/*
 * Groups: the configured multicast groups, their local subscribers, their
 * transmit queues and their counters. A group's slot is its index in the
 * table and is what the fabric knows it by.
 */
#ifndef PUBD_GROUPS_H
#define PUBD_GROUPS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "msgbuf.h"
#include "pacer.h"
#include "stats.h"

#define PUB_GROUP_NAME_MAX 255

struct pubd_client;
struct pubd_group;
struct pubd_tx_item;
struct pubd_fc_source;
struct pubd_fc_rx;
struct srv_glog;

/* One client's subscription to one group. */
struct pubd_sub {
	struct pubd_client *client;
	struct pubd_group *group;
	uint64_t delivered;
	struct pubd_drops drops;
	/* SUBSCRIBE answered once the fabric takes the group's datagrams
	 * (a full join under way): its request id until then. */
	bool reply_pending;
	uint32_t reply_req_id;
	/* receiver flow control (engine/flow_rx.c): what the subscriber had
	 * taken when last looked at, since when it has taken nothing with
	 * deliveries waiting, and whether that made it stuck (left out of
	 * the group's window until it reads again) */
	uint64_t fc_taken;
	uint64_t fc_idle_since_ns;
	bool fc_stuck;
	/* its group's group log (server/glog.c): the one it was given, NULL
	 * for none; whether its deliveries go there now (else it reads up to
	 * glog_until, the log's END, then its own deliver log); its slot in
	 * its deliver log's control page, and how far it said it has read */
	struct srv_glog *glog;
	bool glog_live;
	uint32_t glog_slot;
	uint64_t glog_released;
	uint64_t glog_until;
	/* it reads the direct log whose message is being fanned out now
	 * (server/direct.c): the fan-out passes over it */
	bool direct_now;
};

struct pubd_group {
	char name[PUB_GROUP_NAME_MAX + 1];
	size_t name_len;
	uint64_t id; /* pubd_group_id(name) */
	int slot;
	const struct pubd_group_config *cfg; /* in the daemon's current config */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	bool raw;
	/* scope host: never joined, nothing of it sent or received on the
	 * fabric; its messages go to this daemon's subscribers only */
	bool host;
	bool up;	      /* joined: the fabric can send to it (a host group: always) */
	uint64_t up_since_ns; /* when it last became joined */
	enum pubd_join_mode mode;
	bool listening;		  /* the fabric gives us its datagrams (pubd_group_listen_sync) */
	bool listen_pending;	  /* ...once the fabric says so (ev.listening): subscribers wait */
	uint64_t listen_since_ns; /* when it last started */

	struct pubd_sub **subs;
	unsigned nsubs, subs_cap;
	/* messages received and held back for order (engine/repair_order.c),
	 * on their way to these subscribers: one that leaves meanwhile
	 * counts them as its own sub_disconnect, as it does its queue */
	uint64_t order_held;
	/* the group log its shared-memory subscribers read (server/glog.c),
	 * and how many of them do now */
	struct srv_glog *glog;
	unsigned glog_live;
	uint64_t glog_ends;	 /* times its readers were moved off a group log */
	uint64_t glog_returns;	 /* subscriptions given it back after */
	uint64_t glog_abandoned; /* logs retired for readers stuck before the END */
	/* the direct logs its local publishers write (server/direct.c) */
	struct srv_direct **directs;
	unsigned ndirects, directs_cap;

	/* transmit side */
	uint64_t next_seq; /* sequence number of the next message published here */
	uint64_t sent_seq; /* one past the last message whose datagrams all went out */
	struct pubd_tx_item *txq_head, *txq_tail;
	uint32_t txq_len;
	bool tx_ready; /* on the daemon's list of groups with something to send */
	struct pubd_group *tx_next;
	bool ever_sent;
	uint64_t stream_began_ns; /* its first datagram went (heartbeats tell its age) */
	/* sender pacing (cfg->rate): out of tokens, the group leaves the ready
	 * list until pace_until_ns, when the daemon's pace timer brings it back */
	struct pubd_pacer pacer;
	bool tx_paced;
	uint64_t pace_until_ns;
	uint64_t paced_waits; /* times it had to wait for tokens */
	/* loss repair, source side (engine/repair_src.c): the window of what
	 * it sent (NULL while cfg->repair is off or the fabric cannot unicast)
	 * and the bucket capping repair bytes (cfg->repair.rate) */
	struct pubd_repair_window *rwin;
	struct pubd_pacer repair_pacer;
	/* what each asker may take (cfg->repair.peer_rate, NAKs/s), with rwin */
	struct pubd_repair_peers *rpeers;
	/* sent in heartbeats, echoed by NAKs (wire_ctl.h); drawn once, kept
	 * while the group lives so receivers' copies stay right */
	uint64_t repair_token;
	uint64_t naks_received;
	uint64_t repairs_sent; /* repair datagrams */
	uint64_t repair_bytes;
	uint64_t gone_sent;
	uint64_t naks_ignored_duplicate, naks_ignored_rate, naks_ignored_outside;
	uint64_t naks_ignored_token; /* without the group's repair token: forged, or not from a receiver */
	/* without the cookie of the address they came from: answered by a
	 * COOKIE only (a receiver's first, or one claiming another's address) */
	uint64_t naks_ignored_unproven;
	uint64_t cookies_sent;	    /* those COOKIEs */
	uint64_t naks_ignored_peer; /* over one asker's NAK rate or repair.peer_rate */
	/* receiver flow control, source side (engine/flow_src.c): the
	 * receivers heard from (NULL unless cfg->repair.flow_control is min
	 * and the group keeps a repair window), and whether the queue's next
	 * message waits for them (off the ready list, as tx_paced) */
	struct pubd_fc_source *fcs;
	bool fc_blocked;
	uint64_t flow_waits;	    /* times it had to wait for its receivers */
	uint64_t statuses_received; /* STATUS datagrams taken */
	uint64_t statuses_ignored;  /* without the token or cookie, for another source, stale, a host's penalty, or flow
				       control off here */
	/* receiver flow control, receiver side (engine/flow_rx.c): the
	 * streams it reports on */
	struct pubd_fc_rx *fcrx;
	uint64_t statuses_sent;
	/* loss repair, receiver side (engine/repair_rx.c) */
	uint64_t naks_sent;
	uint64_t repaired;     /* messages delivered after a NAK asked for them */
	uint64_t gone_ignored; /* GONEs without the source's token: forged */

	/* counters */
	uint64_t published; /* by local clients */
	uint64_t published_bytes;
	uint64_t received; /* complete messages from remote sources */
	uint64_t received_bytes;
	uint64_t delivered; /* writes to local subscribers */
	uint64_t delivered_bytes;
	uint64_t raw_rx_seq; /* raw groups number what they receive themselves */
	uint64_t tx_datagrams;
	uint64_t rx_datagrams;
	struct pubd_drops drops;     /* stream-level: reassembly, publish refusals */
	struct pubd_drops sub_drops; /* subscriber-level: queue policies */
	uint64_t sub_denied;	     /* subscribe requests refused by the ACL */
};

struct pubd_groups {
	struct pubd_group **v; /* indexed by slot; NULL for a free slot */
	unsigned n, cap;       /* slots in use (the highest + 1), and room */
	unsigned count;	       /* groups in v */
	unsigned up;	       /* of them, up (pubd_group_set_up) */
	unsigned free_from;    /* no free slot below it */
	/* The groups by id (open addressing, linear probing, load at most
	 * 1/2): a datagram's, a NAK's or a client's group is found in a probe
	 * or two however many groups the config has (a linear scan per
	 * message, and per group at reload, stalled pubd for seconds with
	 * thousands of groups). */
	struct pubd_group **ix;
	unsigned ix_mask; /* capacity - 1; 0 while ix is NULL */
};

/* Create the group for cfg in a free slot. Returns it or NULL (-ENOMEM). */
struct pubd_group *pubd_groups_add(struct pubd_groups *gs, const struct pubd_group_config *cfg);
/* Free a group; its subscriptions and tx queue must already be gone. */
void pubd_groups_remove(struct pubd_groups *gs, struct pubd_group *g);
void pubd_groups_free(struct pubd_groups *gs);

/* g->up, with gs->up kept: READY=1 and the status line ask how many are up
 * at every join, which a walk over thousands of groups made quadratic. */
static inline void pubd_group_set_up(struct pubd_groups *gs, struct pubd_group *g, bool up)
{
	if (g->up != up)
		gs->up = up ? gs->up + 1 : gs->up - 1;
	g->up = up;
}

/* Lookups through the id index; by name, the name's id, then the name. */
struct pubd_group *pubd_groups_by_name(const struct pubd_groups *gs, const char *name, size_t len);
struct pubd_group *pubd_groups_by_id(const struct pubd_groups *gs, uint64_t id);
static inline struct pubd_group *pubd_groups_by_slot(const struct pubd_groups *gs, int slot)
{
	return slot >= 0 && (unsigned)slot < gs->n ? gs->v[slot] : NULL;
}

/* Do a and b share a multicast address (so a datagram for one may arrive on
 * the other's)? */
static inline bool pubd_group_same_address(const struct pubd_group *a, const struct pubd_group *b)
{
	return a->addrlen == b->addrlen && memcmp(&a->addr, &b->addr, a->addrlen) == 0;
}

#define pubd_groups_foreach(gs, g, i)       \
	for ((i) = 0; (i) < (gs)->n; (i)++) \
		if (((g) = (gs)->v[i]) != NULL)

/* Subscriptions. add returns the sub or NULL; remove frees it. */
struct pubd_sub *pubd_group_sub_add(struct pubd_group *g, struct pubd_client *c);
void pubd_group_sub_remove(struct pubd_group *g, struct pubd_sub *s);

/* What the group needs from the fabric: receive unless nobody may subscribe
 * here (an empty subscribe ACL), in which case a send-only join suffices. */
enum pubd_join_mode pubd_group_join_mode(const struct pubd_group_config *cfg);

#endif
