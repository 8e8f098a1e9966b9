/* SPDX-License-Identifier: MIT */
/*
 * The IPC server with hostile or unlucky clients, on the fake fabric:
 * an ACL reload that removes a live subscriber (issue 10, defect 10), an
 * UNSUBSCRIBE while a large DELIVER is half written (defect 3), PUBLISH
 * before HELLO (defect 4), and a publisher paused by back-pressure that
 * closes (defect 6).
 */
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "proto.h"
#include "server_internal.h" /* white-box: a client's queue and socket */
#include "test_daemon_harness.h"

#define GROUPS_ANY                  \
	"groups:\n"                 \
	"  - name: g1\n"            \
	"    address: 239.78.0.1\n" \
	"  - name: g2\n"            \
	"    address: 239.78.0.2\n"
/* g1's subscribers narrowed to a uid the test does not run as. */
#define GROUPS_NARROW                  \
	"groups:\n"                    \
	"  - name: g1\n"               \
	"    address: 239.78.0.1\n"    \
	"    subscribe: [uid:54321]\n" \
	"  - name: g2\n"               \
	"    address: 239.78.0.2\n"

static uint64_t all_msg_drops(struct pubd *d)
{
	return d->counters[PUBD_CTR_MSG_DROPPED];
}

/* The next frame that is not a DELIVER; DELIVERs before it are counted. */
static int next_reply(struct hc *c, uint8_t *type, const uint8_t **body, uint32_t *len, uint64_t *delivers,
		      int deadline_ms)
{
	int r;

	while ((r = hc_next(c, type, body, len, deadline_ms)) == 1 && *type == PUB_FRAME_DELIVER) {
		if (delivers)
			++*delivers;
		hc_pop(c);
	}
	return r;
}

/* Defect 10: a reload that takes a subscriber out of a group's subscribe
 * ACL ends its subscription, with a reason it can read; it receives nothing
 * published after. */
static void test_acl_reload_ends_subscriber(void **state)
{
	uint8_t frame[256], type;
	const uint8_t *body;
	uint32_t len;
	struct pub_msg_error e;
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc sub, pub;
	struct pubd_group *g;
	uint64_t delivers = 0;
	size_t n;
	int r;

	(void)state;
	assert_int_equal(hd_start(&a, NULL, GROUPS_ANY), 0);
	assert_int_equal(hc_connect(&a, &sub, 0), 0);
	assert_int_equal(hc_hello(&sub, "sub"), 0);
	assert_int_equal(hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, "g1", NULL), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	g = hd_group(&a, "g1");
	assert_int_equal(g->nsubs, 1);

	assert_int_equal(hd_reload(&a, NULL, GROUPS_NARROW), 0);
	n = hc_enc_publish(frame, sizeof(frame), "g1", "after", 5);
	assert_int_equal(hc_write(&pub, frame, n, 2000), 0);
	hd_settle(&a, 50);
	r = next_reply(&sub, &type, &body, &len, &delivers, 1000);
	print_message("after the reload: %u subscribers left, %llu delivered to the removed one, reply %s\n", g->nsubs,
		      (unsigned long long)delivers, r == 1 ? "yes" : "none");
	assert_int_equal(g->nsubs, 0);
	assert_int_equal(delivers, 0);
	assert_int_equal(r, 1);
	assert_int_equal(type, PUB_FRAME_ERROR);
	assert_int_equal(pub_proto_dec_error(body, len, &e), 0);
	assert_int_equal(e.code, PUB_ERR_ACL);
	hc_close(&sub);
	hc_close(&pub);
	hd_stop(&a);
}

#define BIG_DELIVER (1u << 20)

/* A subscriber of g1 with a DELIVER of BIG_DELIVER bytes half written to
 * it (pubd's send buffer made small), that then sent UNSUBSCRIBE for g1
 * without reading: pubd's end of its connection. */
static struct pubd_client *half_written_unsubscribed(struct hd *a, struct hc *sub, struct hc *pub)
{
	uint8_t *frame = malloc(BIG_DELIVER + 512), q[64];
	struct pubd_client *dc;
	int sndbuf = 4096;
	size_t n;
	long qn;

	assert_non_null(frame);
	assert_int_equal(hd_start(a, NULL, GROUPS_ANY), 0);
	assert_int_equal(hc_connect(a, sub, 4096), 0);
	/* The daemon's end of the newest connection: make its send buffer
	 * small so the DELIVER stays half written while the client waits. */
	dc = a->d.ipc.clients;
	assert_int_equal(setsockopt(dc->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	assert_int_equal(hc_hello(sub, "sub"), 0);
	assert_int_equal(hc_group_req(sub, PUB_FRAME_SUBSCRIBE, "g1", NULL), 0);
	assert_int_equal(hc_connect(a, pub, 0), 0);
	assert_int_equal(hc_hello(pub, "pub"), 0);

	memset(frame + 300, 0xab, BIG_DELIVER);
	n = hc_enc_publish(frame, BIG_DELIVER + 512, "g1", frame + 300, BIG_DELIVER);
	assert_int_equal(hc_write(pub, frame, n, 5000), 0);
	free(frame);
	hd_settle(a, 100);
	assert_non_null(dc->out_head);
	assert_true(dc->out_head->written > 0); /* half written */

	/* UNSUBSCRIBE, not reading yet. */
	qn = pub_proto_enc_group_req(q, sizeof(q), PUB_FRAME_UNSUBSCRIBE, 77, "g1", 2);
	assert_int_equal(hc_write(sub, q, (size_t)qn, 2000), 0);
	hd_settle(a, 50);
	assert_int_equal(hd_group(a, "g1")->nsubs, 0);
	return dc;
}

/* Reads what sub has: the half-written DELIVER, then the UNSUBSCRIBE's OK. */
static void read_deliver_then_ok(struct hc *sub)
{
	struct pub_msg_ok ok;
	const uint8_t *body;
	uint64_t delivers = 0;
	uint32_t len;
	uint8_t type;

	assert_int_equal(next_reply(sub, &type, &body, &len, &delivers, 5000), 1);
	assert_int_equal(type, PUB_FRAME_OK);
	assert_int_equal(pub_proto_dec_ok(body, len, &ok), 0);
	assert_int_equal(ok.req_id, 77);
	hc_pop(sub);
	assert_int_equal(delivers, 1);
}

/* Defect 3: UNSUBSCRIBE while a large DELIVER to the client is half
 * written; the client then reads everything and its later requests are
 * answered. The DELIVER counts as delivered in its group as well as in
 * the daemon (the group's published = delivered held: it did not). */
static void test_unsubscribe_mid_deliver(void **state)
{
	uint8_t q[64], type;
	const uint8_t *body;
	uint32_t len;
	struct pub_msg_ok ok;
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc sub, pub;
	struct pubd_group *g;
	unsigned i;
	long qn;
	int r;

	(void)state;
	half_written_unsubscribed(&a, &sub, &pub);
	/* Now read: the DELIVER finishes, then OK for the UNSUBSCRIBE. */
	read_deliver_then_ok(&sub);
	g = hd_group(&a, "g1");
	print_message("group g1: published %llu, delivered %llu (%llu bytes); daemon delivered %llu\n",
		      (unsigned long long)g->published, (unsigned long long)g->delivered,
		      (unsigned long long)g->delivered_bytes, (unsigned long long)a.d.counters[PUBD_CTR_MSG_DELIVERED]);
	assert_int_equal(g->delivered, 1);
	assert_int_equal(g->delivered_bytes, BIG_DELIVER);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DELIVERED], 1);
	/* Later requests are still answered, each of them. */
	for (i = 0; i < 3; i++) {
		qn = pub_proto_enc_query(q, sizeof(q), 78 + i, PUB_QUERY_GROUPS, NULL, 0);
		assert_int_equal(hc_write(&sub, q, (size_t)qn, 2000), 0);
		while ((r = next_reply(&sub, &type, &body, &len, NULL, 3000)) == 1 && type == PUB_FRAME_TABLE)
			hc_pop(&sub);
		print_message("request %u after the half-written DELIVER: %s\n", i + 1,
			      r == 1 ? "answered" : "never answered");
		assert_int_equal(r, 1);
		assert_int_equal(type, PUB_FRAME_OK);
		assert_int_equal(pub_proto_dec_ok(body, len, &ok), 0);
		assert_int_equal(ok.req_id, 78 + i);
		hc_pop(&sub);
	}
	hc_close(&sub);
	hc_close(&pub);
	hd_stop(&a);
}

/* The same half-written DELIVER, and the client leaves without reading
 * it: a sub_disconnect drop in its group's subscriber scope (the drops
 * table's group-subscribers row), which outlives the client's own row. */
static void test_unsubscribe_mid_deliver_then_leave(void **state)
{
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc sub, pub;
	struct pubd_group *g;

	(void)state;
	half_written_unsubscribed(&a, &sub, &pub);
	hc_close(&sub);
	hd_settle(&a, 100);
	g = hd_group(&a, "g1");
	print_message("group g1: delivered %llu, sub_disconnect %llu; daemon dropped %llu\n",
		      (unsigned long long)g->delivered,
		      (unsigned long long)g->sub_drops.by_reason[PUB_DROP_SUB_DISCONNECT],
		      (unsigned long long)all_msg_drops(&a.d));
	assert_int_equal(a.d.ipc.nclients, 1);
	assert_int_equal(g->delivered, 0);
	assert_int_equal(g->sub_drops.by_reason[PUB_DROP_SUB_DISCONNECT], 1);
	assert_int_equal(all_msg_drops(&a.d), 1);
	hc_close(&pub);
	hd_stop(&a);
}

/* The same, and a reload removes g1 before the client reads: the DELIVER
 * still finishes, counted in the daemon scope (g1's counters are gone;
 * ASan: nothing refers to g1 after). */
static void test_unsubscribe_mid_deliver_group_removed(void **state)
{
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc sub, pub;

	(void)state;
	half_written_unsubscribed(&a, &sub, &pub);
	assert_int_equal(hd_reload(&a, NULL,
				   "groups:\n"
				   "  - name: g2\n"
				   "    address: 239.78.0.2\n"),
			 0);
	assert_null(hd_group(&a, "g1"));
	read_deliver_then_ok(&sub);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_DELIVERED], 1);
	assert_int_equal(all_msg_drops(&a.d), 0);
	hc_close(&sub);
	hc_close(&pub);
	hd_stop(&a);
}

/* Defect 4: PUBLISH before HELLO is refused at its header: the client is
 * told and disconnected, and nothing near the declared size is held. */
static void test_publish_before_hello(void **state)
{
	const size_t declared = 8u << 20;
	uint8_t frame[512], type;
	const uint8_t *body;
	uint32_t len;
	struct pub_msg_error e;
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc c[8];
	unsigned i, closed = 0, refused = 0;
	long n;
	int r;
#if !defined(__SANITIZE_ADDRESS__)
	struct mallinfo2 before, after;
#endif

	(void)state;
	assert_int_equal(hd_start(&a, NULL, GROUPS_ANY), 0);
#if !defined(__SANITIZE_ADDRESS__)
	before = mallinfo2();
#endif
	for (i = 0; i < 8; i++) {
		assert_int_equal(hc_connect(&a, &c[i], 0), 0);
		n = pub_proto_enc_publish_head(frame, sizeof(frame), 1, "g1", 2, declared);
		assert_true(n > 0);
		memset(frame + n, 'p', 100);
		assert_int_equal(hc_write(&c[i], frame, (size_t)n + 100, 2000), 0);
	}
	hd_settle(&a, 100);
#if !defined(__SANITIZE_ADDRESS__)
	after = mallinfo2();
	print_message("8 PUBLISH of %zu bytes before HELLO: heap grew by %zu bytes\n", declared,
		      (after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd));
	assert_true((after.uordblks + after.hblkhd) < (before.uordblks + before.hblkhd) + declared);
#endif
	for (i = 0; i < 8; i++) {
		r = hc_next(&c[i], &type, &body, &len, 2000);
		if (r == 1 && type == PUB_FRAME_ERROR && pub_proto_dec_error(body, len, &e) == 0)
			refused++;
		if (r == 1)
			hc_pop(&c[i]);
		if (hc_next(&c[i], &type, &body, &len, 3000) < 0)
			closed++;
		hc_close(&c[i]);
	}
	print_message("refused %u of 8, disconnected %u of 8\n", refused, closed);
	assert_int_equal(refused, 8);
	assert_int_equal(closed, 8);
	assert_int_equal(a.d.counters[PUBD_CTR_MSG_PUBLISHED], 0);
	hd_stop(&a);
}

/* Defect 6: a publisher paused by back-pressure (the fabric out of credits)
 * that then closes: every message it wrote whole is published or counted
 * dropped with a reason. */
static void test_paused_publisher_closes(void **state)
{
	uint8_t frame[1700];
	static struct hd a; /* static: the teardown stops it if an assert ends the test */
	struct hc pub;
	uint64_t whole = 0, dl, published, dropped;
	size_t n, off = 0;
	bool paused = false;
	long w;

	(void)state;
	memset(frame, 'm', sizeof(frame));
	assert_int_equal(hd_start(&a, NULL, GROUPS_ANY), 0);
	assert_int_equal(hc_connect(&a, &pub, 0), 0);
	assert_int_equal(hc_hello(&pub, "pub"), 0);
	pubd_fake_set_credits(a.fk, 0);
	n = hc_enc_publish(frame, sizeof(frame), "g1", frame + 600, 1000);
	dl = hd_deadline(10000);
	/* Write whole frames until the daemon stops reading and the socket is full. */
	while (!hd_past(dl)) {
		w = hc_try_write(&pub, frame + off, n - off);
		assert_true(w >= 0);
		off += (size_t)w;
		if (off == n) {
			whole++;
			off = 0;
			continue;
		}
		hd_turn(&a, 1);
		paused |= a.d.ipc.npaused > 0;
		if (paused && w == 0)
			break;
	}
	assert_true(paused);
	/* Closes, as after pub_flush() returned. */
	hc_close(&pub);
	dl = hd_deadline(10000);
	while (!hd_past(dl)) {
		hd_turn(&a, 1);
		pubd_fake_add_credits(a.fk, 100);
		if (a.d.ipc.nclients == 0 && a.d.tx.queued_msgs == 0 && hd_turn(&a, 5) == 0)
			break;
	}
	published = a.d.counters[PUBD_CTR_MSG_PUBLISHED];
	dropped = all_msg_drops(&a.d);
	print_message("written whole %llu, published %llu, dropped %llu, unaccounted %lld\n", (unsigned long long)whole,
		      (unsigned long long)published, (unsigned long long)dropped,
		      (long long)(whole - published - dropped));
	assert_int_equal(published + dropped, whole);
	hd_stop(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_acl_reload_ends_subscriber, hd_teardown),
		cmocka_unit_test_teardown(test_unsubscribe_mid_deliver, hd_teardown),
		cmocka_unit_test_teardown(test_unsubscribe_mid_deliver_then_leave, hd_teardown),
		cmocka_unit_test_teardown(test_unsubscribe_mid_deliver_group_removed, hd_teardown),
		cmocka_unit_test_teardown(test_publish_before_hello, hd_teardown),
		cmocka_unit_test_teardown(test_paused_publisher_closes, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
