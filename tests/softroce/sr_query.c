/* SPDX-License-Identifier: MIT */
/*
 * sr_query: one pubd query, with values picked out of its tables, for the
 * daemon-level Soft-RoCE cases (tests/softroce/cases/[3-7]*). Under TCG every
 * exec over 9p costs most of a second; this is one exec where `pubctl --json`
 * piped into jq is two.
 *
 *   sr_query SOCKET QUERY[:ARG] EXPR...
 *
 * QUERY: status, groups, group:NAME, clients, drops, sources.
 * EXPR:  [+|#]TABLE.COLUMN[[COL=VALUE,...]]
 *   One output line per EXPR: the COLUMN of every row of TABLE whose
 *   columns equal the given values (compared as text), separated by
 *   spaces; an empty line when no row matches. A leading '+' prints the sum
 *   of the (numeric) values instead (0 for none), a leading '#' the number
 *   of matching rows.
 *   e.g.  sr_query B.sock status 'fabric.value[key=device]' 'counters.value[counter=rx_self]'
 *         sr_query B.sock drops '+drops.count[scope=source,unit=messages]'
 *
 * Exit status: 0, 1 for bad arguments or an unknown column, 2 when pubd
 * cannot be reached or refuses the query.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pub.h>

#define MAX_EXPR   32
#define MAX_FILTER 8

struct filter {
	char *col, *val;
};

struct expr {
	char mode; /* 0 list, '+' sum, '#' count */
	char *table, *col;
	struct filter f[MAX_FILTER];
	unsigned nf;
	char *out;
	size_t outlen, outcap;
	uint64_t sum, count;
	bool seen_table, bad_col;
};

static struct expr exprs[MAX_EXPR];
static unsigned nexprs;

static int parse_expr(struct expr *e, char *s)
{
	char *dot, *br, *p, *tok, *save = NULL;

	if (*s == '+' || *s == '#')
		e->mode = *s++;
	dot = strchr(s, '.');
	if (!dot)
		return -1;
	*dot = 0;
	e->table = s;
	e->col = dot + 1;
	br = strchr(e->col, '[');
	if (!br)
		return 0;
	*br = 0;
	p = br + 1;
	if (!*p || p[strlen(p) - 1] != ']')
		return -1;
	p[strlen(p) - 1] = 0;
	for (tok = strtok_r(p, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || e->nf == MAX_FILTER)
			return -1;
		*eq = 0;
		e->f[e->nf].col = tok;
		e->f[e->nf].val = eq + 1;
		e->nf++;
	}
	return 0;
}

static void cell_text(const struct pub_value *v, char *buf, size_t len)
{
	switch (v->type) {
	case PUB_VALUE_U64:
		snprintf(buf, len, "%" PRIu64, v->u);
		break;
	case PUB_VALUE_I64:
		snprintf(buf, len, "%" PRId64, v->i);
		break;
	default:
		snprintf(buf, len, "%s", v->s ? v->s : "");
		break;
	}
}

static int col_index(const struct pub_table *t, const char *name)
{
	for (unsigned c = 0; c < t->ncols; c++)
		if (strcmp(t->cols[c].name, name) == 0)
			return (int)c;
	return -1;
}

static void append(struct expr *e, const char *s)
{
	size_t n = strlen(s), need = e->outlen + n + 2;

	if (need > e->outcap) {
		size_t cap = need * 2;
		char *p = realloc(e->out, cap);

		if (!p)
			return;
		e->out = p;
		e->outcap = cap;
	}
	if (e->outlen)
		e->out[e->outlen++] = ' ';
	memcpy(e->out + e->outlen, s, n + 1);
	e->outlen += n;
}

static int on_table(const struct pub_table *t, void *arg)
{
	(void)arg;
	for (unsigned k = 0; k < nexprs; k++) {
		struct expr *e = &exprs[k];
		int ci, fi[MAX_FILTER];

		if (strcmp(e->table, t->name) != 0)
			continue;
		e->seen_table = true;
		ci = col_index(t, e->col);
		if (ci < 0) {
			e->bad_col = true;
			continue;
		}
		for (unsigned j = 0; j < e->nf; j++)
			if ((fi[j] = col_index(t, e->f[j].col)) < 0)
				e->bad_col = true;
		if (e->bad_col)
			continue;
		for (size_t r = 0; r < t->nrows; r++) {
			const struct pub_value *row = t->cells + r * t->ncols;
			char buf[512];
			bool match = true;

			for (unsigned j = 0; j < e->nf && match; j++) {
				cell_text(&row[fi[j]], buf, sizeof(buf));
				match = strcmp(buf, e->f[j].val) == 0;
			}
			if (!match)
				continue;
			e->count++;
			cell_text(&row[ci], buf, sizeof(buf));
			if (row[ci].type == PUB_VALUE_U64)
				e->sum += row[ci].u;
			else
				e->sum += strtoull(buf, NULL, 10);
			append(e, buf);
		}
	}
	return 0;
}

static int query_kind(const char *q)
{
	static const struct {
		const char *name;
		int kind;
	} kinds[] = {
		{"status", PUB_Q_STATUS}, {"groups", PUB_Q_GROUPS},   {"group", PUB_Q_GROUP},
		{"drops", PUB_Q_DROPS},	  {"sources", PUB_Q_SOURCES}, {"clients", PUB_Q_CLIENTS},
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].name, q) == 0)
			return kinds[i].kind;
	return -1;
}

int main(int argc, char **argv)
{
	struct pub_options o = PUB_OPTIONS_INIT;
	char *query, *arg;
	pub_client_t *c;
	int kind, r, ret = 0;

	if (argc < 4 || argc - 3 > MAX_EXPR) {
		fprintf(stderr, "usage: sr_query SOCKET QUERY[:ARG] EXPR... (at most %d)\n", MAX_EXPR);
		return 1;
	}
	query = argv[2];
	arg = strchr(query, ':');
	if (arg)
		*arg++ = 0;
	kind = query_kind(query);
	if (kind < 0 || (kind == PUB_Q_GROUP) != (arg != NULL)) {
		fprintf(stderr, "sr_query: bad query '%s'\n", argv[2]);
		return 1;
	}
	for (int i = 3; i < argc; i++) {
		char *copy = strdup(argv[i]);

		if (!copy || parse_expr(&exprs[nexprs], copy) < 0) {
			fprintf(stderr, "sr_query: bad expression '%s'\n", argv[i]);
			return 1;
		}
		nexprs++;
	}
	o.client_name = "sr_query";
	o.flags = PUB_OPT_NO_RECONNECT;
	r = pub_connect(&c, argv[1], &o);
	if (r < 0) {
		fprintf(stderr, "sr_query: %s\n", pub_errmsg(NULL));
		return 2;
	}
	r = pub_query(c, kind, arg, on_table, NULL);
	if (r < 0) {
		fprintf(stderr, "sr_query: %s\n", pub_errmsg(c));
		pub_close(c);
		return 2;
	}
	pub_close(c);
	for (unsigned k = 0; k < nexprs; k++) {
		struct expr *e = &exprs[k];

		if (e->bad_col || !e->seen_table) {
			fprintf(stderr, "sr_query: %s: no table '%s' with those columns\n", argv[k + 3], e->table);
			ret = 1;
		}
		if (e->mode == '+')
			printf("%" PRIu64 "\n", e->sum);
		else if (e->mode == '#')
			printf("%" PRIu64 "\n", e->count);
		else
			printf("%s\n", e->out ? e->out : "");
		free(e->out);
	}
	return ret;
}
