/* SPDX-License-Identifier: MIT */
/* A random key for the keyed hashes of core/keyed_hash.h, drawn once for
 * each table when pubd starts (getrandom). */
#ifndef PUBD_RANDOM_KEY_H
#define PUBD_RANDOM_KEY_H

#include "keyed_hash.h"

void pubd_random_key(struct pubd_hash_key *k);

#endif
