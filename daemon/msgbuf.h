/* SPDX-License-Identifier: MIT */
/*
 * A reference-counted message body. One buffer is shared by every local
 * subscriber queue it is fanned out to and by the transmit queue, so a
 * message is copied once into pubd (from the publisher's socket or out of
 * reassembly) and never again on its way out.
 *
 * Single-threaded: pubd's loop owns every buffer, so the count is plain.
 */
#ifndef PUBD_MSGBUF_H
#define PUBD_MSGBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct pubd_msgbuf {
	uint32_t refs;
	uint32_t len;
	uint8_t data[];
};

/* A buffer of len bytes with one reference, or NULL. Contents uninitialised. */
static inline struct pubd_msgbuf *pubd_msgbuf_alloc(size_t len)
{
	struct pubd_msgbuf *m;

	if (len > UINT32_MAX)
		return NULL;
	m = malloc(sizeof(*m) + len);
	if (!m)
		return NULL;
	m->refs = 1;
	m->len = (uint32_t)len;
	return m;
}

static inline struct pubd_msgbuf *pubd_msgbuf_get(struct pubd_msgbuf *m)
{
	m->refs++;
	return m;
}

static inline void pubd_msgbuf_put(struct pubd_msgbuf *m)
{
	if (m && --m->refs == 0)
		free(m);
}

#endif
