/* SPDX-License-Identifier: MIT */
#include "ah_cache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct pubd_ah_entry {
	struct pubd_ud_addr key;
	void *handle;	  /* NULL: a failed creation, remembered */
	int err;	  /* its error */
	uint64_t until;	  /* handle: rebuild after; failure: try again after */
	int32_t next;	  /* hash chain, or the free list */
	int32_t prev_lru; /* towards the most recently used */
	int32_t next_lru; /* towards the least recently used */
};

#define NIL (-1)

static uint32_t hash_addr(const struct pubd_ah_cache *c, const struct pubd_ud_addr *a)
{
	return (uint32_t)pubd_hash_bytes(&c->cfg.hash_key, a, sizeof(*a));
}

static void lru_unlink(struct pubd_ah_cache *c, int32_t i)
{
	struct pubd_ah_entry *e = &c->e[i];

	if (e->prev_lru != NIL)
		c->e[e->prev_lru].next_lru = e->next_lru;
	else
		c->lru_head = e->next_lru;
	if (e->next_lru != NIL)
		c->e[e->next_lru].prev_lru = e->prev_lru;
	else
		c->lru_tail = e->prev_lru;
	e->prev_lru = e->next_lru = NIL;
}

static void lru_push_front(struct pubd_ah_cache *c, int32_t i)
{
	struct pubd_ah_entry *e = &c->e[i];

	e->prev_lru = NIL;
	e->next_lru = c->lru_head;
	if (c->lru_head != NIL)
		c->e[c->lru_head].prev_lru = i;
	c->lru_head = i;
	if (c->lru_tail == NIL)
		c->lru_tail = i;
}

static int32_t *chain_slot(struct pubd_ah_cache *c, const struct pubd_ud_addr *a)
{
	return &c->bucket[hash_addr(c, a) & (c->nbucket - 1)];
}

/* Take entry i out of the cache, its handle destroyed, onto the free list. */
static void drop(struct pubd_ah_cache *c, int32_t i)
{
	struct pubd_ah_entry *e = &c->e[i];
	int32_t *p = chain_slot(c, &e->key);

	while (*p != i)
		p = &c->e[*p].next;
	*p = e->next;
	lru_unlink(c, i);
	if (e->handle)
		c->ops->destroy(c->ctx, e->handle);
	e->handle = NULL;
	e->next = c->free_head;
	c->free_head = i;
	c->used--;
}

int pubd_ah_cache_init(struct pubd_ah_cache *c, const struct pubd_ah_cache_cfg *cfg,
		       const struct pubd_ah_cache_ops *ops, void *ctx, uint64_t now)
{
	uint32_t cap = cfg->cap ? cfg->cap : 1;

	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->cfg.cap = cap;
	c->ops = ops;
	c->ctx = ctx;
	c->nbucket = 2;
	while (c->nbucket < 2 * cap)
		c->nbucket *= 2;
	c->e = calloc(cap, sizeof(*c->e));
	c->bucket = malloc(c->nbucket * sizeof(*c->bucket));
	if (!c->e || !c->bucket) {
		pubd_ah_cache_close(c);
		return -ENOMEM;
	}
	for (uint32_t b = 0; b < c->nbucket; b++)
		c->bucket[b] = NIL;
	c->lru_head = c->lru_tail = NIL;
	for (uint32_t i = 0; i < cap; i++)
		c->e[i].next = i + 1 < cap ? (int32_t)(i + 1) : NIL;
	c->free_head = 0;
	pubd_pacer_init(&c->pace, now, cfg->new_per_sec, cfg->new_per_sec);
	return 0;
}

void pubd_ah_cache_flush(struct pubd_ah_cache *c)
{
	while (c->e && c->lru_head != NIL)
		drop(c, c->lru_head);
}

void pubd_ah_cache_close(struct pubd_ah_cache *c)
{
	pubd_ah_cache_flush(c);
	free(c->e);
	free(c->bucket);
	c->e = NULL;
	c->bucket = NULL;
	c->used = 0;
}

static int32_t find(struct pubd_ah_cache *c, const struct pubd_ud_addr *a)
{
	for (int32_t i = *chain_slot(c, a); i != NIL; i = c->e[i].next)
		if (memcmp(&c->e[i].key, a, sizeof(*a)) == 0)
			return i;
	return NIL;
}

/* A free entry for a, the least recently used given up when full. */
static int32_t take_entry(struct pubd_ah_cache *c, const struct pubd_ud_addr *a)
{
	int32_t i, *p;

	if (c->free_head == NIL) {
		c->st.evicted++;
		drop(c, c->lru_tail);
	}
	i = c->free_head;
	c->free_head = c->e[i].next;
	c->e[i].key = *a;
	p = chain_slot(c, a);
	c->e[i].next = *p;
	*p = i;
	lru_push_front(c, i);
	c->used++;
	return i;
}

/* May a handle be created now? Takes one from the pace. */
static bool may_create(struct pubd_ah_cache *c, uint64_t now)
{
	return !c->cfg.new_per_sec || pubd_pacer_take(&c->pace, now, 1) == 0;
}

/* A new handle for a (the pace allowed it), or a remembered failure. */
static void *create(struct pubd_ah_cache *c, const struct pubd_ud_addr *a, uint64_t now, int *err)
{
	struct pubd_ah_entry *e;
	void *h;
	int ret = -EIO;

	h = c->ops->create(c->ctx, a, &ret);
	e = &c->e[take_entry(c, a)];
	e->handle = h;
	if (!h) {
		c->st.failed++;
		e->err = ret < 0 ? ret : -EIO;
		e->until = now + c->cfg.fail_hold_ns;
		*err = e->err;
		return NULL;
	}
	c->st.created++;
	e->err = 0;
	e->until = c->cfg.max_age_ns ? now + c->cfg.max_age_ns : UINT64_MAX;
	return h;
}

void *pubd_ah_cache_get(struct pubd_ah_cache *c, const struct pubd_ud_addr *a, uint64_t now, int *err)
{
	int32_t i;

	*err = 0;
	if (!c->e) {
		*err = -ENOMEM;
		return NULL;
	}
	i = find(c, a);
	if (i != NIL) {
		struct pubd_ah_entry *e = &c->e[i];

		if (now < e->until) {
			lru_unlink(c, i);
			lru_push_front(c, i);
			if (e->handle) {
				c->st.hits++;
				return e->handle;
			}
			c->st.held++;
			*err = e->err;
			return NULL;
		}
		/* Too old, or its failure held long enough: build again. An
		 * old handle serves on while creations are paced. */
		if (!may_create(c, now)) {
			c->st.paced++;
			if (e->handle) {
				lru_unlink(c, i);
				lru_push_front(c, i);
				return e->handle;
			}
			*err = -EAGAIN;
			return NULL;
		}
		if (e->handle)
			c->st.expired++;
		drop(c, i);
		return create(c, a, now, err);
	}
	if (!may_create(c, now)) {
		c->st.paced++;
		*err = -EAGAIN;
		return NULL;
	}
	return create(c, a, now, err);
}

uint32_t pubd_ah_cache_size(const struct pubd_ah_cache *c)
{
	return c->used;
}
