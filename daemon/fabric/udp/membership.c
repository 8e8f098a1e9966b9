/* SPDX-License-Identifier: MIT */
/*
 * Slots and group memberships: the daemon joins, listens on and leaves
 * slots; each group address has one membership (IGMP/MLD) on the receive
 * socket, shared by reference between the slots that listen on it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "udp_internal.h"
#include "log.h"
#include "loop.h"

struct slot *udp_get_slot(struct pubd_fabric *f, int slot)
{
	if (slot < 0 || (unsigned)slot >= f->nslots || !f->slots[slot].used)
		return NULL;
	return &f->slots[slot];
}

static void recompute_first_slot(struct pubd_fabric *f, struct membership *m)
{
	unsigned i;

	m->first_slot = -1;
	for (i = 0; i < f->nslots; i++) {
		if (f->slots[i].used && f->slots[i].recv && f->slots[i].m == m) {
			m->first_slot = (int)i;
			return;
		}
	}
}

int udp_mcast_op(struct pubd_fabric *f, const struct sockaddr_storage *group, bool join)
{
	struct group_req gr;
	int level = group->ss_family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;

	memset(&gr, 0, sizeof(gr));
	gr.gr_interface = f->ifindex;
	memcpy(&gr.gr_group, group, sizeof(*group));
	if (setsockopt(f->fd, level, join ? MCAST_JOIN_GROUP : MCAST_LEAVE_GROUP, &gr, sizeof(gr)) < 0)
		return -errno;
	return 0;
}

static int membership_get(struct pubd_fabric *f, const struct sockaddr_storage *group, struct membership **out)
{
	struct membership *m, **v;
	char buf[INET6_ADDRSTRLEN];
	int err;

	m = udp_member_ix_find(&f->members_ix, group);
	if (m) {
		m->refs++;
		*out = m;
		return 0;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	v = pub_grow(f->members, f->nmembers, &f->members_cap, sizeof(*v), 8);
	if (!v) {
		free(m);
		return -ENOMEM;
	}
	f->members = v;
	m->group = *group;
	m->refs = 1;
	m->first_slot = -1;
	if (udp_member_ix_add(&f->members_ix, m) < 0) {
		free(m);
		return -ENOMEM;
	}
	err = udp_mcast_op(f, group, true);
	if (err) {
		log_err("fabric udp: join %s on %s: %s%s",
			udp_addr_str((const struct sockaddr *)group, buf, sizeof(buf)), f->ifname, strerror(-err),
			err == -ENOBUFS
				? " (too many groups on one socket: raise net.core.optmem_max, which bounds "
				  "the memory of a socket's memberships, and for IPv4 net.ipv4.igmp_max_memberships)"
				: "");
		udp_member_ix_del(&f->members_ix, m);
		free(m);
		return err;
	}
	m->at = f->nmembers;
	f->members[f->nmembers++] = m;
	*out = m;
	return 0;
}

static void membership_put(struct pubd_fabric *f, struct membership *m)
{
	char buf[INET6_ADDRSTRLEN];
	int err;

	if (--m->refs)
		return;
	err = udp_mcast_op(f, &m->group, false);
	if (err)
		log_warn("fabric udp: leave %s on %s: %s", udp_addr_str((struct sockaddr *)&m->group, buf, sizeof(buf)),
			 f->ifname, strerror(-err));
	udp_member_ix_del(&f->members_ix, m);
	if (f->rx_last_member == m)
		f->rx_last_member = NULL;
	f->members[m->at] = f->members[--f->nmembers];
	f->members[m->at]->at = m->at;
	free(m);
}

int udp_listen(struct pubd_fabric *f, int slot, bool on)
{
	struct slot *s = udp_get_slot(f, slot);
	struct membership *m;
	int err;

	if (!s)
		return -EBADSLT;
	if (!s->recv)
		return on ? -EINVAL : 0;
	if (!!s->m == on)
		return 0;
	/* The lowest listening slot, kept as slots come and go: a walk of
	 * every slot only when that one stops and others still listen (with
	 * thousands of groups, a walk per listen made starting O(n^2)). */
	if (on) {
		err = membership_get(f, &s->group, &s->m);
		if (err)
			return err;
		if (s->m->first_slot < 0 || slot < s->m->first_slot)
			s->m->first_slot = slot;
		return 0;
	}
	m = s->m;
	s->m = NULL;
	if (m->refs > 1 && m->first_slot == slot)
		recompute_first_slot(f, m);
	membership_put(f, m);
	return 0;
}

/*
 * The group address of a join, port 0, in *group: a multicast address of a
 * family the socket carries. 0, or -errno (with a log line where the
 * address is the problem).
 */
static int check_group(struct pubd_fabric *f, int slot, const struct sockaddr *addr, socklen_t addrlen,
		       struct sockaddr_storage *group)
{
	char buf[INET6_ADDRSTRLEN];

	if (slot < 0 || !addr || addrlen > sizeof(*group))
		return -EINVAL;
	if ((addr->sa_family == AF_INET && addrlen < sizeof(struct sockaddr_in)) ||
	    (addr->sa_family == AF_INET6 && addrlen < sizeof(struct sockaddr_in6)))
		return -EINVAL;
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	memset(group, 0, sizeof(*group));
	memcpy(group, addr, addrlen);
	if (group->ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)group;

		s4->sin_port = 0;
		if (!IN_MULTICAST(ntohl(s4->sin_addr.s_addr))) {
			log_err("fabric udp: slot %d: %s is not an IPv4 multicast address", slot,
				udp_addr_str(addr, buf, sizeof(buf)));
			return -EINVAL;
		}
		if (!(f->fams & FAM_V4))
			goto wrong_family;
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)group;

		s6->sin6_port = 0;
		if (!IN6_IS_ADDR_MULTICAST(&s6->sin6_addr)) {
			log_err("fabric udp: slot %d: %s is not an IPv6 multicast address", slot,
				udp_addr_str(addr, buf, sizeof(buf)));
			return -EINVAL;
		}
		if (!(f->fams & FAM_V6))
			goto wrong_family;
	}
	return 0;

wrong_family:
	log_err("fabric udp: slot %d: group %s is %s but the fabric is %s (fabric.address %s); %s", slot,
		udp_addr_str(addr, buf, sizeof(buf)), group->ss_family == AF_INET ? "IPv4" : "IPv6",
		udp_fam_name(f->fams), f->address ? f->address : "(unset)",
		f->loopback ? "the loopback interface carries IPv4 groups only"
			    : "use a group of the same family, or an interface name as fabric.address");
	return -EAFNOSUPPORT;
}

/* Room in the slot table for slot, doubling: growing by a few slots at a
 * time copied the table once per few groups, quadratic in thousands. */
static int grow_slots(struct pubd_fabric *f, int slot)
{
	if ((unsigned)slot >= f->nslots) {
		unsigned n = f->nslots ? f->nslots : 16;
		struct slot *v;

		while (n <= (unsigned)slot)
			n *= 2;
		v = realloc(f->slots, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memset(v + f->nslots, 0, (n - f->nslots) * sizeof(*v));
		f->slots = v;
		f->nslots = n;
	}
	return 0;
}

/* Where the slot's datagrams are sent: the group on the fabric's port. */
static void set_dest(struct pubd_fabric *f, struct slot *s, const struct sockaddr_storage *group)
{
	if (group->ss_family == AF_INET && f->sock_family == AF_INET6) {
		/* A dual-stack socket sends to IPv4 groups by their v4-mapped address. */
		struct sockaddr_in6 *d = (struct sockaddr_in6 *)&s->dest;
		const struct sockaddr_in *g = (const struct sockaddr_in *)group;

		d->sin6_family = AF_INET6;
		udp_map_v4(&d->sin6_addr, &g->sin_addr);
		d->sin6_port = htons(f->port);
		s->dest_len = sizeof(*d);
	} else if (group->ss_family == AF_INET) {
		memcpy(&s->dest, group, sizeof(struct sockaddr_in));
		((struct sockaddr_in *)&s->dest)->sin_port = htons(f->port);
		s->dest_len = sizeof(struct sockaddr_in);
	} else {
		memcpy(&s->dest, group, sizeof(struct sockaddr_in6));
		((struct sockaddr_in6 *)&s->dest)->sin6_port = htons(f->port);
		s->dest_len = sizeof(struct sockaddr_in6);
	}
}

int udp_join(struct pubd_fabric *f, int slot, const struct sockaddr *addr, socklen_t addrlen, enum pubd_join_mode mode)
{
	struct sockaddr_storage group;
	char buf[INET6_ADDRSTRLEN];
	struct slot *s;
	int err;

	err = check_group(f, slot, addr, addrlen, &group);
	if (!err)
		err = grow_slots(f, slot);
	if (err)
		return err;
	s = &f->slots[slot];
	if (s->used)
		return -EEXIST;

	memset(s, 0, sizeof(*s));
	s->family = group.ss_family;
	set_dest(f, s, &group);
	s->recv = mode & PUBD_JOIN_RECV;
	s->group = group;
	s->used = true;
	/* Sending to a group needs no membership: a send-only slot joins
	 * nothing, and an idle one joins when it starts listening. */
	if (s->recv && !(mode & PUBD_JOIN_IDLE)) {
		err = udp_listen(f, slot, true);
		if (err) {
			s->used = false;
			return err;
		}
	}
	s->pending_up = true;
	pubd_loop_timer_arm(f->up_timer, 0);
	log_debug("fabric udp: slot %d %s %s on %s", slot, s->m ? "joined" : "sends to",
		  udp_addr_str(addr, buf, sizeof(buf)), f->ifname);
	return 0;
}

void udp_on_up_timer(void *ctx, uint64_t now)
{
	struct pubd_fabric *f = ctx;
	unsigned i;

	(void)now;
	/* The callback may leave or join slots: re-check bounds each step. */
	for (i = 0; i < f->nslots; i++) {
		if (f->slots[i].used && f->slots[i].pending_up) {
			f->slots[i].pending_up = false;
			if (f->ev && f->ev->group_state)
				f->ev->group_state(f->ctx, (int)i, true, 0);
		}
	}
}

void udp_leave(struct pubd_fabric *f, int slot)
{
	struct slot *s = udp_get_slot(f, slot);
	struct membership *m;

	if (!s)
		return;
	m = s->m;
	s->used = false;
	s->pending_up = false;
	s->m = NULL;
	if (m) {
		if (m->refs > 1 && m->first_slot == slot)
			recompute_first_slot(f, m);
		membership_put(f, m);
	}
}
