// SPDX-License-Identifier: MIT
/*
 * pub_query, and its replies: a TABLE frame, already validated by pub_proto_dec_table,
 * becomes a struct pub_table with NUL-terminated strings for the callback.
 * One allocation for the cells and one for all strings; a query is an
 * operator's request, not a hot path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int pub_table_deliver(struct pub_table_reader *r, pub_table_cb cb, void *cb_arg)
{
	struct pub_table t = {0};
	struct pub_column *cols = NULL;
	struct pub_value *cells = NULL;
	struct pub_table_cell cell;
	struct pub_str name;
	uint8_t type;
	size_t ncells = (size_t)r->nrows * r->ncols, strbytes = r->name.len + 1, k = 0;
	char *strs = NULL, *s;
	int ret = -ENOMEM;

	/* First pass: how many string bytes (with a NUL each). */
	for (unsigned i = 0; i < r->ncols; i++) {
		pub_table_col(r, i, NULL, &name);
		strbytes += name.len + 1;
	}
	while (pub_table_next(r, &cell) == 1)
		strbytes += (cell.type == PUB_COL_STR ? cell.s.len : 0) + 1;

	cols = calloc(r->ncols ? r->ncols : 1, sizeof(*cols));
	cells = calloc(ncells ? ncells : 1, sizeof(*cells));
	strs = malloc(strbytes);
	if (!cols || !cells || !strs)
		goto out;

	s = strs;
	memcpy(s, r->name.ptr, r->name.len);
	s[r->name.len] = '\0';
	t.name = s;
	s += r->name.len + 1;
	for (unsigned i = 0; i < r->ncols; i++) {
		pub_table_col(r, i, &type, &name);
		memcpy(s, name.ptr, name.len);
		s[name.len] = '\0';
		cols[i].name = s;
		cols[i].type = type;
		s += name.len + 1;
	}
	/* Second pass over the same cells. */
	r->pos = r->cells;
	r->col = 0;
	r->col_pos = r->cols;
	while (k < ncells && pub_table_next(r, &cell) == 1) {
		struct pub_value *v = &cells[k++];

		v->type = cell.type;
		v->u = cell.u;
		v->i = (int64_t)cell.u;
		if (cell.type == PUB_COL_STR) {
			memcpy(s, cell.s.ptr, cell.s.len);
			v->len = cell.s.len;
		}
		s[v->len] = '\0';
		v->s = s;
		s += v->len + 1;
	}
	t.ncols = r->ncols;
	t.cols = cols;
	t.nrows = r->nrows;
	t.cells = cells;
	ret = cb ? cb(&t, cb_arg) : 0;
out:
	free(strs);
	free(cells);
	free(cols);
	return ret;
}

int pub_query(pub_client_t *c, int kind, const char *arg, pub_table_cb cb, void *cb_arg)
{
	uint8_t frame[PUB_PROTO_HDR_LEN + 4 + 1 + 1 + PUB_PROTO_NAME_MAX];
	char what[PUB_GROUP_MAX + 32];
	struct pub_waiter w = {.what = what, .cb = cb, .cb_arg = cb_arg};
	size_t alen = arg ? strlen(arg) : 0;
	long n;
	int r;

	if (!c)
		return -EINVAL;
	static const char *const names[] = {
		[PUB_Q_STATUS] = "status",   [PUB_Q_GROUPS] = "groups",	 [PUB_Q_GROUP] = "group",
		[PUB_Q_CLIENTS] = "clients", [PUB_Q_DROPS] = "drops",	 [PUB_Q_SOURCES] = "sources",
		[PUB_Q_RELOAD] = "reload",   [PUB_Q_METRICS] = "metrics"};
	if (kind > 0 && kind < (int)(sizeof(names) / sizeof(names[0])))
		snprintf(what, sizeof(what), "%s%s%.255s", names[kind], arg && *arg ? " " : "", arg ? arg : "");
	else
		snprintf(what, sizeof(what), "query %d", kind);
	if (kind <= 0 || kind > 255 || alen > PUB_PROTO_NAME_MAX)
		return set_err(c, -EINVAL, "%s: bad kind or argument", what);
	if (kind == PUB_Q_GROUP && !alen)
		return set_err(c, -EINVAL, "%s: which group? (give its name)", what);
	w.req_id = next_req(c);
	n = pub_proto_enc_query(frame, sizeof(frame), w.req_id, (uint8_t)kind, arg, alen);
	if (n <= 0)
		return set_err(c, -EINVAL, "%s: cannot encode", what);
	r = request(c, frame, (size_t)n, &w);
	if (r == 0 && w.cb_ret)
		r = w.cb_ret;
	readiness_update(c);
	return r;
}
