/* SPDX-License-Identifier: MIT */
/*
 * Counter names and the per-source statistics map.
 *
 * The map is open addressing with linear probing on a hash of
 * (source, group): lookups happen once per received message, so they must
 * be cheap. Removal shifts the following entries of the probe run back
 * (no tombstones), so lookups stay short however many entries were evicted.
 * Eviction order is two intrusive lists, least recently heard first: one of
 * entries that never delivered a message, one of those that did.
 */
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static const char *const counter_names[] = {
#define PUBD_X_NAME(id, name, help) name,
	PUBD_COUNTERS(PUBD_X_NAME)
#undef PUBD_X_NAME
};

const char *pubd_counter_name(unsigned c)
{
	return c < PUBD_CTR__COUNT ? counter_names[c] : "unknown";
}

static const char *const counter_helps[] = {
#define PUBD_X_HELP(id, name, help) help,
	PUBD_COUNTERS(PUBD_X_HELP)
#undef PUBD_X_HELP
};

const char *pubd_counter_help_by_name(const char *name)
{
	unsigned i;

	for (i = 0; i < PUBD_CTR__COUNT; i++)
		if (!strcmp(counter_names[i], name))
			return counter_helps[i];
	return NULL;
}

uint64_t pubd_drops_msg_total(const struct pubd_drops *d)
{
	uint64_t t = 0;
	unsigned r;

	for (r = 0; r < PUB_DROP__COUNT; r++)
		if (pub_drop_reason_kind(r) == PUB_DROP_KIND_MSG)
			t += d->by_reason[r];
	return t;
}

/* ---- eviction order ---- */

static void lru_del(struct pubd_source_lru *l, struct pubd_source_stats *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		l->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		l->tail = s->prev;
	s->prev = s->next = NULL;
}

static void lru_add_tail(struct pubd_source_lru *l, struct pubd_source_stats *s)
{
	s->next = NULL;
	s->prev = l->tail;
	if (l->tail)
		l->tail->next = s;
	else
		l->head = s;
	l->tail = s;
}

static inline struct pubd_source_lru *lru_of(struct pubd_source_map *m, const struct pubd_source_stats *s)
{
	return s->delivered ? &m->proven : &m->unproven;
}

/* ---- the table ---- */

static uint32_t hash_key(const struct pubd_source_map *m, uint64_t source, uint64_t group)
{
	return (uint32_t)pubd_hash_2u64(&m->key, source, group);
}

static void map_insert(struct pubd_source_map *m, struct pubd_source_stats *s)
{
	uint32_t i = hash_key(m, s->source_id, s->group_id) & (m->cap - 1);

	while (m->slots[i])
		i = (i + 1) & (m->cap - 1);
	m->slots[i] = s;
	m->n++;
}

static int map_grow(struct pubd_source_map *m, uint32_t cap)
{
	struct pubd_source_stats **old = m->slots;
	uint32_t oldcap = m->cap, i;

	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -1;
	}
	m->cap = cap;
	m->n = 0;
	for (i = 0; i < oldcap; i++)
		if (old[i])
			map_insert(m, old[i]);
	free(old);
	return 0;
}

static uint32_t map_find_slot(const struct pubd_source_map *m, uint64_t source, uint64_t group)
{
	const struct pubd_source_stats *s;
	uint32_t i;

	for (i = hash_key(m, source, group) & (m->cap - 1); (s = m->slots[i]); i = (i + 1) & (m->cap - 1))
		if (s->source_id == source && s->group_id == group)
			return i;
	return UINT32_MAX;
}

/* Empty slot i and move later members of its probe run back into the hole
 * where their home slot allows, so every entry stays reachable. */
static void map_remove_slot(struct pubd_source_map *m, uint32_t i)
{
	uint32_t mask = m->cap - 1, j = i, home;

	if (m->hot == m->slots[i])
		m->hot = NULL; /* it goes (its caller frees it) */
	m->slots[i] = NULL;
	m->n--;
	for (;;) {
		j = (j + 1) & mask;
		if (!m->slots[j])
			return;
		home = hash_key(m, m->slots[j]->source_id, m->slots[j]->group_id) & mask;
		/* Movable when home is not cyclically in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			m->slots[j] = NULL;
			i = j;
		}
	}
}

static void evict(struct pubd_source_map *m, struct pubd_source_stats *s)
{
	struct pubd_source_evicted *e = &m->evicted;
	unsigned r;

	map_remove_slot(m, map_find_slot(m, s->source_id, s->group_id));
	lru_del(lru_of(m, s), s);
	e->sources++;
	e->delivered += s->delivered;
	e->bytes += s->bytes;
	for (r = 0; r < PUB_DROP__COUNT; r++)
		e->drops.by_reason[r] += s->drops.by_reason[r];
	free(s);
}

/* The entry to make room with: see stats.h. */
static struct pubd_source_stats *victim(struct pubd_source_map *m, uint64_t now)
{
	struct pubd_source_stats *u = m->unproven.head, *p = m->proven.head, *oldest;
	uint64_t idle = m->idle_ns ? m->idle_ns : PUBD_SOURCE_IDLE_NS_DEFAULT;

	oldest = !u ? p : !p ? u : p->last_seen_ns < u->last_seen_ns ? p : u;
	if (oldest && now > oldest->last_seen_ns && now - oldest->last_seen_ns > idle)
		return oldest;
	return u ? u : p;
}

struct pubd_source_stats *pubd_source_map_find(const struct pubd_source_map *m, uint64_t source, uint64_t group)
{
	uint32_t i;

	if (!m->cap || (i = map_find_slot(m, source, group)) == UINT32_MAX)
		return NULL;
	return m->slots[i];
}

struct pubd_source_stats *pubd_source_map_get_slow(struct pubd_source_map *m, uint64_t source, uint64_t group,
						   uint64_t now_ns)
{
	uint32_t max = m->max ? m->max : PUBD_SOURCE_MAX_DEFAULT, i;
	struct pubd_source_stats *s;

	s = m->hot;
	if ((s && s->source_id == source && s->group_id == group) ||
	    (m->cap && (i = map_find_slot(m, source, group)) != UINT32_MAX && (s = m->slots[i]))) {
		m->hot = s;
		if (s->last_seen_ns != now_ns) {
			struct pubd_source_lru *l = lru_of(m, s);

			if (l->tail != s) {
				lru_del(l, s);
				lru_add_tail(l, s);
			}
			s->last_seen_ns = now_ns;
		}
		return s;
	}
	while (m->n >= max && (s = victim(m, now_ns)))
		evict(m, s);
	/* Keep the load under one half so probes stay short. */
	if ((m->n + 1) * 2 > m->cap && map_grow(m, m->cap ? m->cap * 2 : 64) < 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->source_id = source;
	s->group_id = group;
	s->first_seen_ns = s->last_seen_ns = now_ns;
	map_insert(m, s);
	lru_add_tail(&m->unproven, s);
	return s;
}

void pubd_source_map_delivered_n(struct pubd_source_map *m, struct pubd_source_stats *s, uint64_t n, uint64_t bytes)
{
	if (!n)
		return;
	if (!s->delivered) {
		/* Established now: evicted only after every unproven one. */
		lru_del(&m->unproven, s);
		lru_add_tail(&m->proven, s);
	}
	s->delivered += n;
	s->bytes += bytes;
}

void pubd_source_map_delivered(struct pubd_source_map *m, struct pubd_source_stats *s, uint64_t bytes)
{
	pubd_source_map_delivered_n(m, s, 1, bytes);
}

void pubd_source_map_forget_group(struct pubd_source_map *m, uint64_t group)
{
	uint32_t i = 0;

	/* A removal shifts a later entry into slot i: look at i again. */
	while (i < m->cap) {
		struct pubd_source_stats *s = m->slots[i];

		if (s && s->group_id == group) {
			lru_del(lru_of(m, s), s);
			map_remove_slot(m, i);
			free(s);
			continue;
		}
		i++;
	}
}

void pubd_source_map_free(struct pubd_source_map *m)
{
	uint32_t i;

	for (i = 0; i < m->cap; i++)
		free(m->slots[i]);
	free(m->slots);
	m->slots = NULL;
	m->hot = NULL;
	m->cap = m->n = 0;
	m->unproven.head = m->unproven.tail = m->proven.head = m->proven.tail = NULL;
}
