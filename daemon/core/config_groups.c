/* SPDX-License-Identifier: MIT */
/*
 * The groups section: a list of groups, each a mapping of the group keys
 * (name and address required), and the check that no name is given twice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

static void walk_group(struct parse *p, const yaml_node_t *gn, size_t index, struct pubd_group_config *g)
{
	struct seen seen[NKEYS] = {0};
	char prefix[32], got[GOT_BUF];
	size_t i;

	snprintf(prefix, sizeof(prefix), "groups[%zu]", index);
	if (gn->type != YAML_MAPPING_NODE) {
		report(p, gn->start_mark, "%s: expected a mapping with name and address, got %s", prefix,
		       cfg_describe(gn, got, sizeof(got)));
		return;
	}
	cfg_walk_keys(p, gn, S_GROUP, "groups", prefix, g, seen);
	for (i = 0; i < NKEYS && !p->stop; i++)
		if (config_keys[i].scope == S_GROUP && config_keys[i].required && !seen[i].given)
			report(p, gn->start_mark, "%s: missing key \"%s\" (expected %s)", prefix,
			       config_keys[i].path + strlen("groups."), config_keys[i].expect);
	if (g->name)
		p->name_marks[index] = seen[cfg_find_key(S_GROUP, "groups", "name") - config_keys].mark;
}

void cfg_walk_groups(struct parse *p, const yaml_node_t *v)
{
	struct pubd_config *c = p->c;
	char got[GOT_BUF];
	size_t n, i;

	if (cfg_is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		report(p, v->start_mark, "groups: expected a list of groups, got %s",
		       cfg_describe(v, got, sizeof(got)));
		return;
	}
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (!n)
		return;
	c->groups = calloc(n, sizeof(*c->groups));
	p->name_marks = calloc(n, sizeof(*p->name_marks));
	if (!c->groups || !p->name_marks) {
		p->oom = p->stop = true;
		return;
	}
	c->ngroups = n;
	for (i = 0; i < n && !p->stop; i++) {
		yaml_node_t *gn = cfg_node(p, v->data.sequence.items.start[i]);

		/* A group's defaults come from the table, like every key's. */
		if (cfg_apply_defaults(S_GROUP, &c->groups[i])) {
			p->oom = p->stop = true;
			return;
		}
		if (gn)
			walk_group(p, gn, i, &c->groups[i]);
	}
}

static int cmp_name(const void *a, const void *b)
{
	const struct pubd_group_config *const *ga = a, *const *gb = b;
	int r = strcmp((*ga)->name, (*gb)->name);

	if (r)
		return r;
	return *ga < *gb ? -1 : *ga > *gb; /* by position: the first stays first */
}

/* Duplicate names, by sorting (n log n: aliases can make n large). */
void cfg_check_group_names(struct parse *p)
{
	struct pubd_config *c = p->c;
	const struct pubd_group_config **v;
	size_t n = 0, i, first = 0, a, b;
	char got[GOT_BUF];

	if (!c->ngroups)
		return;
	v = calloc(c->ngroups, sizeof(*v));
	if (!v) {
		p->oom = p->stop = true;
		return;
	}
	for (i = 0; i < c->ngroups; i++)
		if (c->groups[i].name)
			v[n++] = &c->groups[i];
	qsort(v, n, sizeof(*v), cmp_name);
	for (i = 1; i < n; i++) {
		if (strcmp(v[i]->name, v[first]->name)) {
			first = i;
			continue;
		}
		a = (size_t)(v[first] - c->groups);
		b = (size_t)(v[i] - c->groups);
		report(p, p->name_marks[b],
		       "groups[%zu].name: duplicate group %s, first defined at %u:%u (groups[%zu])", b,
		       cfg_describe_name(v[i]->name, got, sizeof(got)), (unsigned)p->name_marks[a].line + 1,
		       (unsigned)p->name_marks[a].column + 1, a);
	}
	free(v);
}

const struct pubd_group_config *pubd_config_group(const struct pubd_config *c, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < c->ngroups; i++)
		if (c->groups[i].name && strlen(c->groups[i].name) == len && !memcmp(c->groups[i].name, name, len))
			return &c->groups[i];
	return NULL;
}
