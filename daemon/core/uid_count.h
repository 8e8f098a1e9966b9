/* SPDX-License-Identifier: MIT */
/*
 * Connections per uid, for limits.max_clients_per_uid: a small
 * open-addressing table uid -> count that holds only the uids with a count
 * above 0, so its size follows the distinct uids connected (at most the
 * connections), never the connections themselves. Linear probing, removal
 * by backward shift (no tombstones to pile up as uids come and go), grown
 * at half full and shrunk at an eighth: each call is O(1) expected, so an
 * accept storm costs the same per accept at any limits.max_clients (a count
 * by walking the clients made it quadratic).
 *
 * Keyed (keyed_hash.h): a local user with a range of subordinate uids picks
 * which uids connect, and must not be able to line them up in one run.
 * Pure: the caller draws the key.
 */
#ifndef PUBD_UID_COUNT_H
#define PUBD_UID_COUNT_H

#include <stdint.h>

#include "keyed_hash.h"

struct pubd_uid_slot {
	uint32_t uid;
	uint32_t count; /* 0: an empty slot */
};

struct pubd_uid_count {
	struct pubd_uid_slot *slots; /* NULL until the first uid */
	uint32_t mask;		     /* slots - 1 (a power of two) */
	uint32_t n;		     /* uids held */
	struct pubd_hash_key key;
};

/* An empty table (nothing allocated until the first uid). */
void pubd_uid_count_init(struct pubd_uid_count *t, const struct pubd_hash_key *key);
void pubd_uid_count_free(struct pubd_uid_count *t);
/* The count of uid: 0 when it has none. */
uint32_t pubd_uid_count_get(const struct pubd_uid_count *t, uint32_t uid);
/* One more for uid: 0, or -ENOMEM (only for a uid not held yet, whose
 * table had to grow; nothing changed then). */
int pubd_uid_count_inc(struct pubd_uid_count *t, uint32_t uid);
/* One less for uid (a uid with none is left alone); at 0 it goes. */
void pubd_uid_count_dec(struct pubd_uid_count *t, uint32_t uid);

#endif
