/* SPDX-License-Identifier: MIT */
/*
 * What the pieces of the config loader share (config.h is the public API):
 * the table of keys (config_keys.c), the state of one parse, and the
 * helpers each piece offers the others. Only config*.c include it.
 */
#ifndef PUBD_CONFIG_INTERNAL_H
#define PUBD_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "config.h"

#define GOT_MAX 48 /* bytes of an offending value quoted in a message */
#define GOT_BUF (GOT_MAX * 4 + 16)

enum key_type {
	K_PATH,	      /* absolute path, 1..max bytes */
	K_MODE,	      /* octal permission bits, 0..max */
	K_ENUM,	      /* one of names[] */
	K_UINT,	      /* decimal integer, min..max */
	K_DURATION,   /* milliseconds, decimal integer, min..max */
	K_SIZE,	      /* bytes, optionally KiB/MiB/GiB, min..max */
	K_BOOL,	      /* true/false, yes/no, on/off */
	K_MTU,	      /* auto (0) or a size, min..max */
	K_RATE,	      /* off (0) or a size per second, optionally "/s", min..max */
	K_ADDRESS,    /* local IP literal or interface name; null: none */
	K_GROUP_NAME, /* 1..max bytes, no control characters */
	K_MCAST,      /* IPv4 or IPv6 multicast address */
	K_ACL,	      /* list of ACL entries */
	K_LISTEN,     /* "HOST:PORT" or "[IPV6]:PORT" to listen on; null: none */
	K_REPAIR,     /* off, or a mapping of the groups.repair.* keys (int: 0 off, 1 on) */
};

/* Where a key's field lives: struct pubd_config, or struct pubd_group_config. */
enum key_scope { S_CONFIG, S_GROUP };

struct enum_name {
	const char *name;
	int value;
};

struct key {
	const char *path; /* "section.key"; group keys are "groups.key" */
	enum key_type type;
	enum key_scope scope;
	size_t off, size; /* the field */
	uint64_t def, min, max;
	const char *def_str;
	const struct enum_name *names;
	bool required;
	const char *expect; /* completes "expected ..." */
	/* K_UINT: "auto" is taken too, and stores this (0: it is not) */
	uint64_t auto_value;
};

/* The one table (config_keys.c); NKEYS is checked against it there. */
#define NKEYS 54
extern const struct key config_keys[NKEYS];

#define NSECTIONS 5
extern const char *const config_sections[NSECTIONS];

/* Where a key was given: its value's mark, for "given twice" and cross-key errors. */
struct seen {
	bool given, bad;
	yaml_mark_t mark;
};

struct parse {
	yaml_document_t *doc;
	struct pubd_config *c;
	struct pubd_config_errors *errs;
	const char *file;
	const uint8_t *text; /* the document, for places libyaml gives as byte offsets */
	size_t text_len;
	const struct pubd_name_resolver *res;
	unsigned visits;
	bool stop; /* too many errors or visits: stop walking */
	bool oom;
	struct seen seen[NKEYS];
	struct seen section_seen[NSECTIONS];
	yaml_mark_t *name_marks; /* per group: where its name was given */
	struct seen *addr_seen;	 /* per group: where its address was given, and whether it was bad */
};

/* ---- config_keys.c: the table ---- */
const struct key *cfg_find_key(enum key_scope scope, const char *section, const char *name);
void cfg_known_keys(const char *section, char *buf, size_t cap);
int cfg_apply_defaults(enum key_scope scope, void *base);

/* ---- config_errors.c: errors and quoting ---- */
int cfg_errs_add(struct pubd_config_errors *e, const char *file, unsigned line, unsigned column, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void cfg_report_at(struct parse *p, unsigned line, unsigned column, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* libyaml marks are 0-based; ours are 1-based like every editor's. */
#define report(p, mark, ...) cfg_report_at(p, (unsigned)(mark).line + 1, (unsigned)(mark).column + 1, __VA_ARGS__)
void cfg_sort_errors(struct pubd_config_errors *e);
const char *cfg_describe(const yaml_node_t *n, char *buf, size_t cap);
const char *cfg_describe_name(const char *s, char *buf, size_t cap);

/* ---- config_walk.c: nodes and the walk ---- */
yaml_node_t *cfg_node(struct parse *p, int index);
bool cfg_is_null(const yaml_node_t *n);
const char *cfg_scalar(const yaml_node_t *n);
const char *cfg_key_name(struct parse *p, const yaml_node_t *kn, const char *where);
bool cfg_given_twice(struct parse *p, struct seen *seen, const yaml_node_t *kn, const char *path);
void cfg_walk_keys(struct parse *p, const yaml_node_t *map, enum key_scope scope, const char *section,
		   const char *prefix, void *base, struct seen *seen);
void cfg_walk_root(struct parse *p, const yaml_node_t *root);

/* ---- config_groups.c ---- */
void cfg_walk_groups(struct parse *p, const yaml_node_t *v);
void cfg_check_group_names(struct parse *p);
void cfg_check_group_scopes(struct parse *p);
void cfg_check_raw_addresses(struct parse *p);

/* ---- config_values.c, config_acl.c: one value ---- */
int cfg_parse_u64(const char *s, size_t len, uint64_t *out);
void cfg_store_uint(void *field, size_t size, uint64_t v);
int cfg_leaf(struct parse *p, const struct key *k, const yaml_node_t *v, void *base, const char *path);
int cfg_acl_list(struct parse *p, const struct key *k, const yaml_node_t *v, struct pubd_acl *acl, const char *path);
void cfg_acl_free(struct pubd_acl *a);

/* ---- config_check.c ---- */
void cfg_check_across(struct parse *p);

#endif
