/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus text format (prom.h): what must be escaped where. Label
 * values escape backslash, double quote and newline; HELP text escapes
 * backslash and newline; names are the caller's, already valid.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

static int reserve(struct prom_out *o, size_t more)
{
	size_t cap;
	char *b;

	if (o->err)
		return o->err;
	if (o->len + more + 1 <= o->cap)
		return 0;
	cap = o->cap ? o->cap : 4096;
	while (cap < o->len + more + 1)
		cap *= 2;
	b = realloc(o->buf, cap);
	if (!b) {
		o->err = -ENOMEM;
		return o->err;
	}
	o->buf = b;
	o->cap = cap;
	return 0;
}

void prom_text(struct prom_out *o, const char *s, size_t len)
{
	if (reserve(o, len))
		return;
	memcpy(o->buf + o->len, s, len);
	o->len += len;
	o->buf[o->len] = 0;
}

static void put(struct prom_out *o, const char *s)
{
	prom_text(o, s, strlen(s));
}

/* quote: also escape '"' (label values, not HELP text). */
static void put_escaped(struct prom_out *o, const char *s, size_t len, int quote)
{
	size_t i, run = 0;

	for (i = 0; i < len; i++) {
		const char *esc = s[i] == '\\' ? "\\\\" : s[i] == '\n' ? "\\n" : s[i] == '"' && quote ? "\\\"" : NULL;

		if (!esc)
			continue;
		prom_text(o, s + run, i - run);
		put(o, esc);
		run = i + 1;
	}
	prom_text(o, s + run, len - run);
}

void prom_name_part(struct prom_out *o, const char *s, size_t len)
{
	size_t i;

	if (reserve(o, len))
		return;
	for (i = 0; i < len; i++) {
		char c = s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';

		o->buf[o->len++] = ok ? c : '_';
	}
	o->buf[o->len] = 0;
}

void prom_family(struct prom_out *o, const char *name, enum prom_type type, const char *help)
{
	put(o, "# HELP ");
	put(o, name);
	put(o, " ");
	put_escaped(o, help, strlen(help), 0);
	put(o, "\n# TYPE ");
	put(o, name);
	put(o, type == PROM_COUNTER ? " counter\n" : " gauge\n");
}

void prom_sample(struct prom_out *o, const char *name, const struct prom_label *labels, unsigned nlabels,
		 uint64_t value)
{
	char num[24];
	unsigned i;

	put(o, name);
	for (i = 0; i < nlabels; i++) {
		put(o, i ? "," : "{");
		put(o, labels[i].name);
		put(o, "=\"");
		put_escaped(o, labels[i].value, labels[i].len, 1);
		put(o, "\"");
	}
	if (nlabels)
		put(o, "}");
	snprintf(num, sizeof(num), " %" PRIu64 "\n", value);
	put(o, num);
}

void prom_free(struct prom_out *o)
{
	free(o->buf);
	o->buf = NULL;
	o->len = o->cap = 0;
	o->err = 0;
}
