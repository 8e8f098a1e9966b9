/* SPDX-License-Identifier: MIT */
/*
 * Receiver flow control on a group (groups.repair.flow_control: min), the
 * pure part: the clock comes from the caller.
 *
 * A receiving daemon tells each source of the group, by a STATUS datagram
 * (wire_ctl.h) sent unicast as NAKs go, how far its local subscribers can
 * take the source's stream: its limit, the first sequence number they have
 * no room for (one past the last message it delivered, plus the room of
 * its fullest subscriber queue). The source sends no message at or beyond
 * the lowest limit of the receivers it heard from within
 * receiver_timeout; with none heard, nothing holds it back. So a slow
 * subscriber slows the publisher (which pubd back-pressures, as it does
 * when the fabric is full) instead of losing messages to sub_overflow.
 *
 * The source side (struct pubd_fc_source) is a bounded table of receivers
 * by daemon id; a new one beyond PUBD_FC_RECEIVERS_MAX takes the place of
 * the one heard from least recently. A receiver's latest STATUS stands,
 * by its serial: less room than before included (a subscriber joined a
 * receiver that had none), while one that arrives after a newer one
 * (reordered) is ignored.
 *
 * Stuck hosts: a receiving pubd stops counting a subscriber that took
 * nothing for the receiver timeout (flow_rx.c), so it holds the source
 * back for about that long at most before its limit passes where the
 * source waits. A host (the sender's address less its port or QP: the
 * caller says which bytes) whose receivers hold the source back at one
 * message, without a break, for PUBD_FC_STUCK_TIMEOUTS timeouts runs no
 * pubd that works (a slow one lets the source on from time to time): a
 * hung one, or a host that heard the group and says "full" forever under
 * receiver ids of its own invention, each for less than the timeout (the
 * token is on the multicast for anyone there). Its receivers are
 * forgotten, and the host may hold the source back no more for
 * PUBD_FC_PENALTY_TIMEOUTS timeouts, twice that at each strike: so one
 * host stalls the source for a bounded time, then ever less of it. A
 * receiver whose limit passes where the source waits a little at a time
 * slows the source to its pace: that is what a slow subscriber does too,
 * and what flow control is for.
 *
 * The receiver side's decisions: a subscriber's room, and when a limit is
 * worth a STATUS (pubd_fc_should_send).
 */
#ifndef PUBD_FLOW_CTL_H
#define PUBD_FLOW_CTL_H

#include <stdbool.h>
#include <stdint.h>

#define PUBD_FC_RECEIVERS_MAX	 256u
#define PUBD_FC_HOSTS_MAX	 64u
#define PUBD_FC_HOST_LEN	 24u /* bytes of a host key at most */
#define PUBD_FC_STUCK_TIMEOUTS	 2u
#define PUBD_FC_PENALTY_TIMEOUTS 8u
#define PUBD_FC_PENALTY_MAX	 (PUBD_FC_PENALTY_TIMEOUTS << 6)

struct pubd_fc_receiver {
	uint64_t id;	  /* the receiving daemon's source id */
	uint64_t limit;	  /* first sequence number it cannot take */
	uint64_t last_ns; /* when its last STATUS came */
	uint32_t serial;  /* that STATUS's */
	uint32_t host_len;
	uint8_t host[PUBD_FC_HOST_LEN];
};

/* A host whose receivers hold the source back, or were stuck doing so:
 * until until_ns its STATUSes hold nothing back. */
struct pubd_fc_host {
	uint8_t key[PUBD_FC_HOST_LEN];
	uint32_t len;
	uint32_t strikes;
	uint64_t until_ns; /* its penalty's end (0: none yet) */
	uint64_t held_ns;  /* since when receivers of it hold the source back at held_at; 0: none does */
	uint64_t held_at;  /* the message the source waits to send meanwhile */
	bool holds;	   /* one did at this pubd_fc_source_stuck */
	bool struck;	   /* and it got a strike there */
};

struct pubd_fc_source {
	struct pubd_fc_receiver v[PUBD_FC_RECEIVERS_MAX];
	uint32_t n;
	uint64_t timeout_ns;
	uint64_t limit; /* the lowest of v[].limit; meaningless while n == 0 */
	struct pubd_fc_host hosts[PUBD_FC_HOSTS_MAX];
	uint32_t nhosts;
	/* counters */
	uint64_t statuses;  /* taken */
	uint64_t stale;	    /* older than one taken (reordered): ignored */
	uint64_t timed_out; /* receivers forgotten after timeout_ns of silence */
	uint64_t replaced;  /* receivers forgotten to make room in the table */
	uint64_t stuck;	    /* receivers forgotten for holding the source back unmoved */
	uint64_t penalized; /* STATUSes ignored from a host in its penalty */
};

void pubd_fc_source_init(struct pubd_fc_source *fc, uint64_t timeout_ns);
/* STATUS number serial from receiver id, at host (host_len bytes, at most
 * PUBD_FC_HOST_LEN: the part of its address that names the machine), at
 * now: it can take messages up to limit - 1. False when it is older than
 * one taken, or its host is in its penalty (ignored). */
bool pubd_fc_source_status(struct pubd_fc_source *fc, uint64_t now_ns, uint64_t id, uint64_t limit, uint32_t serial,
			   const void *host, uint32_t host_len);
/* Forget receivers not heard from within the timeout; how many went. */
uint32_t pubd_fc_source_expire(struct pubd_fc_source *fc, uint64_t now_ns);
/* The source waits to send message want (waiting false: it waits for
 * nothing): a host whose receivers held it back too long gets a strike,
 * and they are forgotten. How many receivers went. */
uint32_t pubd_fc_source_stuck(struct pubd_fc_source *fc, uint64_t now_ns, bool waiting, uint64_t want);
/* May the message numbered seq go now? */
static inline bool pubd_fc_source_allows(const struct pubd_fc_source *fc, uint64_t seq)
{
	return !fc->n || seq < fc->limit;
}

/*
 * How many more messages a subscriber can take: the room in its queue by
 * count (max_msgs) and by bytes (max_bytes, at avg_len bytes a message).
 * queued: what it has waiting; 0 room when it is full.
 */
uint64_t pubd_fc_sub_room(uint64_t queued, uint64_t queued_bytes, uint64_t max_msgs, uint64_t max_bytes,
			  uint64_t avg_len);

/*
 * Is a STATUS with limit worth sending, the last one having said sent
 * (0: none yet)? When the limit moved a quarter of the largest window
 * (quarter, at least 1) on or back (back: a subscriber joined, or one
 * stuck reads again), or at all once keepalive is set (the periodic STATUS
 * a source needs to keep counting this receiver).
 */
bool pubd_fc_should_send(uint64_t limit, uint64_t sent, uint64_t quarter, bool keepalive);

#endif
