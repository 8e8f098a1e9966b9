/* SPDX-License-Identifier: MIT */
/*
 * What a deliver log's records mean (the log itself: shmlog.h). pubd
 * writes a subscriber's deliveries into its deliver log, libpub reads them;
 * one definition for both. Native byte order: both ends share the machine.
 *
 * A record of type PUB_SHMLOG_MSG carries a message, or a piece of one:
 *   aux   the whole message's length (the same in every piece)
 *   flags PUB_SHMLOG_F_MORE while the message goes on in the next record
 *   body  u64 source, u64 seq (the same in every piece)
 *         u8  group_len 1..255 in a message's first piece, 0 in later ones
 *         group bytes
 *         the piece's payload bytes
 * A message's pieces follow each other in the log with nothing between.
 *
 * A group log is a deliver log of one group that pubd writes once for all
 * of that group's local subscribers on it, mapped read-only by each
 * (each gets a read-only file of the memfd): the same records, and PUB_SHMLOG_END when pubd
 * moves its readers off it (they find the group's next messages in their
 * own deliver logs). A reader cannot write the log, so it publishes how
 * far it has read in a slot of its own deliver log's control page: pubd
 * writes no record over what a reader still may read. A reader moved off
 * a group log (END) may be given it back later: the SHM frame then says
 * PUB_SHM_F_AFTER_MARK, and a record of the group with PUB_DELIVERLOG_F_MOVE
 * (no payload) in its deliver log marks where the group goes on in the
 * group log; the reader reads that log only from the mark on. When pubd closes a
 * client it sets `closed` in that client's deliver log first: from then on
 * the client's group logs are written over, and it reads them no more.
 */
#ifndef PUB_DELIVERLOG_FORMAT_H
#define PUB_DELIVERLOG_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "shmlog.h"

#define PUB_DELIVERLOG_HEAD 17u

/* The reader's slots in a deliver log's control page: one u64 per group
 * log it reads, the position it has consumed up to (release store). */
#define PUB_DELIVERLOG_SLOTS_OFF 1024u
#define PUB_DELIVERLOG_NSLOTS	 ((PUB_SHMLOG_CTL_LEN - PUB_DELIVERLOG_SLOTS_OFF) / 8u)

static inline _Atomic uint64_t *pub_deliverlog_slot(void *dlog_map, uint32_t slot)
{
	return (_Atomic uint64_t *)((uint8_t *)dlog_map + PUB_DELIVERLOG_SLOTS_OFF) + slot;
}

/* A deliver log record's flag: the group moves to its group log here. */
#define PUB_DELIVERLOG_F_MOVE 0x2

struct pub_deliverlog_piece {
	uint64_t source, seq;
	bool first, more;
	bool move; /* PUB_DELIVERLOG_F_MOVE: no message, the group's mark */
	uint8_t glen;
	const char *group; /* in the log */
	const uint8_t *data;
	uint32_t len;
	uint32_t total;
};

/* Decode a record pubd wrote. 0, or -EPROTO for one pubd does not write. */
int pub_deliverlog_decode(const struct pub_shmlog_view *v, struct pub_deliverlog_piece *p);

/* Write a piece's head into body; returns its length. */
uint32_t pub_deliverlog_put_head(uint8_t *body, uint64_t source, uint64_t seq, const char *group, uint8_t glen);

#endif
