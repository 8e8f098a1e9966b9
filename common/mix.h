/* SPDX-License-Identifier: MIT */
/* Spreading 64-bit keys over a table's places: the open-addressing indexes
 * of keys a peer does not choose (group ids, the operator's addresses). A
 * peer's keys go through keyed hashing instead (daemon/core/keyed_hash.h). */
#ifndef PUB_MIX_H
#define PUB_MIX_H

#include <stdint.h>

/* MurmurHash3's 64-bit finaliser: every input bit moves every output bit. */
static inline uint64_t pub_mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

#endif
