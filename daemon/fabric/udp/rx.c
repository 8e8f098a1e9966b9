/* SPDX-License-Identifier: MIT */
/*
 * Receiving on the udp fabric: recvmmsg batches, each datagram's group from
 * its destination address (IP_PKTINFO) and whether we sent it from its
 * source; the kernel's drop count (SO_RXQ_OVFL).
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "udp_internal.h"
#include "log.h"

/* The last address hit first: a stream's datagrams hit it every time, for
 * fewer instructions than the index's hash (issue 12 counts them). */
static int slot_of(struct pubd_fabric *f, const struct sockaddr_storage *dst)
{
	struct membership *m = f->rx_last_member;

	if (!m || !udp_same_group(&m->group, dst)) {
		m = udp_member_ix_find(&f->members_ix, dst);
		if (!m)
			return -1;
		f->rx_last_member = m;
	}
	return m->first_slot;
}

/* The destination address from the control messages; v4-mapped IPv6
 * becomes IPv4 so it compares with the group as configured. Only the
 * family and the address are set: all udp_same_group compares (the rest
 * of the 128 bytes, cleared, cost 20 instructions a datagram). */
static bool parse_cmsgs(struct pubd_fabric *f, struct msghdr *mh, struct sockaddr_storage *dst)
{
	struct cmsghdr *c;
	bool found = false;

	dst->ss_family = AF_UNSPEC;
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
			if (drops > f->rx_kernel_drops || f->rx_kernel_drops - drops > (1u << 31)) {
				f->rx_kernel_drops_total += (uint32_t)(drops - f->rx_kernel_drops);
				f->rx_kernel_drops = drops;
			}
		}
	}
	return found;
}

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
		udp_map_v4(&a, &s4->sin_addr);
	} else if (src->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)src;

		port = ntohs(s6->sin6_port);
		if (port != f->sport)
			return false;
		a = s6->sin6_addr;
	} else {
		return false;
	}
	return udp_is_self_addr(f, &a);
}

/* One recvmmsg batch from fd (the group socket, or the send socket that
 * unicast arrives on). Returns datagrams read (0 when drained) or -errno. */
static int rx_batch(struct pubd_fabric *f, int fd)
{
	struct sockaddr_storage dst;
	unsigned i, n_out = 0;
	int n;

	/* recvmmsg writes back, in the headers it filled, only the lengths
	 * of the address and the control data and the flags: reset those. */
	for (i = 0; i < f->rx_dirty; i++) {
		struct msghdr *mh = &f->rx_msgs[i].msg_hdr;

		mh->msg_namelen = sizeof(f->rx_src[i]);
		mh->msg_controllen = sizeof(f->rx_cmsg[i].buf);
		mh->msg_flags = 0;
	}
	n = recvmmsg(fd, f->rx_msgs, RX_BATCH, MSG_DONTWAIT, NULL);
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
			f->cnt[PUBD_FC_RX_TRUNCATED]++;
			continue;
		}
		if (slot < 0 && fd == f->fd)
			f->cnt[PUBD_FC_RX_UNKNOWN_GROUP]++;
		f->cnt[PUBD_FC_RX_DATAGRAMS]++;
		f->cnt[PUBD_FC_RX_BYTES] += len;
		f->rx_out[n_out].data = f->rx_iov[i].iov_base;
		f->rx_out[n_out].len = len;
		f->rx_out[n_out].slot = slot;
		f->rx_out[n_out].self = from_self(f, &f->rx_src[i], mh->msg_namelen);
		f->rx_out[n_out].from = &f->rx_src[i];
		f->rx_out[n_out].from_len = mh->msg_namelen <= PUBD_FABRIC_PEER_MAX ? mh->msg_namelen : 0;
		f->rx_out[n_out].kernel_drops = f->rx_kernel_drops_total;
		n_out++;
	}
	if (n_out && f->ev && f->ev->rx)
		f->ev->rx(f->ctx, f->rx_out, n_out);
	return n;
}

static int rx_drain_fd(struct pubd_fabric *f, int fd)
{
	int total = 0, n, b;

	for (b = 0; b < RX_BATCHES_PER_WAKEUP; b++) {
		n = rx_batch(f, fd);
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

static int rx_drain(struct pubd_fabric *f)
{
	return rx_drain_fd(f, f->fd);
}

void udp_drain_send_socket(struct pubd_fabric *f)
{
	rx_drain_fd(f, f->sfd);
}

void udp_on_socket(void *ctx, uint32_t events)
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

int udp_poll(struct pubd_fabric *f)
{
	return rx_drain(f);
}
