/* SPDX-License-Identifier: MIT */
/*
 * The primitives under every part of the config parser: reaching a YAML
 * node (counted against a visit budget: the walk's depth is fixed by the
 * schema, so anchors and aliases cannot make it recurse, only repeat),
 * reading a scalar, turning text into a number and storing a number into a
 * field of the width the key table gives. They call nothing else of the
 * parser.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "utf8.h"

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

int cfg_parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9)
			return -EINVAL;
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

void cfg_store_uint(void *field, size_t size, uint64_t v)
{
	uint32_t u32 = (uint32_t)v;
	uint16_t u16 = (uint16_t)v;

	switch (size) {
	case sizeof(uint64_t):
		memcpy(field, &v, size);
		break;
	case sizeof(uint32_t):
		memcpy(field, &u32, size);
		break;
	case sizeof(uint16_t):
		memcpy(field, &u16, size);
		break;
	}
}

/* A value quoted for a message: escaped (control bytes, quotes, and the
 * characters that are not seen but reorder or break the text around them,
 * as the log escapes them: utf8.h) so a message says what it says on a
 * terminal too, and shortened. */
static const char *quote(const unsigned char *s, size_t len, char *buf, size_t cap)
{
	size_t i, o = 0, end, shown;

	end = len > GOT_MAX ? GOT_MAX : len;
	/* Never cut a UTF-8 sequence in half. */
	while (end < len && end > 0 && (s[end] & 0xc0) == 0x80)
		end--;
	buf[o++] = '"';
	for (i = 0; i < end && o + 8 < cap; i++) {
		if (s[i] < 0x20 || s[i] == 0x7f)
			o += snprintf(buf + o, cap - o, "\\x%02x", s[i]);
		else if (s[i] == '"' || s[i] == '\\')
			o += snprintf(buf + o, cap - o, "\\%c", s[i]);
		else if (s[i] < 0x80)
			buf[o++] = (char)s[i];
		else if ((shown = pub_utf8_shown_len(s + i, end - i)) && o + shown + 8 < cap) {
			memcpy(buf + o, s + i, shown);
			o += shown;
			i += shown - 1;
		} else
			o += snprintf(buf + o, cap - o, "\\x%02x", s[i]);
	}
	if (i < len)
		o += snprintf(buf + o, cap - o, "...");
	snprintf(buf + o, cap - o, "\"");
	return buf;
}

/* "what was found", for messages. */
const char *cfg_describe(const yaml_node_t *n, char *buf, size_t cap)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (cfg_is_null(n))
		return "nothing";
	return quote(n->data.scalar.value, n->data.scalar.length, buf, cap);
}

const char *cfg_describe_name(const char *s, char *buf, size_t cap)
{
	return quote((const unsigned char *)s, strlen(s), buf, cap);
}
