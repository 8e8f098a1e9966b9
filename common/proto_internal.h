/* SPDX-License-Identifier: MIT */
/*
 * What the two halves of the protocol codec share (proto.h is the public
 * API): little-endian helpers and the bounds-checked read cursor. Only
 * proto.c and proto_table.c include it.
 */
#ifndef PUB_PROTO_INTERNAL_H
#define PUB_PROTO_INTERNAL_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto.h"

/* ---- little-endian helpers ----
 * One load or store each on a little-endian host (a byte loop was not
 * merged by the compiler: 78 instructions a delivered message). */

static inline void put_u16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void put_u32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void put_u64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint16_t get_u16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/*
 * Read cursor. Once a read fails, bad stays set and every later read fails
 * too, so a decoder checks once at the end instead of after every field.
 */
struct cur {
	const uint8_t *p, *end;
	int bad;
};

static inline const uint8_t *take(struct cur *c, size_t n)
{
	const uint8_t *at = c->p;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	c->p += n;
	return at;
}

static inline uint8_t rd_u8(struct cur *c)
{
	const uint8_t *p = take(c, 1);

	return p ? p[0] : 0;
}

static inline uint16_t rd_u16(struct cur *c)
{
	const uint8_t *p = take(c, 2);

	return p ? get_u16(p) : 0;
}

static inline uint32_t rd_u32(struct cur *c)
{
	const uint8_t *p = take(c, 4);

	return p ? get_u32(p) : 0;
}

static inline uint64_t rd_u64(struct cur *c)
{
	const uint8_t *p = take(c, 8);

	return p ? get_u64(p) : 0;
}

static inline void rd_str(struct cur *c, size_t len, struct pub_str *s)
{
	const uint8_t *p = take(c, len);

	s->ptr = (const char *)p;
	s->len = p ? len : 0;
}

static inline void rd_name8(struct cur *c, struct pub_str *s)
{
	rd_str(c, rd_u8(c), s);
}

static inline void rd_text16(struct cur *c, struct pub_str *s)
{
	rd_str(c, rd_u16(c), s);
}

/* The body must be consumed exactly: trailing bytes are as malformed as missing ones. */
static inline int finish(const struct cur *c)
{
	return c->bad || c->p != c->end ? -PUB_ERR_PROTO : 0;
}

static inline struct cur cur_init(const uint8_t *body, size_t len)
{
	struct cur c = {body, body + len, body == NULL && len != 0};

	return c;
}

#endif
