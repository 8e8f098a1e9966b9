/* SPDX-License-Identifier: MIT */
/*
 * The udp fabric's two sockets: the receive socket, bound to the group port
 * every daemon on the host shares, and the send socket, on a port of its own
 * that tells our datagrams apart; their buffers and multicast options.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "udp_internal.h"
#include "log.h"

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

/* Which families the socket carries, from fabric.address and the interface. */
static int choose_family(struct pubd_fabric *f, int literal_family)
{
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
	return 0;
}

/* The receive socket's options: shared port, drop count, buffer, and
 * the destination address of each datagram. */
static int set_receive_options(struct pubd_fabric *f)
{
	int err;

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
	 * which carries the multicast send options (udp_setup_send_socket). */
	if (f->fams & FAM_V4) {
		err = setopt(f->fd, IPPROTO_IP, IP_MULTICAST_ALL, 0, "IP_MULTICAST_ALL");
		if (!err)
			err = setopt(f->fd, IPPROTO_IP, IP_PKTINFO, 1, "IP_PKTINFO");
		if (err)
			return err;
	}
	return 0;
}

/* The wildcard address on the group port every daemon shares. */
static int bind_group_port(struct pubd_fabric *f)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	int err;

	memset(&ss, 0, sizeof(ss));
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

/* The receive socket, f->fd. */
int udp_setup_socket(struct pubd_fabric *f, int literal_family)
{
	int err;

	err = choose_family(f, literal_family);
	if (err)
		return err;
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
	err = set_receive_options(f);
	if (err)
		return err;
	return bind_group_port(f);
}

/*
 * The send socket: the receive socket's family and multicast options, on an
 * ephemeral port of its own. Every daemon on a host receives on the one
 * shared group port, so a datagram's source port is what tells the copies
 * the kernel loops back to us from a neighbour's (raw groups have no header
 * to carry a source id).
 */
int udp_setup_send_socket(struct pubd_fabric *f)
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
	/* Unicast arrives here too (loss repair: a burst of repairs for a
	 * large message): as deep as the group socket's receive buffer. */
	if (!err) {
		int rcv;
		bool forced;

		err = set_buffer(f->sfd, SO_RCVBUFFORCE, SO_RCVBUF, &rcv, &forced, "SO_RCVBUF (send socket)");
	}
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
