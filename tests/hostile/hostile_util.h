/* SPDX-License-Identifier: MIT */
/* What the hostile tools share: the clock, and the word that an attack is in place. */
#ifndef PUB_HOSTILE_UTIL_H
#define PUB_HOSTILE_UTIL_H

#include <stdio.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Say the attack is in place: the file named by --ready (none: nothing). */
static inline void ready(const char *path)
{
	FILE *f = path ? fopen(path, "w") : NULL;

	if (f)
		fclose(f);
}

#endif
