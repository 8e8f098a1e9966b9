/* SPDX-License-Identifier: MIT */
/* The fragmenter: plans, slices, and agreement with the wire decoder. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "frag.h"

#define MIB ((size_t)1 << 20)

static void frag_plans_empty_message_as_one_empty_fragment(void **state)
{
	struct pubd_frag_plan p;
	struct pubd_wire_hdr tmpl = {.msg_seq = 1}, h;
	size_t off = 1, len = 1;

	assert_int_equal(pubd_frag_plan(&p, 0, 1024, 16 * MIB), 0);
	assert_int_equal(p.msg_len, 0);
	assert_int_equal(p.frag_count, 1);
	pubd_frag_get(&p, &tmpl, 0, &h, &off, &len);
	assert_int_equal(off, 0);
	assert_int_equal(len, 0);
	assert_int_equal(h.frag_count, 1);
	assert_int_equal(h.msg_len, 0);
}

static void frag_fills_each_fragment_to_mtu(void **state)
{
	struct pubd_frag_plan p;

	assert_int_equal(pubd_frag_plan(&p, 976, 1024, 16 * MIB), 0);
	assert_int_equal(p.frag_count, 1);
	assert_int_equal(p.frag_payload, 1024 - PUBD_WIRE_HDR_LEN);
	assert_int_equal(pubd_frag_plan(&p, 977, 1024, 16 * MIB), 0);
	assert_int_equal(p.frag_count, 2);
	assert_int_equal(pubd_frag_plan(&p, 2 * 4048, 4096, 16 * MIB), 0);
	assert_int_equal(p.frag_count, 2);
	assert_int_equal(p.frag_payload, 4048);
}

static void frag_last_fragment_carries_the_remainder(void **state)
{
	struct pubd_frag_plan p;
	struct pubd_wire_hdr tmpl = {0}, h;
	size_t off, len;

	assert_int_equal(pubd_frag_plan(&p, 3000, 1024, 16 * MIB), 0);
	assert_int_equal(p.frag_count, 4);
	pubd_frag_get(&p, &tmpl, 2, &h, &off, &len);
	assert_int_equal(off, 2 * 976);
	assert_int_equal(len, 976);
	pubd_frag_get(&p, &tmpl, 3, &h, &off, &len);
	assert_int_equal(off, 3 * 976);
	assert_int_equal(len, 3000 - 3 * 976);
	assert_int_equal(h.frag_offset, 3 * 976);
	assert_int_equal(h.frag_index, 3);
}

static void frag_accepts_message_of_exactly_max_size(void **state)
{
	struct pubd_frag_plan p;

	assert_int_equal(pubd_frag_plan(&p, 16 * MIB, 1024, 16 * MIB), 0);
	assert_int_equal(p.frag_count, (16 * MIB + 975) / 976);
}

static void frag_rejects_message_over_max_size(void **state)
{
	struct pubd_frag_plan p;

	assert_int_equal(pubd_frag_plan(&p, 16 * MIB + 1, 1024, 16 * MIB), -EMSGSIZE);
	assert_int_equal(pubd_frag_plan(&p, (size_t)UINT32_MAX + 1, 4096, SIZE_MAX), -EMSGSIZE);
}

static void frag_rejects_mtu_without_room_for_payload(void **state)
{
	struct pubd_frag_plan p;

	assert_int_equal(pubd_frag_plan(&p, 10, PUBD_WIRE_HDR_LEN, 16 * MIB), -EINVAL);
	assert_int_equal(pubd_frag_plan(&p, 0, 0, 16 * MIB), -EINVAL);
	assert_int_equal(pubd_frag_plan(&p, 1, PUBD_WIRE_HDR_LEN + 1, 16 * MIB), 0);
}

static void frag_copies_template_fields(void **state)
{
	struct pubd_frag_plan p;
	struct pubd_wire_hdr tmpl = {.flags = 0, .group_id = 7, .source_id = 8, .msg_seq = 9}, h;
	size_t off, len;

	assert_int_equal(pubd_frag_plan(&p, 5000, 1024, 16 * MIB), 0);
	pubd_frag_get(&p, &tmpl, 1, &h, &off, &len);
	assert_true(h.group_id == 7 && h.source_id == 8 && h.msg_seq == 9);
	assert_int_equal(h.msg_len, 5000);
	assert_int_equal(h.frag_count, p.frag_count);
}

/* Every size around the boundaries, at several MTUs: the slices tile the
 * message and each fragment passes the decoder's layout checks. */
static void frag_slices_tile_the_message_and_decode(void **state)
{
	static const size_t mtus[] = {49, 50, 1024, 2048, 4096, 9000};
	static uint8_t dg[PUBD_WIRE_HDR_LEN + 9000];
	struct pubd_wire_hdr tmpl = {.msg_seq = 3}, h, out;
	struct pubd_frag_plan p;
	const uint8_t *pl;
	size_t m, off, len, next, pll, sz, sizes[64], ns;
	unsigned i;
	uint32_t f;

	for (m = 0; m < sizeof(mtus) / sizeof(mtus[0]); m++) {
		size_t unit = mtus[m] - PUBD_WIRE_HDR_LEN;

		ns = 0;
		for (i = 0; i < 4; i++) {
			sizes[ns++] = i;
			sizes[ns++] = unit * (i + 1) - 1;
			sizes[ns++] = unit * (i + 1);
			sizes[ns++] = unit * (i + 1) + 1;
		}
		sizes[ns++] = 65536;
		for (i = 0; i < ns; i++) {
			sz = sizes[i];
			assert_int_equal(pubd_frag_plan(&p, sz, mtus[m], 16 * MIB), 0);
			next = 0;
			for (f = 0; f < p.frag_count; f++) {
				pubd_frag_get(&p, &tmpl, f, &h, &off, &len);
				assert_int_equal(off, next);
				assert_true(len <= unit);
				assert_true(len > 0 || sz == 0);
				next = off + len;
				pubd_wire_encode(&h, dg);
				memset(dg + PUBD_WIRE_HDR_LEN, 0, len);
				assert_int_equal(pubd_wire_decode(dg, PUBD_WIRE_HDR_LEN + len, &out, &pl, &pll), 0);
			}
			assert_int_equal(next, sz);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(frag_plans_empty_message_as_one_empty_fragment),
		cmocka_unit_test(frag_fills_each_fragment_to_mtu),
		cmocka_unit_test(frag_last_fragment_carries_the_remainder),
		cmocka_unit_test(frag_accepts_message_of_exactly_max_size),
		cmocka_unit_test(frag_rejects_message_over_max_size),
		cmocka_unit_test(frag_rejects_mtu_without_room_for_payload),
		cmocka_unit_test(frag_copies_template_fields),
		cmocka_unit_test(frag_slices_tile_the_message_and_decode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
