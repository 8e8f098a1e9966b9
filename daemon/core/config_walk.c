/* SPDX-License-Identifier: MIT */
/*
 * The walk of the YAML node tree: the root's sections, each section's keys
 * (looked up in config_keys[], each value handed to cfg_leaf). The walk's
 * depth is fixed by the schema, so anchors and aliases cannot make it
 * recurse, only repeat: cfg_node counts every node visited against a budget.
 */
#include <stdio.h>
#include <string.h>

#include "config_internal.h"

/* Nodes visited, aliases counted each time: a few MiB of YAML cannot reach it
 * without aliases fanning out. */
#define MAX_VISITS (1u << 20)

yaml_node_t *cfg_node(struct parse *p, int index)
{
	yaml_node_t *n = yaml_document_get_node(p->doc, index);

	if (n && ++p->visits > MAX_VISITS && !p->stop) {
		report(p, n->start_mark, "too many values (more than %u, counting each use of an alias)", MAX_VISITS);
		p->stop = true;
	}
	return p->stop ? NULL : n;
}

bool cfg_is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	size_t i;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	for (i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (n->data.scalar.length == strlen(nulls[i]) &&
		    !memcmp(n->data.scalar.value, nulls[i], n->data.scalar.length))
			return true;
	return false;
}

/* The scalar as a C string, or NULL when it is not a scalar or holds a NUL
 * (a "\0" escape), which no key accepts. */
const char *cfg_scalar(const yaml_node_t *n)
{
	const char *s;

	if (n->type != YAML_SCALAR_NODE)
		return NULL;
	s = (const char *)n->data.scalar.value;
	return memchr(s, 0, n->data.scalar.length) ? NULL : s;
}

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

/* Walk one mapping of keys: a section of the config, or one group. */
void cfg_walk_keys(struct parse *p, const yaml_node_t *map, enum key_scope scope, const char *section,
		   const char *prefix, void *base, struct seen *seen)
{
	char path[128], known[300], got[GOT_BUF];
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
		if (cfg_leaf(p, k, vn, base, path))
			seen[ki].bad = true;
	}
}

void cfg_walk_root(struct parse *p, const yaml_node_t *root)
{
	char got[GOT_BUF];
	yaml_node_pair_t *pair;
	size_t s;

	if (!root || cfg_is_null(root))
		return; /* empty file: all defaults */
	if (root->type != YAML_MAPPING_NODE) {
		report(p, root->start_mark, "expected a mapping of sections (daemon, fabric, limits, groups), got %s",
		       cfg_describe(root, got, sizeof(got)));
		return;
	}
	for (pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top && !p->stop; pair++) {
		yaml_node_t *kn = cfg_node(p, pair->key), *vn = cfg_node(p, pair->value);
		const char *name;

		if (!kn || !vn)
			return;
		name = cfg_key_name(p, kn, "top level");
		if (!name)
			continue;
		for (s = 0; s < NSECTIONS && strcmp(name, config_sections[s]); s++)
			;
		if (s == NSECTIONS) {
			report(p, kn->start_mark, "unknown section %s (expected daemon, fabric, limits or groups)",
			       cfg_describe(kn, got, sizeof(got)));
			continue;
		}
		if (cfg_given_twice(p, &p->section_seen[s], kn, name))
			continue;
		p->section_seen[s].given = true;
		p->section_seen[s].mark = kn->start_mark;
		if (!strcmp(name, "groups")) {
			cfg_walk_groups(p, vn);
		} else if (vn->type == YAML_MAPPING_NODE) {
			cfg_walk_keys(p, vn, S_CONFIG, name, name, p->c, p->seen);
		} else if (!cfg_is_null(vn)) {
			report(p, vn->start_mark, "%s: expected a mapping of keys, got %s", name,
			       cfg_describe(vn, got, sizeof(got)));
		}
	}
}
