/* SPDX-License-Identifier: MIT */
/*
 * Reassembly of batch datagrams: pubd_reasm_push_batch must come to exactly
 * what pushing each of the batch's messages alone comes to (the receive
 * path did that before it had a run of its own), with ops.deliver_run and
 * without it. Random batches of two sources, overlapping, repeated, jumping
 * ahead and behind, with messages over max_message_size among them, and
 * lone datagrams and heartbeats in between; the three reassemblies' logs of
 * deliveries and drops, in order, and their streams must be equal. And a
 * batch refused as a forged jump counts as the one datagram it is.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "reasm.h"
#include "wire.h"

#define MS	  1000000ull
#define GRP	  0x77ull
#define MAX_MSG	  40u
#define LOG_MAX	  200000u
#define BATCH_MAX 80u

/* One thing a reassembly reported: a delivery (reason -1) or a drop. */
struct ev {
	int reason;
	uint64_t src, grp, seq_or_n;
	size_t len;
	uint8_t first_byte;
};

struct rec {
	struct ev *v;
	size_t n;
	unsigned runs, run_msgs;
};

static void add(struct rec *k, struct ev e)
{
	assert_true(k->n < LOG_MAX);
	k->v[k->n++] = e;
}

static void on_deliver(void *ctx, uint64_t src, uint64_t grp, uint64_t seq, const uint8_t *data, size_t len,
		       struct pubd_msgbuf *owned)
{
	add(ctx, (struct ev){-1, src, grp, seq, len, len ? data[0] : 0});
	pubd_msgbuf_put(owned);
}

static void on_run(void *ctx, uint64_t src, uint64_t grp, uint64_t first, const struct pubd_msg_view *v, unsigned n)
{
	struct rec *k = ctx;
	unsigned i;

	assert_true(n > 0);
	k->runs++;
	k->run_msgs += n;
	for (i = 0; i < n; i++)
		add(k, (struct ev){-1, src, grp, first + i, v[i].len, v[i].len ? v[i].data[0] : 0});
}

static void on_drop(void *ctx, uint64_t src, uint64_t grp, enum pub_drop_reason why, uint64_t n)
{
	add(ctx, (struct ev){(int)why, src, grp, n, 0, 0});
}

static bool ev_equal(const struct ev *a, const struct ev *b)
{
	return a->reason == b->reason && a->src == b->src && a->grp == b->grp && a->seq_or_n == b->seq_or_n &&
	       a->len == b->len && a->first_byte == b->first_byte;
}

static uint64_t rng = 0x1234567;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The three ways to take a datagram: each message alone, batch without
 * deliver_run, batch with it. */
enum way { ALONE, BATCH, BATCH_RUN, NWAYS };

static void push(struct pubd_reasm *r, enum way w, uint64_t now, const uint8_t *dg, size_t len)
{
	struct pubd_wire_batch_iter it;
	const struct pubd_wire_hdr *mh;
	struct pubd_wire_hdr h;
	const uint8_t *pl, *d;
	size_t pll, dl;

	assert_int_equal(pubd_wire_decode(dg, len, &h, &pl, &pll), PUBD_WIRE_OK);
	if (!(h.flags & PUBD_WIRE_F_BATCH)) {
		pubd_reasm_push(r, now, &h, pl, pll);
		return;
	}
	if (w != ALONE) {
		pubd_reasm_push_batch(r, now, &h, pl, pll, 0);
		return;
	}
	pubd_wire_batch_begin(&it, &h, pl, pll);
	while (pubd_wire_batch_next(&it, &mh, &d, &dl))
		pubd_reasm_push(r, now, mh, d, dl);
}

/* A random datagram of source src: a batch of 2 .. BATCH_MAX messages from
 * seq, some over MAX_MSG; a lone message; or a heartbeat. */
static size_t make_dgram(uint8_t *out, uint64_t src, uint64_t seq)
{
	struct pubd_wire_hdr h = {.version = PUBD_WIRE_VERSION, .group_id = GRP, .source_id = src, .msg_seq = seq};
	unsigned kind = (unsigned)(rnd() % 10), n, i;
	size_t off = PUBD_WIRE_HDR_LEN;

	if (kind == 0) {
		h.flags = PUBD_WIRE_F_HEARTBEAT;
		pubd_wire_encode(&h, out);
		return PUBD_WIRE_HDR_LEN;
	}
	n = kind == 1 ? 1 : 2 + (unsigned)(rnd() % (BATCH_MAX - 1));
	for (i = 0; i < n; i++) {
		/* Mostly small; now and then over max_message_size. */
		uint8_t body[MAX_MSG + 8];
		uint16_t len = (uint16_t)(rnd() % 16 == 0 ? MAX_MSG + 1 + rnd() % 8 : rnd() % (MAX_MSG + 1));

		memset(body, (int)(seq + i), sizeof(body));
		if (n == 1) {
			memcpy(out + off, body, len);
			off += len;
			h.msg_len = len;
			h.frag_count = 1;
		} else {
			off += pubd_wire_batch_put(out + off, body, len);
		}
	}
	if (n > 1) {
		h.flags = PUBD_WIRE_F_BATCH;
		h.frag_count = n;
		h.msg_len = (uint32_t)(off - PUBD_WIRE_HDR_LEN);
	}
	pubd_wire_encode(&h, out);
	return off;
}

static void streams(void *ctx, const struct pubd_reasm_stream_info *s)
{
	struct rec *k = ctx;

	add(k, (struct ev){-2, s->source_id, s->next_seq, s->baseline, s->missing, (uint8_t)s->inflight});
}

static void reasm_batch_is_each_message_alone(void **state)
{
	static uint8_t dg[PUBD_WIRE_HDR_LEN + BATCH_MAX * (MAX_MSG + 10)];
	struct pubd_reasm_ops ops[NWAYS] = {
		{.deliver = on_deliver, .drop = on_drop},
		{.deliver = on_deliver, .drop = on_drop},
		{.deliver = on_deliver, .deliver_run = on_run, .drop = on_drop},
	};
	struct pubd_reasm_config cfg;
	struct pubd_reasm *r[NWAYS];
	struct rec k[NWAYS];
	uint64_t now = 1000 * MS, next[2] = {0, 5000};
	unsigned w, i;

	(void)state;
	pubd_reasm_config_defaults(&cfg);
	cfg.max_message_size = MAX_MSG;
	cfg.timeout_ns = 5 * MS;
	for (w = 0; w < NWAYS; w++) {
		k[w] = (struct rec){.v = calloc(LOG_MAX, sizeof(struct ev))};
		assert_non_null(k[w].v);
		r[w] = pubd_reasm_create(&cfg, &ops[w], &k[w]);
		assert_non_null(r[w]);
	}
	for (i = 0; i < 3000; i++) {
		unsigned s = (unsigned)(rnd() % 2), how = (unsigned)(rnd() % 8);
		uint64_t seq = next[s];
		size_t len;

		/* Mostly the stream's next; else a repeat or overlap behind it,
		 * or a jump ahead (a gap, filled later or not). */
		if (how == 0)
			seq = next[s] > 50 ? next[s] - rnd() % 50 : 0;
		else if (how == 1)
			seq = next[s] + 1 + rnd() % 40;
		len = make_dgram(dg, 0xa0 + s, seq);
		if (seq + 1 > next[s] && how != 0)
			next[s] = seq + 1 + (uint64_t)((len - PUBD_WIRE_HDR_LEN) / 4 % 3);
		now += rnd() % (2 * MS);
		for (w = 0; w < NWAYS; w++)
			push(r[w], w, now, dg, len);
	}
	now += 100 * MS;
	for (w = 0; w < NWAYS; w++) {
		pubd_reasm_expire(r[w], now);
		pubd_reasm_foreach(r[w], streams, &k[w]);
	}
	/* The batches took their fast way often enough to have been tested. */
	assert_true(k[BATCH_RUN].run_msgs > 10000);
	for (w = 1; w < NWAYS; w++) {
		assert_int_equal(k[w].n, k[ALONE].n);
		for (i = 0; i < k[ALONE].n; i++)
			if (!ev_equal(&k[w].v[i], &k[ALONE].v[i]))
				fail_msg("way %u differs at event %u of %zu: reason %d seq/n %llu, alone %d %llu", w, i,
					 k[ALONE].n, k[w].v[i].reason, (unsigned long long)k[w].v[i].seq_or_n,
					 k[ALONE].v[i].reason, (unsigned long long)k[ALONE].v[i].seq_or_n);
	}
	for (w = 0; w < NWAYS; w++) {
		pubd_reasm_destroy(r[w]);
		free(k[w].v);
	}
}

/* A batch's messages from seq, each of len bytes (len 0: empty). */
static size_t batch_of(uint8_t *out, uint64_t src, uint64_t seq, unsigned n, uint16_t len)
{
	struct pubd_wire_hdr h = {.version = PUBD_WIRE_VERSION,
				  .flags = PUBD_WIRE_F_BATCH,
				  .group_id = GRP,
				  .source_id = src,
				  .msg_seq = seq,
				  .frag_count = n};
	uint8_t body[MAX_MSG] = {0};
	size_t off = PUBD_WIRE_HDR_LEN;

	for (unsigned i = 0; i < n; i++)
		off += pubd_wire_batch_put(out + off, body, len);
	h.msg_len = (uint32_t)(off - PUBD_WIRE_HDR_LEN);
	pubd_wire_encode(&h, out);
	return off;
}

/*
 * A forged batch jumping far past its stream's window: one datagram, so
 * one malformed datagram, not one per message it claims (it was 1,024);
 * the stream is where it was, and goes on.
 */
static void reasm_batch_jump_is_one_malformed_datagram(void **state)
{
	static uint8_t dg[PUBD_WIRE_HDR_LEN + 1024 * 2];
	struct pubd_reasm_ops ops = {.deliver = on_deliver, .deliver_run = on_run, .drop = on_drop};
	struct pubd_reasm_config cfg;
	struct rec k = {.v = calloc(LOG_MAX, sizeof(struct ev))};
	struct pubd_reasm *r;
	size_t len, i, malformed = 0, delivered = 0;

	(void)state;
	assert_non_null(k.v);
	pubd_reasm_config_defaults(&cfg);
	r = pubd_reasm_create(&cfg, &ops, &k);
	assert_non_null(r);
	len = batch_of(dg, 0xa0, 0, 8, 4);
	push(r, BATCH_RUN, 1000 * MS, dg, len);
	len = batch_of(dg, 0xa0, 1000000000ull, 1024, 0);
	push(r, BATCH_RUN, 1001 * MS, dg, len);
	len = batch_of(dg, 0xa0, 8, 8, 4);
	push(r, BATCH_RUN, 1002 * MS, dg, len);
	for (i = 0; i < k.n; i++) {
		malformed += k.v[i].reason == PUB_DROP_MALFORMED ? k.v[i].seq_or_n : 0;
		delivered += k.v[i].reason == -1;
	}
	assert_int_equal(malformed, 1);
	assert_int_equal(delivered, 16);
	assert_int_equal(k.v[k.n - 1].seq_or_n, 15);
	pubd_reasm_destroy(r);
	free(k.v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reasm_batch_is_each_message_alone),
		cmocka_unit_test(reasm_batch_jump_is_one_malformed_datagram),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
