/* SPDX-License-Identifier: MIT */
/*
 * Writing the Prometheus text exposition format (version 0.0.4): HELP and
 * TYPE lines, then a family's samples, one per line, label values escaped.
 * Pure: text into a growing buffer, no fd. The metrics of pubd are mapped
 * onto it in metrics_text.c.
 */
#ifndef PUBD_PROM_H
#define PUBD_PROM_H

#include <stddef.h>
#include <stdint.h>

/* The text so far; err is the first error (-ENOMEM), after which every
 * call does nothing. buf is NUL-terminated whenever len > 0. */
struct prom_out {
	char *buf;
	size_t len, cap;
	int err;
};

/* One label of a sample: value len bytes, escaped on output. */
struct prom_label {
	const char *name;
	const char *value;
	size_t len;
};

enum prom_type { PROM_COUNTER, PROM_GAUGE };

/* "# HELP name help" (help escaped) and "# TYPE name counter|gauge". */
void prom_family(struct prom_out *o, const char *name, enum prom_type type, const char *help);
/* "name{l1=\"v1\",...} value"; no braces when nlabels is 0. */
void prom_sample(struct prom_out *o, const char *name, const struct prom_label *labels, unsigned nlabels,
		 uint64_t value);
/* Append s as a metric-name part: every byte outside [a-zA-Z0-9_] becomes
 * '_' (fabric and port counter names come from the kernel and the tables). */
void prom_name_part(struct prom_out *o, const char *s, size_t len);
void prom_text(struct prom_out *o, const char *s, size_t len);
void prom_free(struct prom_out *o);

#endif
