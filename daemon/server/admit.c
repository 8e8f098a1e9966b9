/* SPDX-License-Identifier: MIT */
/*
 * Publish admission: the checks every message a client publishes passes
 * (its group, the group's publish ACL, the size limits) and its handing to
 * the engine, whichever way it came (a PUBLISH frame, or the client's
 * shared-memory publish log).
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server_internal.h"

bool srv_client_may(const struct pubd_client *c, const struct pubd_acl *acl)
{
	return pubd_acl_allows(acl, c->uid, c->gid, c->sup_gids, c->nsup_gids);
}

static struct pubd_pubstat *client_pubstat(struct pubd_client *c, struct pubd_group *g)
{
	struct pubd_pubstat *v;
	unsigned i;

	for (i = 0; i < c->npubs; i++)
		if (c->pubs[i].group == g) {
			c->pubs_last = i;
			return &c->pubs[i];
		}
	v = realloc(c->pubs, (c->npubs + 1) * sizeof(*v));
	if (!v)
		return NULL;
	c->pubs = v;
	memset(&v[c->npubs], 0, sizeof(v[0]));
	v[c->npubs].group = g;
	return &v[c->npubs++];
}

/* A PUBLISH refused: counted against the client and the scope (its group,
 * or the daemon's when there is no such group). */
void srv_publish_refused(struct pubd_client *c, struct pubd_drops *scope, enum pub_drop_reason why)
{
	pubd_drops_add(&c->drops, why, 1);
	pubd_drops_add(scope, why, 1);
	c->srv->counters[PUBD_CTR_MSG_DROPPED]++;
}

/* The checks every publish passes; on refusal the reply is sent and the
 * message counted, and NULL returned. */
struct pubd_group *srv_publish_admit(struct pubd_client *c, uint32_t req_id, const char *name, size_t nlen, size_t plen)
{
	struct pubd_ipc *srv = c->srv;
	struct pubd_group *g = pubd_groups_by_name(srv->groups, name, nlen);

	if (!g) {
		srv_publish_refused(c, srv->drops, PUB_DROP_NO_GROUP);
		srv_reply_error(c, req_id, PUB_ERR_NO_GROUP, "no group named '%.*s' in pubd's configuration", (int)nlen,
				name);
		return NULL;
	}
	if (!srv_client_may(c, &g->cfg->publish)) {
		srv_publish_refused(c, &g->drops, PUB_DROP_ACL_DENIED);
		log_debug("client %u uid %u: publish to %s denied by its ACL", c->id, (unsigned)c->uid, g->name);
		srv_reply_error(c, req_id, PUB_ERR_ACL, "uid %u may not publish to '%s' (group's publish ACL)",
				(unsigned)c->uid, g->name);
		return NULL;
	}
	return srv_publish_size_ok(c, req_id, g, plen) ? g : NULL;
}

/* The size checks alone, for a group already admitted by name and ACL. */
bool srv_publish_size_ok(struct pubd_client *c, uint32_t req_id, struct pubd_group *g, size_t plen)
{
	struct pubd_ipc *srv = c->srv;

	if (plen > srv->cfg->max_message_size) {
		srv_publish_refused(c, &g->drops, PUB_DROP_TOO_LARGE);
		srv_reply_error(c, req_id, PUB_ERR_TOO_LARGE,
				"message of %zu bytes exceeds limits.max_message_size (%llu)", plen,
				(unsigned long long)srv->cfg->max_message_size);
		return false;
	}
	if (g->raw && plen > srv->mtu) {
		srv_publish_refused(c, &g->drops, PUB_DROP_MTU_EXCEEDED);
		srv_reply_error(c, req_id, PUB_ERR_TOO_LARGE,
				"message of %zu bytes exceeds the fabric MTU (%u) of raw group '%s' (raw groups cannot "
				"fragment)",
				plen, srv->mtu, g->name);
		return false;
	}
	return true;
}

static inline void count_published(struct pubd_client *c, struct pubd_group *g, size_t len)
{
	/* A client's messages mostly go to the group its last went to. */
	struct pubd_pubstat *ps = c->pubs_last < c->npubs && c->pubs[c->pubs_last].group == g ? &c->pubs[c->pubs_last]
											      : client_pubstat(c, g);

	if (ps) {
		ps->published++;
		ps->bytes += len;
	}
	c->published++;
}

void srv_publish_accept(struct pubd_client *c, uint32_t req_id, struct pubd_group *g, struct pubd_msgbuf *m)
{
	count_published(c, g, m->len);
	if (c->srv->ops->publish(c->srv->ctx, c, g, m))
		c->tx_pending++;
	if (req_id)
		srv_reply_ok(c, req_id);
	if (c->tx_pending >= TX_PENDING_HIGH)
		srv_pause_client(c);
	else if (!srv_budget_fits(c->srv, 0))
		/* The transmit queue took the budget past its end: read on
		 * once there is room for another message like this one. */
		srv_pause_for_budget(c, m->len);
}

void srv_publish_accept_local(struct pubd_client *c, uint32_t req_id, struct pubd_group *g, const uint8_t *data,
			      size_t len)
{
	count_published(c, g, len);
	c->srv->ops->publish_local(c->srv->ctx, g, data, len);
	if (req_id)
		srv_reply_ok(c, req_id);
}
