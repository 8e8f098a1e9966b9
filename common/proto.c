// SPDX-License-Identifier: MIT
/*
 * The local protocol codec: frame header, message bodies and tables.
 *
 * Pure: no fd, no allocation (the table builder asks its owner for room).
 * Every decoder walks its body with a bounds-checked cursor and rejects a
 * body that is too short, too long, or whose length prefixes point past its
 * end; nothing here trusts a length it has not compared with what is there.
 */
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

/* ---- little-endian helpers ---- */

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
	return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/*
 * Read cursor. Once a read fails, bad stays set and every later read fails
 * too, so a decoder checks once at the end instead of after every field.
 */
struct cur {
	const uint8_t *p, *end;
	int bad;
};

static const uint8_t *take(struct cur *c, size_t n)
{
	const uint8_t *at = c->p;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	c->p += n;
	return at;
}

static uint8_t rd_u8(struct cur *c)
{
	const uint8_t *p = take(c, 1);

	return p ? p[0] : 0;
}

static uint16_t rd_u16(struct cur *c)
{
	const uint8_t *p = take(c, 2);

	return p ? get_u16(p) : 0;
}

static uint32_t rd_u32(struct cur *c)
{
	const uint8_t *p = take(c, 4);

	return p ? get_u32(p) : 0;
}

static uint64_t rd_u64(struct cur *c)
{
	const uint8_t *p = take(c, 8);

	return p ? get_u64(p) : 0;
}

static void rd_str(struct cur *c, size_t len, struct pub_str *s)
{
	const uint8_t *p = take(c, len);

	s->ptr = (const char *)p;
	s->len = p ? len : 0;
}

static void rd_name8(struct cur *c, struct pub_str *s)
{
	rd_str(c, rd_u8(c), s);
}

static void rd_text16(struct cur *c, struct pub_str *s)
{
	rd_str(c, rd_u16(c), s);
}

/* The body must be consumed exactly: trailing bytes are as malformed as missing ones. */
static int finish(const struct cur *c)
{
	return c->bad || c->p != c->end ? -PUB_ERR_PROTO : 0;
}

static struct cur cur_init(const uint8_t *body, size_t len)
{
	struct cur c = {body, body + len, body == NULL && len != 0};

	return c;
}

/* ---- error names ---- */

static const char *const err_names[PUB_ERR__MAX] = {
	[PUB_ERR_PROTO] = "proto",	 [PUB_ERR_VERSION] = "version",	    [PUB_ERR_ACL] = "acl",
	[PUB_ERR_NO_GROUP] = "no_group", [PUB_ERR_TOO_LARGE] = "too_large", [PUB_ERR_STATE] = "state",
	[PUB_ERR_INTERNAL] = "internal", [PUB_ERR_BAD_QUERY] = "bad_query", [PUB_ERR_CONFIG] = "config",
	[PUB_ERR_SLOW] = "slow",	 [PUB_ERR_SHUTDOWN] = "shutdown",
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
	uint16_t reserved;

	memset(m, 0, sizeof(*m));
	m->version = rd_u16(&c);
	reserved = rd_u16(&c);
	m->max_message = rd_u32(&c);
	m->mtu = rd_u32(&c);
	m->client_id = rd_u32(&c);
	m->source_id = rd_u64(&c);
	rd_name8(&c, &m->daemon_version);
	rd_name8(&c, &m->fabric);
	if (reserved)
		return -PUB_ERR_PROTO;
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
	wr_u16(&w, 0);
	wr_u32(&w, m->max_message);
	wr_u32(&w, m->mtu);
	wr_u32(&w, m->client_id);
	wr_u64(&w, m->source_id);
	wr_name8(&w, m->daemon_version.ptr, m->daemon_version.len);
	wr_name8(&w, m->fabric.ptr, m->fabric.len);
	return enc_end(&w, hdr, PUB_FRAME_WELCOME, 0);
}

long pub_proto_enc_group_req(void *out, size_t cap, uint8_t type, uint32_t req_id, const char *group, size_t group_len)
{
	struct wcur w = wcur_init(out, cap);
	uint8_t *hdr;

	if (group_len > PUB_PROTO_NAME_MAX || (type != PUB_FRAME_SUBSCRIBE && type != PUB_FRAME_UNSUBSCRIBE))
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

/* ---- table builder ---- */

/* Make room for n more bytes; latches -ENOMEM in b->err. */
static uint8_t *tb_room(struct pub_table_builder *b, size_t n)
{
	size_t need;

	if (b->err)
		return NULL;
	if (n > SIZE_MAX - b->len) {
		b->err = -ENOMEM;
		return NULL;
	}
	need = b->len + n;
	if (need > b->cap) {
		/* need is the total capacity wanted; whatever grow() did, trust only cap. */
		if (!b->grow || b->grow(b, need) < 0 || b->cap < need || !b->buf) {
			b->err = -ENOMEM;
			return NULL;
		}
	}
	return b->buf + b->len;
}

static void tb_put(struct pub_table_builder *b, const void *src, size_t n)
{
	uint8_t *p = tb_room(b, n);

	if (!p)
		return;
	if (n)
		memcpy(p, src, n);
	b->len += n;
}

static void tb_u8(struct pub_table_builder *b, uint8_t v)
{
	tb_put(b, &v, 1);
}

static void tb_u16(struct pub_table_builder *b, uint16_t v)
{
	uint8_t x[2];

	put_u16(x, v);
	tb_put(b, x, sizeof(x));
}

static void tb_u32(struct pub_table_builder *b, uint32_t v)
{
	uint8_t x[4];

	put_u32(x, v);
	tb_put(b, x, sizeof(x));
}

static void tb_u64(struct pub_table_builder *b, uint64_t v)
{
	uint8_t x[8];

	put_u64(x, v);
	tb_put(b, x, sizeof(x));
}

static int col_type_of(char c)
{
	switch (c) {
	case 'u':
		return PUB_COL_U64;
	case 'i':
		return PUB_COL_I64;
	case 's':
		return PUB_COL_STR;
	}
	return -1;
}

void pub_table_begin(struct pub_table_builder *b, uint32_t req_id, const char *table_name, const char *const *cols,
		     unsigned ncols)
{
	size_t name_len = table_name ? strlen(table_name) : 0;

	/* A new frame starts clean; a failed earlier frame was already cut off by pub_table_end. */
	b->err = 0;
	b->frame_start = b->len;
	b->ncols = 0;
	b->col = 0;
	b->nrows = 0;
	if (name_len > PUB_PROTO_NAME_MAX || ncols > UINT16_MAX) {
		b->err = -EINVAL;
		return;
	}
	tb_room(b, PUB_PROTO_HDR_LEN);
	if (b->err)
		return;
	b->len += PUB_PROTO_HDR_LEN; /* header written by pub_table_end */
	tb_u32(b, req_id);
	tb_u8(b, (uint8_t)name_len);
	tb_put(b, table_name, name_len);
	tb_u16(b, (uint16_t)ncols);
	for (unsigned i = 0; i < ncols && !b->err; i++) {
		const char *spec = cols[i];
		const char *colon = spec ? strrchr(spec, ':') : NULL;
		int type = colon ? col_type_of(colon[1]) : -1;
		size_t n = colon ? (size_t)(colon - spec) : 0;

		if (type < 0 || colon[2] != '\0' || n > PUB_PROTO_NAME_MAX) {
			b->err = -EINVAL;
			return;
		}
		tb_u8(b, (uint8_t)type);
		tb_u8(b, (uint8_t)n);
		tb_put(b, spec, n);
	}
	b->nrows_at = b->len;
	tb_u32(b, 0);
	b->ncols = (uint16_t)ncols;
}

/*
 * Type of the next column, read back from the descriptors already in the
 * buffer (the builder has no room of its own for them). O(ncols) per cell;
 * tables are a few columns wide and built only for pubctl.
 */
static int tb_next_col_type(struct pub_table_builder *b)
{
	const uint8_t *p;

	if (b->err)
		return -1;
	if (b->col >= b->ncols) {
		b->err = -EINVAL;
		return -1;
	}
	p = b->buf + b->frame_start + PUB_PROTO_HDR_LEN + 4;
	p += 1 + p[0] + 2; /* table name, ncols */
	for (unsigned i = 0; i < b->col; i++)
		p += 2 + p[1];
	return p[0];
}

static void tb_cell_done(struct pub_table_builder *b)
{
	if (b->err)
		return;
	if (++b->col == b->ncols) {
		b->col = 0;
		if (b->nrows == UINT32_MAX) {
			b->err = -EINVAL;
			return;
		}
		b->nrows++;
	}
}

void pub_table_u64(struct pub_table_builder *b, uint64_t v)
{
	if (tb_next_col_type(b) != PUB_COL_U64) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	tb_u64(b, v);
	tb_cell_done(b);
}

void pub_table_i64(struct pub_table_builder *b, int64_t v)
{
	if (tb_next_col_type(b) != PUB_COL_I64) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	tb_u64(b, (uint64_t)v);
	tb_cell_done(b);
}

void pub_table_strn(struct pub_table_builder *b, const char *s, size_t n)
{
	if (tb_next_col_type(b) != PUB_COL_STR) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	if (!s)
		n = 0;
	/* A cell is display text; cut one that cannot fit text16 rather than fail the table. */
	if (n > PUB_PROTO_TEXT_MAX)
		n = PUB_PROTO_TEXT_MAX;
	tb_u16(b, (uint16_t)n);
	tb_put(b, s, n);
	tb_cell_done(b);
}

void pub_table_str(struct pub_table_builder *b, const char *s)
{
	pub_table_strn(b, s, s ? strlen(s) : 0);
}

int pub_table_end(struct pub_table_builder *b)
{
	size_t body = 0;

	if (!b->err && b->col != 0)
		b->err = -EINVAL; /* the last row is short */
	if (!b->err) {
		body = b->len - b->frame_start - PUB_PROTO_HDR_LEN;
		if (body > UINT32_MAX)
			b->err = -ENOMEM;
	}
	if (b->err) {
		/* Leave only whole frames in the buffer: a caller may still send what precedes. */
		if (b->len > b->frame_start)
			b->len = b->frame_start;
		return b->err;
	}
	pub_proto_put_hdr(b->buf + b->frame_start, PUB_FRAME_TABLE, (uint32_t)body);
	put_u32(b->buf + b->nrows_at, b->nrows);
	return 0;
}

/* ---- table reader ---- */

static int cell_skip(struct cur *c, uint8_t type, struct pub_table_cell *cell)
{
	switch (type) {
	case PUB_COL_U64:
	case PUB_COL_I64:
		cell->u = rd_u64(c);
		break;
	case PUB_COL_STR:
		rd_text16(c, &cell->s);
		break;
	default:
		return -PUB_ERR_PROTO;
	}
	cell->type = type;
	return c->bad ? -PUB_ERR_PROTO : 0;
}

int pub_proto_dec_table(const uint8_t *body, size_t len, struct pub_table_reader *r)
{
	struct cur c = cur_init(body, len);
	uint64_t ncells, i;

	memset(r, 0, sizeof(*r));
	r->req_id = rd_u32(&c);
	rd_name8(&c, &r->name);
	r->ncols = rd_u16(&c);
	r->cols = c.p;
	for (unsigned k = 0; k < r->ncols && !c.bad; k++) {
		uint8_t type = rd_u8(&c);
		struct pub_str name;

		rd_name8(&c, &name);
		if (type < PUB_COL_U64 || type > PUB_COL_STR)
			return -PUB_ERR_PROTO;
	}
	r->nrows = rd_u32(&c);
	if (c.bad)
		return -PUB_ERR_PROTO;
	r->cells = c.p;
	r->end = c.end;
	/* Every cell takes at least 2 bytes: refuse a row count the body cannot
	 * hold before looping over it (nrows is up to 2^32, ncols up to 2^16). */
	ncells = (uint64_t)r->nrows * r->ncols;
	if (ncells > (uint64_t)(c.end - c.p) / 2)
		return -PUB_ERR_PROTO;
	r->pos = r->cells;
	r->col_pos = r->cols;
	for (i = 0; i < ncells; i++) {
		struct pub_table_cell cell;

		if (pub_table_next(r, &cell) != 1)
			return -PUB_ERR_PROTO;
	}
	if (r->pos != r->end)
		return -PUB_ERR_PROTO;
	/* Rewind for the caller's walk. */
	r->pos = r->cells;
	r->col = 0;
	r->col_pos = r->cols;
	return 0;
}

int pub_table_col(const struct pub_table_reader *r, unsigned i, uint8_t *type, struct pub_str *name)
{
	const uint8_t *p = r->cols;

	if (!p || i >= r->ncols)
		return -EINVAL;
	for (unsigned k = 0; k < i; k++)
		p += 2 + p[1];
	if (type)
		*type = p[0];
	if (name) {
		name->len = p[1];
		name->ptr = (const char *)p + 2;
	}
	return 0;
}

int pub_table_next(struct pub_table_reader *r, struct pub_table_cell *cell)
{
	struct cur c;
	uint8_t type;

	if (!r->pos || r->ncols == 0 || r->pos >= r->end)
		return 0;
	c = cur_init(r->pos, (size_t)(r->end - r->pos));
	type = r->col_pos[0];
	memset(cell, 0, sizeof(*cell));
	if (cell_skip(&c, type, cell) < 0) {
		r->pos = r->end; /* stop: only reached on an unvalidated reader */
		return 0;
	}
	r->pos = c.p;
	if (++r->col == r->ncols) {
		r->col = 0;
		r->col_pos = r->cols;
	} else {
		r->col_pos += 2 + r->col_pos[1];
	}
	return 1;
}

int pub_table_grow_realloc(struct pub_table_builder *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 4096;
	uint8_t *p;

	while (cap < need)
		cap *= 2;
	p = realloc(b->buf, cap);
	if (!p)
		return -ENOMEM;
	b->buf = p;
	b->cap = cap;
	return 0;
}
