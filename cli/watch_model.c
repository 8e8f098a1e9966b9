// SPDX-License-Identifier: MIT
/*
 * pubctl watch's samples and rates (watch_model.h). Tables are read by
 * column name, never by position, so columns pubd adds later change nothing
 * here; a column that is missing reads as 0.
 */
#include <stdlib.h>
#include <string.h>

#include "watch_model.h"

void watch_sample_init(struct watch_sample *s)
{
	memset(s, 0, sizeof(*s));
}

void watch_sample_clear(struct watch_sample *s)
{
	struct watch_group *groups = s->groups;
	unsigned cap = s->cap;

	memset(s, 0, sizeof(*s));
	s->groups = groups;
	s->cap = cap;
}

void watch_sample_close(struct watch_sample *s)
{
	free(s->groups);
	memset(s, 0, sizeof(*s));
}

void watch_sanitise(char *dst, size_t n, const char *s)
{
	size_t i = 0;

	if (!n)
		return;
	for (; s && s[i] && i + 1 < n; i++)
		dst[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	dst[i] = 0;
}

static int column(const struct pub_table *t, const char *name)
{
	for (unsigned c = 0; c < t->ncols; c++)
		if (strcmp(t->cols[c].name, name) == 0)
			return (int)c;
	return -1;
}

static const struct pub_value *cell(const struct pub_table *t, size_t row, const char *name)
{
	int c = column(t, name);

	return c < 0 || row >= t->nrows ? NULL : &t->cells[row * t->ncols + (unsigned)c];
}

/* A number, whether pubd sent it as one or as text (the fabric table's values). */
static uint64_t value_u64(const struct pub_value *v)
{
	char *end;
	uint64_t n;

	if (!v)
		return 0;
	if (v->type == PUB_VALUE_U64)
		return v->u;
	if (v->type == PUB_VALUE_I64)
		return v->i < 0 ? 0 : (uint64_t)v->i;
	n = strtoull(v->s, &end, 10);
	return end != v->s && !*end ? n : 0;
}

static uint64_t cell_u64(const struct pub_table *t, size_t row, const char *name)
{
	return value_u64(cell(t, row, name));
}

static void cell_str(const struct pub_table *t, size_t row, const char *name, char *dst, size_t n)
{
	const struct pub_value *v = cell(t, row, name);

	watch_sanitise(dst, n, v && v->type == PUB_VALUE_STR ? v->s : "");
}

static void status_table(struct watch_sample *s, const struct pub_table *t)
{
	cell_str(t, 0, "version", s->version, sizeof(s->version));
	cell_str(t, 0, "fabric", s->fabric, sizeof(s->fabric));
	s->pid = cell_u64(t, 0, "pid");
	s->uptime_s = cell_u64(t, 0, "uptime_s");
	s->clients = cell_u64(t, 0, "clients");
	s->ngroups_cfg = cell_u64(t, 0, "groups");
	s->dropped = cell_u64(t, 0, "dropped");
	s->have_status = t->nrows > 0;
}

bool watch_is_error_counter(const char *key)
{
	/* The fabrics' own (tx_post_errors, rx_truncated, rx_kernel_drops ...) and the
	 * port's from sysfs (counters.symbol_error, counters.port_xmit_discards,
	 * counters.link_downed, hw_counters.retry_exceeded_err ...). */
	static const char *const words[] = {"err",	 "discard",	 "downed",
					    "truncated", "kernel_drops", "out_of_credits",
					    "dropped",	 "too_big",	 "exceeded"};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(key, words[i]))
			return true;
	return false;
}

/* The fabric table: key/value rows, values as text. */
static void fabric_table(struct watch_sample *s, const struct pub_table *t)
{
	char key[WATCH_NAME_MAX];

	for (size_t row = 0; row < t->nrows; row++) {
		const struct pub_value *v = cell(t, row, "value");
		uint64_t n = value_u64(v);

		cell_str(t, row, "key", key, sizeof(key));
		if (strcmp(key, "port_state") == 0)
			watch_sanitise(s->port_state, sizeof(s->port_state), v ? v->s : "");
		else if (strcmp(key, "tx_datagrams") == 0)
			s->tx_pkts = n;
		else if (strcmp(key, "tx_bytes") == 0)
			s->tx_bytes = n;
		else if (strcmp(key, "rx_datagrams") == 0)
			s->rx_pkts = n;
		else if (strcmp(key, "rx_bytes") == 0)
			s->rx_bytes = n;
		else if (watch_is_error_counter(key) && s->nerrors < WATCH_ERRORS) {
			memcpy(s->errors[s->nerrors].name, key, sizeof(key));
			s->errors[s->nerrors++].v = n;
		}
	}
}

static int group_index(const struct watch_sample *s, const char *name)
{
	for (unsigned i = 0; i < s->ngroups; i++)
		if (strcmp(s->groups[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int groups_table(struct watch_sample *s, const struct pub_table *t)
{
	if (t->nrows > s->cap) {
		struct watch_group *g = realloc(s->groups, t->nrows * sizeof(*g));

		if (!g)
			return -1;
		s->groups = g;
		s->cap = (unsigned)t->nrows;
	}
	s->ngroups = (unsigned)t->nrows;
	s->groups_joined = 0;
	for (size_t row = 0; row < t->nrows; row++) {
		struct watch_group *g = &s->groups[row];

		memset(g, 0, sizeof(*g));
		cell_str(t, row, "name", g->name, sizeof(g->name));
		g->subscribers = cell_u64(t, row, "subscribers");
		g->published = cell_u64(t, row, "published");
		g->published_bytes = cell_u64(t, row, "published_bytes");
		g->delivered = cell_u64(t, row, "delivered");
		g->delivered_bytes = cell_u64(t, row, "delivered_bytes");
		g->received = cell_u64(t, row, "received");
		g->received_bytes = cell_u64(t, row, "received_bytes");
		g->dropped = cell_u64(t, row, "dropped") + cell_u64(t, row, "sub_dropped");
		g->repaired = cell_u64(t, row, "repaired");
		g->unrecovered = cell_u64(t, row, "unrecovered");
		g->naks = cell_u64(t, row, "naks_sent") + cell_u64(t, row, "naks_received");
		/* The daemon's view of its joins (the fabric's own count differs per fabric). */
		s->groups_joined += cell_u64(t, row, "joined") != 0;
	}
	s->have_groups = true;
	return 0;
}

static void count_add(struct watch_counts *c, const char *name, uint64_t v)
{
	for (unsigned i = 0; i < c->n; i++)
		if (strcmp(c->v[i].name, name) == 0) {
			c->v[i].v += v;
			return;
		}
	if (c->n < WATCH_REASONS) {
		watch_sanitise(c->v[c->n].name, sizeof(c->v[c->n].name), name);
		c->v[c->n++].v = v;
	}
}

/*
 * The drops table: one row per scope, name and reason. The daemon's own and
 * the groups' scopes add up to every drop once; sources and subscribers
 * break the same drops down again, so they are not summed in.
 */
static void drops_table(struct watch_sample *s, const struct pub_table *t)
{
	char scope[32], name[WATCH_NAME_MAX], reason[WATCH_REASON_MAX];
	int g;

	for (size_t row = 0; row < t->nrows; row++) {
		uint64_t n = cell_u64(t, row, "count");

		cell_str(t, row, "scope", scope, sizeof(scope));
		cell_str(t, row, "name", name, sizeof(name));
		cell_str(t, row, "reason", reason, sizeof(reason));
		if (strcmp(scope, "daemon") == 0) {
			count_add(&s->reasons, reason, n);
		} else if (strcmp(scope, "group") == 0 || strcmp(scope, "group-subscribers") == 0) {
			count_add(&s->reasons, reason, n);
			g = group_index(s, name);
			if (g >= 0)
				count_add(&s->groups[g].reasons, reason, n);
		}
	}
}

/* pubd caps its tables and says so in a table "more" (table, rows_not_shown). */
static void more_table(struct watch_sample *s, const struct pub_table *t)
{
	char table[32];

	for (size_t row = 0; row < t->nrows; row++) {
		cell_str(t, row, "table", table, sizeof(table));
		if (strcmp(table, "groups") == 0)
			s->groups_not_sent += cell_u64(t, row, "rows_not_shown");
	}
}

int watch_sample_table(const struct pub_table *t, void *arg)
{
	struct watch_sample *s = arg;

	if (strcmp(t->name, "status") == 0)
		status_table(s, t);
	else if (strcmp(t->name, "fabric") == 0)
		fabric_table(s, t);
	else if (strcmp(t->name, "groups") == 0)
		return groups_table(s, t);
	else if (strcmp(t->name, "drops") == 0)
		drops_table(s, t);
	else if (strcmp(t->name, "more") == 0)
		more_table(s, t);
	return 0;
}

void watch_rates_init(struct watch_rates *r)
{
	memset(r, 0, sizeof(*r));
}

void watch_rates_close(struct watch_rates *r)
{
	free(r->groups);
	memset(r, 0, sizeof(*r));
}

double watch_rate(uint64_t prev, uint64_t cur, double elapsed)
{
	if (cur < prev || !(elapsed > 0))
		return 0;
	return (double)(cur - prev) / elapsed;
}

static uint64_t count_of(const struct watch_counts *c, const char *name)
{
	for (unsigned i = 0; i < c->n; i++)
		if (strcmp(c->v[i].name, name) == 0)
			return c->v[i].v;
	return 0;
}

/* The reason whose count grew most, or NULL when none grew. */
static const char *top_reason(const struct watch_counts *prev, const struct watch_counts *cur)
{
	const char *best = NULL;
	uint64_t most = 0;

	for (unsigned i = 0; i < cur->n; i++) {
		uint64_t was = count_of(prev, cur->v[i].name);

		if (cur->v[i].v > was && cur->v[i].v - was > most) {
			most = cur->v[i].v - was;
			best = cur->v[i].name;
		}
	}
	return best;
}

/* The daemon-wide reasons that grew, fastest first (at most three). */
static void top_reasons(struct watch_rates *r, const struct watch_sample *prev, const struct watch_sample *cur)
{
	r->ntop = 0;
	for (unsigned i = 0; i < cur->reasons.n; i++) {
		double rate =
			watch_rate(count_of(&prev->reasons, cur->reasons.v[i].name), cur->reasons.v[i].v, r->elapsed);
		unsigned at;

		if (rate <= 0)
			continue;
		for (at = r->ntop; at > 0 && r->top[at - 1].rate < rate; at--)
			if (at < 3)
				r->top[at] = r->top[at - 1];
		if (at < 3) {
			r->top[at].name = cur->reasons.v[i].name;
			r->top[at].rate = rate;
			if (r->ntop < 3)
				r->ntop++;
		}
	}
}

static void group_rates(struct watch_group_rates *gr, const struct watch_group *p, const struct watch_group *g,
			double dt)
{
	gr->pub_msgs = watch_rate(p->published, g->published, dt);
	gr->pub_bytes = watch_rate(p->published_bytes, g->published_bytes, dt);
	gr->dlv_msgs = watch_rate(p->delivered, g->delivered, dt);
	gr->dlv_bytes = watch_rate(p->delivered_bytes, g->delivered_bytes, dt);
	gr->rcv_msgs = watch_rate(p->received, g->received, dt);
	gr->rcv_bytes = watch_rate(p->received_bytes, g->received_bytes, dt);
	gr->drops = watch_rate(p->dropped, g->dropped, dt);
	gr->repaired = watch_rate(p->repaired, g->repaired, dt);
	gr->unrecovered = watch_rate(p->unrecovered, g->unrecovered, dt);
	gr->naks = watch_rate(p->naks, g->naks, dt);
	gr->top_reason = top_reason(&p->reasons, &g->reasons);
}

int watch_rates_compute(struct watch_rates *r, const struct watch_sample *prev, const struct watch_sample *cur,
			double elapsed)
{
	if (cur->ngroups > r->cap) {
		struct watch_group_rates *v = realloc(r->groups, cur->ngroups * sizeof(*v));

		if (!v)
			return -1;
		r->groups = v;
		r->cap = cur->ngroups;
	}
	/* A group new since prev (a reload) has its rates from the next sample. */
	r->ngroups = cur->ngroups;
	memset(r->groups, 0, r->ngroups * sizeof(*r->groups));
	r->elapsed = elapsed;
	r->valid = prev && prev->have_status && cur->have_status && prev->pid == cur->pid &&
		   cur->uptime_s >= prev->uptime_s && elapsed > 0;
	r->tx_pps = r->tx_bps = r->rx_pps = r->rx_bps = r->drops = 0;
	r->ntop = 0;
	for (unsigned i = 0; i < cur->ngroups; i++) {
		const struct watch_group *g = &cur->groups[i];
		int at = r->valid ? group_index(prev, g->name) : -1;

		r->groups[i].g = g;
		if (at >= 0)
			group_rates(&r->groups[i], &prev->groups[at], g, elapsed);
	}
	if (!r->valid)
		return 0;
	r->tx_pps = watch_rate(prev->tx_pkts, cur->tx_pkts, elapsed);
	r->tx_bps = watch_rate(prev->tx_bytes, cur->tx_bytes, elapsed);
	r->rx_pps = watch_rate(prev->rx_pkts, cur->rx_pkts, elapsed);
	r->rx_bps = watch_rate(prev->rx_bytes, cur->rx_bytes, elapsed);
	r->drops = watch_rate(prev->dropped, cur->dropped, elapsed);
	top_reasons(r, prev, cur);
	return 0;
}
