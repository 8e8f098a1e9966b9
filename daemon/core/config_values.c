/* SPDX-License-Identifier: MIT */
/*
 * Configuration values: the text of one scalar turned into the field of its
 * key (sizes like "64 KiB", octal modes, booleans, addresses...), checked
 * against the key's range. ACL lists are in config_acl.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_internal.h"

/* ---- values ---------------------------------------------------------- */

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
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

	ret = cfg_parse_u64(s, digits, &v);
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

static void store_string(void *field, char *s)
{
	char **f = field;

	free(*f);
	*f = s;
}

_Static_assert(sizeof(enum pubd_fabric_type) == sizeof(int) && sizeof(enum pubd_slow_policy) == sizeof(int),
	       "enum fields are stored as int");

/* ---- one key --------------------------------------------------------- */

/* The values below return 0, -EINVAL when s is not what k expects (the
 * caller reports it), or -ENOMEM. */

/* K_PATH, K_GROUP_NAME: a copy of s. */
static int leaf_text(const struct key *k, const char *s, void *field)
{
	char *copy;

	if (strlen(s) < k->min || strlen(s) > k->max)
		return -EINVAL;
	if (k->type == K_PATH ? s[0] != '/' : has_control(s))
		return -EINVAL;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	store_string(field, copy);
	return 0;
}

static int leaf_mode(const struct key *k, const char *s, void *field)
{
	uint64_t u;

	if (!*s || strlen(s) > 4 || strspn(s, "01234567") != strlen(s))
		return -EINVAL;
	u = strtoull(s, NULL, 8);
	if (u > k->max)
		return -EINVAL;
	cfg_store_uint(field, k->size, u);
	return 0;
}

static int leaf_enum(const struct key *k, const char *s, void *field)
{
	const struct enum_name *en;

	for (en = k->names; en->name; en++) {
		if (!strcmp(s, en->name)) {
			memcpy(field, &en->value, sizeof(int));
			return 0;
		}
	}
	return -EINVAL;
}

/* K_RATE: "off", or a size with "/s" or without (a rate is per second). */
static int parse_rate(const char *s, uint64_t *out)
{
	char buf[64];
	size_t len = strlen(s);

	if (!strcmp(s, "off")) {
		*out = 0;
		return 0;
	}
	if (len >= 2 && !strcmp(s + len - 2, "/s")) {
		if (len - 2 >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, s, len - 2);
		buf[len - 2] = '\0';
		return parse_size(buf, out);
	}
	return parse_size(s, out);
}

/* K_UINT, K_DURATION, K_SIZE, K_MTU, K_RATE. */
static int leaf_number(const struct key *k, const char *s, void *field)
{
	uint64_t u = 0;

	if ((k->type == K_MTU || k->auto_value) && !strcmp(s, "auto")) {
		cfg_store_uint(field, k->size, k->auto_value);
		return 0;
	}
	if (k->type == K_RATE) {
		if (parse_rate(s, &u))
			return -EINVAL;
		if (!u) { /* off, or 0: unpaced */
			cfg_store_uint(field, k->size, 0);
			return 0;
		}
	} else if (k->type == K_SIZE || k->type == K_MTU ? parse_size(s, &u) : cfg_parse_u64(s, strlen(s), &u))
		return -EINVAL;
	if (u < k->min || u > k->max)
		return -EINVAL;
	cfg_store_uint(field, k->size, u);
	return 0;
}

static int leaf_bool(const char *s, void *field)
{
	bool b;

	if (parse_bool(s, &b))
		return -EINVAL;
	memcpy(field, &b, sizeof(b));
	return 0;
}

/* fabric.address: the text, and the address when it is an IP literal. */
static int leaf_address(const char *s, void *field, struct pubd_config *c)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char *copy;

	if (parse_local_address(s, &ss, &sl))
		return -EINVAL;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	store_string(field, copy);
	c->fabric_sockaddr = ss;
	c->fabric_sockaddr_len = sl;
	return 0;
}

/*
 * metrics.listen: "IPV4:PORT" or "[IPV6]:PORT", an IP literal (no host
 * names: nothing to resolve at load) and a port from 0 to 65535 (0: any
 * free port, which the log then names).
 */
static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(s, ':');
	size_t hlen;
	uint64_t port;

	if (!colon || !colon[1] || cfg_parse_u64(colon + 1, strlen(colon + 1), &port) || port > 65535)
		return -EINVAL;
	hlen = (size_t)(colon - s);
	if (hlen >= sizeof(host) || hlen == 0)
		return -EINVAL;
	memcpy(host, s, hlen);
	host[hlen] = 0;
	if (host[0] == '[') {
		if (hlen < 3 || host[hlen - 1] != ']')
			return -EINVAL;
		host[hlen - 1] = 0;
		if (parse_ip(host + 1, ss, sl) || ss->ss_family != AF_INET6)
			return -EINVAL;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
		return 0;
	}
	if (parse_ip(host, ss, sl) || ss->ss_family != AF_INET)
		return -EINVAL;
	((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	return 0;
}

static int leaf_listen(const char *s, struct pubd_config *c)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char *copy;

	if (parse_listen(s, &ss, &sl))
		return -EINVAL;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	store_string(&c->metrics_listen, copy);
	c->metrics_sockaddr = ss;
	c->metrics_sockaddr_len = sl;
	return 0;
}

static int leaf_mcast(const char *s, struct pubd_group_config *g)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char *copy;

	if (parse_ip(s, &ss, &sl) || !is_multicast(&ss))
		return -EINVAL;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	store_string(&g->address_text, copy);
	g->address = ss;
	g->address_len = sl;
	return 0;
}

static int leaf_scalar(const struct key *k, const char *s, void *base)
{
	void *field = (char *)base + k->off;

	switch (k->type) {
	case K_PATH:
	case K_GROUP_NAME:
		return leaf_text(k, s, field);
	case K_MODE:
		return leaf_mode(k, s, field);
	case K_ENUM:
		return leaf_enum(k, s, field);
	case K_UINT:
	case K_DURATION:
	case K_SIZE:
	case K_MTU:
	case K_RATE:
		return leaf_number(k, s, field);
	case K_BOOL:
		return leaf_bool(s, field);
	case K_ADDRESS:
		return leaf_address(s, field, base);
	case K_MCAST:
		return leaf_mcast(s, base);
	case K_LISTEN:
		return leaf_listen(s, base);
	case K_REPAIR: /* the scalar forms; a mapping is walked (config_walk.c) */
		if (strcmp(s, "off") && strcmp(s, "on"))
			return -EINVAL;
		cfg_store_uint(field, k->size, !strcmp(s, "on"));
		return 0;
	case K_ACL:
		break;
	}
	return -EINVAL;
}

/* Parse v into the field of k in base; report and return -EINVAL if it is
 * not what k expects. */
int cfg_leaf(struct parse *p, const struct key *k, const yaml_node_t *v, void *base, const char *path)
{
	void *field = (char *)base + k->off;
	char got[GOT_BUF];
	const char *s;
	int ret;

	if (k->type == K_ACL)
		return cfg_acl_list(p, k, v, field, path);
	if ((k->type == K_ADDRESS || k->type == K_LISTEN) && cfg_is_null(v)) {
		struct pubd_config *c = base;

		store_string(field, NULL);
		if (k->type == K_ADDRESS)
			c->fabric_sockaddr_len = 0;
		else
			c->metrics_sockaddr_len = 0;
		return 0;
	}
	s = cfg_scalar(v);
	ret = !s || cfg_is_null(v) ? -EINVAL : leaf_scalar(k, s, base);
	if (ret == -ENOMEM) {
		p->oom = p->stop = true;
		return -ENOMEM;
	}
	if (ret)
		report(p, v->start_mark, "%s: expected %s, got %s", path, k->expect, cfg_describe(v, got, sizeof(got)));
	return ret;
}
