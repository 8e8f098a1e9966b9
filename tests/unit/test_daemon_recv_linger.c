/* SPDX-License-Identifier: MIT */
/*
 * libpub's receive linger (pub_options.recv_linger_us, $PUBD_RECV_LINGER_US)
 * against a real daemon on the fake fabric: a subscriber waiting in
 * pub_recv looks at its deliver log again and again, yielding the CPU,
 * instead of saying it sleeps; so pubd does not ring it, and the message
 * still arrives. Without the linger it says it sleeps at once, and pubd's
 * ring brings the message. The daemon is turned by the test's main thread,
 * the subscriber waits in a thread of its own.
 *
 * And a subscriber that sleeps in pub_recv reads its socket only when its
 * poll() said something came there (recvmsg is counted per thread by the
 * definition below, which libpub's calls reach): no recvmsg per wait, and
 * still every answer or error pubd sends, whether it comes while the
 * subscriber sleeps or before a pub_recv that may not wait.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "pub.h"
#include "server_internal.h" /* white-box: the subscriber's deliver log */
#include "test_daemon_harness.h"

#define GROUPS "groups:\n  - {name: g1, address: 239.78.2.1}\n"

/* recvmsg calls made by this thread: libpub's reach this definition first. */
static _Thread_local unsigned recvmsg_calls;

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	recvmsg_calls++;
	return syscall(SYS_recvmsg, fd, msg, flags);
}

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

/* ---- the socket read only when poll() says so ---- */

/* Steps 1..4: a ping each; 5: an error while it sleeps; 6: a ping;
 * 7: an error sent before a pub_recv that may not wait. */
#define WAITS	    4
#define STEP_ERROR  5
#define STEP_PING   6
#define STEP_NOWAIT 7

struct waiter {
	const char *sock;
	atomic_int go;	 /* main -> thread: the step to run next */
	atomic_int done; /* thread -> main: the last step done; -2: not yet connected, -1: failed */
	int got[STEP_NOWAIT + 1];
	unsigned reads[STEP_NOWAIT + 1]; /* recvmsg calls the thread made in each step */
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct pub_options o = PUB_OPTIONS_INIT;
	struct pub_message m;
	pub_client_t *pc;
	int step;

	o.flags = PUB_OPT_NO_RECONNECT;
	o.transport = PUB_TRANSPORT_SHM;
	o.recv_linger_us = -1;
	if (pub_connect(&pc, w->sock, &o) < 0 || pub_subscribe(pc, "g1") < 0) {
		atomic_store(&w->done, -1);
		return NULL;
	}
	atomic_store(&w->done, 0);
	for (step = 1; step <= STEP_NOWAIT; step++) {
		unsigned before;

		while (atomic_load(&w->go) < step)
			sched_yield();
		before = recvmsg_calls;
		w->got[step] = pub_recv(pc, &m, step == STEP_NOWAIT ? 0 : 20000);
		w->reads[step] = recvmsg_calls - before;
		atomic_store(&w->done, step);
	}
	pub_close(pc);
	return NULL;
}

static struct pubd_client *subscriber_client(struct hd *h)
{
	struct pubd_client *c;

	for (c = h->d.ipc.clients; c; c = c->next)
		if (c->dlog)
			return c;
	fail_msg("no client with a deliver log");
	return NULL;
}

static void turn_until_done(struct hd *h, struct waiter *w, int step)
{
	uint64_t dl = hd_deadline(10000);

	while (atomic_load(&w->done) != step && atomic_load(&w->done) != -1 && !hd_past(dl))
		hd_turn(h, 1);
	assert_int_equal(atomic_load(&w->done), step);
}

static void wait_until_it_sleeps(struct hd *h)
{
	uint64_t dl = hd_deadline(10000);

	while (!subscriber_sleeps(h) && !hd_past(dl))
		hd_turn(h, 1);
	assert_int_equal(subscriber_sleeps(h), 1);
}

/* A ping published while it sleeps in step's pub_recv. */
static void ping_step(struct hd *h, struct waiter *w, int step)
{
	atomic_store(&w->go, step);
	wait_until_it_sleeps(h);
	publish_ping(h);
	turn_until_done(h, w, step);
	assert_int_equal(w->got[step], 1);
}

static void a_sleeping_subscriber_reads_its_socket_only_when_polled(void **state)
{
	static struct hd h;
	struct waiter w = {0};
	pthread_t t;
	int step;

	(void)state;
	unsetenv(PUB_RECV_LINGER_ENV);
	assert_int_equal(hd_start(&h, NULL, GROUPS), 0);
	w.sock = h.sock_path;
	atomic_store(&w.done, -2);
	assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
	turn_until_done(&h, &w, 0);
	for (step = 1; step <= WAITS; step++)
		ping_step(&h, &w, step);
	/* The first wait that sleeps reads the socket once (not yet known
	 * empty); a deliver log starts out saying it sleeps, so that may be
	 * step 1 or 2. After it, a wait rung through the deliver log reads
	 * nothing there (it was one recvmsg per wait). */
	for (step = 3; step <= WAITS; step++)
		assert_int_equal(w.reads[step], 0);
	/* An error pubd sends while it sleeps wakes it, and is returned
	 * (before, it was read and kept until the next wakeup). */
	atomic_store(&w.go, STEP_ERROR);
	wait_until_it_sleeps(&h);
	srv_reply_error(subscriber_client(&h), 0, PUB_ERR_INTERNAL, "sent while it sleeps");
	hd_settle(&h, 100);
	turn_until_done(&h, &w, STEP_ERROR);
	assert_int_equal(w.got[STEP_ERROR], -PUB_EINTERNAL);
	assert_true(w.reads[STEP_ERROR] >= 1);
	/* A ping: its wait reads the socket once (not known empty since the
	 * error) and leaves it known empty again. */
	ping_step(&h, &w, STEP_PING);
	assert_int_equal(w.reads[STEP_PING], 1);
	/* One sent between two calls, to a pub_recv that may not wait: it
	 * does not sleep, so it looks at the socket before it returns 0. */
	srv_reply_error(subscriber_client(&h), 0, PUB_ERR_INTERNAL, "sent between calls");
	hd_settle(&h, 100);
	atomic_store(&w.go, STEP_NOWAIT);
	turn_until_done(&h, &w, STEP_NOWAIT);
	assert_int_equal(w.got[STEP_NOWAIT], -PUB_EINTERNAL);
	pthread_join(t, NULL);
	hd_stop(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(a_lingering_subscriber_gets_its_message_unrung, hd_teardown),
		cmocka_unit_test_teardown(the_environment_sets_the_linger, hd_teardown),
		cmocka_unit_test_teardown(without_a_linger_the_subscriber_sleeps_and_is_rung, hd_teardown),
		cmocka_unit_test_teardown(a_sleeping_subscriber_reads_its_socket_only_when_polled, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
