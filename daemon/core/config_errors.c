/* SPDX-License-Identifier: MIT */
/*
 * Configuration errors: collected (not returned at the first), each with
 * the file, line and column of the offending node, sorted into file order;
 * and the quoting of offending values for those messages.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

static int errs_addv(struct pubd_config_errors *e, const char *file, unsigned line, unsigned column, const char *fmt,
		     va_list ap) __attribute__((format(printf, 5, 0)));
static int errs_addv(struct pubd_config_errors *e, const char *file, unsigned line, unsigned column, const char *fmt,
		     va_list ap)
{
	struct pubd_config_error *v;
	char *msg;

	if (!e->file) {
		e->file = strdup(file ? file : "(config)");
		if (!e->file)
			return -ENOMEM;
	}
	v = realloc(e->v, (e->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	e->v = v;
	if (vasprintf(&msg, fmt, ap) < 0)
		return -ENOMEM;
	v[e->n].line = line;
	v[e->n].column = column;
	v[e->n].message = msg;
	e->n++;
	return 0;
}

int cfg_errs_add(struct pubd_config_errors *e, const char *file, unsigned line, unsigned column, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = errs_addv(e, file, line, column, fmt, ap);
	va_end(ap);
	return ret;
}

void cfg_report_at(struct parse *p, unsigned line, unsigned column, const char *fmt, ...)
{
	va_list ap;
	int ret;

	if (p->stop)
		return;
	if (p->errs->n >= PUBD_CONFIG_MAX_ERRORS) {
		p->stop = true;
		ret = cfg_errs_add(p->errs, p->file, 0, 0, "too many errors (more than %d); stopped looking",
				   PUBD_CONFIG_MAX_ERRORS);
	} else {
		va_start(ap, fmt);
		ret = errs_addv(p->errs, p->file, line, column, fmt, ap);
		va_end(ap);
	}
	if (ret) {
		p->oom = true;
		p->stop = true;
	}
}

/* Errors without a place ("too many errors") go last. */
static int cmp_place(const struct pubd_config_error *a, const struct pubd_config_error *b)
{
	unsigned la = a->line ? a->line : UINT_MAX, lb = b->line ? b->line : UINT_MAX;

	if (la != lb)
		return la < lb ? -1 : 1;
	if (a->column != b->column)
		return a->column < b->column ? -1 : 1;
	return 0;
}

/* Errors in file order; stable, so two at one place keep the order found.
 * Insertion sort: at most PUBD_CONFIG_MAX_ERRORS + 1 of them. */
void cfg_sort_errors(struct pubd_config_errors *e)
{
	struct pubd_config_error t;
	size_t i, j;

	for (i = 1; i < e->n; i++) {
		t = e->v[i];
		for (j = i; j > 0 && cmp_place(&e->v[j - 1], &t) > 0; j--)
			e->v[j] = e->v[j - 1];
		e->v[j] = t;
	}
}

void pubd_config_errors_free(struct pubd_config_errors *e)
{
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->n; i++)
		free(e->v[i].message);
	free(e->v);
	free(e->file);
	memset(e, 0, sizeof(*e));
}

int pubd_config_error_format(const struct pubd_config_errors *e, size_t i, char *buf, size_t cap)
{
	const struct pubd_config_error *x;
	const char *file;

	if (!e || i >= e->n)
		return -EINVAL;
	x = &e->v[i];
	file = e->file ? e->file : "(config)";
	if (x->line)
		return snprintf(buf, cap, "%s:%u:%u: %s", file, x->line, x->column, x->message);
	return snprintf(buf, cap, "%s: %s", file, x->message);
}
