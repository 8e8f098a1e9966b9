/* SPDX-License-Identifier: MIT */
/*
 * Lent messages (a client's publish-log records, msgbuf.h) on their way to
 * the fabric, through the daemon on the fake fabric: the transmit queue
 * pins a lent message while it waits for send credits, up to its lender's
 * tx_hold_max bytes, so it cannot be copied away and goes out from its
 * record; past the bound it holds a plain reference and may be copied as
 * before. A fabric sending in place (the fake's pin_lent) keeps its own
 * pin until the send completes, and the lender hears of each loan once.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "msgbuf.h"
#include "test_daemon_harness.h"
#include "tx.h"

#define LEN 3000u

struct lender {
	struct pubd_msgbuf_lender l;
	struct pubd_mem_region region;
	unsigned returned;
	uint8_t bytes[8][LEN];
};

static void on_returned(struct pubd_msgbuf_lender *l, uint32_t cookie)
{
	(void)cookie;
	((struct lender *)l)->returned++;
}

static void test_queue_pins_up_to_the_lenders_bound(void **state)
{
	static struct hd h;
	static struct lender ln;
	struct pubd_msgbuf *m[4];
	struct pubd_group *g;
	const struct pubd_tx_item *it;
	uint64_t dl;
	unsigned i;

	(void)state;
	assert_int_equal(hd_start(&h, NULL, "groups:\n  - {name: t, address: 239.79.9.1}\n"), 0);
	g = hd_group(&h, "t");
	memset(&ln, 0, sizeof(ln));
	ln.l.returned = on_returned;
	ln.l.region = &ln.region;
	ln.region.base = &ln.bytes[0][0];
	ln.region.len = sizeof(ln.bytes);
	ln.l.tx_hold_max = 2 * LEN; /* two of the four */
	pubd_fake_set_pin_lent(h.fk, true);
	pubd_fake_set_credits(h.fk, 0); /* they wait in the queue */
	for (i = 0; i < 4; i++) {
		memset(ln.bytes[i], 'a' + (int)i, LEN);
		m[i] = pubd_msgbuf_lend(&ln.l, i, ln.bytes[i], LEN);
		assert_non_null(m[i]);
		pubd_publish(&h.d, NULL, g, m[i]);
		pubd_msgbuf_put(m[i]); /* the queue's reference is left */
	}
	pubd_tx_pump(&h.d);
	assert_int_equal(g->txq_len, 4);
	for (i = 0, it = g->txq_head; it; it = it->next, i++)
		assert_int_equal(it->pinned, i < 2);
	assert_int_equal(ln.l.tx_held, 2 * LEN);
	/* the turn's end: what the queue pinned stays in its record */
	assert_int_equal(pubd_msgbuf_detach(m[0]), -EBUSY);
	assert_int_equal(pubd_msgbuf_detach(m[1]), -EBUSY);
	assert_int_equal(pubd_msgbuf_detach(m[2]), 0);
	assert_true(pubd_msgbuf_is_lent(m[0]) && !pubd_msgbuf_is_lent(m[2]));
	memset(ln.bytes[2], 'X', LEN); /* the writer reuses a copied record */
	pubd_fake_set_credits(h.fk, -1);
	dl = hd_deadline(5000);
	while (!hd_past(dl) && g->txq_head)
		hd_turn(&h, 1);
	assert_null(g->txq_head);
	assert_int_equal(ln.l.tx_held, 0);
	/* The fake sent m[0], m[1] and m[3] from their records, every
	 * fragment, and m[2] from the copy; until it completes them, m[0],
	 * m[1] and m[3] are not returned. */
	assert_int_equal(pubd_fake_pinned(h.fk), 3 * ((LEN + (h.d.mtu - 48) - 1) / (h.d.mtu - 48)));
	assert_int_equal(ln.returned, 0);
	pubd_fake_complete(h.fk, pubd_fake_pinned(h.fk));
	assert_int_equal(ln.returned, 3);
	assert_int_equal(pubd_fake_pin_broken(h.fk), 0);
	hd_stop(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_queue_pins_up_to_the_lenders_bound, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
