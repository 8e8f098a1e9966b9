/* SPDX-License-Identifier: MIT */
/*
 * Opening the udp fabric: fabric.address to an interface, its MTU and
 * flags, the sockets (the addresses our datagrams leave from: selfaddr.c);
 * closing it; the ops table.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "udp_internal.h"
#include "log.h"
#include "loop.h"

/*
 * fabric.address → interface. An IP literal must sit on a local interface
 * (the one whose multicast we use); anything else is an interface name.
 */
static int resolve_interface(struct pubd_fabric *f, const char *address, int *literal_family)
{
	struct ifaddrs *ifa_list = NULL, *ifa;
	struct in6_addr a6;
	struct in_addr a4;
	char name[IF_NAMESIZE] = "";
	int fam = 0;

	*literal_family = 0;
	if (!address) {
		log_notice("fabric udp: fabric.address not set: using the loopback interface lo "
			   "(multicast stays on this host)");
		snprintf(f->ifname, sizeof(f->ifname), "lo");
		goto by_name;
	}
	if (inet_pton(AF_INET, address, &a4) == 1)
		fam = AF_INET;
	else if (inet_pton(AF_INET6, address, &a6) == 1)
		fam = AF_INET6;
	if (!fam) {
		if (strlen(address) >= sizeof(f->ifname)) {
			log_err("fabric udp: fabric.address '%s' is neither an IP address nor an interface name",
				address);
			return -ENODEV;
		}
		snprintf(f->ifname, sizeof(f->ifname), "%s", address);
		goto by_name;
	}

	if (getifaddrs(&ifa_list) < 0)
		return -errno;
	for (ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != fam)
			continue;
		if (fam == AF_INET && ((struct sockaddr_in *)ifa->ifa_addr)->sin_addr.s_addr == a4.s_addr)
			break;
		if (fam == AF_INET6 && IN6_ARE_ADDR_EQUAL(&((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr, &a6))
			break;
	}
	if (ifa)
		snprintf(name, sizeof(name), "%s", ifa->ifa_name);
	freeifaddrs(ifa_list);
	if (!name[0]) {
		log_err("fabric udp: fabric.address %s is not assigned to any interface of this host "
			"(see `ip addr`)",
			address);
		return -EADDRNOTAVAIL;
	}
	snprintf(f->ifname, sizeof(f->ifname), "%s", name);
	*literal_family = fam;
	if (fam == AF_INET)
		f->if_addr4 = a4;

by_name:
	f->ifindex = if_nametoindex(f->ifname);
	if (!f->ifindex) {
		log_err("fabric udp: fabric.address '%s': no interface named %s", address ? address : "(unset)",
			f->ifname);
		return -ENODEV;
	}
	return 0;
}

/* MTU and flags of the interface, through a throwaway socket: the family
 * of the real one depends on what the interface can do. */
static int interface_info(struct pubd_fabric *f)
{
	struct ifreq ifr;
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", f->ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
		err = -errno;
		log_err("fabric udp: cannot read the MTU of %s: %s", f->ifname, strerror(-err));
		goto out;
	}
	f->if_mtu = (uint32_t)ifr.ifr_mtu;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		err = -errno;
		log_err("fabric udp: cannot read the flags of %s: %s", f->ifname, strerror(-err));
		goto out;
	}
	f->loopback = ifr.ifr_flags & IFF_LOOPBACK;
	if (!(ifr.ifr_flags & IFF_UP))
		log_warn("fabric udp: interface %s is down: nothing will be sent or received until it is up",
			 f->ifname);
	else if (!(ifr.ifr_flags & (IFF_MULTICAST | IFF_LOOPBACK)))
		log_warn("fabric udp: interface %s has multicast off (ip link set %s multicast on)", f->ifname,
			 f->ifname);
out:
	close(fd);
	return err;
}

static int choose_mtu(struct pubd_fabric *f, const struct pubd_config *cfg)
{
	uint32_t overhead = udp_overhead(f), max = udp_payload_max(f);

	if (max < PUBD_FABRIC_MIN_MTU) {
		log_err("fabric udp: interface %s has MTU %" PRIu32 ", too small for pubd datagrams", f->ifname,
			f->if_mtu);
		return -EINVAL;
	}
	if (cfg->mtu) {
		if (cfg->mtu > max) {
			log_err("fabric udp: fabric.mtu %" PRIu32
				" is larger than interface %s allows: at most %" PRIu32 " (interface MTU %" PRIu32
				" less %" PRIu32 " bytes of %s and UDP headers)",
				cfg->mtu, f->ifname, max, f->if_mtu, overhead,
				overhead == UDP6_OVERHEAD ? "IPv6" : "IPv4");
			return -EINVAL;
		}
		if (cfg->mtu < PUBD_FABRIC_MIN_MTU) {
			log_err("fabric udp: fabric.mtu %" PRIu32 " is too small (at least %u)", cfg->mtu,
				PUBD_FABRIC_MIN_MTU);
			return -EINVAL;
		}
		f->mtu = cfg->mtu;
		log_info("fabric udp: MTU %" PRIu32 " (fabric.mtu; interface %s allows %" PRIu32 ")", f->mtu, f->ifname,
			 max);
	} else {
		f->mtu = max;
		log_info("fabric udp: MTU %" PRIu32 " (interface %s MTU %" PRIu32 " less %" PRIu32
			 " bytes of %s and UDP headers%s)",
			 f->mtu, f->ifname, f->if_mtu, overhead, overhead == UDP6_OVERHEAD ? "IPv6" : "IPv4",
			 f->if_mtu - overhead > UDP_MAX_PAYLOAD ? ", capped at the largest UDP payload" : "");
	}
	return 0;
}

static void udp_close(struct pubd_fabric *f)
{
	unsigned i;

	if (!f)
		return;
	if (f->watch) {
		pubd_loop_unwatch(f->watch);
		f->watch = NULL;
	}
	if (f->swatch) {
		pubd_loop_unwatch(f->swatch);
		f->swatch = NULL;
	}
	if (f->up_timer) {
		pubd_loop_timer_free(f->up_timer);
		f->up_timer = NULL;
	}
	udp_self_addrs_close(f);
	/* Leave explicitly: closing the socket would too, but a leave that
	 * fails is worth a log line. */
	for (i = 0; i < f->nmembers; i++) {
		char buf[INET6_ADDRSTRLEN];
		int err = f->fd >= 0 ? udp_mcast_op(f, &f->members[i]->group, false) : 0;

		if (err)
			log_warn("fabric udp: leave %s on %s: %s",
				 udp_addr_str((struct sockaddr *)&f->members[i]->group, buf, sizeof(buf)), f->ifname,
				 strerror(-err));
		free(f->members[i]);
	}
	free(f->members);
	f->members = NULL;
	f->nmembers = f->members_cap = 0;
	udp_member_ix_free(&f->members_ix);
	f->rx_last_member = NULL;
	free(f->slots);
	f->slots = NULL;
	f->nslots = 0;
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
	}
	if (f->sfd >= 0) {
		close(f->sfd);
		f->sfd = -1;
	}
	free(f->rxbuf);
	free(f->address);
	free(f);
}

/* The receive ring, made for the MTU chosen at open (its byte more tells
 * a datagram larger than the MTU): 0 or -ENOMEM. */
static int udp_rx_buffers(struct pubd_fabric *f)
{
	int i;

	f->rxbuf_size = (size_t)f->mtu + 1;
	f->rxbuf = malloc(f->rxbuf_size * RX_BATCH);
	if (!f->rxbuf)
		return -ENOMEM;
	/* The receive headers point at their buffers once; rx.c resets only
	 * what recvmmsg writes back (rx_dirty, 0 here: calloc). */
	for (i = 0; i < RX_BATCH; i++) {
		struct msghdr *mh = &f->rx_msgs[i].msg_hdr;

		f->rx_iov[i].iov_base = f->rxbuf + (size_t)i * f->rxbuf_size;
		f->rx_iov[i].iov_len = f->rxbuf_size;
		mh->msg_name = &f->rx_src[i];
		mh->msg_namelen = sizeof(f->rx_src[i]);
		mh->msg_iov = &f->rx_iov[i];
		mh->msg_iovlen = 1;
		mh->msg_control = f->rx_cmsg[i].buf;
		mh->msg_controllen = sizeof(f->rx_cmsg[i].buf);
	}
	return 0;
}

/* The fabric's timer and its sockets in the loop: 0 or an error (what was
 * made is undone by udp_close). */
static int udp_watch(struct pubd_fabric *f, struct pubd_loop *loop)
{
	f->up_timer = pubd_loop_timer(loop, udp_on_up_timer, f);
	if (!f->up_timer)
		return -ENOMEM;
	f->watch = pubd_loop_watch(loop, f->fd, EPOLLIN, udp_on_socket, f);
	if (!f->watch)
		return -errno;
	/* EPOLLIN: unicast to our send port (loss repair's NAKs and repairs) is read there. */
	f->swatch = pubd_loop_watch(loop, f->sfd, EPOLLIN, udp_on_send_socket, f);
	if (!f->swatch)
		return -errno;
	return 0;
}

static int udp_open(struct pubd_fabric **out, const struct pubd_config *cfg, struct pubd_loop *loop,
		    const struct pubd_fabric_events *ev, void *ctx)
{
	struct pubd_fabric *f;
	int literal_family, err;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = -1;
	f->sfd = -1;
	f->nlfd = -1;
	f->loop = loop;
	f->ev = ev;
	f->ctx = ctx;
	f->port = cfg->udp_port;
	if (cfg->fabric_address) {
		f->address = strdup(cfg->fabric_address);
		if (!f->address) {
			err = -ENOMEM;
			goto fail;
		}
	}

	err = resolve_interface(f, cfg->fabric_address, &literal_family);
	if (err)
		goto fail;
	err = interface_info(f);
	if (err)
		goto fail;
	err = udp_setup_socket(f, literal_family);
	if (!err)
		err = udp_setup_send_socket(f);
	if (!err)
		err = udp_self_addrs_collect(f);
	if (err)
		goto fail;
	udp_self_filter_attach(f);
	udp_self_addrs_watch(f);
	err = choose_mtu(f, cfg);
	if (err)
		goto fail;
	f->mtu_max = f->mtu;

	err = udp_rx_buffers(f);
	if (!err)
		err = udp_watch(f, loop);
	if (err)
		goto fail;
	log_info("fabric udp: %s on %s (index %u), port %u, socket buffers rcv %d snd %d%s", udp_fam_name(f->fams),
		 f->ifname, f->ifindex, f->port, f->rcvbuf, f->sndbuf,
		 f->rcvbuf_forced && f->sndbuf_forced ? " (forced)" : "");
	*out = f;
	return 0;
fail:
	log_err("fabric udp: cannot open on fabric.address %s: %s", f->address ? f->address : "(unset)",
		strerror(-err));
	udp_close(f);
	return err;
}

static uint32_t udp_mtu(const struct pubd_fabric *f)
{
	return f->mtu;
}

const struct pubd_fabric_ops pubd_fabric_udp_ops = {
	.name = "udp",
	.open = udp_open,
	.close = udp_close,
	.join = udp_join,
	.leave = udp_leave,
	.listen = udp_listen,
	.send = udp_send,
	.send_to = udp_send_to,
	.peer_host = udp_peer_host,
	.mtu = udp_mtu,
	.status = udp_status,
	.poll = udp_poll,
};
