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
 */
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "udp_internal.h"

/* Add the addresses of ifa_list on the fabric's interface (or, with others,
 * on every other interface) to list, while there is room. */
static void add_addrs(const struct pubd_fabric *f, const struct ifaddrs *ifa_list, bool others, struct in6_addr *list,
		      unsigned *n)
{
	const struct ifaddrs *ifa;

	for (ifa = ifa_list; ifa && *n < MAX_SELF_ADDRS; ifa = ifa->ifa_next) {
		bool mine = !strcmp(ifa->ifa_name, f->ifname);

		if (!ifa->ifa_addr || mine == others)
			continue;
		if (ifa->ifa_addr->sa_family == AF_INET)
			udp_map_v4(&list[(*n)++], &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr);
		else if (ifa->ifa_addr->sa_family == AF_INET6)
			list[(*n)++] = ((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr;
	}
}

/* The list now: no address at all (either family), the interface's, then
 * the others' while there is room. */
static int collect(const struct pubd_fabric *f, struct in6_addr *list, unsigned *n)
{
	static const struct in_addr any4 = {.s_addr = INADDR_ANY};
	struct ifaddrs *ifa_list = NULL;

	if (getifaddrs(&ifa_list) < 0)
		return -errno;
	list[0] = in6addr_any;
	udp_map_v4(&list[1], &any4);
	*n = 2;
	add_addrs(f, ifa_list, false, list, n);
	add_addrs(f, ifa_list, true, list, n);
	freeifaddrs(ifa_list);
	return 0;
}

int udp_self_addrs_collect(struct pubd_fabric *f)
{
	return collect(f, f->self_addrs, &f->nself_addrs);
}

/* Collect again; when the list changed, rebuild the filter with it. */
static void refresh(struct pubd_fabric *f)
{
	struct in6_addr list[MAX_SELF_ADDRS];
	unsigned n;
	int err = collect(f, list, &n);

	if (err) {
		log_warn("fabric udp: the host's addresses changed, and reading them failed (%s): our own "
			 "datagrams are known by the %u addresses of before",
			 strerror(-err), f->nself_addrs);
		return;
	}
	if (n == f->nself_addrs && !memcmp(list, f->self_addrs, n * sizeof(list[0])))
		return;
	memcpy(f->self_addrs, list, n * sizeof(list[0]));
	f->nself_addrs = n;
	f->self_addr_changes++;
	log_info("fabric udp: the host's addresses changed: our own datagrams are known by %u addresses now", n);
	udp_self_filter_attach(f);
}

/* Read everything queued; true when any of it says the addresses may have
 * changed (an overrun, ENOBUFS, may have hidden such a message: look). */
static bool drain(int fd)
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
			return changed || errno == ENOBUFS;
		}
		/* Only the kernel speaks for the addresses (port 0). */
		if (fl != sizeof(from) || from.nl_pid != 0)
			continue;
		left = (size_t)n;
		for (h = &u.h; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left))
			if (h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_DELADDR)
				changed = true;
	}
}

static void on_netlink(void *ctx, uint32_t events)
{
	struct pubd_fabric *f = ctx;

	(void)events;
	if (drain(f->nlfd))
		refresh(f);
}

void udp_self_addrs_watch(struct pubd_fabric *f)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    !(f->nlwatch = pubd_loop_watch(f->loop, fd, EPOLLIN, on_netlink, f))) {
		log_warn("fabric udp: cannot watch the host's addresses (%s): an address added while pubd runs "
			 "is not known as ours until it restarts",
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	f->nlfd = fd;
}

void udp_self_addrs_unwatch(struct pubd_fabric *f)
{
	if (f->nlwatch) {
		pubd_loop_unwatch(f->nlwatch);
		f->nlwatch = NULL;
	}
	if (f->nlfd >= 0) {
		close(f->nlfd);
		f->nlfd = -1;
	}
}
