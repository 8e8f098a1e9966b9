/* SPDX-License-Identifier: MIT */
/*
 * What the reassembly tests share: a sink that records what the engine
 * reported, and datagrams made through the real encoder and decoder.
 * Used by test_reasm.c, test_reasm_limits.c and test_reasm_property.c.
 */
#ifndef PUBD_TEST_REASM_HARNESS_H
#define PUBD_TEST_REASM_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <malloc.h>

#include "frag.h"
#include "reasm.h"

#define MS    1000000ull
#define SRC_A 0xa1a1a1a1a1a1a1a1ull
#define SRC_B 0xb2b2b2b2b2b2b2b2ull
#define SRC_C 0xc3c3c3c3c3c3c3c3ull
#define GRP_X 0x1111ull
#define GRP_Y 0x2222ull

/* ---- what the engine reported ---- */

struct event {
	uint64_t src, grp, seq;
	size_t len;
	bool owned;
	const uint8_t *data;
};

struct sink {
	uint64_t drops[PUB_DROP__COUNT];
	uint64_t msg_drops;
	uint64_t delivered;
	uint64_t bad_content;
	struct event log[64];
	size_t nlog;
	/* drops per (src, grp) for the tests that tell streams apart */
	struct {
		uint64_t src, grp, n[PUB_DROP__COUNT];
	} per[8];
	size_t nper;
};

struct infos {
	struct pubd_reasm_stream_info s[16];
	size_t n;
};

extern struct sink sink;
extern const struct pubd_reasm_ops ops;
extern uint8_t dgram[PUBD_WIRE_HDR_LEN + 9000];
/* Flags for pubd_reasm_push_flags in push_frag and push_hb; tests that set
 * them reset them to 0 before they return. */
extern unsigned push_flags;

uint8_t pattern(uint64_t seq, size_t off);
uint64_t per_drops(uint64_t src, uint64_t grp, enum pub_drop_reason why);
uint64_t dgram_drops(void);
struct pubd_reasm *make(void (*tweak)(struct pubd_reasm_config *c));
/* Fragment idx of message (src, grp, seq) of len bytes cut for mtu, through
 * the encoder and the decoder like a received datagram. */
void push_frag(struct pubd_reasm *r, uint64_t now, uint64_t src, uint64_t grp, uint64_t seq, size_t len, size_t mtu,
	       uint32_t idx);
uint32_t nfrags(size_t len, size_t mtu);
void push_msg(struct pubd_reasm *r, uint64_t now, uint64_t src, uint64_t grp, uint64_t seq, size_t len);
void push_hb(struct pubd_reasm *r, uint64_t now, uint64_t src, uint64_t grp, uint64_t next_seq);
/* pubd_reasm_foreach callback: up to 16 streams into a struct infos. */
void collect(void *ctx, const struct pubd_reasm_stream_info *s);
struct pubd_reasm_stream_info stream_info(struct pubd_reasm *r, uint64_t src, uint64_t grp);

#endif
