// SPDX-License-Identifier: MIT
/*
 * pubctl watch's pure parts: samples read from query tables built here by
 * hand, rates from two samples over a measured time, and the screen laid
 * out into frames of given sizes (what fits, what is cut, what is
 * highlighted, what escape sequences come out).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../cli/watch_layout.h"

/* What a fake pubd reports: one group's counters. */
struct fake_group {
	const char *name;
	uint64_t subs, pub, pub_b, dlv, dlv_b, rcv, rcv_b, dropped, sub_dropped, joined;
};

static struct pub_value u64(uint64_t v)
{
	return (struct pub_value){.type = PUB_VALUE_U64, .u = v};
}

static struct pub_value str(const char *s)
{
	return (struct pub_value){.type = PUB_VALUE_STR, .s = s, .len = strlen(s)};
}

static void feed_status(struct watch_sample *s, uint64_t pid, uint64_t uptime, uint64_t clients, uint64_t dropped)
{
	static const struct pub_column cols[] = {{"version", PUB_VALUE_STR},  {"pid", PUB_VALUE_U64},
						 {"uptime_s", PUB_VALUE_U64}, {"fabric", PUB_VALUE_STR},
						 {"groups", PUB_VALUE_U64},   {"clients", PUB_VALUE_U64},
						 {"dropped", PUB_VALUE_U64}};
	struct pub_value cells[] = {str("9.8.7"), u64(pid),	u64(uptime), str("udp"),
				    u64(2),	  u64(clients), u64(dropped)};
	struct pub_table t = {.name = "status", .ncols = 7, .cols = cols, .nrows = 1, .cells = cells};

	assert_int_equal(watch_sample_table(&t, s), 0);
}

/* The fabric table: key/value text rows, as both fabrics send it. */
static void feed_fabric(struct watch_sample *s, const char *const *kv, size_t n)
{
	static const struct pub_column cols[] = {{"key", PUB_VALUE_STR}, {"value", PUB_VALUE_STR}};
	struct pub_value cells[64];
	struct pub_table t = {.name = "fabric", .ncols = 2, .cols = cols, .nrows = n / 2, .cells = cells};

	assert_true(n <= 64);
	for (size_t i = 0; i < n; i++)
		cells[i] = str(kv[i]);
	assert_int_equal(watch_sample_table(&t, s), 0);
}

static void feed_groups(struct watch_sample *s, const struct fake_group *g, size_t n)
{
	/* Columns in another order than pubd's, and one it does not know: read by name. */
	static const struct pub_column cols[] = {
		{"name", PUB_VALUE_STR},	   {"joined", PUB_VALUE_U64},
		{"subscribers", PUB_VALUE_U64},	   {"published", PUB_VALUE_U64},
		{"delivered", PUB_VALUE_U64},	   {"received", PUB_VALUE_U64},
		{"dropped", PUB_VALUE_U64},	   {"sub_dropped", PUB_VALUE_U64},
		{"future", PUB_VALUE_STR},	   {"published_bytes", PUB_VALUE_U64},
		{"received_bytes", PUB_VALUE_U64}, {"delivered_bytes", PUB_VALUE_U64},
	};
	struct pub_value *cells = calloc(n * 12 + 1, sizeof(*cells));
	struct pub_table t = {.name = "groups", .ncols = 12, .cols = cols, .nrows = n, .cells = cells};

	assert_non_null(cells);
	for (size_t i = 0; i < n; i++) {
		struct pub_value row[] = {str(g[i].name), u64(g[i].joined), u64(g[i].subs),    u64(g[i].pub),
					  u64(g[i].dlv),  u64(g[i].rcv),    u64(g[i].dropped), u64(g[i].sub_dropped),
					  str("x"),	  u64(g[i].pub_b),  u64(g[i].rcv_b),   u64(g[i].dlv_b)};

		memcpy(cells + i * 12, row, sizeof(row));
	}
	assert_int_equal(watch_sample_table(&t, s), 0);
	free(cells);
}

/* Drops rows: scope, name, reason, count (unit left out: read by name). */
static void feed_drops(struct watch_sample *s, const char *const *rows, const uint64_t *counts, size_t n)
{
	static const struct pub_column cols[] = {
		{"scope", PUB_VALUE_STR}, {"name", PUB_VALUE_STR}, {"reason", PUB_VALUE_STR}, {"count", PUB_VALUE_U64}};
	struct pub_value cells[4 * 16];
	struct pub_table t = {.name = "drops", .ncols = 4, .cols = cols, .nrows = n, .cells = cells};

	assert_true(n <= 16);
	for (size_t i = 0; i < n; i++) {
		cells[i * 4] = str(rows[i * 3]);
		cells[i * 4 + 1] = str(rows[i * 3 + 1]);
		cells[i * 4 + 2] = str(rows[i * 3 + 2]);
		cells[i * 4 + 3] = u64(counts[i]);
	}
	assert_int_equal(watch_sample_table(&t, s), 0);
}

static const char *const drop_rows[] = {
	"daemon",
	"-",
	"unknown_group", /* */
	"group",
	"alpha",
	"seq_gap", /* */
	"group-subscribers",
	"alpha",
	"sub_overflow", /* */
	"subscriber",
	"7/a",
	"sub_overflow", /* the same drops again, per subscriber */
	"source",
	"abc",
	"seq_gap", /* and per source */
};

/* Two samples 0.5 s apart: alpha publishes 100 messages of 10 bytes, beta is idle. */
static void two_samples(struct watch_sample *a, struct watch_sample *b)
{
	static const char *const kv0[] = {"fabric",	  "udp", "tx_datagrams", "1000", "tx_bytes",	   "50000",
					  "rx_datagrams", "10",	 "rx_bytes",	 "500",	 "tx_post_errors", "0",
					  "rx_truncated", "0",	 "port",	 "7470"};
	static const char *const kv1[] = {"fabric",	  "udp", "tx_datagrams", "1100", "tx_bytes",	   "51000",
					  "rx_datagrams", "10",	 "rx_bytes",	 "500",	 "tx_post_errors", "3",
					  "rx_truncated", "0",	 "port",	 "7470"};
	struct fake_group g0[] = {{"alpha", 1, 1000, 10000, 900, 9000, 0, 0, 4, 6, 1},
				  {"beta", 0, 5, 50, 0, 0, 7, 70, 0, 0, 1}};
	struct fake_group g1[] = {{"alpha", 2, 1100, 11000, 1000, 10000, 0, 0, 4, 16, 1},
				  {"beta", 0, 5, 50, 0, 0, 7, 70, 0, 0, 1}};
	uint64_t c0[] = {1, 4, 6, 6, 2}, c1[] = {1, 4, 16, 16, 2};

	watch_sample_init(a);
	watch_sample_init(b);
	feed_status(a, 42, 100, 3, 11);
	feed_fabric(a, kv0, 16);
	feed_groups(a, g0, 2);
	feed_drops(a, drop_rows, c0, 5);
	feed_status(b, 42, 101, 4, 21);
	feed_fabric(b, kv1, 16);
	feed_groups(b, g1, 2);
	feed_drops(b, drop_rows, c1, 5);
}

static void test_error_counters(void **state)
{
	(void)state;
	assert_true(watch_is_error_counter("tx_post_errors"));
	assert_true(watch_is_error_counter("rx_kernel_drops"));
	assert_true(watch_is_error_counter("counters.symbol_error"));
	assert_true(watch_is_error_counter("counters.port_xmit_discards"));
	assert_true(watch_is_error_counter("counters.link_downed"));
	assert_true(watch_is_error_counter("counters.VL15_dropped"));
	assert_false(watch_is_error_counter("tx_datagrams"));
	assert_false(watch_is_error_counter("counters.port_rcv_packets"));
	assert_false(watch_is_error_counter("srq_refills"));
}

static void test_rate(void **state)
{
	(void)state;
	assert_float_equal(watch_rate(100, 300, 2.0), 100.0, 1e-9);
	assert_float_equal(watch_rate(100, 100, 0.7), 0.0, 1e-9);
	assert_float_equal(watch_rate(300, 100, 1.0), 0.0, 1e-9); /* went backwards: a restart */
	assert_float_equal(watch_rate(0, 5, 0.0), 0.0, 1e-9);	  /* no time: no rate */
}

static void test_sample_from_tables(void **state)
{
	struct watch_sample a, b;

	(void)state;
	two_samples(&a, &b);
	assert_string_equal(b.version, "9.8.7");
	assert_string_equal(b.fabric, "udp");
	assert_int_equal(b.pid, 42);
	assert_int_equal(b.clients, 4);
	assert_int_equal(b.tx_pkts, 1100);
	assert_int_equal(b.tx_bytes, 51000);
	assert_int_equal(b.groups_joined, 2);
	assert_int_equal(b.ngroups, 2);
	assert_string_equal(b.groups[0].name, "alpha");
	assert_int_equal(b.groups[0].published_bytes, 11000);
	assert_int_equal(b.groups[0].delivered_bytes, 10000);
	assert_int_equal(b.groups[0].dropped, 20); /* stream-level 4 + subscriber-level 16 */
	/* Error counters by name (port is not one); tx_post_errors is. */
	assert_int_equal(b.nerrors, 2);
	assert_string_equal(b.errors[0].name, "tx_post_errors");
	assert_int_equal(b.errors[0].v, 3);
	/* Daemon-wide reasons count the daemon's and the groups' scopes only. */
	assert_int_equal(b.reasons.n, 3);
	assert_int_equal(b.groups[0].reasons.n, 2);
	watch_sample_close(&a);
	watch_sample_close(&b);
}

static void test_rates_from_two_samples(void **state)
{
	struct watch_sample a, b;
	struct watch_rates r;

	(void)state;
	two_samples(&a, &b);
	watch_rates_init(&r);
	assert_int_equal(watch_rates_compute(&r, NULL, &a, 0), 0);
	assert_false(r.valid); /* a first sample has no rates */
	assert_int_equal(watch_rates_compute(&r, &a, &b, 0.5), 0);
	assert_true(r.valid);
	assert_int_equal(r.ngroups, 2);
	assert_float_equal(r.groups[0].pub_msgs, 200.0, 1e-9);
	assert_float_equal(r.groups[0].pub_bytes, 2000.0, 1e-9);
	assert_float_equal(r.groups[0].dlv_msgs, 200.0, 1e-9);
	assert_float_equal(r.groups[0].drops, 20.0, 1e-9);
	assert_string_equal(r.groups[0].top_reason, "sub_overflow");
	assert_float_equal(r.groups[1].pub_msgs, 0.0, 1e-9);
	assert_null(r.groups[1].top_reason);
	assert_float_equal(r.tx_pps, 200.0, 1e-9);
	assert_float_equal(r.tx_bps, 2000.0, 1e-9);
	assert_float_equal(r.drops, 20.0, 1e-9);
	assert_int_equal(r.ntop, 1);
	assert_string_equal(r.top[0].name, "sub_overflow");
	assert_float_equal(r.top[0].rate, 20.0, 1e-9);
	/* The same counters over a longer measured time: lower rates. */
	assert_int_equal(watch_rates_compute(&r, &a, &b, 2.0), 0);
	assert_float_equal(r.groups[0].pub_msgs, 50.0, 1e-9);
	/* pubd restarted (another pid): no rates rather than nonsense. */
	b.pid = 43;
	assert_int_equal(watch_rates_compute(&r, &a, &b, 0.5), 0);
	assert_false(r.valid);
	watch_rates_close(&r);
	watch_sample_close(&a);
	watch_sample_close(&b);
}

static void test_fmt(void **state)
{
	char buf[16], up[24];

	(void)state;
	watch_fmt_rate(0, buf, sizeof(buf));
	assert_string_equal(buf, "0");
	watch_fmt_rate(0.01, buf, sizeof(buf));
	assert_string_equal(buf, "0");
	watch_fmt_rate(12.34, buf, sizeof(buf));
	assert_string_equal(buf, "12.3");
	watch_fmt_rate(950, buf, sizeof(buf));
	assert_string_equal(buf, "950");
	watch_fmt_rate(12345, buf, sizeof(buf));
	assert_string_equal(buf, "12.3k");
	watch_fmt_rate(2.5e6, buf, sizeof(buf));
	assert_string_equal(buf, "2.5M");
	watch_fmt_rate(999999, buf, sizeof(buf));
	assert_string_equal(buf, "1.0M");
	watch_fmt_rate(123e9, buf, sizeof(buf));
	assert_string_equal(buf, "123G");
	watch_fmt_uptime(3725, up, sizeof(up));
	assert_string_equal(up, "01:02:05");
	watch_fmt_uptime(2 * 86400 + 3 * 3600 + 4 * 60, up, sizeof(up));
	assert_string_equal(up, "2d03h04m");
}

static int count_lines(const struct watch_frame *f, const char *needle)
{
	char line[512];
	int n = 0;

	for (int row = 0; row < f->height; row++) {
		watch_frame_line(f, row, line, sizeof(line));
		n += strstr(line, needle) != NULL;
	}
	return n;
}

/* The line of the frame that starts with prefix, or "" */
static const char *line_of(const struct watch_frame *f, const char *prefix, char *buf, size_t n)
{
	for (int row = 0; row < f->height; row++) {
		watch_frame_line(f, row, buf, n);
		if (strncmp(buf, prefix, strlen(prefix)) == 0)
			return buf;
	}
	buf[0] = 0;
	return buf;
}

static void test_layout_80x24(void **state)
{
	struct watch_sample a, b;
	struct watch_rates r;
	struct watch_frame f;
	struct watch_info info = {.clock = "12:34:56", .footer = "every 1s"};
	char line[512];

	(void)state;
	two_samples(&a, &b);
	watch_rates_init(&r);
	watch_rates_compute(&r, &a, &b, 0.5);
	assert_int_equal(watch_frame_init(&f, 80, 24), 0);
	watch_layout(&f, &b, &r, &info);
	assert_true(f.nlines <= 24);
	line_of(&f, "pubd", line, sizeof(line));
	assert_non_null(strstr(line, "9.8.7"));
	assert_non_null(strstr(line, "udp joined 2/2"));
	assert_non_null(strstr(line, "clients 4"));
	assert_non_null(strstr(line, "12:34:56"));
	line_of(&f, "alpha", line, sizeof(line));
	assert_non_null(strstr(line, "200"));
	assert_non_null(strstr(line, "2.0k"));
	assert_non_null(strstr(line, "sub_overflow"));
	line_of(&f, "beta", line, sizeof(line));
	assert_non_null(strstr(line, " 0 -"));
	line_of(&f, "errors", line, sizeof(line));
	assert_non_null(strstr(line, "tx_post_errors 3"));
	line_of(&f, "drops/s", line, sizeof(line));
	assert_non_null(strstr(line, "sub_overflow 20.0"));
	assert_int_equal(count_lines(&f, "RCV/s"), 0); /* 80 columns: no room for received rates */
	watch_frame_line(&f, 23, line, sizeof(line));
	assert_string_equal(line, "every 1s");
	/* Wider: the received columns appear, still within the width. */
	assert_int_equal(watch_frame_reset(&f, 120, 30), 0);
	watch_layout(&f, &b, &r, &info);
	assert_int_equal(count_lines(&f, "RCV/s"), 1);
	watch_frame_close(&f);
	watch_rates_close(&r);
	watch_sample_close(&a);
	watch_sample_close(&b);
}

/* A repair group's columns, by name: repaired, unrecovered, NAKs sent + received. */
static void feed_repair(struct watch_sample *s, uint64_t repaired, uint64_t unrecovered, uint64_t sent, uint64_t recv)
{
	static const struct pub_column cols[] = {{"name", PUB_VALUE_STR},
						 {"repaired", PUB_VALUE_U64},
						 {"unrecovered", PUB_VALUE_U64},
						 {"naks_sent", PUB_VALUE_U64},
						 {"naks_received", PUB_VALUE_U64}};
	struct pub_value cells[] = {str("rep"), u64(repaired), u64(unrecovered), u64(sent), u64(recv)};
	struct pub_table t = {.name = "groups", .ncols = 5, .cols = cols, .nrows = 1, .cells = cells};

	assert_int_equal(watch_sample_table(&t, s), 0);
}

/* Loss repair shows per group: repaired, unrecovered and NAK rates, on
 * a wide screen. */
static void test_repair_columns(void **state)
{
	struct watch_sample a, b;
	struct watch_rates r;
	struct watch_frame f;
	struct watch_info info = {.clock = "12:34:56", .footer = "every 1s"};
	char line[512];

	(void)state;
	watch_sample_init(&a);
	watch_sample_init(&b);
	feed_status(&a, 42, 100, 1, 0);
	feed_repair(&a, 10, 1, 5, 0);
	feed_status(&b, 42, 101, 1, 0);
	feed_repair(&b, 310, 3, 45, 15);
	assert_int_equal(b.groups[0].repaired, 310);
	assert_int_equal(b.groups[0].unrecovered, 3);
	assert_int_equal(b.groups[0].naks, 60);
	watch_rates_init(&r);
	watch_rates_compute(&r, &a, &b, 1.0);
	assert_true(r.groups[0].repaired > 299.9 && r.groups[0].repaired < 300.1);
	assert_true(r.groups[0].unrecovered > 1.9 && r.groups[0].unrecovered < 2.1);
	assert_true(r.groups[0].naks > 54.9 && r.groups[0].naks < 55.1);
	assert_int_equal(watch_frame_init(&f, 120, 30), 0);
	watch_layout(&f, &b, &r, &info);
	assert_int_equal(count_lines(&f, "RPR/s"), 1);
	line_of(&f, "GROUP", line, sizeof(line));
	assert_non_null(strstr(line, "RPR/s"));
	assert_non_null(strstr(line, "UNRC/s"));
	assert_non_null(strstr(line, "NAK/s"));
	line_of(&f, "rep", line, sizeof(line));
	assert_non_null(strstr(line, "300"));
	assert_non_null(strstr(line, "2.0"));
	assert_non_null(strstr(line, "55.0"));
	assert_int_equal(watch_frame_reset(&f, 80, 24), 0);
	watch_layout(&f, &b, &r, &info);
	assert_int_equal(count_lines(&f, "RPR/s"), 0); /* 80 columns: no room */
	watch_frame_close(&f);
	watch_rates_close(&r);
	watch_sample_close(&a);
	watch_sample_close(&b);
}

/* More groups than lines: as many as fit, then "+N more groups"; nothing past the frame. */
static void test_layout_truncates(void **state)
{
	struct fake_group g[40];
	char names[40][16], line[512];
	struct watch_sample s;
	struct watch_rates r;
	struct watch_frame f;
	struct watch_info info = {.footer = "every 1s"};
	int shown = 0;

	(void)state;
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "g%02d", i);
		g[i] = (struct fake_group){.name = names[i]};
	}
	watch_sample_init(&s);
	watch_rates_init(&r);
	feed_status(&s, 1, 1, 0, 0);
	feed_groups(&s, g, 40);
	watch_rates_compute(&r, NULL, &s, 0);
	assert_int_equal(watch_frame_init(&f, 80, 24), 0);
	watch_layout(&f, &s, &r, &info);
	for (int row = 0; row < 24; row++) {
		watch_frame_line(&f, row, line, sizeof(line));
		assert_true(strlen(line) <= 80);
		shown += line[0] == 'g' && line[1] >= '0' && line[1] <= '9';
	}
	/* 24 lines: 6 above the groups, the footer, and one saying what is left out. */
	assert_int_equal(shown, 24 - WATCH_FIXED_LINES - 1);
	assert_int_equal(count_lines(&f, "+24 more groups"), 1);
	/* Groups pubd itself left out of its reply (its table cap) count too. */
	{
		static const struct pub_column mcols[] = {{"table", PUB_VALUE_STR}, {"rows_not_shown", PUB_VALUE_U64}};
		struct pub_value cells[] = {str("groups"), u64(100)};
		struct pub_table t = {.name = "more", .ncols = 2, .cols = mcols, .nrows = 1, .cells = cells};

		assert_int_equal(watch_sample_table(&t, &s), 0);
		watch_frame_reset(&f, 80, 24);
		watch_layout(&f, &s, &r, &info);
		assert_int_equal(count_lines(&f, "+124 more groups"), 1);
	}
	/* A tiny terminal: still nothing outside the frame, no crash. */
	assert_int_equal(watch_frame_reset(&f, 10, 3), 0);
	watch_layout(&f, &s, &r, &info);
	for (int row = 0; row < 3; row++)
		assert_true(watch_frame_line(&f, row, line, sizeof(line)) <= 10);
	watch_frame_close(&f);
	watch_rates_close(&r);
	watch_sample_close(&s);
}

/* A long or hostile group name stays in its column, as printable ASCII. */
static void test_layout_names(void **state)
{
	struct fake_group g[] = {{.name = "a-very-long-group-name-that-goes-on\x1b[2J"}, {.name = "ok"}};
	struct watch_sample s;
	struct watch_rates r;
	struct watch_frame f;
	struct watch_info info = {0};
	char line[512];

	(void)state;
	watch_sample_init(&s);
	watch_rates_init(&r);
	feed_status(&s, 1, 1, 0, 0);
	feed_groups(&s, g, 2);
	watch_rates_compute(&r, NULL, &s, 0);
	assert_null(strchr(s.groups[0].name, 0x1b));
	assert_int_equal(watch_frame_init(&f, 80, 24), 0);
	watch_layout(&f, &s, &r, &info);
	line_of(&f, "a-very", line, sizeof(line));
	assert_non_null(strstr(line, "a-very-long-gro~ "));
	assert_non_null(strstr(line, "    0       -")); /* subscribers, then no rates yet */
	for (size_t i = 0; line[i]; i++)
		assert_true(line[i] >= 0x20 && line[i] < 0x7f);
	watch_frame_close(&f);
	watch_rates_close(&r);
	watch_sample_close(&s);
}

/* pubd away: the reason on its lines, within the frame, the footer kept. */
static void test_layout_down(void **state)
{
	struct watch_sample s;
	struct watch_rates r;
	struct watch_frame f;
	struct watch_info info = {.footer = "every 1s",
				  .down = "unreachable at /run/x.sock\nConnection refused\nretrying"};
	char line[512];

	(void)state;
	watch_sample_init(&s);
	watch_rates_init(&r);
	assert_int_equal(watch_frame_init(&f, 30, 5), 0);
	watch_layout(&f, &s, &r, &info);
	watch_frame_line(&f, 0, line, sizeof(line));
	assert_string_equal(line, "pubd unreachable at /run/x.soc"); /* cut at 30 columns */
	assert_int_equal(f.attr[5], WATCH_ATTR_CHANGED);
	watch_frame_line(&f, 1, line, sizeof(line));
	assert_string_equal(line, "  Connection refused");
	watch_frame_line(&f, 2, line, sizeof(line));
	assert_string_equal(line, "  retrying");
	watch_frame_line(&f, 4, line, sizeof(line));
	assert_string_equal(line, "every 1s");
	assert_int_equal(count_lines(&f, "GROUP"), 0);
	watch_frame_close(&f);
	watch_rates_close(&r);
	watch_sample_close(&s);
}

static char *written(const struct watch_frame *f, bool ansi)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	if (ansi)
		watch_frame_write_ansi(f, out);
	else
		watch_frame_write_plain(f, out);
	fclose(out);
	return buf;
}

/* Cells whose text changed since the frame before are highlighted, others not. */
static void test_diff_and_output(void **state)
{
	struct watch_frame f0, f1;
	char *ansi, *plain;

	(void)state;
	assert_int_equal(watch_frame_init(&f0, 20, 3), 0);
	assert_int_equal(watch_frame_init(&f1, 20, 3), 0);
	watch_frame_cell(&f0, 0, 0, 5, true, "a", "10");
	watch_frame_cell(&f0, 0, 6, 5, true, "b", "20");
	watch_frame_diff(&f0, NULL);
	for (int i = 0; i < 20; i++)
		assert_int_equal(f0.attr[i], WATCH_ATTR_NONE); /* a first frame: nothing to compare */
	watch_frame_cell(&f1, 0, 0, 5, true, "a", "10");
	watch_frame_cell(&f1, 0, 6, 5, true, "b", "25");
	watch_frame_cell(&f1, 1, 0, 5, true, "c", "new");
	watch_frame_diff(&f1, &f0);
	assert_int_equal(f1.attr[3], WATCH_ATTR_NONE);	    /* "a": same text */
	assert_int_equal(f1.attr[9], WATCH_ATTR_CHANGED);   /* "b": 20 -> 25 */
	assert_int_equal(f1.attr[8], WATCH_ATTR_NONE);	    /* its padding is not */
	assert_int_equal(f1.attr[20 + 4], WATCH_ATTR_NONE); /* "c" had no earlier value */
	ansi = written(&f1, true);
	assert_non_null(strstr(ansi, "\033[7m25\033[m"));
	assert_non_null(strstr(ansi, "\033[1;1H"));
	plain = written(&f1, false);
	assert_null(strchr(plain, 0x1b));
	assert_string_equal(plain, "   10    25\n  new\n");
	free(ansi);
	free(plain);
	/* A full-width line is not followed by erase-to-end (it would erase its last column). */
	watch_frame_reset(&f0, 4, 1);
	watch_frame_put(&f0, 0, 0, "abcdefgh", WATCH_ATTR_NONE);
	ansi = written(&f0, true);
	assert_string_equal(ansi, "\033[1;1Habcd");
	free(ansi);
	watch_frame_close(&f0);
	watch_frame_close(&f1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_counters),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_sample_from_tables),
		cmocka_unit_test(test_rates_from_two_samples),
		cmocka_unit_test(test_fmt),
		cmocka_unit_test(test_layout_80x24),
		cmocka_unit_test(test_repair_columns),
		cmocka_unit_test(test_layout_truncates),
		cmocka_unit_test(test_layout_names),
		cmocka_unit_test(test_layout_down),
		cmocka_unit_test(test_diff_and_output),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
