// SPDX-License-Identifier: MIT
/*
 * Error codes and their names; the library version; the handle's last
 * error (pub_errmsg) and the error pubd reported without a request, kept
 * until a call returns it.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The public codes are the protocol's codes above a base: keep them in step. */
_Static_assert(PUB_EPROTO == PUB_EBASE + PUB_ERR_PROTO, "PUB_EPROTO");
_Static_assert(PUB_EVERSION == PUB_EBASE + PUB_ERR_VERSION, "PUB_EVERSION");
_Static_assert(PUB_EACL == PUB_EBASE + PUB_ERR_ACL, "PUB_EACL");
_Static_assert(PUB_ENOGROUP == PUB_EBASE + PUB_ERR_NO_GROUP, "PUB_ENOGROUP");
_Static_assert(PUB_ETOOLARGE == PUB_EBASE + PUB_ERR_TOO_LARGE, "PUB_ETOOLARGE");
_Static_assert(PUB_ESTATE == PUB_EBASE + PUB_ERR_STATE, "PUB_ESTATE");
_Static_assert(PUB_EINTERNAL == PUB_EBASE + PUB_ERR_INTERNAL, "PUB_EINTERNAL");
_Static_assert(PUB_EBADQUERY == PUB_EBASE + PUB_ERR_BAD_QUERY, "PUB_EBADQUERY");
_Static_assert(PUB_ECONFIG == PUB_EBASE + PUB_ERR_CONFIG, "PUB_ECONFIG");
_Static_assert(PUB_ESLOW == PUB_EBASE + PUB_ERR_SLOW, "PUB_ESLOW");
_Static_assert(PUB_ESHUTDOWN == PUB_EBASE + PUB_ERR_SHUTDOWN, "PUB_ESHUTDOWN");
_Static_assert(PUB_EREMADE == PUB_EBASE + PUB_ERR_REMADE, "PUB_EREMADE");
_Static_assert(PUB_EPARTIAL == PUB_EBASE + PUB_ERR_PARTIAL, "PUB_EPARTIAL");
_Static_assert(PUB_EBUSY == PUB_EBASE + PUB_ERR_BUSY, "PUB_EBUSY");
_Static_assert(PUB_ERR__MAX <= 99, "codes must stay below PUB_EUNKNOWN");

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " follows " #b)
SAME(PUB_Q_STATUS, PUB_QUERY_STATUS);
SAME(PUB_Q_GROUPS, PUB_QUERY_GROUPS);
SAME(PUB_Q_GROUP, PUB_QUERY_GROUP);
SAME(PUB_Q_CLIENTS, PUB_QUERY_CLIENTS);
SAME(PUB_Q_DROPS, PUB_QUERY_DROPS);
SAME(PUB_Q_SOURCES, PUB_QUERY_SOURCES);
SAME(PUB_Q_RELOAD, PUB_QUERY_RELOAD);
SAME(PUB_Q_METRICS, PUB_QUERY_METRICS);
SAME(PUB_VALUE_U64, PUB_COL_U64);
SAME(PUB_VALUE_I64, PUB_COL_I64);
SAME(PUB_VALUE_STR, PUB_COL_STR);

int pub_err_from_code(uint32_t code)
{
	if (code == 0 || code >= PUB_ERR__MAX)
		return -PUB_EUNKNOWN;
	/* The handshake took longer than pubd waits (a client stopped or
	 * starved between connect and HELLO): a timeout, which pub_connect
	 * tries again within connect_timeout_ms, not a protocol error. */
	if (code == PUB_ERR_HELLO_LATE)
		return -ETIMEDOUT;
	return -(PUB_EBASE + (int)code);
}

const char *pub_version(void)
{
	return PUB_VERSION_STRING;
}

const char *pub_strerror(int err)
{
	if (err == INT_MIN)
		return "unknown error";
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case PUB_EPROTO:
		return "protocol error between libpub and pubd";
	case PUB_EVERSION:
		return "pubd does not speak this libpub's protocol version";
	case PUB_EACL:
		return "permission denied by the group's ACL";
	case PUB_ENOGROUP:
		return "no such group in pubd's configuration";
	case PUB_ETOOLARGE:
		return "message too large for pubd (limits.max_message_size, or the MTU of a raw group)";
	case PUB_ESTATE:
		return "request not valid now (e.g. not subscribed)";
	case PUB_EINTERNAL:
		return "pubd failed internally";
	case PUB_EBADQUERY:
		return "pubd does not know this query";
	case PUB_ECONFIG:
		return "pubd rejected the new configuration";
	case PUB_ESLOW:
		return "disconnected by pubd as a slow subscriber (messages were dropped)";
	case PUB_ESHUTDOWN:
		return "pubd is shutting down";
	case PUB_EPARTIAL:
		return "pubd applied the new configuration, but not all of it";
	case PUB_EREMADE:
		return "the group was made anew by a reload (its address, scope or mode changed)";
	case PUB_EBUSY:
		return "pubd takes no more connections for now (limits.max_clients, limits.max_clients_per_uid for "
		       "this user, or out of file descriptors); try again later";
	case PUB_EUNKNOWN:
		return "pubd reported an error this libpub does not know";
	case ENOTCONN:
		return "not connected to pubd (it is down or restarting)";
	}
	if (err > PUB_EBASE)
		return "unknown libpub error";
	/* strerrordesc_np: glibc's static text, thread-safe unlike strerror(). */
	const char *s = strerrordesc_np(err);
	return s ? s : "unknown error";
}

/*
 * A description for a message that names the operation: an ACL denial says
 * which ACL ("the group's subscribe ACL"), because a group has two.
 */
const char *pub_err_describe(int err, const char *op)
{
	if (err == -PUB_EACL && op) {
		if (strncmp(op, "subscribe", 9) == 0 || strncmp(op, "resubscribe", 11) == 0)
			return "permission denied by the group's subscribe ACL";
		if (strncmp(op, "publish", 7) == 0)
			return "permission denied by the group's publish ACL";
		if (strcmp(op, "reload") == 0) /* no group's: pubd's own rule */
			return "permission denied";
	}
	return pub_strerror(err);
}

/* Record the handle's last error with its context; returns err so callers can `return set_err(...)`. */
int set_err(struct pub_client *c, int err, const char *fmt, ...)
{
	char msg[sizeof(c->errmsg)];
	va_list ap;

	/* Through a copy: callers add context to the previous message (c->errmsg as an argument). */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(c->errmsg, msg, strlen(msg) + 1);
	return err;
}

/* An error pubd reported without a request: keep the first until a call returns it. */
void set_pending(struct pub_client *c, int err, const char *msg)
{
	if (c->pending_err)
		return;
	c->pending_err = err;
	snprintf(c->pending_msg, sizeof(c->pending_msg), "%s", msg);
}

int take_pending(struct pub_client *c)
{
	int err = c->pending_err;

	if (!err)
		return 0;
	c->pending_err = 0;
	snprintf(c->errmsg, sizeof(c->errmsg), "%s", c->pending_msg);
	return err;
}

int check_group(struct pub_client *c, const char *op, const char *group, size_t *len)
{
	if (!group)
		return set_err(c, -EINVAL, "%s: no group name", op);
	*len = strlen(group);
	if (*len == 0 || *len > PUB_GROUP_MAX)
		return set_err(c, -EINVAL, "%s: a group name has 1 to %d bytes", op, PUB_GROUP_MAX);
	return 0;
}

bool is_disconnect(int err)
{
	return err == -ECONNRESET || err == -EPIPE || err == -ENOTCONN || err == -ECONNABORTED;
}
