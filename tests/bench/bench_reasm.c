/* SPDX-License-Identifier: MIT */
/*
 * Reassembly throughput on one core: 64 KiB messages cut at 1024- and
 * 4096-byte MTUs, fed in order through pubd_wire_decode + pubd_reasm_push
 * (the daemon's receive path after the CQ), beside memcpy of the same
 * fragment payloads into a message-sized buffer, measured in the same run.
 *
 * The datagrams of a ring of messages are built in memory once; each round
 * only rewrites the 8-byte sequence number, so the engine sees a stream of
 * new messages. Each figure is the best of ROUNDS runs of at least a second,
 * reasm and memcpy alternating, so a noisy neighbour hurts both alike.
 * Prints a table and one JSON line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frag.h"
#include "reasm.h"

#define MSG_BYTES   65536u
#define RING_MSGS   64u /* 4 MiB of payload: beyond L2, like a receive slab */
#define MIN_SECONDS 1.0
#define CHECK_EVERY 256u
#define ROUNDS	    3 /* alternating, best of each: the host is shared */

struct counts {
	uint64_t delivered;
	uint64_t bytes;
	uint64_t dropped;
};

static void on_deliver(void *ctx, uint64_t src, uint64_t grp, uint64_t seq, const uint8_t *data, size_t len,
		       struct pubd_msgbuf *owned)
{
	struct counts *c = ctx;

	c->delivered++;
	c->bytes += len;
	pubd_msgbuf_put(owned);
}

static void on_drop(void *ctx, uint64_t src, uint64_t grp, enum pub_drop_reason why, uint64_t n)
{
	struct counts *c = ctx;

	c->dropped += n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One 8-byte store, as a NIC's DMA would leave it: byte stores here would
 * stall the decoder's wide load on store forwarding and bill it to reasm. */
static void put_be64(uint8_t *p, uint64_t v)
{
	v = __builtin_bswap64(v);
	memcpy(p, &v, sizeof(v));
}

struct ring {
	uint8_t *mem;	  /* every datagram, back to back */
	size_t *off;	  /* datagram k of message m at off[m * frags + k] */
	uint32_t *len;	  /* its length */
	uint32_t frags;	  /* per message */
	uint32_t payload; /* per fragment but the last */
};

static int ring_build(struct ring *rg, size_t mtu)
{
	struct pubd_wire_hdr tmpl = {.source_id = 0x5eed, .group_id = pubd_group_id("bench", 5)}, h;
	struct pubd_frag_plan p;
	size_t total, pos = 0, off, len, i;
	uint32_t m, k;

	if (pubd_frag_plan(&p, MSG_BYTES, mtu, MSG_BYTES))
		return -1;
	rg->frags = p.frag_count;
	rg->payload = p.frag_payload;
	total = (size_t)RING_MSGS * (MSG_BYTES + (size_t)p.frag_count * PUBD_WIRE_HDR_LEN);
	rg->mem = malloc(total);
	rg->off = malloc(sizeof(*rg->off) * RING_MSGS * p.frag_count);
	rg->len = malloc(sizeof(*rg->len) * RING_MSGS * p.frag_count);
	if (!rg->mem || !rg->off || !rg->len)
		return -1;
	for (m = 0; m < RING_MSGS; m++) {
		tmpl.msg_seq = m;
		for (k = 0; k < p.frag_count; k++) {
			pubd_frag_get(&p, &tmpl, k, &h, &off, &len);
			pubd_wire_encode(&h, rg->mem + pos);
			for (i = 0; i < len; i++)
				rg->mem[pos + PUBD_WIRE_HDR_LEN + i] = (uint8_t)(m * 131 + off + i);
			rg->off[m * p.frag_count + k] = pos;
			rg->len[m * p.frag_count + k] = (uint32_t)(PUBD_WIRE_HDR_LEN + len);
			pos += PUBD_WIRE_HDR_LEN + len;
		}
	}
	return 0;
}

static void ring_free(struct ring *rg)
{
	free(rg->mem);
	free(rg->off);
	free(rg->len);
}

/* Returns GB/s of message bytes delivered, or a negative value on error. */
static double run_reasm(const struct ring *rg, uint64_t *msgs_out)
{
	const struct pubd_reasm_ops ops = {.deliver = on_deliver, .drop = on_drop};
	struct pubd_reasm_config cfg;
	struct counts c = {0};
	struct pubd_reasm *r;
	struct pubd_wire_hdr h;
	const uint8_t *pl;
	size_t pll;
	uint64_t seq = 0, clock_ns = 0;
	double t0, t1 = 0;
	uint32_t k;

	pubd_reasm_config_defaults(&cfg);
	r = pubd_reasm_create(&cfg, &ops, &c);
	if (!r)
		return -1;
	t0 = now_s();
	for (;;) {
		const size_t *offs = rg->off + (seq % RING_MSGS) * rg->frags;
		const uint32_t *lens = rg->len + (seq % RING_MSGS) * rg->frags;

		for (k = 0; k < rg->frags; k++) {
			uint8_t *dg = rg->mem + offs[k];

			put_be64(dg + 24, seq);
			if (pubd_wire_decode(dg, lens[k], &h, &pl, &pll) == 0)
				pubd_reasm_push(r, clock_ns, &h, pl, pll);
		}
		seq++;
		if (seq % CHECK_EVERY == 0) {
			/* A coarse clock is all the engine needs to keep its deadlines. */
			clock_ns += 1000;
			t1 = now_s();
			if (t1 - t0 >= MIN_SECONDS)
				break;
		}
	}
	pubd_reasm_destroy(r);
	if (c.dropped || c.delivered != seq || c.bytes != seq * MSG_BYTES) {
		fprintf(stderr, "bench_reasm: delivered %" PRIu64 "/%" PRIu64 ", dropped %" PRIu64 "\n", c.delivered,
			seq, c.dropped);
		return -1;
	}
	*msgs_out = seq;
	return (double)c.bytes / (t1 - t0) / 1e9;
}

static double run_memcpy(const struct ring *rg, uint8_t *dst)
{
	uint64_t seq = 0, sum = 0;
	double t0, t1 = 0;
	uint32_t k;

	t0 = now_s();
	for (;;) {
		const size_t *offs = rg->off + (seq % RING_MSGS) * rg->frags;
		const uint32_t *lens = rg->len + (seq % RING_MSGS) * rg->frags;

		for (k = 0; k < rg->frags; k++)
			memcpy(dst + (size_t)k * rg->payload, rg->mem + offs[k] + PUBD_WIRE_HDR_LEN,
			       lens[k] - PUBD_WIRE_HDR_LEN);
		/* Keep the copies observable so none is optimised away. */
		__asm__ volatile("" : : "r"(dst) : "memory");
		sum += dst[seq % MSG_BYTES];
		seq++;
		if (seq % CHECK_EVERY == 0) {
			t1 = now_s();
			if (t1 - t0 >= MIN_SECONDS)
				break;
		}
	}
	__asm__ volatile("" : : "r"(sum));
	return (double)(seq * MSG_BYTES) / (t1 - t0) / 1e9;
}

int main(void)
{
	static const size_t mtus[] = {1024, 4096};
	double reasm_gbps[2], memcpy_gbps[2];
	uint32_t frags[2];
	uint64_t msgs[2], n;
	uint8_t *dst = malloc(MSG_BYTES);
	unsigned i, round;

	if (!dst)
		return 1;
	for (i = 0; i < 2; i++) {
		struct ring rg = {0};

		if (ring_build(&rg, mtus[i])) {
			fprintf(stderr, "bench_reasm: out of memory\n");
			ring_free(&rg);
			free(dst);
			return 1;
		}
		frags[i] = rg.frags;
		reasm_gbps[i] = memcpy_gbps[i] = 0;
		msgs[i] = 0;
		for (round = 0; round < ROUNDS; round++) {
			double m = run_memcpy(&rg, dst), g = run_reasm(&rg, &n);

			if (g < 0) {
				ring_free(&rg);
				free(dst);
				return 1;
			}
			if (m > memcpy_gbps[i])
				memcpy_gbps[i] = m;
			if (g > reasm_gbps[i]) {
				reasm_gbps[i] = g;
				msgs[i] = n;
			}
		}
		ring_free(&rg);
	}
	free(dst);

	printf("reassembly of %u-byte messages, in order, one core (decode + push vs memcpy of the payloads),\n"
	       "best of %d runs of >= %.0f s each\n",
	       MSG_BYTES, ROUNDS, MIN_SECONDS);
	printf("%6s %10s %12s %12s %12s %8s\n", "mtu", "frags/msg", "messages", "reasm GB/s", "memcpy GB/s", "ratio");
	for (i = 0; i < 2; i++)
		printf("%6zu %10u %12" PRIu64 " %12.2f %12.2f %8.2f\n", mtus[i], frags[i], msgs[i], reasm_gbps[i],
		       memcpy_gbps[i], reasm_gbps[i] / memcpy_gbps[i]);
	printf("{\"bench\":\"reasm\",\"msg_bytes\":%u,\"results\":[", MSG_BYTES);
	for (i = 0; i < 2; i++)
		printf("%s{\"mtu\":%zu,\"frags_per_msg\":%u,\"messages\":%" PRIu64
		       ",\"reasm_gbps\":%.3f,\"memcpy_gbps\":%.3f,\"ratio\":%.3f}",
		       i ? "," : "", mtus[i], frags[i], msgs[i], reasm_gbps[i], memcpy_gbps[i],
		       reasm_gbps[i] / memcpy_gbps[i]);
	printf("]}\n");
	return 0;
}
