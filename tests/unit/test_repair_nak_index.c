/* SPDX-License-Identifier: MIT */
/*
 * The NAK schedule's indexes (repair_nak_index.h): against a plain model of
 * repair_nak.h (an array of gaps, oldest first, scanned whole), many
 * streams, random gaps, fills, GONEs, forgets and runs, with room for few
 * gaps so that the oldest eighth goes often: every NAK and every give-up,
 * in order, and every answer the same. And what a call costs, in gaps and
 * streams looked at, does not grow with the gaps of other streams.
 */
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "repair_nak.h"

#define MS 1000000ull

/* ---- what a schedule did: its calls out, in order ---- */

enum { EV_SEND = 1, EV_GIVE_UP };

struct ev {
	int type;
	uint64_t source, group, first, count, tries;
	bool partial;
};

#define LOG_MAX 4096

struct log {
	struct ev ev[LOG_MAX];
	unsigned n;
	uint64_t rng;	/* the back-off's random numbers */
	unsigned rands; /* how many were drawn */
	bool refuse;	/* sends fail */
};

static void log_ev(struct log *l, struct ev e)
{
	assert_true(l->n < LOG_MAX);
	l->ev[l->n++] = e;
}

static uint64_t lcg(void *ctx)
{
	struct log *l = ctx;

	l->rands++;
	l->rng = l->rng * 6364136223846793005ull + 1442695040888963407ull;
	return l->rng >> 11;
}

static bool on_send(void *ctx, const struct pubd_nak_gap *g, uint64_t first, uint64_t count)
{
	struct log *l = ctx;

	log_ev(l, (struct ev){EV_SEND, g->source, g->group, first, count, g->tries, g->partial});
	return !l->refuse;
}

static void on_give_up(void *ctx, uint64_t source, uint64_t group, uint64_t first, uint64_t count, bool partial)
{
	log_ev(ctx, (struct ev){EV_GIVE_UP, source, group, first, count, 0, partial});
}

/* Group 3 has its own timing: the model asks the same. */
static bool timing(void *ctx, uint64_t group, struct pubd_nak_timing *t)
{
	(void)ctx;
	if (group != 3)
		return false;
	*t = (struct pubd_nak_timing){.backoff_ns = 0, .interval_ns = 7 * MS, .retries = 2};
	return true;
}

static const struct pubd_nak_ops ops = {.send = on_send, .give_up = on_give_up, .timing = timing};

/* ---- the model: repair_nak.h's words, as plainly as they go ---- */

#define MODEL_MAX 256 /* gaps at most */

struct model {
	struct pubd_nak_cfg cfg;
	struct pubd_nak_gap g[MODEL_MAX]; /* oldest first */
	uint64_t born[MODEL_MAX];
	unsigned n;
	uint64_t born_next;
	struct log *log;
};

static struct pubd_nak_timing m_timing(const struct model *m, uint64_t group)
{
	struct pubd_nak_timing t = {
		.backoff_ns = m->cfg.backoff_ns, .interval_ns = m->cfg.interval_ns, .retries = m->cfg.retries};

	timing(NULL, group, &t);
	return t;
}

static void m_remove(struct model *m, unsigned i)
{
	memmove(&m->g[i], &m->g[i + 1], (m->n - i - 1) * sizeof(m->g[0]));
	memmove(&m->born[i], &m->born[i + 1], (m->n - i - 1) * sizeof(m->born[0]));
	m->n--;
}

static void m_give_up(struct model *m, unsigned i)
{
	struct pubd_nak_gap g = m->g[i];

	m_remove(m, i);
	on_give_up(m->log, g.source, g.group, g.first, g.count, g.partial);
}

static void m_append(struct model *m, const struct pubd_nak_gap *g)
{
	assert_true(m->n < MODEL_MAX);
	m->g[m->n] = *g;
	m->born[m->n++] = m->born_next++;
}

static bool m_in(const struct pubd_nak_gap *g, uint64_t source, uint64_t group)
{
	return g->source == source && g->group == group;
}

static void m_gap(struct model *m, uint64_t now, uint64_t source, uint64_t group, uint64_t first, uint64_t count,
		  bool partial)
{
	struct pubd_nak_gap g = {.source = source, .group = group, .partial = partial, .found_ns = now};
	uint64_t b;
	unsigned k;

	if (!count)
		return;
	if (count > PUBD_NAK_GAP_MAX) {
		on_give_up(m->log, source, group, first + PUBD_NAK_GAP_MAX, count - PUBD_NAK_GAP_MAX, partial);
		count = PUBD_NAK_GAP_MAX;
	}
	for (unsigned i = 0; i < m->n; i++)
		if (m_in(&m->g[i], source, group) && m->g[i].first <= first &&
		    first + count <= m->g[i].first + m->g[i].count)
			return;
	if (m->n >= m->cfg.max_gaps)
		for (k = m->cfg.max_gaps / 8 ? m->cfg.max_gaps / 8 : 1; k && m->n; k--)
			m_give_up(m, 0);
	b = m_timing(m, group).backoff_ns;
	g.first = first;
	g.count = count;
	g.due_ns = now + (b ? lcg(m->log) % (b + 1) : 0);
	m_append(m, &g);
}

/* Take [lo, hi) out of gap i; a tail is the youngest gap, or given up. */
static void m_cut(struct model *m, unsigned i, uint64_t lo, uint64_t hi)
{
	struct pubd_nak_gap tail = m->g[i];
	uint64_t end = m->g[i].first + m->g[i].count;

	if (lo == m->g[i].first) {
		m->g[i].first = hi;
		m->g[i].count = end - hi;
		return;
	}
	m->g[i].count = lo - m->g[i].first;
	if (hi == end)
		return;
	tail.first = hi;
	tail.count = end - hi;
	if (m->n < m->cfg.max_gaps)
		m_append(m, &tail);
	else
		on_give_up(m->log, tail.source, tail.group, tail.first, tail.count, tail.partial);
}

static bool m_filled(struct model *m, uint64_t source, uint64_t group, uint64_t seq)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct pubd_nak_gap *g = &m->g[i];

		if (!m_in(g, source, group) || seq < g->first || seq - g->first >= g->count)
			continue;
		if (g->count == 1)
			m_remove(m, i);
		else
			m_cut(m, i, seq, seq + 1);
		return true;
	}
	return false;
}

static void m_gone(struct model *m, uint64_t source, uint64_t group, uint64_t first, uint64_t count)
{
	uint64_t hi_c = first + count;
	unsigned n0 = m->n;

	/* Only the gaps there were: a tail cut off lies past the GONE. */
	for (unsigned i = 0; i < n0 && i < m->n;) {
		struct pubd_nak_gap *g = &m->g[i];
		uint64_t hi_g = g->first + g->count, lo = g->first > first ? g->first : first;
		uint64_t hi = hi_g < hi_c ? hi_g : hi_c;
		bool partial = g->partial;

		if (!m_in(g, source, group) || lo >= hi) {
			i++;
			continue;
		}
		if (lo == g->first && hi == hi_g) {
			m_give_up(m, i);
			n0--;
			continue;
		}
		m_cut(m, i, lo, hi);
		on_give_up(m->log, source, group, lo, hi - lo, partial);
		i++;
	}
}

static void m_forget(struct model *m, uint64_t source, uint64_t group)
{
	for (unsigned i = 0; i < m->n;)
		if (m->g[i].group == group && (!source || m->g[i].source == source))
			m_remove(m, i);
		else
			i++;
}

/* The due gaps, earliest due first (the first found among equals), each
 * once; at most PUBD_NAK_RUN_MAX NAKs. */
static void m_run(struct model *m, uint64_t now)
{
	bool done[MODEL_MAX] = {0};
	unsigned budget = PUBD_NAK_RUN_MAX;

	for (;;) {
		unsigned best = m->n, i;
		struct pubd_nak_gap *g;
		struct pubd_nak_timing t;
		bool went = false;

		for (i = 0; i < m->n; i++)
			if (!done[i] && m->g[i].due_ns <= now &&
			    (best == m->n || m->g[i].due_ns < m->g[best].due_ns ||
			     (m->g[i].due_ns == m->g[best].due_ns && m->born[i] < m->born[best])))
				best = i;
		if (best == m->n)
			return;
		g = &m->g[best];
		t = m_timing(m, g->group);
		if (g->tries >= t.retries) {
			m_give_up(m, best);
			memmove(&done[best], &done[best + 1], (MODEL_MAX - best - 1) * sizeof(done[0]));
			continue;
		}
		if (budget < (g->count + PUBD_NAK_MAX_RANGE - 1) / PUBD_NAK_MAX_RANGE)
			return;
		for (uint64_t off = 0, len; off < g->count; off += len) {
			len = g->count - off < PUBD_NAK_MAX_RANGE ? g->count - off : PUBD_NAK_MAX_RANGE;
			budget--;
			on_send(m->log, g, g->first + off, len);
			went |= !m->log->refuse;
		}
		if (went || now - g->found_ns >= t.backoff_ns + t.interval_ns * ((uint64_t)t.retries + 1))
			g->tries++;
		g->due_ns = now + t.interval_ns;
		done[best] = true;
	}
}

static uint64_t m_next_deadline(const struct model *m)
{
	uint64_t d = UINT64_MAX;

	for (unsigned i = 0; i < m->n; i++)
		if (m->g[i].due_ns < d)
			d = m->g[i].due_ns;
	return d;
}

static bool m_pending(const struct model *m, uint64_t source, uint64_t group, uint64_t seq)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m_in(&m->g[i], source, group) && seq >= m->g[i].first && seq - m->g[i].first < m->g[i].count)
			return true;
	return false;
}

/* ---- the two side by side ---- */

static uint64_t step_rng(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void same_log(const struct log *a, const struct log *b)
{
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->rands, b->rands);
	for (unsigned i = 0; i < a->n; i++) {
		assert_int_equal(a->ev[i].type, b->ev[i].type);
		assert_int_equal(a->ev[i].source, b->ev[i].source);
		assert_int_equal(a->ev[i].group, b->ev[i].group);
		assert_int_equal(a->ev[i].first, b->ev[i].first);
		assert_int_equal(a->ev[i].count, b->ev[i].count);
		assert_int_equal(a->ev[i].tries, b->ev[i].tries);
		assert_int_equal(a->ev[i].partial, b->ev[i].partial);
	}
}

/* sparse: runs seldom and long gaps often, so that a run has more to send
 * than its budget. */
static void agree_with_model(uint32_t max_gaps, unsigned streams, uint64_t seed, bool sparse)
{
	static struct log ls, lm;
	static struct model m;
	struct pubd_nak_cfg cfg = {.backoff_ns = 20 * MS,
				   .interval_ns = 30 * MS,
				   .retries = 3,
				   .max_gaps = max_gaps,
				   .hash_key = {seed, ~seed}};
	struct pubd_nak_sched s;
	uint64_t x = seed, now = 0;

	memset(&ls, 0, sizeof(ls));
	memset(&lm, 0, sizeof(lm));
	memset(&m, 0, sizeof(m));
	ls.rng = lm.rng = seed;
	m.cfg = cfg;
	m.log = &lm;
	assert_int_equal(pubd_nak_init(&s, &cfg, &ops, &ls, lcg, &ls), 0);
	for (int step = 0; step < 30000; step++) {
		uint64_t r = step_rng(&x), op = r % 100, src = 1 + (r >> 8) % streams, grp = 2 + (r >> 20) % 2;
		uint64_t a = (r >> 24) % 64, n = 1 + (r >> 32) % 6;

		if ((r >> 50) % (sparse ? 2 : 8) == 0)
			n = step_rng(&x) % (40 * PUBD_NAK_MAX_RANGE); /* NAKed in pieces: a run's budget runs out */
		if (op < 30) {
			/* overlapping gaps too: the schedule takes them as they come */
			pubd_nak_gap(&s, now, src, grp, a, n, (r >> 40) & 1);
			m_gap(&m, now, src, grp, a, n, (r >> 40) & 1);
		} else if (op < 60) {
			assert_int_equal(pubd_nak_filled(&s, src, grp, a), m_filled(&m, src, grp, a));
		} else if (op < 66) {
			pubd_nak_gone(&s, src, grp, a, n);
			m_gone(&m, src, grp, a, n);
		} else if (op < 67) {
			uint64_t who = (r >> 44) & 1 ? src : 0; /* a stream, or every source of a group */

			pubd_nak_forget(&s, who, grp);
			m_forget(&m, who, grp);
		} else if (op < 90 && (!sparse || (r >> 56) % 16 == 0)) {
			now += (r >> 44) % (15 * MS);
			ls.refuse = lm.refuse = (r >> 60) == 0;
			pubd_nak_run(&s, now);
			m_run(&m, now);
		} else {
			assert_int_equal(pubd_nak_pending(&s, src, grp, a), m_pending(&m, src, grp, a));
		}
		assert_int_equal(pubd_nak_count(&s), m.n);
		assert_true(pubd_nak_count(&s) <= max_gaps);
		assert_int_equal(pubd_nak_next_deadline(&s), m_next_deadline(&m));
		same_log(&ls, &lm);
		ls.n = lm.n = 0;
	}
	pubd_nak_close(&s);
}

static void index_agrees_with_model_few_streams(void **state)
{
	(void)state;
	agree_with_model(16, 3, 0x1234567, false);
}

static void index_agrees_with_model_many_streams(void **state)
{
	(void)state;
	agree_with_model(64, 200, 0xfeedbeef, false);
	agree_with_model(200, 40, 0xabcdef12345ull, false);
	agree_with_model(250, 100, 0x5eed, true);
	agree_with_model(1, 5, 77, false); /* room for one: every new gap gives the old one up */
}

/* ---- cost ---- */

static uint64_t rand_zero(void *ctx)
{
	(void)ctx;
	return 0;
}

/* n streams with a gap each (as a forger's invented sources leave), then
 * what a delivered message, a GONE, a run and a new gap cost. */
static void costs(uint32_t nstreams, uint64_t out[5])
{
	struct pubd_nak_cfg cfg = {
		.backoff_ns = 0, .interval_ns = 100 * MS, .retries = 3, .max_gaps = 4096, .hash_key = {1, 2}};
	struct pubd_nak_sched s;
	struct log l = {0};
	uint64_t v, q;

	assert_int_equal(pubd_nak_init(&s, &cfg, &ops, &l, rand_zero, &l), 0);
	for (q = 0; q < nstreams; q++)
		pubd_nak_gap(&s, 10 * MS + q, 1000 + q, 2, 5, 3, false);
	pubd_nak_gap(&s, 0, 7, 2, 10, 100, false); /* the plain stream's one gap, due first */
	assert_int_equal(pubd_nak_count(&s), nstreams + 1);

	/* 1000 messages of a plain stream without gaps, 1000 of a stream with one */
	v = s.visits;
	for (q = 0; q < 1000; q++)
		assert_false(pubd_nak_filled(&s, 9, 2, q));
	out[0] = s.visits - v;
	v = s.visits;
	for (q = 0; q < 50; q++)
		assert_true(pubd_nak_filled(&s, 7, 2, 10 + 2 * q)); /* splits it, 50 gaps of its own */
	for (q = 0; q < 50; q++)
		assert_false(pubd_nak_filled(&s, 7, 2, 200 + q));
	out[1] = s.visits - v;
	/* a run with one gap due, then one with none */
	v = s.visits;
	pubd_nak_run(&s, 1);
	pubd_nak_run(&s, 2);
	out[2] = s.visits - v;
	/* a GONE on the plain stream; a new gap elsewhere */
	v = s.visits;
	pubd_nak_gone(&s, 7, 2, 0, 1000);
	pubd_nak_gap(&s, 3, 8, 2, 1, 1, false);
	out[3] = s.visits - v;
	pubd_nak_close(&s);
}

static void index_cost_does_not_grow_with_other_streams_gaps(void **state)
{
	uint64_t few[5], many[5];

	(void)state;
	costs(16, few);
	costs(4000, many);
	for (int i = 0; i < 4; i++) {
		print_message("cost %d: %" PRIu64 " with 16 other streams' gaps, %" PRIu64 " with 4,000\n", i, few[i],
			      many[i]);
		/* A chain of a keyed hash can differ by a few; 4,000 gaps
		 * scanned would add 4,000 a call. */
		assert_true(many[i] <= few[i] + few[i] / 4 + 8);
	}
	assert_true(many[0] <= 1000 * 3); /* a message of a stream without gaps: a lookup */
}

/* One stream with 4,096 one-message gaps (as a forger's round of holes
 * leaves: messages two apart, each new one finding the gap below it), then
 * what finding them, 4,096 messages in no gap (the next round's, delivered
 * in order) and the 4,096 holes filled in random order cost. A walk of the
 * stream's gaps costs some 2,000 a call; a lookup by sequence number some
 * log2(4,096) levels. */
#define ONE_STREAM_GAPS 4096u

static void one_stream_costs(uint64_t out[3])
{
	struct pubd_nak_cfg cfg = {.backoff_ns = 10000 * MS,
				   .interval_ns = 60000 * MS,
				   .retries = 1,
				   .max_gaps = ONE_STREAM_GAPS,
				   .hash_key = {5, 6}};
	static uint64_t order[ONE_STREAM_GAPS];
	struct pubd_nak_sched s;
	struct log l = {0};
	uint64_t q, v, x = 0x9e3779b97f4a7c15ull;

	assert_int_equal(pubd_nak_init(&s, &cfg, &ops, &l, rand_zero, &l), 0);
	v = s.visits;
	for (q = 0; q < ONE_STREAM_GAPS; q++) {
		assert_false(pubd_nak_filled(&s, 7, 2, 2 * q + 2)); /* message 2q + 2 came ... */
		pubd_nak_gap(&s, 0, 7, 2, 2 * q + 1, 1, false);	    /* ... so 2q + 1 is missing */
	}
	out[0] = s.visits - v;
	assert_int_equal(pubd_nak_count(&s), ONE_STREAM_GAPS);
	assert_int_equal(l.n, 0);
	v = s.visits;
	for (q = 0; q < ONE_STREAM_GAPS; q++) {
		assert_false(pubd_nak_filled(&s, 7, 2, 2 * ONE_STREAM_GAPS + 2 + q));
		assert_false(pubd_nak_pending(&s, 7, 2, 2 * q));
	}
	out[1] = s.visits - v;
	for (q = 0; q < ONE_STREAM_GAPS; q++)
		order[q] = 2 * q + 1;
	for (q = ONE_STREAM_GAPS - 1; q > 0; q--) {
		uint64_t k = step_rng(&x) % (q + 1), t = order[q];

		order[q] = order[k];
		order[k] = t;
	}
	v = s.visits;
	for (q = 0; q < ONE_STREAM_GAPS; q++) {
		assert_true(pubd_nak_pending(&s, 7, 2, order[q]));
		assert_true(pubd_nak_filled(&s, 7, 2, order[q]));
	}
	out[2] = s.visits - v;
	assert_int_equal(pubd_nak_count(&s), 0);
	pubd_nak_close(&s);
}

static void index_cost_of_a_call_is_logarithmic_in_its_streams_gaps(void **state)
{
	static const char *what[3] = {"4,096 gaps found", "4,096 messages in no gap (filled + pending)",
				      "4,096 holes filled in random order (pending + filled)"};
	uint64_t c[3];

	(void)state;
	one_stream_costs(c);
	for (int i = 0; i < 3; i++)
		print_message("one stream: %s looked at %" PRIu64 " gaps, %.1f a call\n", what[i], c[i],
			      (double)c[i] / (2 * ONE_STREAM_GAPS));
	/* log2(4,096) = 12 and an AVL tree is at most 18 deep, a lookup
	 * looking at two nodes a level and a change going down twice (out
	 * and back in): 64 a call is room enough. A walk of the stream's gaps
	 * looks at 2,048 a call on average. */
	for (int i = 0; i < 3; i++)
		assert_true(c[i] <= 2 * ONE_STREAM_GAPS * 64);
}

/* When full, the oldest eighth goes: looking at that many, not all. */
static void index_full_gives_up_an_eighth_cheaply(void **state)
{
	struct pubd_nak_cfg cfg = {
		.backoff_ns = 0, .interval_ns = 100 * MS, .retries = 3, .max_gaps = 4096, .hash_key = {3, 4}};
	struct pubd_nak_sched s;
	struct log l = {0};
	uint64_t q, v;

	(void)state;
	assert_int_equal(pubd_nak_init(&s, &cfg, &ops, &l, rand_zero, &l), 0);
	for (q = 0; q < 4096; q++)
		pubd_nak_gap(&s, q, 1000 + q, 2, 5, 1, true);
	l.n = 0;
	v = s.visits;
	pubd_nak_gap(&s, 5000, 99, 2, 5, 1, true);
	assert_int_equal(l.n, 512); /* the oldest eighth, oldest first */
	assert_int_equal(l.ev[0].source, 1000);
	assert_int_equal(l.ev[511].source, 1000 + 511);
	assert_int_equal(pubd_nak_count(&s), 4096 - 512 + 1);
	assert_true(s.visits - v <= 512 * 4);
	pubd_nak_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(index_agrees_with_model_few_streams),
		cmocka_unit_test(index_agrees_with_model_many_streams),
		cmocka_unit_test(index_cost_does_not_grow_with_other_streams_gaps),
		cmocka_unit_test(index_cost_of_a_call_is_logarithmic_in_its_streams_gaps),
		cmocka_unit_test(index_full_gives_up_an_eighth_cheaply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
