/* SPDX-License-Identifier: MIT */
/*
 * Config loader: every kind of error with its exact FILE:LINE:COLUMN, and
 * robustness against hostile documents (nesting, aliases, garbage).
 */
#include <sys/stat.h>

#include "config_harness.h"

/* ---- each kind of error, with its exact place ------------------------- */

static void config_error_out_of_range_names_place_and_form(void **state)
{
	one_error("limits:\n  subscriber_queue: 2000000\n", "t.yaml:2:21: limits.subscriber_queue: expected an "
							    "integer from 1 to 1048576, got \"2000000\"");
}

static void config_error_wrong_form_quotes_the_value(void **state)
{
	one_error("# comment\nlimits:\n  subscriber_queue: lots\n", "t.yaml:3:21: limits.subscriber_queue: expected "
								    "an integer from 1 to 1048576, got \"lots\"");
	/* Control bytes are escaped: an error message is one clean log line. */
	one_error("daemon: {log_level: \"a\\nb\\\"\"}", "t.yaml:1:21: daemon.log_level: expected one of debug, info, "
							"notice, warning, err, got \"a\\x0ab\\\"\"");
}

static void config_error_wrong_type_names_what_was_found(void **state)
{
	one_error("fabric:\n  srq_depth: [1, 2]\n",
		  "t.yaml:2:14: fabric.srq_depth: expected an integer from 16 to 65536, got a list");
	one_error("fabric:\n  udp_port:\n", "t.yaml:2:12: fabric.udp_port: expected an integer from 1 to 65535, got "
					    "nothing");
	one_error("daemon: {socket: {a: b}}", "t.yaml:1:18: daemon.socket: expected an absolute socket path of at "
					      "most 107 bytes, got a mapping");
	one_error("fabric: 5\n", "t.yaml:1:9: fabric: expected a mapping of keys, got \"5\"");
}

static void config_error_unknown_key_lists_known_ones(void **state)
{
	one_error("fabric:\n  type: udp\n  srq_dept: 5\n",
		  "t.yaml:3:3: fabric: unknown key \"srq_dept\" (expected one of type, address, udp_port, mtu, "
		  "srq_depth, srq_low_watermark, send_queue_depth, heartbeat_ms, busy_poll, batch, rx_linger_us, "
		  "sendonly_hold_ms, receive)");
	one_error("limits: {colour: red}",
		  "t.yaml:1:10: limits: unknown key \"colour\" (expected one of "
		  "max_message_size, reassembly_timeout_ms, reassembly_budget, "
		  "reassembly_inflight, subscriber_queue, subscriber_queue_bytes, slow_subscriber, "
		  "client_buffer_budget, max_clients, max_clients_per_uid, hello_timeout_ms, publish_log, deliver_log, "
		  "direct_log, group_log, group_log_drain_ms, "
		  "max_sources, repair_budget)");
}

static void config_error_unknown_section(void **state)
{
	one_error("daemon: {}\nfabrik:\n  type: udp\n",
		  "t.yaml:2:1: unknown section \"fabrik\" (expected daemon, fabric, limits, metrics or groups)");
}

/* metrics.listen: an IP literal and a port, IPv6 in brackets; null is none. */
static void config_metrics_listen(void **state)
{
	static const char *const bad[] = {"localhost:9477", "127.0.0.1",	"127.0.0.1:", "127.0.0.1:65536",
					  "::1:9477",	    "[127.0.0.1]:9477", "[::1]9477",  ":9477"};
	const struct sockaddr_in6 *a6;
	const struct sockaddr_in *a4;
	char yaml[128], want[300];
	size_t i;

	assert_int_equal(parse("metrics:\n  listen: 127.0.0.1:9477\n"), 0);
	a4 = (const struct sockaddr_in *)&cfg.metrics_sockaddr;
	assert_string_equal(cfg.metrics_listen, "127.0.0.1:9477");
	assert_int_equal(a4->sin_family, AF_INET);
	assert_int_equal(ntohs(a4->sin_port), 9477);
	assert_int_equal(ntohl(a4->sin_addr.s_addr), INADDR_LOOPBACK);
	teardown(state);
	assert_int_equal(parse("metrics:\n  listen: \"[::1]:9\"\n"), 0);
	a6 = (const struct sockaddr_in6 *)&cfg.metrics_sockaddr;
	assert_int_equal(a6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(a6->sin6_port), 9);
	assert_true(IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr));
	teardown(state);
	assert_int_equal(parse("metrics:\n  listen: null\n"), 0);
	assert_null(cfg.metrics_listen);
	assert_int_equal(cfg.metrics_sockaddr_len, 0);
	teardown(state);
	assert_int_equal(parse(""), 0);
	assert_null(cfg.metrics_listen);
	teardown(state);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(yaml, sizeof(yaml), "metrics:\n  listen: \"%s\"\n", bad[i]);
		snprintf(want, sizeof(want),
			 "t.yaml:2:11: metrics.listen: expected an IP address and port to serve /metrics on, like "
			 "127.0.0.1:9477 or [::1]:9477 (null: none), got \"%s\"",
			 bad[i]);
		one_error(yaml, want);
		teardown(state);
	}
}

static void config_error_key_given_twice(void **state)
{
	one_error("daemon:\n  log_level: info\n  log_level: debug\n",
		  "t.yaml:3:3: daemon.log_level: given twice (first at 2:14)");
	one_error("daemon: {}\ndaemon: {}\n", "t.yaml:2:1: daemon: given twice (first at 1:1)");
}

static void config_error_key_not_a_name(void **state)
{
	one_error("daemon:\n  [a]: 1\n", "t.yaml:2:3: daemon: expected a key name, got a list");
}

static void config_error_yaml_syntax_gives_libyaml_problem_and_place(void **state)
{
	one_error("daemon:\n  socket: [a\n",
		  "t.yaml:3:1: invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence at 2:11)");
	one_error("daemon:\n socket: a\n  x: b\n", "t.yaml:3:4: invalid YAML: mapping values are not allowed in "
						   "this context");
	one_error("a: *nowhere\n", "t.yaml:1:4: invalid YAML: found undefined alias");
}

static void config_error_invalid_utf8_names_the_byte(void **state)
{
	one_error("daemon: \xff\n", "t.yaml:1:9: invalid YAML: invalid leading UTF-8 octet (0xFF)");
	/* The place counts lines, and characters (not bytes) within one. */
	one_error("daemon:\n  log_level: \"\xc3\xa9t\xc3\xa9\x01\"\n",
		  "t.yaml:2:18: invalid YAML: control characters are not allowed (0x01)");
}

/* A bidi override or a line separator in a quoted value is escaped as the
 * log escapes it: on a terminal the message must say what it says. */
static void config_error_escapes_unseen_characters(void **state)
{
	one_error("daemon:\n  log_level: \"x\xe2\x80\xaey\xe2\x80\xa8z\xc3\xa9\"\n",
		  "t.yaml:2:14: daemon.log_level: expected one of debug, info, notice, warning, err, got "
		  "\"x\\xe2\\x80\\xaey\\xe2\\x80\\xa8z\xc3\xa9\"");
}

static void config_error_document_not_a_mapping(void **state)
{
	one_error("- a\n- b\n",
		  "t.yaml:1:1: expected a mapping of sections (daemon, fabric, limits, metrics, groups), got a list");
	one_error("just words\n", "t.yaml:1:1: expected a mapping of sections (daemon, fabric, limits, metrics, "
				  "groups), got \"just words\"");
}

static void config_error_second_document(void **state)
{
	one_error("daemon: {}\n---\nfabric: {}\n", "t.yaml:3:1: expected one YAML document, found a second one");
}

static void config_collects_several_errors_in_one_pass(void **state)
{
	assert_int_equal(parse("daemon:\n"		     /* 1 */
			       "  log_level: loud\n"	     /* 2 */
			       "  mystery: 1\n"		     /* 3 */
			       "fabric:\n"		     /* 4 */
			       "  udp_port: 0\n"	     /* 5 */
			       "  srq_depth: 64\n"	     /* 6 */
			       "  srq_low_watermark: 64\n"   /* 7 */
			       "groups:\n"		     /* 8 */
			       "  - name: a\n"		     /* 9 */
			       "    address: 10.0.0.1\n"     /* 10 */
			       "  - name: a\n"		     /* 11 */
			       "    address: 239.0.0.1\n"    /* 12 */
			       "limits:\n"		     /* 13 */
			       "  slow_subscriber: drop\n"), /* 14 */
			 -EINVAL);
	assert_int_equal(errs.n, 7);
	/* In file order, whatever order the checks ran in. */
	assert_string_equal(err(0), "t.yaml:2:14: daemon.log_level: expected one of debug, info, notice, warning, "
				    "err, got \"loud\"");
	assert_string_equal(err(1), "t.yaml:3:3: daemon: unknown key \"mystery\" (expected one of socket, "
				    "socket_mode, log_level, shm, shm_direct)");
	assert_string_equal(err(2), "t.yaml:5:13: fabric.udp_port: expected an integer from 1 to 65535, got \"0\"");
	assert_string_equal(err(3), "t.yaml:7:22: fabric.srq_low_watermark: must be less than fabric.srq_depth "
				    "(64), got 64");
	assert_string_equal(err(4), "t.yaml:10:14: groups[0].address: expected an IPv4 multicast address "
				    "(224.0.0.0/4) or an IPv6 one (ff00::/8), got \"10.0.0.1\"");
	assert_string_equal(err(5), "t.yaml:11:11: groups[1].name: duplicate group \"a\", first defined at 9:11 "
				    "(groups[0])");
	assert_string_equal(err(6), "t.yaml:14:20: limits.slow_subscriber: expected one of drop-oldest, "
				    "drop-newest, disconnect, got \"drop\"");
	/* A failed parse leaves nothing behind. */
	assert_null(cfg.socket_path);
	assert_null(cfg.groups);
}

static void config_error_count_is_capped(void **state)
{
	char *doc = malloc(300 * 20 + 16), *p = doc;
	int i;

	p += sprintf(p, "groups:\n");
	for (i = 0; i < 300; i++)
		p += sprintf(p, "  - {name: g%d}\n", i);
	assert_int_equal(parse(doc), -EINVAL);
	free(doc);
	assert_int_equal(errs.n, PUBD_CONFIG_MAX_ERRORS + 1);
	assert_string_equal(err(100), "t.yaml: too many errors (more than 100); stopped looking");
	assert_string_equal(err(0), "t.yaml:2:5: groups[0]: missing key \"address\" (expected an IPv4 multicast "
				    "address (224.0.0.0/4) or an IPv6 one (ff00::/8), or scope: host)");
}

/* IPv6 groups: scopes that never leave the host are refused on every
 * fabric; on udp, a group of a family the socket does not carry, at the
 * group's address and saying which fabric.address to give instead. */
static void config_ipv6_group_scope_and_family(void **state)
{
	static const char *const host_only[] = {"ff01::1", "ff11::5", "ff00::1", "ff1f::1"};
	char doc[160];
	size_t i;

	for (i = 0; i < sizeof(host_only) / sizeof(host_only[0]); i++) {
		snprintf(doc, sizeof(doc),
			 "fabric: {type: verbs, address: eth0}\ngroups:\n  - {name: g, address: '%s'}\n", host_only[i]);
		assert_int_equal(parse(doc), -EINVAL);
		assert_int_equal(errs.n, 1);
		assert_non_null(strstr(err(0), "t.yaml:3:24: groups[0].address: "));
		assert_non_null(strstr(err(0), i % 2 ? "" : "which never leaves this host"));
	}
	one_error("groups:\n  - {name: g, address: 'ff01::1'}\n",
		  "t.yaml:2:24: groups[0].address: ff01::1 has interface-local scope (ff01::/16), which never leaves "
		  "this host; expected a group of link-local (ff12::), site-local (ff15::) or wider scope");
	/* udp: the family the socket carries. */
	one_error("fabric: {type: udp, address: 10.1.2.3}\ngroups:\n  - {name: g, address: 'ff15::1'}\n",
		  "t.yaml:3:24: groups[0].address: the udp fabric cannot serve the IPv6 group ff15::1: fabric.address "
		  "is an IPv4 address, which makes the udp fabric IPv4 only; set it to the interface name (IPv4 and "
		  "IPv6 groups) or to an IPv6 address");
	one_error("fabric: {type: udp}\ngroups:\n  - {name: g, address: 'ff12::1'}\n",
		  "t.yaml:3:24: groups[0].address: the udp fabric cannot serve the IPv6 group ff12::1: with no "
		  "fabric.address the udp fabric runs on lo, which does not loop IPv6 multicast back; set "
		  "fabric.address to an interface name or to an IPv6 address of the interface");
	one_error("fabric: {type: udp, address: 'fd00::1'}\ngroups:\n  - {name: g, address: 239.1.1.1}\n",
		  "t.yaml:3:24: groups[0].address: the udp fabric cannot serve the IPv4 group 239.1.1.1: "
		  "fabric.address is an IPv6 address, which makes the udp fabric IPv6 only; set it to the interface "
		  "name (IPv4 and IPv6 groups) or to an IPv4 address");
	/* Served: an interface carries both; an IPv6 address carries IPv6 of
	 * any scope from link-local up; verbs and auto decide at the join. */
	parses("fabric: {type: udp, address: eth0}\ngroups:\n  - {name: a, address: 'ff15::1'}\n"
	       "  - {name: b, address: 239.1.1.1}\n  - {name: c, address: 'ff02::1:2'}\n");
	assert_int_equal(cfg.groups[0].address.ss_family, AF_INET6);
	assert_int_equal(cfg.groups[1].address.ss_family, AF_INET);
	parses("fabric: {type: udp, address: 'fd00::1'}\ngroups:\n  - {name: a, address: 'ff12::1'}\n");
	parses("fabric: {type: verbs, address: 10.1.2.3}\ngroups:\n  - {name: a, address: 'ff15::1'}\n");
	/* A bad address gets its own error only. */
	one_error("fabric: {type: udp}\ngroups:\n  - {name: g, address: 'fe80::1'}\n",
		  "t.yaml:3:24: groups[0].address: expected an IPv4 multicast address (224.0.0.0/4) or an IPv6 one "
		  "(ff00::/8), got \"fe80::1\"");
}

static void config_error_format_without_place(void **state)
{
	assert_int_equal(pubd_config_load(&cfg, "/nonexistent/pubd.yaml", &fake_names, &errs), -ENOENT);
	assert_int_equal(errs.n, 1);
	assert_int_equal(errs.v[0].line, 0);
	assert_string_equal(err(0), "/nonexistent/pubd.yaml: cannot read: No such file or directory");
	assert_int_equal(pubd_config_error_format(&errs, 1, line, sizeof(line)), -EINVAL);
	assert_null(cfg.socket_path);
}

/* A FIFO in the config's place (with no writer, or one that never closes)
 * would block the loop at a reload, SIGTERM included: refused at once. A
 * directory too, by its name. */
static void config_special_files_are_refused(void **state)
{
	char dir[] = "/tmp/pubd-cfg-XXXXXX", fifo[64];

	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo.yaml", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(pubd_config_load(&cfg, fifo, &fake_names, &errs), -EINVAL);
	assert_int_equal(errs.n, 1);
	assert_non_null(strstr(err(0), "fifo.yaml: cannot read: a FIFO, not a regular file"));
	pubd_config_free(&cfg);
	pubd_config_errors_free(&errs);
	assert_int_equal(pubd_config_load(&cfg, dir, &fake_names, &errs), -EINVAL);
	assert_non_null(strstr(err(0), ": cannot read: a directory, not a regular file"));
	unlink(fifo);
	rmdir(dir);
}

/* ---- robustness ------------------------------------------------------ */

/* libyaml's scanner is quadratic in flow depth: the loader must stop early
 * (100k levels took 20 s before it did). */
static void config_deep_nesting_is_refused_quickly(void **state)
{
	size_t n = 100000, i;
	char *doc = malloc(4 * n + 32);

	for (i = 0; i < n; i++)
		doc[i] = '[';
	for (i = 0; i < n; i++)
		doc[n + i] = ']';
	doc[2 * n] = 0;
	one_error(doc, "t.yaml:1:33: nested deeper than 32 levels");

	strcpy(doc, "daemon: ");
	for (i = 0; i < n; i++)
		memcpy(doc + 8 + 4 * i, "{a: ", 4);
	doc[8 + 4 * n] = 0; /* unclosed, too */
	one_error(doc, "t.yaml:1:133: nested deeper than 32 levels");
	free(doc);

	/* 32 levels are still only a wrong type. */
	one_error("daemon: {socket: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
		  "t.yaml:1:18: daemon.socket: expected an absolute socket path of at most 107 bytes, got a list");
}

static void config_alias_fan_out_is_bounded(void **state)
{
	size_t cap = 1 << 20, o = 0, i;
	char *doc = malloc(cap);

	/* 1000 aliases of a group with 2000 ACL entries: two million entries
	 * from a few kilobytes, unless the walk counts what it visits. */
	o += (size_t)snprintf(doc + o, cap - o, "groups:\n - &g {name: x, address: 239.1.1.1, publish: [");
	for (i = 0; i < 2000; i++)
		o += (size_t)snprintf(doc + o, cap - o, "%sany", i ? "," : "");
	o += (size_t)snprintf(doc + o, cap - o, "]}\n");
	for (i = 0; i < 1000; i++)
		o += (size_t)snprintf(doc + o, cap - o, " - *g\n");
	assert_int_equal(parse(doc), -EINVAL);
	free(doc);
	assert_int_equal(errs.n, 1);
	assert_non_null(strstr(err(0), "too many values (more than 1048576, counting each use of an alias)"));
}

static void config_aliases_reuse_values(void **state)
{
	parses("groups:\n"
	       "  - {name: a, address: &addr 239.1.1.1, publish: &ops [uid:1, gid:2]}\n"
	       "  - {name: b, address: *addr, publish: *ops, subscribe: *ops}\n");
	assert_int_equal(cfg.groups[1].publish.n, 2);
	assert_int_equal(cfg.groups[1].subscribe.n, 2);
	assert_ptr_not_equal(cfg.groups[1].publish.entries, cfg.groups[0].publish.entries);
}

static void config_garbage_does_not_crash(void **state)
{
	static const char alphabet[] = "abc:-[]{},&*!|>'\"%@`#?\n \t0123456789.~\\";
	uint32_t x = 12345;
	char doc[256];
	size_t i, j, len;

	for (i = 0; i < 20000; i++) {
		len = i % sizeof(doc);
		for (j = 0; j < len; j++) {
			x = x * 1103515245 + 12345;
			doc[j] = (i & 1) ? (char)(x >> 16) : alphabet[(x >> 16) % (sizeof(alphabet) - 1)];
		}
		pubd_config_free(&cfg);
		pubd_config_errors_free(&errs);
		if (pubd_config_parse(&cfg, "t.yaml", doc, len, &fake_names, &errs) == 0)
			assert_int_equal(errs.n, 0);
		else
			assert_true(errs.n > 0);
		for (j = 0; j < errs.n; j++)
			assert_true(pubd_config_error_format(&errs, j, line, sizeof(line)) > 0);
	}
}

static void config_parse_without_errs_or_twice_frees_cleanly(void **state)
{
	struct pubd_config c;

	assert_int_equal(pubd_config_parse(&c, "t.yaml", "fabric: {mtu: 1}", 16, &fake_names, NULL), -EINVAL);
	assert_null(c.socket_path);
	assert_int_equal(pubd_config_parse(&c, "t.yaml", "fabric: {mtu: 1024}", 19, &fake_names, NULL), 0);
	assert_int_equal(c.mtu, 1024);
	pubd_config_free(&c);
	pubd_config_free(&c);
	pubd_config_errors_free(NULL);
	pubd_config_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(config_error_out_of_range_names_place_and_form, teardown),
		cmocka_unit_test_teardown(config_error_wrong_form_quotes_the_value, teardown),
		cmocka_unit_test_teardown(config_error_wrong_type_names_what_was_found, teardown),
		cmocka_unit_test_teardown(config_error_unknown_key_lists_known_ones, teardown),
		cmocka_unit_test_teardown(config_error_unknown_section, teardown),
		cmocka_unit_test_teardown(config_metrics_listen, teardown),
		cmocka_unit_test_teardown(config_error_key_given_twice, teardown),
		cmocka_unit_test_teardown(config_error_key_not_a_name, teardown),
		cmocka_unit_test_teardown(config_error_yaml_syntax_gives_libyaml_problem_and_place, teardown),
		cmocka_unit_test_teardown(config_error_invalid_utf8_names_the_byte, teardown),
		cmocka_unit_test_teardown(config_error_escapes_unseen_characters, teardown),
		cmocka_unit_test_teardown(config_error_document_not_a_mapping, teardown),
		cmocka_unit_test_teardown(config_error_second_document, teardown),
		cmocka_unit_test_teardown(config_collects_several_errors_in_one_pass, teardown),
		cmocka_unit_test_teardown(config_error_count_is_capped, teardown),
		cmocka_unit_test_teardown(config_error_format_without_place, teardown),
		cmocka_unit_test_teardown(config_deep_nesting_is_refused_quickly, teardown),
		cmocka_unit_test_teardown(config_alias_fan_out_is_bounded, teardown),
		cmocka_unit_test_teardown(config_aliases_reuse_values, teardown),
		cmocka_unit_test_teardown(config_ipv6_group_scope_and_family, teardown),
		cmocka_unit_test_teardown(config_garbage_does_not_crash, teardown),
		cmocka_unit_test_teardown(config_special_files_are_refused, teardown),
		cmocka_unit_test_teardown(config_parse_without_errs_or_twice_frees_cleanly, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
