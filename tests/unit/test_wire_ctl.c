/* SPDX-License-Identifier: MIT */
/* The NAK / GONE / STATUS / COOKIE body codec: layout, round trip, one error per fault. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire_ctl.h"

static uint8_t body[PUBD_CTL_MAX_LEN + 16];

static void ctl_encodes_fixed_part_in_network_byte_order(void **state)
{
	static const uint8_t want[PUBD_CTL_FIXED_LEN] = {
		2,    1,    0,	  40,	0,    0,    0x01, 0x02, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
		0x17, 0x18, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0,	  0,	0,    0,
		0,    0,    0,	  0,	0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38,
	};
	struct pubd_ctl c = {.type = PUBD_CTL_NAK,
			     .count = 0x102,
			     .stream = 0x1112131415161718ull,
			     .first_seq = 0x2122232425262728ull,
			     .token = 0x3132333435363738ull};

	(void)state;
	assert_int_equal(pubd_ctl_encode(&c, body, sizeof(body)), PUBD_CTL_FIXED_LEN);
	assert_memory_equal(body, want, sizeof(want));
}

static void ctl_roundtrips_nak_with_fragment_bitmap(void **state)
{
	uint8_t bits[3] = {0x05, 0x00, 0x80};
	struct pubd_ctl c = {.type = PUBD_CTL_NAK,
			     .count = 1,
			     .stream = 42,
			     .first_seq = 1000,
			     .frag_first = 16,
			     .bitmap_len = 3,
			     .bitmap = bits},
			out;
	size_t len = pubd_ctl_encode(&c, body, sizeof(body));

	(void)state;
	assert_int_equal(len, PUBD_CTL_FIXED_LEN + 3);
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_OK);
	assert_int_equal(out.type, PUBD_CTL_NAK);
	assert_int_equal(out.first_seq, 1000);
	assert_int_equal(out.frag_first, 16);
	assert_int_equal(out.bitmap_len, 3);
	/* fragments 16, 18 and 39 are asked for, nothing else */
	assert_true(pubd_ctl_wants_frag(&out, 16));
	assert_false(pubd_ctl_wants_frag(&out, 17));
	assert_true(pubd_ctl_wants_frag(&out, 18));
	assert_true(pubd_ctl_wants_frag(&out, 39));
	assert_false(pubd_ctl_wants_frag(&out, 15));
	assert_false(pubd_ctl_wants_frag(&out, 40));
	assert_false(pubd_ctl_wants_frag(&out, 0));
}

static void ctl_roundtrips_gone_and_whole_message_nak(void **state)
{
	struct pubd_ctl c = {.type = PUBD_CTL_GONE, .count = PUBD_CTL_MAX_COUNT, .stream = 7, .first_seq = 3}, out;
	size_t len = pubd_ctl_encode(&c, body, sizeof(body));

	(void)state;
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_OK);
	assert_int_equal(out.type, PUBD_CTL_GONE);
	assert_int_equal(out.count, PUBD_CTL_MAX_COUNT);
	assert_int_equal(out.stream, 7);
	/* No bitmap: every fragment is wanted. */
	assert_true(pubd_ctl_wants_frag(&out, 12345));
}

/* A later version may grow the body: body_len says how far to skip (on a
 * NAK, past its cookie). */
static void ctl_accepts_longer_body(void **state)
{
	struct pubd_ctl c = {.type = PUBD_CTL_NAK, .count = 2, .stream = 1, .first_seq = 5}, out;

	(void)state;
	pubd_ctl_encode(&c, body, sizeof(body));
	body[3] = 56;
	memset(body + 40, 0xee, 16);
	assert_int_equal(pubd_ctl_decode(body, 56, &out), PUBD_CTL_OK);
	assert_int_equal(out.cookie, 0xeeeeeeeeeeeeeeeeull);
	assert_int_equal(pubd_ctl_decode(body, 55, &out), PUBD_CTL_ERR_SHORT);
	c.type = PUBD_CTL_GONE;
	pubd_ctl_encode(&c, body, sizeof(body));
	body[3] = 48;
	memset(body + 40, 0xee, 8);
	assert_int_equal(pubd_ctl_decode(body, 48, &out), PUBD_CTL_OK);
	assert_int_equal(out.cookie, 0); /* a GONE has none: skipped */
}

/* A NAK echoes its asker's cookie after its bitmap; a COOKIE gives one and
 * names no messages. */
static void ctl_cookie_roundtrips(void **state)
{
	uint8_t bit = 0x02;
	struct pubd_ctl c = {.type = PUBD_CTL_NAK,
			     .count = 1,
			     .stream = 42,
			     .first_seq = 1000,
			     .frag_first = 8,
			     .bitmap_len = 1,
			     .bitmap = &bit,
			     .cookie = 0x0102030405060708ull},
			out;
	size_t len = pubd_ctl_encode(&c, body, sizeof(body));

	(void)state;
	assert_int_equal(len, PUBD_CTL_FIXED_LEN + 1 + PUBD_CTL_COOKIE_LEN);
	assert_int_equal(body[PUBD_CTL_FIXED_LEN + 1], 0x01); /* big-endian, after the bitmap */
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_OK);
	assert_int_equal(out.cookie, 0x0102030405060708ull);
	assert_true(pubd_ctl_wants_frag(&out, 9));
	assert_false(pubd_ctl_wants_frag(&out, 8));
	/* Without a cookie, a NAK is as it was: none decoded. */
	c.cookie = 0;
	len = pubd_ctl_encode(&c, body, sizeof(body));
	assert_int_equal(len, PUBD_CTL_FIXED_LEN + 1);
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_OK);
	assert_int_equal(out.cookie, 0);
	/* A COOKIE */
	c = (struct pubd_ctl){.type = PUBD_CTL_COOKIE, .stream = 7, .token = 0xabc, .cookie = 0xc00c1e};
	len = pubd_ctl_encode(&c, body, sizeof(body));
	assert_int_equal(len, PUBD_CTL_FIXED_LEN + PUBD_CTL_COOKIE_LEN);
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_OK);
	assert_int_equal(out.type, PUBD_CTL_COOKIE);
	assert_int_equal(out.stream, 7);
	assert_int_equal(out.token, 0xabc);
	assert_int_equal(out.cookie, 0xc00c1e);
	/* ... cut before its cookie, with a range, or with none */
	body[3] = PUBD_CTL_FIXED_LEN;
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_ERR_COOKIE);
	body[3] = (uint8_t)len;
	body[7] = 1; /* count 1 */
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_ERR_COUNT);
	c.count = 1;
	assert_int_equal(pubd_ctl_encode(&c, body, sizeof(body)), 0);
	c.count = 0;
	c.cookie = 0;
	assert_int_equal(pubd_ctl_encode(&c, body, sizeof(body)), 0);
	/* A STATUS echoes one too; a GONE has none. */
	c = (struct pubd_ctl){.type = PUBD_CTL_STATUS, .count = 9, .stream = 7, .first_seq = 3, .cookie = 5};
	len = pubd_ctl_encode(&c, body, sizeof(body));
	assert_int_equal(len, PUBD_CTL_FIXED_LEN + PUBD_CTL_COOKIE_LEN);
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_OK);
	assert_int_equal(out.cookie, 5);
	assert_int_equal(out.count, 9);
	c.type = PUBD_CTL_GONE;
	assert_int_equal(pubd_ctl_encode(&c, body, sizeof(body)), 0);
}

static int decode_with(size_t off, uint8_t v, size_t len)
{
	struct pubd_ctl c = {.type = PUBD_CTL_NAK, .count = 1, .stream = 1, .first_seq = 5}, out;
	uint8_t bit = 1;

	c.bitmap_len = len > PUBD_CTL_FIXED_LEN ? 1 : 0;
	c.bitmap = &bit;
	pubd_ctl_encode(&c, body, sizeof(body));
	body[off] = v;
	return pubd_ctl_decode(body, len, &out);
}

static void ctl_rejects_each_fault(void **state)
{
	struct pubd_ctl out;

	(void)state;
	assert_int_equal(pubd_ctl_decode(body, 39, &out), PUBD_CTL_ERR_SHORT);
	assert_int_equal(decode_with(0, 1, 40), PUBD_CTL_ERR_VERSION); /* version 1 had no token */
	assert_int_equal(decode_with(1, 5, 40), PUBD_CTL_ERR_TYPE);
	assert_int_equal(decode_with(1, 0, 40), PUBD_CTL_ERR_TYPE);
	assert_int_equal(decode_with(3, 39, 40), PUBD_CTL_ERR_SHORT); /* body_len below 40 */
	assert_int_equal(decode_with(3, 41, 40), PUBD_CTL_ERR_SHORT); /* body_len beyond the datagram */
	assert_int_equal(decode_with(7, 0, 40), PUBD_CTL_ERR_COUNT);  /* count 0 */
	assert_int_equal(decode_with(5, 1, 40), PUBD_CTL_ERR_COUNT);  /* count 65537 */
	assert_int_equal(decode_with(31, 1, 40), PUBD_CTL_ERR_RESERVED);
	assert_int_equal(decode_with(27, 1, 40), PUBD_CTL_ERR_BITMAP); /* frag_first without bitmap */
	assert_int_equal(decode_with(29, 1, 40), PUBD_CTL_ERR_BITMAP); /* bitmap beyond body_len */
	assert_int_equal(decode_with(40, 0, 41), PUBD_CTL_ERR_BITMAP); /* empty bitmap */
	assert_int_equal(decode_with(7, 2, 41), PUBD_CTL_ERR_BITMAP);  /* bitmap on two messages */
	assert_int_equal(decode_with(1, PUBD_CTL_GONE, 41), PUBD_CTL_ERR_BITMAP);
	assert_int_equal(decode_with(40, 1, 41), PUBD_CTL_OK);
	/* a range that would wrap */
	memset(body + 16, 0xff, 8);
	assert_int_equal(pubd_ctl_decode(body, 41, &out), PUBD_CTL_ERR_COUNT);
}

static void ctl_encode_refuses_what_decode_would(void **state)
{
	uint8_t zero = 0;
	struct pubd_ctl c = {.type = PUBD_CTL_NAK, .count = 0, .stream = 1, .first_seq = 5};

	(void)state;
	assert_int_equal(pubd_ctl_encode(&c, body, sizeof(body)), 0);
	c.count = 1;
	c.bitmap_len = 1;
	c.bitmap = &zero;
	assert_int_equal(pubd_ctl_encode(&c, body, sizeof(body)), 0);
	c.bitmap_len = PUBD_CTL_MAX_BITMAP + 1;
	assert_int_equal(pubd_ctl_encode(&c, body, sizeof(body)), 0);
	c.bitmap_len = 0;
	assert_int_equal(pubd_ctl_encode(&c, body, PUBD_CTL_FIXED_LEN - 1), 0);
}

/* The token survives the round trip, and a heartbeat header carries one,
 * and its stream's age; a pubd sending the token alone (56 bytes) says no
 * age. */
static void ctl_token_roundtrips_in_nak_and_heartbeat(void **state)
{
	struct pubd_ctl c = {.type = PUBD_CTL_NAK, .count = 1, .stream = 1, .first_seq = 5, .token = 0xfeedull}, out;
	uint8_t hb[PUBD_CTL_HB_LEN] = {0};
	size_t len = pubd_ctl_encode(&c, body, sizeof(body));
	uint64_t age = 0;

	(void)state;
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_OK);
	assert_int_equal(out.token, 0xfeedull);
	hb[7] = 48; /* hdr_len 48: no extension, no token */
	assert_int_equal(pubd_ctl_hb_token(hb, sizeof(hb)), 0);
	assert_false(pubd_ctl_hb_age_us(hb, sizeof(hb), &age));
	assert_int_equal(pubd_ctl_hb_put(hb, 0x0102030405060708ull, 0x1112131415161718ull), PUBD_CTL_HB_LEN);
	assert_int_equal(hb[7], PUBD_CTL_HB_LEN);
	assert_int_equal(pubd_ctl_hb_token(hb, sizeof(hb)), 0x0102030405060708ull);
	assert_true(pubd_ctl_hb_age_us(hb, sizeof(hb), &age));
	assert_int_equal(age, 0x1112131415161718ull);
	assert_false(pubd_ctl_hb_age_us(hb, sizeof(hb) - 1, &age)); /* cut short */
	assert_int_equal(pubd_ctl_hb_token(hb, PUBD_CTL_HB_TOKEN_LEN - 1), 0);
	hb[7] = PUBD_CTL_HB_TOKEN_LEN; /* an older pubd: the token, no age */
	assert_int_equal(pubd_ctl_hb_token(hb, PUBD_CTL_HB_TOKEN_LEN), 0x0102030405060708ull);
	assert_false(pubd_ctl_hb_age_us(hb, sizeof(hb), &age));
	/* No token (a group without repair), an age all the same. */
	assert_int_equal(pubd_ctl_hb_put(hb, 0, 5), PUBD_CTL_HB_LEN);
	assert_int_equal(pubd_ctl_hb_token(hb, sizeof(hb)), 0);
	assert_true(pubd_ctl_hb_age_us(hb, sizeof(hb), &age));
	assert_int_equal(age, 5);
}

/* A STATUS: a window of any u32 (none at all included), a serial in
 * frag_first, no bitmap, no range that wraps. */
static void ctl_status_carries_a_window(void **state)
{
	struct pubd_ctl c = {.type = PUBD_CTL_STATUS,
			     .count = 0,
			     .stream = 9,
			     .first_seq = 77,
			     .token = 0xabcull,
			     .frag_first = 0xfffffffeu /* its serial */},
			out;
	uint8_t bit = 1;
	size_t len;

	(void)state;
	len = pubd_ctl_encode(&c, body, sizeof(body));
	assert_int_equal(len, PUBD_CTL_FIXED_LEN);
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_OK);
	assert_int_equal(out.type, PUBD_CTL_STATUS);
	assert_int_equal(out.count, 0);
	assert_int_equal(out.first_seq, 77);
	assert_int_equal(out.token, 0xabcull);
	assert_int_equal(out.frag_first, 0xfffffffeu);
	c.count = UINT32_MAX;
	len = pubd_ctl_encode(&c, body, sizeof(body));
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_OK);
	assert_int_equal(out.count, UINT32_MAX);
	c.first_seq = UINT64_MAX - 5; /* first_seq + count would wrap */
	assert_int_equal(pubd_ctl_encode(&c, body, sizeof(body)), 0);
	c.count = 5;
	assert_int_not_equal(pubd_ctl_encode(&c, body, sizeof(body)), 0);
	c.first_seq = 1;
	c.bitmap = &bit;
	c.bitmap_len = 1;
	assert_int_equal(pubd_ctl_encode(&c, body, sizeof(body)), 0);
	/* The same faults in received bytes: a wrapping range, a bitmap. */
	c.bitmap_len = 0;
	c.count = 0;
	len = pubd_ctl_encode(&c, body, sizeof(body));
	memset(body + 16, 0xff, 8); /* first_seq UINT64_MAX */
	body[7] = 1;		    /* count 1 */
	assert_int_equal(pubd_ctl_decode(body, len, &out), PUBD_CTL_ERR_COUNT);
	len = pubd_ctl_encode(&c, body, sizeof(body));
	body[29] = 1; /* bitmap_len 1, its byte past the fixed part */
	body[3] = PUBD_CTL_FIXED_LEN + 1;
	body[PUBD_CTL_FIXED_LEN] = 1;
	assert_int_equal(pubd_ctl_decode(body, PUBD_CTL_FIXED_LEN + 1, &out), PUBD_CTL_ERR_BITMAP);
}

static void ctl_strerror_names_every_error(void **state)
{
	int e;

	(void)state;
	for (e = PUBD_CTL_OK; e >= PUBD_CTL_ERR_COOKIE; e--)
		assert_string_not_equal(pubd_ctl_strerror(e), pubd_ctl_strerror(-1000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ctl_encodes_fixed_part_in_network_byte_order),
		cmocka_unit_test(ctl_roundtrips_nak_with_fragment_bitmap),
		cmocka_unit_test(ctl_roundtrips_gone_and_whole_message_nak),
		cmocka_unit_test(ctl_accepts_longer_body),
		cmocka_unit_test(ctl_cookie_roundtrips),
		cmocka_unit_test(ctl_rejects_each_fault),
		cmocka_unit_test(ctl_encode_refuses_what_decode_would),
		cmocka_unit_test(ctl_token_roundtrips_in_nak_and_heartbeat),
		cmocka_unit_test(ctl_status_carries_a_window),
		cmocka_unit_test(ctl_strerror_names_every_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
