/* SPDX-License-Identifier: MIT */
/*
 * The walk of one mapping of keys (a section of the config, or one group):
 * each key looked up in config_keys[], given at most once, its value handed
 * to cfg_leaf. The root's sections are walked from config.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config_internal.h"

/* The key's name, or NULL after reporting a key that is not a plain name. */
const char *cfg_key_name(struct parse *p, const yaml_node_t *kn, const char *where)
{
	char got[GOT_BUF];
	const char *s = cfg_scalar(kn);

	if (!s || cfg_is_null(kn)) {
		report(p, kn->start_mark, "%s: expected a key name, got %s", where, cfg_describe(kn, got, sizeof(got)));
		return NULL;
	}
	return s;
}

bool cfg_given_twice(struct parse *p, struct seen *seen, const yaml_node_t *kn, const char *path)
{
	if (!seen->given)
		return false;
	report(p, kn->start_mark, "%s: given twice (first at %u:%u)", path, (unsigned)seen->mark.line + 1,
	       (unsigned)seen->mark.column + 1);
	return true;
}

/*
 * groups.repair given as a mapping: on, with the groups.repair.* keys it
 * names, each checked like any key. Returns -EINVAL if one was bad.
 */
static int walk_repair(struct parse *p, const struct key *k, const yaml_node_t *v, void *base, const char *path)
{
	struct seen seen[NKEYS] = {0};
	size_t before = p->errs ? p->errs->n : 0;

	cfg_store_uint((char *)base + k->off, k->size, 1);
	cfg_walk_keys(p, v, S_GROUP, "groups.repair", path, base, seen);
	return p->errs && p->errs->n != before ? -EINVAL : 0;
}

/* Walk one mapping of keys: a section of the config, or one group. */
void cfg_walk_keys(struct parse *p, const yaml_node_t *map, enum key_scope scope, const char *section,
		   const char *prefix, void *base, struct seen *seen)
{
	char path[128], known[512], got[GOT_BUF];
	yaml_node_pair_t *pair;

	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top && !p->stop; pair++) {
		yaml_node_t *kn = cfg_node(p, pair->key), *vn = cfg_node(p, pair->value);
		const struct key *k;
		const char *name;
		size_t ki;

		if (!kn || !vn)
			return;
		name = cfg_key_name(p, kn, prefix);
		if (!name)
			continue;
		k = cfg_find_key(scope, section, name);
		if (!k) {
			cfg_known_keys(section, known, sizeof(known));
			report(p, kn->start_mark, "%s: unknown key %s (expected one of %s)", prefix,
			       cfg_describe(kn, got, sizeof(got)), known);
			continue;
		}
		snprintf(path, sizeof(path), "%s.%s", prefix, name);
		ki = (size_t)(k - config_keys);
		if (cfg_given_twice(p, &seen[ki], kn, path))
			continue;
		seen[ki].given = true;
		seen[ki].mark = vn->start_mark;
		if (k->type == K_REPAIR && vn->type == YAML_MAPPING_NODE ? walk_repair(p, k, vn, base, path)
									 : cfg_leaf(p, k, vn, base, path))
			seen[ki].bad = true;
	}
}
