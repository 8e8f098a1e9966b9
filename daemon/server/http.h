/* SPDX-License-Identifier: MIT */
/*
 * The /metrics HTTP listener: libmicrohttpd driven by pubd's event loop
 * (no thread of its own). pubd owns the listening socket and accepts; MHD
 * is handed each connection and parses and answers it. MHD's epoll fd is
 * watched by the loop and MHD_run is called when it is readable or MHD's
 * timeout expires, so the render callback runs on the loop's thread and
 * reads the daemon's state without locks.
 *
 * Bounded, and no client keeps another out: few connections at once (and
 * per address); a request must be complete within PUBD_HTTP_REQUEST_S of
 * its connection's accept; a new connection that finds the slots full takes
 * the one of the oldest connection not being answered; small per-connection
 * memory. Out of fds, a connection is accepted with a reserve fd and closed
 * (503), or the listener is left alone until the next second: never a busy
 * loop. What is refused or cut short is logged once per PUBD_HTTP_LOG_S
 * with the counts.
 *
 * Serves GET and HEAD of /metrics (404 for other paths, 405 for other
 * methods) with the Prometheus text content type.
 */
#ifndef PUBD_HTTP_H
#define PUBD_HTTP_H

#include <stddef.h>
#include <sys/socket.h>

#include "loop.h"

#define PUBD_HTTP_MAX_CONNECTIONS 32
#define PUBD_HTTP_MAX_PER_IP	  16
#define PUBD_HTTP_TIMEOUT_S	  10 /* MHD's: idle, reset by every byte */
#define PUBD_HTTP_REQUEST_S	  3  /* a request's headers in, from its accept */
#define PUBD_HTTP_BACKLOG	  16
#define PUBD_HTTP_LOG_S		  10 /* one line of refusals per period */
#define PUBD_HTTP_CONN_MEMORY	  (32u << 10)
#define PUBD_HTTP_CONTENT_TYPE	  "text/plain; version=0.0.4; charset=utf-8"

struct pubd_http;

/* The body of /metrics: 0 with *text (malloc'd, the listener frees it) and
 * *len, or -errno (answered 500). */
typedef int (*pubd_http_render_fn)(void *ctx, char **text, size_t *len);

/* Listen on sa; NULL with err filled and errno set when it cannot
 * (EADDRINUSE, EADDRNOTAVAIL, EACCES, ...). */
struct pubd_http *pubd_http_open(struct pubd_loop *loop, const struct sockaddr *sa, socklen_t salen,
				 pubd_http_render_fn render, void *ctx, char *err, size_t errcap);
/* "127.0.0.1:9477" or "[::1]:9477": where it listens (the port the kernel
 * chose when asked for 0). */
void pubd_http_address(const struct pubd_http *h, char *buf, size_t cap);
/* The address it listens on, as bound (0 or -errno). */
int pubd_http_sockname(const struct pubd_http *h, struct sockaddr_storage *ss, socklen_t *sl);
/* Connections open now. */
unsigned pubd_http_connections(const struct pubd_http *h);
void pubd_http_close(struct pubd_http *h);

#endif
