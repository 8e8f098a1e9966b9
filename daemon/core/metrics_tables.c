/* SPDX-License-Identifier: MIT */
/*
 * Decoding the TABLE frames pubd_metrics_text reads into rows it can walk
 * more than once: a metric family's samples must be together, so a table
 * of N counter columns is walked N times. Pure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"
#include "proto.h"

int mt_col(const struct mt_table *t, const char *name)
{
	size_t len = strlen(name);
	unsigned i;

	for (i = 0; t && i < t->ncols; i++)
		if (t->cols[i].len == len && !memcmp(t->cols[i].ptr, name, len))
			return (int)i;
	return -1;
}

const struct pub_table_cell *mt_cell(const struct mt_table *t, uint32_t row, int col)
{
	return &t->cells[(size_t)row * t->ncols + (unsigned)col];
}

bool mt_str_is(const struct pub_table_cell *c, const char *s)
{
	return c->type == PUB_COL_STR && c->s.len == strlen(s) && !memcmp(c->s.ptr, s, c->s.len);
}

static int decode_one(const uint8_t *body, size_t blen, struct mt_table *t)
{
	struct pub_table_reader r;
	struct pub_table_cell c;
	size_t n = 0, total;
	uint8_t type;
	unsigned i;

	if (pub_proto_dec_table(body, blen, &r) < 0 || r.ncols == 0 || r.ncols > MT_MAX_COLS)
		return -EPROTO;
	t->name = r.name;
	t->ncols = r.ncols;
	t->nrows = r.nrows;
	for (i = 0; i < r.ncols; i++)
		if (pub_table_col(&r, i, &type, &t->cols[i]) < 0)
			return -EPROTO;
	total = (size_t)r.nrows * r.ncols;
	t->cells = total ? calloc(total, sizeof(*t->cells)) : NULL;
	if (total && !t->cells)
		return -ENOMEM;
	while (n < total && pub_table_next(&r, &c) == 1)
		t->cells[n++] = c;
	return n == total ? 0 : -EPROTO;
}

int mt_decode(const uint8_t *frames, size_t len, struct mt_tables *ts)
{
	size_t off = 0, need;
	const uint8_t *body;
	uint32_t blen;
	uint8_t type;
	int r;

	memset(ts, 0, sizeof(*ts));
	while (off < len) {
		r = pub_proto_frame_peek(frames + off, len - off, len, &type, &blen, &body, &need);
		if (r != 1)
			return -EPROTO;
		off += PUB_PROTO_HDR_LEN + blen;
		if (type != PUB_FRAME_TABLE)
			continue;
		if (ts->n == MT_MAX_TABLES)
			return -EPROTO;
		r = decode_one(body, blen, &ts->v[ts->n]);
		ts->n++;
		if (r < 0)
			return r;
	}
	return 0;
}

const struct mt_table *mt_find(const struct mt_tables *ts, const char *name)
{
	size_t len = strlen(name);
	unsigned i;

	for (i = 0; i < ts->n; i++)
		if (ts->v[i].name.len == len && !memcmp(ts->v[i].name.ptr, name, len))
			return &ts->v[i];
	return NULL;
}

void mt_free(struct mt_tables *ts)
{
	unsigned i;

	for (i = 0; i < ts->n; i++)
		free(ts->v[i].cells);
	memset(ts, 0, sizeof(*ts));
}

void mt_label(struct prom_label *l, const char *name, const struct pub_table_cell *c, char num[24])
{
	l->name = name;
	if (c->type == PUB_COL_STR) {
		l->value = c->s.ptr;
		l->len = c->s.len;
	} else {
		l->len = (size_t)snprintf(num, 24, "%" PRIu64, c->u);
		l->value = num;
	}
}

void mt_families(struct prom_out *o, const struct mt_table *t, const struct mt_colmap *m, unsigned nm,
		 const struct mt_labmap *lab, unsigned nlab, const bool *keep)
{
	struct prom_label l[MT_MAX_LABELS];
	char num[MT_MAX_LABELS][24];
	int lc[MT_MAX_LABELS], c;
	unsigned i, j;
	uint32_t row;

	if (!t || nlab > MT_MAX_LABELS)
		return;
	for (j = 0; j < nlab; j++)
		if ((lc[j] = mt_col(t, lab[j].col)) < 0)
			return;
	for (i = 0; i < nm; i++) {
		if ((c = mt_col(t, m[i].col)) < 0)
			continue;
		prom_family(o, m[i].metric, m[i].type, m[i].help);
		for (row = 0; row < t->nrows; row++) {
			if ((keep && !keep[row]) || mt_cell(t, row, c)->type != PUB_COL_U64)
				continue;
			for (j = 0; j < nlab; j++)
				mt_label(&l[j], lab[j].label, mt_cell(t, row, lc[j]), num[j]);
			prom_sample(o, m[i].metric, l, nlab, mt_cell(t, row, c)->u);
		}
	}
}

void mt_one_gauge(struct prom_out *o, const char *name, const char *help, const struct prom_label *l, unsigned nl,
		  uint64_t v)
{
	prom_family(o, name, PROM_GAUGE, help);
	prom_sample(o, name, l, nl, v);
}
