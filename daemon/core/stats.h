/* SPDX-License-Identifier: MIT */
/*
 * Counters: one enum with names beside it, so `pubctl status`, the JSON
 * output and the tests all read the same table. Add new counters before
 * PUBD_CTR__COUNT; names are part of the stats interface.
 *
 * Drops are counted per reason (common/pub_reasons.h) at three scopes:
 * per group, per remote source stream, per local client.
 */
#ifndef PUBD_STATS_H
#define PUBD_STATS_H

#include <stdint.h>

#include "pub_reasons.h"
#include "keyed_hash.h"

/* X(id, name, help) */
#define PUBD_COUNTERS(X)                                                                                              \
	X(RX_DATAGRAMS, "rx_datagrams", "datagrams received from the fabric")                                         \
	X(RX_BYTES, "rx_bytes", "bytes received from the fabric")                                                     \
	X(RX_SELF, "rx_self", "own datagrams looped back by the fabric, discarded")                                   \
	X(RX_FOREIGN, "rx_foreign_group", "datagrams for a group id not configured here")                             \
	X(RX_UNJOINED, "rx_unjoined", "datagrams not sent to a group address joined here, discarded")                 \
	X(RX_HEARTBEATS, "rx_heartbeats", "heartbeats received")                                                      \
	X(RX_MALFORMED, "rx_malformed", "datagrams that failed the header checks")                                    \
	X(SOURCES_EVICTED, "sources_evicted",                                                                         \
	  "per-source statistics entries evicted for limits.max_sources (counts kept in the evicted row)")            \
	X(TX_DATAGRAMS, "tx_datagrams", "datagrams sent")                                                             \
	X(TX_BYTES, "tx_bytes", "bytes sent")                                                                         \
	X(TX_HEARTBEATS, "tx_heartbeats", "heartbeats sent")                                                          \
	X(TX_STALLS, "tx_stalls", "times the fabric ran out of send credits (back-pressure)")                         \
	X(MSG_PUBLISHED, "published", "messages published by local clients")                                          \
	X(MSG_RECEIVED, "received", "messages reassembled from remote sources")                                       \
	X(MSG_DELIVERED, "delivered", "messages written to local subscribers")                                        \
	X(MSG_DROPPED, "dropped", "messages dropped, all reasons")                                                    \
	X(CLIENTS_ACCEPTED, "clients_accepted", "client connections accepted")                                        \
	X(CLIENTS_REJECTED, "clients_protocol_errors", "clients disconnected for malformed frames")                   \
	X(RELOADS, "reloads", "configuration reloads applied")                                                        \
	X(RELOAD_FAILURES, "reload_failures", "reloads rejected because the new config had errors")                   \
	X(CLIENTS_REFUSED, "clients_refused", "connections closed at once: limits.max_clients reached or out of fds") \
	X(ACCEPT_ERRORS, "accept_errors", "failed accept() calls (fd limit, memory); pubd backs off")                 \
	X(BUDGET_WAITS, "client_budget_waits", "times a client was paused: limits.client_buffer_budget used up")      \
	X(ACL_REVOKED, "acl_revoked", "subscriptions and publishers ended at reload by a changed ACL")                \
	X(PUBLOG_LENT, "publog_lent", "messages published straight from a client's publish log, not copied in")       \
	X(PUBLOG_LENT_COPIED, "publog_lent_copied",                                                                   \
	  "of those, copied after all: still held at the end of a loop turn (transmit backlog, slow subscriber)")     \
	X(TX_BATCHES, "tx_batches", "datagrams sent carrying several small messages (fabric.batch)")                  \
	X(TX_BATCHED, "tx_batched_msgs", "messages sent in those datagrams")                                          \
	X(RX_BATCHES, "rx_batches", "datagrams received carrying several small messages")                             \
	X(RX_WRONG_SENDER, "rx_wrong_sender",                                                                         \
	  "datagrams naming a source from an address other than the one it is live at, discarded")                    \
	X(REPAIR_TOKEN_REFUSED, "repair_token_refused",                                                               \
	  "heartbeats with a repair token other than the source's live one (ignored)")                                \
	X(ORDER_OVERFLOWS, "order_overflows",                                                                         \
	  "repair groups: held streams let go out of order over the budget, messages not held (max_sources)")         \
	X(DIRECT_OPENED, "direct_logs_opened", "direct logs made for local publishers (the direct path)")             \
	X(DIRECT_RETIRED, "direct_logs_retired",                                                                      \
	  "direct logs retired: their publisher left, or a reload changed who may read them")                         \
	X(DIRECT_DELIVERED, "direct_delivered",                                                                       \
	  "deliveries local subscribers read straight from a publisher's direct log (in delivered too)")              \
	X(DIRECT_LOST, "direct_lost",                                                                                 \
	  "of those, messages a publisher wrote over before its subscriber read them (in dropped too: sub_overflow)") \
	X(CLIENTS_HELLO_TIMEOUT, "clients_hello_timeouts",                                                            \
	  "connections closed for not completing HELLO within limits.hello_timeout_ms")                               \
	X(CLIENTS_REFUSED_PER_UID, "clients_refused_per_uid",                                                         \
	  "connections closed at once: their uid held limits.max_clients_per_uid (not in clients_refused)")

enum pubd_counter {
#define PUBD_X_ENUM(id, name, help) PUBD_CTR_##id,
	PUBD_COUNTERS(PUBD_X_ENUM)
#undef PUBD_X_ENUM
		PUBD_CTR__COUNT
};

const char *pubd_counter_name(unsigned c);
/* The counter's one-line description; NULL for a name that is not one. */
const char *pubd_counter_help_by_name(const char *name);

/* Drops by reason, with a cached total of MSG-kind drops. */
struct pubd_drops {
	uint64_t by_reason[PUB_DROP__COUNT];
};

static inline void pubd_drops_add(struct pubd_drops *d, enum pub_drop_reason r, uint64_t n)
{
	d->by_reason[r] += n;
}

uint64_t pubd_drops_msg_total(const struct pubd_drops *d);

static inline void pubd_drops_merge(struct pubd_drops *into, const struct pubd_drops *from)
{
	unsigned r;

	for (r = 0; r < PUB_DROP__COUNT; r++)
		into->by_reason[r] += from->by_reason[r];
}

/*
 * Per remote stream (source, group) statistics, kept in a hash map bounded
 * by max (limits.max_sources): source ids come from datagrams, so anyone on
 * the fabric can invent them. When a new entry finds the map full, one goes:
 * first the least recently heard if it has been idle longer than idle_ns,
 * else the least recently heard of those that never delivered a message
 * (new, unproven: what a flood of forged ids is made of), else the least
 * recently heard of all. An evicted entry's counts are added to `evicted`,
 * so the per-source rows plus that one still sum to the totals.
 */
struct pubd_source_stats {
	uint64_t source_id;
	uint64_t group_id;
	uint64_t delivered; /* messages reassembled */
	uint64_t bytes;
	uint64_t first_seen_ns, last_seen_ns;
	struct pubd_drops drops;
	/* loss repair: where its NAKs go (the fabric's address of the sender,
	 * PUBD_FABRIC_PEER_MAX bytes at most; len 0: unknown), NAKs sent to it
	 * and its messages that arrived after a NAK asked for them */
	uint8_t peer[32];
	uint32_t peer_len;
	uint64_t repair_token;	  /* from its heartbeats (wire_ctl.h); 0: none yet, no NAK */
	uint64_t nak_cookie;	  /* our address's cookie it gave us (wire_ctl.h); 0: none yet */
	uint64_t cookie_asked_ns; /* when our first NAK without it went (repair_rx.c) */
	/* When the peer address and the token were last heard: another one
	 * replaces them only once they have been silent a while (rx.c,
	 * repair_rx.c), so a forger cannot take a live stream's over. */
	uint64_t peer_heard_ns, token_heard_ns;
	uint64_t naks_sent;
	uint64_t repaired;
	/* Where its stream had got to: one past the last message delivered,
	 * or reassembly's next_seq when it let the stream go because the
	 * group stopped receiving. pubctl sources shows it while there is no
	 * stream. */
	uint64_t next_seq_kept;
	/* on the map's unproven (delivered == 0) or proven list, least
	 * recently heard first */
	struct pubd_source_stats *prev, *next;
};

struct pubd_source_lru {
	struct pubd_source_stats *head, *tail;
};

/* What evicted entries had counted, all groups together. */
struct pubd_source_evicted {
	uint64_t sources; /* entries evicted */
	uint64_t delivered;
	uint64_t bytes;
	struct pubd_drops drops;
};

struct pubd_source_map {
	struct pubd_source_stats **slots;
	uint32_t cap, n;
	uint32_t max;	  /* entries kept; 0 means PUBD_SOURCE_MAX_DEFAULT */
	uint64_t idle_ns; /* idle longer than this: evicted first; 0 means the default */
	struct pubd_source_lru unproven, proven;
	struct pubd_source_evicted evicted;
	/* The entry found last: messages come in runs of one source, and it
	 * spares the hash and probe (NULL when it went). */
	struct pubd_source_stats *hot;
	/* The hash's secret: sources are ids a remote sender chooses
	 * (keyed_hash.h). Set before the first entry; pubd draws it. */
	struct pubd_hash_key key;
};

#define PUBD_SOURCE_MAX_DEFAULT	    4096u
#define PUBD_SOURCE_IDLE_NS_DEFAULT (30ull * 1000 * 1000 * 1000)

/* pubd_source_map_get past its first test: the hash, the eviction order. */
struct pubd_source_stats *pubd_source_map_get_slow(struct pubd_source_map *m, uint64_t source, uint64_t group,
						   uint64_t now_ns);
/* Find or create, and mark as heard at now_ns (it moves to the back of the
 * eviction order). NULL only on allocation failure. The entry found last,
 * heard at now_ns already, is all the full lookup would give and it would
 * change nothing: inline, as the receive path asks for it twice a datagram
 * with the same now_ns (the sender's check, then the count). */
static inline struct pubd_source_stats *pubd_source_map_get(struct pubd_source_map *m, uint64_t source, uint64_t group,
							    uint64_t now_ns)
{
	struct pubd_source_stats *s = m->hot;

	if (s && s->source_id == source && s->group_id == group && s->last_seen_ns == now_ns)
		return s;
	return pubd_source_map_get_slow(m, source, group, now_ns);
}
/* Find without creating or marking heard; NULL when unknown. */
struct pubd_source_stats *pubd_source_map_find(const struct pubd_source_map *m, uint64_t source, uint64_t group);
/* Count one message delivered from s (which makes it established). */
void pubd_source_map_delivered(struct pubd_source_map *m, struct pubd_source_stats *s, uint64_t bytes);
/* n messages of bytes in all, at once. */
void pubd_source_map_delivered_n(struct pubd_source_map *m, struct pubd_source_stats *s, uint64_t n, uint64_t bytes);
void pubd_source_map_free(struct pubd_source_map *m);
/* Remove every entry of a group (the group was removed by a reload). */
void pubd_source_map_forget_group(struct pubd_source_map *m, uint64_t group);

#endif
