/* SPDX-License-Identifier: MIT */
/*
 * A received message pubd has no memory to keep for a subscriber that
 * needs a copy (a socket client's queue) is counted as dropped for it,
 * everywhere the server counts a subscriber's drops: the subscription, the
 * group's subscribers, the dropped counter. malloc is wrapped (the link's
 * --wrap=malloc) to fail the one size a small message's buffer has, on the
 * fake fabric, on both kinds of group (with pubd's header, and raw).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "msgbuf.h"
#include "proto.h"
#include "test_daemon_harness.h"
#include "wire.h"

#define GROUPS                      \
	"groups:\n"                 \
	"  - name: g1\n"            \
	"    address: 239.77.0.1\n" \
	"  - name: r1\n"            \
	"    address: 239.77.0.2\n" \
	"    raw: true\n"

void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);

/* The size of a buffer of the smallest class (256 bytes), while set. */
static size_t fail_size;

void *__wrap_malloc(size_t n)
{
	if (fail_size && n == fail_size)
		return NULL;
	return __real_malloc(n);
}

/* Deliveries to sub within ms: how many, and the last one's seq. */
static unsigned delivered(struct hc *sub, int ms, uint64_t *last_seq)
{
	struct pub_msg_deliver m;
	const uint8_t *body;
	unsigned n = 0;
	uint32_t len;
	uint8_t type;

	while (hc_next(sub, &type, &body, &len, ms) == 1) {
		if (type == PUB_FRAME_DELIVER) {
			assert_int_equal(pub_proto_dec_deliver(body, len, &m), 0);
			*last_seq = m.seq;
			n++;
		}
		hc_pop(sub);
		ms = 100;
	}
	return n;
}

static void inject(struct hd *a, struct pubd_group *g, uint64_t seq)
{
	uint8_t dg[PUBD_WIRE_HDR_LEN + 16];
	struct pubd_wire_hdr w = {.version = PUBD_WIRE_VERSION,
				  .source_id = 0x6e6f6d656d,
				  .group_id = g->id,
				  .msg_seq = seq,
				  .msg_len = 16,
				  .frag_count = 1};

	memset(dg, 'n', sizeof(dg));
	if (g->raw) {
		pubd_fake_inject(a->fk, g->slot, dg, 16, false);
		return;
	}
	pubd_wire_encode(&w, dg);
	pubd_fake_inject(a->fk, g->slot, dg, sizeof(dg), false);
}

static void no_memory_for_one(const char *group)
{
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct pubd_group *g;
	struct hc sub;
	uint64_t dropped, seq = UINT64_MAX;

	assert_int_equal(hd_start(&a, NULL, GROUPS), 0);
	g = hd_group(&a, group);
	assert_int_equal(hc_connect(&a, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, group, NULL), 0);
	hd_settle(&a, 20);
	assert_int_equal(g->nsubs, 1);
	dropped = a.d.counters[PUBD_CTR_MSG_DROPPED];

	/* No buffer to be had: none cached, and malloc refuses the size. */
	pubd_msgbuf_cache_drain();
	fail_size = sizeof(struct pubd_msgbuf) + 256;
	inject(&a, g, 0);
	hd_settle(&a, 20);
	fail_size = 0;
	assert_int_equal(g->received, 1);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DROPPED] - dropped, 1);
	assert_int_equal(pubd_drops_msg_total(&g->sub_drops), 1);
	assert_int_equal(g->sub_drops.by_reason[PUB_DROP_SUB_OVERFLOW], 1);
	assert_int_equal(g->subs[0]->drops.by_reason[PUB_DROP_SUB_OVERFLOW], 1);
	assert_int_equal(g->delivered, 0);

	/* With memory again the next one is delivered. */
	inject(&a, g, 1);
	assert_int_equal(delivered(&sub, 2000, &seq), 1);
	assert_int_equal(seq, 1);
	assert_int_equal(g->delivered, 1);
	hc_close(&sub);
	hd_stop(&a);
}

static void test_no_memory_for_a_received_message_is_counted(void **state)
{
	(void)state;
	no_memory_for_one("g1");
}

static void test_no_memory_for_a_raw_datagram_is_counted(void **state)
{
	(void)state;
	no_memory_for_one("r1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_memory_for_a_received_message_is_counted),
		cmocka_unit_test(test_no_memory_for_a_raw_datagram_is_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
