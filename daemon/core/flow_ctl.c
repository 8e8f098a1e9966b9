/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "flow_ctl.h"

void pubd_fc_source_init(struct pubd_fc_source *fc, uint64_t timeout_ns)
{
	memset(fc, 0, sizeof(*fc));
	fc->timeout_ns = timeout_ns;
}

static void recompute(struct pubd_fc_source *fc)
{
	uint64_t lo = UINT64_MAX;
	uint32_t i;

	for (i = 0; i < fc->n; i++)
		if (fc->v[i].limit < lo)
			lo = fc->v[i].limit;
	fc->limit = lo;
}

static void forget(struct pubd_fc_source *fc, uint32_t i)
{
	fc->v[i] = fc->v[--fc->n];
}

/* The entry of host, or NULL. */
static struct pubd_fc_host *host_find(struct pubd_fc_source *fc, const void *key, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < fc->nhosts; i++)
		if (fc->hosts[i].len == len && !memcmp(fc->hosts[i].key, key, len))
			return &fc->hosts[i];
	return NULL;
}

/* The entry of host, made if new. The table is bounded: a new host takes
 * the place of one that neither holds the source nor is in a penalty, else
 * of the one whose penalty ends first. */
static struct pubd_fc_host *host_get(struct pubd_fc_source *fc, const void *key, uint32_t len, uint64_t now_ns)
{
	struct pubd_fc_host *h = host_find(fc, key, len), *c;
	uint32_t i;

	if (h)
		return h;
	if (fc->nhosts < PUBD_FC_HOSTS_MAX) {
		h = &fc->hosts[fc->nhosts++];
	} else {
		for (i = 0; i < fc->nhosts && !h; i++) {
			c = &fc->hosts[i];
			if (!c->held_ns && c->until_ns <= now_ns)
				h = c;
		}
		for (i = 0; i < fc->nhosts && !h; i++)
			if (fc->hosts[i].until_ns && (!h || fc->hosts[i].until_ns < h->until_ns))
				h = &fc->hosts[i];
		if (!h)
			h = &fc->hosts[0];
	}
	memset(h, 0, sizeof(*h));
	memcpy(h->key, key, len);
	h->len = len;
	return h;
}

/* A strike for h: its penalty starts now, twice the last. */
static void host_strike(struct pubd_fc_source *fc, struct pubd_fc_host *h, uint64_t now_ns)
{
	uint64_t mult = (uint64_t)PUBD_FC_PENALTY_TIMEOUTS << (h->strikes < 6 ? h->strikes : 6);

	h->strikes++;
	h->until_ns = now_ns + mult * fc->timeout_ns;
	h->held_ns = 0;
	h->struck = true;
}

bool pubd_fc_source_status(struct pubd_fc_source *fc, uint64_t now_ns, uint64_t id, uint64_t limit, uint32_t serial,
			   const void *host, uint32_t host_len)
{
	struct pubd_fc_receiver *r = NULL;
	const struct pubd_fc_host *h;
	uint32_t i, oldest = 0;

	if (host_len > PUBD_FC_HOST_LEN)
		host_len = PUBD_FC_HOST_LEN;
	h = host_len ? host_find(fc, host, host_len) : NULL;
	if (h && now_ns < h->until_ns) {
		fc->penalized++;
		return false;
	}

	for (i = 0; i < fc->n; i++) {
		if (fc->v[i].id == id) {
			r = &fc->v[i];
			break;
		}
		if (fc->v[i].last_ns < fc->v[oldest].last_ns)
			oldest = i;
	}
	if (!r) {
		if (fc->n == PUBD_FC_RECEIVERS_MAX) {
			forget(fc, oldest);
			fc->replaced++;
		}
		r = &fc->v[fc->n++];
		*r = (struct pubd_fc_receiver){.id = id, .serial = serial - 1, .limit = limit};
		if (host_len)
			memcpy(r->host, host, host_len);
		r->host_len = host_len;
	}
	/* Serials wrap: newer is ahead by less than half their range. */
	if ((int32_t)(serial - r->serial) <= 0) {
		fc->stale++;
		return false;
	}
	fc->statuses++;
	r->serial = serial;
	r->limit = limit;
	r->last_ns = now_ns;
	recompute(fc);
	return true;
}

uint32_t pubd_fc_source_expire(struct pubd_fc_source *fc, uint64_t now_ns)
{
	uint32_t i = 0, gone = 0;

	while (i < fc->n) {
		if (now_ns > fc->v[i].last_ns && now_ns - fc->v[i].last_ns > fc->timeout_ns) {
			forget(fc, i);
			gone++;
		} else {
			i++;
		}
	}
	if (gone) {
		fc->timed_out += gone;
		recompute(fc);
	}
	return gone;
}

uint32_t pubd_fc_source_stuck(struct pubd_fc_source *fc, uint64_t now_ns, bool waiting, uint64_t want)
{
	uint64_t stuck_ns = (uint64_t)PUBD_FC_STUCK_TIMEOUTS * fc->timeout_ns;
	struct pubd_fc_host *h;
	uint32_t i, gone = 0;
	bool struck = false;

	for (i = 0; i < fc->nhosts; i++)
		fc->hosts[i].holds = fc->hosts[i].struck = false;
	/* Which hosts hold the source back now. */
	for (i = 0; waiting && i < fc->n; i++) {
		struct pubd_fc_receiver *r = &fc->v[i];

		if (r->limit > want || !r->host_len)
			continue;
		h = host_get(fc, r->host, r->host_len, now_ns);
		h->holds = true;
		/* The source went on since (the host let it): a new hold. */
		if (!h->held_ns || h->held_at != want) {
			h->held_ns = now_ns ? now_ns : 1;
			h->held_at = want;
		}
	}
	for (i = 0; i < fc->nhosts; i++) {
		h = &fc->hosts[i];
		if (!h->holds)
			h->held_ns = 0; /* a break: what held it let go */
		else if (now_ns > h->held_ns && now_ns - h->held_ns > stuck_ns)
			host_strike(fc, h, now_ns), struck = true;
	}
	/* The receivers of hosts struck now go. */
	i = 0;
	while (struck && i < fc->n) {
		struct pubd_fc_receiver *r = &fc->v[i];

		h = r->host_len ? host_find(fc, r->host, r->host_len) : NULL;
		if (h && h->struck) {
			forget(fc, i);
			gone++;
			continue;
		}
		i++;
	}
	if (gone) {
		fc->stuck += gone;
		recompute(fc);
	}
	return gone;
}

uint64_t pubd_fc_sub_room(uint64_t queued, uint64_t queued_bytes, uint64_t max_msgs, uint64_t max_bytes,
			  uint64_t avg_len)
{
	uint64_t room = queued < max_msgs ? max_msgs - queued : 0, by_bytes;

	if (queued_bytes >= max_bytes)
		return 0;
	by_bytes = (max_bytes - queued_bytes) / (avg_len ? avg_len : 1);
	return by_bytes < room ? by_bytes : room;
}

bool pubd_fc_should_send(uint64_t limit, uint64_t sent, uint64_t quarter, bool keepalive)
{
	uint64_t moved = limit > sent ? limit - sent : sent - limit;

	if (!sent)
		return true;
	return keepalive || moved >= (quarter ? quarter : 1);
}
