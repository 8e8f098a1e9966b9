/* SPDX-License-Identifier: MIT */
/*
 * A message pub_recv returned where it lies (in the deliver log, or in a
 * group log) stays valid until the next pub_recv, whatever became of the
 * connection meanwhile. pubd takes a log's pages back once the client hangs
 * up (a client that kept them could otherwise pin pubd's memory without
 * bound), and writes a group log on for the others; so libpub copies the
 * held message into pages of its own before it closes the socket. Here
 * pubd ends a subscriber that holds a message (the disconnect policy: it
 * stopped reading), the subscriber learns of it from a query and hangs up,
 * pubd lets go of its logs, and the held message is still whole: held in
 * the deliver log, or in a group log retired meanwhile (which pubd punches
 * once no reader may read it). A real
 * daemon on the fake fabric, turned by the test's main thread; the
 * subscriber in a thread of its own.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pub.h"
#include "server_internal.h" /* white-box: the lingering logs */
#include "test_daemon_harness.h"

#define MSG_LEN	  5000
#define PUBLISHED 60

struct sub {
	const char *sock;
	/* 1: holds message 0; 2 (main): ask; 3: pubd's end seen; 4 (main):
	 * look; 5: looked; -1: failed */
	atomic_int phase;
	int ended_ok, held_ok, lost_err;
};

static int query_table(const struct pub_table *t, void *arg)
{
	(void)t;
	(void)arg;
	return 0;
}

static bool whole(const struct pub_message *m)
{
	const uint8_t *d = m->data;
	size_t i;

	if (m->len != MSG_LEN || d[0] != 0)
		return false;
	for (i = 1; i < m->len; i++)
		if (d[i] != (uint8_t)(0x5a ^ i))
			return false;
	return true;
}

static void await_phase(struct sub *s, int phase)
{
	while (atomic_load(&s->phase) != phase)
		sched_yield(); /* the main thread turns the daemon meanwhile */
}

/* Subscribed to g1 on shared memory, message 0 held in m (phase 1); NULL
 * (phase -1) when that failed. */
static pub_client_t *hold_message_zero(struct sub *s, struct pub_message *m)
{
	struct pub_options o = PUB_OPTIONS_INIT;
	pub_client_t *pc;

	o.flags = PUB_OPT_NO_RECONNECT;
	o.transport = PUB_TRANSPORT_SHM;
	if (pub_connect(&pc, s->sock, &o) < 0 || pub_subscribe(pc, "g1") < 0 || pub_recv(pc, m, 20000) != 1 ||
	    !whole(m)) {
		atomic_store(&s->phase, -1);
		return NULL;
	}
	atomic_store(&s->phase, 1);
	return pc;
}

static void *sub_main(void *arg)
{
	struct sub *s = arg;
	struct pub_message m;
	pub_client_t *pc = hold_message_zero(s, &m);
	int err = 0;

	if (!pc)
		return NULL;
	await_phase(s, 2);
	s->ended_ok = whole(&m); /* pubd ended it, we have not let go yet */
	/* pubd has ended the connection: a query finds its end. */
	while (err == 0)
		err = pub_query(pc, PUB_Q_STATUS, NULL, query_table, NULL);
	s->lost_err = err;
	atomic_store(&s->phase, 3);
	await_phase(s, 4);
	s->held_ok = whole(&m);
	atomic_store(&s->phase, 5);
	pub_close(pc);
	return NULL;
}

static void turn_until(struct hd *h, struct sub *s, int phase)
{
	uint64_t dl = hd_deadline(20000);

	while (atomic_load(&s->phase) != phase && atomic_load(&s->phase) >= 0 && !hd_past(dl))
		hd_turn(h, 1);
	assert_int_equal(atomic_load(&s->phase), phase);
}

/* Messages 0.. of MSG_LEN bytes: the index, then a pattern. */
static void publish(struct hd *h, unsigned n)
{
	static uint8_t frame[MSG_LEN + 256], payload[MSG_LEN];
	struct hc c;
	unsigned i, k;

	assert_int_equal(hc_connect(h, &c, 0), 0);
	assert_int_equal(hc_hello(&c, "p"), 0);
	for (i = 0; i < n; i++) {
		payload[0] = (uint8_t)i;
		for (k = 1; k < MSG_LEN; k++)
			payload[k] = (uint8_t)(0x5a ^ k);
		size_t len = hc_enc_publish(frame, sizeof(frame), "g1", payload, MSG_LEN);

		assert_int_equal(hc_write(&c, frame, len, 2000), 0);
		hd_settle(h, 1000);
	}
	hc_close(&c);
}

/* The daemon's config: limits, then group g1 with acl (may be ""). */
static const char *config(const char *limits, const char *acl)
{
	static char body[512];

	snprintf(body, sizeof(body), "%sgroups:\n  - {name: g1, address: 239.78.3.1%s}\n", limits, acl);
	return body;
}

/* retire: once the message is held, a reload changes g1's subscribe ACL
 * (the subscriber is still allowed), which retires its group log: pubd
 * lets go of that one when the subscriber hangs up, too. */
static void held_across_the_end(const char *limits, bool retire)
{
	static struct hd h;
	struct sub s = {0};
	pthread_t t;
	uint64_t dl;

	assert_int_equal(hd_start(&h, NULL, config(limits, "")), 0);
	s.sock = h.sock_path;
	assert_int_equal(pthread_create(&t, NULL, sub_main, &s), 0);
	/* Subscribed (hd_group sees it), then message 0 arrives and is held. */
	dl = hd_deadline(20000);
	while (!hd_group(&h, "g1")->nsubs && atomic_load(&s.phase) >= 0 && !hd_past(dl))
		hd_turn(&h, 1);
	publish(&h, 1);
	turn_until(&h, &s, 1);
	if (retire) {
		assert_int_equal(hd_group(&h, "g1")->glog_live, 1);
		assert_int_equal(hd_reload(&h, NULL, config(limits, ", subscribe: [any, \"uid:0\"]")), 0);
		assert_null(hd_group(&h, "g1")->glog);
	}
	/* More than its logs and queue take: pubd ends it (disconnect). */
	publish(&h, PUBLISHED);
	dl = hd_deadline(20000);
	while (h.d.ipc.nclients && !hd_past(dl))
		hd_turn(&h, 1);
	assert_int_equal(h.d.ipc.nclients, 0);
	atomic_store(&s.phase, 2);
	turn_until(&h, &s, 3);
	assert_int_equal(s.lost_err, -ENOTCONN);
	assert_true(s.ended_ok);
	/* It hung up: pubd lets go of its deliver log, every page of it. */
	dl = hd_deadline(20000);
	while (h.d.ipc.nlingering && !hd_past(dl))
		hd_turn(&h, 1);
	assert_int_equal(h.d.ipc.nlingering, 0);
	atomic_store(&s.phase, 4);
	turn_until(&h, &s, 5);
	assert_true(s.held_ok);
	pthread_join(t, NULL);
	hd_stop(&h);
}

static void a_message_held_in_the_deliver_log_outlives_the_connection(void **state)
{
	(void)state;
	held_across_the_end("limits:\n  slow_subscriber: disconnect\n  subscriber_queue: 2\n"
			    "  deliver_log: 64KiB\n  group_log: 0\n",
			    false);
}

static void a_message_held_in_a_retired_group_log_outlives_the_connection(void **state)
{
	(void)state;
	held_across_the_end("limits:\n  slow_subscriber: disconnect\n  subscriber_queue: 2\n"
			    "  deliver_log: 64KiB\n  group_log: 64KiB\n",
			    true);
}

/* Subscribes to g1, holds message 0, and looks at it again when told
 * (phase 2), without a pub_recv in between. */
static void *sub_holds_main(void *arg)
{
	struct sub *s = arg;
	struct pub_message m;
	pub_client_t *pc = hold_message_zero(s, &m);

	if (!pc)
		return NULL;
	await_phase(s, 2);
	s->held_ok = whole(&m);
	atomic_store(&s->phase, 3);
	pub_close(pc);
	return NULL;
}

/*
 * A reload that removes g1, or makes it anew, ends its subscription, and
 * the group log with it: the message the subscriber holds there stays
 * whole until its next pub_recv, as when an ACL change retires the log.
 * The log was punched at once (its reader had been taken off it before
 * it was retired, so nobody seemed to hold it): the held message read as
 * zeros.
 */
static void held_across_a_reload(const char *next_groups)
{
	static struct hd h;
	struct sub s = {0};
	pthread_t t;
	uint64_t dl;

	assert_int_equal(hd_start(&h, NULL, config("limits:\n  group_log: 64KiB\n", "")), 0);
	s.sock = h.sock_path;
	assert_int_equal(pthread_create(&t, NULL, sub_holds_main, &s), 0);
	dl = hd_deadline(20000);
	while (!hd_group(&h, "g1")->nsubs && atomic_load(&s.phase) >= 0 && !hd_past(dl))
		hd_turn(&h, 1);
	publish(&h, 1);
	turn_until(&h, &s, 1);
	assert_int_equal(hd_group(&h, "g1")->glog_live, 1); /* held in the group log */
	assert_int_equal(hd_reload(&h, NULL, next_groups), 0);
	hd_settle(&h, 100);
	atomic_store(&s.phase, 2);
	turn_until(&h, &s, 3);
	assert_true(s.held_ok);
	pthread_join(t, NULL);
	hd_stop(&h);
}

static void a_message_held_in_a_removed_groups_log_stays_whole(void **state)
{
	(void)state;
	held_across_a_reload("limits:\n  group_log: 64KiB\ngroups:\n  - {name: g2, address: 239.78.3.2}\n");
}

static void a_message_held_in_a_remade_groups_log_stays_whole(void **state)
{
	(void)state;
	held_across_a_reload("limits:\n  group_log: 64KiB\ngroups:\n  - {name: g1, address: 239.78.3.9}\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(a_message_held_in_the_deliver_log_outlives_the_connection, hd_teardown),
		cmocka_unit_test_teardown(a_message_held_in_a_retired_group_log_outlives_the_connection, hd_teardown),
		cmocka_unit_test_teardown(a_message_held_in_a_removed_groups_log_stays_whole, hd_teardown),
		cmocka_unit_test_teardown(a_message_held_in_a_remade_groups_log_stays_whole, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
