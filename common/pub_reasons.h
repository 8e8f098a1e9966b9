/* SPDX-License-Identifier: MIT */
/*
 * The one table of reasons a message or datagram was not delivered.
 *
 * Shared by pubd (counters), the protocol (stats tables), libpub and pubctl,
 * so every place names a drop the same way. Add new reasons before the last
 * entry's sentinel; never renumber: the numbers travel in stats replies.
 *
 * kind: MSG reasons count messages and take part in the accounting identity
 * published == delivered + sum(MSG drops). DGRAM reasons count datagrams that
 * were discarded without losing a message (a duplicate fragment, a fragment
 * of a message already resolved) or that cannot be tied to one (malformed).
 */
#ifndef PUB_REASONS_H
#define PUB_REASONS_H

#define PUB_DROP_KIND_MSG   0
#define PUB_DROP_KIND_DGRAM 1

/* X(id, name, kind, help) */
#define PUB_DROP_REASONS(X)                                                                                     \
	X(SEQ_GAP, "seq_gap", PUB_DROP_KIND_MSG,                                                                \
	  "a source's message never arrived (hole in its sequence numbers): fabric loss; check port counters")  \
	X(REASM_TIMEOUT, "reasm_timeout", PUB_DROP_KIND_MSG,                                                    \
	  "a fragmented message lost a fragment and did not complete within limits.reassembly_timeout_ms")      \
	X(REASM_BUDGET, "reasm_budget", PUB_DROP_KIND_MSG,                                                      \
	  "partial messages exceeded limits.reassembly_budget; the oldest was evicted")                         \
	X(REASM_INFLIGHT, "reasm_inflight", PUB_DROP_KIND_MSG,                                                  \
	  "one source had too many partial messages at once; the oldest was evicted")                           \
	X(TOO_LARGE, "too_large", PUB_DROP_KIND_MSG, "message larger than limits.max_message_size")             \
	X(SUB_OVERFLOW, "sub_overflow", PUB_DROP_KIND_MSG,                                                      \
	  "a slow local subscriber's queue (limits.subscriber_queue) was full")                                 \
	X(SUB_DISCONNECT, "sub_disconnect", PUB_DROP_KIND_MSG,                                                  \
	  "messages queued for a subscriber that was disconnected (slow_subscriber: disconnect, or it left)")   \
	X(ACL_DENIED, "acl_denied", PUB_DROP_KIND_MSG, "the client's uid/gid may not publish to the group")     \
	X(NO_GROUP, "unknown_group", PUB_DROP_KIND_MSG, "the message named a group pubd is not configured for") \
	X(MTU_EXCEEDED, "mtu_exceeded", PUB_DROP_KIND_MSG,                                                      \
	  "a raw-group message larger than the fabric MTU (raw groups cannot fragment)")                        \
	X(FABRIC_ERROR, "fabric_error", PUB_DROP_KIND_MSG, "the fabric refused or failed to send")              \
	X(MALFORMED, "malformed", PUB_DROP_KIND_DGRAM,                                                          \
	  "a datagram failed the header checks (wrong magic/version/lengths)")                                  \
	X(DUPLICATE, "duplicate", PUB_DROP_KIND_DGRAM, "a fragment already received for a partial message")     \
	X(STALE, "stale", PUB_DROP_KIND_DGRAM,                                                                  \
	  "a fragment of a message already delivered or already counted as dropped")                            \
	X(CLIENT_BUDGET, "client_budget", PUB_DROP_KIND_MSG,                                                    \
	  "a published message larger than limits.client_buffer_budget could ever hold")                        \
	X(CLIENT_GONE, "client_gone", PUB_DROP_KIND_MSG,                                                        \
	  "a publisher's frames left unread when pubd stopped or the client broke the protocol")                \
	X(SHUTDOWN, "shutdown", PUB_DROP_KIND_MSG,                                                              \
	  "accepted messages still waiting for the fabric when pubd stopped (after waiting up to 2 s)")         \
	X(UNRECOVERED, "unrecovered", PUB_DROP_KIND_MSG,                                                        \
	  "on a repair group: a lost message that NAKs did not get back (left the source's window, or retries " \
	  "ran out); replaces seq_gap and reasm_timeout there")                                                 \
	X(GROUP_RELOADED, "group_reloaded", PUB_DROP_KIND_MSG,                                                  \
	  "accepted messages still waiting for the fabric when a reload removed their group or made it anew")

enum pub_drop_reason {
#define PUB_X_ENUM(id, name, kind, help) PUB_DROP_##id,
	PUB_DROP_REASONS(PUB_X_ENUM)
#undef PUB_X_ENUM
		PUB_DROP__COUNT
};

/* Name, kind and help of a reason; out-of-range values give "unknown". */
const char *pub_drop_reason_name(unsigned reason);
int pub_drop_reason_kind(unsigned reason);
const char *pub_drop_reason_help(unsigned reason);

#endif
