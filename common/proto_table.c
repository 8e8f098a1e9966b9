/* SPDX-License-Identifier: MIT */
/*
 * Tables of the local protocol: the builder (pubd fills one row by row,
 * its owner giving it room) and the bounds-checked reader (pubctl, libpub).
 */
#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

#include "proto_internal.h"

/* ---- table builder ---- */

/* Make room for n more bytes; latches -ENOMEM in b->err. */
static uint8_t *tb_room(struct pub_table_builder *b, size_t n)
{
	size_t need;

	if (b->err)
		return NULL;
	if (n > SIZE_MAX - b->len) {
		b->err = -ENOMEM;
		return NULL;
	}
	need = b->len + n;
	if (need > b->cap) {
		/* need is the total capacity wanted; whatever grow() did, trust only cap. */
		if (!b->grow || b->grow(b, need) < 0 || b->cap < need || !b->buf) {
			b->err = -ENOMEM;
			return NULL;
		}
	}
	return b->buf + b->len;
}

static void tb_put(struct pub_table_builder *b, const void *src, size_t n)
{
	uint8_t *p = tb_room(b, n);

	if (!p)
		return;
	if (n)
		memcpy(p, src, n);
	b->len += n;
}

static void tb_u8(struct pub_table_builder *b, uint8_t v)
{
	tb_put(b, &v, 1);
}

static void tb_u16(struct pub_table_builder *b, uint16_t v)
{
	uint8_t x[2];

	put_u16(x, v);
	tb_put(b, x, sizeof(x));
}

static void tb_u32(struct pub_table_builder *b, uint32_t v)
{
	uint8_t x[4];

	put_u32(x, v);
	tb_put(b, x, sizeof(x));
}

static void tb_u64(struct pub_table_builder *b, uint64_t v)
{
	uint8_t x[8];

	put_u64(x, v);
	tb_put(b, x, sizeof(x));
}

static int col_type_of(char c)
{
	switch (c) {
	case 'u':
		return PUB_COL_U64;
	case 'i':
		return PUB_COL_I64;
	case 's':
		return PUB_COL_STR;
	}
	return -1;
}

void pub_table_begin(struct pub_table_builder *b, uint32_t req_id, const char *table_name, const char *const *cols,
		     unsigned ncols)
{
	size_t name_len = table_name ? strlen(table_name) : 0;

	/* A new frame starts clean; a failed earlier frame was already cut off by pub_table_end. */
	b->err = 0;
	b->frame_start = b->len;
	b->ncols = 0;
	b->col = 0;
	b->nrows = 0;
	if (name_len > PUB_PROTO_NAME_MAX || ncols > UINT16_MAX) {
		b->err = -EINVAL;
		return;
	}
	tb_room(b, PUB_PROTO_HDR_LEN);
	if (b->err)
		return;
	b->len += PUB_PROTO_HDR_LEN; /* header written by pub_table_end */
	tb_u32(b, req_id);
	tb_u8(b, (uint8_t)name_len);
	tb_put(b, table_name, name_len);
	tb_u16(b, (uint16_t)ncols);
	for (unsigned i = 0; i < ncols && !b->err; i++) {
		const char *spec = cols[i];
		const char *colon = spec ? strrchr(spec, ':') : NULL;
		int type = colon ? col_type_of(colon[1]) : -1;
		size_t n = colon ? (size_t)(colon - spec) : 0;

		if (type < 0 || colon[2] != '\0' || n > PUB_PROTO_NAME_MAX) {
			b->err = -EINVAL;
			return;
		}
		tb_u8(b, (uint8_t)type);
		tb_u8(b, (uint8_t)n);
		tb_put(b, spec, n);
	}
	b->nrows_at = b->len;
	tb_u32(b, 0);
	b->ncols = (uint16_t)ncols;
}

/*
 * Type of the next column, read back from the descriptors already in the
 * buffer (the builder has no room of its own for them). O(ncols) per cell;
 * tables are a few columns wide and built only for pubctl.
 */
static int tb_next_col_type(struct pub_table_builder *b)
{
	const uint8_t *p;

	if (b->err)
		return -1;
	if (b->col >= b->ncols) {
		b->err = -EINVAL;
		return -1;
	}
	p = b->buf + b->frame_start + PUB_PROTO_HDR_LEN + 4;
	p += 1 + p[0] + 2; /* table name, ncols */
	for (unsigned i = 0; i < b->col; i++)
		p += 2 + p[1];
	return p[0];
}

static void tb_cell_done(struct pub_table_builder *b)
{
	if (b->err)
		return;
	if (++b->col == b->ncols) {
		b->col = 0;
		if (b->nrows == UINT32_MAX) {
			b->err = -EINVAL;
			return;
		}
		b->nrows++;
	}
}

void pub_table_u64(struct pub_table_builder *b, uint64_t v)
{
	if (tb_next_col_type(b) != PUB_COL_U64) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	tb_u64(b, v);
	tb_cell_done(b);
}

void pub_table_i64(struct pub_table_builder *b, int64_t v)
{
	if (tb_next_col_type(b) != PUB_COL_I64) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	tb_u64(b, (uint64_t)v);
	tb_cell_done(b);
}

void pub_table_strn(struct pub_table_builder *b, const char *s, size_t n)
{
	if (tb_next_col_type(b) != PUB_COL_STR) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	if (!s)
		n = 0;
	/* A cell is display text; cut one that cannot fit text16 rather than fail the table. */
	if (n > PUB_PROTO_TEXT_MAX)
		n = PUB_PROTO_TEXT_MAX;
	tb_u16(b, (uint16_t)n);
	tb_put(b, s, n);
	tb_cell_done(b);
}

void pub_table_str(struct pub_table_builder *b, const char *s)
{
	pub_table_strn(b, s, s ? strlen(s) : 0);
}

int pub_table_end(struct pub_table_builder *b)
{
	size_t body = 0;

	if (!b->err && b->col != 0)
		b->err = -EINVAL; /* the last row is short */
	if (!b->err) {
		body = b->len - b->frame_start - PUB_PROTO_HDR_LEN;
		if (body > UINT32_MAX)
			b->err = -ENOMEM;
	}
	if (b->err) {
		/* Leave only whole frames in the buffer: a caller may still send what precedes. */
		if (b->len > b->frame_start)
			b->len = b->frame_start;
		return b->err;
	}
	pub_proto_put_hdr(b->buf + b->frame_start, PUB_FRAME_TABLE, (uint32_t)body);
	put_u32(b->buf + b->nrows_at, b->nrows);
	return 0;
}

/* ---- table reader ---- */

static int cell_skip(struct cur *c, uint8_t type, struct pub_table_cell *cell)
{
	switch (type) {
	case PUB_COL_U64:
	case PUB_COL_I64:
		cell->u = rd_u64(c);
		break;
	case PUB_COL_STR:
		rd_text16(c, &cell->s);
		break;
	default:
		return -PUB_ERR_PROTO;
	}
	cell->type = type;
	return c->bad ? -PUB_ERR_PROTO : 0;
}

int pub_proto_dec_table(const uint8_t *body, size_t len, struct pub_table_reader *r)
{
	struct cur c = cur_init(body, len);
	uint64_t ncells, i;

	memset(r, 0, sizeof(*r));
	r->req_id = rd_u32(&c);
	rd_name8(&c, &r->name);
	r->ncols = rd_u16(&c);
	r->cols = c.p;
	for (unsigned k = 0; k < r->ncols && !c.bad; k++) {
		uint8_t type = rd_u8(&c);
		struct pub_str name;

		rd_name8(&c, &name);
		if (type < PUB_COL_U64 || type > PUB_COL_STR)
			return -PUB_ERR_PROTO;
	}
	r->nrows = rd_u32(&c);
	if (c.bad)
		return -PUB_ERR_PROTO;
	r->cells = c.p;
	r->end = c.end;
	/* Every cell takes at least 2 bytes: refuse a row count the body cannot
	 * hold before looping over it (nrows is up to 2^32, ncols up to 2^16). */
	ncells = (uint64_t)r->nrows * r->ncols;
	if (ncells > (uint64_t)(c.end - c.p) / 2)
		return -PUB_ERR_PROTO;
	r->pos = r->cells;
	r->col_pos = r->cols;
	for (i = 0; i < ncells; i++) {
		struct pub_table_cell cell;

		if (pub_table_next(r, &cell) != 1)
			return -PUB_ERR_PROTO;
	}
	if (r->pos != r->end)
		return -PUB_ERR_PROTO;
	/* Rewind for the caller's walk. */
	r->pos = r->cells;
	r->col = 0;
	r->col_pos = r->cols;
	return 0;
}

int pub_table_col(const struct pub_table_reader *r, unsigned i, uint8_t *type, struct pub_str *name)
{
	const uint8_t *p = r->cols;

	if (!p || i >= r->ncols)
		return -EINVAL;
	for (unsigned k = 0; k < i; k++)
		p += 2 + p[1];
	if (type)
		*type = p[0];
	if (name) {
		name->len = p[1];
		name->ptr = (const char *)p + 2;
	}
	return 0;
}

int pub_table_next(struct pub_table_reader *r, struct pub_table_cell *cell)
{
	struct cur c;
	uint8_t type;

	if (!r->pos || r->ncols == 0 || r->pos >= r->end)
		return 0;
	c = cur_init(r->pos, (size_t)(r->end - r->pos));
	type = r->col_pos[0];
	memset(cell, 0, sizeof(*cell));
	if (cell_skip(&c, type, cell) < 0) {
		r->pos = r->end; /* stop: only reached on an unvalidated reader */
		return 0;
	}
	r->pos = c.p;
	if (++r->col == r->ncols) {
		r->col = 0;
		r->col_pos = r->cols;
	} else {
		r->col_pos += 2 + r->col_pos[1];
	}
	return 1;
}

int pub_table_grow_realloc(struct pub_table_builder *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 4096;
	uint8_t *p;

	while (cap < need)
		cap *= 2;
	p = realloc(b->buf, cap);
	if (!p)
		return -ENOMEM;
	b->buf = p;
	b->cap = cap;
	return 0;
}
