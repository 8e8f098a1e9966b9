/* SPDX-License-Identifier: MIT */
/*
 * Giving the heap's free memory back to the system after a burst (heap.c).
 */
#ifndef PUBD_HEAP_H
#define PUBD_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* Called once a second: when the heap holds more free memory than at the
 * last look, by at least a burst's worth (or holds that much and was not
 * trimmed for a while), its free pages go back to the system. Returns the
 * heap's free bytes now. */
size_t pubd_heap_give_back(uint64_t now_ns);

#endif
