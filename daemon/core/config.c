/* SPDX-License-Identifier: MIT */
/*
 * The config loader. A first pass over libyaml's events checks the syntax
 * and refuses nesting deeper than any config needs (libyaml's scanner is
 * quadratic in flow depth). Then libyaml's document API builds the node tree,
 * keeping every node's mark, and one walk follows config_keys[]. The walk's depth is
 * fixed by the schema (root, section, key; or root, groups, group, ACL,
 * entry), so anchors and aliases cannot make it recurse, only repeat: a
 * budget of visited nodes bounds that.
 *
 * Errors are collected, not returned at the first: each one names the
 * file, line and column of the offending node and what was expected. A
 * key with an error keeps its default, so later cross-key checks skip it
 * rather than report a consequence of the first mistake.
 *
 * This file is the entry points: reading the file, libyaml's own errors
 * and the passes over the document. The pieces: config_keys.c (the table
 * of keys, defaults), config_walk.c and config_groups.c (the walk),
 * config_values.c and config_acl.c (one value), config_check.c (checks
 * across keys), config_errors.c (collecting errors).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_internal.h"

/* No valid config nests deeper than 5 (root, groups, group, ACL, entry). */
#define MAX_DEPTH 32

/* The line and column (1-based, a column counting characters, not the
 * bytes of UTF-8 after the first) of a byte offset into the document. */
static void place_of_offset(const struct parse *p, size_t off, unsigned *line, unsigned *column)
{
	*line = *column = 1;
	for (size_t i = 0; i < off && i < p->text_len; i++) {
		if (p->text[i] == '\n') {
			(*line)++;
			*column = 1;
		} else if ((p->text[i] & 0xc0) != 0x80) {
			(*column)++;
		}
	}
}

static void yaml_problem(struct parse *p, const yaml_parser_t *y)
{
	unsigned line, column;

	switch (y->error) {
	case YAML_MEMORY_ERROR:
		p->oom = true;
		break;
	case YAML_READER_ERROR:
		/* The reader has no line yet, only a byte offset: counted here. */
		place_of_offset(p, y->problem_offset, &line, &column);
		if (y->problem_value != -1)
			cfg_report_at(p, line, column, "invalid YAML: %s (0x%02X)", y->problem,
				      (unsigned)y->problem_value);
		else
			cfg_report_at(p, line, column, "invalid YAML: %s", y->problem);
		break;
	default:
		if (y->context)
			report(p, y->problem_mark, "invalid YAML: %s (%s at %u:%u)", y->problem, y->context,
			       (unsigned)y->context_mark.line + 1, (unsigned)y->context_mark.column + 1);
		else
			report(p, y->problem_mark, "invalid YAML: %s", y->problem ? y->problem : "error");
		break;
	}
}

/*
 * libyaml's scanner looks at every open flow level for each token, so
 * "[[[[..." costs time quadratic in its depth (100k levels: 20 s). A first
 * pass over the events stops at MAX_DEPTH, before the loader builds
 * anything; it also reports a syntax error, if any, with its place.
 */
static void check_syntax_and_depth(struct parse *p, const void *yaml, size_t len)
{
	yaml_parser_t y;
	yaml_event_t ev;
	unsigned depth = 0;
	bool done = false;

	if (!yaml_parser_initialize(&y)) {
		p->oom = p->stop = true;
		return;
	}
	yaml_parser_set_input_string(&y, yaml, len);
	while (!done) {
		if (!yaml_parser_parse(&y, &ev)) {
			yaml_problem(p, &y);
			break;
		}
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > MAX_DEPTH) {
				report(p, ev.start_mark, "nested deeper than %d levels", MAX_DEPTH);
				done = true;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&y);
}

/* Anything after the first document is an error, not silently ignored. */
static void check_single_document(struct parse *p, yaml_parser_t *y)
{
	yaml_document_t next;
	yaml_node_t *root;

	if (!yaml_parser_load(y, &next)) {
		yaml_problem(p, y);
		return;
	}
	root = yaml_document_get_root_node(&next);
	if (root && !cfg_is_null(root))
		report(p, root->start_mark, "expected one YAML document, found a second one");
	yaml_document_delete(&next);
}

int pubd_config_parse(struct pubd_config *c, const char *file, const void *yaml, size_t len,
		      const struct pubd_name_resolver *res, struct pubd_config_errors *errs)
{
	struct pubd_config_errors local_errs;
	struct pubd_config tmp;
	yaml_parser_t y;
	yaml_document_t doc;
	struct parse p = {.c = &tmp, .file = file, .text = yaml, .text_len = len, .res = res};
	int ret;

	if (!errs)
		errs = &local_errs;
	memset(errs, 0, sizeof(*errs));
	memset(c, 0, sizeof(*c));
	p.errs = errs;
	ret = pubd_config_defaults(&tmp);
	if (ret)
		goto out_errs;
	check_syntax_and_depth(&p, yaml, len);
	if (p.oom || errs->n)
		goto done;
	if (!yaml_parser_initialize(&y)) {
		ret = -ENOMEM;
		goto out_tmp;
	}
	yaml_parser_set_input_string(&y, yaml, len);
	if (!yaml_parser_load(&y, &doc)) {
		yaml_problem(&p, &y);
	} else {
		p.doc = &doc;
		cfg_walk_root(&p, yaml_document_get_root_node(&doc));
		if (!p.stop)
			check_single_document(&p, &y);
		if (!p.stop)
			cfg_check_across(&p);
		yaml_document_delete(&doc);
	}
	yaml_parser_delete(&y);
done:
	free(p.name_marks);
	free(p.addr_seen);
	ret = p.oom ? -ENOMEM : errs->n ? -EINVAL : 0;
	if (!ret) {
		*c = tmp;
		return 0;
	}
	cfg_sort_errors(errs);
out_tmp:
	pubd_config_free(&tmp);
out_errs:
	if (ret == -ENOMEM || errs == &local_errs)
		pubd_config_errors_free(errs);
	return ret;
}

/* What a file that is not a regular one is, for the error. */
static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "a special file";
}

/*
 * The one function here that touches the file system. Only a regular file
 * is read: the loop's thread reads it at a reload, and a FIFO (or a device)
 * would block it there for good, SIGTERM included. The open does not block
 * (O_NONBLOCK: a FIFO with no writer opens at once), and the file's type is
 * checked on what was opened, so a path swapped in between is seen as it is.
 * *kind names what it was when -EINVAL says it is not a regular file.
 */
static int read_file(const char *path, char **out, size_t *outlen, const char **kind)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nb;
	struct stat st;
	ssize_t r;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		*kind = file_kind(st.st_mode);
		ret = -EINVAL;
		goto cleanup;
	}
	for (;;) {
		if (len == cap) {
			/* One byte past the limit tells a file of exactly the
			 * limit from a larger one. */
			if (cap > PUBD_CONFIG_MAX_BYTES) {
				ret = -EFBIG;
				goto cleanup;
			}
			cap = cap ? cap * 2 : 16384;
			if (cap > PUBD_CONFIG_MAX_BYTES)
				cap = PUBD_CONFIG_MAX_BYTES + 1;
			nb = realloc(buf, cap + 1); /* + 1: a NUL after the text */
			if (!nb) {
				ret = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			goto cleanup;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = 0;
	*out = buf;
	*outlen = len;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return ret;
}

int pubd_config_load(struct pubd_config *c, const char *path, const struct pubd_name_resolver *res,
		     struct pubd_config_errors *errs)
{
	struct pubd_config_errors local_errs;
	const char *kind = NULL;
	char *buf = NULL;
	size_t len = 0;
	int ret;

	ret = read_file(path, &buf, &len, &kind);
	if (!ret) {
		ret = pubd_config_parse(c, path, buf, len, res, errs);
		free(buf);
		return ret;
	}
	memset(c, 0, sizeof(*c));
	if (!errs)
		errs = &local_errs;
	memset(errs, 0, sizeof(*errs));
	if (ret == -EFBIG)
		cfg_errs_add(errs, path, 0, 0, "cannot read: larger than %u bytes", PUBD_CONFIG_MAX_BYTES);
	else if (kind)
		cfg_errs_add(errs, path, 0, 0, "cannot read: %s, not a regular file", kind);
	else
		cfg_errs_add(errs, path, 0, 0, "cannot read: %s", strerror(-ret));
	if (errs == &local_errs)
		pubd_config_errors_free(errs);
	return ret;
}

void cfg_walk_root(struct parse *p, const yaml_node_t *root)
{
	char got[GOT_BUF];
	yaml_node_pair_t *pair;
	size_t s;

	if (!root || cfg_is_null(root)) {
		p->c->empty = true; /* all defaults */
		return;
	}
	if (root->type != YAML_MAPPING_NODE) {
		report(p, root->start_mark,
		       "expected a mapping of sections (daemon, fabric, limits, metrics, groups), got %s",
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
			report(p, kn->start_mark,
			       "unknown section %s (expected daemon, fabric, limits, metrics or groups)",
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
