/* SPDX-License-Identifier: MIT */
/*
 * Address helpers of the udp fabric: names for log lines and the status,
 * group comparison, IPv4-mapped IPv6.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "udp_internal.h"

const char *udp_fam_name(enum fam f)
{
	switch (f) {
	case FAM_V4:
		return "ipv4";
	case FAM_V6:
		return "ipv6";
	default:
		return "ipv4+ipv6";
	}
}

const char *udp_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a = sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
						  : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;

	if (!inet_ntop(sa->sa_family, a, buf, (socklen_t)len))
		snprintf(buf, len, "(family %d)", sa->sa_family);
	return buf;
}

bool udp_same_group(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)a)->sin6_addr,
				  &((const struct sockaddr_in6 *)b)->sin6_addr);
}

/* a as an IPv4-mapped IPv6 address (::ffff:a.b.c.d). */
void udp_map_v4(struct in6_addr *out, const struct in_addr *a)
{
	memset(out, 0, sizeof(*out));
	out->s6_addr[10] = out->s6_addr[11] = 0xff;
	memcpy(&out->s6_addr[12], a, 4);
}
