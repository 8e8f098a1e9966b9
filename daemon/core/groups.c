/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"
#include "wire.h"

struct pubd_group *pubd_groups_add(struct pubd_groups *gs, const struct pubd_group_config *cfg)
{
	struct pubd_group *g, **v;
	size_t len = strlen(cfg->name);
	unsigned slot;

	if (len > PUB_GROUP_NAME_MAX)
		return NULL;
	for (slot = 0; slot < gs->n; slot++)
		if (!gs->v[slot])
			break;
	if (slot == gs->n) {
		v = realloc(gs->v, (gs->n + 1) * sizeof(*v));
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
	return g;
}

void pubd_groups_remove(struct pubd_groups *gs, struct pubd_group *g)
{
	if (!g)
		return;
	if (pubd_groups_by_slot(gs, g->slot) == g)
		gs->v[g->slot] = NULL;
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
	gs->v = NULL;
	gs->n = 0;
}

struct pubd_group *pubd_groups_by_name(const struct pubd_groups *gs, const char *name, size_t len)
{
	uint64_t id = pubd_group_id(name, len);
	struct pubd_group *g;
	unsigned i;

	pubd_groups_foreach(gs, g, i)
	{
		if (g->id == id && g->name_len == len && memcmp(g->name, name, len) == 0)
			return g;
	}
	return NULL;
}

struct pubd_group *pubd_groups_by_id(const struct pubd_groups *gs, uint64_t id)
{
	struct pubd_group *g;
	unsigned i;

	pubd_groups_foreach(gs, g, i)
	{
		if (g->id == id)
			return g;
	}
	return NULL;
}

struct pubd_sub *pubd_group_sub_add(struct pubd_group *g, struct pubd_client *c)
{
	struct pubd_sub *s, **v;

	if (g->nsubs == g->subs_cap) {
		unsigned cap = g->subs_cap ? g->subs_cap * 2 : 4;

		v = realloc(g->subs, cap * sizeof(*v));
		if (!v)
			return NULL;
		g->subs = v;
		g->subs_cap = cap;
	}
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
