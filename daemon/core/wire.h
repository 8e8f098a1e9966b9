/* SPDX-License-Identifier: MIT */
/*
 * The datagram header every pubd datagram carries (except on raw groups).
 *
 * Fixed 48 bytes, network byte order:
 *   0  u32 magic        "PUBD" (0x50554244)
 *   4  u8  version      1
 *   5  u8  flags        PUBD_WIRE_F_*; unknown bits are an error (version 1)
 *   6  u16 hdr_len      48 in version 1; a decoder accepts >= 48 and skips the
 *                       rest, so a later version may grow the header
 *   8  u64 group_id     pubd_group_id(name): two groups on one address stay apart
 *  16  u64 source_id    random per daemon start
 *  24  u64 msg_seq      per (source, group), starting at 0
 *  32  u32 msg_len      total message length in bytes
 *  36  u32 frag_index   0 .. frag_count-1
 *  40  u32 frag_count   >= 1 for data, 0 for a heartbeat
 *  44  u32 frag_offset  where this fragment's payload sits in the message
 *
 * Fragment layout (frag.h): every fragment but the last carries the same
 * number of payload bytes, the unit, and fragment i sits at i * unit; the
 * last holds the remaining 1..unit bytes. A receiver checks this per
 * datagram, so a set of fragments that agree on msg_len, frag_count and unit
 * covers the message exactly once.
 *
 * A heartbeat (flag HEARTBEAT, frag_count 0, msg_len 0, no payload) tells
 * receivers the sender's next msg_seq, so a lost tail of a stream is counted
 * as a gap instead of going unnoticed.
 *
 * Loss repair (wire_ctl.h) adds two flags:
 *  - REPAIR on a data fragment: the same fragment sent again in answer to a
 *    NAK (unicast or multicast). Otherwise a data fragment like any other;
 *    a receiver that has it already discards it.
 *  - CONTROL: a NAK or GONE, whose body (wire_ctl.h) is the payload:
 *    frag_count, frag_index and frag_offset 0, msg_len the body's length,
 *    msg_seq 0; source_id is the sender of the control datagram.
 * A batch (flag BATCH) carries several whole messages of one source and
 * group with consecutive sequence numbers, msg_seq the first one's: small
 * messages queued together share one header, one send and one receive.
 * frag_count is the number of messages (2 to PUBD_WIRE_BATCH_MAX), frag_index and frag_offset
 * are 0, msg_len is the body's length (the whole payload), and the body is
 * frag_count entries of a u16 length and that many bytes, nothing after the
 * last. Each message is then handled as a one-fragment message would be.
 *
 * A datagram carries at most one of HEARTBEAT, REPAIR, CONTROL and BATCH.
 */
#ifndef PUBD_WIRE_H
#define PUBD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PUBD_WIRE_MAGIC	      0x50554244u
#define PUBD_WIRE_VERSION     1
#define PUBD_WIRE_HDR_LEN     48
#define PUBD_WIRE_F_HEARTBEAT 0x01u
#define PUBD_WIRE_F_REPAIR    0x02u
#define PUBD_WIRE_F_CONTROL   0x04u
#define PUBD_WIRE_F_BATCH     0x08u
#define PUBD_WIRE_F_KNOWN     (PUBD_WIRE_F_HEARTBEAT | PUBD_WIRE_F_REPAIR | PUBD_WIRE_F_CONTROL | PUBD_WIRE_F_BATCH)
/* A batch entry's length field; a message in a batch is at most 65535 bytes. */
#define PUBD_WIRE_BATCH_ENTRY_HDR 2
/* Messages in one batch at most: each costs a receiver what a datagram of
 * its own would (reassembly, fan-out), so one datagram of empty messages
 * (2 bytes each) must not buy a forger unbounded work. A 64 B message
 * stream fills 22 a batch at a 1472-byte MTU, 63 at 4096. */
#define PUBD_WIRE_BATCH_MAX 1024u

struct pubd_wire_hdr {
	uint8_t version;
	uint8_t flags;
	uint64_t group_id;
	uint64_t source_id;
	uint64_t msg_seq;
	uint32_t msg_len;
	uint32_t frag_index;
	uint32_t frag_count;
	uint32_t frag_offset;
};

/* Decode results: 0 or one of these (negative), one per kind of fault. */
enum pubd_wire_err {
	PUBD_WIRE_OK = 0,
	PUBD_WIRE_ERR_SHORT = -1,	 /* shorter than the fixed header */
	PUBD_WIRE_ERR_MAGIC = -2,	 /* not a pubd datagram */
	PUBD_WIRE_ERR_VERSION = -3,	 /* a version this build does not speak */
	PUBD_WIRE_ERR_HDR_LEN = -4,	 /* hdr_len below 48 or beyond the datagram */
	PUBD_WIRE_ERR_FLAGS = -5,	 /* unknown flag bits */
	PUBD_WIRE_ERR_FRAG_COUNT = -6,	 /* 0 on data, or more fragments than msg_len allows */
	PUBD_WIRE_ERR_FRAG_INDEX = -7,	 /* index >= count */
	PUBD_WIRE_ERR_FRAG_RANGE = -8,	 /* offset + payload beyond msg_len */
	PUBD_WIRE_ERR_FRAG_SIZE = -9,	 /* empty fragment of a non-empty message, or a
					  * single-fragment message whose payload != msg_len */
	PUBD_WIRE_ERR_HEARTBEAT = -10,	 /* heartbeat with payload, fragments or length */
	PUBD_WIRE_ERR_FRAG_LAYOUT = -11, /* offset/size not where the fragment layout puts them */
	PUBD_WIRE_ERR_CONTROL = -12,	 /* control datagram with fragments, or msg_len != body, or two kinds */
	PUBD_WIRE_ERR_BATCH = -13,	 /* batch whose entries do not fill its body exactly, or fewer than 2 */
};

/* Write h as 48 bytes into out (magic, version 1 and hdr_len filled in). */
void pubd_wire_encode(const struct pubd_wire_hdr *h, uint8_t out[PUBD_WIRE_HDR_LEN]);

/*
 * Check and decode a datagram of len bytes. Never reads outside buf.
 * On success fills *h and points *payload and *payload_len at the bytes after
 * the header. Returns 0 or a PUBD_WIRE_ERR_*.
 */
int pubd_wire_decode(const void *buf, size_t len, struct pubd_wire_hdr *h, const uint8_t **payload,
		     size_t *payload_len);

/* pubd_wire_check_frag for any header but a message in one datagram. */
int pubd_wire_check_frag_slow(const struct pubd_wire_hdr *h, size_t payload_len, uint32_t *unit);
/*
 * The data-fragment checks of pubd_wire_decode (FRAG_COUNT .. FRAG_LAYOUT),
 * for a header that did not come through it (reassembly re-checks what it
 * relies on). On success sets *unit (if not NULL) to the payload size of
 * every fragment but the last (msg_len for a single fragment).
 */
static inline int pubd_wire_check_frag(const struct pubd_wire_hdr *h, size_t payload_len, uint32_t *unit)
{
	/* The common case, a message in one datagram, passes every check:
	 * inline, as every received message is checked twice (decoding,
	 * then reassembly, which needs the unit). */
	if (h->frag_count == 1 && h->frag_index == 0 && h->frag_offset == 0 && payload_len == h->msg_len) {
		if (unit)
			*unit = h->msg_len;
		return PUBD_WIRE_OK;
	}
	return pubd_wire_check_frag_slow(h, payload_len, unit);
}

const char *pubd_wire_strerror(int err);

/* How many messages a decoded datagram completes at its sender: a batch
 * its frag_count, a message's last fragment 1, anything else 0. */
static inline uint32_t pubd_wire_msgs_completed(const struct pubd_wire_hdr *h)
{
	if (h->flags & PUBD_WIRE_F_BATCH)
		return h->frag_count;
	if (h->flags & (PUBD_WIRE_F_HEARTBEAT | PUBD_WIRE_F_CONTROL))
		return 0;
	return h->frag_index + 1 == h->frag_count;
}

/* The messages of a batch that pubd_wire_decode accepted, in order. */
struct pubd_wire_batch_iter {
	const uint8_t *p, *end;
	struct pubd_wire_hdr msg; /* the current message's header, as if it came alone */
	bool started;
};

void pubd_wire_batch_begin(struct pubd_wire_batch_iter *it, const struct pubd_wire_hdr *h, const uint8_t *payload,
			   size_t payload_len);
/* The next message: its header (one fragment, no flags) and bytes. False
 * after the last. Never reads past the body. */
bool pubd_wire_batch_next(struct pubd_wire_batch_iter *it, const struct pubd_wire_hdr **msg, const uint8_t **data,
			  size_t *len);
/* Append one message to a batch body at out (room for
 * PUBD_WIRE_BATCH_ENTRY_HDR + len bytes; len <= UINT16_MAX). Returns the
 * bytes written. */
size_t pubd_wire_batch_put(uint8_t *out, const void *data, uint16_t len);

/* 64-bit FNV-1a of a group name: the group id on the wire. */
uint64_t pubd_group_id(const char *name, size_t len);

#endif
