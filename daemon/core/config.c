/* SPDX-License-Identifier: MIT */
/*
 * The config loader. A first pass over libyaml's events checks the syntax
 * and refuses nesting deeper than any config needs (libyaml's scanner is
 * quadratic in flow depth). Then libyaml's document API builds the node tree,
 * keeping every node's mark, and one walk follows keys[] below. The walk's depth is
 * fixed by the schema (root, section, key; or root, groups, group, ACL,
 * entry), so anchors and aliases cannot make it recurse, only repeat: a
 * budget of visited nodes bounds that.
 *
 * Errors are collected, not returned at the first: each one names the
 * file, line and column of the offending node and what was expected. A
 * key with an error keeps its default, so later cross-key checks skip it
 * rather than report a consequence of the first mistake.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>
#include <yaml.h>

#include "config.h"

/* Nodes visited, aliases counted each time: a few MiB of YAML cannot reach it
 * without aliases fanning out. */
#define MAX_VISITS (1u << 20)
#define GOT_MAX	   48 /* bytes of an offending value quoted in a message */
/* No valid config nests deeper than 5 (root, groups, group, ACL, entry). */
#define MAX_DEPTH 32

enum key_type {
	K_PATH,	      /* absolute path, 1..max bytes */
	K_MODE,	      /* octal permission bits, 0..max */
	K_ENUM,	      /* one of names[] */
	K_UINT,	      /* decimal integer, min..max */
	K_DURATION,   /* milliseconds, decimal integer, min..max */
	K_SIZE,	      /* bytes, optionally KiB/MiB/GiB, min..max */
	K_BOOL,	      /* true/false, yes/no, on/off */
	K_MTU,	      /* auto (0) or a size, min..max */
	K_ADDRESS,    /* local IP literal or interface name; null: none */
	K_GROUP_NAME, /* 1..max bytes, no control characters */
	K_MCAST,      /* IPv4 or IPv6 multicast address */
	K_ACL,	      /* list of ACL entries */
};

/* Where a key's field lives: struct pubd_config, or struct pubd_group_config. */
enum key_scope { S_CONFIG, S_GROUP };

struct enum_name {
	const char *name;
	int value;
};

struct key {
	const char *path; /* "section.key"; group keys are "groups.key" */
	enum key_type type;
	enum key_scope scope;
	size_t off, size; /* the field */
	uint64_t def, min, max;
	const char *def_str;
	const struct enum_name *names;
	bool required;
	const char *expect; /* completes "expected ..." */
};

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
static const struct key keys[] = {
	{"daemon.socket", K_PATH, CFG(socket_path), .def_str = PUBD_DEFAULT_SOCKET,
	 .max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1,
	 .expect = "an absolute socket path of at most 107 bytes"},
	{"daemon.socket_mode", K_MODE, CFG(socket_mode), .def = 0660, .max = 0777,
	 .expect = "an octal mode from 0000 to 0777, like \"0660\""},
	{"daemon.log_level", K_ENUM, CFG(log_level), .def = LOG_INFO, .names = log_levels,
	 .expect = "one of debug, info, notice, warning, err"},

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
	{"fabric.rx_linger_us", K_UINT, CFG(rx_linger_us), .def = 50, .min = 0, .max = 10000,
	 .expect = "an integer from 0 to 10000 (microseconds)"},
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
	{"limits.max_sources", K_UINT, CFG(max_sources), .def = 4096, .min = 16, .max = 1048576,
	 .expect = "an integer from 16 to 1048576"},

	{"groups.name", K_GROUP_NAME, GRP(name), .min = 1, .max = 255, .required = true,
	 .expect = "a group name of 1 to 255 bytes without control characters"},
	{"groups.address", K_MCAST, GRP(address), .required = true,
	 .expect = "an IPv4 multicast address (224.0.0.0/4) or an IPv6 one (ff00::/8)"},
	{"groups.raw", K_BOOL, GRP(raw), .def = false, .expect = "true or false"},
	{"groups.publish", K_ACL, GRP(publish), .expect = ACL_FORM},
	{"groups.subscribe", K_ACL, GRP(subscribe), .expect = ACL_FORM},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const sections[] = {"daemon", "fabric", "limits", "groups"};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

/* Where a key was given: its value's mark, for "given twice" and cross-key errors. */
struct seen {
	bool given, bad;
	yaml_mark_t mark;
};

struct parse {
	yaml_document_t *doc;
	struct pubd_config *c;
	struct pubd_config_errors *errs;
	const char *file;
	const struct pubd_name_resolver *res;
	unsigned visits;
	bool stop; /* too many errors or visits: stop walking */
	bool oom;
	struct seen seen[NKEYS];
	struct seen section_seen[NSECTIONS];
	yaml_mark_t *name_marks; /* per group: where its name was given */
};

/* ---- errors ---------------------------------------------------------- */

static int errs_addv(struct pubd_config_errors *e, const char *file, unsigned line, unsigned column, const char *fmt,
		     va_list ap) __attribute__((format(printf, 5, 0)));
static int errs_addv(struct pubd_config_errors *e, const char *file, unsigned line, unsigned column, const char *fmt,
		     va_list ap)
{
	struct pubd_config_error *v;
	char *msg;

	if (!e->file) {
		e->file = strdup(file ? file : "(config)");
		if (!e->file)
			return -ENOMEM;
	}
	v = realloc(e->v, (e->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	e->v = v;
	if (vasprintf(&msg, fmt, ap) < 0)
		return -ENOMEM;
	v[e->n].line = line;
	v[e->n].column = column;
	v[e->n].message = msg;
	e->n++;
	return 0;
}

static int errs_add(struct pubd_config_errors *e, const char *file, unsigned line, unsigned column, const char *fmt,
		    ...) __attribute__((format(printf, 5, 6)));
static int errs_add(struct pubd_config_errors *e, const char *file, unsigned line, unsigned column, const char *fmt,
		    ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = errs_addv(e, file, line, column, fmt, ap);
	va_end(ap);
	return ret;
}

static void report_at(struct parse *p, unsigned line, unsigned column, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void report_at(struct parse *p, unsigned line, unsigned column, const char *fmt, ...)
{
	va_list ap;
	int ret;

	if (p->stop)
		return;
	if (p->errs->n >= PUBD_CONFIG_MAX_ERRORS) {
		p->stop = true;
		ret = errs_add(p->errs, p->file, 0, 0, "too many errors (more than %d); stopped looking",
			       PUBD_CONFIG_MAX_ERRORS);
	} else {
		va_start(ap, fmt);
		ret = errs_addv(p->errs, p->file, line, column, fmt, ap);
		va_end(ap);
	}
	if (ret) {
		p->oom = true;
		p->stop = true;
	}
}

/* libyaml marks are 0-based; ours are 1-based like every editor's. */
#define report(p, mark, ...) report_at(p, (unsigned)(mark).line + 1, (unsigned)(mark).column + 1, __VA_ARGS__)

/* Errors without a place ("too many errors") go last. */
static int cmp_place(const struct pubd_config_error *a, const struct pubd_config_error *b)
{
	unsigned la = a->line ? a->line : UINT_MAX, lb = b->line ? b->line : UINT_MAX;

	if (la != lb)
		return la < lb ? -1 : 1;
	if (a->column != b->column)
		return a->column < b->column ? -1 : 1;
	return 0;
}

/* Errors in file order; stable, so two at one place keep the order found.
 * Insertion sort: at most PUBD_CONFIG_MAX_ERRORS + 1 of them. */
static void sort_errors(struct pubd_config_errors *e)
{
	struct pubd_config_error t;
	size_t i, j;

	for (i = 1; i < e->n; i++) {
		t = e->v[i];
		for (j = i; j > 0 && cmp_place(&e->v[j - 1], &t) > 0; j--)
			e->v[j] = e->v[j - 1];
		e->v[j] = t;
	}
}

/* ---- nodes ----------------------------------------------------------- */

static yaml_node_t *node(struct parse *p, int index)
{
	yaml_node_t *n = yaml_document_get_node(p->doc, index);

	if (n && ++p->visits > MAX_VISITS && !p->stop) {
		report(p, n->start_mark, "too many values (more than %u, counting each use of an alias)", MAX_VISITS);
		p->stop = true;
	}
	return p->stop ? NULL : n;
}

static bool is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	size_t i;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	for (i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (n->data.scalar.length == strlen(nulls[i]) &&
		    !memcmp(n->data.scalar.value, nulls[i], n->data.scalar.length))
			return true;
	return false;
}

/* The scalar as a C string, or NULL when it is not a scalar or holds a NUL
 * (a "\0" escape), which no key accepts. */
static const char *scalar(const yaml_node_t *n)
{
	const char *s;

	if (n->type != YAML_SCALAR_NODE)
		return NULL;
	s = (const char *)n->data.scalar.value;
	return memchr(s, 0, n->data.scalar.length) ? NULL : s;
}

/* A value quoted for a message: escaped (control bytes, quotes) so a log
 * line stays one line, and shortened. */
static const char *quote(const unsigned char *s, size_t len, char *buf, size_t cap)
{
	size_t i, o = 0, end;

	end = len > GOT_MAX ? GOT_MAX : len;
	/* Never cut a UTF-8 sequence in half. */
	while (end < len && end > 0 && (s[end] & 0xc0) == 0x80)
		end--;
	buf[o++] = '"';
	for (i = 0; i < end && o + 8 < cap; i++) {
		if (s[i] < 0x20 || s[i] == 0x7f)
			o += snprintf(buf + o, cap - o, "\\x%02x", s[i]);
		else if (s[i] == '"' || s[i] == '\\')
			o += snprintf(buf + o, cap - o, "\\%c", s[i]);
		else
			buf[o++] = (char)s[i];
	}
	if (i < len)
		o += snprintf(buf + o, cap - o, "...");
	snprintf(buf + o, cap - o, "\"");
	return buf;
}

/* "what was found", for messages. */
static const char *describe(const yaml_node_t *n, char *buf, size_t cap)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (is_null(n))
		return "nothing";
	return quote(n->data.scalar.value, n->data.scalar.length, buf, cap);
}

static const char *describe_name(const char *s, char *buf, size_t cap)
{
	return quote((const unsigned char *)s, strlen(s), buf, cap);
}

#define GOT_BUF (GOT_MAX * 4 + 16)

/* ---- values ---------------------------------------------------------- */

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static int parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9)
			return -EINVAL;
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* "4096", "64KiB", "16 MiB": binary units only, so "MB" is an error rather
 * than a silent 5% surprise. */
static int parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {{"KiB", 10}, {"MiB", 20}, {"GiB", 30}};
	size_t digits = strspn(s, "0123456789"), i;
	const char *rest = s + digits;
	uint64_t v;
	int ret;

	ret = parse_u64(s, digits, &v);
	if (ret)
		return ret;
	if (!*rest) {
		*out = v;
		return 0;
	}
	if (*rest == ' ')
		rest++;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(rest, units[i].suffix))
			continue;
		if (v > UINT64_MAX >> units[i].shift)
			return -ERANGE;
		*out = v << units[i].shift;
		return 0;
	}
	return -EINVAL;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
	size_t i;

	for (i = 0; i < 3; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_ip(const char *s, struct sockaddr_storage *ss, socklen_t *sl)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		*sl = sizeof(*a4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		*sl = sizeof(*a6);
		return 0;
	}
	return -EINVAL;
}

/*
 * An IP literal, or an interface name as the kernel accepts them
 * (dev_valid_name: shorter than IFNAMSIZ, no '/', ':' or whitespace, not
 * "." or ".."). Something made only of digits and dots is a mistyped IPv4
 * address, not an interface, so it is an error here rather than a puzzling
 * "no such device" at start.
 */
static int parse_local_address(const char *s, struct sockaddr_storage *ss, socklen_t *sl)
{
	size_t len = strlen(s), i;

	if (!parse_ip(s, ss, sl))
		return 0;
	memset(ss, 0, sizeof(*ss));
	*sl = 0;
	if (!len || len >= IF_NAMESIZE || !strcmp(s, ".") || !strcmp(s, "..") || strspn(s, "0123456789.") == len)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f || s[i] == '/' || s[i] == ':')
			return -EINVAL;
	return 0;
}

static bool is_multicast(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 28) == 0xe;
	return IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

static void store_uint(void *field, size_t size, uint64_t v)
{
	uint32_t u32 = (uint32_t)v;
	uint16_t u16 = (uint16_t)v;

	switch (size) {
	case sizeof(uint64_t):
		memcpy(field, &v, size);
		break;
	case sizeof(uint32_t):
		memcpy(field, &u32, size);
		break;
	case sizeof(uint16_t):
		memcpy(field, &u16, size);
		break;
	}
}

static void store_string(void *field, char *s)
{
	char **f = field;

	free(*f);
	*f = s;
}

_Static_assert(sizeof(enum pubd_fabric_type) == sizeof(int) && sizeof(enum pubd_slow_policy) == sizeof(int),
	       "enum fields are stored as int");

/* ---- ACLs ------------------------------------------------------------ */

static int parse_id(const char *s, uint32_t *id)
{
	uint64_t v;

	/* (uid_t)-1 means "no id" to the kernel (setreuid, chown). */
	if (parse_u64(s, strlen(s), &v) || v >= UINT32_MAX)
		return -EINVAL;
	*id = (uint32_t)v;
	return 0;
}

static int resolve(struct parse *p, const yaml_node_t *n, const char *path, bool user, const char *name, uint32_t *id)
{
	const char *what = user ? "user" : "group";
	char got[GOT_BUF];
	int ret;

	if (!p->res || !(user ? p->res->user : p->res->group)) {
		report(p, n->start_mark, "%s: cannot resolve %s names here; use %s", path, what,
		       user ? "uid:N" : "gid:N");
		return -EINVAL;
	}
	ret = user ? p->res->user(p->res->ctx, name, id) : p->res->group(p->res->ctx, name, id);
	if (ret == -ENOENT)
		report(p, n->start_mark, "%s: unknown %s %s", path, what, describe_name(name, got, sizeof(got)));
	else if (ret)
		report(p, n->start_mark, "%s: cannot look up %s %s: %s", path, what,
		       describe_name(name, got, sizeof(got)), strerror(-ret));
	return ret ? -EINVAL : 0;
}

static int acl_entry(struct parse *p, const yaml_node_t *n, const char *path, struct pubd_acl_entry *e)
{
	const char *s = scalar(n);
	char got[GOT_BUF];

	if (s && !strcmp(s, "any")) {
		e->kind = PUBD_ACL_ANY;
		e->id = 0;
		return 0;
	}
	if (s && !strncmp(s, "uid:", 4) && !parse_id(s + 4, &e->id)) {
		e->kind = PUBD_ACL_UID;
		return 0;
	}
	if (s && !strncmp(s, "gid:", 4) && !parse_id(s + 4, &e->id)) {
		e->kind = PUBD_ACL_GID;
		return 0;
	}
	if (s && !strncmp(s, "user:", 5) && s[5]) {
		e->kind = PUBD_ACL_UID;
		return resolve(p, n, path, true, s + 5, &e->id);
	}
	if (s && !strncmp(s, "group:", 6) && s[6]) {
		e->kind = PUBD_ACL_GID;
		return resolve(p, n, path, false, s + 6, &e->id);
	}
	/* "- uid: 1000" is a mapping to YAML; say how to write it. */
	if (n->type == YAML_MAPPING_NODE && n->data.mapping.pairs.top - n->data.mapping.pairs.start == 1)
		report(p, n->start_mark,
		       "%s: expected an ACL entry (any, uid:N, gid:N, user:NAME, group:NAME), "
		       "got a mapping; write it without a space after the colon",
		       path);
	else
		report(p, n->start_mark,
		       "%s: expected an ACL entry (any, uid:N, gid:N, user:NAME, group:NAME; N from 0 to "
		       "4294967294), got %s",
		       path, describe(n, got, sizeof(got)));
	return -EINVAL;
}

static int acl_list(struct parse *p, const struct key *k, const yaml_node_t *v, struct pubd_acl *acl, const char *path)
{
	struct pubd_acl_entry *entries = NULL;
	size_t n, m = 0, i;
	char ipath[160], got[GOT_BUF];
	int ret = 0;

	/* A bare "publish:" is null: reject it rather than guess between
	 * "anyone" (absent) and "no one" ([]). */
	if (v->type != YAML_SEQUENCE_NODE) {
		report(p, v->start_mark, "%s: expected %s, got %s", path, k->expect, describe(v, got, sizeof(got)));
		return -EINVAL;
	}
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (n) {
		entries = calloc(n, sizeof(*entries));
		if (!entries) {
			p->oom = p->stop = true;
			return -ENOMEM;
		}
	}
	for (i = 0; i < n; i++) {
		yaml_node_t *item = node(p, v->data.sequence.items.start[i]);

		if (!item)
			break;
		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		if (acl_entry(p, item, ipath, &entries[m]))
			ret = -EINVAL;
		else
			m++;
	}
	free(acl->entries);
	acl->entries = entries;
	acl->n = m;
	acl->present = true;
	return ret;
}

/* ---- one key --------------------------------------------------------- */

/* Parse v into the field of k in base; report and return -EINVAL if it is
 * not what k expects. */
static int leaf(struct parse *p, const struct key *k, const yaml_node_t *v, void *base, const char *path)
{
	void *field = (char *)base + k->off;
	const struct enum_name *en;
	struct sockaddr_storage ss;
	socklen_t sl;
	char got[GOT_BUF], *copy;
	const char *s;
	uint64_t u = 0;
	bool b;

	if (k->type == K_ACL)
		return acl_list(p, k, v, field, path);
	if (k->type == K_ADDRESS && is_null(v)) {
		struct pubd_config *c = base;

		store_string(field, NULL);
		c->fabric_sockaddr_len = 0;
		return 0;
	}
	s = scalar(v);
	if (!s || is_null(v))
		goto expected;

	switch (k->type) {
	case K_PATH:
	case K_GROUP_NAME:
		if (strlen(s) < k->min || strlen(s) > k->max)
			goto expected;
		if (k->type == K_PATH ? s[0] != '/' : has_control(s))
			goto expected;
		copy = strdup(s);
		if (!copy)
			goto oom;
		store_string(field, copy);
		return 0;
	case K_MODE:
		if (!*s || strlen(s) > 4 || strspn(s, "01234567") != strlen(s))
			goto expected;
		u = strtoull(s, NULL, 8);
		if (u > k->max)
			goto expected;
		store_uint(field, k->size, u);
		return 0;
	case K_ENUM:
		for (en = k->names; en->name; en++) {
			if (!strcmp(s, en->name)) {
				memcpy(field, &en->value, sizeof(int));
				return 0;
			}
		}
		goto expected;
	case K_UINT:
	case K_DURATION:
	case K_SIZE:
	case K_MTU:
		if (k->type == K_MTU && !strcmp(s, "auto")) {
			store_uint(field, k->size, 0);
			return 0;
		}
		if (k->type == K_SIZE || k->type == K_MTU ? parse_size(s, &u) : parse_u64(s, strlen(s), &u))
			goto expected;
		if (u < k->min || u > k->max)
			goto expected;
		store_uint(field, k->size, u);
		return 0;
	case K_BOOL:
		if (parse_bool(s, &b))
			goto expected;
		memcpy(field, &b, sizeof(b));
		return 0;
	case K_ADDRESS: {
		struct pubd_config *c = base;

		if (parse_local_address(s, &ss, &sl))
			goto expected;
		copy = strdup(s);
		if (!copy)
			goto oom;
		store_string(field, copy);
		c->fabric_sockaddr = ss;
		c->fabric_sockaddr_len = sl;
		return 0;
	}
	case K_MCAST: {
		struct pubd_group_config *g = base;

		if (parse_ip(s, &ss, &sl) || !is_multicast(&ss))
			goto expected;
		copy = strdup(s);
		if (!copy)
			goto oom;
		store_string(&g->address_text, copy);
		g->address = ss;
		g->address_len = sl;
		return 0;
	}
	case K_ACL:
		break;
	}
expected:
	report(p, v->start_mark, "%s: expected %s, got %s", path, k->expect, describe(v, got, sizeof(got)));
	return -EINVAL;
oom:
	p->oom = p->stop = true;
	return -ENOMEM;
}

/* ---- the walk -------------------------------------------------------- */

/* The key's name, or NULL after reporting a key that is not a plain name. */
static const char *key_name(struct parse *p, const yaml_node_t *kn, const char *where)
{
	char got[GOT_BUF];
	const char *s = scalar(kn);

	if (!s || is_null(kn)) {
		report(p, kn->start_mark, "%s: expected a key name, got %s", where, describe(kn, got, sizeof(got)));
		return NULL;
	}
	return s;
}

static const struct key *find_key(enum key_scope scope, const char *section, const char *name)
{
	size_t slen = strlen(section), i;

	for (i = 0; i < NKEYS; i++)
		if (keys[i].scope == scope && !strncmp(keys[i].path, section, slen) && keys[i].path[slen] == '.' &&
		    !strcmp(keys[i].path + slen + 1, name))
			return &keys[i];
	return NULL;
}

/* "type, address, udp_port, ...": the keys a section accepts, for the
 * unknown-key message. */
static void known_keys(const char *section, char *buf, size_t cap)
{
	size_t slen = strlen(section), o = 0, i;

	buf[0] = 0;
	for (i = 0; i < NKEYS && o < cap; i++)
		if (!strncmp(keys[i].path, section, slen) && keys[i].path[slen] == '.')
			o += snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", keys[i].path + slen + 1);
}

static bool given_twice(struct parse *p, struct seen *seen, const yaml_node_t *kn, const char *path)
{
	if (!seen->given)
		return false;
	report(p, kn->start_mark, "%s: given twice (first at %u:%u)", path, (unsigned)seen->mark.line + 1,
	       (unsigned)seen->mark.column + 1);
	return true;
}

/* Walk one mapping of keys: a section of the config, or one group. */
static void walk_keys(struct parse *p, const yaml_node_t *map, enum key_scope scope, const char *section,
		      const char *prefix, void *base, struct seen *seen)
{
	char path[128], known[300], got[GOT_BUF];
	yaml_node_pair_t *pair;

	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top && !p->stop; pair++) {
		yaml_node_t *kn = node(p, pair->key), *vn = node(p, pair->value);
		const struct key *k;
		const char *name;
		size_t ki;

		if (!kn || !vn)
			return;
		name = key_name(p, kn, prefix);
		if (!name)
			continue;
		k = find_key(scope, section, name);
		if (!k) {
			known_keys(section, known, sizeof(known));
			report(p, kn->start_mark, "%s: unknown key %s (expected one of %s)", prefix,
			       describe(kn, got, sizeof(got)), known);
			continue;
		}
		snprintf(path, sizeof(path), "%s.%s", prefix, name);
		ki = (size_t)(k - keys);
		if (given_twice(p, &seen[ki], kn, path))
			continue;
		seen[ki].given = true;
		seen[ki].mark = vn->start_mark;
		if (leaf(p, k, vn, base, path))
			seen[ki].bad = true;
	}
}

static void walk_group(struct parse *p, const yaml_node_t *gn, size_t index, struct pubd_group_config *g)
{
	struct seen seen[NKEYS] = {0};
	char prefix[32], got[GOT_BUF];
	size_t i;

	snprintf(prefix, sizeof(prefix), "groups[%zu]", index);
	if (gn->type != YAML_MAPPING_NODE) {
		report(p, gn->start_mark, "%s: expected a mapping with name and address, got %s", prefix,
		       describe(gn, got, sizeof(got)));
		return;
	}
	walk_keys(p, gn, S_GROUP, "groups", prefix, g, seen);
	for (i = 0; i < NKEYS && !p->stop; i++)
		if (keys[i].scope == S_GROUP && keys[i].required && !seen[i].given)
			report(p, gn->start_mark, "%s: missing key \"%s\" (expected %s)", prefix,
			       keys[i].path + strlen("groups."), keys[i].expect);
	if (g->name)
		p->name_marks[index] = seen[find_key(S_GROUP, "groups", "name") - keys].mark;
}

static void walk_groups(struct parse *p, const yaml_node_t *v)
{
	struct pubd_config *c = p->c;
	char got[GOT_BUF];
	size_t n, i;

	if (is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		report(p, v->start_mark, "groups: expected a list of groups, got %s", describe(v, got, sizeof(got)));
		return;
	}
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (!n)
		return;
	c->groups = calloc(n, sizeof(*c->groups));
	p->name_marks = calloc(n, sizeof(*p->name_marks));
	if (!c->groups || !p->name_marks) {
		p->oom = p->stop = true;
		return;
	}
	c->ngroups = n;
	for (i = 0; i < n && !p->stop; i++) {
		yaml_node_t *gn = node(p, v->data.sequence.items.start[i]);

		if (gn)
			walk_group(p, gn, i, &c->groups[i]);
	}
}

static void walk_root(struct parse *p, const yaml_node_t *root)
{
	char got[GOT_BUF];
	yaml_node_pair_t *pair;
	size_t s;

	if (!root || is_null(root))
		return; /* empty file: all defaults */
	if (root->type != YAML_MAPPING_NODE) {
		report(p, root->start_mark, "expected a mapping of sections (daemon, fabric, limits, groups), got %s",
		       describe(root, got, sizeof(got)));
		return;
	}
	for (pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top && !p->stop; pair++) {
		yaml_node_t *kn = node(p, pair->key), *vn = node(p, pair->value);
		const char *name;

		if (!kn || !vn)
			return;
		name = key_name(p, kn, "top level");
		if (!name)
			continue;
		for (s = 0; s < NSECTIONS && strcmp(name, sections[s]); s++)
			;
		if (s == NSECTIONS) {
			report(p, kn->start_mark, "unknown section %s (expected daemon, fabric, limits or groups)",
			       describe(kn, got, sizeof(got)));
			continue;
		}
		if (given_twice(p, &p->section_seen[s], kn, name))
			continue;
		p->section_seen[s].given = true;
		p->section_seen[s].mark = kn->start_mark;
		if (!strcmp(name, "groups")) {
			walk_groups(p, vn);
		} else if (vn->type == YAML_MAPPING_NODE) {
			walk_keys(p, vn, S_CONFIG, name, name, p->c, p->seen);
		} else if (!is_null(vn)) {
			report(p, vn->start_mark, "%s: expected a mapping of keys, got %s", name,
			       describe(vn, got, sizeof(got)));
		}
	}
}

/* ---- checks across keys ---------------------------------------------- */

static const struct seen *seen_of(struct parse *p, const char *path)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].path, path))
			return &p->seen[i];
	return NULL;
}

/*
 * "a must be less than (or at most) b": reported at a if it was given,
 * else at b. Skipped when either had its own error: its value is then the
 * default and a complaint about it would mislead.
 */
static void check_order(struct parse *p, const char *a, uint64_t va, const char *b, uint64_t vb, bool strict,
			const char *why)
{
	const struct seen *sa = seen_of(p, a), *sb = seen_of(p, b);
	const struct seen *at = sa->given ? sa : sb;

	if (sa->bad || sb->bad || (strict ? va < vb : va <= vb))
		return;
	report(p, at->mark, "%s: must be %s %s (%llu), got %llu%s", a, strict ? "less than" : "at most", b,
	       (unsigned long long)vb, (unsigned long long)va, why);
}

static int cmp_name(const void *a, const void *b)
{
	const struct pubd_group_config *const *ga = a, *const *gb = b;
	int r = strcmp((*ga)->name, (*gb)->name);

	if (r)
		return r;
	return *ga < *gb ? -1 : *ga > *gb; /* by position: the first stays first */
}

/* Duplicate names, by sorting (n log n: aliases can make n large). */
static void check_group_names(struct parse *p)
{
	struct pubd_config *c = p->c;
	const struct pubd_group_config **v;
	size_t n = 0, i, first = 0, a, b;
	char got[GOT_BUF];

	if (!c->ngroups)
		return;
	v = calloc(c->ngroups, sizeof(*v));
	if (!v) {
		p->oom = p->stop = true;
		return;
	}
	for (i = 0; i < c->ngroups; i++)
		if (c->groups[i].name)
			v[n++] = &c->groups[i];
	qsort(v, n, sizeof(*v), cmp_name);
	for (i = 1; i < n; i++) {
		if (strcmp(v[i]->name, v[first]->name)) {
			first = i;
			continue;
		}
		a = (size_t)(v[first] - c->groups);
		b = (size_t)(v[i] - c->groups);
		report(p, p->name_marks[b],
		       "groups[%zu].name: duplicate group %s, first defined at %u:%u (groups[%zu])", b,
		       describe_name(v[i]->name, got, sizeof(got)), (unsigned)p->name_marks[a].line + 1,
		       (unsigned)p->name_marks[a].column + 1, a);
	}
	free(v);
}

static void check_across(struct parse *p)
{
	struct pubd_config *c = p->c;

	/* SRQ_LIMIT_REACHED fires when fewer than srq_limit buffers remain;
	 * a limit at or above the depth would fire forever. */
	check_order(p, "fabric.srq_low_watermark", c->srq_low_watermark, "fabric.srq_depth", c->srq_depth, true, "");
	/* Reassembly drops a message larger than the whole budget. */
	check_order(p, "limits.max_message_size", c->max_message_size, "limits.reassembly_budget", c->reassembly_budget,
		    false, "; such a message could never be reassembled");
	check_group_names(p);
}

/* ---- libyaml's own errors -------------------------------------------- */

static void yaml_problem(struct parse *p, const yaml_parser_t *y)
{
	switch (y->error) {
	case YAML_MEMORY_ERROR:
		p->oom = true;
		break;
	case YAML_READER_ERROR:
		/* The reader has no line yet, only a byte offset. */
		if (y->problem_value != -1)
			report_at(p, 0, 0, "invalid YAML: %s (#%X) at byte %zu", y->problem, (unsigned)y->problem_value,
				  y->problem_offset);
		else
			report_at(p, 0, 0, "invalid YAML: %s at byte %zu", y->problem, y->problem_offset);
		break;
	default:
		if (y->context)
			report(p, y->problem_mark, "invalid YAML: %s (%s at %u:%u)", y->problem, y->context,
			       (unsigned)y->context_mark.line + 1, (unsigned)y->context_mark.column + 1);
		else
			report(p, y->problem_mark, "invalid YAML: %s", y->problem ? y->problem : "error");
		break;
	}
}

/*
 * libyaml's scanner looks at every open flow level for each token, so
 * "[[[[..." costs time quadratic in its depth (100k levels: 20 s). A first
 * pass over the events stops at MAX_DEPTH, before the loader builds
 * anything; it also reports a syntax error, if any, with its place.
 */
static void check_syntax_and_depth(struct parse *p, const void *yaml, size_t len)
{
	yaml_parser_t y;
	yaml_event_t ev;
	unsigned depth = 0;
	bool done = false;

	if (!yaml_parser_initialize(&y)) {
		p->oom = p->stop = true;
		return;
	}
	yaml_parser_set_input_string(&y, yaml, len);
	while (!done) {
		if (!yaml_parser_parse(&y, &ev)) {
			yaml_problem(p, &y);
			break;
		}
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > MAX_DEPTH) {
				report(p, ev.start_mark, "nested deeper than %d levels", MAX_DEPTH);
				done = true;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&y);
}

/* Anything after the first document is an error, not silently ignored. */
static void check_single_document(struct parse *p, yaml_parser_t *y)
{
	yaml_document_t next;
	yaml_node_t *root;

	if (!yaml_parser_load(y, &next)) {
		yaml_problem(p, y);
		return;
	}
	root = yaml_document_get_root_node(&next);
	if (root && !is_null(root))
		report(p, root->start_mark, "expected one YAML document, found a second one");
	yaml_document_delete(&next);
}

/* ---- public ---------------------------------------------------------- */

int pubd_config_defaults(struct pubd_config *c)
{
	const struct key *k;
	int v;

	memset(c, 0, sizeof(*c));
	for (k = keys; k < keys + NKEYS; k++) {
		void *field = (char *)c + k->off;

		if (k->scope != S_CONFIG)
			continue;
		switch (k->type) {
		case K_PATH:
			*(char **)field = strdup(k->def_str);
			if (!*(char **)field)
				goto oom;
			break;
		case K_ENUM:
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
			store_uint(field, k->size, k->def);
			break;
		case K_ADDRESS: /* none */
		case K_GROUP_NAME:
		case K_MCAST:
		case K_ACL:
			break;
		}
	}
	return 0;
oom:
	pubd_config_free(c);
	return -ENOMEM;
}

int pubd_config_parse(struct pubd_config *c, const char *file, const void *yaml, size_t len,
		      const struct pubd_name_resolver *res, struct pubd_config_errors *errs)
{
	struct pubd_config_errors local_errs;
	struct pubd_config tmp;
	yaml_parser_t y;
	yaml_document_t doc;
	struct parse p = {.c = &tmp, .file = file, .res = res};
	int ret;

	if (!errs)
		errs = &local_errs;
	memset(errs, 0, sizeof(*errs));
	memset(c, 0, sizeof(*c));
	p.errs = errs;
	ret = pubd_config_defaults(&tmp);
	if (ret)
		goto out_errs;
	check_syntax_and_depth(&p, yaml, len);
	if (p.oom || errs->n)
		goto done;
	if (!yaml_parser_initialize(&y)) {
		ret = -ENOMEM;
		goto out_tmp;
	}
	yaml_parser_set_input_string(&y, yaml, len);
	if (!yaml_parser_load(&y, &doc)) {
		yaml_problem(&p, &y);
	} else {
		p.doc = &doc;
		walk_root(&p, yaml_document_get_root_node(&doc));
		if (!p.stop)
			check_single_document(&p, &y);
		if (!p.stop)
			check_across(&p);
		yaml_document_delete(&doc);
	}
	yaml_parser_delete(&y);
done:
	free(p.name_marks);
	ret = p.oom ? -ENOMEM : errs->n ? -EINVAL : 0;
	if (!ret) {
		*c = tmp;
		return 0;
	}
	sort_errors(errs);
out_tmp:
	pubd_config_free(&tmp);
out_errs:
	if (ret == -ENOMEM || errs == &local_errs)
		pubd_config_errors_free(errs);
	return ret;
}

/* The one function here that touches the file system. */
static int read_file(const char *path, char **out, size_t *outlen)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nb;
	ssize_t r;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (len == cap) {
			/* One byte past the limit tells a file of exactly the
			 * limit from a larger one. */
			if (cap > PUBD_CONFIG_MAX_BYTES) {
				ret = -EFBIG;
				goto cleanup;
			}
			cap = cap ? cap * 2 : 16384;
			if (cap > PUBD_CONFIG_MAX_BYTES)
				cap = PUBD_CONFIG_MAX_BYTES + 1;
			nb = realloc(buf, cap + 1); /* + 1: a NUL after the text */
			if (!nb) {
				ret = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			goto cleanup;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = 0;
	*out = buf;
	*outlen = len;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return ret;
}

int pubd_config_load(struct pubd_config *c, const char *path, const struct pubd_name_resolver *res,
		     struct pubd_config_errors *errs)
{
	struct pubd_config_errors local_errs;
	char *buf = NULL;
	size_t len = 0;
	int ret;

	ret = read_file(path, &buf, &len);
	if (!ret) {
		ret = pubd_config_parse(c, path, buf, len, res, errs);
		free(buf);
		return ret;
	}
	memset(c, 0, sizeof(*c));
	if (!errs)
		errs = &local_errs;
	memset(errs, 0, sizeof(*errs));
	if (ret == -EFBIG)
		errs_add(errs, path, 0, 0, "cannot read: larger than %u bytes", PUBD_CONFIG_MAX_BYTES);
	else
		errs_add(errs, path, 0, 0, "cannot read: %s", strerror(-ret));
	if (errs == &local_errs)
		pubd_config_errors_free(errs);
	return ret;
}

static void acl_free(struct pubd_acl *a)
{
	free(a->entries);
	a->entries = NULL;
	a->n = 0;
}

void pubd_config_free(struct pubd_config *c)
{
	size_t i;

	if (!c)
		return;
	free(c->socket_path);
	free(c->fabric_address);
	for (i = 0; i < c->ngroups; i++) {
		free(c->groups[i].name);
		free(c->groups[i].address_text);
		acl_free(&c->groups[i].publish);
		acl_free(&c->groups[i].subscribe);
	}
	free(c->groups);
	memset(c, 0, sizeof(*c));
}

void pubd_config_errors_free(struct pubd_config_errors *e)
{
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->n; i++)
		free(e->v[i].message);
	free(e->v);
	free(e->file);
	memset(e, 0, sizeof(*e));
}

int pubd_config_error_format(const struct pubd_config_errors *e, size_t i, char *buf, size_t cap)
{
	const struct pubd_config_error *x;
	const char *file;

	if (!e || i >= e->n)
		return -EINVAL;
	x = &e->v[i];
	file = e->file ? e->file : "(config)";
	if (x->line)
		return snprintf(buf, cap, "%s:%u:%u: %s", file, x->line, x->column, x->message);
	return snprintf(buf, cap, "%s: %s", file, x->message);
}

const struct pubd_group_config *pubd_config_group(const struct pubd_config *c, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < c->ngroups; i++)
		if (c->groups[i].name && strlen(c->groups[i].name) == len && !memcmp(c->groups[i].name, name, len))
			return &c->groups[i];
	return NULL;
}

bool pubd_acl_allows(const struct pubd_acl *acl, uint32_t uid, uint32_t gid, const uint32_t *groups, size_t ngroups)
{
	size_t i, j;

	if (!acl || !acl->present)
		return true;
	for (i = 0; i < acl->n; i++) {
		const struct pubd_acl_entry *e = &acl->entries[i];

		switch (e->kind) {
		case PUBD_ACL_ANY:
			return true;
		case PUBD_ACL_UID:
			if (e->id == uid)
				return true;
			break;
		case PUBD_ACL_GID:
			if (e->id == gid)
				return true;
			for (j = 0; j < ngroups; j++)
				if (groups[j] == e->id)
					return true;
			break;
		}
	}
	return false;
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
