/* SPDX-License-Identifier: MIT */
/*
 * The local API server: a Unix stream socket speaking common/proto.h.
 *
 * Every client has a receive buffer, an output queue and its counters.
 * Output (deliveries, replies) is queued and written in batches with
 * writev() once per loop iteration, so a burst of messages costs few
 * system calls. A subscriber's queue holds at most limits.subscriber_queue
 * deliveries and limits.subscriber_queue_bytes of their payload (one message
 * always fits an empty queue); past either the slow_subscriber policy
 * decides, and every message it drops is counted against that subscriber
 * only. Payload buffers are shared (refcounted) by every subscriber a message
 * is queued for, so the bytes bound is what one client can pin; together
 * clients pin at most max_clients times it, less when they share messages.
 *
 * The server sits below the engine: it calls up only through the ops table
 * the engine hands to pubd_ipc_init, and the engine calls down into the
 * functions below. It sees the groups table (core) to check ACLs and keep
 * subscriptions, never the daemon.
 */
#ifndef PUBD_IPC_H
#define PUBD_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "groups.h"
#include "log_limit.h"
#include "msgbuf.h"
#include "stats.h"
#include "uid_count.h"

struct pubd_client;
struct pubd_out;
struct pubd_loop;
struct pubd_loop_watch;
struct pub_table_builder;

/* What the server asks of the engine. Called from the server's handlers,
 * never from inside pubd_ipc_deliver (see pubd_ipc_deliver). */
struct pubd_ipc_ops {
	/* A PUBLISH passed every check: send it to g's subscribers and the
	 * fabric. Returns true when the message waits in a transmit queue
	 * with origin as its owner: the server counts it until
	 * pubd_ipc_tx_done(origin) (back-pressure). The queue's bytes are
	 * held against the client budget (pubd_ipc_tx_hold). */
	bool (*publish)(void *ctx, struct pubd_client *origin, struct pubd_group *g, struct pubd_msgbuf *msg);
	/* A host group's message (g->host), still in the caller's buffer:
	 * to the local subscribers now, nothing kept. */
	void (*publish_local)(void *ctx, struct pubd_group *g, const uint8_t *data, size_t len);
	/* g's local subscribers changed (the first came or the last went).
	 * 0, 1 when the fabric starts receiving later (the SUBSCRIBE waits for
	 * pubd_ipc_group_listening), or -errno when it could not start (or
	 * stop) receiving. */
	int (*subscribers_changed)(void *ctx, struct pubd_group *g);
	/* A client is going away with tx_pending messages still queued for
	 * the fabric: they stay queued, no longer owned by it. */
	void (*client_closed)(void *ctx, struct pubd_client *c, uint32_t tx_pending);
	/* Append the TABLE frames of a QUERY of kind (not RELOAD) to b.
	 * 0, or -PUB_ERR_* with a message in err. */
	int (*query)(void *ctx, struct pub_table_builder *b, uint32_t req_id, uint8_t kind, const char *arg,
		     size_t arglen, char *err, size_t errcap);
	/* Re-read the configuration: 0; 1 when applied but not all of it (what
	 * was not in err); or -errno with the errors in err. */
	int (*reload)(void *ctx, char *err, size_t errcap);
};

/* Per client, per group publish counts (`pubctl group NAME` shows publishers). */
struct pubd_pubstat {
	struct pubd_group *group;
	uint64_t published;
	uint64_t bytes;
};

struct pubd_ipc {
	/* What the engine hands in (pubd_ipc_init). */
	struct pubd_loop *loop;
	const struct pubd_config *cfg; /* the daemon's current config: a reload updates it in place */
	struct pubd_groups *groups;
	uint64_t *counters;	  /* the daemon's, PUBD_CTR_* */
	struct pubd_drops *drops; /* daemon scope: drops not tied to a known group */
	const struct pubd_ipc_ops *ops;
	void *ctx; /* for ops */
	/* What the WELCOME tells clients, kept current by the engine
	 * (pubd_ipc_set_fabric). */
	uint32_t mtu;
	uint64_t source_id;
	const char *fabric_name;

	int listen_fd;
	bool listen_from_systemd;
	struct pubd_loop_watch *listen_watch;
	char *path;	   /* NULL when systemd owns the socket */
	char sd_path[112]; /* the path of the socket systemd passed ("" if none or unnamed) */
	/* The file bind() made at path: only that one is chmod'ed at a reload
	 * or unlinked at exit (another pubd may have bound the path since). */
	dev_t path_dev;
	ino_t path_ino;
	struct pubd_client *clients;
	unsigned nclients;
	/* Deliver logs of connections pubd ended, kept until their clients
	 * hang up (ended.c); each counts against limits.max_clients. */
	struct srv_dlog_linger *lingering;
	unsigned nlingering;
	/* Connections and lingering logs by uid, counted as nclients and
	 * nlingering are, for limits.max_clients_per_uid. */
	struct pubd_uid_count per_uid;
	bool exiting; /* pubd_ipc_close: every client goes, and every log */
	uint32_t next_id;
	struct pubd_client *dirty;
	unsigned npaused; /* clients not being read (back-pressure): the loop looks for them only when there are some */
	unsigned ngone;	  /* hung-up clients whose input is still being drained */
	unsigned ndeferred;		/* clients with unsub_deferred set */
	unsigned nlog_more;		/* clients whose publish log has records waiting for a read */
	uint64_t admit_gen;		/* moves whenever a group goes or its ACLs may have changed: what a publish
					 * log remembers of its last admission holds only within one value */
	bool polling;			/* set by the engine: the loop turns without sleeping (busy_poll, lingering),
					 * so a publish log is read every turn, not slept on */
	struct srv_publog *lending;	/* publish logs with messages lent from their records */
	bool direct_fan_out;		/* a direct log's message is fanned out: pass over subs with direct_now */
	uint32_t next_direct_id;	/* the direct path's log ids */
	struct srv_direct *retired;	/* retired direct logs, kept for their readers (direct.c) */
	struct srv_glog *glogs_waiting; /* group logs with messages waiting for room */
	size_t charged;			/* bytes held for clients, against limits.client_buffer_budget */
	size_t uncharged;		/* replies outside it: at most one REPLY_FREE_MAX per client */
	int reserve_fd;			/* closed to accept and refuse a connection when out of fds */
	bool listen_paused;		/* accept kept failing: resumed by pubd_ipc_tick */
	uint64_t accept_fail_logged;	/* accept errors and refusals already logged */
	uint64_t refused_logged;
	uint64_t last_accept_log_ns;
	/* Lines a client can cause, one per event: a few a period, the rest counted (log_limit.h). */
	struct pubd_log_limit log_proto;    /* protocol errors, unsupported versions */
	struct pubd_log_limit log_denied;   /* SUBSCRIBEs an ACL refused */
	struct pubd_log_limit log_client;   /* one client's end: hang-ups, overflows, failed hand-overs */
	struct pubd_log_limit log_glog;	    /* group logs that could not be made */
	struct pubd_log_limit log_glog_end; /* group logs ended, or given up on, for their readers */
	struct pubd_log_limit log_hello;    /* connections closed for want of a HELLO in time */
	struct pubd_log_limit log_per_uid;  /* connections refused: their uid holds max_clients_per_uid */
	/* Connections waiting for their HELLO, oldest first, and the timer
	 * at the oldest one's deadline (hello.c); UINT64_MAX: not armed. */
	struct pubd_client *hello_head, *hello_tail;
	struct pubd_loop_timer *hello_timer;
	uint64_t hello_timer_at;
	struct pubd_out *free_outs;
};

/* The engine's part: where to listen and what to call. */
struct pubd_ipc_env {
	struct pubd_loop *loop;
	const struct pubd_config *cfg;
	struct pubd_groups *groups;
	uint64_t *counters;
	struct pubd_drops *drops;
	const struct pubd_ipc_ops *ops;
	void *ctx;
};

/* Listen (on the socket systemd passed, or on cfg->socket_path). 0 or -errno. */
int pubd_ipc_init(struct pubd_ipc *srv, const struct pubd_ipc_env *env);
void pubd_ipc_close(struct pubd_ipc *srv);
/* The fabric's MTU, pubd's source id and the fabric's name, as clients are
 * told them (WELCOME) and raw publishes are checked against. */
void pubd_ipc_set_fabric(struct pubd_ipc *srv, uint32_t mtu, uint64_t source_id, const char *fabric_name);
/* Once per loop iteration: work deferred from deliveries, paused clients
 * that may resume, and every client's queued output written. Returns work
 * done. */
int pubd_ipc_flush_all(struct pubd_ipc *srv);

/* Would pubd_ipc_flush_all find anything to do if called again now? The
 * loop turns again without sleeping only then (engine's on_idle): false
 * means every client's output was written (or waits for its socket's
 * EPOLLOUT) and no client waits for a read the loop has to start. */
static inline bool pubd_ipc_idle_pending(const struct pubd_ipc *srv)
{
	return srv->dirty || srv->npaused || srv->ngone || srv->nlog_more || srv->ndeferred || srv->glogs_waiting ||
	       srv->lending;
}

/*
 * Once a loop turn, after the local deliveries and the fabric's sends: a
 * message published straight from its record in a client's publish log
 * (no copy) and still held (a transmit backlog, a slow subscriber) is
 * copied now, and the log's space is given back to its writer. So a
 * record is lent for one turn at most: a publisher waits for the fabric,
 * never for a subscriber.
 */
void srv_settle_lending(struct pubd_ipc *srv);
static inline void pubd_ipc_settle(struct pubd_ipc *srv)
{
	if (srv->lending) /* every loop turn: nothing to do unless a message is lent */
		srv_settle_lending(srv);
}
/* Queue a message for one subscriber, applying the slow-subscriber policy.
 * Safe inside fan-out (and so inside a reassembly callback): it never calls
 * the engine back; a subscriber disconnected as slow loses its
 * subscriptions on the next pubd_ipc_flush_all. */
void pubd_ipc_deliver(struct pubd_ipc *srv, struct pubd_sub *s, uint64_t source, uint64_t seq, struct pubd_msgbuf *msg);
/* The same when it can be done at once without keeping the message: s's
 * subscriber has nothing queued and its deliver log has room for it in one
 * record. Returns false having done nothing otherwise; the caller then
 * calls pubd_ipc_deliver with the message in a buffer. So a message still
 * in a receive buffer is copied into one only for those that need it. */
bool pubd_ipc_deliver_now(struct pubd_ipc *srv, struct pubd_sub *s, uint64_t source, uint64_t seq, const uint8_t *data,
			  size_t len);
/*
 * A message of g to its group log's readers (server/glog.c): written once
 * into the log (or kept until it has room), and counted delivered to each.
 * The fan-out then passes over every subscription with glog_live set.
 * msg: the message in a buffer, or NULL (data is copied if it must wait).
 */
void srv_glog_put(struct pubd_ipc *srv, struct pubd_group *g, uint64_t source, uint64_t seq, const uint8_t *data,
		  size_t len, struct pubd_msgbuf *msg);
static inline void pubd_ipc_group_log_put(struct pubd_ipc *srv, struct pubd_group *g, uint64_t source, uint64_t seq,
					  const uint8_t *data, size_t len, struct pubd_msgbuf *msg)
{
	if (g->glog_live) /* on every message: nothing to do without readers */
		srv_glog_put(srv, g, source, seq, data, len, msg);
}
/* Messages first .. first + n - 1 of one source, still in a receive
 * buffer, as srv_glog_put for each in order (its readers' wakeups and
 * counts once for them all). */
void srv_glog_put_run(struct pubd_ipc *srv, struct pubd_group *g, uint64_t source, uint64_t first,
		      const struct pubd_msg_view *v, unsigned n);
static inline void pubd_ipc_group_log_put_run(struct pubd_ipc *srv, struct pubd_group *g, uint64_t source,
					      uint64_t first, const struct pubd_msg_view *v, unsigned n)
{
	if (g->glog_live)
		srv_glog_put_run(srv, g, source, first, v, n);
}
/* A group's group log as `pubctl group` shows it (all 0: it has none). */
struct pubd_group_log_info {
	uint32_t capacity;
	uint32_t readers;   /* subscriptions reading it now */
	uint32_t draining;  /* moved off it, still reading up to its END */
	uint32_t waiting;   /* messages waiting for room */
	uint64_t ends;	    /* times its readers were moved off it */
	uint64_t returns;   /* subscriptions given it back after */
	uint64_t abandoned; /* logs retired because a reader did not read to the END in time */
};
void pubd_ipc_group_log_info(const struct pubd_group *g, struct pubd_group_log_info *info);
/* n messages meant for s were dropped before they reached its queue (the
 * engine had no memory to keep them): counted as the server counts its own
 * (subscriber, client, group's subscribers, the dropped counter). */
void pubd_ipc_sub_dropped(struct pubd_ipc *srv, struct pubd_sub *s, enum pub_drop_reason r, uint64_t n);
/* Would a message of len bytes fit s's queue now (no slow-subscriber
 * policy needed)? True for a subscriber being closed (its deliveries are
 * counted as sub_disconnect at once). */
bool pubd_ipc_sub_has_room(const struct pubd_sub *s, size_t len);
/* What s's subscriber has waiting in its queue (messages and their bytes,
 * all its subscriptions together) and has taken so far (messages written
 * out to it), for flow control; closing: being disconnected. */
struct pubd_sub_queue {
	uint32_t msgs;
	uint64_t bytes;
	uint64_t taken;
	bool closing;
};
void pubd_ipc_sub_queue(const struct pubd_sub *s, struct pubd_sub_queue *q);
/*
 * A message of bytes entered the transmit queue: held against
 * limits.client_buffer_budget until it leaves, so that what waits for the
 * fabric is bounded with everything else pubd holds for clients (without
 * it, one publisher could pin TX_PENDING_HIGH messages of
 * limits.max_message_size: 4 GiB by default). Always taken, even over the
 * budget: the message was read already; reading waits instead.
 */
void pubd_ipc_tx_hold(struct pubd_ipc *srv, size_t bytes);
/* n messages of bytes (all told) left the transmit queue; origin (or NULL
 * once it has gone) owned them. */
void pubd_ipc_tx_done(struct pubd_ipc *srv, struct pubd_client *origin, size_t bytes, uint32_t n);
/* Close clients whose disconnect grace period has passed (called every second). */
void pubd_ipc_tick(struct pubd_ipc *srv, uint64_t now_ns);
/* Tell every client the daemon is stopping, flush what we can, close them. */
void pubd_ipc_shutdown(struct pubd_ipc *srv);
/* A group is going away: drop its subscriptions (clients are told: removed,
 * or remade, when a group of that name stays, for them to subscribe again). */
void pubd_ipc_group_removed(struct pubd_ipc *srv, struct pubd_group *g, bool remade);
/* A reload keeps the group and is about to give it its new config next:
 * when that changes its ACLs, what local publishers wrote to it until now
 * is read under the ACLs it was written under (its direct logs' readers
 * may have it already). */
void pubd_ipc_acl_changing(struct pubd_ipc *srv, struct pubd_group *g, const struct pubd_group_config *next);
/* A reload kept the group, with g->cfg its new config and was its config
 * before (still valid for the call): end the subscriptions and publishing
 * its new ACLs no longer allow (clients are told, counted acl_revoked),
 * and retire the shared-memory logs that someone who had them may no
 * longer read or write. */
void pubd_ipc_acl_changed(struct pubd_ipc *srv, struct pubd_group *g, const struct pubd_group_config *was);
/* The group's fabric receives now (or gave up): answer the SUBSCRIBEs that
 * waited for it (subscribers_changed answered 1). */
void pubd_ipc_group_listening(struct pubd_ipc *srv, struct pubd_group *g);

/* Reading the clients (queries, status): an iterator, and what one shows. */
struct pubd_client_info {
	uint32_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	const char *name; /* from its HELLO: client-supplied text */
	uint64_t connected_ns;
	uint64_t published, delivered;
	const struct pubd_drops *drops;
	uint32_t queued; /* deliveries held for it: its queue and its group logs' waits */
	bool paused;
	uint32_t publish_log; /* its shared-memory logs' ring bytes; 0: the socket */
	uint32_t deliver_log;
	uint32_t direct_logs;	 /* direct logs it writes (the direct path) */
	bool group_log_withheld; /* it did not read to a group log's END in time */
	struct pubd_sub *const *subs;
	unsigned nsubs;
	const struct pubd_pubstat *pubs; /* per group it published to */
	unsigned npubs;
};
const struct pubd_client *pubd_ipc_clients_first(const struct pubd_ipc *srv);
const struct pubd_client *pubd_ipc_clients_next(const struct pubd_client *c);
void pubd_ipc_client_info(const struct pubd_client *c, struct pubd_client_info *info);
/* The direct logs of local publishers this subscription reads straight
 * (server/direct.c): their messages never pass through its queue. */
unsigned pubd_ipc_sub_direct_logs(const struct pubd_sub *s);
/* Deliveries queued for this subscription and not yet written (its
 * client's queue, and what waits for room in the group log it reads). */
unsigned pubd_ipc_queued_for(const struct pubd_sub *s);
/* Listening (for readiness), and where (NULL: on systemd's socket). */
bool pubd_ipc_listening(const struct pubd_ipc *srv);
const char *pubd_ipc_path(const struct pubd_ipc *srv);
/* The path of the socket systemd passed ("" when it has none); NULL when
 * pubd made its own. */
const char *pubd_ipc_passed_path(const struct pubd_ipc *srv);
/* daemon.socket_mode changed at a reload: the socket's permission bits follow
 * (who may connect from now on; connected clients stay, and the group ACLs
 * decide what they may do). 0, or -errno: -ENOTSUP when systemd passed the
 * socket (its unit's SocketMode= applies), -ESTALE when the file at the path
 * is no longer the socket this pubd bound. */
int pubd_ipc_apply_socket_mode(struct pubd_ipc *srv);
/* daemon.shm_direct or limits.slow_subscriber changed at a reload: every
 * direct log is retired (server/direct.c). */
void pubd_ipc_direct_reconfigured(struct pubd_ipc *srv);

#endif
