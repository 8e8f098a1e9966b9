/* SPDX-License-Identifier: MIT */
/*
 * Memberships by group address (member_ix.h). The addresses are the
 * operator's configured groups, not a peer's choice, so an unkeyed mix is
 * enough to spread them.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "member_ix.h"
#include "mix.h"
#include "udp_internal.h"

static unsigned home_of(const struct udp_member_ix *ix, const struct sockaddr_storage *a)
{
	uint64_t h;

	if (a->ss_family == AF_INET) {
		h = pub_mix64(((const struct sockaddr_in *)a)->sin_addr.s_addr);
	} else {
		uint64_t w[2];

		memcpy(w, &((const struct sockaddr_in6 *)a)->sin6_addr, sizeof(w));
		h = pub_mix64(w[0] ^ pub_mix64(w[1]));
	}
	return (unsigned)h & ix->mask;
}

struct membership *udp_member_ix_find(const struct udp_member_ix *ix, const struct sockaddr_storage *group)
{
	unsigned i;

	/* No destination address (the datagram had no PKTINFO): nothing
	 * else of it is set. */
	if (!ix->n || (group->ss_family != AF_INET && group->ss_family != AF_INET6))
		return NULL;
	for (i = home_of(ix, group); ix->v[i]; i = (i + 1) & ix->mask)
		if (udp_same_group(&ix->v[i]->group, group))
			return ix->v[i];
	return NULL;
}

static void place(struct udp_member_ix *ix, struct membership *m)
{
	unsigned i = home_of(ix, &m->group);

	while (ix->v[i])
		i = (i + 1) & ix->mask;
	ix->v[i] = m;
}

/* Twice the places, everything placed anew. */
static int grow(struct udp_member_ix *ix)
{
	unsigned old_cap = ix->mask ? ix->mask + 1 : 0, cap = old_cap ? old_cap * 2 : 16, i;
	struct membership **old = ix->v, **v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	ix->v = v;
	ix->mask = cap - 1;
	for (i = 0; i < old_cap; i++)
		if (old[i])
			place(ix, old[i]);
	free(old);
	return 0;
}

int udp_member_ix_add(struct udp_member_ix *ix, struct membership *m)
{
	/* At most half full: probe runs stay short. */
	if ((ix->n + 1) * 2 > (ix->mask ? ix->mask + 1 : 0) && grow(ix) < 0)
		return -ENOMEM;
	place(ix, m);
	ix->n++;
	return 0;
}

void udp_member_ix_del(struct udp_member_ix *ix, const struct membership *m)
{
	unsigned i, j, home;

	if (!ix->n)
		return;
	for (i = home_of(ix, &m->group); ix->v[i] != m; i = (i + 1) & ix->mask)
		if (!ix->v[i])
			return;
	/* Backward shift: an entry after the hole that would not be found
	 * past it (its home lies cyclically in (i, j]) moves into it. */
	for (j = (i + 1) & ix->mask; ix->v[j]; j = (j + 1) & ix->mask) {
		home = home_of(ix, &ix->v[j]->group);
		if (((j - home) & ix->mask) >= ((j - i) & ix->mask)) {
			ix->v[i] = ix->v[j];
			i = j;
		}
	}
	ix->v[i] = NULL;
	ix->n--;
}

void udp_member_ix_free(struct udp_member_ix *ix)
{
	free(ix->v);
	memset(ix, 0, sizeof(*ix));
}
