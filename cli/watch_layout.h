/* SPDX-License-Identifier: MIT */
/*
 * pubctl watch's screen laid out from a sample and its rates into a frame of
 * the terminal's size: a header line, the fabric's rates, its error
 * counters, the drops, then one row per group (as many as fit, then
 * "+N more groups"), and a footer line.
 */
#ifndef PUBCTL_WATCH_LAYOUT_H
#define PUBCTL_WATCH_LAYOUT_H

#include <stddef.h>

#include "watch_frame.h"
#include "watch_model.h"

/* Lines around the group rows: header, fabric, errors, drops, blank, column titles, footer. */
#define WATCH_FIXED_LINES 7

struct watch_info {
	const char *clock;  /* "HH:MM:SS", shown top right */
	const char *footer; /* the last line: interval and keys, or why pubd is not shown */
	const char *down;   /* non-NULL: pubd cannot be reached, and this says why */
};

/* A rate in at most 6 columns: "0", "12.5", "950", "12.3k", "1.05M" ... */
void watch_fmt_rate(double v, char *buf, size_t n);
/* Seconds as "1d02h03m" or "02:03:04". */
void watch_fmt_uptime(uint64_t s, char *buf, size_t n);
/* The frame (already reset to its size) from s and its rates r. */
void watch_layout(struct watch_frame *f, const struct watch_sample *s, const struct watch_rates *r,
		  const struct watch_info *info);

#endif
