// SPDX-License-Identifier: MIT
/*
 * Requests with a reply (subscribe, unsubscribe; pub_query in query.c):
 * send, wait for the answer, reconnect and retry once when pubd restarted.
 * The groups subscribed to are kept, to subscribe again after a reconnect.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "internal.h"

uint32_t next_req(struct pub_client *c)
{
	if (++c->next_req == 0)
		c->next_req = 1;
	return c->next_req;
}

/* Send a small control frame and wait for its answer. -ECONNRESET etc. when the connection failed. */
/*
 * The connection went while we wrote (err): pubd may have said why before
 * it closed it, a refusal at the door (out of fds, limits.max_clients)
 * most often, and our HELLO met the closed socket. What it sent is still
 * to be read: its ERROR answers w, in pubd's words, not "Broken pipe".
 */
static int said_why(struct pub_client *c, struct pub_waiter *w, int err)
{
	c->wpos = c->wlen = 0; /* nothing more goes out on this connection */
	while (process(c, w, NULL) >= 0 && !w->done && rx_read(c) > 0)
		;
	return w->done ? w->result : err;
}

int roundtrip(struct pub_client *c, const uint8_t *frame, size_t len, struct pub_waiter *w)
{
	return roundtrip_by(c, frame, len, w, deadline_in(c->request_timeout_ms));
}

int roundtrip_by(struct pub_client *c, const uint8_t *frame, size_t len, struct pub_waiter *w, uint64_t deadline)
{
	bool partial;
	int r;

	r = tx_flush(c, deadline);
	if (r < 0)
		return is_disconnect(r) ? said_why(c, w, r) : r;
	r = tx_frame(c, frame, len, NULL, 0, deadline, &partial);
	if (r < 0)
		return is_disconnect(r) ? said_why(c, w, r) : r;
	return wait_for(c, w, deadline);
}

const char *waiter_what(struct pub_waiter *w)
{
	if (!w->what && w->publish_group && w->what_buf) {
		snprintf(w->what_buf, PUB_GROUP_MAX + 32, "publish '%s'", w->publish_group);
		w->what = w->what_buf;
	}
	return w->what ? w->what : "request";
}

/*
 * A request with a reply. If the connection turns out to be dead, one
 * reconnect and one retry: a restart of pubd between two calls should not
 * fail the second.
 */
int request(struct pub_client *c, const uint8_t *frame, size_t len, struct pub_waiter *w)
{
	int r;

	for (int attempt = 0;; attempt++) {
		r = ensure_up(c);
		if (r < 0)
			return set_err(c, r, "%s: %s", waiter_what(w), c->errmsg);
		w->done = false;
		w->result = 0;
		r = roundtrip(c, frame, len, w);
		if (r >= 0 || w->done)
			return r;
		if (r == -ETIMEDOUT)
			return set_err(c, r, "%s: pubd did not answer within %d ms", waiter_what(w),
				       c->request_timeout_ms);
		if (r == -PUB_EPROTO || r == -ENOMEM) {
			conn_lost(c);
			return set_err(c, r, "%s: %s", waiter_what(w), c->errmsg);
		}
		conn_lost(c);
		if (attempt > 0 || !is_disconnect(r))
			return set_err(c, -ENOTCONN, "%s: connection to pubd lost: %s", waiter_what(w),
				       pub_strerror(r));
	}
}

/* ---- subscriptions list ---- */

static ssize_t sub_find(struct pub_client *c, const char *group)
{
	for (size_t i = 0; i < c->nsubs; i++)
		if (strcmp(c->subs[i], group) == 0)
			return (ssize_t)i;
	return -1;
}

static int sub_add(struct pub_client *c, const char *group)
{
	char *s;

	if (sub_find(c, group) >= 0)
		return 0;
	if (c->nsubs == c->subcap) {
		size_t cap = c->subcap ? c->subcap * 2 : 8;
		char **v = realloc(c->subs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->subs = v;
		c->subcap = cap;
	}
	s = strdup(group);
	if (!s)
		return -ENOMEM;
	c->subs[c->nsubs++] = s;
	return 0;
}

static void sub_remove(struct pub_client *c, const char *group)
{
	ssize_t i = sub_find(c, group);

	if (i < 0)
		return;
	free(c->subs[i]);
	c->subs[i] = c->subs[--c->nsubs];
}

static int group_request(struct pub_client *c, uint8_t type, const char *op, const char *group)
{
	uint8_t frame[PUB_PROTO_HDR_LEN + 4 + 1 + PUB_PROTO_NAME_MAX];
	char what[PUB_GROUP_MAX + 32];
	struct pub_waiter w = {.what = what};
	size_t len = 0; /* set by check_group; gcc -O3 cannot see it */
	long n;
	int r;

	r = check_group(c, op, group, &len);
	if (r < 0)
		return r;
	snprintf(what, sizeof(what), "%s '%s'", op, group);
	w.req_id = next_req(c);
	n = pub_proto_enc_group_req(frame, sizeof(frame), type, w.req_id, group, len);
	if (n <= 0)
		return set_err(c, -EINVAL, "%s: cannot encode", what);
	return request(c, frame, (size_t)n, &w);
}

int pub_subscribe(pub_client_t *c, const char *group)
{
	int r;

	if (!c)
		return -EINVAL;
	r = group_request(c, PUB_FRAME_SUBSCRIBE, "subscribe", group);
	if (r == 0 && sub_add(c, group) < 0)
		r = set_err(c, -ENOMEM, "subscribe '%s': out of memory", group);
	readiness_update(c);
	return r;
}

int pub_unsubscribe(pub_client_t *c, const char *group)
{
	int r;

	if (!c)
		return -EINVAL;
	/* While pubd is down there is nothing to undo there: forgetting the group is enough. */
	if (group && !c->up && sub_find(c, group) >= 0 && ensure_up(c) < 0) {
		sub_remove(c, group);
		readiness_update(c);
		return 0;
	}
	/* pubd counts what the group's log holds past that as never read:
	 * the log goes, unread, with the subscription. */
	glog_say_read(c, group);
	r = group_request(c, PUB_FRAME_UNSUBSCRIBE, "unsubscribe", group);
	if (r == 0 || r == -PUB_ESTATE || r == -PUB_ENOGROUP) {
		sub_remove(c, group);
		glog_detach(c, group);
		dr_detach_group(c, group);
	}
	readiness_update(c);
	return r;
}
