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
 * The receiver side's decisions: a subscriber's room, and when a limit is
 * worth a STATUS (pubd_fc_should_send).
 */
#ifndef PUBD_FLOW_CTL_H
#define PUBD_FLOW_CTL_H

#include <stdbool.h>
#include <stdint.h>

#define PUBD_FC_RECEIVERS_MAX 256u

struct pubd_fc_receiver {
	uint64_t id;	  /* the receiving daemon's source id */
	uint64_t limit;	  /* first sequence number it cannot take */
	uint64_t last_ns; /* when its last STATUS came */
	uint32_t serial;  /* that STATUS's */
};

struct pubd_fc_source {
	struct pubd_fc_receiver v[PUBD_FC_RECEIVERS_MAX];
	uint32_t n;
	uint64_t timeout_ns;
	uint64_t limit; /* the lowest of v[].limit; meaningless while n == 0 */
	/* counters */
	uint64_t statuses;  /* taken */
	uint64_t stale;	    /* older than one taken (reordered): ignored */
	uint64_t timed_out; /* receivers forgotten after timeout_ns of silence */
	uint64_t replaced;  /* receivers forgotten to make room in the table */
};

void pubd_fc_source_init(struct pubd_fc_source *fc, uint64_t timeout_ns);
/* STATUS number serial from receiver id at now: it can take messages up to
 * limit - 1. False when it is older than one taken (ignored). */
bool pubd_fc_source_status(struct pubd_fc_source *fc, uint64_t now_ns, uint64_t id, uint64_t limit, uint32_t serial);
/* Forget receivers not heard from within the timeout; how many went. */
uint32_t pubd_fc_source_expire(struct pubd_fc_source *fc, uint64_t now_ns);
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
