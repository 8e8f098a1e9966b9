/* SPDX-License-Identifier: MIT */
/*
 * libpub: publish and subscribe through the local pubd daemon.
 *
 * An application opens a handle to pubd's Unix socket with pub_connect(),
 * publishes messages (up to the daemon's max_message_size) to named groups
 * with pub_publish(), subscribes with pub_subscribe() and receives with
 * pub_recv(), or from its own poll/epoll loop through pub_fd().
 *
 * Errors: every function that can fail returns 0 (or a count) on success
 * and a negative error code on failure: either -errno (-ENOTCONN, -EAGAIN,
 * -ETIMEDOUT, ...) or -PUB_E... for what the daemon refused (-PUB_EACL,
 * -PUB_ENOGROUP, ...). pub_strerror() names both kinds; pub_errmsg() gives
 * the handle's last error with its context ("subscribe 'prices': ..."),
 * including the daemon's own words. libpub never prints and never exits.
 *
 * Reconnect: when pubd goes away (restart, upgrade), the handle reconnects
 * by itself with a bounded backoff (10 ms doubling to 1 s by default) and
 * subscribes again to every group it was subscribed to; the application
 * does nothing. Messages are not queued across a restart: what was in
 * flight is lost, and a publish while pubd is down fails with -ENOTCONN.
 * When pubd went without a word (killed, crashed), that -ENOTCONN's
 * pub_errmsg() says up to how many messages written to the shared-memory
 * publish log or direct logs it may not have read (nobody else can count
 * them). A handle finds out within 16 publishes, whether it subscribes or
 * not (a subscriber's pub_recv finds out at once).
 * The same when a reload makes a subscribed group anew (its address, scope
 * or mode changed): pub_recv() subscribes to it again.
 *
 * fork(): a handle belongs to the process that connected it. A child must
 * not use one it inherited; it may pub_close() it (that closes the child's
 * copies only: the parent's connection and logs go on).
 *
 * Threads: a handle is not thread-safe. Use one handle per thread (each is
 * its own connection to pubd), or serialise every call on a handle with
 * your own lock. Different handles share nothing. SIGPIPE is never raised
 * by libpub (it sends with MSG_NOSIGNAL).
 *
 * Example: a complete publisher and subscriber are in libpub/examples/
 * (pub_example_publisher.c, pub_example_subscriber.c), compiled with the
 * library so they stay correct.
 */
#ifndef PUB_H
#define PUB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PUB_VERSION_MAJOR  0
#define PUB_VERSION_MINOR  1
#define PUB_VERSION_PATCH  0
#define PUB_VERSION_STRING "0.1.0"

/* Where pub_connect() looks when socket_path is NULL and $PUBD_SOCKET is unset. */
#define PUB_DEFAULT_SOCKET "/run/pubd/pubd.sock"
#define PUB_SOCKET_ENV	   "PUBD_SOCKET"

/* Longest group name, in bytes. */
#define PUB_GROUP_MAX 255

/*
 * Errors the daemon reports, returned negated (-PUB_EACL). They sit above
 * every errno value, so one int carries either kind.
 */
enum pub_error {
	PUB_EBASE = 2000,
	PUB_EPROTO = 2001,    /* malformed frame or protocol violation */
	PUB_EVERSION = 2002,  /* pubd does not speak this library's protocol version */
	PUB_EACL = 2003,      /* the group's publish/subscribe ACL denies this uid/gid */
	PUB_ENOGROUP = 2004,  /* no such group in pubd's configuration */
	PUB_ETOOLARGE = 2005, /* message above max_message_size (or the MTU on a raw group) */
	PUB_ESTATE = 2006,    /* request not valid now (e.g. unsubscribe without subscribe) */
	PUB_EINTERNAL = 2007, /* pubd failed (out of memory, fabric down) */
	PUB_EBADQUERY = 2008, /* pubd does not know this query */
	PUB_ECONFIG = 2009,   /* reload rejected: the new config has errors (partly applied: PUB_EPARTIAL) */
	PUB_ESLOW = 2010,     /* disconnected as a slow subscriber (then reconnected) */
	PUB_ESHUTDOWN = 2011, /* pubd is stopping */
	PUB_EREMADE = 2012,   /* a group was made anew by a reload; libpub subscribes again by itself */
	PUB_EPARTIAL = 2013,  /* reload applied, but not all of it (pub_errmsg says what was not) */
	PUB_EBUSY = 2014,     /* pubd refuses connections for now (limits.max_clients, or out of fds) */
	PUB_EUNKNOWN = 2099,  /* an error code this library does not know */
};

/* Exported from libpub.so (which is built with hidden visibility). */
#define PUB_API __attribute__((visibility("default")))

/* Opaque handle: one connection to pubd. */
typedef struct pub_client pub_client_t;

/* pub_options.flags */
#define PUB_OPT_NO_RECONNECT 0x1 /* a dropped connection stays down: calls fail with -ENOTCONN */
#define PUB_OPT_BUSY_POLL                                                          \
	0x2 /* pub_recv spins on the shared-memory deliver log instead of sleeping \
	     * (a core at 100% for the lowest latency; also $PUBD_BUSY_POLL=1) */
#define PUB_BUSY_POLL_ENV "PUBD_BUSY_POLL"

/*
 * Connection options. Zero means "the default" for every field, so
 * struct pub_options o = PUB_OPTIONS_INIT; then set what you need.
 */
struct pub_options {
	size_t struct_size;	 /* sizeof(struct pub_options): lets the struct grow compatibly */
	const char *client_name; /* shown by `pubctl clients`; default: the program's name */
	int connect_timeout_ms;	 /* pub_connect: keep trying this long while pubd is not up yet
				  * (0: one attempt, fail at once; -1: forever); a full listen
				  * backlog (pubd up, busy) is retried for request_timeout_ms */
	int request_timeout_ms;	 /* wait for a reply (subscribe, query, PUB_SYNC); 0: 10000; -1: forever */
	int reconnect_min_ms;	 /* first reconnect backoff; 0: 10 */
	int reconnect_max_ms;	 /* backoff cap; 0: 1000 */
	unsigned int flags;	 /* PUB_OPT_* */
	int transport;		 /* PUB_TRANSPORT_*: how messages travel to pubd */
	int recv_linger_us;	 /* pub_recv, having found nothing, looks again (yielding the CPU
				  * between looks) this many microseconds before it sleeps: an
				  * answer that comes meanwhile costs no wakeup. 0: $PUBD_RECV_LINGER_US
				  * if set, else sleep at once; -1: sleep at once; at most 1000000 */
};
#define PUB_RECV_LINGER_ENV    "PUBD_RECV_LINGER_US"
#define PUB_RECV_LINGER_MAX_US 1000000

/* pub_options.transport */
#define PUB_TRANSPORT_DEFAULT 0 /* $PUBD_TRANSPORT ("shm" or "socket") if set, else shared memory */
#define PUB_TRANSPORT_SHM     1 /* a shared-memory publish log, where pubd offers one (else the socket) */
#define PUB_TRANSPORT_SOCKET  2 /* every message through the Unix socket */
#define PUB_TRANSPORT_ENV     "PUBD_TRANSPORT"
/* With shared memory, a publisher writes a group's messages where the
 * group's local subscribers read them (the direct path: no hop through
 * pubd), where pubd offers it (daemon.shm_direct); $PUBD_DIRECT=off asks
 * for the logs through pubd only. */
#define PUB_DIRECT_ENV "PUBD_DIRECT"
#define PUB_OPTIONS_INIT                                  \
	{                                                 \
		.struct_size = sizeof(struct pub_options) \
	}

/* What pubd told this handle when it connected (its WELCOME). */
struct pub_info {
	uint32_t max_message; /* largest message pubd accepts, bytes */
	uint32_t mtu;	      /* fabric MTU: messages above it are fragmented on the wire */
	uint32_t client_id;   /* this connection's id in pubd (pubctl clients) */
	uint64_t source_id;   /* pubd's source id: the `source` of messages published here that
			       * pubd carries (remote subscribers; the direct path's have their own) */
	char daemon_version[256];
	char fabric[256];    /* "verbs" or "udp" */
	uint64_t reconnects; /* how often this handle has reconnected */
	int connected;	     /* 1 when connected now */
	uint32_t reserved[15];
};

/* A received message. Pointers stay valid until the next pub_recv() or pub_close(). */
struct pub_message {
	const char *group; /* NUL-terminated */
	uint64_t source;   /* the publishing daemon's source id; a local publisher's on the
			    * direct path: one of that publisher's own, per group (PUB_DIRECT_ENV) */
	uint64_t seq;	   /* per source and group, from 0 */
	const void *data;
	size_t len;
};

/* pub_publish() flags */
#define PUB_NONBLOCK 0x1 /* do not wait for socket room: -EAGAIN instead */
#define PUB_SYNC     0x2 /* wait until pubd accepted or refused this message (one round trip) */
#define PUB_MORE     0x4 /* more messages follow at once: this one may wait in the handle */

/* Queries (pubctl's view of the daemon). */
enum pub_query_kind {
	PUB_Q_STATUS = 1,  /* tables: status, fabric, counters */
	PUB_Q_GROUPS = 2,  /* table: groups */
	PUB_Q_GROUP = 3,   /* arg: group name; tables: group, subscribers, publishers, sources */
	PUB_Q_CLIENTS = 4, /* table: clients */
	PUB_Q_DROPS = 5,   /* table: drops */
	PUB_Q_SOURCES = 6, /* table: sources */
	PUB_Q_RELOAD = 7,  /* re-read pubd's config; no tables; -PUB_ECONFIG lists the errors,
			    * -PUB_EPARTIAL what of an applied config could not be */
	PUB_Q_METRICS = 8, /* table: metrics, one column "text": the Prometheus text, in pieces to concatenate */
};

enum pub_value_type {
	PUB_VALUE_U64 = 1,
	PUB_VALUE_I64 = 2,
	PUB_VALUE_STR = 3,
};

struct pub_column {
	const char *name;
	int type; /* enum pub_value_type */
};

struct pub_value {
	int type; /* enum pub_value_type, same as its column */
	uint64_t u;
	int64_t i;
	const char *s; /* NUL-terminated (PUB_VALUE_STR) */
	size_t len;    /* of s */
};

/* One table of a query reply; valid only during the callback. */
struct pub_table {
	const char *name;
	unsigned int ncols;
	const struct pub_column *cols;
	size_t nrows;
	const struct pub_value *cells; /* nrows * ncols, row by row */
};

/* Called once per table; return 0 to go on, anything else to stop (pub_query returns it). */
typedef int (*pub_table_cb)(const struct pub_table *t, void *arg);

/**
 * pub_version() - the library's version at run time.
 * @return "MAJOR.MINOR.PATCH" of the loaded library (compare PUB_VERSION_STRING).
 */
PUB_API const char *pub_version(void);

/**
 * pub_connect() - open a handle: connect to pubd, say HELLO, wait for WELCOME.
 * @param out         receives the handle; set to NULL on failure.
 * @param socket_path pubd's socket; NULL: $PUBD_SOCKET, else PUB_DEFAULT_SOCKET.
 * @param opts        options, or NULL for the defaults.
 * @return 0, or -errno: -ENOENT / -ECONNREFUSED when pubd is not there
 *         (after connect_timeout_ms of retrying), -ETIMEDOUT when it does not
 *         answer, -PUB_EVERSION, -ENOMEM, -EINVAL, -ENAMETOOLONG (path).
 *         No handle exists on failure, so pub_errmsg(NULL) tells why.
 */
PUB_API int pub_connect(pub_client_t **out, const char *socket_path, const struct pub_options *opts);

/**
 * pub_close() - close the connection and free the handle. NULL is a no-op.
 * @param c handle.
 */
PUB_API void pub_close(pub_client_t *c);

/**
 * pub_subscribe() - receive the messages of a group; waits for pubd's answer.
 * Subscribing twice is harmless. The subscription is renewed by itself
 * after a reconnect.
 * @param c     handle.
 * @param group group name (1..PUB_GROUP_MAX bytes).
 * @return 0, -PUB_EACL, -PUB_ENOGROUP, -ENOTCONN, -ETIMEDOUT, -EINVAL, -ENOMEM.
 */
PUB_API int pub_subscribe(pub_client_t *c, const char *group);

/**
 * pub_unsubscribe() - stop receiving a group; waits for pubd's answer.
 * Messages already on their way may still be returned by pub_recv().
 * @param c     handle.
 * @param group group name.
 * @return 0, -PUB_ESTATE (not subscribed), -PUB_ENOGROUP, -ENOTCONN, -ETIMEDOUT.
 */
PUB_API int pub_unsubscribe(pub_client_t *c, const char *group);

/**
 * pub_publish() - publish one message to a group.
 *
 * With the shared-memory transport (the default, where pubd offers it) the
 * message is copied into the handle's publish log and pubd is woken only
 * if it sleeps: no system call per message. With the socket transport it
 * is sent straight from @data (no copy). Without flags it waits until the
 * whole message is in the log (or written to the socket), but not for
 * pubd's answer: an error pubd reports later (an ACL denial, an unknown
 * group) is kept and returned once by a later pub_publish() (a handle
 * without subscriptions looks for such errors every 16 publishes, so the
 * fast path costs no extra system call per message), by pub_flush() or by
 * pub_recv().
 * PUB_NONBLOCK: if the log (or the socket) has no room, return -EAGAIN
 * having written nothing of this message (a message larger than half the
 * log waits for room like a blocking one); if the socket took part of it,
 * the rest is kept inside the handle and the call succeeds (the next call
 * writes it first).
 * PUB_SYNC: also wait for pubd to accept or refuse this message, so its
 * error comes back here. pubd answers in order, so this also confirms every
 * earlier message: afterwards pub_flush(c, 0) returns 0 or the error pubd
 * reported about one of them.
 * PUB_MORE: more messages follow right away. With the publish log the
 * message is written but pubd is not woken until the burst ends. On the
 * socket, a message of up to 8 KiB is copied into the handle instead of
 * written, and what gathered is written
 * in one go once 64 KiB wait, or by the next pub_publish() without
 * PUB_MORE, pub_flush() or pub_recv() (like MSG_MORE: one system call for
 * many small messages). Until then pubd has not seen it: end a burst with
 * a publish without PUB_MORE or with pub_flush(). pub_fd() polls writable
 * while something waits. Should the connection to pubd drop before the held
 * messages are written, they are lost and the next call returns -ENOTCONN
 * saying how many. Ignored with PUB_SYNC.
 * A negative return means this message was not published.
 *
 * @param c     handle.
 * @param group group name (1..PUB_GROUP_MAX bytes).
 * @param data  payload (may be NULL when len is 0).
 * @param len   payload length, up to pub_info.max_message.
 * @param flags 0 or PUB_NONBLOCK, PUB_SYNC, PUB_MORE or'ed.
 * @return 0, -EAGAIN (PUB_NONBLOCK), -ENOTCONN (pubd down: not queued),
 *         -PUB_ETOOLARGE, -PUB_EACL, -PUB_ENOGROUP (from pubd), -ETIMEDOUT
 *         (PUB_SYNC), -EBUSY (between pub_claim() and pub_commit()),
 *         -EINVAL.
 */
PUB_API int pub_publish(pub_client_t *c, const char *group, const void *data, size_t len, int flags);

/**
 * pub_claim() - room for a message of len bytes, to be written in place.
 * Write the message at *ptr, then publish it with pub_commit(). With the
 * shared-memory transport and a message that fits one record of the
 * log it goes to (a quarter of limits.direct_log for the group's direct
 * log, else of limits.publish_log, less the group name and a few bytes),
 * *ptr points into the log itself: the message is never copied in this process. Else
 * it points into a buffer of the handle, which pub_commit() publishes as
 * pub_publish() would. Waits for room in the log. One claim at a time, and
 * no other call on the handle until its pub_commit().
 * @param c     handle.
 * @param group group name (1..PUB_GROUP_MAX bytes).
 * @param len   the message's length, up to pub_info.max_message.
 * @param ptr   receives where to write it.
 * @return 0, -ENOTCONN, -PUB_ETOOLARGE, -EBUSY (a claim is open), -EINVAL, -ENOMEM.
 */
PUB_API int pub_claim(pub_client_t *c, const char *group, size_t len, void **ptr);

/**
 * pub_commit() - publish the message of the open pub_claim().
 * @param c     handle.
 * @param flags 0 or PUB_SYNC, PUB_MORE (as pub_publish; PUB_NONBLOCK is
 *              ignored: the room was taken at the claim).
 * @return as pub_publish(); -EINVAL without an open claim.
 */
PUB_API int pub_commit(pub_client_t *c, int flags);

/**
 * pub_flush() - write out what a PUB_NONBLOCK or PUB_MORE publish left in the handle.
 * Returns any error pubd already reported about earlier messages. (To wait
 * for pubd to confirm, publish the last message with PUB_SYNC.)
 * @param c          handle.
 * @param timeout_ms how long to wait for socket room; -1: forever, 0: don't.
 * @return 0 when nothing is left, -EAGAIN/-ETIMEDOUT when something still
 *         is, -ENOTCONN, or a reported error (-PUB_EACL...).
 */
PUB_API int pub_flush(pub_client_t *c, int timeout_ms);

/**
 * pub_recv() - wait for the next message of a subscribed group.
 * While pubd is down it keeps reconnecting (and resubscribing) until the
 * timeout. An error returned here does not close the handle: calling again
 * goes on (for example after -PUB_ESLOW, when pubd dropped this slow
 * subscriber, the handle has already reconnected; after -PUB_ENOGROUP a
 * group left pubd's config and that subscription is gone).
 * @param c          handle.
 * @param m          receives the message; valid until the next pub_recv()/pub_close().
 * @param timeout_ms -1: wait forever; 0: only what is already there.
 * @return 1 with a message, 0 on timeout, or a negative error: an error
 *         pubd reported (see pub_publish), -ENOTCONN when reconnecting is
 *         off (PUB_OPT_NO_RECONNECT) and the connection dropped, -PUB_EPROTO,
 *         -ENOMEM.
 */
PUB_API int pub_recv(pub_client_t *c, struct pub_message *m, int timeout_ms);

/**
 * pub_fd() - a file descriptor for the caller's poll/epoll loop.
 * It is readable whenever pub_recv() may have something to do: a message,
 * an error, a reconnect attempt that is due, or output to flush. Call
 * pub_recv(c, &m, 0) until it returns 0, then wait again. The descriptor
 * (an epoll instance inside the handle) stays the same for the life of the
 * handle, across reconnects, so it can stay registered in your epoll set.
 * Do not read it or close it.
 * @param c handle.
 * @return the descriptor (>= 0), or -EINVAL for a NULL handle.
 */
PUB_API int pub_fd(pub_client_t *c);

/**
 * pub_info() - what pubd told this handle when it (last) connected.
 * @param c    handle.
 * @param info filled in.
 * @return 0, or -EINVAL.
 */
PUB_API int pub_info(pub_client_t *c, struct pub_info *info);

/**
 * pub_query() - ask pubd for one of its tables (what pubctl shows).
 * Calls @cb once per table of the reply, in order.
 * @param c   handle.
 * @param kind enum pub_query_kind.
 * @param arg  the group name for PUB_Q_GROUP; NULL otherwise.
 * @param cb   called per table (may be NULL, e.g. for PUB_Q_RELOAD).
 * @param cb_arg passed to @cb.
 * @return 0, the callback's non-zero value, -PUB_EBADQUERY, -PUB_ENOGROUP,
 *         -PUB_ECONFIG (reload: pub_errmsg has the config errors),
 *         -PUB_EPARTIAL (reload applied, not all of it), -PUB_EACL,
 *         -ENOTCONN, -ETIMEDOUT, -PUB_EPROTO, -ENOMEM, -EINVAL (a bad kind,
 *         or PUB_Q_GROUP without a group name).
 */
PUB_API int pub_query(pub_client_t *c, int kind, const char *arg, pub_table_cb cb, void *cb_arg);

/**
 * pub_strerror() - name an error returned by this library.
 * @param err a return value (negative) or its absolute value.
 * @return a static string; never NULL.
 */
PUB_API const char *pub_strerror(int err);

/**
 * pub_errmsg() - the last error of a handle, with context.
 * @param c handle, or NULL for the last pub_connect() failure of this thread.
 * @return a string owned by the handle (valid until its next call), "" if none.
 */
PUB_API const char *pub_errmsg(pub_client_t *c);

#ifdef __cplusplus
}
#endif

#endif
