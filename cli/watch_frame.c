// SPDX-License-Identifier: MIT
/* pubctl watch's off-screen frame (watch_frame.h). */
#include <stdlib.h>
#include <string.h>

#include "watch_frame.h"

int watch_frame_init(struct watch_frame *f, int width, int height)
{
	memset(f, 0, sizeof(*f));
	return watch_frame_reset(f, width, height);
}

void watch_frame_close(struct watch_frame *f)
{
	free(f->text);
	free(f->attr);
	free(f->cells);
	memset(f, 0, sizeof(*f));
}

int watch_frame_reset(struct watch_frame *f, int width, int height)
{
	size_t n;

	if (width < 1)
		width = 1;
	if (height < 1)
		height = 1;
	n = (size_t)width * (size_t)height;
	if (width != f->width || height != f->height) {
		char *text = realloc(f->text, n);
		uint8_t *attr;

		if (!text)
			return -1;
		f->text = text;
		attr = realloc(f->attr, n);
		if (!attr)
			return -1;
		f->attr = attr;
		f->width = width;
		f->height = height;
	}
	memset(f->text, ' ', n);
	memset(f->attr, WATCH_ATTR_NONE, n);
	f->nlines = 0;
	f->ncells = 0;
	return 0;
}

static bool in_frame(const struct watch_frame *f, int row, int col)
{
	return row >= 0 && row < f->height && col >= 0 && col < f->width;
}

void watch_frame_put(struct watch_frame *f, int row, int col, const char *s, enum watch_attr attr)
{
	if (row < 0 || row >= f->height)
		return;
	for (; *s && col < f->width; s++, col++) {
		unsigned char ch = (unsigned char)*s;
		size_t at;

		if (col < 0)
			continue;
		at = (size_t)row * (size_t)f->width + (size_t)col;
		f->text[at] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
		f->attr[at] = (uint8_t)attr;
	}
	if (row + 1 > f->nlines)
		f->nlines = row + 1;
}

static void remember(struct watch_frame *f, int row, int col, int width, const char *key, const char *text)
{
	struct watch_cell *c;

	if (f->ncells == f->cap) {
		unsigned cap = f->cap ? f->cap * 2 : 64;

		c = realloc(f->cells, cap * sizeof(*c));
		if (!c)
			return; /* that cell is just never highlighted */
		f->cells = c;
		f->cap = cap;
	}
	c = &f->cells[f->ncells++];
	snprintf(c->key, sizeof(c->key), "%s", key);
	snprintf(c->text, sizeof(c->text), "%s", text);
	c->row = row;
	c->col = col;
	c->width = width;
}

void watch_frame_cell(struct watch_frame *f, int row, int col, int width, bool right, const char *key, const char *text)
{
	char buf[256];
	int len = (int)strlen(text);

	if (width <= 0 || !in_frame(f, row, col))
		return;
	if (width > (int)sizeof(buf) - 1)
		width = (int)sizeof(buf) - 1;
	if (len > width)
		len = width;
	memset(buf, ' ', (size_t)width);
	memcpy(buf + (right ? width - len : 0), text, (size_t)len);
	buf[width] = 0;
	watch_frame_put(f, row, col, buf, WATCH_ATTR_NONE);
	remember(f, row, col, width, key, text);
}

static const struct watch_cell *find_cell(const struct watch_frame *f, const char *key)
{
	for (unsigned i = 0; i < f->ncells; i++)
		if (strcmp(f->cells[i].key, key) == 0)
			return &f->cells[i];
	return NULL;
}

/* Highlight the cell's text, not the blanks that align it. */
static void mark_changed(struct watch_frame *f, const struct watch_cell *c)
{
	for (int col = c->col; col < c->col + c->width && col < f->width; col++) {
		size_t at = (size_t)c->row * (size_t)f->width + (size_t)col;

		if (f->text[at] != ' ')
			f->attr[at] = WATCH_ATTR_CHANGED;
	}
}

void watch_frame_diff(struct watch_frame *f, const struct watch_frame *prev)
{
	for (unsigned i = 0; prev && i < f->ncells; i++) {
		const struct watch_cell *was = find_cell(prev, f->cells[i].key);

		if (was && strcmp(was->text, f->cells[i].text) != 0)
			mark_changed(f, &f->cells[i]);
	}
}

static int line_len(const struct watch_frame *f, int row)
{
	const char *line = f->text + (size_t)row * (size_t)f->width;
	int n = f->width;

	while (n > 0 && line[n - 1] == ' ')
		n--;
	return n;
}

int watch_frame_line(const struct watch_frame *f, int row, char *buf, size_t n)
{
	int len;

	if (!n)
		return 0;
	if (row < 0 || row >= f->height) {
		buf[0] = 0;
		return 0;
	}
	len = line_len(f, row);
	if ((size_t)len >= n)
		len = (int)n - 1;
	memcpy(buf, f->text + (size_t)row * (size_t)f->width, (size_t)len);
	buf[len] = 0;
	return len;
}

static const char *attr_seq(uint8_t attr)
{
	switch (attr) {
	case WATCH_ATTR_CHANGED:
		return "\033[7m";
	case WATCH_ATTR_HEADING:
		return "\033[1m";
	default:
		return "\033[m";
	}
}

void watch_frame_write_ansi(const struct watch_frame *f, FILE *out)
{
	for (int row = 0; row < f->height; row++) {
		const char *line = f->text + (size_t)row * (size_t)f->width;
		const uint8_t *attr = f->attr + (size_t)row * (size_t)f->width;
		int len = line_len(f, row);
		uint8_t cur = WATCH_ATTR_NONE;

		fprintf(out, "\033[%d;1H", row + 1);
		for (int col = 0; col < len; col++) {
			if (attr[col] != cur) {
				fputs(cur == WATCH_ATTR_NONE ? "" : "\033[m", out);
				cur = attr[col];
				if (cur != WATCH_ATTR_NONE)
					fputs(attr_seq(cur), out);
			}
			fputc(line[col], out);
		}
		if (cur != WATCH_ATTR_NONE)
			fputs("\033[m", out);
		/* Not on a full line: the cursor waits on its last column, and
		 * erasing from there would erase that column too. */
		if (len < f->width)
			fputs("\033[K", out);
	}
}

void watch_frame_write_plain(const struct watch_frame *f, FILE *out)
{
	for (int row = 0; row < f->nlines; row++) {
		fwrite(f->text + (size_t)row * (size_t)f->width, 1, (size_t)line_len(f, row), out);
		fputc('\n', out);
	}
}
