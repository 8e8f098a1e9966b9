/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "shmlog.h"

static bool cap_valid(uint32_t cap)
{
	return cap >= PUB_SHMLOG_CAP_MIN && cap <= PUB_SHMLOG_CAP_MAX && (cap & (cap - 1)) == 0;
}

static bool max_record_valid(uint32_t cap, uint32_t max_record)
{
	return max_record >= 64 && max_record <= cap / 4 && max_record % PUB_SHMLOG_ALIGN == 0;
}

static uint32_t lap_of(uint64_t pos, uint32_t cap)
{
	return (uint32_t)(pos / cap) + 1;
}

static uint64_t commit_word(uint64_t pos, uint32_t cap, uint32_t len)
{
	return (uint64_t)lap_of(pos, cap) << 32 | len;
}

int pub_shmlog_format(void *map, size_t map_len, uint32_t cap, uint32_t max_record, uint32_t kind)
{
	struct pub_shmlog_ctl *ctl = map;

	if (!cap_valid(cap) || !max_record_valid(cap, max_record) || map_len < pub_shmlog_map_len(cap))
		return -EINVAL;
	memset(ctl, 0, sizeof(*ctl));
	ctl->magic = PUB_SHMLOG_MAGIC;
	ctl->version = PUB_SHMLOG_VERSION;
	ctl->capacity = cap;
	ctl->max_record = max_record;
	ctl->kind = kind;
	/* Idle: the commit word at position 0 is the one a writer may touch. */
	atomic_store_explicit(&ctl->claim, PUB_SHMLOG_ALIGN, memory_order_relaxed);
	/* A new log's reader waits for the first record to be rung in. */
	atomic_store_explicit(&ctl->reader_sleeping, 1, memory_order_relaxed);
	return 0;
}

/* ---- writer ---- */

int pub_shmlog_writer_init(struct pub_shmlog_writer *w, void *map, size_t map_len, bool overwrite)
{
	struct pub_shmlog_ctl *ctl = map;
	uint32_t cap;

	memset(w, 0, sizeof(*w));
	if (map_len < PUB_SHMLOG_CTL_LEN || ctl->magic != PUB_SHMLOG_MAGIC || ctl->version != PUB_SHMLOG_VERSION)
		return -EPROTO;
	cap = ctl->capacity;
	if (!cap_valid(cap) || !max_record_valid(cap, ctl->max_record) || map_len < pub_shmlog_map_len(cap))
		return -EPROTO;
	w->ctl = ctl;
	w->ring = (uint8_t *)map + PUB_SHMLOG_CTL_LEN;
	w->cap = cap;
	w->max_record = ctl->max_record;
	w->tail = atomic_load_explicit(&ctl->tail, memory_order_acquire);
	w->head_seen = atomic_load_explicit(&ctl->head, memory_order_acquire);
	w->overwrite = overwrite;
	return 0;
}

static struct pub_shmlog_rec *rec_at(uint8_t *ring, uint32_t cap, uint64_t pos)
{
	return (struct pub_shmlog_rec *)(ring + (pos & (cap - 1)));
}

/* Ring bytes a record with len body bytes takes from w->tail: padding to
 * the ring's end when it would cross it, the record, and the commit word
 * after it (zeroed before the record is committed). */
static uint64_t bytes_needed(const struct pub_shmlog_writer *w, uint32_t len, uint32_t *pad)
{
	uint32_t alen = pub_shmlog_align(PUB_SHMLOG_HDR_LEN + len);
	uint32_t off = (uint32_t)(w->tail & (w->cap - 1));

	*pad = off + alen > w->cap ? w->cap - off : 0;
	return (uint64_t)*pad + alen + PUB_SHMLOG_ALIGN;
}

static bool room_for(struct pub_shmlog_writer *w, uint64_t need)
{
	/* The END record's room, kept back from everything else. */
	need += w->reserve;
	uint64_t used;

	if (w->overwrite)
		return true;
	used = w->tail - w->head_seen;
	if (used <= w->cap && need <= w->cap - used)
		return true;
	w->head_seen = atomic_load_explicit(&w->ctl->head, memory_order_acquire);
	used = w->tail - w->head_seen;
	/* A head past our tail is nonsense from a broken reader: no room. */
	return used <= w->cap && need <= w->cap - used;
}

/* An END record takes the room the others leave it. */
static bool room_for_end(struct pub_shmlog_writer *w, uint64_t need)
{
	uint32_t reserve = w->reserve;
	bool ok;

	w->reserve = 0;
	ok = room_for(w, need);
	w->reserve = reserve;
	return ok;
}

uint64_t pub_shmlog_room(struct pub_shmlog_writer *w)
{
	uint64_t used;

	if (w->overwrite)
		return w->cap;
	w->head_seen = atomic_load_explicit(&w->ctl->head, memory_order_acquire);
	used = w->tail - w->head_seen;
	return used <= w->cap ? w->cap - used : 0;
}

bool pub_shmlog_has_room(struct pub_shmlog_writer *w, uint32_t len)
{
	uint32_t pad;

	if (PUB_SHMLOG_HDR_LEN + (uint64_t)len > w->max_record)
		return false;
	return room_for(w, bytes_needed(w, len, &pad));
}

/* Announce [tail, end) before writing it: an overwrite log's readers check
 * it after reading, a single reader counts a record left half-written. */
static void announce(struct pub_shmlog_writer *w, uint64_t end)
{
	atomic_store_explicit(&w->ctl->claim, end, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void publish(struct pub_shmlog_writer *w, struct pub_shmlog_rec *rec, uint32_t len)
{
	atomic_store_explicit(&rec->commit, commit_word(w->tail, w->cap, len), memory_order_release);
	w->tail += pub_shmlog_align(len);
	atomic_store_explicit(&w->ctl->tail, w->tail, memory_order_release);
}

static void write_padding(struct pub_shmlog_writer *w, uint32_t pad)
{
	struct pub_shmlog_rec *rec = rec_at(w->ring, w->cap, w->tail);

	rec->type = PUB_SHMLOG_PAD;
	rec->flags = 0;
	rec->aux = 0;
	/* The pad ends the pass: the next commit word is the ring's first. */
	atomic_store_explicit(&rec_at(w->ring, w->cap, w->tail + pad)->commit, 0, memory_order_relaxed);
	publish(w, rec, pad);
}

void *pub_shmlog_claim(struct pub_shmlog_writer *w, uint16_t type, uint16_t flags, uint32_t aux, uint32_t len)
{
	struct pub_shmlog_rec *rec;
	uint32_t pad, alen;
	uint64_t need;

	if (w->open || PUB_SHMLOG_HDR_LEN + (uint64_t)len > w->max_record)
		return NULL;
	need = bytes_needed(w, len, &pad);
	if (type == PUB_SHMLOG_END ? !room_for_end(w, need) : !room_for(w, need))
		return NULL;
	announce(w, w->tail + need);
	if (pad)
		write_padding(w, pad);
	alen = pub_shmlog_align(PUB_SHMLOG_HDR_LEN + len);
	rec = rec_at(w->ring, w->cap, w->tail);
	rec->type = type;
	rec->flags = flags;
	rec->aux = aux;
	atomic_store_explicit(&rec_at(w->ring, w->cap, w->tail + alen)->commit, 0, memory_order_relaxed);
	w->open = rec;
	w->open_len = PUB_SHMLOG_HDR_LEN + len;
	return rec + 1;
}

void pub_shmlog_commit(struct pub_shmlog_writer *w)
{
	uint64_t pos = w->tail;

	if (!w->open)
		return;
	publish(w, w->open, w->open_len);
	atomic_store_explicit(&w->ctl->latest, pos, memory_order_release);
	w->open = NULL;
}

bool pub_shmlog_wake_reader(struct pub_shmlog_writer *w)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&w->ctl->reader_sleeping, memory_order_relaxed))
		return false;
	return atomic_exchange_explicit(&w->ctl->reader_sleeping, 0, memory_order_relaxed) != 0;
}

bool pub_shmlog_writer_sleep(struct pub_shmlog_writer *w, uint32_t len)
{
	atomic_store_explicit(&w->ctl->writer_waiting, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (!pub_shmlog_has_room(w, len))
		return true;
	atomic_store_explicit(&w->ctl->writer_waiting, 0, memory_order_relaxed);
	return false;
}

/* ---- reader ---- */

int pub_shmlog_reader_init(struct pub_shmlog_reader *r, void *map, size_t map_len, uint32_t cap, uint32_t max_record,
			   uint64_t start)
{
	struct pub_shmlog_ctl *ctl = map;

	memset(r, 0, sizeof(*r));
	if (map_len < PUB_SHMLOG_CTL_LEN)
		return -EPROTO;
	if (!cap) {
		if (ctl->magic != PUB_SHMLOG_MAGIC || ctl->version != PUB_SHMLOG_VERSION)
			return -EPROTO;
		cap = ctl->capacity;
		max_record = ctl->max_record;
	}
	if (!cap_valid(cap) || !max_record_valid(cap, max_record) || map_len < pub_shmlog_map_len(cap) ||
	    start % PUB_SHMLOG_ALIGN)
		return -EPROTO;
	r->ctl = ctl;
	r->ring = (const uint8_t *)map + PUB_SHMLOG_CTL_LEN;
	r->cap = cap;
	r->max_record = max_record;
	r->pos = r->head = start;
	return 0;
}

/* Check one commit word the writer stored at r->pos (its offset off).
 * Returns the record length, 0 for "not yet", -EPROTO for garbage. */
static long check_commit(const struct pub_shmlog_reader *r, uint64_t c, uint32_t off, uint16_t type)
{
	uint32_t len = (uint32_t)c, lap = (uint32_t)(c >> 32);

	if (!c)
		return 0;
	if (lap != lap_of(r->pos, r->cap))
		return -EPROTO;
	if (type == PUB_SHMLOG_PAD)
		return len == r->cap - off ? (long)len : -EPROTO;
	if (type == PUB_SHMLOG_END)
		return len == PUB_SHMLOG_HDR_LEN ? (long)len : -EPROTO;
	if (type != PUB_SHMLOG_MSG || len < PUB_SHMLOG_HDR_LEN || len > r->max_record || len > r->cap - off)
		return -EPROTO;
	return len;
}

int pub_shmlog_next(struct pub_shmlog_reader *r, struct pub_shmlog_view *v)
{
	const struct pub_shmlog_rec *rec;
	uint32_t off;
	uint16_t type;
	uint64_t c;
	long len;

	for (;;) {
		off = (uint32_t)(r->pos & (r->cap - 1));
		rec = (const struct pub_shmlog_rec *)(r->ring + off);
		c = atomic_load_explicit((_Atomic uint64_t *)&rec->commit, memory_order_acquire);
		/* One read of each field the checks use: the writer may change
		 * them under us, and must not get past the checks that way. */
		type = *(const volatile uint16_t *)&rec->type;
		len = check_commit(r, c, off, type);
		if (len <= 0)
			return (int)len;
		if (type == PUB_SHMLOG_PAD) {
			r->pos += (uint32_t)len;
			continue;
		}
		v->pos = r->pos;
		v->type = type;
		v->flags = *(const volatile uint16_t *)&rec->flags;
		v->aux = *(const volatile uint32_t *)&rec->aux;
		v->body = (const uint8_t *)(rec + 1);
		v->len = (uint32_t)len - PUB_SHMLOG_HDR_LEN;
		return 1;
	}
}

bool pub_shmlog_release_to(struct pub_shmlog_reader *r, uint64_t limit)
{
	uint64_t to = limit < r->pos ? limit : r->pos;

	if (to <= r->head)
		return false;
	r->head = to;
	atomic_store_explicit(&r->ctl->head, r->head, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&r->ctl->writer_waiting, memory_order_relaxed))
		return false;
	return atomic_exchange_explicit(&r->ctl->writer_waiting, 0, memory_order_relaxed) != 0;
}

bool pub_shmlog_reader_sleep(struct pub_shmlog_reader *r)
{
	const struct pub_shmlog_rec *rec = (const struct pub_shmlog_rec *)(r->ring + (r->pos & (r->cap - 1)));

	atomic_store_explicit(&r->ctl->reader_sleeping, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit((_Atomic uint64_t *)&rec->commit, memory_order_relaxed))
		return true;
	atomic_store_explicit(&r->ctl->reader_sleeping, 0, memory_order_relaxed);
	return false;
}

void pub_shmlog_reader_awake(struct pub_shmlog_reader *r)
{
	atomic_store_explicit(&r->ctl->reader_sleeping, 0, memory_order_relaxed);
}

bool pub_shmlog_lapped(const struct pub_shmlog_reader *r, uint64_t pos)
{
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&r->ctl->claim, memory_order_relaxed) > pos + r->cap;
}

bool pub_shmlog_partial(const struct pub_shmlog_reader *r)
{
	uint64_t claim = atomic_load_explicit(&r->ctl->claim, memory_order_relaxed);

	/* Idle, the claim covers only the next commit word. A claim further
	 * on but within one record and its padding is a record begun and
	 * never committed; anything else is the writer's nonsense. */
	return claim > r->pos + PUB_SHMLOG_ALIGN && claim - r->pos <= (uint64_t)r->max_record * 2 + PUB_SHMLOG_ALIGN;
}
