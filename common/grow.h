/* SPDX-License-Identifier: MIT */
/* Arrays that grow by doubling: the one way pubd and libpub make room. */
#ifndef PUB_GROW_H
#define PUB_GROW_H

#include <stddef.h>
#include <stdlib.h>

/*
 * Room for one more element in array v of n in use and *cap allocated, of
 * elem bytes each: v itself while it has room, else the array moved to
 * twice the room (first_cap when empty), *cap updated. NULL when out of
 * memory: v and *cap are as they were.
 */
static inline void *pub_grow(void *v, unsigned n, unsigned *cap, size_t elem, unsigned first_cap)
{
	unsigned ncap;
	void *nv;

	if (n < *cap)
		return v;
	ncap = *cap ? *cap * 2 : first_cap;
	nv = realloc(v, (size_t)ncap * elem);
	if (nv)
		*cap = ncap;
	return nv;
}

#endif
