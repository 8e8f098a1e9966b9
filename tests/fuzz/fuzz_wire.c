/* SPDX-License-Identifier: MIT */
/*
 * The wire decoder on arbitrary bytes: it must never read outside them (the
 * input is copied to a heap block of exactly its size for AddressSanitizer),
 * and whatever it accepts must survive encode + decode unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hdr_equal(const struct pubd_wire_hdr *a, const struct pubd_wire_hdr *b)
{
	return a->version == b->version && a->flags == b->flags && a->group_id == b->group_id &&
	       a->source_id == b->source_id && a->msg_seq == b->msg_seq && a->msg_len == b->msg_len &&
	       a->frag_index == b->frag_index && a->frag_count == b->frag_count && a->frag_offset == b->frag_offset;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pubd_wire_hdr h, again;
	uint8_t *buf = malloc(size ? size : 1), *re;
	const uint8_t *pl, *pl2;
	size_t pll, pll2;
	int err;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	err = pubd_wire_decode(buf, size, &h, &pl, &pll);
	if (err > 0 || err < PUBD_WIRE_ERR_BATCH)
		abort();
	if (err) {
		free(buf);
		return 0;
	}
	if (pl < buf || pl + pll != buf + size)
		abort();

	/* Re-encode the header in front of the same payload. */
	re = malloc(PUBD_WIRE_HDR_LEN + pll);
	if (!re)
		abort();
	pubd_wire_encode(&h, re);
	memcpy(re + PUBD_WIRE_HDR_LEN, pl, pll);
	if (pubd_wire_decode(re, PUBD_WIRE_HDR_LEN + pll, &again, &pl2, &pll2) != PUBD_WIRE_OK)
		abort();
	if (!hdr_equal(&h, &again) || pll2 != pll || memcmp(pl2, pl, pll))
		abort();
	/* A 48-byte header comes back byte for byte. */
	if (pl == buf + PUBD_WIRE_HDR_LEN && memcmp(re, buf, PUBD_WIRE_HDR_LEN))
		abort();
	/* A batch's messages: each one a well-formed one-fragment message,
	 * inside the body, with consecutive sequence numbers, as many as the
	 * header says, filling the body. */
	if (h.flags & PUBD_WIRE_F_BATCH) {
		struct pubd_wire_batch_iter it;
		const struct pubd_wire_hdr *mh;
		const uint8_t *d, *end = pl;
		size_t dl;
		uint32_t k = 0;

		pubd_wire_batch_begin(&it, &h, pl, pll);
		while (pubd_wire_batch_next(&it, &mh, &d, &dl)) {
			if (d < pl || d + dl > pl + pll || mh->msg_seq != h.msg_seq + k ||
			    pubd_wire_check_frag(mh, dl, NULL) != PUBD_WIRE_OK)
				abort();
			end = d + dl;
			k++;
		}
		if (k != h.frag_count || end != pl + pll)
			abort();
	}
	free(re);
	free(buf);
	return 0;
}
