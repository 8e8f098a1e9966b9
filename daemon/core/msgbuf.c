/* SPDX-License-Identifier: MIT */
/*
 * Message buffers: size classes with bounded free lists (see msgbuf.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msgbuf.h"

#if defined(__SANITIZE_ADDRESS__)
#define PUBD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PUBD_ASAN 1
#endif
#endif
#ifdef PUBD_ASAN
#include <sanitizer/asan_interface.h>
/* A recycled buffer is poisoned while it waits, so a use after the last
 * put is still caught under AddressSanitizer, as it is for free(). */
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define NO_CLASS UINT32_MAX

/* The last class has no inline bytes: the headers of lent buffers. */
static const uint32_t class_size[] = {256, 1024, PUBD_MSGBUF_CLASS_MAX, 0};
#define NCLASSES   (sizeof(class_size) / sizeof(class_size[0]))
#define LENT_CLASS (NCLASSES - 1)

static struct {
	struct pubd_msgbuf *head;
	unsigned n;
} free_lists[NCLASSES];

/* Everything after the free-list link: what a waiting buffer must not touch. */
static void *body_of(struct pubd_msgbuf *m)
{
	return &m->refs;
}

static size_t body_size(uint32_t cls)
{
	return sizeof(struct pubd_msgbuf) - offsetof(struct pubd_msgbuf, refs) + class_size[cls];
}

static struct pubd_msgbuf *take(uint32_t cls, size_t len)
{
	struct pubd_msgbuf *m;

	if (cls != NO_CLASS && free_lists[cls].head) {
		m = free_lists[cls].head;
		free_lists[cls].head = m->next_free;
		free_lists[cls].n--;
		UNPOISON(body_of(m), body_size(cls));
	} else {
		m = malloc(sizeof(*m) + (cls != NO_CLASS ? class_size[cls] : len));
		if (!m)
			return NULL;
	}
	m->next_free = NULL;
	m->refs = 1;
	m->pins = 0;
	m->len = (uint32_t)len;
	m->cls = cls;
	m->cookie = 0;
	m->data = m->inline_;
	m->lender = NULL;
	m->own = NULL;
	return m;
}

struct pubd_msgbuf *pubd_msgbuf_alloc(size_t len)
{
	uint32_t cls = NO_CLASS;

	if (len > UINT32_MAX - sizeof(struct pubd_msgbuf))
		return NULL;
	for (uint32_t c = 0; c < LENT_CLASS; c++) {
		if (len <= class_size[c]) {
			cls = c;
			break;
		}
	}
	return take(cls, len);
}

size_t pubd_msgbuf_footprint(const struct pubd_msgbuf *m)
{
	return sizeof(*m) + (m->cls != NO_CLASS ? class_size[m->cls] : m->len);
}

struct pubd_msgbuf *pubd_msgbuf_lend(struct pubd_msgbuf_lender *lender, uint32_t cookie, const uint8_t *data,
				     size_t len)
{
	struct pubd_msgbuf *m;

	if (len > UINT32_MAX || !(m = take(LENT_CLASS, 0)))
		return NULL;
	m->len = (uint32_t)len;
	/* Nobody writes into a published message: the cast only lets lent
	 * and owned buffers share one type. */
	m->data = (uint8_t *)data;
	m->lender = lender;
	m->cookie = cookie;
	return m;
}

int pubd_msgbuf_detach(struct pubd_msgbuf *m)
{
	uint8_t *copy;

	if (!m->lender)
		return 0;
	if (m->pins)
		return -EBUSY;
	copy = malloc(m->len ? m->len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, m->data, m->len);
	m->own = m->data = copy;
	m->lender = NULL;
	return 0;
}

void pubd_msgbuf_last_put(struct pubd_msgbuf *m)
{
	uint32_t cls;

	if (m->lender)
		m->lender->returned(m->lender, m->cookie);
	else if (m->own)
		free(m->own);
	cls = m->cls;
	if (cls == NO_CLASS || free_lists[cls].n >= PUBD_MSGBUF_CACHE_PER_CLASS) {
		free(m);
		return;
	}
	m->next_free = free_lists[cls].head;
	free_lists[cls].head = m;
	free_lists[cls].n++;
	POISON(body_of(m), body_size(cls));
}

unsigned pubd_msgbuf_cached(void)
{
	unsigned n = 0;

	for (unsigned c = 0; c < NCLASSES; c++)
		n += free_lists[c].n;
	return n;
}

void pubd_msgbuf_cache_drain(void)
{
	for (unsigned c = 0; c < NCLASSES; c++) {
		while (free_lists[c].head) {
			struct pubd_msgbuf *m = free_lists[c].head;

			free_lists[c].head = m->next_free;
			UNPOISON(body_of(m), body_size(c));
			free(m);
		}
		free_lists[c].n = 0;
	}
}
