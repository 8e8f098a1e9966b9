/* SPDX-License-Identifier: MIT */
/* SipHash, written from its paper ("SipHash: a fast short-input PRF",
 * Aumasson and Bernstein, 2012): keyed_hash.h. */
#include <string.h>

#include "keyed_hash.h"

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return x << b | x >> (64 - b);
}

struct sip {
	uint64_t v0, v1, v2, v3;
};

static inline void sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = rotl(s->v2, 32);
}

static inline struct sip sip_init(const struct pubd_hash_key *k)
{
	/* "somepseudorandomlygeneratedbytes" */
	return (struct sip){.v0 = k->k0 ^ 0x736f6d6570736575ull,
			    .v1 = k->k1 ^ 0x646f72616e646f6dull,
			    .v2 = k->k0 ^ 0x6c7967656e657261ull,
			    .v3 = k->k1 ^ 0x7465646279746573ull};
}

static inline void sip_word(struct sip *s, uint64_t m, unsigned c)
{
	s->v3 ^= m;
	for (unsigned i = 0; i < c; i++)
		sip_round(s);
	s->v0 ^= m;
}

static inline uint64_t sip_final(struct sip *s, unsigned d)
{
	s->v2 ^= 0xff;
	for (unsigned i = 0; i < d; i++)
		sip_round(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* Little-endian, whatever the host (x86 is; the words must not depend on it). */
static inline uint64_t le64(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

uint64_t pubd_siphash(const struct pubd_hash_key *k, const void *data, size_t len, unsigned c, unsigned d)
{
	const uint8_t *p = data;
	struct sip s = sip_init(k);
	size_t i, whole = len & ~(size_t)7;

	for (i = 0; i < whole; i += 8)
		sip_word(&s, le64(p + i, 8), c);
	/* The last word: the bytes left, and the length's low byte on top. */
	sip_word(&s, le64(p + whole, len - whole) | (uint64_t)(len & 0xff) << 56, c);
	return sip_final(&s, d);
}

uint64_t pubd_hash_2u64(const struct pubd_hash_key *k, uint64_t a, uint64_t b)
{
	struct sip s = sip_init(k);

	sip_word(&s, a, 1);
	sip_word(&s, b, 1);
	sip_word(&s, (uint64_t)16 << 56, 1);
	return sip_final(&s, 3);
}
