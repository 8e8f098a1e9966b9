/* SPDX-License-Identifier: MIT */
/*
 * Counter names and the per-source statistics map.
 *
 * The map is open addressing with linear probing on a hash of
 * (source, group): lookups happen once per received message, so they must
 * be cheap; it only grows (a removed group's entries are rehashed away).
 */
#include <stdlib.h>

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

uint64_t pubd_drops_msg_total(const struct pubd_drops *d)
{
	uint64_t t = 0;
	unsigned r;

	for (r = 0; r < PUB_DROP__COUNT; r++)
		if (pub_drop_reason_kind(r) == PUB_DROP_KIND_MSG)
			t += d->by_reason[r];
	return t;
}

static uint32_t hash_key(uint64_t source, uint64_t group)
{
	uint64_t h = source * 0x9e3779b97f4a7c15ull ^ (group + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;

	return (uint32_t)(h ^ (h >> 29));
}

static int map_insert(struct pubd_source_map *m, struct pubd_source_stats *s)
{
	uint32_t i = hash_key(s->source_id, s->group_id) & (m->cap - 1);

	while (m->slots[i])
		i = (i + 1) & (m->cap - 1);
	m->slots[i] = s;
	m->n++;
	return 0;
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

struct pubd_source_stats *pubd_source_map_get(struct pubd_source_map *m, uint64_t source, uint64_t group)
{
	struct pubd_source_stats *s;
	uint32_t i;

	if (m->cap) {
		for (i = hash_key(source, group) & (m->cap - 1); (s = m->slots[i]); i = (i + 1) & (m->cap - 1))
			if (s->source_id == source && s->group_id == group)
				return s;
	}
	/* Keep the load under one half so probes stay short. */
	if ((m->n + 1) * 2 > m->cap && map_grow(m, m->cap ? m->cap * 2 : 64) < 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->source_id = source;
	s->group_id = group;
	map_insert(m, s);
	return s;
}

void pubd_source_map_forget_group(struct pubd_source_map *m, uint64_t group)
{
	struct pubd_source_stats **old = m->slots;
	uint32_t oldcap = m->cap, i;

	if (!oldcap)
		return;
	m->slots = calloc(oldcap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old; /* keep the stale entries rather than lose the map */
		return;
	}
	m->n = 0;
	for (i = 0; i < oldcap; i++) {
		if (!old[i])
			continue;
		if (old[i]->group_id == group)
			free(old[i]);
		else
			map_insert(m, old[i]);
	}
	free(old);
}

void pubd_source_map_free(struct pubd_source_map *m)
{
	uint32_t i;

	for (i = 0; i < m->cap; i++)
		free(m->slots[i]);
	free(m->slots);
	m->slots = NULL;
	m->cap = m->n = 0;
}
