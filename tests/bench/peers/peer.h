/* SPDX-License-Identifier: MIT */
/*
 * One benchmark client, many transports. peer_main.c does what pubd's own
 * benchmark clients do (bench_tput, bench_lat), and checks more: every
 * message's length, sequence number and content. Each transport
 * (peer_pubd.c, peer_zmq.c, peer_aeron.c) supplies the four calls below;
 * linked together they make one program per peer (peer_pubd, peer_zmq,
 * peer_aeron).
 */
#ifndef PEER_H
#define PEER_H

#include <stddef.h>
#include <stdint.h>

/* Where to send and where to listen; what the strings mean is the transport's. */
struct peer_args {
	const char *tx;	    /* channel published on (NULL: none) */
	const char *rx;	    /* channel subscribed to (NULL: none) */
	const char *socket; /* pubd: the daemon's socket */
	size_t max_size;    /* largest message this run passes */
};

struct peer;

/* The name the JSON lines carry ("pubd", "zmq-epgm", ...). */
const char *peer_transport_name(const struct peer_args *a);

/* Open what a has; NULL with a message on stderr on failure. */
struct peer *peer_open(const struct peer_args *a);

/* Send one message, waiting as long as the transport pushes back. 0 or -1. */
int peer_send(struct peer *p, const void *data, size_t len);

/*
 * Wait up to timeout_ms for messages, calling on_msg for each that is
 * complete (data valid during the call only). Returns how many it
 * delivered (0 on timeout), or -1 on error.
 */
typedef void (*peer_msg_fn)(const void *data, size_t len, void *arg);
int peer_poll(struct peer *p, peer_msg_fn on_msg, void *arg, int timeout_ms);

/* Send what is still queued (bounded by timeout_ms) and close. */
void peer_close(struct peer *p, int timeout_ms);

#endif
