/* SPDX-License-Identifier: MIT */
/*
 * peer_pubd: the peer client on libpub, as bench_tput and bench_lat use it
 * (a connection with PUB_OPT_NO_RECONNECT, pub_publish without flags,
 * pub_recv). Channels are group names; --socket is the daemon's.
 */
#include <stdio.h>
#include <stdlib.h>

#include <pub.h>

#include "peer.h"

struct peer {
	pub_client_t *c;
	const char *tx;
};

const char *peer_transport_name(const struct peer_args *a)
{
	(void)a;
	return "pubd";
}

struct peer *peer_open(const struct peer_args *a)
{
	struct pub_options o = PUB_OPTIONS_INIT;
	struct peer *p = calloc(1, sizeof(*p));

	if (!p || !a->socket) {
		fprintf(stderr, "peer_pubd: needs --socket\n");
		free(p);
		return NULL;
	}
	o.client_name = "peer-bench";
	o.connect_timeout_ms = 10000;
	o.flags = PUB_OPT_NO_RECONNECT;
	if (pub_connect(&p->c, a->socket, &o) < 0) {
		fprintf(stderr, "peer_pubd: connect %s: %s\n", a->socket, pub_errmsg(NULL));
		free(p);
		return NULL;
	}
	if (a->rx && pub_subscribe(p->c, a->rx) < 0) {
		fprintf(stderr, "peer_pubd: subscribe %s: %s\n", a->rx, pub_errmsg(p->c));
		pub_close(p->c);
		free(p);
		return NULL;
	}
	p->tx = a->tx;
	return p;
}

int peer_send(struct peer *p, const void *data, size_t len)
{
	if (pub_publish(p->c, p->tx, data, len, 0) < 0) {
		fprintf(stderr, "peer_pubd: publish: %s\n", pub_errmsg(p->c));
		return -1;
	}
	return 0;
}

int peer_poll(struct peer *p, peer_msg_fn on_msg, void *arg, int timeout_ms)
{
	struct pub_message m;
	int r, n = 0;

	/* Whatever is queued, then stop: the caller's loop decides what next. */
	while (n < 64) {
		r = pub_recv(p->c, &m, n ? 0 : timeout_ms);
		if (r < 0) {
			fprintf(stderr, "peer_pubd: recv: %s\n", pub_errmsg(p->c));
			return n ? n : -1;
		}
		if (r == 0)
			break;
		on_msg(m.data, m.len, arg);
		n++;
	}
	return n;
}

void peer_close(struct peer *p, int timeout_ms)
{
	if (p->tx)
		pub_flush(p->c, timeout_ms);
	pub_close(p->c);
	free(p);
}
