/* SPDX-License-Identifier: MIT */
/*
 * A subscriber's reader of a direct log (common/directlog.c) against a real
 * writer (common/shmlog.c, overwrite: it never waits for the reader):
 * messages in order, a writer that laps the reader (resync at the writer's
 * marks or its last record, lost counted exactly from the sequence numbers,
 * no overwritten bytes returned, even when the overwrite comes in the middle
 * of the copy), a message in pieces, a buffer too small, what no honest
 * writer writes, the last look before sleeping, a seeded model of random
 * interleavings, and a writer and a reader on two threads.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "deliverlog_format.h"
#include "directlog.h"
#include "shmlog.h"

#define CAP	  4096u
#define MAXR	  1024u
#define MAPSZ	  (PUB_SHMLOG_CTL_LEN + CAP)
#define GROUP	  "grp"
#define GLEN	  3u
#define SRC	  77u
#define MAX_TOTAL (1u << 20)
/* The largest payload one record carries: header, deliver head, group. */
#define MAX_ONE (MAXR - PUB_SHMLOG_HDR_LEN - PUB_DELIVERLOG_HEAD - GLEN)
/* A later piece has no group. */
#define MAX_LATER (MAXR - PUB_SHMLOG_HDR_LEN - PUB_DELIVERLOG_HEAD)
/* A payload whose record is 256 bytes: 16 records fill the ring, no padding. */
#define LEN256 (256u - PUB_SHMLOG_HDR_LEN - PUB_DELIVERLOG_HEAD - GLEN)

struct fixture {
	uint8_t *map;
	struct pub_shmlog_writer w;
	bool marks;	   /* the writer marks, as libpub's does (directlog.h) */
	uint64_t mark_seg; /* its last marked sixteenth */
	struct pub_direct_reader d;
	uint8_t buf[MAX_ONE];
};

/* A reader that never returns is a failure, not a hung test run. */
static void on_alarm(int sig)
{
	static const char msg[] = "test_directlog: timed out: a reader call that never returns\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static void reset(struct fixture *f)
{
	memset(f->map, 0, MAPSZ);
	assert_int_equal(pub_shmlog_format(f->map, MAPSZ, CAP, MAXR, 0), 0);
	assert_int_equal(pub_shmlog_writer_init(&f->w, f->map, MAPSZ, true), 0);
	assert_int_equal(pub_direct_reader_init(&f->d, f->map, MAPSZ, CAP, MAXR, 0, GROUP, GLEN), 0);
	f->marks = true;
	f->mark_seg = UINT64_MAX;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->map = aligned_alloc(64, MAPSZ);
	if (!f->map)
		return -1;
	reset(f);
	*state = f;
	alarm(30);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	alarm(0);
	free(f->map);
	free(f);
	return 0;
}

static struct pub_shmlog_ctl *ctl(struct fixture *f)
{
	return (struct pub_shmlog_ctl *)f->map;
}

static uint8_t pat(uint64_t seq, uint32_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + 1);
}

/* Claim one record of message seq (total bytes in all): the piece at
 * payload offset off, len bytes, filled with the first fill bytes of its
 * pattern. Returns the body; the caller commits. */
static uint8_t *piece_open(struct fixture *f, uint64_t seq, uint32_t total, uint32_t off, uint32_t len, bool more,
			   const char *group, uint8_t glen, uint32_t fill)
{
	uint8_t g = off ? 0 : glen;
	uint32_t head = PUB_DELIVERLOG_HEAD + g, i;
	uint8_t *b = pub_shmlog_claim(&f->w, PUB_SHMLOG_MSG, more ? PUB_SHMLOG_F_MORE : 0, total, head + len);

	assert_non_null(b);
	/* A later piece carries no source, as libpub writes it. */
	assert_int_equal(pub_deliverlog_put_head(b, g ? SRC : 0, seq, group, g), head);
	for (i = 0; i < fill; i++)
		b[head + i] = pat(seq, off + i);
	return b;
}

/* Commit the open record, and mark it as libpub's writer does. */
static void commit(struct fixture *f)
{
	pub_shmlog_commit(&f->w);
	if (f->marks)
		pub_direct_mark(f->map, CAP, atomic_load(&ctl(f)->latest), &f->mark_seg);
}

static void put_group(struct fixture *f, uint64_t seq, uint32_t len, const char *group, uint8_t glen)
{
	piece_open(f, seq, len, 0, len, false, group, glen, len);
	commit(f);
}

static void put(struct fixture *f, uint64_t seq, uint32_t len)
{
	put_group(f, seq, len, GROUP, GLEN);
}

static void put_piece(struct fixture *f, uint64_t seq, uint32_t total, uint32_t off, uint32_t len)
{
	piece_open(f, seq, total, off, len, off + len < total, GROUP, GLEN, len);
	commit(f);
}

/* All of a message in pieces of at most chunk bytes. */
static void put_pieces(struct fixture *f, uint64_t seq, uint32_t total, uint32_t chunk)
{
	uint32_t off, n;

	for (off = 0; off < total; off += n) {
		n = total - off < chunk ? total - off : chunk;
		put_piece(f, seq, total, off, n);
	}
}

static int next(struct fixture *f, size_t cap, uint32_t max_total, struct pub_direct_msg *m, size_t *need)
{
	return pub_direct_next(&f->d, f->buf, cap, max_total, m, need);
}

static void check_payload(const uint8_t *buf, uint64_t seq, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != pat(seq, i))
			fail_msg("message %llu byte %u: %#x, not %#x (torn or overwritten)", (unsigned long long)seq, i,
				 buf[i], pat(seq, i));
}

/* The next message is seq, a single record of len bytes. */
static void get(struct fixture *f, uint64_t seq, uint32_t len)
{
	struct pub_direct_msg m;
	size_t need = 0;

	assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), 1);
	assert_int_equal(m.seq, seq);
	assert_int_equal(m.len, len);
	check_payload(f->buf, seq, len);
}

static void nothing_new(struct fixture *f)
{
	struct pub_direct_msg m;
	size_t need = 0;

	assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), 0);
}

/* Bytes at ring offset off, as a hostile writer writes them. */
static void poke64(struct fixture *f, uint64_t pos, uint64_t v)
{
	memcpy(f->map + PUB_SHMLOG_CTL_LEN + (pos & (CAP - 1)), &v, 8);
}

static uint64_t peek64(struct fixture *f, uint64_t pos)
{
	uint64_t v;

	memcpy(&v, f->map + PUB_SHMLOG_CTL_LEN + (pos & (CAP - 1)), 8);
	return v;
}

/* ---- the tests ---- */

static void init_refuses_what_it_cannot_read(void **state)
{
	struct fixture *f = *state;
	struct pub_direct_reader d;

	assert_int_equal(pub_direct_reader_init(&d, f->map, MAPSZ, 0, MAXR, 0, GROUP, GLEN), -EPROTO);
	assert_int_equal(pub_direct_reader_init(&d, f->map, MAPSZ, CAP, MAXR, 0, GROUP, 0), -EPROTO);
	assert_int_equal(pub_direct_reader_init(&d, f->map, MAPSZ, CAP, MAXR, 8, GROUP, GLEN), -EPROTO);
	assert_int_equal(pub_direct_reader_init(&d, f->map, MAPSZ - 1, CAP, MAXR, 0, GROUP, GLEN), -EPROTO);
	assert_int_equal(pub_direct_reader_init(&d, f->map, MAPSZ, CAP * 2, MAXR, 0, GROUP, GLEN), -EPROTO);
	assert_int_equal(pub_direct_reader_init(&d, f->map, MAPSZ, CAP, MAXR, 64, GROUP, GLEN), 0);
	assert_int_equal(d.r.pos, 64);
	assert_false(d.synced);
	assert_int_equal(d.lost, 0);
}

static void messages_arrive_in_order_each_whole(void **state)
{
	struct fixture *f = *state;
	static const uint32_t lens[] = {0, 1, 15, 16, 100, MAX_ONE};
	uint32_t n, k, len;

	nothing_new(f);
	for (n = 0; n < 6; n++)
		put(f, n, lens[n]);
	for (n = 0; n < 6; n++)
		get(f, n, lens[n]);
	nothing_new(f);
	assert_int_equal(f->d.lost, 0);
	/* Many passes, sizes leaving every remainder at the ring's end (so
	 * padding of every length), two messages at a time. */
	for (n = 6; n < 3000; n += 2) {
		for (k = 0; k < 2; k++)
			put(f, n + k, (n + k) * 37 % (MAX_ONE + 1));
		for (k = 0; k < 2; k++) {
			len = (n + k) * 37 % (MAX_ONE + 1);
			get(f, n + k, len);
		}
		nothing_new(f);
	}
	assert_true(f->w.tail > 50ull * CAP);
	assert_int_equal(f->d.lost, 0);
	assert_true(f->d.synced);
	assert_int_equal(f->d.next_seq, 3000);
}

/* The writer comes as close as it may without touching the reader's
 * next record: nothing is lost. */
static void a_writer_right_behind_the_reader_costs_nothing(void **state)
{
	struct fixture *f = *state;
	uint64_t n;

	/* 16 records of 256 fill the ring: the 16th's next commit word is
	 * message 0's, so read that first. */
	for (n = 0; n < 15; n++)
		put(f, n, LEN256);
	get(f, 0, LEN256);
	put(f, 15, LEN256);
	assert_int_equal(f->w.tail, CAP);
	/* A 240-byte record over message 0's: it ends, with the commit word
	 * it zeroes, exactly where message 1 starts a pass later. */
	put(f, 16, LEN256 - 16);
	assert_int_equal(atomic_load(&ctl(f)->claim), f->d.r.pos + CAP);
	assert_true(pub_direct_ready(&f->d));
	for (n = 1; n < 16; n++)
		get(f, n, LEN256);
	get(f, 16, LEN256 - 16);
	nothing_new(f);
	assert_int_equal(f->d.lost, 0);
	assert_false(pub_direct_ready(&f->d));
}

static uint32_t len256(uint64_t seq)
{
	(void)seq;
	return LEN256;
}

static uint32_t len53(uint64_t seq)
{
	return (uint32_t)(seq * 53 % (MAX_ONE + 1));
}

static uint32_t len200(uint64_t seq)
{
	(void)seq;
	return 200;
}

static uint32_t len_torn(uint64_t seq)
{
	return seq <= 522 ? 200 : LEN256;
}

/*
 * After a lap: the reader starts again somewhere past prev (the last it
 * read), reads whole messages in order from there to last, and counts as
 * lost exactly those between prev and where it started again. Returns the
 * first it read.
 */
static uint64_t read_through(struct fixture *f, uint64_t prev, uint64_t last, uint32_t (*len_of)(uint64_t))
{
	struct pub_direct_msg m;
	uint64_t lost = f->d.lost, first, n;
	size_t need = 0;

	assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), 1);
	first = m.seq;
	assert_true(first > prev && first <= last);
	assert_int_equal(m.len, len_of(first));
	check_payload(f->buf, first, m.len);
	assert_int_equal(f->d.lost, lost + (first - prev - 1));
	for (n = first + 1; n <= last; n++)
		get(f, n, len_of(n));
	assert_int_equal(f->d.lost, lost + (first - prev - 1));
	return first;
}

/* Messages 0..16 of 256-byte records (one per sixteenth of the ring, so
 * each is marked), message 0 read: the 17th record zeroes message 1's
 * commit word (the reader's next record), and the writer's claim says so. */
static void lap_by_one_record(struct fixture *f)
{
	uint64_t n;

	for (n = 0; n < 15; n++)
		put(f, n, LEN256);
	get(f, 0, LEN256);
	put(f, 15, LEN256);
	put(f, 16, LEN256);
	assert_int_equal(peek64(f, f->d.r.pos), 0);
	assert_true(pub_direct_ready(&f->d)); /* a lap waits, though the commit word is 0 */
}

static void a_writer_that_laps_the_reader_costs_exactly_what_it_overwrote(void **state)
{
	struct fixture *f = *state;
	uint64_t n, last, first;

	/* A writer that does not mark: the reader starts again at the last
	 * message committed. */
	f->marks = false;
	lap_by_one_record(f);
	assert_int_equal(read_through(f, 0, 16, len256), 16);
	assert_int_equal(f->d.lost, 15); /* 1..15 */
	nothing_new(f);

	/* One that marks: at the oldest mark the writer is not about to write
	 * over (an eighth of the ring before its claim: 4368 - 3584 = 784),
	 * so the record at 1024, message 4. */
	reset(f);
	lap_by_one_record(f);
	assert_int_equal(read_through(f, 0, 16, len256), 4);
	assert_int_equal(f->d.lost, 3); /* 1..3 */
	nothing_new(f);
	assert_false(pub_direct_ready(&f->d));
	/* It goes on reading. */
	for (n = 17; n < 21; n++)
		put(f, n, 100 + (uint32_t)n);
	for (n = 17; n < 21; n++)
		get(f, n, 100 + (uint32_t)n);
	assert_int_equal(f->d.lost, 3);

	/* Lapped many times over, with sizes that pad: it keeps more than the
	 * last message, and counts all between. */
	for (n = 21; n < 521; n++)
		put(f, n, len53(n));
	first = read_through(f, 20, 520, len53);
	assert_true(first < 520);
	nothing_new(f);

	/* The writer in the middle of a record over the reader's next one,
	 * whose commit word still reads as it was (as if the reader loaded it
	 * before the writer zeroed it): its bytes are garbage now and must not
	 * come out. */
	put(f, 521, 200);
	put(f, 522, 200);
	uint64_t pos = f->d.r.pos, c = peek64(f, pos);
	for (n = 523; f->w.tail + 256 + 16 <= pos + CAP; n++)
		put(f, n, LEN256);
	last = n - 1;
	uint8_t *b = pub_shmlog_claim(&f->w, PUB_SHMLOG_MSG, 0, 300, PUB_DELIVERLOG_HEAD + GLEN + 300);
	assert_non_null(b);
	memset(b, 0xee, PUB_DELIVERLOG_HEAD + GLEN + 300);
	poke64(f, pos, c);
	assert_true(pub_direct_ready(&f->d));
	read_through(f, 520, last, len_torn);
	nothing_new(f);
	/* The writer finishes it; it is read whole. */
	pub_deliverlog_put_head(b, SRC, last + 1, GROUP, GLEN);
	for (uint32_t i = 0; i < 300; i++)
		b[PUB_DELIVERLOG_HEAD + GLEN + i] = pat(last + 1, i);
	commit(f);
	uint64_t lost = f->d.lost;
	get(f, last + 1, 300);
	assert_int_equal(f->d.lost, lost);
	nothing_new(f);
}

/* Marks are the writer's, and untrusted: one not on a 16-byte boundary,
 * not past the reader, past the last record, or one the writer is about
 * to write over is passed over; of the rest the oldest is taken. */
static void marks_that_cannot_be_right_are_passed_over(void **state)
{
	struct fixture *f = *state;
	static const struct {
		uint64_t mark[2];
		uint64_t first;
	} cases[] = {
		{{1024 + 8, 0}, 16}, /* off a boundary */
		{{256, 0}, 16},	     /* the reader's own position (lapped) */
		{{128, 0}, 16},	     /* behind it */
		{{4352, 0}, 16},     /* past the last record */
		{{768, 0}, 16},	     /* 3600 before the claim: about to go */
		{{1024, 0}, 4},	     /* 3344 before it: kept */
		{{2048, 1024}, 4},   /* the oldest of two */
		{{3840, 0}, 15},
	};
	_Atomic uint64_t *marks;
	unsigned i, k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		reset(f);
		f->marks = false;
		lap_by_one_record(f);
		marks = pub_direct_marks(f->map);
		for (k = 0; k < PUB_DIRECT_NMARKS; k++)
			atomic_store(&marks[k], 0);
		atomic_store(&marks[3], cases[i].mark[0]);
		atomic_store(&marks[11], cases[i].mark[1]);
		assert_int_equal(read_through(f, 0, 16, len256), cases[i].first);
		nothing_new(f);
	}
}

static void a_message_in_pieces_is_passed_over_and_not_lost(void **state)
{
	struct fixture *f = *state;
	struct pub_direct_msg m;
	size_t need = 0;
	uint32_t total = 2500;

	put(f, 0, 10);
	get(f, 0, 10);
	put_piece(f, 1, total, 0, MAX_ONE);
	assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), 2);
	assert_int_equal(m.seq, 1);
	assert_int_equal(m.len, total);
	/* Its later pieces, as they come: not over until another message's
	 * first piece is there. */
	assert_int_equal(pub_direct_skip_pieces(&f->d), 0);
	put_piece(f, 1, total, MAX_ONE, MAX_ONE);
	assert_int_equal(pub_direct_skip_pieces(&f->d), 0);
	put_piece(f, 1, total, 2 * MAX_ONE, total - 2 * MAX_ONE);
	assert_int_equal(pub_direct_skip_pieces(&f->d), 0);
	assert_false(pub_direct_ready(&f->d));
	put(f, 2, 50);
	assert_int_equal(pub_direct_skip_pieces(&f->d), 1);
	assert_int_equal(pub_direct_skip_pieces(&f->d), 1); /* still there, not consumed */
	get(f, 2, 50);
	assert_int_equal(f->d.lost, 0);

	/* Without skip_pieces: pub_direct_next passes over the later pieces. */
	put_pieces(f, 3, 3000, 700);
	put(f, 4, 60);
	assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), 2);
	assert_int_equal(m.seq, 3);
	assert_int_equal(m.len, 3000);
	get(f, 4, 60);
	assert_int_equal(f->d.lost, 0);
	nothing_new(f);

	/* Longer than the ring: the writer writes over its own first pieces
	 * before the reader gets to them. The reader lands on the message
	 * after it; the one in pieces was lapped past, never returned: lost. */
	put_pieces(f, 5, 3 * CAP, MAX_ONE);
	put(f, 6, 70);
	get(f, 6, 70);
	assert_int_equal(f->d.lost, 1);
	/* Its later pieces only, the first before where the reader stood:
	 * passed over, and lost too. */
	put_pieces(f, 7, 3 * CAP, MAX_ONE);
	f->d.r.pos = atomic_load(&ctl(f)->latest); /* its last piece */
	put(f, 8, 80);
	get(f, 8, 80);
	assert_int_equal(f->d.lost, 2);
	nothing_new(f);

	/* A lap while its pieces are passed over carries the reader past it. */
	put_piece(f, 9, 5000, 0, MAX_ONE);
	assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), 2);
	assert_int_equal(m.seq, 9);
	put_piece(f, 9, 5000, MAX_ONE, MAX_ONE);
	for (uint64_t n = 10; n < 40; n++)
		put(f, n, 200);
	assert_int_equal(pub_direct_skip_pieces(&f->d), 1);
	assert_true(read_through(f, 9, 39, len200) > 10);
	nothing_new(f);
}

static void a_message_larger_than_the_buffer_says_how_much_room_it_needs(void **state)
{
	struct fixture *f = *state;
	struct pub_direct_msg m;
	size_t need = 0;
	uint64_t pos;

	put(f, 0, 500);
	put(f, 1, 0);
	pos = f->d.r.pos;
	assert_int_equal(next(f, 499, MAX_TOTAL, &m, &need), -ENOSPC);
	assert_int_equal(need, 500);
	assert_int_equal(f->d.r.pos, pos);
	need = 0;
	assert_int_equal(next(f, 0, MAX_TOTAL, &m, &need), -ENOSPC);
	assert_int_equal(need, 500);
	assert_false(f->d.synced);
	assert_int_equal(next(f, 500, MAX_TOTAL, &m, &need), 1);
	assert_int_equal(m.seq, 0);
	assert_int_equal(m.len, 500);
	check_payload(f->buf, 0, 500);
	/* An empty message needs no room. */
	assert_int_equal(next(f, 0, MAX_TOTAL, &m, &need), 1);
	assert_int_equal(m.seq, 1);
	assert_int_equal(m.len, 0);
	assert_int_equal(f->d.lost, 0);
	/* A message in pieces is not copied: no room needed. */
	put_pieces(f, 2, 2000, MAX_ONE);
	assert_int_equal(next(f, 16, MAX_TOTAL, &m, &need), 2);
	assert_int_equal(m.len, 2000);
}

/* Each case from a fresh log; the reader must say -EPROTO (never 0, never
 * a message). */
#define expect_eproto(f, max_total) expect_eproto_at(f, max_total, __LINE__)
static void expect_eproto_at(struct fixture *f, uint32_t max_total, int line)
{
	struct pub_direct_msg m;
	size_t need = 0;
	int r = next(f, sizeof(f->buf), max_total, &m, &need);

	if (r != -EPROTO)
		fail_msg("line %d: pub_direct_next said %d, not -EPROTO", line, r);
}

static void what_no_honest_writer_writes_is_refused(void **state)
{
	struct fixture *f = *state;
	uint8_t *rec = f->map + PUB_SHMLOG_CTL_LEN;
	uint8_t *b;

	/* Another group's name, of our group's length and of another. */
	put_group(f, 0, 10, "grx", 3);
	expect_eproto(f, MAX_TOTAL);
	reset(f);
	put_group(f, 0, 10, "gr", 2);
	expect_eproto(f, MAX_TOTAL);
	reset(f);
	put_group(f, 0, 10, "grpp", 4);
	expect_eproto(f, MAX_TOTAL);

	/* Bad lengths in the commit word: shorter than a header, longer than
	 * a record, crossing the ring's end. */
	reset(f);
	put(f, 0, 10);
	poke64(f, 0, (uint64_t)1 << 32 | 8);
	expect_eproto(f, MAX_TOTAL);
	poke64(f, 0, (uint64_t)1 << 32 | (MAXR + 16));
	expect_eproto(f, MAX_TOTAL);
	poke64(f, 0, (uint64_t)1 << 32 | 0xfffffff0u);
	expect_eproto(f, MAX_TOTAL);
	reset(f);
	f->d.r.pos = CAP - 64;
	poke64(f, CAP - 64, (uint64_t)1 << 32 | 128);
	rec[CAP - 64 + 8] = PUB_SHMLOG_MSG;
	expect_eproto(f, MAX_TOTAL);

	/* A body too short for a deliver log's head, and a group length past
	 * the body. */
	reset(f);
	b = pub_shmlog_claim(&f->w, PUB_SHMLOG_MSG, 0, 0, PUB_DELIVERLOG_HEAD - 1);
	memset(b, 0, PUB_DELIVERLOG_HEAD - 1);
	commit(f);
	expect_eproto(f, MAX_TOTAL);
	reset(f);
	b = pub_shmlog_claim(&f->w, PUB_SHMLOG_MSG, 0, 0, PUB_DELIVERLOG_HEAD + 2);
	pub_deliverlog_put_head(b, SRC, 0, GROUP, 0);
	b[16] = GLEN; /* 3 bytes of group in a 2-byte rest */
	commit(f);
	expect_eproto(f, MAX_TOTAL);

	/* A garbage commit word: a lap the reader is not on, and a type no
	 * one writes; a padding record that does not end the pass. */
	reset(f);
	put(f, 0, 10);
	poke64(f, 0, (uint64_t)7 << 32 | 64);
	expect_eproto(f, MAX_TOTAL);
	poke64(f, 0, (uint64_t)1 << 32 | 64);
	rec[8] = 9;
	expect_eproto(f, MAX_TOTAL);
	rec[8] = PUB_SHMLOG_PAD;
	expect_eproto(f, MAX_TOTAL);
	rec[8] = PUB_SHMLOG_END;
	expect_eproto(f, MAX_TOTAL);
	poke64(f, 0, (uint64_t)1 << 32 | PUB_SHMLOG_HDR_LEN); /* a well-formed END: not in a direct log */
	expect_eproto(f, MAX_TOTAL);

	/* A whole message's length that does not match its record, a flag no
	 * one writes, a group's mark (no message). */
	reset(f);
	b = piece_open(f, 0, 10, 0, 10, false, GROUP, GLEN, 10);
	f->w.open->aux = 11;
	commit(f);
	expect_eproto(f, MAX_TOTAL);
	reset(f);
	b = piece_open(f, 0, 10, 0, 10, false, GROUP, GLEN, 10);
	f->w.open->flags = 0x8;
	commit(f);
	expect_eproto(f, MAX_TOTAL);
	reset(f);
	b = piece_open(f, 0, 0, 0, 0, false, GROUP, GLEN, 0);
	f->w.open->flags = PUB_DELIVERLOG_F_MOVE;
	commit(f);
	expect_eproto(f, MAX_TOTAL);

	/* Longer than max_total, whole or in pieces; at max_total it is read. */
	reset(f);
	put(f, 0, 300);
	expect_eproto(f, 299);
	reset(f);
	put(f, 0, 300);
	struct pub_direct_msg m;
	size_t need = 0;
	assert_int_equal(next(f, sizeof(f->buf), 300, &m, &need), 1);
	reset(f);
	put_pieces(f, 0, 3000, MAX_ONE);
	expect_eproto(f, 2999);

	/* A writer that says it lapped us, with a last record that is no
	 * record boundary, or behind us. */
	reset(f);
	put(f, 0, 10);
	atomic_store(&ctl(f)->claim, 2 * CAP);
	atomic_store(&ctl(f)->latest, 2 * CAP - 8);
	expect_eproto(f, MAX_TOTAL);
	reset(f);
	put(f, 0, 10);
	f->d.r.pos = CAP + 64;
	atomic_store(&ctl(f)->claim, 2 * CAP + 128);
	atomic_store(&ctl(f)->latest, CAP + 32);
	expect_eproto(f, MAX_TOTAL);
	assert_int_equal(pub_direct_skip_pieces(&f->d), -EPROTO);
}

/* Stack bytes of a given value where pub_direct_next's frame will be: what
 * the reader decides must not depend on what lay there before. */
static __attribute__((noinline)) void scribble_stack(uint8_t byte)
{
	volatile uint8_t junk[16384];
	size_t i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = byte;
}

/*
 * A garbage commit word where the reader's next record starts, the
 * writer's claim honest (a pass or more on, not lapping the reader): that
 * is the writer's fault, -EPROTO, whatever was on the stack.
 */
static void a_garbage_commit_word_past_the_first_pass_is_refused(void **state)
{
	struct fixture *f = *state;
	static const uint64_t bad[] = {(uint64_t)3 << 32 | 8, (uint64_t)9 << 32 | 64, 0xffffffffffffffffull};
	static const uint8_t fills[] = {0x00, 0xff, 0x5a};
	struct pub_direct_msg m;
	size_t need = 0;
	unsigned i, j;
	uint64_t n;
	int r;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (j = 0; j < sizeof(fills); j++) {
			reset(f);
			for (n = 0; n < 90; n++) {
				put(f, n, 100);
				get(f, n, 100);
			}
			put(f, n, 100);
			assert_true(f->d.r.pos > 2 * CAP);
			assert_false(pub_shmlog_lapped(&f->d.r, f->d.r.pos));
			poke64(f, f->d.r.pos, bad[i]);
			scribble_stack(fills[j]);
			r = pub_direct_next(&f->d, f->buf, sizeof(f->buf), MAX_TOTAL, &m, &need);
			assert_int_equal(r, -EPROTO);
			assert_int_equal(pub_direct_skip_pieces(&f->d), -EPROTO);
		}
	}
}

/* ---- a record written over while the reader copies it out ---- */

/*
 * The writer's overwrite, made to happen in the middle of the reader's
 * copy: the ring's second page is inaccessible, the record's payload runs
 * into it (its header, deliver head and group in the first), so the copy
 * faults there; the fault handler lets the writer lap the reader (a whole
 * ring pass of other messages) and opens the page, and the copy goes on
 * over the writer's new bytes. The reader must see, after its copy, that
 * what it copied was written over.
 */
#define TCAP  8192u
#define TMAXR 2048u
#define TPAGE 4096u

static struct {
	uint8_t *map;
	struct pub_shmlog_writer w;
	uint64_t seg, seq;
	volatile sig_atomic_t faults;
} tear;

static void tear_put(uint32_t len)
{
	uint8_t *b = pub_shmlog_claim(&tear.w, PUB_SHMLOG_MSG, 0, len, PUB_DELIVERLOG_HEAD + GLEN + len);
	uint32_t head = pub_deliverlog_put_head(b, SRC, tear.seq, GROUP, GLEN), i;

	for (i = 0; i < len; i++)
		b[head + i] = pat(tear.seq, i);
	pub_shmlog_commit(&tear.w);
	pub_direct_mark(tear.map, TCAP, atomic_load(&((struct pub_shmlog_ctl *)tear.map)->latest), &tear.seg);
	tear.seq++;
}

static void on_tear_fault(int sig, siginfo_t *si, void *uc)
{
	uint8_t *page = tear.map + PUB_SHMLOG_CTL_LEN + TPAGE;
	unsigned n;

	(void)uc;
	if ((uint8_t *)si->si_addr < page || (uint8_t *)si->si_addr >= page + TPAGE || tear.faults) {
		signal(sig, SIG_DFL); /* not ours: fault again, and die of it */
		return;
	}
	tear.faults++;
	mprotect(page, TPAGE, PROT_READ | PROT_WRITE);
	for (n = 0; n < 12; n++)
		tear_put(900 + n);
}

static void a_record_written_over_while_copied_out_is_not_returned(void **state)
{
	size_t len = PUB_SHMLOG_CTL_LEN + TCAP;
	struct sigaction sa = {.sa_sigaction = on_tear_fault, .sa_flags = SA_SIGINFO}, old;
	struct pub_direct_reader d;
	struct pub_direct_msg m;
	uint8_t *buf = malloc(TMAXR);
	uint64_t first, lost;
	size_t need = 0;
	int r;

	(void)state;
	tear.map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(tear.map != MAP_FAILED && buf);
	tear.seg = UINT64_MAX;
	tear.seq = 0;
	tear.faults = 0;
	assert_int_equal(pub_shmlog_format(tear.map, len, TCAP, TMAXR, 0), 0);
	assert_int_equal(pub_shmlog_writer_init(&tear.w, tear.map, len, true), 0);
	assert_int_equal(pub_direct_reader_init(&d, tear.map, len, TCAP, TMAXR, 0, GROUP, GLEN), 0);
	/* Two records of 2016 bytes, then message 2 at 4032: its header,
	 * deliver head and group end at 4068, its payload runs to 5068. */
	tear_put(2016 - 36);
	tear_put(2016 - 36);
	tear_put(1000);
	for (r = 0; r < 2; r++) {
		assert_int_equal(pub_direct_next(&d, buf, TMAXR, MAX_TOTAL, &m, &need), 1);
		assert_int_equal(m.seq, (uint64_t)r);
	}
	assert_int_equal(d.r.pos, 4032);
	assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
	assert_int_equal(mprotect(tear.map + PUB_SHMLOG_CTL_LEN + TPAGE, TPAGE, PROT_NONE), 0);
	r = pub_direct_next(&d, buf, TMAXR, MAX_TOTAL, &m, &need);
	sigaction(SIGSEGV, &old, NULL);
	assert_int_equal(tear.faults, 1); /* the overwrite came mid-copy */
	assert_int_equal(r, 1);
	first = m.seq;
	assert_true(first > 2 && first < tear.seq);
	assert_int_equal(m.len, 900 + (first - 3));
	check_payload(buf, first, m.len);
	assert_int_equal(d.lost, first - 2);
	lost = d.lost;
	while (m.seq + 1 < tear.seq) {
		assert_int_equal(pub_direct_next(&d, buf, TMAXR, MAX_TOTAL, &m, &need), 1);
		check_payload(buf, m.seq, m.len);
	}
	assert_int_equal(d.lost, lost);
	munmap(tear.map, len);
	free(buf);
}

static void ready_says_whether_a_record_or_a_lap_waits(void **state)
{
	struct fixture *f = *state;
	uint8_t *b;

	assert_false(pub_direct_ready(&f->d));
	put(f, 0, 10);
	assert_true(pub_direct_ready(&f->d));
	assert_true(pub_direct_ready(&f->d)); /* looking does not read */
	get(f, 0, 10);
	assert_false(pub_direct_ready(&f->d));
	/* Claimed and being written: not yet. */
	b = piece_open(f, 1, 20, 0, 20, false, GROUP, GLEN, 20);
	(void)b;
	assert_false(pub_direct_ready(&f->d));
	commit(f);
	assert_true(pub_direct_ready(&f->d));
	get(f, 1, 20);
	assert_false(pub_direct_ready(&f->d));
	/* A lap with a zero commit word at our position: the claim alone. */
	atomic_store(&ctl(f)->claim, f->d.r.pos + CAP + 16);
	assert_int_equal(peek64(f, f->d.r.pos), 0);
	assert_true(pub_direct_ready(&f->d));
	atomic_store(&ctl(f)->claim, f->d.r.pos + CAP);
	assert_false(pub_direct_ready(&f->d));
}

/* ---- the model: random sizes, random interleavings ---- */

static uint64_t rng(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

struct model {
	struct fixture *f;
	uint64_t rs;
	/* The writer: message seq (w_seq) of w_total bytes, w_off written;
	 * a record open (claimed, partly filled) at body w_body. */
	uint64_t w_seq, written;
	uint32_t w_total, w_off;
	bool w_busy, w_pieces;
	uint8_t *w_body;
	uint32_t w_head, w_len, w_filled, w_piece_off;
	uint32_t *lens;
	bool *pieces;
	size_t nmax;
	/* The reader. */
	uint8_t *buf;
	size_t cap;
	uint64_t returned, last_seq;
	bool have_last, skipping;
};

static uint32_t pick_total(struct model *mo, bool *pieces)
{
	uint64_t r = rng(&mo->rs) % 100;

	*pieces = false;
	if (r < 40)
		return (uint32_t)(rng(&mo->rs) % 65);
	if (r < 70)
		return (uint32_t)(rng(&mo->rs) % (MAX_ONE + 1));
	if (r < 80)
		return MAX_ONE;
	*pieces = true;
	return MAX_ONE + 1 + (uint32_t)(rng(&mo->rs) % (3 * CAP));
}

/* One writer step: finish the open record, or write (maybe half of) the
 * next record. */
static void writer_step(struct model *mo)
{
	uint32_t i, len;
	bool more;

	if (mo->w_body) {
		for (i = mo->w_filled; i < mo->w_len; i++)
			mo->w_body[mo->w_head + i] = pat(mo->w_seq, mo->w_piece_off + i);
		commit(mo->f);
		mo->w_body = NULL;
		if (mo->w_off == mo->w_total) {
			mo->w_busy = false;
			mo->written = ++mo->w_seq;
		}
		return;
	}
	if (!mo->w_busy) {
		assert_true(mo->w_seq < mo->nmax);
		mo->w_total = pick_total(mo, &mo->w_pieces);
		mo->lens[mo->w_seq] = mo->w_total;
		mo->pieces[mo->w_seq] = mo->w_pieces;
		mo->w_off = 0;
		mo->w_busy = true;
	}
	if (!mo->w_pieces) {
		len = mo->w_total;
	} else {
		uint32_t max = mo->w_off ? MAX_LATER : MAX_ONE;

		len = 1 + (uint32_t)(rng(&mo->rs) % max);
		if (len > mo->w_total - mo->w_off)
			len = mo->w_total - mo->w_off;
		if (!mo->w_off && len == mo->w_total)
			len--; /* a first piece is never the whole */
	}
	more = mo->w_off + len < mo->w_total;
	mo->w_piece_off = mo->w_off;
	mo->w_head = PUB_DELIVERLOG_HEAD + (mo->w_off ? 0 : GLEN);
	mo->w_len = len;
	/* Now and then the record stays half-written for a while. */
	mo->w_filled = rng(&mo->rs) % 4 ? len : (uint32_t)(rng(&mo->rs) % (len + 1));
	mo->w_body = piece_open(mo->f, mo->w_seq, mo->w_total, mo->w_off, len, more, GROUP, GLEN, mo->w_filled);
	mo->w_off += len;
	if (mo->w_filled == len)
		writer_step(mo); /* commit now */
}

static void returned(struct model *mo, uint64_t seq)
{
	struct pub_direct_reader *d = &mo->f->d;

	if (mo->have_last)
		assert_true(seq > mo->last_seq);
	assert_true(seq <= mo->w_seq);
	mo->returned++;
	mo->last_seq = seq;
	mo->have_last = true;
	/* Each message up to this one returned or counted lost, once. */
	assert_int_equal(mo->returned + d->lost, seq + 1);
}

/* One reader step; returns what pub_direct_next said (or 3 for a
 * skip_pieces step). */
static int reader_step(struct model *mo)
{
	struct pub_direct_reader *d = &mo->f->d;
	struct pub_direct_msg m;
	size_t need = 0;
	int r;

	if (mo->skipping) {
		r = pub_direct_skip_pieces(d);
		assert_true(r == 0 || r == 1);
		if (r == 1)
			mo->skipping = false;
		return 3;
	}
	r = pub_direct_next(d, mo->buf, mo->cap, MAX_TOTAL, &m, &need);
	switch (r) {
	case -ENOSPC:
		assert_true(need > mo->cap && need <= MAX_ONE);
		mo->buf = realloc(mo->buf, need);
		assert_non_null(mo->buf);
		mo->cap = need;
		break;
	case 0:
		break;
	case 1:
		returned(mo, m.seq);
		assert_false(mo->pieces[m.seq]);
		assert_int_equal(m.len, mo->lens[m.seq]);
		assert_true(m.len <= mo->cap);
		check_payload(mo->buf, m.seq, m.len);
		break;
	case 2:
		returned(mo, m.seq);
		assert_true(mo->pieces[m.seq]);
		assert_int_equal(m.len, mo->lens[m.seq]);
		mo->skipping = rng(&mo->rs) % 2; /* or pub_direct_next passes over them */
		break;
	default:
		fail_msg("pub_direct_next: %d", r);
	}
	return r;
}

/* The writer idle and the reader with nothing new: the last message was
 * returned and every one before it returned or counted lost, unless the
 * last was in pieces: a reader lapped past it (started again at a later
 * piece) counts what it lost at the next message it reads. */
static void check_caught_up(struct model *mo)
{
	if (mo->w_busy || mo->w_body || mo->skipping || !mo->written)
		return;
	if (!mo->pieces[mo->written - 1]) {
		assert_int_equal(mo->last_seq, mo->written - 1);
		assert_int_equal(mo->returned + mo->f->d.lost, mo->written);
	} else {
		assert_int_equal(mo->returned + mo->f->d.lost, mo->last_seq + 1);
	}
}

static void run_model(struct fixture *f, uint64_t seed, unsigned steps)
{
	struct model mo = {.f = f, .rs = seed * 0x9e3779b97f4a7c15ull + 1};
	unsigned s, k, n;
	int r;

	reset(f);
	f->marks = seed % 4 != 0; /* a writer that does not mark, now and then */
	mo.nmax = (size_t)steps * 80 + 16;
	mo.lens = calloc(mo.nmax, sizeof(*mo.lens));
	mo.pieces = calloc(mo.nmax, sizeof(*mo.pieces));
	mo.cap = 32;
	mo.buf = malloc(mo.cap);
	assert_true(mo.lens && mo.pieces && mo.buf);
	/* The reader knows where the sequence stands once it read one. */
	put(f, 0, 5);
	mo.lens[0] = 5;
	mo.written = mo.w_seq = 1;
	assert_int_equal(reader_step(&mo), 1);

	for (s = 0; s < steps; s++) {
		if (rng(&mo.rs) % 2) {
			/* Bursts short and long (the long ones lap). */
			n = 1 + (unsigned)(rng(&mo.rs) % (rng(&mo.rs) % 3 ? 4 : 64));
			for (k = 0; k < n; k++)
				writer_step(&mo);
		} else {
			n = 1 + (unsigned)(rng(&mo.rs) % 8);
			for (k = 0; k < n; k++) {
				r = reader_step(&mo);
				if (r == 0) {
					check_caught_up(&mo);
					break;
				}
			}
		}
	}
	/* The writer finishes, writes one more, and the reader catches up. */
	while (mo.w_busy || mo.w_body)
		writer_step(&mo);
	put(f, mo.w_seq, 7);
	mo.lens[mo.w_seq] = 7;
	mo.pieces[mo.w_seq] = false;
	mo.written = ++mo.w_seq;
	for (k = 0; k < 10000; k++) {
		r = reader_step(&mo);
		if (r == 0)
			break;
	}
	assert_int_equal(r, 0);
	check_caught_up(&mo);
	assert_int_equal(mo.last_seq, mo.written - 1);
	assert_int_equal(mo.returned + f->d.lost, mo.written);
	/* Laps did happen, and messages came through. */
	assert_true(f->d.lost > 0);
	assert_true(mo.returned > mo.written / 20);
	free(mo.lens);
	free(mo.pieces);
	free(mo.buf);
}

static void a_random_model_of_writer_and_reader_agrees(void **state)
{
	uint64_t seed;

	for (seed = 1; seed <= 40; seed++)
		run_model(*state, seed, 4000);
}

/* ---- what a reader that does not read surely lost (seq marks) ---- */

/*
 * pubd notes where each message begins as it reads it (every message,
 * before the writer may write over it); for a reader that stopped at seq
 * `at`, the messages it surely lost are those whose records begin before
 * the writer's claim less the ring. The bound never exceeds the truth, is
 * short of it by no more than the messages of one sixty-fourth of the ring,
 * and never exceeds what the reader counts itself when it reads again.
 */
static void a_reader_that_does_not_read_is_counted_what_it_surely_lost(void **state)
{
	struct fixture *f = *state;
	struct pub_direct_seqmarks k;
	uint64_t *pos = calloc(20000, sizeof(*pos)), n, at, claim, below, truth, bound, near, i;
	uint64_t rs = 12345;
	unsigned checks = 0, lapped = 0;

	assert_non_null(pos);
	pub_direct_seqmarks_init(&k, CAP);
	assert_int_equal(k.shift, 6);				      /* 4096 / 64 */
	assert_int_equal(pub_direct_seqmarks_lost(&k, 100000, 0), 0); /* nothing noted: nothing known */
	f->marks = true;
	at = 0;
	for (n = 0; n < 20000; n++) {
		uint32_t len = (uint32_t)(rng(&rs) % (rng(&rs) % 4 ? 200 : MAX_ONE + 1));

		put(f, n, len);
		pos[n] = atomic_load(&ctl(f)->latest);
		pub_direct_seqmarks_note(&k, pos[n], n);
		if (n % 37)
			continue;
		/* The reader at `at`, as it stands. */
		claim = atomic_load(&ctl(f)->claim);
		below = claim > CAP ? claim - CAP : 0;
		/* Short of the truth by the lost messages that share a
		 * sixty-fourth with the last one lost, at most. */
		for (truth = 0, i = at; i <= n && pos[i] < below; i++)
			truth++;
		for (near = 0, i = at + truth; i > at && pos[i - 1] >> k.shift == pos[at + truth - 1] >> k.shift; i--)
			near++;
		bound = pub_direct_seqmarks_lost(&k, claim, at);
		if (bound > truth || truth - bound > near)
			fail_msg("reader at %llu, claim %llu: bound %llu, truth %llu, %llu in the last one's "
				 "sixty-fourth",
				 (unsigned long long)at, (unsigned long long)claim, (unsigned long long)bound,
				 (unsigned long long)truth, (unsigned long long)near);
		checks++;
		lapped += truth > 0;
		/* Now and then the reader reads again: what it counts lost is no
		 * less than the bound was. */
		if (rng(&rs) % 5 == 0) {
			uint64_t lost0 = f->d.lost;
			struct pub_direct_msg m;
			size_t need;
			int r;

			if (!f->d.synced)
				pub_direct_reader_expect(&f->d, 0);
			while ((r = next(f, sizeof(f->buf), MAX_TOTAL, &m, &need)) == 1)
				;
			assert_int_equal(r, 0);
			assert_true(f->d.lost - lost0 >= bound);
			at = f->d.next_seq;
			assert_int_equal(at, n + 1);
		}
	}
	assert_true(checks > 500);
	assert_true(lapped > checks / 2);
	/* The newest message is never lost. */
	assert_int_equal(pub_direct_seqmarks_lost(&k, claim, n), 0);
	free(pos);
}

/* The position word: the log's tag, and the seq's low bits, read against
 * pubd's next seq. */
static void a_position_word_is_read_for_its_own_log_only(void **state)
{
	uint64_t seq;

	(void)state;
	assert_true(pub_wake_at_seq(pub_wake_at_word(7, 90), 7, 100, &seq));
	assert_int_equal(seq, 90);
	/* Another log's word (one the slot's previous reader wrote late). */
	assert_false(pub_wake_at_seq(pub_wake_at_word(8, 90), 7, 100, &seq));
	/* A reader ahead of pubd (a lazily read log) is behind by nothing. */
	assert_true(pub_wake_at_seq(pub_wake_at_word(7, 130), 7, 100, &seq));
	assert_int_equal(seq, 100);
	/* Across the low bits' wrap. */
	uint64_t next = (UINT64_C(1) << PUB_WAKE_AT_SEQ_BITS) + 5;
	assert_true(pub_wake_at_seq(pub_wake_at_word(7, next - 10), 7, next, &seq));
	assert_int_equal(seq, next - 10);
	/* A word below seq 0 (a liar) says nothing is behind. */
	assert_true(pub_wake_at_seq(pub_wake_at_word(7, PUB_WAKE_AT_SEQ_MASK - 3), 7, 5, &seq));
	assert_int_equal(seq, 5);
}

/* ---- where a retired log ends (pubd's word in the reader's deliver log) ---- */

#define LOG_ID 9u

/*
 * The reader reads up to the end pubd set, and nothing after, whatever the
 * writer writes there (a writer whose right a reload took away, writing
 * on, with seqs of its choosing), whether the reader walks up to the end
 * or is lapped past it.
 */
static void a_retired_log_is_read_up_to_its_end_and_no_further(void **state)
{
	struct fixture *f = *state;
	_Atomic uint64_t word = pub_direct_end_word(LOG_ID, false, 0);
	uint64_t end, seq;

	pub_direct_reader_end_at(&f->d, &word, LOG_ID);
	for (seq = 0; seq < 7; seq++)
		put(f, seq, 40);
	end = f->w.tail; /* where pubd read up to when it retired the log */
	put(f, 7, 40);
	put(f, 0, 40); /* the writer's seq, of its choosing: the end is a position */
	for (seq = 0; seq < 4; seq++)
		get(f, seq, 40);
	atomic_store(&word, pub_direct_end_word(LOG_ID, true, end));
	for (; seq < 7; seq++)
		get(f, seq, 40);
	assert_false(f->d.ended);
	nothing_new(f);
	assert_true(f->d.ended);
	assert_false(pub_direct_ready(&f->d));
	put(f, 9, 40);
	nothing_new(f);
	assert_int_equal(f->d.lost, 0);

	/* Lapped past the end: nothing more either. */
	reset(f);
	word = pub_direct_end_word(LOG_ID, false, 0);
	pub_direct_reader_end_at(&f->d, &word, LOG_ID);
	put(f, 0, LEN256);
	get(f, 0, LEN256);
	end = f->w.tail + 256;
	atomic_store(&word, pub_direct_end_word(LOG_ID, true, end));
	for (seq = 1; seq < 40; seq++) /* two laps and a half of 256-byte records */
		put(f, seq, LEN256);
	nothing_new(f);
	assert_true(f->d.ended);
	assert_true(f->d.r.pos >= end);

	/* A message in pieces begun before the end: its later pieces after it
	 * are passed over no further than the end. */
	reset(f);
	word = pub_direct_end_word(LOG_ID, false, 0);
	pub_direct_reader_end_at(&f->d, &word, LOG_ID);
	put_piece(f, 0, 3 * 100, 0, 100);
	end = f->w.tail;
	put_piece(f, 0, 3 * 100, 100, 100);
	put_piece(f, 0, 3 * 100, 200, 100);
	put(f, 1, 40);
	atomic_store(&word, pub_direct_end_word(LOG_ID, true, end));
	{
		struct pub_direct_msg m;
		size_t need = 0;

		assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), 2);
		assert_int_equal(pub_direct_skip_pieces(&f->d), 1);
		assert_int_equal(f->d.r.pos, end);
	}
	nothing_new(f);
	assert_true(f->d.ended);

	/* The slot given to another log with the same low bits of id before
	 * the reader saw the end: over, with the writer still writing. */
	reset(f);
	word = pub_direct_end_word(LOG_ID, false, 0);
	pub_direct_reader_end_at(&f->d, &word, LOG_ID);
	put(f, 0, 40);
	get(f, 0, 40);
	atomic_store(&word, pub_direct_end_word(LOG_ID + 8, false, 0));
	put(f, 1, 40);
	nothing_new(f);
	assert_true(f->d.ended);
}

/*
 * While pubd retires a log it freezes the word: the reader takes nothing,
 * says nothing is ready, and keeps its place, the log not over; once pubd
 * stores the end (where it read up to, with the writer held meanwhile),
 * the reader reads on up to it. Fails while a frozen word reads as the
 * slot gone to another log: the reader ends at once and never reads the
 * three records before the end (daemon/server/direct_end.c).
 */
static void a_frozen_log_is_read_on_to_its_end(void **state)
{
	struct fixture *f = *state;
	_Atomic uint64_t word = pub_direct_end_word(LOG_ID, false, 0);
	uint64_t end, pos, seq;

	pub_direct_reader_end_at(&f->d, &word, LOG_ID);
	for (seq = 0; seq < 5; seq++)
		put(f, seq, 40);
	get(f, 0, 40);
	get(f, 1, 40);
	atomic_store(&word, pub_direct_frozen_word(LOG_ID));
	pos = f->d.r.pos;
	nothing_new(f);
	assert_false(f->d.ended);
	assert_false(pub_direct_ready(&f->d));
	assert_int_equal(pub_direct_skip_pieces(&f->d), 1);
	assert_int_equal(f->d.r.pos, pos);
	end = f->w.tail; /* pubd read it all, the writer held */
	put(f, 5, 40);	 /* the writer's, after the end */
	atomic_store(&word, pub_direct_end_word(LOG_ID, true, end));
	assert_true(pub_direct_ready(&f->d));
	for (seq = 2; seq < 5; seq++)
		get(f, seq, 40);
	nothing_new(f);
	assert_true(f->d.ended);
	assert_int_equal(f->d.lost, 0);

	/* A frozen word is no other log's live one, nor an ended one. */
	assert_true(pub_direct_frozen_word(LOG_ID) != pub_direct_end_word(LOG_ID + 1, false, 0));
	assert_false(pub_direct_frozen_word(LOG_ID) & PUB_DIRECT_END_ENDED);
}

/* One record with the source field given, committed. */
static void put_source(struct fixture *f, uint64_t source, uint64_t seq, uint32_t total, uint32_t len, bool first)
{
	uint8_t g = first ? GLEN : 0;
	uint8_t *b = pub_shmlog_claim(&f->w, PUB_SHMLOG_MSG, len < total ? PUB_SHMLOG_F_MORE : 0, total,
				      PUB_DELIVERLOG_HEAD + g + len);

	assert_non_null(b);
	memset(b + pub_deliverlog_put_head(b, source, seq, GROUP, g), 1, len);
	commit(f);
}

/*
 * A record pubd refuses (and then counts nowhere: it ends the writer) is
 * refused by its readers too, who read before pubd: a first piece whose
 * source field is more than a req_id, a later piece with one. Before, a
 * reader took such a message that pubd never counted published.
 */
static void a_record_pubd_refuses_its_readers_refuse(void **state)
{
	struct fixture *f = *state;
	struct pub_direct_msg m;
	size_t need = 0;

	put_source(f, UINT32_MAX, 0, 40, 40, true);
	assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), 1); /* a req_id: taken */
	assert_int_equal(m.len, 40);
	put_source(f, UINT64_C(1) << 32, 1, 40, 40, true);
	assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), -EPROTO);

	reset(f);
	put_source(f, 0, 0, 200, 100, true);
	put_source(f, 5, 0, 200, 100, false);
	put(f, 1, 40);
	assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), 2); /* the message in pieces: pubd's */
	assert_int_equal(next(f, sizeof(f->buf), MAX_TOTAL, &m, &need), -EPROTO);
}

/* The word: live, ended at a position (whole, 64 bits), or another log's
 * (the slot went to another: this one is over). */
static void an_end_word_is_read_for_its_own_log_only(void **state)
{
	(void)state;
	assert_false(pub_direct_end_reached(pub_direct_end_word(LOG_ID, false, 0), LOG_ID, 1 << 20));
	assert_false(pub_direct_end_reached(pub_direct_end_word(LOG_ID, true, 4096), LOG_ID, 4080));
	assert_true(pub_direct_end_reached(pub_direct_end_word(LOG_ID, true, 4096), LOG_ID, 4096));
	assert_true(pub_direct_end_reached(pub_direct_end_word(LOG_ID, true, 4096), LOG_ID, 4096 + 1024));
	assert_true(pub_direct_end_reached(pub_direct_end_word(LOG_ID, true, 0), LOG_ID, 0));
	/* Far behind it (a reader a writer lapped) or far past it (one a writer
	 * lying about its laps sent ahead): positions compare whole. */
	assert_false(pub_direct_end_reached(pub_direct_end_word(LOG_ID, true, UINT64_C(1) << 62), LOG_ID, 16));
	assert_true(
		pub_direct_end_reached(pub_direct_end_word(LOG_ID, true, 112), LOG_ID, UINT64_C(868082074056919552)));
	assert_true(pub_direct_end_reached(pub_direct_end_word(LOG_ID, true, 112), LOG_ID, UINT64_MAX & ~UINT64_C(15)));
	/* Another log's word, live or not: ours is over. */
	assert_true(pub_direct_end_reached(pub_direct_end_word(LOG_ID + 1, false, 0), LOG_ID, 0));
	assert_true(pub_direct_end_reached(pub_direct_end_word(LOG_ID + 1, true, 1 << 20), LOG_ID, 0));
	/* A live word names its log whole: the slot's next log with the same
	 * low 3 bits of id ends ours (it read as ours before, and a writer
	 * that opened logs up to one such reached readers of a log retired
	 * from under them). */
	assert_true(pub_direct_end_reached(pub_direct_end_word(LOG_ID + 8, false, 0), LOG_ID, 0));
	assert_true(pub_direct_end_reached(pub_direct_end_word(LOG_ID + (1u << 20), false, 0), LOG_ID, 0));
	/* A group log's reader's position in the slot (16-aligned), 0 too. */
	assert_true(pub_direct_end_reached(0, LOG_ID, 0));
	assert_true(pub_direct_end_reached(UINT64_C(4096), LOG_ID, 0));
	assert_true(pub_direct_end_reached((uint64_t)LOG_ID << 4, LOG_ID, 0));
	assert_false(pub_direct_end_reached(pub_direct_end_word(0, false, 0), 0, 0));
}

/* ---- a writer and a reader on two threads ---- */

#define STRESS_N 300000u

static uint32_t stress_len(uint64_t seq)
{
	return seq % 97 == 50 ? 2000 + (uint32_t)(seq % 3000) : (uint32_t)(seq * 29 % (MAX_ONE + 1));
}

static _Atomic bool stress_stop;

static void *stress_writer(void *arg)
{
	struct fixture *f = arg;
	uint64_t seq;
	uint32_t len;

	for (seq = 1; seq < STRESS_N && !atomic_load(&stress_stop); seq++) {
		len = stress_len(seq);
		if (len > MAX_ONE)
			put_pieces(f, seq, len, MAX_ONE);
		else
			put(f, seq, len);
	}
	return NULL;
}

/* What is wrong with message m (r: what pub_direct_next said), or NULL. */
static const char *stress_check(struct fixture *f, int r, const struct pub_direct_msg *m, uint64_t last, uint64_t got)
{
	uint32_t i;

	if (r != 1 && r != 2)
		return "an error";
	if (m->seq <= last || m->seq >= STRESS_N)
		return "a sequence number out of order";
	if (m->len != stress_len(m->seq) || (r == 2) != (m->len > MAX_ONE))
		return "a wrong length";
	for (i = 0; r == 1 && i < m->len; i++)
		if (f->buf[i] != pat(m->seq, i))
			return "torn or overwritten bytes";
	if (got + 1 + f->d.lost != m->seq + 1)
		return "a lost count that does not add up";
	return NULL;
}

static void a_writer_and_a_reader_on_two_threads_agree(void **state)
{
	struct fixture *f = *state;
	struct pub_direct_msg m;
	uint64_t got = 0, last = 0;
	const char *wrong = NULL;
	size_t need = 0;
	pthread_t t;
	int r = 0;

	put(f, 0, 0);
	get(f, 0, 0);
	got = 1;
	atomic_store(&stress_stop, false);
	assert_int_equal(pthread_create(&t, NULL, stress_writer, f), 0);
	while (last != STRESS_N - 1) {
		r = pub_direct_next(&f->d, f->buf, sizeof(f->buf), MAX_TOTAL, &m, &need);
		if (r == 0)
			continue;
		wrong = stress_check(f, r, &m, last, got);
		if (wrong)
			break;
		last = m.seq;
		got++;
	}
	/* The writer stops before anything fails: it writes in the fixture. */
	atomic_store(&stress_stop, true);
	pthread_join(t, NULL);
	if (wrong && r != 1 && r != 2)
		fail_msg("pub_direct_next said %d after message %llu (%llu lost)", r, (unsigned long long)last,
			 (unsigned long long)f->d.lost);
	if (wrong)
		fail_msg("%s: message %llu of %u bytes after message %llu (%llu lost)", wrong,
			 (unsigned long long)m.seq, m.len, (unsigned long long)last, (unsigned long long)f->d.lost);
	nothing_new(f);
	assert_int_equal(got + f->d.lost, STRESS_N);
}

/* pub_direct_name_is against memcmp: every length to 40, a difference at
 * every place (the word loads overlap for 9 to 15 bytes). */
static void a_record_names_its_group_exactly(void **state)
{
	char own[41], rec[41];

	(void)state;
	for (size_t n = 0; n <= 40; n++) {
		for (size_t k = 0; k < n; k++)
			own[k] = (char)('a' + (k * 7) % 26);
		memcpy(rec, own, n);
		assert_true(pub_direct_name_is(rec, own, n));
		for (size_t at = 0; at < n; at++) {
			rec[at] ^= 0x20;
			assert_false(pub_direct_name_is(rec, own, n));
			rec[at] ^= 0x20;
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(init_refuses_what_it_cannot_read, setup, teardown),
		cmocka_unit_test_setup_teardown(a_retired_log_is_read_up_to_its_end_and_no_further, setup, teardown),
		cmocka_unit_test_setup_teardown(a_frozen_log_is_read_on_to_its_end, setup, teardown),
		cmocka_unit_test(an_end_word_is_read_for_its_own_log_only),
		cmocka_unit_test(a_record_names_its_group_exactly),
		cmocka_unit_test_setup_teardown(messages_arrive_in_order_each_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(a_writer_right_behind_the_reader_costs_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(a_writer_that_laps_the_reader_costs_exactly_what_it_overwrote, setup,
						teardown),
		cmocka_unit_test_setup_teardown(marks_that_cannot_be_right_are_passed_over, setup, teardown),
		cmocka_unit_test_setup_teardown(a_message_in_pieces_is_passed_over_and_not_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(a_message_larger_than_the_buffer_says_how_much_room_it_needs, setup,
						teardown),
		cmocka_unit_test_setup_teardown(what_no_honest_writer_writes_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(a_record_written_over_while_copied_out_is_not_returned, setup,
						teardown),
		cmocka_unit_test_setup_teardown(ready_says_whether_a_record_or_a_lap_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(a_random_model_of_writer_and_reader_agrees, setup, teardown),
		cmocka_unit_test_setup_teardown(a_writer_and_a_reader_on_two_threads_agree, setup, teardown),
		cmocka_unit_test_setup_teardown(a_reader_that_does_not_read_is_counted_what_it_surely_lost, setup,
						teardown),
		cmocka_unit_test(a_position_word_is_read_for_its_own_log_only),
		cmocka_unit_test_setup_teardown(a_record_pubd_refuses_its_readers_refuse, setup, teardown),
		/* Last: what it finds wrong is a reader that never returns. */
		cmocka_unit_test_setup_teardown(a_garbage_commit_word_past_the_first_pass_is_refused, setup, teardown),
	};

	signal(SIGALRM, on_alarm);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
