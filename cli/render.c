// SPDX-License-Identifier: MIT
/*
 * Rendering of query tables, whatever their columns: aligned text (title,
 * header, rows; numbers right-aligned) or one JSON object per reply,
 * {"table": [ {"column": value, ...}, ... ], ...}.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "pubctl.h"

/* One more byte than the longest u64 or i64 printed in decimal. */
#define NUM_MAX 24

void render_begin(struct render *r, FILE *out, bool json)
{
	r->out = out;
	r->json = json;
	r->ntables = 0;
	if (json)
		fputc('{', out);
}

void render_end(struct render *r)
{
	if (r->json)
		fputs("}\n", r->out);
	fflush(r->out);
}

/* Length of a valid UTF-8 sequence at p (at most n bytes), or 0 when it is not valid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	uint32_t cp;

	return pub_utf8_decode(p, n, &cp);
}

/* A JSON string: quotes, backslashes and control characters (C0, DEL, C1) escaped; invalid UTF-8 as U+FFFD. */
void json_string(FILE *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	for (size_t i = 0; i < len;) {
		unsigned char ch = p[i];
		size_t n;

		switch (ch) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			if (ch < 0x20 || ch == 0x7f) {
				fprintf(out, "\\u%04x", ch);
				break;
			}
			n = utf8_len(p + i, len - i);
			/* C1 controls and the unseen characters that reorder a line
			 * are valid JSON raw, but not on a terminal. */
			if (n && ch >= 0x80 && !pub_utf8_shown_len(p + i, len - i)) {
				uint32_t cp;

				pub_utf8_decode(p + i, len - i, &cp);
				if (cp > 0xffff) /* beyond the BMP: JSON's surrogate pair (a tag character) */
					fprintf(out, "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10),
						0xdc00 + ((cp - 0x10000) & 0x3ff));
				else
					fprintf(out, "\\u%04x", (unsigned)cp);
				i += n;
				continue;
			}
			if (!n) {
				fputs("\\ufffd", out);
				i++;
				continue;
			}
			fwrite(p + i, 1, n, out);
			i += n;
			continue;
		}
		i++;
	}
	fputc('"', out);
}

static void json_table(struct render *r, const struct pub_table *t)
{
	FILE *out = r->out;

	if (r->ntables)
		fputc(',', out);
	json_string(out, t->name, strlen(t->name));
	fputs(":[", out);
	for (size_t row = 0; row < t->nrows; row++) {
		fputs(row ? ",{" : "{", out);
		for (unsigned col = 0; col < t->ncols; col++) {
			const struct pub_value *v = &t->cells[row * t->ncols + col];

			if (col)
				fputc(',', out);
			json_string(out, t->cols[col].name, strlen(t->cols[col].name));
			fputc(':', out);
			if (v->type == PUB_VALUE_U64)
				fprintf(out, "%" PRIu64, v->u);
			else if (v->type == PUB_VALUE_I64)
				fprintf(out, "%" PRId64, v->i);
			else
				json_string(out, v->s, v->len);
		}
		fputc('}', out);
	}
	fputc(']', out);
}

static const char *cell_text(const struct pub_value *v, char *num)
{
	if (v->type == PUB_VALUE_U64) {
		snprintf(num, NUM_MAX, "%" PRIu64, v->u);
		return num;
	}
	if (v->type == PUB_VALUE_I64) {
		snprintf(num, NUM_MAX, "%" PRId64, v->i);
		return num;
	}
	return v->s;
}

/*
 * Display width of s as put_text prints it: every byte it would replace
 * counts one, a valid UTF-8 sequence one (close enough for alignment).
 */
static int text_width(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), i = 0, n;
	int w = 0;

	while (i < len) {
		n = p[i] >= 0x80 ? utf8_len(p + i, len - i) : 1;
		i += n ? n : 1;
		w++;
	}
	return w;
}

/*
 * Text cells come from the daemon, which has them from clients (names) and
 * configs: control characters, DEL, C1 controls (U+0080..U+009F, e.g. CSI),
 * characters that reorder a line unseen (bidi controls, line separators)
 * and bytes that are not UTF-8 would break the layout, drive the terminal
 * or make a row read as another, so each prints as '?'.
 */
static void put_shown(FILE *out, const unsigned char *p, size_t len, bool newlines)
{
	size_t i = 0, n;

	while (i < len) {
		if (p[i] < 0x80) {
			fputc((p[i] < 0x20 && !(newlines && p[i] == '\n')) || p[i] == 0x7f ? '?' : p[i], out);
			i++;
			continue;
		}
		n = utf8_len(p + i, len - i);
		if (!pub_utf8_shown_len(p + i, len - i)) {
			fputc('?', out);
			i += n ? n : 1;
			continue;
		}
		fwrite(p + i, 1, n, out);
		i += n;
	}
}

static void put_text(FILE *out, const char *s, int width, bool right)
{
	int pad = width - text_width(s);

	if (right && pad > 0)
		fprintf(out, "%*s", pad, "");
	put_shown(out, (const unsigned char *)s, strlen(s), false);
	if (!right && pad > 0)
		fprintf(out, "%*s", pad, "");
}

void render_lines(FILE *out, const char *s, size_t len)
{
	put_shown(out, (const unsigned char *)s, len, true);
}

static void text_table(struct render *r, const struct pub_table *t)
{
	FILE *out = r->out;
	char num[NUM_MAX];
	int *w;

	if (r->ntables)
		fputc('\n', out);
	put_text(out, t->name, 0, false);
	fputc('\n', out);
	if (!t->ncols)
		return;
	w = calloc(t->ncols, sizeof(*w));
	if (!w)
		return;

	/* One row with many columns (status, counters) reads better as name/value lines. */
	if (t->nrows == 1 && t->ncols > 6) {
		int nw = 0;

		for (unsigned c = 0; c < t->ncols; c++)
			if (text_width(t->cols[c].name) > nw)
				nw = text_width(t->cols[c].name);
		for (unsigned c = 0; c < t->ncols; c++) {
			fputs("  ", out);
			put_text(out, t->cols[c].name, nw, false);
			fputs("  ", out);
			put_text(out, cell_text(&t->cells[c], num), 0, false);
			fputc('\n', out);
		}
		free(w);
		return;
	}
	for (unsigned c = 0; c < t->ncols; c++)
		w[c] = text_width(t->cols[c].name);
	for (size_t row = 0; row < t->nrows; row++)
		for (unsigned c = 0; c < t->ncols; c++) {
			int n = text_width(cell_text(&t->cells[row * t->ncols + c], num));

			if (n > w[c])
				w[c] = n;
		}
	for (unsigned c = 0; c < t->ncols; c++) {
		fputs("  ", out);
		put_text(out, t->cols[c].name, c + 1 == t->ncols && t->cols[c].type == PUB_VALUE_STR ? 0 : w[c],
			 t->cols[c].type != PUB_VALUE_STR);
	}
	fputc('\n', out);
	for (size_t row = 0; row < t->nrows; row++) {
		for (unsigned c = 0; c < t->ncols; c++) {
			const struct pub_value *v = &t->cells[row * t->ncols + c];
			bool last_str = c + 1 == t->ncols && v->type == PUB_VALUE_STR;

			fputs("  ", out);
			put_text(out, cell_text(v, num), last_str ? 0 : w[c], v->type != PUB_VALUE_STR);
		}
		fputc('\n', out);
	}
	if (!t->nrows)
		fputs("  (none)\n", out);
	free(w);
}

/*
 * The daemon bounds every table (rows and bytes) and ends a reply whose
 * tables were cut with a table "more" (table, rows_not_shown): in text, a
 * line under what was shown rather than a table of its own.
 */
static bool text_more(struct render *r, const struct pub_table *t)
{
	if (strcmp(t->name, "more") || t->ncols != 2 || t->cols[0].type != PUB_VALUE_STR ||
	    t->cols[1].type != PUB_VALUE_U64)
		return false;
	for (size_t row = 0; row < t->nrows; row++) {
		fputs("  ... ", r->out);
		fprintf(r->out, "%" PRIu64 " more rows of ", t->cells[row * 2 + 1].u);
		put_text(r->out, t->cells[row * 2].s, 0, false);
		fputs(" not shown (the daemon caps every table)\n", r->out);
	}
	return true;
}

int render_table(const struct pub_table *t, void *arg)
{
	struct render *r = arg;

	if (r->json)
		json_table(r, t);
	else if (!text_more(r, t))
		text_table(r, t);
	r->ntables++;
	return 0;
}
