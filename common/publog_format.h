/* SPDX-License-Identifier: MIT */
/*
 * What a publish log's records mean (the log itself: shmlog.h). libpub
 * writes them, pubd reads them; one definition for both.
 *
 * A record of type PUB_SHMLOG_MSG carries a message, or a piece of one:
 *   aux   the whole message's length (the same in every piece)
 *   flags PUB_SHMLOG_F_MORE while the message goes on in the next record
 *   body  u32 req_id   0: no answer; else pubd answers OK or ERROR with it
 *                      (PUB_SYNC), on the socket, in order
 *         u8  group_len 1..255 in a message's first piece, 0 in later ones
 *         group bytes
 *         the piece's payload bytes
 * A message's pieces follow each other in the log with nothing between.
 */
#ifndef PUB_PUBLOG_FORMAT_H
#define PUB_PUBLOG_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "shmlog.h"

#define PUB_PUBLOG_HEAD 5u

struct pub_publog_piece {
	uint32_t req_id;
	bool first; /* names the group: a message's first (or only) piece */
	bool more;  /* another piece follows */
	uint8_t glen;
	char group[255];     /* copied out of the log: the checks see what is used (a direct log's
			      * decode, daemon/server/direct_read.c, leaves it: its group is its own) */
	const uint8_t *data; /* the piece's payload, in the log */
	uint32_t len;
	uint32_t total; /* the whole message */
	uint64_t seq;	/* a direct log's (daemon/server/direct_read.c): the writer's; else 0 */
};

/*
 * Decode a record from a log someone else writes: fields are read once and
 * copied, lengths checked against the record's (the reader's checked
 * length, not anything in the body). Returns 0, or -EPROTO for a record no
 * honest writer makes (a first piece longer than its message, a last one
 * that is not the rest of it is checked by the caller, who knows the rest).
 */
int pub_publog_decode(const struct pub_shmlog_view *v, struct pub_publog_piece *p);

/* Write a piece's head into body (the record's); returns the head's length. */
uint32_t pub_publog_put_head(uint8_t *body, uint32_t req_id, const char *group, uint8_t glen);

#endif
