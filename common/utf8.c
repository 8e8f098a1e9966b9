/* SPDX-License-Identifier: MIT */
#include "utf8.h"

size_t pub_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
	size_t len, i;
	uint32_t v;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		v = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		v = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		v = p[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values beyond Unicode are not UTF-8. */
	if ((len == 2 && v < 0x80) || (len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10ffff ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/*
 * Characters not seen that change how the text around them reads: the
 * format characters (Unicode's Cf: bidi marks, embeddings, overrides and
 * isolates, zero-width spaces and joiners, the byte-order mark, the soft
 * hyphen, tags that spell hidden text), the other default-ignorable ones
 * (variation selectors, Hangul fillers) and the line and paragraph
 * separators. Sorted, for the walk below.
 */
static const struct {
	uint32_t lo, hi;
} unseen[] = {
	{0x00ad, 0x00ad},   {0x034f, 0x034f},	{0x0600, 0x0605},   {0x061c, 0x061c},	{0x06dd, 0x06dd},
	{0x070f, 0x070f},   {0x0890, 0x0891},	{0x08e2, 0x08e2},   {0x115f, 0x1160},	{0x17b4, 0x17b5},
	{0x180b, 0x180f},   {0x200b, 0x200f},	{0x2028, 0x202e},   {0x2060, 0x206f},	{0x3164, 0x3164},
	{0xfe00, 0xfe0f},   {0xfeff, 0xfeff},	{0xffa0, 0xffa0},   {0xfff0, 0xfffb},	{0x110bd, 0x110bd},
	{0x110cd, 0x110cd}, {0x13430, 0x1343f}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
};

int pub_utf8_is_unseen(uint32_t cp)
{
	for (size_t i = 0; i < sizeof(unseen) / sizeof(unseen[0]) && cp >= unseen[i].lo; i++)
		if (cp <= unseen[i].hi)
			return 1;
	return 0;
}

size_t pub_utf8_shown_len(const unsigned char *p, size_t n)
{
	uint32_t cp;
	size_t len = pub_utf8_decode(p, n, &cp);

	if (len < 2 || pub_utf8_is_c1(cp) || pub_utf8_is_unseen(cp))
		return 0;
	return len;
}
