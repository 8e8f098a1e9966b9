// SPDX-License-Identifier: MIT
/* pubctl watch's screen layout (watch_layout.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "watch_layout.h"

/* Group table columns, left to right; the name and the reason take what the others leave. */
enum col {
	COL_NAME,
	COL_SUBS,
	COL_PUB,
	COL_PUB_B,
	COL_DLV,
	COL_DLV_B,
	COL_RCV,
	COL_RCV_B,
	COL_DROPS,
	COL_RPR,
	COL_UNREC,
	COL_NAK,
	COL_REASON,
	NCOLS
};

static const struct {
	const char *title;
	const char *key;
	int width;
	bool wide_only; /* only from WIDE_COLUMNS columns on */
} cols[NCOLS] = {
	[COL_NAME] = {"GROUP", "name", 0, false},
	[COL_SUBS] = {"SUBS", "subs", 5, false},
	[COL_PUB] = {"PUB/s", "pub", 7, false},
	[COL_PUB_B] = {"PUB B/s", "pubB", 7, false},
	[COL_DLV] = {"DLV/s", "dlv", 7, false},
	[COL_DLV_B] = {"DLV B/s", "dlvB", 7, false},
	[COL_RCV] = {"RCV/s", "rcv", 7, true},
	[COL_RCV_B] = {"RCV B/s", "rcvB", 7, true},
	[COL_DROPS] = {"DROP/s", "drops", 7, false},
	[COL_REASON] = {"TOP DROP", "reason", 0, false},
	/* loss repair: messages repaired, unrecovered, NAKs sent + received */
	[COL_RPR] = {"RPR/s", "rpr", 6, true},
	[COL_UNREC] = {"UNRC/s", "unrec", 6, true},
	[COL_NAK] = {"NAK/s", "nak", 6, true},
};

/* From this width on, the received rates (messages from other hosts) get columns too. */
#define WIDE_COLUMNS 100

void watch_fmt_rate(double v, char *buf, size_t n)
{
	static const char units[] = "kMGTP";
	unsigned u = 0;

	if (!(v >= 0.05)) {
		snprintf(buf, n, "0");
		return;
	}
	if (v < 100) {
		snprintf(buf, n, "%.1f", v);
		return;
	}
	if (v < 999.5) {
		snprintf(buf, n, "%.0f", v);
		return;
	}
	v /= 1000;
	while (v >= 999.5 && u + 1 < sizeof(units) - 1) {
		v /= 1000;
		u++;
	}
	snprintf(buf, n, v < 99.95 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

void watch_fmt_uptime(uint64_t s, char *buf, size_t n)
{
	if (s >= 86400)
		snprintf(buf, n, "%" PRIu64 "d%02" PRIu64 "h%02" PRIu64 "m", s / 86400, s / 3600 % 24, s / 60 % 60);
	else
		snprintf(buf, n, "%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, s / 3600, s / 60 % 60, s % 60);
}

/* Column widths and where each starts; 0 width: not shown. */
static void column_widths(int width, int w[NCOLS], int x[NCOLS])
{
	bool wide = width >= WIDE_COLUMNS;
	int fixed = 0, rest, at = 0;

	for (int c = 0; c < NCOLS; c++) {
		w[c] = cols[c].wide_only && !wide ? 0 : cols[c].width;
		fixed += w[c] ? w[c] + 1 : 0;
	}
	fixed += 1; /* the separator between name and the next column */
	rest = width - fixed;
	w[COL_NAME] = rest / 2 < 8 ? 8 : rest / 2 > 32 ? 32 : rest / 2;
	w[COL_REASON] = rest - w[COL_NAME] < 8 ? 8 : rest - w[COL_NAME];
	for (int c = 0; c < NCOLS; c++) {
		x[c] = at;
		at += w[c] ? w[c] + 1 : 0;
	}
}

static void rate_cell(struct watch_frame *f, int row, int c, const int *w, const int *x, const char *group,
		      const struct watch_rates *r, double v)
{
	char key[WATCH_KEY_MAX], text[16];

	if (!w[c])
		return;
	if (r->valid)
		watch_fmt_rate(v, text, sizeof(text));
	else
		snprintf(text, sizeof(text), "-");
	snprintf(key, sizeof(key), "g:%s:%s", group, cols[c].key);
	watch_frame_cell(f, row, x[c], w[c], true, key, text);
}

static void group_row(struct watch_frame *f, int row, const int *w, const int *x, const struct watch_rates *r,
		      const struct watch_group_rates *gr)
{
	const char *name = gr->g->name;
	char key[WATCH_KEY_MAX], text[24];

	char cut[WATCH_NAME_MAX];

	/* A name longer than its column is cut and ends in '~'; the columns after it stay put. */
	snprintf(cut, sizeof(cut), "%.*s", w[COL_NAME], name);
	if ((int)strlen(name) > w[COL_NAME] && w[COL_NAME] > 0)
		cut[w[COL_NAME] - 1] = '~';
	watch_frame_put(f, row, x[COL_NAME], cut, WATCH_ATTR_NONE);
	snprintf(key, sizeof(key), "g:%s:subs", name);
	snprintf(text, sizeof(text), "%" PRIu64, gr->g->subscribers);
	watch_frame_cell(f, row, x[COL_SUBS], w[COL_SUBS], true, key, text);
	rate_cell(f, row, COL_PUB, w, x, name, r, gr->pub_msgs);
	rate_cell(f, row, COL_PUB_B, w, x, name, r, gr->pub_bytes);
	rate_cell(f, row, COL_DLV, w, x, name, r, gr->dlv_msgs);
	rate_cell(f, row, COL_DLV_B, w, x, name, r, gr->dlv_bytes);
	rate_cell(f, row, COL_RCV, w, x, name, r, gr->rcv_msgs);
	rate_cell(f, row, COL_RCV_B, w, x, name, r, gr->rcv_bytes);
	rate_cell(f, row, COL_DROPS, w, x, name, r, gr->drops);
	rate_cell(f, row, COL_RPR, w, x, name, r, gr->repaired);
	rate_cell(f, row, COL_UNREC, w, x, name, r, gr->unrecovered);
	rate_cell(f, row, COL_NAK, w, x, name, r, gr->naks);
	snprintf(key, sizeof(key), "g:%s:reason", name);
	watch_frame_cell(f, row, x[COL_REASON], w[COL_REASON], false, key, gr->top_reason ? gr->top_reason : "-");
}

static void group_rows(struct watch_frame *f, int top, const struct watch_sample *s, const struct watch_rates *r)
{
	int w[NCOLS], x[NCOLS], room = f->height - top - 1; /* the footer keeps the last line */
	unsigned shown = r->ngroups;

	column_widths(f->width, w, x);
	for (int c = 0; c < NCOLS; c++) {
		char title[40];

		if (!w[c])
			continue;
		snprintf(title, sizeof(title), "%*s", c == COL_NAME || c == COL_REASON ? -w[c] : w[c], cols[c].title);
		watch_frame_put(f, top, x[c], title, WATCH_ATTR_HEADING);
	}
	room--;
	if (room < 1)
		return;
	/* The last line says how many are not shown: here, or not sent by pubd. */
	if (shown > (unsigned)room || (s->groups_not_sent && shown >= (unsigned)room))
		shown = (unsigned)room - 1;
	for (unsigned i = 0; i < shown; i++)
		group_row(f, top + 1 + (int)i, w, x, r, &r->groups[i]);
	if (shown < r->ngroups || s->groups_not_sent) {
		char more[48];

		snprintf(more, sizeof(more), "+%" PRIu64 " more groups", r->ngroups - shown + s->groups_not_sent);
		watch_frame_put(f, top + 1 + (int)shown, 0, more, WATCH_ATTR_NONE);
	}
	if (!r->ngroups)
		watch_frame_put(f, top + 1, 0, "(no groups configured)", WATCH_ATTR_NONE);
}

/* "label value" pairs after a title, as far as the line goes; returns the column reached. */
static int pair(struct watch_frame *f, int row, int col, const char *label, const char *key, const char *value)
{
	int vw = (int)strlen(value);

	if (*label) {
		watch_frame_put(f, row, col, label, WATCH_ATTR_NONE);
		col += (int)strlen(label) + 1;
	}
	watch_frame_cell(f, row, col, vw, false, key, value);
	return col + vw + 2;
}

static void header(struct watch_frame *f, const struct watch_sample *s, const struct watch_info *info)
{
	char state[64], up[24], num[24];
	int col = 0;

	watch_frame_put(f, 0, col, "pubd", WATCH_ATTR_HEADING);
	col = pair(f, 0, col + 5, "", "version", s->version);
	/* verbs has a port state; udp has none, only its joins. */
	snprintf(state, sizeof(state), "%s%sjoined %" PRIu64 "/%" PRIu64, s->port_state, *s->port_state ? " " : "",
		 s->groups_joined, s->ngroups_cfg);
	col = pair(f, 0, col, s->fabric, "fabric", state);
	watch_fmt_uptime(s->uptime_s, up, sizeof(up));
	col = pair(f, 0, col, "up", "uptime", up);
	snprintf(num, sizeof(num), "%" PRIu64, s->clients);
	pair(f, 0, col, "clients", "clients", num);
	if (info->clock && f->width - (int)strlen(info->clock) > col + 12)
		watch_frame_put(f, 0, f->width - (int)strlen(info->clock), info->clock, WATCH_ATTR_NONE);
}

static void fabric_line(struct watch_frame *f, int row, const struct watch_rates *r)
{
	char v[16];
	int col = 9;

	watch_frame_put(f, row, 0, "fabric", WATCH_ATTR_HEADING);
	watch_fmt_rate(r->tx_pps, v, sizeof(v));
	col = pair(f, row, col, "tx pkt/s", "f:txp", r->valid ? v : "-");
	watch_fmt_rate(r->tx_bps, v, sizeof(v));
	col = pair(f, row, col, "B/s", "f:txb", r->valid ? v : "-") + 1;
	watch_fmt_rate(r->rx_pps, v, sizeof(v));
	col = pair(f, row, col, "rx pkt/s", "f:rxp", r->valid ? v : "-");
	watch_fmt_rate(r->rx_bps, v, sizeof(v));
	pair(f, row, col, "B/s", "f:rxb", r->valid ? v : "-");
}

/* The error counters that are not zero, by name; "none" when all are. */
static void errors_line(struct watch_frame *f, int row, const struct watch_sample *s)
{
	char key[WATCH_KEY_MAX], v[24];
	unsigned nonzero = 0;
	int col = 9;

	watch_frame_put(f, row, 0, "errors", WATCH_ATTR_HEADING);
	for (unsigned i = 0; i < s->nerrors; i++) {
		if (!s->errors[i].v)
			continue;
		snprintf(key, sizeof(key), "e:%s", s->errors[i].name);
		snprintf(v, sizeof(v), "%" PRIu64, s->errors[i].v);
		col = pair(f, row, col, s->errors[i].name, key, v);
		nonzero++;
	}
	if (!nonzero) {
		snprintf(key, sizeof(key), "none (%u counters, all 0)", s->nerrors);
		watch_frame_put(f, row, col, s->nerrors ? key : "none reported", WATCH_ATTR_NONE);
	}
}

static void drops_line(struct watch_frame *f, int row, const struct watch_rates *r)
{
	char key[WATCH_KEY_MAX], v[16];
	int col = 9;

	watch_frame_put(f, row, 0, "drops/s", WATCH_ATTR_HEADING);
	watch_fmt_rate(r->drops, v, sizeof(v));
	col = pair(f, row, col, "", "d:total", r->valid ? v : "-");
	for (unsigned i = 0; i < r->ntop; i++) {
		snprintf(key, sizeof(key), "d:%s", r->top[i].name);
		watch_fmt_rate(r->top[i].rate, v, sizeof(v));
		col = pair(f, row, col, r->top[i].name, key, v);
	}
}

/* Why pubd is not shown: its lines (separated by '\n'), the first highlighted. */
static void down_lines(struct watch_frame *f, const struct watch_info *info)
{
	const char *p = info->down;
	char line[256];

	watch_frame_put(f, 0, 0, "pubd", WATCH_ATTR_HEADING);
	for (int row = 0; *p && row < f->height - 1; row++) {
		size_t n = strcspn(p, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		watch_frame_put(f, row, row ? 2 : 5, line, row ? WATCH_ATTR_NONE : WATCH_ATTR_CHANGED);
		p += n + (p[n] == '\n');
	}
}

void watch_layout(struct watch_frame *f, const struct watch_sample *s, const struct watch_rates *r,
		  const struct watch_info *info)
{
	if (info->down) {
		down_lines(f, info);
	} else {
		header(f, s, info);
		fabric_line(f, 1, r);
		errors_line(f, 2, s);
		drops_line(f, 3, r);
		group_rows(f, 5, s, r);
	}
	if (info->footer && f->height > 2)
		watch_frame_put(f, f->height - 1, 0, info->footer, WATCH_ATTR_NONE);
}
