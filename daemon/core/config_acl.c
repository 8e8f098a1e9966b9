/* SPDX-License-Identifier: MIT */
/*
 * ACLs: reading a key's list of entries (any, uid:N, gid:N, user:NAME,
 * group:NAME, names resolved through the caller's resolver), and the pure
 * check of a peer's credentials against one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

static int parse_id(const char *s, uint32_t *id)
{
	uint64_t v;

	/* (uid_t)-1 means "no id" to the kernel (setreuid, chown). */
	if (cfg_parse_u64(s, strlen(s), &v) || v >= UINT32_MAX)
		return -EINVAL;
	*id = (uint32_t)v;
	return 0;
}

static int resolve(struct parse *p, const yaml_node_t *n, const char *path, bool user, const char *name, uint32_t *id)
{
	const char *what = user ? "user" : "group";
	char got[GOT_BUF];
	int ret;

	if (!p->res || !(user ? p->res->user : p->res->group)) {
		report(p, n->start_mark, "%s: cannot resolve %s names here; use %s", path, what,
		       user ? "uid:N" : "gid:N");
		return -EINVAL;
	}
	ret = user ? p->res->user(p->res->ctx, name, id) : p->res->group(p->res->ctx, name, id);
	if (ret == -ENOENT)
		report(p, n->start_mark, "%s: unknown %s %s", path, what, cfg_describe_name(name, got, sizeof(got)));
	else if (ret)
		report(p, n->start_mark, "%s: cannot look up %s %s: %s", path, what,
		       cfg_describe_name(name, got, sizeof(got)), strerror(-ret));
	return ret ? -EINVAL : 0;
}

static int acl_entry(struct parse *p, const yaml_node_t *n, const char *path, struct pubd_acl_entry *e)
{
	const char *s = cfg_scalar(n);
	char got[GOT_BUF];

	if (s && !strcmp(s, "any")) {
		e->kind = PUBD_ACL_ANY;
		e->id = 0;
		return 0;
	}
	if (s && !strncmp(s, "uid:", 4) && !parse_id(s + 4, &e->id)) {
		e->kind = PUBD_ACL_UID;
		return 0;
	}
	if (s && !strncmp(s, "gid:", 4) && !parse_id(s + 4, &e->id)) {
		e->kind = PUBD_ACL_GID;
		return 0;
	}
	if (s && !strncmp(s, "user:", 5) && s[5]) {
		e->kind = PUBD_ACL_UID;
		return resolve(p, n, path, true, s + 5, &e->id);
	}
	if (s && !strncmp(s, "group:", 6) && s[6]) {
		e->kind = PUBD_ACL_GID;
		return resolve(p, n, path, false, s + 6, &e->id);
	}
	/* "- uid: 1000" is a mapping to YAML; say how to write it. */
	if (n->type == YAML_MAPPING_NODE && n->data.mapping.pairs.top - n->data.mapping.pairs.start == 1)
		report(p, n->start_mark,
		       "%s: expected an ACL entry (any, uid:N, gid:N, user:NAME, group:NAME), "
		       "got a mapping; write it without a space after the colon",
		       path);
	else
		report(p, n->start_mark,
		       "%s: expected an ACL entry (any, uid:N, gid:N, user:NAME, group:NAME; N from 0 to "
		       "4294967294), got %s",
		       path, cfg_describe(n, got, sizeof(got)));
	return -EINVAL;
}

int cfg_acl_list(struct parse *p, const struct key *k, const yaml_node_t *v, struct pubd_acl *acl, const char *path)
{
	struct pubd_acl_entry *entries = NULL;
	size_t n, m = 0, i;
	char ipath[160], got[GOT_BUF];
	int ret = 0;

	/* A bare "publish:" is null: reject it rather than guess between
	 * "anyone" (absent) and "no one" ([]). */
	if (v->type != YAML_SEQUENCE_NODE) {
		report(p, v->start_mark, "%s: expected %s, got %s", path, k->expect, cfg_describe(v, got, sizeof(got)));
		return -EINVAL;
	}
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (n) {
		entries = calloc(n, sizeof(*entries));
		if (!entries) {
			p->oom = p->stop = true;
			return -ENOMEM;
		}
	}
	for (i = 0; i < n; i++) {
		yaml_node_t *item = cfg_node(p, v->data.sequence.items.start[i]);

		if (!item)
			break;
		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		if (acl_entry(p, item, ipath, &entries[m]))
			ret = -EINVAL;
		else
			m++;
	}
	free(acl->entries);
	acl->entries = entries;
	acl->n = m;
	acl->present = true;
	return ret;
}

void cfg_acl_free(struct pubd_acl *a)
{
	free(a->entries);
	a->entries = NULL;
	a->n = 0;
}

bool pubd_acl_same(const struct pubd_acl *a, const struct pubd_acl *b)
{
	return a->present == b->present && a->n == b->n &&
	       (!a->n || !memcmp(a->entries, b->entries, a->n * sizeof(*a->entries)));
}

bool pubd_acl_allows(const struct pubd_acl *acl, uint32_t uid, uint32_t gid, const uint32_t *groups, size_t ngroups)
{
	size_t i, j;

	if (!acl || !acl->present)
		return true;
	for (i = 0; i < acl->n; i++) {
		const struct pubd_acl_entry *e = &acl->entries[i];

		switch (e->kind) {
		case PUBD_ACL_ANY:
			return true;
		case PUBD_ACL_UID:
			if (e->id == uid)
				return true;
			break;
		case PUBD_ACL_GID:
			if (e->id == gid)
				return true;
			for (j = 0; j < ngroups; j++)
				if (groups[j] == e->id)
					return true;
			break;
		}
	}
	return false;
}
