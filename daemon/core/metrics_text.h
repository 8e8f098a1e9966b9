/* SPDX-License-Identifier: MIT */
/*
 * pubd's metrics in the Prometheus text format, rendered from the tables
 * pubctl reads (common/proto.h; the daemon builds them in engine/query.c),
 * so /metrics and `pubctl status/groups/sources/drops` show the same
 * numbers under one definition. Pure: TABLE frames in, text out.
 *
 * Tables read: status, fabric, counters, groups, subscribers, sources,
 * drops, more; any other is ignored, any missing one leaves its metrics
 * out. Series per source and per subscriber are bounded (limits below):
 * the sources most recently heard are kept, the rest are counted in
 * pubd_metrics_sources_omitted (and subscribers likewise).
 */
#ifndef PUBD_METRICS_TEXT_H
#define PUBD_METRICS_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "prom.h"

#define PUBD_METRICS_MAX_SOURCES     100u
#define PUBD_METRICS_MAX_SUBSCRIBERS 1000u

struct pubd_metrics_limits {
	unsigned max_sources;	  /* source series kept, most recently heard first */
	unsigned max_subscribers; /* subscriber series kept, in table order */
};

/* frames: len bytes of whole TABLE frames (header included). Returns 0, or
 * -EPROTO for a malformed frame, -ENOMEM; the text is appended to o. */
int pubd_metrics_text(const uint8_t *frames, size_t len, const struct pubd_metrics_limits *lim, struct prom_out *o);

#endif
