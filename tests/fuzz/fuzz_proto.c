// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the local protocol codec: arbitrary bytes as a stream
 * of frames (frame peek with a small limit), each body through every body
 * decoder and the table reader, whatever its type says. Decoders must never
 * read outside the body, and what they return must lie inside it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define MAX_BODY 65536

static void check_str(struct pub_str s, const uint8_t *body, size_t len)
{
	if (s.len && (s.ptr < (const char *)body || s.ptr + s.len > (const char *)body + len))
		abort();
}

static void check_payload(const uint8_t *p, size_t n, const uint8_t *body, size_t len)
{
	if (n && (p < body || p + n > body + len))
		abort();
}

static void all_decoders(const uint8_t *body, size_t len)
{
	struct pub_msg_hello h;
	struct pub_msg_welcome w;
	struct pub_msg_group_req g;
	struct pub_msg_publish p;
	struct pub_msg_deliver d;
	struct pub_msg_ok o;
	struct pub_msg_error e;
	struct pub_msg_query q;
	struct pub_msg_shm shm;
	struct pub_table_reader r;
	struct pub_table_cell c;
	uint8_t type;
	struct pub_str name;
	uint64_t cells = 0;

	if (pub_proto_dec_hello(body, len, &h) == 0)
		check_str(h.client_name, body, len);
	if (pub_proto_dec_welcome(body, len, &w) == 0) {
		check_str(w.daemon_version, body, len);
		check_str(w.fabric, body, len);
	}
	if (pub_proto_dec_group_req(body, len, &g) == 0)
		check_str(g.group, body, len);
	if (pub_proto_dec_publish(body, len, &p) == 0) {
		check_str(p.group, body, len);
		check_payload(p.payload, p.payload_len, body, len);
	}
	if (pub_proto_dec_deliver(body, len, &d) == 0) {
		check_str(d.group, body, len);
		check_payload(d.payload, d.payload_len, body, len);
	}
	(void)pub_proto_dec_ok(body, len, &o);
	if (pub_proto_dec_error(body, len, &e) == 0)
		check_str(e.text, body, len);
	if (pub_proto_dec_query(body, len, &q) == 0)
		check_str(q.arg, body, len);
	/* A group log's SHM frame and the direct path's name their group (never
	 * empty); the others none. */
	if (pub_proto_dec_shm(body, len, &shm) == 0) {
		check_str(shm.group, body, len);
		if ((shm.kind == PUB_SHM_GROUP_LOG || shm.kind >= PUB_SHM_DIRECT_LOG) != (shm.group.len != 0))
			abort();
	}
	if (pub_proto_dec_table(body, len, &r) == 0) {
		check_str(r.name, body, len);
		for (unsigned i = 0; i < r.ncols; i++) {
			if (pub_table_col(&r, i, &type, &name) != 0 || type < PUB_COL_U64 || type > PUB_COL_STR)
				abort();
			check_str(name, body, len);
		}
		while (pub_table_next(&r, &c) == 1) {
			if (c.type == PUB_COL_STR)
				check_str(c.s, body, len);
			cells++;
		}
		/* A validated table has exactly the cells its header promises. */
		if (cells != (uint64_t)r.nrows * r.ncols)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so ASan catches a read one past the end. */
	uint8_t *buf = malloc(size ? size : 1);
	size_t off = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);

	/* The whole input as one body, for every decoder. */
	all_decoders(buf, size);

	/* The input as a stream of frames, like a receive buffer. */
	for (;;) {
		uint8_t type = 0;
		uint32_t body_len = 0;
		const uint8_t *body = NULL;
		size_t need = 0;
		int ret = pub_proto_frame_peek(buf + off, size - off, MAX_BODY, &type, &body_len, &body, &need);

		if (ret <= 0) {
			if (ret == 0 && need <= size - off)
				abort(); /* asked for bytes it already had */
			break;
		}
		if (body_len > MAX_BODY || body != buf + off + PUB_PROTO_HDR_LEN ||
		    need != PUB_PROTO_HDR_LEN + body_len)
			abort();
		all_decoders(body, body_len);
		off += PUB_PROTO_HDR_LEN + body_len;
	}
	free(buf);
	return 0;
}
