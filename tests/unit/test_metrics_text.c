// SPDX-License-Identifier: MIT
/*
 * The Prometheus renderer (daemon/core/prom.c, metrics_text.c) on tables
 * built as pubd builds them: escaping, HELP/TYPE before every family and
 * each family's samples together, counters named _total, the bound on
 * per-source and per-subscriber series (the most recently heard sources
 * kept, the rest counted) and the drops that follow it, port counters.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics_text.h"
#include "prom.h"
#include "proto.h"

static struct pub_table_builder b;
static struct prom_out out;

static int setup(void **state)
{
	memset(&b, 0, sizeof(b));
	b.grow = pub_table_grow_realloc;
	memset(&out, 0, sizeof(out));
	return 0;
}

static int teardown(void **state)
{
	free(b.buf);
	prom_free(&out);
	return 0;
}

static void render(unsigned max_sources, unsigned max_subscribers)
{
	const struct pubd_metrics_limits lim = {max_sources, max_subscribers};

	assert_int_equal(b.err, 0);
	assert_int_equal(pubd_metrics_text(b.buf, b.len, &lim, &out), 0);
	assert_non_null(out.buf);
}

/* How many lines of the text start with prefix. */
static unsigned lines_starting(const char *prefix)
{
	const char *p = out.buf;
	unsigned n = 0;

	while (p && *p) {
		n += !strncmp(p, prefix, strlen(prefix));
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return n;
}

static bool has_line(const char *line)
{
	size_t len = strlen(line);
	const char *p = out.buf;

	while ((p = strstr(p, line))) {
		if ((p == out.buf || p[-1] == '\n') && (p[len] == '\n' || !p[len]))
			return true;
		p += len;
	}
	return false;
}

/* Every sample's family was declared (HELP then TYPE) just before its run
 * of samples, no family comes twice, and every counter ends in _total. */
static void assert_well_formed(void)
{
	char fam[256] = "", name[256], type[16], *copy = strdup(out.buf), *save = NULL, *l;
	char seen[512][256];
	unsigned nseen = 0, i;
	bool typed = false;

	for (l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (sscanf(l, "# HELP %255s", name) == 1) {
			for (i = 0; i < nseen; i++)
				assert_string_not_equal(seen[i], name); /* a family comes once */
			assert_true(nseen < 512);
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
			snprintf(fam, sizeof(fam), "%s", name);
			typed = false;
			continue;
		}
		if (sscanf(l, "# TYPE %255s %15s", name, type) == 2) {
			assert_string_equal(name, fam);
			if (!strcmp(type, "counter"))
				assert_string_equal(name + strlen(name) - 6, "_total");
			else
				assert_string_equal(type, "gauge");
			typed = true;
			continue;
		}
		assert_true(typed);
		assert_int_equal(strncmp(l, fam, strlen(fam)), 0);
		assert_true(l[strlen(fam)] == '{' || l[strlen(fam)] == ' ');
	}
	free(copy);
}

static void kv(const char *k, const char *v)
{
	pub_table_str(&b, k);
	pub_table_str(&b, v);
}

static void test_label_values_and_help_are_escaped(void **state)
{
	static const char *const cols[] = {"name:s", "published:u"};

	pub_table_begin(&b, 0, "groups", cols, 2);
	pub_table_str(&b, "a\"b\\c\nd");
	pub_table_u64(&b, 7);
	assert_int_equal(pub_table_end(&b), 0);
	render(10, 10);
	assert_true(has_line("pubd_group_messages_published_total{group=\"a\\\"b\\\\c\\nd\"} 7"));
	assert_well_formed();

	prom_free(&out);
	prom_family(&out, "x_total", PROM_COUNTER, "back\\slash \"quoted\"\nnext");
	assert_string_equal(out.buf, "# HELP x_total back\\\\slash \"quoted\"\\nnext\n# TYPE x_total counter\n");
}

/* A client's HELLO name lands in the subscriber labels: an OSC and a
 * colour sequence, a C1 CSI, a right-to-left override, bytes that are not
 * UTF-8 and DEL each become the text \xNN (a scraper refuses a page with
 * invalid UTF-8; a terminal acts on the controls); what is seen stays. */
static void test_client_names_cannot_break_a_scrape(void **state)
{
	static const char *const sc[] = {"group:s", "client:u", "name:s", "delivered:u", "queued:u", "dropped:u"};
	static const char hostile[] = "\x1b]0;pwned\x07\x1b[31m\xc2\x9b\xe2\x80\xaeok\xc3\xa9\xff\xfe\x7f";
	const unsigned char *p;

	pub_table_begin(&b, 0, "subscribers", sc, 6);
	pub_table_str(&b, "grp");
	pub_table_u64(&b, 1);
	pub_table_str(&b, hostile);
	pub_table_u64(&b, 5);
	pub_table_u64(&b, 0);
	pub_table_u64(&b, 0);
	assert_int_equal(pub_table_end(&b), 0);
	render(10, 10);
	assert_well_formed();
	assert_true(has_line(
		"pubd_subscriber_messages_delivered_total{group=\"grp\",client=\"1\",name=\"\\\\x1b]0;"
		"pwned\\\\x07\\\\x1b[31m\\\\xc2\\\\x9b\\\\xe2\\\\x80\\\\xaeok\xc3\xa9\\\\xff\\\\xfe\\\\x7f\"} 5"));
	/* Nothing in the page but printable ASCII, newlines and that é. */
	for (p = (const unsigned char *)out.buf; *p; p++)
		assert_true((*p >= 0x20 && *p < 0x7f) || *p == '\n' || (p[0] == 0xc3 && p[1] == 0xa9) ||
			    (p[-1] == 0xc3 && p[0] == 0xa9));
}

static void test_counters_status_and_fabric(void **state)
{
	static const char *const st[] = {"version:s",  "fabric:s",    "source_id:s",
					 "uptime_s:u", "tx_queued:u", "reasm_held_bytes:u"};
	static const char *const ctr[] = {"counter:s", "value:u"};
	static const char *const kvc[] = {"key:s", "value:s"};

	pub_table_begin(&b, 0, "status", st, 6);
	pub_table_str(&b, "1.2.3");
	pub_table_str(&b, "verbs");
	pub_table_str(&b, "00000000deadbeef");
	pub_table_u64(&b, 42);
	pub_table_u64(&b, 3);
	pub_table_u64(&b, 4096);
	assert_int_equal(pub_table_end(&b), 0);
	pub_table_begin(&b, 0, "counters", ctr, 2);
	pub_table_str(&b, "published");
	pub_table_u64(&b, 11);
	pub_table_str(&b, "rx_datagrams");
	pub_table_u64(&b, 12);
	assert_int_equal(pub_table_end(&b), 0);
	pub_table_begin(&b, 0, "fabric", kvc, 2);
	kv("fabric", "verbs");
	kv("device", "rxe0");
	kv("port_state", "ACTIVE");
	kv("qp_num", "17");
	kv("srq_fill", "1000");
	kv("rx_completion_errors", "5");
	kv("gid", "fe80::1");
	kv("counters.port_rcv_packets", "123");
	kv("counters.port_xmit_data", "456");
	kv("hw_counters.rcvd_pkts", "789");
	kv("hw_counters.lifespan", "10");
	kv("counters.weird", "n/a");
	assert_int_equal(pub_table_end(&b), 0);
	render(10, 10);
	assert_well_formed();
	assert_true(has_line("pubd_info{version=\"1.2.3\",fabric=\"verbs\",source_id=\"00000000deadbeef\"} 1"));
	assert_true(has_line("pubd_uptime_seconds 42"));
	assert_true(has_line("pubd_tx_queued_messages 3"));
	assert_true(has_line("pubd_reasm_held_bytes 4096"));
	assert_true(has_line("pubd_messages_published_total 11"));
	assert_true(has_line("pubd_rx_datagrams_total 12"));
	assert_true(has_line("pubd_fabric_info{fabric=\"verbs\",device=\"rxe0\",port_state=\"ACTIVE\"} 1"));
	assert_true(has_line("pubd_fabric_srq_fill 1000"));
	assert_true(has_line("pubd_fabric_rx_completion_errors_total 5"));
	assert_true(has_line("pubd_port_counters_total{set=\"counters\",counter=\"port_rcv_packets\"} 123"));
	assert_true(has_line("pubd_port_counters_total{set=\"counters\",counter=\"port_xmit_data\"} 456"));
	assert_true(has_line("pubd_port_counters_total{set=\"hw_counters\",counter=\"rcvd_pkts\"} 789"));
	assert_int_equal(lines_starting("pubd_port_counters_total{"), 3); /* not lifespan, not "n/a" */
	assert_int_equal(lines_starting("pubd_fabric_qp_num"), 0);
	assert_int_equal(lines_starting("pubd_fabric_gid"), 0);
}

#define NSRC 250u

/* 250 sources with idle times 0..249 ms in scrambled order, a bound of 100:
 * the 100 most recently heard are kept, 150 counted as omitted, and the
 * drops table's source rows follow the same choice. */
static void test_sources_bounded_to_most_recent(void **state)
{
	static const char *const sc[] = {"source:s", "group:s", "delivered:u", "idle_ms:u"};
	static const char *const dc[] = {"scope:s", "name:s", "reason:s", "unit:s", "count:u"};
	char src[32], name[64], line[160];
	unsigned i, idle;

	pub_table_begin(&b, 0, "sources", sc, 4);
	for (i = 0; i < NSRC; i++) {
		idle = (i * 37) % NSRC; /* a permutation of 0..249 */
		snprintf(src, sizeof(src), "%016x", idle);
		pub_table_str(&b, src);
		pub_table_str(&b, "g");
		pub_table_u64(&b, 1000 + idle);
		pub_table_u64(&b, idle);
	}
	pub_table_str(&b, "(evicted)");
	pub_table_str(&b, "*");
	pub_table_u64(&b, 5);
	pub_table_u64(&b, 0);
	assert_int_equal(pub_table_end(&b), 0);
	pub_table_begin(&b, 0, "drops", dc, 5);
	for (i = 0; i < NSRC; i++) {
		snprintf(name, sizeof(name), "%016x/g", i);
		kv("source", name);
		kv("seq_gap", "messages");
		pub_table_u64(&b, i + 1);
	}
	kv("daemon", "-");
	kv("malformed", "datagrams");
	pub_table_u64(&b, 9);
	assert_int_equal(pub_table_end(&b), 0);
	render(100, 10);
	assert_well_formed();
	assert_int_equal(lines_starting("pubd_source_messages_delivered_total{"), 101);
	for (i = 0; i < NSRC; i++) {
		snprintf(line, sizeof(line), "pubd_source_messages_delivered_total{source=\"%016x\",group=\"g\"} %u", i,
			 1000 + i);
		assert_int_equal(has_line(line), i < 100);
		snprintf(line, sizeof(line),
			 "pubd_dropped_messages_total{scope=\"source\",name=\"%016x/g\",reason=\"seq_gap\"} %u", i,
			 i + 1);
		assert_int_equal(has_line(line), i < 100);
	}
	assert_true(has_line("pubd_source_messages_delivered_total{source=\"(evicted)\",group=\"*\"} 5"));
	assert_true(has_line("pubd_metrics_sources_omitted 150"));
	assert_true(has_line("pubd_dropped_datagrams_total{scope=\"daemon\",name=\"-\",reason=\"malformed\"} 9"));
}

/* Sources with equal idle times at the cut: exactly the bound is kept. */
static void test_sources_bound_with_ties(void **state)
{
	static const char *const sc[] = {"source:s", "group:s", "delivered:u", "idle_ms:u"};
	char src[32];
	unsigned i;

	pub_table_begin(&b, 0, "sources", sc, 4);
	for (i = 0; i < 30; i++) {
		snprintf(src, sizeof(src), "%016x", i);
		pub_table_str(&b, src);
		pub_table_str(&b, "g");
		pub_table_u64(&b, i);
		pub_table_u64(&b, i < 20 ? 7 : 3); /* 10 at 3 ms, 20 at 7 ms */
	}
	assert_int_equal(pub_table_end(&b), 0);
	render(15, 10);
	assert_int_equal(lines_starting("pubd_source_messages_delivered_total{"), 15);
	for (i = 20; i < 30; i++) { /* every one of the most recent kept */
		char line[128];

		snprintf(line, sizeof(line), "pubd_source_messages_delivered_total{source=\"%016x\",group=\"g\"} %u", i,
			 i);
		assert_true(has_line(line));
	}
	assert_true(has_line("pubd_metrics_sources_omitted 15"));
}

static void test_subscribers_bounded(void **state)
{
	static const char *const sc[] = {"group:s", "client:u", "name:s", "delivered:u", "queued:u", "dropped:u"};
	static const char *const dc[] = {"scope:s", "name:s", "reason:s", "unit:s", "count:u"};
	unsigned i;

	pub_table_begin(&b, 0, "subscribers", sc, 6);
	for (i = 0; i < 5; i++) {
		pub_table_str(&b, "grp");
		pub_table_u64(&b, i + 1);
		pub_table_str(&b, "itest");
		pub_table_u64(&b, 10 * i);
		pub_table_u64(&b, i);
		pub_table_u64(&b, 2);
	}
	assert_int_equal(pub_table_end(&b), 0);
	pub_table_begin(&b, 0, "drops", dc, 5);
	kv("subscriber", "1:itest/grp");
	kv("sub_overflow", "messages");
	pub_table_u64(&b, 2);
	kv("subscriber", "5:itest/grp");
	kv("sub_overflow", "messages");
	pub_table_u64(&b, 2);
	assert_int_equal(pub_table_end(&b), 0);
	render(10, 3);
	assert_well_formed();
	assert_true(has_line("pubd_subscriber_messages_delivered_total{group=\"grp\",client=\"3\",name=\"itest\"} 20"));
	assert_int_equal(lines_starting("pubd_subscriber_messages_delivered_total{"), 3);
	assert_int_equal(lines_starting("pubd_subscriber_queued_messages{"), 3);
	assert_true(has_line("pubd_metrics_subscribers_omitted 2"));
	assert_true(has_line(
		"pubd_dropped_messages_total{scope=\"subscriber\",name=\"1:itest/grp\",reason=\"sub_overflow\"} 2"));
	assert_int_equal(lines_starting("pubd_dropped_messages_total{scope=\"subscriber\",name=\"5:"), 0);
}

static void test_malformed_frames_are_refused(void **state)
{
	static const char *const cols[] = {"name:s", "published:u"};
	const struct pubd_metrics_limits lim = {10, 10};

	pub_table_begin(&b, 0, "groups", cols, 2);
	pub_table_str(&b, "g");
	pub_table_u64(&b, 1);
	assert_int_equal(pub_table_end(&b), 0);
	assert_int_equal(pubd_metrics_text(b.buf, b.len - 3, &lim, &out), -EPROTO);
	b.buf[PUB_PROTO_HDR_LEN + 4] = 200; /* the table name's length, past the end */
	assert_int_equal(pubd_metrics_text(b.buf, b.len, &lim, &out), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_label_values_and_help_are_escaped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_names_cannot_break_a_scrape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counters_status_and_fabric, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sources_bounded_to_most_recent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sources_bound_with_ties, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subscribers_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_frames_are_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
