/* SPDX-License-Identifier: MIT */
/*
 * A reference-counted message body. One buffer is shared by every local
 * subscriber queue it is fanned out to and by the transmit queue, so a
 * message is copied once into pubd (from the publisher's socket or out of
 * reassembly) and never again on its way out.
 *
 * Small buffers are recycled: a stream of small messages allocates and
 * frees one per message, and malloc plus free were 7-10% of the
 * instructions per 64-byte message (callgrind, tests/bench). Buffers up to
 * PUBD_MSGBUF_CLASS_MAX bytes come in three size classes, each with a free
 * list of at most PUBD_MSGBUF_CACHE_PER_CLASS buffers (about 1.3 MiB in
 * all); larger ones go straight back to malloc.
 *
 * Single-threaded: pubd's loop owns every buffer, so the count and the
 * free lists are plain.
 */
#ifndef PUBD_MSGBUF_H
#define PUBD_MSGBUF_H

#include <stddef.h>
#include <stdint.h>

#define PUBD_MSGBUF_CLASS_MAX	    4096u
#define PUBD_MSGBUF_CACHE_PER_CLASS 256u

struct pubd_msgbuf {
	struct pubd_msgbuf *next_free; /* while on a free list */
	uint32_t refs;
	uint32_t len;
	uint32_t cls; /* size class, or PUBD_MSGBUF_NO_CLASS */
	uint32_t pad_;
	uint8_t data[];
};

/* A buffer of len bytes with one reference, or NULL. Contents uninitialised. */
struct pubd_msgbuf *pubd_msgbuf_alloc(size_t len);

static inline struct pubd_msgbuf *pubd_msgbuf_get(struct pubd_msgbuf *m)
{
	m->refs++;
	return m;
}

/* Drop a reference; the last one recycles or frees the buffer. NULL is fine. */
void pubd_msgbuf_put(struct pubd_msgbuf *m);

/* Buffers waiting on the free lists (for tests and status). */
unsigned pubd_msgbuf_cached(void);
/* Give the free lists back to malloc (at exit). */
void pubd_msgbuf_cache_drain(void);

#endif
