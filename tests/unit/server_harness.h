/* SPDX-License-Identifier: MIT */
/*
 * The IPC server on its own (no engine, no fabric), for test_server and
 * test_server_shm: a table that records the ops the server calls is the
 * whole engine, and a real client drives the real socket.
 */
#ifndef SERVER_HARNESS_H
#define SERVER_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "groups.h"
#include "ipc.h"
#include "loop.h"
#include "proto.h"
#include "stats.h"

/* What the server asked of its engine. */
struct calls {
	unsigned publish, publish_local, changed, closed, query, reload;
	struct pubd_group *group;
	size_t len;
	uint32_t closed_pending;
	uint8_t kind;
	bool reload_fails;
	int changed_ret; /* what subscribers_changed answers (1: the fabric is getting there) */
	/* Hold the messages published (as a transmit backlog would), up to
	 * HELD_MAX; teardown lets them go. */
	bool hold;
	unsigned nheld;
	struct pubd_msgbuf *held[8];
};
#define HELD_MAX 8

struct fixture {
	char dir[64], path[96];
	struct pubd_config cfg;
	struct pubd_groups groups;
	struct pubd_loop *loop;
	uint64_t counters[PUBD_CTR__COUNT];
	struct pubd_drops drops;
	struct pubd_ipc srv;
	struct calls calls;
};

int setup(void **state);
int teardown(void **state);
/* One loop turn and the server's flush, as the engine's idle pass does. */
void turn(struct fixture *f);
int client(struct fixture *f);
void send_frame(int fd, const void *p, long n);
/* The next frame from the server (turning it while none is there): its
 * type, and for OK/ERROR the code (0 for OK). */
uint8_t reply(struct fixture *f, int fd, uint32_t *code);
int hello(struct fixture *f);
uint8_t group_req(struct fixture *f, int fd, uint8_t type, const char *g, uint32_t *code);
void publish(int fd, uint32_t req_id, const char *g, size_t len);

#endif
