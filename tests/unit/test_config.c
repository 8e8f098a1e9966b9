/* SPDX-License-Identifier: MIT */
/*
 * Config loader: defaults, every key, value forms, checks across keys,
 * groups and files. Errors and robustness: test_config_errors.c; ACLs:
 * test_acl.c.
 */
#include "config_harness.h"
#include "reasm.h"

/* ---- defaults -------------------------------------------------------- */

static void config_defaults_are_documented_values(void **state)
{
	struct pubd_config c;

	assert_int_equal(pubd_config_defaults(&c), 0);
	assert_defaults(&c);
	pubd_config_free(&c);
	pubd_config_free(&c); /* idempotent */
}

/* pubd_config_key_default reads the table pubd_config_defaults fills from,
 * and the reassembly limits that are config keys take their defaults there. */
static void config_key_default_is_the_tables(void **state)
{
	struct pubd_reasm_config rc;
	struct pubd_config c;
	uint64_t v;

	assert_int_equal(pubd_config_defaults(&c), 0);
	assert_int_equal(pubd_config_key_default("fabric.udp_port", &v), 0);
	assert_int_equal(v, c.udp_port);
	assert_int_equal(pubd_config_key_default("daemon.log_level", &v), 0);
	assert_int_equal(v, c.log_level);
	assert_int_equal(pubd_config_key_default("fabric.busy_poll", &v), 0);
	assert_int_equal(v, c.busy_poll);
	assert_int_equal(pubd_config_key_default("limits.client_buffer_budget", &v), 0);
	assert_int_equal(v, c.client_buffer_budget);
	assert_int_equal(pubd_config_key_default("daemon.socket", &v), -EINVAL);
	assert_int_equal(pubd_config_key_default("fabric.nonesuch", &v), -ENOENT);
	pubd_reasm_config_defaults(&rc);
	assert_int_equal(rc.budget_bytes, c.reassembly_budget);
	assert_int_equal(rc.max_inflight_per_source, c.reassembly_inflight);
	assert_int_equal(rc.timeout_ns, (uint64_t)c.reassembly_timeout_ms * 1000000);
	assert_int_equal(rc.max_message_size, c.max_message_size);
	pubd_config_free(&c);
}

static void config_empty_document_gives_defaults(void **state)
{
	parses("");
	assert_defaults(&cfg);
	parses("# only a comment\n\n");
	assert_defaults(&cfg);
	parses("---\n...\n");
	assert_defaults(&cfg);
	parses("~\n");
	assert_defaults(&cfg);
}

static void config_empty_sections_give_defaults(void **state)
{
	parses("daemon:\nfabric: ~\nlimits: {}\ngroups: []\n");
	assert_defaults(&cfg);
}

/* ---- every key ------------------------------------------------------- */

static void config_parses_every_key(void **state)
{
	const struct sockaddr_in6 *a6;

	parses("daemon:\n"
	       "  socket: /tmp/p.sock\n"
	       "  socket_mode: \"0600\"\n"
	       "  log_level: debug\n"
	       "fabric:\n"
	       "  type: verbs\n"
	       "  address: 192.0.2.7\n"
	       "  udp_port: 9000\n"
	       "  mtu: 4096\n"
	       "  srq_depth: 4096\n"
	       "  srq_low_watermark: 100\n"
	       "  send_queue_depth: 128\n"
	       "  heartbeat_ms: 20\n"
	       "  busy_poll: true\n"
	       "  receive: always\n"
	       "  rx_linger_us: 0\n"
	       "limits:\n"
	       "  max_message_size: 1MiB\n"
	       "  reassembly_timeout_ms: 250\n"
	       "  reassembly_budget: 8MiB\n"
	       "  reassembly_inflight: 8\n"
	       "  subscriber_queue: 10\n"
	       "  slow_subscriber: disconnect\n"
	       "  hello_timeout_ms: 750\n"
	       "  max_clients_per_uid: 12\n"
	       "groups:\n"
	       "  - name: a\n"
	       "    address: 239.1.1.1\n"
	       "  - name: b\n"
	       "    address: ff15::42\n"
	       "    raw: true\n"
	       "    publish: [uid:5]\n"
	       "    subscribe: [gid:6, any]\n");
	assert_string_equal(cfg.socket_path, "/tmp/p.sock");
	assert_int_equal(cfg.socket_mode, 0600);
	assert_int_equal(cfg.log_level, 7);
	assert_int_equal(cfg.fabric_type, PUBD_FABRIC_VERBS);
	assert_string_equal(cfg.fabric_address, "192.0.2.7");
	assert_int_equal(cfg.fabric_sockaddr.ss_family, AF_INET);
	assert_int_equal(cfg.fabric_sockaddr_len, sizeof(struct sockaddr_in));
	assert_int_equal(cfg.udp_port, 9000);
	assert_int_equal(cfg.mtu, 4096);
	assert_int_equal(cfg.srq_depth, 4096);
	assert_int_equal(cfg.srq_low_watermark, 100);
	assert_int_equal(cfg.send_queue_depth, 128);
	assert_int_equal(cfg.heartbeat_ms, 20);
	assert_true(cfg.busy_poll);
	assert_int_equal(cfg.receive, PUBD_RECEIVE_ALWAYS);
	assert_int_equal(cfg.rx_linger_us, 0);
	assert_int_equal(cfg.max_message_size, 1 << 20);
	assert_int_equal(cfg.reassembly_timeout_ms, 250);
	assert_int_equal(cfg.reassembly_budget, 8 << 20);
	assert_int_equal(cfg.reassembly_inflight, 8);
	assert_int_equal(cfg.subscriber_queue, 10);
	assert_int_equal(cfg.slow_subscriber, PUBD_SLOW_DISCONNECT);
	assert_int_equal(cfg.hello_timeout_ms, 750);
	assert_int_equal(cfg.max_clients_per_uid, 12);

	assert_int_equal(cfg.ngroups, 2);
	assert_string_equal(cfg.groups[0].name, "a");
	assert_string_equal(cfg.groups[0].address_text, "239.1.1.1");
	assert_int_equal(cfg.groups[0].address.ss_family, AF_INET);
	assert_int_equal(cfg.groups[0].address_len, sizeof(struct sockaddr_in));
	assert_int_equal(((struct sockaddr_in *)&cfg.groups[0].address)->sin_addr.s_addr, htonl(0xef010101));
	assert_int_equal(((struct sockaddr_in *)&cfg.groups[0].address)->sin_port, 0);
	assert_false(cfg.groups[0].raw);
	assert_false(cfg.groups[0].publish.present);
	assert_false(cfg.groups[0].subscribe.present);

	assert_string_equal(cfg.groups[1].name, "b");
	assert_int_equal(cfg.groups[1].address.ss_family, AF_INET6);
	assert_int_equal(cfg.groups[1].address_len, sizeof(struct sockaddr_in6));
	a6 = (const struct sockaddr_in6 *)&cfg.groups[1].address;
	assert_int_equal(a6->sin6_addr.s6_addr[0], 0xff);
	assert_int_equal(a6->sin6_addr.s6_addr[15], 0x42);
	assert_true(cfg.groups[1].raw);
	assert_true(cfg.groups[1].publish.present);
	assert_int_equal(cfg.groups[1].publish.n, 1);
	assert_int_equal(cfg.groups[1].subscribe.n, 2);
}

static void config_enum_names_round_trip(void **state)
{
	static const char *const levels[] = {"debug", "info", "notice", "warning", "err"};
	static const char *const policies[] = {"drop-oldest", "drop-newest", "disconnect"};
	static const char *const types[] = {"verbs", "udp", "auto"};
	char doc[128];
	size_t i;

	for (i = 0; i < 5; i++) {
		snprintf(doc, sizeof(doc), "daemon: {log_level: %s}", levels[i]);
		parses(doc);
		assert_string_equal(pubd_log_level_name(cfg.log_level), levels[i]);
	}
	for (i = 0; i < 3; i++) {
		snprintf(doc, sizeof(doc), "limits: {slow_subscriber: %s}", policies[i]);
		parses(doc);
		assert_string_equal(pubd_slow_policy_name(cfg.slow_subscriber), policies[i]);
		snprintf(doc, sizeof(doc), "fabric: {type: %s}", types[i]);
		parses(doc);
		assert_string_equal(pubd_fabric_type_name(cfg.fabric_type), types[i]);
	}
	parses("fabric: {receive: on-demand}");
	assert_string_equal(pubd_receive_policy_name(cfg.receive), "on-demand");
	parses("fabric: {receive: always}");
	assert_string_equal(pubd_receive_policy_name(cfg.receive), "always");
	one_error("fabric:\n  receive: sometimes\n",
		  "t.yaml:2:12: fabric.receive: expected one of on-demand, always, got \"sometimes\"");
	assert_string_equal(pubd_log_level_name(3), "err");
	assert_string_equal(pubd_log_level_name(42), "unknown");
	assert_string_equal(pubd_fabric_type_name((enum pubd_fabric_type)9), "unknown");
	assert_string_equal(pubd_slow_policy_name((enum pubd_slow_policy)9), "unknown");
}

/* ---- value forms ----------------------------------------------------- */

static void config_size_suffixes(void **state)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} ok[] = {
		{"1", 1},	   {"4096", 4096},     {"64KiB", 64 << 10}, {"16MiB", 16 << 20}, {"16 MiB", 16 << 20},
		{"1GiB", 1 << 30}, {"\"2KiB\"", 2048},
	};
	static const char *const bad[] = {"16MB",
					  "16 mib",
					  "16M",
					  "MiB",
					  "-1",
					  "1.5MiB",
					  "0x10",
					  "16  MiB",
					  "0",
					  "2GiB",
					  "99999999999999999999",
					  "17179869184GiB"};
	char doc[128];
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(doc, sizeof(doc), "limits: {reassembly_budget: 2GiB, max_message_size: %s}", ok[i].text);
		parses(doc);
		assert_int_equal(cfg.max_message_size, ok[i].bytes);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(doc, sizeof(doc), "limits:\n  max_message_size: %s\n", bad[i]);
		assert_int_equal(parse(doc), -EINVAL);
		assert_int_equal(errs.n, 1);
		assert_non_null(strstr(err(0), "t.yaml:2:21: limits.max_message_size: expected a size from 1 byte "
					       "to 1 GiB (bytes, or with KiB, MiB or GiB), got \""));
	}
}

static void config_mtu_is_auto_or_bytes(void **state)
{
	parses("fabric: {mtu: auto}");
	assert_int_equal(cfg.mtu, 0);
	parses("fabric: {mtu: 256}");
	assert_int_equal(cfg.mtu, 256);
	parses("fabric: {mtu: 4KiB}");
	assert_int_equal(cfg.mtu, 4096);
	parses("fabric: {mtu: 65507}");
	assert_int_equal(cfg.mtu, 65507);
	one_error("fabric: {mtu: 255}", "t.yaml:1:15: fabric.mtu: expected auto or a size in bytes from 256 to 65507, "
					"got \"255\"");
	one_error("fabric: {mtu: 65508}", "t.yaml:1:15: fabric.mtu: expected auto or a size in bytes from 256 to "
					  "65507, got \"65508\"");
	one_error("fabric: {mtu: Auto}", "t.yaml:1:15: fabric.mtu: expected auto or a size in bytes from 256 to "
					 "65507, got \"Auto\"");
}

static void config_rx_linger_is_auto_or_microseconds(void **state)
{
	(void)state;
	parses("fabric: {rx_linger_us: auto}");
	assert_int_equal(cfg.rx_linger_us, PUBD_LINGER_AUTO);
	assert_int_equal(pubd_config_linger_us(&cfg), 50); /* until the engine sizes it */
	parses("fabric: {rx_linger_us: 0}");
	assert_int_equal(cfg.rx_linger_us, 0);
	assert_int_equal(pubd_config_linger_us(&cfg), 0);
	parses("fabric: {rx_linger_us: 10000}");
	assert_int_equal(pubd_config_linger_us(&cfg), 10000);
	one_error("fabric: {rx_linger_us: 10001}", "t.yaml:1:24: fabric.rx_linger_us: expected auto or an integer "
						   "from 0 to 10000 (microseconds), got \"10001\"");
	one_error("fabric: {rx_linger_us: automatic}", "t.yaml:1:24: fabric.rx_linger_us: expected auto or an "
						       "integer from 0 to 10000 (microseconds), got \"automatic\"");
	/* No other number key takes auto. */
	one_error("fabric: {srq_depth: auto}", "t.yaml:1:21: fabric.srq_depth: expected an integer from 16 to "
					       "65536, got \"auto\"");
}

#define G1 "groups:\n  - {name: a, address: 239.0.0.1"
#define RATE_EXPECT                                                                                              \
	"groups[0].rate: expected off, or a rate from 1 KiB to 1024 GiB per second (bytes, or with KiB, MiB or " \
	"GiB; \"/s\" optional), got "

#define REPAIR_EXPECT                                                                                                 \
	"groups[0].repair: expected off, on, or a mapping with window, max_age_ms, nak_backoff_ms, nak_interval_ms, " \
	"nak_retries, rate, peer_rate, flow_control, receiver_timeout_ms, got "

static void config_group_repair_is_off_on_or_a_mapping(void **state)
{
	(void)state;
	parses(G1 "}\n");
	assert_int_equal(cfg.groups[0].repair.on, 0);
	assert_int_equal(cfg.groups[0].repair.window, 16ull << 20);
	assert_int_equal(cfg.groups[0].repair.nak_backoff_ms, 60);
	assert_int_equal(cfg.groups[0].repair.rate, 32ull << 20);
	assert_int_equal(cfg.groups[0].repair.peer_rate, 16ull << 20);
	assert_int_equal(cfg.repair_budget, 256ull << 20);
	parses(G1 ", repair: on}\n");
	assert_int_equal(cfg.groups[0].repair.on, 1);
	assert_int_equal(cfg.groups[0].repair.max_age_ms, 2000);
	parses(G1 ", repair: {window: 1MiB, max_age_ms: 250, nak_retries: 3, rate: off}}\nlimits: {repair_budget: "
		  "8MiB}\n");
	assert_int_equal(cfg.groups[0].repair.on, 1);
	assert_int_equal(cfg.groups[0].repair.window, 1ull << 20);
	assert_int_equal(cfg.groups[0].repair.max_age_ms, 250);
	assert_int_equal(cfg.groups[0].repair.nak_retries, 3);
	assert_int_equal(cfg.groups[0].repair.rate, 0);
	assert_int_equal(cfg.groups[0].repair.nak_interval_ms, 100);
	assert_int_equal(cfg.repair_budget, 8ull << 20);
	parses(G1 ", repair: {peer_rate: 1MiB}}\n");
	assert_int_equal(cfg.groups[0].repair.peer_rate, 1ull << 20);
	parses(G1 ", repair: {peer_rate: off}}\n");
	assert_int_equal(cfg.groups[0].repair.peer_rate, 0);
	parses(G1 ", repair: off}\n");
	assert_int_equal(cfg.groups[0].repair.on, 0);
	one_error(G1 ", repair: yes please}\n", "t.yaml:2:43: " REPAIR_EXPECT "\"yes please\"");
	one_error(
		G1 ", repair: {window: 1KiB}}\n",
		"t.yaml:2:52: groups[0].repair.window: expected a size from 64 KiB to 64 GiB (bytes, or with KiB, MiB "
		"or GiB), got \"1KiB\"");
	one_error(G1 ", repair: {colour: red}}\n",
		  "t.yaml:2:44: groups[0].repair: unknown key \"colour\" (expected one of window, max_age_ms, "
		  "nak_backoff_ms, nak_interval_ms, nak_retries, rate, peer_rate, flow_control, receiver_timeout_ms)");
	/* Flow control rides on repair: none unless the repair mapping says min. */
	parses(G1 ", repair: on}\n");
	assert_int_equal(cfg.groups[0].repair.flow_control, PUBD_FLOW_NONE);
	assert_int_equal(cfg.groups[0].repair.receiver_timeout_ms, 1000);
	parses(G1 ", repair: {flow_control: min, receiver_timeout_ms: 250}}\n");
	assert_int_equal(cfg.groups[0].repair.on, 1);
	assert_int_equal(cfg.groups[0].repair.flow_control, PUBD_FLOW_MIN);
	assert_int_equal(cfg.groups[0].repair.receiver_timeout_ms, 250);
	one_error(G1 ", repair: {flow_control: max}}\n",
		  "t.yaml:2:58: groups[0].repair.flow_control: expected none or min, got \"max\"");
	one_error(G1 ", repair: {receiver_timeout_ms: 5}}\n",
		  "t.yaml:2:65: groups[0].repair.receiver_timeout_ms: expected a duration in milliseconds from 10 to "
		  "600000, got \"5\"");
	one_error(G1 ", repair.window: 1MiB}\n", "t.yaml:2:35: groups[0]: unknown key \"repair.window\" (expected one "
						 "of name, address, scope, raw, rate, "
						 "repair, publish, subscribe)");
}

static void config_group_rate_is_off_or_bytes_per_second(void **state)
{
	parses(G1 "}\n");
	assert_int_equal(cfg.groups[0].rate, 0);
	parses(G1 ", rate: off}\n");
	assert_int_equal(cfg.groups[0].rate, 0);
	parses(G1 ", rate: 0}\n");
	assert_int_equal(cfg.groups[0].rate, 0);
	parses(G1 ", rate: 100MiB}\n");
	assert_int_equal(cfg.groups[0].rate, 100ull << 20);
	parses(G1 ", rate: 64 KiB/s}\n");
	assert_int_equal(cfg.groups[0].rate, 64ull << 10);
	parses(G1 ", rate: 1024}\n");
	assert_int_equal(cfg.groups[0].rate, 1024);
	parses(G1 ", rate: 1024GiB/s}\n");
	assert_int_equal(cfg.groups[0].rate, 1024ull << 30);
	one_error(G1 ", rate: 1023}\n", "t.yaml:2:41: " RATE_EXPECT "\"1023\"");
	one_error(G1 ", rate: 1025GiB}\n", "t.yaml:2:41: " RATE_EXPECT "\"1025GiB\"");
	one_error(G1 ", rate: 10MB/s}\n", "t.yaml:2:41: " RATE_EXPECT "\"10MB/s\"");
	one_error(G1 ", rate: /s}\n", "t.yaml:2:41: " RATE_EXPECT "\"/s\"");
}

static void config_socket_mode_is_octal(void **state)
{
	parses("daemon: {socket_mode: 0660}");
	assert_int_equal(cfg.socket_mode, 0660);
	parses("daemon: {socket_mode: '600'}");
	assert_int_equal(cfg.socket_mode, 0600);
	parses("daemon: {socket_mode: 0777}");
	assert_int_equal(cfg.socket_mode, 0777);
	one_error("daemon:\n  socket_mode: 0999\n", "t.yaml:2:16: daemon.socket_mode: expected an octal mode from 0000 "
						    "to 0777, like \"0660\", got \"0999\"");
	one_error("daemon:\n  socket_mode: 01000\n", "t.yaml:2:16: daemon.socket_mode: expected an octal mode from "
						     "0000 to 0777, like \"0660\", got \"01000\"");
}

static void config_bool_forms(void **state)
{
	static const char *const yes[] = {"true", "True", "yes", "on"}, *const no[] = {"false", "FALSE", "no", "off"};
	char doc[64];
	size_t i;

	for (i = 0; i < 4; i++) {
		snprintf(doc, sizeof(doc), "fabric: {busy_poll: %s}", yes[i]);
		parses(doc);
		assert_true(cfg.busy_poll);
		snprintf(doc, sizeof(doc), "fabric: {busy_poll: %s}", no[i]);
		parses(doc);
		assert_false(cfg.busy_poll);
	}
	one_error("fabric: {busy_poll: 1}", "t.yaml:1:21: fabric.busy_poll: expected true or false, got \"1\"");
	/* daemon.shm and shm_direct are written on and off, and take every
	 * boolean's spellings (they refused true and false). */
	for (i = 0; i < 4; i++) {
		snprintf(doc, sizeof(doc), "daemon: {shm: %s, shm_direct: %s}", no[i], yes[i]);
		parses(doc);
		assert_false(cfg.shm);
		assert_true(cfg.shm_direct);
		snprintf(doc, sizeof(doc), "daemon: {shm: %s, shm_direct: %s}", yes[i], no[i]);
		parses(doc);
		assert_true(cfg.shm);
		assert_false(cfg.shm_direct);
	}
	one_error("daemon: {shm: 2}", "t.yaml:1:15: daemon.shm: expected on or off, got \"2\"");
}

static void config_fabric_address_forms(void **state)
{
	parses("fabric: {address: 10.0.0.1}");
	assert_int_equal(cfg.fabric_sockaddr.ss_family, AF_INET);
	assert_int_equal(cfg.fabric_sockaddr_len, sizeof(struct sockaddr_in));
	parses("fabric: {address: 'fe80::1'}");
	assert_string_equal(cfg.fabric_address, "fe80::1");
	assert_int_equal(cfg.fabric_sockaddr.ss_family, AF_INET6);
	assert_int_equal(cfg.fabric_sockaddr_len, sizeof(struct sockaddr_in6));
	parses("fabric: {address: enp1s0f0}");
	assert_string_equal(cfg.fabric_address, "enp1s0f0");
	assert_int_equal(cfg.fabric_sockaddr_len, 0);
	parses("fabric: {address: ~}");
	assert_null(cfg.fabric_address);
	one_error("fabric: {address: 10.0.0.300}", "t.yaml:1:19: fabric.address: expected a local IPv4 or IPv6 "
						   "address, or an interface name, got \"10.0.0.300\"");
	one_error("fabric: {address: a/b}", "t.yaml:1:19: fabric.address: expected a local IPv4 or IPv6 address, or "
					    "an interface name, got \"a/b\"");
	one_error("fabric: {address: sixteen_bytes_xx}",
		  "t.yaml:1:19: fabric.address: expected a local IPv4 or "
		  "IPv6 address, or an interface name, got \"sixteen_bytes_xx\"");
	one_error("fabric: {address: 'fe80::1%eth0'}", "t.yaml:1:19: fabric.address: expected a local IPv4 or IPv6 "
						       "address, or an interface name, got \"fe80::1%eth0\"");
}

static void config_socket_path_must_be_absolute_and_fit(void **state)
{
	char doc[256];

	memset(doc, 0, sizeof(doc));
	strcpy(doc, "daemon: {socket: /");
	memset(doc + strlen(doc), 'x', 106); /* 107 bytes: the most sun_path holds with its NUL */
	strcat(doc, "}");
	parses(doc);
	assert_int_equal(strlen(cfg.socket_path), 107);
	doc[strlen(doc) - 1] = 'x';
	strcat(doc, "}");
	assert_int_equal(parse(doc), -EINVAL);
	one_error("daemon: {socket: pubd.sock}", "t.yaml:1:18: daemon.socket: expected an absolute socket path of at "
						 "most 107 bytes, got \"pubd.sock\"");
}

static void config_range_boundaries(void **state)
{
	static const struct {
		const char *pre, *post;
		const char *lo, *hi, *below, *above;
	} r[] = {
		{"fabric: {udp_port: ", "}", "1", "65535", "0", "65536"},
		{"fabric: {srq_low_watermark: 1, srq_depth: ", "}", "16", "65536", "15", "65537"},
		{"fabric: {send_queue_depth: ", "}", "16", "65536", "15", "65537"},
		{"fabric: {heartbeat_ms: ", "}", "1", "60000", "0", "60001"},
		{"limits: {reassembly_timeout_ms: ", "}", "1", "60000", "0", "60001"},
		{"limits: {max_message_size: 1, reassembly_budget: ", "}", "64KiB", "64GiB", "65535", "68719476737"},
		{"limits: {reassembly_inflight: ", "}", "1", "65536", "0", "65537"},
		{"limits: {subscriber_queue: ", "}", "1", "1048576", "0", "1048577"},
		{"limits: {subscriber_queue_bytes: ", "}", "64KiB", "64GiB", "65535", "68719476737"},
		{"limits: {hello_timeout_ms: ", "}", "100", "600000", "99", "600001"},
		{"limits: {max_clients_per_uid: ", "}", "1", "1048576", "0", "1048577"},
	};
	char doc[128];
	size_t i;

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		snprintf(doc, sizeof(doc), "%s%s%s", r[i].pre, r[i].lo, r[i].post);
		parses(doc);
		snprintf(doc, sizeof(doc), "%s%s%s", r[i].pre, r[i].hi, r[i].post);
		parses(doc);
		snprintf(doc, sizeof(doc), "%s%s%s", r[i].pre, r[i].below, r[i].post);
		assert_int_equal(parse(doc), -EINVAL);
		assert_int_equal(errs.n, 1);
		assert_non_null(strstr(err(0), ": expected "));
		snprintf(doc, sizeof(doc), "%s%s%s", r[i].pre, r[i].above, r[i].post);
		assert_int_equal(parse(doc), -EINVAL);
		assert_int_equal(errs.n, 1);
		assert_non_null(strstr(err(0), ": expected "));
	}
}

/* ---- cross-key checks ------------------------------------------------ */

static void config_watermark_must_be_below_depth(void **state)
{
	parses("fabric: {srq_depth: 64, srq_low_watermark: 63}");
	one_error("fabric:\n  srq_depth: 64\n  srq_low_watermark: 64\n",
		  "t.yaml:3:22: fabric.srq_low_watermark: must be less than fabric.srq_depth (64), got 64");
	/* Only the depth given: the complaint points at it. */
	one_error("fabric:\n  srq_depth: 128\n",
		  "t.yaml:2:14: fabric.srq_low_watermark: must be less than fabric.srq_depth (128), got 256");
	/* A depth that is itself wrong does not also produce a watermark error. */
	one_error("fabric:\n  srq_depth: 8\n",
		  "t.yaml:2:14: fabric.srq_depth: expected an integer from 16 to 65536, got \"8\"");
}

static void config_message_size_must_fit_budget(void **state)
{
	parses("limits: {max_message_size: 64MiB}");
	one_error("limits:\n  max_message_size: 65MiB\n",
		  "t.yaml:2:21: limits.max_message_size: must be at most limits.reassembly_budget (67108864), got "
		  "68157440; such a message could never be reassembled");
}

/* ---- groups ---------------------------------------------------------- */

static void config_rejects_duplicate_group_naming_both_places(void **state)
{
	one_error("groups:\n"
		  "  - name: orders\n"
		  "    address: 239.1.1.1\n"
		  "  - {name: x, address: 239.1.1.3}\n"
		  "  - name: orders\n"
		  "    address: 239.1.1.2\n",
		  "t.yaml:5:11: groups[2].name: duplicate group \"orders\", first defined at 2:11 (groups[0])");
}

static void config_groups_may_share_an_address(void **state)
{
	parses("groups:\n  - {name: a, address: 239.1.1.1}\n  - {name: b, address: 239.1.1.1}\n");
	assert_int_equal(cfg.ngroups, 2);
	assert_non_null(pubd_config_group(&cfg, "b", 1));
	assert_ptr_equal(pubd_config_group(&cfg, "bee", 1), &cfg.groups[1]); /* len, not NUL */
	assert_null(pubd_config_group(&cfg, "c", 1));
	assert_null(pubd_config_group(&cfg, "", 0));
}

static void config_rejects_non_multicast_group_address(void **state)
{
	static const char *const good[] = {"224.0.0.1", "239.255.255.255", "ff02::1", "FF0E::1:1"};
	static const char *const bad[] = {"223.255.255.255", "240.0.0.1",   "10.0.0.1", "fe80::1", "::1",
					  "239.1.1",	     "239.1.1.1:5", "group-a"};
	char doc[128];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(doc, sizeof(doc), "groups: [{name: g, address: '%s'}]", good[i]);
		parses(doc);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(doc, sizeof(doc), "groups:\n  - name: g\n    address: '%s'\n", bad[i]);
		assert_int_equal(parse(doc), -EINVAL);
		assert_int_equal(errs.n, 1);
		assert_non_null(strstr(err(0), "t.yaml:3:14: groups[0].address: expected an IPv4 multicast address "
					       "(224.0.0.0/4) or an IPv6 one (ff00::/8), got \""));
	}
}

static void config_group_name_rules(void **state)
{
	char doc[600], name[300];

	memset(name, 'n', 255);
	name[255] = 0;
	snprintf(doc, sizeof(doc), "groups: [{name: %s, address: 239.0.0.1}]", name);
	parses(doc);
	assert_int_equal(strlen(cfg.groups[0].name), 255);
	snprintf(doc, sizeof(doc), "groups: [{name: %sn, address: 239.0.0.1}]", name);
	assert_int_equal(parse(doc), -EINVAL);
	assert_int_equal(errs.n, 1);
	one_error("groups: [{name: '', address: 239.0.0.1}]", "t.yaml:1:17: groups[0].name: expected a group name of 1 "
							      "to 255 bytes without control characters, got \"\"");
	one_error("groups: [{name: \"a\\tb\", address: 239.0.0.1}]", "t.yaml:1:17: groups[0].name: expected a group "
								     "name of 1 to 255 bytes without control "
								     "characters, got \"a\\x09b\"");
	one_error("groups: [{name: \"a\\0b\", address: 239.0.0.1}]", "t.yaml:1:17: groups[0].name: expected a group "
								     "name of 1 to 255 bytes without control "
								     "characters, got \"a\\x00b\"");
	parses("groups: [{name: 'böse Gruppe', address: 239.0.0.1}]");
	assert_string_equal(cfg.groups[0].name, "böse Gruppe");
}

/* scope: host needs no address and refuses the keys about sending; a
 * group of scope fabric (the default) still needs its address. */
static void config_group_scope_host(void **state)
{
	(void)state;
	assert_int_equal(parse("groups:\n  - name: local\n    scope: host\n  - name: wire\n    address: 239.0.0.1\n"
			       "    scope: fabric\n"),
			 0);
	assert_int_equal(cfg.ngroups, 2);
	assert_int_equal(cfg.groups[0].scope, PUBD_SCOPE_HOST);
	assert_int_equal(cfg.groups[0].address_len, 0);
	assert_string_equal(cfg.groups[0].address_text, "host");
	assert_int_equal(cfg.groups[1].scope, PUBD_SCOPE_FABRIC);
	assert_string_equal(cfg.groups[1].address_text, "239.0.0.1");
	one_error("groups:\n  - name: a\n    scope: host\n    address: 239.0.0.1\n",
		  "t.yaml:4:14: groups[0].address: a group of scope host has no address (its messages never leave "
		  "this host); expected the key left out, or scope: fabric");
	one_error("groups:\n  - name: a\n    scope: host\n    repair: on\n",
		  "t.yaml:4:13: groups[0].repair: a group of scope host has no repair (its messages never leave "
		  "this host); expected the key left out, or scope: fabric");
	one_error("groups:\n  - name: a\n    raw: true\n    scope: host\n",
		  "t.yaml:3:10: groups[0].raw: a group of scope host has no raw (its messages never leave this "
		  "host); expected the key left out, or scope: fabric");
	one_error("groups:\n  - name: a\n    scope: host\n    rate: 1MiB\n",
		  "t.yaml:4:11: groups[0].rate: a group of scope host has no rate (its messages never leave this "
		  "host); expected the key left out, or scope: fabric");
	/* A bad scope is one error: whether an address is missing is not known. */
	one_error("groups:\n  - name: a\n    scope: local\n",
		  "t.yaml:3:12: groups[0].scope: expected fabric or host, got \"local\"");
}

/* A raw group has no header to tell groups apart: its address is its own.
 * Groups that are not raw share freely; host groups have no address. */
static void config_raw_group_needs_its_own_address(void **state)
{
	one_error("groups:\n  - {name: norm, address: 239.1.1.1}\n  - {name: rawg, address: 239.1.1.1, raw: true}\n",
		  "t.yaml:3:27: groups[1].address: raw group \"rawg\" shares 239.1.1.1 with groups[0] (\"norm\", at "
		  "2:27); a raw group's datagrams carry no header to tell the groups apart, so it needs an address "
		  "of its own");
	/* Both raw: each is told, and the check sees through IPv6 spellings. */
	assert_int_equal(parse("fabric: {type: verbs, address: eth0}\ngroups:\n"
			       "  - {name: r1, address: 'ff15::7', raw: true}\n"
			       "  - {name: r2, address: 'ff15:0::7', raw: true}\n"),
			 -EINVAL);
	assert_int_equal(errs.n, 2);
	assert_non_null(
		strstr(err(0), "t.yaml:3:25: groups[0].address: raw group \"r1\" shares ff15::7 with groups[1]"));
	assert_non_null(
		strstr(err(1), "t.yaml:4:25: groups[1].address: raw group \"r2\" shares ff15:0::7 with groups[0]"));
	/* Allowed: normal groups sharing, a raw group alone, a host group. */
	parses("groups:\n  - {name: a, address: 239.1.1.1}\n  - {name: b, address: 239.1.1.1}\n"
	       "  - {name: r, address: 239.1.1.2, raw: true}\n  - {name: h, scope: host}\n");
	assert_int_equal(cfg.ngroups, 4);
}

/* An empty file starts pubd on every default, and says it was empty (a
 * reload refuses it); {} is every default on purpose. */
static void config_empty_file_is_marked_empty(void **state)
{
	parses("# only a comment\n");
	assert_true(cfg.empty);
	parses("{}\n");
	assert_false(cfg.empty);
	parses("daemon: {log_level: info}\n");
	assert_false(cfg.empty);
}

static void config_group_needs_name_and_address(void **state)
{
	assert_int_equal(parse("groups:\n  - raw: true\n"), -EINVAL);
	assert_int_equal(errs.n, 2);
	assert_string_equal(err(0), "t.yaml:2:5: groups[0]: missing key \"name\" (expected a group name of 1 to 255 "
				    "bytes without control characters)");
	assert_string_equal(err(1), "t.yaml:2:5: groups[0]: missing key \"address\" (expected an IPv4 multicast "
				    "address (224.0.0.0/4) or an IPv6 one (ff00::/8), or scope: host)");
	one_error("groups:\n  - name: a\n    address: 239.0.0.1\n    colour: red\n",
		  "t.yaml:4:5: groups[0]: unknown key \"colour\" (expected one of name, address, scope, raw, rate, "
		  "repair, "
		  "publish, "
		  "subscribe)");
	one_error("groups:\n  - 5\n", "t.yaml:2:5: groups[0]: expected a mapping with name and address, got \"5\"");
	one_error("groups: {name: a}\n", "t.yaml:1:9: groups: expected a list of groups, got a mapping");
}

/* ---- files ----------------------------------------------------------- */

static void config_load_reads_a_file(void **state)
{
	char path[] = "/tmp/pubd-test-config-XXXXXX";
	const char *doc = "fabric:\n  type: udp\n  mtu: 2048\n";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
	close(fd);
	assert_int_equal(pubd_config_load(&cfg, path, &fake_names, &errs), 0);
	assert_int_equal(cfg.mtu, 2048);
	pubd_config_free(&cfg);

	fd = open(path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "  mtu: 4096\n", 12), 12);
	close(fd);
	assert_int_equal(pubd_config_load(&cfg, path, &fake_names, &errs), -EINVAL);
	assert_int_equal(errs.n, 1);
	snprintf(line, sizeof(line), "%s:4:3: fabric.mtu: given twice (first at 3:8)", path);
	assert_string_equal(err(0), line);
	unlink(path);
}

static void config_example_file_parses(void **state)
{
	const char *path = PUBD_SOURCE_DIR "/config/pubd.yaml";
	const struct pubd_group_config *g;
	struct pubd_group_config *groups;
	size_t ngroups;
	int ret = pubd_config_load(&cfg, path, &fake_names, &errs);

	for (size_t i = 0; i < errs.n; i++)
		print_message("%s\n", err(i));
	assert_int_equal(ret, 0);
	/* It documents the defaults: loading it changes nothing but groups. */
	assert_int_equal(cfg.ngroups, 2);
	groups = cfg.groups;
	ngroups = cfg.ngroups;
	cfg.groups = NULL;
	cfg.ngroups = 0;
	assert_defaults(&cfg);
	cfg.groups = groups;
	cfg.ngroups = ngroups;
	g = pubd_config_group(&cfg, "telemetry", 9);
	assert_non_null(g);
	assert_string_equal(g->address_text, "239.1.1.1");
	assert_false(g->publish.present);
	g = pubd_config_group(&cfg, "orders", 6);
	assert_non_null(g);
	assert_string_equal(g->address_text, "239.1.1.2");
	assert_true(g->publish.present);
	assert_true(pubd_acl_allows(&g->publish, 0, 100, NULL, 0));
	assert_false(pubd_acl_allows(&g->publish, 1000, 100, NULL, 0));
	assert_true(pubd_acl_allows(&g->subscribe, 1000, 100, NULL, 0));

	/* And with the real name service, as pubd --check-config reads it. */
	pubd_config_free(&cfg);
	assert_int_equal(pubd_config_load(&cfg, path, &pubd_nss_resolver, &errs), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(config_defaults_are_documented_values, teardown),
		cmocka_unit_test_teardown(config_empty_document_gives_defaults, teardown),
		cmocka_unit_test_teardown(config_empty_sections_give_defaults, teardown),
		cmocka_unit_test_teardown(config_parses_every_key, teardown),
		cmocka_unit_test_teardown(config_enum_names_round_trip, teardown),
		cmocka_unit_test_teardown(config_size_suffixes, teardown),
		cmocka_unit_test_teardown(config_mtu_is_auto_or_bytes, teardown),
		cmocka_unit_test_teardown(config_rx_linger_is_auto_or_microseconds, teardown),
		cmocka_unit_test_teardown(config_group_rate_is_off_or_bytes_per_second, teardown),
		cmocka_unit_test_teardown(config_group_repair_is_off_on_or_a_mapping, teardown),
		cmocka_unit_test_teardown(config_socket_mode_is_octal, teardown),
		cmocka_unit_test_teardown(config_bool_forms, teardown),
		cmocka_unit_test_teardown(config_fabric_address_forms, teardown),
		cmocka_unit_test_teardown(config_socket_path_must_be_absolute_and_fit, teardown),
		cmocka_unit_test_teardown(config_range_boundaries, teardown),
		cmocka_unit_test_teardown(config_watermark_must_be_below_depth, teardown),
		cmocka_unit_test_teardown(config_message_size_must_fit_budget, teardown),
		cmocka_unit_test_teardown(config_rejects_duplicate_group_naming_both_places, teardown),
		cmocka_unit_test_teardown(config_groups_may_share_an_address, teardown),
		cmocka_unit_test_teardown(config_rejects_non_multicast_group_address, teardown),
		cmocka_unit_test_teardown(config_group_name_rules, teardown),
		cmocka_unit_test_teardown(config_group_needs_name_and_address, teardown),
		cmocka_unit_test_teardown(config_group_scope_host, teardown),
		cmocka_unit_test_teardown(config_raw_group_needs_its_own_address, teardown),
		cmocka_unit_test_teardown(config_empty_file_is_marked_empty, teardown),
		cmocka_unit_test_teardown(config_load_reads_a_file, teardown),
		cmocka_unit_test_teardown(config_example_file_parses, teardown),
		cmocka_unit_test_teardown(config_key_default_is_the_tables, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
