/* SPDX-License-Identifier: MIT */
/*
 * pubd's configuration: one YAML file, read with libyaml into struct
 * pubd_config through one table of keys (type, default, range).
 *
 * Pure: pubd_config_parse takes the file's bytes and its name (for error
 * messages), touches no fd. User and group names in ACLs are resolved by the
 * caller-provided resolver, so tests need no /etc/passwd.
 *
 * config/pubd.yaml documents every key, its default and its range; the
 * table of keys in config_keys.c is the single source of both.
 */
#ifndef PUBD_CONFIG_H
#define PUBD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "linger.h"

/* The build sets it to the installed sysconfdir's pubd.yaml (daemon/CMakeLists.txt). */
#ifndef PUBD_DEFAULT_CONFIG
#define PUBD_DEFAULT_CONFIG "/etc/pubd/pubd.yaml"
#endif
#define PUBD_DEFAULT_SOCKET "/run/pubd/pubd.sock"

/* pubd_config_parse stops collecting after this many errors (and says so). */
#define PUBD_CONFIG_MAX_ERRORS 100
/* pubd_config_load refuses larger files. */
#define PUBD_CONFIG_MAX_BYTES (4u << 20)

/* fabric.rx_linger_us: auto */
#define PUBD_LINGER_AUTO UINT32_MAX

enum pubd_fabric_type { PUBD_FABRIC_AUTO = 0, PUBD_FABRIC_VERBS, PUBD_FABRIC_UDP };
/* When a group's traffic is taken from the fabric: while a local client
 * subscribes to it, or from the join on. */
enum pubd_receive_policy { PUBD_RECEIVE_ON_DEMAND = 0, PUBD_RECEIVE_ALWAYS };
enum pubd_slow_policy { PUBD_SLOW_DROP_OLDEST = 0, PUBD_SLOW_DROP_NEWEST, PUBD_SLOW_DISCONNECT };
/* syslog priorities: LOG_DEBUG 7 .. LOG_ERR 3 */

enum pubd_acl_kind { PUBD_ACL_ANY = 0, PUBD_ACL_UID, PUBD_ACL_GID };

struct pubd_acl_entry {
	enum pubd_acl_kind kind;
	uint32_t id; /* uid or gid; user:NAME / group:NAME are resolved at load */
};

struct pubd_acl {
	struct pubd_acl_entry *entries;
	size_t n;
	bool present; /* key given; absent means "any" (see config/pubd.yaml) */
};

/*
 * A group's loss repair (groups.repair): off, or NAK-based repair from a
 * window the publishing daemon keeps (daemon/core/repair_*.h).
 */
/* groups.repair.flow_control (core/flow_ctl.h) */
enum pubd_flow_control { PUBD_FLOW_NONE = 0, PUBD_FLOW_MIN = 1 };

struct pubd_repair_config {
	int on;			      /* 0: off (no window kept, gaps counted as seq_gap) */
	uint64_t window;	      /* bytes of sent messages kept per group */
	uint32_t max_age_ms;	      /* kept at least this long (within window and limits.repair_budget) */
	uint32_t nak_backoff_ms;      /* receiver: random initial back-off, 0..this */
	uint32_t nak_interval_ms;     /* receiver: a NAK is repeated this often */
	uint32_t nak_retries;	      /* receiver: NAKs sent for a gap before it is unrecovered */
	uint64_t rate;		      /* source: repair bytes per second at most; 0: no cap beyond the window */
	uint64_t peer_rate;	      /* source: repair bytes per second for one asker; 0: only rate caps it */
	int flow_control;	      /* enum pubd_flow_control: none, or the source waits for its slowest receiver */
	uint32_t receiver_timeout_ms; /* source: a receiver silent this long no longer holds it back */
};

/* groups.scope: on the fabric (the default), or on this host only. */
enum pubd_group_scope { PUBD_SCOPE_FABRIC = 0, PUBD_SCOPE_HOST = 1 };

struct pubd_group_config {
	char *name;
	int scope;			 /* enum pubd_group_scope */
	struct sockaddr_storage address; /* IPv4 or IPv6 multicast; port 0 (none on a host group) */
	socklen_t address_len;
	char *address_text; /* "host" on a host group */
	bool raw;
	uint64_t rate; /* bytes per second the publishing daemon sends at most; 0: unpaced */
	struct pubd_repair_config repair;
	struct pubd_acl publish;
	struct pubd_acl subscribe;
};

/* Every field's default is in the key table (config_keys.c), nowhere else. */
struct pubd_config {
	/* The file held no settings (nothing, only comments, or ~): every key
	 * takes its default. Fine to start with; a reload refuses it (reload.c). */
	bool empty;

	/* daemon */
	char *socket_path;
	uint32_t socket_mode; /* e.g. 0660 */
	int log_level;	      /* syslog priority: 3 err .. 7 debug */
	bool shm;	      /* clients that ask publish through a shared-memory log */
	bool shm_direct;      /* ...and local publishers write straight to local subscribers (direct logs) */

	/* fabric */
	enum pubd_fabric_type fabric_type;
	char *fabric_address; /* IP address (selects device/port or interface) or interface name; NULL: none */
	/* fabric_address parsed when it is an IP literal (port 0); len 0 when
	 * fabric_address is NULL or an interface name. */
	struct sockaddr_storage fabric_sockaddr;
	socklen_t fabric_sockaddr_len;
	uint16_t udp_port;
	uint32_t mtu; /* 0 = auto; else the largest datagram (wire header + payload), 256..65507 */
	uint32_t srq_depth;
	uint32_t srq_low_watermark;
	uint32_t send_queue_depth;
	uint32_t heartbeat_ms;
	enum pubd_receive_policy receive;
	/* 0: sleep on the CQ event at once; PUBD_LINGER_AUTO: sized at start to
	 * what a wakeup costs on this host (core/linger.h) */
	uint32_t rx_linger_us;
	/* Not a key: with rx_linger_us auto, the linger the engine sized at start
	 * (kept across reloads, as the linger is). pubd_config_linger_us(). */
	uint32_t rx_linger_auto_us;
	/* verbs: a full member this long after the last local subscriber left, then send-only */
	uint32_t sendonly_hold_ms;
	bool busy_poll; /* drain the CQ without waiting for events */
	/* Small messages queued together go out in one datagram (wire.h, BATCH);
	 * false for fleets with a pubd that does not know batches yet. */
	bool batch;

	/* limits */
	uint64_t max_message_size;
	uint32_t reassembly_timeout_ms;
	uint64_t reassembly_budget;
	uint32_t subscriber_queue; /* messages per subscriber */
	/* Bytes of deliveries queued per subscribing client. */
	uint64_t subscriber_queue_bytes;
	enum pubd_slow_policy slow_subscriber;
	uint32_t reassembly_inflight; /* partial messages per source */
	/* Bytes buffered for all clients together (receive buffers, partly read
	 * PUBLISH bodies, queued replies). */
	uint64_t client_buffer_budget;
	uint32_t max_clients; /* connections at once */
	/* Connections at once of one uid (SO_PEERCRED), counted as for
	 * max_clients; root and pubd's own user are not held to it. */
	uint32_t max_clients_per_uid;
	/* A connection that has not completed HELLO this long after it was
	 * accepted is closed: it holds one of max_clients meanwhile. */
	uint32_t hello_timeout_ms;
	uint32_t max_sources; /* (source, group) statistics entries */
	/* Bytes of a client's publish log (rounded down to a power of two),
	 * taken from client_buffer_budget while the client is connected. */
	uint64_t publish_log;
	/* Bytes of a client's deliver log, likewise. */
	uint64_t deliver_log;
	/* Bytes of each direct log (one per publisher and group on the direct
	 * path), likewise: all a subscriber reading it may fall behind by. */
	uint64_t direct_log;
	/* Bytes of a group's group log, which pubd writes once for all its
	 * local subscribers on shared memory; 0: none (each gets a copy). */
	uint64_t group_log;
	/* After an END, how long a reader may take to read up to it before
	 * pubd gives up on it (a new log for the others; none for it again). */
	uint32_t group_log_drain_ms;
	/* Bytes of sent messages kept for repair, all repair groups together. */
	uint64_t repair_budget;

	/* metrics */
	char *metrics_listen;			  /* "HOST:PORT" as written; NULL: no /metrics listener */
	struct sockaddr_storage metrics_sockaddr; /* parsed; len 0 when metrics_listen is NULL */
	socklen_t metrics_sockaddr_len;
	struct pubd_group_config *groups;
	size_t ngroups;
	/* The named groups sorted by name, for pubd_config_group's binary
	 * search (a reload looks up every running group: a linear search made
	 * that quadratic); NULL if it could not be made. */
	const struct pubd_group_config **groups_by_name;
	size_t ngroups_by_name;
};

/*
 * One error: "FILE:LINE:COL: message", where message names the key and
 * what was expected, e.g. "limits.subscriber_queue: expected an integer
 * from 1 to 1048576, got \"lots\"". Errors are sorted by place.
 */
struct pubd_config_error {
	unsigned line, column; /* 1-based; 0 when not tied to a place */
	char *message;
};

struct pubd_config_errors {
	struct pubd_config_error *v;
	size_t n;
	char *file; /* set with the first error; NULL while n == 0 */
};

/*
 * Resolves user:NAME and group:NAME; returns 0 and the id, -ENOENT when there
 * is no such name, or another -errno when the lookup itself failed. A NULL
 * resolver (or callback) makes every user:/group: entry an error.
 */
struct pubd_name_resolver {
	int (*user)(void *ctx, const char *name, uint32_t *uid);
	int (*group)(void *ctx, const char *name, uint32_t *gid);
	void *ctx;
};
/* The resolver backed by getpwnam_r/getgrnam_r (not pure; lives in daemon/sys/nss.c). */
extern const struct pubd_name_resolver pubd_nss_resolver;

/*
 * Fill *c with every default (no groups). Allocates socket_path: free with
 * pubd_config_free. Returns 0 or -ENOMEM (then *c holds nothing to free).
 */
int pubd_config_defaults(struct pubd_config *c);

/*
 * The default of one key ("limits.reassembly_budget"), from the table of
 * keys, for code that needs a default without a whole config (as the
 * reassembly limits do). Numeric, boolean and enum keys only. Returns 0,
 * -ENOENT for no such key, -EINVAL for a key of another kind.
 */
int pubd_config_key_default(const char *key, uint64_t *value);

/*
 * Parse a YAML document of len bytes. file is used only in messages.
 * Returns 0 with *c filled, or -EINVAL with every error found in *errs
 * (as many as can be found in one pass, up to PUBD_CONFIG_MAX_ERRORS) and
 * *c left freed (zeroed). -ENOMEM on allocation failure.
 * *c and *errs are overwritten, not freed first, so a reload can parse into
 * a fresh struct and swap. errs may be NULL. An empty document (or one with
 * only comments) is all defaults. On success errs->n is 0 and nothing in
 * *errs needs freeing; pubd_config_errors_free is harmless either way.
 */
int pubd_config_parse(struct pubd_config *c, const char *file, const void *yaml, size_t len,
		      const struct pubd_name_resolver *res, struct pubd_config_errors *errs);

/*
 * Read the file and parse it. An unreadable (or larger than
 * PUBD_CONFIG_MAX_BYTES) file is one error naming it, and the return is that
 * -errno (-ENOENT, -EACCES, -EFBIG, ...) instead of -EINVAL.
 */
int pubd_config_load(struct pubd_config *c, const char *path, const struct pubd_name_resolver *res,
		     struct pubd_config_errors *errs);

/* fabric.rx_linger_us in effect: the key's value, or what the engine sized
 * for auto (the linger's default until it has). */
static inline uint32_t pubd_config_linger_us(const struct pubd_config *c)
{
	if (c->rx_linger_us != PUBD_LINGER_AUTO)
		return c->rx_linger_us;
	return c->rx_linger_auto_us ? c->rx_linger_auto_us : pubd_linger_auto_us(0);
}

/* Idempotent: frees what c owns and zeroes it. */
void pubd_config_free(struct pubd_config *c);
void pubd_config_errors_free(struct pubd_config_errors *e);
/*
 * Format error i as "FILE:LINE:COL: message" ("FILE: message" when it has
 * no place) into buf. Returns what snprintf returns (the untruncated
 * length), or -EINVAL when i is out of range.
 */
int pubd_config_error_format(const struct pubd_config_errors *e, size_t i, char *buf, size_t cap);

/* Find a group by name (len bytes, no NUL needed); NULL when absent. */
const struct pubd_group_config *pubd_config_group(const struct pubd_config *c, const char *name, size_t len);

/*
 * ACL check (pure): may a peer with this uid, primary gid and supplementary
 * groups do it? An absent ACL (acl->present false, or acl NULL) allows
 * everyone; an empty list allows no one. Entries: any matches everyone;
 * uid:N matches uid; gid:N matches gid or any of the ngroups supplementary
 * groups (groups may be NULL when ngroups is 0). uid 0 is not special (say
 * uid:0 to allow root). user:/group: entries were resolved to uid/gid at load.
 */
bool pubd_acl_allows(const struct pubd_acl *acl, uint32_t uid, uint32_t gid, const uint32_t *groups, size_t ngroups);

/* The same ACL (pure): both absent, or both present with the same entries
 * in the same order. A reload uses it to tell whether who may publish or
 * subscribe can have changed at all. */
bool pubd_acl_same(const struct pubd_acl *a, const struct pubd_acl *b);

/* Names as written in the config ("udp", "drop-oldest", "warning"); "unknown" for a value out of range. */
const char *pubd_fabric_type_name(enum pubd_fabric_type t);
const char *pubd_slow_policy_name(enum pubd_slow_policy p);
const char *pubd_receive_policy_name(enum pubd_receive_policy p);
const char *pubd_log_level_name(int level);

/* What a group needs from the fabric (groups.c derives it from the ACLs). */
enum pubd_join_mode {
	PUBD_JOIN_SEND = 1, /* only publish to it (send-only join where the fabric allows) */
	PUBD_JOIN_RECV = 2, /* receive from it */
	PUBD_JOIN_BOTH = 3,
	/* With RECV: join so that receiving is possible, but do not take the
	 * group's datagrams until listen(on). pubd joins this way and listens
	 * only while a local client subscribes (fabric.receive: on-demand). */
	PUBD_JOIN_IDLE = 4,
};

#endif
