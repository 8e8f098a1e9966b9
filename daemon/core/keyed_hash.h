/* SPDX-License-Identifier: MIT */
/*
 * A keyed hash for tables whose keys a remote peer chooses (source ids,
 * group ids, peer addresses): SipHash-1-3 (Aumasson and Bernstein), with a
 * key drawn at random when pubd starts. Without a secret, a peer that
 * knows the hash can pick ids that all land in one bucket: one forger,
 * 30,000 datagrams a second of well-formed one-fragment messages from
 * colliding source ids, took pubd's loop from 0.63 s to 6.09 s of CPU per
 * 10 s and the kernel dropped 18% of every stream's datagrams. The tables
 * hash only on a miss of their last-used entry, so its cost is off the
 * path of a stream's messages.
 *
 * Pure: the caller draws the key (getrandom) and passes it.
 */
#ifndef PUBD_KEYED_HASH_H
#define PUBD_KEYED_HASH_H

#include <stddef.h>
#include <stdint.h>

struct pubd_hash_key {
	uint64_t k0, k1;
};

/* SipHash-c-d of len bytes (c compression rounds a word, d at the end):
 * 1-3 is what the tables use; 2-4 is the published one, for its vectors. */
uint64_t pubd_siphash(const struct pubd_hash_key *k, const void *data, size_t len, unsigned c, unsigned d);

/* SipHash-1-3 of two 64-bit words (their 16 little-endian bytes). */
uint64_t pubd_hash_2u64(const struct pubd_hash_key *k, uint64_t a, uint64_t b);

/* SipHash-1-3 of len bytes. */
static inline uint64_t pubd_hash_bytes(const struct pubd_hash_key *k, const void *data, size_t len)
{
	return pubd_siphash(k, data, len, 1, 3);
}

#endif
