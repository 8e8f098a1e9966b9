/* SPDX-License-Identifier: MIT */
/*
 * For test_daemon_* files (cmocka): a subscriber's view of one stream,
 * taken from its DELIVER frames and checked as it goes: every message
 * once, in ascending order, with the length and bytes the test publishes
 * (its msg_len(seq) and msg_byte(seq, i), defined before this header).
 */
#ifndef TEST_DAEMON_INORDER_H
#define TEST_DAEMON_INORDER_H

struct inorder {
	uint8_t *got; /* got[seq], n of them */
	uint64_t n, delivered, last;
};

/* Take what sub has queued: each a DELIVER of a new seq, later than the
 * last (in order), with its bytes whole. */
static void take_in_order(struct hc *sub, struct inorder *v)
{
	struct pub_msg_deliver m;
	const uint8_t *fb;
	uint32_t flen;
	uint8_t type;
	size_t i;

	while (hc_next(sub, &type, &fb, &flen, 0) == 1) {
		assert_int_equal(type, PUB_FRAME_DELIVER);
		assert_int_equal(pub_proto_dec_deliver(fb, flen, &m), 0);
		assert_true(m.seq < v->n && !v->got[m.seq]);
		assert_true(v->delivered == 0 || m.seq > v->last); /* in order */
		v->last = m.seq;
		assert_int_equal(m.payload_len, msg_len(m.seq));
		for (i = 0; i < m.payload_len; i++)
			assert_int_equal(m.payload[i], msg_byte(m.seq, i));
		v->got[m.seq] = 1;
		v->delivered++;
		hc_pop(sub);
	}
}

/* One round between two daemons on the fake fabric: b turns (its NAKs go
 * to a), a turns (its repairs and multicast go to b), then sub's take. */
static inline void exchange_in_order(struct hd *a, struct hd *b, struct hc *sub, struct inorder *v)
{
	hd_turn(b, 1);
	pubd_fake_transfer(b->fk, a->fk, NULL, NULL);
	hd_turn(a, 1);
	pubd_fake_transfer(a->fk, b->fk, NULL, NULL);
	take_in_order(sub, v);
}

#endif
