/* SPDX-License-Identifier: MIT */
/*
 * Loss repair against forged control datagrams, through the daemon on the
 * fake fabric: a NAK without the group's repair token gets nothing back
 * (not even a GONE); one asker's NAKs and repair bytes are capped
 * (PUBD_REPAIR_PEER_NAKS_PER_S, repair.peer_rate) while another asker is
 * still served; a GONE or a COOKIE without the source's token changes
 * nothing; the token travels in the source's heartbeats, and only on the
 * group, also while the source is busy. A NAK from an address that does not
 * echo its cookie gets the cookie alone.
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
#include "repair_peers.h"
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
		 "    address: 239.78.0.2\n"
		 "    repair: %s\n",
		 repair);
	return b;
}

/* Publish n messages of len bytes on r and wait until a has sent them. */
static void publish_sent(struct hd *a, uint64_t n, size_t len)
{
	static uint8_t frame[4400], payload[4096];
	struct pubd_group *g;
	struct hc pub;
	uint64_t k, dl;
	size_t fl;

	assert_int_equal(hc_connect(a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	memset(payload, 0x5a, sizeof(payload));
	for (k = 0; k < n; k++) {
		fl = hc_enc_publish(frame, sizeof(frame), "r", payload, len);
		assert_int_equal(hc_write(&pub, frame, fl, 5000), 0);
	}
	g = hd_group(a, "r");
	dl = hd_deadline(5000);
	while (!hd_past(dl) && (g->txq_head || a->d.counters[PUBD_CTR_MSG_PUBLISHED] < n))
		hd_turn(a, 1);
	assert_null(g->txq_head);
	hc_close(&pub);
	pubd_fake_sent_clear(a->fk);
}

static void ctl_cookie_to(struct hd *a, uint8_t type, uint64_t from_source, uint64_t stream, uint64_t peer,
			  uint64_t seq, uint32_t count, uint64_t token, uint64_t cookie)
{
	struct pubd_ctl c = {
		.type = type, .count = count, .stream = stream, .first_seq = seq, .token = token, .cookie = cookie};
	struct pubd_wire_hdr h = {
		.flags = PUBD_WIRE_F_CONTROL, .group_id = hd_group(a, "r")->id, .source_id = from_source};
	uint8_t dg[PUBD_WIRE_HDR_LEN + PUBD_CTL_MAX_LEN];
	size_t blen = pubd_ctl_encode(&c, dg + PUBD_WIRE_HDR_LEN, PUBD_CTL_MAX_LEN);

	assert_true(blen > 0);
	h.msg_len = (uint32_t)blen;
	pubd_wire_encode(&h, dg);
	pubd_fake_inject_from(a->fk, -1, dg, (uint32_t)(PUBD_WIRE_HDR_LEN + blen), peer);
}

static void ctl_to(struct hd *a, uint8_t type, uint64_t from_source, uint64_t stream, uint64_t peer, uint64_t seq,
		   uint32_t count, uint64_t token)
{
	ctl_cookie_to(a, type, from_source, stream, peer, seq, count, token, 0);
}

/* A NAK from a receiver that has its address's cookie. */
static void nak_to(struct hd *a, uint64_t peer, uint64_t seq, uint32_t count, uint64_t token)
{
	ctl_cookie_to(a, PUBD_CTL_NAK, 0x4242, a->d.source_id, peer, seq, count, token,
		      engine_repair_cookie(&a->d, &peer, sizeof(peer)));
}

/*
 * A reflector's attack: NAKs with the group's token (any host on the
 * multicast reads it) from an address claimed to be a third party's. The
 * victim gets a COOKIE no bigger than a NAK, at most one in 10 ms, and no
 * repair; a wrong cookie is no better. A NAK that echoes the cookie (the
 * receiver that really is at that address) is repaired at once. Before the
 * cookie, one NAK of 88 bytes made the source send 1.68 MB to the claimed
 * address.
 */
static void test_nak_from_unproven_address_gets_a_cookie_only(void **state)
{
	static struct hd a;
	struct pubd_group *ga;
	const uint64_t victim = 0x7e7e;
	uint64_t i, bytes = 0, cookie;
	struct pubd_ctl c;
	size_t k;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, body("{window: 4MiB, rate: off, peer_rate: off}")), 0);
	publish_sent(&a, 200, 4000);
	ga = hd_group(&a, "r");
	for (i = 0; i < 100; i++)
		ctl_cookie_to(&a, PUBD_CTL_NAK, 0x4242, a.d.source_id, victim, 0, 200, ga->repair_token, i * 7);
	print_message("100 NAKs of 200 messages claiming another's address: %zu datagrams sent, COOKIEs %llu\n",
		      pubd_fake_sent_count(a.fk), (unsigned long long)ga->cookies_sent);
	assert_int_equal(ga->naks_ignored_unproven, 100);
	assert_int_equal(ga->repairs_sent + ga->repair_bytes + ga->gone_sent, 0);
	assert_int_equal(pubd_fake_sent_count(a.fk), 1);
	assert_int_equal(ga->cookies_sent, 1);
	for (k = 0; k < pubd_fake_sent_count(a.fk); k++) {
		const struct pubd_fake_sent *r = pubd_fake_sent_at(a.fk, k);
		struct pubd_wire_hdr h;
		const uint8_t *p;
		size_t plen;

		assert_int_equal(r->to, victim);
		bytes += r->len;
		assert_int_equal(pubd_wire_decode(r->data, r->len, &h, &p, &plen), 0);
		assert_int_equal(pubd_ctl_decode(p, plen, &c), 0);
	}
	/* No bigger than the NAK that asked (a NAK with its cookie). */
	assert_true(bytes <= PUBD_WIRE_HDR_LEN + PUBD_CTL_FIXED_LEN + PUBD_CTL_COOKIE_LEN);
	assert_int_equal(c.type, PUBD_CTL_COOKIE);
	assert_int_equal(c.stream, a.d.source_id);
	assert_int_equal(c.token, ga->repair_token);
	cookie = c.cookie;
	assert_int_equal(cookie, engine_repair_cookie(&a.d, &victim, sizeof(victim)));
	/* Another address's cookie does not do for this one. */
	pubd_fake_sent_clear(a.fk);
	nak_to(&a, victim + 1, 0, 1, ga->repair_token);
	assert_int_equal(ga->repairs_sent, 5);
	ctl_cookie_to(&a, PUBD_CTL_NAK, 0x4242, a.d.source_id, victim, 0, 1, ga->repair_token,
		      engine_repair_cookie(&a.d, &(uint64_t){victim + 1}, sizeof(victim)));
	assert_int_equal(ga->naks_ignored_unproven, 101);
	assert_int_equal(ga->repairs_sent, 5);
	/* The receiver that is there echoes its cookie: repaired at once. */
	ctl_cookie_to(&a, PUBD_CTL_NAK, 0x4242, a.d.source_id, victim, 1, 1, ga->repair_token, cookie);
	assert_int_equal(ga->repairs_sent, 10); /* 4,000 bytes: 5 fragments of 976 */
	hd_stop(&a);
}

/* Forged NAKs (no token, a wrong one, a huge range, from many ports) get
 * nothing sent; the same NAK with the token is answered. */
static void test_nak_without_token_gets_nothing(void **state)
{
	static struct hd a;
	struct pubd_group *ga;
	uint64_t port;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, body("{window: 1MiB, rate: off, peer_rate: off}")), 0);
	publish_sent(&a, 20, 3000);
	ga = hd_group(&a, "r");
	assert_true(ga->repair_token != 0);
	nak_to(&a, 0x71, 0, 20, 0);
	nak_to(&a, 0x71, 0, 20, ga->repair_token ^ 1);
	for (port = 0; port < 500; port++)
		nak_to(&a, 0x1000 + port, 0, PUBD_CTL_MAX_COUNT, port * 0x9e3779b97f4a7c15ull | 1);
	assert_int_equal(pubd_fake_sent_count(a.fk), 0);
	assert_int_equal(ga->naks_received, 502);
	assert_int_equal(ga->naks_ignored_token, 502);
	assert_int_equal(ga->repair_bytes + ga->repairs_sent + ga->gone_sent, 0);
	nak_to(&a, 0x71, 0, 20, ga->repair_token);
	assert_int_equal(ga->repairs_sent, 20 * ((3000 + 975) / 976)); /* fragments of 976 bytes at the fake's MTU */
	assert_int_equal(pubd_fake_sent_count(a.fk), ga->repairs_sent);
	hd_stop(&a);
}

/* One asker flooding NAKs: the first PUBD_REPAIR_PEER_NAK_BURST are taken,
 * the rest ignored as peer; another asker is still answered. Repair bytes
 * to one asker stay within repair.peer_rate's bucket. */
static void test_one_asker_is_capped(void **state)
{
	static struct hd a;
	struct pubd_group *ga;
	uint64_t i, t0, elapsed, cap, bytes_before;
	size_t sent_before;

	(void)state;
	/* 1-fragment messages of ~1000 bytes; the asker's bucket 64 KiB/s,
	 * 6.4 KiB deep (2 datagrams of 1024 at least) */
	assert_int_equal(hd_start(&a, NULL, body("{window: 4MiB, rate: off, peer_rate: 64KiB}")), 0);
	publish_sent(&a, 2000, 900);
	ga = hd_group(&a, "r");
	t0 = pubd_now_ns();
	for (i = 0; i < 4 * PUBD_REPAIR_PEER_NAK_BURST; i++)
		nak_to(&a, 0x71, i % 2000, 1, ga->repair_token);
	elapsed = pubd_now_ns() - t0;
	cap = 64 * 1024 / 10 + 64 * 1024 * elapsed / 1000000000ull + 1024;
	print_message("one asker: repair bytes %llu (cap %llu), NAKs over its rate %llu\n",
		      (unsigned long long)ga->repair_bytes, (unsigned long long)cap,
		      (unsigned long long)ga->naks_ignored_peer);
	assert_true(ga->repair_bytes > 0);
	assert_true(ga->repair_bytes <= cap);
	/* Beyond the burst, only what the NAK rate refilled meanwhile. */
	assert_true(ga->naks_ignored_peer + PUBD_REPAIR_PEER_NAK_BURST + 1 +
			    PUBD_REPAIR_PEER_NAKS_PER_S * elapsed / 1000000000ull >=
		    4 * PUBD_REPAIR_PEER_NAK_BURST);
	assert_true(ga->naks_ignored_peer > 0);
	/* Another asker still gets its repair. */
	bytes_before = ga->repair_bytes;
	sent_before = pubd_fake_sent_count(a.fk);
	nak_to(&a, 0x72, 1500, 1, ga->repair_token);
	assert_int_equal(pubd_fake_sent_count(a.fk), sent_before + 1);
	assert_true(ga->repair_bytes > bytes_before);
	assert_int_equal(pubd_fake_sent_at(a.fk, sent_before)->to, 0x72);
	hd_stop(&a);
}

/* The source's heartbeats carry its token; the receiver learns it from the
 * group's multicast only, echoes it in its NAKs, and ignores a GONE that
 * lacks it. */
static void test_token_by_heartbeat_and_forged_gone(void **state)
{
	static struct hd a, b;
	struct pubd_group *ga, *gb;
	struct pubd_source_stats *s;
	uint64_t dl, token = 0;
	struct hc sub;
	size_t i;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, body("on")), 0);
	assert_int_equal(hd_start(&b, NULL, body("on")), 0);
	assert_int_equal(hc_connect(&b, &sub, 0), 0); /* b listens on r */
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	publish_sent(&a, 3, 100);
	ga = hd_group(&a, "r");
	gb = hd_group(&b, "r");
	dl = hd_deadline(3000);
	while (!hd_past(dl) && !token) {
		hd_turn(&a, 5);
		for (i = 0; i < pubd_fake_sent_count(a.fk); i++) {
			const struct pubd_fake_sent *r = pubd_fake_sent_at(a.fk, i);

			token = token ? token : pubd_ctl_hb_token(r->data, r->len);
			/* unicast to the port: not on the group, not learnt */
			pubd_fake_inject_from(b.fk, -1, r->data, r->len, pubd_fake_peer_id(a.fk));
		}
		pubd_fake_sent_clear(a.fk);
	}
	assert_int_equal(token, ga->repair_token);
	hd_turn(&b, 1);
	s = pubd_source_map_find(&b.d.sources, a.d.source_id, gb->id);
	assert_true(!s || s->repair_token == 0);
	/* the same heartbeat on the group's address: learnt */
	dl = hd_deadline(3000);
	while (!hd_past(dl) && !((s = pubd_source_map_find(&b.d.sources, a.d.source_id, gb->id)) && s->repair_token)) {
		hd_turn(&a, 5);
		pubd_fake_transfer(a.fk, b.fk, NULL, NULL);
		hd_turn(&b, 1);
	}
	assert_non_null(s);
	assert_int_equal(s->repair_token, token);
	/* a forged GONE (wrong token) for a: ignored; with the token: taken */
	ctl_to(&b, PUBD_CTL_GONE, a.d.source_id, a.d.source_id, 0x99, 0, 3, token + 1);
	hd_turn(&b, 1);
	assert_int_equal(gb->gone_ignored, 1);
	ctl_to(&b, PUBD_CTL_GONE, a.d.source_id, a.d.source_id, 0x99, 0, 3, token);
	hd_turn(&b, 1);
	assert_int_equal(gb->gone_ignored, 1);
	/* A forged COOKIE (wrong token) would have b's NAKs carry a cookie a
	 * refuses: ignored; with the token: kept for a. */
	assert_int_equal(s->nak_cookie, 0);
	ctl_cookie_to(&b, PUBD_CTL_COOKIE, a.d.source_id, a.d.source_id, 0x99, 0, 0, token + 1, 0xbad);
	hd_turn(&b, 1);
	assert_int_equal(gb->gone_ignored, 2);
	assert_int_equal(s->nak_cookie, 0);
	ctl_cookie_to(&b, PUBD_CTL_COOKIE, a.d.source_id, a.d.source_id, 0x99, 0, 0, token, 0xc00c1e);
	hd_turn(&b, 1);
	assert_int_equal(gb->gone_ignored, 2);
	assert_int_equal(s->nak_cookie, 0xc00c1e);
	hc_close(&sub);
	hd_stop(&a);
	hd_stop(&b);
}

/* A source that publishes without a pause still gives its token: on a
 * repair group the heartbeat goes while the transmit queue is busy (else a
 * receiver that joined meanwhile could not NAK until the publisher paused,
 * and its first gaps ran out of tries: a CI run lost 4 of 1,000), and it
 * names only what the fabric has taken. A group without repair stays quiet
 * while busy. */
static void test_busy_source_still_gives_its_token(void **state)
{
	static struct hd a;
	static uint8_t frame[4400], payload[3000];
	struct pubd_group *gr, *gp;
	const struct pubd_fake_sent *r;
	struct pubd_wire_hdr h;
	const uint8_t *p;
	size_t plen, fl, i, n;
	struct hc pub;
	uint64_t dl, k;
	unsigned hb_r = 0, hb_p = 0;

	(void)state;
	assert_int_equal(hd_start(&a, NULL,
				  "groups:\n"
				  "  - {name: r, address: 239.78.0.2, repair: on}\n"
				  "  - {name: p, address: 239.78.0.3}\n"),
			 0);
	gr = hd_group(&a, "r");
	gp = hd_group(&a, "p");
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	memset(payload, 0x5a, sizeof(payload));
	/* one message each goes out; then the fabric takes nothing while ten
	 * more each wait */
	for (k = 0; k < 11; k++) {
		if (k == 1) {
			dl = hd_deadline(5000);
			while (!hd_past(dl) && !(gr->ever_sent && gp->ever_sent && !gr->txq_head && !gp->txq_head))
				hd_turn(&a, 1);
			pubd_fake_set_credits(a.fk, 0);
		}
		fl = hc_enc_publish(frame, sizeof(frame), "r", payload, sizeof(payload));
		assert_int_equal(hc_write(&pub, frame, fl, 5000), 0);
		fl = hc_enc_publish(frame, sizeof(frame), "p", payload, sizeof(payload));
		assert_int_equal(hc_write(&pub, frame, fl, 5000), 0);
	}
	dl = hd_deadline(5000);
	while (!hd_past(dl) && !(gr->txq_len == 10 && gp->txq_len == 10))
		hd_turn(&a, 1);
	assert_true(gr->ever_sent && gp->ever_sent && gr->txq_len == 10 && gp->txq_len == 10); /* both busy */
	pubd_fake_sent_clear(a.fk);
	pubd_fake_add_credits(a.fk, 2);
	pubd_tx_heartbeat(&a.d);
	n = pubd_fake_sent_count(a.fk);
	for (i = 0; i < n; i++) {
		r = pubd_fake_sent_at(a.fk, i);
		assert_int_equal(pubd_wire_decode(r->data, r->len, &h, &p, &plen), 0);
		assert_true(h.flags & PUBD_WIRE_F_HEARTBEAT);
		if (r->slot == gr->slot) {
			hb_r++;
			assert_int_equal(pubd_ctl_hb_token(r->data, r->len), gr->repair_token);
			assert_int_equal(h.msg_seq, gr->sent_seq); /* nothing still queued */
			assert_true(h.msg_seq < gr->next_seq);
		} else {
			hb_p++;
		}
	}
	assert_int_equal(hb_r, 1);
	assert_int_equal(hb_p, 0);
	pubd_fake_set_credits(a.fk, -1);
	hc_close(&pub);
	hd_stop(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_nak_without_token_gets_nothing, hd_teardown),
		cmocka_unit_test_teardown(test_nak_from_unproven_address_gets_a_cookie_only, hd_teardown),
		cmocka_unit_test_teardown(test_one_asker_is_capped, hd_teardown),
		cmocka_unit_test_teardown(test_token_by_heartbeat_and_forged_gone, hd_teardown),
		cmocka_unit_test_teardown(test_busy_source_still_gives_its_token, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
