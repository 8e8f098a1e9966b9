/* SPDX-License-Identifier: MIT */
/*
 * libpub's receive linger (pub_options.recv_linger_us, $PUBD_RECV_LINGER_US)
 * against a real daemon on the fake fabric: a subscriber waiting in
 * pub_recv looks at its deliver log again and again, yielding the CPU,
 * instead of saying it sleeps; so pubd does not ring it, and the message
 * still arrives. Without the linger it says it sleeps at once, and pubd's
 * ring brings the message. The daemon is turned by the test's main thread,
 * the subscriber waits in a thread of its own.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pub.h"
#include "server_internal.h" /* white-box: the subscriber's deliver log */
#include "test_daemon_harness.h"

#define GROUPS "groups:\n  - {name: g1, address: 239.78.2.1}\n"

struct sub {
	const char *sock;
	int linger_us;	  /* pub_options.recv_linger_us */
	atomic_int phase; /* 1: subscribed, about to wait; 2: pub_recv returned; -1: failed */
	int got;
};

static void *sub_main(void *arg)
{
	struct sub *s = arg;
	struct pub_options o = PUB_OPTIONS_INIT;
	struct pub_message m;
	pub_client_t *pc;

	o.flags = PUB_OPT_NO_RECONNECT;
	o.transport = PUB_TRANSPORT_SHM;
	o.recv_linger_us = s->linger_us;
	if (pub_connect(&pc, s->sock, &o) < 0) {
		atomic_store(&s->phase, -1);
		return NULL;
	}
	if (pub_subscribe(pc, "g1") < 0) {
		pub_close(pc);
		atomic_store(&s->phase, -1);
		return NULL;
	}
	atomic_store(&s->phase, 1);
	s->got = pub_recv(pc, &m, 20000);
	if (s->got == 1 && (m.len != 4 || memcmp(m.data, "ping", 4)))
		s->got = -2;
	atomic_store(&s->phase, 2);
	pub_close(pc);
	return NULL;
}

/* Turn the daemon until the subscriber reaches phase (or fails). */
static void turn_until_phase(struct hd *h, struct sub *s, int phase)
{
	uint64_t dl = hd_deadline(10000);

	while (atomic_load(&s->phase) != phase && atomic_load(&s->phase) >= 0 && !hd_past(dl))
		hd_turn(h, 1);
	assert_int_equal(atomic_load(&s->phase), phase);
}

/* The reader_sleeping word of the one client with a deliver log. */
static unsigned subscriber_sleeps(struct hd *h)
{
	struct pubd_client *c;

	for (c = h->d.ipc.clients; c; c = c->next)
		if (c->dlog)
			return atomic_load(&c->dlog->w.ctl->reader_sleeping);
	fail_msg("no client with a deliver log");
	return 0;
}

static void publish_ping(struct hd *h)
{
	uint8_t frame[256];
	struct hc c;
	size_t n = hc_enc_publish(frame, sizeof(frame), "g1", "ping", 4);

	assert_int_equal(hc_connect(h, &c, 0), 0);
	assert_int_equal(hc_hello(&c, "p"), 0);
	assert_int_equal(hc_write(&c, frame, n, 2000), 0);
	hd_settle(h, 100000);
	hc_close(&c);
}

/* One wait in pub_recv; lingering: whether the subscriber should linger. */
static void one_wait(int linger_us, bool lingering)
{
	static struct hd h;
	struct sub s = {.linger_us = linger_us};
	pthread_t t;
	uint64_t dl;

	assert_int_equal(hd_start(&h, NULL, GROUPS), 0);
	s.sock = h.sock_path;
	assert_int_equal(pthread_create(&t, NULL, sub_main, &s), 0);
	turn_until_phase(&h, &s, 1);
	if (lingering) {
		/* 50 ms of its 5 s linger: it never says it sleeps. */
		dl = hd_deadline(50);
		while (!hd_past(dl)) {
			hd_turn(&h, 1);
			assert_int_equal(subscriber_sleeps(&h), 0);
		}
	} else {
		dl = hd_deadline(10000);
		while (!subscriber_sleeps(&h) && !hd_past(dl))
			hd_turn(&h, 1);
		assert_int_equal(subscriber_sleeps(&h), 1);
	}
	publish_ping(&h);
	turn_until_phase(&h, &s, 2);
	assert_int_equal(s.got, 1);
	pthread_join(t, NULL);
	hd_stop(&h);
}

static void a_lingering_subscriber_gets_its_message_unrung(void **state)
{
	(void)state;
	unsetenv(PUB_RECV_LINGER_ENV);
	one_wait(5000000, true);
}

static void the_environment_sets_the_linger(void **state)
{
	(void)state;
	setenv(PUB_RECV_LINGER_ENV, "5000000", 1);
	one_wait(0, true);
	unsetenv(PUB_RECV_LINGER_ENV);
}

static void without_a_linger_the_subscriber_sleeps_and_is_rung(void **state)
{
	(void)state;
	unsetenv(PUB_RECV_LINGER_ENV);
	one_wait(0, false);
	setenv(PUB_RECV_LINGER_ENV, "5000000", 1); /* -1 overrides it */
	one_wait(-1, false);
	setenv(PUB_RECV_LINGER_ENV, "soon", 1); /* not a number: no linger */
	one_wait(0, false);
	unsetenv(PUB_RECV_LINGER_ENV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(a_lingering_subscriber_gets_its_message_unrung, hd_teardown),
		cmocka_unit_test_teardown(the_environment_sets_the_linger, hd_teardown),
		cmocka_unit_test_teardown(without_a_linger_the_subscriber_sleeps_and_is_rung, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
