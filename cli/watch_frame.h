/* SPDX-License-Identifier: MIT */
/*
 * pubctl watch's screen as a width x height buffer of characters and
 * attributes, drawn off-screen and then written in one go: as ANSI (the
 * terminal) or as plain text (a pipe, a log). A value is written as a keyed
 * cell so the next frame can highlight the cells whose text changed.
 * Every line holds at most width bytes of printable ASCII: nothing wraps.
 */
#ifndef PUBCTL_WATCH_FRAME_H
#define PUBCTL_WATCH_FRAME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define WATCH_KEY_MAX  96
#define WATCH_TEXT_MAX 32

enum watch_attr {
	WATCH_ATTR_NONE = 0,
	WATCH_ATTR_CHANGED = 1, /* reverse video */
	WATCH_ATTR_HEADING = 2, /* bold */
};

struct watch_cell {
	char key[WATCH_KEY_MAX];
	char text[WATCH_TEXT_MAX];
	int row, col, width;
};

struct watch_frame {
	int width, height;
	int nlines;    /* lines written (the last one + 1) */
	char *text;    /* height rows of width bytes, ' ' where nothing was written */
	uint8_t *attr; /* enum watch_attr, one per byte of text */
	struct watch_cell *cells;
	unsigned ncells, cap;
};

int watch_frame_init(struct watch_frame *f, int width, int height);
void watch_frame_close(struct watch_frame *f);
/* Empty the frame, at a new size (which may differ). Returns -1 when out of memory. */
int watch_frame_reset(struct watch_frame *f, int width, int height);
/* Write s from (row, col), cut at the frame's width (non-printable bytes as '?'). */
void watch_frame_put(struct watch_frame *f, int row, int col, const char *s, enum watch_attr attr);
/* Write text in width columns (right-aligned or left, cut to fit) and remember it under key. */
void watch_frame_cell(struct watch_frame *f, int row, int col, int width, bool right, const char *key,
		      const char *text);
/* Mark the cells whose text differs from the cell of the same key in prev (none on a first frame). */
void watch_frame_diff(struct watch_frame *f, const struct watch_frame *prev);
/* Line row's text without trailing blanks (for tests and plain output); returns its length. */
int watch_frame_line(const struct watch_frame *f, int row, char *buf, size_t n);
/* The whole screen with cursor moves and attributes; no line is longer than width. */
void watch_frame_write_ansi(const struct watch_frame *f, FILE *out);
/* The lines written, trailing blanks cut, no escape sequence. */
void watch_frame_write_plain(const struct watch_frame *f, FILE *out);

#endif
