/* SPDX-License-Identifier: MIT */
/*
 * The daemon's linger (fabric.rx_linger_us, core/linger.h) on the fake
 * fabric: after a message the loop turns on without sleeping, with the
 * clients' publish logs polled (pubd_ipc.polling), and then sleeps again;
 * with the linger at 0 it sleeps at once; with fabric.busy_poll it always
 * polls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "config.h"
#include "linger.h"
#include "loop.h"
#include "proto.h"
#include "test_daemon_harness.h"

#define GROUPS "groups:\n  - {name: g1, address: 239.78.1.1}\n"

/* Publish one message through a socket client and turn until pubd took it. */
static void publish_one(struct hd *h, struct hc *c)
{
	uint8_t frame[256];
	uint64_t want = h->d.counters[PUBD_CTR_MSG_PUBLISHED] + 1, dl = hd_deadline(5000);
	size_t n = hc_enc_publish(frame, sizeof(frame), "g1", "ping", 4);

	assert_int_equal(hc_write(c, frame, n, 2000), 0);
	while (h->d.counters[PUBD_CTR_MSG_PUBLISHED] < want && !hd_past(dl))
		hd_turn(h, 10);
	assert_int_equal(h->d.counters[PUBD_CTR_MSG_PUBLISHED], want);
}

/* Turns (not sleeping: timeout 0) until one finds nothing; how many. */
static unsigned turns_until_idle(struct hd *h)
{
	uint64_t dl = hd_deadline(5000);
	unsigned n = 0;

	while (hd_turn(h, 0) > 0) {
		n++;
		assert_false(hd_past(dl));
	}
	return n;
}

static void after_a_message_the_loop_polls_then_sleeps(void **state)
{
	static struct hd h;
	struct hc c;
	unsigned i, turns, seen = 0;
	uint64_t t0;
	int r;

	(void)state;
	/* The longest linger: the turn after a message must come within it on a loaded machine. */
	assert_int_equal(hd_start(&h, "  rx_linger_us: 10000\n", GROUPS), 0);
	assert_int_equal(hc_connect(&h, &c, 0), 0);
	assert_int_equal(hc_hello(&c, "p"), 0);
	turns_until_idle(&h);
	assert_false(h.d.ipc.polling); /* at rest: sleeping on events */
	for (i = 0; i < 20 && seen < 3; i++) {
		t0 = pubd_now_ns();
		publish_one(&h, &c);
		/* The next turn finds nothing, yet the loop does not sleep;
		 * unless this thread lost the CPU for the whole linger (a
		 * loaded machine), which says nothing of pubd: not counted. */
		r = hd_turn(&h, 0);
		if (!h.d.ipc.polling && pubd_now_ns() - t0 >= 10000000ull) {
			print_message("linger %u: preempted past the linger, not counted\n", i);
			continue;
		}
		seen++;
		assert_true(r > 0);
		assert_true(h.d.ipc.polling);
		turns = turns_until_idle(&h);
		print_message("linger %u: %u idle turns before sleeping\n", i, turns);
		assert_true(turns >= 1);
		assert_false(h.d.ipc.polling);
	}
	assert_int_equal(seen, 3);
	hc_close(&c);
	hd_stop(&h);
}

static void a_linger_of_zero_sleeps_at_once(void **state)
{
	static struct hd h;
	struct hc c;

	(void)state;
	assert_int_equal(hd_start(&h, "  rx_linger_us: 0\n", GROUPS), 0);
	assert_int_equal(hc_connect(&h, &c, 0), 0);
	assert_int_equal(hc_hello(&c, "p"), 0);
	turns_until_idle(&h);
	publish_one(&h, &c);
	hd_turn(&h, 0); /* what the publish left (its delivery bookkeeping) */
	assert_false(h.d.ipc.polling);
	assert_true(turns_until_idle(&h) <= 2);
	assert_false(h.d.ipc.polling);
	hc_close(&c);
	hd_stop(&h);
}

/*
 * A turn that leaves work for the next (on_idle's idle_pending) must not
 * say "sleep": pubd_loop_run would then wait on events, and none comes for
 * work pubd itself holds. 600 messages written at once, one datagram each
 * (no batching), pause the publisher at its transmit backlog
 * (TX_PENDING_HIGH): the pass that sends the backlog runs after the one
 * that would resume it, so only a next pass reads the rest. With nothing
 * more from the client, every turn until the last message went must say
 * "turn again" or have had an event. Without the guard (idle_pending's
 * paused clients) the loop slept after turn 2 with 256 messages published
 * and sent and the publisher paused for good.
 */
#define BURST 600

static void a_turn_with_work_left_never_sleeps(void **state)
{
	static struct hd h;
	static uint8_t frames[BURST * 64];
	struct hc c;
	size_t len = 0;
	uint64_t dl;
	unsigned i, turns = 0;
	bool left;
	int r;

	(void)state;
	assert_int_equal(hd_start(&h, "  rx_linger_us: 0\n  batch: false\n", GROUPS), 0);
	assert_int_equal(hc_connect(&h, &c, 0), 0);
	assert_int_equal(hc_hello(&c, "p"), 0);
	turns_until_idle(&h);
	for (i = 0; i < BURST; i++)
		len += hc_enc_publish(frames + len, sizeof(frames) - len, "g1", "ping", 4);
	assert_int_equal(hc_write(&c, frames, len, 2000), 0);
	dl = hd_deadline(5000);
	do {
		r = hd_turn(&h, 0);
		turns++;
		left = h.d.counters[PUBD_CTR_MSG_PUBLISHED] < BURST || h.d.tx.queued_msgs;
		if (left && r <= 0)
			print_message("turn %u said sleep: %llu published, %u queued, %u clients paused\n", turns,
				      (unsigned long long)h.d.counters[PUBD_CTR_MSG_PUBLISHED], h.d.tx.queued_msgs,
				      h.d.ipc.npaused);
		assert_true(!left || r > 0);
		assert_false(hd_past(dl));
	} while (left);
	print_message("%u turns for %u messages\n", turns, BURST);
	assert_int_equal(h.d.counters[PUBD_CTR_TX_DATAGRAMS] >= BURST, true);
	hc_close(&c);
	hd_stop(&h);
}

/*
 * fabric.rx_linger_us auto (the default): sized at start from a wakeup
 * measured on this host, kept by a reload (which reads "auto" again and
 * measures nothing), and shown in pubctl status. A file that sets it says
 * what it is, with nothing measured.
 */
static void auto_is_sized_from_a_measured_wakeup(void **state)
{
	static struct hd h;
	uint32_t sized;

	(void)state;
	assert_int_equal(hd_start(&h, NULL, GROUPS), 0);
	assert_int_equal(h.d.cfg.rx_linger_us, PUBD_LINGER_AUTO);
	assert_true(h.d.wake_ns > 0);
	sized = h.d.cfg.rx_linger_auto_us;
	print_message("a wakeup: %llu ns; the linger: %u us\n", (unsigned long long)h.d.wake_ns, sized);
	assert_int_equal(sized, pubd_linger_auto_us(h.d.wake_ns));
	assert_int_equal(pubd_config_linger_us(&h.d.cfg), sized);
	assert_true(h.d.linger.ns == (uint64_t)sized * 1000);
	/* The same file again: nothing to restart for, and the size stays. */
	assert_int_equal(hd_reload(&h, NULL, GROUPS), 0);
	assert_int_equal(h.d.cfg.rx_linger_auto_us, sized);
	assert_int_equal(pubd_config_linger_us(&h.d.cfg), sized);
	/* A number in its place takes a restart: what runs is kept (and
	 * compared with at the next reload: auto again is no change). */
	assert_int_equal(hd_reload(&h, "  rx_linger_us: 0\n", GROUPS), 0);
	assert_int_equal(h.d.cfg.rx_linger_us, PUBD_LINGER_AUTO);
	assert_int_equal(pubd_config_linger_us(&h.d.cfg), sized);
	hd_stop(&h);

	assert_int_equal(hd_start(&h, "  rx_linger_us: 70\n", GROUPS), 0);
	assert_int_equal(h.d.wake_ns, 0);
	assert_int_equal(pubd_config_linger_us(&h.d.cfg), 70);
	assert_true(h.d.linger.ns == 70000);
	hd_stop(&h);
}

static void busy_poll_always_polls(void **state)
{
	static struct hd h;

	(void)state;
	assert_int_equal(hd_start(&h, "  busy_poll: true\n", GROUPS), 0);
	/* With nothing to do, a turn still says "do not sleep". */
	for (unsigned i = 0; i < 100; i++) {
		assert_true(hd_turn(&h, 0) > 0);
		assert_true(h.d.ipc.polling);
	}
	hd_stop(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(after_a_message_the_loop_polls_then_sleeps, hd_teardown),
		cmocka_unit_test_teardown(a_linger_of_zero_sleeps_at_once, hd_teardown),
		cmocka_unit_test_teardown(a_turn_with_work_left_never_sleeps, hd_teardown),
		cmocka_unit_test_teardown(auto_is_sized_from_a_measured_wakeup, hd_teardown),
		cmocka_unit_test_teardown(busy_poll_always_polls, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
