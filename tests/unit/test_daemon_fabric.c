/* SPDX-License-Identifier: MIT */
/*
 * The daemon's transmit and receive paths driven through the fake fabric:
 * loss, duplication and reordering between two daemons, running out of send
 * credits, join failure and multicast errors, an MTU change at run time,
 * datagrams that did not arrive on a joined group. Each checks that every
 * message published is delivered or counted dropped with a reason.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <signal.h>

#include <cmocka.h>

#include "proto.h"
#include "server_internal.h" /* white-box: the daemon's end of a connection */
#include "test_daemon_harness.h"
#include "wire.h"

#define GROUPS                      \
	"groups:\n"                 \
	"  - name: g1\n"            \
	"    address: 239.77.0.1\n" \
	"  - name: g2\n"            \
	"    address: 239.77.0.2\n"
#define LIMITS "limits:\n  reassembly_timeout_ms: 50\n"
#define MS     1000000ull

/* Message k of a test: its length and bytes are a function of k, so the
 * subscriber can check each one whole. */
static size_t msg_len(uint64_t k)
{
	return 1 + (k * 997) % 4000;
}

static uint8_t msg_byte(uint64_t k, size_t i)
{
	return (uint8_t)(k * 7 + i * 13);
}

static size_t enc_msg(uint8_t *out, size_t cap, const char *group, uint64_t k)
{
	uint8_t payload[4096];
	size_t i, len = msg_len(k);

	for (i = 0; i < len; i++)
		payload[i] = msg_byte(k, i);
	return hc_enc_publish(out, cap, group, payload, len);
}

/* A subscriber's view: which sequence numbers arrived, each checked whole. */
struct seen {
	uint8_t *got;
	uint64_t n, delivered;
	uint64_t source;
};

static void take_delivers(struct hc *c, struct seen *s)
{
	struct pub_msg_deliver m;
	const uint8_t *body;
	uint32_t len;
	uint8_t type;
	size_t i;

	while (hc_next(c, &type, &body, &len, 0) == 1) {
		assert_int_equal(type, PUB_FRAME_DELIVER);
		assert_int_equal(pub_proto_dec_deliver(body, len, &m), 0);
		assert_true(m.seq < s->n);
		assert_int_equal(s->got[m.seq], 0); /* never twice */
		assert_int_equal(m.payload_len, msg_len(m.seq));
		for (i = 0; i < m.payload_len; i++)
			assert_int_equal(m.payload[i], msg_byte(m.seq, i));
		if (s->source)
			assert_int_equal(m.source, s->source);
		s->got[m.seq] = 1;
		s->delivered++;
		hc_pop(c);
	}
}

static uint64_t msg_drops(const struct pubd_drops *d)
{
	return pubd_drops_msg_total(d);
}

/* Wait until b has heard a's group long enough that a stream starting now is
 * counted from its first message, lost or not (daemon.c's grace period). */
static void wait_grace(struct hd *b, const char *group)
{
	struct pubd_group *g = hd_group(b, group);
	uint64_t grace = 6 * 10 * MS, dl = hd_deadline(3000);

	while (!hd_past(dl) &&
	       (!g->up || pubd_now_ns() - g->up_since_ns < grace || pubd_now_ns() - g->listen_since_ns < grace))
		hd_turn(b, 5);
	assert_true(g->listening);
}

static void publish_all(struct hc *pub, const char *group, uint64_t from, uint64_t to)
{
	uint8_t frame[4400];
	uint64_t k;
	size_t n;

	for (k = from; k < to; k++) {
		n = enc_msg(frame, sizeof(frame), group, k);
		assert_true(n > 0);
		assert_int_equal(hc_write(pub, frame, n, 5000), 0);
	}
}

/* Loss, duplication and reordering between two daemons: published =
 * delivered + dropped by reason, per stream, and nothing delivered twice or
 * altered. */
static void test_accounting_impaired(void **state)
{
	struct pubd_fake_impair imp = {
		.loss_ppm = 50000, .dup_ppm = 50000, .reorder_ppm = 100000, .reorder_window = 8, .seed = 42};
	struct pubd_fake_transfer_stats st = {0};
	const uint64_t N = 400;
	static struct hd a, b; /* static: the teardown stops them if an assert ends the test */
	struct hc pub, sub;
	struct seen s = {0};
	struct pubd_source_stats *src = NULL;
	struct pubd_group *gb;
	uint64_t dl, accounted = 0;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, LIMITS GROUPS), 0);
	assert_int_equal(hd_start(&b, NULL, LIMITS GROUPS), 0);
	s.n = N;
	s.got = calloc(N, 1);
	s.source = a.d.source_id;
	assert_int_equal(hc_connect(&b, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "g1", NULL), 0);
	wait_grace(&b, "g1");
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	publish_all(&pub, "g1", 0, N);

	gb = hd_group(&b, "g1");
	dl = hd_deadline(10000);
	while (!hd_past(dl)) {
		hd_turn(&a, 1);
		pubd_fake_transfer(a.fk, b.fk, &imp, &st);
		hd_turn(&b, 1);
		take_delivers(&sub, &s);
		src = pubd_source_map_get(&b.d.sources, a.d.source_id, gb->id, pubd_now_ns());
		accounted = src->delivered + msg_drops(&src->drops);
		if (a.d.counters[PUBD_CTR_MSG_PUBLISHED] == N && accounted >= N && s.delivered == src->delivered)
			break;
	}
	print_message("published %llu, delivered %llu, dropped %llu; in transit: lost %llu dup %llu reordered %llu\n",
		      (unsigned long long)a.d.counters[PUBD_CTR_MSG_PUBLISHED], (unsigned long long)s.delivered,
		      (unsigned long long)msg_drops(&src->drops), (unsigned long long)st.lost,
		      (unsigned long long)st.duplicated, (unsigned long long)st.reordered);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_PUBLISHED], N);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DROPPED], 0);
	assert_true(st.lost > 0 && st.duplicated > 0 && st.reordered > 0);
	assert_int_equal(accounted, N);
	assert_int_equal(s.delivered, src->delivered);
	assert_int_equal(gb->received, src->delivered);
	/* Loss took some messages, and each one lost is counted, not more. */
	assert_true(s.delivered < N);
	assert_int_equal(msg_drops(&gb->drops), N - s.delivered);
	hc_close(&pub);
	hc_close(&sub);
	hd_stop(&a);
	hd_stop(&b);
	free(s.got);
}

/* Count the data datagrams (not heartbeats) the fake recorded for a slot,
 * by message: a message is out when all its fragments are. */
static uint64_t take_sent_msgs(struct hd *h, int slot, uint64_t *hb)
{
	uint64_t msgs = 0;
	size_t i;

	for (i = 0; i < pubd_fake_sent_count(h->fk); i++) {
		const struct pubd_fake_sent *r = pubd_fake_sent_at(h->fk, i);
		struct pubd_wire_hdr w;
		const uint8_t *p;
		size_t plen;

		assert_int_equal(pubd_wire_decode(r->data, r->len, &w, &p, &plen), 0);
		if (r->slot != slot)
			continue;
		if (w.flags & PUBD_WIRE_F_HEARTBEAT) {
			if (hb)
				++*hb;
			continue;
		}
		msgs += pubd_wire_msgs_completed(&w);
	}
	pubd_fake_sent_clear(h->fk);
	return msgs;
}

/* Out of send credits: publishers are paused (back-pressure), nothing is
 * dropped, and everything goes out once credits return. */
static void test_send_credit_exhaustion(void **state)
{
	const uint64_t N = 1500;
	uint8_t frame[4400];
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc pub;
	struct pubd_group *g;
	uint64_t k = 0, sent = 0, dl;
	size_t n, off = 0;
	bool paused_seen = false;
	long w;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, GROUPS), 0);
	g = hd_group(&a, "g1");
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	pubd_fake_set_credits(a.fk, 0);
	/* Write until the daemon stops reading (paused) and the socket fills. */
	n = enc_msg(frame, sizeof(frame), "g1", k);
	dl = hd_deadline(10000);
	while (k < N && !hd_past(dl)) {
		w = hc_try_write(&pub, frame + off, n - off);
		assert_true(w >= 0);
		off += (size_t)w;
		if (off == n) {
			k++;
			off = 0;
			n = enc_msg(frame, sizeof(frame), "g1", k);
			continue;
		}
		hd_turn(&a, 1);
		if (a.d.ipc.npaused)
			paused_seen = true;
		if (paused_seen && w == 0)
			break;
	}
	hd_settle(&a, 50);
	print_message("out of credits: %llu messages written, %llu published, %u paused, %llu short sends\n",
		      (unsigned long long)k, (unsigned long long)a.d.counters[PUBD_CTR_MSG_PUBLISHED], a.d.ipc.npaused,
		      (unsigned long long)pubd_fake_short_sends(a.fk));
	assert_true(paused_seen);
	assert_true(a.d.counters[PUBD_CTR_MSG_PUBLISHED] < N);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DROPPED], 0);
	/* Credits come back a few at a time; the writer finishes. */
	dl = hd_deadline(20000);
	while (!hd_past(dl) && (k < N || a.d.tx.queued_msgs || a.d.counters[PUBD_CTR_MSG_PUBLISHED] < N)) {
		pubd_fake_add_credits(a.fk, 40);
		if (k < N) {
			w = hc_try_write(&pub, frame + off, n - off);
			assert_true(w >= 0);
			off += (size_t)w;
			if (off == n) {
				k++;
				off = 0;
				n = enc_msg(frame, sizeof(frame), "g1", k);
			}
		}
		hd_turn(&a, 1);
		sent += take_sent_msgs(&a, g->slot, NULL);
	}
	hd_settle(&a, 50);
	sent += take_sent_msgs(&a, g->slot, NULL);
	print_message("credits back: %llu published, %llu sent, %llu stalls\n",
		      (unsigned long long)a.d.counters[PUBD_CTR_MSG_PUBLISHED], (unsigned long long)sent,
		      (unsigned long long)a.d.counters[PUBD_CTR_TX_STALLS]);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_PUBLISHED], N);
	assert_int_equal(sent, N);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DROPPED], 0);
	assert_true(a.d.counters[PUBD_CTR_TX_STALLS] > 0);
	assert_int_equal(a.d.ipc.npaused, 0);
	hc_close(&pub);
	hd_stop(&a);
}

/* Bytes of the messages waiting in g's transmit queue. */
static size_t txq_bytes(const struct pubd_group *g)
{
	const struct pubd_tx_item *it;
	size_t n = 0;

	for (it = g->txq_head; it; it = it->next)
		n += it->msg->len;
	return n;
}

/* What waits for the fabric is held against limits.client_buffer_budget:
 * with the fabric out of credits, a publisher of 8 KiB messages is paused
 * once the queue fills the 1 MiB budget, well before TX_PENDING_HIGH (256
 * messages, 2 MiB here; with 16 MiB messages it was 4 GiB per publisher).
 * Nothing is lost, and the budget is whole again once the queue drains. */
static void test_transmit_queue_held_in_budget(void **state)
{
	const uint64_t N = 400;
	const size_t LEN = 8192, BUDGET = 1 << 20;
	static uint8_t payload[8192], frame[8192 + 512];
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc pub;
	struct pubd_group *g;
	uint64_t k = 0, sent = 0, dl;
	size_t n, off = 0, most = 0;
	long w;

	(void)state;
	memset(payload, 0x5a, sizeof(payload));
	assert_int_equal(hd_start(&a, NULL, "limits:\n  client_buffer_budget: 1MiB\n" GROUPS), 0);
	g = hd_group(&a, "g1");
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	pubd_fake_set_credits(a.fk, 0);
	n = hc_enc_publish(frame, sizeof(frame), "g1", payload, LEN);
	dl = hd_deadline(20000);
	while (!hd_past(dl) && (a.d.counters[PUBD_CTR_MSG_PUBLISHED] < N || a.d.tx.queued_msgs)) {
		if (k < N && (w = hc_try_write(&pub, frame + off, n - off)) > 0 && (off += (size_t)w) == n) {
			k++;
			off = 0;
		}
		hd_turn(&a, 1);
		if (txq_bytes(g) > most)
			most = txq_bytes(g);
		/* Credits only while the publisher is held back (or done). */
		if ((a.d.ipc.npaused || k == N) && a.d.counters[PUBD_CTR_BUDGET_WAITS])
			pubd_fake_add_credits(a.fk, 4);
		sent += take_sent_msgs(&a, g->slot, NULL);
	}
	hd_settle(&a, 50);
	sent += take_sent_msgs(&a, g->slot, NULL);
	print_message("fabric stalled under a 1 MiB budget: queue at most %zu bytes (%zu messages), %llu budget "
		      "waits; then %llu of %llu sent\n",
		      most, most / LEN, (unsigned long long)a.d.counters[PUBD_CTR_BUDGET_WAITS],
		      (unsigned long long)sent, (unsigned long long)N);
	assert_true(a.d.counters[PUBD_CTR_BUDGET_WAITS] > 0);
	assert_true(most <= BUDGET + LEN);
	assert_int_equal(sent, N);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_PUBLISHED], N);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DROPPED], 0);
	hc_close(&pub);
	hd_settle(&a, 50);
	assert_int_equal(a.d.ipc.charged, 0);
	hd_stop(&a);
}

/* A join that fails, and a multicast error on a joined group: what is
 * published meanwhile waits and goes out after the rejoin. */
/* A reload that removes a group, or makes it anew, while accepted messages
 * wait for the fabric: they are counted as group_reloaded (they were
 * counted as fabric_error, which sends the operator to a log that said
 * nothing), published = dropped, and the other group goes on. */
static void test_reload_drops_queued_as_group_reloaded(void **state)
{
	const char *moved = "groups:\n  - name: g1\n    address: 239.77.0.9\n  - name: g2\n    address: 239.77.0.2\n";
	const char *g2_only = "groups:\n  - name: g2\n    address: 239.77.0.2\n";
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc pub;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, GROUPS), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	pubd_fake_set_credits(a.fk, 0); /* nothing leaves: the messages wait */
	publish_all(&pub, "g1", 0, 7);
	hd_settle(&a, 50);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_PUBLISHED], 7);
	/* g1 moves to another address: made anew, its queue dropped. */
	assert_int_equal(hd_reload(&a, NULL, moved), 0);
	publish_all(&pub, "g1", 7, 12);
	hd_settle(&a, 50);
	/* Then removed. */
	assert_int_equal(hd_reload(&a, NULL, g2_only), 0);
	hd_settle(&a, 50);
	print_message("group_reloaded %llu, fabric_error %llu, dropped %llu of %llu published\n",
		      (unsigned long long)a.d.drops.by_reason[PUB_DROP_GROUP_RELOADED],
		      (unsigned long long)a.d.drops.by_reason[PUB_DROP_FABRIC_ERROR],
		      (unsigned long long)a.d.counters[PUBD_CTR_MSG_DROPPED],
		      (unsigned long long)a.d.counters[PUBD_CTR_MSG_PUBLISHED]);
	assert_int_equal(a.d.drops.by_reason[PUB_DROP_GROUP_RELOADED], 12);
	assert_int_equal(a.d.drops.by_reason[PUB_DROP_FABRIC_ERROR], 0);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_PUBLISHED], 12);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DROPPED], 12);
	/* g2 still sends once the fabric takes messages again. */
	pubd_fake_set_credits(a.fk, -1);
	publish_all(&pub, "g2", 0, 3);
	hd_settle(&a, 50);
	assert_int_equal(take_sent_msgs(&a, hd_group(&a, "g2")->slot, NULL), 3);
	hc_close(&pub);
	hd_stop(&a);
}

static void test_join_failure_and_multicast_error(void **state)
{
	const char *with_g3 = GROUPS "  - name: g3\n    address: 239.77.0.3\n";
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc pub;
	struct pubd_group *g1, *g3;
	uint64_t sent;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, GROUPS), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	/* A group added by a reload whose join fails. */
	pubd_fake_set_join_result(a.fk, -ENODEV);
	assert_int_equal(hd_reload(&a, NULL, with_g3), 0);
	g3 = hd_group(&a, "g3");
	assert_non_null(g3);
	assert_false(g3->up);
	publish_all(&pub, "g3", 0, 30);
	hd_settle(&a, 50);
	assert_int_equal(take_sent_msgs(&a, g3->slot, NULL), 0);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_PUBLISHED], 30);
	pubd_fake_set_join_result(a.fk, 0);
	pubd_fake_group_up(a.fk, g3->slot);
	hd_settle(&a, 50);
	assert_true(g3->up);
	assert_int_equal(take_sent_msgs(&a, g3->slot, NULL), 30);

	/* A multicast error on a joined group, then it comes back. */
	g1 = hd_group(&a, "g1");
	assert_true(g1->up);
	pubd_fake_group_down(a.fk, g1->slot, -ENETRESET);
	hd_settle(&a, 20);
	assert_false(g1->up);
	publish_all(&pub, "g1", 0, 40);
	hd_settle(&a, 50);
	assert_int_equal(take_sent_msgs(&a, g1->slot, NULL), 0);
	pubd_fake_group_up(a.fk, g1->slot);
	hd_settle(&a, 50);
	sent = take_sent_msgs(&a, g1->slot, NULL);
	assert_int_equal(sent, 40);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_PUBLISHED], 70);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DROPPED], 0);
	hc_close(&pub);
	hd_stop(&a);
}

/* The fabric's MTU drops at run time: messages queued before and published
 * after arrive whole at another daemon; none is refused mtu_exceeded. */
static void test_mtu_change(void **state)
{
	const uint64_t N = 60;
	static struct hd a, b; /* static: the teardown stops them if an assert ends the test */
	struct hc pub, sub;
	struct seen s = {0};
	struct pubd_group *ga, *gb;
	uint64_t dl;
	size_t i;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, LIMITS GROUPS), 0);
	assert_int_equal(hd_start(&b, NULL, LIMITS GROUPS), 0);
	ga = hd_group(&a, "g1");
	gb = hd_group(&b, "g1");
	s.n = N;
	s.got = calloc(N, 1);
	assert_int_equal(hc_connect(&b, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "g1", NULL), 0);
	wait_grace(&b, "g1");
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	/* Some go out at the old MTU, some wait in the queue cut for it. */
	publish_all(&pub, "g1", 0, 20);
	hd_settle(&a, 50);
	pubd_fake_set_credits(a.fk, 0);
	publish_all(&pub, "g1", 20, 40);
	hd_settle(&a, 50);
	pubd_fake_set_mtu(a.fk, 512);
	hd_settle(&a, 50);
	assert_int_equal(a.d.mtu, 512);
	pubd_fake_set_credits(a.fk, -1);
	publish_all(&pub, "g1", 40, N);
	dl = hd_deadline(10000);
	while (!hd_past(dl) && s.delivered < N) {
		hd_turn(&a, 1);
		for (i = 0; i < pubd_fake_sent_count(a.fk); i++)
			assert_true(pubd_fake_sent_at(a.fk, i)->len <= 1024);
		pubd_fake_transfer(a.fk, b.fk, NULL, NULL);
		hd_turn(&b, 1);
		take_delivers(&sub, &s);
	}
	print_message("after the MTU change: %llu of %llu delivered, mtu_exceeded %llu, fabric_error %llu\n",
		      (unsigned long long)s.delivered, (unsigned long long)N,
		      (unsigned long long)ga->drops.by_reason[PUB_DROP_MTU_EXCEEDED],
		      (unsigned long long)ga->drops.by_reason[PUB_DROP_FABRIC_ERROR]);
	assert_int_equal(ga->drops.by_reason[PUB_DROP_MTU_EXCEEDED], 0);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DROPPED], 0);
	assert_int_equal(s.delivered, N);
	assert_int_equal(msg_drops(&gb->drops), 0);
	hc_close(&pub);
	hc_close(&sub);
	hd_stop(&a);
	hd_stop(&b);
	free(s.got);
}

/* A datagram that did not arrive on a joined group's address (slot -1), or
 * that names a group on another address, is rx_unjoined and not delivered. */
static void test_rx_unjoined(void **state)
{
	uint8_t dg[PUBD_WIRE_HDR_LEN + 16];
	struct pubd_wire_hdr w = {.version = PUBD_WIRE_VERSION, .source_id = 0x1234, .msg_len = 16, .frag_count = 1};
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc sub;
	struct pubd_group *g1, *g2;
	const uint8_t *body;
	uint32_t len;
	uint8_t type;
	uint64_t before;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, LIMITS GROUPS), 0);
	g1 = hd_group(&a, "g1");
	g2 = hd_group(&a, "g2");
	assert_int_equal(hc_connect(&a, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "g1", NULL), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "g2", NULL), 0);
	memset(dg + PUBD_WIRE_HDR_LEN, 'x', 16);
	before = a.d.counters[PUBD_CTR_RX_UNJOINED];

	w.group_id = g1->id;
	pubd_wire_encode(&w, dg);
	pubd_fake_inject(a.fk, -1, dg, sizeof(dg), false);
	w.group_id = g2->id;
	w.msg_seq = 1;
	pubd_wire_encode(&w, dg);
	pubd_fake_inject(a.fk, g1->slot, dg, sizeof(dg), false);
	hd_settle(&a, 20);
	assert_int_equal(a.d.counters[PUBD_CTR_RX_UNJOINED] - before, 2);
	assert_int_equal(hc_next(&sub, &type, &body, &len, 100), 0);
	assert_int_equal(g1->received + g2->received, 0);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_RECEIVED], 0);

	/* The same datagram on its own group's slot is delivered: the test
	 * can tell the two apart. */
	w.group_id = g1->id;
	w.msg_seq = 2;
	pubd_wire_encode(&w, dg);
	pubd_fake_inject(a.fk, g1->slot, dg, sizeof(dg), false);
	assert_int_equal(hc_next(&sub, &type, &body, &len, 2000), 1);
	assert_int_equal(type, PUB_FRAME_DELIVER);
	hc_close(&sub);
	hd_stop(&a);
}

/* A subscriber found slow (slow_subscriber: disconnect) while reassembly is
 * delivering to it: its subscription ends after the callback returns, not
 * inside it. Ending it there stopped the group receiving, which cleared the
 * group's reassembly state from inside reassembly's own callback (reasm.h
 * forbids it; reassembly now aborts on it). Everything is still counted. */
static void test_slow_subscriber_in_reassembly(void **state)
{
	enum { NMSG = 6, LEN = 1500 };
	uint8_t dg[PUBD_WIRE_HDR_LEN + LEN / 2];
	struct pubd_wire_hdr w = {.version = PUBD_WIRE_VERSION, .source_id = 0x5107, .msg_len = LEN, .frag_count = 2};
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct pub_msg_error e;
	struct pubd_group *g;
	struct hc sub;
	const uint8_t *body;
	uint32_t len, k, f;
	uint8_t type;
	bool told = false;
	uint64_t dl;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, "limits:\n  subscriber_queue: 2\n  slow_subscriber: disconnect\n" GROUPS),
			 0);
	g = hd_group(&a, "g1");
	assert_int_equal(hc_connect(&a, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "slow"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "g1", NULL), 0);
	assert_true(g->listening); /* on demand: its only subscriber */
	/* Six two-fragment messages in one receive batch: the third overflows
	 * the queue of two while the batch is being reassembled. */
	w.group_id = g->id;
	memset(dg + PUBD_WIRE_HDR_LEN, 'r', LEN / 2);
	for (k = 0; k < NMSG; k++) {
		for (f = 0; f < 2; f++) {
			w.msg_seq = k;
			w.frag_index = f;
			w.frag_offset = f * (LEN / 2);
			pubd_wire_encode(&w, dg);
			pubd_fake_inject(a.fk, g->slot, dg, sizeof(dg), false);
		}
	}
	hd_settle(&a, 50);
	assert_int_equal(g->nsubs, 0);
	assert_false(g->listening); /* the last subscriber gone: stopped, outside the callback */
	/* Every message reassembled is delivered or counted against the subscriber. */
	assert_int_equal(g->received, NMSG);
	assert_int_equal(g->delivered + msg_drops(&g->sub_drops), NMSG);
	assert_true(g->sub_drops.by_reason[PUB_DROP_SUB_DISCONNECT] >= 1);
	/* It is told why. */
	dl = hd_deadline(2000);
	while (!told && !hd_past(dl) && hc_next(&sub, &type, &body, &len, 100) == 1) {
		if (type == PUB_FRAME_ERROR) {
			assert_int_equal(pub_proto_dec_error(body, len, &e), 0);
			assert_int_equal(e.code, PUB_ERR_SLOW);
			told = true;
		}
		hc_pop(&sub);
	}
	assert_true(told);
	hc_close(&sub);
	hd_stop(&a);
}

/* SIGTERM with messages accepted but not yet sent (the fabric out of
 * credits): the daemon waits a while for them to go, and counts what is
 * left as shutdown drops. With credits back meanwhile, nothing is lost. */
static void stop_with_queue(bool credits_return, uint64_t *sent, uint64_t *dropped, uint64_t *stop_ms)
{
	const uint64_t N = 20;
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc pub;
	struct pubd_group *g;
	uint64_t dl, t0;

	assert_int_equal(hd_start(&a, NULL, GROUPS), 0);
	g = hd_group(&a, "g1");
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	pubd_fake_set_credits(a.fk, 0);
	publish_all(&pub, "g1", 0, N);
	dl = hd_deadline(5000);
	while (a.d.counters[PUBD_CTR_MSG_PUBLISHED] < N && !hd_past(dl))
		hd_turn(&a, 1);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_PUBLISHED], N);
	assert_int_equal(a.d.tx.queued_msgs, N);
	*sent = take_sent_msgs(&a, g->slot, NULL);
	t0 = pubd_now_ns();
	assert_int_equal(kill(getpid(), SIGTERM), 0);
	while (!a.d.stopping && !hd_past(dl))
		hd_turn(&a, 10);
	assert_true(a.d.stopping);
	/* Half the queue's worth of credits, or all of it. */
	pubd_fake_add_credits(a.fk, credits_return ? 1000 : (long)(N / 2) * 2);
	dl = hd_deadline(5000);
	while (!a.d.stopped && !hd_past(dl)) {
		hd_turn(&a, 10);
		*sent += take_sent_msgs(&a, g->slot, NULL);
	}
	assert_true(a.d.stopped);
	*stop_ms = (pubd_now_ns() - t0) / MS;
	hc_close(&pub);
	hd_stop(&a);
	*dropped = a.d.counters[PUBD_CTR_MSG_DROPPED];
	assert_int_equal(*sent + *dropped, N);
}

static void test_stop_drains_transmit_queue(void **state)
{
	uint64_t sent, dropped, ms;

	(void)state;
	stop_with_queue(true, &sent, &dropped, &ms);
	print_message("credits back while stopping: %llu sent, %llu dropped, stopped after %llu ms\n",
		      (unsigned long long)sent, (unsigned long long)dropped, (unsigned long long)ms);
	assert_int_equal(dropped, 0);
	assert_true(ms < 1000);
	stop_with_queue(false, &sent, &dropped, &ms);
	print_message("credits for part of the queue: %llu sent, %llu dropped (shutdown), stopped after %llu ms\n",
		      (unsigned long long)sent, (unsigned long long)dropped, (unsigned long long)ms);
	assert_true(sent > 0);
	assert_true(dropped > 0);
	assert_true(ms >= 1500 && ms < 4000);
}

/* Publish n messages to group, each read by sub before the next goes (a
 * subscriber that keeps up, whatever its queue's bound). */
static void publish_read(struct hd *h, struct hc *pub, struct hc *sub, struct seen *s, const char *group, uint64_t n)
{
	uint64_t dl;

	for (uint64_t k = 0; k < n; k++) {
		uint64_t had = s->delivered;

		publish_all(pub, group, k, k + 1);
		for (dl = hd_deadline(2000); !hd_past(dl) && s->delivered == had;) {
			hd_turn(h, 1);
			take_delivers(sub, s);
		}
	}
}

/* Datagrams of any kind the fake recorded on slot (-1: on any), kept. */
static uint64_t count_sent_on(struct hd *h, int slot)
{
	uint64_t n = 0;

	for (size_t i = 0; i < pubd_fake_sent_count(h->fk); i++)
		n += slot < 0 || pubd_fake_sent_at(h->fk, i)->slot == slot;
	return n;
}

/*
 * scope: host. The group is never joined, nothing of it goes to the fabric
 * (no start announcement, no message, no heartbeat however long it runs),
 * and every message published reaches the daemon's own subscriber, counted
 * as delivered; a fabric group beside it still sends. A reload that makes
 * the fabric group a host group leaves it on the fabric and sends nothing
 * of it from then on; one back to fabric joins it again.
 */
#define HOST_GROUPS(g1)                        \
	"groups:\n"                            \
	"  - name: g1\n" g1 "  - name: here\n" \
	"    scope: host\n"
#define HOST_LIMITS "limits:\n  subscriber_queue: 16\n"
static void test_host_group_stays_off_the_fabric(void **state)
{
	const uint64_t N = 60;
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc pub, sub, slow;
	struct seen s = {0}, s_slow = {0};
	struct pubd_group *gh, *g1;
	uint64_t dl, hb = 0, on_g1 = 0, on_host = 0, elsewhere;
	uint8_t dg[PUBD_WIRE_HDR_LEN + 16];
	struct pubd_wire_hdr w = {.version = PUBD_WIRE_VERSION, .source_id = 0x1234, .msg_len = 16, .frag_count = 1};
	const uint8_t *body;
	uint32_t len;
	uint8_t type;
	int g1_slot;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, HOST_LIMITS HOST_GROUPS("    address: 239.77.0.1\n")), 0);
	gh = hd_group(&a, "here");
	g1 = hd_group(&a, "g1");
	g1_slot = g1->slot;
	assert_true(gh->host && !g1->host);
	/* Ready, with nothing to join (READY=1 waits for every group). */
	assert_true(gh->up);
	assert_true(a.d.ready);
	s.n = N;
	s.got = calloc(N, 1);
	s.source = a.d.source_id;
	assert_int_equal(hc_connect(&a, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "here", NULL), 0);
	/* One that reads nothing until the end, on a small socket buffer: its
	 * messages queue (copied out of the publisher's buffer) and past
	 * subscriber_queue the oldest are dropped, counted. */
	s_slow.n = N;
	s_slow.got = calloc(N, 1);
	assert_int_equal(hc_connect(&a, &slow, 4096), 0);
	/* The daemon's end of it (the newest connection) sends little at once. */
	assert_int_equal(setsockopt(a.d.ipc.clients->fd, SOL_SOCKET, SO_SNDBUF, &(int){4096}, sizeof(int)), 0);
	assert_int_equal(hc_hello(&slow, "slow"), 0);
	assert_int_equal(hc_group_req(&slow, PUB_FRAME_SUBSCRIBE, "here", NULL), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	/* The reader keeps up (it takes each message as it comes); the slow
	 * one does not read at all. */
	publish_read(&a, &pub, &sub, &s, "here", N);
	publish_all(&pub, "g1", 0, N);
	/* Ten heartbeat periods and more after the last delivery. */
	dl = hd_deadline(5000);
	while (!hd_past(dl) && (s.delivered < N || on_g1 < N)) {
		hd_turn(&a, 1);
		take_delivers(&sub, &s);
		on_host += count_sent_on(&a, gh->slot);
		on_g1 += take_sent_msgs(&a, g1_slot, NULL);
	}
	for (dl = hd_deadline(150); !hd_past(dl);) {
		hd_turn(&a, 5);
		on_host += count_sent_on(&a, gh->slot);
		on_g1 += take_sent_msgs(&a, g1_slot, &hb);
	}
	for (dl = hd_deadline(1000); !hd_past(dl);) {
		hd_turn(&a, 1);
		take_delivers(&slow, &s_slow);
	}
	print_message("host group: %llu delivered, to the slow one %llu and %llu dropped; fabric group: %llu sent "
		      "and %llu heartbeats\n",
		      (unsigned long long)s.delivered, (unsigned long long)s_slow.delivered,
		      (unsigned long long)msg_drops(&gh->sub_drops), (unsigned long long)on_g1, (unsigned long long)hb);
	assert_int_equal(s.delivered, N);
	assert_int_equal(on_host, 0);
	assert_int_equal(on_g1, N);
	assert_true(hb > 0); /* heartbeats went out, on the fabric group only */
	assert_false(pubd_fake_group_is_up(a.fk, gh->slot));
	assert_false(pubd_fake_group_is_listening(a.fk, gh->slot));
	assert_int_equal(gh->published, N);
	assert_true(msg_drops(&gh->sub_drops) > 0);
	assert_int_equal(s_slow.delivered + msg_drops(&gh->sub_drops), N);
	assert_int_equal(gh->delivered, N + s_slow.delivered);
	assert_int_equal(gh->txq_len, 0); /* nothing waits for a fabric it is not on */
	assert_int_equal(msg_drops(&gh->drops), 0);
	hc_close(&slow);
	free(s_slow.got);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_PUBLISHED], 2 * N);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DROPPED], msg_drops(&gh->sub_drops)); /* the slow one's only */
	pubd_fake_sent_clear(a.fk);

	/* From the fabric, a datagram naming the host group reaches nobody:
	 * on the fabric group's address, or unicast as a repair. */
	w.group_id = gh->id;
	memset(dg + PUBD_WIRE_HDR_LEN, 'x', 16);
	pubd_wire_encode(&w, dg);
	pubd_fake_inject(a.fk, g1_slot, dg, sizeof(dg), false);
	w.flags = PUBD_WIRE_F_REPAIR;
	w.msg_seq = 1;
	pubd_wire_encode(&w, dg);
	pubd_fake_inject(a.fk, -1, dg, sizeof(dg), false);
	hd_settle(&a, 20);
	assert_int_equal(hc_next(&sub, &type, &body, &len, 100), 0);
	assert_int_equal(gh->received, 0);
	pubd_fake_sent_clear(a.fk); /* g1's heartbeats meanwhile */

	/* g1 becomes a host group: left, and silent from then on. A multicast
	 * error the fabric reported just before, still on its way, goes with
	 * the leave (fabric.h): the host group in the slot stays up. */
	pubd_fake_group_down(a.fk, g1_slot, -ENODEV);
	assert_int_equal(hd_reload(&a, NULL, HOST_LIMITS HOST_GROUPS("    scope: host\n")), 0);
	assert_false(pubd_fake_group_is_up(a.fk, g1_slot));
	assert_true(hd_group(&a, "g1")->host);
	assert_int_equal(hd_group(&a, "g1")->slot, g1_slot);
	hd_settle(&a, 20);
	assert_true(hd_group(&a, "g1")->up);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "g1", NULL), 0);
	memset(s.got, 0, N);
	s.delivered = 0;
	publish_read(&a, &pub, &sub, &s, "g1", N);
	for (dl = hd_deadline(100); !hd_past(dl);)
		hd_turn(&a, 5);
	elsewhere = count_sent_on(&a, -1);
	assert_int_equal(s.delivered, N);
	assert_int_equal(elsewhere, 0);

	/* And back: joined again, and its messages go out. */
	assert_int_equal(hd_reload(&a, NULL, HOST_LIMITS HOST_GROUPS("    address: 239.77.0.1\n")), 0);
	g1 = hd_group(&a, "g1");
	dl = hd_deadline(2000);
	while (!hd_past(dl) && !pubd_fake_group_is_up(a.fk, g1->slot))
		hd_turn(&a, 1);
	assert_true(pubd_fake_group_is_up(a.fk, g1->slot));
	publish_all(&pub, "g1", 0, 1);
	dl = hd_deadline(2000);
	for (on_g1 = 0; !hd_past(dl) && !on_g1;) {
		hd_turn(&a, 1);
		on_g1 += take_sent_msgs(&a, g1->slot, NULL);
	}
	assert_int_equal(on_g1, 1);
	hc_close(&pub);
	hc_close(&sub);
	hd_stop(&a);
	free(s.got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_accounting_impaired, hd_teardown),
		cmocka_unit_test_teardown(test_send_credit_exhaustion, hd_teardown),
		cmocka_unit_test_teardown(test_transmit_queue_held_in_budget, hd_teardown),
		cmocka_unit_test_teardown(test_join_failure_and_multicast_error, hd_teardown),
		cmocka_unit_test_teardown(test_reload_drops_queued_as_group_reloaded, hd_teardown),
		cmocka_unit_test_teardown(test_mtu_change, hd_teardown),
		cmocka_unit_test_teardown(test_rx_unjoined, hd_teardown),
		cmocka_unit_test_teardown(test_slow_subscriber_in_reassembly, hd_teardown),
		cmocka_unit_test_teardown(test_stop_drains_transmit_queue, hd_teardown),
		cmocka_unit_test_teardown(test_host_group_stays_off_the_fabric, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
