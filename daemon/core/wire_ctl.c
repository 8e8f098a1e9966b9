/* SPDX-License-Identifier: MIT */
/*
 * The NAK / GONE / STATUS / COOKIE body codec (layout in wire_ctl.h). Explicit byte loads, no
 * read beyond the length given, one error per fault.
 */
#include <string.h>

#include "wire_ctl.h"

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)get_be16(p) << 16 | get_be16(p + 2);
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* The checks shared by encode and decode (the bitmap's bytes excepted). */
static int ctl_check(const struct pubd_ctl *c)
{
	if (c->type < PUBD_CTL_NAK || c->type > PUBD_CTL_COOKIE)
		return PUBD_CTL_ERR_TYPE;
	if (c->type == PUBD_CTL_COOKIE) {
		/* Names no messages: a cookie, nothing else. */
		if (c->count || c->first_seq)
			return PUBD_CTL_ERR_COUNT;
		if (c->bitmap_len || c->frag_first)
			return PUBD_CTL_ERR_BITMAP;
		return c->cookie ? PUBD_CTL_OK : PUBD_CTL_ERR_COOKIE;
	}
	if (c->cookie && c->type == PUBD_CTL_GONE)
		return PUBD_CTL_ERR_COOKIE;
	if (c->first_seq > UINT64_MAX - c->count)
		return PUBD_CTL_ERR_COUNT;
	/* A STATUS's count is a window: none (0) up to any u32. */
	if (c->type != PUBD_CTL_STATUS && (c->count == 0 || c->count > PUBD_CTL_MAX_COUNT))
		return PUBD_CTL_ERR_COUNT;
	if (c->bitmap_len > PUBD_CTL_MAX_BITMAP)
		return PUBD_CTL_ERR_BITMAP;
	if (c->bitmap_len && (c->type != PUBD_CTL_NAK || c->count != 1))
		return PUBD_CTL_ERR_BITMAP;
	if (!c->bitmap_len && c->frag_first && c->type != PUBD_CTL_STATUS)
		return PUBD_CTL_ERR_BITMAP;
	if (c->frag_first > UINT32_MAX - 8u * c->bitmap_len)
		return PUBD_CTL_ERR_BITMAP;
	return PUBD_CTL_OK;
}

static int bitmap_empty(const uint8_t *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i])
			return 0;
	return 1;
}

size_t pubd_ctl_encode(const struct pubd_ctl *c, uint8_t *out, size_t cap)
{
	size_t len = PUBD_CTL_FIXED_LEN + c->bitmap_len + (c->cookie ? PUBD_CTL_COOKIE_LEN : 0);

	if (ctl_check(c) || len > cap || (c->bitmap_len && (!c->bitmap || bitmap_empty(c->bitmap, c->bitmap_len))))
		return 0;
	out[0] = PUBD_CTL_VERSION;
	out[1] = c->type;
	put_be16(out + 2, (uint16_t)len);
	put_be32(out + 4, c->count);
	put_be64(out + 8, c->stream);
	put_be64(out + 16, c->first_seq);
	put_be32(out + 24, c->frag_first);
	put_be16(out + 28, c->bitmap_len);
	put_be16(out + 30, 0);
	put_be64(out + 32, c->token);
	if (c->bitmap_len)
		memcpy(out + PUBD_CTL_FIXED_LEN, c->bitmap, c->bitmap_len);
	if (c->cookie)
		put_be64(out + PUBD_CTL_FIXED_LEN + c->bitmap_len, c->cookie);
	return len;
}

int pubd_ctl_decode(const uint8_t *body, size_t len, struct pubd_ctl *c)
{
	size_t body_len;
	int err;

	if (len < PUBD_CTL_FIXED_LEN)
		return PUBD_CTL_ERR_SHORT;
	if (body[0] != PUBD_CTL_VERSION)
		return PUBD_CTL_ERR_VERSION;
	body_len = get_be16(body + 2);
	if (body_len < PUBD_CTL_FIXED_LEN || body_len > len)
		return PUBD_CTL_ERR_SHORT;
	if (get_be16(body + 30))
		return PUBD_CTL_ERR_RESERVED;
	c->type = body[1];
	c->count = get_be32(body + 4);
	c->stream = get_be64(body + 8);
	c->first_seq = get_be64(body + 16);
	c->token = get_be64(body + 32);
	c->frag_first = get_be32(body + 24);
	c->bitmap_len = get_be16(body + 28);
	c->bitmap = body + PUBD_CTL_FIXED_LEN;
	if (PUBD_CTL_FIXED_LEN + (size_t)c->bitmap_len > body_len)
		return PUBD_CTL_ERR_BITMAP;
	/* A NAK's, STATUS's or COOKIE's cookie follows the bitmap, when
	 * body_len has room; a GONE's extra bytes are skipped. */
	c->cookie = 0;
	if (c->type != PUBD_CTL_GONE && PUBD_CTL_FIXED_LEN + (size_t)c->bitmap_len + PUBD_CTL_COOKIE_LEN <= body_len)
		c->cookie = get_be64(body + PUBD_CTL_FIXED_LEN + c->bitmap_len);
	err = ctl_check(c);
	if (err)
		return err;
	/* A NAK of fragments that names none asks for nothing. */
	if (c->bitmap_len && bitmap_empty(c->bitmap, c->bitmap_len))
		return PUBD_CTL_ERR_BITMAP;
	return PUBD_CTL_OK;
}

int pubd_ctl_wants_frag(const struct pubd_ctl *c, uint32_t i)
{
	uint32_t bit;

	if (!c->bitmap_len)
		return 1;
	if (i < c->frag_first)
		return 0;
	bit = i - c->frag_first;
	if (bit / 8 >= c->bitmap_len)
		return 0;
	return (c->bitmap[bit / 8] >> (bit % 8)) & 1;
}

const char *pubd_ctl_strerror(int err)
{
	switch (err) {
	case PUBD_CTL_OK:
		return "ok";
	case PUBD_CTL_ERR_SHORT:
		return "control body shorter than its fixed part or its stated length";
	case PUBD_CTL_ERR_VERSION:
		return "unsupported control version";
	case PUBD_CTL_ERR_TYPE:
		return "control type not NAK, GONE, STATUS or COOKIE";
	case PUBD_CTL_ERR_COUNT:
		return "sequence count 0 or above 65536 (NAK, GONE), or wrapping";
	case PUBD_CTL_ERR_BITMAP:
		return "fragment bitmap misplaced, too long, empty or beyond the body";
	case PUBD_CTL_ERR_RESERVED:
		return "reserved bits set";
	case PUBD_CTL_ERR_COOKIE:
		return "a COOKIE without its cookie, or a cookie on a GONE";
	default:
		return "unknown control error";
	}
}

size_t pubd_ctl_hb_put(uint8_t *hdr, uint64_t token, uint64_t age_us)
{
	put_be16(hdr + 6, PUBD_CTL_HB_LEN);
	put_be64(hdr + 48, token);
	put_be64(hdr + 56, age_us);
	return PUBD_CTL_HB_LEN;
}

uint64_t pubd_ctl_hb_token(const uint8_t *dgram, size_t len)
{
	if (len < PUBD_CTL_HB_TOKEN_LEN || get_be16(dgram + 6) < PUBD_CTL_HB_TOKEN_LEN)
		return 0;
	return get_be64(dgram + 48);
}

bool pubd_ctl_hb_age_us(const uint8_t *dgram, size_t len, uint64_t *age_us)
{
	if (len < PUBD_CTL_HB_LEN || get_be16(dgram + 6) < PUBD_CTL_HB_LEN)
		return false;
	*age_us = get_be64(dgram + 56);
	return true;
}
