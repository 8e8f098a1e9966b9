/* SPDX-License-Identifier: MIT */
/*
 * The addresses our own datagrams can come back from, kept current.
 *
 * A datagram we sent to a group carries our send port and one of the
 * host's addresses (the interface's, none at all on lo, or another
 * interface's global address where Linux picks one for lo). pubd tells its
 * own looped-back datagrams by that pair, in rx.c (from_self) and in the
 * kernel (selffilter.c). The host's addresses change while pubd runs (DHCP,
 * an operator's `ip addr add`), and a datagram of ours from an address the
 * list lacks would be taken for a neighbour's: a raw group would deliver
 * its local messages twice. So the list is collected at open and again
 * whenever the kernel announces an address added or removed, on a
 * NETLINK_ROUTE socket in the loop; the socket filter is rebuilt with it.
 * The same socket hears of changes to the fabric's interface (link.c).
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "udp_internal.h"

/* A list of addresses, as collected. */
struct addr_list {
	struct in6_addr *a;
	unsigned n, cap;
};

static bool list_add(struct addr_list *l, const struct in6_addr *a)
{
	if (l->n == l->cap) {
		unsigned cap = l->cap ? l->cap * 2 : 16;
		struct in6_addr *b;

		if (l->cap >= SELF_ADDRS_MAX)
			return false;
		if (cap > SELF_ADDRS_MAX)
			cap = SELF_ADDRS_MAX;
		b = realloc(l->a, cap * sizeof(*b));
		if (!b)
			return false;
		l->a = b;
		l->cap = cap;
	}
	l->a[l->n++] = *a;
	return true;
}

/* Add the addresses of ifa_list on the fabric's interface (or, with others,
 * on every other interface) to l. False when l could not take one more. */
static bool add_addrs(const struct pubd_fabric *f, const struct ifaddrs *ifa_list, bool others, struct addr_list *l)
{
	const struct ifaddrs *ifa;
	struct in6_addr a;

	for (ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
		bool mine = !strcmp(ifa->ifa_name, f->ifname);

		if (!ifa->ifa_addr || mine == others)
			continue;
		if (ifa->ifa_addr->sa_family == AF_INET)
			udp_map_v4(&a, &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr);
		else if (ifa->ifa_addr->sa_family == AF_INET6)
			a = ((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr;
		else
			continue;
		if (!list_add(l, &a))
			return false;
	}
	return true;
}

/* The list now: no address at all (either family), the interface's, then
 * the others' (a host with more than SELF_ADDRS_MAX keeps the first). */
static int collect(const struct pubd_fabric *f, struct addr_list *l)
{
	static const struct in_addr any4 = {.s_addr = INADDR_ANY};
	struct ifaddrs *ifa_list = NULL;
	struct in6_addr a;
	int err = 0;

	*l = (struct addr_list){0};
	if (getifaddrs(&ifa_list) < 0)
		return -errno;
	udp_map_v4(&a, &any4);
	if (!list_add(l, &in6addr_any) || !list_add(l, &a))
		err = -ENOMEM;
	else if (add_addrs(f, ifa_list, false, l))
		add_addrs(f, ifa_list, true, l);
	freeifaddrs(ifa_list);
	if (err) {
		free(l->a);
		*l = (struct addr_list){0};
	}
	return err;
}

static int addr_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct in6_addr));
}

/* Make l the fabric's list (taking it), with its sorted copy for from_self;
 * false (l freed, the list as it was) when out of memory. */
static bool take_list(struct pubd_fabric *f, struct addr_list *l)
{
	struct in6_addr *sorted = malloc(l->n * sizeof(*sorted));

	if (!sorted) {
		free(l->a);
		return false;
	}
	memcpy(sorted, l->a, l->n * sizeof(*sorted));
	qsort(sorted, l->n, sizeof(*sorted), addr_cmp);
	free(f->self_addrs);
	free(f->self_sorted);
	f->self_addrs = l->a;
	f->self_sorted = sorted;
	f->nself_addrs = l->n;
	return true;
}

bool udp_is_self_addr(const struct pubd_fabric *f, const struct in6_addr *a)
{
	return f->nself_addrs && bsearch(a, f->self_sorted, f->nself_addrs, sizeof(*a), addr_cmp);
}

int udp_self_addrs_collect(struct pubd_fabric *f)
{
	struct addr_list l;
	int err = collect(f, &l);

	if (err)
		return err;
	return take_list(f, &l) ? 0 : -ENOMEM;
}

/* Collect again; when the list changed, rebuild the filter with it. */
static void refresh(struct pubd_fabric *f)
{
	struct addr_list l;
	int err = collect(f, &l);

	if (!err && l.n == f->nself_addrs && !memcmp(l.a, f->self_addrs, l.n * sizeof(l.a[0]))) {
		free(l.a);
		return;
	}
	if (err || !take_list(f, &l)) {
		log_warn("fabric udp: the host's addresses changed, and reading them failed (%s): our own "
			 "datagrams are known by the %u addresses of before",
			 strerror(err ? -err : ENOMEM), f->nself_addrs);
		return;
	}
	f->self_addr_changes++;
	log_info("fabric udp: the host's addresses changed: our own datagrams are known by %u addresses now",
		 f->nself_addrs);
	udp_self_filter_attach(f);
}

/* Read everything queued; true when any of it says the addresses may have
 * changed (an overrun, ENOBUFS, may have hidden such a message: look).
 * *link: the same for a change of the fabric's interface (its MTU). */
static bool drain(int fd, unsigned ifindex, bool *link)
{
	union {
		struct nlmsghdr h;
		uint8_t buf[8192];
	} u;
	struct sockaddr_nl from;
	bool changed = false;

	for (;;) {
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, u.buf, sizeof(u.buf), 0, (struct sockaddr *)&from, &fl);
		const struct nlmsghdr *h;
		size_t left;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS)
				*link = true;
			return changed || errno == ENOBUFS;
		}
		/* Only the kernel speaks for the addresses (port 0). */
		if (fl != sizeof(from) || from.nl_pid != 0)
			continue;
		left = (size_t)n;
		for (h = &u.h; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_DELADDR)
				changed = true;
			else if (h->nlmsg_type == RTM_NEWLINK &&
				 h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg)) &&
				 ((const struct ifinfomsg *)NLMSG_DATA(h))->ifi_index == (int)ifindex)
				*link = true;
		}
	}
}

static void on_netlink(void *ctx, uint32_t events)
{
	struct pubd_fabric *f = ctx;
	bool link = false;

	(void)events;
	if (drain(f->nlfd, f->ifindex, &link))
		refresh(f);
	if (link)
		udp_link_changed(f);
}

void udp_self_addrs_watch(struct pubd_fabric *f)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK,
				 .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_LINK};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    !(f->nlwatch = pubd_loop_watch(f->loop, fd, EPOLLIN, on_netlink, f))) {
		log_warn("fabric udp: cannot watch the host's addresses and interfaces (%s): an address added "
			 "while pubd runs is not known as ours, and a changed interface MTU is seen only when a "
			 "send fails, until it restarts",
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	f->nlfd = fd;
}

void udp_self_addrs_close(struct pubd_fabric *f)
{
	if (f->nlwatch) {
		pubd_loop_unwatch(f->nlwatch);
		f->nlwatch = NULL;
	}
	if (f->nlfd >= 0) {
		close(f->nlfd);
		f->nlfd = -1;
	}
	free(f->self_addrs);
	free(f->self_sorted);
	f->self_addrs = f->self_sorted = NULL;
	f->nself_addrs = 0;
}
