/* SPDX-License-Identifier: MIT */
/*
 * Sending on the udp fabric: sendmmsg batches gathered from header and
 * payload; a full socket buffer waits for EPOLLOUT on the send socket.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "udp_internal.h"
#include "log.h"
#include "loop.h"

void udp_on_send_socket(void *ctx, uint32_t events)
{
	struct pubd_fabric *f = ctx;

	if (events & EPOLLERR) {
		int soerr = 0;
		socklen_t len = sizeof(soerr);

		if (getsockopt(f->sfd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr)
			log_warn("fabric udp: send socket error: %s", strerror(soerr));
	}
	if (events & EPOLLIN)
		udp_drain_send_socket(f);
	if ((events & EPOLLOUT) && f->want_out) {
		f->want_out = false;
		pubd_loop_watch_mod(f->swatch, EPOLLIN);
		if (f->ev && f->ev->writable)
			f->ev->writable(f->ctx);
	}
}

/*
 * Segmentation offload (UDP_SEGMENT, Linux 4.18): a run of datagrams of
 * one size (the last may be shorter), as a message's fragments are, goes
 * to the kernel as one send of their concatenation, cut into datagrams of
 * that size at the end of the path (or by the NIC). The stack, the veth,
 * the bridge and netfilter then see one packet where they saw up to 64:
 * most of what a large message costs on this fabric. Each datagram keeps
 * its own header: the iovec is header, payload, header, payload...
 */
#define GSO_MAX_SEGS  64u    /* the kernel's UDP_MAX_SEGMENTS */
#define GSO_MAX_BYTES 65000u /* below the largest UDP payload, headers aside */

/* How many datagrams from d[0] (of n) make one segmented send: 1 when
 * they are not a run worth it. */
static unsigned gso_run(const struct pubd_fabric *f, const struct pubd_tx_dgram *d, unsigned n)
{
	uint32_t size = d[0].hdr_len + d[0].payload_len, total = size, len;
	unsigned k;

	if (f->gso_off)
		return 1;
	for (k = 1; k < n && k < GSO_MAX_SEGS; k++) {
		len = d[k].hdr_len + d[k].payload_len;
		if (len > size || total + len > GSO_MAX_BYTES)
			break;
		total += len;
		if (len < size) {
			k++; /* a shorter one ends the run */
			break;
		}
	}
	return k;
}

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

struct tx_msgs {
	struct mmsghdr msgs[TX_BATCH];
	unsigned dgrams[TX_BATCH]; /* datagrams each message carries */
	struct iovec iov[2 * TX_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl[TX_BATCH];
};

/* Messages for d[0..n) (at most TX_BATCH datagrams): returns how many. */
static unsigned build(struct pubd_fabric *f, struct tx_msgs *m, const struct sockaddr_storage *dest, socklen_t dest_len,
		      const struct pubd_tx_dgram *d, unsigned n)
{
	unsigned nmsg = 0, niov = 0, i = 0, k, j;

	while (i < n) {
		struct msghdr *mh = &m->msgs[nmsg].msg_hdr;

		k = gso_run(f, d + i, n - i);
		memset(mh, 0, sizeof(*mh));
		mh->msg_name = (void *)dest;
		mh->msg_namelen = dest_len;
		mh->msg_iov = &m->iov[niov];
		/* Gather headers and payloads: the payload is not copied. */
		for (j = i; j < i + k; j++) {
			if (d[j].hdr_len)
				m->iov[niov++] = (struct iovec){(void *)d[j].hdr, d[j].hdr_len};
			if (d[j].payload_len)
				m->iov[niov++] = (struct iovec){(void *)d[j].payload, d[j].payload_len};
		}
		mh->msg_iovlen = (size_t)(&m->iov[niov] - mh->msg_iov);
		if (k > 1) {
			struct cmsghdr *cm;
			uint16_t seg = (uint16_t)(d[i].hdr_len + d[i].payload_len);

			mh->msg_control = m->ctl[nmsg].buf;
			mh->msg_controllen = sizeof(m->ctl[nmsg].buf);
			cm = CMSG_FIRSTHDR(mh);
			cm->cmsg_level = SOL_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(seg));
			memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
		}
		m->dgrams[nmsg++] = k;
		i += k;
	}
	return nmsg;
}

/* Socket buffer full: the rest waits for EPOLLOUT. */
static void out_of_credits(struct pubd_fabric *f)
{
	f->cnt[PUBD_FC_TX_NO_CREDITS]++;
	if (!f->want_out) {
		f->want_out = true;
		pubd_loop_watch_mod(f->swatch, EPOLLIN | EPOLLOUT);
	}
}

/*
 * send_batch for one datagram: a message sent as it is published, one a
 * wakeup, goes alone, and the batch's gathering (the segmentation check,
 * the message array, its counting) cost more than the send's own setup.
 * The same outcomes: 1, 0 out of credits, or -errno.
 */
static int send_one(struct pubd_fabric *f, const struct sockaddr_storage *dest, socklen_t dest_len,
		    const struct pubd_tx_dgram *d)
{
	uint64_t len = (uint64_t)d->hdr_len + d->payload_len;
	struct iovec iov[2];
	struct msghdr mh = {.msg_name = (void *)dest, .msg_namelen = dest_len, .msg_iov = iov};
	int err;

	if (len > f->mtu)
		return -EMSGSIZE;
	if (d->hdr_len)
		iov[mh.msg_iovlen++] = (struct iovec){(void *)d->hdr, d->hdr_len};
	if (d->payload_len)
		iov[mh.msg_iovlen++] = (struct iovec){(void *)d->payload, d->payload_len};
	while (sendmsg(f->sfd, &mh, MSG_DONTWAIT) < 0) {
		err = errno;
		if (err == EINTR)
			continue;
		if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
			out_of_credits(f);
			return 0;
		}
		f->cnt[PUBD_FC_TX_POST_ERRORS]++;
		if (err == EMSGSIZE)
			udp_link_refresh(f); /* the engine sees the new MTU (link.c) */
		return -err;
	}
	f->cnt[PUBD_FC_TX_DATAGRAMS]++;
	f->cnt[PUBD_FC_TX_BYTES] += len;
	return 1;
}

/* Send d[0..n) to dest from the send socket: how many went, or -errno. */
static int send_batch(struct pubd_fabric *f, const struct sockaddr_storage *dest, socklen_t dest_len,
		      const struct pubd_tx_dgram *d, unsigned n)
{
	struct tx_msgs m;
	unsigned done = 0, i, k, nmsg, sent;
	int r;

	if (n == 1)
		return send_one(f, dest, dest_len, d);
	for (i = 0; i < n; i++)
		if ((uint64_t)d[i].hdr_len + d[i].payload_len > f->mtu)
			return -EMSGSIZE;

	while (done < n) {
		k = n - done < TX_BATCH ? n - done : TX_BATCH;
		nmsg = build(f, &m, dest, dest_len, d + done, k);
		r = sendmmsg(f->sfd, m.msgs, nmsg, MSG_DONTWAIT);
		if (r < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
				out_of_credits(f);
				return (int)done;
			}
			if (m.dgrams[0] > 1 &&
			    (err == EIO || err == EINVAL || err == EOPNOTSUPP || err == ENOPROTOOPT)) {
				/* The kernel or the device takes no segmented sends:
				 * one datagram a send from now on. */
				log_warn("fabric udp: segmentation offload refused (%s); sending datagram by datagram",
					 strerror(err));
				f->gso_off = true;
				continue;
			}
			f->cnt[PUBD_FC_TX_POST_ERRORS]++;
			if (err == EMSGSIZE)
				udp_link_refresh(f); /* the engine sees the new MTU (link.c) */
			/* Report what went out; the error repeats on the next call. */
			if (done)
				return (int)done;
			return -err;
		}
		for (sent = 0, i = 0; i < (unsigned)r; i++) {
			sent += m.dgrams[i];
			if (m.dgrams[i] > 1) {
				f->gso_sends++;
				f->gso_datagrams += m.dgrams[i];
			}
		}
		for (i = 0; i < sent; i++) {
			f->cnt[PUBD_FC_TX_DATAGRAMS]++;
			f->cnt[PUBD_FC_TX_BYTES] += d[done + i].hdr_len + d[done + i].payload_len;
		}
		done += sent;
	}
	return (int)done;
}

int udp_send(struct pubd_fabric *f, int slot, const struct pubd_tx_dgram *d, unsigned n)
{
	struct slot *s = udp_get_slot(f, slot);

	if (!s)
		return -ENOTCONN;
	return send_batch(f, &s->dest, s->dest_len, d, n);
}

uint32_t udp_peer_host(const void *peer, uint32_t peer_len, uint8_t *out)
{
	struct sockaddr_in6 a6;
	struct sockaddr_in a4;

	if (peer_len == sizeof(a4)) {
		memcpy(&a4, peer, sizeof(a4));
		if (a4.sin_family != AF_INET)
			return 0;
		memcpy(out, &a4.sin_addr, sizeof(a4.sin_addr));
		return sizeof(a4.sin_addr);
	}
	if (peer_len == sizeof(a6)) {
		memcpy(&a6, peer, sizeof(a6));
		if (a6.sin6_family != AF_INET6)
			return 0;
		memcpy(out, &a6.sin6_addr, sizeof(a6.sin6_addr));
		return sizeof(a6.sin6_addr);
	}
	return 0;
}

/* Unicast to a peer as the receive path gave it (the sender's address). */
int udp_send_to(struct pubd_fabric *f, const void *peer, uint32_t peer_len, const struct pubd_tx_dgram *d, unsigned n)
{
	struct sockaddr_storage dest;
	socklen_t len;

	if (peer_len < sizeof(sa_family_t) || peer_len > sizeof(dest))
		return -EINVAL;
	memset(&dest, 0, sizeof(dest));
	memcpy(&dest, peer, peer_len);
	if (dest.ss_family == AF_INET)
		len = sizeof(struct sockaddr_in);
	else if (dest.ss_family == AF_INET6)
		len = sizeof(struct sockaddr_in6);
	else
		return -EAFNOSUPPORT;
	if (peer_len < len)
		return -EINVAL;
	return send_batch(f, &dest, len, d, n);
}
