/* SPDX-License-Identifier: MIT */
/*
 * Repair datagrams and state: the control decoder on hostile bytes (whatever
 * it accepts must round-trip through the encoder), NAKs applied to a source
 * window, GONEs, COOKIEs and gaps applied to a receiver's NAK schedule,
 * STATUSes to a source's flow control table (from a few hosts, with stuck
 * receivers struck), on a clock the input drives. Invariants: the window
 * stays within its bytes and the budget, the schedule's gaps within
 * max_gaps, the flow control table within its sizes and its limit the
 * lowest of its receivers', none of a host in its penalty.
 *
 * Input: records, each a u8 op then its bytes:
 *   op % 4 == 0: u16 length, a datagram (wire header + body)
 *   op % 4 == 1: u8 skip, u8 length: keep a message (seq advanced by skip)
 *   op % 4 == 2: u8 ms: advance the clock, expire, run the schedule
 *   op % 4 == 3: u16 first, u8 count, u8 filled: a gap, then one message filled
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flow_ctl.h"
#include "msgbuf.h"
#include "repair_nak.h"
#include "repair_window.h"
#include "wire.h"
#include "wire_ctl.h"

#define MS 1000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool on_send(void *ctx, const struct pubd_nak_gap *g, uint64_t first, uint64_t count)
{
	(void)ctx;
	if (count == 0 || count > PUBD_NAK_MAX_RANGE || first < g->first || first + count > g->first + g->count)
		abort();
	return (first & 3) != 3; /* some NAKs cannot go (no token yet): the schedule must still end */
}

static void on_give_up(void *ctx, uint64_t source, uint64_t group, uint64_t first, uint64_t count, bool partial)
{
	(void)source, (void)group, (void)first, (void)partial;
	if (!count)
		abort();
	*(uint64_t *)ctx += count;
}

static uint64_t rnd(void *ctx)
{
	return ++*(uint64_t *)ctx * 0x9e3779b97f4a7c15ull;
}

static void roundtrip(const struct pubd_ctl *c)
{
	uint8_t out[PUBD_CTL_MAX_LEN];
	struct pubd_ctl again;
	size_t len = pubd_ctl_encode(c, out, sizeof(out));

	if (!len || pubd_ctl_decode(out, len, &again) || again.type != c->type || again.count != c->count ||
	    again.first_seq != c->first_seq || again.token != c->token || again.stream != c->stream ||
	    again.bitmap_len != c->bitmap_len || memcmp(again.bitmap, c->bitmap, c->bitmap_len) ||
	    again.cookie != c->cookie)
		abort();
}

/* The source's flow control table after a STATUS (its host one of 8,
 * from the receiver id) and a check for stuck hosts (the source waiting
 * at the cookie field's value, when odd): bounded, its limit the lowest of
 * its receivers', and none of them of a host in its penalty. */
static void flow_status(struct pubd_fc_source *fc, uint64_t now, uint64_t from, const struct pubd_ctl *c)
{
	uint8_t host = (uint8_t)(from & 7);
	uint32_t i, j;

	if (pubd_fc_source_status(fc, now, from, c->first_seq + c->count, c->frag_first, &host, 1) &&
	    (fc->n == 0 || fc->n > PUBD_FC_RECEIVERS_MAX))
		abort();
	pubd_fc_source_stuck(fc, now, c->cookie & 1, c->cookie >> 1);
	if (fc->nhosts > PUBD_FC_HOSTS_MAX)
		abort();
	for (i = 0; i < fc->n; i++) {
		if (fc->v[i].limit < fc->limit)
			abort();
		for (j = 0; j < fc->nhosts; j++)
			if (fc->hosts[j].struck && fc->hosts[j].len == fc->v[i].host_len &&
			    !memcmp(fc->hosts[j].key, fc->v[i].host, fc->v[i].host_len))
				abort();
	}
	pubd_fc_source_expire(fc, now);
}

static void datagram(const uint8_t *p, size_t len, uint64_t now, struct pubd_repair_window *w, struct pubd_nak_sched *s,
		     struct pubd_fc_source *fc)
{
	uint8_t *buf = malloc(len ? len : 1);
	struct pubd_wire_hdr h;
	const uint8_t *body;
	struct pubd_ctl c;
	size_t blen;
	uint32_t i;

	if (!buf)
		return;
	memcpy(buf, p, len);
	if (pubd_wire_decode(buf, len, &h, &body, &blen) || !(h.flags & PUBD_WIRE_F_CONTROL) ||
	    pubd_ctl_decode(body, blen, &c))
		goto out;
	roundtrip(&c);
	if (c.type == PUBD_CTL_GONE) {
		pubd_nak_gone(s, h.source_id, h.group_id, c.first_seq, c.count);
		goto out;
	}
	if (c.type == PUBD_CTL_STATUS) {
		flow_status(fc, now, h.source_id, &c);
		goto out;
	}
	if (c.type == PUBD_CTL_COOKIE) {
		pubd_nak_due_now(s, now, h.source_id, h.group_id);
		goto out;
	}
	for (i = 0; i < c.count && i < 256; i++)
		if (pubd_repair_window_nak(w, now, c.first_seq + i, h.source_id) > PUBD_REPAIR_MULTICAST)
			abort();
out:
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pubd_repair_window_cfg wc = {
		.window_bytes = 64 << 10, .max_age_ns = 50 * MS, .linger_ns = 5 * MS, .mcast_ns = 2 * MS};
	struct pubd_nak_cfg nc = {.backoff_ns = 3 * MS, .interval_ns = 4 * MS, .retries = 3, .max_gaps = 16};
	struct pubd_nak_ops ops = {.send = on_send, .give_up = on_give_up};
	struct pubd_repair_budget b = {.limit = 48 << 10};
	struct pubd_repair_window w;
	struct pubd_nak_sched s;
	static struct pubd_fc_source fc;
	uint64_t now = 1, seq = 0, given_up = 0, seed = 0;
	size_t i = 0;

	pubd_fc_source_init(&fc, 20 * MS);
	pubd_repair_window_init(&w, &wc, &b);
	if (pubd_nak_init(&s, &nc, &ops, &given_up, rnd, &seed))
		return 0;
	while (i < size) {
		uint8_t op = data[i++];

		if (op % 4 == 0 && i + 2 <= size) {
			size_t len = (size_t)data[i] << 8 | data[i + 1];

			i += 2;
			if (len > size - i)
				len = size - i;
			datagram(data + i, len, now, &w, &s, &fc);
			i += len;
		} else if (op % 4 == 1 && i + 2 <= size) {
			struct pubd_msgbuf *m = pubd_msgbuf_alloc((size_t)data[i + 1] * 64);

			seq += data[i];
			if (m) {
				pubd_repair_window_keep(&w, now, seq++, m, 976);
				pubd_msgbuf_put(m);
			}
			i += 2;
		} else if (op % 4 == 2 && i + 1 <= size) {
			now += data[i++] * MS;
			pubd_repair_window_expire(&w, now);
			pubd_nak_run(&s, now);
		} else if (op % 4 == 3 && i + 4 <= size) {
			uint64_t first = (uint64_t)data[i] << 8 | data[i + 1];

			pubd_nak_gap(&s, now, 1, 2, first, data[i + 2], false);
			pubd_nak_filled(&s, 1, 2, first + data[i + 3]);
			i += 4;
		} else {
			break;
		}
		if (w.bytes > wc.window_bytes || b.used > b.limit || s.n > nc.max_gaps)
			abort();
	}
	pubd_nak_close(&s);
	pubd_repair_window_close(&w);
	if (b.used)
		abort();
	return 0;
}
