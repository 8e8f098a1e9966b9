// SPDX-License-Identifier: MIT
/*
 * Framing: the receive buffer frames are read into, and output to pubd.
 *
 * A message returned by pub_recv() points into the receive buffer, so the
 * buffer is not moved while the caller holds a message (see rx_room).
 * Output goes straight from the caller's memory with sendmsg; what the
 * socket does not take, and whole frames PUB_MORE holds back, wait in wbuf.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/* Forget a buffer the caller may still point into: keep it alive until its next pub_recv. */
void rx_detach(struct pub_client *c)
{
	free(c->held_buf);
	c->held_buf = c->rbuf;
	c->rbuf = NULL;
	c->rpos = c->rlen = c->rcap = 0;
	c->holding = false;
}

/* Make room to read: the frame at rpos must fit, and there must be free tail. */
static int rx_room(struct pub_client *c, size_t need)
{
	size_t have = c->rlen - c->rpos, cap;
	uint8_t *p;

	if (need < have + 1)
		need = have + 1;
	if (c->rcap - c->rpos >= need && c->rlen < c->rcap)
		return 0;
	cap = need > RBUF_MIN ? need : RBUF_MIN;
	if (c->holding) {
		/* The caller's message lies before rpos: move to a new buffer, keep the old one. */
		if (cap < c->rcap)
			cap = c->rcap;
		p = malloc(cap);
		if (!p)
			return -ENOMEM;
		memcpy(p, c->rbuf + c->rpos, have);
		rx_detach(c);
		c->rbuf = p;
		c->rcap = cap;
		c->rlen = have;
		return 0;
	}
	if (c->rpos) {
		memmove(c->rbuf, c->rbuf + c->rpos, have);
		c->rlen = have;
		c->rpos = 0;
	}
	if (c->rcap >= need && c->rlen < c->rcap)
		return 0;
	p = realloc(c->rbuf, cap);
	if (!p)
		return -ENOMEM;
	c->rbuf = p;
	c->rcap = cap;
	return 0;
}

/* Read what the socket has: >0 bytes, -EAGAIN, -ECONNRESET at EOF, or -errno. */
/* recv() that also takes the fds pubd sends with a frame (SCM_RIGHTS: only
 * its SHM frames have any, at the handshake and with a group log). Others
 * are closed at once. */
static ssize_t recv_with_fds(struct pub_client *c)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	struct iovec iov = {.iov_base = c->rbuf + c->rlen, .iov_len = c->rcap - c->rlen};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	ssize_t n = recvmsg(c->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	unsigned i, k;
	int fd;

	if (n <= 0 || !mh.msg_controllen)
		return n;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->want_shm && c->nrx_fds < 8)
				c->rx_fds[c->nrx_fds++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

int rx_read(struct pub_client *c)
{
	size_t need = PUB_PROTO_HDR_LEN;
	uint8_t type;
	uint32_t len;
	const uint8_t *body;
	ssize_t n;
	int r;

	if (c->rpos == c->rlen && !c->holding)
		c->rpos = c->rlen = 0;
	if (c->rbuf) {
		r = pub_proto_frame_peek(c->rbuf + c->rpos, c->rlen - c->rpos, c->max_body, &type, &len, &body, &need);
		if (r < 0)
			return -PUB_EPROTO;
	}
	r = rx_room(c, need);
	if (r < 0)
		return r;
	do {
		n = recv_with_fds(c);
	} while (n < 0 && errno == EINTR);
	if (n > 0) {
		c->rlen += (size_t)n;
		return (int)(n > 0x7fffffff ? 0x7fffffff : n);
	}
	if (n == 0)
		return -ECONNRESET;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/* Write out pending output. deadline 0: only what fits now (-EAGAIN otherwise). */
int tx_flush(struct pub_client *c, uint64_t deadline)
{
	while (c->wpos < c->wlen) {
		ssize_t n = send(c->sock, c->wbuf + c->wpos, c->wlen - c->wpos, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			c->wpos += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (!deadline || now_ns() >= deadline)
			return deadline ? -ETIMEDOUT : -EAGAIN;
		struct pollfd p = {.fd = c->sock, .events = POLLOUT};
		if (poll(&p, 1, ms_until(deadline)) < 0 && errno != EINTR)
			return -errno;
	}
	c->wpos = c->wlen = 0;
	c->more_held = 0;
	return 0;
}

/* Room for `extra` more bytes of output after those waiting, which move to
 * the front; the buffer grows to at least min_cap when it must grow. */
int wbuf_room(struct pub_client *c, size_t extra, size_t min_cap)
{
	size_t need;

	if (c->wpos) {
		memmove(c->wbuf, c->wbuf + c->wpos, c->wlen - c->wpos);
		c->wlen -= c->wpos;
		c->wpos = 0;
	}
	need = c->wlen + extra;
	if (need > c->wcap) {
		size_t cap = need < min_cap ? min_cap : need;
		uint8_t *p = realloc(c->wbuf, cap);

		if (!p)
			return -ENOMEM;
		c->wbuf = p;
		c->wcap = cap;
	}
	return 0;
}

/* Keep the unwritten rest of a frame [iov from `done`] so the stream stays whole. */
static int tx_keep(struct pub_client *c, const struct iovec *iov, int iovcnt, size_t done)
{
	size_t total = 0, off = 0;
	int r;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	c->wpos = 0;
	c->wlen = 0;
	r = wbuf_room(c, total - done, 0);
	if (r < 0)
		return r;
	for (int i = 0; i < iovcnt; i++) {
		const uint8_t *base = iov[i].iov_base;
		size_t len = iov[i].iov_len;

		if (off + len <= done) {
			off += len;
			continue;
		}
		size_t skip = done > off ? done - off : 0;
		memcpy(c->wbuf + c->wlen, base + skip, len - skip);
		c->wlen += len - skip;
		off += len;
	}
	return 0;
}

/*
 * Send one frame (head + payload) straight from the caller's memory with
 * sendmsg (MSG_NOSIGNAL: a dead pubd must not kill the application).
 * deadline 0: non-blocking: -EAGAIN if the socket took nothing; a partial
 * write keeps the rest in wbuf and counts as sent. Otherwise wait for room
 * until the deadline; on -ETIMEDOUT after a partial write the rest is kept
 * too. *partial tells whether any byte went out (the frame is then pubd's).
 * Pending output must have been flushed first.
 */
int tx_frame(struct pub_client *c, const void *head, size_t hlen, const void *data, size_t dlen, uint64_t deadline,
	     bool *partial)
{
	struct iovec iov[2] = {{(void *)head, hlen}, {(void *)data, dlen}};
	size_t total = hlen + dlen, done = 0;

	*partial = false;
	while (done < total) {
		struct iovec v[2];
		struct msghdr msg = {.msg_iov = v};
		size_t skip = done;
		ssize_t n;

		for (int i = 0; i < 2; i++) {
			if (skip >= iov[i].iov_len) {
				skip -= iov[i].iov_len;
				continue;
			}
			v[msg.msg_iovlen].iov_base = (uint8_t *)iov[i].iov_base + skip;
			v[msg.msg_iovlen].iov_len = iov[i].iov_len - skip;
			msg.msg_iovlen++;
			skip = 0;
		}
		n = sendmsg(c->sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			done += (size_t)n;
			*partial = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (!deadline || now_ns() >= deadline) {
			if (!done)
				return deadline ? -ETIMEDOUT : -EAGAIN;
			int r = tx_keep(c, iov, 2, done);
			if (r < 0)
				return r;
			return deadline ? -ETIMEDOUT : 0;
		}
		struct pollfd p = {.fd = c->sock, .events = POLLOUT};
		if (poll(&p, 1, ms_until(deadline)) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}
