/* SPDX-License-Identifier: MIT */
/*
 * The udp fabric: IP multicast over one UDP socket, the same wire format as
 * verbs. For hosts without an RDMA device and for multi-host tests in network
 * namespaces.
 *
 * One socket carries every group:
 *  - bound to the wildcard address and fabric.udp_port with SO_REUSEADDR, so
 *    several daemons on one host each get a copy of every datagram;
 *  - IP_MULTICAST_ALL / IPV6_MULTICAST_ALL off: a socket bound to the wildcard
 *    would otherwise receive every group any socket on the host joined;
 *  - multicast loop on: another daemon on this host must hear us. Our own
 *    looped-back datagrams are dropped by the daemon (source id), not here;
 *  - the destination address of each datagram (IP_PKTINFO / IPV6_PKTINFO)
 *    says which group it was sent to, i.e. which slot.
 *
 * Family: an IPv4 fabric.address makes an IPv4 socket, an IPv6 one an IPv6
 * socket; an interface name makes a dual-stack IPv6 socket that carries both
 * (IPv4 groups as v4-mapped addresses), or IPv4 only when the kernel has no
 * IPv6. The loopback interface (the default when fabric.address is unset) is
 * IPv4 only: Linux does not loop IPv6 multicast back on lo. The MTU is the interface MTU less the IP and UDP
 * headers of the family with the larger header the socket carries, so every
 * datagram fits in one frame whichever group it goes to.
 *
 * Joins are per address: two slots on one address share one membership,
 * reference-counted. IGMP/MLD have no join confirmation, so a join is "up"
 * as soon as setsockopt succeeds; group_state is reported from the loop (a
 * zero-delay timer), never from inside join(), so the daemon sees the same
 * asynchronous shape as on verbs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "config.h"
#include "fabric.h"
#include "log.h"
#include "loop.h"
#include "proto.h"

#ifndef IPV6_MULTICAST_ALL
#define IPV6_MULTICAST_ALL 29 /* linux/in6.h, since Linux 4.20 */
#endif

#define UDP_MAX_PAYLOAD 65507u /* 65535 - 20 (IPv4) - 8 (UDP) */
#define UDP4_OVERHEAD	28u    /* IPv4 header 20 + UDP 8 */
#define UDP6_OVERHEAD	48u    /* IPv6 header 40 + UDP 8 */
#define RX_BATCH	32
/* Batches per wakeup: enough to drain a burst, bounded so the loop still
 * serves client sockets and timers while a flood arrives. */
#define RX_BATCHES_PER_WAKEUP 16
#define TX_BATCH	      64
/* 32 MiB: a 16 MiB message (plus headers) in flight from one publisher
 * fits in the receive queue, and the kernel doubles it for bookkeeping. */
#define SOCK_BUF_BYTES (32 << 20)
#define DEFAULT_HOPS   1
/* The smallest IB MTU: a wire header (48 bytes) plus a useful payload. */
#define PUBD_FABRIC_MIN_MTU 256u

enum fam {
	FAM_V4 = 1,
	FAM_V6 = 2,
	FAM_BOTH = 3,
};

struct membership {
	struct sockaddr_storage group; /* port 0, as given (AF_INET or AF_INET6) */
	unsigned refs;
	int first_slot; /* lowest receiving slot on this address: rx maps to it */
};

struct slot {
	bool used;
	bool recv;	 /* joined with PUBD_JOIN_RECV: may listen */
	bool pending_up; /* group_state(up) not reported yet */
	int family;	 /* of the group address */
	struct sockaddr_storage dest;
	socklen_t dest_len;	       /* in the socket's family (v4-mapped on a dual socket) */
	struct membership *m;	       /* held while listening: the group's datagrams come in */
	struct sockaddr_storage group; /* port 0: what the membership names */
};

#define MAX_SELF_ADDRS 16

struct pubd_fabric {
	int fd;		 /* receives: bound to the group port every daemon shares */
	int sfd;	 /* sends: a port of its own, which tells our datagrams apart */
	uint16_t sport;	 /* sfd's port */
	int sock_family; /* AF_INET or AF_INET6 */
	enum fam fams;	 /* which group families the socket carries */
	struct pubd_loop *loop;
	struct pubd_loop_watch *watch;
	struct pubd_loop_watch *swatch; /* sfd: EPOLLOUT while a send waits for room */
	struct pubd_loop_timer *up_timer;
	bool want_out;
	bool loopback; /* the interface is lo */
	const struct pubd_fabric_events *ev;
	void *ctx;

	char ifname[IF_NAMESIZE];
	unsigned ifindex;
	uint32_t if_mtu;
	char *address;		 /* fabric.address as configured, NULL when unset */
	struct in_addr if_addr4; /* the configured IPv4 address, or 0 */
	/* The interface's addresses (IPv4 as v4-mapped): a datagram from one of
	 * them and from sport is one we sent. */
	struct in6_addr self_addrs[MAX_SELF_ADDRS];
	unsigned nself_addrs;
	uint16_t port;
	uint32_t mtu;
	int rcvbuf, sndbuf; /* as the kernel reports them */
	bool rcvbuf_forced, sndbuf_forced;

	struct slot *slots;
	unsigned nslots;
	struct membership **members;
	unsigned nmembers;

	/* Receive ring: RX_BATCH buffers of mtu + 1 bytes (the extra byte
	 * detects datagrams larger than our MTU: MSG_TRUNC). */
	uint8_t *rxbuf;
	size_t rxbuf_size;
	struct mmsghdr rx_msgs[RX_BATCH];
	unsigned rx_dirty; /* headers [0, rx_dirty) were written by the kernel: reset them */
	struct iovec rx_iov[RX_BATCH];
	struct sockaddr_storage rx_src[RX_BATCH];
	union {
		struct cmsghdr align;
		uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(struct in_pktinfo)) +
			    CMSG_SPACE(sizeof(uint32_t))];
	} rx_cmsg[RX_BATCH];
	struct pubd_rx_dgram rx_out[RX_BATCH];

	/* counters */
	uint64_t tx_dgrams, tx_bytes, tx_eagain, tx_errors;
	uint64_t rx_dgrams, rx_bytes, rx_truncated, rx_unknown;
	uint32_t rx_kernel_drops; /* SO_RXQ_OVFL: the socket's cumulative drop count */
};

static const char *fam_name(enum fam f)
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

static const char *addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a = sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
						  : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;

	if (!inet_ntop(sa->sa_family, a, buf, (socklen_t)len))
		snprintf(buf, len, "(family %d)", sa->sa_family);
	return buf;
}

static bool same_group(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
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
static void map_v4(struct in6_addr *out, const struct in_addr *a)
{
	memset(out, 0, sizeof(*out));
	out->s6_addr[10] = out->s6_addr[11] = 0xff;
	memcpy(&out->s6_addr[12], a, 4);
}

/* ---- opening: interface, MTU, socket options ---- */

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
	uint32_t overhead = (f->fams & FAM_V6) ? UDP6_OVERHEAD : UDP4_OVERHEAD;
	uint32_t max;

	max = f->if_mtu > overhead ? f->if_mtu - overhead : 0;
	if (max > UDP_MAX_PAYLOAD)
		max = UDP_MAX_PAYLOAD;
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

static int setopt(int fd, int level, int name, int val, const char *what)
{
	if (setsockopt(fd, level, name, &val, sizeof(val)) < 0) {
		int err = -errno;

		log_err("fabric udp: setsockopt %s: %s", what, strerror(-err));
		return err;
	}
	return 0;
}

/* As root the buffers may exceed net.core.[rw]mem_max (the *FORCE options);
 * otherwise take what the sysctl allows and say so. */
static int set_buffer(int fd, int force_opt, int opt, int *actual, bool *forced, const char *what)
{
	int val = SOCK_BUF_BYTES;
	socklen_t len = sizeof(*actual);

	*forced = setsockopt(fd, SOL_SOCKET, force_opt, &val, sizeof(val)) == 0;
	if (!*forced && setsockopt(fd, SOL_SOCKET, opt, &val, sizeof(val)) < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, opt, actual, &len) < 0)
		return -errno;
	/* The kernel reports twice the request (half is bookkeeping). */
	if (*actual < SOCK_BUF_BYTES)
		log_warn("fabric udp: %s is %d bytes, below the %d wanted (not root: raise net.core.%s_max); "
			 "large messages may be dropped by the kernel",
			 what, *actual, SOCK_BUF_BYTES, force_opt == SO_RCVBUFFORCE ? "rmem" : "wmem");
	return 0;
}

static int setup_socket(struct pubd_fabric *f, int literal_family)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	int err;

	memset(&ss, 0, sizeof(ss));
	if (literal_family == AF_INET) {
		f->sock_family = AF_INET;
		f->fams = FAM_V4;
	} else if (literal_family == AF_INET6 && f->loopback) {
		log_err("fabric udp: fabric.address %s is on the loopback interface, where Linux does not loop "
			"IPv6 multicast back; use an IPv4 address (127.0.0.1) or another interface",
			f->address);
		return -EADDRNOTAVAIL;
	} else if (literal_family == AF_INET6) {
		f->sock_family = AF_INET6;
		f->fams = FAM_V6;
	} else if (f->loopback) {
		/* Linux does not deliver IPv6 multicast sent on lo back to
		 * lo's listeners (lo has no multicast flag and no mroute); an
		 * IPv6 group there would be joined and silently deaf. */
		f->sock_family = AF_INET;
		f->fams = FAM_V4;
		log_info("fabric udp: %s is the loopback interface: IPv4 groups only", f->ifname);
	} else {
		f->sock_family = AF_INET6;
		f->fams = FAM_BOTH;
	}
	f->fd = socket(f->sock_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
	if (f->fd < 0 && errno == EAFNOSUPPORT && f->fams == FAM_BOTH) {
		/* No IPv6 in this kernel: IPv4 groups only. */
		f->sock_family = AF_INET;
		f->fams = FAM_V4;
		f->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
	}
	if (f->fd < 0) {
		err = -errno;
		log_err("fabric udp: socket: %s", strerror(-err));
		return err;
	}

	err = setopt(f->fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
	if (!err)
		err = setopt(f->fd, SOL_SOCKET, SO_RXQ_OVFL, 1, "SO_RXQ_OVFL");
	if (err)
		return err;
	err = set_buffer(f->fd, SO_RCVBUFFORCE, SO_RCVBUF, &f->rcvbuf, &f->rcvbuf_forced, "SO_RCVBUF");
	if (err) {
		log_err("fabric udp: socket buffers: %s", strerror(-err));
		return err;
	}

	if (f->sock_family == AF_INET6) {
		err = setopt(f->fd, IPPROTO_IPV6, IPV6_V6ONLY, f->fams == FAM_V6, "IPV6_V6ONLY");
		if (!err)
			err = setopt(f->fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, 0, "IPV6_MULTICAST_ALL");
		if (!err)
			err = setopt(f->fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1, "IPV6_RECVPKTINFO");
		if (err)
			return err;
	}
	/* Receive options only: what we send leaves through the send socket,
	 * which carries the multicast send options (setup_send_socket). */
	if (f->fams & FAM_V4) {
		err = setopt(f->fd, IPPROTO_IP, IP_MULTICAST_ALL, 0, "IP_MULTICAST_ALL");
		if (!err)
			err = setopt(f->fd, IPPROTO_IP, IP_PKTINFO, 1, "IP_PKTINFO");
		if (err)
			return err;
	}

	if (f->sock_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = htons(f->port);
		sslen = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		s4->sin_port = htons(f->port);
		sslen = sizeof(*s4);
	}
	if (bind(f->fd, (struct sockaddr *)&ss, sslen) < 0) {
		err = -errno;
		log_err("fabric udp: bind to port %u: %s", f->port, strerror(-err));
		return err;
	}
	return 0;
}

/*
 * The send socket: the receive socket's family and multicast options, on an
 * ephemeral port of its own. Every daemon on a host receives on the one
 * shared group port, so a datagram's source port is what tells the copies
 * the kernel loops back to us from a neighbour's (raw groups have no header
 * to carry a source id).
 */
static int setup_send_socket(struct pubd_fabric *f)
{
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	int err;

	f->sfd = socket(f->sock_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
	if (f->sfd < 0) {
		err = -errno;
		log_err("fabric udp: send socket: %s", strerror(-err));
		return err;
	}
	err = set_buffer(f->sfd, SO_SNDBUFFORCE, SO_SNDBUF, &f->sndbuf, &f->sndbuf_forced, "SO_SNDBUF");
	if (err) {
		log_err("fabric udp: socket buffers: %s", strerror(-err));
		return err;
	}
	if (f->sock_family == AF_INET6) {
		err = setopt(f->sfd, IPPROTO_IPV6, IPV6_V6ONLY, f->fams == FAM_V6, "IPV6_V6ONLY");
		if (!err)
			err = setopt(f->sfd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 1, "IPV6_MULTICAST_LOOP");
		if (!err)
			err = setopt(f->sfd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, DEFAULT_HOPS, "IPV6_MULTICAST_HOPS");
		if (!err)
			err = setopt(f->sfd, IPPROTO_IPV6, IPV6_MULTICAST_IF, (int)f->ifindex, "IPV6_MULTICAST_IF");
		if (err)
			return err;
	}
	if (f->fams & FAM_V4) {
		/* On a dual-stack socket the IPv4 options still apply to the
		 * IPv4 traffic (v4-mapped destinations go out through the IPv4
		 * stack with these settings). */
		struct ip_mreqn mr = {.imr_address = f->if_addr4, .imr_ifindex = (int)f->ifindex};

		err = setopt(f->sfd, IPPROTO_IP, IP_MULTICAST_LOOP, 1, "IP_MULTICAST_LOOP");
		if (!err)
			err = setopt(f->sfd, IPPROTO_IP, IP_MULTICAST_TTL, DEFAULT_HOPS, "IP_MULTICAST_TTL");
		if (err)
			return err;
		if (setsockopt(f->sfd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)) < 0) {
			err = -errno;
			log_err("fabric udp: IP_MULTICAST_IF %s: %s", f->ifname, strerror(-err));
			return err;
		}
	}
	/* Port 0 on the wildcard address: the kernel picks a port no other
	 * socket of this host has, on any address. */
	memset(&ss, 0, sizeof(ss));
	ss.ss_family = (sa_family_t)f->sock_family;
	if (bind(f->sfd, (struct sockaddr *)&ss,
		 f->sock_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) < 0 ||
	    getsockname(f->sfd, (struct sockaddr *)&ss, &sslen) < 0) {
		err = -errno;
		log_err("fabric udp: send socket bind: %s", strerror(-err));
		return err;
	}
	f->sport = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						  : ((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

/* The addresses a datagram we send to a group can carry as its source: the
 * interface's (the multicast interface chooses the source), or none at all:
 * on lo, whose 127.0.0.1 has host scope, Linux sends multicast from
 * 0.0.0.0, which only a local sender can be. */
static int collect_self_addrs(struct pubd_fabric *f)
{
	struct ifaddrs *ifa_list = NULL, *ifa;

	if (getifaddrs(&ifa_list) < 0)
		return -errno;
	static const struct in_addr any4 = {.s_addr = INADDR_ANY};

	f->self_addrs[0] = in6addr_any;
	map_v4(&f->self_addrs[1], &any4);
	f->nself_addrs = 2;
	for (ifa = ifa_list; ifa && f->nself_addrs < MAX_SELF_ADDRS; ifa = ifa->ifa_next) {
		struct in6_addr *a = &f->self_addrs[f->nself_addrs];

		if (!ifa->ifa_addr || strcmp(ifa->ifa_name, f->ifname))
			continue;
		if (ifa->ifa_addr->sa_family == AF_INET) {
			map_v4(a, &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr);
			f->nself_addrs++;
		} else if (ifa->ifa_addr->sa_family == AF_INET6) {
			*a = ((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr;
			f->nself_addrs++;
		}
	}
	freeifaddrs(ifa_list);
	return 0;
}

static void on_socket(void *ctx, uint32_t events);
static void on_send_socket(void *ctx, uint32_t events);
static void on_up_timer(void *ctx, uint64_t now);

static void udp_close(struct pubd_fabric *f);

static int udp_open(struct pubd_fabric **out, const struct pubd_config *cfg, struct pubd_loop *loop,
		    const struct pubd_fabric_events *ev, void *ctx)
{
	struct pubd_fabric *f;
	int literal_family, err, i;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->rx_dirty = RX_BATCH; /* every header needs its first setup */
	f->fd = -1;
	f->sfd = -1;
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
	err = setup_socket(f, literal_family);
	if (!err)
		err = setup_send_socket(f);
	if (!err)
		err = collect_self_addrs(f);
	if (err)
		goto fail;
	err = choose_mtu(f, cfg);
	if (err)
		goto fail;

	f->rxbuf_size = (size_t)f->mtu + 1;
	f->rxbuf = malloc(f->rxbuf_size * RX_BATCH);
	if (!f->rxbuf) {
		err = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < RX_BATCH; i++) {
		f->rx_iov[i].iov_base = f->rxbuf + (size_t)i * f->rxbuf_size;
		f->rx_iov[i].iov_len = f->rxbuf_size;
	}

	f->up_timer = pubd_loop_timer(loop, on_up_timer, f);
	if (!f->up_timer) {
		err = -ENOMEM;
		goto fail;
	}
	f->watch = pubd_loop_watch(loop, f->fd, EPOLLIN, on_socket, f);
	if (!f->watch) {
		err = -errno;
		goto fail;
	}
	f->swatch = pubd_loop_watch(loop, f->sfd, 0, on_send_socket, f);
	if (!f->swatch) {
		err = -errno;
		goto fail;
	}
	log_info("fabric udp: %s on %s (index %u), port %u, socket buffers rcv %d snd %d%s", fam_name(f->fams),
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

/* ---- joins ---- */

static struct slot *get_slot(struct pubd_fabric *f, int slot)
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

static int mcast_op(struct pubd_fabric *f, const struct sockaddr_storage *group, bool join)
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
	unsigned i;
	int err;

	for (i = 0; i < f->nmembers; i++) {
		if (same_group(&f->members[i]->group, group)) {
			f->members[i]->refs++;
			*out = f->members[i];
			return 0;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	v = realloc(f->members, (f->nmembers + 1) * sizeof(*v));
	if (!v) {
		free(m);
		return -ENOMEM;
	}
	f->members = v;
	m->group = *group;
	m->refs = 1;
	m->first_slot = -1;
	err = mcast_op(f, group, true);
	if (err) {
		log_err("fabric udp: join %s on %s: %s%s", addr_str((const struct sockaddr *)group, buf, sizeof(buf)),
			f->ifname, strerror(-err),
			err == -ENOBUFS ? " (too many groups on one socket: raise net.ipv4.igmp_max_memberships "
					  "or net.ipv6.mld_max_msf)"
					: "");
		free(m);
		return err;
	}
	f->members[f->nmembers++] = m;
	*out = m;
	return 0;
}

static void membership_put(struct pubd_fabric *f, struct membership *m)
{
	char buf[INET6_ADDRSTRLEN];
	unsigned i;
	int err;

	if (--m->refs)
		return;
	err = mcast_op(f, &m->group, false);
	if (err)
		log_warn("fabric udp: leave %s on %s: %s", addr_str((struct sockaddr *)&m->group, buf, sizeof(buf)),
			 f->ifname, strerror(-err));
	for (i = 0; i < f->nmembers; i++) {
		if (f->members[i] == m) {
			f->members[i] = f->members[--f->nmembers];
			break;
		}
	}
	free(m);
}

static int udp_listen(struct pubd_fabric *f, int slot, bool on)
{
	struct slot *s = get_slot(f, slot);
	struct membership *m;
	int err;

	if (!s)
		return -EBADSLT;
	if (!s->recv)
		return on ? -EINVAL : 0;
	if (!!s->m == on)
		return 0;
	if (on) {
		err = membership_get(f, &s->group, &s->m);
		if (err)
			return err;
		recompute_first_slot(f, s->m);
		return 0;
	}
	m = s->m;
	s->m = NULL;
	recompute_first_slot(f, m);
	membership_put(f, m);
	return 0;
}

static int udp_join(struct pubd_fabric *f, int slot, const struct sockaddr *addr, socklen_t addrlen,
		    enum pubd_join_mode mode)
{
	struct sockaddr_storage group;
	char buf[INET6_ADDRSTRLEN];
	struct slot *s;
	int err;

	if (slot < 0 || !addr || addrlen > sizeof(group))
		return -EINVAL;
	if ((addr->sa_family == AF_INET && addrlen < sizeof(struct sockaddr_in)) ||
	    (addr->sa_family == AF_INET6 && addrlen < sizeof(struct sockaddr_in6)))
		return -EINVAL;
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	memset(&group, 0, sizeof(group));
	memcpy(&group, addr, addrlen);
	if (group.ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&group;

		s4->sin_port = 0;
		if (!IN_MULTICAST(ntohl(s4->sin_addr.s_addr))) {
			log_err("fabric udp: slot %d: %s is not an IPv4 multicast address", slot,
				addr_str(addr, buf, sizeof(buf)));
			return -EINVAL;
		}
		if (!(f->fams & FAM_V4))
			goto wrong_family;
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&group;

		s6->sin6_port = 0;
		if (!IN6_IS_ADDR_MULTICAST(&s6->sin6_addr)) {
			log_err("fabric udp: slot %d: %s is not an IPv6 multicast address", slot,
				addr_str(addr, buf, sizeof(buf)));
			return -EINVAL;
		}
		if (!(f->fams & FAM_V6))
			goto wrong_family;
	}

	if ((unsigned)slot >= f->nslots) {
		unsigned n = (unsigned)slot + 8;
		struct slot *v = realloc(f->slots, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memset(v + f->nslots, 0, (n - f->nslots) * sizeof(*v));
		f->slots = v;
		f->nslots = n;
	}
	s = &f->slots[slot];
	if (s->used)
		return -EEXIST;

	memset(s, 0, sizeof(*s));
	s->family = group.ss_family;
	if (group.ss_family == AF_INET && f->sock_family == AF_INET6) {
		/* A dual-stack socket sends to IPv4 groups by their v4-mapped address. */
		struct sockaddr_in6 *d = (struct sockaddr_in6 *)&s->dest;
		const struct sockaddr_in *g = (const struct sockaddr_in *)&group;

		d->sin6_family = AF_INET6;
		map_v4(&d->sin6_addr, &g->sin_addr);
		d->sin6_port = htons(f->port);
		s->dest_len = sizeof(*d);
	} else if (group.ss_family == AF_INET) {
		memcpy(&s->dest, &group, sizeof(struct sockaddr_in));
		((struct sockaddr_in *)&s->dest)->sin_port = htons(f->port);
		s->dest_len = sizeof(struct sockaddr_in);
	} else {
		memcpy(&s->dest, &group, sizeof(struct sockaddr_in6));
		((struct sockaddr_in6 *)&s->dest)->sin6_port = htons(f->port);
		s->dest_len = sizeof(struct sockaddr_in6);
	}

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
		  addr_str(addr, buf, sizeof(buf)), f->ifname);
	return 0;

wrong_family:
	log_err("fabric udp: slot %d: group %s is %s but the fabric is %s (fabric.address %s); %s", slot,
		addr_str(addr, buf, sizeof(buf)), group.ss_family == AF_INET ? "IPv4" : "IPv6", fam_name(f->fams),
		f->address ? f->address : "(unset)",
		f->loopback ? "the loopback interface carries IPv4 groups only"
			    : "use a group of the same family, or an interface name as fabric.address");
	return -EAFNOSUPPORT;
}

static void on_up_timer(void *ctx, uint64_t now)
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

static void udp_leave(struct pubd_fabric *f, int slot)
{
	struct slot *s = get_slot(f, slot);
	struct membership *m;

	if (!s)
		return;
	m = s->m;
	s->used = false;
	s->pending_up = false;
	s->m = NULL;
	if (m) {
		recompute_first_slot(f, m);
		membership_put(f, m);
	}
}

/* ---- receive ---- */

static int slot_of(struct pubd_fabric *f, const struct sockaddr_storage *dst)
{
	unsigned i;

	for (i = 0; i < f->nmembers; i++)
		if (same_group(&f->members[i]->group, dst))
			return f->members[i]->first_slot;
	return -1;
}

/* The destination address from the control messages; v4-mapped IPv6
 * becomes IPv4 so it compares with the group as configured. */
static bool parse_cmsgs(struct pubd_fabric *f, struct msghdr *mh, struct sockaddr_storage *dst)
{
	struct cmsghdr *c;
	bool found = false;

	memset(dst, 0, sizeof(*dst));
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			struct sockaddr_in *s4 = (struct sockaddr_in *)dst;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			s4->sin_family = AF_INET;
			s4->sin_addr = pi.ipi_addr;
			found = true;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO && !found) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			if (IN6_IS_ADDR_V4MAPPED(&pi.ipi6_addr)) {
				struct sockaddr_in *s4 = (struct sockaddr_in *)dst;

				s4->sin_family = AF_INET;
				memcpy(&s4->sin_addr, &pi.ipi6_addr.s6_addr[12], 4);
			} else {
				struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)dst;

				s6->sin6_family = AF_INET6;
				s6->sin6_addr = pi.ipi6_addr;
			}
			found = true;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
			uint32_t drops;

			memcpy(&drops, CMSG_DATA(c), sizeof(drops));
			/* Cumulative for the socket: keep the latest. */
			if (drops > f->rx_kernel_drops || f->rx_kernel_drops - drops > (1u << 31))
				f->rx_kernel_drops = drops;
		}
	}
	return found;
}

/* One recvmmsg batch. Returns datagrams read (0 when drained) or -errno. */
/* Sent by us: from sfd's port and one of the interface's addresses (the
 * port is ours alone on this host, whatever the address). */
static bool from_self(const struct pubd_fabric *f, const struct sockaddr_storage *src, socklen_t len)
{
	struct in6_addr a;
	uint16_t port;

	/* The port first: it rules out a neighbour's datagram at once. */
	if (src->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)src;

		port = ntohs(s4->sin_port);
		if (port != f->sport)
			return false;
		map_v4(&a, &s4->sin_addr);
	} else if (src->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)src;

		port = ntohs(s6->sin6_port);
		if (port != f->sport)
			return false;
		a = s6->sin6_addr;
	} else {
		return false;
	}
	for (unsigned k = 0; k < f->nself_addrs; k++)
		if (IN6_ARE_ADDR_EQUAL(&a, &f->self_addrs[k]))
			return true;
	return false;
}

static int rx_batch(struct pubd_fabric *f)
{
	struct sockaddr_storage dst;
	unsigned i, n_out = 0;
	int n;

	/* recvmmsg rewrites only the headers it filled (their control
	 * length and flags): set up just those again, not the whole batch. */
	for (i = 0; i < f->rx_dirty; i++) {
		struct msghdr *mh = &f->rx_msgs[i].msg_hdr;

		memset(mh, 0, sizeof(*mh));
		mh->msg_name = &f->rx_src[i];
		mh->msg_namelen = sizeof(f->rx_src[i]);
		mh->msg_iov = &f->rx_iov[i];
		mh->msg_iovlen = 1;
		mh->msg_control = f->rx_cmsg[i].buf;
		mh->msg_controllen = sizeof(f->rx_cmsg[i].buf);
	}
	n = recvmmsg(f->fd, f->rx_msgs, RX_BATCH, MSG_DONTWAIT, NULL);
	f->rx_dirty = n > 0 ? (unsigned)n : 0;
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return 0;
		return -errno;
	}
	for (i = 0; i < (unsigned)n; i++) {
		struct msghdr *mh = &f->rx_msgs[i].msg_hdr;
		unsigned len = f->rx_msgs[i].msg_len;
		int slot = -1;

		if (parse_cmsgs(f, mh, &dst))
			slot = slot_of(f, &dst);
		if ((mh->msg_flags & MSG_TRUNC) || len > f->mtu) {
			/* Larger than our MTU: a peer with a bigger one. It
			 * cannot be handed up whole; count it. */
			f->rx_truncated++;
			continue;
		}
		if (slot < 0)
			f->rx_unknown++;
		f->rx_dgrams++;
		f->rx_bytes += len;
		f->rx_out[n_out].data = f->rx_iov[i].iov_base;
		f->rx_out[n_out].len = len;
		f->rx_out[n_out].slot = slot;
		f->rx_out[n_out].self = from_self(f, &f->rx_src[i], mh->msg_namelen);
		n_out++;
	}
	if (n_out && f->ev && f->ev->rx)
		f->ev->rx(f->ctx, f->rx_out, n_out);
	return n;
}

static int rx_drain(struct pubd_fabric *f)
{
	int total = 0, n, b;

	for (b = 0; b < RX_BATCHES_PER_WAKEUP; b++) {
		n = rx_batch(f);
		if (n < 0) {
			log_warn("fabric udp: recvmmsg: %s", strerror(-n));
			break;
		}
		total += n;
		if (n < RX_BATCH)
			break;
	}
	return total;
}

static void on_socket(void *ctx, uint32_t events)
{
	struct pubd_fabric *f = ctx;

	if (events & EPOLLERR) {
		int soerr = 0;
		socklen_t len = sizeof(soerr);

		/* Reading SO_ERROR clears it; an unconnected UDP socket rarely has one. */
		if (getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr)
			log_warn("fabric udp: socket error: %s", strerror(soerr));
	}
	if (events & EPOLLIN)
		rx_drain(f);
}

static void on_send_socket(void *ctx, uint32_t events)
{
	struct pubd_fabric *f = ctx;

	if (events & EPOLLERR) {
		int soerr = 0;
		socklen_t len = sizeof(soerr);

		if (getsockopt(f->sfd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr)
			log_warn("fabric udp: send socket error: %s", strerror(soerr));
	}
	if ((events & EPOLLOUT) && f->want_out) {
		f->want_out = false;
		pubd_loop_watch_mod(f->swatch, 0);
		if (f->ev && f->ev->writable)
			f->ev->writable(f->ctx);
	}
}

static int udp_poll(struct pubd_fabric *f)
{
	return rx_drain(f);
}

/* ---- send ---- */

static int udp_send(struct pubd_fabric *f, int slot, const struct pubd_tx_dgram *d, unsigned n)
{
	struct mmsghdr msgs[TX_BATCH];
	struct iovec iov[TX_BATCH][2];
	struct slot *s = get_slot(f, slot);
	unsigned done = 0, i, k;
	int r;

	if (!s)
		return -ENOTCONN;
	for (i = 0; i < n; i++)
		if ((uint64_t)d[i].hdr_len + d[i].payload_len > f->mtu)
			return -EMSGSIZE;

	while (done < n) {
		k = n - done < TX_BATCH ? n - done : TX_BATCH;
		for (i = 0; i < k; i++) {
			const struct pubd_tx_dgram *x = &d[done + i];
			struct msghdr *mh = &msgs[i].msg_hdr;
			unsigned niov = 0;

			memset(mh, 0, sizeof(*mh));
			/* Gather header and payload: the payload is not copied. */
			if (x->hdr_len) {
				iov[i][niov].iov_base = (void *)x->hdr;
				iov[i][niov++].iov_len = x->hdr_len;
			}
			if (x->payload_len) {
				iov[i][niov].iov_base = (void *)x->payload;
				iov[i][niov++].iov_len = x->payload_len;
			}
			mh->msg_name = &s->dest;
			mh->msg_namelen = s->dest_len;
			mh->msg_iov = iov[i];
			mh->msg_iovlen = niov;
		}
		r = sendmmsg(f->sfd, msgs, k, MSG_DONTWAIT);
		if (r < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
				/* Socket buffer full: the rest waits for EPOLLOUT. */
				f->tx_eagain++;
				if (!f->want_out) {
					f->want_out = true;
					pubd_loop_watch_mod(f->swatch, EPOLLOUT);
				}
				return (int)done;
			}
			f->tx_errors++;
			/* Report what went out; the error repeats on the next call. */
			if (done)
				return (int)done;
			return -err;
		}
		for (i = 0; i < (unsigned)r; i++) {
			f->tx_dgrams++;
			f->tx_bytes += d[done + i].hdr_len + d[done + i].payload_len;
		}
		done += (unsigned)r;
	}
	return (int)done;
}

static uint32_t udp_mtu(const struct pubd_fabric *f)
{
	return f->mtu;
}

/* ---- status ---- */

static void row(struct pub_table_builder *tb, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void row(struct pub_table_builder *tb, const char *key, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pub_table_str(tb, key);
	pub_table_str(tb, buf);
}

static void udp_status(const struct pubd_fabric *f, struct pub_table_builder *tb)
{
	row(tb, "fabric", "udp");
	row(tb, "interface", "%s (index %u, MTU %" PRIu32 ")", f->ifname, f->ifindex, f->if_mtu);
	row(tb, "address", "%s", f->address ? f->address : "(unset: loopback)");
	row(tb, "family", "%s", fam_name(f->fams));
	row(tb, "port", "%u", f->port);
	row(tb, "mtu", "%" PRIu32, f->mtu);
	row(tb, "socket buffers", "rcv %d snd %d%s", f->rcvbuf, f->sndbuf,
	    f->rcvbuf_forced && f->sndbuf_forced ? " (forced)" : "");
	row(tb, "multicast groups joined", "%u", f->nmembers);
	row(tb, "datagrams sent", "%" PRIu64, f->tx_dgrams);
	row(tb, "bytes sent", "%" PRIu64, f->tx_bytes);
	row(tb, "send would-block", "%" PRIu64, f->tx_eagain);
	row(tb, "send errors", "%" PRIu64, f->tx_errors);
	row(tb, "datagrams received", "%" PRIu64, f->rx_dgrams);
	row(tb, "bytes received", "%" PRIu64, f->rx_bytes);
	row(tb, "kernel receive drops", "%" PRIu32, f->rx_kernel_drops);
	row(tb, "oversize datagrams dropped", "%" PRIu64, f->rx_truncated);
	row(tb, "datagrams for unknown groups", "%" PRIu64, f->rx_unknown);
}

/* ---- close ---- */

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
	/* Leave explicitly: closing the socket would too, but a leave that
	 * fails is worth a log line. */
	for (i = 0; i < f->nmembers; i++) {
		char buf[INET6_ADDRSTRLEN];
		int err = f->fd >= 0 ? mcast_op(f, &f->members[i]->group, false) : 0;

		if (err)
			log_warn("fabric udp: leave %s on %s: %s",
				 addr_str((struct sockaddr *)&f->members[i]->group, buf, sizeof(buf)), f->ifname,
				 strerror(-err));
		free(f->members[i]);
	}
	free(f->members);
	f->members = NULL;
	f->nmembers = 0;
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

const struct pubd_fabric_ops pubd_fabric_udp_ops = {
	.name = "udp",
	.open = udp_open,
	.close = udp_close,
	.join = udp_join,
	.leave = udp_leave,
	.listen = udp_listen,
	.send = udp_send,
	.mtu = udp_mtu,
	.status = udp_status,
	.poll = udp_poll,
};
