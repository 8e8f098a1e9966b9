/* SPDX-License-Identifier: MIT */
/*
 * The series that grow with what peers and clients do, bounded: per
 * remote source (at most max_sources, the most recently heard; "(evicted)"
 * always) and per local subscriber (at most max_subscribers), with what was
 * left out counted; and the drops by scope and reason, whose source and
 * subscriber rows follow the same choice, so the label sets stay bounded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"

#define KEY_MAX 600 /* "client:name/group" and "source/group"; names <= 255 bytes */

/* Rows kept, and the names their rows in the drops table carry. */
struct kept {
	bool *row;
	char (*key)[KEY_MAX];
	unsigned nkeys;
	uint64_t omitted;
};

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool is_evicted(const struct pub_table_cell *c)
{
	return mt_str_is(c, "(evicted)");
}

static int kept_alloc(struct kept *k, uint32_t nrows, unsigned max)
{
	k->row = calloc(nrows + 1, sizeof(*k->row));
	k->key = calloc(max + 1, sizeof(*k->key));
	return k->row && k->key ? 0 : -ENOMEM;
}

/* The idle_ms at or under which a source is kept, and how many sources
 * with exactly that idle_ms may still be. */
static int idle_cut(const struct mt_table *t, int ic, int sc, unsigned max, uint64_t *cut, unsigned *at_cut)
{
	uint64_t *idle = calloc(t->nrows + 1, sizeof(*idle));
	unsigned n = 0, below = 0, i;
	uint32_t row;

	if (!idle)
		return -ENOMEM;
	for (row = 0; row < t->nrows; row++)
		if (!is_evicted(mt_cell(t, row, sc)))
			idle[n++] = mt_cell(t, row, ic)->u;
	*cut = UINT64_MAX;
	*at_cut = max;
	if (n > max && max > 0) {
		qsort(idle, n, sizeof(*idle), u64_cmp);
		*cut = idle[max - 1];
		for (i = 0; i < n && idle[i] < *cut; i++)
			below++;
		*at_cut = max - below;
	} else if (max == 0) {
		*cut = 0;
		*at_cut = 0;
	}
	free(idle);
	return 0;
}

static int keep_sources(const struct mt_table *t, unsigned max, struct kept *k)
{
	int ic = mt_col(t, "idle_ms"), sc = mt_col(t, "source"), gc = mt_col(t, "group");
	unsigned at_cut, eq = 0;
	uint64_t cut;
	uint32_t row;

	if (ic < 0 || sc < 0 || gc < 0)
		return 0;
	if (kept_alloc(k, t->nrows, max) || idle_cut(t, ic, sc, max, &cut, &at_cut))
		return -ENOMEM;
	for (row = 0; row < t->nrows; row++) {
		const struct pub_table_cell *s = mt_cell(t, row, sc), *g = mt_cell(t, row, gc);
		uint64_t v = mt_cell(t, row, ic)->u;

		if (is_evicted(s)) {
			k->row[row] = true;
			continue;
		}
		if (v > cut || (v == cut && eq++ >= at_cut) || k->nkeys == max) {
			k->omitted++;
			continue;
		}
		k->row[row] = true;
		snprintf(k->key[k->nkeys++], KEY_MAX, "%.*s/%.*s", (int)s->s.len, s->s.ptr, (int)g->s.len, g->s.ptr);
	}
	return 0;
}

static int keep_subscribers(const struct mt_table *t, unsigned max, struct kept *k)
{
	int gc = mt_col(t, "group"), cc = mt_col(t, "client"), nc = mt_col(t, "name");
	uint32_t row;

	if (gc < 0 || cc < 0 || nc < 0)
		return 0;
	if (kept_alloc(k, t->nrows, max))
		return -ENOMEM;
	for (row = 0; row < t->nrows; row++) {
		const struct pub_table_cell *g = mt_cell(t, row, gc), *n = mt_cell(t, row, nc);

		if (k->nkeys == max) {
			k->omitted++;
			continue;
		}
		k->row[row] = true;
		snprintf(k->key[k->nkeys++], KEY_MAX, "%" PRIu64 ":%.*s/%.*s", mt_cell(t, row, cc)->u, (int)n->s.len,
			 n->s.ptr, (int)g->s.len, g->s.ptr);
	}
	return 0;
}

static bool key_kept(const struct kept *k, const struct pub_table_cell *name)
{
	unsigned i;

	for (i = 0; i < k->nkeys; i++)
		if (mt_str_is(name, k->key[i]))
			return true;
	return false;
}

/* Two families, by what a reason counts: messages or datagrams. */
static void drop_metrics(struct prom_out *o, const struct mt_table *t, const struct kept *src, const struct kept *sub)
{
	static const char *const unit[] = {"messages", "datagrams"};
	static const char *const metric[] = {"pubd_dropped_messages_total", "pubd_dropped_datagrams_total"};
	static const char *const help[] = {
		"messages not delivered, by scope (daemon, group, group-subscribers, source, subscriber), name and "
		"reason",
		"datagrams discarded without losing a message (duplicate, stale) or not tied to one (malformed)"};
	int sc = mt_col(t, "scope"), nc = mt_col(t, "name"), rc = mt_col(t, "reason"), uc = mt_col(t, "unit"),
	    cc = mt_col(t, "count");
	struct prom_label l[3];
	char num[3][24];
	uint32_t row;

	if (sc < 0 || nc < 0 || rc < 0 || uc < 0 || cc < 0)
		return;
	for (unsigned u = 0; u < 2; u++) {
		prom_family(o, metric[u], PROM_COUNTER, help[u]);
		for (row = 0; row < t->nrows; row++) {
			const struct pub_table_cell *scope = mt_cell(t, row, sc), *name = mt_cell(t, row, nc);

			if (!mt_str_is(mt_cell(t, row, uc), unit[u]) ||
			    (mt_str_is(scope, "source") && !is_evicted(name) && !key_kept(src, name)) ||
			    (mt_str_is(scope, "subscriber") && !key_kept(sub, name)))
				continue;
			mt_label(&l[0], "scope", scope, num[0]);
			mt_label(&l[1], "name", name, num[1]);
			mt_label(&l[2], "reason", mt_cell(t, row, rc), num[2]);
			prom_sample(o, metric[u], l, 3, mt_cell(t, row, cc)->u);
		}
	}
}

static void source_metrics(struct prom_out *o, const struct mt_table *t, const struct kept *k, unsigned max)
{
	static const struct mt_colmap m[] = {
		{"delivered", "pubd_source_messages_delivered_total", PROM_COUNTER,
		 "messages of a remote source delivered here (at most the most recently heard sources, see "
		 "pubd_metrics_sources_omitted; source=\"(evicted)\": sources evicted by limits.max_sources)"},
		{"bytes", "pubd_source_bytes_total", PROM_COUNTER, "bytes of those messages"},
		{"dropped", "pubd_source_messages_dropped_total", PROM_COUNTER, "messages of the source lost here"},
		{"inflight", "pubd_source_reasm_inflight_messages", PROM_GAUGE, "partial messages of the source"},
		{"missing", "pubd_source_missing_messages", PROM_GAUGE, "messages of the source awaited in a gap"},
	};
	static const struct mt_labmap lab[] = {{"source", "source"}, {"group", "group"}};
	char help[160];

	mt_families(o, t, m, sizeof(m) / sizeof(m[0]), lab, 2, k->row);
	snprintf(help, sizeof(help), "remote sources left out of the per-source series (at most %u are shown)", max);
	mt_one_gauge(o, "pubd_metrics_sources_omitted", help, NULL, 0, k->omitted);
}

static void subscriber_metrics(struct prom_out *o, const struct mt_table *t, const struct kept *k, unsigned max)
{
	static const struct mt_colmap m[] = {
		{"delivered", "pubd_subscriber_messages_delivered_total", PROM_COUNTER,
		 "messages written to a local subscriber (client id and name, group)"},
		{"dropped", "pubd_subscriber_messages_dropped_total", PROM_COUNTER, "messages the subscriber lost"},
		{"queued", "pubd_subscriber_queued_messages", PROM_GAUGE, "messages waiting for the subscriber"},
	};
	static const struct mt_labmap lab[] = {{"group", "group"}, {"client", "client"}, {"name", "name"}};
	char help[160];

	mt_families(o, t, m, sizeof(m) / sizeof(m[0]), lab, 3, k->row);
	snprintf(help, sizeof(help), "subscriptions left out of the per-subscriber series (at most %u are shown)", max);
	mt_one_gauge(o, "pubd_metrics_subscribers_omitted", help, NULL, 0, k->omitted);
}

int mt_series_metrics(struct prom_out *o, const struct mt_tables *ts, unsigned max_sources, unsigned max_subscribers)
{
	const struct mt_table *src = mt_find(ts, "sources"), *sub = mt_find(ts, "subscribers"),
			      *drops = mt_find(ts, "drops");
	struct kept ks = {0}, kb = {0};
	int r = 0;

	if (src && (r = keep_sources(src, max_sources, &ks)) < 0)
		goto out;
	if (sub && (r = keep_subscribers(sub, max_subscribers, &kb)) < 0)
		goto out;
	if (src)
		source_metrics(o, src, &ks, max_sources);
	if (sub)
		subscriber_metrics(o, sub, &kb, max_subscribers);
	if (drops)
		drop_metrics(o, drops, &ks, &kb);
out:
	free(ks.row);
	free(ks.key);
	free(kb.row);
	free(kb.key);
	return r;
}
