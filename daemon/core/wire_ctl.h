/* SPDX-License-Identifier: MIT */
/*
 * The body of a repair control datagram (wire.h flag CONTROL): a NAK from a
 * receiver to a source, a GONE or a COOKIE from a source to a receiver, or
 * a STATUS from a receiver to a source (flow control, core/flow_ctl.h).
 *
 * The wire header carries group_id and, as source_id, the daemon sending
 * the control datagram. The body, network byte order, 40 bytes fixed:
 *   0  u8  ctl_version  2
 *   1  u8  type         1 NAK, 2 GONE, 3 STATUS, 4 COOKIE
 *   2  u16 body_len     40 + bitmap_len (+ 8 with a cookie); a decoder
 *                       accepts more and skips it
 *   4  u32 count        sequence numbers in the range, 1 .. 65536; a
 *                       STATUS's window, 0 .. 2^32 - 1 (below)
 *   8  u64 stream       the source whose messages the range names (a NAK's
 *                       or STATUS's addressee; a GONE's own source id)
 *  16  u64 first_seq    the range is first_seq .. first_seq + count - 1
 *  24  u32 frag_first   NAK of one message's fragments: the fragment the
 *                       bitmap's bit 0 stands for; a STATUS's serial number
 *                       (per stream, from 1, wrapping); 0 otherwise
 *  28  u16 bitmap_len   bytes of fragment bitmap after the fixed part, 0 ..
 *                       1024 (8192 fragments); non-zero only with count 1
 *  30  u16 reserved     0
 *  32  u64 token        the source's repair token for the group (below)
 *  40  bitmap           bit i (byte i/8, LSB first) set: fragment
 *                       frag_first + i is missing
 *  40 + bitmap_len  u64 cookie   optional (body_len says), on a NAK,
 *                       STATUS or COOKIE: the asker's address cookie
 *                       (below), non-zero
 * A NAK without a bitmap asks for whole messages; a GONE says the range has
 * left the source's window (a GONE has no bitmap). A STATUS says the
 * receiving daemon's subscribers can take the messages first_seq ..
 * first_seq + count - 1 (first_seq: one past the last it delivered; count:
 * the room its fullest subscriber queue has), so a source under flow
 * control sends nothing from first_seq + count on until it hears more; it
 * has no bitmap and its range must not wrap. The latest STATUS of a
 * receiver stands, less room than before included (a subscriber joined);
 * its serial tells a source which is latest, whatever order they came in.
 *
 * The repair token: a publishing daemon draws a random, non-zero 64-bit
 * token for each repair group it keeps a window for, and sends it only on
 * the group's multicast, in its heartbeats (a header extension: hdr_len 56,
 * the token at bytes 48..55; decoders of version 1 skip it). A NAK must
 * echo it, and a GONE carries it back, so only hosts that receive the
 * group can ask a source for repairs (a forged NAK from anywhere else,
 * whatever address it claims, is ignored before any work), and only the
 * source can make a receiver give up a gap. A STATUS echoes it too: a
 * host that does not receive the group cannot hold its source back.
 *
 * The cookie: the token is in every heartbeat, so any host that hears the
 * group can send a NAK with it, and the NAK's sender address can be
 * forged: repairs would go to a third party, a NAK of 88 bytes making
 * megabytes (a reflector). So a source answers a NAK only at an address
 * that proved it receives there: the NAK must echo that address's cookie,
 * a keyed hash of the address with the source's secret, which the source
 * sends nowhere but to that address. A NAK without it is answered by a
 * COOKIE alone (count 0, first_seq 0, stream the source's id, its token, and
 * the cookie), no bigger than the NAK; the receiver keeps it for the source
 * and NAKs again at once. A STATUS must echo it too (flow control holds the
 * source back only for hosts that receive where they say), and is answered
 * the same way without it.
 */
#ifndef PUBD_WIRE_CTL_H
#define PUBD_WIRE_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PUBD_CTL_VERSION    2
#define PUBD_CTL_FIXED_LEN  40
#define PUBD_CTL_MAX_COUNT  65536u
#define PUBD_CTL_MAX_BITMAP 1024u
#define PUBD_CTL_COOKIE_LEN 8
#define PUBD_CTL_MAX_LEN    (PUBD_CTL_FIXED_LEN + PUBD_CTL_MAX_BITMAP + PUBD_CTL_COOKIE_LEN)

enum pubd_ctl_type { PUBD_CTL_NAK = 1, PUBD_CTL_GONE = 2, PUBD_CTL_STATUS = 3, PUBD_CTL_COOKIE = 4 };

struct pubd_ctl {
	uint8_t type;
	uint32_t count;
	uint64_t stream;
	uint64_t first_seq;
	uint64_t token;
	uint32_t frag_first; /* a STATUS's serial */
	uint16_t bitmap_len;
	const uint8_t *bitmap; /* decode: points into the body; encode: bitmap_len bytes */
	uint64_t cookie;       /* NAK, STATUS: echoed (0: none); COOKIE: given, non-zero */
};

enum pubd_ctl_err {
	PUBD_CTL_OK = 0,
	PUBD_CTL_ERR_SHORT = -1,   /* body shorter than 32 bytes or than body_len */
	PUBD_CTL_ERR_VERSION = -2, /* a control version this build does not speak */
	PUBD_CTL_ERR_TYPE = -3,	   /* not NAK, GONE or STATUS */
	PUBD_CTL_ERR_COUNT = -4,   /* count 0 or above 65536 (NAK, GONE), or the range wraps */
	PUBD_CTL_ERR_BITMAP =
		-5, /* bitmap on a GONE, a STATUS or a multi-message NAK, too long, empty, or beyond body_len */
	PUBD_CTL_ERR_RESERVED = -6, /* reserved bits set */
	PUBD_CTL_ERR_COOKIE = -7    /* a COOKIE without one, or a cookie on a GONE */
};

/* Encode c into out (room for PUBD_CTL_MAX_LEN); returns the body length,
 * or 0 when c is not encodable (the same checks as decoding). */
size_t pubd_ctl_encode(const struct pubd_ctl *c, uint8_t *out, size_t cap);

/* Check and decode a body of len bytes. Never reads outside it. */
int pubd_ctl_decode(const uint8_t *body, size_t len, struct pubd_ctl *c);

/* Is fragment i missing by c (bitmap), or asked for whole (no bitmap)? */
int pubd_ctl_wants_frag(const struct pubd_ctl *c, uint32_t frag_index);

const char *pubd_ctl_strerror(int err);

/* A heartbeat header carrying a repair token: PUBD_WIRE_HDR_LEN + 8. */
#define PUBD_CTL_HB_TOKEN_LEN 56
/* ... and the age of its stream (microseconds since the source sent the
 * group's first message): PUBD_CTL_HB_TOKEN_LEN + 8. Receivers tell by it
 * whether a stream whose first datagrams they missed began after they
 * started listening (then those were lost, and counted). */
#define PUBD_CTL_HB_LEN 64

/* Turn the heartbeat header hdr (PUBD_WIRE_HDR_LEN bytes encoded, room for
 * PUBD_CTL_HB_LEN) into one carrying token (0: none, a group without
 * repair) and its stream's age; returns its length. */
size_t pubd_ctl_hb_put(uint8_t *hdr, uint64_t token, uint64_t age_us);
/* The token a heartbeat datagram's header carries (its hdr_len already
 * checked by pubd_wire_decode), or 0 when it carries none. */
uint64_t pubd_ctl_hb_token(const uint8_t *dgram, size_t len);
/* Its stream's age in microseconds; false when it does not say (a
 * heartbeat of a pubd before the age was sent). */
bool pubd_ctl_hb_age_us(const uint8_t *dgram, size_t len, uint64_t *age_us);

#endif
