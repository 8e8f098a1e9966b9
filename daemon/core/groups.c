/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"
#include "grow.h"
#include "mix.h"
#include "wire.h"

/* Where id's probe starts. The id is FNV-1a of the name; its low bits are
 * mixed with the high ones so similar names spread. */
static inline unsigned ix_home(const struct pubd_groups *gs, uint64_t id)
{
	return (unsigned)pub_mix64(id) & gs->ix_mask;
}

static void ix_put(struct pubd_groups *gs, struct pubd_group *g)
{
	unsigned i = ix_home(gs, g->id);

	while (gs->ix[i])
		i = (i + 1) & gs->ix_mask;
	gs->ix[i] = g;
}

/* Room for one more at load 1/2 at most. */
static int ix_reserve(struct pubd_groups *gs)
{
	struct pubd_group **old = gs->ix;
	unsigned oldcap = old ? gs->ix_mask + 1 : 0, cap = oldcap ? oldcap : 16, i;

	while ((gs->count + 1) * 2 > cap)
		cap *= 2;
	if (cap == oldcap)
		return 0;
	gs->ix = calloc(cap, sizeof(*gs->ix));
	if (!gs->ix) {
		gs->ix = old;
		return -ENOMEM;
	}
	gs->ix_mask = cap - 1;
	for (i = 0; i < oldcap; i++)
		if (old[i])
			ix_put(gs, old[i]);
	free(old);
	return 0;
}

/* Take g out, moving later members of its probe run back where their home
 * allows, so every entry stays reachable without tombstones. */
static void ix_del(struct pubd_groups *gs, const struct pubd_group *g)
{
	unsigned mask = gs->ix_mask, i = ix_home(gs, g->id), j, home;

	while (gs->ix[i] && gs->ix[i] != g)
		i = (i + 1) & mask;
	if (!gs->ix[i])
		return;
	gs->ix[i] = NULL;
	for (j = i;;) {
		j = (j + 1) & mask;
		if (!gs->ix[j])
			return;
		home = ix_home(gs, gs->ix[j]->id);
		/* Movable when home is not cyclically in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			gs->ix[i] = gs->ix[j];
			gs->ix[j] = NULL;
			i = j;
		}
	}
}

struct pubd_group *pubd_groups_add(struct pubd_groups *gs, const struct pubd_group_config *cfg)
{
	struct pubd_group *g, **v;
	size_t len = strlen(cfg->name);
	unsigned slot;

	if (len > PUB_GROUP_NAME_MAX || ix_reserve(gs) < 0)
		return NULL;
	/* The lowest free slot, as before the index: a fabric slot's number
	 * stays small, and a group made anew often takes its old one. */
	for (slot = gs->free_from; slot < gs->n; slot++)
		if (!gs->v[slot])
			break;
	if (slot == gs->n) {
		/* By doubling: one copy per group was quadratic. */
		v = pub_grow(gs->v, gs->n, &gs->cap, sizeof(*v), 16);
		if (!v)
			return NULL;
		gs->v = v;
		gs->v[gs->n++] = NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	memcpy(g->name, cfg->name, len);
	g->name_len = len;
	g->id = pubd_group_id(cfg->name, len);
	g->slot = (int)slot;
	g->cfg = cfg;
	g->addr = cfg->address;
	g->addrlen = cfg->address_len;
	g->raw = cfg->raw;
	g->host = cfg->scope == PUBD_SCOPE_HOST;
	g->mode = pubd_group_join_mode(cfg);
	gs->v[slot] = g;
	gs->free_from = slot + 1;
	gs->count++;
	ix_put(gs, g);
	return g;
}

void pubd_groups_remove(struct pubd_groups *gs, struct pubd_group *g)
{
	if (!g)
		return;
	if (pubd_groups_by_slot(gs, g->slot) == g) {
		gs->v[g->slot] = NULL;
		if ((unsigned)g->slot < gs->free_from)
			gs->free_from = (unsigned)g->slot;
		gs->count--;
		gs->up -= g->up;
		ix_del(gs, g);
	}
	free(g->subs);
	free(g);
}

void pubd_groups_free(struct pubd_groups *gs)
{
	unsigned i;

	for (i = 0; i < gs->n; i++) {
		if (gs->v[i]) {
			free(gs->v[i]->subs);
			free(gs->v[i]);
		}
	}
	free(gs->v);
	free(gs->ix);
	*gs = (struct pubd_groups){0};
}

struct pubd_group *pubd_groups_by_id(const struct pubd_groups *gs, uint64_t id)
{
	struct pubd_group *g;
	unsigned i;

	if (!gs->ix)
		return NULL;
	for (i = ix_home(gs, id); (g = gs->ix[i]); i = (i + 1) & gs->ix_mask)
		if (g->id == id)
			return g;
	return NULL;
}

struct pubd_group *pubd_groups_by_name(const struct pubd_groups *gs, const char *name, size_t len)
{
	uint64_t id = pubd_group_id(name, len);
	struct pubd_group *g;
	unsigned i;

	if (!gs->ix)
		return NULL;
	/* Two names with one id (FNV-1a collides, rarely) are both in the run. */
	for (i = ix_home(gs, id); (g = gs->ix[i]); i = (i + 1) & gs->ix_mask)
		if (g->id == id && g->name_len == len && memcmp(g->name, name, len) == 0)
			return g;
	return NULL;
}

struct pubd_sub *pubd_group_sub_add(struct pubd_group *g, struct pubd_client *c)
{
	struct pubd_sub *s, **v;

	v = pub_grow(g->subs, g->nsubs, &g->subs_cap, sizeof(*v), 4);
	if (!v)
		return NULL;
	g->subs = v;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->client = c;
	s->group = g;
	g->subs[g->nsubs++] = s;
	return s;
}

void pubd_group_sub_remove(struct pubd_group *g, struct pubd_sub *s)
{
	unsigned i;

	for (i = 0; i < g->nsubs; i++) {
		if (g->subs[i] == s) {
			g->subs[i] = g->subs[--g->nsubs];
			break;
		}
	}
	free(s);
}

enum pubd_join_mode pubd_group_join_mode(const struct pubd_group_config *cfg)
{
	if (cfg->subscribe.present && cfg->subscribe.n == 0)
		return PUBD_JOIN_SEND;
	return PUBD_JOIN_BOTH;
}
