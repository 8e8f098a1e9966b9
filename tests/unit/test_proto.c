// SPDX-License-Identifier: MIT
/* Unit tests for the local protocol codec (common/proto.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define BIG (1u << 20)

static uint8_t buf[4096];

static int streq(struct pub_str s, const char *want)
{
	return s.len == strlen(want) && (s.len == 0 || memcmp(s.ptr, want, s.len) == 0);
}

/* Peek a whole frame out of buf and check its type; returns the body length. */
static size_t peek_whole(const uint8_t *p, size_t n, uint8_t want_type, const uint8_t **body)
{
	uint8_t type = 0;
	uint32_t len = 0;
	size_t need = 0;

	assert_int_equal(pub_proto_frame_peek(p, n, BIG, &type, &len, body, &need), 1);
	assert_int_equal(type, want_type);
	assert_int_equal(need, n);
	assert_int_equal(PUB_PROTO_HDR_LEN + len, n);
	return len;
}

/* ---- frame header ---- */

static void peek_needs_header_first(void **state)
{
	uint8_t type;
	uint32_t len;
	const uint8_t *body;
	size_t need = 0;

	pub_proto_put_hdr(buf, PUB_FRAME_OK, 4);
	for (size_t n = 0; n < PUB_PROTO_HDR_LEN; n++) {
		assert_int_equal(pub_proto_frame_peek(buf, n, BIG, &type, &len, &body, &need), 0);
		assert_int_equal(need, PUB_PROTO_HDR_LEN);
	}
	for (size_t n = PUB_PROTO_HDR_LEN; n < PUB_PROTO_HDR_LEN + 4; n++) {
		type = 0;
		len = 0;
		assert_int_equal(pub_proto_frame_peek(buf, n, BIG, &type, &len, &body, &need), 0);
		assert_int_equal(need, PUB_PROTO_HDR_LEN + 4);
		/* The header is known before the body: a reader can plan for a large frame. */
		assert_int_equal(type, PUB_FRAME_OK);
		assert_int_equal(len, 4);
	}
	assert_int_equal(pub_proto_frame_peek(buf, 12, BIG, &type, &len, &body, NULL), 1);
	assert_int_equal(len, 4);
	assert_ptr_equal(body, buf + PUB_PROTO_HDR_LEN);
}

static void peek_rejects_length_above_max_before_waiting(void **state)
{
	uint8_t type;
	uint32_t len;
	const uint8_t *body;
	size_t need = 0;

	/* Only the header is there: the limit is checked without waiting for the body. */
	pub_proto_put_hdr(buf, PUB_FRAME_DELIVER, 1001);
	assert_int_equal(pub_proto_frame_peek(buf, PUB_PROTO_HDR_LEN, 1000, &type, &len, &body, &need), -PUB_ERR_PROTO);
	assert_int_equal(pub_proto_frame_peek(buf, PUB_PROTO_HDR_LEN, 1001, &type, &len, &body, &need), 0);
	assert_int_equal(need, PUB_PROTO_HDR_LEN + 1001);
	/* Even an unknown type is reported as too long first: the length is the first check. */
	pub_proto_put_hdr(buf, 0xee, UINT32_MAX);
	assert_int_equal(pub_proto_frame_peek(buf, PUB_PROTO_HDR_LEN, SIZE_MAX, &type, &len, &body, &need),
			 -PUB_ERR_PROTO);
}

static void peek_rejects_bad_type_and_reserved_bits(void **state)
{
	uint8_t type;
	uint32_t len;
	const uint8_t *body;

	pub_proto_put_hdr(buf, 0, 0);
	assert_int_equal(pub_proto_frame_peek(buf, 8, BIG, &type, &len, &body, NULL), -PUB_ERR_PROTO);
	pub_proto_put_hdr(buf, PUB_FRAME__MAX, 0);
	assert_int_equal(pub_proto_frame_peek(buf, 8, BIG, &type, &len, &body, NULL), -PUB_ERR_PROTO);
	pub_proto_put_hdr(buf, PUB_FRAME_OK, 0);
	buf[5] = 1; /* flags */
	assert_int_equal(pub_proto_frame_peek(buf, 8, BIG, &type, &len, &body, NULL), -PUB_ERR_PROTO);
	buf[5] = 0;
	buf[7] = 0x80; /* reserved */
	assert_int_equal(pub_proto_frame_peek(buf, 8, BIG, &type, &len, &body, NULL), -PUB_ERR_PROTO);
	buf[7] = 0;
	assert_int_equal(pub_proto_frame_peek(buf, 8, BIG, &type, &len, &body, NULL), 1);
}

static void header_is_little_endian(void **state)
{
	pub_proto_put_hdr(buf, PUB_FRAME_TABLE, 0x01020304);
	const uint8_t want[8] = {4, 3, 2, 1, PUB_FRAME_TABLE, 0, 0, 0};
	assert_memory_equal(buf, want, 8);
}

/* ---- round trips ---- */

static void hello_round_trip(void **state)
{
	struct pub_msg_hello m;
	const uint8_t *body;
	long n = pub_proto_enc_hello(buf, sizeof(buf), 0xa5a5, "app-1", 5);
	size_t len;

	assert_true(n > 0);
	len = peek_whole(buf, (size_t)n, PUB_FRAME_HELLO, &body);
	assert_int_equal(pub_proto_dec_hello(body, len, &m), 0);
	assert_int_equal(m.version, PUB_PROTO_VERSION);
	assert_int_equal(m.flags, 0xa5a5);
	assert_true(streq(m.client_name, "app-1"));
}

static void hello_of_another_version_still_names_it(void **state)
{
	struct pub_msg_hello m;
	const uint8_t body[] = {7, 0, 0, 0, 0, 0, 0, 0, 0, 99, 99}; /* trailing junk */

	assert_int_equal(pub_proto_dec_hello(body, sizeof(body), &m), -PUB_ERR_PROTO);
	assert_int_equal(m.version, 7);
}

static void welcome_round_trip(void **state)
{
	struct pub_msg_welcome in = {
		.version = PUB_PROTO_VERSION,
		.max_message = 4 << 20,
		.mtu = 4096,
		.client_id = 17,
		.source_id = 0x1122334455667788ull,
		.daemon_version = {"0.1.0", 5},
		.fabric = {"udp", 3},
	};
	struct pub_msg_welcome m;
	const uint8_t *body;
	long n = pub_proto_enc_welcome(buf, sizeof(buf), &in);
	size_t len;

	assert_true(n > 0);
	len = peek_whole(buf, (size_t)n, PUB_FRAME_WELCOME, &body);
	assert_int_equal(pub_proto_dec_welcome(body, len, &m), 0);
	assert_int_equal(m.version, in.version);
	assert_int_equal(m.max_message, in.max_message);
	assert_int_equal(m.mtu, in.mtu);
	assert_int_equal(m.client_id, in.client_id);
	assert_true(m.source_id == in.source_id);
	assert_true(streq(m.daemon_version, "0.1.0"));
	assert_true(streq(m.fabric, "udp"));
}

static void group_req_round_trip(void **state)
{
	struct pub_msg_group_req m;
	const uint8_t *body;
	long n;
	size_t len;

	n = pub_proto_enc_group_req(buf, sizeof(buf), PUB_FRAME_SUBSCRIBE, 42, "prices", 6);
	len = peek_whole(buf, (size_t)n, PUB_FRAME_SUBSCRIBE, &body);
	assert_int_equal(pub_proto_dec_group_req(body, len, &m), 0);
	assert_int_equal(m.req_id, 42);
	assert_true(streq(m.group, "prices"));

	n = pub_proto_enc_group_req(buf, sizeof(buf), PUB_FRAME_UNSUBSCRIBE, 43, "", 0);
	len = peek_whole(buf, (size_t)n, PUB_FRAME_UNSUBSCRIBE, &body);
	assert_int_equal(pub_proto_dec_group_req(body, len, &m), 0);
	assert_int_equal(m.req_id, 43);
	assert_int_equal(m.group.len, 0);

	/* Only SUBSCRIBE and UNSUBSCRIBE are group requests. */
	assert_int_equal(pub_proto_enc_group_req(buf, sizeof(buf), PUB_FRAME_OK, 1, "g", 1), -PUB_ERR_PROTO);
}

/* The head is sent, then the payload from where it lies: the frame is the concatenation. */
static void publish_round_trip_head_then_payload(void **state)
{
	const char payload[] = "hello, world";
	struct pub_msg_publish m;
	const uint8_t *body;
	long n = pub_proto_enc_publish_head(buf, sizeof(buf), 0, "g1", 2, sizeof(payload));
	size_t len;

	assert_true(n > 0);
	assert_true(n <= PUB_PROTO_MAX_HEAD);
	memcpy(buf + n, payload, sizeof(payload));
	len = peek_whole(buf, (size_t)n + sizeof(payload), PUB_FRAME_PUBLISH, &body);
	assert_int_equal(pub_proto_dec_publish(body, len, &m), 0);
	assert_int_equal(m.req_id, 0);
	assert_true(streq(m.group, "g1"));
	assert_int_equal(m.payload_len, sizeof(payload));
	assert_memory_equal(m.payload, payload, sizeof(payload));
}

/* A big PUBLISH is judged on its head while the body is still coming: the
 * head decoder waits for the head, then names the group and the whole
 * payload's length from a part of the body. */
static void publish_head_from_a_partial_body(void **state)
{
	struct pub_msg_publish m;
	const uint8_t *body;
	long n = pub_proto_enc_publish_head(buf, sizeof(buf), 77, "big-group", 9, 100000);
	size_t hl = (size_t)n - PUB_PROTO_HDR_LEN, k;

	assert_true(n > 0);
	body = buf + PUB_PROTO_HDR_LEN;
	memcpy(buf + n, "abc", 3);
	for (k = 0; k < hl; k++)
		assert_int_equal(pub_proto_dec_publish_head(body, k, hl + 100000, &m), 0);
	assert_int_equal(pub_proto_dec_publish_head(body, hl + 3, hl + 100000, &m), 1);
	assert_int_equal(m.req_id, 77);
	assert_true(streq(m.group, "big-group"));
	assert_int_equal(m.payload_len, 100000);
	assert_memory_equal(m.payload, "abc", 3);
	/* A body shorter than the head it announces is malformed, known as
	 * soon as the name's length is in. */
	assert_int_equal(pub_proto_dec_publish_head(body, 5, 5 + 8, &m), -PUB_ERR_PROTO);
	assert_int_equal(pub_proto_dec_publish_head(body, 3, 4, &m), -PUB_ERR_PROTO);
	(void)state;
}

static void publish_empty_payload(void **state)
{
	struct pub_msg_publish m;
	const uint8_t *body;
	long n = pub_proto_enc_publish_head(buf, sizeof(buf), 9, "g", 1, 0);
	size_t len = peek_whole(buf, (size_t)n, PUB_FRAME_PUBLISH, &body);

	assert_int_equal(pub_proto_dec_publish(body, len, &m), 0);
	assert_int_equal(m.req_id, 9);
	assert_int_equal(m.payload_len, 0);
}

static void deliver_round_trip(void **state)
{
	const uint8_t payload[3] = {0, 0xff, 7};
	struct pub_msg_deliver m;
	const uint8_t *body;
	long n = pub_proto_enc_deliver_head(buf, sizeof(buf), 0xdeadbeefcafef00dull, 1ull << 40, "grp", 3,
					    sizeof(payload));
	size_t len;

	assert_true(n > 0);
	memcpy(buf + n, payload, sizeof(payload));
	len = peek_whole(buf, (size_t)n + sizeof(payload), PUB_FRAME_DELIVER, &body);
	assert_int_equal(pub_proto_dec_deliver(body, len, &m), 0);
	assert_true(m.source == 0xdeadbeefcafef00dull);
	assert_true(m.seq == 1ull << 40);
	assert_true(streq(m.group, "grp"));
	assert_int_equal(m.payload_len, 3);
	assert_memory_equal(m.payload, payload, 3);
}

static void ok_error_query_round_trip(void **state)
{
	struct pub_msg_ok ok;
	struct pub_msg_error err;
	struct pub_msg_query q;
	const uint8_t *body;
	size_t len;
	long n;

	n = pub_proto_enc_ok(buf, sizeof(buf), 0xffffffff);
	len = peek_whole(buf, (size_t)n, PUB_FRAME_OK, &body);
	assert_int_equal(pub_proto_dec_ok(body, len, &ok), 0);
	assert_int_equal(ok.req_id, 0xffffffff);

	n = pub_proto_enc_error(buf, sizeof(buf), 5, PUB_ERR_ACL, "no", 2);
	len = peek_whole(buf, (size_t)n, PUB_FRAME_ERROR, &body);
	assert_int_equal(pub_proto_dec_error(body, len, &err), 0);
	assert_int_equal(err.req_id, 5);
	assert_int_equal(err.code, PUB_ERR_ACL);
	assert_true(streq(err.text, "no"));

	n = pub_proto_enc_query(buf, sizeof(buf), 6, PUB_QUERY_GROUP, "g", 1);
	len = peek_whole(buf, (size_t)n, PUB_FRAME_QUERY, &body);
	assert_int_equal(pub_proto_dec_query(body, len, &q), 0);
	assert_int_equal(q.req_id, 6);
	assert_int_equal(q.kind, PUB_QUERY_GROUP);
	assert_true(streq(q.arg, "g"));
}

static void error_text_is_cut_to_text_max(void **state)
{
	size_t cap = PUB_PROTO_TEXT_MAX + 100;
	uint8_t *out = malloc(cap);
	char *text = malloc(PUB_PROTO_TEXT_MAX + 10);
	struct pub_msg_error err;
	const uint8_t *body;
	size_t len;
	long n;

	assert_non_null(out);
	assert_non_null(text);
	memset(text, 'x', PUB_PROTO_TEXT_MAX + 10);
	n = pub_proto_enc_error(out, cap, 0, PUB_ERR_CONFIG, text, PUB_PROTO_TEXT_MAX + 10);
	assert_true(n > 0);
	len = peek_whole(out, (size_t)n, PUB_FRAME_ERROR, &body);
	assert_int_equal(pub_proto_dec_error(body, len, &err), 0);
	assert_int_equal(err.text.len, PUB_PROTO_TEXT_MAX);
	free(text);
	free(out);
}

/* ---- encoder limits ---- */

static void encoders_reject_long_names_and_small_buffers(void **state)
{
	char name[PUB_PROTO_NAME_MAX + 1];
	struct pub_msg_welcome w = {.fabric = {name, sizeof(name)}};

	memset(name, 'n', sizeof(name));
	assert_int_equal(pub_proto_enc_hello(buf, sizeof(buf), 0, name, sizeof(name)), -PUB_ERR_PROTO);
	assert_int_equal(pub_proto_enc_welcome(buf, sizeof(buf), &w), -PUB_ERR_PROTO);
	assert_int_equal(pub_proto_enc_group_req(buf, sizeof(buf), PUB_FRAME_SUBSCRIBE, 1, name, sizeof(name)),
			 -PUB_ERR_PROTO);
	assert_int_equal(pub_proto_enc_publish_head(buf, sizeof(buf), 1, name, sizeof(name), 0), -PUB_ERR_PROTO);
	assert_int_equal(pub_proto_enc_deliver_head(buf, sizeof(buf), 1, 1, name, sizeof(name), 0), -PUB_ERR_PROTO);
	assert_int_equal(pub_proto_enc_query(buf, sizeof(buf), 1, 1, name, sizeof(name)), -PUB_ERR_PROTO);

	/* The longest name fits PUB_PROTO_MAX_HEAD exactly for DELIVER, and not one byte less. */
	assert_int_equal(pub_proto_enc_deliver_head(buf, PUB_PROTO_MAX_HEAD, 1, 1, name, PUB_PROTO_NAME_MAX, 10),
			 PUB_PROTO_MAX_HEAD);
	assert_int_equal(pub_proto_enc_deliver_head(buf, PUB_PROTO_MAX_HEAD - 1, 1, 1, name, PUB_PROTO_NAME_MAX, 10),
			 0);
	/* Every cap below the frame length gives 0 and writes nothing out of bounds. */
	for (size_t cap = 0; cap < 12; cap++)
		assert_int_equal(pub_proto_enc_ok(buf, cap, 1), 0);
	assert_int_equal(pub_proto_enc_ok(buf, 12, 1), 12);
	assert_int_equal(pub_proto_enc_hello(buf, 8, 0, "x", 1), 0);
	assert_int_equal(pub_proto_enc_error(buf, 10, 0, 1, "x", 1), 0);
}

static void publish_head_rejects_payload_beyond_u32(void **state)
{
	assert_int_equal(pub_proto_enc_publish_head(buf, sizeof(buf), 0, "g", 1, (size_t)UINT32_MAX), -PUB_ERR_PROTO);
	assert_true(pub_proto_enc_publish_head(buf, sizeof(buf), 0, "g", 1, (size_t)UINT32_MAX - 6) > 0);
}

/* ---- malformed bodies ---- */

typedef int (*dec_fn)(const uint8_t *, size_t, void *);

/* Wrappers with one signature: calling a decoder through a cast pointer is undefined. */
#define DEC_WRAP(name, type)                                        \
	static int wrap_##name(const uint8_t *b, size_t n, void *m) \
	{                                                           \
		return pub_proto_dec_##name(b, n, (type *)m);       \
	}
DEC_WRAP(hello, struct pub_msg_hello)
DEC_WRAP(welcome, struct pub_msg_welcome)
DEC_WRAP(group_req, struct pub_msg_group_req)
DEC_WRAP(ok, struct pub_msg_ok)
DEC_WRAP(error, struct pub_msg_error)
DEC_WRAP(query, struct pub_msg_query)
DEC_WRAP(publish, struct pub_msg_publish)
DEC_WRAP(deliver, struct pub_msg_deliver)

/* Every strict prefix of a valid body is short; one extra byte is long. */
static void check_prefixes_and_extension(dec_fn dec, const uint8_t *body, size_t len, int payload_tail)
{
	uint8_t scratch[512];
	union {
		struct pub_msg_hello h;
		struct pub_msg_welcome w;
		struct pub_msg_group_req g;
		struct pub_msg_error e;
		struct pub_msg_query q;
		struct pub_msg_ok o;
		struct pub_msg_publish p;
		struct pub_msg_deliver d;
	} m;

	assert_true(len < sizeof(scratch));
	assert_int_equal(dec(body, len, &m), 0);
	for (size_t n = 0; n < len; n++) {
		memcpy(scratch, body, n);
		/* A payload-carrying frame may be cut only inside its payload, and it has none here. */
		assert_int_equal(dec(scratch, n, &m), -PUB_ERR_PROTO);
	}
	memcpy(scratch, body, len);
	scratch[len] = 0;
	assert_int_equal(dec(scratch, len + 1, &m), payload_tail ? 0 : -PUB_ERR_PROTO);
}

static void decoders_reject_short_and_long_bodies(void **state)
{
	struct pub_msg_welcome w = {.version = 1, .daemon_version = {"v", 1}, .fabric = {"verbs", 5}};
	long n;

	n = pub_proto_enc_hello(buf, sizeof(buf), 0, "abc", 3);
	check_prefixes_and_extension(wrap_hello, buf + 8, (size_t)n - 8, 0);
	n = pub_proto_enc_welcome(buf, sizeof(buf), &w);
	check_prefixes_and_extension(wrap_welcome, buf + 8, (size_t)n - 8, 0);
	n = pub_proto_enc_group_req(buf, sizeof(buf), PUB_FRAME_SUBSCRIBE, 1, "abc", 3);
	check_prefixes_and_extension(wrap_group_req, buf + 8, (size_t)n - 8, 0);
	n = pub_proto_enc_ok(buf, sizeof(buf), 1);
	check_prefixes_and_extension(wrap_ok, buf + 8, (size_t)n - 8, 0);
	n = pub_proto_enc_error(buf, sizeof(buf), 1, 2, "text", 4);
	check_prefixes_and_extension(wrap_error, buf + 8, (size_t)n - 8, 0);
	n = pub_proto_enc_query(buf, sizeof(buf), 1, 2, "arg", 3);
	check_prefixes_and_extension(wrap_query, buf + 8, (size_t)n - 8, 0);
	n = pub_proto_enc_publish_head(buf, sizeof(buf), 1, "abc", 3, 0);
	check_prefixes_and_extension(wrap_publish, buf + 8, (size_t)n - 8, 1);
	n = pub_proto_enc_deliver_head(buf, sizeof(buf), 1, 2, "abc", 3, 0);
	check_prefixes_and_extension(wrap_deliver, buf + 8, (size_t)n - 8, 1);
}

static void decoders_reject_lengths_past_the_end(void **state)
{
	struct pub_msg_group_req g;
	struct pub_msg_error e;
	struct pub_msg_deliver d;
	struct pub_msg_publish p;
	/* req_id, name8 length 200 with only 3 bytes after it */
	const uint8_t group[] = {1, 0, 0, 0, 200, 'a', 'b', 'c'};
	/* req_id, code, text16 length 0xffff with 1 byte */
	const uint8_t error[] = {1, 0, 0, 0, 3, 0, 0, 0, 0xff, 0xff, 'x'};
	uint8_t deliver[17] = {0};

	deliver[16] = 1; /* name8 of 1 byte, but the body ends */
	assert_int_equal(pub_proto_dec_group_req(group, sizeof(group), &g), -PUB_ERR_PROTO);
	assert_int_equal(pub_proto_dec_publish(group, sizeof(group), &p), -PUB_ERR_PROTO);
	assert_int_equal(pub_proto_dec_error(error, sizeof(error), &e), -PUB_ERR_PROTO);
	assert_int_equal(pub_proto_dec_deliver(deliver, sizeof(deliver), &d), -PUB_ERR_PROTO);
	/* NULL with a length is rejected rather than read. */
	assert_int_equal(pub_proto_dec_group_req(NULL, 5, &g), -PUB_ERR_PROTO);
}

static void reserved_fields_must_be_zero(void **state)
{
	struct pub_msg_hello h;
	struct pub_msg_welcome w;
	struct pub_msg_welcome in = {.version = 1};
	long n;

	n = pub_proto_enc_hello(buf, sizeof(buf), 0, "a", 1);
	buf[8 + 2] = 1;
	assert_int_equal(pub_proto_dec_hello(buf + 8, (size_t)n - 8, &h), -PUB_ERR_PROTO);
	n = pub_proto_enc_welcome(buf, sizeof(buf), &in);
	buf[8 + 3] = 1;
	assert_int_equal(pub_proto_dec_welcome(buf + 8, (size_t)n - 8, &w), -PUB_ERR_PROTO);
}

/* ---- tables ---- */

struct fixed {
	uint8_t *mem;
	size_t limit;
	unsigned grows;
};

/* Grows by small steps, so the builder is exercised across many reallocations. */
static int grow_realloc(struct pub_table_builder *b, size_t need)
{
	struct fixed *f = b->grow_ctx;
	size_t cap = b->cap + 7;
	uint8_t *p;

	if (cap < need)
		cap = need;
	if (f->limit && cap > f->limit)
		return -ENOMEM;
	p = realloc(b->buf, cap);
	if (!p)
		return -ENOMEM;
	b->buf = p;
	b->cap = cap;
	f->grows++;
	return 0;
}

static void builder_init(struct pub_table_builder *b, struct fixed *f)
{
	memset(b, 0, sizeof(*b));
	b->grow = grow_realloc;
	b->grow_ctx = f;
}

static const char *const mixed_cols[] = {"name:s", "count:u", "delta:i"};

static void table_mixed_types_round_trip(void **state)
{
	struct fixed f = {0};
	struct pub_table_builder b;
	struct pub_table_reader r;
	struct pub_table_cell c;
	struct pub_str name;
	uint8_t type;
	const uint8_t *body;
	size_t len;

	builder_init(&b, &f);
	pub_table_begin(&b, 77, "groups", mixed_cols, 3);
	pub_table_str(&b, "alpha");
	pub_table_u64(&b, UINT64_MAX);
	pub_table_i64(&b, -5);
	pub_table_str(&b, NULL);
	pub_table_u64(&b, 0);
	pub_table_i64(&b, INT64_MIN);
	pub_table_strn(&b, "betagamma", 4);
	pub_table_u64(&b, 3);
	pub_table_i64(&b, 3);
	assert_int_equal(pub_table_end(&b), 0);
	assert_true(f.grows > 5); /* builder growth is exercised */

	len = peek_whole(b.buf, b.len, PUB_FRAME_TABLE, &body);
	assert_int_equal(pub_proto_dec_table(body, len, &r), 0);
	assert_int_equal(r.req_id, 77);
	assert_true(streq(r.name, "groups"));
	assert_int_equal(r.ncols, 3);
	assert_int_equal(r.nrows, 3);
	assert_int_equal(pub_table_col(&r, 0, &type, &name), 0);
	assert_int_equal(type, PUB_COL_STR);
	assert_true(streq(name, "name"));
	assert_int_equal(pub_table_col(&r, 2, &type, &name), 0);
	assert_int_equal(type, PUB_COL_I64);
	assert_true(streq(name, "delta"));
	assert_int_equal(pub_table_col(&r, 3, &type, &name), -EINVAL);

	assert_int_equal(pub_table_next(&r, &c), 1);
	assert_int_equal(c.type, PUB_COL_STR);
	assert_true(streq(c.s, "alpha"));
	assert_int_equal(pub_table_next(&r, &c), 1);
	assert_true(c.u == UINT64_MAX);
	assert_int_equal(pub_table_next(&r, &c), 1);
	assert_int_equal(c.type, PUB_COL_I64);
	assert_true((int64_t)c.u == -5);
	assert_int_equal(pub_table_next(&r, &c), 1);
	assert_true(streq(c.s, ""));
	assert_int_equal(pub_table_next(&r, &c), 1);
	assert_int_equal(pub_table_next(&r, &c), 1);
	assert_true((int64_t)c.u == INT64_MIN);
	assert_int_equal(pub_table_next(&r, &c), 1);
	assert_true(streq(c.s, "beta"));
	assert_int_equal(pub_table_next(&r, &c), 1);
	assert_int_equal(pub_table_next(&r, &c), 1);
	assert_int_equal(pub_table_next(&r, &c), 0);
	assert_int_equal(pub_table_next(&r, &c), 0);
	free(b.buf);
}

static void table_frames_follow_each_other_in_one_buffer(void **state)
{
	static const char *const one[] = {"v:u"};
	struct fixed f = {0};
	struct pub_table_builder b;
	struct pub_table_reader r;
	const uint8_t *body;
	uint8_t type;
	uint32_t len;
	size_t first, n;

	builder_init(&b, &f);
	pub_table_begin(&b, 1, "a", one, 1);
	pub_table_u64(&b, 1);
	assert_int_equal(pub_table_end(&b), 0);
	first = b.len;
	pub_table_begin(&b, 1, "b", NULL, 0); /* a table without columns is valid and empty */
	assert_int_equal(pub_table_end(&b), 0);
	n = b.len;

	assert_int_equal(pub_proto_frame_peek(b.buf, n, BIG, &type, &len, &body, NULL), 1);
	assert_int_equal(PUB_PROTO_HDR_LEN + len, first);
	assert_int_equal(pub_proto_frame_peek(b.buf + first, n - first, BIG, &type, &len, &body, NULL), 1);
	assert_int_equal(pub_proto_dec_table(body, len, &r), 0);
	assert_true(streq(r.name, "b"));
	assert_int_equal(r.ncols, 0);
	assert_int_equal(r.nrows, 0);
	free(b.buf);
}

static void table_builder_reports_wrong_width_and_type(void **state)
{
	struct fixed f = {0};
	struct pub_table_builder b;
	static const char *const bad_spec[] = {"x:q"};
	static const char *const no_type[] = {"x"};
	size_t before;

	builder_init(&b, &f);
	/* A short last row. */
	pub_table_begin(&b, 1, "t", mixed_cols, 3);
	pub_table_str(&b, "a");
	assert_int_equal(pub_table_end(&b), -EINVAL);
	assert_int_equal(b.len, 0); /* the failed frame was cut off */

	/* A cell of the wrong type; later calls are no-ops and the first error stays. */
	pub_table_begin(&b, 1, "t", mixed_cols, 3);
	pub_table_u64(&b, 1);
	pub_table_str(&b, "x");
	assert_int_equal(pub_table_end(&b), -EINVAL);

	/* A cell beyond zero columns. */
	pub_table_begin(&b, 1, "t", NULL, 0);
	pub_table_u64(&b, 1);
	assert_int_equal(pub_table_end(&b), -EINVAL);

	pub_table_begin(&b, 1, "t", bad_spec, 1);
	assert_int_equal(pub_table_end(&b), -EINVAL);
	pub_table_begin(&b, 1, "t", no_type, 1);
	assert_int_equal(pub_table_end(&b), -EINVAL);

	/* A good frame, then a failed one: the good one stays whole. */
	pub_table_begin(&b, 1, "t", NULL, 0);
	assert_int_equal(pub_table_end(&b), 0);
	before = b.len;
	pub_table_begin(&b, 1, "t", mixed_cols, 3);
	pub_table_i64(&b, 1);
	assert_int_equal(pub_table_end(&b), -EINVAL);
	assert_int_equal(b.len, before);
	free(b.buf);
}

static void table_builder_reports_enomem(void **state)
{
	struct fixed f = {.limit = 40};
	struct pub_table_builder b;
	struct pub_table_builder none = {0};

	builder_init(&b, &f);
	pub_table_begin(&b, 1, "t", mixed_cols, 3);
	for (int i = 0; i < 10; i++) {
		pub_table_str(&b, "some longer string value");
		pub_table_u64(&b, 1);
		pub_table_i64(&b, 1);
	}
	assert_int_equal(pub_table_end(&b), -ENOMEM);
	free(b.buf);

	/* No grow callback: a builder over nothing fails cleanly. */
	pub_table_begin(&none, 1, "t", mixed_cols, 3);
	assert_int_equal(pub_table_end(&none), -ENOMEM);
}

/* Build one valid table to corrupt. */
static size_t sample_table(struct pub_table_builder *b, struct fixed *f)
{
	builder_init(b, f);
	pub_table_begin(b, 3, "t", mixed_cols, 3);
	pub_table_str(b, "ab");
	pub_table_u64(b, 1);
	pub_table_i64(b, 2);
	assert_int_equal(pub_table_end(b), 0);
	return b->len;
}

static void table_reader_rejects_malformed(void **state)
{
	struct fixed f = {0};
	struct pub_table_builder b;
	struct pub_table_reader r;
	uint8_t *body;
	size_t len = sample_table(&b, &f) - PUB_PROTO_HDR_LEN;
	uint8_t copy[256];
	/* layout: req 4 | name8 "t" 2 | ncols 2 | cols (1+1+4)(1+1+5)(1+1+5) | nrows 4 | cells */
	size_t cols_at = 4 + 2 + 2, nrows_at = cols_at + 6 + 7 + 7;

	body = b.buf + PUB_PROTO_HDR_LEN;
	assert_true(len < sizeof(copy));
	assert_int_equal(pub_proto_dec_table(body, len, &r), 0);
	for (size_t n = 0; n < len; n++)
		assert_int_equal(pub_proto_dec_table(body, n, &r), -PUB_ERR_PROTO);
	memcpy(copy, body, len);
	copy[len] = 0;
	assert_int_equal(pub_proto_dec_table(copy, len + 1, &r), -PUB_ERR_PROTO);

	/* Unknown column type. */
	memcpy(copy, body, len);
	copy[cols_at] = 9;
	assert_int_equal(pub_proto_dec_table(copy, len, &r), -PUB_ERR_PROTO);
	/* A row count the body cannot hold (checked before looping over it). */
	memcpy(copy, body, len);
	copy[nrows_at] = 0xff;
	copy[nrows_at + 1] = 0xff;
	copy[nrows_at + 2] = 0xff;
	copy[nrows_at + 3] = 0xff;
	assert_int_equal(pub_proto_dec_table(copy, len, &r), -PUB_ERR_PROTO);
	/* A string cell whose length points past the end. */
	memcpy(copy, body, len);
	copy[nrows_at + 4] = 0xf0;
	assert_int_equal(pub_proto_dec_table(copy, len, &r), -PUB_ERR_PROTO);
	/* A column name past the end. */
	memcpy(copy, body, len);
	copy[cols_at + 1] = 0xff;
	assert_int_equal(pub_proto_dec_table(copy, len, &r), -PUB_ERR_PROTO);
	free(b.buf);
}

static void table_zero_columns_many_rows_is_empty(void **state)
{
	/* req 1, name "", ncols 0, nrows 2^32-1: valid, nothing to walk, and no long loop. */
	const uint8_t body[] = {1, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
	struct pub_table_reader r;
	struct pub_table_cell c;

	assert_int_equal(pub_proto_dec_table(body, sizeof(body), &r), 0);
	assert_int_equal(pub_table_next(&r, &c), 0);
}

static void err_names_are_stable(void **state)
{
	assert_string_equal(pub_proto_err_name(PUB_ERR_PROTO), "proto");
	assert_string_equal(pub_proto_err_name(PUB_ERR_ACL), "acl");
	assert_string_equal(pub_proto_err_name(PUB_ERR_NO_GROUP), "no_group");
	assert_string_equal(pub_proto_err_name(PUB_ERR_SHUTDOWN), "shutdown");
	assert_string_equal(pub_proto_err_name(PUB_ERR_REMADE), "remade");
	assert_string_equal(pub_proto_err_name(PUB_ERR_PARTIAL), "partial");
	assert_string_equal(pub_proto_err_name(PUB_ERR_BUSY), "busy");
	assert_string_equal(pub_proto_err_name(PUB_ERR_HELLO_LATE), "hello_late");
	assert_string_equal(pub_proto_err_name(0), "unknown");
	assert_string_equal(pub_proto_err_name(PUB_ERR__MAX), "unknown");
	assert_string_equal(pub_proto_err_name(UINT32_MAX), "unknown");
	for (uint32_t i = 1; i < PUB_ERR__MAX; i++)
		assert_string_not_equal(pub_proto_err_name(i), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(peek_needs_header_first),
		cmocka_unit_test(peek_rejects_length_above_max_before_waiting),
		cmocka_unit_test(peek_rejects_bad_type_and_reserved_bits),
		cmocka_unit_test(header_is_little_endian),
		cmocka_unit_test(hello_round_trip),
		cmocka_unit_test(hello_of_another_version_still_names_it),
		cmocka_unit_test(welcome_round_trip),
		cmocka_unit_test(group_req_round_trip),
		cmocka_unit_test(publish_round_trip_head_then_payload),
		cmocka_unit_test(publish_head_from_a_partial_body),
		cmocka_unit_test(publish_empty_payload),
		cmocka_unit_test(deliver_round_trip),
		cmocka_unit_test(ok_error_query_round_trip),
		cmocka_unit_test(error_text_is_cut_to_text_max),
		cmocka_unit_test(encoders_reject_long_names_and_small_buffers),
		cmocka_unit_test(publish_head_rejects_payload_beyond_u32),
		cmocka_unit_test(decoders_reject_short_and_long_bodies),
		cmocka_unit_test(decoders_reject_lengths_past_the_end),
		cmocka_unit_test(reserved_fields_must_be_zero),
		cmocka_unit_test(table_mixed_types_round_trip),
		cmocka_unit_test(table_frames_follow_each_other_in_one_buffer),
		cmocka_unit_test(table_builder_reports_wrong_width_and_type),
		cmocka_unit_test(table_builder_reports_enomem),
		cmocka_unit_test(table_reader_rejects_malformed),
		cmocka_unit_test(table_zero_columns_many_rows_is_empty),
		cmocka_unit_test(err_names_are_stable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
