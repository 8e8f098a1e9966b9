/* SPDX-License-Identifier: MIT */
/* A secret for the keyed hashes: random_key.h. */
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "random_key.h"

void pubd_random_key(struct pubd_hash_key *k)
{
	struct timespec ts;

	if (getrandom(k, sizeof(*k), 0) == (ssize_t)sizeof(*k))
		return;
	/* No entropy source (a very early boot, a seccomp filter): a key an
	 * outsider cannot read off the wire still beats none. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	k->k0 ^= (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32;
	k->k1 ^= (uint64_t)ts.tv_sec * 0xbf58476d1ce4e5b9ull ^ (uint64_t)(uintptr_t)k;
}
