// SPDX-License-Identifier: MIT
/*
 * pub_claim/pub_commit: a message written in place. In the publish log
 * when it fits one record (no copy in this process at all); else in a
 * buffer of the handle, published by pub_commit as pub_publish would.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int claim_buffer(struct pub_client *c, const char *group, size_t len, void **ptr)
{
	if (len > c->claim_cap || !c->claim_buf) {
		uint8_t *b = realloc(c->claim_buf, len ? len : 1);

		if (!b)
			return set_err(c, -ENOMEM, "claim: out of memory for %zu bytes", len);
		c->claim_buf = b;
		c->claim_cap = len ? len : 1;
	}
	snprintf(c->claim_group, sizeof(c->claim_group), "%s", group);
	c->claim_len = len;
	*ptr = c->claim_buf;
	return 0;
}

int pub_claim(pub_client_t *c, const char *group, size_t len, void **ptr)
{
	size_t glen = 0;
	uint8_t *p;
	int r;

	if (!c || !ptr)
		return -EINVAL;
	if (c->claim_open)
		return set_err(c, -EBUSY, "claim '%s': a claim is open (pub_commit it first)", group ? group : "");
	r = check_group(c, "claim", group, &glen);
	if (r < 0)
		return r;
	r = ensure_up(c);
	if (r < 0)
		return set_err(c, r, "claim '%s': %s", group, c->errmsg);
	if (len > c->info.max_message)
		return set_err(c, -PUB_ETOOLARGE,
			       "claim '%s': message of %zu bytes exceeds pubd's max_message_size (%u)", group, len,
			       c->info.max_message);
	struct pub_dwriter *dw = c->wake_map ? dw_for(c, group, glen, false) : NULL;

	/* The group's direct log, when it has one and the message fits a
	 * record of it; else the publish log; else a buffer. */
	if (dw && (p = dw_claim(c, dw, len, &r))) {
		*ptr = p;
	} else if (dw && r < 0) {
		if (is_disconnect(r))
			conn_lost(c);
	} else if (!shm_fits_record(c, glen, len)) {
		r = claim_buffer(c, group, len, ptr);
	} else {
		p = shm_claim(c, group, glen, len, &r);
		if (p)
			*ptr = p;
		else if (is_disconnect(r))
			conn_lost(c);
	}
	if (r < 0)
		return set_err(c, r, "claim '%s': %s", group, pub_strerror(r));
	c->claim_open = true;
	return 0;
}

int pub_commit(pub_client_t *c, int flags)
{
	struct pub_waiter w = {.what = "commit"};
	int r = 0;

	if (!c)
		return -EINVAL;
	if (!c->claim_open)
		return set_err(c, -EINVAL, "commit: no claim is open");
	c->claim_open = false;
	if (!c->claim_rec)
		return pub_publish(c, c->claim_group, c->claim_buf, c->claim_len, flags & ~PUB_NONBLOCK);
	if (flags & PUB_SYNC)
		flags &= ~PUB_MORE;
	w.req_id = (flags & PUB_SYNC) ? next_req(c) : 0;
	if (c->claim_dw)
		dw_commit(c, w.req_id, flags);
	else
		shm_commit(c, w.req_id, flags);
	if (flags & PUB_SYNC)
		r = publish_wait(c, &w);
	readiness_update(c);
	return r;
}
