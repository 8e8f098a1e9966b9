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

bool pubd_fc_source_status(struct pubd_fc_source *fc, uint64_t now_ns, uint64_t id, uint64_t limit, uint32_t serial)
{
	struct pubd_fc_receiver *r = NULL;
	uint32_t i, oldest = 0;

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
		*r = (struct pubd_fc_receiver){.id = id, .serial = serial - 1};
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
