/* SPDX-License-Identifier: MIT */
/*
 * peer_zmq: the peer client on ZeroMQ's multicast transports, epgm://
 * (OpenPGM over UDP) and norm:// (NORM), as Debian's libzmq5 builds them.
 * Channels are whole endpoints: "epgm://eth0;239.1.2.3:5555",
 * "norm://eth0;239.1.2.3:5555".
 *
 * Sending: an XPUB socket with ZMQ_XPUB_NODROP, so a full pipe answers
 * EAGAIN and the sender waits for room (zmq_poll POLLOUT), as pubd pushes a
 * publisher back, instead of PUB's silent drop at the high-water mark.
 * Receiving: a SUB socket subscribed to everything.
 *
 * PGM sends at a fixed rate, ZMQ_RATE (kbit/s, default 100 there): it is
 * $PEER_PGM_RATE_KBIT here (default 1000000, 1 Gbit/s), with a recovery
 * window of $PEER_PGM_RECOVERY_MS (default 2000). NORM runs its own
 * congestion control (libzmq turns it on). Both keep their other defaults.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "peer.h"

struct peer {
	void *ctx, *tx, *rx;
	zmq_msg_t msg;
	const char *name;
};

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

const char *peer_transport_name(const struct peer_args *a)
{
	const char *ch = a->tx ? a->tx : a->rx ? a->rx : "";

	if (!strncmp(ch, "epgm://", 7))
		return "zmq-epgm";
	if (!strncmp(ch, "pgm://", 6))
		return "zmq-pgm";
	if (!strncmp(ch, "norm://", 7))
		return "zmq-norm";
	return "zmq";
}

static int set_common(void *s, size_t max_size)
{
	int rate = env_int("PEER_PGM_RATE_KBIT", 1000000), ivl = env_int("PEER_PGM_RECOVERY_MS", 2000);
	int hwm = 0, linger = -1, buf = 4 << 20;

	(void)max_size;
	if (zmq_setsockopt(s, ZMQ_RATE, &rate, sizeof(rate)) ||
	    zmq_setsockopt(s, ZMQ_RECOVERY_IVL, &ivl, sizeof(ivl)) ||
	    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger)) ||
	    zmq_setsockopt(s, ZMQ_SNDBUF, &buf, sizeof(buf)) || zmq_setsockopt(s, ZMQ_RCVBUF, &buf, sizeof(buf)))
		return -1;
	/* 0: no high-water mark. The sender's is set by the caller (a bound is what pushes back). */
	return zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof(hwm));
}

static void *open_tx(struct peer *p, const struct peer_args *a)
{
	void *s = zmq_socket(p->ctx, ZMQ_XPUB);
	int one = 1, hwm = 1000;

	if (!s || set_common(s, a->max_size) || zmq_setsockopt(s, ZMQ_XPUB_NODROP, &one, sizeof(one)) ||
	    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof(hwm)) || zmq_connect(s, a->tx)) {
		fprintf(stderr, "peer_zmq: sender on %s: %s\n", a->tx, zmq_strerror(errno));
		return NULL;
	}
	return s;
}

static void *open_rx(struct peer *p, const struct peer_args *a)
{
	void *s = zmq_socket(p->ctx, ZMQ_SUB);

	if (!s || set_common(s, a->max_size) || zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0) || zmq_connect(s, a->rx)) {
		fprintf(stderr, "peer_zmq: receiver on %s: %s\n", a->rx, zmq_strerror(errno));
		return NULL;
	}
	return s;
}

struct peer *peer_open(const struct peer_args *a)
{
	struct peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->ctx = zmq_ctx_new();
	zmq_msg_init(&p->msg);
	if (!p->ctx || (a->tx && !(p->tx = open_tx(p, a))) || (a->rx && !(p->rx = open_rx(p, a)))) {
		peer_close(p, 0);
		return NULL;
	}
	return p;
}

int peer_send(struct peer *p, const void *data, size_t len)
{
	zmq_pollitem_t it = {.socket = p->tx, .events = ZMQ_POLLOUT};

	while (zmq_send(p->tx, data, len, ZMQ_DONTWAIT) < 0) {
		if (errno != EAGAIN && errno != EINTR) {
			fprintf(stderr, "peer_zmq: send: %s\n", zmq_strerror(errno));
			return -1;
		}
		zmq_poll(&it, 1, 100);
	}
	return 0;
}

int peer_poll(struct peer *p, peer_msg_fn on_msg, void *arg, int timeout_ms)
{
	zmq_pollitem_t it = {.socket = p->rx, .events = ZMQ_POLLIN};
	int n = 0, r;

	r = zmq_poll(&it, 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -1;
	while (n < 64 && zmq_msg_recv(&p->msg, p->rx, ZMQ_DONTWAIT) >= 0) {
		on_msg(zmq_msg_data(&p->msg), zmq_msg_size(&p->msg), arg);
		n++;
	}
	return n;
}

void peer_close(struct peer *p, int timeout_ms)
{
	int linger = timeout_ms;

	if (p->tx) {
		zmq_setsockopt(p->tx, ZMQ_LINGER, &linger, sizeof(linger));
		zmq_close(p->tx);
	}
	if (p->rx) {
		linger = 0;
		zmq_setsockopt(p->rx, ZMQ_LINGER, &linger, sizeof(linger));
		zmq_close(p->rx);
	}
	zmq_msg_close(&p->msg);
	if (p->ctx)
		zmq_ctx_term(p->ctx);
	free(p);
}
