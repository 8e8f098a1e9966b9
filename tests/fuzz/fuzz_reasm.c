/* SPDX-License-Identifier: MIT */
/*
 * Reassembly driven by arbitrary datagram sequences.
 *
 * Input: two config bytes, then records of
 *   u8 clock advance (microseconds), u16 length (big-endian), length bytes
 * (a short last record takes what is left). Each record goes through
 * pubd_wire_decode; good ones are pushed into a reasm with small limits
 * (a heartbeat's age, when it has one, picks its push flags; a batch goes
 * in whole, pubd_reasm_push_batch).
 * Source and group ids are folded into 3 x 2 streams and most sequence
 * numbers into a small window, so datagrams collide with each other.
 *
 * Checked: no crash, no leak, nothing read out of bounds, and, when the
 * config asks for limits under which no stream is ever forgotten:
 *  - no message delivered twice;
 *  - a delivered message is exactly the bytes of the fragments pushed for
 *    it (the first datagram of a sequence sets its geometry; later ones of
 *    the same geometry fill indices not yet filled);
 *  - the accounting identity per stream once every deadline has passed:
 *    delivered + MSG drops == next_seq - baseline.
 * Violations abort.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reasm.h"
#include "wire_ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NSRC	 3
#define NGRP	 2
#define NSTREAMS (NSRC * NGRP)
#define US	 1000ull

struct fstream {
	uint64_t delivered;
	uint64_t msg_drops;
	uint64_t *seqs; /* delivered sequence numbers, to catch a second delivery */
	size_t nseqs, cap;
};

/* A data datagram pushed; payload points into the fuzzer's input. */
struct pushed {
	unsigned stream;
	struct pubd_wire_hdr h;
	const uint8_t *payload;
	size_t len;
};

struct fctx {
	struct fstream s[NSTREAMS];
	bool checkable;
	size_t max_msg;
	struct pushed *log;
	size_t nlog;
	uint8_t *scratch; /* max_message_size bytes */
	uint8_t *filled;  /* one flag per fragment index */
};

static struct fstream *fs(struct fctx *c, uint64_t src, uint64_t grp)
{
	if (src >= NSRC || grp >= NGRP)
		abort(); /* the harness folded every id; anything else is made up */
	return &c->s[src * NGRP + grp];
}

static uint64_t unit_of(const struct pubd_wire_hdr *h, size_t len)
{
	uint32_t unit;

	if (pubd_wire_check_frag(h, len, &unit))
		abort(); /* it was pushed after a good decode */
	return unit;
}

/* Rebuild message (stream, seq) from the log and compare with what came out. */
static void check_content(struct fctx *c, unsigned stream, uint64_t seq, const uint8_t *data, size_t len)
{
	const struct pushed *first = NULL;
	uint64_t unit = 0;
	uint32_t have = 0;
	size_t i;

	for (i = 0; i < c->nlog; i++) {
		const struct pushed *p = &c->log[i];

		if (p->stream != stream || p->h.msg_seq != seq)
			continue;
		if (!first) {
			first = p;
			unit = unit_of(&p->h, p->len);
			if (p->h.msg_len != len || p->h.frag_count > len + 1)
				abort();
			memset(c->filled, 0, p->h.frag_count);
		}
		if (p->h.msg_len != first->h.msg_len || p->h.frag_count != first->h.frag_count ||
		    unit_of(&p->h, p->len) != unit || c->filled[p->h.frag_index])
			continue;
		c->filled[p->h.frag_index] = 1;
		have++;
		memcpy(c->scratch + p->h.frag_offset, p->payload, p->len);
	}
	if (!first || have != first->h.frag_count || (len && memcmp(c->scratch, data, len)))
		abort();
}

static void on_deliver(void *ctx, uint64_t src, uint64_t grp, uint64_t seq, const uint8_t *data, size_t len,
		       struct pubd_msgbuf *owned)
{
	struct fctx *c = ctx;
	struct fstream *s = fs(c, src, grp);
	size_t i;

	if (len > c->max_msg || (owned && (owned->refs != 1 || owned->data != data || owned->len != len)))
		abort();
	if (c->checkable)
		check_content(c, (unsigned)(s - c->s), seq, data, len);
	else
		for (i = 0; i < len; i++) /* the sanitizer checks they are in bounds */
			__asm__ volatile("" : : "r"(data[i]));
	/* Only a stream that was never forgotten promises one delivery. */
	for (i = 0; c->checkable && i < s->nseqs; i++)
		if (s->seqs[i] == seq)
			abort();
	if (s->nseqs == s->cap) {
		uint64_t *n = realloc(s->seqs, (s->cap ? s->cap * 2 : 16) * sizeof(*n));

		if (!n)
			abort();
		s->seqs = n;
		s->cap = s->cap ? s->cap * 2 : 16;
	}
	s->seqs[s->nseqs++] = seq;
	s->delivered++;
	pubd_msgbuf_put(owned);
}

/* A run of a batch's messages: each as on_deliver takes it. */
static void on_run(void *ctx, uint64_t src, uint64_t grp, uint64_t first, const struct pubd_msg_view *v, unsigned n)
{
	unsigned i;

	if (!n)
		abort();
	for (i = 0; i < n; i++)
		on_deliver(ctx, src, grp, first + i, v[i].data, v[i].len, NULL);
}

static void on_drop(void *ctx, uint64_t src, uint64_t grp, enum pub_drop_reason why, uint64_t n)
{
	struct fctx *c = ctx;
	int kind = pub_drop_reason_kind(why);

	if (kind < 0 || n == 0)
		abort();
	/* A malformed datagram is counted under whatever ids it carried. */
	if (why == PUB_DROP_MALFORMED)
		return;
	if (kind == PUB_DROP_KIND_MSG)
		fs(c, src, grp)->msg_drops += n;
}

static void check_stream(void *ctx, const struct pubd_reasm_stream_info *si)
{
	struct fctx *c = ctx;
	struct fstream *s = fs(c, si->source_id, si->group_id);

	if (si->inflight || si->inflight_bytes || si->missing)
		abort();
	if (si->next_seq < si->baseline || s->delivered + s->msg_drops != si->next_seq - si->baseline)
		abort();
}

/* The reassembly limits from the input's first two bytes. Returns whether
 * the accounting identity is checkable (room for every stream forever). */
static bool config_from(uint8_t conf, uint8_t sizes, struct pubd_reasm_config *cfg)
{
	/* The top bit: tight stream limits (forgetting happens, identity not
	 * checkable) or room for every stream forever. */
	bool checkable = !(conf & 0x80);

	pubd_reasm_config_defaults(cfg);
	cfg->budget_bytes = (size_t)1024 << (conf & 7);
	cfg->max_inflight_per_source = (conf >> 3) & 3;
	cfg->max_missing_ranges = (conf >> 5) & 3;
	/* 256 B .. 16 KiB: small enough that inputs reach TOO_LARGE. */
	cfg->max_message_size = (size_t)256 << (2 * (sizes & 3));
	cfg->timeout_ns = 50 * US;
	cfg->max_streams = checkable ? NSTREAMS : 2;
	cfg->idle_timeout_ns = checkable ? UINT64_MAX / 4 : 300 * US;
	return checkable;
}

/* A heartbeat's flags as the daemon could set them: the low two bits of
 * the age it carries (wire_ctl.h) choose NEW_FROM_ZERO and BEGAN_SINCE, so
 * streams are rebased to 0 at any point of their life. */
static unsigned hb_flags(const struct pubd_wire_hdr *h, const uint8_t *dg, size_t len)
{
	uint64_t age;

	if (!(h->flags & PUBD_WIRE_F_HEARTBEAT) || !pubd_ctl_hb_age_us(dg, len, &age))
		return 0;
	return (age & 1 ? PUBD_REASM_NEW_FROM_ZERO : 0) | (age & 2 ? PUBD_REASM_BEGAN_SINCE : 0);
}

/* One datagram (bytes of the input) to reassembly, logged for the checks
 * when it is a data datagram. -1 when out of memory. */
static int push_one(struct pubd_reasm *r, struct fctx *c, uint64_t now, const uint8_t *bytes, size_t len)
{
	struct pubd_wire_hdr h;
	const uint8_t *pl;
	size_t pll;
	/* A heap block of exactly the datagram's size, so a read past it is
	 * caught, in the decoder or in the reassembly. */
	uint8_t *dg = malloc(len ? len : 1);

	if (!dg)
		return -1;
	memcpy(dg, bytes, len);
	if (pubd_wire_decode(dg, len, &h, &pl, &pll) == PUBD_WIRE_OK) {
		h.source_id %= NSRC;
		h.group_id %= NGRP;
		/* Mostly a small window; the top bit keeps a far jump. */
		if (h.msg_seq >> 63)
			h.msg_seq &= ~(1ull << 63);
		else
			h.msg_seq &= 63;
		if (h.flags & PUBD_WIRE_F_BATCH) {
			/* As the daemon's receive path takes a batch (engine/rx.c):
			 * its messages logged first, for the checks. */
			struct pubd_wire_batch_iter it;
			const struct pubd_wire_hdr *mh;
			const uint8_t *d;
			size_t dl;

			pubd_wire_batch_begin(&it, &h, pl, pll);
			while (pubd_wire_batch_next(&it, &mh, &d, &dl))
				c->log[c->nlog++] =
					(struct pushed){.stream = (unsigned)(h.source_id * NGRP + h.group_id),
							.h = *mh,
							.payload = bytes + (size_t)(d - dg),
							.len = dl};
			pubd_reasm_push_batch(r, now, &h, pl, pll, 0);
			free(dg);
			return 0;
		}
		/* A NAK or GONE (CONTROL) is no message's datagram either:
		 * reassembly refuses it as malformed. */
		if (!(h.flags & (PUBD_WIRE_F_HEARTBEAT | PUBD_WIRE_F_CONTROL)))
			c->log[c->nlog++] = (struct pushed){.stream = (unsigned)(h.source_id * NGRP + h.group_id),
							    .h = h,
							    .payload = bytes + (size_t)(pl - dg),
							    .len = pll};
		pubd_reasm_push_flags(r, now, &h, pl, pll, hb_flags(&h, dg, len));
	}
	free(dg);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pubd_reasm_ops ops = {.deliver = on_deliver, .drop = on_drop};
	struct pubd_reasm_config cfg;
	struct pubd_reasm_totals t;
	struct fctx c;
	struct pubd_reasm *r;
	uint64_t now = 1000 * US, kernel_drops = 0;
	bool checkable;
	size_t pos = 2;
	unsigned i;

	if (size < 2)
		return 0;
	memset(&c, 0, sizeof(c));
	checkable = config_from(data[0], data[1], &cfg);
	/* The second byte's bit 2: batches' runs through deliver_run, as the
	 * daemon takes them, or through deliver one by one. */
	if (data[1] & 4)
		ops.deliver_run = on_run;
	c.checkable = checkable;
	c.max_msg = cfg.max_message_size;
	/* Every record is at least 3 bytes: that bounds the log. */
	/* A record of 3 bytes at least, or a batch entry of 2: one log entry each. */
	c.log = malloc(sizeof(*c.log) * (size / 2 + 1));
	c.scratch = malloc(cfg.max_message_size);
	c.filled = malloc(cfg.max_message_size + 1);
	r = pubd_reasm_create(&cfg, &ops, &c);
	if (!r || !c.log || !c.scratch || !c.filled)
		goto out;

	while (pos + 3 <= size) {
		size_t len = (size_t)data[pos + 1] << 8 | data[pos + 2];

		now += data[pos] * US;
		/* A time byte with its top bit set also says the kernel dropped
		 * that many datagrams before this one (pubd_rx_dgram.kernel_drops):
		 * far jumps it accounts for are taken as loss. */
		if (data[pos] & 0x80) {
			kernel_drops += data[pos] & 0x7f;
			pubd_reasm_kernel_drops(r, kernel_drops);
		}
		pos += 3;
		if (len > size - pos)
			len = size - pos;
		if (push_one(r, &c, now, data + pos, len) < 0)
			break;
		pos += len;
		if (pubd_reasm_next_deadline(r) <= now) {
			pubd_reasm_expire(r, now);
			if (pubd_reasm_next_deadline(r) <= now)
				abort();
		}
	}

	pubd_reasm_expire(r, now + cfg.timeout_ns);
	pubd_reasm_totals(r, &t);
	if (t.inflight_msgs || t.inflight_bytes)
		abort();
	if (checkable)
		pubd_reasm_foreach(r, check_stream, &c);
	pubd_reasm_expire(r, UINT64_MAX);
	pubd_reasm_totals(r, &t);
	if (t.streams)
		abort();
out:
	pubd_reasm_destroy(r);
	for (i = 0; i < NSTREAMS; i++)
		free(c.s[i].seqs);
	free(c.log);
	free(c.scratch);
	free(c.filled);
	return 0;
}
