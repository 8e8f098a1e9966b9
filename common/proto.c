// SPDX-License-Identifier: MIT
/*
 * The local protocol codec: frame header, message bodies and tables.
 *
 * Pure: no fd, no allocation (the table builder asks its owner for room).
 * Every decoder walks its body with a bounds-checked cursor and rejects a
 * body that is too short, too long, or whose length prefixes point past its
 * end; nothing here trusts a length it has not compared with what is there.
 *
 * This file: the frame header, message bodies (decoders, encoders); the
 * tables are in proto_table.c.
 */
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

#include "proto_internal.h"

/* ---- error names ---- */

static const char *const err_names[PUB_ERR__MAX] = {
	[PUB_ERR_PROTO] = "proto",	 [PUB_ERR_VERSION] = "version",	    [PUB_ERR_ACL] = "acl",
	[PUB_ERR_NO_GROUP] = "no_group", [PUB_ERR_TOO_LARGE] = "too_large", [PUB_ERR_STATE] = "state",
	[PUB_ERR_INTERNAL] = "internal", [PUB_ERR_BAD_QUERY] = "bad_query", [PUB_ERR_CONFIG] = "config",
	[PUB_ERR_SLOW] = "slow",	 [PUB_ERR_SHUTDOWN] = "shutdown",   [PUB_ERR_REMADE] = "remade",
	[PUB_ERR_PARTIAL] = "partial",	 [PUB_ERR_BUSY] = "busy",	    [PUB_ERR_HELLO_LATE] = "hello_late",
};

const char *pub_proto_err_name(uint32_t code)
{
	if (code >= PUB_ERR__MAX || !err_names[code])
		return "unknown";
	return err_names[code];
}

/* ---- frame header ---- */

int pub_proto_frame_peek(const void *buf, size_t avail, size_t max_body, uint8_t *type, uint32_t *body_len,
			 const uint8_t **body, size_t *need)
{
	const uint8_t *p = buf;
	uint32_t len;

	if (avail < PUB_PROTO_HDR_LEN) {
		if (need)
			*need = PUB_PROTO_HDR_LEN;
		return 0;
	}
	/* The length first: a peer must not make us wait for (or allocate) more than the limit. */
	len = get_u32(p);
	if (len > max_body)
		return -PUB_ERR_PROTO;
	/* No flags are defined in version 1, so any set bit is a reserved bit. */
	if (p[4] == 0 || p[4] >= PUB_FRAME__MAX || p[5] != 0 || get_u16(p + 6) != 0)
		return -PUB_ERR_PROTO;
	/* A valid header is reported even before its body is in: a reader decides
	 * from type and length how to take a frame larger than its buffer. */
	*type = p[4];
	*body_len = len;
	if (need)
		*need = PUB_PROTO_HDR_LEN + (size_t)len;
	if (avail - PUB_PROTO_HDR_LEN < len)
		return 0;
	*body = p + PUB_PROTO_HDR_LEN;
	return 1;
}

size_t pub_proto_put_hdr(void *out, uint8_t type, uint32_t body_len)
{
	uint8_t *p = out;

	put_u32(p, body_len);
	p[4] = type;
	p[5] = 0;
	put_u16(p + 6, 0);
	return PUB_PROTO_HDR_LEN;
}

/* ---- decoders ---- */

int pub_proto_dec_hello(const uint8_t *body, size_t len, struct pub_msg_hello *m)
{
	struct cur c = cur_init(body, len);
	uint16_t reserved;

	memset(m, 0, sizeof(*m));
	m->version = rd_u16(&c);
	reserved = rd_u16(&c);
	m->flags = rd_u32(&c);
	rd_name8(&c, &m->client_name);
	/* m->version stays filled on failure: a daemon can answer a future
	 * client whose HELLO it cannot parse with PUB_ERR_VERSION. */
	if (reserved)
		return -PUB_ERR_PROTO;
	return finish(&c);
}

int pub_proto_dec_welcome(const uint8_t *body, size_t len, struct pub_msg_welcome *m)
{
	struct cur c = cur_init(body, len);

	memset(m, 0, sizeof(*m));
	m->version = rd_u16(&c);
	m->flags = rd_u16(&c);
	m->max_message = rd_u32(&c);
	m->mtu = rd_u32(&c);
	m->client_id = rd_u32(&c);
	m->source_id = rd_u64(&c);
	rd_name8(&c, &m->daemon_version);
	rd_name8(&c, &m->fabric);
	if (m->flags & ~(PUB_WELCOME_F_SHM | PUB_WELCOME_F_SHM_DELIVER | PUB_WELCOME_F_DIRECT))
		return -PUB_ERR_PROTO;
	return finish(&c);
}

int pub_proto_dec_shm(const uint8_t *body, size_t len, struct pub_msg_shm *m)
{
	struct cur c = cur_init(body, len);

	memset(m, 0, sizeof(*m));
	m->kind = rd_u32(&c);
	m->capacity = rd_u32(&c);
	m->max_record = rd_u32(&c);
	m->flags = rd_u32(&c);
	if (m->flags & ~(m->kind == PUB_SHM_GROUP_LOG ? PUB_SHM_F_AFTER_MARK : 0u))
		return -PUB_ERR_PROTO;
	if (m->kind == 0 || m->kind >= PUB_SHM__MAX)
		return -PUB_ERR_PROTO;
	if (m->kind == PUB_SHM_GROUP_LOG || m->kind >= PUB_SHM_DIRECT_LOG) {
		m->slot = rd_u32(&c);
		m->start = rd_u64(&c);
		rd_name8(&c, &m->group);
		if (!c.bad && m->group.len == 0)
			return -PUB_ERR_PROTO;
	}
	if (m->kind >= PUB_SHM_DIRECT_LOG) {
		m->log_id = rd_u32(&c);
		m->peer = rd_u32(&c);
		m->source = rd_u64(&c);
		m->seq = rd_u64(&c);
	}
	return finish(&c);
}

int pub_proto_dec_group_req(const uint8_t *body, size_t len, struct pub_msg_group_req *m)
{
	struct cur c = cur_init(body, len);

	memset(m, 0, sizeof(*m));
	m->req_id = rd_u32(&c);
	rd_name8(&c, &m->group);
	return finish(&c);
}

int pub_proto_dec_publish(const uint8_t *body, size_t len, struct pub_msg_publish *m)
{
	struct cur c = cur_init(body, len);

	memset(m, 0, sizeof(*m));
	m->req_id = rd_u32(&c);
	rd_name8(&c, &m->group);
	if (c.bad)
		return -PUB_ERR_PROTO;
	m->payload = c.p;
	m->payload_len = (size_t)(c.end - c.p);
	return 0;
}

int pub_proto_dec_publish_head(const uint8_t *body, size_t avail, size_t body_len, struct pub_msg_publish *m)
{
	struct cur c;
	size_t head;

	if (avail > body_len)
		avail = body_len;
	if (avail < 5)
		return body_len < 5 ? -PUB_ERR_PROTO : 0;
	head = 5 + (size_t)body[4];
	if (body_len < head)
		return -PUB_ERR_PROTO;
	if (avail < head)
		return 0;
	c = cur_init(body, avail);
	m->req_id = rd_u32(&c);
	rd_name8(&c, &m->group);
	m->payload = c.p;
	m->payload_len = body_len - head;
	return 1;
}

int pub_proto_dec_deliver(const uint8_t *body, size_t len, struct pub_msg_deliver *m)
{
	struct cur c = cur_init(body, len);

	memset(m, 0, sizeof(*m));
	m->source = rd_u64(&c);
	m->seq = rd_u64(&c);
	rd_name8(&c, &m->group);
	if (c.bad)
		return -PUB_ERR_PROTO;
	m->payload = c.p;
	m->payload_len = (size_t)(c.end - c.p);
	return 0;
}

int pub_proto_dec_ok(const uint8_t *body, size_t len, struct pub_msg_ok *m)
{
	struct cur c = cur_init(body, len);

	m->req_id = rd_u32(&c);
	return finish(&c);
}

int pub_proto_dec_error(const uint8_t *body, size_t len, struct pub_msg_error *m)
{
	struct cur c = cur_init(body, len);

	memset(m, 0, sizeof(*m));
	m->req_id = rd_u32(&c);
	m->code = rd_u32(&c);
	rd_text16(&c, &m->text);
	return finish(&c);
}

int pub_proto_dec_query(const uint8_t *body, size_t len, struct pub_msg_query *m)
{
	struct cur c = cur_init(body, len);

	memset(m, 0, sizeof(*m));
	m->req_id = rd_u32(&c);
	m->kind = rd_u8(&c);
	rd_name8(&c, &m->arg);
	return finish(&c);
}

/* ---- encoders ---- */

/*
 * Write cursor over a caller buffer. Like the read cursor it latches the
 * first failure (out of room), so an encoder checks once at the end.
 */
struct wcur {
	uint8_t *p, *end;
	int full;
};

static uint8_t *wtake(struct wcur *w, size_t n)
{
	uint8_t *at = w->p;

	if (w->full || (size_t)(w->end - w->p) < n) {
		w->full = 1;
		return NULL;
	}
	w->p += n;
	return at;
}

static void wr_u8(struct wcur *w, uint8_t v)
{
	uint8_t *p = wtake(w, 1);

	if (p)
		*p = v;
}

static void wr_u16(struct wcur *w, uint16_t v)
{
	uint8_t *p = wtake(w, 2);

	if (p)
		put_u16(p, v);
}

static void wr_u32(struct wcur *w, uint32_t v)
{
	uint8_t *p = wtake(w, 4);

	if (p)
		put_u32(p, v);
}

static void wr_u64(struct wcur *w, uint64_t v)
{
	uint8_t *p = wtake(w, 8);

	if (p)
		put_u64(p, v);
}

static void wr_bytes(struct wcur *w, const void *s, size_t n)
{
	uint8_t *p = wtake(w, n);

	if (p && n)
		memcpy(p, s, n);
}

/* Caller checked n <= PUB_PROTO_NAME_MAX. */
static void wr_name8(struct wcur *w, const char *s, size_t n)
{
	wr_u8(w, (uint8_t)n);
	wr_bytes(w, s, n);
}

static struct wcur wcur_init(void *out, size_t cap)
{
	struct wcur w = {out, (uint8_t *)out + cap, out == NULL};

	return w;
}

/*
 * Start a frame: reserve the header, filled by enc_end once the body length
 * is known. extra is body that the caller sends separately (a payload).
 */
static uint8_t *enc_begin(struct wcur *w)
{
	return wtake(w, PUB_PROTO_HDR_LEN);
}

static long enc_end(struct wcur *w, uint8_t *hdr, uint8_t type, size_t extra)
{
	size_t head, body;

	if (w->full || !hdr)
		return 0;
	head = (size_t)(w->p - hdr);
	body = head - PUB_PROTO_HDR_LEN;
	if (extra > UINT32_MAX - body)
		return -PUB_ERR_PROTO;
	pub_proto_put_hdr(hdr, type, (uint32_t)(body + extra));
	return (long)head;
}

long pub_proto_enc_hello(void *out, size_t cap, uint32_t flags, const char *client_name, size_t name_len)
{
	struct wcur w = wcur_init(out, cap);
	uint8_t *hdr;

	if (name_len > PUB_PROTO_NAME_MAX)
		return -PUB_ERR_PROTO;
	hdr = enc_begin(&w);
	wr_u16(&w, PUB_PROTO_VERSION);
	wr_u16(&w, 0);
	wr_u32(&w, flags);
	wr_name8(&w, client_name, name_len);
	return enc_end(&w, hdr, PUB_FRAME_HELLO, 0);
}

long pub_proto_enc_welcome(void *out, size_t cap, const struct pub_msg_welcome *m)
{
	struct wcur w = wcur_init(out, cap);
	uint8_t *hdr;

	if (m->daemon_version.len > PUB_PROTO_NAME_MAX || m->fabric.len > PUB_PROTO_NAME_MAX)
		return -PUB_ERR_PROTO;
	hdr = enc_begin(&w);
	wr_u16(&w, m->version);
	wr_u16(&w, m->flags);
	wr_u32(&w, m->max_message);
	wr_u32(&w, m->mtu);
	wr_u32(&w, m->client_id);
	wr_u64(&w, m->source_id);
	wr_name8(&w, m->daemon_version.ptr, m->daemon_version.len);
	wr_name8(&w, m->fabric.ptr, m->fabric.len);
	return enc_end(&w, hdr, PUB_FRAME_WELCOME, 0);
}

long pub_proto_enc_shm(void *out, size_t cap, const struct pub_msg_shm *m)
{
	struct wcur w = wcur_init(out, cap);
	uint8_t *hdr = enc_begin(&w);

	wr_u32(&w, m->kind);
	wr_u32(&w, m->capacity);
	wr_u32(&w, m->max_record);
	wr_u32(&w, m->flags);
	if (m->group.len > PUB_PROTO_NAME_MAX)
		return -PUB_ERR_PROTO;
	if (m->kind == PUB_SHM_GROUP_LOG || m->kind >= PUB_SHM_DIRECT_LOG) {
		wr_u32(&w, m->slot);
		wr_u64(&w, m->start);
		wr_name8(&w, m->group.ptr, m->group.len);
	}
	if (m->kind >= PUB_SHM_DIRECT_LOG) {
		wr_u32(&w, m->log_id);
		wr_u32(&w, m->peer);
		wr_u64(&w, m->source);
		wr_u64(&w, m->seq);
	}
	return enc_end(&w, hdr, PUB_FRAME_SHM, 0);
}

long pub_proto_enc_group_req(void *out, size_t cap, uint8_t type, uint32_t req_id, const char *group, size_t group_len)
{
	struct wcur w = wcur_init(out, cap);
	uint8_t *hdr;

	if (group_len > PUB_PROTO_NAME_MAX ||
	    (type != PUB_FRAME_SUBSCRIBE && type != PUB_FRAME_UNSUBSCRIBE && type != PUB_FRAME_DIRECT))
		return -PUB_ERR_PROTO;
	hdr = enc_begin(&w);
	wr_u32(&w, req_id);
	wr_name8(&w, group, group_len);
	return enc_end(&w, hdr, type, 0);
}

long pub_proto_enc_publish_head(void *out, size_t cap, uint32_t req_id, const char *group, size_t group_len,
				size_t payload_len)
{
	struct wcur w = wcur_init(out, cap);
	uint8_t *hdr;

	if (group_len > PUB_PROTO_NAME_MAX)
		return -PUB_ERR_PROTO;
	hdr = enc_begin(&w);
	wr_u32(&w, req_id);
	wr_name8(&w, group, group_len);
	return enc_end(&w, hdr, PUB_FRAME_PUBLISH, payload_len);
}

long pub_proto_enc_deliver_head(void *out, size_t cap, uint64_t source, uint64_t seq, const char *group,
				size_t group_len, size_t payload_len)
{
	struct wcur w = wcur_init(out, cap);
	uint8_t *hdr;

	if (group_len > PUB_PROTO_NAME_MAX)
		return -PUB_ERR_PROTO;
	hdr = enc_begin(&w);
	wr_u64(&w, source);
	wr_u64(&w, seq);
	wr_name8(&w, group, group_len);
	return enc_end(&w, hdr, PUB_FRAME_DELIVER, payload_len);
}

long pub_proto_enc_ok(void *out, size_t cap, uint32_t req_id)
{
	struct wcur w = wcur_init(out, cap);
	uint8_t *hdr;

	hdr = enc_begin(&w);
	wr_u32(&w, req_id);
	return enc_end(&w, hdr, PUB_FRAME_OK, 0);
}

long pub_proto_enc_error(void *out, size_t cap, uint32_t req_id, uint32_t code, const char *text, size_t text_len)
{
	struct wcur w = wcur_init(out, cap);
	uint8_t *hdr;

	/* An error text is prose for a human (a reload may list many config
	 * errors): cut it rather than lose the error. */
	if (text_len > PUB_PROTO_TEXT_MAX)
		text_len = PUB_PROTO_TEXT_MAX;
	hdr = enc_begin(&w);
	wr_u32(&w, req_id);
	wr_u32(&w, code);
	wr_u16(&w, (uint16_t)text_len);
	wr_bytes(&w, text, text_len);
	return enc_end(&w, hdr, PUB_FRAME_ERROR, 0);
}

long pub_proto_enc_query(void *out, size_t cap, uint32_t req_id, uint8_t kind, const char *arg, size_t arg_len)
{
	struct wcur w = wcur_init(out, cap);
	uint8_t *hdr;

	if (arg_len > PUB_PROTO_NAME_MAX)
		return -PUB_ERR_PROTO;
	hdr = enc_begin(&w);
	wr_u32(&w, req_id);
	wr_u8(&w, kind);
	wr_name8(&w, arg, arg_len);
	return enc_end(&w, hdr, PUB_FRAME_QUERY, 0);
}
