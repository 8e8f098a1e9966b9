/* SPDX-License-Identifier: MIT */
/*
 * The local protocol between pubd and its clients (libpub, pubctl).
 *
 * One implementation, compiled into pubd, libpub and pubctl. Pure: bytes in,
 * results out; no fd, no allocation.
 *
 * Transport: a SOCK_STREAM Unix socket. Every frame is an 8-byte header
 *   u32 body_len (little-endian), u8 type, u8 flags, u16 reserved (0)
 * followed by body_len bytes. All integers are little-endian. Strings are a
 * length prefix (u8 for names, u16 for text) then bytes, no NUL.
 *
 * A stream socket rather than SOCK_SEQPACKET: messages are up to
 * limits.max_message_size (megabytes), which a seqpacket socket cannot carry
 * in one record, and one read() picks up many small frames at once.
 *
 * Session: client sends HELLO first; daemon answers WELCOME (its limits) or
 * ERROR. Requests carry a req_id the reply echoes (OK / ERROR / TABLE...).
 * PUBLISH with req_id 0 asks for no reply on success (the fast path); an
 * error is still reported with req_id 0 and the group name in the text.
 */
#ifndef PUB_PROTO_H
#define PUB_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PUB_PROTO_VERSION  1
#define PUB_PROTO_HDR_LEN  8
#define PUB_PROTO_NAME_MAX 255 /* group names, client names */
#define PUB_PROTO_TEXT_MAX 65535

enum pub_frame_type {
	PUB_FRAME_HELLO = 1,	   /* c->d: u16 version, u16 0, u32 flags, name8 client_name */
	PUB_FRAME_WELCOME = 2,	   /* d->c: u16 version, u16 flags, u32 max_message, u32 mtu, u32 client_id,
				    *       u64 source_id, name8 daemon_version, name8 fabric */
	PUB_FRAME_SUBSCRIBE = 3,   /* c->d: u32 req_id, name8 group */
	PUB_FRAME_UNSUBSCRIBE = 4, /* c->d: u32 req_id, name8 group */
	PUB_FRAME_PUBLISH = 5,	   /* c->d: u32 req_id, name8 group, payload (rest of body) */
	PUB_FRAME_DELIVER = 6,	   /* d->c: u64 source, u64 seq, name8 group, payload (rest) */
	PUB_FRAME_OK = 7,	   /* d->c: u32 req_id */
	PUB_FRAME_ERROR = 8,	   /* d->c: u32 req_id, u32 code (enum pub_err), text16 message */
	PUB_FRAME_QUERY = 9,	   /* c->d: u32 req_id, u8 kind (enum pub_query), name8 arg */
	PUB_FRAME_TABLE = 10,	   /* d->c: u32 req_id, table (see below); a reply is TABLE* then OK */
	PUB_FRAME_SHM = 11,	   /* d->c: u32 kind, u32 capacity, u32 max_record, u32 flags (0); carries
				    *       fds (SCM_RIGHTS): the log's memfd, its doorbell eventfd (the
				    *       writer rings it for a sleeping reader) and its space eventfd
				    *       (the reader rings it for a writer waiting for room). Right
				    *       after WELCOME: the publish log's, then the deliver log's, in
				    *       one write, the fds of both in order. Kind GROUP_LOG adds
				    *       u32 slot, u64 start, name8 group and carries one fd (the
				    *       memfd, opened read-only); it comes before the OK of the
				    *       SUBSCRIBE it serves. The direct path's kinds (below) add
				    *       u32 log_id, u32 peer, u64 source, u64 seq after the group. */
	PUB_FRAME_DIRECT = 12,	   /* c->d: u32 req_id, name8 group: a direct log of the group to publish
				    *       into (an SHM frame of kind DIRECT_LOG, then OK; or ERROR) */
	PUB_FRAME__MAX
};

/* What pubctl asks for; the daemon answers with named tables. */
enum pub_query {
	PUB_QUERY_STATUS = 1,  /* tables: status, fabric, counters */
	PUB_QUERY_GROUPS = 2,  /* table: groups */
	PUB_QUERY_GROUP = 3,   /* arg: group name; tables: group, subscribers, publishers, sources */
	PUB_QUERY_CLIENTS = 4, /* table: clients */
	PUB_QUERY_DROPS = 5,   /* table: drops (scope, name, reason, count) */
	PUB_QUERY_SOURCES = 6, /* table: sources */
	PUB_QUERY_RELOAD = 7,  /* re-read the config; OK or ERROR with the config errors */
	PUB_QUERY_METRICS = 8, /* table: metrics (text:s), the Prometheus text of /metrics in pieces */
	PUB_QUERY__MAX
};

/* Error codes carried in ERROR frames; libpub returns them negated. */
enum pub_err {
	PUB_ERR_PROTO = 1,	 /* malformed frame: the daemon closes the connection after this */
	PUB_ERR_VERSION = 2,	 /* protocol version not supported */
	PUB_ERR_ACL = 3,	 /* not allowed to publish/subscribe to this group */
	PUB_ERR_NO_GROUP = 4,	 /* no such group in the daemon's config */
	PUB_ERR_TOO_LARGE = 5,	 /* message above max_message (or above MTU on a raw group) */
	PUB_ERR_STATE = 6,	 /* request not valid now (e.g. before HELLO, double subscribe) */
	PUB_ERR_INTERNAL = 7,	 /* the daemon failed (out of memory, fabric down) */
	PUB_ERR_BAD_QUERY = 8,	 /* unknown query kind */
	PUB_ERR_CONFIG = 9,	 /* reload rejected: the new config has errors (text lists them) */
	PUB_ERR_SLOW = 10,	 /* disconnected as a slow subscriber (slow_subscriber: disconnect) */
	PUB_ERR_SHUTDOWN = 11,	 /* the daemon is stopping */
	PUB_ERR_REMADE = 12,	 /* a subscribed group was made anew by a reload (address, scope or mode):
				  * subscribe again (libpub does it by itself) */
	PUB_ERR_PARTIAL = 13,	 /* reload applied, but not all of it (text says what was not) */
	PUB_ERR_BUSY = 14,	 /* connection refused for now: limits.max_clients reached (or
				  * limits.max_clients_per_uid for its uid), or out of fds */
	PUB_ERR_HELLO_LATE = 15, /* no HELLO within limits.hello_timeout_ms: the connection is closed
				  * (libpub: ETIMEDOUT, retried within connect_timeout_ms) */
	PUB_ERR__MAX
};
const char *pub_proto_err_name(uint32_t code);

/*
 * TABLE body (after req_id):
 *   name8 table_name, u16 ncols, ncols x { u8 col_type, name8 col_name },
 *   u32 nrows, nrows x ncols values:
 *     PUB_COL_U64: u64; PUB_COL_I64: i64 (as u64); PUB_COL_STR: text16
 * pubctl prints these as aligned tables or, with --json, as
 * {"table_name": [ {col: value, ...}, ... ]}.
 */
enum pub_col_type {
	PUB_COL_U64 = 1,
	PUB_COL_I64 = 2,
	PUB_COL_STR = 3,
};

/* A view into a received buffer; never NUL-terminated. */
struct pub_str {
	const char *ptr;
	size_t len;
};

/* ---- frame header ---- */

/*
 * Look at the start of a receive buffer.
 * Returns  1 and fills *type, *body_len, *body when a whole frame is there;
 *          0 when more bytes are needed (*need says how many in total, if known;
 *            once the 8-byte header is in and valid, *type and *body_len are
 *            filled too, *body is not);
 *         -PUB_ERR_PROTO when the header is invalid: unknown type, reserved
 *          bits set, or body_len above max_body (never trust the length: the
 *          caller passes its limit, and nothing is allocated from it).
 */
int pub_proto_frame_peek(const void *buf, size_t avail, size_t max_body, uint8_t *type, uint32_t *body_len,
			 const uint8_t **body, size_t *need);

/* Write a frame header; returns PUB_PROTO_HDR_LEN. */
size_t pub_proto_put_hdr(void *out, uint8_t type, uint32_t body_len);

/* ---- decoded bodies ---- */

/* HELLO flags */
#define PUB_HELLO_F_SHM	   0x1 /* the client would publish through a shared-memory log */
#define PUB_HELLO_F_DIRECT 0x2 /* ...and write and read direct logs (common/directlog.h) */
/* WELCOME flags */
#define PUB_WELCOME_F_SHM	  0x1 /* an SHM frame with the client's publish log follows */
#define PUB_WELCOME_F_SHM_DELIVER 0x2 /* ...and one with its deliver log */
#define PUB_WELCOME_F_DIRECT	  0x4 /* ...and one with its wake page: the direct path is on */
/* SHM kinds */
#define PUB_SHM_PUBLISH_LOG 1 /* the client writes, pubd reads */
#define PUB_SHM_DELIVER_LOG 2 /* pubd writes the client's deliveries, the client reads */
#define PUB_SHM_GROUP_LOG   3 /* pubd writes a group's messages once, its subscribers read (read-only) */
/* The direct path (common/directlog.h). */
#define PUB_SHM_WAKE_PAGE   4 /* after the deliver log's: the client's wake page (1 fd, read-write) */
#define PUB_SHM_DIRECT_LOG  5 /* to a publisher: its direct log of a group (memfd, doorbell, space) */
#define PUB_SHM_DIRECT_READ 6 /* to a subscriber: a publisher's direct log to read (1 fd, read-only) */
#define PUB_SHM_WAKER                                                                            \
	7		     /* to a publisher: a reader of its log log_id to wake: the reader's \
			      * wake page (read-only) and doorbell eventfd; peer names it */
#define PUB_SHM_WAKER_GONE 8 /* to a publisher: reader peer of log log_id left (no fd) */
#define PUB_SHM_DIRECT_GONE                                                       \
	9 /* log log_id is retired (no fd): its writer writes it no more (it asks \
	   * for a new one), a reader reads it to its end, then lets go */
#define PUB_SHM__MAX 10
/* SHM frame flags (GROUP_LOG only): read it from the group's mark in the
 * deliver log on (given back after an END), not at once. */
#define PUB_SHM_F_AFTER_MARK 0x1

struct pub_msg_hello {
	uint16_t version;
	uint32_t flags;
	struct pub_str client_name;
};

struct pub_msg_welcome {
	uint16_t version;
	uint16_t flags; /* PUB_WELCOME_F_* */
	uint32_t max_message;
	uint32_t mtu;
	uint32_t client_id;
	uint64_t source_id;
	struct pub_str daemon_version;
	struct pub_str fabric;
};

struct pub_msg_group_req { /* SUBSCRIBE, UNSUBSCRIBE */
	uint32_t req_id;
	struct pub_str group;
};

struct pub_msg_publish {
	uint32_t req_id;
	struct pub_str group;
	const uint8_t *payload;
	size_t payload_len;
};

struct pub_msg_deliver {
	uint64_t source;
	uint64_t seq;
	struct pub_str group;
	const uint8_t *payload;
	size_t payload_len;
};

struct pub_msg_shm {
	uint32_t kind; /* PUB_SHM_* */
	uint32_t capacity;
	uint32_t max_record;
	uint32_t flags;
	/* PUB_SHM_GROUP_LOG only: the reader's slot in its deliver log's
	 * control page, the position it starts at, and the group. */
	uint32_t slot;
	uint64_t start;
	struct pub_str group;
	/* The direct path's kinds (PUB_SHM_DIRECT_LOG and after) too: the
	 * direct log, the reader it is about (WAKER, WAKER_GONE: its client
	 * id), and the source id its messages are delivered with. */
	uint32_t log_id;
	uint32_t peer;
	uint64_t source;
	uint64_t seq; /* DIRECT_READ: the seq of the first message at start */
};

struct pub_msg_ok {
	uint32_t req_id;
};

struct pub_msg_error {
	uint32_t req_id;
	uint32_t code;
	struct pub_str text;
};

struct pub_msg_query {
	uint32_t req_id;
	uint8_t kind;
	struct pub_str arg;
};

/*
 * Body decoders: return 0, or -PUB_ERR_PROTO when the body is short, long,
 * or a length prefix points past its end. Strings point into the body.
 * dec_hello fills m->version even when it fails (body of 2+ bytes), so the
 * daemon can answer a HELLO of another version with PUB_ERR_VERSION.
 */
int pub_proto_dec_hello(const uint8_t *body, size_t len, struct pub_msg_hello *m);
int pub_proto_dec_welcome(const uint8_t *body, size_t len, struct pub_msg_welcome *m);
int pub_proto_dec_group_req(const uint8_t *body, size_t len, struct pub_msg_group_req *m);
int pub_proto_dec_publish(const uint8_t *body, size_t len, struct pub_msg_publish *m);
/* The head of a PUBLISH whose body (body_len bytes in all) is still being
 * read: avail bytes of it are at body. Returns 1 with req_id and group set,
 * payload pointing at the payload bytes that are in (payload_len: the whole
 * payload's length, of which at most avail minus the head are there); 0
 * when the head is not all in yet; -PUB_ERR_PROTO when body_len is too
 * short for the head it announces. */
int pub_proto_dec_publish_head(const uint8_t *body, size_t avail, size_t body_len, struct pub_msg_publish *m);
int pub_proto_dec_deliver(const uint8_t *body, size_t len, struct pub_msg_deliver *m);
int pub_proto_dec_ok(const uint8_t *body, size_t len, struct pub_msg_ok *m);
int pub_proto_dec_shm(const uint8_t *body, size_t len, struct pub_msg_shm *m);
int pub_proto_dec_error(const uint8_t *body, size_t len, struct pub_msg_error *m);
int pub_proto_dec_query(const uint8_t *body, size_t len, struct pub_msg_query *m);

/*
 * Encoders write a whole frame (header + body) into out, which must hold
 * cap bytes. They return the frame length, or -PUB_ERR_PROTO when a name is
 * longer than PUB_PROTO_NAME_MAX (or a payload does not fit the u32 length),
 * or 0 when cap is too small. An ERROR text longer than PUB_PROTO_TEXT_MAX
 * is cut to it, and so is a table string cell.
 *
 * PUBLISH and DELIVER write only the header and the fixed part (the frame
 * header already counts the payload's length), so a caller sends the payload
 * from where it lies with writev(): no copy of the message.
 */
long pub_proto_enc_hello(void *out, size_t cap, uint32_t flags, const char *client_name, size_t name_len);
long pub_proto_enc_welcome(void *out, size_t cap, const struct pub_msg_welcome *m);
long pub_proto_enc_group_req(void *out, size_t cap, uint8_t type, uint32_t req_id, const char *group, size_t group_len);
long pub_proto_enc_publish_head(void *out, size_t cap, uint32_t req_id, const char *group, size_t group_len,
				size_t payload_len);
long pub_proto_enc_deliver_head(void *out, size_t cap, uint64_t source, uint64_t seq, const char *group,
				size_t group_len, size_t payload_len);
long pub_proto_enc_ok(void *out, size_t cap, uint32_t req_id);
long pub_proto_enc_shm(void *out, size_t cap, const struct pub_msg_shm *m);
long pub_proto_enc_error(void *out, size_t cap, uint32_t req_id, uint32_t code, const char *text, size_t text_len);
long pub_proto_enc_query(void *out, size_t cap, uint32_t req_id, uint8_t kind, const char *arg, size_t arg_len);

/* Largest head of a PUBLISH/DELIVER frame (header + fixed fields + longest name). */
#define PUB_PROTO_MAX_HEAD (PUB_PROTO_HDR_LEN + 8 + 8 + 1 + PUB_PROTO_NAME_MAX)

/* ---- tables ---- */

/*
 * Builder: the daemon fills a caller-provided growable buffer. The builder
 * does not allocate itself; it calls grow() to get more room (the daemon
 * passes realloc-backed storage, tests a fixed array).
 */
struct pub_table_builder {
	uint8_t *buf;
	size_t len, cap;
	/* need: the total capacity wanted (len + bytes about to be written);
	 * grow sets buf and cap >= need and returns 0, or -ENOMEM. */
	int (*grow)(struct pub_table_builder *b, size_t need);
	void *grow_ctx;
	size_t frame_start; /* where this TABLE frame starts in buf */
	size_t nrows_at;    /* offset of the u32 nrows field */
	uint16_t ncols;
	uint16_t col; /* next column of the current row */
	uint32_t nrows;
	int err; /* first error; later calls are no-ops */
};

/* A grow() backed by realloc(), for builders whose buf the caller frees. */
int pub_table_grow_realloc(struct pub_table_builder *b, size_t need);

/* cols: "name:u", "name:i", "name:s" (u64, i64, string). */
void pub_table_begin(struct pub_table_builder *b, uint32_t req_id, const char *table_name, const char *const *cols,
		     unsigned ncols);
void pub_table_u64(struct pub_table_builder *b, uint64_t v);
void pub_table_i64(struct pub_table_builder *b, int64_t v);
void pub_table_str(struct pub_table_builder *b, const char *s); /* NULL prints as "" */
void pub_table_strn(struct pub_table_builder *b, const char *s, size_t n);
/*
 * Finish the frame; returns 0 or the first error (-ENOMEM, -EINVAL for a row
 * of the wrong width, a cell of the wrong type or a bad column spec). On an
 * error the frame is cut off (len back to frame_start), so buf holds only
 * whole frames. Several frames (TABLE..., then OK) may follow each other in
 * one buffer: pub_table_begin appends at len.
 */
int pub_table_end(struct pub_table_builder *b);

/* Reader: walk a received TABLE body. */
struct pub_table_reader {
	uint32_t req_id;
	struct pub_str name;
	uint16_t ncols;
	uint32_t nrows;
	const uint8_t *cols; /* column descriptors */
	const uint8_t *cells, *end;
	const uint8_t *pos;	/* next cell */
	uint16_t col;		/* column of the next cell */
	const uint8_t *col_pos; /* its descriptor */
};

struct pub_table_cell {
	uint8_t type;
	uint64_t u; /* U64 and I64 */
	struct pub_str s;
};

/* Returns 0 or -PUB_ERR_PROTO (validates every cell before returning). */
int pub_proto_dec_table(const uint8_t *body, size_t len, struct pub_table_reader *r);
/* Column i's type and name. */
int pub_table_col(const struct pub_table_reader *r, unsigned i, uint8_t *type, struct pub_str *name);
/* Next cell in row-major order: 1 when a cell was read, 0 at the end. */
int pub_table_next(struct pub_table_reader *r, struct pub_table_cell *c);

#endif
