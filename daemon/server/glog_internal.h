/* SPDX-License-Identifier: MIT */
/*
 * A group log's state, shared by the two files that keep it: glog.c makes
 * the log, gives it to readers and writes it; glog_end.c ends it (an END
 * record when readers fall a subscriber queue behind, or its ACL changes),
 * retires it and gives readers a log back. Private to daemon/server/.
 */
#ifndef PUBD_GLOG_INTERNAL_H
#define PUBD_GLOG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server_internal.h"

struct glog_wait {
	struct pubd_msgbuf *m;
	uint64_t source, seq;
};

struct srv_glog {
	struct pubd_group *g;
	struct srv_shm shm;
	int memfd;
	struct pub_shmlog_writer w;
	unsigned readers;  /* subscriptions given it (reading, or still to read up to its END) */
	unsigned draining; /* ...of those, ended and not yet read up to the END */
	/* Messages waiting for room, oldest first (a ring of wq_cap). */
	struct glog_wait *wq;
	unsigned wq_head, wq_n, wq_cap;
	size_t wq_bytes;
	uint32_t wq_written; /* of the oldest, written in pieces so far */
	bool must_end;	     /* the queue passed its bound: end at the next flush */
	uint64_t ended_ns;   /* when the last END was written (pubd_now_ns) */
	bool waiting;	     /* the control page says so: readers ring after reading */
	bool on_list;	     /* on srv->glogs_waiting */
	struct srv_glog *next_waiting;
	/* The subscribe ACL it was made under: another one retires it. */
	struct pubd_acl acl;
};

/* glog.c, for glog_end.c. */
/* Free a log no reader holds any more (its pages punched out first). */
void glog_free(struct pubd_ipc *srv, struct srv_glog *gl);
/* How far reader s says it has read, if the value makes sense. */
uint64_t glog_released_now(const struct srv_glog *gl, const struct pubd_sub *s);
/* Take what s says it has read; a draining reader at the END is done. */
void glog_look_at_reader(struct srv_glog *gl, struct pubd_sub *s);
/* The log's head: the least position a reader may still read. */
void glog_refresh_head(struct srv_glog *gl);
/* Give s the group's log (at SUBSCRIBE, or back after an END). */
void glog_give(struct pubd_client *c, struct pubd_sub *s, bool after_mark);
/* Add (sign > 0) or take off what waits in gl to each reader's held count;
 * whether a reader then holds more than a subscriber queue. */
bool glog_readers_wait(struct srv_glog *gl, int sign, uint32_t msgs, size_t bytes);
/* Off pubd_ipc.glogs_waiting. */
void glog_wait_unlink(struct pubd_ipc *srv, struct srv_glog *gl);
/* Say in the control page whether pubd waits for readers to make room. */
void glog_set_waiting(struct srv_glog *gl, bool on);
/* Write what waits, as far as the ring has room. */
void glog_write_waiting(struct pubd_ipc *srv, struct srv_glog *gl);

#endif
