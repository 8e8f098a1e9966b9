/* SPDX-License-Identifier: MIT */
/* The datagram header codec: layout, byte order, and one error per fault. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire.h"

/* A data fragment of a 3000-byte message cut at unit 976 (1024-byte MTU). */
static struct pubd_wire_hdr sample_hdr(uint32_t index)
{
	struct pubd_wire_hdr h = {
		.version = PUBD_WIRE_VERSION,
		.group_id = 0x0102030405060708ull,
		.source_id = 0x1112131415161718ull,
		.msg_seq = 0x2122232425262728ull,
		.msg_len = 3000,
		.frag_index = index,
		.frag_count = 4,
		.frag_offset = index * 976,
	};
	return h;
}

static size_t sample_plen(uint32_t index)
{
	return index < 3 ? 976 : 3000 - 3 * 976;
}

static uint8_t dgram[PUBD_WIRE_HDR_LEN + 4096];

/* Encode h followed by plen payload bytes into dgram; returns its length. */
static size_t build(const struct pubd_wire_hdr *h, size_t plen)
{
	pubd_wire_encode(h, dgram);
	memset(dgram + PUBD_WIRE_HDR_LEN, 0xab, plen);
	return PUBD_WIRE_HDR_LEN + plen;
}

static int decode_hdr(const struct pubd_wire_hdr *h, size_t plen)
{
	struct pubd_wire_hdr out;
	const uint8_t *pl;
	size_t pll;

	return pubd_wire_decode(dgram, build(h, plen), &out, &pl, &pll);
}

static void wire_encodes_fields_in_network_byte_order(void **state)
{
	static const uint8_t want[PUBD_WIRE_HDR_LEN] = {
		0x50, 0x55, 0x42, 0x44, 1,    0x01, 0,	  48,	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
		0x31, 0x32, 0x33, 0x34, 0x41, 0x42, 0x43, 0x44, 0x51, 0x52, 0x53, 0x54, 0x61, 0x62, 0x63, 0x64,
	};
	struct pubd_wire_hdr h = {
		.version = 7, /* ignored: encode always writes its own version */
		.flags = 0x01,
		.group_id = 0x0102030405060708ull,
		.source_id = 0x1112131415161718ull,
		.msg_seq = 0x2122232425262728ull,
		.msg_len = 0x31323334,
		.frag_index = 0x41424344,
		.frag_count = 0x51525354,
		.frag_offset = 0x61626364,
	};
	uint8_t out[PUBD_WIRE_HDR_LEN];

	pubd_wire_encode(&h, out);
	assert_memory_equal(out, want, sizeof(want));
}

static void wire_roundtrips_every_fragment(void **state)
{
	struct pubd_wire_hdr h, out;
	const uint8_t *pl;
	size_t pll, len;
	uint32_t i;

	for (i = 0; i < 4; i++) {
		h = sample_hdr(i);
		len = build(&h, sample_plen(i));
		memset(&out, 0, sizeof(out));
		assert_int_equal(pubd_wire_decode(dgram, len, &out, &pl, &pll), PUBD_WIRE_OK);
		assert_int_equal(out.version, PUBD_WIRE_VERSION);
		assert_int_equal(out.flags, 0);
		assert_true(out.group_id == h.group_id);
		assert_true(out.source_id == h.source_id);
		assert_true(out.msg_seq == h.msg_seq);
		assert_int_equal(out.msg_len, h.msg_len);
		assert_int_equal(out.frag_index, i);
		assert_int_equal(out.frag_count, 4);
		assert_int_equal(out.frag_offset, h.frag_offset);
		assert_ptr_equal(pl, dgram + PUBD_WIRE_HDR_LEN);
		assert_int_equal(pll, sample_plen(i));
	}
}

static void wire_accepts_empty_message(void **state)
{
	struct pubd_wire_hdr h = {.msg_seq = 5, .frag_count = 1};

	assert_int_equal(decode_hdr(&h, 0), PUBD_WIRE_OK);
}

static void wire_skips_longer_header_of_later_version_layout(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(3), out;
	size_t plen = sample_plen(3), len;
	const uint8_t *pl;
	size_t pll;

	/* 8 extra header bytes, then the payload. */
	pubd_wire_encode(&h, dgram);
	dgram[7] = 56;
	memset(dgram + 48, 0xee, 8);
	memset(dgram + 56, 0xab, plen);
	len = 56 + plen;
	assert_int_equal(pubd_wire_decode(dgram, len, &out, &pl, &pll), PUBD_WIRE_OK);
	assert_ptr_equal(pl, dgram + 56);
	assert_int_equal(pll, plen);
}

static void wire_rejects_short_datagram(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(0), out;
	const uint8_t *pl;
	size_t pll;

	build(&h, 0);
	assert_int_equal(pubd_wire_decode(dgram, 0, &out, &pl, &pll), PUBD_WIRE_ERR_SHORT);
	assert_int_equal(pubd_wire_decode(dgram, PUBD_WIRE_HDR_LEN - 1, &out, &pl, &pll), PUBD_WIRE_ERR_SHORT);
}

static void wire_rejects_bad_magic(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(0), out;
	const uint8_t *pl;
	size_t pll, len = build(&h, sample_plen(0));

	dgram[3] ^= 1;
	assert_int_equal(pubd_wire_decode(dgram, len, &out, &pl, &pll), PUBD_WIRE_ERR_MAGIC);
}

static void wire_rejects_unknown_version(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(0), out;
	const uint8_t *pl;
	size_t pll, len = build(&h, sample_plen(0));

	dgram[4] = 2;
	assert_int_equal(pubd_wire_decode(dgram, len, &out, &pl, &pll), PUBD_WIRE_ERR_VERSION);
	dgram[4] = 0;
	assert_int_equal(pubd_wire_decode(dgram, len, &out, &pl, &pll), PUBD_WIRE_ERR_VERSION);
}

static void wire_rejects_header_length_below_48_or_beyond_datagram(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(0), out;
	const uint8_t *pl;
	size_t pll, len = build(&h, sample_plen(0));

	dgram[7] = 47;
	assert_int_equal(pubd_wire_decode(dgram, len, &out, &pl, &pll), PUBD_WIRE_ERR_HDR_LEN);
	dgram[6] = (uint8_t)((len + 1) >> 8);
	dgram[7] = (uint8_t)(len + 1);
	assert_int_equal(pubd_wire_decode(dgram, len, &out, &pl, &pll), PUBD_WIRE_ERR_HDR_LEN);
}

static void wire_rejects_unknown_flags(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(0);

	h.flags = 0x10;
	assert_int_equal(decode_hdr(&h, sample_plen(0)), PUBD_WIRE_ERR_FLAGS);
	h.flags = 0x80;
	assert_int_equal(decode_hdr(&h, sample_plen(0)), PUBD_WIRE_ERR_FLAGS);
}

/* A repair is a data fragment like any other, flagged; a datagram has one kind at most. */
static void wire_accepts_repair_fragment_and_one_kind_only(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(3), out;
	const uint8_t *pl;
	size_t pll;

	h.flags = PUBD_WIRE_F_REPAIR;
	assert_int_equal(pubd_wire_decode(dgram, build(&h, sample_plen(3)), &out, &pl, &pll), PUBD_WIRE_OK);
	assert_int_equal(out.flags, PUBD_WIRE_F_REPAIR);
	assert_int_equal(out.frag_index, 3);
	h.frag_offset = 1; /* still checked as a fragment */
	assert_int_equal(decode_hdr(&h, sample_plen(3)), PUBD_WIRE_ERR_FRAG_LAYOUT);
	h = sample_hdr(0);
	h.flags = PUBD_WIRE_F_REPAIR | PUBD_WIRE_F_HEARTBEAT;
	assert_int_equal(decode_hdr(&h, sample_plen(0)), PUBD_WIRE_ERR_CONTROL);
	h.flags = PUBD_WIRE_F_REPAIR | PUBD_WIRE_F_CONTROL;
	assert_int_equal(decode_hdr(&h, sample_plen(0)), PUBD_WIRE_ERR_CONTROL);
}

/* A control datagram: no fragments, msg_len the body's length, msg_seq 0. */
static void wire_checks_control_datagram_shape(void **state)
{
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_CONTROL, .group_id = 7, .source_id = 9, .msg_len = 40}, out;
	const uint8_t *pl;
	size_t pll;

	assert_int_equal(pubd_wire_decode(dgram, build(&h, 40), &out, &pl, &pll), PUBD_WIRE_OK);
	assert_int_equal(pll, 40);
	assert_ptr_equal(pl, dgram + PUBD_WIRE_HDR_LEN);
	assert_int_equal(decode_hdr(&h, 39), PUBD_WIRE_ERR_CONTROL);
	h.frag_count = 1;
	assert_int_equal(decode_hdr(&h, 40), PUBD_WIRE_ERR_CONTROL);
	h.frag_count = 0;
	h.msg_seq = 1;
	assert_int_equal(decode_hdr(&h, 40), PUBD_WIRE_ERR_CONTROL);
	h.msg_seq = 0;
	h.frag_offset = 4;
	assert_int_equal(decode_hdr(&h, 40), PUBD_WIRE_ERR_CONTROL);
}

static void wire_rejects_zero_fragment_count_on_data(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(0);

	h.frag_count = 0;
	assert_int_equal(decode_hdr(&h, sample_plen(0)), PUBD_WIRE_ERR_FRAG_COUNT);
}

static void wire_rejects_more_fragments_than_bytes(void **state)
{
	struct pubd_wire_hdr h = {.msg_len = 3, .frag_count = 4, .frag_index = 0};

	assert_int_equal(decode_hdr(&h, 1), PUBD_WIRE_ERR_FRAG_COUNT);
	h = (struct pubd_wire_hdr){.msg_len = 0, .frag_count = 2};
	assert_int_equal(decode_hdr(&h, 0), PUBD_WIRE_ERR_FRAG_COUNT);
}

static void wire_rejects_fragment_index_not_below_count(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(0);

	h.frag_index = 4;
	assert_int_equal(decode_hdr(&h, sample_plen(0)), PUBD_WIRE_ERR_FRAG_INDEX);
	h.frag_index = UINT32_MAX;
	assert_int_equal(decode_hdr(&h, sample_plen(0)), PUBD_WIRE_ERR_FRAG_INDEX);
}

static void wire_rejects_fragment_beyond_message(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(3);

	/* The last fragment with one byte too many. */
	assert_int_equal(decode_hdr(&h, sample_plen(3) + 1), PUBD_WIRE_ERR_FRAG_RANGE);
	/* An offset that would wrap a 32-bit sum. */
	h.frag_offset = UINT32_MAX;
	assert_int_equal(decode_hdr(&h, 2), PUBD_WIRE_ERR_FRAG_RANGE);
}

static void wire_rejects_empty_fragment_of_nonempty_message(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(1);

	assert_int_equal(decode_hdr(&h, 0), PUBD_WIRE_ERR_FRAG_SIZE);
}

static void wire_rejects_single_fragment_shorter_than_message(void **state)
{
	struct pubd_wire_hdr h = {.msg_len = 100, .frag_count = 1};

	assert_int_equal(decode_hdr(&h, 99), PUBD_WIRE_ERR_FRAG_SIZE);
	assert_int_equal(decode_hdr(&h, 100), PUBD_WIRE_OK);
}

static void wire_rejects_fragment_off_the_layout(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(1);

	/* Fragment 1 must sit at 1 * its own size. */
	h.frag_offset = 975;
	assert_int_equal(decode_hdr(&h, 976), PUBD_WIRE_ERR_FRAG_LAYOUT);
	/* 4 fragments of 500 cannot make 3000 bytes. */
	h = sample_hdr(1);
	h.frag_offset = 500;
	assert_int_equal(decode_hdr(&h, 500), PUBD_WIRE_ERR_FRAG_LAYOUT);
	/* Last fragment that does not end the message. */
	h = sample_hdr(3);
	assert_int_equal(decode_hdr(&h, sample_plen(3) - 1), PUBD_WIRE_ERR_FRAG_LAYOUT);
	/* Last fragment whose offset is not a multiple of count - 1. */
	h = sample_hdr(3);
	h.frag_offset = 2929;
	assert_int_equal(decode_hdr(&h, 71), PUBD_WIRE_ERR_FRAG_LAYOUT);
	/* Last fragment larger than the unit its offset implies. */
	h = (struct pubd_wire_hdr){.msg_len = 30, .frag_count = 2, .frag_index = 1, .frag_offset = 10};
	assert_int_equal(decode_hdr(&h, 20), PUBD_WIRE_ERR_FRAG_LAYOUT);
}

static void wire_check_frag_reports_unit(void **state)
{
	struct pubd_wire_hdr h;
	uint32_t unit, i;

	for (i = 0; i < 4; i++) {
		h = sample_hdr(i);
		unit = 0;
		assert_int_equal(pubd_wire_check_frag(&h, sample_plen(i), &unit), PUBD_WIRE_OK);
		assert_int_equal(unit, 976);
	}
	h = (struct pubd_wire_hdr){.msg_len = 77, .frag_count = 1};
	assert_int_equal(pubd_wire_check_frag(&h, 77, &unit), PUBD_WIRE_OK);
	assert_int_equal(unit, 77);
}

static void wire_accepts_heartbeat(void **state)
{
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_HEARTBEAT, .msg_seq = 42}, out;
	const uint8_t *pl;
	size_t pll, len = build(&h, 0);

	assert_int_equal(pubd_wire_decode(dgram, len, &out, &pl, &pll), PUBD_WIRE_OK);
	assert_int_equal(out.flags, PUBD_WIRE_F_HEARTBEAT);
	assert_int_equal(out.msg_seq, 42);
	assert_int_equal(pll, 0);
}

static void wire_rejects_heartbeat_with_payload_fragments_or_length(void **state)
{
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_HEARTBEAT, .msg_seq = 42};

	assert_int_equal(decode_hdr(&h, 1), PUBD_WIRE_ERR_HEARTBEAT);
	h.frag_count = 1;
	assert_int_equal(decode_hdr(&h, 0), PUBD_WIRE_ERR_HEARTBEAT);
	h.frag_count = 0;
	h.msg_len = 1;
	assert_int_equal(decode_hdr(&h, 0), PUBD_WIRE_ERR_HEARTBEAT);
	h.msg_len = 0;
	h.frag_offset = 1;
	assert_int_equal(decode_hdr(&h, 0), PUBD_WIRE_ERR_HEARTBEAT);
	h.frag_offset = 0;
	h.frag_index = 1;
	assert_int_equal(decode_hdr(&h, 0), PUBD_WIRE_ERR_HEARTBEAT);
}

/* Each prefix of a good datagram, in a heap block of exactly that size:
 * AddressSanitizer catches any read past it. */
static void wire_never_reads_past_the_datagram(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(3), out;
	size_t full = build(&h, sample_plen(3)), len;
	const uint8_t *pl;
	size_t pll;
	int err;

	for (len = 0; len <= full; len++) {
		uint8_t *copy = malloc(len ? len : 1);

		assert_non_null(copy);
		memcpy(copy, dgram, len);
		err = pubd_wire_decode(copy, len, &out, &pl, &pll);
		if (len < PUBD_WIRE_HDR_LEN)
			assert_int_equal(err, PUBD_WIRE_ERR_SHORT);
		else if (len < full)
			assert_int_not_equal(err, PUBD_WIRE_OK);
		else
			assert_int_equal(err, PUBD_WIRE_OK);
		free(copy);
	}
}

/* A batch of the messages lens[0..n) (byte i of message k is k + i) into
 * dgram with header h; returns the datagram's length. */
static size_t build_batch(struct pubd_wire_hdr *h, const uint16_t *lens, unsigned n)
{
	uint8_t msg[512];
	size_t off = PUBD_WIRE_HDR_LEN;
	unsigned k, i;

	for (k = 0; k < n; k++) {
		for (i = 0; i < lens[k]; i++)
			msg[i] = (uint8_t)(k + i);
		off += pubd_wire_batch_put(dgram + off, msg, lens[k]);
	}
	h->flags = PUBD_WIRE_F_BATCH;
	h->frag_count = n;
	h->msg_len = (uint32_t)(off - PUBD_WIRE_HDR_LEN);
	pubd_wire_encode(h, dgram);
	return off;
}

static void wire_batch_roundtrips_its_messages_in_order(void **state)
{
	static const uint16_t lens[] = {64, 0, 1, 500, 64};
	struct pubd_wire_hdr h = {.group_id = 7, .source_id = 9, .msg_seq = 1000}, out;
	const struct pubd_wire_hdr *mh;
	struct pubd_wire_batch_iter it;
	const uint8_t *pl, *data;
	size_t pll, len, i;
	unsigned k = 0;

	assert_int_equal(pubd_wire_decode(dgram, build_batch(&h, lens, 5), &out, &pl, &pll), PUBD_WIRE_OK);
	assert_int_equal(out.flags, PUBD_WIRE_F_BATCH);
	assert_int_equal(pll, 5 * PUBD_WIRE_BATCH_ENTRY_HDR + 64 + 0 + 1 + 500 + 64);
	pubd_wire_batch_begin(&it, &out, pl, pll);
	while (pubd_wire_batch_next(&it, &mh, &data, &len)) {
		assert_true(k < 5);
		assert_int_equal(len, lens[k]);
		/* Each message as a one-fragment message alone would decode. */
		assert_int_equal(mh->flags, 0);
		assert_true(mh->msg_seq == 1000 + k);
		assert_int_equal(mh->msg_len, lens[k]);
		assert_int_equal(mh->frag_count, 1);
		assert_int_equal(mh->frag_index, 0);
		assert_true(mh->group_id == 7 && mh->source_id == 9);
		assert_int_equal(pubd_wire_check_frag(mh, len, NULL), PUBD_WIRE_OK);
		for (i = 0; i < len; i++)
			assert_int_equal(data[i], (uint8_t)(k + i));
		k++;
	}
	assert_int_equal(k, 5);
}

static void wire_rejects_batch_not_filling_its_body(void **state)
{
	static const uint16_t lens[] = {10, 20, 30};
	struct pubd_wire_hdr h = {.group_id = 7, .source_id = 9, .msg_seq = 5}, out;
	const uint8_t *pl;
	size_t n, pll;

	n = build_batch(&h, lens, 3);
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_OK);
	/* One byte short, one byte over (msg_len kept honest both times). */
	h.msg_len--;
	pubd_wire_encode(&h, dgram);
	assert_int_equal(pubd_wire_decode(dgram, n - 1, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
	h.msg_len += 2;
	pubd_wire_encode(&h, dgram);
	dgram[n] = 0;
	assert_int_equal(pubd_wire_decode(dgram, n + 1, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
	/* msg_len not the body's length. */
	h.msg_len -= 2;
	pubd_wire_encode(&h, dgram);
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
	/* An entry claiming more than is left. */
	n = build_batch(&h, lens, 3);
	dgram[PUBD_WIRE_HDR_LEN + 2 + 10 + 2 + 20] = 0;
	dgram[PUBD_WIRE_HDR_LEN + 2 + 10 + 2 + 20 + 1] = 31;
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
	/* More or fewer messages than frag_count says. */
	n = build_batch(&h, lens, 3);
	h.frag_count = 2;
	pubd_wire_encode(&h, dgram);
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
	h.frag_count = 4;
	pubd_wire_encode(&h, dgram);
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
}

static void wire_rejects_batch_of_wrong_shape(void **state)
{
	static const uint16_t lens[] = {10, 20};
	struct pubd_wire_hdr h = {.group_id = 7, .source_id = 9}, out;
	const uint8_t *pl;
	size_t n, pll;

	/* Fewer than two: a lone message goes as a plain fragment. */
	n = build_batch(&h, lens, 1);
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
	n = build_batch(&h, lens, 2);
	h.frag_index = 1;
	pubd_wire_encode(&h, dgram);
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
	h.frag_index = 0;
	h.frag_offset = 2;
	pubd_wire_encode(&h, dgram);
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
	/* The last message's sequence number must exist. */
	h.frag_offset = 0;
	h.msg_seq = UINT64_MAX - 1;
	pubd_wire_encode(&h, dgram);
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
	h.msg_seq = UINT64_MAX - 2;
	pubd_wire_encode(&h, dgram);
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_OK);
	/* At most PUBD_WIRE_BATCH_MAX messages, even empty ones. */
	{
		static uint16_t none[PUBD_WIRE_BATCH_MAX + 1];
		struct pubd_wire_hdr e = {.group_id = 7, .source_id = 9};

		n = build_batch(&e, none, PUBD_WIRE_BATCH_MAX);
		assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_OK);
		n = build_batch(&e, none, PUBD_WIRE_BATCH_MAX + 1);
		assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_ERR_BATCH);
		n = build_batch(&h, lens, 2);
	}
	/* One kind per datagram. */
	h.flags = PUBD_WIRE_F_BATCH | PUBD_WIRE_F_REPAIR;
	pubd_wire_encode(&h, dgram);
	assert_int_equal(pubd_wire_decode(dgram, n, &out, &pl, &pll), PUBD_WIRE_ERR_CONTROL);
}

static void wire_counts_messages_a_datagram_completes(void **state)
{
	struct pubd_wire_hdr h = sample_hdr(0);

	assert_int_equal(pubd_wire_msgs_completed(&h), 0);
	h = sample_hdr(3);
	assert_int_equal(pubd_wire_msgs_completed(&h), 1);
	h = (struct pubd_wire_hdr){.flags = PUBD_WIRE_F_BATCH, .frag_count = 9};
	assert_int_equal(pubd_wire_msgs_completed(&h), 9);
	h = (struct pubd_wire_hdr){.flags = PUBD_WIRE_F_HEARTBEAT};
	assert_int_equal(pubd_wire_msgs_completed(&h), 0);
	h = (struct pubd_wire_hdr){.flags = PUBD_WIRE_F_CONTROL, .msg_len = 40};
	assert_int_equal(pubd_wire_msgs_completed(&h), 0);
	h = sample_hdr(3);
	h.flags = PUBD_WIRE_F_REPAIR;
	assert_int_equal(pubd_wire_msgs_completed(&h), 1);
}

static void wire_strerror_names_every_error(void **state)
{
	int e;

	for (e = PUBD_WIRE_OK; e >= PUBD_WIRE_ERR_BATCH; e--)
		assert_string_not_equal(pubd_wire_strerror(e), pubd_wire_strerror(-1000));
}

static void wire_group_id_is_fnv1a_64(void **state)
{
	assert_true(pubd_group_id("", 0) == 0xcbf29ce484222325ull);
	assert_true(pubd_group_id("a", 1) == 0xaf63dc4c8601ec8cull);
	assert_true(pubd_group_id("foobar", 6) == 0x85944171f73967e8ull);
	assert_true(pubd_group_id("foobar", 3) == pubd_group_id("foo", 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wire_encodes_fields_in_network_byte_order),
		cmocka_unit_test(wire_roundtrips_every_fragment),
		cmocka_unit_test(wire_accepts_empty_message),
		cmocka_unit_test(wire_skips_longer_header_of_later_version_layout),
		cmocka_unit_test(wire_rejects_short_datagram),
		cmocka_unit_test(wire_rejects_bad_magic),
		cmocka_unit_test(wire_rejects_unknown_version),
		cmocka_unit_test(wire_rejects_header_length_below_48_or_beyond_datagram),
		cmocka_unit_test(wire_rejects_unknown_flags),
		cmocka_unit_test(wire_accepts_repair_fragment_and_one_kind_only),
		cmocka_unit_test(wire_checks_control_datagram_shape),
		cmocka_unit_test(wire_rejects_zero_fragment_count_on_data),
		cmocka_unit_test(wire_rejects_more_fragments_than_bytes),
		cmocka_unit_test(wire_rejects_fragment_index_not_below_count),
		cmocka_unit_test(wire_rejects_fragment_beyond_message),
		cmocka_unit_test(wire_rejects_empty_fragment_of_nonempty_message),
		cmocka_unit_test(wire_rejects_single_fragment_shorter_than_message),
		cmocka_unit_test(wire_rejects_fragment_off_the_layout),
		cmocka_unit_test(wire_check_frag_reports_unit),
		cmocka_unit_test(wire_accepts_heartbeat),
		cmocka_unit_test(wire_rejects_heartbeat_with_payload_fragments_or_length),
		cmocka_unit_test(wire_never_reads_past_the_datagram),
		cmocka_unit_test(wire_batch_roundtrips_its_messages_in_order),
		cmocka_unit_test(wire_rejects_batch_not_filling_its_body),
		cmocka_unit_test(wire_rejects_batch_of_wrong_shape),
		cmocka_unit_test(wire_counts_messages_a_datagram_completes),
		cmocka_unit_test(wire_strerror_names_every_error),
		cmocka_unit_test(wire_group_id_is_fnv1a_64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
