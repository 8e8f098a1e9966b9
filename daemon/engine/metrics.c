/* SPDX-License-Identifier: MIT */
/*
 * Prometheus metrics: the text is rendered from the tables pubctl reads
 * (pubd_query_metrics_tables) by the pure renderer in core/metrics_text.c,
 * served on metrics.listen by the HTTP listener (server/http.c) and
 * answered to `pubctl metrics` (PUB_QUERY_METRICS). The listener follows
 * the config at reload: opened, moved or closed; a new address that cannot
 * be bound leaves the old listener running, and the log says so.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "http.h"
#include "log.h"
#include "metrics_text.h"
#include "proto.h"

/* Pieces of the text in the PUB_QUERY_METRICS reply: a table cell holds
 * at most PUB_PROTO_TEXT_MAX bytes. */
#define REPLY_PIECE 60000u

int pubd_metrics_render(struct pubd *d, char **text, size_t *len)
{
	static const struct pubd_metrics_limits lim = {
		.max_sources = PUBD_METRICS_MAX_SOURCES,
		.max_subscribers = PUBD_METRICS_MAX_SUBSCRIBERS,
	};
	struct pub_table_builder b = {.grow = pub_table_grow_realloc};
	struct prom_out o = {0};
	int r = pubd_query_metrics_tables(d, &b);

	if (r == 0)
		r = pubd_metrics_text(b.buf, b.len, &lim, &o);
	free(b.buf);
	if (r == 0 && !o.buf)
		r = -ENOMEM;
	if (r < 0) {
		prom_free(&o);
		return r;
	}
	*text = o.buf;
	*len = o.len;
	return 0;
}

static int http_render(void *ctx, char **text, size_t *len)
{
	return pubd_metrics_render(ctx, text, len);
}

int pubd_metrics_reply(struct pubd *d, struct pub_table_builder *b, uint32_t req_id, char *err, size_t errcap)
{
	static const char *const cols[] = {"text:s"};
	size_t off = 0, n;
	char *text;
	size_t len;
	int r = pubd_metrics_render(d, &text, &len);

	if (r < 0) {
		snprintf(err, errcap, "rendering the metrics: %s", strerror(-r));
		return -PUB_ERR_INTERNAL;
	}
	pub_table_begin(b, req_id, "metrics", cols, 1);
	while (off < len) {
		/* Cut after a newline, so every piece is whole lines. */
		n = len - off > REPLY_PIECE ? REPLY_PIECE : len - off;
		while (off + n < len && n > 1 && text[off + n - 1] != '\n')
			n--;
		pub_table_strn(b, text + off, n);
		off += n;
	}
	r = pub_table_end(b);
	free(text);
	if (r < 0) {
		snprintf(err, errcap, "building the reply: %s", strerror(-r));
		return -PUB_ERR_INTERNAL;
	}
	return 0;
}

static void listener_close(struct pubd *d)
{
	pubd_http_close(d->metrics_http);
	d->metrics_http = NULL;
	free(d->metrics_listening);
	d->metrics_listening = NULL;
}

static struct pubd_http *listener_open(struct pubd *d, const struct sockaddr *sa, socklen_t salen, char *err,
				       size_t errcap)
{
	return pubd_http_open(d->loop, sa, salen, http_render, d, err, errcap);
}

static uint16_t port_of(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
					 : ((const struct sockaddr_in *)sa)->sin_port;
}

/*
 * The new address's bind failed with EADDRINUSE while our own listener
 * holds that port: the kernel refuses a bind that overlaps a socket
 * listening on the same port (0.0.0.0:P over 127.0.0.1:P, or the same
 * address written another way). Give the port up and bind again; when that
 * fails too, take the old address back (d->metrics_http is NULL when even
 * that failed). Returns the new listener, or NULL with errno and err set.
 */
static struct pubd_http *move_on_same_port(struct pubd *d, char *err, size_t errcap)
{
	const struct sockaddr *sa = (const struct sockaddr *)&d->cfg.metrics_sockaddr;
	struct sockaddr_storage old;
	struct pubd_http *h;
	char err2[256];
	socklen_t oldlen;
	int e;

	if (pubd_http_sockname(d->metrics_http, &old, &oldlen) < 0 ||
	    port_of((const struct sockaddr *)&old) != port_of(sa)) {
		errno = EADDRINUSE;
		return NULL;
	}
	pubd_http_close(d->metrics_http);
	d->metrics_http = NULL;
	h = listener_open(d, sa, d->cfg.metrics_sockaddr_len, err, errcap);
	if (h)
		return h;
	e = errno;
	d->metrics_http = listener_open(d, (const struct sockaddr *)&old, oldlen, err2, sizeof(err2));
	if (!d->metrics_http) {
		log_err("metrics: the previous address could not be taken back: %s", err2);
		listener_close(d);
	}
	errno = e;
	return NULL;
}

int pubd_metrics_apply(struct pubd *d, bool initial)
{
	const char *want = d->cfg.metrics_listen;
	struct pubd_http *h;
	char err[256], where[80];

	if (!want) {
		if (d->metrics_http)
			log_notice("metrics: no longer listening (metrics.listen removed)");
		listener_close(d);
		return 0;
	}
	if (d->metrics_listening && !strcmp(want, d->metrics_listening))
		return 0;
	h = listener_open(d, (const struct sockaddr *)&d->cfg.metrics_sockaddr, d->cfg.metrics_sockaddr_len, err,
			  sizeof(err));
	if (!h && errno == EADDRINUSE && d->metrics_http)
		h = move_on_same_port(d, err, sizeof(err));
	if (!h) {
		int e = errno ? errno : EADDRNOTAVAIL;

		if (initial)
			log_err("metrics.listen %s: %s", want, err);
		else
			log_err("metrics.listen %s: %s; %s", want, err,
				d->metrics_http ? "still serving on the previous address" : "no /metrics listener");
		return -e;
	}
	listener_close(d);
	d->metrics_http = h;
	d->metrics_listening = strdup(want);
	pubd_http_address(h, where, sizeof(where));
	log_notice("metrics: serving http://%s/metrics (metrics.listen %s)", where, want);
	return 0;
}

void pubd_metrics_close(struct pubd *d)
{
	listener_close(d);
}
