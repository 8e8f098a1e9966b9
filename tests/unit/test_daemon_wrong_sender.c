/* SPDX-License-Identifier: MIT */
/*
 * A host on the fabric that forges a live source's id, through the daemon
 * on the fake fabric: its datagrams come from another address than the
 * source's, and are discarded (rx_wrong_sender) while the source is still
 * heard, so a sequence number far ahead cannot cut the real stream off
 * (every real message after it would be stale). On plain and repair
 * groups. A source that moved is taken at its new address once the old
 * one has been silent; a repair sent unicast is let through from any
 * address, as it can only fill a message that was asked for.
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
#include "test_daemon_harness.h"
#include "wire.h"

#define SRC	 0x5eedull
#define REAL	 0x77ull /* the source's fabric address */
#define FORGER	 0x99ull /* another host's */
#define MSG_LEN	 100u
#define HB_MS	 10	/* a source is silent after 3 of these and 100 ms */
#define FAR_JUMP 60000u /* within what a stream may jump (malformed past 65,536) */

static const char *config(const char *repair)
{
	static char b[512];

	snprintf(b, sizeof(b),
		 "limits:\n  reassembly_timeout_ms: 60000\n"
		 "groups:\n"
		 "  - {name: r, address: 239.78.0.9, repair: %s}\n",
		 repair);
	return b;
}

static void start(struct hd *d, struct hc *sub, const char *repair)
{
	assert_int_equal(hd_start(d, NULL, config(repair)), 0);
	assert_int_equal(hc_connect(d, sub, 0), 0);
	assert_int_equal(hc_hello(sub, "sub"), 0);
	assert_int_equal(hc_group_req(sub, PUB_FRAME_SUBSCRIBE, "r", NULL), 0);
	hd_settle(d, 20);
	assert_true(hd_group(d, "r")->listening);
}

/* A datagram of SRC on r: message seq (or a heartbeat announcing seq as
 * the next), from the fabric address from, to the group's address (or to
 * the fabric port alone, flagged REPAIR). */
static void inject(struct hd *d, uint64_t seq, uint64_t from, uint8_t flags)
{
	struct pubd_group *g = hd_group(d, "r");
	struct pubd_wire_hdr h = {.flags = flags, .group_id = g->id, .source_id = SRC, .msg_seq = seq};
	uint8_t dg[PUBD_WIRE_HDR_LEN + MSG_LEN];
	uint32_t len = 0;

	if (!(flags & PUBD_WIRE_F_HEARTBEAT)) {
		h.msg_len = len = MSG_LEN;
		h.frag_count = 1;
	}
	pubd_wire_encode(&h, dg);
	memset(dg + PUBD_WIRE_HDR_LEN, (int)(seq & 0xff), len);
	pubd_fake_inject_from(d->fk, (flags & PUBD_WIRE_F_REPAIR) ? -1 : g->slot, dg, PUBD_WIRE_HDR_LEN + len, from);
}

static void inject_run(struct hd *d, uint64_t first, uint64_t n, uint64_t from)
{
	uint64_t s;

	for (s = first; s < first + n; s++)
		inject(d, s, from, 0);
}

/* Turn the daemon until the source last heard now counts as silent. */
static void wait_silent(struct hd *d)
{
	uint64_t dl = hd_deadline(3 * HB_MS + 100 + 50);

	while (!hd_past(dl))
		hd_turn(d, 5);
}

static uint64_t wrong_sender(struct hd *d)
{
	return d->d.counters[PUBD_CTR_RX_WRONG_SENDER];
}

/* The attack: while the source speaks, a heartbeat and a message far
 * ahead under its id from another host. Nothing of it is taken, and the
 * real stream goes on with nothing lost. */
static void forged_jump(const char *repair)
{
	static struct hd d;
	struct pubd_group *g;
	struct hc sub;

	start(&d, &sub, repair);
	g = hd_group(&d, "r");
	inject_run(&d, 0, 10, REAL);
	inject(&d, 10 + FAR_JUMP, FORGER, PUBD_WIRE_F_HEARTBEAT);
	inject(&d, 10 + FAR_JUMP, FORGER, 0);
	inject_run(&d, 10, 10, REAL);
	hd_settle(&d, 20);
	print_message("repair %s: received %llu, dropped %llu, rx_wrong_sender %llu\n", repair,
		      (unsigned long long)g->received, (unsigned long long)pubd_drops_msg_total(&g->drops),
		      (unsigned long long)wrong_sender(&d));
	assert_int_equal(wrong_sender(&d), 2);
	assert_int_equal(g->received, 20);
	assert_int_equal(g->delivered, 20);
	assert_int_equal(pubd_drops_msg_total(&g->drops), 0);
	assert_int_equal(g->drops.by_reason[PUB_DROP_STALE], 0);
	hc_close(&sub);
	hd_stop(&d);
}

static void test_forged_jump_is_discarded(void **state)
{
	(void)state;
	forged_jump("off");
}

static void test_forged_jump_is_discarded_on_repair_groups(void **state)
{
	(void)state;
	forged_jump("on");
}

/* A source that moved (a rebuilt QP, a reopened socket) is taken at its new
 * address once the old one is silent; then the old one is the stranger. */
static void test_moved_source_is_taken_once_silent(void **state)
{
	static struct hd d;
	struct pubd_group *g;
	struct hc sub;

	(void)state;
	start(&d, &sub, "off");
	g = hd_group(&d, "r");
	inject_run(&d, 0, 10, REAL);
	inject(&d, 10, FORGER, 0); /* too soon: the source is still heard */
	assert_int_equal(wrong_sender(&d), 1);
	wait_silent(&d);
	inject_run(&d, 10, 10, FORGER);
	inject(&d, 20, REAL, 0);
	hd_settle(&d, 20);
	assert_int_equal(wrong_sender(&d), 2);
	assert_int_equal(g->received, 20);
	assert_int_equal(pubd_drops_msg_total(&g->drops), 0);
	hc_close(&sub);
	hd_stop(&d);
}

/* On a repair group, a lost message NAKed: its repair sent to us alone is
 * taken from another address than the stream's multicast (a multi-homed
 * source's unicast may leave by another interface); a message of the
 * stream sent to the group from there is not. */
static void test_unicast_repair_from_elsewhere_is_taken(void **state)
{
	static struct hd d;
	struct pubd_group *g;
	struct hc sub;

	(void)state;
	start(&d, &sub, "on");
	g = hd_group(&d, "r");
	inject_run(&d, 0, 5, REAL);
	inject_run(&d, 6, 4, REAL); /* 5 is lost, and NAKed */
	hd_settle(&d, 20);
	assert_int_equal(g->received, 9);
	inject(&d, 10, FORGER, 0);
	inject(&d, 5, FORGER, PUBD_WIRE_F_REPAIR);
	hd_settle(&d, 20);
	assert_int_equal(wrong_sender(&d), 1);
	assert_int_equal(g->received, 10);
	assert_int_equal(g->delivered, 10);
	assert_int_equal(pubd_drops_msg_total(&g->drops), 0);
	hc_close(&sub);
	hd_stop(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_forged_jump_is_discarded, hd_teardown),
		cmocka_unit_test_teardown(test_forged_jump_is_discarded_on_repair_groups, hd_teardown),
		cmocka_unit_test_teardown(test_moved_source_is_taken_once_silent, hd_teardown),
		cmocka_unit_test_teardown(test_unicast_repair_from_elsewhere_is_taken, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
