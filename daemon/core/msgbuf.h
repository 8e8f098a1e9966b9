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
 * A buffer can also be lent: its data then lies in memory someone else
 * owns (a client's publish log), and the lender is told when the last
 * reference goes, so it can give that memory back. A lender that cannot
 * wait any longer detaches the buffer (pubd_msgbuf_detach): its bytes are
 * copied into memory of its own and the holders never notice.
 *
 * Except what the transmit path holds: a message queued for the fabric,
 * and a send that reads the lent memory itself (verbs: the send's scatter
 * list names the publish log, registered with the device) until it
 * completes. These pin the buffer (pubd_msgbuf_pin), and a pinned buffer
 * cannot be detached; the lender waits for the unpin. The lender's memory is a
 * region (struct pubd_mem_region) a fabric may register once and keep
 * registered until the lender releases it, before unmapping.
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

struct pubd_msgbuf;

/* A message's bytes where they lie (a receive buffer), not owned: valid as
 * long as what holds them says. */
struct pubd_msg_view {
	const uint8_t *data;
	size_t len;
};

/*
 * Memory a lender lends from (a publish log's mapping). A fabric that
 * registers it with its device sets reg, fabric and unregister; the owner
 * calls pubd_mem_region_release before it unmaps the memory, and a fabric
 * that goes first (closed, rebuilt) unregisters it itself. A fabric that
 * could not register it (out of locked memory) keeps it with reg NULL:
 * sends copy.
 */
struct pubd_mem_region {
	uint8_t *base;
	size_t len;
	void *reg;
	void *fabric;
	void (*unregister)(struct pubd_mem_region *r);
	struct pubd_mem_region *next_reg, **prev_reg; /* the fabric's list */
};

static inline void pubd_mem_region_release(struct pubd_mem_region *r)
{
	if (r->unregister)
		r->unregister(r);
}

/* Whoever lent a buffer its memory: told once, at the buffer's last put
 * (not after a detach), with the cookie it lent it under. region: the
 * memory it lends from, or NULL (then fabrics copy). */
struct pubd_msgbuf_lender {
	void (*returned)(struct pubd_msgbuf_lender *lender, uint32_t cookie);
	struct pubd_mem_region *region;
	/* Bytes of its loans the transmit queue holds pinned, and at most so
	 * many: past it a queued loan is copied at the turn's end as any other,
	 * so the writer keeps room to go on while its messages wait. */
	uint64_t tx_held, tx_hold_max;
};

struct pubd_msgbuf {
	struct pubd_msgbuf *next_free; /* while on a free list */
	uint32_t refs;
	uint32_t pins; /* of refs, held by the transmit path (queued, or sent in place) */
	uint32_t len;
	uint32_t cls;			   /* size class, or none */
	uint32_t cookie;		   /* the lender's, for a lent buffer */
	uint8_t *data;			   /* the bytes: inline below, lent, or detached */
	struct pubd_msgbuf_lender *lender; /* lent: told at the last put */
	uint8_t *own;			   /* detached: a copy of our own, freed at the last put */
	uint8_t inline_[];
};

/* A buffer of len bytes with one reference, or NULL. Contents uninitialised. */
struct pubd_msgbuf *pubd_msgbuf_alloc(size_t len);
/* The memory m takes as allocated: its header and its inline bytes, rounded
 * up to its size class (not a lent buffer's bytes, nor a detached copy).
 * The same for the buffer's whole life, so it can be charged and given back. */
size_t pubd_msgbuf_footprint(const struct pubd_msgbuf *m);

/*
 * A buffer of len bytes at data, which stays the lender's: valid until the
 * lender's returned() is called or it detaches the buffer. One reference,
 * or NULL when out of memory.
 */
struct pubd_msgbuf *pubd_msgbuf_lend(struct pubd_msgbuf_lender *lender, uint32_t cookie, const uint8_t *data,
				     size_t len);

/* Is the buffer's data still lent (not yet detached)? */
static inline int pubd_msgbuf_is_lent(const struct pubd_msgbuf *m)
{
	return m->lender != NULL;
}

/*
 * The lender takes its memory back while references remain: copy the bytes
 * into a buffer of our own. 0, -ENOMEM or -EBUSY (pinned: a send still
 * reads the lent bytes); the buffer then stays lent.
 */
int pubd_msgbuf_detach(struct pubd_msgbuf *m);

/* The region m's lent bytes lie in, or NULL (not lent, or the lender has none). */
static inline struct pubd_mem_region *pubd_msgbuf_region(const struct pubd_msgbuf *m)
{
	return m->lender ? m->lender->region : NULL;
}

static inline struct pubd_msgbuf *pubd_msgbuf_get(struct pubd_msgbuf *m)
{
	m->refs++;
	return m;
}

/* The last reference went: recycle or free the buffer (and tell its lender). */
void pubd_msgbuf_last_put(struct pubd_msgbuf *m);

/* Drop a reference; the last one recycles or frees the buffer (and tells
 * its lender). NULL is fine. Inline: a message's buffer is put two or three
 * times on its way (publish, queue, send), all but the last a decrement. */
static inline void pubd_msgbuf_put(struct pubd_msgbuf *m)
{
	if (m && !--m->refs)
		pubd_msgbuf_last_put(m);
}

/* A reference held by the transmit path (a queued message, a send reading
 * the lent bytes in place): no detach until the matching unpin. */
static inline void pubd_msgbuf_pin(struct pubd_msgbuf *m)
{
	m->refs++;
	m->pins++;
}

static inline void pubd_msgbuf_unpin(struct pubd_msgbuf *m)
{
	m->pins--;
	pubd_msgbuf_put(m);
}

/* Buffers waiting on the free lists (for tests and status). */
unsigned pubd_msgbuf_cached(void);
/* Give the free lists back to malloc (at exit). */
void pubd_msgbuf_cache_drain(void);

#endif
