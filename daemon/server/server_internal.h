/* SPDX-License-Identifier: MIT */
/*
 * What the server's files share: a client, its output queue, the limits
 * that bound both, and the functions one file offers the others.
 */
#ifndef PUBD_SERVER_INTERNAL_H
#define PUBD_SERVER_INTERNAL_H

#include "deliverlog_format.h"
#include "directlog.h"
#include "ipc.h"
#include "proto.h"
#include "publog_format.h"
#include "shmlog.h"

/* Receive buffer per client. Frames that do not fit (big PUBLISH bodies)
 * are read straight into their message buffer instead of growing this.
 * Every connection starts with RBUF_MIN (enough for HELLO, bounded by
 * limits.max_clients); a known client that fills it grows it to RBUF_CAP,
 * charged to limits.client_buffer_budget, and shrinks back when idle. */
#define RBUF_CAP (256 * 1024)
#define RBUF_MIN (4 * 1024)
/* An rbuf that saw no data for this long shrinks back to RBUF_MIN. */
#define RBUF_IDLE_NS (1000ull * 1000 * 1000)
/* How often repeating accept errors and refusals are logged. */
#define ACCEPT_LOG_NS (10000ull * 1000 * 1000)

/* A line a client can cause, one per event: through one of srv's limits
 * (log_limit.h), a few a period and the rest counted. */
#define srv_log_limited(srv, limit, prio, ...)                         \
	do {                                                           \
		if (pubd_log_limit_pass(&(srv)->limit, pubd_now_ns())) \
			pubd_log(prio, __VA_ARGS__);                   \
	} while (0)
/*
 * Control traffic must get through whatever others hold of the client budget
 * (publishers partway through big bodies, clients that do not read their
 * replies): a client with no reply queued may always have one reply of up to
 * REPLY_FREE_MAX queued outside the budget. Only its further replies wait
 * for the budget, so no client or group of clients can lock out another's
 * queries, and memory stays bounded: connections (max_clients plus the
 * operator's reserve) times REPLY_FREE_MAX, besides the budget.
 */
#define REPLY_FREE_MAX (64 * 1024)
/* A query from a client that already has replies queued waits for this much
 * of the budget (or for its replies to be written); a reply up to this size
 * is then always queued at once. */
#define QUERY_BUDGET_WAIT REPLY_FREE_MAX
/* A PUBLISH body from this size on is read straight into its message buffer
 * once its header is in, not copied out of rbuf: one copy less per message
 * (the copy costs more than the system call it saves from here on). */
#define BIG_MIN (16 * 1024)
/* While big bodies flow, rbuf takes at most this much per read (or of what
 * follows a body in its readv): the next header, without reading the next
 * big body into rbuf (and copying it) too. */
#define BIG_TAIL_READ (4 * 1024)
/* Bytes read from one client per wakeup before others get a turn. */
#define READ_BUDGET (1024 * 1024)
/* Back-pressure: stop reading a publisher with this many messages waiting
 * for the fabric, resume below the low mark. */
#define TX_PENDING_HIGH 256
#define TX_PENDING_LOW	64
/* A client that does not read its replies stops being read too. */
#define CTRL_BYTES_HIGH (4u << 20)
#define FLUSH_IOV	64
/* Connections beyond limits.max_clients kept for root and pubd's own user,
 * so that pubctl still works while someone holds every ordinary slot. */
#define OPERATOR_RESERVE 8
/* How long a client being disconnected may take to read why. */
#define CLOSE_GRACE_NS (2000ull * 1000 * 1000)

/* frame header + source + seq + name8 */
#define PUB_OUT_HEAD_MAX (8 + 8 + 8 + 1 + 255)

/* A client's shared-memory publish log (publog.c). */
/* One log's shared memory and its sleep/wake handshake (shm.c). */
struct srv_shm {
	uint8_t *map;
	size_t map_len;
	int doorbell_fd;	       /* the reader's wakeup, rung when it said it sleeps */
	int space_fd;		       /* the writer's wakeup, rung when it said it waits for room */
	struct pubd_loop_watch *watch; /* pubd's end of the two */
	size_t charged;		       /* the mapping, from the client budget */
};

/* Records of a publish log lent out as messages at once, at most (a
 * power of two); past it messages are copied out as before. */
#define PUBLOG_LENT_MAX 256u

/* A message published straight from its record in the log (publog.c). */
struct srv_publog_loan {
	struct pubd_msgbuf *m; /* NULL once returned or detached */
	uint64_t pos;	       /* its record: the log's head stays at or before it */
};

struct srv_publog {
	struct srv_shm shm; /* doorbell: the client rings it; space: we ring it */
	struct pub_shmlog_reader r;
	/* A message arriving in pieces (charged to the client budget), or
	 * one refused on its first piece whose other pieces are skipped. */
	struct pubd_msgbuf *part;
	bool skip;
	uint32_t part_have, part_total, part_req;
	uint8_t part_glen;
	char part_group[255];
	/* Messages lent from their records (no copy), oldest first; lent_head
	 * and lent_tail run free, the slot is the count modulo the size. */
	struct pubd_msgbuf_lender lender;
	struct pubd_mem_region region; /* the mapping, as a fabric may register it */
	struct srv_publog_loan lent[PUBLOG_LENT_MAX];
	uint32_t lent_head, lent_tail;
	struct srv_publog *next_lending; /* on srv->lending while any is lent */
	bool lending;
	bool orphan; /* its client is gone; freed when the last loan returns */
	struct pubd_ipc *srv;
	uint32_t client_id;
	/* The last group a whole message was admitted to (srv_publish_admit
	 * in full), and the admission generation then: the next message to
	 * the same name within that generation skips the lookup and the ACL. */
	struct pubd_group *admit_g;
	uint64_t admit_gen;
	uint64_t cur_pos;	   /* the record being taken */
	uint64_t cur_seq;	   /* a direct log's: the writer's seq of the message being taken */
	bool more;		   /* records may wait: read from pubd_ipc_flush_all */
	bool broken;		   /* the client wrote what no libpub writes: why says what */
	struct pubd_client *owner; /* its client (the doorbell's) */
	/* Its client hung up: read on a batch a turn (srv_publog_drain) up
	 * to drain_end (a lap past where the close began) or the deadline;
	 * drained once it ran dry or reached drain_end. */
	bool draining, drained;
	bool forced; /* read by srv_publog_read_all now: the client's pause is not heeded */
	bool held;   /* what pubd reads is not given back to the writer (srv_publog_hold) */
	uint64_t drain_end, drain_deadline_ns;
	char why[128];
	uint64_t records;
	/* A direct log (direct.c): the group's, its readers and wakers; NULL
	 * for the client's own publish log. */
	struct srv_direct *direct;
};

/* A subscriber reading a direct log straight (direct.c). */
struct srv_direct_reader {
	struct pubd_sub *s;
	uint32_t slot;	      /* in its client's deliver log and wake page */
	bool told;	      /* the writer was sent its WAKER frame */
	uint64_t lost_base;   /* its wake page's lost count when it began reading */
	uint64_t lost_taken;  /* messages taken back: lost, or left unread (no more than it was given) */
	uint64_t given;	      /* messages pubd counted delivered to it in the log */
	uint64_t given_bytes; /* and their bytes, still counted delivered (less what it lost) */
};

/* A direct log: one publisher's messages to one group, which the group's
 * local subscribers read straight (common/directlog.h). pubd reads it
 * through l, as it reads a publish log (publog.c). */
struct srv_direct {
	struct srv_publog *l;
	struct pubd_client *writer; /* not to be followed once writer_gone */
	bool writer_gone;
	struct pubd_group *g; /* NULL once retired */
	char name[PUB_PROTO_NAME_MAX];
	uint8_t name_len;
	uint32_t id;
	uint64_t source;
	int ro_fd; /* a read-only file of its memfd, for readers */
	struct srv_direct_reader *readers;
	unsigned nreaders, readers_cap;
	uint32_t wakers_gen;		  /* bumped with every WAKER or WAKER_GONE sent */
	bool lazy;			  /* what the control page says now */
	uint64_t next_seq;		  /* the writer's seq of the next message pubd reads */
	struct pub_direct_seqmarks marks; /* what a reader that does not read surely lost */
	uint64_t claim_seen;		  /* the writer's claim at the last tick */
	uint64_t retired_ns;		  /* when it was retired (0: live) */
	bool counted;			  /* retired with its writer: what it left was counted then */
	bool frozen;			  /* its readers wait while pubd reads it to its end (direct_end.c) */
	struct srv_direct *next_retired;
};

/* Retired group logs kept for a client that may hold a message in one. */
struct srv_glog_holds {
	struct srv_glog **v;
	unsigned n;
};

/* A client's shared-memory deliver log (dlog.c). */
struct srv_dlog {
	struct srv_shm shm; /* doorbell: we ring it; space: the client rings it */
	struct pub_shmlog_writer w;
	bool blocked; /* waiting for room: the output queue waits too */
	bool unrung;  /* records committed since the last look at the reader */
};

/* One queued output frame. */
struct pubd_out {
	struct pubd_out *next;
	struct pubd_msgbuf *body; /* DELIVER payload, or a whole control frame */
	struct pubd_sub *sub;	  /* DELIVER: the subscription it counts against */
	/* A DELIVER whose subscription ended while it was being written (sub
	 * NULL): its group, which counts it delivered or dropped as it would
	 * have the subscription (the group-subscribers scope keeps clients
	 * that left); NULL once a reload removes the group (daemon scope). */
	struct pubd_group *orphan_of;
	uint32_t head_len; /* bytes of head[] in use (0 for control frames) */
	bool uncharged;	   /* a reply outside the client budget (REPLY_FREE_MAX in ipc.c) */
	uint32_t written;  /* of head + body */
	uint8_t head[PUB_OUT_HEAD_MAX];
};

struct pubd_client {
	struct pubd_ipc *srv;
	struct pubd_client *prev, *next; /* all clients */
	int fd;
	struct pubd_loop_watch *watch;
	uint32_t watch_events;
	uint32_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	uint32_t *sup_gids; /* supplementary groups (SO_PEERGROUPS) */
	size_t nsup_gids;
	char name[64];
	bool hello;
	/* On srv's list of connections waiting for their HELLO (hello.c). */
	bool hello_waiting;
	bool hello_looked; /* its deadline passed and what it had sent was read once more */
	struct pubd_client *hello_prev, *hello_next;
	/* limits.max_message_size as HELLO told it: libpub sizes its messages,
	 * and a direct log's reader checks them, against it (direct.c). */
	uint32_t told_max_message;
	bool closing;		    /* protocol error: flush the error reply, then close */
	bool unsub_deferred;	    /* closing from inside fan-out: subscriptions end in pubd_ipc_flush_all */
	uint64_t close_deadline_ns; /* closing: closed by then even if the reply did not drain */
	uint64_t connected_ns;

	uint8_t *rbuf;
	size_t rlen, rcap;    /* rcap above RBUF_MIN is charged to the client budget */
	bool read_since_tick; /* rbuf saw data since the last pubd_ipc_tick */
	/* A PUBLISH too big for rbuf is read straight into its message buffer. */
	struct pubd_msgbuf *big; /* charged to the client budget while read */
	size_t big_have;
	size_t skip; /* body bytes of a refused big PUBLISH still to be read and discarded */
	uint32_t big_req_id;
	char big_group[256];
	size_t big_group_len;
	/* The last frame seen was a big PUBLISH: read rbuf in small bites, so
	 * that the next big body is read into its buffer, not into rbuf. */
	bool expect_big;

	struct pubd_out *out_head, *out_tail;
	uint32_t out_delivers;	  /* queued DELIVER frames (the subscriber queue) */
	size_t out_deliver_bytes; /* their payload bytes (limits.subscriber_queue_bytes) */
	/* What waits in the group logs it reads (glog.c): counted against the
	 * same subscriber queue, so that a reader of many groups makes pubd
	 * hold one queue's worth for it, not one per group. */
	uint32_t glog_wait_msgs;
	/* It did not read to a group log's END in time (glog.c): it gets no
	 * group log again on this connection. */
	bool glog_withheld;
	size_t glog_wait_bytes;
	/* Retired group logs it left before their END, while it may still
	 * hold a message there (glog.c): kept until it closes, or hangs up. */
	struct srv_glog_holds glog_holds;
	bool hung_up;			/* srv_client_close or _hangup found it hung up */
	struct srv_dlog_linger *linger; /* pubd ended it: its deliver log lingers (ended.c) */
	size_t out_ctrl_bytes;		/* queued replies: what they cost (output.c, reply_cost) */
	bool dirty;			/* on the flush list */
	struct pubd_client *next_dirty;

	uint32_t tx_pending; /* its messages waiting in transmit queues */
	bool paused;	     /* not reading: back-pressure */
	size_t budget_wait;  /* paused until this many bytes of the client budget are free */
	bool reply_wait;     /* ... or until its queued replies are all written */
	bool gone;	     /* the peer hung up: what it sent is read and handled, nothing written */

	struct pubd_sub **subs;
	unsigned nsubs, subs_cap;
	struct pubd_pubstat *pubs;
	unsigned npubs;
	unsigned pubs_last; /* the entry last counted into (checked before use: entries move) */

	uint64_t published, delivered;
	struct pubd_drops drops;

	struct srv_publog *log; /* NULL: it publishes through its socket */
	struct srv_dlog *dlog;	/* NULL: its deliveries go through its socket */
	/* Its deliver log's slots in use, one per group log or direct log it
	 * reads (glog.c, direct.c). */
	uint64_t glog_slots[(PUB_DELIVERLOG_NSLOTS + 63) / 64];
	/* ...of which those a direct log's reader has not let go yet: taken
	 * again once it wrote PUB_DIRECT_SLOT_RELEASED there (srv_slot_hold). */
	uint64_t held_slots[(PUB_DELIVERLOG_NSLOTS + 63) / 64];

	/* The direct path (direct.c): its wake page (NULL: no direct path for
	 * it), a read-only file of it for the writers it reads, and the direct
	 * logs it writes. */
	uint8_t *wake_map;
	int wake_ro_fd;
	/* Fds sent since the client was last seen to have read all pubd sent
	 * it (srv_send_fds: at most SRV_FDS_UNREAD_MAX). */
	unsigned fds_unread;
	struct srv_direct **directs;
	unsigned ndirects, directs_cap;
};

/* pubd is done with c (closing it): said in its deliver log, before its
 * subscriptions let go of their group logs, which are then written on over
 * what c left. libpub reads none of its group logs after that. */
static inline void srv_said_closed(struct pubd_client *c)
{
	if (c->dlog)
		atomic_store_explicit(&c->dlog->w.ctl->closed, 1, memory_order_release);
}

/* The client buffer budget (limits.client_buffer_budget): on every read
 * and reply, so inline. */
static inline bool srv_budget_fits(const struct pubd_ipc *srv, size_t n)
{
	return n <= srv->cfg->client_buffer_budget && srv->charged <= srv->cfg->client_buffer_budget - n;
}

static inline bool srv_budget_take(struct pubd_ipc *srv, size_t n)
{
	if (!srv_budget_fits(srv, n))
		return false;
	srv->charged += n;
	return true;
}

static inline void srv_budget_give(struct pubd_ipc *srv, size_t n)
{
	srv->charged -= n < srv->charged ? n : srv->charged;
}

/* hello.c: the HELLO deadline (limits.hello_timeout_ms) */
int srv_hello_init(struct pubd_ipc *srv);
void srv_hello_close(struct pubd_ipc *srv);
/* At accept: c waits for its HELLO from now on. */
void srv_hello_wait_begin(struct pubd_client *c);
/* Its HELLO came, or it goes: off the list (a no-op when it is not on it).
 * Inline, so the files that end a wait (requests.c, session.c) do not call
 * hello.c, which calls them. The timer stays armed: when it runs early it
 * finds nothing due and re-arms, which costs less than re-arming at every
 * HELLO. */
static inline void srv_hello_wait_end(struct pubd_client *c)
{
	struct pubd_ipc *srv = c->srv;

	if (!c->hello_waiting)
		return;
	c->hello_waiting = false;
	if (c->hello_prev)
		c->hello_prev->hello_next = c->hello_next;
	else
		srv->hello_head = c->hello_next;
	if (c->hello_next)
		c->hello_next->hello_prev = c->hello_prev;
	else
		srv->hello_tail = c->hello_prev;
	c->hello_prev = c->hello_next = NULL;
}
/* Close the connections whose deadline has passed, and re-arm. */
void srv_hello_sweep(struct pubd_ipc *srv, uint64_t now_ns);

/* output.c: the bottom — queues, budget, replies; calls no other server file */
/* pubd_ipc_deliver by the output queue (dlog.c writes what it can straight
 * into a deliver log first). */
void srv_out_deliver(struct pubd_ipc *srv, struct pubd_sub *s, uint64_t source, uint64_t seq, struct pubd_msgbuf *msg);
void srv_out_release(struct pubd_ipc *srv, struct pubd_out *o);
void srv_mark_dirty(struct pubd_client *c);
void srv_pause_client(struct pubd_client *c);
void srv_pause_for_budget(struct pubd_client *c, size_t n);
void srv_pause_for_reply(struct pubd_client *c);
/* Pause c while its unread replies are too many (CTRL_BYTES_HIGH) or the
 * budget is spent (output.c). */
void srv_replies_pause(struct pubd_client *c);
/* After every request c may have been answered: true when paused now.
 * Inline: it runs per message on the publish paths, where a client almost
 * never has a reply queued. */
static inline bool srv_replies_back_pressure(struct pubd_client *c)
{
	if (c->out_ctrl_bytes)
		srv_replies_pause(c);
	return c->paused;
}
bool srv_reply_fits(const struct pubd_client *c, size_t n);
void srv_out_unlink(struct pubd_client *c, struct pubd_out *prev, struct pubd_out *o);
/* A delivery written whole (to the socket or the deliver log) to c, for
 * subscription s (NULL: it went away mid-write). */
void srv_count_delivered(struct pubd_client *c, struct pubd_sub *s, size_t len);
/* A DELIVER frame all written: delivered, to its subscription or, if that
 * ended mid-write, to its group. */
void srv_count_out_delivered(struct pubd_client *c, const struct pubd_out *o);
/* n messages of bytes in all, delivered at once. */
void srv_count_delivered_n(struct pubd_client *c, struct pubd_sub *s, uint64_t n, uint64_t bytes);
void srv_count_sub_drop(struct pubd_ipc *srv, struct pubd_sub *s, enum pub_drop_reason r, uint64_t n);
/* n messages (bytes in all) counted delivered to s that it will never read
 * after all (in a shared log it lets go): taken off delivered at every
 * scope and counted as s's drops for r. */
void srv_take_back(struct pubd_sub *s, uint64_t n, uint64_t bytes, enum pub_drop_reason r);
/* pubd_ipc_sub_has_room and pubd_ipc_sub_queue for a subscription on its
 * own queue (glog.c answers for one on a group log). */
bool srv_out_sub_has_room(const struct pubd_sub *s, size_t len);
void srv_out_sub_queue(const struct pubd_sub *s, struct pubd_sub_queue *q);
int srv_queue_frame(struct pubd_client *c, const void *frame, size_t len);
void srv_reply_ok(struct pubd_client *c, uint32_t req_id);
/* Queue an ERROR reply (text formatted as printf). */
void srv_reply_error(struct pubd_client *c, uint32_t req_id, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void srv_update_watch(struct pubd_client *c);
/* Send a frame with file descriptors (SCM_RIGHTS), straight to the socket,
 * ahead of nothing: only while the client's output queue is empty, and
 * while it has fewer than SRV_FDS_UNREAD_MAX fds unread (-EAGAIN past
 * that: each caller has a way without them). 0, or -errno (also when the
 * socket took only part of it). */
#define SRV_FDS_UNREAD_MAX 32
int srv_send_fds(struct pubd_client *c, const void *frame, size_t len, const int *fds, unsigned nfds);
/* The client has read everything pubd wrote to its socket (nothing queued
 * here, nothing unread in the kernel: SIOCOUTQ), the fds sent with it
 * included. Fds in flight count against pubd's RLIMIT_NOFILE until they
 * are received: what a client may be sent unasked checks this first. */
bool srv_peer_read_all(const struct pubd_client *c);
void srv_drop_output(struct pubd_client *c);

/* admit.c: publish admission; calls output.c */
bool srv_client_may(const struct pubd_client *c, const struct pubd_acl *acl);
void srv_publish_refused(struct pubd_client *c, struct pubd_drops *scope, enum pub_drop_reason why);
bool srv_publish_size_ok(struct pubd_client *c, uint32_t req_id, struct pubd_group *g, size_t plen);
struct pubd_group *srv_publish_admit(struct pubd_client *c, uint32_t req_id, const char *name, size_t nlen,
				     size_t plen);
void srv_publish_accept(struct pubd_client *c, uint32_t req_id, struct pubd_group *g, struct pubd_msgbuf *m);
/* A message of a host group (g->host), taken where it lies: delivered to
 * the local subscribers before this returns (copied only for those that
 * must queue it), and nothing of it kept. */
void srv_publish_accept_local(struct pubd_client *c, uint32_t req_id, struct pubd_group *g, const uint8_t *data,
			      size_t len);

/* shm.c: the memfds behind the logs; calls nothing of the server */
uint32_t srv_shm_capacity(uint64_t configured);
/* A sealed memfd of a formatted log of cap bytes, mapped at *map, and the
 * log's two eventfds (a group log: none). Returns the memfd (a group log:
 * a read-only file of it), the caller's to send and close, or -errno having
 * made nothing. */
int srv_shm_make(struct pubd_client *c, uint32_t cap, uint32_t kind, struct srv_shm *s);
void srv_shm_unmap(uint8_t *map, size_t len);
/* A memfd of len bytes that nobody can resize or seal further; -errno. */
int srv_shm_memfd(size_t len);
/* A read-only file of the memfd fd (its mode goes to 0400 first), for
 * those who must not write it (above); -errno. */
int srv_shm_read_only(int fd);
/* Punch the whole pages of a client's log's bytes [from, to) out of its
 * memfd, before pubd lets go of it (a client may keep its mapping after it
 * disconnects). */
void srv_shm_punch(struct srv_shm *s, size_t from, size_t to);
/* Unwatch, close the eventfds; unmap and give the charge back unless
 * keep_map (lent records still read it: the mapping stays charged to the
 * client budget until its owner unmaps it and gives s->charged back, so
 * logs kept for their loans are bounded like any client memory). Safe on a
 * half-made one. */
void srv_shm_close(struct pubd_ipc *srv, struct srv_shm *s, bool keep_map);

/* dlog.c: a client's deliver log (and pubd_ipc_deliver, which writes into it
 * straight when nothing is queued); calls output.c */
int srv_dlog_open(struct pubd_client *c, struct pub_msg_shm *m, int fds[3]);
void srv_dlog_close(struct pubd_client *c, bool hung_up);
/* At the log's end: its pages given back but what its client may still
 * read (hung_up: nothing), then unmapped and freed. */
void srv_dlog_free(struct pubd_ipc *srv, struct srv_dlog *l, bool hung_up);

/* ended.c: a connection pubd ends before its client hung up keeps its
 * deliver log (taken from c), and the retired group logs it may hold a
 * message in (srv_ended_holds, once it left them), until the client hangs
 * up; false if it cannot (the caller lets go of the log at once). */
bool srv_ended_linger(struct pubd_client *c);
void srv_ended_holds(struct pubd_client *c);
/* Let go of everything kept for connections pubd ended (at exit). */
void srv_ended_close_all(struct pubd_ipc *srv);
/* Put the delivery at the head of the output queue into the log: 1 when
 * it is all in, 0 when it waits for room (what fitted stays written). */
int srv_dlog_put(struct pubd_client *c, struct pubd_out *o);
/* Ring the client when records came and it sleeps. */
void srv_dlog_wake(struct pubd_client *c);
/* The group's mark (PUB_DELIVERLOG_F_MOVE): from here its messages are in
 * its group log. False when the log has no room for it now (or is blocked);
 * dry_run: only whether it would be written. */
bool srv_dlog_mark(struct pubd_client *c, const char *group, uint8_t glen, bool dry_run);

/* glog.c, glog_end.c (its ending, glog_internal.h between them): a group's
 * group log; calls output.c (and pubd_ipc_deliver, for the readers it moves
 * off the log) */
/* Give the new subscription s the group's log, if it can have it (a
 * shared-memory client whose output queue is empty): an SHM frame, sent
 * before the SUBSCRIBE's OK. Otherwise its deliveries are copied as before. */
void srv_glog_attach(struct pubd_client *c, struct pubd_sub *s);
void srv_glog_leave(struct pubd_ipc *srv, struct pubd_sub *s);
/* pubd ends c before it hung up: the group logs it may hold a message in
 * are retired (kept, unwritten, until it hangs up). */
void srv_glog_client_ended(struct pubd_client *c);
/* Those logs are let go of (its client gone, or hung up at last). */
void srv_glog_holds_release(struct pubd_ipc *srv, struct srv_glog_holds *h);

/* Messages waiting for room in the group log s reads (0 when it reads none). */
unsigned srv_glog_waiting_for(const struct pubd_sub *s);
/* Write what waits for room; end logs whose readers fell too far behind. */
void srv_glog_flush_all(struct pubd_ipc *srv);
void srv_glog_acl_changed(struct pubd_ipc *srv, struct pubd_group *g);
/* Once a second: the group logs given back to readers an END moved off. */
void srv_glog_tick(struct pubd_ipc *srv, uint64_t now_ns);
void srv_glog_group_removed(struct pubd_ipc *srv, struct pubd_group *g);

/* publog.c: a client's publish log; calls admit.c and output.c */
/* Make the log at HELLO: the SHM frame to send and its fds (the memfd is
 * the caller's to close once sent). 0, or -errno (the client stays on its
 * socket). */
int srv_publog_open(struct pubd_client *c, struct pub_msg_shm *m, int fds[3]);
/* Read what it committed: a batch, unless paused (back-pressure, or its
 * own replies unread). */
void srv_publog_read(struct pubd_client *c);
/* Before a socket frame is handled: what the client committed to its log
 * first is read first. False while that must wait (back-pressure). */
bool srv_publog_caught_up(struct pubd_client *c);
/* The hung-up client c is being closed: true while what it committed to
 * its log is still to be read (from pubd_ipc_flush_all, a batch a turn,
 * at most a lap and CLOSE_GRACE_NS); close it once this says false. */
bool srv_publog_drain(struct pubd_client *c);
/* The client is closing: count what it left unread (client_gone), free
 * the log. */
void srv_publog_close(struct pubd_client *c);
/* Messages committed and not read yet, and one half-written (shutdown):
 * in all of c's logs, or in l. */
uint64_t srv_publog_unhandled(struct pubd_client *c);
uint64_t srv_publog_unhandled_one(struct srv_publog *l);
/* Records wait in one of c's logs (read from pubd_ipc_flush_all). */
bool srv_publog_more(const struct pubd_client *c);
/* Why one of c's logs cannot be read further, or NULL. */
const char *srv_publog_broken(const struct pubd_client *c);
/* One of c's logs is being drained (srv_publog_drain). */
bool srv_publog_draining(const struct pubd_client *c);
/* pubd stops: none of c's logs is read again. */
void srv_publog_stop_all(struct pubd_client *c);
/* A direct log's reading side (direct.c owns the rest): made with its
 * memfd (read-write, for the writer), charged to the client budget. */
struct srv_publog *srv_publog_make_direct(struct pubd_client *c, int *memfd);
void srv_publog_free_direct(struct pubd_ipc *srv, struct srv_publog *l);
/* Read what l holds now (what a batch leaves too), unless paused. */
void srv_publog_read_one(struct pubd_client *c, struct srv_publog *l);
/* Read what l holds now, paused or not (up to a lap: a retire and a
 * reload's ACLs need pubd to stand where the writer is, which its readers
 * may have read up to), over the client budget by the one message in
 * pieces it may be assembling. */
void srv_publog_read_all(struct pubd_client *c, struct srv_publog *l);
/* Give the writer none of the room pubd reads (hold), or all of it again:
 * a writer held can write no further than a lap past where pubd stood, so
 * srv_publog_read_all reaches its end. */
void srv_publog_hold(struct srv_publog *l, bool hold);

/* direct_end.c: where a retired direct log ends for its readers. Freeze:
 * they take nothing more for now, and the writer is held (pubd then reads
 * the log up to it); end: the end is where pubd stands, and the writer has
 * its room back. */
void srv_direct_freeze(struct srv_direct *d);
void srv_direct_end(struct srv_direct *d);

/* direct.c: the direct path; calls publog.c, glog.c's slots and output.c */
/* At HELLO: the client's wake page, if it asked for the direct path and
 * pubd offers it. The SHM frame and its fd (the caller's to close). */
int srv_direct_hello(struct pubd_client *c, struct pub_msg_shm *m, int *fd);
/* DIRECT: a direct log of g for c (its memfd in an SHM frame, then OK),
 * or an ERROR (c publishes to g through its publish log). */
void srv_direct_open(struct pubd_client *c, uint32_t req_id, struct pubd_group *g);
/* A new subscription s: the group's direct logs, before its OK. */
void srv_direct_attach(struct pubd_client *c, struct pubd_sub *s);
/* s ends: it reads no direct log of its group any more. */
void srv_direct_leave(struct pubd_ipc *srv, struct pubd_sub *s);
/* Retire every direct log of g (NULL: of every group): a reload changed
 * who may read them, or the group goes. */
void srv_direct_retire_group(struct pubd_ipc *srv, struct pubd_group *g);
void srv_direct_acl_changing(struct pubd_group *g, const struct pubd_group_config *next);
void srv_direct_acl_changed(struct pubd_ipc *srv, struct pubd_group *g, const struct pubd_group_config *was);
/* The client is closing: its direct logs are retired, its wake page goes. */
void srv_direct_client_close(struct pubd_client *c);
/* Once a second: retired logs whose readers are done go; lost counts. */
void srv_direct_tick(struct pubd_ipc *srv, uint64_t now_ns);
/* Read every direct log now (a query wants current counts). */
void srv_direct_catch_up(struct pubd_ipc *srv);
/* Before g's subscribers change: its lazily read logs are read up. */
void srv_direct_catch_up_group(struct pubd_group *g);
/* direct_read.c: publog.c's hooks for a direct log's records, and the
 * writer's side of its readers; calls output.c */
void srv_direct_publish_gen(struct srv_direct *d);
/* Tell the writer about reader rd (a WAKER frame with its wake page and
 * doorbell), if its socket can take the fds now. */
void srv_direct_tell_writer(struct srv_direct *d, struct srv_direct_reader *rd);
/* Lazy (rung only when half the log waits) or prompt, as things stand. */
void srv_direct_update_lazy(struct srv_direct *d);
int srv_direct_decode(const struct srv_direct *d, const struct pub_shmlog_view *v, struct pub_publog_piece *p);
/* The fan-out of a message of d (seq: its writer's) passes over d's
 * readers: they read it in the log, and are counted delivered. One that
 * came in pieces (m) is not read there (libpub reads only whole records of
 * a log nobody waits for it on): pubd delivers it to them, as the log's
 * source and seq, which libpub puts in its place. */
void srv_direct_fan_begin(struct srv_direct *d, struct pubd_group *g, size_t len, struct pubd_msgbuf *pieces,
			  uint64_t seq);
void srv_direct_fan_end(struct srv_direct *d);
/* Inline: on every message a direct log carries, and most have no reader
 * here (a publisher whose subscribers are on other hosts). */
static inline void srv_direct_accept_begin(struct srv_direct *d, struct pubd_group *g, size_t len,
					   struct pubd_msgbuf *pieces, uint64_t seq)
{
	d->next_seq = seq + 1;
	if (d->nreaders)
		srv_direct_fan_begin(d, g, len, pieces, seq);
}
static inline void srv_direct_accept_end(struct srv_direct *d, struct pubd_group *g)
{
	(void)g;
	if (d->nreaders)
		srv_direct_fan_end(d);
	d->l->srv->direct_fan_out = false;
}
/* After a batch of l's records: wake readers pubd must wake, and say
 * whether pubd wants to be rung (false: lazy, read on a timer). */
bool srv_direct_after_read(struct srv_direct *d, bool read_any);
/* The slots glog.c hands out (shared with the direct path). */
uint32_t srv_slot_take(struct pubd_client *c);
void srv_slot_give(struct pubd_client *c, uint32_t slot);
/* A direct log's reader's slot, no longer pubd's to write: free once the
 * reader says it let the log go (common/directlog.h). */
void srv_slot_hold(struct pubd_client *c, uint32_t slot);

/* session.c: a connection's reading, writing and closing; calls requests.c and output.c */
int srv_client_flush(struct pubd_client *c);
void srv_client_hangup(struct pubd_client *c);
void srv_client_parse(struct pubd_client *c);
void srv_client_read(struct pubd_client *c);
void srv_on_client(void *ctx, uint32_t events);
void srv_client_close(struct pubd_client *c);
/* c's peer: cred as accept read it (SO_PEERCRED), or NULL when it could
 * not (the least privilege then); its supplementary groups read here. */
struct ucred;
void srv_read_peer(struct pubd_client *c, const struct ucred *cred);
uint64_t srv_count_unhandled(struct pubd_client *c);

/* requests.c: handlers and subscriptions; calls output.c */
void srv_protocol_error(struct pubd_client *c, const char *why);
void srv_begin_close(struct pubd_client *c);
void srv_client_unsubscribe(struct pubd_client *c, unsigned idx);
void srv_client_unsubscribe_all(struct pubd_client *c, bool may_hold);
bool srv_handle_frame(struct pubd_client *c, uint8_t type, const uint8_t *body, size_t len);

#endif
