/* SPDX-License-Identifier: MIT */
/*
 * Batches (wire.h, fabric.batch) through two daemons on the fake fabric:
 * small messages queued together leave in one datagram, a lone message
 * still goes at once on its own, every message arrives whole and in order,
 * a lost batch is counted as exactly the messages it carried, a repair
 * group gets them back, and fabric.batch: false sends one datagram per
 * message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto.h"
#include "server_internal.h" /* white-box: the clients' counts */
#include "test_daemon_harness.h"
#include "wire.h"

static const char *body(const char *repair)
{
	static char b[512];

	snprintf(b, sizeof(b),
		 "limits:\n  reassembly_timeout_ms: 100\n  subscriber_queue: 65536\n"
		 "groups:\n"
		 "  - name: s\n"
		 "    address: 239.78.1.1\n"
		 "    repair: %s\n",
		 repair);
	return b;
}

/* Message k: mostly small, every 50th larger than one fragment (the fake's
 * MTU is 1024), so batches end where a fragmented message comes. */
static size_t msg_len(uint64_t k)
{
	return k % 50 == 49 ? 2500 : k % 7;
}

static uint8_t msg_byte(uint64_t k, size_t i)
{
	return (uint8_t)(k * 31 + i);
}

/* Write the PUBLISH frames of messages [from, to) in one go, so pubd finds
 * them queued together. */
static void publish(struct hc *pub, uint64_t from, uint64_t to)
{
	uint8_t payload[4096];
	size_t cap = (size_t)(to - from) * 2600 + 64, n = 0, i;
	uint8_t *frames = malloc(cap);
	uint64_t k;

	assert_non_null(frames);
	for (k = from; k < to; k++) {
		for (i = 0; i < msg_len(k); i++)
			payload[i] = msg_byte(k, i);
		n += hc_enc_publish(frames + n, cap - n, "s", payload, msg_len(k));
	}
	assert_int_equal(hc_write(pub, frames, n, 5000), 0);
	free(frames);
}

static void drain(struct hd *a, uint64_t published)
{
	uint64_t dl = hd_deadline(5000);
	struct pubd_group *g = hd_group(a, "s");

	while (!hd_past(dl) && (g->txq_head || a->d.counters[PUBD_CTR_MSG_PUBLISHED] < published))
		hd_turn(a, 1);
	assert_null(g->txq_head);
	assert_int_equal(a->d.counters[PUBD_CTR_MSG_PUBLISHED], published);
}

#include "test_daemon_inorder.h"

/* What a sent, by kind: batches and the messages in them, other datagrams. */
struct census {
	unsigned batches, batched, plain, largest;
	size_t first_batch; /* its index among the datagrams sent */
	uint64_t first_batch_seq;
	uint32_t first_batch_count, largest_batch;
};

static struct census census(struct hd *a)
{
	struct census c = {0};
	size_t i;

	for (i = 0; i < pubd_fake_sent_count(a->fk); i++) {
		const struct pubd_fake_sent *r = pubd_fake_sent_at(a->fk, i);
		struct pubd_wire_hdr h;
		const uint8_t *p;
		size_t plen;

		assert_int_equal(pubd_wire_decode(r->data, r->len, &h, &p, &plen), 0);
		assert_true(r->len <= a->d.mtu);
		if (r->len > c.largest)
			c.largest = r->len;
		if (h.flags & PUBD_WIRE_F_BATCH) {
			if (!c.batches) {
				c.first_batch = i;
				c.first_batch_seq = h.msg_seq;
				c.first_batch_count = h.frag_count;
			}
			if (h.frag_count > c.largest_batch)
				c.largest_batch = h.frag_count;
			c.batches++;
			c.batched += h.frag_count;
		} else if (!(h.flags & PUBD_WIRE_F_HEARTBEAT)) {
			c.plain++;
		}
	}
	return c;
}

/* Move a's datagrams to b, but for the one whose index is skip (or none). */
static void move(struct hd *a, struct hd *b, size_t skip)
{
	struct pubd_group *gb = hd_group(b, "s");
	size_t i;

	for (i = 0; i < pubd_fake_sent_count(a->fk); i++) {
		const struct pubd_fake_sent *r = pubd_fake_sent_at(a->fk, i);

		if (i != skip)
			pubd_fake_inject_from(b->fk, gb->slot, r->data, r->len, pubd_fake_peer_id(a->fk));
	}
	pubd_fake_sent_clear(a->fk);
}

/* Messages 0 .. n-1 from a to b, all but the first batch: message 0 goes
 * first on its own, so that b knows the stream before the loss (a receiver
 * counts from the first message it hears). */
static struct census lose_first_batch(struct hd *a, struct hd *b, struct hc *pub, uint64_t n)
{
	struct census c;

	publish(pub, 0, 1);
	drain(a, 1);
	move(a, b, SIZE_MAX);
	publish(pub, 1, n);
	drain(a, n);
	c = census(a);
	assert_true(c.batches > 0 && c.first_batch_count >= 2);
	move(a, b, c.first_batch);
	return c;
}

static void start_pair(struct hd *a, struct hd *b, const char *fabric_a, const char *repair_a, const char *repair_b,
		       struct hc *pub, struct hc *sub)
{
	assert_int_equal(hd_start(a, fabric_a, body(repair_a)), 0);
	assert_int_equal(hd_start(b, NULL, body(repair_b)), 0);
	assert_int_equal(hc_connect(b, sub, 0), 0);
	assert_int_equal(hc_hello(sub, "sub"), 0);
	assert_int_equal(hc_group_req(sub, PUB_FRAME_SUBSCRIBE, "s", NULL), 0);
	assert_int_equal(hc_connect(a, pub, 0), 0);
	assert_int_equal(hc_hello(pub, "pub"), 0);
}

static void stop_pair(struct hd *a, struct hd *b, struct hc *pub, struct hc *sub)
{
	hc_close(pub);
	hc_close(sub);
	hd_stop(a);
	hd_stop(b);
}

static void receive_all(struct hd *b, struct hc *sub, struct inorder *v, uint64_t want)
{
	uint64_t dl = hd_deadline(5000);

	while (!hd_past(dl) && v->delivered < want) {
		hd_turn(b, 1);
		take_in_order(sub, v);
	}
}

static void test_small_messages_share_datagrams(void **state)
{
	static struct hd a, b;
	const uint64_t N = 2000;
	struct hc pub, sub;
	struct census c;
	struct inorder v = {.got = calloc(N, 1), .n = N};

	(void)state;
	assert_non_null(v.got);
	start_pair(&a, &b, NULL, "off", "off", &pub, &sub);
	publish(&pub, 0, N);
	drain(&a, N);
	c = census(&a);
	print_message("%llu messages: %u batches carrying %u, %u other datagrams, largest %u bytes (MTU %u)\n",
		      (unsigned long long)N, c.batches, c.batched, c.plain, c.largest, a.d.mtu);
	/* Every message went, once: in a batch or alone. */
	assert_int_equal(c.batched + c.plain, N + 40 * (2500 / (1024 - 48))); /* 40 large ones, 3 fragments each */
	assert_true(c.batches > 0);
	/* Batches fill the MTU: far fewer datagrams than messages. */
	assert_true(c.batches + c.plain < N / 10);
	assert_int_equal(a.d.counters[PUBD_CTR_TX_BATCHES], c.batches);
	assert_int_equal(a.d.counters[PUBD_CTR_TX_BATCHED], c.batched);
	move(&a, &b, SIZE_MAX);
	receive_all(&b, &sub, &v, N);
	assert_int_equal(v.delivered, N);
	assert_int_equal(b.d.counters[PUBD_CTR_RX_BATCHES], c.batches);
	assert_int_equal(b.d.counters[PUBD_CTR_RX_MALFORMED], 0);
	assert_int_equal(pubd_drops_msg_total(&hd_group(&b, "s")->drops), 0);
	stop_pair(&a, &b, &pub, &sub);
	free(v.got);
}

/* The client of a named name on d. */
static struct pubd_client *client_named(struct hd *d, const char *name)
{
	struct pubd_client *c;

	for (c = d->d.ipc.clients; c; c = c->next)
		if (!strcmp(c->name, name))
			return c;
	fail_msg("no client %s", name);
	return NULL;
}

/* Two publishers' messages share batches (one's run, then the other's):
 * once sent, each publisher's messages in flight come back to it, and
 * the client budget is whole again. */
static void test_two_publishers_share_a_batch(void **state)
{
	static struct hd a, b;
	const uint64_t N = 40;
	uint8_t frames[2][64 * 40], payload[8];
	size_t n[2] = {0, 0}, charged0;
	struct hc pub, pub2, sub;
	struct census c;
	uint64_t k;
	int w;

	(void)state;
	start_pair(&a, &b, NULL, "off", "off", &pub, &sub);
	assert_int_equal(hc_connect(&a, &pub2, 0), 0);
	assert_int_equal(hc_hello(&pub2, "pub2"), 0);
	hd_turn(&a, 1);
	charged0 = a.d.ipc.charged;
	for (w = 0; w < 2; w++) {
		for (k = 0; k < N; k++) {
			memset(payload, (int)(w * 100 + k), sizeof(payload));
			n[w] += hc_enc_publish(frames[w] + n[w], sizeof(frames[w]) - n[w], "s", payload,
					       sizeof(payload));
		}
	}
	assert_int_equal(hc_write(&pub, frames[0], n[0], 5000), 0);
	assert_int_equal(hc_write(&pub2, frames[1], n[1], 5000), 0);
	drain(&a, 2 * N);
	c = census(&a);
	print_message("%llu messages of two publishers: %u batches carrying %u, %u other datagrams\n",
		      (unsigned long long)(2 * N), c.batches, c.batched, c.plain);
	assert_true(c.batches > 0);
	assert_true(c.batches + c.plain < 2 * N / 4);
	assert_int_equal(client_named(&a, "pub")->tx_pending, 0);
	assert_int_equal(client_named(&a, "pub2")->tx_pending, 0);
	assert_int_equal(a.d.ipc.charged, charged0);
	hc_close(&pub2);
	stop_pair(&a, &b, &pub, &sub);
}

/* A message alone in the queue does not wait for company. */
static void test_lone_message_goes_alone(void **state)
{
	static struct hd a, b;
	struct hc pub, sub;
	struct census c;

	(void)state;
	start_pair(&a, &b, NULL, "off", "off", &pub, &sub);
	publish(&pub, 0, 1);
	drain(&a, 1);
	c = census(&a);
	assert_int_equal(c.batches, 0);
	assert_int_equal(c.plain, 1);
	stop_pair(&a, &b, &pub, &sub);
}

/* A lost batch: exactly its messages counted lost (seq_gap), every other
 * one delivered in order; published = delivered + dropped. */
static void test_lost_batch_counts_each_message(void **state)
{
	static struct hd a, b;
	const uint64_t N = 300;
	struct hc pub, sub;
	struct census c;
	struct inorder v = {.got = calloc(N, 1), .n = N};
	struct pubd_group *gb;
	uint64_t dl;

	(void)state;
	assert_non_null(v.got);
	start_pair(&a, &b, NULL, "off", "off", &pub, &sub);
	c = lose_first_batch(&a, &b, &pub, N);
	gb = hd_group(&b, "s");
	receive_all(&b, &sub, &v, N - c.first_batch_count);
	/* The gap is found by the next message; counted lost once
	 * reassembly_timeout_ms (100) has passed without it. */
	dl = hd_deadline(2000);
	while (!hd_past(dl) && v.delivered + pubd_drops_msg_total(&gb->drops) < N)
		hd_turn(&b, 1);
	print_message("lost batch of %u messages from seq %llu: delivered %llu, seq_gap %llu\n", c.first_batch_count,
		      (unsigned long long)c.first_batch_seq, (unsigned long long)v.delivered,
		      (unsigned long long)gb->drops.by_reason[PUB_DROP_SEQ_GAP]);
	assert_int_equal(v.delivered, N - c.first_batch_count);
	assert_int_equal(gb->drops.by_reason[PUB_DROP_SEQ_GAP], c.first_batch_count);
	assert_int_equal(pubd_drops_msg_total(&gb->drops), c.first_batch_count);
	for (uint64_t k = c.first_batch_seq; k < c.first_batch_seq + c.first_batch_count; k++)
		assert_int_equal(v.got[k], 0);
	stop_pair(&a, &b, &pub, &sub);
	free(v.got);
}

/* On a repair group the lost batch's messages come back (one repair each)
 * and everything is delivered in order. */
static void test_lost_batch_is_repaired(void **state)
{
	static struct hd a, b;
	const uint64_t N = 300;
	struct hc pub, sub;
	struct inorder v = {.got = calloc(N, 1), .n = N};
	struct pubd_group *gb;
	struct census c;
	uint64_t dl;

	(void)state;
	assert_non_null(v.got);
	start_pair(&a, &b, NULL, "{window: 1MiB, max_age_ms: 60000}", "{nak_backoff_ms: 0, nak_interval_ms: 20}", &pub,
		   &sub);
	c = lose_first_batch(&a, &b, &pub, N);
	gb = hd_group(&b, "s");
	dl = hd_deadline(5000);
	while (!hd_past(dl) && v.delivered < N) {
		exchange_in_order(&a, &b, &sub, &v);
	}
	assert_int_equal(v.delivered, N);
	assert_int_equal(gb->repaired, c.first_batch_count); /* each message of the lost batch */
	assert_int_equal(pubd_drops_msg_total(&gb->drops), 0);
	stop_pair(&a, &b, &pub, &sub);
	free(v.got);
}

/* fabric.batch: false, for fleets with a pubd that knows no batches: one
 * datagram per message, as before. */
static void test_batch_off_sends_one_per_message(void **state)
{
	static struct hd a, b;
	const uint64_t N = 200;
	struct hc pub, sub;
	struct census c;
	struct inorder v = {.got = calloc(N, 1), .n = N};

	(void)state;
	assert_non_null(v.got);
	start_pair(&a, &b, "  batch: false\n", "off", "off", &pub, &sub);
	publish(&pub, 0, N);
	drain(&a, N);
	c = census(&a);
	assert_int_equal(c.batches, 0);
	assert_int_equal(c.plain, N + 4 * 2); /* 4 large ones, 3 fragments each */
	assert_int_equal(a.d.counters[PUBD_CTR_TX_BATCHES], 0);
	move(&a, &b, SIZE_MAX);
	receive_all(&b, &sub, &v, N);
	assert_int_equal(v.delivered, N);
	stop_pair(&a, &b, &pub, &sub);
	free(v.got);
}

/* However many small ones are queued, a batch carries PUBD_WIRE_BATCH_MAX
 * at most (a receiver does a message's work for each). */
static void test_batch_holds_at_most_max(void **state)
{
	static struct hd a, b;
	enum { NPUB = 6, EACH = 300 };
	uint8_t frames[EACH * 64];
	struct hc pub[NPUB], sub;
	struct census c;
	size_t n = 0, i;
	unsigned p;

	(void)state;
	start_pair(&a, &b, NULL, "off", "off", &pub[0], &sub);
	for (p = 1; p < NPUB; p++) {
		assert_int_equal(hc_connect(&a, &pub[p], 0), 0);
		assert_int_equal(hc_hello(&pub[p], "pub"), 0);
	}
	pubd_fake_set_mtu(a.fk, 4096); /* room for 2024 empty messages */
	hd_settle(&a, 50);
	assert_int_equal(a.d.mtu, 4096);
	pubd_fake_set_credits(a.fk, 0);
	for (i = 0; i < EACH; i++)
		n += hc_enc_publish(frames + n, sizeof(frames) - n, "s", NULL, 0);
	for (p = 0; p < NPUB; p++)
		assert_int_equal(hc_write(&pub[p], frames, n, 5000), 0);
	hd_settle(&a, 100);
	pubd_fake_set_credits(a.fk, -1);
	drain(&a, NPUB * EACH);
	c = census(&a);
	print_message("%u empty messages queued at once: largest batch %u\n", NPUB * EACH, c.largest_batch);
	assert_int_equal(c.largest_batch, PUBD_WIRE_BATCH_MAX);
	for (p = 1; p < NPUB; p++)
		hc_close(&pub[p]);
	stop_pair(&a, &b, &pub[0], &sub);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_small_messages_share_datagrams, hd_teardown),
		cmocka_unit_test_teardown(test_two_publishers_share_a_batch, hd_teardown),
		cmocka_unit_test_teardown(test_lone_message_goes_alone, hd_teardown),
		cmocka_unit_test_teardown(test_lost_batch_counts_each_message, hd_teardown),
		cmocka_unit_test_teardown(test_lost_batch_is_repaired, hd_teardown),
		cmocka_unit_test_teardown(test_batch_off_sends_one_per_message, hd_teardown),
		cmocka_unit_test_teardown(test_batch_holds_at_most_max, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
