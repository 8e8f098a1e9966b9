/* SPDX-License-Identifier: MIT */
/*
 * Reassembly: the accounting identity under random loss, reordering and
 * duplication (every message delivered or dropped exactly once).
 */
#include "reasm_harness.h"

/* ---- the property: random loss, reordering and duplication ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Byte off of message (stream, seq): random-looking, recomputable. */
static void body(uint32_t stream, uint64_t seq, size_t off, uint8_t *out, size_t len)
{
	uint64_t key = mix(((uint64_t)stream << 48) ^ seq), w = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		size_t o = off + i;

		if (i == 0 || o % 8 == 0)
			w = mix(key + o / 8);
		out[i] = (uint8_t)(w >> (o % 8 * 8));
	}
}

struct pmsg {
	uint32_t len;
	uint32_t frags;
	uint32_t lost;
	uint32_t delivered;
};

struct pstream {
	uint64_t src, grp;
	size_t mtu;
	uint64_t nmsgs;
	struct pmsg *m;
	uint64_t delivered, msg_drops, dgram_drops;
	uint64_t drops[PUB_DROP__COUNT];
	uint64_t first_fed, max_fed;
	bool fed;
};

struct pdgram {
	uint64_t key; /* feed order */
	uint32_t stream;
	uint32_t frag;
	uint64_t seq;
};

struct prun {
	const char *name;
	unsigned nstreams;
	unsigned nmsgs;
	unsigned loss_pm, dup_pm, delay_pm; /* per mille */
	unsigned window, delay;		    /* reordering, in datagrams */
	bool heartbeats;		    /* reliable heartbeats at start and end */
	bool exact;			    /* no evictions expected: delivered == complete */
	size_t budget;
	uint32_t inflight;
	uint64_t timeout_ns;
	uint64_t seed;
};

struct pctx {
	struct pstream *st;
	unsigned n;
	uint8_t *scratch;
	uint64_t bad;
};

static struct pstream *pfind(struct pctx *c, uint64_t src, uint64_t grp)
{
	unsigned i;

	for (i = 0; i < c->n; i++)
		if (c->st[i].src == src && c->st[i].grp == grp)
			return &c->st[i];
	return NULL;
}

static void p_deliver(void *ctx, uint64_t src, uint64_t grp, uint64_t seq, const uint8_t *data, size_t len,
		      struct pubd_msgbuf *owned)
{
	struct pctx *c = ctx;
	struct pstream *s = pfind(c, src, grp);

	if (!s || seq >= s->nmsgs || s->m[seq].delivered || len != s->m[seq].len) {
		c->bad++;
	} else {
		body((uint32_t)(s - c->st), seq, 0, c->scratch, len);
		if (memcmp(c->scratch, data, len))
			c->bad++;
		s->m[seq].delivered = 1;
		s->delivered++;
	}
	pubd_msgbuf_put(owned);
}

static void p_drop(void *ctx, uint64_t src, uint64_t grp, enum pub_drop_reason why, uint64_t n)
{
	struct pctx *c = ctx;
	struct pstream *s = pfind(c, src, grp);

	if (!s) {
		c->bad++;
		return;
	}
	s->drops[why] += n;
	if (pub_drop_reason_kind(why) == PUB_DROP_KIND_MSG)
		s->msg_drops += n;
	else
		s->dgram_drops += n;
}

static int cmp_dgram(const void *a, const void *b)
{
	const struct pdgram *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static uint32_t random_size(void)
{
	uint64_t k = rnd() % 100;

	if (k < 15)
		return (uint32_t)(rnd() % 65);
	if (k < 45)
		return (uint32_t)(rnd() % 4097);
	if (k < 80)
		return (uint32_t)(rnd() % 65537);
	return (uint32_t)(rnd() % (300 * 1024 + 1));
}

static void feed_dgram(struct pubd_reasm *r, struct pctx *c, uint64_t now, const struct pdgram *d, uint8_t *dg)
{
	struct pstream *s = &c->st[d->stream];
	struct pubd_wire_hdr tmpl = {.source_id = s->src, .group_id = s->grp, .msg_seq = d->seq}, h, out;
	struct pubd_frag_plan p;
	const uint8_t *pl;
	size_t off, len, pll;

	assert_int_equal(pubd_frag_plan(&p, s->m[d->seq].len, s->mtu, SIZE_MAX), 0);
	pubd_frag_get(&p, &tmpl, d->frag, &h, &off, &len);
	pubd_wire_encode(&h, dg);
	body(d->stream, d->seq, off, dg + PUBD_WIRE_HDR_LEN, len);
	assert_int_equal(pubd_wire_decode(dg, PUBD_WIRE_HDR_LEN + len, &out, &pl, &pll), 0);
	if (!s->fed) {
		s->fed = true;
		s->first_fed = d->seq;
	}
	if (d->seq > s->max_fed)
		s->max_fed = d->seq;
	pubd_reasm_push(r, now, &out, pl, pll);
}

/* The streams of a run. Streams 0 and 1 share a group (two sources); the
 * last one is stream 0's source restarted with a new id. */
static void make_streams(struct pctx *c, const struct prun *pr)
{
	static const size_t mtus[] = {1024, 4096, 2048, 9000};
	unsigned k;

	c->n = pr->nstreams;
	c->st = calloc(c->n, sizeof(*c->st));
	c->scratch = malloc(300 * 1024 + 1);
	assert_true(c->st && c->scratch);
	for (k = 0; k < c->n; k++) {
		c->st[k].src = 0x5000 + k;
		c->st[k].grp = k == c->n - 1 ? 0x6000 : 0x6000 + k / 2;
		c->st[k].mtu = mtus[k % 4];
		c->st[k].m = calloc(pr->nmsgs, sizeof(*c->st[k].m));
		assert_non_null(c->st[k].m);
	}
}

/* The datagrams of a run, in feed order once sorted. */
struct plan {
	struct pdgram *dg;
	size_t n, cap, dups;
};

/* Fragment f of message seq of stream k: lost, sent once, or sent twice;
 * its feed position jittered. */
static void plan_fragment(struct plan *pl, const struct prun *pr, struct pmsg *pm, unsigned k, uint32_t f, uint64_t seq)
{
	unsigned copies = 1, j;

	if (rnd() % 1000 < pr->loss_pm) {
		pm->lost++;
		return;
	}
	if (rnd() % 1000 < pr->dup_pm) {
		copies = 2;
		pl->dups++;
	}
	for (j = 0; j < copies; j++) {
		uint64_t pos = (uint64_t)pl->n * 16 + rnd() % (pr->window * 16 + 1);

		if (rnd() % 1000 < pr->delay_pm)
			pos += rnd() % (pr->delay * 16 + 1);
		if (pl->n == pl->cap) {
			pl->cap = pl->cap ? pl->cap * 2 : 4096;
			pl->dg = realloc(pl->dg, pl->cap * sizeof(*pl->dg));
			assert_non_null(pl->dg);
		}
		pl->dg[pl->n++] = (struct pdgram){.key = pos, .stream = k, .frag = f, .seq = seq};
	}
}

/* Messages in send order, interleaved across streams. */
static void plan_messages(struct pctx *c, const struct prun *pr, struct plan *pl)
{
	unsigned k, m;

	for (m = 0; m < pr->nmsgs; m++) {
		/* Halfway, stream 0's source restarts as the last one. */
		k = (unsigned)(rnd() % c->n);
		if (k == c->n - 1 && m < pr->nmsgs / 2)
			k = 0;
		else if (k == 0 && m >= pr->nmsgs / 2)
			k = c->n - 1;
		struct pstream *s = &c->st[k];
		uint64_t seq = s->nmsgs++;
		struct pmsg *pm = &s->m[seq];
		uint32_t f;

		pm->len = random_size();
		pm->frags = nfrags(pm->len, s->mtu);
		for (f = 0; f < pm->frags; f++)
			plan_fragment(pl, pr, pm, k, f, seq);
	}
	qsort(pl->dg, pl->n, sizeof(*pl->dg), cmp_dgram);
}

/* A reliable heartbeat of every stream: at the start (next_seq 0) or at
 * the end (every message sent). */
static void push_heartbeats(struct pubd_reasm *r, const struct pctx *c, uint64_t now, bool at_end)
{
	unsigned k;

	for (k = 0; k < c->n; k++) {
		struct pubd_wire_hdr hb = {.flags = PUBD_WIRE_F_HEARTBEAT,
					   .source_id = c->st[k].src,
					   .group_id = c->st[k].grp,
					   .msg_seq = at_end ? c->st[k].nmsgs : 0};

		pubd_reasm_push(r, now, &hb, NULL, 0);
	}
}

/* Every message of stream k accounted for once, as delivered or dropped. */
static void check_stream(const struct prun *pr, const struct pstream *s, unsigned k)
{
	uint64_t want, complete = 0, partial = 0, none = 0, seq;

	for (seq = 0; seq < s->nmsgs; seq++) {
		if (s->m[seq].lost == 0)
			complete++;
		else if (s->m[seq].lost < s->m[seq].frags)
			partial++;
		else
			none++;
		/* Only complete messages are ever delivered. */
		if (s->m[seq].delivered)
			assert_int_equal(s->m[seq].lost, 0);
	}
	if (pr->heartbeats)
		want = s->nmsgs;
	else
		want = s->fed ? s->max_fed - s->first_fed + 1 : 0;
	if (s->delivered + s->msg_drops != want)
		fail_msg("%s: stream %u: delivered %" PRIu64 " + dropped %" PRIu64 " != %" PRIu64, pr->name, k,
			 s->delivered, s->msg_drops, want);
	if (pr->exact) {
		assert_int_equal(s->delivered, complete);
		assert_int_equal(s->drops[PUB_DROP_REASM_TIMEOUT], partial);
		assert_int_equal(s->drops[PUB_DROP_SEQ_GAP], none);
	}
	assert_int_equal(s->drops[PUB_DROP_MALFORMED], 0);
}

static void run_property(const struct prun *pr)
{
	const struct pubd_reasm_ops pops = {.deliver = p_deliver, .drop = p_drop};
	struct pubd_reasm_config cfg;
	struct pubd_reasm_totals t;
	struct pctx c = {0};
	struct plan pl = {0};
	struct pubd_reasm *r;
	uint64_t now = 0, step = 1000;
	uint8_t *buf;
	unsigned k;
	size_t i;

	rng_state = pr->seed;
	make_streams(&c, pr);
	buf = malloc(PUBD_WIRE_HDR_LEN + 9000);
	assert_non_null(buf);
	plan_messages(&c, pr, &pl);

	pubd_reasm_config_defaults(&cfg);
	cfg.budget_bytes = pr->budget;
	cfg.max_inflight_per_source = pr->inflight;
	cfg.timeout_ns = pr->timeout_ns;
	r = pubd_reasm_create(&cfg, &pops, &c);
	assert_non_null(r);

	if (pr->heartbeats)
		push_heartbeats(r, &c, now, false);
	for (i = 0; i < pl.n; i++) {
		now += step;
		feed_dgram(r, &c, now, &pl.dg[i], buf);
		/* What the loop's timerfd does. */
		if (pubd_reasm_next_deadline(r) <= now) {
			pubd_reasm_expire(r, now);
			assert_true(pubd_reasm_next_deadline(r) > now);
		}
	}
	if (pr->heartbeats)
		push_heartbeats(r, &c, now, true);
	now += pr->timeout_ns;
	pubd_reasm_expire(r, now);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.inflight_msgs, 0);
	assert_int_equal(t.inflight_bytes, 0);
	assert_int_equal(t.streams, c.n);
	assert_int_equal(c.bad, 0);

	for (k = 0; k < c.n; k++)
		check_stream(pr, &c.st[k], k);
	if (pr->exact) {
		uint64_t dd = 0;

		for (k = 0; k < c.n; k++)
			dd += c.st[k].dgram_drops;
		assert_int_equal(dd, pl.dups);
	}
	/* Idle streams age out with nothing left to report. */
	pubd_reasm_expire(r, UINT64_MAX);
	pubd_reasm_totals(r, &t);
	assert_int_equal(t.streams, 0);
	pubd_reasm_destroy(r);

	for (k = 0; k < c.n; k++)
		free(c.st[k].m);
	free(c.st);
	free(c.scratch);
	free(buf);
	free(pl.dg);
}

static void reasm_property_exactly_complete_messages_delivered(void **state)
{
	/* Reordering within a window well inside the timeout, generous
	 * limits: exactly the complete messages come out, byte for byte. */
	const struct prun pr = {
		.name = "exact",
		.nstreams = 7,
		.nmsgs = 3000,
		.loss_pm = 3,
		.dup_pm = 20,
		.window = 300,
		.budget = (size_t)64 << 20,
		.inflight = 64,
		.timeout_ns = 20 * MS,
		.heartbeats = true,
		.exact = true,
		.seed = 1,
	};

	run_property(&pr);
}

static void reasm_property_accounts_every_message_under_pressure(void **state)
{
	/* Tight budget and inflight limit, long delays past the timeout. */
	const struct prun pr = {
		.name = "pressure",
		.nstreams = 5,
		.nmsgs = 2500,
		.loss_pm = 10,
		.dup_pm = 30,
		.delay_pm = 10,
		.window = 200,
		.delay = 5000,
		.budget = 600 * 1024,
		.inflight = 3,
		.timeout_ns = 2 * MS,
		.heartbeats = true,
		.seed = 2,
	};

	run_property(&pr);
}

static void reasm_property_accounts_from_first_seen_without_heartbeats(void **state)
{
	const struct prun pr = {
		.name = "no-heartbeats",
		.nstreams = 6,
		.nmsgs = 2000,
		.loss_pm = 20,
		.dup_pm = 20,
		.delay_pm = 5,
		.window = 500,
		.delay = 3000,
		.budget = (size_t)2 << 20,
		.inflight = 8,
		.timeout_ns = 3 * MS,
		.seed = 3,
	};

	run_property(&pr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reasm_property_exactly_complete_messages_delivered),
		cmocka_unit_test(reasm_property_accounts_every_message_under_pressure),
		cmocka_unit_test(reasm_property_accounts_from_first_seen_without_heartbeats),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
