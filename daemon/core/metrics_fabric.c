/* SPDX-License-Identifier: MIT */
/*
 * The "fabric" table of `pubctl status` as metrics. Its rows are key/value
 * text (each fabric shows what it has), so the numbers are picked out
 * here: the sizes and fill levels below are gauges, identifiers are left
 * out, every other number is a counter. The kernel's port counters (verbs:
 * "counters.NAME" and "hw_counters.NAME" from sysfs) are one family with
 * the file as a label.
 */
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"

static const char *const gauge_keys[] = {
	"mtu",		"active_mtu",	    "srq_depth",    "srq_low_watermark", "srq_fill",
	"srq_min_fill", "send_queue_depth", "send_credits", "max_inline",	 "groups_joined",
	"groups_up",	"groups_attached",  "peer_ahs",
};
/* Numbers that name rather than measure; lifespan is a setting of hw_counters. */
static const char *const skip_keys[] = {"port", "qp_num", "hw_counters.lifespan"};
static const char *const info_keys[] = {"fabric", "device", "port_state", "link_layer"};

#define PORT_METRIC "pubd_port_counters_total"
#define NELEM(a)    (sizeof(a) / sizeof((a)[0]))

static bool listed(const struct pub_table_cell *k, const char *const *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (mt_str_is(k, v[i]))
			return true;
	return false;
}

/* A decimal u64 and nothing else. */
static bool number(const struct pub_table_cell *c, uint64_t *v)
{
	char buf[24];
	size_t i;

	if (c->type != PUB_COL_STR || !c->s.len || c->s.len > 19)
		return false;
	for (i = 0; i < c->s.len; i++)
		if (c->s.ptr[i] < '0' || c->s.ptr[i] > '9')
			return false;
	memcpy(buf, c->s.ptr, c->s.len);
	buf[c->s.len] = 0;
	*v = strtoull(buf, NULL, 10);
	return true;
}

/* "counters.NAME" or "hw_counters.NAME": the set's length, else 0. */
static size_t port_set(const struct pub_table_cell *k)
{
	if (k->s.len > 9 && !memcmp(k->s.ptr, "counters.", 9))
		return 8;
	if (k->s.len > 12 && !memcmp(k->s.ptr, "hw_counters.", 12))
		return 11;
	return 0;
}

static void port_counters(struct prom_out *o, const struct mt_table *t, int kc, int vc)
{
	struct prom_label l[2] = {{.name = "set"}, {.name = "counter"}};
	bool first = true;
	uint32_t row;
	uint64_t v;

	for (row = 0; row < t->nrows; row++) {
		const struct pub_table_cell *k = mt_cell(t, row, kc);
		size_t set = port_set(k);

		if (!set || listed(k, skip_keys, NELEM(skip_keys)) || !number(mt_cell(t, row, vc), &v))
			continue;
		if (first)
			prom_family(o, PORT_METRIC, PROM_COUNTER,
				    "the RDMA port's own counters (sysfs ports/N/counters and hw_counters, in the "
				    "kernel's units: port_xmit_data and port_rcv_data count 4-byte words)");
		first = false;
		l[0].value = k->s.ptr;
		l[0].len = set;
		l[1].value = k->s.ptr + set + 1;
		l[1].len = k->s.len - set - 1;
		prom_sample(o, PORT_METRIC, l, 2, v);
	}
}

static void fabric_info(struct prom_out *o, const struct mt_table *t, int kc, int vc)
{
	struct prom_label l[NELEM(info_keys)];
	unsigned n = 0, i;
	uint32_t row;

	for (i = 0; i < NELEM(info_keys); i++)
		for (row = 0; row < t->nrows; row++)
			if (mt_str_is(mt_cell(t, row, kc), info_keys[i]) && mt_cell(t, row, vc)->type == PUB_COL_STR) {
				l[n].name = info_keys[i];
				l[n].value = mt_cell(t, row, vc)->s.ptr;
				l[n++].len = mt_cell(t, row, vc)->s.len;
				break;
			}
	mt_one_gauge(o, "pubd_fabric_info", "the fabric in use and its port's state (1)", l, n, 1);
}

void mt_fabric_metrics(struct prom_out *o, const struct mt_table *t)
{
	int kc = mt_col(t, "key"), vc = mt_col(t, "value");
	struct prom_out name = {0}, help = {0};
	uint32_t row;
	uint64_t v;

	if (kc < 0 || vc < 0)
		return;
	fabric_info(o, t, kc, vc);
	for (row = 0; row < t->nrows; row++) {
		const struct pub_table_cell *k = mt_cell(t, row, kc);
		bool gauge = listed(k, gauge_keys, NELEM(gauge_keys));

		if (k->type != PUB_COL_STR || port_set(k) || listed(k, skip_keys, NELEM(skip_keys)) ||
		    !number(mt_cell(t, row, vc), &v))
			continue;
		name.len = help.len = 0;
		prom_text(&name, "pubd_fabric_", 12);
		prom_name_part(&name, k->s.ptr, k->s.len);
		if (!gauge)
			prom_text(&name, "_total", 6);
		prom_text(&help, gauge ? "fabric setting or level " : "fabric counter ", gauge ? 24 : 15);
		prom_text(&help, k->s.ptr, k->s.len);
		prom_text(&help, " (pubctl status, fabric table)", 30);
		if (name.err || help.err)
			break;
		prom_family(o, name.buf, gauge ? PROM_GAUGE : PROM_COUNTER, help.buf);
		prom_sample(o, name.buf, NULL, 0, v);
	}
	prom_free(&name);
	prom_free(&help);
	port_counters(o, t, kc, vc);
}
