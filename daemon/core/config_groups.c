/* SPDX-License-Identifier: MIT */
/*
 * The groups section: a list of groups, each a mapping of the group keys
 * (name required; address required unless the group's scope is host), and
 * the check that no name is given twice.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

/*
 * A fabric group needs its multicast address. A host group has none: its
 * messages go to this daemon's own subscribers and never to the fabric, so
 * the keys about sending there (address, raw, rate, repair) are refused
 * rather than silently ignored.
 */
static void check_scope(struct parse *p, const yaml_node_t *gn, const char *prefix, struct pubd_group_config *g,
			const struct seen *seen)
{
	static const char *const fabric_only[] = {"address", "raw", "rate", "repair"};
	const struct key *addr = cfg_find_key(S_GROUP, "groups", "address");
	const struct seen *scope = &seen[cfg_find_key(S_GROUP, "groups", "scope") - config_keys];
	size_t i;

	if (scope->bad)
		return; /* said already; which keys it needs is not known */
	if (g->scope != PUBD_SCOPE_HOST) {
		if (!seen[addr - config_keys].given)
			report(p, gn->start_mark, "%s: missing key \"address\" (expected %s, or scope: host)", prefix,
			       addr->expect);
		return;
	}
	for (i = 0; i < sizeof(fabric_only) / sizeof(fabric_only[0]); i++) {
		const struct seen *at = &seen[cfg_find_key(S_GROUP, "groups", fabric_only[i]) - config_keys];

		if (at->given)
			report(p, at->mark,
			       "%s.%s: a group of scope host has no %s (its messages never leave this host); "
			       "expected the key left out, or scope: fabric",
			       prefix, fabric_only[i], fabric_only[i]);
	}
	/* What logs and pubctl show where a fabric group's address goes. */
	if (!g->address_text && !(g->address_text = strdup("host")))
		p->oom = p->stop = true;
}

static void walk_group(struct parse *p, const yaml_node_t *gn, size_t index, struct pubd_group_config *g)
{
	struct seen seen[NKEYS] = {0};
	char prefix[32], got[GOT_BUF];
	size_t i;

	snprintf(prefix, sizeof(prefix), "groups[%zu]", index);
	if (gn->type != YAML_MAPPING_NODE) {
		report(p, gn->start_mark, "%s: expected a mapping with name and address, got %s", prefix,
		       cfg_describe(gn, got, sizeof(got)));
		return;
	}
	cfg_walk_keys(p, gn, S_GROUP, "groups", prefix, g, seen);
	for (i = 0; i < NKEYS && !p->stop; i++)
		if (config_keys[i].scope == S_GROUP && config_keys[i].required && !seen[i].given)
			report(p, gn->start_mark, "%s: missing key \"%s\" (expected %s)", prefix,
			       config_keys[i].path + strlen("groups."), config_keys[i].expect);
	check_scope(p, gn, prefix, g, seen);
	if (g->name)
		p->name_marks[index] = seen[cfg_find_key(S_GROUP, "groups", "name") - config_keys].mark;
	p->addr_seen[index] = seen[cfg_find_key(S_GROUP, "groups", "address") - config_keys];
}

void cfg_walk_groups(struct parse *p, const yaml_node_t *v)
{
	struct pubd_config *c = p->c;
	char got[GOT_BUF];
	size_t n, i;

	if (cfg_is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		report(p, v->start_mark, "groups: expected a list of groups, got %s",
		       cfg_describe(v, got, sizeof(got)));
		return;
	}
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (!n)
		return;
	c->groups = calloc(n, sizeof(*c->groups));
	p->name_marks = calloc(n, sizeof(*p->name_marks));
	p->addr_seen = calloc(n, sizeof(*p->addr_seen));
	if (!c->groups || !p->name_marks || !p->addr_seen) {
		p->oom = p->stop = true;
		return;
	}
	c->ngroups = n;
	for (i = 0; i < n && !p->stop; i++) {
		yaml_node_t *gn = cfg_node(p, v->data.sequence.items.start[i]);

		/* A group's defaults come from the table, like every key's. */
		if (cfg_apply_defaults(S_GROUP, &c->groups[i])) {
			p->oom = p->stop = true;
			return;
		}
		if (gn)
			walk_group(p, gn, i, &c->groups[i]);
	}
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
void cfg_check_group_names(struct parse *p)
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
		       cfg_describe_name(v[i]->name, got, sizeof(got)), (unsigned)p->name_marks[a].line + 1,
		       (unsigned)p->name_marks[a].column + 1, a);
	}
	/* Kept for pubd_config_group (a file with duplicates is refused). */
	free(c->groups_by_name);
	c->groups_by_name = v;
	c->ngroups_by_name = n;
}

/* The address bytes a group is joined at (its family's, no port). */
static size_t addr_bytes(const struct pubd_group_config *g, const uint8_t **b)
{
	if (g->address.ss_family == AF_INET6) {
		*b = ((const struct sockaddr_in6 *)&g->address)->sin6_addr.s6_addr;
		return 16;
	}
	*b = (const uint8_t *)&((const struct sockaddr_in *)&g->address)->sin_addr;
	return 4;
}

static int cmp_address_bytes(const struct pubd_group_config *ga, const struct pubd_group_config *gb)
{
	const uint8_t *ba, *bb;
	size_t la = addr_bytes(ga, &ba), lb = addr_bytes(gb, &bb);

	return la != lb ? (la < lb ? -1 : 1) : memcmp(ba, bb, la);
}

static int cmp_address(const void *a, const void *b)
{
	const struct pubd_group_config *const *ga = a, *const *gb = b;
	int r = cmp_address_bytes(*ga, *gb);

	if (r)
		return r;
	return *ga < *gb ? -1 : *ga > *gb; /* by position: the first stays first */
}

/*
 * A raw group's address is its own. Groups that share an address are told
 * apart by the group id in pubd's header; a raw group's datagrams have no
 * header, so on a shared address a raw subscriber would be handed the other
 * groups' datagrams (headers, heartbeats, payloads their ACLs may forbid it)
 * and the other groups' receivers would lose theirs uncounted. By sorting,
 * like the names: aliases can make the list long.
 */
void cfg_check_raw_addresses(struct parse *p)
{
	struct pubd_config *c = p->c;
	const struct pubd_group_config **v;
	size_t n = 0, i, j, first = 0;
	char got[GOT_BUF], got2[GOT_BUF];

	for (i = 0; i < c->ngroups; i++)
		if (c->groups[i].raw)
			break;
	if (i == c->ngroups)
		return; /* no raw group: sharing is fine */
	v = calloc(c->ngroups, sizeof(*v));
	if (!v) {
		p->oom = p->stop = true;
		return;
	}
	for (i = 0; i < c->ngroups; i++)
		if (c->groups[i].name && p->addr_seen[i].given && !p->addr_seen[i].bad &&
		    c->groups[i].scope != PUBD_SCOPE_HOST)
			v[n++] = &c->groups[i];
	qsort(v, n, sizeof(*v), cmp_address);
	for (i = 1; i <= n; i++) {
		if (i < n && !cmp_address_bytes(v[i], v[first]))
			continue;
		/* v[first .. i-1] share an address: each raw one among them is wrong. */
		for (j = first; i - first > 1 && j < i; j++) {
			size_t at = (size_t)(v[j] - c->groups),
			       other = (size_t)(v[j == first ? first + 1 : first] - c->groups);

			if (!v[j]->raw)
				continue;
			report(p, p->addr_seen[at].mark,
			       "groups[%zu].address: raw group %s shares %s with groups[%zu] (%s, at %u:%u); "
			       "a raw group's datagrams carry no header to tell the groups apart, "
			       "so it needs an address of its own",
			       at, cfg_describe_name(v[j]->name, got, sizeof(got)), v[j]->address_text, other,
			       cfg_describe_name(c->groups[other].name, got2, sizeof(got2)),
			       (unsigned)p->addr_seen[other].mark.line + 1,
			       (unsigned)p->addr_seen[other].mark.column + 1);
		}
		first = i;
	}
	free(v);
}

/* name (len bytes, no NUL needed) against g's: the order cmp_name sorts in. */
static int cmp_key_name(const char *name, size_t len, const struct pubd_group_config *g)
{
	size_t glen = strlen(g->name);
	int r = memcmp(name, g->name, len < glen ? len : glen);

	return r ? r : len < glen ? -1 : len > glen;
}

const struct pubd_group_config *pubd_config_group(const struct pubd_config *c, const char *name, size_t len)
{
	size_t lo = 0, hi = c->ngroups_by_name, i;

	if (!c->groups_by_name) {
		for (i = 0; i < c->ngroups; i++)
			if (c->groups[i].name && !cmp_key_name(name, len, &c->groups[i]))
				return &c->groups[i];
		return NULL;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = cmp_key_name(name, len, c->groups_by_name[mid]);

		if (!r)
			return c->groups_by_name[mid];
		if (r < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* IPv6 multicast scope: the low four bits of the second byte (RFC 4291 2.7). */
static unsigned v6_scope(const struct sockaddr_storage *ss)
{
	return ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr[1] & 0x0f;
}

/*
 * What the fabric.address family allows the udp fabric to carry (udp.h: an
 * IPv4 literal makes an IPv4 socket, an IPv6 literal an IPv6-only one, an
 * interface name a dual-stack one; unset means lo, IPv4 only). Returns the
 * reason a group of family fam cannot be served, or NULL.
 */
static const char *udp_family_problem(const struct pubd_config *c, int fam)
{
	int fa = c->fabric_sockaddr_len ? c->fabric_sockaddr.ss_family : AF_UNSPEC;

	if (fam == AF_INET6 && !c->fabric_address)
		return "with no fabric.address the udp fabric runs on lo, which does not loop IPv6 multicast back; "
		       "set fabric.address to an interface name or to an IPv6 address of the interface";
	if (fam == AF_INET6 && fa == AF_INET)
		return "fabric.address is an IPv4 address, which makes the udp fabric IPv4 only; set it to the "
		       "interface name (IPv4 and IPv6 groups) or to an IPv6 address";
	if (fam == AF_INET && fa == AF_INET6)
		return "fabric.address is an IPv6 address, which makes the udp fabric IPv6 only; set it to the "
		       "interface name (IPv4 and IPv6 groups) or to an IPv4 address";
	return NULL;
}

/*
 * Group addresses the fabric cannot serve, found before the daemon starts:
 * IPv6 scopes that never reach another host (reserved 0 and f, and
 * interface-local ff01::/16), and on the udp fabric a family its socket
 * does not carry. Link-local scope (ff02::/16, ff12::/16) is served on the
 * one interface fabric.address names, which is how a group address gets
 * its zone here; so it follows the same family rule as any IPv6 group.
 */
void cfg_check_group_scopes(struct parse *p)
{
	const struct pubd_config *c = p->c;
	const char *why;
	size_t i;

	for (i = 0; i < c->ngroups && !p->stop; i++) {
		const struct pubd_group_config *g = &c->groups[i];
		const struct seen *at = &p->addr_seen[i];
		int fam = g->address.ss_family;

		if (!at->given || at->bad || g->scope == PUBD_SCOPE_HOST)
			continue;
		if (fam == AF_INET6 && (v6_scope(&g->address) <= 1 || v6_scope(&g->address) == 0xf)) {
			report(p, at->mark,
			       "groups[%zu].address: %s has %s scope (ff%02x::/16), which never leaves this host; "
			       "expected a group of link-local (ff12::), site-local (ff15::) or wider scope",
			       i, g->address_text, v6_scope(&g->address) == 1 ? "interface-local" : "reserved",
			       ((const struct sockaddr_in6 *)&g->address)->sin6_addr.s6_addr[1]);
			continue;
		}
		why = c->fabric_type == PUBD_FABRIC_UDP ? udp_family_problem(c, fam) : NULL;
		if (why)
			report(p, at->mark, "groups[%zu].address: the udp fabric cannot serve the %s group %s: %s", i,
			       fam == AF_INET6 ? "IPv6" : "IPv4", g->address_text, why);
	}
}
