/* SPDX-License-Identifier: MIT */
/*
 * Sending on the udp fabric: sendmmsg batches gathered from header and
 * payload; a full socket buffer waits for EPOLLOUT on the send socket.
 */
#include <errno.h>
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

/* Send d[0..n) to dest from the send socket: how many went, or -errno. */
static int send_batch(struct pubd_fabric *f, const struct sockaddr_storage *dest, socklen_t dest_len,
		      const struct pubd_tx_dgram *d, unsigned n)
{
	struct mmsghdr msgs[TX_BATCH];
	struct iovec iov[TX_BATCH][2];
	unsigned done = 0, i, k;
	int r;

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
			mh->msg_name = (void *)dest;
			mh->msg_namelen = dest_len;
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
				f->cnt[PUBD_FC_TX_NO_CREDITS]++;
				if (!f->want_out) {
					f->want_out = true;
					pubd_loop_watch_mod(f->swatch, EPOLLIN | EPOLLOUT);
				}
				return (int)done;
			}
			f->cnt[PUBD_FC_TX_POST_ERRORS]++;
			/* Report what went out; the error repeats on the next call. */
			if (done)
				return (int)done;
			return -err;
		}
		for (i = 0; i < (unsigned)r; i++) {
			f->cnt[PUBD_FC_TX_DATAGRAMS]++;
			f->cnt[PUBD_FC_TX_BYTES] += d[done + i].hdr_len + d[done + i].payload_len;
		}
		done += (unsigned)r;
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
