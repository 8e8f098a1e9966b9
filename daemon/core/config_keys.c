/* SPDX-License-Identifier: MIT */
/*
 * The one table of configuration keys: every key, its type, default and
 * range, and the words for "expected ...". Defaults are applied from here
 * (pubd_config_defaults, and a group's keys as each group is read), so
 * this is the one place a default is written down; config/pubd.yaml
 * documents the same. Freeing a config is here too, beside the table that
 * says which fields it owns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <syslog.h>

#include "config_internal.h"

static const struct enum_name log_levels[] = {
	{"debug", LOG_DEBUG},	  {"info", LOG_INFO}, {"notice", LOG_NOTICE},
	{"warning", LOG_WARNING}, {"err", LOG_ERR},   {NULL, 0},
};

static const struct enum_name fabric_types[] = {
	{"verbs", PUBD_FABRIC_VERBS},
	{"udp", PUBD_FABRIC_UDP},
	{"auto", PUBD_FABRIC_AUTO},
	{NULL, 0},
};

static const struct enum_name receive_policies[] = {
	{"on-demand", PUBD_RECEIVE_ON_DEMAND},
	{"always", PUBD_RECEIVE_ALWAYS},
	{NULL, 0},
};

static const struct enum_name flow_controls[] = {
	{"none", PUBD_FLOW_NONE},
	{"min", PUBD_FLOW_MIN},
	{NULL, 0},
};

static const struct enum_name group_scopes[] = {
	{"fabric", PUBD_SCOPE_FABRIC},
	{"host", PUBD_SCOPE_HOST},
	{NULL, 0},
};

static const struct enum_name slow_policies[] = {
	{"drop-oldest", PUBD_SLOW_DROP_OLDEST},
	{"drop-newest", PUBD_SLOW_DROP_NEWEST},
	{"disconnect", PUBD_SLOW_DISCONNECT},
	{NULL, 0},
};

#define KIB	 (1ull << 10)
#define MIB	 (1ull << 20)
#define GIB	 (1ull << 30)
#define CFG(f)	 S_CONFIG, offsetof(struct pubd_config, f), sizeof(((struct pubd_config *)0)->f)
#define GRP(f)	 S_GROUP, offsetof(struct pubd_group_config, f), sizeof(((struct pubd_group_config *)0)->f)
#define ACL_FORM "a list of ACL entries (any, uid:N, gid:N, user:NAME, group:NAME; [] for no one)"

/*
 * The one table: every key, its type, default and range, and the words for
 * "expected ...". Ranges: depths are capped again by the device at open;
 * mtu 65507 is the largest UDP payload over IPv4; max_message_size fits the
 * wire header's u32 msg_len with room to spare.
 */
const struct key config_keys[] = {
	{"daemon.socket", K_PATH, CFG(socket_path), .def_str = PUBD_DEFAULT_SOCKET,
	 .max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1,
	 .expect = "an absolute socket path of at most 107 bytes"},
	{"daemon.socket_mode", K_MODE, CFG(socket_mode), .def = 0660, .max = 0777,
	 .expect = "an octal mode from 0000 to 0777, like \"0660\""},
	{"daemon.log_level", K_ENUM, CFG(log_level), .def = LOG_INFO, .names = log_levels,
	 .expect = "one of debug, info, notice, warning, err"},
	/* Written on and off; true, yes, false and no too, as every boolean. */
	{"daemon.shm", K_BOOL, CFG(shm), .def = true, .expect = "on or off"},
	{"daemon.shm_direct", K_BOOL, CFG(shm_direct), .def = true, .expect = "on or off"},

	{"fabric.type", K_ENUM, CFG(fabric_type), .def = PUBD_FABRIC_AUTO, .names = fabric_types,
	 .expect = "one of verbs, udp, auto"},
	{"fabric.address", K_ADDRESS, CFG(fabric_address),
	 .expect = "a local IPv4 or IPv6 address, or an interface name"},
	{"fabric.udp_port", K_UINT, CFG(udp_port), .def = 7470, .min = 1, .max = 65535,
	 .expect = "an integer from 1 to 65535"},
	{"fabric.mtu", K_MTU, CFG(mtu), .def = 0, .min = 256, .max = 65507,
	 .expect = "auto or a size in bytes from 256 to 65507"},
	{"fabric.srq_depth", K_UINT, CFG(srq_depth), .def = 1024, .min = 16, .max = 65536,
	 .expect = "an integer from 16 to 65536"},
	{"fabric.srq_low_watermark", K_UINT, CFG(srq_low_watermark), .def = 256, .min = 1, .max = 65535,
	 .expect = "an integer from 1 to 65535"},
	{"fabric.send_queue_depth", K_UINT, CFG(send_queue_depth), .def = 512, .min = 16, .max = 65536,
	 .expect = "an integer from 16 to 65536"},
	{"fabric.heartbeat_ms", K_DURATION, CFG(heartbeat_ms), .def = 100, .min = 1, .max = 60000,
	 .expect = "a duration in milliseconds from 1 to 60000"},
	{"fabric.busy_poll", K_BOOL, CFG(busy_poll), .def = false, .expect = "true or false"},
	{"fabric.batch", K_BOOL, CFG(batch), .def = true, .expect = "true or false"},
	{"fabric.rx_linger_us", K_UINT, CFG(rx_linger_us), .def = PUBD_LINGER_AUTO, .min = 0, .max = 10000,
	 .auto_value = PUBD_LINGER_AUTO, .expect = "auto or an integer from 0 to 10000 (microseconds)"},
	{"fabric.sendonly_hold_ms", K_DURATION, CFG(sendonly_hold_ms), .def = 5000, .min = 0, .max = 600000,
	 .expect = "a duration in milliseconds from 0 to 600000"},
	{"fabric.receive", K_ENUM, CFG(receive), .def = PUBD_RECEIVE_ON_DEMAND, .names = receive_policies,
	 .expect = "one of on-demand, always"},

	{"limits.max_message_size", K_SIZE, CFG(max_message_size), .def = 16 * MIB, .min = 1, .max = GIB,
	 .expect = "a size from 1 byte to 1 GiB (bytes, or with KiB, MiB or GiB)"},
	{"limits.reassembly_timeout_ms", K_DURATION, CFG(reassembly_timeout_ms), .def = 500, .min = 1, .max = 60000,
	 .expect = "a duration in milliseconds from 1 to 60000"},
	{"limits.reassembly_budget", K_SIZE, CFG(reassembly_budget), .def = 64 * MIB, .min = 64 * KIB, .max = 64 * GIB,
	 .expect = "a size from 64 KiB to 64 GiB (bytes, or with KiB, MiB or GiB)"},
	{"limits.reassembly_inflight", K_UINT, CFG(reassembly_inflight), .def = 64, .min = 1, .max = 65536,
	 .expect = "an integer from 1 to 65536"},
	{"limits.subscriber_queue", K_UINT, CFG(subscriber_queue), .def = 1024, .min = 1, .max = 1048576,
	 .expect = "an integer from 1 to 1048576"},
	{"limits.subscriber_queue_bytes", K_SIZE, CFG(subscriber_queue_bytes), .def = 64 * MIB, .min = 64 * KIB,
	 .max = 64 * GIB, .expect = "a size from 64 KiB to 64 GiB (bytes, or with KiB, MiB or GiB)"},
	{"limits.slow_subscriber", K_ENUM, CFG(slow_subscriber), .def = PUBD_SLOW_DROP_OLDEST, .names = slow_policies,
	 .expect = "one of drop-oldest, drop-newest, disconnect"},
	{"limits.client_buffer_budget", K_SIZE, CFG(client_buffer_budget), .def = 256 * MIB, .min = 1 * MIB,
	 .max = 64 * GIB, .expect = "a size from 1 MiB to 64 GiB (bytes, or with KiB, MiB or GiB)"},
	{"limits.max_clients", K_UINT, CFG(max_clients), .def = 1024, .min = 1, .max = 1048576,
	 .expect = "an integer from 1 to 1048576"},
	{"limits.max_clients_per_uid", K_UINT, CFG(max_clients_per_uid), .def = 256, .min = 1, .max = 1048576,
	 .expect = "an integer from 1 to 1048576"},
	{"limits.hello_timeout_ms", K_DURATION, CFG(hello_timeout_ms), .def = 2000, .min = 100, .max = 600000,
	 .expect = "a duration in milliseconds from 100 to 600000"},
	{"limits.publish_log", K_SIZE, CFG(publish_log), .def = 1 * MIB, .min = 64 * KIB, .max = GIB,
	 .expect = "a size from 64 KiB to 1 GiB (bytes, or with KiB, MiB or GiB)"},
	{"limits.deliver_log", K_SIZE, CFG(deliver_log), .def = 1 * MIB, .min = 64 * KIB, .max = GIB,
	 .expect = "a size from 64 KiB to 1 GiB (bytes, or with KiB, MiB or GiB)"},
	{"limits.direct_log", K_SIZE, CFG(direct_log), .def = 4 * MIB, .min = 64 * KIB, .max = GIB,
	 .expect = "a size from 64 KiB to 1 GiB (bytes, or with KiB, MiB or GiB)"},
	{"limits.group_log", K_SIZE, CFG(group_log), .def = 1 * MIB, .min = 0, .max = GIB,
	 .expect = "0 (off), or a size from 64 KiB to 1 GiB (bytes, or with KiB, MiB or GiB)"},
	{"limits.group_log_drain_ms", K_DURATION, CFG(group_log_drain_ms), .def = 5000, .min = 10, .max = 600000,
	 .expect = "a duration in milliseconds from 10 to 600000"},
	{"limits.max_sources", K_UINT, CFG(max_sources), .def = 4096, .min = 16, .max = 1048576,
	 .expect = "an integer from 16 to 1048576"},

	{"limits.repair_budget", K_SIZE, CFG(repair_budget), .def = 256 * MIB, .min = 1 * MIB, .max = 64 * GIB,
	 .expect = "a size from 1 MiB to 64 GiB (bytes, or with KiB, MiB or GiB)"},

	{"metrics.listen", K_LISTEN, CFG(metrics_listen),
	 .expect = "an IP address and port to serve /metrics on, like 127.0.0.1:9477 or [::1]:9477 (null: none)"},

	{"groups.name", K_GROUP_NAME, GRP(name), .min = 1, .max = 255, .required = true,
	 .expect = "a group name of 1 to 255 bytes without control characters"},
	/* Required of a fabric group, refused on a host one (config_groups.c). */
	{"groups.address", K_MCAST, GRP(address),
	 .expect = "an IPv4 multicast address (224.0.0.0/4) or an IPv6 one (ff00::/8)"},
	{"groups.scope", K_ENUM, GRP(scope), .def = PUBD_SCOPE_FABRIC, .names = group_scopes,
	 .expect = "fabric or host"},
	{"groups.raw", K_BOOL, GRP(raw), .def = false, .expect = "true or false"},
	{"groups.rate", K_RATE, GRP(rate), .def = 0, .min = 1 * KIB, .max = 1024 * GIB,
	 .expect =
		 "off, or a rate from 1 KiB to 1024 GiB per second (bytes, or with KiB, MiB or GiB; \"/s\" optional)"},
	{"groups.repair", K_REPAIR, GRP(repair.on), .def = 0,
	 .expect = "off, on, or a mapping with window, max_age_ms, nak_backoff_ms, nak_interval_ms, nak_retries, rate, "
		   "peer_rate, flow_control, receiver_timeout_ms"},
	/* The keys of a groups.repair mapping ("groups.repair" is their section). */
	{"groups.repair.window", K_SIZE, GRP(repair.window), .def = 16 * MIB, .min = 64 * KIB, .max = 64 * GIB,
	 .expect = "a size from 64 KiB to 64 GiB (bytes, or with KiB, MiB or GiB)"},
	{"groups.repair.max_age_ms", K_DURATION, GRP(repair.max_age_ms), .def = 2000, .min = 1, .max = 600000,
	 .expect = "a duration in milliseconds from 1 to 600000"},
	{"groups.repair.nak_backoff_ms", K_DURATION, GRP(repair.nak_backoff_ms), .def = 60, .min = 0, .max = 10000,
	 .expect = "a duration in milliseconds from 0 to 10000"},
	{"groups.repair.nak_interval_ms", K_DURATION, GRP(repair.nak_interval_ms), .def = 100, .min = 1, .max = 60000,
	 .expect = "a duration in milliseconds from 1 to 60000"},
	{"groups.repair.nak_retries", K_UINT, GRP(repair.nak_retries), .def = 8, .min = 1, .max = 1000,
	 .expect = "an integer from 1 to 1000"},
	{"groups.repair.rate", K_RATE, GRP(repair.rate), .def = 32 * MIB, .min = 1 * KIB, .max = 1024 * GIB,
	 .expect =
		 "off, or a rate from 1 KiB to 1024 GiB per second (bytes, or with KiB, MiB or GiB; \"/s\" optional)"},
	{"groups.repair.peer_rate", K_RATE, GRP(repair.peer_rate), .def = 16 * MIB, .min = 1 * KIB, .max = 1024 * GIB,
	 .expect =
		 "off, or a rate from 1 KiB to 1024 GiB per second (bytes, or with KiB, MiB or GiB; \"/s\" optional)"},
	{"groups.repair.flow_control", K_ENUM, GRP(repair.flow_control), .def = PUBD_FLOW_NONE, .names = flow_controls,
	 .expect = "none or min"},
	{"groups.repair.receiver_timeout_ms", K_DURATION, GRP(repair.receiver_timeout_ms), .def = 1000, .min = 10,
	 .max = 600000, .expect = "a duration in milliseconds from 10 to 600000"},
	{"groups.publish", K_ACL, GRP(publish), .expect = ACL_FORM},
	{"groups.subscribe", K_ACL, GRP(subscribe), .expect = ACL_FORM},
};

_Static_assert(sizeof(config_keys) / sizeof(config_keys[0]) == NKEYS, "NKEYS counts the keys");

const char *const config_sections[NSECTIONS] = {"daemon", "fabric", "limits", "metrics", "groups"};

const struct key *cfg_find_key(enum key_scope scope, const char *section, const char *name)
{
	size_t slen = strlen(section), i;

	/* "repair.window" written as one key is not the nested key. */
	if (strchr(name, '.'))
		return NULL;
	for (i = 0; i < NKEYS; i++)
		if (config_keys[i].scope == scope && !strncmp(config_keys[i].path, section, slen) &&
		    config_keys[i].path[slen] == '.' && !strcmp(config_keys[i].path + slen + 1, name))
			return &config_keys[i];
	return NULL;
}

/* "type, address, udp_port, ...": the keys a section accepts, for the
 * unknown-key message. */
void cfg_known_keys(const char *section, char *buf, size_t cap)
{
	size_t slen = strlen(section), o = 0, i;

	buf[0] = 0;
	for (i = 0; i < NKEYS && o < cap; i++)
		if (!strncmp(config_keys[i].path, section, slen) && config_keys[i].path[slen] == '.' &&
		    !strchr(config_keys[i].path + slen + 1, '.'))
			o += snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", config_keys[i].path + slen + 1);
}

/*
 * Fill the fields of every key of scope in base with the key's default.
 * Returns 0 or -ENOMEM (a path's copy); the caller frees what was filled.
 */
int cfg_apply_defaults(enum key_scope scope, void *base)
{
	const struct key *k;
	int v;

	for (k = config_keys; k < config_keys + NKEYS; k++) {
		void *field = (char *)base + k->off;

		if (k->scope != scope)
			continue;
		switch (k->type) {
		case K_PATH:
			*(char **)field = strdup(k->def_str);
			if (!*(char **)field)
				return -ENOMEM;
			break;
		case K_ENUM:
		case K_REPAIR:
			v = (int)k->def;
			memcpy(field, &v, sizeof(v));
			break;
		case K_BOOL:
			*(bool *)field = k->def;
			break;
		case K_MODE:
		case K_UINT:
		case K_DURATION:
		case K_SIZE:
		case K_MTU:
		case K_RATE:
			cfg_store_uint(field, k->size, k->def);
			break;
		case K_ADDRESS: /* none */
		case K_LISTEN:
		case K_GROUP_NAME:
		case K_MCAST:
		case K_ACL:
			break;
		}
	}
	return 0;
}

int pubd_config_defaults(struct pubd_config *c)
{
	memset(c, 0, sizeof(*c));
	if (cfg_apply_defaults(S_CONFIG, c)) {
		pubd_config_free(c);
		return -ENOMEM;
	}
	return 0;
}

int pubd_config_key_default(const char *key, uint64_t *value)
{
	const struct key *k;

	for (k = config_keys; k < config_keys + NKEYS; k++) {
		if (strcmp(k->path, key))
			continue;
		switch (k->type) {
		case K_ENUM:
		case K_REPAIR:
		case K_BOOL:
		case K_MODE:
		case K_UINT:
		case K_DURATION:
		case K_SIZE:
		case K_MTU:
		case K_RATE:
			*value = k->def;
			return 0;
		default:
			return -EINVAL;
		}
	}
	return -ENOENT;
}

static const char *enum_name(const struct enum_name *names, int value)
{
	for (; names->name; names++)
		if (names->value == value)
			return names->name;
	return "unknown";
}

const char *pubd_fabric_type_name(enum pubd_fabric_type t)
{
	return enum_name(fabric_types, (int)t);
}

const char *pubd_slow_policy_name(enum pubd_slow_policy p)
{
	return enum_name(slow_policies, (int)p);
}

const char *pubd_receive_policy_name(enum pubd_receive_policy p)
{
	return enum_name(receive_policies, (int)p);
}

const char *pubd_log_level_name(int level)
{
	return enum_name(log_levels, level);
}

void pubd_config_free(struct pubd_config *c)
{
	size_t i;

	if (!c)
		return;
	free(c->socket_path);
	free(c->fabric_address);
	free(c->metrics_listen);
	for (i = 0; i < c->ngroups; i++) {
		free(c->groups[i].name);
		free(c->groups[i].address_text);
		cfg_acl_free(&c->groups[i].publish);
		cfg_acl_free(&c->groups[i].subscribe);
	}
	free(c->groups);
	free(c->groups_by_name);
	memset(c, 0, sizeof(*c));
}
