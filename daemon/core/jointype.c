/* SPDX-License-Identifier: MIT */
/*
 * The join type following listening (jointype.h): send-only while nobody
 * listens, full from the first listener, back after a hold-off.
 */
#include "jointype.h"

enum pubd_jt_action pubd_jt_next(const struct pubd_jt_in *in, uint64_t *wake_ns)
{
	bool want_full = in->listening || !in->sendonly_ok;

	*wake_ns = 0;
	switch (in->kind) {
	case PUBD_JOIN_KIND_NONE:
		return want_full ? PUBD_JT_JOIN_FULL : PUBD_JT_JOIN_SENDONLY;
	case PUBD_JOIN_KIND_SENDONLY:
		/* A listener waits for the full join: upgrade at once, even
		 * while the send-only join is still under way. */
		return want_full ? PUBD_JT_JOIN_FULL : PUBD_JT_KEEP;
	case PUBD_JOIN_KIND_FULL:
		/* Decided once the join completed: a leave now would only be
		 * followed by the event of a join that is gone. */
		if (want_full || in->pending)
			return PUBD_JT_KEEP;
		if (in->now_ns - in->idle_since_ns >= in->hold_ns)
			return PUBD_JT_JOIN_SENDONLY;
		*wake_ns = in->idle_since_ns + in->hold_ns;
		return PUBD_JT_KEEP;
	}
	return PUBD_JT_KEEP;
}

bool pubd_jt_ready(enum pubd_join_kind kind, bool pending)
{
	return kind == PUBD_JOIN_KIND_FULL && !pending;
}

const char *pubd_jt_label(enum pubd_join_kind kind, bool pending)
{
	if (kind == PUBD_JOIN_KIND_NONE)
		return "-";
	if (pending)
		return "joining";
	return kind == PUBD_JOIN_KIND_FULL ? "full" : "sendonly";
}
