/* SPDX-License-Identifier: MIT */
/*
 * A subscriber's reader of a direct log (common/directlog.c) on a mapping a
 * hostile publisher fills: the control page's claim, latest, tail and marks
 * and the ring's bytes come from the input, beside a real writer
 * (common/shmlog.c, overwrite: it never waits) appending records, valid or
 * not, so that the reader is lapped, torn, lied to. The reader calls
 * pub_direct_next / pub_direct_skip_pieces / pub_direct_ready as libpub
 * does, growing its buffer on -ENOSPC (up to max_total). It must never
 * crash, read outside the mapping, or loop forever, and what it returns
 * must hold together: a length within its buffer and max_total, a position
 * on a 16-byte boundary that never goes back, a lost count that never goes
 * down.
 *
 * An honest input (config bit 3) has only the writer's records, written
 * through the shmlog API: then the reader must also never say -EPROTO,
 * return each message whole (its pattern) with its length, in order, and
 * count as lost exactly the messages between those it returned.
 *
 * Input: 8 config bytes, then records of u8 op and its bytes (a short last
 * record takes what is left, zeros after):
 *   [0] bit 0: ring of 8192 (else 4096); bits 1-2: max_record 64, 256,
 *       1024 or cap/4; bit 3: honest; bit 4: the writer marks (directlog.h);
 *       bit 5: the reader's max_record is 64 (pubd's frame said so);
 *       bit 6: the reader starts at config [4..5] x 16 and the writer at
 *       config [6..7] x 16 (else both at 0)
 *   [1] the reader's group: 1 + [1] % 8 bytes of "abcdefgh"
 *   [2] the reader's buffer: [2] x 8 bytes to begin with
 *   [3] max_total: 1 + [3] x 64 (honest: 1 MiB)
 *   op % 9 == 0 RAW    u16 off, u8 n, n bytes: ring bytes from off
 *   op % 9 == 1 WRITE  u8 kind, u16 len: a message; kind % 4: 0 one
 *                      record, 1 in pieces of 1 + kind / 4 % 32 x 16 bytes,
 *                      2 one record of group "zz", 3 one record left
 *                      claimed and half written (committed at the next
 *                      writer op)
 *   op % 9 == 2 WORD   u16 at, u64: 8 bytes at ring offset at x 8
 *   op % 9 == 3 CTL    u8 which, u64 v: claim, latest or tail (which % 4: 3
 *                      is a mark, slot which / 4 % 16), set to v as which
 *                      / 64 says: raw, the reader's position + v x 16, its
 *                      position + cap + v x 16, or the claim + v x 16 (v
 *                      signed, 16 bits)
 *   op % 9 == 4 READ   u8 n: 1 + n % 32 reader calls, chosen by the bits of
 *                      n and the op byte
 *   op % 9 == 5 BURST  u8 n: 1 + n % 64 messages of (seq x 13) % 200 bytes
 *                      (laps)
 *   op % 9 == 6 SEQ    u8 n: the writer's seq jumps n (a writer's gap)
 *   op % 9 == 7 START  u16 s: the reader starts again at s x 16
 *   op % 9 == 8 PEEK   pub_direct_ready; with op / 9 odd, END: pubd
 *                      ends the log where the writer is now (its word in
 *                      the reader's deliver log, directlog.h): a reader
 *                      call that begins at or past it must return no
 *                      message, whatever the writer writes there
 * In an honest input, RAW, WORD, CTL, WRITE kind 2, SEQ and START do
 * nothing. At the end the writer commits what it holds and the reader
 * reads on (at most 64 calls).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "deliverlog_format.h"
#include "directlog.h"
#include "shmlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAPMAX	    (PUB_SHMLOG_CTL_LEN + 8192u)
#define HONEST_MAX  (1u << 20)
#define SRC	    5u
#define LENS	    4096u /* more than the messages a ring holds */
#define FINAL_CALLS 64
#define LOG_ID	    3u

static const char letters[] = "abcdefgh";

struct input {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct input *in, unsigned bytes)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < bytes; i++) {
		uint8_t b = 0;

		if (in->n) {
			b = *in->p++;
			in->n--;
		}
		v |= (uint64_t)b << (8 * i);
	}
	return v;
}

struct fz {
	uint8_t *map;
	size_t map_len;
	uint32_t cap, max_record;
	bool honest, marks, small_rmax;
	/* The writer. */
	struct pub_shmlog_writer w;
	uint64_t seq, mark_seg;
	uint8_t *open; /* a record claimed, not committed */
	uint32_t open_head, open_len;
	uint64_t open_seq;
	uint32_t lens[LENS]; /* honest: each message's length, by seq */
	bool pieces[LENS];
	/* The reader. */
	struct pub_direct_reader d;
	char group[8];
	uint8_t glen;
	uint8_t *buf;
	size_t bufcap;
	uint32_t max_total;
	bool dead, skipping, have_first;
	uint64_t pos, lost, first, last, returned;
	/* pubd's word of where the log ends (END), and that end. */
	_Atomic uint64_t end_word;
	bool end_set;
	uint64_t end_pos;
	bool frozen; /* the word frozen (pubd reading the log to its end) */
};

static struct pub_shmlog_ctl *ctl(struct fz *z)
{
	return (struct pub_shmlog_ctl *)z->map;
}

static uint8_t pat(uint64_t seq, uint32_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + 1);
}

static void mark(struct fz *z)
{
	if (z->marks)
		pub_direct_mark(z->map, z->cap, atomic_load_explicit(&ctl(z)->latest, memory_order_relaxed),
				&z->mark_seg);
}

static void commit_open(struct fz *z)
{
	uint32_t i;

	if (!z->open)
		return;
	for (i = z->open_len / 2; i < z->open_len; i++)
		z->open[z->open_head + i] = pat(z->open_seq, i);
	pub_shmlog_commit(&z->w);
	mark(z);
	z->open = NULL;
}

/* One record of message seq: the piece at payload offset off, len bytes
 * (fill of them written). Returns its body, or NULL when it cannot be. */
static uint8_t *piece(struct fz *z, uint64_t seq, uint32_t total, uint32_t off, uint32_t len, bool more,
		      const char *group, uint8_t glen, uint32_t fill)
{
	uint8_t g = off ? 0 : glen;
	uint32_t head = PUB_DELIVERLOG_HEAD + g, i;
	uint8_t *b;

	b = pub_shmlog_claim(&z->w, PUB_SHMLOG_MSG, more ? PUB_SHMLOG_F_MORE : 0, total, head + len);
	if (!b)
		return NULL;
	pub_deliverlog_put_head(b, g ? SRC : 0, seq, group, g); /* a later piece: no source */
	for (i = 0; i < fill; i++)
		b[head + i] = pat(seq, off + i);
	return b;
}

static void note(struct fz *z, uint64_t seq, uint32_t total, bool pieces)
{
	z->lens[seq % LENS] = total;
	z->pieces[seq % LENS] = pieces;
}

/* The largest payload of one record: first piece, later piece. */
static uint32_t room_first(const struct fz *z, uint8_t glen)
{
	return z->max_record - PUB_SHMLOG_HDR_LEN - PUB_DELIVERLOG_HEAD - glen;
}

static void write_msg(struct fz *z, unsigned kind, uint32_t len)
{
	uint32_t one = room_first(z, z->glen), later = one + z->glen, off, n, chunk;

	commit_open(z);
	switch (kind % 4) {
	case 0:
	case 3:
		len %= one + 1;
		if (kind % 4 == 0) {
			if (!piece(z, z->seq, len, 0, len, false, z->group, z->glen, len))
				return;
			pub_shmlog_commit(&z->w);
			mark(z);
		} else {
			z->open = piece(z, z->seq, len, 0, len, false, z->group, z->glen, len / 2);
			if (!z->open)
				return;
			z->open_head = PUB_DELIVERLOG_HEAD + z->glen;
			z->open_len = len;
			z->open_seq = z->seq;
		}
		note(z, z->seq, len, false);
		z->seq++;
		return;
	case 1:
		/* Longer than one record can carry, so in pieces. */
		len = one + 1 + len % (3 * z->cap);
		chunk = (1 + kind / 4 % 32) * 16;
		for (off = 0; off < len; off += n) {
			n = off ? later : one;
			n = n < chunk ? n : chunk;
			n = n < len - off ? n : len - off;
			if (!piece(z, z->seq, len, off, n, off + n < len, z->group, z->glen, n))
				return;
			pub_shmlog_commit(&z->w);
			mark(z);
		}
		note(z, z->seq, len, true);
		z->seq++;
		return;
	default:
		if (z->honest)
			return;
		len %= room_first(z, 2) + 1;
		if (!piece(z, z->seq, len, 0, len, false, "zz", 2, len))
			return;
		pub_shmlog_commit(&z->w);
		mark(z);
		z->seq++;
		return;
	}
}

/* A value for the control page, relative to where the reader is. */
static uint64_t relative(struct fz *z, unsigned how, uint64_t v)
{
	int64_t delta = (int16_t)(uint16_t)v * 16;

	switch (how % 4) {
	case 0:
		return v;
	case 1:
		return z->d.r.pos + (uint64_t)delta;
	case 2:
		return z->d.r.pos + z->cap + (uint64_t)delta;
	default:
		return atomic_load_explicit(&ctl(z)->claim, memory_order_relaxed) + (uint64_t)delta;
	}
}

/* What every answer must hold, honest or not. A position goes back only
 * by wrapping past 2^64 (a writer's lie near there). */
static void check_reader(struct fz *z)
{
	if (z->d.r.pos % PUB_SHMLOG_ALIGN || (z->d.r.pos < z->pos && z->pos < UINT64_C(1) << 63) || z->d.lost < z->lost)
		abort();
	z->pos = z->d.r.pos;
	z->lost = z->d.lost;
}

/* A message returned (1, or 2 for one in pieces). */
static void returned(struct fz *z, int r, const struct pub_direct_msg *m)
{
	uint32_t i;

	if (m->len > z->max_total || (r == 1 && m->len > z->bufcap))
		abort();
	if (!z->honest)
		return;
	if (!z->have_first) {
		z->have_first = true;
		z->first = m->seq;
	} else if (m->seq <= z->last) {
		abort();
	}
	z->last = m->seq;
	z->returned++;
	if (m->seq >= z->seq || z->seq - m->seq > LENS)
		abort();
	if (z->lens[m->seq % LENS] != m->len || z->pieces[m->seq % LENS] != (r == 2))
		abort();
	if (r == 1)
		for (i = 0; i < m->len; i++)
			if (z->buf[i] != pat(m->seq, i))
				abort(); /* torn, or another message's */
	/* Each message since the first returned: returned, or counted lost. */
	if (z->returned + z->d.lost != m->seq - z->first + 1)
		abort();
}

/* One reader call; false when the reader is done (its log dropped). */
static bool read_once(struct fz *z, unsigned how)
{
	struct pub_direct_msg m;
	size_t need = 0;
	uint64_t pos0 = z->d.r.pos;
	/* Begun at or past the end pubd set: nothing may come of this call. */
	bool past = z->end_set && pos0 >= z->end_pos;
	/* Frozen: nothing now, and the log not over. */
	bool frozen = z->frozen;
	uint8_t *nb;
	int r;

	if (z->dead)
		return false;

	if (how % 8 == 7) {
		(void)pub_direct_ready(&z->d);
		check_reader(z);
		return true;
	}
	if (z->skipping) {
		r = pub_direct_skip_pieces(&z->d);
		check_reader(z);
		if (past && (r != 1 || z->d.r.pos != pos0))
			abort();
		if (r == 1 || (r == 0 && how % 4 == 3))
			z->skipping = false; /* done, or pub_direct_next passes over the rest */
		else if (r != 0)
			goto bad;
		return true;
	}
	r = pub_direct_next(&z->d, z->buf, z->bufcap, z->max_total, &m, &need);
	check_reader(z);
	if (past && (r != 0 || !z->d.ended || pub_direct_ready(&z->d)))
		abort();
	if (frozen && (r != 0 || z->d.ended || z->d.r.pos != pos0 || pub_direct_ready(&z->d)))
		abort();
	switch (r) {
	case 0:
		return true;
	case 1:
	case 2:
		returned(z, r, &m);
		z->skipping = r == 2 && how % 2;
		return true;
	case -ENOSPC:
		if (need <= z->bufcap || need > z->max_total)
			abort();
		nb = realloc(z->buf, need);
		if (!nb)
			abort();
		z->buf = nb;
		z->bufcap = need;
		return true;
	}
bad:
	if (r != -EPROTO || z->honest)
		abort();
	z->dead = true; /* libpub lets go of the log */
	return false;
}

static void start_reader(struct fz *z, uint64_t start)
{
	uint32_t rmax = z->max_record;

	if (!z->honest && z->small_rmax)
		rmax = 64;
	if (pub_direct_reader_init(&z->d, z->map, z->map_len, z->cap, rmax, start, z->group, z->glen) < 0)
		abort(); /* pubd's frame: always one it can read */
	pub_direct_reader_end_at(&z->d, &z->end_word, LOG_ID);
	z->dead = z->skipping = false;
	z->pos = z->d.r.pos;
	z->lost = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t maxrs[] = {64, 256, 1024, 0};
	struct input in = {data, size};
	struct fz *z = calloc(1, sizeof(*z));
	uint64_t cfg = take(&in, 8), v, start = 0, tail = 0;
	unsigned op, k, n, which;
	uint32_t off;

	if (!z)
		return 0;
	z->cap = cfg & 1 ? 8192 : 4096;
	z->max_record = maxrs[cfg >> 1 & 3] ? maxrs[cfg >> 1 & 3] : z->cap / 4;
	z->honest = cfg >> 3 & 1;
	z->marks = cfg >> 4 & 1;
	z->glen = (uint8_t)(1 + (cfg >> 8 & 0xff) % 8);
	memcpy(z->group, letters, z->glen);
	z->bufcap = (cfg >> 16 & 0xff) * 8;
	z->max_total = z->honest ? HONEST_MAX : 1 + (uint32_t)(cfg >> 24 & 0xff) * 64;
	if (!z->honest && (cfg >> 6 & 1)) {
		start = (cfg >> 32 & 0xffff) * 16;
		tail = (cfg >> 48 & 0xffff) * 16;
	}
	z->map_len = pub_shmlog_map_len(z->cap);
	z->map = calloc(1, MAPMAX);
	z->buf = malloc(z->bufcap ? z->bufcap : 1);
	if (!z->map || !z->buf)
		abort();
	if (pub_shmlog_format(z->map, z->map_len, z->cap, z->max_record, 0) < 0)
		abort();
	/* The writer's start (a writer reopening a log it wrote before). */
	atomic_store(&ctl(z)->tail, tail);
	if (pub_shmlog_writer_init(&z->w, z->map, z->map_len, true) < 0)
		abort();
	z->mark_seg = UINT64_MAX;
	z->small_rmax = cfg >> 5 & 1;
	atomic_store(&z->end_word, pub_direct_end_word(LOG_ID, false, 0));
	start_reader(z, start);

	while (in.n) {
		op = (unsigned)take(&in, 1);
		switch (op % 9) {
		case 0: /* RAW */
			off = (uint32_t)take(&in, 2);
			n = (unsigned)take(&in, 1);
			for (k = 0; k < n; k++) {
				uint8_t b = (uint8_t)take(&in, 1);

				if (!z->honest)
					z->map[PUB_SHMLOG_CTL_LEN + (off + k) % z->cap] = b;
			}
			break;
		case 1: /* WRITE */
			k = (unsigned)take(&in, 1);
			write_msg(z, k, (uint32_t)take(&in, 2));
			break;
		case 2: /* WORD */
			off = (uint32_t)take(&in, 2) * 8 % z->cap;
			v = take(&in, 8);
			if (!z->honest)
				memcpy(z->map + PUB_SHMLOG_CTL_LEN + off, &v, 8);
			break;
		case 3: /* CTL */
			which = (unsigned)take(&in, 1);
			v = relative(z, which / 64, take(&in, 8));
			if (z->honest)
				break;
			if (which % 4 == 0)
				atomic_store(&ctl(z)->claim, v);
			else if (which % 4 == 1)
				atomic_store(&ctl(z)->latest, v);
			else if (which % 4 == 2)
				atomic_store(&ctl(z)->tail, v);
			else
				atomic_store(&pub_direct_marks(z->map)[which / 4 % PUB_DIRECT_NMARKS], v);
			break;
		case 4: /* READ */
			n = (unsigned)take(&in, 1);
			for (k = 0; k <= n % 32; k++)
				if (!read_once(z, (n >> 5) + k + op / 9))
					break;
			break;
		case 5: /* BURST */
			n = (unsigned)take(&in, 1);
			for (k = 0; k <= n % 64; k++)
				write_msg(z, 0, (uint32_t)(z->seq * 13 % 200));
			break;
		case 6: /* SEQ */
			n = (unsigned)take(&in, 1);
			if (!z->honest)
				z->seq += n;
			break;
		case 7: /* START */
			v = take(&in, 2) * 16;
			if (!z->honest)
				start_reader(z, v);
			break;
		default: /* PEEK, or END */
			if (op / 9 % 2 && !z->end_set && !z->frozen && op / 18 % 2) {
				/* pubd freezes first (then, at the next END, ends) */
				z->frozen = true;
				atomic_store(&z->end_word, pub_direct_frozen_word(LOG_ID));
			} else if (op / 9 % 2 && !z->end_set) {
				z->end_pos = z->w.tail;
				z->end_set = true;
				z->frozen = false;
				atomic_store(&z->end_word, pub_direct_end_word(LOG_ID, true, z->end_pos));
			} else if (!z->dead) {
				(void)pub_direct_ready(&z->d);
			}
			break;
		}
	}
	commit_open(z);
	for (k = 0; k < FINAL_CALLS; k++)
		if (!read_once(z, k % 7))
			break;
	free(z->buf);
	free(z->map);
	free(z);
	return 0;
}
