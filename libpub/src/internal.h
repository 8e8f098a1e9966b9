/* SPDX-License-Identifier: MIT */
/*
 * libpub internals shared by its source files; not installed.
 *
 * The handle (struct pub_client) and the functions the files call in one
 * another:
 *   client.c   the handle: options, pub_connect, pub_close, pub_info
 *   error.c    error codes, and the handle's last and pending errors
 *   conn.c     the connection: connect, handshake, reconnect, pub_fd readiness
 *   frame.c    framing: the receive buffer, writing frames, held output
 *   recv.c     the receive path: frames from pubd, waiting for replies, pub_recv
 *   request.c  requests with a reply: subscribe, unsubscribe
 *   publish.c  the publish path: pub_publish, PUB_MORE, pub_flush
 *   query.c    pub_query and its TABLE replies
 *   shmpub.c   the shared-memory publish log: attaching it, writing messages into it
 *   shmrecv.c  the shared-memory deliver log: attaching it, reading messages from it
 *   claim.c    pub_claim/pub_commit: a message written in place
 *   directpub.c  the direct path, writing: direct logs, waking their readers
 *   directrecv.c the direct path, reading: other publishers' direct logs
 * Everything not static here is hidden (C_VISIBILITY_PRESET hidden and
 * pub.map): only the pub_* functions of pub.h are the library's ABI.
 */
#ifndef PUB_INTERNAL_H
#define PUB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "directlog.h"
#include "pub.h"
#include "proto.h"
#include "shmlog.h"

/* A message received while the caller waited for something else (a reply). */
struct pub_queued {
	struct pub_queued *next;
	uint64_t source, seq;
	size_t len;
	char group[PUB_GROUP_MAX + 1];
	uint8_t data[];
};

/* A group log being read (shmgroup.c). */
struct pub_glog {
	char group[PUB_GROUP_MAX + 1];
	size_t glen;
	void *map; /* read-only */
	size_t map_len;
	struct pub_shmlog_reader r;
	_Atomic uint64_t *slot; /* ours, in the deliver log's control page */
	bool after_mark;	/* given back: read from the group's mark in the deliver log on */
	struct pub_glog *next_dead;
};

/* A reader of one of our direct logs, to wake when it sleeps (directpub.c). */
struct pub_waker {
	const struct pub_wake_page *page; /* its wake page, read-only */
	int fd;				  /* its doorbell */
	uint32_t peer;			  /* its client id at pubd */
	uint64_t woken_at;		  /* the sleep_seq we last rang for */
};

/* A direct log we write: our messages to one group (directpub.c). */
struct pub_dwriter {
	char group[PUB_GROUP_MAX + 1];
	size_t glen;
	uint32_t id;
	uint64_t source, seq;
	void *map;
	size_t map_len;
	struct pub_shmlog_writer w;
	int doorbell; /* pubd's: rung when it said it sleeps (or, lazy, at half full) */
	int space;    /* rung by pubd when we said we wait for room */
	struct pub_waker *wakers;
	unsigned nwakers, wakers_cap;
	uint32_t gen_seen;	 /* the control page's wakers_gen we took in */
	uint64_t lazy_rung_head; /* pubd's head when we last rang it, lazy */
	uint64_t mark_seg;	 /* the ring's sixteenth we last marked (directlog.h) */
	bool wake_owed;		 /* committed under PUB_MORE: readers not rung yet */
	uint64_t rung_tail;	 /* our tail when we last rang */
};

/* Another publisher's direct log we read (directrecv.c). */
struct pub_dread {
	struct pub_direct_reader d;
	char group[PUB_GROUP_MAX + 1];
	void *map; /* read-only */
	size_t map_len;
	uint32_t id, slot, writer;
	uint64_t source;
	uint64_t lost_said; /* what our wake page says we lost in it */
	bool gone;	    /* retired: read to its end, then let go */
	uint8_t *buf;	    /* messages are copied out here */
	size_t cap;
	struct pub_dread *next_dead;
	/* A message in pieces pubd delivers in the log's place (its source
	 * and seq): the log is read no further until it came, or until
	 * DETOUR_WAIT_NS after its last piece (then it comes late, if at all). */
	bool detour;
	uint64_t detour_seq, detour_done_ns;
	/* Such messages pubd delivered before we reached their place. */
	struct pub_queued *via_head, **via_tail;
};

/* How long a direct log waits for pubd's delivery of a message in pieces
 * after its last piece was written (pubd reads it at once; its delivery
 * can wait behind others to us, or be dropped as they can). */
#define DETOUR_WAIT_NS (2000ull * 1000 * 1000)
/* How long the first message to a group waits for pubd to make its direct
 * log (then the publish log carries it; the log is taken when it comes). */
#define DIRECT_ASK_MS 200

/* What a caller is waiting for while frames are processed. */
struct pub_waiter {
	uint32_t req_id;  /* OK / ERROR / TABLE with this id; 0: none */
	bool welcome;	  /* the handshake: WELCOME, or any ERROR */
	const char *what; /* context for pub_errmsg: "subscribe 'prices'" (waiter_what) */
	/* A publish's: its group, and room for "publish 'GROUP'", made only
	 * when an error needs it (snprintf on every publish cost more than
	 * the rest of it). */
	const char *publish_group;
	char *what_buf;	 /* PUB_GROUP_MAX + 32 bytes */
	pub_table_cb cb; /* TABLE frames of req_id */
	void *cb_arg;
	int cb_ret; /* first non-zero callback return; later tables are skipped */
	bool done;
	int result; /* 0 or -PUB_E... once done */
};

struct pub_client {
	int sock;	      /* connected socket; -1 while down */
	int epfd;	      /* what pub_fd() returns: stable for the handle's life */
	int timerfd;	      /* readable when a reconnect attempt is due */
	int kickfd;	      /* eventfd: readable while work is buffered inside the handle */
	bool kicked;	      /* kickfd holds a count */
	bool want_out;	      /* sock is registered for EPOLLOUT (output pending) */
	bool up;	      /* connected and WELCOME received */
	bool sock_quiet;      /* pub_recv's last poll (or read) found the socket empty: skip the read before sleeping */
	unsigned quiet_turns; /* turns of a spinning or lingering pub_recv since (recv.c, socket_due) */

	char *path;
	char name[PUB_PROTO_NAME_MAX + 1];
	int connect_timeout_ms, request_timeout_ms, reconnect_min_ms, reconnect_max_ms;
	unsigned int flags;
	uint64_t recv_linger_ns; /* pub_recv looks at the deliver log this long before it sleeps */

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
	bool resub_due; /* pubd made a subscribed group anew (PUB_ERR_REMADE): subscribe again */

	uint64_t next_attempt_ns; /* next reconnect attempt (CLOCK_MONOTONIC) */
	int backoff_ms;
	struct pub_info info;

	char msg_group[PUB_GROUP_MAX + 1]; /* NUL-terminated group of the current message */
	char errmsg[4096];		   /* a refused reload's errors, each a line, fit */

	/* The shared-memory publish log (shmpub.c), when pubd gave one. */
	bool want_shm;	 /* ask for it at HELLO */
	bool expect_shm; /* WELCOME said an SHM frame follows */
	bool wake_owed;	 /* committed without waking pubd (PUB_MORE) */
	void *log_map;	 /* NULL: publishing goes through the socket */
	size_t log_map_len;
	struct pub_shmlog_writer log;
	int log_doorbell; /* rung when pubd said it sleeps */
	int log_space;	  /* pubd rings it when we said we wait for room */
	int rx_fds[8];	  /* fds received with frames, until a frame takes them */
	unsigned nrx_fds;
	bool expect_dlog; /* WELCOME said a deliver log's SHM frame follows too */

	/* The shared-memory deliver log (shmrecv.c), when pubd gave one. */
	void *dlog_map; /* NULL: deliveries come through the socket */
	size_t dlog_map_len;
	struct pub_shmlog_reader dlog;
	void *dlog_dead_map; /* a detached log the caller's message still lies in */
	size_t dlog_dead_len;
	int dlog_doorbell; /* pubd rings it when we said we sleep; in epfd */
	int dlog_space;	   /* we ring it when pubd said it waits for room */
	bool dlog_holding; /* the caller's message lies in the log: give it back at the next call */
	/* The caller's message, where it lies when in a log (dlog_holding or
	 * glog_held): made private before the connection is let go. */
	const uint8_t *held_data;
	size_t held_len;
	/* A message arriving in pieces, gathered here. */
	uint8_t *dbuf;
	size_t dcap;
	uint32_t dhave, dtotal;
	uint64_t dsource, dseq;
	/* The group of the message being gathered, apart from msg_group: a
	 * direct log's message returned while the pieces came would write
	 * its group there (a fabric message in pieces came out under a
	 * local group's name: tests/integration/three_hosts.sh, once). */
	char dgroup[PUB_GROUP_MAX + 1];
	bool dpart;

	/* Group logs (shmgroup.c): one per subscribed group pubd gave one. */
	struct pub_glog **glogs;
	size_t nglogs, glog_cap, glog_rr;
	struct pub_glog *glog_held;  /* the caller's message lies in it */
	struct pub_glog *glog_part;  /* the message in pieces (dpart) comes from it */
	struct pub_glog *glogs_dead; /* removed while held: unmapped at the next pub_recv */
	bool glog_turn;		     /* which of group logs and deliver log is looked at first */

	/* The direct path (directpub.c, directrecv.c), when pubd offers it. */
	bool want_direct;   /* ask for it at HELLO */
	bool expect_wake;   /* WELCOME said a wake page's SHM frame follows */
	void *wake_map;	    /* our wake page (read-write); NULL: no direct path */
	uint64_t sleep_seq; /* ours, stored in the page */
	struct pub_dwriter **dws;
	unsigned ndws, dws_cap;
	char **dw_asked; /* groups a direct log was asked for on this connection */
	unsigned ndw_asked;
	struct pub_dread **drs;
	unsigned ndrs, drs_cap, drs_rr;
	struct pub_dread *dr_held;  /* the caller's message lies in its buffer */
	struct pub_dread *drs_dead; /* let go of while held: freed at the next pub_recv */
	bool dr_turn;		    /* which of the logs pubd writes and the direct ones first */

	/* An open pub_claim (claim.c): in the publish log, or in claim_buf. */
	bool claim_open;
	uint8_t *claim_rec;	      /* the log record being written in place */
	struct pub_dwriter *claim_dw; /* ...in this direct log (else the publish log) */
	uint8_t *claim_buf;
	size_t claim_len, claim_cap;
	char claim_group[PUB_GROUP_MAX + 1];
};

#define RBUF_MIN (256 * 1024)
/* Replies (tables) can exceed max_message; below this nothing is refused. */
#define MAX_BODY_MIN		 (16u * 1024 * 1024)
#define DEFAULT_REQUEST_MS	 10000
#define DEFAULT_RECONNECT_MIN_MS 10
#define DEFAULT_RECONNECT_MAX_MS 1000
/* A reconnect's handshake waits this long at least, whatever the caller's
 * timeout (a live pubd answers in far less): so that a caller that never
 * waits, pub_recv(0) in a loop or PUB_NONBLOCK publishes, still reconnects,
 * and one that waits a second does not wait request_timeout_ms (10 s) on a
 * pubd that accepts and does not answer (stopped, or stuck). */
#define HANDSHAKE_MIN_MS 50
/* A publisher that never receives still reads what pubd reported, every so many publishes. */
#define DRAIN_EVERY 16
/* PUB_MORE holds messages of up to MORE_COPY_MAX bytes (larger ones are
 * worth their own system call, and copying them would cost more than it
 * saves) and writes them once MORE_FLUSH_AT bytes wait. */
#define MORE_COPY_MAX (8 * 1024)
#define MORE_FLUSH_AT (64 * 1024)

#define NEVER UINT64_MAX
/* Busy poll: looks at the deliver log between looks at the socket. */
#define DLOG_SPINS 256
/* ...and at its socket once every so many turns (recv.c, socket_due). */
#define BUSY_SOCK_TURNS 64

/* ---- time ---- */

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t deadline_in(int ms)
{
	if (ms < 0)
		return NEVER;
	return now_ns() + (uint64_t)ms * 1000000ull;
}

/* poll() timeout until a deadline: -1 for never, rounded up so we do not spin. */
static inline int ms_until(uint64_t deadline)
{
	uint64_t now, left;

	if (deadline == NEVER)
		return -1;
	now = now_ns();
	if (now >= deadline)
		return 0;
	left = (deadline - now + 999999) / 1000000;
	return left > 1000000000 ? 1000000000 : (int)left;
}

/* error.c */
int pub_err_from_code(uint32_t code);
const char *pub_err_describe(int err, const char *op);
int set_err(struct pub_client *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void set_pending(struct pub_client *c, int err, const char *msg);
int take_pending(struct pub_client *c);
int check_group(struct pub_client *c, const char *op, const char *group, size_t *len);
bool is_disconnect(int err);

/* conn.c */
void readiness_update(struct pub_client *c);
void conn_close(struct pub_client *c);
void conn_lost(struct pub_client *c);
int conn_first(struct pub_client *c, uint64_t deadline);
/* A reconnect attempt, if one is due; its handshake waits until the
 * caller's deadline (but HANDSHAKE_MIN_MS at least, request_timeout_ms at
 * most). */
int reconnect(struct pub_client *c, uint64_t deadline);
/* Up, or one reconnect attempt as reconnect(); -ENOTCONN when it fails. */
int ensure_up_by(struct pub_client *c, uint64_t deadline);
/* ...the caller waiting for pubd's answers (request_timeout_ms). */
int ensure_up(struct pub_client *c);
int conn_resubscribe_due(struct pub_client *c);

/* frame.c */
void rx_detach(struct pub_client *c);
int rx_read(struct pub_client *c);
int tx_flush(struct pub_client *c, uint64_t deadline);
int wbuf_room(struct pub_client *c, size_t extra, size_t min_cap);
int tx_frame(struct pub_client *c, const void *head, size_t hlen, const void *data, size_t dlen, uint64_t deadline,
	     bool *partial);

/* recv.c */
int process(struct pub_client *c, struct pub_waiter *w, struct pub_message *m);
int wait_for(struct pub_client *c, struct pub_waiter *w, uint64_t deadline);
/* w's context for an error message ("request" when it has none). */
const char *waiter_what(struct pub_waiter *w);

/* publish.c: PUB_SYNC's wait for pubd's answer */
int publish_wait(struct pub_client *c, struct pub_waiter *w);

/* request.c */
uint32_t next_req(struct pub_client *c);
int roundtrip(struct pub_client *c, const uint8_t *frame, size_t len, struct pub_waiter *w);
/* ...waiting no later than deadline (now_ns() clock). */
int roundtrip_by(struct pub_client *c, const uint8_t *frame, size_t len, struct pub_waiter *w, uint64_t deadline);
int request(struct pub_client *c, const uint8_t *frame, size_t len, struct pub_waiter *w);

/* shmpub.c */
int shm_attach(struct pub_client *c, const struct pub_msg_shm *m, const int fds[3]);
int shm_wait_room(struct pub_client *c, struct pub_shmlog_writer *w, int doorbell, int space, uint32_t len,
		  bool nonblock, bool (*still)(struct pub_client *c, const void *arg), const void *arg);
void shm_detach(struct pub_client *c);
uint64_t shm_unread(const struct pub_client *c);
/* The messages of a log we write from pubd's head to our tail, told by
 * first_piece (1: a message's first piece, 0: a later one, -1: not a
 * record of ours, stop). A head out of range counts nothing. */
uint64_t shm_messages_past_head(const struct pub_shmlog_writer *w, const void *map, size_t map_len,
				int (*first_piece)(const struct pub_shmlog_view *v));
void shm_wake(struct pub_client *c);
void rx_fds_close(struct pub_client *c);
/* In place (pub_claim/pub_commit): a message that fits one record. */
bool shm_fits_record(const struct pub_client *c, size_t glen, size_t len);
uint8_t *shm_claim(struct pub_client *c, const char *group, size_t glen, size_t len, int *err);
void shm_commit(struct pub_client *c, uint32_t req_id, int flags);
int shm_publish(struct pub_client *c, uint32_t req_id, const char *group, size_t glen, const void *data, size_t len,
		int flags);

/* shmrecv.c */
int dlog_attach(struct pub_client *c, const struct pub_msg_shm *m, const int fds[3]);
void dlog_detach(struct pub_client *c);
/* Before the socket goes: the caller's message, if it lies in a log, into
 * pages of its own. */
void shm_keep_held(struct pub_client *c);
/* The logs the connection's end left mapped for the caller's message go. */
void shm_release_dead(struct pub_client *c);
void dlog_release(struct pub_client *c);
int dlog_next(struct pub_client *c, struct pub_message *m);
bool dlog_sleep(struct pub_client *c);
struct pub_deliverlog_piece;
int dlog_gather(struct pub_client *c, const struct pub_deliverlog_piece *p, struct pub_message *m);
/* Busy poll: spin a while on the log; true when a record came. */
bool dlog_spin(struct pub_client *c);
void dlog_awake(struct pub_client *c);

/* shmgroup.c */
int glog_attach(struct pub_client *c, const struct pub_msg_shm *m, int fd);
void glog_detach(struct pub_client *c, const char *group);
/* Tell pubd how far the group's log was read, the message the caller holds
 * included (before an UNSUBSCRIBE: what lies past it is never read). */
void glog_say_read(struct pub_client *c, const char *group);
void glog_detach_all(struct pub_client *c);
/* Unmap the logs removed while the caller's message lay in one. */
void glog_free_dead(struct pub_client *c);
void glog_release(struct pub_client *c);
int glog_next(struct pub_client *c, struct pub_message *m);
/* A deliver-log message of group is next: 1 with a message of its group
 * log that comes before it, 0 when there is none (or the log just ended). */
int glog_before(struct pub_client *c, const char *group, uint8_t glen, struct pub_message *m);
/* A record waits in some group log. */
bool glog_any(struct pub_client *c);
/* The deliver log's mark of group: its group log is read from here on
 * (its SHM frame, sent before the mark, is read from the socket if it has
 * not been yet). 0, or an error. */
int glog_mark(struct pub_client *c, const char *group, uint8_t glen);

/* publish.c: read what pubd sent, without waiting (errors, new logs) */
void drain(struct pub_client *c);

/* directpub.c */
int dw_attach(struct pub_client *c, const struct pub_msg_shm *m, const int fds[3]);
int dw_waker_add(struct pub_client *c, const struct pub_msg_shm *m, const int fds[2]);
void dw_waker_gone(struct pub_client *c, const struct pub_msg_shm *m);
void dw_retired(struct pub_client *c, uint32_t log_id);
void dw_detach_all(struct pub_client *c);
/* Messages in our direct logs that pubd had not read (as shm_unread). */
uint64_t dw_unread(const struct pub_client *c);
/* dw_for's way when we hold no log of group: asked of pubd, once. */
struct pub_dwriter *dw_ask(struct pub_client *c, const char *group, size_t glen, bool nonblock);
/* The direct log of group to write into, asked of pubd the first time:
 * NULL when there is none (the publish log then). Inline: on every publish,
 * and the asking's stack frame cost the lookup as much again. */
/* The direct log we hold of group, or NULL. */
static inline struct pub_dwriter *dw_find(struct pub_client *c, const char *group, size_t glen)
{
	for (unsigned i = 0; i < c->ndws; i++)
		if (c->dws[i]->glen == glen && !memcmp(c->dws[i]->group, group, glen))
			return c->dws[i];
	return NULL;
}
static inline struct pub_dwriter *dw_for(struct pub_client *c, const char *group, size_t glen, bool nonblock)
{
	struct pub_dwriter *dw;

	if (!c->wake_map)
		return NULL;
	dw = dw_find(c, group, glen);
	return dw ? dw : dw_ask(c, group, glen, nonblock);
}
/* req_id: a PUB_SYNC's (pubd answers it once it read the message), or 0. */
int dw_publish(struct pub_client *c, struct pub_dwriter *dw, uint32_t req_id, const void *data, size_t len, int flags);
/* In place: a message that fits one record (NULL with *err 0 when it
 * does not, or the log is retired: the caller claims elsewhere). */
uint8_t *dw_claim(struct pub_client *c, struct pub_dwriter *dw, size_t len, int *err);
void dw_commit(struct pub_client *c, uint32_t req_id, int flags);
/* Ring the readers of messages committed under PUB_MORE. */
void dw_wake_all(struct pub_client *c);

/* directrecv.c */
int dr_attach(struct pub_client *c, const struct pub_msg_shm *m, int fd);
void dr_retired(struct pub_client *c, uint32_t log_id);
void dr_detach_group(struct pub_client *c, const char *group);
void dr_detach_all(struct pub_client *c);
void dr_release(struct pub_client *c);
int dr_next(struct pub_client *c, struct pub_message *m);
/* A message from pubd's deliver log: one of a direct log's in pieces,
 * delivered before its place there, is kept for it (true: taken). */
bool dr_hold(struct pub_client *c, const struct pub_message *m);
bool dr_any(struct pub_client *c);
/* The wake page at the handshake, and our sleeps in it. */
int wake_attach(struct pub_client *c, int fd);
void wake_sleep(struct pub_client *c);
void wake_awake(struct pub_client *c);

/* query.c: turn a validated TABLE into the public struct and call cb. */
int pub_table_deliver(struct pub_table_reader *r, pub_table_cb cb, void *cb_arg);

#endif
