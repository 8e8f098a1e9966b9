/* SPDX-License-Identifier: MIT */
/*
 * libmicrohttpd in pubd's event loop (http.h). MHD runs without threads
 * (MHD_USE_EPOLL, no internal polling thread) and with its sockets
 * non-blocking, so an MHD_run never waits: it handles what epoll reported
 * and returns. After every run the loop's timer is set to MHD_get_timeout,
 * which MHD needs for idle connections and for data it already has.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "http.h"
#include "log.h"

struct pubd_http {
	struct MHD_Daemon *mhd;
	struct pubd_loop_watch *watch;
	struct pubd_loop_timer *timer;
	pubd_http_render_fn render;
	void *ctx;
	bool running; /* inside MHD_run: no re-entry */
};

/* libmicrohttpd's own messages; its format strings are its own. */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	log_debug("metrics: %s", buf);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Called when a request's headers are in (a body is never read: only GET
 * and HEAD are served, and anything else is answered at once). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct pubd_http *h = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *text = NULL;
	size_t len = 0;

	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, "not found: pubd serves /metrics\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET or HEAD\n");
	if (h->render(h->ctx, &text, &len) < 0)
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "pubd could not render its metrics\n");
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, PUBD_HTTP_CONTENT_TYPE);
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* Run MHD for what is ready, then set the timer to when it wants to run
 * again (idle timeouts, buffered data). */
static void run(struct pubd_http *h)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (h->running)
		return;
	h->running = true;
	MHD_run(h->mhd);
	h->running = false;
	if (MHD_get_timeout(h->mhd, &ms) == MHD_YES)
		pubd_loop_timer_arm(h->timer, pubd_now_ns() + (uint64_t)ms * 1000000ull);
	else
		pubd_loop_timer_arm(h->timer, UINT64_MAX);
}

static void on_epoll(void *ctx, uint32_t events)
{
	run(ctx);
}

static void on_timer(void *ctx, uint64_t now_ns)
{
	run(ctx);
}

static struct MHD_Daemon *start(struct pubd_http *h, const struct sockaddr *sa)
{
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;

	if (sa->sa_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	return MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)PUBD_HTTP_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)PUBD_HTTP_MAX_PER_IP,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)PUBD_HTTP_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)PUBD_HTTP_CONN_MEMORY, MHD_OPTION_LISTEN_BACKLOG_SIZE, 16u, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
		h, MHD_OPTION_END);
}

struct pubd_http *pubd_http_open(struct pubd_loop *loop, const struct sockaddr *sa, socklen_t salen,
				 pubd_http_render_fn render, void *ctx, char *err, size_t errcap)
{
	struct pubd_http *h = calloc(1, sizeof(*h));
	const union MHD_DaemonInfo *info;
	int saved;

	if (!h) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	h->render = render;
	h->ctx = ctx;
	errno = 0;
	h->mhd = start(h, sa);
	if (!h->mhd) {
		/* MHD keeps errno from the failed bind/listen. */
		if (!errno)
			errno = EADDRNOTAVAIL;
		snprintf(err, errcap, "cannot listen: %s", strerror(errno));
		goto fail;
	}
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	h->timer = pubd_loop_timer(loop, on_timer, h);
	h->watch = info ? pubd_loop_watch(loop, info->epoll_fd, EPOLLIN, on_epoll, h) : NULL;
	if (!h->timer || !h->watch) {
		if (!errno)
			errno = EINVAL;
		snprintf(err, errcap, "cannot watch libmicrohttpd's epoll fd: %s", strerror(errno));
		goto fail;
	}
	run(h); /* sets the timer */
	return h;
fail:
	saved = errno;
	pubd_http_close(h);
	errno = saved;
	return NULL;
}

void pubd_http_address(const struct pubd_http *h, char *buf, size_t cap)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_LISTEN_FD);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];

	if (!info || getsockname(info->listen_fd, (struct sockaddr *)&ss, &sl) < 0) {
		snprintf(buf, cap, "?");
		return;
	}
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		snprintf(buf, cap, "[%s]:%u", ip, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		snprintf(buf, cap, "%s:%u", ip, ntohs(a->sin_port));
	}
}

unsigned pubd_http_connections(const struct pubd_http *h)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return info ? info->num_connections : 0;
}

void pubd_http_close(struct pubd_http *h)
{
	if (!h)
		return;
	if (h->watch)
		pubd_loop_unwatch(h->watch);
	pubd_loop_timer_free(h->timer);
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	free(h);
}
