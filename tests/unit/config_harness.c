/* SPDX-License-Identifier: MIT */
/* The config tests' shared parse and checks (config_harness.h). */
#include "config_harness.h"

/* One parse per test: the result stays here for the checks, freed after. */
struct pubd_config cfg;
struct pubd_config_errors errs;
char line[2048];

int teardown(void **state)
{
	pubd_config_free(&cfg);
	pubd_config_errors_free(&errs);
	return 0;
}

int parse(const char *yaml)
{
	pubd_config_free(&cfg);
	pubd_config_errors_free(&errs);
	return pubd_config_parse(&cfg, "t.yaml", yaml, strlen(yaml), &fake_names, &errs);
}

const char *err(size_t i)
{
	assert_true(i < errs.n);
	assert_true(pubd_config_error_format(&errs, i, line, sizeof(line)) > 0);
	return line;
}

void one_error(const char *yaml, const char *expect)
{
	assert_int_equal(parse(yaml), -EINVAL);
	if (errs.n != 1) {
		for (size_t i = 0; i < errs.n; i++)
			print_message("  %s\n", err(i));
	}
	assert_int_equal(errs.n, 1);
	assert_string_equal(err(0), expect);
}

void parses(const char *yaml)
{
	int ret = parse(yaml);

	for (size_t i = 0; i < errs.n; i++)
		print_message("unexpected: %s\n", err(i));
	assert_int_equal(ret, 0);
	assert_int_equal(errs.n, 0);
}

void assert_defaults(const struct pubd_config *c)
{
	assert_string_equal(c->socket_path, "/run/pubd/pubd.sock");
	assert_int_equal(c->socket_mode, 0660);
	assert_int_equal(c->log_level, 6);
	assert_int_equal(c->fabric_type, PUBD_FABRIC_AUTO);
	assert_null(c->fabric_address);
	assert_int_equal(c->fabric_sockaddr_len, 0);
	assert_null(c->metrics_listen); /* no /metrics listener */
	assert_int_equal(c->metrics_sockaddr_len, 0);
	assert_int_equal(c->udp_port, 7470);
	assert_int_equal(c->mtu, 0);
	assert_int_equal(c->srq_depth, 1024);
	assert_int_equal(c->srq_low_watermark, 256);
	assert_int_equal(c->send_queue_depth, 512);
	assert_int_equal(c->heartbeat_ms, 100);
	assert_false(c->busy_poll);
	assert_int_equal(c->receive, PUBD_RECEIVE_ON_DEMAND);
	assert_int_equal(c->rx_linger_us, PUBD_LINGER_AUTO);
	assert_int_equal(c->sendonly_hold_ms, 5000);
	assert_int_equal(c->max_message_size, 16u << 20);
	assert_int_equal(c->reassembly_timeout_ms, 500);
	assert_int_equal(c->reassembly_budget, 64u << 20);
	assert_int_equal(c->reassembly_inflight, 64);
	assert_int_equal(c->subscriber_queue, 1024);
	assert_int_equal(c->subscriber_queue_bytes, 64u << 20);
	assert_int_equal(c->slow_subscriber, PUBD_SLOW_DROP_OLDEST);
	assert_int_equal(c->hello_timeout_ms, 2000);
	assert_int_equal(c->max_clients_per_uid, 256);
	assert_int_equal(c->ngroups, 0);
	assert_null(c->groups);
}
