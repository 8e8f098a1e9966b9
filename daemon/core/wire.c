/* SPDX-License-Identifier: MIT */
/*
 * The datagram header codec. Every field is read with explicit byte loads,
 * so neither alignment nor host byte order matters and nothing past the
 * length the caller gave is ever touched.
 */
#include <string.h>

#include "wire.h"

static inline void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static inline uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

void pubd_wire_encode(const struct pubd_wire_hdr *h, uint8_t out[PUBD_WIRE_HDR_LEN])
{
	put_be32(out + 0, PUBD_WIRE_MAGIC);
	out[4] = PUBD_WIRE_VERSION;
	out[5] = h->flags;
	put_be16(out + 6, PUBD_WIRE_HDR_LEN);
	put_be64(out + 8, h->group_id);
	put_be64(out + 16, h->source_id);
	put_be64(out + 24, h->msg_seq);
	put_be32(out + 32, h->msg_len);
	put_be32(out + 36, h->frag_index);
	put_be32(out + 40, h->frag_count);
	put_be32(out + 44, h->frag_offset);
}

int pubd_wire_check_frag_slow(const struct pubd_wire_hdr *h, size_t payload_len, uint32_t *unit)
{
	uint64_t msg_len = h->msg_len, count = h->frag_count, index = h->frag_index;
	uint64_t offset = h->frag_offset, plen = payload_len, u;

	/* Every fragment but that of an empty message carries a byte at least. */
	if (count == 0 || count > (msg_len ? msg_len : 1))
		return PUBD_WIRE_ERR_FRAG_COUNT;
	if (index >= count)
		return PUBD_WIRE_ERR_FRAG_INDEX;
	/* msg_len < 2^32, so a payload_len this large is beyond it anyway and
	 * the sum below cannot wrap. */
	if (payload_len > UINT32_MAX || offset + plen > msg_len)
		return PUBD_WIRE_ERR_FRAG_RANGE;
	if ((plen == 0 && msg_len != 0) || (count == 1 && plen != msg_len))
		return PUBD_WIRE_ERR_FRAG_SIZE;
	if (count == 1) {
		u = msg_len;
	} else if (index < count - 1) {
		/* Fragment i sits at i * unit, and unit must make the last
		 * fragment hold between 1 and unit bytes. */
		u = plen;
		if (offset != index * u || (count - 1) * u >= msg_len || count * u < msg_len)
			return PUBD_WIRE_ERR_FRAG_LAYOUT;
	} else {
		u = offset / (count - 1);
		if (offset % (count - 1) != 0 || offset + plen != msg_len || plen > u)
			return PUBD_WIRE_ERR_FRAG_LAYOUT;
	}
	if (unit)
		*unit = (uint32_t)u;
	return PUBD_WIRE_OK;
}

/* A batch's fixed fields, then its entries (as pubd_wire_batch_next walks
 * them): exactly frag_count of them, filling the body to its last byte. */
static int check_batch(const struct pubd_wire_hdr *h, const uint8_t *body, size_t plen)
{
	struct pubd_wire_batch_iter it;
	const struct pubd_wire_hdr *mh;
	const uint8_t *data;
	size_t len;
	uint32_t n = 0;

	if (h->frag_count < 2 || h->frag_count > PUBD_WIRE_BATCH_MAX || h->frag_index || h->frag_offset ||
	    h->msg_len != plen || h->msg_seq > UINT64_MAX - h->frag_count)
		return PUBD_WIRE_ERR_BATCH;
	pubd_wire_batch_begin(&it, h, body, plen);
	while (n <= h->frag_count && pubd_wire_batch_next(&it, &mh, &data, &len))
		n++;
	return n == h->frag_count && it.p == it.end ? PUBD_WIRE_OK : PUBD_WIRE_ERR_BATCH;
}

int pubd_wire_decode(const void *buf, size_t len, struct pubd_wire_hdr *h, const uint8_t **payload, size_t *payload_len)
{
	const uint8_t *p = buf;
	size_t hdr_len, plen;
	int err;

	if (len < PUBD_WIRE_HDR_LEN)
		return PUBD_WIRE_ERR_SHORT;
	if (get_be32(p) != PUBD_WIRE_MAGIC)
		return PUBD_WIRE_ERR_MAGIC;
	if (p[4] != PUBD_WIRE_VERSION)
		return PUBD_WIRE_ERR_VERSION;
	hdr_len = get_be16(p + 6);
	if (hdr_len < PUBD_WIRE_HDR_LEN || hdr_len > len)
		return PUBD_WIRE_ERR_HDR_LEN;
	if (p[5] & ~PUBD_WIRE_F_KNOWN)
		return PUBD_WIRE_ERR_FLAGS;

	h->version = p[4];
	h->flags = p[5];
	h->group_id = get_be64(p + 8);
	h->source_id = get_be64(p + 16);
	h->msg_seq = get_be64(p + 24);
	h->msg_len = get_be32(p + 32);
	h->frag_index = get_be32(p + 36);
	h->frag_count = get_be32(p + 40);
	h->frag_offset = get_be32(p + 44);
	plen = len - hdr_len;

	/* At most one kind: heartbeat, repair, control or batch. */
	if (h->flags & (h->flags - 1))
		return PUBD_WIRE_ERR_CONTROL;
	if (h->flags & PUBD_WIRE_F_HEARTBEAT) {
		if (h->frag_count || h->msg_len || h->frag_index || h->frag_offset || plen)
			return PUBD_WIRE_ERR_HEARTBEAT;
	} else if (h->flags & PUBD_WIRE_F_CONTROL) {
		if (h->frag_count || h->frag_index || h->frag_offset || h->msg_seq || h->msg_len != plen)
			return PUBD_WIRE_ERR_CONTROL;
	} else if (h->flags & PUBD_WIRE_F_BATCH) {
		err = check_batch(h, p + hdr_len, plen);
		if (err)
			return err;
	} else {
		err = pubd_wire_check_frag(h, plen, NULL);
		if (err)
			return err;
	}
	*payload = p + hdr_len;
	*payload_len = plen;
	return PUBD_WIRE_OK;
}

const char *pubd_wire_strerror(int err)
{
	switch (err) {
	case PUBD_WIRE_OK:
		return "ok";
	case PUBD_WIRE_ERR_SHORT:
		return "datagram shorter than the header";
	case PUBD_WIRE_ERR_MAGIC:
		return "bad magic: not a pubd datagram";
	case PUBD_WIRE_ERR_VERSION:
		return "unsupported header version";
	case PUBD_WIRE_ERR_HDR_LEN:
		return "header length below 48 or beyond the datagram";
	case PUBD_WIRE_ERR_FLAGS:
		return "unknown flag bits";
	case PUBD_WIRE_ERR_FRAG_COUNT:
		return "fragment count 0 or more than the message length allows";
	case PUBD_WIRE_ERR_FRAG_INDEX:
		return "fragment index not below fragment count";
	case PUBD_WIRE_ERR_FRAG_RANGE:
		return "fragment extends beyond the message";
	case PUBD_WIRE_ERR_FRAG_SIZE:
		return "fragment payload size does not fit the message";
	case PUBD_WIRE_ERR_HEARTBEAT:
		return "heartbeat with payload, fragments or length";
	case PUBD_WIRE_ERR_FRAG_LAYOUT:
		return "fragment not where the fragment layout puts it";
	case PUBD_WIRE_ERR_CONTROL:
		return "control datagram with fragments or a wrong length, or more than one kind flag";
	case PUBD_WIRE_ERR_BATCH:
		return "batch of fewer than 2 messages, or whose entries do not fill its body";
	default:
		return "unknown wire error";
	}
}

void pubd_wire_batch_begin(struct pubd_wire_batch_iter *it, const struct pubd_wire_hdr *h, const uint8_t *payload,
			   size_t payload_len)
{
	it->p = payload;
	it->end = payload + payload_len;
	it->msg = (struct pubd_wire_hdr){.version = h->version,
					 .group_id = h->group_id,
					 .source_id = h->source_id,
					 .msg_seq = h->msg_seq,
					 .frag_count = 1};
	it->started = false;
}

bool pubd_wire_batch_next(struct pubd_wire_batch_iter *it, const struct pubd_wire_hdr **msg, const uint8_t **data,
			  size_t *len)
{
	size_t n;

	if ((size_t)(it->end - it->p) < PUBD_WIRE_BATCH_ENTRY_HDR)
		return false;
	n = get_be16(it->p);
	if ((size_t)(it->end - it->p) - PUBD_WIRE_BATCH_ENTRY_HDR < n)
		return false;
	if (it->started)
		it->msg.msg_seq++;
	it->started = true;
	*data = it->p + PUBD_WIRE_BATCH_ENTRY_HDR;
	*len = n;
	it->msg.msg_len = (uint32_t)n;
	*msg = &it->msg;
	it->p += PUBD_WIRE_BATCH_ENTRY_HDR + n;
	return true;
}

size_t pubd_wire_batch_put(uint8_t *out, const void *data, uint16_t len)
{
	put_be16(out, len);
	if (len)
		memcpy(out + PUBD_WIRE_BATCH_ENTRY_HDR, data, len);
	return PUBD_WIRE_BATCH_ENTRY_HDR + (size_t)len;
}

uint64_t pubd_group_id(const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
