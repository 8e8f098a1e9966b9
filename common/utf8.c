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

size_t pub_utf8_shown_len(const unsigned char *p, size_t n)
{
	uint32_t cp;
	size_t len = pub_utf8_decode(p, n, &cp);

	if (len < 2 || pub_utf8_is_c1(cp))
		return 0;
	/* U+061C ALM; U+200E/F LRM, RLM; U+2028..U+202E LS, PS, LRE, RLE, PDF, LRO, RLO; U+2066..U+2069 isolates */
	if (cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
	    (cp >= 0x2066 && cp <= 0x2069))
		return 0;
	return len;
}
