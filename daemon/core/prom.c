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
#include "utf8.h"

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

/*
 * Text in the exposition format: a backslash and a newline escaped, and
 * with quote a '"' (label values, not HELP text). A label value may come
 * from a client (its HELLO name): bytes that are not UTF-8 would make a
 * scraper refuse the whole page, and control characters, C1 and the
 * unseen characters that reorder a line would reach whoever reads it on a
 * terminal. Each such byte is written as the text \xNN (its backslash
 * escaped), as pubd's log writes it.
 */
static void put_escaped(struct prom_out *o, const char *s, size_t len, int quote)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0, n;

	while (i < len) {
		const char *esc = p[i] == '\\' ? "\\\\" : p[i] == '\n' ? "\\n" : p[i] == '"' && quote ? "\\\"" : NULL;

		if (!esc && p[i] >= 0x20 && p[i] < 0x7f) {
			i++;
			continue;
		}
		if (!esc && p[i] >= 0x80 && (n = pub_utf8_shown_len(p + i, len - i))) {
			i += n;
			continue;
		}
		prom_text(o, s + run, i - run);
		if (esc) {
			put(o, esc);
		} else {
			char byte[6] = {'\\', '\\', 'x', hex[p[i] >> 4], hex[p[i] & 15], 0};

			put(o, byte);
		}
		run = ++i;
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
