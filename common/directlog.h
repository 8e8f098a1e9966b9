/* SPDX-License-Identifier: MIT */
/*
 * The direct path: a local publisher's messages reach the local
 * subscribers of the group on shared memory the publisher writes and they
 * read, with no hop through pubd.
 *
 * A direct log is a shared-memory log (shmlog.h) of one (publisher, group),
 * made by pubd at the publisher's request (PUB_FRAME_DIRECT) once it passed
 * the group's publish ACL. Its records are a deliver log's
 * (deliverlog_format.h): u64 source (the writer's; readers use the one
 * pubd gave them), u64 seq (the writer's count of its messages on the
 * log, from 0), the group's name in a message's first piece, the payload.
 *
 * Who does what:
 *   - the publisher writes it (the memfd, read-write);
 *   - pubd reads every message, as the log's one reader the writer waits
 *     for: it sends them to the fabric, delivers them to the local
 *     subscribers that do not read the log, and counts them. It says in
 *     the control page how it wants to be rung: when it sleeps (prompt),
 *     or only when more than half the ring waits for it (lazy: a host
 *     group whose subscribers all read the log, where nothing but the
 *     counts waits for pubd);
 *   - each subscriber on shared memory that pubd handed the log to reads
 *     it (a read-only file of the memfd: it cannot write it), at its own
 *     position, copying each message out. Nobody waits for it: a
 *     subscriber the writer laps loses the oldest messages it had not
 *     read (drop-oldest), finds out from the commit words and the writer's
 *     claim, and counts them exactly from the sequence numbers. Only a
 *     client whose slow-subscriber policy is drop-oldest reads direct logs.
 *     A message in pieces (larger than a record) is not read there: the
 *     writer could write over its first pieces before a reader got to its
 *     last. pubd delivers it to each reader, under the log's source and
 *     seq, and the reader puts it in its place among the log's messages.
 *
 * Wakeups. A subscriber that found nothing anywhere says so in its wake
 * page (sleep_seq odd) and in its deliver log's control page, then sleeps
 * on its deliver log's doorbell (in pub_fd's set). A writer, after a
 * commit, looks at the wake pages of the readers pubd told it about
 * (PUB_SHM_WAKER: the page read-only and the doorbell) and rings each that
 * sleeps, once per sleep. pubd is the backstop: until the writer says it
 * took in every reader change (wakers_seen == wakers_gen), pubd reads the
 * log promptly and rings sleeping readers itself.
 *
 * Trust. Everything in a direct log is the writer's, and hostile to its
 * readers: pubd checks each record as it checks a publish log's; a
 * subscriber checks each record, copies what it uses, and drops the log
 * (not its connection) at the first record no honest writer writes. The
 * wake page is its subscriber's, hostile to the writers and to pubd:
 * values there only ever decide whether to ring a doorbell, and the lost
 * counts pubd takes from it are bounded by what pubd itself read.
 */
#ifndef PUB_DIRECTLOG_H
#define PUB_DIRECTLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "deliverlog_format.h"
#include "shmlog.h"

/* ---- the wake page: one per client, written by it, read by others ---- */

#define PUB_WAKE_PAGE_LEN   8192u
#define PUB_WAKE_PAGE_MAGIC UINT64_C(0x3265676170656b77) /* "wkpage2" */
/* Lost-message counts, one u64 per slot (the slots of the deliver log's
 * control page: a direct log read takes one, as a group log does). */
#define PUB_WAKE_LOST_OFF 1024u
/* Where each slot's reader is: one u64 per slot (pub_wake_at_word). */
#define PUB_WAKE_AT_OFF 4096u

struct pub_wake_page {
	uint64_t magic;
	/* Odd while the client sleeps; a new value at each sleep (odd) and
	 * each wakeup (even). A writer rings at most once per odd value. */
	_Atomic uint64_t sleep_seq;
};

static inline _Atomic uint64_t *pub_wake_lost(void *page, uint32_t slot)
{
	return (_Atomic uint64_t *)((uint8_t *)page + PUB_WAKE_LOST_OFF) + slot;
}

/*
 * Where a slot's reader is: the seq of the next message it will read (every
 * one before was read or counted in its lost count), tagged with the low
 * bits of the log's id so that a word a reader of the slot's previous log
 * wrote late is not taken for this one's. The reader stores it before its
 * lost count (release); pubd loads the count (acquire) before it, so never
 * a count with an older position. From it pubd counts, while a reader does
 * not read (hung, or gone), the messages the writer surely lapped it past
 * (pub_direct_seqmarks_lost); the reader counts them exactly when it reads
 * again, and pubd takes the larger figure.
 */
#define PUB_WAKE_AT_SEQ_BITS 48u
#define PUB_WAKE_AT_SEQ_MASK ((UINT64_C(1) << PUB_WAKE_AT_SEQ_BITS) - 1)

static inline _Atomic uint64_t *pub_wake_at(void *page, uint32_t slot)
{
	return (_Atomic uint64_t *)((uint8_t *)page + PUB_WAKE_AT_OFF) + slot;
}

static inline uint64_t pub_wake_at_word(uint32_t log_id, uint64_t next_seq)
{
	return (uint64_t)(log_id & 0xffffu) << PUB_WAKE_AT_SEQ_BITS | (next_seq & PUB_WAKE_AT_SEQ_MASK);
}

/*
 * The seq a word says, for log log_id whose next message to be read by pubd
 * has seq pubd_next: false for a word of another log. The word holds the low
 * bits only: the full seq is the one nearest below pubd_next, or pubd_next
 * itself for a reader ahead of pubd (the writer commits before pubd reads,
 * and a lazily read log is read behind its readers).
 */
static inline bool pub_wake_at_seq(uint64_t word, uint32_t log_id, uint64_t pubd_next, uint64_t *seq)
{
	uint64_t behind;

	if (word >> PUB_WAKE_AT_SEQ_BITS != (log_id & 0xffffu))
		return false;
	behind = (pubd_next - word) & PUB_WAKE_AT_SEQ_MASK;
	*seq = behind > (PUB_WAKE_AT_SEQ_MASK >> 1) || behind > pubd_next ? pubd_next : pubd_next - behind;
	return true;
}

/*
 * A direct log's record as its writer may write it: a message or a piece
 * of one (no group mark), whose source field carries a PUB_SYNC's req_id
 * on a first piece (32 bits) and nothing on a later one. pubd refuses any
 * other (and ends the writer) and the readers too: they read before pubd
 * does, and what pubd refuses it counts nowhere, so a reader that took it
 * would hold a message no one published.
 */
static inline bool pub_direct_record_ok(const struct pub_deliverlog_piece *p)
{
	return !p->move && p->source <= UINT32_MAX && (p->first || !p->source);
}

/*
 * Is a first piece's group name (n bytes, in the log: its writer may be
 * changing them) the log's own? Names are short: up to 16 bytes in two
 * overlapping word loads each side, not a call to memcmp per record.
 */
static inline bool pub_direct_name_is(const char *rec, const char *own, size_t n)
{
	uint64_t a0, a1, b0, b1;

	if (n > 16)
		return !memcmp(rec, own, n);
	if (n >= 8) {
		memcpy(&a0, rec, 8);
		memcpy(&a1, rec + n - 8, 8);
		memcpy(&b0, own, 8);
		memcpy(&b1, own + n - 8, 8);
		return a0 == b0 && a1 == b1;
	}
	for (size_t i = 0; i < n; i++)
		if (rec[i] != own[i])
			return false;
	return true;
}

/*
 * Where a retired log ends, for each of its readers. A direct log read
 * takes a slot of its reader's deliver log's control page, as a group log
 * does (whose slot holds what its reader consumed, pub_deliverlog_slot).
 * For a direct log the slot's word is pubd's, out of its writer's reach
 * (a deliver log is its reader's alone; the log's own control page is the
 * writer's to scribble on): once pubd retires the log it stores there the
 * position it read up to, and the reader reads nothing at or past it. What
 * the writer commits after that, pubd neither reads nor counts delivered;
 * a writer whose right to the group a reload took away does not reach the
 * readers who still map its log by writing on.
 *
 * While the log is live the word names it whole:
 *
 *   bits 63-4  the log's id, all of it
 *   bit 3      set (no position has it: a group log's reader keeps its
 *              16-aligned position in its slot, so a slot that went to a
 *              group log never reads as live)
 *   bits 2-0   0
 *
 * While pubd retires the log it first freezes the word (the live word with
 * bit 2 set): the reader takes nothing more, for now, and does not count
 * the log over. pubd then reads every record committed so far (holding the
 * writer back by its head, so there is an end to that) and stores where it
 * stopped. A reader checks the word again after it read a record and
 * before it takes it: a record it took with the word still live was
 * committed before pubd froze it, so pubd reads it too and it lies before
 * the end. Without the freeze, a writer that outran pubd's catch-up as a
 * reload retired its log had readers take records past where pubd stopped:
 * read, never counted published.
 *
 * Any other word not ended means the slot went to another log (or pubd
 * let us go): the log is over for us. A live word named only the id's low
 * 3 bits before, and a writer that opened logs until one took the slot
 * with the same 3 bits read as live again to a reader still behind on a
 * log retired from under it, which then read all the writer wrote on.
 * Once retired:
 *
 *   bits 63-4  the end position (records are 16-aligned), whole: the
 *              reader compares it with its own position as it is, so a
 *              writer that sends it any distance ahead (a lap it lies
 *              about) sends it past the end, never back before it
 *   bits 3-1   the log's id, low 3 bits (an ended word of the slot's next
 *              log is told apart, mostly)
 *   bit 0      set: ended
 */
#define PUB_DIRECT_END_ENDED UINT64_C(1)
/* Written by the reader into the word when it lets the log go (it read it
 * to its end, was told it is gone, or stopped reading it): until then pubd
 * gives the slot to no other log. An ended word keeps only 3 bits of its
 * log's id, so a reader behind on a retired log whose slot went on (to a
 * log with the same 3 bits, that a reload then retired further on) would
 * read to that log's end. Not a position (not 16-aligned), not live, not
 * ended. */
#define PUB_DIRECT_SLOT_RELEASED UINT64_C(2)
#define PUB_DIRECT_END_LIVE	 UINT64_C(8)
#define PUB_DIRECT_END_FROZEN	 UINT64_C(4)
#define PUB_DIRECT_END_ID_SHIFT	 1u
#define PUB_DIRECT_END_ID_MASK	 7u

static inline uint64_t pub_direct_end_word(uint32_t log_id, bool ended, uint64_t end_pos)
{
	if (!ended)
		return (uint64_t)log_id << 4 | PUB_DIRECT_END_LIVE;
	return (end_pos & ~(uint64_t)(PUB_SHMLOG_ALIGN - 1)) | PUB_DIRECT_END_ENDED |
	       (uint64_t)(log_id & PUB_DIRECT_END_ID_MASK) << PUB_DIRECT_END_ID_SHIFT;
}

/* The live word of log_id, frozen while pubd retires the log. */
static inline uint64_t pub_direct_frozen_word(uint32_t log_id)
{
	return pub_direct_end_word(log_id, false, 0) | PUB_DIRECT_END_FROZEN;
}

/* Has a reader of log log_id at pos reached the end the word says? (Not
 * for a frozen word, which says wait.) */
static inline bool pub_direct_end_reached(uint64_t word, uint32_t log_id, uint64_t pos)
{
	if (!(word & PUB_DIRECT_END_ENDED))
		return word != pub_direct_end_word(log_id, false, 0);
	if ((word >> PUB_DIRECT_END_ID_SHIFT & PUB_DIRECT_END_ID_MASK) != (log_id & PUB_DIRECT_END_ID_MASK))
		return true;
	return pos >= (word & ~(uint64_t)(PUB_SHMLOG_ALIGN - 1));
}

/*
 * A writer's look at one reader's page after a commit (a full barrier must
 * come between the commit and this load: pub_shmlog_wake_reader's, or
 * atomic_thread_fence). *woken_at: the value it last rang for. True when it
 * should ring now.
 */
static inline bool pub_wake_due(const struct pub_wake_page *p, uint64_t *woken_at)
{
	uint64_t s = atomic_load_explicit(&((struct pub_wake_page *)p)->sleep_seq, memory_order_relaxed);

	if (!(s & 1) || s == *woken_at)
		return false;
	*woken_at = s;
	return true;
}

/* ---- marks: where a lapped reader starts again ---- */

/*
 * The writer marks, in the control page, the first record it commits in
 * each sixteenth of the ring. A reader the writer lapped starts again at
 * the oldest mark the writer is not about to write over, so it keeps the
 * newest messages the log still holds (drop-oldest), not only the last.
 * Untrusted: a reader checks a mark, and the record there, like anything
 * else the writer wrote.
 */
#define PUB_DIRECT_MARKS_OFF 512u
#define PUB_DIRECT_NMARKS    16u

static inline _Atomic uint64_t *pub_direct_marks(const void *map)
{
	return (_Atomic uint64_t *)((uint8_t *)map + PUB_DIRECT_MARKS_OFF);
}

/* The writer, after committing a record at pos: marks it if it is the
 * first in its sixteenth of the ring (*seg: the writer's last marked one). */
static inline void pub_direct_mark(void *map, uint32_t cap, uint64_t pos, uint64_t *seg)
{
	uint64_t s = pos / (cap / PUB_DIRECT_NMARKS);

	if (s == *seg)
		return;
	*seg = s;
	atomic_store_explicit(&pub_direct_marks(map)[s % PUB_DIRECT_NMARKS], pos, memory_order_release);
}

/* ---- seq marks: what a reader that does not read has surely lost ---- */

/*
 * pubd notes, for each sixty-fourth of the ring over the last two passes,
 * the position and seq of the first message it read there. A message whose
 * record begins before the writer's claim less the ring's capacity is
 * overwritten, at least its first bytes: so is every message up to a mark
 * that lies there. The bound is exact to within the messages of one
 * sixty-fourth of the ring; the rest a reader counts when it reads again.
 * Two passes: the line lies a pass behind the writer, and the marks of the
 * pass before are the ones it needs.
 */
#define PUB_DIRECT_SEQMARK_SEGS 64u /* per pass of the ring */
#define PUB_DIRECT_SEQMARKS	(2 * PUB_DIRECT_SEQMARK_SEGS)

struct pub_direct_seqmark {
	uint64_t pos; /* UINT64_MAX: none yet */
	uint64_t seq;
};

struct pub_direct_seqmarks {
	struct pub_direct_seqmark m[PUB_DIRECT_SEQMARKS];
	uint64_t seg;	/* the last sixty-fourth marked, UINT64_MAX before any */
	uint32_t cap;	/* the ring's bytes, a power of two */
	unsigned shift; /* a position's sixty-fourth: pos >> shift */
};

void pub_direct_seqmarks_init(struct pub_direct_seqmarks *k, uint32_t cap);

/* A message begins at pos with seq (in the order they were written). */
static inline void pub_direct_seqmarks_note(struct pub_direct_seqmarks *k, uint64_t pos, uint64_t seq)
{
	uint64_t seg = pos >> k->shift;

	if (seg == k->seg)
		return;
	k->seg = seg;
	k->m[seg % PUB_DIRECT_SEQMARKS] = (struct pub_direct_seqmark){.pos = pos, .seq = seq};
}

/* Of the messages from seq `from` on, how many are surely overwritten when
 * the writer's claim is at claim. */
uint64_t pub_direct_seqmarks_lost(const struct pub_direct_seqmarks *k, uint64_t claim, uint64_t from);

/* ---- a subscriber's reader of a direct log ---- */

struct pub_direct_reader {
	struct pub_shmlog_reader r;
	uint8_t glen;
	char group[255];
	bool synced;	   /* next_seq is known (a message was read) */
	uint64_t next_seq; /* the seq the next message should have */
	uint64_t lost;	   /* messages the writer lapped us past, all told */
	/* pubd's word of where the log ends (pub_direct_end_word), and what it
	 * says while the log is live */
	const _Atomic uint64_t *end;
	uint64_t live, frozen;
	uint32_t log_id;
	bool ended; /* reached it: nothing more is read here */
};

/* One message, copied out. */
struct pub_direct_msg {
	uint64_t seq;
	uint32_t len; /* in the caller's buffer */
};

/*
 * Attach to a mapping of map_len bytes; cap and max_record from pubd's
 * frame (never from the mapping), start: where pubd says to begin (a
 * record boundary it read up to). 0, or -EPROTO.
 */
int pub_direct_reader_init(struct pub_direct_reader *d, const void *map, size_t map_len, uint32_t cap,
			   uint32_t max_record, uint64_t start, const char *group, uint8_t glen);
/* Read the log no further than pubd's word says (pub_direct_end_word). */
static inline void pub_direct_reader_end_at(struct pub_direct_reader *d, const _Atomic uint64_t *word, uint32_t log_id)
{
	d->end = word;
	d->live = pub_direct_end_word(log_id, false, 0);
	d->frozen = pub_direct_frozen_word(log_id);
	d->log_id = log_id;
}

/* The seq of the message at start, when the reader knows it (pubd says):
 * messages lost from there on are counted too. */
static inline void pub_direct_reader_expect(struct pub_direct_reader *d, uint64_t seq)
{
	d->synced = true;
	d->next_seq = seq;
}

/* pubd is reading the log to its end (the word frozen): more may come. */
static inline bool pub_direct_frozen(const struct pub_direct_reader *d)
{
	return atomic_load_explicit(d->end, memory_order_relaxed) == d->frozen;
}

/*
 * The next message that fits one record, copied into buf (cap bytes).
 * Returns 1 with *m filled; 2 for a message in pieces, which is not read
 * here (m->seq and m->len say which: pubd delivers it to us, as this log's
 * source and seq); 0 when nothing new is committed; -ENOSPC when the next
 * message needs more than cap bytes (*need says how many: call again with
 * room); -EPROTO when the log holds what no honest writer writes (a length
 * above max_total among it: stop reading the log). Messages the writer
 * lapped us past are added to d->lost. At the end pubd set (d->ended once
 * reached) it returns 0 for good; while pubd freezes the log, 0 for now.
 */
int pub_direct_next(struct pub_direct_reader *d, uint8_t *buf, size_t cap, uint32_t max_total, struct pub_direct_msg *m,
		    size_t *need);

/* After a message in pieces (pub_direct_next said 2): pass over its later
 * pieces. 1 once the next record is another message's (or a lap carried
 * us past), 0 while its pieces are still being written, -EPROTO. */
int pub_direct_skip_pieces(struct pub_direct_reader *d);

/* Is a record (or a lap) waiting at our position? For the last look
 * before sleeping, and for spinning. */
bool pub_direct_ready(const struct pub_direct_reader *d);

#endif
