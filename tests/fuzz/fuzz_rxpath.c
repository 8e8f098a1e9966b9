/* SPDX-License-Identifier: MIT */
/*
 * Datagrams through a real daemon's receive path: on_rx (slot and group
 * checks, self filter, raw groups), reassembly, the per-source statistics,
 * fan-out to a local subscriber, and the queries that read them back, all
 * on the fake fabric. One daemon per process; each input starts with no
 * streams.
 *
 * Input: records of u8 ctl, u16 length (big-endian), that many bytes (a
 * short last record takes what is left). ctl bits 0-2 pick the slot it
 * arrives on (0-3: the four groups' slots, 4: slot -1, else a slot nobody
 * joined), bit 3 marks it the fabric's own, bit 4 asks for the header to be
 * folded onto the configured groups and a few sources (so most datagrams
 * reach reassembly), bits 5-6 pick the group id folded in (one may be a
 * group on another address), bit 7 runs a loop turn after it.
 *
 * Groups: a (receive), b on the same address as a, c on another address,
 * r raw. A subscriber on the daemon's socket takes a, b, c and r.
 *
 * Checked after each input, once every reassembly deadline has passed: no
 * partial message left; for every stream, delivered + dropped (message
 * reasons) = sequence numbers from its baseline to its last; per group,
 * the complete messages received = the sum of its streams' deliveries; the
 * query replies decode. Violations abort.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"
#include "../unit/test_daemon_harness.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NSRC 3

static const char *const names[] = {"a", "b", "c", "r"};

static struct hd H;
static struct hc sub;
static bool started;

static struct pubd_group *group(unsigned i)
{
	return hd_group(&H, names[i]);
}

/* The daemon lives as long as the process; its socket and config go with it. */
static void remove_files(void)
{
	unlink(H.sock_path);
	unlink(H.cfg_path);
	rmdir(H.dir);
}

static void start(void)
{
	const char *body = "limits:\n"
			   "  reassembly_timeout_ms: 50\n"
			   "  reassembly_budget: 256KiB\n"
			   "  reassembly_inflight: 4\n"
			   "  max_message_size: 64KiB\n"
			   "  subscriber_queue: 64\n"
			   "groups:\n"
			   "  - name: a\n    address: 239.80.0.1\n"
			   "  - name: b\n    address: 239.80.0.1\n"
			   "  - name: c\n    address: 239.80.0.3\n"
			   "  - name: r\n    address: 239.80.0.4\n    raw: true\n";
	unsigned i;

	if (hd_start(&H, "  receive: always\n", body) < 0)
		abort();
	atexit(remove_files);
	if (hc_connect(&H, &sub, 0) < 0 || hc_hello(&sub, "fuzz-sub") < 0)
		abort();
	for (i = 0; i < 4; i++)
		if (hc_group_req(&sub, PUB_FRAME_SUBSCRIBE, names[i], NULL) < 0)
			abort();
	started = true;
}

static void drain_sub(void)
{
	uint8_t buf[65536];

	while (read(sub.fd, buf, sizeof(buf)) > 0) {
	}
}

struct check {
	bool bad;
	uint64_t delivered[4];
};

static void check_stream(void *ctx, const struct pubd_reasm_stream_info *si)
{
	struct check *ck = ctx;
	struct pubd_source_stats *s = pubd_source_map_get(&H.d.sources, si->source_id, si->group_id, pubd_now_ns());
	unsigned i;

	if (!s || si->inflight || si->inflight_bytes || si->missing || si->next_seq < si->baseline) {
		ck->bad = true;
		return;
	}
	if (s->delivered + pubd_drops_msg_total(&s->drops) != si->next_seq - si->baseline) {
		fprintf(stderr, "stream %llx/%llx: delivered %llu + dropped %llu != %llu sequence numbers\n",
			(unsigned long long)si->source_id, (unsigned long long)si->group_id,
			(unsigned long long)s->delivered, (unsigned long long)pubd_drops_msg_total(&s->drops),
			(unsigned long long)(si->next_seq - si->baseline));
		ck->bad = true;
	}
	for (i = 0; i < 3; i++)
		if (group(i)->id == si->group_id)
			ck->delivered[i] += s->delivered;
}

/* Every query's reply is whole frames of valid tables. */
static void check_queries(void)
{
	static const uint8_t kinds[] = {PUB_QUERY_STATUS, PUB_QUERY_GROUPS, PUB_QUERY_GROUP, PUB_QUERY_DROPS,
					PUB_QUERY_SOURCES};
	unsigned k;

	for (k = 0; k < sizeof(kinds); k++) {
		struct pub_table_builder b = {.grow = pub_table_grow_realloc};
		char err[256];
		size_t off = 0, need;
		const uint8_t *body;
		uint32_t len;
		uint8_t type;

		if (pubd_query(&H.d, &b, 1, kinds[k], "a", 1, err, sizeof(err)) < 0 || b.err)
			abort();
		while (off < b.len) {
			struct pub_table_reader r;
			struct pub_table_cell cell;

			if (pub_proto_frame_peek(b.buf + off, b.len - off, 1u << 30, &type, &len, &body, &need) != 1 ||
			    type != PUB_FRAME_TABLE || pub_proto_dec_table(body, len, &r) < 0)
				abort();
			while (pub_table_next(&r, &cell) == 1) {
			}
			off += PUB_PROTO_HDR_LEN + len;
		}
		free(b.buf);
	}
}

static void reset(void)
{
	unsigned i;

	/* No stream, partial message or statistic survives into the next input. */
	for (i = 0; i < 4; i++) {
		pubd_reasm_forget_group(H.d.reasm, group(i)->id);
		pubd_source_map_forget_group(&H.d.sources, group(i)->id);
		group(i)->received = 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct check ck = {0};
	struct pubd_reasm_totals t;
	uint64_t srcs[NSRC];
	size_t pos = 0;
	unsigned i;

	if (!started)
		start();
	reset();
	srcs[0] = 0x1111;
	srcs[1] = 0x2222;
	srcs[2] = H.d.source_id; /* our own id, seen back: discarded */

	while (pos + 3 <= size) {
		uint8_t ctl = data[pos];
		size_t len = (size_t)data[pos + 1] << 8 | data[pos + 2];
		unsigned sel = ctl & 7;
		int slot;
		uint8_t *dg;

		pos += 3;
		if (len > size - pos)
			len = size - pos;
		/* Exactly the datagram's size on the heap: a read past it is caught. */
		dg = malloc(len ? len : 1);
		if (!dg)
			abort();
		memcpy(dg, data + pos, len);
		pos += len;
		if (ctl & 0x10 && len >= PUBD_WIRE_HDR_LEN) {
			struct pubd_wire_hdr h;
			const uint8_t *pl;
			size_t pll;

			if (pubd_wire_decode(dg, len, &h, &pl, &pll) == PUBD_WIRE_OK) {
				h.group_id = group((ctl >> 5) & 3)->id;
				h.source_id = srcs[h.source_id % NSRC];
				if (h.msg_seq >> 63)
					h.msg_seq &= ~(1ull << 63);
				else
					h.msg_seq &= 63;
				pubd_wire_encode(&h, dg);
			}
		}
		slot = sel < 4 ? group(sel)->slot : sel == 4 ? -1 : 40 + (int)sel;
		pubd_fake_inject(H.fk, slot, dg, (uint32_t)len, ctl & 8);
		free(dg);
		if (ctl & 0x80) {
			hd_turn(&H, 0);
			drain_sub();
		}
	}

	/* Every deadline passes (streams stay: they are far from idle). */
	pubd_reasm_expire(H.d.reasm, pubd_now_ns() + (uint64_t)H.d.cfg.reassembly_timeout_ms * 1000000ull + 1);
	pubd_reasm_totals(H.d.reasm, &t);
	if (t.inflight_msgs || t.inflight_bytes)
		abort();
	pubd_reasm_foreach(H.d.reasm, check_stream, &ck);
	if (ck.bad)
		abort();
	for (i = 0; i < 3; i++) {
		if (group(i)->received != ck.delivered[i]) {
			fprintf(stderr, "group %s: received %llu, its streams delivered %llu\n", names[i],
				(unsigned long long)group(i)->received, (unsigned long long)ck.delivered[i]);
			abort();
		}
	}
	check_queries();
	hd_settle(&H, 50);
	drain_sub();
	return 0;
}
