/* SPDX-License-Identifier: MIT */
/*
 * What metrics_text.c and metrics_tables.c share: tables decoded into
 * cells that can be walked again and again.
 */
#ifndef PUBD_METRICS_INTERNAL_H
#define PUBD_METRICS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "prom.h"
#include "proto.h"

#define MT_MAX_COLS   64
#define MT_MAX_TABLES 16

struct mt_table {
	struct pub_str name;
	unsigned ncols;
	struct pub_str cols[MT_MAX_COLS];
	uint32_t nrows;
	struct pub_table_cell *cells; /* nrows * ncols, pointing into the frames */
};

struct mt_tables {
	struct mt_table v[MT_MAX_TABLES];
	unsigned n;
};

/* 0, -EPROTO (malformed or too many tables/columns) or -ENOMEM; mt_free
 * either way. */
int mt_decode(const uint8_t *frames, size_t len, struct mt_tables *ts);
void mt_free(struct mt_tables *ts);
/* The first table of that name, or NULL. */
const struct mt_table *mt_find(const struct mt_tables *ts, const char *name);
/* The column's index, or -1 (also when t is NULL). */
int mt_col(const struct mt_table *t, const char *name);
const struct pub_table_cell *mt_cell(const struct mt_table *t, uint32_t row, int col);
bool mt_str_is(const struct pub_table_cell *c, const char *s);

/* Metrics from columns: a family per mapped column, a sample per row
 * (only rows with keep[row] when keep is not NULL), labels from columns. */
struct mt_colmap {
	const char *col, *metric;
	enum prom_type type;
	const char *help;
};

struct mt_labmap {
	const char *col, *label;
};

#define MT_MAX_LABELS 4
void mt_families(struct prom_out *o, const struct mt_table *t, const struct mt_colmap *m, unsigned nm,
		 const struct mt_labmap *lab, unsigned nlab, const bool *keep);
/* A label from a cell (a number is formatted into num). */
void mt_label(struct prom_label *l, const char *name, const struct pub_table_cell *c, char num[24]);
void mt_one_gauge(struct prom_out *o, const char *name, const char *help, const struct prom_label *l, unsigned nl,
		  uint64_t v);

/* metrics_series.c: the bounded per-source and per-subscriber series and
 * the drops by scope and reason (whose source and subscriber rows follow
 * the same bound). 0 or -ENOMEM. */
int mt_series_metrics(struct prom_out *o, const struct mt_tables *ts, unsigned max_sources, unsigned max_subscribers);
/* metrics_fabric.c: the fabric table's numbers and the port's counters. */
void mt_fabric_metrics(struct prom_out *o, const struct mt_table *t);

#endif
