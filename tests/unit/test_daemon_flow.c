/* SPDX-License-Identifier: MIT */
/*
 * Receiver flow control (groups.repair.flow_control: min) through two
 * daemons on the fake fabric: a source a, a receiver b whose one
 * subscriber reads slowly.
 * - With flow control, b's STATUSes hold a back: every message arrives in
 *   order, none overflows the subscriber's queue, and a waited. The same
 *   run without it overflows (so the first can fail).
 * - A receiver whose subscriber left says it has no limit; one that joins
 *   brings the limit back, and gets everything.
 * - A subscriber that stops reading holds a back for receiver_timeout_ms at
 *   most; then a sends on and b counts the overflow.
 * - A receiver that falls silent (its daemon stopped) is forgotten after
 *   the timeout, and a sends on.
 * - A STATUS without the group's repair token holds nothing back.
 * - A host that says "full" forever holds a back for two receiver timeouts,
 *   then its host is not waited for a while.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine_internal.h" /* white-box: the cookie a peer's address has */
#include "flow_ctl.h"
#include "proto.h"
#include "test_daemon_harness.h"
#include "tx.h"
#include "wire.h"
#include "wire_ctl.h"

#define N	    3000u
#define MSG_LEN	    100u
#define QUEUE	    32u
#define READ_EVERY  8u /* loop rounds between the subscriber's reads */
#define DEADLINE_MS 20000

static size_t msg_len(uint64_t k)
{
	(void)k;
	return MSG_LEN;
}

static uint8_t msg_byte(uint64_t k, size_t i)
{
	return (uint8_t)(k * 7 + i * 13);
}

#include "test_daemon_inorder.h"

static const char *body(const char *flow, unsigned timeout_ms)
{
	static char b[512];

	snprintf(b, sizeof(b),
		 "limits:\n  reassembly_timeout_ms: 60000\n  subscriber_queue: %u\n"
		 "groups:\n"
		 "  - name: r\n"
		 "    address: 239.78.0.3\n"
		 "    repair: {flow_control: %s, receiver_timeout_ms: %u}\n",
		 QUEUE, flow, timeout_ms);
	return b;
}

/* A publisher that writes as far as its socket takes, never waiting (the
 * test turns both daemons itself). */
struct publisher {
	struct hc c;
	uint64_t next, end; /* messages next .. end - 1 are to be written */
	uint8_t frame[512];
	size_t len, off;
};

static void publish_some(struct publisher *p)
{
	uint8_t payload[MSG_LEN];
	long w;
	size_t i;

	while (p->next < p->end) {
		if (p->off == p->len) {
			for (i = 0; i < MSG_LEN; i++)
				payload[i] = msg_byte(p->next, i);
			p->len = hc_enc_publish(p->frame, sizeof(p->frame), "r", payload, MSG_LEN);
			p->off = 0;
		}
		w = hc_try_write(&p->c, p->frame + p->off, p->len - p->off);
		assert_true(w >= 0);
		if (w == 0)
			return;
		p->off += (size_t)w;
		if (p->off == p->len)
			p->next++;
	}
}

struct rig {
	struct hd *a, *b;
	struct pubd_group *ga, *gb; /* group r on each */
	struct publisher pub;
	struct hc sub;
	struct inorder v;
	uint8_t got[N];
};

static void rig_start(struct rig *r, struct hd *a, struct hd *b, const char *flow, unsigned timeout_ms)
{
	memset(r, 0, sizeof(*r));
	r->a = a;
	r->b = b;
	r->v = (struct inorder){.got = r->got, .n = N};
	assert_int_equal(hd_start(a, NULL, body(flow, timeout_ms)), 0);
	assert_int_equal(hd_start(b, NULL, body(flow, timeout_ms)), 0);
	/* A small receive buffer: the subscriber's queue in b fills soon. */
	assert_int_equal(hc_connect(b, &r->sub, 4096), 0);
	assert_int_equal(hc_hello(&r->sub, "sub"), 0);
	assert_int_equal(hc_group_req(&r->sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	assert_int_equal(hc_connect(a, &r->pub.c, 0), 0);
	assert_int_equal(hc_hello(&r->pub.c, "pub"), 0);
	r->ga = hd_group(a, "r");
	r->gb = hd_group(b, "r");
}

/* One round: a publishes and sends, b receives and answers. */
static void rig_round(struct rig *r, bool b_alive)
{
	publish_some(&r->pub);
	hd_turn(r->a, 0);
	if (!b_alive) {
		pubd_fake_sent_clear(r->a->fk);
		return;
	}
	pubd_fake_transfer(r->a->fk, r->b->fk, NULL, NULL);
	hd_turn(r->b, 0);
	pubd_fake_transfer(r->b->fk, r->a->fk, NULL, NULL);
}

/* Flow control holds a source back from a receiver's first STATUS on,
 * which follows its first delivery: one message goes alone, and the rest
 * once a has heard from b (or its flow control is off). */
static void rig_first_message(struct rig *r)
{
	struct pubd_group *ga = r->ga;
	uint64_t dl = hd_deadline(DEADLINE_MS);

	r->pub.end = 1;
	while (!hd_past(dl) && (!ga->sent_seq || (ga->cfg->repair.flow_control && (!ga->fcs || !ga->fcs->n))))
		rig_round(r, true);
	assert_int_equal(ga->sent_seq, 1);
	r->pub.end = N;
}

/* Both daemons, the clients, and the first message through. */
static void rig_ready(struct rig *r, struct hd *a, struct hd *b, const char *flow, unsigned timeout_ms)
{
	rig_start(r, a, b, flow, timeout_ms);
	rig_first_message(r);
}

/* Run until the subscriber has every message, reading every READ_EVERY
 * rounds; returns the messages it got. */
static uint64_t run_slow_reader(struct rig *r)
{
	uint64_t dl = hd_deadline(DEADLINE_MS), round = 0;
	struct pubd_group *ga = r->ga, *gb = r->gb;

	while (!hd_past(dl) && r->v.delivered + pubd_drops_msg_total(&gb->sub_drops) < N) {
		rig_round(r, true);
		if (++round % READ_EVERY == 0)
			take_in_order(&r->sub, &r->v);
	}
	take_in_order(&r->sub, &r->v);
	/* What b sent in the last round, a takes before it is counted. */
	pubd_fake_transfer(r->b->fk, r->a->fk, NULL, NULL);
	hd_settle(r->a, 10);
	print_message("delivered %llu, overflowed %llu, a waited %llu times, STATUS sent %llu, taken %llu\n",
		      (unsigned long long)r->v.delivered,
		      (unsigned long long)gb->sub_drops.by_reason[PUB_DROP_SUB_OVERFLOW],
		      (unsigned long long)ga->flow_waits, (unsigned long long)gb->statuses_sent,
		      (unsigned long long)ga->statuses_received);
	return r->v.delivered;
}

static void rig_stop(struct rig *r)
{
	hc_close(&r->pub.c);
	hc_close(&r->sub);
	hd_stop(r->a);
	if (r->b->up)
		hd_stop(r->b);
}

static void a_slow_subscriber_gets_everything(void **state)
{
	static struct hd a, b;
	static struct rig r;
	struct pubd_group *ga, *gb;

	(void)state;
	rig_ready(&r, &a, &b, "min", 5000);
	ga = r.ga;
	gb = r.gb;
	assert_int_equal(run_slow_reader(&r), N);
	assert_int_equal(pubd_drops_msg_total(&gb->sub_drops), 0);
	assert_int_equal(pubd_drops_msg_total(&gb->drops), 0);
	assert_true(ga->flow_waits > 0);
	assert_true(gb->statuses_sent > 0);
	/* All taken but those sent before b had its address's cookie (the
	 * first; a answered it with a COOKIE). */
	assert_int_equal(ga->statuses_received + ga->statuses_ignored, gb->statuses_sent);
	assert_true(ga->statuses_ignored <= 1);
	assert_int_equal(ga->cookies_sent, ga->statuses_ignored);
	assert_non_null(ga->fcs);
	assert_int_equal(ga->fcs->n, 1);
	assert_int_equal(ga->fcs->stuck, 0);
	rig_stop(&r);
}

/* The same run without flow control: the queue overflows. */
static void without_flow_control_it_overflows(void **state)
{
	static struct hd a, b;
	static struct rig r;
	struct pubd_group *ga, *gb;

	(void)state;
	rig_ready(&r, &a, &b, "none", 5000);
	ga = r.ga;
	gb = r.gb;
	assert_true(run_slow_reader(&r) < N);
	assert_true(gb->sub_drops.by_reason[PUB_DROP_SUB_OVERFLOW] > 0);
	assert_int_equal(ga->flow_waits, 0);
	assert_int_equal(gb->statuses_sent, 0);
	assert_null(ga->fcs);
	rig_stop(&r);
}

/* b's subscriber leaves: b has nothing to hold a back for and says so
 * (no limit); then a new slow subscriber joins, b says it has less room
 * than before, a takes it (the latest STATUS stands), and the new
 * subscriber gets everything. */
static void a_subscriber_joining_brings_the_limit_back(void **state)
{
	static struct hd a, b;
	static struct rig r;
	struct pubd_group *ga, *gb;
	uint64_t dl;

	(void)state;
	rig_ready(&r, &a, &b, "min", 5000);
	ga = r.ga;
	gb = r.gb;
	r.pub.end = 1; /* nothing more until the new subscriber is there */
	take_in_order(&r.sub, &r.v);
	assert_int_equal(r.v.delivered, 1);
	hc_close(&r.sub);
	/* b's keepalives now say "no limit" */
	dl = hd_deadline(DEADLINE_MS);
	while (!hd_past(dl) && ga->fcs->limit < UINT32_MAX)
		rig_round(&r, true);
	assert_true(ga->fcs->limit >= UINT32_MAX);
	assert_int_equal(hc_connect(&b, &r.sub, 4096), 0);
	assert_int_equal(hc_hello(&r.sub, "sub2"), 0);
	assert_int_equal(hc_group_req(&r.sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	while (!hd_past(dl) && ga->fcs->limit >= UINT32_MAX)
		rig_round(&r, true);
	assert_int_equal(ga->fcs->limit, 1 + QUEUE); /* one past message 0, plus the new queue's room */
	/* The rest of the stream, to the new subscriber, slowly. */
	r.v = (struct inorder){.got = r.got, .n = N};
	memset(r.got, 0, sizeof(r.got));
	r.got[0] = 1;
	r.v.delivered = 1;
	r.pub.end = N;
	assert_int_equal(run_slow_reader(&r), N);
	assert_int_equal(pubd_drops_msg_total(&gb->sub_drops), 0);
	assert_true(ga->flow_waits > 0);
	rig_stop(&r);
}

/* A subscriber that never reads holds a back for the timeout, then no more:
 * a sends everything and b counts what overflowed. */
static void a_stuck_subscriber_stops_holding_back(void **state)
{
	static struct hd a, b;
	static struct rig r;
	struct pubd_group *ga, *gb;
	uint64_t dl, t0, stalled_ms;

	(void)state;
	rig_ready(&r, &a, &b, "min", 200);
	ga = r.ga;
	gb = r.gb;
	t0 = hd_deadline(0);
	dl = hd_deadline(DEADLINE_MS);
	while (!hd_past(dl) && (r.pub.next < N || ga->txq_head || gb->received < N))
		rig_round(&r, true);
	stalled_ms = (hd_deadline(0) - t0) / 1000000;
	print_message("all sent after %llu ms; a waited %llu times; b overflowed %llu\n",
		      (unsigned long long)stalled_ms, (unsigned long long)ga->flow_waits,
		      (unsigned long long)gb->sub_drops.by_reason[PUB_DROP_SUB_OVERFLOW]);
	assert_int_equal(gb->received, N);
	assert_true(ga->flow_waits > 0);
	assert_true(stalled_ms >= 200);
	assert_true(gb->subs[0]->fc_stuck);
	assert_true(gb->sub_drops.by_reason[PUB_DROP_SUB_OVERFLOW] > 0);
	rig_stop(&r);
}

/* b stops: a is held back until b's silence passes the timeout. */
static void a_silent_receiver_is_forgotten(void **state)
{
	static struct hd a, b;
	static struct rig r;
	struct pubd_group *ga;
	uint64_t dl;

	(void)state;
	rig_ready(&r, &a, &b, "min", 100);
	ga = r.ga;
	/* The subscriber never reads: a is soon held back. */
	dl = hd_deadline(DEADLINE_MS);
	while (!hd_past(dl) && !ga->fc_blocked)
		rig_round(&r, true);
	assert_true(ga->fc_blocked);
	assert_int_equal(ga->fcs->n, 1);
	hc_close(&r.sub);
	hd_stop(&b);
	while (!hd_past(dl) && (r.pub.next < N || ga->txq_head))
		rig_round(&r, false);
	assert_null(ga->txq_head);
	assert_int_equal(ga->fcs->n, 0);
	assert_int_equal(ga->fcs->timed_out, 1);
	hc_close(&r.pub.c);
	hd_stop(&a);
}

/* A STATUS of window 0 from peer to a, number serial, from receiver id
 * (with the group's token and peer's cookie). */
static void status_to(struct hd *a, uint64_t peer, uint64_t id, uint64_t first, uint32_t serial)
{
	struct pubd_group *ga = hd_group(a, "r");
	struct pubd_ctl c = {.type = PUBD_CTL_STATUS,
			     .stream = a->d.source_id,
			     .first_seq = first,
			     .token = ga->repair_token,
			     .frag_first = serial,
			     .cookie = engine_repair_cookie(&a->d, &peer, sizeof(peer))};
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_CONTROL, .group_id = ga->id, .source_id = id};
	uint8_t dg[PUBD_WIRE_HDR_LEN + PUBD_CTL_MAX_LEN];
	size_t blen = pubd_ctl_encode(&c, dg + PUBD_WIRE_HDR_LEN, PUBD_CTL_MAX_LEN);

	h.msg_len = (uint32_t)blen;
	pubd_wire_encode(&h, dg);
	pubd_fake_inject_from(a->fk, -1, dg, (uint32_t)(PUBD_WIRE_HDR_LEN + blen), peer);
}

/*
 * A host that hears the group (so has the token) and says "full" forever,
 * as a receiver of its own invention: it holds a back for two
 * receiver_timeout_ms (100 ms here) at most, then is not waited for, and
 * its host not either for a while, whatever receiver id it says next. Before,
 * it froze a's sending for as long as it went on (9 s and more in the
 * audit). b, a real receiver that keeps up, is waited for all along.
 */
static void a_receiver_full_forever_is_not_waited_for(void **state)
{
	static struct hd a, b;
	static struct rig r;
	struct pubd_group *ga;
	const uint64_t forger = 0x99;
	uint64_t dl, t0, sent, serial = 1, held_ms;

	(void)state;
	rig_ready(&r, &a, &b, "min", 100);
	ga = r.ga;
	r.pub.end = N;
	sent = ga->sent_seq;
	t0 = pubd_now_ns();
	dl = hd_deadline(DEADLINE_MS);
	/* Window 0 at where a is now, every round (a keepalive to spare). */
	while (!hd_past(dl) && !ga->fcs->stuck) {
		status_to(&a, forger, 0xf0f0, sent, (uint32_t)serial++);
		rig_round(&r, true);
		take_in_order(&r.sub, &r.v);
	}
	held_ms = (pubd_now_ns() - t0) / 1000000;
	print_message("held back %llu ms by the forger; a waited %llu times\n", (unsigned long long)held_ms,
		      (unsigned long long)ga->flow_waits);
	assert_int_equal(ga->fcs->stuck, 1);
	assert_true(held_ms >= 200);
	/* Its host is refused now, under any receiver id: a sends on. */
	dl = hd_deadline(DEADLINE_MS);
	while (!hd_past(dl) && r.v.delivered < N) {
		status_to(&a, forger, 0xf0f0 + serial, ga->sent_seq, (uint32_t)serial);
		serial++;
		rig_round(&r, true);
		take_in_order(&r.sub, &r.v);
	}
	assert_int_equal(r.v.delivered, N);
	assert_int_equal(ga->fcs->n, 1); /* b */
	assert_true(ga->fcs->penalized > 0);
	assert_int_equal(pubd_drops_msg_total(&r.gb->sub_drops), 0);
	rig_stop(&r);
}

/* A STATUS of window 0 from a host without the token is ignored; the same
 * with the token holds a back. */
static void a_status_needs_the_token(void **state)
{
	static struct hd a, b;
	static struct rig r;
	struct pubd_group *ga;
	struct pubd_ctl c = {.type = PUBD_CTL_STATUS, .count = 0, .first_seq = 0};
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_CONTROL, .source_id = 0x4242};
	uint8_t dg[PUBD_WIRE_HDR_LEN + PUBD_CTL_MAX_LEN];
	size_t blen;
	uint64_t dl;

	(void)state;
	rig_start(&r, &a, &b, "min", 5000);
	ga = r.ga;
	/* a sends one message, so its window (and token) exist */
	r.pub.end = 1;
	dl = hd_deadline(DEADLINE_MS);
	while (!hd_past(dl) && !ga->fcs) {
		publish_some(&r.pub);
		hd_turn(&a, 1);
	}
	assert_non_null(ga->fcs);
	c.stream = a.d.source_id;
	h.group_id = ga->id;
	c.token = ga->repair_token ^ 1;
	blen = pubd_ctl_encode(&c, dg + PUBD_WIRE_HDR_LEN, PUBD_CTL_MAX_LEN);
	h.msg_len = (uint32_t)blen;
	pubd_wire_encode(&h, dg);
	pubd_fake_inject_from(a.fk, -1, dg, (uint32_t)(PUBD_WIRE_HDR_LEN + blen), 0x77);
	hd_turn(&a, 0);
	assert_int_equal(ga->statuses_ignored, 1);
	assert_int_equal(ga->fcs->n, 0);
	c.token = ga->repair_token;
	c.first_seq = ga->sent_seq;
	c.cookie = engine_repair_cookie(&a.d, &(uint64_t){0x77}, sizeof(uint64_t));
	blen = pubd_ctl_encode(&c, dg + PUBD_WIRE_HDR_LEN, PUBD_CTL_MAX_LEN);
	h.msg_len = (uint32_t)blen;
	pubd_wire_encode(&h, dg);
	pubd_fake_inject_from(a.fk, -1, dg, (uint32_t)(PUBD_WIRE_HDR_LEN + blen), 0x77);
	hd_turn(&a, 0);
	assert_int_equal(ga->statuses_received, 1);
	assert_int_equal(ga->fcs->n, 1);
	assert_false(pubd_fc_source_allows(ga->fcs, ga->sent_seq));
	rig_stop(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(a_slow_subscriber_gets_everything, hd_teardown),
		cmocka_unit_test_teardown(without_flow_control_it_overflows, hd_teardown),
		cmocka_unit_test_teardown(a_subscriber_joining_brings_the_limit_back, hd_teardown),
		cmocka_unit_test_teardown(a_stuck_subscriber_stops_holding_back, hd_teardown),
		cmocka_unit_test_teardown(a_silent_receiver_is_forgotten, hd_teardown),
		cmocka_unit_test_teardown(a_receiver_full_forever_is_not_waited_for, hd_teardown),
		cmocka_unit_test_teardown(a_status_needs_the_token, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
