/* SPDX-License-Identifier: MIT */
/*
 * UTF-8 as outside text is checked before pubd logs it or pubctl prints it:
 * one decoder, shared, so the log and the CLI agree on what is valid.
 */
#ifndef PUB_UTF8_H
#define PUB_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * The length of the valid UTF-8 sequence at p (n > 0 bytes left), with its
 * code point in *cp; 0 when it is not valid (a stray continuation byte, a
 * truncated sequence, an overlong form, a surrogate, beyond U+10FFFF).
 */
size_t pub_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp);

/* C1 controls (U+0080..U+009F, e.g. CSI) act on terminals like C0 ones. */
static inline int pub_utf8_is_c1(uint32_t cp)
{
	return cp >= 0x80 && cp < 0xa0;
}

/*
 * A character that is not seen but changes how the text around it reads:
 * Unicode's format characters (bidi marks, embeddings, overrides and
 * isolates; zero-width spaces and joiners; the byte-order mark; the soft
 * hyphen; tag characters), the other default-ignorable ones, and the line
 * and paragraph separators. A client name carrying one could read as
 * another ("pubctl" and a zero-width space) or hide text in a log line, a
 * table row or a metrics label.
 */
int pub_utf8_is_unseen(uint32_t cp);

/*
 * The length of the non-ASCII UTF-8 sequence at p (n > 0 bytes left) if it
 * may be shown as it is, else 0: not valid, a C1 control, or unseen
 * (pub_utf8_is_unseen).
 */
size_t pub_utf8_shown_len(const unsigned char *p, size_t n);

#endif
