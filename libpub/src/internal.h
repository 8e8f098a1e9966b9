/* SPDX-License-Identifier: MIT */
/* libpub internals shared by client.c, query.c and error.c; not installed. */
#ifndef PUB_INTERNAL_H
#define PUB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pub.h"
#include "proto.h"

/* A message received while the caller waited for something else (a reply). */
struct pub_queued {
	struct pub_queued *next;
	uint64_t source, seq;
	size_t len;
	char group[PUB_GROUP_MAX + 1];
	uint8_t data[];
};

/* What a caller is waiting for while frames are processed. */
struct pub_waiter {
	uint32_t req_id;  /* OK / ERROR / TABLE with this id; 0: none */
	bool welcome;	  /* the handshake: WELCOME, or any ERROR */
	const char *what; /* context for pub_errmsg: "subscribe 'prices'" */
	pub_table_cb cb;  /* TABLE frames of req_id */
	void *cb_arg;
	int cb_ret; /* first non-zero callback return; later tables are skipped */
	bool done;
	int result; /* 0 or -PUB_E... once done */
};

struct pub_client {
	int sock;      /* connected socket; -1 while down */
	int epfd;      /* what pub_fd() returns: stable for the handle's life */
	int timerfd;   /* readable when a reconnect attempt is due */
	int kickfd;    /* eventfd: readable while work is buffered inside the handle */
	bool kicked;   /* kickfd holds a count */
	bool want_out; /* sock is registered for EPOLLOUT (output pending) */
	bool up;       /* connected and WELCOME received */

	char *path;
	char name[PUB_PROTO_NAME_MAX + 1];
	int connect_timeout_ms, request_timeout_ms, reconnect_min_ms, reconnect_max_ms;
	unsigned int flags;

	/* Receive buffer: bytes [rpos, rlen) not parsed yet. */
	uint8_t *rbuf;
	size_t rpos, rlen, rcap, max_body;
	bool holding;	   /* the caller's current message lies in rbuf before rpos: do not move rbuf */
	uint8_t *held_buf; /* an old rbuf still holding the caller's current message */

	/* Output not written yet: the rest of a frame the socket took only part
	 * of, and whole frames PUB_MORE held back (more_held of them). */
	uint8_t *wbuf;
	size_t wpos, wlen, wcap;
	unsigned more_held;

	struct pub_queued *qhead, **qtail, *cur;

	char **subs;
	size_t nsubs, subcap;

	uint32_t next_req;
	unsigned publishes; /* since the last look for reported errors */

	int pending_err; /* reported by pubd without a request; returned once */
	char pending_msg[1024];

	uint64_t next_attempt_ns; /* next reconnect attempt (CLOCK_MONOTONIC) */
	int backoff_ms;
	struct pub_info info;

	char msg_group[PUB_GROUP_MAX + 1]; /* NUL-terminated group of the current message */
	char errmsg[1024];
};

/* error.c */
int pub_err_from_code(uint32_t code);
const char *pub_err_describe(int err, const char *op);

/* query.c: turn a validated TABLE into the public struct and call cb. */
int pub_table_deliver(struct pub_table_reader *r, pub_table_cb cb, void *cb_arg);

#endif
