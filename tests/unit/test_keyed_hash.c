/* SPDX-License-Identifier: MIT */
/*
 * The keyed hash of pubd's tables (daemon/core/keyed_hash.h): SipHash as
 * its paper gives it, and what the key is for: ids that a sender picked to
 * fill one bucket under one key spread out under another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "keyed_hash.h"

/* The paper's key: bytes 00 01 .. 0f, little-endian words. */
static const struct pubd_hash_key paper_key = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};

static void siphash_2_4_gives_the_papers_outputs(void **state)
{
	uint8_t msg[15];

	(void)state;
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	/* The paper's worked example (15 bytes) and its first test vector. */
	assert_true(pubd_siphash(&paper_key, msg, 15, 2, 4) == 0xa129ca6149be45e5ull);
	assert_true(pubd_siphash(&paper_key, msg, 0, 2, 4) == 0x726fdb47dd0e0e31ull);
}

static void two_words_are_their_sixteen_bytes(void **state)
{
	struct pubd_hash_key k = {0x0123456789abcdefull, 0xfedcba9876543210ull};
	uint64_t a = 0x1122334455667788ull, b = 0x99aabbccddeeff00ull;
	uint8_t bytes[16];

	(void)state;
	for (unsigned i = 0; i < 8; i++) {
		bytes[i] = (uint8_t)(a >> (8 * i));
		bytes[8 + i] = (uint8_t)(b >> (8 * i));
	}
	assert_true(pubd_hash_2u64(&k, a, b) == pubd_siphash(&k, bytes, 16, 1, 3));
	assert_true(pubd_hash_bytes(&k, bytes, 16) == pubd_hash_2u64(&k, a, b));
	/* The key matters. */
	k.k1 ^= 1;
	assert_true(pubd_hash_2u64(&k, a, b) != pubd_siphash(&paper_key, bytes, 16, 1, 3));
}

#define BUCKETS 4096u
#define CHOSEN	64u

/*
 * A sender who knew the key could pick source ids of one group that all
 * land in bucket 0 of a 4096-bucket table (64 of them here, found by trying
 * ids in turn). Under pubd's key, which it does not know, they spread: no
 * bucket holds more than a few. With the unkeyed mix before, such ids made
 * chains of thousands.
 */
static void ids_chosen_for_one_key_spread_under_another(void **state)
{
	const struct pubd_hash_key known = {1, 2}, secret = {0x5eed5eed5eed5eedull, 0x0badc0ffee0ddf00ull};
	static uint8_t load[BUCKETS];
	uint64_t ids[CHOSEN], id, group = 0x1234abcdull;
	unsigned n = 0, most = 0;

	(void)state;
	for (id = 1; n < CHOSEN; id++)
		if ((pubd_hash_2u64(&known, id, group) & (BUCKETS - 1)) == 0)
			ids[n++] = id;
	memset(load, 0, sizeof(load));
	for (unsigned i = 0; i < CHOSEN; i++) {
		unsigned b = (unsigned)(pubd_hash_2u64(&secret, ids[i], group) & (BUCKETS - 1));

		if (++load[b] > most)
			most = load[b];
	}
	assert_true(most <= 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(siphash_2_4_gives_the_papers_outputs),
		cmocka_unit_test(two_words_are_their_sixteen_bytes),
		cmocka_unit_test(ids_chosen_for_one_key_spread_under_another),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
