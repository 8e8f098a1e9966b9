/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory log (common/shmlog.c): records in order across many
 * ring passes, room and back-pressure, the sleep/wake handshake, a writer
 * dying mid-record, hostile bytes in the ring, and a writer and a reader
 * on two threads.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shmlog.h"

#define CAP   4096u
#define MAXR  1024u
#define MAPSZ (PUB_SHMLOG_CTL_LEN + CAP)

struct fixture {
	_Alignas(64) uint8_t map[MAPSZ];
	struct pub_shmlog_writer w;
	struct pub_shmlog_reader r;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || pub_shmlog_format(f->map, MAPSZ, CAP, MAXR, 7) ||
	    pub_shmlog_writer_init(&f->w, f->map, MAPSZ, false) ||
	    pub_shmlog_reader_init(&f->r, f->map, MAPSZ, CAP, MAXR, 0))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

/* Append one record whose body is len bytes of a pattern from n. */
static bool put(struct pub_shmlog_writer *w, uint32_t n, uint32_t len)
{
	uint8_t *b = pub_shmlog_claim(w, PUB_SHMLOG_MSG, 0, n, len);
	uint32_t i;

	if (!b)
		return false;
	for (i = 0; i < len; i++)
		b[i] = (uint8_t)(n * 31 + i);
	pub_shmlog_commit(w);
	return true;
}

/* Read one record and check it is record n of len bytes. */
static void get(struct pub_shmlog_reader *r, uint32_t n, uint32_t len)
{
	struct pub_shmlog_view v;
	uint32_t i;

	assert_int_equal(pub_shmlog_next(r, &v), 1);
	assert_int_equal(v.aux, n);
	assert_int_equal(v.len, len);
	for (i = 0; i < len; i++)
		assert_int_equal(v.body[i], (uint8_t)(n * 31 + i));
	pub_shmlog_consume(r, &v);
}

static void format_refuses_bad_geometry(void **state)
{
	static _Alignas(64) uint8_t map[PUB_SHMLOG_CTL_LEN + 8192];
	struct pub_shmlog_reader r;
	struct pub_shmlog_writer w;

	(void)state;
	assert_int_equal(pub_shmlog_format(map, sizeof(map), 6000, 512, 0), -EINVAL);  /* not a power of two */
	assert_int_equal(pub_shmlog_format(map, sizeof(map), 2048, 256, 0), -EINVAL);  /* below the minimum */
	assert_int_equal(pub_shmlog_format(map, sizeof(map), 16384, 512, 0), -EINVAL); /* map too short */
	assert_int_equal(pub_shmlog_format(map, sizeof(map), 8192, 4096, 0), -EINVAL); /* record above cap/4 */
	assert_int_equal(pub_shmlog_format(map, sizeof(map), 8192, 100, 0), -EINVAL);  /* not aligned */
	assert_int_equal(pub_shmlog_format(map, sizeof(map), 8192, 2048, 0), 0);
	/* A control page someone changed is refused by a trusting side... */
	((struct pub_shmlog_ctl *)map)->capacity = 1u << 20;
	assert_int_equal(pub_shmlog_writer_init(&w, map, sizeof(map), false), -EPROTO);
	assert_int_equal(pub_shmlog_reader_init(&r, map, sizeof(map), 0, 0, 0), -EPROTO);
	/* ...and ignored by the creator, who passes its own geometry. */
	assert_int_equal(pub_shmlog_reader_init(&r, map, sizeof(map), 8192, 2048, 0), 0);
}

static void records_arrive_in_order_across_many_passes(void **state)
{
	struct fixture *f = *state;
	uint32_t n, len;

	/* Sizes that leave every remainder at the ring's end, so padding
	 * records of every length appear. */
	for (n = 0; n < 5000; n++) {
		len = (n * 37) % (MAXR - PUB_SHMLOG_HDR_LEN + 1);
		assert_true(put(&f->w, n, len));
		get(&f->r, n, len);
		pub_shmlog_release(&f->r);
	}
	assert_true(f->w.tail > 100ull * CAP);
	struct pub_shmlog_view v;
	assert_int_equal(pub_shmlog_next(&f->r, &v), 0);
}

static void a_full_log_makes_the_writer_wait_for_the_reader(void **state)
{
	struct fixture *f = *state;
	uint32_t n = 0, i;

	while (put(&f->w, n, 200))
		n++;
	/* 224-byte records (216 aligned) and the next commit word's 16 bytes. */
	assert_int_equal(n, (CAP - PUB_SHMLOG_ALIGN) / 224);
	assert_false(pub_shmlog_has_room(&f->w, 200));
	assert_true(pub_shmlog_writer_sleep(&f->w, 200));
	/* Two records consumed (the next one pads 64 bytes at the ring's
	 * end) but not released: still no room. */
	get(&f->r, 0, 200);
	get(&f->r, 1, 200);
	assert_false(pub_shmlog_has_room(&f->w, 200));
	assert_true(pub_shmlog_release(&f->r)); /* the writer said it waits */
	assert_false(pub_shmlog_release(&f->r));
	assert_true(pub_shmlog_has_room(&f->w, 200));
	assert_true(put(&f->w, n, 200));
	for (i = 2; i <= n; i++)
		get(&f->r, i, 200);
	/* Bigger than a record may be: never, whatever the room. */
	assert_null(pub_shmlog_claim(&f->w, PUB_SHMLOG_MSG, 0, 0, MAXR));
}

/* The reader's position is the reader's to write, so a hostile one can
 * write anything there: a position past the writer's, or one a whole ring
 * or more behind it, means no room (pubd's deliveries then wait in the
 * subscriber queue, where the slow-subscriber policy bounds them), never a
 * write over records not yet read or outside the ring. (Room the writer
 * saw before stays its own: a reader cannot take it back.) */
static void a_reader_position_that_lies_gives_no_room(void **state)
{
	struct fixture *f = *state;
	uint64_t tail;
	uint32_t n;

	/* Full, so the writer looks at the reader's position again. */
	for (n = 0; put(&f->w, n, 200); n++)
		;
	tail = f->w.tail;
	atomic_store(&f->w.ctl->head, tail + 4096); /* ahead of the writer */
	assert_false(pub_shmlog_has_room(&f->w, 200));
	assert_null(pub_shmlog_claim(&f->w, PUB_SHMLOG_MSG, 0, 0, 200));
	assert_int_equal(pub_shmlog_room(&f->w), 0);
	atomic_store(&f->w.ctl->head, UINT64_MAX); /* far ahead, wrapping */
	assert_false(pub_shmlog_has_room(&f->w, 200));
	assert_int_equal(f->w.tail, tail);   /* nothing written meanwhile */
	atomic_store(&f->w.ctl->head, tail); /* an honest reader that read it all */
	assert_true(put(&f->w, n, 200));
}

/* A reader that still uses records it read (pubd lends them out) gives
 * back only the space before the first of them: never past what it read,
 * never backwards. */
static void release_to_gives_back_only_up_to_its_limit(void **state)
{
	struct fixture *f = *state;
	uint64_t second;

	assert_true(put(&f->w, 0, 200));
	assert_true(put(&f->w, 1, 200));
	get(&f->r, 0, 200);
	second = f->r.pos;
	get(&f->r, 1, 200);
	assert_false(pub_shmlog_release_to(&f->r, 0)); /* the first record still in use */
	assert_int_equal(atomic_load(&f->r.ctl->head), 0);
	pub_shmlog_release_to(&f->r, second);
	assert_int_equal(atomic_load(&f->r.ctl->head), second);
	pub_shmlog_release_to(&f->r, 0); /* not backwards */
	assert_int_equal(atomic_load(&f->r.ctl->head), second);
	pub_shmlog_release_to(&f->r, UINT64_MAX); /* not past what was read */
	assert_int_equal(atomic_load(&f->r.ctl->head), f->r.pos);
}

static void the_writer_wakes_only_a_reader_that_sleeps(void **state)
{
	struct fixture *f = *state;

	/* A new log's reader waits for its first record to be rung in. */
	assert_true(put(&f->w, 0, 8));
	assert_true(pub_shmlog_wake_reader(&f->w));
	get(&f->r, 0, 8);
	assert_true(put(&f->w, 1, 8));
	assert_false(pub_shmlog_wake_reader(&f->w)); /* awake: no wakeup owed */
	/* Something is there: the reader may not sleep. */
	assert_false(pub_shmlog_reader_sleep(&f->r));
	get(&f->r, 1, 8);
	assert_true(pub_shmlog_reader_sleep(&f->r));
	assert_true(put(&f->w, 2, 8));
	assert_true(pub_shmlog_wake_reader(&f->w));
	assert_false(pub_shmlog_wake_reader(&f->w)); /* one wakeup per sleep */
	get(&f->r, 2, 8);
}

static void a_writer_dying_mid_record_costs_that_record_only(void **state)
{
	struct fixture *f = *state;
	struct pub_shmlog_view v;
	uint8_t *b;

	assert_true(put(&f->w, 1, 100));
	get(&f->r, 1, 100);
	assert_false(pub_shmlog_partial(&f->r)); /* every record read, none begun */
	b = pub_shmlog_claim(&f->w, PUB_SHMLOG_MSG, 0, 2, 300);
	assert_non_null(b);
	memset(b, 0x55, 150); /* ...and dies here */
	assert_int_equal(pub_shmlog_next(&f->r, &v), 0);
	assert_true(pub_shmlog_partial(&f->r));
}

static void a_dying_writer_past_the_ring_end_is_seen_too(void **state)
{
	struct fixture *f = *state;
	struct pub_shmlog_view v;
	uint32_t n;

	for (n = 0; n < 17; n++) { /* 17 x 240 = 4080: 16 bytes left */
		assert_true(put(&f->w, n, 216));
		get(&f->r, n, 216);
	}
	pub_shmlog_release(&f->r);
	assert_non_null(pub_shmlog_claim(&f->w, PUB_SHMLOG_MSG, 0, 99, 500)); /* pads, then dies */
	assert_int_equal(pub_shmlog_next(&f->r, &v), 0);
	assert_true(pub_shmlog_partial(&f->r));
}

static void stale_bytes_of_an_earlier_pass_are_never_read_as_a_record(void **state)
{
	struct fixture *f = *state;
	struct pub_shmlog_view v;
	uint8_t *b;
	uint64_t fake;
	uint32_t n;

	/* A payload that carries what would be a valid record header for the
	 * next pass at its own offset + 64 (lap 2, length 64, type MSG). */
	b = pub_shmlog_claim(&f->w, PUB_SHMLOG_MSG, 0, 0, 512);
	memset(b, 0, 512);
	fake = (uint64_t)2 << 32 | 64;
	memcpy(b + 48, &fake, 8);
	b[56] = PUB_SHMLOG_MSG;
	pub_shmlog_commit(&f->w);
	assert_int_equal(pub_shmlog_next(&f->r, &v), 1);
	assert_int_equal(v.len, 512);
	pub_shmlog_consume(&f->r, &v);
	pub_shmlog_release(&f->r);
	/* Fill the pass to 32 bytes short of its end (3 x 1024 + 464 after the
	 * first 528), so the next 64-byte record pads and starts the next pass
	 * and the record after it starts at offset 64. */
	for (n = 1; n <= 3; n++) {
		assert_true(put(&f->w, n, 1000));
		get(&f->r, n, 1000);
	}
	assert_true(put(&f->w, n, 448));
	get(&f->r, n, 448);
	pub_shmlog_release(&f->r);
	assert_int_equal(f->w.tail, CAP - 32);
	n++;
	assert_true(put(&f->w, n, 48));
	get(&f->r, n, 48);
	assert_int_equal(f->r.pos, CAP + 64);
	/* Offset 64 holds the fake header from pass one, unless the writer
	 * zeroed it before committing the record in front of it. */
	assert_int_equal(pub_shmlog_next(&f->r, &v), 0);
}

/* Poke one value into the ring at offset off, as a hostile writer would. */
static void poke64(struct fixture *f, uint32_t off, uint64_t v)
{
	memcpy(f->map + PUB_SHMLOG_CTL_LEN + off, &v, 8);
}

static void hostile_commit_words_are_refused(void **state)
{
	struct fixture *f = *state;
	struct pub_shmlog_view v;
	uint8_t *rec = f->map + PUB_SHMLOG_CTL_LEN;
	static const uint64_t bad[] = {
		(uint64_t)1 << 32 | 8,		  /* shorter than a header */
		(uint64_t)1 << 32 | (MAXR + 8),	  /* longer than a record may be */
		(uint64_t)1 << 32 | 0xffffffffu,  /* 4 GiB */
		(uint64_t)3 << 32 | 64,		  /* a lap the reader is not on */
		(uint64_t)0xffffffffu << 32 | 64, /* likewise, and overflowing */
	};
	unsigned i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		poke64(f, 0, bad[i]);
		rec[8] = PUB_SHMLOG_MSG;
		assert_int_equal(pub_shmlog_next(&f->r, &v), -EPROTO);
	}
	/* A bad type, and a padding record that does not end the pass. */
	poke64(f, 0, (uint64_t)1 << 32 | 64);
	rec[8] = 9;
	assert_int_equal(pub_shmlog_next(&f->r, &v), -EPROTO);
	rec[8] = PUB_SHMLOG_PAD;
	assert_int_equal(pub_shmlog_next(&f->r, &v), -EPROTO);
	/* A record that would cross the ring's end. */
	f->r.pos = CAP - 64;
	poke64(f, CAP - 64, (uint64_t)1 << 32 | 128);
	rec[CAP - 64 + 8] = PUB_SHMLOG_MSG;
	assert_int_equal(pub_shmlog_next(&f->r, &v), -EPROTO);
}

static void a_hostile_claim_is_not_a_partial_record(void **state)
{
	struct fixture *f = *state;

	atomic_store(&((struct pub_shmlog_ctl *)f->map)->claim, UINT64_MAX);
	assert_false(pub_shmlog_partial(&f->r));
	atomic_store(&((struct pub_shmlog_ctl *)f->map)->claim, 0);
	assert_false(pub_shmlog_partial(&f->r));
}

static void an_overwrite_log_laps_its_reader_and_says_so(void **state)
{
	struct fixture *f = *state;
	struct pub_shmlog_writer w;
	struct pub_shmlog_view v;
	uint32_t n;

	assert_int_equal(pub_shmlog_writer_init(&w, f->map, MAPSZ, true), 0);
	assert_true(put(&w, 0, 100));
	assert_int_equal(pub_shmlog_next(&f->r, &v), 1);
	assert_false(pub_shmlog_lapped(&f->r, v.pos));
	/* The writer never waits for this reader; after a pass the record the
	 * reader holds is gone, and it can tell. */
	for (n = 1; n < 40; n++)
		assert_true(put(&w, n, 100));
	assert_true(pub_shmlog_lapped(&f->r, v.pos));
}

/* ---- a writer and a reader on two threads ---- */

#define STRESS_N 300000u

static void *stress_writer(void *arg)
{
	struct pub_shmlog_writer *w = arg;
	uint32_t n, len;

	for (n = 0; n < STRESS_N; n++) {
		len = n % 61 * 13 % (MAXR - PUB_SHMLOG_HDR_LEN);
		while (!put(w, n, len))
			; /* spin: the reader frees room */
	}
	return NULL;
}

static void a_writer_and_a_reader_on_two_threads_agree(void **state)
{
	struct fixture *f = *state;
	struct pub_shmlog_view v;
	pthread_t t;
	uint32_t n = 0, i, len;
	int r;

	assert_int_equal(pthread_create(&t, NULL, stress_writer, &f->w), 0);
	while (n < STRESS_N) {
		r = pub_shmlog_next(&f->r, &v);
		assert_true(r >= 0);
		if (!r) {
			pub_shmlog_release(&f->r); /* give back what was read before waiting */
			continue;
		}
		len = n % 61 * 13 % (MAXR - PUB_SHMLOG_HDR_LEN);
		assert_int_equal(v.aux, n);
		assert_int_equal(v.len, len);
		for (i = 0; i < len; i += 97)
			assert_int_equal(v.body[i], (uint8_t)(n * 31 + i));
		pub_shmlog_consume(&f->r, &v);
		if (++n % 8 == 0)
			pub_shmlog_release(&f->r);
	}
	pthread_join(t, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(format_refuses_bad_geometry),
		cmocka_unit_test_setup_teardown(records_arrive_in_order_across_many_passes, setup, teardown),
		cmocka_unit_test_setup_teardown(a_full_log_makes_the_writer_wait_for_the_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(release_to_gives_back_only_up_to_its_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(the_writer_wakes_only_a_reader_that_sleeps, setup, teardown),
		cmocka_unit_test_setup_teardown(a_writer_dying_mid_record_costs_that_record_only, setup, teardown),
		cmocka_unit_test_setup_teardown(a_dying_writer_past_the_ring_end_is_seen_too, setup, teardown),
		cmocka_unit_test_setup_teardown(stale_bytes_of_an_earlier_pass_are_never_read_as_a_record, setup,
						teardown),
		cmocka_unit_test_setup_teardown(hostile_commit_words_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(a_reader_position_that_lies_gives_no_room, setup, teardown),
		cmocka_unit_test_setup_teardown(a_hostile_claim_is_not_a_partial_record, setup, teardown),
		cmocka_unit_test_setup_teardown(an_overwrite_log_laps_its_reader_and_says_so, setup, teardown),
		cmocka_unit_test_setup_teardown(a_writer_and_a_reader_on_two_threads_agree, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
