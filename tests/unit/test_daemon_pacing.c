/* SPDX-License-Identifier: MIT */
/*
 * Sender pacing (a group's rate:) through the daemon on the fake fabric:
 * a paced group goes out at its rate, measured on the monotonic clock, its
 * publishers are held back rather than dropped, an unpaced group beside it
 * is not slowed, and a reload changes the rate at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_daemon_harness.h"
#include "wire.h"

#define MS	1000000ull
#define DGRAM	1000 /* each message is one datagram of this many bytes */
#define PAYLOAD (DGRAM - PUBD_WIRE_HDR_LEN)
#define RATE	1000000ull /* bytes/s of the paced group */

static const char *groups(const char *slow_rate)
{
	static char body[512];

	snprintf(body, sizeof(body),
		 "groups:\n"
		 "  - name: slow\n"
		 "    address: 239.77.1.1\n"
		 "    rate: %s\n"
		 "  - name: fast\n"
		 "    address: 239.77.1.2\n",
		 slow_rate);
	return body;
}

/* n PUBLISH frames of PAYLOAD bytes to group, back to back. */
struct stream {
	uint8_t *buf;
	size_t len, off;
};

static void stream_init(struct stream *s, const char *group, unsigned n)
{
	uint8_t payload[PAYLOAD];
	size_t one;
	unsigned k;

	memset(payload, 0x5a, sizeof(payload));
	s->buf = malloc((size_t)n * (PAYLOAD + 300));
	assert_non_null(s->buf);
	s->len = s->off = 0;
	for (k = 0; k < n; k++) {
		one = hc_enc_publish(s->buf + s->len, PAYLOAD + 300, group, payload, sizeof(payload));
		assert_true(one > 0);
		s->len += one;
	}
}

/* Write what the socket takes now; true when all of it went. */
static bool stream_push(struct hc *c, struct stream *s)
{
	long w;

	if (s->off < s->len) {
		w = hc_try_write(c, s->buf + s->off, s->len - s->off);
		assert_true(w >= 0);
		s->off += (size_t)w;
	}
	return s->off == s->len;
}

/* Count what the fake sent since the last call, per group. */
static void take_sent(struct hd *h, const struct pubd_group *slow, uint64_t *n_slow, uint64_t *n_fast)
{
	const struct pubd_fake_sent *s;
	size_t i, n = pubd_fake_sent_count(h->fk);

	for (i = 0; i < n; i++) {
		s = pubd_fake_sent_at(h->fk, i);
		if (s->data[5] & PUBD_WIRE_F_HEARTBEAT)
			continue; /* a heartbeat: not counted against the rate */
		assert_int_equal(s->len, DGRAM);
		if (s->slot == slow->slot)
			++*n_slow;
		else
			++*n_fast;
	}
	pubd_fake_sent_clear(h->fk);
}

struct run {
	uint64_t t0, slow_done, fast_start, fast_done;
	uint64_t t25, t75; /* when a quarter and three quarters of the slow group had gone */
	uint64_t slow_at_fast_done;
	bool saw_paused;
	uint32_t max_queue;
};

/*
 * N messages on the paced group; once it is under way, M on the unpaced
 * one from another client. Turns the daemon until both are all sent.
 */
static void run_both(struct hd *h, unsigned N, unsigned M, struct run *r)
{
	struct pubd_group *slow = hd_group(h, "slow");
	struct stream ss, fs;
	struct hc ps, pf;
	uint64_t n_slow = 0, n_fast = 0, now, dl = hd_deadline(10000);

	stream_init(&ss, "slow", N);
	stream_init(&fs, "fast", M);
	assert_int_equal(hc_connect(h, &ps, 0), 0);
	assert_int_equal(hc_hello(&ps, "slow-pub"), 0);
	assert_int_equal(hc_connect(h, &pf, 0), 0);
	assert_int_equal(hc_hello(&pf, "fast-pub"), 0);
	memset(r, 0, sizeof(*r));
	r->t0 = pubd_now_ns();
	while ((n_slow < N || n_fast < M) && !hd_past(dl)) {
		stream_push(&ps, &ss);
		if (n_slow >= N / 10) { /* the slow group is backlogged by now */
			if (!r->fast_start)
				r->fast_start = pubd_now_ns();
			stream_push(&pf, &fs);
		}
		hd_turn(h, 1);
		take_sent(h, slow, &n_slow, &n_fast);
		now = pubd_now_ns();
		if (h->d.ipc.npaused && !r->fast_start)
			r->saw_paused = true;
		if (slow->txq_len > r->max_queue)
			r->max_queue = slow->txq_len;
		if (!r->t25 && n_slow >= N / 4)
			r->t25 = now;
		if (!r->t75 && n_slow >= 3 * N / 4)
			r->t75 = now;
		if (!r->slow_done && n_slow == N)
			r->slow_done = now;
		if (!r->fast_done && M && n_fast == M) {
			r->fast_done = now;
			r->slow_at_fast_done = n_slow;
		}
	}
	assert_int_equal(n_slow, N);
	assert_int_equal(n_fast, M);
	hc_close(&ps);
	hc_close(&pf);
	free(ss.buf);
	free(fs.buf);
}

static void test_paced_group_sends_at_its_rate(void **state)
{
	const unsigned N = 1000, M = 2000;
	static struct hd h;
	struct pubd_group *slow, *fast;
	struct run r;
	/* The bucket starts full (its depth: 5 ms at the rate, here 5000
	 * bytes); the rest goes at the rate. */
	double want = (double)((uint64_t)N * DGRAM - RATE / 200) / RATE, took, mid, fast_s;

	(void)state;
	assert_int_equal(hd_start(&h, NULL, groups("1000000/s")), 0);
	slow = hd_group(&h, "slow");
	fast = hd_group(&h, "fast");
	assert_int_equal(slow->pacer.rate, RATE);
	assert_int_equal(fast->pacer.rate, 0);
	run_both(&h, N, M, &r);

	took = (double)(r.slow_done - r.t0) / 1e9;
	mid = (double)(N / 2 * DGRAM) / ((double)(r.t75 - r.t25) / 1e9);
	fast_s = (double)(r.fast_done - r.fast_start) / 1e9;
	print_message("paced: %u x %u B in %.3f s (want %.3f s); middle half at %.0f B/s (rate %llu); "
		      "unpaced: %u x %u B in %.3f s while the paced group had sent %llu; publisher paused: %s, "
		      "paced queue at most %u, paced waits %llu\n",
		      N, DGRAM, took, want, mid, (unsigned long long)RATE, M, DGRAM, fast_s,
		      (unsigned long long)r.slow_at_fast_done, r.saw_paused ? "yes" : "no", r.max_queue,
		      (unsigned long long)slow->paced_waits);
	/* Never faster than the bucket allows (in the middle half, its 5000
	 * bytes are 1% of what went); slower only when a loaded host wakes
	 * the loop more than the half bucket's 2.5 ms late. */
	assert_true(took >= want * 0.999);
	assert_true(took <= want * 1.25);
	assert_true(mid >= RATE * 0.85 && mid <= RATE * 1.02);
	/* It waited, for half a bucket (2500 bytes) at a time, not per datagram. */
	assert_true(slow->paced_waits > 0 && slow->paced_waits <= N / 2);
	/* The publisher was held back, and nothing dropped: published = sent. */
	assert_true(r.saw_paused);
	assert_int_equal(slow->published, N);
	assert_int_equal(slow->tx_datagrams, N);
	assert_int_equal(pubd_drops_msg_total(&slow->drops), 0);
	assert_int_equal(h.d.counters[PUBD_CTR_MSG_DROPPED], 0);
	/* The unpaced group went at once, not behind the paced one. */
	assert_true(r.slow_at_fast_done < N);
	assert_true(fast_s < took / 4);
	assert_int_equal(fast->published, M);
	assert_int_equal(fast->tx_datagrams, M);
	assert_int_equal(fast->paced_waits, 0);
	hd_stop(&h);
}

/* A reload changes the rate of a group with a backlog at once: slower,
 * then off, when the rest goes out without waiting. */
static void test_reload_changes_the_rate(void **state)
{
	const unsigned N = 400;
	static struct hd h;
	struct pubd_group *slow;
	struct stream ss;
	struct hc ps;
	uint64_t n_slow = 0, n_fast = 0, t1, t2, at_off = 0, dl = hd_deadline(10000);
	double r1, r2;

	(void)state;
	assert_int_equal(hd_start(&h, NULL, groups("500KiB")), 0);
	slow = hd_group(&h, "slow");
	stream_init(&ss, "slow", N);
	assert_int_equal(hc_connect(&h, &ps, 0), 0);
	assert_int_equal(hc_hello(&ps, "pub"), 0);
	/* 100 datagrams past the burst at 500 KiB/s, then at 100 KiB/s. */
	while (n_slow < 110 && !hd_past(dl)) {
		stream_push(&ps, &ss);
		hd_turn(&h, 1);
		take_sent(&h, slow, &n_slow, &n_fast);
	}
	t1 = pubd_now_ns();
	assert_int_equal(hd_reload(&h, NULL, groups("100KiB")), 0);
	assert_int_equal(slow->pacer.rate, 100 * 1024);
	at_off = n_slow;
	while (n_slow < at_off + 50 && !hd_past(dl)) {
		stream_push(&ps, &ss);
		hd_turn(&h, 1);
		take_sent(&h, slow, &n_slow, &n_fast);
	}
	t2 = pubd_now_ns();
	r2 = (double)((n_slow - at_off) * DGRAM) / ((double)(t2 - t1) / 1e9);
	/* Off: the backlog goes without waiting for tokens. */
	assert_int_equal(hd_reload(&h, NULL, groups("off")), 0);
	assert_int_equal(slow->pacer.rate, 0);
	at_off = slow->paced_waits;
	t1 = pubd_now_ns();
	while (n_slow < N && !hd_past(dl)) {
		stream_push(&ps, &ss);
		hd_turn(&h, 1);
		take_sent(&h, slow, &n_slow, &n_fast);
	}
	r1 = (double)(pubd_now_ns() - t1) / 1e9;
	print_message("after reload to 100 KiB/s: %.0f B/s; after reload to off: the last %u in %.3f s\n", r2, N - 160,
		      r1);
	assert_int_equal(n_slow, N);
	/* 50 datagrams at 100 KiB/s from a bucket the reload clipped to 2 KiB. */
	assert_true(r2 >= 100 * 1024 * 0.8 && r2 <= 100 * 1024 * 1.06);
	assert_int_equal(slow->paced_waits, at_off);
	assert_true(r1 < 0.2); /* 240 KB at 100 KiB/s would take 2.3 s */
	assert_int_equal(slow->tx_datagrams, N);
	hc_close(&ps);
	free(ss.buf);
	hd_stop(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_paced_group_sends_at_its_rate, hd_teardown),
		cmocka_unit_test_teardown(test_reload_changes_the_rate, hd_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
