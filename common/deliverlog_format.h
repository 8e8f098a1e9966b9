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
 */
#ifndef PUB_DELIVERLOG_FORMAT_H
#define PUB_DELIVERLOG_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "shmlog.h"

#define PUB_DELIVERLOG_HEAD 17u

struct pub_deliverlog_piece {
	uint64_t source, seq;
	bool first, more;
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
