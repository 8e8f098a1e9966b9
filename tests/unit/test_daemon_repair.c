/* SPDX-License-Identifier: MIT */
/*
 * Loss repair, the source side, through the daemon on the fake fabric: a
 * publishing daemon keeps what it sent on a repair group and answers NAKs
 * (unicast to the asker, the original fragments flagged REPAIR; GONE for
 * what left its window; duplicates ignored; repair bytes within the
 * group's repair.rate), and the receiving daemon takes unicast repairs
 * into reassembly so that every message is delivered byte-identical, in
 * order, and published = delivered + dropped still holds. The first tests
 * write the NAKs a receiver would send; the last runs both sides.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine_internal.h" /* white-box: the cookie a NAK asker's address has */
#include "proto.h"
#include "test_daemon_harness.h"
#include "tx.h"
#include "wire.h"
#include "wire_ctl.h"

static const char *body(const char *repair)
{
	static char b[512];

	snprintf(b, sizeof(b),
		 "limits:\n  reassembly_timeout_ms: 60000\n"
		 "groups:\n"
		 "  - name: r\n"
		 "    address: 239.78.0.1\n"
		 "    repair: %s\n",
		 repair);
	return b;
}

/* Message k: 1..4000 bytes (1 to 4 fragments at the fake's 1024-byte MTU). */
static size_t msg_len(uint64_t k)
{
	return 1 + (k * 997) % 4000;
}

static uint8_t msg_byte(uint64_t k, size_t i)
{
	return (uint8_t)(k * 7 + i * 13);
}

static void publish(struct hc *pub, uint64_t from, uint64_t to)
{
	uint8_t frame[4400], payload[4096];
	uint64_t k;
	size_t i, n;

	for (k = from; k < to; k++) {
		for (i = 0; i < msg_len(k); i++)
			payload[i] = msg_byte(k, i);
		n = hc_enc_publish(frame, sizeof(frame), "r", payload, msg_len(k));
		assert_int_equal(hc_write(pub, frame, n, 5000), 0);
	}
}

/* Turn a until it has sent every message of its group r (the tx queue is empty). */
static void drain(struct hd *a)
{
	uint64_t dl = hd_deadline(5000);
	struct pubd_group *g = hd_group(a, "r");

	while (!hd_past(dl) && (g->txq_head || a->d.counters[PUBD_CTR_MSG_PUBLISHED] == 0))
		hd_turn(a, 1);
	assert_null(g->txq_head);
}

/* Move a's multicast datagrams into b, dropping every datagram of the
 * messages lost[0..nlost), and with start_too the heartbeat that
 * announced the stream's start (seq 0, before message 0); returns
 * datagrams dropped. */
static unsigned move_losing(struct hd *a, struct hd *b, const uint64_t *lost, unsigned nlost, bool start_too)
{
	struct pubd_group *gb = hd_group(b, "r");
	unsigned dropped = 0, k;
	size_t i;

	for (i = 0; i < pubd_fake_sent_count(a->fk); i++) {
		const struct pubd_fake_sent *r = pubd_fake_sent_at(a->fk, i);
		struct pubd_wire_hdr h;
		const uint8_t *p;
		size_t plen;
		bool drop = false;

		assert_int_equal(pubd_wire_decode(r->data, r->len, &h, &p, &plen), 0);
		for (k = 0; k < nlost; k++)
			drop |= !(h.flags & PUBD_WIRE_F_HEARTBEAT) && h.msg_seq == lost[k];
		drop |= start_too && (h.flags & PUBD_WIRE_F_HEARTBEAT) && h.msg_seq == 0;
		if (drop) {
			dropped++;
			continue;
		}
		pubd_fake_inject_from(b->fk, gb->slot, r->data, r->len, pubd_fake_peer_id(a->fk));
	}
	pubd_fake_sent_clear(a->fk);
	return dropped;
}

static unsigned move_with_loss(struct hd *a, struct hd *b, const uint64_t *lost, unsigned nlost)
{
	return move_losing(a, b, lost, nlost, false);
}

/* A NAK to a from a receiver with this source id at this fake peer address. */
static void nak_from(struct hd *a, uint64_t asker, uint64_t peer, uint64_t seq, uint32_t count);

/* What b would send a for seq .. seq + count - 1. */
static void nak(struct hd *a, struct hd *b, uint64_t seq, uint32_t count)
{
	nak_from(a, b->d.source_id, pubd_fake_peer_id(b->fk), seq, count);
}

static void nak_from(struct hd *a, uint64_t asker, uint64_t peer, uint64_t seq, uint32_t count)
{
	struct pubd_ctl c = {.type = PUBD_CTL_NAK,
			     .count = count,
			     .stream = a->d.source_id,
			     .first_seq = seq,
			     .token = hd_group(a, "r")->repair_token,
			     .cookie = engine_repair_cookie(&a->d, &peer, sizeof(peer))};
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_CONTROL, .group_id = hd_group(a, "r")->id, .source_id = asker};
	uint8_t dg[PUBD_WIRE_HDR_LEN + PUBD_CTL_MAX_LEN];
	size_t blen = pubd_ctl_encode(&c, dg + PUBD_WIRE_HDR_LEN, PUBD_CTL_MAX_LEN);

	assert_true(blen > 0);
	h.msg_len = (uint32_t)blen;
	pubd_wire_encode(&h, dg);
	pubd_fake_inject_from(a->fk, -1, dg, (uint32_t)(PUBD_WIRE_HDR_LEN + blen), peer);
}

/* A COOKIE from a's source id, token and address to b, giving cookie. */
static void cookie_from(struct hd *b, struct hd *a, uint64_t token, uint64_t cookie)
{
	struct pubd_ctl c = {.type = PUBD_CTL_COOKIE, .stream = a->d.source_id, .token = token, .cookie = cookie};
	struct pubd_wire_hdr h = {
		.flags = PUBD_WIRE_F_CONTROL, .group_id = hd_group(b, "r")->id, .source_id = a->d.source_id};
	uint8_t dg[PUBD_WIRE_HDR_LEN + PUBD_CTL_MAX_LEN];
	size_t blen = pubd_ctl_encode(&c, dg + PUBD_WIRE_HDR_LEN, PUBD_CTL_MAX_LEN);

	assert_true(blen > 0);
	h.msg_len = (uint32_t)blen;
	pubd_wire_encode(&h, dg);
	pubd_fake_inject_from(b->fk, -1, dg, (uint32_t)(PUBD_WIRE_HDR_LEN + blen), pubd_fake_peer_id(a->fk));
}

struct sent_kinds {
	unsigned repairs, unicast, gone, other;
	uint64_t gone_first, gone_count;
};

static struct sent_kinds classify(struct hd *a, uint64_t to)
{
	struct sent_kinds k = {0};
	size_t i;

	for (i = 0; i < pubd_fake_sent_count(a->fk); i++) {
		const struct pubd_fake_sent *r = pubd_fake_sent_at(a->fk, i);
		struct pubd_wire_hdr h;
		const uint8_t *p;
		size_t plen;
		struct pubd_ctl c;

		assert_int_equal(pubd_wire_decode(r->data, r->len, &h, &p, &plen), 0);
		k.unicast += r->to == to;
		if (h.flags & PUBD_WIRE_F_REPAIR) {
			k.repairs++;
		} else if (h.flags & PUBD_WIRE_F_CONTROL) {
			assert_int_equal(pubd_ctl_decode(p, plen, &c), 0);
			assert_int_equal(c.type, PUBD_CTL_GONE);
			k.gone++;
			k.gone_first = c.first_seq;
			k.gone_count = c.count;
		} else {
			k.other++;
		}
	}
	return k;
}

static uint32_t frags_of(uint64_t k)
{
	return (uint32_t)((msg_len(k) + 975) / 976);
}

#include "test_daemon_inorder.h"

/* Messages lost on the way are NAKed and repaired unicast: all delivered,
 * byte-identical; a repeat NAK within the linger is a duplicate. */
static void test_nak_repairs_unicast(void **state)
{
	static struct hd a, b;
	static const uint64_t lost[] = {3, 7};
	const uint64_t N = 12;
	struct pubd_group *ga, *gb;
	struct hc pub, sub;
	struct sent_kinds k;
	uint8_t got[12] = {0};
	struct inorder v = {.got = got, .n = N};
	uint64_t dl;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, body("{window: 1MiB, max_age_ms: 60000}")), 0);
	assert_int_equal(hd_start(&b, NULL, body("on")), 0);
	assert_int_equal(hc_connect(&b, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	publish(&pub, 0, N);
	drain(&a);
	ga = hd_group(&a, "r");
	gb = hd_group(&b, "r");
	assert_non_null(ga->rwin);
	assert_true(move_with_loss(&a, &b, lost, 2) == frags_of(3) + frags_of(7));

	nak(&a, &b, 3, 1);
	nak(&a, &b, 7, 1);
	nak(&a, &b, 7, 1); /* again at once: within the linger */
	k = classify(&a, pubd_fake_peer_id(b.fk));
	assert_int_equal(k.repairs, frags_of(3) + frags_of(7));
	assert_int_equal(k.unicast, k.repairs);
	assert_int_equal(k.gone + k.other, 0);
	assert_int_equal(ga->naks_received, 3);
	assert_int_equal(ga->naks_ignored_duplicate, 1);
	assert_int_equal(ga->repairs_sent, k.repairs);
	pubd_fake_transfer(a.fk, b.fk, NULL, NULL);

	dl = hd_deadline(5000);
	while (!hd_past(dl) && v.delivered < N) {
		hd_turn(&b, 1);
		take_in_order(&sub, &v);
	}
	assert_int_equal(v.delivered, N);
	assert_int_equal(gb->received, N);
	assert_int_equal(pubd_drops_msg_total(&gb->drops), 0);
	hc_close(&pub);
	hc_close(&sub);
	hd_stop(&a);
	hd_stop(&b);
}

/* A window too small: what left it is answered GONE (one datagram per
 * run), what was never sent is ignored as outside the window. */
static void test_nak_gone_and_outside(void **state)
{
	static struct hd a, b;
	struct pubd_group *ga;
	struct sent_kinds k;
	struct hc pub;
	uint64_t first_kept;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, body("{window: 64KiB}")), 0);
	assert_int_equal(hd_start(&b, NULL, body("on")), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	publish(&pub, 0, 100); /* about 200 KB: the window keeps the last 64 KiB */
	drain(&a);
	pubd_fake_sent_clear(a.fk);
	ga = hd_group(&a, "r");
	assert_true(ga->rwin->bytes <= 64 * 1024);
	first_kept = ga->rwin->first_seq;
	assert_true(first_kept > 10 && first_kept < 90);

	nak(&a, &b, first_kept - 10, 12); /* 10 gone, 2 kept */
	nak(&a, &b, 100, 5);		  /* not sent yet */
	k = classify(&a, pubd_fake_peer_id(b.fk));
	assert_int_equal(k.gone, 1);
	assert_int_equal(k.gone_first, first_kept - 10);
	assert_int_equal(k.gone_count, 10);
	assert_int_equal(k.repairs, frags_of(first_kept) + frags_of(first_kept + 1));
	assert_int_equal(ga->gone_sent, 1);
	assert_int_equal(ga->naks_ignored_outside, 5);
	hc_close(&pub);
	hd_stop(&a);
	hd_stop(&b);
}

/* A receiver that keeps asking (dead, or hostile) gets no more repair
 * bytes than the group's repair.rate allows: the bucket's depth (100 ms at
 * the rate, two datagrams at least) plus the rate over the time taken. */
static void test_repair_rate_cap(void **state)
{
	static struct hd a, b;
	struct pubd_group *ga;
	struct hc pub;
	uint64_t t0, elapsed, cap, s;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, body("{window: 1MiB, rate: 4KiB}")), 0);
	assert_int_equal(hd_start(&b, NULL, body("on")), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	publish(&pub, 0, 200);
	drain(&a);
	pubd_fake_sent_clear(a.fk);
	ga = hd_group(&a, "r");
	t0 = pubd_now_ns();
	for (s = 0; s < 200; s++)
		nak(&a, &b, s, 1);
	for (s = 0; s < 200; s++) /* and again: what the rate refused is asked for anew */
		nak(&a, &b, s, 1);
	elapsed = pubd_now_ns() - t0;
	cap = 2 * 1024 + 4096 * elapsed / 1000000000ull + 1024; /* depth + rate x time + one datagram of debt */
	print_message("repair bytes %llu in %llu us (cap %llu), ignored by rate %llu\n",
		      (unsigned long long)ga->repair_bytes, (unsigned long long)(elapsed / 1000),
		      (unsigned long long)cap, (unsigned long long)ga->naks_ignored_rate);
	assert_int_equal(ga->naks_received, 400);
	assert_true(ga->repair_bytes > 0);
	assert_true(ga->repair_bytes <= cap);
	assert_true(ga->naks_ignored_rate > 0);
	hc_close(&pub);
	hd_stop(&a);
	hd_stop(&b);
}

/* Both sides: random loss from the source to the receiver, whose own NAKs
 * (unicast back) get every message repaired; nothing counted lost. */
static void test_end_to_end_random_loss(void **state)
{
	struct pubd_fake_impair imp = {.loss_ppm = 50000, .seed = 7};
	struct pubd_fake_transfer_stats st = {0};
	static struct hd a, b;
	const uint64_t N = 300;
	struct pubd_group *gb, *ga;
	struct hc pub, sub;
	uint8_t *got = calloc(N, 1);
	struct inorder v = {.got = got, .n = N};
	uint64_t dl, t0 = pubd_now_ns();

	(void)state;
	assert_non_null(got);
	assert_int_equal(hd_start(&a, NULL, body("{window: 4MiB, max_age_ms: 10000}")), 0);
	assert_int_equal(hd_start(&b, NULL, body("{nak_backoff_ms: 10, nak_interval_ms: 30}")), 0);
	assert_int_equal(hc_connect(&b, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	publish(&pub, 0, N);
	ga = hd_group(&a, "r");
	gb = hd_group(&b, "r");
	dl = hd_deadline(10000);
	while (!hd_past(dl) && v.delivered < N) {
		hd_turn(&a, 1);
		pubd_fake_transfer(a.fk, b.fk, &imp, &st);
		hd_turn(&b, 1);
		pubd_fake_transfer(b.fk, a.fk, NULL, NULL);
		take_in_order(&sub, &v);
	}
	print_message("%llu messages, %llu datagrams lost, %llu NAKs, %llu repair datagrams, %llu repaired, "
		      "%llu unrecovered, %llu ms\n",
		      (unsigned long long)N, (unsigned long long)st.lost, (unsigned long long)gb->naks_sent,
		      (unsigned long long)ga->repairs_sent, (unsigned long long)gb->repaired,
		      (unsigned long long)gb->drops.by_reason[PUB_DROP_UNRECOVERED],
		      (unsigned long long)((pubd_now_ns() - t0) / MS));
	assert_true(st.lost > 0);
	assert_int_equal(v.delivered, N);
	assert_int_equal(gb->received, N);
	assert_true(gb->repaired > 0);
	assert_true(gb->naks_sent > 0);
	assert_int_equal(ga->naks_received, gb->naks_sent);
	assert_int_equal(pubd_drops_msg_total(&gb->drops), 0);
	hc_close(&pub);
	hc_close(&sub);
	hd_stop(&a);
	hd_stop(&b);
	free(got);
}

/*
 * A source's first message lost on its way to a receiver that had listened
 * for a little while (over a heartbeat period, under the grace after which
 * a new stream counts from 0 anyway), and with it the heartbeat announcing
 * the stream's start: the heartbeat the source sends after its first
 * message says the stream began since, so the receiver asks for message 0
 * and gets it, in order. When the stream began long before the
 * receiver listened (began_long_ago), message 0 was never the receiver's:
 * nothing is asked for or counted. Without the heartbeat's age, message 0
 * was neither delivered nor counted.
 */
static void first_message_lost(bool began_long_ago)
{
	static struct hd a, b;
	const uint64_t N = 20, lost[] = {0};
	struct pubd_group *ga, *gb;
	struct hc pub, sub;
	uint8_t got[20] = {0};
	struct inorder v = {.got = got, .n = N};
	uint64_t dl, want = began_long_ago ? N - 1 : N;

	assert_int_equal(hd_start(&a, NULL, body("{window: 4MiB, max_age_ms: 10000}")), 0);
	assert_int_equal(hd_start(&b, NULL, body("{nak_backoff_ms: 1, nak_interval_ms: 20}")), 0);
	assert_int_equal(hc_connect(&b, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	ga = hd_group(&a, "r");
	gb = hd_group(&b, "r");
	dl = hd_deadline(5000);
	while (!hd_past(dl) && !gb->listening)
		hd_turn(&b, 1);
	assert_true(gb->listening);
	/* b has listened two heartbeat periods (of a second here, for a test
	 * that takes far less): past the slack for a heartbeat's transit,
	 * within the grace of five after which any new stream counts from 0. */
	b.d.cfg.heartbeat_ms = 1000;
	gb->listen_since_ns = gb->up_since_ns = pubd_now_ns() - 2000 * MS;
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	if (began_long_ago) {
		/* Message 0 and the heartbeat after it went ten seconds ago, long
		 * before b listened; the next heartbeat says how long ago. */
		publish(&pub, 0, 1);
		drain(&a);
		pubd_fake_sent_clear(a.fk);
		ga->stream_began_ns -= 10000 * MS;
		pubd_tx_announce(&a.d, ga);
		publish(&pub, 1, N);
	} else {
		/* All queued at once: message 0 still goes alone, the heartbeat
		 * after it before message 1, so b does not deliver 1 first. */
		publish(&pub, 0, N);
	}
	drain(&a);
	assert_int_equal(move_losing(&a, &b, lost, 1, true), began_long_ago ? 0 : 2);

	while (!hd_past(dl) && pubd_drops_msg_total(&gb->drops) + v.delivered < want) {
		exchange_in_order(&a, &b, &sub, &v);
	}
	assert_int_equal(v.delivered, want);
	assert_int_equal(got[0], !began_long_ago);
	assert_int_equal(pubd_drops_msg_total(&gb->drops), 0);
	assert_int_equal(gb->repaired, !began_long_ago);
	if (began_long_ago)
		assert_int_equal(ga->naks_received, 0);
	hc_close(&pub);
	hc_close(&sub);
	hd_stop(&a);
	hd_stop(&b);
}

/* Source a and receiver b (its repair config b_repair, a subscriber sub
 * on r): n messages published on a (by pub) and sent, b given them all
 * but the messages lost[0..nlost). */
static void sent_with_loss(struct hd *a, struct hd *b, const char *b_repair, struct hc *pub, struct hc *sub, uint64_t n,
			   const uint64_t *lost, unsigned nlost)
{
	assert_int_equal(hd_start(a, NULL, body("{window: 4MiB, max_age_ms: 10000}")), 0);
	assert_int_equal(hd_start(b, NULL, body(b_repair)), 0);
	assert_int_equal(hc_connect(b, sub, 0), 0);
	assert_int_equal(hc_hello(sub, "sub"), 0);
	assert_int_equal(hc_group_req(sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	assert_int_equal(hc_connect(a, pub, 0), 0);
	assert_int_equal(hc_hello(pub, "pub"), 0);
	publish(pub, 0, n);
	drain(a);
	assert_true(move_with_loss(a, b, lost, nlost) > 0);
}

/*
 * A receiver's first NAK to a source carries no cookie (wire_ctl.h) and
 * gets a COOKIE, not repairs. That NAK is no try, and the COOKIE makes the
 * gap due at once: the repair does not wait for nak_interval_ms (10 s
 * here), and no retry is spent.
 */
static void test_cookie_costs_no_interval(void **state)
{
	static struct hd a, b;
	const uint64_t N = 20, lost[] = {5};
	struct pubd_group *ga, *gb;
	struct hc pub, sub;
	uint8_t got[20] = {0};
	struct inorder v = {.got = got, .n = N};
	uint64_t dl, t0;

	(void)state;
	sent_with_loss(&a, &b, "{nak_backoff_ms: 1, nak_interval_ms: 10000, nak_retries: 1}", &pub, &sub, N, lost, 1);
	ga = hd_group(&a, "r");
	gb = hd_group(&b, "r");
	t0 = pubd_now_ns();
	dl = hd_deadline(5000);
	while (!hd_past(dl) && v.delivered < N)
		exchange_in_order(&a, &b, &sub, &v);
	print_message("repaired in %llu ms: %llu NAKs, %llu COOKIEs\n", (unsigned long long)((pubd_now_ns() - t0) / MS),
		      (unsigned long long)gb->naks_sent, (unsigned long long)ga->cookies_sent);
	assert_int_equal(v.delivered, N);
	assert_int_equal(gb->repaired, 1);
	assert_int_equal(ga->cookies_sent, 1);
	assert_int_equal(gb->naks_sent, 2); /* without the cookie, then with it */
	assert_int_equal(ga->naks_ignored_unproven, 1);
	assert_true(pubd_now_ns() - t0 < 2000 * MS);
	hc_close(&pub);
	hc_close(&sub);
	hd_stop(&a);
	hd_stop(&b);
}

/* A COOKIE for a stream with gaps: b's NAKs go again at once (each is
 * no try yet). Later COOKIEs, a forger's with the sniffed token, are kept
 * for the next round, not a burst of NAKs each: 50 of them sent none. */
static void test_later_cookies_send_no_naks(void **state)
{
	static struct hd a, b;
	const uint64_t N = 20, lost[] = {5, 7, 9};
	struct pubd_group *ga, *gb;
	struct hc pub, sub;
	uint64_t dl, naks, i;

	(void)state;
	sent_with_loss(&a, &b, "{nak_backoff_ms: 1, nak_interval_ms: 10000}", &pub, &sub, N, lost, 3);
	ga = hd_group(&a, "r");
	gb = hd_group(&b, "r");
	/* b's first NAKs go (to nobody: nothing goes from b to a here). */
	dl = hd_deadline(3000);
	while (!hd_past(dl) && gb->naks_sent < 3)
		hd_turn(&b, 1);
	assert_int_equal(gb->naks_sent, 3);
	cookie_from(&b, &a, ga->repair_token, 0xc00c1e);
	hd_settle(&b, 10);
	assert_int_equal(gb->naks_sent, 6); /* again, with the cookie */
	naks = gb->naks_sent;
	for (i = 0; i < 50; i++) {
		cookie_from(&b, &a, ga->repair_token, 0xbad0 + i);
		hd_settle(&b, 10);
	}
	print_message("NAKs after 50 more COOKIEs: %llu (were %llu)\n", (unsigned long long)gb->naks_sent,
		      (unsigned long long)naks);
	assert_int_equal(gb->naks_sent, naks);
	hc_close(&pub);
	hc_close(&sub);
	hd_stop(&a);
	hd_stop(&b);
}

static void test_first_message_lost_is_asked_for(void **state)
{
	(void)state;
	first_message_lost(false);
}

static void test_first_message_before_listening_is_not_ours(void **state)
{
	(void)state;
	first_message_lost(true);
}

/* A window too small for the loss: the lost messages have left it by the
 * time they are asked for; the source answers GONE and the receiver counts
 * exactly those as unrecovered, the rest delivered in order. */
static void test_window_too_small_counts_unrecovered(void **state)
{
	static struct hd a, b;
	static const uint64_t lost[] = {2, 3, 9};
	const uint64_t N = 120;
	struct pubd_group *ga, *gb;
	struct pubd_source_stats *src;
	struct hc pub, sub;
	uint8_t got[120] = {0};
	struct inorder v = {.got = got, .n = N};
	uint64_t dl;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, body("{window: 64KiB}")), 0);
	/* reassembly's own timeout short: repair stretches it to the retries */
	assert_int_equal(hd_start(&b, NULL,
				  "limits:\n  reassembly_timeout_ms: 50\n"
				  "groups:\n"
				  "  - name: r\n"
				  "    address: 239.78.0.1\n"
				  "    repair: {nak_backoff_ms: 5, nak_interval_ms: 20, nak_retries: 3}\n"),
			 0);
	assert_int_equal(hc_connect(&b, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	publish(&pub, 0, N); /* ~240 KB: 2, 3 and 9 have left the 64 KiB window */
	drain(&a);
	ga = hd_group(&a, "r");
	gb = hd_group(&b, "r");
	assert_true(ga->rwin->first_seq > 9);
	move_with_loss(&a, &b, lost, 3);
	dl = hd_deadline(10000);
	src = pubd_source_map_get(&b.d.sources, a.d.source_id, gb->id, pubd_now_ns());
	while (!hd_past(dl) && src->delivered + pubd_drops_msg_total(&src->drops) < N) {
		exchange_in_order(&a, &b, &sub, &v);
		src = pubd_source_map_get(&b.d.sources, a.d.source_id, gb->id, pubd_now_ns());
	}
	dl = hd_deadline(2000);
	while (!hd_past(dl) && v.delivered < N - 3) {
		hd_turn(&b, 1);
		take_in_order(&sub, &v);
	}
	print_message("gone sent %llu, unrecovered %llu, delivered %llu\n", (unsigned long long)ga->gone_sent,
		      (unsigned long long)gb->drops.by_reason[PUB_DROP_UNRECOVERED], (unsigned long long)v.delivered);
	assert_true(ga->gone_sent > 0);
	assert_false(got[2] || got[3] || got[9]);
	assert_int_equal(gb->drops.by_reason[PUB_DROP_UNRECOVERED], 3);
	assert_int_equal(pubd_drops_msg_total(&gb->drops), 3);
	assert_int_equal(src->delivered, N - 3);
	assert_int_equal(v.delivered, N - 3);
	hc_close(&pub);
	hc_close(&sub);
	hd_stop(&a);
	hd_stop(&b);
}

/* Two receivers ask for the same message within the multicast interval:
 * the second answer goes to the group (multicast), and a third receiver's
 * NAK right after is a duplicate. */
static void test_two_askers_get_multicast(void **state)
{
	static struct hd a;
	struct pubd_group *ga;
	struct hc pub;
	unsigned uni = 0, multi = 0;
	size_t i;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, body("on")), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	publish(&pub, 0, 10);
	drain(&a);
	pubd_fake_sent_clear(a.fk);
	ga = hd_group(&a, "r");
	nak_from(&a, 0x1111, 0x51, 5, 1);
	nak_from(&a, 0x2222, 0x52, 5, 1);
	nak_from(&a, 0x3333, 0x53, 5, 1);
	for (i = 0; i < pubd_fake_sent_count(a.fk); i++) {
		const struct pubd_fake_sent *r = pubd_fake_sent_at(a.fk, i);

		uni += r->to == 0x51;
		multi += r->to == 0 && r->slot == ga->slot;
		assert_true(r->to == 0 || r->to == 0x51);
	}
	assert_int_equal(uni, frags_of(5));
	assert_int_equal(multi, frags_of(5));
	assert_int_equal(ga->naks_ignored_duplicate, 1);
	hc_close(&pub);
	hd_stop(&a);
}

/* One message of len bytes, seq of source on g, as a datagram into d. */
static void inject_msg(struct hd *d, struct pubd_group *g, uint64_t source, uint64_t seq, uint32_t len)
{
	struct pubd_wire_hdr h = {
		.group_id = g->id, .source_id = source, .msg_seq = seq, .msg_len = len, .frag_count = 1};
	uint8_t dg[PUBD_WIRE_HDR_LEN + 64] = {0};

	pubd_wire_encode(&h, dg);
	pubd_fake_inject_from(d->fk, g->slot, dg, PUBD_WIRE_HDR_LEN + len, 0x77);
}

/* A repair group (its reassembly waits for every NAK retry, here over a
 * second) does not stretch a plain group's reassembly_timeout_ms: a gap
 * on the plain group is counted as seq_gap within about 50 ms. */
static void test_plain_group_keeps_its_timeout(void **state)
{
	static struct hd b;
	struct pubd_group *gp;
	struct hc sub;
	uint64_t t0, dl, took;

	(void)state;
	assert_int_equal(hd_start(&b, NULL,
				  "limits:\n  reassembly_timeout_ms: 50\n"
				  "groups:\n"
				  "  - {name: r, address: 239.78.0.1, repair: {nak_interval_ms: 200, nak_retries: 5}}\n"
				  "  - {name: p, address: 239.78.0.3}\n"),
			 0);
	assert_int_equal(hc_connect(&b, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "p", NULL), 0);
	gp = hd_group(&b, "p");
	inject_msg(&b, gp, 0x5151, 0, 10);
	hd_turn(&b, 1);
	t0 = pubd_now_ns();
	inject_msg(&b, gp, 0x5151, 2, 10); /* 1 is missing */
	dl = hd_deadline(3000);
	while (!hd_past(dl) && !gp->drops.by_reason[PUB_DROP_SEQ_GAP])
		hd_turn(&b, 5);
	took = (pubd_now_ns() - t0) / MS;
	print_message("plain group's gap counted after %llu ms (reassembly_timeout_ms 50; repair group's wait > 1 s)\n",
		      (unsigned long long)took);
	assert_int_equal(gp->drops.by_reason[PUB_DROP_SEQ_GAP], 1);
	assert_true(took < 500);
	hc_close(&sub);
	hd_stop(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_nak_repairs_unicast, hd_teardown),
		cmocka_unit_test_teardown(test_nak_gone_and_outside, hd_teardown),
		cmocka_unit_test_teardown(test_repair_rate_cap, hd_teardown),
		cmocka_unit_test_teardown(test_two_askers_get_multicast, hd_teardown),
		cmocka_unit_test_teardown(test_end_to_end_random_loss, hd_teardown),
		cmocka_unit_test_teardown(test_window_too_small_counts_unrecovered, hd_teardown),
		cmocka_unit_test_teardown(test_cookie_costs_no_interval, hd_teardown),
		cmocka_unit_test_teardown(test_later_cookies_send_no_naks, hd_teardown),
		cmocka_unit_test_teardown(test_first_message_lost_is_asked_for, hd_teardown),
		cmocka_unit_test_teardown(test_first_message_before_listening_is_not_ours, hd_teardown),
		cmocka_unit_test_teardown(test_plain_group_keeps_its_timeout, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
