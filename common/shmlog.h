/* SPDX-License-Identifier: MIT */
/*
 * A shared-memory log: one writer appends records to a ring that one or
 * more readers follow, each at its own position, without a system call per
 * record. pubd and libpub map the same memfd; this file is the format and
 * the pure logic on a mapping (no fd, no allocation, no wakeup calls: the
 * callers own those).
 *
 * Layout of a mapping: a control page (struct pub_shmlog_ctl), then the
 * ring of `capacity` bytes (a power of two). Positions are absolute byte
 * counts that only grow; a position's offset in the ring is pos & (cap-1).
 *
 * A record is 16-byte aligned: a 16-byte header (struct pub_shmlog_rec),
 * then its body. The writer fills the header's other fields and the body,
 * then stores the commit word last, with release ordering; a reader loads
 * the commit word with acquire ordering and sees the whole record or none
 * of it. Before it commits a record, the writer zeroes the commit word of
 * the record after it, so a reader that reaches that position finds "not
 * yet" and never an earlier pass's bytes (which may be payload someone
 * else chose). The commit word also holds the lap (the ring pass the record
 * was written on, plus one) as a check. A record never straddles the end
 * of the ring: the writer fills the rest of the pass with a padding record
 * first.
 *
 * A writer that dies mid-record leaves that record uncommitted: readers see
 * nothing past the last whole record. It had announced the record in
 * ctl->claim first, so the reader can count what the death cost (one
 * partial record).
 *
 * Trust: a reader must treat everything the writer wrote as hostile when the
 * writer is another party (pubd reading a client's publish log). It loads
 * the commit word once, checks it (pub_shmlog_next), and works from that
 * length only; fields it reads from the body it copies before it trusts
 * them. Nor does any side read back its own published fields from the
 * mapping (the other side may have scribbled on them): each keeps its own
 * copy and only stores it out.
 */
#ifndef PUB_SHMLOG_H
#define PUB_SHMLOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PUB_SHMLOG_MAGIC   UINT64_C(0x31676f6c6d687370) /* "pshmlog1" */
#define PUB_SHMLOG_VERSION 1
#define PUB_SHMLOG_CTL_LEN 4096u /* the control page, before the ring */
#define PUB_SHMLOG_ALIGN   16u	 /* the header size: a padding record always has room for its header */
#define PUB_SHMLOG_HDR_LEN 16u
#define PUB_SHMLOG_CAP_MIN 4096u
#define PUB_SHMLOG_CAP_MAX (1u << 30)

/* Record types. */
enum pub_shmlog_type {
	PUB_SHMLOG_PAD = 1, /* fills the ring's tail end; no body meaning */
	PUB_SHMLOG_MSG = 2, /* a message, or a piece of one (PUB_SHMLOG_F_MORE) */
	PUB_SHMLOG_END = 3, /* no body: the readers attached so far read no further (group logs) */
};

/* Record flags. */
#define PUB_SHMLOG_F_MORE 0x1 /* the message goes on in the next record */

struct pub_shmlog_rec {
	_Atomic uint64_t commit; /* (lap + 1) << 32 | length of header + body; written last */
	uint16_t type;		 /* enum pub_shmlog_type */
	uint16_t flags;		 /* PUB_SHMLOG_F_* */
	uint32_t aux;		 /* the user's (e.g. the body's fixed-part length) */
};

/*
 * The control page. Each line is written by one side only. Fields in the
 * header line are set once by whoever creates the log.
 */
struct pub_shmlog_ctl {
	uint64_t magic;
	uint32_t version;
	uint32_t capacity;   /* ring bytes, a power of two */
	uint32_t max_record; /* largest record (header + body) a writer may append */
	uint32_t kind;	     /* the user's: what the records mean */
	uint8_t pad0_[40];

	/* Writer's line. */
	_Atomic uint64_t tail;		 /* position after the last committed record */
	_Atomic uint64_t claim;		 /* end of what the writer may be writing: the record being
					  * written and the commit word after it (tail + 8 when idle) */
	_Atomic uint64_t latest;	 /* start of the last committed message record */
	_Atomic uint32_t writer_waiting; /* the writer found no room and sleeps (single-reader logs) */
	_Atomic uint32_t closed;	 /* the writer is done with this reader (pubd closed the client) */
	_Atomic uint32_t wakers_seen;	 /* direct logs: the wakers_gen the writer has taken in */
	uint8_t pad1_[28];

	/* Reader's line (single-reader logs). */
	_Atomic uint64_t head;		  /* position the reader has consumed up to */
	_Atomic uint32_t reader_sleeping; /* the reader found nothing and sleeps */
	/* Direct logs (common/directlog.h), pubd being the reader: */
	_Atomic uint32_t lazy;	     /* ring only when more than half the ring is unread */
	_Atomic uint32_t retired;    /* write no more here: ask for a new log */
	_Atomic uint32_t wakers_gen; /* moves with each reader change sent on the socket */
	uint8_t pad2_[40];
};

_Static_assert(sizeof(struct pub_shmlog_rec) == PUB_SHMLOG_HDR_LEN, "record header size");
_Static_assert(sizeof(struct pub_shmlog_ctl) == 192, "control lines");

static inline uint32_t pub_shmlog_align(uint32_t n)
{
	return (n + PUB_SHMLOG_ALIGN - 1) & ~(PUB_SHMLOG_ALIGN - 1);
}

/* A spinning reader's pause between looks (kinder to the other hyperthread). */
static inline void pub_shmlog_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Bytes to map for a ring of cap bytes. */
static inline size_t pub_shmlog_map_len(uint32_t cap)
{
	return (size_t)PUB_SHMLOG_CTL_LEN + cap;
}

/*
 * Write a fresh control page into map (map_len bytes, zeroed, as a new
 * memfd is). cap: a power of two in [CAP_MIN, CAP_MAX] with map_len at
 * least pub_shmlog_map_len(cap). max_record: at most cap / 4 (so a record
 * always fits once the ring drains, padding included), at least 64.
 * Returns 0 or -EINVAL.
 */
int pub_shmlog_format(void *map, size_t map_len, uint32_t cap, uint32_t max_record, uint32_t kind);

/* ---- writer ---- */

struct pub_shmlog_writer {
	struct pub_shmlog_ctl *ctl;
	uint8_t *ring;
	uint32_t cap, max_record;
	uint64_t tail;		     /* ours: the next record's position */
	uint64_t head_seen;	     /* the reader's head when last loaded (single-reader logs) */
	bool overwrite;		     /* readers may be lapped: never wait for room */
	uint32_t reserve;	     /* bytes kept back for an END record (0: none) */
	struct pub_shmlog_rec *open; /* claimed, not committed */
	uint32_t open_len;
};

/*
 * Attach a writer to a formatted mapping it trusts (libpub: pubd made it).
 * overwrite: the ring is written on whatever readers still need (a group
 * log); otherwise the writer waits for the single reader's head. Starts at
 * the log's tail. Returns 0, or -EPROTO when the control page does not
 * describe a log that fits map_len.
 */
int pub_shmlog_writer_init(struct pub_shmlog_writer *w, void *map, size_t map_len, bool overwrite);

/*
 * Claim room for a record with a body of len bytes (len + header at most
 * max_record), padding the ring's end first when the record would cross
 * it. Returns the body to fill, or NULL when the reader has not made room
 * yet (never for an overwrite log). Commit or abandon before the next claim.
 * Records other than PUB_SHMLOG_END leave w->reserve bytes free, so an END
 * (len 0) always finds room after them.
 */
void *pub_shmlog_claim(struct pub_shmlog_writer *w, uint16_t type, uint16_t flags, uint32_t aux, uint32_t len);

/* Publish the claimed record (its commit word, with release ordering). */
void pub_shmlog_commit(struct pub_shmlog_writer *w);

/* Room for a body of len bytes now, without claiming it (refreshes head_seen). */
bool pub_shmlog_has_room(struct pub_shmlog_writer *w, uint32_t len);

/* Ring bytes free now (refreshes head_seen); an overwrite log: the ring. */
uint64_t pub_shmlog_room(struct pub_shmlog_writer *w);

/* Largest body one record can carry. */
static inline uint32_t pub_shmlog_max_body(const struct pub_shmlog_writer *w)
{
	return w->max_record - PUB_SHMLOG_HDR_LEN;
}

/*
 * After committing: does the reader sleep and need a wakeup? Clears its
 * flag when it does (one wakeup per sleep). Full barrier first, paired with
 * pub_shmlog_reader_sleep, so a reader that re-checked before our commit
 * is sure to be seen asleep.
 */
bool pub_shmlog_wake_reader(struct pub_shmlog_writer *w);

/*
 * The writer found no room (claim returned NULL) and wants to sleep until
 * the reader frees some: sets writer_waiting and re-checks. Returns true
 * when it may sleep, false when room appeared meanwhile.
 */
bool pub_shmlog_writer_sleep(struct pub_shmlog_writer *w, uint32_t len);

/* ---- reader ---- */

struct pub_shmlog_reader {
	struct pub_shmlog_ctl *ctl; /* written only through the reader's own line */
	const uint8_t *ring;
	uint32_t cap, max_record;
	uint64_t pos;  /* ours: the next record to read */
	uint64_t head; /* ours: what we last published as consumed */
};

/* One record as a reader sees it: the body's bytes stay in the ring. */
struct pub_shmlog_view {
	uint64_t pos;	/* where the record starts */
	uint16_t type;	/* PUB_SHMLOG_MSG (padding is skipped by pub_shmlog_next) */
	uint16_t flags; /* as the writer wrote them: check before use */
	uint32_t aux;	/* likewise */
	const uint8_t *body;
	uint32_t len; /* body bytes: within the ring, at most max_record - header */
};

/*
 * Attach a reader. The creator passes cap and max_record from its own copy
 * (pubd: never from a mapping a client can write); a reader that trusts the
 * writer passes 0, 0 to take them from the control page, checked against
 * map_len. Starts at position start (0 for a fresh log). Returns 0 or
 * -EPROTO.
 */
int pub_shmlog_reader_init(struct pub_shmlog_reader *r, void *map, size_t map_len, uint32_t cap, uint32_t max_record,
			   uint64_t start);

/*
 * The next message (or END) record, skipping padding. Returns 1 with *v filled, 0
 * when nothing new is committed, -EPROTO when the ring holds what no honest
 * writer writes there (a bad length, type or lap): the writer is broken or
 * hostile, and the log must not be read further. Does not move past the
 * record: pub_shmlog_consume does.
 */
int pub_shmlog_next(struct pub_shmlog_reader *r, struct pub_shmlog_view *v);

/* Move past the record last returned by pub_shmlog_next. */
static inline void pub_shmlog_consume(struct pub_shmlog_reader *r, const struct pub_shmlog_view *v)
{
	r->pos = v->pos + pub_shmlog_align(PUB_SHMLOG_HDR_LEN + v->len);
}

/*
 * Single-reader logs: give the consumed space before limit back to the
 * writer (a release store of head; never past what was read, never
 * backwards). Records read but still in use (lent, not copied) stay the
 * reader's while limit is kept at the first of them. Returns true when the
 * writer said it waits for room and needs a wakeup (the flag is cleared).
 */
bool pub_shmlog_release_to(struct pub_shmlog_reader *r, uint64_t limit);

/* All that was read: pub_shmlog_release_to up to the reader's position. */
static inline bool pub_shmlog_release(struct pub_shmlog_reader *r)
{
	return pub_shmlog_release_to(r, r->pos);
}

/*
 * The reader found nothing and wants to sleep: sets reader_sleeping, full
 * barrier, then looks again. Returns true when it may sleep (the writer
 * will wake it), false when a record arrived meanwhile (flag cleared).
 */
bool pub_shmlog_reader_sleep(struct pub_shmlog_reader *r);

/* The reader is awake again (woken, or polling): the writer need not wake it. */
void pub_shmlog_reader_awake(struct pub_shmlog_reader *r);

/*
 * Overwrite logs: was the record at v->pos (already read) overwritten while
 * it was read? Checks the writer's claim after an acquire fence. A true
 * answer means the bytes read may be torn: discard them.
 */
bool pub_shmlog_lapped(const struct pub_shmlog_reader *r, uint64_t pos);

/*
 * The writer's claim beyond the reader's position once every whole record
 * is read: a record the writer began and never committed (it died, or was
 * stopped mid-write). Untrusted: true only when claim is ahead of pos by no
 * more than the largest record.
 */
bool pub_shmlog_partial(const struct pub_shmlog_reader *r);

#endif
